//! The `prepare` step (OpenCode `chat.message`): claim the turn in the cache → scope → recall →
//! store the context for that exact turn → capture → optional flush, in that order (recall before
//! capture, as the official plugin). Fails open at every step; it never writes to stdout and never
//! stores context for a turn it no longer holds.

use powercontext_hooks_core::capture::{self, CaptureGate};
use powercontext_hooks_core::config::Settings;
use powercontext_hooks_core::deadline::Deadline;
use powercontext_hooks_core::drain;
use powercontext_hooks_core::emit;
use powercontext_hooks_core::env::Env;
use powercontext_hooks_core::host::Integration;
use powercontext_hooks_core::http::Transport;
use powercontext_hooks_core::ledger;
use powercontext_hooks_core::outcome::{Diagnostic, Failure, Outcome, Stage};
use powercontext_hooks_core::prompt_hook::{PromptEvent, PromptHookProfile, capture_request};
use powercontext_hooks_core::recall;
use powercontext_hooks_core::scope::ScopeQuery;
use powercontext_hooks_core::spool::{self, SpooledCapture};
use powercontext_hooks_core::state::{self, now_millis};
use powercontext_hooks_core::wire::PreparedContext;

use crate::event::PrepareEvent;
use crate::turns::TurnCache;

/// The integration.
pub const INTEGRATION: Integration = Integration::OpenCode;

/// How captures are keyed and described: the message id is the turn (`source_id` =
/// `opencode-user-prompt:` + SHA-256 of scope␀session␀message␀prompt, metadata `message_id`).
pub const PROFILE: PromptHookProfile = PromptHookProfile {
    integration: INTEGRATION,
    prompt_fields: &[],
    session_fields: &[],
    turn_fields: &[],
    turn_metadata_key: "message_id",
    context_char_limit: None,
};

pub(crate) fn diag(stage: Stage, outcome: Outcome) -> Diagnostic {
    Diagnostic::new(INTEGRATION.component(), stage, outcome)
}

fn report(stage: Stage, failure: Failure) {
    emit::diagnostic(&failure.diagnostic(INTEGRATION.component(), stage));
}

/// The turn this run holds, if any.
enum Claim {
    /// This run holds the session's current turn.
    Held(TurnCache, String),
    /// A newer message already holds the session: nothing this run prepares may be served.
    Superseded,
    /// The cache could not be used; recall would be pointless.
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

fn prompt_event(event: &PrepareEvent) -> Option<PromptEvent> {
    Some(PromptEvent {
        prompt: event.prompt.clone(),
        cwd: event.directory.clone()?,
        session_id: Some(event.session_id.clone()),
        turn_id: Some(event.message_id.clone()),
        lossy: event.lossy,
    })
}

/// Runs the prepare step for a decoded event. `settings` is `Err` when configuration is invalid:
/// the turn is still claimed (invalidating older context), then nothing else happens.
pub fn run(env: &Env, settings: Result<&Settings, String>, deadline: &Deadline, event: &PrepareEvent) {
    let claim = claim(env, deadline, event);
    let settings = match settings {
        Ok(s) => s,
        Err(setting) => {
            emit::diagnostic(&diag(Stage::Config, Outcome::ConfigInvalid).setting(setting));
            return;
        }
    };
    if event.prompt.is_empty() {
        emit::diagnostic(&diag(Stage::Payload, Outcome::Skipped).detail("blank_prompt"));
        return;
    }
    // Without the session directory there is no workspace key: nothing is sent anywhere.
    let Some(prompt) = prompt_event(event) else {
        emit::diagnostic(&diag(Stage::Payload, Outcome::Skipped).detail("missing_directory"));
        return;
    };
    let transport = match Transport::new(
        settings.server_url.value.clone(),
        settings.authorization.value.clone(),
        settings.request_timeout.value,
        *deadline,
        env,
    ) {
        Ok(t) => t,
        Err(name) => {
            emit::diagnostic(&diag(Stage::Config, Outcome::ConfigInvalid).setting(name));
            return;
        }
    };
    let capture_allowed = capture_allowed(settings, &prompt);
    let query = ScopeQuery::for_event(
        INTEGRATION,
        settings.scope_id.value.as_deref(),
        Some(&event.session_id),
        &prompt.cwd,
        deadline,
    );
    let scope = match query.resolve(&transport) {
        Ok(s) => s,
        Err(f) => {
            report(Stage::Scope, f);
            if capture_allowed && drain::is_retryable(&f) {
                spool_capture(env, settings, &transport, query, &prompt);
            }
            return;
        }
    };
    if let Claim::Held(cache, ticket) = &claim {
        recall_into(cache, ticket, settings, &transport, &scope, event, deadline);
    }
    if capture_allowed {
        capture_prompt(env, settings, &transport, &scope, &prompt);
    }
}

/// The persistence policy, decided before any network call.
fn capture_allowed(settings: &Settings, prompt: &PromptEvent) -> bool {
    if !settings.capture_prompts.value {
        return false;
    }
    if prompt.lossy {
        emit::diagnostic(&diag(Stage::Capture, Outcome::CaptureSkippedLossy));
        return false;
    }
    match capture::gate(&prompt.prompt) {
        CaptureGate::Allowed => true,
        CaptureGate::Secret(kind) => {
            emit::diagnostic(&diag(Stage::Capture, Outcome::CaptureSkippedSecret).detail(kind));
            false
        }
        CaptureGate::TooLarge => {
            emit::diagnostic(&diag(Stage::Capture, Outcome::CaptureSkippedTooLarge));
            false
        }
    }
}

fn recall_into(
    cache: &TurnCache,
    ticket: &str,
    settings: &Settings,
    transport: &Transport,
    scope: &str,
    event: &PrepareEvent,
    deadline: &Deadline,
) {
    match recall::prepare(transport, scope, &event.prompt, settings.max_bytes.value) {
        Ok(PreparedContext::Ready(text)) => {
            let wait = deadline.within(state::HOOK_LOCK_WAIT);
            match cache.commit(&wait, &event.session_id, &event.message_id, ticket, &text) {
                Ok(true) => {}
                // A newer message claimed the session while we were away: drop this context.
                Ok(false) => emit::diagnostic(&diag(Stage::State, Outcome::Skipped).detail("stale_turn")),
                Err(e) => emit::diagnostic(&diag(Stage::State, Outcome::StateUnavailable).detail(e.detail())),
            }
        }
        Ok(PreparedContext::Empty) => {
            let mut d = diag(Stage::Prepare, Outcome::Empty).status(Some(200));
            d.context_status = Some("empty");
            d.content_bytes = Some(0);
            emit::diagnostic(&d);
        }
        Err(f) => report(Stage::Prepare, f),
    }
}

fn capture_prompt(env: &Env, settings: &Settings, transport: &Transport, scope: &str, prompt: &PromptEvent) {
    let request = capture_request(&PROFILE, scope, prompt);
    match capture::send(transport, &request) {
        Ok(position) => {
            if settings.flush_on_capture.value
                && let Err(f) =
                    capture::flush_through(transport, scope, position, settings.flush_max_calls.value)
            {
                report(Stage::Flush, f);
                // Not flushed yet: the ledger keeps the position for the drainer (a Server
                // without a model never will flush, so that case is not kept).
                if f.outcome != Outcome::InferenceUnavailable {
                    let wait = transport.deadline().within(state::HOOK_LOCK_WAIT);
                    let server = transport.base().as_str();
                    ledger::keep_pending(
                        INTEGRATION.component(),
                        env,
                        &wait,
                        server,
                        scope,
                        position,
                        INTEGRATION.as_str(),
                    );
                }
            }
        }
        Err(f) => {
            report(Stage::Capture, f);
            if drain::is_retryable(&f) {
                let resolved = ScopeQuery {
                    explicit: Some(scope.to_owned()),
                    keys: Vec::new(),
                    legacy: None,
                    legacy_from: None,
                };
                spool_capture(env, settings, transport, resolved, prompt);
            }
        }
    }
}

/// Keeps a capture the Server could not take, with what replay needs to rebuild the exact online
/// request (same scope, `source_id` and metadata). The gate already ran: no secret reaches here.
fn spool_capture(
    env: &Env,
    settings: &Settings,
    transport: &Transport,
    query: ScopeQuery,
    prompt: &PromptEvent,
) {
    let request = capture_request(&PROFILE, "", prompt);
    let entry = SpooledCapture {
        integration: INTEGRATION.as_str().to_owned(),
        server: transport.base().as_str().to_owned(),
        source_prefix: INTEGRATION.source_prefix().to_owned(),
        query,
        session: prompt.session_id.clone().unwrap_or_default(),
        turn: prompt.turn_id.clone().unwrap_or_default(),
        content: request.content,
        metadata: request.metadata,
        flush: settings.flush_on_capture.value,
    };
    let wait = transport.deadline().within(state::HOOK_LOCK_WAIT);
    spool::keep_for_later(INTEGRATION.component(), env, &wait, &entry);
}
