//! Real GitHub Copilot CLI (pinned in tests/e2e/copilot-cli/package.json) with our hooks in its
//! settings file, the real Server and a fake model, inside a loopback-only namespace. The shared
//! scenarios live in `e2e_scenarios` (there the runner writes the hooks the way setup does); the
//! tests below go through our own `setup`, `doctor` and `uninstall`. Never skips one.

use std::path::Path;
use std::time::{Duration, Instant};

use powercontext_hooks_core::base::sha256_hex;
use powercontext_hooks_core::host::Integration;
use powercontext_hooks_test_support::fake_model::FakeModel;
use powercontext_hooks_test_support::fault_server::{FaultServer, Reply};
use powercontext_hooks_test_support::hosts::{HostFacts, HostRun, HostSession};
use powercontext_hooks_test_support::real_server::RealServer;
use serde_json::{Value, json};

use crate::e2e_scenarios::{REPLY, host_scenarios};
use crate::support::{CLI, hook_exe};

host_scenarios!(Integration::CopilotCli);

const HOST: Integration = Integration::CopilotCli;

/// The user's own Copilot CLI settings: a comment, a setting, and a prompt hook of their own on
/// the event we use (it prints nothing, so ours still decides the context: Copilot CLI keeps only
/// the last `additionalContext` of an event's hooks, and setup appends ours after theirs).
const FOREIGN_SETTINGS: &str = "// mine\n{\n  \"banner\": \"never\",\n  \"hooks\": {\n    \"UserPromptSubmit\": [\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"/usr/bin/true mine\", \"timeout\": 3}]}\n    ]\n  }\n}\n";

fn settings_path(session: &HostSession) -> std::path::PathBuf {
    session.home_dir().join(".copilot/settings.json")
}

/// Our CLI with `args` (`--json` added) in the session's environment: (exit code, its JSON).
fn cli(session: &HostSession, args: &[&str]) -> (i32, Value) {
    let mut all = args.to_vec();
    all.push("--json");
    let run = session.run_other(Path::new(CLI), &all, &[]);
    let v = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|_| panic!("not JSON: {}\n--- stderr\n{}", run.stdout, run.stderr));
    (run.status.code().unwrap_or(-1), v)
}

/// The latest model request, as JSON.
fn last_request(model: &FakeModel) -> Value {
    model
        .model_requests()
        .last()
        .and_then(|r| r.json())
        .expect("a model request")
}

/// This host's captured prompts in `scope`, waiting up to 20 s for `n` (a detached drainer
/// delivers them after the answer).
fn wait_captured(server: &RealServer, scope: &str, n: usize) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let found: Vec<Value> = server
            .sources(scope)
            .into_iter()
            .filter(|s| {
                s["source_id"]
                    .as_str()
                    .is_some_and(|id| id.starts_with(HOST.source_id_prefix()))
            })
            .collect();
        if found.len() >= n || start.elapsed() > Duration::from_secs(20) {
            return found;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[track_caller]
fn context_of(run: &HostRun, body: &Value) -> String {
    HOST.latest_hook_context(body)
        .unwrap_or_else(|| panic!("no hook context reached the model\n{}\n{body}", run.stderr))
}

/// Setup (the Claude-style event names, seconds, the user's hook and comment kept) → the first
/// prompt carries the pinned memory and the recall → the Server holds the captured prompt → a
/// resumed prompt on the same topic injects neither again (Copilot CLI keeps both in the user
/// message of its history) → doctor is green with a firing line → uninstall gives the settings
/// back byte for byte.
#[test]
fn e2e_copilot_cli_setup_bootstrap_recall_capture_no_repeat_doctor_uninstall() {
    const PINNED: &str = "falcon-ledger-64";
    const FACT: &str = "amber-heron-29";
    let server = RealServer::shared();
    let (scope, _) = crate::support::pinned_scope(
        server,
        "copilot-cli",
        "Team rule falcon-ledger-64: every release note names its rollback owner.",
    );
    server.remember(
        &scope,
        "The kiwi5 ingest service keeps its cache in the amber-heron-29 cluster.",
    );
    let model = FakeModel::start(REPLY);
    // Room for a real Server slowed by a loaded machine (as in the shared scenarios).
    let session = HostSession::builder(HOST, &model)
        .host_env("REQUEST_TIMEOUT_SECONDS", "3")
        .host_env("HTTP_BUDGET_SECONDS", "7")
        .build();
    std::fs::create_dir_all(settings_path(&session).parent().unwrap()).unwrap();
    std::fs::write(settings_path(&session), FOREIGN_SETTINGS).unwrap();
    server.bind(
        HOST.as_str(),
        "workspace",
        &sha256_hex(session.project_dir().to_str().unwrap().as_bytes()),
        &scope,
    );

    let (code, out) = cli(&session, &["setup", "copilot-cli", "--server-url", &server.url()]);
    assert_eq!(code, 0, "setup: {out}");
    let settings = std::fs::read_to_string(settings_path(&session)).unwrap();
    assert!(
        settings.starts_with("// mine\n{\n  \"banner\": \"never\""),
        "{settings}"
    );
    assert!(settings.contains("/usr/bin/true mine"), "{settings}");
    // The only comment is the user's first line.
    let parsed: Value = serde_json::from_str(&settings["// mine\n".len()..]).expect("settings JSON");
    let hooks = &parsed["hooks"];
    // Only the Claude-style names: the camelCase ones hand our hook a payload it cannot read.
    for event in ["UserPromptSubmit", "PreCompact", "Stop", "SessionEnd"] {
        let last = hooks[event].as_array().and_then(|a| a.last()).cloned();
        let entry = &last.unwrap_or_else(|| panic!("no {event} entry: {settings}"))["hooks"][0];
        assert_eq!(entry["type"], "command", "{event}: {entry}");
        assert!(
            entry["command"]
                .as_str()
                .is_some_and(|c| c.contains(HOST.spec().hook_exe)),
            "{event}: {entry}"
        );
        // Seconds: 10 for the prompt, 5 for the others (a millisecond 10 would kill every run).
        let want = if event == "UserPromptSubmit" { 10 } else { 5 };
        assert_eq!(entry["timeout"], want, "{event}: {entry}");
    }
    assert_eq!(
        hooks["UserPromptSubmit"][0]["hooks"][0]["command"],
        "/usr/bin/true mine"
    );
    for absent in ["SessionStart", "userPromptSubmitted", "sessionStart"] {
        assert!(hooks.get(absent).is_none(), "{absent} installed: {settings}");
    }
    let (code, again) = cli(&session, &["setup", "copilot-cli", "--server-url", &server.url()]);
    assert_eq!(
        (code, again["result"].clone()),
        (0, json!("unchanged")),
        "{again}"
    );
    assert_eq!(
        std::fs::read_to_string(settings_path(&session)).unwrap(),
        settings
    );

    let first = session.prompt("Where does kiwi5 ingest keep its cache?");
    first.assert_completed(REPLY);
    let body = last_request(&model);
    assert_eq!(
        body.to_string().matches(PINNED).count(),
        1,
        "bootstrap once: {body}"
    );
    let context = context_of(&first, &body);
    assert!(context.contains(FACT), "recall: {context}");
    assert!(
        context.contains(PINNED),
        "the first prompt carries the bootstrap: {context}"
    );
    let captured = wait_captured(server, &scope, 1);
    assert_eq!(captured.len(), 1, "captured: {captured:?}");

    let second = session.resume("Remind me: which cluster holds the kiwi5 ingest cache?");
    second.assert_completed(REPLY);
    let body = last_request(&model);
    let all = body.to_string();
    assert_eq!(
        all.matches(FACT).count(),
        1,
        "the fact must be in the conversation once: {body}"
    );
    assert_eq!(
        all.matches(PINNED).count(),
        1,
        "the bootstrap must be there once: {body}"
    );
    assert!(
        HOST.latest_hook_context(&body).is_none_or(|c| !c.contains(FACT)),
        "the resumed prompt injected the fact again"
    );
    assert_eq!(wait_captured(server, &scope, 2).len(), 2);

    let (code, report) = cli(&session, &["doctor", "copilot-cli"]);
    let checks = report["hosts"][0]["checks"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for name in ["hook entries", "hooks in settings", "firing"] {
        let status = checks
            .iter()
            .find(|c| c["check"] == name)
            .map(|c| c["status"].clone())
            .unwrap_or_else(|| panic!("no {name} line: {report}"));
        assert_eq!(status, "ok", "{name}: {report}");
    }
    assert_eq!(code, 0, "{report}");

    let (code, out) = cli(&session, &["uninstall", "copilot-cli"]);
    assert_eq!(code, 0, "uninstall: {out}");
    assert_eq!(
        std::fs::read_to_string(settings_path(&session)).unwrap(),
        FOREIGN_SETTINGS,
        "uninstall did not give the settings back"
    );
}

/// A Server that never answers: our hook gives up at its budget, well inside the timeout setup
/// gives Copilot CLI, and the turn answers with nothing injected.
#[test]
fn e2e_copilot_cli_turn_goes_on_when_the_server_hangs() {
    let model = FakeModel::start(REPLY);
    let hang = FaultServer::always(Reply::Hang);
    let session = HostSession::builder(HOST, &model)
        .hook(Path::new(hook_exe(HOST)))
        .server_url(&hang.url())
        .host_env("SCOPE_ID", "scp_00000000000000000000000000")
        .build();
    for turn in [
        "kestrel rollout notes while the server hangs",
        "and again, still hanging",
    ] {
        let run = session.prompt(turn);
        run.assert_completed(REPLY);
        assert_eq!(HOST.latest_hook_context(&last_request(&model)), None);
    }
    assert!(
        hang.request_count() >= 1,
        "our hook never reached the hanging Server"
    );
    // The hook's own deadline (1 s per request, 4 s in all) ends it, not Copilot CLI's 10 s timeout;
    // the turns above warmed the host and the machine, so this one times the hook.
    let run = session.resume("a third turn, the Server still hanging");
    run.assert_completed(REPLY);
    assert!(
        run.elapsed < Duration::from_secs(9) + crate::support::start_slack(),
        "{:?}",
        run.elapsed
    );
}
