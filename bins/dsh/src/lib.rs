//! The DSH (DeepSeek Harness) adapter: the executable behind the `agent/pre-step` middleware of
//! the thin Cordis plugin in `installers/dsh/`. The plugin forwards each step's batch; this crate
//! decides everything else (user text, scope, recall once per user turn, capture policy) and
//! answers with at most one JSON line. It never calls DSH back and never fails the step: exit 0.
//!
//! Command line (parsed by hand): `powercontext-hook-dsh pre-step` (batch JSON on stdin),
//! `powercontext-hook-dsh version`. Anything else is reported as `skipped` and does nothing.

use std::ffi::OsString;
use std::process::ExitCode;

use powercontext_hooks_core::emit;
use powercontext_hooks_core::hook::{self, Reply};
use powercontext_hooks_core::host::Integration;
use powercontext_hooks_core::protocol::Protocol;

pub mod event;
pub mod pre_step;
pub mod turns;

/// This host.
pub const HOST: Integration = Integration::Dsh;

/// The one hook command: handle one `agent/pre-step` batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PreStep;

impl hook::Command for PreStep {
    fn parse(args: &[OsString]) -> Option<Self> {
        matches!(args, [one] if one == "pre-step").then_some(Self)
    }

    fn event(self) -> &'static str {
        "agent/pre-step"
    }
}

/// Whether the command line asks for the version (answered before anything else starts).
#[must_use]
pub fn is_version(args: &[OsString]) -> bool {
    matches!(args, [one] if one == "version" || one == "--version")
}

/// Runs the hook process.
#[must_use]
pub fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    if is_version(&args) {
        emit::stdout_line(concat!("powercontext-hook-dsh ", env!("CARGO_PKG_VERSION")));
        return ExitCode::SUCCESS;
    }
    hook::run_hook(HOST, |PreStep, run| {
        Reply::drain(Protocol::DshPreStep, pre_step::run(run))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use powercontext_hooks_core::hook::Command as _;

    fn args(a: &[&str]) -> Vec<OsString> {
        a.iter().map(OsString::from).collect()
    }

    #[test]
    fn subcommands_are_parsed_by_hand() {
        assert_eq!(PreStep::parse(&args(&["pre-step"])), Some(PreStep));
        assert!(is_version(&args(&["version"])));
        assert!(is_version(&args(&["--version"])));
        assert!(!is_version(&args(&["version", "x"])));
        assert_eq!(PreStep::parse(&args(&[])), None);
        assert_eq!(PreStep::parse(&args(&["pre-step", "extra"])), None);
        assert_eq!(PreStep::parse(&args(&["post-step"])), None);
    }
}
