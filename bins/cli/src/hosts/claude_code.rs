//! Claude Code's installer: its plugin templates, the local marketplace registration through
//! `claude plugin …`, the optional status line in its `settings.json`, and doctor's synthetic
//! `UserPromptSubmit`. It never replaces a status line or marketplace that is not ours.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use powercontext_hooks_core::env::Env;
use serde_json::{Value, json};

use super::common::{
    EntryPlan, argv, channel_context, entry_holds, headers_helper, mcp_with_helper, plan_entry, prompt_event,
    read_jsonc, table_home,
};
use super::marketplace::{Market, enabled_in};
use crate::installer::checks::Report;
use crate::installer::contract::{Activation, Calls, Installer, Undo, run_all};
use crate::installer::plan::{Plan, SetupArgs, Step};
use crate::support::host_cli::HostCli;
use crate::support::install::{self, Host, MARKETPLACE, Manifest, PLUGIN_ID, Registrations};
use crate::support::paths::Paths;

pub(super) struct ClaudeCode;

/// Claude Code's name for an MCP server's headers helper (a command printing a JSON object).
pub(super) const HELPER_FIELD: &str = "headersHelper";

const MARKET: Market = Market {
    marketplace,
    enabled,
    remove_plugin: &["plugin", "uninstall", PLUGIN_ID, "--scope", "user"],
    remove_marketplace: &["plugin", "marketplace", "remove", MARKETPLACE],
    enable_fix: Some("claude plugin enable powercontext@powercontext"),
    remove_unlisted: false,
};

impl Installer for ClaudeCode {
    fn templates(&self) -> &'static [(&'static str, &'static str)] {
        &[
            (
                ".claude-plugin/marketplace.json",
                include_str!("../../../../installers/claude-code/.claude-plugin/marketplace.json"),
            ),
            (
                ".claude-plugin/plugin.json",
                include_str!("../../../../installers/claude-code/.claude-plugin/plugin.json"),
            ),
            (
                ".mcp.json",
                include_str!("../../../../installers/claude-code/.mcp.json"),
            ),
            (
                "hooks/hooks.json",
                include_str!("../../../../installers/claude-code/hooks/hooks.json"),
            ),
        ]
    }

    fn home(&self, env: &Env) -> Option<PathBuf> {
        table_home(env, Host::ClaudeCode)
    }

    fn file_bytes(&self, rel: &str, text: String, paths: &Paths) -> Result<Vec<u8>> {
        if rel == ".mcp.json" {
            return mcp_with_helper(&text, HELPER_FIELD, &headers_helper(Host::ClaudeCode, paths)?);
        }
        Ok(text.into_bytes())
    }

    fn plan(&self, args: &SetupArgs, paths: &Paths, plan: &mut Plan) -> Result<()> {
        // Once installed, a re-run keeps the status line in step (the CLI may have moved).
        if args.statusline || plan.previous.as_ref().is_some_and(|m| m.host_entry.is_some()) {
            let home = self
                .home(&paths.env)
                .context("cannot find Claude Code's configuration directory: set HOME")?;
            (plan.host_entry, plan.kept_entry) = plan_statusline(
                &home.join("settings.json"),
                &statusline_value()?,
                plan.previous.as_ref(),
                &mut plan.warnings,
            )?;
        }
        MARKET.plan(plan, args.take_over, false)
    }

    fn commands(&self, plan: &Plan, step: Step) -> Vec<Vec<String>> {
        let dir = plan.plugin_dir.display().to_string();
        match step {
            Step::Replace => vec![argv(MARKET.remove_plugin), argv(MARKET.remove_marketplace)],
            Step::Marketplace => vec![argv(&["plugin", "marketplace", "add", &dir, "--scope", "user"])],
            Step::Install => vec![argv(&["plugin", "install", PLUGIN_ID, "--scope", "user"])],
            Step::Enable => vec![argv(&["plugin", "enable", PLUGIN_ID, "--scope", "user"])],
            Step::Trust => Vec::new(),
        }
    }

    fn run_step(&self, plan: &Plan, _paths: &Paths, step: Step, regs: &mut Registrations) -> Result<()> {
        if step == Step::Replace {
            return MARKET.replace(&plan.cli);
        }
        run_all(&plan.cli, &self.commands(plan, step))?;
        regs.marketplace |= step == Step::Marketplace;
        regs.plugin |= step == Step::Install;
        Ok(())
    }

    fn host_files(&self, _plan: &Plan, _paths: &Paths, home: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
        (
            vec![
                home.join("settings.json"),
                home.join("plugins/known_marketplaces.json"),
                home.join("plugins/installed_plugins.json"),
            ],
            vec![
                home.join("plugins/cache/powercontext"),
                home.join("plugins/data/powercontext-powercontext"),
            ],
        )
    }

    fn settings_file(&self, home: &Path) -> Option<(PathBuf, &'static [&'static str])> {
        Some((
            home.join("settings.json"),
            &["enabledPlugins", "extraKnownMarketplaces", "pluginConfigs"],
        ))
    }

    fn verify(&self, plan: &Plan, _paths: &Paths) -> Result<()> {
        MARKET.verify(plan)?;
        // `claude plugin …` rewrites settings.json: our status line must have survived it.
        if let Some((f, _)) = &plan.host_entry
            && !entry_holds(plan)?
        {
            bail!("{} does not hold our status line after setup", f.path.display());
        }
        Ok(())
    }

    fn unregister(&self, m: &Manifest, undo: &mut Undo<'_>) -> Result<()> {
        MARKET.unregister(m, undo)
    }

    fn check_activated(&self, a: &Activation<'_>, r: &mut Report) {
        MARKET.check(a, r);
    }

    fn synthetic_calls(&self, cwd: &str, _session: &str, prompt: &str) -> Calls {
        vec![(Vec::new(), prompt_event(Host::ClaudeCode, cwd, prompt))]
    }

    fn context<'a>(&self, answer: &'a Value) -> &'a Value {
        channel_context(Host::ClaudeCode, answer)
    }

    fn silence_causes(&self) -> (&'static str, &'static str) {
        (
            "the Claude Code plugin is disabled or was dropped by an upgrade (`claude plugin list`), or hooks are \
             off (`disableAllHooks` in Claude Code's settings)",
            "claude plugin enable powercontext@powercontext --scope user, or powercontext-hooks setup claude-code",
        )
    }
}

/// Where `claude plugin marketplace list --json` says the `powercontext` marketplace points.
fn marketplace(cli: &HostCli) -> Result<Option<PathBuf>> {
    Ok(marketplace_in(&cli.json(&[
        "plugin",
        "marketplace",
        "list",
        "--json",
    ])?))
}

fn marketplace_in(list: &Value) -> Option<PathBuf> {
    list.as_array()
        .into_iter()
        .flatten()
        .find(|m| m["name"] == MARKETPLACE)
        .map(|m| PathBuf::from(m["path"].as_str().or(m["installLocation"].as_str()).unwrap_or("")))
}

/// Our plugin in `claude plugin list --json`.
fn enabled(cli: &HostCli) -> Result<Option<bool>> {
    let list = cli.json(&["plugin", "list", "--json"])?;
    Ok(enabled_in(list.as_array().into_iter().flatten(), "id"))
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
pub(super) fn plan_statusline(
    settings: &Path,
    want: &Value,
    previous: Option<&Manifest>,
    warnings: &mut Vec<String>,
) -> Result<EntryPlan> {
    let key = install::STATUSLINE_KEY;
    let text = read_jsonc(settings, "Claude Code's settings")?;
    let owned = previous.and_then(|m| m.host_entry.as_ref());
    if let Some(planned) = plan_entry(settings, text.as_deref(), ("", key), want, owned)? {
        return Ok(planned);
    }
    warnings.push(format!(
        "Claude Code already has a status line (`{key}` in {}); it is kept and ours is not installed",
        settings.display()
    ));
    Ok((None, None))
}
