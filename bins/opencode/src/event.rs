//! Decoding what the OpenCode plugin hands the executable on stdin, one shape per subcommand, and
//! turning a `chat.message` into the prompt text exactly as the official plugin did. It never
//! decides what happens next and never echoes payload content.

use std::path::PathBuf;

use serde_json::Value;

use powercontext_hooks_core::payload;

/// Why a payload is skipped (closed detail words for diagnostics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Not a JSON object.
    NotJson,
    /// No usable session id.
    MissingSession,
    /// No usable message id.
    MissingMessage,
}

impl Skip {
    /// The detail word.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotJson => "not_json",
            Self::MissingSession => "missing_session",
            Self::MissingMessage => "missing_message",
        }
    }
}

/// A `chat.message`, as the plugin forwards it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PrepareEvent {
    /// The session.
    pub session_id: String,
    /// The user message this prompt belongs to.
    pub message_id: String,
    /// When OpenCode created the message (Unix ms), the ordering key between turns.
    pub created_ms: Option<u64>,
    /// The prompt (may be empty: an empty prompt still starts a new turn).
    pub prompt: String,
    /// The session directory, when the plugin knew it (absolute).
    pub directory: Option<PathBuf>,
    /// True when stdin had to be repaired: recall only, never captured.
    pub lossy: bool,
}

fn object(bytes: &[u8]) -> Result<(Value, bool), Skip> {
    let decoded = payload::decode(bytes).ok_or(Skip::NotJson)?;
    if !decoded.value.is_object() {
        return Err(Skip::NotJson);
    }
    Ok((decoded.value, decoded.lossy))
}

/// A non-blank string field, trimmed.
fn id(v: &Value, field: &str) -> Option<String> {
    v.get(field)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// Decodes the `prepare` payload: `{session_id, input_message_id?, message_id, created_ms?,
/// parts: [{type, text, synthetic}], directory?}`.
///
/// # Errors
/// The [`Skip`] reason when the payload names no session or message.
pub fn parse_prepare(bytes: &[u8]) -> Result<PrepareEvent, Skip> {
    let (v, lossy) = object(bytes)?;
    let session_id = id(&v, "session_id").ok_or(Skip::MissingSession)?;
    // The hook input's own message id wins, as upstream; `opencode run` leaves it out.
    let input_message = id(&v, "input_message_id");
    let unquote = input_message.is_none();
    let message_id = input_message
        .or_else(|| id(&v, "message_id"))
        .ok_or(Skip::MissingMessage)?;
    let parts = v
        .get("parts")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let directory = v
        .get("directory")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|d| d.starts_with('/'))
        .map(PathBuf::from);
    Ok(PrepareEvent {
        session_id,
        message_id,
        created_ms: v.get("created_ms").and_then(Value::as_u64),
        prompt: prompt_text(parts, unquote),
        directory,
        lossy,
    })
}

/// The prompt of a user message as the official plugin built it: the `text` of every part whose
/// `type` is `"text"` and that is not `synthetic`, each trimmed, blanks dropped, joined by a blank
/// line. With `unquote` (no message id in the hook input, i.e. `opencode run`, which wraps a
/// multi-word argument in quotes) a part that starts and ends with `"` is replaced by its JSON
/// string value.
#[must_use]
pub fn prompt_text(parts: &[Value], unquote: bool) -> String {
    let mut texts: Vec<String> = Vec::new();
    for part in parts {
        if part.get("type").and_then(Value::as_str) != Some("text")
            || part.get("synthetic") == Some(&Value::Bool(true))
        {
            continue;
        }
        let Some(text) = part.get("text").and_then(Value::as_str) else {
            continue;
        };
        let mut text = text.trim().to_owned();
        if unquote
            && text.len() >= 2
            && text.starts_with('"')
            && text.ends_with('"')
            && let Some(Value::String(inner)) = json_string(&text)
        {
            inner.trim().clone_into(&mut text);
        }
        if !text.is_empty() {
            texts.push(text);
        }
    }
    texts.join("\n\n")
}

/// A JSON text as the hook's payload decoder reads it, `None` when it is not JSON or had to be
/// repaired (a lone surrogate escape): exactly what a JSON string decoder accepts, through code
/// every hook already links.
fn json_string(text: &str) -> Option<Value> {
    payload::decode(text.as_bytes())
        .filter(|d| !d.lossy)
        .map(|d| d.value)
}

/// Decodes the `forget` payload, `{session_id}`.
///
/// # Errors
/// The [`Skip`] reason when no session is named.
pub fn parse_forget(bytes: &[u8]) -> Result<String, Skip> {
    let (v, _) = object(bytes)?;
    id(&v, "session_id").ok_or(Skip::MissingSession)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn prepare(v: &Value) -> Result<PrepareEvent, Skip> {
        parse_prepare(&serde_json::to_vec(v).unwrap())
    }

    #[test]
    fn prompt_keeps_only_user_text_parts() {
        let parts = [
            json!({"type": "text", "text": "  first  "}),
            json!({"type": "text", "text": "added by a tool", "synthetic": true}),
            json!({"type": "file", "text": "not text"}),
            json!({"type": "text", "text": "   "}),
            json!({"type": "text", "text": 7}),
            json!({"type": "text", "text": "second"}),
        ];
        assert_eq!(prompt_text(&parts, false), "first\n\nsecond");
        assert_eq!(prompt_text(&[], true), "");
    }

    #[test]
    fn opencode_run_quotes_are_removed_only_without_a_hook_message_id() {
        let parts = [json!({"type": "text", "text": "\"multi word prompt\""})];
        assert_eq!(prompt_text(&parts, true), "multi word prompt");
        assert_eq!(prompt_text(&parts, false), "\"multi word prompt\"");
        // Not a JSON string: kept as typed.
        let odd = [json!({"type": "text", "text": "\"a\" and \"b\""})];
        assert_eq!(prompt_text(&odd, true), "\"a\" and \"b\"");
        let escaped = [json!({"type": "text", "text": "\"tab\\there\""})];
        assert_eq!(prompt_text(&escaped, true), "tab\there");
        assert_eq!(prompt_text(&[json!({"type": "text", "text": "\"\""})], true), "");
    }

    #[test]
    fn a_quoted_part_is_unquoted_exactly_when_it_is_one_json_string() {
        let cases = [
            r#""pair \ud83d\ude00 and \u00e9""#,
            r#""lone \ud800 surrogate""#,
            r#""raw	tab""#,
            r#""bad \q escape""#,
            r#""two" "strings""#,
            r#""a\"b""#,
        ];
        for text in cases {
            let parts = [json!({"type": "text", "text": text})];
            let want = serde_json::from_str::<String>(text)
                .map_or_else(|_| text.to_owned(), |s| s.trim().to_owned());
            assert_eq!(prompt_text(&parts, true), want, "{text}");
        }
        let lone = [json!({"type": "text", "text": r#""lone \ud800 surrogate""#})];
        assert_eq!(prompt_text(&lone, true), r#""lone \ud800 surrogate""#);
        let pair = [json!({"type": "text", "text": r#""\ud83d\ude00""#})];
        assert_eq!(prompt_text(&pair, true), "\u{1f600}");
    }

    #[test]
    fn prepare_payload_fields() {
        let e = prepare(&json!({
            "session_id": "ses_1", "message_id": "msg_2", "created_ms": 17,
            "parts": [{"type": "text", "text": "\"hello there\""}], "directory": "/w/p"
        }))
        .unwrap();
        assert_eq!(
            (e.session_id.as_str(), e.message_id.as_str(), e.created_ms),
            ("ses_1", "msg_2", Some(17))
        );
        assert_eq!(e.prompt, "hello there");
        assert_eq!(e.directory, Some(PathBuf::from("/w/p")));
        let e = prepare(&json!({
            "session_id": "ses_1", "input_message_id": "msg_in", "message_id": "msg_2",
            "parts": [{"type": "text", "text": "\"hello there\""}], "directory": "relative/dir"
        }))
        .unwrap();
        assert_eq!(e.message_id, "msg_in");
        assert_eq!(e.prompt, "\"hello there\"");
        assert_eq!(e.directory, None, "a relative directory is as good as none");
        assert_eq!(prepare(&json!({"message_id": "m"})), Err(Skip::MissingSession));
        assert_eq!(
            prepare(&json!({"session_id": " ", "message_id": "m"})),
            Err(Skip::MissingSession)
        );
        assert_eq!(prepare(&json!({"session_id": "s"})), Err(Skip::MissingMessage));
        assert_eq!(parse_prepare(b"[1]"), Err(Skip::NotJson));
    }

    #[test]
    fn forget_names_a_session() {
        assert_eq!(parse_forget(br#"{"session_id":"ses_9"}"#), Ok("ses_9".to_owned()));
        assert_eq!(parse_forget(br#"{"session_id":" "}"#), Err(Skip::MissingSession));
        assert_eq!(parse_forget(b"[]"), Err(Skip::NotJson));
    }
}
