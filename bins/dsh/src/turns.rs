//! Recall once per user turn: DSH runs `agent/pre-step` before every model step, and each run is a
//! separate process, so the first step of a turn that carries user text is remembered on disk
//! (`dsh-turns.json` in the shared state directory, under the state lock). It stores only a
//! SHA-256 of the session id and two numbers per session, never text, and never blocks past its
//! deadline: when the state is unusable the caller recalls anyway (fail open). The file is
//! rewritten in place (see [`store`]): the claim runs before the recall, on the prompt path.

use std::fmt::Write as _;
use std::fs::OpenOptions;
use std::io;
use std::os::unix::fs::FileExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::fs::OpenOptionsExt;

use powercontext_hooks_core::deadline::Deadline;
use powercontext_hooks_core::lock::{LockGuard, no_follow_flags};
use powercontext_hooks_core::state::{self, StateDir, StateError, now_secs};
use powercontext_hooks_core::workspace::sha256_hex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

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

// The file is read and written by hand, to the letter of the derived forms above (which the tests
// compare it with): the derived code, built for this crate alone, made the hook larger than the
// executable size goal allows.
impl Turns {
    /// The marks from the file's value, as the derived decoding reads them: `sessions` may be
    /// missing (none); each mark is an object with all four fields (others are ignored) or an
    /// array of the four in order. `None` where the derived decoding fails.
    fn from_value(value: &Value) -> Option<Self> {
        let sessions = match value.get("sessions") {
            None => Vec::new(),
            Some(Value::Array(marks)) => marks.iter().map(TurnMark::from_value).collect::<Option<_>>()?,
            Some(_) => return None,
        };
        Some(Self { sessions })
    }

    /// The versioned file's bytes, as [`state::versioned_bytes`] writes them (fields by name).
    fn to_bytes(&self) -> Vec<u8> {
        let mut out = format!("{{\"format\":{},\"sessions\":[", state::FORMAT);
        for (i, m) in self.sessions.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            let _ = write!(
                out,
                "{{\"at\":{},\"session\":{},\"step\":{},\"turn\":{}}}",
                m.at,
                Value::from(m.session.as_str()),
                m.step,
                m.turn
            );
        }
        out.push_str("]}\n");
        out.into_bytes()
    }
}

impl TurnMark {
    fn from_value(value: &Value) -> Option<Self> {
        let field = |name: &str, i: usize| match value {
            Value::Object(fields) => fields.get(name),
            Value::Array(items) if items.len() == 4 => items.get(i),
            _ => None,
        };
        let number = |name: &str, i: usize| field(name, i).and_then(Value::as_u64);
        Some(Self {
            session: field("session", 0)?.as_str()?.to_owned(),
            turn: number("turn", 1)?,
            step: number("step", 2)?,
            at: number("at", 3)?,
        })
    }
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
    let read = match state.read_json_value(FILE) {
        Ok(Some(value)) => Turns::from_value(&value)
            .map(Some)
            .ok_or_else(|| state::set_aside(&state.file(FILE))),
        other => other.map(|_| None),
    };
    let mut turns = match read {
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
        store(state, &guard, &turns)?;
    }
    Ok(claim)
}

/// Writes the marks. An existing file of ours is rewritten in place: a rename over an existing
/// file makes ext4 (`auto_da_alloc`) start the new file's write-back inside `rename(2)`, which
/// cost DSH's first step of every turn from a tenth of a millisecond to several milliseconds on a
/// busy disk. Every reader holds the state lock, as the writer does, so none sees a half-written
/// file; one torn by a crash is read as corrupt, set aside, and the next step recalls (fail open,
/// as for a lost file). Anything else under the name (missing, a link, another user's file) is
/// replaced the usual way, never written through.
fn store(state: &StateDir, _guard: &LockGuard, turns: &Turns) -> Result<(), StateError> {
    let bytes = turns.to_bytes();
    match rewrite_in_place(&state.file(FILE), &bytes) {
        Ok(true) => Ok(()),
        Ok(false) | Err(_) => Ok(state::write_cache(state.path(), FILE, &bytes)?),
    }
}

/// Overwrites the regular, owner-only file at `path` with `bytes` (never empty: a truncation to
/// zero would bring the write-back back). `Ok(false)` when there is no such file to rewrite.
fn rewrite_in_place(path: &std::path::Path, bytes: &[u8]) -> io::Result<bool> {
    if bytes.is_empty() {
        return Ok(false);
    }
    let Ok(file) = OpenOptions::new()
        .write(true)
        .custom_flags(no_follow_flags())
        .open(path)
    else {
        return Ok(false);
    };
    let meta = file.metadata()?;
    // One name only (a hard link's other name would be written through) and owner-only access
    // (a file others may read is replaced by a new 0600 one rather than kept as it is).
    if !meta.file_type().is_file()
        || !state::owned_private(&meta)
        || meta.nlink() != 1
        || meta.mode() & 0o077 != 0
    {
        return Ok(false);
    }
    file.write_all_at(bytes, 0)?;
    let len = bytes.len() as u64;
    if meta.len() != len {
        file.set_len(len)?;
    }
    Ok(true)
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
    fn a_claim_rewrites_the_file_in_place() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path().join("state"));
        let d = Deadline::after(Duration::from_secs(2));
        assert_eq!(claim(&state, &d, "s", 1, 1).unwrap(), Claim::First);
        // Held open, the first file's inode cannot be reused by a replacement.
        let held = std::fs::File::open(state.file(FILE)).unwrap();
        let first = held.metadata().unwrap();
        assert_eq!(first.mode() & 0o777, 0o600);
        // A new turn, a new session (a longer file), then one forgotten mark (a shorter one):
        // the same file each time, never a renamed copy, and every version reads back whole.
        assert_eq!(claim(&state, &d, "s", 2, 1).unwrap(), Claim::First);
        assert_eq!(claim(&state, &d, "t", 1, 1).unwrap(), Claim::First);
        assert_eq!(claim(&state, &d, "s", 10_000_000, 1).unwrap(), Claim::First);
        assert_eq!(claim(&state, &d, "s", 3, 1).unwrap(), Claim::First);
        let after = std::fs::metadata(state.file(FILE)).unwrap();
        assert_eq!(
            after.ino(),
            first.ino(),
            "the turns file was replaced, not rewritten"
        );
        assert_eq!(after.mode() & 0o777, 0o600);
        assert_eq!(claim(&state, &d, "s", 3, 2).unwrap(), Claim::AlreadyRecalled);
        assert_eq!(claim(&state, &d, "t", 1, 2).unwrap(), Claim::AlreadyRecalled);
        let marks: Turns = state.read_json(FILE).unwrap().unwrap();
        assert_eq!(marks.sessions.len(), 2);
        assert_eq!(state::count_temps(state.path()), 0);
    }

    #[test]
    fn only_a_regular_owner_only_file_is_rewritten_in_place() {
        use std::os::unix::fs::PermissionsExt;
        let tmp = tempfile::tempdir().unwrap();
        let before = "{\"format\":1,\"sessions\":[]}\n";
        let target = tmp.path().join("elsewhere.json");
        std::fs::write(&target, before).unwrap();
        let link = tmp.path().join("link.json");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        assert!(!rewrite_in_place(&link, b"{}\n").unwrap_or(false));
        assert_eq!(std::fs::read_to_string(&target).unwrap(), before);
        let loose = tmp.path().join("loose.json");
        std::fs::write(&loose, before).unwrap();
        std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert!(!rewrite_in_place(&loose, b"{}\n").unwrap());
        assert_eq!(std::fs::read_to_string(&loose).unwrap(), before);
        assert!(!rewrite_in_place(&tmp.path().join("missing.json"), b"{}\n").unwrap());
        let readable = tmp.path().join("readable.json");
        std::fs::write(&readable, before).unwrap();
        std::fs::set_permissions(&readable, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(!rewrite_in_place(&readable, b"{}\n").unwrap());
        let other = tmp.path().join("other.json");
        std::fs::write(&other, before).unwrap();
        std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o600)).unwrap();
        let linked = tmp.path().join("linked.json");
        std::fs::hard_link(&other, &linked).unwrap();
        assert!(!rewrite_in_place(&linked, b"{}\n").unwrap());
        assert_eq!(std::fs::read_to_string(&other).unwrap(), before);
        let ours = tmp.path().join("ours.json");
        std::fs::write(&ours, before).unwrap();
        std::fs::set_permissions(&ours, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(rewrite_in_place(&ours, b"{}\n").unwrap());
        assert_eq!(std::fs::read_to_string(&ours).unwrap(), "{}\n");
    }

    #[test]
    fn the_file_is_written_as_the_derived_form() {
        let mut turns = Turns::default();
        assert_eq!(turns.to_bytes(), state::versioned_bytes(&turns).unwrap());
        for (i, session) in ["a", "quote \" and \\ and \u{1} and é"].into_iter().enumerate() {
            let i = i as u64;
            turns.sessions.push(TurnMark {
                session: session.into(),
                turn: u64::MAX - i,
                step: i,
                at: 1_700_000_000 + i,
            });
        }
        assert_eq!(turns.to_bytes(), state::versioned_bytes(&turns).unwrap());
    }

    #[test]
    fn the_file_is_read_as_the_derived_form() {
        let cases = [
            r#"{"format":1}"#,
            r#"{"format":1,"sessions":[]}"#,
            r#"{"format":1,"sessions":[{"session":"s","turn":1,"step":2,"at":3,"extra":[]}]}"#,
            r#"{"format":1,"sessions":[["s",1,2,3]]}"#,
            r#"{"format":1,"sessions":[["s",1,2]]}"#,
            r#"{"format":1,"sessions":[["s",1,2,3,4]]}"#,
            r#"{"format":1,"sessions":[{"session":"s","turn":1,"step":2}]}"#,
            r#"{"format":1,"sessions":[{"session":5,"turn":1,"step":2,"at":3}]}"#,
            r#"{"format":1,"sessions":[{"session":"s","turn":-1,"step":2,"at":3}]}"#,
            r#"{"format":1,"sessions":[{"session":"s","turn":1.0,"step":2,"at":3}]}"#,
            r#"{"format":1,"sessions":[{"session":"s","turn":"1","step":2,"at":3}]}"#,
            r#"{"format":1,"sessions":null}"#,
            r#"{"format":1,"sessions":{}}"#,
            r#"{"format":1,"sessions":[null]}"#,
        ];
        for case in cases {
            let value: Value = serde_json::from_str(case).unwrap();
            let derived = serde_json::from_value::<Turns>(value.clone()).ok();
            let by_hand = Turns::from_value(&value);
            assert_eq!(by_hand.map(|t| t.sessions), derived.map(|t| t.sessions), "{case}");
        }
    }

    #[test]
    fn a_mark_the_derived_form_rejects_sets_the_file_aside() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        std::fs::write(
            state.file(FILE),
            r#"{"format":1,"sessions":[{"session":"x","turn":1}]}"#,
        )
        .unwrap();
        let d = Deadline::after(Duration::from_secs(2));
        assert_eq!(claim(&state, &d, "s", 1, 1).unwrap(), Claim::First);
        assert!(tmp.path().join(format!("{FILE}.corrupt")).exists());
        assert_eq!(claim(&state, &d, "s", 1, 2).unwrap(), Claim::AlreadyRecalled);
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
