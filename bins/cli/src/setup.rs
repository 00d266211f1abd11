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
    self, Host, Journal, Manifest, OwnedConfig, OwnedFile, Registrations, digest, toml_string,
};

/// Test-only fault injection: fail right after the named step (files, config, marketplace,
/// plugin, trust, verify) to prove the rollback.
pub const FAULT_VAR: &str = "POWERCONTEXT_HOOKS_SETUP_FAULT";

/// Flags shared by setup, uninstall and doctor for finding things.
#[derive(Debug, Clone, Args)]
pub struct Locate {
    /// Directory holding the powercontext-hook-* executables (default: next to this program).
    #[arg(long, value_name = "DIR")]
    pub bin_dir: Option<PathBuf>,
    /// The host's CLI executable (default: `claude` / `codex` on PATH).
    #[arg(long, value_name = "PATH")]
    pub host_cli: Option<PathBuf>,
}

/// `setup <host>`.
#[derive(Debug, Args)]
pub struct SetupArgs {
    /// claude-code or codex (opencode, pi, dsh: not yet supported).
    pub host: String,
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
    /// or `~/.codex`).
    pub fn host_home(&self, host: Host) -> Option<PathBuf> {
        let (var, rel) = match host {
            Host::ClaudeCode => ("CLAUDE_CONFIG_DIR", ".claude"),
            Host::Codex => ("CODEX_HOME", ".codex"),
        };
        if let Some(v) = self.env.text(var).filter(|v| !v.is_empty()) {
            return Some(PathBuf::from(v));
        }
        self.env
            .text("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| Path::new(h).join(rel))
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
            host: host.integration(),
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
    Marketplace,
    Install,
    Enable,
    Trust,
}

impl Step {
    fn name(self) -> &'static str {
        match self {
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
    steps: Vec<Step>,
    settings_lines: Vec<(String, String, String)>,
    warnings: Vec<String>,
    previous: Option<Manifest>,
}

impl Plan {
    fn changes(&self) -> bool {
        self.files.iter().any(|f| f.action != "keep") || self.config.is_some() || !self.steps.is_empty()
    }

    fn step_command(&self, step: Step) -> String {
        let dir = self.plugin_dir.display().to_string();
        match (self.host, step) {
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
            (_, Step::Trust) => format!(
                "{} app-server: hooks/list, then config/batchWrite hooks.state (trust our hook's current hash)",
                self.cli.path.display()
            ),
        }
    }

    fn to_json(&self) -> Value {
        json!({
            "host": self.host.name(),
            "host_cli": self.cli.path,
            "host_version": self.host_version,
            "host_version_tested": self.tested,
            "hook_executable": self.hook_exe,
            "plugin_dir": self.plugin_dir,
            "settings": self.settings_lines.iter().map(|(k, v, o)| json!({"name": k, "value": v, "origin": o})).collect::<Vec<_>>(),
            "files": self.files.iter().map(|f| json!({"path": f.path, "action": f.action})).collect::<Vec<_>>(),
            "config": self.config.as_ref().map(|(f, o)| json!({"path": f.path, "action": f.action, "keys": o.keys.keys().collect::<Vec<_>>()})),
            "commands": self.steps.iter().map(|s| self.step_command(*s)).collect::<Vec<_>>(),
            "warnings": self.warnings,
        })
    }

    fn print(&self) {
        println!("powercontext-hooks setup {}", self.host.name());
        println!("  hook executable  {}", self.hook_exe.display());
        println!(
            "  host CLI         {} {}{}",
            self.cli.path.display(),
            self.host_version,
            if self.tested { " (tested)" } else { " (NOT tested)" }
        );
        println!("  plugin folder    {}", self.plugin_dir.display());
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
                self.host.name(),
                keys.join(", ")
            );
        }
        for s in &self.steps {
            println!("  run     {}", self.step_command(*s));
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
            host.name(),
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
            host.name()
        ));
    }

    // 2. Our plugin folder, rendered; same-name files we do not own stop everything.
    let previous = install::load_manifest(&paths.state_root, host)?;
    let plugin_dir = install::install_dir(&paths.state_root, host).join("plugin");
    let hook_command = install::hook_command_json(&hook_exe)?;
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
        let bytes = text.into_bytes();
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
        let (new_text, created) = install::config_set(&old_text, host.name(), &lines);
        let prev_cfg = previous.as_ref().and_then(|m| m.config.clone());
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
    match cli.marketplace_path()? {
        Some(p) if p == plugin_dir => {}
        Some(p) => bail!(
            "{} already has a marketplace named `{}` from {} — not ours. Remove it first ({}), then run setup again",
            host.name(),
            install::MARKETPLACE,
            p.display(),
            match host {
                Host::ClaudeCode => "claude plugin marketplace remove powercontext",
                Host::Codex => "codex plugin marketplace remove powercontext",
            }
        ),
        None => steps.push(Step::Marketplace),
    }
    let files_change = files.iter().any(|f| f.action != "keep");
    match cli.plugin_enabled()? {
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

    Ok(Plan {
        host,
        cli,
        host_version,
        tested,
        plugin_dir,
        hook_exe,
        files,
        config,
        steps,
        settings_lines,
        warnings,
        previous,
    })
}

fn fault(env: &Env, step: &str) -> Result<()> {
    if env.text(FAULT_VAR) == Some(step) {
        bail!("injected fault after step `{step}` ({FAULT_VAR})");
    }
    Ok(())
}

/// Host files the host CLI may change: snapshotted so a failed run restores them byte for byte.
fn journal_host_files(journal: &mut Journal, host: Host, home: &Path) -> Result<()> {
    let (files, dirs): (Vec<PathBuf>, Vec<PathBuf>) = match host {
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
    for f in &plan.files {
        journal.created_dirs_of(&f.path);
        journal.file(&f.path)?;
    }
    if let Some((f, _)) = &plan.config {
        journal.created_dirs_of(&f.path);
        journal.file(&f.path)?;
    }
    if !plan.steps.is_empty() {
        let home = paths
            .host_home(plan.host)
            .context("cannot find the host's configuration directory: set HOME")?;
        journal_host_files(journal, plan.host, &home)?;
    }

    for f in plan.files.iter().filter(|f| f.action != "keep") {
        install::write_atomic(&f.path, &f.bytes, f.private)?;
    }
    fault(env, "files")?;
    if let Some((f, owned)) = &plan.config {
        install::write_atomic(&f.path, &f.bytes, f.private)?;
        // The hook must read back exactly what we wrote (without the environment's overrides).
        let file = config::load_file(&f.path)?.context("the config file vanished")?;
        Settings::resolve(&Layers {
            host: plan.host.integration(),
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

    let mut regs = plan
        .previous
        .as_ref()
        .map(|m| m.registrations.clone())
        .unwrap_or_default();
    let dir = plan.plugin_dir.display().to_string();
    for step in &plan.steps {
        match (plan.host, step) {
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
            (Host::ClaudeCode, Step::Trust) => {}
        }
        fault(env, step.name())?;
    }

    // Verify the host really lists it, before declaring success.
    if plan.cli.plugin_enabled()? != Some(true) {
        bail!(
            "{} does not list {} as enabled after setup",
            plan.host.name(),
            install::PLUGIN_ID
        );
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
        host: plan.host.name().to_owned(),
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
    };
    let bytes = install::manifest_bytes(&manifest)?;
    if install::read_opt(&manifest_path)?.as_deref() != Some(&bytes[..]) {
        install::write_atomic(&manifest_path, &bytes, false)?;
    }
    Ok(regs)
}

/// Runs `setup`.
pub fn setup(args: &SetupArgs) -> Result<ExitCode> {
    let outcome = (|| -> Result<(Plan, Option<Result<Registrations>>)> {
        let host = Host::parse(&args.host)?;
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
                println!("done: {} is set up", plan.host.name());
                next_steps(&plan);
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn next_steps(plan: &Plan) {
    println!("next: powercontext-hooks doctor {}", plan.host.name());
    println!("undo: powercontext-hooks uninstall {}", plan.host.name());
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
