//! Real Claude Code (pinned in tests/e2e/package.json) with our hook plugin, the real Server and a
//! fake model, inside a loopback-only namespace. The scenarios live in `e2e_scenarios`; this module
//! only names them for Claude Code and must never skip one.

use powercontext_hooks_core::host::Integration;

use crate::e2e_scenarios::{self as scenario, host_scenarios};

host_scenarios!(Integration::ClaudeCode);

#[test]
fn context_never_exceeds_claude_limit() {
    scenario::claude_context_stays_under_limit();
}

#[test]
fn status_line_shows_what_the_hook_did_in_real_turns() {
    scenario::claude_status_line_after_real_turns();
}
