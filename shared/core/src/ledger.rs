//! The pending-flush ledger: per (Server base URL, scope) the greatest captured position not yet
//! known to be flushed, on disk and shared by every host process. Recording is monotonic; an entry
//! goes only when a flush reached it *and* it still holds the position that flush was for
//! (`host-contracts.md` §7.5). It never talks to the network and never stores a token.

use serde::{Deserialize, Serialize};

use crate::deadline::Deadline;
use crate::lock::LockGuard;

use crate::state::{StateDir, StateError, now_secs};

/// The ledger file; it exists only while something is pending, so "is there work" is one stat.
pub const FILE: &str = "ledger.json";

/// Flush attempts after which an entry is given up (with a report), so a Server that can never
/// flush (no model) does not keep a drainer busy forever.
pub const MAX_ATTEMPTS: u32 = 50;

/// One pending flush.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingFlush {
    /// Normalized Server base URL.
    pub server: String,
    /// Scope id.
    pub scope: String,
    /// Greatest captured position not yet known to be flushed.
    pub position: u64,
    /// When this entry was first recorded (Unix seconds).
    pub first_seen: u64,
    /// Failed or incomplete flush attempts so far.
    pub attempts: u32,
    /// The host that recorded it last (its settings give the credentials at drain time).
    pub integration: String,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct LedgerFile {
    entries: Vec<PendingFlush>,
}

/// Records `position` into `entries`: a new entry, or a larger position; never a smaller one.
/// Returns whether anything changed.
pub fn record_in(
    entries: &mut Vec<PendingFlush>,
    server: &str,
    scope: &str,
    position: u64,
    integration: &str,
    now: u64,
) -> bool {
    match entries
        .iter_mut()
        .find(|e| e.server == server && e.scope == scope)
    {
        Some(e) if e.position >= position => false,
        Some(e) => {
            e.position = position;
            e.integration = integration.to_owned();
            true
        }
        None => {
            entries.push(PendingFlush {
                server: server.to_owned(),
                scope: scope.to_owned(),
                position,
                first_seen: now,
                attempts: 0,
                integration: integration.to_owned(),
            });
            true
        }
    }
}

/// Applies a flush result: removes the entry when `cursor ≥ position` and the entry still holds
/// exactly `position`. Returns whether it was removed.
pub fn settle_in(
    entries: &mut Vec<PendingFlush>,
    server: &str,
    scope: &str,
    position: u64,
    cursor: u64,
) -> bool {
    if cursor < position {
        return false;
    }
    let before = entries.len();
    entries.retain(|e| !(e.server == server && e.scope == scope && e.position == position));
    entries.len() != before
}

/// Reads the ledger (empty when absent).
///
/// # Errors
/// See [`StateDir::read_json`].
pub fn load(state: &StateDir) -> Result<Vec<PendingFlush>, StateError> {
    Ok(state.read_json::<LedgerFile>(FILE)?.unwrap_or_default().entries)
}

/// Read-modify-write under the held state lock; the file is removed when it becomes empty.
///
/// # Errors
/// A read or write failure; the file on disk is then unchanged.
pub fn update<R>(
    state: &StateDir,
    lock: &LockGuard,
    f: impl FnOnce(&mut Vec<PendingFlush>) -> R,
) -> Result<R, StateError> {
    let mut entries = load(state)?;
    let before = entries.clone();
    let result = f(&mut entries);
    if entries != before {
        if entries.is_empty() {
            state.remove(lock, FILE)?;
        } else {
            state.write_json(lock, FILE, &LedgerFile { entries })?;
        }
    }
    Ok(result)
}

/// Records a position under the state lock, waiting at most until `deadline`.
///
/// # Errors
/// [`StateError`] when the lock or the file cannot be used.
pub fn record(
    state: &StateDir,
    deadline: &Deadline,
    server: &str,
    scope: &str,
    position: u64,
    integration: &str,
) -> Result<(), StateError> {
    let lock = state.lock(deadline)?;
    update(state, &lock, |entries| {
        record_in(entries, server, scope, position, integration, now_secs())
    })?;
    Ok(())
}

/// Whether the ledger holds anything (one stat).
#[must_use]
pub fn has_work(state: &StateDir) -> bool {
    state.file(FILE).exists()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn recording_is_monotonic_per_server_and_scope() {
        let mut e = Vec::new();
        assert!(record_in(&mut e, "s1", "a", 5, "codex", 100));
        assert!(!record_in(&mut e, "s1", "a", 3, "codex", 101));
        assert!(!record_in(&mut e, "s1", "a", 5, "codex", 101));
        assert!(record_in(&mut e, "s1", "a", 9, "pi", 102));
        assert!(record_in(&mut e, "s2", "a", 1, "codex", 103));
        assert_eq!(e.len(), 2);
        assert_eq!(
            (e[0].position, e[0].first_seen, e[0].integration.as_str()),
            (9, 100, "pi")
        );
    }

    #[test]
    fn settle_removes_only_the_position_it_flushed() {
        let mut e = Vec::new();
        record_in(&mut e, "s", "a", 5, "pi", 0);
        assert!(
            !settle_in(&mut e, "s", "a", 5, 4),
            "a lagging cursor keeps the entry"
        );
        record_in(&mut e, "s", "a", 8, "pi", 0);
        assert!(
            !settle_in(&mut e, "s", "a", 5, 6),
            "a larger position recorded meanwhile survives"
        );
        assert_eq!(e[0].position, 8);
        assert!(settle_in(&mut e, "s", "a", 8, 8));
        assert!(e.is_empty());
    }

    #[test]
    fn file_exists_only_while_pending() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path().join("st"));
        let d = Deadline::after(Duration::from_secs(2));
        assert!(!has_work(&state));
        record(&state, &d, "http://127.0.0.1:1", "scp", 3, "codex").unwrap();
        assert!(has_work(&state));
        assert_eq!(load(&state).unwrap()[0].position, 3);
        let lock = state.lock(&d).unwrap();
        update(&state, &lock, |e| settle_in(e, "http://127.0.0.1:1", "scp", 3, 3)).unwrap();
        assert!(!has_work(&state));
    }
}
