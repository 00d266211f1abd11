//! OpenClaw's installer: our plugin folder in OpenClaw's global extensions folder
//! (`<state dir>/extensions/memory-powercontext`, which OpenClaw discovers by itself) and our
//! member `plugins.entries.memory-powercontext` in `openclaw.json`, which enables the plugin and
//! allows it conversation access (a non-bundled plugin does not see the prompt without it).
//! `openclaw.json` is edited byte for byte (comments, layout and every other entry kept), never
//! through `openclaw config set`, which rewrites the whole file and strips its comments. Doctor
//! asks OpenClaw itself (`openclaw plugins inspect`). It never replaces an entry or a plugin
//! folder that is not ours (the official installer's only with `--take-over`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use powercontext_hooks_core::env::Env;
use powercontext_hooks_core::official;
use serde_json::{Value, json};

use super::common::{EntryPlan, entry_holds, plan_entry, read_jsonc, table_home};
use crate::installer::checks::{Report, Tier};
use crate::installer::contract::{Activation, Calls, Installer};
use crate::installer::plan::{Plan, SetupArgs};
use crate::support::host_cli::HostCli;
use crate::support::install::{Host, Manifest};
use crate::support::paths::Paths;

pub(super) struct OpenClaw;

/// Our plugin id, the official integration's too: the two never load side by side.
pub(crate) const PLUGIN_ID: &str = official::OPENCLAW_PLUGIN_ID;
/// The parent of our member in `openclaw.json`.
const ENTRIES: &str = "plugins.entries";

/// What our member of `plugins.entries` holds.
fn wanted() -> Value {
    json!({"enabled": true, "hooks": {"allowConversationAccess": true}})
}

/// OpenClaw's config file: `$OPENCLAW_CONFIG_PATH`, else `<state dir>/openclaw.json`.
fn config_path(env: &Env) -> Option<PathBuf> {
    official::openclaw_config_path(env)
}

impl Installer for OpenClaw {
    fn templates(&self) -> &'static [(&'static str, &'static str)] {
        &[
            (
                "openclaw.plugin.json",
                include_str!("../../../../installers/openclaw/openclaw.plugin.json"),
            ),
            (
                "package.json",
                include_str!("../../../../installers/openclaw/package.json"),
            ),
            (
                "index.js",
                include_str!("../../../../installers/openclaw/index.js"),
            ),
        ]
    }

    fn home(&self, env: &Env) -> Option<PathBuf> {
        table_home(env, Host::OpenClaw)
    }

    fn official_folder(&self) -> &'static str {
        PLUGIN_ID
    }

    /// OpenClaw's global extensions folder, which it scans for plugin folders.
    fn plugin_dir(&self, _cli: &HostCli, _install_dir: &Path) -> Result<PathBuf> {
        let home = self
            .home(&Env::from_process())
            .context("cannot find OpenClaw's state directory: set HOME or OPENCLAW_STATE_DIR")?;
        Ok(home.join("extensions").join(PLUGIN_ID))
    }

    /// The official installer's plugin folder (its package name in `package.json`).
    fn takes_over_files(&self, plugin_dir: &Path, warnings: &mut Vec<String>) -> Result<bool> {
        let official = crate::support::install::read_opt(&plugin_dir.join("package.json"))?
            .filter(|b| b.len() <= 1 << 20)
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .is_some_and(|v| v["name"] == "@oceanbase/openclaw-memory-powercontext");
        if official {
            warnings.push(format!(
                "taking over: the plugin folder {} is replaced (not restored by uninstall)",
                plugin_dir.display()
            ));
        }
        Ok(official)
    }

    fn plan(&self, _args: &SetupArgs, paths: &Paths, plan: &mut Plan) -> Result<()> {
        let path =
            config_path(&paths.env).context("cannot find openclaw.json: set HOME or OPENCLAW_CONFIG_PATH")?;
        (plan.host_entry, plan.kept_entry) = plan_member(&path, plan.previous.as_ref())?;
        plan.warnings.push(format!(
            "OpenClaw: `{ENTRIES}.{PLUGIN_ID}` in {} enables the plugin and allows it conversation access \
             (hooks.allowConversationAccess), which it needs to see your prompts",
            path.display()
        ));
        Ok(())
    }

    // Loading is proven by `doctor openclaw` (OpenClaw's own plugin inspection); here the config
    // OpenClaw reads must still parse and hold our member.
    fn verify(&self, plan: &Plan, _paths: &Paths) -> Result<()> {
        if let Some((f, _)) = &plan.host_entry
            && !entry_holds(plan)?
        {
            anyhow::bail!(
                "{} does not hold `{ENTRIES}.{PLUGIN_ID}` after setup",
                f.path.display()
            );
        }
        Ok(())
    }

    fn note(&self) -> Option<&'static str> {
        Some(
            "OpenClaw loads plugins when it starts: restart a running OpenClaw Gateway (`openclaw gateway restart`) \
             to pick the plugin up",
        )
    }

    fn check_activated(&self, a: &Activation<'_>, r: &mut Report) {
        let run = a.cli.run_ok(&["plugins", "inspect", PLUGIN_ID, "--json"]);
        let report = run.and_then(|run| {
            serde_json::from_str::<Value>(run.stdout.trim())
                .map_err(|_| anyhow!("`openclaw plugins inspect {PLUGIN_ID} --json` printed no JSON"))
        });
        match report {
            Ok(v) => {
                let (status, enabled) = inspected(&v);
                if status.as_deref() == Some("loaded") && enabled {
                    r.ok(
                        Tier::Activated,
                        "plugin loaded",
                        format!("OpenClaw loads {PLUGIN_ID} (enabled)"),
                    );
                } else {
                    r.fail(
                        Tier::Activated,
                        "plugin loaded",
                        format!(
                            "OpenClaw reports {PLUGIN_ID} as {} ({})",
                            status.as_deref().unwrap_or("unknown"),
                            if enabled { "enabled" } else { "not enabled" }
                        ),
                        a.setup_cmd,
                    );
                }
            }
            Err(e) => r.fail(
                Tier::Activated,
                "plugin loaded",
                format!("{e:#}"),
                format!(
                    "check that `openclaw plugins inspect {PLUGIN_ID}` works, then {}",
                    a.setup_cmd
                ),
            ),
        }
        // Without conversation access OpenClaw runs the plugin but hides the prompt from it.
        match conversation_access(&a.paths.env) {
            Ok(true) => r.ok(
                Tier::Activated,
                "conversation access",
                format!("{ENTRIES}.{PLUGIN_ID}.hooks.allowConversationAccess is true"),
            ),
            Ok(false) => r.fail(
                Tier::Activated,
                "conversation access",
                format!("{ENTRIES}.{PLUGIN_ID}.hooks.allowConversationAccess is not true: the plugin never sees a prompt"),
                a.setup_cmd,
            ),
            Err(e) => r.fail(
                Tier::Activated,
                "conversation access",
                format!("{e:#}"),
                "fix openclaw.json, then run setup again",
            ),
        }
    }

    fn synthetic_calls(&self, cwd: &str, session: &str, prompt: &str) -> Calls {
        vec![
            (
                vec!["before-prompt-build"],
                json!({"prompt": prompt, "cwd": cwd, "session_id": session, "history_roles": []}),
            ),
            (
                vec!["boundary"],
                json!({"event": "agent_end", "session_id": session}),
            ),
        ]
    }

    fn context<'a>(&self, answer: &'a Value) -> &'a Value {
        &answer["prependContext"]
    }

    fn silence_causes(&self) -> (&'static str, &'static str) {
        (
            "OpenClaw did not load the plugin (another state directory, the plugin disabled or denied, no \
             conversation access, or a Gateway started before setup)",
            "powercontext-hooks setup openclaw, then restart the OpenClaw Gateway",
        )
    }
}

/// `status` and whether it is enabled, from `openclaw plugins inspect <id> --json` (the record is
/// the object itself or under `plugin`).
fn inspected(v: &Value) -> (Option<String>, bool) {
    let p = if v.get("plugin").is_some_and(Value::is_object) {
        &v["plugin"]
    } else {
        v
    };
    (p["status"].as_str().map(str::to_owned), p["enabled"] == true)
}

/// Whether `openclaw.json` allows our plugin conversation access.
fn conversation_access(env: &Env) -> Result<bool> {
    let path = config_path(env).context("cannot find openclaw.json")?;
    let Some(text) = read_jsonc(&path, "OpenClaw's config")? else {
        return Ok(false);
    };
    Ok(crate::support::jsonc::get(&text, ENTRIES, PLUGIN_ID)?
        .is_some_and(|e| e["hooks"]["allowConversationAccess"] == true))
}

/// Plans our member `plugins.entries.memory-powercontext`: added when absent, updated only while
/// it is still what we wrote. One that is not ours (the official installer's) already granting
/// what we need is kept as it is (and left by uninstall); otherwise it is refused, naming the fix.
fn plan_member(path: &Path, previous: Option<&Manifest>) -> Result<EntryPlan> {
    let text = read_jsonc(path, "OpenClaw's config").map_err(|e| {
        anyhow!(
            "{e:#}. OpenClaw also reads JSON5 (unquoted keys, single quotes), which setup does not rewrite: \
             either write the file as JSON (comments are fine), or add this member yourself: \
             `{ENTRIES}.{PLUGIN_ID}` = {}",
            wanted()
        )
    })?;
    let owned = previous.and_then(|m| m.host_entry.as_ref());
    if let Some(plan) = plan_entry(path, text.as_deref(), (ENTRIES, PLUGIN_ID), &wanted(), owned)? {
        return Ok(plan);
    }
    // The member is there and not ours.
    let current = text
        .as_deref()
        .map(|t| crate::support::jsonc::get(t, ENTRIES, PLUGIN_ID))
        .transpose()?
        .flatten()
        .unwrap_or(Value::Null);
    if current["enabled"] == true && current["hooks"]["allowConversationAccess"] == true {
        return Ok((None, None));
    }
    anyhow::bail!(
        "`{ENTRIES}.{PLUGIN_ID}` in {} was not written by powercontext-hooks (the official installer's?) and does \
         not enable the plugin with conversation access. Set them yourself (`openclaw config set \
         {ENTRIES}.{PLUGIN_ID}.enabled true` and `… .hooks.allowConversationAccess true`, or edit the file), then \
         run setup again",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inspect_records_are_read_flat_or_nested() {
        assert_eq!(
            inspected(&json!({"status": "loaded", "enabled": true})),
            (Some("loaded".to_owned()), true)
        );
        assert_eq!(
            inspected(&json!({"plugin": {"status": "disabled", "enabled": false}})),
            (Some("disabled".to_owned()), false)
        );
        assert_eq!(inspected(&json!([])), (None, false));
    }

    #[test]
    fn a_foreign_member_is_kept_refused_or_taken_over() {
        let dir = std::env::temp_dir().join(format!("pc-openclaw-member-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("openclaw.json");
        // Already granting what we need: kept, nothing written.
        std::fs::write(
            &path,
            r#"{"plugins": {"entries": {"memory-powercontext": {"enabled": true, "hooks": {"allowConversationAccess": true}, "config": {"endpoint": "http://127.0.0.1:8000"}}}}}"#,
        )
        .unwrap();
        let (change, kept) = plan_member(&path, None).unwrap();
        assert!(change.is_none() && kept.is_none());
        // Not granting it: refused, naming the fix; the file is not touched.
        let text = "{\n  // mine\n  \"plugins\": {\"entries\": {\"memory-powercontext\": {\"config\": {\"endpoint\": \"http://127.0.0.1:8000\"}}}}\n}\n";
        std::fs::write(&path, text).unwrap();
        let err = plan_member(&path, None).unwrap_err().to_string();
        assert!(err.contains("allowConversationAccess true"), "{err}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        // Absent: added, every other byte kept.
        let text = "{\n  // mine\n  \"models\": {}\n}\n";
        std::fs::write(&path, text).unwrap();
        let (change, _) = plan_member(&path, None).unwrap();
        let new = String::from_utf8(change.unwrap().0.bytes).unwrap();
        assert!(new.starts_with("{\n  // mine\n  \"models\": {},"), "{new}");
        assert_eq!(
            crate::support::jsonc::get(&new, ENTRIES, PLUGIN_ID).unwrap(),
            Some(wanted())
        );
        // JSON5 beyond comments is refused with the member to add by hand.
        std::fs::write(&path, "{ plugins: { } }").unwrap();
        let err = format!("{:#}", plan_member(&path, None).unwrap_err());
        assert!(
            err.contains("JSON5") && err.contains("allowConversationAccess"),
            "{err}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
