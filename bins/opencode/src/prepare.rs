//! The `prepare` step (OpenCode `chat.message`): claim the turn in the cache → scope → recall →
//! mark that exact turn ready → answer the context (the shim keeps it in memory for `inject`) →
//! capture → optional flush, in that order (recall before capture, as the official plugin). Fails
//! open at every step; it never answers a context for a turn it no longer holds and never writes
//! a context to disk.

use powercontext_hooks_core::capture;
use powercontext_hooks_core::config::Settings;
use powercontext_hooks_core::deadline::Deadline;
use powercontext_hooks_core::emit;
use powercontext_hooks_core::env::Env;
use powercontext_hooks_core::hook::Answered;
use powercontext_hooks_core::http::Transport;
use powercontext_hooks_core::outcome::{Diagnostic, Outcome, Stage};
use powercontext_hooks_core::protocol::Answer;
use powercontext_hooks_core::state::{self, now_millis};
use powercontext_hooks_core::turn::{Capture, Prompt, Turn};

use crate::HOST;
use crate::event::PrepareEvent;
use crate::turns::TurnCache;

pub(crate) fn diag(stage: Stage, outcome: Outcome) -> Diagnostic {
    Diagnostic::new(HOST.component(), stage, outcome)
}

/// The turn this run holds, if any.
enum Claim {
    /// This run holds the session's current turn.
    Held(TurnCache, String),
    /// A newer message already holds the session: nothing this run prepares may be served.
    Superseded,
    /// The cache could not be used: the context is answered for this message alone.
    Unavailable,
}

/// Makes this message the session's current turn (before anything slow), so an older context can
/// never be served for it, even if everything after this fails.
fn claim(env: &Env, deadline: &Deadline, event: &PrepareEvent) -> Claim {
    let created = event.created_ms.unwrap_or_else(now_millis);
    let wait = deadline.within(state::HOOK_LOCK_WAIT);
    let result = TurnCache::locate(env).and_then(|cache| {
        let ticket = cache.begin(&wait, &event.session_id, &event.message_id, created)?;
        Ok((cache, ticket))
    });
    match result {
        Ok((cache, Some(ticket))) => Claim::Held(cache, ticket),
        Ok((_, None)) => {
            emit::diagnostic(&diag(Stage::State, Outcome::Skipped).detail("stale_turn"));
            Claim::Superseded
        }
        Err(e) => {
            emit::diagnostic(&diag(Stage::State, Outcome::StateUnavailable).detail(e.detail()));
            Claim::Unavailable
        }
    }
}

/// What a prompt captures: `opencode-user-prompt:` + SHA-256 of scope␀session␀message␀prompt,
/// the message id being the turn; metadata `{origin, event, cwd, session_id, message_id}`.
fn capture_of(event: &PrepareEvent, cwd: &str) -> Capture {
    Capture {
        session: event.session_id.clone(),
        turn: event.message_id.clone(),
        content: event.prompt.clone(),
        metadata: capture::metadata(
            HOST.as_str(),
            "user_prompt_submit",
            &[
                ("cwd", Some(cwd)),
                ("session_id", Some(&event.session_id)),
                ("message_id", Some(&event.message_id)),
            ],
        ),
    }
}

/// Runs the prepare step for a decoded event. `settings` is `Err` when configuration is invalid:
/// the turn is still claimed (invalidating older context), then nothing else happens.
pub fn run(
    env: &Env,
    settings: Result<&Settings, String>,
    deadline: &Deadline,
    event: &PrepareEvent,
) -> Answered {
    // A session this state has never seen is new: its resolved scope gets pinned below.
    let new_session = TurnCache::locate(env).is_ok_and(|c| !c.knows(&event.session_id));
    let claim = claim(env, deadline, event);
    let settings = match settings {
        Ok(s) => s,
        Err(setting) => {
            emit::diagnostic(&diag(Stage::Config, Outcome::ConfigInvalid).setting(setting));
            return Answer::Nothing.into();
        }
    };
    if powercontext_hooks_core::payload::is_blank(&event.prompt) {
        emit::diagnostic(&diag(Stage::Payload, Outcome::Skipped).detail("blank_prompt"));
        return Answer::Nothing.into();
    }
    // Without the session directory there is no workspace key: nothing is sent anywhere.
    let Some(directory) = event.directory.as_ref() else {
        emit::diagnostic(&diag(Stage::Payload, Outcome::Skipped).detail("missing_directory"));
        return Answer::Nothing.into();
    };
    let prompt = Prompt {
        text: &event.prompt,
        lossy: event.lossy,
        session: Some(&event.session_id),
        cwd: directory,
        capture: capture_of(event, &directory.to_string_lossy()),
        recall: &|| true,
    };
    let Some(begun) = Turn::begin(HOST, env, settings, deadline, prompt) else {
        return Answer::Nothing.into();
    };
    // Recall before capture, as the official plugin orders them.
    let mut answer = Answer::Nothing;
    if !matches!(claim, Claim::Superseded)
        && let Some(text) = begun.recall(&event.prompt, settings.max_bytes.value)
    {
        match &claim {
            Claim::Held(cache, ticket) => {
                let wait = deadline.within(state::HOOK_LOCK_WAIT);
                match cache.commit(&wait, &event.session_id, &event.message_id, ticket, &text) {
                    // The answer carries it to the shim, which hands it to the inject step (a
                    // package in it is recorded as injected once the answer is written).
                    Ok(true) => answer = Answer::Context(text),
                    // A newer message claimed the session while we were away: drop this context.
                    Ok(false) => emit::diagnostic(&diag(Stage::State, Outcome::Skipped).detail("stale_turn")),
                    // The turn file could not be written: the answer still goes to the shim, which
                    // keeps it for this message only, as every other host still answers.
                    Err(e) => {
                        emit::diagnostic(&diag(Stage::State, Outcome::StateUnavailable).detail(e.detail()));
                        answer = Answer::Context(text);
                    }
                }
            }
            // No turn file at all (the state is unusable, reported above): answered all the same.
            _ => answer = Answer::Context(text),
        }
    }
    let (transport, scope) = (begun.turn.transport.clone(), begun.scope.clone());
    // Sent once this step is done (see `powercontext_hooks_core::after`), never before the
    // context is ready.
    let mut after = begun.finish();
    // As upstream, a new session without an explicit scope is pinned to the scope it resolved to,
    // so a later workspace rebinding does not move a conversation already under way. After recall,
    // so its outcome never hides recall's (the capture goes after the step, see above);
    // `powercontext-hooks doctor`'s synthetic sessions are never pinned (they must leave no binding
    // behind).
    if new_session
        && settings.scope_id.value.is_none()
        && !event.session_id.starts_with("powercontext-hooks-doctor-")
    {
        let session = event.session_id.clone();
        // After the answer: a slow binding request never costs the prepared context.
        after.later(move || pin_session(&transport, &session, &scope));
    }
    Answered::new(answer, after)
}

/// `PUT /v1/scope-bindings` for `opencode/session/<id>` → `scope`. A failure is reported and
/// changes nothing else (the prompt still gets its recall and capture).
fn pin_session(transport: &Transport, session: &str, scope: &str) {
    let _stage = powercontext_hooks_core::process::enter(Stage::Scope);
    let body = serde_json::json!({
        "key": {"integration": HOST.as_str(), "kind": "session", "external_id": session},
        "scope_id": scope,
    });
    let failure = match transport.put_json("/v1/scope-bindings", &body) {
        Ok(reply) if reply.status == 200 => return,
        Ok(reply) => powercontext_hooks_core::http::failure_for(&reply),
        Err(e) => e.failure(),
    };
    emit::diagnostic(&failure.diagnostic(HOST.component(), Stage::Scope));
}
