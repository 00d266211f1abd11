//! Hermes Agent's installer: our shell hooks in the `hooks:` block of Hermes' `config.yaml` (a
//! targeted text edit: every line we add carries the [`MARK`] comment, everything else in the file
//! stays byte for byte), the user's first-use consent for them recorded in Hermes'
//! `shell-hooks-allowlist.json` exactly as Hermes records a "y" at its own prompt, and doctor's
//! `hermes hooks list` check. It never sets `hooks_auto_accept`, never writes through a link for
//! either file, and removes only the lines and consents it added.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, anyhow, bail};
use powercontext_hooks_core::deadline::Deadline;
use powercontext_hooks_core::env::Env;
use powercontext_hooks_core::host::Integration;
use serde_json::{Map, Value, json};

use super::common::table_home;
use crate::installer::checks::{Report, Tier};
use crate::installer::contract::{Activation, Calls, Installer, Undo};
use crate::installer::plan::{Plan, SetupArgs, Step};
use crate::installer::undo::{Done, Kept};
use crate::support::host_cli::HostCli;
use crate::support::install::{self, Host, Manifest, Registrations};
use crate::support::paths::Paths;

pub(super) struct Hermes;

/// The comment that ends every line setup adds to `config.yaml`: uninstall removes exactly those.
pub(crate) const MARK: &str = "# powercontext-hooks";
/// Hermes' consent file (in its home), and its lock, as Hermes names them.
pub(crate) const ALLOWLIST: &str = "shell-hooks-allowlist.json";
/// The prompt hook's timeout in Hermes' unit (seconds): above the hook's own 4 s budget.
const PROMPT_TIMEOUT_S: u32 = 10;
/// A boundary hook's timeout (seconds).
const BOUNDARY_TIMEOUT_S: u32 = 5;
/// How long setup waits for Hermes' allowlist lock.
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// Our hook events, each with its timeout: the prompt event, then the boundaries (the host row's).
pub(crate) fn events() -> Vec<(&'static str, u32)> {
    let e = &Integration::Hermes.spec().events;
    std::iter::once((e.prompt, PROMPT_TIMEOUT_S))
        .chain(e.boundary.iter().map(|b| (*b, BOUNDARY_TIMEOUT_S)))
        .collect()
}

/// The `command` value Hermes runs (it splits it like a POSIX shell, without one).
pub(crate) fn command(exe: &Path) -> Result<String> {
    install::hook_command_shell(exe)
}

fn config_path(home: &Path) -> PathBuf {
    home.join("config.yaml")
}

/// Reads one of Hermes' files we edit: bounded, and never through a link (setup would replace
/// the link, or edit a file elsewhere, behind the user's back).
fn read_own(path: &Path) -> Result<Option<String>> {
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        bail!(
            "{} is a symbolic link; powercontext-hooks edits only Hermes' own file there: replace the link with \
             the file it points to, then run setup again",
            path.display()
        );
    }
    install::read_opt(path)?
        .map(|b| String::from_utf8(b).map_err(|_| anyhow!("{} is not UTF-8", path.display())))
        .transpose()
}

// ---------------------------------------------------------------------------------------------
// config.yaml: the targeted edit of the `hooks:` block
// ---------------------------------------------------------------------------------------------

fn indent(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

/// A line that holds YAML content (not blank, not only a comment).
fn content(line: &str) -> bool {
    let t = line.trim_start();
    !t.is_empty() && !t.starts_with('#')
}

/// The file's lines, each with its own line end (the last may have none): edits insert and remove
/// whole lines and never re-join the others, so their bytes and line ends stay as they were.
fn split(text: &str) -> Vec<String> {
    text.split_inclusive('\n').map(str::to_owned).collect()
}

/// A line without its line end.
fn body(line: &str) -> &str {
    let l = line.strip_suffix('\n').unwrap_or(line);
    l.strip_suffix('\r').unwrap_or(l)
}

fn bodies(lines: &[String]) -> Vec<&str> {
    lines.iter().map(|l| body(l)).collect()
}

/// `key:` alone on its line at exactly `at` spaces (a trailing comment allowed): `Some(true)`;
/// `key:` with a value after it: `Some(false)`; another line: `None`. The key may be plain,
/// single- or double-quoted, with spaces before its colon, as YAML allows.
fn key_line(line: &str, at: usize, key: &str) -> Option<bool> {
    key_value(line, at, key).map(|v| v.is_empty() || v.starts_with('#'))
}

/// The value after `key:` on a key line (see [`key_line`]), trimmed.
fn key_value<'a>(line: &'a str, at: usize, key: &str) -> Option<&'a str> {
    if indent(line) != at {
        return None;
    }
    let s = &line[at..];
    let (rest, quoted) = match [format!("\"{key}\""), format!("'{key}'")]
        .iter()
        .find_map(|k| s.strip_prefix(k.as_str()))
    {
        Some(r) => (r, true),
        None => (s.strip_prefix(key)?, false),
    };
    let rest = rest.trim_start_matches([' ', '\t']).strip_prefix(':')?;
    // A plain key ends at `: `; `hooks:x` is one scalar, not the key `hooks`.
    if !(quoted || rest.is_empty() || rest.starts_with([' ', '\t'])) {
        return None;
    }
    Some(rest.trim())
}

/// The index one past the last content line of the body that starts after `head` (lines indented
/// deeper than `at`, or a sequence item at `at` when `items_at_same` allows one).
fn body_end(lines: &[&str], head: usize, at: usize, items_at_same: bool) -> usize {
    let mut end = head + 1;
    for (i, line) in lines.iter().enumerate().skip(head + 1) {
        if !content(line) {
            continue;
        }
        let n = indent(line);
        let item = items_at_same && n == at && line[n..].starts_with('-');
        if n <= at && !item {
            break;
        }
        end = i + 1;
    }
    end
}

/// The lines of the file's top-level `hooks` keys.
fn top_hooks(lines: &[&str]) -> Vec<usize> {
    (0..lines.len())
        .filter(|&i| key_line(lines[i], 0, "hooks").is_some())
        .collect()
}

fn item_lines(at: usize, command: &str, timeout: u32) -> Vec<String> {
    // A JSON string is a YAML double-quoted scalar.
    let quoted = Value::from(command).to_string();
    vec![
        format!("{:at$}- command: {quoted}  {MARK}", ""),
        format!("{:w$}timeout: {timeout}  {MARK}", "", w = at + 2),
    ]
}

/// Whether `a` and `b` are one hook item exactly as [`item_lines`] writes it.
fn our_item(a: &str, b: &str) -> bool {
    let n = indent(a);
    let tail = format!("  {MARK}");
    let command = a[n..]
        .strip_prefix("- command: ")
        .and_then(|r| r.strip_suffix(tail.as_str()))
        .and_then(|q| {
            serde_json::from_str::<String>(q)
                .ok()
                .filter(|c| serde_json::to_string(c).ok().as_deref() == Some(q))
        });
    let timeout = (indent(b) == n + 2)
        .then(|| b[n + 2..].strip_prefix("timeout: ")?.strip_suffix(tail.as_str()))
        .flatten()
        .is_some_and(|t| !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit()));
    command.is_some() && timeout
}

/// The line end for a line inserted before `at`: its nearest neighbour's (before it, else after
/// it), `\n` in a file without any.
fn near_newline(lines: &[String], at: usize) -> &'static str {
    let ends = |l: &String| {
        if l.ends_with("\r\n") {
            Some("\r\n")
        } else if l.ends_with('\n') {
            Some("\n")
        } else {
            None
        }
    };
    lines[..at]
        .iter()
        .rev()
        .find_map(ends)
        .or_else(|| lines[at..].iter().find_map(ends))
        .unwrap_or("\n")
}

/// Inserts `new` before line `at`. At the end of a file without a final line end, the last line
/// gets one and ours ends without it (uninstall takes it back off).
fn insert(lines: &mut Vec<String>, at: usize, new: Vec<String>) {
    let nl = near_newline(lines, at);
    let open = at == lines.len() && lines.last().is_some_and(|l| !l.ends_with('\n'));
    if open {
        lines[at - 1].push_str(nl);
    }
    let mut new: Vec<String> = new.into_iter().map(|l| l + nl).collect();
    if open && let Some(l) = new.last_mut() {
        l.truncate(l.len() - nl.len());
    }
    lines.splice(at..at, new);
}

/// Removes our lines from the top-level `hooks` block whose key is line `h`: items as we write
/// them, then our marked keys left without a body (one the user has since put entries of their own
/// under loses only its mark).
fn remove_in_block(lines: &mut Vec<String>, h: usize) {
    let b = bodies(lines);
    let end = body_end(&b, h, 0, false);
    let mut gone = Vec::new();
    let mut i = h + 1;
    while i + 1 < end {
        if our_item(b[i], b[i + 1]) {
            gone.extend([i, i + 1]);
            i += 2;
        } else {
            i += 1;
        }
    }
    for &i in gone.iter().rev() {
        lines.remove(i);
    }
    let end = end - gone.len();
    let child = {
        let b = bodies(lines);
        (h + 1..end).find(|&j| content(b[j])).map(|j| indent(b[j]))
    };
    // Innermost (latest) keys first, so `hooks:` sees its emptied events gone.
    for i in (h..end).rev() {
        let b = bodies(lines);
        let line = b[i];
        let ours = if i == h {
            line == format!("hooks:  {MARK}")
        } else {
            Some(indent(line)) == child
                && events()
                    .iter()
                    .any(|(e, _)| line[indent(line)..] == format!("{e}:  {MARK}"))
        };
        if !ours {
            continue;
        }
        let at = indent(line);
        if body_end(&b, i, at, at > 0) == i + 1 {
            lines.remove(i);
        } else {
            let kept = format!(
                "{}{}",
                line.trim_end_matches(MARK).trim_end(),
                &lines[i][line.len()..]
            );
            lines[i] = kept;
        }
    }
}

/// `text` with every line we added removed: only inside top-level `hooks` blocks, and only lines
/// exactly as setup writes them (a user's own line ending in our mark elsewhere stays).
pub(crate) fn remove_hooks(text: &str) -> String {
    let mut lines = split(text);
    let open = lines.last().is_some_and(|l| !l.ends_with('\n'));
    let blocks = top_hooks(&bodies(&lines));
    // Last block first, so the earlier ones' lines keep their indices.
    for h in blocks.into_iter().rev() {
        remove_in_block(&mut lines, h);
    }
    // Our last line ended a file without a final line end: the line before it had none either.
    if open && let Some(l) = lines.last_mut() {
        let n = body(l).len();
        l.truncate(n);
    }
    lines.concat()
}

/// Refusal for a key whose value setup cannot extend without rewriting the user's lines.
fn refuse(what: &str, value: &str) -> anyhow::Error {
    if value.starts_with(['&', '*', '!']) {
        anyhow!(
            "config.yaml's `{what}` carries an anchor, alias or tag (`{value}`), which setup does not edit (the \
             change would reach every copy of it): write it as a plain block (`{what}:` on its own line, entries \
             indented below), then run setup again"
        )
    } else {
        anyhow!(
            "config.yaml's `{what}` is written in a form setup does not edit (a value on the same line, such as \
             `{{}}` or `[]`): write it as a block (`{what}:` on its own line, entries indented below) or remove it, \
             then run setup again"
        )
    }
}

/// Refuses a file whose top level hides where `hooks` is (flow style, an explicit `? hooks` key, a
/// merge key that may bring one, the key twice).
fn check_top(b: &[&str], hooks: &[usize]) -> Result<()> {
    let fix =
        "write config.yaml as a block mapping with one `hooks:` key on its own line, then run setup again";
    if let Some(first) = b
        .iter()
        .find(|l| content(l) && !l.starts_with("---") && !l.starts_with('%'))
        && first.trim_start().starts_with(['{', '['])
    {
        bail!("config.yaml is written in flow style (`{{ … }}`), which setup does not edit: {fix}");
    }
    for line in b.iter().filter(|l| indent(l) == 0) {
        if let Some(k) = line.strip_prefix('?') {
            let k = k.trim_start();
            let k = k.split(" #").next().unwrap_or(k).trim_end();
            if ["hooks", "\"hooks\"", "'hooks'"].contains(&k) {
                bail!(
                    "config.yaml names `hooks` as an explicit `? hooks` key, which setup does not edit: {fix}"
                );
            }
        }
        if hooks.is_empty() && key_line(line, 0, "<<").is_some() {
            bail!(
                "config.yaml has a top-level merge key (`<<`) that may bring a `hooks` block, which a new `hooks:` \
                 would hide: {fix}"
            );
        }
    }
    if hooks.len() > 1 {
        bail!(
            "config.yaml has more than one top-level `hooks` key (YAML keeps only the last one): merge them into one, then run setup again"
        );
    }
    Ok(())
}

/// `text` (Hermes' `config.yaml`, `None`: no file) with our hooks for `command` added to its
/// `hooks:` block (created at the end when absent), after removing any we added before. Each added
/// line takes the line end of its neighbours; the user's lines keep their bytes.
///
/// # Errors
/// When the file's `hooks:` (or one of our events in it) is not a block mapping (sequence) this
/// edit can extend without rewriting the user's lines.
pub(crate) fn add_hooks(text: Option<&str>, command: &str) -> Result<String> {
    let base = remove_hooks(text.unwrap_or(""));
    if base.contains(command) {
        // Our hook in lines without our mark (Hermes rewrites the file without comments when it
        // saves it): adding ours again would run it twice per event.
        bail!(
            "config.yaml already runs {command} in hook entries without the `{MARK}` mark (rewritten by Hermes since \
             setup?): remove those entries, then run setup again"
        );
    }
    let mut lines = split(&base);
    let hooks = top_hooks(&bodies(&lines));
    check_top(&bodies(&lines), &hooks)?;
    let Some(&h) = hooks.first() else {
        // No `hooks:` block: ours goes at the end, every line marked (no blank line before it,
        // which uninstall could not tell from the user's own).
        let mut new = vec![format!("hooks:  {MARK}")];
        for (event, timeout) in events() {
            new.push(format!("  {event}:  {MARK}"));
            new.extend(item_lines(4, command, timeout));
        }
        let at = lines.len();
        insert(&mut lines, at, new);
        return Ok(lines.concat());
    };
    {
        let b = bodies(&lines);
        if key_line(b[h], 0, "hooks") != Some(true) {
            return Err(refuse("hooks", key_value(b[h], 0, "hooks").unwrap_or_default()));
        }
        if let Some(first) = b[h + 1..].iter().find(|l| content(l))
            && first.trim_start().starts_with('-')
        {
            bail!(
                "config.yaml's `hooks` is a list, not the mapping of events Hermes reads: write it as `hooks:` with \
                 event keys indented below, then run setup again"
            );
        }
    }
    for (event, timeout) in events() {
        let b = bodies(&lines);
        let end = body_end(&b, h, 0, false);
        let child = (h + 1..end).find(|&i| content(b[i])).map_or(2, |i| indent(b[i]));
        let found = (h + 1..end).find(|&i| key_line(b[i], child, event).is_some());
        let (at, new) = match found {
            Some(k) => {
                if key_line(b[k], child, event) != Some(true) {
                    return Err(refuse(
                        &format!("hooks.{event}"),
                        key_value(b[k], child, event).unwrap_or_default(),
                    ));
                }
                let sub_end = body_end(&b, k, child, true);
                let item_at = (k + 1..sub_end)
                    .find(|&i| content(b[i]))
                    .map_or(child + 2, |i| indent(b[i]));
                (sub_end, item_lines(item_at, command, timeout))
            }
            None => {
                let mut new = vec![format!("{:child$}{event}:  {MARK}", "")];
                new.extend(item_lines(child + 2, command, timeout));
                (end, new)
            }
        };
        insert(&mut lines, at, new);
    }
    Ok(lines.concat())
}

/// Whether `text` holds our marked hook for every event, running `command`.
fn has_hooks(text: &str, command: &str) -> bool {
    add_hooks(Some(text), command).is_ok_and(|t| t == text)
}

// ---------------------------------------------------------------------------------------------
// shell-hooks-allowlist.json: consent as Hermes records it
// ---------------------------------------------------------------------------------------------

/// A time as Python's `datetime.isoformat()` writes it in UTC with Hermes' `Z` for `+00:00`
/// (the fraction only when there is one, in microseconds).
fn iso_utc(secs: i64, micros: u32) -> String {
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    let frac = if micros == 0 {
        String::new()
    } else {
        format!(".{micros:06}")
    };
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}{frac}Z")
}

/// A file time as Hermes turns `os.path.getmtime` into `datetime.fromtimestamp(…, tz=utc)`: the
/// float seconds rounded half-even to microseconds, so Hermes' "modified since approval" check
/// compares equal strings.
fn python_time(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    // CPython's st_mtime: seconds plus nanoseconds * 1e-9, as one double.
    #[expect(clippy::cast_precision_loss, reason = "the same double Python computes")]
    let ts = d.as_secs() as f64 + f64::from(d.subsec_nanos()) * 1e-9;
    let whole = ts.trunc();
    let mut micros = ((ts - whole) * 1e6).round_ties_even();
    let mut secs = whole;
    if micros >= 1e6 {
        micros -= 1e6;
        secs += 1.0;
    }
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "in range by construction"
    )]
    iso_utc(secs as i64, micros as u32)
}

fn now_iso() -> String {
    let d = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    iso_utc(i64::try_from(d.as_secs()).unwrap_or(0), d.subsec_micros())
}

/// Python's `json.dumps(data, indent=2, sort_keys=True)` (its default `ensure_ascii`): how
/// Hermes writes its allowlist (no final newline).
fn python_json(v: &Value) -> Result<String> {
    // serde_json's maps are sorted (no `preserve_order`), and its pretty form is Python's indent=2.
    let text = serde_json::to_string_pretty(v)?;
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    Ok(out)
}

fn same(e: &Value, event: Option<&str>, command: &str) -> bool {
    e.get("command").and_then(Value::as_str) == Some(command)
        && event.is_none_or(|ev| e.get("event").and_then(Value::as_str) == Some(ev))
}

/// The allowlist's other members, and its approvals.
type Allowlist = (Map<String, Value>, Vec<Value>);

/// The allowlist's approvals, read as Hermes would (`None`: no file). A file Hermes would treat as
/// empty (and so overwrite) is refused instead: it may be a user's damaged record.
fn read_approvals(path: &Path) -> Result<Option<Allowlist>> {
    let Some(text) = read_own(path)? else {
        return Ok(None);
    };
    let fix = || {
        format!(
            "{} is not the JSON object Hermes writes there: fix or remove it",
            path.display()
        )
    };
    let Value::Object(mut doc) = serde_json::from_str::<Value>(&text).with_context(fix)? else {
        bail!(fix());
    };
    let approvals = match doc.remove("approvals") {
        Some(Value::Array(a)) => a,
        None => Vec::new(),
        Some(_) => bail!(fix()),
    };
    Ok(Some((doc, approvals)))
}

/// Whether Hermes' allowlist holds a consent for `(event, command)` for every one of our events.
pub(crate) fn consented(home: &Path, command: &str) -> Result<bool> {
    let approvals = read_approvals(&home.join(ALLOWLIST))?
        .map(|(_, a)| a)
        .unwrap_or_default();
    Ok(events()
        .iter()
        .all(|(ev, _)| approvals.iter().any(|e| same(e, Some(ev), command))))
}

/// Read-modify-write of the allowlist under Hermes' own lock (`flock` on `<file>.lock`), written
/// as Hermes writes it (owner-only, atomically). Returns how many entries `change` removed.
fn update_approvals(home: &Path, change: impl FnOnce(&mut Vec<Value>)) -> Result<usize> {
    let path = home.join(ALLOWLIST);
    let lock_path = home.join(format!("{ALLOWLIST}.lock"));
    install::create_dirs(home)?;
    let deadline = Deadline::new(Instant::now(), LOCK_WAIT);
    let _guard = powercontext_hooks_core::lock::acquire(&lock_path, &deadline)
        .map_err(|e| anyhow!("cannot lock {}: {e} (is Hermes writing it?)", lock_path.display()))?;
    let (mut doc, mut approvals) = read_approvals(&path)?.unwrap_or_default();
    let before = approvals.len();
    change(&mut approvals);
    let removed = before.saturating_sub(approvals.len());
    if approvals.is_empty() && doc.is_empty() && removed > 0 {
        // Nothing left but what we removed: Hermes reads no file as no approvals (and makes its
        // lock file again when it next records one).
        std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
        let _ = std::fs::remove_file(&lock_path);
        return Ok(removed);
    }
    doc.insert("approvals".to_owned(), Value::Array(approvals));
    install::write_atomic(&path, python_json(&Value::Object(doc))?.as_bytes(), true)?;
    Ok(removed)
}

/// Records the user's consent for our hooks running `command` (whose script is `exe`), one entry
/// per event, exactly as Hermes' own prompt records a "y": `{event, command, approved_at,
/// script_mtime_at_approval}`, replacing an older entry for the same pair.
pub(crate) fn record_consent(home: &Path, command: &str, exe: &Path) -> Result<()> {
    let mtime = std::fs::metadata(exe)
        .and_then(|m| m.modified())
        .ok()
        .map(python_time);
    update_approvals(home, |approvals| {
        for (event, _) in events() {
            approvals.retain(|e| !same(e, Some(event), command));
            approvals.push(json!({
                "event": event,
                "command": command,
                "approved_at": now_iso(),
                "script_mtime_at_approval": mtime,
            }));
        }
    })?;
    Ok(())
}

/// Removes our consents (every entry for `command`, the one our hooks run), nothing else.
pub(crate) fn revoke_consent(home: &Path, command: &str) -> Result<usize> {
    update_approvals(home, |approvals| approvals.retain(|e| !same(e, None, command)))
}

// ---------------------------------------------------------------------------------------------
// The installer
// ---------------------------------------------------------------------------------------------

fn hermes_home(env: &Env) -> Result<PathBuf> {
    Hermes
        .home(env)
        .context("cannot find Hermes' home: set HERMES_HOME or HOME")
}

/// Which of our events `hermes hooks list` shows running `command`, and whether each is allowed.
fn listed(cli: &HostCli, command: &str) -> Result<Vec<(String, bool)>> {
    Ok(parse_listing(&cli.run_ok(&["hooks", "list"])?.stdout, command))
}

/// [`listed`] from the listing's text: `[event]` headings, then `- <command> (timeout=…, status)`.
fn parse_listing(out: &str, command: &str) -> Vec<(String, bool)> {
    let mut event = String::new();
    let mut found = Vec::new();
    for line in out.lines() {
        let t = line.trim();
        if let Some(e) = t.strip_prefix('[').and_then(|t| t.strip_suffix(']')) {
            e.clone_into(&mut event);
        } else if let Some(rest) = t.strip_prefix("- ")
            && let Some(status) = rest
                .strip_prefix(command)
                .and_then(|r| r.strip_prefix(" (timeout="))
        {
            found.push((event.clone(), !status.contains("not allowlisted")));
        }
    }
    found
}

impl Installer for Hermes {
    fn templates(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    fn home(&self, env: &Env) -> Option<PathBuf> {
        table_home(env, Host::Hermes)
    }

    fn plan(&self, _args: &SetupArgs, paths: &Paths, plan: &mut Plan) -> Result<()> {
        let home = hermes_home(&paths.env)?;
        let cmd = command(&plan.hook_exe)?;
        let text = read_own(&config_path(&home))?;
        // Refused now, before anything is written, when the `hooks:` block cannot be extended.
        add_hooks(text.as_deref(), &cmd)?;
        if !text.as_deref().is_some_and(|t| has_hooks(t, &cmd)) {
            plan.steps.push(Step::Install);
        }
        // A fresh copy of the executable gets a fresh consent (its mtime is part of it).
        if !plan.exe.current || !consented(&home, &cmd)? {
            plan.steps.push(Step::Trust);
        }
        Ok(())
    }

    fn describe(&self, plan: &Plan, step: Step) -> String {
        let home = plan.host_home.clone().unwrap_or_default();
        let names: Vec<&str> = events().iter().map(|(e, _)| *e).collect();
        match step {
            Step::Trust => format!(
                "record your consent to these hooks in {} as Hermes records a \"y\" at its first-use prompt \
                 (one entry per event; `hooks_auto_accept` is left as it is)",
                home.join(ALLOWLIST).display()
            ),
            _ => format!(
                "add shell hooks {} running {} to the `hooks:` block of {} (every added line ends with `{MARK}`; \
                 the rest of the file is kept byte for byte)",
                names.join(", "),
                plan.hook_exe.display(),
                config_path(&home).display()
            ),
        }
    }

    fn run_step(&self, plan: &Plan, paths: &Paths, step: Step, regs: &mut Registrations) -> Result<()> {
        let home = hermes_home(&paths.env)?;
        let cmd = command(&plan.hook_exe)?;
        match step {
            Step::Trust => {
                record_consent(&home, &cmd, &plan.hook_exe)?;
                regs.trust = true;
            }
            _ => {
                let path = config_path(&home);
                let new = add_hooks(read_own(&path)?.as_deref(), &cmd)?;
                install::write_atomic(&path, new.as_bytes(), false)?;
                regs.plugin = true;
            }
        }
        Ok(())
    }

    fn host_files(&self, _plan: &Plan, _paths: &Paths, home: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
        (
            vec![
                config_path(home),
                home.join(ALLOWLIST),
                home.join(format!("{ALLOWLIST}.lock")),
            ],
            Vec::new(),
        )
    }

    /// Hermes itself must read our hooks from its config and see them allowed.
    fn verify(&self, plan: &Plan, _paths: &Paths) -> Result<()> {
        let cmd = command(&plan.hook_exe)?;
        let seen = listed(&plan.cli, &cmd)?;
        for (event, _) in events() {
            match seen.iter().find(|(e, _)| e == event) {
                Some((_, true)) => {}
                Some((_, false)) => {
                    bail!("`hermes hooks list` shows our {event} hook as not allowlisted after setup")
                }
                None => bail!("`hermes hooks list` does not show our {event} hook after setup"),
            }
        }
        Ok(())
    }

    fn note(&self) -> Option<&'static str> {
        Some(
            "Hermes asks before it runs a new hook command: setup recorded your consent for ours in \
             shell-hooks-allowlist.json (`hooks_auto_accept` untouched); `powercontext-hooks uninstall hermes` \
             removes the hooks and that consent",
        )
    }

    fn unregister(&self, m: &Manifest, undo: &mut Undo<'_>) -> Result<()> {
        let home = hermes_home(&undo.paths.env)?;
        let cmd = command(&m.hook_exe)?;
        let path = config_path(&home);
        if let Some(text) = read_own(&path)? {
            let new = remove_hooks(&text);
            if new != text {
                undo.actions.push(Done::member(&path, "hooks (our lines)"));
                if !undo.dry {
                    install::write_atomic(&path, new.as_bytes(), false)?;
                }
            }
            if new.contains(&cmd) {
                undo.kept.push(Kept::because(
                    &path,
                    Some("hooks".to_owned()),
                    "still runs our hook in lines without our mark (rewritten since setup?): remove them by hand",
                ));
            }
        }
        let allowlist = home.join(ALLOWLIST);
        let ours = read_approvals(&allowlist)?.is_some_and(|(_, a)| a.iter().any(|e| same(e, None, &cmd)));
        if ours {
            undo.actions.push(Done::member(&allowlist, "approvals (ours)"));
            if !undo.dry {
                revoke_consent(&home, &cmd)?;
            }
        }
        Ok(())
    }

    fn check_activated(&self, a: &Activation<'_>, r: &mut Report) {
        let Some(m) = a.manifest else {
            r.fail(
                Tier::Activated,
                "hooks allowed",
                "not set up by powercontext-hooks (the official installer's Hermes plugin needs Hermes 0.20.4 or newer)",
                a.setup_cmd,
            );
            return;
        };
        let cmd = match command(&m.hook_exe) {
            Ok(c) => c,
            Err(e) => return r.fail(Tier::Activated, "hooks allowed", format!("{e:#}"), a.setup_cmd),
        };
        match hermes_home(&a.paths.env).and_then(|h| consented(&h, &cmd)) {
            Ok(true) => r.ok(
                Tier::Activated,
                "consent recorded",
                format!("{ALLOWLIST} allows our hook for every event"),
            ),
            Ok(false) => r.fail(
                Tier::Activated,
                "consent recorded",
                format!("{ALLOWLIST} does not allow our hook for every event (revoked?)"),
                a.setup_cmd,
            ),
            Err(e) => r.fail(Tier::Activated, "consent recorded", format!("{e:#}"), a.setup_cmd),
        }
        match listed(a.cli, &cmd) {
            Ok(seen) => {
                let missing: Vec<&str> = events()
                    .iter()
                    .map(|(e, _)| *e)
                    .filter(|e| !seen.iter().any(|(s, ok)| s == e && *ok))
                    .collect();
                if missing.is_empty() {
                    r.ok(
                        Tier::Activated,
                        "hooks allowed",
                        "`hermes hooks list` shows our hooks, allowed",
                    );
                } else {
                    r.fail(
                        Tier::Activated,
                        "hooks allowed",
                        format!(
                            "`hermes hooks list` does not show our hook allowed for {}",
                            missing.join(", ")
                        ),
                        a.setup_cmd,
                    );
                }
            }
            Err(e) => r.fail(
                Tier::Activated,
                "hooks allowed",
                format!("{e:#}"),
                "check that `hermes hooks list` works",
            ),
        }
    }

    fn synthetic_calls(&self, cwd: &str, session: &str, prompt: &str) -> Calls {
        vec![(
            Vec::new(),
            json!({"hook_event_name": Host::Hermes.spec().events.prompt, "tool_name": null, "tool_input": null,
                   "session_id": session, "cwd": cwd,
                   "extra": {"user_message": prompt, "turn_id": "powercontext-doctor", "is_first_turn": true,
                             "conversation_history": [], "platform": "cli"}}),
        )]
    }

    fn context<'a>(&self, answer: &'a Value) -> &'a Value {
        super::common::channel_context(Host::Hermes, answer)
    }

    fn silence_causes(&self) -> (&'static str, &'static str) {
        (
            "Hermes does not run our hooks (another HERMES_HOME, the hooks or their consent removed, or \
             HERMES_SAFE_MODE set)",
            "powercontext-hooks setup hermes, then run Hermes with the same HERMES_HOME",
        )
    }
}

#[cfg(test)]
mod tests;
