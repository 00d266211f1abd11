//! Runs a hook executable the way a host does (payload on stdin, clean environment, throwaway
//! HOME and state dir) and reads back what it did: exit status, the protocol line, diagnostics.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A hook invocation being prepared.
#[must_use]
pub struct HookCmd {
    exe: PathBuf,
    env: Vec<(String, String)>,
    args: Vec<String>,
    stdin: Vec<u8>,
    home: tempfile::TempDir,
    cwd: Option<PathBuf>,
}

/// What one hook run did.
#[derive(Debug)]
pub struct HookOutput {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

impl HookCmd {
    /// A run of `exe` with a clean environment: only `PATH`, a temp `HOME`, XDG dirs and state
    /// dir inside it, and no configuration file, so the developer's own setup never leaks in.
    pub fn new(exe: impl AsRef<Path>) -> Self {
        let home = tempfile::tempdir().expect("temp home");
        let h = home.path().to_string_lossy().into_owned();
        let env = vec![
            ("PATH".to_owned(), "/usr/local/bin:/usr/bin:/bin".to_owned()),
            ("HOME".to_owned(), h.clone()),
            ("XDG_CONFIG_HOME".to_owned(), format!("{h}/.config")),
            ("XDG_STATE_HOME".to_owned(), format!("{h}/.local/state")),
            ("POWERCONTEXT_HOOKS_STATE_DIR".to_owned(), format!("{h}/state")),
            ("GIT_CEILING_DIRECTORIES".to_owned(), h.clone()),
            // A detached drainer outliving the test would send requests to servers the test
            // already dropped; tests of the drainer remove this.
            (
                "POWERCONTEXT_HOOKS_NO_BACKGROUND_DRAIN".to_owned(),
                "1".to_owned(),
            ),
        ];
        Self {
            exe: exe.as_ref().to_path_buf(),
            env,
            args: Vec::new(),
            stdin: Vec::new(),
            home,
            cwd: None,
        }
    }

    /// The throwaway HOME.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// Sets (or replaces) one environment variable.
    pub fn env(mut self, key: &str, value: impl Into<String>) -> Self {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_owned(), value.into()));
        self
    }

    /// Adds a command-line argument (a host subcommand such as `prepare`).
    pub fn arg(mut self, arg: &str) -> Self {
        self.args.push(arg.to_owned());
        self
    }

    /// Adds command-line arguments in order.
    pub fn args<S: AsRef<str>>(self, args: impl IntoIterator<Item = S>) -> Self {
        args.into_iter().fold(self, |cmd, a| cmd.arg(a.as_ref()))
    }

    /// Sets (or replaces) each of these environment variables, in order.
    pub fn envs<K: AsRef<str>, V: AsRef<str>>(self, vars: impl IntoIterator<Item = (K, V)>) -> Self {
        vars.into_iter()
            .fold(self, |cmd, (k, v)| cmd.env(k.as_ref(), v.as_ref()))
    }

    /// Removes one environment variable.
    pub fn env_remove(mut self, key: &str) -> Self {
        self.env.retain(|(k, _)| k != key);
        self
    }

    /// The stdin payload as JSON.
    pub fn stdin_json(mut self, v: &Value) -> Self {
        self.stdin = serde_json::to_vec(v).expect("json");
        self
    }

    /// The stdin payload as raw bytes.
    pub fn stdin_bytes(mut self, b: impl Into<Vec<u8>>) -> Self {
        self.stdin = b.into();
        self
    }

    /// The working directory of the process.
    pub fn current_dir(mut self, dir: impl AsRef<Path>) -> Self {
        self.cwd = Some(dir.as_ref().to_path_buf());
        self
    }

    /// Runs to completion (a 30 s safety timeout kills a hung hook and fails the test).
    #[track_caller]
    pub fn run(&self) -> HookOutput {
        self.run_inner(false)
    }

    /// Runs with stdin written but never closed, as a host that forgets to close it: only the
    /// hook's own watchdog can end the run (the 30 s safety timeout fails the test).
    #[track_caller]
    pub fn run_with_stdin_open(&self) -> HookOutput {
        self.run_inner(true)
    }

    #[track_caller]
    fn run_inner(&self, keep_stdin_open: bool) -> HookOutput {
        let mut cmd = Command::new(&self.exe);
        cmd.args(&self.args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(dir) = &self.cwd {
            cmd.current_dir(dir);
        }
        let start = Instant::now();
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.exe.display()));
        let mut stdin = child.stdin.take().expect("stdin");
        let payload = self.stdin.clone();
        // Written from a thread: a hook that stops reading early must not block the test.
        let (release, hold) = std::sync::mpsc::channel::<()>();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&payload);
            if keep_stdin_open {
                // Held until the run is over (the sender is dropped below).
                let _ = hold.recv();
            }
        });
        let out = wait_with_timeout(child, Duration::from_secs(30));
        let elapsed = start.elapsed();
        drop(release);
        let _ = writer.join();
        HookOutput {
            status: out.status,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            elapsed,
        }
    }
}

fn wait_with_timeout(mut child: std::process::Child, limit: Duration) -> std::process::Output {
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "hook did not exit within {limit:?}; stderr: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

impl HookOutput {
    /// Every stderr line parsed as JSON (a non-JSON line fails the test: stderr is diagnostics only).
    #[track_caller]
    pub fn diagnostics(&self) -> Vec<Value> {
        self.stderr
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str(l)
                    .unwrap_or_else(|_| panic!("stderr line is not a JSON diagnostic: {l}"))
            })
            .collect()
    }

    /// The outcomes named on stderr, in order.
    pub fn outcomes(&self) -> Vec<String> {
        self.diagnostics()
            .iter()
            .filter_map(|d| d["outcome"].as_str().map(str::to_owned))
            .collect()
    }

    /// The first diagnostic with this outcome.
    pub fn diagnostic(&self, outcome: &str) -> Option<Value> {
        self.diagnostics().into_iter().find(|d| d["outcome"] == outcome)
    }

    /// The injected context, if the hook printed the `UserPromptSubmit` protocol line (Claude's
    /// `hookSpecificOutput`, or the top-level `additionalContext` of Copilot CLI).
    #[track_caller]
    pub fn context(&self) -> Option<String> {
        self.context_for("UserPromptSubmit")
    }

    /// The injected context, if the hook printed the protocol line of the host event `event`
    /// (`UserPromptSubmit`, Gemini CLI's `BeforeAgent`).
    #[track_caller]
    pub fn context_for(&self, event: &str) -> Option<String> {
        let line = self.stdout.trim_end_matches('\n');
        if line.is_empty() {
            return None;
        }
        assert!(
            !line.contains('\n'),
            "stdout must be a single protocol line: {:?}",
            self.stdout
        );
        let v: Value = serde_json::from_str(line).expect("stdout is JSON");
        if let Some(top) = v.get("additionalContext") {
            // Copilot CLI's channel: a top-level `additionalContext`, alone.
            assert_eq!(v.as_object().map(serde_json::Map::len), Some(1), "{line}");
            return Some(top.as_str().expect("context is text").to_owned());
        }
        assert_eq!(v["hookSpecificOutput"]["hookEventName"], event);
        assert_eq!(
            v.as_object().map(serde_json::Map::len),
            Some(1),
            "stdout has only hookSpecificOutput"
        );
        Some(
            v["hookSpecificOutput"]["additionalContext"]
                .as_str()
                .expect("context is text")
                .to_owned(),
        )
    }

    /// Asserts the fail-open promise: exit 0 and nothing but protocol on stdout.
    #[track_caller]
    pub fn assert_fail_open(&self) -> &Self {
        assert!(
            self.status.success(),
            "exit status {:?}; stderr: {}",
            self.status,
            self.stderr
        );
        let _ = self.context();
        let _ = self.diagnostics();
        self
    }

    /// Asserts that none of `needles` appears in stdout-independent channels (stderr).
    #[track_caller]
    pub fn assert_stderr_free_of(&self, needles: &[&str]) -> &Self {
        for n in needles {
            assert!(!self.stderr.contains(n), "stderr leaks {n:?}: {}", self.stderr);
        }
        self
    }
}

/// A Claude Code / Codex `UserPromptSubmit` payload as the hosts send it.
pub fn prompt_payload(prompt: &str, cwd: &Path) -> Value {
    serde_json::json!({
        "session_id": "session-test-1",
        "prompt_id": "prompt-test-1",
        "turn_id": "turn-test-1",
        "transcript_path": null,
        "cwd": cwd.to_string_lossy(),
        "permission_mode": "default",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    })
}

/// Runs of one hook executable that share a state dir (and a work area) across processes — the
/// two phases of OpenCode, Pi's prompts and boundaries — with the host's Server URL and token set.
pub struct HookSession {
    exe: PathBuf,
    env: Vec<(String, String)>,
    root: tempfile::TempDir,
}

impl HookSession {
    /// `POWERCONTEXT_<part>_SERVER_URL` = `url`, `…_AUTHORIZATION` = `Bearer <token>`, a state dir
    /// of its own, and session bootstrap off: these runs pin the exact prepare/capture exchange
    /// (bootstrap has its own tests; `.env("POWERCONTEXT_<part>_BOOTSTRAP", "1")` turns it on).
    pub fn new(exe: &str, part: &str, url: &str, token: &str) -> Self {
        let root = tempfile::tempdir().expect("temp root");
        let env = vec![
            (
                "POWERCONTEXT_HOOKS_STATE_DIR".to_owned(),
                root.path().join("state").display().to_string(),
            ),
            (format!("POWERCONTEXT_{part}_SERVER_URL"), url.to_owned()),
            (
                format!("POWERCONTEXT_{part}_AUTHORIZATION"),
                format!("Bearer {token}"),
            ),
            (format!("POWERCONTEXT_{part}_BOOTSTRAP"), "0".to_owned()),
        ];
        Self {
            exe: PathBuf::from(exe),
            env,
            root,
        }
    }

    /// Sets (or replaces) one variable for every later run.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    /// The shared state dir.
    pub fn state(&self) -> PathBuf {
        self.root.path().join("state")
    }

    /// A scratch area that lives as long as the session.
    pub fn root(&self) -> &Path {
        self.root.path()
    }

    /// A run of the executable with this session's environment.
    pub fn cmd(&self) -> HookCmd {
        HookCmd::new(&self.exe).envs(self.env.iter().map(|(k, v)| (k, v)))
    }
}
