//! The secret-like filter: decides whether text looks like it carries a credential, so that it is
//! never persisted as a Source or memory. It must never log, copy or return any part of the text.
//!
//! The rule set is a superset of the Pi/OpenCode regex set (host-contracts §2.5), matched with
//! hand-written byte scanning instead of a regex engine: one left-to-right pass, linear in the
//! input, no allocation. ASCII letters compare case-insensitively unless a rule says otherwise.
//!
//! 1. [`SecretKind::PrivateKey`] matches a PEM `-----BEGIN <words> PRIVATE KEY-----` line.
//! 2. [`SecretKind::Assignment`] matches a credential key (`api key`, `access key`, `client secret`,
//!    `secret`, `secret key`, `password`, `passwd`, `passphrase`, `token`, `authorization`,
//!    `cookie`, with `_`, `-`, space or nothing inside the two-word keys) that is not glued to a
//!    word or `-` on its left and ends at a word boundary, an optional closing quote, `:` or `=`,
//!    and a non-empty value.
//! 3. [`SecretKind::BearerToken`] matches `bearer`, whitespace, and an 8+ character token.
//! 4. [`SecretKind::ApiKeyShape`] matches `sk-…`, `github_pat_…`, `gh[pousr]_…`, `xox[baprs]-…`.
//! 5. [`SecretKind::AwsAccessKey`] matches `AKIA`/`ASIA`/`ABIA`/`ACCA` + 16 uppercase/digits, one word.
//! 6. [`SecretKind::Jwt`] matches `eyJ….eyJ….<signature>`.
//! 7. [`SecretKind::UrlCredentials`] matches `scheme://user:password@host`.
//!
//! Rules 1–4 follow the upstream regexes, including their blind spots (a key preceded by `-`, as
//! in `X-Api-Key:`, is not a key) and one over-match (a `password: String` field counts as an
//! assignment), with one deliberate narrowing: `::`, `==` and `=>` after a key are code (a path, a
//! comparison, a match arm), not an assignment, so prompts quoting code stay capturable. "Word" characters for adjacency are Unicode
//! alphanumerics and `_`; "whitespace" is the JavaScript `\s` set. Upstream's `/iu` folding of
//! `ſ` and the Kelvin sign onto `s`/`k` is not reproduced.
//!
//! The filter gates persistence only (prompt capture and explicit write tools). Callers still send
//! the same text as the recall query; nothing here is meant to block a request.

/// Which rule matched, content-free (safe to put in a diagnostic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretKind {
    /// A PEM private-key block (its BEGIN line is enough).
    PrivateKey,
    /// A credential key assigned a value with `:` or `=`.
    Assignment,
    /// An HTTP `Bearer` token.
    BearerToken,
    /// A vendor token shape: OpenAI-style `sk-`, GitHub, Slack.
    ApiKeyShape,
    /// An AWS access key id.
    AwsAccessKey,
    /// A JSON Web Token.
    Jwt,
    /// A URL with a password in its userinfo.
    UrlCredentials,
}

impl SecretKind {
    /// The rule name in snake_case, for diagnostics.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PrivateKey => "private_key",
            Self::Assignment => "assignment",
            Self::BearerToken => "bearer_token",
            Self::ApiKeyShape => "api_key_shape",
            Self::AwsAccessKey => "aws_access_key",
            Self::Jwt => "jwt",
            Self::UrlCredentials => "url_credentials",
        }
    }

    /// Declaration order doubles as priority when several rules match.
    fn rank(self) -> u8 {
        self as u8
    }
}

/// The highest-priority rule (in [`SecretKind`] declaration order) that matches anywhere in `text`.
#[must_use]
pub fn find_secret(text: &str) -> Option<SecretKind> {
    let bytes = text.as_bytes();
    let mut best: Option<SecretKind> = None;
    let mut prev = Prev::Other;
    let mut i = 0;
    while i < bytes.len() {
        let byte = bytes[i];
        if !byte.is_ascii() {
            // Every anchor is ASCII, so a non-ASCII character only matters as a neighbour.
            let (word, len) = match char_at(text, i) {
                Some(ch) => (is_word(ch), ch.len_utf8()),
                None => (false, 1),
            };
            prev = if word { Prev::Word } else { Prev::Other };
            i += len;
            continue;
        }
        let hit = match byte {
            b'-' => pem_at(bytes, i).then_some(SecretKind::PrivateKey),
            b':' => url_credentials_at(text, i).then_some(SecretKind::UrlCredentials),
            _ if prev != Prev::Word && byte.is_ascii_alphabetic() => {
                word_start(text, i, prev == Prev::Hyphen)
            }
            _ => None,
        };
        if let Some(kind) = hit {
            if kind == SecretKind::PrivateKey {
                return Some(kind);
            }
            best = lower_rank(best, Some(kind));
        }
        prev = match byte {
            b'-' => Prev::Hyphen,
            b'_' => Prev::Word,
            _ if byte.is_ascii_alphanumeric() => Prev::Word,
            _ => Prev::Other,
        };
        i += 1;
    }
    best
}

/// Whether any rule matches `text`.
#[must_use]
pub fn is_secret_like(text: &str) -> bool {
    find_secret(text).is_some()
}

/// What the character before the current position was, for the adjacency rules.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Prev {
    Word,
    Hyphen,
    Other,
}

fn lower_rank(a: Option<SecretKind>, b: Option<SecretKind>) -> Option<SecretKind> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y.rank() < x.rank() { y } else { x }),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Checks the rules anchored at the start of a word: `i` holds an ASCII letter and the character
/// before it is not a word character (`after_hyphen` says whether it was `-`).
fn word_start(text: &str, i: usize, after_hyphen: bool) -> Option<SecretKind> {
    let bytes = text.as_bytes();
    // AWS ids only need a plain word boundary, so `-` on the left is allowed.
    let aws = (bytes[i] == b'A' && aws_at(text, i)).then_some(SecretKind::AwsAccessKey);
    if after_hyphen {
        return aws;
    }
    let other = match bytes[i].to_ascii_lowercase() {
        b'a' | b'c' | b'p' | b't' => assignment_at(text, i).then_some(SecretKind::Assignment),
        b's' => {
            if assignment_at(text, i) {
                Some(SecretKind::Assignment)
            } else {
                sk_at(text, i).then_some(SecretKind::ApiKeyShape)
            }
        }
        b'b' => bearer_at(text, i).then_some(SecretKind::BearerToken),
        b'g' | b'x' => vendor_token_at(text, i).then_some(SecretKind::ApiKeyShape),
        b'e' => jwt_at(text, i).then_some(SecretKind::Jwt),
        _ => None,
    };
    lower_rank(aws, other)
}

/// Rule 1: `-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----` starting at `i`.
fn pem_at(bytes: &[u8], i: usize) -> bool {
    const TAIL: &[u8] = b"private key";
    let Some(start) = eat_ci(bytes, i, b"-----begin ") else {
        return false;
    };
    let end = run_end(bytes, start, |b| b.is_ascii_alphanumeric() || b == b' ');
    // "PRIVATE KEY" is inside the word class and `-` is not, so the words must end with it.
    end - start >= TAIL.len()
        && bytes[end - TAIL.len()..end].eq_ignore_ascii_case(TAIL)
        && bytes[end..].starts_with(b"-----")
}

/// Rule 2: a credential key at `i`, then `\s*[:=]\s*` and a value.
fn assignment_at(text: &str, i: usize) -> bool {
    let bytes = text.as_bytes();
    // `[_ -]?` between two words: the separator never equals the second word's first letter,
    // so taking it when present is the only way to match.
    let two_words = |first: &[u8], second: &[u8]| {
        let mut pos = eat_ci(bytes, i, first)?;
        if matches!(bytes.get(pos), Some(b'_' | b' ' | b'-')) {
            pos += 1;
        }
        eat_ci(bytes, pos, second)
    };
    // Dispatch on the first letter: most word starts begin with none of these, and the prompt
    // path scans every word of up to 200,000 characters.
    let key_ends: [Option<usize>; 3] = match bytes[i].to_ascii_lowercase() {
        b'a' => [
            two_words(b"api", b"key"),
            two_words(b"access", b"key"),
            eat_ci(bytes, i, b"authorization"),
        ],
        b'c' => [two_words(b"client", b"secret"), eat_ci(bytes, i, b"cookie"), None],
        b's' => [eat_ci(bytes, i, b"secret"), two_words(b"secret", b"key"), None],
        b'p' => [
            eat_ci(bytes, i, b"password"),
            eat_ci(bytes, i, b"passwd"),
            eat_ci(bytes, i, b"passphrase"),
        ],
        b't' => [eat_ci(bytes, i, b"token"), None, None],
        _ => return false,
    };
    key_ends
        .into_iter()
        .flatten()
        .any(|end| assignment_tail(text, end))
}

/// What must follow a key that ended at `end`: word boundary, optional quote, `\s*[:=]\s*`, value.
fn assignment_tail(text: &str, end: usize) -> bool {
    let bytes = text.as_bytes();
    if char_at(text, end).is_some_and(is_word) {
        return false;
    }
    let mut pos = end;
    if matches!(bytes.get(pos), Some(b'"' | b'\'')) {
        pos += 1;
    }
    pos = skip_space(text, pos);
    if !matches!(bytes.get(pos), Some(b':' | b'=')) {
        return false;
    }
    // Code, not an assignment: a path (`token::Token`), a comparison (`token == x`) or a match
    // arm (`password => …`). Prompts to coding agents are full of these.
    if matches!(
        (bytes[pos], bytes.get(pos + 1)),
        (b':', Some(b':')) | (b'=', Some(b'=' | b'>'))
    ) {
        return false;
    }
    pos = skip_space(text, pos + 1);
    // A quoted value starts with a quote, which the bare-value class also accepts, so the first
    // character alone decides whether a value is present.
    char_at(text, pos).is_some_and(|c| !matches!(c, ',' | ';' | '}' | ']'))
}

/// Rule 3: `bearer\s+[A-Za-z0-9._~+/=-]{8,}` with no word character or `-` right after the token.
fn bearer_at(text: &str, i: usize) -> bool {
    let bytes = text.as_bytes();
    let Some(after_word) = eat_ci(bytes, i, b"bearer") else {
        return false;
    };
    let start = skip_space(text, after_word);
    if start == after_word {
        return false;
    }
    let mut pos = start;
    while let Some(&b) = bytes.get(pos) {
        if !(b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'+' | b'/' | b'=' | b'-')) {
            break;
        }
        // The token class also holds non-word punctuation: a shorter token ending just before
        // one of those satisfies the right-hand boundary even when the full run does not.
        if pos - start >= 8 && matches!(b, b'.' | b'~' | b'+' | b'/' | b'=') {
            return true;
        }
        pos += 1;
    }
    pos - start >= 8 && !word_or_hyphen_at(text, pos)
}

/// Rule 4, `sk-[A-Za-z0-9][A-Za-z0-9_-]{7,}`.
fn sk_at(text: &str, i: usize) -> bool {
    let bytes = text.as_bytes();
    let Some(start) = eat_ci(bytes, i, b"sk-") else {
        return false;
    };
    if !bytes.get(start).is_some_and(u8::is_ascii_alphanumeric) {
        return false;
    }
    shape_tail(text, start, 8, |b| {
        b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
    })
}

/// Rule 4, GitHub (`github_pat_`, `gh[pousr]_`) and Slack (`xox[baprs]-`) shapes.
fn vendor_token_at(text: &str, i: usize) -> bool {
    let bytes = text.as_bytes();
    let word_class = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    if let Some(start) = eat_ci(bytes, i, b"github_pat_") {
        return shape_tail(text, start, 8, word_class);
    }
    let lower_at = |pos: usize| bytes.get(pos).map(u8::to_ascii_lowercase);
    if eat_ci(bytes, i, b"gh").is_some()
        && matches!(lower_at(i + 2), Some(b'p' | b'o' | b'u' | b's' | b'r'))
        && bytes.get(i + 3) == Some(&b'_')
    {
        return shape_tail(text, i + 4, 8, word_class);
    }
    if eat_ci(bytes, i, b"xox").is_some()
        && matches!(lower_at(i + 3), Some(b'b' | b'a' | b'p' | b'r' | b's'))
        && bytes.get(i + 4) == Some(&b'-')
    {
        return shape_tail(text, i + 5, 8, |b| b.is_ascii_alphanumeric() || b == b'-');
    }
    false
}

/// A token body of at least `min` class bytes from `start`, not followed by a word character or
/// `-`. Every class here is a subset of `[\w-]`, so only the longest run can satisfy the boundary.
fn shape_tail(text: &str, start: usize, min: usize, class: fn(u8) -> bool) -> bool {
    let end = run_end(text.as_bytes(), start, class);
    end - start >= min && !word_or_hyphen_at(text, end)
}

/// Rule 5: `(AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}` as a whole word, uppercase only.
fn aws_at(text: &str, i: usize) -> bool {
    let Some(id) = text.as_bytes().get(i..i + 20) else {
        return false;
    };
    matches!(&id[..4], b"AKIA" | b"ASIA" | b"ABIA" | b"ACCA")
        && id[4..]
            .iter()
            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        && !char_at(text, i + 20).is_some_and(is_word)
}

/// Rule 6: `eyJ…` header (≥ 10) `.` `eyJ…` payload (≥ 10) `.` signature (≥ 8), base64url.
fn jwt_at(text: &str, i: usize) -> bool {
    let bytes = text.as_bytes();
    let b64url = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
    // Returns where the next segment starts, if this one is a JSON-object segment followed by `.`.
    let json_segment = |start: usize| {
        if !bytes[start..].starts_with(b"eyJ") {
            return None;
        }
        let end = run_end(bytes, start, b64url);
        (end - start >= 10 && bytes.get(end) == Some(&b'.')).then_some(end + 1)
    };
    let Some(payload) = json_segment(i) else {
        return false;
    };
    let Some(signature) = json_segment(payload) else {
        return false;
    };
    shape_tail(text, signature, 8, b64url)
}

/// Rule 7: `://` at `i`, then `user:password@host` with a non-empty password.
fn url_credentials_at(text: &str, i: usize) -> bool {
    let bytes = text.as_bytes();
    if !bytes[i..].starts_with(b"://") {
        return false;
    }
    let scheme_end = i.checked_sub(1).and_then(|p| bytes.get(p));
    if !scheme_end.is_some_and(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-')) {
        return false;
    }
    let mut pos = i + 3;
    let mut colon = None;
    loop {
        let Some(c) = char_at(text, pos) else { return false };
        match c {
            '@' => break,
            // Besides the brief's `/` and whitespace, characters that cannot appear in a URL
            // end it, so `"http://h:1","u":"a@b"` in JSON is not read as one userinfo.
            '/' | '"' | '<' | '>' | '`' => return false,
            ':' if colon.is_none() => colon = Some(pos),
            _ if is_js_space(c) => return false,
            _ => {}
        }
        pos += c.len_utf8();
    }
    let Some(colon) = colon else { return false };
    pos - colon >= 2 && char_at(text, pos + 1).is_some_and(|c| c.is_alphanumeric() || c == '[' || c == '_')
}

/// The end of `lit` (given in lowercase) if it appears at `pos`, ignoring ASCII case.
fn eat_ci(bytes: &[u8], pos: usize, lit: &[u8]) -> Option<usize> {
    let end = pos.checked_add(lit.len())?;
    bytes.get(pos..end)?.eq_ignore_ascii_case(lit).then_some(end)
}

/// The end of the longest run of `class` bytes from `pos`.
fn run_end(bytes: &[u8], pos: usize, class: impl Fn(u8) -> bool) -> usize {
    let mut end = pos;
    while bytes.get(end).is_some_and(|&b| class(b)) {
        end += 1;
    }
    end
}

/// Skips JavaScript `\s` characters from `pos`.
fn skip_space(text: &str, mut pos: usize) -> usize {
    while let Some(c) = char_at(text, pos) {
        if !is_js_space(c) {
            break;
        }
        pos += c.len_utf8();
    }
    pos
}

/// The character starting at byte `pos`; `None` at the end (or, defensively, off a boundary).
fn char_at(text: &str, pos: usize) -> Option<char> {
    text.get(pos..)?.chars().next()
}

fn word_or_hyphen_at(text: &str, pos: usize) -> bool {
    char_at(text, pos).is_some_and(|c| c == '-' || is_word(c))
}

/// `\w` for adjacency: Unicode alphanumerics and `_`.
fn is_word(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// JavaScript's `\s` (which differs from `char::is_whitespace` on U+0085 and U+FEFF).
fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
    )
}

#[cfg(test)]
mod tests {
    use super::{SecretKind, find_secret, is_secret_like};
    use std::time::{Duration, Instant};

    const JWT: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.\
        eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.\
        SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";

    fn kind(text: &str) -> Option<SecretKind> {
        find_secret(text)
    }

    fn assert_clean(texts: &[&str]) {
        for text in texts {
            assert_eq!(kind(text), None, "expected no match for {text:?}");
        }
    }

    fn assert_kind(expected: SecretKind, texts: &[&str]) {
        for text in texts {
            assert_eq!(kind(text), Some(expected), "expected {expected:?} for {text:?}");
            assert!(is_secret_like(text));
        }
    }

    #[test]
    fn as_str_names_are_snake_case_and_distinct() {
        let all = [
            (SecretKind::PrivateKey, "private_key"),
            (SecretKind::Assignment, "assignment"),
            (SecretKind::BearerToken, "bearer_token"),
            (SecretKind::ApiKeyShape, "api_key_shape"),
            (SecretKind::AwsAccessKey, "aws_access_key"),
            (SecretKind::Jwt, "jwt"),
            (SecretKind::UrlCredentials, "url_credentials"),
        ];
        for (kind, name) in all {
            assert_eq!(kind.as_str(), name);
        }
    }

    #[test]
    fn pem_begin_line_is_a_private_key() {
        assert_kind(
            SecretKind::PrivateKey,
            &[
                "-----BEGIN PRIVATE KEY-----",
                "here:\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow...",
                "-----begin openssh private key-----",
                "------BEGIN EC PRIVATE KEY-----",
                "-----BEGIN ENCRYPTED PRIVATE KEY----- then password = x",
            ],
        );
    }

    #[test]
    fn pem_public_keys_and_certificates_are_not_private_keys() {
        assert_clean(&[
            "-----BEGIN PUBLIC KEY-----",
            "-----BEGIN CERTIFICATE-----",
            "-----BEGIN PRIVATE KEY----",
            "-----BEGIN PRIVATE-KEY-----",
            "-----BEGINPRIVATE KEY-----",
            "-----BEGIN ",
        ]);
    }

    #[test]
    fn assignments_of_credential_keys_match() {
        assert_kind(
            SecretKind::Assignment,
            &[
                "password = hunter2",
                r#"{"api_key": "abc"}"#,
                "TOKEN=xyz",
                "client-secret: q",
                "client secret=q",
                "api key: abc",
                "APIKEY=abc",
                "access_key = k",
                "secret=s",
                "secret_key: s",
                "Secret Key = s",
                "passwd:x",
                "passphrase = correct horse",
                "cookie: session=abc",
                "'password' = 'x'",
                r#"password = "two words""#,
                "token\n:\n  value",
                "password\u{3000}=\u{A0}x",
                "Authorization: Basic dXNlcjpwYXNz",
                "(password=x)",
            ],
        );
    }

    #[test]
    fn authorization_bearer_header_reports_the_assignment_rule_first() {
        assert_kind(SecretKind::Assignment, &["Authorization: Bearer abcdefgh12345"]);
    }

    #[test]
    fn assignment_needs_a_non_empty_value() {
        assert_clean(&[
            "password:",
            "password =   ",
            "password = , next",
            "token: ;",
            "cookie=}",
            "secret = ]",
        ]);
    }

    #[test]
    fn key_glued_to_a_word_or_hyphen_on_the_left_is_not_a_key() {
        assert_clean(&["mypassword = x", "x-token: abc", "X-Api-Key: abc", "_token=1"]);
    }

    #[test]
    fn key_without_a_word_boundary_on_the_right_is_not_a_key() {
        // `passwords`, `token_count`, `secret_keys` and `client_secret_key` extend past the key.
        assert_clean(&[
            "passwords = x",
            "let token_count = 3;",
            "secret_keys = x",
            "client_secret_key = x",
            "tokenizer: bpe",
        ]);
    }

    #[test]
    fn prose_mentioning_credential_words_is_not_an_assignment() {
        assert_clean(&[
            "the token is here",
            "Use the token bucket algorithm",
            "password reset flow",
            "the api key rotation doc",
            "token-count = 3",
            "a secret, kept",
        ]);
    }

    #[test]
    fn typed_fields_match_like_upstream_but_paths_and_comparisons_do_not() {
        // Upstream parity: `[:=]` then any non-separator counts as a value, so a declared
        // `password` field is treated as secret-like.
        assert_kind(
            SecretKind::Assignment,
            &["struct Login { password: String }", "token = a==b"],
        );
        for code in [
            "use crate::token::Token;",
            "if token == expected { ok }",
            "match k { password => 1 }",
        ] {
            assert_eq!(find_secret(code), None, "{code}");
        }
    }

    #[test]
    fn bearer_tokens_match() {
        assert_kind(
            SecretKind::BearerToken,
            &[
                "send it with Bearer abcdefgh12345 please",
                "bearer\tabc.def-ghi_jk==",
                "BEARER   abcdefgh",
                "curl -H 'Bearer abcdefgh12345'",
                "Bearer abcdefgh.é",
            ],
        );
    }

    #[test]
    fn bearer_in_prose_or_glued_is_not_a_token() {
        assert_clean(&[
            "bearer of bad news",
            "Bearer abcdefg",
            "Bearerabcdefgh12345",
            "cardbearer abcdefgh12345",
            "pall-bearer abcdefgh12345",
            "Bearer abcdefgh-é",
            "Bearer abcdefghé",
        ]);
    }

    #[test]
    fn vendor_token_shapes_match() {
        assert_kind(
            SecretKind::ApiKeyShape,
            &[
                "sk-live-secret",
                "key sk-proj-abcdefgh1234 ok",
                "SK-ABCDEFGH",
                "ghp_abcdefgh1234",
                "GHO_abcdefgh",
                "ghs_abcdefgh, ghr_x",
                "github_pat_abcdefgh_1234",
                "xoxb-12345678-abc",
                "XOXP-abcdefgh",
                "(sk-abcdefgh)",
            ],
        );
    }

    #[test]
    fn sk_inside_ordinary_words_is_not_a_token() {
        assert_clean(&[
            "risk-based prioritization",
            "task-list",
            "desk-top",
            "ask-questions-quickly",
            "sk-short",
            "sk--abcdefgh",
            "sk-abcdefg",
        ]);
    }

    #[test]
    fn vendor_shapes_need_length_and_a_clean_right_edge() {
        assert_clean(&[
            "ghp_abcdefg",
            "ghx_abcdefgh1234",
            "ghp-abcdefgh1234",
            "ghp_abcdefgh1234-more",
            "xoxb-1234567",
            "xoxz-12345678",
            "xoxb-12345678_more",
            "github_pat_abc",
            "my_ghp_abcdefgh1234",
        ]);
    }

    #[test]
    fn aws_access_key_ids_match_as_whole_uppercase_words() {
        assert_kind(
            SecretKind::AwsAccessKey,
            &[
                "AKIAIOSFODNN7EXAMPLE",
                "id=AKIAIOSFODNN7EXAMPLE.",
                "ASIAIOSFODNN7EXAMPLE",
                "ABIAIOSFODNN7EXAMPLE",
                "ACCAIOSFODNN7EXAMPLE",
                "aws-AKIAIOSFODNN7EXAMPLE",
            ],
        );
    }

    #[test]
    fn aws_lookalikes_do_not_match() {
        assert_clean(&[
            "AKIA",
            "AKIA alone",
            "akiaiosfodnn7example",
            "AKIAIOSFODNN7EXAMPL",
            "AKIAIOSFODNN7EXAMPLE1",
            "xAKIAIOSFODNN7EXAMPLE",
            "AKIAIOSFODNN7EXAMPLE_",
            "AKIAiosfodnn7example",
        ]);
    }

    #[test]
    fn jwts_match() {
        assert_kind(SecretKind::Jwt, &[JWT, &format!("cookie jar: [{JWT}]")[..]]);
    }

    #[test]
    fn jwt_lookalikes_do_not_match() {
        let glued = format!("x{JWT}");
        let trailing = format!("{JWT}é");
        assert_clean(&[
            "eyJ.eyJ.x",
            "eyJhbGciOiJIUzI1NiJ9.notjsonpayload.sigsigsigsig",
            "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIx.short",
            "eyJhbGciOi.eyJzdWIiOi",
            "version eyJ.1.2",
            &glued,
            &trailing,
        ]);
    }

    #[test]
    fn url_userinfo_with_password_matches() {
        assert_kind(
            SecretKind::UrlCredentials,
            &[
                "https://bob:s3cret@example.com/x",
                "postgres://u:p@db:5432/x",
                "clone https://:ghtoken@github.com/org/repo",
                "redis://default:pa:ss@[::1]:6379",
            ],
        );
    }

    #[test]
    fn urls_and_addresses_without_a_password_do_not_match() {
        assert_clean(&[
            "https://example.com/a@b",
            "git@github.com:org/repo.git",
            "user@example.com",
            "email me at bob@example.com",
            "https://bob@example.com",
            "https://bob:@example.com",
            "ssh://git@github.com:22/x",
            "https://bob:s3cret@",
            "://u:p@host",
            "see http://localhost:8000 or mail a@b.c",
        ]);
    }

    #[test]
    fn url_scan_stops_at_a_quote_so_json_fields_do_not_join() {
        assert_clean(&[r#"{"url":"http://host:8000","owner":"a@b.c"}"#]);
    }

    #[test]
    fn highest_priority_rule_wins_regardless_of_position() {
        assert_eq!(
            kind("AKIAIOSFODNN7EXAMPLE then password=x"),
            Some(SecretKind::Assignment)
        );
        assert_eq!(
            kind("sk-abcdefgh1234 then -----BEGIN PRIVATE KEY-----"),
            Some(SecretKind::PrivateKey)
        );
    }

    #[test]
    fn multibyte_neighbours_are_handled() {
        assert_kind(
            SecretKind::Assignment,
            &["请使用 password = hunter2 谢谢 🎉", "🔑password=x", "token=é"],
        );
        // Fullwidth punctuation is not a word character, so it bounds a token like ASCII does.
        assert_kind(
            SecretKind::ApiKeyShape,
            &["密钥：sk-abcdefgh1234，好的", "🎉ghp_abcdefgh1234🎉"],
        );
        assert_kind(SecretKind::UrlCredentials, &["连接 https://bob:密码@例子.com 吧"]);
    }

    #[test]
    fn cjk_letters_count_as_word_characters_for_adjacency() {
        assert_clean(&[
            "中password=x",
            "sk-abcdefgh中",
            "中sk-abcdefgh1234",
            "AKIAIOSFODNN7EXAMPLE文",
        ]);
    }

    #[test]
    fn every_prefix_of_every_sample_is_scanned_without_panicking() {
        let samples = [
            "-----BEGIN RSA PRIVATE KEY-----",
            "\"client secret\" :\u{3000}\"v\"",
            "Bearer abcdefgh.ijk",
            "github_pat_abcdefgh1234",
            "xoxb-12345678",
            "AKIAIOSFODNN7EXAMPLE",
            JWT,
            "postgres://u:p@db:5432/x",
        ];
        let mut matched_whole = 0;
        for sample in samples {
            for tail in ["", "é", "🎉", "密"] {
                for (cut, _) in sample.char_indices() {
                    let _ = find_secret(&format!("{}{tail}", &sample[..cut]));
                    let _ = find_secret(&format!("{tail}{}", &sample[cut..]));
                }
            }
            matched_whole += usize::from(is_secret_like(&format!("密 {sample} 🎉")));
        }
        assert_eq!(matched_whole, samples.len());
    }

    #[test]
    fn a_200000_character_prompt_without_secrets_is_clean() {
        let paragraph = "Refactor the risk-based task-list 中文 🎉 so the token bucket keeps \
            password reset flow working; see https://example.com/a@b and git@github.com:o/r.git. ";
        let mut prompt = String::new();
        while prompt.chars().count() < 200_000 {
            prompt.push_str(paragraph);
        }
        assert!(prompt.chars().count() >= 200_000);
        assert_eq!(find_secret(&prompt), None);
        prompt.push_str(" password=x");
        assert_eq!(find_secret(&prompt), Some(SecretKind::Assignment));
    }

    #[test]
    fn adversarial_repetitions_scan_in_linear_time() {
        let units = [
            "bearer ",
            "bearer a.",
            "-----BEGIN ",
            "a://",
            "://a:",
            "sk-",
            "eyJ.",
            "token ",
            "AKIA",
            "xoxb-",
            "-",
            "密",
        ];
        let started = Instant::now();
        for unit in units {
            let prompt = unit.repeat(200_000 / unit.len());
            let _ = find_secret(&prompt);
        }
        // Linear scans take milliseconds; a quadratic one would take minutes.
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "took {:?}",
            started.elapsed()
        );
    }
}
