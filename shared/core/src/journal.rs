//! The run journal: one small content-free record per hook run (time, host, event, outcome per
//! stage, duration, bytes injected, what became of the capture), appended to a bounded per-host
//! file in the state directory, so `status`, `doctor` and the status line can show that hooks *are*
//! firing. It never holds a prompt, scope id, context, body, token or path: only closed words and
//! numbers. It never takes the state lock and never lists a directory on the prompt path.
//!
//! Layout: `journal-<host>.jsonl` (current segment) and `journal-<host>.1.jsonl` (previous one).
//! Each run appends one JSON line with a single `O_APPEND` write (small writes to a local file are
//! not interleaved, so concurrent hooks need no lock). A writer that finds the current segment
//! past [`MAX_SEGMENT_BYTES`] renames it over the previous one, so a host never holds more than
//! two segments (about 256 KiB, well over a thousand runs). Two writers rotating at the same
//! moment may lose one segment's worth of history; they can never grow the files. Readers skip
//! any line they cannot parse (a torn write after a full disk).
//!
//! In-process, a run is collected in one mutex-guarded value: [`start`] when the hook knows its
//! host, [`observe`] for every diagnostic (called by `emit`), [`note_recalled`] and
//! [`note_delivered`] for the successes that write no diagnostic, and [`finish`] once at the end
//! (the answer, the watchdog, the panic hook) — later calls do nothing.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::env::Env;
use crate::host::Integration;
use crate::outcome::{Diagnostic, Outcome, Stage};
use crate::state::{Opened, StateDir, now_millis, open_state_file};

/// Record format version.
pub const FORMAT: u64 = 1;

/// A segment is rotated once it is larger than this; a host keeps at most two segments.
pub const MAX_SEGMENT_BYTES: u64 = 128 * 1024;

/// The most stage outcomes one record keeps (a run has at most a handful).
pub const MAX_STAGES: usize = 8;

/// `off` (or `0`, `false`, `no`) disables the journal; `doctor` sets it for its synthetic runs so
/// they never count as the host firing.
pub const JOURNAL_VAR: &str = crate::variables::HOOKS_JOURNAL;

/// The window of the `status` figures.
pub const WINDOW: Duration = Duration::from_secs(24 * 60 * 60);

/// One hook run, as written (and read back).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Record {
    /// Record format.
    pub v: u64,
    /// When the run ended, milliseconds since the Unix epoch.
    pub at: u64,
    /// The host (`claude-code`, `codex`, …).
    pub host: String,
    /// The host event (`UserPromptSubmit`, `Stop`, `before_agent_start`, …).
    pub event: String,
    /// The run's outcome: its first failure, else `ready`, `empty` or `skipped`.
    pub outcome: String,
    /// Wall time from process start to the record, in milliseconds.
    pub ms: u64,
    /// Bytes of context injected into the host.
    #[serde(skip_serializing_if = "is_zero")]
    pub injected: u64,
    /// What became of the prompt capture: `delivered`, `queued` (handed to the background
    /// drainer), `spooled`, `skipped` or `failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capture: Option<String>,
    /// The rule that skipped the capture (a secret rule's name, `too_large`, `lossy`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// `stage:outcome` for every diagnostic of the run, in order (at most [`MAX_STAGES`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<String>,
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if signature"
)]
fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Record {
    /// Whether this run failed (its outcome is a failure word).
    #[must_use]
    pub fn failed(&self) -> bool {
        is_failure_word(&self.outcome)
    }
}

/// Whether an outcome means the run did not do its job. Skips by policy (`skipped`, the capture
/// skips), an `empty` answer, a spooled capture and a clamped request are not failures.
#[must_use]
pub fn is_failure(outcome: Outcome) -> bool {
    !matches!(
        outcome,
        Outcome::Ready
            | Outcome::Skipped
            | Outcome::Empty
            | Outcome::CaptureSkippedSecret
            | Outcome::CaptureSkippedTooLarge
            | Outcome::CaptureSkippedLossy
            | Outcome::CaptureSpooled
            | Outcome::StateRepaired
            | Outcome::MaxBytesClamped
    )
}

fn is_failure_word(word: &str) -> bool {
    !matches!(
        word,
        "ready"
            | "skipped"
            | "empty"
            | "capture_skipped_secret"
            | "capture_skipped_too_large"
            | "capture_skipped_lossy"
            | "capture_spooled"
            | "state_repaired"
            | "max_bytes_clamped"
            | ""
    )
}

/// The stage's name as diagnostics spell it.
#[must_use]
pub fn stage_name(stage: Stage) -> &'static str {
    match stage {
        Stage::Config => "config",
        Stage::Payload => "payload",
        Stage::Scope => "scope_resolve",
        Stage::Prepare => "context_prepare",
        Stage::Bootstrap => "context_bootstrap",
        Stage::Capture => "source_capture",
        Stage::Flush => "memory_flush",
        Stage::State => "state",
        Stage::Process => "process",
    }
}

/// The current segment's file name for a host.
#[must_use]
pub fn file_name(host: Integration) -> String {
    format!("journal-{}.jsonl", host.as_str())
}

/// The previous segment's file name for a host.
#[must_use]
pub fn previous_file_name(host: Integration) -> String {
    format!("journal-{}.1.jsonl", host.as_str())
}

// ---- the run in progress

struct Run {
    host: Integration,
    event: &'static str,
    started: Instant,
    dir: PathBuf,
    stages: Vec<(Stage, Outcome)>,
    recalled: Option<u64>,
    capture: Option<&'static str>,
    rule: Option<&'static str>,
    done: bool,
}

/// Process-wide because the panic hook and the watchdog write the record on their way out, and
/// every diagnostic, from any module, is observed into it.
static RUN: Mutex<Option<Run>> = Mutex::new(None);

/// The run, waiting at most a few milliseconds: a thread that panicked while holding it (or a
/// watchdog racing the main thread) must never deadlock the exit.
fn run_guard() -> Option<MutexGuard<'static, Option<Run>>> {
    let begin = Instant::now();
    loop {
        match RUN.try_lock() {
            Ok(g) => return Some(g),
            Err(TryLockError::Poisoned(p)) => return Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => {
                if begin.elapsed() > Duration::from_millis(20) {
                    return None;
                }
                std::thread::yield_now();
            }
        }
    }
}

/// Whether `env` turns the journal off.
#[must_use]
pub fn disabled(env: &Env) -> bool {
    env.text(JOURNAL_VAR).and_then(crate::base::parse_bool) == Some(false)
}

/// Ends the run (without an answer) when dropped, so every return path of a hook's `main`
/// writes its record; a run already finished by the answer is not written twice.
#[derive(Debug)]
#[must_use = "the run is recorded when this guard is dropped"]
pub struct RunGuard(());

impl Drop for RunGuard {
    fn drop(&mut self) {
        finish(None);
    }
}

/// Starts collecting this process's run: `host` handling `event` since `started`. Without a
/// state directory, or with the journal off, nothing is recorded. Keep the guard until `main`
/// returns.
pub fn start(host: Integration, event: &'static str, env: &Env, started: Instant) -> RunGuard {
    if disabled(env) {
        return RunGuard(());
    }
    let Ok(dir) = StateDir::locate(env) else {
        return RunGuard(());
    };
    if let Some(mut g) = run_guard() {
        *g = Some(Run {
            host,
            event,
            started,
            dir: dir.path().to_path_buf(),
            stages: Vec::new(),
            recalled: None,
            capture: None,
            rule: None,
            done: false,
        });
    }
    RunGuard(())
}

/// Names the event once the payload told it (a closed word, never payload text).
pub fn set_event(event: &'static str) {
    with_run(|r| r.event = event);
}

fn with_run(f: impl FnOnce(&mut Run)) {
    if let Some(mut g) = run_guard()
        && let Some(run) = g.as_mut()
        && !run.done
    {
        f(run);
    }
}

/// Records one emitted diagnostic (stage, outcome and the capture's fate).
pub fn observe(d: &Diagnostic) {
    with_run(|r| apply(r, d));
}

fn apply(r: &mut Run, d: &Diagnostic) {
    if r.stages.len() < MAX_STAGES && r.stages.last() != Some(&(d.event, d.outcome)) {
        r.stages.push((d.event, d.outcome));
    }
    match d.outcome {
        Outcome::CaptureSpooled => r.capture = Some("spooled"),
        Outcome::CaptureSkippedSecret => {
            r.capture = Some("skipped");
            r.rule = Some(d.detail.unwrap_or("secret"));
        }
        Outcome::CaptureSkippedTooLarge => {
            r.capture = Some("skipped");
            r.rule = Some("too_large");
        }
        Outcome::CaptureSkippedLossy => {
            r.capture = Some("skipped");
            r.rule = Some("lossy");
        }
        o if d.event == Stage::Capture && is_failure(o) && r.capture.is_none() => {
            r.capture = Some("failed");
        }
        _ => {}
    }
}

/// Records a ready context of `bytes` (a success writes no diagnostic).
pub fn note_recalled(bytes: usize) {
    with_run(|r| {
        r.recalled = Some(bytes as u64);
        if r.stages.len() < MAX_STAGES {
            r.stages.push((Stage::Prepare, Outcome::Ready));
        }
    });
}

/// Records a capture the Server took.
pub fn note_delivered() {
    with_run(|r| {
        if r.capture != Some("spooled") {
            r.capture = Some("delivered");
        }
    });
}

/// Records a capture handed to the background drainer after the answer (delivered by it, not
/// by this run).
pub fn note_queued() {
    with_run(|r| {
        if r.capture.is_none() {
            r.capture = Some("queued");
        }
    });
}

/// Ends the run normally: `answered` is the length of the answer given to the host, if any.
pub fn finish(answered: Option<usize>) {
    end(answered, false);
}

/// Ends the run from the watchdog or the panic hook: with no failure recorded yet, the process
/// ran out of time.
pub fn finish_abrupt() {
    end(None, true);
}

fn end(answered: Option<usize>, abrupt: bool) {
    let Some(mut g) = run_guard() else { return };
    let Some(run) = g.as_mut() else { return };
    if run.done {
        return;
    }
    run.done = true;
    if abrupt && !run.stages.iter().any(|(_, o)| is_failure(*o)) {
        run.stages.push((Stage::Process, Outcome::Timeout));
    }
    let injected = answered.map_or(0, |len| run.recalled.unwrap_or(len as u64));
    let record = build(run, injected);
    let host = run.host;
    let dir = run.dir.clone();
    drop(g);
    if let Ok(mut line) = serde_json::to_vec(&record) {
        line.push(b'\n');
        let _ = append(&dir, host, &line);
    }
}

fn build(run: &Run, injected: u64) -> Record {
    let outcome = run
        .stages
        .iter()
        .find(|(_, o)| is_failure(*o))
        .map(|(_, o)| *o)
        .or_else(|| (injected > 0 || run.recalled.is_some()).then_some(Outcome::Ready))
        .or_else(|| {
            run.stages
                .iter()
                .any(|(_, o)| *o == Outcome::Empty)
                .then_some(Outcome::Empty)
        })
        .unwrap_or(Outcome::Skipped);
    Record {
        v: FORMAT,
        at: now_millis(),
        host: run.host.as_str().to_owned(),
        event: run.event.to_owned(),
        outcome: outcome.as_str().to_owned(),
        ms: u64::try_from(run.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        injected,
        capture: run.capture.map(str::to_owned),
        rule: run.rule.map(str::to_owned),
        stages: run
            .stages
            .iter()
            .map(|(s, o)| format!("{}:{}", stage_name(*s), o.as_str()))
            .collect(),
    }
}

// ---- the files

fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        // Never through a symlink; never block on a FIFO planted under the name.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

/// Appends one line to `host`'s journal in `dir` (created 0700 if missing), rotating the segment
/// when it grew past [`MAX_SEGMENT_BYTES`]. No lock: one `O_APPEND` write per record.
///
/// # Errors
/// The I/O error; the caller ignores it (a journal never fails a hook).
pub fn append(dir: &Path, host: Integration, line: &[u8]) -> io::Result<()> {
    let path = dir.join(file_name(host));
    // One stat: never write into a state directory another user owns (created 0700 if missing).
    StateDir::at(dir)
        .ensure(None)
        .map_err(|e| io::Error::other(e.to_string()))?;
    let file = open_append(&path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::other("journal is not a regular file"));
    }
    // A segment someone else owns is never written to (nor made ours by a chmod).
    if meta.uid() != crate::state::euid() {
        return Err(io::Error::other("journal is not ours"));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        file.set_permissions(fs::Permissions::from_mode(0o600))?;
    }
    // Never ours at that size (a segment is rotated at the cap): a planted or runaway file is
    // emptied at once, not kept as the previous segment until the next rotation.
    let len = if meta.len() > 2 * MAX_SEGMENT_BYTES {
        file.set_len(0)?;
        0
    } else {
        meta.len()
    };
    (&file).write_all(line)?;
    if len + line.len() as u64 > MAX_SEGMENT_BYTES {
        // Only the segment this writer appended to is rotated (another writer may have rotated
        // it already and started a fresh one under the name).
        if fs::symlink_metadata(&path).is_ok_and(|m| m.ino() == meta.ino() && m.dev() == meta.dev()) {
            fs::rename(&path, dir.join(previous_file_name(host)))?;
        }
    }
    Ok(())
}

fn read_segment(path: &Path, out: &mut Vec<Record>) {
    // Like every state read: a regular file of ours that no one else can write, never through a
    // symlink (a planted journal would put its words on the user's terminal).
    let Ok(Opened::File(file, _)) = open_state_file(path) else {
        return;
    };
    let mut bytes = Vec::new();
    // Bounded: a segment is rotated at the cap, so twice the cap is already a foreign file.
    if file.take(2 * MAX_SEGMENT_BYTES).read_to_end(&mut bytes).is_err() {
        return;
    }
    out.extend(
        bytes
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .filter_map(|l| serde_json::from_slice::<Record>(l).ok())
            .filter(|r| r.v == FORMAT),
    );
}

/// Every retained record of `host` in `dir`, oldest first.
#[must_use]
pub fn read(dir: &Path, host: Integration) -> Vec<Record> {
    let mut out = Vec::new();
    read_segment(&dir.join(previous_file_name(host)), &mut out);
    read_segment(&dir.join(file_name(host)), &mut out);
    for r in &mut out {
        // The file names the host; a record cannot claim another one.
        host.as_str().clone_into(&mut r.host);
    }
    out.sort_by_key(|r| r.at);
    out
}

/// Every retained record of every host, oldest first.
#[must_use]
pub fn read_all(dir: &Path) -> Vec<Record> {
    let mut out: Vec<Record> = Integration::ALL.into_iter().flat_map(|h| read(dir, h)).collect();
    out.sort_by_key(|r| r.at);
    out
}

// ---- figures

/// What `status` shows for one host and event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// The host.
    pub host: String,
    /// The event.
    pub event: String,
    /// When it last fired (ms since the epoch).
    pub last_at: u64,
    /// The last run's outcome.
    pub last_outcome: String,
    /// Runs in the last 24 h.
    pub runs_24h: u64,
    /// Failed runs in the last 24 h.
    pub failures_24h: u64,
    /// Median duration in the last 24 h (ms).
    pub p50_ms: Option<u64>,
    /// 95th percentile duration in the last 24 h (ms).
    pub p95_ms: Option<u64>,
    /// Bytes injected in the last 24 h.
    pub injected_bytes_24h: u64,
    /// Captures delivered in the last 24 h.
    pub captures_delivered_24h: u64,
    /// Captures spooled in the last 24 h.
    pub captures_spooled_24h: u64,
    /// Captures handed to the background drainer after the answer in the last 24 h.
    pub captures_queued_24h: u64,
    /// Captures skipped in the last 24 h.
    pub captures_skipped_24h: u64,
    /// Runs retained in the journal for this host and event.
    pub retained: u64,
}

/// The nearest-rank percentile `p` (0–100) of sorted values.
#[must_use]
pub fn percentile(sorted: &[u64], p: u64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len() as u64;
    let rank = (p * n).div_ceil(100).clamp(1, n);
    sorted.get(usize::try_from(rank - 1).ok()?).copied()
}

/// Per host and event figures over `records` (oldest first), as of `now_ms`.
#[must_use]
pub fn summarize(records: &[Record], now_ms: u64) -> Vec<Summary> {
    let since = now_ms.saturating_sub(u64::try_from(WINDOW.as_millis()).unwrap_or(u64::MAX));
    let mut out: Vec<(Summary, Vec<u64>)> = Vec::new();
    for r in records {
        let i = match out
            .iter()
            .position(|(s, _)| s.host == r.host && s.event == r.event)
        {
            Some(i) => i,
            None => {
                out.push((
                    Summary {
                        host: r.host.clone(),
                        event: r.event.clone(),
                        ..Summary::default()
                    },
                    Vec::new(),
                ));
                out.len() - 1
            }
        };
        let (s, durations) = &mut out[i];
        s.retained += 1;
        if r.at >= s.last_at {
            s.last_at = r.at;
            s.last_outcome.clone_from(&r.outcome);
        }
        if r.at < since {
            continue;
        }
        s.runs_24h += 1;
        s.failures_24h += u64::from(r.failed());
        s.injected_bytes_24h += r.injected;
        match r.capture.as_deref() {
            Some("delivered") => s.captures_delivered_24h += 1,
            Some("spooled") => s.captures_spooled_24h += 1,
            Some("queued") => s.captures_queued_24h += 1,
            Some("skipped") => s.captures_skipped_24h += 1,
            _ => {}
        }
        durations.push(r.ms);
    }
    let mut out: Vec<Summary> = out
        .into_iter()
        .map(|(mut s, mut d)| {
            d.sort_unstable();
            s.p50_ms = percentile(&d, 50);
            s.p95_ms = percentile(&d, 95);
            s
        })
        .collect();
    // A stable order for people and scripts: hosts in documentation order, then events by name.
    let rank = |host: &str| Integration::ALL.iter().position(|i| i.as_str() == host);
    out.sort_by(|a, b| (rank(&a.host), &a.event).cmp(&(rank(&b.host), &b.event)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(at: u64, event: &str, outcome: &str, ms: u64) -> Record {
        Record {
            v: FORMAT,
            at,
            host: "codex".into(),
            event: event.into(),
            outcome: outcome.into(),
            ms,
            ..Record::default()
        }
    }

    fn run() -> Run {
        Run {
            host: Integration::Codex,
            event: "UserPromptSubmit",
            started: Instant::now(),
            dir: PathBuf::new(),
            stages: Vec::new(),
            recalled: None,
            capture: None,
            rule: None,
            done: false,
        }
    }

    fn d(stage: Stage, outcome: Outcome) -> Diagnostic {
        Diagnostic::new("powercontext.codex", stage, outcome)
    }

    #[test]
    fn outcome_is_the_first_failure_else_ready_empty_or_skipped() {
        let mut r = run();
        assert_eq!(build(&r, 0).outcome, "skipped");
        apply(&mut r, &d(Stage::Prepare, Outcome::Empty));
        assert_eq!(build(&r, 0).outcome, "empty");
        apply(
            &mut r,
            &d(Stage::Capture, Outcome::CaptureSkippedSecret).detail("private_key"),
        );
        let rec = build(&r, 0);
        assert_eq!(
            (rec.outcome.as_str(), rec.capture.as_deref(), rec.rule.as_deref()),
            ("empty", Some("skipped"), Some("private_key"))
        );
        let mut r = run();
        apply(&mut r, &d(Stage::Scope, Outcome::ServerUnavailable));
        apply(&mut r, &d(Stage::Capture, Outcome::CaptureSpooled));
        apply(&mut r, &d(Stage::Process, Outcome::Timeout));
        let rec = build(&r, 0);
        assert_eq!(rec.outcome, "server_unavailable");
        assert_eq!(rec.capture.as_deref(), Some("spooled"));
        assert_eq!(
            rec.stages,
            [
                "scope_resolve:server_unavailable",
                "source_capture:capture_spooled",
                "process:timeout"
            ]
        );
        let mut r = run();
        apply(&mut r, &d(Stage::Capture, Outcome::CaptureConflict));
        r.recalled = Some(10);
        let rec = build(&r, 10);
        assert_eq!(
            (rec.outcome.as_str(), rec.capture.as_deref(), rec.injected),
            ("capture_conflict", Some("failed"), 10)
        );
        let mut r = run();
        for _ in 0..20 {
            apply(&mut r, &d(Stage::State, Outcome::StateUnavailable));
            apply(&mut r, &d(Stage::State, Outcome::Skipped));
        }
        assert_eq!(build(&r, 0).stages.len(), MAX_STAGES);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&v, 50), Some(50));
        assert_eq!(percentile(&v, 95), Some(95));
        assert_eq!(percentile(&[7], 95), Some(7));
        assert_eq!(percentile(&[], 50), None);
    }

    #[test]
    fn a_segment_another_user_owns_is_never_written() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        append(&dir, Integration::Pi, b"{}\n").unwrap();
        let path = dir.join(file_name(Integration::Pi));
        // Only root can give a file away; elsewhere the owner check cannot be staged.
        if std::os::unix::fs::chown(&path, Some(crate::state::euid() + 4242), None).is_err() {
            return;
        }
        assert!(append(&dir, Integration::Pi, b"{}\n").is_err());
        assert_eq!(fs::read(&path).unwrap(), b"{}\n");
    }

    #[test]
    fn appends_rotate_and_stay_bounded() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        let line = serde_json::to_vec(&record(1, "UserPromptSubmit", "ready", 3)).unwrap();
        let mut line = line;
        line.push(b'\n');
        for _ in 0..10_000 {
            append(&dir, Integration::Codex, &line).unwrap();
        }
        let size = |n: String| fs::metadata(dir.join(n)).map_or(0, |m| m.len());
        let total = size(file_name(Integration::Codex)) + size(previous_file_name(Integration::Codex));
        assert!(total <= 2 * (MAX_SEGMENT_BYTES + line.len() as u64), "{total}");
        let kept = read(&dir, Integration::Codex).len() as u64;
        assert!(kept > MAX_SEGMENT_BYTES / line.len() as u64, "{kept}");
        let mode = fs::metadata(dir.join(file_name(Integration::Codex)))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
    }

    #[test]
    fn a_symlink_is_never_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("elsewhere");
        fs::write(&target, "theirs\n").unwrap();
        std::os::unix::fs::symlink(&target, tmp.path().join(file_name(Integration::Pi))).unwrap();
        assert!(append(tmp.path(), Integration::Pi, b"{}\n").is_err());
        assert_eq!(fs::read_to_string(&target).unwrap(), "theirs\n");
        assert!(read(tmp.path(), Integration::Pi).is_empty());
    }

    #[test]
    fn a_journal_others_may_write_is_never_read() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(file_name(Integration::Codex));
        let good = serde_json::to_string(&record(5, "Stop", "skipped", 1)).unwrap();
        fs::write(&path, format!("{good}\n")).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read(tmp.path(), Integration::Codex).len(), 1);
        // Anyone could have planted these words: they are not ours to show.
        fs::set_permissions(&path, fs::Permissions::from_mode(0o666)).unwrap();
        assert!(read(tmp.path(), Integration::Codex).is_empty());
    }

    #[test]
    fn torn_and_foreign_lines_are_skipped() {
        let tmp = tempfile::tempdir().unwrap();
        let good = serde_json::to_string(&record(5, "Stop", "skipped", 1)).unwrap();
        fs::write(
            tmp.path().join(file_name(Integration::Codex)),
            format!("{{\"v\":1,\"at\":3,\"ho\n{good}\nnot json\n{{\"v\":9,\"at\":9}}\n"),
        )
        .unwrap();
        let got = read(tmp.path(), Integration::Codex);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].event, "Stop");
    }

    #[test]
    fn summary_figures() {
        let now = 100 * 3_600_000;
        let old = now - 25 * 3_600_000;
        let mut records = vec![record(old, "UserPromptSubmit", "ready", 500)];
        for (i, ms) in [10, 20, 30, 40].into_iter().enumerate() {
            let mut r = record(now - 1000 + i as u64, "UserPromptSubmit", "ready", ms);
            r.injected = 100;
            r.capture = Some("delivered".into());
            records.push(r);
        }
        let mut failed = record(now - 10, "UserPromptSubmit", "server_unavailable", 90);
        failed.capture = Some("spooled".into());
        records.push(failed);
        records.push(record(now - 5, "Stop", "skipped", 2));
        let s = summarize(&records, now);
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].event, "Stop");
        let ups = &s[1];
        assert_eq!(ups.event, "UserPromptSubmit");
        assert_eq!(ups.retained, 6);
        assert_eq!(ups.runs_24h, 5);
        assert_eq!(ups.failures_24h, 1);
        assert_eq!(ups.last_outcome, "server_unavailable");
        assert_eq!(ups.last_at, now - 10);
        assert_eq!(ups.p50_ms, Some(30));
        assert_eq!(ups.p95_ms, Some(90));
        assert_eq!(ups.injected_bytes_24h, 400);
        assert_eq!(ups.captures_delivered_24h, 4);
        assert_eq!(ups.captures_spooled_24h, 1);
        assert_eq!(s[0].failures_24h, 0);
    }
}
