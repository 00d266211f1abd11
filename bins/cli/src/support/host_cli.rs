//! Talking to the hosts' own CLIs (`claude`, `codex`, `opencode`, `pi`, `dsh`): locate them, run
//! them with a hard deadline and read their JSON and versions; what each host's listings mean is
//! its installer's (`hosts/`). It never edits a host's configuration file itself: registrations go
//! through the host's CLI, so the host's own writer keeps its formatting and comments.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use powercontext_hooks_core::env::Env;
use serde_json::Value;

use crate::support::install::{Host, HostExt};

/// One host CLI call's limit (the official installer uses 120 s).
const CALL_TIMEOUT: Duration = Duration::from_secs(120);
/// A call still running after this says on stderr what it is waiting for (a host CLI's first
/// start can take many seconds, and silence looks like a hang).
const SAY_WAITING_AFTER: Duration = Duration::from_secs(2);

/// A located host CLI.
#[derive(Debug, Clone)]
pub struct HostCli {
    /// The host.
    pub host: Host,
    /// The executable.
    pub path: PathBuf,
}

/// A finished call.
#[derive(Debug)]
pub struct Run {
    /// Exit success.
    pub ok: bool,
    /// Stdout.
    pub stdout: String,
    /// Stderr.
    pub stderr: String,
}

impl Run {
    /// The last non-empty stderr line, for error messages (host CLIs print no secrets of ours).
    pub fn reason(&self) -> String {
        self.stderr
            .lines()
            .chain(self.stdout.lines())
            .map(str::trim)
            .rfind(|l| !l.is_empty() && !l.starts_with("WARNING: proceeding"))
            .unwrap_or("no output")
            .chars()
            .take(300)
            .collect()
    }
}

impl HostCli {
    /// `explicit` (a flag) or the host's executable on `PATH`.
    pub fn locate(host: Host, explicit: Option<&Path>, env: &Env) -> Result<Self> {
        if let Some(p) = explicit {
            if !p.is_file() {
                bail!("--host-cli {} does not exist", p.display());
            }
            return Ok(Self {
                host,
                path: p.to_path_buf(),
            });
        }
        let path = env.os("PATH").unwrap_or_default();
        std::env::split_paths(&path)
            .map(|d| d.join(host.cli_name()))
            .find(|p| p.is_file())
            .map(|path| Self { host, path })
            .ok_or_else(|| {
                anyhow!(
                    "`{}` is not on PATH: install {} first (or pass --host-cli PATH)",
                    host.cli_name(),
                    host.as_str()
                )
            })
    }

    /// The stand-in for a host without a CLI (an empty path): nothing is ever run through it.
    pub fn none(host: Host) -> Self {
        Self {
            host,
            path: PathBuf::new(),
        }
    }

    /// The shell-style rendering of a call, for plans.
    pub fn display(&self, args: &[&str]) -> String {
        let mut s = self.path.display().to_string();
        for a in args {
            s.push(' ');
            s.push_str(a);
        }
        s
    }

    /// Runs the CLI with the deadline; the whole process group is killed past it.
    pub fn run(&self, args: &[&str]) -> Result<Run> {
        let mut child = Command::new(&self.path)
            .args(args)
            .envs(self.host.cli_env().iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .with_context(|| format!("cannot run {}", self.path.display()))?;
        let out = pipe(child.stdout.take());
        let err = pipe(child.stderr.take());
        let started = Instant::now();
        let mut said = false;
        let status = loop {
            if let Some(s) = child.try_wait()? {
                break s;
            }
            if !said && started.elapsed() > SAY_WAITING_AFTER {
                said = true;
                #[expect(clippy::print_stderr, reason = "progress for people, never on stdout")]
                {
                    eprintln!(
                        "powercontext-hooks: waiting for `{}` (up to {} s)…",
                        crate::support::textstyle::terminal_safe(&self.display(args)),
                        CALL_TIMEOUT.as_secs()
                    );
                }
            }
            if started.elapsed() > CALL_TIMEOUT {
                kill_group(&child);
                let _ = child.wait();
                bail!("`{}` did not finish within {CALL_TIMEOUT:?}", self.display(args));
            }
            thread::sleep(Duration::from_millis(10));
        };
        let take = |rx: Receiver<String>| rx.recv_timeout(Duration::from_secs(5)).unwrap_or_default();
        Ok(Run {
            ok: status.success(),
            stdout: take(out),
            stderr: take(err),
        })
    }

    /// Runs and requires success.
    pub fn run_ok(&self, args: &[&str]) -> Result<Run> {
        let run = self.run(args)?;
        if !run.ok {
            bail!("`{}` failed: {}", self.display(args), run.reason());
        }
        Ok(run)
    }

    /// Runs and parses stdout as JSON.
    pub fn json(&self, args: &[&str]) -> Result<Value> {
        let run = self.run_ok(args)?;
        serde_json::from_str(run.stdout.trim())
            .with_context(|| format!("`{}` did not print JSON", self.display(args)))
    }

    /// `X.Y.Z` from `--version`.
    pub fn version(&self) -> Result<String> {
        let run = self.run_ok(&["--version"])?;
        // Pi prints its version on stderr; Hermes prints `Hermes Agent v0.19.0` (and its Python's
        // version after it).
        run.stdout
            .split_whitespace()
            .chain(run.stderr.split_whitespace())
            .map(|w| w.strip_prefix('v').unwrap_or(w))
            .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
            // Copilot CLI ends its sentence: "GitHub Copilot CLI 1.0.102."
            .map(|w| w.trim_end_matches(['.', ',']).to_owned())
            .ok_or_else(|| anyhow!("cannot read the {} version from `--version`", self.host.as_str()))
    }
}

/// One request to OpenCode's local server on a loopback port: no proxy, no redirect followed,
/// 2 s to connect and 5 s in all, and an answer of at most 1 MiB.
pub(crate) fn local_http(port: u16, method: &str, path: &str, body: Option<&str>) -> Result<(u16, String)> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .proxy(None)
        .max_redirects(0)
        .http_status_as_error(false)
        .timeout_connect(Some(Duration::from_secs(2)))
        .timeout_global(Some(Duration::from_secs(5)))
        .build()
        .into();
    let request = ureq::http::Request::builder()
        .method(method)
        .uri(format!("http://127.0.0.1:{port}{path}"))
        .header("Accept", "application/json")
        .header("Content-Type", "application/json")
        .body(body.unwrap_or(""))?;
    let mut response = agent.run(request)?;
    let text = response
        .body_mut()
        .with_config()
        .limit(1 << 20)
        .read_to_string()?;
    Ok((response.status().as_u16(), text))
}

fn pipe(p: Option<impl Read + Send + 'static>) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    if let Some(mut p) = p {
        thread::spawn(move || {
            let mut b = Vec::new();
            let _ = p.read_to_end(&mut b);
            let _ = tx.send(String::from_utf8_lossy(&b).into_owned());
        });
    }
    rx
}

/// Kills the process group a child made at spawn (`process_group(0)`); call it before the child
/// is reaped, so the group id still belongs to us.
pub(crate) fn kill_group(child: &Child) {
    let pid = i32::try_from(child.id())
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    if let Some(pid) = pid {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
}

#[cfg(test)]
mod local_http_tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpListener;

    /// Answers one connection on a loopback port with `answer` (`None`: reads, never answers).
    fn serve_once(answer: Option<Vec<u8>>) -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        thread::spawn(move || {
            let Ok((mut s, _)) = listener.accept() else { return };
            let _ = s.read(&mut [0u8; 4096]);
            match answer {
                Some(a) => drop(s.write_all(&a)),
                None => thread::sleep(Duration::from_secs(30)),
            }
        });
        port
    }

    #[test]
    fn local_http_decodes_chunks_follows_no_redirect_and_is_bounded() {
        let chunked =
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{\"a\r\n4\r\n\":1}\r\n0\r\n\r\n";
        let port = serve_once(Some(chunked.to_vec()));
        assert_eq!(
            local_http(port, "GET", "/x", None).unwrap(),
            (200, "{\"a\":1}".to_owned())
        );
        let moved = b"HTTP/1.1 307 Moved\r\nLocation: http://127.0.0.1:9/\r\nContent-Length: 0\r\n\r\n";
        let port = serve_once(Some(moved.to_vec()));
        assert_eq!(local_http(port, "DELETE", "/x", None).unwrap().0, 307);
        let big = 2 << 20;
        let huge = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {big}\r\n\r\n{}",
            "x".repeat(big)
        );
        let port = serve_once(Some(huge.into_bytes()));
        assert!(local_http(port, "GET", "/x", None).is_err());
        // A server that never answers: the call still ends, with an error.
        assert!(local_http(serve_once(None), "POST", "/x", Some("{}")).is_err());
    }
}
