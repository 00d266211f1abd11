//! The `UserPromptSubmit` pipeline shared by Claude Code and Codex: payload → settings → scope →
//! recall and capture concurrently (each guarded on its own) → answer. Fails open at every step:
//! whatever happens, the host gets at most one protocol line and exit code 0, on time.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use serde_json::Value;

use crate::capture::{self, CaptureGate};
use crate::config::{Settings, vars};
use crate::deadline::Deadline;
use crate::drain;
use crate::emit;
use crate::env::Env;
use crate::host::Integration;
use crate::http::Transport;
use crate::ledger;
use crate::outcome::{Diagnostic, Failure, Outcome, Stage};
use crate::payload::{self, first_text};
use crate::process::{self, StdinProblem};
use crate::protocol::{self, Answer, Protocol};
use crate::recall;
use crate::scope::ScopeQuery;
use crate::spool::{self, SpooledCapture};
use crate::state;
use crate::wire::{CaptureRequest, PreparedContext};

/// What differs between the `UserPromptSubmit` hosts.
#[derive(Debug, Clone, Copy)]
pub struct PromptHookProfile {
    /// The host.
    pub integration: Integration,
    /// Payload fields holding the prompt, first non-blank wins.
    pub prompt_fields: &'static [&'static str],
    /// Payload fields holding the session id.
    pub session_fields: &'static [&'static str],
    /// Payload fields holding the turn id.
    pub turn_fields: &'static [&'static str],
    /// Metadata key for the turn id (`prompt_id` for Claude Code, `turn_id` for Codex).
    pub turn_metadata_key: &'static str,
    /// The host truncates injected context above this many characters.
    pub context_char_limit: Option<usize>,
}

/// One prompt event, decoded.
#[derive(Debug, Clone)]
pub struct PromptEvent {
    /// The prompt exactly as sent (possibly repaired, see `lossy`).
    pub prompt: String,
    /// The session working directory.
    pub cwd: PathBuf,
    /// Session id, trimmed.
    pub session_id: Option<String>,
    /// Turn id, trimmed.
    pub turn_id: Option<String>,
    /// True when stdin had to be repaired: recall only, never captured.
    pub lossy: bool,
}

/// Why a payload was skipped (content-free detail words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// Not JSON (or not an object).
    NotJson,
    /// Not a `UserPromptSubmit` event.
    WrongEvent,
    /// A turn or session boundary (`Stop`, `SessionEnd`): nothing to inject; pending spool and
    /// ledger work is handed to the background drainer after the (empty) answer.
    Boundary,
    /// No non-blank prompt.
    BlankPrompt,
    /// No `cwd` string.
    MissingCwd,
}

impl SkipReason {
    /// The detail word.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotJson => "not_json",
            Self::WrongEvent => "wrong_event",
            Self::Boundary => "boundary",
            Self::BlankPrompt => "blank_prompt",
            Self::MissingCwd => "missing_cwd",
        }
    }
}

/// Decodes a host payload.
///
/// # Errors
/// The [`SkipReason`] when the payload is not a usable prompt event.
pub fn parse_event(profile: &PromptHookProfile, bytes: &[u8]) -> Result<PromptEvent, SkipReason> {
    let decoded = payload::decode(bytes).ok_or(SkipReason::NotJson)?;
    let v = &decoded.value;
    if !v.is_object() {
        return Err(SkipReason::NotJson);
    }
    let event = v.get("hook_event_name").and_then(Value::as_str).unwrap_or("");
    let normalized = event.replace('_', "").to_ascii_lowercase();
    if normalized == "stop" || normalized == "sessionend" {
        return Err(SkipReason::Boundary);
    }
    if normalized != "userpromptsubmit" {
        return Err(SkipReason::WrongEvent);
    }
    // The prompt itself is not trimmed: it is captured exactly as typed.
    let prompt = profile
        .prompt_fields
        .iter()
        .find_map(|f| v.get(*f).and_then(Value::as_str).filter(|s| !s.trim().is_empty()))
        .ok_or(SkipReason::BlankPrompt)?;
    let cwd = v
        .get("cwd")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or(SkipReason::MissingCwd)?;
    Ok(PromptEvent {
        prompt: prompt.to_owned(),
        cwd: PathBuf::from(cwd),
        session_id: first_text(v, profile.session_fields).map(str::to_owned),
        turn_id: first_text(v, profile.turn_fields).map(str::to_owned),
        lossy: decoded.lossy,
    })
}

/// Runs a `UserPromptSubmit` hook process end to end and returns its exit code (always 0).
#[must_use]
pub fn main(profile: &PromptHookProfile) -> ExitCode {
    if drain::is_drain_invocation() {
        return drain::background_main(profile.integration.component());
    }
    let start = Instant::now();
    let component = profile.integration.component();
    process::install_panic_hook(component);
    let env = Env::from_process();
    if env.text(vars::FAULT) == Some("panic") {
        panic!("fault injection requested by {}", vars::FAULT);
    }
    let answer = run(profile, &env, start);
    let code = protocol::deliver(Protocol::UserPromptSubmit, &answer);
    // Only after the answer is out: leftover spool/ledger work goes to a detached drainer.
    drain::spawn_if_needed(&env);
    code
}

fn diag(profile: &PromptHookProfile, stage: Stage, outcome: Outcome) -> Diagnostic {
    Diagnostic::new(profile.integration.component(), stage, outcome)
}

fn report(profile: &PromptHookProfile, stage: Stage, failure: Failure) {
    emit::diagnostic(&failure.diagnostic(profile.integration.component(), stage));
}

/// The pipeline, reading stdin from the process.
#[must_use]
pub fn run(profile: &PromptHookProfile, env: &Env, start: Instant) -> Answer {
    let settings = match Settings::for_hook(profile.integration, env) {
        Ok(s) => s,
        Err(e) => {
            emit::diagnostic(&diag(profile, Stage::Config, Outcome::ConfigInvalid).setting(e.setting));
            return Answer::Nothing;
        }
    };
    let deadline = Deadline::new(start, settings.budget.value);
    process::arm_watchdog(start, settings.budget.value);

    let stdin = match process::read_stdin() {
        Ok(b) => b,
        Err(p) => {
            let detail = if p == StdinProblem::TooLarge {
                "stdin_too_large"
            } else {
                "stdin_unreadable"
            };
            emit::diagnostic(&diag(profile, Stage::Payload, Outcome::Skipped).detail(detail));
            return Answer::Nothing;
        }
    };
    let event = match parse_event(profile, &stdin) {
        Ok(e) => e,
        Err(SkipReason::Boundary) => return Answer::Nothing,
        Err(reason) => {
            emit::diagnostic(&diag(profile, Stage::Payload, Outcome::Skipped).detail(reason.as_str()));
            return Answer::Nothing;
        }
    };
    drop(stdin);
    respond(profile, env, &settings, &deadline, &event)
}

/// Scope, recall and capture for a decoded event.
#[must_use]
pub fn respond(
    profile: &PromptHookProfile,
    env: &Env,
    settings: &Settings,
    deadline: &Deadline,
    event: &PromptEvent,
) -> Answer {
    let transport = match Transport::new(
        settings.server_url.value.clone(),
        settings.authorization.value.clone(),
        settings.request_timeout.value,
        *deadline,
        env,
    ) {
        Ok(t) => t,
        Err(name) => {
            emit::diagnostic(&diag(profile, Stage::Config, Outcome::ConfigInvalid).setting(name));
            return Answer::Nothing;
        }
    };

    // The capture decision needs no network: make it first so a secret never waits on anything.
    let capture_gate = if !settings.capture_prompts.value {
        None
    } else if event.lossy {
        emit::diagnostic(&diag(profile, Stage::Capture, Outcome::CaptureSkippedLossy));
        None
    } else {
        match capture::gate(&event.prompt) {
            CaptureGate::Allowed => Some(()),
            CaptureGate::Secret(kind) => {
                emit::diagnostic(&diag(profile, Stage::Capture, Outcome::CaptureSkippedSecret).detail(kind));
                None
            }
            CaptureGate::TooLarge => {
                emit::diagnostic(&diag(profile, Stage::Capture, Outcome::CaptureSkippedTooLarge));
                None
            }
        }
    };

    let query = ScopeQuery::for_event(
        profile.integration,
        settings.scope_id.value.as_deref(),
        event.session_id.as_deref(),
        &event.cwd,
        deadline,
    );
    let scope = match query.resolve(&transport) {
        Ok(s) => s,
        Err(f) => {
            report(profile, Stage::Scope, f);
            // Offline: keep the capture with its binding keys so replay lands in the same scope.
            if capture_gate.is_some() && drain::is_retryable(&f) {
                spool_capture(profile, env, settings, &transport, query, event);
            }
            return Answer::Nothing;
        }
    };

    std::thread::scope(|s| {
        if capture_gate.is_some() {
            s.spawn(|| capture_prompt(profile, env, settings, &transport, &scope, event));
        }
        recall(profile, settings, &transport, &scope, event)
    })
}

fn recall(
    profile: &PromptHookProfile,
    settings: &Settings,
    transport: &Transport,
    scope: &str,
    event: &PromptEvent,
) -> Answer {
    let mut max_bytes = settings.max_bytes.value;
    if let Some(limit) = profile.context_char_limit {
        // Content bytes bound its characters: asking for fewer bytes than the host's character
        // limit guarantees the host never truncates what we inject.
        let cap = u32::try_from(limit.saturating_sub(1)).unwrap_or(u32::MAX);
        if max_bytes > cap {
            emit::diagnostic(
                &diag(profile, Stage::Prepare, Outcome::MaxBytesClamped)
                    .setting(settings.max_bytes.origin.to_string()),
            );
            max_bytes = cap;
        }
    }
    match recall::prepare(transport, scope, &event.prompt, max_bytes) {
        Ok(PreparedContext::Ready(text)) => {
            if profile
                .context_char_limit
                .is_some_and(|l| text.chars().count() >= l)
            {
                emit::diagnostic(&diag(profile, Stage::Prepare, Outcome::ContextTooLarge));
                return Answer::Nothing;
            }
            Answer::Context(text)
        }
        Ok(PreparedContext::Empty) => {
            let mut d = diag(profile, Stage::Prepare, Outcome::Empty).status(Some(200));
            d.context_status = Some("empty");
            d.content_bytes = Some(0);
            emit::diagnostic(&d);
            Answer::Nothing
        }
        Err(f) => {
            report(profile, Stage::Prepare, f);
            Answer::Nothing
        }
    }
}

/// Builds the capture request for an event (shared with the spool).
#[must_use]
pub fn capture_request(profile: &PromptHookProfile, scope: &str, event: &PromptEvent) -> CaptureRequest {
    let session = event.session_id.as_deref().unwrap_or("");
    let turn = event.turn_id.as_deref().unwrap_or("");
    let cwd = event.cwd.to_string_lossy();
    CaptureRequest {
        scope_id: scope.to_owned(),
        source_id: capture::source_id(
            profile.integration.source_prefix(),
            scope,
            session,
            turn,
            &event.prompt,
        ),
        content: event.prompt.clone(),
        metadata: capture::metadata(
            profile.integration.as_str(),
            "user_prompt_submit",
            &[
                ("cwd", Some(&cwd)),
                ("session_id", event.session_id.as_deref()),
                (profile.turn_metadata_key, event.turn_id.as_deref()),
            ],
        ),
    }
}

fn capture_prompt(
    profile: &PromptHookProfile,
    env: &Env,
    settings: &Settings,
    transport: &Transport,
    scope: &str,
    event: &PromptEvent,
) {
    let request = capture_request(profile, scope, event);
    match capture::send(transport, &request) {
        Ok(position) => {
            if settings.flush_on_capture.value
                && let Err(f) =
                    capture::flush_through(transport, scope, position, settings.flush_max_calls.value)
            {
                report(profile, Stage::Flush, f);
                // Not flushed yet: the ledger keeps the position for the drainer (a Server
                // without a model never will flush, so that case is not kept).
                if f.outcome != Outcome::InferenceUnavailable {
                    let wait = transport.deadline().within(state::HOOK_LOCK_WAIT);
                    let (server, host) = (transport.base().as_str(), profile.integration.as_str());
                    ledger::keep_pending(
                        profile.integration.component(),
                        env,
                        &wait,
                        server,
                        scope,
                        position,
                        host,
                    );
                }
            }
        }
        Err(f) => {
            report(profile, Stage::Capture, f);
            if drain::is_retryable(&f) {
                let resolved = ScopeQuery {
                    explicit: Some(scope.to_owned()),
                    keys: Vec::new(),
                    legacy: None,
                    legacy_from: None,
                };
                spool_capture(profile, env, settings, transport, resolved, event);
            }
        }
    }
}

/// Spools a capture the Server could not take, with exactly what replay needs to rebuild the
/// online request (same scope, `source_id` and metadata). The gate already ran: no secret here.
fn spool_capture(
    profile: &PromptHookProfile,
    env: &Env,
    settings: &Settings,
    transport: &Transport,
    query: ScopeQuery,
    event: &PromptEvent,
) {
    // Metadata does not depend on the scope; the `source_id` is recomputed at replay.
    let request = capture_request(profile, "", event);
    let entry = SpooledCapture {
        integration: profile.integration.as_str().to_owned(),
        server: transport.base().as_str().to_owned(),
        source_prefix: profile.integration.source_prefix().to_owned(),
        query,
        session: event.session_id.clone().unwrap_or_default(),
        turn: event.turn_id.clone().unwrap_or_default(),
        content: request.content,
        metadata: request.metadata,
        flush: settings.flush_on_capture.value,
    };
    let wait = transport.deadline().within(state::HOOK_LOCK_WAIT);
    spool::keep_for_later(profile.integration.component(), env, &wait, &entry);
}
