//! How a hook process starts and stops: the fail-open panic hook, the watchdog that ends the process
//! at its budget whatever is blocking, and the capped stdin read. It never decides what to inject.

use std::io::Read;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::base::Defaults;
use crate::emit;
use crate::outcome::{Diagnostic, Outcome, Stage};

/// Largest stdin payload read (a 200,000-character prompt JSON-escaped fits comfortably).
pub const MAX_STDIN_BYTES: u64 = 8 * 1024 * 1024;

/// Extra time the watchdog grants past the budget before ending the process.
pub const WATCHDOG_GRACE: Duration = Duration::from_millis(50);

static WATCHDOG_AT_MS: AtomicU64 = AtomicU64::new(u64::MAX);

/// The component the watchdog reports for (set by [`begin`]).
static COMPONENT: OnceLock<&'static str> = OnceLock::new();

/// The stages in progress, one bit each (see [`stage_bit`]): what a watchdog exit interrupted.
static ACTIVE_STAGES: AtomicU32 = AtomicU32::new(0);

/// Pipeline order: a watchdog exit names the earliest stage still in progress.
const STAGE_ORDER: [Stage; 9] = [
    Stage::Config,
    Stage::Payload,
    Stage::Scope,
    Stage::Bootstrap,
    Stage::Prepare,
    Stage::Capture,
    Stage::Flush,
    Stage::State,
    Stage::Process,
];

fn stage_bit(stage: Stage) -> u32 {
    let index = STAGE_ORDER
        .iter()
        .position(|s| *s == stage)
        .unwrap_or(STAGE_ORDER.len() - 1);
    1 << index
}

/// Marks a stage as in progress until the guard is dropped, so a watchdog exit can say what it
/// interrupted. Cheap: one atomic operation each way.
#[must_use = "the stage ends when the guard is dropped"]
pub struct StageGuard(u32);

impl Drop for StageGuard {
    fn drop(&mut self) {
        ACTIVE_STAGES.fetch_and(!self.0, Ordering::SeqCst);
    }
}

/// Enters `stage` (see [`StageGuard`]).
pub fn enter(stage: Stage) -> StageGuard {
    let bit = stage_bit(stage);
    ACTIVE_STAGES.fetch_or(bit, Ordering::SeqCst);
    StageGuard(bit)
}

/// The earliest stage in progress, or [`Stage::Process`] when none is marked.
#[must_use]
pub fn interrupted_stage() -> Stage {
    let active = ACTIVE_STAGES.load(Ordering::SeqCst);
    STAGE_ORDER
        .into_iter()
        .find(|s| active & stage_bit(*s) != 0)
        .unwrap_or(Stage::Process)
}

/// The first thing a hook process does, before it reads any configuration or stdin: the fail-open
/// panic hook, and the watchdog armed at the default budget, so that nothing (a config path that is
/// a FIFO, a host that never closes stdin) can hold the host past it. A configured budget moves the
/// watchdog later (or earlier) with [`arm_watchdog`]; the configuration read that follows is marked as its own stage.
pub fn begin(component: &'static str, start: Instant) {
    let _ = COMPONENT.set(component);
    install_panic_hook(component);
    arm_watchdog(start, Defaults::BUDGET);
}

/// Installs the fail-open panic hook: one content-free `internal_error` line on stderr, nothing on
/// stdout, exit code 0. With `panic = "abort"` the hook runs before the abort and pre-empts it.
pub fn install_panic_hook(component: &'static str) {
    std::panic::set_hook(Box::new(move |_info| {
        // The panic message may quote data (a prompt, a body): only the outcome is reported.
        emit::diagnostic(&Diagnostic::new(
            component,
            Stage::Process,
            Outcome::InternalError,
        ));
        emit::exit_quietly();
    }));
}

/// Starts (or moves) the watchdog: at `start + budget + grace` the process exits 0, whatever any
/// thread is blocked on (a host that never closes stdin, a slow disk, a stuck lock).
pub fn arm_watchdog(start: Instant, budget: Duration) {
    let at = (budget + WATCHDOG_GRACE)
        .as_millis()
        .min(u128::from(u64::MAX - 1));
    let previous = WATCHDOG_AT_MS.swap(u64::try_from(at).unwrap_or(u64::MAX - 1), Ordering::SeqCst);
    if previous == u64::MAX {
        // A small stack: the watchdog only sleeps and compares, and under a tight address-space
        // limit (`ulimit -v`) a default 2 MiB stack may not be mappable at all. Without a thread
        // there is no watchdog, but the hook still runs (and spools) rather than dying here.
        let spawned = std::thread::Builder::new()
            .stack_size(WATCHDOG_STACK)
            .spawn(move || {
                let mut frozen = false;
                loop {
                    let at = Duration::from_millis(WATCHDOG_AT_MS.load(Ordering::SeqCst));
                    let elapsed = start.elapsed();
                    if elapsed >= at {
                        watchdog_exit(frozen);
                    }
                    // Woken early when the budget moves (see below).
                    let nap = (at - elapsed).min(Duration::from_millis(250));
                    std::thread::park_timeout(nap);
                    // Woken far later than asked: the whole process was stopped (SIGSTOP) meanwhile.
                    frozen |= start.elapsed() > elapsed + nap + FROZEN_SLACK;
                }
            });
        if let Ok(handle) = spawned {
            let _ = WATCHDOG.set(handle.thread().clone());
        }
    } else if let Some(thread) = WATCHDOG.get() {
        // A budget moved earlier than the watchdog's current sleep must be seen at once.
        thread.unpark();
    }
}

/// The watchdog thread, to wake when its deadline moves.
static WATCHDOG: OnceLock<std::thread::Thread> = OnceLock::new();

/// The watchdog thread's stack.
const WATCHDOG_STACK: usize = 64 * 1024;

/// A watchdog that slept this much longer than it asked was stopped with its process.
const FROZEN_SLACK: Duration = Duration::from_secs(1);

/// Run by the watchdog before it ends a process that was stopped at some point in its life.
static ON_FROZEN: OnceLock<fn()> = OnceLock::new();

/// Sets what the watchdog does before ending a process that was stopped (SIGSTOP) during its run:
/// the background drainer starts its successor there, so work handed to it is not stranded.
pub fn on_frozen_watchdog(f: fn()) {
    let _ = ON_FROZEN.set(f);
}

/// The watchdog's end: one content-free `timeout` line naming the interrupted stage, then exit 0.
/// Neither step can block it (see [`emit::last_words`]).
fn watchdog_exit(frozen: bool) -> ! {
    if frozen && let Some(f) = ON_FROZEN.get() {
        f();
    }
    let component = COMPONENT.get().copied().unwrap_or("powercontext.hook");
    let line = Diagnostic::new(component, interrupted_stage(), Outcome::Timeout).detail("watchdog");
    emit::last_words(&line);
    emit::exit_quietly()
}

/// Why stdin could not be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdinProblem {
    /// More than [`MAX_STDIN_BYTES`].
    TooLarge,
    /// A read error.
    Unreadable,
}

/// Reads stdin up to the cap.
///
/// # Errors
/// [`StdinProblem`] when the payload is too large or cannot be read.
pub fn read_stdin() -> Result<Vec<u8>, StdinProblem> {
    let mut buf = Vec::with_capacity(16 * 1024);
    let mut handle = std::io::stdin().lock().take(MAX_STDIN_BYTES + 1);
    handle
        .read_to_end(&mut buf)
        .map_err(|_| StdinProblem::Unreadable)?;
    if buf.len() as u64 > MAX_STDIN_BYTES {
        return Err(StdinProblem::TooLarge);
    }
    Ok(buf)
}

/// Reads stdin up to the cap; when it cannot be used, reports `skipped` (`stdin_too_large` or
/// `stdin_unreadable`) for `component` and returns `None`.
#[must_use]
// Once per process: kept out of line, so a host's speed-optimized code calls this size-optimized copy.
#[inline(never)]
pub fn read_payload(component: &str) -> Option<Vec<u8>> {
    let _stage = enter(Stage::Payload);
    match read_stdin() {
        Ok(b) => Some(b),
        Err(p) => {
            let d = Diagnostic::new(component, Stage::Payload, Outcome::Skipped);
            emit::diagnostic(&if p == StdinProblem::TooLarge {
                d.detail("stdin_too_large")
            } else {
                d.detail("stdin_unreadable")
            });
            None
        }
    }
}
