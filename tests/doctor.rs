//! `powercontext-hooks doctor` after a real `setup` (real host CLIs, the real pinned Server): green
//! when everything works, and red with the right fix when the Server is down, the token is wrong,
//! the Codex hook is untrusted, or the plugin was removed behind our back. Doctor is evidence for
//! users, never a substitute for the real-host E2E tests.

use std::fs;

use powercontext_hooks_test_support::fault_server::closed_port_url;
use powercontext_hooks_test_support::real_server::RealServer;
use serde_json::Value;

use crate::setup::{Sandbox, TOKEN, seed_foreign};

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
}
