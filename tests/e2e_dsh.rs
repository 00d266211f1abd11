//! Real DSH (DeepSeek Harness 0.1.0-rc.8 on Node 22, pinned in tests/e2e/dsh) with our plugin,
//! the real Server and a fake model, inside a loopback-only namespace: recalled context reaches the
//! model request, the prompt is stored as a Source, a multi-step turn recalls once, and a Server
//! that is down or an executable that is missing or hangs leaves DSH answering normally. Never
//! skips: a missing DSH fails with the script that installs it.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use powercontext_hooks_test_support::fake_model::FakeModel;
use powercontext_hooks_test_support::fault_server::{FaultServer, Reply, closed_port_url};
use powercontext_hooks_test_support::host_dsh::{DshSession, DshSessionBuilder, Install, injected_contexts};
use powercontext_hooks_test_support::real_server::RealServer;
use serde_json::{Value, json};

use crate::support::DSH;

/// What the fake model answers; a completed turn prints exactly this.
const REPLY: &str = "FAKE-MODEL-REPLY-7731";

/// DSH runs are heavy (Node, ~170 MB each) on a 2-core machine: one at a time keeps them from
/// starving each other, and the real Server, into timeouts.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The real Server can be slow on a loaded machine; these tests prove the chain, the budgets are
/// proven elsewhere (tests/dsh.rs).
fn patient(builder: DshSessionBuilder) -> DshSessionBuilder {
    builder
        .env("POWERCONTEXT_DSH_REQUEST_TIMEOUT_SECONDS", "8")
        .env("POWERCONTEXT_DSH_HTTP_BUDGET_SECONDS", "20")
        .timeout_ms(25_000)
}

fn bodies(model: &FakeModel) -> Vec<Value> {
    model
        .model_requests()
        .iter()
        .map(|r| r.json().expect("model request is JSON"))
        .collect()
}

/// The run's first agent-turn model call. DSH asks for the session title in a call of its own
/// that runs concurrently with the turn and may reach the model first; only the turn offers tools.
fn turn_body(model: &FakeModel) -> Value {
    let all = bodies(model);
    all.iter()
        .find(|b| b.get("tools").is_some())
        .cloned()
        .unwrap_or_else(|| panic!("no agent-turn model call among {} calls: {all:?}", all.len()))
}

/// A fresh scope with one remembered fact, and a session wired to it.
fn world(model: &FakeModel, tag: &str) -> (&'static RealServer, String, DshSessionBuilder) {
    let server = RealServer::shared();
    let scope = server.create_scope(&format!("e2e dsh {tag}"));
    server.remember(
        &scope,
        "The quasar7 ingest service keeps its cache in the redis-orchid-51 cluster.",
    );
    let builder = patient(DshSession::builder(model))
        .hook(Path::new(DSH))
        .server_url(&server.url())
        .env("POWERCONTEXT_DSH_SCOPE_ID", &scope);
    (server, scope, builder)
}

/// Our captured Sources, once there are some: the detached drainer delivers them after the hook
/// answered, so they may land a moment after the run (waits up to 10 s, then 300 ms more so a
/// duplicate would show).
fn captured(server: &RealServer, scope: &str) -> Vec<Value> {
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while captured_now(server, scope).is_empty() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    captured_now(server, scope)
}

fn captured_now(server: &RealServer, scope: &str) -> Vec<Value> {
    server
        .sources(scope)
        .into_iter()
        .filter(|s| {
            s["source_id"]
                .as_str()
                .is_some_and(|id| id.starts_with("dsh-user-prompt:"))
        })
        .collect()
}

fn recall_and_capture(install: Install) {
    let model = FakeModel::start(REPLY);
    let (server, scope, builder) = world(&model, "recall");
    let session = builder.install(install).build();
    let prompt = "Where does quasar7 ingest keep its cache?";
    let run = session.run(prompt);
    run.assert_answered(REPLY);

    let contexts = injected_contexts(&turn_body(&model));
    assert_eq!(
        contexts.len(),
        1,
        "one injected context: {contexts:?}\n--- plugin log\n{:?}\n--- stderr\n{}",
        session.plugin_log(),
        run.stderr
    );
    assert!(
        contexts[0].contains("redis-orchid-51"),
        "recalled fact missing: {}",
        contexts[0]
    );
    let sources = captured(server, &scope);
    assert_eq!(sources.len(), 1, "one captured prompt: {sources:?}");
    assert_eq!(sources[0]["content"], prompt);
    assert!(
        session.plugin_log().is_empty(),
        "a ready run logs nothing: {:?}",
        session.plugin_log()
    );
}

#[test]
fn recall_reaches_the_model_and_the_prompt_is_captured() {
    let _serial = serial();
    recall_and_capture(Install::Patch);
}

#[test]
fn the_plugin_package_installs_with_dsh_plugin_add() {
    let _serial = serial();
    recall_and_capture(Install::PluginAdd);
}

#[test]
fn server_down_leaves_dsh_answering_and_is_logged() {
    let _serial = serial();
    let model = FakeModel::start(REPLY);
    let session = DshSession::builder(&model)
        .hook(Path::new(DSH))
        .server_url(&closed_port_url())
        .build();
    let run = session.run("server down turn");
    run.assert_answered(REPLY);
    assert!(injected_contexts(&turn_body(&model)).is_empty());
    let log = session.plugin_log();
    assert!(
        log.iter()
            .any(|l| l["type"] == "warn" && l["text"].as_str().unwrap().contains("\"server_unavailable\"")),
        "the outcome reaches the DSH logger: {log:?}"
    );
}

#[test]
fn a_missing_executable_leaves_dsh_answering() {
    let _serial = serial();
    let model = FakeModel::start(REPLY);
    let session = DshSession::builder(&model)
        .hook(Path::new("/nonexistent/powercontext-hook-dsh"))
        .build();
    let run = session.run("missing executable turn");
    run.assert_answered(REPLY);
    assert!(injected_contexts(&turn_body(&model)).is_empty());
    assert!(
        session
            .plugin_log()
            .iter()
            .any(|l| l["text"].as_str().unwrap().contains("spawn_failed"))
    );
}

#[test]
fn a_hanging_executable_is_cut_off_and_dsh_answers() {
    let _serial = serial();
    let model = FakeModel::start(REPLY);
    let dir = tempfile::tempdir().unwrap();
    let hang = dir.path().join("hang.sh");
    fs::write(&hang, "#!/bin/sh\nsleep 60\n").unwrap();
    fs::set_permissions(&hang, fs::Permissions::from_mode(0o755)).unwrap();
    let session = DshSession::builder(&model).hook(&hang).timeout_ms(1000).build();
    let started = Instant::now();
    let run = session.run("hanging executable turn");
    run.assert_answered(REPLY);
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert!(injected_contexts(&turn_body(&model)).is_empty());
    assert!(
        session
            .plugin_log()
            .iter()
            .any(|l| l["text"].as_str().unwrap().contains("\"timeout\""))
    );
}

/// A chat-completions model that answers the turn's first request with one `glob` tool call and
/// everything else with text, so DSH runs a second step (pre-step with `messages: []`).
fn tool_calling_model(requests: Arc<AtomicUsize>) -> FaultServer {
    FaultServer::start(move |req| {
        if !req.path.ends_with("/chat/completions") {
            return Reply::json(404, &json!({"error": {"message": "no route"}}));
        }
        requests.fetch_add(1, Ordering::SeqCst);
        let body = req.json().unwrap_or(Value::Null);
        let messages = body["messages"].as_array().cloned().unwrap_or_default();
        let has_tools = body["tools"].as_array().is_some_and(|t| !t.is_empty());
        let after_tool = messages.iter().any(|m| m["role"] == "tool");
        let chunk = |delta: Value, finish: Value| {
            json!({"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m",
                   "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
        };
        let events = if has_tools && !after_tool {
            let call = json!([{"index": 0, "id": "call_1", "type": "function",
                               "function": {"name": "glob", "arguments": "{\"pattern\":\"*.none\"}"}}]);
            vec![
                chunk(
                    json!({"role": "assistant", "content": null, "tool_calls": call}),
                    Value::Null,
                ),
                chunk(json!({}), json!("tool_calls")),
            ]
        } else {
            vec![
                chunk(json!({"role": "assistant", "content": REPLY}), Value::Null),
                chunk(json!({}), json!("stop")),
            ]
        };
        let mut sse = String::new();
        for e in events {
            sse.push_str(&format!("data: {e}\n\n"));
        }
        let usage = json!({"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m", "choices": [],
                           "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}});
        sse.push_str(&format!("data: {usage}\n\ndata: [DONE]\n\n"));
        Reply::Status {
            status: 200,
            headers: vec![("content-type".into(), "text/event-stream".into())],
            body: sse.into_bytes(),
        }
    })
}

#[test]
fn a_multi_step_turn_recalls_once_and_injects_once() {
    let _serial = serial();
    let calls = Arc::new(AtomicUsize::new(0));
    let model_server = tool_calling_model(Arc::clone(&calls));
    let server = RealServer::shared();
    let scope = server.create_scope("e2e dsh multi-step");
    server.remember(
        &scope,
        "The quasar7 ingest service keeps its cache in the redis-orchid-51 cluster.",
    );
    // The builder only needs the model's URL; this model is ours.
    let placeholder = FakeModel::start(REPLY);
    let session = patient(DshSession::builder(&placeholder))
        .hook(Path::new(DSH))
        .server_url(&server.url())
        .env("POWERCONTEXT_DSH_SCOPE_ID", &scope)
        .env("DEEPSEEK_BASE_URL", &model_server.url())
        .build();
    let run = session.run("Where does quasar7 ingest keep its cache? Look around first.");
    run.assert_answered(REPLY);

    let turn: Vec<Value> = model_server
        .requests()
        .iter()
        .filter(|r| r.path.ends_with("/chat/completions"))
        .filter_map(|r| r.json())
        .filter(|b| b["tools"].as_array().is_some_and(|t| !t.is_empty()))
        .collect();
    assert!(
        turn.len() >= 2,
        "the tool call made a second step: {} requests\n{}",
        turn.len(),
        run.stderr
    );
    for (i, body) in turn.iter().enumerate() {
        let contexts = injected_contexts(body);
        assert_eq!(
            contexts.len(),
            1,
            "step {}: exactly one context in the conversation: {contexts:?}",
            i + 1
        );
        assert!(contexts[0].contains("redis-orchid-51"));
    }
    assert_eq!(
        captured(server, &scope).len(),
        1,
        "one capture for the one user message"
    );
}

/// Session memory on DSH: the session's first user turn carries the pinned memory, once, before
/// the turn's recall, in the one injected context.
#[test]
fn the_first_user_turn_carries_the_pinned_memory() {
    let _serial = serial();
    let model = FakeModel::start(REPLY);
    let server = RealServer::shared();
    let (scope, _) = crate::support::pinned_scope(
        server,
        "dsh e2e",
        "Team rule zebra-lantern-45: every release note names its rollback owner.",
    );
    server.remember(
        &scope,
        "The quasar9 ingest service keeps its cache in the redis-opal-80 cluster.",
    );
    let session = patient(DshSession::builder(&model))
        .hook(Path::new(DSH))
        .server_url(&server.url())
        .env("POWERCONTEXT_DSH_SCOPE_ID", &scope)
        .build();
    let run = session.run("Where does quasar9 ingest keep its cache?");
    run.assert_answered(REPLY);
    let body = turn_body(&model);
    let contexts = injected_contexts(&body);
    assert_eq!(
        contexts.len(),
        1,
        "one injected context: {contexts:?}\n{:?}\n{}",
        session.plugin_log(),
        run.stderr
    );
    let (pinned, fact) = ("zebra-lantern-45", "redis-opal-80");
    assert_eq!(body.to_string().matches(pinned).count(), 1, "{body}");
    assert_eq!(contexts[0].matches(fact).count(), 1, "{}", contexts[0]);
    assert!(
        contexts[0].find(pinned).is_some() && contexts[0].find(pinned) < contexts[0].find(fact),
        "the package comes first: {}",
        contexts[0]
    );
}
