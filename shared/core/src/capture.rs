//! Prompt capture as a Source: builds the upstream-compatible
//! `source_id` and deterministic metadata, applies the private-block removal, the secret filter
//! (withhold or redact) and the size bound before anything is persisted, prepares the recall query
//! the same way, and classifies every answer. Never persists nor sends a detected secret.

use std::borrow::Cow;

use serde_json::{Map, Value};

pub use crate::base::SecretPolicy;
use crate::base::sha256_hex;
use crate::http::{Transport, failure_for};
use crate::outcome::{Failure, Outcome};
use crate::secrets;
use crate::wire::{CaptureRequest, MAX_CAPTURE_CHARS, MAX_QUERY_CHARS, capture_position, truncate_chars};

/// The Source request for one capture in `scope`, with the integration's `source_id` (`prefix`).
#[must_use]
pub fn request(
    prefix: &str,
    scope: &str,
    (session, turn): (&str, &str),
    content: &str,
    metadata: &Map<String, Value>,
) -> CaptureRequest {
    CaptureRequest {
        scope_id: scope.to_owned(),
        source_id: source_id(prefix, scope, session, turn, content),
        content: content.to_owned(),
        metadata: metadata.clone(),
    }
}

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

/// What the persistence policy decided, before any network call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaptureGate<'a> {
    /// Capture this text (the prompt without its private blocks).
    Allowed(Cow<'a, str>),
    /// Capture this redacted text; the rule name (content-free) is the highest-priority one.
    Redacted(String, &'static str),
    /// Secret-like text withheld; the rule name is content-free.
    Secret(&'static str),
    /// Longer than the Server accepts.
    TooLarge,
    /// Nothing left once private blocks are removed.
    Private,
}

/// Applies the persistence policy shared by every host: `<private>` blocks removed, at most
/// [`MAX_CAPTURE_CHARS`] characters (the Server's own unit), and no detected secret — the prompt
/// is withheld or redacted according to `policy`.
#[must_use]
pub fn gate(prompt: &str, policy: SecretPolicy) -> CaptureGate<'_> {
    gate_and_query(prompt, policy).0
}

/// [`gate`], and the recall query ([`recall_query`]'s result) when the scan it made covers it,
/// so a hook that does both scans the prompt once.
#[must_use]
pub fn gate_and_query(prompt: &str, policy: SecretPolicy) -> (CaptureGate<'_>, Option<Option<String>>) {
    let text = secrets::strip_private(prompt);
    if text.trim().is_empty() {
        return (CaptureGate::Private, Some(None));
    }
    // No more bytes than the limit: no more characters either, without counting them.
    if text.len() > MAX_CAPTURE_CHARS && text.chars().count() > MAX_CAPTURE_CHARS {
        return (CaptureGate::TooLarge, None);
    }
    let (redacted, kind) = secrets::redact(&text);
    let query = Some(Some(truncate_chars(&redacted, MAX_QUERY_CHARS).to_owned()));
    let Some(kind) = kind else {
        drop(redacted);
        return (CaptureGate::Allowed(text), query);
    };
    let gated = match policy {
        SecretPolicy::Skip => CaptureGate::Secret(kind.as_str()),
        // The markers can push a prompt just under the limit over it.
        SecretPolicy::Redact if redacted.chars().count() > MAX_CAPTURE_CHARS => CaptureGate::TooLarge,
        SecretPolicy::Redact => CaptureGate::Redacted(redacted.into_owned(), kind.as_str()),
    };
    (gated, query)
}

/// Characters scanned past the query limit, so that a secret straddling the cut is still whole
/// when it is detected (the longest rule, a PEM block, fits).
const QUERY_SCAN_MARGIN: usize = 8192;

/// The recall query for a prompt, whatever the capture policy: private blocks removed, every
/// detected secret redacted, cut at [`MAX_QUERY_CHARS`]. `None` when nothing is left to ask.
#[must_use]
pub fn recall_query(prompt: &str) -> Option<Cow<'_, str>> {
    let text = secrets::strip_private(prompt);
    // Only the head is sent, so only the head (and a margin) is scanned.
    let head = match text {
        Cow::Borrowed(t) => Cow::Borrowed(truncate_chars(t, MAX_QUERY_CHARS + QUERY_SCAN_MARGIN)),
        Cow::Owned(t) => Cow::Owned(truncate_chars(&t, MAX_QUERY_CHARS + QUERY_SCAN_MARGIN).to_owned()),
    };
    let query = match secrets::redact(&head).0 {
        Cow::Borrowed(_) => match head {
            Cow::Borrowed(h) => Cow::Borrowed(truncate_chars(h, MAX_QUERY_CHARS)),
            Cow::Owned(h) => Cow::Owned(truncate_chars(&h, MAX_QUERY_CHARS).to_owned()),
        },
        Cow::Owned(r) => Cow::Owned(truncate_chars(&r, MAX_QUERY_CHARS).to_owned()),
    };
    (!query.trim().is_empty()).then_some(query)
}

/// Builds metadata (keys sorted by the map), so a replay is byte-identical and dedupes on the Server.
#[must_use]
// Once per prompt: kept out of line, so a host's speed-optimized code calls this size-optimized copy.
#[inline(never)]
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
    let mut retried = false;
    loop {
        let reply = transport
            .post_json("/v1/sources/content", request)
            .map_err(|e| e.failure())?;
        return match reply.status {
            200..=202 => capture_position(&reply.body).ok_or(Failure {
                outcome: Outcome::InvalidResponse,
                http_status: Some(reply.status),
                detail: Some("schema"),
            }),
            // Only `source_conflict` says this Source identity holds other content (for good).
            // Any other 409 is a race of first writes on a fresh scope: asked again once at
            // once, then kept for a later replay.
            409 if crate::wire::error_code(&reply.body) == Some("source_conflict") => Err(Failure {
                outcome: Outcome::CaptureConflict,
                http_status: Some(409),
                detail: None,
            }),
            409 if !retried => {
                retried = true;
                continue;
            }
            409 => Err(Failure {
                outcome: Outcome::CaptureConflict,
                http_status: Some(409),
                detail: Some(TRANSIENT_CONFLICT),
            }),
            _ => Err(failure_for(&reply)),
        };
    }
}

/// The detail of a 409 that is not `source_conflict`: the capture is kept and replayed.
pub const TRANSIENT_CONFLICT: &str = "transient";

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
        let skip = SecretPolicy::Skip;
        assert_eq!(
            gate("risk-based prioritization", skip),
            CaptureGate::Allowed(Cow::Borrowed("risk-based prioritization"))
        );
        assert!(matches!(
            gate("password = hunter2", skip),
            CaptureGate::Secret("assignment")
        ));
        assert!(matches!(
            gate(&"é".repeat(MAX_CAPTURE_CHARS), skip),
            CaptureGate::Allowed(_)
        ));
        assert_eq!(
            gate(&"é".repeat(MAX_CAPTURE_CHARS + 1), skip),
            CaptureGate::TooLarge
        );
    }

    #[test]
    fn redact_policy_captures_the_rest_of_the_prompt() {
        let gated = gate(
            "deploy with password = hunter2 then restart",
            SecretPolicy::Redact,
        );
        assert_eq!(
            gated,
            CaptureGate::Redacted(
                "deploy with password = [REDACTED:assignment] then restart".to_owned(),
                "assignment"
            )
        );
        // A prompt just under the limit whose markers push it over is not captured.
        let long = format!("{} password = hunter2", "a".repeat(MAX_CAPTURE_CHARS - 20));
        assert_eq!(gate(&long, SecretPolicy::Redact), CaptureGate::TooLarge);
    }

    #[test]
    fn private_blocks_are_removed_before_the_gate() {
        let gated = gate(
            "keep <private>password = hunter2</private>this",
            SecretPolicy::Skip,
        );
        assert_eq!(gated, CaptureGate::Allowed(Cow::Owned("keep this".to_owned())));
        assert_eq!(
            gate("<private>all of it</private>  ", SecretPolicy::Skip),
            CaptureGate::Private
        );
    }

    #[test]
    fn recall_query_is_redacted_private_free_and_cut() {
        assert_eq!(
            recall_query("why does login fail with password = hunter2 <private>host db7</private>?")
                .as_deref(),
            Some("why does login fail with password = [REDACTED:assignment] ?")
        );
        assert_eq!(recall_query("<PRIVATE>only this</Private>"), None);
        let long = format!(
            "{}{}",
            "a".repeat(MAX_QUERY_CHARS - 4),
            " token=ghp_Zk3n8QwL2xVb7Rt5Yp1Mc9Ds4Fh6Jg0Ae2Ku"
        );
        let q = recall_query(&long).unwrap();
        assert_eq!(q.chars().count(), MAX_QUERY_CHARS);
        assert!(!q.contains("Zk3n"), "the secret straddling the cut leaked");
        assert!(matches!(
            recall_query("plain question"),
            Some(Cow::Borrowed("plain question"))
        ));
    }

    #[test]
    fn the_gate_s_query_is_the_recall_query() {
        for prompt in [
            "plain question",
            "why does login fail with password = hunter2 <private>host db7</private>?",
            "<private>only this</private>",
        ] {
            let (_, query) = gate_and_query(prompt, SecretPolicy::Skip);
            assert_eq!(
                query.unwrap(),
                recall_query(prompt).map(Cow::into_owned),
                "{prompt}"
            );
        }
    }

    #[test]
    fn policy_values_parse() {
        assert_eq!(SecretPolicy::parse(" Redact "), Some(SecretPolicy::Redact));
        assert_eq!(SecretPolicy::parse("skip"), Some(SecretPolicy::Skip));
        assert_eq!(SecretPolicy::parse("drop"), None);
        assert_eq!(SecretPolicy::default().as_str(), "skip");
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
