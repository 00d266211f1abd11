//! The DSH (DeepSeek Harness) adapter: the executable behind the `agent/pre-step` middleware of
//! the thin Cordis plugin in `installers/dsh/`. The plugin forwards each step's batch; this crate
//! decides everything else (user text, scope, recall once per user turn, capture policy) and
//! answers with at most one JSON line. It never calls DSH back and never fails the step: exit 0.
//!
//! Command line (parsed by hand): `powercontext-hook-dsh pre-step` (batch JSON on stdin),
//! `powercontext-hook-dsh version`. Anything else is reported as `skipped` and does nothing.

use std::ffi::OsString;
use std::process::ExitCode;
use std::time::Instant;

use powercontext_hooks_core::drain;
use powercontext_hooks_core::emit;
use powercontext_hooks_core::env::Env;
use powercontext_hooks_core::journal;
use powercontext_hooks_core::outcome::{Diagnostic, Outcome, Stage};
use powercontext_hooks_core::process;

pub mod event;
pub mod pre_step;
pub mod turns;

/// What the command line asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Handle one `agent/pre-step` batch.
    PreStep,
    /// Print the version.
    Version,
    /// The detached background drainer (started by a hook run, never by the plugin).
    Drain,
    /// Missing or unknown: do nothing.
    Unknown,
}

/// Parses the arguments after the program name.
#[must_use]
pub fn parse_args(args: &[OsString]) -> Command {
    match args.first().and_then(|a| a.to_str()) {
        Some("pre-step") if args.len() == 1 => Command::PreStep,
        Some("version" | "--version") if args.len() == 1 => Command::Version,
        Some(drain::DRAIN_ARG) => Command::Drain,
        _ => Command::Unknown,
    }
}

/// Runs the hook process.
#[must_use]
pub fn main() -> ExitCode {
    let start = Instant::now();
    let component = pre_step::HOST.component();
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    match parse_args(&args) {
        Command::Drain => drain::background_main(component),
        Command::Version => {
            emit::stdout_line(concat!("powercontext-hook-dsh ", env!("CARGO_PKG_VERSION")));
            ExitCode::SUCCESS
        }
        Command::Unknown => {
            emit::diagnostic(
                &Diagnostic::new(component, Stage::Payload, Outcome::Skipped).detail("unknown_subcommand"),
            );
            ExitCode::SUCCESS
        }
        Command::PreStep => {
            process::begin(component, start);
            let env = Env::from_process();
            let _journal = journal::start(pre_step::HOST, "agent/pre-step", &env, start);
            pre_step::main(&env, start)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    #[test]
    fn subcommands_are_parsed_by_hand() {
        assert_eq!(parse_args(&args(&["pre-step"])), Command::PreStep);
        assert_eq!(parse_args(&args(&["version"])), Command::Version);
        assert_eq!(parse_args(&args(&["--version"])), Command::Version);
        assert_eq!(parse_args(&args(&[drain::DRAIN_ARG])), Command::Drain);
        assert_eq!(parse_args(&args(&[])), Command::Unknown);
        assert_eq!(parse_args(&args(&["pre-step", "extra"])), Command::Unknown);
        assert_eq!(parse_args(&args(&["post-step"])), Command::Unknown);
    }
}
