//! `powercontext-hook-qwen-code`: the Qwen Code hook (`UserPromptSubmit`, `SessionStart`, `PreCompact`, `Stop`, `SessionEnd`).
fn main() -> std::process::ExitCode {
    powercontext_hooks_qwen_code::main()
}
