//! `powercontext-hook-claude-code`: the Claude Code `UserPromptSubmit` hook.
fn main() -> std::process::ExitCode {
    powercontext_hooks_claude_code::main()
}
