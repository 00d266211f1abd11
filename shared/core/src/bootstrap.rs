//! Session bootstrap, shared by every host: `POST /v1/context/bootstrap` for a lifecycle boundary
//! (start, resume, clear, compaction) with the exact `powercontext.bootstrap-context.v1`
//! validation, and `POST /v1/context/bootstrap/receipts` to record whether the package reached
//! the model. Returns classified values; reporting them is the caller's job. Never sends a field
//! the Server does not know (it rejects unknown fields) and never asks for a Handoff.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::http::{Transport, failure_for};
use crate::outcome::{Failure, Outcome, Stage};

/// The bootstrap schema this client accepts.
pub const BOOTSTRAP_SCHEMA: &str = "powercontext.bootstrap-context.v1";
/// The only bootstrap profile 1.4.1 knows.
pub const PROFILE: &str = "powercontext.scope-bootstrap.v1";
/// The Server's bounds on `max_bytes`.
pub const MIN_BYTES: u32 = 512;
/// See [`MIN_BYTES`].
pub const MAX_BYTES: u32 = 8192;
/// The Server's cap on `items`.
const MAX_ITEMS: usize = 7;

/// A session boundary, as the Server names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lifecycle {
    /// A new session.
    Startup,
    /// A session resumed from its transcript.
    Resume,
    /// The conversation was cleared.
    Clear,
    /// The conversation was compacted: what was injected earlier may be gone.
    Compact,
}

impl Lifecycle {
    /// The wire word.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Startup => "startup",
            Self::Resume => "resume",
            Self::Clear => "clear",
            Self::Compact => "compact",
        }
    }

    /// A host's word for the boundary (Claude Code's and Codex's `SessionStart.source`); anything
    /// unknown is a start.
    #[must_use]
    pub fn from_source(source: Option<&str>) -> Self {
        match source.map(str::trim) {
            Some("resume") => Self::Resume,
            Some("clear") => Self::Clear,
            Some("compact") => Self::Compact,
            _ => Self::Startup,
        }
    }
}

/// `POST /v1/context/bootstrap`.
#[derive(Debug, Serialize)]
pub struct BootstrapRequest<'a> {
    /// Resolved scope.
    pub scope_id: &'a str,
    /// Must be true: the Server answers `skipped`/`disabled` otherwise.
    pub enabled: bool,
    /// [`PROFILE`].
    pub profile: &'static str,
    /// The boundary.
    pub lifecycle: Lifecycle,
    /// The integration name (`claude-code`, …).
    pub integration: &'a str,
    /// A stable id of this boundary event, so a retry gets the same receipt.
    pub event_id: &'a str,
    /// Byte cap, [`MIN_BYTES`]..=[`MAX_BYTES`].
    pub max_bytes: u32,
}

/// One delivered item: what the per-session record keeps (ids and revisions, never content).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemRef {
    /// `family artifact_id revision` (ids are printable ASCII without spaces: unambiguous).
    pub key: String,
    /// The body was cut to fit: recall may still bring the whole of it.
    pub truncated: bool,
}

/// A validated bootstrap answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bootstrap {
    /// A package to inject, with the pending receipt to settle afterwards.
    Ready {
        /// The text.
        content: String,
        /// Its items.
        items: Vec<ItemRef>,
        /// The pending receipt.
        receipt_id: String,
    },
    /// Nothing eligible (`empty`), or nothing to do (`skipped`: disabled, already delivered,
    /// preparation failed); the reason word is kept for the diagnostic.
    Nothing(&'static str),
}

/// Asks for the package of one boundary.
///
/// # Errors
/// The classified [`Failure`]: transport errors, any status but 200, or a schema violation
/// (`invalid_response`, detail `schema`).
pub fn request(transport: &Transport, req: &BootstrapRequest<'_>) -> Result<Bootstrap, Failure> {
    let _stage = crate::process::enter(Stage::Bootstrap);
    let reply = transport
        .post_json("/v1/context/bootstrap", req)
        .map_err(|e| e.failure())?;
    if reply.status != 200 {
        return Err(failure_for(&reply));
    }
    parse(&reply.body, req.max_bytes).ok_or(Failure {
        outcome: Outcome::InvalidResponse,
        http_status: Some(200),
        detail: Some("schema"),
    })
}

/// `POST /v1/context/bootstrap/receipts`.
#[derive(Debug, Serialize)]
struct ReceiptRequest<'a> {
    scope_id: &'a str,
    receipt_id: &'a str,
    outcome: &'static str,
}

/// Settles a pending receipt: `injected` once the answer is out, `failed` when it could not be
/// delivered. A second `injected` claim is refused by the Server (422): another hook already
/// delivered the same package.
///
/// # Errors
/// The classified [`Failure`].
pub fn record(transport: &Transport, scope: &str, receipt_id: &str, injected: bool) -> Result<(), Failure> {
    let _stage = crate::process::enter(Stage::Bootstrap);
    let body = ReceiptRequest {
        scope_id: scope,
        receipt_id,
        outcome: if injected { "injected" } else { "failed" },
    };
    let reply = transport
        .post_json("/v1/context/bootstrap/receipts", &body)
        .map_err(|e| e.failure())?;
    if reply.status != 200 {
        return Err(failure_for(&reply));
    }
    let state = exact(&reply.body, &["receipt_id", "state"])
        .and_then(|o| o["state"].as_str())
        .ok_or(Failure {
            outcome: Outcome::InvalidResponse,
            http_status: Some(200),
            detail: Some("schema"),
        })?;
    match (state, injected) {
        ("injected", true) | ("failed", false) => Ok(()),
        _ => Err(Failure {
            outcome: Outcome::InvalidResponse,
            http_status: Some(200),
            detail: Some("receipt_state"),
        }),
    }
}

/// A package put into this run's answer, whose receipt is settled once the answer is out (see
/// [`crate::after`]).
pub struct Held {
    /// The connection to settle it over (bounded by the same process deadline).
    pub transport: Transport,
    /// Diagnostic component prefix.
    pub component: &'static str,
    /// The scope the package came from.
    pub scope: String,
    /// The pending receipt.
    pub receipt_id: String,
    /// Its items, remembered as injected in the session's window.
    pub items: Vec<ItemRef>,
}

/// The object when it has exactly `keys`.
fn exact<'v>(value: &'v Value, keys: &[&str]) -> Option<&'v Map<String, Value>> {
    let obj = value.as_object()?;
    (obj.len() == keys.len() && keys.iter().all(|k| obj.contains_key(*k))).then_some(obj)
}

/// A printable-ASCII id of 1..=`max` characters (the Server's pattern for ids).
fn id(value: &Value, max: usize) -> Option<&str> {
    value
        .as_str()
        .filter(|s| !s.is_empty() && s.len() <= max && s.bytes().all(|b| (0x21..=0x7e).contains(&b)))
}

fn digest(value: &Value) -> bool {
    value.as_str().is_some_and(|s| {
        s.strip_prefix("sha256:").is_some_and(|h| {
            h.len() == 64
                && h.bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        })
    })
}

fn item(value: &Value) -> Option<ItemRef> {
    let obj = exact(
        value,
        &["kind", "scope_id", "artifact", "content_digest", "truncated"],
    )?;
    if !matches!(obj["kind"].as_str(), Some("atomic-memory" | "handoff"))
        || obj["scope_id"].as_str().is_none_or(|s| s.trim().is_empty())
        || !digest(&obj["content_digest"])
    {
        return None;
    }
    let truncated = obj["truncated"].as_bool()?;
    Some(ItemRef {
        key: artifact_key(&obj["artifact"])?,
        truncated,
    })
}

/// `family artifact_id revision` of an exact `ArtifactReference` (`scope_id` allowed, as in a
/// PreparedContext citation's `artifact` address).
#[must_use]
pub fn artifact_key(value: &Value) -> Option<String> {
    let obj = value.as_object()?;
    let known = obj
        .keys()
        .all(|k| matches!(k.as_str(), "family" | "artifact_id" | "revision" | "scope_id"));
    if !known {
        return None;
    }
    let family = id(obj.get("family")?, 128)?;
    let artifact = id(obj.get("artifact_id")?, 128)?;
    let revision = obj.get("revision")?.as_u64().filter(|r| *r >= 1)?;
    Some(format!("{family} {artifact} {revision}"))
}

/// Validates a body exactly against `powercontext.bootstrap-context.v1`.
#[must_use]
pub fn parse(body: &Value, max_bytes: u32) -> Option<Bootstrap> {
    let obj = exact(
        body,
        &[
            "schema",
            "status",
            "reason",
            "profile",
            "content",
            "content_bytes",
            "package_digest",
            "items",
            "truncated",
            "receipt",
        ],
    )?;
    if obj["schema"].as_str() != Some(BOOTSTRAP_SCHEMA) || obj["profile"].as_str() != Some(PROFILE) {
        return None;
    }
    let bytes = obj["content_bytes"].as_u64()?;
    obj["truncated"].as_bool()?;
    let receipt = exact(&obj["receipt"], &["receipt_id", "state"])?;
    let receipt_id = id(&receipt["receipt_id"], 64)?;
    let receipt_state = receipt["state"].as_str()?;
    if !matches!(receipt_state, "pending" | "injected" | "skipped" | "failed") {
        return None;
    }
    let items = obj["items"].as_array()?;
    if items.len() > MAX_ITEMS {
        return None;
    }
    let reason = match &obj["reason"] {
        Value::Null => None,
        Value::String(r) => Some(match r.as_str() {
            "disabled" => "disabled",
            "no_eligible_context" => "no_eligible_context",
            "already_delivered" => "already_delivered",
            "preparation_failed" => "preparation_failed",
            _ => return None,
        }),
        _ => return None,
    };
    match obj["status"].as_str()? {
        "ready" => {
            let content = obj["content"].as_str()?;
            if reason.is_some()
                || content.trim().is_empty()
                || content.len() as u64 != bytes
                || bytes > u64::from(max_bytes)
                || !digest(&obj["package_digest"])
                || items.is_empty()
                || receipt_state != "pending"
            {
                return None;
            }
            Some(Bootstrap::Ready {
                content: content.to_owned(),
                items: items.iter().map(item).collect::<Option<_>>()?,
                receipt_id: receipt_id.to_owned(),
            })
        }
        status @ ("empty" | "skipped") => {
            if !obj["content"].is_null()
                || bytes != 0
                || !obj["package_digest"].is_null()
                || !items.is_empty()
            {
                return None;
            }
            let reason = reason?;
            if status == "empty" && reason != "no_eligible_context" {
                return None;
            }
            Some(Bootstrap::Nothing(reason))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ready() -> Value {
        json!({"schema": BOOTSTRAP_SCHEMA, "status": "ready", "reason": null, "profile": PROFILE,
               "content": "# ctx", "content_bytes": 5, "package_digest": format!("sha256:{}", "a".repeat(64)),
               "items": [{"kind": "atomic-memory", "scope_id": "scp_x",
                          "artifact": {"family": "atomic-memory", "artifact_id": "art_1", "revision": 2},
                          "content_digest": format!("sha256:{}", "b".repeat(64)), "truncated": false}],
               "truncated": false, "receipt": {"receipt_id": "bcr_1", "state": "pending"}})
    }

    #[test]
    fn a_ready_package_is_read_exactly() {
        let Some(Bootstrap::Ready {
            content,
            items,
            receipt_id,
        }) = parse(&ready(), 4096)
        else {
            panic!("ready");
        };
        assert_eq!((content.as_str(), receipt_id.as_str()), ("# ctx", "bcr_1"));
        assert_eq!(
            items,
            vec![ItemRef {
                key: "atomic-memory art_1 2".into(),
                truncated: false
            }]
        );
    }

    #[test]
    fn every_deviation_is_a_schema_violation() {
        type Mutation = Box<dyn Fn(&mut Value)>;
        let cases: Vec<Mutation> = vec![
            Box::new(|v| v["schema"] = json!("powercontext.bootstrap-context.v2")),
            Box::new(|v| v["extra"] = json!(1)),
            Box::new(|v| v["content_bytes"] = json!(6)),
            Box::new(|v| v["content_bytes"] = json!(5.0)),
            Box::new(|v| v["status"] = json!("done")),
            Box::new(|v| v["reason"] = json!("disabled")),
            Box::new(|v| v["receipt"]["state"] = json!("injected")),
            Box::new(|v| v["receipt"]["receipt_id"] = json!("has space")),
            Box::new(|v| v["package_digest"] = json!("md5:x")),
            Box::new(|v| v["items"][0]["artifact"]["revision"] = json!(0)),
            Box::new(|v| v["items"][0]["extra"] = json!(true)),
            Box::new(|v| v["profile"] = json!("other")),
            Box::new(|v| {
                v.as_object_mut().unwrap().remove("truncated");
            }),
        ];
        for (i, mutate) in cases.iter().enumerate() {
            let mut v = ready();
            mutate(&mut v);
            assert_eq!(parse(&v, 4096), None, "case {i}: {v}");
        }
        assert_eq!(parse(&ready(), 4), None, "over max_bytes");
    }

    #[test]
    fn empty_and_skipped_carry_their_reason() {
        let mut v = ready();
        v["status"] = json!("empty");
        v["reason"] = json!("no_eligible_context");
        v["content"] = Value::Null;
        v["content_bytes"] = json!(0);
        v["package_digest"] = Value::Null;
        v["items"] = json!([]);
        v["receipt"]["state"] = json!("skipped");
        assert_eq!(parse(&v, 4096), Some(Bootstrap::Nothing("no_eligible_context")));
        v["status"] = json!("skipped");
        v["reason"] = json!("already_delivered");
        assert_eq!(parse(&v, 4096), Some(Bootstrap::Nothing("already_delivered")));
        v["status"] = json!("empty");
        assert_eq!(parse(&v, 4096), None, "empty only for no eligible context");
    }

    #[test]
    fn host_sources_map_to_lifecycles() {
        assert_eq!(Lifecycle::from_source(Some("resume")), Lifecycle::Resume);
        assert_eq!(Lifecycle::from_source(Some("clear")), Lifecycle::Clear);
        assert_eq!(Lifecycle::from_source(Some("compact")), Lifecycle::Compact);
        assert_eq!(Lifecycle::from_source(Some("startup")), Lifecycle::Startup);
        assert_eq!(Lifecycle::from_source(None), Lifecycle::Startup);
        assert_eq!(Lifecycle::from_source(Some("web")), Lifecycle::Startup);
    }
}
