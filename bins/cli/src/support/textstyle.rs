//! The byte conventions of a user's text file that an edit must keep: a UTF-8 byte-order mark and
//! CRLF line ends. Edits work on the plain form (no mark, LF) and the result is put back in the
//! file's own form. It never changes a file whose line ends are mixed (those keep LF for new lines).
//! Also the escaping of any text bound for a terminal, so a planted control sequence is shown,
//! never executed.

/// How a file spells its first bytes and its line ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Style {
    bom: bool,
    crlf: bool,
}

impl Style {
    /// The style of `text` and its plain form.
    pub fn split(text: &str) -> (Self, String) {
        let (bom, body) = match text.strip_prefix('\u{feff}') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let newlines = body.matches('\n').count();
        let crlf = newlines > 0 && body.matches("\r\n").count() == newlines;
        let plain = if crlf {
            body.replace("\r\n", "\n")
        } else {
            body.to_owned()
        };
        (Self { bom, crlf }, plain)
    }

    /// `plain` put back in this style.
    pub fn join(self, plain: &str) -> String {
        let mut out = String::with_capacity(plain.len() + 8);
        if self.bom {
            out.push('\u{feff}');
        }
        if self.crlf {
            out.push_str(&plain.replace('\n', "\r\n"));
        } else {
            out.push_str(plain);
        }
        out
    }

    /// Applies `edit` to the plain form of `text` and returns the result in `text`'s style.
    pub fn edit<E>(text: &str, edit: impl FnOnce(&str) -> Result<String, E>) -> Result<String, E> {
        let (style, plain) = Self::split(text);
        edit(&plain).map(|out| style.join(&out))
    }
}

/// Escapes control characters (C0, DEL, C1) so that bytes read from state files or paths never
/// reach the terminal raw: a planted escape sequence is shown, not executed.
#[must_use]
pub fn terminal_safe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_keeps_bom_and_crlf() {
        for text in [
            "a\r\nb\r\n",
            "\u{feff}a\r\nb\r\n",
            "\u{feff}a\nb\n",
            "a\nb\r\n",
            "",
            "x",
        ] {
            let (style, plain) = Style::split(text);
            assert_eq!(style.join(&plain), text);
        }
        let out = Style::edit("\u{feff}a = 1\r\n", |p| Ok::<_, ()>(format!("{p}b = 2\n"))).unwrap();
        assert_eq!(out, "\u{feff}a = 1\r\nb = 2\r\n");
        // Mixed line ends: left alone, new lines get LF.
        let out = Style::edit("a\nb\r\n", |p| Ok::<_, ()>(format!("{p}c\n"))).unwrap();
        assert_eq!(out, "a\nb\r\nc\n");
    }
}
