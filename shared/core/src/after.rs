//! The work a hook run leaves for after its answer, as one value: the pipeline collects it while
//! it runs ([`crate::turn::Turn`] holds it), returns it with the answer, and the one step that
//! writes answers runs it once the answer is out ([`crate::protocol::deliver`]). Never runs
//! anything before the answer, never writes stdout, and holds nothing process-wide: what is not
//! returned is not done (the capture it carries is already safe in the spool).
//!
//! The steps, in the order they run:
//!
//! 1. the bootstrap receipt of a package the answer carried: `injected` when the answer was
//!    written, `failed` when it was not;
//! 2. the run's change to its session record (what was injected, a boundary handled), and the
//!    mark of a session-start context a host echoes into its next prompt, both only for an answer
//!    that was written;
//! 3. other work a host leaves for after its answer (OpenCode pins a new session's scope);
//! 4. the capture: handed to the detached drainer when it was written ahead, else delivered by
//!    this process within what is left of its budget.

use crate::bootstrap::{self, Held};
use crate::capture;
use crate::drain;
use crate::emit;
use crate::flush::FlushPolicy;
use crate::http::Transport;
use crate::journal;
use crate::ledger;
use crate::outcome::{Diagnostic, Outcome, Stage};
use crate::session::{Change, Delivered, SessionFile};
use crate::spool::{self, SpooledCapture, WriteAhead};
use crate::state::{self, StateDir};

/// Other work for after the answer: what need not hold the host's answer, and must not be able
/// to cost it (a slow request past the watchdog).
pub type Later = Box<dyn FnOnce() + Send>;

/// What a hook run does once its answer is out (see the module doc for the order).
#[derive(Default)]
#[must_use = "the work after the answer is only done when the answer step runs it"]
pub struct AfterAnswer {
    package: Option<Held>,
    change: Option<Change>,
    echo: Option<(SessionFile, String)>,
    later: Vec<Later>,
    capture: Option<Deferred>,
}

/// What running the work after the answer did that the rest of the run needs to know.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Done {
    /// The capture was handed to a detached drainer (started or found): nothing more to start.
    HandedOff,
    /// Anything else.
    Finished,
}

impl AfterAnswer {
    /// Nothing to do after the answer.
    pub fn none() -> Self {
        Self::default()
    }

    /// Whether there is nothing to do.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.package.is_none()
            && self.change.is_none()
            && self.echo.is_none()
            && self.later.is_empty()
            && self.capture.is_none()
    }

    /// The bootstrap package the answer carries: its receipt is settled after the answer.
    pub fn settle_package(&mut self, held: Held) {
        self.package = Some(held);
    }

    /// The run's change to its session record (at most one: the one for the answer written).
    pub fn record_change(&mut self, change: Change) {
        self.change = Some(change);
    }

    /// The mark of the session-start context this run answers with, recorded in `file` only if
    /// the answer is written.
    pub fn record_echo(&mut self, file: SessionFile, mark: String) {
        self.echo = Some((file, mark));
    }

    /// Runs `work` after the answer (after the session record, before the capture).
    pub fn later(&mut self, work: impl FnOnce() + Send + 'static) {
        self.later.push(Box::new(work));
    }

    /// The capture held from the prompt path.
    pub(crate) fn deliver_capture(&mut self, deferred: Deferred) {
        self.capture = Some(deferred);
    }

    /// Runs every step in order, `written` saying whether the answer reached stdout.
    pub fn run(self, written: bool) -> Done {
        let Self {
            package,
            change,
            echo,
            later,
            capture,
        } = self;
        let delivered = package.map(|held| settle_receipt(held, written));
        if let Some(change) = change {
            change.file.clone().apply(change, written, delivered.as_ref());
        }
        if let Some((file, mark)) = echo.filter(|_| written) {
            file.record_start_echo(mark);
        }
        for work in later {
            work();
        }
        capture.map_or(Done::Finished, Deferred::run)
    }
}

/// Settles a package's receipt: `injected` when the answer carrying it was written, `failed` when
/// it was not; what the session record then keeps of it.
fn settle_receipt(held: Held, written: bool) -> Delivered {
    let recorded = match bootstrap::record(&held.transport, &held.scope, &held.receipt_id, written) {
        Ok(()) => true,
        Err(f) => {
            emit::diagnostic(&f.diagnostic(held.component, Stage::Bootstrap));
            false
        }
    };
    Delivered {
        scope: held.scope,
        receipt_id: (written && recorded).then_some(held.receipt_id),
        items: held.items,
    }
}

/// A capture held from the prompt path until the answer is out.
pub(crate) struct Deferred {
    pub(crate) component: &'static str,
    /// The claimed spool entry, when one could be written.
    pub(crate) ahead: Option<WriteAhead>,
    /// The capture with its scope query (a pinned scope when the Server resolved it this turn).
    pub(crate) entry: SpooledCapture,
    pub(crate) transport: Transport,
    pub(crate) flush: FlushPolicy,
    pub(crate) too_large: bool,
    /// Hand the entry to the detached drainer instead of delivering it here.
    pub(crate) background: bool,
    pub(crate) state: Option<StateDir>,
}

impl Deferred {
    /// A capture written ahead is released and handed to the detached drainer, which resolves its
    /// scope and delivers it, in order per session, exactly once (the `source_id` makes a replay a
    /// dedupe). With background draining off, or when the capture could not be spooled, this
    /// process delivers it itself, within what is left of its budget, with a freshly resolved
    /// scope.
    fn run(mut self) -> Done {
        if self.background
            && let Some(state) = self.state.clone()
            && let Some(ahead) = self.ahead.take()
        {
            // Released before the drainer is looked for, so whichever drainer runs sees it.
            drop(ahead);
            journal::note_queued();
            drain::hand_off(&state);
            return Done::HandedOff;
        }
        self.deliver_here();
        Done::Finished
    }

    fn deliver_here(mut self) {
        let component = self.component;
        let scope = match self.entry.query.resolve(&self.transport) {
            Ok(scope) => scope,
            Err(f) => {
                emit::diagnostic(&f.diagnostic(component, Stage::Scope));
                self.settle(!drain::is_permanent_rejection(&f));
                return;
            }
        };
        if let Some(ahead) = self.ahead.as_mut()
            && let Err(e) = ahead.pin_scope(&scope)
        {
            emit::diagnostic(
                &Diagnostic::new(component, Stage::State, Outcome::StateUnavailable).detail(e.detail()),
            );
        }
        let position = match capture::send(&self.transport, &self.entry.request(&scope)) {
            Ok(position) => {
                journal::note_delivered();
                self.settle(false);
                position
            }
            Err(f) => {
                emit::diagnostic(&f.diagnostic(component, Stage::Capture));
                self.settle(!drain::is_permanent_rejection(&f));
                return;
            }
        };
        if self.flush_now(&scope, position) {
            self.keep_pending(&scope, position);
        }
    }

    /// The flush the policy asks for right after a delivery; whether the position is still to be
    /// kept pending in the ledger.
    fn flush_now(&self, scope: &str, position: u64) -> bool {
        if self.flush.at_once {
            match self.flush.immediate.run(&self.transport, scope, position) {
                Ok(_) => return false,
                Err(f) => {
                    emit::diagnostic(&f.diagnostic(self.component, Stage::Flush));
                    // A Server without a model will not flush later either.
                    return f.outcome != Outcome::InferenceUnavailable;
                }
            }
        }
        self.entry.flush
    }

    /// Pending until a flush (a boundary, the drainer) sees it through.
    fn keep_pending(&self, scope: &str, position: u64) {
        let wait = self.transport.deadline().within(state::HOOK_LOCK_WAIT);
        let recorded = self
            .state
            .as_ref()
            .map_or(Err(state::StateError::NoLocation), |st| {
                ledger::record(
                    st,
                    &wait,
                    &self.entry.server,
                    scope,
                    position,
                    &self.entry.integration,
                )
            });
        if let Err(e) = recorded {
            emit::diagnostic(
                &Diagnostic::new(self.component, Stage::State, Outcome::StateUnavailable).detail(e.detail()),
            );
        }
    }

    fn settle(&mut self, keep: bool) {
        let ahead = self.ahead.take();
        if keep {
            spool::report_left(self.component, ahead, self.too_large);
        } else if let Some(ahead) = ahead {
            ahead.retire();
        }
    }
}
