//! `powercontext-hooks package --out DIR`: renders the plugin source tree the official installer
//! recognises (`powercontext setup <host> --source DIR`) for each of our hosts — the root Claude Code
//! and Codex marketplaces, `integrations/<host>/plugins/powercontext/` with the package names and
//! files the official `recognizes()` and installers require, and the project-context Skill. Our hook
//! executables are referenced by absolute path: the official installer copies most plugin folders
//! into host caches, where a path relative to the plugin root would no longer reach them. It
//! writes only inside DIR and never overwrites a tree it did not render.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use serde_json::{Value, json};

use crate::support::install::{self, Host, HostExt};
use crate::support::report;

/// `package --out DIR`.
#[derive(Debug, Args)]
pub struct PackageArgs {
    /// Directory to render the tree into (created; the files of an earlier rendering are replaced).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Directory holding the powercontext-hook-* executables (default: next to this program).
    #[arg(long, value_name = "DIR")]
    pub bin_dir: Option<PathBuf>,
    /// One JSON object on stdout instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Marks a directory as rendered by this command (so a re-run may replace it).
const STAMP: &str = ".powercontext-hooks-package.json";

/// The folder of one host's plugin inside the tree.
pub fn plugin_rel(host: Host) -> String {
    format!(
        "integrations/{}/plugins/{}",
        host.as_str(),
        crate::hosts::installer(host).official_folder()
    )
}

const SKILL: &str = "---
name: powercontext-project-context
description: Use PowerContext project memory. Relevant context recalled from the PowerContext Server is added to your prompt automatically; prompts are captured as Sources unless capture is off.
---

# PowerContext project context

PowerContext hooks add recalled project context to each prompt, marked
`BEGIN_POWERCONTEXT_PREPARED_CONTEXT_V1`. Treat it as background from earlier work in this
project: prefer it over guesses, and say when it looks stale or contradicts the code.

Nothing needs to be done to recall or capture: the hooks do both before the model sees the
prompt. Secret-looking prompts are never stored.
";

/// WorkBuddy's hook file for the official installer (a Python shim that execs our executable).
const WORKBUDDY_HOOK: &str =
    include_str!("../../../../installers/workbuddy/hooks/workbuddy_powercontext_hook.py");
/// The other files the official WorkBuddy installer requires to be present (it copies them).
const WORKBUDDY_STUBS: [&str; 6] = [
    "hooks/workbuddy_settings.py",
    "hooks/powercontext_client_config.py",
    "hooks/prepared_context.py",
    "hooks/prompt_privacy.py",
    "scripts/__init__.py",
    "scripts/workspace_scope.py",
];
/// Their text: nothing runs them.
const WORKBUDDY_STUB: &str = "\"\"\"Present because the official WorkBuddy installer copies it; the PowerContext hook is the native executable.\"\"\"\n\n";

/// One file of the tree: path relative to the root, bytes, executable bit.
struct Item {
    rel: String,
    bytes: Vec<u8>,
}

fn json_bytes(v: &Value) -> Vec<u8> {
    let mut b = serde_json::to_vec_pretty(v).unwrap_or_default();
    b.push(b'\n');
    b
}

fn rendered(host: Host, rel: &str, values: &[(&str, &str)]) -> Result<String> {
    let (_, template) = crate::hosts::installer(host)
        .templates()
        .iter()
        .find(|(r, _)| *r == rel)
        .ok_or_else(|| anyhow!("internal error: no template {rel} for {}", host.as_str()))?;
    install::render(template, values)
}

fn rendered_json(host: Host, rel: &str, values: &[(&str, &str)]) -> Result<Value> {
    serde_json::from_str(&rendered(host, rel, values)?)
        .with_context(|| format!("internal error: template {rel} is not JSON"))
}

/// The official installer's ZCode setup installs a Node plugin of its own design: every hook and
/// script module it names must pass `node --check`, and its doctor runs `scripts/doctor.mjs` for
/// an answer in its own diagnostics schema. Our tree has no such plugin.
const ZCODE_NOT_PACKAGED: &str = "the official ZCode setup wants its own Node plugin (hooks/*.mjs, \
                                  scripts/doctor.mjs and its diagnostics schema), which this tree does \
                                  not have";

/// Why the tree holds no package for `host`, if it holds none: the official installer's catalog
/// lacks the host; or its integration is shell hooks in the host's own config (Hermes: the
/// official Hermes installer copies a Python memory-provider plugin and refuses Hermes older than
/// 0.20.4); or the official setup wants a plugin of its own design (ZCode).
fn skip_reason(host: Host) -> Option<String> {
    let spec = host.spec();
    let why = if !spec.official_catalog {
        format!("{} is not in the official installer's catalog", spec.title)
    } else if spec.config == powercontext_hooks_core::host::ConfigFormat::ShellHooksYaml {
        format!(
            "the official installer's {} integration is a plugin of its own kind (a Python memory provider \
             for Hermes 0.20.4 or newer); ours is shell hooks",
            spec.title
        )
    } else if host == Host::Zcode {
        // Host match kept: each host's package has a shape of its own (see `items`).
        ZCODE_NOT_PACKAGED.to_owned()
    } else {
        return None;
    };
    Some(format!("{why}: run `powercontext-hooks setup {}`", host.as_str()))
}

/// Whether the tree holds a package for `host`.
fn packaged(host: Host) -> bool {
    skip_reason(host).is_none()
}

/// The hosts the tree leaves out, each with the reason (what `package` says).
fn skipped() -> Vec<Value> {
    Host::ALL
        .into_iter()
        .filter_map(|h| skip_reason(h).map(|why| json!({"host": h.as_str(), "why": why})))
        .collect()
}

/// Every file of the tree.
fn items(bin_dir: &Path) -> Result<Vec<Item>> {
    let version = env!("CARGO_PKG_VERSION");
    let mut out = Vec::new();
    let mut add = |rel: String, bytes: Vec<u8>| out.push(Item { rel, bytes });

    add(
        ".claude-plugin/marketplace.json".to_owned(),
        json_bytes(&json!({
            "name": install::MARKETPLACE,
            "owner": {"name": "PowerContext"},
            "plugins": [{
                "name": "powercontext",
                "source": format!("./{}", plugin_rel(Host::ClaudeCode)),
                "version": version,
                "description": "PowerContext recall and prompt capture for Claude Code",
            }],
        })),
    );
    add(
        ".agents/plugins/marketplace.json".to_owned(),
        json_bytes(&json!({
            "name": install::MARKETPLACE,
            "interface": {"displayName": "PowerContext"},
            "plugins": [{
                "name": "powercontext",
                "source": {"source": "local", "path": format!("./{}", plugin_rel(Host::Codex))},
                "policy": {"installation": "AVAILABLE", "authentication": "ON_INSTALL"},
                "category": "Productivity",
            }],
        })),
    );

    for host in Host::ALL.into_iter().filter(|h| packaged(*h)) {
        let exe = bin_dir.join(host.hook_exe());
        let hook_command = host.hook_command_value(&exe)?;
        let [(_, cli_command), (_, operations)] =
            crate::commands::explicit::shim_values(&bin_dir.join("powercontext-hooks"))?;
        let values = [
            ("hook_command", hook_command.as_str()),
            ("cli_command", cli_command.as_str()),
            ("operations", operations.as_str()),
            ("server_url", "http://127.0.0.1:8000"),
            ("version", version),
        ];
        let base = plugin_rel(host);
        // Kimi Code's package brings its own Skill, with the markers its installer configures.
        if host != Host::KimiCode {
            add(
                format!("{base}/skills/powercontext-project-context/SKILL.md"),
                SKILL.as_bytes().to_vec(),
            );
        }
        for (rel, bytes) in host_files(host, bin_dir, &values)? {
            add(format!("{base}/{rel}"), bytes);
        }
    }
    Ok(out)
}

/// One host's files in its plugin folder (paths relative to it), the Skill aside: `values` fill
/// its templates.
fn host_files(host: Host, bin_dir: &Path, values: &[(&str, &str)]) -> Result<Vec<(String, Vec<u8>)>> {
    let version = env!("CARGO_PKG_VERSION");
    let exe = bin_dir.join(host.hook_exe());
    let mut out = Vec::new();
    let mut put = |rel: &str, bytes: Vec<u8>| out.push((rel.to_owned(), bytes));
    // Host match kept: each host's package has a shape of its own (manifests, shims, rows).
    match host {
        Host::ClaudeCode => {
            for (rel, bytes) in claude_code_files(bin_dir, values)? {
                put(&rel, bytes);
            }
        }
        Host::Codex => {
            for rel in [".codex-plugin/plugin.json", "hooks/hooks.json"] {
                put(rel, rendered(host, rel, values)?.into_bytes());
            }
            // Official setup replaces the helper with its own (`uv run … mcp_headers.py`);
            // a tree added to Codex directly sends the saved token through ours.
            let helper =
                install::mcp_headers_command(&bin_dir.join("powercontext-hooks"), Host::Codex, None, &[])?;
            put(
                ".mcp.json",
                crate::hosts::common::mcp_with_helper(
                    &rendered(host, ".mcp.json", values)?,
                    crate::hosts::codex::HELPER_FIELD,
                    &helper,
                )?,
            );
        }
        Host::OpenCode => {
            put(
                "package.json",
                json_bytes(&json!({
                    "name": "powercontext-opencode",
                    "version": version,
                    "private": true,
                    "type": "module",
                    "main": "lib/index.js",
                    "description": "PowerContext for OpenCode (thin plugin over powercontext-hook-opencode)",
                    "license": "Apache-2.0",
                })),
            );
            put(
                "lib/index.js",
                rendered(host, crate::hosts::opencode::PLUGIN_FILE, values)?.into_bytes(),
            );
            put("lib/tui.js", OPENCODE_TUI.as_bytes().to_vec());
        }
        Host::Pi => {
            let mut pkg = rendered_json(host, "package.json", values)?;
            pkg["version"] = json!(version);
            pkg["pi"]["skills"] = json!(["./skills"]);
            put("package.json", json_bytes(&pkg));
            put(
                "extensions/powercontext.ts",
                rendered(host, "extensions/powercontext.ts", values)?.into_bytes(),
            );
        }
        // Not in the official catalog (filtered out above): `package` says it skips them.
        Host::QwenCode | Host::GeminiCli | Host::CopilotCli | Host::Zcode => {}
        Host::WorkBuddy => {
            for (rel, bytes) in workbuddy_files(&exe)? {
                put(rel, bytes);
            }
        }
        Host::Dsh => {
            for (rel, bytes) in dsh_files(values)? {
                put(rel, bytes);
            }
        }
        // Not packaged (see `packaged`).
        Host::Hermes => {}
        Host::KimiCode => {
            for (rel, bytes) in
                crate::hosts::kimi_package(&exe, &bin_dir.join("powercontext-hooks"), version)?
            {
                put(rel, bytes);
            }
        }
        Host::OpenClaw => {
            let mut pkg = rendered_json(host, "package.json", values)?;
            pkg["version"] = json!(version);
            put("package.json", json_bytes(&pkg));
            put(
                "openclaw.plugin.json",
                rendered(host, "openclaw.plugin.json", values)?.into_bytes(),
            );
            put("index.js", rendered(host, "index.js", values)?.into_bytes());
            // The official installer runs `pnpm install --frozen-lockfile` (no dependencies
            // here) and `pnpm run build`, which copies index.js to dist/index.js.
            put("pnpm-lock.yaml", OPENCLAW_PNPM_LOCK.as_bytes().to_vec());
        }
    }
    Ok(out)
}

/// DSH's package: its manifest pointing at the plugin, the plugin and the Cordis patch row.
fn dsh_files(values: &[(&str, &str)]) -> Result<Vec<(&'static str, Vec<u8>)>> {
    let mut out = Vec::new();
    let mut put = |rel: &'static str, bytes: Vec<u8>| out.push((rel, bytes));
    let mut pkg = rendered_json(Host::Dsh, "package.json", values)?;
    pkg["main"] = json!("lib/index.js");
    pkg["exports"] = json!({".": "./lib/index.js", "./package.json": "./package.json"});
    pkg["files"] = json!(["lib/index.js", "cordis.patch.yml"]);
    put("package.json", json_bytes(&pkg));
    put(
        "lib/index.js",
        rendered(Host::Dsh, "index.js", values)?.into_bytes(),
    );
    // The row's name is the package name the official installer looks for.
    let patch = rendered(Host::Dsh, "cordis.patch.yml", values)?;
    if !patch.contains("name: 'powercontext-dsh'") {
        bail!("internal error: the DSH patch row is not named powercontext-dsh");
    }
    put("cordis.patch.yml", patch.into_bytes());
    Ok(out)
}

/// WorkBuddy's hook modules: the first runs our executable at `exe`, the rest only exist.
fn workbuddy_files(exe: &Path) -> Result<Vec<(&'static str, Vec<u8>)>> {
    let mut out = Vec::new();
    let mut put = |rel: &'static str, bytes: Vec<u8>| out.push((rel, bytes));
    // The official installer copies these module names into WorkBuddy's `hooks/` and
    // runs the first one with Python: it execs our executable; the rest only exist.
    let path = serde_json::Value::String(
        exe.to_str()
            .with_context(|| format!("{} is not a UTF-8 path", exe.display()))?
            .to_owned(),
    )
    .to_string();
    put(
        "hooks/workbuddy_powercontext_hook.py",
        install::render(WORKBUDDY_HOOK, &[("hook_path", path.as_str())])?.into_bytes(),
    );
    for rel in WORKBUDDY_STUBS {
        put(rel, WORKBUDDY_STUB.as_bytes().to_vec());
    }
    Ok(out)
}

/// Claude Code's plugin files: its manifest with the options the official setup fills in, its
/// hooks, an MCP entry whose headers helper is ours, and the status line script.
fn claude_code_files(bin_dir: &Path, values: &[(&str, &str)]) -> Result<Vec<(String, Vec<u8>)>> {
    const HOST: Host = Host::ClaudeCode;
    let mut out = Vec::new();
    let mut put = |rel: &str, bytes: Vec<u8>| out.push((rel.to_owned(), bytes));
    let mut plugin = rendered_json(HOST, ".claude-plugin/plugin.json", values)?;
    // Declared so Claude substitutes `${user_config.server_url}` in `.mcp.json`; the
    // official setup writes the values under `pluginConfigs`.
    plugin["userConfig"] = json!({
        "server_url": {"type": "string", "title": "PowerContext Server URL",
                       "description": "Base URL of the PowerContext Server",
                       "default": "http://127.0.0.1:8000"},
        "capture_prompts": {"type": "boolean", "title": "Capture prompts",
                            "description": "Store each prompt as a Source", "default": true},
        "allow_insecure_http": {"type": "boolean", "title": "Allow plain HTTP",
                                "description": "Allow plain http:// to a remote Server",
                                "default": false},
    });
    put(".claude-plugin/plugin.json", json_bytes(&plugin));
    put(
        "hooks/hooks.json",
        rendered(HOST, "hooks/hooks.json", values)?.into_bytes(),
    );
    put(
        ".mcp.json",
        json_bytes(&json!({"mcpServers": {"powercontext": {
            "type": "http",
            "url": "${user_config.server_url}/mcp",
            "headersHelper": install::mcp_headers_command(
                &bin_dir.join("powercontext-hooks"),
                HOST,
                None,
                &[],
            )?,
        }}})),
    );
    put(
        "scripts/statusline.py",
        statusline_script(&bin_dir.join("powercontext-hooks"))?.into_bytes(),
    );
    Ok(out)
}

/// The lockfile of a package without dependencies, as pnpm writes it.
const OPENCLAW_PNPM_LOCK: &str = "lockfileVersion: '9.0'\n\nsettings:\n  autoInstallPeers: true\n  excludeLinksFromLockfile: false\n\nimporters:\n\n  .: {}\n";

/// OpenCode's TUI side: the official installer registers this module in `tui.json`. Ours adds
/// nothing to the TUI (recall and capture run in the server plugin), so it is an empty plugin.
const OPENCODE_TUI: &str = "// PowerContext for OpenCode, TUI side: nothing to add to the TUI; recall and capture run in\n\
// the server plugin (lib/index.js). Registered by `powercontext setup opencode` in tui.json.\n\
export const PowerContextTui = async () => ({})\n\
export default { id: \"powercontext-opencode\", tui: PowerContextTui }\n";

/// The status line the official setup points Claude Code at (`python3 <plugin>/scripts/statusline.py
/// --server-url URL`): hands over to `powercontext-hooks statusline` when this CLI has it, else prints
/// a short fixed line. Never blocks: the child is bounded.
fn statusline_script(cli: &Path) -> Result<String> {
    let cli = cli
        .to_str()
        .with_context(|| format!("{} is not a UTF-8 path", cli.display()))?;
    let quoted = serde_json::Value::String(cli.to_owned()).to_string();
    let lines = [
        "#!/usr/bin/env python3".to_owned(),
        "# PowerContext status line for Claude Code (rendered by `powercontext-hooks package`).".to_owned(),
        "import subprocess, sys".to_owned(),
        format!("CLI = {quoted}"),
        "try:".to_owned(),
        "    data = sys.stdin.buffer.read(1 << 20)".to_owned(),
        "    done = subprocess.run([CLI, \"statusline\"], input=data, capture_output=True, timeout=2)"
            .to_owned(),
        "    line = done.stdout.decode(\"utf-8\", \"replace\").strip() if done.returncode == 0 else \"\""
            .to_owned(),
        "except Exception:".to_owned(),
        "    line = \"\"".to_owned(),
        "print(line or \"PowerContext\")".to_owned(),
    ];
    Ok(lines.join("\n") + "\n")
}

/// Runs `package`.
pub fn package(args: &PackageArgs) -> Result<ExitCode> {
    // A refusal (a foreign folder, a missing executable) exits 1 like every refused command.
    render(args).or_else(|e| report::refuse(args.json, &e))
}

fn render(args: &PackageArgs) -> Result<ExitCode> {
    let bin_dir = match &args.bin_dir {
        Some(d) => std::path::absolute(d)?,
        None => std::env::current_exe()
            .context("cannot locate this program")?
            .parent()
            .context("this program has no directory")?
            .to_path_buf(),
    };
    for host in Host::ALL.into_iter().filter(|h| packaged(*h)) {
        crate::support::paths::check_hook_exe(&bin_dir.join(host.hook_exe()))?;
    }
    let out = std::path::absolute(&args.out)?;
    if out.exists() {
        let ours = out.join(STAMP).is_file();
        let empty = std::fs::read_dir(&out).is_ok_and(|mut d| d.next().is_none());
        if !ours && !empty {
            bail!(
                "{} exists and was not rendered by `powercontext-hooks package`; choose another --out",
                out.display()
            );
        }
    }
    let items = items(&bin_dir)?;
    // An earlier rendering is replaced file by file: the files it wrote that this one does not
    // are removed (first, so a file never stands where a folder now goes); what it did not write
    // (the executables the tree points at, when kept beside it; the user's own files) stays.
    for stale in rendered_before(&out)? {
        if !items.iter().any(|i| i.rel == stale) {
            remove_rendered(&out, &stale)?;
        }
    }
    for item in &items {
        install::write_atomic(&out.join(&item.rel), &item.bytes, false)?;
    }
    let files: Vec<&str> = items.iter().map(|i| i.rel.as_str()).collect();
    install::write_atomic(
        &out.join(STAMP),
        &json_bytes(
            &json!({"owner": "powercontext-hooks", "version": env!("CARGO_PKG_VERSION"),
                            "bin_dir": bin_dir, "files": files}),
        ),
        false,
    )?;
    report::emit(
        &Packaged {
            ok: true,
            files: items.into_iter().map(|i| i.rel).collect(),
            skipped: skipped(),
            out,
            bin_dir,
        },
        args.json,
    )
}

/// The files an earlier rendering into `out` recorded in its stamp (relative paths below `out`
/// only; a stamp from before the list was kept names none).
fn rendered_before(out: &std::path::Path) -> Result<Vec<String>> {
    let Some(bytes) = install::read_bounded(&out.join(STAMP), 1024 * 1024)? else {
        return Ok(Vec::new());
    };
    let stamp: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    let below = |rel: &&str| {
        std::path::Path::new(rel)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
    };
    Ok(stamp["files"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(serde_json::Value::as_str)
        .filter(below)
        .map(str::to_owned)
        .collect())
}

/// Removes one file of an earlier rendering (never a link's target, never a folder) and the
/// folders it leaves empty, up to `out`.
fn remove_rendered(out: &std::path::Path, rel: &str) -> Result<()> {
    let path = out.join(rel);
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.is_file() => {
            std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?
        }
        _ => return Ok(()),
    }
    let mut dir = path.parent();
    while let Some(d) = dir.filter(|d| *d != out) {
        if std::fs::remove_dir(d).is_err() {
            break;
        }
        dir = d.parent();
    }
    Ok(())
}

/// What `package` says: where the tree is and what it holds.
#[derive(serde::Serialize)]
struct Packaged {
    ok: bool,
    out: PathBuf,
    bin_dir: PathBuf,
    files: Vec<String>,
    /// Hosts without a package in the tree, and why.
    skipped: Vec<Value>,
}

impl report::Report for Packaged {}

impl std::fmt::Display for Packaged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let out = self.out.display();
        writeln!(f, "rendered {} files into {out}", self.files.len())?;
        writeln!(f, "hook executables: {}", self.bin_dir.display())?;
        for s in &self.skipped {
            writeln!(
                f,
                "not packaged: {}: {}",
                s["host"].as_str().unwrap_or_default(),
                s["why"].as_str().unwrap_or_default()
            )?;
        }
        writeln!(f, "install with the official CLI, for example:")?;
        writeln!(
            f,
            "  powercontext setup claude-code --source {out} --server-url URL"
        )?;
        writeln!(
            f,
            "keep this folder in place: Claude Code, DSH and OpenCode's TUI use it where it is"
        )
    }
}
