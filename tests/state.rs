//! The on-disk state (ledger, spool, drainer) through the real executables: concurrent writers,
//! writers killed mid-write, offline capture then replay into the real Server, spool limits,
//! unusable state directories, the one-drainer rule, and flush boundaries with a fake model.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use powercontext_hooks_test_support::fake_model::FakeModel;
use powercontext_hooks_test_support::fake_server::{CAPTURE, FakeServer, Gate, PREPARE, Proxy, envelope};
use powercontext_hooks_test_support::fault_server::{FaultServer, Reply, closed_port_url};
use powercontext_hooks_test_support::hook::{HookCmd, HookOutput};
use powercontext_hooks_test_support::real_server::{RealServer, ServerOptions};
use serde_json::{Value, json};

use crate::support::{CLAUDE, PI, cli, run_cli};

const NO_DRAINER: (&str, &str) = ("POWERCONTEXT_HOOKS_NO_BACKGROUND_DRAIN", "1");

fn payload(prompt: &str, session: &str, turn: &str, cwd: &Path) -> Value {
    json!({
        "session_id": session,
        "prompt_id": turn,
        "cwd": cwd.to_string_lossy(),
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    })
}

/// A Claude Code hook run against `url` with a shared state directory.
fn hook(url: &str, state: &Path, prompt: &str, turn: &str, cwd: &Path) -> HookCmd {
    HookCmd::new(CLAUDE)
        .env("POWERCONTEXT_CLAUDE_SERVER_URL", url)
        .env("POWERCONTEXT_HOOKS_STATE_DIR", state.to_string_lossy())
        .stdin_json(&payload(prompt, "session-state", turn, cwd))
}

fn ledger(state: &Path) -> Value {
    let text = std::fs::read_to_string(state.join("ledger.json")).expect("ledger.json");
    serde_json::from_str(&text).expect("ledger.json parses")
}

fn temps(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for d in [dir.to_path_buf(), dir.join("spool")] {
        if let Ok(entries) = std::fs::read_dir(&d) {
            out.extend(
                entries
                    .flatten()
                    .filter_map(|e| e.file_name().into_string().ok())
                    .filter(|n| n.starts_with(".tmp.")),
            );
        }
    }
    out
}

fn spool_files(state: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(state.join("spool"))
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn spooled_contents(state: &Path) -> Vec<String> {
    spool_files(state)
        .iter()
        .map(|p| {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
            assert_eq!(v["format"], 1);
            v["content"].as_str().unwrap().to_owned()
        })
        .collect()
}

#[test]
fn state_64_concurrent_writers_leave_the_max_per_scope() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let st = state.to_string_lossy().into_owned();
    let server = "http://127.0.0.1:8000";
    let mut expected = [0_u64; 8];
    let children: Vec<_> = (0..64_u64)
        .map(|i| {
            let scope = (i % 8) as usize;
            // A scrambled order, so the largest position is not always written last.
            let position = (i * 37) % 101 + 1;
            expected[scope] = expected[scope].max(position);
            let (s, p) = (format!("scope-{scope}"), position.to_string());
            cli(
                &[
                    "debug",
                    "ledger-record",
                    "--server",
                    server,
                    "--scope",
                    &s,
                    "--position",
                    &p,
                ],
                &[("POWERCONTEXT_HOOKS_STATE_DIR", &st)],
            )
            .stdout(Stdio::null())
            .spawn()
            .unwrap()
        })
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success());
    }
    let l = ledger(&state);
    assert_eq!(l["format"], 1);
    let entries = l["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 8);
    for (scope, max) in expected.iter().enumerate() {
        let e = entries
            .iter()
            .find(|e| e["scope"] == format!("scope-{scope}"))
            .unwrap();
        assert_eq!(e["position"], *max, "scope-{scope}");
        assert_eq!(e["server"], server);
    }
    assert_eq!(temps(&state), Vec::<String>::new());
    let mode = |p: &Path| {
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).unwrap().permissions()) & 0o777
    };
    assert_eq!(mode(&state), 0o700);
    assert_eq!(mode(&state.join("ledger.json")), 0o600);
}

#[test]
fn state_writer_killed_mid_write_loses_nothing_committed() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let st = state.to_string_lossy().into_owned();
    let mut base = 1_u64;
    for round in 0..25_u64 {
        let mut child = cli(
            &[
                "debug",
                "ledger-record",
                "--server",
                "http://127.0.0.1:1",
                "--scope",
                "s",
                "--position",
                &base.to_string(),
                "--count",
                "0",
            ],
            &[("POWERCONTEXT_HOOKS_STATE_DIR", &st)],
        )
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        // Let it commit a few writes, then SIGKILL it at a varying point of its write cycle.
        let want = 3 + round % 7;
        let mut committed = 0;
        for _ in 0..want {
            committed = lines.next().unwrap().unwrap().parse::<u64>().unwrap();
        }
        std::thread::sleep(Duration::from_micros(137 * round));
        child.kill().unwrap();
        let _ = child.wait();
        // Everything it printed had been committed before it was killed.
        let l = ledger(&state);
        let position = l["entries"][0]["position"].as_u64().unwrap();
        assert!(
            position >= committed,
            "round {round}: ledger {position} < committed {committed}"
        );
        base = position + 1;
    }
    // A later writer sweeps whatever the killed ones left behind.
    let out = run_cli(
        &[
            "debug",
            "ledger-record",
            "--server",
            "http://127.0.0.1:1",
            "--scope",
            "s",
            "--position",
            "1",
        ],
        &[("POWERCONTEXT_HOOKS_STATE_DIR", &st)],
    );
    assert!(out.status.success());
    assert_eq!(temps(&state), Vec::<String>::new());
    assert!(ledger(&state)["entries"][0]["position"].as_u64().unwrap() >= base - 1);
}

#[test]
fn state_offline_prompts_reach_the_real_server_exactly_once_after_one_drain() {
    let real = RealServer::shared();
    let proxy = Proxy::start(&real.url(), Gate::Down);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cwd = tempfile::tempdir().unwrap();
    let nonce = format!(
        "{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    let prompts: Vec<(String, String)> = (0..5)
        .map(|i| {
            (
                format!("offline prompt {i} about release checklists {nonce}"),
                format!("turn-{i}"),
            )
        })
        .collect();

    for (prompt, turn) in &prompts {
        let out = hook(&proxy.url(), &state, prompt, turn, cwd.path())
            .env(NO_DRAINER.0, NO_DRAINER.1)
            .run();
        out.assert_fail_open();
        assert!(out.diagnostic("capture_spooled").is_some(), "{}", out.stderr);
        assert!(!out.stderr.contains(&nonce));
    }
    assert_eq!(spool_files(&state).len(), prompts.len());
    // A replayed entry must dedupe: keep a copy of one to put back after the drain.
    let first = spool_files(&state)[0].clone();
    let first_bytes = std::fs::read(&first).unwrap();

    proxy.set(Gate::Up);
    let st = state.to_string_lossy().into_owned();
    let url = proxy.url();
    let env = [
        ("POWERCONTEXT_HOOKS_STATE_DIR", st.as_str()),
        ("POWERCONTEXT_CLAUDE_SERVER_URL", url.as_str()),
    ];
    let out = run_cli(&["flush"], &env);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("delivered 5"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(spool_files(&state).is_empty());

    std::fs::write(&first, first_bytes).unwrap();
    let out = run_cli(&["flush", "--json"], &env);
    assert!(out.status.success());
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        report["delivered"], 1,
        "the Server answers a replay with 202 and the same position"
    );

    // Unbound session and workspace resolve to the default scope, as they would have online.
    let scope = real.default_scope();
    let sources = real.sources(&scope);
    for (prompt, turn) in &prompts {
        let expected = powercontext_hooks_core::capture::source_id(
            "claude-code-user-prompt",
            &scope,
            "session-state",
            turn,
            prompt,
        );
        let hits: Vec<&Value> = sources
            .iter()
            .filter(|s| s["source_id"] == expected.as_str())
            .collect();
        assert_eq!(hits.len(), 1, "exactly one Source for {turn}");
        assert_eq!(hits[0]["content"], prompt.as_str());
    }
}

#[test]
fn state_spool_limits_drop_the_oldest_and_report_it() {
    let down = closed_port_url();
    let cwd = tempfile::tempdir().unwrap();
    let run = |state: &Path, i: usize, limit: (&str, &str)| -> HookOutput {
        let out = hook(
            &down,
            state,
            &format!("spooled prompt number {i}"),
            &format!("t{i}"),
            cwd.path(),
        )
        .env(NO_DRAINER.0, NO_DRAINER.1)
        .env(limit.0, limit.1)
        .run();
        out.assert_fail_open();
        out
    };

    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("count");
    for i in 0..5 {
        let out = run(&state, i, ("POWERCONTEXT_HOOKS_SPOOL_MAX_ENTRIES", "3"));
        let dropped = out
            .diagnostics()
            .iter()
            .any(|d| d["detail"] == "spool_count_limit");
        assert_eq!(dropped, i >= 3, "run {i}: {}", out.stderr);
        assert!(out.diagnostic("capture_spooled").is_some());
    }
    let contents = spooled_contents(&state);
    assert_eq!(
        contents,
        [
            "spooled prompt number 2",
            "spooled prompt number 3",
            "spooled prompt number 4"
        ]
    );

    let state = dir.path().join("bytes");
    run(&state, 0, ("POWERCONTEXT_HOOKS_SPOOL_MAX_BYTES", "100000"));
    let one = std::fs::metadata(&spool_files(&state)[0]).unwrap().len();
    let limit = (one * 2 + one / 2).to_string();
    for i in 1..4 {
        let out = run(&state, i, ("POWERCONTEXT_HOOKS_SPOOL_MAX_BYTES", &limit));
        let dropped = out
            .diagnostics()
            .iter()
            .any(|d| d["detail"] == "spool_bytes_limit");
        assert_eq!(dropped, i >= 2, "run {i}: {}", out.stderr);
    }
    assert_eq!(
        spooled_contents(&state),
        ["spooled prompt number 2", "spooled prompt number 3"]
    );

    // Past the age limit, but its Server has not answered since it was written: the clock alone
    // never deletes a capture (the age limit applies once it has; see the spool's unit tests).
    let state = dir.path().join("age");
    run(&state, 0, ("POWERCONTEXT_HOOKS_SPOOL_MAX_AGE_SECONDS", "1"));
    std::thread::sleep(Duration::from_millis(1100));
    let out = run(&state, 1, ("POWERCONTEXT_HOOKS_SPOOL_MAX_AGE_SECONDS", "1"));
    assert!(
        !out.diagnostics().iter().any(|d| d["detail"] == "spool_age_limit"),
        "{}",
        out.stderr
    );
    assert_eq!(
        spooled_contents(&state),
        ["spooled prompt number 0", "spooled prompt number 1"]
    );

    let st = state.to_string_lossy().into_owned();
    let status = run_cli(&["status", "--json"], &[("POWERCONTEXT_HOOKS_STATE_DIR", &st)]);
    let v: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(v["spool_entries"], 2);
    assert!(!String::from_utf8_lossy(&status.stdout).contains("spooled prompt"));
}

/// A Server that answers recall but refuses captures with 503, so the hook needs its state.
fn recall_only_server() -> FakeServer {
    FakeServer::builder("scp_state_test")
        .ready("remembered context")
        .without(CAPTURE)
        .fallback(|_| envelope(503, "unavailable"))
        .start()
}

fn assert_answers_despite_state(out: &HookOutput, detail: Option<&str>) {
    out.assert_fail_open();
    assert_eq!(
        out.context().as_deref(),
        Some("remembered context"),
        "{}",
        out.stderr
    );
    assert!(out.elapsed < Duration::from_secs(2), "{:?}", out.elapsed);
    let d = out
        .diagnostic("state_unavailable")
        .unwrap_or_else(|| panic!("no state_unavailable: {}", out.stderr));
    if let Some(detail) = detail {
        assert_eq!(d["detail"], detail, "{}", out.stderr);
    }
}

fn mount_tmpfs(dir: &Path, options: &str) -> bool {
    Command::new("mount")
        .args(["-t", "tmpfs", "-o", options, "tmpfs"])
        .arg(dir)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn umount(dir: &Path) {
    let _ = Command::new("umount").arg(dir).status();
}

#[test]
fn status_names_a_read_only_state_dir_and_a_journal_hooks_cannot_use() {
    let dir = tempfile::tempdir().unwrap();
    let problems = |state: &Path| {
        let out = run_cli(
            &["status", "--json"],
            &[("POWERCONTEXT_HOOKS_STATE_DIR", &state.to_string_lossy())],
        );
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["problems"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap().to_owned())
            .collect::<Vec<_>>()
    };

    // A journal segment that is a link or a FIFO: hooks never write through it.
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    assert!(problems(&state).is_empty(), "{:?}", problems(&state));
    std::os::unix::fs::symlink(dir.path().join("elsewhere"), state.join("journal-codex.jsonl")).unwrap();
    assert_eq!(problems(&state), ["journal_unusable"]);
    std::fs::remove_file(state.join("journal-codex.jsonl")).unwrap();
    let fifo = state.join("journal-pi.1.jsonl");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    assert_eq!(problems(&state), ["journal_unusable"]);
    std::fs::remove_file(&fifo).unwrap();

    // Read-only: a read-only tmpfs as root, a 0500 directory otherwise.
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let mounted = mount_tmpfs(&ro, "ro,size=64k,mode=700");
    if !mounted {
        std::fs::set_permissions(&ro, std::os::unix::fs::PermissionsExt::from_mode(0o500)).unwrap();
    }
    let found = problems(&ro);
    let flush = run_cli(
        &["flush"],
        &[("POWERCONTEXT_HOOKS_STATE_DIR", &ro.to_string_lossy())],
    );
    if mounted {
        umount(&ro);
        // And `flush` says it in the hooks' word, not a generic I/O error.
        assert_eq!(flush.status.code(), Some(1));
        let err = String::from_utf8_lossy(&flush.stderr);
        assert!(err.contains("(read_only)"), "{err}");
    }
    if mounted || state_euid() != 0 {
        assert!(found.contains(&"read_only".to_owned()), "{found:?}");
    }
}

fn state_euid() -> u32 {
    std::os::unix::fs::MetadataExt::uid(&std::fs::metadata("/proc/self").unwrap())
}

#[test]
fn state_unusable_dirs_never_stop_the_answer() {
    let server = recall_only_server();
    let cwd = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run = |state: &Path| {
        hook(
            &server.url(),
            state,
            "what did we decide about caching",
            "t1",
            cwd.path(),
        )
        .run()
    };

    // Missing: created on first use (0700) and the capture is kept.
    let missing = dir.path().join("not").join("yet").join("state");
    let out = run(&missing);
    out.assert_fail_open();
    assert_eq!(out.context().as_deref(), Some("remembered context"));
    assert!(out.diagnostic("capture_spooled").is_some(), "{}", out.stderr);
    assert_eq!(spool_files(&missing).len(), 1);

    // Not a directory at all.
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "x").unwrap();
    assert_answers_despite_state(&run(&file.join("state")), None);

    // Read-only: a read-only tmpfs as root, a 0500 directory otherwise.
    let ro = dir.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let mounted = mount_tmpfs(&ro, "ro,size=64k");
    if !mounted {
        std::fs::set_permissions(&ro, std::os::unix::fs::PermissionsExt::from_mode(0o500)).unwrap();
    }
    let out = run(&ro);
    if mounted {
        umount(&ro);
    }
    assert_answers_despite_state(&out, None);

    // Full disk: a tiny tmpfs filled to the last byte, when mounting is allowed here.
    let full = dir.path().join("full");
    std::fs::create_dir(&full).unwrap();
    if mount_tmpfs(&full, "size=64k") {
        let state = full.join("state");
        std::fs::create_dir(&state).unwrap();
        std::fs::write(state.join("state.lock"), "").unwrap();
        std::fs::write(state.join("drain.lock"), "").unwrap();
        let filler = vec![b'x'; 4096];
        let mut f = std::fs::File::create(full.join("filler")).unwrap();
        while std::io::Write::write_all(&mut f, &filler).is_ok() {}
        drop(f);
        let out = run(&state);
        umount(&full);
        assert_answers_despite_state(&out, Some("disk_full"));
    }

    // A file-size limit (what a full disk looks like to a writer, available without root): every
    // write fails with EFBIG while SIGXFSZ is ignored.
    let limited = dir.path().join("limited");
    let wrapper = dir.path().join("hook-fsize0.sh");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\ntrap '' XFSZ\nexec prlimit --fsize=0 -- {CLAUDE}\n"),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let has_prlimit = Command::new("prlimit")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if has_prlimit {
        let out = HookCmd::new(&wrapper)
            .env("POWERCONTEXT_CLAUDE_SERVER_URL", server.url())
            .env("POWERCONTEXT_HOOKS_STATE_DIR", limited.to_string_lossy())
            .stdin_json(&payload(
                "what did we decide about caching",
                "s",
                "t1",
                cwd.path(),
            ))
            .run();
        assert_answers_despite_state(&out, Some("file_too_large"));
        assert!(spool_files(&limited).is_empty());
    }
}

#[test]
fn state_one_drainer_at_a_time_and_hooks_never_wait_for_it() {
    let hanging = FaultServer::always(Reply::Hang);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let st = state.to_string_lossy().into_owned();
    let cwd = tempfile::tempdir().unwrap();

    // A capture for the hanging Server: resolution times out, so it is spooled.
    let out = hook(
        &hanging.url(),
        &state,
        "prompt for the hanging server",
        "t1",
        cwd.path(),
    )
    .env(NO_DRAINER.0, NO_DRAINER.1)
    .env("POWERCONTEXT_CLAUDE_REQUEST_TIMEOUT_SECONDS", "0.3")
    .env("POWERCONTEXT_CLAUDE_HTTP_BUDGET_SECONDS", "1")
    .run();
    out.assert_fail_open();
    assert!(out.diagnostic("capture_spooled").is_some(), "{}", out.stderr);
    let seen = hanging.request_count();

    // Drainer A hangs on that Server for up to its budget.
    let url = hanging.url();
    let env = [
        ("POWERCONTEXT_HOOKS_STATE_DIR", st.as_str()),
        ("POWERCONTEXT_CLAUDE_SERVER_URL", url.as_str()),
        ("POWERCONTEXT_CLAUDE_REQUEST_TIMEOUT_SECONDS", "6"),
    ];
    let mut a = cli(&["drain", "--budget", "6"], &env)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    assert!(
        hanging.wait_for_requests(seen + 1, Duration::from_secs(5)),
        "drainer A reached the Server"
    );

    // Drainer B leaves at once: the lock is held.
    let start = Instant::now();
    let b = run_cli(&["drain", "--budget", "6"], &env);
    assert_eq!(b.status.code(), Some(3), "{}", String::from_utf8_lossy(&b.stdout));
    assert!(start.elapsed() < Duration::from_secs(1) + crate::support::start_slack());
    let report: Value = serde_json::from_slice(&b.stdout).unwrap();
    assert_eq!(report["busy"], true);

    // A hook against a healthy Server answers at its normal speed while A is busy, spools its
    // refused capture (the drainer holds no state lock while it waits on the network) and does
    // not wait for the drainer it would start.
    let healthy = recall_only_server();
    let out = hook(
        &healthy.url(),
        &state,
        "what did we decide about caching",
        "t2",
        cwd.path(),
    )
    .run();
    out.assert_fail_open();
    assert_eq!(out.context().as_deref(), Some("remembered context"));
    assert!(out.diagnostic("capture_spooled").is_some(), "{}", out.stderr);
    assert!(
        out.elapsed < Duration::from_millis(1500) + crate::support::start_slack(),
        "hook waited: {:?}",
        out.elapsed
    );
    assert!(a.try_wait().unwrap().is_none(), "drainer A is still busy");
    assert_eq!(spool_files(&state).len(), 2);

    let _ = a.kill();
    let _ = a.wait();
}

#[test]
fn state_flush_boundaries_against_the_real_server_with_a_fake_model() {
    let model = FakeModel::start(r#"{"candidates":[]}"#);
    let real = RealServer::start(ServerOptions {
        env: vec![
            (
                "POWERCONTEXT_SERVER_INFERENCE_GENERATION_MODEL".into(),
                "openai-chat:fake-model".into(),
            ),
            (
                "POWERCONTEXT_SERVER_INFERENCE_GENERATION_BASE_URL".into(),
                format!("{}/v1", model.url()),
            ),
            ("OPENAI_API_KEY".into(), "fake-key".into()),
            // One Source per flush call, so a backlog needs several calls.
            (
                "POWERCONTEXT_SERVER_RUNTIME_SOURCE_WINDOW_LIMIT".into(),
                "1".into(),
            ),
        ],
        ..ServerOptions::default()
    });
    let scope = real.default_scope();
    for i in 0..2 {
        let (status, body) = real.post(
            "/v1/sources/content",
            &json!({"scope_id": scope, "source_id": format!("backlog-{i}"), "content": format!("backlog {i}"), "metadata": {}}),
        );
        assert_eq!(status, 202, "{body}");
    }

    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let st = state.to_string_lossy().into_owned();
    let cwd = tempfile::tempdir().unwrap();
    let url = real.url();
    // The hook captures position 3 and its single flush call reaches only cursor 1: pending.
    let out = hook(
        &url,
        &state,
        "a prompt whose flush cannot finish at once",
        "t1",
        cwd.path(),
    )
    .env(NO_DRAINER.0, NO_DRAINER.1)
    .env("POWERCONTEXT_CLAUDE_FLUSH_ON_CAPTURE", "1")
    .env("POWERCONTEXT_CLAUDE_FLUSH_MAX_CALLS", "1")
    .env("POWERCONTEXT_CLAUDE_HTTP_BUDGET_SECONDS", "20")
    .env("POWERCONTEXT_CLAUDE_REQUEST_TIMEOUT_SECONDS", "10")
    .run();
    out.assert_fail_open();
    assert!(out.diagnostic("flush_incomplete").is_some(), "{}", out.stderr);
    let l = ledger(&state);
    assert_eq!(l["entries"][0]["position"], 3);

    let env = [
        ("POWERCONTEXT_HOOKS_STATE_DIR", st.as_str()),
        ("POWERCONTEXT_CLAUDE_SERVER_URL", url.as_str()),
        ("POWERCONTEXT_CLAUDE_FLUSH_MAX_CALLS", "1"),
        ("POWERCONTEXT_CLAUDE_REQUEST_TIMEOUT_SECONDS", "10"),
    ];
    // Cursor 2 < 3: the entry stays, with one more attempt; the exit code says so.
    let out = run_cli(&["flush", "--scope", &scope, "--json"], &env);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["ok"], false, "the JSON says what the exit code says");
    assert_eq!(ledger(&state)["entries"][0]["attempts"], 1);
    assert_eq!(ledger(&state)["entries"][0]["position"], 3);
    // Another scope's flush leaves this one alone.
    let out = run_cli(&["flush", "--scope", "scp_some_other_scope"], &env);
    assert!(out.status.success());
    assert!(state.join("ledger.json").exists());
    // Cursor 3 ≥ 3: settled, the ledger file goes away.
    let out = run_cli(&["flush", "--json"], &env);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stdout));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["flushed"], 1);
    assert_eq!(report["ok"], true);
    assert!(!state.join("ledger.json").exists());
    let status: Value = serde_json::from_slice(
        &run_cli(&["status", "--json"], &[("POWERCONTEXT_HOOKS_STATE_DIR", &st)]).stdout,
    )
    .unwrap();
    assert_eq!(status["pending_scopes"], 0);
    assert_eq!(status["ok"], true);
}

// ---- Write-ahead capture, bad spool entries, ownership and permissions ----

fn nonce() -> String {
    format!(
        "{:x}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

/// How many Sources of the real Server's default scope carry the `source_id` the Claude Code hook
/// computes for (`prompt`, `turn`) in session `session-state`.
fn sources_for(real: &RealServer, prompt: &str, turn: &str) -> usize {
    let scope = real.default_scope();
    let expected = powercontext_hooks_core::capture::source_id(
        "claude-code-user-prompt",
        &scope,
        "session-state",
        turn,
        prompt,
    );
    real.sources(&scope)
        .iter()
        .filter(|s| s["source_id"] == expected.as_str() && s["content"] == prompt)
        .count()
}

/// A Claude Code hook process started in the background (stdin written and closed).
fn spawn_hook(
    url: &str,
    state: &Path,
    prompt: &str,
    turn: &str,
    cwd: &Path,
    env: &[(&str, &str)],
) -> std::process::Child {
    spawn_hook_in("session-state", url, state, prompt, turn, cwd, env)
}

/// [`spawn_hook`] for a prompt of `session` (a session's captures are delivered in order: one
/// held by its hook holds back the later ones of its session only).
fn spawn_hook_in(
    session: &str,
    url: &str,
    state: &Path,
    prompt: &str,
    turn: &str,
    cwd: &Path,
    env: &[(&str, &str)],
) -> std::process::Child {
    let home = cwd.join(".home");
    std::fs::create_dir_all(&home).unwrap();
    let mut c = Command::new(CLAUDE);
    c.env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("GIT_CEILING_DIRECTORIES", cwd)
        .env("POWERCONTEXT_HOOKS_STATE_DIR", state)
        .env("POWERCONTEXT_CLAUDE_SERVER_URL", url)
        .env(NO_DRAINER.0, NO_DRAINER.1)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::io::Write::write_all(
        &mut stdin,
        payload(prompt, session, turn, cwd).to_string().as_bytes(),
    )
    .unwrap();
    drop(stdin);
    child
}

fn wait_for_source_request(proxy: &FaultServer) {
    let start = Instant::now();
    while proxy.count("/v1/sources/content") == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the hook never sent its capture"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn flush_env(state: &Path, url: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "POWERCONTEXT_HOOKS_STATE_DIR",
            state.to_string_lossy().into_owned(),
        ),
        ("POWERCONTEXT_CLAUDE_SERVER_URL", url.to_owned()),
        // The shared real Server can be slow while other tests use it.
        ("POWERCONTEXT_CLAUDE_REQUEST_TIMEOUT_SECONDS", "10".to_owned()),
    ]
}

fn flush_json(state: &Path, url: &str) -> (Option<i32>, Value) {
    let env = flush_env(state, url);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = run_cli(&["flush", "--json", "--budget", "60"], &env);
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("flush said: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), report)
}

#[test]
fn state_sigkill_mid_capture_keeps_the_prompt_and_replay_is_exactly_once() {
    let real = RealServer::shared();
    let proxy = Proxy::start(&real.url(), Gate::SwallowSourceAnswers);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cwd = tempfile::tempdir().unwrap();
    let prompt = format!("a prompt whose hook is killed mid-capture {}", nonce());
    let budget = [
        ("POWERCONTEXT_CLAUDE_HTTP_BUDGET_SECONDS", "30"),
        ("POWERCONTEXT_CLAUDE_REQUEST_TIMEOUT_SECONDS", "30"),
    ];
    let mut child = spawn_hook(&proxy.url(), &state, &prompt, "t-kill", cwd.path(), &budget);
    // The Server has the Source; the hook waits for an answer that never comes, and dies.
    wait_for_source_request(&proxy);
    child.kill().unwrap();
    let _ = child.wait();
    assert_eq!(spool_files(&state).len(), 1, "the capture was not kept");

    proxy.set(Gate::Up);
    let (code, report) = flush_json(&state, &proxy.url());
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["delivered"], 1, "{report}");
    assert!(spool_files(&state).is_empty());
    assert_eq!(
        sources_for(real, &prompt, "t-kill"),
        1,
        "live delivery and replay are one Source"
    );
}

#[test]
fn state_a_hook_killed_while_recalling_has_its_capture_delivered_by_the_drainer_it_started() {
    let real = RealServer::shared();
    let proxy = Proxy::start(&real.url(), Gate::HangRecall);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cwd = tempfile::tempdir().unwrap();
    let prompt = format!("a prompt whose hook is killed while it recalls {}", nonce());
    let env = [
        ("POWERCONTEXT_CLAUDE_HTTP_BUDGET_SECONDS", "30"),
        ("POWERCONTEXT_CLAUDE_REQUEST_TIMEOUT_SECONDS", "30"),
        (NO_DRAINER.0, "0"),
    ];
    let mut child = spawn_hook(&proxy.url(), &state, &prompt, "t-early", cwd.path(), &env);
    let start = Instant::now();
    while proxy.count(PREPARE) == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "the hook never recalled"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // Recall is in flight, no Source has been sent: the host gives up on the hook.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(proxy.count(CAPTURE), 0, "the capture went out before the answer");
    child.kill().unwrap();
    let _ = child.wait();

    // No other run, no flush: the drainer the hook started delivers the prompt once it is gone.
    let until = Instant::now() + Duration::from_secs(30);
    while !(sources_for(real, &prompt, "t-early") == 1 && spool_files(&state).is_empty()) {
        assert!(
            Instant::now() < until,
            "the killed hook's capture waits for another run: {} spooled",
            spool_files(&state).len()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(proxy.count(CAPTURE), 1, "delivered exactly once");
}

#[test]
fn state_capture_is_durable_while_in_flight_when_the_budget_runs_out() {
    let real = RealServer::shared();
    let proxy = Proxy::start(&real.url(), Gate::SwallowSourceAnswers);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cwd = tempfile::tempdir().unwrap();
    let prompt = format!("a prompt whose capture outlives the budget {}", nonce());
    let env = [
        ("POWERCONTEXT_CLAUDE_HTTP_BUDGET_SECONDS", "2"),
        ("POWERCONTEXT_CLAUDE_REQUEST_TIMEOUT_SECONDS", "10"),
    ];
    let start = Instant::now();
    let child = spawn_hook(&proxy.url(), &state, &prompt, "t-budget", cwd.path(), &env);
    wait_for_source_request(&proxy);
    // Mid-request, before any answer or timeout: the prompt is already on disk.
    assert_eq!(
        spool_files(&state).len(),
        1,
        "nothing durable while the capture is in flight"
    );
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert!(
        start.elapsed() < Duration::from_secs(4) + crate::support::start_slack(),
        "{:?}",
        start.elapsed()
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("capture_spooled"), "{stderr}");
    assert!(!stderr.contains("nonce") && !stderr.contains(&prompt));
    assert_eq!(spool_files(&state).len(), 1);

    proxy.set(Gate::Up);
    let (code, report) = flush_json(&state, &proxy.url());
    assert_eq!((code, &report["delivered"]), (Some(0), &json!(1)), "{report}");
    assert_eq!(sources_for(real, &prompt, "t-budget"), 1);
}

#[test]
fn state_a_held_state_lock_never_drops_a_capture() {
    let real = RealServer::shared();
    let proxy = Proxy::start(&real.url(), Gate::Down);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let prompt = format!(
        "a prompt captured while another process holds the lock {}",
        nonce()
    );
    let held = powercontext_hooks_core::lock::try_acquire(&state.join("state.lock")).unwrap();
    let out = hook(&proxy.url(), &state, &prompt, "t-lock", cwd.path())
        .env(NO_DRAINER.0, NO_DRAINER.1)
        .run();
    out.assert_fail_open();
    assert!(out.diagnostic("state_unavailable").is_none(), "{}", out.stderr);
    assert!(out.diagnostic("capture_spooled").is_some(), "{}", out.stderr);
    assert_eq!(spool_files(&state).len(), 1);
    drop(held);

    proxy.set(Gate::Up);
    let (code, report) = flush_json(&state, &proxy.url());
    assert_eq!((code, &report["delivered"]), (Some(0), &json!(1)), "{report}");
    assert_eq!(sources_for(real, &prompt, "t-lock"), 1);
}

#[test]
fn state_64_concurrent_hooks_with_the_server_down_then_up_make_64_sources() {
    let real = RealServer::shared();
    let proxy = Proxy::start(&real.url(), Gate::Down);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cwd = tempfile::tempdir().unwrap();
    let tag = nonce();
    let prompts: Vec<String> = (0..64)
        .map(|i| format!("concurrent offline prompt {i} {tag}"))
        .collect();
    // A tight budget: a capture that has to queue for a shared lock runs out of it.
    let budget = [("POWERCONTEXT_CLAUDE_HTTP_BUDGET_SECONDS", "0.5")];
    let children: Vec<_> = prompts
        .iter()
        .enumerate()
        .map(|(i, p)| spawn_hook(&proxy.url(), &state, p, &format!("t-{i}"), cwd.path(), &budget))
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("capture_spooled"), "{stderr}");
        assert!(!stderr.contains("state_unavailable"), "{stderr}");
    }
    assert_eq!(spool_files(&state).len(), 64);

    proxy.set(Gate::Up);
    let (code, report) = flush_json(&state, &proxy.url());
    assert_eq!((code, &report["delivered"]), (Some(0), &json!(64)), "{report}");
    for (i, p) in prompts.iter().enumerate() {
        assert_eq!(sources_for(real, p, &format!("t-{i}")), 1, "prompt {i}");
    }
}

/// One real spooled capture for a closed port, so the entry is exactly what a hook writes.
fn spool_one(state: &Path, url: &str, prompt: &str, turn: &str) {
    let cwd = tempfile::tempdir().unwrap();
    let out = hook(url, state, prompt, turn, cwd.path())
        .env(NO_DRAINER.0, NO_DRAINER.1)
        .run();
    out.assert_fail_open();
    assert!(out.diagnostic("capture_spooled").is_some(), "{}", out.stderr);
}

#[test]
fn state_poisoned_spool_entries_are_set_aside_and_the_rest_is_delivered() {
    let real = RealServer::shared();
    let proxy = Proxy::start(&real.url(), Gate::Down);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let tag = nonce();
    let good: Vec<String> = (0..2).map(|i| format!("good spooled prompt {i} {tag}")).collect();
    // The Server's dedupe depends on the cwd-derived workspace key: use one cwd for both.
    let cwd = tempfile::tempdir().unwrap();
    for (i, p) in good.iter().enumerate() {
        let out = hook(&proxy.url(), &state, p, &format!("g-{i}"), cwd.path())
            .env(NO_DRAINER.0, NO_DRAINER.1)
            .run();
        assert!(out.diagnostic("capture_spooled").is_some(), "{}", out.stderr);
    }
    let spool = state.join("spool");
    // Poison, older than every good entry so a drain meets it first (and young enough to be
    // within the age limit): a directory, a FIFO, a symlink, a file that is not JSON, one that is
    // not a capture.
    let oldest = powercontext_hooks_core::spool::list(&powercontext_hooks_core::state::StateDir::at(&state))
        .unwrap()[0]
        .created_ms;
    let poison = |i: u64| spool.join(format!("{:016}-000000000100-1-{i}.json", oldest - 10 + i));
    std::fs::create_dir(poison(1)).unwrap();
    assert!(Command::new("mkfifo").arg(poison(2)).status().unwrap().success());
    std::os::unix::fs::symlink("/etc/passwd", poison(3)).unwrap();
    std::fs::write(poison(4), "{\"format\":1,").unwrap();
    std::fs::write(poison(5), "{\"format\":1}").unwrap();
    for i in [4, 5] {
        std::fs::set_permissions(poison(i), std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    }

    proxy.set(Gate::Up);
    let mut c = cli(&["flush", "--json", "--budget", "5"], &[]);
    for (k, v) in flush_env(&state, &proxy.url()) {
        c.env(k, v);
    }
    let out = powercontext_hooks_test_support::process::run_with_timeout(c, Duration::from_secs(15), "flush");
    assert!(
        out.elapsed < Duration::from_secs(6),
        "flush ran past its budget: {:?}",
        out.elapsed
    );
    assert_eq!(out.status.code(), Some(0), "{}\n{}", out.stdout, out.stderr);
    let report: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        (&report["delivered"], &report["set_aside"]),
        (&json!(2), &json!(5)),
        "{report}"
    );
    for (i, p) in good.iter().enumerate() {
        assert_eq!(sources_for(real, p, &format!("g-{i}")), 1);
    }
    let names: Vec<String> = std::fs::read_dir(&spool)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 5, "{names:?}");
    assert!(names.iter().all(|n| n.ends_with(".corrupt")), "{names:?}");
    // The symlink was renamed, never followed: its target is intact.
    assert!(std::fs::read_to_string("/etc/passwd").unwrap().contains("root"));
    let st = state.to_string_lossy().into_owned();
    let status = run_cli(&["status", "--json"], &[("POWERCONTEXT_HOOKS_STATE_DIR", &st)]);
    let v: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(v["spool_entries"], 0);
    assert!(
        v["problems"]
            .as_array()
            .unwrap()
            .contains(&json!("spool_corrupt")),
        "{v}"
    );
}

#[allow(clippy::print_stderr, reason = "a skipped case says so in the test log")]
fn skip_note(why: &str) {
    eprintln!("not root: {why}");
}

fn is_root() -> bool {
    powercontext_hooks_core::state::euid() == 0
}

fn chown(path: &Path, uid: u32) {
    let ok = Command::new("chown")
        .arg(format!("{uid}:{uid}"))
        .arg(path)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "chown {}", path.display());
}

#[test]
fn state_planted_or_writable_spool_files_are_never_replayed() {
    let up = Arc::new(AtomicBool::new(false));
    let gate = up.clone();
    let recorder = FaultServer::start(move |req| match req.path.as_str() {
        _ if !gate.load(Ordering::SeqCst) => Reply::Close,
        "/v1/scope-bindings/resolve" => Reply::json(200, &json!({"scope_id": "scp_victim", "title": "t"})),
        "/v1/sources/content" => Reply::json(202, &json!({"status": "accepted", "position": 1})),
        _ => Reply::json(404, &json!({"detail": "Not Found"})),
    });
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    // A real entry, to copy as the planted ones; spooled for the recorder's URL.
    spool_one(&state, &recorder.url(), "a planted prompt", "t-planted");
    let original = spool_files(&state).remove(0);
    let bytes = std::fs::read(&original).unwrap();
    std::fs::remove_file(&original).unwrap();
    let spool = state.join("spool");
    // Our own file, but writable by others.
    let now = powercontext_hooks_core::state::now_millis();
    let writable = spool.join(format!("{:016}-{:012}-1-0.json", now - 2, bytes.len()));
    std::fs::write(&writable, &bytes).unwrap();
    std::fs::set_permissions(&writable, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
    let root = is_root();
    if root {
        // Another user's file with a safe mode.
        let foreign = spool.join(format!("{:016}-{:012}-1-1.json", now - 1, bytes.len()));
        std::fs::write(&foreign, &bytes).unwrap();
        std::fs::set_permissions(&foreign, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        chown(&foreign, 54_321);
    } else {
        skip_note("the another-uid case of this test is skipped: chown needs root");
    }
    up.store(true, Ordering::SeqCst);
    let before = recorder.request_count();
    let (code, report) = flush_json(&state, &recorder.url());
    assert_eq!(code, Some(0), "{report}");
    assert_eq!(report["delivered"], 0, "{report}");
    assert_eq!(report["set_aside"], if root { 2 } else { 1 }, "{report}");
    assert!(
        recorder.requests()[before..]
            .iter()
            .all(|r| r.path != "/v1/sources/content"),
        "a planted capture was replayed"
    );
    let st = state.to_string_lossy().into_owned();
    let status = run_cli(&["status"], &[("POWERCONTEXT_HOOKS_STATE_DIR", &st)]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(text.contains("problem: spool_unsafe"), "{text}");
}

#[test]
fn state_a_loose_state_dir_is_tightened_and_a_foreign_one_never_used() {
    let server = recall_only_server();
    let cwd = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let loose = dir.path().join("loose");
    std::fs::create_dir(&loose).unwrap();
    std::fs::set_permissions(&loose, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let st = loose.to_string_lossy().into_owned();
    let status = run_cli(&["status", "--json"], &[("POWERCONTEXT_HOOKS_STATE_DIR", &st)]);
    let v: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert!(
        v["problems"]
            .as_array()
            .unwrap()
            .contains(&json!("loose_permissions")),
        "{v}"
    );

    let out = hook(
        &server.url(),
        &loose,
        "what did we decide about caching",
        "t1",
        cwd.path(),
    )
    .run();
    out.assert_fail_open();
    assert_eq!(out.context().as_deref(), Some("remembered context"));
    let d = out
        .diagnostic("state_repaired")
        .unwrap_or_else(|| panic!("not reported: {}", out.stderr));
    assert_eq!(d["detail"], "permissions_tightened");
    assert!(out.diagnostic("capture_spooled").is_some(), "{}", out.stderr);
    let mode = |p: &Path| {
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).unwrap().permissions()) & 0o777
    };
    assert_eq!(mode(&loose), 0o700);
    assert_eq!(mode(&loose.join("spool")), 0o700);

    if !is_root() {
        skip_note("the another-owner case of this test is skipped: chown needs root");
        return;
    }
    let foreign = dir.path().join("foreign");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::set_permissions(&foreign, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    chown(&foreign, 54_321);
    let out = hook(
        &server.url(),
        &foreign,
        "what did we decide about caching",
        "t2",
        cwd.path(),
    )
    .run();
    assert_answers_despite_state(&out, Some("unsafe_permissions"));
    assert_eq!(
        std::fs::read_dir(&foreign).unwrap().count(),
        0,
        "nothing written into it"
    );
    let st = foreign.to_string_lossy().into_owned();
    let status = run_cli(&["status"], &[("POWERCONTEXT_HOOKS_STATE_DIR", &st)]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("problem: unsafe_permissions: the state directory is owned by another user"),
        "{text}"
    );
    let flush = run_cli(&["flush"], &[("POWERCONTEXT_HOOKS_STATE_DIR", &st)]);
    assert!(!flush.status.success());
    assert!(String::from_utf8_lossy(&flush.stderr).contains("unsafe_permissions"));
}

#[test]
fn state_status_escapes_control_characters_from_state_files() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::set_permissions(&state, std::os::unix::fs::PermissionsExt::from_mode(0o700)).unwrap();
    let planted = json!({"format": 1, "finished": 1, "report": {
        "busy": false, "delivered": 0, "rejected": 0, "expired": 0, "kept": 0, "unconfigured": 0,
        "flushed": 0, "pending": 0, "gave_up": 0, "newer_format": 0,
        "last_error": "\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}31m"}});
    std::fs::write(state.join("drain.json"), planted.to_string()).unwrap();
    std::fs::set_permissions(
        state.join("drain.json"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let st = state.to_string_lossy().into_owned();
    for args in [&["status"][..], &["status", "--json"][..]] {
        let out = run_cli(args, &[("POWERCONTEXT_HOOKS_STATE_DIR", &st)]);
        assert!(out.status.success());
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "raw control characters reach the terminal: {text:?}"
        );
        assert!(text.contains("\\u{1b}"), "{text}");
    }
}

#[test]
fn state_replayed_pi_captures_for_a_server_without_a_model_leave_no_ledger_entry() {
    let real = RealServer::shared();
    let proxy = Proxy::start(&real.url(), Gate::Down);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let st = state.to_string_lossy().into_owned();
    let cwd = tempfile::tempdir().unwrap();
    let prompt = format!("a Pi prompt spooled while the Server was down {}", nonce());
    let event = json!({"prompt": prompt, "system_prompt": "Base instructions",
        "cwd": cwd.path().to_string_lossy(), "session_id": "session-pi-state", "branch_roles": ["user"]});
    let out = HookCmd::new(PI)
        .env("POWERCONTEXT_PI_SERVER_URL", proxy.url())
        .env("POWERCONTEXT_HOOKS_STATE_DIR", &st)
        .arg("before-agent-start")
        .stdin_json(&event)
        .run();
    assert!(out.status.success());
    assert!(out.diagnostic("capture_spooled").is_some(), "{}", out.stderr);

    proxy.set(Gate::Up);
    let url = proxy.url();
    let env = [
        ("POWERCONTEXT_HOOKS_STATE_DIR", st.as_str()),
        ("POWERCONTEXT_PI_SERVER_URL", url.as_str()),
        ("POWERCONTEXT_PI_REQUEST_TIMEOUT_SECONDS", "10"),
    ];
    let first = run_cli(&["flush", "--json"], &env);
    let report: Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!(report["delivered"], 1, "{report}");
    assert_eq!(report["last_error"], "inference_unavailable", "{report}");
    assert_eq!(first.status.code(), Some(0), "{report}");
    assert!(
        !state.join("ledger.json").exists(),
        "a ledger entry was kept for a Server without a model"
    );
    let second = run_cli(&["flush"], &env);
    assert_eq!(
        second.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&second.stdout)
    );
}

/// Records of the Claude Code hook's run journal in `state`.
fn journal_records(state: &Path) -> Vec<Value> {
    std::fs::read_to_string(state.join("journal-claude-code.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
fn state_captures_handed_to_a_running_flush_are_delivered_without_another_hook_run() {
    let real = RealServer::shared();
    let proxy = Proxy::start(&real.url(), Gate::Down);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cwd = tempfile::tempdir().unwrap();
    let tag = nonce();
    let first = format!("spooled before the flush {tag}");
    spool_one(&state, &proxy.url(), &first, "t-first");

    // The flush holds the drain lock while its capture waits at the gate.
    proxy.set(Gate::HoldSources);
    let env = flush_env(&state, &proxy.url());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let flush = cli(&["flush", "--json", "--budget", "60"], &env)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_source_request(&proxy);

    // Hooks with background draining on: each sees the lock held and leaves its capture to the
    // flush, starting no drainer of its own.
    let prompts: Vec<String> = (0..5)
        .map(|i| format!("handed to a running flush {i} {tag}"))
        .collect();
    for (i, p) in prompts.iter().enumerate() {
        let out = hook(&proxy.url(), &state, p, &format!("t-{i}"), cwd.path())
            .env_remove(NO_DRAINER.0)
            .run();
        out.assert_fail_open();
    }
    let queued = journal_records(&state)
        .iter()
        .filter(|r| r["capture"] == "queued")
        .count();
    assert_eq!(queued, 5, "{:?}", journal_records(&state));

    proxy.set(Gate::Up);
    let out = flush.wait_with_output().unwrap();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("flush said: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(
        (out.status.code(), &report["delivered"]),
        (Some(0), &json!(6)),
        "{report}"
    );
    assert!(spool_files(&state).is_empty(), "{:?}", spool_files(&state));
    assert_eq!(sources_for(real, &first, "t-first"), 1);
    for (i, p) in prompts.iter().enumerate() {
        assert_eq!(sources_for(real, p, &format!("t-{i}")), 1, "prompt {i}");
    }
}

#[test]
fn state_flush_names_an_invalid_config_and_its_fix() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let url = closed_port_url();
    spool_one(&state, &url, "spooled before the config broke 1", "t-1");
    spool_one(&state, &url, "spooled before the config broke 2", "t-2");
    let fifo = dir.path().join("config-fifo");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let large = dir.path().join("large.toml");
    std::fs::write(&large, "# padding\n".repeat(30_000)).unwrap();
    let st = state.to_string_lossy().into_owned();
    let cases = [
        ("/dev/zero".to_owned(), "is not a regular file"),
        (fifo.to_string_lossy().into_owned(), "is not a regular file"),
        (large.to_string_lossy().into_owned(), "is larger than 256 KiB"),
    ];
    for (config, problem) in &cases {
        let env = [
            ("POWERCONTEXT_HOOKS_STATE_DIR", st.as_str()),
            ("POWERCONTEXT_CLAUDE_SERVER_URL", url.as_str()),
            ("POWERCONTEXT_HOOKS_CONFIG", config.as_str()),
        ];
        let out = run_cli(&["flush", "--json", "--budget", "10"], &env);
        let report: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(out.status.code(), Some(1), "{report}");
        let issue = &report["config_error"];
        assert_eq!(
            (&issue["setting"], &issue["problem"]),
            (&json!(config), &json!(problem)),
            "{report}"
        );
        assert!(issue["fix"].as_str().unwrap().contains("doctor"), "{report}");
        assert_eq!(report["last_error"], "config_invalid", "{report}");

        let out = run_cli(&["flush", "--budget", "10"], &env);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(1), "{text}");
        assert!(
            text.contains(&format!(
                "invalid setting `{config}`: {problem}; correct that setting"
            )),
            "{text}"
        );
    }
    assert_eq!(spool_files(&state).len(), 2);
}

#[test]
fn state_a_state_dir_that_is_a_file_is_refused_by_flush_and_status() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("state");
    std::fs::write(&file, "x").unwrap();
    for state in [file.clone(), file.join("below")] {
        let st = state.to_string_lossy().into_owned();
        let env = [("POWERCONTEXT_HOOKS_STATE_DIR", st.as_str())];
        for command in ["flush", "status"] {
            let out = run_cli(&[command, "--json"], &env);
            let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(out.status.code(), Some(1), "{command}: {answer}");
            assert_eq!(answer["ok"], false, "{command}: {answer}");
            let error = answer["error"].as_str().unwrap();
            assert!(
                error.contains(&format!("state directory {st} unusable (not_a_directory)")),
                "{command}: {error}"
            );

            let out = run_cli(&[command], &env);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{command}: {stderr}");
            assert!(out.stdout.is_empty(), "{command}");
            assert!(
                stderr.contains("powercontext-hooks: error: state directory") && stderr.contains("remove it"),
                "{command}: {stderr}"
            );
        }
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "x");
}

/// The background drainers working for `state`: processes whose command line is the drainer's and
/// whose environment names this state directory.
fn drainers_of(state: &Path) -> Vec<u32> {
    let needle = format!("POWERCONTEXT_HOOKS_STATE_DIR={}", state.display());
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|p| p.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            cmdline.split(|b| *b == 0).any(|a| a == b"--powercontext-drain")
                && environ.split(|b| *b == 0).any(|v| v == needle.as_bytes())
        })
        .collect()
}

/// A hook that counts on a lingering drainer and still holds its entry when that drainer leaves
/// (here: at the drainer's budget, the hook waiting on a slow recall) is not left alone: the
/// leaving drainer starts a successor, which delivers the capture once the hook is killed before
/// its answer (no hand-over, no other prompt).
#[test]
fn state_a_hook_still_on_the_network_when_the_lingering_drainer_leaves_is_delivered_by_a_successor() {
    const HANG_MARK: &str = "OUTLASTS";
    let s = slow_for("scp_successor", HANG_MARK, Duration::from_secs(50));
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cwd = tempfile::tempdir().unwrap();
    let delivered = |n: usize, within: Duration| {
        let until = Instant::now() + within;
        while s.count(CAPTURE) < n {
            assert!(Instant::now() < until, "capture {n} was not delivered");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let env = [
        (NO_DRAINER.0, "0"),
        ("POWERCONTEXT_CLAUDE_HTTP_BUDGET_SECONDS", "90"),
        ("POWERCONTEXT_CLAUDE_REQUEST_TIMEOUT_SECONDS", "90"),
    ];
    let mut first = spawn_hook(&s.url(), &state, "first prompt", "t1", cwd.path(), &env);
    assert!(first.wait().unwrap().success());
    delivered(1, Duration::from_secs(15));
    let lingering = drainers_of(&state);
    assert_eq!(lingering.len(), 1, "one drainer lingers: {lingering:?}");

    // This hook finds it lingering (so starts no drainer of its own) and then waits on its recall
    // for longer than the drainer may stay.
    let mut hook = spawn_hook(
        &s.url(),
        &state,
        &format!("second prompt {HANG_MARK}"),
        "t2",
        cwd.path(),
        &env,
    );
    let until = Instant::now() + Duration::from_secs(10);
    while s.count(PREPARE) < 2 {
        assert!(Instant::now() < until, "the second hook never recalled");
        std::thread::sleep(Duration::from_millis(10));
    }
    // The lingering drainer leaves at its budget (30 s from its start).
    let until = Instant::now() + Duration::from_secs(45);
    while drainers_of(&state).contains(&lingering[0]) {
        assert!(Instant::now() < until, "the lingering drainer never left");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(s.count(CAPTURE), 1, "the capture went out before the answer");
    // The host kills the hook before its answer: nothing hands its capture over now.
    hook.kill().unwrap();
    let _ = hook.wait();
    delivered(2, Duration::from_secs(15));
    assert_eq!(
        capture_contents(&s),
        ["first prompt".to_owned(), format!("second prompt {HANG_MARK}")]
    );
}

#[test]
fn state_the_prompts_that_follow_are_delivered_by_the_lingering_drainer_without_starting_another() {
    const HANG_MARK: &str = "LINGERHANG";
    let s = slow_for("scp_linger", HANG_MARK, Duration::from_secs(12));
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cwd = tempfile::tempdir().unwrap();
    let delivered = |n: usize| {
        let until = Instant::now() + Duration::from_secs(15);
        while s.count(CAPTURE) < n {
            assert!(Instant::now() < until, "capture {n} was not delivered");
            std::thread::sleep(Duration::from_millis(10));
        }
    };

    // Every hook of this session runs with the same environment, as a host's hooks do (a drainer
    // is only counted on by hooks of its own environment); budgets long enough for the hook that
    // is killed mid-recall below.
    let env = [
        (NO_DRAINER.0, "0"),
        ("POWERCONTEXT_CLAUDE_HTTP_BUDGET_SECONDS", "30"),
        ("POWERCONTEXT_CLAUDE_REQUEST_TIMEOUT_SECONDS", "30"),
    ];
    let prompt = |url: &str, text: &str, turn: &str| {
        let mut child = spawn_hook(url, &state, text, turn, cwd.path(), &env);
        assert!(child.wait().unwrap().success());
    };

    // The first prompt starts a drainer; once it has delivered, it is still there.
    prompt(&s.url(), "first prompt of the burst", "t1");
    delivered(1);
    let lingering = drainers_of(&state);
    assert_eq!(lingering.len(), 1, "one drainer lingers: {lingering:?}");

    // The prompts that follow hand their captures to it: no other drainer ever runs.
    let seen = Arc::new(std::sync::Mutex::new(std::collections::BTreeSet::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (seen, stop, state) = (Arc::clone(&seen), Arc::clone(&stop), state.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                seen.lock().unwrap().extend(drainers_of(&state));
                std::thread::sleep(Duration::from_millis(1));
            }
        })
    };
    prompt(&s.url(), "second prompt of the burst", "t2");
    delivered(2);

    // A hook that found it lingering and is killed while it recalls: the lingering drainer
    // (not one of its own: it started none) delivers its capture once it is gone.
    let home = cwd.path().join(".home");
    let mut child = spawn_hook(
        &s.url(),
        &state,
        &format!("third prompt {HANG_MARK}"),
        "t3",
        cwd.path(),
        &env,
    );
    let until = Instant::now() + Duration::from_secs(10);
    while s.count(PREPARE) < 3 {
        assert!(Instant::now() < until, "the third hook never recalled");
        std::thread::sleep(Duration::from_millis(10));
    }
    // Well past the drainer's idle time: it stays while the hook holds its entry.
    std::thread::sleep(Duration::from_millis(5500));
    assert_eq!(s.count(CAPTURE), 2, "the capture went out before the answer");
    child.kill().unwrap();
    let _ = child.wait();
    delivered(3);
    stop.store(true, Ordering::Relaxed);
    watcher.join().unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        lingering.iter().copied().collect(),
        "only the lingering drainer ran"
    );
    let contents: Vec<String> = s
        .requests()
        .iter()
        .filter(|r| r.path == CAPTURE)
        .map(|r| {
            let v: Value = serde_json::from_slice(&r.body).unwrap();
            v["content"].as_str().unwrap().to_owned()
        })
        .collect();
    assert_eq!(
        contents,
        [
            "first prompt of the burst",
            "second prompt of the burst",
            &format!("third prompt {HANG_MARK}"),
        ],
        "each delivered once, in order"
    );
    // The drainer removes an entry once the Server's answer is in: a moment after it was counted.
    let until = Instant::now() + Duration::from_secs(5);
    while !spool_files(&state).is_empty() {
        assert!(Instant::now() < until, "a delivered entry stays in the spool");
        std::thread::sleep(Duration::from_millis(10));
    }

    // A hook of another environment (here: configured for another Server) never counts on that
    // drainer, which delivers only with the settings it inherited: it starts its own.
    let other = FakeServer::builder("scp_other").ready("other context").start();
    prompt(&other.url(), "a prompt for another Server", "t4");
    let until = Instant::now() + Duration::from_secs(4);
    while other.count(CAPTURE) == 0 {
        assert!(
            Instant::now() < until,
            "the capture waits on a drainer that cannot deliver it"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(s.count(CAPTURE), 3);
    let _ = std::fs::remove_dir_all(home);
    stop_drainers_of(&state, "TERM");
}

/// The linger lock files in `state` (one name per environment; see the drainer's linger).
fn linger_locks(state: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(state)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("drain-linger-"))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn wait_until(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < until, "{what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn signal(pid: u32, sig: &str) {
    assert!(
        Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(pid.to_string())
            .status()
            .unwrap()
            .success()
    );
}

/// Sends `sig` to every drainer still working for `state` (one may leave meanwhile).
fn stop_drainers_of(state: &Path, sig: &str) {
    for pid in drainers_of(state) {
        let _ = Command::new("kill")
            .arg(format!("-{sig}"))
            .arg(pid.to_string())
            .status();
    }
}

/// Kills a process it names when dropped (also when an assertion fails).
struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg("-KILL").arg(self.0.to_string()).status();
    }
}

/// A server that recalls at once, but takes `hang` for a prompt holding `mark`.
fn slow_for(scope: &str, mark: &'static str, hang: Duration) -> FakeServer {
    FakeServer::builder(scope)
        .route(PREPARE, move |req| {
            if String::from_utf8_lossy(&req.body).contains(mark) {
                std::thread::sleep(hang);
            }
            Reply::json(
                200,
                &powercontext_hooks_test_support::fake_server::ready("remembered context"),
            )
        })
        .start()
}

fn capture_contents(s: &FakeServer) -> Vec<String> {
    s.requests()
        .iter()
        .filter(|r| r.path == CAPTURE)
        .map(|r| {
            let v: Value = serde_json::from_slice(&r.body).unwrap();
            v["content"].as_str().unwrap().to_owned()
        })
        .collect()
}

#[test]
fn state_a_stopped_or_killed_lingering_drainer_loses_nothing_and_a_lingerer_leaves_within_its_bound() {
    use std::os::unix::fs::PermissionsExt;
    const HANG_MARK: &str = "LINGERKILLED";
    let s = slow_for("scp_linger_kill", HANG_MARK, Duration::from_secs(3));
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cwd = tempfile::tempdir().unwrap();
    let env = [
        (NO_DRAINER.0, "0"),
        ("POWERCONTEXT_CLAUDE_HTTP_BUDGET_SECONDS", "30"),
        ("POWERCONTEXT_CLAUDE_REQUEST_TIMEOUT_SECONDS", "30"),
    ];
    let prompt = |text: &str, turn: &str| {
        let mut child = spawn_hook(&s.url(), &state, text, turn, cwd.path(), &env);
        assert!(child.wait().unwrap().success());
    };
    let delivered = |n: usize| {
        wait_until(
            &format!("capture {n} was not delivered"),
            Duration::from_secs(20),
            || s.count(CAPTURE) >= n,
        );
    };
    let one_lingerer = || {
        let mut found = Vec::new();
        wait_until("no drainer lingers", Duration::from_secs(10), || {
            found = drainers_of(&state);
            found.len() == 1 && linger_locks(&state).len() == 1
        });
        found[0]
    };

    prompt("first prompt", "t1");
    delivered(1);
    let first = one_lingerer();
    let lock = &linger_locks(&state)[0];
    let mode = std::fs::symlink_metadata(lock).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the linger lock is owner-only");

    // A lingerer that is stopped holds its lock but no longer stamps it: once its stamp is stale
    // the next hook starts a drainer of its own rather than leave its capture to it.
    signal(first, "STOP");
    // Never left stopped behind a failed assertion.
    let _stopped = KillOnDrop(first);
    std::thread::sleep(Duration::from_secs(4));
    prompt("second prompt, the lingerer stopped", "t2");
    delivered(2);

    // Killed, its lock goes with it: the next hook starts a drainer (which lingers in its place).
    signal(first, "KILL");
    wait_until("the stopped drainer did not die", Duration::from_secs(10), || {
        !drainers_of(&state).contains(&first)
    });
    prompt("third prompt", "t3");
    delivered(3);
    let third = one_lingerer();
    assert_ne!(third, first);

    // A hook that counted on a lingerer killed while it recalls: its capture is delivered anyway.
    let mut child = spawn_hook(
        &s.url(),
        &state,
        &format!("fourth prompt {HANG_MARK}"),
        "t4",
        cwd.path(),
        &env,
    );
    wait_until("the fourth hook never recalled", Duration::from_secs(10), || {
        s.count(PREPARE) >= 4
    });
    assert_eq!(drainers_of(&state), [third], "it started no drainer of its own");
    signal(third, "KILL");
    assert!(child.wait().unwrap().success());
    delivered(4);
    assert_eq!(
        capture_contents(&s),
        [
            "first prompt",
            "second prompt, the lingerer stopped",
            "third prompt",
            &format!("fourth prompt {HANG_MARK}"),
        ],
        "each delivered once, in order"
    );

    // The last drainer leaves once idle (far within its budget), and takes its lock file along.
    wait_until(
        "a drainer stays past its idle bound",
        Duration::from_secs(20),
        || drainers_of(&state).is_empty(),
    );
    assert!(linger_locks(&state).is_empty(), "{:?}", linger_locks(&state));
    assert!(spool_files(&state).is_empty());
    assert_eq!(s.count(CAPTURE), 4);
}

#[test]
fn state_a_link_planted_at_the_linger_lock_is_never_followed() {
    use std::os::unix::fs::PermissionsExt;
    let s = FakeServer::builder("scp_linger_link").ready("context").start();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cwd = tempfile::tempdir().unwrap();
    let env = [(NO_DRAINER.0, "0")];
    let prompt = |text: &str, turn: &str| {
        let mut child = spawn_hook(&s.url(), &state, text, turn, cwd.path(), &env);
        assert!(child.wait().unwrap().success());
    };
    prompt("first prompt", "t1");
    let mut name = None;
    wait_until("no drainer lingers", Duration::from_secs(20), || {
        name = linger_locks(&state).pop();
        name.is_some() && s.count(CAPTURE) == 1
    });
    let name = name.unwrap();
    for pid in drainers_of(&state) {
        signal(pid, "KILL");
    }
    wait_until("the drainer did not die", Duration::from_secs(10), || {
        drainers_of(&state).is_empty()
    });
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "untouched").unwrap();
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = std::fs::metadata(&victim).unwrap().modified().unwrap();
    std::fs::remove_file(&name).unwrap();
    std::os::unix::fs::symlink(&victim, &name).unwrap();

    // The hook does not count on a link, and its drainer neither locks nor stamps through it.
    prompt("second prompt", "t2");
    wait_until("the capture was not delivered", Duration::from_secs(20), || {
        s.count(CAPTURE) == 2
    });
    wait_until("a drainer stays", Duration::from_secs(20), || {
        drainers_of(&state).is_empty()
    });
    let meta = std::fs::metadata(&victim).unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "untouched");
    assert_eq!(meta.permissions().mode() & 0o777, 0o644);
    assert_eq!(meta.modified().unwrap(), before);
    assert!(std::fs::symlink_metadata(&name).unwrap().file_type().is_symlink());
}

#[test]
fn state_a_capture_kept_back_by_a_failing_server_is_retried_by_the_lingering_drainer_without_another_prompt()
{
    use std::sync::atomic::AtomicUsize;
    let attempts = Arc::new(AtomicUsize::new(0));
    let taken = Arc::new(AtomicUsize::new(0));
    let s = {
        let (attempts, taken) = (Arc::clone(&attempts), Arc::clone(&taken));
        FakeServer::builder("scp_linger_retry")
            .ready("context")
            .route(CAPTURE, move |_| {
                // The first delivery meets a Server that cannot take it (as one swamped by a burst).
                if attempts.fetch_add(1, Ordering::SeqCst) == 0 {
                    Reply::json(503, &json!({"detail": "busy"}))
                } else {
                    taken.fetch_add(1, Ordering::SeqCst);
                    Reply::json(202, &powercontext_hooks_test_support::fake_server::accepted(1))
                }
            })
            .start()
    };
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cwd = tempfile::tempdir().unwrap();
    let mut child = spawn_hook(
        &s.url(),
        &state,
        "the only prompt",
        "t1",
        cwd.path(),
        &[(NO_DRAINER.0, "0")],
    );
    assert!(child.wait().unwrap().success());
    // No other prompt comes: the drainer that lingers passes again once its pause is over.
    wait_until(
        "the kept-back capture waits for the next prompt",
        Duration::from_secs(20),
        || taken.load(Ordering::SeqCst) == 1,
    );
    wait_until("the entry stays in the spool", Duration::from_secs(5), || {
        spool_files(&state).is_empty()
    });
    wait_until("the drainer stays", Duration::from_secs(20), || {
        drainers_of(&state).is_empty()
    });
    assert_eq!(taken.load(Ordering::SeqCst), 1, "delivered once");
    assert_eq!(attempts.load(Ordering::SeqCst), 2);
}

#[test]
fn state_with_the_server_down_a_hook_starts_no_drainer_while_one_lingers() {
    let s = FakeServer::builder("scp_down_linger").ready("context").start();
    let url = s.url();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cwd = tempfile::tempdir().unwrap();
    let env = [(NO_DRAINER.0, "0")];
    let prompt = |text: &str, turn: &str| {
        let mut child = spawn_hook(&url, &state, text, turn, cwd.path(), &env);
        assert!(child.wait().unwrap().success());
    };
    prompt("first prompt, the Server is up", "t1");
    // Its drainer delivers, then lingers for the prompts that follow.
    wait_until(
        "the first capture is not delivered by a lingering drainer",
        Duration::from_secs(15),
        || s.count(CAPTURE) == 1 && !linger_locks(&state).is_empty(),
    );
    let mut lingering = drainers_of(&state);
    lingering.sort_unstable();
    assert!(!lingering.is_empty(), "a drainer lingers");
    // The Server goes down at the same address (connection refused), the scope is not cached (so
    // the hook's capture is not handed over: the scope is never resolved, as for a Server that
    // was down from the start), and the last drainer start is older than the interval: only the
    // lingering drainer keeps a new start away.
    drop(s);
    std::fs::remove_dir_all(state.join("scopes")).unwrap();
    let stamp = state.join("drain.lock");
    let old = std::time::SystemTime::now() - Duration::from_secs(60);
    std::fs::File::options()
        .write(true)
        .open(&stamp)
        .unwrap()
        .set_modified(old)
        .unwrap();
    prompt("second prompt, the Server is down", "t2");
    let after = std::fs::metadata(&stamp).unwrap().modified().unwrap();
    assert_eq!(after, old, "the hook started a drainer beside the lingering one");
    let mut now = drainers_of(&state);
    now.sort_unstable();
    assert_eq!(now, lingering, "only the lingering drainer runs");
    // Nothing lost: the capture waits in the spool, owner-only, once.
    let files = spool_files(&state);
    assert_eq!(files.len(), 1, "{files:?}");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&files[0]).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&files[0]).unwrap()).unwrap();
    assert_eq!(v["content"], "second prompt, the Server is down");
    stop_drainers_of(&state, "TERM");
}

#[test]
fn state_a_state_dir_removed_under_a_lingering_drainer_loses_no_later_prompt() {
    let s = FakeServer::builder("scp_linger_gone").ready("context").start();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cwd = tempfile::tempdir().unwrap();
    let env = [(NO_DRAINER.0, "0")];
    let prompt = |text: &str, turn: &str| {
        let mut child = spawn_hook(&s.url(), &state, text, turn, cwd.path(), &env);
        assert!(child.wait().unwrap().success());
    };
    prompt("before the removal", "t1");
    wait_until("no drainer lingers", Duration::from_secs(20), || {
        s.count(CAPTURE) == 1 && !linger_locks(&state).is_empty()
    });
    let first = drainers_of(&state);
    assert_eq!(first.len(), 1);
    // The whole state directory goes (a cleanup, a new HOME): its lock file with it.
    std::fs::remove_dir_all(&state).unwrap();
    prompt("after the removal", "t2");
    wait_until(
        "the prompt after the removal waits on the old drainer",
        Duration::from_secs(20),
        || s.count(CAPTURE) == 2,
    );
    assert_eq!(capture_contents(&s), ["before the removal", "after the removal"]);
    wait_until("a drainer stays", Duration::from_secs(30), || {
        drainers_of(&state).is_empty()
    });
    assert!(spool_files(&state).is_empty());
}

/// The first prompt in a new state directory, its Server refusing connections: the hook answers at
/// once, and a drainer still starts for its capture. The start made while the prompt was on the
/// network is waited for after the answer (the process's exit used to end its thread before the
/// start), and probing the drain lock does not create the file whose age means "a drainer started
/// just now" (which kept the start after the answer away). Several directories, since the lost
/// start was a race.
#[test]
fn state_the_first_refused_prompt_of_a_new_state_dir_starts_a_drainer() {
    let url = closed_port_url();
    let cwd = tempfile::tempdir().unwrap();
    let dirs: Vec<tempfile::TempDir> = (0..6).map(|_| tempfile::tempdir().unwrap()).collect();
    for (i, dir) in dirs.iter().enumerate() {
        let state = dir.path().join("state");
        let out = hook(
            &url,
            &state,
            "a prompt while the Server is down",
            &format!("t{i}"),
            cwd.path(),
        )
        .env(NO_DRAINER.0, "0")
        .run();
        out.assert_fail_open();
        assert!(out.diagnostic("capture_spooled").is_some(), "{}", out.stderr);
    }
    for dir in &dirs {
        let state = dir.path().join("state");
        // A drainer ran: its pass wrote the summary `status` shows, and kept the capture.
        wait_until(
            "no drainer started for the first refused prompt",
            Duration::from_secs(15),
            || state.join("drain.json").exists(),
        );
        assert_eq!(spool_files(&state).len(), 1, "the capture waits for the Server");
    }
    for dir in &dirs {
        stop_drainers_of(&dir.path().join("state"), "TERM");
    }
}

/// A lingering drainer whose pass cannot use the state directory (here: the state lock held past
/// its wait) leaves; the hooks that counted on it are not left alone. It starts a successor, which
/// delivers what was handed over to it and, once its hook is killed before its answer, the capture
/// a hook still held when it left.
#[test]
fn state_a_lingering_drainer_whose_pass_fails_starts_a_successor() {
    a_failed_lingering_drainer_leaves_nothing_behind(
        "scp_failed_successor",
        Duration::from_secs(25),
        Duration::ZERO,
    );
}

/// Runs a first prompt and waits until its drainer has delivered it and lingers; returns that
/// drainer's pid.
fn lingering_after_a_first_prompt(s: &FakeServer, state: &Path, cwd: &Path, env: &[(&str, &str)]) -> u32 {
    let mut first = spawn_hook(&s.url(), state, "first prompt", "t1", cwd, env);
    assert!(first.wait().unwrap().success());
    wait_until(
        "the first capture is not delivered by a lingering drainer",
        Duration::from_secs(15),
        || s.count(CAPTURE) == 1 && !linger_locks(state).is_empty(),
    );
    let lingering = drainers_of(state);
    assert_eq!(lingering.len(), 1, "one drainer lingers: {lingering:?}");
    lingering[0]
}

/// The lingering drainer's pass fails on a held state lock while one hook waits on a recall of
/// `hang` and another hands its capture over; the lock stays held `held_after_it_left` once that
/// drainer has left, then the waiting hook is killed before its answer. Every capture is
/// delivered without another prompt.
fn a_failed_lingering_drainer_leaves_nothing_behind(
    scope: &str,
    hang: Duration,
    held_after_it_left: Duration,
) {
    const HANG_MARK: &str = "HELDWHILEITFAILS";
    let s = slow_for(scope, HANG_MARK, hang);
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cwd = tempfile::tempdir().unwrap();
    let env = [
        (NO_DRAINER.0, "0"),
        ("POWERCONTEXT_CLAUDE_HTTP_BUDGET_SECONDS", "90"),
        ("POWERCONTEXT_CLAUDE_REQUEST_TIMEOUT_SECONDS", "90"),
    ];
    let lingering = lingering_after_a_first_prompt(&s, &state, cwd.path(), &env);
    let _reap = KillOnDrop(lingering);
    // Another process holds the state lock (a long write): the lingering drainer's next pass
    // fails on it.
    let held = powercontext_hooks_core::lock::try_acquire(&state.join("state.lock")).unwrap();
    // A hook counts on the lingering drainer and waits on its recall...
    let mut second = spawn_hook(
        &s.url(),
        &state,
        &format!("second prompt {HANG_MARK}"),
        "t2",
        cwd.path(),
        &env,
    );
    let _second = KillOnDrop(second.id());
    wait_until("the second hook never recalled", Duration::from_secs(10), || {
        s.count(PREPARE) >= 2
    });
    // ...and another hands its capture over to it, which makes it pass, and fail.
    let mut third = spawn_hook(&s.url(), &state, "third prompt", "t3", cwd.path(), &env);
    assert!(third.wait().unwrap().success());
    wait_until(
        "the lingering drainer never left",
        Duration::from_secs(30),
        || !drainers_of(&state).contains(&lingering),
    );
    std::thread::sleep(held_after_it_left);
    drop(held);
    // The host kills the waiting hook before its answer: nothing hands its capture over now.
    second.kill().unwrap();
    let _ = second.wait();
    wait_until(
        &format!(
            "the captures counted on the failed drainer wait: {:?}",
            capture_contents(&s)
        ),
        Duration::from_secs(20),
        || s.count(CAPTURE) == 3,
    );
    assert_eq!(
        capture_contents(&s),
        [
            "first prompt".to_owned(),
            format!("second prompt {HANG_MARK}"),
            "third prompt".to_owned()
        ]
    );
    stop_drainers_of(&state, "TERM");
}

/// A Server that refuses captures (503) while prompts keep coming: the lingering drainer passes
/// over the spool again once per pause, not once for every capture handed over during its pass
/// (each pass reads every waiting entry, and passing back to back kept a CPU busy for as long as
/// the prompts came). Nothing is lost: every capture waits in the spool.
#[test]
fn state_a_server_refusing_captures_is_retried_once_per_pause_while_prompts_keep_coming() {
    let s = FakeServer::builder("scp_refusing")
        .ready("context")
        .route(CAPTURE, |_| Reply::json(503, &json!({"detail": "busy"})))
        .start();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cwd = tempfile::tempdir().unwrap();
    let env = [(NO_DRAINER.0, "0")];
    let started = Instant::now();
    let run = Duration::from_secs(4);
    // Two hosts' prompts at once, so that captures keep arriving while a pass runs.
    let prompts: usize = std::thread::scope(|scope| {
        let spawners: Vec<_> = (0..2)
            .map(|k| {
                let (url, state, cwd) = (s.url(), &state, cwd.path());
                scope.spawn(move || {
                    let mut n = 0;
                    while started.elapsed() < run {
                        let text = format!("prompt {k}.{n}");
                        let mut child = spawn_hook(&url, state, &text, &format!("t{k}.{n}"), cwd, &env);
                        assert!(child.wait().unwrap().success());
                        n += 1;
                    }
                    n
                })
            })
            .collect();
        spawners.into_iter().map(|h| h.join().unwrap()).sum()
    });
    let elapsed = started.elapsed();
    let attempts = s.count(CAPTURE);
    // The first drainers' passes (two hooks may each start one before either lingers), then
    // one retry per 2 s pause.
    let bound = 3 + elapsed.as_secs().div_ceil(2) as usize + 1;
    assert!(
        attempts <= bound,
        "{attempts} capture attempts for {prompts} prompts in {elapsed:?} (at most {bound})"
    );
    assert_eq!(
        spool_files(&state).len(),
        prompts,
        "every capture waits in the spool"
    );
    stop_drainers_of(&state, "TERM");
}

/// A drainer that cannot linger because another drainer of its environment holds the linger lock
/// (here: stopped) still passes over what was handed over during its pass, also when that pass
/// found its Server unreachable: the capture does not wait for the stopped drainer or the next
/// prompt.
#[test]
fn state_a_capture_handed_over_during_a_failed_pass_is_delivered_when_the_linger_lock_is_taken() {
    let refused_once = Arc::new(AtomicBool::new(false));
    let refused = refused_once.clone();
    let s = FakeServer::builder("scp_no_linger")
        .ready("context")
        .route(CAPTURE, move |req| {
            // The first try of the slow capture fails, slowly: another prompt hands over meanwhile.
            if String::from_utf8_lossy(&req.body).contains("SLOWCAPTURE")
                && !refused.swap(true, Ordering::SeqCst)
            {
                std::thread::sleep(Duration::from_secs(5));
                return Reply::json(503, &json!({"detail": "busy"}));
            }
            Reply::json(202, &powercontext_hooks_test_support::fake_server::accepted(7))
        })
        .start();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cwd = tempfile::tempdir().unwrap();
    let env = [(NO_DRAINER.0, "0")];
    let lingering = lingering_after_a_first_prompt(&s, &state, cwd.path(), &env);
    // Stopped, it keeps its linger lock; once its beat is stale hooks start drainers of their own.
    signal(lingering, "STOP");
    let _reap = KillOnDrop(lingering);
    std::thread::sleep(Duration::from_secs(3));
    let mut slow = spawn_hook_in(
        "session-slow",
        &s.url(),
        &state,
        "slow SLOWCAPTURE",
        "t2",
        cwd.path(),
        &env,
    );
    assert!(slow.wait().unwrap().success());
    wait_until("the slow capture is never tried", Duration::from_secs(15), || {
        refused_once.load(Ordering::SeqCst)
    });
    // Handed over to the drainer whose pass waits on the slow capture, and will fail.
    let mut third = spawn_hook(&s.url(), &state, "third prompt", "t3", cwd.path(), &env);
    assert!(third.wait().unwrap().success());
    wait_until(
        &format!(
            "the hand-over waits for the stopped drainer: {:?}",
            capture_contents(&s)
        ),
        Duration::from_secs(20),
        || capture_contents(&s).iter().any(|c| c == "third prompt"),
    );
    assert!(
        capture_contents(&s).iter().any(|c| c == "slow SLOWCAPTURE"),
        "{:?}",
        capture_contents(&s)
    );
    stop_drainers_of(&state, "KILL");
}

/// A drainer started early whose tries all find another hook still holding its capture (on the
/// network for a long recall) does not linger; a capture handed over during its last try, which
/// found the Server unreachable, is still delivered at once, not once the slow hook is done.
#[test]
fn state_a_capture_handed_over_during_the_last_try_of_a_drainer_is_delivered_without_waiting_for_a_slow_hook()
{
    use std::sync::atomic::AtomicUsize;
    let tries = Arc::new(AtomicUsize::new(0));
    let last_try = Arc::new(AtomicBool::new(false));
    let (t, l) = (tries.clone(), last_try.clone());
    let s = FakeServer::builder("scp_last_try")
        .route(PREPARE, |req| {
            if String::from_utf8_lossy(&req.body).contains("SLOWRECALL") {
                std::thread::sleep(Duration::from_secs(40));
            }
            Reply::json(
                200,
                &powercontext_hooks_test_support::fake_server::ready("context"),
            )
        })
        .route(CAPTURE, move |req| {
            if String::from_utf8_lossy(&req.body).contains("REFUSED") {
                // The drainer's first tries are refused at once, its fifth (its last) slowly.
                let n = t.fetch_add(1, Ordering::SeqCst) + 1;
                if n == 5 {
                    l.store(true, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_secs(5));
                }
                if n <= 5 {
                    return Reply::json(503, &json!({"detail": "busy"}));
                }
            }
            Reply::json(202, &powercontext_hooks_test_support::fake_server::accepted(7))
        })
        .start();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let cwd = tempfile::tempdir().unwrap();
    let env = [
        (NO_DRAINER.0, "0"),
        ("POWERCONTEXT_CLAUDE_HTTP_BUDGET_SECONDS", "60"),
        ("POWERCONTEXT_CLAUDE_REQUEST_TIMEOUT_SECONDS", "60"),
    ];
    // A hook waits on a long recall, holding its capture written ahead.
    let mut slow = spawn_hook_in(
        "session-slow",
        &s.url(),
        &state,
        "slow SLOWRECALL",
        "t1",
        cwd.path(),
        &env,
    );
    let _slow = KillOnDrop(slow.id());
    wait_until("the slow hook never recalled", Duration::from_secs(15), || {
        s.count(PREPARE) >= 1
    });
    let mut refused = spawn_hook_in(
        "session-refused",
        &s.url(),
        &state,
        "REFUSED prompt",
        "t2",
        cwd.path(),
        &env,
    );
    assert!(refused.wait().unwrap().success());
    wait_until(
        "the drainer never tried five times",
        Duration::from_secs(20),
        || last_try.load(Ordering::SeqCst),
    );
    let mut third = spawn_hook(&s.url(), &state, "third prompt", "t3", cwd.path(), &env);
    assert!(third.wait().unwrap().success());
    // Well before the slow hook's recall ends (its own drainer would deliver it then).
    wait_until(
        &format!(
            "the hand-over waits for the slow hook: {:?}",
            capture_contents(&s)
        ),
        Duration::from_secs(20),
        || capture_contents(&s).iter().any(|c| c == "third prompt"),
    );
    assert!(slow.try_wait().unwrap().is_none(), "the slow hook is done");
    slow.kill().unwrap();
    let _ = slow.wait();
    stop_drainers_of(&state, "TERM");
}

/// The successor of a lingering drainer whose pass could not use the state directory tries again
/// after a pause while the cause lasts (here: the state lock held well past one wait), within its
/// budget: what was counted on the failed drainer does not wait for the next prompt.
#[test]
fn state_the_successor_of_a_failed_drainer_tries_again_while_the_state_lock_stays_held() {
    // Held for several of the successor's waits of the state lock.
    a_failed_lingering_drainer_leaves_nothing_behind(
        "scp_failed_successor_retries",
        Duration::from_secs(40),
        Duration::from_secs(8),
    );
}
