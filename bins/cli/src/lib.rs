//! The `powercontext-hooks` command line: the only place clap and anyhow are used. It never
//! shadows the Python `powercontext` CLI (which owns `server run`) and never embeds the Server.
//!
//! # Layers
//!
//! Four folders, read bottom up: `support/` (helpers any layer may use), `installer/` (what the
//! commands and the host installers say to each other), `hosts/` (one installer per host) and
//! `commands/` (one module per command). A module imports only from its own layer or the layers
//! listed before it, and the modules' imports form no cycle (both held by a test that reads
//! these sources):
//!
//! 1. Text and values: `support::textstyle`, `support::jsonc`, `support::report`.
//! 2. Files, programs and the Server: `support::install`, `support::paths`, `support::exe_copy`,
//!    `support::host_cli`, `support::ops`.
//! 3. The installer vocabulary: `installer::undo`, `installer::checks`,
//!    `installer::shared_files`, `installer::plan`, `installer::contract`.
//! 4. Host installers: `hosts::common`, `hosts::marketplace`, `hosts::settings_hooks`,
//!    `hosts::claude_code`, `hosts::codex`, `hosts::opencode`, `hosts::pi`, `hosts::dsh`,
//!    `hosts::hermes`, `hosts::kimi_code`, `hosts::openclaw`, `hosts::zcode`, `hosts`.
//! 5. Commands: `commands::activity`, `commands::explicit`, `commands::memory`, `commands::pin`,
//!    `commands::state_cmd`, `commands::interop`, `commands::setup`, `commands::doctor`,
//!    `commands::uninstall`, `commands::package`.
#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "a command-line tool talks on its terminal"
)]

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// A closed set of words (doctor's tiers and verdicts, setup's file actions): one enum whose
/// `Display` (padding honoured) and `Serialize` both give the word, spelled once.
macro_rules! words {
    ($(#[$m:meta])* $vis:vis enum $name:ident { $($v:ident => $w:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        $vis enum $name {
            $(#[doc = $w] $v),+
        }

        impl $name {
            /// The word.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $(Self::$v => $w),+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
    };
}

mod support {
    //! Helpers every layer may use: terminal text, the JSONC editor, command reports, file and
    //! manifest machinery, the hook executable's copy, host CLIs, where things are, Server
    //! operations. Nothing here knows a command or a host installer.
    pub mod exe_copy;
    pub mod host_cli;
    pub mod install;
    pub mod jsonc;
    pub mod ops;
    pub mod paths;
    pub mod report;
    pub mod textstyle;
}

mod installer {
    //! What setup, doctor and uninstall say to a host installer: the plan, the checks, the undo
    //! records and the installer trait itself, plus the files every host shares. Nothing here
    //! picks a host.
    pub mod checks;
    pub mod contract;
    pub mod plan;
    pub mod shared_files;
    pub mod undo;
}

mod hosts;

mod commands {
    //! One module per command (or family of commands): each parses its flags, calls the layers
    //! below and returns a report.
    pub mod activity;
    pub mod doctor;
    pub mod explicit;
    pub mod interop;
    pub mod memory;
    pub mod package;
    pub mod pin;
    pub mod setup;
    pub mod state_cmd;
    pub mod uninstall;
}

use commands::{activity, doctor, explicit, interop, memory, package, pin, setup, state_cmd, uninstall};
use support::report;

/// Connect coding-agent hosts to a PowerContext Server through fast, fail-open hook executables.
#[derive(Debug, Parser)]
#[command(name = "powercontext-hooks", version, after_help = AFTER_HELP)]
pub struct Args {
    #[command(subcommand)]
    command: Option<Command>,
}

/// The command line with its long description, which names every host's hook executable from the
/// host table.
fn command() -> clap::Command {
    use clap::CommandFactory;
    let exes: Vec<&str> = powercontext_hooks_core::host::Integration::ALL
        .iter()
        .map(|h| h.spec().hook_exe)
        .collect();
    Args::command().long_about(format!(
        "Connect coding-agent hosts to a PowerContext Server through fast, fail-open hook \
         executables.\n\nHook executables (run by the hosts, not by you): {}. Each reads the \
         host's event on stdin, injects recalled context for the current prompt, captures the \
         prompt as a Source (never secret-like text), and always exits 0.",
        exes.join(", ")
    ))
}

const AFTER_HELP: &str = "\
Configuration: environment variables (POWERCONTEXT_<HOST>_SERVER_URL, POWERCONTEXT_<HOST>_AUTHORIZATION, …)
override the optional file ~/.config/powercontext-hooks/config.toml (or $POWERCONTEXT_HOOKS_CONFIG).
docs/configuration.md has the full table. The Server itself is run by the Python CLI: `powercontext server run`.";

#[derive(Debug, Subcommand)]
enum Command {
    /// Print the version.
    Version {
        /// One JSON object on stdout instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Install the hooks into a host (prints the plan first; `--dry-run` stops there).
    Setup(installer::plan::SetupArgs),
    /// Remove exactly what `setup` installed for a host.
    Uninstall(uninstall::UninstallArgs),
    /// Check installed → activated → Server-ready → working, with a fix for each failure.
    Doctor(doctor::DoctorArgs),
    /// Render the plugin source tree for the official `powercontext setup <host> --source DIR`.
    Package(package::PackageArgs),
    /// Print the MCP headers (the saved token) for a host's MCP headers helper.
    #[command(hide = true)]
    McpHeaders(interop::McpHeadersArgs),
    /// Show the local state: hook runs per host and event, pending flushes, spooled captures,
    /// the last drain (content-free).
    Status(state_cmd::StatusArgs),
    /// One line for Claude Code's status line (reads its JSON on stdin; journal and state only).
    Statusline,
    /// Deliver spooled captures and flush pending scopes now; exit 1 if anything is left.
    Flush(state_cmd::FlushArgs),
    /// Add a memory (an atomic memory in the hooks' scope; secret-like text is refused).
    Remember(memory::RememberArgs),
    /// Search the memories of the hooks' scope.
    Search(memory::SearchArgs),
    /// List the memories of the hooks' scope, numbered for `pin`.
    List(memory::ListArgs),
    /// Run one curated Server operation (arguments as JSON on stdin; one JSON answer).
    Op(explicit::OpArgs),
    /// Curate a memory for session bootstrap (tag it `bootstrap-context`).
    Pin(pin::PinArgs),
    /// Remove a memory from session bootstrap.
    Unpin(pin::PinArgs),
    /// One background-style drain pass (what hooks start after answering).
    #[command(hide = true)]
    Drain(state_cmd::DrainArgs),
    /// Test helpers.
    #[command(hide = true, subcommand)]
    Debug(state_cmd::DebugCommand),
}

/// Runs the CLI and returns its exit code.
#[must_use]
pub fn main() -> ExitCode {
    // A drain started by `flush` for captures handed over once its budget was spent.
    if powercontext_hooks_core::drain::is_drain_invocation() {
        return powercontext_hooks_core::drain::background_main("powercontext.cli");
    }
    let args = match command()
        .try_get_matches()
        .and_then(|m| <Args as clap::FromArgMatches>::from_arg_matches(&m))
    {
        Ok(args) => args,
        // A script that asked for JSON gets JSON for a bad argument too (an unknown host, say),
        // with clap's usage-error exit code, as in text mode.
        Err(e) if e.use_stderr() && std::env::args_os().any(|a| a == "--json") => {
            let detail = e.render().to_string();
            // The message is everything before the usage lines: for a missing argument the
            // names are on the lines after the first.
            let message = detail
                .lines()
                .map(str::trim)
                .take_while(|l| !l.is_empty() && !l.starts_with("Usage:"))
                .collect::<Vec<_>>()
                .join(" ");
            let message = message.trim_start_matches("error: ");
            report::refuse_with(true, message);
            return ExitCode::from(2);
        }
        // Help and version asked for: on stdout through the one writer, like every other output.
        Err(e) if !e.use_stderr() => {
            report::out(e.render());
            return ExitCode::from(u8::from(report::output_failed()));
        }
        Err(e) => e.exit(),
    };
    let json = std::env::args_os().any(|a| a == "--json");
    match run(args) {
        // Output lost to a full disk or a closed descriptor is a failure, even of a command that
        // did its work (a closed pipe is not: its reader chose to stop).
        Ok(code) if code == ExitCode::SUCCESS && report::output_failed() => ExitCode::from(1),
        Ok(code) => code,
        // A command that could not run at all: exit 2, in the form the caller asked for.
        Err(e) => {
            report::refuse_with(json, &format!("{e:#}"));
            ExitCode::from(2)
        }
    }
}

fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.command {
        Some(Command::Version { json: true }) => {
            report::out(format_args!(
                "{}\n",
                serde_json::json!({"ok": true, "version": env!("CARGO_PKG_VERSION")})
            ));
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Version { json: false }) => {
            report::out(format_args!("powercontext-hooks {}\n", env!("CARGO_PKG_VERSION")));
            Ok(ExitCode::SUCCESS)
        }
        Some(Command::Setup(a)) => setup::setup(&a),
        Some(Command::Uninstall(a)) => uninstall::uninstall(&a),
        Some(Command::Doctor(a)) => doctor::doctor(&a),
        Some(Command::Package(a)) => package::package(&a),
        Some(Command::McpHeaders(a)) => interop::mcp_headers(&a),
        Some(Command::Status(a)) => state_cmd::status(&a),
        Some(Command::Statusline) => Ok(activity::statusline()),
        Some(Command::Flush(a)) => state_cmd::flush(&a),
        Some(Command::Remember(a)) => memory::remember(&a),
        Some(Command::Search(a)) => memory::search(&a),
        Some(Command::List(a)) => memory::list(&a),
        Some(Command::Op(a)) => explicit::run(&a),
        Some(Command::Pin(a)) => pin::run(&a, true),
        Some(Command::Unpin(a)) => pin::run(&a, false),
        Some(Command::Drain(a)) => state_cmd::drain_once(&a),
        Some(Command::Debug(c)) => state_cmd::debug(&c),
        None => {
            report::out(format_args!("{}\n", command().render_help()));
            Ok(ExitCode::SUCCESS)
        }
    }
}
