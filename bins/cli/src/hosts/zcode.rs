//! ZCode's installer: our plugin folder (its manifest and `hooks/hooks.json`, process hooks on the
//! row's events with millisecond timeouts, generated from the row) registered by its path in
//! `plugins.dirs` of ZCode's `~/.zcode/cli/config.json` (added after the user's entries, removed
//! byte for byte by uninstall, through the settings-hooks ownership records), and doctor's checks
//! of both. Contract level: ZCode cannot be installed here, so nothing of this ran in a real ZCode.
//! It never turns ZCode's plugins on behind the user's back and never touches another plugin.

use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use powercontext_hooks_core::env::Env;
use serde_json::{Value, json};

use super::common::{channel_context, read_jsonc, table_home};
use super::settings_hooks::{events, plan_file_in};
use crate::installer::checks::{Report, Tier};
use crate::installer::contract::{Activation, Calls, Installer};
use crate::installer::plan::{Plan, SetupArgs};
use crate::support::install::{self, Host};
use crate::support::jsonc;
use crate::support::paths::Paths;

pub(super) struct Zcode;

/// The object of ZCode's config that lists plugin folders, and its list.
const PLUGINS: &str = "plugins";
const DIRS: &str = "dirs";
/// Our hooks file in the plugin folder.
const HOOKS_FILE: &str = "hooks/hooks.json";

/// ZCode's config file (`~/.zcode/cli/config.json`).
fn config_path(env: &Env) -> Option<PathBuf> {
    table_home(env, Host::Zcode).map(|h| h.join(config_file()))
}

fn config_file() -> &'static str {
    match Host::Zcode.spec().config {
        powercontext_hooks_core::host::ConfigFormat::PluginDirsHooks { file } => file,
        _ => "config.json",
    }
}

/// Our `hooks/hooks.json`: one process hook per event of the row, running `command` with no
/// arguments (no shell), its timeout in milliseconds.
pub(crate) fn hooks_json(command: &str) -> Value {
    let mut hooks = serde_json::Map::new();
    for (event, mode) in events(Host::Zcode) {
        let ms = mode.seconds() * 1000;
        hooks.insert(
            event.to_owned(),
            json!([{"hooks": [{"type": "process", "command": command, "args": [], "timeoutMs": ms}]}]),
        );
    }
    json!({ "hooks": hooks })
}

impl Installer for Zcode {
    fn templates(&self) -> &'static [(&'static str, &'static str)] {
        &[
            (
                ".zcode-plugin/plugin.json",
                include_str!("../../../../installers/zcode/.zcode-plugin/plugin.json"),
            ),
            (
                HOOKS_FILE,
                include_str!("../../../../installers/zcode/hooks/hooks.json"),
            ),
        ]
    }

    fn home(&self, env: &Env) -> Option<PathBuf> {
        table_home(env, Host::Zcode)
    }

    /// `hooks/hooks.json` is generated from the row; its template only carries the command.
    fn file_bytes(&self, rel: &str, text: String, _paths: &Paths) -> Result<Vec<u8>> {
        if rel != HOOKS_FILE {
            return Ok(text.into_bytes());
        }
        let template: Value =
            serde_json::from_str(&text).context("internal error: the ZCode hooks template is not JSON")?;
        let command = template["command"]
            .as_str()
            .context("internal error: the ZCode hooks template has no command")?;
        let mut bytes = serde_json::to_vec_pretty(&hooks_json(command))?;
        bytes.push(b'\n');
        Ok(bytes)
    }

    fn plan(&self, _args: &SetupArgs, paths: &Paths, plan: &mut Plan) -> Result<()> {
        let path =
            config_path(&paths.env).context("cannot find ZCode's configuration directory: set HOME")?;
        let text = read_jsonc(&path, "ZCode's config")?;
        if let Some(t) = &text
            && jsonc::get(t, PLUGINS, "enabled")? == Some(Value::Bool(false))
        {
            plan.warnings.push(format!(
                "ZCode's plugins are turned off (`plugins.enabled: false` in {}); ours runs once you turn them on",
                path.display()
            ));
        }
        let dir = plan
            .plugin_dir
            .to_str()
            .with_context(|| format!("{} is not a UTF-8 path", plan.plugin_dir.display()))?;
        let want = [(DIRS.to_owned(), json!(dir))];
        let previous = plan.previous.as_ref().and_then(|m| m.settings_hooks.as_ref());
        let (change, owned) = plan_file_in(&path, text.as_deref(), PLUGINS, &want, previous)?;
        plan.set_settings_hooks(change, owned);
        Ok(())
    }

    fn verify(&self, plan: &Plan, _paths: &Paths) -> Result<()> {
        let Some(owned) = plan.owned_hooks() else {
            return Ok(());
        };
        if !super::settings_hooks::missing_events(owned)?.is_empty() {
            bail!(
                "{} does not list our plugin folder after setup",
                owned.path.display()
            );
        }
        Ok(())
    }

    fn note(&self) -> Option<&'static str> {
        Some("restart ZCode to load the plugin (ZCode is not validated in a real host)")
    }

    fn check_activated(&self, a: &Activation<'_>, r: &mut Report) {
        let Some(path) = config_path(&a.paths.env) else {
            return r.fail(Tier::Activated, "plugin listed", "HOME is not set", "set HOME");
        };
        let Some(m) = a.manifest else {
            return r.fail(
                Tier::Activated,
                "plugin listed",
                "not set up by powercontext-hooks",
                a.setup_cmd,
            );
        };
        let config =
            match read_jsonc(&path, "ZCode's config").and_then(|t| t.map(|t| jsonc::parse(&t)).transpose()) {
                Ok(Some(v)) => v,
                Ok(None) => {
                    return r.fail(
                        Tier::Activated,
                        "plugin listed",
                        format!("{} does not exist", path.display()),
                        a.setup_cmd,
                    );
                }
                Err(e) => {
                    return r.fail(
                        Tier::Activated,
                        "plugin listed",
                        format!("{e:#}"),
                        format!("fix {} (ZCode cannot read it either)", path.display()),
                    );
                }
            };
        let dir = m.plugin_dir.to_string_lossy();
        let listed = config[PLUGINS][DIRS]
            .as_array()
            .is_some_and(|d| d.iter().any(|v| v.as_str() == Some(&dir)));
        if listed {
            r.ok(
                Tier::Activated,
                "plugin listed",
                format!("{} lists {dir}", path.display()),
            );
        } else {
            r.fail(
                Tier::Activated,
                "plugin listed",
                format!("`{PLUGINS}.{DIRS}` in {} does not list {dir}", path.display()),
                a.setup_cmd,
            );
        }
        if config[PLUGINS]["enabled"] == false {
            r.fail(
                Tier::Activated,
                "plugins enabled",
                format!("{} turns plugins off", path.display()),
                format!("remove `plugins.enabled: false` from {}", path.display()),
            );
        }
        let want = hooks_json(&m.hook_exe.to_string_lossy());
        let hooks = install::read_opt(&m.plugin_dir.join(HOOKS_FILE))
            .ok()
            .flatten()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok());
        if hooks.as_ref() == Some(&want) {
            r.ok(
                Tier::Activated,
                "hooks file",
                format!(
                    "{} runs our hook on {} event(s)",
                    HOOKS_FILE,
                    events(Host::Zcode).len()
                ),
            );
        } else {
            r.fail(
                Tier::Activated,
                "hooks file",
                format!(
                    "{} is missing or changed",
                    m.plugin_dir.join(HOOKS_FILE).display()
                ),
                a.setup_cmd,
            );
        }
    }

    /// ZCode's own payload spelling (camelCase), which its plugins read.
    fn synthetic_calls(&self, cwd: &str, session: &str, prompt: &str) -> Calls {
        vec![(
            Vec::new(),
            json!({"hookEventName": Host::Zcode.spec().events.prompt, "cwd": cwd, "prompt": prompt,
                   "sessionId": session}),
        )]
    }

    fn context<'a>(&self, answer: &'a Value) -> &'a Value {
        channel_context(Host::Zcode, answer)
    }

    fn silence_causes(&self) -> (&'static str, &'static str) {
        (
            "ZCode was not restarted since setup, its plugins are turned off (`plugins.enabled`), or our \
             folder left `plugins.dirs` in ~/.zcode/cli/config.json",
            "powercontext-hooks setup zcode, then restart ZCode",
        )
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    #[test]
    fn hooks_are_process_hooks_on_the_row_events_in_milliseconds() {
        let v = hooks_json("/opt/powercontext-hook-zcode");
        let events: Vec<&String> = v["hooks"].as_object().unwrap().keys().collect();
        assert_eq!(events, ["SessionStart", "Stop", "UserPromptSubmit"]);
        let entry = &v["hooks"]["UserPromptSubmit"][0]["hooks"][0];
        assert_eq!(
            entry,
            &json!({"type": "process", "command": "/opt/powercontext-hook-zcode", "args": [], "timeoutMs": 10000})
        );
        assert_eq!(v["hooks"]["Stop"][0]["hooks"][0]["timeoutMs"], 5000);
    }

    #[test]
    fn our_folder_is_added_after_the_users_and_removed_byte_for_byte() {
        let path = Path::new("/h/.zcode/cli/config.json");
        let text = "{\n  // mine\n  \"plugins\": {\"enabled\": true, \"dirs\": [\"/opt/theirs\"]},\n  \"model\": \"x\"\n}\n";
        let want = [(DIRS.to_owned(), json!("/s/installs/zcode/plugin"))];
        let (change, owned) = plan_file_in(path, Some(text), PLUGINS, &want, None).unwrap();
        let new = String::from_utf8(change.unwrap().bytes).unwrap();
        let v = jsonc::parse(&new).unwrap();
        assert_eq!(
            v["plugins"]["dirs"],
            json!(["/opt/theirs", "/s/installs/zcode/plugin"])
        );
        assert!(new.starts_with("{\n  // mine\n"), "{new}");
        assert_eq!(
            super::super::settings_hooks::unplan_file(&new, &owned)
                .unwrap()
                .as_deref(),
            Some(text)
        );
        // Idempotent: planned again over its own result, nothing changes.
        let (again, _) = plan_file_in(path, Some(&new), PLUGINS, &want, Some(&owned)).unwrap();
        assert!(again.is_none());
        // No config yet: created with only our entry, and removed again by uninstall.
        let (change, owned) = plan_file_in(path, None, PLUGINS, &want, None).unwrap();
        let created = String::from_utf8(change.unwrap().bytes).unwrap();
        assert_eq!(
            super::super::settings_hooks::unplan_file(&created, &owned).unwrap(),
            None
        );
    }
}
