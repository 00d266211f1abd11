//! Session bootstrap against the real pinned Server: the package for a curated (pinned) memory,
//! the `empty` and `skipped` answers, a receipt that only one of two concurrent hooks can claim,
//! and per-prompt recall that cites the receipt and never repeats an item in the session window.
//! Every answer passes the hook's exact schema validation, so a drift in the Server fails here.

use std::path::Path;
use std::time::Duration;

use powercontext_hooks_core::bootstrap::{self, Bootstrap, BootstrapRequest, Lifecycle};
use powercontext_hooks_core::deadline::Deadline;
use powercontext_hooks_core::endpoint::BaseUrl;
use powercontext_hooks_core::env::Env;
use powercontext_hooks_core::http::Transport;
use powercontext_hooks_test_support::hook::{HookCmd, prompt_payload};
use powercontext_hooks_test_support::real_server::RealServer;
use serde_json::{Value, json};

use crate::support::{CLAUDE, GEMINI_CLI, pinned_scope};

fn transport(server: &RealServer) -> Transport {
    Transport::new(
        BaseUrl::parse(&server.url()).unwrap(),
        None,
        Duration::from_secs(8),
        Deadline::after(Duration::from_secs(30)),
        &Env::default(),
    )
    .unwrap()
}

fn ask(t: &Transport, scope: &str, event_id: &str, enabled: bool) -> Bootstrap {
    bootstrap::request(
        t,
        &BootstrapRequest {
            scope_id: scope,
            enabled,
            profile: bootstrap::PROFILE,
            lifecycle: Lifecycle::Startup,
            integration: "claude-code",
            event_id,
            max_bytes: 4096,
        },
    )
    .unwrap_or_else(|f| panic!("bootstrap failed: {f:?}"))
}

#[test]
fn ready_empty_and_skipped_packages_validate_exactly() {
    let server = RealServer::shared();
    let t = transport(server);
    let bare = server.create_scope("bootstrap empty");
    assert_eq!(
        ask(&t, &bare, "e1", true),
        Bootstrap::Nothing("no_eligible_context")
    );
    assert_eq!(ask(&t, &bare, "e2", false), Bootstrap::Nothing("disabled"));

    let (scope, artifact) = pinned_scope(
        server,
        "ready",
        "Rule orchid-vane-5: tag releases from main only.",
    );
    let Bootstrap::Ready {
        content,
        items,
        receipt_id,
    } = ask(&t, &scope, "r1", true)
    else {
        panic!("a pinned memory makes a ready package");
    };
    assert!(content.contains("orchid-vane-5"), "{content}");
    assert_eq!(items.len(), 1);
    // Pinning in a scope the Server does not know says so, not that the memory is missing.
    let out = crate::support::run_cli(
        &["pin", &artifact, "--scope", "scp_no_such_scope", "--json"],
        &[
            ("HOME", &server.home().to_string_lossy()),
            ("POWERCONTEXT_HOOKS_CONFIG", "/nonexistent/config.toml"),
            ("POWERCONTEXT_CLAUDE_SERVER_URL", &server.url()),
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let error = answer["error"].as_str().unwrap();
    assert!(error.contains("scope does not exist"), "{error}");
    assert_eq!(items[0].key, format!("atomic-memory {artifact} 1"));
    // A retry of the same event gets the same pending receipt.
    let Bootstrap::Ready {
        receipt_id: again, ..
    } = ask(&t, &scope, "r1", true)
    else {
        panic!("retry");
    };
    assert_eq!(again, receipt_id);
    bootstrap::record(&t, &scope, &receipt_id, true).expect("record injected");
    assert_eq!(
        ask(&t, &scope, "r1", true),
        Bootstrap::Nothing("already_delivered")
    );
}

#[test]
fn only_one_of_two_concurrent_hooks_claims_a_receipt() {
    let server = RealServer::shared();
    let (scope, _) = pinned_scope(server, "race", "Rule birch-signal-8: never deploy on Fridays.");
    let t = transport(server);
    let Bootstrap::Ready { receipt_id, .. } = ask(&t, &scope, "race", true) else {
        panic!("ready");
    };
    let results: Vec<bool> = std::thread::scope(|s| {
        let claims: Vec<_> = (0..2)
            .map(|_| s.spawn(|| bootstrap::record(&transport(server), &scope, &receipt_id, true).is_ok()))
            .collect();
        claims.into_iter().map(|c| c.join().unwrap()).collect()
    });
    assert_eq!(results.iter().filter(|ok| **ok).count(), 1, "{results:?}");
}

fn run(
    event: &Value,
    scope: &str,
    server: &RealServer,
    state: &Path,
) -> powercontext_hooks_test_support::hook::HookOutput {
    HookCmd::new(CLAUDE)
        .env("POWERCONTEXT_CLAUDE_SERVER_URL", server.url())
        .env("POWERCONTEXT_CLAUDE_SCOPE_ID", scope)
        .env("POWERCONTEXT_CLAUDE_REQUEST_TIMEOUT_SECONDS", "8")
        .env("POWERCONTEXT_CLAUDE_HTTP_BUDGET_SECONDS", "20")
        .env("POWERCONTEXT_CLAUDE_CAPTURE_PROMPTS", "0")
        .env("POWERCONTEXT_HOOKS_STATE_DIR", state.to_string_lossy())
        .stdin_json(event)
        .run()
}

#[test]
fn session_start_then_prompts_cite_the_receipt_and_never_repeat_an_item() {
    let server = RealServer::shared();
    let (scope, _) = pinned_scope(
        server,
        "window",
        "Rule cedar-kite-3: the kestrel pipeline needs two reviewers.",
    );
    server.remember(
        &scope,
        "The kestrel pipeline rolls back with scripts/kestrel-undo.sh.",
    );
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let start = json!({"hook_event_name": "SessionStart", "session_id": "win-1", "cwd": dir.path(), "source": "startup"});
    let out = run(&start, &scope, server, &state);
    assert!(out.status.success(), "{}", out.stderr);
    let line: Value = serde_json::from_str(out.stdout.trim()).expect("one protocol line");
    assert_eq!(line["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let boot = line["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(boot.contains("cedar-kite-3"), "{boot}");

    let mut prompt = prompt_payload("How do kestrel pipeline rollbacks and reviews work?", dir.path());
    prompt["session_id"] = json!("win-1");
    let first = run(&prompt, &scope, server, &state);
    first.assert_fail_open();
    let context = first
        .context()
        .unwrap_or_else(|| panic!("recall: {}", first.stderr));
    assert!(context.contains("kestrel-undo.sh"), "{context}");
    assert!(
        !context.contains("cedar-kite-3"),
        "the receipt keeps the bootstrap item out: {context}"
    );

    let second = run(&prompt, &scope, server, &state);
    second.assert_fail_open();
    assert_eq!(second.context(), None, "the same item twice in one window");
    assert_eq!(second.diagnostic("empty").unwrap()["detail"], "already_injected");

    // A new session (another id) gets the item again; so does this one after a compaction.
    let mut other = prompt.clone();
    other["session_id"] = json!("win-2");
    assert!(
        run(&other, &scope, server, &state)
            .context()
            .is_some_and(|c| c.contains("kestrel-undo.sh"))
    );
    let compact =
        json!({"hook_event_name": "PreCompact", "session_id": "win-1", "cwd": dir.path(), "trigger": "auto"});
    let compacting = run(&compact, &scope, server, &state);
    assert!(
        compacting.status.success() && compacting.stdout.is_empty(),
        "{}",
        compacting.stderr
    );
    let after = run(&prompt, &scope, server, &state);
    let context = after
        .context()
        .unwrap_or_else(|| panic!("after compaction: {}", after.stderr));
    assert!(
        context.contains("cedar-kite-3"),
        "the compaction's bootstrap: {context}"
    );
    assert!(
        context.contains("kestrel-undo.sh"),
        "the window started again: {context}"
    );

    let records = std::fs::read_dir(state.join("sessions")).unwrap();
    for r in records {
        let text = std::fs::read_to_string(r.unwrap().path()).unwrap();
        for leak in ["cedar", "kestrel", "win-1", scope.as_str()] {
            assert!(!text.contains(leak), "session record holds {leak}: {text}");
        }
    }
}

/// A resume on Codex, whose resumed transcript still holds the package, injects nothing (unless a
/// compaction left a bootstrap pending); on Claude Code, whose resumed transcript drops it, the
/// resume injects it again.
#[test]
fn a_resume_reinjects_the_package_only_where_the_transcript_dropped_it() {
    let server = RealServer::shared();
    let (scope, _) = pinned_scope(
        server,
        "resume",
        "Rule alder-quill-6: every migration ships with its down script.",
    );
    for (exe, var, expect_on_resume) in [(CLAUDE, "CLAUDE", true), (crate::support::CODEX, "CODEX", false)] {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let hook = |event: &Value| {
            let out = HookCmd::new(exe)
                .env(&format!("POWERCONTEXT_{var}_SERVER_URL"), server.url())
                .env(&format!("POWERCONTEXT_{var}_SCOPE_ID"), &scope)
                .env(&format!("POWERCONTEXT_{var}_REQUEST_TIMEOUT_SECONDS"), "8")
                .env(&format!("POWERCONTEXT_{var}_HTTP_BUDGET_SECONDS"), "20")
                .env("POWERCONTEXT_HOOKS_STATE_DIR", state.to_string_lossy())
                .stdin_json(event)
                .run();
            assert!(out.status.success(), "{}", out.stderr);
            out.stdout.contains("alder-quill-6")
        };
        let start = |source: &str| json!({"hook_event_name": "SessionStart", "session_id": "res-1", "cwd": dir.path(), "source": source});
        assert!(hook(&start("startup")), "{var}: the start injects the package");
        assert_eq!(hook(&start("resume")), expect_on_resume, "{var}: resume");
        let compact = json!({"hook_event_name": "PreCompact", "session_id": "res-1", "cwd": dir.path(), "trigger": "auto"});
        assert!(!hook(&compact));
        assert!(
            hook(&start("resume")),
            "{var}: a resume with a bootstrap pending injects it"
        );
    }
}

/// A session whose record is gone (pruned after a week without a prompt, or lost) and that is
/// resumed and compacted again gets its package back after that compaction: a boundary never
/// reuses an event id of the session's earlier life, which the Server would answer
/// `already_delivered`.
#[test]
fn a_session_whose_record_was_lost_still_bootstraps_after_each_compaction() {
    let server = RealServer::shared();
    let (scope, _) = pinned_scope(
        server,
        "lost-record",
        "Rule juniper-flag-2: feature flags are removed within one release.",
    );
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let boundary = |event: &str, source: &str| {
        let event = json!({"hook_event_name": event, "session_id": "lost-1", "cwd": dir.path(), "source": source, "trigger": "auto"});
        let out = run(&event, &scope, server, &state);
        assert!(out.status.success(), "{}", out.stderr);
        out
    };
    let compaction = || {
        boundary("PreCompact", "");
        let out = boundary("SessionStart", "compact");
        assert!(
            out.stdout.contains("juniper-flag-2"),
            "the package after a compaction: {}",
            out.stderr
        );
    };
    assert!(
        boundary("SessionStart", "startup")
            .stdout
            .contains("juniper-flag-2")
    );
    compaction();
    std::fs::remove_dir_all(state.join("sessions")).unwrap();
    assert!(
        boundary("SessionStart", "resume")
            .stdout
            .contains("juniper-flag-2")
    );
    compaction();
}

#[test]
fn a_hook_that_cannot_keep_a_session_record_gets_each_package_once() {
    let server = RealServer::shared();
    let (scope, _) = pinned_scope(
        server,
        "no-record",
        "Rule alder-lint-7: every crate denies warnings in CI.",
    );
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    // Where the session records belong there is a file: no record can ever be kept.
    std::fs::write(state.join("sessions"), "not a directory").unwrap();
    let start = json!({"hook_event_name": "SessionStart", "session_id": "no-record-1", "cwd": dir.path(), "source": "startup"});
    let first = run(&start, &scope, server, &state);
    assert!(first.stdout.contains("alder-lint-7"), "{}", first.stderr);
    // The same boundary again: the same event id, so the Server does not hand the package out
    // a second time (a fresh id per run would repeat it on every run).
    let again = run(&start, &scope, server, &state);
    assert!(again.status.success(), "{}", again.stderr);
    assert!(!again.stdout.contains("alder-lint-7"), "{}", again.stdout);
}

/// A session start on a scope without curated memory writes nothing (no answer, no diagnostic
/// line) and the run journal, and so `status`, calls it `empty`, the word the docs use for it.
#[test]
fn a_session_start_without_curated_memory_is_journaled_as_empty() {
    let server = RealServer::shared();
    let scope = server.create_scope("bootstrap nothing curated");
    server.remember(&scope, "An ordinary memory, never tagged for bootstrap.");
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let start = json!({"hook_event_name": "SessionStart", "session_id": "none-1", "cwd": dir.path(), "source": "startup"});
    let out = run(&start, &scope, server, &state);
    assert!(out.status.success(), "{}", out.stderr);
    assert_eq!(out.stdout.trim(), "", "nothing to inject");
    assert_eq!(out.stderr.trim(), "", "a normal outcome writes no line");
    let journal = std::fs::read_to_string(state.join("journal-claude-code.jsonl")).unwrap();
    let record: Value = serde_json::from_str(journal.lines().last().unwrap()).unwrap();
    assert_eq!(record["event"], "SessionStart", "{record}");
    assert_eq!(record["outcome"], "empty", "{record}");
    let status = crate::support::run_cli(
        &["status"],
        &[("POWERCONTEXT_HOOKS_STATE_DIR", &state.to_string_lossy())],
    );
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("claude-code SessionStart: last fired"), "{text}");
    assert!(text.contains("(empty)"), "{text}");
}

/// Gemini CLI's `PreCompress` fires on every run, so it is no evidence of a compaction: the hook
/// answers nothing, marks nothing, and the next prompt does not bootstrap again. Its boundaries
/// (`AfterAgent`, `SessionEnd`) answer nothing and report nothing.
#[test]
fn gemini_precompress_is_no_compaction() {
    let server = RealServer::shared();
    let (scope, _) = pinned_scope(
        server,
        "gemini-precompress",
        "Rule birch-lamp-8: every changelog entry names its reviewer.",
    );
    server.remember(
        &scope,
        "The osprey service rolls back with scripts/osprey-undo.sh.",
    );
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let gemini = |event: &Value| {
        HookCmd::new(GEMINI_CLI)
            .env("POWERCONTEXT_GEMINI_SERVER_URL", server.url())
            .env("POWERCONTEXT_GEMINI_SCOPE_ID", &scope)
            .env("POWERCONTEXT_GEMINI_REQUEST_TIMEOUT_SECONDS", "8")
            .env("POWERCONTEXT_GEMINI_HTTP_BUDGET_SECONDS", "20")
            .env("POWERCONTEXT_GEMINI_CAPTURE_PROMPTS", "0")
            .env("POWERCONTEXT_HOOKS_STATE_DIR", state.to_string_lossy())
            .stdin_json(event)
            .run()
    };
    let start = json!({"hook_event_name": "SessionStart", "session_id": "gem-1", "cwd": dir.path(), "source": "startup"});
    let out = gemini(&start);
    let line: Value = serde_json::from_str(out.stdout.trim()).expect("one protocol line");
    assert_eq!(line["hookSpecificOutput"]["hookEventName"], "SessionStart");
    assert!(
        line["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .is_some_and(|c| c.contains("birch-lamp-8")),
        "{line}"
    );

    for event in ["PreCompress", "AfterAgent", "SessionEnd"] {
        let payload =
            json!({"hook_event_name": event, "session_id": "gem-1", "cwd": dir.path(), "trigger": "auto"});
        let out = gemini(&payload);
        assert!(
            out.status.success() && out.stdout.is_empty(),
            "{event}: {}",
            out.stderr
        );
        if event != "PreCompress" {
            assert!(out.diagnostics().is_empty(), "{event}: {}", out.stderr);
        }
    }
    let records: Vec<String> = std::fs::read_dir(state.join("sessions"))
        .unwrap()
        .map(|r| std::fs::read_to_string(r.unwrap().path()).unwrap())
        .collect();
    assert!(
        records.iter().all(|r| !r.contains("\"pending\":\"compact\"")),
        "PreCompress marked a compaction: {records:?}"
    );

    let mut prompt = prompt_payload("Which script rolls back the osprey service?", dir.path());
    prompt["session_id"] = json!("gem-1");
    prompt["hook_event_name"] = json!("BeforeAgent");
    let out = gemini(&prompt);
    let context = out
        .context_for("BeforeAgent")
        .unwrap_or_else(|| panic!("recall: {}", out.stderr));
    assert!(context.contains("osprey-undo.sh"), "{context}");
    assert!(
        !context.contains("birch-lamp-8"),
        "the prompt after PreCompress bootstrapped again: {context}"
    );
}
