//! Prompt capture as a Source and the optional flush-through: builds the upstream-compatible
//! `source_id` and deterministic metadata, applies the secret filter and size bound before
//! anything is persisted, and classifies every answer. Never persists secret-like text.

use serde_json::{Map, Value};

use crate::http::{Transport, failure_for};
use crate::outcome::{Failure, Outcome};
use crate::secrets;
use crate::wire::{CaptureRequest, FlushRequest, MAX_CAPTURE_CHARS, capture_position, flush_cursor};
use crate::workspace::sha256_hex;

/// `prefix:` + SHA-256 hex of `scope ␀ session ␀ turn ␀ prompt` (the official rule).
#[must_use]
pub fn source_id(prefix: &str, scope: &str, session: &str, turn: &str, prompt: &str) -> String {
    let mut material = Vec::with_capacity(scope.len() + session.len() + turn.len() + prompt.len() + 3);
    for (i, part) in [scope, session, turn, prompt].iter().enumerate() {
        if i > 0 {
            material.push(0);
        }
        material.extend_from_slice(part.as_bytes());
    }
    format!("{prefix}:{}", sha256_hex(&material))
}

/// Why a prompt is not captured, before any network call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaptureGate {
    /// Capture it.
    Allowed,
    /// Secret-like text; the rule name is content-free.
    Secret(&'static str),
    /// Longer than the Server accepts.
    TooLarge,
}

/// Applies the persistence policy shared by every host: at most [`MAX_CAPTURE_CHARS`] characters
/// (the Server's own unit) and no secret-like text.
#[must_use]
pub fn gate(prompt: &str) -> CaptureGate {
    if prompt.chars().count() > MAX_CAPTURE_CHARS {
        return CaptureGate::TooLarge;
    }
    match secrets::find_secret(prompt) {
        Some(kind) => CaptureGate::Secret(kind.as_str()),
        None => CaptureGate::Allowed,
    }
}

/// Builds metadata (keys sorted by the map), so a replay is byte-identical and dedupes on the Server.
#[must_use]
pub fn metadata(origin: &str, event: &str, fields: &[(&str, Option<&str>)]) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("origin".into(), Value::String(origin.into()));
    m.insert("event".into(), Value::String(event.into()));
    for (k, v) in fields {
        if let Some(v) = v {
            m.insert((*k).into(), Value::String((*v).into()));
        }
    }
    m
}

/// Sends a capture; returns the Source position.
///
/// # Errors
/// The classified [`Failure`]; a 409 is [`Outcome::CaptureConflict`].
pub fn send(transport: &Transport, request: &CaptureRequest) -> Result<u64, Failure> {
    let _stage = crate::process::enter(crate::outcome::Stage::Capture);
    let reply = transport
        .post_json("/v1/sources/content", request)
        .map_err(|e| e.failure())?;
    match reply.status {
        200..=202 => capture_position(&reply.body).ok_or(Failure {
            outcome: Outcome::InvalidResponse,
            http_status: Some(reply.status),
            detail: Some("schema"),
        }),
        409 => Err(Failure {
            outcome: Outcome::CaptureConflict,
            http_status: Some(409),
            detail: None,
        }),
        _ => Err(failure_for(&reply)),
    }
}

/// Flushes until the processing cursor reaches `position`, at most `max_calls` calls.
///
/// # Errors
/// [`Outcome::FlushIncomplete`] when calls ran out, [`Outcome::InferenceUnavailable`] for a Server
/// without a model, or the classified failure of a call.
pub fn flush_through(
    transport: &Transport,
    scope: &str,
    position: u64,
    max_calls: u32,
) -> Result<u64, Failure> {
    let _stage = crate::process::enter(crate::outcome::Stage::Flush);
    for _ in 0..max_calls {
        let reply = transport
            .post_json("/v1/memory/flush", &FlushRequest { scope_id: scope })
            .map_err(|e| e.failure())?;
        if reply.status != 200 {
            return Err(failure_for(&reply));
        }
        let cursor = flush_cursor(&reply.body).ok_or(Failure {
            outcome: Outcome::InvalidResponse,
            http_status: Some(200),
            detail: Some("schema"),
        })?;
        if cursor >= position {
            return Ok(cursor);
        }
    }
    Err(Failure::new(Outcome::FlushIncomplete))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn official_source_id_vectors() {
        assert_eq!(
            source_id(
                "pi-user-prompt",
                "project:demo",
                "session-42",
                "2",
                "continue implementation"
            ),
            "pi-user-prompt:e6a00963cdd775dfc032dd2f79e40d2583d144c09082352aae50bdd1dbe5bca5"
        );
        assert_eq!(
            source_id(
                "codex-user-prompt",
                "project:test",
                "session-1",
                "turn-2",
                "Keep the Source pipeline."
            ),
            "codex-user-prompt:816b0186fbb1c877ad4ccac222d80c32ebb86734c41f6fe36a9ea53c115d2c62"
        );
        assert_eq!(
            source_id(
                "claude-code-user-prompt",
                "project:test",
                "session-1",
                "prompt-2",
                "Keep the Source pipeline."
            ),
            "claude-code-user-prompt:297038fe2ca34421ff13cb4c6cd98bf1398d93f392f60e29fece6ce2d6c82723"
        );
        assert_eq!(
            source_id(
                "codex-user-prompt",
                "project:test",
                "",
                "",
                "Keep the Source pipeline."
            ),
            "codex-user-prompt:2d470c5486aed1ebfc2e1608680502be74f3b99393392aad57a700ec4adc8283"
        );
    }

    #[test]
    fn gate_bounds_and_secrets() {
        assert_eq!(gate("risk-based prioritization"), CaptureGate::Allowed);
        assert!(matches!(gate("password = hunter2"), CaptureGate::Secret(_)));
        assert_eq!(gate(&"é".repeat(MAX_CAPTURE_CHARS)), CaptureGate::Allowed);
        assert_eq!(gate(&"é".repeat(MAX_CAPTURE_CHARS + 1)), CaptureGate::TooLarge);
    }

    #[test]
    fn metadata_is_sorted_and_skips_absent_ids() {
        let m = metadata(
            "codex",
            "user_prompt_submit",
            &[("cwd", Some("/p")), ("session_id", None), ("turn_id", Some("t"))],
        );
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            r#"{"cwd":"/p","event":"user_prompt_submit","origin":"codex","turn_id":"t"}"#
        );
    }
}
