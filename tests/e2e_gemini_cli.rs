//! Real Gemini CLI (pinned in tests/e2e/gemini-cli/package.json) with our hook, the real Server
//! and a fake model that speaks the Gemini API, inside a loopback-only namespace: setup → a
//! headless prompt whose model request holds the recalled memory → the prompt captured (without
//! the session-start context Gemini CLI puts in front of it) → doctor → uninstall; session-start
//! bootstrap of a pinned memory on every run of a session; and the host's turn answering whatever
//! our hook meets (Server down, 401, a hang, no executable). Nothing here may skip.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use powercontext_hooks_core::base::sha256_hex;
use powercontext_hooks_core::host::Integration;
use powercontext_hooks_test_support::fake_model::FakeModel;
use powercontext_hooks_test_support::fault_server::{FaultServer, Reply, closed_port_url};
use powercontext_hooks_test_support::host_gemini::{
    GeminiSession, GeminiSessionBuilder, hook_context_parts, last_user_texts,
};
use powercontext_hooks_test_support::real_server::RealServer;
use serde_json::{Value, json};

use crate::support::{CLI, GEMINI_CLI};

const HOST: Integration = Integration::GeminiCli;
/// What the fake model answers; a completed turn prints exactly this.
const REPLY: &str = "FAKE-GEMINI-REPLY-5120";

/// One test's world: a fake model of its own and a fresh scope in the shared real Server.
struct World {
    model: FakeModel,
    server: &'static RealServer,
    scope: String,
}

impl World {
    fn new(tag: &str) -> Self {
        let server = RealServer::shared();
        World {
            model: FakeModel::start(REPLY),
            scope: server.create_scope(&format!("e2e gemini-cli {tag}")),
            server,
        }
    }

    /// A session whose hook is our executable, wired directly (no setup), pointed at this world.
    fn wired(&self) -> GeminiSessionBuilder {
        GeminiSession::builder(&self.model)
            .hook(Path::new(GEMINI_CLI))
            .env("POWERCONTEXT_GEMINI_SERVER_URL", &self.server.url())
            .env("POWERCONTEXT_GEMINI_SCOPE_ID", &self.scope)
    }

    /// Bodies of the model calls so far, oldest first.
    fn model_bodies(&self) -> Vec<Value> {
        self.model
            .model_requests()
            .iter()
            .map(|r| r.json().expect("model request body is JSON"))
            .collect()
    }

    /// The body of the one model call turn `n` (1-based) made.
    fn turn_body(&self, n: usize) -> Value {
        let bodies = self.model_bodies();
        assert_eq!(bodies.len(), n, "one model call per turn");
        bodies[n - 1].clone()
    }

    /// Prompts our hook captured in this world's scope.
    fn captured(&self) -> Vec<String> {
        self.server
            .sources(&self.scope)
            .into_iter()
            .filter(|s| {
                s["source_id"]
                    .as_str()
                    .is_some_and(|id| id.starts_with("gemini-cli-user-prompt:"))
            })
            .map(|s| {
                s["content"]
                    .as_str()
                    .map_or_else(|| s["content"].to_string(), str::to_owned)
            })
            .collect()
    }

    /// Waits (the capture is sent after the answer, by a detached drainer) for `n` captures.
    fn wait_captured(&self, n: usize) -> Vec<String> {
        let start = Instant::now();
        loop {
            let found = self.captured();
            if found.len() >= n || start.elapsed() > Duration::from_secs(15) {
                return found;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// Pins `artifact` for session bootstrap with our CLI, as a user would.
fn pin(world: &World, artifact: &str) {
    let out = Command::new(CLI)
        .args(["pin", artifact, "--host", HOST.as_str(), "--scope", &world.scope])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", world.server.home())
        .env("POWERCONTEXT_HOOKS_CONFIG", "/nonexistent/config.toml")
        .env("POWERCONTEXT_GEMINI_SERVER_URL", world.server.url())
        .output()
        .expect("run powercontext-hooks pin");
    assert!(
        out.status.success(),
        "pin failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn occurrences(body: &Value, needle: &str) -> usize {
    body.to_string().matches(needle).count()
}

/// The user's own settings, comments and all: what Gemini CLI needs here (API-key auth, nothing
/// that phones home) and a hook of their own on an event we use too.
const FOREIGN_SETTINGS: &str = r#"{
  // mine: keep this comment
  "security": {"auth": {"selectedType": "gemini-api-key"}},
  "general": {"enableAutoUpdate": false, "enableAutoUpdateNotification": false},
  "privacy": {"usageStatisticsEnabled": false},
  "telemetry": {"enabled": false},
  "hooks": {
    "BeforeAgent": [
      {"hooks": [{"type": "command", "command": "/bin/true mine", "timeout": 3000}]}
    ]
  }
}
"#;

/// Our CLI with `args` (`--json` added) in the session's HOME: (exit code, its JSON).
fn cli(session: &GeminiSession, args: &[&str]) -> (i32, Value) {
    let mut all = args.to_vec();
    all.push("--json");
    let run = session.run_other(Path::new(CLI), &all, &[]);
    let v = serde_json::from_str(run.stdout.trim())
        .unwrap_or_else(|_| panic!("not JSON: {}\n--- stderr\n{}", run.stdout, run.stderr));
    (run.status.code().unwrap_or(-1), v)
}

/// The status of doctor's check `name` in its JSON report.
fn check(report: &Value, name: &str) -> Value {
    report["hosts"][0]["checks"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["check"] == name)
        .map(|c| c["status"].clone())
        .unwrap_or_else(|| panic!("no {name} line: {report}"))
}

/// Setup → the real host answers a prompt whose model request holds the recalled memory → the
/// Server holds the prompt as typed → a resumed prompt gets its recall again (Gemini CLI does not
/// keep a turn's hook context for the next run) → doctor is green with a firing line, and says so
/// when hooks are turned off → uninstall gives the user's settings back byte for byte.
#[test]
fn setup_recall_capture_doctor_uninstall() {
    const FACT: &str = "redis-amber-23";
    let world = World::new("setup");
    world.server.remember(
        &world.scope,
        "The quasar5 ingest service keeps its cache in the redis-amber-23 cluster.",
    );
    let session = GeminiSession::builder(&world.model).build();
    session.write_settings_text(FOREIGN_SETTINGS);
    // The workspace key of the hooks: SHA-256 of the (symlink-free) working directory.
    let project = session.project_dir().to_str().expect("UTF-8 project");
    world.server.bind(
        HOST.as_str(),
        "workspace",
        &sha256_hex(project.as_bytes()),
        &world.scope,
    );

    let (code, out) = cli(
        &session,
        &["setup", "gemini-cli", "--server-url", &world.server.url()],
    );
    assert_eq!(code, 0, "setup: {out}");
    let settings = session.settings_text();
    assert!(
        settings.starts_with("{\n  // mine: keep this comment\n"),
        "{settings}"
    );
    assert!(settings.contains("/bin/true mine"), "{settings}");
    let parsed: Value = serde_json::from_str(
        &settings
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n"),
    )
    .expect("settings stay JSON");
    let ours = |event: &str| {
        parsed["hooks"][event]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|g| g["hooks"].as_array().cloned().unwrap_or_default())
            .find(|h| {
                h["command"]
                    .as_str()
                    .is_some_and(|c| c.contains("powercontext-hook-gemini-cli"))
            })
    };
    // Timeouts in milliseconds, Gemini CLI's unit; `PreCompress` is not followed.
    assert_eq!(
        ours("BeforeAgent").map(|h| h["timeout"].clone()),
        Some(json!(10_000)),
        "{settings}"
    );
    assert_eq!(
        ours("SessionStart").map(|h| h["timeout"].clone()),
        Some(json!(10_000)),
        "{settings}"
    );
    for event in ["AfterAgent", "SessionEnd"] {
        assert_eq!(
            ours(event).map(|h| h["timeout"].clone()),
            Some(json!(5_000)),
            "{event}: {settings}"
        );
    }
    assert!(parsed["hooks"].get("PreCompress").is_none(), "{settings}");
    let (code, again) = cli(
        &session,
        &["setup", "gemini-cli", "--server-url", &world.server.url()],
    );
    assert_eq!(
        (code, again["result"].clone()),
        (0, json!("unchanged")),
        "{again}"
    );
    assert_eq!(
        session.settings_text(),
        settings,
        "a second setup changed the settings"
    );

    let prompts = [
        "Where does quasar5 ingest keep its cache?",
        "Remind me: which cluster holds the quasar5 ingest cache?",
    ];
    for (i, prompt) in prompts.iter().enumerate() {
        let run = if i == 0 {
            session.prompt(prompt)
        } else {
            session.resume(prompt)
        };
        run.assert_gemini_completed(REPLY);
        let body = world.turn_body(i + 1);
        let texts = last_user_texts(&body);
        assert!(
            texts
                .iter()
                .any(|t| t.starts_with("<hook_context>") && t.contains(FACT)),
            "turn {}: no recalled memory in this turn's hook context\n{body}\n--- stderr\n{}",
            i + 1,
            run.stderr
        );
    }
    let mut captured = world.wait_captured(prompts.len());
    captured.sort();
    let mut typed = prompts.map(str::to_owned);
    typed.sort();
    assert_eq!(captured, typed, "the captures are the prompts as typed");

    let (code, report) = cli(&session, &["doctor", "gemini-cli"]);
    for name in ["hook entries", "hooks in settings", "firing"] {
        assert_eq!(check(&report, name), "ok", "{name}: {report}");
    }
    assert_eq!(code, 0, "{report}");

    // Hooks turned off in Gemini CLI's own settings: doctor says so, naming the switch.
    let installed = session.settings_text();
    let off = installed.replacen(
        "\"telemetry\"",
        "\"hooksConfig\": {\"enabled\": false},\n  \"telemetry\"",
        1,
    );
    assert_ne!(off, installed);
    session.write_settings_text(&off);
    let (code, report) = cli(&session, &["doctor", "gemini-cli"]);
    assert_eq!(check(&report, "hooks enabled"), "fail", "{report}");
    assert!(report.to_string().contains("hooksConfig.enabled"), "{report}");
    assert_ne!(code, 0, "{report}");
    session.write_settings_text(&installed);

    let (code, out) = cli(&session, &["uninstall", "gemini-cli"]);
    assert_eq!(code, 0, "uninstall: {out}");
    assert_eq!(
        session.settings_text(),
        FOREIGN_SETTINGS,
        "uninstall did not give the settings back"
    );
}

/// Session memory: a pinned memory reaches the model at every run of the session (Gemini CLI
/// fires `SessionStart` on start and on each resume, and puts its context in front of that run's
/// prompt), exactly once per request; each turn still carries its own recall (the host does not
/// keep a turn's hook context for later turns); and what is captured is the prompt as typed,
/// never the session-start context in front of it, even when the prompt itself holds the
/// wrapper's tags.
#[test]
fn pinned_memory_bootstraps_every_run_and_is_never_captured_back() {
    const PINNED: &str = "zebra-kettle-64";
    const FACT: &str = "redis-topaz-19";
    let world = World::new("bootstrap");
    let artifact = world.server.remember_artifact(
        &world.scope,
        "Team rule zebra-kettle-64: every release note names its rollback owner.",
    );
    pin(&world, &artifact);
    world.server.remember(
        &world.scope,
        "The quasar8 ingest service keeps its cache in the redis-topaz-19 cluster.",
    );
    let session = world.wired().record_payloads().build();

    let prompts = [
        "Where does quasar8 ingest keep its cache?",
        // The user's own text may hold the tags Gemini CLI wraps contexts in: it stays whole.
        "<hook_context>mine</hook_context>\n\nWhich cluster holds the quasar8 ingest cache?",
        "Is the quasar8 ingest cache still there? (see </hook_context> above)",
    ];
    for (i, prompt) in prompts.iter().enumerate() {
        let run = if i == 0 {
            session.prompt(prompt)
        } else {
            session.resume(prompt)
        };
        run.assert_gemini_completed(REPLY);
        let body = world.turn_body(i + 1);
        let texts = last_user_texts(&body);
        assert_eq!(
            occurrences(&json!(texts), PINNED),
            1,
            "turn {}: the pinned memory must reach this run's prompt once\n{body}\n--- stderr\n{}",
            i + 1,
            run.stderr
        );
        assert!(
            texts.iter().any(|t| t.contains(FACT)),
            "turn {}: the recalled fact must come with this turn\n{body}",
            i + 1
        );
    }

    let payloads = session.payloads();
    let starts: Vec<&str> = payloads
        .iter()
        .filter(|p| p["hook_event_name"] == "SessionStart")
        .map(|p| p["source"].as_str().unwrap_or("none"))
        .collect();
    assert_eq!(starts, ["startup", "resume", "resume"], "SessionStart sources");
    // What the host handed our hook: the session-start context in front of each prompt.
    for p in payloads.iter().filter(|p| p["hook_event_name"] == "BeforeAgent") {
        let text = p["prompt"].as_str().unwrap_or_default();
        assert!(
            text.starts_with("<hook_context>") && text.contains(PINNED),
            "Gemini CLI no longer prepends the session-start context; re-check the echo rule: {text}"
        );
    }

    let mut captured = world.wait_captured(prompts.len());
    captured.sort();
    let mut typed: Vec<String> = prompts.iter().map(|p| (*p).to_owned()).collect();
    typed.sort();
    assert_eq!(captured, typed, "the captures are the prompts as typed");

    let records: Vec<String> = std::fs::read_dir(session.state_dir().join("sessions"))
        .expect("session records")
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    for leak in ["zebra-kettle", "redis-topaz", "quasar8", world.scope.as_str()] {
        assert!(
            !records.concat().contains(leak),
            "session record holds {leak}: {records:?}"
        );
    }
}

/// Server down, a wrong token, a Server that never answers and a missing hook executable: Gemini
/// CLI answers every turn, with no context of ours in the request.
#[test]
fn the_turn_goes_on_when_the_server_or_the_hook_fails() {
    let model = FakeModel::start(REPLY);
    let auth = RealServer::shared_auth();
    let mut session = GeminiSession::builder(&model).build();
    let (code, out) = cli(&session, &["setup", "gemini-cli", "--server-url", &auth.url()]);
    assert_eq!(code, 0, "setup: {out}");
    let hang = FaultServer::always(Reply::Hang);
    let (down, auth_url, hang_url) = (closed_port_url(), auth.url(), hang.url());
    let cases: [(&str, &[(&str, &str)]); 3] = [
        (
            "server down",
            &[("POWERCONTEXT_GEMINI_SERVER_URL", down.as_str())],
        ),
        (
            "wrong token",
            &[
                ("POWERCONTEXT_GEMINI_SERVER_URL", auth_url.as_str()),
                ("POWERCONTEXT_GEMINI_AUTHORIZATION", "Bearer not-the-right-token"),
            ],
        ),
        (
            "server hangs",
            &[("POWERCONTEXT_GEMINI_SERVER_URL", hang_url.as_str())],
        ),
    ];
    let mut turns = 0;
    for (case, env) in cases {
        for (k, v) in env {
            session.set_env(k, v);
        }
        let run = session.prompt(&format!("kestrel rollout notes for {case}"));
        run.assert_gemini_completed(REPLY);
        turns += 1;
        let body = model.model_requests()[turns - 1].json().expect("JSON body");
        assert_eq!(
            hook_context_parts(&body),
            Vec::<String>::new(),
            "{case}: injected something"
        );
    }
    assert!(
        hang.request_count() >= 1,
        "our hook never reached the hanging Server"
    );

    // The hook copy setup made is gone: Gemini CLI cannot start it and goes on.
    let manifest: Value = serde_json::from_slice(
        &std::fs::read(session.state_dir().join("installs/gemini-cli/manifest.json"))
            .expect("setup's manifest"),
    )
    .expect("manifest is JSON");
    std::fs::remove_file(manifest["hook_exe"].as_str().expect("hook_exe")).expect("remove the hook copy");
    let run = session.prompt("kestrel rollout notes without a hook");
    run.assert_gemini_completed(REPLY);
    let body = model.model_requests()[turns].json().expect("JSON body");
    assert_eq!(hook_context_parts(&body), Vec::<String>::new());
}
