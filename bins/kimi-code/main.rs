//! `powercontext-hook-kimi-code`: the Kimi Code hook (`UserPromptSubmit`, `PreCompact`, `Stop`, `SessionEnd`).
fn main() -> std::process::ExitCode {
    powercontext_hooks_kimi_code::main()
}
