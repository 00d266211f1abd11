//! The hook executable setup wires in is its own copy, not the build's: a `cargo clean` breaks
//! nothing, doctor says when the copy and this CLI's build differ (with the fix), setup again
//! replaces it, uninstall removes it; and setup warns when what it writes names a CLI that runs
//! from a build tree.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::support::{CLAUDE, CLI, CODEX, Sandbox};

/// A Cargo project's `target/debug` holding a copy of the Claude Code hook (as a clone would).
fn build_tree(sb: &Sandbox) -> PathBuf {
    let project = sb.root.path().join("clone");
    let bin = project.join("target/debug");
    fs::create_dir_all(&bin).unwrap();
    fs::write(project.join("Cargo.toml"), "[workspace]\n").unwrap();
    fs::copy(CLAUDE, bin.join("powercontext-hook-claude-code")).unwrap();
    bin
}

fn json_of(out: &std::process::Output) -> (i32, Value) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v = serde_json::from_str(stdout.trim()).unwrap_or_else(|_| {
        panic!(
            "not JSON: {stdout}\n--- stderr\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), v)
}

fn check<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["hosts"][0]["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["check"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {report}"))
}

#[test]
fn setup_wires_its_own_copy_that_outlives_the_build_and_uninstall_removes_it() {
    let sb = Sandbox::new();
    let bin = build_tree(&sb);
    let bin_s = bin.to_str().unwrap();
    let setup = [
        "setup",
        "claude-code",
        "--server-url",
        "http://127.0.0.1:9",
        "--bin-dir",
        bin_s,
    ];
    let (code, out, err) = sb.cli_json(&setup);
    assert_eq!(code, 0, "{out}\n{err}");
    let copy = PathBuf::from(out["hook_executable"].as_str().unwrap());
    let state = sb
        .home()
        .join(".local/state/powercontext-hooks/installs/claude-code");
    assert!(copy.starts_with(&state), "{copy:?}");
    assert_eq!(out["executable"]["action"], "create", "{out}");
    assert_eq!(fs::read(&copy).unwrap(), fs::read(CLAUDE).unwrap());
    assert_eq!(fs::metadata(&copy).unwrap().permissions().mode() & 0o777, 0o755);
    // What the host runs names the copy, never the build tree.
    let hooks = fs::read_to_string(sb.plugin_dir("claude-code").join("hooks/hooks.json")).unwrap();
    assert!(hooks.contains(copy.to_str().unwrap()), "{hooks}");
    assert!(!hooks.contains(bin_s), "{hooks}");

    // `cargo clean`: the copy still runs (a hook with an empty event exits 0, failing open).
    fs::remove_dir_all(bin.parent().unwrap()).unwrap();
    let ran = Command::new(&copy)
        .env_clear()
        .env("HOME", sb.home())
        .env("POWERCONTEXT_HOOKS_CONFIG", "/nonexistent/config.toml")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(ran.status.code(), Some(0));

    // A rebuild that differs: doctor says the copy is another build, with the fix.
    let bin = build_tree(&sb);
    fs::copy(CODEX, bin.join("powercontext-hook-claude-code")).unwrap();
    let doctor = ["doctor", "claude-code", "--bin-dir", bin_s];
    let (_, report, _) = sb.cli_json(&doctor);
    let c = check(&report, "hook copy");
    assert_eq!(c["status"], "warn", "{c}");
    assert!(c["fix"].as_str().unwrap().contains("setup claude-code"), "{c}");
    // Setup again replaces it; doctor agrees then.
    let (code, out, _) = sb.cli_json(&setup);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["executable"]["action"], "update", "{out}");
    assert_eq!(fs::read(&copy).unwrap(), fs::read(CODEX).unwrap());
    let (_, report, _) = sb.cli_json(&doctor);
    assert_eq!(check(&report, "hook copy")["status"], "ok", "{report}");
    // A second run with the same build keeps it.
    let (_, again, _) = sb.cli_json(&setup);
    assert_eq!(again["executable"]["action"], "keep", "{again}");
    assert_eq!(again["result"], "unchanged", "{again}");

    let (code, out, _) = sb.cli_json(&["uninstall", "claude-code"]);
    assert_eq!(code, 0, "{out}");
    assert!(!copy.exists(), "uninstall removes the copy");
    assert!(!copy.parent().unwrap().exists(), "and its folder");
    assert!(
        out["actions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["action"] == "remove" && a["path"] == copy.to_str().unwrap()),
        "{out}"
    );
}

#[test]
fn setup_warns_when_what_it_writes_names_a_cli_in_a_build_tree() {
    let sb = Sandbox::new();
    let warned = |cli: &Path| {
        let out = Command::new(cli)
            .args([
                "setup",
                "claude-code",
                "--server-url",
                "http://127.0.0.1:9",
                "--bin-dir",
                Path::new(CLAUDE).parent().unwrap().to_str().unwrap(),
                "--dry-run",
                "--json",
            ])
            .env_clear()
            .envs(&sb.env)
            .current_dir(sb.project())
            .output()
            .unwrap();
        let (code, v) = json_of(&out);
        assert_eq!(code, 0, "{v}");
        v["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .find(|w| w.contains("build tree"))
            .map(str::to_owned)
    };
    // The test CLI runs from this project's target folder: the MCP headers helper names it.
    let w = warned(Path::new(CLI)).expect("a warning about the build tree");
    assert!(
        w.contains("make install") && w.contains("cargo install --locked --path ."),
        "{w}"
    );
    // The same CLI installed elsewhere: no warning.
    let installed = sb.root.path().join("installed/bin");
    fs::create_dir_all(&installed).unwrap();
    fs::copy(CLI, installed.join("powercontext-hooks")).unwrap();
    assert_eq!(warned(&installed.join("powercontext-hooks")), None);
}

#[test]
fn uninstall_lists_the_state_it_keeps_purge_removes_it_and_no_empty_settings_file_is_left() {
    let sb = Sandbox::new();
    let settings = sb.home().join(".claude/settings.json");
    assert!(!settings.exists());
    let state = sb.home().join(".local/state/powercontext-hooks");
    let setup = |host: &str| {
        let (code, out, err) = sb.cli_json(&["setup", host, "--server-url", "http://127.0.0.1:9"]);
        assert_eq!(code, 0, "{out}\n{err}");
    };
    setup("claude-code");
    assert!(
        settings.exists(),
        "Claude Code's CLI (or setup) wrote its settings file"
    );
    // A capture spooled and never delivered, as a hook leaves it.
    fs::create_dir_all(state.join("spool")).unwrap();
    fs::write(state.join("spool/0001.json"), "{}").unwrap();

    let (code, out, _) = sb.cli_json(&["uninstall", "claude-code"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["state"]["action"], "kept", "{out}");
    assert_eq!(out["state"]["path"], state.to_str().unwrap(), "{out}");
    assert_eq!(out["state"]["spooled_captures"], 1, "{out}");
    assert!(out["state"]["why"].as_str().unwrap().contains("--purge"), "{out}");
    assert!(
        state.join("spool/0001.json").exists(),
        "plain uninstall keeps the state"
    );
    assert!(
        !settings.exists(),
        "a settings file that was not there before setup is not left behind as {:?}",
        fs::read_to_string(&settings).ok()
    );
    // The text form says so too.
    setup("claude-code");
    let text = sb.cli(&["uninstall", "claude-code", "--dry-run"]);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("kept") && l.contains(state.to_str().unwrap())),
        "{text}"
    );

    // --purge waits for the last host, and never removes what is not the hooks'.
    setup("codex");
    fs::write(state.join("notes.txt"), "mine").unwrap();
    let (code, out, _) = sb.cli_json(&["uninstall", "claude-code", "--purge"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["state"]["action"], "kept", "{out}");
    assert!(state.join("spool/0001.json").exists());
    let (code, out, _) = sb.cli_json(&["uninstall", "codex", "--purge"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(out["state"]["action"], "removed", "{out}");
    let left: Vec<String> = fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["notes.txt"], "only what is not the hooks' stays");
    assert!(
        out["kept"].to_string().contains("notes.txt"),
        "and it is listed: {out}"
    );
}

#[test]
fn a_dry_run_says_exactly_what_the_host_cli_wrote_on_its_first_run() {
    // A fresh home: Claude Code creates its ~/.claude.json the first time it answers anything.
    let sb = Sandbox::new();
    let claude_json = sb.home().join(".claude.json");
    assert!(!claude_json.exists());
    let (code, plan, _) = sb.cli_json(&[
        "setup",
        "claude-code",
        "--server-url",
        "http://127.0.0.1:9",
        "--dry-run",
    ]);
    assert_eq!(code, 0, "{plan}");
    let wrote: Vec<&str> = plan["host_cli_wrote"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        claude_json.exists(),
        wrote.contains(&claude_json.to_str().unwrap()),
        "{plan}"
    );
    // Every path it names is really there, and nothing of setup's is.
    for p in &wrote {
        assert!(Path::new(p).exists(), "{p}");
    }
    assert!(!sb.config().exists());
    // Asked again, nothing new appears, and the text says nothing was changed.
    let again = sb.cli(&[
        "setup",
        "claude-code",
        "--server-url",
        "http://127.0.0.1:9",
        "--dry-run",
    ]);
    let text = String::from_utf8_lossy(&again.stdout);
    assert!(text.contains("dry run: nothing was changed"), "{text}");
}

#[test]
fn setup_says_on_stderr_what_it_waits_for_while_a_host_cli_runs() {
    let sb = Sandbox::new();
    // A host CLI that takes its time to answer (as a first start does).
    let slow = sb.root.path().join("slow-pi");
    fs::write(&slow, "#!/bin/sh\nsleep 4\necho 0.73.1\n").unwrap();
    fs::set_permissions(&slow, fs::Permissions::from_mode(0o755)).unwrap();
    let out = sb.cli(&[
        "setup",
        "pi",
        "--server-url",
        "http://127.0.0.1:9",
        "--host-cli",
        slow.to_str().unwrap(),
        "--dry-run",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("waiting for") && stderr.contains(slow.to_str().unwrap()),
        "{stderr}"
    );
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("waiting for"),
        "progress never goes to stdout"
    );
}

#[test]
fn doctor_warns_about_an_install_from_before_the_copy_that_runs_from_a_build_tree() {
    let sb = Sandbox::new();
    let bin = build_tree(&sb);
    let (code, out, _) = sb.cli_json(&[
        "setup",
        "claude-code",
        "--server-url",
        "http://127.0.0.1:9",
        "--bin-dir",
        bin.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    // The manifest an older setup wrote: the build's executable wired in, no copy recorded.
    let manifest = sb
        .plugin_dir("claude-code")
        .parent()
        .unwrap()
        .join("manifest.json");
    let mut m: Value = serde_json::from_slice(&fs::read(&manifest).unwrap()).unwrap();
    m.as_object_mut().unwrap().remove("executable");
    m["hook_exe"] = Value::from(bin.join("powercontext-hook-claude-code").to_str().unwrap());
    fs::write(&manifest, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    let (_, report, _) = sb.cli_json(&["doctor", "claude-code", "--bin-dir", bin.to_str().unwrap()]);
    let c = check(&report, "hook copy");
    assert_eq!(c["status"], "warn", "{c}");
    assert!(c["detail"].as_str().unwrap().contains("build tree"), "{c}");
    assert!(c["fix"].as_str().unwrap().contains("setup claude-code"), "{c}");
}

#[test]
fn a_link_planted_for_the_copys_folder_is_refused_and_nothing_lands_outside() {
    let sb = Sandbox::new();
    let bin = build_tree(&sb);
    let outside = sb.root.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    let host_dir = sb
        .home()
        .join(".local/state/powercontext-hooks/installs/claude-code");
    fs::create_dir_all(&host_dir).unwrap();
    fs::set_permissions(
        sb.home().join(".local/state/powercontext-hooks"),
        fs::Permissions::from_mode(0o700),
    )
    .unwrap();
    std::os::unix::fs::symlink(&outside, host_dir.join("bin")).unwrap();
    let (code, out, err) = sb.cli_json(&[
        "setup",
        "claude-code",
        "--server-url",
        "http://127.0.0.1:9",
        "--bin-dir",
        bin.to_str().unwrap(),
    ]);
    assert_ne!(code, 0, "{out}\n{err}");
    assert!(
        format!("{out}{err}").contains("not a folder of setup's own"),
        "{out}\n{err}"
    );
    assert_eq!(
        fs::read_dir(&outside).unwrap().count(),
        0,
        "the copy landed outside"
    );
}
