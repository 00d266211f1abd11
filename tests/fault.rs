//! Fault injection through the real executables against a loopback server that misbehaves on
//! demand: every failure must end in exit 0, nothing but protocol on stdout, a content-free
//! diagnostic, and an exit within the budget.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use powercontext_hooks_test_support::fake_server::{
    CAPTURE, FLUSH, FakeServer, PREPARE, RESOLVE, accepted, empty, envelope, flushed, ready,
};
use powercontext_hooks_test_support::fault_server::{FaultServer, Reply, closed_port_url};
use powercontext_hooks_test_support::hook::{HookCmd, HookOutput, HookSession, prompt_payload};
use serde_json::{Value, json};

use crate::support::{CLAUDE, CODEX, PROMPT_HOSTS, release_exe};

const SCOPE: &str = "scp_secretscopeid0000000000";
const TOKEN: &str = "tok-SECRET-4242";
const PROMPT: &str = "How do we deploy the PROMPTSECRET service?";
const CONTENT: &str = "CONTENTSECRET: deploy with the blue-green script";

/// A well-behaved Server whose prepare answer is replaced by `prepare`.
fn server(prepare: impl Fn() -> Reply + Send + Sync + 'static) -> FakeServer {
    FakeServer::builder(SCOPE)
        .prepare(prepare)
        .answer(FLUSH, flushed(7))
        .start()
}

fn hook(exe: &str, part: &str, url: &str) -> HookCmd {
    let cwd = tempfile::tempdir().unwrap().keep();
    HookCmd::new(exe)
        .env(&format!("POWERCONTEXT_{part}_SERVER_URL"), url)
        .env(
            &format!("POWERCONTEXT_{part}_AUTHORIZATION"),
            format!("Bearer {TOKEN}"),
        )
        .stdin_json(&prompt_payload(PROMPT, &cwd))
}

/// Every failure path must keep these out of stderr.
fn assert_clean(out: &HookOutput) {
    out.assert_fail_open().assert_stderr_free_of(&[
        TOKEN,
        "PROMPTSECRET",
        SCOPE,
        "CONTENTSECRET",
        "BODYSECRET",
    ]);
}

fn prepare_outcome(out: &HookOutput) -> Value {
    out.diagnostics()
        .into_iter()
        .find(|d| d["event"] == "context_prepare")
        .unwrap_or_else(|| panic!("no prepare diagnostic: {}", out.stderr))
}

#[test]
fn ready_context_is_injected_for_both_hosts() {
    for (exe, part, prefix) in PROMPT_HOSTS {
        let s = server(|| Reply::json(200, &ready(CONTENT)));
        let out = hook(exe, part, &s.url()).run();
        assert_clean(&out);
        assert_eq!(out.context().as_deref(), Some(CONTENT));
        assert!(out.stderr.is_empty(), "a ready run is silent: {}", out.stderr);
        let reqs = s.requests();
        let prepare = reqs.iter().find(|r| r.path == "/v1/context/prepare").unwrap();
        assert_eq!(
            prepare.json().unwrap(),
            json!({"scope_id": SCOPE, "query": PROMPT, "max_bytes": 8000})
        );
        assert_eq!(
            prepare.header("authorization"),
            Some(format!("Bearer {TOKEN}").as_str())
        );
        assert_eq!(prepare.header("content-type"), Some("application/json"));
        let capture = s.last_json(CAPTURE).expect("capture sent");
        assert_eq!(capture["content"], PROMPT);
        assert!(capture["source_id"].as_str().unwrap().starts_with(prefix));
        assert_eq!(capture["scope_id"], SCOPE);
        let resolve = &s.bodies(RESOLVE)[0];
        assert_eq!(resolve["allow_default"], true);
        assert_eq!(resolve["binding_keys"][0]["kind"], "session");
        assert_eq!(resolve["binding_keys"][1]["kind"], "workspace");
    }
}

#[test]
fn http_failures_map_to_the_outcome_taxonomy() {
    let body_secret = json!({"error": {"code": "x", "message": "BODYSECRET", "details": null}});
    let cases: Vec<(u16, Value, &str)> = vec![
        (
            401,
            json!({"error": {"code": "unauthorized", "message": "BODYSECRET", "details": null}}),
            "authentication_failed",
        ),
        (
            403,
            json!({"error": {"code": "forbidden", "message": "BODYSECRET", "details": null}}),
            "forbidden",
        ),
        (404, json!({"detail": "Not Found"}), "version_mismatch"),
        (
            404,
            json!({"error": {"code": "scope_not_found", "message": "BODYSECRET", "details": null}}),
            "scope_not_found",
        ),
        (422, body_secret.clone(), "invalid_response"),
        (500, body_secret.clone(), "invalid_response"),
        (503, body_secret, "server_unavailable"),
        (
            200,
            json!({"schema": "powercontext.prepared-context.v2", "status": "ready", "content": "BODYSECRET", "content_bytes": 10}),
            "invalid_response",
        ),
        (200, empty(), "empty"),
    ];
    for (status, body, outcome) in cases {
        let s = server(move || Reply::json(status, &body));
        let out = hook(CLAUDE, "CLAUDE", &s.url()).run();
        assert_clean(&out);
        assert_eq!(out.context(), None);
        let d = prepare_outcome(&out);
        assert_eq!(d["outcome"], outcome, "status {status}: {}", out.stderr);
        assert_eq!(d["http_status"], status, "status {status}");
        assert_eq!(d["component"], "powercontext.claude_code.recall");
    }
}

#[test]
fn server_down_fails_open_fast() {
    for (exe, part, _) in PROMPT_HOSTS {
        let out = hook(exe, part, &closed_port_url()).run();
        assert_clean(&out);
        assert_eq!(out.context(), None);
        assert_eq!(out.diagnostics()[0]["outcome"], "server_unavailable");
        assert!(
            out.elapsed < Duration::from_secs(1) + crate::support::start_slack(),
            "refused connections fail at once: {:?}",
            out.elapsed
        );
    }
}

/// The process exits within its budget plus 100 ms whatever the Server does.
#[track_caller]
fn assert_within_budget(out: &HookOutput, budget: Duration) {
    assert!(
        out.elapsed <= budget + crate::support::start_slack(),
        "took {:?} for a budget of {budget:?}",
        out.elapsed
    );
}

#[test]
fn hanging_server_is_cut_off_at_the_budget() {
    for hang_before_read in [false, true] {
        let s = FaultServer::start(move |_| {
            if hang_before_read {
                Reply::HangBeforeRead
            } else {
                Reply::Hang
            }
        });
        let out = hook(CODEX, "CODEX", &s.url())
            .env("POWERCONTEXT_CODEX_HTTP_BUDGET_SECONDS", "1.5")
            .env("POWERCONTEXT_CODEX_REQUEST_TIMEOUT_SECONDS", "1")
            .run();
        assert_clean(&out);
        assert_within_budget(&out, Duration::from_millis(1500));
        assert_eq!(out.diagnostics()[0]["outcome"], "timeout", "{}", out.stderr);
    }
}

#[test]
fn a_hang_inside_recall_is_bounded_by_the_request_timeout() {
    let s = server(|| Reply::Hang);
    let out = hook(CLAUDE, "CLAUDE", &s.url())
        .env("POWERCONTEXT_CLAUDE_REQUEST_TIMEOUT_SECONDS", "0.3")
        .run();
    assert_clean(&out);
    assert_eq!(prepare_outcome(&out)["outcome"], "timeout");
    assert!(out.elapsed < Duration::from_secs(1), "{:?}", out.elapsed);
}

#[test]
fn slow_drip_body_is_cut_off() {
    let s = server(|| Reply::SlowBody {
        status: 200,
        body: serde_json::to_vec(&ready(CONTENT)).unwrap(),
        declared_length: true,
        chunk: 1,
        interval: Duration::from_millis(100),
    });
    let out = hook(CLAUDE, "CLAUDE", &s.url())
        .env("POWERCONTEXT_CLAUDE_REQUEST_TIMEOUT_SECONDS", "0.5")
        .env("POWERCONTEXT_CLAUDE_HTTP_BUDGET_SECONDS", "1")
        .run();
    assert_clean(&out);
    assert_eq!(out.context(), None);
    assert_eq!(prepare_outcome(&out)["outcome"], "timeout");
    assert_within_budget(&out, Duration::from_secs(1));
}

#[test]
fn redirects_are_never_followed_and_the_token_never_leaves() {
    let target = FaultServer::start(|_| Reply::json(200, &ready(CONTENT)));
    let location = format!("{}/v1/context/prepare", target.url());
    for status in [301, 302, 307, 308] {
        let location = location.clone();
        let s = server(move || Reply::Redirect {
            status,
            location: location.clone(),
        });
        let out = hook(CLAUDE, "CLAUDE", &s.url()).run();
        assert_clean(&out);
        assert_eq!(out.context(), None);
        let d = prepare_outcome(&out);
        assert_eq!(d["outcome"], "invalid_response");
        assert_eq!(d["http_status"], status);
        assert_eq!(d["detail"], "redirect");
    }
    assert_eq!(
        target.request_count(),
        0,
        "the redirect target must receive nothing"
    );
}

#[test]
#[allow(clippy::print_stderr, reason = "a skipped case says so in the test log")]
fn localhost_is_loopback_whatever_the_hosts_file_says() {
    // Plain http is allowed to `localhost` because it is loopback: the name must never be looked
    // up, or a hosts file (or DNS) answer elsewhere takes the token off the machine in clear text.
    // A private mount namespace gives the hook a hosts file that sends `localhost` to a remote
    // address (unreachable here) while the Server listens on 127.0.0.1.
    let dir = tempfile::tempdir().unwrap();
    let hosts = dir.path().join("hosts");
    std::fs::write(&hosts, "192.0.2.1 localhost\n").unwrap();
    let hosts = hosts.to_str().unwrap();
    let bind = "/usr/bin/mount --bind \"$0\" /etc/hosts && exec \"$@\"";
    let can_bind = std::process::Command::new("unshare")
        .args(["-m", "/bin/sh", "-c", bind, hosts, "/bin/true"])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !can_bind {
        eprintln!("skipped: needs `unshare -m` and `mount --bind` (run as root, as `make test` does)");
        return;
    }
    let s = server(|| Reply::json(200, &ready(CONTENT)));
    let cwd = tempfile::tempdir().unwrap();
    let out = HookCmd::new("/usr/bin/unshare")
        .args(["-m", "/bin/sh", "-c", bind, hosts, CLAUDE])
        .env(
            "POWERCONTEXT_CLAUDE_SERVER_URL",
            format!("http://localhost:{}", s.port()),
        )
        .env("POWERCONTEXT_CLAUDE_AUTHORIZATION", format!("Bearer {TOKEN}"))
        .stdin_json(&prompt_payload(PROMPT, cwd.path()))
        .run();
    assert_clean(&out);
    assert_eq!(out.context().as_deref(), Some(CONTENT), "{}", out.stderr);
}

#[test]
fn an_answer_that_repeats_a_key_is_rejected() {
    // Read last-wins, this is a ready context that still has exactly four distinct keys; read
    // first-wins, it is empty. Either way it is not the Server's exact schema.
    let body = format!(
        r#"{{"schema":"powercontext.prepared-context.v1","status":"empty","content":null,"content_bytes":0,"status":"ready","content":"{CONTENT}","content_bytes":{}}}"#,
        CONTENT.len()
    );
    let s = server(move || Reply::Status {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body: body.clone().into_bytes(),
    });
    let out = hook(CLAUDE, "CLAUDE", &s.url()).run();
    assert_clean(&out);
    assert_eq!(out.context(), None);
    let d = prepare_outcome(&out);
    assert_eq!(d["outcome"], "invalid_response");
    assert_eq!(d["detail"], "schema");
}

#[test]
fn oversized_bodies_are_rejected_with_and_without_length() {
    for declared_length in [true, false] {
        let s = server(move || Reply::Oversized {
            status: 200,
            size: 2 * 1024 * 1024,
            declared_length,
        });
        let out = hook(CLAUDE, "CLAUDE", &s.url()).run();
        assert_clean(&out);
        assert_eq!(out.context(), None);
        let d = prepare_outcome(&out);
        assert_eq!(d["outcome"], "invalid_response", "declared {declared_length}");
        assert_eq!(d["detail"], "body_too_large");
    }
}

#[test]
fn a_body_of_exactly_one_mebibyte_is_read() {
    // 1 MiB of JSON with padding inside the content would fail the byte check; instead pad with
    // whitespace after a valid object, which JSON allows.
    let mut body = serde_json::to_vec(&ready(CONTENT)).unwrap();
    body.resize(1024 * 1024, b' ');
    let s = server(move || Reply::Status {
        status: 200,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: body.clone(),
    });
    let out = hook(CLAUDE, "CLAUDE", &s.url()).run();
    assert_clean(&out);
    assert_eq!(out.context().as_deref(), Some(CONTENT));
}

#[test]
fn payload_problems_are_skipped() {
    let s = server(|| Reply::json(200, &ready(CONTENT)));
    let cwd = tempfile::tempdir().unwrap();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"not json".to_vec(), "not_json"),
        (
            serde_json::to_vec(&json!({"hook_event_name": "PreToolUse", "prompt": "x", "cwd": "/"})).unwrap(),
            "wrong_event",
        ),
        (
            serde_json::to_vec(&json!({"prompt": "x", "cwd": "/"})).unwrap(),
            "wrong_event",
        ),
        (
            serde_json::to_vec(&prompt_payload("   \n", cwd.path())).unwrap(),
            "blank_prompt",
        ),
        (
            serde_json::to_vec(&json!({"hook_event_name": "UserPromptSubmit", "prompt": "x"})).unwrap(),
            "missing_cwd",
        ),
        (vec![b' '; 9 * 1024 * 1024], "stdin_too_large"),
    ];
    for (stdin, detail) in cases {
        let out = hook(CLAUDE, "CLAUDE", &s.url()).stdin_bytes(stdin).run();
        assert_clean(&out);
        assert_eq!(out.context(), None);
        let d = out.diagnostics();
        assert_eq!(d.len(), 1, "{}", out.stderr);
        assert_eq!(d[0]["outcome"], "skipped");
        assert_eq!(d[0]["detail"], detail);
    }
    assert_eq!(s.request_count(), 0, "skipped payloads make no calls");
}

#[test]
fn boundary_events_are_silent_and_make_no_call() {
    let s = server(|| Reply::json(200, &ready(CONTENT)));
    for event in ["Stop", "SessionEnd", "session_end"] {
        let payload = json!({"hook_event_name": event, "session_id": "s", "cwd": "/"});
        let out = hook(CLAUDE, "CLAUDE", &s.url()).stdin_json(&payload).run();
        assert_clean(&out);
        assert_eq!(out.stdout, "");
        assert_eq!(out.stderr, "", "{event}");
    }
    assert_eq!(s.request_count(), 0);
}

#[test]
fn event_name_variants_and_the_older_user_prompt_field_are_accepted() {
    let s = server(|| Reply::json(200, &ready(CONTENT)));
    let cwd = tempfile::tempdir().unwrap();
    for payload in [
        json!({"hook_event_name": "user_prompt_submit", "prompt": PROMPT, "cwd": cwd.path()}),
        json!({"hook_event_name": "UserPromptSubmit", "user_prompt": PROMPT, "cwd": cwd.path(), "extra": {"x": 1}}),
    ] {
        let out = hook(CLAUDE, "CLAUDE", &s.url()).stdin_json(&payload).run();
        assert_clean(&out);
        assert_eq!(out.context().as_deref(), Some(CONTENT));
    }
}

#[test]
fn invalid_configuration_names_the_variable_and_makes_no_call() {
    let s = server(|| Reply::json(200, &ready(CONTENT)));
    let cases = [
        ("POWERCONTEXT_CLAUDE_AUTHORIZATION", "Basic tok-SECRET-4242"),
        ("POWERCONTEXT_CLAUDE_AUTHORIZATION", "Bearer tok SECRET"),
        ("POWERCONTEXT_CLAUDE_HTTP_BUDGET_SECONDS", "SECRET"),
        ("POWERCONTEXT_CLAUDE_CAPTURE_PROMPTS", "maybe"),
        ("POWERCONTEXT_CLAUDE_MAX_BYTES", "100"),
    ];
    for (name, value) in cases {
        let out = hook(CLAUDE, "CLAUDE", &s.url()).env(name, value).run();
        assert_clean(&out);
        assert!(!out.stderr.contains("SECRET"), "{}", out.stderr);
        let d = out.diagnostics();
        assert_eq!(d[0]["outcome"], "config_invalid");
        assert_eq!(d[0]["setting"], name);
    }
    let out = hook(CLAUDE, "CLAUDE", "http://memory.example:8000").run();
    assert_eq!(out.diagnostics()[0]["setting"], "POWERCONTEXT_CLAUDE_SERVER_URL");
    assert_eq!(s.request_count(), 0);
}

#[test]
fn the_config_file_is_read_and_unknown_keys_are_errors() {
    let s = server(|| Reply::json(200, &ready(CONTENT)));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("config.toml");
    std::fs::write(
        &file,
        format!(
            "server_url = \"{}\"\n[hosts.codex]\ncapture_prompts = false\n",
            s.url()
        ),
    )
    .unwrap();
    let out = hook(CODEX, "CODEX", "unused")
        .env_remove("POWERCONTEXT_CODEX_SERVER_URL")
        .env("POWERCONTEXT_HOOKS_CONFIG", file.to_string_lossy())
        .run();
    assert_clean(&out);
    assert_eq!(out.context().as_deref(), Some(CONTENT));
    assert!(s.count(CAPTURE) == 0, "capture disabled by the host table");

    std::fs::write(&file, "server_urll = \"http://127.0.0.1:1\"\n").unwrap();
    let out = hook(CODEX, "CODEX", "unused")
        .env_remove("POWERCONTEXT_CODEX_SERVER_URL")
        .env("POWERCONTEXT_HOOKS_CONFIG", file.to_string_lossy())
        .run();
    assert_clean(&out);
    let d = out.diagnostic("config_invalid").expect("config_invalid");
    assert!(d["setting"].as_str().unwrap().ends_with("config.toml"));
    // The key is named (with its line), the value never.
    assert_eq!(d["problem"], "unknown key `server_urll` (line 1)", "{d}");
    assert!(!out.stderr.contains("127.0.0.1:1"), "{}", out.stderr);
}

#[test]
fn recall_and_capture_are_independent() {
    // Capture fails: the context is still injected.
    let s = FakeServer::builder(SCOPE)
        .ready(CONTENT)
        .without(CAPTURE)
        .fallback(|_| Reply::Close)
        .start();
    let out = hook(CLAUDE, "CLAUDE", &s.url()).run();
    assert_clean(&out);
    assert_eq!(out.context().as_deref(), Some(CONTENT));
    assert!(
        out.diagnostics().iter().any(|d| d["event"] == "source_capture"),
        "{}",
        out.stderr
    );

    // Recall fails: the capture is still sent.
    let s = server(|| Reply::json(500, &json!({})));
    let out = hook(CODEX, "CODEX", &s.url()).run();
    assert_clean(&out);
    assert!(s.count(CAPTURE) > 0);
}

#[test]
fn the_answer_is_out_before_the_capture_is_sent_and_the_drainer_delivers_it_once_in_order() {
    // Each Source request stalls for 1.5 s. The hook must answer and exit long before that (the
    // capture is not on the prompt path); the detached drainer then delivers every prompt of the
    // session exactly once, in the order they were typed, though the second prompt's hook ran
    // while the first capture was still stalled.
    const STALL: Duration = Duration::from_millis(1500);
    let done: Arc<std::sync::Mutex<Vec<(String, Instant)>>> = Arc::default();
    let log = Arc::clone(&done);
    let s = FakeServer::builder(SCOPE)
        .ready(CONTENT)
        .route(CAPTURE, move |req| {
            std::thread::sleep(STALL);
            let body: Value = serde_json::from_slice(&req.body).unwrap_or_default();
            let content = body["content"].as_str().unwrap_or_default().to_owned();
            log.lock().unwrap().push((content, Instant::now()));
            Reply::json(202, &accepted(7))
        })
        .start();
    let cwd = tempfile::tempdir().unwrap();
    let session = HookSession::new(CLAUDE, "CLAUDE", &s.url(), TOKEN)
        .env("POWERCONTEXT_CLAUDE_REQUEST_TIMEOUT_SECONDS", "5");
    let prompts = ["first PROMPTSECRET prompt", "second PROMPTSECRET prompt"];
    let mut finished = Vec::new();
    for (n, prompt) in prompts.iter().enumerate() {
        let mut payload = prompt_payload(prompt, cwd.path());
        payload["session_id"] = json!("sess-order");
        payload["prompt_id"] = json!(format!("turn-{n}"));
        let out = session
            .cmd()
            .env_remove("POWERCONTEXT_HOOKS_NO_BACKGROUND_DRAIN")
            .stdin_json(&payload)
            .run();
        assert_clean(&out);
        assert_eq!(out.context().as_deref(), Some(CONTENT), "{}", out.stderr);
        assert!(
            out.elapsed < STALL,
            "the hook waited for its capture: {:?}",
            out.elapsed
        );
        finished.push(Instant::now());
    }
    // Both prompts answered before the first capture request had even completed.
    assert!(done.lock().unwrap().is_empty());
    let deadline = Instant::now() + Duration::from_secs(20);
    while done.lock().unwrap().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    // Give a duplicate the time to show up.
    std::thread::sleep(Duration::from_millis(500));
    let done = done.lock().unwrap().clone();
    let contents: Vec<&str> = done.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(contents, prompts, "delivered once each, in order");
    assert!(
        done[0].1 > finished[1],
        "both hooks were gone before the first capture landed"
    );
    let spooled = std::fs::read_dir(session.state().join("spool"))
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(spooled, 0, "the spool is empty once delivered");
}

#[test]
fn secret_prompts_are_recalled_but_never_captured() {
    for prompt in [
        "my password = hunter2, why does login fail?",
        "use key sk-live-abcdef123456 for the test",
    ] {
        let s = server(|| Reply::json(200, &ready(CONTENT)));
        let cwd = tempfile::tempdir().unwrap();
        let out = hook(CODEX, "CODEX", &s.url())
            .stdin_json(&prompt_payload(prompt, cwd.path()))
            .run();
        assert_clean(&out);
        assert!(
            !out.stderr.contains("hunter2") && !out.stderr.contains("sk-live"),
            "{}",
            out.stderr
        );
        assert_eq!(out.context().as_deref(), Some(CONTENT));
        assert_eq!(
            out.diagnostic("capture_skipped_secret").unwrap()["event"],
            "source_capture"
        );
        assert!(s.count(PREPARE) > 0);
        assert!(s.count(CAPTURE) == 0, "secret captured");
    }
}

#[test]
fn long_prompts_keep_recall_with_a_query_cut_at_8192_characters() {
    let s = server(|| Reply::json(200, &ready(CONTENT)));
    let prompt = format!("{}{}", "界".repeat(8191), "é🙂 tail");
    let cwd = tempfile::tempdir().unwrap();
    let out = hook(CLAUDE, "CLAUDE", &s.url())
        .stdin_json(&prompt_payload(&prompt, cwd.path()))
        .run();
    assert_clean(&out);
    let q = s.bodies(PREPARE)[0]["query"].as_str().unwrap().to_owned();
    assert_eq!(q.chars().count(), 8192);
    assert_eq!(q, format!("{}é", "界".repeat(8191)));
    let captured = &s.bodies(CAPTURE)[0];
    assert_eq!(captured["content"], prompt, "the capture keeps the whole prompt");
}

#[test]
fn claude_code_never_asks_for_more_than_its_host_can_show() {
    let s = server(|| Reply::json(200, &ready(CONTENT)));
    let out = hook(CLAUDE, "CLAUDE", &s.url())
        .env("POWERCONTEXT_CLAUDE_MAX_BYTES", "32768")
        .run();
    assert_clean(&out);
    assert_eq!(out.context().as_deref(), Some(CONTENT));
    let max = s.bodies(PREPARE)[0]["max_bytes"].as_u64().unwrap();
    assert!(max < 10_000, "asked for {max} bytes");
    assert_eq!(
        out.diagnostic("max_bytes_clamped").unwrap()["setting"],
        "env `POWERCONTEXT_CLAUDE_MAX_BYTES`"
    );
    // Codex has no such limit.
    let s = server(|| Reply::json(200, &ready(CONTENT)));
    let out = hook(CODEX, "CODEX", &s.url())
        .env("POWERCONTEXT_CODEX_MAX_BYTES", "32768")
        .run();
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    let max = s.bodies(PREPARE)[0]["max_bytes"].as_u64().unwrap();
    assert_eq!(max, 32768);
}

#[test]
fn undecodable_stdin_is_recalled_but_never_captured() {
    let s = server(|| Reply::json(200, &ready(CONTENT)));
    let cwd = tempfile::tempdir().unwrap();
    let mut bytes = serde_json::to_vec(&prompt_payload("deploy XYZ now", cwd.path())).unwrap();
    let at = bytes.windows(3).position(|w| w == b"XYZ").unwrap();
    bytes[at] = 0xff; // invalid UTF-8 inside the prompt
    let surrogate = serde_json::to_string(&prompt_payload("deploy now", cwd.path()))
        .unwrap()
        .replace("deploy now", "deploy \\ud800 now")
        .into_bytes();
    for stdin in [bytes, surrogate] {
        let out = hook(CLAUDE, "CLAUDE", &s.url()).stdin_bytes(stdin).run();
        assert_clean(&out);
        assert_eq!(out.context().as_deref(), Some(CONTENT));
        assert!(
            out.diagnostic("capture_skipped_lossy").is_some(),
            "{}",
            out.stderr
        );
    }
    assert!(s.count(CAPTURE) == 0);
}

#[test]
fn an_old_server_without_the_resolve_route_gets_the_client_derived_scope() {
    let s = FakeServer::builder(SCOPE).ready(CONTENT).without(RESOLVE).start();
    let out = hook(CODEX, "CODEX", &s.url()).run();
    assert_clean(&out);
    assert_eq!(out.context().as_deref(), Some(CONTENT));
    let scope = s.bodies(PREPARE)[0]["scope_id"].as_str().unwrap().to_owned();
    assert!(
        scope.starts_with("local:") || scope.starts_with("git:"),
        "{scope}"
    );
}

#[test]
fn an_explicit_scope_skips_resolution() {
    let s = server(|| Reply::json(200, &ready(CONTENT)));
    let out = hook(CODEX, "CODEX", &s.url())
        .env("POWERCONTEXT_CODEX_SCOPE_ID", "scp_explicit")
        .run();
    assert_clean(&out);
    assert!(s.count(RESOLVE) == 0);
    assert_eq!(s.bodies(PREPARE)[0]["scope_id"], "scp_explicit");
}

#[test]
fn an_unwritable_home_does_not_stop_injection() {
    let s = server(|| Reply::json(200, &ready(CONTENT)));
    let out = hook(CLAUDE, "CLAUDE", &s.url())
        .env("HOME", "/proc/nonexistent-home")
        .env("XDG_STATE_HOME", "/proc/nonexistent-home/state")
        .env("POWERCONTEXT_HOOKS_STATE_DIR", "/proc/nonexistent-home/state")
        .run();
    assert_clean(&out);
    assert_eq!(out.context().as_deref(), Some(CONTENT));
}

#[test]
fn a_panic_in_the_release_binary_fails_open() {
    for name in ["powercontext-hook-claude-code", "powercontext-hook-codex"] {
        let s = server(|| Reply::json(200, &ready(CONTENT)));
        let out = hook(release_exe(name).to_str().unwrap(), "CLAUDE", &s.url())
            .env("POWERCONTEXT_HOOKS_FAULT", "panic")
            .run();
        assert!(out.status.success(), "{name}: {:?}", out.status);
        assert_eq!(out.stdout, "", "{name}");
        assert_eq!(out.outcomes(), vec!["internal_error"], "{name}: {}", out.stderr);
        assert!(
            !out.stderr.contains("fault injection"),
            "the panic message is not echoed"
        );
    }
}

#[test]
fn flush_on_capture_reports_a_server_without_a_model() {
    let s = FakeServer::builder(SCOPE)
        .empty()
        .answer(FLUSH, envelope(503, "inference_unavailable"))
        .start();
    let out = hook(CODEX, "CODEX", &s.url())
        .env("POWERCONTEXT_CODEX_FLUSH_ON_CAPTURE", "true")
        .run();
    assert_clean(&out);
    assert_eq!(
        out.diagnostic("inference_unavailable").unwrap()["event"],
        "memory_flush"
    );
    let flushes = s.count(FLUSH);
    assert_eq!(flushes, 1, "a 503 is reported, not retried");
}

#[test]
fn flush_on_capture_stops_once_the_cursor_reaches_the_position() {
    let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let c = Arc::clone(&calls);
    let s = FakeServer::builder(SCOPE)
        .empty()
        .capture_position(3)
        .route(FLUSH, move |_| {
            let n = c.fetch_add(1, Ordering::SeqCst);
            flushed(if n == 0 { 1 } else { 3 })
        })
        .start();
    let out = hook(CODEX, "CODEX", &s.url())
        .env("POWERCONTEXT_CODEX_FLUSH_ON_CAPTURE", "1")
        .run();
    assert_clean(&out);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(out.diagnostic("flush_incomplete").is_none());
}

#[test]
fn the_scope_cache_spares_resolve_until_a_session_start_or_the_window_ends() {
    let s = server(|| Reply::json(200, &ready(CONTENT)));
    let resolves = || s.count(RESOLVE);
    let cwd = tempfile::tempdir().unwrap();
    let session = HookSession::new(CLAUDE, "CLAUDE", &s.url(), TOKEN)
        .env("POWERCONTEXT_CLAUDE_CAPTURE_PROMPTS", "0")
        .env("POWERCONTEXT_HOOKS_SCOPE_CACHE_SECONDS", "2");
    let prompt = |n: usize| {
        let mut p = prompt_payload(PROMPT, cwd.path());
        p["prompt_id"] = json!(format!("p{n}"));
        let out = session.cmd().stdin_json(&p).run();
        assert_clean(&out);
        assert_eq!(out.context().as_deref(), Some(CONTENT), "{}", out.stderr);
    };
    let start = |bootstrap: &str| {
        let p = json!({"hook_event_name": "SessionStart", "session_id": "session-test-1",
                       "cwd": cwd.path(), "source": "resume"});
        let out = session
            .cmd()
            .env("POWERCONTEXT_CLAUDE_BOOTSTRAP", bootstrap)
            .stdin_json(&p)
            .run();
        assert_clean(&out);
    };
    prompt(1);
    assert_eq!(resolves(), 1);
    prompt(2);
    assert_eq!(resolves(), 1, "within the window the cached scope is used");
    // SessionStart with bootstrap off asks nothing, but the next prompt resolves again.
    start("0");
    assert_eq!(resolves(), 1);
    prompt(3);
    assert_eq!(resolves(), 2);
    // SessionStart with bootstrap on resolves afresh, and the next prompt uses that answer.
    start("1");
    assert_eq!(resolves(), 3);
    prompt(4);
    assert_eq!(resolves(), 3);
    // Past the window, a prompt resolves again.
    std::thread::sleep(Duration::from_millis(2100));
    prompt(5);
    assert_eq!(resolves(), 4);
    // The cache file names neither the scope nor the session, and diagnostics never the scope.
    for e in std::fs::read_dir(session.state().join("scopes")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        assert!(
            !name.contains("scp_") && !name.contains("session-test-1"),
            "{name}"
        );
    }
}

#[test]
fn a_prepare_refused_once_by_a_first_write_race_is_asked_again() {
    // The Server answers 409 to one of two concurrent first requests of a fresh scope; the next
    // ask succeeds. A second 409 in a row, or a 409 that names another conflict, is an answer.
    let cases = [
        ("subject_scope_conflict", 1, true, 2),
        ("idempotency_conflict", 2, false, 2),
        ("generation_conflict", 1, false, 1),
    ];
    for (code, conflicts, recalled, asks) in cases {
        let asked = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let seen = Arc::clone(&asked);
        let s = server(move || {
            if seen.fetch_add(1, Ordering::SeqCst) < conflicts {
                Reply::json(409, &json!({"error": {"code": code}}))
            } else {
                Reply::json(200, &ready(CONTENT))
            }
        });
        let out = hook(CLAUDE, "CLAUDE", &s.url()).run();
        assert_clean(&out);
        assert_eq!(out.context().is_some(), recalled, "{code}: {}", out.stderr);
        assert_eq!(asked.load(Ordering::SeqCst), asks, "{code}");
    }
}
