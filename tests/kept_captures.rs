//! Captures the Server could not take for a reason that can pass (a rejected token the user can
//! fix, a 409 that is not the Source's own conflict, a binding that does not resolve yet) wait in
//! the spool instead of being dropped, and never hold back the entries that can go.

use std::path::{Path, PathBuf};

use powercontext_hooks_test_support::fake_server::{CAPTURE, FakeServer, accepted, empty, envelope};
use powercontext_hooks_test_support::fault_server::{FaultServer, Reply};
use powercontext_hooks_test_support::hook::HookCmd;
use serde_json::json;

use crate::support::{CLAUDE, run_cli};

const SCOPE: &str = "scp_KEPTSCOPE00000000000000";

fn spool_entries(state: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(state.join("spool"))
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default()
}

/// A Server whose recall works and which answers everything else (the capture) with `refusal`.
fn refusing_captures(refusal: Reply) -> FakeServer {
    FakeServer::builder(SCOPE)
        .empty()
        .without(CAPTURE)
        .fallback(move |_| refusal.clone())
        .start()
}

fn run(server: &FaultServer, state: &Path) {
    let cwd = tempfile::tempdir().unwrap();
    HookCmd::new(CLAUDE)
        .env("POWERCONTEXT_CLAUDE_SERVER_URL", server.url())
        .env("POWERCONTEXT_CLAUDE_AUTHORIZATION", "Bearer tok-rotated-away")
        .env("POWERCONTEXT_CLAUDE_BOOTSTRAP", "0")
        .env("POWERCONTEXT_HOOKS_STATE_DIR", state.to_string_lossy())
        .env("POWERCONTEXT_HOOKS_NO_BACKGROUND_DRAIN", "1")
        .stdin_json(&json!({"hook_event_name": "UserPromptSubmit", "cwd": cwd.path(),
                            "session_id": "s-kept", "prompt_id": "p-1",
                            "prompt": "the deploy script lives in ops/deploy.sh"}))
        .run()
        .assert_fail_open();
}

#[test]
fn a_capture_refused_for_its_token_waits_in_the_spool() {
    // The token was rotated: the Server answers 401 to the scope resolution.
    let server = FaultServer::always(envelope(401, "authentication_required"));
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    run(&server, &state);
    assert_eq!(
        spool_entries(&state).len(),
        1,
        "the capture is gone: fixing the token can no longer deliver it"
    );

    // The same when only the capture itself is refused.
    let server = refusing_captures(envelope(403, "forbidden"));
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    run(&server, &state);
    assert_eq!(spool_entries(&state).len(), 1, "a 403 capture was dropped");
}

#[test]
fn a_conflict_that_is_not_the_sources_own_keeps_the_capture() {
    // A fresh scope's first concurrent writes can answer 409 (seen on the pinned Server with auth
    // on: the first prompt's capture got 409 while its prepare ran, and was never stored). Only
    // `source_conflict` says this Source identity holds other content.
    let server = refusing_captures(envelope(409, "generation_conflict"));
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    run(&server, &state);
    assert_eq!(
        spool_entries(&state).len(),
        1,
        "a 409 that is not source_conflict dropped the capture for good"
    );
}

#[test]
fn one_entry_whose_scope_cannot_resolve_does_not_hold_back_the_others() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    // First the Server is down (503): two prompts of two sessions wait in the spool, unresolved.
    // Then it is back, but session `s-gone`'s binding points at a deleted scope (409
    // `scope_binding_target_missing`, a per-entry answer), while `s-fine` resolves.
    let up = Arc::new(AtomicBool::new(false));
    let flag = up.clone();
    let server = FaultServer::start(move |req| {
        if !flag.load(Ordering::SeqCst) {
            return envelope(503, "unavailable");
        }
        let body = String::from_utf8_lossy(&req.body);
        match req.path.as_str() {
            "/v1/scope-bindings/resolve" if body.contains("s-gone") => {
                envelope(409, "scope_binding_target_missing")
            }
            "/v1/scope-bindings/resolve" => Reply::json(200, &json!({"scope_id": SCOPE, "title": "t"})),
            "/v1/sources/content" => Reply::json(202, &accepted(1)),
            _ => Reply::json(200, &empty()),
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    for session in ["s-gone", "s-fine"] {
        let cwd = tempfile::tempdir().unwrap();
        HookCmd::new(CLAUDE)
            .env("POWERCONTEXT_CLAUDE_SERVER_URL", server.url())
            .env("POWERCONTEXT_CLAUDE_BOOTSTRAP", "0")
            .env("POWERCONTEXT_HOOKS_STATE_DIR", state.to_string_lossy())
            .env("POWERCONTEXT_HOOKS_NO_BACKGROUND_DRAIN", "1")
            .stdin_json(&json!({"hook_event_name": "UserPromptSubmit", "cwd": cwd.path(),
                                "session_id": session, "prompt_id": "p-1",
                                "prompt": format!("prompt of {session}")}))
            .run()
            .assert_fail_open();
        // Distinct creation times, so `s-gone` is the older entry.
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(spool_entries(&state).len(), 2);

    up.store(true, Ordering::SeqCst);
    let out = run_cli(
        &["flush", "--json", "--budget", "10"],
        &[
            ("POWERCONTEXT_HOOKS_STATE_DIR", &state.to_string_lossy()),
            ("POWERCONTEXT_CLAUDE_SERVER_URL", &server.url()),
        ],
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["delivered"], 1,
        "the entry that resolves was held back by the one that does not: {report}"
    );
}
