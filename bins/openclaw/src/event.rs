//! Decoding what the OpenClaw plugin sends on stdin: the `before_prompt_build` fields and the
//! boundary name of a `boundary` call. Owns the identity rules (trimmed prompt, `unknown` session,
//! turn id = 1 + user messages already in the session); never echoes payload content anywhere.

use std::path::PathBuf;

use powercontext_hooks_core::payload::{self, first_text};
use serde_json::Value;

/// The session id used when OpenClaw gives none (the capture still gets a stable `source_id`).
pub const UNKNOWN_SESSION: &str = "unknown";

/// One `before_prompt_build`, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptEvent {
    /// The prompt, trimmed.
    pub prompt: String,
    /// The agent's workspace directory (what the scope is derived from).
    pub cwd: PathBuf,
    /// Session id, trimmed; [`UNKNOWN_SESSION`] when OpenClaw gave none.
    pub session_id: String,
    /// Whether the session id came from OpenClaw (only a real id becomes a scope binding key).
    pub session_known: bool,
    /// Turn id: 1 + the number of user messages already in the session.
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
            Self::MissingCwd => "missing_cwd",
        }
    }
}

pub use powercontext_hooks_core::payload::turn_from_roles as turn_id;

/// Decodes the plugin's `before-prompt-build` payload: `{prompt, cwd, session_id, history_roles}`.
///
/// # Errors
/// The [`Skip`] reason when the payload is not usable.
pub fn parse_prompt(bytes: &[u8]) -> Result<PromptEvent, Skip> {
    let decoded = payload::decode(bytes).ok_or(Skip::NotJson)?;
    let v = &decoded.value;
    if !v.is_object() {
        return Err(Skip::NotJson);
    }
    let prompt = first_text(v, &["prompt"]).ok_or(Skip::BlankPrompt)?;
    let cwd = v
        .get("cwd")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .ok_or(Skip::MissingCwd)?;
    let session = first_text(v, &["session_id"]);
    Ok(PromptEvent {
        prompt: prompt.to_owned(),
        cwd: PathBuf::from(cwd),
        session_id: session.unwrap_or(UNKNOWN_SESSION).to_owned(),
        session_known: session.is_some(),
        turn_id: turn_id(v.get("history_roles")),
        lossy: decoded.lossy,
    })
}

/// The OpenClaw event a `boundary` call was made for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Boundary {
    /// `agent_end`: the answer is out.
    AgentEnd,
    /// `before_compaction`: what was injected is about to be summarised away.
    BeforeCompaction,
    /// `before_reset`: the session is about to be cleared.
    BeforeReset,
    /// `session_end`.
    SessionEnd,
    /// Any other or no name: handled like a boundary, nothing more.
    Other,
}

impl Boundary {
    /// Reads `{"event": "<openclaw event name>", "session_id": …}`: the boundary (anything
    /// unreadable is [`Boundary::Other`]) and the session, when named.
    #[must_use]
    pub fn parse(bytes: &[u8]) -> (Self, Option<String>) {
        let decoded = payload::decode(bytes);
        let session = decoded
            .as_ref()
            .and_then(|d| first_text(&d.value, &["session_id"]))
            .map(str::to_owned);
        let event = decoded.and_then(|d| d.value.get("event").and_then(Value::as_str).map(str::to_owned));
        let boundary = match event.as_deref() {
            Some("agent_end") => Self::AgentEnd,
            Some("before_compaction") => Self::BeforeCompaction,
            Some("before_reset") => Self::BeforeReset,
            Some("session_end") => Self::SessionEnd,
            _ => Self::Other,
        };
        (boundary, session)
    }

    /// Whether the next prompt must bootstrap the session again.
    #[must_use]
    pub fn drops_injected_context(self) -> bool {
        matches!(self, Self::BeforeCompaction | Self::BeforeReset)
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
        assert_eq!(turn_id(Some(&json!(["user", "assistant", null]))), "2");
        assert_eq!(
            turn_id(Some(&json!(["user", "assistant", "user", "toolResult"]))),
            "3"
        );
    }

    #[test]
    fn prompt_payload_is_trimmed_and_defaults_the_session() {
        let body = json!({"prompt": "  continue implementation \n", "cwd": "/workspace/repo",
            "session_id": "  ", "history_roles": ["user", "assistant"]});
        let e = parse_prompt(body.to_string().as_bytes()).unwrap();
        assert_eq!(e.prompt, "continue implementation");
        assert_eq!((e.session_id.as_str(), e.session_known), ("unknown", false));
        assert_eq!(e.turn_id, "2");
        assert!(!e.lossy);
    }

    #[test]
    fn unusable_payloads_are_skipped() {
        let skip = |v: Value| parse_prompt(v.to_string().as_bytes()).unwrap_err();
        assert_eq!(skip(json!({"prompt": " ", "cwd": "/x"})), Skip::BlankPrompt);
        assert_eq!(skip(json!({"prompt": "p", "cwd": " "})), Skip::MissingCwd);
        assert_eq!(skip(json!(["p"])), Skip::NotJson);
        assert_eq!(parse_prompt(b"nope").unwrap_err(), Skip::NotJson);
    }

    #[test]
    fn boundary_names() {
        let (b, s) = Boundary::parse(br#"{"event":"before_compaction","session_id":" s1 "}"#);
        assert_eq!((b, s.as_deref()), (Boundary::BeforeCompaction, Some("s1")));
        assert!(b.drops_injected_context());
        assert_eq!(Boundary::parse(br#"{"event":"agent_end"}"#).0, Boundary::AgentEnd);
        assert!(!Boundary::AgentEnd.drops_injected_context());
        assert_eq!(Boundary::parse(b"").0, Boundary::Other);
    }
}
