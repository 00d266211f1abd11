//! `pin` and `unpin`: curate an atomic memory for session bootstrap by adding or removing the
//! `bootstrap-context` tag the Server's bootstrap selects on. Reads the tag set with its entity
//! tag and writes it back with `If-Match`, so a concurrent edit is never overwritten. It never
//! prints a scope id or memory text.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use powercontext_hooks_core::config::Settings;
use powercontext_hooks_core::deadline::Deadline;
use powercontext_hooks_core::env::Env;
use powercontext_hooks_core::http::{Reply, Transport};
use powercontext_hooks_core::scope::ScopeQuery;
use powercontext_hooks_core::workspace::Discovery;
use serde_json::{Value, json};

use crate::install::Host;
use crate::report;

/// The tag the Server's bootstrap profile selects on.
pub const TAG: &str = "bootstrap-context";

/// `pin` / `unpin` arguments.
#[derive(Debug, clap::Args)]
pub struct PinArgs {
    /// The atomic memory's artifact id (`art_…`, as shown by the Server or the official CLI).
    pub artifact_id: String,
    /// Whose connection settings and scope binding to use.
    #[arg(long, default_value = "claude-code", value_parser = crate::install::host_arg())]
    pub host: Host,
    /// Project directory whose scope to use (default: here), resolved as the host's hook would.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// An explicit scope id instead of resolving one.
    #[arg(long, value_name = "SCOPE_ID")]
    pub scope: Option<String>,
    /// One JSON object on stdout instead of text.
    #[arg(long)]
    pub json: bool,
}

/// What `pin` / `unpin` say: the tag set is now as asked, and whether it had to change.
#[derive(serde::Serialize)]
struct Pinned {
    ok: bool,
    artifact_id: String,
    pinned: bool,
    changed: bool,
}

impl report::Report for Pinned {}

impl std::fmt::Display for Pinned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let said = match (self.pinned, self.changed) {
            (true, false) => "already pinned for session bootstrap",
            (false, false) => "already not pinned",
            (true, true) => "pinned: sessions of this scope start with it (bootstrap)",
            (false, true) => "unpinned: no longer part of session bootstrap",
        };
        writeln!(f, "{}: {said}", self.artifact_id)
    }
}

/// `text` as one URL path segment: every byte but the unreserved ones percent-encoded, so a
/// scope id can never add a segment, a query or a fragment.
pub(crate) fn path_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    // `.` and `..` alone would still be read as dot segments.
    match out.as_str() {
        "." => "%2E".to_owned(),
        ".." => "%2E%2E".to_owned(),
        _ => out,
    }
}

fn describe(reply: &Reply) -> String {
    let code = reply.body["error"]["code"].as_str().unwrap_or("no error code");
    format!("HTTP {} ({code})", reply.status)
}

/// Adds (`pin = true`) or removes the bootstrap tag. Exit 0 when the tag set is as asked, 1 with
/// the reason (configuration, connection or Server errors, each naming what to fix) when not.
pub fn run(args: &PinArgs, pin: bool) -> Result<ExitCode> {
    match change(args, pin) {
        Ok(changed) => report::emit(
            &Pinned {
                ok: true,
                artifact_id: args.artifact_id.clone(),
                pinned: pin,
                changed,
            },
            args.json,
        ),
        Err(e) => report::refuse(args.json, &e),
    }
}

/// Makes the tag set as asked; whether it had to change.
fn change(args: &PinArgs, pin: bool) -> Result<bool> {
    let id = &args.artifact_id;
    if id.is_empty()
        || !id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        bail!("`{id}` is not an artifact id (letters, digits, `_` and `-` only)");
    }
    let env = Env::from_process();
    let host = args.host;
    let settings = Settings::for_hook(host, &env)?;
    let deadline = Deadline::after(Duration::from_secs(15));
    let transport = Transport::new(
        settings.server_url.value.clone(),
        settings.authorization.value.clone(),
        Duration::from_secs(5),
        deadline,
        &env,
    )
    .map_err(|var| anyhow::anyhow!("the proxy variable {var} cannot be used"))?;
    let cwd = match &args.cwd {
        Some(d) => d.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    if args.scope.as_deref().is_some_and(|s| s.trim().is_empty()) {
        bail!("--scope is empty: give a scope id, or leave it out to use the one the hooks resolve");
    }
    if let Some(d) = &args.cwd
        && !d.is_dir()
    {
        bail!("--cwd {} is not a directory", d.display());
    }
    let server = settings.server_url.value.as_str().to_owned();
    let unreachable = |what: &str, outcome: &str| {
        let fix = match outcome {
            "server_unavailable" | "timeout" => format!(
                "is the Server running at {server} (from {})? Point the hooks elsewhere with \
                 `powercontext-hooks setup {} --server-url URL`",
                settings.server_url.origin,
                host.as_str()
            ),
            "authentication_failed" | "forbidden" => {
                format!("check the token ({})", settings.authorization.origin)
            }
            _ => "run `powercontext-hooks doctor` for this host".to_owned(),
        };
        anyhow::anyhow!("{what}: {outcome}; {fix}")
    };
    let explicit = args.scope.clone().or_else(|| settings.scope_id.value.clone());
    let scope = ScopeQuery::for_event(
        host,
        explicit.as_deref(),
        None,
        &cwd,
        &deadline,
        Discovery::for_env(&env),
    )
    .resolve(&transport)
    .map_err(|f| unreachable("could not resolve the scope", f.outcome.as_str()))?;
    let path = format!(
        "/v1/scopes/{}/artifacts/atomic-memory/{id}/tags",
        path_segment(&scope)
    );
    let current = transport
        .get(&path)
        .map_err(|e| unreachable("the Server did not answer", e.failure().outcome.as_str()))?;
    match current.status {
        200 => {}
        404 if current.body["error"]["code"] == "scope_not_found" => bail!(
            "the scope does not exist on this Server ({}); check --scope or the scope binding of --cwd",
            describe(&current)
        ),
        404 => bail!(
            "no atomic memory `{id}` in this scope ({}); check the id and --cwd/--scope",
            describe(&current)
        ),
        _ => bail!("the Server refused to read its tags: {}", describe(&current)),
    }
    let etag = current
        .etag
        .clone()
        .context("the Server sent no ETag for the tag set")?;
    let mut tags: Vec<String> = current.body["tags"]
        .as_array()
        .context("the Server's tag set has no `tags` list")?
        .iter()
        .filter_map(|t| t.as_str().map(str::to_owned))
        .collect();
    let has = tags.iter().any(|t| t == TAG);
    if has == pin {
        return Ok(false);
    }
    if pin {
        tags.push(TAG.to_owned());
    } else {
        tags.retain(|t| t != TAG);
    }
    let written = transport
        .put_json_if_match(&path, &json!({ "tags": tags }), &etag)
        .map_err(|e| unreachable("the Server did not answer", e.failure().outcome.as_str()))?;
    match written.status {
        200 => {}
        409 | 412 | 428 => bail!(
            "the tag set changed meanwhile ({}); run the command again",
            describe(&written)
        ),
        _ => bail!("the Server refused the tag change: {}", describe(&written)),
    }
    let now = written.body["tags"]
        .as_array()
        .is_some_and(|t| t.iter().any(|v| v == &Value::from(TAG)));
    if now != pin {
        bail!("the Server answered, but the tag set does not show the change");
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::path_segment;

    #[test]
    fn scope_ids_stay_one_path_segment() {
        assert_eq!(path_segment("scp_abc-1"), "scp_abc-1");
        assert_eq!(path_segment("x?y=1#"), "x%3Fy%3D1%23");
        assert_eq!(path_segment("team/alpha"), "team%2Falpha");
        assert_eq!(path_segment(".."), "%2E%2E");
        assert_eq!(path_segment("é "), "%C3%A9%20");
    }
}
