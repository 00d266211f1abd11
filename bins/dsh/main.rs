//! `powercontext-hook-dsh`: the dsh hook executable, spawned by its thin host shim.
fn main() -> std::process::ExitCode {
    powercontext_hooks_dsh::main()
}
