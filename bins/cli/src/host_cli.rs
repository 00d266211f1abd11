//! Talking to the hosts' own CLIs (`claude`, `codex`): locate them, run them with a hard deadline,
//! read their JSON listings, and drive `codex app-server` for hook trust. It never edits a host's
//! configuration file itself: registrations go through the host's CLI, so the host's own writer
//! keeps its formatting and comments.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use powercontext_hooks_core::env::Env;
use serde_json::{Value, json};

use crate::install::{Host, MARKETPLACE, PLUGIN_ID};

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
                    host.name()
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
        run.stdout
            .split_whitespace()
            .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
            .map(str::to_owned)
            .ok_or_else(|| anyhow!("cannot read the {} version from `--version`", self.host.name()))
    }

    /// Where the `powercontext` marketplace points, if registered.
    pub fn marketplace_path(&self) -> Result<Option<PathBuf>> {
        match self.host {
            Host::ClaudeCode => {
                let list = self.json(&["plugin", "marketplace", "list", "--json"])?;
                Ok(list
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|m| m["name"] == MARKETPLACE)
                    .map(|m| {
                        PathBuf::from(m["path"].as_str().or(m["installLocation"].as_str()).unwrap_or(""))
                    }))
            }
            Host::Codex => {
                // `codex plugin marketplace list` has no JSON; the installed listing names the
                // marketplace source, and an unused marketplace shows under `available`.
                let list = self.json(&["plugin", "list", "--json"])?;
                let found = ["installed", "available"]
                    .iter()
                    .flat_map(|k| list[*k].as_array().into_iter().flatten())
                    .find(|p| p["marketplaceName"] == MARKETPLACE)
                    .and_then(|p| p["marketplaceSource"]["source"].as_str().map(PathBuf::from));
                Ok(found)
            }
        }
    }

    /// Our plugin's state: `None` when not installed, else whether it is enabled.
    pub fn plugin_enabled(&self) -> Result<Option<bool>> {
        let list = self.json(&["plugin", "list", "--json"])?;
        let entries: Vec<&Value> = match self.host {
            Host::ClaudeCode => list.as_array().into_iter().flatten().collect(),
            Host::Codex => list["installed"].as_array().into_iter().flatten().collect(),
        };
        let id_key = match self.host {
            Host::ClaudeCode => "id",
            Host::Codex => "pluginId",
        };
        Ok(entries
            .into_iter()
            .find(|p| p[id_key] == PLUGIN_ID && p["installed"] != false)
            .map(|p| p["enabled"] == true))
    }

    /// Codex: our plugin's `UserPromptSubmit` hooks as the host sees them from `cwd`.
    pub fn codex_hooks(&self, cwd: &Path) -> Result<Vec<Value>> {
        let mut rpc = AppServer::start(self, cwd)?;
        let listed = rpc.call("hooks/list", json!({"cwds": [cwd.display().to_string()]}))?;
        Ok(listed["data"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|e| e["hooks"].as_array().cloned().unwrap_or_default())
            .filter(|h| h["pluginId"] == PLUGIN_ID)
            .collect())
    }

    /// Codex: records trust for each of our plugin hooks the way `/hooks` review does. Returns how
    /// many hooks were newly trusted.
    pub fn codex_trust(&self, cwd: &Path) -> Result<usize> {
        let mut rpc = AppServer::start(self, cwd)?;
        let listed = rpc.call("hooks/list", json!({"cwds": [cwd.display().to_string()]}))?;
        let mut trusted = serde_json::Map::new();
        for entry in listed["data"].as_array().into_iter().flatten() {
            for hook in entry["hooks"].as_array().into_iter().flatten() {
                if hook["pluginId"] == PLUGIN_ID && hook["trustStatus"] != "trusted" {
                    let key = hook["key"]
                        .as_str()
                        .context("codex listed a hook without a key")?;
                    trusted.insert(key.to_owned(), json!({ "trusted_hash": hook["currentHash"] }));
                }
            }
        }
        if trusted.is_empty() {
            return Ok(0);
        }
        let n = trusted.len();
        let written = rpc.call(
            "config/batchWrite",
            json!({"edits": [{"keyPath": "hooks.state", "mergeStrategy": "upsert", "value": Value::Object(trusted)}]}),
        )?;
        if written["status"] != "ok" {
            bail!("codex refused to record hook trust");
        }
        Ok(n)
    }
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

fn kill_group(child: &Child) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// Minimal line-delimited JSON-RPC client for `codex app-server` on stdio; killed on drop.
struct AppServer {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    next_id: u64,
}

impl AppServer {
    fn start(cli: &HostCli, cwd: &Path) -> Result<Self> {
        let mut child = Command::new(&cli.path)
            .arg("app-server")
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .context("cannot start `codex app-server`")?;
        let stdin = child.stdin.take().context("app-server stdin")?;
        let stdout = child.stdout.take().context("app-server stdout")?;
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut rpc = Self {
            child,
            stdin,
            lines,
            next_id: 1,
        };
        rpc.call(
            "initialize",
            json!({"clientInfo": {"name": "powercontext-hooks", "version": env!("CARGO_PKG_VERSION")}}),
        )?;
        rpc.send(&json!({"jsonrpc": "2.0", "method": "initialized"}))?;
        Ok(rpc)
    }

    fn send(&mut self, message: &Value) -> Result<()> {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes())?;
        self.stdin.flush()?;
        Ok(())
    }

    fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .with_context(|| format!("codex app-server closed before {method}"))?;
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .map_err(|_| anyhow!("codex app-server gave no answer to {method}"))?;
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if message["id"] == id {
                if let Some(e) = message.get("error") {
                    bail!(
                        "codex app-server {method} failed: {}",
                        e["message"].as_str().unwrap_or("error")
                    );
                }
                return Ok(message["result"].clone());
            }
        }
    }
}

impl Drop for AppServer {
    fn drop(&mut self) {
        kill_group(&self.child);
        let _ = self.child.wait();
    }
}
