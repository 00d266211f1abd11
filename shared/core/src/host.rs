//! Host identities: the five integrations, the names the Server and the official CLI use for
//! them, and the per-host literals (prefixes, components) that must match upstream byte for byte.

/// One of the supported coding-agent hosts.
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
}

impl Integration {
    /// The integration name used in Server binding keys and by the official CLI.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code",
            Self::Codex => "codex",
            Self::OpenCode => "opencode",
            Self::Pi => "pi",
            Self::Dsh => "dsh",
        }
    }

    /// The middle part of this host's environment variables: `POWERCONTEXT_<PART>_…`.
    #[must_use]
    pub fn env_part(self) -> &'static str {
        match self {
            Self::ClaudeCode => "CLAUDE",
            Self::Codex => "CODEX",
            Self::OpenCode => "OPENCODE",
            Self::Pi => "PI",
            Self::Dsh => "DSH",
        }
    }

    /// The `source_id` prefix of captured prompts (upstream-compatible).
    #[must_use]
    pub fn source_prefix(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude-code-user-prompt",
            Self::Codex => "codex-user-prompt",
            Self::OpenCode => "opencode-user-prompt",
            Self::Pi => "pi-user-prompt",
            Self::Dsh => "dsh-user-prompt",
        }
    }

    /// The diagnostic component prefix: `powercontext.<name>`.
    #[must_use]
    pub fn component(self) -> &'static str {
        match self {
            Self::ClaudeCode => "powercontext.claude_code",
            Self::Codex => "powercontext.codex",
            Self::OpenCode => "powercontext.opencode",
            Self::Pi => "powercontext.pi",
            Self::Dsh => "powercontext.dsh",
        }
    }

    /// Whether a session's first prompt bootstraps it: hosts whose plugin API gives the hook no
    /// session-start event of its own. Claude Code and Codex bootstrap in their `SessionStart`
    /// hook instead (and after a compaction, at the next prompt if no `SessionStart` did).
    #[must_use]
    pub fn bootstraps_at_first_prompt(self) -> bool {
        matches!(self, Self::OpenCode | Self::Pi | Self::Dsh)
    }

    /// Whether a resumed session's transcript still holds the package its `SessionStart` hook
    /// injected: Codex replays it from the session's rollout on resume, so injecting it again
    /// would repeat it; Claude Code's resumed transcript drops it, so there it comes back only if
    /// the resume's own `SessionStart` injects it.
    #[must_use]
    pub fn resume_keeps_start_context(self) -> bool {
        matches!(self, Self::Codex)
    }

    /// Whether what a hook injects stays in the host's conversation for later turns (Claude Code's
    /// and Codex's hook context, DSH's plugin messages). Pi replaces its system prompt each turn
    /// and OpenCode's transform changes only the request in flight: there, every turn must carry
    /// what it needs, so nothing is remembered as already injected.
    #[must_use]
    pub fn injection_persists(self) -> bool {
        matches!(self, Self::ClaudeCode | Self::Codex | Self::Dsh)
    }

    /// Whether every capture is flushed (Pi's contract): at once with `flush_on_capture`, retrying
    /// a failed call, else kept pending until a boundary or the drainer flushes it.
    #[must_use]
    pub fn flushes_every_capture(self) -> bool {
        matches!(self, Self::Pi)
    }

    /// All hosts, in documentation order.
    pub const ALL: [Self; 5] = [Self::ClaudeCode, Self::Codex, Self::OpenCode, Self::Pi, Self::Dsh];

    /// Parses the integration name used on command lines (`claude-code`, `codex`, …).
    #[must_use]
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|i| i.as_str() == name)
    }
}

impl std::fmt::Display for Integration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
