//! Exactly once across the two capture paths: a capture spooled while the Server was unavailable
//! and replayed later, followed by a live capture of the same prompt, is one Source — the replayed
//! request and the live one are byte-identical (same scope, `source_id`, content and metadata), so
//! the Server dedupes instead of answering `409 capture_conflict`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use powercontext_hooks_test_support::fault_server::{FaultServer, Reply};
use powercontext_hooks_test_support::hook::{HookSession, prompt_payload};
use powercontext_hooks_test_support::real_server::RealServer;
use serde_json::Value;

use crate::support::{CLAUDE, CLI, PI};

#[test]
fn a_capture_spooled_before_its_scope_resolved_replays_as_the_live_request() {
    replay_then_live(CLAUDE, "CLAUDE", false);
    replay_then_live(PI, "PI", false);
}

#[test]
fn a_capture_spooled_after_its_scope_resolved_replays_as_the_live_request() {
    replay_then_live(CLAUDE, "CLAUDE", true);
    replay_then_live(PI, "PI", true);
}

/// `capture_only`: the front fails only the capture (the scope resolved live); else everything.
fn replay_then_live(exe: &str, part: &str, capture_only: bool) {
    let server = RealServer::shared();
    let down = Arc::new(AtomicBool::new(true));
    // A loopback front that is "down" (503) until told otherwise, then forwards to the real Server.
    let proxy = {
        let down = Arc::clone(&down);
        FaultServer::start(move |req| {
            let failing = !capture_only || req.path_only() == "/v1/sources/content";
            if failing && down.load(Ordering::SeqCst) {
                return Reply::empty(503);
            }
            let body = req.json();
            let (status, value) = server.request(&req.method, &req.path, body.as_ref());
            Reply::json(status, &value)
        })
    };
    let session = HookSession::new(exe, part, &proxy.url(), "unused-token")
        .env(&format!("POWERCONTEXT_{part}_REQUEST_TIMEOUT_SECONDS"), "8")
        .env(&format!("POWERCONTEXT_{part}_HTTP_BUDGET_SECONDS"), "20");
    let cwd = tempfile::tempdir().unwrap();
    let prompt = format!("replay parity ({part} {capture_only}): the kestrel importer batches by tenant");
    let run = || {
        let payload = if part == "PI" {
            serde_json::json!({"prompt": prompt, "system_prompt": "Base instructions",
                               "cwd": cwd.path(), "session_id": "session-42",
                               "branch_roles": ["user", "assistant"]})
        } else {
            prompt_payload(&prompt, cwd.path())
        };
        let mut cmd = session.cmd().stdin_json(&payload);
        if part == "PI" {
            cmd = cmd.arg("before-agent-start");
        }
        let out = cmd.run();
        out.assert_fail_open();
        out
    };

    let first = run();
    assert!(
        first.diagnostic("capture_spooled").is_some(),
        "{part}: {}",
        first.stderr
    );

    down.store(false, Ordering::SeqCst);
    let flush = std::process::Command::new(CLI)
        .arg("flush")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", session.root())
        .env("POWERCONTEXT_HOOKS_STATE_DIR", session.state())
        .env(format!("POWERCONTEXT_{part}_SERVER_URL"), proxy.url())
        .env(
            format!("POWERCONTEXT_{part}_AUTHORIZATION"),
            "Bearer unused-token",
        )
        .output()
        .unwrap();
    // Delivered; a Pi capture also asks for a flush, which a Server without a model leaves pending.
    assert!(
        String::from_utf8_lossy(&flush.stdout).contains("delivered 1")
            || String::from_utf8_lossy(&flush.stderr).contains("delivered 1"),
        "{}{}",
        String::from_utf8_lossy(&flush.stdout),
        String::from_utf8_lossy(&flush.stderr)
    );

    let live = run();
    assert!(
        live.diagnostic("capture_conflict").is_none(),
        "{part}: {}",
        live.stderr
    );
    assert!(
        live.diagnostic("capture_spooled").is_none(),
        "{part}: {}",
        live.stderr
    );

    let captures: Vec<Value> = proxy
        .requests()
        .iter()
        .filter(|r| r.path_only() == "/v1/sources/content")
        .filter_map(|r| r.json())
        .collect();
    assert!(captures.len() >= 2, "replay and live capture: {captures:?}");
    let replayed = &captures[captures.len() - 2];
    let again = &captures[captures.len() - 1];
    assert_eq!(
        replayed, again,
        "{part}: the replay differs from the live request"
    );
    let sid = again["source_id"].as_str().unwrap();
    let scope = again["scope_id"].as_str().unwrap();
    let stored: Vec<Value> = server
        .sources(scope)
        .into_iter()
        .filter(|s| s["source_id"] == sid)
        .collect();
    assert_eq!(stored.len(), 1, "{stored:?}");
}
