//! Draining local state: replays spooled captures oldest first, in order per session (original
//! `source_id`s, so the Server's dedupe makes replays exactly-once), each to a scope the Server
//! resolves for it then (pinned in the entry before the request), and flushes pending ledger
//! entries, one drainer at a time, within a budget. Also starts the detached background drainer:
//! while the prompt is on the network for a capture written ahead (it drains once the hook has
//! exited), after the answer when that start did not happen, after a pause for work left by
//! failures. Its requests never run on the prompt's critical path (the early start costs the
//! prompt one thread), it never makes the host wait on its pipes, and it takes credentials only
//! from the environment and config it inherited (never from disk).
//!
//! A background drainer lingers after its drain (see `linger`): the captures of the prompts that
//! follow are handed to it, so a burst of prompts starts one process, and a hook of another
//! environment (another Server or token) never counts on it.
//!
//! Hand-over without a lost wake-up: a hook releases its entry, then looks at the drain lock; a
//! free lock means it starts a drainer, a held one means the holder, whoever it is (a background
//! drainer, `flush`, the hidden `drain`: all go through [`drain`]), looks at the spool again after
//! releasing its lock, and takes on any entry it can claim that it did not leave behind on
//! purpose (Server down, unconfigured, newer format, outside its scope), or, out of budget,
//! starts a drainer for it. No holder ever leaves without doing one or the other. A background
//! drainer's pass that found its Server unreachable leaves what came meanwhile to its lingering
//! retry after the pause; a drainer that does not linger (its tries used up, or the linger lock
//! another's) and every lingering one before it leaves take a last look that passes over
//! everything, unless a running drainer of the same environment lingers and takes it on.
//!
//! A failure is a verdict on the Server ("down": its other entries wait for a later drain) only
//! when this process was running while it happened. A call that failed more than
//! [`STALL_SLACK`] after the time it was allowed had elapsed means the drainer itself was stopped
//! (SIGSTOP, a suspended terminal job) or starved: that entry is passed again, and, when the budget
//! is spent, handed to a successor drainer, never left to wait for the next prompt. A drainer whose
//! watchdog fires after such a stop does the same before it exits (see [`background_main`]).
//!
//! Every Server answer (a delivery or a final rejection) is recorded against the spool's sequence
//! number (see [`spool::record_answered`]): the age limit only ever drops an entry its Server
//! answered after, never on the wall clock alone.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant, SystemTime};

use serde::{Deserialize, Serialize};

use crate::capture;
use crate::config::{ConfigError, Settings};
use crate::deadline::Deadline;
use crate::env::Env;
use crate::flush::{self, Applied, Flush};
use crate::host::Integration;
use crate::http::Transport;
use crate::ledger;
use crate::lock::{self, LockError};
use crate::outcome::{Failure, Outcome};
use crate::process;
use crate::spool::{self, Claim, SpoolLimits};
use crate::state::{StateDir, StateError, now_secs};

/// Held by the drainer for its whole run: one drainer at a time.
pub const DRAIN_LOCK: &str = "drain.lock";
/// The last drain's content-free summary (`status` shows it).
pub const STATUS_FILE: &str = "drain.json";
/// The hidden argument that turns a hook executable into the background drainer.
pub const DRAIN_ARG: &str = "--powercontext-drain";
/// Budget of a background drainer (its watchdog ends it shortly after).
pub const BACKGROUND_BUDGET: Duration = Duration::from_secs(30);
/// A background drainer first waits this long: the Server just failed, so an immediate retry is
/// pointless, and a burst of prompts is better handled by one pass.
pub const BACKGROUND_DELAY: Duration = Duration::from_secs(2);
/// A hook starts a background drainer at most this often.
pub const MIN_SPAWN_INTERVAL: Duration = Duration::from_secs(5);
/// Set to a true value to never start background drainers (explicit `flush` still works): a hook
/// then delivers its own capture after its answer, while the host waits for it to exit.
pub const NO_BACKGROUND_VAR: &str = crate::variables::HOOKS_NO_BACKGROUND_DRAIN;
/// The second argument of a drainer started for a handed-over capture: no initial pause.
pub const NOW_ARG: &str = "now";
/// The second argument of a drainer started while its hook is still on the network: it waits for
/// the hook to exit (its stdin, a pipe only the hook holds, reaches end of file), then drains at
/// once.
pub const AFTER_EXIT_ARG: &str = "after-exit";
/// The longest a drainer waits for the hook that started it to exit: beyond the longest budget a
/// hook can be given (600 s) and its watchdog's grace. A hook outliving it (a host that stopped it)
/// starts a drainer itself after its answer (see [`hand_off`]).
const PARENT_WAIT: Duration = Duration::from_secs(660);
/// How often a background drainer that found the drain lock held tries again before it leaves
/// the work to the holder: a hook only probes the lock for an instant (see [`start_early`]).
const FIRST_PASS_TRIES: u32 = 5;
/// How often a background drainer tries a first pass that could not use the state directory (a
/// state lock held past its wait), [`BACKGROUND_DELAY`] apart, within its budget.
const FAILED_PASS_TRIES: u32 = 5;
/// How much longer than it was allowed a failed call may take before the failure is put down to
/// this process having been stopped or starved rather than to the Server.
pub const STALL_SLACK: Duration = Duration::from_secs(1);
/// Held by a background drainer while it lingers after its drain (see [`linger`]): a hook that
/// finds it held starts no drainer of its own. The name ends with a digest of the environment
/// (see [`linger_lock_for`]); the file exists only while a drainer lingers.
pub const LINGER_LOCK_PREFIX: &str = "drain-linger-";
/// How long a background drainer stays after its last delivery, for the captures of the prompts
/// that follow (a session's prompts come in bursts): each of them then costs its hook one lock
/// probe instead of a process start.
pub const LINGER: Duration = Duration::from_secs(5);
/// How often a lingering drainer looks at the spool: one `stat` of its folder while nothing
/// changes, so a handed-over capture goes out within this much of its hook's exit.
const LINGER_TICK: Duration = Duration::from_millis(10);
/// How often a lingering drainer stamps its linger lock file (its modification time): the sign
/// that it runs.
const LINGER_BEAT: Duration = Duration::from_millis(250);
/// A linger lock whose stamp is older than this belongs to a drainer that does not run (stopped,
/// or starved): hooks do not count on it.
const LINGER_STALE: Duration = Duration::from_secs(2);
/// How long a leaving drainer keeps trying for a drain lock held by someone else before it leaves
/// what is claimable to that holder.
const LAST_PASS_PATIENCE: Duration = Duration::from_secs(2);
/// How often a lingering drainer looks again at entries their hooks hold (each look opens them).
const LINGER_HELD_TICK: Duration = Duration::from_millis(50);
/// Longer than the tick of the coarse clock file systems stamp folders with.
const STAMP_TICK: Duration = Duration::from_millis(100);
/// Between two passes of one drain when the last pass delivered nothing (an older entry of the
/// same session is still held by its hook), and between a background drainer's tries for a held
/// drain lock.
const REPASS_PAUSE: Duration = Duration::from_millis(20);

/// Whether background draining is turned off ([`NO_BACKGROUND_VAR`]).
#[must_use]
pub fn background_disabled(env: &Env) -> bool {
    env.text(NO_BACKGROUND_VAR).is_some_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes" | "on"
        )
    })
}

/// Whether a failed call may succeed later, so its capture or flush is kept: unavailable,
/// timeouts, any 5xx, 408 and 429, and a 409 that is not `source_conflict`.
#[must_use]
pub fn is_retryable(failure: &Failure) -> bool {
    failure.outcome.is_retryable()
        || (failure.outcome == Outcome::CaptureConflict
            && failure.detail == Some(crate::capture::TRANSIENT_CONFLICT))
        || failure
            .http_status
            .is_some_and(|s| (500..600).contains(&s) || s == 408 || s == 429)
            && failure.outcome != Outcome::InferenceUnavailable
}

/// Whether the Server rejected a capture for good (409, 422, 413, scope gone…): it is dropped.
/// Authentication problems and unknown routes are kept: fixing the token or the URL helps.
#[must_use]
pub fn is_permanent_rejection(failure: &Failure) -> bool {
    match failure.outcome {
        Outcome::CaptureConflict => failure.detail != Some(crate::capture::TRANSIENT_CONFLICT),
        Outcome::ScopeNotFound => true,
        Outcome::InvalidResponse => failure
            .http_status
            .is_some_and(|s| (400..500).contains(&s) && s != 408 && s != 429),
        _ => false,
    }
}

/// What one drain run may do.
#[derive(Debug, Clone)]
pub struct DrainOptions {
    /// Time budget for the whole run, lock wait included.
    pub budget: Duration,
    /// Only this scope (spooled captures resolving to it, ledger entries for it).
    pub scope: Option<String>,
    /// Wait (within the budget) for a running drainer instead of leaving at once.
    pub wait_for_lock: bool,
    /// Spool bounds applied before replaying.
    pub limits: SpoolLimits,
}

/// Content-free progress events for an interactive `flush`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Spool replay: `done` of `total` entries handled.
    Spool {
        /// Handled.
        done: usize,
        /// Listed.
        total: usize,
    },
    /// Ledger flush: `done` of `total` entries handled.
    Flush {
        /// Handled.
        done: usize,
        /// Listed.
        total: usize,
    },
}

/// The result of a drain run. Counts and outcome words only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DrainReport {
    /// Another drainer held the lock; nothing was done.
    pub busy: bool,
    /// Captures the Server accepted (new, or a dedupe of an earlier delivery).
    pub delivered: usize,
    /// Captures the Server rejected for good (409 conflict, 4xx).
    pub rejected: usize,
    /// Spool entries set aside unread: unparsable, not a regular file (`*.corrupt`), or another
    /// user's or writable by others (`*.unsafe`). Never replayed.
    #[serde(default)]
    pub set_aside: usize,
    /// The ledger is another user's or writable by others: it was not used.
    #[serde(default)]
    pub unsafe_ledger: bool,
    /// Captures dropped by the spool limits.
    pub expired: usize,
    /// Spooled captures still waiting (for the filtered scope, when one was given).
    pub kept: usize,
    /// Of those, entries a hook still held (their lock taken) when the run looked.
    #[serde(skip)]
    pub in_flight: usize,
    /// Spooled captures left alone because no configured host points at their Server.
    pub unconfigured: usize,
    /// Pending flushes completed.
    pub flushed: usize,
    /// Pending flushes still waiting.
    pub pending: usize,
    /// Pending flushes given up (too many attempts or too old).
    pub gave_up: usize,
    /// State files written by a newer release, left untouched.
    pub newer_format: usize,
    /// The class of the last failure seen, if any.
    pub last_error: Option<String>,
    /// The setting that kept captures or flushes from going (no configured host could be read),
    /// if any: its name and problem, never its value.
    #[serde(default)]
    pub config_error: Option<ConfigIssue>,
    /// Spool entries this run left behind on purpose (Server down, unconfigured, newer format):
    /// the same run does not pass over them again.
    #[serde(skip)]
    pub left: Vec<String>,
    /// Spool entries outside the requested scope: the same run does not pass over them again.
    #[serde(skip)]
    pub out_of_scope: Vec<String>,
    /// A call failed long after its time was up: this process was stopped meanwhile.
    #[serde(skip)]
    pub stalled: bool,
    /// The last pass found a Server it could not reach (its entries wait for a later pass).
    #[serde(skip)]
    pub unreachable: bool,
}

/// An invalid setting, content-free: what to fix and why, never the value (it may be a token).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigIssue {
    /// The variable, file or file key to fix.
    pub setting: String,
    /// What is wrong with it.
    pub problem: String,
    /// What to do about it.
    pub fix: String,
}

impl ConfigIssue {
    /// What to do about an invalid setting.
    pub const FIX: &'static str = "correct that setting (or unset it) and flush again; `powercontext-hooks doctor` checks the configuration";
}

impl From<ConfigError> for ConfigIssue {
    fn from(e: ConfigError) -> Self {
        Self {
            setting: e.setting,
            problem: e.problem,
            fix: Self::FIX.to_owned(),
        }
    }
}

impl DrainReport {
    /// Adds a later pass: what it did adds up, what it found waiting replaces the earlier count.
    fn absorb(&mut self, later: DrainReport) {
        self.delivered += later.delivered;
        self.rejected += later.rejected;
        self.set_aside += later.set_aside;
        self.expired += later.expired;
        self.flushed += later.flushed;
        self.gave_up += later.gave_up;
        self.kept = later.kept;
        self.in_flight = later.in_flight;
        self.unconfigured = later.unconfigured;
        self.pending = later.pending;
        self.newer_format = later.newer_format;
        self.unsafe_ledger = later.unsafe_ledger;
        if later.last_error.is_some() {
            self.last_error = later.last_error;
        }
        if later.config_error.is_some() {
            self.config_error = later.config_error;
        }
        self.stalled |= later.stalled;
        self.unreachable = later.unreachable;
        self.left.extend(later.left);
        self.out_of_scope.extend(later.out_of_scope);
    }

    /// Whether everything in reach was delivered and flushed.
    #[must_use]
    pub fn complete(&self) -> bool {
        !self.busy
            && self.kept == 0
            && self.pending == 0
            && self.unconfigured == 0
            && self.newer_format == 0
            && !self.unsafe_ledger
    }
}

/// The summary file written after each run.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LastDrain {
    /// When the run finished (Unix seconds).
    pub finished: u64,
    /// Its report.
    pub report: DrainReport,
}

/// A Server's transport, its flush call limit and its request timeout.
type Connection = (Transport, u32, Duration);

/// Transports by (integration, Server), built from the inherited settings.
struct Connections<'a> {
    env: &'a Env,
    deadline: Deadline,
    cache: HashMap<(String, String), Option<Connection>>,
    /// The first invalid setting that left a Server without a configured host.
    config_error: Option<ConfigError>,
}

impl Connections<'_> {
    /// The transport for a Server: the recording host's settings when they still point there,
    /// else any host's settings that do. `None` when no configuration names this Server: its
    /// entries wait (and age out) rather than travel without the right credentials.
    fn get(&mut self, integration: &str, server: &str) -> Option<&Connection> {
        let key = (integration.to_owned(), server.to_owned());
        if !self.cache.contains_key(&key) {
            let preferred = Integration::parse(integration);
            let order = preferred
                .into_iter()
                .chain(Integration::ALL.into_iter().filter(|i| Some(*i) != preferred));
            let mut invalid = None;
            let found = order
                .filter_map(|i| match Settings::for_hook(i, self.env) {
                    Ok(s) => Some(s),
                    Err(e) => {
                        invalid.get_or_insert(e);
                        None
                    }
                })
                .find(|s| s.server_url.value.as_str() == server)
                .and_then(|s| {
                    let calls = s.flush_max_calls.value;
                    let timeout = s.request_timeout.value;
                    Transport::new(
                        s.server_url.value,
                        s.authorization.value,
                        timeout,
                        self.deadline,
                        self.env,
                    )
                    .ok()
                    .map(|t| (t, calls, timeout))
                });
            // Named only when it mattered: no host's settings could take this Server's work.
            if found.is_none() && self.config_error.is_none() {
                self.config_error = invalid;
            }
            self.cache.insert(key.clone(), found);
        }
        self.cache.get(&key).and_then(Option::as_ref)
    }
}

/// Runs a drain, the one way every holder of the drain lock drains (`flush`, the hidden `drain`,
/// the background drainer): takes the drain lock (or reports `busy`), applies the spool limits,
/// replays the spool oldest first and flushes the ledger, then lets go of the lock and looks at
/// the spool again. An entry it can claim now that it did not leave behind on purpose was handed
/// over meanwhile (its hook saw the lock held and started no drainer), so it passes again; when
/// the budget is spent first, it starts a background drainer for it (unless background draining
/// is off). Writes the summary of all passes.
///
/// # Errors
/// A [`StateError`] when the state directory itself is unusable: another user's, or not a
/// directory. A missing one is not an error: there is nothing to drain.
pub fn drain(
    state: &StateDir,
    env: &Env,
    opts: &DrainOptions,
    progress: &mut dyn FnMut(Progress),
) -> Result<DrainReport, StateError> {
    drain_passes(state, env, opts, progress, Again::Always)
}

/// Whether a drain passes again over entries handed over during its pass.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Again {
    /// Always (see [`drain`]).
    Always,
    /// Not after a pass that found a Server unreachable and delivered nothing: the caller, a
    /// lingering drainer, passes again after its pause. Passing at once would read the whole
    /// spool again for each new entry, back to back for as long as prompts keep coming.
    NotWhileUnreachable,
}

/// [`drain`], passing again as `again` says.
fn drain_passes(
    state: &StateDir,
    env: &Env,
    opts: &DrainOptions,
    progress: &mut dyn FnMut(Progress),
    again: Again,
) -> Result<DrainReport, StateError> {
    let deadline = Deadline::after(opts.budget);
    let mut report = DrainReport::default();
    // A file where the directory belongs is refused, never read as an empty state.
    if !state.exists()? {
        return Ok(report);
    }
    // Another user's directory is never used (not even its lock file).
    state.ensure(None)?;
    // Entries not to pass over again: left on purpose, or outside the requested scope.
    let mut settled: HashSet<String> = HashSet::new();
    let mut first = true;
    loop {
        let done = pass(state, env, opts, &deadline, progress)?;
        if done.busy {
            // Only the first pass reports it; a drainer that took the lock between two passes
            // looks at the spool again itself once it lets go.
            report.busy = first;
            break;
        }
        first = false;
        settled.extend(done.left.iter().cloned());
        settled.extend(done.out_of_scope.iter().cloned());
        let delivered = done.delivered;
        let unreachable = done.unreachable && delivered == 0;
        report.absorb(done);
        if unreachable && again == Again::NotWhileUnreachable {
            break;
        }
        // The drain lock is released: a hook that hands over from now on starts its own drainer.
        if !spool::claimable_beyond(state, &settled) {
            break;
        }
        if deadline.expired() {
            if !background_disabled(env) {
                spawn_drainer(Start::Now);
            }
            break;
        }
        if delivered == 0 {
            std::thread::sleep(REPASS_PAUSE);
        }
    }
    if !report.busy {
        let short = deadline.within(Duration::from_secs(2));
        if let Ok(lock) = state.lock(&short) {
            // A summary for `status`, no promise: a power cut may lose it, never tear it, so it
            // is written without the two fsyncs (each costs milliseconds on a busy disk).
            let _ = state.write_cache_json(
                &lock,
                STATUS_FILE,
                &LastDrain {
                    finished: now_secs(),
                    report: report.clone(),
                },
            );
        }
    }
    Ok(report)
}

/// One pass under the drain lock: spool limits, the spool oldest first, then the ledger.
fn pass(
    state: &StateDir,
    env: &Env,
    opts: &DrainOptions,
    deadline: &Deadline,
    progress: &mut dyn FnMut(Progress),
) -> Result<DrainReport, StateError> {
    let deadline = *deadline;
    let mut report = DrainReport::default();
    let lock_path = state.file(DRAIN_LOCK);
    let drain_lock = if opts.wait_for_lock {
        lock::acquire(&lock_path, &deadline)
    } else {
        lock::try_acquire(&lock_path)
    };
    let _drain_lock = match drain_lock {
        Ok(g) => g,
        Err(LockError::Busy) => {
            report.busy = true;
            return Ok(report);
        }
        Err(LockError::Io(e)) => return Err(e.into()),
    };
    let short = || deadline.within(Duration::from_secs(2));

    {
        let lock = state.lock(&short())?;
        report.expired = spool::enforce(state, &lock, &opts.limits)?.total();
    }

    let mut replay = Replay {
        state,
        opts,
        deadline,
        conns: Connections {
            env,
            deadline,
            cache: HashMap::new(),
            config_error: None,
        },
        down: HashSet::new(),
        scopes: HashMap::new(),
        answered: HashSet::new(),
        blocked: HashSet::new(),
        report,
    };
    replay.spool(progress)?;
    let Replay {
        mut conns,
        down,
        mut report,
        ..
    } = replay;

    flush_ledger(state, opts, &deadline, &mut conns, &down, &mut report, progress)?;

    if let Some(e) = conns.config_error {
        report
            .last_error
            .get_or_insert_with(|| Outcome::ConfigInvalid.as_str().to_owned());
        report.config_error = Some(ConfigIssue::from(e));
    }
    Ok(report)
}

/// What a pass's spool replay carries from one entry to the next.
struct Replay<'s, 'e> {
    state: &'s StateDir,
    opts: &'s DrainOptions,
    deadline: Deadline,
    conns: Connections<'e>,
    /// Servers that failed this run: their remaining entries wait for the next one.
    down: HashSet<String>,
    /// Resolved scopes by Server and query.
    scopes: HashMap<String, Result<String, Failure>>,
    /// Servers that answered in this pass.
    answered: HashSet<String>,
    /// Sessions whose oldest waiting entry could not go now: their later entries wait too, so a
    /// session's captures reach the Server in the order they were written.
    blocked: HashSet<String>,
    report: DrainReport,
}

/// A sent entry's facts its answer is settled by.
struct Attempt {
    /// Its session's order key.
    order: String,
    /// Its key in [`Replay::scopes`].
    query_key: String,
    /// When its calls began.
    started: Instant,
    /// What its calls may take at most.
    allowed: Duration,
}

impl Replay<'_, '_> {
    /// The spool oldest first, then the record of which Servers answered.
    fn spool(&mut self, progress: &mut dyn FnMut(Progress)) -> Result<(), StateError> {
        // Every entry listed now was written before this mark: a Server answering in this pass
        // answered after them.
        let seq_mark = spool::sequence_now(self.state);
        let entries = spool::list(self.state)?;
        let total = entries.len();
        for (i, entry) in entries.iter().enumerate() {
            progress(Progress::Spool { done: i, total });
            if self.deadline.expired() {
                self.report.kept += total - i;
                break;
            }
            self.entry(entry)?;
        }
        progress(Progress::Spool { done: total, total });
        if !self.answered.is_empty() {
            let lock = self.state.lock(&self.deadline.within(Duration::from_secs(2)))?;
            spool::record_answered(self.state, &lock, &self.answered, seq_mark)?;
        }
        Ok(())
    }

    /// One entry: claimed, held back behind its session or Server, or sent to the scope its
    /// Server resolves for it, then settled by the answer.
    fn entry(&mut self, entry: &spool::Entry) -> Result<(), StateError> {
        let Some((cap, mut claimed)) = self.claim(entry) else {
            return Ok(());
        };
        let order = cap.order_key();
        if self.blocked.contains(&order) || self.down.contains(&cap.server) {
            self.blocked.insert(order);
            self.report.kept += 1;
            self.report.left.push(entry.name.clone());
            return Ok(());
        }
        let Some((transport, _, timeout)) = self.conns.get(&cap.integration, &cap.server) else {
            self.blocked.insert(order);
            self.report.unconfigured += 1;
            self.report.left.push(entry.name.clone());
            return Ok(());
        };
        let query_key = format!(
            "{}\n{}",
            cap.server,
            serde_json::to_string(&cap.query).unwrap_or_default()
        );
        // What the calls for this entry may take at most: a failure well past it happened while
        // this process was stopped, and says nothing about the Server.
        let allowed = self.deadline.remaining().min(*timeout * 2);
        let started = Instant::now();
        let scope = self
            .scopes
            .entry(query_key.clone())
            .or_insert_with(|| cap.query.resolve(transport))
            .clone();
        // A failure, and whether the Server's answer is final for this entry.
        let failed = match scope {
            Err(f) => Some((
                f,
                is_permanent_rejection(&f) && f.outcome == Outcome::ScopeNotFound,
            )),
            Ok(scope) => {
                if self.opts.scope.as_ref().is_some_and(|only| *only != scope) {
                    self.report.out_of_scope.push(entry.name.clone());
                    return Ok(());
                }
                // A replay after a crash past this point sends exactly this request (same scope,
                // same `source_id`): the Server dedupes it instead of storing it in a scope rebound
                // meanwhile. Without the pin it is not sent this run (it keeps its place in its
                // session's order).
                if cap.query.explicit.as_deref() != Some(scope.as_str()) && claimed.pin_scope(&scope).is_err()
                {
                    self.blocked.insert(order);
                    self.report.kept += 1;
                    self.report.left.push(entry.name.clone());
                    return Ok(());
                }
                send(self.state, &self.deadline, transport, &cap, &scope)?
            }
        };
        let attempt = Attempt {
            order,
            query_key,
            started,
            allowed,
        };
        self.settle(&entry.name, &cap.server, claimed, failed, attempt)
    }

    /// Claims an entry for replay, or counts why it is not replayed now.
    fn claim(&mut self, entry: &spool::Entry) -> Option<(Box<spool::SpooledCapture>, spool::Claimed)> {
        // Each entry on its own: a bad one is set aside and the drain goes on with the rest.
        match spool::claim(self.state, entry) {
            Claim::Ready(c, k) => Some((c, k)),
            Claim::Gone => None,
            // A live hook holds it (it hands it over once its answer is out).
            Claim::InFlight(order) => {
                self.blocked.extend(order);
                self.report.kept += 1;
                self.report.in_flight += 1;
                None
            }
            Claim::Corrupt | Claim::Unsafe => {
                self.report.set_aside += 1;
                // Set aside (or, where the rename failed, left where it is): not looked at again
                // by this run, so a spool it cannot change never keeps it passing.
                self.report.left.push(entry.name.clone());
                None
            }
            Claim::NewerFormat => {
                self.report.newer_format += 1;
                self.report.left.push(entry.name.clone());
                None
            }
        }
    }

    /// Settles a sent entry by its answer: removed when delivered or rejected for good, else
    /// kept, holding back its session (and, unreachable, its Server) or passed again after a stall.
    fn settle(
        &mut self,
        name: &str,
        server: &str,
        claimed: spool::Claimed,
        failed: Option<(Failure, bool)>,
        attempt: Attempt,
    ) -> Result<(), StateError> {
        match failed {
            None => {
                claimed.remove()?;
                self.answered.insert(server.to_owned());
                self.report.delivered += 1;
            }
            Some((f, final_answer)) => {
                self.report.last_error = Some(f.outcome.as_str().to_owned());
                if final_answer {
                    claimed.remove()?;
                    self.answered.insert(server.to_owned());
                    self.report.rejected += 1;
                } else if is_retryable(&f) && attempt.started.elapsed() > attempt.allowed + STALL_SLACK {
                    // Stopped mid-call: no verdict. Neither the Server nor the entry is left
                    // behind; a later pass (or a successor, see `drain`) sends it again.
                    self.scopes.remove(&attempt.query_key);
                    self.blocked.insert(attempt.order);
                    self.report.kept += 1;
                    self.report.stalled = true;
                } else {
                    // Only an unreachable Server holds back its other entries; an answer about
                    // this entry (a binding that does not resolve, a refused token) holds back
                    // its own session only.
                    if is_retryable(&f) {
                        self.down.insert(server.to_owned());
                        self.report.unreachable = true;
                    }
                    self.blocked.insert(attempt.order);
                    self.report.kept += 1;
                    self.report.left.push(name.to_owned());
                }
            }
        }
        Ok(())
    }
}

/// Sends a claimed capture to its scope and, when it asked for a flush, records that in the
/// ledger: `None` when the Server took it, else the failure and whether that answer is final.
fn send(
    state: &StateDir,
    deadline: &Deadline,
    transport: &Transport,
    cap: &spool::SpooledCapture,
    scope: &str,
) -> Result<Option<(Failure, bool)>, StateError> {
    match capture::send(transport, &cap.request(scope)) {
        Ok(position) => {
            if cap.flush {
                let lock = state.lock(&deadline.within(Duration::from_secs(2)))?;
                ledger::update(state, &lock, |e| {
                    ledger::record_in(e, &cap.server, scope, position, &cap.integration, now_secs())
                })?;
            }
            Ok(None)
        }
        Err(f) => Ok(Some((f, is_permanent_rejection(&f)))),
    }
}

fn flush_ledger(
    state: &StateDir,
    opts: &DrainOptions,
    deadline: &Deadline,
    conns: &mut Connections<'_>,
    down: &HashSet<String>,
    report: &mut DrainReport,
    progress: &mut dyn FnMut(Progress),
) -> Result<(), StateError> {
    let short = || deadline.within(Duration::from_secs(2));
    let entries = match ledger::load(state) {
        Ok(e) => e,
        Err(StateError::NewerFormat) => {
            report.newer_format += 1;
            return Ok(());
        }
        Err(StateError::Unsafe) => {
            report.unsafe_ledger = true;
            return Ok(());
        }
        Err(e) => return Err(e),
    };
    let max_age = opts.limits.max_age.as_secs();
    let total = entries.len();
    for (i, e) in entries.iter().enumerate() {
        progress(Progress::Flush { done: i, total });
        if opts.scope.as_ref().is_some_and(|only| *only != e.scope) {
            continue;
        }
        if now_secs().saturating_sub(e.first_seen) > max_age {
            let lock = state.lock(&short())?;
            let gone = ledger::update(state, &lock, |es| {
                let before = es.len();
                es.retain(|x| !(x.server == e.server && x.scope == e.scope && x.first_seen == e.first_seen));
                before != es.len()
            })?;
            report.gave_up += usize::from(gone);
            continue;
        }
        let reachable = !deadline.expired() && !down.contains(&e.server);
        let Some((transport, calls, _)) = conns.get(&e.integration, &e.server).filter(|_| reachable) else {
            report.pending += 1;
            continue;
        };
        let flush = Flush {
            max_calls: (*calls).max(1),
            retry_failed: false,
        };
        let result = flush.run(transport, &e.scope, e.position);
        if let Err(f) = &result {
            report.last_error = Some(f.outcome.as_str().to_owned());
        }
        let lock = state.lock(&short())?;
        match ledger::update(state, &lock, |es| flush::apply(es, e, result))? {
            Applied::Flushed => report.flushed += 1,
            // A larger position recorded meanwhile keeps the entry: still pending.
            Applied::Pending => report.pending += 1,
            Applied::Dropped => report.gave_up += 1,
        }
    }
    progress(Progress::Flush { done: total, total });
    Ok(())
}

/// The summary of the last drain, if any.
///
/// # Errors
/// See [`StateDir::read_json`].
pub fn last_drain(state: &StateDir) -> Result<Option<LastDrain>, StateError> {
    state.read_json(STATUS_FILE)
}

/// Whether this process was started as the background drainer.
#[must_use]
pub fn is_drain_invocation() -> bool {
    std::env::args_os().nth(1).is_some_and(|a| a == DRAIN_ARG)
}

/// The background drainer's whole life: drain within [`BACKGROUND_BUDGET`], leave when another
/// drainer runs (after a few quick tries: a hook only probes the lock for an instant, see
/// [`start_early`]), try again after a pause, a few times, a pass that could not use the state
/// directory, then linger or take a last look, exit 0. Started for a handed-over capture ([`NOW_ARG`]) it begins at once,
/// started early ([`AFTER_EXIT_ARG`]) once its hook has exited, else after [`BACKGROUND_DELAY`].
/// Captures handed over while it runs are taken on as by every drain (see [`drain`]). Its stdout
/// and stderr are null, and so is its stdin but for the early start's pipe (see
/// [`spawn_drainer`]).
#[must_use]
pub fn background_main(component: &'static str) -> ExitCode {
    let start = Instant::now();
    process::install_panic_hook(component);
    let mode = std::env::args_os().nth(2);
    let after_exit = mode.as_deref() == Some(AFTER_EXIT_ARG.as_ref());
    let pause = if after_exit {
        process::arm_watchdog(start, PARENT_WAIT);
        wait_for_parent_exit();
        Duration::ZERO
    } else if mode.as_deref() == Some(NOW_ARG.as_ref()) {
        Duration::ZERO
    } else {
        BACKGROUND_DELAY
    };
    process::arm_watchdog(
        start,
        start.elapsed() + pause + BACKGROUND_BUDGET + Duration::from_secs(2),
    );
    // A drainer stopped past its watchdog holds hand-overs no hook will start a drainer for (they
    // saw the drain lock held): its watchdog starts the successor before it ends the process.
    process::on_frozen_watchdog(|| {
        let env = Env::from_process();
        if !background_disabled(&env) {
            spawn_drainer(Start::Paused);
        }
    });
    let env = Env::from_process();
    std::thread::sleep(pause);
    let Ok(state) = StateDir::locate(&env) else {
        return ExitCode::SUCCESS;
    };
    let until = Instant::now() + BACKGROUND_BUDGET;
    let _ = linger_lock_for(&state, &env);
    // The last pass that ran, and whether this drainer lingers after it.
    let mut last = None;
    let mut done = false;
    let (mut tries, mut failures) = (0, 0);
    while tries < FIRST_PASS_TRIES && failures < FAILED_PASS_TRIES {
        let remaining = until.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            break;
        }
        match background_pass(&state, &env, remaining, Again::NotWhileUnreachable) {
            Ok(report) if report.busy => {
                tries += 1;
                std::thread::sleep(REPASS_PAUSE);
            }
            // Its hook's exit closed the pipe, but a killed hook's lock on its entry can outlive
            // that by a moment (the kernel closes a dying process's files one by one): look again.
            Ok(report) if after_exit && report.in_flight > 0 => {
                tries += 1;
                last = Some(report);
                std::thread::sleep(REPASS_PAUSE);
            }
            Ok(report) => {
                last = Some(report);
                done = true;
                break;
            }
            // The state directory could not be used (a state lock held past its wait, say): the
            // cause may be gone after a pause, and the hooks that handed over count on this
            // drainer (a successor of a drainer that failed so is started only once).
            Err(_) => {
                failures += 1;
                let pause = BACKGROUND_DELAY.min(until.saturating_duration_since(Instant::now()));
                std::thread::sleep(pause);
            }
        }
    }
    match last {
        Some(report) if done => linger(&state, &env, until, &report),
        // Tries used up on entries their hooks held: no linger, but what was handed over during a
        // pass that found its Server unreachable (which does not pass again) gets its last look.
        Some(report) => leave_without_lingering(&state, &env, until, &settled_by(&report)),
        // Every try found the drain lock held (its holder looks at the spool again once it lets
        // go) or failed (its last look would fail the same way).
        None => {}
    }
    if let Some(cache) = crate::scope_cache::ScopeCache::locate(&env) {
        cache.prune();
    }
    spool::prune_set_aside(&state, SpoolLimits::from_env(&env).max_age);
    ExitCode::SUCCESS
}

/// Reads the drainer's stdin to its end: the hook that started it holds the only write end, so
/// this returns once the hook has exited, whatever way it ended (answered, timed out, killed).
fn wait_for_parent_exit() {
    use std::io::Read;
    let mut stdin = std::io::stdin().lock();
    let mut buf = [0u8; 64];
    while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
}

/// After a drain, stays up to [`LINGER`] past its last pass (never past `until`) holding its
/// linger lock (see [`linger_lock_for`]), and delivers the captures the next prompts hand over, so
/// a burst of prompts starts one drainer. Hand-over without a lost wake-up, as with the drain lock: a hook releases
/// its entry and then probes the linger lock; this drainer lets go of the lock and then looks at
/// the spool again. It does not leave while a hook that found it here still holds its entry (that
/// hook started no drainer, and may be killed before its answer), within `until`. After a pass
/// that kept work back (a Server that could not be reached) it tries again no sooner than
/// [`BACKGROUND_DELAY`].
fn linger(state: &StateDir, env: &Env, until: Instant, first: &DrainReport) {
    let lock_file = linger_lock_for(state, env);
    let Some(held) = hold_linger_lock(&lock_file) else {
        leave_without_lingering(state, env, until, &settled_by(first));
        return;
    };
    let _ = held.set_modified(SystemTime::now());
    let (settled, left) = watch_spool(state, env, until, first, &held);
    // Gone before the lock is let go: a hook that opens the name from now on finds nothing (or
    // a newer drainer's file) and does not count on this one.
    let _ = fs::remove_file(&lock_file);
    drop(held);
    last_look(state, env, until, &settled);
    // A hook that found this drainer in its last moments (after its last look, or at its budget)
    // started none and still holds its entry: killed before its answer, it would leave the entry
    // to the next prompt. A successor takes it on. Its entry was written before it probed the
    // lock, so this look, after the lock is gone, sees it. Not for an entry older than a drainer's
    // budget (a stopped hook). After a pass that could not use the state directory (a state lock
    // held past its wait, a lock file it could not open) the hooks that counted on this drainer
    // are owed one too, also for what they handed over and the last look could not deliver: the
    // cause may be gone a moment later, or only after a while: a successor whose first pass fails
    // the same way tries again after a pause, a few times within its budget (see
    // [`background_main`]), and starts none itself, so successors never follow one another.
    let successor = held_by_a_recent_hook(state, &settled)
        || (left == Left::Failed && spool::claimable_beyond(state, &settled));
    if successor {
        spawn_drainer(Start::Now);
    }
}

/// Why a lingering drainer stopped watching the spool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Left {
    /// Idle for [`LINGER`] with no hook's entry pending.
    Idle,
    /// Its budget ran out.
    Budget,
    /// A pass could not use the state directory.
    Failed,
}

/// Whether the spool holds an entry its hook still holds (on the network) that was written less
/// than two drainer budgets ago (so at most two successors follow one another for it).
fn held_by_a_recent_hook(state: &StateDir, settled: &HashSet<String>) -> bool {
    let Ok(entries) = spool::list(state) else {
        return false;
    };
    let dir = state.file(spool::DIR);
    entries.iter().filter(|e| !settled.contains(&e.name)).any(|e| {
        let Ok(crate::state::Opened::File(f, _)) = crate::state::open_state_file(&dir.join(&e.name)) else {
            return false;
        };
        let recent = f
            .metadata()
            .and_then(|m| m.modified())
            .is_ok_and(|t| t.elapsed().map_or(true, |age| age < 2 * BACKGROUND_BUDGET));
        recent && matches!(lock::try_lock_file(&f), Ok(false))
    })
}

/// Opens and takes the linger lock: `None` when it cannot be opened or another drainer lingers.
fn hold_linger_lock(lock_file: &std::path::Path) -> Option<fs::File> {
    // Owner-only from its first byte, never through a link planted under its name.
    let held = lock::open_private(lock_file).ok()?;
    if !matches!(lock::try_lock_file(&held), Ok(true)) {
        // Another drainer lingers: it takes on what comes next.
        return None;
    }
    Some(held)
}

/// The lingering itself, its lock `held`: beats the lock, watches the spool and passes over what
/// is handed over (or was kept back, once the pause is over) until idle for [`LINGER`] with no
/// hook's entry pending, or `until`. Returns what its last pass left behind, and why it stopped.
fn watch_spool(
    state: &StateDir,
    env: &Env,
    until: Instant,
    first: &DrainReport,
    held: &fs::File,
) -> (HashSet<String>, Left) {
    let mut beat = Instant::now();
    let spool_dir = state.file(spool::DIR);
    let mut settled = settled_by(first);
    let mut retry_at = retry_after(first);
    let mut kept_back = first.kept > first.in_flight;
    let mut idle_until = Instant::now() + LINGER;
    let mut seen: Option<SystemTime> = None;
    let mut waiting = false;
    // A look found claimable work that waits for the pause after a failed pass.
    let mut paused = false;
    let mut looked = Instant::now();
    let left = loop {
        let now = Instant::now();
        if now >= until {
            break Left::Budget;
        }
        if now >= idle_until && !waiting {
            break Left::Idle;
        }
        std::thread::sleep(LINGER_TICK);
        if beat.elapsed() >= LINGER_BEAT {
            // Alive and running: a hook counts only on a lingerer whose beat is recent, so one
            // stopped (SIGSTOP, a suspended job) is not counted on (see [`lingering`]).
            let _ = held.set_modified(SystemTime::now());
            beat = Instant::now();
        }
        // Work a failed pass kept back (the Server timed out, say, under a burst) is passed again
        // once the pause is over, within the idle bound: left to the next prompt, it would wait
        // while every hook of the burst had already counted on this drainer. A retry that fails
        // again does not extend the idle bound: a Server that stays down does not keep it here.
        let retry = kept_back && Instant::now() >= retry_at && Instant::now() < idle_until;
        // Until that pause is over, another look (each lists the spool: hundreds of entries while
        // a Server is down) could only find the same: no pass may start before it.
        if paused && Instant::now() < retry_at {
            continue;
        }
        let stamp = fs::metadata(&spool_dir).and_then(|m| m.modified()).ok();
        // A stamp this recent may hide a later entry made within the same tick of the file
        // system's coarse clock: look until it is older than any such tick.
        let fresh = stamp.is_some_and(|t| t.elapsed().map_or(true, |age| age < STAMP_TICK));
        // Entries held by hooks (on the network) are looked at less often: their release does not
        // change the folder's stamp, and each look opens every entry.
        let due = waiting && looked.elapsed() >= LINGER_HELD_TICK;
        if stamp == seen && !fresh && !due && !retry {
            continue;
        }
        seen = stamp;
        looked = Instant::now();
        if retry {
            settled.clear();
        }
        let (claimable, held_by_hooks) = look(state, &settled);
        // An entry held by its hook, or one that waits for the pause after a failed pass: keep
        // looking (the folder's stamp will not change for it) and do not leave.
        waiting = held_by_hooks || claimable;
        paused = claimable && Instant::now() < retry_at;
        if !claimable || Instant::now() < retry_at {
            continue;
        }
        match background_pass(
            state,
            env,
            until.saturating_duration_since(Instant::now()),
            Again::NotWhileUnreachable,
        ) {
            // Whoever holds the drain lock looks at the spool again once it lets go.
            Ok(report) if report.busy => {}
            Ok(report) => {
                if !retry || report.delivered + report.rejected > 0 {
                    idle_until = Instant::now() + LINGER;
                }
                kept_back = report.kept > report.in_flight;
                settled = settled_by(&report);
                retry_at = retry_after(&report);
            }
            Err(_) => break Left::Failed,
        }
    };
    (settled, left)
}

/// A drainer that does not linger (its tries used up, or another drainer holds the linger lock)
/// still owes the hooks that handed over during its last pass a look: that pass does not pass
/// again after finding its Server unreachable, and no lingering retry follows. Not when a drainer
/// of this environment lingers and runs: it takes them on (after its pause, or in its own last
/// look), so a Server that stays down is not passed over back to back.
fn leave_without_lingering(state: &StateDir, env: &Env, until: Instant, settled: &HashSet<String>) {
    if lingering(state) {
        return;
    }
    last_look(state, env, until, settled);
}

/// The leaving drainer's last look, its linger lock gone: passes over what was handed over
/// meanwhile, trying up to [`LAST_PASS_PATIENCE`] for a drain lock held by someone else.
fn last_look(state: &StateDir, env: &Env, until: Instant, settled: &HashSet<String>) {
    // A hook that saw the lock held released its entry before it looked: it is claimable now.
    // The drain lock may be held for a moment by someone who will not look at the spool again (a
    // hook's or `status`'s probe, a benchmark's poll): leaving on that "busy" stranded a hand-over
    // until the next prompt (the half-minute waits of the real-Server benchmark, whose poll of the
    // drain lock met this drainer's last look). Busy is taken for an answer only after a while: a
    // drainer holding the lock for longer looks again itself.
    let patience = Instant::now() + LAST_PASS_PATIENCE;
    while spool::claimable_beyond(state, settled) {
        let budget = until
            .saturating_duration_since(Instant::now())
            .max(Duration::from_secs(2));
        // Its last chance: whatever was handed over meanwhile is passed over here.
        match background_pass(state, env, budget, Again::Always) {
            Ok(report) if report.busy && Instant::now() < patience => {
                std::thread::sleep(REPASS_PAUSE);
            }
            _ => break,
        }
    }
}

/// One drain of the background drainer: the whole spool and ledger within `budget`, never waiting
/// for the drain lock.
fn background_pass(
    state: &StateDir,
    env: &Env,
    budget: Duration,
    again: Again,
) -> Result<DrainReport, StateError> {
    let opts = DrainOptions {
        budget,
        scope: None,
        wait_for_lock: false,
        limits: SpoolLimits::from_env(env),
    };
    drain_passes(state, env, &opts, &mut |_| {}, again)
}

/// The entries a drain left behind on purpose or found outside its scope: not looked at again.
fn settled_by(report: &DrainReport) -> HashSet<String> {
    report.left.iter().chain(&report.out_of_scope).cloned().collect()
}

/// When a lingering drainer may pass again after `report`: at once, unless the pass kept work
/// back (a Server that could not be reached, a refused token): a new entry alone changes nothing.
fn retry_after(report: &DrainReport) -> Instant {
    if report.kept > report.in_flight {
        Instant::now() + BACKGROUND_DELAY
    } else {
        Instant::now()
    }
}

/// Whether the spool holds an entry this drainer did not leave behind that it could claim now,
/// and whether one is held by its hook (claimed: the hook is still on the network).
fn look(state: &StateDir, settled: &HashSet<String>) -> (bool, bool) {
    let Ok(entries) = spool::list(state) else {
        return (false, false);
    };
    let dir = state.file(spool::DIR);
    let (mut claimable, mut held) = (false, false);
    for e in entries.iter().filter(|e| !settled.contains(&e.name)) {
        if let Ok(crate::state::Opened::File(f, _)) = crate::state::open_state_file(&dir.join(&e.name)) {
            match lock::try_lock_file(&f) {
                Ok(true) => claimable = true,
                Ok(false) => held = true,
                Err(_) => {}
            }
        }
        if claimable && held {
            break;
        }
    }
    (claimable, held)
}

/// The linger lock of drainers started from `env` (this process's environment). A drainer
/// delivers with the settings and credentials of the environment it inherited (never from disk),
/// so a hook only counts on one whose environment is its own: a host configured for another Server
/// or token gets a drainer of its own. The executable's version is part of it too. Worked out once
/// per process.
fn linger_lock_for(state: &StateDir, env: &Env) -> std::path::PathBuf {
    let name = LINGER_LOCK_NAME.get_or_init(|| {
        let mut material = concat!(env!("CARGO_PKG_VERSION"), "\0").as_bytes().to_vec();
        material.extend(env.fingerprint_material());
        let mut name = crate::workspace::sha256_hex(&material);
        name.truncate(32);
        name.insert_str(0, LINGER_LOCK_PREFIX);
        name.push_str(".lock");
        name
    });
    state.file(name)
}

/// This process's linger lock name, once [`linger_lock_for`] worked it out.
static LINGER_LOCK_NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Whether a background drainer of this environment lingers (see [`linger`]): it takes on this
/// hook's capture. Probed without creating the file: no drainer, no file.
fn lingering(state: &StateDir) -> bool {
    // Without the name (no capture was written ahead in this process) nobody is counted on.
    let Some(name) = LINGER_LOCK_NAME.get() else {
        return false;
    };
    let Ok(f) = fs::OpenOptions::new()
        .read(true)
        .custom_flags(lock::no_follow_flags())
        .open(state.file(name))
    else {
        return false;
    };
    // A beat older than the bound (or ahead of this clock by as much: the clock was set back) is
    // a lingerer that is stopped, or starved: a drainer of this hook's own is started instead.
    // An extra drainer costs a process, never a duplicate: entries are claimed under their lock
    // and the Server dedupes by `source_id`.
    let recent = f.metadata().and_then(|m| m.modified()).is_ok_and(|t| {
        let now = SystemTime::now();
        now.duration_since(t)
            .or_else(|_| t.duration_since(now))
            .is_ok_and(|gap| gap < LINGER_STALE)
    });
    recent && matches!(lock::try_lock_file(&f), Ok(false))
}

/// While a prompt is on the network, with its capture written ahead: starts the drainer that will
/// deliver it, on a thread of its own, so the start (`posix_spawn` returns only once the child has
/// exec'd) overlaps the network wait instead of following the answer. That drainer waits for this
/// process to exit (see [`AFTER_EXIT_ARG`]), so it never competes with the prompt's recall, and a
/// hook killed mid-request still has its capture delivered. Nothing starts while a drainer holds
/// the drain lock: the hand-over after the answer covers that case.
pub fn start_early(state: &StateDir, env: &Env) {
    let mut early = lock_early();
    if early.is_some() {
        return;
    }
    let _ = linger_lock_for(state, env);
    // Both probes here, on this thread (a few system calls): a running drainer takes on the
    // capture, and the thread is only made for a start.
    if lingering(state) {
        return;
    }
    if !drain_lock_free(state) {
        return;
    }
    // A thread that cannot be made leaves the start to the hand-over after the answer.
    *early = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| spawn_drainer(Start::AfterExit))
        .ok();
}

/// Whether no drainer holds the drain lock, probed without creating the file: its modification
/// time is the last start's stamp (see [`spawn_if_needed`]), and a probe that created it would
/// read as a start that may never happen (the early start's thread ends with its process).
fn drain_lock_free(state: &StateDir) -> bool {
    match fs::OpenOptions::new()
        .read(true)
        .custom_flags(lock::no_follow_flags())
        .open(state.file(DRAIN_LOCK))
    {
        // No lock file: no drainer ever ran here.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => true,
        Err(_) => false,
        // Let go as the file closes.
        Ok(f) => matches!(lock::try_lock_file(&f), Ok(true)),
    }
}

/// The drainer [`start_early`] started, once its start finished: the child, and the write end of
/// its stdin, held until this process exits.
type Early = std::thread::JoinHandle<Option<(std::process::Child, std::process::ChildStdin)>>;

/// Process-wide because the early drainer's pipe must stay open until this process ends, however
/// it ends (the answer, the watchdog, a panic): its end of file is the drainer's signal.
static EARLY: std::sync::Mutex<Option<Early>> = std::sync::Mutex::new(None);

fn lock_early() -> std::sync::MutexGuard<'static, Option<Early>> {
    EARLY.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether a drainer started by [`start_early`] still waits for this process to exit (one that
/// gave up waiting has exited). Its pipe is leaked on purpose: the kernel closes it when this
/// process ends, which is the drainer's signal.
fn early_drainer_waits() -> bool {
    let Some(start) = lock_early().take() else {
        return false;
    };
    match start.join() {
        Ok(Some((mut child, pipe))) => {
            std::mem::forget(pipe);
            matches!(child.try_wait(), Ok(None))
        }
        _ => false,
    }
}

/// After a hook answered with a capture written ahead and released: nothing more when the drainer
/// [`start_early`] started waits for this process; otherwise starts a drainer at once, unless one
/// holds the drain lock (it looks at the spool again once it lets go, see [`drain`]).
/// Never waits for a drainer.
pub fn hand_off(state: &StateDir) {
    if early_drainer_waits() || lingering(state) {
        return;
    }
    match lock::try_acquire(&state.file(DRAIN_LOCK)) {
        Ok(guard) => {
            drop(guard);
            spawn_drainer(Start::Now);
        }
        Err(LockError::Busy) => {}
        // No usable lock file: a drainer would not get further; the entry waits in the spool.
        Err(LockError::Io(_)) => {}
    }
}

/// When a drainer starts its pass.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Start {
    /// After [`BACKGROUND_DELAY`].
    Paused,
    /// At once.
    Now,
    /// Once the hook that started it has exited.
    AfterExit,
}

/// Starts the detached drainer; for [`Start::AfterExit`] gives it with the write end of its stdin.
fn spawn_drainer(start: Start) -> Option<(std::process::Child, std::process::ChildStdin)> {
    let exe = std::env::current_exe().ok()?;
    let mut cmd = Command::new(exe);
    cmd.arg(DRAIN_ARG);
    match start {
        Start::Paused => {}
        Start::Now => {
            cmd.arg(NOW_ARG);
        }
        Start::AfterExit => {
            cmd.arg(AFTER_EXIT_ARG);
        }
    }
    let stdin = if start == Start::AfterExit {
        Stdio::piped()
    } else {
        Stdio::null()
    };
    // Never waited for: it outlives this process, which the host waits for.
    let mut child = cmd
        .stdin(stdin)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .ok()?;
    let pipe = child.stdin.take()?;
    Some((child, pipe))
}

/// After a hook has answered: if the spool or the ledger holds work (two cheap file-system
/// checks, nothing parsed) and no drainer started recently, starts this executable again as a
/// detached background drainer: own process group, stdin/stdout/stderr null so the host never
/// waits on our pipes, never waited for. The drainer applies the spool limits; with background
/// draining off, a hook that left a capture in the spool applies them itself, here, after its
/// answer (never on the prompt path).
pub fn spawn_if_needed(env: &Env) {
    if background_disabled(env) {
        if let Some(component) = spool::left_this_run() {
            spool::enforce_after_answer(env, component);
        }
        return;
    }
    // A drainer started early for this prompt's capture drains the whole spool and ledger once
    // this process has exited. Its start is waited for here, not left to this process's exit,
    // which would end its thread before the start on a fast answer (a refused connection).
    if early_drainer_waits() {
        return;
    }
    let Ok(state) = StateDir::locate(env) else { return };
    // The drain lock file's mtime records the last start: hooks firing in a burst start one. One
    // `stat`, looked at first: within the interval the spool (possibly thousands of entries kept
    // while the Server is down) is never listed.
    let stamp = state.file(DRAIN_LOCK);
    let recent = fs::metadata(&stamp)
        .and_then(|m| m.modified())
        .is_ok_and(|t| t.elapsed().is_ok_and(|age| age < MIN_SPAWN_INTERVAL));
    if recent {
        return;
    }
    let ledger_work = ledger::has_work(&state);
    // A lingering drainer of this environment (started early by a hook, which stamps nothing, or
    // longer ago than the interval) takes on the spool, retrying what a down Server left behind: a
    // drainer started now would only find its lock held and leave, a process start for nothing
    // every 5 s. It watches the spool only: ledger work still starts one.
    if !ledger_work && lingering(&state) {
        return;
    }
    if !(ledger_work || spool::has_work(&state)) {
        return;
    }
    let touched = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(lock::no_follow_flags())
        .open(&stamp)
        .and_then(|f| f.set_modified(SystemTime::now()));
    if touched.is_err() {
        return;
    }
    spawn_drainer(Start::Paused);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_and_rejection_classes() {
        let f = |outcome, status| Failure {
            outcome,
            http_status: status,
            detail: None,
        };
        assert!(is_retryable(&f(Outcome::ServerUnavailable, None)));
        assert!(is_retryable(&f(Outcome::ServerUnavailable, Some(503))));
        assert!(is_retryable(&f(Outcome::Timeout, None)));
        assert!(is_retryable(&f(Outcome::InvalidResponse, Some(500))));
        assert!(is_retryable(&f(Outcome::InvalidResponse, Some(429))));
        assert!(!is_retryable(&f(Outcome::InvalidResponse, Some(422))));
        assert!(!is_retryable(&f(Outcome::AuthenticationFailed, Some(401))));
        assert!(!is_retryable(&f(Outcome::InferenceUnavailable, Some(503))));
        assert!(is_permanent_rejection(&f(Outcome::CaptureConflict, Some(409))));
        assert!(is_permanent_rejection(&f(Outcome::InvalidResponse, Some(422))));
        assert!(is_permanent_rejection(&f(Outcome::ScopeNotFound, Some(404))));
        assert!(!is_permanent_rejection(&f(
            Outcome::AuthenticationFailed,
            Some(401)
        )));
        assert!(!is_permanent_rejection(&f(Outcome::VersionMismatch, Some(404))));
        assert!(!is_permanent_rejection(&f(Outcome::InvalidResponse, Some(500))));
    }

    #[test]
    fn a_second_drainer_reports_busy() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let _held = lock::try_acquire(&state.file(DRAIN_LOCK)).unwrap();
        let opts = DrainOptions {
            budget: Duration::from_millis(50),
            scope: None,
            wait_for_lock: false,
            limits: SpoolLimits::DEFAULT,
        };
        let r = drain(&state, &Env::default(), &opts, &mut |_| {}).unwrap();
        assert!(r.busy && !r.complete());
    }

    #[test]
    fn unconfigured_servers_keep_their_entries() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path());
        let d = Deadline::after(Duration::from_secs(2));
        ledger::record(&state, &d, "http://127.0.0.1:9", "scp", 4, "codex").unwrap();
        let opts = DrainOptions {
            budget: Duration::from_secs(2),
            scope: None,
            wait_for_lock: false,
            limits: SpoolLimits::DEFAULT,
        };
        // The default Server URL is port 8000, not 9: nothing is sent anywhere.
        let env = Env::from_pairs([("HOME", tmp.path().to_str().unwrap())]);
        let r = drain(&state, &env, &opts, &mut |_| {}).unwrap();
        assert_eq!((r.pending, r.flushed), (1, 0));
        assert!(ledger::has_work(&state));
        assert!(last_drain(&state).unwrap().is_some());
    }

    #[test]
    fn a_file_where_the_state_dir_belongs_is_refused_and_a_missing_one_is_empty() {
        let tmp = tempfile::tempdir().unwrap();
        let opts = DrainOptions {
            budget: Duration::from_secs(2),
            scope: None,
            wait_for_lock: false,
            limits: SpoolLimits::DEFAULT,
        };
        let file = tmp.path().join("state");
        fs::write(&file, "x").unwrap();
        for state in [StateDir::at(&file), StateDir::at(file.join("below"))] {
            let e = drain(&state, &Env::default(), &opts, &mut |_| {}).unwrap_err();
            assert_eq!(e.detail(), "not_a_directory");
        }
        let missing = tmp.path().join("missing");
        let r = drain(&StateDir::at(&missing), &Env::default(), &opts, &mut |_| {}).unwrap();
        assert!(r.complete());
        assert!(!missing.exists());
    }

    #[test]
    fn an_entry_that_cannot_be_set_aside_is_counted_once_and_does_not_keep_the_drain_going() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path().join("state"));
        let spool_dir = state.path().join("spool");
        fs::create_dir_all(&spool_dir).unwrap();
        for dir in [state.path(), spool_dir.as_path()] {
            fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
        }
        let entry = spool_dir.join("0001796295891062-000000000008-17855-0.json");
        fs::write(&entry, "not json").unwrap();
        fs::set_permissions(&entry, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        // An immutable folder makes the rename aside fail, as a read-only remount would.
        let frozen = std::process::Command::new("chattr")
            .arg("+i")
            .arg(&spool_dir)
            .status()
            .is_ok_and(|s| s.success());
        let opts = DrainOptions {
            budget: Duration::from_secs(3),
            scope: None,
            wait_for_lock: false,
            limits: SpoolLimits::DEFAULT,
        };
        let env = Env::from_pairs([(NO_BACKGROUND_VAR, "1")]);
        let started = Instant::now();
        let r = drain(&state, &env, &opts, &mut |_| {});
        if frozen {
            let _ = std::process::Command::new("chattr")
                .arg("-i")
                .arg(&spool_dir)
                .status();
        }
        let r = r.unwrap();
        assert_eq!(r.set_aside, 1, "{r:?}");
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{:?}",
            started.elapsed()
        );
    }

    #[test]
    fn an_invalid_config_that_keeps_work_back_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let state = StateDir::at(tmp.path().join("state"));
        let d = Deadline::after(Duration::from_secs(2));
        ledger::record(&state, &d, "http://127.0.0.1:8000", "scp", 4, "codex").unwrap();
        let opts = DrainOptions {
            budget: Duration::from_secs(2),
            scope: None,
            wait_for_lock: false,
            limits: SpoolLimits::DEFAULT,
        };
        let env = Env::from_pairs([
            ("HOME", tmp.path().to_str().unwrap()),
            ("POWERCONTEXT_HOOKS_CONFIG", "/dev/zero"),
        ]);
        let r = drain(&state, &env, &opts, &mut |_| {}).unwrap();
        assert_eq!(r.pending, 1);
        assert_eq!(r.last_error.as_deref(), Some("config_invalid"));
        assert_eq!(
            r.config_error,
            Some(ConfigIssue {
                setting: "/dev/zero".to_owned(),
                problem: "is not a regular file".to_owned(),
                fix: ConfigIssue::FIX.to_owned(),
            })
        );
        // The summary keeps it for `status`.
        let last = last_drain(&state).unwrap().unwrap();
        assert_eq!(last.report.config_error, r.config_error);
    }
}
