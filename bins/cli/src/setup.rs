//! `powercontext-hooks setup <host>`: validate every input, print the plan (files, config keys,
//! host CLI calls), then apply it as one transaction — any failure restores every touched file
//! byte for byte, including the host registrations this run made. It never prints a token, never
//! overwrites a file it does not own, and never copies or embeds the Server.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use powercontext_hooks_core::config::{self, HostOptions, Layers, Origin, Settings};
use powercontext_hooks_core::endpoint::{Authorization, BaseUrl};
use powercontext_hooks_core::env::{Env, EnvValue};
use serde_json::{Value, json};

use crate::host_cli::HostCli;
use crate::install::{
    self, Host, HostExt, Journal, Manifest, OwnedConfig, OwnedEntry, OwnedFile, Registrations, digest,
    toml_string,
};
use crate::jsonc;

/// Test-only fault injection: fail right after the named step (files, config, mcp, marketplace,
/// plugin, trust, verify) to prove the rollback.
pub const FAULT_VAR: &str = "POWERCONTEXT_HOOKS_SETUP_FAULT";

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

/// `setup <host>`.
#[derive(Debug, Args)]
pub struct SetupArgs {
    /// claude-code, codex, opencode, pi or dsh.
    #[arg(value_parser = crate::install::host_arg())]
    pub host: crate::install::Host,
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

    /// The host's config home (Claude: `$CLAUDE_CONFIG_DIR` or `~/.claude`; Codex: `$CODEX_HOME`
    /// or `~/.codex`; Pi: `$PI_CODING_AGENT_DIR` or `~/.pi/agent`; DSH: `$DSH_HOME` or `~/.dsh`;
    /// OpenCode: `$XDG_CONFIG_HOME/opencode` or `~/.config/opencode` — setup asks `opencode`).
    pub fn host_home(&self, host: Host) -> Option<PathBuf> {
        let (var, rel) = match host {
            Host::ClaudeCode => ("CLAUDE_CONFIG_DIR", ".claude"),
            Host::Codex => ("CODEX_HOME", ".codex"),
            Host::Pi => ("PI_CODING_AGENT_DIR", ".pi/agent"),
            Host::Dsh => ("DSH_HOME", ".dsh"),
            Host::OpenCode => {
                if let Some(x) = self.env.text("XDG_CONFIG_HOME").filter(|v| v.starts_with('/')) {
                    return Some(Path::new(x).join("opencode"));
                }
                ("", ".config/opencode")
            }
        };
        if let Some(v) = self.env.text(var).filter(|v| !v.is_empty() && !var.is_empty()) {
            return Some(PathBuf::from(v));
        }
        self.env
            .text("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| Path::new(h).join(rel))
    }

    /// A DSH profile's directory.
    pub fn dsh_profile_dir(&self, profile: &str) -> Option<PathBuf> {
        self.host_home(Host::Dsh)
            .map(|h| h.join("profiles").join(profile))
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

/// Reads and validates the token named by the flags. Errors never contain the value.
fn read_token(args: &SetupArgs, env: &Env) -> Result<Option<(Authorization, String)>> {
    let (raw, source) = if let Some(name) = &args.token_env {
        match env.get(name) {
            EnvValue::Set(v) if !v.trim().is_empty() => (v.to_owned(), format!("env `{name}`")),
            EnvValue::NotUnicode => bail!("--token-env: `{name}` is not valid UTF-8"),
            _ => bail!("--token-env: the environment variable `{name}` is not set or empty"),
        }
    } else if let Some(path) = &args.token_file {
        let bytes =
            std::fs::read(path).map_err(|_| anyhow!("--token-file: cannot read {}", path.display()))?;
        let text =
            String::from_utf8(bytes).map_err(|_| anyhow!("--token-file: {} is not UTF-8", path.display()))?;
        (text, format!("file `{}`", path.display()))
    } else {
        return Ok(None);
    };
    let raw = raw.trim();
    let parsed = if raw.len() > 7 && raw[..7].eq_ignore_ascii_case("bearer ") {
        Authorization::parse_header(raw)
    } else {
        Authorization::parse_token(raw)
    };
    let auth = parsed.map_err(|p| anyhow!("the token from {source} is invalid: it {p}"))?;
    Ok(Some((auth, source)))
}

/// A planned change to one file.
#[derive(Debug)]
struct FileChange {
    path: PathBuf,
    bytes: Vec<u8>,
    action: &'static str,
    private: bool,
}

/// A planned host CLI call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Remove the `powercontext` marketplace and plugin another installer registered.
    Replace,
    Marketplace,
    Install,
    Enable,
    Trust,
}

impl Step {
    fn name(self) -> &'static str {
        match self {
            Self::Replace => "replace",
            Self::Marketplace => "marketplace",
            Self::Install | Self::Enable => "plugin",
            Self::Trust => "trust",
        }
    }
}

struct Plan {
    host: Host,
    cli: HostCli,
    host_version: String,
    tested: bool,
    plugin_dir: PathBuf,
    hook_exe: PathBuf,
    files: Vec<FileChange>,
    config: Option<(FileChange, OwnedConfig)>,
    /// The user's own `authorization` line, kept owner-only for uninstall.
    prior_authorization: Option<FileChange>,
    /// A member added to the host's own config (OpenCode's MCP entry).
    host_entry: Option<(FileChange, OwnedEntry)>,
    /// Owned host entry to keep recording when unchanged.
    kept_entry: Option<OwnedEntry>,
    /// OpenCode: the owner-only header file its MCP entry reads (holds the token).
    mcp_header_file: Option<FileChange>,
    /// OpenCode: a header file no longer referenced (no token any more).
    drop_mcp_header_file: Option<PathBuf>,
    /// Pi: the official installer's `powercontext-pi` packages `--take-over` removes.
    pi_replace: Vec<PathBuf>,
    /// DSH profile.
    profile: Option<String>,
    steps: Vec<Step>,
    /// The files the official CLI reads.
    shared: crate::shared_files::SharedPlan,
    settings_lines: Vec<(String, String, String)>,
    warnings: Vec<String>,
    previous: Option<Manifest>,
}

impl Plan {
    fn changes(&self) -> bool {
        self.files.iter().any(|f| f.action != "keep")
            || self.config.is_some()
            || self.host_entry.is_some()
            || self.mcp_header_file.is_some()
            || self.drop_mcp_header_file.is_some()
            || !self.steps.is_empty()
            || self.shared.changes()
    }

    fn step_command(&self, step: Step) -> String {
        let dir = self.plugin_dir.display().to_string();
        match (self.host, step) {
            (Host::ClaudeCode, Step::Replace) => format!(
                "{}; {}",
                self.cli
                    .display(&["plugin", "uninstall", install::PLUGIN_ID, "--scope", "user"]),
                self.cli
                    .display(&["plugin", "marketplace", "remove", install::MARKETPLACE])
            ),
            (Host::Dsh, Step::Replace) => {
                let profile = self.profile.as_deref().unwrap_or(install::DSH_DEFAULT_PROFILE);
                self.cli
                    .display(&["plugin", "--profile", profile, "remove", install::DSH_PACKAGE])
            }
            (Host::Pi, Step::Replace) => self
                .pi_replace
                .iter()
                .map(|p| self.cli.display(&["remove", &p.display().to_string()]))
                .collect::<Vec<_>>()
                .join("; "),
            (_, Step::Replace) => format!(
                "{}; {}",
                self.cli
                    .display(&["plugin", "remove", install::PLUGIN_ID, "--json"]),
                self.cli
                    .display(&["plugin", "marketplace", "remove", install::MARKETPLACE, "--json"])
            ),
            (Host::ClaudeCode, Step::Marketplace) => {
                self.cli
                    .display(&["plugin", "marketplace", "add", &dir, "--scope", "user"])
            }
            (Host::ClaudeCode, Step::Install) => {
                self.cli
                    .display(&["plugin", "install", install::PLUGIN_ID, "--scope", "user"])
            }
            (Host::ClaudeCode, Step::Enable) => {
                self.cli
                    .display(&["plugin", "enable", install::PLUGIN_ID, "--scope", "user"])
            }
            (Host::Codex, Step::Marketplace) => {
                self.cli
                    .display(&["plugin", "marketplace", "add", &dir, "--json"])
            }
            (Host::Codex, Step::Install | Step::Enable) => {
                self.cli.display(&["plugin", "add", install::PLUGIN_ID, "--json"])
            }
            (Host::Pi, _) => self.cli.display(&["install", &dir]),
            (Host::Dsh, _) => {
                let profile = self.profile.as_deref().unwrap_or(install::DSH_DEFAULT_PROFILE);
                self.cli.display(&["plugin", "--profile", profile, "add", &dir])
            }
            (Host::OpenCode, _) => String::new(),
            (_, Step::Trust) => format!(
                "{} app-server: hooks/list, then config/batchWrite hooks.state (trust our hook's current hash)",
                self.cli.path.display()
            ),
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "host": self.host.as_str(),
            "host_cli": self.cli.path,
            "host_version": self.host_version,
            "host_version_tested": self.tested,
            "hook_executable": self.hook_exe,
            "plugin_dir": self.plugin_dir,
            "settings": self.settings_lines.iter().map(|(k, v, o)| json!({"name": k, "value": v, "origin": o})).collect::<Vec<_>>(),
            "files": self.files.iter().map(|f| json!({"path": f.path, "action": f.action})).collect::<Vec<_>>(),
            "config": self.config.as_ref().map(|(f, o)| json!({"path": f.path, "action": f.action, "keys": o.keys.keys().collect::<Vec<_>>()})),
            "host_config": self.host_entry.as_ref().map(|(f, o)| json!({"path": f.path, "action": f.action, "key": o.member()})),
            "mcp_header_file": self.mcp_header_file.as_ref().map(|f| json!({"path": f.path, "action": "write"}))
                .or_else(|| self.drop_mcp_header_file.as_ref().map(|p| json!({"path": p, "action": "remove"}))),
            "profile": self.profile,
            "commands": self.steps.iter().map(|s| self.step_command(*s)).collect::<Vec<_>>(),
            "official_files": self.shared.lines().iter().map(|(a, p, w)| json!({"path": p, "action": a, "what": w})).collect::<Vec<_>>(),
            "warnings": self.warnings,
        })
    }

    fn print(&self) {
        println!("powercontext-hooks setup {}", self.host.as_str());
        println!("  hook executable  {}", self.hook_exe.display());
        println!(
            "  host CLI         {} {}{}",
            self.cli.path.display(),
            self.host_version,
            if self.tested { " (tested)" } else { " (NOT tested)" }
        );
        println!("  plugin folder    {}", self.plugin_dir.display());
        if let Some(p) = &self.profile {
            println!("  DSH profile      {p}");
        }
        println!("  settings the hook will use:");
        for (k, v, o) in &self.settings_lines {
            println!("    {k:<17} {v}  ({o})");
        }
        println!("plan:");
        for f in &self.files {
            println!("  {:<7} {}", f.action, f.path.display());
        }
        if let Some((f, o)) = &self.config {
            let keys: Vec<&str> = o.keys.keys().map(String::as_str).collect();
            println!(
                "  {:<7} {} [hosts.{}] {}",
                f.action,
                f.path.display(),
                self.host.as_str(),
                keys.join(", ")
            );
        }
        if let Some(f) = &self.mcp_header_file {
            println!(
                "  {:<7} {} (owner-only; the MCP Authorization header OpenCode reads)",
                "write",
                f.path.display()
            );
        }
        if let Some(p) = &self.drop_mcp_header_file {
            println!("  {:<7} {} (no token any more)", "remove", p.display());
        }
        if let Some((f, o)) = &self.host_entry {
            println!("  {:<7} {} {}", f.action, f.path.display(), o.member());
        }
        for s in &self.steps {
            println!("  run     {}", self.step_command(*s));
        }
        for (action, path, what) in self.shared.lines() {
            println!("  {action:<7} {} {what}", path.display());
        }
        if !self.changes() {
            println!("  (nothing to change)");
        }
        for w in &self.warnings {
            println!("warning: {w}");
        }
    }
}

fn origin_text(o: &Origin) -> String {
    o.to_string()
}

fn build_plan(args: &SetupArgs, host: Host, paths: &Paths) -> Result<Plan> {
    // 1. Inputs, validated before anything else.
    let server_url = match &args.server_url {
        Some(u) => Some(BaseUrl::parse(u).map_err(|p| anyhow!("--server-url: {p}"))?),
        None => None,
    };
    let token = read_token(args, &paths.env)?;
    let flags = HostOptions {
        server_url: server_url.as_ref().map(|u| u.as_str().to_owned()),
        capture_prompts: args.capture_prompts,
        ..HostOptions::default()
    };
    let settings = paths.settings(host, Some(&flags))?;
    let mut warnings = Vec::new();

    let hook_exe = paths.hook_exe(host);
    check_hook_exe(&hook_exe)?;
    let cli = HostCli::locate(host, args.locate.host_cli.as_deref(), &paths.env)?;
    let host_version = cli.version()?;
    let tested = host.tested_versions().contains(&host_version.as_str());
    if !tested {
        warnings.push(format!(
            "{} {host_version} is not a version our real-host tests cover ({}); installing anyway",
            host.as_str(),
            host.tested_versions().join(", ")
        ));
    }

    let mut settings_lines = vec![(
        "server_url".to_owned(),
        settings.server_url.value.as_str().to_owned(),
        origin_text(&settings.server_url.origin),
    )];
    match (&token, &settings.authorization.value) {
        (Some((_, source)), _) => settings_lines.push((
            "authorization".to_owned(),
            "set (not shown)".to_owned(),
            format!("{source}, saved to the config file"),
        )),
        (None, Some(_)) => settings_lines.push((
            "authorization".to_owned(),
            "set (not shown)".to_owned(),
            origin_text(&settings.authorization.origin),
        )),
        (None, None) => settings_lines.push((
            "authorization".to_owned(),
            "none".to_owned(),
            "default".to_owned(),
        )),
    }
    settings_lines.push((
        "capture_prompts".to_owned(),
        if settings.capture_prompts.value {
            "on"
        } else {
            "off"
        }
        .to_owned(),
        origin_text(&settings.capture_prompts.origin),
    ));
    if matches!(settings.server_url.origin, Origin::Env(_)) {
        warnings.push(format!(
            "the server URL comes from {}; the hook sees it only if {} runs with that variable (pass --server-url to save it)",
            settings.server_url.origin,
            host.as_str()
        ));
    }

    // 2. Our plugin folder, rendered; same-name files we do not own stop everything.
    let previous = install::load_manifest(&paths.state_root, host)?;
    let profile = match (host, &args.profile) {
        (Host::Dsh, Some(p)) => {
            if p.is_empty()
                || p.starts_with('.')
                || !p
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
            {
                bail!("--profile: a DSH profile name is letters, digits, `.`, `_` and `-`");
            }
            Some(p.clone())
        }
        (Host::Dsh, None) => Some(
            previous
                .as_ref()
                .and_then(|m| m.profile.clone())
                .unwrap_or_else(|| install::DSH_DEFAULT_PROFILE.to_owned()),
        ),
        (_, Some(_)) => bail!("--profile is for dsh only"),
        (_, None) => None,
    };
    if args.statusline && host != Host::ClaudeCode {
        bail!("--statusline is for claude-code only");
    }
    if let (Some(p), Some(old)) = (&profile, previous.as_ref().and_then(|m| m.profile.as_ref()))
        && p != old
    {
        bail!(
            "dsh is set up in profile `{old}`; run `powercontext-hooks uninstall dsh` first to move it to `{p}`"
        );
    }
    let opencode_config = if host == Host::OpenCode {
        Some(cli.opencode_paths()?["config"].clone())
    } else {
        None
    };
    let plugin_dir = match &opencode_config {
        Some(c) => c.join("plugins"),
        None => install::install_dir(&paths.state_root, host).join("plugin"),
    };
    let hook_command = host.hook_command_value(&hook_exe)?;
    let url = settings.server_url.value.as_str().to_owned();
    let version = env!("CARGO_PKG_VERSION");
    let mut files = Vec::new();
    let mut conflicts = Vec::new();
    for (rel, template) in host.templates() {
        let path = plugin_dir.join(rel);
        let text = install::render(
            template,
            &[
                ("hook_command", &hook_command),
                ("server_url", &url),
                ("version", version),
            ],
        )?;
        let bytes = if host == Host::Codex && *rel == ".mcp.json" {
            install::codex_mcp_with_helper(&text, &codex_headers_helper(paths)?)?
        } else {
            text.into_bytes()
        };
        let action = match install::read_opt(&path)? {
            None => "create",
            Some(old) if old == bytes => "keep",
            Some(old) => {
                let owned = previous
                    .as_ref()
                    .and_then(|m| m.files.iter().find(|f| f.path == path))
                    .is_some_and(|f| f.sha256 == digest(&old));
                if !owned {
                    conflicts.push(path.clone());
                }
                "update"
            }
        };
        files.push(FileChange {
            path,
            bytes,
            action,
            private: false,
        });
    }
    // OpenCode: the official installer's plugin file, marked as PowerContext's by its ownership
    // file, may be replaced with --take-over (the plan says so; a failure restores it).
    if host == Host::OpenCode && args.take_over && !conflicts.is_empty() {
        let mark = plugin_dir.join(".powercontext-opencode.json");
        let official = install::read_opt(&mark)?
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .is_some_and(|v| v["owner"] == "powercontext");
        if official {
            warnings.push(format!(
                "taking over: the official installer's {} is replaced (not restored by uninstall)",
                plugin_dir.join(install::OPENCODE_PLUGIN_FILE).display()
            ));
            conflicts.clear();
        }
    }
    if !conflicts.is_empty() {
        let list: Vec<String> = conflicts.iter().map(|p| p.display().to_string()).collect();
        bail!(
            "refusing to overwrite files powercontext-hooks does not own (not in its manifest, or changed since): {}. \
             Move them away, then run setup again",
            list.join(", ")
        );
    }

    // 3. Our config file: only the keys given on the command line.
    let mut lines = Vec::new();
    if let Some(u) = &server_url {
        lines.push(("server_url".to_owned(), toml_string(u.as_str())));
    }
    if let Some(c) = args.capture_prompts {
        lines.push(("capture_prompts".to_owned(), c.to_string()));
    }
    if let Some((auth, _)) = &token {
        lines.push(("authorization".to_owned(), toml_string(auth.header_value())));
    }
    let mut prior_authorization = None;
    let config = if lines.is_empty() {
        None
    } else {
        let path = paths
            .config_path
            .clone()
            .context("cannot find the config file location: set HOME or POWERCONTEXT_HOOKS_CONFIG")?;
        let old = install::read_opt(&path)?;
        let old_text = match &old {
            Some(b) => {
                String::from_utf8(b.clone()).map_err(|_| anyhow!("{} is not UTF-8", path.display()))?
            }
            None => String::new(),
        };
        let (new_text, created) = install::config_set(&old_text, host.as_str(), &lines);
        let prev_cfg = previous.as_ref().and_then(|m| m.config.clone());
        // Lines the user had before we first set these keys: uninstall puts them back.
        let mut prior = prev_cfg.as_ref().map(|c| c.previous.clone()).unwrap_or_default();
        for (k, _) in &lines {
            let ours = prev_cfg.as_ref().is_some_and(|c| c.keys.contains_key(k));
            if ours {
                continue;
            }
            match install::config_line(&old_text, host.as_str(), k) {
                Some(line) if k == "authorization" => {
                    prior_authorization = Some(FileChange {
                        path: install::install_dir(&paths.state_root, host)
                            .join(install::PRIOR_AUTHORIZATION_FILE),
                        bytes: format!("{line}\n").into_bytes(),
                        action: "create",
                        private: true,
                    });
                }
                Some(line) => {
                    prior.insert(k.clone(), line);
                }
                None => {}
            }
        }
        let owned = OwnedConfig {
            path: path.clone(),
            created_table: created || prev_cfg.as_ref().is_some_and(|c| c.created_table),
            keys: {
                let mut keys = prev_cfg.map(|c| c.keys).unwrap_or_default();
                for (k, v) in &lines {
                    keys.insert(k.clone(), digest(format!("{k} = {v}").as_bytes()));
                }
                keys
            },
            previous: prior,
        };
        if old.as_deref() == Some(new_text.as_bytes()) {
            None
        } else {
            Some((
                FileChange {
                    action: if old.is_some() { "update" } else { "create" },
                    path,
                    bytes: new_text.into_bytes(),
                    private: token.is_some(),
                },
                owned,
            ))
        }
    };

    // 4. Host registrations, through the host's own CLI.
    let mut steps = Vec::new();
    let mut host_entry = None;
    let mut kept_entry = None;
    let mut mcp_header_file = None;
    let mut drop_mcp_header_file = None;
    let mut pi_replace = Vec::new();
    match host {
        Host::Pi => {
            // Pi tells local packages apart by path: the official installer's `powercontext-pi`
            // would load beside ours (recall and capture twice).
            pi_replace = cli.pi_other_powercontext(&plugin_dir)?;
            if !pi_replace.is_empty() {
                let list: Vec<String> = pi_replace.iter().map(|p| p.display().to_string()).collect();
                if !args.take_over {
                    bail!(
                        "Pi already has another {} package ({}) — the official installer's; both would load. \
                         Pass --take-over to replace it, or remove it first (pi remove <path>), then run setup again",
                        install::PI_PACKAGE,
                        list.join(", ")
                    );
                }
                warnings.push(format!(
                    "taking over: Pi's other {} package ({}) is removed (not restored by uninstall)",
                    install::PI_PACKAGE,
                    list.join(", ")
                ));
                steps.push(Step::Replace);
            }
            if !cli.pi_lists(&plugin_dir)? {
                steps.push(Step::Install);
            }
        }
        Host::Dsh => {
            let p = profile.as_deref().unwrap_or(install::DSH_DEFAULT_PROFILE);
            let dir = paths
                .dsh_profile_dir(p)
                .context("cannot find DSH's home: set HOME or DSH_HOME")?;
            match dsh_dependency(&dir)? {
                None => steps.push(Step::Install),
                Some(spec) if spec == format!("link:{}", plugin_dir.display()) => {}
                Some(spec) if args.take_over => {
                    warnings.push(format!(
                        "taking over: DSH profile `{p}`'s `{}` package ({spec}) is replaced (not restored by uninstall)",
                        install::DSH_PACKAGE
                    ));
                    steps.push(Step::Replace);
                    steps.push(Step::Install);
                }
                Some(spec) => bail!(
                    "DSH profile `{p}` already has a package `{}` ({spec}) — not ours. Remove it first \
                     (dsh plugin --profile {p} remove {}), or pass --take-over, then run setup again",
                    install::DSH_PACKAGE,
                    install::DSH_PACKAGE
                ),
            }
        }
        Host::OpenCode => {
            let config_dir = opencode_config.as_deref().context("no OpenCode config dir")?;
            let mut want = json!({"type": "remote", "url": format!("{url}/mcp"), "enabled": true});
            // The token the hooks send, for OpenCode's own MCP client: the entry names an
            // owner-only file (OpenCode substitutes `{file:…}`), never the token itself.
            let header_file =
                install::install_dir(&paths.state_root, host).join(install::MCP_AUTHORIZATION_FILE);
            let mcp_token = token
                .as_ref()
                .map(|(a, _)| a.clone())
                .or_else(|| settings.authorization.value.clone());
            match mcp_token {
                Some(auth) => {
                    want["headers"] = json!({"Authorization": opencode_file_reference(&header_file)?});
                    let bytes = format!("{}\n", auth.header_value()).into_bytes();
                    if install::read_opt(&header_file)?.as_deref() != Some(&bytes[..]) {
                        mcp_header_file = Some(FileChange {
                            path: header_file,
                            bytes,
                            action: "private",
                            private: true,
                        });
                    }
                }
                None if header_file.exists() => drop_mcp_header_file = Some(header_file),
                None => {}
            }
            (host_entry, kept_entry) = plan_opencode_mcp(config_dir, &want, previous.as_ref())?;
        }
        Host::ClaudeCode => {
            // Once installed, a re-run keeps the status line in step (the CLI may have moved).
            if args.statusline || previous.as_ref().is_some_and(|m| m.host_entry.is_some()) {
                let home = paths
                    .host_home(host)
                    .context("cannot find Claude Code's configuration directory: set HOME")?;
                let want = statusline_value()?;
                (host_entry, kept_entry) = plan_statusline(
                    &home.join("settings.json"),
                    &want,
                    previous.as_ref(),
                    &mut warnings,
                )?;
            }
        }
        Host::Codex => {}
    }
    let mut replacing = false;
    if host.uses_marketplace() {
        match cli.marketplace_path()? {
            Some(p) if p == plugin_dir => {}
            Some(p) if args.take_over => {
                warnings.push(format!(
                    "taking over: the `{}` marketplace from {} and its plugin are replaced (not restored by uninstall)",
                    install::MARKETPLACE,
                    p.display()
                ));
                steps.push(Step::Replace);
                steps.push(Step::Marketplace);
                replacing = true;
            }
            Some(p) => bail!(
                "{} already has a marketplace named `{}` from {} — not ours. Remove it first ({}), or pass --take-over, then run setup again",
                host.as_str(),
                install::MARKETPLACE,
                p.display(),
                match host {
                    Host::Codex => "codex plugin marketplace remove powercontext",
                    _ => "claude plugin marketplace remove powercontext",
                }
            ),
            None => steps.push(Step::Marketplace),
        }
    }
    let files_change = files.iter().any(|f| f.action != "keep");
    if host.uses_marketplace() {
        match cli.plugin_enabled()? {
            _ if replacing => steps.push(Step::Install),
            None => steps.push(Step::Install),
            // Codex runs a cached copy of the plugin: a changed folder has to be added again.
            Some(_) if host == Host::Codex && files_change => steps.push(Step::Install),
            Some(false) => steps.push(Step::Enable),
            Some(true) => {}
        }
        if host == Host::Codex {
            let needs_trust = steps.contains(&Step::Install)
                || cli
                    .codex_hooks(&paths.neutral_cwd())?
                    .iter()
                    .any(|h| h["trustStatus"] != "trusted");
            if needs_trust {
                steps.push(Step::Trust);
            }
        }
    }

    let shared = crate::shared_files::plan(
        host,
        &paths.env,
        &url,
        token.as_ref().map(|(a, _)| a),
        args.capture_prompts,
        previous.as_ref().map(|m| &m.shared),
        &install::install_dir(&paths.state_root, host),
    )?;

    Ok(Plan {
        host,
        cli,
        host_version,
        tested,
        plugin_dir,
        hook_exe,
        files,
        config,
        prior_authorization,
        host_entry,
        kept_entry,
        mcp_header_file,
        drop_mcp_header_file,
        pi_replace,
        profile,
        steps,
        shared,
        settings_lines,
        warnings,
        previous,
    })
}

/// Codex's MCP headers helper: our CLI's `mcp-headers codex`, with our config file and the
/// location variables this setup saw named on the line (Codex gives a helper only HOME and PATH).
pub fn codex_headers_helper(paths: &Paths) -> Result<String> {
    let cli = std::env::current_exe().context("cannot locate this program")?;
    let env: Vec<(&str, &str)> = crate::interop::LOCATION_VARS
        .iter()
        .filter_map(|n| {
            paths
                .env
                .text(n)
                .filter(|v| !v.trim().is_empty())
                .map(|v| (*n, v))
        })
        .collect();
    install::mcp_headers_command(&cli, Host::Codex, paths.config_path.as_deref(), &env)
}

/// `{file:<path>}` for OpenCode's config substitution, which takes everything up to the first
/// `}` and reads the JSON text before parsing it: a path it would cut or mangle is refused.
fn opencode_file_reference(path: &Path) -> Result<String> {
    let text = path
        .to_str()
        .filter(|t| !t.chars().any(|c| c.is_control() || "{}\"\\".contains(c)))
        .with_context(|| {
            format!(
                "OpenCode cannot read a file reference to {} (it holds `{{`, `}}`, a quote, a backslash or a control \
                 character): set POWERCONTEXT_HOOKS_STATE_DIR to a plain path",
                path.display()
            )
        })?;
    Ok(format!("{{file:{text}}}"))
}

/// The spec of our package in a DSH profile's `package.json` dependencies, if any.
pub fn dsh_dependency(profile_dir: &Path) -> Result<Option<String>> {
    let path = profile_dir.join("package.json");
    let Some(bytes) = install::read_opt(&path)? else {
        return Ok(None);
    };
    let v: Value =
        serde_json::from_slice(&bytes).with_context(|| format!("{} is not valid JSON", path.display()))?;
    Ok(v["dependencies"][install::DSH_PACKAGE]
        .as_str()
        .map(str::to_owned))
}

/// OpenCode's global config files, in the order OpenCode merges them.
pub const OPENCODE_CONFIG_FILES: [&str; 3] = ["config.json", "opencode.json", "opencode.jsonc"];

/// `sha256:` of a JSON value's compact form (how the manifest identifies our MCP entry).
pub fn value_digest(v: &Value) -> String {
    digest(v.to_string().as_bytes())
}

type EntryPlan = (Option<(FileChange, OwnedEntry)>, Option<OwnedEntry>);

/// Plans OpenCode's `mcp.powercontext`: added to the config file OpenCode reads last (created
/// when there is none), updated only while it is still what we wrote, refused when it is not ours.
fn plan_opencode_mcp(config_dir: &Path, want: &Value, previous: Option<&Manifest>) -> Result<EntryPlan> {
    let owned = previous.and_then(|m| m.host_entry.clone());
    let (parent, key) = ("mcp", install::OPENCODE_MCP_KEY);
    let mut existing = Vec::new();
    for name in OPENCODE_CONFIG_FILES {
        let path = config_dir.join(name);
        if let Some(bytes) = install::read_opt(&path)? {
            let text = String::from_utf8(bytes).map_err(|_| anyhow!("{} is not UTF-8", path.display()))?;
            jsonc::parse(&text).with_context(|| {
                format!("cannot read {} (OpenCode's config): fix it first", path.display())
            })?;
            existing.push((path, text));
        }
    }
    for (path, text) in &existing {
        let Some(current) = jsonc::get(text, parent, key)? else {
            continue;
        };
        let ours = owned
            .as_ref()
            .filter(|o| &o.path == path && o.sha256 == value_digest(&current));
        let Some(o) = ours else {
            bail!(
                "refusing to overwrite `{parent}.{key}` in {}: powercontext-hooks did not write it (or it changed since). \
                 Remove that entry, then run setup again",
                path.display()
            );
        };
        if &current == want {
            return Ok((None, Some(o.clone())));
        }
        let new = jsonc::replace(text, parent, key, want)?;
        let entry = OwnedEntry {
            sha256: value_digest(want),
            ..o.clone()
        };
        let change = FileChange {
            path: path.clone(),
            bytes: new.into_bytes(),
            action: "update",
            private: false,
        };
        return Ok((Some((change, entry)), None));
    }
    let (path, text, created_file) = match existing.pop() {
        Some((p, t)) => (p, t, false),
        None => (config_dir.join("opencode.json"), "{}\n".to_owned(), true),
    };
    let (new, inserted) = jsonc::insert(&text, parent, key, want)?;
    let entry = OwnedEntry {
        path: path.clone(),
        parent: parent.to_owned(),
        key: key.to_owned(),
        sha256: value_digest(want),
        created_file,
        inserted,
    };
    let change = FileChange {
        path,
        bytes: new.into_bytes(),
        action: if created_file { "create" } else { "update" },
        private: false,
    };
    Ok((Some((change, entry)), None))
}

/// The `statusLine` member of Claude Code's settings: our CLI's `statusline` command.
fn statusline_value() -> Result<Value> {
    let exe = std::env::current_exe().context("cannot locate this program")?;
    let command = format!("{} statusline", install::hook_command_shell(&exe)?);
    Ok(json!({"type": "command", "command": command, "padding": 0}))
}

/// Plans Claude Code's top-level `statusLine` in `settings.json`: added when there is none,
/// updated only while it is still what we wrote. A status line the user has is never replaced:
/// setup goes on without ours and says so.
fn plan_statusline(
    settings: &Path,
    want: &Value,
    previous: Option<&Manifest>,
    warnings: &mut Vec<String>,
) -> Result<EntryPlan> {
    let key = install::STATUSLINE_KEY;
    let owned = previous.and_then(|m| m.host_entry.clone());
    let text = match install::read_opt(settings)? {
        Some(bytes) => {
            let text =
                String::from_utf8(bytes).map_err(|_| anyhow!("{} is not UTF-8", settings.display()))?;
            jsonc::parse(&text).with_context(|| {
                format!(
                    "cannot read {} (Claude Code's settings): fix it first",
                    settings.display()
                )
            })?;
            Some(text)
        }
        None => None,
    };
    if let Some(text) = &text
        && let Some(current) = jsonc::get(text, "", key)?
    {
        let ours = owned
            .as_ref()
            .filter(|o| o.path == settings && o.sha256 == value_digest(&current));
        let Some(o) = ours else {
            warnings.push(format!(
                "Claude Code already has a status line (`{key}` in {}); it is kept and ours is not installed",
                settings.display()
            ));
            return Ok((None, None));
        };
        if &current == want {
            return Ok((None, Some(o.clone())));
        }
        let entry = OwnedEntry {
            sha256: value_digest(want),
            ..o.clone()
        };
        let change = FileChange {
            path: settings.to_path_buf(),
            bytes: jsonc::replace(text, "", key, want)?.into_bytes(),
            action: "update",
            private: false,
        };
        return Ok((Some((change, entry)), None));
    }
    let (text, created_file) = match text {
        Some(t) => (t, false),
        None => ("{}\n".to_owned(), true),
    };
    let (new, inserted) = jsonc::insert(&text, "", key, want)?;
    let entry = OwnedEntry {
        path: settings.to_path_buf(),
        parent: String::new(),
        key: key.to_owned(),
        sha256: value_digest(want),
        created_file,
        inserted,
    };
    let change = FileChange {
        path: settings.to_path_buf(),
        bytes: new.into_bytes(),
        action: if created_file { "create" } else { "update" },
        private: false,
    };
    Ok((Some((change, entry)), None))
}

fn fault(env: &Env, step: &str) -> Result<()> {
    if env.text(FAULT_VAR) == Some(step) {
        bail!("injected fault after step `{step}` ({FAULT_VAR})");
    }
    Ok(())
}

/// Host files the host CLI may change: snapshotted so a failed run restores them byte for byte.
fn journal_host_files(journal: &mut Journal, plan: &Plan, paths: &Paths, home: &Path) -> Result<()> {
    let (files, dirs): (Vec<PathBuf>, Vec<PathBuf>) = match plan.host {
        Host::ClaudeCode => (
            vec![
                home.join("settings.json"),
                home.join("plugins/known_marketplaces.json"),
                home.join("plugins/installed_plugins.json"),
            ],
            vec![
                home.join("plugins/cache/powercontext"),
                home.join("plugins/data/powercontext-powercontext"),
            ],
        ),
        Host::Codex => (
            vec![home.join("config.toml")],
            vec![
                home.join("plugins/cache/powercontext"),
                home.join("plugins/data/powercontext-powercontext"),
                // Codex keeps a per-hook trust record here besides `hooks.state`.
                home.join(".hook-trust"),
            ],
        ),
        // `pi install <dir>` records the folder in the agent settings, nothing else.
        Host::Pi => (vec![home.join("settings.json")], Vec::new()),
        // `dsh plugin add` initializes the profile if needed and runs pnpm in it (which also
        // creates its content store); `--dump-config` boots the profile.
        Host::Dsh => {
            let profile = home
                .join("profiles")
                .join(plan.profile.as_deref().unwrap_or(install::DSH_DEFAULT_PROFILE));
            let nm = profile.join("node_modules");
            let data = paths
                .env
                .text("XDG_DATA_HOME")
                .filter(|d| d.starts_with('/'))
                .map(PathBuf::from)
                .or_else(|| paths.env.text("HOME").map(|h| Path::new(h).join(".local/share")));
            let mut dirs = vec![
                profile.clone(),
                nm.clone(),
                nm.join(".pnpm"),
                home.join("profiles/node_modules"),
            ];
            dirs.extend(data.map(|d| d.join("pnpm/store")));
            (
                [
                    "package.json",
                    "pnpm-lock.yaml",
                    "pnpm-workspace.yaml",
                    "cordis.patch.yml",
                    "cordis.yml",
                    "node_modules/.modules.yaml",
                    "node_modules/.pnpm-workspace-state-v1.json",
                    "node_modules/.pnpm/lock.yaml",
                ]
                .iter()
                .map(|f| profile.join(f))
                .collect(),
                dirs,
            )
        }
        Host::OpenCode => (Vec::new(), Vec::new()),
    };
    for f in &files {
        journal.created_dirs_of(f);
        journal.file(f)?;
    }
    for d in &dirs {
        journal.created_dirs_of(d);
        journal.dir(d);
    }
    Ok(())
}

fn apply(plan: &Plan, paths: &Paths) -> Result<Registrations> {
    let mut journal = Journal::default();
    let result = apply_inner(plan, paths, &mut journal);
    if let Err(e) = result {
        let failed = journal.restore();
        if failed.is_empty() {
            return Err(e.context("setup failed; every change was rolled back"));
        }
        let list: Vec<String> = failed.iter().map(|p| p.display().to_string()).collect();
        return Err(e.context(format!(
            "setup failed and these paths could not be restored: {}",
            list.join(", ")
        )));
    }
    result
}

fn apply_inner(plan: &Plan, paths: &Paths, journal: &mut Journal) -> Result<Registrations> {
    let env = &paths.env;
    let manifest_path = install::manifest_path(&paths.state_root, plan.host);
    journal.created_dirs_of(&manifest_path);
    journal.created_dirs_of(&plan.plugin_dir.join("x"));
    journal.file(&manifest_path)?;
    // The state directory is the hooks' (0700): created so before anything is written under it,
    // rather than with the umask's mode, which the first hook would have to tighten.
    if let Some(parent) = paths.state_root.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let _ = std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
        .create(&paths.state_root);
    for f in &plan.files {
        journal.created_dirs_of(&f.path);
        journal.file(&f.path)?;
    }
    if let Some((f, _)) = &plan.config {
        journal.created_dirs_of(&f.path);
        journal.file(&f.path)?;
    }
    if let Some((f, _)) = &plan.host_entry {
        journal.created_dirs_of(&f.path);
        journal.file(&f.path)?;
    }
    let install_dir = install::install_dir(&paths.state_root, plan.host);
    crate::shared_files::journal(&plan.shared, journal, &install_dir)?;
    if !plan.steps.is_empty() {
        let home = paths
            .host_home(plan.host)
            .context("cannot find the host's configuration directory: set HOME")?;
        journal_host_files(journal, plan, paths, &home)?;
    }

    for f in plan.files.iter().filter(|f| f.action != "keep") {
        install::write_atomic(&f.path, &f.bytes, f.private)?;
    }
    fault(env, "files")?;
    if let Some(f) = &plan.prior_authorization {
        journal.file(&f.path)?;
        install::write_atomic(&f.path, &f.bytes, true)?;
    }
    if let Some((f, owned)) = &plan.config {
        install::write_through(&f.path, &f.bytes, f.private)?;
        // The hook must read back exactly what we wrote (without the environment's overrides).
        let file = config::load_file(&f.path)?.context("the config file vanished")?;
        Settings::resolve(&Layers {
            host: plan.host,
            env: &Env::default(),
            flags: None,
            file: Some((&f.path, &file)),
        })
        .context("the updated config file does not resolve")?;
        if owned.keys.is_empty() {
            bail!("internal error: no config keys recorded");
        }
    }
    fault(env, "config")?;
    // The header file before the entry that names it: OpenCode refuses a config whose
    // `{file:…}` is missing.
    if let Some(f) = &plan.mcp_header_file {
        journal.created_dirs_of(&f.path);
        journal.file(&f.path)?;
        install::write_atomic(&f.path, &f.bytes, true)?;
    }
    if let Some((f, _)) = &plan.host_entry {
        install::write_through(&f.path, &f.bytes, f.private)?;
        fault(env, "mcp")?;
    }
    if let Some(p) = &plan.drop_mcp_header_file {
        journal.file(p)?;
        std::fs::remove_file(p).with_context(|| format!("cannot remove {}", p.display()))?;
    }

    let mut regs = plan
        .previous
        .as_ref()
        .map(|m| m.registrations.clone())
        .unwrap_or_default();
    let dir = plan.plugin_dir.display().to_string();
    for step in &plan.steps {
        match (plan.host, step) {
            (Host::ClaudeCode, Step::Replace) => {
                if plan.cli.plugin_enabled()?.is_some() {
                    plan.cli
                        .run_ok(&["plugin", "uninstall", install::PLUGIN_ID, "--scope", "user"])?;
                }
                plan.cli
                    .run_ok(&["plugin", "marketplace", "remove", install::MARKETPLACE])?;
            }
            (Host::Codex, Step::Replace) => {
                if plan.cli.plugin_enabled()?.is_some() {
                    plan.cli
                        .run_ok(&["plugin", "remove", install::PLUGIN_ID, "--json"])?;
                }
                plan.cli
                    .run_ok(&["plugin", "marketplace", "remove", install::MARKETPLACE, "--json"])?;
            }
            (Host::ClaudeCode, Step::Marketplace) => {
                plan.cli
                    .run_ok(&["plugin", "marketplace", "add", &dir, "--scope", "user"])?;
                regs.marketplace = true;
            }
            (Host::ClaudeCode, Step::Install) => {
                plan.cli
                    .run_ok(&["plugin", "install", install::PLUGIN_ID, "--scope", "user"])?;
                regs.plugin = true;
            }
            (Host::ClaudeCode, Step::Enable) => {
                plan.cli
                    .run_ok(&["plugin", "enable", install::PLUGIN_ID, "--scope", "user"])?;
            }
            (Host::Codex, Step::Marketplace) => {
                plan.cli
                    .run_ok(&["plugin", "marketplace", "add", &dir, "--json"])?;
                regs.marketplace = true;
            }
            (Host::Codex, Step::Install | Step::Enable) => {
                plan.cli
                    .run_ok(&["plugin", "add", install::PLUGIN_ID, "--json"])?;
                regs.plugin = true;
            }
            (Host::Codex, Step::Trust) => {
                plan.cli.codex_trust(&paths.neutral_cwd())?;
                regs.trust = true;
            }
            (Host::Pi, Step::Replace) => {
                for p in &plan.pi_replace {
                    plan.cli.run_ok(&["remove", &p.display().to_string()])?;
                }
            }
            (Host::Pi, _) => {
                plan.cli.run_ok(&["install", &dir])?;
                regs.plugin = true;
            }
            (Host::Dsh, Step::Replace) => {
                let profile = plan.profile.as_deref().unwrap_or(install::DSH_DEFAULT_PROFILE);
                plan.cli
                    .run_ok(&["plugin", "--profile", profile, "remove", install::DSH_PACKAGE])?;
            }
            (Host::Dsh, _) => {
                let profile = plan.profile.as_deref().unwrap_or(install::DSH_DEFAULT_PROFILE);
                plan.cli.run_ok(&["plugin", "--profile", profile, "add", &dir])?;
                regs.plugin = true;
            }
            (Host::ClaudeCode | Host::OpenCode, _) => {}
        }
        fault(env, step.name())?;
    }

    // A host CLI that rewrote a linked settings file replaced the link: edit through it instead.
    journal.relink()?;
    // After the host CLI: Claude rewrites its settings file while installing.
    let shared = crate::shared_files::apply(&plan.shared, &install_dir)?;
    fault(env, "official")?;

    // Verify the host really lists it, before declaring success.
    match plan.host {
        Host::ClaudeCode | Host::Codex => {
            if plan.cli.plugin_enabled()? != Some(true) {
                bail!(
                    "{} does not list {} as enabled after setup",
                    plan.host.as_str(),
                    install::PLUGIN_ID
                );
            }
        }
        Host::Pi => {
            if !plan.cli.pi_lists(&plan.plugin_dir)? {
                bail!(
                    "`pi list` does not show {} after setup",
                    plan.plugin_dir.display()
                );
            }
        }
        Host::Dsh => {
            let profile = plan.profile.as_deref().unwrap_or(install::DSH_DEFAULT_PROFILE);
            if !plan.cli.dsh_has_plugin(profile)? {
                bail!(
                    "`dsh --profile {profile} --dump-config` has no `{}` row after setup",
                    install::DSH_PLUGIN_ID
                );
            }
        }
        // Loading is proven by `doctor opencode` (a short `opencode serve`); here the config
        // OpenCode reads must still parse and hold our entry.
        Host::OpenCode => {
            if let Some((f, o)) = &plan.host_entry {
                let text = std::fs::read_to_string(&f.path)?;
                let v = jsonc::get(&text, &o.parent, &o.key)?;
                if v.as_ref().map(value_digest) != Some(o.sha256.clone()) {
                    bail!("{} does not hold our MCP entry after setup", f.path.display());
                }
            }
        }
    }
    if plan.host == Host::ClaudeCode
        && let Some((f, o)) = &plan.host_entry
    {
        // `claude plugin …` rewrites settings.json: our status line must have survived it.
        let text = std::fs::read_to_string(&f.path)?;
        if jsonc::get(&text, &o.parent, &o.key)?.as_ref().map(value_digest) != Some(o.sha256.clone()) {
            bail!("{} does not hold our status line after setup", f.path.display());
        }
    }
    if plan.host == Host::Codex {
        let hooks = plan.cli.codex_hooks(&paths.neutral_cwd())?;
        let want = install::hook_command_shell(&plan.hook_exe)?;
        if hooks.is_empty()
            || hooks
                .iter()
                .any(|h| h["trustStatus"] != "trusted" || h["command"] != want.as_str())
        {
            bail!("codex does not show our hook as trusted and current after setup");
        }
    }
    fault(env, "verify")?;

    let manifest = Manifest {
        schema: 1,
        owner: "powercontext-hooks".to_owned(),
        host: plan.host.as_str().to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        plugin_dir: plan.plugin_dir.clone(),
        hook_exe: plan.hook_exe.clone(),
        files: plan
            .files
            .iter()
            .map(|f| OwnedFile {
                path: f.path.clone(),
                sha256: digest(&f.bytes),
            })
            .collect(),
        config: plan
            .config
            .as_ref()
            .map(|(_, o)| o.clone())
            .or_else(|| plan.previous.as_ref().and_then(|m| m.config.clone())),
        registrations: regs.clone(),
        host_entry: plan
            .host_entry
            .as_ref()
            .map(|(_, o)| o.clone())
            .or_else(|| plan.kept_entry.clone()),
        profile: plan.profile.clone(),
        shared,
    };
    let bytes = install::manifest_bytes(&manifest)?;
    if install::read_opt(&manifest_path)?.as_deref() != Some(&bytes[..]) {
        install::write_atomic(&manifest_path, &bytes, false)?;
    }
    Ok(regs)
}

/// Runs `setup`.
pub fn setup(args: &SetupArgs) -> Result<ExitCode> {
    if args.trust_only {
        return crate::interop::trust_only(args).or_else(|e| fail(args.json, &e));
    }
    let outcome = (|| -> Result<(Plan, Option<Result<Registrations>>)> {
        let host = args.host;
        let paths = Paths::resolve(&args.locate)?;
        let plan = build_plan(args, host, &paths)?;
        if !args.json {
            plan.print();
        }
        if args.dry_run || !plan.changes() {
            return Ok((plan, None));
        }
        let applied = apply(&plan, &paths);
        Ok((plan, Some(applied)))
    })();
    match outcome {
        Err(e) => fail(args.json, &e),
        Ok((plan, None)) => {
            let status = if args.dry_run { "planned" } else { "unchanged" };
            if args.json {
                let mut v = plan.to_json();
                v["result"] = json!(status);
                v["ok"] = json!(true);
                println!("{v}");
            } else if args.dry_run {
                println!("dry run: nothing was changed");
            } else {
                println!("already set up: nothing changed");
                next_steps(&plan);
            }
            Ok(ExitCode::SUCCESS)
        }
        Ok((plan, Some(Err(e)))) => {
            if args.json {
                let mut v = plan.to_json();
                v["result"] = json!("rolled_back");
                v["ok"] = json!(false);
                v["error"] = json!(format!("{e:#}"));
                println!("{v}");
            } else {
                eprintln!("powercontext-hooks: error: {e:#}");
            }
            Ok(ExitCode::from(1))
        }
        Ok((plan, Some(Ok(_)))) => {
            if args.json {
                let mut v = plan.to_json();
                v["result"] = json!("installed");
                v["ok"] = json!(true);
                println!("{v}");
            } else {
                println!("done: {} is set up", plan.host.as_str());
                next_steps(&plan);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn next_steps(plan: &Plan) {
    println!("next: powercontext-hooks doctor {}", plan.host.as_str());
    println!("undo: powercontext-hooks uninstall {}", plan.host.as_str());
    if plan.host == Host::Codex {
        println!(
            "note: Codex runs only trusted hooks; setup recorded trust for this exact hook. If you edit the plugin, \
             run setup again (or review it with /hooks in Codex)."
        );
    }
}

/// Reports an error (JSON or text) with exit code 1.
pub fn fail(json_out: bool, e: &anyhow::Error) -> Result<ExitCode> {
    if json_out {
        println!("{}", json!({"ok": false, "error": format!("{e:#}")}));
    } else {
        eprintln!("powercontext-hooks: error: {e:#}");
    }
    Ok(ExitCode::from(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opencode_file_references_refuse_paths_its_substitution_would_cut() {
        assert_eq!(
            opencode_file_reference(Path::new("/home/u/.local/state/x/mcp-authorization")).unwrap(),
            "{file:/home/u/.local/state/x/mcp-authorization}"
        );
        for bad in ["/a}b/f", "/a{b/f", "/a\"b/f", "/a\\b/f", "/a\nb/f"] {
            assert!(opencode_file_reference(Path::new(bad)).is_err(), "{bad:?}");
        }
    }
}
