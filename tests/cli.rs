//! The `powercontext-hooks` command line: help that explains itself and a version.

use std::process::Command;

use crate::support::CLI;

#[test]
fn help_explains_the_hooks_and_where_configuration_lives() {
    let out = Command::new(CLI).arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in [
        "powercontext-hook-claude-code",
        "powercontext-hook-codex",
        "POWERCONTEXT_HOOKS_CONFIG",
        "powercontext server run",
    ] {
        assert!(text.contains(needle), "help lacks {needle}: {text}");
    }
    // Every row of the host table, not a list kept by hand.
    for host in powercontext_hooks_core::host::Integration::ALL {
        let exe = host.spec().hook_exe;
        assert!(text.contains(exe), "help lacks {exe}: {text}");
    }
}

#[test]
fn version_is_printed() {
    for args in [&["--version"][..], &["version"][..]] {
        let out = Command::new(CLI).args(args).output().unwrap();
        assert!(out.status.success());
        assert_eq!(
            String::from_utf8(out.stdout).unwrap().trim(),
            format!("powercontext-hooks {}", env!("CARGO_PKG_VERSION"))
        );
    }
    let out = Command::new(CLI).args(["version", "--json"]).output().unwrap();
    assert!(out.status.success());
    let answer: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["version"], env!("CARGO_PKG_VERSION"));
}

#[test]
fn an_unknown_subcommand_is_a_usage_error() {
    let out = Command::new(CLI).arg("frobnicate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("frobnicate"));
}

#[test]
fn a_wrong_command_line_exits_2_in_text_and_in_json_naming_what_is_missing() {
    for args in [
        &["setup"][..],
        &["setup", "nosuchhost"],
        &["pin"],
        &["flush", "--all", "--scope", "x"],
    ] {
        let text = Command::new(CLI).args(args).output().unwrap();
        assert_eq!(text.status.code(), Some(2), "{args:?}");
        let mut with_json = args.to_vec();
        with_json.push("--json");
        let json = Command::new(CLI).args(&with_json).output().unwrap();
        assert_eq!(json.status.code(), Some(2), "{with_json:?}");
        let answer: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
        assert_eq!(answer["ok"], false);
        let error = answer["error"].as_str().unwrap();
        let named = match args {
            ["setup"] => "<HOST>",
            ["pin"] => "<MEMORY>",
            ["setup", _] => "claude-code, codex",
            _ => "--scope",
        };
        assert!(error.contains(named), "{with_json:?}: {error}");
    }
}

/// Copies every host's hook executable into a new folder `bin`.
fn copy_hook_exes(bin: &std::path::Path) {
    std::fs::create_dir(bin).unwrap();
    for host in powercontext_hooks_core::host::Integration::ALL {
        let exe = std::path::Path::new(crate::support::hook_exe(host));
        std::fs::copy(exe, bin.join(exe.file_name().unwrap())).unwrap();
    }
}

#[test]
fn package_again_replaces_its_own_files_and_keeps_everything_else() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("dist");
    let package = |bin_dir: &std::path::Path| {
        Command::new(CLI)
            .args(["package", "--out"])
            .arg(&tree)
            .arg("--bin-dir")
            .arg(bin_dir)
            .output()
            .unwrap()
    };
    let release = std::path::Path::new(CLI).parent().unwrap();
    assert!(package(release).status.success());
    // The executables kept beside the tree, and a file of the user's own.
    let bin = tree.join("bin");
    copy_hook_exes(&bin);
    std::fs::write(tree.join("NOTES.md"), "mine\n").unwrap();
    // A file an older version rendered that this one no longer does (as its stamp records it).
    let stamp_path = tree.join(".powercontext-hooks-package.json");
    let mut stamp: serde_json::Value = serde_json::from_slice(&std::fs::read(&stamp_path).unwrap()).unwrap();
    let listed = stamp["files"].as_array().unwrap().len();
    assert!(listed > 5, "the stamp lists what was rendered: {stamp}");
    stamp["files"].as_array_mut().unwrap().extend([
        serde_json::json!("integrations/retired/old.py"),
        serde_json::json!("../outside.txt"),
    ]);
    std::fs::write(&stamp_path, stamp.to_string()).unwrap();
    std::fs::create_dir_all(tree.join("integrations/retired")).unwrap();
    std::fs::write(tree.join("integrations/retired/old.py"), "old\n").unwrap();
    std::fs::write(dir.path().join("outside.txt"), "not the tree's\n").unwrap();

    let again = package(&bin);
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert!(
        bin.join("powercontext-hook-claude-code").is_file(),
        "the executables the tree points at are gone"
    );
    assert_eq!(std::fs::read_to_string(tree.join("NOTES.md")).unwrap(), "mine\n");
    assert!(
        !tree.join("integrations/retired").exists(),
        "a file only the older rendering wrote, and its emptied folder, are gone"
    );
    assert!(dir.path().join("outside.txt").is_file(), "never outside the tree");
    let hooks =
        std::fs::read_to_string(tree.join("integrations/claude-code/plugins/powercontext/hooks/hooks.json"))
            .unwrap();
    assert!(
        hooks.contains(bin.join("powercontext-hook-claude-code").to_str().unwrap()),
        "{hooks}"
    );
}

#[test]
fn a_refusal_shows_control_characters_escaped() {
    let out = Command::new(CLI)
        .args(["pin", "art_\u{1b}]0;owned\u{7}\u{1b}[2J", "--scope", "scp_x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!stderr.trim_end().chars().any(char::is_control), "{stderr:?}");
    assert!(stderr.contains(r"\u{1b}]0;owned"), "{stderr:?}");
}

#[test]
fn package_renders_a_bin_dir_holding_braces_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("tools{{v2}}");
    copy_hook_exes(&bin);
    let tree = dir.path().join("dist");
    let out = Command::new(CLI)
        .args(["package", "--out"])
        .arg(&tree)
        .arg("--bin-dir")
        .arg(&bin)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let hooks =
        std::fs::read_to_string(tree.join("integrations/claude-code/plugins/powercontext/hooks/hooks.json"))
            .unwrap();
    assert!(
        hooks.contains("tools{{v2}}/powercontext-hook-claude-code"),
        "{hooks}"
    );
}

/// `package` renders no tree for a host the official installer could not install from it, and
/// says which and why: Copilot CLI is not in its catalog; ZCode is, but its official setup wants
/// a Node plugin of its own.
#[test]
fn package_skips_copilot_cli_and_zcode_and_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("dist");
    let release = std::path::Path::new(CLI).parent().unwrap();
    let out = Command::new(CLI)
        .args(["package", "--json", "--out"])
        .arg(&tree)
        .arg("--bin-dir")
        .arg(release)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let why = |host: &str| {
        v["skipped"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s["host"] == host)
            .map(|s| s["why"].as_str().unwrap().to_owned())
            .unwrap_or_else(|| panic!("{host} not listed as skipped: {v}"))
    };
    assert!(why("copilot-cli").contains("not in the official installer's catalog"));
    assert!(why("zcode").contains("Node plugin"));
    for host in ["copilot-cli", "zcode"] {
        assert!(
            !tree.join("integrations").join(host).exists(),
            "{host} was rendered"
        );
        assert!(
            !v["files"].to_string().contains(&format!("integrations/{host}/")),
            "{host}: {v}"
        );
    }
    assert!(tree.join("integrations/claude-code").is_dir());
}

/// A reader that leaves early (`powercontext-hooks status | head -1`) stops the output, not the
/// command: no panic, the command's own exit code. A full disk is a failure that says so.
#[test]
fn a_closed_stdout_is_not_a_panic_and_a_full_one_is_an_error() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path().to_str().unwrap();
    let env = [("HOME", h)];
    for args in [
        &["status"][..],
        &["status", "--json"],
        &["op", "--list"],
        &["version"],
        &[],
    ] {
        let normal = crate::support::run_cli(args, &env);
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let closed = crate::support::cli(args, &env).stdout(writer).output().unwrap();
        let stderr = String::from_utf8_lossy(&closed.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_eq!(closed.status.code(), normal.status.code(), "{args:?}: {stderr}");
        assert_eq!(stderr, String::from_utf8_lossy(&normal.stderr), "{args:?}");
    }
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        return;
    };
    for args in [&["status"][..], &["--help"], &["op", "--list"]] {
        let out = crate::support::cli(args, &env)
            .stdout(full.try_clone().unwrap())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        // Said once, however many lines were lost.
        assert_eq!(
            stderr.matches("could not write the output").count(),
            1,
            "{args:?}: {stderr}"
        );
    }
}
