//! Talking to the hosts' own CLIs (`claude`, `codex`, `opencode`, `pi`, `dsh`): locate them, run
//! them with a hard deadline, read their listings, drive `codex app-server` for hook trust, and
//! prove OpenCode loads our plugin through a short-lived `opencode serve`. It never edits a host's
//! configuration file itself: registrations go through the host's CLI, so the host's own writer
//! keeps its formatting and comments.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use powercontext_hooks_core::env::Env;
use serde_json::{Value, json};

use crate::install::{DSH_PLUGIN_ID, Host, HostExt, MARKETPLACE, PLUGIN_ID};

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
            Host::OpenCode | Host::Pi | Host::Dsh => Ok(None),
        }
    }

    /// Our plugin's state: `None` when not installed, else whether it is enabled.
    pub fn plugin_enabled(&self) -> Result<Option<bool>> {
        let list = self.json(&["plugin", "list", "--json"])?;
        let entries: Vec<&Value> = match self.host {
            Host::Codex => list["installed"].as_array().into_iter().flatten().collect(),
            _ => list.as_array().into_iter().flatten().collect(),
        };
        let id_key = match self.host {
            Host::Codex => "pluginId",
            _ => "id",
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

impl HostCli {
    /// Pi: whether `pi list` shows `dir` as an installed user package (its installed-path line,
    /// or a source line naming it).
    pub fn pi_lists(&self, dir: &Path) -> Result<bool> {
        let run = self.run_ok(&["list"])?;
        let want: Vec<PathBuf> = [Some(dir.to_path_buf()), std::fs::canonicalize(dir).ok()]
            .into_iter()
            .flatten()
            .collect();
        let mut user = false;
        for line in run.stdout.lines() {
            let t = line.trim();
            if !line.starts_with(' ') {
                user = t == "User packages:";
                continue;
            }
            if user && want.iter().any(|w| Path::new(t) == w) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Pi: the installed paths of user packages named `powercontext-pi` other than `dir` (the
    /// official installer's copy). Pi tells local packages apart by path, not by name, so each
    /// of them loads beside ours.
    pub fn pi_other_powercontext(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        let run = self.run_ok(&["list"])?;
        let ours = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let mut user = false;
        let mut out = Vec::new();
        for line in run.stdout.lines() {
            let t = line.trim();
            if !line.starts_with(' ') {
                user = t == "User packages:";
                continue;
            }
            // Installed-path lines are indented four spaces (source lines two).
            let path = Path::new(t);
            if !user || !line.starts_with("    ") || !path.is_absolute() {
                continue;
            }
            if path == dir || std::fs::canonicalize(path).is_ok_and(|p| p == ours) {
                continue;
            }
            let name = crate::install::read_opt(&path.join("package.json"))
                .ok()
                .flatten()
                .filter(|b| b.len() <= 1 << 20)
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .and_then(|v| v["name"].as_str().map(str::to_owned));
            if name.as_deref() == Some(crate::install::PI_PACKAGE) {
                out.push(path.to_path_buf());
            }
        }
        Ok(out)
    }

    /// DSH: whether `dsh --profile <p> --dump-config` has our plugin row (`id: powercontext-dsh`,
    /// quoted or not).
    pub fn dsh_has_plugin(&self, profile: &str) -> Result<bool> {
        let run = self.run_ok(&["--profile", profile, "--dump-config"])?;
        Ok(run.stdout.lines().any(|l| {
            let t = l.trim().trim_start_matches('-').trim();
            t.strip_prefix("id:")
                .map(|v| v.trim().trim_matches(|c| c == '\'' || c == '"'))
                == Some(DSH_PLUGIN_ID)
        }))
    }

    /// OpenCode: `opencode debug paths` as name → directory (`config`, `data`, …).
    pub fn opencode_paths(&self) -> Result<BTreeMap<String, PathBuf>> {
        let run = self.run_ok(&["debug", "paths"])?;
        let paths: BTreeMap<String, PathBuf> = run
            .stdout
            .lines()
            .filter_map(|l| {
                let (k, v) = l.trim().split_once(char::is_whitespace)?;
                Some((k.to_owned(), PathBuf::from(v.trim())))
            })
            .collect();
        if !paths.contains_key("config") {
            bail!("`opencode debug paths` printed no config directory");
        }
        Ok(paths)
    }

    /// OpenCode: starts `opencode serve` on a free loopback port with our plugin's hook command
    /// replaced by a probe, creates and deletes a session (the plugin answers `session.deleted`
    /// by running its hook's `forget`), and waits for the probe to write a nonce. Also reads the
    /// status OpenCode reports for our MCP entry. The server is always killed.
    pub fn opencode_probe(&self, work: &Path) -> Result<OpenCodeProbe> {
        let _ = std::fs::remove_dir_all(work);
        let cwd = work.join("project");
        std::fs::create_dir_all(&cwd).with_context(|| format!("cannot create {}", work.display()))?;
        let probe = work.join("probe.sh");
        let marker = work.join("activated");
        std::fs::write(
            &probe,
            "#!/bin/sh\n# powercontext-hooks doctor: proves OpenCode loaded the plugin\ncat >/dev/null\n\
             [ \"$1\" = forget ] && printf '%s' \"$PC_DOCTOR_NONCE\" >\"$PC_DOCTOR_PROBE\"\nexit 0\n",
        )?;
        std::fs::set_permissions(&probe, std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
        let nonce = format!(
            "{:x}{:x}",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
            std::process::id()
        );
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let port_s = port.to_string();
        let child = Command::new(&self.path)
            .args(["serve", "--hostname", "127.0.0.1", "--port", &port_s])
            .current_dir(&cwd)
            .env("POWERCONTEXT_OPENCODE_HOOK_COMMAND", &probe)
            .env("PC_DOCTOR_PROBE", &marker)
            .env("PC_DOCTOR_NONCE", &nonce)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .context("cannot start `opencode serve`")?;
        let server = Killed(child);
        let result = (|| -> Result<OpenCodeProbe> {
            let started = Instant::now();
            loop {
                if let Ok((200, _)) = local_http(port, "GET", "/session", None) {
                    break;
                }
                if started.elapsed() > Duration::from_secs(30) {
                    bail!("`opencode serve` did not answer within 30 s");
                }
                thread::sleep(Duration::from_millis(100));
            }
            let mcp = local_http(port, "GET", "/mcp", None)
                .ok()
                .and_then(|(_, b)| serde_json::from_str::<Value>(&b).ok())
                .and_then(|v| {
                    v[crate::install::OPENCODE_MCP_KEY]["status"]
                        .as_str()
                        .map(str::to_owned)
                });
            let (status, body) = local_http(port, "POST", "/session", Some("{}"))?;
            let id = serde_json::from_str::<Value>(&body)
                .ok()
                .and_then(|v| v["id"].as_str().map(str::to_owned))
                .filter(|_| status == 200)
                .ok_or_else(|| anyhow!("`opencode serve` did not create a session ({status})"))?;
            local_http(port, "DELETE", &format!("/session/{id}"), None)?;
            let waited = Instant::now();
            let loaded = loop {
                if std::fs::read_to_string(&marker).is_ok_and(|t| t == nonce) {
                    break true;
                }
                if waited.elapsed() > Duration::from_secs(10) {
                    break false;
                }
                thread::sleep(Duration::from_millis(50));
            };
            Ok(OpenCodeProbe { loaded, mcp })
        })();
        drop(server);
        let _ = std::fs::remove_dir_all(work);
        result
    }
}

/// What the OpenCode activation probe saw.
#[derive(Debug)]
pub struct OpenCodeProbe {
    /// Our plugin ran its hook command with the nonce.
    pub loaded: bool,
    /// OpenCode's status for our MCP entry (`connected`, `failed`, …).
    pub mcp: Option<String>,
}

/// A child whose process group is killed on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        kill_group(&self.0);
        let _ = self.0.wait();
    }
}

/// One request to OpenCode's local server on a loopback port: no proxy, no redirect followed,
/// 2 s to connect and 5 s in all, and an answer of at most 1 MiB.
fn local_http(port: u16, method: &str, path: &str, body: Option<&str>) -> Result<(u16, String)> {
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

#[cfg(test)]
mod local_http_tests {
    use super::*;

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
