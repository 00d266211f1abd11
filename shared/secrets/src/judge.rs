//! Whether a value is a secret: a parsed value, its characters and entropy against placeholders,
//! references, code and filler. It judges one value at a time and must never search the text.

use crate::bytes::{
    Recent, b64, b64url, char_floor, contains_ci, eat_ci, ends_with_ci, find_any_of_two, find_byte, find_ci,
    line_before, line_end, line_end_max, lower, rfind_any_of_two, run_back, run_end, run_end_max, skip_blank,
    trim_ascii, trim_end_of,
};
pub(crate) use crate::chars::random_letters;
use crate::chars::{
    base64_decode, camel_word_share, compound_name, count_chain, counted_through, encoded_filler, entropy,
    fabricated, has_digit, has_symbol, identifier_like, looks_random, mixed_case, name_words, wordy,
};
use crate::kinds::{Finding, SecretKind};
use crate::layout::location_prefix;
use crate::pem::base64_text;
use crate::tables::{top_level, unquoted};
use crate::words::{Mode, NO_WORDS, Strength, Words, is_key_byte, secret_word, words_from, words_of};

/// A keyed hash's or a signed token's key passed as a literal (`createHmac('sha256', '…')`,
/// `hmac.new(b'…', msg, sha256)`, `Algorithm.HMAC256("…")`, `jwt.sign(payload, '…')`): the key,
/// when it looks generated; a stand-in (`'secret'`, `'shhhhh'`) or a variable is none. Whether
/// any such call is there is one byte search per `(`.
pub(crate) fn keyed_call_literals(bytes: &[u8], found: &mut Vec<Finding>) -> bool {
    // The callee's name (its end, any case) and which argument holds the key.
    const CALLS: [(&[u8], usize); 9] = [
        (b"createhmac", 1),
        (b"hmac.new", 0),
        (b"hmac256", 0),
        (b"hmac384", 0),
        (b"hmac512", 0),
        (b"jwt.sign", 1),
        (b"jwt.verify", 1),
        (b"jwt.encode", 1),
        (b"jwt.decode", 1),
    ];
    let before = found.len();
    let mut at = 0;
    while let Some(k) = find_byte(b'(', &bytes[at..]) {
        let open = at + k;
        at = open + 1;
        let name = &bytes[open
            - run_back(&bytes[..open], |b| {
                b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_')
            })..open];
        let keyed = CALLS.iter().find(|(c, _)| {
            ends_with_ci(name, c)
                && (name.len() == c.len() || matches!(name[name.len() - c.len() - 1], b'.' | b'_'))
        });
        // Rust's path (`openai::Client::new(…)`): the name before `::` is the type's.
        let path = run_back(&bytes[..open - name.len()], |b| {
            b.is_ascii_alphanumeric() || matches!(b, b':' | b'_')
        });
        let callee = open - name.len() - if path > 2 { path } else { 0 };
        let client = keyed.is_none()
            && (client_call(name)
                || assigned_to_client(&bytes[..callee])
                || name == b"new"
                    && path > 2
                    && bytes[..open - name.len()].ends_with(b"::")
                    && client_call(&bytes[open - name.len() - path..open - name.len() - 2]));
        let arg = match keyed {
            Some(&(_, arg)) => arg,
            None if client => 0,
            None => continue,
        };
        let mut p = open + 1;
        for _ in 0..arg {
            match top_level(bytes, p, b",", 512) {
                Some(comma) => p = comma + 1,
                None => break,
            }
        }
        let mut p = run_end_max(bytes, p, 64, |b| b.is_ascii_whitespace());
        // Python's bytes literal (`b'…'`).
        if matches!(bytes.get(p), Some(b'b' | b'B')) && matches!(bytes.get(p + 1), Some(b'"' | b'\'')) {
            p += 1;
        }
        let Some(value) = Value::parse(bytes, p, Stop::Code).filter(|v| v.quoted) else {
            continue;
        };
        let v = value.text(bytes);
        // A client's sole argument: a generated literal alone is how it authenticates; an
        // address, a file, a DSN or an identifier there is none.
        let sole = || {
            let close = skip_blank(bytes, value.end + 1);
            bytes.get(close) == Some(&b')')
                && looks_random(v, 16)
                // A list (`"node1,node2"`, `"ID,Secret,Name"`) names things, as these do.
                && !v.iter().any(|b| matches!(b, b'.' | b'/' | b':' | b'@' | b' ' | b',' | b';'))
                && !uuid_shaped(v)
                // An app's or a user's name of words (`MyShopApp2024`) is no credential.
                && !compound_name(v)
                // `0x` and hex: an address or a number (a wallet's, a contract's), public.
                && !(v.len() > 2 && v[..2].eq_ignore_ascii_case(b"0x") && v[2..].iter().all(u8::is_ascii_hexdigit))
        };
        if if client {
            sole()
        } else {
            looks_random(v, 12) && has_digit(v)
        } && !is_placeholder(v)
        {
            found.push(Finding {
                kind: SecretKind::Assignment,
                start: value.start,
                end: value.end,
            });
        }
    }
    found.len() > before
}

/// A call whose result is assigned to a client's name (`let client = Acme::new(…)`,
/// `var client = new Acme(…)`, `api_client = acme.Api(…)`): it makes that client. `before` ends
/// where the callee's name starts.
fn assigned_to_client(before: &[u8]) -> bool {
    let mut end = before.trim_ascii_end().len();
    if before[..end].ends_with(b"new")
        && before
            .get(end.wrapping_sub(4))
            .is_some_and(u8::is_ascii_whitespace)
    {
        end = before[..end - 3].trim_ascii_end().len();
    }
    let lhs = &before[..end];
    let Some(lhs) = lhs.strip_suffix(b"=") else {
        return false;
    };
    if matches!(lhs.last(), Some(b'=' | b'!' | b'<' | b'>')) {
        return false;
    }
    let lhs = lhs.trim_ascii_end();
    let name = &lhs[lhs.len() - run_back(lhs, |b| b.is_ascii_alphanumeric() || b == b'_')..];
    !name.is_empty() && client_call(name)
}

/// A call that makes or connects a client (`new ApiClient(…)`, `NewClient(…)`, `Client.new(…)`,
/// `connect(…)`, `bot.login(…)`): given one literal alone, that literal is its credential.
fn client_call(name: &[u8]) -> bool {
    let mut parts = name.rsplit(|&b| b == b'.');
    let last = match parts.next() {
        Some(b"new") => parts.next().unwrap_or_default(),
        Some(last) => last,
        None => return false,
    };
    // `Client` alone, or as a name's last word (`ApiClient`, `api_client`), not inside one; a
    // lookup (`getClient("…")`, `find_client`) is given the client's id.
    const LOOKUPS: [&[u8]; 6] = [b"get", b"find", b"fetch", b"load", b"lookup", b"remove"];
    let lookup = LOOKUPS
        .iter()
        .any(|w| last.len() > w.len() && last[..w.len()].eq_ignore_ascii_case(w));
    let client = !lookup && last.len() >= 6 && ends_with_ci(last, b"client") && {
        let k = last.len() - 6;
        k == 0 || last[k] == b'C' || last[k - 1] == b'_'
    };
    client || last.eq_ignore_ascii_case(b"connect") || last.eq_ignore_ascii_case(b"login")
}

/// The longest value looked at: longer runs are cut there (a secret's head is enough to tell, and
/// the checks on a value then cost a bounded amount however often a key repeats).
pub(crate) const MAX_VALUE: usize = 512;

/// Where an unquoted value stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// A shell/env literal, a flag or a file entry: the value is the whole run up to a blank
    /// (`Abcd3fGh,Xyz12Q`, `R00tP4ss!`), a quote that closes an enclosing string, or the next
    /// `;Name=` / `&name=` of a connection string or URL query.
    Blank,
    /// `key: value` in code, config or prose: additionally a `,` or `;` before a blank (or a
    /// `,name=`) ends it, and closing brackets after it are structure, not value.
    Code,
}

/// The furthest a value judged a secret is extended past its head: a pasted token or key can be
/// kilobytes long, and all of it must go; past this, everything up to it goes.
pub(crate) const MAX_SPAN: usize = 64 * 1024;

/// A parsed value: its span (without quotes) and how it was written.
pub(crate) struct Value {
    pub(crate) start: usize,
    /// The end of the value as the checks see it (trailing punctuation trimmed).
    pub(crate) end: usize,
    pub(crate) quoted: bool,
    /// The unquoted run before trailing punctuation was trimmed (for code detection).
    pub(crate) raw_end: usize,
    /// The end of what is redacted: the whole run, trailing punctuation included, less
    /// structural closers in code.
    pub(crate) span_end: usize,
    /// Cut at [`MAX_VALUE`]: the checks saw the head only, [`Value::whole_end`] finds the rest.
    pub(crate) cut: bool,
    /// The quote that closes a quoted value (0 when unquoted).
    pub(crate) quote: u8,
    pub(crate) stop: Stop,
}

impl Value {
    /// The whole text `[start, end)` between delimiters (`quote`, or `0` for a tag's body).
    pub(crate) fn enclosed(start: usize, end: usize, quote: u8, stop: Stop) -> Self {
        Self {
            start,
            end,
            quoted: true,
            raw_end: end,
            span_end: end,
            cut: false,
            quote,
            stop,
        }
    }

    /// The value at `pos`, its reading charged to the work of the text (see [`reset_judged`]).
    pub(crate) fn parse(bytes: &[u8], pos: usize, stop: Stop) -> Option<Self> {
        let value = Self::read(bytes, pos, stop);
        if let Some(v) = &value {
            let _ = charge(Site::Read, pos, v.raw_end);
        }
        value
    }

    fn read(bytes: &[u8], pos: usize, stop: Stop) -> Option<Self> {
        let mut pos = pos;
        // Python byte/raw/format string prefixes.
        if matches!(
            bytes.get(pos),
            Some(b'b' | b'r' | b'B' | b'R' | b'f' | b'F' | b'u' | b'U')
        ) && matches!(bytes.get(pos + 1), Some(b'"' | b'\''))
        {
            pos += 1;
        }
        let first = *bytes.get(pos)?;
        // A triple-quoted string (Python, Kotlin, Swift) closed on its own line is a value;
        // one that runs on is a docstring or a block of text.
        if matches!(first, b'"' | b'\'')
            && bytes.get(pos + 1) == Some(&first)
            && bytes.get(pos + 2) == Some(&first)
        {
            let start = pos + 3;
            let limit = char_floor(bytes, bytes.len().min(start + MAX_VALUE));
            let end = (start..limit).find(|&k| bytes[k] == b'\n' || bytes[k..].starts_with(&[first; 3]))?;
            if bytes[end] == first {
                return Some(Self::enclosed(start, end, first, stop));
            }
            // One run on the opening line, the string going on below (`key = '''Xq9…` NEWLINE
            // `…'''`): a long value's head, where a docstring's first line is words, or one short
            // word heading the text below it (`'''Usage:`, `'''Format:`).
            let head = bytes[start..end].trim_ascii_end();
            if head.len() >= 16 && !head.iter().any(u8::is_ascii_whitespace) {
                return Some(Self::enclosed(start, start + head.len(), first, stop));
            }
            return Self::block_line(bytes, start, end, first, stop);
        }
        if matches!(first, b'"' | b'\'' | b'`') {
            // A quoted value runs to its closing quote, whatever it holds (a double quote escaped
            // by an odd run of backslashes is one of its characters); a long one is judged on its
            // head.
            let start = pos + 1;
            let limit = char_floor(bytes, bytes.len().min(start + MAX_VALUE));
            let escaped = |k: usize| {
                first == b'"' && bytes[start..k].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1
            };
            let (end, cut) =
                match (start..limit).find(|&k| bytes[k] == first && !escaped(k) || bytes[k] == b'\n') {
                    Some(end) if bytes[end] == first => (end, false),
                    // A string continued on the next line by a backslash ending this one
                    // (`'Xq9…\` NEWLINE `…'`): its head up to the backslash, when one run.
                    Some(end)
                        if end > start + 1
                            && bytes[end - 1] == b'\\'
                            && !bytes[start..end - 1].iter().any(u8::is_ascii_whitespace) =>
                    {
                        (end - 1, false)
                    }
                    Some(_) => return None,
                    None if limit < bytes.len() => (limit, true),
                    None => return None,
                };
            return Some(Self {
                cut,
                ..Self::enclosed(start, end, first, stop)
            });
        }
        if first == b'{' {
            return Self::braced(bytes, pos, stop);
        }
        if first.is_ascii_whitespace() || matches!(first, b',' | b';' | b'}' | b']' | b')' | b'[' | b'(') {
            return None;
        }
        let limit = char_floor(bytes, bytes.len().min(pos + MAX_VALUE));
        let raw_end = unquoted_end(bytes, pos, limit, stop);
        let mut end = raw_end;
        while end > pos
            && matches!(
                bytes[end - 1],
                b')' | b']' | b'}' | b'.' | b':' | b'!' | b'?' | b'>' | b',' | b';'
            )
        {
            end -= 1;
        }
        let span_end = code_span_end(bytes, pos, raw_end, stop);
        (end > pos).then_some(Self {
            start: pos,
            end,
            quoted: false,
            raw_end,
            span_end: span_end.max(end),
            cut: raw_end == limit && limit < bytes.len(),
            quote: 0,
            stop,
        })
    }

    /// A triple-quoted block whose one line stands between the opening quotes' line and the
    /// closing quotes' (`"""` / `    value` / `""".trimIndent()`): that line, trimmed. Opened
    /// at `start`, its first line ending at `newline`; a block of more lines is text.
    fn block_line(bytes: &[u8], start: usize, newline: usize, quote: u8, stop: Stop) -> Option<Self> {
        if !bytes[start..newline].trim_ascii().is_empty() {
            return None;
        }
        let from = newline + 1;
        let end = line_end_max(bytes, from, MAX_VALUE).filter(|&e| e < bytes.len())?;
        if !bytes[skip_blank(bytes, end + 1)..].starts_with(&[quote; 3]) {
            return None;
        }
        let line = &bytes[from..end];
        let s = from + line.len() - line.trim_ascii_start().len();
        let e = from + line.trim_ascii_end().len();
        (e > s).then_some(Self::enclosed(s, e, quote, stop))
    }

    /// A generated literal in braces filling the value (`DB_PASSWORD={Xq9…}`): the literal.
    /// A template's or JSX's braces hold a name or an expression (`{{ pass }}`, `{apiKey}`,
    /// `{process.env.KEY}`), which is no literal, so only a random run with a digit counts.
    fn braced(bytes: &[u8], open: usize, stop: Stop) -> Option<Self> {
        let s = open + 1;
        let e = run_end_max(bytes, s, MAX_VALUE, |b| {
            b.is_ascii_graphic() && !matches!(b, b'{' | b'}' | b'.' | b'$')
        });
        let after = bytes.get(e + 1);
        let alone = after.is_none_or(|b| b.is_ascii_whitespace() || matches!(b, b';' | b',' | b'"' | b'\''));
        let v = &bytes[s..e];
        // A name of words and numbers there (`{apiKeyV2}`, `{TOKEN_2024_PROD}`) is a variable.
        let name = v.first().is_some_and(u8::is_ascii_alphabetic) && name_words(v).is_some();
        (bytes.get(e) == Some(&b'}') && alone && has_digit(v) && looks_random(v, 12) && !name)
            .then(|| Self::enclosed(s, e, b'}', stop))
    }

    /// A table cell `[s, e)`, quoted when `"` or `'` enclose it (markdown's backticks and
    /// emphasis are not quotes).
    pub(crate) fn cell(bytes: &[u8], s: usize, e: usize) -> Self {
        let (start, end) = unquoted(bytes, s, e);
        Self {
            start,
            end,
            quoted: start > s && matches!(bytes[start - 1], b'"' | b'\''),
            raw_end: end,
            span_end: end,
            cut: false,
            quote: 0,
            stop: Stop::Code,
        }
    }

    /// The end of the whole value, once it is judged a secret: a value cut at [`MAX_VALUE`] runs
    /// on by the same stop rules (its closing quote, a blank, …), at most [`MAX_SPAN`] bytes.
    /// The scan then covers the extension, so no rule reads it again.
    pub(crate) fn whole_end(&self, bytes: &[u8]) -> usize {
        if !self.cut {
            return self.span_end;
        }
        let limit = char_floor(bytes, bytes.len().min(self.start + MAX_SPAN));
        if self.quote != 0 {
            return (self.raw_end..limit)
                .find(|&k| bytes[k] == self.quote || bytes[k] == b'\n')
                .unwrap_or(limit);
        }
        let raw_end = unquoted_end(bytes, self.raw_end, limit, self.stop);
        code_span_end(bytes, self.start, raw_end, self.stop).max(self.end)
    }

    pub(crate) fn text<'b>(&self, bytes: &'b [u8]) -> &'b [u8] {
        &bytes[self.start..self.end]
    }
}

/// Where a start tag's attributes (`encoding="base64" id='x'`, from `pos`) end at its `>` on
/// the same line: `None` for anything else (a self-closing tag, text, a separator).
pub(crate) fn start_tag_attributes_end(bytes: &[u8], mut pos: usize) -> Option<usize> {
    let limit = (pos + 256).min(bytes.len());
    loop {
        let name = run_end(bytes, pos, |b| {
            b.is_ascii_alphanumeric() || matches!(b, b'_' | b':' | b'-' | b'.')
        });
        if name == pos || bytes.get(name) != Some(&b'=') {
            return None;
        }
        let q = *bytes.get(name + 1).filter(|&&q| q == b'"' || q == b'\'')?;
        let close = name
            + 2
            + bytes
                .get(name + 2..limit)?
                .iter()
                .position(|&b| b == q || b == b'\n')?;
        if bytes[close] != q {
            return None;
        }
        pos = skip_blank(bytes, close + 1);
        match bytes.get(pos) {
            Some(b'>') => return Some(pos),
            _ if pos >= limit => return None,
            _ => {}
        }
    }
}

/// Whether a property list's value element (`<string>`, `<true/>`, `<array>`, `<dict>`, …)
/// follows the closing tag at `close` (`</key>`), after blanks and line breaks: the element before
/// it was the entry's name.
pub(crate) fn plist_value_follows(bytes: &[u8], close: usize) -> bool {
    const VALUES: Words = words_of!(b"string true false array dict integer real data date");
    let Some(gt) = bytes
        .get(close..)
        .and_then(|t| t.iter().take(64).position(|&b| b == b'>'))
    else {
        return false;
    };
    let next = close
        + gt
        + 1
        + bytes[close + gt + 1..]
            .iter()
            .take(256)
            .take_while(|b| b.is_ascii_whitespace())
            .count();
    let Some(rest) = bytes.get(next..).and_then(|t| t.strip_prefix(b"<")) else {
        return false;
    };
    let name = &rest[..rest.iter().take_while(|b| b.is_ascii_alphabetic()).count()];
    VALUES.iter().any(|w| name == w) && matches!(rest.get(name.len()), Some(b'>' | b'/' | b' '))
}

/// A `;` at `k` followed by a connection string's next field name and its `=` (`;Database=`,
/// `;Initial Catalog=`).
pub(crate) fn next_connection_field(bytes: &[u8], k: usize) -> bool {
    if bytes.get(k) != Some(&b';') {
        return false;
    }
    let name = run_end_max(bytes, k + 1, 64, |c| {
        c.is_ascii_alphanumeric() || c == b'_' || c == b' '
    });
    bytes.get(k + 1).is_some_and(u8::is_ascii_alphabetic)
        && bytes.get(name) == Some(&b'=')
        && bytes[k + 1..name].windows(2).all(|w| w != b"  ")
}

/// Where an unquoted value from `pos` stops, looking no further than `limit`.
pub(crate) fn unquoted_end(bytes: &[u8], pos: usize, limit: usize, stop: Stop) -> usize {
    // What follows byte `k` ends a token there: a blank, the end, or structure.
    // (A `:` or `.` before a blank closes a sentence's code span: `` `x-apikey: yourapikey`: ``.)
    let closes = |k: usize| {
        bytes.get(k + 1).is_none_or(|&c| {
            c.is_ascii_whitespace()
                || matches!(c, b',' | b';' | b')' | b']' | b'}' | b'>')
                || matches!(c, b':' | b'.') && bytes.get(k + 2).is_none_or(u8::is_ascii_whitespace)
                // An XML attribute's end (`text="token=None"/>`).
                || c == b'/' && bytes.get(k + 2) == Some(&b'>')
        })
    };
    // `;Name=`, `&name=` (and in code `,name=`): the next field of a connection string,
    // URL query or argument list.
    let next_field = |k: usize| field_name_after(bytes, k);

    // The bytes any of the ends below starts at: a blank, a quote, a field's or a list's
    // separator, a tag's `<`, an escape's `\`, a CJK character's first byte. Others (most of a
    // value: letters, digits, `-_.+/=`) are passed over without asking.
    const MAY_END: [bool; 256] = {
        let mut t = [false; 256];
        let mut b = 0;
        while b < 256 {
            let c = b as u8;
            t[b] = c.is_ascii_whitespace()
                || matches!(
                    c,
                    b'"' | b'\'' | b'`' | b'&' | b';' | b',' | b'<' | b'\\' | 0xE3..=0xEF
                );
            b += 1;
        }
        t
    };
    let mut raw_end = pos;
    while raw_end < limit {
        let b = bytes[raw_end];
        if !MAY_END[usize::from(b)] {
            raw_end += 1;
            continue;
        }
        let ends = b.is_ascii_whitespace()
            // A fence's backticks (`…PROJECT_ALIAS``` thanks`) close as one quote does.
            || (matches!(b, b'"' | b'\'') && closes(raw_end))
            || (b == b'`' && closes(run_end(bytes, raw_end, |c| c == b'`') - 1))
            || (matches!(b, b'&' | b';') && next_field(raw_end) && (b == b';' || query_field_at(bytes, pos, raw_end)))
            // A connection string's field names may hold spaces (`;Max Pool Size=`).
            || next_connection_field(bytes, raw_end)
            || (stop == Stop::Code && b == b',' && next_field(raw_end))
            // A list of settings on one line (`keys=1842,expires=12`, `a=1,b=2`): the next
            // setting's lowercase name, not more of the value.
            || (b == b',' && raw_end > pos && next_setting(bytes, raw_end))
            // JSON's next member or element (`"Token":null,"Scope":…`): a quoted string follows.
            || (stop == Stop::Code && b == b',' && bytes.get(raw_end + 1) == Some(&b'"'))
            || (stop == Stop::Code && matches!(b, b',' | b';') && closes(raw_end))
            // An element's closing tag (`…</password>`): markup, not the value's.
            || (b == b'<' && bytes.get(raw_end + 1) == Some(&b'/'))
            // A line break written as an escape inside a string (`'…PASSWORD=password\rDB=tests'`):
            // the next line is another entry.
            || (raw_end > pos && b == b'\\' && escaped_line_break(bytes, raw_end))
            || (bytes[pos].is_ascii() && cjk_at(bytes, raw_end));
        if ends {
            break;
        }
        raw_end += 1;
    }
    raw_end
}

/// Whether the `&name=` at `k`, inside a value read from `pos`, starts a URL query's or a form
/// body's next field: the value stands in a query (a `?` or `&` before it on its line), or the
/// field's own value is one a form encoder writes (letters, digits, `-_.*+%`, and a path's or a
/// URL's `/:?@` left unescaped, as in `next=/dashboard`). Otherwise
/// (`password: Hf4&k=Wd8~Qx2!`) the `&` and what follows are the password's symbols.
/// (Kept out of line: few values hold a `&name=`.)
#[inline(never)]
pub(crate) fn query_field_at(bytes: &[u8], pos: usize, k: usize) -> bool {
    // (A sentence's `?` before a blank asks; a query's is followed by its first field.)
    let before = &bytes[pos.saturating_sub(256)..pos];
    let before = &before[before.iter().rposition(|&b| b == b'\n').map_or(0, |n| n + 1)..];
    if before
        .windows(2)
        .any(|w| matches!(w[0], b'?' | b'&') && w[1].is_ascii_graphic())
    {
        return true;
    }
    let from = run_end_max(bytes, k + 1, 64, |c| c != b'=') + 1;
    let end = run_end_max(bytes, from, 256, |c| {
        c.is_ascii_alphanumeric()
            || matches!(
                c,
                b'-' | b'_' | b'.' | b'*' | b'+' | b'%' | b'/' | b':' | b'?' | b'@'
            )
    });
    bytes.get(end).is_none_or(|&c| {
        !c.is_ascii_graphic()
            || matches!(
                c,
                b'&' | b'"' | b'\'' | b'`' | b',' | b';' | b')' | b']' | b'}' | b'<'
            )
    })
}

/// Whether a setting's lowercase name (two or more characters) and `=` follow the `,` at `k`.
pub(crate) fn next_setting(bytes: &[u8], k: usize) -> bool {
    let name = run_end_max(bytes, k + 1, 64, |c| {
        c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'_'
    });
    bytes.get(k + 1).is_some_and(u8::is_ascii_lowercase) && name > k + 2 && bytes.get(name) == Some(&b'=')
}

/// Whether a setting's name in one case (`id`, `src`, `DB_PASS`) and its `=` start at `k`, a value
/// after it: a list of settings, not a value (a base64 value's `=` pads its end).
pub(crate) fn setting_name_at(bytes: &[u8], k: usize) -> bool {
    let end = run_end_max(bytes, k, 33, |c| {
        c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-')
    });
    let name = &bytes[k..end];
    let one_case = !name.iter().any(u8::is_ascii_lowercase) || !name.iter().any(u8::is_ascii_uppercase);
    (1..=32).contains(&name.len())
        && name[0].is_ascii_alphabetic()
        && one_case
        && bytes.get(end) == Some(&b'=')
        && bytes
            .get(end + 1)
            .is_some_and(|&c| c != b'=' && !c.is_ascii_whitespace())
}

/// Whether a field's name and `=` follow the separator at `k` (`&name=`, `;Name=`, `,name=`).
pub(crate) fn field_name_after(bytes: &[u8], k: usize) -> bool {
    let name = run_end_max(bytes, k + 1, 64, |c| c.is_ascii_alphanumeric() || c == b'_');
    name > k + 1 && bytes.get(name) == Some(&b'=')
}

/// Whether the backslashes at `k` write a line break inside a string (`\\r`, `\\\\n`) that ends an
/// entry: the string's end or the next `name=`/`name:` follows (`PASSWORD=password\\rDB=tests`),
/// not more of a path (`\\\\nas\\backup`).
pub(crate) fn escaped_line_break(bytes: &[u8], k: usize) -> bool {
    let e = run_end(bytes, k, |c| c == b'\\');
    if !matches!(bytes.get(e), Some(b'n' | b'r' | b't')) {
        return false;
    }
    let name = run_end(bytes, e + 1, |c| c.is_ascii_alphanumeric() || c == b'_');
    match bytes.get(name) {
        None | Some(b'"' | b'\'' | b'`' | b'\n' | b'\\') => name == e + 1,
        Some(b'=' | b':') => name > e + 1,
        _ => false,
    }
}

/// The end of what is redacted of an unquoted run: in code, closing brackets and a `,`/`;` after
/// the value are structure.
pub(crate) fn code_span_end(bytes: &[u8], pos: usize, raw_end: usize, stop: Stop) -> usize {
    let mut span_end = raw_end;
    if stop == Stop::Code {
        while span_end > pos && matches!(bytes[span_end - 1], b')' | b']' | b'}' | b',' | b';') {
            span_end -= 1;
        }
    }
    span_end
}

thread_local! {
    /// The work of reading and judging again bytes already read or judged since
    /// [`reset_judged`], the work its text may take, and the end of the furthest value each
    /// [`Site`] reached in the current reading.
    static WORK: std::cell::Cell<(usize, usize, [usize; 2])> =
        const { std::cell::Cell::new((0, usize::MAX, [0; 2])) };
}

/// Where a value's bytes are worked on: read as a value, or judged.
#[derive(Clone, Copy)]
pub(crate) enum Site {
    Read = 0,
    Judge = 1,
}

/// Starts counting afresh for a text of `len` bytes (once per text the filter is asked about).
/// Values read or judged one after another cost their own bytes, however many: what is counted
/// is the bytes read or judged again, inside a value already read or judged. Real text has next
/// to none (code, docs, lock files, the fixtures); only keys packed so densely that each one's
/// value runs over the next ones (`key=key=key=…` on one line) go over the same bytes hundreds of
/// times. Past the limit (four times the text's length, and 16 KiB more for a short one: real
/// text reads under 0.4% of its length again, values holding `key=value` pairs of their own
/// about 1.2 times, `key=` repeated hundreds of times) every value is taken for a secret without its checks and the rest of a
/// key's line with it: the scan stays linear, and what it could not afford to judge is withheld,
/// never persisted.
pub(crate) fn reset_judged(len: usize) {
    WORK.set((0, len.saturating_mul(4).saturating_add(16 * 1024), [0; 2]));
}

/// A new reading of the text (decoded, rejoined) starts: its values are read afresh.
pub(crate) fn new_reading() {
    let (work, limit, _) = WORK.get();
    WORK.set((work, limit, [0; 2]));
    FEW_BYTES.set(NO_RUN);
}

/// A run of a reading's bytes known to hold fewer than 16 distinct ones: the reading's text (where
/// it starts, its length), whether an element's `<` ends the run, where the run starts and ends,
/// and the set of its bytes (see [`few_distinct_window`]).
type FewRun = ((usize, usize, bool), usize, usize, [u64; 4]);

const NO_RUN: FewRun = ((usize::MAX, 0, false), 0, 0, [0; 4]);

thread_local! {
    static FEW_BYTES: std::cell::Cell<FewRun> = const { std::cell::Cell::new(NO_RUN) };
}

/// The end of a value's window from `p` (its bytes up to a blank, or an element's `<`, at most
/// `limit` of them) and whether it holds fewer than 16 distinct bytes. A window that starts
/// inside the last run found with fewer is read on from that run's end, not again from its
/// start (its bytes are among the run's): keys packed on a line without blanks, each window
/// running over the next keys, are read once, not once a key.
// (Out of line: it runs for few values, and the readers it sits in keep their own code.)
#[inline(never)]
pub(crate) fn few_distinct_window(bytes: &[u8], p: usize, limit: usize, element: bool) -> (usize, bool) {
    let class = |b: u8| !(b.is_ascii_whitespace() || element && b == b'<');
    let text = (bytes.as_ptr() as usize, bytes.len(), element);
    let stop = bytes.len().min(p.saturating_add(limit));
    let read_on = |from: usize, mut end: usize, mut seen: [u64; 4]| {
        while end < stop && class(bytes[end]) {
            seen[usize::from(bytes[end] >> 6)] |= 1 << (bytes[end] & 63);
            end += 1;
        }
        let few = seen.iter().map(|w| w.count_ones()).sum::<u32>() < 16;
        (from, end, seen, few)
    };
    // A window under 16 bytes holds fewer distinct ones: no run is looked up for it.
    let short = run_end_max(bytes, p, 16.min(limit), class);
    if short < stop.min(p + 16) {
        return (short, true);
    }
    let (known, from, to, seen) = FEW_BYTES.get();
    if known == text && from <= p && p <= to {
        // Past `stop` already: the window ends there, inside the run.
        if to >= stop {
            return (stop, true);
        }
        let (from, end, seen, few) = read_on(from, to, seen);
        if few {
            FEW_BYTES.set((text, from, end, seen));
            return (end, true);
        }
    }
    let (from, end, seen, few) = read_on(p, p, [0; 4]);
    if few {
        FEW_BYTES.set((text, from, end, seen));
    }
    (end, few)
}

/// Charges working on `start..end` at `site` to the text's work; whether it is now spent.
pub(crate) fn charge(site: Site, start: usize, end: usize) -> bool {
    let (work, limit, mut reached) = WORK.get();
    let again = reached[site as usize].min(end).saturating_sub(start);
    reached[site as usize] = reached[site as usize].max(end);
    let work = work.saturating_add(again);
    WORK.set((work, limit, reached));
    work > limit
}

/// Whether the text's work is spent (see [`reset_judged`]).
pub(crate) fn spent() -> bool {
    let (work, limit, _) = WORK.get();
    work > limit
}

pub(crate) fn value_is_secret(
    bytes: &[u8],
    value: &Value,
    key: &[u8],
    strength: Strength,
    mode: Mode,
) -> bool {
    let v = value.text(bytes);
    if charge(Site::Judge, value.start, value.raw_end) {
        return true;
    }
    let raw = &bytes[value.start..value.raw_end];
    // A field named `pass` alone holds a password that looks like one (a digit or a symbol in
    // it); a word there is a verdict (`"pass": "Passed"`), a render pass or a label.
    if key.eq_ignore_ascii_case(b"pass")
        && !v
            .iter()
            .any(|b| b.is_ascii_digit() || b"!@#$%^&*+=?~/|<>{}[]".contains(b))
    {
        return false;
    }
    // Words of a script without ASCII (`密码=请检查`, `пароль: секрет`) are the sentence going
    // on, not a generated value.
    if crate::chars::script_words(v) {
        return false;
    }
    // Whether the key names a password, asked once of a key many checks below ask it of.
    let names_password = {
        let known = std::cell::OnceCell::new();
        move || *known.get_or_init(|| password_key(key))
    };
    // A design system's token holds a style (`primaryToken: '#1f2937'`); a password may still
    // look like one.
    if css_value(v) && !names_password() {
        return false;
    }
    // A personal access token is one base64url run (`AZURE_DEVOPS_PAT=…`); a `…_PAT` holding a
    // regex or an alphabet is a pattern.
    let pat = key.len() >= 3 && key[key.len() - 3..].eq_ignore_ascii_case(b"pat");
    if strength == Strength::Weak && pat && !v.iter().all(|&b| b64url(b)) {
        return false;
    }
    // A quoted value is whole: an opening `${` or `$(` it never closes is part of a password
    // (`"Hx7${q2Lm9"`), not a reference cut at the value's end.
    let placeholder = is_placeholder(v)
        && !(value.quoted && unclosed_template(v))
        && !(value.quote == b'\'' && dollar_literal(v))
        && !(names_password() && weak_literal(v));
    if placeholder
        || !names_password() && crate::rules::prefix_then_word(v)
        || is_reference(v)
        || same_as_key(v, key)
        || stand_in_for_key(v, key)
        || yaml_tag(bytes, value)
        || !names_password() && auth_scheme(v)
    {
        return false;
    }
    // A member that holds the secret, not the secret (`pwd=instance_info.password,`), and code
    // around a name (`$this->accessToken`, `&api.Secret{`, `@password).tap(…)`).
    if !value.quoted
        && (secret_member(v)
            || sigil_code(raw)
            || secret_argument(raw)
            || composite_literal(raw)
            || cmdlet(v))
    {
        return false;
    }
    if names_no_secret(v) {
        return false;
    }
    // A translation file's entry: an interface's sentence as its key, its translation as its
    // value (`"Incorrect password": "Contraseña incorrecta"`).
    if value.quoted && locale_entry(bytes, value.start, v)
        || mode == Mode::Prose && in_locale_entry(bytes, value.start)
    {
        return false;
    }
    // A name where a value goes (`"access_token": "facebook_token"`, `'db-password'`): lowercase
    // words that end with the secret's own word.
    if (value.quoted || password_entry_key(key)) && named_slot(v, key) {
        return false;
    }
    // A sentence in Chinese or Japanese after the key (`… `password` 的功能就可以了。`), not a value;
    // in a locale file too (`save_key: 请注意…`, `no_webauthn_devices: 有効な…`): a message.
    if mode == Mode::Prose && cjk_at(bytes, value.start) || cjk_text(v) {
        return false;
    }
    // A digest or an id a command line prints in a table's column (`fly secrets list`: `NAME
    // DIGEST …` over `SECRET_KEY_BASE  7c1e9d2a4b6f8031  …`): the column's title names it (a
    // value after anything but a two-blank gap reads nothing back).
    if mode == Mode::Prose
        && crate::layout::column_title(bytes, value.start).is_some_and(|t| {
            [
                &b"DIGEST"[..],
                b"HASH",
                b"ID",
                b"SHA",
                b"CHECKSUM",
                b"FINGERPRINT",
                b"VERSION",
                b"REVISION",
                b"COMMIT",
                b"UUID",
            ]
            .contains(&t)
        })
    {
        return false;
    }
    // An id a label names in a sentence (`… client secret is provided. Trace ID: 149ce21c-…`,
    // `access token for client: 9f597b0b-…`): the label, not the secret word, names the UUID.
    if mode == Mode::Prose && uuid_shaped(v) && labelled_by_other(bytes, value.start) {
        return false;
    }
    // A word closing emphasis or a docstring (`**token endpoint**`, `… to SSLConnection"""`).
    if mode == Mode::Prose && !value.quoted {
        let word = trim_end_of(v, |b| matches!(b, b'*' | b'_' | b'"' | b'\'' | b'`'));
        if word.len() < v.len() && !word.is_empty() && word.iter().all(u8::is_ascii_alphabetic) {
            return false;
        }
        // A word glued to a template's tag (`{% trans %}Password Changed{% endtrans %}`): the
        // template's text.
        let text = v
            .strip_suffix(b"{%")
            .or_else(|| v.strip_suffix(b"{{"))
            .unwrap_or(v);
        if text.len() < v.len() && !text.is_empty() && text.iter().all(u8::is_ascii_alphabetic) {
            return false;
        }
    }
    // A member of a type or an object in code (`= TestConstants.AuthorityUtid2Tenant;`), or a
    // variable of camel-case words (`Key: testX5CKeyPath,`): lowercase first, its letters mostly
    // words; a generated value's humps are short runs (`aB3xKpQ9mZtW8vYe`).
    let camel_variable = || {
        v.first().is_some_and(u8::is_ascii_lowercase)
            && v.iter().all(u8::is_ascii_alphanumeric)
            && name_of_words(v)
            && {
                let letters: Vec<u8> = v.iter().copied().filter(u8::is_ascii_alphabetic).collect();
                crate::chars::camel_word_share(&letters).is_some_and(|w| 3 * w >= 2 * letters.len())
            }
    };
    if mode == Mode::Code && !value.quoted && (member_path(v) || camel_variable()) {
        return false;
    }
    if names_where_secret_lives(bytes, value, v, key, strength) {
        return false;
    }
    // A call, a quoted slot, a URL's userinfo and a DN each need a mark letters and digits lack.
    if !v.iter().all(u8::is_ascii_alphanumeric)
        && (code_continuation(v) || quoted_slot(v) || url_stand_in_userinfo(v) || ldap_dn(v))
    {
        return false;
    }
    if value.quoted && secret_field_name(v) || public_by_prefix(v) {
        return false;
    }
    // A weak key's base64 of plain words (`ANY_KEY = ZHVtbXkgdGV4dCBkYXRh…`) encodes no key.
    if strength == Strength::Weak && base64_text(v) {
        return false;
    }
    // Cut short on purpose (`ops_eyJzaWdu...`, `sk-…`): an elided value is not the secret.
    let run = run_end_max(bytes, value.start, MAX_VALUE, |b| {
        !b.is_ascii_whitespace() && !b"\"'`".contains(&b)
    });
    let head = &bytes[value.start..run];
    if head.ends_with(b"...") || head.ends_with("\u{2026}".as_bytes()) {
        return false;
    }
    // A leading `-` is a flag or a negative number, except in a glued shell literal
    // (`DB_PASSWORD=-h4ck3rPw!9`) or a quoted string (`-a '-C+p6iCAQ…'`) whose text is not a
    // flag's.
    let glued_literal = mode == Mode::Literal && !value.quoted;
    let literal = glued_literal || value.quoted;
    if v.starts_with(b"-") && (!literal || flag_like(v) || !generated(&v[1..])) {
        return false;
    }
    // A key's id or fingerprint as GnuPG prints it in a log line (`KEY_CONSIDERED 57BE…D1CF`):
    // capital hex in a sentence; a generated hex secret is written in lowercase.
    let printed_id = mode == Mode::Prose && !v.iter().any(u8::is_ascii_lowercase);
    if strength == Strength::Weak
        && hex_key_id(v)
        && (public_key_id_key(key) || key_algorithm_before(bytes, key) || printed_id)
    {
        return false;
    }
    if cookie_attributes(v, key) || secret_name(bytes, value, key, mode) {
        return false;
    }
    if plain_cookie(v, key) {
        return false;
    }
    // A bare `key` word names a store's entry as often as a secret: a key path or a digest there
    // is the entry's name.
    if strength == Strength::Weak
        && (key_path(v) || hex_digest(v) && bare_key_word(text_before(bytes, key), key))
    {
        return false;
    }
    // A PIN or an all-digit password (`DB_PASSWORD=84619273`), not a count or a date; a strong
    // key's long run of digits (`secret = "9734741337193905126710251"`) is no number either.
    let digits_secret = names_password() && v.len() >= 4 || strength == Strength::Strong && v.len() >= 16;
    if mode != Mode::Prose && digits_secret && v.iter().all(u8::is_ascii_digit) {
        // A count of four or five (`passphrase='1234'`) is typed where the value goes, as
        // `123456` is (a URL's userinfo keeps its own judgment).
        return !(v.len() < 6 && crate::chars::one_count(v, 4));
    }
    // A quoted value is a literal wherever it stands, and so is a connection string's field
    // (`…;Password=specialbill_user;Initial Catalog=…`): its text is the value itself.
    let mode = if (value.quoted || next_connection_field(bytes, value.raw_end)) && mode == Mode::Code {
        Mode::Literal
    } else {
        mode
    };
    let weak = strength == Strength::Weak;
    if !value.quoted {
        // A call, an index or a generic type. A shell/env literal is the text itself, so there
        // only a whole expression (`get_password()`) counts, not a `(` inside `Abc(d3f)Gh`.
        let code = if mode == Mode::Literal {
            code_expression(raw)
        } else {
            raw.contains(&b'(')
                || raw.contains(&b'[') && !bracketed_at(raw)
                || v.contains(&b'<')
                || code_name_path(v)
        };
        if code {
            return false;
        }
    }
    if value.quoted && v.iter().any(u8::is_ascii_whitespace) {
        // A scheme or a word before a stand-in (`"Authorization": "Other foobar"`) is no phrase.
        let mut words = v.split(u8::is_ascii_whitespace).filter(|w| !w.is_empty());
        if let (Some(_), Some(last), None) = (words.next(), words.next(), words.next())
            && is_placeholder(last)
        {
            return false;
        }
        // A passphrase has spaces; a message has sentence words or names the secret itself, or
        // its key names it a message (`invalid_one_time_password`, `sendOneTimePassword`).
        return (!weak || contains_ci(key, b"passphrase")) && passphrase_like(v) && !message_key(key)
            || spaced_random(v);
    }
    if numeric_like(v)
        || version_like(v)
        || protocol_version(v)
        || is_path_or_url(v) && !random_after_slash(v)
        || readable_url(v)
        || key_chord(v)
        || mode == Mode::Prose && relative_file_path(v)
    {
        return false;
    }
    // A constant's name where code or prose names a value (`static Filter CAS_AUTH_FILTER;`, the
    // secret `GITHUB_REGISTRY_TOKEN` in a code span); a literal, quoted or in a shell or config
    // line, may still be one in capitals.
    let named = !value.quoted || value.quote == b'`';
    if constant_like(v) && named && matches!(mode, Mode::Prose | Mode::Code) {
        return false;
    }
    let secret = match mode {
        Mode::Literal if !weak && !value.quoted && token_slot_word(v, key) => false,
        Mode::Literal if !weak => v.len() >= 4,
        // Random letters unquoted in code: unless code goes on after them (`= rndPwdStr;`) or
        // they name what the text uses again (a variable).
        Mode::Code if !weak && (random_letters(v) || crate::chars::random_letters_joined(v)) => {
            value.raw_end == value.end
                && bytes.get(value.end) != Some(&b';')
                && !named_nearby(bytes, value.start, value.end)
        }
        Mode::Code if !weak => {
            v.len() >= 6
                && (!identifier_like(v) || names_password() && amp_joined_random(v))
                && (has_digit(v) || has_symbol(v))
        }
        Mode::Prose if value.quoted => v.len() >= 4 && looks_random(v, if weak { 12 } else { 6 }),
        Mode::Prose if !prose_word(bytes, value) => false,
        Mode::Prose if word_list(v) => false,
        Mode::Prose if !weak => looks_random(v, 6),
        // A short generated value of a weak key: letters, digits and symbols together.
        Mode::Literal | Mode::Code if v.len() >= 8 && generated(v) => true,
        _ => looks_random(v, 12),
    };
    // Asked only of a value judged a secret: a type named for the key's word in code, an entry's
    // name behind a `$`, which a config resolves from its secret store (`token: $webex-token`,
    // `password: $db-password`), and a Go struct's field tag after its type (`Keys []JsonWebKey
    // `json:"keys,omitempty"``).
    if !secret {
        return false;
    }
    let type_name = mode == Mode::Code && !value.quoted && type_named_for_key(v, key) && !names_password();
    !type_name
        && !v.strip_prefix(b"$").is_some_and(|name| named_slot(name, key))
        && (value.quote != b'`' || !struct_tag(v))
}

/// A short lowercase word, or a few joined by dashes or underscores, perhaps with a count after
/// them, unquoted where a token or an API key goes (`DEPLOY_TOKEN=short`, `api_key=dev-token`,
/// `TOKEN=staging_key_not_set_yet`, `API_KEY=dev-1234`): a name typed in a generated value's
/// place, as no issued token is. Where a password or a secret
/// goes (`APP_SECRET=dragon`) a word is one, and so is a literal code quotes (`'uploadxyz'`).
pub(crate) fn token_slot_word(v: &[u8], key: &[u8]) -> bool {
    // A count typed after the words (`dev-1234`, `abcd-1234`) adds nothing generated to them.
    let digits = v.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    let v = if digits >= 3
        && digits < v.len()
        && crate::chars::count_chain(&mut v[v.len() - digits..].iter().copied()) == Some(digits)
    {
        trim_end_of(&v[..v.len() - digits], |b| matches!(b, b'-' | b'_'))
    } else {
        v
    };
    let words = || v.split(|&b| matches!(b, b'-' | b'_'));
    let n = words().count();
    let short_word = |w: &[u8]| (2..=12).contains(&w.len()) && w.iter().all(u8::is_ascii_lowercase);
    (3..=48).contains(&v.len())
        && (n == 1 && v.len() <= 12 || (2..=6).contains(&n))
        && words().all(short_word)
        && !password_key(key)
        && !contains_ci(key, b"secret")
        && !contains_ci(key, b"pass")
}

/// Letters of both cases on each side of an `&` with no blank (`eDkhO&pToPbF`): no reference
/// (`&self`) nor a conjunction (`a && b`, `isSet&mask`), but a password's symbol between random
/// letters, each side changing case within itself.
pub(crate) fn amp_joined_random(v: &[u8]) -> bool {
    let mut sides = v.split(|&b| b == b'&');
    let (Some(a), Some(b), None) = (sides.next(), sides.next(), sides.next()) else {
        return false;
    };
    let random = |s: &[u8]| {
        s.len() >= 4
            && s.iter().all(u8::is_ascii_alphabetic)
            && camel_word_share(s).is_some_and(|w| 2 * w < s.len())
    };
    random(a) && random(b)
}

/// An environment variable naming where a secret is kept (`DATABASE_PASSWORD_FILE`,
/// `GH_TOKEN_PATH`): its last word says it names a file, a path or a variable.
pub(crate) fn secret_location(v: &[u8]) -> bool {
    let mut segments = v.split(|&b| b == b'_');
    let last = segments.next_back().unwrap_or_default();
    all_caps_name(v)
        && matches!(last, b"FILE" | b"PATH" | b"DIR" | b"ENV" | b"VAR" | b"NAME")
        && segments.any(|w| secret_word(w).is_some())
}

/// A constant's name in capitals with a secret word among its segments and another word
/// (`GITHUB_TOKEN`, `CKV_SECRET`, a variable's or a check's id): it names a secret, quoted or
/// not; digits stand only as a whole last segment.
pub(crate) fn secret_constant_name(v: &[u8]) -> bool {
    let segments = || v.split(|&b| b == b'_');
    let n = segments().count();
    n >= 2
        && segments().enumerate().all(|(k, w)| {
            !w.is_empty()
                && (w.iter().all(u8::is_ascii_uppercase) || k == n - 1 && w.iter().all(u8::is_ascii_digit))
        })
        && segments().any(|w| secret_word(w).is_some())
        && segments().any(|w| w.iter().all(u8::is_ascii_uppercase) && secret_word(w).is_none())
}

/// A value that names what a secret is, not the secret: a digest of it under a `hashed…` key; a
/// part of an AWS resource name (`arn:aws:secretsmanager:…:secret:<name>`); a string prefix the
/// parser left on a slot's own name (C#'s `@"Token"`, `$"…"`); a variable naming the secret
/// handed on in an argument list (`api_key=staging_api_key,`); a package name and its version
/// under a weak key (`cache-key: node-20.11.x`).
pub(crate) fn names_where_secret_lives(
    bytes: &[u8],
    value: &Value,
    v: &[u8],
    key: &[u8],
    strength: Strength,
) -> bool {
    if let Some(inner) = v
        .strip_prefix(b"@\"")
        .or_else(|| v.strip_prefix(b"$\""))
        .or_else(|| v.strip_prefix(b"@'"))
    {
        let inner = inner.strip_suffix(b"\"").unwrap_or(inner);
        // `? token : $"Bearer {token}"`: a scheme word before an interpolation.
        if is_placeholder(inner)
            || same_as_key(inner, key)
            || stand_in_for_key(inner, key)
            || is_auth_scheme(inner)
        {
            return true;
        }
    }
    let raw = &bytes[value.start..value.raw_end];
    if !value.quoted
        && raw.ends_with(b",")
        && line_end(bytes, value.raw_end) == value.raw_end
        && secret_variable(v)
    {
        return true;
    }
    if secret_location(v) || secret_constant_name(v) {
        return true;
    }
    digest_of_secret(bytes, key, v)
        || within_arn(bytes, value.start)
        || strength == Strength::Weak && name_version(v)
}

/// A digest of the secret kept to recognise it, not the secret: a hex digest under a `hashed…`
/// key (a scanner's baseline `"hashed_secret": "…"`, `hashedPassword`) or one whose last word
/// names a digest (`VALID_TOKEN_IGNORE_SHA`).
pub(crate) fn digest_of_secret(bytes: &[u8], key: &[u8], v: &[u8]) -> bool {
    // The value's shape first: most values are no digest, and the key is then never read.
    if !hex_digest(v) {
        return false;
    }
    let before = text_before(bytes, key);
    let hashed = key.len() > 6 && key[..6].eq_ignore_ascii_case(b"hashed")
        || ends_with_ci(before, b"hashed_")
        || ends_with_ci(before, b"hashed");
    // A key whose last word names a digest (`TOKEN_IGNORE_SHA`, `api_key_hash`) holds one.
    let last = &key[key
        .iter()
        .rposition(|&b| matches!(b, b'_' | b'-' | b'.'))
        .map_or(0, |k| k + 1)..];
    let digest_named = [
        &b"sha"[..],
        b"sha1",
        b"sha256",
        b"sha512",
        b"hash",
        b"digest",
        b"checksum",
    ]
    .iter()
    .any(|w| last.eq_ignore_ascii_case(w));
    hashed || digest_named
}

/// Whether the text at `p` is inside an AWS resource name (`arn:aws:secretsmanager:…:secret:…`)
/// or a URN (`urn:ietf:params:oauth:grant-type:…`): its words name a secret's home or a
/// namespace, not the secret.
pub(crate) fn within_arn(bytes: &[u8], p: usize) -> bool {
    let before = line_before(bytes, p);
    let start = before
        .iter()
        .rposition(|&b| b.is_ascii_whitespace() || b"\"'`=(,[{".contains(&b))
        .map_or(0, |k| k + 1);
    let token = &before[start..];
    token.starts_with(b"arn:aws:") || token.starts_with(b"arn:aws-") || token.starts_with(b"urn:")
}

/// A snake-case variable whose last word names a secret (`staging_api_key`, `db_password`,
/// `old_token`): lower-case words joined by `_`, none of them digits.
pub(crate) fn secret_variable(v: &[u8]) -> bool {
    const LAST: Words = words_of!(b"secret password passwd pwd token key apikey credential credentials pass");
    let Some(k) = v.iter().rposition(|&b| b == b'_') else {
        return false;
    };
    k > 0 && v.iter().all(|&b| b.is_ascii_lowercase() || b == b'_') && LAST.iter().any(|w| &v[k + 1..] == w)
}

/// A package or tool name and its version (`node-20.11.x`, `gradle@8.6`, `go1.21`): a name of
/// letters, a separator, then numbers joined by dots with at least one dot, `x` or `*` standing
/// for any.
pub(crate) fn name_version(v: &[u8]) -> bool {
    let Some(sep) = v.iter().rposition(|&b| matches!(b, b'-' | b'@' | b'_')) else {
        return false;
    };
    let (name, version) = (&v[..sep], &v[sep + 1..]);
    let version = version.strip_prefix(b"v").unwrap_or(version);
    name.len() >= 2
        && name.iter().all(|&b| b.is_ascii_alphabetic() || b == b'-')
        && version.first().is_some_and(u8::is_ascii_digit)
        && version.contains(&b'.')
        && version
            .split(|&b| b == b'.')
            .all(|p| !p.is_empty() && (p.iter().all(u8::is_ascii_digit) || p == b"x" || p == b"*"))
}

/// An unquoted value of letters (and `-`) ending its line that is not a type or schema word:
/// `SuperSecretPassword`, `trustno-one-ever`, `qwertyuiop`; not `str`, `SecretStr`, `PasswordField`,
/// `required`, nor a word shorter than eight letters (`Bcrypt`, `Rosebud`).
pub(crate) fn letters_password(bytes: &[u8], value: &Value, key: &[u8]) -> bool {
    const SCHEMA: Words = words_of!(
        b"bool boolean int integer number object any bytes char secretstr secretstring \
        securestring plaintext plain hashed encrypted env vault prompt ask disabled enabled ignore omit \
        keep unique nullable blank varchar sensitive writeonly readonly text none void never unknown \
        secret random generated required optional confirmed sometimes string str default hidden masked \
        redacted bcrypt argon native inherit inherited scram trust peer ident true false null anonymous \
        keychain keyring external internal database standard security"
    );
    const SUFFIXES: Words = words_from!(&[
        b"Field", b"Type", b"Input", b"Str", b"String", b"Schema", b"Column", b"Ref", b"Name", b"Key",
        b"Hash", b"Value", b"Secret", b"Token",
    ]);
    let v = value.text(bytes);
    // A comment after a blank (`password: root  # staging`) still ends the value's line.
    let after = skip_blank(bytes, value.raw_end);
    let ends_line = matches!(bytes.get(after), None | Some(b'\n' | b'\r'))
        || after > value.raw_end && bytes.get(after) == Some(&b'#');
    // A short word (`Bcrypt`, `Native`, `Inherit`) names a setting's choice more often than it is
    // a password: a letters-only password has at least eight letters, but for the accounts' names
    // default installs use as their password (`root`, `admin`, `toor`) and typed weak ones.
    // Those short ones only where the key ends on the password's word: after it, another word
    // names a property of the password (`password_owner: root`, `password_policy: admin`).
    const DEFAULTS: Words = words_of!(b"root toor admin");
    let names_password = PASSWORD_KEYS.iter().any(|w| ends_with_ci(key, w));
    let password_shaped = v.len() >= 8 || names_password && (weak_literal(v) || DEFAULTS.contains_ci(v));
    !value.quoted
        && value.raw_end == value.end
        && ends_line
        && password_shaped
        && v.first().is_some_and(u8::is_ascii_alphabetic)
        && v.iter().all(|&b| b.is_ascii_alphabetic() || b == b'-')
        && !is_placeholder(v)
        && !same_as_key(v, key)
        && !contains_ci(key, v)
        && !SCHEMA.contains_ci(v)
        && !SUFFIXES.iter().any(|w| v.len() > w.len() && v.ends_with(w))
}

/// Whether what precedes a key on its line starts a statement: nothing, PHP's `$`, or an
/// earlier statement ended by `;`.
pub(crate) fn statement_start(line: &[u8]) -> bool {
    let before = trim_ascii(line);
    let before = trim_ascii(before.strip_suffix(b"$").unwrap_or(before));
    before.is_empty() || before.ends_with(b";") || location_prefix(before)
}

/// An `.npmrc` line's registry scope before its key (`//registry.example.com/releases:` in
/// `//…:_password=…`, the path's last segment read with the key or not): what follows `=` is
/// the setting's literal text, as in a shell's or an env file's assignment.
pub(crate) fn npm_scope(before: &[u8]) -> bool {
    before.len() > 3
        && before.starts_with(b"//")
        && matches!(before.last(), Some(b':' | b'/'))
        && !before.iter().any(u8::is_ascii_whitespace)
}

/// An unquoted lowercase word ending a `password = …` line that is a literal, not a name in
/// code: `open_sesame`; not a word that names what code holds (`new_password`,
/// `user_input`, `hashed`, `none`), nor a name the text uses again within 256 bytes (`password = payload`
/// after `payload = read()`): a literal is typed once, a variable is defined and used.
pub(crate) fn config_literal(bytes: &[u8], value: &Value, key: &[u8]) -> bool {
    const NAMES: Words = words_of!(
        b"pass pwd pw secret token key cred auth hash input value text data field param arg env conf \
        setting request form user login salt str byte none null nil true false undefined self \
        this crypt prompt random generat default required optional hidden mask result response \
        entry option environ read get load fetch plain cipher digest vault keyring keychain sha \
        md5 argon pbkdf payload message content buffer stdin answer reply temp tmp cache store \
        current new old saved given expected actual confirm candidate attempt guess entered typed \
        original previous next first second local global other empty blank enabl disabl allow \
        deny denied strict"
    );
    const NEARBY: usize = 256;
    let v = value.text(bytes);
    // A `;` after it makes the line code, where a bare word names a variable or a constant
    // (`password = decoded;`): only a line that ends with the word itself is a config literal.
    let after = skip_blank(bytes, string_close_end(bytes, value.raw_end));
    let ends = matches!(bytes.get(after), None | Some(b'\n' | b'\r'));
    if value.quoted
        || !ends
        || value.raw_end != value.end
        || !(6..=32).contains(&v.len())
        || !v[0].is_ascii_lowercase()
        // Kebab-case names a resource or a version (`tls-cert-2024`, `shorter-version`).
        || !v.iter().all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        // `v` is lowercase already: a first-byte test, then the word.
        || NAMES.iter().any(|w| {
            w.len() <= v.len() && (0..=v.len() - w.len()).any(|k| v[k] == w[0] && v[k..].starts_with(w))
        })
        || same_as_key(v, key)
        // The key names the password itself (`db_password`), not a setting about passwords
        // (`password_auth = disabled`, `password_rotation = quarterly`).
        || !PASSWORD_KEYS
            .iter()
            .any(|w| key.len() >= w.len() && key[key.len() - w.len()..].eq_ignore_ascii_case(w))
    {
        return false;
    }
    let from = value.start.saturating_sub(NEARBY);
    let to = bytes.len().min(value.end + NEARBY);
    // The name again as a whole word: a first-byte scan, then a comparison where it starts.
    let around = |s: usize, e: usize| {
        let mut k = s;
        while let Some(off) = bytes[k..e].iter().position(|&b| b == v[0]) {
            let at = k + off;
            if bytes[at..e].starts_with(v)
                && !bytes.get(at + v.len()).is_some_and(|&b| is_key_byte(b))
                && (at == 0 || !is_key_byte(bytes[at - 1]))
            {
                return true;
            }
            k = at + 1;
        }
        false
    };
    !around(from, value.start) && !around(value.end, to) && !is_placeholder(v)
}

/// A YAML tag: `!name` followed on its line by what it tags (`password: !vault |`); `!Welcome`
/// alone is a password.
pub(crate) fn yaml_tag(bytes: &[u8], value: &Value) -> bool {
    let v = value.text(bytes);
    if value.quoted || v.first() != Some(&b'!') || !identifier_like(&v[1..]) && !v[1..].starts_with(b"!") {
        return false;
    }
    let after = skip_blank(bytes, value.raw_end);
    after > value.raw_end && bytes.get(after).is_some_and(|&b| b != b'\n' && b != b'\r')
}

/// The name of an authentication scheme (`<Token>Bearer</Token>`, `token_kind = "JWT"`): what
/// kind of token, never one.
pub(crate) fn auth_scheme(v: &[u8]) -> bool {
    const SCHEMES: Words = words_from!(&[
        b"bearer",
        b"basic",
        b"digest",
        b"jwt",
        b"oauth",
        b"oauth2",
        b"negotiate",
        b"ntlm",
        b"kerberos",
        b"hmac",
        b"mac",
    ]);
    SCHEMES.contains_ci(v)
}

/// `Set-Cookie: Path=/; HttpOnly`: a cookie's attributes without a cookie.
pub(crate) fn cookie_attributes(v: &[u8], key: &[u8]) -> bool {
    const ATTRIBUTES: Words = words_from!(&[
        b"path",
        b"domain",
        b"expires",
        b"max-age",
        b"samesite",
        b"secure",
        b"httponly",
        b"partitioned",
        b"priority",
    ]);
    if !contains_ci(key, b"cookie") {
        return false;
    }
    let name = &v[..run_end(v, 0, |b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')];
    // A cookie's name and nothing after its `=` (`oauth_state=; Max-Age=0`): the cookie cleared.
    let cleared = !name.is_empty() && v.len() == name.len() + 1 && v.ends_with(b"=");
    cleared || ATTRIBUTES.contains_ci(name)
}

/// `tls:\n  secret: tls-cert-2024`: a bare `secret` key in YAML, under a mapping that names what
/// refers to a secret (`tls`, `volumes`), whose value is a Kubernetes object's name (three or more
/// lowercase parts, mostly words, joined by `-`). Elsewhere such a value is a memorable password
/// (`secret: blue-river-42-sky`).
pub(crate) fn secret_name(bytes: &[u8], value: &Value, key: &[u8], mode: Mode) -> bool {
    let v = value.text(bytes);
    mode == Mode::Code
        && !value.quoted
        && key.eq_ignore_ascii_case(b"secret")
        && v.iter().filter(|&&b| b == b'-').count() >= 2
        && v.iter()
            .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'.'))
        && wordy(v)
        && under_secret_reference(bytes, value.start)
}

/// Whether the YAML line holding `pos` is nested under a key that refers to a secret by name:
/// the line above, less indented, is `tls:`, `ingress:`, `volumes:` or the like.
pub(crate) fn under_secret_reference(bytes: &[u8], pos: usize) -> bool {
    const PARENTS: Words = words_from!(&[b"tls", b"ingress", b"certificate", b"cert", b"volumes", b"volume"]);
    let line = line_before(bytes, pos);
    let start = pos - line.len();
    if start == 0 || bytes[start - 1] != b'\n' {
        return false;
    }
    let indent = |l: &[u8]| l.iter().take_while(|&&b| b == b' ' || b == b'-').count();
    let parent = line_before(bytes, start - 1);
    let name = trim_ascii(&parent[indent(parent)..]);
    indent(parent) < indent(line) && name.strip_suffix(b":").is_some_and(|n| PARENTS.contains_ci(n))
}

/// A canonical UUID (8-4-4-4-12 hex digits): an identifier.
pub(crate) fn uuid(v: &[u8]) -> bool {
    v.len() == 36
        && v.iter().enumerate().all(|(k, &b)| {
            if matches!(k, 8 | 13 | 18 | 23) {
                b == b'-'
            } else {
                b.is_ascii_hexdigit()
            }
        })
}

/// A UUID's shape typed or garbled (8-4-4-4-12 letters and digits in one case, the last group
/// one or two long, `a1daagbb-5047-4c59-170e-ceegeg52590200`): an identifier in a log line.
pub(crate) fn uuid_shaped(v: &[u8]) -> bool {
    let groups = v.split(|&b| b == b'-').map(<[u8]>::len);
    let lengths = [8, 4, 4, 4];
    let mut n = 0;
    for (k, len) in groups.enumerate() {
        let fits = match k {
            0..=3 => len == lengths[k],
            4 => (12..=14).contains(&len),
            _ => false,
        };
        if !fits {
            return false;
        }
        n += 1;
    }
    n == 5
        && v.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'-')
        && !(v.iter().any(u8::is_ascii_lowercase) && v.iter().any(u8::is_ascii_uppercase))
}

/// Whether the value at `start` follows a label of its own (`Trace ID:`, `client:`) that names
/// no secret: the sentence's secret word came earlier and names something else.
pub(crate) fn labelled_by_other(bytes: &[u8], start: usize) -> bool {
    let before = bytes[..start].trim_ascii_end();
    let Some(head) = before.strip_suffix(b":") else {
        return false;
    };
    let w = head.len()
        - head
            .iter()
            .rev()
            .take_while(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
            .count();
    let label = &head[w..];
    // `api key for the app:`, `client secret for staging:`: a label right after a secret word
    // and its scope says which secret it is, so the value is that secret (an `…_id` label or
    // `ID` still names an id).
    let names_id = label.len() >= 2
        && label[label.len() - 2..].eq_ignore_ascii_case(b"id")
        && (label.len() == 2
            || matches!(label[label.len() - 3], b'_' | b'-')
            || label[label.len() - 2] == b'I');
    !label.is_empty() && secret_word(label).is_none() && (names_id || !scopes_a_secret_word(&head[..w]))
}

/// Whether `before` ends with a secret word and the start of its scope (`api key for the`,
/// `password on`): what follows names which secret, not something else.
pub(crate) fn scopes_a_secret_word(before: &[u8]) -> bool {
    let mut words = before.rsplit(u8::is_ascii_whitespace).filter(|w| !w.is_empty());
    let mut word = words.next();
    if word.is_some_and(|w| {
        matches!(
            lower(w, &mut [0; 16]),
            b"the" | b"a" | b"an" | b"my" | b"our" | b"your" | b"its"
        )
    }) {
        word = words.next();
    }
    word.is_some_and(|w| matches!(lower(w, &mut [0; 16]), b"for" | b"on" | b"in" | b"at" | b"of"))
        && words.next().is_some_and(|w| {
            let w = trim_end_of(w, |b| !b.is_ascii_alphanumeric());
            secret_word(w).is_some()
        })
}

/// Text in Chinese, Japanese or Korean (four characters or more from the value's start): a
/// message, never a generated secret. A long run of ASCII letters with digits in it
/// (`测试环境密钥Xq9mL2vR7pZ4kT8sW3nB`) is a token the words label, not a word of the message.
pub(crate) fn cjk_text(v: &[u8]) -> bool {
    // (The script first: a value that opens with none is no such text, whatever its runs.)
    let token = || {
        v.split(|b| !b.is_ascii_alphanumeric())
            .any(|run| run.len() >= 16 && has_digit(run) && run.iter().any(u8::is_ascii_alphabetic))
    };
    cjk_at(v, 0) && (0..v.len()).filter(|&k| cjk_at(v, k)).count() >= 4 && !token()
}

/// `-x`, `--flag`, `--flag-name`: a dash and a word.
pub(crate) fn flag_like(v: &[u8]) -> bool {
    let body = &v[run_end(v, 0, |b| b == b'-')..];
    !body.is_empty() && body.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'-')
}

/// The words of a key naming a password (not a token or an API key).
pub(crate) const PASSWORD_KEYS: Words =
    words_from!(&[b"password", b"passwd", b"pwd", b"passphrase", b"passcode"]);

/// A key naming a password (not a token or an API key): an all-digit value of it is a PIN.
pub(crate) fn password_key(key: &[u8]) -> bool {
    PASSWORD_KEYS.found_in(key)
}

/// A public key id (`3AA5C34371567BD2`, `0x3AA5C34371567BD2`, a 40-digit fingerprint): 8, 16 or
/// 40 hex digits in one case.
pub(crate) fn hex_key_id(v: &[u8]) -> bool {
    let body = v.strip_prefix(b"0x").unwrap_or(v);
    matches!(body.len(), 8 | 16 | 40)
        && body.iter().all(u8::is_ascii_hexdigit)
        && !(body.iter().any(u8::is_ascii_uppercase) && body.iter().any(u8::is_ascii_lowercase))
}

/// Keys that take a public key's id (gpg's `--recv-keys`, `--default-key`, git's
/// `user.signingkey`, a config's `trusted_keys` or `gpg_key`), not a key; `_` and `.` join a
/// key's words as `-` does.
pub(crate) fn public_key_id_key(key: &[u8]) -> bool {
    let mut buf = [0u8; 64];
    let n = key.len().min(buf.len());
    for (d, &b) in buf.iter_mut().zip(&key[..n]) {
        *d = if matches!(b, b'_' | b'.') { b'-' } else { b };
    }
    let key = &buf[..n];
    [
        &b"recv-key"[..],
        b"default-key",
        b"signingkey",
        b"signing-key",
        b"local-user",
        b"trusted-key",
        b"keyid",
        b"key-id",
        b"gpg-key",
        b"pgp-key",
    ]
    .iter()
    .any(|w| contains_ci(key, w))
}

/// `expires_in=3600`: a name, `=` and a value is the next field of a log line or a query, not a
/// token after a scheme word (a token's base64 padding `=` ends it).
pub(crate) fn next_field_pair(t: &[u8]) -> bool {
    let name = t
        .iter()
        .take_while(|&&b| b.is_ascii_alphanumeric() || b == b'_')
        .count();
    name > 0
        && t[0].is_ascii_alphabetic()
        && t.get(name) == Some(&b'=')
        && t.get(name + 1).is_some_and(|&b| b != b'=')
}

/// `RSA key 4AEE18F83AFDEB23`, `gpg key ABCD1234`: a bare `key` after a public-key algorithm or
/// a keyring's name takes the key's id, as gpg prints it.
pub(crate) fn key_algorithm_before(bytes: &[u8], key: &[u8]) -> bool {
    if !key.eq_ignore_ascii_case(b"key") {
        return false;
    }
    let before = text_before(bytes, key).trim_ascii_end();
    let word = &before[before.len() - run_back(before, |b| b.is_ascii_alphanumeric())..];
    [
        &b"rsa"[..],
        b"dsa",
        b"ecdsa",
        b"ed25519",
        b"eddsa",
        b"gpg",
        b"pgp",
        b"gnupg",
        b"signing",
        b"public",
    ]
    .iter()
    .any(|w| word.eq_ignore_ascii_case(w))
}

/// `/k9Fz2LqP8sT1vXyR4wN7mB0cD3eH6jU=`, `/K7MDENG/bPxRfiCYzq8k2Lm3…`: a leading `/` before a
/// random run, a base64 value rather than a path. A path is made of readable segments (`usr`,
/// `Documents`, `id_rsa.pub`); base64's `/` splits a random run into random pieces. The same
/// after a home-relative or relative start (`./Hq7Lm2…`, `~/Zp4…`): a key pasted after `./`.
pub(crate) fn random_after_slash(v: &[u8]) -> bool {
    let Some(rest) = [&b"../"[..], b"./", b"~/", b"/"]
        .iter()
        .find_map(|p| v.strip_prefix(*p))
    else {
        return false;
    };
    // A segment of letters in one case or capitalised is a name.
    let readable = |seg: &[u8]| {
        seg.iter().all(u8::is_ascii_alphabetic)
            && (seg[1..].iter().all(u8::is_ascii_lowercase) || seg.iter().all(u8::is_ascii_uppercase))
    };
    let pieces_random = !rest.contains(&b'/')
        || rest
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'+' | b'='))
            && rest
                .split(|&b| b == b'/')
                .all(|seg| !seg.is_empty() && !readable(seg))
            && rest.split(|&b| b == b'/').any(|seg| seg.len() >= 16);
    rest.len() >= 16 && pieces_random && mixed_case(rest) && has_digit(rest) && entropy(rest) >= 3.5
}

/// A Go struct field's tag: `name:"…"` pairs parted by blanks (`json:"keys,omitempty" yaml:"keys"`),
/// each name a lowercase word and each tag's value names (`keys,omitempty`, `user_id`), not a
/// password's symbols or a generated run (`db:"Xk9#mQ2$vL"`).
pub(crate) fn struct_tag(v: &[u8]) -> bool {
    v.contains(&b':')
        && v.split(|&b| b == b' ').filter(|p| !p.is_empty()).all(|pair| {
            let name = pair
                .iter()
                .take_while(|&&b| b.is_ascii_lowercase() || b == b'_')
                .count();
            name > 0
                && pair[name..].starts_with(b":\"")
                && pair.len() > name + 2
                && pair.ends_with(b"\"")
                && names_only(&pair[name + 2..pair.len() - 1])
        })
}

/// Whether `v` is names parted by `/ . - _ ,` (`keys,omitempty`, `src/x.go`): no other symbol,
/// and no part mixing both cases of letters with a digit, as a generated run does (`Qm2vLp`).
fn names_only(v: &[u8]) -> bool {
    v.iter()
        .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'.' | b'-' | b'_' | b','))
        && v.split(|&b| matches!(b, b'/' | b'.' | b'-' | b'_' | b','))
            .all(|part| !(mixed_case(part) && has_digit(part)))
}

/// A file's path relative to a directory (`certs/IT.F.s/OP-2nd.txt`, a diff's `b/src/x.go`): folders
/// then a file name ending with a lowercase extension, as a sentence or a diff's header names a
/// file; a generated value seldom holds a `/` and ends so.
pub(crate) fn relative_file_path(v: &[u8]) -> bool {
    let Some(slash) = v.iter().rposition(|&b| b == b'/') else {
        return false;
    };
    let name = &v[slash + 1..];
    let ext = name
        .iter()
        .rposition(|&b| b == b'.')
        .map_or(&b""[..], |d| &name[d + 1..]);
    slash > 0
        && ext.len() + 1 < name.len()
        && (1..=5).contains(&ext.len())
        && ext.iter().all(u8::is_ascii_lowercase)
        && !v.contains(&b',')
        && names_only(v)
        && v.split(|&b| b == b'/').all(|seg| !seg.is_empty())
}

/// A keyboard shortcut (`ctrl+shift+1`, `Cmd+K`): modifiers joined by `+`.
pub(crate) fn key_chord(v: &[u8]) -> bool {
    v.iter().rposition(|&b| b == b'+').is_some_and(|last| {
        v[..last].split(|&b| b == b'+').all(|p| {
            matches!(
                lower(p, &mut [0; 16]),
                b"ctrl" | b"control" | b"shift" | b"alt" | b"cmd" | b"meta" | b"option" | b"super" | b"win"
            )
        })
    })
}

/// `name("…`, `obj.get('…`, `Name(#{…`, `name(` at the end: a call whose first argument is a
/// string, however the value was cut. A password does not open with an identifier, a `(` and a
/// quote.
pub(crate) fn opens_a_call(v: &[u8]) -> bool {
    let Some(open) = v.iter().position(|&b| b == b'(') else {
        return false;
    };
    let head = &v[..open];
    let ident = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'$' | b':');
    // A generic type's path (`Aes256Gcm>::from_slice(&key_bytes)`): `::` joins its names.
    let generic = |b: &u8| ident(b) || matches!(b, b'<' | b'>');
    let path_call = head.windows(2).any(|w| w == b"::") && head.iter().all(generic);
    head.len() >= 2
        && (head[0].is_ascii_alphabetic() || matches!(head[0], b'_' | b'$'))
        && (head.iter().all(ident) || path_call)
        && (matches!(v.get(open + 1), None | Some(b'"' | b'\'' | b'`'))
            || path_call && matches!(v.get(open + 1), Some(b'&' | b'*' | b')')))
}

/// `instance_info.password`, `cfg.db_secret,`: a member path whose last name is a secret word
/// holds the secret; it is not its value.
pub(crate) fn secret_member(v: &[u8]) -> bool {
    let v = trim_end_of(v, |b| matches!(b, b',' | b';' | b')'));
    // No member without a `.` (asked before its parts are read).
    if !v.contains(&b'.') {
        return false;
    }
    let mut parts = v.split(|&b| b == b'.');
    let names = v.split(|&b| b == b'.').all(|p| {
        p.first().is_some_and(|&b| b.is_ascii_alphabetic() || b == b'_')
            && p.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
    });
    let last = parts.next_back().unwrap_or_default();
    names
        && v.contains(&b'.')
        && [
            b"password".as_slice(),
            b"passwd",
            b"pwd",
            b"secret",
            b"token",
            b"apikey",
            b"api_key",
            b"credential",
        ]
        .iter()
        .any(|w| contains_ci(last, w))
}

/// A sigil's name with code after it, not a value: PHP's member access (`$this->accessToken`),
/// Go's address of a composite literal (`&api.Secret{`, `&Config{`), a Ruby instance variable
/// closing a call or an argument (`@password).tap(&:confirm)`). A password may start with a
/// sigil (`$uP3r-S3cret!9`, `@dm1n!x`), but not go on as code does.
pub(crate) fn sigil_code(raw: &[u8]) -> bool {
    let ident = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
    let Some((&sigil, rest)) = raw.split_first() else {
        return false;
    };
    // Perl's dereference of an expression (`keys %{$self->{pool}}`, `@{$args{keys}}`).
    if matches!(sigil, b'%' | b'@') && rest.starts_with(b"{$") {
        return true;
    }
    if !rest
        .first()
        .is_some_and(|&b| b.is_ascii_alphabetic() || b == b'_')
    {
        return false;
    }
    let after = &rest[rest.iter().take_while(|b| ident(b)).count()..];
    match sigil {
        b'$' => {
            after.starts_with(b"->")
                && after
                    .get(2)
                    .is_some_and(|&b| b.is_ascii_alphabetic() || b == b'_')
        }
        // `&pkg.Type{`, and Elixir's capture of a function (`&MyApp.Secrets.for_conn/1`).
        b'&' => {
            let path = after.iter().take_while(|b| ident(b) || **b == b'.').count();
            let arity = trim_end_of(&after[(path + 1).min(after.len())..], |b| {
                matches!(b, b']' | b')' | b'}' | b',')
            });
            after.get(path) == Some(&b'{')
                || after.get(path) == Some(&b'/') && !arity.is_empty() && arity.iter().all(u8::is_ascii_digit)
        }
        b'@' => matches!(after.first(), Some(b')' | b',')) && after.len() > 1,
        // A nullable type (`): ?Response`), a dereference stepped (`*tokenCount++`).
        b'?' => after.is_empty() && rest[0].is_ascii_uppercase(),
        b'*' => matches!(after, b"++" | b"--" | b"++;" | b"--;"),
        _ => false,
    }
}

/// A composite literal opened after its type (`storage.DeviceToken{`, `&Config{`): Go builds the
/// value there. Its first field may follow the brace (`Token{Kind:`, `cacheKey{block:`) or it
/// closes empty (`cacheKey{}`); an unexported type is camel case then. (Only a value ending in
/// `{`, `}` or `:` is searched for its brace: a token about never does.)
pub(crate) fn composite_literal(raw: &[u8]) -> bool {
    let body = raw.strip_prefix(b"&").unwrap_or(raw);
    let brace = match body.last() {
        Some(b'{') => body.len() - 1,
        Some(b'}') if body.ends_with(b"{}") => body.len() - 2,
        Some(b':') => match crate::bytes::find_byte(b'{', body) {
            Some(at) => at,
            None => return false,
        },
        _ => return false,
    };
    let (path, fields) = (&body[..brace], &body[brace + 1..]);
    let ty = path.rsplit(|&b| b == b'.').next().unwrap_or(path);
    let exported = ty.first().is_some_and(u8::is_ascii_uppercase);
    let camel = ty.iter().skip(1).any(u8::is_ascii_uppercase);
    let field = fields.strip_suffix(b":").unwrap_or(fields);
    let field_name = field.first().is_some_and(u8::is_ascii_alphabetic)
        && field.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_');
    path.split(|&b| b == b'.').all(name_of_words)
        && (fields.is_empty() && exported || (fields == b"}" || field_name) && (exported || camel))
}

/// A PowerShell command (`ConvertTo-SecureString`, `Read-Host`, `Get-Credential`): an approved
/// verb, a dash and a capitalised noun, where the value is what the command returns.
pub(crate) fn cmdlet(v: &[u8]) -> bool {
    const VERBS: Words = words_from!(&[
        b"Get",
        b"Set",
        b"New",
        b"Read",
        b"ConvertTo",
        b"ConvertFrom",
        b"Import",
        b"Export",
        b"Invoke",
        b"Add",
        b"Remove",
        b"Select",
        b"Out",
        b"Write",
        b"Test",
        b"Start",
        b"Connect",
        b"Protect",
        b"Unprotect",
    ]);
    let Some(dash) = v.iter().position(|&b| b == b'-') else {
        return false;
    };
    let noun = &v[dash + 1..];
    VERBS.contains(&v[..dash])
        && noun.len() >= 3
        && noun[0].is_ascii_uppercase()
        && noun.iter().any(u8::is_ascii_lowercase)
        && noun.iter().all(u8::is_ascii_alphabetic)
}

/// A variable passed on in an argument list (`secret_key=auth_token,`, `password=db_password)`):
/// a lowercase name that names a secret (`auth)`), with the list going on after it.
pub(crate) fn secret_argument(raw: &[u8]) -> bool {
    let Some((&last, name)) = raw.split_last() else {
        return false;
    };
    matches!(last, b',' | b')')
        && name.first().is_some_and(u8::is_ascii_lowercase)
        && name
            .iter()
            .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && names_secret_field(name)
}

/// Whether a field's name says it holds a secret (`private_key`, `db_password`, `authToken`).
pub(crate) fn names_secret_field(name: &[u8]) -> bool {
    [
        b"password".as_slice(),
        b"auth",
        b"passwd",
        b"passphrase",
        b"secret",
        b"token",
        b"key",
        b"credential",
    ]
    .iter()
    .any(|w| contains_ci(name, w))
}

/// Where a secret store keeps the value, not the value: `helm-chart-signing-key:private_key`,
/// `prod/db:password`, `kv/app/api#token` name an entry and its field. Every part is a name and
/// the last one, a lowercase field name, names a secret.
pub(crate) fn secret_field_reference(v: &[u8]) -> bool {
    let Some(sep) = v.iter().rposition(|&b| matches!(b, b':' | b'/' | b'#')) else {
        return false;
    };
    let (path, field) = (&v[..sep], &v[sep + 1..]);
    let name = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/' | b':');
    !path.is_empty()
        && path[0].is_ascii_alphabetic()
        && path.iter().all(name)
        && field.len() >= 3
        && field.first().is_some_and(u8::is_ascii_lowercase)
        && field.iter().all(|&b| b.is_ascii_lowercase() || b == b'_')
        && names_secret_field(field)
}

/// What a value's shape says is no secret wherever it stands: a field of a secret store, a
/// Markdown link, a labelled digest, escaped text, Basic credentials of filler.
pub(crate) fn names_no_secret(v: &[u8]) -> bool {
    // Letters and digits alone (a token's shape, most values) hold none of the marks the other
    // shapes need (a `$`, a bracket, a separator, an escape, `&`, a dash beyond ASCII).
    if v.iter().all(u8::is_ascii_alphanumeric) {
        return certificate(v)
            || timestamp(v)
            || jose_algorithm(v)
            || password_translated(v)
            || (8..=128).contains(&v.len()) && basic_filler(v);
    }
    interpolation(v)
        || certificate(v)
        || timestamp(v)
        || jose_algorithm(v)
        // Words joined by a typographic dash (`securely—you'll`): a sentence's.
        || dashed_words(v)
        || oauth_registered_name(v)
        || emphasised_word(v)
        || env_name(v)
        || method_call(v)
        || elided(v)
        || sops_ciphertext(v)
        || namespace_path(v)
        // A JSON object's start (`{"signature_methods":`), cut where the value was read.
        || v.starts_with(b"{\"") && v.ends_with(b"\":")
        || secret_field_reference(v)
        || markdown_link(v)
        || labelled_digest(v)
        || unicode_escaped_text(v)
        || entity_escaped_text(v)
        || password_translated(v)
        || host_with_address(v)
        || (8..=128).contains(&v.len()) && v.iter().all(|&b| b64(b)) && basic_filler(v)
}

/// A member path of names (`TestConstants.AuthorityUtid2Tenant`, `Settings.Default.ApiKeyName`):
/// each part a name of words (a capital or a digit starts the next, and words average three
/// letters or more) with at most three digits, where a token's parts are runs of mixed case and
/// digits (`hvs.JGbZZaCkOSgsZ56uhGlTK2zy…`).
pub(crate) fn member_path(v: &[u8]) -> bool {
    // TypeScript's non-null assertion after a member (`tokens.data!.refresh_token!`) is code too;
    // only where a member follows one, so `Hello.World!` keeps its `!`, and from a variable's
    // lowercase name: a capitalised start (`Correct.Horse!.Battery!`) is a passphrase's words.
    let asserted = || v[0].is_ascii_lowercase() && v.windows(2).any(|w| w == b"!.");
    v.contains(&b'.')
        && v.split(|&b| b == b'.')
            .all(|p| name_of_words(p) || p.strip_suffix(b"!").is_some_and(name_of_words) && asserted())
}

/// A name of words (`AuthorityUtid2Tenant`, `storage`, `Device_Token`): a capital, a `_` or a
/// digit starts the next word, words average three letters or more, three digits at most.
pub(crate) fn name_of_words(p: &[u8]) -> bool {
    let digits = p.iter().filter(|b| b.is_ascii_digit()).count();
    let words = 1 + p
        .windows(2)
        .filter(|w| w[1].is_ascii_uppercase() && !w[0].is_ascii_uppercase() || w[1] == b'_')
        .count();
    p.len() >= 2
        && p[0].is_ascii_alphabetic()
        && p.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
        && digits <= 3
        && p.len() - digits >= 3 * words
}

/// A certificate's DER in base64 (`MIIDtTCCAp2gAwIBAgIJ…`, after markup such as
/// `<ds:X509Certificate>`): X.509's version field `AwIBAgI` follows its first bytes. Public.
pub(crate) fn certificate(v: &[u8]) -> bool {
    if v.len() < 32 {
        return false;
    }
    let Some(at) = v.windows(3).position(|w| w == b"MII") else {
        return false;
    };
    let head = &v[at..v.len().min(at + 24)];
    head.windows(7).any(|w| w == b"AwIBAgI")
}

/// An ISO 8601 time (`2020-09-25T16:00:00+00:00`, `2015-08-31 08:54:05Z`).
pub(crate) fn timestamp(v: &[u8]) -> bool {
    v.len() >= 16
        && crate::chars::iso_date(v)
        && matches!(v[10], b'T' | b' ')
        && v[11..]
            .iter()
            .all(|&b| b.is_ascii_digit() || matches!(b, b':' | b'.' | b'+' | b'-' | b'Z'))
}

/// A JOSE algorithm's name (`HS384`, `RS256`, `ES512`, `PS256`, `EdDSA`): what signs, not the key.
pub(crate) fn jose_algorithm(v: &[u8]) -> bool {
    let bits = |t: &[u8]| matches!(t, b"128" | b"192" | b"256");
    v == b"EdDSA"
        || v.len() == 5
            && matches!(&v[..2], b"HS" | b"RS" | b"ES" | b"PS")
            && matches!(&v[2..], b"256" | b"384" | b"512")
        // JWE's content encryption and key wrapping (`A128CBC-HS256`, `A256GCM`, `A128KW`,
        // `ECDH-ES+A256KW`, `RSA-OAEP-256`).
        || v.len() >= 6 && v[0] == b'A' && bits(&v[1..4]) && {
            let rest = &v[4..];
            matches!(rest, b"GCM" | b"KW" | b"GCMKW")
                || rest.strip_prefix(b"CBC-HS").is_some_and(|h| matches!(h, b"256" | b"384" | b"512"))
        }
        || matches!(v, b"RSA-OAEP" | b"RSA-OAEP-256" | b"RSA1_5" | b"ECDH-ES" | b"ES256K")
        || v.strip_prefix(b"ECDH-ES+").is_some_and(jose_algorithm)
}

/// A value OAuth and OpenID Connect register by name (`client_secret_basic`, `private_key_jwt`,
/// a scope list opening with `openid`): the method or the scopes, not a credential.
pub(crate) fn oauth_registered_name(v: &[u8]) -> bool {
    matches!(
        v,
        b"client_secret_basic"
            | b"client_secret_post"
            | b"client_secret_jwt"
            | b"private_key_jwt"
            | b"tls_client_auth"
            | b"self_signed_tls_client_auth"
    ) || v.starts_with(b"openid ")
        && v.iter()
            .all(|&b| b.is_ascii_lowercase() || matches!(b, b' ' | b'_' | b':' | b'.' | b'/'))
}

/// A word in Markdown's emphasis (`**and**`, `__not__`): prose, not a value.
pub(crate) fn emphasised_word(v: &[u8]) -> bool {
    [&b"**"[..], b"__"].iter().any(|m| {
        v.len() > 4
            && v.starts_with(m)
            && v.ends_with(m)
            && std::str::from_utf8(&v[2..v.len() - 2]).is_ok_and(|w| w.is_ascii() && written_word(w))
    })
}

/// Words or numbers joined by an em or an en dash (`securely—you'll`, `2019–2024`): a piece
/// mixing digits, symbols or cases (`Sommer—kjcb11%7kwjS`) is a value's, not a sentence's.
fn dashed_words(v: &[u8]) -> bool {
    // Both dashes start with the byte 0xE2 in UTF-8: a value without it holds neither.
    if find_byte(0xE2, v).is_none() {
        return false;
    }
    let Ok(text) = std::str::from_utf8(v) else {
        return false;
    };
    text.contains(['\u{2014}', '\u{2013}'])
        && text.split(['\u{2014}', '\u{2013}']).all(|piece| {
            let piece = piece.trim_matches(|c: char| c.is_whitespace() || ".,;:!?\"'()".contains(c));
            piece.is_empty()
                || piece
                    .split([' ', '\'', '\u{2019}', '-'])
                    .all(|w| w.is_empty() || written_word(w) || w.bytes().all(|b| b.is_ascii_digit()))
        })
}

/// A word as it is written: letters, capitalised or all in capitals at most (`you`, `Sommer`,
/// `NOTE`), never a generated run's mixed case (`qTdrOJRBRYHq`).
fn written_word(w: &str) -> bool {
    w.chars().all(char::is_alphabetic)
        && (w.chars().skip(1).all(|c| !c.is_uppercase()) || w.chars().all(|c| !c.is_lowercase()))
}

/// An environment variable's name of three words or more, a word perhaps holding a digit
/// (`RUNNER_BACKEND_K8S_NAMESPACE`, `AWS_S3_BUCKET_NAME`): a setting named in prose.
pub(crate) fn env_name(v: &[u8]) -> bool {
    // Capitals, digits and `_` alone, a capital first (the first word is no count): asked before
    // the words are split.
    if !v.first().is_some_and(u8::is_ascii_uppercase)
        || !v
            .iter()
            .all(|&b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
    {
        return false;
    }
    // A count may stand as a word of its own (`LAST_8_DIGITS_OF_KEY_ID`), between capital words.
    let words = v.split(|&b| b == b'_').count();
    let count = |i: usize, w: &[u8]| {
        i > 0 && i + 1 < words && (1..=2).contains(&w.len()) && w.iter().all(u8::is_ascii_digit)
    };
    words >= 3
        && v.split(|&b| b == b'_').enumerate().all(|(i, w)| {
            count(i, w)
                || w.first().is_some_and(u8::is_ascii_uppercase)
                    && w.iter().all(|&b| b.is_ascii_uppercase() || b.is_ascii_digit())
                    && w.iter().filter(|b| b.is_ascii_digit()).count() <= 2
        })
}

/// A method called with named arguments, cut at a comma (`models.CharField(max_length=84`).
pub(crate) fn method_call(v: &[u8]) -> bool {
    let Some(open) = v.iter().position(|&b| b == b'(') else {
        return false;
    };
    let head = &v[..open];
    head.contains(&b'.')
        && head.first().is_some_and(u8::is_ascii_alphabetic)
        && head
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.'))
        && v.get(open + 1)
            .is_some_and(|&b| b.is_ascii_alphabetic() || b == b'_')
        && v[open + 1..].contains(&b'=')
}

/// A short value elided in its middle (`gA..H`, `lp..X`): documentation shortening a token.
pub(crate) fn elided(v: &[u8]) -> bool {
    v.len() <= 16
        && v.windows(2)
            .position(|w| w == b"..")
            .is_some_and(|k| k > 0 && k + 2 < v.len())
}

/// A PHP class's namespaced name (`OAuth2\\Storage\\AccessTokenInterface`, `App\\Models\\User`,
/// its backslashes doubled inside a string or not): names of words joined by `\\`.
pub(crate) fn namespace_path(v: &[u8]) -> bool {
    if !v.contains(&b'\\') {
        return false;
    }
    let mut parts = 0;
    let all = v.split(|&b| b == b'\\').filter(|p| !p.is_empty()).all(|p| {
        parts += 1;
        p[0].is_ascii_uppercase() && name_of_words(p)
    });
    all && parts >= 2 && v.contains(&b'\\')
}

/// A value sops encrypted (`ENC[AES256_GCM,data:…,iv:…,tag:…,type:str]`): ciphertext whose key
/// is kept in a key service, as Maven's `{…}` is.
pub(crate) fn sops_ciphertext(v: &[u8]) -> bool {
    v.starts_with(b"ENC[") && contains_ci(v, b",iv:") && contains_ci(v, b",tag:")
}

/// Whether `at` is inside sops' ciphertext (`#ENC[AES256_GCM,data:…pWD4…,iv:…,tag:…]`, an
/// encrypted comment): a secret word read inside its base64 names nothing.
pub(crate) fn within_sops_ciphertext(bytes: &[u8], at: usize) -> bool {
    let line = crate::bytes::line_before(bytes, at);
    line.windows(4).rposition(|w| w == b"ENC[").is_some_and(|open| {
        !line[open..].contains(&b']') && line[open..].starts_with(b"ENC[AES256_GCM,data:")
    })
}

/// A string interpolated in Swift (`\(PasskeyCredentialDeviceType)`, a call `\(Keychain.read("t"))`
/// whose quotes cut the value) or C# (`$"{cfg.ClientId}__Cache"`): code that builds the value.
pub(crate) fn interpolation(v: &[u8]) -> bool {
    let path = |t: &[u8]| {
        !t.is_empty()
            && t.iter()
                .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.'))
    };
    if let Some(rest) = v.strip_prefix(b"\\(") {
        let name = run_end(rest, 0, |b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.'));
        return path(rest.strip_suffix(b")").unwrap_or(rest)) || name > 0 && rest.get(name) == Some(&b'(');
    }
    v.strip_prefix(b"$\"{")
        .and_then(|rest| rest.iter().position(|&b| b == b'}').map(|close| &rest[..close]))
        .is_some_and(path)
}

/// A style's value, not a secret: a CSS colour in hex (`#1f2937`, `#fff`, `#1f2937cc`) or a CSS
/// function (`rgba(0,0,0,0.5)`, `hsl(…)`, `var(--color-primary-500)`, `calc(…)`), as a design
/// system's tokens hold (`primaryToken: '#1f2937'`).
pub(crate) fn css_value(v: &[u8]) -> bool {
    if let Some(hex) = v.strip_prefix(b"#") {
        return matches!(hex.len(), 3 | 4 | 6 | 8) && hex.iter().all(u8::is_ascii_hexdigit);
    }
    const FUNCTIONS: [&[u8]; 8] = [
        b"rgb(",
        b"rgba(",
        b"hsl(",
        b"hsla(",
        b"var(--",
        b"calc(",
        b"oklch(",
        b"color-mix(",
    ];
    v.last() == Some(&b')')
        && FUNCTIONS
            .iter()
            .any(|f| v.len() > f.len() && v[..f.len()].eq_ignore_ascii_case(f))
}

/// A URL with no credentials before its host whose every long part is a word, a number or a
/// date (`http://schemas.xmlsoap.org/ws/2005/07/securitypolicy/IncludeToken/AlwaysToRecipient`):
/// a webhook's or a signed link's key is a long run of letters and digits mixed.
pub(crate) fn readable_url(v: &[u8]) -> bool {
    // Credentials sit before the host (`https://user:pw@host`); an `@` further on is the path's
    // or the fragment's (`…/#@tenant.onmicrosoft.com/…`).
    let no_userinfo = find_ci(v, 0, b"://").is_some_and(|s| {
        let authority = &v[s + 3..];
        let host_end = authority
            .iter()
            .position(|&b| matches!(b, b'/' | b'?' | b'#'))
            .unwrap_or(authority.len());
        !authority[..host_end].contains(&b'@')
    });
    no_userinfo
        && v.split(|b| !b.is_ascii_alphanumeric())
            .all(|part| part.len() < 12 || !has_digit(part) || part.iter().all(u8::is_ascii_digit))
}

/// A Markdown link (`[PassTLSClientCert](passtlsclientcert.md)`): text and where it points.
pub(crate) fn markdown_link(v: &[u8]) -> bool {
    v.first() == Some(&b'[')
        && v.windows(2).position(|w| w == b"](").is_some_and(|k| k > 1)
        && matches!(v.last(), Some(b')' | b'd' | b'l' | b'/' | b'm'))
        && !v[1..].contains(&b'[')
}

/// A digest named by its algorithm (`jwk-thumbprint:sha-256:NzbLsXh8…`, `sha1=0beec7b5…`,
/// `md5:9e107d9d…`, a certificate pin `sha256/LXEWQrcm…=`): a hash of something, published to
/// compare with.
pub(crate) fn labelled_digest(v: &[u8]) -> bool {
    const ALGORITHMS: [&[u8]; 8] = [
        b"sha-512", b"sha-384", b"sha-256", b"sha512", b"sha384", b"sha256", b"sha1", b"md5",
    ];
    // One search for where an algorithm's name can start, then its names read there.
    let Some(at) = find_ci(v, 0, b"sha").or_else(|| find_ci(v, 0, b"md5")) else {
        return false;
    };
    ALGORITHMS.iter().any(|alg| {
        if eat_ci(v, at, alg).is_none() {
            return false;
        }
        let sep = at + alg.len();
        let digest = v.get(sep + 1..).unwrap_or_default();
        (at == 0 || !v[at - 1].is_ascii_alphanumeric())
            && matches!(v.get(sep), Some(b':' | b'=' | b'-' | b'/'))
            && digest.len() >= 16
            && digest
                .iter()
                .all(|&b| b64url(b) || matches!(b, b'+' | b'/' | b'='))
    })
}

/// Text written as `\uXXXX` escapes of letters outside ASCII (Java properties:
/// `Password=\u30d1\u30b9\u30ef…`, the label in Japanese).
pub(crate) fn unicode_escaped_text(v: &[u8]) -> bool {
    v.len() >= 12
        && v.chunks(6).all(|c| {
            c.len() == 6
                && c.starts_with(b"\\u")
                && c[2..].iter().all(u8::is_ascii_hexdigit)
                && !c[2..4].eq(b"00")
        })
}

/// A host's name built around its IPv4 address (`node-10.0.12.7-east`, `x-someval-127.0.0.1`):
/// the address and lowercase words around it, nothing generated.
pub(crate) fn host_with_address(v: &[u8]) -> bool {
    if v.len() > 64 {
        return false;
    }
    // Four numbers need three separators between them (counted before the parts are listed).
    if v.iter().filter(|b| matches!(b, b'-' | b'_' | b'.')).count() < 3 {
        return false;
    }
    let octet = |t: &[u8]| (1..=3).contains(&t.len()) && t.iter().all(u8::is_ascii_digit);
    let parts: Vec<&[u8]> = v.split(|&b| matches!(b, b'-' | b'_' | b'.')).collect();
    let Some(at) = parts.windows(4).position(|w| w.iter().all(|t| octet(t))) else {
        return false;
    };
    let address = parts[at..at + 4].iter().all(|t| {
        std::str::from_utf8(t)
            .ok()
            .and_then(|d| d.parse::<u16>().ok())
            .is_some_and(|n| n < 256)
    });
    address
        && parts[..at]
            .iter()
            .chain(&parts[at + 4..])
            .all(|t| t.len() <= 12 && t.iter().all(u8::is_ascii_lowercase))
}

/// The word for password or secret in a language (`Lösenord`, `Passwort`, `Geheimnis`): a
/// translation file's label for the field, the slot's own name in another language, not a
/// password typed into it.
pub(crate) fn password_translated(v: &[u8]) -> bool {
    const WORDS: &[&str] = &[
        "password",
        "passwort",
        "kennwort",
        "mot de passe",
        "contraseña",
        "contrasena",
        "senha",
        "wachtwoord",
        "lösenord",
        "losenord",
        "salasana",
        "hasło",
        "haslo",
        "heslo",
        "adgangskode",
        "passord",
        "parola",
        "parolă",
        "şifre",
        "sifre",
        "jelszó",
        "jelszo",
        "geslo",
        "lozinka",
        "kata sandi",
        "mật khẩu",
        "пароль",
        "κωδικός",
        "סיסמה",
        "كلمة المرور",
        "密码",
        "密碼",
        "パスワード",
        "비밀번호",
        // The word for secret, a translation's label for the field as the word for password is.
        "geheimnis",
        "secreto",
        "segredo",
        "segreto",
        "sekret",
        "hemlighet",
        "salaisuus",
        "секрет",
        "秘密",
        "シークレット",
    ];
    if v.len() > 32 || v.iter().any(u8::is_ascii_digit) {
        return false;
    }
    let Ok(text) = std::str::from_utf8(v) else {
        return false;
    };
    let lower = text.trim().to_lowercase();
    WORDS.iter().any(|w| *w == lower)
}

/// A translation file's entry (`"Incorrect password": "Contraseña incorrecta"`, `"Client secret -
/// Tooltip": "Verifizierungsschlüssel für …"`, `"Secret": "Секрет"`): the key, quoted, is an
/// interface's text (a capital, then words; a phrase unless the value is in a script beyond
/// ASCII), and the value is words in a language: a capital or a letter beyond ASCII first, no run
/// of letters and digits a generator makes, no word in random case. A passphrase is typed in
/// lowercase (`"Admin Password": "correct horse battery staple"` stays a password).
pub(crate) fn locale_entry(bytes: &[u8], start: usize, v: &[u8]) -> bool {
    let Some(key) = quoted_key_before(bytes, start) else {
        return false;
    };
    let (Ok(key), Ok(text)) = (std::str::from_utf8(key), std::str::from_utf8(v)) else {
        return false;
    };
    // Each fact is read only once those before it hold: most keys are no interface's text.
    let phrase = key.contains(' ');
    let interface_text = (phrase || key.starts_with(|c: char| c.is_ascii_uppercase()))
        && key.starts_with(|c: char| c.is_ascii_alphabetic())
        && key
            .chars()
            .all(|c| c.is_alphanumeric() || " -.,?!'/():&".contains(c));
    if !interface_text {
        return false;
    }
    let beyond_ascii = text.chars().any(|c| !c.is_ascii() && c.is_alphabetic());
    if !(phrase || beyond_ascii) {
        return false;
    }
    if !text
        .chars()
        .find(|c| c.is_alphabetic())
        .is_some_and(|c| c.is_uppercase() || !c.is_ascii())
    {
        return false;
    }
    // Each word is letters (parts joined by `-`, `/`, `.` or an apostrophe may be a number:
    // `OAuth 2.0-Bereiche`), sentence punctuation around it; a digit or a symbol inside a word
    // (`Lösenord!9xQ`) or a word in random case (`ImOIVBfPhQYm`) is typed, not translated.
    let words = || {
        text.split_whitespace().all(|w| {
        let w = w.trim_start_matches(['¿', '¡', '(', '「', '（', '"', '\'']);
        let w = w.trim_end_matches([
            '.', ',', ';', ':', '!', '?', '…', '。', '、', '，', '！', '？', ')', '」', '）', '"', '\'',
        ]);
        w.split(['-', '/', '.', '\'', '’']).all(|part| {
            let upper = part.chars().skip(1).filter(char::is_ascii_uppercase).count();
            part.chars().all(char::is_alphabetic)
                && (upper <= 2 || !part.chars().any(|c| c.is_ascii_lowercase()))
                || part.chars().all(|c| c.is_ascii_digit())
                // A name with a version's digit (`Web3`, `OAuth2`).
                || part.strip_suffix(|c: char| c.is_ascii_digit()).is_some_and(|name| {
                    name.len() >= 2 && name.chars().all(|c| c.is_ascii_alphabetic())
                })
                // A script without case writes numbers inside its words (`2つのパスワード`).
                || part.chars().filter(|c| c.is_alphabetic() && !c.is_uppercase() && !c.is_lowercase()).nth(1).is_some()
                    && part.chars().all(char::is_alphanumeric)
        })
    })
    };
    // One word under an interface's sentence is its label when it names the credential in a
    // language (`"Default password": "Standardpasswort"`); a digit makes it a password.
    let label = || phrase && !text.bytes().any(|b| b.is_ascii_digit()) && names_credential(text);
    // Under a password's label one word holding a number is the password (`"Server Passwort":
    // "Sommer-Regen-2684"`), unless it names the credential itself (`Passwort-2FA`).
    let numbered_word = !text.contains(char::is_whitespace) && text.bytes().any(|b| b.is_ascii_digit());
    (text.contains(' ') || beyond_ascii || text.contains('-') || label())
        && !(numbered_word && names_credential(key) && !names_credential(text))
        && words()
}

/// Whether a word names a credential in one of the languages a translation file is written in
/// (`Hauptpasswort`, `Geheimnis`, `Segredo`, `Zugriffsschlüssel`).
fn names_credential(text: &str) -> bool {
    const STEMS: &[&str] = &[
        "passw",
        "kennwort",
        "schlüssel",
        "geheim",
        "secret",
        "token",
        "senha",
        "clave",
        "chave",
        "segred",
        "contrase",
        "parol",
        "hasło",
        "heslo",
        "wachtwoord",
        "lösenord",
        "salasana",
        "şifre",
        "jelszó",
        "lozinka",
        "sleutel",
        "nyckel",
        "nøgle",
        "nøkkel",
    ];
    let lower = text.to_lowercase();
    STEMS.iter().any(|s| lower.contains(s))
}

/// The longest interface text, key or value, a translation file's entry is read in (bytes).
const LOCALE_TEXT: usize = 512;

/// Whether `at` stands inside the value of a translation file's entry (`"Show the token again":
/// "Token erneut anzeigen"`): a sentence read from its middle is that entry's text still.
pub(crate) fn in_locale_entry(bytes: &[u8], at: usize) -> bool {
    // An interface's text is short: the string's quotes are looked for within a bound, so a long
    // line of many findings is read once, not once per finding.
    let from = at.saturating_sub(LOCALE_TEXT);
    let Some(open) = rfind_any_of_two(b'"', b'\n', &bytes[from..at])
        .map(|k| from + k)
        .filter(|&k| bytes[k] == b'"')
    else {
        return false;
    };
    let to = bytes.len().min(at + LOCALE_TEXT);
    let Some(close) = find_any_of_two(b'"', b'\n', &bytes[at..to]).map(|k| at + k) else {
        return false;
    };
    bytes[close] == b'"' && locale_entry(bytes, open + 1, &bytes[open + 1..close])
}

/// The quoted key a quoted value at `start` is assigned to (`"Secret": "…"` → `Secret`), on the
/// same line.
fn quoted_key_before(bytes: &[u8], start: usize) -> Option<&[u8]> {
    let mut k = start.checked_sub(1)?;
    if !matches!(bytes[k], b'"' | b'\'') {
        return None;
    }
    while k > 0 && bytes[k - 1] == b' ' {
        k -= 1;
    }
    k = k.checked_sub(1)?;
    if !matches!(bytes[k], b':' | b'=') {
        return None;
    }
    while k > 0 && bytes[k - 1] == b' ' {
        k -= 1;
    }
    let close = k.checked_sub(1)?;
    let quote = bytes[close];
    if !matches!(quote, b'"' | b'\'') {
        return None;
    }
    let from = close.saturating_sub(LOCALE_TEXT);
    let open = from
        + bytes[from..close]
            .iter()
            .rposition(|&b| b == quote || b == b'\n')?;
    (bytes[open] == quote && open + 1 < close).then(|| &bytes[open + 1..close])
}

/// Text with letters outside ASCII written as HTML's numeric character references (an HTML
/// page's or a translation's label: `L&#246;senord`, `&#12497;&#12473;&#12527;…`): each reference
/// names a letter beyond ASCII, and between them stand letters and spaces only.
pub(crate) fn entity_escaped_text(v: &[u8]) -> bool {
    // A reference starts with `&`.
    if find_byte(b'&', v).is_none() {
        return false;
    }
    let mut k = 0;
    let mut references = 0;
    while k < v.len() {
        if v[k..].starts_with(b"&#") {
            let hex = v.get(k + 2).is_some_and(|&b| b | 0x20 == b'x');
            let from = k + 2 + usize::from(hex);
            let digits = v[from..]
                .iter()
                .take_while(|b| {
                    if hex {
                        b.is_ascii_hexdigit()
                    } else {
                        b.is_ascii_digit()
                    }
                })
                .count();
            let code = std::str::from_utf8(&v[from..from + digits])
                .ok()
                .and_then(|d| u32::from_str_radix(d, if hex { 16 } else { 10 }).ok());
            if !(1..=7).contains(&digits) || code.is_none_or(|c| c < 0x80) {
                return false;
            }
            references += 1;
            k = from + digits;
            k += usize::from(v.get(k) == Some(&b';'));
        } else if v[k].is_ascii_alphabetic() || v[k] == b' ' {
            k += 1;
        } else {
            return false;
        }
    }
    references > 0
}

/// Lowercase words joined by `_` or `-` ending with the key's own secret word (`"access_token":
/// "facebook_token"`, `password: db-password`): the slot's name, not a value typed into it.
/// A property's dotted name (`e2.api.client.secret.key`) is the setting's name the same way.
pub(crate) fn named_slot(v: &[u8], key: &[u8]) -> bool {
    let Some(sep) = v.iter().rposition(|&b| matches!(b, b'_' | b'-' | b'.')) else {
        return false;
    };
    let last = &v[sep + 1..];
    let dotted = v.contains(&b'.');
    sep > 0
        && v.iter().all(|&b| {
            b.is_ascii_lowercase() || matches!(b, b'_' | b'-' | b'.') || dotted && b.is_ascii_digit()
        })
        && v[0].is_ascii_lowercase()
        && [
            &b"token"[..],
            b"secret",
            b"password",
            b"passwd",
            b"pass",
            b"key",
            b"apikey",
            b"credential",
            b"credentials",
        ]
        .contains(&last)
        // A password's place may be given a token's name (`"password": "forge-access-token"`, as
        // Git over HTTPS takes one).
        && (contains_ci(key, last)
            || password_key(key)
                && matches!(last, b"token" | b"key" | b"apikey")
                && !v.starts_with(b"real")
                && !v.starts_with(b"actual"))
}

/// A type named for the key's own word, with words and a number before it, in an annotation
/// (`tokens: OAuth2Tokens,`, `apiKey: S3ApiKey`): capitalised, a name's words, its last the key's
/// last word, its numbers a version's or a service's (`OAuth2`, `S3`; a year, as in
/// `Acme2024Token`, dates a value). A password's key is left out: a weak password may be written
/// so.
pub(crate) fn type_named_for_key(v: &[u8], key: &[u8]) -> bool {
    // The key's last word: its lowercase tail and the capital opening it (`Key` of `apiKey`).
    let lower = key.iter().rev().take_while(|b| b.is_ascii_lowercase()).count();
    let capital = lower < key.len() && key[key.len() - lower - 1].is_ascii_uppercase();
    let word = &key[key.len() - lower - usize::from(capital)..];
    word.len() >= 3
        && v.len() > word.len()
        && v[0].is_ascii_uppercase()
        && v[v.len() - word.len()].is_ascii_uppercase()
        && ends_with_ci(v, word)
        && has_digit(v)
        && v.split(|b| !b.is_ascii_digit()).all(|run| run.len() <= 2)
        && compound_name(v)
}

/// A key naming the entry that holds a password (`adminPasswordKey`, `existingSecretPasswordKey`,
/// `password_key`): its value is that entry's name (`postgres-password`), quoted or not.
pub(crate) fn password_entry_key(key: &[u8]) -> bool {
    key.len() > 3 && key[key.len() - 3..].eq_ignore_ascii_case(b"key") && password_key(&key[..key.len() - 3])
}

/// A protocol and its version as a request or status line names them (`HTTP/1.1`, `HTTP/2`,
/// `RTSP/1.0`): capitals, a slash, then a dotted number.
pub(crate) fn protocol_version(v: &[u8]) -> bool {
    let Some(slash) = v.iter().position(|&b| b == b'/') else {
        return false;
    };
    let (name, number) = (&v[..slash], &v[slash + 1..]);
    name.len() >= 2
        && name.iter().all(u8::is_ascii_uppercase)
        && number.first().is_some_and(u8::is_ascii_digit)
        && number.len() <= 5
        && number.iter().all(|&b| b.is_ascii_digit() || b == b'.')
}

/// A version with a pre-release or build part (`v0.0.0-20230304212654-82a0ddb27589`, Go's
/// pseudo-version with its commit id, `1.4.0-rc.1+5114f85`, `v1.2.3/go.mod`) or a range of
/// them (`^3.0.1`, `~1.2.3`, `>=2.0.0`): three dotted numbers first, then names and ids.
pub(crate) fn version_like(v: &[u8]) -> bool {
    let v = &v[v
        .iter()
        .take_while(|b| matches!(b, b'^' | b'~' | b'>' | b'<' | b'='))
        .count()..];
    let body = v.strip_prefix(b"v").unwrap_or(v);
    let mut k = 0;
    for part in 0..3 {
        let d = run_end(body, k, |b| b.is_ascii_digit());
        if d == k {
            return false;
        }
        k = d;
        if part < 2 {
            if body.get(k) != Some(&b'.') {
                return false;
            }
            k += 1;
        }
    }
    match body.get(k) {
        None => true,
        Some(b'-' | b'+' | b'/') => body[k..]
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'/' | b'.' | b'_')),
        _ => false,
    }
}

/// `name(…)`, `name[…]`, `Name<…>`: an identifier applied to something, closed at the end.
pub(crate) fn code_expression(raw: &[u8]) -> bool {
    // A method called on a call's result (`(charIn("+/").orElse(digit).rep`): a chain.
    let called = raw
        .windows(2)
        .any(|w| w[0].is_ascii_alphanumeric() && w[1] == b'(');
    if called
        && raw
            .windows(3)
            .any(|w| w[0] == b')' && w[1] == b'.' && (w[2].is_ascii_alphabetic() || w[2] == b'_'))
    {
        return true;
    }
    let Some(open) = raw.iter().position(|&b| matches!(b, b'(' | b'[' | b'<')) else {
        return false;
    };
    let head = &raw[..open];
    let body = trim_end_of(raw, |b| matches!(b, b';' | b',' | b'.'));
    let ident = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':');
    // A composite literal or a closure opens a brace after its type (`map[string]string{…`,
    // `[]byte{…`, `Vec<u8> {`).
    let composite = || {
        raw[open..]
            .iter()
            .position(|&b| matches!(b, b')' | b']' | b'>'))
            .is_some_and(|c| {
                let rest = &raw[open + c + 1..];
                rest.iter()
                    .position(|&b| b == b'{')
                    .is_some_and(|q| rest[..q].iter().all(|b| ident(b) || b.is_ascii_whitespace()))
            })
    };
    // A call whose arguments go on below (`Json.Deserialize<Params>(` at a line's end): a
    // dotted path, perhaps with its type arguments, then the open parenthesis alone.
    let continued = || {
        raw.last() == Some(&b'(')
            && head.contains(&b'.')
            && head.first().is_some_and(u8::is_ascii_alphabetic)
            && raw[open..raw.len() - 1]
                .iter()
                .all(|&b| ident(&b) || matches!(b, b'<' | b'>' | b',' | b' '))
    };
    !head.is_empty()
        && head.iter().all(ident)
        && (matches!(body.last(), Some(b')' | b']' | b'>')) || composite() || continued())
}

/// Letters of both cases, digits and a symbol together, not words joined by separators: a
/// generated value. Mixed case, so that key chords (`ctrl+shift+1`) and `user@host1` are not one.
pub(crate) fn generated(v: &[u8]) -> bool {
    mixed_case(v)
        && has_digit(v)
        && v.iter().any(|&b| {
            !b.is_ascii_alphanumeric() && !matches!(b, b'_' | b'-' | b'.' | b':' | b'/' | b'+' | b'@')
        })
        && !wordy(v)
}

/// A generated value whose alphabet holds the space (WordPress's salts: 64 printable characters,
/// `'MW1pxMctoyA(>M%0Vl 2(#o0|2$cB+K|…'`): long, a space at most every sixteenth character, and
/// as random as printable characters drawn at random, not words or code with spaces between.
pub(crate) fn spaced_random(v: &[u8]) -> bool {
    let spaces = v.iter().filter(|&&b| b == b' ').count();
    v.len() >= 32
        && spaces * 16 <= v.len()
        && v.iter().all(|&b| b.is_ascii_graphic() || b == b' ')
        && generated(v)
        && entropy(v) >= 4.5
        && v.split(|&b| b == b' ')
            .all(|part| part.len() >= 2 && !wordy(part))
}

/// A quoted value with spaces that reads as a passphrase, not a message: a few words, none of
/// them a sentence word or a secret word (`"Password must be at least 8 characters"`).
pub(crate) fn passphrase_like(v: &[u8]) -> bool {
    const MESSAGE_WORDS: Words = words_of!(
        b"a an the is are be must should at least please enter your invalid \
        required not of to for or characters chars field missing wrong incorrect match cannot \
        can't does do this that you in on if it was expired empty too short long here new old"
    );
    let parts = || v.split(u8::is_ascii_whitespace).filter(|w| !w.is_empty());
    (2..=8).contains(&parts().count())
        && v.len() >= 10
        && parts().all(|w| {
            let w = trim_end_of(w, |b| matches!(b, b'.' | b',' | b'!' | b'?' | b':'));
            !MESSAGE_WORDS.contains_ci(w) && secret_word(w).is_none()
        })
}

/// A key whose first word says it names a message about the secret, not the secret: a
/// translation's id (`invalid_one_time_password`, `sendOneTimePassword`, `wrongPin`).
pub(crate) fn message_key(key: &[u8]) -> bool {
    const FIRST: Words =
        words_of!(b"invalid wrong incorrect send resend forgot forgotten missing show hide error");
    // The first word: up to a separator or a capital after small letters (`send|OneTime…`).
    let first = run_end(key, 1, |b| {
        b.is_ascii_lowercase()
            || b.is_ascii_uppercase() && key[0].is_ascii_uppercase() && key[1].is_ascii_uppercase()
    });
    first < key.len() && FIRST.contains_ci(&key[..first])
}

/// One word quoted in a sentence about a password (`"centipede"`, `'blooberry'`), not a word
/// that describes one (`"wrong"`, `"required"`, `"hidden"`).
pub(crate) fn quoted_word(v: &[u8]) -> bool {
    const DESCRIBING: Words = words_of!(
        b"wrong incorrect invalid correct right weak strong short long expired empty blank missing \
        set unset changed reset same different secure insecure"
    );
    v.iter()
        .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'!' | b'@' | b'#'))
        && !DESCRIBING.contains_ci(v)
}

/// `my`, `our`, `the`… right before the key: the colon after it is a sentence's, not a mapping's.
pub(crate) fn owned_in_prose(line: &[u8]) -> bool {
    let t = trim_ascii(line);
    let last = t.rsplit(|&b| b == b' ' || b == b'\t').next().unwrap_or(t);
    [&b"my"[..], b"our", b"the", b"his", b"her", b"their"]
        .iter()
        .any(|w| last.eq_ignore_ascii_case(w))
}

/// A long run of lowercase letters standing alone: words run together as a passphrase.
pub(crate) fn passphrase_word(bytes: &[u8], value: &Value) -> bool {
    let v = value.text(bytes);
    !value.quoted && v.len() >= 16 && v.iter().all(u8::is_ascii_lowercase) && prose_word(bytes, value)
}

/// A value standing alone in a sentence, not glued to a quote (`name="password"`), not `Name=word`.
/// Lowercase words in a list (`publickey,keyboard-interactive,password`) or one word a comment's
/// or a bracket's close ends (`variable*/`, `header)`): the sentence's words, read on past its
/// punctuation. A generated value mixes cases or digits, or runs letters with no vowel. Listed by
/// commas or semicolons, a word may be capitalised or a short abbreviation (a CSV header's cells:
/// `Access key ID,Secret access key` reads `ID,Secret` after `key`).
pub(crate) fn word_list(v: &[u8]) -> bool {
    let mut body = v;
    for close in [&b"*/"[..], b"-->", b")", b"]", b"}"] {
        body = body.strip_suffix(close).unwrap_or(body);
    }
    let closed = body.len() < v.len();
    let listed = body.iter().any(|&b| matches!(b, b',' | b';'));
    let vowel = |b: &u8| matches!(b.to_ascii_lowercase(), b'a' | b'e' | b'i' | b'o' | b'u' | b'y');
    let word = |part: &[u8]| {
        let tail = &part[1..];
        let lower = part.iter().all(u8::is_ascii_lowercase)
            || listed && part[0].is_ascii_uppercase() && tail.iter().all(u8::is_ascii_lowercase);
        lower && part.iter().any(vowel)
            || listed && part.len() <= 4 && part.iter().all(u8::is_ascii_uppercase)
    };
    let mut parts = 0;
    for part in body.split(|&b| matches!(b, b',' | b';' | b'-' | b'_' | b'.' | b'/')) {
        if part.is_empty() {
            continue;
        }
        if !(2..=16).contains(&part.len()) || !word(part) {
            return false;
        }
        parts += 1;
    }
    parts >= 1 && (closed || listed && parts >= 2)
}

pub(crate) fn prose_word(bytes: &[u8], value: &Value) -> bool {
    let v = value.text(bytes);
    let named = v.iter().position(|&b| b == b'=').is_some_and(|eq| {
        // `Name=word`, or a short attribute with its quote (`id="password`).
        (eq >= 3 || eq >= 1 && matches!(v.get(eq + 1), Some(b'"' | b'\'')))
            && v[..eq].iter().all(u8::is_ascii_alphabetic)
    });
    let end = string_close_end(bytes, value.raw_end);
    !value.quoted
        && !named
        && (bytes
            .get(end)
            .is_none_or(|&b| b.is_ascii_whitespace() || matches!(b, b',' | b';'))
            || cjk_at(bytes, end))
}

/// Past the quote that closes a string the text sits in, and the brackets that close around it
/// (`{"prompt": "my password is …"}`, a statement's `log("…");`, a sentence's `said "…".`): the
/// string's end is the text's. `pos` itself otherwise.
pub(crate) fn string_close_end(bytes: &[u8], pos: usize) -> usize {
    if !matches!(bytes.get(pos), Some(b'"' | b'\'' | b'`')) {
        return pos;
    }
    let closers = |b: u8| matches!(b, b'}' | b']' | b')');
    let end = run_end_max(bytes, pos + 1, 8, closers);
    let closes = |at: usize| bytes.get(at).is_none_or(u8::is_ascii_whitespace);
    // A statement's `;` may close a structure too (PHP's serialized `s:9:"…";}`).
    let statement = |at: usize| closes(run_end_max(bytes, at, 8, closers));
    if closes(end) || bytes[end] == b',' || matches!(bytes[end], b';' | b'.') && statement(end + 1) {
        end
    } else {
        pos
    }
}

/// Whether the text within 256 bytes of `value` holds its text again as a word of its own: a
/// variable is defined and used, a literal is typed once.
pub(crate) fn named_nearby(bytes: &[u8], start: usize, end: usize) -> bool {
    let v = &bytes[start..end];
    let from = start.saturating_sub(256);
    let to = bytes.len().min(end + 256);
    let standalone = |at: usize| {
        (at == 0 || !is_key_byte(bytes[at - 1])) && !bytes.get(at + v.len()).is_some_and(|&b| is_key_byte(b))
    };
    let mut k = from;
    while let Some(off) = bytes[k..to].windows(v.len()).position(|w| w == v) {
        let at = k + off;
        if at != start && standalone(at) {
            return true;
        }
        k = at + 1;
    }
    false
}

/// A value its vendor's prefix calls public, shipped to browsers by design under any key:
/// Supabase's publishable keys (`sb_publishable_…`) and Datadog's client tokens for browser and
/// mobile SDKs (`pub` and 32 lowercase hex). Their secret kinds (`sb_secret_…`, a Datadog API
/// key's bare hex) stay secrets.
pub(crate) fn public_by_prefix(v: &[u8]) -> bool {
    let hex = |b: &u8| b.is_ascii_digit() || (b'a'..=b'f').contains(b);
    v.starts_with(b"sb_publishable_") || v.len() == 35 && v.starts_with(b"pub") && v[3..].iter().all(hex)
}

/// A key path (`user:1234:profile:v2`, `session:9f3a2b:cart`, `orders#2024-05#eu`,
/// `app.cache.ttl`): parts joined by `:`, `/`, `#` or `|` (or by `.` where none of those
/// stands: `rate:203.0.113.7:minute` holds an address), at least half of them words (letters,
/// `_`, `-`), the others short ids (twelve bytes at most, a UUID, a number, an address or a
/// date). What a weak key word (`cache key:`) names there is an entry of a store; a random
/// part of its own is a secret's.
pub(crate) fn key_path(v: &[u8]) -> bool {
    let outer = |b: &u8| matches!(b, b':' | b'/' | b'#' | b'|');
    let dotted = !v.iter().any(outer);
    // One part alone is no path.
    if dotted && !v.contains(&b'.') {
        return false;
    }
    let (mut parts, mut words) = (0usize, 0usize);
    for part in v.split(|b| outer(b) || dotted && *b == b'.') {
        if part.is_empty() {
            continue;
        }
        parts += 1;
        let letters = part.iter().filter(|b| b.is_ascii_alphabetic()).count();
        let word = letters >= 3
            && part
                .iter()
                .all(|&b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'-'))
            && !random_letters(part);
        if word {
            words += 1;
        } else if part.len() > 12 && !uuid(part) && !numeric_like(part) {
            return false;
        }
    }
    parts >= 2 && 2 * words >= parts
}

/// A hex digest's length in one case (an MD5, a SHA-1, a SHA-224, a SHA-256, a SHA-384, a
/// SHA-512): after a bare `key` word (`cache key:`, `md5 key`), an entry's hash or an object's
/// id; a key word with a qualifier (`master key:`, `secret key:`) holds a key.
pub(crate) fn hex_digest(v: &[u8]) -> bool {
    matches!(v.len(), 32 | 40 | 56 | 64 | 96 | 128)
        && v.iter().all(u8::is_ascii_hexdigit)
        && !(v.iter().any(u8::is_ascii_uppercase) && v.iter().any(u8::is_ascii_lowercase))
}

/// `key` alone, or after a word naming what a store or an index keys its entries by
/// (`cache_key`, `partitionKey`, `etag-key`, `cache key`); `before` is the text before the key
/// (a qualifier written with a space stands there). `Subscription-Key`, `license_key`,
/// `lemlist key` and `api key` name credentials.
pub(crate) fn bare_key_word(before: &[u8], key: &[u8]) -> bool {
    const INDEX: Words = words_of!(
        b"cache redis memcache memcached partition sort range row primary foreign hash md5 sha1 \
        sha256 etag idempotency dedup lookup object map dict index the a an this that same its each"
    );
    if key.len() < 3 || !key[key.len() - 3..].eq_ignore_ascii_case(b"key") {
        return false;
    }
    // A URL's query parameter (`?key=`, `&key=`) is where an API takes its key, not an index.
    if key.len() == 3 && matches!(before.last(), Some(b'?' | b'&')) {
        return false;
    }
    let index = |w: &[u8]| INDEX.contains_ci(w);
    let head = trim_end_of(&key[..key.len() - 3], |b| matches!(b, b'_' | b'-' | b'.'));
    if !head.is_empty() {
        return index(head);
    }
    let spaced = trim_end_of(before, |b| b == b' ' || b == b'\t');
    let word = &spaced[spaced.len()
        - spaced
            .iter()
            .rev()
            .take_while(|b| b.is_ascii_alphanumeric())
            .count()..];
    // A declaration's keyword or type (`string key = …`, `Dim key As String = …`, `let key = …`)
    // stands where the line's start does.
    let declared = |w: &[u8]| {
        [
            &b"string"[..],
            b"var",
            b"let",
            b"const",
            b"val",
            b"dim",
            b"auto",
            b"final",
        ]
        .iter()
        .any(|d| w.eq_ignore_ascii_case(d))
    };
    spaced.len() == before.len() || word.is_empty() || index(word) || declared(word)
}

/// The text of the line before `key` (at most 256 bytes: it is read once per key) when `key`
/// is a part of `bytes` (a key the scan read), else nothing.
pub(crate) fn text_before<'b>(bytes: &'b [u8], key: &[u8]) -> &'b [u8] {
    if bytes.as_ptr_range().contains(&key.as_ptr()) {
        let at = key.as_ptr() as usize - bytes.as_ptr() as usize;
        line_before(bytes, at)
    } else {
        &[]
    }
}

/// A cookie (`Set-Cookie: lang=en-US`, `Cookie: consent=accepted`) whose value is plain: a
/// setting, a locale, a choice; in a quoted header (`"theme=dark; path=/"`) every pair is. A
/// cookie named for a session or a credential (`session`, `connect.sid`, `PHPSESSID`,
/// `auth_token`, `remember_me`) holds one whatever it looks like; any other holds a secret only
/// when its value looks generated (`uid=q8f3kz0v9w2m…`).
pub(crate) fn plain_cookie(v: &[u8], key: &[u8]) -> bool {
    let plain_pair = |pair: &[u8]| {
        let pair = trim_ascii(pair);
        let Some(eq) = pair.iter().position(|&b| b == b'=') else {
            // An attribute alone (`HttpOnly`, `Secure`).
            return pair.iter().all(u8::is_ascii_alphabetic);
        };
        let value = &pair[eq + 1..];
        let value = value.strip_prefix(b"\"").unwrap_or(value);
        let value = value.strip_suffix(b"\"").unwrap_or(value);
        plain_cookie_pair(&pair[..eq], value)
    };
    contains_ci(key, b"cookie") && v.contains(&b'=') && v.split(|&b| b == b';').all(plain_pair)
}

/// A cookie's `name` and `value` that hold no secret (see [`plain_cookie`]).
pub(crate) fn plain_cookie_pair(name: &[u8], value: &[u8]) -> bool {
    const SESSION: Words = words_from!(&[
        b"sess",
        b"auth",
        b"token",
        b"jwt",
        b"login",
        b"remember",
        b"secret",
        b"cred",
        b"csrf",
        b"xsrf",
        b"passw",
        b"pwd",
        b"passphrase",
        b"private",
        b"apikey",
    ]);
    // `sid` ends a part (`PHPSESSID`, `connect.sid`); `key` is one (`private_key`, `key`), not a
    // word's end (`hotkey`).
    let session = SESSION.iter().any(|w| contains_ci(name, w))
        || name.split(|&b| matches!(b, b'_' | b'-' | b'.')).any(|part| {
            part.len() >= 3 && part[part.len() - 3..].eq_ignore_ascii_case(b"sid")
                || part.eq_ignore_ascii_case(b"key")
        });
    // A session's cookie holding a stand-in word (`appSession=foo`, `sid=test`) holds no
    // session; one with digits (`abc123`) is typed as a value.
    let stand_in = is_placeholder(value) && !has_digit(value);
    !name.is_empty()
        && name
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        && (!session || stand_in)
        && !looks_random(value, 8)
        && (value.len() < 16 || entropy(value) < 3.0)
}

/// Mostly capitalised words run together (`ThisIsNotAHash…`): at least two thirds of `v` are
/// capitals followed by two or more lowercase letters, which random base64 almost never is.
pub(crate) fn camel_words(v: &[u8]) -> bool {
    let mut words = 0;
    let mut k = 0;
    while k < v.len() {
        let e = run_end(v, k + 1, |b| b.is_ascii_lowercase());
        if v[k].is_ascii_uppercase() && e - k >= 3 {
            words += e - k;
        }
        k = e;
    }
    3 * words >= 2 * v.len()
}

/// A Chinese, Japanese or Korean character or full-width punctuation (U+3000–U+9FFF,
/// U+AC00–U+D7FF, U+FF00–U+FFEF) at byte `k`: prose glued to a value, not part of it
/// (`密码：Xy7!kq9Lm，谢谢`, `비밀번호는 Xy7!kq9Lm입니다`).
pub(crate) fn cjk_at(bytes: &[u8], k: usize) -> bool {
    match bytes.get(k) {
        Some(0xE3..=0xE9 | 0xEB..=0xED) => true,
        Some(0xEA) => bytes.get(k + 1).is_some_and(|&b| b >= 0xB0),
        Some(0xEF) => matches!(bytes.get(k + 1), Some(0xBC..=0xBF)),
        _ => false,
    }
}

/// Numbers, dates, times, versions and IP addresses.
pub(crate) fn numeric_like(v: &[u8]) -> bool {
    let body = v.strip_prefix(b"v").unwrap_or(v);
    !body.is_empty()
        && body[0].is_ascii_digit()
        && body
            .iter()
            .all(|&b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b':' | b'/' | b'_' | b'+'))
        || (v.len() <= 5
            && v.iter()
                .all(|&b| b.is_ascii_digit() || matches!(b, b'k' | b'K' | b'm' | b'M')))
}

pub(crate) fn is_path_or_url(v: &[u8]) -> bool {
    v.starts_with(b"/")
        || v.starts_with(b"./")
        || v.starts_with(b"../")
        || v.starts_with(b"~/")
        || (v.len() > 2 && v[1] == b':' && v[2] == b'\\')
        || contains_ci(v, b"://") && !v.contains(&b'@')
}

/// A placeholder, not a value: `<…>`, `$VAR`, `${…}`, `{{…}}`, `%VAR%`, `xxxx`, `****`, `…`,
/// `changeme`, `example`, our own `[REDACTED:…]`, a repeated character, a common stand-in word.
pub(crate) fn is_placeholder(v: &[u8]) -> bool {
    // A cookie's or a field's name before its slot (`appSession=${signedCookieValue}`,
    // `sid=<id>`): the slot decides.
    if let Some(eq) = v.iter().position(|&b| b == b'=')
        && eq >= 2
        && eq + 1 < v.len()
        && v[..eq].iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
        && {
            // The slot may be quoted (`deploy_token="$DEPLOY_TOKEN"`).
            let slot = trim_end_of(&v[eq + 1..], |b| matches!(b, b'"' | b'\''));
            let slot = slot
                .strip_prefix(b"\"")
                .or_else(|| slot.strip_prefix(b"'"))
                .unwrap_or(slot);
            slot.first()
                .is_some_and(|b| matches!(b, b'$' | b'{' | b'<' | b'%'))
                && is_placeholder(slot)
        }
    {
        return true;
    }
    let Some(&first) = v.first() else { return true };
    // A slot fills the whole value: `{name}`, `[REDACTED:…]`, `$NAME`, `$USER:$PASS`; `{Xk9#mQ2z`
    // and `$uP3r-S3cret!9` are passwords that start with a symbol.
    let closed = |close: u8| v.len() > 1 && v.last() == Some(&close);
    // `$NAME`, `$USER:$PASS`, `$API_URL/$COMMIT`: references joined by separators; `\$NAME` is
    // one escaped for the shell that expands it later (a command quoted inside a script).
    let var = v
        .strip_prefix(b"\\")
        .filter(|r| r.first() == Some(&b'$'))
        .unwrap_or(v);
    let variable = var[0] == b'$'
        && var.len() > 1
        && var[1..]
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b':' | b'$' | b'/' | b'@' | b'.'));
    if first == b'<'
        || variable
        || first == b'{' && closed(b'}')
        || first == b'[' && (closed(b']') || v.starts_with(b"[REDACTED:"))
        // `[PASSWORD` cut before its bracket: a capitalised slot name.
        || first == b'[' && v.len() > 3 && v[1..].iter().all(|&b| b.is_ascii_uppercase() || matches!(b, b'_' | b']'))
        || (first == b'%' && v.len() > 2 && v.last() == Some(&b'%'))
        // An alias, a decorator, a comment: `*default`, `@Value`, `#todo` (a YAML `!tag` is told
        // by what follows it, see [`yaml_tag`]).
        || (matches!(first, b'*' | b'#' | b'@') && (v.len() == 1 || identifier_like(&v[1..])))
        // A SQL system variable read in a list (`SET @OLD_FOREIGN_KEY_CHECKS=@@FOREIGN_KEY_CHECKS,`).
        || v.len() > 2 && v.starts_with(b"@@") && identifier_like(trim_end_of(&v[2..], |b| matches!(b, b',' | b';' | b')')))
        || v == b"!"
    {
        return true;
    }
    thread_local! {
        static SHAPES: std::cell::RefCell<Recent> = const { std::cell::RefCell::new(Recent::new()) };
    }
    Recent::answer(&SHAPES, v, placeholder_shape)
}

/// The counts a value of ASCII letters and digits holds, read in one pass for the checks that
/// look for typed counts (see [`Runs::typed_count`]). Each figure is at least what any of those
/// checks counts (case aside, `9` and `0` next to each other, a step in a new direction starting
/// a new count), so a check needing more is answered no.
pub(crate) struct Runs {
    /// The most steps by one in a row, all up or all down, between neighbours (under five).
    side: u32,
    /// The most characters in a row that equal the one two before and differ from the one before.
    in_turn: u32,
    /// Whether each letter's case is the other of the letter before it.
    alternating: bool,
}

impl Runs {
    /// The runs of `v` if it is a token's length, 16 to 64 bytes, of letters and digits alone: a
    /// shorter one costs the checks less than the reading, and a longer one is most often a
    /// filler whose first check answers.
    #[inline]
    pub(crate) fn of_token(v: &[u8]) -> Option<Runs> {
        if (16..=64).contains(&v.len()) {
            Runs::of(v)
        } else {
            None
        }
    }

    /// Whether `v`, whose runs these are, holds a count typed by hand: the checks of
    /// [`placeholder_shape`] for one, each asked only if `v` holds the count it needs. Without
    /// five steps in a row or six characters alike, `fabricated` is left its markers (`EXAMPLE`
    /// is asked by the caller, a closing `example` needs no count), and `counted_through`,
    /// `mostly_one_count` and `long_count` need those five steps too.
    pub(crate) fn typed_count(&self, v: &[u8]) -> bool {
        ends_with_ci(v, b"example") && fabricated(v)
            || self.alternating && alternating_count(v)
            || self.side >= 2 && crate::chars::counted_by_kind(v)
            || self.in_turn >= 6 && crate::chars::two_in_turn(v)
    }

    /// The runs of `v`, or `None` once a byte is no ASCII letter or digit, or once five steps
    /// by one in a row (side by side or every other character) or five neighbours alike show
    /// a count or a filler the checks read for themselves.
    #[inline(never)]
    fn of(v: &[u8]) -> Option<Runs> {
        // Whether `b` is one up from `a` (or `0` after `9`), one down (or `9` after `0`), told by
        // their difference: both lowercase letters or digits.
        let step = |a: u8, b: u8| {
            let d = b.wrapping_sub(a);
            (d == 1 || d == 0xF7 && a == b'9', d == 0xFF || d == 9 && a == b'0')
        };
        // Steps up and down in a row, side by side and every other character (this character's
        // parity first). The characters before start as a byte no letter or digit steps from.
        let (mut up, mut down, mut up_2, mut down_2) = (0u32, 0u32, [0u32; 2], [0u32; 2]);
        let (mut same, mut in_turn, mut side, mut turn) = (0u32, 0u32, 0u32, 0u32);
        let (mut one, mut two, mut low_1, mut low_2) = (0u8, 0u8, 0u8, 0u8);
        // The case of the last letter: 0 none yet, 1 lower, 2 upper.
        let (mut case, mut alternating) = (0u8, true);
        for &b in v {
            if !b.is_ascii_alphanumeric() {
                return None;
            }
            let low = b.to_ascii_lowercase();
            if b > b'9' {
                let now = if b < b'a' { 2 } else { 1 };
                alternating &= case != now;
                case = now;
            }
            let (rises, falls) = step(low_1, low);
            up = if rises { up + 1 } else { 0 };
            down = if falls { down + 1 } else { 0 };
            same = if one == b { same + 1 } else { 0 };
            let (rises, falls) = step(low_2, low);
            up_2.swap(0, 1);
            down_2.swap(0, 1);
            up_2[0] = if rises { up_2[0] + 1 } else { 0 };
            down_2[0] = if falls { down_2[0] + 1 } else { 0 };
            if up.max(down).max(same).max(up_2[0]).max(down_2[0]) >= 5 {
                return None;
            }
            side = side.max(up.max(down));
            in_turn = if two == b && one != b { in_turn + 1 } else { 0 };
            turn = turn.max(in_turn);
            (two, one, low_2, low_1) = (one, b, low_1, low);
        }
        Some(Runs {
            side,
            in_turn: turn,
            alternating,
        })
    }
}

/// What of [`is_placeholder`] the value's characters alone decide beyond its first byte.
fn placeholder_shape(v: &[u8]) -> bool {
    const EXACT: Words = words_of!(
        b"secret password passwd pass pwd token key apikey api_key none null nil \
        undefined true false yes no on off empty hidden required optional string str text default test \
        testing foo bar baz foobar abc abc123 123456 12345678 value username user secretkey mysecret \
        mypassword mytoken todo tbd na n/a unset not-set not_set notset masked sensitive private public auto \
        read write readonly read-only readwrite read-write"
    );
    // Templating and elision: the value is a slot, not a value, wherever these stand.
    const TEMPLATED: Words = words_from!(&[b"...", b"${", b"{{", b"$(", b"#{", b"\xe2\x80\xa6"]);
    if EXACT.contains_ci(v)
        || TEMPLATED.found_in(v) && templated(v)
        || fake_words(v)
        || format_slot(v) && templated(v)
        || printf_slot(v)
        || masked(v)
        || placeholder_words(v)
        // Counts typed by hand; a token's letters and digits are read once for the checks
        // whose count they reach (see [`Runs`]).
        || match Runs::of_token(v) {
            Some(runs) => runs.typed_count(v),
            None => {
                fabricated(v)
                    || counted_through(v)
                    || mostly_one_count(v)
                    || alternating_count(v)
                    || crate::chars::counted_by_kind(v)
                    || crate::chars::long_count(v)
                    || crate::chars::two_in_turn(v)
            }
        }
        || crate::chars::repeated_group(v)
        // The marker in a shorter value (`EXAMPLEEXPOTOKEN123`): typed, as in a longer one.
        || v.len() >= 12 && crate::chars::spells_a_marker(v)
        || negated_phrase(v)
        || encoded_filler(v)
        || crate::rules::prefix_then_filler(v)
        || crate::rules::documented_example(v)
        || jwt_sketch(v)
    {
        return true;
    }
    let n = crate::chars::distinct_folded(v, 3);
    n <= 2 || (v.len() >= 6 && n <= 3)
}

/// Whether every template opening in `v` (`${`, `#{`, `{{`, `$(`) is a well-formed reference
/// (`${DB_PASS}`, `{{ .Values.password }}`, `$(cat /run/secrets/db)`), or `v` elides (`...`):
/// a password may hold these characters too (`m{{h}o)p${e]nob(ody…`), and then it is one.
pub(crate) fn templated(v: &[u8]) -> bool {
    if contains_ci(v, b"...") || contains_ci(v, "\u{2026}".as_bytes()) {
        return true;
    }
    // What stands outside the references: a password's own characters around them
    // (`ab${c}d9Xz`) make the whole a literal, not a reference.
    let mut rest = [0u8; 64];
    let mut n = 0;
    let mut keep = |b: u8| {
        if b.is_ascii_alphanumeric() && n < rest.len() {
            rest[n] = b;
            n += 1;
        }
    };
    let mut opened = false;
    let mut k = 0;
    while k + 1 < v.len() {
        let three = v.get(k..k + 3) == Some(b"${{".as_slice());
        let close: &[u8] = match &v[k..k + 2] {
            b"${" if three => {
                k += 1;
                b"}}"
            }
            b"${" => b"}",
            // Ruby's interpolation, and release pipelines' token slots (`#{DbPassword}#`).
            b"#{" => b"}",
            b"{{" => b"}}",
            b"$(" => b")",
            _ => {
                keep(v[k]);
                k += 1;
                continue;
            }
        };
        opened = true;
        let from = k + 2;
        // A reference cut at the value's end (code ends a value before a closing bracket).
        let len = match v[from..].windows(close.len()).position(|w| w == close) {
            Some(len) => len,
            None if close == b"}" || close == b")" || close == b"}}" => v.len() - from,
            None => return false,
        };
        let body = &v[from..from + len];
        // A brace's body may call a function (`${JSON.stringify(options)}`): an expression.
        let name_like = |b: &u8| {
            b.is_ascii_alphanumeric() || b" _.:-|\"'/[],=?$".contains(b) || close != b")" && b"()".contains(b)
        };
        if body.trim_ascii().is_empty() || !body.iter().all(name_like) {
            return false;
        }
        k = (from + len + close.len()).min(v.len());
    }
    if k < v.len() {
        keep(v[k]);
    }
    let rest = &rest[..n];
    let letters = rest.iter().any(u8::is_ascii_alphabetic);
    !(opened && rest.len() >= 4 && letters && (has_digit(rest) || mixed_case(rest)))
}

/// A value that says it is made up or unusable (`somefakekey`, `a-fake-tooshort-key`, `dummy_secret`,
/// `invalid`, `expired-token`).
pub(crate) fn fake_words(v: &[u8]) -> bool {
    // A redaction's word glued to what is left of a value (`gcthyRedactedToken`) too.
    const FAKE: Words = words_from!(&[
        b"fake",
        b"dummy",
        b"notreal",
        b"not_real",
        b"not-real",
        b"not_a_real",
        b"not-a-real",
        b"notareal",
        b"[REDACTED:",
        b"redacted",
        b"censored",
        b"obfuscated",
    ]);
    const UNUSABLE: Words = words_of!(b"invalid expired revoked");
    FAKE.found_in(v)
        // Words saying it is unusable (`invalid`, `expired-token`): a token is no such word.
        || v.iter().all(|&b| b.is_ascii_alphabetic() || matches!(b, b'-' | b'_')) && UNUSABLE.found_in(v)
        // Nothing but punctuation is not a value (`,.:-¨@*¿?!`).
        // (An ASCII letter or digit, asked first, is one.)
        || !v.iter().any(u8::is_ascii_alphanumeric)
            && std::str::from_utf8(v).is_ok_and(|t| !t.is_empty() && !t.chars().any(char::is_alphanumeric))
}

/// An `@` opening a word inside brackets with no quote (`pa$$[@ee4@]`): no index, call or
/// verbatim string (`dict[@"k"]`) holds one, a password's symbols do.
fn bracketed_at(raw: &[u8]) -> bool {
    raw.split(|&b| b == b'[').skip(1).any(|inside| {
        let inside = &inside[..inside.iter().position(|&b| b == b']').unwrap_or(inside.len())];
        !inside.iter().any(|b| matches!(b, b'"' | b'\'' | b'('))
            && inside
                .windows(2)
                .any(|w| w[0] == b'@' && w[1].is_ascii_alphanumeric())
    })
}

/// A JWT's header with the rest typed in (`eyJhbGciOi….badz.sig`, `eyJhbGciOi….e30.sig`): a
/// token's signature is tens of characters, and a payload of a few is base64 of JSON (`e30`).
pub(crate) fn jwt_sketch(v: &[u8]) -> bool {
    if !v.starts_with(b"eyJ") {
        return false;
    }
    let mut parts = v.split(|&b| b == b'.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    jwt_header(header)
        && (signature.len() < 8
            || payload.len() < 8 && !b64url_json(payload, b"{")
            || typed_signature(signature))
}

/// A JWT's signature typed in: one spelling the documentation marker (`…v1F3EXAMPLE`), one
/// lowercase word (`….signature`, `….sigvalue`) or one holding the alphabet typed in order
/// (`…Ab1Cd2Ef3Gh4Ij5Kl6…`). Base64 of a MAC or a signature is tens of characters of both cases,
/// in no order.
pub(crate) fn typed_signature(signature: &[u8]) -> bool {
    crate::chars::spells_a_marker(signature)
        || signature.len() <= 16 && signature.iter().all(u8::is_ascii_lowercase)
        || letters_count_on(signature)
}

/// Twelve letters or more in a row of a value's letters, digits between them passed over, each
/// the one after the letter before it, case aside (`Ab1Cd2Ef3…`): the alphabet typed with digits
/// in turn. A random value's letters do so about once in 10^15.
fn letters_count_on(v: &[u8]) -> bool {
    let mut run = 0;
    let mut prev = 0u8;
    for b in v
        .iter()
        .filter(|b| b.is_ascii_alphabetic())
        .map(u8::to_ascii_lowercase)
    {
        run = if run > 0 && (b == prev + 1 || prev == b'z' && b == b'a') {
            run + 1
        } else {
            1
        };
        if run >= 12 {
            return true;
        }
        prev = b;
    }
    false
}

/// Whether a JWT's first segment decodes to a JSON object naming its algorithm (`{"alg":…}`):
/// `eyJhbasdGciOi…` with letters typed into it decodes to neither. A header longer than 2 KiB
/// is not decoded, and passes.
pub(crate) fn jwt_header(seg: &[u8]) -> bool {
    b64url_json(seg, b"\"alg\"")
}

/// Whether a base64url segment decodes to a JSON object holding `needle`. A segment longer than
/// 2 KiB is not decoded, and passes.
pub(crate) fn b64url_json(seg: &[u8], needle: &[u8]) -> bool {
    if seg.len() > 2048 {
        return true;
    }
    let mut out = [0u8; 1536];
    let Some(json) = base64_decode(seg, &mut out) else {
        return false;
    };
    let json = json.trim_ascii();
    json.starts_with(b"{") && json.ends_with(b"}") && json.windows(needle.len()).any(|w| w == needle)
}

/// A phrase of three or more words opening with a negation (`notHighEnoughEntropy`,
/// `not_a_real_key`, `NoSecretsHere`): the value says what it is not, as a stand-in does.
pub(crate) fn negated_phrase(v: &[u8]) -> bool {
    if !(8..=64).contains(&v.len())
        || !v
            .iter()
            .all(|&b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'-' | b'.'))
    {
        return false;
    }
    let mut words = 0;
    let mut first_end = v.len();
    for k in 1..v.len() {
        let starts = v[k].is_ascii_uppercase() && v[k - 1].is_ascii_lowercase()
            || v[k].is_ascii_alphabetic() && !v[k - 1].is_ascii_alphabetic();
        if starts {
            words += 1;
            first_end = first_end.min(k);
        }
    }
    let first = trim_end_of(&v[..first_end], |b| matches!(b, b'_' | b'-' | b'.'));
    words >= 2 && (first.eq_ignore_ascii_case(b"not") || first.eq_ignore_ascii_case(b"no"))
}

/// One count of six or more, up or down, is most of a short value (`123456789a1234`,
/// `23456789a1`): typed to fill a slot around a counted run, not drawn at random.
pub(crate) fn mostly_one_count(v: &[u8]) -> bool {
    if !(8..=32).contains(&v.len()) || !v.iter().all(u8::is_ascii_alphanumeric) {
        return false;
    }
    // The longest count asked for; past the point where the count going on cannot reach it (it
    // grows by one a character at most), the rest is not read.
    let wanted = 6.max((v.len() * 3).div_ceil(5));
    let (mut best, mut run, mut dir) = (1usize, 1usize, 0i8);
    for (k, w) in v.windows(2).enumerate() {
        if best < wanted && run + (v.len() - 1 - k) < wanted {
            return false;
        }
        let step = if w[1] == w[0].wrapping_add(1) || w[0] == b'9' && w[1] == b'0' {
            1
        } else if w[1] == w[0].wrapping_sub(1) || w[0] == b'0' && w[1] == b'9' {
            -1
        } else {
            0
        };
        if step != 0 && (run == 1 || step == dir) {
            run += 1;
            dir = step;
        } else {
            run = 1;
            dir = 0;
        }
        best = best.max(run);
    }
    best >= 6 && best * 5 >= v.len() * 3
}

/// Counts end to end typed in alternating case (`A1bC2dE3fH4iJ5kL6…/+`, `Q1rS2tU3vW4xY5zA6bC7…`):
/// the letters, case aside, run in counts of three or more, one of them six or more, each letter's
/// case the other of the one before it, and the digits between them count too. Alternating case
/// by hand makes a typed count look mixed; a generated value is such a chain about once in a
/// billion billion.
pub(crate) fn alternating_count(v: &[u8]) -> bool {
    if !(16..=512).contains(&v.len())
        || !v
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'+' | b'/' | b'='))
    {
        return false;
    }
    let letters = || v.iter().filter(|b| b.is_ascii_alphabetic());
    let alternating = letters()
        .zip(letters().skip(1))
        .all(|(a, b)| a.is_ascii_uppercase() != b.is_ascii_uppercase());
    let digits = v.iter().any(u8::is_ascii_digit);
    alternating
        && count_chain(&mut letters().map(u8::to_ascii_lowercase)).is_some_and(|best| best >= 6)
        && (!digits || count_chain(&mut v.iter().copied().filter(u8::is_ascii_digit)).is_some())
}

/// A `{name}` format slot inside the value (`user:{user_id}`).
pub(crate) fn format_slot(v: &[u8]) -> bool {
    let mut at = 0;
    while let Some(k) = v[at..].iter().position(|&b| b == b'{') {
        let open = at + k;
        let name = run_end(v, open + 1, |b| {
            b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.')
        });
        // `{name}`, and Python's positional `{}`, `{0}` (`"prefix_{}".format(…)`).
        let positional = v[open + 1..name].iter().all(u8::is_ascii_digit) && name - open <= 3;
        if v.get(name) == Some(&b'}') && (name > open + 1 && v[open + 1].is_ascii_alphabetic() || positional)
        {
            return true;
        }
        at = open + 1;
    }
    false
}

/// A printf `%s` slot inside the value (`user:%s`, `%s_pass`), or Python's named one
/// (`%(password)s`): one not glued to a letter or digit after it, which a random password's
/// `…%sLm2…` is.
pub(crate) fn printf_slot(v: &[u8]) -> bool {
    let free = |k: usize| v.get(k).is_none_or(|b| !b.is_ascii_alphanumeric());
    v.windows(2).enumerate().any(|(k, w)| {
        w == b"%s" && free(k + 2)
            || w == b"%(" && {
                let name = run_end(v, k + 2, |b| b.is_ascii_alphanumeric() || b == b'_');
                name > k + 2
                    && v.get(name) == Some(&b')')
                    && v.get(name + 1)
                        .is_some_and(|b| matches!(b, b's' | b'd' | b'r' | b'i' | b'f'))
                    && free(name + 2)
            }
    })
}

/// Masked: runs of four or more `x` or `*` make up at least half of the value
/// (`sk_live_xxxxxxxxxxxx`, `****`), not a password that happens to hold `xxxx`.
pub(crate) fn masked(v: &[u8]) -> bool {
    // A token's tail typed over (`eyJhbGciOiJSUzI1NiIsImtpZCI6Ixxxxxxxxxxxxxx`): eight or more
    // `x` end it, no generator's output.
    let tail = v.len() - trim_end_of(v, |b| matches!(b, b'x' | b'X' | b'*')).len();
    if tail >= 8 && tail < v.len() {
        return true;
    }
    if crate::chars::mask_segment_last(v) {
        return true;
    }
    let mut masked = 0;
    let mut k = 0;
    while k < v.len() {
        let run = run_end(v, k, |b| matches!(b, b'x' | b'X' | b'*'));
        if run - k >= 4 {
            masked += run - k;
        }
        k = run.max(k + 1);
    }
    masked > 0 && masked * 2 >= v.len() || digits_between_masks(v)
}

/// Digits between runs of three `x` (`xxx123xxx456`, `XXX-1234`'s kin): a number typed over,
/// when the `x` runs make at least half of the value and nothing else is in it.
fn digits_between_masks(v: &[u8]) -> bool {
    let x = v.iter().filter(|&&b| b | 0x20 == b'x').count();
    let mut runs = 0;
    let mut k = 0;
    while k < v.len() {
        let run = run_end(v, k, |b| b | 0x20 == b'x');
        runs += usize::from(run - k >= 3);
        k = run.max(k + 1);
    }
    runs >= 2 && x * 2 >= v.len() && v.iter().all(|&b| b | 0x20 == b'x' || b.is_ascii_digit())
}

/// The whole value is made of stand-in words (`YOUR_API_KEY`, `change-me`, `your-token-here`,
/// `example`, `<placeholder>`): at least one marker word and nothing else but filler words. A value
/// with a digit or symbol (`Example123!`) is a real-looking password, not a placeholder.
/// Words that fill a stand-in's name around its marker (`your-api-key-here`, `my_secret_token`).
const STAND_IN_FILLERS: Words = words_of!(
    b"me it my the a an with real actual own here goes this secret password \
    passwd pass pwd token key api access auth client app db database user name id string test demo \
    com org net for of to new default private public sk pk live prod dev and or credentials \
    credential strong secure complex long admin root thing really very that looks like is \
    shared across service services generated some personal in production valid invalid wrong bad \
    account session bearer bit bits \
    clave chave schluessel schl\xc3\xbcssel cle cl\xc3\xa9 chiave sleutel contrase\xc3\xb1a contrasena senha \
    passwort kennwort mot passe secreta secreto segredo geheim geheimer geheimes el la los las le les \
    de del da do das der die den il lo di du des acceso acesso zugang acces acc\xc3\xa8s accesso usuario \
    utilizador benutzer utilisateur utente"
);

pub(crate) fn placeholder_words(v: &[u8]) -> bool {
    const MARKERS: Words = words_of!(
        b"example examples placeholder changeme changeit change your dummy redacted \
        replace insert sample fake todo fixme please plz pls obfuscated censored omitted elided scrubbed \
        sanitized removed random something whatever value put paste enter insecure \
        tu tus su aqui aqu\xc3\xad ejemplo reemplazar reemplaza reemplace inserta insertar introduce ingresa \
        ingrese pon coloca sua seu teu tua exemplo substitua substituir insira coloque dein deine deinen \
        ihr ihre ihren hier beispiel ersetzen ersetze eintragen votre vos ton ici exemple remplacer \
        remplacez tuo esempio sostituisci inserisci qui jouw voorbeeld vervang"
    );
    // Sentence words: a value of four or more words with a verb among them says what it is
    // (`this-is-my-token`, `it_is_not_a_real_secret`) rather than being one.
    const SENTENCE: Words = words_of!(b"is isnt are was be probably not just only do dont use");
    // `!ChangeMe!`, `**change-this**`: marks around the words change nothing.
    let v = v.trim_ascii();
    let edge = |b: &u8| matches!(b, b'!' | b'*' | b'#' | b'?' | b'~' | b'^');
    let v = &v[v.iter().take_while(|b| edge(b)).count()..];
    let v = &v[..v.len() - v.iter().rev().take_while(|b| edge(b)).count()];
    if v.is_empty() {
        return false;
    }
    // `ex@mplepassword`, `ch@ngeme`: a marker's `a` typed as `@` (past a scanner's allow-list)
    // is the marker still. Only a marker's: `P@ssword` is a password, as is one with a digit.
    if v.len() <= 64
        && !v.iter().any(u8::is_ascii_digit)
        && v.windows(3)
            .any(|w| w[1] == b'@' && w[0].is_ascii_alphabetic() && w[2].is_ascii_alphabetic())
    {
        let mut buf = [0u8; 64];
        for (o, &b) in buf.iter_mut().zip(v) {
            *o = if b == b'@' { b'a' } else { b };
        }
        let plain = &buf[..v.len()];
        const A_MARKERS: [&[u8]; 5] = [b"example", b"sample", b"placeholder", b"change", b"replace"];
        return A_MARKERS.iter().any(|m| contains_ci(plain, m)) && placeholder_words(plain);
    }
    // A number standing as a word of its own (`your-256-bit-secret`): it counts as a filler word
    // once a marker is among the others; glued to a word (`Example123`) it makes a password.
    let numbered = v.iter().any(u8::is_ascii_digit);
    // Letters of any language (`tu_contraseña_aquí`), digits, and the separators between words.
    // An ASCII value (most of them) is read byte by byte, without decoding its characters.
    let separator = |c: char| matches!(c, '_' | '-' | '.' | ' ');
    let word_chars = if v.is_ascii() {
        v.iter()
            .all(|&b| b.is_ascii_alphanumeric() || separator(char::from(b)))
    } else {
        std::str::from_utf8(v).is_ok_and(|w| {
            w.chars()
                .all(|c| c.is_ascii_alphanumeric() || !c.is_ascii() && c.is_alphabetic() || separator(c))
        })
    };
    if !word_chars {
        return false;
    }
    // `django-insecure-change-me-in-production`: words around a request to replace them.
    let asks = |word: &[u8]| {
        find_ci(v, 0, word).is_some_and(|at| {
            let rest = &v[at + word.len()..];
            let rest = rest
                .strip_prefix(b"-")
                .or_else(|| rest.strip_prefix(b"_"))
                .unwrap_or(rest);
            rest.len() >= 2 && rest[..2].eq_ignore_ascii_case(b"me")
        })
    };
    if v.iter()
        .all(|&b| b.is_ascii_alphabetic() || matches!(b, b'-' | b'_'))
        && (asks(b"change") || asks(b"replace"))
    {
        return true;
    }
    // `real-token-here`, `put_your_key_here`: stand-in words ending where the value goes.
    let last = v
        .rsplit(|&b| matches!(b, b'_' | b'-' | b'.' | b' '))
        .next()
        .unwrap_or(v);
    // A number glued to it (`…_placeholder_here1234`) leaves it the stand-in's closing word.
    let last_word = trim_end_of(last, |b| b.is_ascii_digit());
    let mut marker = last.len() < v.len() && last_word.eq_ignore_ascii_case(b"here");
    let (mut parts, mut verb, mut slot, mut names) = (0, false, false, 0);
    let (mut other, mut opens_with_marker) = (0, false);
    let mut start = 0;
    for k in 0..=v.len() {
        let boundary = k == v.len()
            || matches!(v[k], b'_' | b'-' | b'.' | b' ')
            || (k > start && v[k].is_ascii_uppercase() && v[k - 1].is_ascii_lowercase());
        if !boundary {
            continue;
        }
        let part = &v[start..k];
        start = if k < v.len() && !v[k].is_ascii_alphabetic() {
            k + 1
        } else {
            k
        };
        if part.is_empty() {
            continue;
        }
        let part = if k == v.len() && marker { last_word } else { part };
        parts += 1;
        if part.iter().all(u8::is_ascii_digit) {
            continue;
        }
        if SENTENCE.contains_ci(part) {
            verb = true;
            continue;
        }
        slot |= [&b"key"[..], b"token", b"secret", b"password"]
            .iter()
            .any(|w| part.eq_ignore_ascii_case(w));
        match stand_in_words(part, &MARKERS, &STAND_IN_FILLERS) {
            Some(m) => {
                marker |= m;
                opens_with_marker |= parts == 1 && part.eq_ignore_ascii_case(b"your");
            }
            // Another word of a sentence (`min`, `chars`, `used`, `hs256`): lowercase letters,
            // perhaps a short number glued to them as an algorithm's name is.
            None if plain_word(part) => other += 1,
            None if product_name(part) => names += 1,
            None => return false,
        }
    }
    // One word in capitals that is no stand-in's may be the product the slot is for
    // (`YOUR_MEM0_API_KEY`) when a marker and the slot's own word are around it.
    if names > 0 {
        return names == 1 && other == 0 && marker && slot;
    }
    // Words beside the stand-in's own are a sentence about the value when `your` opens it
    // (`your-session-secret-min-16-chars`, `your-acme-token`), or when the stand-in's words are
    // most of it and it runs on for six words or more
    // (`a-long-and-secure-password-used-for-local-dev`); a passphrase of words
    // (`blue-river-sky-42`) has few of them.
    if other > 0 && !opens_with_marker && (other * 2 >= parts || parts < 6) {
        return false;
    }
    // What passed above with words of its own is a sentence.
    let sentence = other > 0 && (marker || parts >= 6);
    if numbered {
        return marker || sentence;
    }
    // Lowercase naming words joined by `-` or `_` that end with the secret's word
    // (`client-secret`, `db_password`, `my-api-key`): the slot's name, typed where it goes.
    // One that calls itself real (`real_key`) claims to be the value.
    let named = v
        .iter()
        .all(|&b| b.is_ascii_lowercase() || matches!(b, b'-' | b'_'))
        && v.iter().any(|&b| matches!(b, b'-' | b'_'))
        && !v.starts_with(b"real")
        && !v.starts_with(b"actual")
        && [
            &b"secret"[..],
            b"password",
            b"passwd",
            b"pwd",
            b"token",
            b"key",
            b"credentials",
        ]
        .iter()
        .any(|w| v.ends_with(w));
    marker || named || verb && parts >= 4 || sentence
}

/// A word of a sentence in lowercase (`used`, `chars`), or a name with a short number glued to its
/// end (`hs256`, `sha1`, `v2`): no part a generator makes.
fn plain_word(part: &[u8]) -> bool {
    let letters = run_end(part, 0, |b| b.is_ascii_lowercase());
    let digits = part.len() - letters;
    (2..=12).contains(&letters)
        && part[letters..].iter().all(u8::is_ascii_digit)
        && (digits == 0 || part.len() <= 6)
}

/// A product's name as a constant's word: letters of one case, perhaps a version's digits after
/// them (`ACME`, `mem0`, `AI21`), not a password's mix (`Hunter2x`, `pa55word`).
fn product_name(part: &[u8]) -> bool {
    let letters = part.iter().take_while(|b| b.is_ascii_alphabetic()).count();
    let digits = &part[letters..];
    (2..=12).contains(&part.len())
        && letters >= 2
        && digits.len() <= 2
        && digits.iter().all(u8::is_ascii_digit)
        && (part[..letters].iter().all(u8::is_ascii_uppercase)
            || part[..letters].iter().all(u8::is_ascii_lowercase))
}

/// Whether `part` is stand-in words run together (`yourpassword`, `changemeplease`): `None` if
/// not, else whether a marker word is among them.
pub(crate) fn stand_in_words(part: &[u8], markers: &Words, fillers: &Words) -> Option<bool> {
    if part.len() > 64 {
        return None;
    }
    // reach[k]: `part[..k]` splits into words; `Some(true)` if one of them is a marker.
    let mut reach: [Option<bool>; 65] = [None; 65];
    reach[0] = Some(false);
    for k in 0..part.len() {
        let Some(seen) = reach[k] else { continue };
        for (list, marker) in [(markers, true), (fillers, false)] {
            for len in list.lengths_at(part, k) {
                let e = k + len;
                reach[e] = Some(reach[e].unwrap_or(false) | seen | marker);
            }
        }
    }
    reach[part.len()]
}

/// A reference to where the secret lives, not the secret: environment and config lookups.
pub(crate) fn is_reference(v: &[u8]) -> bool {
    const PREFIXES: Words = words_of!(
        b"os.environ os.getenv process.env import.meta.env env. env( env[ ENV[ ENV. \
        System.getenv getenv Deno.env std::env env! secrets. vault: ref+ config. settings. self. this. \
        cfg. conf. args. opts. options. params. props. req. request. ctx. context. credentials. data. \
        user. auth. Environment. Config. Settings."
    );
    PREFIXES.starts(v)
}

/// A `${`, `{{` or `$(` in `v` with no closing bracket after it.
pub(crate) fn unclosed_template(v: &[u8]) -> bool {
    [(&b"${"[..], &b"}"[..]), (b"{{", b"}}"), (b"$(", b")")]
        .iter()
        .any(|(open, close)| {
            v.windows(2)
                .position(|w| w == *open)
                .is_some_and(|at| !v[at + 2..].windows(close.len()).any(|w| w == *close))
        })
}

/// A capitalised name with lowercase letters in it is a type (`ClientSecretCredential`); an
/// all-capitals one is a function of SQL (`PASSWORD('…')`) or a constant.
pub(crate) fn camel_type(key: &[u8]) -> bool {
    key[0].is_ascii_uppercase() && key.iter().any(u8::is_ascii_lowercase)
}

/// What follows the key is code around a value, not a value: a command substitution (`$(…)`),
/// an interpolation (`#{password}`), an HTML-escaped slot (`&lt;YOUR_PASSWORD&gt;`), a resource
/// name (`arn:aws:iam::…`), or a concatenation or the next field after a string that held the key
/// (`"…_password = " + new Buffer(…)`, `'password = '.$p[…]`, `"Password:",rememberMe…`).
pub(crate) fn code_continuation(v: &[u8]) -> bool {
    let operand = |b: &u8| b.is_ascii_alphabetic() || matches!(b, b'$' | b'_' | b' ' | b'"' | b'\'' | b'(');
    // A call with no arguments quoted as code (`"obj.aFunctionCall()"`, `'getSecret()'`).
    let call = v.len() > 4
        && v.ends_with(b"()")
        && v[0].is_ascii_alphabetic()
        && v[..v.len() - 2]
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'$'));
    // A lookup a program expands (`$__file{/run/secrets/admin}`, `$__env{DB_PASS}`): a lowercase
    // name after `$`, its argument in braces closing the value (unquoted, the value's end may
    // cut the closing brace).
    let expansion = v.len() > 4 && v[0] == b'$' && {
        let name = run_end(v, 1, |b| b.is_ascii_lowercase() || b == b'_');
        let arg = v.get(name + 1..).unwrap_or_default();
        name > 1
            && v.get(name) == Some(&b'{')
            && arg
                .iter()
                .position(|&b| b == b'}')
                .is_none_or(|c| c + 1 == arg.len())
    };
    call || expansion
        || v.starts_with(b"$(")
        || v.starts_with(b"#{")
        || v.starts_with(b"&lt;")
        || v.starts_with(b"arn:")
        || matches!(v.first(), Some(b'+' | b'.' | b','))
            && v.get(1).is_some_and(operand)
            && !base64_key(v)
            && !plus_led_password(v)
}

/// A generated password that starts with `+` (`+bZ0YJt7#5d-88rFJbMx`): one random run, no blank
/// and no `+` closing it as a concatenation does (`+name+`, `+ new Buffer(…)`).
fn plus_led_password(v: &[u8]) -> bool {
    v.len() >= 13 && v[0] == b'+' && !v.contains(&b' ') && !v.ends_with(b"+") && looks_random(&v[1..], 12)
}

/// One base64 run of 16 or more with a digit (`+grqXYZ40BXQaeH9…==`): a key that starts with
/// `+`, not `+` joining code to a string.
pub(crate) fn base64_key(v: &[u8]) -> bool {
    v.len() >= 16 && v.iter().all(|&b| b64(b)) && has_digit(v)
}

/// A value in a second pair of quotes that is itself a slot (`"'$PRECOMPILE_PASSWORD'"`,
/// `'"${DB_PASS}"'`).
pub(crate) fn quoted_slot(v: &[u8]) -> bool {
    let inner = match v {
        [q @ (b'"' | b'\''), inner @ .., last] if last == q => inner,
        _ => return false,
    };
    !inner.is_empty() && (is_placeholder(inner) || is_reference(inner) || code_continuation(inner))
}

/// A name path of code (`Digest::SHA1.hexdigest`, `std::env::var`): identifiers joined by `::`,
/// a method after a `.`; Ruby calls one without parentheses (`= Digest::SHA1.hexdigest [a, b]`).
pub(crate) fn code_name_path(v: &[u8]) -> bool {
    let ident = |s: &[u8]| {
        s.first().is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
            && s.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
    };
    v.windows(2).any(|w| w == b"::")
        && v.split(|&b| b == b'.').all(|part| {
            part.split(|&b| b == b':')
                .enumerate()
                .all(|(k, s)| ident(s) || k % 2 == 1 && s.is_empty())
        })
}

/// An LDAP distinguished name (`ou=users,dc=example,dc=us`, `uid=reader,ou=services,…`): where a
/// directory's entries are, never a secret.
pub(crate) fn ldap_dn(v: &[u8]) -> bool {
    const ATTRIBUTES: Words = words_of!(b"dc ou cn uid o c l st");
    let mut parts = 0;
    let mut named = false;
    for part in v.split(|&b| b == b',') {
        let Some(eq) = part.iter().position(|&b| b == b'=') else {
            return false;
        };
        let attr = part[..eq].trim_ascii();
        if attr.is_empty()
            || attr.len() > 24
            || !attr.iter().all(u8::is_ascii_alphabetic)
            || eq + 1 == part.len()
        {
            return false;
        }
        named |= ATTRIBUTES.contains_ci(attr);
        parts += 1;
    }
    parts >= 2 && named
}

/// A quoted name of where a secret is kept, not the secret: an identifier in lower camelCase that
/// ends with a secret word after the word of whose secret it is (`'userPassword'`, `'ntPassword'`,
/// `'radiusClientSecret'`: a directory attribute, a field's name); other words before it
/// (`plainSecret`) or a capital first (`SuperSecretPassword`) are typed as a password is.
pub(crate) fn secret_field_name(v: &[u8]) -> bool {
    const ENDS: Words = words_from!(&[b"Password", b"Passwd", b"Secret", b"Token", b"Key", b"Pwd"]);
    const OWNERS: Words = words_from!(&[
        b"user",
        b"nt",
        b"lm",
        b"client",
        b"app",
        b"admin",
        b"root",
        b"db",
        b"service",
        b"account",
        b"bind",
        b"api",
        b"access",
        b"consumer",
    ]);
    let humps = v.iter().filter(|b| b.is_ascii_uppercase()).count();
    let Some(head) = ENDS
        .iter()
        .find(|e| v.len() > e.len() + 1 && v.ends_with(e))
        .map(|e| &v[..v.len() - e.len()])
    else {
        return false;
    };
    // The word right before the secret word: after the head's last capital, or all of it.
    let owner = &head[head.iter().rposition(u8::is_ascii_uppercase).unwrap_or(0)..];
    v.first().is_some_and(u8::is_ascii_lowercase)
        && v.iter().all(u8::is_ascii_alphabetic)
        && (1..=3).contains(&humps)
        && OWNERS.contains_ci(owner)
}

/// A `$` before letters of both cases and digits, in single quotes (`'$ecRetT0F1nD'`): shells,
/// Python, PHP and PowerShell expand nothing there, and no variable is named so.
/// A variable's name is two words or more with a number after them (`'$DbPass2'`: Compose
/// expands it even in single quotes), not digits among its letters.
pub(crate) fn dollar_literal(v: &[u8]) -> bool {
    let name = &v[1.min(v.len())..];
    let letters = trim_end_of(name, |b| b.is_ascii_digit());
    // Two words or more (`DbPass`): one capitalised word and a number (`'$Summer2024'`) is how a
    // weak password is typed with a symbol in front.
    let capitals = letters.iter().filter(|b| b.is_ascii_uppercase()).count();
    let named = capitals >= 2 && camel_word_share(letters).is_some_and(|w| 3 * w >= 2 * letters.len());
    v.len() >= 8 && v[0] == b'$' && mixed_case(name) && has_digit(name) && !name.contains(&b'_') && !named
}

/// Stand-in words around the words of the value's own key (`HEROKU_API_KEY='sampleHerokuKey'`,
/// `githubToken: yourGithubToken`): a placeholder that names its slot, once the key's words
/// (three letters or more) are taken out of it.
pub(crate) fn stand_in_for_key(v: &[u8], key: &[u8]) -> bool {
    if v.len() > 64
        || !v
            .iter()
            .all(|&b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'-' | b'.'))
    {
        return false;
    }
    let mut rest = v.to_ascii_lowercase();
    let mut start = 0;
    for k in 0..=key.len() {
        let boundary = k == key.len()
            || !key[k].is_ascii_alphabetic()
            || k > start && key[k].is_ascii_uppercase() && key[k - 1].is_ascii_lowercase();
        if !boundary {
            continue;
        }
        let word = key[start..k].to_ascii_lowercase();
        start = if k < key.len() && !key[k].is_ascii_alphabetic() {
            k + 1
        } else {
            k
        };
        if word.len() < 3 {
            continue;
        }
        while let Some(at) = rest.windows(word.len()).position(|w| w == word.as_slice()) {
            // The word in the plural restates it too (`email_pwd = 'emails_secret'`).
            let end = at + word.len();
            let plural =
                rest.get(end) == Some(&b's') && rest.get(end + 1).is_none_or(|b| !b.is_ascii_alphabetic());
            rest.drain(at..end + usize::from(plural));
        }
    }
    // Naming words glued to the key's own word (`"token": "privatetoken"`): the slot's name. A
    // password's value may be such words (`adminpassword`), typed as the password.
    let glued_name = !password_key(key)
        && v.iter().all(u8::is_ascii_lowercase)
        && stand_in_words(&rest, &NO_WORDS, &STAND_IN_FILLERS).is_some();
    // `some_passphrase`, `someSigningSecret`: "some" before the slot's name stands for a value, as
    // "your" does; in capitals (`"SOME_PASSWORD"`) it is typed as the password itself.
    let some = !all_caps_name(v) && trim_end_of(&rest, |b| matches!(b, b'_' | b'-' | b'.')) == b"some";
    rest.len() < v.len() && (placeholder_words(&rest) || some || !rest.is_empty() && glued_name)
}

/// `password=PASSWORD`, `TOKEN=$TOKEN` without the `$`: the key's own name is a template.
pub(crate) fn same_as_key(v: &[u8], key: &[u8]) -> bool {
    // `loginConfig.servicePrincipalSecret = "servicePrincipalSecret"`: the member's own name.
    let member = key.rsplit(|&b| b == b'.').next().unwrap_or(key);
    v.eq_ignore_ascii_case(key)
        || member.len() < key.len() && v.len() >= 6 && same_letters(v, member)
        || all_caps_name(v) && v.len() >= 4 && contains_ci(key, &v[..v.len().min(4)])
        || v.len() >= 6 && same_letters(v, key)
        || v.len() >= 6
            && v.iter().all(|&b| b.is_ascii_alphabetic() || b == b'_')
            && key_head(key).is_some_and(|h| same_letters(v, h))
}

/// The words of a key before its last word, when they are two or more
/// (`IAM_ROLE_STATEMENTS_TOKEN` → `IAM_ROLE_STATEMENTS`, `sessionCacheKey` → `sessionCache`): a
/// value spelling them names what the secret is for (`'iamRoleStatements'`), not the secret.
fn key_head(key: &[u8]) -> Option<&[u8]> {
    let boundary = |k: usize| {
        matches!(key[k], b'_' | b'-' | b'.')
            || k > 0 && key[k].is_ascii_uppercase() && key[k - 1].is_ascii_lowercase()
    };
    let last = (1..key.len()).rev().find(|&k| boundary(k))?;
    let head = &key[..last];
    (1..head.len()).any(boundary).then_some(head)
}

/// The key's name in another casing (`"client_secret": "clientSecret"`, `apiKey = API_KEY`),
/// perhaps owned (`'aws-secret-access-key': 'MYAWSSECRETACCESSKEY'`, `yourApiKey`): the same
/// letters and digits, separators and case aside.
pub(crate) fn same_letters(v: &[u8], key: &[u8]) -> bool {
    fn letters(t: &[u8]) -> impl Iterator<Item = u8> + '_ {
        t.iter()
            .filter(|b| b.is_ascii_alphanumeric())
            .map(u8::to_ascii_lowercase)
    }
    // Whether `v`'s letters less `skip` of them are the key's.
    let same = |skip: usize| letters(v).skip(skip).eq(letters(key));
    // An owner before a one-word key is a weak password (`Password=myPassword`); before a name of
    // several words, a stand-in.
    let words = key.windows(2).any(|w| {
        matches!(w[0], b'_' | b'-' | b'.') || w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase()
    });
    same(0)
        || words
            && [
                &b"my"[..],
                b"your",
                b"the",
                b"test",
                b"some",
                b"fake",
                b"dummy",
                b"sample",
                b"example",
            ]
            .iter()
            .any(|w| letters(v).take(w.len()).eq(w.iter().copied()) && same(w.len()))
}

/// `USER`, `DB_PASSWORD`, `PASSWORD`: an all-caps name, used as a template slot. A name has a
/// `_` or is made of stand-in words (`DBPASSWORD`); `SUPERSECRETPASS` is a password in capitals.
pub(crate) fn constant_like(v: &[u8]) -> bool {
    const WORDS: Words = words_of!(
        b"password passwd pass pwd pw secret token key api user username name host \
        hostname port db database value your my the auth access client app admin root login id"
    );
    all_caps_name(v) && (v.contains(&b'_') || stand_in_words(v, &WORDS, &NO_WORDS).is_some())
}

/// Capitals and `_` only.
pub(crate) fn all_caps_name(v: &[u8]) -> bool {
    v.len() >= 2 && v.iter().all(|&b| b.is_ascii_uppercase() || b == b'_')
}

pub(crate) fn all_caps(key: &[u8]) -> bool {
    key.iter().any(u8::is_ascii_uppercase) && !key.iter().any(u8::is_ascii_lowercase)
}

pub(crate) fn is_auth_scheme(v: &[u8]) -> bool {
    matches!(
        lower(v, &mut [0; 16]),
        b"bearer"
            | b"basic"
            | b"token"
            | b"digest"
            | b"apikey"
            | b"key"
            | b"bot"
            | b"ssws"
            | b"api-token"
            | b"api-key"
            | b"apitoken"
            | b"dsn"
            | b"hmac"
            | b"otoken"
            | b"sharedaccesssignature"
            // Windows' challenge-response schemes: the token is the client's answer.
            | b"ntlm"
            | b"negotiate"
    )
}

/// Skips `is`, `was`, `to`, `:` and similar words between a secret word and its value in prose,
/// or a short phrase ending with `:` (`password for staging: …`).
pub(crate) fn skip_fillers(bytes: &[u8], start: usize) -> usize {
    // `is` in English, German, French, Spanish, Portuguese, Dutch and Italian (`é`, `è`).
    let is = |w: &[u8]| {
        matches!(
            w,
            b"is" | b"was" | b"=" | b"ist" | b"lautet" | b"est" | b"es" | b"\xc3\xa9" | b"\xc3\xa8"
        )
    };
    // `for prod`, `on staging`, `in CI`, `für prod`, `do banco`, `voor prod`: a phrase naming
    // where the secret is used.
    // Its first word is letters, of any script (`für`): `on-prem` starts with `on`.
    let first = &bytes[start..run_end_max(bytes, start, 8, |b| b.is_ascii_alphabetic() || !b.is_ascii())];
    let scoped = matches!(
        lower(first, &mut [0; 16]),
        b"for"
            | b"on"
            | b"in"
            | b"at"
            | b"of"
            | b"f\xc3\xbcr"
            | b"de"
            | b"do"
            | b"da"
            | b"del"
            | b"du"
            | b"voor"
    );
    let mut pos = start;
    // `chiave Ghost è …`, `clé Fastly est …`, `token Pusher Beams is …`: where a noun comes before
    // its name, capitalised words between the secret word and `is` name the provider.
    let mut named = true;
    // `password for the user "bob" is …`: up to five words name whose it is.
    for _ in 0..6 {
        let end = run_end_max(bytes, pos, 256, |b| !b.is_ascii_whitespace());
        if end == pos || end >= bytes.len() || bytes[end] == b'\n' {
            break;
        }
        let word = &bytes[pos..end];
        // `password for staging: …`, `password for prod is …`
        // (A note's `==` too, after a name or an index: `token 1 == …`.)
        if bytes[end - 1] == b':' || pos > start && (scoped || named) && (is(word) || named && word == b"==")
        {
            return skip_blank(bytes, end);
        }
        // A name is a short word of letters (the value itself, `key Kx9mQ2 was …`, is none); a
        // word saying what about the key it is (`key ID is …`, `token URL is …`) names no provider.
        // An index of one or two digits numbers the key (`token 1 == …`, `api key 2 = …`).
        named = named
            && (word.len() <= 2 && word.iter().all(u8::is_ascii_digit)
                || word[0].is_ascii_uppercase()
                    && word.len() <= 16
                    && word.iter().all(u8::is_ascii_alphabetic)
                    && !crate::words::qualified_after(word));
        pos = skip_blank(bytes, end);
    }
    let mut pos = start;
    for _ in 0..2 {
        let end = run_end_max(bytes, pos, 256, |b| !b.is_ascii_whitespace());
        let mut buf = [0; 16];
        let word = lower(&bytes[pos..end], &mut buf);
        let filler = is(word)
            || matches!(
                word,
                b"are"
                    | b"be"
                    | b"to"
                    | b"as"
                    | b"now"
                    | b"currently"
                    | b"set"
                    | b"equals"
                    | b":"
                    | b"is:"
                    | b"of"
                    | b"here:"
                    | b"value"
            );
        if end < bytes.len() && filler {
            pos = skip_blank(bytes, end);
        } else {
            break;
        }
    }
    pos
}

/// A URL whose userinfo holds no password (`mongodb://mongodb:mongodb@…`,
/// `https://username:password@…`): judged as the URL rule judges it, not as a value.
pub(crate) fn url_stand_in_userinfo(v: &[u8]) -> bool {
    let Some(scheme) = find_ci(v, 0, b"://") else {
        return false;
    };
    let authority = &v[scheme + 3..];
    let authority = &authority[..authority
        .iter()
        .position(|&b| b == b'/')
        .unwrap_or(authority.len())];
    let Some(at) = authority.iter().rposition(|&b| b == b'@') else {
        return false;
    };
    let userinfo = &authority[..at];
    userinfo.contains(&b':') && user_password(userinfo, b':').is_none()
}

/// The rest of a URL after a stand-in for its password in angle brackets
/// (`mongodb+srv://jane:<db_password>@cluster0.example.net/?w=majority`): read from the
/// stand-in's closing bracket, the value is `@` and the host, never the password.
pub(crate) fn host_after_stand_in(bytes: &[u8], p: usize, value: &[u8]) -> bool {
    let Some(host) = value.strip_prefix(b"@") else {
        return false;
    };
    let name = host
        .iter()
        .position(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.')))
        .unwrap_or(host.len());
    p > 0
        && bytes[p - 1] == b'>'
        && host.first().is_some_and(u8::is_ascii_alphanumeric)
        && match host.get(name) {
            None => host.contains(&b'.'),
            Some(b':' | b'/' | b'?') => true,
            Some(_) => false,
        }
}

/// Where the password of `user<sep>password` starts in `v`, when it is one: not a placeholder, a
/// template name, nor the user again (`guest:guest`, `admin:admin` are documented defaults).
pub(crate) fn user_password(v: &[u8], sep: u8) -> Option<usize> {
    let at = v.iter().position(|&b| b == sep)?;
    let pw = &v[at + 1..];
    // `https://<token>:x-oauth-basic@github.com`: GitHub's fixed word where the password goes
    // when the token is the user (judged as the user's own value).
    let stand_in = is_placeholder(pw) && !weak_literal(pw) || pw.eq_ignore_ascii_case(b"x-oauth-basic");
    (pw.len() >= 3 && !stand_in && !constant_like(pw) && !pw.eq_ignore_ascii_case(&v[..at])).then_some(at + 1)
}

/// A weak password typed as one (`secret`, `myPassword`, `abc123`, `letmein`): where a password
/// stands (a URL's userinfo, a password key's value) it is a literal, however weak, unlike the
/// slot's own name (`password`, `pass`), an empty marker (`none`, `null`), a tutorial's stand-in
/// (`test`, `foobar`, `123456`) or a template.
pub(crate) fn weak_literal(v: &[u8]) -> bool {
    const LITERALS: Words = words_of!(
        b"secret mysecret mypassword mypass mypwd abc123 letmein qwerty admin123 password1 \
        password123 passw0rd p@ssw0rd"
    );
    LITERALS.contains_ci(v)
}

/// Whether base64 `token` decodes to `user:password` typed as filler (`aaa:bbb`, `xxxx:1234`): a
/// password of one or two characters repeated, or a count.
pub(crate) fn basic_filler(token: &[u8]) -> bool {
    let mut out = [0u8; 96];
    let trimmed = trim_end_of(token, |b| b == b'=');
    // Typed text only (see `typed` below): a byte that is none ends the decoding.
    let Some(text) = crate::chars::base64_decode_text(trimmed, &mut out, |b| b.is_ascii_graphic()) else {
        return false;
    };
    let Some(colon) = text.iter().position(|&b| b == b':') else {
        return false;
    };
    // Typed text (`aaa:bbb`, its bytes graphic: see the decoding), not bytes of a random value
    // that hold a `:`.
    let typed = colon > 0;
    typed && filler_password(&text[colon + 1..])
}

/// A password typed as filler: one or two characters repeated, or a count.
pub(crate) fn filler_password(pw: &[u8]) -> bool {
    let mut distinct = [false; 256];
    let n = pw
        .iter()
        .filter(|&&b| !std::mem::replace(&mut distinct[usize::from(b)], true))
        .count();
    pw.len() >= 3 && (n <= 2 || counted_through(pw))
}
