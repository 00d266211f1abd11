//! Link options for the executables: their relative relocations are packed (`-z
//! pack-relative-relocs`, the ELF `DT_RELR` table) when the toolchain and the C library here can
//! link and load such an executable. It must never fail a build or ship an executable that cannot
//! start: any doubt leaves the executables linked as before.
//!
//! Why: every `&str` in a static table (panic locations, root certificates, the libraries' tables)
//! needs a relocation, about 4,000 per hook at 24 bytes each. Packed, they take a few hundred bytes,
//! each executable is about 95 KB smaller, and the loader has less to apply at every start.

// A build script has no `Env` handle: Cargo passes its inputs as environment variables.
#![allow(clippy::disallowed_methods)]

use std::path::Path;
use std::process::Command;

/// A program whose static table of string slices needs relative relocations: it exits 0 only when
/// the loader applied them (an unpacked table would hold unrelocated addresses).
const PROBE: &str = r#"
static TABLE: [&str; 3] = ["alpha", "beta", "gamma"];
fn main() {
    let joined: String = std::hint::black_box(&TABLE).concat();
    std::process::exit(if joined == "alphabetagamma" { 0 } else { 1 });
}
"#;

const FLAG: &str = "-Wl,-z,pack-relative-relocs";

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=RUSTC_LINKER");
    let var = |k: &str| std::env::var(k).unwrap_or_default();
    // Only where the probe can run (a native build) and the C library is glibc, which states its
    // support with a symbol version the linker then requires.
    if var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
        || var("HOST") != var("TARGET")
    {
        return;
    }
    let out = std::env::var_os("OUT_DIR").map(std::path::PathBuf::from);
    let Some(out) = out else { return };
    if probe(&out, &var("RUSTC"), &var("TARGET")) {
        println!("cargo:rustc-link-arg-bins={FLAG}");
    }
}

/// Whether an executable linked by this compiler with [`FLAG`] links and runs correctly here.
fn probe(out: &Path, rustc: &str, target: &str) -> bool {
    let source = out.join("relr_probe.rs");
    let exe = out.join("relr_probe");
    if std::fs::write(&source, PROBE).is_err() || rustc.is_empty() {
        return false;
    }
    // Linked the way the executables are: the configured linker and flags, if any.
    let mut cmd = Command::new(rustc);
    if let Ok(linker) = std::env::var("RUSTC_LINKER") {
        cmd.arg("-C").arg(format!("linker={linker}"));
    }
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    cmd.args(flags.split('\x1f').filter(|f| !f.is_empty()));
    let linked = cmd
        .args([
            "--edition=2024",
            "--crate-type=bin",
            "-C",
            "opt-level=1",
            "--target",
            target,
        ])
        .arg("-C")
        .arg(format!("link-arg={FLAG}"))
        .arg("-o")
        .arg(&exe)
        .arg(&source)
        .output()
        .is_ok_and(|o| o.status.success());
    linked && Command::new(&exe).output().is_ok_and(|o| o.status.success())
}
