//! Real OpenCode (pinned in tests/e2e/opencode/package-lock.json) with our plugin from
//! `installers/opencode/` and `powercontext-hook-opencode`, the real Server and a fake
//! OpenAI-compatible model, inside a loopback-only namespace. Proves that recalled context reaches
//! the model request of its own turn only, as a message of its own right after the prompt, that
//! title generation never gets it (a probe plugin shows what the title would send in the racing
//! order, so that order is checked on every run), that a later prompt gets its own context and
//! never the earlier one's, that `opencode session delete` clears our state, and that a Server
//! that is down, a missing executable or a hanging one leave `opencode run` answering normally
//! with exit 0.
//! Nothing here may skip: a missing OpenCode, Server or namespace fails with how to fix it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use powercontext_hooks_core::workspace::sha256_hex;
use powercontext_hooks_test_support::fake_model::FakeModel;
use powercontext_hooks_test_support::host_opencode::{
    CONTEXT_PREFIX, OpenCodeSession, OpenCodeSessionBuilder, assert_completed, is_turn_request, session_id,
    user_texts,
};
use powercontext_hooks_test_support::hosts::HostRun;
use powercontext_hooks_test_support::real_server::RealServer;
use serde_json::Value;

use crate::support::OPENCODE;

/// What the fake model answers; a completed turn prints exactly this.
const REPLY: &str = "FAKE-OPENCODE-REPLY-4417";

fn builder(model: &FakeModel) -> OpenCodeSessionBuilder {
    // Background drainers would outlive the test's temp dirs; they are tested elsewhere.
    OpenCodeSession::builder(model).env("POWERCONTEXT_HOOKS_NO_BACKGROUND_DRAIN", "1")
}

/// Bodies of the main-turn model requests so far (title generation excluded), oldest first.
fn turn_bodies(model: &FakeModel) -> Vec<Value> {
    model
        .model_requests()
        .iter()
        .map(|r| r.json().expect("model request body is JSON"))
        .filter(is_turn_request)
        .collect()
}

/// How many of our context parts a request carries, anywhere.
fn prefix_count(body: &Value) -> usize {
    user_texts(body)
        .iter()
        .flatten()
        .filter(|t| t.starts_with(CONTEXT_PREFIX))
        .count()
}

/// Our context parts in the user message that closes a request: the plugin's own message, right
/// after the turn's prompt.
fn latest_context(body: &Value) -> Vec<String> {
    user_texts(body)
        .last()
        .map(|texts| {
            texts
                .iter()
                .filter(|t| t.starts_with(CONTEXT_PREFIX))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The user messages of a request that are not our context: the prompts, oldest first.
fn prompts(body: &Value) -> Vec<Vec<String>> {
    user_texts(body)
        .into_iter()
        .filter(|texts| !texts.iter().any(|t| t.starts_with(CONTEXT_PREFIX)))
        .collect()
}

/// The context is a message of its own, the last of the request, right after the prompt it
/// was recalled for (whose message is left as the user typed it).
#[track_caller]
fn assert_context_follows(body: &Value, prompt: &str) {
    let users = user_texts(body);
    let n = users.len();
    assert!(n >= 2, "a prompt and the context: {users:?}");
    assert!(
        users[n - 1].iter().all(|t| t.starts_with(CONTEXT_PREFIX)),
        "the last user message is the context alone: {users:?}"
    );
    assert!(
        users[n - 2].iter().any(|t| t.contains(prompt))
            && !users[n - 2].iter().any(|t| t.starts_with(CONTEXT_PREFIX)),
        "the prompt's message, as typed, just before it: {users:?}"
    );
}

/// Title generation (the requests that are not the turn's) never carries context, whichever
/// of the turn's steps it raced with.
#[track_caller]
fn assert_titles_free_of_context(model: &FakeModel) {
    let titles: Vec<Value> = model
        .model_requests()
        .iter()
        .filter_map(|r| r.json())
        .filter(|b| !is_turn_request(b))
        .collect();
    assert!(
        titles.iter().all(|b| prefix_count(b) == 0),
        "title generation never carries context: {titles:?}"
    );
}

/// A probe plugin, installed next to ours, that writes to `out` (one JSON line per `opencode run`)
/// what title generation would send if it converted the first step's history after every
/// transform had run: the order in which the race shows, made certain (see the fixture).
fn with_title_view_probe(builder: OpenCodeSessionBuilder, out: &Path) -> OpenCodeSessionBuilder {
    let probe = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/opencode/title-view-probe.js");
    builder
        .extra_plugin(&probe)
        .env("TITLE_VIEW_PROBE_PATH", &out.display().to_string())
}

/// The title views the probe wrote, one per `opencode run`, oldest first.
fn title_views(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a probe line is JSON"))
        .collect()
}

fn assert_no_context_anywhere(model: &FakeModel, run: &HostRun) {
    assert!(
        !model.any_body_contains(CONTEXT_PREFIX),
        "no context may reach the model\n{}",
        run.stderr
    );
}

#[test]
fn recall_reaches_its_own_turn_only_and_session_delete_clears_state() {
    let server = RealServer::shared();
    let scope = server.create_scope("e2e opencode recall");
    server.remember(
        &scope,
        "The quasar7 ingest service keeps its cache in the redis-orchid-51 cluster.",
    );
    server.remember(
        &scope,
        "The billing export job runs every Tuesday on the zeta-ledger-88 host.",
    );
    let model = FakeModel::start(REPLY);
    let probe_dir = tempfile::tempdir().expect("probe dir");
    let probe_out = probe_dir.path().join("title-views.jsonl");
    let session = with_title_view_probe(builder(&model), &probe_out)
        .hook(Path::new(OPENCODE))
        .server_url(&server.url())
        .build();
    // Bind this project's workspace key (SHA-256 of the session directory) to the scope, so the
    // scope is found exactly as the official CLI's `scope resolve --integration opencode` finds it.
    let workspace = sha256_hex(session.project_dir().as_os_str().as_encoded_bytes());
    server.bind("opencode", "workspace", &workspace, &scope);

    // Turn 1: a multi-word prompt, which `opencode run` hands the plugin in quotes.
    let first = "Where does quasar7 ingest keep its cache?";
    let run1 = session.prompt(first);
    assert_completed(&run1, REPLY);
    let sid = session_id(&run1).expect("the run names its session");
    let turns = turn_bodies(&model);
    assert_eq!(turns.len(), 1, "one main-turn model call");
    let ctx1 = latest_context(&turns[0]);
    assert_eq!(
        ctx1.len(),
        1,
        "exactly one context part in the turn's user message\n{}",
        run1.stderr
    );
    assert!(
        ctx1[0].contains("redis-orchid-51"),
        "recalled fact missing: {}",
        ctx1[0]
    );
    assert_titles_free_of_context(&model);
    // Whichever order OpenCode's title fiber and the transform ran in this time: had the title
    // converted the history after the transform, it would still be the prompt alone.
    let views = title_views(&probe_out);
    assert_eq!(views.len(), 1, "one probe line for the first run: {views:?}");
    let view = views[0].as_array().expect("the first turn makes a title");
    assert_eq!(view.len(), 1, "the history up to the prompt: {view:?}");
    assert_eq!(view[0]["role"], "user");
    let texts = view[0]["texts"].as_array().unwrap();
    assert!(
        texts
            .iter()
            .any(|t| t.as_str().is_some_and(|t| t.contains(first)))
            && !texts
                .iter()
                .any(|t| t.as_str().is_some_and(|t| t.starts_with(CONTEXT_PREFIX))),
        "the title's view is the prompt alone: {view:?}"
    );
    assert_context_follows(&turns[0], first);

    // The prompt became a Source, without the quotes.
    let captured: Vec<Value> = server
        .sources(&scope)
        .into_iter()
        .filter(|s| {
            s["source_id"]
                .as_str()
                .is_some_and(|id| id.starts_with("opencode-user-prompt:"))
        })
        .collect();
    assert_eq!(captured.len(), 1, "{captured:?}");
    assert_eq!(captured[0]["content"], first);

    // Turn 2 in the same session: its own context, and turn 1's part is not in the history.
    let second = "When does the billing export job run?";
    let run2 = session.prompt_in(&sid, second);
    assert_completed(&run2, REPLY);
    let turns = turn_bodies(&model);
    assert_eq!(turns.len(), 2);
    let body2 = &turns[1];
    let history = user_texts(body2);
    let typed = prompts(body2);
    assert!(
        typed.len() == 2
            && typed[0].iter().any(|t| t.contains(first))
            && typed[1].iter().any(|t| t.contains(second)),
        "the two prompts, as typed: {history:?}"
    );
    assert_context_follows(body2, second);
    assert_eq!(
        prefix_count(body2),
        1,
        "one context part in the whole request: {history:?}"
    );
    let ctx2 = latest_context(body2);
    assert_eq!(ctx2.len(), 1);
    assert!(ctx2[0].contains("zeta-ledger-88"), "turn 2 context: {}", ctx2[0]);
    assert_ne!(ctx2[0], ctx1[0], "turn 2 never gets turn 1's context");

    // `opencode session delete` reaches the plugin's `session.deleted` and clears our state.
    let turn_file = session
        .state_dir()
        .join("opencode-turns")
        .join(format!("{}.seen", sha256_hex(sid.as_bytes())));
    assert!(
        turn_file.is_file(),
        "the session is known on disk before the delete"
    );
    let deleted = session.delete_session(&sid);
    assert!(
        deleted.status.success(),
        "session delete failed: {}",
        deleted.stderr
    );
    assert!(
        !turn_file.exists(),
        "session.deleted must clear the session's state"
    );
}

#[test]
fn server_down_leaves_the_turn_untouched() {
    let model = FakeModel::start(REPLY);
    let session = builder(&model).hook(Path::new(OPENCODE)).build();
    let run = session.prompt("Where does quasar7 ingest keep its cache?");
    assert_completed(&run, REPLY);
    assert_no_context_anywhere(&model, &run);
}

#[test]
fn missing_executable_leaves_the_turn_untouched() {
    let model = FakeModel::start(REPLY);
    let session = builder(&model)
        .hook(&PathBuf::from("/nonexistent/powercontext-hook-opencode"))
        .build();
    let run = session.prompt("hello there");
    assert_completed(&run, REPLY);
    assert_no_context_anywhere(&model, &run);
}

#[test]
fn hanging_executable_is_cut_off_and_the_turn_completes() {
    let model = FakeModel::start(REPLY);
    let probe = builder(&model).build();
    let hang = probe.write_script("hanging-hook", "sleep 600");
    let session = builder(&model)
        .hook(&hang)
        .env("POWERCONTEXT_OPENCODE_PREPARE_TIMEOUT_MS", "1500")
        .build();
    let run = session.prompt("hello there");
    assert_completed(&run, REPLY);
    assert_no_context_anywhere(&model, &run);
    // 1.5 s for chat.message plus 3 s for the one transform: far below any "hung" threshold.
    assert!(run.elapsed < Duration::from_secs(60), "took {:?}", run.elapsed);
}

/// Session memory on OpenCode: the session's first `chat.message` carries the pinned memory with
/// that turn's recall (package first); OpenCode's transform changes only the request in flight, so
/// the second turn of the session carries its own full recall again and no package (the session
/// was bootstrapped once, and the first turn's part is not in the history).
#[test]
fn the_sessions_first_message_carries_the_pinned_memory_once() {
    let server = RealServer::shared();
    let (scope, _) = crate::support::pinned_scope(
        server,
        "opencode e2e",
        "Team rule zebra-lantern-44: every release note names its rollback owner.",
    );
    server.remember(
        &scope,
        "The quasar9 ingest service keeps its cache in the redis-opal-79 cluster.",
    );
    let model = FakeModel::start(REPLY);
    let session = builder(&model)
        .hook(Path::new(OPENCODE))
        .server_url(&server.url())
        .env("POWERCONTEXT_OPENCODE_SCOPE_ID", &scope)
        .build();
    let (pinned, fact) = ("zebra-lantern-44", "redis-opal-79");

    let run1 = session.prompt("Where does quasar9 ingest keep its cache?");
    assert_completed(&run1, REPLY);
    let sid = session_id(&run1).expect("the run names its session");
    let turns = turn_bodies(&model);
    assert_eq!(turns.len(), 1, "one main-turn model call");
    let ctx1 = latest_context(&turns[0]);
    assert_eq!(ctx1.len(), 1, "one context part\n{}", run1.stderr);
    assert_eq!(
        ctx1[0].matches(pinned).count(),
        1,
        "package on the first turn: {}",
        ctx1[0]
    );
    assert_eq!(
        ctx1[0].matches(fact).count(),
        1,
        "recall on the first turn: {}",
        ctx1[0]
    );
    assert!(
        ctx1[0].find(pinned) < ctx1[0].find(fact),
        "package first: {}",
        ctx1[0]
    );
    assert_titles_free_of_context(&model);

    let run2 = session.prompt_in(&sid, "Which cluster holds the quasar9 ingest cache again?");
    assert_completed(&run2, REPLY);
    let turns = turn_bodies(&model);
    assert_eq!(turns.len(), 2);
    let whole = turns[1].to_string();
    assert_eq!(
        whole.matches(fact).count(),
        1,
        "full recall on the second turn: {whole}"
    );
    assert!(
        !whole.contains(pinned),
        "the session is bootstrapped once, not per message: {whole}"
    );
}
