//! The throwaway layout every real-host harness builds on: a temp root holding HOME, the project
//! the host runs in and the hooks' owner-only state dir, plus the clean environment that points
//! there. It refuses to exist outside a loopback-only network namespace and never touches the
//! real HOME; each harness adds its host's own files and variables on top.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use powercontext_hooks_core::host::Integration;
use tempfile::TempDir;

use crate::hosts::assert_loopback_only_network;
use crate::process::{ProcessRun, clean_command, run_beside, run_with_timeout};

/// Where the hooks are told to keep their state.
pub const STATE_DIR_VAR: &str = "POWERCONTEXT_HOOKS_STATE_DIR";

/// One host's throwaway HOME, project and state dir, and the environment its CLI runs with.
pub struct Sandbox {
    _root: TempDir,
    base: PathBuf,
    pub home: PathBuf,
    pub project: PathBuf,
    pub state: PathBuf,
    pub env: BTreeMap<String, String>,
}

impl Sandbox {
    /// Creates `<root>/{home,project,state}` (state owner-only, as the hooks create it) and an
    /// environment of PATH (`path_dirs`, then the system directories), HOME, TERM, LANG and the
    /// hooks' state dir. Paths are canonical: some hosts report the symlink-free cwd.
    pub fn new(host: Integration, path_dirs: impl IntoIterator<Item = PathBuf>) -> Sandbox {
        assert_loopback_only_network();
        let root = tempfile::Builder::new()
            .prefix(&format!("pc-e2e-{host}-"))
            .tempdir()
            .expect("create session tempdir");
        let base = fs::canonicalize(root.path()).expect("canonical tempdir");
        let (home, project, state) = (base.join("home"), base.join("project"), base.join("state"));
        for dir in [&home, &project, &state] {
            fs::create_dir_all(dir).expect("create session dirs");
        }
        fs::set_permissions(&state, fs::Permissions::from_mode(0o700)).expect("chmod state dir");
        let path = path_dirs
            .into_iter()
            .chain(["/usr/local/bin", "/usr/bin", "/bin"].map(PathBuf::from));
        let path = std::env::join_paths(path).expect("PATH entries");
        let env = [
            ("PATH", path.to_string_lossy().into_owned()),
            ("HOME", home.display().to_string()),
            ("TERM", "dumb".to_owned()),
            ("LANG", "C.UTF-8".to_owned()),
            (STATE_DIR_VAR, state.display().to_string()),
        ]
        .map(|(k, v)| (k.to_owned(), v))
        .into();
        Sandbox {
            _root: root,
            base,
            home,
            project,
            state,
            env,
        }
    }

    /// A path inside the sandbox root (beside HOME and the project).
    pub fn path(&self, name: &str) -> PathBuf {
        self.base.join(name)
    }

    /// Sets one variable of the environment.
    pub fn set(&mut self, name: &str, value: impl Into<String>) {
        self.env.insert(name.to_owned(), value.into());
    }

    /// Runs `cli` with `args` in the project dir, clean env, stdin from /dev/null, and an outer
    /// timeout (the whole process group is killed past it).
    pub fn run(&self, cli: &Path, args: &[&str], timeout: Duration, what: &str) -> ProcessRun {
        run_with_timeout(clean_command(cli, args, &self.env, &self.project), timeout, what)
    }

    /// Runs another program (an installer, a CLI) in this environment and project dir, with the
    /// host CLI's directory first on PATH (see [`run_beside`]).
    pub fn run_other(&self, cli: &Path, program: &Path, args: &[&str], extra: &[(&str, &str)]) -> ProcessRun {
        run_beside(cli, &self.env, &self.project, program, args, extra)
    }
}

/// Finds `node` on this process's PATH (the host launchers are Node scripts).
pub fn node_dir() -> Option<PathBuf> {
    // Test support only: the runner has to look where the developer's node lives.
    #[allow(clippy::disallowed_methods)]
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find(|dir| dir.join("node").is_file())
}
