//! Proves that the scan's quick rejections (a word's first two letters checked before it is
//! measured, split or compared; a key's keyword filter; a word too short for a head) never turn
//! away a word the full comparison would take; never runs outside tests.

use super::findings;
use super::prefilter::{
    KEY_BYTE_BITS, KeyStart, PASSWORD_WORD_THIRD, SEGMENT_START, SEPARATED_PASSWORD, VENDOR_BYTES,
    VENDOR_SHORTEST, WORD_BEFORE, WORD_BYTE, holds_keyword, inert_key, inert_word, may_hold_keyword,
    measure_key, shorter_than_a_head, shorter_than_a_token, without,
};
use super::rules::{
    Rng, VENDORS, candidates, headed_at, keywords, prefixes, segment_start, tokens_of_every_shape,
};
use crate::bytes::{run_end, run_end_max, skip_blank};
use crate::scan::Scan;
use crate::words::{
    CREDENTIAL_WORDS, KEY_CLASS, KEY_SEPARATOR, NON_ASCII_WORD, PASSWORD_WORD_INDEX, PASSWORD_WORDS,
    SECRET_WORD_PAIRS, credential_word, credential_words_end, is_key_byte,
};

/// The definition, without any quick rejection: each segment made of the words alone.
fn credential_word_by_definition(w: &[u8]) -> bool {
    fn made_of(seg: &[u8]) -> bool {
        seg.is_empty()
            || CREDENTIAL_WORDS.iter().any(|w| {
                seg.len() >= w.len() && seg[..w.len()].eq_ignore_ascii_case(w) && made_of(&seg[w.len()..])
            })
    }
    !w.is_empty() && w.len() <= 32 && w.split(|&b| matches!(b, b'_' | b'-' | b'.')).all(made_of)
}

/// Past the credential words after `kend`, every word measured (the rule without its quick
/// rejection).
fn credential_words_end_by_definition(bytes: &[u8], kend: usize) -> usize {
    let mut end = kend;
    for _ in 0..3 {
        let start = skip_blank(bytes, end);
        if start == end {
            break;
        }
        let e = run_end_max(bytes, start, 33, |b| KEY_CLASS[usize::from(b)] != 0);
        if !credential_word_by_definition(&bytes[start..e]) {
            break;
        }
        end = e;
    }
    end
}

/// Each word in lower case, upper case and capitalised.
fn spellings(w: &[u8]) -> [Vec<u8>; 3] {
    let mut capital = w.to_ascii_lowercase();
    capital[0] = capital[0].to_ascii_uppercase();
    [w.to_ascii_lowercase(), w.to_ascii_uppercase(), capital]
}

#[test]
fn every_credential_word_shape_is_still_one() {
    let joins: [&[u8]; 4] = [b"", b"_", b"-", b"."];
    let mut shapes: Vec<Vec<u8>> = Vec::new();
    for a in CREDENTIAL_WORDS.iter() {
        for sa in spellings(a) {
            shapes.push(sa.clone());
            for lead in [&b"_"[..], b"-", b"."] {
                shapes.push([lead, &sa[..]].concat());
            }
            for b in CREDENTIAL_WORDS.iter() {
                for sb in spellings(b) {
                    for j in joins {
                        shapes.push([&sa[..], j, &sb[..]].concat());
                        for c in [&b"key"[..], b"TOKEN", b"Secret"] {
                            shapes.push([&sa[..], j, &sb[..], j, c].concat());
                        }
                    }
                }
            }
        }
    }
    for w in &shapes {
        assert_eq!(
            credential_word(w),
            credential_word_by_definition(w),
            "{:?}",
            String::from_utf8_lossy(w)
        );
        if w.len() <= 32 {
            assert!(credential_word(w), "{:?}", String::from_utf8_lossy(w));
        }
    }
}

#[test]
fn any_first_two_bytes_are_judged_as_by_the_definition() {
    // Every byte pair (ASCII, controls, UTF-8 lead and continuation bytes) in front of each word's
    // tail, alone and as a segment: the pair filter folds case with `& 31`, so bytes that share
    // bits with a word's letters must still reach the comparison, and none that match may be
    // turned away.
    for a in 0..=255u8 {
        for b in 0..=255u8 {
            for w in CREDENTIAL_WORDS.iter() {
                let tail = &w[2.min(w.len())..];
                for word in [
                    [&[a, b][..], tail].concat(),
                    [&b"key_"[..], &[a, b], tail].concat(),
                ] {
                    assert_eq!(
                        credential_word(&word),
                        credential_word_by_definition(&word),
                        "{word:?}"
                    );
                }
            }
            let pair = [a, b];
            assert_eq!(
                credential_word(&pair),
                credential_word_by_definition(&pair),
                "{pair:?}"
            );
            assert_eq!(credential_word(&[a]), credential_word_by_definition(&[a]), "{a}");
        }
    }
}

#[test]
fn the_words_after_a_key_end_where_the_definition_ends_them() {
    // Blanks, operators, separators, a non-ASCII letter, credential words in several spellings,
    // ordinary words and values, split at `|`.
    const PIECES: &str = " |  |\t|\n|=|: |_|-|.|(|\"|é|a|k|ke|key|Key|KEY|keys|api|API|apiKey|api_key|\
        access|ACCESS|accesskey|access-token|secret|Secret.Key|private|token|auth|authtoken|pdfshift|\
        service|payment|the|tests|x9|0123456789abcdefABCDEF0123456789|sk_live_0123456789abcdefghij";
    let pieces: Vec<&[u8]> = PIECES.split('|').map(str::as_bytes).collect();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for _ in 0..20_000 {
        let mut text = Vec::new();
        for _ in 0..1 + rng.below(12) {
            text.extend_from_slice(pieces[rng.below(pieces.len())]);
        }
        for kend in 0..=text.len() {
            assert_eq!(
                credential_words_end(&text, kend),
                credential_words_end_by_definition(&text, kend),
                "{:?} at {kend}",
                String::from_utf8_lossy(&text)
            );
        }
    }
}

/// Whether a segment starts past the key's first byte, as the scan's key loop computes it from
/// [`SEGMENT_START`].
fn inner_starts(key: &[u8]) -> bool {
    let mut before = 0usize;
    let mut inner = 0u8;
    for &b in key {
        inner |= SEGMENT_START[0][before] & SEGMENT_START[1][usize::from(b)];
        before = usize::from(b);
    }
    inner != 0
}

/// The definition: some keyword rule's word is the key's text at a segment start, any case.
fn holds_keyword_by_definition(key: &[u8]) -> bool {
    (0..key.len()).any(|j| {
        segment_start(key, j)
            && keywords().any(|w| key.get(j..j + w.len()).is_some_and(|k| k.eq_ignore_ascii_case(w)))
    })
}

#[test]
fn the_segment_table_agrees_with_the_matcher_on_every_pair_of_key_bytes() {
    let key_bytes: Vec<u8> = (0..=255u8).filter(|&b| KEY_CLASS[usize::from(b)] != 0).collect();
    for &a in &key_bytes {
        for &b in &key_bytes {
            assert_eq!(
                SEGMENT_START[0][usize::from(a)] & SEGMENT_START[1][usize::from(b)] != 0,
                segment_start(&[a, b], 1),
                "{:?}",
                [char::from(a), char::from(b)]
            );
        }
    }
    // The key loop starts with `before = 0`: its first byte starts nothing past the first.
    assert!(SEGMENT_START[0][0] == 0);
    for key in [&b"abc"[..], b"ABC", b"Abc", b"a"] {
        assert!(!inner_starts(key), "{key:?}");
    }
    for key in [&b"aB"[..], b"a1b", b"a_b", b"x.y", b"a-b", b"9a"] {
        assert!(inner_starts(key), "{key:?}");
    }
}

/// The segment bits of the bytes `a` then `b` as the key loop reads them: [`SEGMENT_START`]'s
/// where `b` is a letter, none elsewhere.
fn letter_segment(a: usize, b: usize) -> u8 {
    if u8::try_from(b).is_ok_and(|b| b.is_ascii_alphabetic()) {
        SEGMENT_START[0][a] & SEGMENT_START[1][b]
    } else {
        0
    }
}

/// The key loop looks a segment up only where it starts with a letter: it may, for no keyword
/// starts otherwise. A key whose only inner segments start with a digit holds a keyword only at
/// its start (`3ca7f0e1b9d2`: none; `abyssale2fa0c1`: `abyssale`), one with a segment starting
/// with a letter after a digit anywhere (`a94f0accuweather7e`: `accuweather`).
#[test]
fn the_key_loop_looks_a_keyword_up_at_a_letter_only() {
    assert!(keywords().all(|w| w[0].is_ascii_alphabetic()));
    for (key, holds) in [
        (&b"3ca7f0e1b9d2"[..], false),
        (b"0a1b2c3d4e5f", false),
        (b"abyssale2fa0c1", true),
        (b"a94f0accuweather7e", true),
    ] {
        let (end, _, _, inner) = measure_key(key, 0);
        assert_eq!(end, key.len());
        assert_eq!(may_hold_keyword(key, inner != 0), holds, "{key:?}");
        assert_eq!(holds_keyword(key, inner != 0), holds, "{key:?}");
        assert_eq!(holds_keyword_by_definition(key), holds, "{key:?}");
    }
}

/// A key before a `=` or a call that starts as a provider's word does is read for the
/// provider's value only when it holds the word: `versioneye = "…"` and `sourcegraph = "…"` are
/// the providers' keys, `version = "…"`, `sources = "…"` and `checksum = "…"` with the same
/// values are not, and a call's literal after the provider's word is still the call's. The
/// scans agree with the quick rejections off.
#[test]
fn a_key_before_a_call_is_read_for_a_provider_only_when_it_holds_its_word() {
    const ALNUM: &str = "MJ83QA1aasOycNEek8vbz5ZMq4x2lictddIDjsAy";
    const HEX: &str = "1484802af83577cc0f1257f18fd0d33562a0853f";
    for (key, value, found) in [
        ("versioneye", ALNUM, true),
        ("version", ALNUM, false),
        ("sourcegraph", HEX, true),
        ("sources", HEX, false),
        ("checksum", HEX, false),
    ] {
        for text in [
            format!("{key} = \"{value}\""),
            format!("let {key} = \"{value}\";"),
        ] {
            let quick = findings(&text);
            assert_eq!(quick, without(|| findings(&text)), "{text}");
            assert_eq!(!quick.is_empty(), found, "{text}");
        }
    }
}

/// A dashed key is read for a provider's word glued to its value only when 16 bytes or more
/// follow its first dash: `abyssale-<value>` is the provider's key, while `abyssale-docs` and
/// `cache-dir = "<value>"` are names, read as any key is. The scans agree with the quick
/// rejections off.
#[test]
fn a_dashed_key_is_read_for_a_glued_value_only_when_one_fits_after_its_dash() {
    const VALUE: &str = "yCyxLJp9fAVGmTaq4OnVPUZl77r31X1ZkZJscbeR";
    for (text, read, found) in [
        (format!("abyssale-{VALUE}"), true, true),
        ("see abyssale-docs for the key".to_owned(), false, false),
        (format!("cache-dir = \"{VALUE}\""), false, false),
    ] {
        let at = text.find("abyssale").or_else(|| text.find("cache")).unwrap_or(0);
        assert_eq!(
            inert_key(text.as_bytes(), at, || false) == KeyStart::Read,
            read,
            "{text}"
        );
        let quick = findings(&text);
        assert_eq!(quick, without(|| findings(&text)), "{text}");
        assert_eq!(!quick.is_empty(), found, "{text}");
    }
}

/// A password word as a key's segment is read whether its first byte is a key's (`APP_PASSWORT`,
/// `svc.kennwort`) or not (`DB_` before `пароль`, the separator ending the key's bytes); a key
/// whose segments start no password word (`APP_HOST`, `svc.name`) is passed over.
#[test]
fn a_password_word_after_a_keys_separator_is_read() {
    for (text, read) in [
        ("APP_PASSWORT = x", true),
        ("svc.kennwort: x", true),
        ("DB_пароль = x", true),
        ("APP_HOST = x", false),
        ("svc.name: x", false),
    ] {
        assert_eq!(
            inert_key(text.as_bytes(), 0, || false) == KeyStart::Read,
            read,
            "{text}"
        );
    }
    assert_eq!(
        findings("DB_пароль = Vq8Lr2Xn5Tz9").len(),
        1,
        "a foreign password word after a separator names the value"
    );
}

#[test]
fn the_key_loops_one_lookup_holds_every_table_it_stands_for() {
    // Every byte's class, and for every pair of bytes the secret-word and segment bits, as the
    // key loop reads them (the entry before shifted right by 16, ANDed with the byte's).
    for a in 0..=255usize {
        let bits = KEY_BYTE_BITS[a];
        assert_eq!(bits & 0xff, u64::from(KEY_CLASS[a]), "{a}");
        for b in 0..=255usize {
            let both = (KEY_BYTE_BITS[a] >> 16) & KEY_BYTE_BITS[b];
            assert_eq!(
                (both >> 8) as u8,
                SECRET_WORD_PAIRS[0][a] & SECRET_WORD_PAIRS[1][b],
                "{a} {b}"
            );
            assert_eq!((both >> 16) as u8 & 3, letter_segment(a, b), "{a} {b}");
            assert_eq!(
                both & 1 << 18 != 0,
                KEY_CLASS[a] & KEY_SEPARATOR != 0 && PASSWORD_WORD_INDEX[0][b] != 0,
                "{a} {b}"
            );
        }
    }
}

#[test]
fn the_scans_word_tables_hold_letters_and_digits_and_what_a_words_inside_follows() {
    for b in 0..=255u8 {
        assert_eq!(WORD_BYTE[usize::from(b)], b.is_ascii_alphanumeric(), "{b}");
        assert_eq!(
            WORD_BEFORE[usize::from(b)],
            b.is_ascii_alphanumeric() || b == b'_',
            "{b}"
        );
    }
}

#[test]
fn the_password_words_third_bytes_are_indexed_as_the_comparison_reads_them() {
    // A word's bit is set for a byte exactly when the comparison (ASCII case ignored) would
    // take that byte third.
    for (k, w) in PASSWORD_WORDS.iter().enumerate() {
        let third = w.as_bytes()[2];
        for b in 0..=255u8 {
            assert_eq!(
                PASSWORD_WORD_THIRD[usize::from(b)] & (1 << k) != 0,
                b.eq_ignore_ascii_case(&third),
                "{w} {b}"
            );
        }
    }
}

#[test]
fn every_keyword_at_any_segment_start_passes_the_keyword_filter() {
    let mut tried = 0;
    for w in keywords() {
        for sw in spellings(w) {
            let camel = {
                let mut c = w.to_ascii_lowercase();
                c[0] = c[0].to_ascii_uppercase();
                c
            };
            for key in [
                sw.clone(),
                [&sw[..], b"_key"].concat(),
                [&sw[..], b"Key"].concat(),
                [&sw[..], b"2"].concat(),
                [&b"my_"[..], &sw].concat(),
                [&b"MY-"[..], &sw, b"-TOKEN"].concat(),
                [&b"a.b."[..], &sw].concat(),
                [&b"x9"[..], &sw].concat(),
                [&b"my"[..], &camel, b"Secret"].concat(),
                [&b"getMy"[..], &camel].concat(),
            ] {
                assert!(
                    holds_keyword_by_definition(&key),
                    "{:?}",
                    String::from_utf8_lossy(&key)
                );
                assert!(
                    may_hold_keyword(&key, inner_starts(&key)),
                    "{:?}",
                    String::from_utf8_lossy(&key)
                );
                tried += 1;
            }
        }
    }
    assert!(tried > 10_000, "{tried}");
}

#[test]
fn the_keyword_filter_turns_away_only_keys_holding_no_keyword() {
    // Keys made of keywords' heads and tails, whole keywords, ordinary words, digits and
    // separators in any case: every key holding a keyword passes, and most without one do not.
    let words: Vec<&[u8]> = keywords().collect();
    const PLAIN: &[&[u8]] = &[
        b"the", b"order", b"request", b"limits", b"service", b"Error", b"id", b"key", b"Token", b"x", b"9",
        b"_", b"-", b".", b"dd", b"DD", b"api", b"secret", b"access", b"Auth",
    ];
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let (mut held, mut turned_away, mut without) = (0, 0, 0);
    for _ in 0..100_000 {
        let mut key = Vec::new();
        for _ in 0..1 + rng.below(4) {
            let piece: Vec<u8> = match rng.below(4) {
                0 => words[rng.below(words.len())].to_vec(),
                1 => {
                    let w = words[rng.below(words.len())];
                    let cut = rng.below(w.len() + 1);
                    if rng.below(2) == 0 {
                        w[..cut].to_vec()
                    } else {
                        w[cut..].to_vec()
                    }
                }
                _ => PLAIN[rng.below(PLAIN.len())].to_vec(),
            };
            let piece = match rng.below(4) {
                0 => piece.to_ascii_uppercase(),
                1 if !piece.is_empty() => {
                    let mut p = piece;
                    p[0] = p[0].to_ascii_uppercase();
                    p
                }
                _ => piece,
            };
            key.extend_from_slice(&piece);
        }
        if key.is_empty() {
            continue;
        }
        let passes = may_hold_keyword(&key, inner_starts(&key));
        // The words' own test, which the scan asks where the filter lets a key before a call
        // through, is the definition itself.
        assert_eq!(
            holds_keyword(&key, inner_starts(&key)),
            holds_keyword_by_definition(&key),
            "{:?}",
            String::from_utf8_lossy(&key)
        );
        if holds_keyword_by_definition(&key) {
            held += 1;
            assert!(passes, "{:?}", String::from_utf8_lossy(&key));
        } else {
            without += 1;
            turned_away += usize::from(!passes);
        }
    }
    assert!(held > 10_000 && without > 10_000, "{held} {without}");
    assert!(turned_away * 2 > without, "{turned_away} of {without}");
}

/// A random text of words, keys, keywords, vendor prefixes, vendors' tokens, random tokens,
/// operators and blanks.
fn random_text(rng: &mut Rng, words: &[&[u8]], prefixes: &[&[u8]], tokens: &[String]) -> String {
    const PIECES: &[&str] = &[
        " ",
        " ",
        " ",
        "  ",
        "\t",
        "\n",
        "\n\n",
        ", ",
        ". ",
        ": ",
        ":",
        "=",
        " = ",
        "=\"",
        "\"",
        "'",
        "`",
        "(",
        ")",
        "{",
        "}",
        "[",
        "]",
        "<",
        ">",
        "</",
        "/",
        "+",
        "-",
        "_",
        ".",
        "|",
        ";",
        "%3D",
        "é",
        "中",
        "the",
        "payment",
        "service",
        "Request",
        "limits",
        "ServiceError",
        "order_id",
        "o.id",
        "mid-batch",
        "password",
        "Passwort",
        "secret",
        "token",
        "api_key",
        "apiKey",
        "AUTH",
        "key",
        "Key",
        "sig",
        "bot",
        "Bearer",
        "Basic",
        "mysql",
        "curl",
        "-p",
        "--password",
        "identified by",
        "insert",
        "export",
        "access",
        "private",
        "ACCESS",
        "value",
        "name: ",
        "- name: ",
        "value: ",
        "default",
    ];
    const ALPHABETS: &[&[u8]] = &[
        b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
        b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/",
        b"0123456789abcdef",
        b"abcdefghijklmnopqrstuvwxyz0123456789_-",
    ];
    let token = |rng: &mut Rng, n: usize| -> String {
        let a = ALPHABETS[rng.below(ALPHABETS.len())];
        (0..n).map(|_| char::from(a[rng.below(a.len())])).collect()
    };
    let mut text = String::new();
    for _ in 0..1 + rng.below(24) {
        match rng.below(9) {
            0 | 1 => text.push_str(PIECES[rng.below(PIECES.len())]),
            8 => text.push_str(&tokens[rng.below(tokens.len())]),
            2 => {
                let w = String::from_utf8_lossy(words[rng.below(words.len())]).into_owned();
                let w = match rng.below(3) {
                    0 => w.to_ascii_uppercase(),
                    1 => w[..1].to_ascii_uppercase() + &w[1..],
                    _ => w,
                };
                text.push_str(&w);
            }
            3 => {
                text.push_str(&String::from_utf8_lossy(prefixes[rng.below(prefixes.len())]));
                let n = rng.below(60);
                text.push_str(&token(rng, n));
            }
            4 => {
                let n = 1 + rng.below(80);
                text.push_str(&token(rng, n));
            }
            5 => {
                // A head-sized run with a vendor marker inside.
                let n = 20 + rng.below(50);
                text.push_str(&token(rng, n));
                text.push_str(&String::from_utf8_lossy(prefixes[rng.below(prefixes.len())]));
                let n = rng.below(20);
                text.push_str(&token(rng, n));
            }
            _ => {
                text.push_str(PIECES[rng.below(PIECES.len())]);
                text.push(' ');
            }
        }
    }
    text
}

#[test]
fn the_quick_rejections_change_no_finding() {
    let words: Vec<&[u8]> = keywords().collect();
    let prefixes: Vec<&[u8]> = prefixes().collect();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut found = 0;
    let mut tokens = Vec::new();
    for n in 0..20_000 {
        if n % 500 == 0 {
            tokens = tokens_of_every_shape(&mut rng);
        }
        let text = random_text(&mut rng, &words, &prefixes, &tokens);
        let quick = findings(&text);
        let full = without(|| findings(&text));
        assert_eq!(quick, full, "{text:?}");
        found += quick.len();
    }
    // The texts hold findings of many kinds, not only clean prose.
    assert!(found > 2_000, "{found}");
}

/// Calls `f` with each of 10,000 random texts (words, keywords, prefixes and tokens of every
/// shape) and each start of a run of letters and digits in it, with the run's end as the scan
/// knows it: the end, when the byte after the run is no key's, else 0.
fn each_word_start(seed: u64, mut f: impl FnMut(&str, usize, usize)) {
    let words: Vec<&[u8]> = keywords().collect();
    let prefixes: Vec<&[u8]> = prefixes().collect();
    let mut rng = Rng(seed);
    let mut tokens = Vec::new();
    for n in 0..10_000 {
        if n % 100 == 0 {
            tokens = tokens_of_every_shape(&mut rng);
        }
        let text = random_text(&mut rng, &words, &prefixes, &tokens);
        let bytes = text.as_bytes();
        for i in 0..bytes.len() {
            if !bytes[i].is_ascii_alphanumeric() {
                continue;
            }
            let run = run_end(bytes, i, |b| b.is_ascii_alphanumeric());
            let run = if KEY_CLASS[usize::from(bytes.get(run).copied().unwrap_or(b' '))] == 0 {
                run
            } else {
                0
            };
            f(&text, i, run);
        }
    }
}

#[test]
fn a_word_shorter_than_a_head_holds_none() {
    let (mut ruled_out, mut headed) = (0, 0);
    each_word_start(0x5851_f42d_4c95_7f2d, |text, i, run| {
        let head = headed_at(text, i);
        headed += usize::from(head.is_some());
        if shorter_than_a_head(text.as_bytes(), i, run) {
            ruled_out += 1;
            assert!(head.is_none(), "{text:?} at {i}");
        }
    });
    // Both kinds of word were met: short ones, and tokens with a head.
    assert!(ruled_out > 10_000 && headed > 40, "{ruled_out} {headed}");
}

#[test]
fn every_token_a_word_may_start_is_as_long_as_the_shortest_and_of_its_bytes() {
    // Random tokens of each rule a word start is matched against (those without a head).
    let mut rng = Rng(0x1405_7b7e_f767_814f);
    let mut checked = 0;
    for _ in 0..20 {
        for (v, token) in VENDORS.iter().zip(tokens_of_every_shape(&mut rng)) {
            let t = token.as_bytes();
            if !candidates(v.prefix()[0], v.prefix()[1])
                .iter()
                .any(|c| std::ptr::eq(c, v))
            {
                continue;
            }
            assert!(t.len() >= VENDOR_SHORTEST, "{token}");
            for &b in t {
                assert!(
                    VENDOR_BYTES[usize::from(b >> 6)] & (1 << (b & 63)) != 0,
                    "{token} {b}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 2_000, "{checked}");
}

#[test]
fn a_word_shorter_than_any_token_starts_none() {
    let (mut ruled_out, mut matched) = (0, 0);
    each_word_start(0x2127_599b_f432_5c37, |text, i, run| {
        let bytes = text.as_bytes();
        // Every rule the scan matches at a word start with these two bytes.
        let b1 = bytes.get(i + 1).copied().unwrap_or(0);
        let found = candidates(bytes[i], b1)
            .iter()
            .any(|v| v.matches(text, i).is_some());
        matched += usize::from(found);
        if shorter_than_a_token(bytes, i, run) {
            ruled_out += 1;
            assert!(!found, "{text:?} at {i}");
        }
    });
    // Both kinds of word were met: short ones, and tokens.
    assert!(ruled_out > 10_000 && matched > 1_000, "{ruled_out} {matched}");
}

#[test]
fn a_key_is_measured_as_byte_by_byte() {
    // Keys of every length up to 12 (odd and even, to the text's end or before a blank), of
    // letters, digits and separators in any case, from every offset.
    const BYTES: &[u8] = b"aApPsSeEkKtToOcCrRwWuUzZ09_-. \n=";
    let mut rng = Rng(0x6a09_e667_f3bc_c909);
    for _ in 0..20_000 {
        let text: Vec<u8> = (0..rng.below(14))
            .map(|_| BYTES[rng.below(BYTES.len())])
            .collect();
        for i in 0..text.len() {
            let end = run_end(&text, i, |b| KEY_CLASS[usize::from(b)] != 0);
            let held = text[i..end].iter().fold(0, |h, &b| h | KEY_CLASS[usize::from(b)]);
            let (mut pair, mut inner) = (0, 0);
            for w in text[i..end].windows(2) {
                let (a, b) = (usize::from(w[0]), usize::from(w[1]));
                pair |= SECRET_WORD_PAIRS[0][a] & SECRET_WORD_PAIRS[1][b];
                inner |= letter_segment(a, b);
                if KEY_CLASS[a] & KEY_SEPARATOR != 0 && PASSWORD_WORD_INDEX[0][b] != 0 {
                    inner |= SEPARATED_PASSWORD;
                }
            }
            assert_eq!(measure_key(&text, i), (end, held, pair, inner), "{text:?} at {i}");
        }
    }
}

/// Heads of the rules the scan's word rules dispatch on a word's first bytes, and what the key
/// rules read after a key (`=`, `(`, a flag, a segment in another language), mixed into the
/// pass-over tests' texts so that both gates meet the words they must not pass over.
const RULE_PIECES: &[&str] = &[
    "Bearer ",
    "basic ",
    "Authorization: Basic dXNlcjpodW50ZXIy",
    "bcrypt$2b$12$",
    "$2y$10$",
    "api.telegram.org/bot",
    "bot1234567890:AAHkq9sT2xV7bN4mP8rL1cZ6wQ3yE5uJ0oIa",
    "1234567890:AAHkq9sT2xV7bN4mP8rL1cZ6wQ3yE5uJ0oI",
    "MTE0NzQ4MzY0NzI1NDI3NjE2MA.GhX7aQ.k9Lm2Nq8Rs4Tv6Wx1Yz3Ab5Cd7Ef9Gh0IjKlMn",
    "identified by 'Xk9mQ2vL7pR4'",
    "IDENTIFIED WITH mysql_native_password BY ",
    "INSERT INTO users (name, password) VALUES ('bob', 'Xk9mQ2vL7pR4');",
    " sha1$Xk9mQ2$2fd4e1c67a2d28fced849ee1bb76e7391b93eb12 ",
    " scrypt$16384$8$1$kYdqsEtVhbvS9cSbTr4G1A$Hb8s1b2V3qYk9Lm7xQ2pR4tZ6wE0uI8oA5sD3fG1hJk ",
    "pbkdf2_sha256$260000$",
    "argon2id$v=19$",
    " md5$Xk9mQ2$9e107d9d372bb6826bd81d3542a419d6 ",
    "htpasswd -b .htpasswd admin ",
    "wpa_passphrase home ",
    "net use \\\\srv\\share ",
    "NET USER admin ",
    "chpasswd",
    "vault login ",
    "ConvertTo-SecureString 'Xk9mQ2vL7pR4' -AsPlainText",
    " eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N ",
    "<master>{Xk9mQ2vL7pR4=}</master>",
    "0123456789abcdef0123456789abcdef-us12",
    "(",
    " (",
    "auth=(\"admin\", \"Xk9mQ2vL7pR4\")",
    "HTTPBasicAuth(\"admin\", \"Xk9mQ2vL7pR4\")",
    "smtp.login(user, \"Xk9mQ2vL7pR4\")",
    " login(\"admin\", \"Xk9mQ2vL7pR4\")",
    " signin (\"admin\", \"Xk9mQ2vL7pR4\")",
    " new DirectoryEntry(\"LDAP://dc=example\", \"admin\", \"hunter2\")",
    "NetworkCredential (\"admin\", \"Xk9mQ2vL7pR4\")",
    "\n- name: SONAR_LOGIN\n  value: 9acf34ff1e738bcd6d5daf102a8cfcb8a158e44e\n",
    "<property name=\"sonar.login\" value=\"9acf34ff1e738bcd6d5daf102a8cfcb8a158e44e\" />",
    " pdfshift: 57f4eca61ae05e203d29490c5afe9211",
    " pdfshift ACCESS 57f4eca61ae05e203d29490c5afe9211 ",
    "= ",
    "sig=",
    "DB_KENNWORT=",
    "db_пароль=",
    "Passwort: ",
    "-p",
    "--password ",
    "access key ",
    "…",
    "é",
];

/// Calls `f` with each of 4,000 random texts: [`random_text`]'s words, keywords, prefixes and
/// tokens, with [`RULE_PIECES`] between them.
fn each_rule_text(seed: u64, mut f: impl FnMut(&str)) {
    let words: Vec<&[u8]> = keywords().collect();
    let prefixes: Vec<&[u8]> = prefixes().collect();
    let mut rng = Rng(seed);
    let mut tokens = Vec::new();
    for n in 0..4_000 {
        if n % 100 == 0 {
            tokens = tokens_of_every_shape(&mut rng);
        }
        let mut text = random_text(&mut rng, &words, &prefixes, &tokens);
        for _ in 0..rng.below(6) {
            text.push_str(RULE_PIECES[rng.below(RULE_PIECES.len())]);
            if rng.below(2) == 0 {
                text.push_str(&random_text(&mut rng, &words, &prefixes, &tokens));
            }
        }
        f(&text);
    }
}

#[test]
fn a_key_start_is_read_as_the_key_rule_reads_it() {
    // Every position the scan tries a key at (a key byte after none): what the scan does there,
    // passing over what the quick test says the key rule would do nothing with, is what the key
    // rule does, run in full on another fresh scan: the same findings, the same words listed for
    // the same-line pass, the same glued prefix noted, the same plain word measured.
    let (mut passed, mut read, mut found) = (0, 0, 0);
    each_rule_text(0x3c6e_f372_fe94_f82b, |text| {
        let bytes = text.as_bytes();
        for i in 0..bytes.len() {
            if !is_key_byte(bytes[i]) || i > 0 && (is_key_byte(bytes[i - 1]) || bytes[i - 1] >= 0x80) {
                continue;
            }
            let (mut quick, mut full) = (Scan::new(text), Scan::new(text));
            let end = quick.key_start(i);
            full.key_at(i);
            assert_eq!(quick.found, full.found, "{text:?} at {i}");
            assert_eq!(
                (end, &quick.name_words, quick.names_listed, quick.separated_key),
                (
                    full.plain_key_end,
                    &full.name_words,
                    full.names_listed,
                    full.separated_key
                ),
                "{text:?} at {i}"
            );
            if inert_key(bytes, i, crate::judge::spent) == KeyStart::Read {
                read += 1;
            } else {
                passed += 1;
            }
            found += usize::from(!full.found.is_empty());
        }
    });
    // Both ways met often, and keys that hold something.
    assert!(
        passed > 20_000 && read > 2_000 && found > 500,
        "{passed} {read} {found}"
    );
}

#[test]
fn a_word_the_scan_passes_over_is_one_the_word_rules_leave_alone() {
    // Every word start the scan reads (letters and digits after a byte no word's inside
    // follows), with the word's end as the scan knows it: where the quick test says the word
    // rules would find nothing, they find nothing there on a fresh scan.
    let (mut passed, mut read, mut found) = (0, 0, 0);
    each_rule_text(0xa54f_f53a_5f1d_36f1, |text| {
        let bytes = text.as_bytes();
        for i in 0..bytes.len() {
            let prev = match i.checked_sub(1).map(|p| bytes[p]) {
                None => b'\n',
                Some(b) if b >= 0x80 => NON_ASCII_WORD,
                Some(b) => b,
            };
            if !WORD_BYTE[usize::from(bytes[i])] || WORD_BEFORE[usize::from(prev)] {
                continue;
            }
            let run = run_end(bytes, i, |b| b.is_ascii_alphanumeric());
            let run = if bytes.get(run).is_some_and(|&b| KEY_CLASS[usize::from(b)] != 0) {
                0
            } else {
                run
            };
            let mut scan = Scan::new(text);
            let quick = inert_word(bytes, i, prev, run);
            scan.word_at(i, prev, run);
            if quick {
                passed += 1;
                assert!(scan.found.is_empty(), "{text:?} at {i}");
            } else {
                read += 1;
                found += usize::from(!scan.found.is_empty());
            }
        }
    });
    assert!(
        passed > 20_000 && read > 5_000 && found > 500,
        "{passed} {read} {found}"
    );
}
