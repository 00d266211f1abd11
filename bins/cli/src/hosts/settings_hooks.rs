//! The installer of every host whose command hooks live in a `"hooks"` object of the host's own
//! settings file (`ConfigFormat::SettingsHooks`): Qwen Code, Gemini CLI and WorkBuddy. Everything it needs is the
//! host's row (config home, settings file name, events, timeout unit, output channel); it adds
//! one Claude-style matcher group per event to `hooks.<event>`, keeps every foreign hook byte for
//! byte, records what it added (per event, by digest) so uninstall removes only that, and never
//! writes the file itself (setup's journal does, and rolls it back).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow, bail};
use powercontext_hooks_core::env::Env;
use powercontext_hooks_core::host::{ConfigFormat, TimeoutUnit};

use serde_json::{Value, json};

use super::common::{channel_context, prompt_event, read_jsonc, table_home};
use crate::installer::checks::{Report, Tier};
use crate::installer::contract::{Activation, Calls, Installer};
use crate::installer::plan::{Action, FileChange, Plan, SetupArgs};
use crate::support::install::{self, Host, HostExt, OwnedHook, OwnedHooks, value_digest};
use crate::support::jsonc;
use crate::support::paths::Paths;

/// The parent object of the hook lists in the settings file.
const HOOKS: &str = "hooks";

/// The installer of one settings-hooks host: the host and doctor's fix when it stays silent
/// (the command names the host, so it is spelled out where `installer` picks the host).
pub(crate) struct SettingsHooks(pub Host, pub &'static str);

/// Which of our hook's jobs a host event runs (the hook itself tells them apart by the event
/// name in its payload; the mode only decides the timeout written for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Recall and inject for a prompt.
    Prompt,
    /// Bootstrap at a session start.
    SessionStart,
    /// Mark a compaction.
    Compaction,
    /// Flush pending captures.
    Boundary,
}

impl Mode {
    /// The hook's timeout in seconds: recall and bootstrap get the hook's 4 s budget and room to
    /// start; the others only mark or hand over.
    pub(crate) fn seconds(self) -> u64 {
        match self {
            Self::Prompt | Self::SessionStart => 10,
            Self::Compaction | Self::Boundary => 5,
        }
    }
}

/// The host events our hook is wired to, in the row's order, each once, with its mode.
pub(crate) fn events(host: Host) -> Vec<(&'static str, Mode)> {
    let e = &host.spec().events;
    let mut out: Vec<(&'static str, Mode)> = vec![(e.prompt, Mode::Prompt)];
    out.extend(e.session_start.map(|s| (s, Mode::SessionStart)));
    out.extend(e.compaction.map(|c| (c, Mode::Compaction)));
    out.extend(e.boundary.iter().map(|b| (*b, Mode::Boundary)));
    out.extend(e.end.map(|s| (s, Mode::Boundary)));
    let mut seen = Vec::new();
    out.retain(|(name, _)| {
        let new = !seen.contains(name);
        seen.push(*name);
        new
    });
    out
}

/// The settings file's name under the config home, from the row.
fn file_name(host: Host) -> &'static str {
    match host.spec().config {
        ConfigFormat::SettingsHooks { file, .. } => file,
        // Only rows of this format are served here (`installer` picks by row).
        _ => "settings.json",
    }
}

/// The command the host runs for our hook at `exe`: its path for the shell, then the row's
/// `command_tail`.
pub(crate) fn hook_command(host: Host, exe: &Path) -> Result<String> {
    let tail = match host.spec().config {
        ConfigFormat::SettingsHooks { command_tail, .. } => command_tail,
        _ => "",
    };
    Ok(format!("{}{tail}", install::hook_command_shell(exe)?))
}

/// The host's settings file (`<config home>/<file>`).
pub(crate) fn settings_path(host: Host, env: &Env) -> Option<PathBuf> {
    table_home(env, host).map(|h| h.join(file_name(host)))
}

/// Our matcher group for one event: the hook command with its timeout in the row's unit.
pub(crate) fn entry(host: Host, command: &str, mode: Mode) -> Value {
    let timeout = match host.spec().timeout_unit {
        TimeoutUnit::Milliseconds => Some(mode.seconds() * 1000),
        TimeoutUnit::Seconds => Some(mode.seconds()),
        TimeoutUnit::None => None,
    };
    let mut hook = json!({"type": "command", "command": command});
    if let Some(t) = timeout {
        hook["timeout"] = json!(t);
    }
    json!({ "hooks": [hook] })
}

impl OwnedHook {
    /// The object holding the list.
    fn parent(&self) -> &str {
        self.parent.as_deref().unwrap_or(HOOKS)
    }
}

/// `text` with each of `owned`'s entries that is still what we wrote removed, newest first (so
/// each removal undoes its addition byte for byte). Entries changed since are the user's now.
pub(crate) fn strip(text: &str, owned: &[OwnedHook]) -> Result<String> {
    let mut text = text.to_owned();
    for h in owned.iter().rev() {
        let Some(items) = jsonc::elements(&text, h.parent(), &h.event)? else {
            continue;
        };
        let Some(index) = items.iter().rposition(|v| value_digest(v) == h.sha256) else {
            continue;
        };
        text = match &h.member {
            Some(how) if items.len() == 1 => jsonc::remove(&text, h.parent(), &h.event, how)?,
            _ => jsonc::pull(&text, h.parent(), &h.event, index, h.empty_inner.as_deref())?,
        };
    }
    Ok(text)
}

/// `text` with `want` (key, element: an event and our group) added to the lists `parent.key`
/// (`hooks.<event>`), after everything already there.
pub(crate) fn add_in(text: &str, parent: &str, want: &[(String, Value)]) -> Result<(String, Vec<OwnedHook>)> {
    let mut text = text.to_owned();
    let mut owned = Vec::new();
    for (event, group) in want {
        let (new, member, empty_inner) = if jsonc::elements(&text, parent, event)?.is_some() {
            let (new, empty) = jsonc::push(&text, parent, event, group)?;
            (new, None, empty)
        } else {
            let (new, how) = jsonc::insert(&text, parent, event, &json!([group]))?;
            (new, Some(how), None)
        };
        text = new;
        owned.push(OwnedHook {
            event: event.clone(),
            sha256: value_digest(group),
            member,
            empty_inner,
            parent: (parent != HOOKS).then(|| parent.to_owned()),
        });
    }
    Ok((text, owned))
}

/// The entries setup wants for `host`, running `command`.
pub(crate) fn wanted(host: Host, command: &str) -> Vec<(String, Value)> {
    events(host)
        .into_iter()
        .map(|(event, mode)| (event.to_owned(), entry(host, command, mode)))
        .collect()
}

/// Plans our entries in the settings file at `path` (`text`: its contents, `None` when absent):
/// the planned write (`None` when the file already holds exactly them) and the ownership record.
pub(crate) fn plan_file(
    path: &Path,
    text: Option<&str>,
    want: &[(String, Value)],
    previous: Option<&OwnedHooks>,
) -> Result<(Option<FileChange>, OwnedHooks)> {
    plan_file_in(path, text, HOOKS, want, previous)
}

/// [`plan_file`] for lists under `parent` (ZCode's `plugins`).
pub(crate) fn plan_file_in(
    path: &Path,
    text: Option<&str>,
    parent: &str,
    want: &[(String, Value)],
    previous: Option<&OwnedHooks>,
) -> Result<(Option<FileChange>, OwnedHooks)> {
    let base = text.unwrap_or("{}\n");
    let mine = previous.filter(|o| o.path == path);
    let stripped = strip(base, mine.map_or(&[][..], |o| &o.entries))?;
    let (new, entries) = add_in(&stripped, parent, want)
        .with_context(|| format!("cannot add our hooks to {}: fix that file first", path.display()))?;
    let owned = OwnedHooks {
        path: path.to_path_buf(),
        created_file: text.is_none() || mine.is_some_and(|o| o.created_file),
        entries,
    };
    if text == Some(new.as_str()) {
        return Ok((None, owned));
    }
    let change = FileChange {
        path: path.to_path_buf(),
        bytes: new.into_bytes(),
        action: if text.is_none() {
            Action::Create
        } else {
            Action::Update
        },
        private: false,
    };
    Ok((Some(change), owned))
}

/// Uninstall's edit: the file's new text without our entries, or `None` when the file should go
/// (we created it and nothing else is in it now).
pub(crate) fn unplan_file(text: &str, owned: &OwnedHooks) -> Result<Option<String>> {
    let new = strip(text, &owned.entries)?;
    let empty =
        owned.created_file && jsonc::parse(&new).is_ok_and(|v| v.as_object().is_some_and(|o| o.is_empty()));
    Ok((!empty).then_some(new))
}

/// Which of our events are missing from (or changed in) the settings file, and whether it parses.
pub(crate) fn missing_events(owned: &OwnedHooks) -> Result<Vec<String>> {
    let text = match install::read_opt(&owned.path)? {
        None => return Ok(owned.entries.iter().map(|h| h.event.clone()).collect()),
        Some(b) => String::from_utf8(b).map_err(|_| anyhow!("it is not UTF-8"))?,
    };
    let mut missing = Vec::new();
    for h in &owned.entries {
        let items = jsonc::elements(&text, h.parent(), &h.event)?.unwrap_or_default();
        if !items.iter().any(|v| value_digest(v) == h.sha256) {
            missing.push(h.event.clone());
        }
    }
    Ok(missing)
}

/// The commands of every command hook on `event` in a parsed settings file.
fn commands_on<'a>(settings: &'a Value, event: &str) -> impl Iterator<Item = &'a str> {
    settings[HOOKS][event]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["hooks"].as_array().into_iter().flatten())
        .filter(|h| h["type"] == "command")
        .filter_map(|h| h["command"].as_str())
}

/// The `hooks` members other than the row's events that run a command `is_ours` accepts, in a
/// matcher group or as a flat entry (`command`, or Copilot CLI's `bash`).
fn listed_elsewhere(settings: &Value, host: Host, is_ours: impl Fn(&str) -> bool) -> Vec<String> {
    let ours: Vec<&str> = events(host).into_iter().map(|(e, _)| e).collect();
    let Some(hooks) = settings[HOOKS].as_object() else {
        return Vec::new();
    };
    hooks
        .iter()
        .filter(|(name, _)| !ours.contains(&name.as_str()))
        .filter(|(_, list)| {
            list.as_array()
                .into_iter()
                .flatten()
                .flat_map(|g| {
                    let inner = g["hooks"].as_array().into_iter().flatten();
                    std::iter::once(g).chain(inner)
                })
                .flat_map(|h| [&h["command"], &h["bash"]])
                .filter_map(Value::as_str)
                .any(&is_ours)
        })
        .map(|(name, _)| format!("`{name}`"))
        .collect()
}

/// The parsed settings file `check_activated` inspects, or `None` once a failure is reported.
fn activated_settings(host: Host, a: &Activation<'_>, r: &mut Report) -> Option<(PathBuf, Value)> {
    let Some(path) = settings_path(host, &a.paths.env) else {
        r.fail(
            Tier::Activated,
            "hooks in settings",
            "HOME is not set",
            "set HOME",
        );
        return None;
    };
    let parsed = read_jsonc(&path, "settings").and_then(|t| t.map(|t| jsonc::parse(&t)).transpose());
    let settings = match parsed {
        Ok(Some(v)) => v,
        Ok(None) => {
            r.fail(
                Tier::Activated,
                "hooks in settings",
                format!("{} does not exist", path.display()),
                a.setup_cmd,
            );
            return None;
        }
        Err(e) => {
            r.fail(
                Tier::Activated,
                "hooks in settings",
                format!("{e:#}"),
                format!(
                    "fix {} ({} cannot read it either)",
                    path.display(),
                    host.spec().title
                ),
            );
            return None;
        }
    };
    Some((path, settings))
}

/// Reports whether every event of the row runs a command `is_ours` accepts.
fn check_listed(
    host: Host,
    a: &Activation<'_>,
    r: &mut Report,
    path: &Path,
    settings: &Value,
    is_ours: impl Fn(&str) -> bool + Copy,
) {
    let missing: Vec<&str> = events(host)
        .into_iter()
        .map(|(e, _)| e)
        .filter(|e| !commands_on(settings, e).any(is_ours))
        .collect();
    if missing.is_empty() {
        r.ok(
            Tier::Activated,
            "hooks in settings",
            format!(
                "{} runs our hook on {} event(s)",
                path.display(),
                events(host).len()
            ),
        );
    } else {
        let elsewhere = listed_elsewhere(settings, host, is_ours);
        let also = if elsewhere.is_empty() {
            String::new()
        } else {
            // Copilot CLI's camelCase names (`userPromptSubmitted`) run a hook with a payload
            // of another shape, which ours skips: such an entry is no install.
            format!(
                "; our hook is listed under {} instead, event names whose payload it cannot read",
                elsewhere.join(", ")
            )
        };
        r.fail(
            Tier::Activated,
            "hooks in settings",
            format!(
                "{} runs no hook of ours on {}{also}",
                path.display(),
                missing.join(", ")
            ),
            a.setup_cmd,
        );
    }
}

/// Reports a hook of ours turned off singly or every hook turned off host-wide.
fn check_enabled(r: &mut Report, path: &Path, settings: &Value, want: Option<&str>, exe: &str) {
    // Gemini CLI turns single hooks off by name, a nameless one by its command.
    let disabled = settings["hooksConfig"]["disabled"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .any(|d| match want {
            Some(w) => d == w,
            None => d.contains(exe),
        });
    if disabled {
        r.fail(
            Tier::Activated,
            "hooks enabled",
            format!("{} lists our hook in `hooksConfig.disabled`", path.display()),
            format!(
                "remove our hook's command from `hooksConfig.disabled` in {}",
                path.display()
            ),
        );
    }
    // A host-wide switch that turns every hook off.
    if settings["disableAllHooks"] == true || settings["hooksConfig"]["enabled"] == false {
        r.fail(
            Tier::Activated,
            "hooks enabled",
            format!("{} turns hooks off", path.display()),
            format!(
                "remove `disableAllHooks` / `hooksConfig.enabled: false` from {}",
                path.display()
            ),
        );
    }
}

impl Installer for SettingsHooks {
    fn templates(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    fn home(&self, env: &Env) -> Option<PathBuf> {
        table_home(env, self.0)
    }

    fn plan(&self, _args: &SetupArgs, paths: &Paths, plan: &mut Plan) -> Result<()> {
        let host = self.0;
        let path = settings_path(host, &paths.env).with_context(|| {
            format!(
                "cannot find {}'s configuration directory: set HOME",
                host.spec().title
            )
        })?;
        let text = read_jsonc(&path, &format!("{}'s settings", host.spec().title))?;
        let command = hook_command(host, &plan.hook_exe)?;
        let previous = plan.previous.as_ref().and_then(|m| m.settings_hooks.as_ref());
        let (change, owned) = plan_file(&path, text.as_deref(), &wanted(host, &command), previous)?;
        plan.set_settings_hooks(change, owned);
        Ok(())
    }

    fn verify(&self, plan: &Plan, _paths: &Paths) -> Result<()> {
        let Some(owned) = plan.owned_hooks() else {
            bail!("internal error: no hook entries planned");
        };
        let missing = missing_events(owned)?;
        if !missing.is_empty() {
            bail!(
                "{} does not hold our {} hook(s) after setup",
                owned.path.display(),
                missing.join(", ")
            );
        }
        Ok(())
    }

    fn check_activated(&self, a: &Activation<'_>, r: &mut Report) {
        let host = self.0;
        let Some((path, settings)) = activated_settings(host, a, r) else {
            return;
        };
        let want = a
            .manifest
            .map(|m| hook_command(host, &m.hook_exe))
            .transpose()
            .ok()
            .flatten();
        let exe = host.hook_exe();
        let is_ours = |c: &str| match &want {
            Some(w) => c == w,
            None => c.contains(exe),
        };
        check_listed(host, a, r, &path, &settings, is_ours);
        check_enabled(r, &path, &settings, want.as_deref(), exe);
    }

    fn synthetic_calls(&self, cwd: &str, _session: &str, prompt: &str) -> Calls {
        vec![(Vec::new(), prompt_event(self.0, cwd, prompt))]
    }

    fn context<'a>(&self, answer: &'a Value) -> &'a Value {
        channel_context(self.0, answer)
    }

    fn silence_causes(&self) -> (&'static str, &'static str) {
        (
            "the host's settings no longer hold our hook entries, hooks are turned off there, or the host \
             was started with another home",
            self.1,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn want() -> Vec<(String, Value)> {
        wanted(Host::QwenCode, "/opt/hook")
    }

    #[test]
    fn gemini_cli_gets_its_events_in_milliseconds_and_a_command_that_never_blocks() {
        let names: Vec<&str> = events(Host::GeminiCli).into_iter().map(|(e, _)| e).collect();
        assert_eq!(names, ["BeforeAgent", "SessionStart", "AfterAgent", "SessionEnd"]);
        let command = hook_command(Host::GeminiCli, Path::new("/opt/my hook")).unwrap();
        assert_eq!(command, "'/opt/my hook' || exit 1");
        assert_eq!(
            hook_command(Host::QwenCode, Path::new("/opt/hook")).unwrap(),
            "/opt/hook"
        );
        let groups = wanted(Host::GeminiCli, &command);
        let timeout = |event: &str| {
            groups
                .iter()
                .find(|(e, _)| e == event)
                .map(|(_, g)| g["hooks"][0]["timeout"].clone())
        };
        assert_eq!(timeout("BeforeAgent"), Some(json!(10_000)));
        assert_eq!(timeout("SessionStart"), Some(json!(10_000)));
        assert_eq!(timeout("AfterAgent"), Some(json!(5_000)));
        assert_eq!(timeout("PreCompress"), None);
    }

    #[test]
    fn a_hook_of_ours_under_another_event_name_is_named() {
        let ours = |c: &str| c.contains("powercontext-hook-copilot-cli");
        let camel = json!({"hooks": {
            "userPromptSubmitted": [{"type": "command", "bash": "/x/powercontext-hook-copilot-cli", "timeoutSec": 10}],
            "sessionStart": [{"hooks": [{"type": "command", "command": "/x/powercontext-hook-copilot-cli"}]}],
            "preToolUse": [{"type": "command", "bash": "/usr/bin/true"}],
            "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "/x/powercontext-hook-copilot-cli"}]}],
        }});
        assert_eq!(
            listed_elsewhere(&camel, Host::CopilotCli, ours),
            ["`sessionStart`", "`userPromptSubmitted`"]
        );
        assert!(listed_elsewhere(&json!({"hooks": {"Stop": []}}), Host::CopilotCli, ours).is_empty());
        assert!(listed_elsewhere(&json!({}), Host::CopilotCli, ours).is_empty());
    }

    #[test]
    fn copilot_entries_are_claude_style_in_seconds_without_a_session_start() {
        let want = wanted(Host::CopilotCli, "/opt/hook");
        let names: Vec<&str> = want.iter().map(|(e, _)| e.as_str()).collect();
        // Copilot CLI runs `SessionStart` hooks beside the first prompt's: it bootstraps there.
        assert_eq!(names, ["UserPromptSubmit", "PreCompact", "Stop", "SessionEnd"]);
        assert_eq!(
            want[0].1,
            json!({"hooks": [{"type": "command", "command": "/opt/hook", "timeout": 10}]})
        );
        assert_eq!(want[1].1["hooks"][0]["timeout"], 5);
    }

    #[test]
    fn events_follow_the_row_each_once() {
        let names: Vec<&str> = events(Host::QwenCode).into_iter().map(|(e, _)| e).collect();
        assert_eq!(
            names,
            [
                "UserPromptSubmit",
                "SessionStart",
                "PreCompact",
                "Stop",
                "SessionEnd"
            ]
        );
        assert_eq!(
            entry(Host::QwenCode, "c", Mode::Prompt)["hooks"][0]["timeout"],
            10
        );
    }

    #[test]
    fn setup_adds_ours_keeps_foreign_hooks_and_uninstall_restores_every_byte() {
        let path = Path::new("/h/.qwen/settings.json");
        let texts = [
            None,
            Some("{}\n"),
            Some("{\n  // mine\n  \"model\": {\"name\": \"x\"}\n}\n"),
            Some(
                "{\n  \"hooks\": {\n    \"UserPromptSubmit\": [\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"mine\", \"timeout\": 3}]}\n    ],\n    \"Stop\": []\n  },\n  \"x\": 1\n}\n",
            ),
        ];
        for text in texts {
            let (change, owned) = plan_file(path, text, &want(), None).unwrap();
            let new = String::from_utf8(change.unwrap().bytes).unwrap();
            let v = jsonc::parse(&new).unwrap();
            for (event, group) in want() {
                assert_eq!(
                    v["hooks"][&event].as_array().unwrap().last(),
                    Some(&group),
                    "{new}"
                );
            }
            if let Some(t) = text {
                // Foreign hooks first, untouched.
                let before = jsonc::parse(t).unwrap();
                if let Some(mine) = before["hooks"]["UserPromptSubmit"].as_array() {
                    assert_eq!(v["hooks"]["UserPromptSubmit"][0], mine[0]);
                }
            }
            // Idempotent: a second plan changes nothing.
            let (again, owned2) = plan_file(path, Some(&new), &want(), Some(&owned)).unwrap();
            assert!(again.is_none(), "{new}");
            assert_eq!(owned2, owned);
            // A moved hook executable replaces ours, and only ours.
            let (moved, owned3) = plan_file(
                path,
                Some(&new),
                &wanted(Host::QwenCode, "/new/hook"),
                Some(&owned),
            )
            .unwrap();
            let moved = String::from_utf8(moved.unwrap().bytes).unwrap();
            assert!(
                !moved.contains("/opt/hook") && moved.contains("/new/hook"),
                "{moved}"
            );
            // Uninstall gives back the original bytes (or removes the file we created).
            assert_eq!(
                unplan_file(&new, &owned).unwrap().as_deref(),
                text.filter(|_| !owned.created_file)
            );
            assert_eq!(
                unplan_file(&moved, &owned3).unwrap().as_deref(),
                text.filter(|_| !owned.created_file)
            );
        }
    }

    #[test]
    fn an_entry_the_user_changed_is_theirs_and_stays() {
        let path = Path::new("/h/settings.json");
        let (change, owned) = plan_file(path, Some("{\"a\": 1}\n"), &want(), None).unwrap();
        let new = String::from_utf8(change.unwrap().bytes).unwrap();
        let edited = new.replacen("\"timeout\": 10", "\"timeout\": 30", 1);
        assert_ne!(edited, new);
        let left = unplan_file(&edited, &owned).unwrap().unwrap();
        let v = jsonc::parse(&left).unwrap();
        assert_eq!(v["hooks"]["UserPromptSubmit"][0]["hooks"][0]["timeout"], 30);
        assert!(v["hooks"].get("Stop").is_none(), "{left}");
        assert_eq!(missing_events_in(&edited, &owned), ["UserPromptSubmit"]);
    }

    fn missing_events_in(text: &str, owned: &OwnedHooks) -> Vec<String> {
        let dir = std::env::temp_dir().join(format!("pc-settings-hooks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("settings.json");
        std::fs::write(&path, text).unwrap();
        let owned = OwnedHooks {
            path,
            ..owned.clone()
        };
        let missing = missing_events(&owned).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        missing
    }
}
