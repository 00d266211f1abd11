//! The one entry point of every hook executable: start-up (the detached drainer's own entry, the
//! fail-open panic hook and watchdog, the environment snapshot, the fault-injection switch, the
//! command line, the run journal) and shut-down (the answer through [`protocol::deliver`], then
//! the drainer when the host's event leaves work for it). A host crate supplies its commands and
//! one handler; it never starts, answers or ends a hook run itself (DSH's `version`, which is no
//! hook run, is printed before any of this). Never decides anything about a payload: it only hands
//! the handler a bounded read of stdin.

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use crate::after::{AfterAnswer, Done};
use crate::config::{Settings, vars};
use crate::deadline::Deadline;
use crate::drain;
use crate::emit;
use crate::env::Env;
use crate::host::Integration;
use crate::journal;
use crate::outcome::{Diagnostic, Outcome, Stage};
use crate::process;
use crate::protocol::{self, Answer, Protocol};
use crate::spool;
use crate::state::StateDir;

/// What a hook executable is asked to do, from its arguments.
pub trait Command: Copy {
    /// Parses the arguments after the program name; `None` is reported as `unknown_subcommand`
    /// and the process does nothing else.
    fn parse(args: &[OsString]) -> Option<Self>;
    /// The run journal's event word (a closed word, never payload text).
    fn event(self) -> &'static str;
}

/// The command of a host with one command and no arguments (Claude Code, Codex): arguments are
/// ignored, the event word is set once the payload names its event.
#[derive(Debug, Clone, Copy)]
pub struct Payload;

impl Command for Payload {
    fn parse(_: &[OsString]) -> Option<Self> {
        Some(Self)
    }
    fn event(self) -> &'static str {
        "unknown"
    }
}

/// Whether the detached drainer is started once the answer is out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Then {
    /// When the spool or the ledger holds work (a prompt, a turn or session boundary).
    Drain,
    /// When the spool holds undelivered captures (the ledger is the host's boundaries' job).
    DrainCaptures,
    /// Never (local-only steps, boundaries that flushed themselves).
    Stop,
}

/// A handler's result: the protocol and answer for stdout, and what follows it.
pub struct Reply {
    /// The host protocol the answer is written in.
    pub protocol: Protocol,
    /// The answer (at most one line).
    pub answer: Answer,
    /// The work the pipeline left for after the answer (a bootstrap receipt, the session record,
    /// the capture), run by the answer step once the answer is out.
    pub after: AfterAnswer,
    /// Whether a drainer is started at the end.
    pub then: Then,
}

impl Reply {
    /// `answered` in `protocol`, followed by [`Then::Drain`].
    #[must_use]
    pub fn drain(protocol: Protocol, answered: impl Into<Answered>) -> Self {
        let Answered { answer, after } = answered.into();
        Self {
            protocol,
            answer,
            after,
            then: Then::Drain,
        }
    }
}

/// What a pipeline returns: the answer, and the work it leaves for after the answer.
pub struct Answered {
    /// The answer.
    pub answer: Answer,
    /// What runs once the answer is out.
    pub after: AfterAnswer,
}

impl Answered {
    /// `answer`, then `after`.
    #[must_use]
    pub fn new(answer: Answer, after: AfterAnswer) -> Self {
        Self { answer, after }
    }
}

impl From<Answer> for Answered {
    /// An answer that leaves nothing for after it.
    fn from(answer: Answer) -> Self {
        Self::new(answer, AfterAnswer::none())
    }
}

/// One hook process: its host, environment and start instant.
pub struct Run<'a> {
    /// The host.
    pub host: Integration,
    /// The environment snapshot.
    pub env: &'a Env,
    /// When the process started: every deadline counts from here.
    pub start: Instant,
}

impl Run<'_> {
    /// A diagnostic of this host.
    #[must_use]
    pub fn diag(&self, stage: Stage, outcome: Outcome) -> Diagnostic {
        Diagnostic::new(self.host.component(), stage, outcome)
    }

    /// Reports a skipped payload (a content-free detail word) and answers nothing.
    #[must_use]
    // Kept out of line: a host's speed-optimized code calls this size-optimized copy.
    #[inline(never)]
    pub fn skip(&self, detail: &'static str) -> Answer {
        emit::diagnostic(&self.diag(Stage::Payload, Outcome::Skipped).detail(detail));
        Answer::Nothing
    }

    /// The hook's settings; an invalid one is reported (`config_invalid`, naming the setting,
    /// never its value) and gives `None`.
    #[must_use]
    // Kept out of line: a host's speed-optimized code calls this size-optimized copy.
    #[inline(never)]
    pub fn settings(&self) -> Option<Settings> {
        Settings::for_hook(self.host, self.env)
            .inspect_err(|e| {
                emit::diagnostic(
                    &self
                        .diag(Stage::Config, Outcome::ConfigInvalid)
                        .setting(e.setting.clone())
                        .problem(e.problem.clone()),
                );
            })
            .ok()
    }

    /// The run's deadline at `budget`, with the watchdog moved to it.
    #[must_use]
    pub fn arm(&self, budget: Duration) -> Deadline {
        self.arm_with_grace(budget, Duration::ZERO)
    }

    /// The run's deadline at `budget`; the watchdog leaves `grace` more for local work that must
    /// finish after the network deadline (a ledger write).
    #[must_use]
    pub fn arm_with_grace(&self, budget: Duration, grace: Duration) -> Deadline {
        process::arm_watchdog(self.start, budget + grace);
        Deadline::new(self.start, budget)
    }

    /// The payload on stdin (bounded; a problem is reported and gives `None`).
    #[must_use]
    pub fn payload(&self) -> Option<Vec<u8>> {
        process::read_payload(self.host.component())
    }
}

/// Runs a hook process of `host` end to end: `handle` gets the parsed command and the run, and
/// returns the reply. The exit code is always 0.
///
/// Only the command's parsing and the handler are generic: start-up and the answer are separate
/// functions, built once in this crate, rather than copied into each host's instantiation.
#[must_use]
pub fn run_hook<C: Command>(host: Integration, handle: impl FnOnce(C, &Run<'_>) -> Reply) -> ExitCode {
    let (start, env, args) = match start_up(host) {
        Ok(started) => started,
        Err(code) => return code,
    };
    let Some(command) = C::parse(&args) else {
        return unknown_subcommand(host);
    };
    let _journal = journal::start(host, command.event(), &env, start);
    if env.text(vars::FAULT) == Some("panic") {
        panic!("fault injection requested by {}", vars::FAULT);
    }
    let run = Run {
        host,
        env: &env,
        start,
    };
    let reply = handle(command, &run);
    answer(host, &env, reply)
}

/// Start-up up to the command line: the detached drainer's own entry (its exit code as the
/// error), the start instant, the fail-open process set-up, the environment and the arguments.
#[inline(never)]
fn start_up(host: Integration) -> Result<(Instant, Env, Vec<OsString>), ExitCode> {
    let component = host.component();
    if drain::is_drain_invocation() {
        return Err(drain::background_main(component));
    }
    let start = Instant::now();
    process::begin(component, start);
    let env = Env::from_process();
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    Ok((start, env, args))
}

/// Reports arguments no command of the host accepts.
#[inline(never)]
fn unknown_subcommand(host: Integration) -> ExitCode {
    emit::diagnostic(
        &Diagnostic::new(host.component(), Stage::Payload, Outcome::Skipped).detail("unknown_subcommand"),
    );
    ExitCode::SUCCESS
}

/// Delivers the reply, then hands leftover work to a detached drainer, unless the capture was
/// just handed to one.
#[inline(never)]
fn answer(host: Integration, env: &Env, reply: Reply) -> ExitCode {
    let done = protocol::deliver(host, reply.protocol, &reply.answer, reply.after);
    if done == Done::HandedOff {
        return ExitCode::SUCCESS;
    }
    match reply.then {
        Then::Drain => drain::spawn_if_needed(env),
        Then::DrainCaptures => {
            if StateDir::locate(env).is_ok_and(|s| spool::has_work(&s)) {
                drain::spawn_if_needed(env);
            }
        }
        Then::Stop => {}
    }
    ExitCode::SUCCESS
}
