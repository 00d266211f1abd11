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
            ["pin"] => "<ARTIFACT_ID>",
            ["setup", _] => "claude-code, codex",
            _ => "--scope",
        };
        assert!(error.contains(named), "{with_json:?}: {error}");
    }
}
