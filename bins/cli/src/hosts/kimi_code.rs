//! Kimi Code's installer: our `[[hooks]]` tables (one per event of the host's row) in Kimi's own
//! `config.toml`, as one marked block appended after the user's text and removed byte for byte,
//! and doctor's check of that block and synthetic `UserPromptSubmit`. It never edits anything of
//! the file outside its own block, and refuses a file the block would make invalid TOML.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use powercontext_hooks_core::env::Env;
use serde_json::{Value, json};

use super::common::{channel_context, table_home};
use crate::installer::checks::{Report, Tier};
use crate::installer::contract::{Activation, Calls, Installer, Undo};
use crate::installer::plan::{Plan, SetupArgs, Step};
use crate::installer::undo::Done;
use crate::support::install::{self, Host, HostExt, Manifest, Registrations};
use crate::support::paths::Paths;

pub(super) struct KimiCode;

/// The plugin the official `powercontext setup kimi-code` installs (`package` renders it): the
/// manifest and files its installer requires, with one `UserPromptSubmit` Node hook that hands
/// Kimi's payload to our executable. `{{…}}` are rendered by [`package_files`].
const PACKAGE: &[(&str, &str)] = &[
    (
        "kimi.plugin.json",
        include_str!("../../../../installers/kimi-code/kimi.plugin.json"),
    ),
    (
        "profiles.json",
        include_str!("../../../../installers/kimi-code/profiles.json"),
    ),
    (
        "hooks/user_prompt_submit.mjs",
        include_str!("../../../../installers/kimi-code/hooks/user_prompt_submit.mjs"),
    ),
    (
        "shared/runtime.mjs",
        include_str!("../../../../installers/kimi-code/shared/runtime.mjs"),
    ),
    (
        "shared/mcp.mjs",
        include_str!("../../../../installers/kimi-code/shared/mcp.mjs"),
    ),
    (
        "shared/observations.mjs",
        include_str!("../../../../installers/kimi-code/shared/observations.mjs"),
    ),
    (
        "scripts/doctor.mjs",
        include_str!("../../../../installers/kimi-code/scripts/doctor.mjs"),
    ),
    (
        "scripts/scope.mjs",
        include_str!("../../../../installers/kimi-code/scripts/scope.mjs"),
    ),
    (
        "scripts/status.mjs",
        include_str!("../../../../installers/kimi-code/scripts/status.mjs"),
    ),
    (
        "skills/powercontext-project-context/SKILL.md",
        include_str!("../../../../installers/kimi-code/skills/powercontext-project-context/SKILL.md"),
    ),
    (
        "skills/powercontext-project-context/.powercontext-guidance.json",
        include_str!(
            "../../../../installers/kimi-code/skills/powercontext-project-context/.powercontext-guidance.json"
        ),
    ),
];

/// The official-installer package: (path in the plugin folder, bytes), with our hook executable and
/// CLI by absolute path (the installer copies the folder under Kimi's home).
pub(crate) fn package_files(hook: &Path, cli: &Path, version: &str) -> Result<Vec<(&'static str, Vec<u8>)>> {
    let js = |p: &Path| -> Result<String> {
        let text = p
            .to_str()
            .with_context(|| format!("{} is not a UTF-8 path", p.display()))?;
        let quoted = Value::String(text.to_owned()).to_string();
        Ok(quoted[1..quoted.len() - 1].to_owned())
    };
    let (hook, cli) = (js(hook)?, js(cli)?);
    let values = [
        ("hook_path", hook.as_str()),
        ("cli_path", cli.as_str()),
        ("server_url", "http://127.0.0.1:8000"),
        ("version", version),
    ];
    PACKAGE
        .iter()
        .map(|(rel, template)| Ok((*rel, install::render(template, &values)?.into_bytes())))
        .collect()
}

/// The first line of our block. Its variant with [`JOINED`] says setup also added the newline that
/// ended the user's last line, so uninstall takes that back too.
const BEGIN: &str = "# >>> powercontext-hooks: managed by `powercontext-hooks setup kimi-code`; `powercontext-hooks uninstall kimi-code` removes it";
/// Marks a block whose leading newline setup added.
const JOINED: &str = " (newline added)";
/// The last line of our block.
const END: &str = "# <<< powercontext-hooks";

/// Seconds Kimi gives each of our hooks (Kimi's unit; the hook's own budget is shorter).
fn timeout_secs(event: &str) -> u32 {
    if event == Host::KimiCode.spec().events.prompt {
        10
    } else {
        5
    }
}

/// The events our hook is registered for: the row's prompt, compaction and boundary events.
fn events() -> Vec<&'static str> {
    let e = &Host::KimiCode.spec().events;
    let mut out = vec![e.prompt];
    out.extend(e.compaction);
    for b in e.boundary {
        if !out.contains(b) {
            out.push(b);
        }
    }
    out
}

/// `config.toml` in Kimi's home.
fn config_path(env: &Env) -> Option<PathBuf> {
    table_home(env, Host::KimiCode).map(|h| h.join("config.toml"))
}

/// A TOML basic string (JSON's escapes are TOML's).
fn toml_string(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

/// Our block's lines for the hook command (without the leading newline setup may add).
fn block(command: &str, joined: bool) -> String {
    let mut s = String::from(BEGIN);
    if joined {
        s.push_str(JOINED);
    }
    s.push('\n');
    for event in events() {
        s.push_str(&format!(
            "[[hooks]]\nevent = {}\ncommand = {}\ntimeout = {}\n",
            toml_string(event),
            toml_string(command),
            timeout_secs(event)
        ));
    }
    s.push_str(END);
    s.push('\n');
    s
}

/// Where our block sits in `text`: (start, end) byte offsets, the start including the newline
/// setup added before it. `None` when there is none; an error for a damaged one.
fn find_block(text: &str) -> Result<Option<(usize, usize)>> {
    let Some(begin) = text.find(BEGIN) else {
        return Ok(None);
    };
    if begin > 0 && text.as_bytes()[begin - 1] != b'\n' {
        bail!("the powercontext-hooks block in Kimi's config.toml does not start a line: remove it by hand");
    }
    let rest = &text[begin..];
    // The journal restyles the block to a CRLF file's line endings, so either ending marks a line.
    let end_line = |at: usize| {
        let tail = &rest[at..];
        tail.strip_prefix(END)
            .and_then(|t| t.strip_prefix("\r\n").or_else(|| t.strip_prefix('\n')))
            .map(|t| rest.len() - t.len())
    };
    let Some(end_at) = rest
        .match_indices(&format!("\n{END}"))
        .find_map(|(at, _)| end_line(at + 1))
    else {
        bail!("the powercontext-hooks block in Kimi's config.toml has lost its end line: remove it by hand");
    };
    let end = begin + end_at;
    let after_begin = rest[BEGIN.len()..].strip_prefix(JOINED);
    let start = match after_begin {
        // The newline setup added was restyled with the block: take back what it became.
        Some(t) if t.starts_with("\r\n") && text[..begin].ends_with("\r\n") => begin - 2,
        Some(t) if t.starts_with('\n') || t.starts_with("\r\n") => begin - 1,
        _ => begin,
    };
    if text[end..].contains(BEGIN) {
        bail!("Kimi's config.toml holds two powercontext-hooks blocks: remove them by hand");
    }
    Ok(Some((start, end)))
}

/// `text` without our block.
fn without_block(text: &str) -> Result<String> {
    Ok(match find_block(text)? {
        Some((start, end)) => format!("{}{}", &text[..start], &text[end..]),
        None => text.to_owned(),
    })
}

/// `text` with our block for `command` (replacing an earlier one), checked to be valid TOML.
fn with_block(text: &str, command: &str) -> Result<String> {
    let base = without_block(text)?;
    let joined = !base.is_empty() && !base.ends_with('\n');
    let mut out = base;
    if joined {
        out.push('\n');
    }
    out.push_str(&block(command, joined));
    // In the file's own line endings (and BOM) from the start, so a rerun finds nothing to change.
    if let Some(styled) = install::restyled(text.as_bytes(), out.as_bytes()) {
        out = String::from_utf8(styled).context("restyled config.toml is not UTF-8")?;
    }
    toml::from_str::<toml::Table>(&out).map_err(|e| {
        anyhow::anyhow!(
            "adding our [[hooks]] tables would make Kimi's config.toml invalid TOML ({}): a `hooks` key that is \
             not an array of tables? Fix the file, then run setup again",
            e.message()
        )
    })?;
    Ok(out)
}

/// Reads Kimi's config as UTF-8 (`None`: no file yet).
fn read_text(path: &Path) -> Result<Option<String>> {
    let Some(bytes) = install::read_opt(path)? else {
        return Ok(None);
    };
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| anyhow::anyhow!("{} is not UTF-8: fix it first", path.display()))
}

/// The hooks Kimi would run from `text` for our events: (event, command, timeout).
fn listed_hooks(text: &str) -> Result<Vec<(String, String, Option<i64>)>> {
    let table: toml::Table =
        toml::from_str(text).map_err(|e| anyhow::anyhow!("invalid TOML: {}", e.message()))?;
    Ok(table
        .get("hooks")
        .and_then(toml::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|h| {
            Some((
                h.get("event")?.as_str()?.to_owned(),
                h.get("command")?.as_str()?.to_owned(),
                h.get("timeout").and_then(toml::Value::as_integer),
            ))
        })
        .collect())
}

/// The plugin the official `powercontext setup kimi-code` installed from our package: registered
/// and enabled in Kimi's `plugins/installed.json`, its runtime naming our hook executable.
fn official_plugin(env: &Env) -> std::result::Result<PathBuf, String> {
    let home = table_home(env, Host::KimiCode).ok_or("HOME is not set")?;
    let registry = home.join("plugins/installed.json");
    let listed = install::read_opt(&registry)
        .ok()
        .flatten()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .ok_or_else(|| format!("{} lists no plugins", registry.display()))?;
    let record = listed["plugins"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["id"] == "powercontext")
        .ok_or_else(|| format!("{} lists no powercontext plugin", registry.display()))?;
    if record["enabled"] != true {
        return Err("Kimi's powercontext plugin is disabled".to_owned());
    }
    let root = PathBuf::from(
        record["root"]
            .as_str()
            .ok_or("its plugin record names no folder")?,
    );
    let runtime = install::read_opt(&root.join("shared/runtime.mjs")).ok().flatten();
    if !runtime.is_some_and(|b| String::from_utf8_lossy(&b).contains(Host::KimiCode.hook_exe())) {
        return Err(format!(
            "the powercontext plugin at {} is not our package",
            root.display()
        ));
    }
    Ok(root)
}

impl Installer for KimiCode {
    fn templates(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    fn home(&self, env: &Env) -> Option<PathBuf> {
        table_home(env, Host::KimiCode)
    }

    fn plan(&self, _args: &SetupArgs, paths: &Paths, plan: &mut Plan) -> Result<()> {
        let path = config_path(&paths.env).context("cannot find Kimi's config directory: set HOME")?;
        let text = read_text(&path)?.unwrap_or_default();
        let command = install::hook_command_shell(&plan.hook_exe)?;
        if with_block(&text, &command)? != text {
            plan.steps.push(Step::Install);
        }
        Ok(())
    }

    fn describe(&self, plan: &Plan, _step: Step) -> String {
        format!(
            "add our [[hooks]] tables ({}) to Kimi's config.toml, running {}",
            events().join(", "),
            plan.hook_exe.display()
        )
    }

    fn run_step(&self, plan: &Plan, paths: &Paths, _step: Step, regs: &mut Registrations) -> Result<()> {
        let path = config_path(&paths.env).context("cannot find Kimi's config directory: set HOME")?;
        let text = read_text(&path)?.unwrap_or_default();
        let new = with_block(&text, &install::hook_command_shell(&plan.hook_exe)?)?;
        install::write_through(&path, new.as_bytes(), false)?;
        regs.plugin = true;
        Ok(())
    }

    fn host_files(&self, _plan: &Plan, paths: &Paths, _home: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
        (config_path(&paths.env).into_iter().collect(), Vec::new())
    }

    fn verify(&self, plan: &Plan, paths: &Paths) -> Result<()> {
        let path = config_path(&paths.env).context("cannot find Kimi's config directory")?;
        let text = read_text(&path)?.unwrap_or_default();
        let want = install::hook_command_shell(&plan.hook_exe)?;
        let hooks = listed_hooks(&text)?;
        for event in events() {
            if !hooks.iter().any(|(e, c, _)| e == event && *c == want) {
                bail!("{} does not hold our {event} hook after setup", path.display());
            }
        }
        Ok(())
    }

    fn unregister(&self, _m: &Manifest, undo: &mut Undo<'_>) -> Result<()> {
        let Some(path) = config_path(&undo.paths.env) else {
            return Ok(());
        };
        let Some(text) = read_text(&path)? else {
            return Ok(());
        };
        if find_block(&text)?.is_none() {
            return Ok(());
        }
        undo.actions
            .push(Done::member(&path, "[[hooks]] (powercontext-hooks block)"));
        if !undo.dry {
            install::write_through(&path, without_block(&text)?.as_bytes(), false)?;
        }
        Ok(())
    }

    fn check_activated(&self, a: &Activation<'_>, r: &mut Report) {
        let Some(path) = config_path(&a.paths.env) else {
            r.fail(
                Tier::Activated,
                "hook loaded",
                "no HOME: cannot find Kimi's config.toml",
                "set HOME",
            );
            return;
        };
        let listed = read_text(&path).and_then(|t| listed_hooks(&t.unwrap_or_default()));
        let hooks = match listed {
            Ok(h) => h,
            Err(e) => {
                r.fail(
                    Tier::Activated,
                    "hook loaded",
                    format!("{}: {e:#} (Kimi runs no hook from it)", path.display()),
                    "fix Kimi's config.toml",
                );
                return;
            }
        };
        let want = a
            .manifest
            .and_then(|m| install::hook_command_shell(&m.hook_exe).ok());
        let ours: Vec<_> = hooks
            .iter()
            .filter(|(_, c, _)| {
                want.as_deref()
                    .map_or(c.contains(Host::KimiCode.hook_exe()), |w| c == w)
            })
            .collect();
        let missing: Vec<&str> = events()
            .into_iter()
            .filter(|ev| !ours.iter().any(|(e, _, _)| e == ev))
            .collect();
        if ours.is_empty() && a.manifest.is_none() {
            match official_plugin(&a.paths.env) {
                Ok(root) => r.ok(
                    Tier::Activated,
                    "hook loaded",
                    format!(
                        "the official installer's plugin at {} (our package) is registered and enabled",
                        root.display()
                    ),
                ),
                Err(why) => r.fail(
                    Tier::Activated,
                    "hook loaded",
                    format!(
                        "{} holds no hook running our executable, and {why}",
                        path.display()
                    ),
                    a.setup_cmd,
                ),
            }
        } else if ours.is_empty() {
            r.fail(
                Tier::Activated,
                "hook loaded",
                format!("{} holds no hook running our executable", path.display()),
                a.setup_cmd,
            );
        } else if missing.is_empty() {
            r.ok(
                Tier::Activated,
                "hook loaded",
                format!(
                    "{} [[hooks]] in {} ({})",
                    ours.len(),
                    path.display(),
                    events().join(", ")
                ),
            );
        } else {
            r.fail(
                Tier::Activated,
                "hook loaded",
                format!("{} lacks our {} hook(s)", path.display(), missing.join(", ")),
                a.setup_cmd,
            );
        }
    }

    fn synthetic_calls(&self, cwd: &str, session: &str, prompt: &str) -> Calls {
        // Kimi's own payload shape: the prompt as a list of content parts.
        vec![(
            Vec::new(),
            json!({"hook_event_name": Host::KimiCode.spec().events.prompt, "session_id": session, "cwd": cwd,
                   "client_type": "kimi_code_cli", "prompt": [{"type": "text", "text": prompt}], "is_steer": false}),
        )]
    }

    fn context<'a>(&self, answer: &'a Value) -> &'a Value {
        channel_context(Host::KimiCode, answer)
    }

    fn silence_causes(&self) -> (&'static str, &'static str) {
        (
            "Kimi reads another config.toml (KIMI_CODE_HOME set differently), the file no longer parses, or our \
             [[hooks]] block was removed",
            "powercontext-hooks setup kimi-code, then start Kimi from a shell with the same environment",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_block_round_trips_byte_for_byte() {
        for user in [
            "",
            "# mine\n",
            "default_model = \"x\"\n\n[providers.a]\nkey = 1\n",
            "[[hooks]]\nevent = \"Stop\"\ncommand = \"mine\"\n",
            "no_newline_at_end = true",
            "# crlf\r\nkey = 2\r\n",
        ] {
            let added = with_block(user, "/opt/pc hook").unwrap();
            assert!(added.starts_with(user), "{user:?}");
            assert_eq!(without_block(&added).unwrap(), user, "{user:?}");
            // Again with another command: replaced, not doubled.
            let again = with_block(&added, "/new/exe").unwrap();
            assert_eq!(again.matches(BEGIN).count(), 1);
            assert_eq!(without_block(&again).unwrap(), user);
            let hooks = listed_hooks(&again).unwrap();
            for event in events() {
                assert!(
                    hooks
                        .iter()
                        .any(|(e, c, t)| e == event && c == "/new/exe" && t.is_some()),
                    "{event}"
                );
            }
        }
    }

    /// A CRLF file gets a CRLF block, and a block the journal restyled to CRLF after the fact
    /// (as an earlier setup left it) is still found, replaced and removed byte for byte.
    #[test]
    fn a_crlf_block_round_trips_byte_for_byte() {
        for user in [
            "a = 1\r\n[b]\r\nc = 2\r\n",
            "a = 1\r\n[b]\r\nc = 2",
            "\u{feff}# bom\r\nkey = 2\r\n",
            "lone_cr = 1\r",
        ] {
            let crlf = user.contains('\n');
            let added = with_block(user, "/opt/pc hook").unwrap();
            assert!(added.starts_with(user), "{user:?}");
            if crlf {
                assert_eq!(
                    added.matches('\n').count(),
                    added.matches("\r\n").count(),
                    "{added:?}"
                );
            }
            // What the journal's restyle makes of an LF block in this file.
            let mut lf = without_block(&added).unwrap();
            if !lf.is_empty() && !lf.ends_with('\n') {
                lf.push('\n');
            }
            lf.push_str(&block("/opt/pc hook", !user.ends_with('\n')));
            let restyled = install::restyled(user.as_bytes(), lf.as_bytes())
                .map_or(lf, |b| String::from_utf8(b).unwrap());
            for text in [added, restyled] {
                assert_eq!(without_block(&text).unwrap(), user, "{text:?}");
                assert_eq!(
                    with_block(&text, "/opt/pc hook").unwrap(),
                    text,
                    "a rerun changes nothing"
                );
                let again = with_block(&text, "/new/exe").unwrap();
                assert_eq!(again.matches(BEGIN).count(), 1);
                assert_eq!(without_block(&again).unwrap(), user);
            }
        }
    }

    #[test]
    fn a_file_the_block_would_break_is_refused() {
        assert!(with_block("hooks = []\n", "x").is_err());
        assert!(with_block("[hooks]\na = 1\n", "x").is_err());
        let cut = format!("a = 1\n{BEGIN}\n[[hooks]]\n");
        assert!(find_block(&cut).is_err());
    }

    #[test]
    fn every_row_event_but_session_start_is_registered() {
        assert_eq!(events(), ["UserPromptSubmit", "PreCompact", "Stop", "SessionEnd"]);
        assert!(block("c", false).contains("timeout = 10"));
    }
}
