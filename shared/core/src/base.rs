//! The base layer: values, constants and pure derivations every other module may use (the
//! shared variable names, the settings' defaults, the effective uid, SHA-256 hex, the default
//! state directory). It imports only the leaf modules `env` and `host`, and never does I/O
//! beyond asking the OS who we are.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::env::Env;

/// Names of the variables that are not per host (declared in [`crate::variables`]).
pub mod vars {
    /// Path of the configuration file (overrides the default location).
    pub const CONFIG_FILE: &str = crate::variables::HOOKS_CONFIG;
    /// Directory for the ledger, spool and other state.
    pub const STATE_DIR: &str = crate::variables::HOOKS_STATE_DIR;
    /// Shared Server URL (1.4 client name).
    pub const CLIENT_SERVER_URL: &str = crate::variables::CLIENT_SERVER_URL;
    /// Shared bare API token (1.4 client name).
    pub const CLIENT_API_TOKEN: &str = crate::variables::CLIENT_API_TOKEN;
    /// Fault injection for self-tests (`panic`): proves the fail-open panic path of a release binary.
    pub const FAULT: &str = crate::variables::HOOKS_FAULT;
}

/// What a prompt that holds a secret becomes (`capture_secrets`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SecretPolicy {
    /// Not captured at all (the safe default).
    #[default]
    Skip,
    /// Captured with each secret replaced by `[REDACTED:<rule>]`.
    Redact,
}

impl SecretPolicy {
    /// The setting's value.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Skip => "skip",
            Self::Redact => "redact",
        }
    }

    /// Parses a setting value (`skip` or `redact`, ASCII case and surrounding blanks ignored).
    #[must_use]
    pub fn parse(text: &str) -> Option<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "skip" => Some(Self::Skip),
            "redact" => Some(Self::Redact),
            _ => None,
        }
    }
}

/// The default value of every setting, in one place.
#[derive(Debug, Clone, Copy)]
pub struct Defaults;

impl Defaults {
    /// Server base URL: the local Server's default address.
    pub const SERVER_URL: &'static str = "http://127.0.0.1:8000";
    /// Capture prompts as Sources.
    pub const CAPTURE_PROMPTS: bool = true;
    /// A prompt holding a secret is not captured (`redact` captures it with the secrets replaced).
    pub const CAPTURE_SECRETS: SecretPolicy = SecretPolicy::Skip;
    /// Flush Memory right after a capture (needs a Server with a model; off by default).
    pub const FLUSH_ON_CAPTURE: bool = false;
    /// Per-request timeout.
    pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(1);
    /// Whole-process budget, from process start.
    pub const BUDGET: Duration = Duration::from_secs(4);
    /// Flush calls after one capture.
    pub const FLUSH_MAX_CALLS: u32 = 4;
    /// Requested PreparedContext size in bytes.
    pub const MAX_BYTES: u32 = 8000;
    /// Bootstrap curated memory at session start and after compaction.
    pub const BOOTSTRAP: bool = true;
    /// Requested bootstrap package size in bytes (the Server allows 512–8192).
    pub const BOOTSTRAP_MAX_BYTES: u32 = 4096;
}

/// The default state directory (ledger, spool).
#[must_use]
pub fn default_state_dir(env: &Env) -> Option<PathBuf> {
    if let Some(p) = env.text(vars::STATE_DIR).filter(|p| !p.trim().is_empty()) {
        return Some(PathBuf::from(p));
    }
    user_dir(env, "XDG_STATE_HOME", ".local/state").map(|d| d.join("powercontext-hooks"))
}

/// `HOME` when it is an absolute path; a relative or empty one counts as unset (see
/// [`default_config_path`]).
#[must_use]
pub fn home_dir(env: &Env) -> Option<PathBuf> {
    env.text("HOME")
        .filter(|h| Path::new(h).is_absolute())
        .map(PathBuf::from)
}

/// An XDG base directory from the injected environment; elsewhere than Linux, `directories`.
pub(crate) fn user_dir(env: &Env, xdg: &str, home_rel: &str) -> Option<PathBuf> {
    if cfg!(target_os = "linux") {
        if let Some(d) = env.text(xdg).map(PathBuf::from).filter(|p| p.is_absolute()) {
            return Some(d);
        }
        // A relative HOME (`HOME=.`) would make the working tree, a cloned repository that can
        // ship `.config/powercontext-hooks/config.toml`, the user's configuration: it counts as
        // unset, as a relative XDG variable does.
        return home_dir(env).map(|h| h.join(home_rel));
    }
    let dirs = directories::BaseDirs::new()?;
    Some(
        if xdg == "XDG_CONFIG_HOME" {
            dirs.config_dir()
        } else {
            dirs.data_local_dir()
        }
        .to_path_buf(),
    )
}

/// A switch's words: `1/0`, `true/false`, `yes/no`, `on/off` (any case, blanks trimmed).
pub fn parse_bool(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// The effective user id: the only owner whose state is used.
#[must_use]
pub fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Lowercase hex SHA-256 of `bytes`.
#[must_use]
pub fn sha256_hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    // Short inputs (file names, most prompts) skip `ring`'s CPU probe; see `sha256`.
    let short;
    let long;
    let digest: &[u8] = if bytes.len() < crate::sha256::SHORT_INPUT {
        short = crate::sha256::digest(bytes);
        &short
    } else {
        long = ring::digest::digest(&ring::digest::SHA256, bytes);
        long.as_ref()
    };
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
    out
}
