//! One recall round trip, shared by every host: `POST /v1/context/prepare` with the query cut to
//! the Server's limit, exactly HTTP 200, and the exact PreparedContext v1 validation. Returns a
//! classified value; reporting it is the caller's job.

use crate::http::{Transport, failure_for};
use crate::outcome::{Failure, Outcome};
use crate::wire::{MAX_QUERY_CHARS, PrepareRequest, PreparedContext, parse_prepared_context, truncate_chars};

/// Prepares context for `query` (cut at [`MAX_QUERY_CHARS`] characters) in `scope`.
///
/// # Errors
/// The classified [`Failure`]: transport errors, any status but 200, or a schema violation
/// (`invalid_response` with detail `schema`).
pub fn prepare(
    transport: &Transport,
    scope: &str,
    query: &str,
    max_bytes: u32,
) -> Result<PreparedContext, Failure> {
    prepare_citing(transport, scope, query, max_bytes, None)
}

/// [`prepare`], citing the session's injected bootstrap receipt so its items are not repeated.
///
/// # Errors
/// As [`prepare`].
pub fn prepare_citing(
    transport: &Transport,
    scope: &str,
    query: &str,
    max_bytes: u32,
    bootstrap_receipt_id: Option<&str>,
) -> Result<PreparedContext, Failure> {
    let _stage = crate::process::enter(crate::outcome::Stage::Prepare);
    let request = PrepareRequest {
        scope_id: scope,
        query: truncate_chars(query, MAX_QUERY_CHARS),
        max_bytes,
        bootstrap_receipt_id,
    };
    let ask = || {
        transport
            .post_json("/v1/context/prepare", &request)
            .map_err(|e| e.failure())
    };
    // A fresh scope's first writes race on the Server (a 409 naming the identity conflict for one
    // of two concurrent first requests, e.g. a session's first prepare beside its bootstrap);
    // asking once more is safe. Any other 409 is an answer.
    let reply = match ask()? {
        r if r.status == 409
            && matches!(
                crate::wire::error_code(&r.body),
                Some("subject_scope_conflict" | "idempotency_conflict")
            ) =>
        {
            ask()?
        }
        r => r,
    };
    if reply.status != 200 {
        return Err(failure_for(&reply));
    }
    parse_prepared_context(&reply.body, max_bytes).map_err(|_| Failure {
        outcome: Outcome::InvalidResponse,
        http_status: Some(200),
        detail: Some("schema"),
    })
}
