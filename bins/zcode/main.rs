//! `powercontext-hook-zcode`: the ZCode process hook (`UserPromptSubmit`, `SessionStart`, `Stop`).
fn main() -> std::process::ExitCode {
    powercontext_hooks_zcode::main()
}
