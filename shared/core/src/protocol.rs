//! The per-host mapping of a hook's answer to stdout, stderr and exit code, in one place.
//!
//! | protocol           | context ready                                                              | anything else | exit |
//! |--------------------|----------------------------------------------------------------------------|---------------|------|
//! | `HookEvent(name)`  | `{"hookSpecificOutput":{"hookEventName":name,"additionalContext":…}}`, or the host's own [`OutputChannel`] (`{"additionalContext":…}` for Copilot CLI) (a command hook's prompt or session-start event, named as its host names it) | nothing | 0 |
//! | `Message`          | `{"message":…}` (Kimi Code: a user message, echoed to the terminal, so plain lines: see [`crate::plain`]), or the host's own [`OutputChannel`] | nothing | 0 |
//! | `OpenCodePrepare`  | `{"text":…,"session_id":…,"message_id":…}` (the context the OpenCode shim adds right after exactly that user message) | nothing | 0 |
//! | `DshPreStep`       | `{"context":…}` (the plugin message text the DSH plugin appends after `enter`) | nothing     | 0    |
//! | `PiBeforeAgentStart` | `{"systemPrompt":…}` (Pi's whole system prompt, already extended by the Pi adapter) | nothing | 0 |
//! | `HermesPreLlmCall` | `{"context":…}` (appended by Hermes to the API copy of the turn's user message) | nothing | 0 |
//! | `OpenClawBeforePromptBuild` | `{"prependContext":…}` (the text OpenClaw puts before this turn's prompt) | nothing | 0 |
//!
//! Diagnostics always go to stderr as JSON lines and never change the exit code: a hook fails open.

use serde_json::json;

use crate::after::{AfterAnswer, Done};
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
    /// A command hook (Claude Code, Codex, Gemini CLI) answering its host's event of this name
    /// (`UserPromptSubmit`, `BeforeAgent`, `SessionStart`).
    HookEvent(&'static str),
    /// A command hook whose host reads a plain `{"message": …}` ([`OutputChannel::Message`]).
    Message,
    /// The OpenCode shim's `prepare` call: the context the shim adds right after the user message
    /// `message` of session `session` (and no other). The shim's other calls answer nothing.
    OpenCodePrepare {
        /// The session the part belongs to.
        session: &'static str,
        /// The user message the part belongs to.
        message: &'static str,
    },
    /// The DSH plugin's `pre-step` call.
    DshPreStep,
    /// The Pi extension's `before-agent-start` call; the context is the full augmented system prompt.
    PiBeforeAgentStart,
    /// Hermes Agent's `pre_llm_call` shell hook.
    HermesPreLlmCall,
    /// The OpenClaw plugin's `before-prompt-build` call: the text OpenClaw prepends to the prompt.
    OpenClawBeforePromptBuild,
}

impl Protocol {
    /// The protocol of a command-hook host's prompt answer, by its row's output channel.
    #[must_use]
    pub fn for_prompt(host: Integration) -> Self {
        match host.spec().output {
            OutputChannel::Message => Self::Message,
            _ => Self::HookEvent(host.spec().events.prompt),
        }
    }
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
        (Protocol::HookEvent(event), Answer::Context(text)) => Some(command_hook_line(channel, event, text)),
        (Protocol::Message, Answer::Context(text)) => {
            Some(command_hook_line(OutputChannel::Message, "", text))
        }
        (Protocol::OpenCodePrepare { session, message }, Answer::Context(text)) => {
            Some(json!({ "text": text, "session_id": session, "message_id": message }).to_string())
        }
        (Protocol::DshPreStep | Protocol::HermesPreLlmCall, Answer::Context(text)) => {
            Some(json!({ "context": text }).to_string())
        }
        (Protocol::PiBeforeAgentStart, Answer::Context(text)) => {
            Some(json!({ "systemPrompt": text }).to_string())
        }
        (Protocol::OpenClawBeforePromptBuild, Answer::Context(text)) => {
            Some(json!({ "prependContext": text }).to_string())
        }
    }
}

/// A command hook's context line in `channel` (`event`: the Claude-style event name it answers).
fn command_hook_line(channel: OutputChannel, event: &str, text: &str) -> String {
    match channel {
        OutputChannel::TopLevelAdditionalContext => json!({ "additionalContext": text }),
        // The host shows the message to the user too: plain lines, no envelope.
        OutputChannel::Message => json!({ "message": crate::plain::render(text) }),
        OutputChannel::Context => json!({ "context": text }),
        // A shim host never runs the command-hook pipeline; Claude's line is the safe default.
        OutputChannel::HookSpecificOutput | OutputChannel::Shim => {
            json!({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}})
        }
    }
    .to_string()
}

/// Writes the answer in `host`'s output channel, then runs the work the run left for after it
/// (see [`AfterAnswer::run`]: a bootstrap receipt, the session record, the capture), then writes
/// the run's journal record. The exit code is always success; what the work did is returned.
pub fn deliver(host: Integration, protocol: Protocol, answer: &Answer, after: AfterAnswer) -> Done {
    let written = match render_in(host.spec().output, protocol, answer) {
        Some(line) => emit::stdout_line(&line),
        None => false,
    };
    let done = after.run(written);
    journal::finish(match answer {
        Answer::Context(text) => Some(text.len()),
        Answer::Nothing => None,
    });
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_prompt_submit_line() {
        let line = render(
            Protocol::HookEvent("UserPromptSubmit"),
            &Answer::Context("ctx \"q\" é".into()),
        )
        .unwrap();
        assert_eq!(
            line,
            r#"{"hookSpecificOutput":{"additionalContext":"ctx \"q\" é","hookEventName":"UserPromptSubmit"}}"#
        );
        assert_eq!(
            render(Protocol::HookEvent("UserPromptSubmit"), &Answer::Nothing),
            None
        );
        let line = render(Protocol::HookEvent("BeforeAgent"), &Answer::Context("c".into())).unwrap();
        assert_eq!(
            line,
            r#"{"hookSpecificOutput":{"additionalContext":"c","hookEventName":"BeforeAgent"}}"#
        );
    }

    #[test]
    fn copilot_gets_a_top_level_additional_context() {
        // Copilot CLI ignores `hookSpecificOutput`; only this shape reaches its model.
        let channel = Integration::CopilotCli.spec().output;
        for protocol in [
            Protocol::HookEvent("UserPromptSubmit"),
            Protocol::HookEvent("SessionStart"),
        ] {
            let line = render_in(channel, protocol, &Answer::Context("ctx \"q\"".into())).unwrap();
            assert_eq!(line, r#"{"additionalContext":"ctx \"q\""}"#);
            assert_eq!(render_in(channel, protocol, &Answer::Nothing), None);
        }
        let zcode = render_in(
            Integration::Zcode.spec().output,
            Protocol::HookEvent("UserPromptSubmit"),
            &Answer::Context("z".into()),
        );
        assert_eq!(
            zcode.as_deref(),
            Some(r#"{"hookSpecificOutput":{"additionalContext":"z","hookEventName":"UserPromptSubmit"}}"#)
        );
    }

    #[test]
    fn session_start_line() {
        let line = render(
            Protocol::HookEvent("SessionStart"),
            &Answer::Context("boot".into()),
        )
        .unwrap();
        assert_eq!(
            line,
            r#"{"hookSpecificOutput":{"additionalContext":"boot","hookEventName":"SessionStart"}}"#
        );
    }

    #[test]
    fn message_line_is_plain_text_in_one_member() {
        let line = render(Protocol::Message, &Answer::Context("ctx \"q\"\nline é".into())).unwrap();
        assert_eq!(line, r#"{"message":"ctx \"q\"\nline é"}"#);
        assert_eq!(render(Protocol::Message, &Answer::Nothing), None);
        assert_eq!(Protocol::for_prompt(Integration::KimiCode), Protocol::Message);
        assert_eq!(
            Protocol::for_prompt(Integration::Codex),
            Protocol::HookEvent("UserPromptSubmit")
        );
        assert_eq!(
            Protocol::for_prompt(Integration::GeminiCli),
            Protocol::HookEvent("BeforeAgent")
        );
    }

    #[test]
    fn opencode_prepare_line_names_its_turn() {
        let turn = Protocol::OpenCodePrepare {
            session: "ses_\"1",
            message: "msg_2",
        };
        let line = render(turn, &Answer::Context("P\n\nctx \"q\"".into())).unwrap();
        assert_eq!(
            line,
            r#"{"message_id":"msg_2","session_id":"ses_\"1","text":"P\n\nctx \"q\""}"#
        );
        assert_eq!(render(turn, &Answer::Nothing), None);
    }

    #[test]
    fn dsh_pre_step_line() {
        let line = render(Protocol::DshPreStep, &Answer::Context("P\n\nctx \"q\" é".into())).unwrap();
        assert_eq!(line, r#"{"context":"P\n\nctx \"q\" é"}"#);
        assert_eq!(render(Protocol::DshPreStep, &Answer::Nothing), None);
    }

    #[test]
    fn hermes_pre_llm_call_line() {
        let line = render(
            Protocol::HermesPreLlmCall,
            &Answer::Context("ctx \"q\" é\n".into()),
        )
        .unwrap();
        assert_eq!(line, r#"{"context":"ctx \"q\" é\n"}"#);
        assert_eq!(render(Protocol::HermesPreLlmCall, &Answer::Nothing), None);
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

    #[test]
    fn openclaw_before_prompt_build_line() {
        let line = render(
            Protocol::OpenClawBeforePromptBuild,
            &Answer::Context("P\n\nctx \"q\"".into()),
        )
        .unwrap();
        assert_eq!(line, r#"{"prependContext":"P\n\nctx \"q\""}"#);
        assert_eq!(
            render(Protocol::OpenClawBeforePromptBuild, &Answer::Nothing),
            None
        );
    }
}
