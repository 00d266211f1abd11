//! A run's characters: entropy, letters and digits mixed, typed filler and counts, and whether it
//! looks generated. It judges characters alone, never a name or the text around them.

use crate::bytes::{b64url, contains_ci, run_end};
use crate::words::{Words, words_from, words_of};

/// A random-looking word of at least `min` bytes: digits and letters mixed, or symbols, or a long
/// high-entropy run; not a technical word (`sha256`) nor words joined by dashes.
pub(crate) fn looks_random(v: &[u8], min: usize) -> bool {
    // Mixed-case letters alone are told by their words (see [`camel_word_share`]): random
    // (`ImOIVBfPhQYm`) under half, words run together (`someVeryLongIdentifierName`) two thirds
    // or more, however long.
    let share = camel_word_share(v);
    let random_case = v.len() >= 8 && share.is_some_and(|w| 2 * w < v.len());
    let compound = share.is_some_and(|w| 3 * w >= 2 * v.len());
    if v.len() < min
        || identifier_like(v) && (v.len() < 20 && !random_case || compound)
        || wordy(v)
        || tech_word(v)
        || alphabet(v)
    {
        return false;
    }
    let letters = v.iter().any(u8::is_ascii_alphabetic);
    (letters && (has_digit(v) || has_symbol(v))) || (v.len() >= 16 && entropy(v) >= 3.5) || random_case
}

/// How many letters of `v`, ASCII letters of both cases alone, stand in words when it is split
/// as camelCase is (`XMLHttpRequest`: `XML`, `Http`, `Request`; a capital run's last letter starts
/// the word its lowercase letters end): a word is two or more lowercase letters, after a capital
/// or not, with a vowel (`y` counts), or an [`abbreviation`]. `None` for anything else. Identifiers are words run
/// together; random letters (`ImOIVBfPhQYm`: `Im`, `OIV`, `Bf`, `Ph`, `QY`, `m`) change case
/// every other letter or so, and their lowercase runs are short or have no vowel.
pub(crate) fn camel_word_share(v: &[u8]) -> Option<usize> {
    if v.is_empty() || !v.iter().all(u8::is_ascii_alphabetic) || !mixed_case(v) {
        return None;
    }
    let vowel = |b: &u8| matches!(b.to_ascii_lowercase(), b'a' | b'e' | b'i' | b'o' | b'u' | b'y');
    let mut share = 0;
    camel_parts(v, |_, start, lower| {
        // The word's capital is `v[start]` when it has one: `lower - start` letters.
        let upper = start + usize::from(v[start..lower].first().is_some_and(u8::is_ascii_uppercase));
        if lower - upper >= 2 && v[start..lower].iter().any(vowel) || abbreviation(&v[start..lower]) {
            share += lower - start;
        }
    });
    Some(share)
}

/// Splits `v` as camelCase is: for each part, `f(k, start, end)` with `v[k..start]` the capitals
/// before a word (an acronym: `XML` of `XMLHttp`) and `v[start..end]` the word, a capital run's
/// last letter starting the word its lowercase letters end.
fn camel_parts(v: &[u8], mut f: impl FnMut(usize, usize, usize)) {
    let mut k = 0;
    while k < v.len() {
        let upper = run_end(v, k, |b| b.is_ascii_uppercase());
        let lower = run_end(v, upper, |b| b.is_ascii_lowercase());
        let start = if upper > k && lower > upper {
            upper - 1
        } else {
            upper
        };
        f(k, start, lower);
        k = lower;
    }
}

/// How many words a name runs together, numbers and `_` or `-` between them (`DbPass2`,
/// `apiKeyV2Prod`, `TOKEN_2024_PROD`, `SHA256withRSA`): `None` unless words and abbreviations
/// hold all its letters but one, and numbers stand in two places at most. A word has a vowel in
/// four letters or more and no four consonants running (`ecee` of hex is none); random characters
/// change case every other letter and scatter digits, so about one in a thousand passes.
pub(crate) fn name_words(v: &[u8]) -> Option<usize> {
    if !v
        .iter()
        .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
    {
        return None;
    }
    let vowel = |b: &u8| matches!(b.to_ascii_lowercase(), b'a' | b'e' | b'i' | b'o' | b'u' | b'y');
    let word = |seg: &[u8]| {
        let vowels = seg.iter().filter(|b| vowel(b)).count();
        let consonants = seg.split(vowel).map(<[u8]>::len).max().unwrap_or(0);
        let hex = seg.iter().all(|b| matches!(b.to_ascii_lowercase(), b'a'..=b'f'));
        let mut low = [0u8; 5];
        for (l, b) in low.iter_mut().zip(seg) {
            *l = b.to_ascii_lowercase();
        }
        seg.len() >= 3 && 4 * vowels >= seg.len() && consonants <= 3 && !hex
            || seg.len() <= 5 && abbreviation(&low[..seg.len().min(5)])
    };
    // Among lowercase letters, capitals alone are an acronym's few (`RSA`, `PROD`); a longer run
    // of them is how random characters look.
    let lowercase = v.iter().any(u8::is_ascii_lowercase);
    let (mut letters, mut covered, mut words) = (0, 0, 0);
    let mut count = |seg: &[u8]| {
        let shouted = lowercase && seg.len() > 4 && seg.iter().all(u8::is_ascii_uppercase);
        if !seg.is_empty() && !shouted && word(seg) {
            covered += seg.len();
            words += 1;
        }
    };
    for run in v.split(|b| !b.is_ascii_alphabetic()).filter(|r| !r.is_empty()) {
        letters += run.len();
        if !mixed_case(run) {
            count(run);
            continue;
        }
        // The capitals before a word are an acronym (`XMLHttp`, `withRSA`).
        camel_parts(run, |k, start, end| {
            count(&run[k..start]);
            count(&run[start..end]);
        });
    }
    let numbers = v.split(|b| !b.is_ascii_digit()).filter(|r| !r.is_empty()).count();
    (letters >= 3 && covered + 1 >= letters && numbers <= 2).then_some(words)
}

/// Two words or more run together with numbers (`SHA256withRSA`, `AppDbPwd3`): a name, where one
/// word and a number (`Summer2024`) may be a weak password.
pub(crate) fn compound_name(v: &[u8]) -> bool {
    name_words(v).is_some_and(|w| w >= 2)
}

/// A word programmers shorten to consonants (`Pwd`, `Cfg`, `Db`, `Str`, `Txt`): a name's part
/// in camelCase (`userPwdTxt`, `cfgDbPwd`) as much as a word with vowels.
pub(crate) fn abbreviation(seg: &[u8]) -> bool {
    const SHORT: Words = words_of!(
        b"pwd pw pswd passwd cfg conf db str txt msg btn ctx src dst tmp mgr svc ptr cnt rnd sql xml \
        html http cmd pkg tbl fn cb hdr ts dt tz nbr qty crt jwt ssh ssl tls dns grp std dflt lst \
        bkp prd stg lcl nxt prv frm lbl chk dlg pnl wnd hst srv cln clnt rsp rslt"
    );
    (2..=5).contains(&seg.len()) && seg[1..].iter().all(u8::is_ascii_lowercase) && SHORT.contains_ci(seg)
}

/// An alphabet or a run of one (`abcdefghijklmnopqrstuvwxyz`, `A-Za-z0-9`): each byte mostly the
/// one after the byte before it. Every character once gives it a high entropy, not a random order.
pub(crate) fn alphabet(v: &[u8]) -> bool {
    let next = v.windows(2).filter(|w| w[1] == w[0].wrapping_add(1)).count();
    v.len() >= 8 && next * 4 >= (v.len() - 1) * 3
}

pub(crate) fn has_digit(v: &[u8]) -> bool {
    v.iter().any(u8::is_ascii_digit)
}

/// A character that identifiers and words do not use (a letter of any script is not one:
/// `ändern` is a word).
pub(crate) fn has_symbol(v: &[u8]) -> bool {
    v.utf8_chunks().any(|chunk| {
        !chunk.invalid().is_empty()
            || chunk
                .valid()
                .chars()
                .any(|c| !c.is_alphanumeric() && !matches!(c, '_' | '-' | '.' | ':' | '/'))
    })
}

pub(crate) fn mixed_case(v: &[u8]) -> bool {
    v.iter().any(u8::is_ascii_uppercase) && v.iter().any(u8::is_ascii_lowercase)
}

/// An identifier, a dotted or `::` path, a reference or a type: letters, `_`, `.`, `:`, `&`, `'`,
/// `?`, `|`, no digits (so `hunter2` is not one).
pub(crate) fn identifier_like(v: &[u8]) -> bool {
    v.first()
        .is_some_and(|&b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'&'))
        && v.iter().all(|&b| {
            b.is_ascii_alphabetic() || matches!(b, b'_' | b'.' | b':' | b'&' | b'\'' | b'?' | b'|' | b'-')
        })
}

/// Words joined by `-`, `_`, `.` or `/` (`base64url-encoded`, `my-tls-secret`).
pub(crate) fn wordy(v: &[u8]) -> bool {
    let parts = v.split(|&b| matches!(b, b'-' | b'_' | b'.' | b'/'));
    let mut total = 0;
    let mut words = 0;
    for p in parts {
        if p.is_empty() {
            continue;
        }
        total += 1;
        let word = p.len() >= 3
            && p.iter().all(u8::is_ascii_alphabetic)
            && (p.iter().all(u8::is_ascii_lowercase) || p[1..].iter().all(u8::is_ascii_lowercase));
        words += usize::from(word);
    }
    total >= 2 && words * 2 >= total
}

/// Technical words that mix letters and digits without being secrets, also written with `-`
/// or `_` between their parts and a key size (`AES-256`, `SHA-256`, `RSA-2048`, `PBKDF2-SHA256`):
/// what a sentence about a password says it is hashed or encrypted with.
pub(crate) fn tech_word(v: &[u8]) -> bool {
    let mut named = false;
    let all_tech = v.split(|&b| matches!(b, b'-' | b'_')).all(|part| {
        if !part.is_empty() && part.iter().all(u8::is_ascii_digit) {
            return KEY_SIZES.contains(part);
        }
        named = true;
        let stem = &part[..part.len() - part.iter().rev().take_while(|b| b.is_ascii_digit()).count()];
        tech_part(part) || tech_part(stem) && KEY_SIZES.iter().any(|size| part[stem.len()..] == *size)
    });
    all_tech && named
}

/// Bit and key sizes written after an algorithm's name.
pub(crate) const KEY_SIZES: Words = words_from!(&[
    b"1", b"2", b"3", b"5", b"128", b"160", b"192", b"224", b"256", b"384", b"512", b"1024", b"2048",
    b"3072", b"4096", b"8192",
]);

pub(crate) fn tech_part(v: &[u8]) -> bool {
    const WORDS: Words = words_of!(
        b"sha1 sha256 sha384 sha512 base64 base64url base32 utf8 utf-8 md5 x509 ipv4 \
        ipv6 http2 http3 oauth2 hs256 hs512 rs256 rs512 es256 aes128 aes256 pbkdf2 argon2 argon2id \
        argon2i argon2d bcrypt scrypt yescrypt aes sha rsa hmac ecdsa pbkdf k8s ed25519 secp256k1 \
        rsa2048 rsa4096 p256 blake3 sha3-256 x25519 chacha20 s3 ec2 gpt-4 gpt4 gpt-4o o200k cl100k \
        cl100k_base o200k_base bpe wordpiece"
    );
    WORDS.contains_ci(v)
}

/// Whether `v`'s [`entropy`] may be 4 bits a byte or more. It is at most the log of how many
/// bytes differ: a text of fewer than 16 distinct bytes (a tag or a word repeated) falls short,
/// told from a bit set before its bytes are counted.
pub(crate) fn may_have_four_bits(v: &[u8]) -> bool {
    v.len() >= 16 && run_end_distinct(v, 0, v.len(), |_| true).1 >= 16
}

/// [`crate::bytes::run_end_max`]'s end of the run of `class` bytes from `pos`, and how many distinct bytes the
/// run holds (read in the same pass: see [`may_have_four_bits`]).
pub(crate) fn run_end_distinct(
    bytes: &[u8],
    pos: usize,
    limit: usize,
    class: impl Fn(u8) -> bool,
) -> (usize, u32) {
    let stop = bytes.len().min(pos.saturating_add(limit));
    let mut seen = [0u64; 4];
    let mut end = pos;
    while end < stop && class(bytes[end]) {
        seen[usize::from(bytes[end] >> 6)] |= 1 << (bytes[end] & 63);
        end += 1;
    }
    (end, seen.iter().map(|w| w.count_ones()).sum())
}

/// How many distinct bytes `v` holds, ASCII case aside, counted up to one past `most`: a value
/// that passes it is read no further (a generated one does within a few bytes), and a bit set
/// on the stack costs nothing to clear, where a table of 256 flags is zeroed for every value.
pub(crate) fn distinct_folded(v: &[u8], most: u32) -> u32 {
    let (mut seen, mut n) = ([0u64; 4], 0);
    for b in v.iter().map(u8::to_ascii_lowercase) {
        let (word, bit) = (usize::from(b >> 6), 1u64 << (b & 63));
        if seen[word] & bit == 0 {
            seen[word] |= bit;
            n += 1;
            if n > most {
                break;
            }
        }
    }
    n
}

/// Shannon entropy in bits per byte.
pub(crate) fn entropy(v: &[u8]) -> f64 {
    let mut counts = [0u32; 256];
    for &b in v {
        counts[usize::from(b)] += 1;
    }
    #[allow(clippy::cast_precision_loss)]
    let n = v.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * crate::log2::log2(p)
        })
        .sum()
}

/// One group of three or more characters three times between separators, the rest typed with
/// that group's characters alone (`xoxp-4815162342-4815162342-4815162342-15234816`,
/// `789-789-789-987`): typed, as a generated token's ids and secret differ. Ids repeated before a
/// random secret (`xoxp-1234-1234-1234-4ddbc191…`) leave the secret a secret. (A token's length
/// at most, its first eight groups compared: a long run, judged again at each key it holds, costs
/// no more.)
pub(crate) fn repeated_group(v: &[u8]) -> bool {
    // Short and the group alone three times (`Kx9-Kx9-Kx9`), it is a typed password's shape as
    // often as a stand-in's.
    let parts = v.split(|&b| matches!(b, b'-' | b'_' | b'.')).count();
    // (Three times needs three parts at least.)
    if parts < 3 || v.len() > 256 || v.len() < 16 && parts <= 3 {
        return false;
    }
    let groups = || {
        v.split(|&b| matches!(b, b'-' | b'_' | b'.'))
            .take(8)
            .filter(|g| g.len() >= 3)
    };
    let Some(g) = groups().find(|g| groups().filter(|h| h == g).count() >= 3) else {
        return false;
    };
    let mut used = [false; 256];
    for &b in g {
        used[usize::from(b)] = true;
    }
    v.iter()
        .all(|&b| used[usize::from(b)] || matches!(b, b'-' | b'_' | b'.'))
}

/// Made up by hand rather than generated: a long value holding a run of six consecutive
/// characters counting up or down (`abcdef`, `123456`, `TUVWXYZ`, `987654`), side by side or
/// every other character with separators skipped (`a1b2c3d4e5f6`, `d4c3b2a1-f6e5`,
/// `…-p5o0n5m3l2k1`), or the documentation marker `EXAMPLE`. A random value of this length
/// holds none of them but once in millions.
pub(crate) fn fabricated(v: &[u8]) -> bool {
    if v.len() < 20 {
        return false;
    }
    // Letters and digits only, at most 512 of them: `-`, `_`, `.` separate the groups of a
    // hand-made token without breaking its count. Counted down side by side, and up and down
    // every other character, in one pass: a count ending at the `k`-th of them is one longer
    // than the one ending `stride` before it when its character steps from that one's.
    let counts = || {
        // The last two characters and, for each count, its length at each of them (`k % 2`).
        let (mut last, mut down, mut up_2, mut down_2) = ([0u8; 2], 1u16, [1u16; 2], [1u16; 2]);
        for (k, b) in v
            .iter()
            .copied()
            .filter(u8::is_ascii_alphanumeric)
            .take(512)
            .enumerate()
        {
            let (one_back, two_back) = (last[(k + 1) % 2], last[k % 2]);
            let at = k % 2;
            down = if k >= 1 && b == one_back.wrapping_sub(1) {
                down + 1
            } else {
                1
            };
            if k >= 2 {
                up_2[at] = if b == two_back.wrapping_add(1) {
                    up_2[at] + 1
                } else {
                    1
                };
                down_2[at] = if b == two_back.wrapping_sub(1) {
                    down_2[at] + 1
                } else {
                    1
                };
            }
            if down >= 6 || up_2[at] >= 6 || down_2[at] >= 6 {
                return true;
            }
            last[at] = b;
        }
        false
    };
    // Side by side the count is on the value itself, so a separator breaks it as before; digits
    // count on past `9` to `0` as a keyboard's row does (`567890`).
    let mut run = 1;
    for w in v.windows(2) {
        let next = w[1] == w[0].wrapping_add(1) || w[0] == b'9' && w[1] == b'0';
        if next && w[0].is_ascii_alphanumeric() && w[1].is_ascii_alphanumeric() {
            run += 1;
            if run >= 6 {
                return true;
            }
        } else {
            run = 1;
        }
    }
    counts() || spells_a_marker(v) || closed_by_example(v) || filler_run(v)
}

/// Whether a long value ends in the word `example` in any case (`…k2n8example`, `…_Example`):
/// the marker that example generators put after a random body whose alphabet has no capitals.
/// A generated value ends so about once in 10^10. A body with capitals (`…Uw9xfogoEmvnexample`)
/// is no such generator's: there the word is the value's own letters.
fn closed_by_example(v: &[u8]) -> bool {
    const WORD: &[u8] = b"example";
    v.len() >= 20
        && v[v.len() - WORD.len()..].eq_ignore_ascii_case(WORD)
        && !v[..v.len() - WORD.len()].iter().any(u8::is_ascii_uppercase)
}

/// Four kinds of letter or digit or fewer, case aside, in 20 or more (`dead.dead.DEAD-DEAD-dead`,
/// `abababab…`, `1212…`): one short unit typed over and over where a generated token goes. A
/// generated token this long holds more kinds but once in a million (hex) or far less. Only
/// where a token goes: in a password's slot a typed word is the password (`asdfasdf…`).
pub(crate) fn few_kinds(v: &[u8]) -> bool {
    let mut seen = [false; 256];
    let (mut kinds, mut len) = (0, 0);
    for b in v.iter().filter(|b| b.is_ascii_alphanumeric()) {
        let b = usize::from(b.to_ascii_lowercase());
        kinds += usize::from(!seen[b]);
        seen[b] = true;
        len += 1;
    }
    len >= 20 && kinds <= 4
}

/// Whether `v` holds the documentation marker `EXAMPLE`, or its other spelling `SAMPLE`
/// (`SAMPLEq8Zr2…`, `…Tk9SAMPLEYn7…`: six capitals a generated value holds about once in a
/// billion), each letter as itself or as the digit that looks like it.
pub(crate) fn spells_a_marker(v: &[u8]) -> bool {
    // Both hold an `M`, which no digit stands for: a value without one spells neither.
    if crate::bytes::find_byte(b'M', v).is_none() {
        return false;
    }
    v.windows(7).any(|w| spells_marker(w, b"EXAMPLE")) || v.windows(6).any(|w| spells_marker(w, b"SAMPLE"))
}

/// Whether `w` spells the capitals of `marker`, each letter as itself or as the digit that
/// looks like it (`EXAMPL3`, `3XAMPLE`, `EX4MP1E`: a documentation marker typed past a scanner's
/// allow-list is the marker still).
fn spells_marker(w: &[u8], marker: &[u8]) -> bool {
    let alike = |c: u8| match c {
        b'E' => b'3',
        b'A' => b'4',
        b'L' => b'1',
        b'S' => b'5',
        _ => c,
    };
    w.len() == marker.len() && w.iter().zip(marker).all(|(&b, &c)| b == c || b == alike(c))
}

/// Counts end to end, however short: every letter and digit belongs to a count of three or more,
/// one of them six or more long, side by side (`abcdef12345`, `1234567890abcdef`) or every other
/// character (`b1c2d3e4f5g6h7i8`, `z9y8x7w6v5u`). Typed to fill a slot; a generated value of
/// eight or more characters is such a chain about once in a billion.
/// Two characters in turn making most of a value (`C71AAAAE-1D1D-1D1D-1D1D-1D1D1D1D1D1D`,
/// `j2323232324`): runs of eight or more letters and digits alternating two characters hold two
/// thirds of them. Typed, as one character repeated is; a unit of three or more repeated
/// (`aSaDsEaSaDsE…`) is not this.
pub(crate) fn two_in_turn(v: &[u8]) -> bool {
    if !(8..=128).contains(&v.len()) {
        return false;
    }
    let mut buf = [0u8; 128];
    let p = alphanumerics(v, &mut buf);
    let n = p.len();
    let (mut covered, mut run) = (0, 0);
    for k in 0..n {
        run = if k >= 2 && p[k] == p[k - 2] && p[k] != p[k - 1] {
            if run == 0 { 3 } else { run + 1 }
        } else {
            0
        };
        if run == 8 {
            covered += 8;
        } else if run > 8 {
            covered += 1;
        }
    }
    n >= 8 && 3 * covered >= 2 * n
}

/// Whether `v` is one count end to end, `min` to seven characters (`1234`, `abcdefg`, `zyxwvu`).
pub(crate) fn one_count(v: &[u8], min: usize) -> bool {
    (min..8).contains(&v.len())
        && v.iter().all(u8::is_ascii_alphanumeric)
        && count_chain(&mut v.iter().copied()) == Some(v.len())
}

/// Six or seven characters that are one count end to end (`abcdefg`, `1234567`, `zyxwvu`) are one
/// too: the count is the whole value.
pub(crate) fn counted_through(v: &[u8]) -> bool {
    if one_count(v, 6) {
        return true;
    }
    if !(8..=64).contains(&v.len())
        || !v
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return false;
    }
    let mut buf = [0u8; 64];
    let p = alphanumerics(v, &mut buf);
    let n = p.len();
    if n >= 8 && count_chain(&mut p.iter().copied()).is_some_and(|best| best >= 6) {
        return true;
    }
    let even = count_chain(&mut p.iter().step_by(2).copied());
    let odd = count_chain(&mut p.iter().skip(1).step_by(2).copied());
    n >= 8 && matches!((even, odd), (Some(a), Some(b)) if a.max(b) >= 6 && a.min(b) >= 4)
}

/// Counts typed kind by kind: the letters alone, case aside, run as counts end to end (one of
/// six or more), and so do the digits between them (`abcd1234efgh5678ijkl9012…`,
/// `zyxw9876vuts5432…`, `AbCDefGhij…01-23:45…`). Blocks of a count cut by blocks of another are
/// typed as one count is; a generated value's letters chain so about never. Each block of letters
/// holds four or more: shorter ones in turn with digits (`abc123def456…`, `12ab34cd…`) are a
/// pattern a key may be typed in, and the held-out sets call them keys.
pub(crate) fn counted_by_kind(v: &[u8]) -> bool {
    if !(16..=256).contains(&v.len())
        || !v
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':' | b'+' | b'/' | b'='))
        || v.split(|b| !b.is_ascii_alphabetic())
            .any(|block| (1..4).contains(&block.len()))
    {
        return false;
    }
    let letters = || {
        v.iter()
            .filter(|b| b.is_ascii_alphabetic())
            .map(u8::to_ascii_lowercase)
    };
    let digits = || v.iter().copied().filter(u8::is_ascii_digit);
    letters().count() >= 8
        && count_chain(&mut letters()).is_some_and(|best| best >= 6)
        && (digits().next().is_none() || count_chain(&mut digits()).is_some())
}

/// Twelve letters or more counting, case aside, anywhere in a long value
/// (`…AbKdIjMnOpQrStUvWxYz…`): typed into it, whatever stands around it. A generated value holds
/// such a run about once in 10^17 characters. Digits are left out: a count of them is an id's
/// often enough (a Slack workspace's number).
pub(crate) fn long_count(v: &[u8]) -> bool {
    if v.len() < 24 {
        return false;
    }
    let (mut run, mut dir, mut prev) = (0usize, 0i8, 0u8);
    for b in v.iter().map(u8::to_ascii_lowercase) {
        let step = if !b.is_ascii_alphabetic() || run == 0 {
            0
        } else if b == prev.wrapping_add(1) {
            1
        } else if b == prev.wrapping_sub(1) {
            -1
        } else {
            0
        };
        if step != 0 && (run == 1 || step == dir) {
            run += 1;
            dir = step;
            if run >= 12 {
                return true;
            }
        } else {
            run = usize::from(b.is_ascii_alphabetic());
            dir = 0;
        }
        prev = b;
    }
    false
}

/// The runs of `seq` (each stepping by one, up or down, `9` to `0` and back counting too): the
/// longest, or `None` if one is shorter than three.
pub(crate) fn count_chain(seq: &mut dyn Iterator<Item = u8>) -> Option<usize> {
    let (mut prev, mut run, mut dir, mut best) = (None::<u8>, 0usize, 0i8, 0usize);
    for b in seq {
        let step = prev.map_or(0, |a| {
            if b == a.wrapping_add(1) || a == b'9' && b == b'0' {
                1
            } else if b == a.wrapping_sub(1) || a == b'0' && b == b'9' {
                -1
            } else {
                0
            }
        });
        if run > 0 && step != 0 && (run == 1 || step == dir) {
            run += 1;
            dir = step;
        } else {
            if run > 0 && run < 3 {
                return None;
            }
            run = 1;
            dir = 0;
        }
        best = best.max(run);
        prev = Some(b);
    }
    (run >= 3).then_some(best)
}

/// Six or more of one character in a row (`000000`, `xxxxxx`, `AAAAAA`, `######`): typed, not
/// generated (a random 64-digit hex value holds such a run once in twenty thousand). Filler only
/// in part is not filler: a generated head of 16 or more characters before the run
/// (`sk_test_51H5Z3jGXvP5CVwYOLLllll…`, a key padded out) is a secret's, whatever follows it,
/// and so is a generated tail after it (base64 of DER, whose zero bytes encode as `AAAA…`:
/// `MDoEEPgAAAAAAAAAAAAAAAAAAAEwFAYIKoZIhvcNAwcECBQ0N0Ef…`, an encrypted field).
pub(crate) fn filler_run(v: &[u8]) -> bool {
    // Letters alone are random too when long and varied (`EwFAYIKoZIhvcNAwcECBUufYeW…`).
    let random = |part: &[u8]| {
        part.len() >= 16
            && mixed_case(part)
            && (has_digit(part) || part.len() >= 24 && entropy(part) >= 4.0)
            && entropy(part) >= 3.5
            && looks_random(part, 16)
            && !fabricated(part)
            && !shouted_stand_in(part)
    };
    let mut run = 1;
    for (k, w) in v.windows(2).enumerate() {
        run = if w[0] == w[1] { run + 1 } else { 1 };
        if run >= 6 {
            let head = &v[..k + 2 - run];
            let end = run_end(v, k + 2, |b| b == w[0]);
            let tail = &v[end..];
            // Its `+`, `/` and `=` may be URL-encoded (`%2B`): a Twitter bearer token's tail.
            return !(random(head)
                || tail
                    .iter()
                    .all(|&b| b64url(b) || matches!(b, b'+' | b'/' | b'=' | b'%'))
                    && random(tail));
        }
    }
    false
}

/// Capitals that are stand-in words glued end to end, one of them a demo's (`TESTDEMOKEY`,
/// `SAMPLETOKEN`): a documentation value's head before its padding, not a generated one; seven
/// given capitals in a random value are about never.
fn shouted_stand_in(part: &[u8]) -> bool {
    const WORDS: [&[u8]; 9] = [
        b"TEST", b"DEMO", b"SAMPLE", b"EXAMPLE", b"FAKE", b"DUMMY", b"KEY", b"TOKEN", b"SECRET",
    ];
    part.split(|b| !b.is_ascii_uppercase()).any(|mut run| {
        let (mut words, mut marker) = (0, false);
        if run.len() < 7 {
            return false;
        }
        while let Some(k) = WORDS.iter().position(|w| run.starts_with(w)) {
            run = &run[WORDS[k].len()..];
            words += 1;
            marker |= k < 6;
        }
        run.is_empty() && words >= 2 && marker
    })
}

/// Three quarters or more of the letters and digits stand in counts of six or more, up or down,
/// case aside (`MIIEpAIBAAKCAQEA1234567890abcdef…ABCDEF…`): typed to fill a key's place. A
/// generated body holds such a count about once in a billion characters.
pub(crate) fn mostly_counted(v: &[u8]) -> bool {
    let (mut counted, mut total, mut run, mut prev, mut dir) = (0usize, 0usize, 0usize, 0u8, 0i8);
    let close = |run: usize| if run >= 6 { run } else { 0 };
    for b in v
        .iter()
        .filter(|b| b.is_ascii_alphanumeric())
        .map(u8::to_ascii_lowercase)
    {
        total += 1;
        let step = if b == prev.wrapping_add(1) || prev == b'9' && b == b'0' {
            1
        } else if b == prev.wrapping_sub(1) || prev == b'0' && b == b'9' {
            -1
        } else {
            0
        };
        if run > 0 && step != 0 && (run == 1 || step == dir) {
            run += 1;
            dir = step;
        } else {
            counted += close(run);
            run = 1;
            dir = 0;
        }
        prev = b;
    }
    counted += close(run);
    total >= 32 && counted * 4 >= total * 3
}

/// A last segment of three or more mask characters (`tsn_live_xxx`, `sk-proj-XXX`,
/// `myapp-prod-***`): the rest of the value is elided, whatever stands before it.
pub(crate) fn mask_segment_last(v: &[u8]) -> bool {
    let tail = v.len()
        - v.iter()
            .rev()
            .take_while(|b| matches!(b, b'x' | b'X' | b'*'))
            .count();
    v.len() - tail >= 3 && tail > 1 && matches!(v[tail - 1], b'_' | b'-' | b'.')
}

/// Words of a script without ASCII, alone or around English words (`请替换为你的令牌`,
/// `填入你的OpenAI密钥`, `여기에_인증키`, `ваш_api_ключ`): a sentence or a stand-in in the writer's
/// language, never a generated value, however many distinct bytes its characters take; its own
/// script's punctuation (`，`, `。`, `、`) is the sentence's too. A digit makes it a password
/// (`密码123`).
pub(crate) fn script_words(v: &[u8]) -> bool {
    // Two letters without ASCII take bytes above ASCII: a value without one (most of them) is
    // told by a word-at-a-time test, before its characters are decoded.
    !v.is_ascii()
        && !v.iter().any(u8::is_ascii_digit)
        && std::str::from_utf8(v).is_ok_and(|w| {
            w.chars()
                .filter(|c| !c.is_ascii() && c.is_alphabetic())
                .nth(1)
                .is_some()
                && w.chars().all(|c| {
                    c.is_alphabetic()
                        || matches!(c, '_' | '-' | '.' | ' ')
                        || !c.is_ascii() && !c.is_alphanumeric() && !c.is_whitespace()
                })
        })
}

/// `v`'s ASCII letters and digits, in order, copied into `buf` (which `v` never outgrows: its
/// callers bound its length first).
fn alphanumerics<'a>(v: &[u8], buf: &'a mut [u8]) -> &'a [u8] {
    let mut n = 0;
    for &b in v.iter().filter(|b| b.is_ascii_alphanumeric()).take(buf.len()) {
        buf[n] = b;
        n += 1;
    }
    &buf[..n]
}

/// Random mixed-case letters (`ImOIVBfPhQYm`), not an identifier (`getUserName`,
/// `PasswordField`): eight or more, under half of them in words (see [`camel_word_share`]).
pub(crate) fn random_letters(v: &[u8]) -> bool {
    v.len() >= 8 && camel_word_share(v).is_some_and(|w| 2 * w < v.len())
}

/// Letters joined by `_` or `-` where one part is random letters (`hTqWmZpLxRvK_prod`,
/// `live-QmXvTbKzRwYp`): a name's parts are all words, so a random part makes a generated value.
pub(crate) fn random_letters_joined(v: &[u8]) -> bool {
    v.iter()
        .all(|&b| b.is_ascii_alphabetic() || b == b'_' || b == b'-')
        && v.split(|&b| b == b'_' || b == b'-').any(random_letters)
}

/// The six bits a base64 character of either alphabet (`+/` or `-_`) stands for.
pub(crate) fn base64_digit(b: u8) -> Option<u8> {
    Some(match b {
        b'A'..=b'Z' => b - b'A',
        b'a'..=b'z' => b - b'a' + 26,
        b'0'..=b'9' => b - b'0' + 52,
        b'+' | b'-' => 62,
        b'/' | b'_' => 63,
        _ => return None,
    })
}

/// Decodes unpadded base64 of either alphabet (`+/` or `-_`) into `out`: `None` for a byte
/// outside both alphabets or for more bytes than `out` holds.
pub(crate) fn base64_decode<'o>(input: &[u8], out: &'o mut [u8]) -> Option<&'o [u8]> {
    base64_decode_text(input, out, |_| true)
}

/// [`base64_decode`] of what must decode to bytes that `keep` holds for (text): `None` at the
/// first that is not, without decoding the rest (a generated key's first bytes are no text
/// most often).
pub(crate) fn base64_decode_text<'o>(
    input: &[u8],
    out: &'o mut [u8],
    keep: impl Fn(u8) -> bool,
) -> Option<&'o [u8]> {
    let (mut acc, mut bits, mut n) = (0u32, 0u32, 0usize);
    for &b in input {
        let d = base64_digit(b)?;
        acc = (acc << 6) | u32::from(d);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            let byte = (acc >> bits) as u8;
            *out.get_mut(n)? = byte;
            if !keep(byte) {
                return None;
            }
            n += 1;
        }
    }
    Some(&out[..n])
}

/// Base64 of filler: text of words with a documentation marker (`…ZXhhbXBsZQ==` ends in
/// `example`) or counts end to end (`YWJjZGVm…` is `abcdef…`). A generated key decodes to bytes
/// that are no text.
pub(crate) fn encoded_filler(v: &[u8]) -> bool {
    let body = v
        .strip_suffix(b"==")
        .or_else(|| v.strip_suffix(b"="))
        .unwrap_or(v);
    if !(16..=1024).contains(&v.len()) {
        return false;
    }
    let mut out = [0u8; 768];
    let Some(text) = base64_decode_text(body, &mut out, |b| b.is_ascii_graphic() || b == b' ') else {
        return false;
    };
    // Words, or JSON members typed around them (a Grafana key's `{"k":"…","n":"example",…}`, read
    // from its start or after a prefix of whole bytes).
    // Among JSON members, a marker in a name the owner chose (`"n":"sample-app"`) leaves a
    // generated member (`"k":"s8nn8gmX…"`) the key: only with none is the whole typed.
    let json_typed = || {
        contains_ci(text, b"\":\"")
            && !text
                .split(|&b| b == b'"')
                .skip(1)
                .step_by(2)
                .any(|s| looks_random(s, 16) && !MARKERS.iter().any(|m| contains_ci(s, m)))
    };
    let words = text.iter().all(|&b| b.is_ascii_alphanumeric() || b == b' ')
        && text.split(|&b| b == b' ').filter(|w| !w.is_empty()).count() >= 3
        || json_typed();
    const MARKERS: [&[u8]; 5] = [b"example", b"sample", b"placeholder", b"dummy", b"fake"];
    words && MARKERS.iter().any(|m| contains_ci(text, m)) || counted_through(text) || ends_in_run(text)
}

/// Text ending in six or more of one character (`AKCxxxxxxxxxx`, `user@corp:AKCxxxxxx`): a prefix
/// then filler, typed and then encoded (an `.npmrc`'s `_auth`). Decoded key bytes are no text.
fn ends_in_run(text: &[u8]) -> bool {
    text.len() >= 8 && text[text.len() - 6..].iter().all(|&b| b == text[text.len() - 1])
}

/// Whether `v` opens with an ISO 8601 date (`2026-12-07`).
pub(crate) fn iso_date(v: &[u8]) -> bool {
    v.len() >= 10
        && v[..4].iter().all(u8::is_ascii_digit)
        && v[4] == b'-'
        && v[5..7].iter().all(u8::is_ascii_digit)
        && v[7] == b'-'
        && v[8..10].iter().all(u8::is_ascii_digit)
}
