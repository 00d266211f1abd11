//! The Claude-style local marketplace Claude Code and Codex share: planning its registration from
//! what the host lists, undoing it, and doctor's plugin and marketplace checks. The host modules
//! give it their listings and argument lists; it never invents a host CLI call of its own.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use serde_json::Value;

use crate::installer::checks::{Report, Tier};
use crate::installer::contract::{Activation, Undo};
use crate::installer::plan::{Plan, Step};
use crate::installer::undo::{Done, Kept};
use crate::support::host_cli::HostCli;
use crate::support::install::{self, Host, HostExt, Manifest};

/// One marketplace host's listings and the calls that undo a registration.
pub(super) struct Market {
    /// Where the `powercontext` marketplace points, if registered.
    pub marketplace: fn(&HostCli) -> Result<Option<PathBuf>>,
    /// Our plugin's state: `None` when not installed, else whether it is enabled.
    pub enabled: fn(&HostCli) -> Result<Option<bool>>,
    pub remove_plugin: &'static [&'static str],
    pub remove_marketplace: &'static [&'static str],
    /// Doctor's fix for a disabled plugin (else run setup again).
    pub enable_fix: Option<&'static str>,
    /// The host lists a marketplace only while it lists a plugin: uninstall removes ours anyway.
    pub remove_unlisted: bool,
}

/// Our plugin's state in a host's plugin listing: `None` when not installed, else enabled or not.
pub(super) fn enabled_in<'a>(mut entries: impl Iterator<Item = &'a Value>, id_key: &str) -> Option<bool> {
    entries
        .find(|p| p[id_key] == install::PLUGIN_ID && p["installed"] != false)
        .map(|p| p["enabled"] == true)
}

/// The marketplace steps from where the host's `powercontext` marketplace points (`found`): none
/// when at our folder, replace-and-add with `--take-over`, refused when it is another's.
pub(super) fn marketplace_steps(plan: &mut Plan, found: Option<&Path>, take_over: bool) -> Result<Vec<Step>> {
    Ok(match found {
        Some(p) if p == plan.plugin_dir => Vec::new(),
        Some(p) if take_over => {
            plan.warnings.push(format!(
                "taking over: the `{}` marketplace from {} and its plugin are replaced (not restored by uninstall)",
                install::MARKETPLACE,
                p.display()
            ));
            vec![Step::Replace, Step::Marketplace]
        }
        Some(p) => bail!(
            "{} already has a marketplace named `{}` from {} — not ours. Remove it first ({} plugin marketplace \
             remove powercontext), or pass --take-over, then run setup again",
            plan.host.as_str(),
            install::MARKETPLACE,
            p.display(),
            plan.host.cli_name(),
        ),
        None => vec![Step::Marketplace],
    })
}

/// The plugin step from our plugin's state (`reinstall`: the host runs a cached copy, so changed
/// files have to be added again).
pub(super) fn plugin_step(enabled: Option<bool>, replacing: bool, reinstall: bool) -> Option<Step> {
    match enabled {
        _ if replacing => Some(Step::Install),
        None => Some(Step::Install),
        Some(_) if reinstall => Some(Step::Install),
        Some(false) => Some(Step::Enable),
        Some(true) => None,
    }
}

impl Market {
    /// Setup's marketplace and plugin steps, asked of the host CLI.
    pub fn plan(&self, plan: &mut Plan, take_over: bool, reinstall: bool) -> Result<()> {
        let found = (self.marketplace)(&plan.cli)?;
        let steps = marketplace_steps(plan, found.as_deref(), take_over)?;
        let replacing = steps.contains(&Step::Replace);
        plan.steps.extend(steps);
        let enabled = (self.enabled)(&plan.cli)?;
        plan.steps.extend(plugin_step(enabled, replacing, reinstall));
        Ok(())
    }

    /// Replace: the plugin first, only while the host lists it, then the marketplace.
    pub fn replace(&self, cli: &HostCli) -> Result<()> {
        if (self.enabled)(cli)?.is_some() {
            cli.run_ok(self.remove_plugin)?;
        }
        cli.run_ok(self.remove_marketplace)?;
        Ok(())
    }

    /// Setup's last word: the host lists our plugin as enabled.
    pub fn verify(&self, plan: &Plan) -> Result<()> {
        if (self.enabled)(&plan.cli)? != Some(true) {
            bail!(
                "{} does not list {} as enabled after setup",
                plan.host.as_str(),
                install::PLUGIN_ID
            );
        }
        Ok(())
    }

    /// Uninstall: our plugin and marketplace, while the host still has them as we made them.
    pub fn unregister(&self, m: &Manifest, undo: &mut Undo<'_>) -> Result<()> {
        let cli = undo.cli;
        if m.registrations.plugin && (self.enabled)(cli)?.is_some() {
            undo.run(self.remove_plugin)?;
        }
        if !m.registrations.marketplace {
            return Ok(());
        }
        match (self.marketplace)(cli)? {
            Some(p) if p == m.plugin_dir => undo.run(self.remove_marketplace)?,
            Some(p) => undo.kept.push(Kept::because(
                &p,
                None,
                "the host's `powercontext` marketplace points here now, not at our folder",
            )),
            // The remove command is idempotent: run it for the source we added.
            None if self.remove_unlisted && !undo.dry && cli.run(self.remove_marketplace)?.ok => {
                undo.actions
                    .push(Done::command(cli.display(self.remove_marketplace)));
            }
            None => {}
        }
        Ok(())
    }

    /// Doctor: the host lists our plugin enabled, and our marketplace at our folder.
    pub fn check(&self, a: &Activation<'_>, r: &mut Report) {
        check_listing(
            a.cli.host,
            (self.enabled)(a.cli),
            (self.marketplace)(a.cli),
            a.manifest,
            (self.enable_fix.unwrap_or(a.setup_cmd), a.setup_cmd),
            r,
        );
    }
}

/// Doctor's plugin and marketplace lines from what the host listed (`fixes`: for a disabled
/// plugin, for the rest).
pub(super) fn check_listing(
    host: Host,
    enabled: Result<Option<bool>>,
    found: Result<Option<PathBuf>>,
    m: Option<&Manifest>,
    (enable_fix, setup_cmd): (&str, &str),
    r: &mut Report,
) {
    match enabled {
        Ok(Some(true)) => r.ok(
            Tier::Activated,
            "plugin enabled",
            format!("{} lists {}", host.as_str(), install::PLUGIN_ID),
        ),
        Ok(Some(false)) => r.fail(
            Tier::Activated,
            "plugin enabled",
            format!("{} is installed but disabled", install::PLUGIN_ID),
            enable_fix,
        ),
        Ok(None) => r.fail(
            Tier::Activated,
            "plugin enabled",
            format!(
                "{} does not list {} (removed?)",
                host.as_str(),
                install::PLUGIN_ID
            ),
            setup_cmd,
        ),
        Err(e) => r.fail(
            Tier::Activated,
            "plugin enabled",
            format!("{e:#}"),
            format!("check that `{}` works", host.cli_name()),
        ),
    }
    match (found, m) {
        (Ok(Some(p)), Some(m)) if p == m.plugin_dir => {
            r.ok(
                Tier::Activated,
                "marketplace",
                format!("`{}` → {}", install::MARKETPLACE, p.display()),
            );
        }
        (Ok(Some(p)), None) => r.warn(
            Tier::Activated,
            "marketplace",
            format!(
                "`{}` → {} (another installer's source)",
                install::MARKETPLACE,
                p.display()
            ),
            "nothing to do when the official `powercontext setup` installed it",
        ),
        (Ok(Some(p)), _) => r.fail(
            Tier::Activated,
            "marketplace",
            format!(
                "`{}` points at {} (not our plugin folder)",
                install::MARKETPLACE,
                p.display()
            ),
            setup_cmd,
        ),
        (Ok(None), _) => r.fail(
            Tier::Activated,
            "marketplace",
            format!("`{}` is not registered", install::MARKETPLACE),
            setup_cmd,
        ),
        (Err(e), _) => r.fail(Tier::Activated, "marketplace", format!("{e:#}"), setup_cmd),
    }
}
