//! Runs one real host CLI to completion: clean environment, piped output drained on threads, its
//! own process group, and a hard timeout that kills the whole group. It must never wait forever
//! on a hung host or on a background process still holding its pipes.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

/// One finished host command.
#[derive(Debug)]
pub struct ProcessRun {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
    /// What ran ("pi", "dsh", …), for failure messages.
    pub what: String,
}

impl ProcessRun {
    /// Panics (with the output) unless the command exited 0 and its stdout, trimmed, is `reply`:
    /// the answer of a print-mode host (Pi, DSH).
    #[track_caller]
    pub fn assert_answered(&self, reply: &str) {
        assert!(
            self.status.success() && self.stdout.trim() == reply,
            "{} did not answer (status {:?})\n--- stdout\n{}\n--- stderr\n{}",
            self.what,
            self.status.code(),
            self.stdout,
            self.stderr
        );
    }

    /// The JSON diagnostic lines (those with an `outcome`) a hook forwarded to the host's stderr.
    pub fn diagnostics(&self) -> Vec<Value> {
        self.stderr
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v.get("outcome").is_some())
            .collect()
    }
}

/// `program args…` in `cwd` with exactly `env` and stdin from /dev/null.
pub fn clean_command(program: &Path, args: &[&str], env: &BTreeMap<String, String>, cwd: &Path) -> Command {
    let mut command = Command::new(program);
    command
        .args(args)
        .env_clear()
        .envs(env)
        .current_dir(cwd)
        .stdin(Stdio::null());
    command
}

/// Runs `command` with piped output and a hard `timeout`; the child gets its own process group so
/// a hung host and the hooks it started are killed together. `what` names it in panics.
pub fn run_with_timeout(mut command: Command, timeout: Duration, what: &str) -> ProcessRun {
    command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let started = Instant::now();
    let mut child = command
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {command:?}: {e}"));
    let stdout = drain(child.stdout.take().expect("stdout"));
    let stderr = drain(child.stderr.take().expect("stderr"));
    let status = loop {
        if let Some(status) = child
            .try_wait()
            .unwrap_or_else(|e| panic!("wait for {what}: {e}"))
        {
            break status;
        }
        if started.elapsed() > timeout {
            kill_group(child.id());
            let _ = child.wait();
            let out = stdout.recv_timeout(Duration::from_secs(2)).unwrap_or_default();
            let err = stderr.recv_timeout(Duration::from_secs(2)).unwrap_or_default();
            panic!("{what} run exceeded {timeout:?}: {command:?}\n--- stdout\n{out}\n--- stderr\n{err}");
        }
        thread::sleep(Duration::from_millis(5));
    };
    let elapsed = started.elapsed();
    // A hook left running in the background could hold the pipes open; don't wait for it forever.
    let collect = |rx: Receiver<String>| rx.recv_timeout(Duration::from_secs(10)).unwrap_or_default();
    ProcessRun {
        status,
        stdout: collect(stdout),
        stderr: collect(stderr),
        elapsed,
        what: what.to_owned(),
    }
}

/// Reads `pipe` to its end on a thread; the text arrives on the returned channel.
pub fn drain(mut pipe: impl Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        let _ = tx.send(String::from_utf8_lossy(&bytes).into_owned());
    });
    rx
}

/// Kills the process group a child made at spawn (`process_group(0)`). Call it only before the
/// child is reaped, so the group id still belongs to us.
pub fn kill_group(pid: u32) {
    if let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

/// Runs another program (an installer such as the official `powercontext` CLI) in a host session's
/// environment and cwd, with the host CLI's folder first on `PATH` (installers look the host up
/// there) and `extra` variables on top.
pub fn run_beside(
    host_cli: &Path,
    env: &BTreeMap<String, String>,
    cwd: &Path,
    program: &Path,
    args: &[&str],
    extra: &[(&str, &str)],
) -> ProcessRun {
    let mut env = env.clone();
    if let Some(dir) = host_cli.parent() {
        let path = format!("{}:{}", dir.display(), env.get("PATH").map_or("", String::as_str));
        env.insert("PATH".to_owned(), path);
    }
    for (k, v) in extra {
        env.insert((*k).to_owned(), (*v).to_owned());
    }
    run_with_timeout(
        clean_command(program, args, &env, cwd),
        Duration::from_secs(240),
        "installer",
    )
}
