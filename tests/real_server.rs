//! Contract tests against the real pinned PowerContext Server (1.4.1) on loopback: recall of a
//! remembered fact, capture stored and deduplicated on replay, scope bindings made with the
//! official CLI honored, and authentication failures reported without leaking the token.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use powercontext_hooks_test_support::hook::{HookCmd, prompt_payload};
use powercontext_hooks_test_support::real_server::RealServer;
use serde_json::Value;

use crate::support::{CLAUDE, CODEX, PROMPT_HOSTS};

fn hook(exe: &str, part: &str, server: &RealServer, prompt: &str, cwd: &Path) -> HookCmd {
    HookCmd::new(exe)
        .env(&format!("POWERCONTEXT_{part}_SERVER_URL"), server.url())
        // Generous limits: these tests prove the contract, not speed, on a loaded 2-core machine.
        .env(&format!("POWERCONTEXT_{part}_REQUEST_TIMEOUT_SECONDS"), "8")
        .env(&format!("POWERCONTEXT_{part}_HTTP_BUDGET_SECONDS"), "20")
        .stdin_json(&prompt_payload(prompt, cwd))
}

fn sources_with_id<'a>(sources: &'a [Value], source_id: &str) -> Vec<&'a Value> {
    sources.iter().filter(|s| s["source_id"] == source_id).collect()
}

#[test]
fn a_remembered_fact_is_recalled_and_the_prompt_is_stored_once() {
    let server = RealServer::shared();
    for (exe, part, prefix) in PROMPT_HOSTS {
        let scope = server.create_scope(&format!("recall-{part}"));
        let fact =
            format!("Decision {part}: the staging cluster is rebuilt with terraform apply every Monday");
        server.remember(&scope, &fact);
        let cwd = tempfile::tempdir().unwrap();
        let prompt = format!("When is the staging cluster rebuilt with terraform? ({part})");
        let run = || {
            hook(exe, part, server, &prompt, cwd.path())
                .env(&format!("POWERCONTEXT_{part}_SCOPE_ID"), &scope)
                .run()
        };

        let out = run();
        out.assert_fail_open();
        let context = out
            .context()
            .unwrap_or_else(|| panic!("{part}: nothing injected; stderr: {}", out.stderr));
        assert!(context.contains(&fact), "{part}: {context}");
        assert!(context.contains("BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1"));
        assert!(out.stderr.is_empty(), "{part}: {}", out.stderr);

        let sources = server.sources(&scope);
        let mine: Vec<&Value> = sources
            .iter()
            .filter(|s| s["content"] == prompt.as_str())
            .collect();
        assert_eq!(mine.len(), 1, "{part}: {sources:?}");
        let source_id = mine[0]["source_id"].as_str().unwrap().to_owned();
        assert!(source_id.starts_with(prefix), "{source_id}");

        // The same turn again: the Server deduplicates on the source_id (metadata is deterministic).
        let again = run();
        again.assert_fail_open();
        assert!(again.diagnostic("capture_conflict").is_none(), "{}", again.stderr);
        assert_eq!(sources_with_id(&server.sources(&scope), &source_id).len(), 1);
    }
}

/// The official 1.4.1 CLI's own workspace key for a directory (its Python function, run as is).
fn official_workspace_key(server_venv: &Path, dir: &Path, integration: &str, ceiling: &Path) -> String {
    let out = Command::new(server_venv.join("bin/python"))
        .args([
            "-c",
            "import sys; from pathlib import Path; from powercontext.client.cli import _workspace_binding_external_id as f; print(f(Path(sys.argv[1]), sys.argv[2]))",
        ])
        .arg(dir)
        .arg(integration)
        .env("GIT_CEILING_DIRECTORIES", ceiling)
        .output()
        .expect("run the official CLI code");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

#[test]
fn a_workspace_bound_with_the_official_cli_is_honored() {
    let server = RealServer::shared();
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-server");
    for (exe, part, integration) in [(CLAUDE, "CLAUDE", "claude-code"), (CODEX, "CODEX", "codex")] {
        // A git checkout reached through a symlink, from a subdirectory: the key is the resolved top level.
        let root = tempfile::tempdir().unwrap();
        let repo = root.path().join("repo");
        std::fs::create_dir_all(repo.join("src/deep")).unwrap();
        assert!(
            Command::new("git")
                .args(["init", "-q"])
                .current_dir(&repo)
                .status()
                .unwrap()
                .success()
        );
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&repo, &link).unwrap();
        let cwd = link.join("src/deep");

        let scope = server.create_scope(&format!("bound-{integration}"));
        let fact = format!("Decision {integration}: bound workspaces deploy with the canary pipeline");
        server.remember(&scope, &fact);
        let ceiling = root.path().parent().unwrap();
        let key = official_workspace_key(&venv, &cwd, integration, ceiling);
        let bound = server.cli_json(
            &[
                "scope",
                "binding",
                "set",
                &scope,
                "--kind",
                "workspace",
                "--external-id",
                &key,
                "--integration",
                integration,
            ],
            root.path(),
        );
        assert_eq!(bound["scope_id"], scope.as_str(), "{bound}");

        let prompt = format!("Which pipeline do bound workspaces deploy with? ({integration})");
        let out = hook(exe, part, server, &prompt, &cwd)
            .env("GIT_CEILING_DIRECTORIES", ceiling.to_string_lossy())
            .run();
        out.assert_fail_open();
        let context = out
            .context()
            .unwrap_or_else(|| panic!("{integration}: nothing injected: {}", out.stderr));
        assert!(
            context.contains(&fact),
            "{integration} resolved another scope: {context}"
        );
        assert!(
            server
                .sources(&scope)
                .iter()
                .any(|s| s["content"] == prompt.as_str()),
            "captured into the bound scope"
        );
    }
}

#[test]
fn nothing_bound_resolves_to_the_default_scope() {
    let server = RealServer::shared();
    let default = server.default_scope();
    let fact = "Decision: the default scope answers questions about the quarterly zebra audit";
    server.remember(&default, fact);
    let cwd = tempfile::tempdir().unwrap();
    let out = hook(
        CODEX,
        "CODEX",
        server,
        "What about the quarterly zebra audit?",
        cwd.path(),
    )
    .run();
    out.assert_fail_open();
    assert!(out.context().unwrap_or_default().contains(fact), "{}", out.stderr);
}

#[test]
fn an_unknown_scope_is_reported_as_scope_not_found() {
    let server = RealServer::shared();
    let cwd = tempfile::tempdir().unwrap();
    let out = hook(CLAUDE, "CLAUDE", server, "anything at all", cwd.path())
        .env("POWERCONTEXT_CLAUDE_SCOPE_ID", "scp_doesnotexist0000000000000")
        .run();
    out.assert_fail_open()
        .assert_stderr_free_of(&["scp_doesnotexist"]);
    let d = out
        .diagnostics()
        .into_iter()
        .find(|d| d["event"] == "context_prepare")
        .unwrap();
    assert_eq!(d["outcome"], "scope_not_found");
    assert_eq!(d["http_status"], 404);
}

#[test]
fn a_wrong_token_is_authentication_failed_and_never_leaks() {
    let server = RealServer::shared_auth();
    let cwd = tempfile::tempdir().unwrap();
    let wrong = "wrong-token-LEAKCHECK-77";
    let out = hook(
        CLAUDE,
        "CLAUDE",
        server,
        "deploy the LEAKPROMPT service",
        cwd.path(),
    )
    .env("POWERCONTEXT_CLAUDE_AUTHORIZATION", format!("Bearer {wrong}"))
    .run();
    out.assert_fail_open()
        .assert_stderr_free_of(&[wrong, "LEAKCHECK", "LEAKPROMPT", RealServer::TEST_TOKEN]);
    assert_eq!(out.context(), None);
    // The capture waits in the spool: fixing the token delivers it.
    assert_eq!(
        out.outcomes(),
        vec!["authentication_failed", "capture_spooled"],
        "{}",
        out.stderr
    );
    assert_eq!(out.diagnostics()[0]["http_status"], 401);

    // The right token works through the shared 1.4 variable.
    let scope = server.default_scope();
    server.remember(
        &scope,
        "Decision: authenticated recall reaches the walrus runbook",
    );
    let out = hook(CODEX, "CODEX", server, "where is the walrus runbook?", cwd.path())
        .env("POWERCONTEXT_CLIENT_API_TOKEN", RealServer::TEST_TOKEN)
        .run();
    out.assert_fail_open()
        .assert_stderr_free_of(&[RealServer::TEST_TOKEN]);
    assert!(
        out.context().unwrap_or_default().contains("walrus runbook"),
        "{}",
        out.stderr
    );
}

#[test]
fn flush_on_capture_without_a_model_is_reported_not_retried() {
    let server = RealServer::shared();
    let scope = server.create_scope("flush-no-model");
    let cwd = tempfile::tempdir().unwrap();
    let out = hook(
        CODEX,
        "CODEX",
        server,
        "a prompt that waits for extraction",
        cwd.path(),
    )
    .env("POWERCONTEXT_CODEX_SCOPE_ID", &scope)
    .env("POWERCONTEXT_CODEX_FLUSH_ON_CAPTURE", "true")
    .run();
    out.assert_fail_open();
    let d = out
        .diagnostic("inference_unavailable")
        .unwrap_or_else(|| panic!("{}", out.stderr));
    assert_eq!(d["http_status"], 503);
    assert_eq!(server.sources(&scope).len(), 1, "the capture itself is stored");
}

/// The `UserPromptSubmit` payload of session `session`, turn `turn`.
fn turn_payload(prompt: &str, cwd: &Path, session: &str, turn: &str) -> Value {
    let mut p = prompt_payload(prompt, cwd);
    p["session_id"] = Value::from(session);
    p["prompt_id"] = Value::from(turn);
    p
}

/// Sources of `scope` whose content is `prompt`.
fn captured(server: &RealServer, scope: &str, prompt: &str) -> usize {
    server
        .sources(scope)
        .iter()
        .filter(|s| s["content"] == prompt)
        .count()
}

#[test]
fn a_rebinding_reaches_recall_within_the_cache_window_and_at_once_after_session_start_and_never_a_capture_late()
 {
    // A window no loaded machine outlasts between two prompts, and a short one for the expiry:
    // validity is judged by the reader, so each run says which window it reads with.
    const LONG: Duration = Duration::from_secs(120);
    const SHORT: Duration = Duration::from_secs(1);
    let server = RealServer::shared();
    let scopes = ["cache-a", "cache-b", "cache-c"].map(|t| server.create_scope(t));
    let facts = ["01:10", "04:40", "06:20"]
        .map(|t| format!("Decision: the nightly replica backup window opens at {t} UTC"));
    for (scope, fact) in scopes.iter().zip(&facts) {
        server.remember(scope, fact);
    }
    let [a, b, c] = &scopes;
    let [fact_a, fact_b, fact_c] = &facts;
    let session = format!("cache-window-{}", std::process::id());
    server.bind("claude-code", "session", &session, a);
    let cwd = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    let run = |payload: &Value, background: bool, window: Duration| {
        let mut cmd = hook(CLAUDE, "CLAUDE", server, "", cwd.path())
            .env("POWERCONTEXT_HOOKS_STATE_DIR", state.path().to_str().unwrap())
            .env(
                "POWERCONTEXT_HOOKS_SCOPE_CACHE_SECONDS",
                window.as_secs().to_string(),
            )
            .stdin_json(payload);
        if background {
            cmd = cmd.env_remove("POWERCONTEXT_HOOKS_NO_BACKGROUND_DRAIN");
        }
        let out = cmd.run();
        out.assert_fail_open();
        out
    };
    let ask = |n: usize, background: bool, window: Duration| {
        let prompt = format!("When does the nightly replica backup window open? (ask {n} {session})");
        let out = run(
            &turn_payload(&prompt, cwd.path(), &session, &format!("t{n}")),
            background,
            window,
        );
        (prompt, out.context().unwrap_or_default(), out.stderr)
    };

    let first = Instant::now();
    let (p1, ctx, err) = ask(1, false, LONG);
    assert!(
        ctx.contains(fact_a.as_str()) && !ctx.contains(fact_b.as_str()),
        "{ctx} {err}"
    );

    // Rebound (as the official CLI does, through the Server API). Within the window recall may
    // still use the cached scope (nothing from B shows), but the capture is resolved afresh: it
    // lands in B, never in A, also when the background drainer delivers it.
    server.bind("claude-code", "session", &session, b);
    let (p2, ctx, err) = ask(2, true, LONG);
    assert!(first.elapsed() < LONG, "the machine is too slow for this window");
    assert!(
        !ctx.contains(fact_b.as_str()),
        "the cached scope steers recall: {ctx} {err}"
    );
    let until = Instant::now() + Duration::from_secs(30);
    while captured(server, b, &p2) == 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(captured(server, b, &p2), 1);
    assert_eq!(captured(server, a, &p2), 0, "a stale scope received a capture");

    // SessionStart resolves at once: the next prompt recalls from B.
    let start = serde_json::json!({"hook_event_name": "SessionStart", "session_id": session, "cwd": cwd.path(), "source": "resume"});
    let _ = run(&start, false, LONG);
    let (p3, ctx, err) = ask(3, false, LONG);
    assert!(
        ctx.contains(fact_b.as_str()) && !ctx.contains(fact_a.as_str()),
        "{ctx} {err}"
    );

    // Past the window, a rebinding shows without any SessionStart. The entry is at least as old
    // as the end of the third prompt (whose capture resolved last).
    server.bind("claude-code", "session", &session, c);
    std::thread::sleep(SHORT + Duration::from_millis(300));
    let (p4, ctx, err) = ask(4, false, SHORT);
    assert!(ctx.contains(fact_c.as_str()), "{ctx} {err}");

    // Every capture exactly once, each in the scope bound when it was sent.
    for (prompt, home) in [(&p1, a), (&p2, b), (&p3, b), (&p4, c)] {
        for scope in &scopes {
            let want = usize::from(scope == home);
            assert_eq!(captured(server, scope, prompt), want, "{prompt}");
        }
    }
    // The cache never names a scope or a session in a file name.
    for e in std::fs::read_dir(state.path().join("scopes")).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        assert!(!name.contains("scp") && !name.contains(&session), "{name}");
    }
}

#[test]
fn a_burst_of_32_prompts_is_answered_within_budget_and_each_prompt_delivered_exactly_once() {
    const N: usize = 32;
    let server = RealServer::shared();
    let scope = server.create_scope("burst");
    server.remember(
        &scope,
        "Decision burst: the release train leaves every Thursday at noon",
    );
    let tag = format!("burst-{}", std::process::id());
    let sessions: Vec<String> = (0..N).map(|i| format!("{tag}-{i}")).collect();
    for s in &sessions {
        server.bind("claude-code", "session", s, &scope);
    }
    let cwd = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    // The default budget: the one a host runs the hook with.
    let budget = Duration::from_secs(4);
    let prompts: Vec<String> = (0..N)
        .map(|i| format!("When does the release train leave? ({tag} prompt {i})"))
        .collect();
    let outs: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = prompts
            .iter()
            .zip(&sessions)
            .map(|(prompt, session)| {
                let cmd = hook(CLAUDE, "CLAUDE", server, "", cwd.path())
                    .env("POWERCONTEXT_HOOKS_STATE_DIR", state.path().to_str().unwrap())
                    .env(
                        "POWERCONTEXT_CLAUDE_HTTP_BUDGET_SECONDS",
                        budget.as_secs().to_string(),
                    )
                    .env_remove("POWERCONTEXT_HOOKS_NO_BACKGROUND_DRAIN")
                    .stdin_json(&turn_payload(prompt, cwd.path(), session, "t0"));
                s.spawn(move || cmd.run())
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for out in &outs {
        out.assert_fail_open();
        // The watchdog's margin past the budget is the process's own, not the Server's.
        assert!(
            out.elapsed < budget + Duration::from_millis(400) + crate::support::start_slack(),
            "{:?}",
            out.elapsed
        );
    }
    let until = Instant::now() + Duration::from_secs(90);
    let count = |p: &String, sources: &[Value]| sources.iter().filter(|s| s["content"] == p.as_str()).count();
    loop {
        let sources = server.sources(&scope);
        if prompts.iter().all(|p| count(p, &sources) >= 1) || Instant::now() > until {
            break;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    // A duplicate would come from a second drainer replaying an entry: give it the time to.
    std::thread::sleep(Duration::from_secs(1));
    let sources = server.sources(&scope);
    for p in &prompts {
        assert_eq!(count(p, &sources), 1, "{p}");
    }
    let left = std::fs::read_dir(state.path().join("spool"))
        .map(|d| {
            d.flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(left, 0, "the spool is empty once everything is delivered");
}

/// `payload` as JSON with every character outside ASCII written as a `\u` escape (an astral one as
/// its UTF-16 surrogate pair), as Python's `json.dumps` writes it.
fn ascii_json(payload: &Value) -> Vec<u8> {
    let mut out = String::new();
    for c in payload.to_string().chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
    }
    out.into_bytes()
}

/// A prompt of exactly `chars` characters (the capture limit): JSON escapes of every kind (quotes,
/// backslashes, newlines, tabs, a control character), two- and three-byte characters, astral ones
/// (surrogate pairs once escaped) and a joined emoji sequence.
fn large_prompt(chars: usize) -> String {
    const PIECE: &str = "Refactor the \"payment\" service: C:\\work\\pay\tretries\r\nkeep the API stable \u{1} é ü ß 中文字符 😀🎉 👩\u{200d}💻 end.\n";
    let mut text: String = PIECE.chars().cycle().take(chars).collect();
    // Never cut inside the joined sequence at the end: the last character is plain.
    text.pop();
    text.push('.');
    text
}

#[test]
fn a_200_kb_prompt_with_escapes_and_surrogate_pairs_is_captured_exactly_and_a_secret_near_its_end_never() {
    const CHARS: usize = 200_000;
    let server = RealServer::shared();
    let cwd = tempfile::tempdir().unwrap();
    let wait_for = |scope: &str, content: &str| {
        let until = Instant::now() + Duration::from_secs(60);
        while captured(server, scope, content) == 0 && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(200));
        }
    };
    // Escaped as Python writes it, delivered by the hook itself; raw UTF-8 as Node writes it,
    // delivered by the detached drainer from the spool entry the hook wrote ahead.
    for (n, (escaped, background)) in [(true, false), (false, true)].into_iter().enumerate() {
        let scope = server.create_scope(&format!("large-{n}"));
        let prompt = large_prompt(CHARS);
        assert_eq!(prompt.chars().count(), CHARS);
        let payload = turn_payload(&prompt, cwd.path(), &format!("large-session-{n}"), "t1");
        let bytes = if escaped {
            ascii_json(&payload)
        } else {
            serde_json::to_vec(&payload).unwrap()
        };
        assert_eq!(escaped, bytes.is_ascii());
        let state = tempfile::tempdir().unwrap();
        let mut cmd = hook(CLAUDE, "CLAUDE", server, "", cwd.path())
            .env("POWERCONTEXT_CLAUDE_SCOPE_ID", &scope)
            .env("POWERCONTEXT_HOOKS_STATE_DIR", state.path().to_str().unwrap())
            .stdin_bytes(bytes);
        if background {
            cmd = cmd.env_remove("POWERCONTEXT_HOOKS_NO_BACKGROUND_DRAIN");
        }
        let out = cmd.run();
        out.assert_fail_open();
        assert!(
            out.diagnostic("capture_skipped_lossy").is_none(),
            "{}",
            out.stderr
        );
        wait_for(&scope, &prompt);
        std::thread::sleep(Duration::from_millis(500));
        let sources = server.sources(&scope);
        let stored: Vec<&str> = sources.iter().filter_map(|s| s["content"].as_str()).collect();
        assert_eq!(stored.len(), 1, "escaped {escaped}: one capture, nothing else");
        assert!(
            stored[0] == prompt,
            "escaped {escaped}: the capture is not the prompt byte for byte"
        );
    }

    // The same prompt with a token near its end: withheld by default, redacted on request, never
    // stored, whichever way the payload is written.
    let token = "ghp_Zk3n8QwL2xVb7Rt5Yp1Mc9Ds4Fh6Jg0Ae2Ku";
    let mut secret = large_prompt(CHARS - token.len() - 20);
    secret.push_str(&format!(" token={token} end."));
    for (n, (escaped, policy)) in [(true, "skip"), (false, "redact")].into_iter().enumerate() {
        let scope = server.create_scope(&format!("large-secret-{n}"));
        let payload = turn_payload(&secret, cwd.path(), &format!("large-secret-{n}"), "t1");
        let bytes = if escaped {
            ascii_json(&payload)
        } else {
            serde_json::to_vec(&payload).unwrap()
        };
        let out = hook(CLAUDE, "CLAUDE", server, "", cwd.path())
            .env("POWERCONTEXT_CLAUDE_SCOPE_ID", &scope)
            .env("POWERCONTEXT_CLAUDE_CAPTURE_SECRETS", policy)
            .stdin_bytes(bytes)
            .run();
        out.assert_fail_open();
        let sources = server.sources(&scope);
        assert!(
            sources.iter().all(|s| !s.to_string().contains(token)),
            "{policy}: the token was stored"
        );
        if policy == "skip" {
            assert!(
                out.diagnostic("capture_skipped_secret").is_some(),
                "{}",
                out.stderr
            );
            assert!(sources.is_empty(), "{policy}: {} sources", sources.len());
        } else {
            assert!(out.diagnostic("capture_redacted").is_some(), "{}", out.stderr);
            let head = &secret[..secret.find(" token=").unwrap()];
            let stored: Vec<&str> = sources.iter().filter_map(|s| s["content"].as_str()).collect();
            assert_eq!(stored.len(), 1, "{policy}");
            assert!(
                stored[0].starts_with(head) && stored[0].ends_with(" end."),
                "{policy}"
            );
        }
    }
}
