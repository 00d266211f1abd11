//! The real pinned PowerContext Server (1.4.1) and its official CLI, for integration tests: each
//! instance runs from the repo's `.venv-server` on a free loopback port with a throwaway data dir
//! and dies with the test process. It never uses the developer's data dir, config or a
//! non-loopback address, and never skips a test when the Server is missing — it panics.
//!
//! Facts about 1.4.1 that tests rely on (checked against a running Server):
//!
//! * Captured Sources are read back with `GET /v1/scopes/{scope_id}/sources?limit=1..100[&cursor=]`
//!   (operation `list_sources`): `{"items":[SourceRecord…],"next_cursor":string|null}` in journal
//!   order, where a `SourceRecord` has `scope_id`, `source_type` (`"content"`), `source_id`,
//!   `content`, `position`, `content_digest` (`sha256:<hex>`) and `receipt_identity`; metadata is
//!   not returned. One Source is `GET /v1/scopes/{scope_id}/sources/content/{source_id}`. A
//!   replayed capture keeps its original `position` and adds no item, so a deduplicated replay shows
//!   as exactly one record for that `source_id`. `POST /v1/memory/remember` journals a Source of
//!   its own too (`source_id` `src_<hex>`, object `content` with schema
//!   `powercontext.atomic-memory.v1`), so filter by `source_id` when counting captures.
//! * The official CLI reads `POWERCONTEXT_CLIENT_SERVER_URL` and `POWERCONTEXT_CLIENT_API_TOKEN`.
//!   `powercontext --json scope binding set <SCOPE> --kind workspace --external-id <ID> --integration
//!   <claude-code|codex|opencode|pi>` stores the literal key it is given (default integration
//!   `opencode`); only `powercontext --json scope resolve --integration <I> --cwd <DIR>` derives the
//!   workspace key from a directory. Each CLI call takes about 5 s.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Output, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

/// How the Server is configured beyond the harness defaults.
#[derive(Debug, Clone, Default)]
pub struct ServerOptions {
    /// Enables bearer auth with this token.
    pub auth_token: Option<String>,
    /// Extra environment for the Server process (applied last).
    pub env: Vec<(String, String)>,
}

/// A running real Server. Dropping it stops the Server; the `shared` instances live until the test
/// process exits, and their Server stops then because its watchdog sees the stdin pipe close.
pub struct RealServer {
    url: String,
    token: Option<String>,
    venv: PathBuf,
    home: PathBuf,
    root: tempfile::TempDir,
    child: Child,
    stdin: Option<ChildStdin>,
}

const READY_TIMEOUT: Duration = Duration::from_secs(60);
const START_ATTEMPTS: usize = 3;

/// Runs the Server (`$0` = the CLI, `$1` = port) in the background and, once fd 3 — our stdin pipe
/// — reaches end of file (the test process closed it or exited), stops it (TERM, then KILL after
/// 15 s) and removes the temp directory `$2`, which `shared` instances never drop. The shell itself
/// exits when the Server does, so a crash shows up as the child's exit.
const WATCHDOG: &str = r#"
exec 3<&0
"$0" server run --no-env-file --host 127.0.0.1 --port "$1" </dev/null 3<&- &
pid=$!
{
  read -r _ignored <&3
  kill -TERM "$pid" 2>/dev/null
  n=0
  while kill -0 "$pid" 2>/dev/null && [ "$n" -lt 15 ]; do sleep 1; n=$((n + 1)); done
  kill -KILL "$pid" 2>/dev/null
  rm -rf -- "$2"
} </dev/null &
exec 3<&-
wait "$pid"
"#;

impl RealServer {
    /// The bearer token of [`RealServer::shared_auth`].
    pub const TEST_TOKEN: &'static str = "pc-hooks-test-token-0123456789";

    /// Starts a Server and waits until `/health/ready` answers 200.
    ///
    /// # Panics
    /// When the venv is missing or the Server is not ready within 60 s (with its log tail).
    #[must_use]
    pub fn start(opts: ServerOptions) -> Self {
        let venv = venv_dir();
        let program = venv.join("bin").join("powercontext");
        assert!(
            program.is_file(),
            "the pinned PowerContext Server is not installed at {}.\nRun `make test` or \
             `scripts/ensure-server-venv` first (or set POWERCONTEXT_HOOKS_TEST_VENV to a venv with \
             powercontext[cli,server]==1.4.1).",
            program.display()
        );
        let mut last_failure = String::new();
        for _ in 0..START_ATTEMPTS {
            // A fresh directory per attempt: the previous watchdog removes its own.
            let root = tempfile::Builder::new()
                .prefix("pc-real-server-")
                .tempdir()
                .expect("temp dir");
            for dir in ["data", "home", "work"] {
                std::fs::create_dir_all(root.path().join(dir)).expect("create temp subdir");
            }
            match Self::launch(&opts, &venv, &program, root.path()) {
                Ok((url, child, stdin)) => {
                    let home = root.path().join("data");
                    let token = opts.auth_token.clone();
                    return Self {
                        url,
                        token,
                        venv,
                        home,
                        root,
                        child,
                        stdin: Some(stdin),
                    };
                }
                // Only a lost race for the port is worth another try.
                Err((failure, retry)) => {
                    last_failure = failure;
                    if !retry {
                        break;
                    }
                }
            }
        }
        panic!("{last_failure}");
    }

    /// One attempt on a fresh port; `Err` carries the message to panic with and whether the port
    /// was taken in the meantime.
    fn launch(
        opts: &ServerOptions,
        venv: &Path,
        program: &Path,
        root: &Path,
    ) -> Result<(String, Child, ChildStdin), (String, bool)> {
        let port = free_port();
        let url = format!("http://127.0.0.1:{port}");
        let log_path = root.join("server.log");
        let log = std::fs::File::create(&log_path).expect("server log");
        let mut command = Command::new("/bin/sh");
        command
            .arg("-c")
            .arg(WATCHDOG)
            .arg(program)
            .arg(port.to_string())
            .arg(root)
            .current_dir(root.join("work"))
            .stdin(Stdio::piped())
            .stdout(log.try_clone().expect("log handle"))
            .stderr(log);
        hermetic_env(&mut command, venv, root);
        command.env("POWERCONTEXT_HOME", root.join("data"));
        if let Some(token) = &opts.auth_token {
            command
                .env("POWERCONTEXT_SERVER_AUTH_ENABLED", "true")
                .env("POWERCONTEXT_SERVER_AUTH_TOKEN", token);
        }
        command.envs(opts.env.iter().map(|(k, v)| (k, v)));
        let mut child = command.spawn().expect("spawn /bin/sh for the Server");
        let stdin = child.stdin.take().expect("watchdog stdin");

        let agent = agent(Duration::from_secs(2));
        let started = Instant::now();
        loop {
            if let Ok(resp) = agent.get(&format!("{url}/health/ready")).call()
                && resp.status().as_u16() == 200
            {
                return Ok((url, child, stdin));
            }
            let exited = child.try_wait().ok().flatten();
            if exited.is_some() || started.elapsed() > READY_TIMEOUT {
                // Read the log before the watchdog (woken by closing stdin) removes the directory.
                let tail = log_tail(&log_path);
                drop(stdin);
                let _ = child.wait();
                let why = match exited {
                    Some(status) => format!("exited with {status}"),
                    None => format!("was not ready within {READY_TIMEOUT:?}"),
                };
                let message = format!(
                    "the real PowerContext Server at {url} {why}; its console log ends with:\n{tail}"
                );
                let lost_port =
                    exited.is_some() && tail.to_ascii_lowercase().contains("address already in use");
                return Err((message, lost_port));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// One Server without auth for the whole test process.
    pub fn shared() -> &'static RealServer {
        static SERVER: OnceLock<RealServer> = OnceLock::new();
        SERVER.get_or_init(|| RealServer::start(ServerOptions::default()))
    }

    /// One Server with bearer auth ([`RealServer::TEST_TOKEN`]) for the whole test process.
    pub fn shared_auth() -> &'static RealServer {
        static SERVER: OnceLock<RealServer> = OnceLock::new();
        SERVER.get_or_init(|| {
            RealServer::start(ServerOptions {
                auth_token: Some(RealServer::TEST_TOKEN.to_owned()),
                env: Vec::new(),
            })
        })
    }

    /// `http://127.0.0.1:PORT`, without a trailing slash.
    #[must_use]
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The Server's `POWERCONTEXT_HOME` (its SQLite database lives here).
    #[must_use]
    pub fn home(&self) -> &Path {
        &self.home
    }

    /// The token the Server requires, if auth is on.
    #[must_use]
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// The Server's console log so far (tests may assert on it; it never goes to test stdout).
    #[must_use]
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.root.path().join("server.log")).unwrap_or_default()
    }

    /// The auto-created default scope (`GET /v1/scopes/default`).
    #[must_use]
    pub fn default_scope(&self) -> String {
        let (status, body) = self.get("/v1/scopes/default");
        assert_eq!(status, 200, "GET /v1/scopes/default: {body}");
        scope_id_of(&body)
    }

    /// A new scope (`POST /v1/scopes` with a unique idempotency key).
    #[must_use]
    pub fn create_scope(&self, title: &str) -> String {
        let body = json!({"title": title, "summary": format!("test scope {title}"), "idempotency_key": unique_key()});
        let (status, reply) = self.post("/v1/scopes", &body);
        assert_eq!(status, 201, "POST /v1/scopes: {reply}");
        scope_id_of(&reply)
    }

    /// Stores an explicit `decision` memory (recallable without an LLM via full-text search).
    pub fn remember(&self, scope: &str, text: &str) {
        let (status, reply) = self.post(
            "/v1/memory/remember",
            &json!({"scope_id": scope, "kind": "decision", "text": text}),
        );
        assert_eq!(status, 200, "POST /v1/memory/remember: {reply}");
    }

    /// Stores an explicit `decision` memory and returns its atomic-memory artifact id.
    pub fn remember_artifact(&self, scope: &str, text: &str) -> String {
        let (status, reply) = self.post(
            "/v1/memory/remember",
            &json!({"scope_id": scope, "kind": "decision", "text": text}),
        );
        assert_eq!(status, 200, "POST /v1/memory/remember: {reply}");
        reply["records"][0]["artifact"]["artifact_id"]
            .as_str()
            .unwrap_or_else(|| panic!("no artifact id in {reply}"))
            .to_owned()
    }

    /// Binds a binding key to a scope over HTTP (`PUT /v1/scope-bindings`).
    pub fn bind(&self, integration: &str, kind: &str, external_id: &str, scope: &str) {
        let body = json!({"key": {"integration": integration, "kind": kind, "external_id": external_id}, "scope_id": scope});
        let (status, reply) = self.request("PUT", "/v1/scope-bindings", Some(&body));
        assert_eq!(status, 200, "PUT /v1/scope-bindings: {reply}");
    }

    /// POSTs JSON (with the token, if any); returns the status and the JSON body (`Null` when the
    /// body is empty or not JSON).
    #[must_use]
    pub fn post(&self, path: &str, body: &Value) -> (u16, Value) {
        self.request("POST", path, Some(body))
    }

    /// GETs a path (with the token, if any).
    #[must_use]
    pub fn get(&self, path: &str) -> (u16, Value) {
        self.request("GET", path, None)
    }

    /// Any method; `path` starts with `/` and may carry a query string.
    #[must_use]
    pub fn request(&self, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
        let url = format!("{}{path}", self.url);
        let agent = agent(Duration::from_secs(30));
        let auth = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let result = match (method, body) {
            ("GET", None) => with_auth(agent.get(&url), auth.as_deref()).call(),
            ("DELETE", None) => with_auth(agent.delete(&url), auth.as_deref()).call(),
            ("POST", Some(b)) => with_auth(agent.post(&url), auth.as_deref()).send_json(b),
            ("PUT", Some(b)) => with_auth(agent.put(&url), auth.as_deref()).send_json(b),
            ("PATCH", Some(b)) => with_auth(agent.patch(&url), auth.as_deref()).send_json(b),
            ("POST", None) => with_auth(agent.post(&url), auth.as_deref()).send_empty(),
            other => panic!("unsupported request shape {other:?}"),
        };
        let mut response =
            result.unwrap_or_else(|e| panic!("{method} {path} to the real Server failed: {e}"));
        let status = response.status().as_u16();
        let text = response.body_mut().read_to_string().unwrap_or_default();
        (status, serde_json::from_str(&text).unwrap_or(Value::Null))
    }

    /// Every Source of a scope, in journal order, read back through
    /// `GET /v1/scopes/{scope}/sources` (all pages).
    #[must_use]
    pub fn sources(&self, scope: &str) -> Vec<Value> {
        let mut items = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut path = format!("/v1/scopes/{}/sources?limit=100", encode(scope));
            if let Some(c) = &cursor {
                path.push_str("&cursor=");
                path.push_str(&encode(c));
            }
            let (status, page) = self.get(&path);
            assert_eq!(status, 200, "GET sources: {page}");
            items.extend(page["items"].as_array().cloned().unwrap_or_default());
            match page["next_cursor"].as_str() {
                Some(next) => cursor = Some(next.to_owned()),
                None => return items,
            }
        }
    }

    /// Runs the official `powercontext` CLI in `cwd`, pointed at this Server (URL and token through
    /// its `POWERCONTEXT_CLIENT_*` variables) with a throwaway HOME.
    #[must_use]
    pub fn cli(&self, args: &[&str], cwd: &Path) -> Output {
        let mut command = Command::new(self.venv.join("bin").join("powercontext"));
        command.args(args).current_dir(cwd).stdin(Stdio::null());
        hermetic_env(&mut command, &self.venv, self.root.path());
        command.env("POWERCONTEXT_CLIENT_SERVER_URL", &self.url);
        if let Some(token) = &self.token {
            command.env("POWERCONTEXT_CLIENT_API_TOKEN", token);
        }
        command.output().expect("run the powercontext CLI")
    }

    /// Runs `powercontext --json <args>`, asserts success and parses stdout.
    #[must_use]
    pub fn cli_json(&self, args: &[&str], cwd: &Path) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.cli(&all, cwd);
        assert!(
            out.status.success(),
            "powercontext {args:?} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("powercontext {args:?} printed no JSON ({e}): {:?}", out.stdout))
    }
}

impl Drop for RealServer {
    fn drop(&mut self) {
        // Closing the pipe tells the watchdog to stop the Server.
        drop(self.stdin.take());
        let end = Instant::now() + Duration::from_secs(20);
        while Instant::now() < end {
            if !matches!(self.child.try_wait(), Ok(None)) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `POWERCONTEXT_HOOKS_TEST_VENV`, else `<workspace>/.venv-server`.
fn venv_dir() -> PathBuf {
    #[expect(clippy::disallowed_methods, reason = "the test harness reads its own setting")]
    let configured = std::env::var_os("POWERCONTEXT_HOOKS_TEST_VENV").filter(|v| !v.is_empty());
    configured.map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.venv-server"),
        PathBuf::from,
    )
}

/// Keeps the developer's PowerContext settings, proxies and home out of the child.
#[expect(
    clippy::disallowed_methods,
    reason = "the harness must see which variables to strip"
)]
fn hermetic_env(command: &mut Command, venv: &Path, root: &Path) {
    for (name, _) in std::env::vars_os() {
        let Some(name) = name.to_str() else { continue };
        let upper = name.to_ascii_uppercase();
        if upper.starts_with("POWERCONTEXT_")
            || upper.starts_with("OPENAI_")
            || upper.ends_with("_PROXY")
            || upper.starts_with("XDG_")
            || upper == "VIRTUAL_ENV"
            || upper.starts_with("PYTHON")
        {
            command.env_remove(name);
        }
    }
    let home = root.join("home");
    command
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("XDG_DATA_HOME", home.join(".local/share"))
        .env("XDG_STATE_HOME", home.join(".local/state"))
        .env("XDG_CACHE_HOME", home.join(".cache"))
        .env("VIRTUAL_ENV", venv)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("NO_COLOR", "1");
}

fn agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .proxy(None)
        .max_redirects(0)
        .timeout_global(Some(timeout))
        .build()
        .into()
}

fn with_auth<B>(request: ureq::RequestBuilder<B>, auth: Option<&str>) -> ureq::RequestBuilder<B> {
    match auth {
        Some(value) => request.header("Authorization", value),
        None => request,
    }
}

/// A port that was free a moment ago (start retries on a lost race).
fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    listener.local_addr().expect("local addr").port()
}

fn unique_key() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "pc-hooks-test-{}-{nanos}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

fn scope_id_of(body: &Value) -> String {
    body["scope_id"]
        .as_str()
        .unwrap_or_else(|| panic!("no scope_id in {body}"))
        .to_owned()
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
fn encode(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for b in raw.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The last 60 lines of the Server's console log.
fn log_tail(path: &Path) -> String {
    let text = std::fs::read(path)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(60)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha256_of(path: &Path) -> String {
        // test-support has no hashing crate; coreutils gives the same digest the CLI computes.
        let out = Command::new("sha256sum")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                child
                    .stdin
                    .take()
                    .expect("stdin")
                    .write_all(path.as_os_str().as_encoded_bytes())?;
                child.wait_with_output()
            })
            .expect("sha256sum");
        String::from_utf8(out.stdout)
            .expect("utf8")
            .split_whitespace()
            .next()
            .expect("digest")
            .to_owned()
    }

    fn git(cwd: &Path, args: &[&str]) {
        assert!(
            Command::new("git")
                .args(args)
                .current_dir(cwd)
                .status()
                .expect("git")
                .success()
        );
    }

    #[test]
    fn remembers_prepares_and_lists_deduplicated_sources() {
        let server = RealServer::shared();
        assert!(server.url().starts_with("http://127.0.0.1:"));
        assert!(
            server.home().join("powercontext.db").is_file(),
            "SQLite file in the temp home"
        );
        assert!(server.default_scope().starts_with("scp_"));

        let scope = server.create_scope("harness");
        server.remember(
            &scope,
            "Run the Rust test suite with cargo nextest run --workspace before merging.",
        );
        let (status, ctx) = server.post(
            "/v1/context/prepare",
            &json!({"scope_id": scope, "query": "how do I run the rust test suite", "max_bytes": 8000}),
        );
        assert_eq!(status, 200, "{ctx}");
        assert_eq!(ctx["status"], "ready", "{ctx}");
        assert_eq!(ctx["schema"], "powercontext.prepared-context.v1");
        assert!(
            ctx["content"]
                .as_str()
                .is_some_and(|c| c.contains("cargo nextest run")),
            "{ctx}"
        );

        let capture = json!({"scope_id": scope, "source_id": "harness:one", "content": "first prompt",
            "metadata": {"origin": "claude-code", "event": "user_prompt_submit"}});
        let (first, reply) = server.post("/v1/sources/content", &capture);
        assert_eq!(first, 202, "{reply}");
        let (again, replay) = server.post("/v1/sources/content", &capture);
        assert_eq!(again, 202, "{replay}");
        assert_eq!(replay["position"], reply["position"]);
        let other =
            json!({"scope_id": scope, "source_id": "harness:two", "content": "second", "metadata": null});
        assert_eq!(server.post("/v1/sources/content", &other).0, 202);

        // `remember` journals a Source of its own (`src_…`), so look only at the captures.
        let sources = server.sources(&scope);
        let captured: Vec<&Value> = sources
            .iter()
            .filter(|s| {
                s["source_id"]
                    .as_str()
                    .is_some_and(|id| id.starts_with("harness:"))
            })
            .collect();
        let ids: Vec<&str> = captured.iter().filter_map(|s| s["source_id"].as_str()).collect();
        assert_eq!(ids, ["harness:one", "harness:two"]);
        assert_eq!(captured[0]["content"], "first prompt");
        assert_eq!(captured[0]["position"], reply["position"]);
        assert_eq!(captured[0]["source_type"], "content");
        assert!(server.sources(&server.create_scope("empty")).is_empty());
        assert!(!server.log().is_empty(), "the console log goes to the temp dir");
    }

    #[test]
    fn auth_server_requires_the_token() {
        let server = RealServer::shared_auth();
        assert_eq!(server.token(), Some(RealServer::TEST_TOKEN));
        assert!(server.default_scope().starts_with("scp_"));
        let bare = agent(Duration::from_secs(10))
            .get(&format!("{}/v1/scopes/default", server.url()))
            .call();
        assert_eq!(bare.expect("reply").status().as_u16(), 401);
        let (status, _) = server.get("/health/live");
        assert_eq!(status, 200);
    }

    #[test]
    fn dropping_an_instance_stops_its_server() {
        let server = RealServer::start(ServerOptions::default());
        let url = server.url();
        assert_eq!(server.get("/health/live").0, 200);
        drop(server);
        let after = agent(Duration::from_secs(2))
            .get(&format!("{url}/health/live"))
            .call();
        assert!(after.is_err(), "the Server still answers after drop");
    }

    #[test]
    fn a_server_that_cannot_start_panics_with_its_log() {
        // A token without auth enabled is refused at startup.
        let opts = ServerOptions {
            auth_token: None,
            env: vec![(
                "POWERCONTEXT_SERVER_AUTH_TOKEN".to_owned(),
                "orphan-token".to_owned(),
            )],
        };
        let started = Instant::now();
        let panic = std::panic::catch_unwind(|| RealServer::start(opts))
            .err()
            .expect("start must panic");
        let message = panic.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(message.contains("exited with"), "{message}");
        assert!(
            message.contains("AUTH_TOKEN"),
            "the log tail names the problem: {message}"
        );
        assert!(
            started.elapsed() < Duration::from_secs(45),
            "no retries for a configuration error"
        );
    }

    /// The official CLI derives the workspace key as documented in `powercontext_hooks_core::workspace`:
    /// SHA-256 of the symlink-resolved Git toplevel for claude-code/codex, of the lexical cwd for pi.
    #[test]
    fn cli_binds_and_resolves_workspace_keys() {
        let server = RealServer::shared();
        let tmp = tempfile::tempdir().expect("tempdir");
        let base = std::fs::canonicalize(tmp.path()).expect("canonical");
        let repo = base.join("repo");
        std::fs::create_dir_all(repo.join("sub")).expect("mkdir");
        git(&repo, &["init", "-q"]);
        git(&repo, &["remote", "add", "origin", "git@github.com:Org/Repo.git"]);
        let link = base.join("link");
        std::os::unix::fs::symlink(&repo, &link).expect("symlink");
        let via_link = link.join("sub");

        let claude = server.create_scope("claude workspace");
        let codex = server.create_scope("codex workspace");
        let pi = server.create_scope("pi workspace");
        let toplevel_key = sha256_of(&repo);
        // Binding through the CLI stores exactly the key it is given.
        let set = server.cli_json(
            &[
                "scope",
                "binding",
                "set",
                &claude,
                "--kind",
                "workspace",
                "--external-id",
                &toplevel_key,
                "--integration",
                "claude-code",
            ],
            &base,
        );
        assert_eq!(set["key"]["external_id"], toplevel_key.as_str());
        server.bind("codex", "workspace", &toplevel_key, &codex);
        server.bind("pi", "workspace", &sha256_of(&via_link), &pi);

        let resolve = |integration: &'static str| {
            let cwd = via_link.to_str().expect("utf8 path").to_owned();
            let base = base.clone();
            std::thread::spawn(move || {
                RealServer::shared().cli_json(
                    &["scope", "resolve", "--integration", integration, "--cwd", &cwd],
                    &base,
                )["scope_id"]
                    .as_str()
                    .expect("scope_id")
                    .to_owned()
            })
        };
        let runs = [
            ("claude-code", resolve("claude-code")),
            ("codex", resolve("codex")),
            ("pi", resolve("pi")),
        ];
        let got: Vec<(&str, String)> = runs
            .into_iter()
            .map(|(i, h)| (i, h.join().expect("cli thread")))
            .collect();
        assert_eq!(got, [("claude-code", claude), ("codex", codex), ("pi", pi)]);
    }
}
