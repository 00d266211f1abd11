//! Byte-level reading shared by every layer: searches, runs, case-insensitive comparisons, line and
//! character boundaries. It knows nothing of secrets and must never judge a value.

/// The first `b` in `hay`. On x86-64 the SSE2 search is used directly: `memchr`'s default picks
/// its code with a CPU probe (`cpuid`, which a virtual machine traps: about 28 µs per process),
/// and SSE2 is part of x86-64 itself.
pub(crate) fn find_byte(b: u8, hay: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(one) = memchr::arch::x86_64::sse2::memchr::One::new(b) {
            return one.find(hay);
        }
    }
    memchr::memchr(b, hay)
}

/// The last `b` in `hay`, without the CPU probe (see [`find_byte`]).
pub(crate) fn rfind_byte(b: u8, hay: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(one) = memchr::arch::x86_64::sse2::memchr::One::new(b) {
            return one.rfind(hay);
        }
    }
    memchr::memrchr(b, hay)
}

/// Whether `f` holds at some position of `a` or `b` in `hay` (tried in order), without the CPU
/// probe (see [`find_byte`]).
pub(crate) fn any_of_two(a: u8, b: u8, hay: &[u8], f: impl FnMut(usize) -> bool) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(two) = memchr::arch::x86_64::sse2::memchr::Two::new(a, b) {
            return two.iter(hay).any(f);
        }
    }
    memchr::memchr2_iter(a, b, hay).any(f)
}

/// The first `a` or `b` in `hay`, without the CPU probe (see [`find_byte`]).
pub(crate) fn find_any_of_two(a: u8, b: u8, hay: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(two) = memchr::arch::x86_64::sse2::memchr::Two::new(a, b) {
            return two.find(hay);
        }
    }
    memchr::memchr2(a, b, hay)
}

/// The last `a` or `b` in `hay`, without the CPU probe (see [`find_byte`]).
pub(crate) fn rfind_any_of_two(a: u8, b: u8, hay: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(two) = memchr::arch::x86_64::sse2::memchr::Two::new(a, b) {
            return two.rfind(hay);
        }
    }
    memchr::memrchr2(a, b, hay)
}

/// The first of `a`, `b` or `c` in `hay`, without the CPU probe (see [`find_byte`]).
pub(crate) fn find_any_of_three(a: u8, b: u8, c: u8, hay: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(three) = memchr::arch::x86_64::sse2::memchr::Three::new(a, b, c) {
            return three.find(hay);
        }
    }
    memchr::memchr3(a, b, c, hay)
}

/// The first position of `needle` (lowercase ASCII, starting with a non-letter such as `<` or
/// `-`) at or after `from`, ignoring ASCII case.
pub(crate) fn find_ci(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
    let first = needle[0];
    let mut i = from;
    while i + needle.len() <= bytes.len() {
        // The first byte is not a letter, so a plain byte search finds the candidates.
        let k = find_byte(first, &bytes[i..=bytes.len() - needle.len()])?;
        i += k;
        if bytes[i..i + needle.len()].eq_ignore_ascii_case(needle) {
            return Some(i);
        }
        i += 1;
    }
    None
}

pub(crate) fn trim_end_of(v: &[u8], class: impl Fn(u8) -> bool) -> &[u8] {
    let n = v.iter().rev().take_while(|&&b| class(b)).count();
    &v[..v.len() - n]
}

/// The start of the line holding `i`.
pub(crate) fn line_start_of(bytes: &[u8], i: usize) -> usize {
    rfind_byte(b'\n', &bytes[..i]).map_or(0, |p| p + 1)
}

/// The text of the current line before `i` (at most 256 bytes).
pub(crate) fn line_before(bytes: &[u8], i: usize) -> &[u8] {
    let floor = i.saturating_sub(256);
    let start = rfind_byte(b'\n', &bytes[floor..i]).map_or(floor, |p| floor + p + 1);
    &bytes[start..i]
}

/// Where the fallback after an expression's `||`, `??`, `?:` or Python's `or` at `p` starts.
pub(crate) fn fallback_after(bytes: &[u8], p: usize) -> Option<usize> {
    let rest = bytes.get(p..)?;
    let len = if rest.starts_with(b"||") || rest.starts_with(b"??") || rest.starts_with(b"?:") {
        2
    } else if rest.starts_with(b"or ") {
        3
    } else {
        return None;
    };
    Some(skip_blank(bytes, p + len))
}

/// The end of the line containing `pos` (before its newline).
/// [`line_end`], looking at most `limit` bytes ahead: `None` for a longer line.
pub(crate) fn line_end_max(bytes: &[u8], pos: usize, limit: usize) -> Option<usize> {
    let stop = bytes.len().min(pos.saturating_add(limit));
    match find_byte(b'\n', &bytes[pos.min(stop)..stop]) {
        Some(p) => Some(pos + p),
        None => (stop == bytes.len()).then_some(stop),
    }
}

pub(crate) fn line_end(bytes: &[u8], pos: usize) -> usize {
    find_byte(b'\n', &bytes[pos.min(bytes.len())..]).map_or(bytes.len(), |p| pos + p)
}

pub(crate) fn word_class(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

pub(crate) fn b64url(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

pub(crate) fn b64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'='
}

pub(crate) fn hex(b: u8) -> bool {
    b.is_ascii_hexdigit()
}

/// The longest JWT segment looked at: ID and access tokens carry kilobytes of claims, and an
/// RS512 signature alone is 683 characters.
pub(crate) const MAX_SEGMENT: usize = 16 * 1024;

/// `v` in ASCII lowercase, in `buf` (empty when longer): matching it against lowercase words
/// compiles smaller than comparing each word ignoring case.
pub(crate) fn lower<'b>(v: &[u8], buf: &'b mut [u8; 16]) -> &'b [u8] {
    let Some(out) = buf.get_mut(..v.len()) else {
        return &[];
    };
    out.copy_from_slice(v);
    out.make_ascii_lowercase();
    out
}

/// Whether `bytes` ends with `lit`, ASCII case ignored.
pub(crate) fn ends_with_ci(bytes: &[u8], lit: &[u8]) -> bool {
    bytes.len() >= lit.len() && bytes[bytes.len() - lit.len()..].eq_ignore_ascii_case(lit)
}

/// How many bytes at the end of `bytes` are of `class`.
pub(crate) fn run_back(bytes: &[u8], class: impl Fn(u8) -> bool) -> usize {
    bytes.iter().rev().take_while(|&&b| class(b)).count()
}

/// The end of `lit` (given in lowercase) if it appears at `pos`, ignoring ASCII case.
pub(crate) fn eat_ci(bytes: &[u8], pos: usize, lit: &[u8]) -> Option<usize> {
    let end = pos.checked_add(lit.len())?;
    bytes.get(pos..end)?.eq_ignore_ascii_case(lit).then_some(end)
}

pub(crate) fn contains_ci(hay: &[u8], needle: &[u8]) -> bool {
    let Some(&first) = needle.first() else { return true };
    let Some(last) = hay.len().checked_sub(needle.len()) else {
        return false;
    };
    let (lower, upper) = (first.to_ascii_lowercase(), first.to_ascii_uppercase());
    // The first byte in either case is found by a vectorised search, and the needle compared
    // only there (lines and values are read for a dozen words each).
    let mut from = 0;
    while let Some(p) = find_any_of_two(lower, upper, &hay[from..=last]) {
        let k = from + p;
        if hay[k..k + needle.len()].eq_ignore_ascii_case(needle) {
            return true;
        }
        from = k + 1;
    }
    false
}

/// The end of the longest run of `class` bytes from `pos`.
pub(crate) fn run_end(bytes: &[u8], pos: usize, class: impl Fn(u8) -> bool) -> usize {
    let mut end = pos;
    while bytes.get(end).is_some_and(|&b| class(b)) {
        end += 1;
    }
    end
}

/// Like [`run_end`], but stops `limit` bytes after `pos`: rules that start anywhere must not each
/// scan the rest of the text, or a repetitive prompt would cost quadratic time.
pub(crate) fn run_end_max(bytes: &[u8], pos: usize, limit: usize, class: impl Fn(u8) -> bool) -> usize {
    let stop = bytes.len().min(pos.saturating_add(limit));
    let mut end = pos;
    while end < stop && class(bytes[end]) {
        end += 1;
    }
    end
}

/// `pos`, or the start of the character it falls inside: where a cut by byte count may end.
pub(crate) fn char_floor(bytes: &[u8], mut pos: usize) -> usize {
    while pos > 0 && bytes.get(pos).is_some_and(|&b| b & 0xC0 == 0x80) {
        pos -= 1;
    }
    pos
}

/// `pos`, or the end of the character it falls inside.
pub(crate) fn char_ceil(bytes: &[u8], mut pos: usize) -> usize {
    while bytes.get(pos).is_some_and(|&b| b & 0xC0 == 0x80) {
        pos += 1;
    }
    pos
}

/// Skips spaces and tabs (not newlines) from `pos`.
pub(crate) fn skip_blank(bytes: &[u8], pos: usize) -> usize {
    run_end(bytes, pos, |b| b == b' ' || b == b'\t')
}

/// [`skip_blank`], and the no-break spaces French typography puts around a colon (U+00A0,
/// U+202F): they are never part of a value.
pub(crate) fn skip_space(bytes: &[u8], mut pos: usize) -> usize {
    loop {
        pos = skip_blank(bytes, pos);
        let rest = &bytes[pos..];
        if rest.starts_with(b"\xc2\xa0") {
            pos += 2;
        } else if rest.starts_with(b"\xe2\x80\xaf") {
            pos += 3;
        } else {
            return pos;
        }
    }
}

pub(crate) fn trim_ascii(v: &[u8]) -> &[u8] {
    v.trim_ascii()
}

/// The character starting at byte `pos`; `None` at the end (or, defensively, off a boundary).
pub(crate) fn char_at(text: &str, pos: usize) -> Option<char> {
    text.get(pos..)?.chars().next()
}

pub(crate) fn word_at(text: &str, pos: usize) -> bool {
    char_at(text, pos).is_some_and(is_word)
}

/// Whether a token goes on at `pos`: an ASCII word byte or `-`. Other characters end it, so a
/// token glued to Chinese or Japanese text (`令牌ghp_…请检查`) is still whole.
pub(crate) fn token_continues_at(text: &str, pos: usize) -> bool {
    text.as_bytes()
        .get(pos)
        .is_some_and(|&b| b == b'-' || b == b'_' || b.is_ascii_alphanumeric())
}

/// `\w` for adjacency: Unicode alphanumerics and `_`.
pub(crate) fn is_word(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// JavaScript's `\s`, the set the original URL rule stopped at.
pub(crate) fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
    )
}

/// The last few short texts a pure check was asked about, and its answers: the readers of a line
/// judge the same value more than once (as an assignment's value, then as a keyword's), and the
/// long checks need not run again. Keyed on the text itself, never on where it lies.
pub(crate) struct Recent {
    texts: [[u8; Recent::MAX]; Recent::SLOTS],
    lens: [usize; Recent::SLOTS],
    answers: [bool; Recent::SLOTS],
    next: usize,
}

impl Recent {
    /// The longest text remembered; a longer one is checked each time.
    pub(crate) const MAX: usize = 64;
    const SLOTS: usize = 4;

    pub(crate) const fn new() -> Self {
        Self {
            texts: [[0; Self::MAX]; Self::SLOTS],
            // No text is this long: an empty slot matches nothing.
            lens: [usize::MAX; Self::SLOTS],
            answers: [false; Self::SLOTS],
            next: 0,
        }
    }

    /// `check(v)`, from memory when `v` was among the last texts asked about.
    pub(crate) fn answer(
        memo: &'static std::thread::LocalKey<std::cell::RefCell<Self>>,
        v: &[u8],
        check: impl FnOnce(&[u8]) -> bool,
    ) -> bool {
        if v.len() > Self::MAX {
            return check(v);
        }
        let known = memo.with_borrow(|m| {
            (0..Self::SLOTS)
                .find(|&k| m.lens[k] == v.len() && &m.texts[k][..v.len()] == v)
                .map(|k| m.answers[k])
        });
        if let Some(answer) = known {
            return answer;
        }
        // The check runs with the memory released: it may ask again about another text.
        let answer = check(v);
        memo.with_borrow_mut(|m| {
            let k = m.next;
            m.texts[k][..v.len()].copy_from_slice(v);
            m.lens[k] = v.len();
            m.answers[k] = answer;
            m.next = (k + 1) % Self::SLOTS;
        });
        answer
    }
}
