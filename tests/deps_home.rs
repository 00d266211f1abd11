//! Holds the dependency step (`make deps`: scripts/ensure-server-venv and scripts/ensure-hosts) to
//! its promises: it never writes into the caller's HOME, and a pinned install that is in place is
//! recognised with HOME anywhere (under the system temp dir too, where Codex warns on stderr).
//! It never installs anything: the run it checks is the "already installed" path.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use powercontext_hooks_test_support::hosts::repo_root;

/// Every entry under `dir`, relative to it.
fn tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            out.push(e.path().strip_prefix(dir).unwrap().display().to_string());
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_dependency_step_leaves_a_sentinel_home_untouched_and_reads_versions_from_stdout() {
    // Under the system temp dir on purpose: that is where Codex adds its stderr warning.
    let sentinel = tempfile::Builder::new()
        .prefix("pc-sentinel-home-")
        .tempdir()
        .unwrap();
    let home = sentinel.path();
    for script in ["scripts/ensure-server-venv", "scripts/ensure-hosts"] {
        let out = Command::new(repo_root().join(script))
            .env("HOME", home)
            // Left pointing at the sentinel too: a script that trusted them would write there.
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("CODEX_HOME", home.join(".codex"))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{script} failed:\n{stdout}\n{stderr}");
        assert!(
            !stderr.contains("installing"),
            "{script} reinstalled what was in place:\n{stderr}"
        );
        if script.ends_with("ensure-hosts") {
            // What it recognised, on stdout, exactly as the pinned versions read.
            assert!(stdout.contains("(Claude Code); codex-cli "), "{stdout}");
            assert!(stdout.contains("ensure-host-pi: pi "), "{stdout}");
            assert!(stdout.contains("ensure-host-opencode: opencode "), "{stdout}");
            assert!(stdout.contains("ensure-host-dsh: dsh "), "{stdout}");
            assert!(stdout.contains("ensure-host-kimi-code: kimi "), "{stdout}");
            assert!(stdout.contains("ensure-host-gemini-cli: gemini "), "{stdout}");
            assert!(stdout.contains("ensure-host-openclaw: OpenClaw "), "{stdout}");
        }
    }
    assert_eq!(
        tree(home),
        Vec::<String>::new(),
        "the dependency step wrote into HOME"
    );
}

#[test]
fn a_version_mismatch_says_what_it_saw_and_what_it_wanted() {
    // The helper the ensure scripts share, run on a stand-in "CLI" that prints a stderr warning
    // and a wrong version: the message names both versions, and the warning is not the version.
    let dir = tempfile::tempdir().unwrap();
    let cli = dir.path().join("fake-cli");
    fs::write(
        &cli,
        "#!/bin/sh\necho 'WARNING: proceeding, even though HOME is under /tmp' >&2\necho 'codex-cli 0.1.0'\n",
    )
    .unwrap();
    fs::set_permissions(&cli, fs::Permissions::from_mode(0o755)).unwrap();
    let lib = repo_root().join("scripts/lib/deps.sh");
    let run = |wanted: &str| {
        Command::new("bash")
            .arg("-c")
            .arg(format!(
                "source '{}' && deps_version demo '{wanted}' '{}' --version && echo \"saw $DEPS_SAW\"",
                lib.display(),
                cli.display()
            ))
            .output()
            .unwrap()
    };
    let out = run("codex-cli 0.171.0");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("printed 'codex-cli 0.1.0'"), "{stderr}");
    assert!(stderr.contains("wanted 'codex-cli 0.171.0'"), "{stderr}");
    let out = run("codex-cli 0.1.0");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "saw codex-cli 0.1.0\n");
}
