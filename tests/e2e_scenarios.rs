//! Real-host end-to-end scenarios shared by Claude Code and Codex: the pinned host CLI,
//! our hook installed through its plugin folder, the real Server and a fake model, all on loopback.
//! Each scenario takes the host as a parameter; `e2e_claude` and `e2e_codex` hold the `#[test]`s.
//! Nothing here may skip: a missing host, Server or namespace fails the test with how to fix it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use powercontext_hooks_core::host::{Integration, OutputChannel};
use powercontext_hooks_test_support::fake_model::FakeModel;
use powercontext_hooks_test_support::fault_server::{FaultServer, Reply, closed_port_url};
use powercontext_hooks_test_support::hosts::{HostFacts, HostRun, HostSession, HostSessionBuilder};
use powercontext_hooks_test_support::real_server::RealServer;
use serde_json::{Value, json};

use crate::support::hook_exe;

/// The `#[test]` wrappers every scenario gets for one host (`$host`: an [`Integration`]); `e2e_claude` and
/// `e2e_codex` invoke it so both hosts always run the same list under the same names.
macro_rules! host_scenarios {
    ($host:expr) => {
        #[test]
        fn recall_reaches_model_and_prompt_is_captured() {
            $crate::e2e_scenarios::recall_and_capture($host);
        }

        #[test]
        fn live_payload_matches_fixture() {
            $crate::e2e_scenarios::live_payload_matches_fixture($host);
        }

        #[test]
        fn hook_accepts_fixture_payload() {
            $crate::e2e_scenarios::hook_accepts_fixture($host);
        }

        #[test]
        fn server_down_is_harmless_and_fast() {
            $crate::e2e_scenarios::server_down_is_harmless_and_fast($host);
        }

        #[test]
        fn two_prompts_each_get_their_own_context() {
            $crate::e2e_scenarios::two_prompts_one_conversation($host);
        }

        #[test]
        fn secret_prompt_is_recalled_but_not_stored() {
            $crate::e2e_scenarios::secret_prompt_recalled_not_stored($host);
        }

        #[test]
        fn missing_hook_executable_does_not_break_the_turn() {
            $crate::e2e_scenarios::missing_hook_executable($host);
        }

        #[test]
        fn server_error_does_not_break_the_turn() {
            $crate::e2e_scenarios::server_error_500($host);
        }

        #[test]
        fn wrong_token_does_not_break_the_turn() {
            $crate::e2e_scenarios::wrong_token($host);
        }

        #[test]
        fn pinned_memory_bootstraps_the_session_and_recall_never_repeats() {
            $crate::e2e_scenarios::bootstrap_and_no_repeats($host);
        }
    };
}
pub(crate) use host_scenarios;

/// What the fake model answers; a completed turn prints exactly this.
pub const REPLY: &str = "FAKE-MODEL-REPLY-7731";

/// Claude Code turns a larger hook context into a file reference plus a preview.
const CLAUDE_CONTEXT_CHAR_LIMIT: usize = 10_000;
/// What Claude Code's preview of an oversized hook context looks like.
const CLAUDE_TRUNCATION_MARKERS: [&str; 2] = ["<persisted-output>", "Output too large"];

/// One test's world: a fake model of its own and a fresh scope in a real Server.
struct World {
    host: Integration,
    model: FakeModel,
    server: &'static RealServer,
    scope: String,
}

impl World {
    fn new(host: Integration, server: &'static RealServer, tag: &str) -> Self {
        let scope = server.create_scope(&format!("e2e {} {tag}", host.as_str()));
        World {
            host,
            model: FakeModel::start(REPLY),
            server,
            scope,
        }
    }

    /// Plugin wired to our real hook, pointed at this world's Server and scope. The real Server
    /// can take longer than the hooks' production 1 s per request on a loaded 2-core machine; a
    /// recall lost to that would be the machine, not the code under test, so these worlds give
    /// each request 3 s within a 7 s budget (under the 10 s every host's hook timeout allows).
    fn session(&self) -> HostSessionBuilder {
        HostSession::builder(self.host, &self.model)
            .hook(Path::new(hook_exe(self.host)))
            .server_url(&self.server.url())
            .host_env("SCOPE_ID", &self.scope)
            .host_env("REQUEST_TIMEOUT_SECONDS", "3")
            .host_env("HTTP_BUDGET_SECONDS", "7")
    }

    /// Bodies of the model calls so far, oldest first.
    fn model_bodies(&self) -> Vec<Value> {
        self.model
            .model_requests()
            .iter()
            .map(|r| r.json().expect("model request body is JSON"))
            .collect()
    }

    /// The one model call the latest turn made, and the hook context it carries for that turn.
    fn last_turn_context(&self, turns_so_far: usize) -> (Value, Option<String>) {
        let bodies = self.model_bodies();
        assert_eq!(bodies.len(), turns_so_far, "one model call per turn");
        let body = bodies.last().expect("a model call").clone();
        let context = self.host.latest_hook_context(&body);
        (body, context)
    }

    /// Sources our hook captured in this world's scope (remembered facts are Sources too).
    fn captured(&self) -> Vec<Value> {
        self.server
            .sources(&self.scope)
            .into_iter()
            .filter(|s| {
                s["source_id"]
                    .as_str()
                    .is_some_and(|id| id.starts_with(self.host.source_id_prefix()))
            })
            .collect()
    }

    /// Waits briefly for `n` captured Sources (the hook finishes before the host's model call,
    /// so this is normally immediate).
    fn wait_captured(&self, n: usize) -> Vec<Value> {
        let start = Instant::now();
        loop {
            let found = self.captured();
            if found.len() >= n || start.elapsed() > Duration::from_secs(5) {
                return found;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn content_text(source: &Value) -> String {
    source["content"]
        .as_str()
        .map_or_else(|| source["content"].to_string(), str::to_owned)
}

fn assert_no_hook_context(host: Integration, run: &HostRun, body: &Value) {
    assert_eq!(
        host.latest_hook_context(body),
        None,
        "no context may be injected here\n--- stderr\n{}",
        run.stderr
    );
}

/// Scenario 1: a remembered fact reaches the model through our hook, and the prompt becomes a
/// Source.
pub fn recall_and_capture(host: Integration) {
    let world = World::new(host, RealServer::shared(), "recall");
    let fact = "The quasar7 ingest service keeps its cache in the redis-orchid-51 cluster.";
    world.server.remember(&world.scope, fact);
    let session = world.session().build();

    let prompt = "Where does quasar7 ingest keep its cache?";
    let run = session.prompt(prompt);
    run.assert_completed(REPLY);

    let (_, context) = world.last_turn_context(1);
    let context = context.unwrap_or_else(|| panic!("no hook context reached the model\n{}", run.stderr));
    assert!(
        context.contains("redis-orchid-51"),
        "recalled fact missing from context: {context}"
    );

    let captured = world.wait_captured(1);
    assert_eq!(captured.len(), 1, "exactly one captured prompt: {captured:?}");
    assert_eq!(content_text(&captured[0]), prompt);
}

/// Scenario 2a: the payload the live host sends still has the shape of the committed fixture
/// (same keys, same JSON types), so parser tests built on the fixture stay honest.
pub fn live_payload_matches_fixture(host: Integration) {
    let world = World::new(host, RealServer::shared(), "fixture-live");
    let session = world.session().record_payloads().build();
    let prompt = "fixture-kestrel payload check";
    session.prompt(prompt).assert_completed(REPLY);

    let payloads = session.payloads();
    assert_eq!(payloads.len(), 1, "one hook run per turn: {payloads:?}");
    let live = &payloads[0];
    assert_eq!(live["hook_event_name"], "UserPromptSubmit");
    assert_eq!(live["prompt"], prompt);
    let cwd = live["cwd"].as_str().expect("cwd is a string");
    assert_eq!(
        Path::new(cwd).canonicalize().expect("cwd exists"),
        session.project_dir().canonicalize().expect("project exists")
    );

    let fixture = load_fixture(host);
    assert_eq!(
        shape(live),
        shape(&fixture),
        "the host's UserPromptSubmit payload changed shape; re-record {}",
        fixture_path(host).display()
    );
}

/// Scenario 2b: our hook binary accepts the recorded fixture payload as-is: it recalls and
/// captures against the real Server.
pub fn hook_accepts_fixture(host: Integration) {
    let world = World::new(host, RealServer::shared(), "fixture-parse");
    world.server.remember(
        &world.scope,
        "The fixture-kestrel pipeline deploys the heron-gateway-88 service.",
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let payload = serde_json::to_string(&load_fixture(host)).expect("fixture JSON");

    let mut child = Command::new(hook_exe(host))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", dir.path())
        .env("POWERCONTEXT_HOOKS_STATE_DIR", dir.path().join("state"))
        .env(host.var("SERVER_URL"), world.server.url())
        .env(host.var("SCOPE_ID"), &world.scope)
        .current_dir(dir.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn hook");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(payload.as_bytes())
        .expect("write payload");
    let out = child.wait_with_output().expect("hook output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "hook exit {:?}: {stderr}", out.status);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "one protocol line expected: {stdout:?} / {stderr}"
    );
    let answer: Value = serde_json::from_str(lines[0]).expect("protocol line is JSON");
    let context = if host.spec().output == OutputChannel::TopLevelAdditionalContext {
        // The only shape Copilot CLI reads; a `hookSpecificOutput` would be dropped.
        assert_eq!(answer.get("hookSpecificOutput"), None, "{answer}");
        &answer["additionalContext"]
    } else {
        assert_eq!(answer["hookSpecificOutput"]["hookEventName"], "UserPromptSubmit");
        &answer["hookSpecificOutput"]["additionalContext"]
    };
    let context = context.as_str().expect("additionalContext string");
    assert!(
        context.contains("heron-gateway-88"),
        "fixture prompt not recalled: {context}"
    );

    let captured = world.wait_captured(1);
    assert_eq!(captured.len(), 1, "fixture prompt captured once: {captured:?}");
    assert_eq!(
        content_text(&captured[0]),
        load_fixture(host)["prompt"].as_str().expect("fixture prompt")
    );
}

fn fixture_path(host: Integration) -> PathBuf {
    host.fixtures_dir().join("user_prompt_submit.json")
}

fn load_fixture(host: Integration) -> Value {
    let path = fixture_path(host);
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read fixture {}: {e}", path.display()));
    serde_json::from_str(&text).expect("fixture is JSON")
}

/// Keys and JSON types of a flat payload object (`null` counts as its own type).
fn shape(payload: &Value) -> Vec<(String, &'static str)> {
    let object = payload.as_object().expect("payload is an object");
    let mut shape: Vec<(String, &'static str)> = object
        .iter()
        .map(|(k, v)| {
            let kind = match v {
                Value::Null => "null",
                Value::Bool(_) => "bool",
                Value::Number(_) => "number",
                Value::String(_) => "string",
                Value::Array(_) => "array",
                Value::Object(_) => "object",
            };
            (k.clone(), kind)
        })
        .collect();
    shape.sort();
    shape
}

/// Scenario 3: with the Server down the host still finishes, nothing is injected, and our hook
/// adds no more than its budget to the turn. The baseline is the same plugin whose hook command is
/// `true`: the host's own reaction to the unreachable Server (its MCP client retrying `/mcp`) is
/// the same on both sides, so the difference is what our executable costs. The bare host (no
/// plugin) is measured too and printed, so the MCP share stays visible.
#[allow(
    clippy::print_stderr,
    reason = "the measured timings are printed for whoever reads the test log"
)]
pub fn server_down_is_harmless_and_fast(host: Integration) {
    let model = FakeModel::start(REPLY);
    let down = closed_port_url();
    let hooked = HostSession::builder(host, &model)
        .hook(Path::new(hook_exe(host)))
        .server_url(&down)
        .record_payloads()
        .build();
    let noop = HostSession::builder(host, &model)
        .hook(Path::new("/bin/true"))
        .server_url(&down)
        .build();
    let bare = HostSession::builder(host, &model).build();

    // Alternate and keep the best of two each, so one noisy run on a busy machine does not decide.
    let mut with_hook = Duration::MAX;
    let mut without_hook = Duration::MAX;
    let mut no_plugin = Duration::MAX;
    for round in 0..2 {
        let plain = bare.prompt(&format!("bare turn {round}"));
        plain.assert_completed(REPLY);
        no_plugin = no_plugin.min(plain.elapsed);

        let baseline = noop.prompt(&format!("no-op hook turn {round}"));
        baseline.assert_completed(REPLY);
        without_hook = without_hook.min(baseline.elapsed);

        let run = hooked.prompt(&format!("server down turn {round}"));
        run.assert_completed(REPLY);
        with_hook = with_hook.min(run.elapsed);
        let body = model
            .model_requests()
            .last()
            .and_then(|r| r.json())
            .expect("model call");
        assert_no_hook_context(host, &run, &body);
    }
    assert_eq!(hooked.payloads().len(), 2, "our hook ran for both turns");
    // Nothing lost: both prompts wait in the spool for the Server to come back.
    let spooled = std::fs::read_dir(hooked.state_dir().join("spool"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
                .count()
        })
        .unwrap_or(0);
    assert_eq!(spooled, 2, "both captures spooled while the Server was down");
    // The turn boundary reaches our hook too (it hands spooled work to the background drainer).
    let events: Vec<String> = hooked
        .all_payloads()
        .iter()
        .filter_map(|p| p["hook_event_name"].as_str().map(str::to_owned))
        .collect();
    eprintln!("{}: hook events seen: {events:?}", host.as_str());
    assert!(
        events.iter().any(|e| e == "Stop"),
        "no Stop boundary reached the hook: {events:?}"
    );
    eprintln!(
        "{}: server down: with our hook {with_hook:?}, with a no-op hook {without_hook:?}, \
         without the plugin {no_plugin:?}",
        host.as_str()
    );
    assert!(
        with_hook.saturating_sub(without_hook) < Duration::from_millis(1500),
        "server-down run too slow: with hook {with_hook:?}, without {without_hook:?}"
    );
}

/// Scenario 4: two prompts in one conversation; each turn's hook context is the one recalled for
/// that prompt, and turn 1's block is not added again for turn 2.
pub fn two_prompts_one_conversation(host: Integration) {
    let world = World::new(host, RealServer::shared(), "two-turns");
    world.server.remember(
        &world.scope,
        "Quasar7 ingest keeps its cache in the redis-orchid-51 cluster.",
    );
    world.server.remember(
        &world.scope,
        "Heliotrope9 uploads retry with ember-backoff-62 timing.",
    );
    let session = world.session().build();

    let prompt1 = "quasar7 ingest cache?";
    session.prompt(prompt1).assert_completed(REPLY);
    let (_, first) = world.last_turn_context(1);
    let first = first.expect("turn 1 hook context");
    assert!(first.contains("redis-orchid-51"), "turn 1 context: {first}");
    assert!(
        !first.contains("ember-backoff-62"),
        "turn 1 got turn 2's fact: {first}"
    );

    let prompt2 = "heliotrope9 uploads retry?";
    let run = session.resume(prompt2);
    run.assert_completed(REPLY);
    let (body, second) = world.last_turn_context(2);
    let second = second.unwrap_or_else(|| panic!("turn 2 hook context missing\n{}", run.stderr));
    assert!(second.contains("ember-backoff-62"), "turn 2 context: {second}");
    assert!(
        !second.contains("redis-orchid-51"),
        "turn 1's context was injected again for turn 2: {second}"
    );
    // Same conversation: turn 1 is still in the history the model sees.
    assert!(body.to_string().contains(prompt1), "turn 2 did not resume turn 1");

    let captured = world.wait_captured(2);
    let mut prompts: Vec<String> = captured.iter().map(content_text).collect();
    prompts.sort();
    assert_eq!(prompts, [prompt2.to_owned(), prompt1.to_owned()]);
}

/// Scenario 5: a prompt holding a secret-like value still gets recall, but is never stored.
pub fn secret_prompt_recalled_not_stored(host: Integration) {
    let world = World::new(host, RealServer::shared(), "secret");
    world.server.remember(
        &world.scope,
        "Saffron4 deploys authenticate through the vault-kiwi-17 broker.",
    );
    let session = world.session().build();
    let prompts = [
        "saffron4 deploys: password = hunter2",
        "saffron4 deploys use key sk-proj-Q3x9TfL2mV8rW1aZ7pK4bN6cY0dE5gH3jS",
    ];
    for (turn, prompt) in prompts.iter().enumerate() {
        let run = session.prompt(prompt);
        run.assert_completed(REPLY);
        let (_, context) = world.last_turn_context(turn + 1);
        let context = context.unwrap_or_else(|| panic!("no recall for a secret prompt\n{}", run.stderr));
        assert!(context.contains("vault-kiwi-17"), "context: {context}");
    }
    // Give a wrongly queued capture a moment to land before asserting absence.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        world.captured(),
        Vec::<Value>::new(),
        "a secret-like prompt was stored"
    );
    let all = world.server.sources(&world.scope).to_vec();
    assert!(
        !Value::Array(all).to_string().contains("hunter2"),
        "the secret reached the Server"
    );
}

/// Scenario 6a: the hook executable is missing; the host still completes the turn.
pub fn missing_hook_executable(host: Integration) {
    let model = FakeModel::start(REPLY);
    let missing = std::env::temp_dir().join("powercontext-e2e-no-such-dir/powercontext-hook");
    assert!(!missing.exists());
    let session = HostSession::builder(host, &model)
        .hook(&missing)
        .server_url(&RealServer::shared().url())
        .build();
    let run = session.prompt("missing hook turn");
    run.assert_completed(REPLY);
    let body = model.model_requests()[0].json().expect("model call");
    assert_no_hook_context(host, &run, &body);
}

/// Scenario 6b: the Server answers 500 to everything; the host completes, nothing injected, and
/// the fault server proves our hook really called it.
pub fn server_error_500(host: Integration) {
    let model = FakeModel::start(REPLY);
    let fault = FaultServer::always(Reply::json(
        500,
        &json!({"error": {"code": "internal_error", "message": "injected failure"}}),
    ));
    let session = HostSession::builder(host, &model)
        .hook(Path::new(hook_exe(host)))
        .server_url(&fault.url())
        .host_env("SCOPE_ID", "scp_00000000000000000000000000")
        .build();
    let run = session.prompt("server error turn");
    run.assert_completed(REPLY);
    let body = model.model_requests()[0].json().expect("model call");
    assert_no_hook_context(host, &run, &body);
    let hook_calls = fault
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/v1/"))
        .count();
    assert!(hook_calls >= 1, "our hook never called the failing Server");
}

/// Scenario 6c: a wrong bearer token against a Server with auth; the host completes, nothing is
/// injected or stored.
pub fn wrong_token(host: Integration) {
    let world = World::new(host, RealServer::shared_auth(), "wrong-token");
    world.server.remember(
        &world.scope,
        "Marlin3 builds publish to the cobalt-mirror-23 registry.",
    );
    let session = world
        .session()
        .host_env("AUTHORIZATION", "Bearer not-the-right-token")
        .record_payloads()
        .build();
    let run = session.prompt("marlin3 builds publish where?");
    run.assert_completed(REPLY);
    let (body, _) = world.last_turn_context(1);
    assert_no_hook_context(host, &run, &body);
    assert_eq!(session.payloads().len(), 1, "our hook ran");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        world.captured(),
        Vec::<Value>::new(),
        "stored despite a wrong token"
    );
}

/// Scenario 7 (Claude Code): however much the Server returns, the context we emit stays under
/// Claude's 10,000-character limit, so Claude never swaps it for a truncated preview.
#[allow(
    clippy::print_stderr,
    reason = "the emitted size is printed for whoever reads the test log"
)]
pub fn claude_context_stays_under_limit() {
    let host = Integration::ClaudeCode;
    let world = World::new(host, RealServer::shared(), "big-context");
    // The Server recalls at most about 8 items, so each has to be long for the total to matter.
    for i in 0..12 {
        let filler =
            "The lapwing6 telemetry relay buffers metrics before shipping them upstream. ".repeat(25);
        world.server.remember(
            &world.scope,
            &format!("Lapwing6 note {i}: {filler}(entry lapwing6-{i:03})"),
        );
    }
    let prompt = "lapwing6 telemetry relay metrics buffering?";
    // The Server alone would hand over more than Claude accepts, so the limit is really ours to keep.
    let (status, prepared) = world.server.post(
        "/v1/context/prepare",
        &json!({"scope_id": world.scope, "query": prompt, "max_bytes": 32768}),
    );
    assert_eq!(status, 200, "prepare: {prepared}");
    let server_chars = prepared["content"].as_str().unwrap_or_default().chars().count();
    assert!(
        server_chars > CLAUDE_CONTEXT_CHAR_LIMIT,
        "Server returned only {server_chars} chars"
    );

    let session = world.session().host_env("MAX_BYTES", "32768").build();
    let run = session.prompt(prompt);
    run.assert_completed(REPLY);
    let (body, context) = world.last_turn_context(1);
    let context = context.unwrap_or_else(|| panic!("no hook context\n{}", run.stderr));
    assert!(context.contains("lapwing6"), "context lost its facts: {context}");
    let chars = context.chars().count();
    eprintln!("claude-code: emitted context of {chars} characters");
    assert!(
        chars < CLAUDE_CONTEXT_CHAR_LIMIT,
        "context of {chars} characters reached Claude (limit {CLAUDE_CONTEXT_CHAR_LIMIT})"
    );
    let raw = body.to_string();
    for marker in CLAUDE_TRUNCATION_MARKERS {
        assert!(!raw.contains(marker), "Claude truncated our context ({marker})");
    }
}

/// Pins `artifact` for session bootstrap with our CLI, as a user would.
fn pin(world: &World, artifact: &str) {
    let out = Command::new(env!("CARGO_BIN_EXE_powercontext-hooks"))
        .args([
            "pin",
            artifact,
            "--host",
            world.host.as_str(),
            "--scope",
            &world.scope,
        ])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", world.server.home())
        .env("POWERCONTEXT_HOOKS_CONFIG", "/nonexistent/config.toml")
        .env(world.host.var("SERVER_URL"), world.server.url())
        .output()
        .expect("run powercontext-hooks pin");
    assert!(
        out.status.success(),
        "pin failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// How often `needle` occurs in a model request (a repeated injection shows up as a count > 1:
/// earlier turns' injections stay in the conversation the host sends).
fn occurrences(body: &Value, needle: &str) -> usize {
    body.to_string().matches(needle).count()
}

/// Session memory: a pinned memory reaches the model at session start, before any recall (the
/// prompt shares no word with it, and the prompt's recall does not carry it); every resumed turn
/// has it exactly once (Claude Code drops a `SessionStart` context from a resumed transcript, so
/// the resume injects it again; Codex replays it from its rollout, so the resume must not); and
/// across three turns on one topic the recalled fact is injected once, not once per turn. On
/// Claude Code a `/clear` starts a new window: the package and the fact come back, once each.
pub fn bootstrap_and_no_repeats(host: Integration) {
    const PINNED: &str = "zebra-lantern-42";
    const FACT: &str = "redis-opal-77";
    let world = World::new(host, RealServer::shared(), "bootstrap");
    let artifact = world.server.remember_artifact(
        &world.scope,
        "Team rule zebra-lantern-42: every release note names its rollback owner.",
    );
    pin(&world, &artifact);
    world.server.remember(
        &world.scope,
        "The quasar9 ingest service keeps its cache in the redis-opal-77 cluster.",
    );
    let session = world.session().record_payloads().build();

    let first = "Where does quasar9 ingest keep its cache?";
    let run = session.prompt(first);
    run.assert_completed(REPLY);
    let (body, context) = world.last_turn_context(1);
    assert_eq!(
        occurrences(&body, PINNED),
        1,
        "the pinned memory must reach the first model request once\n{}\n{body}",
        run.stderr
    );
    let context = context.unwrap_or_else(|| panic!("no recall context\n{}\n{body}", run.stderr));
    assert!(context.contains(FACT), "recall: {context}");
    // A host that bootstraps at the first prompt carries the package in that prompt's context
    // (once: counted above); elsewhere the `SessionStart` hook brought it.
    assert_eq!(
        context.matches(PINNED).count(),
        usize::from(host.bootstraps_at_first_prompt()),
        "the prompt's recall repeats the bootstrap item: {context}"
    );

    for (turn, prompt) in [
        (2, "Remind me: which cluster holds the quasar9 ingest cache?"),
        (3, "Is the quasar9 ingest cache still in that cluster?"),
    ] {
        let run = session.resume(prompt);
        run.assert_completed(REPLY);
        let (body, context) = world.last_turn_context(turn);
        assert_eq!(
            occurrences(&body, FACT),
            1,
            "turn {turn}: the recalled fact must be in the conversation exactly once (context {context:?})"
        );
        assert_eq!(
            occurrences(&body, PINNED),
            1,
            "turn {turn}: the resumed session must carry its bootstrap exactly once\n{body}"
        );
    }

    let starts: Vec<String> = session
        .all_payloads()
        .iter()
        .filter(|p| p["hook_event_name"] == "SessionStart")
        .map(|p| p["source"].as_str().unwrap_or("none").to_owned())
        .collect();
    // A host that bootstraps at the first prompt gets no `SessionStart` hook from us.
    let expected: &[&str] = match host.spec().events.session_start {
        Some(_) => &["startup", "resume", "resume"],
        None => &[],
    };
    assert_eq!(starts, expected, "SessionStart sources");

    if host == Integration::ClaudeCode {
        // Headless `/clear` runs no model turn; it starts a new conversation (SessionStart
        // `clear`), which `--continue` then resumes.
        let cleared = session.run(&["-p", "/clear", "--output-format", "json"]);
        assert!(cleared.status.success(), "/clear: {}", cleared.stderr);
        let run = session.resume(first);
        run.assert_completed(REPLY);
        let (body, context) = world.last_turn_context(4);
        assert_eq!(
            occurrences(&body, PINNED),
            1,
            "after /clear the bootstrap comes back once\n{body}"
        );
        assert!(
            context.as_deref().is_some_and(|c| c.contains(FACT)),
            "after /clear the window starts again and the fact is recalled: {context:?}"
        );
        assert_eq!(occurrences(&body, FACT), 1, "{body}");
        let sources: Vec<Value> = session
            .all_payloads()
            .iter()
            .filter(|p| p["hook_event_name"] == "SessionStart")
            .map(|p| p["source"].clone())
            .collect();
        assert!(
            sources.contains(&json!("clear")),
            "no SessionStart clear: {sources:?}"
        );
    }

    let records: Vec<Value> = std::fs::read_dir(session.state_dir().join("sessions"))
        .expect("session records")
        .map(|e| serde_json::from_slice(&std::fs::read(e.unwrap().path()).unwrap()).unwrap())
        .collect();
    let text = serde_json::to_string(&records).unwrap();
    for leak in ["zebra-lantern", "redis-opal", "quasar9", world.scope.as_str()] {
        assert!(!text.contains(leak), "session record holds {leak}: {text}");
    }
    assert!(
        records.iter().any(|r| r["receipt_id"].is_string()),
        "an injected receipt was recorded: {text}"
    );
}

/// Runs `powercontext-hooks statusline` on the session's state with Claude Code's status-line
/// payload (the committed fixture, its paths pointed at the session) on stdin.
fn statusline_for(session: &HostSession) -> String {
    let mut payload: Value = serde_json::from_str(
        &std::fs::read_to_string(Integration::ClaudeCode.fixtures_dir().join("statusline.json"))
            .expect("fixture"),
    )
    .expect("fixture is JSON");
    let project = session.project_dir().display().to_string();
    payload["cwd"] = json!(project);
    payload["workspace"] = json!({"current_dir": project, "project_dir": project});
    let mut child = Command::new(env!("CARGO_BIN_EXE_powercontext-hooks"))
        .arg("statusline")
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("POWERCONTEXT_HOOKS_STATE_DIR", session.state_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run statusline");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "statusline exit: {:?}", out.status);
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 status line")
}

/// Claude Code's status line after real `claude -p` turns: what the journal recorded for the
/// hook Claude Code ran (context recalled, or the Server down with the prompt spooled).
pub fn claude_status_line_after_real_turns() {
    let host = Integration::ClaudeCode;
    let world = World::new(host, RealServer::shared(), "statusline");
    world.server.remember(
        &world.scope,
        "The heron4 batch importer writes to the bucket heron-archive-9.",
    );
    let session = world.session().build();
    assert_eq!(statusline_for(&session), "PC · no prompt hook run yet\n");
    let prompt = "Where does the heron4 batch importer write?";
    session.prompt(prompt).assert_completed(REPLY);
    let (_, context) = world.last_turn_context(1);
    assert!(context.is_some_and(|c| c.contains("heron-archive-9")));
    // The capture is delivered (and flushed at Stop) by a detached drainer: while it is on its
    // way the line rightly counts it as pending.
    let settled = Instant::now() + Duration::from_secs(15);
    let mut line = statusline_for(&session);
    while !line.ends_with(" 0 pending\n") && Instant::now() < settled {
        std::thread::sleep(Duration::from_millis(200));
        line = statusline_for(&session);
    }
    let rest = line
        .strip_prefix("PC ✓ ")
        .and_then(|l| l.strip_suffix(" ms · 1 recalled · 0 pending\n"))
        .unwrap_or_else(|| panic!("unexpected status line: {line:?}"));
    assert!(rest.parse::<u64>().is_ok(), "{line:?}");
    let journal = std::fs::read_to_string(session.state_dir().join("journal-claude-code.jsonl")).unwrap();
    assert!(!journal.contains("heron"), "{journal}");
    assert!(!journal.contains(&world.scope), "{journal}");

    let down = HostSession::builder(host, &world.model)
        .hook(Path::new(hook_exe(host)))
        .server_url(&closed_port_url())
        .build();
    down.prompt("Where does the heron4 importer write when offline?")
        .assert_completed(REPLY);
    assert_eq!(statusline_for(&down), "PC ✗ server down · 1 spooled\n");
}
