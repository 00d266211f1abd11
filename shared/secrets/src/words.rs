//! The words that name a secret in a key (`password`, `token`, `api_key`, their qualifiers and other
//! languages' words), the names of the commands read for a password, and the tables that find them
//! fast. It judges names only, never a value.

use crate::bytes::{eat_ci, line_before, lower, run_end, run_end_max, skip_blank, trim_end_of};

/// Bytes a key may be made of (identifiers, dotted paths, header names, flags).
/// The scan's stand-in for a non-ASCII letter or digit before a byte: not a key boundary (a key
/// glued to other text is not one), but a token boundary (a token glued to it is still one).
pub(crate) const NON_ASCII_WORD: u8 = 0x80;

pub(crate) fn is_key_byte(b: u8) -> bool {
    KEY_CLASS[usize::from(b)] != 0
}

/// ASCII bytes that are neither a key's byte nor a byte rule's start (see [`Scan::run`]).
pub(crate) static PASSIVE_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 128 {
        t[b] = KEY_CLASS[b] == 0 && !STARTS_BYTE_RULE[b];
        b += 1;
    }
    t
};

/// The bytes a rule of [`Scan::run`]'s byte dispatch starts with.
pub(crate) static STARTS_BYTE_RULE: [bool; 256] = {
    let mut t = [false; 256];
    let mut k = 0;
    let bytes = b"-:.~${%@";
    while k < bytes.len() {
        t[bytes[k] as usize] = true;
        k += 1;
    }
    t
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Strength {
    /// Any non-placeholder value is a secret.
    Strong,
    /// Only a random-looking value is (`key`, `auth`, `pass`, plurals).
    Weak,
}

/// [`KEY_CLASS`]: a byte of a key.
pub(crate) const KEY_BYTE: u8 = 1;

/// [`KEY_CLASS`]: a separator of a key's segments (`_`, `-`, `.`).
pub(crate) const KEY_SEPARATOR: u8 = 2;

/// [`KEY_CLASS`]: a dash.
pub(crate) const KEY_DASH: u8 = 4;

/// What each byte is to a key (see [`is_key_byte`]), as bits, so one lookup per byte measures a
/// key and what it holds.
pub(crate) static KEY_CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        if c.is_ascii_alphanumeric() {
            t[b] = KEY_BYTE;
        }
        if matches!(c, b'_' | b'-' | b'.') {
            t[b] = KEY_BYTE | KEY_SEPARATOR;
        }
        if c == b'-' {
            t[b] |= KEY_DASH;
        }
        b += 1;
    }
    t
};

/// The words [`credential_word`] builds a key of.
pub(crate) const CREDENTIAL_WORDS: Words = words_from!(&[
    b"access", b"secret", b"private", b"token", b"apikey", b"api", b"key", b"auth",
]);

/// The first two letters of each of [`CREDENTIAL_WORDS`], in either case (a bit per `(first & 31,
/// second & 31)`; a one-letter word sets its whole row): most words start with none of them, and
/// are neither measured, split nor compared. Other bytes may share a bit, which only costs the
/// comparison.
pub(crate) static CREDENTIAL_PAIRS: [u32; 32] = {
    let mut t = [0u32; 32];
    let mut k = 0;
    while k < CREDENTIAL_WORDS.len() {
        let w = CREDENTIAL_WORDS.get(k);
        t[(w[0] & 31) as usize] |= if w.len() < 2 { u32::MAX } else { 1 << (w[1] & 31) };
        k += 1;
    }
    t
};

/// Whether `seg` may start with one of [`CREDENTIAL_WORDS`] (true when it is shorter than two
/// bytes).
pub(crate) fn may_start_credential_word(seg: &[u8]) -> bool {
    match seg {
        [a, b, ..] => CREDENTIAL_PAIRS[usize::from(a & 31)] & (1 << (b & 31)) != 0,
        _ => true,
    }
}

/// Words that name a credential without naming a provider (`ACCESS`, `secret_key`, `apiToken`,
/// `PRIVATEkey`): each segment of `w` is made of these alone.
pub(crate) fn credential_word(w: &[u8]) -> bool {
    fn made_of(seg: &[u8]) -> bool {
        seg.is_empty()
            || may_start_credential_word(seg)
                && CREDENTIAL_WORDS.iter().any(|w| {
                    // (The words are lowercase: one byte rules out most before they are compared.)
                    seg.len() >= w.len()
                        && seg[0] | 0x20 == w[0]
                        && seg[..w.len()].eq_ignore_ascii_case(w)
                        && made_of(&seg[w.len()..])
                })
    }
    let separator = |b: &u8| matches!(b, b'_' | b'-' | b'.');
    !w.is_empty()
        && w.len() <= 32
        && (separator(&w[0]) || may_start_credential_word(w))
        && w.split(separator).all(made_of)
}

/// Whether a provider's key ends in words naming the credential (`buttercmsPRIVATEkey`,
/// `datadog_secrettoken`): its last segment, or its last CamelCase or capitalised run.
pub(crate) fn credential_word_tail(key: &[u8]) -> bool {
    let last = key.rsplit(|&b| matches!(b, b'_' | b'.')).next().unwrap_or(key);
    (1..last.len()).any(|k| {
        let (a, b) = (last[k - 1], last[k]);
        a.is_ascii_lowercase() && b.is_ascii_uppercase() && credential_word(&last[k..])
    }) || last.len() < key.len() && credential_word(last)
}

/// Past up to three words that name a credential after a key ending at `kend`, each after blanks
/// (`pdfshift ACCESS …`, `eventbrite private access key …`); `kend` itself when none follows.
pub(crate) fn credential_words_end(bytes: &[u8], kend: usize) -> usize {
    let mut end = kend;
    for _ in 0..3 {
        let start = skip_blank(bytes, end);
        if start == end {
            break;
        }
        // A word of two bytes or more that starts no credential word is not measured.
        if let [a, b, ..] = bytes[start..]
            && is_key_byte(b)
            && !matches!(a, b'_' | b'-' | b'.')
            && !may_start_credential_word(&[a, b])
        {
            break;
        }
        let e = run_end_max(bytes, start, 33, |b| KEY_CLASS[usize::from(b)] != 0);
        if !credential_word(&bytes[start..e]) {
            break;
        }
        end = e;
    }
    end
}

/// The bytes of a keyword's value: ASCII letters and digits and `-_+/=.~|`.
pub(crate) static KEYWORD_TOKEN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = (b as u8).is_ascii_alphanumeric()
            || matches!(b as u8, b'-' | b'_' | b'+' | b'/' | b'=' | b'.' | b'~' | b'|');
        b += 1;
    }
    t
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A quoted value, a shell/env assignment or a flag: the text is the value itself.
    Literal,
    /// `key: value` / `key = value` in code or config: identifiers and types are not values.
    Code,
    /// The secret word in a sentence: only a random-looking word counts.
    Prose,
}

pub(crate) struct SecretWord {
    pub(crate) strength: Strength,
    pub(crate) authorization: bool,
}

/// Secret words of other languages, each a key of its own, judged as the English word it stands
/// for (see [`foreign_word_means`]): password in German, French, Spanish, Portuguese, Dutch,
/// Polish, Czech, Hungarian, Swedish, Norwegian, Danish, Finnish, Turkish, Chinese, Japanese,
/// Korean and Russian (Italian writes `password`), and token, secret key and private key in
/// Chinese, Japanese, Korean and Russian; key in German and token in French, as weak as `key` and
/// `token` are in English. ASCII case is ignored; other capitals are entries of
/// their own (at most 64: a [`ForeignMask`]).
pub(crate) const PASSWORD_WORDS: &[&str] = &[
    "passwort",
    "kennwort",
    "mot de passe",
    "contraseña",
    "contrasena",
    "clave",
    "senha",
    "密码",
    "密碼",
    "パスワード",
    "пароль",
    "Пароль",
    "ПАРОЛЬ",
    "CONTRASEÑA",
    "wachtwoord",
    "비밀번호",
    // Korean's everyday short form of 비밀번호.
    "비번",
    "hasło",
    "HASŁO",
    "heslo",
    "jelszó",
    "lösenord",
    "passord",
    "adgangskode",
    "salasana",
    "şifre",
    "Şifre",
    "口令",
    "令牌",
    "トークン",
    "토큰",
    "токен",
    "Токен",
    "密钥",
    "秘钥",
    "密鑰",
    "金鑰",
    "シークレット",
    "비밀키",
    "私钥",
    "私鑰",
    "秘密鍵",
    "schlüssel",
    "jeton",
    "chave",
    "chiave",
    "sleutel",
    "clé",
    "キー",
    "geheimnis",
    "segredo",
    "segreto",
    "secreto",
    "sekret",
    "hemlighet",
    "секрет",
    "Секрет",
];

/// A bit set of [`PASSWORD_WORDS`].
pub(crate) type ForeignMask = u64;

const _: () = assert!(PASSWORD_WORDS.len() <= ForeignMask::BITS as usize);

/// The English key a word of [`PASSWORD_WORDS`] stands for, judged as that key is: most mean
/// password; these mean token, secret key or private key.
pub(crate) fn foreign_word_means(word: &str) -> &'static [u8] {
    match word {
        "令牌" | "トークン" | "토큰" | "токен" | "Токен" => b"token",
        "密钥" | "秘钥" | "密鑰" | "金鑰" | "シークレット" | "비밀키" => b"secret_key",
        "私钥" | "私鑰" | "秘密鍵" => b"private_key",
        "jeton" => b"token",
        "schlüssel" => b"key",
        _ => b"password",
    }
}

/// For each byte, the bit set of [`PASSWORD_WORDS`] that start with it (either ASCII case), and
/// (second array) that have it second: most words are ruled out by two lookups and an AND.
pub(crate) static PASSWORD_WORD_INDEX: [[ForeignMask; 256]; 2] = {
    let mut index = [[0; 256]; 2];
    let mut k = 0;
    while k < PASSWORD_WORDS.len() {
        let mut at = 0;
        while at < 2 {
            let b = PASSWORD_WORDS[k].as_bytes()[at];
            index[at][b.to_ascii_lowercase() as usize] |= 1 << k;
            index[at][b.to_ascii_uppercase() as usize] |= 1 << k;
            at += 1;
        }
        k += 1;
    }
    index
};

/// A word list: one space-separated string, and where each word starts and how long it is,
/// computed at compile time. Not a table of slices: in a position-independent executable each
/// slice of a table costs a relocation besides itself. Not split on use either: a lookup
/// compares lengths first, as a table would, instead of scanning the whole string each time.
pub(crate) struct Words {
    pub(crate) text: &'static [u8],
    pub(crate) at: &'static [(u16, u16)],
    /// The entries of `at` grouped by their first byte's [`bucket`], list order kept within a
    /// group: a lookup at a position reads the few words that may start there, not the list.
    pub(crate) by_first: &'static [(u16, u16)],
    /// Where each bucket's group starts in `by_first` (and, last, where the groups end).
    pub(crate) starts: &'static [u16; BUCKETS + 1],
    /// The bytes a word may start with (bits 0..256) and the bytes its second may be (bits
    /// 256..512), both ASCII cases: a search passes over a position neither fits without reading
    /// the list (see [`heads`]).
    pub(crate) heads: &'static [u64; 8],
}

/// The [`Words::heads`] of a list: each word's first and second byte in both ASCII cases. An
/// empty word may start anywhere and a one-byte word has no second byte: they let every byte
/// through.
pub(crate) const fn heads(text: &[u8], at: &[(u16, u16)]) -> [u64; 8] {
    const fn set(bits: &mut [u64; 8], half: usize, b: u8) {
        let i = half * 256 + b as usize;
        bits[i / 64] |= 1 << (i % 64);
    }
    let mut bits = [0u64; 8];
    let mut k = 0;
    while k < at.len() {
        let (start, len) = (at[k].0 as usize, at[k].1 as usize);
        let mut half = 0;
        while half < 2 {
            if len > half {
                set(&mut bits, half, text[start + half].to_ascii_lowercase());
                set(&mut bits, half, text[start + half].to_ascii_uppercase());
            } else {
                let mut w = half * 4;
                while w < half * 4 + 4 {
                    bits[w] = u64::MAX;
                    w += 1;
                }
            }
            half += 1;
        }
        k += 1;
    }
    bits
}

/// How many first-byte groups a [`Words`] list has: one per ASCII letter, case aside, and one
/// for any other byte.
pub(crate) const BUCKETS: usize = 27;

/// The group of words that may start at byte `b`: its letter's, case aside, or the group of
/// words that start with anything else.
pub(crate) const fn bucket(b: u8) -> usize {
    let l = b | 0x20;
    if l.is_ascii_lowercase() {
        (l - b'a') as usize + 1
    } else {
        0
    }
}

/// The bucket of the entry `(start, len)` of `text`: an empty entry's is the last group's, as is
/// the end of a text's (see [`Words::starting`]).
const fn entry_bucket(text: &[u8], (start, len): (u16, u16)) -> usize {
    if len == 0 { 0 } else { bucket(text[start as usize]) }
}

/// Where each bucket's group starts once `at`'s entries are grouped by their first byte.
pub(crate) const fn bucket_starts(text: &[u8], at: &[(u16, u16)]) -> [u16; BUCKETS + 1] {
    let mut count = [0u16; BUCKETS + 1];
    let mut k = 0;
    while k < at.len() {
        count[entry_bucket(text, at[k]) + 1] += 1;
        k += 1;
    }
    let mut b = 1;
    while b <= BUCKETS {
        count[b] += count[b - 1];
        b += 1;
    }
    count
}

/// `at`'s entries grouped by their first byte's bucket, list order kept within each group.
pub(crate) const fn grouped<const N: usize>(text: &[u8], at: &[(u16, u16)]) -> [(u16, u16); N] {
    let mut next = bucket_starts(text, at);
    let mut out = [(0u16, 0u16); N];
    let mut k = 0;
    while k < at.len() {
        let b = entry_bucket(text, at[k]);
        out[next[b] as usize] = at[k];
        next[b] += 1;
        k += 1;
    }
    out
}

impl Words {
    /// How many words the list holds.
    pub(crate) const fn len(&self) -> usize {
        self.at.len()
    }

    /// The length of the longest word (a constant function, as [`Words::get`] is).
    pub(crate) const fn longest(&self) -> usize {
        let mut most = 0;
        let mut k = 0;
        while k < self.at.len() {
            if self.at[k].1 as usize > most {
                most = self.at[k].1 as usize;
            }
            k += 1;
        }
        most
    }

    /// The word at `k` (a constant function: tables are built from lists at compile time).
    pub(crate) const fn get(&self, k: usize) -> &'static [u8] {
        let (start, len) = self.at[k];
        self.text.split_at(start as usize).1.split_at(len as usize).0
    }

    /// Whether `w` is one of the words (exactly, case included). Lengths are compared first,
    /// as a table of slices would: most words differ there.
    pub(crate) fn contains(&self, w: &[u8]) -> bool {
        let text = self.text;
        self.at
            .iter()
            .any(|&(start, len)| usize::from(len) == w.len() && text[usize::from(start)..].starts_with(w))
    }

    /// Whether `hay` starts with one of the words, exactly (case included). Only the words of
    /// its first byte's group are compared (and those of the group an empty word is in), and
    /// none where its first two bytes start no word: a value asked of a long list of prefixes
    /// costs a few bit tests, not a comparison a word.
    pub(crate) fn starts(&self, hay: &[u8]) -> bool {
        let text = self.text;
        let first = hay.first().copied();
        let other = if first.is_some_and(|b| bucket(b) != 0) {
            self.starting(None)
        } else {
            &[]
        };
        (hay.is_empty() || self.may_start_at(hay, 0))
            && self.starting(first).iter().chain(other).any(|&(start, len)| {
                let start = usize::from(start);
                hay.starts_with(&text[start..start + usize::from(len)])
            })
    }

    /// The words, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &'static [u8]> {
        let text = self.text;
        self.at
            .iter()
            .map(move |&(start, len)| &text[usize::from(start)..usize::from(start) + usize::from(len)])
    }

    /// The lengths of the words `hay` holds at `k`, any ASCII case, in order. Each word's first
    /// byte is compared before the word is cut from the list: most words differ there, and the
    /// lookups of long lists (qualifiers, stand-ins) cost half as much.
    pub(crate) fn lengths_at<'h>(&self, hay: &'h [u8], k: usize) -> impl Iterator<Item = usize> + 'h {
        let text = self.text;
        let first = hay.get(k).map(u8::to_ascii_lowercase);
        self.starting(hay.get(k).copied())
            .iter()
            .filter_map(move |&(start, len)| {
                let (start, len) = (usize::from(start), usize::from(len));
                (Some(text[start].to_ascii_lowercase()) == first
                    && hay.len() - k >= len
                    && hay[k..k + len].eq_ignore_ascii_case(&text[start..start + len]))
                .then_some(len)
            })
    }

    /// The entries of the words that may start with `first` (at the end of a text, `None`: the
    /// group that holds an empty entry).
    fn starting(&self, first: Option<u8>) -> &'static [(u16, u16)] {
        let b = first.map_or(0, bucket);
        &self.by_first[usize::from(self.starts[b])..usize::from(self.starts[b + 1])]
    }

    /// Whether `w` is one of the words, ASCII case ignored.
    pub(crate) fn contains_ci(&self, w: &[u8]) -> bool {
        let text = self.text;
        self.starting(w.first().copied()).iter().any(|&(start, len)| {
            let start = usize::from(start);
            usize::from(len) == w.len() && text[start..start + w.len()].eq_ignore_ascii_case(w)
        })
    }

    /// Whether one of the words stands anywhere in `hay`, ASCII case ignored. A short text is
    /// read once, each position compared with the few words that may start there; in a long one
    /// a vectorised search for each word's first byte skips more than a byte at a time.
    pub(crate) fn found_in(&self, hay: &[u8]) -> bool {
        if hay.len() > 4 * self.len() {
            return self.iter().any(|w| crate::bytes::contains_ci(hay, w));
        }
        (0..hay.len()).any(|k| self.may_start_at(hay, k) && self.lengths_at(hay, k).next().is_some())
    }

    /// Whether a word may start at `k` by its first two bytes (see [`Words::heads`]): most
    /// positions of a text fit no word's, and are passed over at the cost of two bit tests.
    #[inline]
    fn may_start_at(&self, hay: &[u8], k: usize) -> bool {
        let has = |i: usize| self.heads[i / 64] & (1 << (i % 64)) != 0;
        has(usize::from(hay[k])) && hay.get(k + 1).is_none_or(|&b| has(256 + usize::from(b)))
    }
}

/// How many words a space-separated list holds.
pub(crate) const fn word_count(text: &[u8]) -> usize {
    let (mut i, mut n) = (0, 0);
    while i < text.len() {
        if text[i] != b' ' && (i == 0 || text[i - 1] == b' ') {
            n += 1;
        }
        i += 1;
    }
    n
}

/// Where each word of a space-separated list starts, and its length (the list at most 64 KiB:
/// compilation fails otherwise).
pub(crate) const fn word_index<const N: usize>(text: &[u8]) -> [(u16, u16); N] {
    assert!(text.len() <= u16::MAX as usize, "word list too long");
    let mut at = [(0u16, 0u16); N];
    let (mut i, mut k) = (0, 0);
    while i < text.len() {
        if text[i] != b' ' && (i == 0 || text[i - 1] == b' ') {
            let mut e = i;
            while e < text.len() && text[e] != b' ' {
                e += 1;
            }
            // Both fit: checked above.
            at[k] = (i as u16, (e - i) as u16);
            k += 1;
        }
        i += 1;
    }
    at
}

/// A [`Words`] list from a space-separated string literal.
macro_rules! words_of {
    ($text:expr) => {{
        const TEXT: &[u8] = $text;
        const AT: [(u16, u16); $crate::words::word_count(TEXT)] = $crate::words::word_index(TEXT);
        const BY_FIRST: [(u16, u16); AT.len()] = $crate::words::grouped(TEXT, &AT);
        const STARTS: [u16; $crate::words::BUCKETS + 1] = $crate::words::bucket_starts(TEXT, &AT);
        const HEADS: [u64; 8] = $crate::words::heads(TEXT, &AT);
        $crate::words::Words {
            text: TEXT,
            at: &AT,
            by_first: &BY_FIRST,
            starts: &STARTS,
            heads: &HEADS,
        }
    }};
}
pub(crate) use words_of;

/// The bytes of a list of byte strings laid end to end (the text of [`words_from`]).
pub(crate) const fn joined<const B: usize>(list: &[&[u8]]) -> [u8; B] {
    let mut text = [0u8; B];
    let (mut k, mut at) = (0, 0);
    while k < list.len() {
        let mut i = 0;
        while i < list[k].len() {
            text[at] = list[k][i];
            at += 1;
            i += 1;
        }
        k += 1;
    }
    assert!(at == B, "joined length");
    text
}

/// How many bytes a list of byte strings holds in all.
pub(crate) const fn joined_len(list: &[&[u8]]) -> usize {
    let (mut k, mut n) = (0, 0);
    while k < list.len() {
        n += list[k].len();
        k += 1;
    }
    n
}

/// Where each entry of a list of byte strings starts in [`joined`]'s text, and its length (the
/// list at most 64 KiB: compilation fails otherwise).
pub(crate) const fn joined_index<const N: usize>(list: &[&[u8]]) -> [(u16, u16); N] {
    assert!(joined_len(list) <= u16::MAX as usize, "word list too long");
    let mut at = [(0u16, 0u16); N];
    let (mut k, mut start) = (0, 0);
    while k < N {
        // Both fit: checked above.
        at[k] = (start as u16, list[k].len() as u16);
        start += list[k].len();
        k += 1;
    }
    at
}

/// A [`Words`] list from a list of byte-string literals, one an entry (which may hold spaces):
/// the list is read at compile time only, so its table of slices is never built.
macro_rules! words_from {
    ($list:expr) => {{
        const LIST: &[&[u8]] = $list;
        const TEXT: [u8; $crate::words::joined_len(LIST)] = $crate::words::joined(LIST);
        const AT: [(u16, u16); LIST.len()] = $crate::words::joined_index(LIST);
        const BY_FIRST: [(u16, u16); AT.len()] = $crate::words::grouped(&TEXT, &AT);
        const STARTS: [u16; $crate::words::BUCKETS + 1] = $crate::words::bucket_starts(&TEXT, &AT);
        const HEADS: [u64; 8] = $crate::words::heads(&TEXT, &AT);
        $crate::words::Words {
            text: &TEXT,
            at: &AT,
            by_first: &BY_FIRST,
            starts: &STARTS,
            heads: &HEADS,
        }
    }};
}
pub(crate) use words_from;

/// No words.
pub(crate) const NO_WORDS: Words = words_of!(b"");

/// Suffixes after a secret word that make the key metadata about a secret, not the secret.
pub(crate) const QUALIFIERS: Words = words_of!(
    b"count len limit max min size ttl expir timeout type kind name file path dir \
    url uri endpoint id field header prefix suffix env var hint question policy pattern regex rule label input \
    prompt reset required enabled strategy provider manager store service cache valid strength format \
    encod helper handler mode version index idx pos offset iz hash digest stdin from source ref cmd \
    command usage budget rate stream lifetime lifespan duration encryption age created updated location \
    loc exists set present error message msg text placeholder schema class style visible show hide mask \
    changed per used total window list ize ization ing less ary ive bucket estimat counter confirm_field \
    algorithm algo issuer audience backend scope engine rounds iterations cost enforc state status extract \
    encoder decoder hasher generator validator verifier parser serializer factory loader resolver storage \
    method user"
);

/// Prefixes before a secret word that make the key metadata (`max_tokens`, `is_secret`).
pub(crate) const PREFIX_QUALIFIERS: Words = words_of!(
    b"max min num n total prompt input output completion forgot reset show \
    hide is has use no next prev last first count cached reasoning thinking context byte bypass validate \
    check verify require toggle by com sur existing socket public publishable pub"
);

/// Prefixes that make a token or a key a position in a listing or a stream (`nextPageToken`,
/// `continuation_token`, `Idempotency-Key`, and a creation token: AWS's idempotency string for
/// creating a file system). Only those two words: a password, a secret or an API key is a
/// credential whatever it syncs or pages (`SYNC_PASSWORD`, `cursor_secret`, and `CURSOR_API_KEY` is
/// the Cursor editor's key).
pub(crate) const POSITION_QUALIFIERS: Words =
    words_of!(b"page paging pagination continuation delta sync resume cursor skip idempotency creation");

/// Accounts whose word glued to `pass` or `pw` names their password (`userpass`, `dbpass`,
/// `ROOTPW`).
pub(crate) const PASS_OWNERS: Words = words_from!(&[
    b"user", b"db", b"admin", b"root", b"sql", b"mysql", b"pg", b"ftp", b"smtp", b"mail", b"ldap", b"proxy",
    b"ssh", b"redis", b"vnc",
]);

/// Whether an account's word ([`PASS_OWNERS`]) is glued before `j` in `key`, as a segment's start
/// (`DBPASS`, `rootPw`, `ADMINPW`; not `bypass`).
fn owner_before(key: &[u8], j: usize) -> bool {
    PASS_OWNERS.iter().any(|o| {
        j >= o.len()
            && key[j - o.len()..j].eq_ignore_ascii_case(o)
            && (j == o.len() || !key[j - o.len() - 1].is_ascii_alphabetic())
    })
}

/// `password` shortened by dropping vowels or a doubled `s`, as people write it in keys.
pub(crate) const SHORT_PASSWORDS: Words = words_from!(&[
    b"pswd", b"psswd", b"pswrd", b"psswrd", b"psword", b"pssword", b"paswd", b"paswrd", b"pasword",
]);

/// English words ending in `KEY`, in capitals: no key's name.
const ENDS_IN_KEY: &[&[u8]] = &[
    b"MONKEY",
    b"DONKEY",
    b"TURKEY",
    b"HOCKEY",
    b"JOCKEY",
    b"WHISKEY",
    b"HOTKEY",
    b"TURNKEY",
    b"LACKEY",
    b"LATCHKEY",
];

/// Words glued to `key` that make it a credential's name (`apikey`, `SECRETKEY`, `masterkey`).
pub(crate) const KEY_COMPOUNDS: Words = words_from!(&[
    b"api",
    b"secret",
    b"access",
    b"private",
    b"master",
    b"signing",
    b"encryption",
    b"client",
    b"license",
    b"licence",
    b"app",
    b"auth",
    b"service",
    b"session",
    b"hmac",
    b"crypto",
    b"cipher",
    b"sign",
    b"root",
    b"admin",
    b"account",
    b"enc",
    b"server",
    b"storage",
    b"shared",
    b"sdk",
    b"dev",
    b"prod",
]);

/// The first two letters a secret word may start with (either ASCII case), as two bit sets: a
/// byte's bits in the first array are the words it may start, in the second those it may follow
/// as their second letter (`p` then `a`, `w`, `r` or `s`; `s` or `k` then `e`; `t` then `o`; `a` then
/// `p`, `c` or `u`; `c` then `r` or `o`).
pub(crate) static SECRET_WORD_PAIRS: [[u8; 256]; 2] = {
    const PAIRS: [(&[u8], &[u8]); 5] = [
        (b"p", b"awrs"),
        (b"sk", b"e"),
        (b"t", b"o"),
        (b"a", b"pcu"),
        (b"c", b"ro"),
    ];
    let mut index = [[0u8; 256]; 2];
    let mut k = 0;
    while k < PAIRS.len() {
        let mut at = 0;
        while at < 2 {
            let letters = if at == 0 { PAIRS[k].0 } else { PAIRS[k].1 };
            let mut l = 0;
            while l < letters.len() {
                index[at][letters[l] as usize] |= 1 << k;
                index[at][letters[l].to_ascii_uppercase() as usize] |= 1 << k;
                l += 1;
            }
            at += 1;
        }
        k += 1;
    }
    index
};

/// Whether the first three letters at `j` (a candidate by its first two) may start a secret
/// word: every word [`secret_word_at`] reads but `pw` has three letters.
pub(crate) fn secret_word_start(key: &[u8], j: usize) -> bool {
    let at = |k: usize| key.get(k).map_or(0, |b| b | 0x20);
    matches!(
        (at(j), at(j + 1), at(j + 2)),
        (b'p', b'a', b's' | b't')
            | (b'p', b'w', _)
            | (b'p', b's', b's' | b'w')
            | (b'p', b'r', b'i')
            | (b's', b'e', b'c')
            | (b't', b'o', b'k')
            | (b'k', b'e', b'y')
            | (b'a', b'p', b'i')
            | (b'a', b'c', b'c')
            | (b'a', b'u', b't')
            | (b'c', b'r', b'e')
            | (b'c', b'o', b'o')
    )
}

/// Whether a secret word may start somewhere in `key` (see [`secret_word`]'s first test).
pub(crate) fn may_hold_secret_word(key: &[u8]) -> bool {
    // (No word starts at the last byte: nothing is its second.)
    key.windows(2).enumerate().any(|(j, w)| {
        SECRET_WORD_PAIRS[0][usize::from(w[0])] & SECRET_WORD_PAIRS[1][usize::from(w[1])] != 0
            && secret_word_start(key, j)
    })
}

/// The strongest secret word in `key`, unless a qualifier makes the key metadata.
pub(crate) fn secret_word(key: &[u8]) -> Option<SecretWord> {
    let mut best: Option<SecretWord> = None;
    let mut j = 0;
    while j < key.len() {
        // Most words hold no secret word: look at two bytes before trying any.
        let next = key.get(j + 1).map_or(0, |&b| usize::from(b));
        if SECRET_WORD_PAIRS[0][usize::from(key[j])] & SECRET_WORD_PAIRS[1][next] == 0
            || !secret_word_start(key, j)
        {
            j += 1;
            continue;
        }
        let Some((end, mut strength, authorization)) = secret_word_at(key, j) else {
            j += 1;
            continue;
        };
        if qualified_before(&key[..j], &key[j..end]) || form_nonce(&key[..j], &key[j..end]) {
            j = end;
            continue;
        }
        let mut tail = &key[end..];
        // `secret_id`, `secretId`: a secret id is a credential (Vault's AppRole hands one out as
        // a password with its role id), but the name of a stored secret in other tools: only a
        // generated value counts, as after a weak word. So is an API key's id (`apikeyid`,
        // `api_key_id`: IBM Cloud's service credentials hold the key itself under it).
        if matches!(tail, [_, d] | [_, _, d] if d | 0x20 == b'd') && secret_id(key, &key[j..end], tail) {
            strength = Strength::Weak;
            tail = &[];
        }
        // A plural is about several secrets or a count of them: only random values count.
        if tail.first().is_some_and(|b| b | 0x20 == b's')
            && tail.get(1).is_none_or(|b| !b.is_ascii_lowercase())
        {
            tail = &tail[1..];
            strength = Strength::Weak;
        }
        // A qualifier may be a last word that weakens the key or names an answer instead (read
        // only then: most keys end with their word).
        let unqualified = !(qualified_after(tail) || last_word_qualified(tail)) || {
            let kept;
            (kept, strength) = last_word_strength(tail, strength);
            kept.is_empty()
        };
        if unqualified {
            let better = match &best {
                None => true,
                Some(b) => b.strength == Strength::Weak && strength == Strength::Strong,
            };
            if better {
                best = Some(SecretWord {
                    strength,
                    authorization,
                });
            }
        }
        j = end;
    }
    best
}

/// The secret word starting at `j` in `key` (a candidate by its first two bytes): its end, its
/// strength and whether it is `authorization`.
pub(crate) fn secret_word_at(key: &[u8], j: usize) -> Option<(usize, Strength, bool)> {
    // A word from `j` to `e` that is a segment of its own.
    let alone = |e: usize| {
        (j == 0 || !key[j - 1].is_ascii_alphabetic()) && key.get(e).is_none_or(|b| !b.is_ascii_alphabetic())
    };
    match key[j] | 0x20 {
        // `pr…` starts no word but `private key`: the password words are not tried in vain.
        b'p' if key.get(j + 1).is_some_and(|b| b | 0x20 == b'r') => {
            two_part(key, j, b"private", b"key").map(|e| (e, Strength::Strong, false))
        }
        b'p' => longest(key, j, &[b"password", b"passwd", b"passphrase", b"passcode"])
            // Spellings that drop a vowel or a doubled `s` (`PSWD`, `PASWRD`, `PSSWORD`): a
            // password's name as people shorten it, found in no other word.
            .or_else(|| longest_of(key, j, SHORT_PASSWORDS.iter()))
            .map(|e| (e, Strength::Strong, false))
            .or_else(|| two_part(key, j, b"private", b"key").map(|e| (e, Strength::Strong, false)))
            // (`OLDPWD` is the shell's previous directory, as `PWD` its current one.)
            .or_else(|| {
                eat_ci(key, j, b"pwd")
                    .filter(|_| !key.eq_ignore_ascii_case(b"oldpwd"))
                    // Ending its word (`DB_PWD`, `pwdHash`), not the start of another
                    // (`pwdump`, a tool that dumps password hashes).
                    .filter(|&e| {
                        key.get(e).is_none_or(|b| {
                            !b.is_ascii_alphabetic()
                                || b.is_ascii_lowercase() != key[e - 1].is_ascii_lowercase()
                        })
                    })
                    .map(|e| (e, Strength::Strong, false))
            })
            // `psw` (as `pswd` without its `d`) only as a segment of its own (`DB_PSW`), not in
            // `upswing`, or ending the key after an account's word glued to it (`dbpsw`), as `pw`.
            .or_else(|| {
                eat_ci(key, j, b"psw")
                    .filter(|&e| alone(e) || e == key.len() && owner_before(key, j))
                    .map(|e| (e, Strength::Strong, false))
            })
            // `pw` only as a segment of its own (`my pw is`, `DB_PW`), not in `upward`.
            .or_else(|| {
                eat_ci(key, j, b"pw")
                    // `olcRootPW`: capitals end a CamelCase key; `CRATEPW`, `MYSQLPW`: a tool's
                    // name in capitals glued to it ends an environment variable's; `dbpw`: an
                    // account's word glued to it, in any case.
                    .filter(|&e| {
                        alone(e)
                            || e == key.len()
                                && key[j..e] == *b"PW"
                                && (key[j - 1].is_ascii_lowercase()
                                    || j >= 2
                                        && key[..j].iter().all(|b| b.is_ascii_uppercase() || *b == b'_'))
                            || e == key.len() && owner_before(key, j)
                    })
                    .map(|e| (e, Strength::Strong, false))
            })
            // A personal access token (`AZURE_DEVOPS_PAT`), a segment of its own.
            .or_else(|| {
                eat_ci(key, j, b"pat")
                    .filter(|&e| alone(e))
                    .map(|e| (e, Strength::Weak, false))
            })
            // `DB_PASS`, `smtp.pass`: the last segment of a config key names a password.
            .or_else(|| {
                eat_ci(key, j, b"pass").map(|e| {
                    let segment = j > 0 && matches!(key[j - 1], b'_' | b'.') && e == key.len();
                    // `"pass": …`, `<Pass>`: a config's field named `pass` alone is its password.
                    let whole = j == 0 && e == key.len();
                    // `userpass`, `DBPASS`, `rootPass`: an account's word glued to `pass` ending
                    // the key names that account's password (`bypass`, `compass` name none).
                    let owned = e == key.len() && owner_before(key, j);
                    (
                        e,
                        if segment || owned || whole {
                            Strength::Strong
                        } else {
                            Strength::Weak
                        },
                        false,
                    )
                })
            }),
        b's' => eat_ci(key, j, b"secret").map(|e| (e, Strength::Strong, false)),
        b't' => eat_ci(key, j, b"token").map(|e| (e, Strength::Strong, false)),
        // `key` as a word of its own or glued to a word that makes it one (`apikey`,
        // `masterKey`), not inside another word (`keycloak`, `monkey`, `hotkey`).
        b'k' => eat_ci(key, j, b"key")
            .filter(|&e| {
                let after = key.get(e).copied();
                let plural = after.is_some_and(|b| b | 0x20 == b's')
                    && key.get(e + 1).is_none_or(|b| !b.is_ascii_lowercase());
                let word_ends = after.is_none_or(|b| !b.is_ascii_lowercase()) || plural;
                let glued = j > 0
                    && key[j - 1].is_ascii_alphabetic()
                    && !(key[j - 1].is_ascii_lowercase() && key[j].is_ascii_uppercase());
                // `GITHUBKEY`, `STRIPEKEY`: a name in capitals glued to it ends an environment
                // variable's, as with `PW` (not an English word's end: `MONKEY`, `HOTKEY`).
                let env_name = e == key.len()
                    && j >= 2
                    && key[..e].iter().all(|b| b.is_ascii_uppercase() || *b == b'_')
                    && !ENDS_IN_KEY
                        .iter()
                        .any(|w| key.len() >= w.len() && key[key.len() - w.len()..] == **w)
                    // A public key's name (`SSHPUBKEY`, `DKIMPUBLICKEY`): the key anyone may see.
                    && !key[..j].ends_with(b"PUB")
                    && !key[..j].ends_with(b"PUBLIC");
                word_ends
                    && (!glued
                        || env_name
                        || KEY_COMPOUNDS.iter().any(|c| {
                            key[..j].len() >= c.len() && key[j - c.len()..j].eq_ignore_ascii_case(c)
                        }))
            })
            .map(|e| (e, Strength::Weak, false)),
        b'a' => two_part(key, j, b"api", b"key")
            .or_else(|| two_part(key, j, b"access", b"key"))
            .map(|e| (e, Strength::Strong, false))
            .or_else(|| longest(key, j, &[b"authorization"]).map(|e| (e, Strength::Strong, true)))
            // Not `author`, `authority` nor `authorizer`: a person, an issuer, a function; nor
            // `authenticity`, a quality (Rails' `authenticity_token` is a form's nonce).
            .or_else(|| {
                eat_ci(key, j, b"auth")
                    .filter(|&e| eat_ci(key, e, b"or").is_none() && eat_ci(key, e, b"enticity").is_none())
                    .map(|e| (e, Strength::Weak, false))
            }),
        b'c' => longest(key, j, &[b"credential", b"creds", b"cookie"])
            .map(|e| (e, Strength::Strong, false))
            // (`create`, `secret`: no `d` after `cre`, no call.)
            .or_else(|| {
                key.get(j + 3)
                    .filter(|b| *b | 0x20 == b'd')
                    .and_then(|_| cred_alone(key, j))
            }),
        _ => None,
    }
}

/// `cred` ending its word at `j` (`dbCred`, `DB_CRED`; not `credit`, `CREDO`), weak as `pat` is:
/// only a generated value under it counts. Kept out of line: most words at a `c` are no `cred`.
#[inline(never)]
fn cred_alone(key: &[u8], j: usize) -> Option<(usize, Strength, bool)> {
    let e = eat_ci(key, j, b"cred")?;
    key.get(e)
        .is_none_or(|&b| {
            !b.is_ascii_alphabetic() || b.is_ascii_uppercase() && key[e - 1].is_ascii_lowercase()
        })
        .then_some((e, Strength::Weak, false))
}

/// The command of a shell line that `i` is part of: what follows its last `;`, `|` or `&` (a
/// `&&` or `||` too), at most [`line_before`]'s 256 bytes.
pub(crate) fn command_segment(bytes: &[u8], i: usize) -> &[u8] {
    let before = line_before(bytes, i);
    let start = before
        .iter()
        .rposition(|&b| matches!(b, b';' | b'|' | b'&'))
        .map_or(0, |p| p + 1);
    &before[start..]
}

/// Whether a command's arguments end or go on with an option at `pos`, as on a command line, not
/// in a sentence (`htpasswd -b is insecure because the …`).
pub(crate) fn args_end(bytes: &[u8], pos: usize) -> bool {
    let p = skip_blank(bytes, pos);
    bytes.get(p).is_none_or(|&b| {
        matches!(
            b,
            b'\n' | b'\r' | b';' | b'|' | b'&' | b'<' | b'>' | b'`' | b')' | b'/' | b'-' | b'#'
        ) || matches!(b, b'\\' | b'^') && matches!(bytes.get(p + 1), None | Some(b'\n' | b'\r'))
    })
}

/// Whether a command word at `i` stands where a command starts: the line's start, after a
/// prompt (`$ `, `# `, `C:\> `), `sudo`, a pipe, `;`, `&&`, `(` or a backtick. Elsewhere it is a
/// word of a sentence (`run net user to list accounts`).
pub(crate) fn command_position(bytes: &[u8], i: usize) -> bool {
    let before = trim_end_of(line_before(bytes, i), |b| b == b' ' || b == b'\t');
    let Some(&last) = before.last() else {
        return line_before(bytes, i).len() < 256;
    };
    matches!(last, b'$' | b'#' | b'>' | b'|' | b';' | b'&' | b'(' | b'`')
        || before.len() >= 4
            && before[before.len() - 4..].eq_ignore_ascii_case(b"sudo")
            && before
                .len()
                .checked_sub(5)
                .is_none_or(|p| !before[p].is_ascii_alphanumeric())
}

/// A Korean or Japanese case particle at `pos` (`으로`, `를`, `에서`, `で`, `を`…): the word
/// before it is a means or an object (`AES256-GCM으로 암호화됩니다`), not what the password is;
/// a copula (`입니다`, `です`), punctuation or the end is.
pub(crate) fn case_particle(text: &str, pos: usize) -> bool {
    let mut chars = text.get(pos..).unwrap_or("").chars();
    match chars.next() {
        Some('으' | '로' | '를' | '을' | '에' | '와' | '과' | '의' | 'を' | 'に' | 'と' | 'の') => {
            true
        }
        Some('で') => !matches!(chars.next(), Some('す' | 'し')),
        _ => false,
    }
}

/// Words after a foreign word for password that make the key a rule about passwords:
/// `Passwort-Richtlinie`, `wachtwoord_beleid`, `contraseña_política`, `비밀번호_정책`.
pub(crate) fn foreign_qualified(tail: &[u8]) -> bool {
    let tail = &tail[run_end(tail, 0, |b| matches!(b, b'_' | b'-' | b'.'))..];
    let word = &tail[..run_end(tail, 0, |b| !matches!(b, b'_' | b'-' | b'.'))];
    matches!(
        lower(word, &mut [0; 16]),
        b"richtlinie"
            | b"regel"
            | b"regeln"
            | b"beleid"
            | b"l\xc3\xa4nge"
            | b"pol\xc3\xadtica"
            | b"\xec\xa0\x95\xec\xb1\x85"
    )
}

/// Whether `tail` names the id of a secret word that such an id may be the secret itself of:
/// `secret` and an API key. (Kept out of line: most keys end with their word.)
#[inline(never)]
fn secret_id(key: &[u8], word: &[u8], tail: &[u8]) -> bool {
    (id_segment(tail) || glued_id(key, tail))
        && (word.eq_ignore_ascii_case(b"secret") || word.len() >= 6 && word[..3].eq_ignore_ascii_case(b"api"))
}

/// Whether the part of a key after its secret word is `id` glued on in the key's one case
/// (`apikeyid`, `SECRETID`), which no word but `id` ends so.
fn glued_id(key: &[u8], tail: &[u8]) -> bool {
    tail.eq_ignore_ascii_case(b"id")
        && (key.iter().all(|b| !b.is_ascii_uppercase()) || key.iter().all(|b| !b.is_ascii_lowercase()))
}

/// Whether the part of a key after its secret word is one `id` segment and nothing more (`_id`,
/// `Id`, `-ID`; not `_identity`, `_id_accessor`).
fn id_segment(tail: &[u8]) -> bool {
    match tail {
        [b'_' | b'-' | b'.', i, d] => [*i, *d].eq_ignore_ascii_case(b"id"),
        [b'I', d] => matches!(d, b'd' | b'D'),
        _ => false,
    }
}

/// Whether the part of a key after its secret word starts with a qualifier (`_count`, `File`).
pub(crate) fn qualified_after(tail: &[u8]) -> bool {
    let tail = &tail[run_end(tail, 0, |b| matches!(b, b'_' | b'-' | b'.'))..];
    // Most keys end with their secret word or go on with a byte no qualifier starts with: one
    // lookup, not the whole list.
    tail.first().is_some_and(|&b| QUALIFIER_FIRST[usize::from(b)])
        && QUALIFIERS.lengths_at(tail, 0).next().is_some()
}

/// The bytes a word of [`QUALIFIERS`] starts with, either ASCII case.
static QUALIFIER_FIRST: [bool; 256] = first_bytes(&QUALIFIERS);

/// The bytes a word of `words` starts with, either ASCII case.
pub(crate) const fn first_bytes(words: &Words) -> [bool; 256] {
    let mut first = [false; 256];
    let mut k = 0;
    while k < words.len() {
        let b = words.get(k)[0];
        first[b.to_ascii_lowercase() as usize] = true;
        first[b.to_ascii_uppercase() as usize] = true;
        k += 1;
    }
    first
}

/// Whether the key's last word, words after its secret word, says what the value is about the
/// secret rather than the secret (`GUEST_TOKEN_JWT_ALGO`, `API_KEY_HEADER_NAME`,
/// `secretValueMaxLength`; a setting's `…_delivery_mode` or a type's `…_adapter_class`).
pub(crate) fn last_word_qualified(tail: &[u8]) -> bool {
    const LAST: Words = words_of!(
        b"algo algorithm alg type kind name names url uri endpoint header prefix suffix length len count \
        ttl timeout expiry expires expiration time lifetime lifespan duration file path dir format version \
        issuer audience size limit user mode class"
    );
    let start = last_word_start(tail);
    // The tail holds words beyond the last one (`_JWT_ALGO`), the first is read by [`qualified_after`].
    start > 0 && LAST.contains_ci(&tail[start..])
}

/// Where the last word of a key's tail starts (a run of letters, or its last camel-case hump).
fn last_word_start(tail: &[u8]) -> usize {
    let mut start = tail.len();
    while start > 0 {
        let b = tail[start - 1];
        if !b.is_ascii_alphabetic()
            || start < tail.len() && tail[start].is_ascii_uppercase() && b.is_ascii_lowercase()
        {
            break;
        }
        start -= 1;
    }
    start
}

/// Whether a key's tail ends with a word that names a setting beside the secret as often as a
/// secret of that use (`password_encryption: scram-sha-256`, `token_lifespan`, but
/// `SESSION_SECRET_ENCRYPTION` holds a key): such a key is read as a weak word's, where only a
/// generated value counts.
fn weak_last_word(tail: &[u8]) -> bool {
    const WEAK: Words = words_of!(b"encryption lifespan duration");
    tail.last().is_some_and(u8::is_ascii_alphabetic) && WEAK.contains_ci(&tail[last_word_start(tail)..])
}

/// The tail and the strength a key's last word leaves ([`weak_last_word`], [`answer_last`]): an
/// empty tail when that word overrides the qualifier. (Kept out of line: asked of qualified keys
/// only.)
#[inline(never)]
fn last_word_strength(tail: &[u8], strength: Strength) -> (&[u8], Strength) {
    if weak_last_word(tail) {
        (&[], Strength::Weak)
    } else if answer_last(tail) {
        (&[], strength)
    } else {
        (tail, strength)
    }
}

/// Whether a key's tail ends with `answer`: a security question's answer is the secret itself
/// (`password_question_answer`), whatever qualifier comes between.
fn answer_last(tail: &[u8]) -> bool {
    tail.len() > 6 && tail[last_word_start(tail)..].eq_ignore_ascii_case(b"answer")
}

/// Whether the part of a key before its secret word `word` ends with a qualifier (`max_`, `is`,
/// and before a token or a key `page`, `sync`).
pub(crate) fn qualified_before(before: &[u8], word: &[u8]) -> bool {
    let trimmed = &before[..before.len()
        - before
            .iter()
            .rev()
            .take_while(|b| matches!(b, b'_' | b'-' | b'.'))
            .count()];
    if trimmed.is_empty() {
        return false;
    }
    // The last segment: after the last separator or at the last lower→upper change.
    let mut seg_start = 0;
    for (k, w) in trimmed.windows(2).enumerate() {
        if matches!(w[0], b'_' | b'-' | b'.') || (w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase()) {
            seg_start = k + 1;
        }
    }
    let seg = &trimmed[seg_start..];
    let seg = seg.strip_prefix(b"_").unwrap_or(seg);
    // `com` and `sur` make a word only glued (`compass`, `surpass`); apart they are a host's
    // segment (`BUNDLE_GEMS__EXAMPLE__COM_TOKEN`, Bundler's key for `gems.example.com`).
    let glued = trimmed.len() == before.len();
    (glued || !(seg.eq_ignore_ascii_case(b"com") || seg.eq_ignore_ascii_case(b"sur")))
        && (PREFIX_QUALIFIERS.contains_ci(seg) || position_word(word) && POSITION_QUALIFIERS.contains_ci(seg))
}

/// A token or a key, alone (`Token`, `keys`): not a password, a secret nor an API key.
fn position_word(word: &[u8]) -> bool {
    let word = word
        .strip_suffix(b"s")
        .or_else(|| word.strip_suffix(b"S"))
        .unwrap_or(word);
    word.eq_ignore_ascii_case(b"token") || word.eq_ignore_ascii_case(b"key")
}

/// Whether `word` is a form's anti-forgery token (`authenticity_token`, `csrf_token`,
/// `X-XSRF-TOKEN`, `__RequestVerificationToken`, `csrfmiddlewaretoken`): a nonce the page hands
/// every visitor in its HTML, not a credential. The key that signs them (`CSRF_SECRET_KEY`) is.
pub(crate) fn form_nonce(before: &[u8], word: &[u8]) -> bool {
    if !word.eq_ignore_ascii_case(b"token") {
        return false;
    }
    let trimmed = before
        .strip_suffix(b"_")
        .or_else(|| before.strip_suffix(b"-"))
        .unwrap_or(before);
    let ends =
        |w: &[u8]| trimmed.len() >= w.len() && trimmed[trimmed.len() - w.len()..].eq_ignore_ascii_case(w);
    [
        "csrf",
        "xsrf",
        "authenticity",
        "requestverification",
        "csrfmiddleware",
    ]
    .iter()
    .any(|w| ends(w.as_bytes()))
}

pub(crate) fn longest(key: &[u8], j: usize, words: &[&[u8]]) -> Option<usize> {
    longest_of(key, j, words.iter().copied())
}

/// [`longest`] over any list of words.
fn longest_of<'w>(key: &[u8], j: usize, words: impl Iterator<Item = &'w [u8]>) -> Option<usize> {
    words.filter_map(|w| eat_ci(key, j, w)).max()
}

/// `first[_-. ]?second` at `j`.
pub(crate) fn two_part(bytes: &[u8], j: usize, first: &[u8], second: &[u8]) -> Option<usize> {
    let mut pos = eat_ci(bytes, j, first)?;
    if matches!(bytes.get(pos), Some(b'_' | b'-' | b'.' | b' ')) {
        pos += 1;
    }
    eat_ci(bytes, pos, second)
}

/// `api key`, `secret key`, `access key`, `private key`, … written with a space before `key`.
pub(crate) fn strong_word_before(bytes: &[u8], i: usize) -> bool {
    matches!(
        word_before(bytes, i, &mut [0; 16]),
        b"api" | b"secret" | b"access" | b"private" | b"signing" | b"encryption" | b"master" | b"client"
    )
}

/// The word of letters before the blank before `i`, lowercased into `buf` (empty when no blank
/// comes just before `i`).
fn word_before<'b>(bytes: &[u8], i: usize, buf: &'b mut [u8; 16]) -> &'b [u8] {
    let Some(before) = i.checked_sub(1).filter(|&p| bytes[p] == b' ') else {
        return &[];
    };
    let start = before
        - bytes[..before]
            .iter()
            .rev()
            .take_while(|b| b.is_ascii_alphabetic())
            .count();
    lower(&bytes[start..before], buf)
}

/// Where a declared type after a key ends at its `=` (`dbPassword string = …`, `password:
/// &str = …`, `val secretKey: String = …`), if one does.
pub(crate) fn declared_type_end(bytes: &[u8], p: usize) -> Option<usize> {
    let mut q = p;
    // `: Type` (Rust, Kotlin, TypeScript, Swift) or Visual Basic's `As Type`.
    let visual_basic = bytes
        .get(q..q + 3)
        .is_some_and(|w| w.eq_ignore_ascii_case(b"as "));
    if bytes.get(q) == Some(&b':') || visual_basic {
        q += if visual_basic { 3 } else { 1 };
        while matches!(bytes.get(q), Some(b' ' | b'\t')) {
            q += 1;
        }
    }
    let ty = run_end_max(bytes, q, 40, |b| {
        b.is_ascii_alphanumeric() || b"_&<>[]'.".contains(&b)
    });
    if ty == q || !bytes[q..ty].iter().any(u8::is_ascii_alphabetic) {
        return None;
    }
    let mut e = ty;
    while matches!(bytes.get(e), Some(b' ' | b'\t')) {
        e += 1;
    }
    (bytes.get(e) == Some(&b'=') && bytes.get(e + 1) != Some(&b'=') && (e > ty || q > p)).then_some(e)
}

/// `public key`, `publishable key`, `Public Key`: the word before `key` (at `i`) says it is not
/// a secret.
pub(crate) fn public_word_before(bytes: &[u8], i: usize) -> bool {
    matches!(word_before(bytes, i, &mut [0; 16]), b"public" | b"publishable")
}

/// Whether one of the commands the word reader reads after its first ones (`rabbitmqctl`,
/// `mosquitto_passwd`, `db2`, `sqlplus`, `sqlldr`, `expdp`, `impdp`, `openssl passwd`) starts at
/// `i`, named whole: their first letters start common words (`import`, `open`, `export`), and
/// their three-letter heads are compared first, in line.
#[inline(always)]
pub(crate) fn more_commands_at(bytes: &[u8], i: usize) -> bool {
    matches!(
        bytes.get(i..i + 3),
        Some(b"rab" | b"mos" | b"db2" | b"sql" | b"exp" | b"imp" | b"ope")
    ) && more_commands_named(bytes, i)
}

/// [`more_commands_at`] past the head: the whole name.
#[inline(never)]
fn more_commands_named(bytes: &[u8], i: usize) -> bool {
    let t = &bytes[i..];
    match bytes[i] {
        b'r' => t.starts_with(b"rabbitmqctl"),
        b'm' => t.starts_with(b"mosquitto_passwd"),
        b'd' => t.starts_with(b"db2 "),
        b's' => t.starts_with(b"sqlplus") || t.starts_with(b"sqlldr"),
        b'e' => t.starts_with(b"expdp"),
        b'i' => t.starts_with(b"impdp"),
        b'o' => t.starts_with(b"openssl passwd"),
        _ => false,
    }
}
