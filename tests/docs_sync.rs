//! Keeps the outcome table (docs/troubleshooting.md) in step with the code: every outcome word and
//! every `skipped` detail a hook can emit must be documented there. The words are read from the
//! sources themselves, so a new one fails this test until the table names it.

const OUTCOMES_PAGE: &str = include_str!("../docs/troubleshooting.md");

/// `=> "word"` arms of the `as_str` matches in a source file.
fn arm_words(source: &str) -> Vec<&str> {
    source
        .lines()
        .filter_map(|l| l.split_once("=> \"").map(|(_, rest)| rest))
        .filter_map(|rest| rest.split_once('"').map(|(w, _)| w))
        .filter(|w| !w.is_empty() && w.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'))
        .collect()
}

/// `.detail("word")` literals in a source file.
fn detail_words(source: &str) -> Vec<&str> {
    source
        .split(".detail(\"")
        .skip(1)
        .filter_map(|rest| rest.split_once('"').map(|(w, _)| w))
        .collect()
}

/// The outcome table's rows (lines starting with `` | ` ``).
fn outcome_table() -> String {
    OUTCOMES_PAGE
        .lines()
        .filter(|l| l.starts_with("| `"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_outcome_table_documents_every_outcome_and_skip_detail() {
    let table = outcome_table();
    let outcome_rs = include_str!("../shared/core/src/outcome.rs");
    let names = outcome_rs
        .split_once("pub fn as_str(self)")
        .and_then(|(_, rest)| rest.split_once("pub fn is_retryable"))
        .map(|(names, _)| names)
        .expect("Outcome::as_str");
    let outcomes = arm_words(names);
    assert!(
        outcomes.contains(&"capture_spooled") && outcomes.len() > 15,
        "{outcomes:?}"
    );
    let prompt_hook = include_str!("../shared/core/src/prompt_hook.rs");
    let skip_reasons = prompt_hook
        .split_once("impl SkipReason")
        .and_then(|(_, rest)| rest.split_once("\n}\n"))
        .map(|(block, _)| block)
        .expect("SkipReason::as_str");
    let mut skips = Vec::new();
    for source in [
        skip_reasons,
        include_str!("../bins/pi/src/event.rs"),
        include_str!("../bins/opencode/src/event.rs"),
    ] {
        skips.extend(arm_words(source));
    }
    for source in [
        include_str!("../shared/core/src/process.rs"),
        include_str!("../bins/dsh/src/pre_step.rs"),
        include_str!("../bins/dsh/src/lib.rs"),
        include_str!("../bins/opencode/src/lib.rs"),
        include_str!("../bins/opencode/src/prepare.rs"),
        include_str!("../bins/pi/src/lib.rs"),
    ] {
        skips.extend(detail_words(source));
    }
    assert!(
        skips.contains(&"stdin_unreadable") && skips.contains(&"blank_prompt"),
        "{skips:?}"
    );
    let missing: Vec<&str> = outcomes
        .iter()
        .chain(&skips)
        .copied()
        // A `Stop`/`SessionEnd` boundary is a reason to answer nothing, never a diagnostic line.
        .filter(|w| *w != "boundary")
        .filter(|w| !table.contains(&format!("`{w}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/troubleshooting.md's outcome table does not name: {missing:?}"
    );
}
