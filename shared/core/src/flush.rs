//! Flushing, one policy for every host: when a delivered capture is flushed (at once with
//! `flush_on_capture`; Pi's contract also keeps every other capture pending until a boundary or
//! the drainer flushes it), how one flush's calls go (until the cursor reaches the position; a
//! failed call ends it, or, in Pi's immediate flush, is retried like a lagging cursor), what a
//! flush result does to a ledger entry (shared by a host's boundary and the drainer), and a
//! host's boundary flush of the ledger. Never claims a flush it did not see complete, and never
//! removes a ledger entry that gained a larger position meanwhile.

use crate::config::Settings;
use crate::deadline::Deadline;
use crate::emit;
use crate::env::Env;
use crate::host::Integration;
use crate::http::{Transport, failure_for};
use crate::ledger::{self, PendingFlush};
use crate::outcome::{Diagnostic, Failure, Outcome, Stage};
use crate::state::{self, StateDir};
use crate::wire::{FlushRequest, flush_cursor};

/// How one flush is carried out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flush {
    /// Calls at most.
    pub max_calls: u32,
    /// A failed call is retried like a lagging cursor (stopping early only when retrying cannot
    /// help: no model on the Server, or the deadline is gone) instead of ending the flush.
    pub retry_failed: bool,
}

impl Flush {
    /// Flushes `scope` until the processing cursor reaches `position`; returns the cursor.
    ///
    /// # Errors
    /// [`Outcome::FlushIncomplete`] when calls ran out behind `position`,
    /// [`Outcome::InferenceUnavailable`] for a Server without a model, or the classified failure
    /// of a call (the last one when failed calls are retried).
    pub fn run(self, transport: &Transport, scope: &str, position: u64) -> Result<u64, Failure> {
        let _stage = crate::process::enter(Stage::Flush);
        let calls = if self.retry_failed {
            self.max_calls.max(1)
        } else {
            self.max_calls
        };
        let mut last = Failure::new(Outcome::FlushIncomplete);
        for _ in 0..calls {
            if self.retry_failed && transport.deadline().expired() {
                return Err(Failure::new(Outcome::Timeout));
            }
            let cursor = transport
                .post_json("/v1/memory/flush", &FlushRequest { scope_id: scope })
                .map_err(|e| e.failure())
                .and_then(|reply| match reply.status {
                    200 => flush_cursor(&reply.body).ok_or(Failure {
                        outcome: Outcome::InvalidResponse,
                        http_status: Some(200),
                        detail: Some("schema"),
                    }),
                    _ => Err(failure_for(&reply)),
                });
            match cursor {
                Ok(cursor) if cursor >= position => return Ok(cursor),
                Ok(_) => last = Failure::new(Outcome::FlushIncomplete),
                Err(f) if !self.retry_failed || f.outcome == Outcome::InferenceUnavailable => {
                    return Err(f);
                }
                Err(f) => last = f,
            }
        }
        Err(last)
    }
}

/// When a host's delivered captures are flushed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlushPolicy {
    /// Flush right after delivery (`flush_on_capture`).
    pub at_once: bool,
    /// A capture not seen flushed at once stays pending in the ledger until a boundary or the
    /// drainer flushes it.
    pub keep_pending: bool,
    /// The flush right after delivery.
    pub immediate: Flush,
}

impl FlushPolicy {
    /// The policy of `integration` under `settings`.
    #[must_use]
    pub fn of(integration: Integration, settings: &Settings) -> Self {
        let every = integration.flushes_every_capture();
        let at_once = settings.flush_on_capture.value;
        Self {
            at_once,
            keep_pending: at_once || every,
            immediate: Flush {
                max_calls: settings.flush_max_calls.value,
                retry_failed: every,
            },
        }
    }
}

/// What a flush result did to a ledger entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The flush reached the entry's position: it is gone.
    Flushed,
    /// Still pending (lagging, failed, or a larger position arrived meanwhile).
    Pending,
    /// Given up: the Server has no model, or too many attempts.
    Dropped,
}

/// Applies the flush result for `e` to the ledger's entries.
pub fn apply(all: &mut Vec<PendingFlush>, e: &PendingFlush, result: Result<u64, Failure>) -> Applied {
    let same = |x: &PendingFlush| x.server == e.server && x.scope == e.scope;
    match result {
        Ok(cursor) if ledger::settle_in(all, &e.server, &e.scope, e.position, cursor) => Applied::Flushed,
        Ok(_) => Applied::Pending,
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

/// A host's boundary flush: the ledger entries recorded for the configured Server, the host's own
/// first, within `deadline`; any error stops that entry for this boundary. Entries for other
/// Servers are left to the drainer: only the configured Server's credentials are known here.
pub fn boundary(integration: Integration, env: &Env, settings: &Settings, deadline: &Deadline) {
    let component = integration.component();
    let state_problem = |e: &state::StateError| {
        emit::diagnostic(
            &Diagnostic::new(component, Stage::State, Outcome::StateUnavailable).detail(e.detail()),
        );
    };
    let Ok(state) = StateDir::locate(env) else {
        return;
    };
    if !ledger::has_work(&state) {
        return;
    }
    let server = settings.server_url.value.as_str();
    let mut entries: Vec<PendingFlush> = match ledger::load(&state) {
        Ok(all) => all.into_iter().filter(|e| e.server == server).collect(),
        Err(e) => return state_problem(&e),
    };
    // Stable: the host's entries keep their order and go first.
    entries.sort_by_key(|e| e.integration != integration.as_str());
    let transport = match settings.transport(deadline, env) {
        Ok(t) => t,
        Err(name) => {
            return emit::diagnostic(
                &Diagnostic::new(component, Stage::Config, Outcome::ConfigInvalid).setting(name),
            );
        }
    };
    let flush = Flush {
        max_calls: settings.flush_max_calls.value,
        retry_failed: false,
    };
    for e in &entries {
        if deadline.expired() {
            break;
        }
        let result = flush.run(&transport, &e.scope, e.position);
        if let Err(f) = result {
            emit::diagnostic(&f.diagnostic(component, Stage::Flush));
        }
        let lock = match state.lock(&deadline.within(state::HOOK_LOCK_WAIT)) {
            Ok(l) => l,
            Err(err) => return state_problem(&err),
        };
        if let Err(err) = ledger::update(&state, &lock, |all| apply(all, e, result)) {
            state_problem(&err);
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

    #[test]
    fn pi_keeps_every_capture_pending_and_retries_its_immediate_flush() {
        let env = Env::from_pairs(std::iter::empty::<(&str, &str)>());
        for host in Integration::ALL {
            let s = Settings::for_hook(host, &env).unwrap();
            let p = FlushPolicy::of(host, &s);
            assert!(!p.at_once);
            assert_eq!(p.keep_pending, host == Integration::Pi, "{host}");
            assert_eq!(p.immediate.retry_failed, host == Integration::Pi, "{host}");
        }
    }
}
