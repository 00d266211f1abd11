//! WorkBuddy at contract level (Not validated in a real host: it is a desktop app that cannot run
//! here). What can be proven without it is: our setup, doctor and uninstall on its settings file;
//! the official installer taking our `package` tree; and the hook command each of them wires in,
//! run the way WorkBuddy runs a Claude-compatible `UserPromptSubmit` command hook (`sh -c`, the
//! event on stdin), answering with the recalled context and storing the prompt.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use powercontext_hooks_test_support::real_server::RealServer;
use serde_json::{Value, json};

use crate::support::Sandbox;

/// The user's own WorkBuddy settings, with a hook of theirs on the event we use.
const FOREIGN: &str = "{\n  \"theme\": \"dark\",\n  \"hooks\": {\n    \"UserPromptSubmit\": [\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"/usr/bin/true mine\", \"timeout\": 30}]}\n    ]\n  }\n}\n";

fn settings_path(sb: &Sandbox) -> std::path::PathBuf {
    sb.home().join(".workbuddy/settings.json")
}

/// The commands WorkBuddy would run on `UserPromptSubmit`, from its settings file.
fn prompt_commands(sb: &Sandbox) -> Vec<String> {
    let v: Value = serde_json::from_str(&fs::read_to_string(settings_path(sb)).unwrap()).unwrap();
    v["hooks"]["UserPromptSubmit"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["hooks"].as_array().cloned().unwrap_or_default())
        .filter_map(|h| h["command"].as_str().map(str::to_owned))
        .collect()
}

/// Runs `command` as WorkBuddy runs a command hook: `sh -c`, in the project, the event on stdin.
fn run_hook(sb: &Sandbox, command: &str, prompt: &str, extra: &[(&str, &str)]) -> (bool, String) {
    let event = json!({"session_id": "wb-session-1", "transcript_path": null, "cwd": sb.project(),
                       "hook_event_name": "UserPromptSubmit", "prompt": prompt});
    let mut child = Command::new("/bin/sh")
        .args(["-c", command])
        .env_clear()
        .envs(&sb.env)
        .envs(extra.iter().copied())
        .current_dir(sb.project())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(event.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The context of the hook's answer line (Claude Code's `hookSpecificOutput`).
fn context_of(stdout: &str) -> Option<String> {
    let line: Value = serde_json::from_str(stdout.lines().next()?).ok()?;
    assert_eq!(line["hookSpecificOutput"]["hookEventName"], "UserPromptSubmit");
    line["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .map(str::to_owned)
}

fn stored_eventually(server: &RealServer, scope: &str, prompt: &str) -> bool {
    let until = Instant::now() + Duration::from_secs(30);
    while Instant::now() < until {
        if server.sources(scope).iter().any(|s| s["content"] == prompt) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn workbuddy_setup_wires_a_hook_that_recalls_and_captures_and_uninstall_restores_every_byte() {
    let server = RealServer::shared();
    let scope = server.create_scope("workbuddy contract");
    server.remember(
        &scope,
        "The plover4 exporter writes its archives to the amber-finch-66 bucket.",
    );
    let mut sb = Sandbox::new();
    fs::create_dir_all(settings_path(&sb).parent().unwrap()).unwrap();
    fs::write(settings_path(&sb), FOREIGN).unwrap();
    sb.env
        .insert("POWERCONTEXT_WORKBUDDY_SCOPE_ID".into(), scope.clone());
    for (k, v) in [("REQUEST_TIMEOUT_SECONDS", "8"), ("HTTP_BUDGET_SECONDS", "12")] {
        sb.env.insert(format!("POWERCONTEXT_WORKBUDDY_{k}"), v.into());
    }

    let (code, out, _) = sb.cli_json(&["setup", "workbuddy", "--server-url", &server.url()]);
    assert_eq!(code, 0, "{out}");
    let warned = out["warnings"].to_string();
    assert!(warned.contains("Not validated in a real host"), "{out}");
    let commands = prompt_commands(&sb);
    assert_eq!(commands.len(), 2, "{commands:?}");
    assert_eq!(
        commands[0], "/usr/bin/true mine",
        "the user's hook comes first, untouched"
    );
    let text = fs::read_to_string(settings_path(&sb)).unwrap();
    assert!(
        text.starts_with(&FOREIGN[..FOREIGN.find("\n    ]").unwrap()]),
        "{text}"
    );
    let (code, again, _) = sb.cli_json(&["setup", "workbuddy", "--server-url", &server.url()]);
    assert_eq!(
        (code, again["result"].clone()),
        (0, json!("unchanged")),
        "{again}"
    );

    let prompt = "Where does the plover4 exporter write its archives?";
    let (ok, stdout) = run_hook(&sb, &commands[1], prompt, &[]);
    assert!(ok);
    let context = context_of(&stdout).unwrap_or_else(|| panic!("no context: {stdout}"));
    assert!(context.contains("amber-finch-66"), "{context}");
    assert!(
        stored_eventually(server, &scope, prompt),
        "the prompt was not stored"
    );

    let (_, report, _) = sb.cli_json(&["doctor", "workbuddy"]);
    let check = |name: &str| {
        report["hosts"][0]["checks"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["check"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name}: {report}"))
    };
    assert_eq!(check("host version")["status"], "warn", "{report}");
    assert!(
        check("host version")["fix"]
            .as_str()
            .unwrap()
            .contains("Not validated in a real host")
    );
    for name in ["hook entries", "hooks in settings", "hook round trip", "firing"] {
        assert_eq!(check(name)["status"], "ok", "{name}: {report}");
    }

    // Hooks switched off host-wide: doctor says so, with the fix.
    let on = fs::read_to_string(settings_path(&sb)).unwrap();
    fs::write(
        settings_path(&sb),
        on.replacen('{', "{\n  \"disableAllHooks\": true,", 1),
    )
    .unwrap();
    let (code, report, _) = sb.cli_json(&["doctor", "workbuddy"]);
    assert_eq!(code, 1, "{report}");
    let off = report["hosts"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == "hooks enabled")
        .cloned();
    assert_eq!(off.map(|c| c["status"].clone()), Some(json!("fail")), "{report}");
    // Our entry removed behind our back: both tiers fail and name setup as the fix.
    fs::write(settings_path(&sb), FOREIGN).unwrap();
    let (code, report, _) = sb.cli_json(&["doctor", "workbuddy"]);
    assert_eq!(code, 1, "{report}");
    for name in ["hook entries", "hooks in settings"] {
        let c = report["hosts"][0]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["check"] == name)
            .cloned()
            .unwrap();
        assert_eq!(c["status"], "fail", "{name}: {report}");
        assert!(
            c["fix"]
                .as_str()
                .unwrap()
                .contains("powercontext-hooks setup workbuddy"),
            "{c}"
        );
    }
    fs::write(settings_path(&sb), &on).unwrap();

    let (code, out, _) = sb.cli_json(&["uninstall", "workbuddy"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(fs::read_to_string(settings_path(&sb)).unwrap(), FOREIGN);
}

#[test]
fn the_official_installer_takes_our_workbuddy_tree_and_its_hook_runs_ours() {
    let server = RealServer::shared();
    let scope = server.create_scope("workbuddy official");
    server.remember(
        &scope,
        "The dunlin2 scheduler keeps its locks in the teal-ibis-17 table.",
    );
    let mut sb = Sandbox::new();
    sb.env.insert(
        "WORKBUDDY_HOME".into(),
        sb.home().join(".workbuddy").display().to_string(),
    );
    let tree = sb.package_tree();
    let hook = tree.join("integrations/workbuddy/plugins/powercontext/hooks/workbuddy_powercontext_hook.py");
    assert!(hook.is_file(), "package rendered no WorkBuddy hook");
    let out = sb.official_setup("workbuddy", &tree, &server.url());
    assert!(
        out.status.success(),
        "official setup workbuddy: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let commands = prompt_commands(&sb);
    assert_eq!(commands.len(), 1, "{commands:?}");
    assert!(
        commands[0].contains("workbuddy_powercontext_hook.py"),
        "{commands:?}"
    );

    let prompt = "Where does the dunlin2 scheduler keep its locks?";
    let env = [
        ("POWERCONTEXT_WORKBUDDY_SCOPE_ID", scope.as_str()),
        ("POWERCONTEXT_WORKBUDDY_SERVER_URL", &server.url()),
        ("POWERCONTEXT_WORKBUDDY_REQUEST_TIMEOUT_SECONDS", "8"),
        ("POWERCONTEXT_WORKBUDDY_HTTP_BUDGET_SECONDS", "12"),
    ];
    let (ok, stdout) = run_hook(&sb, &commands[0], prompt, &env);
    assert!(ok);
    let context = context_of(&stdout).unwrap_or_else(|| panic!("no context: {stdout}"));
    assert!(context.contains("teal-ibis-17"), "{context}");
    assert!(
        stored_eventually(server, &scope, prompt),
        "the prompt was not stored"
    );

    // The hook file execs our executable: without it, the prompt goes on with nothing added.
    let missing = tree.join("missing-bin");
    let python = fs::read_to_string(&hook).unwrap();
    let exe = Path::new(crate::support::CLI)
        .parent()
        .unwrap()
        .join("powercontext-hook-workbuddy");
    assert!(python.contains(&exe.display().to_string()), "{python}");
    let broken = python.replace(&exe.display().to_string(), &missing.display().to_string());
    let installed = sb.home().join(".workbuddy/hooks/workbuddy_powercontext_hook.py");
    fs::write(&installed, broken).unwrap();
    let (ok, stdout) = run_hook(&sb, &commands[0], prompt, &env);
    assert!(ok && stdout.is_empty(), "{stdout}");
}

/// Every byte of HOME after `setup workbuddy` with a fault injected after `step`, against before.
fn rollback_diff(step: &str) -> Vec<String> {
    let mut sb = Sandbox::new();
    fs::create_dir_all(settings_path(&sb).parent().unwrap()).unwrap();
    fs::write(settings_path(&sb), FOREIGN).unwrap();
    let before = sb.tree();
    sb.env
        .insert("POWERCONTEXT_HOOKS_SETUP_FAULT".into(), step.into());
    let (code, out, _) = sb.cli_json(&["setup", "workbuddy", "--server-url", "http://127.0.0.1:9"]);
    assert_eq!((code, out["result"].clone()), (1, json!("rolled_back")), "{out}");
    let after = sb.tree();
    before
        .keys()
        .chain(after.keys())
        .filter(|k| before.get(*k) != after.get(*k))
        .cloned()
        .collect()
}

#[test]
fn a_failed_workbuddy_setup_rolls_the_settings_file_back_byte_for_byte() {
    for step in ["hooks", "verify"] {
        assert_eq!(rollback_diff(step), Vec::<String>::new(), "after {step}");
    }
}

#[test]
fn a_settings_file_workbuddy_cannot_read_is_refused_before_any_write_and_a_link_stays_a_link() {
    let sb = Sandbox::new();
    fs::create_dir_all(settings_path(&sb).parent().unwrap()).unwrap();
    fs::write(settings_path(&sb), "{\"hooks\": [1, 2]}\n").unwrap();
    let before = sb.tree();
    let (code, out, _) = sb.cli_json(&["setup", "workbuddy", "--server-url", "http://127.0.0.1:9"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out["error"].as_str().unwrap().contains("settings.json"),
        "the error names the file: {out}"
    );
    assert_eq!(sb.tree(), before, "a refused setup wrote something");

    // A dotfile link: edited through, the link kept, and given back exactly by uninstall.
    let target = sb.root.path().join("dotfiles-workbuddy-settings.json");
    fs::write(&target, FOREIGN).unwrap();
    fs::remove_file(settings_path(&sb)).unwrap();
    std::os::unix::fs::symlink(&target, settings_path(&sb)).unwrap();
    let (code, out, _) = sb.cli_json(&["setup", "workbuddy", "--server-url", "http://127.0.0.1:9"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        fs::symlink_metadata(settings_path(&sb))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_ne!(fs::read_to_string(&target).unwrap(), FOREIGN);
    let (code, out, _) = sb.cli_json(&["uninstall", "workbuddy"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        fs::symlink_metadata(settings_path(&sb))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(fs::read_to_string(&target).unwrap(), FOREIGN);
}
