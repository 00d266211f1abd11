//! Decoding the `agent/pre-step` batch the DSH plugin forwards: session id and cwd, turn and step,
//! and the text of each message with its `source.kind`. It decides which text is user-originated
//! (recall query and capture) and never echoes payload content anywhere.

use std::path::PathBuf;

use powercontext_hooks_core::payload;
use serde_json::Value;

/// One pre-step batch, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreStepEvent {
    /// `agent.session.header.id`, trimmed.
    pub session_id: Option<String>,
    /// `agent.session.header.cwd`: only a real, non-blank session directory (never invented).
    pub cwd: Option<PathBuf>,
    /// The turn number as text (the `source_id` turn part).
    pub turn_id: Option<String>,
    /// The turn number.
    pub turn: Option<u64>,
    /// The step number within the turn.
    pub step: Option<u64>,
    /// The user-originated messages' text: per message the `text` blocks concatenated and
    /// trimmed, blank messages dropped, messages joined with a blank line. Empty when the batch
    /// holds no user text (later steps of a turn, plugin-only batches).
    pub user_text: String,
    /// True when stdin had to be repaired: the text is not what the user typed, never captured.
    pub lossy: bool,
}

/// Why a payload is unusable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadPayload {
    /// Not a JSON object.
    NotJson,
}

/// The text of one message: every `{type: "text", text}` block, concatenated without a separator
/// (as the official plugin does), trimmed.
fn message_text(message: &Value) -> String {
    let mut out = String::new();
    for block in message
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if block.get("type").and_then(Value::as_str) == Some("text")
            && let Some(text) = block.get("text").and_then(Value::as_str)
        {
            out.push_str(text);
        }
    }
    out.trim().to_owned()
}

/// A number (or a numeric string) as both a number and its text.
fn number(value: Option<&Value>) -> (Option<u64>, Option<String>) {
    match value {
        Some(Value::Number(n)) => match n.as_u64() {
            Some(u) => (Some(u), Some(u.to_string())),
            None => (None, Some(n.to_string())),
        },
        Some(Value::String(s)) if !s.trim().is_empty() => (s.trim().parse().ok(), Some(s.trim().to_owned())),
        _ => (None, None),
    }
}

/// Decodes the plugin's stdin: `{session: {id, cwd}, turn, step, messages: [{source: {kind},
/// content: [{type, text}]}]}`. Unknown fields are ignored; missing ones are simply absent.
///
/// # Errors
/// [`BadPayload::NotJson`] when stdin is not a JSON object.
pub fn parse(bytes: &[u8]) -> Result<PreStepEvent, BadPayload> {
    let decoded = payload::decode(bytes).ok_or(BadPayload::NotJson)?;
    let v = &decoded.value;
    if !v.is_object() {
        return Err(BadPayload::NotJson);
    }
    let session = v.get("session");
    let session_id = session
        .and_then(|s| payload::first_text(s, &["id"]))
        .map(str::to_owned);
    let cwd = session
        .and_then(|s| s.get("cwd"))
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty())
        .map(PathBuf::from);
    let (turn, turn_id) = number(v.get("turn"));
    let (step, _) = number(v.get("step"));
    let user_text = v
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|m| {
            m.get("source")
                .and_then(|s| s.get("kind"))
                .and_then(Value::as_str)
                == Some("user")
        })
        .map(message_text)
        .filter(|t| !t.is_empty())
        .collect::<Vec<_>>()
        .join("\n\n");
    Ok(PreStepEvent {
        session_id,
        cwd,
        turn_id,
        turn,
        step,
        user_text,
        lossy: decoded.lossy,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn msg(kind: &str, texts: &[&str]) -> Value {
        let content: Vec<Value> = texts.iter().map(|t| json!({"type": "text", "text": t})).collect();
        json!({"source": {"kind": kind}, "content": content})
    }

    fn event(v: &Value) -> PreStepEvent {
        parse(&serde_json::to_vec(v).unwrap()).unwrap()
    }

    #[test]
    fn user_text_joins_user_messages_only() {
        let e = event(&json!({
            "session": {"id": " s-1 ", "cwd": "/p"},
            "turn": 3, "step": 1,
            "messages": [
                msg("user", &["Human ", "request "]),
                msg("plugin", &["Plugin-provided context"]),
                msg("user", &["  "]),
                msg("user", &["second"]),
                {"source": {"kind": "user"}, "content": [{"type": "image", "text": "no"}, {"type": "text", "text": 5}]},
            ],
        }));
        assert_eq!(e.user_text, "Human request\n\nsecond");
        assert_eq!(e.session_id.as_deref(), Some("s-1"));
        assert_eq!(e.cwd, Some(PathBuf::from("/p")));
        assert_eq!(
            (e.turn, e.turn_id.as_deref(), e.step),
            (Some(3), Some("3"), Some(1))
        );
        assert!(!e.lossy);
    }

    #[test]
    fn later_steps_and_plugin_only_batches_have_no_user_text() {
        assert_eq!(event(&json!({"messages": []})).user_text, "");
        assert_eq!(event(&json!({"messages": [msg("plugin", &["x"])]})).user_text, "");
        assert_eq!(event(&json!({})).user_text, "");
    }

    #[test]
    fn blank_or_missing_cwd_is_absent() {
        assert_eq!(event(&json!({"session": {"id": "s", "cwd": "  "}})).cwd, None);
        assert_eq!(event(&json!({"session": {"id": "s", "cwd": null}})).cwd, None);
        assert_eq!(event(&json!({"session": {"id": "s"}})).cwd, None);
    }

    #[test]
    fn turn_may_be_a_string_and_garbage_is_rejected() {
        let e = event(&json!({"turn": "7", "step": "2"}));
        assert_eq!(
            (e.turn, e.turn_id.as_deref(), e.step),
            (Some(7), Some("7"), Some(2))
        );
        assert_eq!(parse(b"[1]"), Err(BadPayload::NotJson));
        assert_eq!(parse(b"nope"), Err(BadPayload::NotJson));
    }

    #[test]
    fn lone_surrogates_mark_the_batch_lossy() {
        let raw =
            br#"{"messages":[{"source":{"kind":"user"},"content":[{"type":"text","text":"a\ud800b"}]}]}"#;
        let e = parse(raw).unwrap();
        assert!(e.lossy);
        assert_eq!(e.user_text, "a\u{fffd}b");
    }
}
