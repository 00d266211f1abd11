//! What setup decides before it writes anything: the request (`setup <host>` and its flags), the
//! plan for one host (files, config keys, host entries and hooks, host CLI calls) and its parts.
//! Host installers fill a plan in; the `setup` command shows and applies it. Nothing here
//! writes a file or runs a program.

use std::path::PathBuf;

use clap::Args;
use powercontext_hooks_core::endpoint::Authorization;

use crate::installer::shared_files::SharedPlan;
use crate::support::exe_copy::Planned;
use crate::support::host_cli::HostCli;
use crate::support::install::{Host, Manifest, OwnedConfig, OwnedEntry, OwnedHooks};
use crate::support::paths::{Locate, OWNER_ONLY_HELP};
use crate::support::report::SettingRow;

/// `setup <host>`.
#[derive(Debug, Args)]
#[command(after_help = OWNER_ONLY_HELP)]
pub struct SetupArgs {
    /// The host to install into.
    #[arg(value_parser = crate::support::install::host_arg())]
    pub host: crate::support::install::Host,
    /// DSH only: the profile to install into (default: web).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// PowerContext Server base URL (http only for loopback).
    #[arg(long, value_name = "URL")]
    pub server_url: Option<String>,
    /// Read the Server token from this environment variable (a bare token or `Bearer …`).
    #[arg(long, value_name = "NAME", conflicts_with = "token_file")]
    pub token_env: Option<String>,
    /// Read the Server token from this file (a bare token or `Bearer …`).
    #[arg(long, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// Capture prompts as Sources.
    #[arg(long, value_name = "on|off", value_parser = parse_on_off)]
    pub capture_prompts: Option<bool>,
    #[command(flatten)]
    pub locate: Locate,
    /// Claude Code only: also install `powercontext-hooks statusline` as Claude Code's status line
    /// (never replaces a status line you already have; `uninstall` removes only ours).
    #[arg(long)]
    pub statusline: bool,
    /// Replace an install the official `powercontext setup` made (Claude Code and Codex: its
    /// `powercontext` marketplace and plugin; OpenCode: its plugin file; Pi and DSH: its
    /// `powercontext-pi` / `powercontext-dsh` package); the plan shows it and a failure restores it.
    #[arg(long)]
    pub take_over: bool,
    /// Codex only: record trust for the powercontext hooks Codex already lists (as installed by
    /// the official `powercontext setup codex`), and point that plugin's MCP headers helper at
    /// `powercontext-hooks mcp-headers` instead of the official `uv run … mcp_headers.py`;
    /// change nothing else.
    #[arg(long)]
    pub trust_only: bool,
    /// Print the plan and stop.
    #[arg(long)]
    pub dry_run: bool,
    /// One JSON object on stdout instead of text.
    #[arg(long)]
    pub json: bool,
}

fn parse_on_off(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "on" | "true" | "yes" | "1" => Ok(true),
        "off" | "false" | "no" | "0" => Ok(false),
        _ => Err("expected on or off".to_owned()),
    }
}

words! {
    /// What setup does to one planned file.
    pub(crate) enum Action {
        Create => "create",
        Keep => "keep",
        Update => "update",
        Private => "private",
    }
}

/// A planned change to one file.
#[derive(Debug)]
pub(crate) struct FileChange {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    pub action: Action,
    pub private: bool,
}

/// A planned host CLI call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Remove the `powercontext` marketplace and plugin another installer registered.
    Replace,
    Marketplace,
    Install,
    Enable,
    Trust,
}

/// Everything setup will do for one host, decided before anything is written.
pub(crate) struct Plan {
    pub host: Host,
    /// The hook executable's copy in setup's own folder (what the host runs).
    pub exe: Planned,
    pub cli: HostCli,
    pub host_version: String,
    pub tested: bool,
    pub plugin_dir: PathBuf,
    pub hook_exe: PathBuf,
    /// The resolved server URL.
    pub url: String,
    /// The token from the flags, and the one the hook will send (flags, else settings).
    pub token: Option<Authorization>,
    pub authorization: Option<Authorization>,
    pub files: Vec<FileChange>,
    pub config: Option<(FileChange, OwnedConfig)>,
    /// The config file's bytes the edit in `config` was made from (`None`: no file): compared
    /// again just before writing, so a change made meanwhile is never overwritten.
    pub config_base: Option<Vec<u8>>,
    /// The user's own `authorization` line, kept owner-only for uninstall.
    pub prior_authorization: Option<FileChange>,
    /// A member added to the host's own config (OpenCode's MCP entry).
    pub host_entry: Option<(FileChange, OwnedEntry)>,
    /// Owned host entry to keep recording when unchanged.
    pub kept_entry: Option<OwnedEntry>,
    /// Our hook entries in the host's own settings file (settings-hooks hosts), to write.
    pub settings_hooks: Option<(FileChange, OwnedHooks)>,
    /// The same, already in place: recorded again as they are.
    pub kept_hooks: Option<OwnedHooks>,
    /// OpenCode: the owner-only header file its MCP entry reads (holds the token).
    pub mcp_header_file: Option<FileChange>,
    /// OpenCode: a header file no longer referenced (no token any more).
    pub drop_mcp_header_file: Option<PathBuf>,
    /// Pi: the official installer's `powercontext-pi` packages `--take-over` removes.
    pub pi_replace: Vec<PathBuf>,
    /// DSH profile.
    pub profile: Option<String>,
    pub steps: Vec<Step>,
    /// The files the official CLI reads.
    pub shared: SharedPlan,
    pub settings_lines: Vec<SettingRow>,
    pub warnings: Vec<String>,
    pub previous: Option<Manifest>,
    /// Files and folders of the host's own that its CLI created while setup asked it questions.
    pub host_cli_wrote: Vec<PathBuf>,
    /// The host's config home, as the installer finds it in the setup's environment.
    pub host_home: Option<PathBuf>,
}

impl Plan {
    /// Records the planned hook entries: a file change to write, or, when the file already holds
    /// them, what is in place (recorded again as it is).
    pub fn set_settings_hooks(&mut self, change: Option<FileChange>, owned: OwnedHooks) {
        match change {
            Some(f) => self.settings_hooks = Some((f, owned)),
            None => self.kept_hooks = Some(owned),
        }
    }

    /// The hook entries this plan owns, to be written or already in place.
    #[must_use]
    pub fn owned_hooks(&self) -> Option<&OwnedHooks> {
        self.settings_hooks
            .as_ref()
            .map(|(_, o)| o)
            .or(self.kept_hooks.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn on_off_flags_take_the_switch_words_and_refuse_others() {
        for (word, want) in [
            ("on", true),
            ("YES", true),
            ("1", true),
            ("off", false),
            ("False", false),
            ("0", false),
        ] {
            assert_eq!(parse_on_off(word), Ok(want), "{word}");
        }
        assert!(parse_on_off("maybe").unwrap_err().contains("on or off"));
    }
}
