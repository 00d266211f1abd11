//! `powercontext-hook-claude-code`: the Claude Code hook (`UserPromptSubmit`, `SessionStart`, `PreCompact`, `Stop`, `SessionEnd`).
fn main() -> std::process::ExitCode {
    powercontext_hooks_claude_code::main()
}
