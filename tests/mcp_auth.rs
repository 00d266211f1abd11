//! The hosts' own MCP clients, as `powercontext-hooks setup` configures them, authenticate to the
//! real Server (auth on) with the token setup saved, and the token never lands in the host's
//! config: OpenCode's `mcp.powercontext` reads it from an owner-only file through `{file:…}`
//! (checked with `opencode mcp list`), Codex's plugin MCP server runs our `mcp-headers` as its
//! `http_headers_helper` (checked with the app server's `mcpServerStatus/list`), and Claude Code's
//! plugin MCP server runs it as its `headersHelper` (checked with `claude mcp list`). Uninstall
//! takes them away again.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Stdio};

use powercontext_hooks_test_support::hosts::{AppServer, repo_root};
use powercontext_hooks_test_support::real_server::RealServer;
use serde_json::{Value, json};

use crate::support::{Sandbox, host_bin, seed_foreign, seed_foreign_packages};

/// The environment variable our setup reads the token from in these tests.
const TOKEN_VAR: &str = "PC_SERVER_TOKEN";

fn setup(sb: &Sandbox, host: &str, server: &RealServer) -> Value {
    let url = server.url();
    let (code, out, err) = sb.cli_json(&["setup", host, "--server-url", &url, "--token-env", TOKEN_VAR]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(out["result"], "installed", "{out}");
    let text = out.to_string() + &err;
    assert!(
        !text.contains(server.token().unwrap()),
        "the token leaked: {text}"
    );
    out
}

/// Setup run again with a wrong token (a changed token takes effect on a re-run).
fn setup_again_with_a_wrong_token(sb: &mut Sandbox, host: &str, server: &RealServer) {
    sb.env
        .insert(TOKEN_VAR.to_owned(), "wrong-token-0000000000".to_owned());
    let url = server.url();
    let (code, out, _) = sb.cli_json(&["setup", host, "--server-url", &url, "--token-env", TOKEN_VAR]);
    assert_eq!(code, 0, "{out}");
}

/// `<cli> mcp list`, the line naming our server.
fn mcp_status(sb: &Sandbox, cli: &std::path::Path) -> String {
    let out = sb.run(cli, &["mcp", "list"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    text.lines()
        .find(|l| l.contains("powercontext"))
        .unwrap_or_else(|| panic!("`{} mcp list` does not list powercontext:\n{text}", cli.display()))
        .to_owned()
}

/// `opencode mcp list`, the line naming our server.
fn opencode_mcp_status(sb: &Sandbox) -> String {
    mcp_status(sb, &host_bin("opencode").join("opencode"))
}

#[test]
fn opencode_mcp_entry_authenticates_with_the_saved_token_it_never_holds() {
    let server = RealServer::shared_auth();
    let token = server.token().unwrap();
    let mut sb = Sandbox::new();
    seed_foreign(&sb);
    seed_foreign_packages(&mut sb, "opencode");
    sb.env.insert(TOKEN_VAR.to_owned(), token.to_owned());
    // OpenCode adds a `$schema` line to the user's config on its first start: let it, so that
    // what follows compares our changes only.
    let out = sb.run(&host_bin("opencode").join("opencode"), &["mcp", "list"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let baseline = fs::read_to_string(sb.opencode_config().join("opencode.jsonc")).unwrap();
    setup(&sb, "opencode", server);

    let config = fs::read_to_string(sb.opencode_config().join("opencode.jsonc")).unwrap();
    assert!(
        !config.contains(token),
        "the token is in OpenCode's config:\n{config}"
    );
    let header_file = sb
        .home()
        .join(".local/state/powercontext-hooks/installs/opencode/mcp-authorization");
    assert!(
        config.contains(&format!(
            "\"Authorization\": \"{{file:{}}}\"",
            header_file.display()
        )),
        "{config}"
    );
    assert_eq!(
        fs::read_to_string(&header_file).unwrap(),
        format!("Bearer {token}\n")
    );
    assert_eq!(
        fs::metadata(&header_file).unwrap().permissions().mode() & 0o777,
        0o600
    );

    // OpenCode's own MCP client, after its substitution, gets in.
    let status = opencode_mcp_status(&sb);
    assert!(
        status.contains("connected") && !status.contains("needs authentication"),
        "{status}"
    );

    // A changed token on a re-run rewrites the file only.
    setup_again_with_a_wrong_token(&mut sb, "opencode", server);
    assert_eq!(
        fs::read_to_string(sb.opencode_config().join("opencode.jsonc")).unwrap(),
        config
    );
    assert!(opencode_mcp_status(&sb).contains("needs authentication"));

    let (code, out, _) = sb.cli_json(&["uninstall", "opencode"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        fs::read_to_string(sb.opencode_config().join("opencode.jsonc")).unwrap(),
        baseline,
        "uninstall did not restore OpenCode's config byte for byte"
    );
    assert!(!header_file.exists(), "uninstall left the header file");
    assert!(!header_file.parent().unwrap().exists());
}

/// `mcpServerStatus/list` from Codex's app server, the entry named `powercontext`.
fn codex_mcp_status(sb: &Sandbox) -> Value {
    let cli = repo_root().join("tests/e2e/node_modules/.bin/codex");
    let mut child = Command::new(cli)
        .arg("app-server")
        .env_clear()
        .envs(&sb.env)
        .current_dir(sb.project())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut rpc = AppServer::new(&mut child);
    rpc.call(
        "initialize",
        json!({"clientInfo": {"name": "powercontext-tests", "version": "0"}}),
    );
    rpc.notify("initialized");
    let listed = rpc.call("mcpServerStatus/list", json!({}));
    drop(rpc);
    let _ = child.kill();
    let _ = child.wait();
    listed["data"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|s| s["name"] == "powercontext")
        .cloned()
        .unwrap_or_else(|| panic!("Codex lists no powercontext MCP server: {listed}"))
}

#[test]
fn codex_mcp_authenticates_through_our_headers_helper() {
    let server = RealServer::shared_auth();
    let token = server.token().unwrap();
    let mut sb = Sandbox::new();
    seed_foreign(&sb);
    sb.env.insert(TOKEN_VAR.to_owned(), token.to_owned());
    assert!(!sb.env.contains_key("POWERCONTEXT_CODEX_AUTHORIZATION"));
    setup(&sb, "codex", server);

    let cached = fs::read_dir(sb.home().join(".codex/plugins/cache/powercontext/powercontext"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join(".mcp.json"))
        .find(|p| p.is_file())
        .expect("Codex's cached copy of our plugin");
    let mcp: Value = serde_json::from_slice(&fs::read(&cached).unwrap()).unwrap();
    let entry = &mcp["mcpServers"]["powercontext"];
    assert!(!entry.to_string().contains(token), "{entry}");
    // The official doctor's check stays satisfied; the helper is ours.
    assert_eq!(
        entry["env_http_headers"],
        json!({"Authorization": "POWERCONTEXT_CODEX_AUTHORIZATION"})
    );
    let helper = entry["http_headers_helper"].as_str().expect("a headers helper");
    assert!(
        helper.contains("powercontext-hooks mcp-headers codex"),
        "{helper}"
    );

    let status = codex_mcp_status(&sb);
    let tools = status["tools"].as_object().cloned().unwrap_or_default();
    for tool in ["remember_memory", "search_memory"] {
        assert!(tools.contains_key(tool), "no {tool}: {status}");
    }

    // The tools came with the saved token: a wrong one loses them.
    setup_again_with_a_wrong_token(&mut sb, "codex", server);
    let status = codex_mcp_status(&sb);
    assert!(
        status["tools"].as_object().is_none_or(serde_json::Map::is_empty),
        "{status}"
    );

    let (code, out, _) = sb.cli_json(&["uninstall", "codex"]);
    assert_eq!(code, 0, "{out}");
    assert!(!cached.exists(), "uninstall left Codex's cached plugin");
}

/// `claude mcp list`, the line naming our plugin's server.
fn claude_mcp_status(sb: &Sandbox) -> String {
    mcp_status(sb, &repo_root().join("tests/e2e/node_modules/.bin/claude"))
}

#[test]
fn claude_code_mcp_authenticates_through_our_headers_helper() {
    let server = RealServer::shared_auth();
    let token = server.token().unwrap();
    let mut sb = Sandbox::new();
    seed_foreign(&sb);
    sb.env.insert(TOKEN_VAR.to_owned(), token.to_owned());
    let out = setup(&sb, "claude-code", server);

    // Neither our plugin folder nor Claude's copies of it hold the token.
    let plugin_dir = std::path::PathBuf::from(out["plugin_dir"].as_str().unwrap());
    let mcp: Value = serde_json::from_slice(&fs::read(plugin_dir.join(".mcp.json")).unwrap()).unwrap();
    let helper = mcp["mcpServers"]["powercontext"]["headersHelper"]
        .as_str()
        .unwrap();
    assert!(helper.contains(" mcp-headers claude-code"), "{helper}");
    for dir in [plugin_dir, sb.home().join(".claude/plugins")] {
        let files = walk(&dir);
        assert!(!files.is_empty(), "nothing in {}", dir.display());
        for file in files {
            let bytes = fs::read(&file).unwrap_or_default();
            assert!(
                !String::from_utf8_lossy(&bytes).contains(token),
                "the token is in {}",
                file.display()
            );
        }
    }
    let status = claude_mcp_status(&sb);
    assert!(
        status.contains("Connected") && !status.contains("Failed"),
        "{status}"
    );

    // It connected with the saved token: a wrong one is refused.
    setup_again_with_a_wrong_token(&mut sb, "claude-code", server);
    let status = claude_mcp_status(&sb);
    assert!(status.contains("401"), "{status}");

    let (code, out, _) = sb.cli_json(&["uninstall", "claude-code"]);
    assert_eq!(code, 0, "{out}");
}

/// Every file below `dir` (links not followed).
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in fs::read_dir(&d).into_iter().flatten().flatten() {
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                todo.push(entry.path());
            } else if kind.is_file() {
                files.push(entry.path());
            }
        }
    }
    files
}
