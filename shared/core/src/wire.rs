//! Server wire types: the exact JSON bodies sent to the PowerContext Server and the strict
//! validation of what comes back. Never sends a field the Server does not expect (it rejects
//! unknown fields) and never sends `explain` (it would add a fifth key to PreparedContext).

use serde::Serialize;
use serde_json::{Map, Value};

/// The PreparedContext schema this client accepts.
pub const PREPARED_CONTEXT_SCHEMA: &str = "powercontext.prepared-context.v1";
/// The Server's limit on `query`, in characters (Unicode scalar values).
pub const MAX_QUERY_CHARS: usize = 8192;
/// The Server's limit on captured `content`, in characters.
pub const MAX_CAPTURE_CHARS: usize = 200_000;

/// `POST /v1/context/prepare`.
#[derive(Debug, Serialize)]
pub struct PrepareRequest<'a> {
    /// Resolved scope.
    pub scope_id: &'a str,
    /// The prompt, cut to [`MAX_QUERY_CHARS`].
    pub query: &'a str,
    /// Byte cap for the content.
    pub max_bytes: u32,
    /// The session's injected bootstrap receipt: what it delivered is not recalled again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bootstrap_receipt_id: Option<&'a str>,
}

/// `POST /v1/sources/content`.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct CaptureRequest {
    /// Resolved scope.
    pub scope_id: String,
    /// Idempotency key: prefix + SHA-256 of scope␀session␀turn␀prompt.
    pub source_id: String,
    /// The prompt.
    pub content: String,
    /// Deterministic metadata (replays must be byte-identical to dedupe).
    pub metadata: Map<String, Value>,
}

/// `POST /v1/memory/flush`.
#[derive(Debug, Serialize)]
pub struct FlushRequest<'a> {
    /// Scope to flush.
    pub scope_id: &'a str,
}

/// One binding key of `POST /v1/scope-bindings/resolve`.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq, Eq)]
pub struct BindingKey {
    /// Integration name (`claude-code`, `codex`, …).
    pub integration: String,
    /// `session` or `workspace`.
    pub kind: String,
    /// Session id, or SHA-256 hex of the workspace root.
    pub external_id: String,
}

/// `POST /v1/scope-bindings/resolve`.
#[derive(Debug, Serialize)]
pub struct ResolveRequest<'a> {
    /// Keys, most specific first.
    pub binding_keys: &'a [BindingKey],
    /// Fall back to the Server's default scope.
    pub allow_default: bool,
}

/// A validated PreparedContext.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PreparedContext {
    /// Nothing to inject.
    Empty,
    /// Text to inject (non-blank, byte length verified).
    Ready(String),
}

/// Why a PreparedContext was rejected. Content-free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SchemaViolation {
    /// Not a JSON object with exactly the four keys.
    #[error("the object does not have exactly the keys schema, status, content, content_bytes")]
    Keys,
    /// Unknown schema name.
    #[error("unknown schema")]
    Schema,
    /// `content_bytes` is not a non-negative integer.
    #[error("content_bytes is not a non-negative integer")]
    ContentBytes,
    /// `empty` with content, or non-zero bytes.
    #[error("an empty result carries content")]
    EmptyWithContent,
    /// `ready` without non-blank string content.
    #[error("a ready result has no text")]
    BlankReady,
    /// Declared byte count differs from the UTF-8 length.
    #[error("content_bytes does not match the content")]
    ByteMismatch,
    /// More bytes than requested.
    #[error("content exceeds the requested max_bytes")]
    TooLarge,
    /// Unknown status.
    #[error("unknown status")]
    Status,
}

/// Validates a response body exactly against `powercontext.prepared-context.v1`.
///
/// # Errors
/// The first [`SchemaViolation`] found.
pub fn parse_prepared_context(body: &Value, max_bytes: u32) -> Result<PreparedContext, SchemaViolation> {
    let obj = body.as_object().ok_or(SchemaViolation::Keys)?;
    if obj.len() != 4
        || !["schema", "status", "content", "content_bytes"]
            .iter()
            .all(|k| obj.contains_key(*k))
    {
        return Err(SchemaViolation::Keys);
    }
    if obj["schema"].as_str() != Some(PREPARED_CONTEXT_SCHEMA) {
        return Err(SchemaViolation::Schema);
    }
    // `as_u64` is only Some for integers: floats such as 8000.0 and booleans are rejected.
    let bytes = obj["content_bytes"]
        .as_u64()
        .ok_or(SchemaViolation::ContentBytes)?;
    match obj["status"].as_str() {
        Some("empty") => {
            if !obj["content"].is_null() || bytes != 0 {
                return Err(SchemaViolation::EmptyWithContent);
            }
            Ok(PreparedContext::Empty)
        }
        Some("ready") => {
            let content = obj["content"].as_str().ok_or(SchemaViolation::BlankReady)?;
            if content.trim().is_empty() {
                return Err(SchemaViolation::BlankReady);
            }
            if content.len() as u64 != bytes {
                return Err(SchemaViolation::ByteMismatch);
            }
            if bytes > u64::from(max_bytes) {
                return Err(SchemaViolation::TooLarge);
            }
            Ok(PreparedContext::Ready(content.to_owned()))
        }
        _ => Err(SchemaViolation::Status),
    }
}

/// The `position` of a 202 capture answer (an integer ≥ 1).
#[must_use]
pub fn capture_position(body: &Value) -> Option<u64> {
    body.get("position").and_then(Value::as_u64).filter(|p| *p >= 1)
}

/// The `current_cursor` of a flush answer.
#[must_use]
pub fn flush_cursor(body: &Value) -> Option<u64> {
    body.get("current_cursor").and_then(Value::as_u64)
}

/// The `scope_id` of a ScopeDescriptor, if it is a plausible id.
#[must_use]
pub fn descriptor_scope(body: &Value) -> Option<String> {
    body.get("scope_id")
        .and_then(Value::as_str)
        .filter(|s| !s.trim().is_empty() && s.chars().count() <= 256)
        .map(str::to_owned)
}

/// The application error code of an error envelope `{"error":{"code":…}}`, if any.
#[must_use]
pub fn error_code(body: &Value) -> Option<&str> {
    body.get("error")?.get("code")?.as_str()
}

/// Cuts text to at most `max` characters, on a character boundary.
#[must_use]
pub fn truncate_chars(text: &str, max: usize) -> &str {
    match text.char_indices().nth(max) {
        Some((i, _)) => &text[..i],
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ready(content: &str, bytes: u64) -> Value {
        json!({"schema": PREPARED_CONTEXT_SCHEMA, "status": "ready", "content": content, "content_bytes": bytes})
    }

    #[test]
    fn accepts_ready_and_empty() {
        assert_eq!(
            parse_prepared_context(&ready("héllo", 6), 8000),
            Ok(PreparedContext::Ready("héllo".into()))
        );
        let empty = json!({"schema": PREPARED_CONTEXT_SCHEMA, "status": "empty", "content": null, "content_bytes": 0});
        assert_eq!(parse_prepared_context(&empty, 8000), Ok(PreparedContext::Empty));
    }

    #[test]
    fn rejects_every_violation() {
        let mut extra = ready("x", 1);
        extra["reason"] = json!(null);
        assert_eq!(parse_prepared_context(&extra, 8000), Err(SchemaViolation::Keys));
        let mut missing = ready("x", 1);
        missing.as_object_mut().unwrap().remove("content_bytes");
        assert_eq!(parse_prepared_context(&missing, 8000), Err(SchemaViolation::Keys));
        assert_eq!(
            parse_prepared_context(&json!([1, 2, 3, 4]), 8000),
            Err(SchemaViolation::Keys)
        );
        let mut v2 = ready("x", 1);
        v2["schema"] = json!("powercontext.prepared-context.v2");
        assert_eq!(parse_prepared_context(&v2, 8000), Err(SchemaViolation::Schema));
        assert_eq!(
            parse_prepared_context(&ready("x", 2), 8000),
            Err(SchemaViolation::ByteMismatch)
        );
        assert_eq!(
            parse_prepared_context(&ready("   \n", 4), 8000),
            Err(SchemaViolation::BlankReady)
        );
        let mut float = ready("x", 1);
        float["content_bytes"] = json!(1.0);
        assert_eq!(
            parse_prepared_context(&float, 8000),
            Err(SchemaViolation::ContentBytes)
        );
        let mut boolean = ready("x", 1);
        boolean["content_bytes"] = json!(true);
        assert_eq!(
            parse_prepared_context(&boolean, 8000),
            Err(SchemaViolation::ContentBytes)
        );
        let empty_with =
            json!({"schema": PREPARED_CONTEXT_SCHEMA, "status": "empty", "content": "x", "content_bytes": 1});
        assert_eq!(
            parse_prepared_context(&empty_with, 8000),
            Err(SchemaViolation::EmptyWithContent)
        );
        let mut status = ready("x", 1);
        status["status"] = json!("partial");
        assert_eq!(
            parse_prepared_context(&status, 8000),
            Err(SchemaViolation::Status)
        );
    }

    #[test]
    fn byte_cap_is_inclusive() {
        let at = "a".repeat(8000);
        assert!(parse_prepared_context(&ready(&at, 8000), 8000).is_ok());
        let over = "a".repeat(8001);
        assert_eq!(
            parse_prepared_context(&ready(&over, 8001), 8000),
            Err(SchemaViolation::TooLarge)
        );
    }

    #[test]
    fn truncation_stays_on_a_character_boundary() {
        let s = "日本語".repeat(3000); // 9000 characters, 27000 bytes
        let cut = truncate_chars(&s, MAX_QUERY_CHARS);
        assert_eq!(cut.chars().count(), MAX_QUERY_CHARS);
        assert_eq!(cut.len(), MAX_QUERY_CHARS * 3);
        let mixed = format!("{}é🙂", "a".repeat(8191));
        assert_eq!(
            truncate_chars(&mixed, MAX_QUERY_CHARS),
            format!("{}é", "a".repeat(8191))
        );
        assert_eq!(truncate_chars("short", MAX_QUERY_CHARS), "short");
    }

    #[test]
    fn prepare_body_has_exactly_three_fields() {
        let body = serde_json::to_value(PrepareRequest {
            scope_id: "s",
            query: "q",
            max_bytes: 8000,
            bootstrap_receipt_id: None,
        })
        .unwrap();
        assert_eq!(body, json!({"scope_id": "s", "query": "q", "max_bytes": 8000}));
    }
}
