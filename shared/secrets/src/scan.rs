//! The scan: one pass over the text that finds keys, providers' tokens, commands and tables, and
//! hands each value to the judging layer. It holds the only state of a scan and must never do I/O.

use crate::bytes::{
    MAX_SEGMENT, b64, b64url, char_at, char_ceil, char_floor, contains_ci, eat_ci, ends_with_ci,
    fallback_after, find_any_of_two, find_byte, find_ci, hex, is_js_space, is_word, line_before, line_end,
    line_end_max, line_start_of, lower, rfind_byte, run_back, run_end, run_end_max, skip_blank, skip_space,
    token_continues_at, trim_ascii, trim_end_of, word_at, word_class,
};
use crate::chars::{
    alphabet, entropy, fabricated, has_digit, has_symbol, identifier_like, looks_random, mixed_case, wordy,
};
use crate::commands::{
    ARCHIVE, CURL, HTTPIE, KEYTOOL, LDAP, LFTP, LOGIN, MONGO, MYSQL, OPENSSL, Printed, REDIS, SMB, SNMP,
    SQLCMD, SSH_KEYGEN, after_user_flag, colon_fields, compared_word, crypt_byte, env_command_line,
    named_commands, netrc_line, next_arg, pgpass, secret_printer, segment_commands, shadow, shell_line,
};
use crate::judge::{
    MAX_SPAN, MAX_VALUE, PASSWORD_KEYS, Stop, Value, all_caps, b64url_json, bare_key_word, basic_filler,
    camel_type, camel_words, cmdlet, code_continuation, code_expression, composite_literal, config_literal,
    constant_like, cookie_attributes, digest_of_secret, fake_words, generated, hex_digest,
    host_after_stand_in, is_auth_scheme, is_path_or_url, is_placeholder, is_reference, jwt_header, key_path,
    keyed_call_literals, ldap_dn, letters_password, member_path, named_nearby, names_no_secret,
    next_field_pair, npm_scope, numeric_like, opens_a_call, owned_in_prose, passphrase_word, password_key,
    plain_cookie, plain_cookie_pair, plist_value_follows, quoted_slot, quoted_word, random_after_slash,
    random_letters, readable_url, secret_constant_name, secret_location, setting_name_at, sigil_code,
    skip_fillers, spaced_random, start_tag_attributes_end, statement_start, text_before,
    url_stand_in_userinfo, user_password, uuid, value_is_secret, within_arn,
};
use crate::kinds::{Finding, SecretKind};
use crate::layout::{dequoted, holds_qp_escape, quoted_printable};
use crate::pem::{
    MAX_PEM, base64_block_end, base64_block_start, base64_has_colon, base64_run, base64_text, pem_body_at,
    pem_illustration, prefixed_pem_illustration, quoted_body_end,
};
use crate::prefilter::{KeyStart, keyword_may_start_at};
use crate::tables::{Table, for_each_cell, table_header, top_level};
use crate::words::{
    ForeignMask, KEY_BYTE, KEY_DASH, KEY_SEPARATOR, KEYWORD_TOKEN, Mode, NON_ASCII_WORD, PASSIVE_BYTE,
    PASSWORD_WORDS, STARTS_BYTE_RULE, Strength, Words, args_end, case_particle, command_position,
    command_segment, credential_word, credential_word_tail, credential_words_end, declared_type_end,
    foreign_qualified, foreign_word_means, is_key_byte, may_hold_secret_word, public_word_before,
    qualified_after, qualified_before, secret_word, strong_word_before, words_from, words_of,
};

/// One scan of `text`: its findings sorted by start, not merged.
pub(crate) fn scan_text(text: &str) -> Vec<Finding> {
    scan_layout(text, true)
}

/// [`scan_text`]; a mail's part that says it is quoted-printable is read decoded too when `mail`
/// (the decoded text says so too, and is not decoded again): the text as it stands is still read,
/// for a prompt quoting a mail may hold more than the mail (`API_TOKEN=41…` pasted below it).
fn scan_layout(text: &str, mail: bool) -> Vec<Finding> {
    let (dequoted, quoted_printable_text) = dequoted(text);
    let mut decoded = None;
    if mail
        && quoted_printable_text
        && let Some((plain, at)) = quoted_printable(text)
    {
        let decoded = decoded.insert(scan_layout(&plain, false));
        for f in decoded.iter_mut() {
            (f.start, f.end) = (at[f.start], at[f.end]);
        }
    }
    let mut found = scan_read(dequoted.as_deref().unwrap_or(text));
    if dequoted.is_some() {
        // A character read as ASCII padded with blanks (`：` as `:  `) may hold a span's end: the
        // span takes the whole character.
        for f in &mut found {
            f.start = char_floor(text.as_bytes(), f.start);
            f.end = char_ceil(text.as_bytes(), f.end);
        }
    }
    if let Some(mut decoded) = decoded {
        // Where both readings find a value, the decoded one tells its span (`password=3DRk4…`
        // holds `Rk4…`); a value read as written that holds an escape, or follows one, is the
        // decoded reading's to judge (`password=3Dchangeme`).
        let mut j = 0;
        found.retain(|f| {
            while j < decoded.len() && decoded[j].end <= f.start {
                j += 1;
            }
            decoded.get(j).is_none_or(|d| d.start >= f.end)
                && !holds_qp_escape(text.as_bytes(), f.start.saturating_sub(1), f.end)
        });
        found.append(&mut decoded);
        found.sort_by_key(|f| (f.start, f.kind.rank()));
    }
    found
}

/// [`scan_text`] of the text with its layout read as blanks.
fn scan_read(text: &str) -> Vec<Finding> {
    let mut scan = Scan::new(text);
    scan.run();
    let name_words = scan.names_listed.then_some(scan.name_words);
    let mut found = scan.found;
    found.sort_by_key(|f| (f.start, f.kind.rank()));
    if same_line_tokens(text.as_bytes(), &mut found, name_words.as_deref()) {
        found.sort_by_key(|f| (f.start, f.kind.rank()));
    }
    if keyed_call_literals(text.as_bytes(), &mut found) {
        found.sort_by_key(|f| (f.start, f.kind.rank()));
    }
    // A SealedSecret's encrypted values, whichever key or line rule read them (one search of
    // the text for the kind first: most prompts hold none).
    if !found.is_empty() && memchr::memmem::find(text.as_bytes(), b"kind: SealedSecret").is_some() {
        found.retain(|f| {
            !(matches!(f.kind, SecretKind::Assignment | SecretKind::Prose)
                && sealed_data(text.as_bytes(), f.start))
        });
    }
    found
}

pub(crate) struct Scan<'t> {
    pub(crate) text: &'t str,
    pub(crate) bytes: &'t [u8],
    pub(crate) found: Vec<Finding>,
    /// The end of the furthest finding: rules starting before it are not tried again (the span
    /// is withheld or redacted anyway), which keeps a repeated `token=` linear.
    pub(crate) covered: usize,
    /// The start of the current line and which password-taking commands it names (bit set,
    /// computed once per line on the first short flag).
    pub(crate) line: (usize, Option<u16>),
    /// The start of the current line and the commands the line above carries onto it when it
    /// ends with a continuation.
    pub(crate) carry: (usize, u16),
    /// The last position whose line start [`Scan::line_start_at`] found, and that start: the
    /// next look-up reads back only to it.
    pub(crate) line_seen: (usize, usize),
    /// The last position whose line end [`Scan::line_end_at`] found, and that end.
    pub(crate) line_end_seen: (usize, usize),
    /// The last position a `default` was looked for from, and the first one there (`usize::MAX`
    /// for none): see [`Scan::default_from`].
    pub(crate) default_seen: (usize, usize),
    /// The last search for a PEM END line, reused by the next BEGIN line.
    pub(crate) pem_end: PemEnd,
    /// Bytes the END-line searches looked at (the work a prompt of BEGIN lines costs).
    pub(crate) pem_searched: usize,
    /// The last base64url run measured by the JWT rule, `[start, end)`.
    pub(crate) b64url_run: (usize, usize),
    /// The table whose rows the current line may continue (its header named a secret column).
    pub(crate) table: Option<Table>,
    /// The start of the last line tried as a table header: every secret word on it would
    /// otherwise parse the whole line again.
    pub(crate) header_tried: usize,
    /// Bytes of table headers and rows split into cells (the work a prompt of tables costs).
    pub(crate) table_read: usize,
    /// The end of the last SQL `INSERT` read: one that starts inside it is inside its strings.
    pub(crate) insert_end: usize,
    /// The end of the key [`Scan::key_at`] last measured when it is all letters and digits (`0`
    /// otherwise): the inside of that word starts nothing, and the scan goes on after it.
    pub(crate) plain_key_end: usize,
    /// The start and end of the key [`Scan::key_at`] last measured when it holds a separator
    /// and is long enough for a glued vendor prefix and its body (see [`Scan::glued_vendor_at`]).
    pub(crate) separated_key: (usize, usize),
    /// Where a key starts that may name a secret for [`same_line_tokens`] (its test before
    /// [`names_secret`]), in order, while `names_listed`: that pass then reads these words only.
    pub(crate) name_words: Vec<usize>,
    /// No key start went unlisted: no foreign password word.
    pub(crate) names_listed: bool,
    /// Under a command that prints a stored secret: where the next line starts, how the secret
    /// is printed and how many more lines a JSON document's `"value"` is looked for in.
    pub(crate) printed: Option<(usize, Printed, Strength, u8)>,
}

/// What is known about `-----end ` after a position: searched `[from, to)`, first hit `found`.
#[derive(Default)]
pub(crate) struct PemEnd {
    pub(crate) from: usize,
    pub(crate) to: usize,
    pub(crate) found: Option<usize>,
}

impl<'t> Scan<'t> {
    pub(crate) fn new(text: &'t str) -> Self {
        crate::judge::new_reading();
        Scan {
            text,
            bytes: text.as_bytes(),
            found: Vec::new(),
            covered: 0,
            line: (0, None),
            carry: (0, 0),
            line_seen: (0, 0),
            line_end_seen: (usize::MAX, 0),
            default_seen: (usize::MAX, 0),
            pem_end: PemEnd::default(),
            pem_searched: 0,
            b64url_run: (0, 0),
            table: None,
            header_tried: usize::MAX,
            table_read: 0,
            insert_end: 0,
            plain_key_end: 0,
            separated_key: (usize::MAX, 0),
            name_words: Vec::new(),
            names_listed: true,
            printed: None,
        }
    }

    pub(crate) fn push(&mut self, kind: SecretKind, start: usize, end: usize) {
        // Rules measure in bytes; a span that ended inside a character would make `redact`
        // slice it, so it is widened to whole characters.
        let (start, end) = (char_floor(self.bytes, start), char_ceil(self.bytes, end));
        // A key a vendor publishes as an example is no secret, whatever rule found it (a
        // connection string's field may run on past it: `…GMGw==;BlobEndpoint=…`); a value
        // that goes on with a random part (`<example UUID>.xK9mQ2…`) merely starts with one.
        if end >= start + 16
            && crate::rules::documented_example_at(&self.bytes[start..end]).is_some_and(|n| {
                !self.bytes[start + n..end]
                    .split(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'_' | b'-')))
                    .find(|t| !t.is_empty())
                    .is_some_and(|t| looks_random(t, 8))
            })
        {
            return;
        }
        // Code that fetches the secret (`c.Get("UPLOAD_KEY", "")`), whichever key rule read it as
        // the value.
        let generic = matches!(
            kind,
            SecretKind::Assignment | SecretKind::CommandLine | SecretKind::AuthHeader | SecretKind::Prose
        );
        if generic && opens_a_call(&self.bytes[start..end]) {
            return;
        }
        // A translation file's text, whichever rule read a word of it as a value (`"Successfully
        // revoked the Token": "Token erfolgreich widerrufen"` after a scheme's word).
        if generic && crate::judge::in_locale_entry(self.bytes, start) {
            return;
        }
        if end > start {
            self.found.push(Finding { kind, start, end });
            self.covered = self.covered.max(end);
        }
    }

    pub(crate) fn run(&mut self) {
        let bytes = self.bytes;
        // What came before `i`: an ASCII byte, or a stand-in for a non-ASCII character
        // ([`NON_ASCII_WORD`] for a letter or digit, space otherwise).
        let mut prev = b'\n';
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            // A blank or a punctuation mark no rule starts with, inside a line, starts nothing.
            if PASSIVE_BYTE[usize::from(b)] && prev != b'\n' {
                prev = b;
                i += 1;
                continue;
            }
            // The inside of a word starts no rule: most bytes of a prompt take only this branch.
            let inside = crate::prefilter::WORD_BYTE[usize::from(b)]
                & crate::prefilter::WORD_BEFORE[usize::from(prev)];
            if inside {
                // The rest of the word too: each of its bytes would take this branch.
                let end = run_end(bytes, i + 1, |c| c.is_ascii_alphanumeric());
                prev = bytes[end - 1];
                i = end;
                continue;
            }
            if !b.is_ascii() {
                (prev, i) = self.non_ascii_at(i, prev);
                continue;
            }
            if prev == b'\n' {
                self.new_line(i);
            }
            if i < self.covered {
                // A key inside what was found is not read, but may still name a secret for the
                // same-line pass.
                if is_key_byte(b) && !is_key_byte(prev) {
                    let word = &bytes[i..run_end_max(bytes, i, 12, is_key_byte)];
                    if may_name_secret(word) || other_name(word) {
                        self.name_words.push(i);
                    }
                }
                prev = b;
                i += 1;
                continue;
            }
            if prev == b'\n' {
                self.line_start(i);
            }
            match b {
                // One lookup for the bytes no rule below starts with.
                _ if !STARTS_BYTE_RULE[usize::from(b)] => {}
                b'-' if bytes[i..].starts_with(b"----") => self.pem_at(i),
                b':' if bytes[i..].starts_with(b"://") => self.url_credentials_at(i),
                b'@' => self.dsn_credentials_at(i),
                b'.' if bytes[i..].starts_with(b".atlasv1.") => self.terraform_at(i),
                b'~' => self.azure_ad_at(i),
                b'$' => self.crypt_hash_at(i),
                b'{' => self.ldap_hash_at(i),
                // `%3D`, `%20`: a URL-encoded separator, so a word starts after it.
                b'%' if bytes.get(i + 1).is_some_and(|&c| hex(c))
                    && bytes.get(i + 2).is_some_and(|&c| hex(c))
                    && bytes.get(i + 3).is_some_and(u8::is_ascii_alphanumeric) =>
                {
                    self.word_at(i + 3, b'%', 0);
                }
                _ => {}
            }
            let mut plain_end = 0;
            if is_key_byte(b) && !is_key_byte(prev) && prev != NON_ASCII_WORD {
                plain_end = self.key_start(i);
            }
            if crate::prefilter::WORD_BYTE[usize::from(b)]
                && !inside
                && (self.separated_key.0 == i || !crate::prefilter::inert_word(bytes, i, prev, plain_end))
            {
                self.word_at(i, prev, plain_end);
            }
            // A word of letters and digits: its inside would take the first branch byte by byte.
            if plain_end > i + 1 {
                prev = bytes[plain_end - 1];
                i = plain_end;
                continue;
            }
            prev = b;
            i += 1;
        }
    }

    /// A character outside ASCII at `i` after `prev` (see [`Scan::run`]): what stands for it as
    /// the byte before the next, and where the next starts. Out of the scan's loop, which most
    /// prompts never bring here: its code would crowd the loop's own.
    #[inline(never)]
    pub(crate) fn non_ascii_at(&mut self, i: usize, prev: u8) -> (u8, usize) {
        let bytes = self.bytes;
        // The same-line pass reads a character of another script as a name's start (`令牌`,
        // `ключ`) and a word for key whose ASCII head stops here (`clé`): both are listed, so a
        // prompt with a non-ASCII character is not read twice whole.
        if foreign_name_at(bytes, i) {
            self.name_words.push(i);
        }
        // (Its head is `cl` or `schl`: five key bytes before are a longer word.)
        let head = run_back(&bytes[i.saturating_sub(5)..i], is_key_byte);
        if (1..5).contains(&head) && accented_name(bytes, i - head, i) {
            self.name_words.push(i - head);
        }
        // A line may start with any character (`Émile,…` under a table's header).
        if prev == b'\n' {
            self.new_line(i);
            if i >= self.covered {
                self.line_start(i);
            }
        }
        if i >= self.covered {
            self.password_word_at(i, i);
        }
        let (word, len) = match char_at(self.text, i) {
            Some(c) => (is_word(c), c.len_utf8()),
            None => (false, 1),
        };
        let next = i + len;
        // A word glued after a letter of another script starts no key (`キーtoken`), but the
        // same-line pass reads it as a word.
        if word && bytes.get(next).is_some_and(|&c| is_key_byte(c)) {
            let glued = &bytes[next..run_end_max(bytes, next, 12, is_key_byte)];
            if may_name_secret(glued) || other_name(glued) {
                self.name_words.push(next);
            }
        }
        (if word { NON_ASCII_WORD } else { b' ' }, next)
    }

    // --- rules anchored at the start of a word -------------------------------------------------

    /// Vendor shapes, JWTs and auth schemes at a word start; `prev` is what came before, `run`
    /// the end of the word when it is letters and digits up to a byte no key holds (`0`: not
    /// known).
    pub(crate) fn word_at(&mut self, i: usize, prev: u8, run: usize) {
        let bytes = self.bytes;
        let after_hyphen = prev == b'-';
        // The original filter's short shapes never start inside a dashed or dotted word
        // (`xoxe.xoxp-1-…` is the longer prefix's, judged by its own rule).
        let inside_word = after_hyphen || prev == b'.';
        let vendors = if crate::prefilter::shorter_than_a_token(bytes, i, run) {
            &[]
        } else {
            let (b1, b2) = (
                bytes.get(i + 1).copied().unwrap_or(0),
                bytes.get(i + 2).copied().unwrap_or(0),
            );
            if crate::rules::may_start(bytes[i], b1, b2) {
                crate::rules::candidates(bytes[i], b1)
            } else {
                &[]
            }
        };
        for v in vendors {
            if inside_word && !v.after_dash() {
                continue;
            }
            if let Some(end) = v.matches(self.text, i) {
                // A segment of a dotted name (`video_box.ico-7a38….png`), not a token.
                if prev == b'.' && bytes.get(end) == Some(&b'.') {
                    continue;
                }
                // A file named by a digest after a word (`cache/cosmo_<md5>.json`): a path's
                // last segment whose body is hex, before an extension, names a file.
                if matches!(prev, b'/' | b'\\')
                    && bytes.get(end) == Some(&b'.')
                    && bytes.get(end + 1).is_some_and(u8::is_ascii_alphabetic)
                    && bytes[i + v.prefix().len()..end].iter().all(u8::is_ascii_hexdigit)
                {
                    continue;
                }
                if lookup_key_digest(
                    self.line_before_at(i),
                    v.prefix(),
                    &bytes[i + v.prefix().len()..end],
                ) {
                    continue;
                }
                let end = v.wrapped_end(bytes, i, end);
                self.push(SecretKind::Vendor(v.name()), i, end);
                if v.name() == "aws_access_key" {
                    self.aws_secret_near(end);
                }
                return;
            }
        }
        if after_hyphen {
            return;
        }
        // A key whose marker sits after a random head (Microsoft's identifiable keys).
        if !crate::prefilter::shorter_than_a_head(bytes, i, run)
            && let Some((v, start, end)) = crate::rules::headed_at(self.text, i)
        {
            self.push(SecretKind::Vendor(v.name()), start, end);
            return;
        }
        if self.separated_key.0 == i && self.glued_vendor_at(i) {
            return;
        }
        if bytes.get(i + 32) == Some(&b'-') {
            if bytes.get(i + 32..i + 35) == Some(b"-us") {
                self.mailchimp_at(i);
            } else {
                self.mailgun_at(i);
            }
        }
        match bytes[i] {
            // A scheme word is English: glued to other text it is not one.
            b'b' | b'B' if prev != NON_ASCII_WORD => {
                self.auth_scheme_at(i);
                self.crypt_word_at(i);
                // `api.telegram.org/bot<token>/sendMessage`: the token glued to its path word.
                if bytes[i..].starts_with(b"bot") {
                    self.telegram_at(i + 3);
                }
            }
            b'i' | b'I' => {
                self.identified_by_at(i);
                self.insert_at(i);
                if crate::words::more_commands_at(bytes, i) {
                    self.command_at(i);
                }
            }
            b'0'..=b'9' => {
                self.telegram_at(i);
                self.host_account_at(i);
            }
            b's' if crate::words::more_commands_at(bytes, i) => {
                self.crypt_word_at(i);
                self.command_at(i);
            }
            b'p' | b's' | b'a' => self.crypt_word_at(i),
            b'M' | b'O' => self.discord_at(i),
            // Windows commands ignore case (`NET USE`).
            b'N' => {
                self.discord_at(i);
                self.command_at(i);
            }
            b'm' => {
                self.crypt_word_at(i);
                if crate::words::more_commands_at(bytes, i) {
                    self.command_at(i);
                }
                if prev == b'<' {
                    self.maven_master_at(i);
                }
            }
            b'c' | b'C'
                if bytes.get(i + 9) == Some(&b'-')
                    && eat_ci(bytes, i, b"convertto-securestring").is_some() =>
            {
                self.secure_string_at(i);
            }
            b'h' | b'w' | b'n' | b'c' | b'v' => self.command_at(i),
            // The other commands [`Scan::command_at`] reads, named whole.
            b'r' | b'd' | b'o' | b'e' if crate::words::more_commands_at(bytes, i) => self.command_at(i),
            b'e' => {
                if let Some(end) = self.jwt_at(i) {
                    self.push(SecretKind::Jwt, i, end);
                }
            }
            b'k' if matches!(prev, b'"' | b'\'') => self.jwk_at(i, prev),
            b'k' if bytes.get(i + 3) == Some(&b':') => self.jwk_yaml_at(i),
            b'R' | b'D' if prev == b'<' => self.xml_key_value_at(i),
            _ => {}
        }
    }

    /// .NET's `RSA.ToXmlString(true)` and `DSA.ToXmlString(true)`: the private parameters of an
    /// `<RSAKeyValue>` element (`<D>`, `<P>`, `<Q>`, `<DP>`, `<DQ>`, `<InverseQ>`) or of a
    /// `<DSAKeyValue>` (`<X>`; its `<P>`, `<Q>`, `<G>`, `<Y>` are the public key), each random
    /// base64 text; the public `<Modulus>` and `<Exponent>` are not read, nor a text cut short
    /// (`6T6DLbUs…`).
    pub(crate) fn xml_key_value_at(&mut self, i: usize) {
        const RSA: Words = words_from!(&[b"D", b"P", b"Q", b"DP", b"DQ", b"InverseQ"]);
        const DSA: Words = words_from!(&[b"X"]);
        let bytes = self.bytes;
        let (private, close): (Words, &[u8]) = if bytes[i..].starts_with(b"RSAKeyValue>") {
            (RSA, b"</rsakeyvalue>")
        } else if bytes[i..].starts_with(b"DSAKeyValue>") {
            (DSA, b"</dsakeyvalue>")
        } else {
            return;
        };
        let to = bytes.len().min(i + 16 * 1024);
        let end = find_ci(&bytes[..to], i, close).unwrap_or(to);
        let mut q = i;
        while let Some(at) = find_byte(b'<', &bytes[q..end]) {
            let name_start = q + at + 1;
            let Some(len) = find_byte(b'>', &bytes[name_start..end]) else {
                return;
            };
            let text = name_start + len + 1;
            let text_end = find_byte(b'<', &bytes[text..end]).map_or(end, |p| text + p);
            q = text;
            if !private.contains(&bytes[name_start..text - 1]) {
                continue;
            }
            let v = &bytes[text..text_end];
            if v.iter().all(|&b| b64(b)) && looks_random(v, 16) && !crate::rules::filler_like(v) {
                self.push(SecretKind::PrivateKey, text, text_end);
            }
            q = text_end;
        }
    }

    /// A JSON Web Key's private members (RFC 7518: `"d"`, `"p"`, `"q"`, `"dp"`, `"dq"`, `"qi"`),
    /// in the object whose `"kty"` name starts at `i`: each random base64url value. The public
    /// members (`"n"`, `"e"`, `"x"`, `"y"`) are not read, nor a symmetric key's `"k"`: the
    /// one-line `{"kty":"oct","k":…}` is a library example's fixture more often than a secret.
    /// Its names are in `quote`: JSON's `"`, or `'` as Python prints a dict (`{'kty': 'EC', …}`).
    pub(crate) fn jwk_at(&mut self, i: usize, quote: u8) {
        const PRIVATE: Words = words_from!(&[b"d", b"p", b"q", b"dp", b"dq", b"qi"]);
        let bytes = self.bytes;
        if !bytes[i..].starts_with(b"kty") || bytes.get(i + 3) != Some(&quote) {
            return;
        }
        // A key's members are flat: its object runs from the last `{` before (or the text's
        // start, when its members are pasted alone) to the first `}` after, with no brace between.
        let from = i.saturating_sub(4096);
        let open = bytes[from..i]
            .iter()
            .rposition(|&b| b == b'{')
            .map_or(from, |p| from + p);
        if bytes[open..i].contains(&b'}') {
            return;
        }
        let to = bytes.len().min(i + 16 * 1024);
        let close = bytes[i..to].iter().position(|&b| b == b'}').map_or(to, |p| i + p);
        let mut q = open + usize::from(bytes[open] == b'{');
        let found = self.found.len();
        while let Some(at) = find_byte(quote, &bytes[q..close]) {
            let name_start = q + at + 1;
            let Some(len) = find_byte(quote, &bytes[name_start..close]) else {
                return;
            };
            let name = &bytes[name_start..name_start + len];
            q = name_start + len + 1;
            let colon = skip_space(bytes, q);
            if bytes.get(colon) != Some(&b':') {
                continue;
            }
            let private = PRIVATE.contains(name);
            // The public members are read only to know a documented example's key.
            if !private && !matches!(name, b"n" | b"x") {
                continue;
            }
            let Some(value) = Value::parse(bytes, skip_space(bytes, colon + 1), Stop::Code) else {
                continue;
            };
            let v = value.text(bytes);
            // An RFC's example key (RFC 7517's, pasted into many test suites) is no secret: its
            // public modulus or point says so, wherever it stands among the members.
            if !private {
                if crate::rules::documented_example(v) {
                    self.found.truncate(found);
                    return;
                }
                continue;
            }
            if value.quoted
                && v.iter().all(|&b| b64url(b))
                && looks_random(v, 16)
                && !crate::rules::filler_like(v)
            {
                self.push(SecretKind::PrivateKey, value.start, value.whole_end(bytes));
            }
            // (A long value cut short ends at its closing quote: past it, names start again.)
            let end = value.whole_end(bytes);
            q = (end + usize::from(bytes.get(end) == Some(&quote))).max(q);
        }
    }

    /// A JSON Web Key written as YAML (a `kty:` line, its members on the lines of the same
    /// mapping: `d: …`, `p: …`), as a Helm value or a Kubernetes manifest holds one: each private
    /// member's random base64url value, as in JSON (see [`Scan::jwk_at`]).
    pub(crate) fn jwk_yaml_at(&mut self, i: usize) {
        const PRIVATE: Words = words_from!(&[b"d", b"p", b"q", b"dp", b"dq", b"qi"]);
        // A mapping's members read around the `kty:` line, each way (a bound: a key has nine).
        const MEMBERS: usize = 16;
        let bytes = self.bytes;
        if !bytes[i..].starts_with(b"kty:") {
            return;
        }
        let start = self.line_start_at(i, 0);
        // The key's column: blanks before it, or a list item's `- ` opening the mapping.
        let lead = &bytes[start..i];
        // Read from the key back (the blanks right before it), not from the line's start.
        let blanks = |v: &[u8]| run_back(v, |b| b == b' ') == v.len();
        let item = lead.ends_with(b"- ") && blanks(&lead[..lead.len() - 2]);
        if !item && !blanks(lead) {
            return;
        }
        let col = i - start;
        // A member's line: `col` blanks (or, for the mapping's first line, a list item's `- `)
        // then its name, a colon and its value.
        let member = |ls: usize| -> Option<(usize, bool)> {
            let head = bytes.get(ls..ls + col).filter(|h| !h.contains(&b'\n'))?;
            let first = head.ends_with(b"- ") && head[..col - 2].iter().all(|&b| b == b' ');
            (first || head.iter().all(|&b| b == b' '))
                .then_some((ls + col, first))
                .filter(|&(k, _)| bytes.get(k).is_some_and(u8::is_ascii_alphabetic))
        };
        let mut names = Vec::new();
        let mut ls = start;
        for _ in 0..MEMBERS {
            if ls == 0 || item {
                break;
            }
            ls = line_start_of(bytes, ls - 1);
            let Some((k, first)) = member(ls) else {
                break;
            };
            names.push(k);
            if first {
                break;
            }
        }
        let mut le = line_end(bytes, i);
        for _ in 0..MEMBERS {
            if le >= bytes.len() {
                break;
            }
            match member(le + 1) {
                Some((k, false)) => names.push(k),
                _ => break,
            }
            le = line_end(bytes, le + 1);
        }
        let found = self.found.len();
        for k in names {
            let colon = run_end(bytes, k, |b| b.is_ascii_alphabetic());
            if bytes.get(colon) != Some(&b':') {
                continue;
            }
            let name = &bytes[k..colon];
            let private = PRIVATE.contains(name);
            if !private && !matches!(name, b"n" | b"x") {
                continue;
            }
            let at = skip_blank(bytes, colon + 1);
            let quote = usize::from(matches!(bytes.get(at), Some(b'"' | b'\'')));
            let end = run_end(bytes, at + quote, b64url);
            let v = &bytes[at + quote..end];
            // An RFC's example key is no secret: its public modulus or point says so.
            if !private {
                if crate::rules::documented_example(v) {
                    self.found.truncate(found);
                    return;
                }
                continue;
            }
            // The value fills its line (a YAML value; a sentence's `d:` goes on in words).
            let rest = skip_blank(bytes, end + quote);
            if matches!(bytes.get(rest), None | Some(b'\n' | b'\r'))
                && looks_random(v, 16)
                && !crate::rules::filler_like(v)
            {
                self.push(SecretKind::PrivateKey, at + quote, end);
            }
        }
    }

    /// Maven's master password: the `<master>` element of a `<settingsSecurity>` document
    /// (`settings-security.xml`, which holds nothing else), its text judged as a password's.
    /// Encrypted (`{…}`, Maven's `--encrypt-master-password`) it fills a slot, as in `<password>`.
    pub(crate) fn maven_master_at(&mut self, i: usize) {
        const OPEN: &[u8] = b"<settingsSecurity";
        let bytes = self.bytes;
        if !bytes[i..].starts_with(b"master>") {
            return;
        }
        let before = &bytes[i.saturating_sub(1024)..i];
        let opened = before.windows(OPEN.len()).rposition(|w| w == OPEN);
        let closed = before
            .windows(OPEN.len() + 1)
            .rposition(|w| w == b"</settingsSecurity");
        if opened.is_some_and(|o| closed.is_none_or(|c| c < o)) {
            self.element_text(
                i + b"master>".len(),
                b"password",
                Strength::Strong,
                SecretKind::Assignment,
            );
        }
    }

    /// A long vendor prefix glued after other letters (`ourgithub_pat_…`, `mysk_live_…`): a prefix
    /// of eight or more bytes with a separator in it, whose part before the separator ends the
    /// word starting at `i`, then that vendor's shape with a body of 20 or more characters that
    /// looks generated on its own (`ask_live_superlive1` is words). Short prefixes (`ghp_`, `sk-`)
    /// are read at a word's start only: glued to a word they are its letters more often than a
    /// token.
    pub(crate) fn glued_vendor_at(&mut self, i: usize) -> bool {
        let bytes = self.bytes;
        let end = run_end_max(bytes, i, 24, |b| b.is_ascii_alphanumeric());
        if !matches!(bytes.get(end), Some(b'_' | b'-')) || end - i < 3 {
            return false;
        }
        // The prefix's rest and a body of 20 follow unbroken (most `snake_case`, `dashed-words`
        // stop sooner, and are not looked at further).
        let tail = run_end_max(bytes, end + 1, 20, |b| {
            b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-')
        });
        if tail - end - 1 < 20 {
            return false;
        }
        for j in i + 1..end - 1 {
            let vendors =
                if crate::rules::may_start(bytes[j], bytes[j + 1], bytes.get(j + 2).copied().unwrap_or(0)) {
                    crate::rules::candidates(bytes[j], bytes[j + 1])
                } else {
                    continue;
                };
            for v in vendors {
                let sep = v.prefix().iter().position(|&b| matches!(b, b'_' | b'-'));
                if v.prefix().len() >= 8
                    && sep == Some(end - j)
                    && let Some(e) = v.matches(self.text, j)
                    && e >= j + v.prefix().len() + 20
                    && looks_random(&bytes[j + v.prefix().len()..e], 16)
                {
                    let e = v.wrapped_end(bytes, j, e);
                    self.push(SecretKind::Vendor(v.name()), j, e);
                    return true;
                }
            }
        }
        false
    }

    /// A Mailchimp API key: 32 lowercase hex characters, `-us` and the data center's number (gitleaks:
    /// mailchimp-api-key; detect-secrets: MailchimpDetector). The suffix is its own keyword: before
    /// it, 32 random letters and digits of both cases (a key re-encoded, or a test key of another
    /// alphabet) are as much a key. Hex in mixed case is neither: a key's hex is lowercase.
    pub(crate) fn mailchimp_at(&mut self, i: usize) {
        let bytes = self.bytes;
        let dc = run_end_max(bytes, i + 35, 3, |b| b.is_ascii_digit());
        let body = &bytes[i..i + 32];
        let random_alnum = || {
            body.iter().all(u8::is_ascii_alphanumeric)
                && !body.iter().all(u8::is_ascii_hexdigit)
                && crate::chars::mixed_case(body)
                && has_digit(body)
                && crate::chars::looks_random(body, 32)
        };
        if (random_lower_hex(body) || random_alnum())
            && (1..=2).contains(&(dc - i - 35))
            && !token_continues_at(self.text, dc)
        {
            self.push(SecretKind::Vendor("mailchimp_key"), i, dc);
        }
    }

    /// A Mailgun private API key of today's shape: 32 lowercase hex characters, then two groups
    /// of eight, each after a `-` (trufflehog: mailgun).
    pub(crate) fn mailgun_at(&mut self, i: usize) {
        let bytes = self.bytes;
        let end = i + 50;
        // Each group random too: one byte repeated or a count (`-00000001`) ends a typed id.
        let group = |s: usize| {
            bytes.get(s..s + 8).is_some_and(|g| {
                g.iter().all(|&b| lower_hex(b))
                    && !crate::rules::filler_like(g)
                    && !crate::chars::filler_run(g)
            })
        };
        if random_lower_hex(&bytes[i..i + 32])
            && group(i + 33)
            && bytes.get(i + 41) == Some(&b'-')
            && group(i + 42)
            && !token_continues_at(self.text, end)
        {
            self.push(SecretKind::Vendor("mailgun_key"), i, end);
        }
    }

    /// The 40-character secret access key pasted near an access key id (a credentials file, a
    /// console export): alone it has no shape of its own, next to its id it is the secret.
    pub(crate) fn aws_secret_near(&mut self, from: usize) {
        let bytes = self.bytes;
        let class = |b: u8| b.is_ascii_alphanumeric() || b == b'/' || b == b'+';
        let stop = bytes.len().min(from + 256);
        let mut k = from;
        while k < stop {
            if !class(bytes[k]) {
                k += 1;
                continue;
            }
            let end = run_end(bytes, k, class);
            let run = &bytes[k..end];
            let bounded = bytes.get(end).is_none_or(|&b| !matches!(b, b'=' | b'_' | b'-'))
                && (k == 0 || !matches!(bytes[k - 1], b'_' | b'-'));
            if run.len() == 40 && bounded && mixed_case(run) && has_digit(run) {
                self.push(SecretKind::Vendor("aws_access_key"), k, end);
                return;
            }
            k = end;
        }
    }

    /// Telegram bot token: the bot's 8–10 digit id, `:`, 35 base64url characters (`AA` and 33
    /// today, 32 after `AA` in some older ones; trufflehog's shape allows any 35 that look
    /// generated).
    pub(crate) fn telegram_at(&mut self, i: usize) {
        let bytes = self.bytes;
        let digits = run_end_max(bytes, i, 11, |b| b.is_ascii_digit());
        if !(8..=10).contains(&(digits - i)) || bytes.get(digits) != Some(&b':') {
            return;
        }
        let body = digits + 1;
        let end = run_end_max(bytes, body, 36, b64url);
        let secret = &bytes[body..end];
        let shaped = if secret.starts_with(b"AA") {
            (34..=35).contains(&secret.len())
        } else {
            secret.len() == 35 && mixed_case(secret) && has_digit(secret) && entropy(secret) >= 4.0
        };
        // `5555555555:AAAAAAAA…`: filler where the token goes.
        let filler = is_placeholder(secret.strip_prefix(b"AA").unwrap_or(secret));
        if shaped
            && !filler
            && !token_continues_at(self.text, end)
            && !crate::rules::documented_example(&bytes[i..end])
        {
            self.push(SecretKind::Vendor("telegram_token"), i, end);
        }
    }

    /// Discord bot token: the base64 bot id (`M`/`N`/`O` + 23–25), `.`, 6, `.`, 27–38 base64url.
    pub(crate) fn discord_at(&mut self, i: usize) {
        let bytes = self.bytes;
        let id = run_end_max(bytes, i, 26, b64url);
        if !(24..=26).contains(&(id - i)) || bytes.get(id) != Some(&b'.') {
            return;
        }
        let stamp = run_end_max(bytes, id + 1, 7, b64url);
        if stamp - id - 1 != 6 || bytes.get(stamp) != Some(&b'.') {
            return;
        }
        let end = run_end_max(bytes, stamp + 1, 39, b64url);
        let token = &bytes[i..end];
        if (27..=38).contains(&(end - stamp - 1))
            && !token_continues_at(self.text, end)
            && mixed_case(token)
            && has_digit(token)
        {
            self.push(SecretKind::Vendor("discord_token"), i, end);
        }
    }

    /// SQL `IDENTIFIED BY 'password'` (`ALTER USER`, `CREATE USER`, `GRANT`), also with
    /// `WITH <plugin>` between, and Oracle's unquoted identifier (below); `BY PASSWORD '*…'` is a
    /// hash, and the word `PASSWORD` no password.
    pub(crate) fn identified_by_at(&mut self, i: usize) {
        let bytes = self.bytes;
        let Some(e) = eat_ci(bytes, i, b"identified ") else {
            return;
        };
        let mut pos = skip_blank(bytes, e);
        if let Some(w) = eat_ci(bytes, pos, b"with ") {
            let plugin = skip_blank(bytes, w);
            pos = skip_blank(
                bytes,
                run_end_max(bytes, plugin, 64, |b| b.is_ascii_alphanumeric() || b == b'_'),
            );
        }
        let Some(e) = eat_ci(bytes, pos, b"by ") else {
            return;
        };
        let Some(value) = Value::parse(bytes, skip_blank(bytes, e), Stop::Code) else {
            return;
        };
        if value.quoted {
            if value_is_secret(bytes, &value, b"password", Strength::Strong, Mode::Literal) {
                self.push(SecretKind::Assignment, value.start, value.whole_end(bytes));
            }
            return;
        }
        // Oracle's password is an identifier, unquoted (`CREATE USER app IDENTIFIED BY Xq9…;`),
        // also inside a host language's string (`exec("… BY Xq9…");`): a random-looking one
        // after a statement about a user or role counts, not a sentence's word (`users
        // identified by email`).
        let v = value.text(bytes);
        let end = value.start
            + v.iter()
                .position(|&b| matches!(b, b';' | b'"' | b'\'' | b'`' | b')'))
                .unwrap_or(v.len());
        let password = Value {
            end,
            raw_end: end,
            span_end: end,
            ..value
        };
        // The statement may open on the line before (`CREATE USER app` / `  IDENTIFIED BY …`).
        let mut before = line_before(bytes, i);
        if trim_ascii(before).is_empty() && i > before.len() {
            before = line_before(bytes, i - before.len() - 1);
        }
        // A statement that makes a user or role (`CREATE USER`, `ALTER ROLE`, Oracle's old
        // `GRANT … TO app IDENTIFIED BY …`), not a sentence (`each user is identified by …`).
        let statement = [&b"create "[..], b"alter "]
            .iter()
            .any(|w| contains_ci(before, w))
            && (contains_ci(before, b"user ") || contains_ci(before, b"role "))
            || contains_ci(before, b"grant ") && contains_ci(before, b" to ");
        if statement && value_is_secret(bytes, &password, b"password", Strength::Strong, Mode::Prose) {
            self.push(SecretKind::Assignment, password.start, end);
        }
    }

    /// SQL `INSERT INTO t (name, password) VALUES ('bob', '…'), …`: the value in the position of
    /// a secret column, in every row.
    pub(crate) fn insert_at(&mut self, i: usize) {
        let bytes = self.bytes;
        let space = |p: usize| run_end_max(bytes, p, 64, |b| b.is_ascii_whitespace());
        if i < self.insert_end {
            return;
        }
        let Some(p) = eat_ci(bytes, i, b"insert").and_then(|p| eat_ci(bytes, space(p), b"into")) else {
            return;
        };
        let name = space(p);
        let open = space(run_end_max(bytes, name, 128, |b| {
            is_key_byte(b) || matches!(b, b'"' | b'`' | b'[' | b']')
        }));
        if open == name || bytes.get(open) != Some(&b'(') {
            return;
        }
        let Some(close) = bytes[open..bytes.len().min(open + 512)]
            .iter()
            .position(|&b| b == b')')
        else {
            return;
        };
        let close = open + close;
        let Some(table) = table_header(bytes, open + 1, close, b',') else {
            return;
        };
        let Some(mut p) = eat_ci(bytes, space(close + 1), b"values") else {
            return;
        };
        for _ in 0..64 {
            p = space(p);
            if bytes.get(p) != Some(&b'(') {
                break;
            }
            let Some(close) = top_level(bytes, p + 1, b")", 2 * MAX_VALUE) else {
                break;
            };
            self.table_row(p + 1, close, table);
            p = space(close + 1);
            self.insert_end = p;
            if bytes.get(p) != Some(&b',') {
                break;
            }
            p += 1;
        }
    }

    /// The header of a CSV, TSV or markdown table on the line of the secret word at `i`
    /// (`user,password`, `| user | password |`): the rows below are read at their line starts.
    pub(crate) fn table_header_at(&mut self, i: usize) {
        let bytes = self.bytes;
        let start = i - self.line_before_at(i).len();
        let stop = bytes.len().min(i + 512);
        let end = self.line_end_at(i, stop);
        // No header is longer than 512 bytes.
        if start > 0 && bytes[start - 1] != b'\n' || end == stop && stop < bytes.len() {
            return;
        }
        if start == self.header_tried {
            return;
        }
        self.header_tried = start;
        self.table_read += end - start;
        let start = skip_blank(bytes, start);
        let delim = match bytes[start] {
            b'|' => b'|',
            _ if bytes[start..end].contains(&b'\t') => b'\t',
            _ => b',',
        };
        if let Some(table) = table_header(bytes, start, end, delim) {
            self.table = Some(table);
        }
    }

    /// A markdown table of names and values: the key `[i, kend)` is the whole first cell of a row
    /// (`| DB_PASSWORD | … |`, `` | `api_key` | … | ``), and the cell after it is judged as its
    /// value, as a header's column would be (as code, so a plain word is a name, not a literal). A
    /// header row (the next line is the `|---|` rule) names columns, not values.
    pub(crate) fn key_cell_at(&mut self, i: usize, kend: usize, key: &[u8], strength: Strength) {
        let bytes = self.bytes;
        let line = self.line_before_at(i);
        let open = line.iter().position(|&b| !matches!(b, b' ' | b'\t'));
        let Some(open) = open.filter(|&o| line[o] == b'|') else {
            return;
        };
        let before = &line[open + 1..];
        let mark = |b: u8| matches!(b, b'`' | b'*' | b'"' | b'\'');
        if !before.iter().all(|&b| b == b' ' || mark(b)) {
            return;
        }
        let mut k = kend;
        while k < bytes.len() && (bytes[k] == b' ' || mark(bytes[k])) {
            k += 1;
        }
        if bytes.get(k) != Some(&b'|') {
            return;
        }
        let s = k + 1;
        let Some(end) = line_end_max(bytes, s, MAX_SPAN) else {
            return;
        };
        let mut cell = (s, s);
        for_each_cell(bytes, s, end, b'|', |n, cs, ce| {
            if n == 0 {
                cell = (cs, ce);
            }
        });
        let next = bytes.get(end + 1..).unwrap_or_default();
        let next = &next[..find_byte(b'\n', next).unwrap_or(next.len())];
        let rule = next.contains(&b'-')
            && next
                .iter()
                .all(|&b| matches!(b, b'|' | b'-' | b':' | b' ' | b'\t' | b'\r'));
        if rule {
            return;
        }
        let mut value = Value::cell(bytes, cell.0, cell.1);
        let whole = value.end;
        value.end = value.end.min(char_floor(bytes, value.start + MAX_VALUE));
        value.raw_end = value.end;
        let v = value.text(bytes);
        let spaced = v.iter().any(u8::is_ascii_whitespace);
        if v.is_empty() || !value.quoted && spaced || wordy(v) {
            return;
        }
        value.quoted &= spaced;
        if value_is_secret(bytes, &value, key, strength, Mode::Code) {
            self.push(SecretKind::Assignment, value.start, whole);
        }
    }

    /// A row of `table` (as many cells as its header): each cell under a secret column is judged
    /// as a value of that column's key. Returns whether the row has the header's shape.
    pub(crate) fn table_row(&mut self, start: usize, end: usize, table: Table) -> bool {
        let bytes = self.bytes;
        self.table_read += end.saturating_sub(start);
        if for_each_cell(bytes, start, end, table.delim, |_, _, _| {}) != table.cells {
            return false;
        }
        for_each_cell(bytes, start, end, table.delim, |k, s, e| {
            if k >= 64 || table.secret & (1 << k) == 0 {
                return;
            }
            let (h, he) = table.names[k];
            let key = &bytes[h..he];
            let mut value = Value::cell(bytes, s, e);
            // Judged on its head like any value, redacted whole.
            let whole = value.end;
            value.end = value.end.min(char_floor(bytes, value.start + MAX_VALUE));
            value.raw_end = value.end;
            let v = value.text(bytes);
            let spaced = v.iter().any(u8::is_ascii_whitespace);
            // An unquoted cell with words in it is a note (`see vault`), not a value. Quotes are
            // the CSV's or SQL's, not the writer's: a cell is judged as code, not as a literal.
            if !value.quoted && spaced || wordy(v) {
                return;
            }
            value.quoted &= spaced;
            let strength = if table.weak & (1 << k) != 0 {
                Strength::Weak
            } else {
                Strength::Strong
            };
            if value_is_secret(bytes, &value, key, strength, Mode::Code) {
                self.push(SecretKind::Assignment, value.start, whole);
            }
        });
        true
    }

    /// Commands that take a password as an argument: `htpasswd -b file user PASS` (`-nb user
    /// PASS`, and `mosquitto_passwd -b file user PASS` alike), `wpa_passphrase SSID PASS`,
    /// `net user NAME PASS`, `net use [Z:] \\srv\share PASS`, `rabbitmqctl add_user NAME PASS`
    /// (`change_password`), `db2 connect to DB user NAME using PASS`, Oracle's
    /// `sqlplus user/PASS@db` (`expdp`, `impdp`, `sqlldr`); and `chpasswd`, whose input is
    /// `user:PASS` lines (echoed into it on its line, or a here-document below it).
    pub(crate) fn command_at(&mut self, i: usize) {
        let bytes = self.bytes;
        // Each command's first three letters rule out most words.
        if !bytes.get(i..i + 3).is_some_and(|head| {
            [b"htp", b"wpa", b"net", b"chp", b"vau"]
                .iter()
                .any(|c| head.eq_ignore_ascii_case(*c))
        }) && !crate::words::more_commands_at(bytes, i)
        {
            return;
        }
        let word_end = run_end_max(bytes, i, 16, |b| b.is_ascii_alphanumeric() || b == b'_');
        let (mut pos, mut wanted) = match lower(&bytes[i..word_end], &mut [0; 16]) {
            b"htpasswd" | b"mosquitto_passwd" => (word_end, 0),
            b"rabbitmqctl" => {
                let p = skip_blank(bytes, word_end);
                let e = run_end_max(bytes, p, 16, |b| b.is_ascii_lowercase() || b == b'_');
                match &bytes[p..e] {
                    b"add_user" | b"change_password" if matches!(bytes.get(e), Some(b' ' | b'\t')) => (e, 2),
                    _ => return,
                }
            }
            // `openssl passwd [-6] [-salt S] PASS` hashes the password it is given.
            b"openssl" => {
                let p = skip_blank(bytes, word_end);
                match bytes.get(p..p + 7) {
                    Some(b"passwd ") => (p + 6, 1),
                    _ => return,
                }
            }
            // `db2 … using PASS`, `wpa_cli … set_network 0 psk '"PASS"'`: `wanted` is set at
            // the word before the password.
            b"db2" | b"wpa_cli" => (word_end, 9),
            b"sqlplus" | b"expdp" | b"impdp" | b"sqlldr" => return self.connect_string_at(word_end),
            b"wpa_passphrase" => (word_end, 2),
            // `net use` takes the password after the share: `wanted` is set there.
            b"net" => {
                let p = skip_blank(bytes, word_end);
                let e = run_end_max(bytes, p, 5, |b| b.is_ascii_alphabetic());
                if !matches!(bytes.get(e), Some(b' ' | b'\t')) {
                    return;
                }
                match lower(&bytes[p..e], &mut [0; 16]) {
                    b"user" => (e, 2),
                    b"use" => (e, 9),
                    _ => return,
                }
            }
            b"chpasswd" => return self.chpasswd_at(i),
            // `vault operator unseal KEY` (`vault unseal KEY` before Vault 0.10): a key share
            // of the master key.
            b"vault" => {
                let mut p = word_end;
                loop {
                    let s = skip_blank(bytes, p);
                    let e = run_end_max(bytes, s, 9, |b| b.is_ascii_lowercase());
                    match &bytes[s..e] {
                        b"operator" if p == word_end => p = e,
                        b"unseal" if matches!(bytes.get(e), Some(b' ' | b'\t')) => break (e, 1),
                        _ => return,
                    }
                }
            }
            _ => return,
        };
        // htpasswd takes the password only in batch mode, third after a file or second with
        // `-n`; `-C`/`-r` take a number. `net user NAME /add` has options, no password; `net use`
        // options (`/user:NAME`, `/persistent:no`) go before or after it.
        let htpasswd = wanted == 0;
        // (openssl's options: `-1`, `-6`, `-apr1`, `-salt S`; `-stdin` and `-in FILE` read it.)
        let vault = matches!(bytes[i] | 0x20, b'v' | b'o');
        let net = bytes[i] | 0x20 == b'n';
        let net_use = wanted == 9 && net;
        let before: &[u8] = match bytes[i] | 0x20 {
            b'd' => b"using",
            _ => b"psk",
        };
        let keyed = wanted == 9 && !net;
        let mut option_value = false;
        for _ in 0..8 {
            let Some((arg, next)) = next_arg(bytes, pos) else {
                return;
            };
            pos = next;
            let a = arg.text(bytes);
            if option_value {
                option_value = false;
            } else if htpasswd && !arg.quoted && a.starts_with(b"-") {
                if a.contains(&b'b') {
                    wanted = if a.contains(&b'n') { 2 } else { 3 };
                }
                option_value = matches!(a.last(), Some(b'C' | b'r'));
            } else if vault && !arg.quoted && a.starts_with(b"-") {
                // `-migrate`, `-reset`, `-address=…`: options, not the key.
                if a == b"-stdin" || a == b"-in" {
                    return;
                }
                option_value = a == b"-salt";
            } else if net && !arg.quoted && a.starts_with(b"/") {
                if !net_use {
                    return;
                }
            } else if net_use && a.starts_with(b"\\\\") || keyed && a.eq_ignore_ascii_case(before) {
                // The share's path, or the word before the password.
                wanted = 1;
            } else if keyed && wanted > 1 {
                // The database, the user, the network and the words before the password's.
            } else if wanted > 1 {
                wanted -= 1;
            } else {
                // In a sentence, a plain word is prose; a quoted or code-like one still counts.
                // A command line starts where commands start and ends after its arguments
                // (`htpasswd -b is insecure because the …` goes on as a sentence).
                let mode = if arg.quoted || command_position(bytes, i) && args_end(bytes, pos) {
                    Mode::Literal
                } else {
                    Mode::Code
                };
                // wpa_supplicant wants a passphrase in double quotes inside the shell's quotes;
                // a command substituted (`$(openssl passwd -6 PASS)`) ends at its `)`.
                let arg = if arg.quoted && a.len() > 2 && a[0] == b'"' && a[a.len() - 1] == b'"' {
                    Value::enclosed(arg.start + 1, arg.end - 1, b'"', Stop::Blank)
                } else if !arg.quoted
                    && bytes[..i].ends_with(b"$(")
                    && arg.whole_end(bytes) > arg.start + 1
                    && bytes[arg.whole_end(bytes) - 1] == b')'
                {
                    Value::enclosed(arg.start, arg.whole_end(bytes) - 1, 0, Stop::Blank)
                } else {
                    arg
                };
                if wanted == 1 && value_is_secret(bytes, &arg, b"password", Strength::Strong, mode) {
                    self.push(SecretKind::CommandLine, arg.start, arg.whole_end(bytes));
                }
                return;
            }
        }
    }

    /// Oracle's logon `user/PASS@connect` (or `user/PASS`), the first argument after the
    /// options of the command ending at `pos` (`sqlplus -s scott/…@orcl`); `/ as sysdba` and
    /// `user@db` (it prompts) hold none.
    fn connect_string_at(&mut self, pos: usize) {
        let bytes = self.bytes;
        let Some((arg, next)) =
            std::iter::successors(next_arg(bytes, pos), |&(_, next)| next_arg(bytes, next))
                .take(4)
                .find(|(arg, _)| !arg.text(bytes).starts_with(b"-"))
        else {
            return;
        };
        let a = arg.text(bytes);
        let Some(slash) = a.iter().position(|&b| b == b'/') else {
            return;
        };
        let user = &a[..slash];
        let end = a[slash..]
            .iter()
            .position(|&b| b == b'@')
            .map_or(a.len(), |k| slash + k);
        if user.is_empty()
            || !user.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
            || end <= slash + 1
        {
            return;
        }
        // Without `@connect`, a logon is the argument of a command as typed (at the line's start,
        // after a prompt or `&&`), ending its arguments or before `@script`; a sentence's
        // `input/output` or `scripts/setup.sql` (a file's extension) is none.
        if end == a.len() {
            let command = pos - run_back(&bytes[..pos], |b| b.is_ascii_alphanumeric());
            let then = skip_blank(bytes, next);
            let file = a[slash..].iter().rposition(|&b| b == b'.').is_some_and(|d| {
                (2..=4).contains(&(a.len() - slash - d))
                    && a[slash + d + 1..].iter().all(u8::is_ascii_lowercase)
            });
            if file
                || !command_position(bytes, command)
                || !(args_end(bytes, next)
                    || bytes.get(then) == Some(&b'@')
                    || next_arg(bytes, next).is_some_and(|(o, _)| o.text(bytes).contains(&b'=')))
            {
                return;
            }
        }
        let value = Value::enclosed(arg.start + slash + 1, arg.start + end, 0, Stop::Blank);
        let mode = if command_position(bytes, arg.start) || args_end(bytes, next) {
            Mode::Literal
        } else {
            Mode::Code
        };
        if !is_reference(value.text(bytes))
            && value_is_secret(bytes, &value, b"password", Strength::Strong, mode)
        {
            self.push(SecretKind::CommandLine, value.start, value.end);
        }
    }

    /// `user:password` pairs fed to `chpasswd`: on its line (`echo 'bob:…' | chpasswd`,
    /// `chpasswd <<< 'bob:…'`) and, after `<<`, on the lines below it.
    pub(crate) fn chpasswd_at(&mut self, i: usize) {
        let bytes = self.bytes;
        // Its line, 128 bytes either side at most.
        let stop = bytes.len().min(i + 128);
        let end = bytes[i..stop]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(stop, |p| i + p);
        let mut k = i - line_before(bytes, i).len().min(128);
        while k < end {
            let token = char_floor(
                bytes,
                run_end_max(bytes, k, MAX_VALUE, |b| {
                    !b.is_ascii_whitespace() && !matches!(b, b'\'' | b'"' | b'|' | b';' | b'<' | b'>')
                }),
            );
            self.chpasswd_pair(k, token);
            k = token + 1;
        }
        if end == stop || !bytes[i..end].windows(2).any(|w| w == b"<<") {
            return;
        }
        let mut line = end + 1;
        for _ in 0..64 {
            let s = skip_blank(bytes, line);
            let Some(e) = line_end_max(bytes, s, MAX_SPAN) else {
                return;
            };
            if s >= bytes.len()
                || !self.chpasswd_pair(
                    s,
                    trim_end_of(&bytes[s..e], |b| b.is_ascii_whitespace()).len() + s,
                )
            {
                return;
            }
            line = e + 1;
        }
    }

    /// One `user:password` of `chpasswd`'s input at `[s, e)`; whether it has that shape.
    pub(crate) fn chpasswd_pair(&mut self, s: usize, e: usize) -> bool {
        let bytes = self.bytes;
        // Judged on its head like any value, redacted whole.
        let whole = e;
        let e = e.min(char_floor(bytes, s + MAX_VALUE));
        let user = run_end_max(bytes, s, e - s, |b| {
            b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-')
        });
        if user == s
            || user >= e
            || bytes[user] != b':'
            || !bytes[s].is_ascii_alphabetic() && bytes[s] != b'_'
        {
            return false;
        }
        if let Some(at) = user_password(&bytes[s..e], b':')
            && value_is_secret(
                bytes,
                &Value::cell(bytes, s + at, e),
                b"password",
                Strength::Strong,
                Mode::Literal,
            )
        {
            self.push(SecretKind::CommandLine, s + at, whole);
        }
        true
    }

    /// A literal a command reads its password from: `echo "…" | docker login --password-stdin`
    /// (`printf '%s' "…" |`, `<<< "…"` after the flag, `| sudo -S`), the flag at `i`. A reference
    /// (`echo "$TOKEN"`) or a file (`cat token.txt |`) holds no password.
    pub(crate) fn stdin_password_at(&mut self, i: usize, kend: usize) {
        let bytes = self.bytes;
        let after = skip_blank(bytes, kend);
        let value = if bytes[after..].starts_with(b"<<<") {
            next_arg(bytes, after + 3).map(|(v, _)| v)
        } else {
            let line = line_before(bytes, i);
            let start = i - line.len();
            // The command before the last pipe (not `||`) on the line.
            let Some(pipe) = line
                .iter()
                .rposition(|&b| b == b'|')
                .filter(|&p| p > 0 && line[p - 1] != b'|' && line.get(p + 1) != Some(&b'|'))
            else {
                return;
            };
            let head = line[..pipe]
                .iter()
                .rposition(|&b| matches!(b, b';' | b'&' | b'|' | b'(' | b'$'))
                .map_or(0, |p| p + 1);
            let mut pos = skip_blank(bytes, start + head);
            let printf = if let Some(e) = eat_ci(bytes, pos, b"printf ") {
                pos = e;
                true
            } else if let Some(e) = eat_ci(bytes, pos, b"echo ") {
                pos = e;
                false
            } else {
                return;
            };
            let mut found = None;
            for _ in 0..4 {
                let Some((arg, next)) = next_arg(bytes, pos) else {
                    break;
                };
                pos = next;
                let a = arg.text(bytes);
                // `echo -n`, `printf '%s\n'`: an option or the format, then the literal.
                if !arg.quoted && a.starts_with(b"-") || printf && a.contains(&b'%') {
                    continue;
                }
                found = Some(arg);
                break;
            }
            if skip_blank(bytes, pos) != start + pipe {
                return;
            }
            found
        };
        if let Some(value) = value
            && value_is_secret(bytes, &value, b"password", Strength::Strong, Mode::Literal)
        {
            self.push(SecretKind::CommandLine, value.start, value.whole_end(bytes));
        }
    }

    /// PowerShell's `ConvertTo-SecureString "…" -AsPlainText` (at `i`): the literal made into a
    /// credential (positional or after `-String`, with or without the switch); a variable
    /// (`$plain`, `$env:X`) or, without the switch, an encrypted standard string (hex) is none.
    pub(crate) fn secure_string_at(&mut self, i: usize) {
        let bytes = self.bytes;
        let mut pos = i + b"convertto-securestring".len();
        // The switch stands within the command's next 512 bytes: a window, not the rest of the
        // line, so a line repeating the cmdlet is not read once per occurrence.
        let end = line_end_max(bytes, i, 512).unwrap_or(bytes.len().min(i + 512));
        // Without the switch the literal should be an encrypted standard string (DPAPI's hex
        // blob, readable only by its user on its machine): that is no password, but a password
        // typed there is one.
        let plain = contains_ci(&bytes[i..end], b"-asplaintext");
        for _ in 0..6 {
            let Some((arg, next)) = next_arg(bytes, pos) else {
                return;
            };
            pos = next;
            let a = arg.text(bytes);
            // `-String`, `-AsPlainText`, `-Force`: switches, or the name of the literal that
            // follows.
            if !arg.quoted && a.starts_with(b"-") {
                continue;
            }
            // `(Get-Content …)`: an expression, read from elsewhere.
            if !arg.quoted && a.contains(&b'(') {
                return;
            }
            // (DPAPI's blob is hex; one encrypted with `-Key` opens with PowerShell's fixed
            // header, then base64.)
            if !plain
                && a.len() >= 32
                && (a.iter().all(u8::is_ascii_hexdigit) || a.starts_with(b"76492d1116743f0423413b16050a5345"))
            {
                return;
            }
            if value_is_secret(bytes, &arg, b"password", Strength::Strong, Mode::Literal) {
                self.push(SecretKind::CommandLine, arg.start, arg.whole_end(bytes));
            }
            return;
        }
    }

    /// `Bearer <token>` and `Basic <base64 of user:password>` anywhere.
    pub(crate) fn auth_scheme_at(&mut self, i: usize) {
        let bytes = self.bytes;
        let (scheme_end, basic) = if let Some(e) = eat_ci(bytes, i, b"bearer") {
            (e, false)
        } else if let Some(e) = eat_ci(bytes, i, b"basic") {
            (e, true)
        } else {
            return;
        };
        // `Bearer: <token>`: a colon typed after the scheme, as in a header's own line.
        let scheme_end = scheme_end + usize::from(!basic && bytes.get(scheme_end) == Some(&b':'));
        let start = skip_blank(bytes, scheme_end);
        if start == scheme_end || start >= bytes.len() {
            return;
        }
        let class =
            |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'+' | b'/' | b'=' | b'-');
        // Judged on its head; a token cut there runs on to its real end once it is a secret.
        let end = run_end_max(bytes, start, MAX_VALUE, class);
        if basic && bytes.get(end) == Some(&b':') {
            self.plain_basic_at(start, end, basic_header_context(bytes, i));
            return;
        }
        let cut = end - start == MAX_VALUE;
        if end - start < 8 || !cut && word_at(self.text, end) {
            return;
        }
        let token = &bytes[start..end];
        let secret = if basic {
            base64_has_colon(token) && !basic_filler(token)
        } else {
            !is_placeholder(token)
                && !constant_like(token)
                && !next_field_pair(token)
                && (token.iter().any(u8::is_ascii_digit) || (token.len() >= 20 && mixed_case(token)))
        };
        if secret {
            let end = if cut {
                run_end_max(bytes, end, MAX_SPAN - MAX_VALUE, class)
            } else {
                end
            };
            self.push(SecretKind::AuthHeader, start, end);
        }
    }

    /// `Basic user:password` typed plain where its base64 goes (a header set by a call's
    /// arguments, a template literal): the pair judged as a URL's userinfo is, so a stand-in, a
    /// template or the user again is none.
    #[inline(never)]
    fn plain_basic_at(&mut self, start: usize, colon: usize, header: bool) {
        let bytes = self.bytes;
        let user = &bytes[start..colon];
        let end = run_end_max(bytes, colon + 1, MAX_VALUE, |b| {
            b.is_ascii_graphic()
                && !matches!(
                    b,
                    b'"' | b'\'' | b'`' | b'<' | b'>' | b'(' | b')' | b',' | b';' | b':'
                )
        });
        let pair = &bytes[start..end];
        if !user.is_empty()
            && user
                .iter()
                .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'@'))
            && bytes.get(end) != Some(&b':')
            && !word_at(self.text, end)
            && user_password(pair, b':').is_some()
            && !crate::judge::filler_password(&pair[user.len() + 1..])
            // Out of a header's context (`login with Basic deploy:…`), only a password as
            // people make strong ones: a `name:tag` pair (`nginx:1.25-alpine`, `Form1:Load`) is
            // never symbol, digit and both cases at once.
            && (header || strong_password(&pair[user.len() + 1..]))
        {
            self.push(SecretKind::AuthHeader, start, end);
        }
    }

    /// `eyJ…` header (≥ 10) `.` `eyJ…` payload (≥ 10) `.` signature (≥ 8), base64url.
    pub(crate) fn jwt_at(&mut self, i: usize) -> Option<usize> {
        let bytes = self.bytes;
        let json_segment = |scan: &mut Self, start: usize| {
            if !bytes[start..].starts_with(b"eyJ") {
                return None;
            }
            let end = scan.b64url_end(start);
            (end - start >= 10 && bytes.get(end) == Some(&b'.')).then_some(end + 1)
        };
        let payload = json_segment(self, i)?;
        if !jwt_header(&bytes[i..payload - 1]) {
            return None;
        }
        // An unsecured or unsigned token (`alg: none`, the signature cut off) still carries its
        // claims: a header and a payload that both decode to JSON objects.
        if bytes[payload..].starts_with(b"eyJ") {
            let end = self.b64url_end(payload);
            if bytes.get(end) != Some(&b'.')
                && end - payload >= 16
                && !token_continues_at(self.text, end)
                && b64url_json(&bytes[payload..end], b"\":")
            {
                return Some(end);
            }
        }
        if !bytes[payload..].starts_with(b"eyJ") {
            return self.jwe_after(payload);
        }
        let signature = json_segment(self, payload)?;
        let end = self.b64url_end(signature);
        (end - signature >= 8
            && !token_continues_at(self.text, end)
            && !crate::judge::typed_signature(&bytes[signature..end]))
        .then_some(end)
    }

    /// The rest of a JWE after its header (RFC 7516's compact form: encrypted key, IV,
    /// ciphertext and tag, base64url, the key empty under direct encryption): an encrypted
    /// token is as good as a signed one to whoever holds it.
    pub(crate) fn jwe_after(&mut self, from: usize) -> Option<usize> {
        let bytes = self.bytes;
        let mut k = from;
        for segment in 0..4 {
            let end = self.b64url_end(k);
            if segment > 0 && end - k < 8 {
                return None;
            }
            if segment == 3 {
                return (!token_continues_at(self.text, end) && bytes.get(end) != Some(&b'.')).then_some(end);
            }
            if bytes.get(end) != Some(&b'.') {
                return None;
            }
            k = end + 1;
        }
        None
    }

    /// The end of the base64url run from `start` (at most [`MAX_SEGMENT`] long). The last run
    /// that ended by itself is remembered: any start inside it has the same end, so a prompt of
    /// `eyJ` repeated inside one run reads the run once.
    pub(crate) fn b64url_end(&mut self, start: usize) -> usize {
        let (from, to) = self.b64url_run;
        if from <= start && start < to {
            return to;
        }
        let end = run_end_max(self.bytes, start, MAX_SEGMENT, b64url);
        if end - start < MAX_SEGMENT {
            self.b64url_run = (start, end);
        }
        end
    }

    // --- keys --------------------------------------------------------------------------------

    /// A key's start `i`, read as [`Scan::key_at`] reads it but passing over what that would do
    /// nothing with (see [`crate::prefilter::inert_key`]; most words of prose and code hold
    /// nothing a key rule reads): the end of the word of letters and digits it measured (`0`:
    /// none). A key that may hold a provider's keyword is passed over when, as the key rule
    /// tests, no provider's value may follow it and it stands where no pair's name does.
    #[inline(always)]
    pub(crate) fn key_start(&mut self, i: usize) -> usize {
        let bytes = self.bytes;
        // A word the key rules pass over may still name a credential for the same-line pass.
        if may_be_other_name(&bytes[i..]) && other_name(&bytes[i..run_end_max(bytes, i, 12, is_key_byte)]) {
            self.name_words.push(i);
        }
        match crate::prefilter::inert_key(bytes, i, crate::judge::spent) {
            KeyStart::Inert(end) => return end,
            KeyStart::Keyword { plain, kend }
                if !name_like_at(bytes, kend)
                    && !keyword_value_may_follow(bytes, credential_words_end(bytes, kend)) =>
            {
                return plain;
            }
            KeyStart::Call { plain, kend } => {
                self.credential_pair_at(&bytes[i..kend], kend);
                return plain;
            }
            KeyStart::KeywordCall { plain, kend, inner } if self.keyword_call_only(i, kend, inner) => {
                return plain;
            }
            KeyStart::Keyword { .. } | KeyStart::KeywordCall { .. } | KeyStart::Read => {}
        }
        self.plain_key_end = 0;
        self.key_at(i);
        self.plain_key_end
    }

    /// A key `[i, kend)` before a call or a `=` that the filter let through for a provider's
    /// keyword ([`KeyStart::KeywordCall`]): when no provider's value is read after it (none may
    /// follow it, or a look at the words says it holds no keyword: `version = "…"`,
    /// `checksum = "…"`), the call's reading is all `key_at` would do, and it is done here.
    /// (Out of the scan's loop: a key read in full past the text's work withholds its line,
    /// and is left to `key_at`.)
    #[inline(never)]
    pub(crate) fn keyword_call_only(&mut self, i: usize, kend: usize, inner: bool) -> bool {
        let bytes = self.bytes;
        let none = !name_like_at(bytes, kend)
            && !keyword_value_may_follow(bytes, credential_words_end(bytes, kend))
            || !crate::prefilter::holds_keyword(&bytes[i..kend], inner);
        if !none || crate::judge::spent() {
            return false;
        }
        self.credential_pair_at(&bytes[i..kend], kend);
        true
    }

    /// A key run starting at `i`: if it holds a secret word, what follows decides.
    pub(crate) fn key_at(&mut self, i: usize) {
        // Past the work its text may take, a key's line is withheld unread (see
        // [`crate::judge::reset_judged`]).
        if crate::judge::spent() {
            let end = self.line_end_at(i, self.bytes.len());
            if end > i {
                self.push(SecretKind::Assignment, i, end);
            }
            return;
        }
        if self.password_word_at(i, i) {
            self.names_listed = false;
            return;
        }
        let bytes = self.bytes;
        // One pass over the key: its end, the separators and dashes it holds, and whether two
        // of its letters may start a secret word. Most keys hold none, and the rules that need
        // them are not tried (each would read the key again).
        // (`inner`: whether a segment starts past the key's first byte, see
        // [`crate::prefilter::may_hold_keyword`].)
        let (run, held, pair, inner) = crate::prefilter::measure_key(bytes, i);
        if held == KEY_BYTE {
            self.plain_key_end = run;
        } else if held & KEY_SEPARATOR != 0 && run - i >= 24 {
            self.separated_key = (i, run);
        }
        // Whether a secret word may start in the key, read once (its trailing dots and dashes
        // start none): a key without one names no secret, and its rules are not tried.
        let hold = pair != 0 && may_hold_secret_word(&bytes[i..run]);
        if hold && may_name_secret(&bytes[i..run.min(i + 12)]) {
            self.name_words.push(i);
        }
        // Trailing dots and dashes end a sentence or a flag, they are not part of the key.
        let mut kend = run;
        while held & KEY_SEPARATOR != 0 && kend > i && matches!(bytes[kend - 1], b'.' | b'-') {
            kend -= 1;
        }
        // No key is this long; not looking keeps a run of repeated key words linear.
        if kend - i < 2 || kend - i > 128 {
            return;
        }
        let key = &bytes[i..kend];
        if key[0] == b'-' {
            self.flag_at(i, kend);
            return;
        }
        if key == b"sig" {
            self.sas_signature_at(i, kend);
            return;
        }
        // A call (`login(`, `NetworkCredential(`) opens after blanks and an optional `=`.
        if matches!(bytes.get(skip_blank(bytes, kend)), Some(b'=' | b'(')) {
            self.credential_pair_at(key, kend);
        }
        // A key that calls itself public (`public key: MIIBIj…`, `publishable key pk_live_…`).
        if key.eq_ignore_ascii_case(b"key") && public_word_before(bytes, i) {
            return;
        }
        // `pdfshift ACCESS …`, `upcdatabase access key: …`: words that name the credential stand
        // between the provider's word and its value.
        // Most keys hold no provider's keyword, and no value is looked for after them.
        let keyword = crate::prefilter::may_hold_keyword(key, inner & crate::prefilter::INNER_SEGMENT != 0);
        let vend = if keyword {
            credential_words_end(bytes, kend)
        } else {
            kend
        };
        if keyword && keyword_value_may_follow(bytes, vend) {
            self.keyword_value_at(vend, key, None);
        }
        // `<property name="sonar.login" value="…"/>`, `- name: SONAR_LOGIN` then `value: …`: the
        // provider's value in the pair's value field.
        // (A name stands quoted, in its element or at its line's end, not in running code.)
        let name_like = keyword && name_like_at(bytes, kend);
        if keyword
            && name_like
            && let Some(NamedValue::Field(e)) = self.named_value_field(i, kend)
        {
            self.keyword_value_at(e, key, None);
        }
        if held & KEY_DASH != 0 {
            self.glued_keyword_value(i, kend, key);
        }
        let word = if !hold { None } else { secret_word(key) };
        let Some(word) = word else {
            if held & KEY_SEPARATOR == 0 {
                return;
            }
            // `DB_KENNWORT`, `db_contraseña`, `db_пароль`: the word of another language as a
            // segment.
            for (k, &b) in key.iter().enumerate() {
                let j = i + k + 1;
                if matches!(b, b'_' | b'-' | b'.') && j < bytes.len() && self.password_word_at(i, j) {
                    return;
                }
            }
            return;
        };
        if word.strength == Strength::Strong {
            self.id_password_pair_at(i, kend, key);
        }
        let mut strength = word.strength;
        // `api key`, `secret key`, `client secret` written with a space.
        if strength == Strength::Weak && key.eq_ignore_ascii_case(b"key") && strong_word_before(bytes, i) {
            strength = Strength::Strong;
        }
        // `.npmrc`'s `_auth` under a registry's scope (`//host/:_auth=…`) holds `user:password` in
        // base64, or a literal typed there: a password's slot, not a word about authentication.
        if strength == Strength::Weak
            && matches!(key, [b'_', rest @ ..] if rest.eq_ignore_ascii_case(b"auth"))
            && npm_scope(trim_ascii(self.line_before_at(i)))
        {
            strength = Strength::Strong;
        }
        // A file's name (`my-secret.yml:` in a log line, a Secret's `secrets.env:` entry): what
        // follows is the file's content or a message, a secret only when it looks generated.
        if file_name_key(key) {
            strength = Strength::Weak;
        }
        // A table's header may name a weak word's column too (its cells must look generated).
        self.table_header_at(i);
        self.key_cell_at(i, kend, key, strength);
        self.named_value_at(i, kend, key, strength);
        self.parameter_default_at(i, kend, key, strength);
        self.env_default_at(i, kend, key, strength);
        let header = key.len() > 2 && key[..2].eq_ignore_ascii_case(b"x-") || word.authorization;
        let kind = if header {
            SecretKind::AuthHeader
        } else {
            SecretKind::Assignment
        };
        self.assignment_after(i, kend, key, strength, kind, false);
        if contains_ci(key, b"cookie") {
            self.cookie_pairs_at(kend);
        }
        self.keyword_value_at(kend, key, Some(word.strength));
    }

    /// The cookies of a `Cookie:`/`Set-Cookie:` line after the key ending at `kend`: each
    /// `name=value` pair's value when it looks generated (a session id), not a plain setting
    /// (`lang=en-US`, `theme=dark`) nor an attribute (`Path=/`).
    pub(crate) fn cookie_pairs_at(&mut self, kend: usize) {
        let bytes = self.bytes;
        let mut p = kend;
        if matches!(bytes.get(p), Some(b'"' | b'\'')) {
            p += 1;
        }
        p = skip_blank(bytes, p);
        if !matches!(bytes.get(p), Some(b':' | b'=')) {
            return;
        }
        // A longer line is read up to its first 4 KB (never a window that ends before it starts).
        let end = line_end_max(bytes, p, 4096).unwrap_or(bytes.len().min(p + 4096));
        let open = skip_blank(bytes, p + 1);
        if bytes.get(open) == Some(&b'{') {
            return self.cookie_map_in(open + 1, end);
        }
        self.cookie_pairs_in(p + 1, end);
    }

    /// A map of cookies (`cookies={"session": "…", "lang": "en"}`, `"cookies": {…}`) between
    /// `from` and `end`: each quoted value that is a secret as a cookie's (see [`plain_cookie`]).
    pub(crate) fn cookie_map_in(&mut self, from: usize, end: usize) {
        let bytes = self.bytes;
        if from >= end {
            return;
        }
        let close = bytes[from..end]
            .iter()
            .position(|&b| b == b'}')
            .map_or(end, |c| from + c);
        let mut k = from;
        for _ in 0..32 {
            let Some(name) = Value::parse(bytes, skip_blank(bytes, k), Stop::Code).filter(|v| v.quoted)
            else {
                return;
            };
            let colon = skip_blank(bytes, name.end + 1);
            if bytes.get(colon) != Some(&b':') {
                return;
            }
            let Some(value) =
                Value::parse(bytes, skip_blank(bytes, colon + 1), Stop::Code).filter(|v| v.quoted)
            else {
                return;
            };
            if value.end >= close {
                return;
            }
            let v = value.text(bytes);
            if !plain_cookie_pair(name.text(bytes), v) && !is_placeholder(v) && !is_reference(v) {
                self.push(SecretKind::Assignment, value.start, value.end);
            }
            let Some(comma) = bytes[value.end + 1..close].iter().position(|&b| b == b',') else {
                return;
            };
            k = value.end + 2 + comma;
        }
    }

    /// Each `name=value` cookie between `from` and `end` whose value is a secret (see
    /// [`plain_cookie`]).
    pub(crate) fn cookie_pairs_in(&mut self, from: usize, end: usize) {
        let bytes = self.bytes;
        let mut k = from;
        while k < end {
            let s = skip_blank(bytes, k);
            // The quote that closes the argument may stand at `end`: never step past it.
            let s = (s + usize::from(matches!(bytes.get(s), Some(b'"' | b'\'')))).min(end);
            let e = bytes[s..end]
                .iter()
                .position(|&b| b == b';')
                .map_or(end, |q| s + q);
            k = e + 1;
            let pair = trim_ascii(&bytes[s..e]);
            let Some(eq) = pair.iter().position(|&b| b == b'=') else {
                continue;
            };
            let name = &pair[..eq];
            let value = trim_end_of(&pair[eq + 1..], |b| matches!(b, b'"' | b'\'' | b','));
            let value = value.strip_prefix(b"\"").unwrap_or(value);
            if name.is_empty()
                || !name
                    .iter()
                    .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
                || value.iter().any(u8::is_ascii_whitespace)
                || is_placeholder(value)
                || is_reference(value)
                || cookie_attributes(name, b"cookie")
                || plain_cookie(pair, b"cookie")
            {
                continue;
            }
            let start = value.as_ptr() as usize - bytes.as_ptr() as usize;
            self.push(SecretKind::Assignment, start, start + value.len());
        }
    }

    /// A key given as the value of a name field, its value in the value field after it: a
    /// Kubernetes or ECS `env` entry (`- name: DB_PASSWORD` / `value: …`), a CloudFormation
    /// parameter (`"ParameterKey": "ApiToken", "ParameterValue": "…"`), `Key: api_token, Value:
    /// …`. The name field's word ends in `name` or `key`; the value field's ends in `value`
    /// and stands within the next 256 bytes, before the entry closes.
    pub(crate) fn named_value_at(&mut self, i: usize, kend: usize, key: &[u8], strength: Strength) {
        let bytes = self.bytes;
        let e = match self.named_value_field(i, kend) {
            Some(NamedValue::Field(e)) => e,
            Some(NamedValue::Element(at)) => {
                return self.element_text(at, key, strength, SecretKind::Assignment);
            }
            None => return,
        };
        let mut v = e;
        if v < bytes.len() && matches!(bytes[v], b'"' | b'\'' | b'`') {
            v += 1;
        }
        v = skip_blank(bytes, v);
        if !matches!(bytes.get(v), Some(b':' | b'=')) {
            return;
        }
        let start = skip_blank(bytes, v + 1);
        let Some(value) = Value::parse(bytes, start, Stop::Code) else {
            return;
        };
        if value_is_secret(bytes, &value, key, strength, Mode::Code) {
            self.push(SecretKind::Assignment, value.start, value.whole_end(bytes));
        }
    }

    /// Where the `value` word of a name/value pair ends, when the key from `i` to `kend` is the
    /// pair's name (`- name: DB_PASSWORD` then `value: …`, `<property name="…" value="…"/>`,
    /// `{"key": "…", "value": "…"}`, or a declaration's `default`).
    pub(crate) fn named_value_field(&self, i: usize, kend: usize) -> Option<NamedValue> {
        let bytes = self.bytes;
        let quote = |b: u8| matches!(b, b'"' | b'\'' | b'`');
        // Back from the key: an opening quote, blanks, `:` or `=`, blanks, a closing quote.
        let mut p = i;
        if p > 0 && quote(bytes[p - 1]) {
            p -= 1;
        }
        while p > 0 && matches!(bytes[p - 1], b' ' | b'\t') {
            p -= 1;
        }
        // Most words stand after none of `:`, `=`, `>` or `variable`: one look says so.
        if p == 0 || !matches!(bytes[p - 1], b':' | b'=' | b'>' | b'e') {
            return None;
        }
        // A declaration's label (Terraform's `variable "db_password" {`): its value is its
        // `default`.
        let declared = bytes[..p].ends_with(b"variable") && (p == 8 || !is_key_byte(bytes[p - 9]));
        // An XML entry's name element (`<key>password</key>` / `<value>…</value>`).
        let xml = !declared && p == i && p > 0 && bytes[p - 1] == b'>' && bytes[kend..].starts_with(b"</");
        if !declared && !xml && (p == 0 || !matches!(bytes[p - 1], b':' | b'=')) {
            return None;
        }
        p -= usize::from(!declared);
        while p > 0 && matches!(bytes[p - 1], b' ' | b'\t') {
            p -= 1;
        }
        if p > 0 && quote(bytes[p - 1]) {
            p -= 1;
        }
        let field_start = p - bytes[p.saturating_sub(32)..p]
            .iter()
            .rev()
            .take_while(|&&b| b.is_ascii_alphanumeric() || b == b'_')
            .count();
        let field = &bytes[field_start..p];
        // A numbered pair (`name1` / `value1`) is a pair as `name` / `value` is.
        let ends_ci = |w: &[u8], tail: &[u8]| {
            let w = &w[..w.len() - w.iter().rev().take_while(|b| b.is_ascii_digit()).count()];
            w.len() >= tail.len() && w[w.len() - tail.len()..].eq_ignore_ascii_case(tail)
        };
        if !(declared || ends_ci(field, b"name") || ends_ci(field, b"key"))
            || xml && (field_start == 0 || bytes[field_start - 1] != b'<')
        {
            return None;
        }
        // Forward: the value field, before the entry closes (`}`, a blank line, another name).
        let stop = bytes.len().min(kend + 256);
        // Only a word ending in `value` makes a pair past a declaration or an element (forward,
        // words run up to 32 bytes past `stop`; back, [`Scan::value_before_name`] reads 256
        // bytes): most names have none around them (a lock file's `name = "…"`), and one search
        // says so where the walks read each byte.
        if !declared
            && !xml
            && !contains_ci(
                &bytes[field_start.saturating_sub(256)..bytes.len().min(stop + 32)],
                b"value",
            )
        {
            return None;
        }
        let mut k = kend;
        let mut depth = 0i32;
        // Brackets opened after the name (a log line's `app[4211]:` before each line) close
        // nothing of the entry's.
        let mut square = 0u32;
        while k < stop {
            let b = bytes[k];
            // A declaration's block closes where its braces balance (`{}` holds no default).
            depth += i32::from(b == b'{') - i32::from(b == b'}');
            if b == b'[' {
                square += 1;
            } else if b == b']' && square > 0 {
                square -= 1;
                k += 1;
                continue;
            }
            if (!declared || depth <= 0) && (b == b'}' || b == b']') || bytes[k..].starts_with(b"\n\n") {
                return self.value_before_name(field_start, declared || xml);
            }
            if b.is_ascii_alphabetic() && (k == 0 || !is_key_byte(bytes[k - 1])) {
                let e = run_end_max(bytes, k, 32, |c| c.is_ascii_alphanumeric() || c == b'_');
                let word = &bytes[k..e];
                // A closing tag (`</key>`) ends the name's element, not the entry.
                if xml && bytes[..k].ends_with(b"</") {
                    k = e;
                    continue;
                }
                // A property list's `<key>NAME</key>` then `<string>…</string>`.
                let plist = word == b"string" && ends_ci(field, b"key");
                if xml
                    && (ends_ci(word, b"value") || plist)
                    && bytes[..k].ends_with(b"<")
                    && bytes.get(e) == Some(&b'>')
                {
                    return Some(NamedValue::Element(e + 1));
                }
                if ends_ci(word, b"name") || ends_ci(word, b"key") {
                    return self.value_before_name(field_start, declared || xml);
                }
                if ends_ci(word, b"value") || declared && word == b"default" {
                    return Some(NamedValue::Field(e));
                }
                k = e;
                continue;
            }
            k += 1;
        }
        self.value_before_name(field_start, declared || xml)
    }

    /// The value field of a name/value pair written value first (`{"value": "…", "name":
    /// "DB_PASSWORD"}`, `- value: …` then `  name: DB_PASSWORD`), the name's field starting at
    /// `field_start`: back to where the entry opens (`{`, `[`, a YAML item's `- `), never past
    /// another entry's end, a blank line or another name.
    pub(crate) fn value_before_name(&self, field_start: usize, skip: bool) -> Option<NamedValue> {
        let bytes = self.bytes;
        // The entry is looked for no further back than `lo`, and so is its line's start (a long
        // line of names costs a bounded amount per name).
        let lo = field_start.saturating_sub(256);
        if skip {
            return None;
        }
        let line_start = rfind_byte(b'\n', &bytes[lo..field_start]).map_or(lo, |p| lo + p + 1);
        let item = |from: usize, to: usize| {
            let lead = bytes[from..to].trim_ascii_start();
            lead.starts_with(b"- ") || lead == b"-"
        };
        // The name opens its YAML item (`- name:`, after a log line's prefix too): what stands
        // before it is another item's.
        let lead = bytes[line_start..field_start].trim_ascii_end();
        let lead = lead.strip_suffix(b"\"").unwrap_or(lead).trim_ascii_end();
        let dash = lead
            .strip_suffix(b"-")
            .is_some_and(|l| l.last().is_none_or(u8::is_ascii_whitespace));
        if dash {
            return None;
        }
        let ends_ci = |w: &[u8], tail: &[u8]| {
            let w = &w[..w.len() - w.iter().rev().take_while(|b| b.is_ascii_digit()).count()];
            w.len() >= tail.len() && w[w.len() - tail.len()..].eq_ignore_ascii_case(tail)
        };
        // A field's word: followed by an optional quote, blanks and `:` or `=`.
        let field_at = |e: usize| {
            let mut v = e;
            if matches!(bytes.get(v), Some(b'"' | b'\'' | b'`')) {
                v += 1;
            }
            v = skip_blank(bytes, v);
            matches!(bytes.get(v), Some(b':' | b'='))
        };
        let mut k = field_start;
        let mut square = 0u32;
        let mut line_end = line_start;
        while k > lo {
            let b = bytes[k - 1];
            match b {
                b'{' | b'}' => return None,
                b']' => square += 1,
                b'[' if square > 0 => square -= 1,
                b'[' => return None,
                b'\n' => {
                    // A blank line ends the entry; a YAML item's first line is its start.
                    if k < line_end && item(k, line_end) || bytes[..k].ends_with(b"\n\n") {
                        return None;
                    }
                    line_end = k - 1;
                }
                _ => {}
            }
            if b.is_ascii_alphanumeric() && !bytes.get(k).copied().is_some_and(is_key_byte) {
                let ws = k - bytes[lo..k]
                    .iter()
                    .rev()
                    .take_while(|&&c| c.is_ascii_alphanumeric() || c == b'_')
                    .count();
                let word = &bytes[ws..k];
                if (ws == 0 || !is_key_byte(bytes[ws - 1])) && field_at(k) {
                    if ends_ci(word, b"value") {
                        return Some(NamedValue::Field(k));
                    }
                    if ends_ci(word, b"name") || ends_ci(word, b"key") {
                        return None;
                    }
                }
                k = ws;
                continue;
            }
            k -= 1;
        }
        None
    }

    /// A template parameter the key names, its value the `Default` of the block the key opens:
    /// a CloudFormation parameter (`DBPassword:` / `  Type: String` / `  Default: …`, or
    /// `"DBPassword": {"Type": "String", "Default": "…"}`), which is the secret wherever the
    /// stack is deployed without one. The block ends at a line no deeper than the key's, or
    /// where its braces close.
    pub(crate) fn parameter_default_at(&mut self, i: usize, kend: usize, key: &[u8], strength: Strength) {
        let bytes = self.bytes;
        let mut p = kend;
        if matches!(bytes.get(p), Some(b'"' | b'\'')) {
            p += 1;
        }
        if bytes.get(p) != Some(&b':') {
            return;
        }
        p = skip_blank(bytes, p + 1);
        let json = bytes.get(p) == Some(&b'{');
        if !json && !matches!(bytes.get(p), Some(b'\n' | b'\r')) {
            return;
        }
        let stop = bytes.len().min(kend + 512);
        // No `default` word starts before the block's reading stops: nothing to read.
        if self.default_from(p) >= stop {
            return;
        }
        let margin = |s: usize| run_end(bytes, s, |c| matches!(c, b' ' | b'\t')) - s;
        let indent = margin(self.line_start_at(i, 0));
        let mut depth = 0i32;
        let mut k = p;
        while k < stop {
            let b = bytes[k];
            if json {
                depth += i32::from(b == b'{') - i32::from(b == b'}');
                if depth <= 0 {
                    return;
                }
            } else if b == b'\n' {
                let deeper = margin(k + 1);
                if deeper <= indent && !matches!(bytes.get(k + 1 + deeper), Some(b'\n' | b'\r') | None) {
                    return;
                }
                k += 1 + deeper;
                continue;
            }
            if b.is_ascii_alphabetic() && !is_key_byte(bytes[k - 1]) {
                let e = run_end_max(bytes, k, 32, |c| c.is_ascii_alphanumeric() || c == b'_');
                if bytes[k..e].eq_ignore_ascii_case(b"default") {
                    let mut v = e;
                    if matches!(bytes.get(v), Some(b'"' | b'\'')) {
                        v += 1;
                    }
                    v = skip_blank(bytes, v);
                    if bytes.get(v) == Some(&b':') {
                        let start = skip_blank(bytes, v + 1);
                        if let Some(value) = Value::parse(bytes, start, Stop::Code)
                            && value_is_secret(bytes, &value, key, strength, Mode::Code)
                        {
                            self.push(SecretKind::Assignment, value.start, value.whole_end(bytes));
                        }
                        return;
                    }
                }
                k = e;
                continue;
            }
            k += 1;
        }
    }

    /// The literal default of an environment lookup whose variable (the key from `i` to `kend`)
    /// names a secret: it is the secret wherever the variable is unset, as if assigned to it.
    /// `os.environ.get('SECRET_KEY', '…')`, `getenv("API_KEY", default="…")`, Ruby's
    /// `ENV.fetch("…") { "…" }`, Java's `getOrDefault("…", "…")`, `process.env.TOKEN || "…"`,
    /// `?? '…'`, a lookup's fallback (`os.environ.get('TOKEN') or '…'`, `ENV['TOKEN'] || '…'`,
    /// `getenv('TOKEN') ?: '…'`), and the shell's `${DB_PASSWORD:-…}`. A stand-in default (`''`, `changeme`,
    /// `None`) is judged as a literal after `=` is, and is none.
    pub(crate) fn env_default_at(&mut self, i: usize, kend: usize, key: &[u8], strength: Strength) {
        const CALLS: [&[u8]; 7] = [
            b"getenv",
            b"environ.get",
            b"environ.setdefault",
            b"env.fetch",
            b"env.get",
            b"getordefault",
            b"env",
        ];
        let bytes = self.bytes;
        let mut before = &bytes[..i];
        let quote = before
            .last()
            .copied()
            .filter(|b| matches!(b, b'"' | b'\'' | b'`'));
        if let Some(q) = quote {
            if bytes.get(kend) != Some(&q) {
                return;
            }
            before = &before[..before.len() - 1];
        }
        let after = kend + usize::from(quote.is_some());
        let callee = |before: &[u8]| {
            let name = &before[before.len()
                - run_back(before, |b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_'))..];
            CALLS.iter().any(|c| {
                ends_with_ci(name, c)
                    && (name.len() == c.len() || !name[name.len() - c.len() - 1].is_ascii_alphanumeric())
            })
        };
        let shell = quote.is_none() && before.ends_with(b"${") && bytes[after..].starts_with(b":-");
        let start = if quote.is_some() && before.last() == Some(&b'(') && callee(&before[..before.len() - 1])
        {
            // A call: `,` and the default (`default=` by name), or `) { … }` (Ruby's block).
            let p = skip_blank(bytes, after);
            match bytes.get(p) {
                Some(b',') => {
                    let p = skip_blank(bytes, p + 1);
                    match eat_ci(bytes, p, b"default") {
                        Some(e) if bytes.get(skip_blank(bytes, e)) == Some(&b'=') => {
                            skip_blank(bytes, skip_blank(bytes, e) + 1)
                        }
                        Some(_) => return,
                        None => p,
                    }
                }
                Some(b')') => {
                    let b = skip_blank(bytes, p + 1);
                    if bytes.get(b) == Some(&b'{') {
                        skip_blank(bytes, b + 1)
                    } else if let Some(e) = fallback_after(bytes, b) {
                        e
                    } else {
                        return;
                    }
                }
                _ => return,
            }
        } else if quote.is_some()
            && [&b"env["[..], b"environ["]
                .iter()
                .any(|m| ends_with_ci(before, m))
            && bytes.get(after) == Some(&b']')
        {
            // A lookup by subscript, then its fallback: `ENV['TOKEN'] || '…'`.
            match fallback_after(bytes, skip_blank(bytes, after + 1)) {
                Some(e) => e,
                None => return,
            }
        } else if quote.is_none()
            && [&b"process.env."[..], b"import.meta.env."].iter().any(|m| {
                ends_with_ci(before, m) || key.len() > m.len() && key[..m.len()].eq_ignore_ascii_case(m)
            })
        {
            let p = skip_blank(bytes, after);
            if !(bytes[p..].starts_with(b"||") || bytes[p..].starts_with(b"??")) {
                return;
            }
            skip_blank(bytes, p + 2)
        } else if shell {
            after + 2
        } else {
            return;
        };
        // Only a literal is a default here; a shell default runs to its closing brace.
        let value = if shell {
            let end = run_end_max(bytes, start, 256, |b| b != b'}' && !b.is_ascii_whitespace());
            if end == start || bytes.get(end) != Some(&b'}') {
                return;
            }
            Value::parse(&bytes[..end], start, Stop::Blank)
        } else if matches!(bytes.get(start), Some(b'"' | b'\'' | b'`')) {
            Value::parse(bytes, start, Stop::Code)
        } else {
            None
        };
        if let Some(value) = value
            && value_is_secret(bytes, &value, key, strength, Mode::Literal)
        {
            self.push(SecretKind::Assignment, value.start, value.whole_end(bytes));
        }
    }

    /// A provider's word glued to its value by a dash (`abyssale-ffCQ…`): the value, when it has
    /// that provider's shape exactly and looks generated, as after any other separator. A hex
    /// suffix is a build's or a commit's (`agora-4f3c…`), not read here.
    pub(crate) fn glued_keyword_value(&mut self, i: usize, kend: usize, key: &[u8]) {
        let Some(mut d) = key.iter().position(|&b| b == b'-') else {
            return;
        };
        let word = &key[..d];
        // Words naming the credential may follow, glued by dashes too (`prospect-secret-…`,
        // `hellosign-PRIVATE-key-…`, `buttercmsPRIVATEkey-…`); then a hex value is the secret.
        let mut named = credential_word_tail(word);
        while let Some(e) = key[d + 1..].iter().position(|&b| b == b'-')
            && credential_word(&key[d + 1..d + 1 + e])
        {
            d += 1 + e;
            named = true;
        }
        let token = &key[d + 1..];
        // The provider's word with the credential words after it (`dd-apikey`): an abbreviation
        // names its provider only before them.
        let word = &key[..d];
        // (The provider's match, cheap where none is, comes before the judging.)
        if word.len() >= 2
            && token.len() >= 16
            && has_digit(token)
            && token.iter().any(u8::is_ascii_alphabetic)
            && (named || !token.iter().all(u8::is_ascii_hexdigit))
            && let Some(name) = crate::rules::keyword_match(word, token, keyword_may_start_at)
            && entropy(token) >= 3.0
            && !is_placeholder(token)
            && !token_continues_at(self.text, kend)
        {
            self.push(SecretKind::Vendor(name), i + d + 1, kend);
        }
    }

    /// A provider's word in a key that names no secret (`sourcegraph: …`, `TWITCH_CLIENT=…`,
    /// `set("algolia", "…")`, `<datadog>…</datadog>`, `facebook …`), then any assignment or
    /// argument syntax, then a random-looking value of that provider's shape (see the keyword
    /// rules in `rules/keyword.toml`). `word`: the strength of the secret word the key holds,
    /// when its generic value is read too (the caller found the word: it is not looked up again).
    pub(crate) fn keyword_value_at(&mut self, kend: usize, key: &[u8], word: Option<Strength>) {
        let bytes = self.bytes;
        let generic = word.is_some();
        let Some((op, mut p, has_operator)) = keyword_operand(bytes, kend, generic) else {
            return;
        };
        let quote = bytes.get(p).copied().filter(|b| matches!(b, b'"' | b'\'' | b'`'));
        if quote.is_some() {
            p += 1;
        }
        let token_end = run_end_max(bytes, p, 256, |b| KEYWORD_TOKEN[usize::from(b)]);
        let token = &bytes[p..token_end];
        // `Facebook = 518236470912358 | 7d2c…`: an app's numeric id, a separator, then its secret.
        if !generic && token.len() >= 6 && token.iter().all(u8::is_ascii_digit) {
            let sep = skip_blank(bytes, token_end);
            if matches!(bytes.get(sep), Some(b'|' | b'/' | b',' | b':')) {
                let q = skip_blank(bytes, sep + 1);
                let e = run_end_max(bytes, q, 256, |b| KEYWORD_TOKEN[usize::from(b)]);
                let t = &bytes[q..e];
                let closed = bytes
                    .get(e)
                    .is_none_or(|&b| b.is_ascii_whitespace() || b"\"'`;,<)]}|".contains(&b));
                if closed
                    && t.len() >= 16
                    && has_digit(t)
                    && t.iter().any(u8::is_ascii_alphabetic)
                    && let Some(name) = crate::rules::keyword_match(key, t, keyword_may_start_at)
                    && entropy(t) >= 3.0
                    && !is_placeholder(t)
                {
                    self.push(SecretKind::Vendor(name), q, e);
                    return;
                }
            }
        }
        // Too short for a provider's value, and a key with no secret word reads nothing more.
        if !generic && token.len() < 16 {
            return;
        }
        let token_closed = bytes
            .get(token_end)
            .is_none_or(|&b| b.is_ascii_whitespace() || b"\"'`;,<)]}|".contains(&b));
        // (A secret word's key reads no provider's value, and the provider's match, cheap where
        // none is, comes before the judging.)
        if !generic
            && token_closed
            && token.len() >= 16
            && has_digit(token)
            && token.iter().any(u8::is_ascii_alphabetic)
            && let Some(name) = crate::rules::keyword_match(key, token, keyword_may_start_at)
            && entropy(token) >= 3.0
            && !is_placeholder(token)
        {
            self.push(SecretKind::Vendor(name), p, token_end);
            return;
        }
        let Some(strength) = word else {
            return;
        };
        let operand = KeywordOperand {
            op,
            start: p,
            has_operator,
            quote,
        };
        self.generic_keyword_value(key, strength, &operand, token_end, token_closed);
    }

    /// A secret word's key followed by a generated value (`operand`), the value running to
    /// `token_end` when it is neither quoted nor a password with symbols.
    pub(crate) fn generic_keyword_value(
        &mut self,
        key: &[u8],
        strength: Strength,
        operand: &KeywordOperand,
        token_end: usize,
        token_closed: bool,
    ) {
        let bytes = self.bytes;
        let (op, p, has_operator, quote) = (operand.op, operand.start, operand.has_operator, operand.quote);
        // A name, a dash between blanks, then a UUID: a list's or a title's entry and its id
        // (`"Generic Password" - 487f4be7-…`, a rule catalogue), not a key and its value. A key
        // written as one (`HEROKU_API_KEY - <uuid>`, `my api key - <uuid>`) labels its value.
        // (The value's shape is looked at before the line it ends.)
        if bytes[op..p].trim_ascii() == b"-" && uuid(&bytes[p..token_end]) && entry_title_before(bytes, op) {
            return;
        }
        // A secret word's key with a generated value, whatever joins them (`access_token
        // <value>`, `set("api_key", "<value>")`, `<secret>…</secret>`, `if (pw == "<value>")`):
        // quoted, the value runs to its closing quote on the line and may hold any symbol.
        // An element's text (`<secret>…</secret>`) ends where a tag starts: the value never
        // runs into its closing tag.
        let element = bytes[op..p].trim_ascii() == b">";
        let quoted_end = quote.and_then(|q| {
            let line = run_end_max(bytes, p, 256, |b| b != q && b != b'\n' && !(element && b == b'<'));
            (bytes.get(line) == Some(&q)).then_some(line)
        });
        // Unquoted, a password with symbols runs to the next blank (structure trimmed off its
        // end); code (`getPassword(cfg)`, `a.b[c]`) is told by its shape and lower entropy.
        let unquoted = || {
            // An object or a list opens (`"auth":{"display_name":…`): structure, not a value.
            if matches!(bytes.get(p), Some(b'{' | b'[')) {
                return None;
            }
            // The value is cut from this window: with fewer than 16 distinct bytes in it (a tag or
            // a key repeated without a blank), it cannot reach the entropy asked of it below.
            // (Found with 16 or more, a value that is the whole window is not counted again.)
            let (raw, few) = crate::judge::few_distinct_window(bytes, p, 256, element);
            if few {
                return None;
            }
            let window_end = raw;
            // An element's closing tag (`…</Generic_Key>`) is markup, not the value's; so is
            // JSON's next member (`"secret":null,"data":…`).
            // (Each of these cuts looks at its byte's places alone: a window is read once.)
            let window = &bytes[p..raw];
            let mut cut = raw;
            crate::bytes::any_of_two(b'<', b',', window, |k| {
                let next = if window[k] == b'<' { b'/' } else { b'"' };
                let found = window.get(k + 1) == Some(&next);
                if found {
                    cut = p + k;
                }
                found
            });
            let raw = cut;
            // A URL query's next parameter (`&page_size=`) is the query's, not the value's, when
            // the key or the value holds the query (`?api_key=…`, `url: https://…?a=…&b=…`);
            // elsewhere `&x=` may be a password's symbols (`password: Tq4&d=Lm9…`). A form body's
            // field holding a reference ends there too (`-d "password=$PASS&grant_type=…"`).
            let before = bytes[..op].trim_ascii_end();
            let in_query = before.len() > key.len()
                && ends_with_ci(before, key)
                && matches!(before[before.len() - key.len() - 1], b'?' | b'&');
            let mut cut = raw;
            crate::bytes::any_of_two(b'&', b'&', &bytes[p..raw], |k| {
                let k = p + k;
                let found = (in_query
                    || bytes[p..k].contains(&b'?')
                    || matches!(bytes[p], b'$' | b'%')
                        && crate::judge::is_placeholder(&bytes[p..k])
                        && variable_name(&bytes[p + 1..k]))
                    && crate::judge::field_name_after(bytes, k);
                if found {
                    cut = k;
                }
                found
            });
            let raw = cut;
            // The next of a line's settings (`keys=1842,expires=12`) is not the value's either.
            crate::bytes::any_of_two(b',', b',', &bytes[p..raw], |k| {
                let found = crate::judge::next_setting(bytes, p + k);
                if found {
                    cut = p + k;
                }
                found
            });
            let raw = cut;
            let v = trim_end_of(&bytes[p..raw], |b| matches!(b, b',' | b';' | b'"' | b'\'' | b'`'));
            // The string the value stands in closes, then the call it is passed to
            // (`lookup('vault', 'secret=kv/data/app:api_key')`): neither is the value's.
            let closers = trim_end_of(v, |b| matches!(b, b')' | b']' | b'}'));
            let v = match closers.last() {
                Some(b'"' | b'\'')
                    if closers.len() < v.len()
                        && !closers[..closers.len() - 1].iter().any(|b| b"([{\"'".contains(b)) =>
                {
                    &closers[..closers.len() - 1]
                }
                _ => v,
            };
            let symbols = || v.iter().filter(|b| b.is_ascii_punctuation()).count();
            // (How many bytes differ, then the symbols and the entropy, cheaper, are counted before
            // code is looked for.)
            let code = || {
                code_expression(v)
                    || v.windows(2).any(|w| w == b"()")
                    || v.contains(&b'\\')
                    || sigil_code(v)
                    || composite_literal(v)
                    || cmdlet(v)
            };
            ((v.len() == window_end - p || crate::chars::may_have_four_bits(v))
                && symbols() >= 4
                && entropy(v) >= 4.0
                && !code())
            .then_some(p + v.len())
        };
        // A finding over the value's start overlaps the value wherever it ends (below): the
        // value is not measured.
        if self.found.iter().rev().take(8).any(|f| f.start <= p && p < f.end) {
            return;
        }
        // After a comma the value is the next argument: only a literal is a value there
        // (`decode(token, options={…})` passes an expression).
        let argument = bytes[op..p].trim_ascii() == b",";
        let (end, closed) = match quoted_end {
            Some(e) => (e, true),
            None if argument => return,
            None if quote.is_none() && has_operator => {
                unquoted().map_or((token_end, token_closed), |e| (e, true))
            }
            None => (token_end, token_closed),
        };
        let value = &bytes[p..end];
        // What the rules for this key's syntax found stands (their span and kind are finer);
        // nor is an open value or one with no operator judged (tested before the judging).
        let found = self
            .found
            .iter()
            .rev()
            .take(8)
            .any(|f| f.start < end && p < f.end);
        if found || !closed || !(has_operator || quoted_end.is_some()) {
            return;
        }
        // A strong word's value may be a short password; a weak word's must look generated.
        let strong = strength == Strength::Strong;
        let random = if strong {
            looks_random(value, 8)
                && (!identifier_like(value)
                    || random_letters(value)
                        && (quote.is_some() || bytes.get(end) != Some(&b';') && !named_nearby(bytes, p, end)))
                && !numeric_like(value)
        } else {
            looks_random(value, 16)
                && entropy(value) >= 3.5
                && !key_path(value)
                && !(hex_digest(value) && bare_key_word(text_before(bytes, key), key))
        };
        // A quoted entry of its own (`'JWT_SECRET=…'` after `'# Auth',`): its own key judges it.
        let entry = quoted_end.is_some() && {
            let name = run_end(value, 0, |b| b.is_ascii_alphanumeric() || b == b'_');
            name >= 2 && value.get(name) == Some(&b'=') && value[0].is_ascii_alphabetic()
        };
        if !entry
            && (!value.contains(&b' ') || quoted_end.is_some() && spaced_random(value))
            && random
            && !is_placeholder(value)
            && !is_reference(value)
            && !names_no_secret(value)
            && !crate::chars::script_words(value)
            && !(quoted_end.is_some() && crate::judge::locale_entry(bytes, p, value))
            && !(crate::judge::password_entry_key(key) && crate::judge::named_slot(value, key))
            && !(quote.is_none()
                && (constant_like(value)
                    || member_path(trim_end_of(value, |b| matches!(b, b';' | b',' | b')')))
                    || crate::judge::type_named_for_key(
                        trim_end_of(value, |b| matches!(b, b';' | b',' | b')')),
                        key,
                    ) && !crate::judge::password_key(key)
                    || composite_literal(value)
                    || cmdlet(value)))
            && !code_continuation(value)
            && !quoted_slot(value)
            && !(quote == Some(b'`') && crate::judge::struct_tag(value))
            && !url_stand_in_userinfo(value)
            && !host_after_stand_in(bytes, p, value)
            && !ldap_dn(value)
            // A path, absolute, in the home directory or relative (`"/en/enterprise-server@3.0/auth"`,
            // `~/.ssh/id_ed25519`, `./certs/id_rsa4096`), or a URL of words is no generated value.
            // A random value after a relative path's dot (`./kR4…`) is still judged as one.
            && {
                let from = [&b"~/"[..], b"./", b"../"]
                    .iter()
                    .find(|p| value.starts_with(p))
                    .map_or(0, |p| p.len() - 1);
                !value[from..].starts_with(b"/") || random_after_slash(&value[from..])
            }
            && !readable_url(value)
            && (strong || !base64_text(value))
            && !digest_of_secret(bytes, key, value)
            && !secret_location(value)
            && !secret_constant_name(value)
            && !crate::judge::public_by_prefix(value)
            && !within_arn(bytes, p)
            && !crate::judge::within_sops_ciphertext(bytes, p)
            // A property list's `<key>` names the entry whose value element follows.
            && !(element && key.eq_ignore_ascii_case(b"key") && plist_value_follows(bytes, end))
        {
            self.push(SecretKind::Assignment, p, end);
        }
    }

    /// The word for password in another language (see [`PASSWORD_WORDS`]), judged as `password`
    /// is: `Passwort: …` as a mapping, `mein Passwort ist …` as prose, `密码：…`, and `密码是…`,
    /// `パスワードは…` or `비밀번호는…`, where a particle glued to the word reads `is`. A key that
    /// starts at `kstart` before `i` holds the word as a segment (`DB_KENNWORT_PROD`).
    #[inline(always)]
    pub(crate) fn password_word_at(&mut self, kstart: usize, i: usize) -> bool {
        let mask = crate::prefilter::password_words_at(self.bytes, i);
        mask != 0 && self.password_word(kstart, i, mask)
    }

    /// [`Scan::password_word_at`] for the words of `mask`, those that may start at `i`.
    pub(crate) fn password_word(&mut self, kstart: usize, i: usize, mut mask: ForeignMask) -> bool {
        let bytes = self.bytes;
        let (mut end, word) = loop {
            if mask == 0 {
                return false;
            }
            let k = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            if let Some(end) = eat_ci(bytes, i, PASSWORD_WORDS[k].as_bytes()) {
                break (end, PASSWORD_WORDS[k]);
            }
        };
        // Spanish `clave` is any key (`clave primaria`, `{"clave": "valor"}`): a password only
        // as `clave de acceso`/`clave secreta`, otherwise its value must look generated.
        // So is `key` in Portuguese, Italian, Dutch, French and Japanese (`chave`, `chiave`,
        // `sleutel`, `clé`, `キー`), and secret in German, Portuguese, Italian, Spanish, Polish,
        // Swedish and Russian (`Geheimnis`, `segredo`, `секрет`, also a sentence's noun): its
        // value must look generated.
        let mut strength = Strength::Strong;
        if word == "clave" {
            match [&b" de acceso"[..], b" secreta"]
                .iter()
                .find_map(|w| eat_ci(bytes, end, w))
            {
                Some(e) => end = e,
                None => strength = Strength::Weak,
            }
        } else if matches!(
            word,
            "chave"
                | "chiave"
                | "sleutel"
                | "clé"
                | "キー"
                | "geheimnis"
                | "segredo"
                | "segreto"
                | "secreto"
                | "sekret"
                | "hemlighet"
                | "секрет"
                | "Секрет"
        ) {
            strength = Strength::Weak;
        }
        let key: &[u8] = if strength == Strength::Weak {
            b"clave"
        } else {
            foreign_word_means(word)
        };
        // A segment of a longer key (`DB_KENNWORT`, `KENNWORT2`, `KENNWORT_PROD`, `Пароль_БД`,
        // `비밀번호_확인`), not its metadata (`KENNWORT_FILE`, `MAX_KENNWORT`). Chinese, Japanese
        // and Korean glue particles to the word; other scripts' words stand alone
        // (`Passwortlänge` is a length, `пароля` another case).
        // A long ASCII run glued to a word of another script is what follows it (`令牌82jb…`),
        // not its key, which a short one continues (`密码2`, `пароль_db`).
        let glued_ascii = !word.is_ascii()
            && bytes.get(end).is_some_and(u8::is_ascii_alphanumeric)
            && run_end_max(bytes, end, 13, |b| b.is_ascii_alphanumeric()) - end > 12;
        let mut kend = end;
        while !glued_ascii && kend < end + 128 {
            match char_at(self.text, kend) {
                Some(c) if c.is_ascii() && is_key_byte(c as u8) => kend += 1,
                Some(c) if kend > end && !c.is_ascii() && is_word(c) => kend += c.len_utf8(),
                _ => break,
            }
        }
        while kend > end && matches!(bytes[kend - 1], b'.' | b'-') {
            kend -= 1;
        }
        let glued_before = kstart == i && self.text[..i].chars().next_back().is_some_and(is_word);
        if kstart < i || kend > end {
            if bytes.get(end).is_some_and(u8::is_ascii_alphabetic)
                || word_at(self.text, kend)
                || glued_before
                || qualified_before(&bytes[kstart..i], &bytes[i..end])
            {
                return false;
            }
            // Metadata about a password, or a compound whose head is not the word: the word
            // before a `-` is not (`Passwort-Richtlinie` is a policy), so that key needs a `:` or
            // `=`; in prose it is none, nor is its `Pass` an English key.
            if qualified_after(&bytes[end..kend])
                || foreign_qualified(&bytes[end..kend])
                || kend > end
                    && bytes[end] == b'-'
                    && !matches!(
                        bytes.get(skip_blank(bytes, kend)),
                        Some(b':' | b'=' | b'"' | b'\'')
                    )
            {
                return true;
            }
            self.assignment_after(kstart, kend, key, strength, SecretKind::Assignment, false);
            return true;
        }
        if bytes[i] < 0xE3 && (word_at(self.text, end) || glued_before) {
            return false;
        }
        // A long ASCII run glued on, then the sentence again (`我的密码Xq9…不能用`), is the
        // password when it mixes cases and digits (`密钥AES256GCM加密` names an algorithm); a
        // vendor's token or a dotted or encoded one (a JWT, a base64 key) there is left to its own
        // rule, so it keeps its name and its whole span.
        if glued_ascii {
            let e = run_end_max(bytes, end, MAX_VALUE, |b| {
                b.is_ascii_alphanumeric()
                    || matches!(b, b'!' | b'@' | b'#' | b'%' | b'^' | b'&' | b'*' | b'_' | b'-')
            });
            let ends = bytes.get(e).is_none_or(|&b| b >= 0x80 || b.is_ascii_whitespace());
            let vendor = crate::rules::candidates(bytes[end], bytes.get(end + 1).copied().unwrap_or(0))
                .iter()
                .any(|v| v.matches(self.text, end).is_some())
                || crate::rules::headed_at(self.text, end).is_some();
            let value = Value::enclosed(end, e, 0, Stop::Code);
            let v = value.text(bytes);
            // Two words or more run together with a number (`SHA256withRSA`, `MySQL8`) name an
            // algorithm or a product; one word and a number (`Summer2024`) is a weak password.
            let name = crate::chars::compound_name(v);
            if ends
                && !vendor
                && !name
                && mixed_case(v)
                && has_digit(v)
                && value_is_secret(bytes, &value, key, strength, Mode::Prose)
            {
                self.push(SecretKind::Prose, end, e);
            }
            return true;
        }
        match ["是", "为", "為", "は", "는", "가"]
            .iter()
            .find_map(|p| eat_ci(bytes, end, p.as_bytes()))
        {
            Some(pos) => {
                let pos = skip_blank(bytes, pos);
                if matches!(bytes.get(pos), Some(b':' | b'=')) {
                    // `비밀번호는: …`: a mapping after all.
                    self.assignment_after(i, pos, key, strength, SecretKind::Assignment, false);
                } else if bytes.get(pos).is_some_and(u8::is_ascii)
                    // What follows in Chinese or Japanese is the sentence, not a value.
                    && let Some(value) = Value::parse(bytes, pos, Stop::Code)
                    && !case_particle(self.text, value.raw_end + usize::from(value.quoted))
                    && value_is_secret(bytes, &value, key, strength, Mode::Prose)
                {
                    self.push(SecretKind::Prose, value.start, value.whole_end(bytes));
                }
            }
            None => self.assignment_after(i, end, key, strength, SecretKind::Assignment, false),
        }
        true
    }

    /// `auth=("admin", "…")`, `HTTPBasicAuth("admin", "…")`, `smtp.login(user, "…")`,
    /// `NetworkCredential("admin", "…")`, `PasswordAuthentication("admin", "…".toCharArray())`,
    /// `mysqli_connect("db", "app", "…")`: a user and a password passed together to what names
    /// authentication or a connection. The second argument and
    /// the third (`keyring.set_password(service, user, "…")`) are each a password when they are
    /// random-looking strings.
    pub(crate) fn credential_pair_at(&mut self, key: &[u8], kend: usize) {
        let bytes = self.bytes;
        let mut open = skip_blank(bytes, kend);
        if bytes.get(open) == Some(&b'=') {
            open = skip_blank(bytes, open + 1);
        }
        if bytes.get(open) != Some(&b'(') {
            return;
        }
        // What is called: `…Auth`, `login`, `authenticate`, `…_password` (not `AuthError`), or a
        // class made of a user and a password (`NetworkCredential`, `PasswordAuthentication`;
        // `get_credential(service, user)` and `GetCredentials` read one).
        let name = key.rsplit(|&b| b == b'.').next().unwrap_or(key);
        let names_auth = [
            &b"auth"[..],
            b"login",
            b"log_in",
            b"signin",
            b"sign_in",
            b"authenticate",
            // A database's connection made from a host, a user and a password
            // (`mysqli_connect("db", "app", "…")`, `DriverManager.getConnection(url, "app", "…")`).
            b"connect",
            b"connection",
        ]
        .iter()
        .copied()
        .chain(PASSWORD_KEYS.iter())
        .any(|w| name.len() >= w.len() && name[name.len() - w.len()..].eq_ignore_ascii_case(w));
        // A verb before the class name reads or configures one (`GetCredential`,
        // `AddAuthentication("Cookies", …)`), it is not given a user and a password.
        let verb = name.starts_with(b"Add")
            || name.starts_with(b"Use")
            || name.starts_with(b"Get")
            || name.starts_with(b"With")
            || name.starts_with(b"Configure");
        let ldap = name.ends_with(b"DirectoryEntry") || name == b"OpenDSObject";
        let class = name.first().is_some_and(u8::is_ascii_uppercase)
            && !verb
            && (name.ends_with(b"Credential")
                || name.ends_with(b"Credentials")
                || name.ends_with(b"Authentication")
                // An LDAP bind: the path, then the user and the password.
                || ldap);
        if !names_auth && !class {
            if let Some(args) = crate::commands::password_arguments(key, name) {
                self.password_arguments_at(open, &args);
                return;
            }
            // One byte first (`Authenticator`'s capital): this runs at every call.
            if name.len() > 13 && name[name.len() - 13] == b'A' {
                self.authenticator_key_at(name, open);
            }
            return;
        }
        // A class made of a user and a password (`NetworkCredential`, `PasswordAuthentication`,
        // an LDAP bind) holds a password literal however weak in its password's place
        // (`NetworkCredential("u", "vzihlaquknriqlht")`); elsewhere, and in what only names
        // authentication (`login(…)`), a password is a random-looking one.
        let literal_arg = if ldap {
            Some(1)
        } else if class && (name.ends_with(b"NetworkCredential") || contains_ci(name, b"password")) {
            Some(0)
        } else {
            None
        };
        let pair_mode = |arg| {
            if literal_arg == Some(arg) {
                Mode::Literal
            } else {
                Mode::Prose
            }
        };
        if anonymous_user_at(
            bytes,
            run_end_max(bytes, open + 1, 64, |b| b.is_ascii_whitespace()),
        ) {
            return;
        }
        let mut from = open + 1;
        // The second to the fourth argument: sbt's `Credentials(realm, host, user, password)`
        // puts the password fourth.
        for arg in 0..3 {
            let Some(comma) = top_level(bytes, from, b",)", 256).filter(|&c| bytes[c] == b',') else {
                return;
            };
            // Arguments may stand one per line.
            from = run_end_max(bytes, comma + 1, 64, |b| b.is_ascii_whitespace());
            if ldap && arg == 0 {
                continue; // the user
            }
            let Some(value) = Value::parse(bytes, from, Stop::Code) else {
                return;
            };
            // Java passes a `char[]`: `"…".toCharArray()`.
            let after = skip_blank(bytes, value.end + 1);
            let after = eat_ci(bytes, after, b".tochararray()").unwrap_or(after);
            // A client or tenant id (`ClientSecretCredential(tenant, "<uuid>", secret)`) is
            // an identifier: a UUID is never the password.
            if value.quoted
                && !value.cut
                && !uuid(value.text(bytes))
                && matches!(bytes.get(skip_blank(bytes, after)), Some(b')' | b','))
                && value_is_secret(bytes, &value, b"password", Strength::Strong, pair_mode(arg))
            {
                self.push(SecretKind::Assignment, value.start, value.end);
            }
        }
    }

    /// The quoted literals at the argument places of the call whose `(` is at `open`, each a
    /// password (see [`crate::commands::password_arguments`]).
    #[cold]
    fn password_arguments_at(&mut self, open: usize, args: &crate::commands::PasswordArgs) {
        let bytes = self.bytes;
        let places = args.places;
        let mode = if args.random { Mode::Prose } else { Mode::Literal };
        let dn = |v: &[u8]| v.contains(&b',') && v.iter().take(4).any(|&b| b == b'=');
        let mut from = run_end_max(bytes, open + 1, 64, |b| b.is_ascii_whitespace());
        // The user before a password (`FTP(host, 'anonymous', 'me@host')`).
        let mut anonymous = false;
        for arg in 0..8 - places.leading_zeros() {
            if arg == 0
                && args.dn
                && !Value::parse(bytes, from, Stop::Code).is_some_and(|v| v.quoted && dn(v.text(bytes)))
            {
                return;
            }
            if arg > 0 {
                let Some(comma) = top_level(bytes, from, b",)", 256).filter(|&c| bytes[c] == b',') else {
                    return;
                };
                from = run_end_max(bytes, comma + 1, 64, |b| b.is_ascii_whitespace());
            }
            if places & (1 << arg) == 0 {
                anonymous = anonymous_user_at(bytes, from);
                continue;
            }
            if anonymous {
                return;
            }
            // Python's bytes literal (`b"…"`).
            let at = if bytes.get(from) == Some(&b'b') && matches!(bytes.get(from + 1), Some(b'"' | b'\'')) {
                from + 1
            } else {
                from
            };
            let Some(value) = Value::parse(bytes, at, Stop::Code) else {
                return;
            };
            let after = skip_blank(bytes, value.end + 1);
            let char_array = eat_ci(bytes, after, b".tochararray()");
            if value.quoted
                && !value.cut
                && (char_array.is_some() || !args.chars)
                && matches!(
                    bytes.get(skip_blank(bytes, char_array.unwrap_or(after))),
                    Some(b')' | b',')
                )
                && value_is_secret(bytes, &value, b"password", Strength::Strong, mode)
            {
                self.push(SecretKind::Assignment, value.start, value.end);
            }
        }
    }

    /// `IAMAuthenticator("…")`, `BearerTokenAuthenticator("…")`: an SDK's authenticator given one
    /// quoted literal holds its key when it looks generated (a UUID is an id), the call's `(` at
    /// `open`.
    #[cold]
    fn authenticator_key_at(&mut self, name: &[u8], open: usize) {
        if !name.ends_with(b"Authenticator") || !name[0].is_ascii_uppercase() {
            return;
        }
        let bytes = self.bytes;
        let from = run_end_max(bytes, open + 1, 64, |b| b.is_ascii_whitespace());
        let Some(value) = Value::parse(bytes, from, Stop::Code) else {
            return;
        };
        if value.quoted
            && !value.cut
            && !uuid(value.text(bytes))
            && bytes.get(run_end_max(bytes, value.end + 1, 64, |b| b.is_ascii_whitespace())) == Some(&b')')
            && value_is_secret(bytes, &value, b"token", Strength::Strong, Mode::Prose)
        {
            self.push(SecretKind::Assignment, value.start, value.end);
        }
    }

    /// An Azure SAS signature, `?…&sig=<base64>` in a URL query: the signature grants the access.
    pub(crate) fn sas_signature_at(&mut self, i: usize, kend: usize) {
        let bytes = self.bytes;
        if i == 0 || !matches!(bytes[i - 1], b'?' | b'&') || bytes.get(kend) != Some(&b'=') {
            return;
        }
        let start = kend + 1;
        let end = run_end_max(bytes, start, MAX_VALUE, |b| b64(b) || b == b'%');
        let sig = &bytes[start..end];
        if sig.len() >= 20 && mixed_case(sig) && has_digit(sig) {
            self.push(SecretKind::Assignment, start, end);
        }
    }

    /// `--password=…`, `--token …` and the short flags of the commands that take a password.
    pub(crate) fn flag_at(&mut self, i: usize, kend: usize) {
        let bytes = self.bytes;
        let key = &bytes[i..kend];
        let dashes = run_end(key, 0, |b| b == b'-');
        let name = &key[dashes..];
        if name.is_empty() {
            return;
        }
        if dashes == 1 && [&b"pass"[..], b"passin", b"passout"].contains(&name) {
            // openssl's `-passin pass:…` (`env:`, `file:`, `fd:` and `stdin` say where it is).
            if let Some(p) = eat_ci(bytes, skip_blank(bytes, kend), b"pass:")
                && let Some(value) = Value::parse(bytes, p, Stop::Blank)
                && value_is_secret(bytes, &value, b"password", Strength::Strong, Mode::Literal)
            {
                self.push(SecretKind::CommandLine, value.start, value.whole_end(bytes));
            }
            return;
        }
        // keytool's and jarsigner's store and key passwords (`-storepass:env NAME` says where it
        // is); a plain word only where the command's arguments go on or end.
        if dashes == 1
            && matches!(
                name,
                b"storepass"
                    | b"keypass"
                    | b"srcstorepass"
                    | b"deststorepass"
                    | b"srckeypass"
                    | b"destkeypass"
            )
        {
            if self.line_commands(i) & KEYTOOL != 0 && matches!(bytes.get(kend), Some(b' ' | b'\t')) {
                self.command_flag_value_at(kend, None, None);
            }
            return;
        }
        // A Java system property (`-Dsonar.login=…`, `-Dspring.datasource.password=…`): the
        // property is the key.
        if dashes == 1 && name.len() > 2 && name[0] == b'D' && bytes.get(kend) == Some(&b'=') {
            let key = &name[1..];
            self.keyword_value_at(kend, key, None);
            if let Some(word) = secret_word(key) {
                self.assignment_after(i + 2, kend, key, word.strength, SecretKind::CommandLine, true);
            }
            return;
        }
        // PowerShell's and Windows tools' named parameters (`Connect-VIServer … -Password …`,
        // `-ClientSecret …`): a value after a blank, or after PowerShell's colon
        // (`-Password:…`), judged as prose is (random-looking).
        // PuTTY's `plink`/`pscp`/`psftp` take theirs as `-pw …`.
        if dashes == 1
            && (name.len() > 2 || name.eq_ignore_ascii_case(b"pw"))
            && matches!(bytes.get(kend), Some(b' ' | b'\t' | b':'))
            && secret_word(name).is_some_and(|w| w.strength == Strength::Strong)
        {
            self.assignment_after(i, kend, name, Strength::Strong, SecretKind::CommandLine, false);
            return;
        }
        // curl's `-b 'name=value; …'` sends cookies (a word without `=` names a cookie file).
        if dashes == 1
            && name == b"b"
            && self.line_commands(i) & CURL != 0
            && let Some((arg, _)) = next_arg(bytes, kend)
        {
            self.cookie_pairs_in(arg.start, arg.end);
            return;
        }
        // `echo "…" | sudo -S …`, `… | passwd --stdin bob`: the password comes through the pipe.
        if (dashes == 1 && name == b"S" || dashes == 2 && name.eq_ignore_ascii_case(b"stdin"))
            && piped_to_password_reader(line_before(bytes, i))
        {
            self.stdin_password_at(i, kend);
            return;
        }
        if let Some(flag) = crate::commands::command_flag(dashes, name)
            && matches!(bytes.get(kend), Some(b' ' | b'\t'))
        {
            let segment = command_segment(bytes, i);
            if let Some(at) = find_ci(segment, 0, flag.command) {
                // The command's next argument, where it names the value (`gh secret set NAME`).
                let name = flag.named.then(|| {
                    let from = skip_blank(segment, at + flag.command.len());
                    &segment[from..run_end(segment, from, |b| !b.is_ascii_whitespace())]
                });
                self.command_flag_value_at(kend, flag.after, name);
                return;
            }
        }
        if dashes == 1 {
            // `-pSECRET`, or `-p*SECRET` where the run stopped at a symbol.
            let glued = name.len() > 1
                || bytes
                    .get(kend)
                    .is_some_and(|&b| !b.is_ascii_whitespace() && b != b'=');
            self.short_flag_at(i, kend, name[0], glued);
            return;
        }
        // `--proxy-user user:password` is curl's `-U`, the proxy's credentials.
        if name.eq_ignore_ascii_case(b"user") || name.eq_ignore_ascii_case(b"proxy-user") {
            self.short_flag_at(i, kend, b'u', false);
            return;
        }
        if name.eq_ignore_ascii_case(b"password-stdin") {
            self.stdin_password_at(i, kend);
            return;
        }
        // `` with the `--username` and `--password` options ``: a flag named in a code span, not used.
        if i > 0 && bytes[i - 1] == b'`' && bytes.get(kend) == Some(&b'`') {
            return;
        }
        let Some(word) = secret_word(name) else {
            return;
        };
        if self.listed_argument_at(i, kend, name, word.strength) {
            return;
        }
        // A flag whose value lists settings (`--secret id=npmrc,src=.npmrc`): each setting's key
        // is read where it starts.
        let v = skip_blank(bytes, kend + usize::from(bytes.get(kend) == Some(&b'=')));
        // `--secret=smtp-relay`, `--secret-id prod/db`: a secret named by lowercase words.
        let secret_name = |n: &[u8]| {
            n.len() >= 6
                && n[..6].eq_ignore_ascii_case(b"secret")
                && [&b""[..], b"s", b"-id", b"_id", b"-name", b"_name"]
                    .iter()
                    .any(|t| n[6..].eq_ignore_ascii_case(t))
        };
        if secret_name(name) {
            let arg = run_end_max(bytes, v, 256, |c| {
                !c.is_ascii_whitespace() && !matches!(c, b'"' | b'\'')
            });
            let value = &bytes[v..arg];
            // A version may end a name of joined words (`npmrc_v3`, `db-pass-2`); a lone word with
            // digits (`hunter22`) is a password.
            let joined = value.iter().any(|&b| matches!(b, b'_' | b'-' | b'/' | b'.'));
            if wordy(value) && !value.iter().any(u8::is_ascii_uppercase) && (joined || !has_digit(value)) {
                return;
            }
        }
        if setting_name_at(bytes, v) {
            let arg = run_end_max(bytes, v, 256, |c| !c.is_ascii_whitespace());
            if (v..arg).any(|k| bytes[k] == b',' && setting_name_at(bytes, k + 1)) {
                return;
            }
        }
        self.assignment_after(i, kend, name, word.strength, SecretKind::CommandLine, true);
    }

    /// The argument after a command's password flag ending at `kend`: a quoted literal, or a
    /// plain word where the command's arguments go on or end (not a sentence's word); with
    /// `after`, only what follows its last `after` (`client.p12:PASS`; none, no password).
    fn command_flag_value_at(&mut self, kend: usize, after: Option<u8>, name: Option<&[u8]>) {
        let bytes = self.bytes;
        let Some((mut value, next)) = next_arg(bytes, kend) else {
            return;
        };
        if let Some(sep) = after {
            let v = value.text(bytes);
            // A URI or a store's name, not a file: `pkcs11:object=…;type=cert`, `store:My\…`.
            if v.starts_with(b"pkcs11:") || v.iter().any(|&b| matches!(b, b'=' | b';' | b'\\')) {
                return;
            }
            match v.iter().rposition(|&b| b == sep) {
                // A Windows drive's `C:\` is a path's.
                Some(k) if !matches!(bytes.get(value.start + k + 1), Some(b'\\' | b'/')) => {
                    value = Value::enclosed(value.start + k + 1, value.end, 0, Stop::Blank);
                }
                _ => return,
            }
        }
        let mode = if value.quoted || args_end(bytes, next) {
            Mode::Literal
        } else {
            Mode::Code
        };
        // A value named by a setting's name (`AWS_REGION`, `DB_NAME`) is a secret only when it
        // looks generated; a literal word is a password under a name that says so.
        if name.is_some_and(|n| secret_word(n).is_none()) && !looks_random(value.text(bytes), 10) {
            return;
        }
        if value_is_secret(bytes, &value, b"password", Strength::Strong, mode) {
            self.push(SecretKind::CommandLine, value.start, value.whole_end(bytes));
        }
    }

    /// A command's arguments written as a list (`["--password", "…"]` in JSON, Python or a
    /// Dockerfile's exec form, `exec.Command("psql", "--token", "…")`, a YAML sequence's
    /// `- --api-key` then `- …`): the element after the flag `[i, kend)` is its value, judged as a
    /// literal when it is quoted (an unquoted element is a variable: `pw`, `token`). Returns
    /// whether the flag is such an element with an element after it.
    pub(crate) fn listed_argument_at(
        &mut self,
        i: usize,
        kend: usize,
        name: &[u8],
        strength: Strength,
    ) -> bool {
        let bytes = self.bytes;
        let blank_or_break = |b: u8| matches!(b, b' ' | b'\t' | b'\r' | b'\n');
        let quote = i.checked_sub(1).map(|p| bytes[p]);
        let value = if let Some(q @ (b'"' | b'\'')) = quote
            && bytes.get(kend) == Some(&q)
        {
            let k = run_end(bytes, kend + 1, blank_or_break);
            if bytes.get(k) != Some(&b',') {
                return false;
            }
            let k = run_end(bytes, k + 1, blank_or_break);
            if !matches!(bytes.get(k), Some(b'"' | b'\'')) {
                return false;
            }
            Value::parse(bytes, k, Stop::Blank)
        } else {
            // A YAML sequence: `- --flag` alone on its line, the value the next line's item.
            let line = line_before(bytes, i);
            let item = line.iter().rposition(|&b| b != b' ' && b != b'\t');
            if item.is_none_or(|p| line[p] != b'-' || line[..p].iter().any(|&b| b != b' ' && b != b'\t')) {
                return false;
            }
            let k = run_end(bytes, kend, |b| b == b' ' || b == b'\t' || b == b'\r');
            if bytes.get(k) != Some(&b'\n') {
                return false;
            }
            let k = run_end(bytes, k + 1, |b| b == b' ' || b == b'\t');
            if !bytes[k..].starts_with(b"- ") {
                return false;
            }
            Value::parse(bytes, skip_blank(bytes, k + 2), Stop::Blank)
        };
        if let Some(value) = value
            && !value.text(bytes).starts_with(b"-")
        {
            let mode = if value.quoted { Mode::Literal } else { Mode::Code };
            if value_is_secret(bytes, &value, name, strength, mode) {
                self.push(SecretKind::CommandLine, value.start, value.whole_end(bytes));
            }
        }
        true
    }

    /// `-p` after `docker login` and friends, `sshpass` or `mongo`/`mongosh`, `-pSECRET` after
    /// `mysql`, `-P` after `sqlcmd`, `-N`/`-P` after `ssh-keygen`, `-k` after `openssl`, `-w`
    /// after the `ldap…` tools, `-a` after `redis-cli`,
    /// `-a user:password` after httpie, `-u user:password` / `--user` after `curl`,
    /// `-u user,password` after `lftp`, `-U user%password` after `smbclient`.
    pub(crate) fn short_flag_at(&mut self, i: usize, kend: usize, flag: u8, glued: bool) {
        let bytes = self.bytes;
        let commands = self.line_commands(i);
        let has = |set: u16| commands & set != 0;
        // `-k`, `-N` and `-P` are common flags: the command they belong to must be theirs
        // (`openssl s_client … ; curl -k …` is curl's).
        let in_segment = |name: &[u8]| contains_ci(command_segment(bytes, i), name);
        // What the flag's own segment runs (`7z x a.7z && cf login -u admin -p …` is cf's `-p`).
        let segment_has = |set: u16| has(set) && segment_commands(command_segment(bytes, i)) & set != 0;
        let in_segment_archive = || segment_has(ARCHIVE);
        // Whether the flag takes a password after a blank, glued, and what separates a user
        // before it.
        let (spaced_ok, glued_ok, user_sep) = match flag {
            // mysql's spaced `-p` prompts, and the database name follows it.
            b'p' => (
                has(LOGIN | MONGO) || !has(MYSQL) && !in_segment_archive() && after_user_flag(bytes, i),
                has(MYSQL) || has(ARCHIVE) && in_segment_archive(),
                None,
            ),
            // rar's `-hpPASS`: the password follows `-hp`.
            b'h' => (
                false,
                glued && has(ARCHIVE) && bytes.get(i + 2) == Some(&b'p') && in_segment_archive(),
                None,
            ),
            b'A' | b'X' => (has(SNMP) && in_segment(b"snmp"), false, None),
            b'P' => (
                segment_has(SQLCMD) || has(SSH_KEYGEN) && in_segment(b"ssh-keygen"),
                false,
                None,
            ),
            b'N' => (has(SSH_KEYGEN) && in_segment(b"ssh-keygen"), false, None),
            b'k' => (has(OPENSSL) && in_segment(b"openssl"), false, None),
            b'w' => (has(LDAP), false, None),
            b'a' if has(HTTPIE) => (true, false, Some(b':')),
            b'a' => (has(REDIS), false, None),
            b'u' if has(LFTP) => (true, false, Some(b',')),
            b'u' => (has(CURL), false, Some(b':')),
            b'U' if has(SMB) => (true, false, Some(b'%')),
            // curl's `-U user:password` names the proxy's user and password.
            b'U' => (has(CURL), false, Some(b':')),
            _ => return,
        };
        let start = if glued && glued_ok {
            i + 2 + usize::from(flag == b'h')
        } else if !glued && spaced_ok && matches!(bytes.get(kend), Some(b' ' | b'\t' | b'=')) {
            skip_blank(bytes, kend + 1)
        } else {
            return;
        };
        let Some(value) = Value::parse(bytes, start, Stop::Blank) else {
            return;
        };
        let v = value.text(bytes);
        // An unquoted `-` opens the next flag; a quoted one is the password's own (`-a '-C+p6…'`).
        if v.starts_with(b"-") && (!value.quoted || crate::judge::flag_like(v)) || is_reference(v) {
            return;
        }
        // Prose about the flag: `the zip -P option is insecure`, `-A flag sets the passphrase`.
        if !value.quoted && FLAG_NOUNS.iter().any(|n| v.eq_ignore_ascii_case(n)) {
            return;
        }
        // Our own marker where a key passed as the user was (`-u "[REDACTED:…]:"`) leaves nothing.
        if v.starts_with(b"[REDACTED:")
            && v.iter()
                .position(|&b| b == b']')
                .is_some_and(|e| v[e + 1..].iter().all(|&b| Some(b) == user_sep))
        {
            return;
        }
        if let Some(sep) = user_sep {
            if let Some(at) = user_password(v, sep) {
                self.push(SecretKind::CommandLine, value.start + at, value.whole_end(bytes));
            } else if v.len() > 1 && v.last() == Some(&sep) && looks_random(&v[..v.len() - 1], 10) {
                // `-u sk_live_…:` with no password: an API key passed as the user is the secret.
                self.push(SecretKind::CommandLine, value.start, value.start + v.len() - 1);
            }
            return;
        }
        // A port (`-p 27017:27017` on a line naming mongo) is not a password, nor a URL.
        if v.len() >= 3 && !is_placeholder(v) && !numeric_like(v) && !is_path_or_url(v) {
            self.push(SecretKind::CommandLine, value.start, value.whole_end(bytes));
        }
    }

    /// The start of the line holding `i` (`floor` when it starts before), read back only as far
    /// as the last look-up: keys on one long line each asking for its start read it once, not
    /// once per key. A look-up behind the last reads back to `floor` at most.
    pub(crate) fn line_start_at(&mut self, i: usize, floor: usize) -> usize {
        let (seen, start) = self.line_seen;
        if start <= i && i <= seen {
            return start.max(floor);
        }
        if seen < i {
            let start = rfind_byte(b'\n', &self.bytes[seen..i]).map_or(start, |p| seen + p + 1);
            self.line_seen = (i, start);
            return start.max(floor);
        }
        rfind_byte(b'\n', &self.bytes[floor..i]).map_or(floor, |p| floor + p + 1)
    }

    /// The end of the line holding `i` (`stop` when it ends after), read on once per line: keys
    /// on one long line each asking for its end read it once. A look-up behind the last reads on
    /// to `stop` at most.
    pub(crate) fn line_end_at(&mut self, i: usize, stop: usize) -> usize {
        let (seen, end) = self.line_end_seen;
        if seen <= i && i <= end {
            return end.min(stop);
        }
        if seen < i || seen == usize::MAX {
            let end = find_byte(b'\n', &self.bytes[i..]).map_or(self.bytes.len(), |p| i + p);
            self.line_end_seen = (i, end);
            return end.min(stop);
        }
        find_byte(b'\n', &self.bytes[i..stop]).map_or(stop, |p| i + p)
    }

    /// Where the first `default` (in any case) at or after `p` starts, `usize::MAX` for none, read
    /// on once for a run of keys: each block a key opens looks for its `Default`.
    pub(crate) fn default_from(&mut self, p: usize) -> usize {
        let (seen, at) = self.default_seen;
        if seen <= p && p <= at {
            return at;
        }
        let bytes = self.bytes;
        let mut i = p;
        let at = loop {
            match find_any_of_two(b'd', b'D', &bytes[i..]) {
                Some(k)
                    if bytes[i + k..]
                        .get(..7)
                        .is_some_and(|w| w.eq_ignore_ascii_case(b"default")) =>
                {
                    break i + k;
                }
                Some(k) => i += k + 1,
                None => break usize::MAX,
            }
        };
        self.default_seen = (p, at);
        at
    }

    /// [`line_before`] from the line start [`Scan::line_start_at`] remembers.
    pub(crate) fn line_before_at(&mut self, i: usize) -> &'t [u8] {
        &self.bytes[self.line_start_at(i, i.saturating_sub(256))..i]
    }

    /// A line starts at `i`. One continued onto it (`\`, PowerShell's `` ` ``, cmd's `^` before
    /// the newline) carries its commands (`keytool … \` NEWLINE `-storepass …`): looked up once
    /// for that line, so a run of continued lines stays linear.
    pub(crate) fn new_line(&mut self, i: usize) {
        let before = &self.bytes[..i];
        let before = before.strip_suffix(b"\n").unwrap_or(before);
        let before = before.strip_suffix(b"\r").unwrap_or(before);
        let set = if matches!(before.last(), Some(b'\\' | b'`' | b'^')) {
            self.line_commands(i - 1)
        } else {
            0
        };
        self.line = (i, None);
        self.carry = (i, set);
    }

    /// Which password-taking commands the line holding `i` names (or a line continued onto it),
    /// computed once per line.
    pub(crate) fn line_commands(&mut self, i: usize) -> u16 {
        let bytes = self.bytes;
        let (start, cached) = self.line;
        if let Some(set) = cached.filter(|_| start <= i) {
            return set;
        }
        let start = if start <= i {
            start
        } else {
            line_start_of(bytes, i)
        };
        let line = &bytes[start..line_end(bytes, i)];
        let mut set = named_commands(line);
        // httpie's `http`/`https` is a command only where a command starts.
        let t = trim_ascii(line);
        let t = t.strip_prefix(b"$ ").unwrap_or(t);
        if t.starts_with(b"http ") || t.starts_with(b"https ") {
            set |= HTTPIE;
        }
        if self.carry.0 == start {
            set |= self.carry.1;
        }
        self.line = (start, Some(set));
        set
    }

    /// What follows a key ending at `kend`: separator, value, and whether the value is a secret.
    pub(crate) fn assignment_after(
        &mut self,
        kstart: usize,
        kend: usize,
        key: &[u8],
        strength: Strength,
        kind: SecretKind,
        flag: bool,
    ) {
        let bytes = self.bytes;
        self.compared_before(kstart, key, strength, kind);
        self.expected_before(kstart, kend, key, strength, kind);
        if password_key(key) {
            self.typed_password_element(kstart, kend, kind);
        }
        let pos = key_tail_end(bytes, kend);
        let mut blank_before = skip_blank(bytes, pos);
        // French typography puts a no-break space before a colon (`Mot de passe\u{a0}: …`).
        let nbsp = skip_space(bytes, pos);
        if bytes.get(nbsp) == Some(&b':') {
            blank_before = nbsp;
        }
        let spaced_before = blank_before > pos;
        let pos = blank_before;
        let Some(sep) = self.separator_at(pos, key, strength, kind, spaced_before) else {
            return;
        };
        let line = self.line_before_at(kstart);
        let colon = sep == Some(1) && bytes[pos] == b':';
        let quoted_key = pos > kend;
        // `<password>…</password>`: the element's text is the value. An element holds one text:
        // named by a password's plural (`<db_passwords>`) it is one password.
        if sep.is_none() && bytes.get(pos) == Some(&b'>') && kstart > 0 && bytes[kstart - 1] == b'<' {
            let one = key.strip_suffix(b"s").or_else(|| key.strip_suffix(b"S"));
            let strength = if one.is_some_and(password_key) {
                Strength::Strong
            } else {
                strength
            };
            return self.element_text(pos + 1, key, strength, kind);
        }
        // `<Pass encoding="base64">…</Pass>`: the start tag's attributes come before the text.
        if sep.is_none()
            && spaced_before
            && kstart > 0
            && bytes[kstart - 1] == b'<'
            && let Some(close) = start_tag_attributes_end(bytes, pos)
        {
            return self.element_text(close + 1, key, strength, kind);
        }
        let site = KeySite {
            key,
            strength,
            kind,
            flag,
            line,
            spaced_before,
            quoted_key,
            colon,
        };
        let Some((pos, mode)) = self.assignment_mode(pos, sep, &site) else {
            return;
        };
        self.assigned_value(returned_literal(bytes, pos).unwrap_or(pos), mode, &site);
    }

    /// An element whose `type` or `spec` attribute declares it a password (`<input
    /// type="password" value="…">`, a CI server's `<param … value="…" spec="password …">`, the
    /// key at `kstart..kend` being that attribute's first word): its `value` attribute, on the
    /// same line in the same tag, is the password.
    pub(crate) fn typed_password_element(&mut self, kstart: usize, kend: usize, kind: SecretKind) {
        let bytes = self.bytes;
        let before = self.line_before_at(kstart);
        let Some((&q, head)) = before.split_last() else {
            return;
        };
        if !matches!(q, b'"' | b'\'') {
            return;
        }
        let Some(head) = head.strip_suffix(b"=") else {
            return;
        };
        let attr = &head[head
            .iter()
            .rposition(|b| !b.is_ascii_alphabetic())
            .map_or(0, |k| k + 1)..];
        if !(attr.eq_ignore_ascii_case(b"type") || attr.eq_ignore_ascii_case(b"spec")) {
            return;
        }
        // The tag around the attribute: from its `<` to its `>`, on this line.
        let Some(open) = before.iter().rposition(|&b| b == b'<') else {
            return;
        };
        if before[open..].contains(&b'>') {
            return;
        }
        let tag_start = kstart - before.len() + open;
        let close = run_end_max(bytes, kend, 512, |b| b != b'>' && b != b'\n');
        if bytes.get(close) != Some(&b'>') {
            return;
        }
        let tag = &bytes[tag_start..close];
        let attribute = tag
            .windows(7)
            .position(|w| w[0].is_ascii_whitespace() && w[1..].eq_ignore_ascii_case(b"value="));
        if let Some(k) = attribute {
            let start = tag_start + k + 7;
            if let Some(value) = Value::parse(bytes, start, Stop::Code)
                && value.quoted
                && value.end <= close
                && value_is_secret(bytes, &value, b"password", Strength::Strong, Mode::Literal)
            {
                self.push(kind, value.start, value.end);
            }
        }
    }

    /// The assignment operator at `pos` after a key: `Some(Some(len))` for an operator of `len`
    /// bytes, `Some(None)` for none, `None` when what follows was judged here (a comparison, a
    /// call, an LDIF value) or is a type.
    pub(crate) fn separator_at(
        &mut self,
        pos: usize,
        key: &[u8],
        strength: Strength,
        kind: SecretKind,
        spaced_before: bool,
    ) -> Option<Option<usize>> {
        let bytes = self.bytes;
        let sep = match (bytes.get(pos), bytes.get(pos + 1)) {
            // Make's `::=` and `:::=` (an LDIF `::` has no `=` after it).
            (Some(b':'), Some(b':')) if bytes.get(pos + 2) == Some(&b'=') => Some(3),
            (Some(b':'), Some(b':')) if bytes.get(pos + 2..pos + 4) == Some(b":=") => Some(4),
            (Some(b':'), Some(b':')) => {
                self.ldif_base64_at(pos + 2, key, kind);
                return None;
            }
            // Make's `?=` and `+=`, PHP's `.=`.
            (Some(b'?' | b'+' | b'.'), Some(b'=')) => Some(2),
            // Ruby's and JavaScript's `||=` and `&&=` (set unless set).
            (Some(b'|'), Some(b'|')) | (Some(b'&'), Some(b'&')) if bytes.get(pos + 2) == Some(&b'=') => {
                Some(3)
            }
            (Some(b'='), Some(b'=')) | (Some(b'!'), Some(b'=')) => {
                self.compared_at(pos, key, strength, kind);
                return None;
            }
            // `std::string secret("…")`: a literal passed to what the key names, blanks around it
            // or not (`setPassword( "…" )`). A capitalised name is a type
            // (`new ClientSecretCredential("<tenant>", …)`). SQL's functions in capitals may stand
            // apart from their parenthesis (`PASSWORD ('…')`).
            (Some(b'('), _)
                if matches!(bytes.get(skip_blank(bytes, pos + 1)), Some(b'"' | b'\''))
                    && (!spaced_before || all_caps(key))
                    && !camel_type(key) =>
            {
                self.compared_at(pos, key, strength, kind);
                return None;
            }
            // A test asserting or stubbing what the key's getter or member holds
            // (`assertThat(app.getClientSecret(), equalTo("…"))`, `expect(cfg.apiKey).toBe("…")`,
            // `when(vault.getToken()).thenReturn("…")`): the literal is what it must be.
            (Some(b'(' | b')'), _) if self.asserted_after(pos, key, strength, kind) => return None,
            (Some(b':'), Some(b'=')) => Some(2),
            (Some(b'='), Some(b'>')) => Some(2),
            (Some(b'?'), Some(b':')) => return None, // a TypeScript optional field: a type follows
            (Some(b':' | b'='), _) => Some(1),
            _ if bytes[pos..].starts_with("：".as_bytes()) => Some(3),
            _ => None,
        };
        Some(sep)
    }

    /// The text of an element opened by the key (`<password>…</password>`, from `start`): a
    /// secret when the element closes on the same line. Blanks around the text are layout, not
    /// part of it (Maven's `<password>  s3cret  </password>` is `s3cret`).
    pub(crate) fn element_text(&mut self, start: usize, key: &[u8], strength: Strength, kind: SecretKind) {
        let bytes = self.bytes;
        let tag = open_tag(bytes, start).unwrap_or(key);
        let close = run_end_max(bytes, start, MAX_VALUE, |b| b != b'<' && b != b'\n');
        let start = run_end(bytes, start, |b| matches!(b, b' ' | b'\t')).min(close);
        let mut end = close;
        while end > start && matches!(bytes[end - 1], b' ' | b'\t') {
            end -= 1;
        }
        let value = Value::enclosed(start, end, 0, Stop::Code);
        // Closed by a tag (`</password>`), not by the next slot (`<password>&scope=… <client_id>`).
        // A property list's `<key>` names the entry whose value element follows.
        if end > start
            && bytes.get(close) == Some(&b'<')
            && bytes.get(close + 1) == Some(&b'/')
            && !(key.eq_ignore_ascii_case(b"key") && plist_value_follows(bytes, close))
            && value_is_secret(bytes, &value, key, strength, Mode::Literal)
        {
            self.push(kind, start, end);
        } else if let Some((start, end)) = framed_element_text(bytes, value.start, tag) {
            let value = Value {
                start,
                end,
                raw_end: end,
                span_end: end,
                ..value
            };
            if value_is_secret(bytes, &value, key, strength, Mode::Literal) {
                self.push(kind, start, end);
            }
        }
    }

    /// Where the value after the separator (`sep` at `pos`) starts and how it is read; `None`
    /// when there is no value or it was judged here (a glued `key:value`, a netrc line).
    pub(crate) fn assignment_mode(
        &mut self,
        mut pos: usize,
        sep: Option<usize>,
        site: &KeySite,
    ) -> Option<(usize, Mode)> {
        let bytes = self.bytes;
        let (key, strength, kind, line) = (site.key, site.strength, site.kind, site.line);
        let mode = match sep {
            Some(len) => {
                let after = pos + len;
                pos = skip_space(bytes, after);
                // An INI value continued on the next, indented line (`password =` NEWLINE
                // `    …`).
                let next = match bytes.get(pos..) {
                    Some([b'\n', ..]) => pos + 1,
                    Some([b'\r', b'\n', ..]) => pos + 2,
                    _ => pos,
                };
                if next > pos {
                    self.yaml_items_at(after, next, site);
                }
                if next > pos
                    && matches!(bytes.get(next), Some(b' ' | b'\t'))
                    && indented_deeper(bytes, after, next)
                {
                    pos = skip_space(bytes, next);
                }
                if bytes.get(pos) == Some(&b'[') {
                    self.array_items_at(pos, site);
                }
                let spaced_after = pos > after;
                let glued_colon =
                    bytes[after - 1] == b':' && !site.spaced_before && !spaced_after && !site.quoted_key;
                if glued_colon && !matches!(bytes.get(pos), Some(b'"' | b'\'' | b'`')) {
                    // `key:value` glued is an ARN, URN or path segment more often than a
                    // mapping: only a random-looking value without further colons counts, or a
                    // generated one (`passwords:Prl23Db#@`: both cases, digits and a symbol
                    // no path or name holds, no bracket of a call), as after a weak key's `=`.
                    let value = Value::parse(bytes, pos, Stop::Code)?;
                    let v = value.text(bytes);
                    // (Named parts around the symbol, `AppTier#Backend3`, `UserSettings#V2`, are a
                    // label's words and a version's few characters.)
                    let generated = v.len() >= 8
                        && crate::judge::generated(v)
                        && !named_parts(v)
                        && !bytes[value.start..value.raw_end]
                            .iter()
                            .any(|b| b"()[]{}<>".contains(b))
                        && !is_placeholder(v);
                    if !v.contains(&b':')
                        && (value_is_secret(bytes, &value, key, strength, Mode::Prose)
                            || generated
                            || self.user_slash_password(&value, key, strength))
                    {
                        self.push(kind, value.start, value.whole_end(bytes));
                    }
                    return None;
                }
                if site.flag
                    || (bytes[pos - 1] == b'='
                        && !site.spaced_before
                        && !spaced_after
                        && (shell_line(line) || all_caps(key) || npm_scope(trim_ascii(line))))
                {
                    Mode::Literal
                } else {
                    Mode::Code
                }
            }
            // `<add key="ApiSecret" value="…" />`
            None if site.spaced_before && bytes[pos..].starts_with(b"value=") => {
                pos += b"value=".len();
                Mode::Code
            }
            None if site.spaced_before && pos < bytes.len() && bytes[pos] != b'\n' => {
                if site.flag || env_command_line(line) {
                    Mode::Literal
                } else if netrc_line(line) {
                    if let Some(v) = Value::parse(bytes, pos, Stop::Blank)
                        && !is_placeholder(v.text(bytes))
                    {
                        self.push(SecretKind::CredentialFile, v.start, v.whole_end(bytes));
                    }
                    return None;
                } else {
                    pos = skip_fillers(bytes, pos);
                    Mode::Prose
                }
            }
            None => return None,
        };
        Some((pos, mode))
    }

    /// `PW:admin/Xq9…`, `User/Password admin/Xq9…`: a user and its password after a password's
    /// word, glued by a colon or in prose, as notes write them; the password after the one slash
    /// is judged (a path's last segment is a word or a file name, no password).
    fn user_slash_password(&self, value: &Value, key: &[u8], strength: Strength) -> bool {
        let v = value.text(self.bytes);
        let names_password = password_key(key)
            || key.eq_ignore_ascii_case(b"pass")
            || key.len() >= 2 && key[key.len() - 2..].eq_ignore_ascii_case(b"pw");
        // (The key is asked before the value is split and its password judged.)
        if !names_password || strength != Strength::Strong {
            return false;
        }
        let Some(at) = user_password(v, b'/') else {
            return false;
        };
        let user = &v[..at - 1];
        if v[at..].contains(&b'/')
            || user.is_empty()
            || !user
                .iter()
                .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        {
            return false;
        }
        let password = Value {
            start: value.start + at,
            ..*value
        };
        value_is_secret(self.bytes, &password, key, strength, Mode::Prose)
    }

    /// The key and strength a list's items are judged under, when the key ends with its secret
    /// word (`password`, `api_keys`; `PRIVATE_KEY_OPS` lists operations): under a password's
    /// plural each item is a password (`passwords:`); under other plurals (`secrets`, `tokens`,
    /// `imagePullSecrets`) items often name secrets, and count only when generated.
    fn item_key<'k>(site: &KeySite<'k>) -> Option<(&'k [u8], Strength)> {
        const WORDS: Words = words_from!(&[
            b"password",
            b"passwd",
            b"passphrase",
            b"pwd",
            b"secret",
            b"token",
            b"key",
            b"credential",
            b"creds",
        ]);
        // A list of weak, common or banned passwords (a validator's dictionary) or of samples
        // names no one's credentials.
        const DICTIONARY: Words = words_from!(&[
            b"common",
            b"weak",
            b"banned",
            b"blocked",
            b"blacklist",
            b"blocklist",
            b"forbidden",
            b"leaked",
            b"breached",
            b"compromised",
            b"known",
            b"popular",
            b"bad",
            b"disallowed",
            b"invalid",
            b"sample",
            b"example",
            b"test",
            b"dummy",
            b"fake",
        ]);
        let key = site.key;
        let one = key
            .strip_suffix(b"s")
            .or_else(|| key.strip_suffix(b"S"))
            .unwrap_or(key);
        let ends = |k: &[u8]| WORDS.iter().any(|w| ends_with_ci(k, w));
        if !ends(key) && !ends(one) || DICTIONARY.iter().any(|w| contains_ci(key, w)) {
            return None;
        }
        if one.len() < key.len() && password_key(one) {
            return Some((one, Strength::Strong));
        }
        Some((key, site.strength))
    }

    /// A YAML sequence under the key whose separator ends at `after` (`passwords:` NEWLINE `  -
    /// "…"`), its first item's line at `next`: each plain item, up to [`LIST_ITEMS`], is a value of
    /// the key (an item that opens a mapping, `- name: …`, is none).
    fn yaml_items_at(&mut self, after: usize, next: usize, site: &KeySite) {
        let bytes = self.bytes;
        let indent = |k: usize| run_end(bytes, k, |b| b == b' ' || b == b'\t') - k;
        let key_indent = indent(line_start_of(bytes, after));
        let column = indent(next);
        if bytes[after - 1] != b':' || column < key_indent || !bytes[next + column..].starts_with(b"- ") {
            return;
        }
        let Some((key, strength)) = Self::item_key(site) else {
            return;
        };
        let mut line = next;
        for _ in 0..LIST_ITEMS {
            if indent(line) != column || !bytes[line + column..].starts_with(b"- ") {
                return;
            }
            let at = skip_blank(bytes, line + column + 2);
            if let Some(value) = Value::parse(bytes, at, Stop::Code)
                && !matches!(bytes.get(value.whole_end(bytes)), Some(b':'))
                && !value.text(bytes).ends_with(b":")
                && value_is_secret(bytes, &value, key, strength, Mode::Code)
            {
                self.push(site.kind, value.start, value.whole_end(bytes));
            }
            line = line_end(bytes, line) + 1;
            if line >= bytes.len() {
                return;
            }
        }
    }

    /// An array of strings under the key, its `[` at `open` (`"passwords": ["…", "…"]`, on one
    /// line or many): each quoted item, up to [`LIST_ITEMS`], is a value of the key.
    fn array_items_at(&mut self, open: usize, site: &KeySite) {
        let bytes = self.bytes;
        let Some((key, strength)) = Self::item_key(site) else {
            return;
        };
        let mut q = open + 1;
        for _ in 0..LIST_ITEMS {
            q = run_end(bytes, q, |b| b.is_ascii_whitespace());
            if !matches!(bytes.get(q), Some(b'"' | b'\'')) {
                return;
            }
            let Some(value) = Value::parse(bytes, q, Stop::Code) else {
                return;
            };
            if value_is_secret(bytes, &value, key, strength, Mode::Code) {
                self.push(site.kind, value.start, value.whole_end(bytes));
            }
            let end = value.whole_end(bytes);
            q = run_end(
                bytes,
                end + usize::from(bytes.get(end) == Some(&value.quote)),
                |b| b.is_ascii_whitespace(),
            );
            if bytes.get(q) != Some(&b',') {
                return;
            }
            q += 1;
        }
    }

    /// `ID/PW(admin/Xq9…)`, `ID PW admin Xq9…`, `(ID&PWD):admin/Xq9…`: after a label naming an id
    /// and a password together (the password's key at `kstart..kend`, `ID` and one of `/`, `&`,
    /// a blank before it), a user and its password, as notes write an account; the password
    /// judged as a word after a password's.
    fn id_password_pair_at(&mut self, kstart: usize, kend: usize, key: &[u8]) {
        let bytes = self.bytes;
        let before = &bytes[kstart.saturating_sub(4)..kstart];
        let labelled = matches!(before, [.., i, d, b'/' | b'&' | b' '] if [*i, *d].eq_ignore_ascii_case(b"id"))
            && (before.len() == 3 || !before[0].is_ascii_alphanumeric());
        if !labelled
            || !(password_key(key) || key.eq_ignore_ascii_case(b"pass") || key.eq_ignore_ascii_case(b"pw"))
        {
            return;
        }
        // Between the label and the user: `:`, `(`, `)`, `->`, `=`, blanks.
        let user_start = run_end_max(bytes, kend, 4, |b| {
            matches!(b, b':' | b'(' | b')' | b'-' | b'>' | b'=' | b' ')
        });
        self.account_at(user_start, |b| matches!(b, b'/' | b':' | b' '), false);
    }

    /// `10.0.4.12 (admin/Xq9…)`: a host's address, then an account in parentheses, a user, a
    /// slash and its password, as notes write a box's login; the password judged as a word after
    /// a password's (`(eth0/Gateway)` names an interface and a word).
    fn host_account_at(&mut self, i: usize) {
        let bytes = self.bytes;
        let mut p = i;
        for k in 0..4 {
            let e = run_end_max(bytes, p, 3, |b| b.is_ascii_digit());
            if e == p || k < 3 && bytes.get(e) != Some(&b'.') {
                return;
            }
            p = e + usize::from(k < 3);
        }
        let open = skip_blank(bytes, p);
        if bytes.get(open) == Some(&b'(') {
            self.account_at(open + 1, |b| b == b'/', true);
        }
    }

    /// A user from `user_start`, a separator of `sep`'s bytes (up to four) and its password,
    /// pushed when the password is judged one after a password's word; `pairs`: more pairs may
    /// follow after a comma.
    fn account_at(&mut self, user_start: usize, sep: impl Fn(u8) -> bool, pairs: bool) {
        let bytes = self.bytes;
        let user_end = run_end(bytes, user_start, |b| {
            b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'@')
        });
        if user_end == user_start || user_end - user_start > 64 {
            return;
        }
        // Between the user and the password: `/`, `//` or `:`, blanks around, or one blank.
        let sep_end = run_end_max(bytes, user_end, 4, sep);
        if sep_end == user_end {
            return;
        }
        let Some(password) = Value::parse(bytes, sep_end, Stop::Blank) else {
            return;
        };
        // The whole run, less the parenthesis or comma that closes the pair; in `pairs`, up to
        // the first (another pair may follow: `(ops/Xq9…,root/Lm4…)`). A run longer than the
        // judged window is judged on its head, and redacted whole.
        let whole = if password.cut {
            password.end
        } else {
            password.whole_end(bytes)
        };
        let run = &bytes[password.start..whole];
        let closes = |b: &u8| matches!(b, b')' | b',');
        let pw = match run.iter().position(closes) {
            Some(k) if pairs => &run[..k],
            _ => trim_end_of(run, |b| closes(&b)),
        };
        // (A head cut with no closer in it runs on.)
        let runs_on = password.cut && pw.len() == run.len();
        let password = Value {
            end: password.start + pw.len(),
            ..password
        };
        if !pw.is_empty()
            && pw != &bytes[user_start..user_end]
            && value_is_secret(bytes, &password, b"password", Strength::Strong, Mode::Prose)
        {
            let end = if runs_on {
                password.whole_end(bytes)
            } else {
                password.end
            };
            self.push(SecretKind::Assignment, password.start, end);
        }
    }

    /// `creds: admin / Xq9…`, `password: deploy / Xq9…`: a user, a slash between blanks and its
    /// password after a password's or credentials' word, as notes and chats write them; the
    /// password after the slash, judged as a word after a password's (`read / write` are words).
    fn spaced_user_slash_password(&self, value: &Value, key: &[u8], strength: Strength) -> Option<Value> {
        let bytes = self.bytes;
        let user = value.text(bytes);
        // (`credentials` is weak as a plural is, but names one account's pair as often.)
        let creds = contains_ci(key, b"cred");
        let names_account = password_key(key)
            || key.eq_ignore_ascii_case(b"pass")
            || key.len() >= 2 && key[key.len() - 2..].eq_ignore_ascii_case(b"pw");
        if !(creds || names_account && strength == Strength::Strong)
            || value.quoted
            || value.raw_end != value.end
            || user.is_empty()
            || !user
                .iter()
                .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'@'))
            || bytes.get(value.end..value.end + 3) != Some(b" / ")
        {
            return None;
        }
        let password = Value::parse(bytes, skip_blank(bytes, value.end + 3), Stop::Blank)?;
        let pw = password.text(bytes);
        (!password.quoted
            && pw != user
            && !pw.contains(&b'/')
            && value_is_secret(bytes, &password, key, Strength::Strong, Mode::Prose))
        .then_some(password)
    }

    /// `SECRET = os.getenv("NAME", "…")`: an environment lookup assigned to a secret's variable
    /// (its key `key`); the lookup's literal default is that secret wherever the variable is
    /// unset, as when the looked-up name says so (see [`Scan::env_default_at`]).
    fn assigned_env_default(&mut self, value: &Value, key: &[u8], strength: Strength) {
        let bytes = self.bytes;
        let Some(open) = bytes[value.start..value.raw_end].iter().position(|&b| b == b'(') else {
            return;
        };
        let name = value.start + open + 2;
        let Some(&quote) = bytes.get(name - 1).filter(|b| matches!(b, b'"' | b'\'')) else {
            return;
        };
        let end = run_end_max(bytes, name, 128, |b| b != quote && b != b'\n');
        if bytes.get(end) == Some(&quote) {
            self.env_default_at(name, end, key, strength);
        }
    }

    /// The value starting at `pos`, read in `mode`, and whether it is the key's secret.
    pub(crate) fn assigned_value(&mut self, pos: usize, mode: Mode, site: &KeySite) {
        let bytes = self.bytes;
        let (key, strength, line, colon) = (site.key, site.strength, site.line, site.colon);
        let stop = if mode == Mode::Literal {
            Stop::Blank
        } else {
            Stop::Code
        };
        let Some(mut value) = Value::parse(bytes, pos, stop) else {
            return;
        };
        let mut kind = site.kind;
        let mut mode = mode;
        // `"Authorization": "token …"`: the scheme word inside the quotes is not the secret.
        if value.quoted {
            let v = value.text(bytes);
            if let Some(space) = v.iter().position(|&b| b == b' ')
                && is_auth_scheme(&v[..space])
            {
                value.start += space + 1;
                kind = SecretKind::AuthHeader;
            }
        }
        // `Authorization: Bearer <token>`: the scheme word is not the secret. In a sentence
        // there is no header (`the secret key used in production`: `key` is no scheme there).
        if !value.quoted
            && mode != Mode::Prose
            && is_auth_scheme(value.text(bytes))
            && matches!(bytes.get(value.end), Some(b' '))
        {
            let Some(v) = Value::parse(bytes, skip_blank(bytes, value.end), Stop::Blank) else {
                return;
            };
            // `token_type=Bearer expires_in=3600`: the next field, not a token.
            if next_field_pair(v.text(bytes)) {
                return;
            }
            value = v;
            kind = SecretKind::AuthHeader;
            mode = Mode::Literal;
        }
        // `Authorization: Bearer ACCESS_TOKEN`: the credential's name where it goes.
        if kind == SecretKind::AuthHeader && constant_like(value.text(bytes)) {
            return;
        }
        // `key: !!binary <base64>`: YAML's tag says how the value is written; the value follows.
        if !value.quoted
            && value.text(bytes) == b"!!binary"
            && matches!(bytes.get(value.raw_end), Some(b' ' | b'\t'))
            && let Some(v) = Value::parse(bytes, skip_blank(bytes, value.raw_end), Stop::Blank)
        {
            value = v;
        }
        if mode == Mode::Code && !value.quoted {
            self.assigned_env_default(&value, key, strength);
        }
        if mode == Mode::Prose {
            kind = SecretKind::Prose;
        }
        // A value longer than the judged window is judged by its head; a JWT's example marker
        // ends its signature (`…2K19EXAMPLE`), past the window: the whole token tells. The token
        // is its run of base64url and dots, read only after a head opening as one (`eyJ`): a key
        // repeated with no end to its value costs no more than its head.
        if value.cut && bytes[value.start..].starts_with(b"eyJ") {
            let token = run_end_max(bytes, value.start, MAX_SPAN, |b| b64url(b) || b == b'.');
            if crate::judge::jwt_sketch(&bytes[value.start..token]) {
                return;
            }
        }
        if value_is_secret(bytes, &value, key, strength, mode)
            // (`pwd` in prose is the shell's command more often: `pwd src/app`.)
            || mode == Mode::Prose
                && !key.eq_ignore_ascii_case(b"pwd")
                && self.user_slash_password(&value, key, strength)
        {
            self.push(kind, value.start, value.whole_end(bytes));
        } else if mode == Mode::Prose
            && value.quoted
            && strength == Strength::Strong
            && password_key(key)
            && value.text(bytes).len() >= 4
            && quoted_word(value.text(bytes))
            && !is_placeholder(value.text(bytes))
            && !crate::judge::in_locale_entry(bytes, value.start)
        {
            // `the password is "centipede"`: quoting in a sentence marks the literal password.
            self.push(kind, value.start, value.whole_end(bytes));
        } else if mode == Mode::Code
            && strength == Strength::Strong
            && colon
            && owned_in_prose(line)
            && passphrase_word(bytes, &value)
        {
            // `my password: correcthorsebatterystaple`: a sentence names its owner's secret.
            self.push(SecretKind::Prose, value.start, value.whole_end(bytes));
        } else if mode == Mode::Code
            && strength == Strength::Strong
            && colon
            && password_key(key)
            // (Before the key: a list's `-`, or a diff's `+` opening an added line.)
            && trim_ascii(line).iter().all(|&b| matches!(b, b'-' | b'+' | b' ' | b'\t'))
            && letters_password(bytes, &value, key)
            && !(crate::judge::password_entry_key(key) && crate::judge::named_slot(value.text(bytes), key))
        {
            // `password: SuperSecretPassword` on a line of its own: YAML config, not a schema.
            self.push(kind, value.start, value.whole_end(bytes));
        } else if mode == Mode::Code
            && strength == Strength::Strong
            && !colon
            && password_key(key)
            && statement_start(line)
            && config_literal(bytes, &value, key)
        {
            // `password = open_sesame`: a config line's literal.
            self.push(kind, value.start, value.whole_end(bytes));
        } else if mode != Mode::Literal
            && let Some(password) = self.spaced_user_slash_password(&value, key, strength)
        {
            self.push(kind, password.start, password.whole_end(bytes));
        }
    }

    /// A literal compared with or passed to the key (`password == "…"`, `secret !== '…'`,
    /// `secret("…")`, the operator at `pos`): the literal is what the secret must be. Only a
    /// quoted literal counts; a variable compared with another is code.
    pub(crate) fn compared_at(&mut self, pos: usize, key: &[u8], strength: Strength, kind: SecretKind) {
        let bytes = self.bytes;
        let call = bytes[pos] == b'(';
        let ops = run_end_max(bytes, pos, 3, |b| matches!(b, b'=' | b'!' | b'('));
        let at = skip_blank(bytes, ops);
        if !matches!(bytes.get(at), Some(b'"' | b'\'')) {
            return;
        }
        let Some(value) = Value::parse(bytes, at, Stop::Code) else {
            return;
        };
        let closed = matches!(
            bytes.get(skip_blank(bytes, value.end + 1)),
            Some(b')' | b',' | b';')
        );
        if call && !closed {
            return;
        }
        self.compared_literal(&value, key, strength, kind);
    }

    /// A quoted literal a test matches against the key's getter or member, read from `pos` after
    /// the key: its empty call's `()`, then the closing parentheses, then a matcher that takes
    /// the expected value (`, equalTo("…")`, `, is("…")`, `, "…")`, `.toBe("…")`, `.toEqual("…")`,
    /// `.isEqualTo("…")`, `.thenReturn("…")`, `.willReturn("…")`, `.Returns("…")`). Whether it
    /// found one.
    pub(crate) fn asserted_after(
        &mut self,
        pos: usize,
        key: &[u8],
        strength: Strength,
        kind: SecretKind,
    ) -> bool {
        const MATCHERS: [&[u8]; 10] = [
            b"equalto(",
            b"is(",
            b"eq(",
            b"tobe(",
            b"toequal(",
            b"tostrictequal(",
            b"isequalto(",
            b"thenreturn(",
            b"willreturn(",
            b"returns(",
        ];
        let bytes = self.bytes;
        let mut p = pos;
        if bytes[p..].starts_with(b"()") {
            p += 2;
        }
        // Closed as the argument of `expect(…)` or `when(…)` before a chained matcher; still
        // open as the first of `assertThat(…, …)` before a comma.
        let closing = run_end_max(bytes, p, 2, |b| b == b')');
        let chained = closing > p;
        p = skip_blank(bytes, closing);
        let at = match bytes.get(p) {
            Some(b',') if !chained => {
                let q = skip_blank(bytes, p + 1);
                // A bare literal after the comma only in an assertion's arguments
                // (`assertEquals(cfg.getPassword(), "…")`): elsewhere it is another argument
                // (`new SecretKeySpec(secret.getBytes(), "HmacSHA256")`).
                let line = line_before(bytes, pos);
                match MATCHERS[..3].iter().find_map(|m| eat_ci(bytes, q, m)) {
                    Some(e) => skip_blank(bytes, e),
                    None if contains_ci(line, b"assert") => q,
                    None => return false,
                }
            }
            Some(b'.') if chained => match MATCHERS.iter().find_map(|m| eat_ci(bytes, p + 1, m)) {
                Some(e) => skip_blank(bytes, e),
                None => return false,
            },
            _ => return false,
        };
        if !matches!(bytes.get(at), Some(b'"' | b'\'')) {
            return false;
        }
        let Some(value) = Value::parse(bytes, at, Stop::Code) else {
            return false;
        };
        if bytes.get(skip_blank(bytes, value.end + 1)) != Some(&b')') {
            return false;
        }
        self.compared_literal(&value, key, strength, kind);
        true
    }

    /// `"…" == password`, `'…' !== secret`: the quoted literal before a comparison with the key.
    pub(crate) fn compared_before(
        &mut self,
        kstart: usize,
        key: &[u8],
        strength: Strength,
        kind: SecretKind,
    ) {
        let bytes = self.bytes;
        let mut p = kstart;
        while p > 0 && bytes[p - 1] == b' ' {
            p -= 1;
        }
        let op_end = p;
        while p > 0 && op_end - p < 3 && matches!(bytes[p - 1], b'=' | b'!') {
            p -= 1;
        }
        if !matches!(&bytes[p..op_end], b"==" | b"===" | b"!=" | b"!==") {
            return;
        }
        while p > 0 && bytes[p - 1] == b' ' {
            p -= 1;
        }
        if let Some(value) = literal_ending_at(bytes, p) {
            self.compared_literal(&value, key, strength, kind);
        }
    }

    /// `assertEquals("…", cfg.getPassword())`: an assertion's expected literal first, then the
    /// key's getter as its actual value (JUnit's order; [`Scan::asserted_after`] reads the
    /// literal after it). The key spans `[kstart, kend)`.
    pub(crate) fn expected_before(
        &mut self,
        kstart: usize,
        kend: usize,
        key: &[u8],
        strength: Strength,
        kind: SecretKind,
    ) {
        let bytes = self.bytes;
        // The getter called with nothing, closing the assertion.
        if !bytes[kend..].starts_with(b"()") || bytes.get(skip_blank(bytes, kend + 2)) != Some(&b')') {
            return;
        }
        // Its receiver (`cfg.`, `this.props.`), then the comma after the literal.
        let mut p = kstart
            - run_back(&bytes[..kstart], |b| {
                b.is_ascii_alphanumeric() || b == b'_' || b == b'.'
            });
        p -= run_back(&bytes[..p], |b| b == b' ');
        if p == 0 || bytes[p - 1] != b',' {
            return;
        }
        p -= 1;
        p -= run_back(&bytes[..p], |b| b == b' ');
        let Some(value) = literal_ending_at(bytes, p) else {
            return;
        };
        // The literal opens the assertion's arguments (`assertEquals(`, `assertThat(`).
        let head = trim_end_of(&bytes[..value.start - 1], |b| b == b' ');
        let call = head.strip_suffix(b"(").unwrap_or(b"");
        let name =
            &call[call.len() - run_back(call, |b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')..];
        if !contains_ci(name, b"assert") {
            return;
        }
        self.compared_literal(&value, key, strength, kind);
    }

    pub(crate) fn compared_literal(
        &mut self,
        value: &Value,
        key: &[u8],
        strength: Strength,
        kind: SecretKind,
    ) {
        let bytes = self.bytes;
        let v = value.text(bytes);
        // A comparison's literal must look like a secret of its own: `password == "admin"` is
        // a test of a default, `token != "undefined"` a guard.
        let shaped = v.len() >= 6
            && !uuid(v)
            && (generated(v) || looks_random(v, 8) || has_digit(v) || has_symbol(v) || compared_word(v, key));
        if shaped && value_is_secret(bytes, value, key, strength, Mode::Code) {
            self.push(kind, value.start, value.whole_end(bytes));
        }
    }

    /// An LDIF value in base64 after `::` (`userPassword:: e1NTSEF9…`, `olcRootPW:: …`, as
    /// ldapsearch and slapcat print a password or its hash) of a key naming a password: the base64
    /// is the secret, with the lines it wraps onto (each starts with a space).
    pub(crate) fn ldif_base64_at(&mut self, pos: usize, key: &[u8], kind: SecretKind) {
        let bytes = self.bytes;
        let pw = key.len() >= 2 && key[key.len() - 2..].eq_ignore_ascii_case(b"pw");
        if !(pw || password_key(key)) || bytes.get(pos) != Some(&b' ') {
            return;
        }
        let start = skip_blank(bytes, pos);
        let ends = |e: usize| bytes.get(e).is_none_or(u8::is_ascii_whitespace);
        let mut end = run_end_max(bytes, start, MAX_VALUE, b64);
        let mut len = end - start;
        if len < 8 || !ends(end) || !mixed_case(&bytes[start..end]) || is_placeholder(&bytes[start..end]) {
            return;
        }
        for _ in 0..64 {
            let next = match bytes.get(end..) {
                Some([b'\n', b' ', ..]) => end + 2,
                Some([b'\r', b'\n', b' ', ..]) => end + 3,
                _ => break,
            };
            let e = run_end_max(bytes, next, MAX_VALUE, b64);
            if e == next || !ends(e) {
                break;
            }
            len += e - next;
            end = e;
        }
        // Base64 is padded to whole quadruples: prose after `password::` is not.
        if len.is_multiple_of(4) {
            self.push(kind, start, end);
        }
    }

    // --- anchored on punctuation ---------------------------------------------------------------

    /// `-----BEGIN … PRIVATE KEY-----` through its END line, or an END line with the body above.
    /// The four-dash armors of older tools (`----BEGIN RSA PRIVATE KEY----`, SSH2's
    /// `---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----`) run to the end of their body.
    pub(crate) fn pem_at(&mut self, i: usize) {
        let bytes = self.bytes;
        if i > 0 && bytes[i - 1] == b'-' {
            return; // only the first dash of a run starts a line
        }
        let dashes = run_end_max(bytes, i, 16, |b| b == b'-');
        let four = dashes - i == 4;
        let armor: &[u8] = if four { b"----" } else { b"-----" };
        let open = if four && bytes.get(dashes) == Some(&b' ') {
            dashes + 1
        } else {
            dashes
        };
        let (begin, after) = if let Some(e) = eat_ci(bytes, open, b"begin ") {
            (true, e)
        } else if let Some(e) = eat_ci(bytes, open, b"end ") {
            (false, e)
        } else {
            return;
        };
        let words = run_end_max(bytes, after, 64, |b| b.is_ascii_alphanumeric() || b == b' ');
        // Its words may stand a blank or more apart (no-break spaces copied from a page).
        let trim = |l: &'t [u8]| trim_end_of(l, |b| b == b' ');
        let mut label = &bytes[after..words];
        if four {
            label = label.strip_suffix(b" ").unwrap_or(label);
        }
        let label = label.strip_suffix(b" BLOCK").map_or(label, trim);
        let head = &label[..label.len().saturating_sub(3)];
        // `PRIVATE KEY` in any flavour; a key's label with no standard form (`RSA KEY`, `EC KEY`)
        // names the private half unless it says public.
        let named_private = ends_with_ci(trim(head), b"private");
        let private = ends_with_ci(label, b"key")
            && head.last() == Some(&b' ')
            && (named_private
                || label.len() >= 6
                    && !contains_ci(label, b"public")
                    && head
                        .iter()
                        .all(|&b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b' '));
        if !private {
            return;
        }
        if !bytes[words..].starts_with(armor) || four && bytes.get(words + 4) == Some(&b'-') {
            return;
        }
        let mut eol = line_end(bytes, words);
        // A block written on one line (a JSON string with `\n` escapes) ends on it.
        if begin && !four {
            let from = words + armor.len();
            if self.pem_end_after(from).is_some_and(|k| k < eol) {
                eol = from;
            }
        }
        if begin && eat_ci(bytes, words + armor.len(), b"-----end ").is_some() {
            self.covered = self.covered.max(eol);
            return; // BEGIN glued to END: an empty block
        }
        if begin && four {
            let mut end = base64_block_end(bytes, eol);
            let next = skip_blank(bytes, end + 1);
            if bytes[end.min(bytes.len())..].starts_with(b"\n") && bytes[next..].starts_with(b"----") {
                end = line_end(bytes, next);
            }
            self.push(SecretKind::PrivateKey, i, end);
        } else if begin {
            let end = match self.pem_end_after(eol) {
                Some(e) => {
                    // A block with no key in it (`BEGIN … anything … END`, `… <key> …`) is a
                    // format's illustration: a key's body is hundreds of base64 bytes, and
                    // even a fragment of one (a PGP checksum line, `=8xQN`) has digits or `+/=`.
                    let prefix = &bytes[line_start_of(bytes, i)..i];
                    // Under a label with no standard form, a body with no line of a key's
                    // base64 (words, a sentence about the format) is an illustration too.
                    let body = &bytes[eol.min(e)..e];
                    if pem_illustration(body)
                        || prefixed_pem_illustration(body, prefix)
                        || !named_private && !base64_run(body, 24)
                    {
                        self.covered = self.covered.max(line_end(bytes, e));
                        return;
                    }
                    line_end(bytes, e)
                }
                None => {
                    // A header quoted in code or a message (`startsWith("-----BEGIN RSA
                    // PRIVATE KEY-----")`) with no body after it: a key's body is lines of
                    // base64. A header alone on its line may be a key cut short, and stays one.
                    let end = base64_block_end(bytes, eol);
                    // A quote escaped inside a string (`regexReplaceAll \"-----BEGIN …-----\"`) too,
                    // and a regular expression's closing slash (`/-----BEGIN RSA PRIVATE KEY-----/`).
                    let quoted = matches!(bytes.get(words + armor.len()), Some(b'"' | b'\'' | b'`' | b'/'))
                        || bytes[words + armor.len()..].starts_with(b"\\\"");
                    if quoted && !base64_run(&bytes[words + armor.len()..end], 24) {
                        // Its body may follow as quoted strings (Go's `"…" +`, C's adjacent
                        // strings, a Python tuple): then the key goes on to their end.
                        let body = quoted_body_end(bytes, eol);
                        if body == eol {
                            self.covered = self.covered.max(eol);
                            return;
                        }
                        body
                    } else {
                        // Lines below with no key in them (`abab…`, `anything`): the format's
                        // illustration cut before its END line, as an ended one is.
                        let body = &bytes[eol.min(end)..end];
                        let prefix = &bytes[line_start_of(bytes, i)..i];
                        if body.iter().any(u8::is_ascii_alphanumeric)
                            && (pem_illustration(body) || prefixed_pem_illustration(body, prefix))
                        {
                            self.covered = self.covered.max(end);
                            return;
                        }
                        end
                    }
                }
            };
            self.push(SecretKind::PrivateKey, i, end);
        } else {
            let start = base64_block_start(bytes, i);
            self.push(SecretKind::PrivateKey, start, eol);
        }
    }

    /// The first `-----end ` within [`MAX_PEM`] bytes after `from`. A prompt of BEGIN lines asks
    /// this once per line: the last answer is kept, so the text is searched once, not once per
    /// line.
    pub(crate) fn pem_end_after(&mut self, from: usize) -> Option<usize> {
        const NEEDLE: &[u8] = b"-----end ";
        let limit = self.bytes.len().min(from + MAX_PEM);
        let known = (self.pem_end.from, self.pem_end.to, self.pem_end.found);
        if known.0 <= from && from <= known.1 {
            match known.2 {
                Some(e) if e >= from => return (e + NEEDLE.len() <= limit).then_some(e),
                None if known.1 >= limit => return None,
                None => {
                    // Nothing in `[from, to)`: only the rest of the window is new (less the
                    // needle's length, so a match across `to` is not missed).
                    let resume = known.1.saturating_sub(NEEDLE.len() - 1).max(from);
                    return self.pem_search(from, resume, limit);
                }
                Some(_) => {}
            }
        }
        self.pem_search(from, from, limit)
    }

    pub(crate) fn pem_search(&mut self, from: usize, resume: usize, limit: usize) -> Option<usize> {
        let found = find_ci(&self.bytes[..limit], resume, b"-----end ");
        let to = found.map_or(limit, |e| e + b"-----end ".len());
        self.pem_searched += to.saturating_sub(resume);
        self.pem_end = PemEnd { from, to, found };
        found
    }

    /// `scheme://user:password@host`: the password is the span. The userinfo ends at the last `@`
    /// of the authority (`admin:P@ss@db`), and a `/` after `user:` that does not end a port
    /// (`default:ab/Cd9+@redis`) is part of a password. A token alone as the user
    /// (`https://<token>@github.com`) is a credential too.
    pub(crate) fn url_credentials_at(&mut self, i: usize) {
        let bytes = self.bytes;
        let scheme_end = i.checked_sub(1).and_then(|p| bytes.get(p));
        if !scheme_end.is_some_and(|&b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-')) {
            return;
        }
        let start = i + 3;
        let mut pos = start;
        let mut colon = None;
        let mut at = None;
        loop {
            if pos - i > 512 {
                break; // no userinfo is this long
            }
            let Some(c) = char_at(self.text, pos) else { break };
            match c {
                '@' => at = Some(pos),
                // A path starts, unless `user:` is followed by what is not a port: then the
                // `/` is inside a password, up to its `@`.
                '/' => {
                    let in_password = at.is_none()
                        && colon.is_some_and(|c: usize| {
                            let after = &bytes[c + 1..pos];
                            !after.is_empty() && !after.iter().all(u8::is_ascii_digit)
                        });
                    if !in_password {
                        break;
                    }
                }
                // Characters that cannot appear in a URL end it, so `"http://h:1","u":"a@b"` in
                // JSON is not read as one userinfo.
                '"' | '<' | '>' | '`' | '\'' => break,
                ':' if colon.is_none() => colon = Some(pos),
                _ if is_js_space(c) => break,
                _ => {}
            }
            pos += c.len_utf8();
        }
        let Some(at) = at else { return };
        let host_follows =
            char_at(self.text, at + 1).is_some_and(|c| c.is_alphanumeric() || c == '[' || c == '_');
        // Our own marker in place of a token user is not a `user:password`.
        if !host_follows || bytes[start..at].starts_with(b"[REDACTED:") {
            return;
        }
        match colon.filter(|&c| c < at) {
            Some(c) => {
                if let Some(p) = user_password(&bytes[start..at], b':') {
                    self.push(SecretKind::UrlCredentials, start + p, at);
                } else if bytes[c + 1..at].eq_ignore_ascii_case(b"x-oauth-basic") {
                    // GitHub's fixed password word: the token is the user.
                    self.token_user(start, c);
                }
            }
            None => self.token_user(start, at),
        }
    }

    /// A data source name with no scheme, as Go's MySQL driver writes it
    /// (`app:password@tcp(db:3306)/shop`, `root:password@unix(/run/mysqld.sock)/`): the password
    /// between the user's colon and the `@` before the protocol is the span, judged as a URL's
    /// userinfo is.
    pub(crate) fn dsn_credentials_at(&mut self, at: usize) {
        let bytes = self.bytes;
        let rest = &bytes[at + 1..];
        if ![&b"tcp("[..], b"tcp6(", b"udp(", b"unix("]
            .iter()
            .any(|p| rest.starts_with(p))
        {
            return;
        }
        // No userinfo is longer than this.
        let window = &bytes[at.saturating_sub(256)..at];
        let start = at
            - run_back(window, |b| {
                !(b.is_ascii_whitespace() || matches!(b, b'"' | b'\'' | b'`' | b'=' | b'(' | b',' | b'>'))
            });
        let userinfo = &bytes[start..at];
        let user = userinfo.iter().position(|&b| b == b':').map(|c| &userinfo[..c]);
        if !user
            .is_some_and(|u| !u.is_empty() && u.iter().all(|&b| word_class(b) || matches!(b, b'.' | b'-')))
        {
            return;
        }
        if let Some(p) = user_password(userinfo, b':') {
            self.push(SecretKind::UrlCredentials, start + p, at);
        }
    }

    /// A URL's user that is a token (`https://<token>@host`): long and random.
    pub(crate) fn token_user(&mut self, start: usize, end: usize) {
        let user = &self.bytes[start..end];
        if user.len() >= 20 && user.iter().all(|&b| word_class(b) || b == b'-') && looks_random(user, 20) {
            self.push(SecretKind::UrlCredentials, start, end);
        }
    }

    /// A password hash in crypt's `$id$[params$]salt$hash` form, as good as the password to an
    /// offline attack: bcrypt (`$2b$12$` + 53), md5-crypt (`$1$`, Apache's `$apr1$`), sha256- and
    /// sha512-crypt (`$5$`, `$6$`), yescrypt (`$y$`), scrypt (`$7$`), argon2 (`$argon2id$v=19$…`).
    pub(crate) fn crypt_hash_at(&mut self, i: usize) {
        let bytes = self.bytes;
        let id_end = run_end_max(bytes, i + 1, 9, |b| b.is_ascii_alphanumeric());
        let hash_len = match &bytes[i + 1..id_end] {
            b"1" | b"apr1" => 22..=22,
            b"5" | b"y" | b"gy" | b"7" => 43..=43,
            b"6" => 86..=86,
            b"2a" | b"2b" | b"2y" | b"2x" => 53..=53,
            b"argon2i" | b"argon2d" | b"argon2id" => 22..=128,
            // Cisco's type 8 (PBKDF2-SHA256) and type 9 (scrypt) secrets.
            b"8" | b"9" => 43..=43,
            b"krb5asrep" | b"krb5tgs" => return self.kerberos_hash_at(i, id_end),
            _ => return,
        };
        self.crypt_fields(i, id_end, hash_len);
    }

    /// A Kerberos AS-REP or TGS-REP hash as cracking tools print it
    /// (`$krb5asrep$23$user@realm:<checksum hex>$<encrypted hex>`): the password is one offline
    /// attack away. The span runs through the last hex field.
    pub(crate) fn kerberos_hash_at(&mut self, i: usize, id_end: usize) {
        let bytes = self.bytes;
        let line = line_end_max(bytes, id_end, 1024).unwrap_or(bytes.len().min(id_end + 1024));
        let Some(last) = bytes[id_end..line].iter().rposition(|&b| b == b'$') else {
            return;
        };
        let start = id_end + last + 1;
        let end = run_end_max(bytes, start, MAX_SPAN, hex);
        if end - start >= 64 && !token_continues_at(self.text, end) {
            self.push(SecretKind::PasswordHash, i, end);
        }
    }

    /// Django's and Werkzeug's `algorithm[:params]$…$hash`: `pbkdf2_sha256$600000$salt$…`,
    /// `pbkdf2:sha256:600000$salt$…`, `scrypt:32768:8:1$salt$…`, `argon2$argon2id$…`,
    /// `bcrypt_sha256$$2b$…`, the hash at least a SHA-1's length; Django's legacy
    /// `sha1$salt$<40 hex>` and `md5$salt$<32 hex>`.
    pub(crate) fn crypt_word_at(&mut self, i: usize) {
        let bytes = self.bytes;
        // Each id's head rules out most words.
        let head = &bytes[i..];
        if ![&b"sha1"[..], b"md5", b"pbkdf2", b"scrypt", b"argon2", b"bcrypt"]
            .iter()
            .any(|id| head.starts_with(id))
        {
            return;
        }
        let id_end = run_end_max(bytes, i, 24, |b| {
            b.is_ascii_alphanumeric() || b == b'_' || b == b':'
        });
        let id = &bytes[i..id_end];
        let hash_len = match id {
            b"sha1" => 40..=40,
            b"md5" => 32..=32,
            _ if id
                .get(..6)
                .is_some_and(|id| matches!(id, b"pbkdf2" | b"scrypt" | b"argon2" | b"bcrypt")) =>
            {
                27..=128
            }
            _ => return,
        };
        self.crypt_fields(i, id_end, hash_len);
    }

    /// The `$`-separated fields of a hash from `i` whose id ends at `id_end`: at least two, the
    /// last the hash, random-looking (`…$xxxx…` is a stand-in) and of a length in `hash_len` (a
    /// docker-compose `$$` doubles each `$`).
    pub(crate) fn crypt_fields(
        &mut self,
        i: usize,
        id_end: usize,
        hash_len: std::ops::RangeInclusive<usize>,
    ) {
        let bytes = self.bytes;
        let mut field = id_end;
        let mut fields = 0;
        while bytes.get(field) == Some(&b'$') && fields < 8 {
            let start = run_end_max(bytes, field, 2, |b| b == b'$');
            let end = run_end_max(bytes, start, 128, crypt_byte);
            fields += 1;
            if bytes.get(end) != Some(&b'$') {
                // A `,` is argon2's parameters' and a sentence's, never the hash's last byte.
                let end = start + trim_end_of(&bytes[start..end], |b| b == b',').len();
                if fields >= 2
                    && hash_len.contains(&(end - start))
                    && !token_continues_at(self.text, end)
                    && looks_random(&bytes[start..end], 12)
                    // A hash that says it is made up (`$2a$10$fakefn2U…fake9…`) is a stand-in.
                    && !fake_words(&bytes[i..end])
                {
                    self.push(SecretKind::PasswordHash, i, end);
                }
                return;
            }
            field = end;
        }
    }

    /// An LDAP `userPassword` hash: `{SHA}`, `{SSHA}`, `{SHA256}` … `{SSHA512}`, `{MD5}`, `{SMD5}`
    /// and the base64 of a digest (and a 4–16 byte salt) of its length, or `{CRYPT}` and a DES
    /// crypt (`{CRYPT}$6$…` is crypt's own form, found at its `$`). The span is the hash.
    pub(crate) fn ldap_hash_at(&mut self, i: usize) {
        let bytes = self.bytes;
        let name_end = run_end_max(bytes, i + 1, 8, |b| b.is_ascii_alphanumeric());
        if bytes.get(name_end) != Some(&b'}') {
            return;
        }
        let mut buf = [0; 16];
        let name = lower(&bytes[i + 1..name_end], &mut buf);
        let salted = name.starts_with(b"ss") || name.starts_with(b"smd");
        let digest = match &name[usize::from(salted)..] {
            b"md5" => 16,
            b"sha" => 20,
            b"sha256" => 32,
            b"sha384" => 48,
            b"sha512" => 64,
            b"crypt" if !salted => 0,
            _ => return,
        };
        // Base64 of `n` bytes, without and with its padding; DES crypt is 13 characters.
        let len = |n: usize| (4 * n).div_ceil(3)..=n.div_ceil(3) * 4;
        let range = match (digest, salted) {
            (0, _) => 13..=13,
            (n, false) => len(n),
            (n, true) => *len(n + 4).start()..=*len(n + 16).end(),
        };
        let start = name_end + 1;
        let end = run_end_max(bytes, start, 128, |b| b64(b) || b == b'.');
        let hash = &bytes[start..end];
        // A digest's base64 has a digit, `+` or `/` somewhere and no run of words in it
        // (`{SSHA}ThisIsNotAHashJustSomeLongerText`, `{MD5}PlaceholderValueHere12==`).
        let base64 = digest == 0
            || hash.iter().any(|&b| b.is_ascii_digit() || b == b'+' || b == b'/') && !camel_words(hash);
        if range.contains(&(end - start))
            && !token_continues_at(self.text, end)
            && base64
            && looks_random(hash, 12)
        {
            self.push(SecretKind::PasswordHash, start, end);
        }
    }

    /// Terraform Cloud: 14 alphanumerics, `.atlasv1.`, 60–70 base64url characters.
    pub(crate) fn terraform_at(&mut self, i: usize) {
        let bytes = self.bytes;
        let Some(start) = i.checked_sub(14) else { return };
        if !bytes[start..i].iter().all(u8::is_ascii_alphanumeric)
            || start > 0 && bytes[start - 1].is_ascii_alphanumeric()
        {
            return;
        }
        let body = i + ".atlasv1.".len();
        let end = run_end_max(bytes, body, 71, b64url);
        if (60..=70).contains(&(end - body)) && !word_at(self.text, end) && !fabricated(&bytes[body..end]) {
            self.push(SecretKind::Vendor("terraform_token"), start, end);
        }
    }

    /// Azure AD client secret: 3 characters, a digit, `Q~`, then 31–34 characters.
    pub(crate) fn azure_ad_at(&mut self, i: usize) {
        let bytes = self.bytes;
        if i < 5 || bytes[i - 1] != b'Q' || !bytes[i - 2].is_ascii_digit() {
            return;
        }
        let class = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'~' | b'.' | b'-');
        let start = i - 5;
        if !bytes[start..i - 2].iter().all(|&b| class(b)) || start > 0 && class(bytes[start - 1]) {
            return;
        }
        let end = run_end_max(bytes, i + 1, 35, class);
        let body = &bytes[i + 1..end];
        if (31..=34).contains(&(end - i - 1)) && !fabricated(body) && !crate::chars::few_kinds(body) {
            self.push(SecretKind::Vendor("azure_client_secret"), start, end);
        }
    }

    // --- anchored at the start of a line -------------------------------------------------------

    /// The line at `s` (its start `i`) under a command that prints a stored secret (see
    /// [`secret_printer`]): the secret alone on the line right after the command, or the
    /// `"value"` member of the JSON document it prints.
    fn printed_at(
        &mut self,
        i: usize,
        s: usize,
        at: usize,
        (printed, strength): (Printed, Strength),
        left: u8,
    ) {
        let bytes = self.bytes;
        let end = line_end(bytes, s);
        let t = trim_ascii(&bytes[s..end]);
        match printed {
            Printed::Line if i == at => {
                // One token: a message, a document or the next prompt is not the secret.
                let token = (6..=256).contains(&t.len())
                    && !t.iter().any(u8::is_ascii_whitespace)
                    && !matches!(t[0], b'{' | b'[' | b'<' | b'"' | b'\'' | b'$');
                if token
                    && !(strength == Strength::Weak && crate::commands::printed_id(t))
                    && let Some(value) = Value::parse(bytes, s, Stop::Blank)
                    && value_is_secret(bytes, &value, b"password", strength, Mode::Literal)
                {
                    self.push(SecretKind::CommandLine, value.start, value.whole_end(bytes));
                }
            }
            Printed::JsonValue if left > 0 => {
                // The document closes at its line's start.
                if s == i && t.starts_with(b"}") {
                    return;
                }
                if let Some(name) = [&b"\"value\""[..], b"\"Value\""]
                    .into_iter()
                    .find(|m| t.starts_with(m))
                    && let colon = skip_blank(bytes, s + name.len())
                    && bytes.get(colon) == Some(&b':')
                {
                    if let Some(value) = Value::parse(bytes, skip_blank(bytes, colon + 1), Stop::Code)
                        && value.quoted
                        && !(strength == Strength::Weak && crate::commands::printed_id(value.text(bytes)))
                        && value_is_secret(bytes, &value, b"password", strength, Mode::Literal)
                    {
                        self.push(SecretKind::CommandLine, value.start, value.whole_end(bytes));
                    }
                    return;
                }
                self.printed = Some((end + 1, printed, strength, left - 1));
            }
            _ => {}
        }
    }

    pub(crate) fn line_start(&mut self, i: usize) {
        let bytes = self.bytes;
        let s = skip_blank(bytes, i);
        // What a command that reads a stored secret printed under it.
        if let Some((at, printed, strength, left)) = self.printed.take() {
            self.printed_at(i, s, at, (printed, strength), left);
        }
        if let Some((printed, strength)) = secret_printer(bytes, s) {
            self.printed = Some((line_end(bytes, s) + 1, printed, strength, 40));
        }
        if matches!(bytes.get(s), Some(b'M' | b'b')) && pem_body_at(bytes, s) {
            let end = base64_block_end(bytes, s);
            self.push(SecretKind::PrivateKey, s, end);
        }
        // A PuTTY `.ppk` file: the private lines and their MAC (the public lines are public).
        if bytes[s..].starts_with(b"Private-Lines:") {
            let body = line_end(bytes, s);
            let mut end = base64_block_end(bytes, body);
            if end < bytes.len() && bytes[end + 1..].starts_with(b"Private-MAC:") {
                end = line_end(bytes, end + 1);
            }
            self.push(SecretKind::PrivateKey, s, end);
        }
        // `.pgpass` and `/etc/shadow` lines: five or nine `:`-separated fields.
        if let Some((fields, n)) = colon_fields(bytes, s) {
            let found = match n {
                5 => pgpass(bytes, &fields).map(|span| (SecretKind::CredentialFile, span)),
                9 => shadow(bytes, &fields).map(|span| (SecretKind::PasswordHash, span)),
                _ => None,
            };
            if let Some((kind, (start, end))) = found {
                self.push(kind, start, end);
            }
        }
        // A row of a CSV, TSV or markdown table whose header named a secret column.
        if let Some(table) = self.table
            && !line_end_max(bytes, s, MAX_SPAN).is_some_and(|e| self.table_row(s, e, table))
        {
            self.table = None;
        }
    }
}

/// A key found by the scan and what surrounds it, carried from reading its separator to judging
/// its value.
pub(crate) struct KeySite<'a> {
    pub(crate) key: &'a [u8],
    pub(crate) strength: Strength,
    pub(crate) kind: SecretKind,
    /// Read after a command's flag: the value is a literal.
    pub(crate) flag: bool,
    /// The line before the key.
    pub(crate) line: &'a [u8],
    /// Blanks between the key and its separator.
    pub(crate) spaced_before: bool,
    /// The key was quoted (`"password": …`).
    pub(crate) quoted_key: bool,
    /// The separator is a lone `:`.
    pub(crate) colon: bool,
}

/// Where a keyword's value starts after the key ending at `kend`: the operator's start, the
/// value's start and whether an operator stands between; `None` when what follows is no value.
pub(crate) fn keyword_operand(bytes: &[u8], kend: usize, generic: bool) -> Option<(usize, usize, bool)> {
    let mut p = kend;
    // A quoted key's closing quote, then blanks, an operator of up to three bytes (`=`, `:`,
    // `:=`, `=>`, `?=`, `::=`, `.=`, `,`, `>`), blanks and an opening quote.
    if matches!(bytes.get(p), Some(b'"' | b'\'' | b'`')) {
        p += 1;
    }
    // `secret[] = …`, `char secret[25] = …`: an array's size is part of the declaration.
    if bytes.get(p) == Some(&b'[') {
        let close = run_end_max(bytes, p + 1, 6, |b| b.is_ascii_digit());
        if bytes.get(close) == Some(&b']') {
            p = close + 1;
        }
    }
    let blank = |b: &u8| matches!(b, b' ' | b'\t');
    while bytes.get(p).is_some_and(blank) {
        p += 1;
    }
    // A typed declaration's type (`dbPassword string = …`, `password: &str = …`,
    // `secretKey: String = …`) stands between the key and its `=`.
    if generic && let Some(eq) = declared_type_end(bytes, p) {
        p = eq;
    }
    let op = p;
    // Ruby's and JavaScript's `||=` and `&&=` (set unless set) are no pipe.
    let or_set = bytes[op..].starts_with(b"||=") || bytes[op..].starts_with(b"&&=");
    if or_set {
        p += 3;
    }
    // Any run of operator bytes (`=`, `:=`, `?=`, `::=`, `:::=`, `.=`, `=>`, `<-`, `,`, `>`,
    // `==`, `!==`), or a dash between blanks (`auth token - …`).
    while !or_set
        && p - op < 4
        && matches!(
            bytes.get(p),
            Some(b'=' | b':' | b'>' | b'?' | b',' | b'.' | b'|' | b'!' | b'<')
        )
    {
        p += 1;
    }
    if p == op && bytes.get(p) == Some(&b'-') && p > kend && bytes.get(p + 1).is_some_and(blank) {
        p += 1;
    }
    if bytes[op..p].starts_with(b"<<") || bytes[op..p].starts_with(b"|") && !or_set {
        return None; // a here-string or a pipe feeds a command, which its own rule reads
    }
    if matches!(&bytes[op..p], b"?" | b".") {
        return None; // a query string's or a member's separator, not an operator
    }
    if bytes.get(op..op + 2) == Some(b"<-") {
        p = op + 2;
    } else if bytes[op..p] == *b"<" {
        p = op; // an opening tag's `<` is not an operator
    }
    let has_operator = p > op;
    if p == kend {
        return None; // glued to the key: part of a word
    }
    while bytes.get(p).is_some_and(blank) {
        p += 1;
    }
    // An INI value continued on the next, indented line (`password =\n    …`).
    if has_operator {
        let next = match bytes.get(p..) {
            Some([b'\n', ..]) => p + 1,
            Some([b'\r', b'\n', ..]) => p + 2,
            _ => p,
        };
        if next > p && bytes.get(next).is_some_and(blank) && indented_deeper(bytes, op, next) {
            p = next;
            while bytes.get(p).is_some_and(blank) {
                p += 1;
            }
        }
    }
    Some((op, p, has_operator))
}

/// Whether the line starting at `next` is indented deeper than the line holding `at`: an INI
/// value continued there, not the next entry at the same depth (a diff's ` KEY=` lines, whose
/// first column is read as a blank).
fn indented_deeper(bytes: &[u8], at: usize, next: usize) -> bool {
    let from = at.saturating_sub(256);
    let start = bytes[from..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(from, |k| from + k + 1);
    let indent = |k: usize| run_end(bytes, k, |b| b == b' ' || b == b'\t') - k;
    indent(next) > indent(start)
}

/// Whether `at` is in the `encryptedData` mapping of a Bitnami SealedSecret (`kind:
/// SealedSecret` in the 8 KB around): each value there is encrypted with the cluster
/// controller's public key, made to be committed, and no credential.
fn sealed_data(bytes: &[u8], at: usize) -> bool {
    const MAPPING: &[u8] = b"encryptedData:";
    let from = at.saturating_sub(8192);
    let Some(p) = bytes[from..at]
        .windows(MAPPING.len())
        .rposition(|w| w == MAPPING)
        .map(|p| from + p)
    else {
        return false;
    };
    let indent = |k: usize| run_end(bytes, k, |b| b == b' ') - k;
    let mapping_start = line_start_of(bytes, p);
    let column = indent(mapping_start);
    if p != mapping_start + column {
        return false;
    }
    // Every line from the mapping's to the value's is inside it (indented deeper, or blank).
    let mut line = line_end(bytes, p) + 1;
    while line <= at && line < bytes.len() {
        let text = line + indent(line);
        if text > at {
            break;
        }
        if !matches!(bytes.get(text), None | Some(b'\n' | b'\r')) && text - line <= column {
            return false;
        }
        line = line_end(bytes, line) + 1;
    }
    let around = &bytes[from..bytes.len().min(at + 8192)];
    around.windows(18).any(|w| w == b"kind: SealedSecret")
}

/// The most items of a list under a secret's key that are read: a key lists a few values, not a
/// document.
const LIST_ITEMS: usize = 16;

/// Nouns that name a flag in prose (`the zip -P option is insecure`): never its value.
const FLAG_NOUNS: [&[u8]; 6] = [b"flag", b"option", b"switch", b"argument", b"parameter", b"param"];

/// Whether a keyword's value of a provider's least length (16) may follow the key ending at
/// `kend` ([`keyword_operand`], then [`KEYWORD_TOKEN`] bytes): only quotes, blanks, line breaks,
/// operator bytes and dashes stand between a key and its value, so the value cannot reach 16
/// bytes past `kend` unless the run of value bytes after those does. Most words are followed by a
/// short word, and no operand is read.
pub(crate) fn keyword_value_may_follow(bytes: &[u8], kend: usize) -> bool {
    const LIMIT: usize = 64;
    static BETWEEN: [bool; 256] = {
        let mut t = [false; 256];
        let mut k = 0;
        let bytes = b"\"'` \t\n\r=:>?,.|!<-";
        while k < bytes.len() {
            t[bytes[k] as usize] = true;
            k += 1;
        }
        t
    };
    let r = run_end_max(bytes, kend, LIMIT, |b| BETWEEN[usize::from(b)]);
    if r - kend >= 16 {
        return true;
    }
    // Most often a blank ends the next word. The 16 bytes from `kend` read as one number, each
    // byte below `!` gets a mark (the subtraction's borrow may also mark a `!` right after a
    // marked byte; neither is a value byte): a mark at or after `r` rules the value out.
    if let Some(window) = bytes.get(kend..kend + 16) {
        const ONES: u128 = u128::MAX / 255;
        let w = u128::from_le_bytes(window.try_into().unwrap_or_default());
        let blank = w.wrapping_sub(ONES * 0x21) & !w & (ONES * 0x80);
        if blank & (u128::MAX << (8 * (r - kend))) != 0 {
            return false;
        }
    }
    run_end_max(bytes, r, 16, |b| KEYWORD_TOKEN[usize::from(b)]) - kend >= 16
}

/// Where a keyword's value starts, carried from reading the operator to reading the value.
pub(crate) struct KeywordOperand {
    /// The operator's start.
    pub(crate) op: usize,
    /// The value's start (past an opening quote).
    pub(crate) start: usize,
    pub(crate) has_operator: bool,
    /// The value's opening quote.
    pub(crate) quote: Option<u8>,
}

/// Where a key's text ends: past a closing quote (and the `]` of `config['SECRET_KEY']`) and
/// an array's size (`secret[25]`).
pub(crate) fn key_tail_end(bytes: &[u8], kend: usize) -> usize {
    let mut pos = kend;
    if matches!(bytes.get(pos), Some(b'"' | b'\'' | b'`')) {
        pos += 1;
        // `config['SECRET_KEY'] = …`
        if bytes.get(pos) == Some(&b']') {
            pos += 1;
        }
    }
    // `char secret[25] = "…"`, `secret[] = "…"`: an array's size is part of the declaration.
    if bytes.get(pos) == Some(&b'[') {
        let close = run_end_max(bytes, pos + 1, 6, |b| b.is_ascii_digit());
        if bytes.get(close) == Some(&b']') {
            pos = close + 1;
        }
    }
    pos
}

/// Where a name/value pair's value is: after its field's word (`value: …`, `value="…"`), or
/// as the text of its `<value>` element.
pub(crate) enum NamedValue {
    Field(usize),
    Element(usize),
}

/// A generated token on a line that speaks of a key, token, password, secret or credential with
/// no syntax tying them together (`the new one for oopspam is a9Px…7t — does the SDK cache the
/// old key?`). Only lines no other rule found anything on are read, each at most 4 KiB, and only
/// tokens that look generated count: letters and digits mixed, 20 to 256 long, high entropy, not
/// a hex digest of a commit or a SHA-256, not a UUID, not in a path, URL or file name, not on a
/// line about public keys, fingerprints, hashes or integrity.
///
/// `name_words`, when given, are the only word starts that may name a secret (see
/// [`may_name_secret`]): the pass reads those instead of every byte.
/// Whether the line before `op` is an entry's title: quoted (`"Generic Password"`), or words
/// opening the line behind list or comment marks, the first capitalised (`* Service token`), not
/// an identifier (`HEROKU_API_KEY`) nor words inside a sentence (`my api key`).
pub(crate) fn entry_title_before(bytes: &[u8], op: usize) -> bool {
    // Read back from `op` only as far as the answer needs (the blanks, the title, the marks before
    // it), never to the line's start: a long line of `key - ` pairs would read it back per key.
    let in_line = |class: fn(u8) -> bool| move |b: u8| b != b'\n' && class(b);
    let end = op - run_back(&bytes[..op], in_line(|b| b.is_ascii_whitespace()));
    if matches!(bytes[..end].last(), Some(b'"' | b'\'')) {
        return true;
    }
    let start = end - run_back(&bytes[..end], in_line(|b| b.is_ascii_alphanumeric() || b == b' '));
    let name = bytes[start..end].trim_ascii_start();
    let marks = |b: u8| b.is_ascii_whitespace() || matches!(b, b'#' | b'/' | b'*' | b'-' | b'+' | b';');
    name.first().is_some_and(u8::is_ascii_uppercase)
        && name.get(1).is_some_and(u8::is_ascii_lowercase)
        && bytes[..start - run_back(&bytes[..start], in_line(marks))]
            .last()
            .is_none_or(|&b| b == b'\n')
}

/// Whether a key ending at `kend` stands as a pair's name may: quoted, in its element, in a
/// list or at its line's end (not in running code).
pub(crate) fn name_like_at(bytes: &[u8], kend: usize) -> bool {
    bytes.get(kend).is_none_or(|b| b"\"'`<\n\r,".contains(b))
}

pub(crate) fn same_line_tokens(bytes: &[u8], found: &mut Vec<Finding>, name_words: Option<&[usize]>) -> bool {
    const NOT: Words = words_of!(
        b"public publishable fingerprint commit sha sha1 sha256 sha384 sha512 checksum digest hash hashes integrity \
        ssh-rsa ssh-ed25519 ecdsa-sha2-nistp256 gpg pgp"
    );
    // A digest labelled by its algorithm (`sha384-oqVu…`, a subresource integrity value) speaks
    // of a hash as the word does.
    let named = |w: &[u8]| NOT.iter().any(|n| w.eq_ignore_ascii_case(n));
    // Only a digest's algorithm labels it so, and a digest follows, not a word of four letters or
    // more (`public-api`, `hash-router` name a service, and a token on their line is still a
    // token); the digest's base64 may open with `+`, `/` or a few letters before one.
    let labelled = |w: &[u8]| {
        let mut parts = w.splitn(2, |&b| b == b'-');
        let (head, rest) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
        head.len() >= 3
            && head[..3].eq_ignore_ascii_case(b"sha")
            && named(head)
            && !(rest.len() >= 4 && rest.iter().all(|b| b.is_ascii_lowercase() || *b == b'-'))
    };
    // `_` and `.` join a key's parts: `access_token_version` is a key (judged by the key rules),
    // not the word `token`.
    let word_byte = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.');
    // `found` is sorted by start: `reach` is the furthest end of those that start before a line
    // ends, so a line is taken when it reaches past the line's start.
    let before = found.len();
    let (mut next, mut reach) = (0, 0);
    // One pass: most words start no name, one byte decides; a line holding a name is read
    // once, and the pass goes on after it.
    // Per byte: 1 for a word's byte, 2 for a name's first letter (a table: this pass reads
    // every byte of every prompt).
    const CLASS: [u8; 256] = {
        let mut t = [0u8; 256];
        let mut b = 0;
        while b < 256 {
            let c = b as u8;
            if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.') {
                t[b] = 1;
            }
            if matches!(c | 0x20, b'k' | b't' | b'p' | b's' | b'c' | b'a' | b'r') {
                t[b] |= 2;
            }
            b += 1;
        }
        t
    };
    let mut k = 0;
    let mut listed = name_words.map(|w| w.iter());
    while k < bytes.len() {
        if let Some(words) = &mut listed {
            match words.find(|&&w| w >= k) {
                Some(&w) => k = w,
                None => break,
            }
        }
        let class = CLASS[usize::from(bytes[k])];
        if class & 1 == 0 {
            let name = bytes[k] >= 0x80 && foreign_name_at(bytes, k);
            if !name {
                // Character by character through other scripts: a name may start at any.
                k = if bytes[k] >= 0x80 {
                    run_end(bytes, k + 1, |c| (0x80..0xc0).contains(&c))
                } else {
                    run_end(bytes, k + 1, |c| c < 0x80 && CLASS[usize::from(c)] & 1 == 0)
                };
                continue;
            }
        }
        // A word starts at `k` (the pass goes from word to word): its first 12 bytes are the
        // word a name is looked for in, and the rest of it starts nothing.
        let run = run_end(bytes, k + 1, |c| CLASS[usize::from(c)] & 1 == 1);
        let word = &bytes[k..run.min(k + 12)];
        let names = class & 1 == 0
            || class == 3 && (may_name_secret(word) && names_secret(word) || other_name(word))
            || accented_name(bytes, k, run);
        if !names {
            k = run;
            continue;
        }
        let start = memchr::memrchr(b'\n', &bytes[..k]).map_or(0, |p| p + 1);
        let end = find_byte(b'\n', &bytes[k..]).map_or(bytes.len(), |p| k + p);
        while next < before && found[next].start < end {
            reach = reach.max(found[next].end);
            next += 1;
        }
        let line = &bytes[start..end];
        let about_public =
            || line.split(|&c| !word_byte(c)).any(|w| named(w) || labelled(w)) || go_sum_hash(line);
        // (The line's words are read for a public word's only when a token was found.)
        if reach <= start && line.len() <= 4096 {
            let tokens = found.len();
            line_tokens(line, start, found, rotate_it_at(bytes, k, run));
            if line.trim_ascii_end().ends_with(b":") {
                labelled_value(bytes, end, found);
            }
            if found.len() > tokens && about_public() {
                found.truncate(tokens);
            }
        }
        k = end;
    }
    found.len() > before
}

/// A Go checksum line's hash (`… v1.1.2/go.mod h1:<base64 of SHA-256>=`): a module's name may
/// hold a secret word (`securecookie`, `oauth2`), the hash after it is no token.
fn go_sum_hash(line: &[u8]) -> bool {
    memchr::memmem::find_iter(line, b" h1:").any(|at| {
        let hash = &line[at + 4..];
        hash.len() >= 44 && hash[43] == b'=' && hash[..43].iter().all(|&b| b64(b))
    })
}

/// The text of an element whose end tag (`</key>`) stands on a later line than its start tag,
/// each line framed alike (`<token>` / `    abc…` / `</token>`; each line a JSON string of a
/// notebook cell, `", "    abc…\n", "</token>`; or behind a log line's prefix): the one token
/// among the lines after the framing the end tag's line has, where the framings have the same
/// shape (digits for digits, letters for letters, the rest the same). Every other line is
/// blank or framing only.
pub(crate) fn framed_element_text(bytes: &[u8], start: usize, key: &[u8]) -> Option<(usize, usize)> {
    let limit = bytes.len().min(start + 512);
    // The lines (real ones, or `\n` escapes in a string) up to the end tag, at most eight.
    let mut pieces = [(start, start); 8];
    let (mut n, mut from, mut j) = (0, start, start);
    loop {
        if j >= limit {
            return None;
        }
        let brk = match bytes[j] {
            b'\n' => 1,
            b'\\' if bytes.get(j + 1) == Some(&b'n') => 2,
            b'<' => {
                let closes = bytes.get(j + 1) == Some(&b'/')
                    && bytes[j + 2..].starts_with(key)
                    && bytes.get(j + 2 + key.len()) == Some(&b'>');
                if !closes || n < 2 {
                    return None;
                }
                break;
            }
            _ => 0,
        };
        if brk > 0 {
            if n == pieces.len() {
                return None;
            }
            pieces[n] = (from, j);
            n += 1;
            from = j + brk;
            j = from;
            continue;
        }
        j += 1;
    }
    let frame = &bytes[from..j];
    let shape = |b: u8| {
        if b.is_ascii_digit() {
            b'0'
        } else if b.is_ascii_alphabetic() {
            b'a'
        } else {
            b
        }
    };
    let framed = |p: &[u8]| p.iter().zip(frame).all(|(&a, &b)| shape(a) == shape(b));
    let mut token = None;
    for &(ps, pe) in &pieces[..n] {
        let piece = &bytes[ps..pe];
        if piece.trim_ascii().is_empty() || piece.len() <= frame.len() && framed(piece) {
            continue;
        }
        let skip = if framed(piece) { frame.len() } else { 0 };
        let text = &bytes[ps + skip..pe];
        let t = text.trim_ascii();
        if token.is_some()
            || t.is_empty()
            || t.iter()
                .any(|b| b.is_ascii_whitespace() || matches!(b, b'"' | b'\'' | b'<' | b'>'))
        {
            return None;
        }
        let s = ps + skip + text.len() - text.trim_ascii_start().len();
        token = Some((s, s + t.len()));
    }
    token
}

/// The name of the start tag that ends right before `pos` (`<string>`, `<password id="x">`): the
/// element a value's end tag closes, which a property list's `<key>` does not name.
fn open_tag(bytes: &[u8], pos: usize) -> Option<&[u8]> {
    let head = &bytes[pos.saturating_sub(128)..pos].strip_suffix(b">")?;
    let lt = head.iter().rposition(|&b| b == b'<')?;
    let tag = &head[lt + 1..];
    let name = &tag[..tag.iter().position(u8::is_ascii_whitespace).unwrap_or(tag.len())];
    (!name.is_empty() && name.iter().all(|&b| is_key_byte(b) || b == b':')).then_some(name)
}

/// Whether a key ends with a file name's extension (`deploy-secret.yml`, `app_secrets.json`).
pub(crate) fn file_name_key(key: &[u8]) -> bool {
    const EXTENSIONS: Words = words_of!(b"yml yaml json txt ini toml xml cfg conf properties log");
    let Some(dot) = key.iter().rposition(|&b| b == b'.') else {
        return false;
    };
    dot > 0 && EXTENSIONS.iter().any(|e| key[dot + 1..].eq_ignore_ascii_case(e))
}

/// A generated token alone on its line below a label line that names a secret (an installer's
/// banner: `Please use the following password to proceed to installation:`, a blank line, the
/// password), the label ending at `end`; at most two blank lines between them.
pub(crate) fn labelled_value(bytes: &[u8], end: usize, found: &mut Vec<Finding>) {
    let mut s = end;
    for _ in 0..3 {
        if bytes.get(s) != Some(&b'\n') {
            return;
        }
        let e = bytes[s + 1..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(bytes.len(), |p| s + 1 + p);
        let line = &bytes[s + 1..e];
        let token = line.trim_ascii();
        if !token.is_empty() {
            // One token of the same-line pass's alphabet: a URL, a path or a sentence is not one.
            let one_token = token
                .iter()
                .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-'));
            if one_token && token.len() <= 256 && generated_token(token) {
                let at = s + 1 + line.len() - line.trim_ascii_start().len();
                found.push(Finding {
                    kind: SecretKind::Prose,
                    start: at,
                    end: at + token.len(),
                });
            }
            return;
        }
        s = e;
    }
}

/// The generated tokens on a line starting at `start` that names a secret, pushed to `found`.
/// Whether the word `bytes[k..run]` that names a credential on its line says the value will be
/// rotated or revoked (`I'll rotate it`, `revoke it after the demo`): only a credential is, so
/// an id's shape on the line (a UUID, bare hex) is one too. `rotate the logs` or `rotated the
/// image` say nothing of a value.
fn rotate_it_at(bytes: &[u8], k: usize, run: usize) -> bool {
    let word = &bytes[k..run];
    (word.eq_ignore_ascii_case(b"rotate") || word.eq_ignore_ascii_case(b"revoke"))
        && bytes[run..].starts_with(b" it")
        && bytes.get(run + 3).is_none_or(|b| !b.is_ascii_alphanumeric())
}

/// A UUID or a run of 32 to 64 hex digits: an id's shape, a credential's too where the line says
/// so (see [`rotate_it_at`]).
fn id_shaped_token(t: &[u8]) -> bool {
    crate::judge::uuid(t)
        || (32..=64).contains(&t.len())
            && t.iter().all(u8::is_ascii_hexdigit)
            && has_digit(t)
            && t.iter().any(u8::is_ascii_alphabetic)
            && !crate::rules::filler_like(t)
}

/// Whether the word right before an id names the thing it identifies (`post 550e…`, `user
/// 9b1d…`, `git revert 4e12…`): then `rotate it` / `revoke it` speaks of that thing (an image
/// turned, a grant taken back), not of a credential.
fn thing_named_before(before: &[u8]) -> bool {
    let head = before.trim_ascii_end();
    let word = &head[head.len() - run_back(head, |c| c.is_ascii_alphanumeric())..];
    matches!(
        lower(word, &mut [0; 16]),
        b"post"
            | b"user"
            | b"session"
            | b"app"
            | b"application"
            | b"account"
            | b"revert"
            | b"image"
            | b"file"
            | b"item"
            | b"page"
            | b"comment"
            | b"group"
            | b"project"
            | b"role"
            | b"member"
            | b"customer"
            | b"product"
            | b"node"
            | b"photo"
            | b"video"
            | b"article"
            | b"profile"
            | b"checkout"
            | b"cherry"
            | b"sha"
            | b"hash"
    ) || named_id(before, b"")
}

/// `ids`: the line says its value will be rotated (see [`rotate_it_at`]), and an id's shape on
/// it counts.
pub(crate) fn line_tokens(line: &[u8], start: usize, found: &mut Vec<Finding>, ids: bool) {
    let mut t = 0;
    while t < line.len() {
        // A value that fills braces (`{COQLCE6DU6GtcS5P=}`) is a slot or Maven's encrypted form,
        // ciphertext under a master password kept elsewhere: its inside is not read.
        if line[t] == b'{' {
            let close = run_end(line, t + 1, |c| b64(c) || c == b'=');
            if close > t + 1 && line.get(close) == Some(&b'}') {
                t = close + 1;
                continue;
            }
        }
        let te = run_end(line, t, |c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-'));
        if te == t {
            t += 1;
            continue;
        }
        let before_ok = t == 0
            || !matches!(
                line[t - 1],
                b'/' | b'.' | b'@' | b'=' | b':' | b'$' | b'%' | b'&' | b'?' | b'#'
            );
        let after_ok = line.get(te).is_none_or(|c| {
            !(matches!(c, b'/' | b'@' | b'(' | b'[')
                || *c == b'.' && line.get(te + 1).is_some_and(u8::is_ascii_alphanumeric))
        });
        // A token's JSON header cut short on purpose (`"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9..."`),
        // or a JWT's header alone (it names an algorithm, nothing secret): no token. Any other
        // generated run before an ellipsis is a token's first characters, a secret still.
        let elided = line[t..te].starts_with(b"eyJ")
            && (line[te..].starts_with(b"...") || line[te..].starts_with("\u{2026}".as_bytes()));
        if before_ok
            && after_ok
            && !elided
            && !jwt_header(&line[t..te])
            // (The line is searched for `rotate it` only when an id's shape is on it.)
            && (generated_token(&line[t..te])
                || ids && id_shaped_token(&line[t..te]) && !thing_named_before(&line[..t]))
            && !named_id(&line[..t], &line[t..te])
            && !digest_after_key_word(&line[..t], &line[t..te])
        {
            found.push(Finding {
                kind: SecretKind::Prose,
                start: start + t,
                end: start + te,
            });
        }
        t = te;
    }
}

/// Whether the command after the last pipe of `line` (which ends at a flag) is one that reads a
/// password from stdin with that flag: `sudo` (`-S`, `--stdin`) or `passwd` (`--stdin`).
pub(crate) fn piped_to_password_reader(line: &[u8]) -> bool {
    let Some(pipe) = line.iter().rposition(|&b| b == b'|') else {
        return false;
    };
    let command = trim_ascii(&line[pipe + 1..]);
    let word = &command[..run_end(command, 0, |b| b.is_ascii_alphanumeric())];
    word.eq_ignore_ascii_case(b"sudo") || word.eq_ignore_ascii_case(b"passwd")
}

/// A hex digest right after a bare `key` word (`cache key: <md5>`, `etag key <sha1>`): the key's
/// own value, which the key rules judged (a digest is an entry's name there), not a token on a
/// line about keys.
pub(crate) fn digest_after_key_word(before: &[u8], token: &[u8]) -> bool {
    let head = trim_end_of(before, |b| matches!(b, b' ' | b'\t' | b':' | b'=' | b'"' | b'\''));
    let at = head.len() - run_back(head, |b| b.is_ascii_alphanumeric() || b == b'_');
    let word = &head[at..];
    hex_digest(token)
        && bare_key_word(&head[..at], word)
        && secret_word(word).is_some_and(|w| w.strength == Strength::Weak)
}

/// An id the word before a token names (`request 01HZX3…`, `trace-id: …`, `build …`, Sentry's
/// `event …`), `before`
/// being the line up to the token.
pub(crate) fn named_id(before: &[u8], token: &[u8]) -> bool {
    // The name's own quotes and the pair's punctuation (`('ETag', '"…`, `"etag": "\"…`), and an
    // ETag's weak mark (`W/"…`), stand between it and the token.
    let punctuation = |c: u8| c.is_ascii_whitespace() || matches!(c, b'"' | b'\'' | b',' | b'=' | b'\\');
    let head = trim_end_of(before, punctuation);
    let head = trim_end_of(head.strip_suffix(b"W/").unwrap_or(head), punctuation);
    let head = head.strip_suffix(b":").unwrap_or(head).trim_ascii_end();
    let head = trim_end_of(head, |c| matches!(c, b'"' | b'\''));
    let w = head.len()
        - head
            .iter()
            .rev()
            .take_while(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_'))
            .count();
    let prev = &head[w..];
    let last = prev.rsplit(|&c| matches!(c, b'-' | b'_')).next().unwrap_or(prev);
    matches!(
        lower(last, &mut [0; 16]),
        b"id"
            | b"ids"
            | b"request"
            | b"trace"
            | b"span"
            | b"build"
            | b"job"
            | b"run"
            | b"order"
            | b"commit"
            | b"revision"
            | b"ticket"
            | b"issue"
            | b"correlation"
            | b"uuid"
            | b"ulid"
            | b"etag"
            | b"digest"
    ) || matches!(
        lower(last, &mut [0; 16]),
        b"event"
            | b"message"
            | b"transaction"
            | b"txn"
            | b"task"
            | b"pipeline"
            | b"deployment"
            | b"incident"
            | b"alert"
            | b"crash"
            | b"report"
            | b"record"
            | b"object"
            | b"document"
            | b"invoice"
            | b"tenant"
            | b"device"
            | b"instance"
            | b"container"
            | b"execution"
            | b"workflow"
            | b"batch"
            | b"upload"
            | b"attempt"
            | b"operation"
            | b"snapshot"
            | b"release" // The ids these words name are in one case (hex, a UUID, a ULID, `ins-7f3a…`): a run
                         // mixing both after them (`release 2A8Yb3FKaNQy… is my token`) is a generated token.
    ) && !crate::chars::mixed_case(token)
}

/// Words that name a credential on a line without being a key's secret word: `key` in
/// Portuguese, Italian, Spanish and Dutch (`minha chave do Bugsnag é …`), and what is done to a
/// credential (`rotate it`, `revoked`). A line holding one is read by [`same_line_tokens`] as
/// one naming `key` is: only a generated token on it counts.
pub(crate) const OTHER_NAMES: [&[u8]; 12] = [
    b"chave",
    b"chaves",
    b"chiave",
    b"chiavi",
    b"clave",
    b"claves",
    b"sleutel",
    b"sleutels",
    b"rotate",
    b"rotated",
    b"revoke",
    b"revoked",
];

/// Whether `word` is one of [`OTHER_NAMES`], in any case.
pub(crate) fn other_name(word: &[u8]) -> bool {
    (5..=8).contains(&word.len())
        && may_be_other_name(word)
        // Compared in place: most words that open as a name does have another length, and the
        // comparison stops there (folding a copy first cost more than the whole test).
        && OTHER_NAMES.iter().any(|n| n.eq_ignore_ascii_case(word))
}

/// Whether `word` opens as one of [`OTHER_NAMES`] does (`ch`, `cl`, `sl`, `ro`, `re`; a test holds
/// the pairs to the list): most words of a prompt are ruled out before they are measured or folded.
pub(crate) fn may_be_other_name(word: &[u8]) -> bool {
    matches!(
        (word.first().map(|b| b | 0x20), word.get(1).map(|b| b | 0x20)),
        (Some(b'c'), Some(b'h' | b'l')) | (Some(b's'), Some(b'l')) | (Some(b'r'), Some(b'o' | b'e'))
    )
    // The third byte too: most words that open so go on otherwise (`request`, `Response`).
    && word.get(2).is_some_and(|&b| OTHER_THIRDS & (1 << (b & 31)) != 0)
}

/// The third bytes of [`OTHER_NAMES`], as bits of the byte's low five (either case).
const OTHER_THIRDS: u32 = {
    let mut bits = 0;
    let mut k = 0;
    while k < OTHER_NAMES.len() {
        bits |= 1 << (OTHER_NAMES[k][2] & 31);
        k += 1;
    }
    bits
};

/// `clé`/`clés` (French) and `Schlüssel` (German): a word for `key` whose ASCII head `word`
/// (`bytes[k..run]`) stops at an accented letter.
fn accented_name(bytes: &[u8], k: usize, run: usize) -> bool {
    let tail = &bytes[run..];
    let ends = |n: usize| tail.get(n).is_none_or(|b| !b.is_ascii_alphanumeric());
    let head = &bytes[k..run];
    if head.eq_ignore_ascii_case(b"cl") {
        let n = ["\u{e9}", "\u{c9}"]
            .iter()
            .find(|e| tail.starts_with(e.as_bytes()))
            .map(|e| e.len());
        return n.is_some_and(|n| ends(n) || tail.get(n) == Some(&b's') && ends(n + 1));
    }
    head.eq_ignore_ascii_case(b"schl")
        && ["\u{fc}ssel", "\u{dc}SSEL"]
            .iter()
            .any(|e| tail.starts_with(e.as_bytes()) && ends(e.len()))
}

/// A word for a key or token in a script other than Latin at `k` (`APIキーは…`, `密钥`, `令牌`,
/// `ключ`, `토큰`); Japanese `公開鍵` is a public key and names none.
fn foreign_name_at(bytes: &[u8], k: usize) -> bool {
    const NAMES: [&str; 11] = [
        "\u{30ad}\u{30fc}",                    // キー
        "\u{30c8}\u{30fc}\u{30af}\u{30f3}",    // トークン
        "\u{5bc6}\u{94a5}",                    // 密钥
        "\u{79c1}\u{94a5}",                    // 私钥
        "\u{79d8}\u{94a5}",                    // 秘钥
        "\u{4ee4}\u{724c}",                    // 令牌
        "\u{79d8}\u{5bc6}\u{9375}",            // 秘密鍵
        "\u{d1a0}\u{d070}",                    // 토큰
        "\u{d0a4}",                            // 키
        "\u{43a}\u{43b}\u{44e}\u{447}",        // ключ
        "\u{442}\u{43e}\u{43a}\u{435}\u{43d}", // токен
    ];
    let rest = &bytes[k..];
    NAMES.iter().any(|n| rest.starts_with(n.as_bytes()))
}

/// Whether a word may name a secret (see [`names_secret`]): it starts with a name's first letter
/// and is letters holding a secret word's first letters. Most words are ruled out without
/// folding their case.
pub(crate) fn may_name_secret(word: &[u8]) -> bool {
    word.first()
        .is_some_and(|&b| matches!(b | 0x20, b'k' | b't' | b'p' | b's' | b'c' | b'a'))
        && word.iter().all(u8::is_ascii_alphabetic)
        && may_hold_secret_word(word)
}

/// Whether a word on a line names a secret (`key`, `token`, `password`, a strong secret word):
/// a line holding one is read by [`same_line_tokens`].
pub(crate) fn names_secret(word: &[u8]) -> bool {
    matches!(
        lower(word, &mut [0; 16]),
        b"key"
            | b"keys"
            | b"token"
            | b"tokens"
            | b"password"
            | b"passwords"
            | b"secret"
            | b"secrets"
            | b"credential"
            | b"credentials"
            | b"apikey"
            | b"passphrase"
    ) || word.iter().all(u8::is_ascii_alphabetic)
        && secret_word(word).is_some_and(|w| w.strength == Strength::Strong)
}

/// A token that looks generated on its own: see [`same_line_tokens`].
pub(crate) fn generated_token(t: &[u8]) -> bool {
    if !(20..=256).contains(&t.len()) || t.starts_with(b"AAAA") {
        return false;
    }
    let letters = t.iter().any(u8::is_ascii_alphabetic);
    let (lower, upper) = (
        t.iter().any(u8::is_ascii_lowercase),
        t.iter().any(u8::is_ascii_uppercase),
    );
    let hex = t.iter().all(u8::is_ascii_hexdigit);
    if !letters
        || !has_digit(t)
        || uuid(t)
        || hex && matches!(t.len(), 40 | 64 | 128)
        || crate::judge::env_name(t)
    {
        return false;
    }
    if wordy(t)
        || camel_words(t)
        || alphabet(t)
        || is_placeholder(t)
        || crate::judge::public_by_prefix(t)
        || t.iter().filter(|&&b| b == b'-' || b == b'_').count() > 4
    {
        return false;
    }
    let e = entropy(t);
    if lower && upper {
        e >= 3.8
    } else {
        e >= 3.6 && t.len() >= 24 || hex && t.len() == 32
    }
}

/// A function of no arguments returning a quoted literal (`() => '…'`, Python's `lambda: '…'`):
/// under a key naming a secret (`getSecret: () => '…'`) the literal is what the key holds. The
/// literal's quote, or `None` for anything else (`() => process.env.TOKEN`).
fn returned_literal(bytes: &[u8], pos: usize) -> Option<usize> {
    let rest = &bytes[pos..];
    // An `async` function (`async () => '…'`) and a Java or Kotlin one (`() -> "…"`) too, and a
    // blank before Python's colon (`lambda : '…'`).
    let rest = rest.strip_prefix(b"async ").unwrap_or(rest);
    let pos = bytes.len() - rest.len();
    let body = if rest.starts_with(b"()") {
        let arrow = skip_space(bytes, pos + 2);
        (bytes[arrow..].starts_with(b"=>") || bytes[arrow..].starts_with(b"->")).then_some(arrow + 2)?
    } else {
        let colon = skip_space(bytes, pos + rest.starts_with(b"lambda").then_some(6)?);
        (bytes.get(colon) == Some(&b':')).then_some(colon + 1)?
    };
    let quote = skip_space(bytes, body);
    matches!(bytes.get(quote), Some(b'\'' | b'"' | b'`')).then_some(quote)
}

/// A digit or a lowercase hex letter.
fn lower_hex(b: u8) -> bool {
    b.is_ascii_digit() || (b'a'..=b'f').contains(&b)
}

/// Lowercase hex with digits and letters, not typed filler: a generated key's body.
fn random_lower_hex(key: &[u8]) -> bool {
    key.iter().all(|&b| lower_hex(b))
        && has_digit(key)
        && key.iter().any(u8::is_ascii_alphabetic)
        && !crate::rules::filler_like(key)
}

/// Hex after the bare word `key_` on a line about a cache or a store (`restored cache from
/// key_<sha256>`, `idempotency key_<hex> already seen`): the entry's lookup key. Vendors whose
/// keys take that shape cannot be told from it by the token alone; the line tells them apart.
fn lookup_key_digest(line: &[u8], prefix: &[u8], body: &[u8]) -> bool {
    const STORES: Words =
        words_of!(b"cache idempoten dedup lookup redis memcache etag digest checksum sha1 sha256 sha512");
    prefix == b"key_" && body.iter().all(|&b| lower_hex(b)) && STORES.iter().any(|w| contains_ci(line, w))
}

/// Parts around symbols that are named words, with at most a version's few characters beside
/// them (`AppTier#Backend3`, `UserSettings#V2`): a label's, not generated characters.
fn named_parts(v: &[u8]) -> bool {
    let parts = || v.split(|b| !b.is_ascii_alphanumeric()).filter(|p| !p.is_empty());
    let named = |p: &[u8]| crate::chars::name_words(p).is_some();
    parts().any(named) && parts().all(|p| p.len() <= 3 || named(p))
}

/// The single- or double-quoted literal on one line whose closing quote is the byte before `p`.
fn literal_ending_at(bytes: &[u8], p: usize) -> Option<Value> {
    let quote = *bytes.get(p.checked_sub(1)?)?;
    if !matches!(quote, b'"' | b'\'') {
        return None;
    }
    let close = p - 1;
    let from = close.saturating_sub(MAX_VALUE);
    let open = from
        + bytes[from..close]
            .iter()
            .rposition(|&b| b == quote || b == b'\n')?;
    (bytes[open] == quote).then(|| Value::enclosed(open + 1, close, quote, Stop::Code))
}

/// Whether `Basic` at `i` is the scheme of a header, not the adjective before a `name:tag` pair
/// (`basic nginx:1.25-alpine`, `Visual Basic Form1:Load`): spelt as the scheme is, and opening a
/// quoted string or on a line that names an authorization or a header.
#[inline(never)]
fn basic_header_context(bytes: &[u8], i: usize) -> bool {
    if &bytes[i..i + 5] != b"Basic" {
        return false;
    }
    if i > 0 && matches!(bytes[i - 1], b'"' | b'\'' | b'`') {
        return true;
    }
    let line = &bytes[line_start_of(bytes, i)..i];
    contains_ci(line, b"auth") || contains_ci(line, b"header")
}

/// Whether the argument at `at` is the quoted user `anonymous`: an anonymous login's password is
/// a mail address by convention (`ftp.login('anonymous', 'guest@')`), no secret.
fn anonymous_user_at(bytes: &[u8], at: usize) -> bool {
    Value::parse(bytes, at, Stop::Code)
        .is_some_and(|v| v.quoted && v.text(bytes).eq_ignore_ascii_case(b"anonymous"))
}

/// Whether a password holds a symbol, a digit and both cases of letters, as a made-up strong
/// password does and a version, a tag or a handler's name (`1.25-alpine`, `Load`) does not.
fn strong_password(v: &[u8]) -> bool {
    has_symbol(v) && has_digit(v) && mixed_case(v)
}

/// Whether the text after a `$` or a `%` names a variable as people name them (`PASS`,
/// `db_pass`, `{pw}`, `DB_PASS%`), not a generated value that starts with the sign
/// (`$Hq7kPz2vM9`): both cases of letters and a digit mixed is no variable's name.
fn variable_name(name: &[u8]) -> bool {
    matches!(name.first(), Some(b'{' | b'('))
        || !(name.iter().any(u8::is_ascii_uppercase)
            && name.iter().any(u8::is_ascii_lowercase)
            && name.iter().any(u8::is_ascii_digit))
}
