//! The vendor rules as data: the tables `build.rs` compiles from `rules/*.toml` and the one
//! matcher that reads them. It must never hold a provider in code: a provider is a data entry.

use crate::bytes::{contains_ci, run_end_max, token_continues_at};
use crate::chars::{has_digit, mixed_case};
use crate::words::{Words, words_from};

/// A provider's token: a literal prefix and a body of character-class runs and literals (facts
/// from the public rule sets of gitleaks, trufflehog and detect-secrets and vendor docs, cited
/// in each entry's `source`).
pub struct Vendor {
    /// The rule name shown in diagnostics (one per provider): a slice of `VENDOR_TEXT`, as are
    /// `prefix` and `not_before` (offset, length).
    name: (u16, u8),
    /// The literal the token starts with (after `head`, when it has one).
    prefix: (u16, u8),
    /// The class and length of the random run before `prefix` (`(u8::MAX, 0)`: none).
    head: (u8, u8),
    ci: bool,
    after_dash: bool,
    lenient: bool,
    segs: (usize, usize),
    /// The body's longest length.
    max: u32,
    entropy: f32,
    digit: bool,
    not_before: (u16, u8),
    /// A range of `VENDOR_STOPWORDS`.
    stopwords: (u16, u16),
}

/// Where a rule of [`VENDORS`] comes from (same index).
pub struct RuleInfo {
    /// The rule's unique id in the data.
    pub id: &'static str,
    /// The data file (family) it is in.
    pub family: &'static str,
    /// Where its facts come from.
    pub source: &'static str,
}

/// One piece of a body: a run of `min..=max` bytes of a class, or a literal byte (`class` is
/// `u8::MAX`).
struct Seg {
    class: u8,
    lit: u8,
    min: u16,
    max: u16,
}

/// A provider named by a keyword in the key: its name (a slice of `KEYWORD_NAMES`) and the
/// value's one class run.
struct KeywordRule {
    name: (u16, u8),
    class: u8,
    min: u8,
    max: u8,
}

include!(concat!(env!("OUT_DIR"), "/rules.rs"));

/// Filler where a generated token stands (`0000…`, `XXXX…`, `abcdef…`, `EXAMPLE`).
pub(crate) fn filler_like(token: &[u8]) -> bool {
    stand_in(token)
}

/// Whether `token` is a key a vendor documents as an example (`[[example]]` in the rule data).
pub(crate) fn documented_example(token: &[u8]) -> bool {
    DOCUMENTED_EXAMPLES.contains(token)
}

/// The length of the documented example `span` starts with, when it ends there or before a byte
/// no token continues with (`…GMGw==;BlobEndpoint=…` in a connection string).
pub(crate) fn documented_example_at(span: &[u8]) -> Option<usize> {
    DOCUMENTED_EXAMPLES
        .iter()
        .find(|e| {
            span.starts_with(e)
                && span.get(e.len()).is_none_or(|&b| {
                    !(b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'_' | b'-'))
                })
        })
        .map(|e| e.len())
}

/// The provider names the keyword rules report, sorted and each once (for the documented counts).
#[must_use]
pub fn keyword_providers() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = KEYWORD_RULES
        .iter()
        .map(|r| &KEYWORD_NAMES[usize::from(r.name.0)..][..usize::from(r.name.1)])
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// Every keyword rule's words (for the tests of the scan's quick rejections).
#[cfg(test)]
pub(crate) fn keywords() -> impl Iterator<Item = &'static [u8]> {
    KEYWORDS
        .iter()
        .map(|&(off, len, _)| &KEYWORD_BLOB.as_bytes()[off as usize..off as usize + usize::from(len)])
}

/// Every vendor rule's prefix (for the tests of the scan's quick rejections).
#[cfg(test)]
pub(crate) fn prefixes() -> impl Iterator<Item = &'static [u8]> {
    VENDORS.iter().map(Vendor::prefix)
}

/// A random token of each vendor rule's shape (for the tests of the scan's quick rejections).
#[cfg(test)]
pub(crate) fn tokens_of_every_shape(rng: &mut Rng) -> Vec<String> {
    VENDORS.iter().map(|v| tests::token(v, rng)).collect()
}

/// Key words that make a key metadata about a provider rather than its credential.
const METADATA: Words = words_from!(&[
    b"sha",
    b"hash",
    b"commit",
    b"checksum",
    b"digest",
    b"version",
    b"release",
    b"revision",
    b"etag",
    b"uuid",
    b"url",
    b"name",
    b"email",
    b"user",
    b"build",
    b"region",
    b"host",
    b"path",
    b"file",
    b"public",
    b"pub_",
]);

/// Whether a keyword may start at `j` of `key`: at its start, after a non-letter, or where a
/// CamelCase word starts.
pub(crate) fn segment_start(key: &[u8], j: usize) -> bool {
    j == 0
        || !key[j - 1].is_ascii_alphabetic()
        || key[j - 1].is_ascii_lowercase() && key[j].is_ascii_uppercase()
}

/// The provider whose keyword is a segment of `key` and whose value shape `value` has, if any.
/// `value` has been judged random-looking by the caller. `may_start` is the scan's quick filter
/// of where a keyword may start in a key (false: none does); the scan passes it in, as the
/// filter's tables are built beside these and import them.
pub(crate) fn keyword_match(
    key: &[u8],
    value: &[u8],
    may_start: impl Fn(&[u8], usize) -> bool,
) -> Option<&'static str> {
    // Metadata words count outside the provider's word (`buildkite`, `userflow` are names).
    let metadata = |part: &[u8]| METADATA.iter().any(|m| contains_ci(part, m)) || id_segment(part);
    for j in 0..key.len() {
        if !segment_start(key, j) || !may_start(key, j) {
            continue;
        }
        for (word, rule) in keyword_words_at(key, j) {
            let span = &key[j..j + word.len()];
            // The whole word, not a piece of another: no CamelCase boundary inside it
            // (`sumOfExposures` is not `sumo`), none of a longer word's letters after it.
            let inner_camel = span
                .windows(2)
                .any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase());
            let longer = key
                .get(j + word.len())
                .is_some_and(|&b| b.is_ascii_lowercase() && span[span.len() - 1].is_ascii_lowercase());
            if inner_camel || longer {
                continue;
            }
            // A provider's abbreviation (`dd`) names it only before a word for a credential
            // (`dd-apikey`, `DD_SECRET_KEY`), never alone (`dd-mm-yyyy`, `dd_trace`).
            if word.len() < 4 {
                let rest = &key[j + word.len()..];
                let sep = |b: &u8| matches!(b, b'_' | b'-' | b'.');
                let next = rest
                    .get(1..)
                    .map(|r| &r[..r.iter().position(sep).unwrap_or(r.len())]);
                if !(rest.first().is_some_and(sep) && next.is_some_and(crate::words::credential_word)) {
                    continue;
                }
            }
            if metadata(&key[..j]) || metadata(&key[j + word.len()..]) {
                return None;
            }
            let r = &KEYWORD_RULES[usize::from(rule)];
            if (usize::from(r.min)..=usize::from(r.max)).contains(&value.len())
                && value.iter().all(|&b| in_class(r.class, b))
            {
                let (off, len) = (usize::from(r.name.0), usize::from(r.name.1));
                return Some(&KEYWORD_NAMES[off..off + len]);
            }
        }
    }
    None
}

/// The keyword rules' words that are the text of `key` at `j` (any case), each with its rule's
/// index: what [`keyword_match`] reads further (the word's boundaries, metadata, the value).
pub(crate) fn keyword_words_at(key: &[u8], j: usize) -> impl Iterator<Item = (&'static [u8], u16)> + '_ {
    let (lo, hi) = KEYWORD_FIRST[usize::from(key[j].to_ascii_lowercase())];
    let words = &KEYWORDS[usize::from(lo)..usize::from(hi)];
    let word = |&(off, len, _): &(u32, u8, u16)| {
        &KEYWORD_BLOB.as_bytes()[off as usize..off as usize + usize::from(len)]
    };
    // The words are sorted and of two bytes or more (`build.rs`): those of the key's second byte
    // are one run of its first letter's, found by two binary searches, where comparing each word
    // of the letter would cost a hundred instructions a key.
    let second = key.get(j + 1).map_or(0, u8::to_ascii_lowercase);
    let from = words.partition_point(|e| word(e)[1] < second);
    let to = from + words[from..].partition_point(|e| word(e)[1] == second);
    words[from..to].iter().filter_map(move |e| {
        let w = word(e);
        key.get(j..j + w.len())
            .is_some_and(|k| k.eq_ignore_ascii_case(w))
            .then_some((w, e.2))
    })
}

/// `…_id`, `…Id`, `ID_…`: an identifier of the provider's, not its secret.
fn id_segment(key: &[u8]) -> bool {
    key.windows(2).enumerate().any(|(j, w)| {
        w.eq_ignore_ascii_case(b"id")
            && (j == 0
                || !key[j - 1].is_ascii_alphabetic()
                || w[0] == b'I' && key[j - 1].is_ascii_lowercase())
            && key.get(j + 2).is_none_or(|b| !b.is_ascii_lowercase())
    })
}

fn in_class(class: u8, b: u8) -> bool {
    CLASSES[usize::from(class)][usize::from(b >> 6)] & (1 << (b & 63)) != 0
}

/// Stand-ins that documentation and templates put after a real prefix.
const FILLERS: Words = words_from!(&[
    b"xxxx",
    b"example",
    b"0000000",
    b"your",
    b"here",
    b"redacted",
    b"placeholder",
    b"dummy",
    b"sample",
    b"replace",
    b"changeme",
    b"fake",
    b"invalid",
    b"****",
    b"....",
    b"####",
]);

/// The stand-ins a lenient rule's body is judged against.
const LENIENT_FILLERS: &[&[u8]] = &[
    b"xxxx",
    b"example",
    b"here",
    b"dummy",
    b"notreal",
    b"your",
    b"replace",
    b"placeholder",
    b"sample",
    b"redacted",
    b"changeme",
];

/// Whether a vendor prefix may start with the bytes `b0`, `b1`, `b2` (ASCII case folded; `0`
/// past the end): one lookup rules out most word starts before [`candidates`] is asked.
#[inline]
pub(crate) fn may_start(b0: u8, b1: u8, b2: u8) -> bool {
    // `| 0x20` folds ASCII case as lowercasing does wherever a letter is compared, and costs less.
    let fold = |b: u8| usize::from(b | 0x20);
    let h = ((fold(b0) << 10) ^ (fold(b1) << 5) ^ fold(b2)) & 32767;
    TRIPLES[h / 64] & (1 << (h % 64)) != 0
}

/// The vendor rules whose prefix can start with the bytes `b0`, `b1` (ASCII case folded): the
/// first byte's bucket, narrowed by a binary search on the second.
pub(crate) fn candidates(b0: u8, b1: u8) -> &'static [Vendor] {
    let h = (usize::from(b0.to_ascii_lowercase()) * 61 + usize::from(b1.to_ascii_lowercase())) & 4095;
    if PAIRS[h / 64] & (1 << (h % 64)) == 0 {
        return &[];
    }
    let (lo, hi) = FIRST[usize::from(b0.to_ascii_lowercase())];
    let (lo, hi) = (usize::from(lo), usize::from(hi));
    let seconds = &SECOND[lo..hi];
    let b1 = b1.to_ascii_lowercase();
    let from = seconds.partition_point(|&c| c < b1);
    let to = seconds.partition_point(|&c| c <= b1);
    &VENDORS[lo + from..lo + to]
}

/// Each rule's second prefix byte, lowercased, as [`VENDORS`] holds it: [`candidates`] searches
/// these bytes rather than the rules (one load a step instead of two and a bounds check).
static SECOND: [u8; VENDORS.len()] = {
    let mut t = [0u8; VENDORS.len()];
    let mut k = 0;
    while k < t.len() {
        // Every prefix has two bytes or more (the build checks).
        t[k] = VENDOR_TEXT.as_bytes()[VENDORS[k].prefix.0 as usize + 1].to_ascii_lowercase();
        k += 1;
    }
    t
};

/// The bytes of a base64 or base64url token.
static TOKEN_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'_' | b'-');
        b += 1;
    }
    t
};

/// A token at `i` holding a rule's marker after its head (`<44 random>AzFu<6>`), and where it
/// ends. The head's run is measured once: a word of prose ends long before any head does.
pub(crate) fn headed_at(text: &str, word: usize) -> Option<(&'static Vendor, usize, usize)> {
    let bytes = text.as_bytes();
    let token = |b: u8| TOKEN_BYTE[usize::from(b)];
    // Most words of a prompt end long before the shortest head would: the head's last byte,
    // then the run up to it.
    let far = bytes.get(word + HEADED_SHORTEST - 1).is_some_and(|&b| token(b));
    if !far || run_end_max(bytes, word, HEADED_SHORTEST, token) - word < HEADED_SHORTEST {
        return None;
    }
    // A base64 token may open with `+` or `/` before the word that called.
    let i = word
        - bytes[..word]
            .iter()
            .rev()
            .take_while(|&&b| matches!(b, b'+' | b'/'))
            .count();
    // (From the word itself the run was measured above.)
    if i < word && run_end_max(bytes, i, HEADED_SHORTEST, token) - i < HEADED_SHORTEST {
        return None;
    }
    VENDORS[HEADED_FROM..].iter().find_map(|v| {
        let (class, len) = (v.head.0, usize::from(v.head.1));
        // The marker first, by its first byte: one load rules out nearly every long run, where
        // comparing the slices would call out to compare them.
        let marker = v.prefix();
        if bytes.get(i + len) != marker.first() || bytes.get(i + len..i + len + marker.len()) != Some(marker)
        {
            return None;
        }
        let head = bytes.get(i..i + len)?;
        // The token starts here: the byte before it is no part of it.
        let starts = i == 0 || !in_class(class, bytes[i - 1]);
        if !starts || !head.iter().all(|&b| in_class(class, b)) || stand_in(head) {
            return None;
        }
        v.matches(text, i + len).map(|end| (v, i, end))
    })
}

/// The slice `(offset, length)` of `VENDOR_TEXT`.
fn text_at(at: (u16, u8)) -> &'static [u8] {
    let start = usize::from(at.0);
    &VENDOR_TEXT.as_bytes()[start..start + usize::from(at.1)]
}

impl Vendor {
    /// The rule name shown in diagnostics (one per provider).
    #[must_use]
    pub fn name(&self) -> &'static str {
        let start = usize::from(self.name.0);
        &VENDOR_TEXT[start..start + usize::from(self.name.1)]
    }

    /// The literal the token starts with (after its head, when it has one).
    #[must_use]
    pub fn prefix(&self) -> &'static [u8] {
        text_at(self.prefix)
    }

    /// Bytes that may not follow the token.
    fn not_before(&self) -> &'static [u8] {
        text_at(self.not_before)
    }

    /// A body holding one of these (any case) is a stand-in.
    fn stopwords(&self) -> impl Iterator<Item = &'static [u8]> {
        VENDOR_STOPWORDS[usize::from(self.stopwords.0)..usize::from(self.stopwords.1)]
            .iter()
            .map(|&at| text_at(at))
    }

    /// Whether this rule may start right after a `-`.
    pub(crate) fn after_dash(&self) -> bool {
        self.after_dash
    }

    fn segments(&self) -> &'static [Seg] {
        &SEGMENTS[self.segs.0..self.segs.1]
    }

    /// Whether the body's alphabet has capitals and no lowercase letter (`AKIA` + `[A-Z0-9]{16}`):
    /// all capitals is then how a generated body looks about once in thirty, not a sign of typing.
    fn capitals(&self) -> bool {
        let classes = || self.segments().iter().filter(|s| s.class != u8::MAX);
        classes().any(|s| (b'A'..=b'Z').any(|b| in_class(s.class, b)))
            && classes().all(|s| !(b'a'..=b'z').any(|b| in_class(s.class, b)))
    }

    /// The end of this token if it starts at `i`.
    pub(crate) fn matches(&self, text: &str, i: usize) -> Option<usize> {
        let bytes = text.as_bytes();
        // Most candidates differ in their first two bytes: compare those inline.
        let p = usize::from(self.prefix.0);
        let (p0, p1) = (VENDOR_TEXT.as_bytes()[p], VENDOR_TEXT.as_bytes()[p + 1]);
        let (b0, b1) = (*bytes.get(i)?, *bytes.get(i + 1)?);
        let same = |a: u8, b: u8| a == b || self.ci && a.eq_ignore_ascii_case(&b);
        if !same(b0, p0) || !same(b1, p1) {
            return None;
        }
        let body = i + self.prefix().len();
        let head = bytes.get(i..body)?;
        let prefix_ok = if self.ci {
            head.eq_ignore_ascii_case(self.prefix())
        } else {
            head == self.prefix()
        };
        if !prefix_ok {
            return None;
        }
        let mut pos = body;
        let mut last = u8::MAX;
        for seg in self.segments() {
            if seg.class == u8::MAX {
                if bytes.get(pos) != Some(&seg.lit) {
                    return None;
                }
                pos += 1;
                last = u8::MAX;
                continue;
            }
            let end = run_end_max(bytes, pos, usize::from(seg.max), |b| in_class(seg.class, b));
            if end - pos < usize::from(seg.min) {
                return None;
            }
            pos = end;
            last = seg.class;
        }
        // Longer than the shape allows, or glued to more of a word: not this token.
        if last != u8::MAX && bytes.get(pos).is_some_and(|&b| in_class(last, b)) {
            return None;
        }
        // Cut short by filler (`xoxp-5723…-####`, `ghp_abc…`): a stand-in.
        // So is a kind's prefix with the rest elided by three dots (`sk-svcacct-...`).
        let filler_after = matches!(bytes.get(pos), Some(b'#' | b'*'))
            || bytes[pos..].starts_with("\u{2026}".as_bytes())
            || matches!(bytes[pos - 1], b'-' | b'_') && bytes[pos..].starts_with(b"...");
        if filler_after
            || token_continues_at(text, pos)
            || bytes.get(pos).is_some_and(|b| self.not_before().contains(b))
        {
            return None;
        }
        let token = &bytes[body..pos];
        let filler = if self.lenient {
            token.len() >= 8 && token.iter().all(|&b| b == token[0])
                // Two characters in turn (`ghp_cdcdcdcd…`, `1212…`): typed, as one repeated is.
                || token.len() >= 8 && token.iter().enumerate().all(|(k, &b)| b == token[k % 2])
                // The stand-in words documentation puts after any prefix (`sk-proj-REPLACE_WITH_YOUR_KEY`);
                // `fake` is left to the stop-words, as a random body holds it now and then.
                || LENIENT_FILLERS.iter().any(|f| contains_ci(token, f))
                || crate::chars::few_kinds(token)
                || crate::chars::filler_run(token)
                || crate::chars::mask_segment_last(token)
                || crate::chars::counted_through(token)
                || crate::chars::mostly_counted(token)
                || crate::chars::repeated_group(token)
                || marked_filler(token)
                || code_name(token)
        } else {
            // A key with a generated head before its marker is judged whole: a run the body
            // opens with (`…QjAAAAAAZFR…`, a random `A` before a format's fixed `AAAAA`) follows
            // the head's random characters, as a padded key's run does.
            let whole = i
                .checked_sub(usize::from(self.head.1))
                .filter(|_| self.head.1 > 0)
                .map_or(token, |start| &bytes[start..pos]);
            typed_filler(whole, self.capitals())
                || short_word(whole)
                || crate::chars::counted_through(token)
                || slug(token)
        };
        // A digit tells a generated token from a word; a run of 16 or more random mixed-case
        // letters is generated without one (`sm_pat_` + 16 alphanumerics lacks a digit one time
        // in sixteen, `secret_` + 43 once in two thousand).
        // From 32 on, words run together are told by their low entropy (about 4 bits a letter,
        // random letters near 5), as random letters fall into short words now and then.
        let random_letters = token.len() >= 16 && crate::chars::random_letters(token)
            || token.len() >= 32 && crate::chars::mixed_case(token) && crate::chars::entropy(token) >= 4.4;
        if self.digit && !has_digit(token) && !random_letters || filler {
            return None;
        }
        if self.entropy > 0.0 && crate::chars::entropy(token) < f64::from(self.entropy) {
            return None;
        }
        if self.stopwords().any(|w| contains_ci(token, w)) || documented_example(&bytes[i..pos]) {
            return None;
        }
        Some(pos)
    }

    /// A token wrapped at the end of its line (a terminal or a chat window broke it): a next
    /// line that is nothing but a random-looking run of the token's last alphabet is its tail.
    pub(crate) fn wrapped_end(&self, bytes: &[u8], start: usize, end: usize) -> usize {
        let Some(class) = self.segments().last().map(|s| s.class).filter(|&c| c != u8::MAX) else {
            return end;
        };
        let next = match bytes.get(end..) {
            Some([b'\n', ..]) => end + 1,
            Some([b'\r', b'\n', ..]) => end + 2,
            _ => return end,
        };
        let max = self.max as usize;
        let tail_end = run_end_max(bytes, next, max, |b| in_class(class, b));
        let tail = &bytes[next..tail_end];
        let alone = bytes.get(tail_end).is_none_or(u8::is_ascii_whitespace);
        let fits = tail_end - next + end - start - self.prefix().len() <= max;
        if alone && fits && tail.len() >= 8 && mixed_case(tail) && has_digit(tail) {
            tail_end
        } else {
            end
        }
    }
}

/// OpenAI's keys carry `T3BlbkFJ` (base64 of `OpenAI`; gitleaks' openai-api-key rule matches it)
/// between two generated parts: counts on both sides (`sk-proj-abcdefghij…T3BlbkFJabcdefghij…`)
/// are typed around the marker, as counts end to end are typed after a prefix. Each part is at
/// least 20 characters in every key kind (gitleaks' and trivy's rules: 20 in a legacy key, 58 or
/// 74 in a project, service-account or admin key), so the marker between shorter parts
/// (`sk-tooshortT3BlbkFJtooshort`) was typed around it too.
fn marked_filler(token: &[u8]) -> bool {
    const MARKER: &[u8] = b"T3BlbkFJ";
    let Some(k) = token.windows(MARKER.len()).position(|w| w == MARKER) else {
        return false;
    };
    if k < 20 || token.len() - k - MARKER.len() < 20 {
        return true;
    }
    let head = &token[..k];
    // The key's kind (`proj-`, `svcacct-`, `admin-`) is a word before the generated part.
    let head = head.rsplit(|&b| b == b'-').next().unwrap_or(head);
    crate::chars::counted_through(head) && crate::chars::counted_through(&token[k + MARKER.len()..])
}

/// A value that starts with a vendor prefix and goes on with filler (`glc_1111…`,
/// `sha256~XXXX_PUT_YOUR_TOKEN_HERE`): a stand-in under any key. A word after the prefix is not
/// filler here (`skywalker`, `keystone` start with `sk` and `key`): see [`prefix_then_word`].
pub(crate) fn prefix_then_filler(v: &[u8]) -> bool {
    let Some(&first) = v.first() else { return false };
    // A prefix and a wildcard (`sk_test_*`, `ghp_…`): a pattern naming a kind of token, not one.
    let glob = v
        .strip_suffix(b"*")
        .or_else(|| v.strip_suffix("\u{2026}".as_bytes()))
        .map(trim_end_of_stars);
    if let Some(head) = glob
        && !head.is_empty()
        && candidates(first, v.get(1).copied().unwrap_or(0))
            .iter()
            .any(|r| head.eq_ignore_ascii_case(r.prefix()))
    {
        return true;
    }
    candidates(first, v.get(1).copied().unwrap_or(0)).iter().any(|r| {
        v.len() > r.prefix().len() + 4
            && v[..r.prefix().len()].eq_ignore_ascii_case(r.prefix())
            && (typed_filler(&v[r.prefix().len()..], r.capitals())
                || crate::chars::counted_through(&v[r.prefix().len()..]))
    })
}

/// `head` without the `*` that end it (`sk_live_**`).
fn trim_end_of_stars(head: &[u8]) -> &[u8] {
    &head[..head.len() - head.iter().rev().take_while(|&&b| b == b'*').count()]
}

/// A vendor prefix that ends with its separator, then a short lowercase word (`xoxb-valid`,
/// `ghp_token`): a token's name, typed where a token goes. Only where the slot wants a token: in
/// a password's slot any word is a password (`secret_sauce`).
pub(crate) fn prefix_then_word(v: &[u8]) -> bool {
    let Some(&first) = v.first() else { return false };
    candidates(first, v.get(1).copied().unwrap_or(0)).iter().any(|r| {
        v.len() > r.prefix().len()
            && r.prefix().last().is_some_and(|b| matches!(b, b'-' | b'_'))
            && v[..r.prefix().len()].eq_ignore_ascii_case(r.prefix())
            && short_word(&v[r.prefix().len()..])
    })
}

/// Lower-case words joined by `_` (and `-`, as in a vendor's own prefix: `sk-proj-handler_v2`), the
/// last one perhaps a version (`expiry_check`, `handler_v2`): after a lenient prefix, a name in
/// code (`github_pat_expiry_check`), not a key. Words joined by `-` alone are not: a stand-in key
/// is written so (`sk-live-secret`), and is held as a key.
fn code_name(token: &[u8]) -> bool {
    let parts = || token.split(|&b| matches!(b, b'-' | b'_'));
    let n = parts().count();
    let word = |p: &[u8]| p.len() >= 3 && p.iter().all(u8::is_ascii_lowercase);
    let version = |p: &[u8]| (1..=3).contains(&p.len()) && p.iter().all(u8::is_ascii_alphanumeric);
    n >= 2
        && token.contains(&b'_')
        && parts()
            .enumerate()
            .all(|(k, p)| word(p) || k == n - 1 && version(p))
}

/// A short lowercase word: a generated token this short mixes cases or digits.
fn short_word(token: &[u8]) -> bool {
    !token.is_empty() && token.len() < 12 && token.iter().all(u8::is_ascii_lowercase)
}

/// Filler after a real prefix, or a short lowercase word in a token's place (`xoxb-valid`).
fn stand_in(token: &[u8]) -> bool {
    typed_filler(token, false) || short_word(token)
}

/// Filler after a real prefix (`XXXX…`, `0000…`, `EXAMPLE`, `RANDOMSTRINGHERE`): few distinct
/// characters, a documentation word, or one character category where a generated token mixes
/// them. Where the alphabet is `capitals` alone, all capitals is filler only when it reads as
/// words (see [`shouted_words`]).
fn typed_filler(token: &[u8], capitals: bool) -> bool {
    let mut seen = [false; 256];
    let mut distinct = 0;
    let (mut lower, mut upper, mut digit) = (false, false, false);
    for &b in token {
        if b.is_ascii_alphanumeric() && !seen[usize::from(b)] {
            seen[usize::from(b)] = true;
            distinct += 1;
        }
        lower |= b.is_ascii_lowercase();
        upper |= b.is_ascii_uppercase();
        digit |= b.is_ascii_digit();
    }
    if token.len() >= 8 && distinct <= 3 || crate::chars::few_kinds(token) {
        return true;
    }
    // One count from end to end (`xoxp-1234567890`, `sk_abcdefgh`): typed, however short.
    let step = |w: &[u8]| w[1] == w[0].wrapping_add(1) || w[0] == b'9' && w[1] == b'0';
    if token.len() >= 6 && token.iter().all(u8::is_ascii_alphanumeric) && token.windows(2).all(step) {
        return true;
    }
    if FILLERS.iter().any(|f| contains_ci(token, f))
        || token.len() >= 20 && crate::chars::fabricated(token)
        || crate::chars::repeated_group(token)
        || crate::chars::spells_a_marker(token)
        || token.len() >= 12 && crate::chars::filler_run(token)
        // Base64 of a documentation marker or of counts (a Grafana key's JSON naming `example`).
        || crate::chars::encoded_filler(token)
        || crate::chars::counted_by_kind(token)
        || crate::chars::long_count(token)
        || word_then_counts(token)
    {
        return true;
    }
    // Words joined by separators (`my-bot-token`): a generated token has digits or mixed case.
    if token.len() >= 8 && !digit && !(lower && upper) && token.iter().any(|b| matches!(b, b'-' | b'_')) {
        return true;
    }
    let categories = u8::from(lower) + u8::from(upper) + u8::from(digit);
    token.len() >= 16 && categories == 1 && !digit && upper && (!capitals || shouted_words(token))
}

/// A short lowercase word, then counts end to end (`foo1234567890abc`, `bar9876543210`): a name
/// and a count typed in a token's place. A generated body opens on such a word and then counts
/// on for six or more about never.
fn word_then_counts(token: &[u8]) -> bool {
    let word = token.iter().take_while(|b| b.is_ascii_lowercase()).count();
    let rest = &token[word..];
    (2..=5).contains(&word)
        && rest.len() >= 8
        && rest.iter().all(u8::is_ascii_alphanumeric)
        && crate::chars::count_chain(&mut rest.iter().map(u8::to_ascii_lowercase))
            .is_some_and(|best| best >= 6)
}

/// Capitals typed as words (`ACCESSKEYIDVALUE`, `PASSWORDSECRETKEY`, `MYSERVICEACCOUNT`): a
/// credential's or a demo's word in them, or vowels (`y` counts) half or more, or a third or
/// more with two thirds of the letters English's most common (`ETAOINSHRDLUCM`), with no four
/// consonants running. Random capitals hold a vowel in four and common letters about half: one
/// body in fifty with no digit reads so (and one in thirty has no digit).
fn shouted_words(token: &[u8]) -> bool {
    const WORDS: Words = words_from!(&[
        b"KEY", b"AWS", b"SECRET", b"TOKEN", b"ACCESS", b"PASS", b"TEST", b"DEMO",
    ]);
    let vowel = |b: &u8| matches!(b, b'A' | b'E' | b'I' | b'O' | b'U' | b'Y');
    let vowels = token.iter().filter(|b| vowel(b)).count();
    let consonants = token.split(vowel).map(<[u8]>::len).max().unwrap_or(0);
    let common = token.iter().filter(|b| b"ETAOINSHRDLUCM".contains(b)).count();
    let english = 3 * vowels >= token.len() && 3 * common >= 2 * token.len();
    WORDS.iter().any(|w| contains_ci(token, w)) || (2 * vowels >= token.len() || english) && consonants <= 3
}

/// A tiny deterministic generator (xorshift) for the tests, so every run checks the same random
/// texts and a failure replays.
#[cfg(test)]
pub(crate) struct Rng(pub(crate) u64);

#[cfg(test)]
impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        usize::try_from(self.next() % n as u64).unwrap_or(0)
    }
}

/// Four or more parts joined by `-` or `_`, lowercase and words for the most part
/// (`2024-annual-report-and-budget-tables-v2`): a page's slug after a prefix that is also a
/// word's or a place's (`pa-`), where a generated body holds a separator or two at most and both
/// cases. (Capitals among the words, `PREfix_helloworld380_…`, are a token typed to be one.)
fn slug(token: &[u8]) -> bool {
    token.split(|&b| matches!(b, b'-' | b'_')).count() >= 4
        && !token.iter().any(u8::is_ascii_uppercase)
        && crate::chars::wordy(token)
}

#[cfg(test)]
mod tests {
    use super::{KEYWORD_INFO, KEYWORD_RULES, RULE_INFO, Rng, SEGMENTS, VENDORS, Vendor, in_class};
    use crate::tests::{assert_clean, assert_found};
    use crate::{SecretKind, findings};

    include!(concat!(env!("OUT_DIR"), "/samples.rs"));

    /// A random token of the rule's shape: each class run at a random length within its bounds
    /// (at most 24 past its minimum), mixing the class's letters and digits as generated tokens do.
    pub(super) fn token(v: &Vendor, rng: &mut Rng) -> String {
        let mut out = String::new();
        if v.head.1 > 0 {
            let alphabet: Vec<u8> = (0..=127u8)
                .filter(|&b| in_class(v.head.0, b) && b.is_ascii_alphanumeric())
                .collect();
            out.extend((0..v.head.1).map(|_| char::from(alphabet[rng.below(alphabet.len())])));
        }
        out.push_str(std::str::from_utf8(v.prefix()).expect("ascii"));
        for seg in &SEGMENTS[v.segs.0..v.segs.1] {
            if seg.class == u8::MAX {
                out.push(char::from(seg.lit));
                continue;
            }
            let alphabet: Vec<u8> = (0..=127u8)
                .filter(|&b| in_class(seg.class, b) && b.is_ascii_alphanumeric())
                .collect();
            let span = usize::from(seg.max - seg.min).min(24);
            let n = usize::from(seg.min) + rng.below(span + 1);
            loop {
                let run: Vec<u8> = (0..n).map(|_| alphabet[rng.below(alphabet.len())]).collect();
                let kinds = [u8::is_ascii_lowercase, u8::is_ascii_uppercase, u8::is_ascii_digit];
                let has = |run: &[u8], f: fn(&u8) -> bool| run.iter().any(f);
                let all = kinds.iter().filter(|&&f| has(&alphabet, f)).count();
                let wanted = if n >= 12 { all } else { all.min(2) };
                let got = kinds.iter().filter(|&&f| has(&run, f)).count();
                // A run that spells masking by chance (`XXXx`) is no sample of the shape.
                if n < 3 || got >= wanted && !crate::bytes::contains_ci(&run, b"xxxx") {
                    out.push_str(std::str::from_utf8(&run).expect("ascii"));
                    break;
                }
            }
        }
        out
    }

    fn caught_as(text: &str, name: &str) -> bool {
        findings(text).iter().any(|f| f.kind.as_str() == name)
    }

    /// [`super::candidates`] searches [`super::SECOND`], derived from the rules: it must narrow
    /// a bucket to the rules whose prefix starts with the two bytes, as a search over the rules
    /// themselves does.
    #[test]
    fn candidates_are_the_rules_starting_with_two_bytes() {
        for b0 in 0..=255u8 {
            for b1 in 0..=255u8 {
                let got = super::candidates(b0, b1);
                let (lo, hi) = super::FIRST[usize::from(b0.to_ascii_lowercase())];
                let bucket = &VENDORS[usize::from(lo)..usize::from(hi)];
                let hit = |v: &&Vendor| v.prefix()[1].eq_ignore_ascii_case(&b1);
                assert!(got.iter().all(|v| hit(&v)), "{b0} {b1}");
                assert_eq!(got.len(), bucket.iter().filter(hit).count(), "{b0} {b1}");
            }
        }
    }

    #[test]
    fn every_rule_has_samples_and_judges_them_right() {
        for (k, v) in VENDORS.iter().enumerate() {
            let tp = SAMPLES.iter().filter(|s| s.0 == k && s.1).count();
            let fp = SAMPLES.iter().filter(|s| s.0 == k && !s.1).count();
            let info = &RULE_INFO[k];
            assert!(
                tp >= 1 && fp >= 1,
                "rule {} ({}) needs samples",
                info.id,
                v.name()
            );
            assert!(!info.source.is_empty(), "rule {} cites no source", info.id);
        }
        let mut wrong = Vec::new();
        for &(k, positive, text) in SAMPLES {
            if k >= VENDORS.len() {
                // A keyword rule's sample: caught under that rule's name.
                let r = &KEYWORD_RULES[usize::MAX - k];
                let name = &super::KEYWORD_NAMES[usize::from(r.name.0)..][..usize::from(r.name.1)];
                let id = KEYWORD_INFO[usize::MAX - k].id;
                // Several providers share a word (`azure`, `datadog`): any of them may name it.
                let _ = name;
                if positive
                    && !findings(text)
                        .iter()
                        .any(|f| matches!(f.kind, SecretKind::Vendor(_)))
                {
                    wrong.push(format!("{id}: missed {text:?}"));
                }
                if !positive && !findings(text).is_empty() {
                    wrong.push(format!("{id}: withheld {text:?}"));
                }
                continue;
            }
            let v = &VENDORS[k];
            if positive && !caught_as(text, v.name()) {
                wrong.push(format!("{}: missed {text:?}", RULE_INFO[k].id));
            }
            if !positive && !findings(text).is_empty() {
                wrong.push(format!("{}: withheld {text:?}", RULE_INFO[k].id));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn random_tokens_of_each_shape_are_caught_and_fillers_are_not() {
        let mut wrong = Vec::new();
        for (v, info) in VENDORS.iter().zip(&RULE_INFO) {
            // Each rule draws from its own stream, seeded by its id: a rule added elsewhere
            // leaves every other rule's tokens as they were.
            let seed = info.id.bytes().fold(0x9e37_79b9_7f4a_7c15_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
            let mut rng = Rng(seed);
            for _ in 0..20 {
                let tok = token(v, &mut rng);
                for text in [
                    format!("saw {tok} in the log"),
                    format!("\"{tok}\""),
                    format!("令牌{tok}请检查"),
                ] {
                    // Caught by this rule, or by another whose shape overlaps (`EAAA…` is Square's
                    // and Facebook's).
                    if !findings(&text)
                        .iter()
                        .any(|f| matches!(f.kind, SecretKind::Vendor(_)))
                    {
                        wrong.push(format!("{}: missed {text:?}", info.id));
                    }
                }
            }
            // The prefix with filler of the shape's length, or alone, is documentation.
            let tok = token(v, &mut rng);
            let head = usize::from(v.head.1);
            let body = &tok[head + v.prefix().len()..];
            for filler in [b'X', b'0', b'#'] {
                let filled: String = body
                    .bytes()
                    .map(|b| {
                        if b.is_ascii_alphanumeric() {
                            char::from(filler)
                        } else {
                            char::from(b)
                        }
                    })
                    .collect();
                let prefix = std::str::from_utf8(v.prefix()).expect("ascii");
                let head = char::from(filler).to_string().repeat(head);
                let text = format!("e.g. {head}{prefix}{filled} in the docs");
                if findings(&text)
                    .iter()
                    .any(|f| f.kind == SecretKind::Vendor(v.name()))
                {
                    wrong.push(format!("{}: withheld {text:?}", info.id));
                }
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    /// Counts end to end after a vendor's prefix are typed filler under every rule, lenient ones
    /// too (`AKIA0123456789ABCDEF`, `ghp_0123…XYZ`); a generated body after the same prefix is not.
    #[test]
    fn a_vendor_prefix_before_counts_end_to_end_is_filler() {
        assert_clean(&[
            "AWS_ACCESS_KEY_ID=AKIA0123456789ABCDEF",
            "export AWS_ACCESS_KEY_ID=AKIAABCDEFGHI1234567",
            "GITHUB_PAT=ghp_012345678901234567890123456789abcdef",
            "export GITHUB_PAT=ghp_0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ",
            "token=ghp_abcdef1234567890ABCDEF1234567890abcd",
        ]);
        assert_found(&[
            "AWS_ACCESS_KEY_ID=AKIA2E0A8F3B244C9986",
            "export GITHUB_PAT=ghp_eifae6eigh3aeSah1shahd6oi1tague6vaey",
            "token=ghp_R7kT2mQ9xV4bN8cL1pZ6wY3sD5fH0jG2aE4u",
        ]);
    }

    /// Counts on both sides of OpenAI's `T3BlbkFJ` marker are typed; generated parts are a key.
    #[test]
    fn counts_around_openais_marker_are_filler() {
        assert_clean(&[
            "sk-proj-abcdefghijklmnopqrstT3BlbkFJabcdefghijklmnopqrst",
            "OPENAI_API_KEY=sk-svcacct-abcdefghijklmnopqrstT3BlbkFJabcdefghijklmnopqrst",
            "sk-abcdefghijklmnopqrstT3BlbkFJabcdefghijklmnopqrst",
            // Parts shorter than any OpenAI key's, random or not.
            "sk-tooshortT3BlbkFJtooshort",
            "why does sk-Qm7xR2T3BlbkFJvL9pW4kZ fail?",
            "sk-proj-Rk29xQmT7vWp3LzN8bYcT3BlbkFJd4HsV1gKq6",
        ]);
        assert_found(&[
            "sk-proj-Rk29xQmT7vWp3LzN8bYcT3BlbkFJd4HsV1gKq6ZtE0uJ5nXa",
            "OPENAI_API_KEY=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",
            // Counts on one side only are not filler throughout.
            "sk-proj-abcdefghijklmnopqrstT3BlbkFJd4HsV1gKq6ZtE0uJ5nXa",
            // Without the marker a short `sk-` key is still judged by its characters alone.
            "OPENAI_API_KEY=sk-Qm7xR2vL9pW4kZ8nB3",
        ]);
    }

    /// `dummy` and `notreal` inside a token of a lenient rule are a stand-in's words, as
    /// `example` and `here` already were; the same prefix before generated characters is a token.
    #[test]
    fn stand_in_words_inside_a_lenient_token_are_filler() {
        assert_clean(&[
            "GITHUB_TOKEN=ghs_15368_eyJtestHEADERdummynotreal00.eyJtestPAYLOADdummynotreal00",
            "token: ghp_DummyTokenForTheDocsOnly1234567890ab",
            "GITHUB_TOKEN=ghp_thisIsNotRealTokenJustForTests12345678",
        ]);
        assert_found(&[
            "GITHUB_TOKEN=ghs_16C7e42F292c6912E7710c838347Ae178B4a",
            "token: ghp_R7kT2mQ9xV4bN8cL1pZ6wY3sD5fH0jG2aE4u",
        ]);
    }

    /// Three quarters of a lenient token typed as counts is filler even with a stray tail
    /// (`ghp_1234567890abcdefghijklmnopqrstuvwxyz12`); a count in part only is not.
    #[test]
    fn a_lenient_token_mostly_typed_as_counts_is_filler() {
        assert!(findings("GitHub PAT: ghp_1234567890abcdefghijklmnopqrstuvwxyz12").is_empty());
        assert!(!findings("GitHub PAT: ghp_123456abcdefR7kT2mQ9xV4bN8cL1pZ6wY3sD5fH").is_empty());
    }

    /// A kind's prefix with the rest elided by three dots is a stand-in, as `…` was; a whole
    /// token before the dots is still one.
    #[test]
    fn a_prefix_elided_by_three_dots_is_no_token() {
        assert_clean(&[
            "paste the service account key (it starts sk-svcacct-...) into the runner's settings",
            "our admin keys look like sk-svcacct-... and last ninety days",
        ]);
        assert_found(&[
            "paste the service account key (sk-svcacct-Wq4Zr8Tn2Lp6Yc0Vb3Xm7Kd1Hs5Jf9Ga...) into the runner's settings",
        ]);
    }

    /// Lower-case words joined by `_` after a lenient prefix name code (`github_pat_rotation_job`,
    /// a module's `handler_v2`); a lower-case body with a generated part is still a key, and so is
    /// a stand-in key of words joined by `-` (`sk-live-secret`).
    #[test]
    fn lower_case_words_after_a_lenient_prefix_are_a_name() {
        assert_clean(&[
            "the cron calls github_pat_rotation_job every night, can it log less?",
            "rename ghp_scope_audit_v2 before the release",
        ]);
        assert_found(&[
            "the cron calls github_pat_rotation_k3x9q2m7w8z4v6b1n5 every night, can it log less?",
            "rename ghp_scope_a8k2m9x4q7w1z5n3v6b0c2d8f4g7h1j5k3l9 before the release",
            "deploy with sk-live-secret today",
            "the staging runner still reads sk-test-apikey from its settings",
        ]);
    }

    #[test]
    fn the_rule_data_covers_many_providers() {
        let mut names: Vec<&str> = VENDORS.iter().map(|v| v.name()).collect();
        names.extend(KEYWORD_INFO.iter().map(|i| i.source));
        names.sort_unstable();
        names.dedup();
        assert!(
            VENDORS.len() >= 200 && names.len() >= 100,
            "{} rules, {} providers",
            VENDORS.len(),
            names.len()
        );
    }
}
