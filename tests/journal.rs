//! The run journal through the real executables: one record per hook run for every outcome class
//! (success, each failure, skips, the panic hook and the watchdog), concurrent writers without a
//! lock, no content ever (the marked prompt, scope, context and token never appear), and the
//! `status` figures computed from a known journal.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use powercontext_hooks_test_support::fake_server::{FakeServer, empty, envelope, ready};
use powercontext_hooks_test_support::fault_server::{Reply, closed_port_url};
use powercontext_hooks_test_support::hook::HookCmd;
use serde_json::{Value, json};

use crate::support::{CLAUDE, CODEX, DSH, HERMES, OPENCODE, PI, run_cli};

const PROMPT: &str = "How do we deploy the JOURNALPROMPTMARK service?";
const SCOPE: &str = "scp_JOURNALSCOPEMARK0000000";
const CONTENT: &str = "JOURNALCONTEXTMARK: deploy with the blue-green script";
const TOKEN: &str = "tok-JOURNALTOKENMARK-77";

fn server(prepare: impl Fn() -> Reply + Send + Sync + 'static) -> FakeServer {
    FakeServer::with_prepare(SCOPE, prepare)
}

fn run(exe: &str, part: &str, url: &str, state: &Path, prompt: &str, extra: &[(&str, &str)]) {
    let cwd = tempfile::tempdir().unwrap();
    let mut cmd = HookCmd::new(exe)
        .env(&format!("POWERCONTEXT_{part}_SERVER_URL"), url)
        .env(
            &format!("POWERCONTEXT_{part}_AUTHORIZATION"),
            format!("Bearer {TOKEN}"),
        )
        .env("POWERCONTEXT_HOOKS_STATE_DIR", state.to_string_lossy())
        .stdin_json(&json!({"hook_event_name": "UserPromptSubmit", "cwd": cwd.path(),
                            "session_id": "s-journal", "prompt_id": "p-1", "prompt": prompt}));
    for (k, v) in extra {
        cmd = cmd.env(k, *v);
    }
    cmd.run().assert_fail_open();
}

fn records(state: &Path, host: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for name in [format!("journal-{host}.1.jsonl"), format!("journal-{host}.jsonl")] {
        if let Ok(text) = std::fs::read_to_string(state.join(name)) {
            out.extend(text.lines().map(|l| serde_json::from_str::<Value>(l).expect(l)));
        }
    }
    out
}

fn last(state: &Path, host: &str) -> Value {
    records(state, host).pop().expect("a journal record")
}

fn stages(r: &Value) -> Vec<String> {
    r["stages"]
        .as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_owned()).collect())
        .unwrap_or_default()
}

#[test]
fn journal_one_record_per_run_for_every_outcome_class_and_never_content() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let quick = [("POWERCONTEXT_CLAUDE_REQUEST_TIMEOUT_SECONDS", "0.3")];

    // Success: context injected, capture delivered.
    let s = server(|| Reply::json(200, &ready(CONTENT)));
    run(CLAUDE, "CLAUDE", &s.url(), &state, PROMPT, &[]);
    let r = last(&state, "claude-code");
    assert_eq!(r["event"], "UserPromptSubmit");
    assert_eq!(r["outcome"], "ready", "{r}");
    assert_eq!(r["injected"], CONTENT.len(), "{r}");
    assert_eq!(r["capture"], "delivered", "{r}");
    assert!(stages(&r).contains(&"context_prepare:ready".to_owned()), "{r}");
    assert!(r["ms"].as_u64().is_some() && r["at"].as_u64().unwrap() > 0);

    // Each failure class the Server can cause, named with the stage it happened in.
    let cases: Vec<(Reply, &str)> = vec![
        (Reply::json(200, &empty()), "empty"),
        (envelope(401, "unauthorized"), "authentication_failed"),
        (envelope(403, "forbidden"), "forbidden"),
        (
            Reply::json(404, &json!({"detail": "Not Found"})),
            "version_mismatch",
        ),
        (Reply::text(200, "not json"), "invalid_response"),
        (envelope(503, "unavailable"), "server_unavailable"),
        (Reply::Hang, "timeout"),
    ];
    for (reply, want) in cases {
        let reply = std::sync::Mutex::new(Some(reply));
        let s = server(move || reply.lock().unwrap().take().unwrap_or(Reply::Close));
        run(CLAUDE, "CLAUDE", &s.url(), &state, PROMPT, &quick);
        let r = last(&state, "claude-code");
        assert_eq!(r["outcome"], want, "{r}");
        assert_eq!(r["injected"], Value::Null, "{r}");
        assert!(stages(&r).contains(&format!("context_prepare:{want}")), "{r}");
    }

    // The Server is gone: the capture is spooled.
    run(CLAUDE, "CLAUDE", &closed_port_url(), &state, PROMPT, &[]);
    let r = last(&state, "claude-code");
    assert_eq!(r["outcome"], "server_unavailable", "{r}");
    assert_eq!(r["capture"], "spooled", "{r}");

    // A setting is invalid.
    run(CLAUDE, "CLAUDE", "not a url", &state, PROMPT, &[]);
    let r = last(&state, "claude-code");
    assert_eq!(r["outcome"], "config_invalid", "{r}");
    assert_eq!(stages(&r), ["config:config_invalid"]);

    // Skips: a blank prompt, a secret-like prompt (capture skipped with its rule), a boundary.
    let s = server(|| Reply::json(200, &ready(CONTENT)));
    run(CLAUDE, "CLAUDE", &s.url(), &state, "   ", &[]);
    let r = last(&state, "claude-code");
    assert_eq!(r["outcome"], "skipped", "{r}");
    assert_eq!(stages(&r), ["payload:skipped"]);
    run(
        CLAUDE,
        "CLAUDE",
        &s.url(),
        &state,
        "my key is sk-JOURNALKEYabcdefghijklmnop",
        &[],
    );
    let r = last(&state, "claude-code");
    assert_eq!(r["capture"], "skipped", "{r}");
    assert!(r["rule"].as_str().is_some_and(|w| !w.is_empty()), "{r}");
    assert_eq!(r["outcome"], "ready", "{r}");
    let out = HookCmd::new(CLAUDE)
        .env("POWERCONTEXT_HOOKS_STATE_DIR", state.to_string_lossy())
        .stdin_json(&json!({"hook_event_name": "Stop", "session_id": "s"}))
        .run();
    out.assert_fail_open();
    let r = last(&state, "claude-code");
    assert_eq!(
        (r["event"].as_str(), r["outcome"].as_str()),
        (Some("Stop"), Some("skipped"))
    );

    // A panic fails open and is journaled.
    run(
        CLAUDE,
        "CLAUDE",
        &s.url(),
        &state,
        PROMPT,
        &[("POWERCONTEXT_HOOKS_FAULT", "panic")],
    );
    let r = last(&state, "claude-code");
    assert_eq!(r["outcome"], "internal_error", "{r}");

    // The watchdog: a host that never closes stdin; the record says the run timed out.
    let mut child = Command::new(CLAUDE)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("POWERCONTEXT_HOOKS_STATE_DIR", &state)
        .env("POWERCONTEXT_CLAUDE_HTTP_BUDGET_SECONDS", "0.3")
        .env("POWERCONTEXT_HOOKS_NO_BACKGROUND_DRAIN", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"{\"hook_event_name\":").unwrap();
    assert!(child.wait().unwrap().success());
    drop(stdin);
    let r = last(&state, "claude-code");
    assert_eq!(r["outcome"], "timeout", "{r}");
    assert!(r["ms"].as_u64().unwrap() >= 300, "{r}");

    // Another host writes its own file.
    run(CODEX, "CODEX", &closed_port_url(), &state, PROMPT, &[]);
    assert_eq!(records(&state, "codex").len(), 1);
    assert_eq!(records(&state, "claude-code").len(), 15, "one record per run");

    // Nothing but closed words and numbers: no prompt, scope, context, token or path.
    for name in ["journal-claude-code.jsonl", "journal-codex.jsonl"] {
        let path = state.join(name);
        let text = std::fs::read_to_string(&path).unwrap();
        for needle in [
            "JOURNALPROMPTMARK",
            "JOURNALSCOPEMARK",
            "JOURNALCONTEXTMARK",
            "JOURNALTOKENMARK",
            "JOURNALKEY",
            "s-journal",
            "/tmp",
        ] {
            assert!(!text.contains(needle), "{needle} in {name}:\n{text}");
        }
        let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path).unwrap().permissions());
        assert_eq!(mode & 0o777, 0o600);
    }
    let status = run_cli(
        &["status", "--json"],
        &[("POWERCONTEXT_HOOKS_STATE_DIR", &state.to_string_lossy())],
    );
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(!text.contains("MARK"), "{text}");
}

#[test]
fn journal_concurrent_writers_lose_no_record() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let children: Vec<_> = (0..32)
        .map(|i| {
            let mut c = Command::new(CLAUDE)
                .env_clear()
                .env("PATH", "/usr/bin:/bin")
                .env("POWERCONTEXT_HOOKS_STATE_DIR", &state)
                .env("POWERCONTEXT_CLAUDE_SERVER_URL", closed_port_url())
                .env("POWERCONTEXT_HOOKS_NO_BACKGROUND_DRAIN", "1")
                .stdin(Stdio::piped())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            // Half are skipped at once, half go to the (closed) Server and spool.
            let prompt = if i % 2 == 0 { " " } else { "concurrent prompt" };
            let payload = json!({"hook_event_name": "UserPromptSubmit", "cwd": "/", "prompt": prompt});
            c.stdin
                .take()
                .unwrap()
                .write_all(payload.to_string().as_bytes())
                .unwrap();
            c
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let all = records(&state, "claude-code");
    assert_eq!(all.len(), 32);
    let skipped = all.iter().filter(|r| r["outcome"] == "skipped").count();
    assert_eq!(skipped, 16);
    assert_eq!(all.len() - skipped, 16);
}

#[test]
fn status_figures_from_a_known_journal() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let hour = 3_600_000;
    let rec = |ago: u64, event: &str, outcome: &str, ms: u64, injected: u64, capture: Option<&str>| {
        let mut v =
            json!({"v": 1, "at": now - ago, "host": "codex", "event": event, "outcome": outcome, "ms": ms});
        if injected > 0 {
            v["injected"] = json!(injected);
        }
        if let Some(c) = capture {
            v["capture"] = json!(c);
        }
        v.to_string()
    };
    let lines = [
        // Outside the 24 h window: only "retained" sees it.
        rec(
            30 * hour,
            "UserPromptSubmit",
            "ready",
            900,
            5000,
            Some("delivered"),
        ),
        rec(3 * hour, "UserPromptSubmit", "ready", 10, 1000, Some("delivered")),
        rec(2 * hour, "UserPromptSubmit", "empty", 20, 0, Some("delivered")),
        rec(
            hour,
            "UserPromptSubmit",
            "server_unavailable",
            40,
            0,
            Some("spooled"),
        ),
        rec(hour / 2, "UserPromptSubmit", "ready", 30, 2500, Some("skipped")),
        rec(hour / 4, "Stop", "skipped", 1, 0, None),
        "{\"v\":1,\"at\":12,\"host\":\"co".to_owned(),
    ];
    std::fs::write(state.join("journal-codex.jsonl"), lines.join("\n") + "\n").unwrap();
    let out = run_cli(
        &["status", "--json"],
        &[("POWERCONTEXT_HOOKS_STATE_DIR", &state.to_string_lossy())],
    );
    assert!(out.status.success());
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let hooks = v["hooks"].as_array().unwrap();
    assert_eq!(hooks.len(), 2, "{v}");
    let ups = hooks.iter().find(|h| h["event"] == "UserPromptSubmit").unwrap();
    assert_eq!(ups["host"], "codex");
    assert_eq!(ups["retained"], 5);
    assert_eq!(ups["runs_24h"], 4);
    assert_eq!(ups["failures_24h"], 1);
    assert_eq!(ups["last_outcome"], "ready");
    assert_eq!(ups["last_fired_age_seconds"], 1800);
    assert_eq!(ups["p50_ms"], 20);
    assert_eq!(ups["p95_ms"], 40);
    assert_eq!(ups["injected_bytes_24h"], 3500);
    assert_eq!(ups["captures_delivered_24h"], 2);
    assert_eq!(ups["captures_spooled_24h"], 1);
    assert_eq!(ups["captures_skipped_24h"], 1);
    let stop = hooks.iter().find(|h| h["event"] == "Stop").unwrap();
    assert_eq!(
        (stop["runs_24h"].as_u64(), stop["failures_24h"].as_u64()),
        (Some(1), Some(0))
    );

    // The text view says the same, per host and event.
    let out = run_cli(
        &["status"],
        &[("POWERCONTEXT_HOOKS_STATE_DIR", &state.to_string_lossy())],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("codex UserPromptSubmit: last fired 30 min ago (ready); 4 run(s), 1 failed; p50 20 ms, p95 40 ms; 3.5 KB injected; captures 2 delivered or queued, 1 spooled, 1 skipped"),
        "{text}"
    );
}

#[test]
fn journal_names_each_hosts_events() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let st = state.to_string_lossy().into_owned();
    let down = closed_port_url();
    let runs: [(&str, &[&str], Value, &str, &str); 7] = [
        (
            OPENCODE,
            &["inject"],
            json!({"messages": []}),
            "opencode",
            "messages.transform",
        ),
        (
            OPENCODE,
            &["forget"],
            json!({"session_id": "s"}),
            "opencode",
            "session.deleted",
        ),
        (PI, &["flush"], json!({"event": "agent_end"}), "pi", "boundary"),
        (
            PI,
            &["before-agent-start"],
            json!({"prompt": PROMPT, "system_prompt": "base", "cwd": "/", "session_id": "s", "branch_roles": ["user"]}),
            "pi",
            "before_agent_start",
        ),
        (DSH, &["pre-step"], json!({}), "dsh", "agent/pre-step"),
        (
            HERMES,
            &[],
            json!({"hook_event_name": "on_session_end", "session_id": "s", "cwd": "/", "extra": {}}),
            "hermes",
            "on_session_end",
        ),
        (
            HERMES,
            &[],
            json!({"hook_event_name": "pre_llm_call", "session_id": "s", "cwd": "/",
                   "extra": {"user_message": PROMPT, "turn_id": "t1"}}),
            "hermes",
            "pre_llm_call",
        ),
    ];
    for (exe, args, payload, host, event) in runs {
        let out = HookCmd::new(exe)
            .args(args.iter().copied())
            .env("POWERCONTEXT_HOOKS_STATE_DIR", st.clone())
            .env(
                &format!("POWERCONTEXT_{}_SERVER_URL", host.to_ascii_uppercase()),
                down.clone(),
            )
            .stdin_json(&payload)
            .run();
        out.assert_fail_open();
        let r = last(&state, host);
        assert_eq!(r["event"], event, "{r}");
        assert_eq!(r["host"], host, "{r}");
    }
    // Pi's prompt went to a closed port: its capture was spooled, and the journal says so.
    let pi = records(&state, "pi");
    assert_eq!(pi.len(), 2);
    assert_eq!(pi[1]["outcome"], "server_unavailable", "{}", pi[1]);
    assert_eq!(pi[1]["capture"], "spooled", "{}", pi[1]);
    assert!(
        !std::fs::read_to_string(state.join("journal-pi.jsonl"))
            .unwrap()
            .contains("JOURNALPROMPTMARK")
    );
}

/// Words in a journal are closed values only when our hooks wrote them: a record planted with
/// terminal escape sequences reaches neither `statusline` nor `status` raw.
#[test]
fn statusline_and_status_escape_a_planted_journals_control_characters() {
    use std::os::unix::fs::PermissionsExt;

    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o700)).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let planted = json!({"v": 1, "at": now - 1000, "host": "claude-code", "event": "UserPromptSubmit",
        "outcome": "\u{1b}]0;owned\u{7}\u{1b}[2J", "ms": 5});
    let journal = state.join("journal-claude-code.jsonl");
    std::fs::write(&journal, format!("{planted}\n")).unwrap();
    std::fs::set_permissions(&journal, std::fs::Permissions::from_mode(0o600)).unwrap();
    for args in [&["statusline"][..], &["status"][..]] {
        let out = run_cli(
            args,
            &[("POWERCONTEXT_HOOKS_STATE_DIR", &state.to_string_lossy())],
        );
        assert!(out.status.success(), "{args:?}");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{args:?} printed a control character: {text:?}"
        );
        assert!(text.contains(r"\u{1b}]0;owned"), "{args:?}: {text:?}");
    }
}

#[test]
fn a_capture_handed_to_the_drainer_is_journaled_as_queued_and_then_delivered() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let s = server(|| Reply::json(200, &ready(CONTENT)));
    run(
        CLAUDE,
        "CLAUDE",
        &s.url(),
        &state,
        PROMPT,
        &[("POWERCONTEXT_HOOKS_NO_BACKGROUND_DRAIN", "0")],
    );
    let r = last(&state, "claude-code");
    assert_eq!(r["outcome"], "ready", "{r}");
    assert_eq!(r["capture"], "queued", "{r}");
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let delivered = || s.requests().iter().any(|q| q.path == "/v1/sources/content");
    while !delivered() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(delivered(), "the drainer delivered it");
    let text = std::fs::read_to_string(state.join("journal-claude-code.jsonl")).unwrap();
    for mark in [
        "JOURNALPROMPTMARK",
        "JOURNALSCOPEMARK",
        "JOURNALCONTEXTMARK",
        "JOURNALTOKENMARK",
    ] {
        assert!(!text.contains(mark), "{mark} in the journal");
    }
}
