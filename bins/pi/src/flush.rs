//! Pi's two flush paths (`host-contracts.md` §7.5): the optional immediate flush after a capture,
//! whose per-call errors are retried, and the boundary flush of the shared on-disk ledger, where
//! any error stops that scope for this boundary. Never claims a flush it did not see complete, and
//! never removes a ledger entry that gained a larger position meanwhile.

use powercontext_hooks_core::capture;
use powercontext_hooks_core::config::Settings;
use powercontext_hooks_core::deadline::Deadline;
use powercontext_hooks_core::emit;
use powercontext_hooks_core::env::Env;
use powercontext_hooks_core::http::Transport;
use powercontext_hooks_core::ledger::{self, PendingFlush};
use powercontext_hooks_core::outcome::{Diagnostic, Failure, Outcome, Stage};
use powercontext_hooks_core::state::{self, StateDir};
use powercontext_hooks_core::turn::Turn;

use crate::{COMPONENT, HOST};

/// Upstream bounds every boundary flush by one second, whatever the HTTP budget.
pub const BOUNDARY_BUDGET: std::time::Duration = std::time::Duration::from_secs(1);

/// The immediate flush: up to `max_calls` calls, a failed call is retried like a lagging cursor;
/// done once `current_cursor ≥ position`. Stops early only when retrying cannot help (no model on
/// the Server, or the deadline is gone).
///
/// # Errors
/// The last failure, or [`Outcome::FlushIncomplete`] when every call answered behind `position`.
pub fn immediate(transport: &Transport, scope: &str, position: u64, max_calls: u32) -> Result<u64, Failure> {
    capture::flush_retrying(transport, scope, position, max_calls)
}

/// What one boundary flush did (counts only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BoundaryReport {
    /// Entries whose flush completed and were removed.
    pub flushed: usize,
    /// Entries still pending afterwards (failed, lagging, not reached before the deadline, or
    /// grown meanwhile).
    pub pending: usize,
    /// Entries dropped: the Server has no model, or too many attempts.
    pub dropped: usize,
}

fn report(stage: Stage, failure: Failure) {
    emit::diagnostic(&failure.diagnostic(COMPONENT, stage));
}

fn state_problem(e: &state::StateError) {
    emit::diagnostic(&Diagnostic::new(COMPONENT, Stage::State, Outcome::StateUnavailable).detail(e.detail()));
}

/// Flushes the ledger entries recorded for the configured Server, Pi's own first, within
/// `deadline`. Entries for other Servers are left to the drainer: only the configured Server's
/// credentials are known here.
#[must_use]
pub fn boundary(env: &Env, settings: &Settings, deadline: &Deadline) -> BoundaryReport {
    let mut out = BoundaryReport::default();
    let Ok(state) = StateDir::locate(env) else {
        return out;
    };
    if !ledger::has_work(&state) {
        return out;
    }
    let server = settings.server_url.value.as_str().to_owned();
    let mut entries: Vec<PendingFlush> = match ledger::load(&state) {
        Ok(all) => all.into_iter().filter(|e| e.server == server).collect(),
        Err(e) => {
            state_problem(&e);
            return out;
        }
    };
    // Stable: Pi's entries keep their order and go first.
    entries.sort_by_key(|e| e.integration != HOST.as_str());
    let Some(turn) = Turn::open(HOST, env, settings, deadline) else {
        out.pending = entries.len();
        return out;
    };
    let transport = &turn.transport;
    let max_calls = settings.flush_max_calls.value;
    for (i, e) in entries.iter().enumerate() {
        if deadline.expired() {
            out.pending += entries.len() - i;
            break;
        }
        let result = capture::flush_through(transport, &e.scope, e.position, max_calls);
        if let Err(f) = result {
            report(Stage::Flush, f);
        }
        let lock = match state.lock(&deadline.within(state::HOOK_LOCK_WAIT)) {
            Ok(l) => l,
            Err(err) => {
                state_problem(&err);
                out.pending += entries.len() - i;
                break;
            }
        };
        let applied = ledger::update(&state, &lock, |all| apply(all, e, result))
            .inspect_err(state_problem)
            .unwrap_or(Applied::Pending);
        match applied {
            Applied::Flushed => out.flushed += 1,
            Applied::Pending => out.pending += 1,
            Applied::Dropped => out.dropped += 1,
        }
    }
    out
}

/// The ledger change for one entry's flush result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Applied {
    Flushed,
    Pending,
    Dropped,
}

fn apply(all: &mut Vec<PendingFlush>, e: &PendingFlush, result: Result<u64, Failure>) -> Applied {
    let same = |x: &PendingFlush| x.server == e.server && x.scope == e.scope;
    match result {
        Ok(cursor) => {
            if ledger::settle_in(all, &e.server, &e.scope, e.position, cursor) {
                Applied::Flushed
            } else {
                Applied::Pending
            }
        }
        // A Server without a model never flushes: the Sources are safe on it, so the reminder
        // goes (unless a larger position arrived meanwhile, which keeps its own chance).
        Err(f) if f.outcome == Outcome::InferenceUnavailable => {
            let before = all.len();
            all.retain(|x| !(same(x) && x.position == e.position));
            if all.len() < before {
                Applied::Dropped
            } else {
                Applied::Pending
            }
        }
        Err(_) => {
            let Some(x) = all.iter_mut().find(|x| same(x)) else {
                return Applied::Pending;
            };
            x.attempts = x.attempts.saturating_add(1);
            if x.attempts >= ledger::MAX_ATTEMPTS {
                all.retain(|x| !same(x));
                return Applied::Dropped;
            }
            Applied::Pending
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(position: u64) -> PendingFlush {
        PendingFlush {
            server: "s".into(),
            scope: "a".into(),
            position,
            first_seen: 0,
            attempts: 0,
            integration: "pi".into(),
        }
    }

    #[test]
    fn success_settles_only_the_flushed_position() {
        let mut all = vec![entry(5)];
        assert_eq!(apply(&mut all, &entry(5), Ok(4)), Applied::Pending);
        assert_eq!(apply(&mut all, &entry(5), Ok(5)), Applied::Flushed);
        assert!(all.is_empty());
        let mut grown = vec![entry(9)];
        assert_eq!(apply(&mut grown, &entry(5), Ok(6)), Applied::Pending);
        assert_eq!(grown[0].position, 9);
    }

    #[test]
    fn failures_count_attempts_and_no_model_drops() {
        let mut all = vec![entry(5)];
        let down = Failure::new(Outcome::ServerUnavailable);
        assert_eq!(apply(&mut all, &entry(5), Err(down)), Applied::Pending);
        assert_eq!(all[0].attempts, 1);
        all[0].attempts = ledger::MAX_ATTEMPTS - 1;
        assert_eq!(apply(&mut all, &entry(5), Err(down)), Applied::Dropped);
        assert!(all.is_empty());
        let no_model = Failure {
            outcome: Outcome::InferenceUnavailable,
            http_status: Some(503),
            detail: None,
        };
        let mut grown = vec![entry(7)];
        assert_eq!(apply(&mut grown, &entry(5), Err(no_model)), Applied::Pending);
        assert_eq!(apply(&mut grown, &entry(7), Err(no_model)), Applied::Dropped);
        assert!(grown.is_empty());
    }
}
