//! The command-hook pipeline shared by Claude Code, Codex and Gemini CLI, its event names read
//! from the host's row (`UserPromptSubmit` or `BeforeAgent`, …): the prompt event (payload →
//! settings → capture written ahead → scope (cached while valid) → recall → answer → the capture
//! handed to the drainer),
//! `SessionStart` (scope → the boundary's bootstrap package → answer) and `PreCompact` (the session
//! bootstraps again after the compaction). Fails open at every step: whatever happens, the host
//! gets at most one protocol line and exit code 0, on time.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::Value;

use crate::bootstrap::Lifecycle;
use crate::capture;
use crate::config::Settings;
use crate::deadline::Deadline;
use crate::emit;
use crate::env::Env;
use crate::hook::{self, Answered, Reply, Run};
use crate::host::Integration;
use crate::journal;
use crate::outcome::{Outcome, Stage};
use crate::payload::{self, first_text};
use crate::protocol::{Answer, Protocol};
use crate::scope::ScopeQuery;
use crate::session::SessionFile;
use crate::start_echo::StartEcho;
use crate::turn::{Begun, Capture, Prompt, Turn};

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
    /// How the host puts the session-start context in front of the next prompt's text, if it
    /// does (Gemini CLI in headless mode): that echo is removed before recall and capture.
    pub start_echo: Option<StartEcho>,
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

/// A lifecycle event of a command-hook host.
#[derive(Debug, Clone)]
pub enum LifecycleEvent {
    /// `SessionStart` (Claude Code's `source`: startup, resume, clear or compact).
    Start {
        /// Session working directory.
        cwd: PathBuf,
        /// Session id, trimmed.
        session_id: Option<String>,
        /// The boundary.
        lifecycle: Lifecycle,
    },
    /// `PreCompact`: the conversation is about to be compacted.
    Compacting {
        /// Session id, trimmed.
        session_id: Option<String>,
    },
}

/// An event name as compared: without underscores, lower case (`user_prompt_submit` is
/// `UserPromptSubmit`).
fn normalize(event: &str) -> String {
    event.replace('_', "").to_ascii_lowercase()
}

/// Whether the (normalized) event is the row's `name`.
fn is(normalized: &str, name: Option<&str>) -> bool {
    name.is_some_and(|n| normalize(n) == normalized)
}

/// Decodes a lifecycle event (the row's session-start or compaction event); `None` for anything
/// else (a prompt, a boundary, an event the row does not follow, garbage).
#[must_use]
pub fn parse_lifecycle(profile: &PromptHookProfile, v: &Value) -> Option<LifecycleEvent> {
    let event = event_name(v)?;
    let session_id = first_text(v, profile.session_fields).map(str::to_owned);
    let normalized = normalize(event);
    let events = &profile.integration.spec().events;
    if is(&normalized, events.session_start) {
        journal::set_event(event_word(profile, &normalized));
        return Some(LifecycleEvent::Start {
            cwd: PathBuf::from(v.get("cwd").and_then(Value::as_str).filter(|s| !s.is_empty())?),
            session_id,
            lifecycle: Lifecycle::from_source(v.get("source").and_then(Value::as_str)),
        });
    }
    if is(&normalized, events.compaction) {
        journal::set_event(event_word(profile, &normalized));
        return Some(LifecycleEvent::Compacting { session_id });
    }
    None
}

/// Why a payload was skipped (content-free detail words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// Not JSON (or not an object).
    NotJson,
    /// Not the host's prompt event.
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
    prompt_of(profile, &payload::decode(bytes).ok_or(SkipReason::NotJson)?)
}

/// [`parse_event`] of an already decoded payload.
///
/// # Errors
/// The [`SkipReason`] when the payload is not a usable prompt event.
pub fn prompt_of(profile: &PromptHookProfile, decoded: &payload::Decoded) -> Result<PromptEvent, SkipReason> {
    let (field, event) = prompt_event(profile, decoded)?;
    let prompt = decoded.value.get(field).and_then(prompt_text).unwrap_or_default();
    Ok(PromptEvent {
        prompt: prompt.into_owned(),
        ..event
    })
}

/// [`prompt_of`] taking the prompt out of the payload instead of copying it (a large prompt is
/// then held once, not twice).
fn take_prompt(
    profile: &PromptHookProfile,
    mut decoded: payload::Decoded,
) -> Result<PromptEvent, SkipReason> {
    let (field, event) = prompt_event(profile, &decoded)?;
    let prompt = match decoded.value.get_mut(field) {
        Some(Value::String(text)) => std::mem::take(text),
        _ => decoded
            .value
            .get(field)
            .and_then(prompt_text)
            .unwrap_or_default()
            .into_owned(),
    };
    Ok(PromptEvent { prompt, ..event })
}

/// The checks of [`prompt_of`] and the event without its prompt: which field holds the prompt,
/// and the event's other fields.
fn prompt_event(
    profile: &PromptHookProfile,
    decoded: &payload::Decoded,
) -> Result<(&'static str, PromptEvent), SkipReason> {
    let v = &decoded.value;
    if !v.is_object() {
        return Err(SkipReason::NotJson);
    }
    let event = event_name(v).unwrap_or("");
    let normalized = normalize(event);
    journal::set_event(event_word(profile, &normalized));
    let events = &profile.integration.spec().events;
    if events.boundary.iter().any(|b| is(&normalized, Some(b))) {
        return Err(SkipReason::Boundary);
    }
    if !is(&normalized, Some(events.prompt)) {
        return Err(SkipReason::WrongEvent);
    }
    // The prompt itself is not trimmed: it is captured exactly as typed.
    let field = profile
        .prompt_fields
        .iter()
        .copied()
        .find(|f| {
            v.get(*f)
                .and_then(prompt_text)
                .is_some_and(|s| !payload::is_blank(&s))
        })
        .ok_or(SkipReason::BlankPrompt)?;
    let cwd = v
        .get("cwd")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or(SkipReason::MissingCwd)?;
    Ok((
        field,
        PromptEvent {
            prompt: String::new(),
            cwd: PathBuf::from(cwd),
            session_id: first_text(v, profile.session_fields).map(str::to_owned),
            turn_id: first_text(v, profile.turn_fields).map(str::to_owned),
            lossy: decoded.lossy,
        },
    ))
}

/// A prompt field's text: a string as it is, or an array of content parts (Kimi Code's
/// `[{"type": "text", "text": …}, {"type": "image_url", …}]`) with its text parts joined by a
/// newline and every other part left out. `None` for any other shape.
fn prompt_text(field: &Value) -> Option<std::borrow::Cow<'_, str>> {
    match field {
        Value::String(s) => Some(std::borrow::Cow::Borrowed(s)),
        Value::Array(parts) => {
            let texts: Vec<&str> = parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            Some(match texts.as_slice() {
                [one] => std::borrow::Cow::Borrowed(*one),
                _ => std::borrow::Cow::Owned(texts.join("\n")),
            })
        }
        _ => None,
    }
}

/// The payload's event name: Claude's snake_case `hook_event_name`, or the camelCase
/// `hookEventName` some hosts send instead (ZCode sends either).
fn event_name(v: &Value) -> Option<&str> {
    ["hook_event_name", "hookEventName"]
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_str))
}

/// The journal's name for a (normalized) hook event: a closed word (one of the row's event names,
/// else one of a fixed few), never payload text.
fn event_word(profile: &PromptHookProfile, normalized: &str) -> &'static str {
    let events = &profile.integration.spec().events;
    let named = [events.prompt]
        .into_iter()
        .chain(events.session_start)
        .chain(events.compaction)
        .chain(events.boundary.iter().copied())
        .find(|n| normalize(n) == normalized);
    if let Some(name) = named {
        return name;
    }
    match normalized {
        "userpromptsubmit" => "UserPromptSubmit",
        "stop" => "Stop",
        "sessionend" => "SessionEnd",
        "sessionstart" => "SessionStart",
        "precompact" => "PreCompact",
        _ => "other",
    }
}

/// Runs a command-hook process end to end and returns its exit code (always 0).
#[must_use]
pub fn main(profile: &PromptHookProfile) -> ExitCode {
    hook::run_hook(profile.integration, |hook::Payload, run| {
        let (protocol, answered) = handle(profile, run);
        Reply::drain(protocol, answered)
    })
}

/// The pipeline, reading stdin from the process: the protocol to answer with, the answer and the
/// work for after it.
fn handle(profile: &PromptHookProfile, run: &Run<'_>) -> (Protocol, Answered) {
    let events = &profile.integration.spec().events;
    let prompt_protocol = Protocol::for_prompt(profile.integration);
    let nothing = (prompt_protocol, Answer::Nothing.into());
    let Some(settings) = run.settings() else {
        return nothing;
    };
    let deadline = run.arm(settings.budget.value);
    let Some(stdin) = run.payload() else {
        return nothing;
    };
    let decoded = payload::decode(&stdin);
    // Its room holds the capture's copy of the prompt (see `spare`).
    crate::spare::keep(stdin);
    let env = run.env;
    if let Some(event) = decoded.as_ref().and_then(|d| parse_lifecycle(profile, &d.value)) {
        return (
            Protocol::HookEvent(events.session_start.unwrap_or("SessionStart")),
            lifecycle(profile, env, &settings, &deadline, &event),
        );
    }
    match decoded
        .ok_or(SkipReason::NotJson)
        .and_then(|d| take_prompt(profile, d))
    {
        Ok(event) => (
            prompt_protocol,
            respond(profile, env, &settings, &deadline, &event),
        ),
        Err(SkipReason::Boundary) => nothing,
        Err(reason) => (prompt_protocol, run.skip(reason.as_str()).into()),
    }
}

/// `SessionStart` and `PreCompact`.
#[must_use]
pub fn lifecycle(
    profile: &PromptHookProfile,
    env: &Env,
    settings: &Settings,
    deadline: &Deadline,
    event: &LifecycleEvent,
) -> Answered {
    match event {
        LifecycleEvent::Compacting { session_id } => {
            // Pending captures go to the drainer after the (empty) answer, as at any boundary.
            if let Some(file) = session_id
                .as_deref()
                .and_then(|s| crate::session::SessionFile::locate(env, profile.integration, s))
            {
                file.mark_compacted();
            }
            Answer::Nothing.into()
        }
        LifecycleEvent::Start {
            cwd,
            session_id,
            lifecycle,
        } => session_start(
            profile,
            env,
            settings,
            deadline,
            (cwd, session_id.as_deref(), *lifecycle),
        ),
    }
}

/// `SessionStart`: scope, the boundary's bootstrap package, the answer; the session record and
/// the package's receipt after it.
fn session_start(
    profile: &PromptHookProfile,
    env: &Env,
    settings: &Settings,
    deadline: &Deadline,
    (cwd, session_id, lifecycle): (&std::path::Path, Option<&str>, Lifecycle),
) -> Answered {
    let Some(turn) = Turn::open(profile.integration, env, settings, deadline) else {
        return Answer::Nothing.into();
    };
    let turn = turn.in_session(session_id);
    let query = ScopeQuery::for_event(
        profile.integration,
        settings.scope_id.value.as_deref(),
        session_id,
        cwd,
        deadline,
        crate::workspace::Discovery::for_env(env),
    );
    if !settings.bootstrap.value {
        // A binding changed before this session (re)started takes effect at its first prompt:
        // the cached scope goes.
        turn.forget_cached_scope(&query);
        turn.session_start_offline(lifecycle);
        return Answered::new(Answer::Nothing, turn.into_after());
    }
    let Some(scope) = turn.resolve_fresh(query) else {
        turn.session_start_offline(lifecycle);
        return Answered::new(Answer::Nothing, turn.into_after());
    };
    let context = turn.session_start(&scope, lifecycle);
    let mut after = turn.into_after();
    // Recorded only if the answer is written: the next prompt's text then starts with it.
    if let (Some(echo), Some(text), Some(session)) = (&profile.start_echo, &context, session_id)
        && let Some(file) = SessionFile::locate(env, profile.integration, session)
    {
        after.record_echo(file, echo.mark(text));
    }
    Answered::new(context.map_or(Answer::Nothing, Answer::Context), after)
}

/// The event with the host's echo of our session-start context removed from its prompt (see
/// [`PromptHookProfile::start_echo`]); every other prompt is kept whole.
#[must_use]
pub fn without_start_echo(
    profile: &PromptHookProfile,
    env: &Env,
    event: &PromptEvent,
) -> Option<PromptEvent> {
    let echo = profile.start_echo.as_ref()?;
    if !event.prompt.starts_with(echo.open) {
        return None;
    }
    let record = SessionFile::locate(env, profile.integration, event.session_id.as_deref()?)?.load()?;
    let rest = echo.strip(&event.prompt, record.start_echo.as_deref()?)?;
    Some(PromptEvent {
        prompt: rest.to_owned(),
        cwd: event.cwd.clone(),
        session_id: event.session_id.clone(),
        turn_id: event.turn_id.clone(),
        lossy: event.lossy,
    })
}

/// Scope, recall and capture for a decoded event.
#[must_use]
pub fn respond(
    profile: &PromptHookProfile,
    env: &Env,
    settings: &Settings,
    deadline: &Deadline,
    event: &PromptEvent,
) -> Answered {
    let stripped = without_start_echo(profile, env, event);
    let event = stripped.as_ref().unwrap_or(event);
    if payload::is_blank(&event.prompt) {
        emit::diagnostic(
            &crate::outcome::Diagnostic::new(
                profile.integration.component(),
                Stage::Payload,
                Outcome::Skipped,
            )
            .detail(SkipReason::BlankPrompt.as_str()),
        );
        return Answer::Nothing.into();
    }
    let prompt = Prompt {
        text: &event.prompt,
        lossy: event.lossy,
        session: event.session_id.as_deref(),
        cwd: &event.cwd,
        // Its content is the gated prompt, set by the gate: not a copy of the prompt first.
        capture: capture_keys(profile, event),
        recall: &|| true,
    };
    let Some(begun) = Turn::begin(profile.integration, env, settings, deadline, prompt) else {
        return Answer::Nothing.into();
    };
    let answer = recall(profile, &begun, event);
    Answered::new(answer, begun.finish())
}

fn recall(profile: &PromptHookProfile, begun: &Begun<'_>, event: &PromptEvent) -> Answer {
    let turn = &begun.turn;
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
    match begun.recall(&event.prompt, max_bytes) {
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
    capture_keys(profile, event).with_content(event.prompt.clone())
}

/// [`capture_of`] without its content (the gate sets it).
fn capture_keys(profile: &PromptHookProfile, event: &PromptEvent) -> Capture {
    let cwd = event.cwd.to_string_lossy();
    Capture {
        session: event.session_id.clone().unwrap_or_default(),
        turn: event.turn_id.clone().unwrap_or_default(),
        content: String::new(),
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

#[cfg(test)]
mod tests {
    use super::*;

    const KIMI: PromptHookProfile = PromptHookProfile {
        integration: Integration::KimiCode,
        prompt_fields: &["prompt"],
        session_fields: &["session_id"],
        turn_fields: &["turn_id"],
        turn_metadata_key: "turn_id",
        context_char_limit: None,
        start_echo: None,
    };

    fn prompt(payload: &Value) -> Result<String, SkipReason> {
        parse_event(&KIMI, payload.to_string().as_bytes()).map(|e| e.prompt)
    }

    #[test]
    fn content_parts_give_their_text_parts_joined() {
        let base = |parts: Value| serde_json::json!({"hook_event_name": "UserPromptSubmit", "cwd": "/p", "prompt": parts});
        assert_eq!(prompt(&base(serde_json::json!("plain"))), Ok("plain".into()));
        assert_eq!(
            prompt(&base(serde_json::json!([{"type": "text", "text": " one "}]))),
            Ok(" one ".into())
        );
        assert_eq!(
            prompt(&base(serde_json::json!([
                {"type": "text", "text": "first"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                {"type": "text", "text": "second"},
                {"type": "text", "text": 7},
                "stray"
            ]))),
            Ok("first\nsecond".into())
        );
        for blank in [
            serde_json::json!([]),
            serde_json::json!([{"type": "image_url", "image_url": {"url": "x"}}]),
            serde_json::json!([{"type": "text", "text": " \u{200b}"}]),
            serde_json::json!({"type": "text", "text": "an object is not a part list"}),
            serde_json::json!(3),
        ] {
            assert_eq!(
                prompt(&base(blank.clone())),
                Err(SkipReason::BlankPrompt),
                "{blank}"
            );
        }
    }

    #[test]
    fn a_session_start_is_not_answered_where_the_host_drops_its_output() {
        let start = serde_json::json!({"hook_event_name": "SessionStart", "cwd": "/p", "session_id": "s", "source": "startup"});
        assert!(parse_lifecycle(&KIMI, &start).is_none());
        assert_eq!(prompt(&start), Err(SkipReason::WrongEvent));
        let codex = PromptHookProfile {
            integration: Integration::Codex,
            ..KIMI
        };
        assert!(matches!(
            parse_lifecycle(&codex, &start),
            Some(LifecycleEvent::Start { .. })
        ));
    }
}
