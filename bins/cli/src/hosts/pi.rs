//! Pi's installer: its package templates, `pi install <dir>` / `pi remove`, replacing the
//! official installer's `powercontext-pi` with `--take-over`, and doctor's `pi list` check and
//! synthetic `before-agent-start`. It never removes a Pi package that is not named ours.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use powercontext_hooks_core::env::Env;
use serde_json::{Value, json};

use super::common::{argv, package_source, table_home};
use crate::installer::checks::{Report, Tier};
use crate::installer::contract::{Activation, Calls, Installer, Undo};
use crate::installer::plan::{Plan, SetupArgs, Step};
use crate::support::host_cli::HostCli;
use crate::support::install::{Host, Manifest};
use crate::support::paths::Paths;

pub(super) struct Pi;

/// Why Pi cannot use its agent `settings.json` (where `pi install` records packages), if it
/// cannot: unreadable or not JSON. The parse error gives a line and column, never content.
pub(super) fn settings_problem(env: &Env) -> Option<String> {
    let path = Pi.home(env)?.join("settings.json");
    match crate::support::install::read_opt(&path) {
        Ok(None) => None,
        Ok(Some(bytes)) => serde_json::from_slice::<Value>(&bytes)
            .err()
            .map(|e| format!("{} (Pi's settings) is not valid JSON: {e}", path.display())),
        Err(e) => Some(format!("{e:#}")),
    }
}

/// The name of our Pi package (the official installer's too).
pub const PI_PACKAGE: &str = "powercontext-pi";

impl Installer for Pi {
    fn templates(&self) -> &'static [(&'static str, &'static str)] {
        &[
            (
                "package.json",
                include_str!("../../../../installers/pi/package.json"),
            ),
            (
                "extensions/powercontext.ts",
                include_str!("../../../../installers/pi/extensions/powercontext.ts"),
            ),
        ]
    }

    fn home(&self, env: &Env) -> Option<PathBuf> {
        table_home(env, Host::Pi)
    }

    fn plan(&self, args: &SetupArgs, paths: &Paths, plan: &mut Plan) -> Result<()> {
        // Pi skips a settings file it cannot parse (with a warning) and `pi install` still
        // succeeds: our package would then be nowhere, so say what to fix instead.
        if let Some(problem) = settings_problem(&paths.env) {
            bail!("{problem}: fix it first, then run setup again");
        }
        // Pi tells local packages apart by path: the official installer's `powercontext-pi`
        // would load beside ours (recall and capture twice).
        let listing = plan.cli.run_ok(&["list"])?.stdout;
        plan.pi_replace = others(&listing, &plan.plugin_dir);
        if !plan.pi_replace.is_empty() {
            let list: Vec<String> = plan.pi_replace.iter().map(|p| p.display().to_string()).collect();
            if !args.take_over {
                bail!(
                    "Pi already has another {PI_PACKAGE} package ({}) — the official installer's; both would load. \
                     Pass --take-over to replace it, or remove it first (pi remove <path>), then run setup again",
                    list.join(", ")
                );
            }
            plan.warnings.push(format!(
                "taking over: Pi's other {PI_PACKAGE} package ({}) is removed (not restored by uninstall)",
                list.join(", ")
            ));
            plan.steps.push(Step::Replace);
        }
        if !lists(&plan.cli, &plan.plugin_dir)? {
            plan.steps.push(Step::Install);
        }
        Ok(())
    }

    fn commands(&self, plan: &Plan, step: Step) -> Vec<Vec<String>> {
        match step {
            Step::Replace => plan
                .pi_replace
                .iter()
                .map(|p| argv(&["remove", &p.display().to_string()]))
                .collect(),
            _ => vec![argv(&["install", &plan.plugin_dir.display().to_string()])],
        }
    }

    // `pi install <dir>` records the folder in the agent settings, nothing else.
    fn host_files(&self, _plan: &Plan, _paths: &Paths, home: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
        (vec![home.join("settings.json")], Vec::new())
    }

    fn verify(&self, plan: &Plan, _paths: &Paths) -> Result<()> {
        if !lists(&plan.cli, &plan.plugin_dir)? {
            bail!(
                "`pi list` does not show {} after setup",
                plan.plugin_dir.display()
            );
        }
        Ok(())
    }

    fn unregister(&self, m: &Manifest, undo: &mut Undo<'_>) -> Result<()> {
        if lists(undo.cli, &m.plugin_dir)? {
            undo.run(&["remove", &m.plugin_dir.display().to_string()])?;
        }
        Ok(())
    }

    fn check_activated(&self, a: &Activation<'_>, r: &mut Report) {
        let Some((plugin_dir, _)) = package_source(a, r) else {
            return;
        };
        match lists(a.cli, &plugin_dir) {
            Ok(true) => r.ok(
                Tier::Activated,
                "package listed",
                format!("`pi list` shows {}", plugin_dir.display()),
            ),
            Ok(false) => match settings_problem(&a.paths.env) {
                Some(problem) => r.fail(
                    Tier::Activated,
                    "package listed",
                    format!("`pi list` does not show {}: {problem}", plugin_dir.display()),
                    "fix that file (Pi ignores it as it is)",
                ),
                None => r.fail(
                    Tier::Activated,
                    "package listed",
                    format!("`pi list` does not show {} (removed?)", plugin_dir.display()),
                    a.setup_cmd,
                ),
            },
            Err(e) => r.fail(
                Tier::Activated,
                "package listed",
                format!("{e:#}"),
                "check that `pi list` works",
            ),
        }
    }

    fn synthetic_calls(&self, cwd: &str, session: &str, prompt: &str) -> Calls {
        vec![(
            vec!["before-agent-start"],
            json!({"prompt": prompt, "system_prompt": "doctor", "cwd": cwd,
                   "session_id": session, "branch_roles": ["user"]}),
        )]
    }

    fn context<'a>(&self, answer: &'a Value) -> &'a Value {
        &answer["systemPrompt"]
    }

    fn silence_causes(&self) -> (&'static str, &'static str) {
        (
            "Pi does not load the extension (`pi list` does not show it, or Pi runs from another agent directory)",
            "powercontext-hooks setup pi",
        )
    }
}

/// Whether `pi list` shows `dir` as an installed user package.
fn lists(cli: &HostCli, dir: &Path) -> Result<bool> {
    Ok(listed(&cli.run_ok(&["list"])?.stdout, dir))
}

/// Whether a `pi list` output shows `dir` as an installed user package (its installed-path line,
/// or a source line naming it).
pub(super) fn listed(listing: &str, dir: &Path) -> bool {
    let want: Vec<PathBuf> = [Some(dir.to_path_buf()), std::fs::canonicalize(dir).ok()]
        .into_iter()
        .flatten()
        .collect();
    user_lines(listing).any(|(_, t)| want.iter().any(|w| Path::new(t) == w))
}

/// The installed paths of user packages named `powercontext-pi` other than `dir` in a `pi list`
/// output (the official installer's copy). Pi tells local packages apart by path, not by name,
/// so each of them loads beside ours.
pub(super) fn others(listing: &str, dir: &Path) -> Vec<PathBuf> {
    let ours = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    user_lines(listing)
        // Installed-path lines are indented four spaces (source lines two).
        .filter(|(line, t)| line.starts_with("    ") && Path::new(t).is_absolute())
        .map(|(_, t)| Path::new(t))
        .filter(|path| *path != dir && !std::fs::canonicalize(path).is_ok_and(|p| p == ours))
        .filter(|path| {
            let name = crate::support::install::read_opt(&path.join("package.json"))
                .ok()
                .flatten()
                .filter(|b| b.len() <= 1 << 20)
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                .and_then(|v| v["name"].as_str().map(str::to_owned));
            name.as_deref() == Some(PI_PACKAGE)
        })
        .map(Path::to_path_buf)
        .collect()
}

/// The indented lines under `User packages:` in a `pi list` output: (line, trimmed).
fn user_lines(listing: &str) -> impl Iterator<Item = (&str, &str)> {
    let mut user = false;
    listing.lines().filter_map(move |line| {
        let t = line.trim();
        if !line.starts_with(' ') {
            user = t == "User packages:";
            return None;
        }
        user.then_some((line, t))
    })
}
