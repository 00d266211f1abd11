//! The `UserPromptSubmit` pipeline shared by Claude Code and Codex: payload → settings → scope →
//! recall and capture concurrently (each guarded on its own) → answer. Fails open at every step:
//! whatever happens, the host gets at most one protocol line and exit code 0, on time.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use serde_json::Value;

use crate::capture;
use crate::config::{Settings, vars};
use crate::deadline::Deadline;
use crate::drain;
use crate::emit;
use crate::env::Env;
use crate::host::Integration;
use crate::outcome::{Diagnostic, Outcome, Stage};
use crate::payload::{self, first_text};
use crate::process;
use crate::protocol::{self, Answer, Protocol};
use crate::scope::ScopeQuery;
use crate::turn::{Capture, Turn};

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

    let Some(stdin) = process::read_payload(profile.integration.component()) else {
        return Answer::Nothing;
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
    let Some(turn) = Turn::open(profile.integration, env, settings, deadline) else {
        return Answer::Nothing;
    };
    let capture = turn
        .capture_text(&event.prompt, event.lossy)
        .map(|text| capture_of(profile, event).with_content(text));
    let query = ScopeQuery::for_event(
        profile.integration,
        settings.scope_id.value.as_deref(),
        event.session_id.as_deref(),
        &event.cwd,
        deadline,
        crate::workspace::Discovery::for_env(env),
    );
    let Some(scope) = turn.resolve(query, capture.as_ref()) else {
        return Answer::Nothing;
    };
    std::thread::scope(|s| {
        if let Some(capture) = &capture {
            s.spawn(|| turn.capture_and_flush(&scope, capture));
        }
        recall(profile, &turn, &scope, event)
    })
}

fn recall(profile: &PromptHookProfile, turn: &Turn<'_>, scope: &str, event: &PromptEvent) -> Answer {
    let mut max_bytes = turn.settings.max_bytes.value;
    if let Some(limit) = profile.context_char_limit {
        // Content bytes bound its characters: asking for fewer bytes than the host's character
        // limit guarantees the host never truncates what we inject.
        let cap = u32::try_from(limit.saturating_sub(1)).unwrap_or(u32::MAX);
        if max_bytes > cap {
            let origin = turn.settings.max_bytes.origin.to_string();
            emit::diagnostic(
                &turn
                    .diag(Stage::Prepare, Outcome::MaxBytesClamped)
                    .setting(origin),
            );
            max_bytes = cap;
        }
    }
    match turn.recall(scope, &event.prompt, max_bytes) {
        Some(text)
            if profile
                .context_char_limit
                .is_some_and(|l| text.chars().count() >= l) =>
        {
            emit::diagnostic(&turn.diag(Stage::Prepare, Outcome::ContextTooLarge));
            Answer::Nothing
        }
        Some(text) => Answer::Context(text),
        None => Answer::Nothing,
    }
}

/// What a prompt event captures: the prompt, keyed by session and turn, with metadata
/// `{origin, event, cwd, session_id?, <turn key>?}` as the official hooks send it.
#[must_use]
pub fn capture_of(profile: &PromptHookProfile, event: &PromptEvent) -> Capture {
    let cwd = event.cwd.to_string_lossy();
    Capture {
        session: event.session_id.clone().unwrap_or_default(),
        turn: event.turn_id.clone().unwrap_or_default(),
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
