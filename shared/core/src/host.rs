//! The host table: every fact about a supported coding-agent host, as data, in one row per host
//! ([`HOSTS`]). Code asks the table (through [`Integration::spec`]) instead of matching on the
//! host. This module is a leaf: it imports nothing from the crate, so every layer may read it.

/// One of the supported coding-agent hosts: the key of its row in [`HOSTS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Integration {
    /// Claude Code (`UserPromptSubmit` command hook).
    ClaudeCode,
    /// Codex CLI (`UserPromptSubmit` command hook).
    Codex,
    /// OpenCode (`chat.message` + `experimental.chat.messages.transform`).
    OpenCode,
    /// Pi (`before_agent_start` + boundary events).
    Pi,
    /// DeepSeek Harness (`agent/pre-step`).
    Dsh,
    /// Qwen Code (`UserPromptSubmit` command hook in its settings file).
    QwenCode,
    /// Gemini CLI (`BeforeAgent` command hook in its settings file).
    GeminiCli,
    /// GitHub Copilot CLI (`UserPromptSubmit` command hook in its settings file).
    CopilotCli,
    /// WorkBuddy (`UserPromptSubmit` command hook in its settings file; a desktop app).
    WorkBuddy,
    /// Hermes Agent (`pre_llm_call` shell hook).
    Hermes,
    /// Kimi Code (`UserPromptSubmit` command hook in its `config.toml`).
    KimiCode,
    /// OpenClaw (`before_prompt_build` in an in-process plugin).
    OpenClaw,
    /// ZCode (`UserPromptSubmit` process hook in a plugin's `hooks.json`).
    Zcode,
}

/// Everything the hooks and the CLI know of one host.
#[derive(Debug)]
pub struct HostSpec {
    /// The host this row describes.
    pub host: Integration,
    /// The integration name used in Server binding keys, on command lines and by the official CLI.
    pub name: &'static str,
    /// Other names users write for it (none is accepted on a command line yet).
    pub aliases: &'static [&'static str],
    /// The host's name in sentences.
    pub title: &'static str,
    /// The middle part of this host's environment variables: `POWERCONTEXT_<PART>_…`.
    pub env_part: &'static str,
    /// The `source_id` prefix of captured prompts (upstream-compatible).
    pub source_prefix: &'static str,
    /// The diagnostic component prefix: `powercontext.<name>`.
    pub component: &'static str,
    /// Our hook executable's file name.
    pub hook_exe: &'static str,
    /// The host's own CLI.
    pub cli: HostCliSpec,
    /// The host's configuration root as the official CLI computes it.
    pub config_home: ConfigHome,
    /// The variable the official integration reads a raw Server token from, besides
    /// `POWERCONTEXT_CLIENT_API_TOKEN` (Kimi Code's plugin: `POWERCONTEXT_KIMI_TOKEN`).
    pub token_var: Option<&'static str>,
    /// How the host's config is written (what kind of installer serves it).
    pub config: ConfigFormat,
    /// How the workspace key is derived from the working directory.
    pub workspace_key: WorkspaceKey,
    /// Which host event means what.
    pub events: Events,
    /// Where the injected context goes on stdout.
    pub output: OutputChannel,
    /// The unit of the hook timeout in the host's config.
    pub timeout_unit: TimeoutUnit,
    /// What the host does and what the hooks may rely on.
    pub capabilities: Capabilities,
    /// How the host offers the explicit operations and what gates a mutation there.
    pub explicit: ExplicitSurface,
    /// Whether the official installer's catalog has this host (`powercontext setup <name>`):
    /// `package` renders an official-installer tree only for such hosts and says it skips the rest.
    pub official_catalog: bool,
}

/// How a host offers the curated explicit operations (`powercontext-hooks op`) and what gates a
/// mutation there (the README table and docs/operations.md say the same).
#[derive(Debug)]
pub struct ExplicitSurface {
    /// Native tools (our shim calls `powercontext-hooks op`), or else the Server's own MCP.
    pub native_tools: bool,
    /// What asks before a mutation.
    pub gate: &'static str,
    /// What a mutation does when nobody can be asked.
    pub without_ui: &'static str,
}

/// The host's own CLI: the executable setup and doctor drive.
#[derive(Debug)]
pub struct HostCliSpec {
    /// The executable's name; empty for a host without a CLI (WorkBuddy, a desktop app): setup
    /// and doctor then check no version, and say the host is not validated in a real host.
    pub name: &'static str,
    /// Variables our calls of the host CLI set: they only list and register, so nothing the
    /// host would do besides (Claude's CLI writes and tries to send telemetry events under
    /// `~/.claude` on every call, so even a dry run would leave files).
    pub env: &'static [(&'static str, &'static str)],
    /// Host versions our real-host tests cover (the pins in tests/e2e/**/package.json); none for
    /// a host no real-host test runs.
    pub tested_versions: &'static [&'static str],
}

/// A config home: `$var` when set, else `$HOME/<rel>` (with [`ConfigHome::var_is_home`]:
/// `$var/<rel>` when set).
#[derive(Debug)]
pub struct ConfigHome {
    /// The variable that moves it.
    pub var: &'static str,
    /// Its place under `HOME`.
    pub rel: &'static str,
    /// Whether the variable stands in for `HOME` (Gemini CLI's `GEMINI_CLI_HOME`: the config
    /// home is then `$GEMINI_CLI_HOME/.gemini`) rather than naming the config home itself.
    pub var_is_home: bool,
}

impl ConfigHome {
    /// The config home from the variable's value and `HOME` (blank values count as unset).
    #[must_use]
    pub fn path(&self, var: Option<&str>, home: Option<&str>) -> Option<std::path::PathBuf> {
        let set = |v: Option<&str>| v.filter(|v| !v.trim().is_empty()).map(std::path::PathBuf::from);
        match set(var).filter(|_| !self.var.is_empty()) {
            Some(v) if self.var_is_home => Some(v.join(self.rel)),
            Some(v) => Some(v),
            None => set(home).map(|h| h.join(self.rel)),
        }
    }
}

/// How a host's config is written, which decides the installer that serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigFormat {
    /// A plugin folder with a JSON hooks file, registered through a marketplace (Claude Code,
    /// Codex).
    PluginHooksJson,
    /// A JavaScript shim in the host's plugin or extension folder (OpenCode, Pi).
    JsShim,
    /// A plugin registered through the host CLI with its own manifest (DSH).
    HostPlugin,
    /// Shell-hook commands in the host's YAML config, each needing the user's recorded consent
    /// (Hermes).
    ShellHooksYaml,
    /// `[[hooks]]` tables of ours in the host's own TOML config, the rest of the file kept byte
    /// for byte (Kimi Code).
    HooksToml,
    /// Claude-style command hooks in a `"hooks"` object of the host's own settings file
    /// (`<config home>/<file>`), one entry per event of the row's [`Events`], its timeout in the
    /// row's [`TimeoutUnit`] (Qwen Code).
    SettingsHooks {
        /// The settings file's name under the config home.
        file: &'static str,
        /// What follows the hook's path in the command the host's shell runs: empty for most
        /// hosts; Gemini CLI blocks the prompt on any exit code but 0 and 1 (a missing
        /// executable is the shell's 127), so there it is ` || exit 1` and a hook that cannot
        /// start is a warning, not a blocked turn.
        command_tail: &'static str,
    },
    /// A plugin folder of ours holding `hooks/hooks.json` with process hooks (`command`, `args`,
    /// the timeout in the row's [`TimeoutUnit`]), registered by its path in the host's plugin
    /// list (`<config home>/<file>`, member `plugins.dirs`) (ZCode).
    PluginDirsHooks {
        /// The host config file (under the config home) that lists plugin folders.
        file: &'static str,
    },
}

/// How the workspace key is derived from the working directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkspaceKey {
    /// The Git toplevel (or cwd), symlinks resolved (the Python-family upstream clients).
    Resolved,
    /// The Git toplevel (or cwd), kept lexical (the Node-family upstream clients).
    Lexical,
}

/// The host's event vocabulary: which of its events means prompt, session start, compaction,
/// a boundary (where pending captures are flushed) and the session's end.
#[derive(Debug)]
pub struct Events {
    /// The event whose answer carries the recalled context for a prompt.
    pub prompt: &'static str,
    /// The session-start event our hook answers, if the host gives it one.
    pub session_start: Option<&'static str>,
    /// The event before a compaction, if the host gives it one.
    pub compaction: Option<&'static str>,
    /// Events at which pending captures are flushed.
    pub boundary: &'static [&'static str],
    /// The event at the session's end, if the host gives it one.
    pub end: Option<&'static str>,
}

/// Where the injected context goes on the hook's stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputChannel {
    /// Claude-style `{"hookSpecificOutput": {"hookEventName": …, "additionalContext": …}}`.
    HookSpecificOutput,
    /// A top-level `{"additionalContext": …}`.
    TopLevelAdditionalContext,
    /// A plain `{"message": …}` that the host also shows the user (Kimi Code echoes it to the
    /// terminal), so the context goes in as plain lines (the `plain` module).
    Message,
    /// A plain `{"context": …}`.
    Context,
    /// Our own JSON protocol with the host's shim (OpenCode, Pi, DSH).
    Shim,
}

/// The unit of the hook timeout in the host's config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutUnit {
    /// Seconds.
    Seconds,
    /// Milliseconds.
    Milliseconds,
    /// The host sets no timeout of ours (the shim keeps its own deadline).
    None,
}

/// What a host does, as yes/no facts the shared code branches on.
#[derive(Debug)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent facts of one host, one column each"
)]
pub struct Capabilities {
    /// Whether a session's first prompt bootstraps it: hosts whose plugin API gives the hook no
    /// session-start event of its own. Claude Code and Codex bootstrap in their `SessionStart`
    /// hook instead (and after a compaction, at the next prompt if no `SessionStart` did).
    pub bootstraps_at_first_prompt: bool,
    /// Whether a resumed session's transcript still holds the package its `SessionStart` hook
    /// injected: Codex replays it from the session's rollout on resume, so injecting it again
    /// would repeat it; Claude Code's resumed transcript drops it, so there it comes back only if
    /// the resume's own `SessionStart` injects it.
    pub resume_keeps_start_context: bool,
    /// Whether what a hook injects stays in the host's conversation for later turns (Claude Code's
    /// and Codex's hook context, DSH's plugin messages). Pi replaces its system prompt each turn
    /// and OpenCode's transform changes only the request in flight: there, every turn must carry
    /// what it needs, so nothing is remembered as already injected.
    pub injection_persists: bool,
    /// Whether every capture is flushed (Pi's contract): at once with `flush_on_capture`, retrying
    /// a failed call, else kept pending until a boundary or the drainer flushes it.
    pub flushes_every_capture: bool,
    /// Whether the host hands the hook command to `sh -c` inside a JSON string (so it is
    /// shell-quoted); the JavaScript shims spawn it directly from a string literal.
    pub hook_command_in_shell: bool,
    /// Whether the host's plugin options (`CLAUDE_PLUGIN_OPTION_*`) feed the settings.
    pub plugin_option_vars: bool,
    /// Whether the host hands its plugin a profile row (DSH): the row's base URL and token are
    /// official sources, and its scope ids may be longer than the usual bound.
    pub profile_rows: bool,
    /// Whether the host's shim also passes its timeouts in milliseconds (OpenCode upstream's
    /// variables, see [`crate::variables::OPENCODE_REQUEST_TIMEOUT_MS`]).
    pub millisecond_timeout_vars: bool,
    /// Whether setup may install a status line (`--statusline`).
    pub statusline: bool,
}

/// The host table, in documentation order: one row per host, the row's index being the host's.
pub static HOSTS: [HostSpec; 13] = [
    HostSpec {
        host: Integration::ClaudeCode,
        name: "claude-code",
        aliases: &["claude"],
        title: "Claude Code",
        env_part: "CLAUDE",
        source_prefix: "claude-code-user-prompt",
        component: "powercontext.claude_code",
        hook_exe: "powercontext-hook-claude-code",
        cli: HostCliSpec {
            name: "claude",
            env: &[("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")],
            tested_versions: &["2.1.332"],
        },
        config_home: ConfigHome {
            var: "CLAUDE_CONFIG_DIR",
            rel: ".claude",
            var_is_home: false,
        },
        token_var: None,
        config: ConfigFormat::PluginHooksJson,
        workspace_key: WorkspaceKey::Resolved,
        events: Events {
            prompt: "UserPromptSubmit",
            session_start: Some("SessionStart"),
            compaction: Some("PreCompact"),
            boundary: &["Stop", "SessionEnd"],
            end: Some("SessionEnd"),
        },
        output: OutputChannel::HookSpecificOutput,
        timeout_unit: TimeoutUnit::Seconds,
        capabilities: Capabilities {
            bootstraps_at_first_prompt: false,
            resume_keeps_start_context: false,
            injection_persists: true,
            flushes_every_capture: false,
            hook_command_in_shell: true,
            plugin_option_vars: true,
            profile_rows: false,
            millisecond_timeout_vars: false,
            statusline: true,
        },
        explicit: ExplicitSurface {
            native_tools: false,
            gate: "Claude Code's MCP tool permission policy",
            without_ui: "host policy decides (not validated)",
        },
        official_catalog: true,
    },
    HostSpec {
        host: Integration::Codex,
        name: "codex",
        aliases: &[],
        title: "Codex",
        env_part: "CODEX",
        source_prefix: "codex-user-prompt",
        component: "powercontext.codex",
        hook_exe: "powercontext-hook-codex",
        cli: HostCliSpec {
            name: "codex",
            env: &[],
            tested_versions: &["0.171.0"],
        },
        config_home: ConfigHome {
            var: "CODEX_HOME",
            rel: ".codex",
            var_is_home: false,
        },
        token_var: None,
        config: ConfigFormat::PluginHooksJson,
        workspace_key: WorkspaceKey::Resolved,
        events: Events {
            prompt: "UserPromptSubmit",
            session_start: Some("SessionStart"),
            compaction: Some("PreCompact"),
            boundary: &["Stop", "SessionEnd"],
            end: Some("SessionEnd"),
        },
        output: OutputChannel::HookSpecificOutput,
        timeout_unit: TimeoutUnit::Seconds,
        capabilities: Capabilities {
            bootstraps_at_first_prompt: false,
            resume_keeps_start_context: true,
            injection_persists: true,
            flushes_every_capture: false,
            hook_command_in_shell: true,
            plugin_option_vars: false,
            profile_rows: false,
            millisecond_timeout_vars: false,
            statusline: false,
        },
        explicit: ExplicitSurface {
            native_tools: false,
            gate: "Codex's MCP tool approval policy",
            without_ui: "host policy decides (not validated)",
        },
        official_catalog: true,
    },
    HostSpec {
        host: Integration::OpenCode,
        name: "opencode",
        aliases: &[],
        title: "OpenCode",
        env_part: "OPENCODE",
        source_prefix: "opencode-user-prompt",
        component: "powercontext.opencode",
        hook_exe: "powercontext-hook-opencode",
        cli: HostCliSpec {
            name: "opencode",
            env: &[],
            tested_versions: &["1.18.33"],
        },
        config_home: ConfigHome {
            var: "OPENCODE_CONFIG_DIR",
            rel: ".config/opencode",
            var_is_home: false,
        },
        token_var: None,
        config: ConfigFormat::JsShim,
        workspace_key: WorkspaceKey::Lexical,
        events: Events {
            prompt: "chat.message",
            session_start: None,
            compaction: Some("session.compacted"),
            boundary: &[],
            end: Some("session.deleted"),
        },
        output: OutputChannel::Shim,
        timeout_unit: TimeoutUnit::None,
        capabilities: Capabilities {
            bootstraps_at_first_prompt: true,
            resume_keeps_start_context: false,
            injection_persists: false,
            flushes_every_capture: false,
            hook_command_in_shell: false,
            plugin_option_vars: false,
            profile_rows: false,
            millisecond_timeout_vars: true,
            statusline: false,
        },
        explicit: ExplicitSurface {
            native_tools: true,
            gate: "context.ask (permission `powercontext`)",
            without_ui: "OpenCode's permission config decides; a denial writes nothing",
        },
        official_catalog: true,
    },
    HostSpec {
        host: Integration::Pi,
        name: "pi",
        aliases: &[],
        title: "Pi",
        env_part: "PI",
        source_prefix: "pi-user-prompt",
        component: "powercontext.pi",
        hook_exe: "powercontext-hook-pi",
        cli: HostCliSpec {
            name: "pi",
            env: &[],
            tested_versions: &["0.73.1"],
        },
        config_home: ConfigHome {
            var: "PI_CODING_AGENT_DIR",
            rel: ".pi/agent",
            var_is_home: false,
        },
        token_var: None,
        config: ConfigFormat::JsShim,
        workspace_key: WorkspaceKey::Lexical,
        events: Events {
            prompt: "before_agent_start",
            session_start: None,
            compaction: Some("session_before_compact"),
            boundary: &[
                "agent_end",
                "session_before_compact",
                "session_before_switch",
                "session_shutdown",
            ],
            end: Some("session_shutdown"),
        },
        output: OutputChannel::Shim,
        timeout_unit: TimeoutUnit::None,
        capabilities: Capabilities {
            bootstraps_at_first_prompt: true,
            resume_keeps_start_context: false,
            injection_persists: false,
            flushes_every_capture: true,
            hook_command_in_shell: false,
            plugin_option_vars: false,
            profile_rows: false,
            millisecond_timeout_vars: false,
            statusline: false,
        },
        explicit: ExplicitSurface {
            native_tools: true,
            gate: "ctx.ui.confirm",
            without_ui: "confirmation_required, nothing written",
        },
        official_catalog: true,
    },
    HostSpec {
        host: Integration::Dsh,
        name: "dsh",
        aliases: &[],
        title: "DSH",
        env_part: "DSH",
        source_prefix: "dsh-user-prompt",
        component: "powercontext.dsh",
        hook_exe: "powercontext-hook-dsh",
        cli: HostCliSpec {
            name: "dsh",
            env: &[],
            tested_versions: &["0.1.0-rc.8"],
        },
        config_home: ConfigHome {
            var: "DSH_HOME",
            rel: ".dsh",
            var_is_home: false,
        },
        token_var: None,
        config: ConfigFormat::HostPlugin,
        workspace_key: WorkspaceKey::Lexical,
        events: Events {
            prompt: "agent/pre-step",
            session_start: None,
            compaction: None,
            boundary: &[],
            end: None,
        },
        output: OutputChannel::Shim,
        timeout_unit: TimeoutUnit::None,
        capabilities: Capabilities {
            bootstraps_at_first_prompt: true,
            resume_keeps_start_context: false,
            injection_persists: true,
            flushes_every_capture: false,
            hook_command_in_shell: false,
            plugin_option_vars: false,
            profile_rows: true,
            millisecond_timeout_vars: false,
            statusline: false,
        },
        explicit: ExplicitSurface {
            native_tools: true,
            gate: "tools/pre-execute returns ask",
            without_ui: "DSH's ask policy decides; the tool writes only when DSH runs it after approval",
        },
        official_catalog: true,
    },
    HostSpec {
        host: Integration::QwenCode,
        name: "qwen-code",
        aliases: &["qwen"],
        title: "Qwen Code",
        env_part: "QWEN",
        source_prefix: "qwen-code-user-prompt",
        component: "powercontext.qwen_code",
        hook_exe: "powercontext-hook-qwen-code",
        cli: HostCliSpec {
            name: "qwen",
            env: &[],
            tested_versions: &["0.24.4"],
        },
        config_home: ConfigHome {
            var: "QWEN_HOME",
            rel: ".qwen",
            var_is_home: false,
        },
        token_var: None,
        config: ConfigFormat::SettingsHooks {
            file: "settings.json",
            command_tail: "",
        },
        workspace_key: WorkspaceKey::Resolved,
        events: Events {
            prompt: "UserPromptSubmit",
            session_start: Some("SessionStart"),
            compaction: Some("PreCompact"),
            // `SessionEnd` never fires in `-p` mode; `Stop` does after every answer.
            boundary: &["Stop", "SessionEnd"],
            end: Some("SessionEnd"),
        },
        output: OutputChannel::HookSpecificOutput,
        timeout_unit: TimeoutUnit::Seconds,
        capabilities: Capabilities {
            bootstraps_at_first_prompt: false,
            // `SessionStart` context goes into the system prompt, rebuilt on resume.
            resume_keeps_start_context: false,
            injection_persists: true,
            flushes_every_capture: false,
            hook_command_in_shell: true,
            plugin_option_vars: false,
            profile_rows: false,
            millisecond_timeout_vars: false,
            statusline: false,
        },
        explicit: ExplicitSurface {
            native_tools: false,
            gate: "Qwen Code's MCP tool approval mode",
            without_ui: "host policy decides (not validated)",
        },
        official_catalog: false,
    },
    HostSpec {
        host: Integration::GeminiCli,
        name: "gemini-cli",
        aliases: &["gemini"],
        title: "Gemini CLI",
        env_part: "GEMINI",
        source_prefix: "gemini-cli-user-prompt",
        component: "powercontext.gemini_cli",
        hook_exe: "powercontext-hook-gemini-cli",
        cli: HostCliSpec {
            name: "gemini",
            env: &[],
            tested_versions: &["0.61.0"],
        },
        config_home: ConfigHome {
            var: "GEMINI_CLI_HOME",
            rel: ".gemini",
            var_is_home: true,
        },
        token_var: None,
        config: ConfigFormat::SettingsHooks {
            file: "settings.json",
            command_tail: " || exit 1",
        },
        workspace_key: WorkspaceKey::Resolved,
        events: Events {
            prompt: "BeforeAgent",
            session_start: Some("SessionStart"),
            // `PreCompress` fires on every run (before the host decides whether to compress) and
            // asynchronously: it is no evidence of a compaction, so it is not followed.
            compaction: None,
            boundary: &["AfterAgent", "SessionEnd"],
            end: Some("SessionEnd"),
        },
        output: OutputChannel::HookSpecificOutput,
        timeout_unit: TimeoutUnit::Milliseconds,
        capabilities: Capabilities {
            bootstraps_at_first_prompt: false,
            resume_keeps_start_context: false,
            // A resumed session replays a turn's prompt context only when no session-start
            // context was prepended to that prompt, so no later turn may rely on it.
            injection_persists: false,
            flushes_every_capture: false,
            hook_command_in_shell: true,
            plugin_option_vars: false,
            profile_rows: false,
            millisecond_timeout_vars: false,
            statusline: false,
        },
        explicit: ExplicitSurface {
            native_tools: false,
            gate: "Gemini CLI's MCP tool confirmation",
            without_ui: "host policy decides (not validated)",
        },
        official_catalog: false,
    },
    HostSpec {
        host: Integration::CopilotCli,
        name: "copilot-cli",
        aliases: &["copilot"],
        title: "GitHub Copilot CLI",
        env_part: "COPILOT",
        source_prefix: "copilot-cli-user-prompt",
        component: "powercontext.copilot_cli",
        hook_exe: "powercontext-hook-copilot-cli",
        cli: HostCliSpec {
            name: "copilot",
            env: &[("COPILOT_AUTO_UPDATE", "false")],
            tested_versions: &["1.0.102"],
        },
        config_home: ConfigHome {
            var_is_home: false,
            var: "COPILOT_HOME",
            rel: ".copilot",
        },
        token_var: None,
        config: ConfigFormat::SettingsHooks {
            file: "settings.json",
            command_tail: "",
        },
        workspace_key: WorkspaceKey::Resolved,
        events: Events {
            // The Claude-style names: only they get the snake_case payload (with
            // `hook_event_name`) our hook reads; the camelCase ones (`userPromptSubmitted`) do not.
            prompt: "UserPromptSubmit",
            // Copilot CLI has a `SessionStart` event, but runs its hooks beside the first
            // prompt's, not before: a bootstrap there would race that prompt's record of what it
            // injected. The session's first prompt bootstraps instead (and its context stays in
            // the history, resumes included).
            session_start: None,
            compaction: Some("PreCompact"),
            // Both fire after every `-p` run (`Stop` with `end_turn`, `SessionEnd` with `complete`).
            boundary: &["Stop", "SessionEnd"],
            end: Some("SessionEnd"),
        },
        // Only a top-level `additionalContext` is honoured; `hookSpecificOutput` is ignored.
        output: OutputChannel::TopLevelAdditionalContext,
        timeout_unit: TimeoutUnit::Seconds,
        capabilities: Capabilities {
            bootstraps_at_first_prompt: true,
            resume_keeps_start_context: false,
            // Prompt context stays in the user message of the history (`<system_reminder>`).
            injection_persists: true,
            flushes_every_capture: false,
            hook_command_in_shell: true,
            plugin_option_vars: false,
            profile_rows: false,
            millisecond_timeout_vars: false,
            statusline: false,
        },
        explicit: ExplicitSurface {
            native_tools: false,
            gate: "Copilot CLI's tool permission prompts (the Server's MCP, added by you)",
            without_ui: "host policy decides (not validated)",
        },
        official_catalog: false,
    },
    HostSpec {
        host: Integration::WorkBuddy,
        name: "workbuddy",
        aliases: &["codebuddy"],
        title: "WorkBuddy",
        env_part: "WORKBUDDY",
        source_prefix: "workbuddy-user-prompt",
        component: "powercontext.workbuddy",
        hook_exe: "powercontext-hook-workbuddy",
        cli: HostCliSpec {
            name: "",
            env: &[],
            tested_versions: &[],
        },
        config_home: ConfigHome {
            var: "WORKBUDDY_HOME",
            rel: ".workbuddy",
            var_is_home: false,
        },
        token_var: None,
        config: ConfigFormat::SettingsHooks {
            file: "settings.json",
            command_tail: "",
        },
        workspace_key: WorkspaceKey::Resolved,
        // Only the prompt event is documented for its Claude-compatible command hooks.
        events: Events {
            prompt: "UserPromptSubmit",
            session_start: None,
            compaction: None,
            boundary: &[],
            end: None,
        },
        output: OutputChannel::HookSpecificOutput,
        timeout_unit: TimeoutUnit::Seconds,
        capabilities: Capabilities {
            bootstraps_at_first_prompt: true,
            resume_keeps_start_context: false,
            // Not observed: every turn carries its whole recall rather than risk a lost item.
            injection_persists: false,
            flushes_every_capture: false,
            hook_command_in_shell: true,
            plugin_option_vars: false,
            profile_rows: false,
            millisecond_timeout_vars: false,
            statusline: false,
        },
        explicit: ExplicitSurface {
            native_tools: false,
            gate: "WorkBuddy's MCP tool approval (not validated)",
            without_ui: "host policy decides (not validated)",
        },
        official_catalog: true,
    },
    HostSpec {
        host: Integration::Hermes,
        name: "hermes",
        aliases: &[],
        title: "Hermes Agent",
        env_part: "HERMES",
        source_prefix: "hermes-user-prompt",
        component: "powercontext.hermes",
        hook_exe: "powercontext-hook-hermes",
        official_catalog: true,
        cli: HostCliSpec {
            name: "hermes",
            env: &[],
            tested_versions: &["0.19.0"],
        },
        config_home: ConfigHome {
            var_is_home: false,
            var: "HERMES_HOME",
            rel: ".hermes",
        },
        token_var: None,
        config: ConfigFormat::ShellHooksYaml,
        workspace_key: WorkspaceKey::Resolved,
        events: Events {
            prompt: "pre_llm_call",
            // Hermes ignores what an `on_session_start` shell hook prints: the session's first
            // `pre_llm_call` carries the bootstrap. Shell hooks get no compaction event.
            session_start: None,
            compaction: None,
            // `on_session_end` fires after every turn (a boundary, not the session's end).
            boundary: &["on_session_end", "on_session_finalize"],
            end: Some("on_session_finalize"),
        },
        output: OutputChannel::Context,
        timeout_unit: TimeoutUnit::Seconds,
        capabilities: Capabilities {
            bootstraps_at_first_prompt: true,
            resume_keeps_start_context: false,
            // Hermes stores the bytes it sent (`api_content`) and replays them on later turns.
            injection_persists: true,
            flushes_every_capture: false,
            hook_command_in_shell: false,
            plugin_option_vars: false,
            profile_rows: false,
            millisecond_timeout_vars: false,
            statusline: false,
        },
        explicit: ExplicitSurface {
            native_tools: false,
            gate: "Hermes' MCP tool approval",
            without_ui: "host policy decides (not validated)",
        },
    },
    HostSpec {
        host: Integration::KimiCode,
        name: "kimi-code",
        aliases: &[],
        title: "Kimi Code",
        env_part: "KIMI",
        source_prefix: "kimi-code-user-prompt",
        component: "powercontext.kimi_code",
        hook_exe: "powercontext-hook-kimi-code",
        official_catalog: true,
        cli: HostCliSpec {
            name: "kimi",
            env: &[("KIMI_CODE_NO_AUTO_UPDATE", "1")],
            tested_versions: &["2.1.0"],
        },
        config_home: ConfigHome {
            var_is_home: false,
            var: "KIMI_CODE_HOME",
            rel: ".kimi-code",
        },
        token_var: Some(crate::variables::KIMI_TOKEN),
        config: ConfigFormat::HooksToml,
        workspace_key: WorkspaceKey::Lexical,
        // Kimi runs `SessionStart` hooks but drops their output: the first prompt bootstraps.
        events: Events {
            prompt: "UserPromptSubmit",
            session_start: None,
            compaction: Some("PreCompact"),
            boundary: &["Stop", "SessionEnd"],
            end: Some("SessionEnd"),
        },
        output: OutputChannel::Message,
        timeout_unit: TimeoutUnit::Seconds,
        capabilities: Capabilities {
            bootstraps_at_first_prompt: true,
            resume_keeps_start_context: true,
            injection_persists: true,
            flushes_every_capture: false,
            hook_command_in_shell: true,
            plugin_option_vars: false,
            profile_rows: false,
            millisecond_timeout_vars: false,
            statusline: false,
        },
        explicit: ExplicitSurface {
            native_tools: false,
            gate: "Kimi Code's MCP tool approval",
            without_ui: "host policy decides (not validated)",
        },
    },
    HostSpec {
        host: Integration::OpenClaw,
        name: "openclaw",
        aliases: &[],
        title: "OpenClaw",
        env_part: "OPENCLAW",
        source_prefix: "openclaw-user-prompt",
        component: "powercontext.openclaw",
        hook_exe: "powercontext-hook-openclaw",
        official_catalog: true,
        cli: HostCliSpec {
            name: "openclaw",
            env: &[],
            tested_versions: &["2026.9.6"],
        },
        config_home: ConfigHome {
            var_is_home: false,
            var: "OPENCLAW_STATE_DIR",
            rel: ".openclaw",
        },
        token_var: None,
        config: ConfigFormat::JsShim,
        workspace_key: WorkspaceKey::Lexical,
        events: Events {
            prompt: "before_prompt_build",
            // `session_start` exists but does not fire for a one-shot `openclaw agent` run: the
            // session's first prompt bootstraps instead, as on Pi.
            session_start: None,
            compaction: Some("before_compaction"),
            boundary: &["agent_end", "before_compaction", "before_reset", "session_end"],
            end: Some("session_end"),
        },
        output: OutputChannel::Shim,
        timeout_unit: TimeoutUnit::None,
        capabilities: Capabilities {
            bootstraps_at_first_prompt: true,
            resume_keeps_start_context: false,
            // `prependContext` goes into the request in flight only: the next turn's history
            // holds the user's prompt without it.
            injection_persists: false,
            flushes_every_capture: false,
            hook_command_in_shell: false,
            plugin_option_vars: false,
            profile_rows: false,
            millisecond_timeout_vars: false,
            statusline: false,
        },
        explicit: ExplicitSurface {
            native_tools: false,
            gate: "OpenClaw's tool policy for the Server's MCP (setup does not add the MCP server)",
            without_ui: "host policy decides (not validated)",
        },
    },
    HostSpec {
        host: Integration::Zcode,
        name: "zcode",
        aliases: &[],
        title: "ZCode",
        env_part: "ZCODE",
        source_prefix: "zcode-user-prompt",
        component: "powercontext.zcode",
        hook_exe: "powercontext-hook-zcode",
        cli: HostCliSpec {
            // Its CLI is a source build and its desktop app has none: nothing is installable
            // here to locate or ask for a version, so setup and doctor say Not validated in a
            // real host.
            name: "",
            env: &[],
            tested_versions: &[],
        },
        config_home: ConfigHome {
            var_is_home: false,
            // The official installer uses `~/.zcode/cli` whatever the environment says.
            var: "",
            rel: ".zcode/cli",
        },
        token_var: None,
        config: ConfigFormat::PluginDirsHooks { file: "config.json" },
        workspace_key: WorkspaceKey::Resolved,
        events: Events {
            prompt: "UserPromptSubmit",
            session_start: Some("SessionStart"),
            // No compaction event; `/compact` is not reported as a `SessionStart` either.
            compaction: None,
            boundary: &["Stop"],
            end: None,
        },
        output: OutputChannel::HookSpecificOutput,
        timeout_unit: TimeoutUnit::Milliseconds,
        capabilities: Capabilities {
            bootstraps_at_first_prompt: false,
            resume_keeps_start_context: false,
            injection_persists: true,
            flushes_every_capture: false,
            // A process hook: `command` is run with `args`, no shell.
            hook_command_in_shell: false,
            plugin_option_vars: false,
            profile_rows: false,
            millisecond_timeout_vars: false,
            statusline: false,
        },
        explicit: ExplicitSurface {
            native_tools: false,
            gate: "ZCode's MCP tool approval (the Server's MCP, added by you)",
            without_ui: "host policy decides (not validated)",
        },
        official_catalog: true,
    },
];

impl Integration {
    /// This host's row in [`HOSTS`].
    #[must_use]
    pub fn spec(self) -> &'static HostSpec {
        // The enum's discriminant is the row index; `rows_match_their_hosts` holds them together.
        &HOSTS[self as usize]
    }

    /// The integration name used in Server binding keys and by the official CLI.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        self.spec().name
    }

    /// The middle part of this host's environment variables: `POWERCONTEXT_<PART>_…`.
    #[must_use]
    pub fn env_part(self) -> &'static str {
        self.spec().env_part
    }

    /// The `source_id` prefix of captured prompts (upstream-compatible).
    #[must_use]
    pub fn source_prefix(self) -> &'static str {
        self.spec().source_prefix
    }

    /// The diagnostic component prefix: `powercontext.<name>`.
    #[must_use]
    pub fn component(self) -> &'static str {
        self.spec().component
    }

    /// See [`Capabilities::bootstraps_at_first_prompt`].
    #[must_use]
    pub fn bootstraps_at_first_prompt(self) -> bool {
        self.spec().capabilities.bootstraps_at_first_prompt
    }

    /// See [`Capabilities::resume_keeps_start_context`].
    #[must_use]
    pub fn resume_keeps_start_context(self) -> bool {
        self.spec().capabilities.resume_keeps_start_context
    }

    /// See [`Capabilities::injection_persists`].
    #[must_use]
    pub fn injection_persists(self) -> bool {
        self.spec().capabilities.injection_persists
    }

    /// See [`Capabilities::flushes_every_capture`].
    #[must_use]
    pub fn flushes_every_capture(self) -> bool {
        self.spec().capabilities.flushes_every_capture
    }

    /// All hosts, in documentation order (the order of [`HOSTS`]).
    pub const ALL: [Self; 13] = [
        Self::ClaudeCode,
        Self::Codex,
        Self::OpenCode,
        Self::Pi,
        Self::Dsh,
        Self::QwenCode,
        Self::GeminiCli,
        Self::CopilotCli,
        Self::WorkBuddy,
        Self::Hermes,
        Self::KimiCode,
        Self::OpenClaw,
        Self::Zcode,
    ];

    /// Parses the integration name used on command lines (`claude-code`, `codex`, …).
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        HOSTS.iter().find(|s| s.name == name).map(|s| s.host)
    }
}

impl std::fmt::Display for Integration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_match_their_hosts() {
        assert_eq!(HOSTS.len(), Integration::ALL.len());
        for (i, host) in Integration::ALL.into_iter().enumerate() {
            assert_eq!(HOSTS[i].host, host, "row {i}");
            assert_eq!(host.spec().host, host);
            assert_eq!(Integration::parse(host.as_str()), Some(host));
        }
    }

    #[test]
    fn names_and_parts_are_unique_and_well_formed() {
        let mut seen = std::collections::BTreeSet::new();
        for s in &HOSTS {
            for word in [s.name, s.env_part, s.source_prefix, s.component, s.hook_exe] {
                assert!(seen.insert(word), "{word} appears in two rows");
            }
            assert!(
                s.env_part.bytes().all(|b| b.is_ascii_uppercase()),
                "{}",
                s.env_part
            );
            assert_eq!(s.hook_exe, format!("powercontext-hook-{}", s.name));
            assert_eq!(s.source_prefix, format!("{}-user-prompt", s.name));
            assert_eq!(s.component, format!("powercontext.{}", s.name.replace('-', "_")));
            // A host with a CLI is tested at some version; one without has none to test.
            assert_eq!(
                s.cli.tested_versions.is_empty(),
                s.cli.name.is_empty(),
                "{}",
                s.name
            );
            assert!(!s.config_home.rel.starts_with('/'), "{}", s.name);
            let home = &s.config_home;
            let under = |p: &str| Some(std::path::PathBuf::from(p).join(home.rel));
            assert_eq!(home.path(None, Some("/h")), under("/h"), "{}", s.name);
            assert_eq!(home.path(Some(" "), Some("/h")), under("/h"), "{}", s.name);
            let moved = home.path(Some("/v"), Some("/h"));
            if home.var_is_home {
                assert_eq!(moved, under("/v"), "{}", s.name);
            } else if !home.var.is_empty() {
                assert_eq!(moved, Some("/v".into()), "{}", s.name);
            }
            // A host that answers a session start bootstraps there, not at its first prompt.
            assert_eq!(
                s.events.session_start.is_none(),
                s.capabilities.bootstraps_at_first_prompt,
                "{}",
                s.name
            );
        }
    }
}
