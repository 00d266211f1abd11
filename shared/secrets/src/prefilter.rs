//! The scan's quick rejections over tables `build.rs` compiles from the rule data: a few lookups
//! that tell a word needs no further reading. Each must only ever turn away what the full rule
//! would turn away (the tests in `prefilter_tests.rs` compare them with their definitions); it
//! must never decide a finding.
//!
//! A word the scan passes over: [`inert_key`] and [`inert_word`] state in one place when the
//! scan's key rule and its word rules would do nothing at a word's start (a key that may hold a
//! provider's keyword: unless the key rule's own test of what follows says a value may; a key
//! before a `=` or `(`: but read a call's arguments), so its loop passes over most words of
//! prose and code without either call (the tests run the full rules at every start, and compare
//! whole scans with these checks off). Counted with callgrind inside `findings` on the
//! benchmark's clean prose-and-code prompt: 200 KB 16.9 M → 15.2 M instructions, 10 KB 0.85 M →
//! 0.76 M. Of 27,000 word starts in 200 KB, 1,250 are still read by the key rule in full (a
//! secret word's first letters, a dash) and 5,000 by the word rules. What remains is per word,
//! not per call: the one pass measuring each key (a lookup a byte) and the dozen
//! lookups of each start.

use super::rules::HEADED_SHORTEST;
use crate::bytes::skip_blank;
use crate::words::{
    ForeignMask, KEY_BYTE, KEY_CLASS, KEY_DASH, KEY_SEPARATOR, PASSWORD_WORD_INDEX, PASSWORD_WORDS,
    SECRET_WORD_PAIRS, may_hold_secret_word,
};

include!(concat!(env!("OUT_DIR"), "/filters.rs"));

/// The bit of four bytes in [`KEYWORD_QUADS`] (as `build.rs` computes it): ASCII case folded
/// with `| 0x20`, which maps a letter and its capital to one value.
#[inline]
fn quad_hash(q: [u8; 4]) -> usize {
    let w = u32::from_le_bytes(q) | 0x2020_2020;
    (w.wrapping_mul(0x9e37_79b1) >> 17) as usize
}

/// Whether a keyword rule's word may start at `j` of `key` and end inside it. (Inlined: it is
/// tested at most word starts, where a call costs a third of the test.)
#[inline(always)]
fn keyword_may_start(key: &[u8], j: usize) -> bool {
    if let Some(&[a, b, c, d]) = key.get(j..j + 4) {
        let h = quad_hash([a, b, c, d]);
        if KEYWORD_QUADS[h / 64] & (1 << (h % 64)) != 0 {
            return true;
        }
    }
    // `& 31` maps a letter and its capital to one value.
    key.get(j..j + 2)
        .is_some_and(|p| KEYWORD_PAIRS[usize::from(p[0] & 31)] & (1 << (p[1] & 31)) != 0)
}

/// Whether a keyword rule's word may start at `j` of `key` (false: none does), for the matcher's
/// loop over a key's segments: most keys before a random value name no provider, and each
/// segment would otherwise be compared with every keyword of its first letter.
#[inline]
pub(crate) fn keyword_may_start_at(key: &[u8], j: usize) -> bool {
    !enabled() || keyword_may_start(key, j)
}

/// Where a segment of a key may start past its first byte, as two bit sets: a byte's bits in
/// the first array are the byte before, in the second the byte at the start (a key byte that is
/// no letter before any; a lowercase letter before a capital). A segment starts where one bit is
/// in both.
pub(crate) static SEGMENT_START: [[u8; 256]; 2] = {
    let mut t = [[0u8; 256]; 2];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        if c.is_ascii_digit() || matches!(c, b'_' | b'-' | b'.') {
            t[0][b] = 1;
        }
        if c.is_ascii_lowercase() {
            t[0][b] = 2;
        }
        t[1][b] = if c.is_ascii_uppercase() { 3 } else { 1 };
        b += 1;
    }
    t
};

/// What the scan's key loop reads of each byte, in one lookup: its [`KEY_CLASS`] (bits 0–7), its
/// bits as the second byte of a secret word's first two ([`SECRET_WORD_PAIRS`]`[1]`, bits 8–15)
/// and of a segment's start ([`SEGMENT_START`]`[1]`, bits 16–17, a letter's only: every keyword
/// starts with one, so a segment starting with a digit, as each of a hex digest's may, is no
/// keyword's), and the same as the byte before them (`[0]`, bits 24–31 and 32–33). The entry of
/// the byte before, shifted right by 16, ANDed with the byte's, holds in bits 8–15 the
/// secret-word pair bits and in bits 16–17 the segment bits of the two. Bit 18 marks a byte a
/// word of [`PASSWORD_WORDS`] may start with, bit 34 a separator (`_`, `-`, `.`): the two after
/// one another, in bit 18, are where a password word may start a segment.
pub(crate) static KEY_BYTE_BITS: [u64; 256] = {
    let mut t = [0u64; 256];
    let mut b = 0;
    while b < 256 {
        let segment = if (b as u8).is_ascii_alphabetic() {
            SEGMENT_START[1][b]
        } else {
            0
        };
        let password = PASSWORD_WORD_INDEX[0][b] != 0;
        let separator = KEY_CLASS[b] & KEY_SEPARATOR != 0;
        t[b] = KEY_CLASS[b] as u64
            | (SECRET_WORD_PAIRS[1][b] as u64) << 8
            | (segment as u64) << 16
            | (password as u64) << 18
            | (SECRET_WORD_PAIRS[0][b] as u64) << 24
            | (SEGMENT_START[0][b] as u64) << 32
            | (separator as u64) << 34;
        b += 1;
    }
    t
};

/// The bytes of a word (ASCII letters and digits), and (second table) what a word's inside
/// follows (those and `_`): one lookup each in the scan's loop.
pub(crate) static WORD_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = (b as u8).is_ascii_alphanumeric();
        b += 1;
    }
    t
};

/// See [`WORD_BYTE`].
pub(crate) static WORD_BEFORE: [bool; 256] = {
    let mut t = WORD_BYTE;
    t[b'_' as usize] = true;
    t
};

/// For each byte, the bit set of [`PASSWORD_WORDS`] that have it third (either ASCII case; a word
/// shorter than three bytes sets its bit everywhere): with `PASSWORD_WORD_INDEX`'s first two, a
/// third lookup rules out most words that start as one does.
pub(crate) static PASSWORD_WORD_THIRD: [ForeignMask; 256] = {
    let mut index = [0; 256];
    let mut k = 0;
    while k < PASSWORD_WORDS.len() {
        let w = PASSWORD_WORDS[k].as_bytes();
        if w.len() < 3 {
            let mut b = 0;
            while b < 256 {
                index[b] |= 1 << k;
                b += 1;
            }
        } else {
            index[w[2].to_ascii_lowercase() as usize] |= 1 << k;
            index[w[2].to_ascii_uppercase() as usize] |= 1 << k;
        }
        k += 1;
    }
    index
};

/// The bit set of [`PASSWORD_WORDS`] that may start at `i` (by its first three bytes, either
/// ASCII case): `0` for most words. Two lookups rule out most words; a third, those that start
/// as one does (`consumer`, `service`, `keep`).
#[inline]
pub(crate) fn password_words_at(bytes: &[u8], i: usize) -> ForeignMask {
    let second = bytes.get(i + 1).map_or(0, |&b| usize::from(b));
    let mask = PASSWORD_WORD_INDEX[0][usize::from(bytes[i])] & PASSWORD_WORD_INDEX[1][second];
    if mask == 0 {
        return 0;
    }
    mask & PASSWORD_WORD_THIRD[bytes.get(i + 2).map_or(0, |&b| usize::from(b))]
}

/// The key at `i` measured in one pass: its end, the [`KEY_CLASS`] bits it holds, the
/// [`SECRET_WORD_PAIRS`] bits of its byte pairs, and whether a segment starts with a letter past
/// its first byte (bits 0–1, see [`INNER_SEGMENT`]) and whether a byte a password word may start
/// with follows a separator in it (bit 2, [`SEPARATED_PASSWORD`]). One lookup per byte:
/// [`KEY_BYTE_BITS`].
#[inline(always)]
pub(crate) fn measure_key(bytes: &[u8], i: usize) -> (usize, u8, u8, u8) {
    let rest = &bytes[i..];
    let (mut n, mut classes, mut pairs, mut before) = (0usize, 0u64, 0u64, 0u64);
    // One byte a step: since the scan passes over most words with this measure inlined in its
    // loop, two bytes a step count more instructions (15.49 M against 15.35 M for 200 KB).
    for &c in rest {
        let x = KEY_BYTE_BITS[usize::from(c)];
        if x & 0xff == 0 {
            break;
        }
        classes |= x;
        pairs |= (before >> 16) & x;
        before = x;
        n += 1;
    }
    (i + n, classes as u8, (pairs >> 8) as u8, (pairs >> 16) as u8 & 7)
}

/// [`measure_key`]'s last bits: a segment starts with a letter past the key's first byte.
pub(crate) const INNER_SEGMENT: u8 = 3;

/// [`measure_key`]'s last bits: a byte a password word may start with follows a separator.
pub(crate) const SEPARATED_PASSWORD: u8 = 4;

/// Whether a keyword rule's word may be a segment of `key` (see
/// [`super::rules::segment_start`]); `inner` tells that a segment may start with a letter past
/// its first byte ([`SEGMENT_START`] over the key's bytes, at a letter). False means no provider's keyword is in the key, so
/// no value after it is a provider's. `key` is made of key bytes ([`KEY_CLASS`]).
#[inline(always)]
pub(crate) fn may_hold_keyword(key: &[u8], inner: bool) -> bool {
    !enabled() || keyword_segment::<false>(key, inner)
}

/// Whether a keyword rule's word is a segment of `key`, any case: [`may_hold_keyword`], then the
/// words of the key's first two letters compared where the bit filter lets one start. Asked only
/// where a key that passes the filter would be read in full for it: a key such as `version`,
/// `source` or `checksum` before a `=` starts as a provider's word does (`versioneye`,
/// `sourcegraph`), but is none.
#[inline(never)]
pub(crate) fn holds_keyword(key: &[u8], inner: bool) -> bool {
    !enabled() || keyword_segment::<true>(key, inner)
}

/// Whether a keyword may start at `j` of `key` by the bit filter (and, when `WORDS`, a keyword's
/// word is there). (Inlined: [`may_hold_keyword`] tests it in the scan's loop.)
#[inline(always)]
fn keyword_at<const WORDS: bool>(key: &[u8], j: usize) -> bool {
    keyword_may_start(key, j) && (!WORDS || super::rules::keyword_words_at(key, j).next().is_some())
}

/// Whether a keyword may start a segment of `key` by the bit filter (and, when `WORDS`, a
/// keyword's word is there): at its start, and past it where [`KEY_BYTE_BITS`] says a segment
/// starts (as the matcher's `segment_start` does for key bytes) when `inner`, up to the last
/// start a keyword of two bytes fits after.
#[inline(always)]
fn keyword_segment<const WORDS: bool>(key: &[u8], inner: bool) -> bool {
    if keyword_at::<WORDS>(key, 0) {
        return true;
    }
    if !inner || key.len() < 3 {
        return false;
    }
    let mut before = KEY_BYTE_BITS[usize::from(key[0])];
    for j in 1..key.len() - 1 {
        let bits = KEY_BYTE_BITS[usize::from(key[j])];
        if (before >> 16) & bits & 0x3_0000 != 0 && keyword_at::<WORDS>(key, j) {
            return true;
        }
        before = bits;
    }
    false
}

/// Whether the word at `i`, letters and digits up to `run` (`0`: not known), is too short to
/// hold a head (see [`super::rules::headed_at`]): the byte after it is no token's (`+`, `/` or a
/// key's), so the token run from `i` ends before the shortest head would.
#[inline]
pub(crate) fn shorter_than_a_head(bytes: &[u8], i: usize, run: usize) -> bool {
    enabled() && run > i && run - i < HEADED_SHORTEST && !matches!(bytes.get(run), Some(b'+' | b'/'))
}

/// Whether the word at `i`, letters and digits up to `run` (`0`: not known), is too short for a
/// token of any vendor rule without a head: the byte after it is in no such token
/// ([`VENDOR_BYTES`]), so a token from `i` would end before the shortest one does.
#[inline]
pub(crate) fn shorter_than_a_token(bytes: &[u8], i: usize, run: usize) -> bool {
    enabled()
        && run > i
        && run - i < VENDOR_SHORTEST
        && bytes
            .get(run)
            .is_none_or(|&b| VENDOR_BYTES[usize::from(b >> 6)] & (1 << (b & 63)) == 0)
}

/// What the scan's `key_at` would do at a key's start, as far as [`inert_key`] tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyStart {
    /// Nothing but note where a word of letters and digits ends (`0`: the key holds a separator).
    Inert(usize),
    /// The same, unless a provider's value may follow the key ending at `kend` (it may hold a
    /// keyword: the scan tests what follows as the key rule would).
    Keyword { plain: usize, kend: usize },
    /// [`KeyStart::Call`], and [`KeyStart::Keyword`]'s reading too unless the key holds no
    /// keyword's word ([`holds_keyword`] with `inner`).
    KeywordCall { plain: usize, kend: usize, inner: bool },
    /// The same, but for the call's arguments or the value after a `=` or `(` that follows the
    /// key ending at `kend` (a user and a password passed together): the scan reads those alone.
    Call { plain: usize, kend: usize },
    /// Something: the key is read in full.
    Read,
}

/// What the scan's `key_at` would do at `i`: the slow path's conditions, in its order, read in
/// one place so that most words are passed over without the call. Nothing when no password word
/// starts the key or a segment of it, none of the two letters of a secret word start one, it is
/// no flag, not `sig` and holds no dash with 16 bytes after it, and a key with a separator is
/// shorter than a glued vendor prefix and its body; nothing either, if no provider's value
/// follows, when it may hold a keyword; only a call's reading when a `=` or `(` follows it after
/// blanks. `spent` tells that the text's work is spent (`key_at` then withholds the line of a
/// key it reads): asked only of a key with a dash.
#[inline(always)]
pub(crate) fn inert_key(bytes: &[u8], i: usize, spent: impl Fn() -> bool) -> KeyStart {
    if !enabled() || password_words_at(bytes, i) != 0 {
        return KeyStart::Read;
    }
    let (run, held, pair, inner) = measure_key(bytes, i);
    let separated = held & KEY_SEPARATOR != 0;
    if separated && run - i >= 24 || pair != 0 && may_hold_secret_word(&bytes[i..run]) {
        return KeyStart::Read;
    }
    let plain = if held == KEY_BYTE { run } else { 0 };
    let mut kend = run;
    while separated && kend > i && matches!(bytes[kend - 1], b'.' | b'-') {
        kend -= 1;
    }
    if kend - i < 2 || kend - i > 128 {
        return KeyStart::Inert(plain);
    }
    let key = &bytes[i..kend];
    if key[0] == b'-' || key == b"sig" {
        return KeyStart::Read;
    }
    // What a dash adds to the key's reading is a provider's word glued to its value
    // (`abyssale-ffCQ…`), 16 bytes or more after the first dash: a dashed name (`rust-lang`,
    // `crates.io-index`, `read-only`) is read as any key is.
    if held & KEY_DASH != 0
        && (key
            .iter()
            .position(|&b| b == b'-')
            .is_some_and(|d| key.len() - d > 16)
            || spent())
    {
        return KeyStart::Read;
    }
    let call = matches!(bytes.get(skip_blank(bytes, kend)), Some(b'=' | b'('));
    // A word for password in another language as a segment (`DB_KENNWORT`): only where a byte
    // one may start with follows a separator, or after a separator ending the key (`DB_` before
    // `пароль`, whose bytes are no key's).
    if separated
        && (inner & SEPARATED_PASSWORD != 0 || KEY_CLASS[usize::from(bytes[kend - 1])] & KEY_SEPARATOR != 0)
        && password_word_segment(bytes, i, kend)
    {
        return KeyStart::Read;
    }
    let inner = inner & INNER_SEGMENT != 0;
    match (may_hold_keyword(key, inner), call) {
        (false, false) => KeyStart::Inert(plain),
        (true, false) => KeyStart::Keyword { plain, kend },
        (false, true) => KeyStart::Call { plain, kend },
        (true, true) => KeyStart::KeywordCall { plain, kend, inner },
    }
}

/// Whether a word of [`PASSWORD_WORDS`] starts after a separator of the key `[i, kend)`. Out of
/// the scan's loop, which most keys (no separator) pass by, and one byte a step: an inclusive
/// range of indices here cost twice the instructions.
#[inline(never)]
fn password_word_segment(bytes: &[u8], i: usize, kend: usize) -> bool {
    let mut j = i;
    while j < kend {
        let c = bytes[j];
        j += 1;
        if matches!(c, b'_' | b'-' | b'.') && j < bytes.len() && password_words_at(bytes, j) != 0 {
            return true;
        }
    }
    false
}

/// Whether the scan's `word_at` finds nothing at `i` whatever the scan's state (but
/// `glued_vendor_at`'s, which the caller checks), known from the word alone:
/// letters and digits up to `run` (a byte no key holds after it; `0`: not known, and the word is
/// read), too short for any token or starting none by its first three bytes, too short for a
/// head, no `-` where a Mailchimp key's suffix would be, and first two bytes that none of the
/// word rules dispatched on its first byte starts with (each compares its own head at once).
#[inline(always)]
pub(crate) fn inert_word(bytes: &[u8], i: usize, prev: u8, run: usize) -> bool {
    if !enabled() || run <= i {
        return false;
    }
    let (b0, b1) = (bytes[i], bytes.get(i + 1).copied().unwrap_or(0));
    let len = run - i;
    // As `word_at` dispatches on `b0`, each rule's head by its first three bytes (folded, a
    // superset of the rules' own comparisons): `bearer`, `basic`, `bcrypt`, `bot`; `identified `,
    // `insert`; a Telegram bot id (8 digits or more); a host's address (digits before a dot); `pbkdf2`, `sha1`, `scrypt`, `argon2`,
    // `md5`; a Discord id (24 bytes or more; the run is all of it, the byte after it no
    // base64url's); `net`, `htp…`, `wpa…`, `chp…`, `vau…`; `ConvertTo-SecureString`; Maven's
    // `<master>`; a JWT's `eyJ`; a JSON Web Key's `"kty"` or YAML's `kty:`; .NET's `<RSAKeyValue>` and `<DSAKeyValue>`.
    let head = (b0 | 0x20, b1 | 0x20, bytes.get(i + 2).map_or(0, |&b| b | 0x20));
    let dispatched = match b0 {
        b'b' | b'B' => matches!(
            head,
            (b'b', b'e', b'a') | (b'b', b'a', b's') | (b'b', b'c', b'r') | (b'b', b'o', b't')
        ),
        b'i' | b'I' => {
            matches!(head, (b'i', b'd', b'e') | (b'i', b'n', b's'))
                || head == (b'i', b'm', b'p') && crate::words::more_commands_at(bytes, i)
        }
        b'0'..=b'9' => len >= 8 || bytes.get(run) == Some(&b'.'),
        b'p' => head == (b'p', b'b', b'k'),
        b's' => {
            matches!(head, (b's', b'h', b'a') | (b's', b'c', b'r'))
                || head == (b's', b'q', b'l') && crate::words::more_commands_at(bytes, i)
        }
        b'a' => head == (b'a', b'r', b'g'),
        b'M' | b'O' => len >= 24,
        b'N' => len >= 24 || head == (b'n', b'e', b't'),
        b'm' => {
            head == (b'm', b'd', b'5')
                || prev == b'<'
                || head == (b'm', b'o', b's') && crate::words::more_commands_at(bytes, i)
        }
        b'c' | b'C' => head == (b'c', b'h', b'p') || bytes.get(i + 9) == Some(&b'-'),
        b'h' => head == (b'h', b't', b'p'),
        b'w' => head == (b'w', b'p', b'a'),
        b'n' => head == (b'n', b'e', b't'),
        b'v' => head == (b'v', b'a', b'u'),
        b'e' => {
            head == (b'e', b'y', b'j')
                || head == (b'e', b'x', b'p') && crate::words::more_commands_at(bytes, i)
        }
        // The other commands `command_at` reads, by their heads then named whole.
        b'r' | b'd' | b'o' => {
            matches!(head, (b'r', b'a', b'b') | (b'd', b'b', b'2') | (b'o', b'p', b'e'))
                && crate::words::more_commands_at(bytes, i)
        }
        b'k' => {
            head == (b'k', b't', b'y') && (matches!(prev, b'"' | b'\'') || bytes.get(i + 3) == Some(&b':'))
        }
        b'R' => head == (b'r', b's', b'a') && prev == b'<',
        b'D' => head == (b'd', b's', b'a') && prev == b'<',
        _ => false,
    };
    !dispatched
        && (shorter_than_a_token(bytes, i, run)
            || !super::rules::may_start(b0, b1, bytes.get(i + 2).copied().unwrap_or(0)))
        && shorter_than_a_head(bytes, i, run)
        && bytes.get(i + 32) != Some(&b'-')
}

/// The quick rejections are always on outside the tests.
#[cfg(not(test))]
#[inline(always)]
fn enabled() -> bool {
    true
}

#[cfg(test)]
thread_local! {
    static DISABLED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// In the tests, a thread may turn the quick rejections off to compare the scan without them.
#[cfg(test)]
fn enabled() -> bool {
    !DISABLED.with(std::cell::Cell::get)
}

/// Runs `f` with this thread's quick rejections off.
#[cfg(test)]
pub(crate) fn without<T>(f: impl FnOnce() -> T) -> T {
    DISABLED.with(|d| d.set(true));
    let out = f();
    DISABLED.with(|d| d.set(false));
    out
}
