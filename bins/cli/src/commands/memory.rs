//! `remember`, `search` and `list`: add an atomic memory, find memories, list them numbered so
//! `pin` can take what the user sees. The text to remember passes the same secret filter as a
//! captured prompt and is refused, never stored, when it holds a credential. Diagnostics never
//! quote memory text or a scope id; only the listing itself shows memories.

use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use powercontext_hooks_core::capture::{self, CaptureGate, SecretPolicy};
use serde_json::json;

use crate::support::ops::{self, Conn, Memory, Target};
use crate::support::report;

/// The tag the Server's bootstrap profile selects on.
pub const TAG: &str = "bootstrap-context";

/// The most a memory's text may hold (UTF-8 bytes, the Server's own limit).
const MAX_TEXT_BYTES: usize = 8192;
/// Most memories one Server page holds.
const PAGE: u32 = 100;

/// `remember TEXT`.
#[derive(Debug, clap::Args)]
pub struct RememberArgs {
    /// The memory, as one sentence or a few (secret-like text is refused).
    pub text: String,
    /// What kind of memory it is (free text: fact, decision, preference, …).
    #[arg(long, default_value = "fact", value_name = "KIND")]
    pub kind: String,
    #[command(flatten)]
    pub target: Target,
    /// One JSON object on stdout instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `search QUERY`.
#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// What to look for.
    pub query: String,
    /// How many memories at most (1-100).
    #[arg(long, default_value_t = 10, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub limit: u32,
    #[command(flatten)]
    pub target: Target,
    /// One JSON object on stdout instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `list`.
#[derive(Debug, clap::Args)]
pub struct ListArgs {
    /// How many memories at most (1-100); `pin N` counts in this same order.
    #[arg(long, default_value_t = 20, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=100))]
    pub limit: u32,
    /// Only the memories pinned for session start.
    #[arg(long)]
    pub pinned: bool,
    #[command(flatten)]
    pub target: Target,
    /// One JSON object on stdout instead of text.
    #[arg(long)]
    pub json: bool,
}

/// One memory in a listing: its number (what `pin N` takes), its short id, whether it is pinned.
#[derive(serde::Serialize)]
struct Row {
    /// Its number in `list` (what `pin N` takes); none in a search or a pinned-only listing.
    #[serde(skip_serializing_if = "Option::is_none")]
    n: Option<usize>,
    id: String,
    short_id: String,
    kind: String,
    text: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pinned: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    score: Option<f64>,
}

/// A listing or search result.
#[derive(serde::Serialize)]
struct Listing {
    ok: bool,
    memories: Vec<Row>,
    /// More memories exist than were shown.
    more: bool,
    #[serde(skip)]
    empty: &'static str,
}

impl report::Report for Listing {}

impl std::fmt::Display for Listing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.memories.is_empty() {
            return writeln!(f, "{}", self.empty);
        }
        for r in &self.memories {
            let pin = if r.pinned == Some(true) { "*" } else { " " };
            let n = r.n.map_or_else(|| "  -".to_owned(), |n| format!("{n:>3}."));
            writeln!(
                f,
                "{n:<4}{pin}{:<13} {:<10} {}",
                r.short_id,
                one_line(&r.kind, 10),
                one_line(&r.text, 100)
            )?;
        }
        if self.more {
            writeln!(f, "(more: --limit N shows up to 100)")?;
        }
        if self.memories.iter().any(|r| r.pinned == Some(true)) {
            writeln!(f, "* pinned for session start")?;
        }
        let what = if self.memories.iter().all(|r| r.n.is_some()) {
            "<number or id>"
        } else {
            "<id>"
        };
        writeln!(
            f,
            "pin one for every session start: powercontext-hooks pin {what}"
        )
    }
}

/// `text` on one line for a terminal: whitespace runs as one space, control characters escaped,
/// cut at `max` characters.
fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let safe = crate::support::textstyle::terminal_safe(&flat);
    if safe.chars().count() <= max {
        return safe;
    }
    let mut cut: String = safe.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// What `remember` says.
#[derive(serde::Serialize)]
struct Remembered {
    ok: bool,
    id: String,
    short_id: String,
    kind: String,
    /// False when the Server already held this exact memory.
    changed: bool,
}

impl report::Report for Remembered {}

impl std::fmt::Display for Remembered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.changed {
            writeln!(
                f,
                "remembered as {} ({})",
                self.short_id,
                one_line(&self.kind, 40)
            )?;
        } else {
            writeln!(f, "already remembered as {}", self.short_id)?;
        }
        writeln!(
            f,
            "recalled when a prompt is about it; pin it for every session start: powercontext-hooks pin {}",
            self.short_id
        )
    }
}

/// The text to store: the capture gate's verdict, or why it is refused (never quoting it).
pub(crate) fn gated_text(text: &str) -> Result<String> {
    let kept = match capture::gate(text, SecretPolicy::Skip) {
        CaptureGate::Allowed(t) => t.into_owned(),
        CaptureGate::Secret(rule) | CaptureGate::Redacted(_, rule) => bail!(
            "not stored: the text looks like a secret ({rule}); PowerContext keeps no credentials \
             (docs/secret-filter.md). Remove it and try again"
        ),
        CaptureGate::Private => {
            bail!("not stored: nothing is left once <private> blocks are removed")
        }
        CaptureGate::TooLarge => bail!("not stored: the text is longer than the Server accepts"),
    };
    let kept = kept.trim().to_owned();
    if kept.len() > MAX_TEXT_BYTES {
        bail!(
            "not stored: the text is {} bytes; a memory holds at most {MAX_TEXT_BYTES}",
            kept.len()
        );
    }
    Ok(kept)
}

/// Runs `remember`.
pub fn remember(args: &RememberArgs) -> Result<ExitCode> {
    let done = (|| -> Result<Remembered> {
        let text = gated_text(&args.text)?;
        let kind = args.kind.trim();
        if kind.is_empty() || kind.len() > 128 {
            bail!("--kind must be 1 to 128 characters");
        }
        let conn = Conn::open(&args.target)?;
        let body = conn.call_ok(&ops::REMEMBER, json!({"kind": kind, "text": text}))?;
        let record = body["records"]
            .as_array()
            .and_then(|r| r.first())
            .context("the Server's answer names no memory")?;
        let m = Memory::from_record(record)?;
        Ok(Remembered {
            ok: true,
            short_id: m.short_id().to_owned(),
            id: m.id,
            kind: m.kind,
            changed: body["changed"].as_bool().unwrap_or(true),
        })
    })();
    match done {
        Ok(r) => report::emit(&r, args.json),
        Err(e) => report::refuse(args.json, &e),
    }
}

/// Runs `search`.
pub fn search(args: &SearchArgs) -> Result<ExitCode> {
    let done = (|| -> Result<Listing> {
        if args.query.trim().is_empty() {
            bail!("the query is empty");
        }
        // The same query a hook would send: secrets redacted, private blocks out.
        let query = capture::recall_query(&args.query)
            .context("nothing is left to search for once <private> blocks are removed")?;
        let conn = Conn::open(&args.target)?;
        let body = conn.call_ok(
            &ops::SEARCH,
            json!({"query": query, "limit": args.limit, "mode": "text"}),
        )?;
        let hits = body["hits"]
            .as_array()
            .context("the Server's answer has no `hits` list")?;
        let mut memories = Vec::new();
        for h in hits {
            let m = Memory::from_record(&h["memory"])?;
            memories.push(Row {
                n: None,
                short_id: m.short_id().to_owned(),
                id: m.id,
                kind: m.kind,
                text: m.text,
                pinned: None,
                score: h["score"].as_f64(),
            });
        }
        Ok(Listing {
            ok: true,
            memories,
            more: false,
            empty: "no memory matches",
        })
    })();
    match done {
        Ok(l) => report::emit(&l, args.json),
        Err(e) => report::refuse(args.json, &e),
    }
}

/// One page of active memories in the Server's order, and whether more follow.
pub(crate) fn list_page(conn: &Conn, limit: u32) -> Result<(Vec<Memory>, bool)> {
    let page = conn.call_ok(&ops::LIST, json!({"states": ["active"], "limit": limit}))?;
    let items = page["items"]
        .as_array()
        .context("the Server's answer has no `items` list")?
        .iter()
        .map(Memory::from_record)
        .collect::<Result<Vec<_>>>()?;
    Ok((items, !page["next_cursor"].is_null()))
}

/// The ids of the atomic memories pinned for session start (at most the first 100).
fn pinned_ids(conn: &Conn) -> Result<Vec<String>> {
    let page = conn.call_ok(
        &ops::TAGGED,
        json!({
            "tags": [TAG],
            "families": ["atomic-memory"],
            "target_types": ["artifact"],
            "limit": PAGE,
        }),
    )?;
    Ok(page["items"]
        .as_array()
        .context("the Server's answer has no `items` list")?
        .iter()
        .filter_map(|i| i["target"]["artifact_id"].as_str().map(str::to_owned))
        .collect())
}

/// Every active memory (at most `cap` pages), for finding one by its short id.
pub(crate) fn list_all(conn: &Conn, cap: usize) -> Result<Vec<Memory>> {
    let mut out = Vec::new();
    let mut cursor: Option<String> = None;
    for _ in 0..cap {
        let mut body = json!({"states": ["active"], "limit": PAGE});
        if let Some(c) = &cursor {
            body["cursor"] = json!(c);
        }
        let page = conn.call_ok(&ops::LIST, body)?;
        for item in page["items"]
            .as_array()
            .context("the Server's answer has no `items` list")?
        {
            out.push(Memory::from_record(item)?);
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return Ok(out),
        }
    }
    Ok(out)
}

/// Runs `list`.
pub fn list(args: &ListArgs) -> Result<ExitCode> {
    let done = (|| -> Result<Listing> {
        let conn = Conn::open(&args.target)?;
        let pinned = pinned_ids(&conn)?;
        let (items, more) = if args.pinned {
            let mut all = list_all(&conn, 20)?;
            all.retain(|m| pinned.contains(&m.id));
            let more = all.len() > args.limit as usize;
            all.truncate(args.limit as usize);
            (all, more)
        } else {
            list_page(&conn, args.limit)?
        };
        let memories = items
            .into_iter()
            .enumerate()
            .map(|(i, m)| Row {
                n: (!args.pinned).then_some(i + 1),
                short_id: m.short_id().to_owned(),
                pinned: Some(pinned.contains(&m.id)),
                id: m.id,
                kind: m.kind,
                text: m.text,
                score: None,
            })
            .collect();
        Ok(Listing {
            ok: true,
            memories,
            more,
            empty: if args.pinned {
                "no memory is pinned: powercontext-hooks pin <number or id> pins one"
            } else {
                "no memories in this scope yet: powercontext-hooks remember \"…\" adds one"
            },
        })
    })();
    match done {
        Ok(l) => report::emit(&l, args.json),
        Err(e) => report::refuse(args.json, &e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remember_text_passes_the_capture_gate() {
        assert_eq!(
            gated_text("  We ship on Fridays. ").unwrap(),
            "We ship on Fridays."
        );
        let e = gated_text("the prod key is AKIAZ7Q4M2X9R3K8TB6W ok")
            .unwrap_err()
            .to_string();
        assert!(e.contains("looks like a secret"), "{e}");
        assert!(!e.contains("AKIA"), "{e}");
        assert!(gated_text("<private>only this</private>").is_err());
        assert_eq!(
            gated_text("keep <private>not this</private>this").unwrap(),
            "keep this"
        );
        assert!(gated_text(&"a".repeat(MAX_TEXT_BYTES + 1)).is_err());
    }

    #[test]
    fn listing_lines_are_one_line_and_escaped() {
        assert_eq!(one_line("a\n b\t\tc", 10), "a b c");
        assert_eq!(one_line("x\u{1b}[2J", 10), "x\\u{1b}[2J");
        assert_eq!(one_line("abcdef", 4), "abc…");
    }
}
