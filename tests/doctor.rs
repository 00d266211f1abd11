//! `powercontext-hooks doctor` after a real `setup` (real host CLIs — Claude Code, Codex, Pi,
//! OpenCode, DSH — and the real pinned Server): green when everything works, and red with the
//! right fix when the Server is down, the token is wrong, the Codex hook is untrusted, or the
//! plugin was removed behind our back. Doctor is evidence for
//! users, never a substitute for the real-host E2E tests.

use std::fs;

use powercontext_hooks_test_support::fault_server::closed_port_url;
use powercontext_hooks_test_support::real_server::RealServer;
use serde_json::Value;

use crate::support::{Sandbox, TOKEN, host_bin, seed_foreign, seed_foreign_packages};

fn setup(sb: &Sandbox, host: &str, url: &str, token: bool) {
    let mut args = vec!["setup", host, "--server-url", url];
    if token {
        args.extend(["--token-env", "PC_TEST_TOKEN"]);
    }
    let (code, out, err) = sb.cli_json(&args);
    assert_eq!(code, 0, "setup failed: {out}\n{err}");
}

fn doctor(sb: &Sandbox, host: &str) -> (i32, Value) {
    let (code, out, _) = sb.cli_json(&["doctor", host]);
    (code, out)
}

/// The check named `name`: (status, fix).
fn check(report: &Value, name: &str) -> (String, String) {
    let c = report["hosts"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {report}"));
    (
        c["status"].as_str().unwrap().to_owned(),
        c["fix"].as_str().unwrap_or("").to_owned(),
    )
}

fn assert_green(report: &Value) {
    for c in report["hosts"][0]["checks"].as_array().unwrap() {
        assert_ne!(c["status"], "fail", "{c} in {report}");
    }
    assert_eq!(report["ok"], true);
}

#[test]
fn green_after_setup_then_red_when_the_plugin_is_removed_behind_our_back() {
    let server = RealServer::shared();
    let sb = Sandbox::new();
    seed_foreign(&sb);
    setup(&sb, "claude-code", &server.url(), false);
    let (code, report) = doctor(&sb, "claude-code");
    assert_eq!(code, 0, "{report}");
    assert_green(&report);
    let settings = &report["hosts"][0]["settings"][0];
    assert_eq!(settings["name"], "server_url");
    assert!(
        settings["origin"]
            .as_str()
            .unwrap()
            .contains("hosts.claude-code.server_url"),
        "{settings}"
    );
    let (status, _) = check(&report, "hook round trip");
    assert_eq!(status, "ok");

    let out = sb.host(
        "claude",
        &[
            "plugin",
            "uninstall",
            "powercontext@powercontext",
            "--scope",
            "user",
        ],
    );
    assert!(out.status.success());
    let (code, report) = doctor(&sb, "claude-code");
    assert_eq!(code, 1, "{report}");
    let (status, fix) = check(&report, "plugin enabled");
    assert_eq!(status, "fail");
    assert!(fix.contains("powercontext-hooks setup claude-code"), "{fix}");
    // Setup repairs it.
    setup(&sb, "claude-code", &server.url(), false);
    assert_eq!(doctor(&sb, "claude-code").0, 0);

    // A state directory others can write: a warning with the fix (the next hook tightens it).
    let state = sb.home().join(".local/state/powercontext-hooks");
    let mode = |p: &std::path::Path| {
        std::os::unix::fs::PermissionsExt::mode(&fs::metadata(p).unwrap().permissions()) & 0o777
    };
    assert_eq!(
        mode(&state),
        0o700,
        "setup creates the state directory owner-only"
    );
    fs::set_permissions(&state, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let (_, report) = doctor(&sb, "claude-code");
    let (status, fix) = check(&report, "state directory permissions");
    assert_eq!(status, "warn", "{report}");
    assert!(fix.contains("chmod 700"), "{fix}");

    // A configured scope id the Server does not have is red, not "resolves".
    let mut sb = sb;
    sb.env
        .insert("POWERCONTEXT_CLAUDE_SCOPE_ID".into(), "scp_no_such_scope".into());
    let (code, report) = doctor(&sb, "claude-code");
    assert_eq!(code, 1, "{report}");
    let (status, fix) = check(&report, "scope resolves");
    assert_eq!(status, "fail", "{report}");
    assert!(fix.contains("POWERCONTEXT_CLAUDE_SCOPE_ID"), "{fix}");
    assert!(!report.to_string().contains("scp_no_such_scope"), "{report}");
}

#[test]
fn codex_green_with_a_token_then_red_when_untrusted_or_the_token_is_wrong() {
    let server = RealServer::shared_auth();
    let mut sb = Sandbox::new();
    seed_foreign(&sb);
    sb.env
        .insert("PC_TEST_TOKEN".into(), RealServer::TEST_TOKEN.into());
    setup(&sb, "codex", &server.url(), true);
    let (code, report) = doctor(&sb, "codex");
    assert_eq!(code, 0, "{report}");
    assert_green(&report);
    assert!(!report.to_string().contains(RealServer::TEST_TOKEN));
    assert_eq!(check(&report, "mcp connects").0, "ok", "{report}");
    assert_eq!(check(&report, "hook trusted").0, "ok");

    // Trust dropped (as after editing the hook): Codex would skip it silently; doctor says so.
    let cfg = sb.home().join(".codex/config.toml");
    let text = fs::read_to_string(&cfg).unwrap();
    let cut = text
        .find("[hooks.state]")
        .expect("setup recorded trust in config.toml");
    fs::write(&cfg, &text[..cut]).unwrap();
    let (code, report) = doctor(&sb, "codex");
    assert_eq!(code, 1);
    let (status, fix) = check(&report, "hook trusted");
    assert_eq!(status, "fail");
    assert!(fix.contains("powercontext-hooks setup codex"), "{fix}");
    setup(&sb, "codex", &server.url(), true);
    assert_eq!(check(&doctor(&sb, "codex").1, "hook trusted").0, "ok");

    // A wrong token.
    sb.env.insert("PC_TEST_TOKEN".into(), TOKEN.into());
    setup(&sb, "codex", &server.url(), true);
    let (code, report) = doctor(&sb, "codex");
    assert_eq!(code, 1, "{report}");
    let (status, fix) = check(&report, "auth accepted");
    assert_eq!(status, "fail");
    assert!(fix.contains("--token-env"), "{fix}");
    assert_eq!(check(&report, "live").0, "ok");
}

#[test]
fn red_when_the_server_is_down() {
    let sb = Sandbox::new();
    setup(&sb, "claude-code", &closed_port_url(), false);
    let (code, report) = doctor(&sb, "claude-code");
    assert_eq!(code, 1, "{report}");
    let (status, fix) = check(&report, "live");
    assert_eq!(status, "fail");
    assert!(fix.contains("start the Server"), "{fix}");
    assert_eq!(check(&report, "hook round trip").0, "fail");
    // Installed and activated still pass: the failure is pinned on the Server.
    assert_eq!(check(&report, "plugin enabled").0, "ok");
    assert_eq!(check(&report, "plugin files").0, "ok");

    // An official clients.json the hooks cannot read is named, not silently done without.
    let clients = sb.home().join(".config/powercontext/clients.json");
    let _ = fs::remove_file(&clients);
    fs::create_dir_all(clients.parent().unwrap()).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(&clients)
        .status()
        .unwrap();
    assert!(made.success());
    let (_, report) = doctor(&sb, "claude-code");
    let (status, fix) = check(&report, "official clients.json");
    assert_eq!(status, "warn", "{report}");
    assert!(fix.contains("powercontext setup"), "{fix}");
}

/// Pi, OpenCode, DSH: one setup, then doctor green; red for a wrong token and a Server that is
/// down (both through the environment, which overrides the config file exactly as for the hook);
/// red when the host no longer loads our package.
fn package_host_doctor(host: &str, activation_check: &str) {
    let server = RealServer::shared_auth();
    let mut sb = Sandbox::new();
    seed_foreign_packages(&mut sb, host);
    sb.env
        .insert("PC_TEST_TOKEN".into(), RealServer::TEST_TOKEN.into());
    setup(&sb, host, &server.url(), true);
    let (code, report) = doctor(&sb, host);
    assert_eq!(code, 0, "{report}");
    assert_green(&report);
    assert!(!report.to_string().contains(RealServer::TEST_TOKEN));
    assert_eq!(check(&report, activation_check).0, "ok");
    assert_eq!(check(&report, "hook round trip").0, "ok");

    let part = host.to_ascii_uppercase();
    let auth_var = format!("POWERCONTEXT_{part}_AUTHORIZATION");
    sb.env.insert(auth_var.clone(), format!("Bearer {TOKEN}"));
    let (code, report) = doctor(&sb, host);
    assert_eq!(code, 1, "{report}");
    let (status, fix) = check(&report, "auth accepted");
    assert_eq!(status, "fail");
    assert!(fix.contains("--token-env"), "{fix}");
    // The value is shown with where it came from.
    let origin = report["hosts"][0]["settings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "authorization")
        .map(|v| v["origin"].to_string())
        .unwrap_or_default();
    assert!(origin.contains(&auth_var), "{origin}");
    sb.env.remove(&auth_var);

    let url_var = format!("POWERCONTEXT_{part}_SERVER_URL");
    sb.env.insert(url_var.clone(), closed_port_url());
    let (code, report) = doctor(&sb, host);
    assert_eq!(code, 1, "{report}");
    let (status, fix) = check(&report, "live");
    assert_eq!(status, "fail");
    assert!(fix.contains("start the Server"), "{fix}");
    assert_eq!(check(&report, activation_check).0, "ok", "{report}");
    sb.env.remove(&url_var);

    // Removed behind our back, with the host's own tools.
    match host {
        "pi" => {
            let dir = sb.plugin_dir("pi");
            let out = sb.run(&host_bin("pi").join("pi"), &["remove", dir.to_str().unwrap()]);
            assert!(out.status.success());
        }
        "dsh" => {
            let out = sb.run(
                &host_bin("dsh").join("dsh"),
                &["plugin", "--profile", "web", "remove", "powercontext-dsh"],
            );
            assert!(out.status.success());
        }
        _ => fs::remove_file(sb.opencode_config().join("plugins/powercontext-opencode.js")).unwrap(),
    }
    let (code, report) = doctor(&sb, host);
    assert_eq!(code, 1, "{report}");
    let (status, fix) = check(&report, activation_check);
    assert_eq!(status, "fail", "{report}");
    assert!(fix.contains(&format!("powercontext-hooks setup {host}")), "{fix}");
}

#[test]
fn pi_doctor_green_then_red_for_token_server_and_removal() {
    package_host_doctor("pi", "package listed");
}

#[test]
fn opencode_doctor_green_then_red_for_token_server_and_removal() {
    package_host_doctor("opencode", "plugin loaded");
}

#[test]
fn dsh_doctor_green_then_red_for_token_server_and_removal() {
    package_host_doctor("dsh", "plugin in config");
}

/// The `firing` check: (status, detail, fix).
fn firing(report: &Value) -> (String, String, String) {
    let c = report["hosts"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "firing")
        .unwrap_or_else(|| panic!("no firing line: {report}"));
    (
        c["status"].as_str().unwrap().to_owned(),
        c["detail"].as_str().unwrap().to_owned(),
        c["fix"].as_str().unwrap_or("").to_owned(),
    )
}

#[test]
fn firing_line_for_a_host_that_never_ran_its_hook_then_after_a_real_run() {
    let sb = Sandbox::new();
    setup(&sb, "claude-code", &closed_port_url(), false);
    // Right after setup, before any prompt: waiting, not broken, with what to check if it stays.
    // Doctor's own synthetic run (it runs the hook) must not count as the host firing.
    for _ in 0..2 {
        let (_, report) = doctor(&sb, "claude-code");
        let (status, detail, _) = firing(&report);
        assert_eq!(status, "ok", "{report}");
        assert!(detail.starts_with("waiting for the first prompt"), "{detail}");
        assert!(
            detail.contains("claude plugin enable powercontext@powercontext"),
            "{detail}"
        );
    }
    // A day after setup with still no run, it is a warning with the fix.
    let manifest = sb
        .home()
        .join(".local/state/powercontext-hooks/installs/claude-code/manifest.json");
    let day_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(25 * 3600);
    fs::File::options()
        .append(true)
        .open(&manifest)
        .unwrap()
        .set_modified(day_ago)
        .unwrap();
    for _ in 0..2 {
        let (_, report) = doctor(&sb, "claude-code");
        let (status, detail, fix) = firing(&report);
        assert_eq!(status, "warn", "{report}");
        assert!(detail.contains("has not run our hook since setup"), "{detail}");
        assert!(detail.contains("plugin is disabled"), "{detail}");
        assert!(
            fix.contains("claude plugin enable powercontext@powercontext"),
            "{fix}"
        );
    }
    // The host fires (its hook executable, run as Claude Code runs it, in the same HOME).
    let payload = serde_json::json!({"hook_event_name": "UserPromptSubmit", "cwd": sb.project(),
        "prompt": "firing check", "session_id": "s-1"});
    let mut child = std::process::Command::new(crate::support::CLAUDE)
        .env_clear()
        .envs(&sb.env)
        .env("POWERCONTEXT_HOOKS_NO_BACKGROUND_DRAIN", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), payload.to_string().as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());
    let (_, report) = doctor(&sb, "claude-code");
    let (status, detail, _) = firing(&report);
    assert_eq!(status, "ok", "{report}");
    assert!(detail.contains("UserPromptSubmit server_unavailable"), "{detail}");
    assert!(detail.contains("1 run(s) in 24 h, 1 failed"), "{detail}");
}

/// The firing line shows the last journal record's words escaped: a record planted with terminal
/// escape sequences never reaches the terminal raw.
#[test]
fn firing_line_escapes_a_planted_journals_control_characters() {
    use std::os::unix::fs::PermissionsExt;

    let sb = Sandbox::new();
    setup(&sb, "claude-code", &closed_port_url(), false);
    let state = sb.home().join(".local/state/powercontext-hooks");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let planted = serde_json::json!({"v": 1, "at": now + 1000, "host": "claude-code",
        "event": "UserPromptSubmit\u{1b}[2J", "outcome": "\u{1b}]0;owned\u{7}", "ms": 5});
    let journal = state.join("journal-claude-code.jsonl");
    fs::write(&journal, format!("{planted}\n")).unwrap();
    fs::set_permissions(&journal, fs::Permissions::from_mode(0o600)).unwrap();

    let (_, report) = doctor(&sb, "claude-code");
    let (status, detail, _) = firing(&report);
    assert_eq!(status, "ok", "{report}");
    assert!(!detail.chars().any(char::is_control), "{detail:?}");
    assert!(detail.contains(r"\u{1b}]0;owned"), "{detail:?}");
    let out = sb.cli(&["doctor", "claude-code"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("firing"), "{text}");
    assert!(
        !text.chars().any(|c| c.is_control() && c != '\n'),
        "doctor printed a control character: {text:?}"
    );
}

/// Doctor shows the URL and token the official CLI saved as their origin, and warns when another
/// source names a different Server or when the saved token cannot be used.
#[test]
fn doctor_shows_the_official_sources_and_warns_when_they_disagree() {
    use std::os::unix::fs::PermissionsExt;
    let server = RealServer::shared_auth();
    let sb = Sandbox::new();
    let clients = sb.home().join(".config/powercontext/clients.json");
    fs::create_dir_all(clients.parent().unwrap()).unwrap();
    fs::write(
        &clients,
        serde_json::json!({"version": 1, "hosts": {"pi": {"server_url": server.url(), "allow_insecure_http": false}}})
            .to_string(),
    )
    .unwrap();
    let cred = sb.home().join(".pi/agent/powercontext/credentials.json");
    fs::create_dir_all(cred.parent().unwrap()).unwrap();
    fs::write(
        &cred,
        serde_json::json!({"version": 1, "server_url": server.url(),
                           "authorization": format!("Bearer {}", RealServer::TEST_TOKEN)})
        .to_string(),
    )
    .unwrap();
    fs::set_permissions(&cred, fs::Permissions::from_mode(0o600)).unwrap();

    let (_, report) = doctor(&sb, "pi");
    assert!(!report.to_string().contains(RealServer::TEST_TOKEN));
    let setting = |name: &str| {
        report["hosts"][0]["settings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .unwrap()["origin"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    assert!(setting("server_url").contains("clients.json"), "{report}");
    assert!(setting("authorization").contains("credentials.json"), "{report}");
    assert_eq!(check(&report, "auth accepted").0, "ok", "{report}");
    assert_eq!(check(&report, "url sources agree").0, "ok", "{report}");

    // Our config file points elsewhere: it wins, and doctor says who disagrees.
    fs::create_dir_all(sb.config().parent().unwrap()).unwrap();
    fs::write(
        sb.config(),
        format!("[hosts.pi]\nserver_url = \"{}\"\n", closed_port_url()),
    )
    .unwrap();
    let (_, report) = doctor(&sb, "pi");
    let (status, _) = check(&report, "url sources agree");
    assert_eq!(status, "warn", "{report}");
    assert!(report.to_string().contains("clients.json"), "{report}");
    fs::remove_file(sb.config()).unwrap();

    // A saved token readable by the group is not used, and doctor says why.
    fs::set_permissions(&cred, fs::Permissions::from_mode(0o644)).unwrap();
    let (_, report) = doctor(&sb, "pi");
    assert_eq!(check(&report, "saved token").0, "warn", "{report}");
    assert_eq!(check(&report, "auth accepted").0, "fail", "{report}");
}

#[test]
fn host_cli_output_reaches_the_terminal_escaped() {
    let sb = Sandbox::new();
    // A host CLI whose version line carries an escape sequence (a title change and a bell).
    let fake = sb.home().join("claude");
    fs::write(
        &fake,
        "#!/bin/sh\nprintf '2.1.0\\033]0;pwned\\007 (Claude Code)\\n'\n",
    )
    .unwrap();
    fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = sb.cli(&["doctor", "claude-code", "--host-cli", fake.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("host version"), "{text}");
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "a raw control character reached the terminal: {text:?}"
    );
    assert!(text.contains("\\u{1b}]0;pwned"), "{text}");
}

/// Claude Code and Codex do their explicit operations through the Server's MCP tools: doctor
/// checks that MCP `initialize` is accepted with the token the host's headers helper sends, and
/// is red when the MCP endpoint rejects it (even if the REST API accepts it). Pi, OpenCode and
/// DSH have native tools and no such check.
#[test]
fn mcp_hosts_doctor_checks_the_servers_mcp_with_the_token() {
    use powercontext_hooks_test_support::fault_server::{FaultServer, Reply};
    let server = RealServer::shared_auth();
    let mut sb = Sandbox::new();
    seed_foreign(&sb);
    sb.env
        .insert("PC_TEST_TOKEN".into(), RealServer::TEST_TOKEN.into());
    setup(&sb, "claude-code", &server.url(), true);
    let (code, report) = doctor(&sb, "claude-code");
    assert_eq!(code, 0, "{report}");
    assert_eq!(check(&report, "mcp connects").0, "ok", "{report}");

    // A front that passes everything to the Server but refuses the token on /mcp/.
    let front = FaultServer::start(move |req| {
        if req.path.starts_with("/mcp") {
            return Reply::json(401, &serde_json::json!({"error": "unauthorized"}));
        }
        let body = req.json();
        let (status, v) = server.request(&req.method, &req.path, body.as_ref());
        Reply::json(status, &v)
    });
    sb.env.insert(
        "POWERCONTEXT_CLAUDE_SERVER_URL".into(),
        front.url().trim_end_matches('/').to_owned(),
    );
    let (code, report) = doctor(&sb, "claude-code");
    assert_eq!(code, 1, "{report}");
    assert_eq!(check(&report, "auth accepted").0, "ok", "{report}");
    let (status, fix) = check(&report, "mcp connects");
    assert_eq!(status, "fail", "{report}");
    assert!(fix.contains("--token-env"), "{fix}");
    assert!(!report.to_string().contains(RealServer::TEST_TOKEN));
}

/// Copilot CLI also accepts camelCase event names (`userPromptSubmitted`), but hands such a hook
/// a camelCase payload ours skips: doctor names that install instead of calling it ours.
#[test]
fn copilot_doctor_names_our_hook_under_a_camel_case_event() {
    let mut sb = Sandbox::new();
    let path = format!("{}:{}", host_bin("copilot-cli").display(), sb.env["PATH"]);
    sb.env.insert("PATH".into(), path);
    let dir = sb.home().join(".copilot");
    std::fs::create_dir_all(&dir).unwrap();
    let hook = crate::support::COPILOT;
    let settings = serde_json::json!({"hooks": {
        "userPromptSubmitted": [{"type": "command", "bash": hook, "timeoutSec": 10}],
    }});
    std::fs::write(dir.join("settings.json"), settings.to_string()).unwrap();
    let (code, report, _) = sb.cli_json(&["doctor", "copilot-cli"]);
    assert_ne!(code, 0, "{report}");
    let check = report["hosts"][0]["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["check"] == "hooks in settings")
        .cloned()
        .unwrap_or_else(|| panic!("no hooks-in-settings line: {report}"));
    assert_eq!(check["status"], "fail", "{check}");
    let detail = check.to_string();
    assert!(detail.contains("UserPromptSubmit"), "{check}");
    assert!(detail.contains("`userPromptSubmitted`"), "{check}");
}
