//! The per-host mapping of a hook's answer to stdout, stderr and exit code, in one place.
//!
//! | protocol           | context ready                                                              | anything else | exit |
//! |--------------------|----------------------------------------------------------------------------|---------------|------|
//! | `UserPromptSubmit` | `{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":…}}`, or the host's own [`OutputChannel`] (`{"additionalContext":…}` for Copilot CLI) | nothing       | 0    |
//! | `SessionStart`     | `{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":…}}`, or the host's own [`OutputChannel`] | nothing           | 0    |
//! | `OpenCodeTransform`| `{"text":…}` (the part the OpenCode shim appends to the latest user message) | nothing       | 0    |
//! | `OpenCodePrepare`  | `{"text":…}` (the context the OpenCode shim keeps for `inject`) | nothing                        | 0    |
//! | `DshPreStep`       | `{"context":…}` (the plugin message text the DSH plugin appends after `enter`) | nothing     | 0    |
//! | `PiBeforeAgentStart` | `{"systemPrompt":…}` (Pi's whole system prompt, already extended by the Pi adapter) | nothing | 0 |
//!
//! Diagnostics always go to stderr as JSON lines and never change the exit code: a hook fails open.

use std::process::ExitCode;

use serde_json::json;

use crate::emit;
use crate::host::{Integration, OutputChannel};
use crate::journal;

/// What a hook run decided to give the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Leave the host's turn unchanged.
    Nothing,
    /// Inject this context for the current turn.
    Context(String),
}

/// A host's output protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Claude Code and Codex command hooks.
    UserPromptSubmit,
    /// Claude Code and Codex `SessionStart` command hooks.
    SessionStart,
    /// The OpenCode shim's `inject` call: the part it appends to the latest user message.
    OpenCodeTransform,
    /// The OpenCode shim's `prepare` call: the context the shim keeps for `inject` (the same line;
    /// not yet given to the host, so the journal does not count it as injected).
    OpenCodePrepare,
    /// The DSH plugin's `pre-step` call.
    DshPreStep,
    /// The Pi extension's `before-agent-start` call; the context is the full augmented system prompt.
    PiBeforeAgentStart,
}

/// The stdout line for an answer, if any, in Claude Code's output channel.
#[must_use]
pub fn render(protocol: Protocol, answer: &Answer) -> Option<String> {
    render_in(OutputChannel::HookSpecificOutput, protocol, answer)
}

/// The stdout line for an answer, if any: a command hook's answer goes where `channel` (the
/// host row's output channel) says; the shim protocols have their own lines.
#[must_use]
pub fn render_in(channel: OutputChannel, protocol: Protocol, answer: &Answer) -> Option<String> {
    match (protocol, answer) {
        (_, Answer::Nothing) => None,
        (Protocol::UserPromptSubmit, Answer::Context(text)) => {
            Some(command_hook_line(channel, "UserPromptSubmit", text))
        }
        (Protocol::SessionStart, Answer::Context(text)) => {
            Some(command_hook_line(channel, "SessionStart", text))
        }
        (Protocol::OpenCodeTransform | Protocol::OpenCodePrepare, Answer::Context(text)) => {
            Some(json!({ "text": text }).to_string())
        }
        (Protocol::DshPreStep, Answer::Context(text)) => Some(json!({ "context": text }).to_string()),
        (Protocol::PiBeforeAgentStart, Answer::Context(text)) => {
            Some(json!({ "systemPrompt": text }).to_string())
        }
    }
}

/// A command hook's context line in `channel` (`event`: the Claude-style event name it answers).
fn command_hook_line(channel: OutputChannel, event: &str, text: &str) -> String {
    match channel {
        OutputChannel::TopLevelAdditionalContext => json!({ "additionalContext": text }),
        OutputChannel::Message => json!({ "message": text }),
        OutputChannel::Context => json!({ "context": text }),
        // A shim host never runs the command-hook pipeline; Claude's line is the safe default.
        OutputChannel::HookSpecificOutput | OutputChannel::Shim => {
            json!({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}})
        }
    }
    .to_string()
}

/// Writes the answer in `host`'s output channel, settles a bootstrap package it carries (see
/// [`crate::bootstrap::settle`]), does the work held for after the answer (the capture, see
/// [`crate::turn::after_answer`]), then writes the run's journal record, and returns the exit
/// code (always success).
#[must_use]
pub fn deliver(host: Integration, protocol: Protocol, answer: &Answer) -> ExitCode {
    let written = match render_in(host.spec().output, protocol, answer) {
        Some(line) => emit::stdout_line(&line),
        None => false,
    };
    crate::bootstrap::settle(written);
    crate::turn::after_answer();
    journal::finish(match answer {
        Answer::Context(text) if protocol != Protocol::OpenCodePrepare => Some(text.len()),
        _ => None,
    });
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_prompt_submit_line() {
        let line = render(Protocol::UserPromptSubmit, &Answer::Context("ctx \"q\" é".into())).unwrap();
        assert_eq!(
            line,
            r#"{"hookSpecificOutput":{"additionalContext":"ctx \"q\" é","hookEventName":"UserPromptSubmit"}}"#
        );
        assert_eq!(render(Protocol::UserPromptSubmit, &Answer::Nothing), None);
    }

    #[test]
    fn copilot_gets_a_top_level_additional_context() {
        // Copilot CLI ignores `hookSpecificOutput`; only this shape reaches its model.
        let channel = Integration::CopilotCli.spec().output;
        for protocol in [Protocol::UserPromptSubmit, Protocol::SessionStart] {
            let line = render_in(channel, protocol, &Answer::Context("ctx \"q\"".into())).unwrap();
            assert_eq!(line, r#"{"additionalContext":"ctx \"q\""}"#);
            assert_eq!(render_in(channel, protocol, &Answer::Nothing), None);
        }
        let zcode = render_in(
            Integration::Zcode.spec().output,
            Protocol::UserPromptSubmit,
            &Answer::Context("z".into()),
        );
        assert_eq!(
            zcode.as_deref(),
            Some(r#"{"hookSpecificOutput":{"additionalContext":"z","hookEventName":"UserPromptSubmit"}}"#)
        );
    }

    #[test]
    fn session_start_line() {
        let line = render(Protocol::SessionStart, &Answer::Context("boot".into())).unwrap();
        assert_eq!(
            line,
            r#"{"hookSpecificOutput":{"additionalContext":"boot","hookEventName":"SessionStart"}}"#
        );
    }

    #[test]
    fn opencode_transform_line() {
        let line = render(
            Protocol::OpenCodeTransform,
            &Answer::Context("P\n\nctx \"q\"".into()),
        )
        .unwrap();
        assert_eq!(line, r#"{"text":"P\n\nctx \"q\""}"#);
        assert_eq!(render(Protocol::OpenCodeTransform, &Answer::Nothing), None);
    }

    #[test]
    fn dsh_pre_step_line() {
        let line = render(Protocol::DshPreStep, &Answer::Context("P\n\nctx \"q\" é".into())).unwrap();
        assert_eq!(line, r#"{"context":"P\n\nctx \"q\" é"}"#);
        assert_eq!(render(Protocol::DshPreStep, &Answer::Nothing), None);
    }

    #[test]
    fn pi_before_agent_start_line() {
        let line = render(
            Protocol::PiBeforeAgentStart,
            &Answer::Context("Base\n\nctx".into()),
        )
        .unwrap();
        assert_eq!(line, r#"{"systemPrompt":"Base\n\nctx"}"#);
        assert_eq!(render(Protocol::PiBeforeAgentStart, &Answer::Nothing), None);
    }
}
