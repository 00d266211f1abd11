//! Proves that the scan's quick rejections (a word's first two letters checked before it is
//! measured, split or compared) never turn away a word the full comparison would take; never
//! runs outside tests.

use super::rules::Rng;
use super::{CREDENTIAL_WORDS, KEY_CLASS, credential_word, credential_words_end, run_end_max, skip_blank};

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
    for a in CREDENTIAL_WORDS {
        for sa in spellings(a) {
            shapes.push(sa.clone());
            for lead in [&b"_"[..], b"-", b"."] {
                shapes.push([lead, &sa[..]].concat());
            }
            for b in CREDENTIAL_WORDS {
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
            for w in CREDENTIAL_WORDS {
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
