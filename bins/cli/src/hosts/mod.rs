//! One installer per host: the [`Installer`] trait and [`installer`], which setup, uninstall and
//! doctor ask for everything that differs between hosts (templates, plan, host CLI calls,
//! unregistering, activation checks, synthetic doctor calls). It owns no shared mechanics (plans,
//! journals, manifests, file writes stay in setup and install) and never writes a file itself.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use powercontext_hooks_core::env::Env;
use powercontext_hooks_core::official;
use serde_json::Value;

use crate::doctor::{Report, Tier};
use crate::host_cli::HostCli;
use crate::install::{self, Host, Manifest, OwnedEntry, Registrations};
use crate::jsonc;
use crate::setup::{Action, FileChange, Paths, Plan, SetupArgs, Step, value_digest};
use crate::uninstall::{Done, Kept};

mod claude_code;
pub(crate) mod codex;
mod dsh;
pub(crate) mod hermes;
mod kimi_code;
pub(crate) use kimi_code::package_files as kimi_package;
mod marketplace;
mod openclaw;
pub(crate) mod opencode;
mod pi;
pub(crate) mod settings_hooks;
mod zcode;

/// What setup, uninstall and doctor need to know of one host.
pub(crate) trait Installer: Sync {
    /// The plugin folder template: (relative path, text with `{{…}}` placeholders).
    fn templates(&self) -> &'static [(&'static str, &'static str)];

    /// The host's config home when the environment names none of its own.
    fn home(&self, env: &Env) -> Option<PathBuf>;

    /// The plugin's folder name in the official source tree
    /// (`integrations/<host>/plugins/<folder>`), as the official installer looks for it.
    fn official_folder(&self) -> &'static str {
        "powercontext"
    }

    /// `--profile`, validated (only DSH has profiles).
    fn profile(&self, args: &SetupArgs, _previous: Option<&Manifest>) -> Result<Option<String>> {
        if args.profile.is_some() {
            anyhow::bail!("--profile is for dsh only");
        }
        Ok(None)
    }

    /// Where the plugin folder goes: ours under `installs/<host>/plugin` unless the host decides.
    fn plugin_dir(&self, _cli: &HostCli, install_dir: &Path) -> Result<PathBuf> {
        Ok(install_dir.join("plugin"))
    }

    /// Whether the plugin folder is ours alone (refused when it is a link or not a real folder);
    /// false for a host folder shared with the user's other plugins.
    fn owns_plugin_dir(&self) -> bool {
        true
    }

    /// A rendered template file's bytes.
    fn file_bytes(&self, _rel: &str, text: String, _paths: &Paths) -> Result<Vec<u8>> {
        Ok(text.into_bytes())
    }

    /// Whether `--take-over` may replace same-name files we do not own in `plugin_dir`.
    fn takes_over_files(&self, _plugin_dir: &Path, _warnings: &mut Vec<String>) -> Result<bool> {
        Ok(false)
    }

    /// This host's part of setup's plan: registrations, host config entries, warnings.
    fn plan(&self, args: &SetupArgs, paths: &Paths, plan: &mut Plan) -> Result<()>;

    /// The host CLI calls one planned step makes (argument lists).
    fn commands(&self, _plan: &Plan, _step: Step) -> Vec<Vec<String>> {
        Vec::new()
    }

    /// One planned step as the plan prints it.
    fn describe(&self, plan: &Plan, step: Step) -> String {
        describe_calls(&plan.cli, &self.commands(plan, step))
    }

    /// Runs one planned step, recording the registrations it made.
    fn run_step(&self, plan: &Plan, _paths: &Paths, step: Step, regs: &mut Registrations) -> Result<()> {
        run_all(&plan.cli, &self.commands(plan, step))?;
        regs.plugin |= step != Step::Replace;
        Ok(())
    }

    /// Host files and folders the host CLI may change (snapshotted for rollback).
    fn host_files(&self, _plan: &Plan, _paths: &Paths, _home: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
        (Vec::new(), Vec::new())
    }

    /// The host's own settings file its CLI rewrites while installing, and the top-level members
    /// that CLI adds there and leaves behind empty (`{}`) when uninstalling.
    fn settings_file(&self, _home: &Path) -> Option<(PathBuf, &'static [&'static str])> {
        None
    }

    /// Proves the host really took the install, before setup declares success.
    fn verify(&self, plan: &Plan, paths: &Paths) -> Result<()>;

    /// A line printed after setup, if the host needs one.
    fn note(&self) -> Option<&'static str> {
        None
    }

    /// Undoes the registrations setup made, through the host CLI (a dry run only lists them).
    fn unregister(&self, _m: &Manifest, _undo: &mut Undo<'_>) -> Result<()> {
        Ok(())
    }

    /// Doctor's activated tier: does the host itself list, trust or load our plugin?
    fn check_activated(&self, a: &Activation<'_>, r: &mut Report);

    /// Doctor's synthetic hook calls: (arguments, stdin payload), run in order.
    fn synthetic_calls(&self, cwd: &str, session: &str, prompt: &str) -> Calls;

    /// Where the context sits in one line of the hook's answer.
    fn context<'a>(&self, answer: &'a Value) -> &'a Value;

    /// Why a set-up host may not be firing, and the fix: (likely causes, fix).
    fn silence_causes(&self) -> (&'static str, &'static str);
}

/// Doctor's synthetic hook calls: (arguments, stdin payload).
pub(crate) type Calls = Vec<(Vec<&'static str>, Value)>;

/// The installer of one host.
pub(crate) fn installer(host: Host) -> &'static dyn Installer {
    // Host match kept: the dispatch to each host's installer, the one place that picks it.
    match host {
        Host::ClaudeCode => &claude_code::ClaudeCode,
        Host::Codex => &codex::Codex,
        Host::OpenCode => &opencode::OpenCode,
        Host::Pi => &pi::Pi,
        Host::Dsh => &dsh::Dsh,
        Host::Hermes => &hermes::Hermes,
        Host::KimiCode => &kimi_code::KimiCode,
        Host::QwenCode => &settings_hooks::SettingsHooks(
            Host::QwenCode,
            "powercontext-hooks setup qwen-code (puts our entries back into Qwen Code's settings.json)",
        ),
        Host::GeminiCli => &settings_hooks::SettingsHooks(
            Host::GeminiCli,
            "powercontext-hooks setup gemini-cli (puts our entries back into Gemini CLI's settings.json)",
        ),
        Host::CopilotCli => &settings_hooks::SettingsHooks(
            Host::CopilotCli,
            "powercontext-hooks setup copilot-cli (puts our entries back into Copilot CLI's settings.json)",
        ),
        Host::WorkBuddy => &settings_hooks::SettingsHooks(
            Host::WorkBuddy,
            "powercontext-hooks setup workbuddy (puts our entry back into WorkBuddy's settings.json), then restart WorkBuddy",
        ),
        Host::OpenClaw => &openclaw::OpenClaw,
        Host::Zcode => &zcode::Zcode,
    }
}

/// Uninstall's undoing of host registrations: what it did (or would do) and what it left.
pub(crate) struct Undo<'a> {
    pub cli: &'a HostCli,
    pub paths: &'a Paths,
    /// Only list what would be done.
    pub dry: bool,
    /// Host CLI calls and files removed.
    pub actions: Vec<Done>,
    /// What was left because it is not ours any more.
    pub kept: Vec<Kept>,
}

impl Undo<'_> {
    /// Runs (unless dry) and lists one host CLI call.
    pub fn run(&mut self, a: &[&str]) -> Result<()> {
        self.actions.push(Done::command(self.cli.display(a)));
        if !self.dry {
            self.cli.run_ok(a)?;
        }
        Ok(())
    }
}

/// What doctor's activation check works from.
pub(crate) struct Activation<'a> {
    pub cli: &'a HostCli,
    /// Our manifest; `None` when the official installer set the host up.
    pub manifest: Option<&'a Manifest>,
    pub paths: &'a Paths,
    /// `powercontext-hooks setup <host>`, the usual fix.
    pub setup_cmd: &'a str,
}

/// Planned host CLI calls as the plan prints them.
/// The MCP headers helper setup gives `host`'s plugin MCP server: our CLI's `mcp-headers <host>`,
/// with our config file and the location variables this setup saw named on the line (Codex gives
/// a helper only HOME and PATH). It holds no token, only where to find it.
pub(crate) fn headers_helper(host: Host, paths: &Paths) -> Result<String> {
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
    install::mcp_headers_command(&cli, host, paths.config_path.as_deref(), &env)
}

/// A plugin's rendered `.mcp.json` with `field` (the host's name for a headers helper) set to
/// `helper` on the `powercontext` server.
pub(crate) fn mcp_with_helper(rendered: &str, field: &str, helper: &str) -> Result<Vec<u8>> {
    let mut v: Value =
        serde_json::from_str(rendered).context("internal error: an .mcp.json template is not JSON")?;
    let server = v["mcpServers"]["powercontext"]
        .as_object_mut()
        .context("internal error: an .mcp.json template has no powercontext server")?;
    server.insert(field.to_owned(), Value::from(helper));
    let mut bytes = serde_json::to_vec_pretty(&v)?;
    bytes.push(b'\n');
    Ok(bytes)
}

fn describe_calls(cli: &HostCli, calls: &[Vec<String>]) -> String {
    let shown: Vec<String> = calls
        .iter()
        .map(|a| cli.display(&a.iter().map(String::as_str).collect::<Vec<_>>()))
        .collect();
    shown.join("; ")
}

/// An argument list as owned strings.
fn argv(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| (*s).to_owned()).collect()
}

/// Runs planned host CLI calls in order, each required to succeed.
fn run_all(cli: &HostCli, calls: &[Vec<String>]) -> Result<()> {
    for a in calls {
        cli.run_ok(&a.iter().map(String::as_str).collect::<Vec<_>>())?;
    }
    Ok(())
}

/// A host's config home: `$var` when set, else `~/<rel>`.
/// Where the context sits in one line of a command hook's answer, by the host's output channel.
fn channel_context(host: Host, answer: &Value) -> &Value {
    use powercontext_hooks_core::host::OutputChannel;
    match host.spec().output {
        OutputChannel::HookSpecificOutput => &answer["hookSpecificOutput"]["additionalContext"],
        OutputChannel::TopLevelAdditionalContext => &answer["additionalContext"],
        OutputChannel::Message => &answer["message"],
        OutputChannel::Context => &answer["context"],
        // A shim host's installer reads its own protocol's answer.
        OutputChannel::Shim => &Value::Null,
    }
}

/// Doctor's synthetic prompt event for a command-hook host: its prompt event's name, the
/// working directory and the prompt (Claude-style snake_case payload).
fn prompt_event(host: Host, cwd: &str, prompt: &str) -> Value {
    serde_json::json!({"hook_event_name": host.spec().events.prompt, "cwd": cwd, "prompt": prompt})
}

/// The host's config home from its row in the host table (`$var`, else `$HOME/<rel>`).
fn table_home(env: &Env, host: Host) -> Option<PathBuf> {
    let home = &host.spec().config_home;
    home_from(env, home.var, home.rel)
}

fn home_from(env: &Env, var: &str, rel: &str) -> Option<PathBuf> {
    if let Some(v) = env.text(var).filter(|v| !v.is_empty() && !var.is_empty()) {
        return Some(PathBuf::from(v));
    }
    env.text("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| Path::new(h).join(rel))
}

/// A planned member of a host's JSONC config, and the owned entry kept when it is unchanged.
pub(crate) type EntryPlan = (Option<(FileChange, OwnedEntry)>, Option<OwnedEntry>);

/// Plans our member `parent.key` = `want` in a host's JSONC config (`text`: its contents, `None`
/// when there is no file): inserted when absent, updated only while it is still what we wrote.
/// `None` when the member is there and not ours (the caller refuses or warns).
fn plan_entry(
    path: &Path,
    text: Option<&str>,
    (parent, key): (&str, &str),
    want: &Value,
    owned: Option<&OwnedEntry>,
) -> Result<Option<EntryPlan>> {
    let change = |bytes: String, action| FileChange {
        path: path.to_path_buf(),
        bytes: bytes.into_bytes(),
        action,
        private: false,
    };
    if let Some(text) = text
        && let Some(current) = jsonc::get(text, parent, key)?
    {
        let Some(o) = owned.filter(|o| o.path == path && o.sha256 == value_digest(&current)) else {
            return Ok(None);
        };
        if &current == want {
            return Ok(Some((None, Some(o.clone()))));
        }
        let entry = OwnedEntry {
            sha256: value_digest(want),
            ..o.clone()
        };
        let new = jsonc::replace(text, parent, key, want)?;
        return Ok(Some((Some((change(new, Action::Update), entry)), None)));
    }
    let (new, inserted) = jsonc::insert(text.unwrap_or("{}\n"), parent, key, want).with_context(|| {
        let at = if parent.is_empty() {
            key.to_owned()
        } else {
            format!("{parent}.{key}")
        };
        format!("cannot add `{at}` to {}: fix that file first", path.display())
    })?;
    let entry = OwnedEntry {
        path: path.to_path_buf(),
        parent: parent.to_owned(),
        key: key.to_owned(),
        sha256: value_digest(want),
        created_file: text.is_none(),
        inserted,
    };
    let action = if text.is_none() {
        Action::Create
    } else {
        Action::Update
    };
    Ok(Some((Some((change(new, action), entry)), None)))
}

/// Whether the planned host entry still holds what setup wrote.
fn entry_holds(plan: &Plan) -> Result<bool> {
    let Some((f, o)) = &plan.host_entry else {
        return Ok(true);
    };
    let bytes = install::read_opt(&f.path)?.unwrap_or_default();
    let text = String::from_utf8(bytes).with_context(|| format!("{} is not UTF-8", f.path.display()))?;
    Ok(jsonc::get(&text, &o.parent, &o.key)?.as_ref().map(value_digest) == Some(o.sha256.clone()))
}

/// Pi, DSH and OpenCode in doctor: our plugin folder and profile, or what the official
/// `powercontext setup` installed (listed in clients.json); `None` (reported) when neither.
fn package_source(a: &Activation<'_>, r: &mut Report) -> Option<(PathBuf, Option<String>)> {
    match (a.manifest, official::clients_entry(a.cli.host, &a.paths.env)) {
        (Some(m), _) => Some((m.plugin_dir.clone(), m.profile.clone())),
        (None, Some((_, entry))) => Some((
            official_package_dir(a.cli.host, a.paths),
            entry["profile"].as_str().map(str::to_owned),
        )),
        (None, None) => {
            r.fail(
                Tier::Activated,
                "plugin loaded",
                "not set up by powercontext-hooks",
                a.setup_cmd,
            );
            None
        }
    }
}

/// Where the official `powercontext setup pi` copies its package: `$POWERCONTEXT_HOME` (else
/// `~/.local/share/powercontext`) `/plugins/pi`. Other hosts are found through their own CLI.
fn official_package_dir(host: Host, paths: &Paths) -> PathBuf {
    let data = paths
        .env
        .text(powercontext_hooks_core::variables::HOME)
        .filter(|v| !v.trim().is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            paths
                .env
                .text("HOME")
                .map(|h| Path::new(h).join(".local/share/powercontext"))
        })
        .unwrap_or_default();
    data.join("plugins").join(host.as_str())
}

/// Reads a host config file we are about to edit: UTF-8 and parsing as JSONC, or the error
/// naming it (`what`: whose config it is).
fn read_jsonc(path: &Path, what: &str) -> Result<Option<String>> {
    use anyhow::Context as _;
    let Some(bytes) = install::read_opt(path)? else {
        return Ok(None);
    };
    let text = String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{} is not UTF-8", path.display()))?;
    jsonc::parse(&text).with_context(|| format!("cannot read {} ({what}): fix it first", path.display()))?;
    Ok(Some(text))
}

#[cfg(test)]
mod tests;
