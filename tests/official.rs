//! The connection the official `powercontext setup` saved, read by our hooks against the real
//! Server with auth on: the URL from `clients.json` and the token from `credentials.json` reach
//! the Server; a credential file that is a symlink, readable by others, or saved for another
//! Server is never used (401, and its token never leaves for the wrong Server).

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use powercontext_hooks_test_support::fault_server::closed_port_url;
use powercontext_hooks_test_support::hook::{HookCmd, prompt_payload};
use powercontext_hooks_test_support::real_server::RealServer;
use serde_json::json;

use crate::support::{CLAUDE, CODEX};

/// Writes what `powercontext setup <host> --server-url URL` writes for the connection.
fn save_official(home: &Path, host: &str, root: &str, url: &str, cred_url: &str, token: &str) {
    let clients = home.join(".config/powercontext/clients.json");
    std::fs::create_dir_all(clients.parent().unwrap()).unwrap();
    std::fs::write(
        &clients,
        json!({"version": 1, "hosts": {host: {"server_url": url, "allow_insecure_http": false}}}).to_string(),
    )
    .unwrap();
    let dir = home.join(root).join("powercontext");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let cred = dir.join("credentials.json");
    std::fs::write(
        &cred,
        json!({"version": 1, "server_url": cred_url, "authorization": format!("Bearer {token}")}).to_string(),
    )
    .unwrap();
    std::fs::set_permissions(&cred, std::fs::Permissions::from_mode(0o600)).unwrap();
}

fn hook(exe: &str, part: &str, prompt: &str, cwd: &Path) -> HookCmd {
    HookCmd::new(exe)
        .env(&format!("POWERCONTEXT_{part}_REQUEST_TIMEOUT_SECONDS"), "8")
        .env(&format!("POWERCONTEXT_{part}_HTTP_BUDGET_SECONDS"), "20")
        .stdin_json(&prompt_payload(prompt, cwd))
}

#[test]
fn hooks_use_the_url_and_token_official_setup_saved_and_only_under_the_rules() {
    let server = RealServer::shared_auth();
    let token = server.token().unwrap().to_owned();
    for (exe, part, host, root) in [
        (CLAUDE, "CLAUDE", "claude-code", ".claude"),
        (CODEX, "CODEX", "codex", ".codex"),
    ] {
        let scope = server.create_scope(&format!("official-{host}"));
        let fact = format!("Decision {host}: the saved connection deploys the blue fleet");
        server.remember(&scope, &fact);
        let cwd = tempfile::tempdir().unwrap();
        let prompt = format!("Which fleet does the saved connection deploy? ({host})");

        // Saved by the official CLI: used, nothing configured anywhere else.
        let cmd = hook(exe, part, &prompt, cwd.path()).env(&format!("POWERCONTEXT_{part}_SCOPE_ID"), &scope);
        save_official(cmd.home(), host, root, &server.url(), &server.url(), &token);
        let out = cmd.run();
        out.assert_fail_open();
        let context = out
            .context()
            .unwrap_or_else(|| panic!("{host}: nothing injected; stderr: {}", out.stderr));
        assert!(context.contains(&fact), "{host}: {context}");
        assert!(out.stderr.is_empty(), "{host}: {}", out.stderr);
        assert!(
            server
                .sources(&scope)
                .iter()
                .any(|s| s["content"] == prompt.as_str()),
            "{host}: prompt not stored"
        );

        let cred = cmd.home().join(root).join("powercontext/credentials.json");
        let refused = |cmd: &HookCmd, why: &str| {
            let out = cmd.run();
            out.assert_fail_open();
            assert!(out.context().is_none(), "{host} {why}: {}", out.stderr);
            assert!(
                out.diagnostic("authentication_failed").is_some(),
                "{host} {why}: {}",
                out.stderr
            );
            out.assert_stderr_free_of(&[&token]);
        };
        // Readable by the group.
        std::fs::set_permissions(&cred, std::fs::Permissions::from_mode(0o640)).unwrap();
        refused(&cmd, "mode 0640");
        std::fs::set_permissions(&cred, std::fs::Permissions::from_mode(0o600)).unwrap();
        // A symlink to a perfectly good file.
        let real = cmd.home().join("elsewhere.json");
        std::fs::rename(&cred, &real).unwrap();
        std::os::unix::fs::symlink(&real, &cred).unwrap();
        refused(&cmd, "symlink");
        std::fs::remove_file(&cred).unwrap();
        std::fs::rename(&real, &cred).unwrap();
        // Saved for another Server: not sent to this one.
        save_official(cmd.home(), host, root, &server.url(), &closed_port_url(), &token);
        refused(&cmd, "other server");
        // Our own config file beats the official URL (here: a closed port), so the official
        // token bound to the official URL is not sent there either.
        save_official(cmd.home(), host, root, &server.url(), &server.url(), &token);
        let cfg = cmd.home().join("hooks.toml");
        std::fs::write(&cfg, format!("server_url = \"{}\"\n", closed_port_url())).unwrap();
        let out = hook(exe, part, &prompt, cwd.path())
            .env("HOME", cmd.home().to_str().unwrap())
            .env("POWERCONTEXT_HOOKS_CONFIG", cfg.to_str().unwrap())
            .run();
        out.assert_fail_open();
        assert!(
            out.diagnostic("server_unavailable").is_some(),
            "{host}: {}",
            out.stderr
        );
    }
}

/// The MCP headers helper our Claude Code plugin declares prints the saved token for the URL
/// Claude's MCP client is configured with, and nothing for another Server.
#[test]
fn the_mcp_headers_helper_sends_the_saved_token_only_to_its_server() {
    let home = tempfile::tempdir().unwrap();
    let url = "http://127.0.0.1:18431";
    save_official(home.path(), "claude-code", ".claude", url, url, "tok-abc");
    let settings = home.path().join(".claude/settings.json");
    let run = |server: &str| {
        std::fs::write(
            &settings,
            json!({"pluginConfigs": {"powercontext@powercontext": {"options": {"server_url": server}}}})
                .to_string(),
        )
        .unwrap();
        let out = std::process::Command::new(crate::support::CLI)
            .args(["mcp-headers", "claude-code"])
            .env_clear()
            .env("HOME", home.path())
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    assert_eq!(run(url), json!({"Authorization": "Bearer tok-abc"}));
    assert_eq!(run("http://127.0.0.1:18432"), json!({}));
}

/// The workstream binding the official project-context Skill writes into a checkout
/// (`<gitdir>/powercontext/codex-workspace.json`) is no scope source for our Claude Code and Codex
/// hooks (README): they still resolve through the Server, and the id in that file is never sent.
#[test]
fn the_skills_workstream_binding_file_does_not_choose_the_scope() {
    use powercontext_hooks_test_support::fake_server::{FakeServer, PREPARE};
    use powercontext_hooks_test_support::fault_server::Reply;

    const SERVER_SCOPE: &str = "scp_chosen_by_the_server";
    const FILE_SCOPE: &str = "project:bound-by-the-skill-file";
    for (exe, part) in [(CLAUDE, "CLAUDE"), (CODEX, "CODEX")] {
        // An empty context whose content is "" rather than null.
        let empty = json!({"schema": "powercontext.prepared-context.v1", "status": "empty",
                           "content": "", "content_bytes": 0});
        let server = FakeServer::builder(SERVER_SCOPE)
            .answer(PREPARE, Reply::json(200, &empty))
            .capture_position(1)
            .start();
        let repo = tempfile::tempdir().unwrap();
        let git = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(repo.path())
            .status()
            .unwrap();
        assert!(git.success());
        let binding = repo.path().join(".git/powercontext");
        std::fs::create_dir_all(&binding).unwrap();
        std::fs::write(
            binding.join("codex-workspace.json"),
            json!({"schema": "powercontext.codex-workspace.v1", "scope_id": FILE_SCOPE}).to_string(),
        )
        .unwrap();
        let out = hook(exe, part, "Which fleet do we deploy?", repo.path())
            .env(&format!("POWERCONTEXT_{part}_SERVER_URL"), server.url())
            .env(&format!("POWERCONTEXT_{part}_BOOTSTRAP"), "0")
            .current_dir(repo.path())
            .run();
        assert!(out.status.success(), "{}", out.stderr);
        let requests = server.requests();
        let paths: Vec<&str> = requests.iter().map(|r| r.path.as_str()).collect();
        assert!(paths.contains(&"/v1/scope-bindings/resolve"), "{part}: {paths:?}");
        let prepare = requests
            .iter()
            .find(|r| r.path == "/v1/context/prepare")
            .unwrap_or_else(|| panic!("{part}: no prepare: {paths:?}"));
        assert_eq!(prepare.json().unwrap()["scope_id"], SERVER_SCOPE, "{part}");
        for r in &requests {
            assert!(
                !String::from_utf8_lossy(&r.body).contains(FILE_SCOPE),
                "{part}: the file's scope reached {}",
                r.path
            );
        }
    }
}
