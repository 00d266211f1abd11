//! The real Hermes Agent (pinned in tests/e2e/hermes/requirements.txt) set up by our own
//! `powercontext-hooks setup hermes` (shell hooks in `~/.hermes/config.yaml`, consent in its
//! allowlist), the real PowerContext Server and a fake OpenAI-compatible model, inside a
//! loopback-only namespace. Each Hermes run costs 15–25 s, so the runs here are few and each
//! proves several things. Never skips: a missing Hermes or Server panics with the script to run.

use std::fs;
use std::path::Path;

use powercontext_hooks_test_support::fake_model::{FakeModel, user_texts};
use powercontext_hooks_test_support::host_hermes::{HermesSession, answered};
use powercontext_hooks_test_support::real_server::RealServer;
use serde_json::Value;

use crate::support::CLI;

const REPLY: &str = "FAKE-HERMES-ANSWER-OK";

/// The user messages of the model call at `index`, as Hermes sent them (context included).
#[track_caller]
fn user_messages(model: &FakeModel, index: usize) -> Vec<String> {
    let calls = model.model_requests();
    let body = calls
        .get(index)
        .unwrap_or_else(|| panic!("no model call #{index} (of {})", calls.len()))
        .json()
        .expect("model request is JSON");
    user_texts(&body).into_iter().map(|t| t.concat()).collect()
}

fn cli_json(h: &HermesSession, args: &[&str]) -> (bool, Value, String) {
    let run = h.run_other(Path::new(CLI), args, &[]);
    let v = serde_json::from_str(&run.stdout).unwrap_or(Value::Null);
    (run.status.success(), v, format!("{}\n{}", run.stdout, run.stderr))
}

/// The whole life of the integration in the real host: setup (recording consent as Hermes
/// does) → a prompt whose model request carries the pinned package and the recall on the API
/// copy of the user message → the prompt captured in the Server → a second prompt in the same
/// session that does not repeat what the first injected (Hermes replays it from history) →
/// doctor green with the firing line → uninstall giving back the user's config byte for byte.
#[test]
fn e2e_hermes_setup_recall_capture_bootstrap_doctor_uninstall() {
    let server = RealServer::shared();
    let (scope, _) = crate::support::pinned_scope(
        server,
        "hermes e2e",
        "Team rule otter-quill-57: every Hermes release note names its rollback owner.",
    );
    server.remember(
        &scope,
        "The kestrel7 billing job writes its ledger to the storage bucket amber-vault-31.",
    );
    let model = FakeModel::start(REPLY);
    let mut h = HermesSession::new(&model.url());
    h.set("POWERCONTEXT_HERMES_SCOPE_ID", &scope);
    h.set("POWERCONTEXT_HOOKS_NO_BACKGROUND_DRAIN", "1");
    // The Server's prepare may be slow on a loaded 2-core machine; Hermes waits 10 s.
    h.set("POWERCONTEXT_HERMES_REQUEST_TIMEOUT_SECONDS", "6");
    h.set("POWERCONTEXT_HERMES_HTTP_BUDGET_SECONDS", "8");
    let user_config = fs::read(h.config()).unwrap();

    let (ok, plan, out) = cli_json(&h, &["setup", "hermes", "--server-url", &server.url(), "--json"]);
    assert!(ok, "setup failed: {out}");
    let commands = plan["plan"]["commands"].to_string() + &plan["commands"].to_string();
    assert!(
        commands.contains("shell-hooks-allowlist.json"),
        "the plan says it records consent: {out}"
    );
    let config = fs::read_to_string(h.config()).unwrap();
    assert!(config.as_bytes().starts_with(&user_config), "{config}");
    assert!(!config.contains("hooks_auto_accept"), "{config}");
    let allowlist: Value = serde_json::from_str(
        &fs::read_to_string(h.hermes_home().join("shell-hooks-allowlist.json")).unwrap(),
    )
    .unwrap();
    let events: Vec<&str> = allowlist["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(events, ["pre_llm_call", "on_session_end", "on_session_finalize"]);

    // 1. The first prompt: bootstrap package and recall reach the model, appended to the prompt.
    let prompt = "Where does the kestrel7 billing job write its ledger?";
    let session = answered(&h.chat(prompt, None), REPLY);
    let first = user_messages(&model, 0);
    let last = first.last().expect("a user message");
    let injected = last
        .strip_prefix(&format!("{prompt}\n\n"))
        .unwrap_or_else(|| panic!("context is not appended to the prompt:\n{last}"));
    assert_eq!(injected.matches("amber-vault-31").count(), 1, "{injected}");
    assert_eq!(injected.matches("otter-quill-57").count(), 1, "{injected}");
    assert!(
        injected.find("otter-quill-57") < injected.find("amber-vault-31"),
        "the package comes before the recall:\n{injected}"
    );

    // 2. The prompt became a Source (after the answer; the hook delivered it itself here).
    let sources = server.sources(&scope);
    let captured: Vec<&Value> = sources.iter().filter(|s| s["content"] == prompt).collect();
    assert_eq!(captured.len(), 1, "{sources:#?}");
    assert!(
        captured[0]["source_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("hermes-user-prompt:")),
        "{:#}",
        captured[0]
    );

    // 3. The same session again: Hermes replays the first turn's injected bytes from history, so
    //    the new turn carries neither the package nor the item already there.
    let again = "Which storage bucket holds the kestrel7 ledger again?";
    let calls_before = model.model_requests().len();
    let resumed = answered(&h.chat(again, Some(&session)), REPLY);
    assert_eq!(resumed, session, "the same session");
    let second = user_messages(&model, calls_before);
    assert_eq!(
        second.last().map(String::as_str),
        Some(again),
        "nothing repeated: {second:#?}"
    );
    assert!(
        second
            .iter()
            .any(|m| m.starts_with(prompt) && m.contains("amber-vault-31")),
        "the first turn's context is still in the history Hermes sends: {second:#?}"
    );
    let all = server.sources(&scope);
    assert_eq!(
        all.iter().filter(|s| s["content"] == again).count(),
        1,
        "{all:#?}"
    );

    // 4. Doctor: installed, consent recorded, hooks allowed, a live round trip and the firing line.
    let (ok, report, out) = cli_json(&h, &["doctor", "hermes", "--json"]);
    assert!(ok, "doctor: {out}");
    let checks = report["hosts"][0]["checks"].as_array().unwrap();
    for name in ["consent recorded", "hooks allowed", "hook round trip", "firing"] {
        let c = checks
            .iter()
            .find(|c| c["check"] == name)
            .unwrap_or_else(|| panic!("no {name}: {report}"));
        assert_eq!(c["status"], "ok", "{c}");
    }

    // 5. Uninstall: our lines and consents go, the user's config comes back byte for byte.
    let (ok, _, out) = cli_json(&h, &["uninstall", "hermes", "--json"]);
    assert!(ok, "uninstall: {out}");
    assert_eq!(fs::read(h.config()).unwrap(), user_config);
    assert!(!h.hermes_home().join("shell-hooks-allowlist.json").exists());
    assert!(!h.hermes_home().join("shell-hooks-allowlist.json.lock").exists());
}

/// The hook fails open in the real host: with the Server down, and with the hook's executable
/// gone, Hermes still answers the prompt (without context).
#[test]
fn e2e_hermes_answers_with_the_server_down_and_with_the_hook_missing() {
    let model = FakeModel::start(REPLY);
    let h = HermesSession::new(&model.url());
    let down = powercontext_hooks_test_support::fault_server::closed_port_url();
    let (ok, _, out) = cli_json(&h, &["setup", "hermes", "--server-url", &down, "--json"]);
    assert!(ok, "setup failed: {out}");
    let prompt = "Does the hermes deploy still answer without its memory server?";
    answered(&h.chat(prompt, None), REPLY);
    assert_eq!(user_messages(&model, 0).last().map(String::as_str), Some(prompt));

    let exe = h.state_dir().join("installs/hermes/bin/powercontext-hook-hermes");
    assert!(exe.is_file(), "setup's copy of the hook at {}", exe.display());
    fs::remove_file(&exe).unwrap();
    let calls = model.model_requests().len();
    answered(&h.chat("And without its hook executable?", None), REPLY);
    assert_eq!(
        user_messages(&model, calls).last().map(String::as_str),
        Some("And without its hook executable?")
    );
}

/// Every file under `dir` with its bytes (links not followed).
fn snapshot(dir: &Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            let (p, t) = (e.path(), e.file_type().unwrap());
            if t.is_dir() {
                stack.push(p);
            } else {
                out.insert(p.clone(), fs::read(&p).unwrap_or_default());
            }
        }
    }
    out
}

/// Official installer interop, as far as it goes on the published Hermes: our `package` leaves
/// Hermes out and says why, and the pinned official `powercontext setup hermes --source <our
/// tree>` refuses Hermes 0.19.0 by its version before it reads the tree, writing nothing of its
/// own (only Hermes' own `--version` bookkeeping appears); its doctor says the same.
#[test]
fn e2e_hermes_official_setup_refuses_the_published_hermes_and_our_tree_has_no_hermes_package() {
    let model = FakeModel::start(REPLY);
    let h = HermesSession::new(&model.url());
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("tree");
    let bin_dir = Path::new(CLI).parent().unwrap().to_str().unwrap().to_owned();
    let (ok, packaged, out) = cli_json(
        &h,
        &[
            "package",
            "--out",
            tree.to_str().unwrap(),
            "--bin-dir",
            &bin_dir,
            "--json",
        ],
    );
    assert!(ok, "package: {out}");
    let hermes = packaged["skipped"]
        .as_array()
        .and_then(|all| all.iter().find(|s| s["host"] == "hermes"))
        .unwrap_or_else(|| panic!("hermes is listed as skipped: {packaged}"));
    assert!(
        hermes["why"]
            .as_str()
            .unwrap()
            .contains("powercontext-hooks setup hermes"),
        "{packaged}"
    );
    assert!(!tree.join("integrations/hermes").exists());
    assert!(tree.join("integrations/pi/plugins/powercontext").is_dir());

    let official = Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv-server/bin/powercontext");
    assert!(
        official.is_file(),
        "{} is missing: run scripts/ensure-server-venv",
        official.display()
    );
    let before = snapshot(h.home());
    let setup = h.run_other(
        &official,
        &[
            "setup",
            "hermes",
            "--source",
            tree.to_str().unwrap(),
            "--server-url",
            "http://127.0.0.1:9",
            "--json",
        ],
        &[],
    );
    assert!(!setup.status.success(), "{}\n{}", setup.stdout, setup.stderr);
    let report: Value = serde_json::from_str(setup.stdout.trim()).unwrap_or(Value::Null);
    let error = report["hosts"]["hermes"]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("v0.19.0 is unsupported") && error.contains("v0.20.4"),
        "{}\n{}",
        setup.stdout,
        setup.stderr
    );
    let after = snapshot(h.home());
    let hermes_own = h.hermes_home();
    for (path, bytes) in &after {
        let own = path.starts_with(hermes_own.join("logs")) || path == &hermes_own.join(".update_check");
        assert!(
            own || before.get(path) == Some(bytes),
            "official setup wrote {} after refusing",
            path.display()
        );
    }
    assert_eq!(
        before.keys().filter(|p| !after.contains_key(*p)).count(),
        0,
        "nothing removed"
    );
    let doctor = h.run_other(&official, &["doctor", "hermes", "--json"], &[]);
    assert!(!doctor.status.success());
    assert!(doctor.stdout.contains("v0.20.4"), "{}", doctor.stdout);
}

/// Setup against a Hermes home that already has hooks and consents of the user's own, through the
/// real `hermes` CLI (no prompt, so no model): a failure at the last step rolls back byte for
/// byte, a success keeps the user's entries and adds ours after them, a second run changes
/// nothing, and uninstall gives back both files byte for byte.
#[test]
fn e2e_hermes_setup_keeps_the_users_hooks_and_consents_rolls_back_and_is_idempotent() {
    let mut h = HermesSession::new("http://127.0.0.1:9");
    let config = format!(
        "{}\nhooks:\n  # my own guard\n  pre_llm_call:\n  - command: /usr/bin/true\n    timeout: 3\nhooks_auto_accept: false\n",
        fs::read_to_string(h.config()).unwrap()
    );
    fs::write(h.config(), &config).unwrap();
    // As Hermes writes it: json.dumps(indent=2, sort_keys=True), no final newline.
    let allowlist = "{\n  \"approvals\": [\n    {\n      \"approved_at\": \"2026-01-02T03:04:05.123456Z\",\n      \
                     \"command\": \"/usr/bin/true\",\n      \"event\": \"pre_llm_call\",\n      \
                     \"script_mtime_at_approval\": null\n    }\n  ]\n}";
    let allowlist_path = h.hermes_home().join("shell-hooks-allowlist.json");
    fs::write(&allowlist_path, allowlist).unwrap();
    let lock = h.hermes_home().join("shell-hooks-allowlist.json.lock");
    let url = "http://127.0.0.1:9";

    h.set("POWERCONTEXT_HOOKS_SETUP_FAULT", "verify");
    let (ok, out, text) = cli_json(&h, &["setup", "hermes", "--server-url", url, "--json"]);
    assert!(!ok, "{text}");
    assert_eq!(out["result"], "rolled_back", "{text}");
    assert_eq!(fs::read_to_string(h.config()).unwrap(), config);
    assert_eq!(fs::read_to_string(&allowlist_path).unwrap(), allowlist);
    assert!(!lock.exists(), "the lock file setup created is gone too");

    h.set("POWERCONTEXT_HOOKS_SETUP_FAULT", "");
    let (ok, out, text) = cli_json(&h, &["setup", "hermes", "--server-url", url, "--json"]);
    assert!(ok, "{text}");
    assert_eq!(out["result"], "installed", "{text}");
    let now = fs::read_to_string(h.config()).unwrap();
    let mine = now
        .find("  - command: /usr/bin/true\n    timeout: 3\n")
        .expect("the user's hook stays");
    let ours = now.find("powercontext-hook-hermes").expect("ours is added");
    assert!(mine < ours, "{now}");
    assert!(
        now.contains("hooks_auto_accept: false\n") && !now.contains("hooks_auto_accept: true"),
        "{now}"
    );
    let listed = h.run_other(h.cli(), &["hooks", "list"], &[]);
    assert!(
        listed.stdout.contains("/usr/bin/true (timeout=3s, ✓ allowed)"),
        "{}",
        listed.stdout
    );
    assert_eq!(
        listed
            .stdout
            .matches("powercontext-hook-hermes (timeout=")
            .count(),
        3,
        "{}",
        listed.stdout
    );
    assert!(
        !listed.stdout.contains("not allowlisted") && !listed.stdout.contains("modified since"),
        "{}",
        listed.stdout
    );

    let (ok, out, text) = cli_json(&h, &["setup", "hermes", "--server-url", url, "--json"]);
    assert!(ok, "{text}");
    assert_eq!(out["result"], "unchanged", "{text}");
    assert_eq!(fs::read_to_string(h.config()).unwrap(), now);

    let (ok, _, text) = cli_json(&h, &["uninstall", "hermes", "--json"]);
    assert!(ok, "{text}");
    assert_eq!(fs::read_to_string(h.config()).unwrap(), config);
    assert_eq!(fs::read_to_string(&allowlist_path).unwrap(), allowlist);
}
