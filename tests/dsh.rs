//! The DSH executable (`powercontext-hook-dsh pre-step`) and its plugin, without DSH: the upstream
//! DSH vectors (host-contracts §6.10), recall once per user turn, the shared secret filter, the
//! base-URL and bearer rules, and the plugin's `next()`/`enter`/deadline behaviour driven by a fake
//! Cordis context in Node against the real executable and a loopback Server.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use powercontext_hooks_core::capture::source_id;
use powercontext_hooks_core::workspace::sha256_hex;
use powercontext_hooks_test_support::fake_server::FakeServer;
use powercontext_hooks_test_support::fault_server::{FaultServer, Reply, closed_port_url};
use powercontext_hooks_test_support::hook::{HookCmd, HookOutput};
use powercontext_hooks_test_support::host_dsh::{self, CONTEXT_PREFIX};
use powercontext_hooks_test_support::hosts::repo_root;
use serde_json::{Value, json};

use crate::support::DSH;
use tempfile::TempDir;

const SCOPE: &str = "scp_secretscopeid0000000000";
const TOKEN: &str = "tok-SECRET-4242";
const PROMPT: &str = "How do we deploy the PROMPTSECRET service?";
const CONTENT: &str = "CONTENTSECRET: deploy with the blue-green script";
const SESSION: &str = "session-9dd19107-test";

/// A well-behaved Server whose prepare answer is replaced by `prepare`.
fn server(prepare: impl Fn() -> Reply + Send + Sync + 'static) -> FakeServer {
    FakeServer::with_prepare(SCOPE, prepare)
}

fn ready_server() -> FakeServer {
    FakeServer::builder(SCOPE).ready(CONTENT).start()
}

fn message(kind: &str, text: &str) -> Value {
    json!({"source": {"kind": kind}, "content": [{"type": "text", "text": text}]})
}

/// The batch the plugin sends: `{session: {id, cwd}, turn, step, messages}`.
fn batch(messages: &[Value], cwd: Option<&Path>, turn: u64, step: u64) -> Value {
    json!({
        "session": {"id": SESSION, "cwd": cwd.map(|p| p.to_string_lossy().into_owned())},
        "turn": turn, "step": step, "messages": messages,
    })
}

/// One hook home (HOME, state dir, project dir) reused across runs, like one DSH session.
struct Hook {
    home: TempDir,
    env: Vec<(String, String)>,
}

impl Hook {
    fn new(url: &str) -> Self {
        let home = tempfile::tempdir().unwrap();
        let h = home.path().to_string_lossy().into_owned();
        fs::create_dir_all(home.path().join("project")).unwrap();
        let env = vec![
            ("PATH".to_owned(), "/usr/local/bin:/usr/bin:/bin".to_owned()),
            ("HOME".to_owned(), h.clone()),
            ("XDG_CONFIG_HOME".to_owned(), format!("{h}/.config")),
            ("POWERCONTEXT_HOOKS_STATE_DIR".to_owned(), format!("{h}/state")),
            (
                "POWERCONTEXT_HOOKS_NO_BACKGROUND_DRAIN".to_owned(),
                "1".to_owned(),
            ),
            ("GIT_CEILING_DIRECTORIES".to_owned(), h),
            ("POWERCONTEXT_DSH_SERVER_URL".to_owned(), url.to_owned()),
            (
                "POWERCONTEXT_DSH_AUTHORIZATION".to_owned(),
                format!("Bearer {TOKEN}"),
            ),
            // These tests pin the exact prepare/capture exchange; session bootstrap (one more
            // request at a session's first prompt) has its own tests in `negative`.
            ("POWERCONTEXT_DSH_BOOTSTRAP".to_owned(), "0".to_owned()),
        ];
        Self { home, env }
    }

    fn env(mut self, key: &str, value: &str) -> Self {
        self.env.retain(|(k, _)| k != key);
        self.env.push((key.to_owned(), value.to_owned()));
        self
    }

    fn project(&self) -> PathBuf {
        self.home.path().join("project")
    }

    fn user_batch(&self, text: &str, turn: u64, step: u64) -> Value {
        batch(&[message("user", text)], Some(&self.project()), turn, step)
    }

    /// Through [`HookCmd`], with this home's whole environment (and nothing of HookCmd's own
    /// throwaway home left over) and the home as the working directory.
    fn run_args(&self, args: &[&str], stdin: &[u8]) -> HookOutput {
        HookCmd::new(DSH)
            .env_remove("XDG_STATE_HOME")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .args(args)
            .current_dir(self.home.path())
            .stdin_bytes(stdin)
            .run()
    }

    fn run(&self, stdin: &Value) -> HookOutput {
        self.run_args(&["pre-step"], &serde_json::to_vec(stdin).unwrap())
    }
}

/// The context the executable answered with (`{"context": …}`), checking the line's shape.
#[track_caller]
fn context(out: &HookOutput) -> Option<String> {
    assert!(out.status.success(), "exit {:?}: {}", out.status, out.stderr);
    let _ = out.diagnostics();
    let line = out.stdout.trim_end_matches('\n');
    if line.is_empty() {
        return None;
    }
    assert!(!line.contains('\n'), "one stdout line: {:?}", out.stdout);
    let v: Value = serde_json::from_str(line).expect("stdout is JSON");
    assert_eq!(
        v.as_object().map(serde_json::Map::len),
        Some(1),
        "only `context`: {v}"
    );
    Some(v["context"].as_str().expect("context is text").to_owned())
}

fn assert_clean(out: &HookOutput) {
    out.assert_stderr_free_of(&[TOKEN, "PROMPTSECRET", SCOPE, "CONTENTSECRET", SESSION]);
}

fn body_of(s: &FaultServer, path: &str) -> Value {
    s.requests()
        .iter()
        .find(|r| r.path == path)
        .unwrap_or_else(|| panic!("no {path} request: {:?}", s.paths()))
        .json()
        .unwrap()
}

#[test]
fn ready_context_is_wrapped_and_only_user_text_is_recalled_and_captured() {
    let s = ready_server();
    let hook = Hook::new(&s.url());
    let input = batch(
        &[
            message("user", PROMPT),
            message("plugin", "Plugin-provided context"),
        ],
        Some(&hook.project()),
        1,
        1,
    );
    let out = hook.run(&input);
    assert_clean(&out);
    assert_eq!(context(&out), Some(format!("{CONTEXT_PREFIX}\n\n{CONTENT}")));
    assert!(out.stderr.is_empty(), "a ready run is silent: {}", out.stderr);

    let resolve = body_of(&s, "/v1/scope-bindings/resolve");
    assert_eq!(
        resolve["binding_keys"][0],
        json!({"integration": "dsh", "kind": "session", "external_id": SESSION})
    );
    let workspace = sha256_hex(hook.project().to_str().unwrap().as_bytes());
    assert_eq!(
        resolve["binding_keys"][1],
        json!({"integration": "dsh", "kind": "workspace", "external_id": workspace})
    );
    // The recall query is the user's text, not plugin text (ours or anyone's).
    assert_eq!(
        body_of(&s, "/v1/context/prepare"),
        json!({"scope_id": SCOPE, "query": PROMPT, "max_bytes": 8000})
    );
    let capture = body_of(&s, "/v1/sources/content");
    assert_eq!(capture["content"], PROMPT);
    assert_eq!(
        capture["source_id"],
        source_id("dsh-user-prompt", SCOPE, SESSION, "1", PROMPT)
    );
    assert_eq!(
        capture["metadata"],
        json!({"origin": "dsh", "event": "user_prompt_submit", "cwd": hook.project().to_str().unwrap(),
               "session_id": SESSION, "turn_id": "1"})
    );
    let prepare = s
        .requests()
        .into_iter()
        .find(|r| r.path == "/v1/context/prepare")
        .unwrap();
    assert_eq!(
        prepare.header("authorization"),
        Some(format!("Bearer {TOKEN}").as_str())
    );
}

#[test]
fn empty_and_plugin_only_batches_make_no_call_and_say_nothing() {
    let s = ready_server();
    let hook = Hook::new(&s.url());
    for input in [
        batch(&[], Some(&hook.project()), 1, 2),
        batch(
            &[message("plugin", "Plugin-provided context")],
            Some(&hook.project()),
            1,
            1,
        ),
        batch(&[message("user", "   ")], Some(&hook.project()), 1, 1),
    ] {
        let out = hook.run(&input);
        assert_eq!(context(&out), None);
        assert!(out.stderr.is_empty(), "{}", out.stderr);
    }
    assert_eq!(s.request_count(), 0);
}

#[test]
fn recall_runs_once_per_user_turn_and_capture_keeps_later_user_text() {
    let s = ready_server();
    let hook = Hook::new(&s.url());
    let count = |path: &str| s.count(path);

    assert!(context(&hook.run(&hook.user_batch(PROMPT, 1, 1))).is_some());
    // A later step of turn 1: DSH passes `messages: []` — nothing at all.
    assert_eq!(context(&hook.run(&batch(&[], Some(&hook.project()), 1, 2))), None);
    // A later step of turn 1 carrying user text (steered input): captured, not recalled again.
    let steer = hook.run(&hook.user_batch("and the staging service too", 1, 3));
    assert_eq!(context(&steer), None);
    assert!(steer.stderr.is_empty(), "{}", steer.stderr);
    assert_eq!(
        (count("/v1/context/prepare"), count("/v1/sources/content")),
        (1, 2)
    );
    // The next turn recalls again.
    assert!(context(&hook.run(&hook.user_batch("next question", 2, 1))).is_some());
    assert_eq!(
        (count("/v1/context/prepare"), count("/v1/sources/content")),
        (2, 3)
    );
    // Another session in the same turn number is its own turn.
    let mut other = hook.user_batch("other session", 2, 2);
    other["session"]["id"] = json!("session-other");
    assert!(context(&hook.run(&other)).is_some());
    assert_eq!(count("/v1/context/prepare"), 3);
}

#[test]
fn unusable_state_still_recalls() {
    let s = ready_server();
    let hook = Hook::new(&s.url());
    let blocker = hook.home.path().join("not-a-dir");
    fs::write(&blocker, "x").unwrap();
    let hook = hook.env(
        "POWERCONTEXT_HOOKS_STATE_DIR",
        &blocker.join("state").to_string_lossy(),
    );
    let out = hook.run(&hook.user_batch(PROMPT, 1, 1));
    assert!(context(&out).is_some());
    // The capture's write-ahead and the turn mark each say the state could not be used.
    assert_eq!(out.outcomes(), ["state_unavailable", "state_unavailable"]);
}

#[test]
fn server_down_fails_open_fast() {
    let hook = Hook::new(&closed_port_url());
    let out = hook.run(&hook.user_batch(PROMPT, 1, 1));
    assert_clean(&out);
    assert_eq!(context(&out), None);
    let d = out
        .diagnostic("server_unavailable")
        .expect("server_unavailable reported");
    assert_eq!(d["component"], "powercontext.dsh.recall");
    assert!(out.elapsed < Duration::from_secs(3), "{:?}", out.elapsed);
}

#[test]
fn http_failures_use_the_shared_taxonomy() {
    for (status, outcome) in [
        (401, "authentication_failed"),
        (503, "server_unavailable"),
        (500, "invalid_response"),
    ] {
        let s =
            server(move || Reply::json(status, &json!({"error": {"code": "x", "message": "BODYSECRET"}})));
        let hook = Hook::new(&s.url());
        let out = hook.run(&hook.user_batch(PROMPT, 1, 1));
        assert_clean(&out);
        out.assert_stderr_free_of(&["BODYSECRET"]);
        assert_eq!(context(&out), None);
        let d = out
            .diagnostics()
            .into_iter()
            .find(|d| d["event"] == "context_prepare")
            .unwrap();
        assert_eq!(
            (d["outcome"].as_str(), d["http_status"].as_u64()),
            (Some(outcome), Some(u64::from(status)))
        );
        // Recall failed; the capture still went through on its own.
        assert!(s.paths().contains(&"/v1/sources/content".to_owned()));
    }
}

#[test]
fn capture_disabled_means_prepare_only() {
    let s = ready_server();
    let hook = Hook::new(&s.url()).env("POWERCONTEXT_DSH_CAPTURE_PROMPTS", "false");
    let out = hook.run(&hook.user_batch(PROMPT, 1, 1));
    assert!(context(&out).is_some());
    assert_eq!(s.paths(), ["/v1/scope-bindings/resolve", "/v1/context/prepare"]);
}

#[test]
fn missing_cwd_without_a_configured_scope_is_skipped_without_calls() {
    let s = ready_server();
    let hook = Hook::new(&s.url());
    for cwd in [Value::Null, json!("  ")] {
        let mut input = hook.user_batch(PROMPT, 1, 1);
        input["session"]["cwd"] = cwd;
        let out = hook.run(&input);
        assert_eq!(context(&out), None);
        let d = out.diagnostic("skipped").expect("skipped reported");
        assert_eq!(
            (d["event"].as_str(), d["detail"].as_str()),
            (Some("context_prepare"), Some("missing_session_cwd"))
        );
    }
    assert_eq!(s.request_count(), 0);
}

#[test]
fn an_over_long_configured_scope_is_sent_as_its_sha256_like_upstream() {
    // Upstream DSH's scope test vector: 300 × `x` ⇒ `sha256:` + SHA-256 hex of the UTF-8.
    let hashed = "sha256:0d4e2ca9e9cbced7a7a5380eb29e1a3783b9b6d0db72de36a1051038e1c1fbc7";
    let s = ready_server();
    let hook = Hook::new(&s.url()).env("POWERCONTEXT_DSH_SCOPE_ID", &"x".repeat(300));
    let out = hook.run(&hook.user_batch(PROMPT, 1, 1));
    assert_clean(&out);
    assert!(context(&out).is_some(), "{}", out.stderr);
    out.assert_stderr_free_of(&["xxxxxxxx", hashed]);
    assert!(!s.paths().contains(&"/v1/scope-bindings/resolve".to_owned()));
    assert_eq!(body_of(&s, "/v1/context/prepare")["scope_id"], hashed);
    assert_eq!(body_of(&s, "/v1/sources/content")["scope_id"], hashed);
}

#[test]
fn configured_scope_without_cwd_captures_metadata_without_cwd() {
    let s = ready_server();
    let hook = Hook::new(&s.url()).env("POWERCONTEXT_DSH_SCOPE_ID", "project:configured");
    let out = hook.run(&batch(&[message("user", PROMPT)], None, 4, 1));
    assert!(context(&out).is_some());
    assert!(
        !s.paths().contains(&"/v1/scope-bindings/resolve".to_owned()),
        "explicit scope: no resolve"
    );
    assert_eq!(
        body_of(&s, "/v1/context/prepare")["scope_id"],
        "project:configured"
    );
    let capture = body_of(&s, "/v1/sources/content");
    assert_eq!(
        capture["metadata"],
        json!({"origin": "dsh", "event": "user_prompt_submit", "session_id": SESSION, "turn_id": "4"})
    );
}

#[test]
fn the_shared_secret_filter_replaces_the_official_substring_markers() {
    // The official DSH markers (`sk-`, `api_key`, `BEGIN PRIVATE`) drop these ordinary prompts…
    for prompt in [
        "Use risk-based prioritization.",
        "Sort the task-list on the desk-top.",
        "Reword the api_key docs.",
    ] {
        let s = ready_server();
        let hook = Hook::new(&s.url());
        let out = hook.run(&hook.user_batch(prompt, 1, 1));
        assert!(out.stderr.is_empty(), "{prompt}: {}", out.stderr);
        assert_eq!(body_of(&s, "/v1/sources/content")["content"], prompt);
    }
    // …and keep these secrets; the shared filter persists none of them, but still recalls.
    // (Random values: a count such as `abcdefgh12345678` is filler, which the filter keeps.)
    for prompt in [
        "password = hunter2-PROMPTSECRET",
        "curl -H 'Authorization: Bearer q7Wm2xR9kL4vZt8p'",
        "my key is sk-Qz7pL2mW9xR4tK8vB3nC",
        "API_KEY=PROMPTSECRET",
    ] {
        let s = ready_server();
        let hook = Hook::new(&s.url());
        let out = hook.run(&hook.user_batch(prompt, 1, 1));
        assert_clean(&out);
        assert!(context(&out).is_some(), "{prompt}: recall still runs");
        assert!(
            out.diagnostic("capture_skipped_secret").is_some(),
            "{prompt}: {}",
            out.stderr
        );
        assert!(
            !s.paths().contains(&"/v1/sources/content".to_owned()),
            "{prompt} was captured"
        );
        // The recall query carries the prompt with its secret redacted.
        let query = body_of(&s, "/v1/context/prepare")["query"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(query.contains("[REDACTED:"), "{query}");
        for secret in [
            "PROMPTSECRET",
            "hunter2",
            "q7Wm2xR9kL4vZt8p",
            "sk-Qz7pL2mW9xR4tK8vB3nC",
        ] {
            assert!(!query.contains(secret), "{query}");
        }
    }
}

#[test]
fn redact_mode_captures_the_redacted_text_and_private_blocks_never_leave() {
    let s = ready_server();
    let hook = Hook::new(&s.url()).env("POWERCONTEXT_DSH_CAPTURE_SECRETS", "redact");
    let prompt = "rotate API_KEY=PROMPTSECRET9 <private>PRIVNOTE db7</private>tonight";
    let out = hook.run(&hook.user_batch(prompt, 1, 1));
    assert_clean(&out);
    assert_eq!(
        out.diagnostic("capture_redacted").unwrap()["detail"],
        "assignment"
    );
    let stored = "rotate API_KEY=[REDACTED:assignment] tonight";
    assert_eq!(body_of(&s, "/v1/sources/content")["content"], stored);
    assert_eq!(body_of(&s, "/v1/context/prepare")["query"], stored);
    out.assert_stderr_free_of(&["PROMPTSECRET", "PRIVNOTE"]);
}

#[test]
fn capture_is_bounded_at_200000_characters() {
    let s = ready_server();
    let hook = Hook::new(&s.url());
    let at_limit = "é".repeat(200_000);
    assert!(context(&hook.run(&hook.user_batch(&at_limit, 1, 1))).is_some());
    assert_eq!(
        body_of(&s, "/v1/sources/content")["content"]
            .as_str()
            .unwrap()
            .chars()
            .count(),
        200_000
    );
    let over = hook.run(&hook.user_batch(&format!("{at_limit}x"), 2, 1));
    assert!(over.diagnostic("capture_skipped_too_large").is_some());
    assert_eq!(s.count("/v1/sources/content"), 1);
    // The query is cut at the Server's 8,192-character limit, so recall survives.
    let query = s.last_json("/v1/context/prepare").unwrap();
    assert_eq!(query["query"].as_str().unwrap().chars().count(), 8192);
}

#[test]
fn base_url_and_bearer_rules_match_every_other_host() {
    let s = ready_server();
    let port = s.port();
    for (var, value) in [
        (
            "POWERCONTEXT_DSH_SERVER_URL",
            "http://example.com:8000".to_owned(),
        ),
        (
            "POWERCONTEXT_DSH_SERVER_URL",
            format!("http://user:pw@127.0.0.1:{port}"),
        ),
        (
            "POWERCONTEXT_DSH_SERVER_URL",
            format!("http://127.0.0.1:{port}/?x=1"),
        ),
        ("POWERCONTEXT_DSH_SERVER_URL", format!("ftp://127.0.0.1:{port}")),
        ("POWERCONTEXT_DSH_AUTHORIZATION", format!("Token {TOKEN}")),
        ("POWERCONTEXT_DSH_AUTHORIZATION", format!("Bearer {TOKEN} extra")),
    ] {
        let hook = Hook::new(&s.url()).env(var, &value);
        let out = hook.run(&hook.user_batch(PROMPT, 1, 1));
        assert_clean(&out);
        assert_eq!(context(&out), None);
        let d = out
            .diagnostic("config_invalid")
            .unwrap_or_else(|| panic!("{var}={value}: {}", out.stderr));
        assert_eq!(d["setting"], var);
        out.assert_stderr_free_of(&["pw@", "example.com"]);
    }
    assert_eq!(s.request_count(), 0, "an invalid setting sends nothing");
    // `https://` and a `/mcp` suffix on loopback are accepted, as for the other hosts.
    let hook = Hook::new(&format!("{}/mcp", s.url()));
    assert!(context(&hook.run(&hook.user_batch(PROMPT, 1, 1))).is_some());
}

#[test]
fn bad_input_and_unknown_commands_fail_open() {
    let s = ready_server();
    let hook = Hook::new(&s.url());
    let out = hook.run_args(&["pre-step"], b"not json");
    assert_eq!(context(&out), None);
    assert_eq!(out.diagnostic("skipped").unwrap()["detail"], "not_json");
    for args in [&[][..], &["post-step"][..], &["pre-step", "x"][..]] {
        let out = hook.run_args(args, b"{}");
        assert_eq!(context(&out), None);
        assert_eq!(out.diagnostic("skipped").unwrap()["detail"], "unknown_subcommand");
    }
    let lossy = br#"{"session":{"id":"s","cwd":"/tmp"},"turn":1,"step":1,"messages":[{"source":{"kind":"user"},"content":[{"type":"text","text":"a\ud800b"}]}]}"#;
    let out = hook.run_args(&["pre-step"], lossy);
    assert!(context(&out).is_some(), "recalled");
    assert!(out.diagnostic("capture_skipped_lossy").is_some());
    assert!(!s.paths().contains(&"/v1/sources/content".to_owned()));
    let version = hook.run_args(&["version"], b"");
    assert_eq!(
        version.stdout.trim(),
        concat!("powercontext-hook-dsh ", env!("CARGO_PKG_VERSION"))
    );
}

// ---- The plugin (installers/dsh/index.js), driven by a fake Cordis context in Node. ----

struct Shim {
    hook: Hook,
    plugin: TempDir,
}

impl Shim {
    fn new(hook: Hook, exe: &Path) -> Self {
        let plugin = tempfile::tempdir().unwrap();
        host_dsh::render_plugin(plugin.path(), exe);
        Self { hook, plugin }
    }

    fn run(&self, scenario: &Value) -> Value {
        let driver = repo_root().join("tests/fixtures/dsh/shim-driver.mjs");
        let node = host_dsh::node22_bin_dir().join("node");
        let out = Command::new(node)
            .arg(driver)
            .arg(self.plugin.path().join("index.js"))
            .arg(scenario.to_string())
            .env_clear()
            .envs(self.hook.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .output()
            .expect("run node");
        assert!(
            out.status.success(),
            "driver failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("driver output: {}", String::from_utf8_lossy(&out.stdout)))
    }

    fn scenario(&self, messages: &[Value], decision: &Value) -> Value {
        json!({
            "header": {"id": SESSION, "cwd": self.hook.project()},
            "turn": 1, "step": 1,
            "messages": messages,
            "decision": decision,
        })
    }
}

fn enter() -> Value {
    json!({"kind": "enter", "messages": [message("user", PROMPT)]})
}

fn warn_outcomes(r: &Value) -> Vec<String> {
    r["logs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["type"] == "warn")
        .map(|l| {
            serde_json::from_str::<Value>(l["text"].as_str().unwrap()).unwrap()["outcome"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[test]
fn plugin_appends_context_only_after_enter() {
    let s = ready_server();
    let shim = Shim::new(Hook::new(&s.url()), Path::new(DSH));
    let r = shim.run(&shim.scenario(&[message("user", PROMPT)], &enter()));
    assert_eq!(r["nextCalls"], 1);
    let messages = r["result"]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{r}");
    assert_eq!(messages[0], message("user", PROMPT));
    let added = &messages[1];
    assert_eq!(added["role"], "user");
    assert_eq!(
        added["source"],
        json!({"kind": "plugin", "plugin": "powercontext-dsh"})
    );
    let text = added["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("untrusted historical evidence") && text.ends_with(CONTENT),
        "{text}"
    );
    assert_eq!(r["appendedFrozen"], true);
    assert!(
        r["logs"].as_array().unwrap().is_empty(),
        "a ready run logs nothing: {r}"
    );

    // A rejected step stays rejected, untouched; the capture still happened (as upstream).
    let reject = json!({"kind": "reject"});
    let r = shim.run(&shim.scenario(&[message("user", "another prompt")], &reject));
    assert_eq!(
        (r["nextCalls"].as_u64(), r["same"].as_bool()),
        (Some(1), Some(true))
    );
}

#[test]
fn plugin_passes_empty_and_plugin_only_batches_through() {
    let s = ready_server();
    let shim = Shim::new(Hook::new(&s.url()), Path::new(DSH));
    for messages in [vec![], vec![message("plugin", "Plugin-provided context")]] {
        let r = shim.run(&shim.scenario(&messages, &enter()));
        assert_eq!(
            (r["nextCalls"].as_u64(), r["same"].as_bool()),
            (Some(1), Some(true)),
            "{r}"
        );
    }
    assert_eq!(s.request_count(), 0);
}

#[test]
fn plugin_returns_the_downstream_decision_when_the_server_is_down() {
    let shim = Shim::new(Hook::new(&closed_port_url()), Path::new(DSH));
    let r = shim.run(&shim.scenario(&[message("user", PROMPT)], &enter()));
    assert_eq!(
        (r["nextCalls"].as_u64(), r["same"].as_bool()),
        (Some(1), Some(true)),
        "{r}"
    );
    // Diagnostics reach the DSH logger as the executable wrote them.
    assert!(
        warn_outcomes(&r).contains(&"server_unavailable".to_owned()),
        "{r}"
    );
}

#[test]
fn plugin_returns_the_downstream_decision_when_wrapping_fails() {
    let s = ready_server();
    let shim = Shim::new(Hook::new(&s.url()), Path::new(DSH));
    let odd = json!({"kind": "enter", "messages": 42});
    let r = shim.run(&shim.scenario(&[message("user", PROMPT)], &odd));
    assert_eq!(
        (r["nextCalls"].as_u64(), r["same"].as_bool()),
        (Some(1), Some(true)),
        "{r}"
    );
}

#[test]
fn plugin_lets_a_downstream_error_through_after_one_next_call() {
    let s = ready_server();
    let shim = Shim::new(Hook::new(&s.url()), Path::new(DSH));
    let mut scenario = shim.scenario(&[message("user", PROMPT)], &enter());
    scenario["nextThrows"] = json!(true);
    let r = shim.run(&scenario);
    assert_eq!(
        (r["nextCalls"].as_u64(), r["threw"].as_str()),
        (Some(1), Some("downstream failure"))
    );
}

#[test]
fn plugin_survives_a_missing_executable() {
    let s = ready_server();
    let shim = Shim::new(
        Hook::new(&s.url()),
        Path::new("/nonexistent/powercontext-hook-dsh"),
    );
    let r = shim.run(&shim.scenario(&[message("user", PROMPT)], &enter()));
    assert_eq!(
        (r["nextCalls"].as_u64(), r["same"].as_bool()),
        (Some(1), Some(true)),
        "{r}"
    );
    assert_eq!(warn_outcomes(&r), ["spawn_failed"]);
}

fn hanging_executable(dir: &Path) -> PathBuf {
    let script = dir.join("hang.sh");
    fs::write(&script, "#!/bin/sh\nsleep 30\n").unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    script
}

#[test]
fn plugin_kills_a_hanging_executable_at_its_deadline_and_on_abort() {
    let s = ready_server();
    let dir = tempfile::tempdir().unwrap();
    let shim = Shim::new(Hook::new(&s.url()), &hanging_executable(dir.path()));
    let mut scenario = shim.scenario(&[message("user", PROMPT)], &enter());
    scenario["config"] = json!({"timeoutMs": 300});
    let r = shim.run(&scenario);
    assert_eq!(
        (r["nextCalls"].as_u64(), r["same"].as_bool()),
        (Some(1), Some(true)),
        "{r}"
    );
    assert!(r["elapsedMs"].as_u64().unwrap() < 2000, "{r}");
    assert_eq!(warn_outcomes(&r), ["timeout"]);

    // DSH's abort signal ends the wait as well, long before the plugin's own deadline.
    scenario["config"] = json!({"timeoutMs": 20000});
    scenario["abortAfterMs"] = json!(200);
    let r = shim.run(&scenario);
    assert_eq!(
        (r["nextCalls"].as_u64(), r["same"].as_bool()),
        (Some(1), Some(true)),
        "{r}"
    );
    assert!(r["elapsedMs"].as_u64().unwrap() < 2000, "{r}");
    assert_eq!(warn_outcomes(&r), ["aborted"]);
}

#[test]
fn the_env_override_names_the_executable() {
    let s = ready_server();
    let hook = Hook::new(&s.url()).env("POWERCONTEXT_DSH_HOOK_EXECUTABLE", DSH);
    let shim = Shim::new(hook, Path::new("/nonexistent/powercontext-hook-dsh"));
    let r = shim.run(&shim.scenario(&[message("user", PROMPT)], &enter()));
    assert_eq!(r["result"]["messages"].as_array().unwrap().len(), 2, "{r}");
}
