//! The `prepare` step (OpenCode `chat.message`), the whole of a prompt's work: remember a new
//! session → scope → recall → answer the part for exactly this turn (the shim keeps it in memory
//! and its messages transform adds it right after the message with these ids) → capture → optional
//! flush, in that order (recall before capture, as the official plugin). Fails open at every
//! step; it never writes a context to disk.

use powercontext_hooks_core::capture;
use powercontext_hooks_core::config::Settings;
use powercontext_hooks_core::deadline::Deadline;
use powercontext_hooks_core::emit;
use powercontext_hooks_core::env::Env;
use powercontext_hooks_core::hook::Answered;
use powercontext_hooks_core::http::Transport;
use powercontext_hooks_core::outcome::{Diagnostic, Outcome, Stage};
use powercontext_hooks_core::protocol::Answer;
use powercontext_hooks_core::state;
use powercontext_hooks_core::turn::{Capture, Prompt, Turn};

use serde::Serialize;

use crate::event::PrepareEvent;
use crate::turns::SeenSessions;
use crate::{HOST, PREFIX};

pub(crate) fn diag(stage: Stage, outcome: Outcome) -> Diagnostic {
    Diagnostic::new(HOST.component(), stage, outcome)
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

/// Records a session this state has not seen (before anything slow, whatever follows) and says
/// whether it was new.
fn first_seen(env: &Env, deadline: &Deadline, session: &str) -> bool {
    let Ok(seen) = SeenSessions::locate(env) else {
        return false;
    };
    if seen.knows(session) {
        return false;
    }
    if let Err(e) = seen.remember(&deadline.within(state::HOOK_LOCK_WAIT), session) {
        emit::diagnostic(&diag(Stage::State, Outcome::StateUnavailable).detail(e.detail()));
    }
    true
}

/// Runs the prepare step for a decoded event: the part text for this turn, if any (the caller
/// answers it with the turn's ids). `settings` is `Err` when configuration is invalid: a new
/// session is still remembered, then nothing else happens.
pub fn run(
    env: &Env,
    settings: Result<&Settings, String>,
    deadline: &Deadline,
    event: &PrepareEvent,
) -> Answered {
    // A session this state has never seen is new: its resolved scope gets pinned below.
    let new_session = first_seen(env, deadline, &event.session_id);
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
    // A package in it is recorded as injected once the answer is written.
    let answer = begun
        .recall(&event.prompt, settings.max_bytes.value)
        .filter(|text| !text.trim().is_empty())
        .map_or(Answer::Nothing, |text| {
            Answer::Context(format!("{PREFIX}\n\n{text}"))
        });
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

/// The body of `PUT /v1/scope-bindings`. Typed rather than built as a JSON value, which linked a
/// JSON map's code into this hook alone; the fields are in name order, as such a map wrote them,
/// so the body is the same to the byte.
#[derive(Serialize)]
struct Binding<'a> {
    key: SessionKey<'a>,
    scope_id: &'a str,
}

/// A session's binding key.
#[derive(Serialize)]
struct SessionKey<'a> {
    external_id: &'a str,
    integration: &'a str,
    kind: &'a str,
}

/// `PUT /v1/scope-bindings` for `opencode/session/<id>` → `scope`. A failure is reported and
/// changes nothing else (the prompt still gets its recall and capture).
fn pin_session(transport: &Transport, session: &str, scope: &str) {
    let _stage = powercontext_hooks_core::process::enter(Stage::Scope);
    let body = Binding {
        key: SessionKey {
            external_id: session,
            integration: HOST.as_str(),
            kind: "session",
        },
        scope_id: scope,
    };
    let failure = match transport.put_json("/v1/scope-bindings", &body) {
        Ok(reply) if reply.status == 200 => return,
        Ok(reply) => powercontext_hooks_core::http::failure_for(&reply),
        Err(e) => e.failure(),
    };
    emit::diagnostic(&failure.diagnostic(HOST.component(), Stage::Scope));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_binding_body_is_the_json_object_it_replaces() {
        for (session, scope) in [("ses_1", "project:a"), ("quote \" é \u{1}", "")] {
            let typed = Binding {
                key: SessionKey {
                    external_id: session,
                    integration: HOST.as_str(),
                    kind: "session",
                },
                scope_id: scope,
            };
            let map = serde_json::json!({
                "key": {"integration": HOST.as_str(), "kind": "session", "external_id": session},
                "scope_id": scope,
            });
            assert_eq!(
                serde_json::to_vec(&typed).unwrap(),
                serde_json::to_vec(&map).unwrap()
            );
        }
    }
}
