//! Recall once per user turn: DSH runs `agent/pre-step` before every model step, and each run is a
//! separate process, so the first step of a turn that carries user text is remembered on disk
//! (`dsh-turns.json` in the shared state directory, under the state lock). It stores only a
//! SHA-256 of the session id and two numbers per session, never text, and never blocks past its
//! deadline: when the state is unusable the caller recalls anyway (fail open).

use powercontext_hooks_core::deadline::Deadline;
use powercontext_hooks_core::state::{StateDir, StateError, now_secs};
use powercontext_hooks_core::workspace::sha256_hex;
use serde::{Deserialize, Serialize};

/// The state file.
pub const FILE: &str = "dsh-turns.json";

/// Sessions remembered; the least recently used is forgotten first.
pub const MAX_SESSIONS: usize = 256;

/// The last recalled turn of one session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnMark {
    /// SHA-256 hex of the session id.
    pub session: String,
    /// The turn that was recalled.
    pub turn: u64,
    /// The step of that turn that recalled.
    pub step: u64,
    /// When (seconds since the epoch), for eviction.
    pub at: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Turns {
    #[serde(default)]
    sessions: Vec<TurnMark>,
}

/// Whether this step may recall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// The first step of this turn with user text: recall (now recorded).
    First,
    /// An earlier step of the same turn already recalled; its context is in the conversation.
    AlreadyRecalled,
}

/// The session key stored on disk.
#[must_use]
pub fn session_key(session_id: &str) -> String {
    sha256_hex(session_id.as_bytes())
}

/// Decides and records in memory. A later step (greater step number) of the recorded turn is
/// [`Claim::AlreadyRecalled`]; anything else (another turn, the same or an earlier step — a
/// retried step or a restarted counter) recalls and becomes the new mark.
pub fn decide(marks: &mut Vec<TurnMark>, key: &str, turn: u64, step: u64, now: u64) -> Claim {
    let mark = TurnMark {
        session: key.to_owned(),
        turn,
        step,
        at: now,
    };
    if let Some(m) = marks.iter_mut().find(|m| m.session == key) {
        if m.turn == turn && step > m.step {
            return Claim::AlreadyRecalled;
        }
        *m = mark;
        return Claim::First;
    }
    marks.push(mark);
    while marks.len() > MAX_SESSIONS {
        let oldest = marks
            .iter()
            .enumerate()
            .min_by_key(|(_, m)| m.at)
            .map_or(0, |(i, _)| i);
        marks.remove(oldest);
    }
    Claim::First
}

/// Claims the recall of `turn` for `session_id` at `step`, under the state lock within `deadline`.
///
/// # Errors
/// The [`StateError`] when the state directory cannot be used (the caller then recalls).
pub fn claim(
    state: &StateDir,
    deadline: &Deadline,
    session_id: &str,
    turn: u64,
    step: u64,
) -> Result<Claim, StateError> {
    let guard = state.lock(deadline)?;
    let mut turns = match state.read_json::<Turns>(FILE) {
        Ok(t) => t.unwrap_or_default(),
        // Moved aside by the reader: start over rather than recall on every step from now on.
        Err(StateError::Corrupt) => Turns::default(),
        Err(e) => return Err(e),
    };
    let claim = decide(
        &mut turns.sessions,
        &session_key(session_id),
        turn,
        step,
        now_secs(),
    );
    if claim == Claim::First {
        state.write_cache_json(&guard, FILE, &turns)?;
    }
    Ok(claim)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn later_steps_of_a_turn_do_not_recall() {
        let mut m = Vec::new();
        assert_eq!(decide(&mut m, "a", 1, 1, 10), Claim::First);
        assert_eq!(decide(&mut m, "a", 1, 2, 11), Claim::AlreadyRecalled);
        assert_eq!(decide(&mut m, "a", 1, 5, 12), Claim::AlreadyRecalled);
        // Another session is independent.
        assert_eq!(decide(&mut m, "b", 1, 2, 12), Claim::First);
        // The next turn recalls again, even when its first user text arrives at step 3.
        assert_eq!(decide(&mut m, "a", 2, 3, 13), Claim::First);
        assert_eq!(decide(&mut m, "a", 2, 4, 14), Claim::AlreadyRecalled);
        // The same step again (a retried step) or a restarted counter recalls.
        assert_eq!(decide(&mut m, "a", 2, 3, 15), Claim::First);
        assert_eq!(decide(&mut m, "a", 1, 1, 16), Claim::First);
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn the_least_recent_session_is_forgotten() {
        let mut m = Vec::new();
        for i in 0..=MAX_SESSIONS {
            let key = format!("s{i}");
            let at = if i == 7 { 0 } else { 100 + i as u64 };
            assert_eq!(decide(&mut m, &key, 1, 1, at), Claim::First);
        }
        assert_eq!(m.len(), MAX_SESSIONS);
        assert!(m.iter().all(|x| x.session != "s7"));
    }

    #[test]
    fn claims_persist_across_processes_and_store_no_session_id() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path().join("state"));
        let d = Deadline::after(Duration::from_secs(2));
        assert_eq!(claim(&state, &d, "session-xyz", 4, 1).unwrap(), Claim::First);
        assert_eq!(
            claim(&state, &d, "session-xyz", 4, 2).unwrap(),
            Claim::AlreadyRecalled
        );
        let text = std::fs::read_to_string(state.file(FILE)).unwrap();
        assert!(!text.contains("session-xyz"), "{text}");
        assert!(text.contains(&session_key("session-xyz")));
    }

    #[test]
    fn a_corrupt_file_starts_over() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        std::fs::write(state.file(FILE), "{garbage").unwrap();
        let d = Deadline::after(Duration::from_secs(2));
        assert_eq!(claim(&state, &d, "s", 1, 1).unwrap(), Claim::First);
        assert_eq!(claim(&state, &d, "s", 1, 2).unwrap(), Claim::AlreadyRecalled);
    }
}
