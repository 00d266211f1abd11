//! The capture spool: every capture that passed the gate, made durable before any network call
//! (write-ahead), then delivered and retired by the hook; what is left (Server down, timeout,
//! 5xx, a hook killed mid-request) is replayed by the drainer oldest first with the `source_id`
//! the online path used. One uniquely named file per capture, created with `O_EXCL`, mode 0600,
//! written then renamed into place, and `flock`ed by the hook that delivers it: appending never
//! takes the shared state lock, and a drainer never replays an entry a live hook still holds.
//! Bounded by count, bytes and age (enforced by the drainer, or after the answer, never on the
//! prompt path); the oldest go first and every drop is reported. Only text that already passed
//! the secret filter is ever written here; no token. Unreadable, foreign or non-regular entries
//! are set aside, never opened or replayed.
//!
//! Order is a monotonic per-spool sequence number, never the wall clock: each entry takes the next
//! number from `spool.sequence` (a counter file locked for microseconds, owner-only), so a clock
//! stepped back between two prompts cannot reverse a session's order. Sequence, size and creation
//! time are encoded in each file name, so counting, sizing and ordering the spool is one directory
//! listing.
//!
//! Expiry by age cannot be turned into deletion by a clock step: an undelivered entry is dropped
//! for its age only when its Server has answered (a delivery or a final rejection) since the entry
//! was written. A drain records, per Server, the sequence number the spool had reached when that
//! Server last answered (`spool-answered.json`); an entry numbered after that mark is younger than
//! the Server's last answer, whatever the wall clock says, and stays (the count and byte limits
//! still bound the spool). Only then is the wall-clock age compared with the limit, and a creation
//! time ahead of the clock counts as age 0. Every drop is counted in `spool-dropped.json` by
//! reason, for `status`. An injected clock was chosen over a faked one for the tests: the rule
//! needs no trusted time source at all, only the order of events on this machine.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::capture;
use crate::deadline::Deadline;
use crate::emit;
use crate::env::Env;
use crate::lock::{self, LockGuard};
use crate::outcome::{Diagnostic, Outcome, Stage};
use crate::scope::ScopeQuery;
use crate::state::{
    Opened, StateDir, StateError, TEMP_PREFIX, now_millis, open_state_file, parse_versioned_at, read_bounded,
    sweep_stale_temps, versioned_struct_bytes,
};
use crate::wire::CaptureRequest;

/// The spool subdirectory.
pub const DIR: &str = "spool";

/// Suffix of an entry set aside because it could not be read or parsed (or was not a regular
/// file): never replayed, shown by `status`, safe to delete.
pub const CORRUPT_SUFFIX: &str = ".corrupt";
/// Suffix of an entry set aside because another user owns it or others can write it.
pub const UNSAFE_SUFFIX: &str = ".unsafe";

/// Spool bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpoolLimits {
    /// Most entries kept.
    pub max_entries: usize,
    /// Most bytes kept (sum of entry files).
    pub max_bytes: u64,
    /// Oldest entry kept.
    pub max_age: Duration,
}

impl SpoolLimits {
    /// Defaults: 10,000 captures, 64 MiB, 7 days (documented in `docs/state.md`).
    pub const DEFAULT: Self = Self {
        max_entries: 10_000,
        max_bytes: 64 * 1024 * 1024,
        max_age: Duration::from_secs(7 * 24 * 3600),
    };
}

/// Variables overriding the spool limits (whole numbers; invalid values keep the default).
pub mod vars {
    /// Most entries.
    pub const MAX_ENTRIES: &str = crate::variables::HOOKS_SPOOL_MAX_ENTRIES;
    /// Most bytes.
    pub const MAX_BYTES: &str = crate::variables::HOOKS_SPOOL_MAX_BYTES;
    /// Oldest entry, in seconds.
    pub const MAX_AGE_SECONDS: &str = crate::variables::HOOKS_SPOOL_MAX_AGE_SECONDS;
}

impl SpoolLimits {
    /// The defaults, with any valid override from the environment.
    #[must_use]
    pub fn from_env(env: &Env) -> Self {
        let num = |name: &str| env.text(name).and_then(parse_limit);
        let d = Self::DEFAULT;
        Self {
            max_entries: num(vars::MAX_ENTRIES)
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(d.max_entries),
            max_bytes: num(vars::MAX_BYTES).unwrap_or(d.max_bytes),
            max_age: num(vars::MAX_AGE_SECONDS).map_or(d.max_age, Duration::from_secs),
        }
    }
}

/// A spool limit variable's value: a whole number above 0; `None` for anything else (the
/// configuration resolver reports it).
#[must_use]
pub fn parse_limit(text: &str) -> Option<u64> {
    text.trim().parse::<u64>().ok().filter(|n| *n > 0)
}

impl Default for SpoolLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

/// One undelivered capture: everything needed to rebuild the exact request later.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpooledCapture {
    /// The host (`claude-code`, `codex`, …); its settings give the credentials at replay time.
    pub integration: String,
    /// Normalized Server base URL the capture was meant for.
    pub server: String,
    /// The `source_id` prefix.
    pub source_prefix: String,
    /// How to find the scope: an explicit id when it was already resolved, else the binding keys.
    pub query: ScopeQuery,
    /// Session id as hashed into the `source_id` (empty when absent).
    pub session: String,
    /// Turn id as hashed into the `source_id` (empty when absent).
    pub turn: String,
    /// The exact metadata the online request carried (replays must be byte-identical).
    pub metadata: Map<String, Value>,
    /// Whether the host wanted a flush after the capture (the position then goes to the ledger).
    #[serde(default)]
    pub flush: bool,
    /// The prompt, exactly as captured (already through the secret filter). Last, so an entry's
    /// bytes end with it (see `entry_bytes`).
    pub content: String,
}

impl SpooledCapture {
    /// The queue this capture keeps its order in: one per Server, host and session.
    #[must_use]
    pub fn order_key(&self) -> String {
        format!("{}\n{}\n{}", self.server, self.integration, self.session)
    }

    /// The request for a resolved scope, with the `source_id` the online path would have used.
    #[must_use]
    pub fn request(&self, scope: &str) -> CaptureRequest {
        capture::request(
            &self.source_prefix,
            scope,
            (&self.session, &self.turn),
            &self.content,
            &self.metadata,
        )
    }
}

/// A spool file, described by its name alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// File name inside the spool directory.
    pub name: String,
    /// Position in the spool's order (0 for an entry named by an older release, which sorts
    /// first, by its creation time).
    pub seq: u64,
    /// Creation time, Unix milliseconds (the wall clock then: for display and age only).
    pub created_ms: u64,
    /// File size in bytes.
    pub bytes: u64,
}

/// The first character of an entry name carrying a sequence number.
const SEQ_MARK: char = 'q';

impl Entry {
    fn parse(name: &str) -> Option<Self> {
        let stem = name.strip_suffix(".json")?;
        if let Some(rest) = stem.strip_prefix(SEQ_MARK) {
            // q<seq>-<size>-<created ms>-<pid>
            let mut parts = rest.split('-');
            let seq = parts.next()?.parse().ok()?;
            let bytes = parts.next()?.parse().ok()?;
            let created_ms = parts.next()?.parse().ok()?;
            return Some(Self {
                name: name.to_owned(),
                seq,
                created_ms,
                bytes,
            });
        }
        // An older release's name: <created ms>-<size>-<pid>-<n>.
        let mut parts = stem.split('-');
        let created_ms = parts.next()?.parse().ok()?;
        let bytes = parts.next()?.parse().ok()?;
        Some(Self {
            name: name.to_owned(),
            seq: 0,
            created_ms,
            bytes,
        })
    }

    /// Age in whole seconds at `now_ms`.
    #[must_use]
    pub fn age_secs(&self, now_ms: u64) -> u64 {
        now_ms.saturating_sub(self.created_ms) / 1000
    }
}

/// Totals for `status`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Entries.
    pub entries: usize,
    /// Bytes.
    pub bytes: u64,
    /// Age of the oldest entry in seconds.
    pub oldest_age_secs: Option<u64>,
    /// Whether an entry's creation time is ahead of this clock (the clock was moved back since):
    /// its age is then shown as unknown rather than as "new".
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub created_in_future: bool,
}

/// Why entries were dropped, with counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Dropped {
    /// Older than the age limit.
    pub age: usize,
    /// Over the entry limit.
    pub count: usize,
    /// Over the byte limit (or a single capture larger than it).
    pub bytes: usize,
}

impl Dropped {
    /// All drops.
    #[must_use]
    pub fn total(&self) -> usize {
        self.age + self.count + self.bytes
    }

    /// Content-free diagnostics, one per reason that dropped something.
    #[must_use]
    pub fn diagnostics(&self, component: &str) -> Vec<Diagnostic> {
        [
            (self.age, "spool_age_limit"),
            (self.count, "spool_count_limit"),
            (self.bytes, "spool_bytes_limit"),
        ]
        .into_iter()
        .filter(|(n, _)| *n > 0)
        // `Skipped` at the state stage: the capture is gone for good, and the word says why.
        .map(|(_, word)| Diagnostic::new(component, Stage::State, Outcome::Skipped).detail(word))
        .collect()
    }
}

/// Lists the spool, oldest first (names only; temp and foreign files are ignored).
///
/// # Errors
/// The I/O error; a missing spool directory is an empty spool.
pub fn list(state: &StateDir) -> io::Result<Vec<Entry>> {
    let dir = state.file(DIR);
    let entries = match fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut out: Vec<Entry> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(Entry::parse))
        .collect();
    out.sort_by(|a, b| (a.seq, a.created_ms, &a.name).cmp(&(b.seq, b.created_ms, &b.name)));
    Ok(out)
}

/// Totals of a listing (the oldest by the wall clock, whatever their order).
#[must_use]
pub fn summarize(entries: &[Entry], now_ms: u64) -> Summary {
    // Slack for clocks of processes sharing the spool that disagree by a moment.
    let ahead = |e: &Entry| e.created_ms > now_ms.saturating_add(5_000);
    Summary {
        entries: entries.len(),
        bytes: entries.iter().map(|e| e.bytes).sum(),
        oldest_age_secs: entries.iter().map(|e| e.age_secs(now_ms)).max(),
        created_in_future: entries.iter().any(ahead),
    }
}

/// The counter file that numbers entries, in the state directory (beside the spool, so a listing
/// of the spool holds entries only).
pub const SEQ_FILE: &str = "spool.sequence";
/// The longest a hook waits for the counter (held for microseconds by each writer).
const SEQ_WAIT: Duration = Duration::from_millis(500);

/// The highest sequence number among the listed entries (0 for none).
fn max_listed_seq(state: &StateDir) -> u64 {
    list(state).map_or(0, |es| es.iter().map(|e| e.seq).max().unwrap_or(0))
}

/// Parses the counter file's content.
fn parse_seq(bytes: &[u8]) -> Option<u64> {
    std::str::from_utf8(bytes).ok()?.trim().parse().ok()
}

/// Takes the next sequence number: the counter file, opened owner-only and never through a link,
/// locked, read, bumped and written back in place. A missing, unreadable or foreign counter
/// starts again above the highest number in the listing, so order is kept either way.
fn next_seq(state: &StateDir) -> io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let path = state.file(SEQ_FILE);
    let file = lock::open_private(&path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.uid() != crate::state::euid() || meta.mode() & 0o022 != 0 {
        return Err(io::Error::other("the spool's sequence file is not ours"));
    }
    let until = std::time::Instant::now() + SEQ_WAIT;
    while !lock::try_lock_file(&file)? {
        if std::time::Instant::now() >= until {
            return Err(io::Error::from(io::ErrorKind::WouldBlock));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let mut buf = [0u8; 32];
    let n = file.read_at(&mut buf, 0)?;
    let listed = || max_listed_seq(state);
    let current = parse_seq(&buf[..n]).unwrap_or_else(listed);
    let next = current
        .checked_add(1)
        .unwrap_or_else(|| listed().saturating_add(1));
    file.write_all_at(format!("{next:020}\n").as_bytes(), 0)?;
    Ok(next)
}

/// The sequence number the spool has reached: every entry written so far has one at most this
/// (read without the lock: a number taken meanwhile is larger, which is the safe side).
#[must_use]
pub fn sequence_now(state: &StateDir) -> u64 {
    let path = state.file(SEQ_FILE);
    let from_file = match open_state_file(&path) {
        Ok(Opened::File(mut f, _)) => {
            let mut buf = Vec::new();
            io::Read::read_to_end(&mut io::Read::take(&mut f, 32), &mut buf)
                .ok()
                .and_then(|_| parse_seq(&buf))
        }
        _ => None,
    };
    from_file.unwrap_or(0).max(max_listed_seq(state))
}

/// The state file recording, per Server, the spool's sequence number when it last answered.
pub const ANSWERED_FILE: &str = "spool-answered.json";

/// Per Server (normalized base URL): the spool's sequence number when it last gave an answer
/// (a delivery or a final rejection). Entries numbered at most this were written before it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Answered {
    /// Server → sequence number.
    pub servers: std::collections::BTreeMap<String, u64>,
}

/// Records that these Servers answered when the spool stood at `seq` (the caller holds the
/// state lock).
///
/// # Errors
/// The state error.
pub fn record_answered(
    state: &StateDir,
    lock: &LockGuard,
    servers: &std::collections::HashSet<String>,
    seq: u64,
) -> Result<(), StateError> {
    if servers.is_empty() {
        return Ok(());
    }
    let mut answered: Answered = state.read_json(ANSWERED_FILE).ok().flatten().unwrap_or_default();
    for s in servers {
        let mark = answered.servers.entry(s.clone()).or_insert(0);
        *mark = (*mark).max(seq);
    }
    state.write_json(lock, ANSWERED_FILE, &answered)
}

/// The drops the spool limits made so far, by reason (what `status` reports).
pub const DROPPED_FILE: &str = "spool-dropped.json";

/// Drops made by the spool limits since the state directory was made.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DropTotals {
    /// The counts, by reason.
    pub dropped: Dropped,
    /// When the last drop happened (Unix seconds).
    pub last: u64,
}

/// The drops recorded so far (none when unreadable).
#[must_use]
pub fn drop_totals(state: &StateDir) -> DropTotals {
    state.read_json(DROPPED_FILE).ok().flatten().unwrap_or_default()
}

/// Whether the spool holds anything: reads at most the first directory block, never the files.
#[must_use]
pub fn has_work(state: &StateDir) -> bool {
    fs::read_dir(state.file(DIR))
        .map(|mut d| {
            d.any(|e| e.is_ok_and(|e| e.file_name().to_str().is_some_and(|n| Entry::parse(n).is_some())))
        })
        .unwrap_or(false)
}

/// Which entries must go so that `incoming` more bytes fit: the oldest first while over the count
/// or byte limit, and any older than the age limit whose Server has answered since it was written
/// (`answered_since`; see the module doc: the wall clock alone never deletes an entry).
#[must_use]
pub fn plan_drops(
    entries: &[Entry],
    limits: &SpoolLimits,
    now_ms: u64,
    incoming: Option<u64>,
    answered_since: &mut dyn FnMut(&Entry) -> bool,
) -> (Vec<usize>, Dropped) {
    let mut dropped = Dropped::default();
    let mut drop = Vec::new();
    let max_age_ms = u64::try_from(limits.max_age.as_millis()).unwrap_or(u64::MAX);
    let mut count = entries.len();
    let mut bytes: u64 = entries.iter().map(|e| e.bytes).sum();
    let (extra_count, extra_bytes) = incoming.map_or((0, 0), |b| (1, b));
    for (i, e) in entries.iter().enumerate() {
        let reason = if now_ms.saturating_sub(e.created_ms) > max_age_ms && answered_since(e) {
            &mut dropped.age
        } else if count + extra_count > limits.max_entries {
            &mut dropped.count
        } else if bytes + extra_bytes > limits.max_bytes {
            &mut dropped.bytes
        } else {
            continue;
        };
        *reason += 1;
        drop.push(i);
        count -= 1;
        bytes -= e.bytes;
    }
    (drop, dropped)
}

/// A capture made durable before delivery and claimed (locked) by this process until it is
/// retired or the handle is dropped. Dropping it without [`WriteAhead::retire`] leaves the entry
/// for the drainer: that is what a crash, a kill or a failed delivery amounts to.
#[derive(Debug)]
pub struct WriteAhead {
    dir: PathBuf,
    name: String,
    // Holds the entry's lock: a drainer skips it while this process lives.
    file: File,
    /// The entry's scope query (the text is in the file only: a long prompt is not held twice).
    query: ScopeQuery,
}

/// The line a hook appends to its entry once the scope is resolved.
#[derive(Debug, Serialize, Deserialize)]
struct Pin {
    pinned_scope: String,
}

/// Why a capture was not written ahead.
#[derive(Debug, thiserror::Error)]
pub enum WriteAheadError {
    /// Larger than the spool's byte limit by itself: never kept (a `spool_bytes_limit` drop if it
    /// cannot be delivered).
    #[error("capture larger than the spool byte limit")]
    TooLarge,
    /// The state directory could not be used.
    #[error(transparent)]
    State(#[from] StateError),
}

fn entry_name(seq: u64, size: u64, created_ms: u64) -> String {
    format!(
        "{SEQ_MARK}{seq:019}-{size:012}-{created_ms}-{}.json",
        std::process::id()
    )
}

/// Renames without ever replacing an existing entry (`renameat2(RENAME_NOREPLACE)` where the
/// file system has it, else a check then a rename).
fn rename_no_replace(from: &Path, to: &Path) -> io::Result<()> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use rustix::fs::{CWD, RenameFlags, renameat_with};
        use rustix::io::Errno;
        match renameat_with(CWD, from, CWD, to, RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(()),
            Err(e) if e != Errno::INVAL && e != Errno::NOSYS => return Err(e.into()),
            Err(_) => {}
        }
    }
    if fs::symlink_metadata(to).is_ok() {
        return Err(io::Error::from(io::ErrorKind::AlreadyExists));
    }
    fs::rename(from, to)
}

/// Why [`create_locked`] made no entry.
enum NotCreated {
    /// The entry came out longer than `max` bytes; nothing is left behind.
    TooLarge,
    /// The file system's refusal (a name already taken is `AlreadyExists`).
    Io(io::Error),
}

/// Creates entry number `seq` in `dir` through a fresh temp file (`O_EXCL`, 0600), locked before
/// it becomes visible under its final name, so no drainer can ever claim it while we hold it. The
/// final name carries the size, taken from the bytes written: the text is escaped once, not once
/// to count it and again to write it. An entry longer than `max` is removed, never named. No
/// fsync: a capture has to survive the process, not a power cut, and an fsync would cost
/// milliseconds on every prompt.
fn create_locked(
    dir: &Path,
    seq: u64,
    created_ms: u64,
    bytes: &EntryBytes<'_>,
    max: u64,
) -> Result<(File, String), NotCreated> {
    let temp = dir.join(format!(
        "{TEMP_PREFIX}{SEQ_MARK}{seq:019}-{created_ms}-{}.json",
        std::process::id()
    ));
    let result = (|| {
        let f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(lock::no_follow_flags())
            .open(&temp)
            .map_err(NotCreated::Io)?;
        // Nobody else knows this name yet: the lock is always free.
        lock::try_lock_file(&f).map_err(NotCreated::Io)?;
        let mut out = Counted { file: f, written: 0 };
        bytes.write_to(&mut out).map_err(NotCreated::Io)?;
        if out.written > max {
            return Err(NotCreated::TooLarge);
        }
        let name = entry_name(seq, out.written, created_ms);
        rename_no_replace(&temp, &dir.join(&name)).map_err(NotCreated::Io)?;
        Ok((out.file, name))
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp);
    }
    result
}

/// A file that counts the bytes written to it.
struct Counted {
    file: File,
    written: u64,
}

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

/// How the bytes of an entry whose text is empty end: the text goes between the quotes.
const EMPTY_TEXT: &[u8] = b",\"content\":\"\"}\n";

/// An entry's bytes: the versioned JSON of `entry` (its own content left out) up to where the
/// content's string goes, then `text` escaped as a JSON string, then the closing `}`. The text is
/// never copied into one buffer with the rest: a prompt of hundreds of KB is escaped and written
/// a chunk at a time (see [`EntryBytes::write_to`]), so its bytes touch no fresh pages, and only once:
/// the size in the entry's name is counted as it is written.
enum EntryBytes<'t> {
    /// The head and the text, apart.
    Parts { head: Vec<u8>, text: &'t str },
    /// The whole entry, serialized by `serde_json` (an entry whose text is not its last field).
    Whole(Vec<u8>),
}

impl<'t> EntryBytes<'t> {
    fn new(entry: &SpooledCapture, text: &'t str) -> std::io::Result<Self> {
        let mut head = versioned_struct_bytes(entry, 1024)?;
        if !entry.content.is_empty() || !head.ends_with(EMPTY_TEXT) {
            let whole = SpooledCapture {
                content: text.to_owned(),
                ..without_text(entry)
            };
            return Ok(Self::Whole(versioned_struct_bytes(&whole, text.len() + 1024)?));
        }
        head.truncate(head.len() - 4);
        Ok(Self::Parts { head, text })
    }

    /// The entry's length in bytes.
    #[cfg(test)]
    fn len(&self) -> usize {
        match self {
            Self::Whole(bytes) => bytes.len(),
            Self::Parts { head, text } => {
                let mut n = head.len() + "\"\"}\n".len();
                json_escape(text.as_bytes(), |run| n += run.len());
                n
            }
        }
    }

    /// A length the entry cannot be shorter than (an escape only ever lengthens the text).
    fn least_len(&self) -> usize {
        match self {
            Self::Whole(bytes) => bytes.len(),
            Self::Parts { head, text } => head.len() + "\"\"}\n".len() + text.len(),
        }
    }

    /// Writes the entry, the text escaped through a bounded buffer.
    fn write_to(&self, out: &mut impl Write) -> std::io::Result<()> {
        const CHUNK: usize = 16 * 1024;
        let (head, text) = match self {
            Self::Whole(bytes) => return out.write_all(bytes),
            Self::Parts { head, text } => (head, text),
        };
        let mut buf = Vec::with_capacity(CHUNK + 64);
        buf.extend_from_slice(head);
        buf.push(b'"');
        let mut failed = None;
        json_escape(text.as_bytes(), |run| {
            if failed.is_some() {
                return;
            }
            if buf.len() + run.len() > CHUNK {
                if let Err(e) = out.write_all(&buf) {
                    failed = Some(e);
                    return;
                }
                buf.clear();
            }
            if run.len() > CHUNK {
                if let Err(e) = out.write_all(run) {
                    failed = Some(e);
                }
            } else {
                buf.extend_from_slice(run);
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        buf.extend_from_slice(b"\"}\n");
        out.write_all(&buf)
    }
}

/// The bytes of `entry` (its own content left out) with `text` as its content, whole.
#[cfg(test)]
fn entry_bytes(entry: &SpooledCapture, text: &str) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    EntryBytes::new(entry, text)?.write_to(&mut bytes)?;
    Ok(bytes)
}

/// Hands `text` to `run` as a JSON string's body, escaped as `serde_json` escapes it (`"`, `\\`
/// and the control characters; everything else as it is): the runs needing no escape as they are
/// (looked for eight bytes at a time), each escape as its own piece. Hand-written because
/// `serde_json`'s writer looks at one byte at a time: for a 200 KB prompt about 1.7 M
/// instructions against 0.4 M here, on the prompt path before the answer.
fn json_escape(bytes: &[u8], mut run: impl FnMut(&[u8])) {
    const ONES: u64 = u64::from_le_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_le_bytes([0x80; 8]);
    const HEX: &[u8; 16] = b"0123456789abcdef";
    // The high bit of each byte of `w` that is zero (of `w - n`: below `n`). A borrow only runs
    // up from a byte that is, so the lowest bit set is exact: the first such byte.
    let below = |w: u64, n: u64| w.wrapping_sub(ONES * n) & !w & HIGHS;
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if let Some(word) = bytes.get(i..i + 8) {
            let w = u64::from_le_bytes(word.try_into().unwrap_or([0; 8]));
            let hits = below(w, 0x20)
                | below(w ^ (ONES * u64::from(b'"')), 1)
                | below(w ^ (ONES * u64::from(b'\\')), 1);
            if hits == 0 {
                i += 8;
                continue;
            }
            i += (hits.trailing_zeros() / 8) as usize;
        }
        let unicode;
        let escaped: &[u8] = match bytes[i] {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0c => b"\\f",
            b if b < 0x20 => {
                unicode = [
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[usize::from(b >> 4)],
                    HEX[usize::from(b & 15)],
                ];
                &unicode
            }
            // Only in the last seven bytes, which are looked at one by one.
            _ => {
                i += 1;
                continue;
            }
        };
        if copied < i {
            run(&bytes[copied..i]);
        }
        run(escaped);
        i += 1;
        copied = i;
    }
    if copied < bytes.len() {
        run(&bytes[copied..]);
    }
}

/// Room an entry keeps below the read bound for its pinned-scope line (a scope id is at most 256
/// characters).
const PIN_ROOM: u64 = 4096;

/// Makes a capture durable in the spool before anything is sent: one new file, no shared lock,
/// no directory listing. The returned handle keeps the entry claimed until dropped.
///
/// # Errors
/// [`WriteAheadError::TooLarge`] or the state problem.
pub fn write_ahead(
    state: &StateDir,
    capture: &SpooledCapture,
    limits: &SpoolLimits,
) -> Result<WriteAhead, WriteAheadError> {
    write_ahead_text(state, &without_text(capture), &capture.content, limits)
}

/// [`write_ahead`] of `entry` (whose own content is left out) with `text` as its content: the
/// caller's text is written as it is, never copied.
///
/// # Errors
/// As [`write_ahead`].
pub fn write_ahead_text(
    state: &StateDir,
    entry: &SpooledCapture,
    text: &str,
    limits: &SpoolLimits,
) -> Result<WriteAhead, WriteAheadError> {
    write_ahead_text_at(state, entry, text, limits, now_millis())
}

/// `capture` without its content.
fn without_text(capture: &SpooledCapture) -> SpooledCapture {
    SpooledCapture {
        integration: capture.integration.clone(),
        server: capture.server.clone(),
        source_prefix: capture.source_prefix.clone(),
        query: capture.query.clone(),
        session: capture.session.clone(),
        turn: capture.turn.clone(),
        metadata: capture.metadata.clone(),
        flush: capture.flush,
        content: String::new(),
    }
}

/// [`write_ahead_text`] with the wall-clock time given (the tests step the clock with it).
fn write_ahead_text_at(
    state: &StateDir,
    entry: &SpooledCapture,
    text: &str,
    limits: &SpoolLimits,
    now: u64,
) -> Result<WriteAhead, WriteAheadError> {
    state.ensure(Some(DIR))?;
    let dir = state.file(DIR);
    let bytes = EntryBytes::new(entry, text).map_err(StateError::from)?;
    // A drain reads an entry (and the scope line pinned to it later) up to the state-file bound:
    // one larger could never be replayed.
    let max = limits.max_bytes.min(crate::state::MAX_FILE_BYTES - PIN_ROOM);
    if bytes.least_len() as u64 > max {
        return Err(WriteAheadError::TooLarge);
    }
    let mut last = io::Error::from(io::ErrorKind::AlreadyExists);
    // A sequence number is unique while the counter is ours; a name taken anyway (a counter
    // rebuilt from the listing) just makes us take the next number.
    for _ in 0..4 {
        let seq = next_seq(state).map_err(StateError::from)?;
        match create_locked(&dir, seq, now, &bytes, max) {
            Ok((file, name)) => {
                return Ok(WriteAhead {
                    dir,
                    name,
                    file,
                    query: entry.query.clone(),
                });
            }
            Err(NotCreated::TooLarge) => return Err(WriteAheadError::TooLarge),
            Err(NotCreated::Io(e)) if e.kind() == io::ErrorKind::AlreadyExists => last = e,
            Err(NotCreated::Io(e)) => return Err(StateError::from(e).into()),
        }
    }
    Err(StateError::from(last).into())
}

impl WriteAhead {
    /// Records the scope the hook resolved, before the capture is sent: a replay after a crash
    /// then sends exactly the request the hook sent (same scope, so same `source_id`), even if
    /// the binding changed meanwhile. One small append to the claimed file (a second JSON line):
    /// a write cut short by a crash is ignored at replay, and then nothing had been sent yet.
    /// The size in the entry's name stays the size at write time.
    ///
    /// # Errors
    /// The I/O error; the entry with the unresolved query then stays as it was.
    pub fn pin_scope(&mut self, scope: &str) -> Result<(), StateError> {
        if self.query.explicit.as_deref() == Some(scope) {
            return Ok(());
        }
        let mut line = serde_json::to_vec(&Pin {
            pinned_scope: scope.to_owned(),
        })
        .map_err(io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.query = ScopeQuery::resolved(scope);
        Ok(())
    }

    /// The capture was delivered (or rejected for good): the entry goes, while still claimed, so
    /// no drainer can replay it in between.
    pub fn retire(self) {
        let _ = fs::remove_file(self.dir.join(&self.name));
    }

    /// Leaves the entry for the drainer (releases the claim) and remembers, for the work done
    /// after the answer, that this run left something in the spool.
    pub fn keep(self, component: &'static str) {
        let _ = LEFT_BY.set(component);
    }
}

/// Process-wide because an entry is also left on the prompt path (a scope that could not be
/// resolved), where the pipeline returns no after-answer value.
static LEFT_BY: OnceLock<&'static str> = OnceLock::new();

/// The component of this process's hook if it left a capture in the spool this run.
#[must_use]
pub fn left_this_run() -> Option<&'static str> {
    LEFT_BY.get().copied()
}

/// Applies the limits without adding anything (the drainer does this before replaying; a hook
/// with background draining off does it after its answer). Temp files are swept only once stale:
/// a young one may be a live hook's write-ahead.
///
/// # Errors
/// The I/O error of the listing.
pub fn enforce(state: &StateDir, lock: &LockGuard, limits: &SpoolLimits) -> Result<Dropped, StateError> {
    enforce_at(state, lock, limits, now_millis())
}

/// [`enforce`] at a given wall-clock time (the tests step the clock with it).
fn enforce_at(
    state: &StateDir,
    lock: &LockGuard,
    limits: &SpoolLimits,
    now: u64,
) -> Result<Dropped, StateError> {
    let dir = state.file(DIR);
    sweep_stale_temps(&dir);
    let entries = list(state)?;
    let answered: Answered = state.read_json(ANSWERED_FILE).ok().flatten().unwrap_or_default();
    // Read only for an entry past the age limit by the wall clock: which Server it waits for.
    let mut answered_since = |e: &Entry| {
        if e.seq == 0 || answered.servers.is_empty() {
            return false;
        }
        read_entry(&dir.join(&e.name))
            .map(|c| c.server)
            .and_then(|s| answered.servers.get(&s).copied())
            .is_some_and(|mark| mark >= e.seq)
    };
    let (drop, dropped) = plan_drops(&entries, limits, now, None, &mut answered_since);
    remove_all(&dir, &entries, &drop);
    if dropped.total() > 0 {
        let mut totals = drop_totals(state);
        totals.dropped.age += dropped.age;
        totals.dropped.count += dropped.count;
        totals.dropped.bytes += dropped.bytes;
        totals.last = crate::state::now_secs();
        let _ = state.write_json(lock, DROPPED_FILE, &totals);
    }
    Ok(dropped)
}

fn remove_all(dir: &Path, entries: &[Entry], which: &[usize]) {
    for &i in which {
        let _ = fs::remove_file(dir.join(&entries[i].name));
    }
}

/// An entry the drainer holds while it replays it.
#[derive(Debug)]
pub struct Claimed {
    path: PathBuf,
    _file: File,
}

impl Claimed {
    /// Records the scope the drainer resolved, before it sends the capture (see
    /// [`WriteAhead::pin_scope`]): one line appended to the claimed entry, never through a link.
    ///
    /// # Errors
    /// The I/O error; the capture is then not sent this run.
    pub fn pin_scope(&mut self, scope: &str) -> Result<(), StateError> {
        let mut line = serde_json::to_vec(&Pin {
            pinned_scope: scope.to_owned(),
        })
        .map_err(io::Error::other)?;
        line.push(b'\n');
        let mut f = OpenOptions::new()
            .append(true)
            .custom_flags(lock::no_follow_flags())
            .open(&self.path)?;
        f.write_all(&line)?;
        Ok(())
    }

    /// Removes the delivered or rejected entry, still under the claim.
    ///
    /// # Errors
    /// The I/O error, other than "already gone".
    pub fn remove(self) -> Result<(), StateError> {
        match fs::remove_file(&self.path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }
}

/// What the drainer found under one entry name.
#[derive(Debug)]
pub enum Claim {
    /// Ours to replay: the capture and the claim.
    Ready(Box<SpooledCapture>, Claimed),
    /// A live hook holds it (it hands it over once its answer is out), with its order key when
    /// it could be read.
    InFlight(Option<String>),
    /// Already retired or dropped.
    Gone,
    /// Unreadable, unparsable or not a regular file: renamed `*.corrupt`.
    Corrupt,
    /// Another user's, or writable by others: renamed `*.unsafe`, never replayed.
    Unsafe,
    /// Written by a newer release: left untouched.
    NewerFormat,
}

fn rename_aside(path: &Path, suffix: &str) {
    let mut aside = path.as_os_str().to_owned();
    aside.push(suffix);
    let aside = PathBuf::from(aside);
    if fs::rename(path, &aside).is_ok() {
        // Its age now counts from being set aside (see `prune_set_aside`), so `status` and
        // `doctor` get to report it; the link itself, never what it points to.
        use rustix::fs::{AtFlags, CWD, Timestamps, UTIME_NOW, utimensat};
        let now = rustix::fs::Timespec {
            tv_sec: 0,
            tv_nsec: UTIME_NOW,
        };
        let times = Timestamps {
            last_access: now,
            last_modification: now,
        };
        let _ = utimensat(CWD, &aside, &times, AtFlags::SYMLINK_NOFOLLOW);
    }
}

/// Claims one entry for replay without ever opening a non-regular file, following a symlink or
/// blocking: `lstat`, `open(O_NOFOLLOW | O_NONBLOCK)`, `fstat`, then a non-blocking lock. Anything
/// that is not a readable capture of ours is set aside so the drain goes on with the rest.
///
/// # Errors
/// Only an I/O error of the open or read itself (the caller sets the entry aside too).
pub fn claim(state: &StateDir, entry: &Entry) -> Claim {
    let path = state.file(DIR).join(&entry.name);
    let (mut file, meta) = match open_state_file(&path) {
        Ok(Opened::File(f, m)) => (f, m),
        Ok(Opened::Missing) => return Claim::Gone,
        Ok(Opened::Unsafe) => {
            rename_aside(&path, UNSAFE_SUFFIX);
            return Claim::Unsafe;
        }
        Ok(Opened::NotRegular) | Err(_) => {
            rename_aside(&path, CORRUPT_SUFFIX);
            return Claim::Corrupt;
        }
    };
    match lock::try_lock_file(&file) {
        Ok(true) => {}
        Ok(false) => {
            let order = read_bounded(&mut file).ok().flatten().and_then(|b| {
                let head = b.split(|c| *c == b'\n').next().unwrap_or_default();
                crate::state::parse_versioned::<SpooledCapture>(head)
                    .ok()
                    .flatten()
                    .map(|c| c.order_key())
            });
            return Claim::InFlight(order);
        }
        Err(_) => {
            rename_aside(&path, CORRUPT_SUFFIX);
            return Claim::Corrupt;
        }
    }
    // Retired (unlinked) between our open and our lock: nothing left to replay.
    if meta.nlink() == 0 || file.metadata().is_ok_and(|m| m.nlink() == 0) {
        return Claim::Gone;
    }
    let bytes = match read_bounded(&mut file) {
        Ok(Some(b)) => b,
        Ok(None) | Err(_) => {
            rename_aside(&path, CORRUPT_SUFFIX);
            return Claim::Corrupt;
        }
    };
    // The entry, then at most one pin line appended by the hook that resolved its scope.
    let (head, tail) = match bytes.iter().position(|b| *b == b'\n') {
        Some(i) => bytes.split_at(i + 1),
        None => (&bytes[..], &[][..]),
    };
    match parse_versioned_at::<SpooledCapture>(&path, head) {
        Ok(Some(mut c)) => {
            if let Ok(pin) = serde_json::from_slice::<Pin>(tail) {
                c.query = ScopeQuery::resolved(&pin.pinned_scope);
            }
            Claim::Ready(Box::new(c), Claimed { path, _file: file })
        }
        Ok(None) => Claim::Gone,
        Err(StateError::NewerFormat) => Claim::NewerFormat,
        // `parse_versioned_at` already moved it aside.
        Err(_) => Claim::Corrupt,
    }
}

/// Whether the spool holds an entry outside `left` that nobody holds: a regular file of ours
/// whose lock is free right now (taken and released at once, nothing read).
#[must_use]
pub fn claimable_beyond(state: &StateDir, left: &std::collections::HashSet<String>) -> bool {
    let Ok(entries) = list(state) else {
        return false;
    };
    entries.iter().filter(|e| !left.contains(&e.name)).any(|e| {
        match open_state_file(&state.file(DIR).join(&e.name)) {
            Ok(Opened::File(f, _)) => lock::try_lock_file(&f).unwrap_or(false),
            _ => false,
        }
    })
}

/// How many spooled captures wait for `server` (a normalized base URL): each entry's first line
/// is read (bounded, never through a link), for `uninstall` to say what it leaves behind.
#[must_use]
pub fn count_for_server(state: &StateDir, server: &str) -> usize {
    let Ok(entries) = list(state) else { return 0 };
    let dir = state.file(DIR);
    entries
        .iter()
        .filter(|e| read_entry(&dir.join(&e.name)).is_some_and(|c| c.server == server))
        .count()
}

/// An entry's capture, read without claiming it (bounded, never through a link, nothing set
/// aside): `None` when it cannot be read or parsed.
fn read_entry(path: &Path) -> Option<SpooledCapture> {
    let Ok(Opened::File(mut f, _)) = open_state_file(path) else {
        return None;
    };
    let bytes = read_bounded(&mut f).ok().flatten()?;
    let head = bytes.split(|c| *c == b'\n').next().unwrap_or_default();
    crate::state::parse_versioned::<SpooledCapture>(head)
        .ok()
        .flatten()
}

/// Entries set aside (`*.corrupt`, `*.unsafe`) in the spool, for `status` and `doctor`.
#[must_use]
pub fn set_aside_counts(state: &StateDir) -> (usize, usize) {
    let Ok(entries) = fs::read_dir(state.file(DIR)) else {
        return (0, 0);
    };
    entries.flatten().fold((0, 0), |(c, u), e| {
        let name = e.file_name();
        let name = name.to_string_lossy();
        (
            c + usize::from(name.ends_with(CORRUPT_SUFFIX)),
            u + usize::from(name.ends_with(UNSAFE_SUFFIX)),
        )
    })
}

/// Removes entries set aside longer ago than `max_age` (the spool's own age limit: what could
/// have been replayed by then is gone anyway), so a spool that once met a bad file does not keep
/// it, and its warning, forever. Only files, never through a link; returns how many went.
pub fn prune_set_aside(state: &StateDir, max_age: Duration) -> usize {
    let Ok(entries) = fs::read_dir(state.file(DIR)) else {
        return 0;
    };
    let now = std::time::SystemTime::now();
    entries
        .flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.ends_with(CORRUPT_SUFFIX) || name.ends_with(UNSAFE_SUFFIX)
        })
        // Bounded work per drain; a later drain takes the rest.
        .take(20_000)
        .filter(|e| {
            fs::symlink_metadata(e.path()).is_ok_and(|m| {
                m.is_file()
                    && m.modified()
                        .ok()
                        .and_then(|t| now.duration_since(t).ok())
                        .is_some_and(|age| age > max_age)
            })
        })
        .filter(|e| fs::remove_file(e.path()).is_ok())
        .count()
}

/// Reports a capture that could not be delivered now: `capture_spooled` when it waits in the
/// spool, else why it could not be kept (`state_unavailable` was already reported at write-ahead
/// time; a capture larger than the byte limit is reported as such a drop).
pub fn report_left(component: &'static str, ahead: Option<WriteAhead>, too_large: bool) {
    if let Some(ahead) = ahead {
        ahead.keep(component);
        emit::diagnostic(&Diagnostic::new(
            component,
            Stage::Capture,
            Outcome::CaptureSpooled,
        ));
    } else if too_large {
        let dropped = Dropped {
            bytes: 1,
            ..Dropped::default()
        };
        for d in dropped.diagnostics(component) {
            emit::diagnostic(&d);
        }
    }
}

/// After the answer, for a hook that left a capture in the spool with background draining off:
/// applies the limits (one listing, off the prompt path) and reports each drop. A busy or
/// unusable state is left alone: the capture is already safe, and the next run applies them.
pub fn enforce_after_answer(env: &Env, component: &str) {
    let result = StateDir::locate(env).and_then(|state| {
        let lock = state.lock(&Deadline::after(AFTER_ANSWER_LOCK_WAIT))?;
        enforce(&state, &lock, &SpoolLimits::from_env(env))
    });
    if let Ok(dropped) = result {
        for d in dropped.diagnostics(component) {
            emit::diagnostic(&d);
        }
    }
}

/// How long a hook that already answered waits for the state lock to apply the spool limits.
const AFTER_ANSWER_LOCK_WAIT: Duration = Duration::from_millis(100);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::BindingKey;

    /// [`write_ahead`] at the wall-clock time `now`.
    fn write_ahead_at(
        state: &StateDir,
        capture: &SpooledCapture,
        limits: &SpoolLimits,
        now: u64,
    ) -> Result<WriteAhead, WriteAheadError> {
        write_ahead_text_at(state, &without_text(capture), &capture.content, limits, now)
    }

    #[test]
    fn an_entry_is_written_byte_for_byte_as_serde_json_writes_it() {
        let mut texts: Vec<String> = vec![
            String::new(),
            "plain".into(),
            "é ü 中文 😀🎉 👩\u{200d}💻 \u{7f} \u{80} \u{ffff}".into(),
            "\"quoted\" C:\\dir\\ \r\n\t\u{8}\u{c}\u{0}\u{1f}".into(),
        ];
        // Every ASCII character at every offset of an eight-byte word, and runs of escapes.
        for c in (0u8..0x80).map(char::from) {
            for at in 0..10 {
                texts.push(format!("{}{c}{}", "a".repeat(at), "b".repeat(17 - at)));
            }
        }
        texts.push("\"\\\n".repeat(1000));
        texts.push("x\u{1}yz\u{1e}".repeat(3000));
        // Longer than the write's chunk: one run with no escape, and escapes across chunk ends.
        texts.push("plain words ".repeat(20_000));
        texts.push(format!("{}\"{}", "a".repeat(16 * 1024 - 3), "é\n".repeat(40_000)));
        // The fast path is the one taken: the text is the entry's last field.
        assert!(
            versioned_struct_bytes(&sample(""), 0)
                .unwrap()
                .ends_with(EMPTY_TEXT)
        );
        for text in texts {
            let capture = sample(&text);
            let fast = entry_bytes(&without_text(&capture), &text).unwrap();
            let serde = versioned_struct_bytes(&capture, 0).unwrap();
            assert_eq!(
                String::from_utf8(fast.clone()).unwrap(),
                String::from_utf8(serde).unwrap()
            );
            let back: SpooledCapture = crate::state::parse_versioned(&fast).unwrap().unwrap();
            assert_eq!(back, capture);
        }
    }

    #[test]
    fn an_entry_written_in_chunks_has_the_length_it_announced_and_reports_a_failed_write() {
        let text = format!("{}\"\n{}", "word ".repeat(10_000), "\u{1}".repeat(9_000));
        let capture = sample(&text);
        let bytes = EntryBytes::new(&without_text(&capture), &text).unwrap();
        let mut out = Vec::new();
        bytes.write_to(&mut out).unwrap();
        assert_eq!(out.len(), bytes.len());
        // A disk that fills up halfway: the error comes back, nothing is claimed written.
        struct Full(usize);
        impl Write for Full {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                if self.0 < b.len() {
                    return Err(io::Error::other("no space left"));
                }
                self.0 -= b.len();
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        assert!(bytes.write_to(&mut Full(40_000)).is_err());
        assert!(bytes.write_to(&mut Full(out.len())).is_ok());
    }

    #[test]
    fn review_random_texts_escape_as_serde_json_with_the_announced_length() {
        // A writer taking a few bytes at a time, so every chunk boundary is also a write boundary.
        struct Dribble(Vec<u8>, u64);
        impl Write for Dribble {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                self.1 ^= self.1 << 13;
                self.1 ^= self.1 >> 7;
                self.1 ^= self.1 << 17;
                let n = b.len().min(1 + (self.1 % 5000) as usize);
                self.0.extend_from_slice(&b[..n]);
                Ok(n)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let alphabet: Vec<char> = ('\u{0}'..='\u{7f}')
            .chain(['é', '中', '😀', '\u{2028}', '\u{ffff}', '\u{10ffff}'])
            .collect();
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for round in 0..400 {
            let len = (next() % 70_000) as usize;
            // Mostly plain runs with sparse escapes, or dense escapes.
            let dense = round % 3 == 0;
            let text: String = (0..len)
                .map(|_| {
                    let r = next();
                    if dense || r % 50 == 0 {
                        alphabet[(r >> 8) as usize % alphabet.len()]
                    } else {
                        'a'
                    }
                })
                .collect();
            let capture = sample(&text);
            let bytes = EntryBytes::new(&without_text(&capture), &text).unwrap();
            let mut out = Dribble(Vec::new(), next() | 1);
            bytes.write_to(&mut out).unwrap();
            let serde = versioned_struct_bytes(&capture, 0).unwrap();
            assert_eq!(out.0.len(), bytes.len(), "round {round}");
            assert!(out.0 == serde, "round {round}");
        }
    }

    fn sample(content: &str) -> SpooledCapture {
        SpooledCapture {
            integration: "codex".into(),
            server: "http://127.0.0.1:9".into(),
            source_prefix: "codex-user-prompt".into(),
            query: ScopeQuery {
                explicit: None,
                keys: vec![BindingKey {
                    integration: "codex".into(),
                    kind: "session".into(),
                    external_id: "s".into(),
                }],
                legacy: Some("project:x".into()),
                legacy_from: None,
            },
            session: "session-1".into(),
            turn: "turn-2".into(),
            content: content.into(),
            metadata: capture::metadata("codex", "user_prompt_submit", &[("cwd", Some("/p"))]),
            flush: false,
        }
    }

    fn entry(ms: u64, bytes: u64) -> Entry {
        Entry {
            name: format!("{ms:016}-{bytes:012}-1-0.json"),
            seq: ms,
            created_ms: ms,
            bytes,
        }
    }

    #[test]
    fn set_aside_entries_go_after_the_age_limit_and_only_files() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path().join("st"));
        state.ensure(Some(DIR)).unwrap();
        let dir = state.file(DIR);
        let old = std::time::SystemTime::now() - Duration::from_secs(3600);
        for name in ["a.json.corrupt", "b.json.unsafe", "c.json.corrupt", "d.json"] {
            fs::write(dir.join(name), "x").unwrap();
        }
        for name in ["a.json.corrupt", "b.json.unsafe", "d.json"] {
            File::options()
                .write(true)
                .open(dir.join(name))
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        fs::create_dir(dir.join("e.json.corrupt")).unwrap();
        assert_eq!(prune_set_aside(&state, Duration::from_secs(60)), 2);
        for (name, kept) in [
            ("a.json.corrupt", false),
            ("b.json.unsafe", false),
            ("c.json.corrupt", true),
            ("d.json", true),
            ("e.json.corrupt", true),
        ] {
            assert_eq!(dir.join(name).exists(), kept, "{name}");
        }
        assert_eq!(set_aside_counts(&state), (2, 0));
    }

    #[test]
    fn replay_request_has_the_online_source_id() {
        let s = sample("Keep the Source pipeline.");
        let r = s.request("project:test");
        assert_eq!(
            r.source_id,
            "codex-user-prompt:816b0186fbb1c877ad4ccac222d80c32ebb86734c41f6fe36a9ea53c115d2c62"
        );
        assert_eq!(r.metadata, s.metadata);
    }

    #[test]
    fn drop_plan_is_oldest_first_per_limit() {
        let limits = SpoolLimits {
            max_entries: 3,
            max_bytes: 100,
            max_age: Duration::from_secs(10),
        };
        let now = 100_000;
        let es = [
            entry(80_000, 10),
            entry(95_000, 10),
            entry(96_000, 10),
            entry(97_000, 10),
            entry(98_000, 10),
        ];
        let (drop, d) = plan_drops(&es, &limits, now, None, &mut |_| true);
        assert_eq!(
            (drop, d),
            (
                vec![0, 1],
                Dropped {
                    age: 1,
                    count: 1,
                    bytes: 0
                }
            )
        );
        let es = [entry(95_000, 40), entry(96_000, 40), entry(97_000, 10)];
        let (drop, d) = plan_drops(&es, &limits, now, Some(30), &mut |_| true);
        assert_eq!(
            (drop, d),
            (
                vec![0],
                Dropped {
                    age: 0,
                    count: 1,
                    bytes: 0
                }
            )
        );
        let limits = SpoolLimits {
            max_entries: 10,
            ..limits
        };
        let (drop, d) = plan_drops(&es, &limits, now, Some(30), &mut |_| true);
        assert_eq!(
            (drop, d),
            (
                vec![0],
                Dropped {
                    age: 0,
                    count: 0,
                    bytes: 1
                }
            )
        );
    }

    fn replay_all(state: &StateDir) -> Vec<String> {
        let mut out = Vec::new();
        for e in list(state).unwrap() {
            if let Claim::Ready(c, claimed) = claim(state, &e) {
                out.push(c.content.clone());
                claimed.remove().unwrap();
            }
        }
        out
    }

    #[test]
    fn write_ahead_is_claimed_until_dropped_and_retire_removes_it() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path().join("st"));
        assert!(!has_work(&state));
        let limits = SpoolLimits::DEFAULT;
        let live = write_ahead(&state, &sample("delivered live"), &limits).unwrap();
        let crashed = write_ahead(&state, &sample("left behind"), &limits).unwrap();
        assert!(has_work(&state));
        let es = list(&state).unwrap();
        assert_eq!(es.len(), 2);
        let on_disk = fs::metadata(state.file(DIR).join(&es[0].name)).unwrap().len();
        assert_eq!(on_disk, es[0].bytes);
        let mode = fs::metadata(state.file(DIR).join(&es[0].name)).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        // Both are claimed by their writers: a drainer leaves them alone.
        assert!(
            es.iter()
                .all(|e| matches!(claim(&state, e), Claim::InFlight(Some(_))))
        );
        live.retire();
        drop(crashed);
        assert_eq!(replay_all(&state), ["left behind"]);
        assert!(!has_work(&state));
        assert_eq!(crate::state::count_temps(&state.file(DIR)), 0);
    }

    #[test]
    fn pinned_scope_is_what_a_replay_sends() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let mut ahead = write_ahead(&state, &sample("pin me"), &SpoolLimits::DEFAULT).unwrap();
        ahead.pin_scope("scp_resolved").unwrap();
        drop(ahead);
        let after = list(&state).unwrap();
        assert_eq!(after.len(), 1);
        // A pin line cut short by a crash is ignored: the query is resolved again.
        let path = state.file(DIR).join(&after[0].name);
        let whole = fs::read(&path).unwrap();
        fs::write(&path, &whole[..whole.len() - 5]).unwrap();
        let Claim::Ready(c, claimed) = claim(&state, &after[0]) else {
            panic!("not claimable")
        };
        assert_eq!(c.query, sample("").query);
        drop(claimed);
        fs::write(&path, &whole).unwrap();
        let Claim::Ready(c, _) = claim(&state, &after[0]) else {
            panic!("not claimable")
        };
        assert_eq!(c.query, ScopeQuery::resolved("scp_resolved"));
        assert_eq!(
            c.request("scp_resolved"),
            sample("pin me").request("scp_resolved")
        );
    }

    #[test]
    fn a_drainer_pins_what_it_sends_and_sees_held_entries_with_their_order() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let held = write_ahead(&state, &sample("held"), &SpoolLimits::DEFAULT).unwrap();
        std::thread::sleep(Duration::from_millis(2));
        drop(write_ahead(&state, &sample("free"), &SpoolLimits::DEFAULT).unwrap());
        let es = list(&state).unwrap();
        // The held entry is in flight, and names the queue it keeps its order in.
        assert!(
            matches!(claim(&state, &es[0]), Claim::InFlight(Some(ref k)) if *k == sample("").order_key())
        );
        let mut left = std::collections::HashSet::new();
        assert!(claimable_beyond(&state, &left));
        left.insert(es[1].name.clone());
        assert!(
            !claimable_beyond(&state, &left),
            "only the held one is outside `left`"
        );
        drop(held);
        assert!(claimable_beyond(&state, &left), "released: claimable now");
        // A drainer pins the scope it resolved before sending: a replay after its crash sends the
        // same request.
        let Claim::Ready(c, mut claimed) = claim(&state, &es[1]) else {
            panic!("not claimable")
        };
        assert_eq!(c.query, sample("").query);
        claimed.pin_scope("scp_drained").unwrap();
        drop(claimed);
        let Claim::Ready(c, _) = claim(&state, &es[1]) else {
            panic!("not claimable")
        };
        assert_eq!(c.query, ScopeQuery::resolved("scp_drained"));
    }

    #[test]
    fn limits_drop_the_oldest() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path().join("st"));
        let limits = SpoolLimits {
            max_entries: 2,
            ..SpoolLimits::DEFAULT
        };
        for i in 0..3 {
            drop(write_ahead(&state, &sample(&format!("prompt {i}")), &limits).unwrap());
            std::thread::sleep(Duration::from_millis(2));
        }
        let lock = state.lock(&Deadline::after(Duration::from_secs(2))).unwrap();
        let d = enforce(&state, &lock, &limits).unwrap();
        assert_eq!(d.count, 1);
        assert_eq!(replay_all(&state), ["prompt 1", "prompt 2"]);
    }

    const DAY_MS: u64 = 24 * 3600 * 1000;

    /// A clock stepped back between two prompts: the order is the order they were written in.
    #[test]
    fn a_backward_clock_step_keeps_the_order_of_writing() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path().join("st"));
        let now = now_millis();
        let times = [
            now,
            now - 8 * DAY_MS,
            now - 8 * DAY_MS - 1,
            now + 8 * DAY_MS,
            now - 1,
        ];
        for (i, t) in times.iter().enumerate() {
            drop(write_ahead_at(&state, &sample(&format!("prompt {i}")), &SpoolLimits::DEFAULT, *t).unwrap());
        }
        assert_eq!(
            replay_all(&state),
            ["prompt 0", "prompt 1", "prompt 2", "prompt 3", "prompt 4"]
        );
        // A counter file that went missing is rebuilt above what is listed.
        drop(write_ahead_at(&state, &sample("before"), &SpoolLimits::DEFAULT, now).unwrap());
        fs::remove_file(state.file(SEQ_FILE)).unwrap();
        drop(write_ahead_at(&state, &sample("after"), &SpoolLimits::DEFAULT, now - DAY_MS).unwrap());
        assert_eq!(replay_all(&state), ["before", "after"]);
    }

    /// Clocks moved 8 days either way, before and after spooling: nothing undelivered is deleted
    /// for its age while its Server has not answered since it was written; once it has, the age
    /// limit applies (and a creation time ahead of the clock is age 0); every drop is counted.
    #[test]
    fn a_clock_step_never_ages_out_what_the_server_has_not_answered_since() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path().join("st"));
        let limits = SpoolLimits::DEFAULT;
        let now = now_millis();
        let lock = || state.lock(&Deadline::after(Duration::from_secs(2))).unwrap();
        // Spooled with the clock 8 days behind, then 8 days ahead.
        drop(write_ahead_at(&state, &sample("behind"), &limits, now - 8 * DAY_MS).unwrap());
        drop(write_ahead_at(&state, &sample("ahead"), &limits, now + 8 * DAY_MS).unwrap());
        // Drains with the clock right, 8 days ahead and 8 days behind: the Server never answered.
        for t in [now, now + 8 * DAY_MS, now + 16 * DAY_MS, now - 8 * DAY_MS] {
            let d = enforce_at(&state, &lock(), &limits, t).unwrap();
            assert_eq!(d.total(), 0, "at {t}");
            assert_eq!(list(&state).unwrap().len(), 2);
        }
        let sum = summarize(&list(&state).unwrap(), now);
        assert!(sum.created_in_future, "{sum:?}");
        // Another Server's answer changes nothing.
        let other: std::collections::HashSet<String> = ["http://127.0.0.1:1".to_owned()].into();
        record_answered(&state, &lock(), &other, sequence_now(&state)).unwrap();
        assert_eq!(
            enforce_at(&state, &lock(), &limits, now + 16 * DAY_MS)
                .unwrap()
                .total(),
            0
        );
        // Its own Server answered after both were written: age applies, by the wall clock.
        let mark = sequence_now(&state);
        drop(write_ahead_at(&state, &sample("after the answer"), &limits, now - 30 * DAY_MS).unwrap());
        let own: std::collections::HashSet<String> = [sample("").server].into();
        record_answered(&state, &lock(), &own, mark).unwrap();
        let d = enforce_at(&state, &lock(), &limits, now).unwrap();
        assert_eq!(d.age, 1, "only the one 8 days old: {d:?}");
        assert_eq!(replay_all(&state), ["ahead", "after the answer"]);
        assert_eq!(drop_totals(&state).dropped.age, 1);
    }

    #[test]
    fn oversized_capture_is_not_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let limits = SpoolLimits {
            max_bytes: 100,
            ..SpoolLimits::DEFAULT
        };
        let r = write_ahead(&state, &sample(&"x".repeat(200)), &limits);
        assert!(matches!(r, Err(WriteAheadError::TooLarge)));
        assert!(list(&state).unwrap().is_empty());
    }

    /// The size in an entry's name is counted from the bytes written, escapes included, and a text
    /// short enough raw but too long escaped is refused with nothing left behind, not even the
    /// temp file it was written to.
    #[test]
    fn an_entry_is_named_with_its_written_size_and_one_too_long_escaped_leaves_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let text = format!("{}\"\\\n{}", "\u{1}".repeat(3000), "é".repeat(500));
        drop(write_ahead(&state, &sample(&text), &SpoolLimits::DEFAULT).unwrap());
        let entries = list(&state).unwrap();
        assert_eq!(entries.len(), 1);
        let on_disk = fs::metadata(state.file(DIR).join(&entries[0].name))
            .unwrap()
            .len();
        assert_eq!(entries[0].bytes, on_disk);
        assert!(on_disk > 6 * 3000, "{on_disk}");

        let limits = SpoolLimits {
            max_bytes: on_disk - 1,
            ..SpoolLimits::DEFAULT
        };
        let raw = versioned_struct_bytes(&sample(""), 0).unwrap().len() + text.len();
        assert!((raw as u64) < limits.max_bytes);
        let r = write_ahead(&state, &sample(&text), &limits);
        assert!(matches!(r, Err(WriteAheadError::TooLarge)));
        let names: Vec<_> = fs::read_dir(state.file(DIR))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [std::ffi::OsString::from(&entries[0].name)]);
    }

    /// An entry a drain could not read back (a state file is read up to a bound) is never
    /// written: it would only ever be set aside as corrupt. A host's huge session id makes one.
    #[test]
    fn an_entry_larger_than_a_drain_reads_is_not_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let mut capture = sample("a short prompt");
        capture.session = "s".repeat(usize::try_from(crate::state::MAX_FILE_BYTES).unwrap());
        let r = write_ahead(&state, &capture, &SpoolLimits::DEFAULT);
        assert!(matches!(r, Err(WriteAheadError::TooLarge)));
        assert!(list(&state).unwrap().is_empty());
    }

    #[test]
    fn bad_entries_are_set_aside_without_being_opened() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        drop(write_ahead(&state, &sample("good"), &SpoolLimits::DEFAULT).unwrap());
        let dir = state.file(DIR);
        fs::create_dir(dir.join("0000000000000001-000000000010-1-0.json")).unwrap();
        fs::write(dir.join("0000000000000002-000000000010-1-0.json"), "{not json").unwrap();
        std::os::unix::fs::symlink(
            "/etc/hostname",
            dir.join("0000000000000003-000000000010-1-0.json"),
        )
        .unwrap();
        let fifo = dir.join("0000000000000004-000000000010-1-0.json");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .is_ok_and(|s| s.success());
        let start = std::time::Instant::now();
        assert_eq!(replay_all(&state), ["good"]);
        assert!(start.elapsed() < Duration::from_secs(1));
        let (corrupt, _) = set_aside_counts(&state);
        assert_eq!(corrupt, 3 + usize::from(made));
        assert!(list(&state).unwrap().is_empty());
    }
}
