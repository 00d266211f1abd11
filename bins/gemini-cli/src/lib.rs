//! The Gemini CLI adapter: which payload fields Gemini CLI sends to its `BeforeAgent`,
//! `SessionStart`, `AfterAgent` and `SessionEnd` command hooks, and how it puts the session-start
//! context in front of the next prompt in headless mode. No logic of its own.

use powercontext_hooks_core::host::Integration;
use powercontext_hooks_core::prompt_hook::PromptHookProfile;
use powercontext_hooks_core::start_echo::StartEcho;

/// This host.
pub const HOST: Integration = Integration::GeminiCli;

/// Gemini CLI wraps every hook's `additionalContext` as `<hook_context>…</hook_context>`, with
/// `<` and `>` escaped inside and several hooks' contexts joined by a newline; in headless mode
/// it puts the session-start wrapper, and a blank line, in front of the prompt.
pub const START_ECHO: StartEcho = StartEcho {
    open: "<hook_context>",
    close: "</hook_context>\n\n",
    escapes: &[('<', "&lt;"), ('>', "&gt;")],
    joiner: '\n',
};

/// The Gemini CLI payload profile (`prompt`, `session_id`; no turn id).
pub const PROFILE: PromptHookProfile = PromptHookProfile {
    integration: HOST,
    prompt_fields: &["prompt"],
    session_fields: &["session_id"],
    turn_fields: &[],
    turn_metadata_key: "prompt_id",
    context_char_limit: None,
    start_echo: Some(START_ECHO),
};

/// Runs the hook process.
#[must_use]
pub fn main() -> std::process::ExitCode {
    powercontext_hooks_core::prompt_hook::main(&PROFILE)
}
