//! `status`, `flush`, and the hidden `drain` and `debug` subcommands: inspect and drain the local
//! state (spool, pending-flush ledger). Output is content-free: counts, sizes, ages and outcome
//! words, never prompts, scope contents or tokens.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Subcommand};
use powercontext_hooks_core::deadline::Deadline;
use powercontext_hooks_core::drain::{self, DrainOptions, DrainReport, Progress};
use powercontext_hooks_core::env::Env;
use powercontext_hooks_core::host::Integration;
use powercontext_hooks_core::spool::{self, SpoolLimits};
use powercontext_hooks_core::state::{DirProblem, StateDir, StateError, now_millis, now_secs};
use powercontext_hooks_core::{journal, ledger, state};
use serde::Serialize;
use serde_json::Value;
use std::os::unix::fs::MetadataExt;

use crate::support::report;
use crate::support::textstyle::terminal_safe;

/// `status` options.
#[derive(Debug, Args)]
pub struct StatusArgs {
    /// One JSON object on stdout instead of text.
    #[arg(long)]
    json: bool,
}

/// `flush` options.
#[derive(Debug, Args)]
pub struct FlushArgs {
    /// Accepted and ignored: without `--scope`, flush always drains everything.
    #[arg(long, conflicts_with = "scope", hide = true)]
    all: bool,
    /// Only captures and pending flushes for this scope id.
    #[arg(long, value_name = "ID")]
    scope: Option<String>,
    /// Give up after this many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 60.0)]
    budget: f64,
    /// One JSON object on stdout instead of text.
    #[arg(long)]
    json: bool,
}

/// `drain` options (hidden: what a hook's background drainer does, for tests and debugging).
#[derive(Debug, Args)]
pub struct DrainArgs {
    /// Give up after this many seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = drain::BACKGROUND_BUDGET.as_secs_f64())]
    budget: f64,
}

/// Hidden test helpers.
#[derive(Debug, Subcommand)]
pub enum DebugCommand {
    /// Records positions into the ledger, printing each one once it is committed.
    LedgerRecord {
        /// Server base URL.
        #[arg(long)]
        server: String,
        /// Scope id.
        #[arg(long)]
        scope: String,
        /// First position.
        #[arg(long)]
        position: u64,
        /// How many increasing positions to record (0: until killed).
        #[arg(long, default_value_t = 1)]
        count: u64,
        /// Recording host.
        #[arg(long, default_value = "codex")]
        integration: String,
    },
}

fn state_dir(env: &Env) -> anyhow::Result<StateDir> {
    let state =
        StateDir::locate(env).context("no state directory: set POWERCONTEXT_HOOKS_STATE_DIR or HOME")?;
    // The hooks refuse a relative one (it would be wherever they run): so does every command.
    anyhow::ensure!(
        state.path().is_absolute(),
        "{} must be an absolute path (the hooks refuse this one too); set it to the full path of the state directory",
        powercontext_hooks_core::config::vars::STATE_DIR
    );
    Ok(state)
}

fn seconds(value: f64, flag: &str) -> anyhow::Result<Duration> {
    anyhow::ensure!(
        value.is_finite() && value > 0.0 && value <= 86_400.0,
        "{flag} must be a number of seconds above 0 and at most 86400"
    );
    Ok(Duration::from_secs_f64(value))
}

/// Why `status` or `flush` refuses the state directory: its path (escaped), the closed word and
/// what to do about it.
fn state_refusal(state: &StateDir, e: &StateError) -> String {
    let fix = match e.detail() {
        "not_a_directory" => {
            "something other than a directory stands there: remove it, or set POWERCONTEXT_HOOKS_STATE_DIR to a directory you own"
        }
        "unsafe_permissions" => DirProblem::ForeignOwner.fix(),
        _ => "check that it is a directory you own and can write to, on a disk with free space",
    };
    format!(
        "state directory {} unusable ({}): {fix}",
        terminal_safe(&state.path().to_string_lossy()),
        e.detail()
    )
}

/// A state problem: a closed word and what to do about it.
type Problem = (&'static str, &'static str);

fn state_problems(state: &StateDir) -> Vec<Problem> {
    let mut problems: Vec<Problem> = state
        .inspect(spool::DIR)
        .into_iter()
        .map(|p| (p.word(), p.fix()))
        .collect();
    let (corrupt, unsafe_files) = spool::set_aside_counts(state);
    if corrupt > 0 {
        problems.push((
            "spool_corrupt",
            "unreadable spool entries were set aside as spool/*.corrupt: never replayed, delete them",
        ));
    }
    if unsafe_files > 0 {
        problems.push((
            "spool_unsafe",
            "spool entries owned by another user or writable by others were set aside as spool/*.unsafe: never replayed, delete them",
        ));
    }
    // What the hooks would meet on their next run, said before it is silently missing.
    if rustix::fs::access(state.path(), rustix::fs::Access::WRITE_OK)
        .is_err_and(|e| e != rustix::io::Errno::NOENT)
    {
        problems.push((
            "read_only",
            "the state directory cannot be written: hooks cannot spool captures or record their runs; make it writable",
        ));
    }
    let foreign_journal = Integration::ALL.into_iter().any(|host| {
        [journal::file_name(host), journal::previous_file_name(host)]
            .iter()
            .any(|name| {
                std::fs::symlink_metadata(state.file(name))
                    .is_ok_and(|m| !m.is_file() || m.uid() != state::euid())
            })
    });
    if foreign_journal {
        problems.push((
            "journal_unusable",
            "a journal file is a link, a FIFO or another user's: hook runs are not recorded in it; remove it",
        ));
    }
    problems
}

/// `powercontext-hooks status`.
pub fn status(args: &StatusArgs) -> anyhow::Result<ExitCode> {
    let env = Env::from_process();
    let state = match state_dir(&env) {
        Ok(s) => s,
        Err(e) => return report::refuse(args.json, &e),
    };
    // A file where the directory belongs is refused, never shown as an empty state.
    if let Err(e) = state.exists() {
        return Ok(report::refuse_with(args.json, &state_refusal(&state, &e)));
    }
    let mut problems = state_problems(&state);
    let mut state_error = |e: &StateError| match e {
        StateError::Unsafe => problems.push((
            "unsafe_permissions",
            "a state file is owned by another user or writable by others: it is never used; remove it",
        )),
        e => problems.push((e.detail(), "")),
    };
    let pending = match ledger::load(&state) {
        Ok(e) => e.len(),
        Err(e) => {
            state_error(&e);
            0
        }
    };
    let now = now_millis();
    let spool = match spool::list(&state) {
        Ok(entries) => spool::summarize(&entries, now),
        Err(e) => {
            state_error(&StateError::from(e));
            spool::Summary::default()
        }
    };
    let last = match drain::last_drain(&state) {
        Ok(l) => l,
        Err(e) => {
            state_error(&e);
            None
        }
    };
    problems.dedup();
    let last_age = last.as_ref().map(|l| now_secs().saturating_sub(l.finished));
    let hooks = crate::commands::activity::summaries(&state, now);
    // Bytes from a state file: escaped before they reach the terminal.
    let last_error = last
        .as_ref()
        .and_then(|l| l.report.last_error.as_deref())
        .map(terminal_safe);
    let dir = terminal_safe(&state.path().to_string_lossy());
    let drops = spool::drop_totals(&state);
    let status = Status {
        spool_created_in_future: spool.created_in_future,
        spool_dropped: (drops.dropped.total() > 0).then(|| SpoolDropped {
            total: drops.dropped.total(),
            age: drops.dropped.age,
            count: drops.dropped.count,
            bytes: drops.dropped.bytes,
            last_age_seconds: now_secs().checked_sub(drops.last),
        }),
        state_dir: dir,
        pending_scopes: pending,
        spool_entries: spool.entries,
        spool_bytes: spool.bytes,
        spool_oldest_age_seconds: spool.oldest_age_secs,
        last_drain_age_seconds: last_age,
        last_error,
        problems,
        hooks: crate::commands::activity::to_json(&hooks, now),
        hook_lines: crate::commands::activity::lines(&hooks, now),
    };
    report::emit(&status, args.json)
}

/// What `status` says (content-free: counts, ages, outcome words).
#[derive(Serialize)]
struct Status {
    state_dir: String,
    pending_scopes: usize,
    spool_entries: usize,
    spool_bytes: u64,
    spool_oldest_age_seconds: Option<u64>,
    /// An entry was written at a time ahead of this clock (the clock was moved back since).
    spool_created_in_future: bool,
    /// Captures the spool limits dropped, by reason (absent when none ever were).
    spool_dropped: Option<SpoolDropped>,
    last_drain_age_seconds: Option<u64>,
    last_error: Option<String>,
    #[serde(serialize_with = "problem_words")]
    problems: Vec<Problem>,
    hooks: Value,
    #[serde(skip)]
    hook_lines: Vec<String>,
}

/// Captures the spool limits dropped since the state directory was made.
#[derive(Serialize)]
struct SpoolDropped {
    total: usize,
    age: usize,
    count: usize,
    bytes: usize,
    /// How long ago the last drop was (`None` when its time is ahead of this clock).
    last_age_seconds: Option<u64>,
}

fn problem_words<S: serde::Serializer>(problems: &[Problem], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(problems.iter().map(|(word, _)| word))
}

impl report::Report for Status {}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "state directory: {}", self.state_dir)?;
        for line in &self.hook_lines {
            writeln!(f, "{}", terminal_safe(line))?;
        }
        writeln!(f, "pending flushes: {} scope(s)", self.pending_scopes)?;
        match self.spool_oldest_age_seconds {
            Some(_) if self.spool_created_in_future => writeln!(
                f,
                "spooled captures: {} ({} bytes, some written at a time ahead of this clock: it was moved back since)",
                self.spool_entries, self.spool_bytes
            )?,
            Some(age) => writeln!(
                f,
                "spooled captures: {} ({} bytes, oldest {age} s)",
                self.spool_entries, self.spool_bytes
            )?,
            None => writeln!(f, "spooled captures: 0")?,
        }
        if let Some(d) = &self.spool_dropped {
            let when = d.last_age_seconds.map_or_else(
                || "at a time ahead of this clock".to_owned(),
                |s| format!("{s} s ago"),
            );
            writeln!(
                f,
                "dropped by the spool limits: {} capture(s) (age {}, count {}, bytes {}), the last {when}",
                d.total, d.age, d.count, d.bytes
            )?;
        }
        match self.last_drain_age_seconds {
            Some(age) => writeln!(
                f,
                "last drain: {age} s ago, last error: {}",
                self.last_error.as_deref().unwrap_or("none")
            )?,
            None => writeln!(f, "last drain: never")?,
        }
        for (word, fix) in &self.problems {
            if fix.is_empty() {
                writeln!(f, "problem: {word}")?;
            } else {
                writeln!(f, "problem: {word}: {fix}")?;
            }
        }
        Ok(())
    }
}

fn summary_line(r: &DrainReport) -> String {
    let mut line = format!(
        "delivered {}, rejected {}, dropped by limits {}, still spooled {}; flushed {}, still pending {}, given up {}",
        r.delivered, r.rejected, r.expired, r.kept, r.flushed, r.pending, r.gave_up
    );
    if r.unconfigured > 0 {
        line.push_str(&format!(
            "; {} for a Server no host is configured for",
            r.unconfigured
        ));
    }
    if r.set_aside > 0 {
        line.push_str(&format!(
            "; {} unreadable or unsafe spool entries set aside (see status)",
            r.set_aside
        ));
    }
    if r.unsafe_ledger {
        line.push_str("; ledger.json not used: owned by another user or writable by others (see status)");
    }
    if r.newer_format > 0 {
        line.push_str(&format!(
            "; {} written by a newer version (left untouched)",
            r.newer_format
        ));
    }
    if let Some(e) = &r.last_error {
        line.push_str(&format!("; last error: {}", terminal_safe(e)));
    }
    line
}

/// `powercontext-hooks flush`: drains now, waiting for a running drainer within the budget.
/// Exit 0 when everything was delivered and flushed, 1 when something is left.
pub fn flush(args: &FlushArgs) -> anyhow::Result<ExitCode> {
    let env = Env::from_process();
    let state = state_dir(&env)?;
    let _ = args.all;
    let opts = DrainOptions {
        budget: seconds(args.budget, "--budget")?,
        scope: args.scope.clone(),
        wait_for_lock: true,
        limits: SpoolLimits::from_env(&env),
    };
    let mut err = std::io::stderr();
    let mut shown = (usize::MAX, usize::MAX);
    let drained = drain::drain(&state, &env, &opts, &mut |p| {
        let (kind, done, total) = match p {
            Progress::Spool { done, total } => ("spooled captures", done, total),
            Progress::Flush { done, total } => ("pending flushes", done, total),
        };
        if total > 0 && (done, total) != shown {
            shown = (done, total);
            let _ = writeln!(err, "{kind}: {done}/{total}");
        }
    });
    let report = match drained {
        Ok(r) => r,
        Err(e) => return Ok(report::refuse_with(args.json, &state_refusal(&state, &e))),
    };
    if report.busy {
        eprintln!("another drainer kept the state busy for the whole budget");
    }
    report::emit(&Flushed(report), args.json)
}

/// What `flush` says: the drain's counts.
#[derive(Serialize)]
#[serde(transparent)]
struct Flushed(DrainReport);

impl report::Report for Flushed {
    fn exit_code(&self) -> ExitCode {
        if self.0.complete() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        }
    }
}

impl std::fmt::Display for Flushed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{}", summary_line(&self.0))?;
        if let Some(c) = &self.0.config_error {
            // The setting may be a path: escaped before it reaches the terminal.
            writeln!(
                f,
                "invalid setting `{}`: {}; {}",
                terminal_safe(&c.setting),
                terminal_safe(&c.problem),
                c.fix
            )?;
        }
        Ok(())
    }
}

/// The hidden `drain`: one background-style drain (leaves at once if another drainer runs),
/// report as JSON on stdout. Exit 0 when complete, 1 otherwise, 3 when another drainer ran.
pub fn drain_once(args: &DrainArgs) -> anyhow::Result<ExitCode> {
    let env = Env::from_process();
    let state = state_dir(&env)?;
    let opts = DrainOptions {
        budget: seconds(args.budget, "--budget")?,
        scope: None,
        wait_for_lock: false,
        limits: SpoolLimits::from_env(&env),
    };
    let report = drain::drain(&state, &env, &opts, &mut |_| {})
        .map_err(|e| anyhow::anyhow!(state_refusal(&state, &e)))?;
    report::emit(&Drained(report), true)
}

/// What the hidden `drain` says, always as JSON.
#[derive(Serialize)]
#[serde(transparent)]
struct Drained(DrainReport);

impl report::Report for Drained {
    fn exit_code(&self) -> ExitCode {
        match (self.0.busy, self.0.complete()) {
            (true, _) => ExitCode::from(3),
            (false, true) => ExitCode::SUCCESS,
            (false, false) => ExitCode::from(1),
        }
    }
}

impl std::fmt::Display for Drained {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{}", summary_line(&self.0))
    }
}

/// The hidden `debug` helpers.
pub fn debug(command: &DebugCommand) -> anyhow::Result<ExitCode> {
    let env = Env::from_process();
    let state = state_dir(&env)?;
    match command {
        DebugCommand::LedgerRecord {
            server,
            scope,
            position,
            count,
            integration,
        } => {
            let mut out = std::io::stdout().lock();
            let mut p = *position;
            let end = if *count == 0 {
                u64::MAX
            } else {
                position.saturating_add(*count)
            };
            while p < end {
                let deadline = Deadline::after(Duration::from_secs(30));
                ledger::record(&state, &deadline, server, scope, p, integration)
                    .map_err(|e| anyhow::anyhow!("ledger record failed ({})", e.detail()))?;
                writeln!(out, "{p}")?;
                out.flush()?;
                p += 1;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
