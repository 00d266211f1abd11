//! A host that echoes the session-start context into the next prompt's text (Gemini CLI in
//! headless mode prepends `<hook_context>…</hook_context>\n\n` to the prompt its `BeforeAgent`
//! hook receives): the mark a session-start answer leaves, and the removal of exactly that echo
//! from a prompt, so recall and capture see only what the user sent. Pure: no I/O. Never removes
//! anything unless the wrapper at the very start of the prompt holds the context our own
//! session-start answer gave, byte for byte as the host renders it; a prompt the user began with
//! the same tags is left whole.

use crate::base::sha256_hex;

/// How a host wraps the session-start context it puts in front of the next prompt.
#[derive(Debug, Clone, Copy)]
pub struct StartEcho {
    /// The wrapper's opening, at the very start of the prompt.
    pub open: &'static str,
    /// The wrapper's end, including the separator before the user's text.
    pub close: &'static str,
    /// Characters the host escapes inside the wrapper, with their escapes. The close's first
    /// character must be one of them, so the first close after the opening ends the wrapper.
    pub escapes: &'static [(char, &'static str)],
    /// What joins the contexts of several session-start hooks inside one wrapper.
    pub joiner: char,
}

impl StartEcho {
    /// The context as the host renders it inside the wrapper.
    #[must_use]
    pub fn render(&self, context: &str) -> String {
        let mut out = String::with_capacity(context.len());
        for c in context.chars() {
            match self.escapes.iter().find(|(from, _)| *from == c) {
                Some((_, to)) => out.push_str(to),
                None => out.push(c),
            }
        }
        out
    }

    /// The mark of a session-start context: its rendered length and digest, never its text.
    #[must_use]
    pub fn mark(&self, context: &str) -> String {
        mark_of(&self.render(context))
    }

    /// The prompt without the echo of the context marked `mark`, or `None` when the prompt does
    /// not start with that echo (the prompt is then used whole). The wrapper may hold other
    /// hooks' contexts too (joined by [`StartEcho::joiner`]); ours must be one of its pieces.
    #[must_use]
    pub fn strip<'a>(&self, prompt: &'a str, mark: &str) -> Option<&'a str> {
        let escaped = |c: char| self.escapes.iter().any(|(from, _)| *from == c);
        if !self.close.chars().next().is_some_and(escaped) {
            return None;
        }
        let rest = prompt.strip_prefix(self.open)?;
        let end = rest.find(self.close)?;
        let inner = &rest[..end];
        let (len, _) = mark.split_once(':')?;
        let len: usize = len.parse().ok()?;
        let starts = std::iter::once(0).chain(
            inner
                .char_indices()
                .filter(|(_, c)| *c == self.joiner)
                .map(|(i, c)| i + c.len_utf8()),
        );
        let ours = starts.into_iter().any(|start| {
            let stop = start.saturating_add(len);
            let whole = inner
                .get(stop..)
                .is_some_and(|after| after.is_empty() || after.starts_with(self.joiner));
            whole && inner.get(start..stop).is_some_and(|p| mark_of(p) == mark)
        });
        ours.then(|| &rest[end + self.close.len()..])
    }
}

fn mark_of(rendered: &str) -> String {
    format!("{}:{}", rendered.len(), sha256_hex(rendered.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const GEMINI: StartEcho = StartEcho {
        open: "<hook_context>",
        close: "</hook_context>\n\n",
        escapes: &[('<', "&lt;"), ('>', "&gt;")],
        joiner: '\n',
    };

    fn echoed(contexts: &[&str], prompt: &str) -> String {
        let inner: Vec<String> = contexts.iter().map(|c| GEMINI.render(c)).collect();
        format!("<hook_context>{}</hook_context>\n\n{prompt}", inner.join("\n"))
    }

    #[test]
    fn strips_exactly_our_echo_and_keeps_the_prompt_byte_for_byte() {
        let ctx = "Project memory:\n- use <b>tabs</b> & \"quotes\"\n</hook_context>\n\nnot the end";
        let mark = GEMINI.mark(ctx);
        assert!(!mark.contains("tabs"), "{mark}");
        let prompt = "  fix the <hook_context>parser</hook_context>\n\nplease\n";
        assert_eq!(GEMINI.strip(&echoed(&[ctx], prompt), &mark), Some(prompt));
        // The user's own text may start with the same tags: only the host's wrapper goes.
        let typed = "<hook_context>typed</hook_context>\n\nrest";
        assert_eq!(GEMINI.strip(&echoed(&[ctx], typed), &mark), Some(typed));
    }

    #[test]
    fn finds_our_piece_among_other_hooks_contexts() {
        let ctx = "ours\nover two lines";
        let mark = GEMINI.mark(ctx);
        for contexts in [vec!["theirs", ctx], vec![ctx, "theirs"], vec!["a", ctx, "b"]] {
            assert_eq!(
                GEMINI.strip(&echoed(&contexts, "q"), &mark),
                Some("q"),
                "{contexts:?}"
            );
        }
        // A piece that merely contains ours, or only starts with it, is not ours.
        for contexts in [vec!["xours\nover two lines"], vec!["ours\nover two linesx"]] {
            assert_eq!(GEMINI.strip(&echoed(&contexts, "q"), &mark), None, "{contexts:?}");
        }
    }

    #[test]
    fn leaves_every_other_prompt_whole() {
        let mark = GEMINI.mark("ctx");
        for prompt in [
            "plain prompt",
            // Typed by the user, not rendered from our context.
            "<hook_context>other</hook_context>\n\nq",
            "<hook_context>ctx</hook_context>q",
            // Not at the very start.
            " <hook_context>ctx</hook_context>\n\nq",
            "q <hook_context>ctx</hook_context>\n\n",
            "<hook_context>ctx",
            "",
        ] {
            assert_eq!(GEMINI.strip(prompt, &mark), None, "{prompt:?}");
        }
        // A context rendered with its tags unescaped is not what the host would have sent.
        let raw = "<hook_context>a<b>c</hook_context>\n\nq";
        assert_eq!(GEMINI.strip(raw, &GEMINI.mark("a<b>c")), None);
        assert_eq!(
            GEMINI.strip(
                "<hook_context>a&lt;b&gt;c</hook_context>\n\nq",
                &GEMINI.mark("a<b>c")
            ),
            Some("q")
        );
        // Garbled marks never match.
        for bad in ["", "x", "3:", "999:abc", "3"] {
            assert_eq!(GEMINI.strip("<hook_context>ctx</hook_context>\n\nq", bad), None);
        }
    }
}
