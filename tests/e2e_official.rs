//! Drop-in for the official installer, end to end: `powercontext-hooks package` renders the plugin
//! source tree, the official 1.4.1 `powercontext setup <host> --source <tree>` installs it into the
//! real host (the token only in the variable the official CLI reads), and a real host prompt
//! against the real Server with auth on recalls a remembered fact and stores the prompt — our
//! hook found the URL and token the official CLI saved. Then `powercontext doctor <host>`.

use std::path::{Path, PathBuf};

use powercontext_hooks_core::host::Integration;
use powercontext_hooks_test_support::fake_model::FakeModel;
use powercontext_hooks_test_support::hosts::{HostFacts, HostRun, HostSession};
use powercontext_hooks_test_support::real_server::RealServer;
use serde_json::Value;

use crate::support::CLI;

const REPLY: &str = "FAKE-MODEL-REPLY-OFFICIAL-5521";

/// A fresh scope holding the fact. Created one at a time: the Server answers two concurrent first
/// scope creations with `409 binding-version`.
fn scope_with(server: &RealServer, title: &str, fact: &str) -> String {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _guard = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let scope = server.create_scope(title);
    server.remember(&scope, fact);
    scope
}

fn official_cli() -> PathBuf {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-server/bin/powercontext");
    assert!(
        p.is_file(),
        "{} is missing: run scripts/ensure-server-venv",
        p.display()
    );
    p
}

/// Renders our tree with the executables cargo built for this test binary.
fn package(dir: &Path) -> PathBuf {
    let out = dir.join("tree");
    let bin_dir = Path::new(CLI).parent().unwrap();
    let run = std::process::Command::new(CLI)
        .args(["package", "--out"])
        .arg(&out)
        .arg("--bin-dir")
        .arg(bin_dir)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    out
}

fn show(run: &HostRun) -> String {
    format!(
        "status {:?}\n--- stdout\n{}\n--- stderr\n{}",
        run.status, run.stdout, run.stderr
    )
}

fn official_setup_then_real_prompt(host: Integration) {
    let server = RealServer::shared_auth();
    let token = server.token().unwrap().to_owned();
    let model = FakeModel::start(REPLY);
    let fact = format!(
        "The {} drop-in keeps its ledger in the vault-heron-88 bucket.",
        host.as_str()
    );
    let scope = scope_with(server, &format!("official {}", host.as_str()), &fact);
    let session = HostSession::builder(host, &model)
        .host_env("SCOPE_ID", &scope)
        .build();
    if host == Integration::Codex {
        // Official setup needs Codex's plugins feature (the bare session leaves it off).
        let cfg = session.home_dir().join(".codex/config.toml");
        let text = std::fs::read_to_string(&cfg).unwrap();
        std::fs::write(&cfg, text.replace("plugins = false", "plugins = true")).unwrap();
    }
    let work = tempfile::tempdir().unwrap();
    let tree = package(work.path());

    let setup = session.run_other(
        &official_cli(),
        &[
            "setup",
            host.as_str(),
            "--source",
            tree.to_str().unwrap(),
            "--server-url",
            &server.url(),
            "--json",
        ],
        &[("POWERCONTEXT_CLIENT_API_TOKEN", &token)],
    );
    assert!(!setup.stdout.contains(&token) && !setup.stderr.contains(&token));
    let report: Value = serde_json::from_str(setup.stdout.trim()).unwrap_or(Value::Null);
    match host {
        Integration::ClaudeCode => assert!(setup.status.success(), "{}", show(&setup)),
        // Installed and configured; official doctor's MCP checks fail until `--trust-only` replaces
        // its `uv run … mcp_headers.py` headers helper with ours.
        _ => {
            let failing = failing_checks(&report);
            assert!(
                !failing.is_empty() && failing.iter().all(|c| c.starts_with("mcp_")),
                "{failing:?}\n{}",
                show(&setup)
            );
            let trust = session.run_other(Path::new(CLI), &["setup", "codex", "--trust-only", "--json"], &[]);
            assert!(trust.status.success(), "{}", show(&trust));
            assert!(trust.stdout.contains("\"trusted\""), "{}", show(&trust));
            let trusted: Value = serde_json::from_str(trust.stdout.trim()).unwrap_or(Value::Null);
            assert_eq!(
                trusted["mcp_helpers"].as_array().map(Vec::len),
                Some(1),
                "{}",
                show(&trust)
            );
        }
    }

    let prompt = format!("Where does the {} drop-in keep its ledger?", host.as_str());
    let run = session.prompt(&prompt);
    run.assert_completed(REPLY);
    let bodies: Vec<Value> = model
        .model_requests()
        .iter()
        .map(|r| r.json().expect("model request body is JSON"))
        .collect();
    let context = bodies
        .iter()
        .rev()
        .find_map(|b| host.latest_hook_context(b))
        .unwrap_or_else(|| panic!("no hook context reached the model\n{}", show(&run)));
    assert!(context.contains("vault-heron-88"), "{context}");
    let stored = stored_eventually(server, &scope, &prompt);
    assert!(stored, "the prompt was not stored\n{}", show(&run));

    if host == Integration::ClaudeCode {
        // The status line official setup configured points at a script our tree ships, and it runs.
        let settings: Value =
            serde_json::from_slice(&std::fs::read(session.home_dir().join(".claude/settings.json")).unwrap())
                .unwrap();
        let command = settings["statusLine"]["command"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(command.contains("scripts/statusline.py"), "{settings}");
        let line = session.run_other(
            Path::new("/bin/sh"),
            &["-c", &format!("{command} </dev/null")],
            &[],
        );
        assert!(
            line.status.success() && !line.stdout.trim().is_empty(),
            "{}",
            show(&line)
        );
    }

    let doctor = session.run_other(&official_cli(), &["doctor", host.as_str(), "--json"], &[]);
    match host {
        Integration::ClaudeCode => assert!(doctor.status.success(), "{}", show(&doctor)),
        _ => {
            // Our doctor sees the official install: trusted, and the installed hook works end to end.
            let ours = session.run_other(Path::new(CLI), &["doctor", "codex", "--json"], &[]);
            let mine: Value = serde_json::from_str(ours.stdout.trim()).unwrap_or(Value::Null);
            for name in ["hook trusted", "hook round trip", "auth accepted"] {
                let status = mine["hosts"][0]["checks"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|c| c["check"] == name)
                    .map(|c| c["status"].clone());
                assert_eq!(status, Some(Value::from("ok")), "{name}\n{}", show(&ours));
            }
            // Official doctor too, MCP tool checks included: after `--trust-only`, Codex's own MCP
            // client gets the saved token from our headers helper (the token is in no variable).
            let v: Value = serde_json::from_str(doctor.stdout.trim()).unwrap_or(Value::Null);
            let failing: Vec<String> = failing_checks(&v);
            assert!(
                doctor.status.success() && failing.is_empty(),
                "{failing:?}\n{}",
                show(&doctor)
            );
        }
    }
}

/// Names of the checks an official `--json` report marks as not ok (its checks are objects with a
/// `status`, keyed by the check name); the optional ones setup also tolerates when skipped.
fn failing_checks(v: &Value) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                for (name, child) in m {
                    if let Some(status) = child.get("status").and_then(Value::as_str)
                        && status != "ok"
                        // A host's aggregate (it holds the checks themselves).
                        && child.get("checks").is_none()
                        && !(status == "skipped" && matches!(name.as_str(), "runtime" | "mcp_session"))
                    {
                        out.push(name.clone());
                    }
                    walk(child, out);
                }
            }
            Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(v, &mut out);
    out
}

#[test]
fn claude_code_official_setup_installs_our_tree_and_a_real_prompt_works_with_auth() {
    official_setup_then_real_prompt(Integration::ClaudeCode);
}

#[test]
fn codex_official_setup_then_our_trust_step_and_a_real_prompt_works_with_auth() {
    official_setup_then_real_prompt(Integration::Codex);
}

/// Pi and OpenCode: official setup of our tree (no Server variable anywhere), a real prompt, then
/// official doctor green.
fn official_setup_package_host(host: &str) {
    use powercontext_hooks_test_support::host_opencode::OpenCodeSession;
    use powercontext_hooks_test_support::host_pi::{Loading, PiSession};

    let server = RealServer::shared_auth();
    let token = server.token().unwrap().to_owned();
    let model = FakeModel::start(REPLY);
    let fact = format!("The {host} drop-in keeps its ledger in the vault-heron-88 bucket.");
    let scope = scope_with(server, &format!("official {host}"), &fact);
    let part = if host == "pi" { "PI" } else { "OPENCODE" };
    let scope_var = format!("POWERCONTEXT_{part}_SCOPE_ID");
    let url_var = format!("POWERCONTEXT_{part}_SERVER_URL");
    let work = tempfile::tempdir().unwrap();
    let tree = package(work.path());
    let data = work.path().join("pc-data");
    let data_s = data.display().to_string();
    let args = [
        "setup",
        host,
        "--source",
        tree.to_str().unwrap(),
        "--server-url",
        &server.url(),
        "--json",
    ];
    let extra = [
        ("POWERCONTEXT_CLIENT_API_TOKEN", token.as_str()),
        ("POWERCONTEXT_HOME", data_s.as_str()),
    ];
    let prompt = format!("Where does the {host} drop-in keep its ledger?");
    let (setup, run, doctor) = if host == "pi" {
        let session = PiSession::builder(&model.url())
            .loading(Loading::None)
            .without(&url_var)
            .env(&scope_var, &scope)
            .env("POWERCONTEXT_PI_REQUEST_TIMEOUT_SECONDS", "8")
            .env("POWERCONTEXT_PI_HTTP_BUDGET_SECONDS", "20")
            .env("POWERCONTEXT_PI_HOOK_TIMEOUT_MS", "25000")
            .build();
        let setup = session.run_other(&official_cli(), &args, &extra);
        let run = session.print(&prompt);
        let doctor = session.run_other(&official_cli(), &["doctor", host, "--json"], &extra);
        let ours = session.run_other(Path::new(CLI), &["doctor", host, "--json"], &extra);
        assert_our_doctor_sees_it(&ours, "package listed");
        (setup, run, doctor)
    } else {
        let session = OpenCodeSession::builder(&model)
            .without(&url_var)
            .env(&scope_var, &scope)
            .env("POWERCONTEXT_OPENCODE_REQUEST_TIMEOUT_SECONDS", "8")
            .env("POWERCONTEXT_OPENCODE_HTTP_BUDGET_SECONDS", "20")
            .env("POWERCONTEXT_OPENCODE_PREPARE_TIMEOUT_MS", "25000")
            .build();
        let mut setup = session.run_other(&official_cli(), &args, &extra);
        // The official CLI gives `opencode serve` a fixed 15 s to load the plugin; a cold first
        // start on a loaded CI machine can take longer. Only that check failing earns one more
        // (warm) run of the same setup; any other failure stands.
        let only_activation_failed = |out: &str| {
            let v: Value = serde_json::from_str(out).unwrap_or_default();
            let failed: Vec<&String> = v["hosts"]["opencode"]["checks"]
                .as_object()
                .map(|c| {
                    c.iter()
                        .filter(|(_, c)| c["ok"] == false)
                        .map(|(k, _)| k)
                        .collect()
                })
                .unwrap_or_default();
            failed == ["plugin"]
        };
        if !setup.status.success() && only_activation_failed(&setup.stdout) {
            setup = session.run_other(&official_cli(), &args, &extra);
        }
        let run = session.prompt(&prompt);
        let doctor = session.run_other(&official_cli(), &["doctor", host, "--json"], &extra);
        let ours = session.run_other(Path::new(CLI), &["doctor", host, "--json"], &extra);
        assert_our_doctor_sees_it(&ours, "plugin loaded");
        (setup, run, doctor)
    };
    assert!(setup.status.success(), "{}", show(&setup));
    assert!(!setup.stdout.contains(&token) && !setup.stderr.contains(&token));
    assert!(
        model.any_body_contains("vault-heron-88"),
        "recall did not reach the model\n{}",
        show(&run)
    );
    let stored = stored_eventually(server, &scope, &prompt);
    assert!(stored, "the prompt was not stored\n{}", show(&run));
    assert!(doctor.status.success(), "{}", show(&doctor));
}

#[test]
fn pi_official_setup_installs_our_tree_and_a_real_prompt_works_with_auth() {
    official_setup_package_host("pi");
}

#[test]
fn opencode_official_setup_installs_our_tree_and_a_real_prompt_works_with_auth() {
    official_setup_package_host("opencode");
}

/// DSH: official setup of our tree into the Web profile and official doctor OK; the prompt runs
/// the very plugin module official setup linked (the tree's `lib/index.js`) in DSH's headless
/// profile, since the Web profile has no one-shot task mode.
#[test]
fn dsh_official_setup_installs_our_tree_and_a_real_prompt_works_with_auth() {
    use powercontext_hooks_test_support::host_dsh::DshSession;

    let server = RealServer::shared_auth();
    let token = server.token().unwrap().to_owned();
    let model = FakeModel::start(REPLY);
    let fact = "The dsh drop-in keeps its ledger in the vault-heron-88 bucket.";
    let scope = scope_with(server, "official dsh", fact);
    let work = tempfile::tempdir().unwrap();
    let tree = package(work.path());
    let module = tree.join("integrations/dsh/plugins/powercontext/lib/index.js");
    let session = DshSession::builder(&model)
        .plugin_file(&module)
        .env("POWERCONTEXT_DSH_SCOPE_ID", &scope)
        .env("POWERCONTEXT_DSH_REQUEST_TIMEOUT_SECONDS", "8")
        .env("POWERCONTEXT_DSH_HTTP_BUDGET_SECONDS", "20")
        .build();
    let extra = [("POWERCONTEXT_CLIENT_API_TOKEN", token.as_str())];
    let setup = session.run_other(
        &official_cli(),
        &[
            "setup",
            "dsh",
            "--source",
            tree.to_str().unwrap(),
            "--server-url",
            &server.url(),
            "--json",
        ],
        &extra,
    );
    assert!(setup.status.success(), "{}", show(&setup));
    assert!(!setup.stdout.contains(&token) && !setup.stderr.contains(&token));

    let prompt = "Where does the dsh drop-in keep its ledger?";
    let run = session.run(prompt);
    assert!(
        model.any_body_contains("vault-heron-88"),
        "recall did not reach the model\n{}",
        show(&run)
    );
    let stored = stored_eventually(server, &scope, prompt);
    assert!(stored, "the prompt was not stored\n{}", show(&run));
    let doctor = session.run_other(&official_cli(), &["doctor", "dsh", "--json"], &extra);
    assert!(doctor.status.success(), "{}", show(&doctor));
}

/// Our doctor checks an install the official CLI made: the host loads it, the token is accepted,
/// and the installed hook works end to end.
#[track_caller]
fn assert_our_doctor_sees_it(run: &HostRun, activation: &str) {
    let report: Value = serde_json::from_str(run.stdout.trim()).unwrap_or(Value::Null);
    for name in [activation, "auth accepted", "hook round trip"] {
        let status = report["hosts"][0]["checks"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["check"] == name)
            .map(|c| c["status"].clone());
        assert_eq!(status, Some(Value::from("ok")), "{name}\n{}", show(run));
    }
}

/// Whether `prompt` was stored in `scope`, waiting up to 10 s: the detached drainer delivers the
/// capture after the hook answered, so it may land a moment after the host's run.
fn stored_eventually(server: &RealServer, scope: &str, prompt: &str) -> bool {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if server.sources(scope).iter().any(|s| s["content"] == prompt) {
            return true;
        }
        if std::time::Instant::now() > until {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// OpenClaw: the official 1.4.1 CLI recognises the folder our tree gives it
/// (`integrations/openclaw/plugins/memory-powercontext`, its package name), but its setup refuses
/// the pinned OpenClaw (2026.9.6, the newest published) before installing anything: it needs
/// `plugins install --no-enable`. So the plugin goes in as the official installer would put it
/// (the packaged folder in OpenClaw's extensions, enabled with conversation access), the official
/// `configure` step saves the connection its way (`openclaw config set` of
/// `plugins.entries.memory-powercontext.config.endpoint`, and `clients.json`), and a real prompt
/// with the token only in the variable the official plugin reads recalls the fact and stores the
/// prompt: our hook found what the official CLI saved.
#[test]
fn openclaw_official_cli_recognises_our_tree_stops_at_its_gate_and_our_hook_uses_what_it_saves() {
    use powercontext_hooks_test_support::host_openclaw::{Loading, OpenClawSession, PLUGIN_ID};

    let server = RealServer::shared_auth();
    let token = server.token().unwrap().to_owned();
    let model = FakeModel::start(REPLY);
    let fact = "The openclaw drop-in keeps its ledger in the vault-heron-88 bucket.";
    let scope = scope_with(server, "official openclaw", fact);
    let session = OpenClawSession::builder(&model)
        .loading(Loading::None)
        .without("POWERCONTEXT_OPENCLAW_SERVER_URL")
        .env("POWERCONTEXT_OPENCLAW_SCOPE_ID", &scope)
        .env("POWERCONTEXT_OPENCLAW_REQUEST_TIMEOUT_SECONDS", "8")
        .env("POWERCONTEXT_OPENCLAW_HTTP_BUDGET_SECONDS", "12")
        .env("POWERCONTEXT_OPENCLAW_HOOK_TIMEOUT_MS", "14000")
        .build();
    let work = tempfile::tempdir().unwrap();
    let tree = package(work.path());
    let folder = tree.join("integrations/openclaw/plugins/memory-powercontext");
    let python = official_cli().with_file_name("python");

    // The official source resolution finds our folder.
    let found = session.run_other(
        &python,
        &[
            "-c",
            "import sys; from powercontext.cli.git_source import resolve_plugin_source; \
             print(resolve_plugin_source(sys.argv[1], 'master', 'openclaw'))",
            tree.to_str().unwrap(),
        ],
        &[],
    );
    assert!(found.status.success(), "{}", show(&found));
    assert_eq!(Path::new(found.stdout.trim()), folder, "{}", show(&found));

    // Official setup stops at its version gate and leaves OpenClaw's config alone.
    let before = std::fs::read_to_string(session.config_path()).unwrap();
    let setup = session.run_other(
        &official_cli(),
        &[
            "setup",
            "openclaw",
            "--source",
            tree.to_str().unwrap(),
            "--server-url",
            &server.url(),
            "--json",
        ],
        &[("POWERCONTEXT_CLIENT_API_TOKEN", &token)],
    );
    assert!(!setup.status.success(), "{}", show(&setup));
    assert!(setup.stdout.contains("--no-enable"), "{}", show(&setup));
    assert!(!setup.stdout.contains(&token) && !setup.stderr.contains(&token));
    assert_eq!(std::fs::read_to_string(session.config_path()).unwrap(), before);

    // The packaged plugin where the official installer puts it, enabled as its `enable` step does.
    copy_dir(&folder, &session.plugin_dir());
    let entry = format!(
        "{{\n  \"plugins\": {{\"entries\": {{\"{PLUGIN_ID}\": {{\"enabled\": true, \"hooks\": {{\"allowConversationAccess\": true}}}}}}}},"
    );
    std::fs::write(session.config_path(), before.replacen('{', &entry, 1)).unwrap();
    // The official `configure` step, as setup would run it once installed.
    let configure = session.run_other(
        &python,
        &[
            "-c",
            "import sys; from powercontext.cli.transport import prepare_setup_transport; \
             from powercontext.cli.openclaw import OpenClawInstaller; \
             c = prepare_setup_transport('openclaw', server_url=sys.argv[1], json_output=True); \
             print(OpenClawInstaller().configure(c))",
            &server.url(),
        ],
        &[],
    );
    assert!(configure.status.success(), "{}", show(&configure));
    let saved = std::fs::read_to_string(session.config_path()).unwrap();
    assert!(saved.contains(&server.url()), "{saved}");

    let prompt = "Where does the openclaw drop-in keep its ledger?";
    let run = session.prompt_with(prompt, &[("POWERCONTEXT_CLIENT_API_TOKEN", &token)]);
    run.assert_answered(REPLY);
    assert!(
        model.any_body_contains("vault-heron-88"),
        "recall did not reach the model\n{}",
        run.show()
    );
    assert!(
        stored_eventually(server, &scope, prompt),
        "the prompt was not stored\n{}",
        run.show()
    );
    assert!(!run.run.stderr.contains(&token));
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &dest);
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}
