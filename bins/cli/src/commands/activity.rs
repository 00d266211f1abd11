//! The hook-activity part of `status` and the `statusline` command: figures read from the run
//! journal (and, for the status line, the spool and ledger counts) — last fired, outcomes,
//! durations, bytes injected, capture fates. Content-free by construction: the journal holds only
//! closed words and numbers. It never calls the network and never takes the state lock.

use std::io::{IsTerminal, Read, Write};
use std::process::ExitCode;
use std::time::Duration;

use powercontext_hooks_core::env::Env;
use powercontext_hooks_core::host::Integration;
use powercontext_hooks_core::journal::{self, Record, Summary};
use powercontext_hooks_core::state::{StateDir, now_millis};
use powercontext_hooks_core::{ledger, spool};
use serde_json::{Value, json};

/// "just now", "42 s ago", "5 min ago", "3 h ago", "2 d ago"; "at a time ahead of this clock".
#[must_use]
pub fn ago(now_ms: u64, at_ms: u64) -> String {
    // A time ahead of this clock (it was moved back since) is not "just now".
    if at_ms > now_ms.saturating_add(5_000) {
        return "at a time ahead of this clock".to_owned();
    }
    let s = now_ms.saturating_sub(at_ms) / 1000;
    match s {
        0..=4 => "just now".to_owned(),
        5..=59 => format!("{s} s ago"),
        60..=3599 => format!("{} min ago", s / 60),
        3600..=86_399 => format!("{} h ago", s / 3600),
        _ => format!("{} d ago", s / 86_400),
    }
}

/// Bytes as `812 B`, `3.4 KB`, `1.2 MB`.
#[must_use]
pub fn bytes(n: u64) -> String {
    #[allow(clippy::cast_precision_loss, reason = "one decimal of a display value")]
    let f = n as f64;
    match n {
        0..1000 => format!("{n} B"),
        1000..1_000_000 => format!("{:.1} KB", f / 1000.0),
        _ => format!("{:.1} MB", f / 1_000_000.0),
    }
}

/// The activity figures for `status`.
#[must_use]
pub fn summaries(state: &StateDir, now_ms: u64) -> Vec<Summary> {
    journal::summarize(&journal::read_all(state.path()), now_ms)
}

/// The `hooks` member of `status --json`.
#[must_use]
pub fn to_json(summaries: &[Summary], now_ms: u64) -> Value {
    summaries
        .iter()
        .map(|s| {
            let mut v = serde_json::to_value(s).unwrap_or(Value::Null);
            v["last_fired_age_seconds"] = json!(now_ms.saturating_sub(s.last_at) / 1000);
            v
        })
        .collect()
}

/// The text lines of `status`.
#[must_use]
pub fn lines(summaries: &[Summary], now_ms: u64) -> Vec<String> {
    if summaries.is_empty() {
        return vec!["hook runs: none recorded yet".to_owned()];
    }
    let mut out = vec!["hook runs (figures over the last 24 h):".to_owned()];
    for s in summaries {
        let durations = match (s.p50_ms, s.p95_ms) {
            (Some(p50), Some(p95)) => format!("p50 {p50} ms, p95 {p95} ms"),
            _ => "no run in 24 h".to_owned(),
        };
        out.push(format!(
            // What the user asks is "did my prompts get there": a capture handed to the background
            // drainer is on its way (one that fails there is spooled by the drainer), so it counts
            // with the delivered ones.
            "  {} {}: last fired {} ({}); {} run(s), {} failed; {durations}; {} injected; captures {} delivered or queued, {} spooled, {} skipped",
            s.host,
            s.event,
            ago(now_ms, s.last_at),
            s.last_outcome,
            s.runs_24h,
            s.failures_24h,
            bytes(s.injected_bytes_24h),
            s.captures_delivered_24h + s.captures_queued_24h,
            s.captures_spooled_24h,
            s.captures_skipped_24h,
        ));
    }
    out
}

/// Largest status-line payload read from stdin.
const MAX_STDIN: u64 = 64 * 1024;
/// The longest the status line waits for its stdin.
const STDIN_WAIT: Duration = Duration::from_millis(50);

/// A short phrase for a failure word.
fn failure_phrase(outcome: &str) -> String {
    match outcome {
        "server_unavailable" => "server down".to_owned(),
        "timeout" => "timed out".to_owned(),
        "authentication_failed" => "token rejected".to_owned(),
        "forbidden" => "token not allowed".to_owned(),
        "scope_not_found" => "scope not found".to_owned(),
        "version_mismatch" => "server version mismatch".to_owned(),
        "invalid_response" => "bad server answer".to_owned(),
        "config_invalid" => "config invalid".to_owned(),
        "state_unavailable" => "state unusable".to_owned(),
        "internal_error" => "internal error".to_owned(),
        other => other.replace('_', " "),
    }
}

/// The status line from Claude Code's journal records (oldest first) and the local counts.
#[must_use]
pub fn statusline_text(records: &[Record], spooled: usize, pending_flushes: usize, now_ms: u64) -> String {
    let prompts: Vec<&Record> = records.iter().filter(|r| r.event == "UserPromptSubmit").collect();
    let Some(latest) = prompts.last() else {
        return "PC · no prompt hook run yet".to_owned();
    };
    // A run that skipped (a blank or private prompt) asked the Server nothing: the line shows
    // the last run that did, so one such prompt does not turn "server down" into ✓.
    let last = prompts
        .iter()
        .rev()
        .find(|r| r.outcome != "skipped")
        .unwrap_or(latest);
    let mut line = if last.failed() {
        format!("PC ✗ {} · {spooled} spooled", failure_phrase(&last.outcome))
    } else {
        let since = now_ms.saturating_sub(u64::try_from(journal::WINDOW.as_millis()).unwrap_or(u64::MAX));
        let recalled = prompts.iter().filter(|r| r.at >= since && r.injected > 0).count();
        format!(
            "PC ✓ {} ms · {recalled} recalled · {} pending",
            last.ms,
            spooled + pending_flushes
        )
    };
    // Silence is the failure this line exists to show: an old last run says so.
    if now_ms.saturating_sub(latest.at) >= 3_600_000 {
        line.push_str(" · ");
        line.push_str(&ago(now_ms, latest.at));
    }
    // The words come from a file on disk: the terminal sees them escaped, as `status` shows them.
    crate::support::textstyle::terminal_safe(&line)
}

/// Drains Claude Code's JSON payload (bounded in size and time; its fields are not needed).
fn drain_stdin() {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return;
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = std::io::stdin().lock().take(MAX_STDIN).read_to_end(&mut buf);
        let _ = tx.send(());
    });
    let _ = rx.recv_timeout(STDIN_WAIT);
}

/// `powercontext-hooks statusline`: one line for Claude Code's status line, from the journal and
/// local state only. Never fails: at worst it prints a neutral line; always exit 0.
#[must_use]
pub fn statusline() -> ExitCode {
    drain_stdin();
    let env = Env::from_process();
    let line = match StateDir::locate(&env) {
        Ok(state) => {
            let records = journal::read(state.path(), Integration::ClaudeCode);
            let spooled = spool::list(&state).map_or(0, |e| e.len());
            let pending = ledger::load(&state).map_or(0, |e| e.len());
            statusline_text(&records, spooled, pending, now_millis())
        }
        Err(_) => "PC · no state directory".to_owned(),
    };
    // A closed stdout must not turn into a panic: the status line never fails.
    let _ = writeln!(std::io::stdout(), "{line}");
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(at: u64, outcome: &str, ms: u64, injected: u64) -> Record {
        Record {
            v: journal::FORMAT,
            at,
            host: "claude-code".into(),
            event: "UserPromptSubmit".into(),
            outcome: outcome.into(),
            ms,
            injected,
            ..Record::default()
        }
    }

    #[test]
    fn status_line_forms() {
        let now = 10 * 86_400_000;
        assert_eq!(statusline_text(&[], 0, 0, now), "PC · no prompt hook run yet");
        let ok = vec![
            rec(now - 9000, "ready", 20, 300),
            rec(now - 8000, "empty", 15, 0),
            rec(now - 7000, "ready", 11, 200),
            rec(now - 6000, "ready", 12, 100),
        ];
        assert_eq!(
            statusline_text(&ok, 0, 0, now),
            "PC ✓ 12 ms · 3 recalled · 0 pending"
        );
        let mut down = ok.clone();
        down.push(rec(now - 1000, "server_unavailable", 40, 0));
        assert_eq!(statusline_text(&down, 2, 1, now), "PC ✗ server down · 2 spooled");
        // A blank or private prompt asks the Server nothing: the line keeps saying it is down.
        down.push(rec(now - 500, "skipped", 0, 0));
        assert_eq!(statusline_text(&down, 2, 1, now), "PC ✗ server down · 2 spooled");
        let stale = vec![rec(now - 2 * 86_400_000, "ready", 9, 10)];
        assert_eq!(
            statusline_text(&stale, 0, 0, now),
            "PC ✓ 9 ms · 0 recalled · 0 pending · 2 d ago"
        );
    }

    #[test]
    fn relative_times_and_sizes() {
        assert_eq!(ago(100_000, 99_000), "just now");
        assert_eq!(
            ago(100_000, 100_000 + 8 * 86_400_000),
            "at a time ahead of this clock"
        );
        assert_eq!(ago(100_000, 58_000), "42 s ago");
        assert_eq!(ago(10_000_000, 10_000_000 - 7_200_000), "2 h ago");
        assert_eq!(bytes(812), "812 B");
        assert_eq!(bytes(3400), "3.4 KB");
    }

    /// The status line reaches the terminal like `status` does: a journal record's words never
    /// carry a control character there (a planted escape sequence is shown, not executed).
    #[test]
    fn status_line_escapes_control_characters_from_the_journal() {
        let now = 10 * 86_400_000;
        let planted = vec![rec(now - 1000, "\u{1b}]0;owned\u{7}\u{1b}[2J", 5, 0)];
        let line = statusline_text(&planted, 0, 0, now);
        assert!(!line.chars().any(char::is_control), "{line:?}");
        assert!(line.contains(r"\u{1b}]0;owned"), "{line:?}");
    }
}
