//! Where things are: the flags that locate the hook executables and the host's CLI, the paths
//! the environment gives (state folder, config file, executables), the settings a hook would
//! resolve, and who may run a command that writes to HOME. It reads; it never writes a file.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use powercontext_hooks_core::config::{self, HostOptions, Layers, Settings};
use powercontext_hooks_core::env::Env;

use crate::support::install::{Host, HostExt};

/// Flags shared by setup, uninstall and doctor for finding things.
#[derive(Debug, Clone, Args)]
pub struct Locate {
    /// Directory holding the powercontext-hook-* executables (default: next to this program).
    #[arg(long, value_name = "DIR")]
    pub bin_dir: Option<PathBuf>,
    /// The host's CLI executable (default: `claude`, `codex`, `opencode`, `pi` or `dsh` on PATH).
    #[arg(long, value_name = "PATH")]
    pub host_cli: Option<PathBuf>,
}

/// What `setup --help` and `uninstall --help` say about who may run them.
pub const OWNER_ONLY_HELP: &str = "Runs only as the owner of HOME: with a relative HOME, or one that belongs to another \
user (root with a user's HOME, as `sudo` without -H leaves it), it refuses and exits 2; run it as that user \
(`sudo -u <user> -H powercontext-hooks ...`). One setup or uninstall runs at a time per user (each locks the state \
directory while it works).";

/// The variables that say where the connection files are; the only ones `--env` may set.
pub const LOCATION_VARS: [&str; 7] = [
    powercontext_hooks_core::variables::CLIENT_CONFIG_FILE,
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "OPENCODE_CONFIG_DIR",
    "PI_CODING_AGENT_DIR",
    "DSH_HOME",
    "XDG_CONFIG_HOME",
];

/// What the process environment and flags say about where things are.
pub struct Paths {
    /// The environment snapshot.
    pub env: Env,
    /// powercontext-hooks state dir (manifest and plugin folders live under it).
    pub state_root: PathBuf,
    /// Our config file.
    pub config_path: Option<PathBuf>,
    /// Where the hook executables are.
    pub bin_dir: PathBuf,
}

impl Paths {
    /// Resolves the paths from the environment and flags.
    pub fn resolve(locate: &Locate) -> Result<Self> {
        let env = Env::from_process();
        let state_root = config::default_state_dir(&env)
            .context("cannot find a state directory: set HOME or POWERCONTEXT_HOOKS_STATE_DIR")?;
        let state_root = absolute(&state_root)?;
        let config_path = config::default_config_path(&env)
            .map(|p| absolute(&p))
            .transpose()?;
        let bin_dir = match &locate.bin_dir {
            Some(d) => absolute(d)?,
            None => std::env::current_exe()
                .context("cannot locate this program")?
                .parent()
                .context("this program has no directory")?
                .to_path_buf(),
        };
        Ok(Self {
            env,
            state_root,
            config_path,
            bin_dir,
        })
    }

    /// The hook executable for a host (absolute).
    pub fn hook_exe(&self, host: Host) -> PathBuf {
        self.bin_dir.join(host.hook_exe())
    }

    /// A directory to run host CLIs from (their listings are not about a project).
    pub fn neutral_cwd(&self) -> PathBuf {
        self.env
            .text("HOME")
            .map(PathBuf::from)
            .filter(|h| h.is_dir())
            .unwrap_or_else(|| PathBuf::from("/"))
    }

    /// Loads our config file (errors name the file and key, never a value).
    pub fn load_config(&self) -> Result<Option<config::FileOptions>> {
        match &self.config_path {
            Some(p) => Ok(config::load_file(p)?),
            None => Ok(None),
        }
    }

    /// Resolves the settings as a hook would, with optional flags on top.
    pub fn settings(&self, host: Host, flags: Option<&HostOptions>) -> Result<Settings> {
        let file = self.load_config()?;
        let file_ref = match (&self.config_path, &file) {
            (Some(p), Some(f)) => Some((p.as_path(), f)),
            _ => None,
        };
        Ok(Settings::resolve(&Layers {
            host,
            env: &self.env,
            flags,
            file: file_ref,
        })?)
    }
}

fn absolute(p: &Path) -> Result<PathBuf> {
    if p.is_absolute() {
        Ok(p.to_path_buf())
    } else {
        Ok(std::env::current_dir()?.join(p))
    }
}

/// Checks that a hook executable is there and runnable.
pub fn check_hook_exe(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).map_err(|_| {
        anyhow!(
            "hook executable {} not found (pass --bin-dir DIR with the powercontext-hook-* executables)",
            path.display()
        )
    })?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        bail!("{} is not an executable file", path.display());
    }
    Ok(())
}

/// Refuses to write into a HOME that is not the running user's, or that is not an absolute path:
/// root with another user's HOME (`sudo` without `-H`) would leave root-owned files every hook of
/// that user then refuses, and a relative HOME would put the user's configuration inside the
/// current working tree. `Err` is the message, with its fix; the command exits 2 (it could not
/// start).
pub fn check_home(env: &Env) -> std::result::Result<(), String> {
    let Some(home) = env.text("HOME").filter(|h| !h.is_empty()) else {
        return Ok(());
    };
    let path = Path::new(home);
    if !path.is_absolute() {
        return Err(format!(
            "HOME ({}) is not an absolute path; set HOME to your home directory's full path and run the command again",
            crate::support::textstyle::terminal_safe(home)
        ));
    }
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    let me = powercontext_hooks_core::state::euid();
    if std::os::unix::fs::MetadataExt::uid(&meta) != me {
        return Err(format!(
            "HOME ({}) belongs to user id {}, but this command runs as user id {me}: it would leave files there that \
             user cannot use. Run it as the owner of that HOME (for example `sudo -u <user> -H powercontext-hooks …`), \
             or set HOME to your own home directory",
            crate::support::textstyle::terminal_safe(home),
            std::os::unix::fs::MetadataExt::uid(&meta)
        ));
    }
    Ok(())
}
