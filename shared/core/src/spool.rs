//! The capture spool: captures the Server could not take (down, timeout, 5xx) kept on disk, one
//! file per capture, for the drainer to replay oldest first with the `source_id` the online path
//! would have used. Bounded by count, bytes and age; the oldest go first and every drop is
//! reported. Only text that already passed the secret filter is ever written here; no token.
//!
//! Creation time and size are encoded in each file name, so counting, sizing and ageing the spool
//! is one directory listing: nothing is parsed on the prompt path.

use std::fs;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::capture;
use crate::deadline::Deadline;
use crate::emit;
use crate::env::Env;
use crate::lock::LockGuard;
use crate::outcome::{Diagnostic, Outcome, Stage};
use crate::scope::ScopeQuery;
use crate::state::{
    StateDir, StateError, now_millis, read_versioned, sweep_temps, versioned_bytes, write_atomic,
};
use crate::wire::CaptureRequest;

/// The spool subdirectory.
pub const DIR: &str = "spool";

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
    pub const MAX_ENTRIES: &str = "POWERCONTEXT_HOOKS_SPOOL_MAX_ENTRIES";
    /// Most bytes.
    pub const MAX_BYTES: &str = "POWERCONTEXT_HOOKS_SPOOL_MAX_BYTES";
    /// Oldest entry, in seconds.
    pub const MAX_AGE_SECONDS: &str = "POWERCONTEXT_HOOKS_SPOOL_MAX_AGE_SECONDS";
}

impl SpoolLimits {
    /// The defaults, with any valid override from the environment.
    #[must_use]
    pub fn from_env(env: &Env) -> Self {
        let num = |name: &str| {
            env.text(name)
                .and_then(|v| v.trim().parse::<u64>().ok())
                .filter(|n| *n > 0)
        };
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
    /// The prompt, exactly as captured (already through the secret filter).
    pub content: String,
    /// The exact metadata the online request carried (replays must be byte-identical).
    pub metadata: Map<String, Value>,
    /// Whether the host wanted a flush after the capture (the position then goes to the ledger).
    #[serde(default)]
    pub flush: bool,
}

impl SpooledCapture {
    /// The request for a resolved scope, with the `source_id` the online path would have used.
    #[must_use]
    pub fn request(&self, scope: &str) -> CaptureRequest {
        CaptureRequest {
            scope_id: scope.to_owned(),
            source_id: capture::source_id(
                &self.source_prefix,
                scope,
                &self.session,
                &self.turn,
                &self.content,
            ),
            content: self.content.clone(),
            metadata: self.metadata.clone(),
        }
    }
}

/// A spool file, described by its name alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// File name inside the spool directory.
    pub name: String,
    /// Creation time, Unix milliseconds.
    pub created_ms: u64,
    /// File size in bytes.
    pub bytes: u64,
}

impl Entry {
    fn parse(name: &str) -> Option<Self> {
        let stem = name.strip_suffix(".json")?;
        let mut parts = stem.split('-');
        let created_ms = parts.next()?.parse().ok()?;
        let bytes = parts.next()?.parse().ok()?;
        Some(Self {
            name: name.to_owned(),
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
}

/// Why entries were dropped, with counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
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
    out.sort_by(|a, b| (a.created_ms, &a.name).cmp(&(b.created_ms, &b.name)));
    Ok(out)
}

/// Totals of a listing.
#[must_use]
pub fn summarize(entries: &[Entry], now_ms: u64) -> Summary {
    Summary {
        entries: entries.len(),
        bytes: entries.iter().map(|e| e.bytes).sum(),
        oldest_age_secs: entries.first().map(|e| e.age_secs(now_ms)),
    }
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

/// Which entries must go so that `incoming` more bytes fit: expired ones, then the oldest.
#[must_use]
pub fn plan_drops(
    entries: &[Entry],
    limits: &SpoolLimits,
    now_ms: u64,
    incoming: Option<u64>,
) -> (Vec<usize>, Dropped) {
    let mut dropped = Dropped::default();
    let mut drop = Vec::new();
    let max_age_ms = u64::try_from(limits.max_age.as_millis()).unwrap_or(u64::MAX);
    let mut count = entries.len();
    let mut bytes: u64 = entries.iter().map(|e| e.bytes).sum();
    let (extra_count, extra_bytes) = incoming.map_or((0, 0), |b| (1, b));
    for (i, e) in entries.iter().enumerate() {
        let reason = if now_ms.saturating_sub(e.created_ms) > max_age_ms {
            &mut dropped.age
        } else if count + extra_count > limits.max_entries {
            &mut dropped.count
        } else if bytes + extra_bytes > limits.max_bytes {
            &mut dropped.bytes
        } else {
            // Entries are sorted oldest first: once one is young enough and everything fits, the
            // rest fit too.
            break;
        };
        *reason += 1;
        drop.push(i);
        count -= 1;
        bytes -= e.bytes;
    }
    (drop, dropped)
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// Adds a capture under the held state lock, first dropping what the limits require (oldest
/// first). A capture larger than the byte limit by itself is not kept (reported as a bytes drop).
///
/// # Errors
/// The I/O error; nothing was dropped when the listing failed.
pub fn append(
    state: &StateDir,
    _lock: &LockGuard,
    capture: &SpooledCapture,
    limits: &SpoolLimits,
) -> Result<Dropped, StateError> {
    state.ensure(Some(DIR))?;
    let dir = state.file(DIR);
    sweep_temps(&dir);
    let bytes = versioned_bytes(capture)?;
    let size = bytes.len() as u64;
    let now = now_millis();
    let entries = list(state)?;
    if size > limits.max_bytes {
        let (drop, mut dropped) = plan_drops(&entries, limits, now, None);
        remove_all(&dir, &entries, &drop);
        dropped.bytes += 1;
        return Ok(dropped);
    }
    let (drop, dropped) = plan_drops(&entries, limits, now, Some(size));
    remove_all(&dir, &entries, &drop);
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let name = format!("{now:016}-{size:012}-{}-{seq}.json", std::process::id());
    write_atomic(&dir, &name, &bytes)?;
    Ok(dropped)
}

/// Applies the limits without adding anything (the drainer does this before replaying).
///
/// # Errors
/// The I/O error of the listing.
pub fn enforce(state: &StateDir, _lock: &LockGuard, limits: &SpoolLimits) -> Result<Dropped, StateError> {
    let dir = state.file(DIR);
    sweep_temps(&dir);
    let entries = list(state)?;
    let (drop, dropped) = plan_drops(&entries, limits, now_millis(), None);
    remove_all(&dir, &entries, &drop);
    Ok(dropped)
}

fn remove_all(dir: &Path, entries: &[Entry], which: &[usize]) {
    for &i in which {
        let _ = fs::remove_file(dir.join(&entries[i].name));
    }
}

/// Reads one entry.
///
/// # Errors
/// [`StateError::NewerFormat`] (left in place), [`StateError::Corrupt`] (moved aside) or I/O.
pub fn read(state: &StateDir, entry: &Entry) -> Result<Option<SpooledCapture>, StateError> {
    read_versioned(&state.file(DIR).join(&entry.name))
}

/// Removes a delivered or dropped entry (a single unlink: safe without the state lock, and a
/// second remover simply finds it gone).
///
/// # Errors
/// The I/O error, other than "already gone".
pub fn remove(state: &StateDir, entry: &Entry) -> Result<(), StateError> {
    match fs::remove_file(state.file(DIR).join(&entry.name)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e.into()),
        _ => Ok(()),
    }
}

/// The hook's entry point: spools an undeliverable capture and reports `capture_spooled` (or
/// `state_unavailable`, and any drops). Never fails the hook.
pub fn keep_for_later(component: &str, env: &Env, deadline: &Deadline, capture: &SpooledCapture) {
    let result = StateDir::locate(env).and_then(|state| {
        let lock = state.lock(deadline)?;
        append(&state, &lock, capture, &SpoolLimits::from_env(env))
    });
    match result {
        Ok(dropped) => {
            for d in dropped.diagnostics(component) {
                emit::diagnostic(&d);
            }
            emit::diagnostic(&Diagnostic::new(
                component,
                Stage::Capture,
                Outcome::CaptureSpooled,
            ));
        }
        Err(e) => emit::diagnostic(
            &Diagnostic::new(component, Stage::State, Outcome::StateUnavailable).detail(e.detail()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::BindingKey;

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
            created_ms: ms,
            bytes,
        }
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
        let (drop, d) = plan_drops(&es, &limits, now, None);
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
        let (drop, d) = plan_drops(&es, &limits, now, Some(30));
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
        let (drop, d) = plan_drops(&es, &limits, now, Some(30));
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

    #[test]
    fn append_list_read_remove() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path().join("st"));
        assert!(!has_work(&state));
        let lock = state.lock(&Deadline::after(Duration::from_secs(2))).unwrap();
        let limits = SpoolLimits {
            max_entries: 2,
            ..SpoolLimits::DEFAULT
        };
        for i in 0..3 {
            let d = append(&state, &lock, &sample(&format!("prompt {i}")), &limits).unwrap();
            assert_eq!(d.count, usize::from(i == 2));
        }
        assert!(has_work(&state));
        let es = list(&state).unwrap();
        assert_eq!(es.len(), 2);
        let first = read(&state, &es[0]).unwrap().unwrap();
        assert_eq!(first.content, "prompt 1", "the oldest was dropped");
        let on_disk = fs::metadata(state.file(DIR).join(&es[0].name)).unwrap().len();
        assert_eq!(on_disk, es[0].bytes);
        remove(&state, &es[0]).unwrap();
        remove(&state, &es[0]).unwrap();
        assert_eq!(list(&state).unwrap().len(), 1);
        assert_eq!(crate::state::count_temps(&state.file(DIR)), 0);
    }

    #[test]
    fn oversized_capture_is_not_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let lock = state.lock(&Deadline::after(Duration::from_secs(2))).unwrap();
        let limits = SpoolLimits {
            max_bytes: 100,
            ..SpoolLimits::DEFAULT
        };
        let d = append(&state, &lock, &sample(&"x".repeat(200)), &limits).unwrap();
        assert_eq!(d.bytes, 1);
        assert!(list(&state).unwrap().is_empty());
    }
}
