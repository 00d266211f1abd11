//! The contract between the commands and the host installers: the [`Installer`] trait (what
//! setup, uninstall and doctor ask of every host: templates, plan, host CLI calls, unregistering,
//! activation checks, synthetic doctor calls) and the values passed through it. It picks no host
//! (that is `hosts`) and writes no file.

use std::path::{Path, PathBuf};

use anyhow::Result;
use powercontext_hooks_core::env::Env;
use serde_json::Value;

use crate::installer::checks::Report;
use crate::installer::plan::{Plan, SetupArgs, Step};
use crate::installer::undo::{Done, Kept};
use crate::support::host_cli::HostCli;
use crate::support::install::{Manifest, Registrations};
use crate::support::paths::Paths;

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
pub(crate) fn describe_calls(cli: &HostCli, calls: &[Vec<String>]) -> String {
    let shown: Vec<String> = calls
        .iter()
        .map(|a| cli.display(&a.iter().map(String::as_str).collect::<Vec<_>>()))
        .collect();
    shown.join("; ")
}

/// Runs planned host CLI calls in order, each required to succeed.
pub(crate) fn run_all(cli: &HostCli, calls: &[Vec<String>]) -> Result<()> {
    for a in calls {
        cli.run_ok(&a.iter().map(String::as_str).collect::<Vec<_>>())?;
    }
    Ok(())
}
