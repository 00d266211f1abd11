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
}

#[test]
fn an_unknown_subcommand_is_a_usage_error() {
    let out = Command::new(CLI).arg("frobnicate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("frobnicate"));
}
