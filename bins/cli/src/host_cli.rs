//! Talking to the hosts' own CLIs (`claude`, `codex`, `opencode`, `pi`, `dsh`): locate them, run
//! them with a hard deadline and read their JSON and versions; what each host's listings mean is
//! its installer's (`hosts/`). It never edits a host's configuration file itself: registrations go
//! through the host's CLI, so the host's own writer keeps its formatting and comments.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use powercontext_hooks_core::env::Env;
use serde_json::Value;

use crate::install::{Host, HostExt};

/// One host CLI call's limit (the official installer uses 120 s).
const CALL_TIMEOUT: Duration = Duration::from_secs(120);

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
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .with_context(|| format!("cannot run {}", self.path.display()))?;
        let out = pipe(child.stdout.take());
        let err = pipe(child.stderr.take());
        let started = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait()? {
                break s;
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
        // Pi prints its version on stderr.
        run.stdout
            .split_whitespace()
            .chain(run.stderr.split_whitespace())
            .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
            .map(str::to_owned)
            .ok_or_else(|| anyhow!("cannot read the {} version from `--version`", self.host.as_str()))
    }
}

/// One HTTP/1.1 request to a loopback port (OpenCode's local server), `Connection: close`.
pub(crate) fn local_http(port: u16, method: &str, path: &str, body: Option<&str>) -> Result<(u16, String)> {
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    let body = body.unwrap_or("");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept: application/json\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes())?;
    // Read until the body is complete (a keep-alive server may not close the connection).
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        if let Some(len) = complete(&raw) {
            raw.truncate(len);
            break;
        }
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) if raw.len() < 1 << 20 => raw.extend_from_slice(&buf[..n]),
            Ok(_) => bail!("answer too large"),
            Err(e) => return Err(e.into()),
        }
    }
    let text = String::from_utf8_lossy(&raw);
    let (head, rest) = text.split_once("\r\n\r\n").context("no HTTP header")?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .context("no HTTP status")?;
    let body = if is_chunked(head) {
        dechunk(rest)
    } else {
        rest.to_owned()
    };
    Ok((status, body))
}

fn is_chunked(head: &str) -> bool {
    head.lines()
        .any(|l| l.to_ascii_lowercase().starts_with("transfer-encoding:") && l.contains("chunked"))
}

/// The length of a complete response in `raw`, once there is one.
fn complete(raw: &[u8]) -> Option<usize> {
    let end = raw.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
    if is_chunked(&head) {
        return raw[end..]
            .windows(5)
            .position(|w| w == b"0\r\n\r\n")
            .filter(|&p| p == 0 || raw[end + p - 1] == b'\n')
            .map(|p| end + p + 5);
    }
    let len = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())?;
    (raw.len() >= end + len).then_some(end + len)
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else {
            break;
        };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        s = rest[n..].trim_start_matches("\r\n");
    }
    out
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
