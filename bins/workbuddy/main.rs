//! `powercontext-hook-workbuddy`: the WorkBuddy hook (`UserPromptSubmit`).
fn main() -> std::process::ExitCode {
    powercontext_hooks_workbuddy::main()
}
