//! The one place the CLI's commands print their results: a command builds a [`Report`] (its
//! `Serialize` form for `--json`, its `Display` form for people, its exit code) and [`emit`]
//! writes it; a refused command goes through [`refuse`]. Reports never hold a token, a scope id or
//! context text, and nothing else in the CLI prints a command's result. Everything the CLI writes
//! on stdout goes through [`out`], so a reader that leaves early never turns into a panic (the
//! hidden `debug ledger-record` helper aside: it records until its reader leaves).

use std::fmt;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use powercontext_hooks_core::config::Settings;
use serde::Serialize;

/// What a command has to say, in both forms.
pub(crate) trait Report: Serialize + fmt::Display {
    /// The command's exit code (success unless the report says otherwise).
    fn exit_code(&self) -> ExitCode {
        ExitCode::SUCCESS
    }
    /// An error to show on stderr beside the text form (the JSON form carries it as `error`).
    fn error(&self) -> Option<&str> {
        None
    }
}

/// Prints `report` on stdout, as one JSON object or as text, and gives its exit code. Every JSON
/// object says `"ok"`: the report's own, or whether the command exits 0.
pub(crate) fn emit(report: &impl Report, json: bool) -> anyhow::Result<ExitCode> {
    let code = report.exit_code();
    if json {
        let text = serde_json::to_string(report)?;
        // Put first, keeping the report's own member order (a `Value` would sort the members).
        let has_ok = serde_json::from_str::<serde_json::Value>(&text)?
            .get("ok")
            .is_some();
        match text.strip_prefix('{') {
            Some(rest) if !has_ok => {
                let sep = if rest == "}" { "" } else { "," };
                out(format_args!(
                    "{{\"ok\":{}{sep}{rest}\n",
                    code == ExitCode::SUCCESS
                ));
            }
            _ => out(format_args!("{text}\n")),
        }
    } else {
        out(report);
        if let Some(e) = report.error() {
            eprintln!("powercontext-hooks: error: {}", terminal_text(e));
        }
    }
    Ok(code)
}

/// For people only: what a command is about to do, before it does it (a host CLI call can take a
/// while). The report at the end then leaves it out; `--json` gets everything in that one object.
pub(crate) fn preview(view: &impl fmt::Display, json: bool) -> bool {
    if json {
        return false;
    }
    out(view);
    true
}

/// Set when stdout could not take the output for a reason other than a reader that left.
static OUTPUT_FAILED: AtomicBool = AtomicBool::new(false);

/// Writes `text` on stdout and flushes it. A reader that closed the pipe early (`status | head`)
/// only stops the output: the command still finishes its work and keeps its exit code, where a
/// print would have panicked halfway. Any other write error is said on stderr and makes the command
/// fail (see [`output_failed`]).
pub(crate) fn out(text: impl fmt::Display) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = write!(stdout, "{text}").and_then(|()| stdout.flush())
        && e.kind() != std::io::ErrorKind::BrokenPipe
    {
        // Said once: a command writing many lines to a full disk fails once.
        if !OUTPUT_FAILED.swap(true, Ordering::Relaxed) {
            eprintln!("powercontext-hooks: error: could not write the output: {e}");
        }
    }
}

/// Whether some output was lost to a write error other than a closed pipe.
pub(crate) fn output_failed() -> bool {
    OUTPUT_FAILED.load(Ordering::Relaxed)
}

/// A refused command: `{"ok":false,"error":…}` on stdout for `--json`, else the error on
/// stderr; exit code 1.
pub(crate) fn refuse(json: bool, e: &anyhow::Error) -> anyhow::Result<ExitCode> {
    Ok(refuse_with(json, &format!("{e:#}")))
}

/// [`refuse`] with a message.
pub(crate) fn refuse_with(json: bool, message: &str) -> ExitCode {
    if json {
        out(format_args!(
            "{}\n",
            serde_json::json!({"ok": false, "error": message})
        ));
    } else {
        eprintln!("powercontext-hooks: error: {}", terminal_text(message));
    }
    ExitCode::from(1)
}

/// An error for the terminal: its lines as they are, every other control character escaped. An
/// error can quote what came from elsewhere (an argument, a Server's error code), and an escape
/// sequence in it must be shown, never executed.
fn terminal_text(message: &str) -> String {
    message
        .split('\n')
        .map(crate::support::textstyle::terminal_safe)
        .collect::<Vec<_>>()
        .join("\n")
}

/// One setting as setup and doctor show it: its value (never a secret) and where it came from.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct SettingRow {
    pub name: &'static str,
    pub value: String,
    pub origin: String,
}

/// The settings a hook will use, as setup and doctor both show them.
pub(crate) fn setting_rows(s: &Settings) -> Vec<SettingRow> {
    let set = |on: bool, yes: &str, no: &str| if on { yes } else { no }.to_owned();
    vec![
        row(
            "server_url",
            s.server_url.value.as_str().to_owned(),
            &s.server_url.origin,
        ),
        row(
            "authorization",
            set(s.authorization.value.is_some(), "set (not shown)", "none"),
            &s.authorization.origin,
        ),
        row(
            "scope_id",
            set(
                s.scope_id.value.is_some(),
                "set (not shown)",
                "resolved by the Server",
            ),
            &s.scope_id.origin,
        ),
        row(
            "capture_prompts",
            set(s.capture_prompts.value, "on", "off"),
            &s.capture_prompts.origin,
        ),
        row(
            "bootstrap",
            set(s.bootstrap.value, "on", "off"),
            &s.bootstrap.origin,
        ),
        row(
            "bootstrap_max_bytes",
            s.bootstrap_max_bytes.value.to_string(),
            &s.bootstrap_max_bytes.origin,
        ),
        row(
            "capture_secrets",
            s.capture_secrets.value.as_str().to_owned(),
            &s.capture_secrets.origin,
        ),
        row(
            "flush_on_capture",
            set(s.flush_on_capture.value, "on", "off"),
            &s.flush_on_capture.origin,
        ),
        row(
            "request_timeout_seconds",
            s.request_timeout.value.as_secs_f64().to_string(),
            &s.request_timeout.origin,
        ),
        row(
            "budget_seconds",
            s.budget.value.as_secs_f64().to_string(),
            &s.budget.origin,
        ),
        row(
            "flush_max_calls",
            s.flush_max_calls.value.to_string(),
            &s.flush_max_calls.origin,
        ),
        row("max_bytes", s.max_bytes.value.to_string(), &s.max_bytes.origin),
    ]
}

fn row(name: &'static str, value: String, origin: &impl fmt::Display) -> SettingRow {
    SettingRow {
        name,
        value,
        origin: origin.to_string(),
    }
}
