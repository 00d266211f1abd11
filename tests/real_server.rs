//! Contract tests against the real pinned PowerContext Server (1.4.1) on loopback: recall of a
//! remembered fact, capture stored and deduplicated on replay, scope bindings made with the
//! official CLI honored, and authentication failures reported without leaking the token.

use std::path::Path;
use std::process::Command;

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
    assert_eq!(out.outcomes(), vec!["authentication_failed"], "{}", out.stderr);
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
