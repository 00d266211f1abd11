//! Decoding what the Pi extension sends on stdin: the `before_agent_start` fields and the boundary
//! name of a flush. Owns the upstream identity rules (trimmed prompt, `unknown` session, turn id =
//! 1 + user messages in the branch); never echoes payload content anywhere.

use std::path::PathBuf;

use powercontext_hooks_core::payload::{self, first_text};
use serde_json::Value;

/// The session id upstream uses when Pi gives none (kept so `source_id`s stay compatible).
pub const UNKNOWN_SESSION: &str = "unknown";

/// One `before_agent_start`, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartEvent {
    /// The prompt, trimmed (upstream captures and queries the trimmed text).
    pub prompt: String,
    /// Pi's system prompt as chained so far; the answer extends it, never replaces it.
    pub system_prompt: String,
    /// The session working directory.
    pub cwd: PathBuf,
    /// Session id, trimmed; [`UNKNOWN_SESSION`] when Pi gave none.
    pub session_id: String,
    /// Whether the session id came from Pi (only a real id becomes a scope binding key).
    pub session_known: bool,
    /// Turn id: 1 + the number of user messages already in the branch.
    pub turn_id: String,
    /// True when stdin had to be repaired: recall only, never captured.
    pub lossy: bool,
}

/// Why a payload was skipped (content-free detail words).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Not a JSON object.
    NotJson,
    /// No non-blank prompt.
    BlankPrompt,
    /// No system prompt string: answering would replace Pi's prompt instead of extending it.
    MissingSystemPrompt,
    /// No `cwd` string.
    MissingCwd,
}

impl Skip {
    /// The detail word.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotJson => "not_json",
            Self::BlankPrompt => "blank_prompt",
            Self::MissingSystemPrompt => "missing_system_prompt",
            Self::MissingCwd => "missing_cwd",
        }
    }
}

pub use powercontext_hooks_core::payload::turn_from_roles as turn_id;

/// Decodes the extension's `before-agent-start` payload:
/// `{prompt, system_prompt, cwd, session_id, branch_roles}`.
///
/// # Errors
/// The [`Skip`] reason when the payload is not usable.
pub fn parse_start(bytes: &[u8]) -> Result<StartEvent, Skip> {
    let decoded = payload::decode(bytes).ok_or(Skip::NotJson)?;
    let v = &decoded.value;
    if !v.is_object() {
        return Err(Skip::NotJson);
    }
    let prompt = first_text(v, &["prompt"]).ok_or(Skip::BlankPrompt)?;
    let system_prompt = v
        .get("system_prompt")
        .and_then(Value::as_str)
        .ok_or(Skip::MissingSystemPrompt)?;
    let cwd = v
        .get("cwd")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .ok_or(Skip::MissingCwd)?;
    let session = first_text(v, &["session_id"]);
    Ok(StartEvent {
        prompt: prompt.to_owned(),
        system_prompt: system_prompt.to_owned(),
        cwd: PathBuf::from(cwd),
        session_id: session.unwrap_or(UNKNOWN_SESSION).to_owned(),
        session_known: session.is_some(),
        turn_id: turn_id(v.get("branch_roles")),
        lossy: decoded.lossy,
    })
}

/// The Pi boundary a flush was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Boundary {
    /// `agent_end`.
    AgentEnd,
    /// `session_before_compact`.
    BeforeCompact,
    /// `session_before_switch`.
    BeforeSwitch,
    /// `session_shutdown`: what stays pending is handed to the background drainer.
    Shutdown,
    /// Any other or no name: flushed like a boundary, nothing more.
    Other,
}

impl Boundary {
    /// Reads `{"event": "<pi event name>", "session_id": …}`: the boundary (anything unreadable
    /// is [`Boundary::Other`]) and the session, when named.
    #[must_use]
    pub fn parse_with_session(bytes: &[u8]) -> (Self, Option<String>) {
        let decoded = payload::decode(bytes);
        let session = decoded
            .as_ref()
            .and_then(|d| first_text(&d.value, &["session_id"]))
            .map(str::to_owned);
        let event = decoded.and_then(|d| d.value.get("event").and_then(Value::as_str).map(str::to_owned));
        (Self::named(event.as_deref()), session)
    }

    /// Reads `{"event": "<pi event name>"}`; anything unreadable is [`Boundary::Other`].
    #[must_use]
    pub fn parse(bytes: &[u8]) -> Self {
        Self::parse_with_session(bytes).0
    }

    fn named(event: Option<&str>) -> Self {
        match event {
            Some("agent_end") => Self::AgentEnd,
            Some("session_before_compact") => Self::BeforeCompact,
            Some("session_before_switch") => Self::BeforeSwitch,
            Some("session_shutdown") => Self::Shutdown,
            _ => Self::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn turn_id_counts_user_messages() {
        assert_eq!(turn_id(None), "1");
        assert_eq!(turn_id(Some(&json!("user"))), "1");
        assert_eq!(turn_id(Some(&json!([null, "user", "assistant"]))), "2");
        assert_eq!(
            turn_id(Some(&json!(["user", "assistant", "user", "toolResult"]))),
            "3"
        );
    }

    #[test]
    fn start_payload_is_trimmed_and_defaults_the_session() {
        let body = json!({"prompt": "  continue implementation \n", "system_prompt": "Base instructions",
            "cwd": "/workspace/repo", "session_id": "  ", "branch_roles": ["user"]});
        let e = parse_start(body.to_string().as_bytes()).unwrap();
        assert_eq!(e.prompt, "continue implementation");
        assert_eq!(e.system_prompt, "Base instructions");
        assert_eq!((e.session_id.as_str(), e.session_known), ("unknown", false));
        assert_eq!(e.turn_id, "2");
        assert!(!e.lossy);
    }

    #[test]
    fn unusable_payloads_are_skipped() {
        let skip = |v: Value| parse_start(v.to_string().as_bytes()).unwrap_err();
        assert_eq!(
            skip(json!({"prompt": " ", "system_prompt": "", "cwd": "/x"})),
            Skip::BlankPrompt
        );
        assert_eq!(
            skip(json!({"prompt": "p", "cwd": "/x"})),
            Skip::MissingSystemPrompt
        );
        assert_eq!(
            skip(json!({"prompt": "p", "system_prompt": ""})),
            Skip::MissingCwd
        );
        assert_eq!(skip(json!(["p"])), Skip::NotJson);
        assert_eq!(parse_start(b"nope").unwrap_err(), Skip::NotJson);
    }

    #[test]
    fn boundary_names() {
        assert_eq!(
            Boundary::parse(br#"{"event":"session_shutdown"}"#),
            Boundary::Shutdown
        );
        assert_eq!(
            Boundary::parse(br#"{"event":"session_before_compact"}"#),
            Boundary::BeforeCompact
        );
        assert_eq!(Boundary::parse(b""), Boundary::Other);
    }
}
