//! The layout a prompt's text is written in, read before the scan: quoted replies, diffs, gutters,
//! file locations, JSON and HTML escapes. It maps offsets back and must never drop or reorder a byte.

use crate::bytes::{
    any_of_two, find_any_of_three, find_any_of_two, find_byte, find_ci, rfind_byte, run_back, run_end,
    run_end_max,
};
use crate::words::may_hold_secret_word;

/// `text` with the layout that opens its lines read as blanks: the `>` markers of quoted lines
/// (an e-mail reply's, Markdown's, a REPL's `>>>`), a unified diff's first column inside a hunk
/// (after `@@ … @@` or a ```` ```diff ```` fence), a compiler's or linter's line-number
/// gutter (`12 | `), a comment's, a box's or a prompt's marker (`# `, `// `, `-- `, `│ `, `$ `)
/// and a log line's time, level and logger. The line is read as it was written (`> password=…`,
/// `+| service | key |`, `12 |     let token = "…";`); blanks keep every offset, so spans stand.
/// `None` when no line has such layout (most prompts: one search for a line break per line); and
/// whether a line says the text is quoted-printable (a mail part's header: see
/// [`quoted_printable_header`]).
pub(crate) fn dequoted(text: &str) -> (Option<String>, bool) {
    let bytes = text.as_bytes();
    let mut out: Option<Vec<u8>> = None;
    let mut in_diff = false;
    let mut mail = false;
    let mut line = 0;
    // Where the line before ended with a `$`: `cat -A` (or `cat -e`, `sed -n l`) marks each
    // line's end so, and a tab as `^I`; two such lines in a row are read without the marks.
    let mut dollar: Option<(usize, usize)> = None;
    loop {
        let end = find_byte(b'\n', &bytes[line..]).map_or(bytes.len(), |p| line + p);
        let l = &bytes[line..end];
        if l.last() == Some(&b'$') {
            if let Some(before) = dollar {
                // Each mark is read as a carriage return, as a line of a CRLF file ends: a
                // continuation's `\` or a key's body still ends its line.
                let o = out.get_or_insert_with(|| bytes.to_vec());
                for (from, to) in [before, (line, end)] {
                    o[to - 1] = b'\r';
                    for tab in memchr::memmem::find_iter(&bytes[from..to], b"^I") {
                        o[from + tab..from + tab + 2].fill(b' ');
                    }
                }
            }
            dollar = Some((line, end));
        } else {
            dollar = None;
        }
        let lead = run_end(l, 0, |b| b == b' ' || b == b'\t');
        // What to blank on this line: `[from, to)` within it.
        let mut blank = (0, 0);
        if matches!(l.first(), Some(b'C' | b'c')) && quoted_printable_header(l) {
            mail = true;
        } else if l.starts_with(b"@@ -") || l.starts_with(b"```diff") {
            in_diff = true;
        } else if in_diff
            && matches!(l.first(), Some(b'+' | b'-'))
            && !l.starts_with(b"+++")
            && !l.starts_with(b"---")
        {
            blank = (0, 1);
        } else if in_diff && !matches!(l.first(), None | Some(b' ' | b'\\' | b'\r')) {
            in_diff = false;
        }
        if blank.1 == 0 && l.get(lead) == Some(&b'>') {
            blank = (lead, run_end(l, lead, |b| matches!(b, b'>' | b' ' | b'\t')));
        } else if blank.1 == 0 && (l[lead..].starts_with(b"* ") || l[lead..].starts_with(b"+ ")) {
            // A Markdown bullet (`* password = …`, `* ghp_…`), or a shell's trace of the command
            // it runs (`+ export TOKEN=…`).
            blank = (lead, lead + 1);
        } else if blank.1 == 0 && l.first() == Some(&b'\t') && l.get(lead) == Some(&b'@') {
            // A Makefile recipe's command run silently (`<TAB>@curl -u ci:… …`).
            blank = (lead, lead + 1);
        } else if blank.1 == 0
            && matches!(
                l.get(lead),
                Some(b'#' | b'/' | b'-' | b'$' | b'.' | b'+' | b'I' | b'O' | 0xE2)
            )
            && let Some(end) = marker_end(&l[lead..])
        {
            blank = (lead, lead + end);
        } else if blank.1 == 0 && l.get(lead).is_some_and(u8::is_ascii_digit) {
            let digits = run_end(l, lead, |b| b.is_ascii_digit());
            if digits - lead <= 6 && l[digits..].starts_with(b" | ") {
                blank = (lead, digits + 3);
            } else if digits - lead <= 3 && (l[digits..].starts_with(b". ") || l[digits..].starts_with(b") "))
            {
                // A numbered list's item (`2. token: …`).
                blank = (lead, digits + 1);
            } else if lead >= 4 && digits <= 8 && l.get(digits) == Some(&b' ') {
                // A traceback's source line as IPython numbers it (`      3 conn = …`).
                blank = (lead, digits);
            } else if digits - lead <= 6
                && match l.get(digits) {
                    Some(b'\t') => true,
                    Some(b':') => !(digits - lead <= 2 && clock_minutes(&l[digits + 1..])),
                    _ => false,
                }
            {
                // A line's number as `cat -n` (`    12<TAB>`) or `grep -n` and `nl` print it
                // (`12:`); `10:42` is a time.
                blank = (lead, digits + 1);
            }
        }
        if blank.1 == 0
            && matches!(l.first(), Some(b'a'..=b'f' | b'0'..=b'9' | b'^'))
            && let Some(at) = blame_end(l)
        {
            blank = (0, at);
        } else if blank.1 == 0
            && matches!(
                l.first(),
                Some(b'A' | b'D' | b'F' | b'J' | b'M' | b'N' | b'O' | b'S')
            )
            && let Some(at) = syslog_prefix_end(l)
        {
            blank = (0, at);
        }
        if blank.1 == 0
            && let Some(at) = location_end(l)
        {
            // A log's or grep's prefix up to the quoted file's location (`… app.ini:3: `).
            blank = (0, at);
        } else if blank.1 == 0
            && matches!(l.first(), Some(b'0'..=b'9' | b'['))
            && let Some(at) = log_prefix_end(l)
        {
            blank = (0, at);
        }
        if blank.1 > blank.0 {
            // A quoting reply's `>` after other layout (`# > …`, ` * > …`, a log's prefix) is
            // layout too.
            let next = run_end(l, blank.1, |b| b == b' ' || b == b'\t');
            if l.get(next) == Some(&b'>') {
                blank.1 = run_end(l, next, |b| matches!(b, b'>' | b' ' | b'\t'));
            }
            let o = out.get_or_insert_with(|| bytes.to_vec());
            for b in &mut o[line + blank.0..line + blank.1] {
                *b = b' ';
            }
        }
        if end == bytes.len() {
            break;
        }
        line = end + 1;
    }
    // A terminal's colour code whose escape byte was lost (`[93m`, `[1;31m`) is layout: the word
    // glued after it starts there (`[93msk-…` is a key after the code). Found by one search for
    // `[`, not in the scan's loop.
    let mut k = 0;
    while let Some(p) = find_byte(b'[', &bytes[k..]) {
        let open = k + p;
        k = open + 1;
        // With its escape byte the code is layout wherever it stands (`ESC[0m` after a value).
        let escaped = open > 0 && bytes[open - 1] == 0x1B;
        if let Some(m) = colour_code_end(bytes, k, escaped) {
            let o = out.get_or_insert_with(|| bytes.to_vec());
            o[open - usize::from(escaped)..m].fill(b' ');
            k = m;
        }
    }
    // Typography a chat app, a word processor or an input method puts in (no-break, full-width and
    // zero-width spaces, curly quotes, a full-width colon or equals sign) is read as the ASCII it
    // stands for, padded with blanks to its length: `password：…` as `password:  …`, `“…”`. Only
    // text outside ASCII is searched, and an apostrophe inside a word (`it’s`) stays.
    let mut k = 0;
    while let Some(p) = find_any_of_three(0xC2, 0xE2, 0xEF, &bytes[k..]) {
        let at = k + p;
        k = at + 1;
        let Some(ascii) = typography(bytes, at) else {
            continue;
        };
        let o = out.get_or_insert_with(|| bytes.to_vec());
        o[at..at + ascii.len()].copy_from_slice(ascii);
        k = at + ascii.len();
    }
    // A full-width blank (U+3000, an input method's space: `password　…`) is one too; it is
    // searched whole, for its first byte begins most of Japanese text.
    for at in memchr::memmem::find_iter(bytes, "\u{3000}".as_bytes()) {
        out.get_or_insert_with(|| bytes.to_vec())[at..at + 3].fill(b' ');
    }
    (out.and_then(|o| String::from_utf8(o).ok()), mail)
}

/// The ASCII, as long as the character, that the typographic character at `at` stands for.
fn typography(bytes: &[u8], at: usize) -> Option<&'static [u8]> {
    let c = bytes.get(at..at + 3).unwrap_or(&bytes[at..]);
    let letter_around = |len: usize| {
        at > 0
            && bytes[at - 1].is_ascii_alphanumeric()
            && bytes.get(at + len).is_some_and(u8::is_ascii_alphanumeric)
    };
    Some(match c {
        [0xC2, 0xA0, ..] => b"  ",
        // Zero-width space, non-joiner, joiner; the byte-order mark.
        [0xE2, 0x80, 0x8B..=0x8D] | [0xEF, 0xBB, 0xBF] => b"   ",
        [0xE2, 0x80, 0x9C | 0x9E] => b"  \"",
        [0xE2, 0x80, 0x9D] => b"\"  ",
        [0xE2, 0x80, 0x98] => b"  '",
        [0xE2, 0x80, 0x99] if !letter_around(3) => b"'  ",
        [0xEF, 0xBC, 0x9A] => b":  ",
        [0xEF, 0xBC, 0x9D] => b"=  ",
        _ => return None,
    })
}

/// The end of an ANSI colour code's parameters and `m` starting at `i` (`93m`, `1;31m`), when a
/// letter or digit follows it or its escape byte came before it (`escaped`: `ESC[0m` too).
fn colour_code_end(bytes: &[u8], i: usize, escaped: bool) -> Option<usize> {
    let m = run_end_max(bytes, i, 12, |b| b.is_ascii_digit() || b == b';');
    let params = m > i && bytes[i].is_ascii_digit() || escaped;
    let after = escaped || bytes.get(m + 1).is_some_and(u8::is_ascii_alphanumeric);
    (params && bytes.get(m) == Some(&b'm') && after).then_some(m + 1)
}

/// `text` with the escapes inside its double-quoted strings (and its single-quoted documents)
/// decoded as JSON's (`\n`, `\r`, `\t`, `\"`, `\'`, `\\`, `\/`, `\uXXXX`), and for each of its bytes
/// and its end the offset in `text` it came from; `None` when no string holds an escape (most
/// prompts: one search for a backslash). Outside strings a backslash is text (`\\nas\backup`,
/// `C:\new`).
pub(crate) fn unescaped(text: &str) -> Option<(String, Vec<usize>)> {
    unescaped_text(text, true)
}

/// [`unescaped`], reading a table's cells broken by `<br>` when `cells`: their text is read once
/// only, not again for the cells within (a cell's escaped bars nested level in level would make
/// each level a pass over the whole text).
fn unescaped_text(text: &str, cells: bool) -> Option<(String, Vec<usize>)> {
    let bytes = text.as_bytes();
    // Source escaped for HTML (`&quot;api_key&quot;: …`, code in `<pre><code>`, a page's text
    // broken by `<br>`): its entities are decoded, and its tags inside `<pre>`/`<code>` and its
    // line-level tags (`<br>`, `<p>`, `<div>`, `<li>`) are markup, read as line breaks.
    // An entity is compared only at a `&` and a tag at a `<`.
    const ENTITIES: [&[u8]; 12] = [
        b"&quot;", b"&#34;", b"&#x22;", b"&#39;", b"&#x27;", b"&apos;", b"&lt;", b"&gt;", b"&amp;", b"&#10;",
        b"&#xA;", b"&#xa;",
    ];
    const TAGS: [&[u8]; 9] = [
        b"<code>", b"<pre>", b"<br>", b"<br/>", b"<br />", b"<p>", b"<div>", b"<li>", CDATA,
    ];
    let html = any_of_two(b'&', b'<', bytes, |k| {
        if bytes[k] == b'&' {
            ENTITIES.iter().any(|e| bytes[k..].starts_with(e))
        } else {
            TAGS.iter().any(|e| bytes[k..].starts_with(e))
        }
    });
    // A prompt that is one JSON document (a chat export, a log record) is read for its strings
    // even when none holds an escape: a message's text or an array's items are lines.
    let json = json_document(bytes);
    if !html && !json {
        find_byte(b'\\', bytes)?;
    }
    // A table's cells broken by `<br>` are read as lines first, the maps composed.
    if html
        && cells
        && let Some((cells, cells_at)) = table_cells(bytes)
    {
        let Some((plain, at)) = unescaped_text(&cells, false) else {
            return Some((cells, cells_at));
        };
        return Some((plain, at.into_iter().map(|k| cells_at[k]).collect()));
    }
    // The strings on one line each, `[open, close]`, and whether each holds an escape and an
    // escaped line break or quoted words: such a string quotes a document (a prompt, a file, a
    // log), and its quotes become line breaks, so its first and last lines read as lines. An
    // escaped quote inside a token (`"Tr0ub4dor\"3xyzQ"`), or one alone, is a character of a
    // value: the string stays the value's.
    //
    // A single-quoted string (Python's repr, a shell's or SQL's literal) is read so only when it
    // holds an escaped line break: it opens after no letter or digit (`it's` opens none), and its
    // `\'` is its escaped quote.
    let mut strings: Vec<(usize, usize, bool)> = Vec::new();
    let (mut open, mut escape, mut document, mut k) = (None, false, false, 0);
    // The escaped quotes of the open string, and whether one opened a word (after no letter).
    let (mut quotes, mut words) = (0usize, false);
    // The last double-quoted string closed, `[open, close]`: a member's key when a value follows.
    let mut last = (0, 0);
    // The last string kept and where the blanks and commas after it end, found once: a string
    // far after it is tested for being its array's next item in constant time.
    let mut tail = (usize::MAX, 0);
    // Only a quote, and inside a string a backslash or a line break, changes what is known: the
    // bytes between are passed over by a vectorised search.
    while k < bytes.len()
        && let Some(n) = match open {
            Some((_, q)) => find_any_of_three(b'\\', q, b'\n', &bytes[k..]),
            None => find_any_of_two(b'"', b'\'', &bytes[k..]),
        }
    {
        k += n;
        match bytes[k] {
            b'\\' if open.is_some() => {
                escape = true;
                match bytes.get(k + 1) {
                    Some(b'n') => document = true,
                    Some(&q) if open.is_some_and(|(_, open_q)| q == open_q) => {
                        words |= quotes % 2 == 0 && (k == 0 || !bytes[k - 1].is_ascii_alphanumeric());
                        quotes += 1;
                    }
                    _ => {}
                }
                k += 1;
            }
            // A shell's quote inside a single-quoted string (`'it'\''s'`): the string goes on.
            b'\'' if open.is_some_and(|(_, q)| q == b'\'') && bytes[k + 1..].starts_with(b"\\''") => {
                escape = true;
                k += 3;
            }
            q @ (b'"' | b'\'') => match open {
                Some((o, open_q)) if open_q == q => {
                    open = None;
                    // The next item of an array of a document's lines (a notebook's `source`,
                    // `["line one\n", "line two"]`) is that document's too, escaped or not.
                    let item = strings.last().is_some_and(|&(_, close, doc)| {
                        if doc && tail.0 != close {
                            let end = run_end(bytes, close + 1, joining);
                            tail = (close, end);
                        }
                        doc && tail.1 == o && array_items(bytes, close, o)
                    }) || json && q == b'"' && json_text(bytes, last, o, k);
                    if escape && (q == b'"' || document) || item {
                        strings.push((o, k, document || item || words && quotes % 2 == 0));
                    }
                    if q == b'"' {
                        last = (o, k);
                    }
                }
                Some(_) => {}
                None if q == b'"' || k == 0 || !bytes[k - 1].is_ascii_alphanumeric() => {
                    (open, escape, document, quotes, words) = (Some((k, q)), false, false, 0, false);
                }
                None => {}
            },
            // A document cut before its closing quote (a source map's `sourcesContent` pasted in
            // part) is one still: its escaped line breaks are lines to the end of the line.
            b'\n' => {
                if let Some((o, _)) = open.take()
                    && escape
                    && document
                {
                    strings.push((o, k, true));
                }
            }
            _ => {}
        }
        k += 1;
    }
    if let Some((o, _)) = open
        && escape
        && document
    {
        strings.push((o, bytes.len(), true));
    }
    if strings.is_empty() && !html {
        return None;
    }
    let mut plain = Vec::with_capacity(bytes.len());
    let mut at = Vec::with_capacity(bytes.len() + 1);
    let mut string = strings.iter().peekable();
    // HTML tags are line breaks inside a `<pre>`/`<code>` element only, and not inside a quoted
    // value there (`"Xk9mQ2<i>zLp7vR4"` is one value): how deep the elements nest, whether the
    // text read on this line is inside quotes, and how much of it was read.
    let (mut element, mut quoted, mut seen) = (0usize, false, 0);
    // Where the open CDATA section ends (`]]>`), and the last search for one: where it started
    // and what it found, reused while it lies ahead (openings with no close stay linear).
    let mut cdata_end: Option<usize> = None;
    let mut cdata_search: Option<(usize, Option<usize>)> = None;
    let mut k = 0;
    while k < bytes.len() {
        while string.next_if(|&&(_, close, _)| close < k).is_some() {}
        let (inside, quote, document) = match string.peek() {
            Some(&&(o, c, doc)) if o <= k && k <= c => (o < k && k < c, doc && (k == o || k == c), doc),
            _ => (false, false, false),
        };
        // Between two items of an array of a document's lines, the quotes and the comma are no
        // text: the lines follow one another, one break between them.
        if quote
            && let Some(&&(o, c, _)) = string.peek()
            && k == c
            && let Some(&(next, _, true)) = strings.get(strings.partition_point(|s| s.0 <= o))
            && array_items(bytes, c, next)
        {
            if plain.last() != Some(&b'\n') {
                plain.push(b'\n');
                at.push(k);
            }
            k = next + 1;
            continue;
        }
        // A run that holds no string's quote, no backslash and no markup is copied as it is, at
        // once (most of a text): only those bytes are read one by one below.
        let next = string
            .peek()
            .map_or(bytes.len(), |&&(o, c, _)| if k <= o { o } else { c })
            .min(cdata_end.unwrap_or(usize::MAX));
        let run = match (inside, html) {
            (true, true) => find_any_of_three(b'\\', b'&', b'<', &bytes[k..next]),
            (true, false) => find_byte(b'\\', &bytes[k..next]),
            (false, true) => find_any_of_two(b'&', b'<', &bytes[k..next]),
            (false, false) => None,
        };
        let run = run.unwrap_or(next - k);
        if run > 0 {
            plain.extend_from_slice(&bytes[k..k + run]);
            at.extend(k..k + run);
            k += run;
            continue;
        }
        if quote {
            plain.push(b'\n');
            at.push(k);
            k += 1;
            continue;
        }
        // An XML CDATA section's markers are no text: its content is read as its own lines (the
        // runs copied at once stop at its end).
        if html && cdata_end == Some(k) {
            plain.push(b'\n');
            at.push(k);
            (k, cdata_end) = (k + 3, None);
            continue;
        }
        if html && bytes[k..].starts_with(CDATA) {
            plain.push(b'\n');
            at.push(k);
            k += CDATA.len();
            cdata_end = match cdata_search {
                Some((from, found)) if from <= k && found.is_none_or(|f| f >= k) => found,
                _ => {
                    let found = find_ci(bytes, k, b"]]>");
                    cdata_search = Some((k, found));
                    found
                }
            };
            continue;
        }
        if html && let Some((b, len)) = html_markup(bytes, k) {
            // Whether the text read on this line is inside quotes, brought up to date here, the
            // one place it is read.
            // (A line break clears it: only the quotes after the last one count, and their
            // number's parity is all a quote changes, counted by a vectorised search.)
            let mut unread = &plain[seen..];
            if let Some(p) = rfind_byte(b'\n', unread) {
                (unread, quoted) = (&unread[p + 1..], false);
            }
            quoted ^= memchr::memchr_iter(b'"', unread).count() % 2 == 1;
            seen = plain.len();
            let tag = bytes[k] == b'<';
            let close = bytes.get(k + 1) == Some(&b'/');
            let name = &bytes[k + 1 + usize::from(close)..k + len];
            let block = [&b"pre"[..], b"code"].iter().any(|w| {
                name.len() >= w.len()
                    && name[..w.len()].eq_ignore_ascii_case(w)
                    && name
                        .get(w.len())
                        .is_none_or(|&c| matches!(c, b'>' | b' ' | b'\t'))
            });
            if tag && block {
                element = if close {
                    element.saturating_sub(1)
                } else {
                    element + 1
                };
            }
            let line_tag = [&b"br"[..], b"p", b"div", b"li"].iter().any(|w| {
                name.len() >= w.len()
                    && name[..w.len()].eq_ignore_ascii_case(w)
                    && name
                        .get(w.len())
                        .is_none_or(|&c| matches!(c, b'>' | b' ' | b'\t' | b'/'))
            });
            // A line-level tag that ends its line already (`…<br>` NEWLINE) is that one break.
            if line_tag && matches!(bytes.get(k + len), Some(b'\n' | b'\r')) {
                plain.push(b'\n');
                at.push(k);
                k += len + 1 + usize::from(bytes[k + len..].starts_with(b"\r\n"));
                continue;
            }
            if !tag || block || line_tag || element > 0 && !quoted {
                plain.push(b);
                at.push(k);
                k += len;
                continue;
            }
        }
        // `\u00e9`, `\ud83d\ude00`: JSON's escape of any other character.
        if let Some((c, len)) = unicode_escape(bytes, k).filter(|_| inside) {
            let mut utf8 = [0u8; 4];
            for &b in c.encode_utf8(&mut utf8).as_bytes() {
                plain.push(b);
                at.push(k);
            }
            k += len;
            continue;
        }
        if inside && bytes[k] == b'\'' && bytes[k + 1..].starts_with(b"\\''") {
            plain.push(b'\'');
            at.push(k);
            k += 4;
            continue;
        }
        let decoded = match (bytes[k], bytes.get(k + 1)) {
            _ if !inside => None,
            // Helm's `--set` escapes a comma inside a value (`a\,b`).
            (b'\\', Some(b',')) if document => Some(b','),
            (b'\\', Some(b'n')) => Some(b'\n'),
            (b'\\', Some(b'r')) => Some(b'\r'),
            (b'\\', Some(b't')) => Some(b'\t'),
            // A value's own escaped quote stays escaped: decoded, it would close the value.
            (b'\\', Some(b'"')) if !document => None,
            // A shell's, Kotlin's or PHP's escaped `$` (`"\$6\$salt\$…"`) is a dollar.
            (b'\\', Some(&c @ (b'"' | b'\'' | b'\\' | b'/' | b'$'))) => Some(c),
            _ => None,
        };
        at.push(k);
        if let Some(c) = decoded {
            plain.push(c);
            k += 2;
        } else {
            plain.push(bytes[k]);
            k += 1;
        }
    }
    at.push(bytes.len());
    // Escapes decode to whole characters and every other byte is copied: still UTF-8.
    String::from_utf8(plain).ok().map(|p| (p, at))
}

/// The parts of `text` to read a second time, decoded, each with its bytes' offsets in `text`
/// and its end: each word encoded for a URL or a form body (`note=my+token%3A+…%0Apassword%3D…`:
/// one holding a percent escape of punctuation, a blank or a character outside ASCII; its `+` a
/// blank and its own `&` a line break between fields), and the text of each field quoted with
/// its quotes doubled inside (a CSV file's field, SQL's, C#'s verbatim and PowerShell's strings:
/// `7,"token = ""Tq8…""",x`, each doubled quote read as one) or spanning lines (a CSV cell, PHP's
/// serialized `s:9:"…"`). A field opens after a line's start, a blank or a separator (`,` `;`
/// `:` `(` `=` `@`), not at a
/// triple quote (a docstring), and closes at a lone quote before a separator or a blank. One
/// search finds the quotes and the `%`; only the parts found are read again.
pub(crate) fn second_readings(text: &str) -> Readings {
    let bytes = text.as_bytes();
    let mut out = Readings::default();
    // The open field of each quote (`"`, `'`): where it opened and whether a doubled quote was
    // seen in it; each kind is read on its own.
    let mut open: [Option<(usize, bool)>; 2] = [None, None];
    let mut k = 0;
    while let Some(p) = find_any_of_three(b'"', b'\'', b'%', &bytes[k..]) {
        let at = k + p;
        let q = bytes[at];
        k = at + 1;
        if q == b'%' {
            if percent_escape(bytes, at).is_some() {
                let start = at - run_back(&bytes[..at], |b| !b.is_ascii_whitespace());
                k = run_end(bytes, at, |b| !b.is_ascii_whitespace());
                let mark = out.begin(bytes, start);
                decoded(bytes, start, k, b'%', &mut out.plain, &mut out.at);
                out.finish(mark, k);
            }
            continue;
        }
        let open = &mut open[usize::from(q == b'\'')];
        let doubled = bytes.get(at + 1) == Some(&q);
        match *open {
            Some((o, _)) if doubled => {
                *open = Some((o, true));
                k = at + 2;
            }
            Some((o, seen)) => {
                *open = None;
                let closes = bytes
                    .get(at + 1)
                    .is_none_or(|&b| matches!(b, b',' | b';' | b')' | b'\t' | b'\n' | b'\r' | b' '));
                // A string that spans lines after a separator (a CSV row's cell, an argument, C#'s
                // verbatim `@"`, PHP's serialized `s:9:"`) quotes a document: its first line
                // starts after the quote. One after a blank is more often prose's quotation.
                let document = || {
                    (matches!(bytes[o - 1], b',' | b'\t' | b';' | b'(' | b'@')
                        || bytes[o - 1] == b':' && o > 1 && bytes[o - 2].is_ascii_digit())
                        && find_byte(b'\n', &bytes[o..at]).is_some()
                };
                if closes && (seen || o > 0 && document()) {
                    let mark = out.begin(bytes, o);
                    field_text(bytes, o, at, &mut out.plain, &mut out.at);
                    out.finish(mark, at);
                }
            }
            None if doubled => {
                // An empty string or a triple quote: nothing opens.
                k = run_end(bytes, at, |b| b == q);
            }
            None => {
                let opens = at == 0
                    || matches!(
                        bytes[at - 1],
                        b',' | b';' | b':' | b'(' | b'=' | b'@' | b'\t' | b'\n' | b' '
                    );
                if opens {
                    *open = Some((at, false));
                }
            }
        }
    }
    out.at.push(out.end);
    out
}

/// The parts of a text read a second time, decoded: their bytes one after another in `plain`,
/// each after a blank when it starts on the line where the one before it ended and after a line
/// break otherwise; each byte's offset in the text (a separator's that of the end of the part
/// before it), and the end; and each part's range in `plain`.
#[derive(Default)]
pub(crate) struct Readings {
    pub(crate) plain: Vec<u8>,
    pub(crate) at: Vec<usize>,
    pub(crate) parts: Vec<std::ops::Range<usize>>,
    /// The end in the text of the last part.
    end: usize,
}

impl Readings {
    /// Puts the separator before a part starting at `start` in the text; the lengths to go back
    /// to if the part is dropped.
    fn begin(&mut self, bytes: &[u8], start: usize) -> (usize, usize) {
        let mark = (self.plain.len(), self.at.len());
        if !self.parts.is_empty() {
            let same_line = self.end <= start && find_byte(b'\n', &bytes[self.end..start]).is_none();
            self.plain.push(if same_line { b' ' } else { b'\n' });
            self.at.push(self.end);
        }
        mark
    }

    /// Keeps the part decoded since `mark`, ending at `end` in the text, when it is UTF-8 text.
    fn finish(&mut self, mark: (usize, usize), end: usize) {
        let from = mark.0 + usize::from(!self.parts.is_empty());
        if std::str::from_utf8(&self.plain[from..]).is_ok() {
            self.parts.push(from..self.plain.len());
            self.end = end;
        } else {
            self.plain.truncate(mark.0);
            self.at.truncate(mark.1);
        }
    }
}

/// `text` decoded from MIME's quoted-printable (`password=3D…`, `=C3=A9`, a line cut by a soft
/// break `=` at its end), with each byte's offset in `text` and its end; `None` when that is no
/// UTF-8 text or nothing in it is an escape.
pub(crate) fn quoted_printable(text: &str) -> Option<(String, Vec<usize>)> {
    let mut plain = Vec::with_capacity(text.len());
    let mut at = Vec::with_capacity(text.len() + 1);
    decoded(text.as_bytes(), 0, text.len(), b'=', &mut plain, &mut at);
    at.push(text.len());
    // Nothing decoded: the text as it stands is the reading.
    if plain.len() == text.len() {
        return None;
    }
    String::from_utf8(plain).ok().map(|p| (p, at))
}

/// The byte a quoted-printable escape at `k` encodes (`=3D`, `=C3`, `=20`) when an encoder would
/// have written it: upper-case hex, and not a letter or digit, which an encoder leaves as they
/// are (`API_TOKEN=41x…` is no escape).
fn qp_escape(bytes: &[u8], k: usize) -> Option<u8> {
    let upper_hex = |b: u8| b.is_ascii_digit() || (b'A'..=b'F').contains(&b);
    match bytes.get(k..k + 3)? {
        &[b'=', h, l] if upper_hex(h) && upper_hex(l) => escaped_byte(h, l),
        _ => None,
    }
}

/// The byte two hex digits encode when an encoder would have escaped it: punctuation, a blank, a
/// control or a byte outside ASCII, not a letter or digit (which it leaves as they are).
fn escaped_byte(high: u8, low: u8) -> Option<u8> {
    let digit = |b: u8| (b as char).to_digit(16);
    let b = u8::try_from(digit(high)? * 16 + digit(low)?).ok()?;
    (!b.is_ascii_alphanumeric()).then_some(b)
}

/// Whether `bytes[from..to]` holds a quoted-printable escape or soft line break: a value read as
/// written there is the decoded reading's to judge (`password=3Dchangeme`).
pub(crate) fn holds_qp_escape(bytes: &[u8], from: usize, to: usize) -> bool {
    (from..to.min(bytes.len())).any(|k| {
        bytes[k] == b'=' && (qp_escape(bytes, k).is_some() || matches!(bytes.get(k + 1), Some(b'\n' | b'\r')))
    })
}

/// Whether the line `l` says the text below it is quoted-printable (a mail part's
/// `Content-Transfer-Encoding: quoted-printable`).
pub(crate) fn quoted_printable_header(l: &[u8]) -> bool {
    const HEADER: &[u8] = b"content-transfer-encoding: quoted-printable";
    l.get(..HEADER.len())
        .is_some_and(|h| h.eq_ignore_ascii_case(HEADER))
}

/// The byte a percent escape at `k` encodes when an encoder would have escaped it (punctuation,
/// a blank, a control or a byte outside ASCII: `%3D`, `%20`, `%0A`, `%E5`), not a letter or digit.
fn percent_escape(bytes: &[u8], k: usize) -> Option<u8> {
    let h = bytes.get(k + 1..k + 3)?;
    escaped_byte(h[0], h[1])
}

/// `bytes[start..end]` decoded, and each byte's offset and the end: percent escapes and a form's
/// `+` and `&` (and the `=` naming a field that holds lines) when `escape` is `%`;
/// quoted-printable's `=XX` (see [`qp_escape`]) and soft line breaks (`=` ending a line) when it
/// is `=`.
fn decoded(bytes: &[u8], start: usize, end: usize, escape: u8, plain: &mut Vec<u8>, at: &mut Vec<usize>) {
    let mut i = start;
    // Whether the current field of a query or form has had its name's `=`.
    let mut named = false;
    // Where the current `&`-delimited field's last encoded line break is, once looked for: each
    // field is searched once however many `?` and `=` it holds.
    let mut field: Option<Option<usize>> = None;
    while i < end {
        let (b, len) = match bytes[i] {
            b'%' if escape == b'%' => percent_escape(&bytes[..end], i).map_or((b'%', 1), |b| (b, 3)),
            b'+' if escape == b'%' => (b' ', 1),
            b'&' if escape == b'%' => {
                named = false;
                field = None;
                (b'\n', 1)
            }
            b'?' if escape == b'%' => {
                named = false;
                (b'?', 1)
            }
            // A field whose value holds an encoded line break is a document (`q=line%0Aline`):
            // its first line starts after the name.
            b'=' if escape == b'%' && !named => {
                named = true;
                let last_break = *field.get_or_insert_with(|| {
                    let to = find_byte(b'&', &bytes[i..end]).map_or(end, |p| i + p);
                    let last = bytes[i..to]
                        .windows(3)
                        .rposition(|w| w[0] == b'%' && w[1] == b'0' && matches!(w[2] | 0x20, b'a' | b'd'));
                    last.map(|p| i + p)
                });
                let document = last_break.is_some_and(|b| b > i);
                (if document { b'\n' } else { b'=' }, 1)
            }
            b'=' if escape == b'=' => {
                let soft = [&b"=\n"[..], b"=\r\n"]
                    .into_iter()
                    .find(|s| bytes[i..end].starts_with(s));
                if let Some(s) = soft {
                    i += s.len();
                    continue;
                }
                match qp_escape(&bytes[..end], i) {
                    Some(b) => (b, 3),
                    None => (b'=', 1),
                }
            }
            b => (b, 1),
        };
        plain.push(b);
        at.push(i);
        i += len;
    }
}

/// The text between the quotes at `open` and `close`, each doubled quote read as one, and each
/// byte's offset and its end.
fn field_text(bytes: &[u8], open: usize, close: usize, plain: &mut Vec<u8>, at: &mut Vec<usize>) {
    let q = bytes[open];
    let mut i = open + 1;
    while i < close {
        plain.push(bytes[i]);
        at.push(i);
        i += if bytes[i] == q { 2 } else { 1 };
    }
}

/// `text` read from the CSV field it is when a spreadsheet's cell is copied whole
/// (`"line one\nuse ""Tq8…"" here"`: quotes around it, each quote inside doubled), its quotes as
/// line breaks and each doubled quote as one, with each byte's offset in `text` as
/// [`unescaped`] gives it; `None` for any other text (most: a look at its first and last bytes).
pub(crate) fn csv_cell(text: &str) -> Option<(String, Vec<usize>)> {
    let bytes = text.as_bytes();
    let open = bytes.iter().position(|b| !b.is_ascii_whitespace())?;
    let close = bytes.iter().rposition(|b| !b.is_ascii_whitespace())?;
    if close < open + 2 || bytes[open] != b'"' || bytes[close] != b'"' {
        return None;
    }
    let inside = &bytes[open + 1..close];
    // Every quote inside doubled, and one at least (or a line break): a field, not a quotation.
    let mut k = 0;
    let mut doubled = find_byte(b'\n', inside).is_some();
    while let Some(p) = find_byte(b'"', &inside[k..]) {
        if inside.get(k + p + 1) != Some(&b'"') {
            return None;
        }
        doubled = true;
        k += p + 2;
    }
    if !doubled {
        return None;
    }
    let mut plain = Vec::with_capacity(bytes.len());
    let mut at = Vec::with_capacity(bytes.len() + 1);
    let mut k = 0;
    while k < bytes.len() {
        plain.push(if k == open || k == close { b'\n' } else { bytes[k] });
        at.push(k);
        k += if open < k && k < close && bytes[k] == b'"' {
            2
        } else {
            1
        };
    }
    at.push(bytes.len());
    String::from_utf8(plain).ok().map(|p| (p, at))
}

/// `text` with each document escaped onto one line read as its lines (or continued over lines: a
/// Java properties file's value, `key=line one\n\` then `    line two`): a PowerShell double-quoted
/// string holding an escaped line break (`"[db]`npassword = …`n"`: its escapes are backticks,
/// `` `n ``, `` `t ``, `` `" ``, `` `$ ``) and a tab-separated row's cell holding one (a database
/// client's batch output or `COPY`: `17<TAB>line one\nTOKEN=…<TAB>ok`, with `\n`, `\t`, `\\`).
/// The string's quotes and the cell's tabs are line breaks; each byte's offset in `text`, and the
/// end. `None` when there is none (most prompts: one search for a backtick or a backslash, each
/// line read once, only a line where one stands before an `n`).
pub(crate) fn line_escapes(text: &str) -> Option<(String, Vec<usize>)> {
    let bytes = text.as_bytes();
    let mut docs: Vec<Document> = Vec::new();
    let (mut k, mut line) = (0, 0);
    while let Some(p) = find_any_of_two(b'`', b'\\', &bytes[k..]) {
        let at = k + p;
        // A backslash escapes a line break only in a cell; a backtick a quote or a `$` too.
        if !matches!(
            (bytes[at], bytes.get(at + 1)),
            (_, Some(b'n')) | (b'`', Some(b'"' | b'$'))
        ) {
            k = at + 1;
            continue;
        }
        // The line's start is after the last line read: only the bytes between are searched.
        let start = rfind_byte(b'\n', &bytes[line..at]).map_or(line, |p| line + p + 1);
        let mut end = find_byte(b'\n', &bytes[at..]).map_or(bytes.len(), |e| at + e);
        if bytes[..end].ends_with(b"\\n\\") {
            // A value continued over lines, each ending with an escaped line break and a `\`
            // (a Java properties file's): one document to the last line continued.
            while end < bytes.len() && bytes[..end].ends_with(b"\\") {
                end = find_byte(b'\n', &bytes[end + 1..]).map_or(bytes.len(), |e| end + 1 + e);
            }
            docs.push(Document {
                from: start,
                to: end,
                escape: b'\\',
                lines: true,
            });
        } else {
            escaped_documents(bytes, start, end, &mut docs);
        }
        (k, line) = (end, end);
    }
    if docs.is_empty() {
        return None;
    }
    let mut plain = Vec::with_capacity(bytes.len());
    let mut at = Vec::with_capacity(bytes.len() + 1);
    let mut k = 0;
    for Document {
        from,
        to,
        escape,
        lines,
    } in docs
    {
        // The quote or tab opening a document of lines, and the one closing it, are line breaks.
        let open = from - usize::from(lines && from > k && matches!(bytes[from - 1], b'"' | b'\t'));
        plain.extend_from_slice(&bytes[k..open]);
        at.extend(k..open);
        if open < from {
            plain.push(b'\n');
            at.push(open);
        }
        k = from;
        while k < to {
            if escape == b'\\' && bytes[k] == b'\\' && bytes.get(k + 1) == Some(&b'\n') {
                // A line continued: its break and the next line's indentation are no text.
                k = run_end(bytes, k + 2, |b| b == b' ' || b == b'\t');
                continue;
            }
            at.push(k);
            let decoded = match (bytes[k] == escape).then(|| bytes.get(k + 1)).flatten() {
                Some(b'n') => Some(b'\n'),
                Some(b't') => Some(b'\t'),
                Some(b'r') => Some(b'\r'),
                Some(&c) if c == escape => Some(c),
                // A value's own escaped quote stays escaped: decoded, it would close the value.
                Some(b'"') if escape == b'`' && !lines => None,
                Some(&c @ (b'"' | b'\'' | b'$')) if escape == b'`' => Some(c),
                _ => None,
            };
            plain.push(decoded.unwrap_or(bytes[k]));
            k += if decoded.is_some() { 2 } else { 1 };
        }
        if lines && bytes.get(to).is_some_and(|&b| b == b'"' || b == b'\t') {
            plain.push(b'\n');
            at.push(to);
            k = to + 1;
        }
    }
    plain.extend_from_slice(&bytes[k..]);
    at.extend(k..=bytes.len());
    // Escapes decode to ASCII and every other byte is copied: still UTF-8.
    String::from_utf8(plain).ok().map(|p| (p, at))
}

/// A string or a cell escaped onto one line: its text `[from, to)`, its escape byte, and whether
/// it holds lines (its quotes or tabs are line breaks) or is a value (its quotes stay).
struct Document {
    from: usize,
    to: usize,
    escape: u8,
    lines: bool,
}

/// The documents escaped onto the line `[start, end)` (see [`line_escapes`]), pushed to `docs`
/// in order: each PowerShell double-quoted string holding a `` `n `` (a backtick escapes the byte
/// after it, a quote too), and when the line is a tab-separated row (a tab after its text
/// starts, not its indentation) each cell holding a `\n` (a backslash escapes the byte after it).
fn escaped_documents(bytes: &[u8], start: usize, end: usize, docs: &mut Vec<Document>) {
    let first = docs.len();
    // The open string; its escaped line breaks, the backtick's and the backslash's; its escaped
    // quotes; and whether it holds any backtick's escape at all.
    let (mut open, mut breaks, mut quotes, mut escaped, mut i) = (None, (0, 0), 0, false, start);
    // Only a line holding a backtick is read for PowerShell's strings, from one of its
    // backticks, quotes or backslashes to the next.
    if find_byte(b'`', &bytes[start..end]).is_none() {
        i = end;
    }
    while let Some(p) = find_any_of_three(b'`', b'"', b'\\', &bytes[i.min(end)..end]) {
        i += p;
        match bytes[i] {
            b'`' if open.is_some() => {
                let after = bytes.get(i + 1).copied();
                // A backtick after a blank or the string's quote opens a Markdown code span
                // (`"run `npm ci` first"`): an escaped line break or `$` follows a word. Escaped
                // quotes count in pairs (`` `"password`" ``), not one (`` `"msg": "…"` ``).
                quotes += usize::from(after == Some(b'"'));
                if !(open == Some(i - 1) || matches!(bytes[i - 1], b' ' | b'\t')) {
                    breaks.0 += usize::from(after == Some(b'n'));
                    escaped |= matches!(after, Some(b'n' | b'$' | b'`'));
                }
                i += 1;
            }
            // Outside a string a backtick escapes the byte after it too: `` `" `` opens no
            // string (nor does a Markdown code span's quote: `` `"msg": "…"` ``).
            b'`' => i += 1,
            b'\\' if open.is_some() => breaks.1 += usize::from(bytes.get(i + 1) == Some(&b'n')),
            b'"' => match open.take() {
                // A string whose line breaks are escaped by backslashes is JSON's or code's
                // (`"`${url}`\n"`), not PowerShell's. Escaped quotes in pairs quote words inside
                // it (`"{`"password`": `"…`"}"`): it holds a document too.
                Some(o) if (escaped || quotes >= 2 && quotes % 2 == 0) && breaks.1 <= breaks.0 => {
                    docs.push(Document {
                        from: o + 1,
                        to: i,
                        escape: b'`',
                        lines: breaks.0 > 0 || quotes >= 2 && quotes % 2 == 0,
                    })
                }
                Some(_) => {}
                None => (open, breaks, quotes, escaped) = (Some(i), (0, 0), 0, false),
            },
            _ => {}
        }
        i += 1;
    }
    if let Some(o) = open.filter(|_| breaks.0 > breaks.1) {
        docs.push(Document {
            from: o + 1,
            to: end,
            escape: b'`',
            lines: true,
        });
    }
    if docs.len() > first {
        return;
    }
    let text = run_end(&bytes[..end], start, |b| b == b' ' || b == b'\t');
    if find_byte(b'\t', &bytes[text..end]).is_none() {
        return;
    }
    let mut cell = text;
    while cell < end {
        let close = find_byte(b'\t', &bytes[cell..end]).map_or(end, |t| cell + t);
        // A `\n` inside a double-quoted string is that string's (JSON's, code's), not the cell's.
        let (mut quoted, mut i) = (false, cell);
        while let Some(p) = find_any_of_two(b'\\', b'"', &bytes[i..close]) {
            i += p;
            if bytes[i] == b'"' {
                quoted = !quoted;
            } else if !quoted && bytes.get(i + 1) == Some(&b'n') {
                docs.push(Document {
                    from: cell,
                    to: close,
                    escape: b'\\',
                    lines: true,
                });
                break;
            } else {
                i += 1;
            }
            i = (i + 1).min(close);
        }
        cell = close + 1;
    }
}

/// `bytes` with each Markdown table cell that a `<br>` breaks (a config pasted in an issue's
/// table: `| 2 | [db]<br>password = … |`) read as lines of its own: its bars line breaks and its
/// escaped bars (`\|`) bars, with each byte's offset; `None` when no row has such a cell.
fn table_cells(bytes: &[u8]) -> Option<(String, Vec<usize>)> {
    find_ci(bytes, 0, b"<br")?;
    // The bars to read as line breaks and the escaping backslashes to drop, in order.
    let (mut breaks, mut drops) = (Vec::new(), Vec::new());
    let mut line = 0;
    while line < bytes.len() {
        let end = find_byte(b'\n', &bytes[line..]).map_or(bytes.len(), |p| line + p);
        let l = &bytes[line..end];
        let lead = run_end(l, 0, |b| b == b' ' || b == b'\t');
        if l.get(lead) == Some(&b'|') && find_ci(l, lead, b"<br").is_some() {
            let mut bar = lead;
            let mut k = lead + 1;
            let mut escaped = Vec::new();
            while k < l.len() {
                match l[k] {
                    b'\\' if l.get(k + 1) == Some(&b'|') => {
                        escaped.push(line + k);
                        k += 2;
                        continue;
                    }
                    b'|' => {
                        if find_ci(&l[..k], bar, b"<br").is_some() {
                            breaks.extend([line + bar, line + k]);
                            drops.append(&mut escaped);
                        }
                        (bar, k) = (k, k + 1);
                        escaped.clear();
                        continue;
                    }
                    _ => {}
                }
                k += 1;
            }
        }
        line = end + 1;
    }
    if breaks.is_empty() {
        return None;
    }
    // A bar between two broken cells closes one and opens the next.
    breaks.dedup();
    let mut plain = Vec::with_capacity(bytes.len());
    let mut at = Vec::with_capacity(bytes.len() + 1);
    let (mut b, mut d) = (breaks.iter().peekable(), drops.iter().peekable());
    for (k, &c) in bytes.iter().enumerate() {
        if d.next_if(|&&p| p == k).is_some() {
            continue;
        }
        plain.push(if b.next_if(|&&p| p == k).is_some() {
            b'\n'
        } else {
            c
        });
        at.push(k);
    }
    at.push(bytes.len());
    String::from_utf8(plain).ok().map(|p| (p, at))
}

/// Whether `bytes` is one JSON object or array, blanks around it.
fn json_document(bytes: &[u8]) -> bool {
    let t = bytes.trim_ascii();
    matches!(
        (t.first(), t.last()),
        (Some(b'{'), Some(b'}')) | (Some(b'['), Some(b']'))
    )
}

/// Whether the string `[open, close]` of a JSON document holds text of its own lines: an item of
/// an array (`["line one", "line two"]`), or a member's value holding a blank under a key that
/// names no secret (`"msg": "my password: …"`; under `"password"` it is that key's value).
fn json_text(bytes: &[u8], key: (usize, usize), open: usize, close: usize) -> bool {
    let before = bytes[..open].trim_ascii_end();
    let after = bytes[close + 1..].trim_ascii_start();
    match before.last() {
        Some(b'[' | b',') => matches!(after.first(), Some(b',' | b']')),
        Some(b':') => {
            before[..before.len() - 1].trim_ascii_end().len() == key.1 + 1
                && key.1 > key.0
                && !may_hold_secret_word(&bytes[key.0 + 1..key.1])
                && bytes[open + 1..close].contains(&b' ')
        }
        _ => false,
    }
}

/// Whether only a comma (or a `+`) and blanks stand between a string closing at `close` and one
/// opening at `open`: two items of one array, or two literals joined (`"…\n" +`); or only
/// blanks holding a line break: two literals on lines of their own, which C and Python join.
fn array_items(bytes: &[u8], close: usize, open: usize) -> bool {
    let between = &bytes[close + 1..open];
    // The test that stops at the first other byte comes first: the next string may be far.
    between.iter().all(|&b| joining(b))
        && match between.iter().filter(|&&b| matches!(b, b',' | b'+')).count() {
            0 => between.contains(&b'\n'),
            n => n == 1,
        }
}

/// A byte that may stand between two items of an array of lines (see [`array_items`]).
fn joining(b: u8) -> bool {
    matches!(b, b',' | b'+') || b.is_ascii_whitespace()
}

/// The opening of an XML CDATA section (`]]>` closes it).
const CDATA: &[u8] = b"<![CDATA[";

/// What HTML markup at `k` reads as, and its length: an entity its character (`&quot;`, `&#39;`,
/// `&lt;`, `&gt;`, `&amp;`, `&#10;`), a tag (`<code>`, `</pre>`) a line break.
pub(crate) fn html_markup(bytes: &[u8], k: usize) -> Option<(u8, usize)> {
    // A line break written as a character reference is one (an attribute's value holding a
    // document: `value="[db]&#10;password = …"`).
    const ENTITIES: [(&[u8], u8); 14] = [
        (b"&quot;", b'"'),
        (b"&#34;", b'"'),
        (b"&#x22;", b'"'),
        (b"&#10;", b'\n'),
        (b"&#xA;", b'\n'),
        (b"&#xa;", b'\n'),
        (b"&#13;", b'\r'),
        (b"&#xD;", b'\r'),
        (b"&#39;", b'\''),
        (b"&#x27;", b'\''),
        (b"&apos;", b'\''),
        (b"&lt;", b'<'),
        (b"&gt;", b'>'),
        (b"&amp;", b'&'),
    ];
    match bytes[k] {
        b'&' => ENTITIES
            .iter()
            .find(|(e, _)| bytes[k..].starts_with(e))
            .map(|&(e, c)| (c, e.len())),
        b'<' => {
            let name = k + 1 + usize::from(bytes.get(k + 1) == Some(&b'/'));
            let end = run_end_max(bytes, name, 64, |b| b != b'>' && b != b'<' && b != b'\n');
            (bytes.get(name).is_some_and(u8::is_ascii_alphabetic) && bytes.get(end) == Some(&b'>'))
                .then_some((b'\n', end + 1 - k))
        }
        _ => None,
    }
}

/// The character a JSON `\uXXXX` escape at `k` stands for (a surrogate pair read as one), and
/// the escape's length.
pub(crate) fn unicode_escape(bytes: &[u8], k: usize) -> Option<(char, usize)> {
    let unit = |k: usize| {
        let hex = bytes.get(k..k + 6).filter(|h| h.starts_with(b"\\u"))?;
        u32::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()
    };
    let high = unit(k)?;
    if (0xD800..0xDC00).contains(&high) {
        let low = unit(k + 6).filter(|l| (0xDC00..0xE000).contains(l))?;
        let c = char::from_u32(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))?;
        return Some((c, 12));
    }
    Some((char::from_u32(high)?, 6))
}

/// Where the text after a line's marker starts (`None` for no marker): a block commented out
/// line by line (`# `, `// `, SQL's `-- `), framed by a box's side (`│ `) or typed after a
/// terminal's prompt (`$ `). Out of the per-line loop: most lines open with none.
#[inline(never)]
fn marker_end(l: &[u8]) -> Option<usize> {
    if let Some(rest) = l.strip_prefix(b"In [").or_else(|| l.strip_prefix(b"Out[")) {
        // IPython's numbered prompt (`In [7]: `, `Out[7]: `).
        let digits = run_end(rest, 0, |b| b.is_ascii_digit());
        return (digits > 0 && rest[digits..].starts_with(b"]: ")).then(|| l.len() - rest.len() + digits + 2);
    }
    if let Some(rest) = l.strip_prefix(b"---->") {
        // IPython's arrow at a traceback's failing line, and its number (`----> 3 conn = …`).
        let s = run_end(rest, 0, |b| b == b' ');
        let d = run_end(rest, s, |b| b.is_ascii_digit());
        return (s > 0 && d > s && rest.get(d) == Some(&b' ')).then_some(5 + d);
    }
    // A REPL's continuation (Python's `... `, IPython's `...: `) and a shell's nested trace (`++ `).
    [
        &b"# "[..],
        b"// ",
        b"-- ",
        b"$ ",
        "│ ".as_bytes(),
        b"...: ",
        b"... ",
        b"++ ",
    ]
    .into_iter()
    .find(|m| l.starts_with(m))
    .map(|m| m.len() - 1)
}

/// Where the line's text starts after `git blame`'s prefix: the commit (`a1b2c3d4`, `^a1b2c3d`
/// for a boundary), perhaps a file, then the author, the date and the line's number in brackets
/// (`a1b2c3d4 (Dana Whitfield 2026-11-30 10:12:01 +0100 12) `). `None` for any other line.
fn blame_end(l: &[u8]) -> Option<usize> {
    let hash = run_end(
        l,
        usize::from(l[0] == b'^'),
        |b| matches!(b, b'0'..=b'9' | b'a'..=b'f'),
    );
    if !(7..=40).contains(&hash) || l.get(hash) != Some(&b' ') {
        return None;
    }
    let head = &l[..l.len().min(hash + 160)];
    let open = hash + find_byte(b'(', &head[hash..])?;
    let close = open + find_byte(b')', &head[open..])?;
    let number = run_back(&head[..close], |b| b.is_ascii_digit());
    (number > 0 && head[..close - number].ends_with(b" ") && contains_date(&head[open..close]))
        .then(|| close + 1 + usize::from(head.get(close + 1) == Some(&b' ')))
}

/// Whether `v` opens with a clock's minutes (`42` in `10:42`, `10:42:01`, `10:42 am`).
fn clock_minutes(v: &[u8]) -> bool {
    v.len() >= 2 && v[..2].iter().all(u8::is_ascii_digit) && !v.get(2).is_some_and(u8::is_ascii_alphanumeric)
}

/// Whether `v` holds an ISO date (`2026-11-30`).
fn contains_date(v: &[u8]) -> bool {
    v.windows(10).any(crate::chars::iso_date)
}

/// Where a syslog line's message starts (`Dec  7 09:12:01 web-01 app[2231]: `, as journalctl
/// and `/var/log/syslog` print it): a month, a day, a time, a host, then a tag ending with `:`.
/// `None` for any other line.
fn syslog_prefix_end(l: &[u8]) -> Option<usize> {
    const MONTHS: [&[u8]; 12] = [
        b"Jan ", b"Feb ", b"Mar ", b"Apr ", b"May ", b"Jun ", b"Jul ", b"Aug ", b"Sep ", b"Oct ", b"Nov ",
        b"Dec ",
    ];
    if !MONTHS.iter().any(|m| l.starts_with(m)) {
        return None;
    }
    let day = run_end(l, 4, |b| b == b' ');
    let time = run_end(l, day, |b| b.is_ascii_digit()) + 1;
    let clock = l.get(time..time + 8)?;
    if !(1..=2).contains(&(time - 1 - day))
        || l[time - 1] != b' '
        || !clock
            .iter()
            .enumerate()
            .all(|(k, &b)| if k % 3 == 2 { b == b':' } else { b.is_ascii_digit() })
        || l.get(time + 8) != Some(&b' ')
    {
        return None;
    }
    let host = run_end_max(l, time + 9, 64, |b| !b.is_ascii_whitespace());
    let tag = run_end_max(l, host + 1, 96, |b| !b.is_ascii_whitespace());
    // A tag that names a secret (`password: …`) is the message, as a logger's is.
    (l.get(host) == Some(&b' ') && l[..tag].ends_with(b":") && l.get(tag) == Some(&b' ')).then(|| {
        if may_hold_secret_word(&l[host + 1..tag]) {
            host + 1
        } else {
            tag + 1
        }
    })
}

/// Where a log line's message starts, after its time, its level and its logger
/// (`2026-12-07 10:42:01,037 INFO  [main] c.a.Loader - `, `2026-12-07T10:42:01Z DEBUG `, Android's
/// `06-12 10:22:31.000  4312  4330 D ConfigLoader: `): `None` when the line opens with no time
/// and level. A logger is read as one only when it names no secret (`password: …` is the message).
pub(crate) fn log_prefix_end(l: &[u8]) -> Option<usize> {
    let digits = |k: usize, n: usize| l.get(k..k + n).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    let mut k = usize::from(l.first() == Some(&b'['));
    if !digits(k, 2) {
        return None;
    }
    // The date: `2026-12-07`, `2026/12/07` or a month and a day (`06-12`), then `T` or a blank.
    if digits(k, 4) && matches!(l.get(k + 4), Some(b'-' | b'/')) && digits(k + 5, 2) && digits(k + 8, 2) {
        k += 10;
    } else if l.get(k + 2) == Some(&b'-') && digits(k + 3, 2) {
        k += 5;
    }
    // A whole date and time in ISO's form (`2026-12-07T10:42:01.1234567Z`) may stand alone
    // before the message, as a CI runner's or `docker logs --timestamps`' lines do.
    let iso = k == 10 && l.get(k) == Some(&b'T');
    if k > 1 && matches!(l.get(k), Some(b'T' | b' ')) {
        k += 1;
    }
    // The time: `10:42:01`, a fraction, a zone.
    if !(digits(k, 2) && l.get(k + 2) == Some(&b':') && digits(k + 3, 2) && l.get(k + 5) == Some(&b':')) {
        return None;
    }
    k = run_end(l, k + 6, |b| {
        b.is_ascii_digit() || matches!(b, b'.' | b',' | b'Z' | b'+' | b':')
    });
    if l[0] == b'[' {
        k += usize::from(l.get(k) == Some(&b']'));
    }
    let time_end = k;
    // Process and thread numbers (Android's), then the level, perhaps in brackets.
    k = run_end(l, k, |b| b == b' ' || b == b'\t' || b.is_ascii_digit());
    let open = usize::from(l.get(k) == Some(&b'['));
    let word = run_end(l, k + open, |b| b.is_ascii_uppercase());
    let level = &l[k + open..word];
    const LEVELS: [&[u8]; 13] = [
        b"TRACE", b"DEBUG", b"INFO", b"NOTICE", b"WARN", b"WARNING", b"ERROR", b"FATAL", b"V", b"D", b"I",
        b"W", b"E",
    ];
    if !LEVELS.contains(&level) {
        return (iso && l.get(time_end) == Some(&b' ')).then(|| time_end + 1);
    }
    k = word + usize::from(open == 1 && l.get(word) == Some(&b']'));
    if !matches!(l.get(k), Some(b' ' | b'\t' | b':')) {
        return None;
    }
    k = run_end(l, k, |b| matches!(b, b' ' | b'\t' | b':'));
    // A thread in brackets, then a logger ending with `: ` or followed by ` - `.
    if l.get(k) == Some(&b'[') {
        k = run_end_max(l, k, 64, |b| b != b']') + 1;
        k = run_end(l, k.min(l.len()), |b| b == b' ');
    }
    let name = run_end_max(l, k, 96, |b| !b.is_ascii_whitespace());
    let logger = if l[k..name].ends_with(b":") && l.get(name) == Some(&b' ') {
        Some(name + 1)
    } else if l[name..].starts_with(b" - ") {
        Some(name + 3)
    } else {
        None
    };
    Some(match logger {
        Some(end) if !may_hold_secret_word(&l[k..name]) => end,
        _ => k,
    })
}

/// Where the text of a line quoting a file starts, after the file's location and the prefix
/// before it (`2024-03-02T10:14:07Z DEBUG sync[22]: etc/app.ini:3: `, `src/a.py:12:4: `), or
/// the message of an error after its name (`ValueError: `): `None` when the line's first 200
/// bytes hold neither.
pub(crate) fn location_end(l: &[u8]) -> Option<usize> {
    let head = &l[..l.len().min(200)];
    let mut from = 0;
    // grep's `-rn` glues the line to its location (`src/app/notes.txt:7:…`): a location holding
    // a folder and no blank (a host before a port holds none: `db.internal:5432:prod:…`), its
    // line's number not followed by a column's (`src/a.py:12:4: …` ends after the column).
    // Whether a `/` and a blank stand before the colon, read up to `seen` only at a colon after
    // a digit or an error's last letter, the only ones that may end a location.
    let (mut folder, mut blank, mut seen) = (false, false, 0);
    while let Some(k) = find_byte(b':', &head[from..]) {
        let c = from + k;
        from = c + 1;
        if c == 0 || !matches!(head[c - 1], b'0'..=b'9' | b'n' | b'r') {
            continue;
        }
        folder |= head[seen..c].contains(&b'/');
        blank |= head[seen..c].contains(&b' ');
        seen = c;
        let column = run_end(head, c + 1, |b| b.is_ascii_digit());
        let glued = folder
            && !blank
            && head.get(c + 1) != Some(&b' ')
            && !(column > c + 1 && head.get(column) == Some(&b':'));
        if (head.get(c + 1) == Some(&b' ') || glued)
            && match head[c - 1] {
                b'0'..=b'9' => location_prefix(&head[..=c]),
                b'n' | b'r' => error_name(&head[..c]) && !glued,
                _ => false,
            }
        {
            return Some(c + 1 + usize::from(!glued));
        }
    }
    None
}

/// Whether `before` ends with the name of an error whose message follows (`ValueError`,
/// `java.lang.IllegalStateException`, `Caused by: …Exception`): the message is a line's text, as
/// a stack trace prints it.
fn error_name(before: &[u8]) -> bool {
    if !before.ends_with(b"Exception") && !before.ends_with(b"Error") {
        return false;
    }
    let name = before
        .rsplit(|&b| b == b' ' || b == b'\t')
        .next()
        .unwrap_or(before);
    name.first().is_some_and(u8::is_ascii_alphabetic)
        && name
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'$'))
}

/// Whether `before` ends with a file's location as grep, compilers and log lines quote one
/// (`config/app.ini:3:`, `src/settings.py:12:4:`): what follows is that file's line.
pub(crate) fn location_prefix(before: &[u8]) -> bool {
    let Some(mut rest) = before.strip_suffix(b":") else {
        return false;
    };
    let mut numbers = 0;
    loop {
        let digits = rest.iter().rev().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 || digits > 7 {
            break;
        }
        let head = &rest[..rest.len() - digits];
        let Some(head) = head.strip_suffix(b":") else {
            return false;
        };
        rest = head;
        numbers += 1;
        if numbers == 2 {
            break;
        }
    }
    let path = rest.rsplit(|b| b.is_ascii_whitespace()).next().unwrap_or(rest);
    numbers > 0
        && path.len() > 2
        && path.contains(&b'.')
        && path
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'/' | b'\\' | b'_' | b'-'))
}

/// The title of the column `at` stands in, when lines are a table aligned with blanks as command
/// lines print them (`NAME   DIGEST   CREATED AT` over its rows): the word of the nearest header
/// line above (capitals, words apart by two blanks or more) that starts at `at`'s column, where
/// `at` follows a gap of two blanks. Looks back over a bounded window only.
pub(crate) fn column_title(bytes: &[u8], at: usize) -> Option<&[u8]> {
    // The gap first: a value after anything else (most values, every word of a long line of
    // prose) costs no reading back.
    if at < 3 || &bytes[at - 2..at] != b"  " {
        return None;
    }
    let floor = at.saturating_sub(4096);
    let line_start = |end: usize| rfind_byte(b'\n', &bytes[floor..end]).map_or(floor, |p| floor + p + 1);
    let start = line_start(at);
    let col = at - start;
    if col < 3 {
        return None;
    }
    let mut end = start;
    for _ in 0..32 {
        if end <= floor {
            return None;
        }
        let ls = line_start(end - 1);
        let line = &bytes[ls..end - 1];
        end = ls;
        let header = line.iter().any(u8::is_ascii_uppercase)
            && line
                .iter()
                .all(|&b| b.is_ascii_uppercase() || b.is_ascii_digit() || matches!(b, b' ' | b'_' | b'-'))
            && line.windows(2).any(|w| w == b"  ");
        if !header {
            continue;
        }
        if line.len() <= col || line[col] == b' ' || &line[col - 2..col] != b"  " {
            return None;
        }
        return Some(&line[col..run_end(line, col, |b| b != b' ')]);
    }
    None
}

/// `text` with its hard-wrapped lines rejoined, with each byte's offset in `text` and its end;
/// `None` when no line says the text was wrapped. A prompt pasted from a terminal or an e-mail
/// whose long lines were cut at a fixed width (`fold -w 80`, a mail client's 72) has a token or a
/// `key=value` cut in two. The width is the text's longest line, in characters; a line was cut
/// there when it fills it (`fold -w`, a terminal: the cut anywhere, the line joined to the next
/// with nothing between), or when it ends after a blank and the next line's first word would not
/// have fitted after it (`fold -s`, a mail client: the blank is kept). Two such lines at least say
/// the text was wrapped. One pass over the line breaks; a line's characters are counted only when
/// its bytes may reach the width. When only the longest line was cut, the text rejoined is the
/// lines around the cut only (see [`CUT_CONTEXT`]).
pub(crate) fn unwrapped(text: &str) -> Option<Rejoined> {
    let bytes = text.as_bytes();
    // Most prompts are one line: nothing to measure.
    find_byte(b'\n', bytes)?;
    // The first pass only measures: the width, the first line filling it and whether another
    // line filling it differs from it (the same line again and again is a text repeated, not
    // one wrapped), and the lines ending after a blank (start, end, next line's start).
    let mut width = 0;
    let mut full: Option<(usize, usize, usize)> = None;
    let mut fills = 0;
    let mut differs = false;
    let mut blank: Vec<(usize, usize, usize)> = Vec::new();
    let mut start = 0;
    while start <= bytes.len() {
        let b = find_byte(b'\n', &bytes[start..]).map_or(bytes.len(), |p| start + p);
        let end = if b > start && bytes[b - 1] == b'\r' {
            b - 1
        } else {
            b
        };
        if end > start && end - start >= width {
            let n = characters(&bytes[start..end]);
            if n > width {
                (width, full, fills, differs) = (n, None, 0, false);
            }
            if n == width && word(bytes, b + 1) > 0 {
                fills += 1;
                match full {
                    None => full = Some((start, end, b + 1)),
                    Some((s, e, _)) => differs = differs || bytes[s..e] != bytes[start..end],
                }
            }
        }
        if end > start && bytes[end - 1] == b' ' {
            blank.push((start, end, b + 1));
        }
        start = b + 1;
    }
    if width < UNWRAP_MIN_WIDTH {
        return None;
    }
    let hard = width >= HARD_MIN_WIDTH && (fills == 1 || differs);
    blank.retain(|&(s, e, next)| {
        let w = word(bytes, next);
        w > 0 && characters(&bytes[s..e]) + characters(&bytes[next..next + w]) >= width
    });
    // A log whose lines open with a time (a CI runner's `2026-03-04T10:22:05.1234567Z`, the
    // longest line filling the width): a line before a time was not cut.
    let timed = full.is_some_and(|(_, _, next)| crate::chars::iso_date(&bytes[next.min(bytes.len())..]));
    // One line reaching the width is every text's longest line: only its cut inside a word (a
    // token cut in two) is read, not one before a word of its own (a test's `FAIL`, a log's
    // `ERROR` after a line ending in a token), and the caller keeps from that reading only a
    // token found across the cut.
    let alone = match (hard, fills, full, blank.len()) {
        (true, 1, Some((_, e, next)), 0)
            if !bytes[e - 1].is_ascii_whitespace() && !word_of_its_own(&bytes[next..]) && !timed =>
        {
            Some((e, random_tail(&bytes[next..])))
        }
        (true, 1, _, 0) | (false, _, _, 0 | 1) => return None,
        _ => None,
    };
    if let (Some(cut), Some((_, e, next))) = (alone, full) {
        // The one cut joins the line ending at `e` to the next, at `next`: the lines within
        // [`CUT_CONTEXT`] bytes of it, rejoined, are all that is read (a copy of the window,
        // not of the whole text).
        let lo = rfind_byte(b'\n', &bytes[..e.saturating_sub(CUT_CONTEXT)]).map_or(0, |p| p + 1);
        let from = next + CUT_CONTEXT.min(bytes.len() - next);
        let hi = find_byte(b'\n', &bytes[from..]).map_or(bytes.len(), |p| from + p);
        let mut plain = String::with_capacity(e - lo + hi - next);
        plain.push_str(&text[lo..e]);
        plain.push_str(&text[next..hi]);
        let at = (lo..e).chain(next..=hi).collect();
        return Some((plain, at, Some(cut)));
    }
    // The second pass, for a wrapped text only, rejoins each cut line to the next.
    let mut plain = Vec::with_capacity(bytes.len());
    let mut at = Vec::with_capacity(bytes.len() + 1);
    let mut from = 0;
    let mut start = 0;
    let mut soft = blank.iter().peekable();
    while let Some(p) = find_byte(b'\n', &bytes[start..]) {
        let b = start + p;
        let end = if b > start && bytes[b - 1] == b'\r' {
            b - 1
        } else {
            b
        };
        let filled = hard
            && end > start
            && characters(&bytes[start..end]) == width
            && word(bytes, b + 1) > 0
            && !(timed && crate::chars::iso_date(&bytes[b + 1..]));
        let after_blank = soft.next_if(|&&(s, _, _)| s == start).is_some();
        if filled || after_blank {
            plain.extend_from_slice(&bytes[from..end]);
            at.extend(from..end);
            from = b + 1;
        }
        start = b + 1;
    }
    plain.extend_from_slice(&bytes[from..]);
    at.extend(from..=bytes.len());
    String::from_utf8(plain).ok().map(|p| (p, at, alone))
}

/// A text with its cut lines rejoined: its bytes, each one's offset in the text and the end,
/// and, when only the longest line was cut, that cut's offset and whether the next line starts
/// as a random token's tail.
pub(crate) type Rejoined = (String, Vec<usize>, Option<(usize, bool)>);

/// How far around a lone cut line (see [`unwrapped`]) the rejoined text is read, in bytes: only
/// what is found across the cut counts, and a value that is starts and ends near it. The lines
/// holding the bytes that far from it on each side are read whole.
pub(crate) const CUT_CONTEXT: usize = 4096;

/// The length of the word starting at `at` (none past the end).
fn word(bytes: &[u8], at: usize) -> usize {
    let at = at.min(bytes.len());
    run_end(bytes, at, |b| !b.is_ascii_whitespace()) - at
}

/// The narrowest width a wrapped text is read rejoined at: a column of short lines of one length
/// (a table, a config's lines) is no wrapped paragraph. A line cut after a blank says more than
/// one that only fills the width, which short lines of a config do by chance.
const UNWRAP_MIN_WIDTH: usize = 30;
const HARD_MIN_WIDTH: usize = 40;

/// Whether `rest` starts with a word of four letters or more written as a word is (`FAIL`,
/// `done`, `Error`), not a random token's tail, which mixes cases or holds a digit.
fn word_of_its_own(rest: &[u8]) -> bool {
    let n = run_end(rest, 0, |b| b.is_ascii_alphanumeric());
    let word = &rest[..n];
    n >= 4
        && word.iter().all(u8::is_ascii_alphabetic)
        && (word[1..].iter().all(u8::is_ascii_lowercase) || word.iter().all(u8::is_ascii_uppercase))
}

/// Whether `rest` starts with what a random token's tail looks like: letters and digits mixed,
/// or cases mixed with capitals in a row (`t5y8nb`, `YkKTFzayJU`), not a word, a name, a number,
/// a date or a log's next field (`the`, `ValueError`, `2026-03-14T…`, `DEBUG=true`).
fn random_tail(rest: &[u8]) -> bool {
    let n = run_end(rest, 0, |b| b.is_ascii_alphanumeric());
    let run = &rest[..n];
    let digits = run.iter().any(u8::is_ascii_digit);
    let letters = run.iter().any(u8::is_ascii_alphabetic);
    // Words run together (`ValueError`) mix cases too, never two capitals in a row.
    let capitals = run
        .windows(2)
        .any(|w| w[0].is_ascii_uppercase() && w[1].is_ascii_uppercase());
    let cases = capitals && run.iter().any(u8::is_ascii_lowercase);
    digits && letters || cases
}

/// The characters in `bytes` (UTF-8): the bytes that start one.
fn characters(bytes: &[u8]) -> usize {
    if bytes.is_ascii() {
        return bytes.len();
    }
    bytes.iter().filter(|&&b| b & 0xC0 != 0x80).count()
}
