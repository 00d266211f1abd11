//! Real-Pi runner: drives the pinned Pi coding agent (tests/e2e/pi/node_modules) in print mode and
//! in RPC mode against a loopback fake model, with our extension rendered from `installers/pi/`
//! into a throwaway package, in a throwaway HOME with a clean environment. It never runs Pi outside
//! a loopback-only network namespace, never touches the real HOME, and never skips: a missing
//! prerequisite panics with the script that installs it.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use powercontext_hooks_core::host::Integration;
use serde_json::{Value, json};

use crate::hosts::{js_string_body, render_installer, repo_root};
use crate::process::{ProcessRun, clean_command, drain, kill_group};
use crate::sandbox::{Sandbox, node_dir};

/// Outer limit for one Pi command; a healthy print-mode run takes about a second.
const RUN_TIMEOUT: Duration = Duration::from_secs(90);
/// The model id the runner registers for the fake provider.
const MODEL: &str = "fake-model";

/// The pinned `pi` CLI; panics with the fix when it is not installed.
pub fn pi_cli() -> PathBuf {
    let path = repo_root().join("tests/e2e/pi/node_modules/.bin/pi");
    assert!(
        path.is_file(),
        "{} is missing: run scripts/ensure-host-pi (make test does)",
        path.display()
    );
    path
}

/// Copies `installers/pi/` to `dest` with `{{hook_command}}` replaced by `exe` as a JavaScript
/// string body (the extension spawns it directly, no shell). Panics if any placeholder is left.
pub fn render_extension(dest: &Path, exe: &Path) {
    let [(c, cli), (o, ops)] = crate::hosts::op_values(exe);
    render_installer(
        Integration::Pi,
        dest,
        &[("hook_command", &js_string_body(exe)), (c, &cli), (o, &ops)],
    );
}

/// How the extension gets loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Loading {
    /// `pi install <dir>` (what a user does by hand).
    Install,
    /// `packages: ["<dir>"]` in the agent settings (what `pi install` writes, without its 4 s).
    Settings,
    /// `pi --no-extensions -e <dir>` on every run.
    Flag,
    /// Not loaded at all (baseline).
    None,
}

/// Configures a [`PiSession`].
pub struct PiSessionBuilder {
    model_url: String,
    hook: Option<PathBuf>,
    record: bool,
    loading: Loading,
    env: BTreeMap<String, String>,
    remove: Vec<String>,
}

impl PiSessionBuilder {
    /// The executable the extension spawns (it need not exist: a broken setup is a scenario too).
    pub fn hook(mut self, exe: &Path) -> Self {
        self.hook = Some(exe.to_path_buf());
        self
    }

    /// Puts a `sh` recorder in front of the hook: it keeps each stdin payload and logs the
    /// subcommand when the hook starts and when it ends (see [`PiSession::calls`]).
    pub fn record_calls(mut self) -> Self {
        self.record = true;
        self
    }

    /// How the extension is loaded (default [`Loading::Settings`]).
    pub fn loading(mut self, loading: Loading) -> Self {
        self.loading = loading;
        self
    }

    /// Leaves a variable the session would set out of the environment (e.g. the Server URL, to
    /// test a hook that finds it elsewhere).
    pub fn without(mut self, name: &str) -> Self {
        self.remove.push(name.to_owned());
        self
    }

    /// An extra variable in Pi's (and so the hook's) environment.
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.insert(name.to_owned(), value.to_owned());
        self
    }

    /// Creates the throwaway HOME, project and state dirs, the fake provider, and loads the
    /// extension.
    pub fn build(self) -> PiSession {
        let cli = pi_cli();
        let mut sandbox = Sandbox::new(Integration::Pi, node_dir());
        let agent = sandbox.home.join(".pi").join("agent");
        let payloads = sandbox.path("payloads");
        let extension = sandbox.path("extension");
        for dir in [&agent, &payloads] {
            fs::create_dir_all(dir).expect("create session dirs");
        }
        sandbox.set("PI_CODING_AGENT_DIR", agent.display().to_string());
        sandbox.set("PI_OFFLINE", "1");
        sandbox.set("PI_TELEMETRY", "0");
        sandbox.set(
            "POWERCONTEXT_PI_SERVER_URL",
            crate::fault_server::closed_port_url(),
        );
        sandbox.env.extend(self.env);
        for name in &self.remove {
            sandbox.env.remove(name);
        }

        let models = json!({"providers": {"fake": {
            "baseUrl": format!("{}/v1", self.model_url),
            "api": "openai-completions",
            "apiKey": "sk-fake-e2e",
            "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
            "models": [{"id": MODEL, "name": "Fake Model", "contextWindow": 128000, "maxTokens": 4096}],
        }}});
        fs::write(agent.join("models.json"), models.to_string()).expect("write models.json");

        let session = PiSession {
            cli,
            sandbox,
            payloads,
            extension,
            loading: self.loading,
        };
        if self.loading != Loading::None {
            let exe = self
                .hook
                .expect("a PiSession that loads the extension needs .hook(exe)");
            let exe = if self.record {
                session.write_recorder(&exe)
            } else {
                exe
            };
            render_extension(&session.extension, &exe);
            match self.loading {
                Loading::Install => {
                    let dir = session.extension.display().to_string();
                    let run = session.run_raw(&["install", &dir]);
                    assert!(
                        run.status.success(),
                        "`pi install` failed:\n{}\n{}",
                        run.stdout,
                        run.stderr
                    );
                }
                Loading::Settings => {
                    let settings = json!({"packages": [session.extension.display().to_string()]});
                    fs::write(agent.join("settings.json"), settings.to_string()).expect("write settings");
                }
                Loading::Flag | Loading::None => {}
            }
        }
        session
    }
}

/// A throwaway Pi installation: HOME, project dir, state dir and the rendered extension.
pub struct PiSession {
    cli: PathBuf,
    sandbox: Sandbox,
    payloads: PathBuf,
    extension: PathBuf,
    loading: Loading,
}

/// One finished Pi command ([`ProcessRun::assert_answered`] checks its answer,
/// [`ProcessRun::diagnostics`] reads what the extension forwarded).
pub type PiRun = ProcessRun;

impl PiSession {
    /// A builder whose fake provider points at `model_url` (a [`crate::fake_model::FakeModel`]).
    pub fn builder(model_url: &str) -> PiSessionBuilder {
        PiSessionBuilder {
            model_url: model_url.trim_end_matches('/').to_owned(),
            hook: None,
            record: false,
            loading: Loading::Settings,
            env: BTreeMap::new(),
            remove: Vec::new(),
        }
    }

    /// The project directory (Pi's cwd).
    pub fn project(&self) -> &Path {
        &self.sandbox.project
    }

    /// The hooks' state directory (ledger, spool).
    pub fn state_dir(&self) -> &Path {
        &self.sandbox.state
    }

    /// The throwaway HOME.
    pub fn home(&self) -> &Path {
        &self.sandbox.home
    }

    /// The pending-flush ledger, if any.
    pub fn ledger(&self) -> Option<Value> {
        let text = fs::read_to_string(self.sandbox.state.join("ledger.json")).ok()?;
        Some(serde_json::from_str(&text).expect("ledger is JSON"))
    }

    /// `(event, phase)` of every recorded hook call so far, e.g. `("flush agent_end", "done")`;
    /// `before-agent-start` calls are named as such.
    pub fn calls(&self) -> Vec<(String, String)> {
        let log = fs::read_to_string(self.payloads.join("calls.log")).unwrap_or_default();
        log.lines()
            .filter_map(|l| {
                let mut parts = l.splitn(3, ' ');
                let phase = parts.next()?.to_owned();
                let sub = parts.next()?.to_owned();
                let file = parts.next()?;
                let name = if sub == "flush" {
                    let body: Value = fs::read_to_string(file)
                        .ok()
                        .and_then(|t| serde_json::from_str(&t).ok())?;
                    format!("flush {}", body["event"].as_str().unwrap_or("?"))
                } else {
                    sub
                };
                Some((name, phase))
            })
            .collect()
    }

    /// The recorded stdin payloads of every `before-agent-start` call, in order.
    pub fn start_payloads(&self) -> Vec<Value> {
        let log = fs::read_to_string(self.payloads.join("calls.log")).unwrap_or_default();
        log.lines()
            .filter(|l| l.starts_with("start before-agent-start "))
            .filter_map(|l| l.splitn(3, ' ').nth(2))
            .filter_map(|f| {
                fs::read_to_string(f)
                    .ok()
                    .and_then(|t| serde_json::from_str(&t).ok())
            })
            .collect()
    }

    /// Waits until the recorder logged `phase` for `name` (see [`PiSession::calls`]).
    pub fn wait_for_call(&self, name: &str, phase: &str, timeout: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if self.calls().iter().any(|(n, p)| n == name && p == phase) {
                return true;
            }
            thread::sleep(Duration::from_millis(20));
        }
        false
    }

    fn model_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if self.loading == Loading::Flag {
            args.extend([
                "--no-extensions".to_owned(),
                "-e".to_owned(),
                self.extension.display().to_string(),
            ]);
        }
        args.extend(["--provider", "fake", "--model", MODEL].map(str::to_owned));
        args
    }

    /// `pi -p <prompt>` in the project dir.
    pub fn print(&self, prompt: &str) -> PiRun {
        let mut args = self.model_args();
        args.extend(["-p".to_owned(), prompt.to_owned()]);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        self.run_raw(&refs)
    }

    /// Runs `pi <args>` in the project dir: clean env, stdin from /dev/null, an outer timeout
    /// (Pi's whole process group is killed past it).
    pub fn run_raw(&self, args: &[&str]) -> PiRun {
        self.sandbox.run(&self.cli, args, RUN_TIMEOUT, "pi")
    }

    /// Runs another program (an installer) in this session's environment and project dir.
    pub fn run_other(&self, program: &Path, args: &[&str], extra: &[(&str, &str)]) -> PiRun {
        self.sandbox.run_other(&self.cli, program, args, extra)
    }

    /// Starts `pi --mode rpc`.
    pub fn rpc(&self) -> PiRpc {
        let mut args = self.model_args();
        args.extend(["--mode".to_owned(), "rpc".to_owned()]);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut child = clean_command(&self.cli, &refs, &self.sandbox.env, &self.sandbox.project)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .expect("spawn pi --mode rpc");
        let stdin = child.stdin.take().expect("rpc stdin");
        let stdout = child.stdout.take().expect("rpc stdout");
        let (tx, events) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if let Ok(v) = serde_json::from_str::<Value>(&line)
                    && tx.send(v).is_err()
                {
                    break;
                }
            }
        });
        let stderr = drain(child.stderr.take().expect("rpc stderr"));
        PiRpc {
            child,
            stdin: Some(stdin),
            events,
            seen: Vec::new(),
            stderr: Some(stderr),
        }
    }

    fn write_recorder(&self, exe: &Path) -> PathBuf {
        let script = self.payloads.join("record-hook");
        let quote = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', r"'\''"));
        let dir = quote(&self.payloads);
        let body = format!(
            "#!/bin/sh\n# e2e recorder: keep stdin, log start and end, run the real hook on it\n\
             f={dir}/\"$(date +%s%N)-$$.json\"\ncat >\"$f\"\n\
             echo \"start $1 $f\" >>{dir}/calls.log\n\
             {exe} \"$@\" <\"$f\"\nrc=$?\n\
             echo \"done $1 $f\" >>{dir}/calls.log\nexit $rc\n",
            exe = quote(exe),
        );
        fs::write(&script, body).expect("write recorder");
        fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).expect("chmod recorder");
        script
    }
}

/// A running `pi --mode rpc`; dropping it kills Pi's process group.
pub struct PiRpc {
    child: Child,
    stdin: Option<ChildStdin>,
    events: Receiver<Value>,
    seen: Vec<Value>,
    stderr: Option<Receiver<String>>,
}

impl PiRpc {
    /// Sends one command (a JSON line).
    pub fn send(&mut self, command: &Value) {
        let stdin = self.stdin.as_mut().expect("rpc stdin still open");
        let mut line = command.to_string();
        line.push('\n');
        stdin.write_all(line.as_bytes()).expect("write to pi rpc");
        stdin.flush().expect("flush pi rpc");
    }

    /// Waits for the first event matching `pred` (events seen meanwhile are kept); panics on
    /// timeout with every event seen.
    #[track_caller]
    pub fn wait_for(&mut self, what: &str, timeout: Duration, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(left) {
                Ok(event) => {
                    self.seen.push(event.clone());
                    if pred(&event) {
                        return event;
                    }
                }
                Err(_) => panic!("pi rpc: no {what} within {timeout:?}; events: {:#?}", self.seen),
            }
        }
    }

    /// Every event received so far.
    pub fn seen(&self) -> &[Value] {
        &self.seen
    }

    /// Closes stdin and waits (bounded) for Pi to exit; returns its status and stderr.
    pub fn finish(mut self, timeout: Duration) -> (Option<ExitStatus>, String) {
        drop(self.stdin.take());
        let start = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().expect("wait pi") {
                break Some(s);
            }
            if start.elapsed() > timeout {
                break None;
            }
            thread::sleep(Duration::from_millis(10));
        };
        if status.is_none() {
            kill_group(self.child.id());
            let _ = self.child.wait();
        }
        let stderr = self
            .stderr
            .take()
            .and_then(|rx| rx.recv_timeout(Duration::from_secs(5)).ok())
            .unwrap_or_default();
        (status, stderr)
    }
}

impl Drop for PiRpc {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            kill_group(self.child.id());
            let _ = self.child.wait();
        }
    }
}
