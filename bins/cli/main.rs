//! `powercontext-hooks`: install, inspect and drain the PowerContext hooks.
fn main() -> std::process::ExitCode {
    powercontext_hooks_cli::main()
}
