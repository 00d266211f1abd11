//! Real Codex (pinned in tests/e2e/package.json) with our hook plugin, the real Server and a
//! fake model, inside a loopback-only namespace. The scenarios live in `e2e_scenarios`; this module
//! only names them for Codex and must never skip one.

use powercontext_hooks_test_support::hosts::Host;

use crate::e2e_scenarios as scenario;

const HOST: Host = Host::Codex;

#[test]
fn recall_reaches_model_and_prompt_is_captured() {
    scenario::recall_and_capture(HOST);
}

#[test]
fn live_payload_matches_fixture() {
    scenario::live_payload_matches_fixture(HOST);
}

#[test]
fn hook_accepts_fixture_payload() {
    scenario::hook_accepts_fixture(HOST);
}

#[test]
fn server_down_is_harmless_and_fast() {
    scenario::server_down_is_harmless_and_fast(HOST);
}

#[test]
fn two_prompts_each_get_their_own_context() {
    scenario::two_prompts_one_conversation(HOST);
}

#[test]
fn secret_prompt_is_recalled_but_not_stored() {
    scenario::secret_prompt_recalled_not_stored(HOST);
}

#[test]
fn missing_hook_executable_does_not_break_the_turn() {
    scenario::missing_hook_executable(HOST);
}

#[test]
fn server_error_does_not_break_the_turn() {
    scenario::server_error_500(HOST);
}

#[test]
fn wrong_token_does_not_break_the_turn() {
    scenario::wrong_token(HOST);
}
