//! `powercontext-hooks setup` / `uninstall` against the real, pinned Claude Code, Codex, Pi,
//! OpenCode and DSH CLIs in throwaway HOME directories: fresh install, idempotent re-run, foreign
//! settings preserved, refusal on a foreign same-name file, byte-exact rollback, uninstall of only
//! what we own.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

use crate::support::{
    CLAUDE_SETTINGS, CLI, CODEX_CONFIG, OPENCODE_CONFIG, OPENCODE_FOREIGN_PLUGIN, OUR_CONFIG, PI_SETTINGS,
    Sandbox, TOKEN, host_bin, seed_foreign, seed_foreign_packages,
};

fn setup_args<'a>(host: &'a str, url: &'a str) -> Vec<&'a str> {
    vec![
        "setup",
        host,
        "--server-url",
        url,
        "--token-env",
        "PC_TEST_TOKEN",
        "--capture-prompts",
        "off",
    ]
}

fn plugin_listed(sb: &Sandbox, host: &str) -> bool {
    let out = match host {
        "claude-code" => sb.host("claude", &["plugin", "list", "--json"]),
        _ => sb.host("codex", &["plugin", "list", "--json"]),
    };
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let list = if host == "codex" {
        v["installed"].clone()
    } else {
        v
    };
    list.as_array().unwrap().iter().any(|p| {
        (p["id"] == "powercontext@powercontext" || p["pluginId"] == "powercontext@powercontext")
            && p["enabled"] == true
    })
}

fn assert_foreign_host_settings_kept(sb: &Sandbox, host: &str) {
    if host == "claude-code" {
        let now: Value =
            serde_json::from_slice(&fs::read(sb.home().join(".claude/settings.json")).unwrap()).unwrap();
        let was: Value = serde_json::from_str(CLAUDE_SETTINGS).unwrap();
        for key in ["model", "env", "hooks"] {
            assert_eq!(now[key], was[key], "Claude settings key {key} changed");
        }
    } else {
        let now = fs::read_to_string(sb.home().join(".codex/config.toml")).unwrap();
        assert!(
            now.starts_with(CODEX_CONFIG),
            "Codex config lost foreign content:\n{now}"
        );
    }
}

/// `uninstall --json` lists what it did as objects a script can read without parsing text, in
/// the shape of setup's file actions: the manifest removed, our `[hosts.<host>]` lines edited
/// out of the config file, and each host CLI call as the command it ran.
fn assert_uninstall_report(sb: &Sandbox, host: &str, out: &Value) {
    let actions = out["actions"].as_array().unwrap();
    let has = |want: &Value| actions.iter().any(|a| a == want);
    let manifest = sb.plugin_dir(host).parent().unwrap().join("manifest.json");
    assert!(
        has(&json!({"action": "remove", "path": manifest})),
        "{manifest:?} in {out}"
    );
    assert!(
        has(&json!({"action": "edit", "path": sb.config(), "what": format!("[hosts.{host}]")})),
        "{out}"
    );
    for a in actions {
        let keys: Vec<&str> = a.as_object().unwrap().keys().map(String::as_str).collect();
        match a["action"].as_str().unwrap() {
            "run" => assert_eq!(keys, ["action", "command"], "{a}"),
            "remove" | "edit" | "tidy" | "restore" => assert!(a["path"].is_string(), "{a}"),
            other => panic!("unknown action {other}: {a}"),
        }
    }
    assert!(out["kept"].as_array().unwrap().is_empty(), "{out}");
}

fn install_round_trip(host: &str) {
    let sb = Sandbox::new();
    seed_foreign(&sb);
    let url = "http://127.0.0.1:9";

    // Dry run: the plan, and nothing written.
    let before = sb.tree();
    let mut dry = setup_args(host, url);
    dry.push("--dry-run");
    let (code, plan, _) = sb.cli_json(&dry);
    assert_eq!(code, 0, "{plan}");
    assert_eq!(plan["result"], "planned");
    assert_eq!(plan["files"].as_array().unwrap().len(), 4);
    assert!(!plan["commands"].as_array().unwrap().is_empty());
    assert_eq!(sb.tree(), before, "--dry-run changed files");
    // The plan names what it writes for this host, and a fresh home has no old token file.
    let plan_text = plan.to_string();
    assert!(
        plan_text.contains(&format!("hosts.{host} (for the official CLI)")),
        "{plan}"
    );
    assert!(
        !plan_text.contains("<host>") && !plan_text.contains("old file is kept"),
        "{plan}"
    );

    // Fresh install.
    let (code, out, err) = sb.cli_json(&setup_args(host, url));
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(out["result"], "installed", "{out}");
    assert!(plugin_listed(&sb, host), "{host} does not list our plugin");
    let hooks = fs::read_to_string(sb.plugin_dir(host).join("hooks/hooks.json")).unwrap();
    // The host runs setup's own copy of the hook executable beside our CLI.
    let exe = sb
        .plugin_dir(host)
        .parent()
        .unwrap()
        .join(format!("bin/powercontext-hook-{host}"));
    assert!(hooks.contains(&exe.display().to_string()), "{hooks}");
    let built = Path::new(CLI)
        .parent()
        .unwrap()
        .join(format!("powercontext-hook-{host}"));
    assert_eq!(fs::read(&exe).unwrap(), fs::read(&built).unwrap());
    let config = fs::read_to_string(sb.config()).unwrap();
    assert!(
        config.starts_with(OUR_CONFIG),
        "our config lost the user's lines:\n{config}"
    );
    assert!(config.contains(&format!(
        "[hosts.{host}]\nserver_url = \"{url}\"\ncapture_prompts = false\n"
    )));
    assert!(config.contains(&format!("authorization = \"Bearer {TOKEN}\"")));
    assert_eq!(
        fs::metadata(sb.config()).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_foreign_host_settings_kept(&sb, host);

    // Re-run: says so, changes nothing.
    let installed = sb.tree();
    let (code, out, _) = sb.cli_json(&setup_args(host, url));
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["result"], "unchanged", "{out}");
    assert!(out["commands"].as_array().unwrap().is_empty(), "{out}");
    assert_eq!(sb.tree(), installed, "a re-run changed files");

    // Uninstall: ours gone, theirs intact.
    let (code, out, _) = sb.cli_json(&["uninstall", host]);
    assert_eq!(code, 0, "{out}");
    assert_uninstall_report(&sb, host, &out);
    assert!(!plugin_listed(&sb, host), "{host} still lists our plugin");
    assert!(!sb.plugin_dir(host).exists());
    assert_eq!(fs::read_to_string(sb.config()).unwrap(), OUR_CONFIG);
    assert_foreign_host_settings_kept(&sb, host);
    if host == "codex" {
        let now = fs::read_to_string(sb.home().join(".codex/config.toml")).unwrap();
        assert!(
            !now.contains("[plugins.\"powercontext@powercontext\"]")
                && !now.contains("[marketplaces.powercontext]"),
            "{now}"
        );
    }
    let (_, again, _) = sb.cli_json(&["uninstall", host]);
    assert_eq!(again["actions"].as_array().unwrap().len(), 0, "{again}");
}

#[test]
fn claude_code_install_rerun_uninstall() {
    install_round_trip("claude-code");
}

#[test]
fn codex_install_rerun_uninstall() {
    install_round_trip("codex");
}

fn rollback_after_registration(host: &str) {
    let sb = Sandbox::new();
    seed_foreign(&sb);
    let before = sb.tree();
    let mut sb_env = sb;
    sb_env
        .env
        .insert("POWERCONTEXT_HOOKS_SETUP_FAULT".into(), "verify".into());
    let (code, out, _) = sb_env.cli_json(&setup_args(host, "http://127.0.0.1:9"));
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["result"], "rolled_back", "{out}");
    assert!(out["error"].as_str().unwrap().contains("rolled back"), "{out}");
    let after = sb_env.tree();
    let diff: Vec<&String> = before
        .keys()
        .chain(after.keys())
        .filter(|k| before.get(*k) != after.get(*k))
        .collect();
    assert!(diff.is_empty(), "rollback was not byte-exact for: {diff:?}");
    sb_env.env.remove("POWERCONTEXT_HOOKS_SETUP_FAULT");
    assert!(!plugin_listed(&sb_env, host));
}

#[test]
fn claude_code_failure_after_registration_rolls_back_byte_exact() {
    rollback_after_registration("claude-code");
}

#[test]
fn codex_failure_after_trust_rolls_back_byte_exact() {
    rollback_after_registration("codex");
}

#[test]
fn claude_rejecting_its_own_settings_mid_install_rolls_back_its_half_registration() {
    // Claude Code cannot parse a settings.json with comments: `marketplace add` then fails after
    // it already recorded the marketplace in known_marketplaces.json.
    let sb = Sandbox::new();
    fs::write(
        sb.home().join(".claude/settings.json"),
        "{\n  // mine\n  \"model\": \"m\"\n}\n",
    )
    .unwrap();
    let before = sb.tree();
    let (code, out, _) = sb.cli_json(&setup_args("claude-code", "http://127.0.0.1:9"));
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["result"], "rolled_back", "{out}");
    assert_eq!(sb.tree(), before, "rollback was not byte-exact");
}

#[test]
fn a_foreign_same_name_file_is_refused_before_any_write() {
    let sb = Sandbox::new();
    seed_foreign(&sb);
    let hooks = sb.plugin_dir("codex").join("hooks/hooks.json");
    fs::create_dir_all(hooks.parent().unwrap()).unwrap();
    fs::write(&hooks, "{\"hooks\": {}}\n").unwrap();
    let before = sb.tree();
    let (code, out, _) = sb.cli_json(&setup_args("codex", "http://127.0.0.1:9"));
    assert_eq!(code, 1, "{out}");
    let error = out["error"].as_str().unwrap();
    assert!(
        error.contains("refusing") && error.contains("hooks.json"),
        "{error}"
    );
    assert_eq!(sb.tree(), before);
}

#[test]
fn invalid_inputs_fail_before_any_write_without_echoing_values() {
    let sb = Sandbox::new();
    seed_foreign(&sb);
    let before = sb.tree();
    let cases: &[&[&str]] = &[
        &["setup", "codex", "--server-url", "http://secret-host.example:1"],
        &["setup", "codex", "--token-env", "PC_MISSING"],
        &["setup", "claude-code", "--token-env", "PC_BAD_TOKEN"],
        &["setup", "claude-code", "--bin-dir", "/nonexistent"],
        &["setup", "dsh", "--profile", "../secret"],
        &["setup", "pi", "--profile", "web"],
        &["setup", "nosuchhost"],
    ];
    let mut sb = sb;
    sb.env
        .insert("PC_BAD_TOKEN".into(), "two words-setup-secret".into());
    for args in cases {
        let (code, out, _) = sb.cli_json(args);
        // A wrong command line exits 2 (clap's usage error), a refused one 1.
        let want = if args[1] == "nosuchhost" { 2 } else { 1 };
        assert_eq!(code, want, "{args:?}: {out}");
        let text = out.to_string();
        assert!(!text.contains("secret"), "a value was echoed: {text}");
    }
    assert_eq!(sb.tree(), before);
}

// ----- Pi, OpenCode, DSH -----

/// Whether the host itself has our package registered.
pub fn package_registered(sb: &Sandbox, host: &str) -> bool {
    let dir = sb.plugin_dir(host);
    match host {
        "pi" => {
            let out = sb.run(&host_bin("pi").join("pi"), &["list"]);
            assert!(out.status.success());
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .any(|l| l.trim() == dir.display().to_string())
        }
        "dsh" => {
            let pkg: Value =
                serde_json::from_slice(&fs::read(sb.dsh_profile("web").join("package.json")).unwrap())
                    .unwrap();
            pkg["dependencies"]["powercontext-dsh"] == format!("link:{}", dir.display()).as_str()
        }
        _ => sb
            .opencode_config()
            .join("plugins/powercontext-opencode.js")
            .exists(),
    }
}

fn assert_foreign_package_settings_kept(sb: &Sandbox, host: &str) {
    match host {
        "pi" => {
            let now: Value =
                serde_json::from_slice(&fs::read(sb.home().join(".pi/agent/settings.json")).unwrap())
                    .unwrap();
            assert_eq!(now["theme"], "dark", "{now}");
            assert!(
                now["packages"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|p| p == "npm:foreign-pi-package"),
                "{now}"
            );
        }
        "opencode" => {
            let c = sb.opencode_config();
            assert_eq!(
                fs::read_to_string(c.join("plugins/mine.js")).unwrap(),
                OPENCODE_FOREIGN_PLUGIN
            );
            let text = fs::read_to_string(c.join("opencode.jsonc")).unwrap();
            for kept in [
                "// my OpenCode settings",
                "\"model\": \"fake/fake-model\", /* keep */",
                "\"mine\": {\"type\": \"local\", \"command\": [\"/usr/bin/true\"], \"enabled\": false}",
            ] {
                assert!(text.contains(kept), "lost {kept:?}:\n{text}");
            }
        }
        _ => {
            let pkg: Value =
                serde_json::from_slice(&fs::read(sb.dsh_profile("web").join("package.json")).unwrap())
                    .unwrap();
            assert!(pkg["dependencies"]["mine-dsh-plugin"].as_str().is_some(), "{pkg}");
        }
    }
}

fn package_round_trip(host: &str) {
    let mut sb = Sandbox::new();
    seed_foreign(&sb);
    seed_foreign_packages(&mut sb, host);
    let url = "http://127.0.0.1:9";

    let before = sb.tree();
    let mut dry = setup_args(host, url);
    dry.push("--dry-run");
    let (code, plan, _) = sb.cli_json(&dry);
    assert_eq!(code, 0, "{plan}");
    assert_eq!(plan["result"], "planned");
    assert_eq!(sb.tree(), before, "--dry-run changed files");

    let (code, out, err) = sb.cli_json(&setup_args(host, url));
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(out["result"], "installed", "{out}");
    assert!(package_registered(&sb, host), "{host} does not have our package");
    // The host runs setup's own copy of the hook executable beside our CLI.
    let exe = sb
        .plugin_dir(host)
        .parent()
        .unwrap()
        .join(format!("bin/powercontext-hook-{host}"));
    let shim = match host {
        "pi" => sb.plugin_dir("pi").join("extensions/powercontext.ts"),
        "dsh" => sb.plugin_dir("dsh").join("index.js"),
        _ => sb.opencode_config().join("plugins/powercontext-opencode.js"),
    };
    let shim = fs::read_to_string(shim).unwrap();
    assert!(shim.contains(&format!("\"{}\"", exe.display())), "{shim}");
    assert!(!shim.contains("{{"));
    if host == "opencode" {
        let text = fs::read_to_string(sb.opencode_config().join("opencode.jsonc")).unwrap();
        assert!(text.contains(&format!("\"url\": \"{url}/mcp\"")), "{text}");
    }
    if host == "dsh" {
        let out = sb.run(
            &host_bin("dsh").join("dsh"),
            &["--profile", "web", "--dump-config"],
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains("id: powercontext-dsh"));
    }
    let config = fs::read_to_string(sb.config()).unwrap();
    assert!(config.starts_with(OUR_CONFIG), "{config}");
    // The user's own `[hosts.pi] scope_id` stays first in its table.
    let mine = if host == "pi" { "scope_id = \"mine\"\n" } else { "" };
    assert!(
        config.contains(&format!(
            "[hosts.{host}]\n{mine}server_url = \"{url}\"\ncapture_prompts = false\n"
        )),
        "{config}"
    );
    assert_foreign_package_settings_kept(&sb, host);

    let installed = sb.tree();
    let (code, out, _) = sb.cli_json(&setup_args(host, url));
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["result"], "unchanged", "{out}");
    assert!(out["commands"].as_array().unwrap().is_empty(), "{out}");
    assert_eq!(sb.tree(), installed, "a re-run changed files");

    let (code, out, _) = sb.cli_json(&["uninstall", host]);
    assert_eq!(code, 0, "{out}");
    assert_uninstall_report(&sb, host, &out);
    assert!(!package_registered(&sb, host), "{host} still has our package");
    assert_eq!(fs::read_to_string(sb.config()).unwrap(), OUR_CONFIG);
    assert_foreign_package_settings_kept(&sb, host);
    match host {
        "opencode" => assert_eq!(
            fs::read_to_string(sb.opencode_config().join("opencode.jsonc")).unwrap(),
            OPENCODE_CONFIG,
            "uninstall did not restore OpenCode's config byte for byte"
        ),
        "dsh" => {
            assert!(!sb.plugin_dir(host).exists());
            let link = sb.dsh_profile("web").join("node_modules/powercontext-dsh");
            assert!(fs::symlink_metadata(link).is_err(), "a dangling link was left");
        }
        _ => assert!(!sb.plugin_dir(host).exists()),
    }
    let (_, again, _) = sb.cli_json(&["uninstall", host]);
    assert_eq!(again["actions"].as_array().unwrap().len(), 0, "{again}");
}

#[test]
fn pi_install_rerun_uninstall() {
    package_round_trip("pi");
}

#[test]
fn opencode_install_rerun_uninstall() {
    package_round_trip("opencode");
}

#[test]
fn dsh_install_rerun_uninstall() {
    package_round_trip("dsh");
}

#[test]
fn a_pi_settings_file_pi_cannot_parse_stops_setup_before_pi_runs_and_doctor_names_it() {
    let mut sb = Sandbox::new();
    seed_foreign_packages(&mut sb, "pi");
    let settings = sb.home().join(".pi/agent/settings.json");
    // Pi skips a settings file it cannot parse and `pi install` still exits 0.
    let broken = "{\n  \"packages\": [\"npm:foreign-pi-package\", ]\n}\n";
    fs::write(&settings, broken).unwrap();
    let before = sb.tree();
    let (code, out, _) = sb.cli_json(&setup_args("pi", "http://127.0.0.1:9"));
    assert_eq!(code, 1, "{out}");
    let error = out["error"].as_str().unwrap();
    assert!(
        error.contains(&settings.display().to_string()) && error.contains("not valid JSON"),
        "{out}"
    );
    assert_eq!(sb.tree(), before, "setup wrote something");

    // Broken after setup: doctor names the file, not a removed package.
    fs::write(&settings, PI_SETTINGS).unwrap();
    let (code, out, _) = sb.cli_json(&setup_args("pi", "http://127.0.0.1:9"));
    assert_eq!(code, 0, "{out}");
    let now = fs::read_to_string(&settings).unwrap();
    fs::write(&settings, now.replace(']', ",]")).unwrap();
    let (code, report, _) = sb.cli_json(&["doctor", "pi"]);
    assert_eq!(code, 1, "{report}");
    let line = report["hosts"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "package listed")
        .cloned()
        .unwrap();
    assert_eq!(line["status"], "fail", "{line}");
    assert!(
        line["detail"].as_str().unwrap().contains("not valid JSON"),
        "{line}"
    );
}

/// A failure after the host registration (and, for OpenCode, after its config edit) rolls every
/// byte back, including what `pi install` / `dsh plugin add` wrote.
fn package_rollback(host: &str, fault: &str) {
    let mut sb = Sandbox::new();
    seed_foreign(&sb);
    seed_foreign_packages(&mut sb, host);
    let before = sb.tree();
    sb.env
        .insert("POWERCONTEXT_HOOKS_SETUP_FAULT".into(), fault.into());
    let (code, out, _) = sb.cli_json(&setup_args(host, "http://127.0.0.1:9"));
    assert_eq!(code, 1, "{out}");
    assert_eq!(out["result"], "rolled_back", "{out}");
    let after = sb.tree();
    let diff: Vec<&String> = before
        .keys()
        .chain(after.keys())
        .filter(|k| before.get(*k) != after.get(*k))
        .collect();
    assert!(diff.is_empty(), "rollback was not byte-exact for: {diff:?}");
    sb.env.remove("POWERCONTEXT_HOOKS_SETUP_FAULT");
    assert!(!package_registered(&sb, host));
}

#[test]
fn pi_failure_after_install_rolls_back_byte_exact() {
    package_rollback("pi", "verify");
}

#[test]
fn opencode_failure_after_the_mcp_edit_rolls_back_byte_exact() {
    package_rollback("opencode", "mcp");
}

#[test]
fn dsh_failure_after_plugin_add_rolls_back_byte_exact() {
    package_rollback("dsh", "verify");
}

#[test]
fn foreign_same_name_files_and_entries_are_refused_before_any_write() {
    let mut sb = Sandbox::new();
    seed_foreign(&sb);
    seed_foreign_packages(&mut sb, "opencode");
    seed_foreign_packages(&mut sb, "pi");
    sb.use_node22();
    let cases: Vec<(&str, PathBuf, &str)> = vec![
        (
            "pi",
            sb.plugin_dir("pi").join("extensions/powercontext.ts"),
            "powercontext.ts",
        ),
        ("dsh", sb.plugin_dir("dsh").join("index.js"), "index.js"),
        (
            "opencode",
            sb.opencode_config().join("plugins/powercontext-opencode.js"),
            "powercontext-opencode.js",
        ),
    ];
    for (host, path, name) in &cases {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, "// mine\n").unwrap();
        let before = sb.tree();
        let (code, out, _) = sb.cli_json(&setup_args(host, "http://127.0.0.1:9"));
        assert_eq!(code, 1, "{out}");
        let error = out["error"].as_str().unwrap();
        assert!(error.contains("refusing") && error.contains(name), "{error}");
        assert_eq!(sb.tree(), before, "{host}");
        fs::remove_file(path).unwrap();
    }
    // Someone else's `mcp.powercontext` in OpenCode's config.
    let cfg = sb.opencode_config().join("opencode.jsonc");
    let theirs = OPENCODE_CONFIG.replace("\"mine\":", "\"powercontext\":");
    fs::write(&cfg, &theirs).unwrap();
    let before = sb.tree();
    let (code, out, _) = sb.cli_json(&setup_args("opencode", "http://127.0.0.1:9"));
    assert_eq!(code, 1, "{out}");
    assert!(
        out["error"].as_str().unwrap().contains("mcp.powercontext"),
        "{out}"
    );
    assert_eq!(sb.tree(), before);
}

/// The `statusLine` member of Claude Code's settings in the sandbox.
fn claude_statusline(sb: &Sandbox) -> Option<Value> {
    let v: Value =
        serde_json::from_slice(&fs::read(sb.home().join(".claude/settings.json")).unwrap()).unwrap();
    v.get("statusLine").cloned()
}

#[test]
fn claude_code_statusline_is_opt_in_runs_our_cli_and_uninstalls_cleanly() {
    let sb = Sandbox::new();
    seed_foreign(&sb);
    let url = "http://127.0.0.1:9";

    // Without the flag: no status line.
    let (code, out, err) = sb.cli_json(&setup_args("claude-code", url));
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(claude_statusline(&sb), None);

    // Opt in: our CLI's `statusline` command, and the user's settings intact.
    let mut args = setup_args("claude-code", url);
    args.push("--statusline");
    let (code, out, err) = sb.cli_json(&args);
    assert_eq!(code, 0, "{out}\n{err}");
    assert_eq!(out["host_config"]["key"], "statusLine", "{out}");
    let line = claude_statusline(&sb).expect("statusLine installed");
    assert_eq!(line["type"], "command");
    let command = line["command"].as_str().unwrap();
    assert_eq!(command, format!("{CLI} statusline"));
    assert_foreign_host_settings_kept(&sb, "claude-code");
    // The command itself answers one line from the (empty) journal, exit 0.
    let run = Command::new("sh")
        .args(["-c", command])
        .env_clear()
        .envs(&sb.env)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(run.status.success());
    assert_eq!(
        String::from_utf8_lossy(&run.stdout),
        "PC · no prompt hook run yet\n"
    );

    // A plain re-run keeps it and changes nothing.
    let installed = sb.tree();
    let (code, out, _) = sb.cli_json(&setup_args("claude-code", url));
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["result"], "unchanged", "{out}");
    assert_eq!(sb.tree(), installed);

    // Uninstall removes ours; the rest of the settings is as the user had it.
    let (code, out, _) = sb.cli_json(&["uninstall", "claude-code"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(claude_statusline(&sb), None);
    assert_foreign_host_settings_kept(&sb, "claude-code");
}

#[test]
fn claude_code_statusline_never_replaces_the_users_own() {
    let sb = Sandbox::new();
    let theirs = "{\n  \"model\": \"my-model\",\n  \"statusLine\": {\"type\": \"command\", \"command\": \"~/.claude/my-line.sh\"}\n}\n";
    fs::write(sb.home().join(".claude/settings.json"), theirs).unwrap();
    let mut args = setup_args("claude-code", "http://127.0.0.1:9");
    args.push("--statusline");
    let (code, out, err) = sb.cli_json(&args);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("already has a status line")),
        "{out}"
    );
    assert_eq!(out["host_config"], Value::Null, "{out}");
    let was: Value = serde_json::from_str(theirs).unwrap();
    assert_eq!(claude_statusline(&sb), Some(was["statusLine"].clone()));
    let (code, out, _) = sb.cli_json(&["uninstall", "claude-code"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(claude_statusline(&sb), Some(was["statusLine"].clone()));
}

#[test]
fn setup_refuses_fifos_devices_and_huge_files_without_reading_them() {
    let sb = Sandbox::new();
    let fifo = sb.project().join("token.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    for token_file in ["/dev/zero", fifo.to_str().unwrap()] {
        let args = [
            "setup",
            "claude-code",
            "--dry-run",
            "--server-url",
            "http://127.0.0.1:9",
            "--token-file",
            token_file,
        ];
        let (code, out, _) = sb.cli_json(&args);
        assert_eq!(code, 1, "{out}");
        assert!(
            out["error"].as_str().unwrap().contains("not a regular file"),
            "{out}"
        );
    }
    // Claude Code's settings turned into a FIFO, then into a huge file: named, never read.
    let dry_run = || {
        sb.cli_json(&[
            "setup",
            "claude-code",
            "--dry-run",
            "--server-url",
            "http://127.0.0.1:9",
        ])
    };
    let settings = sb.home().join(".claude/settings.json");
    fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let _ = fs::remove_file(&settings);
    assert!(Command::new("mkfifo").arg(&settings).status().unwrap().success());
    let (code, out, _) = dry_run();
    assert_eq!(code, 1, "{out}");
    let error = out["error"].as_str().unwrap();
    assert!(
        error.contains("settings.json") && error.contains("not a regular file"),
        "{out}"
    );
    fs::remove_file(&settings).unwrap();
    let big = fs::File::create(&settings).unwrap();
    big.set_len(3 * 1024 * 1024 * 1024).unwrap();
    let (code, out, _) = dry_run();
    assert_eq!(code, 1, "{out}");
    assert!(out["error"].as_str().unwrap().contains("larger than"), "{out}");
}

#[test]
fn uninstall_removes_the_config_file_setup_created_once_it_is_empty_again() {
    let sb = Sandbox::new();
    assert!(!sb.config().exists());
    // Created by one host's setup, shared by another's: it goes with the last uninstall.
    for host in ["claude-code", "codex"] {
        let (code, out, err) = sb.cli_json(&setup_args(host, "http://127.0.0.1:9"));
        assert_eq!(code, 0, "{out}\n{err}");
        assert!(sb.config().exists());
    }
    let (code, out, err) = sb.cli_json(&["uninstall", "claude-code"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(sb.config().exists(), "codex still uses it");
    let (code, out, err) = sb.cli_json(&["uninstall", "codex"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(!sb.config().exists(), "an empty config file was left behind");
}

/// Every file under a directory with its bytes, nothing left out.
fn every_file(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), fs::read(&p).unwrap_or_default()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_claude_code_dry_run_leaves_even_claudes_own_files_alone() {
    let mut sb = Sandbox::new();
    seed_foreign(&sb);
    // A user's environment: Claude's telemetry on, and Claude has run before.
    sb.env.remove("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC");
    sb.env.remove("DISABLE_TELEMETRY");
    assert!(sb.host("claude", &["plugin", "list"]).status.success());
    let before = every_file(&sb.home());
    let mut dry = setup_args("claude-code", "http://127.0.0.1:9");
    dry.push("--dry-run");
    let (code, plan, _) = sb.cli_json(&dry);
    assert_eq!(code, 0, "{plan}");
    let after = every_file(&sb.home());
    let changed: Vec<_> = after
        .iter()
        .filter(|f| !before.contains(f))
        .map(|(p, _)| p.display().to_string())
        .collect();
    assert!(
        changed.is_empty(),
        "the dry run's host CLI calls wrote {changed:?}"
    );
}

/// Every folder under `root`, relative to it.
fn dirs_under(root: &Path) -> std::collections::BTreeSet<PathBuf> {
    fn walk(dir: &Path, root: &Path, out: &mut std::collections::BTreeSet<PathBuf>) {
        for e in fs::read_dir(dir).into_iter().flatten().flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                out.insert(e.path().strip_prefix(root).unwrap().to_path_buf());
                walk(&e.path(), root, out);
            }
        }
    }
    let mut out = std::collections::BTreeSet::new();
    walk(root, root, &mut out);
    out
}

/// The folders under `home` that are new since `before` and empty.
fn new_empty_dirs(home: &Path, before: &std::collections::BTreeSet<PathBuf>) -> Vec<PathBuf> {
    dirs_under(home)
        .difference(before)
        .filter(|d| fs::read_dir(home.join(d)).unwrap().next().is_none())
        .cloned()
        .collect()
}

/// A new user's setup then uninstall: no folder setup made for its own files is left behind
/// empty (our config folder, the official CLI's, the state directory, OpenCode's plugins folder),
/// and no folder that was there before is removed, even an empty one.
#[test]
fn uninstall_leaves_no_empty_folder_setup_made() {
    for host in ["claude-code", "pi", "opencode"] {
        let sb = Sandbox::new();
        // The user's own empty folder where setup writes: it was there, so it stays.
        fs::create_dir_all(sb.home().join(".config/powercontext")).unwrap();
        let before = dirs_under(&sb.home());
        let (code, out, err) = sb.cli_json(&setup_args(host, "http://127.0.0.1:9"));
        assert_eq!(code, 0, "{out}\n{err}");
        let made: Vec<PathBuf> = dirs_under(&sb.home()).difference(&before).cloned().collect();
        assert!(
            made.contains(&PathBuf::from(".config/powercontext-hooks")),
            "{host}: {made:?}"
        );
        let (code, out, _) = sb.cli_json(&["uninstall", host]);
        assert_eq!(code, 0, "{out}");
        let after = dirs_under(&sb.home());
        assert!(
            before.is_subset(&after),
            "{host}: uninstall removed folders that were there before: {:?}",
            before.difference(&after).collect::<Vec<_>>()
        );
        // What the host's own CLI made in its own folders while registering is the host's.
        let host_dirs: &[&str] = match host {
            "pi" => &[".pi"],
            // `opencode debug paths` makes OpenCode's XDG folders, its config folder included.
            "opencode" => &[
                ".local/share/opencode",
                ".cache/opencode",
                ".local/state/opencode",
                ".config/opencode",
            ],
            _ => &[".claude"],
        };
        let left = new_empty_dirs(&sb.home(), &before);
        assert!(
            left.iter().all(|d| host_dirs.iter().any(|h| d.starts_with(h))),
            "{host}: uninstall left empty folders setup made: {left:?}"
        );
        assert!(
            !sb.home().join(".local/state/powercontext-hooks").exists(),
            "{host}: the hooks never ran, so their state folder goes with its installs"
        );
        assert!(
            !sb.home().join(".config/opencode/plugins").exists(),
            "{host}: setup made OpenCode's plugins folder for our plugin"
        );
    }
}

/// Two hosts set up one after the other share the folders the first one made: uninstalled in
/// either order, the last one removes them.
#[test]
fn folders_shared_by_two_hosts_go_with_the_last_uninstall() {
    for order in [["claude-code", "pi"], ["pi", "claude-code"]] {
        let sb = Sandbox::new();
        let before = dirs_under(&sb.home());
        for host in ["claude-code", "pi"] {
            let (code, out, err) = sb.cli_json(&setup_args(host, "http://127.0.0.1:9"));
            assert_eq!(code, 0, "{out}\n{err}");
        }
        let (code, out, _) = sb.cli_json(&["uninstall", order[0]]);
        assert_eq!(code, 0, "{out}");
        assert!(
            sb.config().exists(),
            "{order:?}: the other host still uses the config file"
        );
        let (code, out, _) = sb.cli_json(&["uninstall", order[1]]);
        assert_eq!(code, 0, "{out}");
        for ours in [".config/powercontext-hooks", ".local/state/powercontext-hooks"] {
            assert!(
                !sb.home().join(ours).exists(),
                "{order:?}: {ours} left: {:?}",
                new_empty_dirs(&sb.home(), &before)
            );
        }
    }
}
