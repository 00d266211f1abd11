//! DSH's installer: its plugin templates, `dsh plugin --profile <p> add|remove` in one profile,
//! and doctor's `--dump-config` check and synthetic `pre-step`. It never replaces a
//! `powercontext-dsh` package that is not linked to our folder unless told to take it over.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use powercontext_hooks_core::env::Env;
use serde_json::{Value, json};

use super::common::{argv, package_source, table_home};
use crate::installer::checks::{Report, Tier};
use crate::installer::contract::{Activation, Calls, Installer, Undo};
use crate::installer::plan::{Plan, SetupArgs, Step};
use crate::installer::undo::{Done, Undoing};
use crate::support::host_cli::HostCli;
use crate::support::install::{self, Host, Manifest};
use crate::support::paths::Paths;

pub(super) struct Dsh;

/// The package name `dsh plugin add` links into the profile.
const PACKAGE: &str = "powercontext-dsh";
/// The cordis row id our DSH bundle inserts.
const PLUGIN_ID: &str = "powercontext-dsh";
/// The DSH profile setup uses when none is given (the official installer's choice).
const DEFAULT_PROFILE: &str = "web";

impl Installer for Dsh {
    fn templates(&self) -> &'static [(&'static str, &'static str)] {
        &[
            (
                "package.json",
                include_str!("../../../../installers/dsh/package.json"),
            ),
            (
                "cordis.patch.yml",
                include_str!("../../../../installers/dsh/cordis.patch.yml"),
            ),
            ("index.js", include_str!("../../../../installers/dsh/index.js")),
        ]
    }

    fn home(&self, env: &Env) -> Option<PathBuf> {
        table_home(env, Host::Dsh)
    }

    fn profile(&self, args: &SetupArgs, previous: Option<&Manifest>) -> Result<Option<String>> {
        let Some(p) = &args.profile else {
            return Ok(Some(
                previous
                    .and_then(|m| m.profile.clone())
                    .unwrap_or_else(|| DEFAULT_PROFILE.to_owned()),
            ));
        };
        if p.is_empty()
            || p.starts_with('.')
            || !p
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        {
            bail!("--profile: a DSH profile name is letters, digits, `.`, `_` and `-`");
        }
        Ok(Some(p.clone()))
    }

    fn plan(&self, args: &SetupArgs, paths: &Paths, plan: &mut Plan) -> Result<()> {
        let p = profile(plan.profile.as_deref());
        let dir = profile_dir(paths, p).context("cannot find DSH's home: set HOME or DSH_HOME")?;
        match dependency(&dir)? {
            None => plan.steps.push(Step::Install),
            Some(spec) if spec == format!("link:{}", plan.plugin_dir.display()) => {}
            Some(spec) if args.take_over => {
                plan.warnings.push(format!(
                    "taking over: DSH profile `{p}`'s `{PACKAGE}` package ({spec}) is replaced (not restored by uninstall)"
                ));
                plan.steps.extend([Step::Replace, Step::Install]);
            }
            Some(spec) => bail!(
                "DSH profile `{p}` already has a package `{PACKAGE}` ({spec}) — not ours. Remove it first \
                 (dsh plugin --profile {p} remove {PACKAGE}), or pass --take-over, then run setup again"
            ),
        }
        Ok(())
    }

    fn commands(&self, plan: &Plan, step: Step) -> Vec<Vec<String>> {
        let profile = profile(plan.profile.as_deref());
        let dir = plan.plugin_dir.display().to_string();
        match step {
            Step::Replace => vec![argv(&["plugin", "--profile", profile, "remove", PACKAGE])],
            _ => vec![argv(&["plugin", "--profile", profile, "add", &dir])],
        }
    }

    // `dsh plugin add` initializes the profile if needed and runs pnpm in it (which also
    // creates its content store); `--dump-config` boots the profile.
    fn host_files(&self, plan: &Plan, paths: &Paths, home: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
        let profile = home.join("profiles").join(profile(plan.profile.as_deref()));
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
        let files = [
            "package.json",
            "pnpm-lock.yaml",
            "pnpm-workspace.yaml",
            "cordis.patch.yml",
            "cordis.yml",
            "node_modules/.modules.yaml",
            "node_modules/.pnpm-workspace-state-v1.json",
            "node_modules/.pnpm/lock.yaml",
        ];
        (files.iter().map(|f| profile.join(f)).collect(), dirs)
    }

    fn verify(&self, plan: &Plan, _paths: &Paths) -> Result<()> {
        let profile = profile(plan.profile.as_deref());
        if !has_plugin(&plan.cli, profile)? {
            bail!("`dsh --profile {profile} --dump-config` has no `{PLUGIN_ID}` row after setup");
        }
        Ok(())
    }

    /// Undoes `dsh plugin add <dir>`, only while the profile still links our folder.
    fn unregister(&self, m: &Manifest, undo: &mut Undo<'_>) -> Result<()> {
        let profile = profile(m.profile.as_deref());
        let Some(profile_dir) = profile_dir(undo.paths, profile) else {
            return Ok(());
        };
        if dependency(&profile_dir)?.as_deref() == Some(format!("link:{}", m.plugin_dir.display()).as_str()) {
            undo.run(&["plugin", "--profile", profile, "remove", PACKAGE])?;
        }
        // pnpm's hoisted linker leaves the link behind; it would dangle once our folder is gone.
        let link = profile_dir.join("node_modules").join(PACKAGE);
        let ours = fs::symlink_metadata(&link).is_ok_and(|md| md.file_type().is_symlink())
            && fs::read_link(&link).is_ok_and(|t| {
                let target = link.parent().map_or(t.clone(), |p| p.join(&t));
                normalize(&target) == normalize(&m.plugin_dir)
            });
        if ours {
            undo.actions.push(Done::file(Undoing::Remove, &link));
            if !undo.dry {
                fs::remove_file(&link).with_context(|| format!("cannot remove {}", link.display()))?;
            }
        }
        Ok(())
    }

    fn check_activated(&self, a: &Activation<'_>, r: &mut Report) {
        let Some((_, profile)) = package_source(a, r) else {
            return;
        };
        let profile = self::profile(profile.as_deref());
        match has_plugin(a.cli, profile) {
            Ok(true) => r.ok(
                Tier::Activated,
                "plugin in config",
                format!("`dsh --profile {profile} --dump-config` has `{PLUGIN_ID}`"),
            ),
            Ok(false) => r.fail(
                Tier::Activated,
                "plugin in config",
                format!("profile `{profile}` does not load `{PLUGIN_ID}` (removed?)"),
                format!("{} --profile {profile}", a.setup_cmd),
            ),
            Err(e) => r.fail(
                Tier::Activated,
                "plugin in config",
                format!("{e:#}"),
                format!("check that `dsh --profile {profile} --dump-config` works"),
            ),
        }
    }

    fn synthetic_calls(&self, cwd: &str, session: &str, prompt: &str) -> Calls {
        vec![(
            vec!["pre-step"],
            json!({"session": {"id": session, "cwd": cwd}, "turn": 1, "step": 1,
                   "messages": [{"source": {"kind": "user"}, "content": [{"type": "text", "text": prompt}]}]}),
        )]
    }

    fn context<'a>(&self, answer: &'a Value) -> &'a Value {
        &answer["context"]
    }

    fn silence_causes(&self) -> (&'static str, &'static str) {
        (
            "the plugin is not in the DSH profile you run (`dsh --profile <name>`)",
            "powercontext-hooks setup dsh --profile <the profile you use>",
        )
    }
}

fn profile(p: Option<&str>) -> &str {
    p.unwrap_or(DEFAULT_PROFILE)
}

/// A DSH profile's directory.
fn profile_dir(paths: &Paths, profile: &str) -> Option<PathBuf> {
    Dsh.home(&paths.env).map(|h| h.join("profiles").join(profile))
}

/// The spec of our package in a DSH profile's `package.json` dependencies, if any.
fn dependency(profile_dir: &Path) -> Result<Option<String>> {
    let path = profile_dir.join("package.json");
    let Some(bytes) = install::read_opt(&path)? else {
        return Ok(None);
    };
    let v: Value =
        serde_json::from_slice(&bytes).with_context(|| format!("{} is not valid JSON", path.display()))?;
    Ok(v["dependencies"][PACKAGE].as_str().map(str::to_owned))
}

/// Whether `dsh --profile <p> --dump-config` has our plugin row.
fn has_plugin(cli: &HostCli, profile: &str) -> Result<bool> {
    let run = cli.run_ok(&["--profile", profile, "--dump-config"])?;
    Ok(has_plugin_row(&run.stdout))
}

/// Whether a dumped DSH config has our plugin row (`id: powercontext-dsh`, quoted or not).
pub(super) fn has_plugin_row(config: &str) -> bool {
    config.lines().any(|l| {
        let t = l.trim().trim_start_matches('-').trim();
        t.strip_prefix("id:")
            .map(|v| v.trim().trim_matches(|c| c == '\'' || c == '"'))
            == Some(PLUGIN_ID)
    })
}

/// Resolves `.` and `..` lexically (the link target may not exist any more).
fn normalize(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            c => out.push(c),
        }
    }
    out
}
