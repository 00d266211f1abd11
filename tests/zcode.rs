//! ZCode at contract level (it cannot be installed here: a source build or a desktop app): our
//! `setup zcode`, `doctor zcode` and `uninstall zcode` in a throwaway HOME, the hook
//! run the way ZCode's `hooks.json` process hooks run it (command, no shell, the payload on
//! stdin), and the real Server. Nothing here is evidence that a real ZCode loads the plugin.

use std::process::{Command, Stdio};

use powercontext_hooks_test_support::real_server::RealServer;
use serde_json::{Value, json};

use crate::support::Sandbox;

/// The user's ZCode config: a comment, their own plugin folder and another setting.
const FOREIGN_CONFIG: &str = "{\n  // mine\n  \"plugins\": {\"enabled\": true, \"dirs\": [\"/opt/their-plugin\"]},\n  \"theme\": \"dark\"\n}\n";

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["hosts"][0]["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no {name} line: {report}"))
}

#[test]
fn zcode_setup_registers_process_hooks_doctor_checks_them_and_uninstall_gives_the_config_back() {
    let mut sb = Sandbox::new();
    let server = RealServer::shared();
    let scope = server.create_scope("zcode contract");
    server.remember(
        &scope,
        "The wren3 billing job writes its ledger to the basalt-otter-12 bucket.",
    );
    for (k, v) in [
        ("POWERCONTEXT_ZCODE_SCOPE_ID", scope.as_str()),
        ("POWERCONTEXT_ZCODE_REQUEST_TIMEOUT_SECONDS", "8"),
        ("POWERCONTEXT_ZCODE_HTTP_BUDGET_SECONDS", "12"),
    ] {
        sb.env.insert(k.into(), v.into());
    }
    let config = sb.home().join(".zcode/cli/config.json");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, FOREIGN_CONFIG).unwrap();

    let (code, out, err) = sb.cli_json(&["setup", "zcode", "--server-url", &server.url()]);
    assert_eq!(code, 0, "setup: {out}\n{err}");
    assert!(
        format!("{out}{err}").contains("Not validated in a real host"),
        "setup must say ZCode is not validated: {out}\n{err}"
    );
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.starts_with("{\n  // mine\n"), "{text}");
    let parsed: Value = serde_json::from_str(&text.replace("  // mine\n", "")).unwrap();
    let dirs = parsed["plugins"]["dirs"].as_array().unwrap().clone();
    assert_eq!(dirs.len(), 2, "{text}");
    assert_eq!(dirs[0], "/opt/their-plugin");
    let plugin = std::path::PathBuf::from(dirs[1].as_str().unwrap());
    assert!(plugin.join(".zcode-plugin/plugin.json").is_file());
    let hooks: Value =
        serde_json::from_slice(&std::fs::read(plugin.join("hooks/hooks.json")).unwrap()).unwrap();
    let events: Vec<&String> = hooks["hooks"].as_object().unwrap().keys().collect();
    assert_eq!(events, ["SessionStart", "Stop", "UserPromptSubmit"]);
    let entry = &hooks["hooks"]["UserPromptSubmit"][0]["hooks"][0];
    assert_eq!(entry["type"], "process", "{entry}");
    assert_eq!(entry["args"], json!([]), "{entry}");
    // Milliseconds: a seconds-sized 10 would kill every run.
    assert_eq!(entry["timeoutMs"], 10_000, "{entry}");
    let (code, again, _) = sb.cli_json(&["setup", "zcode", "--server-url", &server.url()]);
    assert_eq!(
        (code, again["result"].clone()),
        (0, json!("unchanged")),
        "{again}"
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), text);

    // The hook as ZCode runs a process hook: its command, no shell, ZCode's camelCase payload.
    let exe = entry["command"].as_str().unwrap();
    let mut child = Command::new(exe)
        .env_clear()
        .envs(&sb.env)
        .current_dir(sb.project())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let payload = json!({"hookEventName": "UserPromptSubmit", "sessionId": "zc-1", "turnId": "t-1",
                         "cwd": sb.project(), "prompt": "Where does the wren3 billing job write its ledger?"});
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), payload.to_string().as_bytes()).unwrap();
    let run = child.wait_with_output().unwrap();
    assert!(run.status.success());
    let line: Value = serde_json::from_slice(&run.stdout)
        .unwrap_or_else(|_| panic!("one JSON line: {}", String::from_utf8_lossy(&run.stderr)));
    assert_eq!(line["hookSpecificOutput"]["hookEventName"], "UserPromptSubmit");
    let context = line["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(context.contains("basalt-otter-12"), "{context}");

    let (_, report, _) = sb.cli_json(&["doctor", "zcode"]);
    for name in ["plugin listed", "hooks file", "hook round trip"] {
        assert_eq!(check(&report, name)["status"], "ok", "{name}: {report}");
    }
    let version = check(&report, "host version");
    assert_eq!(version["status"], "warn", "{version}");
    assert!(
        version.to_string().contains("Not validated in a real host"),
        "{version}"
    );

    let (code, out, _) = sb.cli_json(&["uninstall", "zcode"]);
    assert_eq!(code, 0, "uninstall: {out}");
    assert_eq!(std::fs::read_to_string(&config).unwrap(), FOREIGN_CONFIG);
    assert!(!plugin.exists(), "our plugin folder is left behind");
}
