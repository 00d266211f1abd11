//! Real Gemini CLI (pinned in tests/e2e/gemini-cli/package.json) with our hook, the real Server
//! and a fake model that speaks the Gemini API, inside a loopback-only namespace: setup → a
//! headless prompt whose model request holds the recalled memory → the prompt captured (without
//! the session-start context Gemini CLI puts in front of it) → doctor → uninstall; session-start
//! bootstrap of a pinned memory on every run of a session; and the host's turn answering whatever
//! our hook meets (Server down, 401, a hang, no executable). Nothing here may skip.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

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

/// The prompt path through the real host: the recalled memory reaches the model as this turn's
/// hook context, and the prompt is captured exactly as typed.
#[test]
fn recall_reaches_the_model_and_the_prompt_is_captured() {
    let world = World::new("recall");
    world.server.remember(
        &world.scope,
        "The quasar5 ingest service keeps its cache in the redis-amber-23 cluster.",
    );
    let session = world.wired().build();
    let prompt = "Where does quasar5 ingest keep its cache?";
    let run = session.prompt(prompt);
    run.assert_gemini_completed(REPLY);
    let body = world.turn_body(1);
    let contexts = hook_context_parts(&body);
    assert!(
        contexts.iter().any(|c| c.contains("redis-amber-23")),
        "no recalled memory in the model request\n{body}\n--- stderr\n{}",
        run.stderr
    );
    assert_eq!(world.wait_captured(1), [prompt]);
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
