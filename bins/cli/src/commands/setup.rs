//! `powercontext-hooks setup <host>`: validate every input, print the plan (files, config keys,
//! host CLI calls), then apply it as one transaction — any failure restores every touched file
//! byte for byte, including the host registrations this run made. It never prints a token, never
//! overwrites a file it does not own, and never copies or embeds the Server.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use powercontext_hooks_core::config::{self, HostOptions, Layers, Origin, Settings};
use powercontext_hooks_core::endpoint::{Authorization, BaseUrl};
use powercontext_hooks_core::env::{Env, EnvValue};
use serde_json::{Value, json};

use crate::hosts::installer;
use crate::installer::plan::{Action, FileChange, Plan, SetupArgs, Step};
use crate::support::host_cli::HostCli;
use crate::support::install::{
    self, Host, HostExt, Journal, Manifest, OwnedConfig, OwnedFile, Registrations, digest, toml_string,
};
use crate::support::paths::{Paths, check_home, check_hook_exe};
use crate::support::report::{self, SettingRow};

/// Test-only fault injection: fail right after the named step (files, config, mcp, marketplace,
/// plugin, trust, verify) to prove the rollback.
pub const FAULT_VAR: &str = powercontext_hooks_core::variables::HOOKS_SETUP_FAULT;

/// Flags are saved to our config file, which the environment outranks: a variable set here that
/// gives a setting another value than its flag is what a hook started from this environment
/// uses. Its row shows that value and a warning names the variable, so the plan never claims a
/// value the hook will not use. `hook` is the resolution without flags (environment first).
fn shadowed_flags(
    flags: &HostOptions,
    token: Option<&(Authorization, String)>,
    hook: Option<&Settings>,
    rows: &mut [report::SettingRow],
    warnings: &mut Vec<String>,
) {
    let Some(hook) = hook else { return };
    let conflicts = [
        (
            "server_url",
            "--server-url",
            &hook.server_url.origin,
            flags
                .server_url
                .as_ref()
                .is_some_and(|u| u != hook.server_url.value.as_str()),
        ),
        (
            "capture_prompts",
            "--capture-prompts",
            &hook.capture_prompts.origin,
            flags
                .capture_prompts
                .is_some_and(|c| c != hook.capture_prompts.value),
        ),
        (
            "authorization",
            "the token you gave",
            &hook.authorization.origin,
            token.is_some_and(|(t, _)| hook.authorization.value.as_ref() != Some(t)),
        ),
    ];
    let hook_rows = report::setting_rows(hook);
    for (name, flag, origin, differs) in conflicts {
        if !differs || !matches!(origin, Origin::Env(_)) {
            continue;
        }
        warnings.push(format!(
            "{origin} is set in this environment and outranks {flag} (saved to the config file): \
             a hook started from here uses its value; unset it to use yours"
        ));
        if let (Some(row), Some(hook_row)) = (
            rows.iter_mut().find(|r| r.name == name),
            hook_rows.iter().find(|r| r.name == name),
        ) {
            *row = hook_row.clone();
        }
    }
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
        // A token is a line: 64 KiB is far beyond any, and a bound keeps `/dev/zero` or a FIFO
        // from hanging setup.
        let bytes = install::read_bounded(path, 64 * 1024)
            .map_err(|e| anyhow!("--token-file: {e:#}"))?
            .ok_or_else(|| anyhow!("--token-file: {} does not exist", path.display()))?;
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

impl Plan {
    fn changes(&self) -> bool {
        self.files.iter().any(|f| f.action != Action::Keep)
            || !self.exe.current
            || self.config.is_some()
            || self.host_entry.is_some()
            || self.settings_hooks.is_some()
            || self.mcp_header_file.is_some()
            || self.drop_mcp_header_file.is_some()
            || !self.steps.is_empty()
            || self.shared.changes()
    }

    /// What setup does to the hook executable's copy.
    fn exe_action(&self) -> Action {
        if self.exe.current {
            Action::Keep
        } else if self.exe.existed {
            Action::Update
        } else {
            Action::Create
        }
    }

    fn step_command(&self, step: Step) -> String {
        installer(self.host).describe(self, step)
    }

    fn to_json(&self) -> Value {
        json!({
            "host": self.host.as_str(),
            "host_cli": self.cli.path,
            "host_version": self.host_version,
            "host_version_tested": self.tested,
            "hook_executable": self.hook_exe,
            "executable": {"path": self.exe.to, "from": self.exe.from, "action": self.exe_action()},
            "plugin_dir": self.plugin_dir,
            "settings": self.settings_lines,
            "files": self.files.iter().map(|f| json!({"path": f.path, "action": f.action})).collect::<Vec<_>>(),
            "config": self.config.as_ref().map(|(f, o)| json!({"path": f.path, "action": f.action, "keys": o.keys.keys().collect::<Vec<_>>()})),
            "host_config": self.host_entry.as_ref().map(|(f, o)| json!({"path": f.path, "action": f.action, "key": o.member()})),
            "host_hooks": self.settings_hooks.as_ref().map(|(f, o)| json!({"path": f.path, "action": f.action, "events": o.entries.iter().map(|h| &h.event).collect::<Vec<_>>()})),
            "mcp_header_file": self.mcp_header_file.as_ref().map(|f| json!({"path": f.path, "action": "write"}))
                .or_else(|| self.drop_mcp_header_file.as_ref().map(|p| json!({"path": p, "action": "remove"}))),
            "profile": self.profile,
            "commands": self.steps.iter().map(|s| self.step_command(*s)).collect::<Vec<_>>(),
            "official_files": self.shared.lines().iter().map(|(a, p, w)| json!({"path": p, "action": a, "what": w})).collect::<Vec<_>>(),
            "warnings": self.warnings,
            "host_cli_wrote": self.host_cli_wrote,
        })
    }

    fn write_text(&self, out: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(out, "powercontext-hooks setup {}", self.host.as_str())?;
        writeln!(out, "  hook executable  {}", self.hook_exe.display())?;
        if self.cli.path.as_os_str().is_empty() {
            writeln!(out, "  host CLI         none (Not validated in a real host)")?;
        } else {
            writeln!(
                out,
                "  host CLI         {} {}{}",
                self.cli.path.display(),
                self.host_version,
                if self.tested { " (tested)" } else { " (NOT tested)" }
            )?;
        }
        writeln!(out, "  plugin folder    {}", self.plugin_dir.display())?;
        if let Some(p) = &self.profile {
            writeln!(out, "  DSH profile      {p}")?;
        }
        writeln!(out, "  settings the hook will use:")?;
        for s in &self.settings_lines {
            writeln!(out, "    {:<23} {}  ({})", s.name, s.value, s.origin)?;
        }
        writeln!(out, "plan:")?;
        writeln!(
            out,
            "  {:<7} {} (a copy of {}: a rebuild or `cargo clean` leaves it in place)",
            self.exe_action(),
            self.exe.to.display(),
            self.exe.from.display()
        )?;
        for f in &self.files {
            writeln!(out, "  {:<7} {}", f.action, f.path.display())?;
        }
        if let Some((f, o)) = &self.config {
            let keys: Vec<&str> = o.keys.keys().map(String::as_str).collect();
            writeln!(
                out,
                "  {:<7} {} [hosts.{}] {}",
                f.action,
                f.path.display(),
                self.host.as_str(),
                keys.join(", ")
            )?;
        }
        if let Some(f) = &self.mcp_header_file {
            writeln!(
                out,
                "  {:<7} {} (owner-only; the MCP Authorization header OpenCode reads)",
                "write",
                f.path.display()
            )?;
        }
        if let Some(p) = &self.drop_mcp_header_file {
            writeln!(out, "  {:<7} {} (no token any more)", "remove", p.display())?;
        }
        if let Some((f, o)) = &self.host_entry {
            writeln!(out, "  {:<7} {} {}", f.action, f.path.display(), o.member())?;
        }
        if let Some((f, o)) = &self.settings_hooks {
            let events: Vec<&str> = o.entries.iter().map(|h| h.event.as_str()).collect();
            writeln!(
                out,
                "  {:<7} {} hooks: {}",
                f.action,
                f.path.display(),
                events.join(", ")
            )?;
        }
        for s in &self.steps {
            writeln!(out, "  run     {}", self.step_command(*s))?;
        }
        for (action, path, what) in self.shared.lines() {
            writeln!(out, "  {action:<7} {} {what}", path.display())?;
        }
        if !self.changes() {
            writeln!(out, "  (nothing to change)")?;
        }
        for w in &self.warnings {
            writeln!(out, "warning: {w}")?;
        }
        Ok(())
    }
}

words! {
    /// What `setup` did with its plan.
    enum SetupResult {
        Planned => "planned",
        Unchanged => "unchanged",
        Installed => "installed",
        RolledBack => "rolled_back",
    }
}

fn build_plan(args: &SetupArgs, host: Host, paths: &Paths) -> Result<Plan> {
    let locate = || -> Result<(HostCli, String)> {
        if host.cli_name().is_empty() {
            // A host without a CLI (a desktop app): nothing to locate or ask for a version.
            return Ok((HostCli::none(host), String::new()));
        }
        let cli = HostCli::locate(host, args.locate.host_cli.as_deref(), &paths.env)?;
        let version = cli.version()?;
        Ok((cli, version))
    };
    let mut plan = plan_ours(args, host, paths, locate)?;
    // 4. Host registrations and entries in the host's own config, through the host's CLI.
    installer(host).plan(args, paths, &mut plan)?;
    plan.shared = crate::installer::shared_files::plan(
        host,
        &paths.env,
        &plan.url,
        plan.token.as_ref(),
        args.capture_prompts,
        plan.previous.as_ref().map(|m| &m.shared),
        &install::install_dir(&paths.state_root, host),
    )?;
    if let Ok(cli) = std::env::current_exe() {
        build_tree_warning(&plan, &cli)
            .into_iter()
            .for_each(|w| plan.warnings.push(w));
    }
    Ok(plan)
}

/// A warning when what setup writes names `cli` (an MCP headers helper, a status line) and `cli`
/// lies in a Cargo build tree: `cargo clean` or a moved clone would break those silently. The
/// hook executables are copied, so only the lines naming the CLI itself are at risk.
fn build_tree_warning(plan: &Plan, cli: &Path) -> Option<String> {
    let tree = crate::support::exe_copy::build_tree(cli)?;
    let needle = cli.to_str()?.as_bytes();
    let names = |b: &[u8]| b.windows(needle.len()).any(|w| w == needle);
    let written = plan
        .files
        .iter()
        .chain(plan.host_entry.as_ref().map(|(f, _)| f))
        .chain(plan.settings_hooks.as_ref().map(|(f, _)| f))
        .any(|f| names(&f.bytes));
    written.then(|| {
        format!(
            "this powercontext-hooks runs from the build tree {}, and {} will run it from there \
             (its MCP headers helper or status line): `cargo clean` or moving the clone breaks that. \
             Install first (`make install`, or `cargo install --locked --path .`), then run setup \
             again with the installed powercontext-hooks",
            tree.display(),
            plan.host.as_str()
        )
    })
}

/// The part of the plan that is ours alone: inputs, our plugin folder and our config file.
/// `locate` finds the host CLI and its version (after the inputs are validated).
pub(crate) fn plan_ours(
    args: &SetupArgs,
    host: Host,
    paths: &Paths,
    locate: impl FnOnce() -> Result<(HostCli, String)>,
) -> Result<Plan> {
    let inst = installer(host);
    // 1. Inputs, validated before anything else.
    let inputs = Inputs::read(args, host, paths)?;
    let mut warnings = Vec::new();

    // The host runs a copy in setup's own folder, never the build tree or install folder it
    // came from: a `cargo clean`, a moved clone or an upgrade elsewhere breaks nothing.
    let source_exe = paths.hook_exe(host);
    check_hook_exe(&source_exe)?;
    let exe = crate::support::exe_copy::Planned::new(
        &source_exe,
        crate::support::exe_copy::installed_path(&paths.state_root, host),
    )?;
    let hook_exe = exe.to.clone();
    let (cli, host_version) = locate()?;
    let tested = host.tested_versions().contains(&host_version.as_str());
    warnings.extend(version_warning(host, &host_version, tested));
    let settings_lines = inputs.setting_rows(host, paths, &mut warnings);

    // 2. Our plugin folder, rendered; same-name files we do not own stop everything.
    let previous = install::load_manifest(&paths.state_root, host)?;
    let profile = inst.profile(args, previous.as_ref())?;
    check_host_flags(args, host, profile.as_ref(), previous.as_ref())?;
    let plugin_dir = inst.plugin_dir(&cli, &install::install_dir(&paths.state_root, host))?;
    if inst.owns_plugin_dir() {
        install::check_plugin_dir(&plugin_dir)?;
    }
    let url = inputs.settings.server_url.value.as_str().to_owned();
    let files = plan_plugin_files(
        args,
        host,
        paths,
        &plugin_dir,
        (&hook_exe, &url),
        previous.as_ref(),
        &mut warnings,
    )?;

    // 3. Our config file: only the keys given on the command line.
    let (config, config_base, prior_authorization) =
        plan_config(args, host, paths, &inputs, previous.as_ref())?;

    let authorization = inputs
        .token
        .as_ref()
        .map(|(a, _)| a.clone())
        .or_else(|| inputs.settings.authorization.value.clone());
    Ok(Plan {
        host,
        exe,
        cli,
        host_version,
        tested,
        plugin_dir,
        hook_exe,
        url,
        token: inputs.token.map(|(a, _)| a),
        authorization,
        files,
        config,
        config_base,
        prior_authorization,
        host_entry: None,
        kept_entry: None,
        settings_hooks: None,
        kept_hooks: None,
        mcp_header_file: None,
        drop_mcp_header_file: None,
        pi_replace: Vec::new(),
        profile,
        steps: Vec::new(),
        shared: crate::installer::shared_files::SharedPlan::default(),
        settings_lines,
        warnings,
        previous,
        host_cli_wrote: Vec::new(),
        host_home: inst.home(&paths.env),
    })
}

/// Setup's validated inputs: the flags' server URL and token, and the settings a hook would
/// resolve with those flags on top.
struct Inputs {
    server_url: Option<BaseUrl>,
    /// The token and where it came from (`--token-env NAME`, `--token-file PATH`).
    token: Option<(Authorization, String)>,
    flags: HostOptions,
    settings: Settings,
}

impl Inputs {
    /// Parses and resolves the inputs; an invalid one is an error naming its flag.
    fn read(args: &SetupArgs, host: Host, paths: &Paths) -> Result<Self> {
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
        Ok(Self {
            server_url,
            token,
            flags,
            settings,
        })
    }

    /// The plan's settings rows (a token from the flags shown as set, never its value), with a
    /// warning for each setting the environment gives another value than its flag, and for a
    /// server URL that only the environment gives.
    fn setting_rows(&self, host: Host, paths: &Paths, warnings: &mut Vec<String>) -> Vec<SettingRow> {
        let mut rows = report::setting_rows(&self.settings);
        if let Some((_, source)) = &self.token
            && let Some(row) = rows.iter_mut().find(|r| r.name == "authorization")
        {
            row.value = "set (not shown)".to_owned();
            row.origin = format!("{source}, saved to the config file");
        }
        shadowed_flags(
            &self.flags,
            self.token.as_ref(),
            paths.settings(host, None).ok().as_ref(),
            &mut rows,
            warnings,
        );
        if matches!(self.settings.server_url.origin, Origin::Env(_)) {
            warnings.push(format!(
                "the server URL comes from {}; the hook sees it only if {} runs with that variable (pass --server-url to save it)",
                self.settings.server_url.origin,
                host.as_str()
            ));
        }
        rows
    }
}

/// The warning for a host that has no CLI to check, or whose CLI version our real-host tests do
/// not cover.
fn version_warning(host: Host, host_version: &str, tested: bool) -> Option<String> {
    if host.cli_name().is_empty() {
        Some(format!(
            "{} has no CLI to check: this integration is Not validated in a real host (built and tested \
             against its documented hook contract only)",
            host.spec().title
        ))
    } else if !tested {
        Some(format!(
            "{} {host_version} is not a version our real-host tests cover ({}); installing anyway",
            host.as_str(),
            host.tested_versions().join(", ")
        ))
    } else {
        None
    }
}

/// Refuses `--statusline` for a host without a status line, and a DSH profile other than the
/// one it is set up in.
fn check_host_flags(
    args: &SetupArgs,
    host: Host,
    profile: Option<&String>,
    previous: Option<&Manifest>,
) -> Result<()> {
    if args.statusline && !host.spec().capabilities.statusline {
        let with: Vec<&str> = Host::ALL
            .into_iter()
            .filter(|h| h.spec().capabilities.statusline)
            .map(Host::as_str)
            .collect();
        bail!("--statusline is for {} only", with.join(", "));
    }
    if let (Some(p), Some(old)) = (profile, previous.and_then(|m| m.profile.as_ref()))
        && p != old
    {
        bail!(
            "dsh is set up in profile `{old}`; run `powercontext-hooks uninstall dsh` first to move it to `{p}`"
        );
    }
    Ok(())
}

/// Our plugin folder's files, rendered from the host's templates (`hook`: the hook executable
/// and the server URL they name), each with what setup does to it. A same-name file we do not
/// own (not in the manifest, or changed since) refuses the whole setup, unless `--take-over`
/// and the host allow replacing it.
fn plan_plugin_files(
    args: &SetupArgs,
    host: Host,
    paths: &Paths,
    plugin_dir: &Path,
    (hook_exe, url): (&Path, &str),
    previous: Option<&Manifest>,
    warnings: &mut Vec<String>,
) -> Result<Vec<FileChange>> {
    let inst = installer(host);
    let hook_command = host.hook_command_value(hook_exe)?;
    let [(_, cli_command), (_, operations)] = crate::commands::explicit::shim_values(
        &std::env::current_exe().context("cannot locate this program")?,
    )?;
    let version = env!("CARGO_PKG_VERSION");
    let mut files = Vec::new();
    let mut conflicts = Vec::new();
    for (rel, template) in inst.templates() {
        let path = plugin_dir.join(rel);
        let text = install::render(
            template,
            &[
                ("hook_command", &hook_command),
                ("cli_command", &cli_command),
                ("operations", &operations),
                ("server_url", url),
                ("version", version),
            ],
        )?;
        let bytes = inst.file_bytes(rel, text, paths)?;
        let action = match install::read_opt(&path)? {
            None => Action::Create,
            Some(old) if old == bytes => Action::Keep,
            Some(old) => {
                let owned = previous
                    .and_then(|m| m.files.iter().find(|f| f.path == path))
                    .is_some_and(|f| f.sha256 == digest(&old));
                if !owned {
                    conflicts.push(path.clone());
                }
                Action::Update
            }
        };
        files.push(FileChange {
            path,
            bytes,
            action,
            private: false,
        });
    }
    if args.take_over && !conflicts.is_empty() && inst.takes_over_files(plugin_dir, warnings)? {
        conflicts.clear();
    }
    if !conflicts.is_empty() {
        let list: Vec<String> = conflicts.iter().map(|p| p.display().to_string()).collect();
        bail!(
            "refusing to overwrite files powercontext-hooks does not own (not in its manifest, or changed since): {}. \
             Move them away, then run setup again",
            list.join(", ")
        );
    }
    Ok(files)
}

/// The planned edit of our config file: its change and what we own in it (`None`: no flag sets
/// a key, or the file already reads so), the bytes it was planned from, and the user's own
/// `authorization` line, kept owner-only for uninstall.
type ConfigPlan = (
    Option<(FileChange, OwnedConfig)>,
    Option<Vec<u8>>,
    Option<FileChange>,
);

/// Plans our config file: only the keys given on the command line, in the host's table.
fn plan_config(
    args: &SetupArgs,
    host: Host,
    paths: &Paths,
    inputs: &Inputs,
    previous: Option<&Manifest>,
) -> Result<ConfigPlan> {
    let mut lines = Vec::new();
    if let Some(u) = &inputs.server_url {
        lines.push(("server_url".to_owned(), toml_string(u.as_str())));
    }
    if let Some(c) = args.capture_prompts {
        lines.push(("capture_prompts".to_owned(), c.to_string()));
    }
    if let Some((auth, _)) = &inputs.token {
        lines.push(("authorization".to_owned(), toml_string(auth.header_value())));
    }
    if lines.is_empty() {
        return Ok((None, None, None));
    }
    let path = paths
        .config_path
        .clone()
        .context("cannot find the config file location: set HOME or POWERCONTEXT_HOOKS_CONFIG")?;
    let old = install::read_opt(&path)?;
    let old_text = match &old {
        Some(b) => String::from_utf8(b.clone()).map_err(|_| anyhow!("{} is not UTF-8", path.display()))?,
        None => String::new(),
    };
    let (new_text, created) = install::config_set(&old_text, host.as_str(), &lines);
    let prev_cfg = previous.and_then(|m| m.config.clone());
    // Lines the user had before we first set these keys: uninstall puts them back.
    let mut prior = prev_cfg.as_ref().map(|c| c.previous.clone()).unwrap_or_default();
    let mut prior_authorization = None;
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
                    action: Action::Create,
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
        // Created by this setup, or by another host's (the file then goes with the last of them).
        created_file: old.is_none()
            || prev_cfg.as_ref().is_some_and(|c| c.created_file)
            || Host::ALL.into_iter().filter(|h| *h != host).any(|h| {
                install::load_manifest(&paths.state_root, h)
                    .ok()
                    .flatten()
                    .and_then(|m| m.config)
                    .is_some_and(|c| c.created_file && c.path == path)
            }),
        keys: {
            let mut keys = prev_cfg.map(|c| c.keys).unwrap_or_default();
            for (k, v) in &lines {
                keys.insert(k.clone(), digest(format!("{k} = {v}").as_bytes()));
            }
            keys
        },
        previous: prior,
    };
    let config = if old.as_deref() == Some(new_text.as_bytes()) {
        None
    } else {
        Some((
            FileChange {
                action: if old.is_some() {
                    Action::Update
                } else {
                    Action::Create
                },
                path,
                bytes: new_text.into_bytes(),
                private: inputs.token.is_some(),
            },
            owned,
        ))
    };
    Ok((config, old, prior_authorization))
}

fn fs_exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

/// Where a host's CLI keeps its own files (what even `--version` or a listing may create on a
/// first run): the only places a dry run looks for what appeared.
fn host_own_paths(host: Host, env: &Env) -> Vec<PathBuf> {
    let Some(home) = env.text("HOME").filter(|h| !h.is_empty()).map(PathBuf::from) else {
        return Vec::new();
    };
    let xdg = |var: &str, rel: &str| {
        env.text(var)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .unwrap_or_else(|| home.join(rel))
    };
    // Host match kept: what each host CLI writes on a first run is its own layout, not a column.
    match host {
        Host::ClaudeCode => {
            let dir = env
                .text("CLAUDE_CONFIG_DIR")
                .map_or_else(|| home.join(".claude"), PathBuf::from);
            vec![
                home.join(".claude.json"),
                dir.join(".claude.json"),
                dir.join("backups"),
                dir,
            ]
        }
        Host::Codex => vec![
            env.text("CODEX_HOME")
                .map_or_else(|| home.join(".codex"), PathBuf::from),
        ],
        Host::OpenCode => vec![
            xdg("XDG_CACHE_HOME", ".cache").join("opencode"),
            xdg("XDG_DATA_HOME", ".local/share").join("opencode"),
            xdg("XDG_STATE_HOME", ".local/state").join("opencode"),
            xdg("XDG_CONFIG_HOME", ".config").join("opencode"),
        ],
        Host::Pi => vec![home.join(".pi")],
        Host::Dsh => vec![home.join(".dsh")],
        // `hermes --version` records its update check under the Hermes home.
        Host::Hermes => vec![
            env.text("HERMES_HOME")
                .filter(|v| !v.trim().is_empty())
                .map_or_else(|| home.join(".hermes"), PathBuf::from),
            home.join(".hermes"),
        ],
        Host::KimiCode => vec![
            env.text("KIMI_CODE_HOME")
                .map_or_else(|| home.join(".kimi-code"), PathBuf::from),
        ],
        Host::QwenCode => vec![
            env.text("QWEN_HOME")
                .map_or_else(|| home.join(".qwen"), PathBuf::from),
        ],
        Host::GeminiCli => {
            let spec = &host.spec().config_home;
            spec.path(env.text(spec.var), home.to_str()).into_iter().collect()
        }
        Host::CopilotCli => vec![
            env.text("COPILOT_HOME")
                .map_or_else(|| home.join(".copilot"), PathBuf::from),
            xdg("XDG_CACHE_HOME", ".cache").join("copilot"),
        ],
        // No CLI runs, but its home is where anything of it would appear.
        Host::WorkBuddy => vec![
            env.text("WORKBUDDY_HOME")
                .map_or_else(|| home.join(".workbuddy"), PathBuf::from),
        ],
        Host::OpenClaw => vec![
            env.text("OPENCLAW_STATE_DIR")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .unwrap_or_else(|| home.join(".openclaw")),
        ],
        Host::Zcode => vec![home.join(".zcode")],
    }
}

fn fault(env: &Env, step: &str) -> Result<()> {
    if env.text(FAULT_VAR) == Some(step) {
        bail!("injected fault after step `{step}` ({FAULT_VAR})");
    }
    Ok(())
}

fn apply(plan: &Plan, paths: &Paths, lock: Option<&install::UserLock>) -> Result<Registrations> {
    let mut journal = Journal::default();
    journal.made_before(lock.map_or(&[][..], install::UserLock::created));
    let mut copied = None;
    let result = apply_inner(plan, paths, &mut journal, &mut copied);
    if let Err(e) = result {
        // The previous copy first: the journal then removes a folder made for the new one.
        if let Some(c) = copied {
            crate::support::exe_copy::Undo::undo(c);
        }
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
    if let Some(c) = copied {
        c.keep();
    }
    result
}

/// The host's settings file as it is before its CLI runs (see `Installer::settings_file`);
/// `None` for a host without one.
fn host_settings(plan: &Plan, paths: &Paths) -> Result<Option<install::HostSettings>> {
    let inst = installer(plan.host);
    let Some((path, _)) = inst.home(&paths.env).and_then(|h| inst.settings_file(&h)) else {
        return Ok(None);
    };
    let existing = install::read_opt(&path)?;
    let existed = existing.is_some();
    let members = match existing {
        Some(bytes) => {
            let text = String::from_utf8(bytes).map_err(|_| anyhow!("{} is not UTF-8", path.display()))?;
            crate::support::jsonc::root_keys(&text)
                .with_context(|| format!("cannot read {}: fix it first", path.display()))?
        }
        None => Vec::new(),
    };
    Ok(Some(install::HostSettings {
        path,
        members,
        existed,
    }))
}

fn apply_inner(
    plan: &Plan,
    paths: &Paths,
    journal: &mut Journal,
    copied: &mut Option<crate::support::exe_copy::Undo>,
) -> Result<Registrations> {
    let env = &paths.env;
    let manifest_path = install::manifest_path(&paths.state_root, plan.host);
    let install_dir = install::install_dir(&paths.state_root, plan.host);
    journal_before_writing(plan, paths, journal, copied)?;

    for f in plan.files.iter().filter(|f| f.action != Action::Keep) {
        install::write_atomic(&f.path, &f.bytes, f.private)?;
    }
    fault(env, "files")?;
    if let Some(f) = &plan.prior_authorization {
        journal.file(&f.path)?;
        install::write_atomic(&f.path, &f.bytes, true)?;
    }
    if let Some((f, owned)) = &plan.config {
        write_config(plan, f, owned, journal)?;
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
        journal.wrote(&install::link_target(&f.path), &f.bytes);
        fault(env, "mcp")?;
    }
    if let Some((f, _)) = &plan.settings_hooks {
        install::write_through(&f.path, &f.bytes, f.private)?;
        journal.wrote(&install::link_target(&f.path), &f.bytes);
        fault(env, "hooks")?;
    }
    if let Some(p) = &plan.drop_mcp_header_file {
        journal.file(p)?;
        std::fs::remove_file(p).with_context(|| format!("cannot remove {}", p.display()))?;
    }

    // The host's settings before its CLI first touches them, so uninstall can give them back.
    let host_settings = match plan.previous.as_ref().and_then(|m| m.host_settings.clone()) {
        Some(known) => Some(known),
        None => host_settings(plan, paths)?,
    };
    let mut regs = plan
        .previous
        .as_ref()
        .map(|m| m.registrations.clone())
        .unwrap_or_default();
    for step in &plan.steps {
        installer(plan.host).run_step(plan, paths, *step, &mut regs)?;
        fault(env, step.name())?;
    }

    // A host CLI that rewrote a linked settings file replaced the link: edit through it instead.
    journal.relink()?;
    // And one that dropped the file's byte-order mark or CRLF line ends: put them back.
    journal.restyle()?;
    // After the host CLI: Claude rewrites its settings file while installing.
    let shared = crate::installer::shared_files::apply(&plan.shared, &install_dir)?;
    fault(env, "official")?;

    // Verify the host really lists it, before declaring success.
    installer(plan.host).verify(plan, paths)?;
    fault(env, "verify")?;

    let manifest = manifest_of(plan, paths, journal, &regs, host_settings, shared);
    let bytes = install::manifest_bytes(&manifest)?;
    if install::read_opt(&manifest_path)?.as_deref() != Some(&bytes[..]) {
        install::write_atomic(&manifest_path, &bytes, false)?;
    }
    Ok(regs)
}

/// Everything setup may write, journaled before the first write (so a failure restores it byte
/// for byte), the state folders made ours, and the hook executable's copy put in place.
fn journal_before_writing(
    plan: &Plan,
    paths: &Paths,
    journal: &mut Journal,
    copied: &mut Option<crate::support::exe_copy::Undo>,
) -> Result<()> {
    let manifest_path = install::manifest_path(&paths.state_root, plan.host);
    journal.created_dirs_of(&manifest_path);
    // Checked again right before writing: a link put there since planning is not followed.
    if installer(plan.host).owns_plugin_dir() {
        install::check_plugin_dir(&plan.plugin_dir)?;
    }
    journal.created_dirs_of(&plan.plugin_dir.join("x"));
    journal.file(&manifest_path)?;
    // The state directory is the hooks' (0700, ours): created or tightened so before anything is
    // written under it, and `installs/<host>` a real folder of ours, never a link elsewhere.
    install::ensure_install_dirs(&paths.state_root, plan.host)?;
    journal.created_dirs_of(&plan.exe.to);
    *copied = Some(plan.exe.apply()?);
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
    if let Some((f, _)) = &plan.settings_hooks {
        journal.created_dirs_of(&f.path);
        journal.file(&f.path)?;
    }
    let install_dir = install::install_dir(&paths.state_root, plan.host);
    crate::installer::shared_files::journal(&plan.shared, journal, &install_dir)?;
    if !plan.steps.is_empty() {
        let home = installer(plan.host)
            .home(&paths.env)
            .context("cannot find the host's configuration directory: set HOME")?;
        // Host files the host CLI may change: snapshotted so a failed run restores them byte for byte.
        let (files, dirs) = installer(plan.host).host_files(plan, paths, &home);
        for f in &files {
            journal.host_dirs_of(f);
            journal.file(f)?;
        }
        for d in &dirs {
            journal.host_dirs_of(d);
            journal.dir(d);
        }
    }

    Ok(())
}

/// Writes our config file's planned edit, unless another program changed the file since the
/// plan read it, and checks that a hook reads back exactly what was written.
fn write_config(plan: &Plan, f: &FileChange, owned: &OwnedConfig, journal: &mut Journal) -> Result<()> {
    // Re-read and compare: another program (an editor, an older release without the lock)
    // that changed the file since the plan read it keeps its change; this run stops and
    // rolls back instead of writing over it.
    if install::read_opt(&f.path)? != plan.config_base {
        bail!(
            "{} changed while setup was running (another program edited it); nothing was written over it: \
             run setup again",
            f.path.display()
        );
    }
    install::write_through(&f.path, &f.bytes, f.private)?;
    journal.wrote(&f.path, &f.bytes);
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
    Ok(())
}

/// The manifest of a setup that succeeded: what it wrote and registered, and what it found,
/// for uninstall and the next setup.
fn manifest_of(
    plan: &Plan,
    paths: &Paths,
    journal: &Journal,
    regs: &Registrations,
    host_settings: Option<install::HostSettings>,
    shared: crate::support::install::OwnedShared,
) -> Manifest {
    Manifest {
        schema: 1,
        owner: "powercontext-hooks".to_owned(),
        host: plan.host.as_str().to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        plugin_dir: plan.plugin_dir.clone(),
        hook_exe: plan.hook_exe.clone(),
        executable: Some(OwnedFile {
            path: plan.exe.to.clone(),
            sha256: plan.exe.sha256.clone(),
        }),
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
        host_settings,
        shared,
        created_dirs: created_dirs(plan, paths, journal),
        settings_hooks: plan.owned_hooks().cloned(),
    }
}

/// The folders this setup and the ones before it created (a re-run finds them there already),
/// and those another host's setup created that now hold files of ours too: whichever host is
/// uninstalled last finds them empty and removes them.
fn created_dirs(plan: &Plan, paths: &Paths, journal: &Journal) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = plan
        .previous
        .as_ref()
        .map(|m| m.created_dirs.clone())
        .unwrap_or_default();
    let others = Host::ALL
        .into_iter()
        .filter(|h| *h != plan.host)
        .filter_map(|h| install::load_manifest(&paths.state_root, h).ok().flatten())
        .flat_map(|m| m.created_dirs)
        .filter(|d| journal.holds_ours(d));
    for d in journal.made().into_iter().chain(others) {
        if !all.contains(&d) {
            all.push(d);
        }
    }
    all
}

/// Runs `setup`.
pub fn setup(args: &SetupArgs) -> Result<ExitCode> {
    if let Err(message) = check_home(&Env::from_process()) {
        report::refuse_with(args.json, &message);
        return Ok(ExitCode::from(2));
    }
    if args.trust_only {
        return crate::commands::interop::trust_only(args).or_else(|e| report::refuse(args.json, &e));
    }
    let mut lock = None;
    let planned = Paths::resolve(&args.locate).and_then(|paths| {
        // One run at a time per user, from before the plan reads anything to the last write:
        // a plan is only ever applied to the files it was made from. A dry run changes nothing.
        if !args.dry_run {
            lock = Some(install::UserLock::take(&paths.state_root)?);
        }
        // What the host's own CLI leaves while it only answers questions (a first run's files):
        // nothing of setup's, but a dry run says exactly what appeared.
        let before = host_own_paths(args.host, &paths.env)
            .into_iter()
            .filter(|p| fs_exists(p))
            .collect::<Vec<_>>();
        let mut plan = build_plan(args, args.host, &paths)?;
        plan.host_cli_wrote = host_own_paths(args.host, &paths.env)
            .into_iter()
            .filter(|p| fs_exists(p) && !before.contains(p))
            .collect();
        Ok((plan, paths))
    });
    let (plan, paths) = match planned {
        Ok(p) => p,
        Err(e) => {
            if let Some(lock) = lock {
                install::UserLock::discard(lock);
            }
            return report::refuse(args.json, &e);
        }
    };
    let previewed = !args.dry_run && plan.changes() && report::preview(&PlanView(&plan), args.json);
    let (result, error) = if args.dry_run {
        (SetupResult::Planned, None)
    } else if !plan.changes() {
        (SetupResult::Unchanged, None)
    } else {
        match apply(&plan, &paths, lock.as_ref()) {
            Ok(_) => (SetupResult::Installed, None),
            Err(e) => (SetupResult::RolledBack, Some(format!("{e:#}"))),
        }
    };
    if result != SetupResult::Installed {
        if let Some(lock) = lock {
            install::UserLock::discard(lock);
        }
    } else {
        drop(lock);
    }
    report::emit(
        &SetupReport {
            plan: &plan,
            previewed,
            result,
            error,
        },
        args.json,
    )
}

/// A plan, as text.
struct PlanView<'p>(&'p Plan);

impl std::fmt::Display for PlanView<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.write_text(f)
    }
}

/// What `setup` says: its plan, and what became of it.
struct SetupReport<'p> {
    plan: &'p Plan,
    /// The plan was shown before it was applied.
    previewed: bool,
    result: SetupResult,
    error: Option<String>,
}

impl serde::Serialize for SetupReport<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        let mut v = self.plan.to_json();
        v["result"] = json!(self.result);
        v["ok"] = json!(self.error.is_none());
        if let Some(e) = &self.error {
            v["error"] = json!(e);
        }
        v.serialize(s)
    }
}

impl std::fmt::Display for SetupReport<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let plan = self.plan;
        if !self.previewed {
            plan.write_text(f)?;
        }
        let host = plan.host.as_str();
        match self.result {
            SetupResult::Planned if plan.host_cli_wrote.is_empty() => {
                return writeln!(f, "dry run: nothing was changed");
            }
            SetupResult::Planned => {
                let list: Vec<String> = plan
                    .host_cli_wrote
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect();
                return writeln!(
                    f,
                    "dry run: setup changed nothing, but {} created {} while answering its read-only questions \
                     (its own first-run files, not setup's)",
                    plan.cli.path.display(),
                    list.join(", ")
                );
            }
            SetupResult::RolledBack => return Ok(()),
            SetupResult::Unchanged => writeln!(f, "already set up: nothing changed")?,
            SetupResult::Installed => writeln!(f, "done: {host} is set up")?,
        }
        writeln!(f, "next: powercontext-hooks doctor {host}")?;
        writeln!(f, "undo: powercontext-hooks uninstall {host}")?;
        if let Some(note) = installer(plan.host).note() {
            writeln!(f, "note: {note}")?;
        }
        Ok(())
    }
}

impl report::Report for SetupReport<'_> {
    fn exit_code(&self) -> ExitCode {
        if self.error.is_some() {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        }
    }
    fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }
}

#[cfg(test)]
mod tests {
    //! Setup's own pure parts; its plans per host are tested with the installers (`hosts/tests.rs`).

    use super::*;

    /// Setup's request for `host` with no flag set.
    fn request(host: Host) -> SetupArgs {
        SetupArgs {
            host,
            profile: None,
            server_url: None,
            token_env: None,
            token_file: None,
            capture_prompts: None,
            locate: crate::support::paths::Locate {
                bin_dir: None,
                host_cli: None,
            },
            statusline: false,
            take_over: false,
            trust_only: false,
            dry_run: true,
            json: false,
        }
    }

    /// Paths into a fresh temporary folder (removed first), with `env` on top of its HOME.
    fn temp_paths(name: &str, env: &[(&str, &str)]) -> Paths {
        let root = std::env::temp_dir().join(format!("pc-setup-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).unwrap();
        let home = root.join("home").display().to_string();
        let mut pairs = vec![("HOME".to_owned(), home)];
        pairs.extend(env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
        Paths {
            env: Env::from_pairs(pairs),
            state_root: root.join("state"),
            config_path: Some(root.join("config.toml")),
            bin_dir: root.join("bin"),
        }
    }

    #[test]
    fn no_flag_plans_no_config_edit() {
        let paths = temp_paths("noflag", &[]);
        let args = request(Host::Codex);
        let inputs = Inputs::read(&args, Host::Codex, &paths).unwrap();
        let (config, base, prior) = plan_config(&args, Host::Codex, &paths, &inputs, None).unwrap();
        assert!(config.is_none() && base.is_none() && prior.is_none());
        let _ = std::fs::remove_dir_all(paths.state_root.parent().unwrap());
    }

    #[test]
    fn the_config_plan_keeps_the_users_own_lines_for_uninstall_and_their_token_aside() {
        let paths = temp_paths("config", &[("MY_TOKEN", "sk-new-0123456789abcdef")]);
        let path = paths.config_path.clone().unwrap();
        let old = "# mine\n[hosts.codex]\nserver_url = \"http://127.0.0.1:1\"\nauthorization = \"Bearer sk-old-0123456789abcdef\"\n";
        std::fs::write(&path, old).unwrap();
        let mut args = request(Host::Codex);
        args.server_url = Some("http://127.0.0.1:9".to_owned());
        args.token_env = Some("MY_TOKEN".to_owned());
        let inputs = Inputs::read(&args, Host::Codex, &paths).unwrap();
        let (config, base, prior) = plan_config(&args, Host::Codex, &paths, &inputs, None).unwrap();
        assert_eq!(
            base.as_deref(),
            Some(old.as_bytes()),
            "planned from the bytes read"
        );
        let (change, owned) = config.expect("an edit");
        assert_eq!((change.action, change.private), (Action::Update, true));
        let text = String::from_utf8(change.bytes).unwrap();
        assert!(
            text.starts_with("# mine\n") && text.contains("http://127.0.0.1:9"),
            "{text}"
        );
        assert!(!text.contains("127.0.0.1:1\""), "{text}");
        assert!(!owned.created_file && !owned.created_table);
        let keys: Vec<&str> = owned.keys.keys().map(String::as_str).collect();
        assert_eq!(keys, ["authorization", "server_url"]);
        // The user's URL line comes back on uninstall; their token line waits owner-only
        // beside the manifest, never in it.
        assert_eq!(
            owned.previous.get("server_url").map(String::as_str),
            Some("server_url = \"http://127.0.0.1:1\"")
        );
        assert!(!owned.previous.contains_key("authorization"));
        let prior = prior.expect("the user's token line kept aside");
        assert_eq!(
            prior.bytes,
            b"authorization = \"Bearer sk-old-0123456789abcdef\"\n"
        );
        assert!(prior.private && prior.action == Action::Create);
        assert!(
            prior.path.starts_with(&paths.state_root),
            "{}",
            prior.path.display()
        );
        // Nothing was written.
        assert_eq!(std::fs::read_to_string(&path).unwrap(), old);
        let _ = std::fs::remove_dir_all(paths.state_root.parent().unwrap());
    }

    #[test]
    fn a_config_that_already_reads_so_is_left_alone_and_a_new_one_is_ours() {
        let paths = temp_paths("same", &[]);
        let path = paths.config_path.clone().unwrap();
        let mut args = request(Host::Pi);
        args.capture_prompts = Some(false);
        let inputs = Inputs::read(&args, Host::Pi, &paths).unwrap();
        let (config, base, _) = plan_config(&args, Host::Pi, &paths, &inputs, None).unwrap();
        assert!(base.is_none());
        let (change, owned) = config.unwrap();
        assert_eq!(change.action, Action::Create);
        assert!(!change.private, "no token in it");
        assert!(owned.created_file && owned.created_table);
        std::fs::write(&path, &change.bytes).unwrap();
        let (again, base, _) = plan_config(&args, Host::Pi, &paths, &inputs, None).unwrap();
        assert!(again.is_none(), "nothing to change");
        assert_eq!(base, Some(change.bytes));
        let _ = std::fs::remove_dir_all(paths.state_root.parent().unwrap());
    }

    #[test]
    fn an_untested_or_missing_host_cli_is_warned_about_and_a_tested_one_is_not() {
        let tested = Host::Codex.tested_versions()[0];
        assert_eq!(version_warning(Host::Codex, tested, true), None);
        let w = version_warning(Host::Codex, "0.0.1", false).unwrap();
        assert!(
            w.contains("0.0.1 is not a version our real-host tests cover") && w.contains(tested),
            "{w}"
        );
        let w = version_warning(Host::WorkBuddy, "", false).unwrap();
        assert!(w.contains("Not validated in a real host"), "{w}");
    }

    #[test]
    fn the_status_line_flag_and_a_moved_dsh_profile_are_refused() {
        let mut args = request(Host::Codex);
        args.statusline = true;
        let err = check_host_flags(&args, Host::Codex, None, None)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("--statusline is for ") && err.contains("claude-code"),
            "{err}"
        );
        args.host = Host::ClaudeCode;
        check_host_flags(&args, Host::ClaudeCode, None, None).unwrap();
        let previous = Manifest {
            executable: None,
            schema: 1,
            owner: "powercontext-hooks".to_owned(),
            host: "dsh".to_owned(),
            version: "0".to_owned(),
            plugin_dir: PathBuf::from("/p"),
            hook_exe: PathBuf::from("/x"),
            files: Vec::new(),
            config: None,
            registrations: Registrations::default(),
            host_entry: None,
            profile: Some("web".to_owned()),
            host_settings: None,
            shared: crate::support::install::OwnedShared::default(),
            created_dirs: Vec::new(),
            settings_hooks: None,
        };
        let args = request(Host::Dsh);
        let web = "web".to_owned();
        check_host_flags(&args, Host::Dsh, Some(&web), Some(&previous)).unwrap();
        let cli = "cli".to_owned();
        let err = check_host_flags(&args, Host::Dsh, Some(&cli), Some(&previous))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("set up in profile `web`") && err.contains("uninstall dsh"),
            "{err}"
        );
    }

    #[test]
    fn a_dry_run_watches_the_folders_each_host_cli_writes_moved_by_their_variables() {
        let env = Env::from_pairs([("HOME", "/h"), ("CODEX_HOME", "/c"), ("XDG_CACHE_HOME", "/x")]);
        assert_eq!(host_own_paths(Host::Codex, &env), [PathBuf::from("/c")]);
        let claude = host_own_paths(Host::ClaudeCode, &Env::from_pairs([("HOME", "/h")]));
        assert!(
            claude.contains(&PathBuf::from("/h/.claude.json"))
                && claude.contains(&PathBuf::from("/h/.claude"))
        );
        assert!(host_own_paths(Host::OpenCode, &env).contains(&PathBuf::from("/x/opencode")));
        for host in Host::ALL {
            assert!(!host_own_paths(host, &env).is_empty(), "{host}");
            // Without a HOME there is nothing to watch, and nothing is guessed.
            assert!(host_own_paths(host, &Env::default()).is_empty(), "{host}");
        }
    }

    #[test]
    fn a_relative_home_is_refused_with_its_fix_and_an_unset_one_is_left_to_the_command() {
        let err = check_home(&Env::from_pairs([("HOME", "rel/home")])).unwrap_err();
        assert!(
            err.contains("not an absolute path") && err.contains("set HOME"),
            "{err}"
        );
        assert_eq!(check_home(&Env::default()), Ok(()));
        assert_eq!(
            check_home(&Env::from_pairs([("HOME", "/no/such/home/at/all")])),
            Ok(())
        );
    }

    #[test]
    fn a_variable_that_outranks_a_flag_is_named_in_a_warning() {
        let env = Env::from_pairs([("POWERCONTEXT_PI_SERVER_URL", "http://127.0.0.1:7")]);
        let hook = Settings::resolve(&Layers {
            host: Host::Pi,
            env: &env,
            flags: None,
            file: None,
        })
        .unwrap();
        let flags = HostOptions {
            server_url: Some("http://127.0.0.1:9".to_owned()),
            ..HostOptions::default()
        };
        let mut rows = report::setting_rows(&hook);
        let (mut warnings, before) = (Vec::new(), rows.len());
        shadowed_flags(&flags, None, Some(&hook), &mut rows, &mut warnings);
        assert_eq!(rows.len(), before);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains("POWERCONTEXT_PI_SERVER_URL") && warnings[0].contains("--server-url"));
        // The same value, or no environment layer, warns about nothing.
        let mut quiet = Vec::new();
        let same = HostOptions {
            server_url: Some("http://127.0.0.1:7".to_owned()),
            ..HostOptions::default()
        };
        shadowed_flags(&same, None, Some(&hook), &mut rows, &mut quiet);
        shadowed_flags(&flags, None, None, &mut rows, &mut quiet);
        assert!(quiet.is_empty(), "{quiet:?}");
    }
}
