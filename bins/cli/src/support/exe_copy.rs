//! The copy of a host's hook executable that setup wires in: kept in setup's own folder
//! (`<state>/installs/<host>/bin/`), so a `cargo clean`, a moved clone or a rebuild breaks no host.
//! It is replaced atomically (a 0755 temp file renamed over it) and only when its bytes differ;
//! a failed setup puts the previous copy back. It never writes outside that folder.

use std::fs;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::support::install::{self, Host, digest};

/// The largest executable copied (release builds are a few MB, debug builds under 100 MB).
const MAX_EXE_BYTES: u64 = 512 * 1024 * 1024;

/// Where setup keeps `host`'s hook executable.
pub fn installed_path(state_root: &Path, host: Host) -> PathBuf {
    install::install_dir(state_root, host)
        .join("bin")
        .join(crate::support::install::HostExt::hook_exe(host))
}

/// Reads an executable (bounded).
pub fn read(path: &Path) -> Result<Vec<u8>> {
    install::read_bounded(path, MAX_EXE_BYTES)?.with_context(|| format!("{} does not exist", path.display()))
}

/// The `sha256:` digest of the file at `path`, when there is one.
pub fn digest_of(path: &Path) -> Option<String> {
    install::read_bounded(path, MAX_EXE_BYTES)
        .ok()
        .flatten()
        .map(|b| digest(&b))
}

/// A planned copy: from where, to where, and whether the copy there is already these bytes.
#[derive(Debug)]
pub struct Planned {
    pub from: PathBuf,
    pub to: PathBuf,
    pub bytes: Vec<u8>,
    pub sha256: String,
    pub current: bool,
    /// A copy (of another build) is there already.
    pub existed: bool,
}

impl Planned {
    /// Plans copying `from` to `to`.
    pub fn new(from: &Path, to: PathBuf) -> Result<Self> {
        let bytes = read(from)?;
        let sha256 = digest(&bytes);
        let current = digest_of(&to).as_ref() == Some(&sha256);
        let existed = fs::symlink_metadata(&to).is_ok();
        Ok(Self {
            existed,
            from: from.to_path_buf(),
            to,
            bytes,
            sha256,
            current,
        })
    }

    /// Writes the copy (0755, atomically); what to do to take it back.
    pub fn apply(&self) -> Result<Undo> {
        if self.current {
            return Ok(Undo(None));
        }
        let dir = self.to.parent().context("the copy has no folder")?;
        install::create_dirs(dir)?;
        // The folders between the state directory and the copy are ours: a link planted there
        // would send the executable (and uninstall's removal) somewhere else.
        for folder in dir.ancestors().take(3) {
            if fs::symlink_metadata(folder).is_ok_and(|m| !m.is_dir()) {
                bail!(
                    "{} is not a folder of setup's own (a link or a file); remove it and run setup again",
                    folder.display()
                );
            }
        }
        let name = self.to.file_name().and_then(|n| n.to_str()).unwrap_or("hook");
        let backup = dir.join(format!(".{name}.pc-previous"));
        let had = fs::symlink_metadata(&self.to).is_ok();
        if had {
            let _ = fs::remove_file(&backup);
            fs::rename(&self.to, &backup)
                .with_context(|| format!("cannot set {} aside", self.to.display()))?;
        }
        let tmp = dir.join(format!(".{name}.pc-setup-{}.tmp", std::process::id()));
        let _ = fs::remove_file(&tmp);
        let written = (|| -> std::io::Result<()> {
            let mut f = fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o755)
                .open(&tmp)?;
            f.write_all(&self.bytes)?;
            f.sync_all()?;
            fs::rename(&tmp, &self.to)
        })();
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            if had {
                let _ = fs::rename(&backup, &self.to);
            }
            return Err(e).with_context(|| format!("cannot write {}", self.to.display()));
        }
        Ok(Undo(Some((self.to.clone(), had.then_some(backup)))))
    }
}

/// Takes a copy back (the previous one, or none), or keeps it for good.
#[must_use]
pub struct Undo(Option<(PathBuf, Option<PathBuf>)>);

impl Undo {
    /// Puts the previous copy back (or removes the new one).
    pub fn undo(self) {
        if let Some((to, backup)) = self.0 {
            match backup {
                Some(b) => {
                    let _ = fs::rename(b, &to);
                }
                None => {
                    let _ = fs::remove_file(&to);
                }
            }
        }
    }

    /// Keeps the new copy: the previous one goes.
    pub fn keep(self) {
        if let Some((_, Some(b))) = self.0 {
            let _ = fs::remove_file(b);
        }
    }
}

/// Whether `exe` lies inside a Cargo build tree (`<project>/target/...`, or `CARGO_TARGET_DIR`),
/// where `cargo clean` or a rebuild can take it away; the tree's folder when it does.
pub fn build_tree(exe: &Path) -> Option<PathBuf> {
    exe.ancestors().skip(1).find_map(|d| {
        // Cargo marks its target folder with CACHEDIR.TAG and `.rustc_info.json`.
        let marked = d.join("CACHEDIR.TAG").is_file() && d.join(".rustc_info.json").is_file();
        let in_project = d.file_name().is_some_and(|n| n == "target")
            && d.parent().is_some_and(|p| p.join("Cargo.toml").is_file());
        (marked || in_project).then(|| d.to_path_buf())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// A fresh folder of this test's own (removed when it ends).
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Self {
            let p = std::env::temp_dir().join(format!("pc-exe-copy-{name}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&p);
            fs::create_dir_all(&p).unwrap();
            Self(p)
        }
        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn a_copy_is_0755_replaced_atomically_and_undone_to_the_previous_one() {
        let dir = Scratch::new("copy");
        let src = dir.path().join("src-exe");
        let to = dir.path().join("state/bin/exe");
        fs::write(&src, b"one").unwrap();
        let first = Planned::new(&src, to.clone()).unwrap();
        assert!(!first.current);
        first.apply().unwrap().keep();
        assert_eq!(fs::read(&to).unwrap(), b"one");
        assert_eq!(fs::metadata(&to).unwrap().permissions().mode() & 0o777, 0o755);
        assert!(Planned::new(&src, to.clone()).unwrap().current);

        fs::write(&src, b"two").unwrap();
        let second = Planned::new(&src, to.clone()).unwrap();
        assert!(!second.current);
        second.apply().unwrap().undo();
        assert_eq!(
            fs::read(&to).unwrap(),
            b"one",
            "a failed setup keeps the copy it had"
        );
        Planned::new(&src, to.clone()).unwrap().apply().unwrap().keep();
        assert_eq!(fs::read(&to).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(to.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["exe"], "no temp or previous copy left behind");
    }

    #[test]
    fn a_build_tree_is_recognised() {
        let dir = Scratch::new("tree");
        let project = dir.path().join("clone");
        fs::create_dir_all(project.join("target/release")).unwrap();
        fs::write(project.join("Cargo.toml"), "[package]\n").unwrap();
        let exe = project.join("target/release/powercontext-hook-pi");
        assert_eq!(build_tree(&exe), Some(project.join("target")));
        let other = dir.path().join("cache/build");
        fs::create_dir_all(other.join("debug")).unwrap();
        fs::write(other.join("CACHEDIR.TAG"), "").unwrap();
        fs::write(other.join(".rustc_info.json"), "{}").unwrap();
        assert_eq!(build_tree(&other.join("debug/x")), Some(other.clone()));
        assert_eq!(build_tree(&dir.path().join("home/.local/bin/x")), None);
    }
}
