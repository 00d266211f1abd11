//! `pin` and `unpin`: curate an atomic memory for session bootstrap by adding or removing the
//! `bootstrap-context` tag the Server's bootstrap selects on. Reads the tag set with its entity
//! tag and writes it back with `If-Match`, so a concurrent edit is never overwritten. It never
//! prints a scope id or memory text.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::commands::memory::TAG;
use crate::support::ops::{self, Conn, Target, describe};
use crate::support::report;

/// `pin` / `unpin` arguments.
#[derive(Debug, clap::Args)]
pub struct PinArgs {
    /// The memory: its number in `powercontext-hooks list`, its short id as `list`, `search` and
    /// `remember` show it (`art_3eab2661`), or its whole `art_…` id.
    #[arg(value_name = "MEMORY")]
    pub artifact_id: String,
    #[command(flatten)]
    pub target: Target,
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

/// Shorter than this, an `art_…` argument is the start of an id (as `list` shows it).
const WHOLE_ID: usize = 20;

/// The artifact id `what` names: a number in `list`'s order, a unique id prefix, or an id.
fn resolve(conn: &Conn, what: &str) -> Result<String> {
    if let Ok(n) = what.parse::<u32>() {
        if !(1..=100).contains(&n) {
            bail!("`{n}`: `powercontext-hooks list` numbers memories 1 to 100; give the id instead");
        }
        let (items, _) = crate::commands::memory::list_page(conn, n)?;
        return items
            .into_iter()
            .nth(n as usize - 1)
            .map(|m| m.id)
            .with_context(|| {
                format!("there is no memory number {n} in this scope: `powercontext-hooks list` shows them")
            });
    }
    if what.len() >= WHOLE_ID {
        return Ok(what.to_owned());
    }
    let matches: Vec<String> = crate::commands::memory::list_all(conn, 20)?
        .into_iter()
        .map(|m| m.id)
        .filter(|id| id.starts_with(what))
        .collect();
    match matches.as_slice() {
        [one] => Ok(one.clone()),
        [] => bail!(
            "no memory in this scope has an id starting with `{what}`: `powercontext-hooks list` shows them"
        ),
        many => bail!(
            "`{what}` starts {} memories' ids; give more of it (`powercontext-hooks list --json` has each whole id)",
            many.len()
        ),
    }
}

/// Adds (`pin = true`) or removes the bootstrap tag. Exit 0 when the tag set is as asked, 1 with
/// the reason (configuration, connection or Server errors, each naming what to fix) when not.
pub fn run(args: &PinArgs, pin: bool) -> Result<ExitCode> {
    match change(args, pin) {
        Ok((artifact_id, changed)) => report::emit(
            &Pinned {
                ok: true,
                artifact_id,
                pinned: pin,
                changed,
            },
            args.json,
        ),
        Err(e) => report::refuse(args.json, &e),
    }
}

/// Makes the tag set as asked; the artifact id, and whether it had to change.
fn change(args: &PinArgs, pin: bool) -> Result<(String, bool)> {
    let what = &args.artifact_id;
    if what.is_empty()
        || !what
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        bail!(
            "`{what}` is not a memory number or id (letters, digits, `_` and `-` only): \
             `powercontext-hooks list` shows them"
        );
    }
    let conn = Conn::open(&args.target)?;
    let id = resolve(&conn, what)?;
    let id = &id;
    let current = conn.call(&ops::READ_TAGS, Some(id), None, None)?;
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
        return Ok((id.clone(), false));
    }
    if pin {
        tags.push(TAG.to_owned());
    } else {
        tags.retain(|t| t != TAG);
    }
    let written = conn.call(
        &ops::WRITE_TAGS,
        Some(id),
        Some(json!({ "tags": tags })),
        Some(&etag),
    )?;
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
    Ok((id.clone(), true))
}
