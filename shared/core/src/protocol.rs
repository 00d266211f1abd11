//! The per-host mapping of a hook's answer to stdout, stderr and exit code, in one place.
//!
//! | protocol           | context ready                                                              | anything else | exit |
//! |--------------------|----------------------------------------------------------------------------|---------------|------|
//! | `UserPromptSubmit` | `{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":…}}` | nothing       | 0    |
//!
//! Diagnostics always go to stderr as JSON lines and never change the exit code: a hook fails open.

use std::process::ExitCode;

use serde_json::json;

use crate::emit;

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
}

/// The stdout line for an answer, if any.
#[must_use]
pub fn render(protocol: Protocol, answer: &Answer) -> Option<String> {
    match (protocol, answer) {
        (_, Answer::Nothing) => None,
        (Protocol::UserPromptSubmit, Answer::Context(text)) => Some(
            json!({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": text}})
                .to_string(),
        ),
    }
}

/// Writes the answer and returns the exit code (always success).
#[must_use]
pub fn deliver(protocol: Protocol, answer: &Answer) -> ExitCode {
    if let Some(line) = render(protocol, answer) {
        emit::stdout_line(&line);
    }
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
}
