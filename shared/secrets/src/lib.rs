//! The secret filter: finds the spans of a text that carry a credential, so that a prompt is
//! either withheld or redacted before it is persisted or sent as a recall query. It must never
//! log or return any part of a secret: callers get rule names and byte spans, nothing else.
//!
//! One left-to-right pass over the bytes, linear in the input, no allocation until something is
//! found or a word may name a secret, no regex engine: a hook pays start-up cost on every prompt,
//! and compiling a rule set of this size on each run costs more than scanning a 200 KB prompt by
//! hand (the micro-benchmark in `benches/hook_bench` measures the scan). Dispatch is on the first
//! bytes of a word (three through a bit filter, then two), as gitleaks prefilters its rules on
//! keywords: most words start no rule, and the inside of a word costs one comparison per byte.
//! Provider tokens are data, not code: `rules/<family>.toml` (prefix, body shape, judgments, cited
//! source, samples), compiled by `build.rs` into static tables indexed by the prefix's first byte
//! (see [`VENDORS`] and `src/rules.rs`); adding a provider is one entry there; keyword rules
//! (`rules/keyword.toml`) name a provider by a word in the key instead. Measured with the `scan`
//! example on the benchmark's prompt text (release, loaded 2-core machine, p50): 10 KB in 0.044 ms,
//! 200 KB in 0.87 ms, 17.9 M instructions counted for one 200 KB scan (`scan --once`); 0.12 ms, 2.4
//! ms and 43.0 M before a plain word was made cheap (the hand-written filter before the rule data:
//! 0.06 ms, 1.25 ms, 25 M). A plain word is cheap because one pass over a key measures it and what
//! it holds (separators, dashes, two letters a secret word may start with) and the rules that need
//! those are not tried; a vendor prefix's first three bytes are a bit filter; a provider's value is
//! looked for only where 16 value bytes may follow (a blank within them, read as one number, rules
//! it out); the scan goes on after a word of letters and digits at once, and blanks and punctuation
//! no rule starts with take one lookup; the pass for tokens on a line about a key reads only the
//! words the scan listed as possibly naming a secret, unless a key start went unlisted (non-ASCII
//! text, a foreign word for password). Adversarial repetitions scan in linear time (the tests check the
//! scaling); nothing is parsed at run time. Every run a rule scans is bounded (a value's head at
//! 512 bytes, its redacted whole, a table row or a here-document line at 64 KiB), a line's command
//! words are looked up once per line, and a span already found is not scanned again, so repetitive
//! prompts stay linear.
//!
//! Size: the release profile (root `Cargo.toml`) optimizes the dependencies (TLS, JSON, TOML) for
//! size (`opt-level = "s"`) and the workspace's crates, this one among them, for speed: every hook
//! executable went from 3.07–3.15 MiB to 2.69–2.77 MiB (`powercontext-hook-opencode`, the largest,
//! 3,298,880 to 2,905,784 bytes; `claude-code` 3,228,520 to 2,836,064), under the 3 MiB limit, and
//! the scan's code is built as before. Size for the whole workspace would shrink the scan's loops
//! too, which is the code that must stay fast; the tables are static data either way.
//!
//! What is found (the rule names are what diagnostics and `[REDACTED:<rule>]` markers show):
//! - `private_key`: a PEM block (`-----BEGIN … PRIVATE KEY-----` to its END line, the four-dash
//!   and SSH2 armors `----BEGIN …----`, `---- BEGIN SSH2 … PRIVATE KEY ----` to the end of their
//!   body), an END line alone, a DER body pasted without its armor (`MII…IBA…`,
//!   `b3BlbnNzaC1rZXktdjE…`), or the `Private-Lines:` of a PuTTY `.ppk` file through its MAC.
//! - `assignment`: a key that *contains* a secret word (`password`, `passwd`, `pwd`,
//!   `passphrase`, `passcode`, `secret`, `token`, `api key`, `access key`, `private key`,
//!   `credential`, `cookie`, `pw`; weaker: `key`, `auth`, `pass`, `PAT` as a segment of its own,
//!   whose value must be one base64url run) with any prefix or suffix,
//!   `_`/`-`/`.` separators, quoted or not, then `=`, `:`, `:=`, `=>`, Make's `?=`, `+=`, `::=`,
//!   `:::=`, PHP's `.=`, an array declaration (`char secret[25] = …`), a comparison with a
//!   literal either way round (`pw == "…"`, `"…" !== secret`; a typed lowercase word counts
//!   against a password or a secret, `password == 'logmein'`), a literal call argument
//!   (`std::string secret("…")`, SQL's `PASSWORD('…')`), an environment lookup's literal default
//!   (`os.getenv("API_KEY", "…")`, `process.env.TOKEN || "…"`, `${DB_PASSWORD:-…}`), a Java system property
//!   (`-Dspring.datasource.password=…`), or whitespace, and a value (an INI value may stand on
//!   the next, indented line).
//!   Keys whose suffix or prefix makes them metadata (`token_count`, `password_file`,
//!   `PASSWORD_ALGORITHM`, `TOKEN_ISSUER`, `existingSecret`, `Sec-WebSocket-Key`, …) are not keys,
//!   and a public key id (`--recv-keys 3AA5C34371567BD2`, `user.signingkey`) is not a secret.
//!   The span is the whole value: a quoted one to its closing quote, a shell/env literal to the
//!   next blank (punctuation inside and at the end included), a connection-string or query field
//!   to the next `;Name=`/`&name=`; in code a `,`/`;` before a blank and closing brackets are
//!   structure, outside the span. A value is judged on its first 512 bytes; one judged a secret
//!   is redacted to its real end (at most 64 KiB). An all-digit value of a password key
//!   (`DB_PASSWORD=84619273`) and a letters-only YAML value of one on a line of its own
//!   (`password: SuperSecretPassword`, `password: trustno-one-ever`) count. Also SQL `IDENTIFIED BY '…'`, an Azure SAS `&sig=…`,
//!   and the base64 after an LDIF `::` of a password key (`userPassword:: e1NTSEF9…`,
//!   `olcRootPW:: …`, with its continuation lines).
//!   The word for password in German, French, Spanish, Portuguese, Dutch, Chinese, Japanese,
//!   Korean and Russian (`Passwort`, `Kennwort`, `mot de passe`, `contraseña`, `clave`, `senha`,
//!   `wachtwoord`, `密码`, `パスワード`, `비밀번호`, `пароль`, in capitals too; Italian writes
//!   `password`) is a key as `password` is, alone, with no-break spaces around its colon
//!   (`Mot de passe\u{a0}: …`; they are never part of a value), as `密码：…`, or as a segment of a
//!   longer key (`DB_KENNWORT`, `KENNWORT2`, `db_contraseña`, `Пароль_БД`, `비밀번호_확인`; a bare
//!   `clave` is any key in Spanish: its value must look generated, unlike `clave de acceso`). Before
//!   a `-` the word is not a compound's head (`Passwort-Richtlinie` is a policy): that key needs a
//!   `:` or `=`, and `…_Richtlinie`, `…_beleid`, `…_política`, `…_정책` are rules, not passwords. A CSV, TSV or markdown table whose header names a secret column
//!   (`user,password`, `| user | password |`) and a SQL `INSERT INTO t (name, password) VALUES
//!   (…)` give each row's cell in that column as the key's value, judged as an unquoted value in
//!   code (a `token` column's only when it looks random). A weak literal where a password stands
//!   is the password (`password = open_sesame` ending its line, no `;`, and used nowhere else nearby,
//!   `user:secret@host`, `Password=myPassword;`), unlike the slot's own name, a stand-in or a
//!   template. A user and a random-looking password
//!   passed together to what names authentication (`auth=("admin", "…")`, `HTTPBasicAuth("admin", "…")`,
//!   `smtp.login(user, "…")`, `check_password("bob", "…")`, `new NetworkCredential("bob", "…")`,
//!   `new PasswordAuthentication("bob", "…".toCharArray())`, and the third argument of
//!   `keyring.set_password("svc", "bob", "…")`) give the password; a UUID there is a client or
//!   tenant id, and a call that configures authentication (`AddAuthentication("Cookies", …)`,
//!   `Use…`, `With…`, `Configure…`, `Get…`) is given no password.
//! - `command_line`: `--password=…`-style flags, named parameters (`-Password …`,
//!   `-ClientSecret …`), `-p` after a user's flag (`-u NAME -p …`, not mysql's spaced prompt)
//!   and after `docker login`/`sshpass`/`mongo`,
//!   `-pSECRET` after `mysql`, `-P` after `sqlcmd`, `-w` after the `ldap…` tools, `-a` after
//!   `redis-cli`, `-a user:pw` after httpie, `-u user:pw` after `curl`, `-u user,pw` after
//!   `lftp`, `-U user%pw` after `smbclient`, `-N`/`-P` after `ssh-keygen`, `-k` and
//!   `-passin`/`-passout pass:…` after `openssl` (`-k`, `-N`, `-P` in that command, not in the
//!   next one of a pipeline), `-storepass`/`-keypass` (`-srcstorepass`, `-deststorepass`,
//!   `-srckeypass`, `-destkeypass`) on a `keytool` or `jarsigner` line (a line continued with `\`,
//!   PowerShell's `` ` `` or cmd's `^` carries its commands onto the next); the password argument
//!   of `htpasswd -b`, `wpa_passphrase SSID …`, `net user NAME …` and `net use [Z:] \\srv\share …`
//!   (any case; before or after `/user:`; a plain word only where a command starts and ends, not
//!   in a sentence about the command), the key of `vault operator unseal`, and the `user:…` lines
//!   fed to `chpasswd`; a literal echoed or printed into a command that reads its password from
//!   stdin (`echo "…" | docker login --password-stdin`, `printf '%s' "…" |`, `--password-stdin
//!   <<< "…"`, `| sudo -S`, `| passwd --stdin`), and the literal PowerShell's
//!   `ConvertTo-SecureString "…" -AsPlainText` makes a credential.
//! - `auth_header`: `Authorization:`/`X-…` headers (`Bearer`, `Basic`, `token`, Okta's `SSWS`),
//!   `Bearer <token>`, `Basic <base64 user:pw>`, whole however long.
//! - `url_credentials`: `scheme://user:password@host` (the password is the span; the userinfo
//!   ends at the last `@`, and a `/` after `user:` that ends no port is in the password), or a
//!   token as the user alone (`https://<token>@github.com`).
//! - `credential_file`: `.netrc` `password` entries and `.pgpass` lines.
//! - `password_hash`: a hash as good as the password to an offline attack: crypt's
//!   `$id$[params$]salt$hash` for bcrypt (`$2b$12$` + 53), md5-crypt (`$1$`, `$apr1$`),
//!   sha256/sha512-crypt (`$5$`, `$6$`), yescrypt (`$y$`), scrypt (`$7$`), argon2
//!   (`$argon2id$v=19$…`), each hash of its length (a docker-compose `$$` doubles the `$`);
//!   Django's and Werkzeug's `algorithm[:params]$…$hash` (`pbkdf2_sha256$600000$…`,
//!   `pbkdf2:sha256:600000$…`, `scrypt:32768:8:1$…`, `argon2$argon2id$…`, `bcrypt_sha256$$2b$…`,
//!   the hash at least a SHA-1's length), Django's legacy `sha1$salt$<40 hex>` and
//!   `md5$salt$<32 hex>`, each hash random-looking (`…$xxxx…` is a stand-in); LDAP's `{SHA}`,
//!   `{SSHA}`, `{SHA256}` … `{SSHA512}`, `{MD5}`, `{SMD5}` and `{CRYPT}` followed by a hash of its
//!   scheme's length, a digest's base64 with a digit, `+` or `/` and not words run together (the
//!   span is the hash, not the scheme); the hash of an `/etc/shadow` line, DES's 13
//!   characters included; Cisco's type 8 and 9 secrets (`$8$`, `$9$`) and Kerberos AS-REP and
//!   TGS-REP hashes as cracking tools print them (`$krb5asrep$23$…`).
//! - vendor shapes (one rule name per provider, from the rule data, see [`VENDORS`]; Telegram and Discord bot tokens
//!   by hand, a Telegram token also glued to `bot` in its API URL): real prefix, alphabet,
//!   length. A token ends at any non-ASCII character (`令牌ghp_…请检查`) and starts after `%XX`
//!   (`%3Dghp_…`); one wrapped onto the next line is redacted with its tail, and a 40-character
//!   AWS secret key next to its key id with it. A prefix of eight bytes or more with a separator
//!   (`github_pat_`, `sk_live_`) glued after a word's letters (`ourgithub_pat_…`) is read when a
//!   generated body of 20 or more follows; the span is the token, not the letters before it.
//! - `jwt`: `eyJ….eyJ….<signature>`, segments up to 16 KiB each, or an unsigned `eyJ….eyJ…`
//!   whose claims decode to a JSON object.
//! - `prose`: a random-looking value right after a secret word (`my password is hunter2`, `the
//!   password for prod is …`, `use password "…"`, `my password: <words run together>`), in other
//!   languages too (`mein Passwort ist …`, `a senha do banco é …`, `mijn wachtwoord is …`,
//!   `密码是…`, `パスワードは…です`, `비밀번호는 …입니다`). A value that starts in ASCII ends at a
//!   Chinese, Japanese or Korean character glued to it; one followed by a case particle (`으로`,
//!   `를`, `에서`, `で`, `を`, …: `비밀번호는 AES256-GCM으로 암호화됩니다`) is a means or an object,
//!   not the password, which a copula (`입니다`, `です`) or the sentence's end follows. A quoted
//!   word there is the password (`the default password is "marmalade"`, `the password for user
//!   'deploy' is 'tangerine'`) unless it describes one (`"wrong"`, `"required"`). On a line
//!   no other rule found anything on, a generated token anywhere, when the line speaks of a key,
//!   token, password, secret or creds as a word of its own and not of public keys, fingerprints,
//!   hashes or integrity (see `same_line_tokens`); and one alone on a line below such a line
//!   ending with `:` (an installer's banner, a console's `Your API key:`), blank lines between.
//! - `assignment` also reads a key named in a name field with its value in the value field after
//!   it (`- name: DB_PASSWORD` / `value: …`, `"ParameterKey"`/`"ParameterValue"`, Terraform's
//!   `variable "db_password" { default = … }`), a table column named by a weak word (`key`)
//!   whose cells look generated, and Maven's master password (`<master>…</master>` inside
//!   `<settingsSecurity>`). An element's value (`<password>…</password>`) ends where its closing
//!   tag starts, whichever rule reads it; Maven's encrypted `{…}` fills the element as a slot.
//!
//! Precision: a value that is a placeholder or a reference filling the whole value (`<…>`,
//! `$VAR`, `${…}`, `{{…}}`, `{name}`, `%VAR%`, a YAML `!tag` before what it tags,
//! `os.environ[…]`, `process.env.X`, mostly `xxxx`/`****`, nothing but stand-in words such as
//! `changeme`, `example`, `YOUR_API_KEY`, `DB_PASS` — `Example123!`, `$uP3r-S3cret!9` and
//! `SUPERSECRETPASS` are passwords —, the key's own name), a type annotation or code expression
//! (`String`, `SecretStr`, `Option<String>`, `lexer.next_token()`), a plain identifier, a number,
//! a date or a path is not a secret; nor are a cookie's attributes alone (`Set-Cookie: Path=/;
//! HttpOnly`), a Kubernetes secret's name under a bare `secret:` key in a `tls:` or `volumes:`
//! mapping (`tls-cert-2024`), or a
//! password that is the user again (`guest:guest@`, `curl -u admin:admin`); nor, after a
//! weak `key` word, a key path (`cache key: user:1234:profile:v2`) or, after `key` alone or
//! an index's word (`cache key:`, `partitionKey`), a hex digest (`master key: <hex>` is
//! qualified, a key); nor a cookie's plain value (`Set-Cookie: lang=en-US`: only a cookie named
//! for a session or a generated value is one, each cookie of the line, a quoted header,
//! `curl -b` or a map of cookies judged); nor a vendor's documented example key
//! (`rules/examples.toml`: Azurite's, AWS's docs') whatever rule found it. Mixed-case letters alone are split as camelCase is:
//! words run together (`someVeryLongCamelCaseIdentifierName`, `PasswordField`) are a name,
//! random letters (`ImOIVBfPhQYm`, under half of them in words) a password wherever a password
//! stands. How
//! strict the value test is depends on how the value is written: a quoted or shell/env literal
//! needs only to be a non-placeholder (a quoted one with spaces must read as a passphrase, not a
//! message), an unquoted `key: value` in code or config needs a digit or symbol, prose needs a
//! random-looking word; a weak key's value must look random (or, short, mix letters, digits and
//! symbols). Code around a value is no value: a command substitution (`$(…)`), an interpolation
//! (`#{password}`), an HTML-escaped slot (`&lt;…&gt;`), an ARN, a concatenation or the next field
//! after the string that held the key (`"…_password = " + new Buffer(…)`), a slot in a second pair
//! of quotes (`"'$PASS'"`), an expression passed after a comma. A PEM block whose body holds no
//! encoded byte (`BEGIN … anything … END`, `...` on one line of JSON, `xxx` under a diff's `+`) or
//! base64 of plain words is an illustration. A catch-all prefix (`sk-`) followed
//! by a hand-made body (`abcdef…`, `a1b2c3…`) stays a credential: the scanners' own cases count
//! such test keys as secrets, and a missed one is persisted for good.

use std::borrow::Cow;

mod log2;
#[cfg(test)]
mod ordinary_tests;
mod prefilter;
#[cfg(test)]
mod prefilter_tests;
mod rules;

pub use rules::{FAMILIES, KEYWORD_INFO, RULE_INFO, RuleInfo, VENDORS, Vendor, keyword_providers};

/// Which rule matched, content-free (safe to put in a diagnostic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretKind {
    /// A PEM private key, its END line, or its body without armor.
    PrivateKey,
    /// A credential key assigned a value.
    Assignment,
    /// A credential on a command line.
    CommandLine,
    /// An HTTP authorization header or scheme (`Bearer`, `Basic`, API-key headers).
    AuthHeader,
    /// A URL with a password in its userinfo.
    UrlCredentials,
    /// A `.netrc` or `.pgpass` entry.
    CredentialFile,
    /// A password hash (bcrypt, crypt, argon2, Django's, Werkzeug's, LDAP's, an `/etc/shadow`
    /// line's): as good as the password to an offline attack.
    PasswordHash,
    /// A vendor token shape; the name is the provider rule.
    Vendor(&'static str),
    /// A JSON Web Token.
    Jwt,
    /// A random-looking value right after a secret word in prose.
    Prose,
}

impl SecretKind {
    /// The rule name in snake_case, for diagnostics and redaction markers.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::PrivateKey => "private_key",
            Self::Assignment => "assignment",
            Self::CommandLine => "command_line",
            Self::AuthHeader => "auth_header",
            Self::UrlCredentials => "url_credentials",
            Self::CredentialFile => "credential_file",
            Self::PasswordHash => "password_hash",
            Self::Vendor(name) => name,
            Self::Jwt => "jwt",
            Self::Prose => "prose",
        }
    }

    /// Declaration order doubles as priority when several rules match.
    fn rank(self) -> u8 {
        match self {
            Self::PrivateKey => 0,
            Self::Assignment => 1,
            Self::CommandLine => 2,
            Self::AuthHeader => 3,
            Self::UrlCredentials => 4,
            Self::CredentialFile => 5,
            Self::PasswordHash => 6,
            Self::Vendor(_) => 7,
            Self::Jwt => 8,
            Self::Prose => 9,
        }
    }
}

/// One detected secret: the rule and the byte span of the secret value (not of its key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Finding {
    /// The rule.
    pub kind: SecretKind,
    /// First byte of the secret.
    pub start: usize,
    /// One past its last byte.
    pub end: usize,
}

/// Every secret in `text`, in order of position, overlapping spans merged (the higher-priority
/// rule names the merged span).
#[must_use]
pub fn findings(text: &str) -> Vec<Finding> {
    // Text escaped for JSON or a log (`\"api_key\": \"…\"`, `…\nTOKEN=…`) or for HTML is read
    // unescaped, as its writer meant it, and what is found there is mapped back onto the
    // escaped bytes.
    let found = match unescaped(text) {
        Some((plain, at)) => scan_text(&plain)
            .into_iter()
            .map(|f| Finding {
                kind: f.kind,
                start: at[f.start],
                end: at[f.end],
            })
            .collect(),
        None => scan_text(text),
    };
    let mut merged: Vec<Finding> = Vec::with_capacity(found.len());
    for f in found {
        match merged.last_mut() {
            Some(last) if f.start < last.end => {
                last.end = last.end.max(f.end);
                if f.kind.rank() < last.kind.rank() {
                    last.kind = f.kind;
                }
            }
            _ => merged.push(f),
        }
    }
    merged
}

/// One scan of `text`: its findings sorted by start, not merged.
fn scan_text(text: &str) -> Vec<Finding> {
    let dequoted = dequoted(text);
    let text = dequoted.as_deref().unwrap_or(text);
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
    found
}

/// A keyed hash's or a signed token's key passed as a literal (`createHmac('sha256', '…')`,
/// `hmac.new(b'…', msg, sha256)`, `Algorithm.HMAC256("…")`, `jwt.sign(payload, '…')`): the key,
/// when it looks generated; a stand-in (`'secret'`, `'shhhhh'`) or a variable is none. Whether
/// any such call is there is one byte search per `(`.
fn keyed_call_literals(bytes: &[u8], found: &mut Vec<Finding>) -> bool {
    // The callee's name (its end, any case) and which argument holds the key.
    const CALLS: [(&[u8], usize); 9] = [
        (b"createhmac", 1),
        (b"hmac.new", 0),
        (b"hmac256", 0),
        (b"hmac384", 0),
        (b"hmac512", 0),
        (b"jwt.sign", 1),
        (b"jwt.verify", 1),
        (b"jwt.encode", 1),
        (b"jwt.decode", 1),
    ];
    let before = found.len();
    let mut at = 0;
    while let Some(k) = find_byte(b'(', &bytes[at..]) {
        let open = at + k;
        at = open + 1;
        let name = &bytes[open
            - run_back(&bytes[..open], |b| {
                b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_')
            })..open];
        let Some(&(_, arg)) = CALLS.iter().find(|(c, _)| {
            ends_with_ci(name, c)
                && (name.len() == c.len() || matches!(name[name.len() - c.len() - 1], b'.' | b'_'))
        }) else {
            continue;
        };
        let mut p = open + 1;
        for _ in 0..arg {
            match top_level(bytes, p, b",", 512) {
                Some(comma) => p = comma + 1,
                None => break,
            }
        }
        let mut p = run_end_max(bytes, p, 64, |b| b.is_ascii_whitespace());
        // Python's bytes literal (`b'…'`).
        if matches!(bytes.get(p), Some(b'b' | b'B')) && matches!(bytes.get(p + 1), Some(b'"' | b'\'')) {
            p += 1;
        }
        let Some(value) = Value::parse(bytes, p, Stop::Code).filter(|v| v.quoted) else {
            continue;
        };
        let v = value.text(bytes);
        if looks_random(v, 12) && has_digit(v) && !is_placeholder(v) {
            found.push(Finding {
                kind: SecretKind::Assignment,
                start: value.start,
                end: value.end,
            });
        }
    }
    found.len() > before
}

/// `text` with the layout that opens its lines read as blanks: the `>` markers of quoted lines
/// (an e-mail reply's, Markdown's, a REPL's `>>>`), a unified diff's first column inside a hunk
/// (after `@@ … @@` or a ```` ```diff ```` fence), and a compiler's or linter's line-number
/// gutter (`12 | `). The line is read as it was written (`> password=…`, `+| service | key |`,
/// `12 |     let token = "…";`); blanks keep every offset, so spans stand. `None` when no line
/// has such layout (most prompts: one search for a line break per line).
fn dequoted(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out: Option<Vec<u8>> = None;
    let mut in_diff = false;
    let mut line = 0;
    loop {
        let end = find_byte(b'\n', &bytes[line..]).map_or(bytes.len(), |p| line + p);
        let l = &bytes[line..end];
        let lead = run_end(l, 0, |b| b == b' ' || b == b'\t');
        // What to blank on this line: `[from, to)` within it.
        let mut blank = (0, 0);
        if l.starts_with(b"@@ -") || l.starts_with(b"```diff") {
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
        } else if blank.1 == 0 && l[lead..].starts_with(b"* ") {
            // A Markdown bullet (`* password = …`, `* ghp_…`).
            blank = (lead, lead + 1);
        } else if blank.1 == 0 && l.get(lead).is_some_and(u8::is_ascii_digit) {
            let digits = run_end(l, lead, |b| b.is_ascii_digit());
            if digits - lead <= 6 && l[digits..].starts_with(b" | ") {
                blank = (lead, digits + 3);
            } else if digits - lead <= 3 && (l[digits..].starts_with(b". ") || l[digits..].starts_with(b") "))
            {
                // A numbered list's item (`2. token: …`).
                blank = (lead, digits + 1);
            }
        }
        if blank.1 == 0
            && let Some(at) = location_end(l)
        {
            // A log's or grep's prefix up to the quoted file's location (`… app.ini:3: `).
            blank = (0, at);
        }
        if blank.1 > blank.0 {
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
    out.and_then(|o| String::from_utf8(o).ok())
}

/// `text` with the escapes inside its double-quoted strings decoded as JSON's (`\n`, `\r`, `\t`,
/// `\"`, `\'`, `\\`, `\/`, `\uXXXX`), and for each of its bytes and its end the offset in `text` it
/// came from; `None` when no string holds an escape (most prompts: one search for a backslash).
/// Outside strings a backslash is text (`\\nas\backup`, `C:\new`).
fn unescaped(text: &str) -> Option<(String, Vec<usize>)> {
    let bytes = text.as_bytes();
    // Source escaped for HTML (`&quot;api_key&quot;: …`, code in `<pre><code>`, a page's text
    // broken by `<br>`): its entities are decoded, and its tags inside `<pre>`/`<code>` and its
    // line-level tags (`<br>`, `<p>`, `<div>`, `<li>`) are markup, read as line breaks.
    const HTML: [&[u8]; 16] = [
        b"&quot;", b"&#34;", b"&#39;", b"&#x27;", b"&apos;", b"&lt;", b"&gt;", b"&amp;", b"<code>", b"<pre>",
        b"<br>", b"<br/>", b"<br />", b"<p>", b"<div>", b"<li>",
    ];
    let html = any_of_two(b'&', b'<', bytes, |k| {
        HTML.iter().any(|e| bytes[k..].starts_with(e))
    });
    if !html {
        find_byte(b'\\', bytes)?;
    }
    // The strings on one line each, `[open, close]`, and whether each holds an escape and an
    // escaped line break or quoted words: such a string quotes a document (a prompt, a file, a
    // log), and its quotes become line breaks, so its first and last lines read as lines. An
    // escaped quote inside a token (`"Tr0ub4dor\"3xyzQ"`), or one alone, is a character of a
    // value: the string stays the value's.
    let mut strings: Vec<(usize, usize, bool)> = Vec::new();
    let (mut open, mut escape, mut document, mut k) = (None, false, false, 0);
    // The escaped quotes of the open string, and whether one opened a word (after no letter).
    let (mut quotes, mut words) = (0usize, false);
    while k < bytes.len() {
        match bytes[k] {
            b'\\' if open.is_some() => {
                escape = true;
                match bytes.get(k + 1) {
                    Some(b'n') => document = true,
                    Some(b'"') => {
                        words |= quotes % 2 == 0 && (k == 0 || !bytes[k - 1].is_ascii_alphanumeric());
                        quotes += 1;
                    }
                    _ => {}
                }
                k += 1;
            }
            b'"' => match open.take() {
                Some(o) if escape => strings.push((o, k, document || words && quotes % 2 == 0)),
                Some(_) => {}
                None => (open, escape, document, quotes, words) = (Some(k), false, false, 0, false),
            },
            b'\n' => open = None,
            _ => {}
        }
        k += 1;
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
    let mut k = 0;
    while k < bytes.len() {
        for &b in &plain[seen..] {
            match b {
                b'"' => quoted = !quoted,
                b'\n' => quoted = false,
                _ => {}
            }
        }
        seen = plain.len();
        while string.next_if(|&&(_, close, _)| close < k).is_some() {}
        let (inside, quote, document) = match string.peek() {
            Some(&&(o, c, doc)) if o <= k && k <= c => (o < k && k < c, doc && (k == o || k == c), doc),
            _ => (false, false, false),
        };
        if quote {
            plain.push(b'\n');
            at.push(k);
            k += 1;
            continue;
        }
        if html && let Some((b, len)) = html_markup(bytes, k) {
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
        let decoded = match (bytes[k], bytes.get(k + 1)) {
            _ if !inside => None,
            (b'\\', Some(b'n')) => Some(b'\n'),
            (b'\\', Some(b'r')) => Some(b'\r'),
            (b'\\', Some(b't')) => Some(b'\t'),
            // A value's own escaped quote stays escaped: decoded, it would close the value.
            (b'\\', Some(b'"')) if !document => None,
            (b'\\', Some(&c @ (b'"' | b'\'' | b'\\' | b'/'))) => Some(c),
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

/// What HTML markup at `k` reads as, and its length: an entity its character (`&quot;`, `&#39;`,
/// `&lt;`, `&gt;`, `&amp;`), a tag (`<code>`, `</pre>`) a line break.
fn html_markup(bytes: &[u8], k: usize) -> Option<(u8, usize)> {
    const ENTITIES: [(&[u8], u8); 8] = [
        (b"&quot;", b'"'),
        (b"&#34;", b'"'),
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
fn unicode_escape(bytes: &[u8], k: usize) -> Option<(char, usize)> {
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

/// The highest-priority rule (in [`SecretKind`] declaration order) that matches anywhere in `text`.
#[must_use]
pub fn find_secret(text: &str) -> Option<SecretKind> {
    findings(text)
        .into_iter()
        .map(|f| f.kind)
        .min_by_key(|k| k.rank())
}

/// Whether any rule matches `text`.
#[must_use]
pub fn is_secret_like(text: &str) -> bool {
    find_secret(text).is_some()
}

/// `text` with every finding replaced by `[REDACTED:<rule>]`, and the highest-priority rule that
/// fired (`None`, and the text borrowed, when nothing did).
#[must_use]
pub fn redact(text: &str) -> (Cow<'_, str>, Option<SecretKind>) {
    let found = findings(text);
    if found.is_empty() {
        return (Cow::Borrowed(text), None);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in &found {
        out.push_str(&text[at..f.start]);
        out.push_str("[REDACTED:");
        out.push_str(f.kind.as_str());
        out.push(']');
        at = f.end;
    }
    out.push_str(&text[at..]);
    let top = found.iter().map(|f| f.kind).min_by_key(|k| k.rank());
    (Cow::Owned(out), top)
}

/// Opening tag of a private block: its content is never captured nor sent.
pub const PRIVATE_OPEN: &str = "<private>";
/// Closing tag of a private block.
pub const PRIVATE_CLOSE: &str = "</private>";

/// `text` without its `<private>…</private>` blocks (tags included, ASCII case ignored). An
/// unclosed block runs to the end of the text: when in doubt, less is kept.
#[must_use]
pub fn strip_private(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let Some(first) = find_ci(bytes, 0, PRIVATE_OPEN.as_bytes()) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let mut open = Some(first);
    while let Some(o) = open {
        out.push_str(&text[at..o]);
        match find_ci(bytes, o + PRIVATE_OPEN.len(), PRIVATE_CLOSE.as_bytes()) {
            Some(c) => at = c + PRIVATE_CLOSE.len(),
            None => return Cow::Owned(out),
        }
        open = find_ci(bytes, at, PRIVATE_OPEN.as_bytes());
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// The first `b` in `hay`. On x86-64 the SSE2 search is used directly: `memchr`'s default picks
/// its code with a CPU probe (`cpuid`, which a virtual machine traps: about 28 µs per process),
/// and SSE2 is part of x86-64 itself.
fn find_byte(b: u8, hay: &[u8]) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(one) = memchr::arch::x86_64::sse2::memchr::One::new(b) {
            return one.find(hay);
        }
    }
    memchr::memchr(b, hay)
}

/// Whether `f` holds at some position of `a` or `b` in `hay` (tried in order), without the CPU
/// probe (see [`find_byte`]).
fn any_of_two(a: u8, b: u8, hay: &[u8], f: impl FnMut(usize) -> bool) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if let Some(two) = memchr::arch::x86_64::sse2::memchr::Two::new(a, b) {
            return two.iter(hay).any(f);
        }
    }
    memchr::memchr2_iter(a, b, hay).any(f)
}

/// The first position of `needle` (lowercase ASCII, starting with a non-letter such as `<` or
/// `-`) at or after `from`, ignoring ASCII case.
fn find_ci(bytes: &[u8], from: usize, needle: &[u8]) -> Option<usize> {
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

// ---------------------------------------------------------------------------------------------
// The scan
// ---------------------------------------------------------------------------------------------

struct Scan<'t> {
    text: &'t str,
    bytes: &'t [u8],
    found: Vec<Finding>,
    /// The end of the furthest finding: rules starting before it are not tried again (the span
    /// is withheld or redacted anyway), which keeps a repeated `token=` linear.
    covered: usize,
    /// The start of the current line and which password-taking commands it names (bit set,
    /// computed once per line on the first short flag).
    line: (usize, Option<u16>),
    /// The start of the current line and the commands the line above carries onto it when it
    /// ends with a continuation.
    carry: (usize, u16),
    /// The last search for a PEM END line, reused by the next BEGIN line.
    pem_end: PemEnd,
    /// Bytes the END-line searches looked at (the work a prompt of BEGIN lines costs).
    pem_searched: usize,
    /// The last base64url run measured by the JWT rule, `[start, end)`.
    b64url_run: (usize, usize),
    /// The table whose rows the current line may continue (its header named a secret column).
    table: Option<Table>,
    /// The start of the last line tried as a table header: every secret word on it would
    /// otherwise parse the whole line again.
    header_tried: usize,
    /// Bytes of table headers and rows split into cells (the work a prompt of tables costs).
    table_read: usize,
    /// The end of the last SQL `INSERT` read: one that starts inside it is inside its strings.
    insert_end: usize,
    /// The end of the key [`Scan::key_at`] last measured when it is all letters and digits (`0`
    /// otherwise): the inside of that word starts nothing, and the scan goes on after it.
    plain_key_end: usize,
    /// The start and end of the key [`Scan::key_at`] last measured when it holds a separator
    /// and is long enough for a glued vendor prefix and its body (see [`Scan::glued_vendor_at`]).
    separated_key: (usize, usize),
    /// Where a key starts that may name a secret for [`same_line_tokens`] (its test before
    /// [`names_secret`]), in order, while `names_listed`: that pass then reads these words only.
    name_words: Vec<usize>,
    /// No key start went unlisted: no non-ASCII byte, no foreign password word.
    names_listed: bool,
}

/// A table whose header names secret columns: the cells under them in each row are values.
#[derive(Clone, Copy)]
struct Table {
    delim: u8,
    cells: usize,
    /// A bit per column (the first 64) whose header names a secret.
    secret: u64,
    /// Of those, the `token` columns: lexer, design and model tokens are tabulated as often as
    /// credentials, so only a random-looking cell counts.
    weak: u64,
    /// The name of each of the first 64 columns, `[start, end)` without quotes: split once, not
    /// for every cell of every row.
    names: [(usize, usize); 64],
}

/// What is known about `-----end ` after a position: searched `[from, to)`, first hit `found`.
#[derive(Default)]
struct PemEnd {
    from: usize,
    to: usize,
    found: Option<usize>,
}

/// Bytes a key may be made of (identifiers, dotted paths, header names, flags).
/// The scan's stand-in for a non-ASCII letter or digit before a byte: not a key boundary (a key
/// glued to other text is not one), but a token boundary (a token glued to it is still one).
const NON_ASCII_WORD: u8 = 0x80;

fn is_key_byte(b: u8) -> bool {
    KEY_CLASS[usize::from(b)] != 0
}

/// ASCII bytes that are neither a key's byte nor a byte rule's start (see [`Scan::run`]).
static PASSIVE_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 128 {
        t[b] = KEY_CLASS[b] == 0 && !STARTS_BYTE_RULE[b];
        b += 1;
    }
    t
};

/// The bytes a rule of [`Scan::run`]'s byte dispatch starts with.
static STARTS_BYTE_RULE: [bool; 256] = {
    let mut t = [false; 256];
    let mut k = 0;
    let bytes = b"-:.~${%";
    while k < bytes.len() {
        t[bytes[k] as usize] = true;
        k += 1;
    }
    t
};

impl<'t> Scan<'t> {
    fn new(text: &'t str) -> Self {
        Scan {
            text,
            bytes: text.as_bytes(),
            found: Vec::new(),
            covered: 0,
            line: (0, None),
            carry: (0, 0),
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
        }
    }

    fn push(&mut self, kind: SecretKind, start: usize, end: usize) {
        // Rules measure in bytes; a span that ended inside a character would make `redact`
        // slice it, so it is widened to whole characters.
        let (start, end) = (char_floor(self.bytes, start), char_ceil(self.bytes, end));
        // A key a vendor publishes as an example is no secret, whatever rule found it (a
        // connection string's field may run on past it: `…GMGw==;BlobEndpoint=…`); a value
        // that goes on with a random part (`<example UUID>.xK9mQ2…`) merely starts with one.
        if end >= start + 16
            && rules::documented_example_at(&self.bytes[start..end]).is_some_and(|n| {
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
        if end > start {
            self.found.push(Finding { kind, start, end });
            self.covered = self.covered.max(end);
        }
    }

    fn run(&mut self) {
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
            let inside = prefilter::WORD_BYTE[usize::from(b)] & prefilter::WORD_BEFORE[usize::from(prev)];
            if inside {
                // The rest of the word too: each of its bytes would take this branch.
                let end = run_end(bytes, i + 1, |c| c.is_ascii_alphanumeric());
                prev = bytes[end - 1];
                i = end;
                continue;
            }
            if !b.is_ascii() {
                self.names_listed = false;
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
                prev = if word { NON_ASCII_WORD } else { b' ' };
                i += len;
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
                    if may_name_secret(word) {
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
                self.plain_key_end = 0;
                self.key_at(i);
                plain_end = self.plain_key_end;
            }
            if prefilter::WORD_BYTE[usize::from(b)] && !inside {
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

    // --- rules anchored at the start of a word -------------------------------------------------

    /// Vendor shapes, JWTs and auth schemes at a word start; `prev` is what came before, `run`
    /// the end of the word when it is letters and digits up to a byte no key holds (`0`: not
    /// known).
    fn word_at(&mut self, i: usize, prev: u8, run: usize) {
        let bytes = self.bytes;
        let after_hyphen = prev == b'-';
        // The original filter's short shapes never start inside a dashed or dotted word
        // (`xoxe.xoxp-1-…` is the longer prefix's, judged by its own rule).
        let inside_word = after_hyphen || prev == b'.';
        let vendors = if prefilter::shorter_than_a_token(bytes, i, run) {
            &[]
        } else {
            let (b1, b2) = (
                bytes.get(i + 1).copied().unwrap_or(0),
                bytes.get(i + 2).copied().unwrap_or(0),
            );
            if rules::may_start(bytes[i], b1, b2) {
                rules::candidates(bytes[i], b1)
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
                let end = v.wrapped_end(bytes, i, end);
                self.push(SecretKind::Vendor(v.name), i, end);
                if v.name == "aws_access_key" {
                    self.aws_secret_near(end);
                }
                return;
            }
        }
        if after_hyphen {
            return;
        }
        // A key whose marker sits after a random head (Microsoft's identifiable keys).
        if !prefilter::shorter_than_a_head(bytes, i, run)
            && let Some((v, start, end)) = rules::headed_at(self.text, i)
        {
            self.push(SecretKind::Vendor(v.name), start, end);
            return;
        }
        if self.separated_key.0 == i && self.glued_vendor_at(i) {
            return;
        }
        if bytes.get(i + 32) == Some(&b'-') && bytes.get(i + 32..i + 35) == Some(b"-us") {
            self.mailchimp_at(i);
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
            }
            b'0'..=b'9' => self.telegram_at(i),
            b'p' | b's' | b'a' => self.crypt_word_at(i),
            b'M' | b'O' => self.discord_at(i),
            // Windows commands ignore case (`NET USE`).
            b'N' => {
                self.discord_at(i);
                self.command_at(i);
            }
            b'm' => {
                self.crypt_word_at(i);
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
            b'e' => {
                if let Some(end) = self.jwt_at(i) {
                    self.push(SecretKind::Jwt, i, end);
                }
            }
            _ => {}
        }
    }

    /// Maven's master password: the `<master>` element of a `<settingsSecurity>` document
    /// (`settings-security.xml`, which holds nothing else), its text judged as a password's.
    /// Encrypted (`{…}`, Maven's `--encrypt-master-password`) it fills a slot, as in `<password>`.
    fn maven_master_at(&mut self, i: usize) {
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
    fn glued_vendor_at(&mut self, i: usize) -> bool {
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
            let vendors = if rules::may_start(bytes[j], bytes[j + 1], bytes.get(j + 2).copied().unwrap_or(0))
            {
                rules::candidates(bytes[j], bytes[j + 1])
            } else {
                continue;
            };
            for v in vendors {
                let sep = v.prefix.iter().position(|&b| matches!(b, b'_' | b'-'));
                if v.prefix.len() >= 8
                    && sep == Some(end - j)
                    && let Some(e) = v.matches(self.text, j)
                    && e >= j + v.prefix.len() + 20
                    && looks_random(&bytes[j + v.prefix.len()..e], 16)
                {
                    let e = v.wrapped_end(bytes, j, e);
                    self.push(SecretKind::Vendor(v.name), j, e);
                    return true;
                }
            }
        }
        false
    }

    /// A Mailchimp API key: 32 lowercase hex characters, `-us` and the data center's number (gitleaks:
    /// mailchimp-api-key; detect-secrets: MailchimpDetector). The suffix is its own keyword.
    fn mailchimp_at(&mut self, i: usize) {
        let bytes = self.bytes;
        let key = &bytes[i..i + 32];
        let dc = run_end_max(bytes, i + 35, 3, |b| b.is_ascii_digit());
        if key
            .iter()
            .all(|&b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            && (1..=2).contains(&(dc - i - 35))
            && has_digit(key)
            && key.iter().any(u8::is_ascii_alphabetic)
            && !rules::filler_like(key)
            && !token_continues_at(self.text, dc)
        {
            self.push(SecretKind::Vendor("mailchimp_key"), i, dc);
        }
    }

    /// The 40-character secret access key pasted near an access key id (a credentials file, a
    /// console export): alone it has no shape of its own, next to its id it is the secret.
    fn aws_secret_near(&mut self, from: usize) {
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
    fn telegram_at(&mut self, i: usize) {
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
            && !rules::documented_example(&bytes[i..end])
        {
            self.push(SecretKind::Vendor("telegram_token"), i, end);
        }
    }

    /// Discord bot token: the base64 bot id (`M`/`N`/`O` + 23–25), `.`, 6, `.`, 27–38 base64url.
    fn discord_at(&mut self, i: usize) {
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
    /// `WITH <plugin>` between; `BY PASSWORD '*…'` is a hash, unquoted, and not read.
    fn identified_by_at(&mut self, i: usize) {
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
        if value.quoted && value_is_secret(bytes, &value, b"password", Strength::Strong, Mode::Literal) {
            self.push(SecretKind::Assignment, value.start, value.whole_end(bytes));
        }
    }

    /// SQL `INSERT INTO t (name, password) VALUES ('bob', '…'), …`: the value in the position of
    /// a secret column, in every row.
    fn insert_at(&mut self, i: usize) {
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
    fn table_header_at(&mut self, i: usize) {
        let bytes = self.bytes;
        let start = i - line_before(bytes, i).len();
        let stop = bytes.len().min(i + 512);
        let end = bytes[i..stop]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(stop, |p| i + p);
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
    fn key_cell_at(&mut self, i: usize, kend: usize, key: &[u8], strength: Strength) {
        let bytes = self.bytes;
        let line = line_before(bytes, i);
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
    fn table_row(&mut self, start: usize, end: usize, table: Table) -> bool {
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
    /// PASS`), `wpa_passphrase SSID PASS`, `net user NAME PASS`, `net use [Z:] \\srv\share PASS`;
    /// and `chpasswd`, whose input is `user:PASS` lines (echoed into it on its line, or a
    /// here-document below it).
    fn command_at(&mut self, i: usize) {
        let bytes = self.bytes;
        // Each command's first three letters rule out most words.
        if !bytes.get(i..i + 3).is_some_and(|head| {
            [b"htp", b"wpa", b"net", b"chp", b"vau"]
                .iter()
                .any(|c| head.eq_ignore_ascii_case(*c))
        }) {
            return;
        }
        let word_end = run_end_max(bytes, i, 16, |b| b.is_ascii_alphanumeric() || b == b'_');
        let (mut pos, mut wanted) = match lower(&bytes[i..word_end], &mut [0; 16]) {
            b"htpasswd" => (word_end, 0),
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
        let vault = bytes[i] | 0x20 == b'v';
        let net = bytes[i] | 0x20 == b'n';
        let net_use = wanted == 9;
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
            } else if net && !arg.quoted && a.starts_with(b"/") {
                if !net_use {
                    return;
                }
            } else if net_use && a.starts_with(b"\\\\") {
                wanted = 1;
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
                if wanted == 1 && value_is_secret(bytes, &arg, b"password", Strength::Strong, mode) {
                    self.push(SecretKind::CommandLine, arg.start, arg.whole_end(bytes));
                }
                return;
            }
        }
    }

    /// `user:password` pairs fed to `chpasswd`: on its line (`echo 'bob:…' | chpasswd`,
    /// `chpasswd <<< 'bob:…'`) and, after `<<`, on the lines below it.
    fn chpasswd_at(&mut self, i: usize) {
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
    fn chpasswd_pair(&mut self, s: usize, e: usize) -> bool {
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
    fn stdin_password_at(&mut self, i: usize, kend: usize) {
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
    /// credential (positional or after `-String`); a variable (`$plain`, `$env:X`) is none.
    fn secure_string_at(&mut self, i: usize) {
        let bytes = self.bytes;
        let mut pos = i + b"convertto-securestring".len();
        // The switch stands within the command's next 512 bytes: a window, not the rest of the
        // line, so a line repeating the cmdlet is not read once per occurrence.
        let end = line_end_max(bytes, i, 512).unwrap_or(bytes.len().min(i + 512));
        if !contains_ci(&bytes[i..end], b"-asplaintext") {
            return;
        }
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
            if value_is_secret(bytes, &arg, b"password", Strength::Strong, Mode::Literal) {
                self.push(SecretKind::CommandLine, arg.start, arg.whole_end(bytes));
            }
            return;
        }
    }

    /// `Bearer <token>` and `Basic <base64 of user:password>` anywhere.
    fn auth_scheme_at(&mut self, i: usize) {
        let bytes = self.bytes;
        let (scheme_end, basic) = if let Some(e) = eat_ci(bytes, i, b"bearer") {
            (e, false)
        } else if let Some(e) = eat_ci(bytes, i, b"basic") {
            (e, true)
        } else {
            return;
        };
        let start = skip_blank(bytes, scheme_end);
        if start == scheme_end || start >= bytes.len() {
            return;
        }
        let class =
            |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'~' | b'+' | b'/' | b'=' | b'-');
        // Judged on its head; a token cut there runs on to its real end once it is a secret.
        let end = run_end_max(bytes, start, MAX_VALUE, class);
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

    /// `eyJ…` header (≥ 10) `.` `eyJ…` payload (≥ 10) `.` signature (≥ 8), base64url.
    fn jwt_at(&mut self, i: usize) -> Option<usize> {
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
        (end - signature >= 8 && !token_continues_at(self.text, end)).then_some(end)
    }

    /// The rest of a JWE after its header (RFC 7516's compact form: encrypted key, IV,
    /// ciphertext and tag, base64url, the key empty under direct encryption): an encrypted
    /// token is as good as a signed one to whoever holds it.
    fn jwe_after(&mut self, from: usize) -> Option<usize> {
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
    fn b64url_end(&mut self, start: usize) -> usize {
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

    /// A key run starting at `i`: if it holds a secret word, what follows decides.
    fn key_at(&mut self, i: usize) {
        if self.password_word_at(i, i) {
            self.names_listed = false;
            return;
        }
        let bytes = self.bytes;
        // One pass over the key: its end, the separators and dashes it holds, and whether two
        // of its letters may start a secret word. Most keys hold none, and the rules that need
        // them are not tried (each would read the key again).
        // (`inner`: whether a segment starts past the key's first byte, see
        // [`prefilter::may_hold_keyword`].)
        let (run, held, pair, inner) = prefilter::measure_key(bytes, i);
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
        let keyword = prefilter::may_hold_keyword(key, inner != 0);
        let vend = if keyword {
            credential_words_end(bytes, kend)
        } else {
            kend
        };
        if keyword && keyword_value_may_follow(bytes, vend) {
            self.keyword_value_at(vend, key, false);
        }
        // `<property name="sonar.login" value="…"/>`, `- name: SONAR_LOGIN` then `value: …`: the
        // provider's value in the pair's value field.
        // (A name stands quoted, in its element or at its line's end, not in running code.)
        let name_like = keyword && bytes.get(kend).is_none_or(|b| b"\"'`<\n\r,".contains(b));
        if keyword
            && name_like
            && let Some(NamedValue::Field(e)) = self.named_value_field(i, kend)
        {
            self.keyword_value_at(e, key, false);
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
        let mut strength = word.strength;
        // `api key`, `secret key`, `client secret` written with a space.
        if strength == Strength::Weak && key.eq_ignore_ascii_case(b"key") && strong_word_before(bytes, i) {
            strength = Strength::Strong;
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
        self.keyword_value_at(kend, key, true);
    }

    /// The cookies of a `Cookie:`/`Set-Cookie:` line after the key ending at `kend`: each
    /// `name=value` pair's value when it looks generated (a session id), not a plain setting
    /// (`lang=en-US`, `theme=dark`) nor an attribute (`Path=/`).
    fn cookie_pairs_at(&mut self, kend: usize) {
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
    fn cookie_map_in(&mut self, from: usize, end: usize) {
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
    fn cookie_pairs_in(&mut self, from: usize, end: usize) {
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
    fn named_value_at(&mut self, i: usize, kend: usize, key: &[u8], strength: Strength) {
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
    fn named_value_field(&self, i: usize, kend: usize) -> Option<NamedValue> {
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
        let ends_ci = |w: &[u8], tail: &[u8]| {
            w.len() >= tail.len() && w[w.len() - tail.len()..].eq_ignore_ascii_case(tail)
        };
        if !(declared || ends_ci(field, b"name") || ends_ci(field, b"key"))
            || xml && (field_start == 0 || bytes[field_start - 1] != b'<')
        {
            return None;
        }
        // Forward: the value field, before the entry closes (`}`, a blank line, another name).
        let stop = bytes.len().min(kend + 256);
        let mut k = kend;
        let mut depth = 0i32;
        while k < stop {
            let b = bytes[k];
            // A declaration's block closes where its braces balance (`{}` holds no default).
            depth += i32::from(b == b'{') - i32::from(b == b'}');
            if (!declared || depth <= 0) && (b == b'}' || b == b']') || bytes[k..].starts_with(b"\n\n") {
                return None;
            }
            if b.is_ascii_alphabetic() && (k == 0 || !is_key_byte(bytes[k - 1])) {
                let e = run_end_max(bytes, k, 32, |c| c.is_ascii_alphanumeric() || c == b'_');
                let word = &bytes[k..e];
                // A closing tag (`</key>`) ends the name's element, not the entry.
                if xml && bytes[..k].ends_with(b"</") {
                    k = e;
                    continue;
                }
                if xml && ends_ci(word, b"value") && bytes[..k].ends_with(b"<") && bytes.get(e) == Some(&b'>')
                {
                    return Some(NamedValue::Element(e + 1));
                }
                if ends_ci(word, b"name") || ends_ci(word, b"key") {
                    return None;
                }
                if ends_ci(word, b"value") || declared && word == b"default" {
                    return Some(NamedValue::Field(e));
                }
                k = e;
                continue;
            }
            k += 1;
        }
        None
    }

    /// A template parameter the key names, its value the `Default` of the block the key opens:
    /// a CloudFormation parameter (`DBPassword:` / `  Type: String` / `  Default: …`, or
    /// `"DBPassword": {"Type": "String", "Default": "…"}`), which is the secret wherever the
    /// stack is deployed without one. The block ends at a line no deeper than the key's, or
    /// where its braces close.
    fn parameter_default_at(&mut self, i: usize, kend: usize, key: &[u8], strength: Strength) {
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
        let margin = |s: usize| run_end(bytes, s, |c| matches!(c, b' ' | b'\t')) - s;
        let indent = margin(line_start_of(bytes, i));
        let stop = bytes.len().min(kend + 512);
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
    fn env_default_at(&mut self, i: usize, kend: usize, key: &[u8], strength: Strength) {
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
    fn glued_keyword_value(&mut self, i: usize, kend: usize, key: &[u8]) {
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
        if word.len() >= 2
            && token.len() >= 16
            && has_digit(token)
            && token.iter().any(u8::is_ascii_alphabetic)
            && entropy(token) >= 3.0
            && !is_placeholder(token)
            && (named || !token.iter().all(u8::is_ascii_hexdigit))
            && !token_continues_at(self.text, kend)
            && let Some(name) = rules::keyword_match(word, token)
        {
            self.push(SecretKind::Vendor(name), i + d + 1, kend);
        }
    }

    /// A provider's word in a key that names no secret (`sourcegraph: …`, `TWITCH_CLIENT=…`,
    /// `set("algolia", "…")`, `<datadog>…</datadog>`, `facebook …`), then any assignment or
    /// argument syntax, then a random-looking value of that provider's shape (see the keyword
    /// rules in `rules/keyword.toml`).
    fn keyword_value_at(&mut self, kend: usize, key: &[u8], generic: bool) {
        let bytes = self.bytes;
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
                    && entropy(t) >= 3.0
                    && !is_placeholder(t)
                    && let Some(name) = rules::keyword_match(key, t)
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
        if token_closed
            && token.len() >= 16
            && has_digit(token)
            && token.iter().any(u8::is_ascii_alphabetic)
            && entropy(token) >= 3.0
            && !is_placeholder(token)
            && !generic
            && let Some(name) = rules::keyword_match(key, token)
        {
            self.push(SecretKind::Vendor(name), p, token_end);
            return;
        }
        if !generic || secret_word(key).is_none() {
            return;
        }
        let operand = KeywordOperand {
            op,
            start: p,
            has_operator,
            quote,
        };
        self.generic_keyword_value(key, &operand, token_end, token_closed);
    }

    /// A secret word's key followed by a generated value (`operand`), the value running to
    /// `token_end` when it is neither quoted nor a password with symbols.
    fn generic_keyword_value(
        &mut self,
        key: &[u8],
        operand: &KeywordOperand,
        token_end: usize,
        token_closed: bool,
    ) {
        let bytes = self.bytes;
        let (op, p, has_operator, quote) = (operand.op, operand.start, operand.has_operator, operand.quote);
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
            let raw = run_end_max(bytes, p, 256, |b| {
                !(b.is_ascii_whitespace() || element && b == b'<')
            });
            // An element's closing tag (`…</Generic_Key>`) is markup, not the value's.
            let raw = bytes[p..raw]
                .windows(2)
                .position(|w| w == b"</")
                .map_or(raw, |k| p + k);
            let v = trim_end_of(&bytes[p..raw], |b| matches!(b, b',' | b';' | b'"' | b'\'' | b'`'));
            let symbols = v.iter().filter(|b| b.is_ascii_punctuation()).count();
            let code = code_expression(v)
                || v.windows(2).any(|w| w == b"()")
                || v.contains(&b'\\')
                || sigil_code(v)
                || composite_literal(v)
                || cmdlet(v);
            (symbols >= 4 && !code && entropy(v) >= 4.0).then_some(p + v.len())
        };
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
        // A strong word's value may be a short password; a weak word's must look generated.
        let strong = secret_word(key).is_some_and(|w| w.strength == Strength::Strong);
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
        // What the rules for this key's syntax found stands (their span and kind are finer).
        let found = self
            .found
            .iter()
            .rev()
            .take(8)
            .any(|f| f.start < end && p < f.end);
        // A quoted entry of its own (`'JWT_SECRET=…'` after `'# Auth',`): its own key judges it.
        let entry = quoted_end.is_some() && {
            let name = run_end(value, 0, |b| b.is_ascii_alphanumeric() || b == b'_');
            name >= 2 && value.get(name) == Some(&b'=') && value[0].is_ascii_alphabetic()
        };
        if closed
            && !found
            && !entry
            && (has_operator || quoted_end.is_some())
            && (!value.contains(&b' ') || quoted_end.is_some() && spaced_random(value))
            && random
            && !is_placeholder(value)
            && !is_reference(value)
            && !names_no_secret(value)
            && !(quote.is_none()
                && (constant_like(value)
                    || member_path(trim_end_of(value, |b| matches!(b, b';' | b',' | b')')))
                    || composite_literal(value)
                    || cmdlet(value)))
            && !code_continuation(value)
            && !quoted_slot(value)
            && !url_stand_in_userinfo(value)
            && !ldap_dn(value)
            // An absolute path (`"/en/enterprise-server@3.0/auth"`) or a URL of words is no
            // generated value.
            && (!value.starts_with(b"/") || random_after_slash(value))
            && !readable_url(value)
            && (strong || !base64_text(value))
            && !digest_of_secret(bytes, key, value)
            && !within_arn(bytes, p)
        {
            self.push(SecretKind::Assignment, p, end);
        }
    }

    /// The word for password in another language (see [`PASSWORD_WORDS`]), judged as `password`
    /// is: `Passwort: …` as a mapping, `mein Passwort ist …` as prose, `密码：…`, and `密码是…`,
    /// `パスワードは…` or `비밀번호는…`, where a particle glued to the word reads `is`. A key that
    /// starts at `kstart` before `i` holds the word as a segment (`DB_KENNWORT_PROD`).
    #[inline(always)]
    fn password_word_at(&mut self, kstart: usize, i: usize) -> bool {
        let mask = prefilter::password_words_at(self.bytes, i);
        mask != 0 && self.password_word(kstart, i, mask)
    }

    /// [`Scan::password_word_at`] for the words of `mask`, those that may start at `i`.
    fn password_word(&mut self, kstart: usize, i: usize, mut mask: u16) -> bool {
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
        let mut strength = Strength::Strong;
        if word == "clave" {
            match [&b" de acceso"[..], b" secreta"]
                .iter()
                .find_map(|w| eat_ci(bytes, end, w))
            {
                Some(e) => end = e,
                None => strength = Strength::Weak,
            }
        }
        let key: &[u8] = if strength == Strength::Weak {
            b"clave"
        } else {
            b"password"
        };
        // A segment of a longer key (`DB_KENNWORT`, `KENNWORT2`, `KENNWORT_PROD`, `Пароль_БД`,
        // `비밀번호_확인`), not its metadata (`KENNWORT_FILE`, `MAX_KENNWORT`). Chinese, Japanese
        // and Korean glue particles to the word; other scripts' words stand alone
        // (`Passwortlänge` is a length, `пароля` another case).
        let mut kend = end;
        while kend < end + 128 {
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
                || qualified_before(&bytes[kstart..i])
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
    /// `NetworkCredential("admin", "…")`, `PasswordAuthentication("admin", "…".toCharArray())`: a
    /// user and a password passed together to what names authentication. The second argument and
    /// the third (`keyring.set_password(service, user, "…")`) are each a password when they are
    /// random-looking strings.
    fn credential_pair_at(&mut self, key: &[u8], kend: usize) {
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
        ]
        .iter()
        .chain(PASSWORD_KEYS)
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
        let mut from = open + 1;
        for arg in 0..2 {
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

    /// An Azure SAS signature, `?…&sig=<base64>` in a URL query: the signature grants the access.
    fn sas_signature_at(&mut self, i: usize, kend: usize) {
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
    fn flag_at(&mut self, i: usize, kend: usize) {
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
            if self.line_commands(i) & KEYTOOL != 0
                && matches!(bytes.get(kend), Some(b' ' | b'\t'))
                && let Some((value, next)) = next_arg(bytes, kend)
            {
                let mode = if value.quoted || args_end(bytes, next) {
                    Mode::Literal
                } else {
                    Mode::Code
                };
                if value_is_secret(bytes, &value, b"password", Strength::Strong, mode) {
                    self.push(SecretKind::CommandLine, value.start, value.whole_end(bytes));
                }
            }
            return;
        }
        // A Java system property (`-Dsonar.login=…`, `-Dspring.datasource.password=…`): the
        // property is the key.
        if dashes == 1 && name.len() > 2 && name[0] == b'D' && bytes.get(kend) == Some(&b'=') {
            let key = &name[1..];
            self.keyword_value_at(kend, key, false);
            if let Some(word) = secret_word(key) {
                self.assignment_after(i + 2, kend, key, word.strength, SecretKind::CommandLine, true);
            }
            return;
        }
        // PowerShell's and Windows tools' named parameters (`Connect-VIServer … -Password …`,
        // `-ClientSecret …`): a value after a blank, judged as prose is (random-looking).
        if dashes == 1
            && name.len() > 2
            && matches!(bytes.get(kend), Some(b' ' | b'\t'))
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
        let Some(word) = secret_word(name) else {
            return;
        };
        if self.listed_argument_at(i, kend, name, word.strength) {
            return;
        }
        self.assignment_after(i, kend, name, word.strength, SecretKind::CommandLine, true);
    }

    /// A command's arguments written as a list (`["--password", "…"]` in JSON, Python or a
    /// Dockerfile's exec form, `exec.Command("psql", "--token", "…")`, a YAML sequence's
    /// `- --api-key` then `- …`): the element after the flag `[i, kend)` is its value, judged as a
    /// literal when it is quoted (an unquoted element is a variable: `pw`, `token`). Returns
    /// whether the flag is such an element with an element after it.
    fn listed_argument_at(&mut self, i: usize, kend: usize, name: &[u8], strength: Strength) -> bool {
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
    fn short_flag_at(&mut self, i: usize, kend: usize, flag: u8, glued: bool) {
        let bytes = self.bytes;
        let commands = self.line_commands(i);
        let has = |set: u16| commands & set != 0;
        // `-k`, `-N` and `-P` are common flags: the command they belong to must be theirs
        // (`openssl s_client … ; curl -k …` is curl's).
        let in_segment = |name: &[u8]| contains_ci(command_segment(bytes, i), name);
        // Whether the flag takes a password after a blank, glued, and what separates a user
        // before it.
        let (spaced_ok, glued_ok, user_sep) = match flag {
            // mysql's spaced `-p` prompts, and the database name follows it.
            b'p' => (
                has(LOGIN | MONGO) || !has(MYSQL) && after_user_flag(bytes, i),
                has(MYSQL),
                None,
            ),
            b'P' => (
                has(SQLCMD) || has(SSH_KEYGEN) && in_segment(b"ssh-keygen"),
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
            i + 2
        } else if !glued && spaced_ok && matches!(bytes.get(kend), Some(b' ' | b'\t' | b'=')) {
            skip_blank(bytes, kend + 1)
        } else {
            return;
        };
        let Some(value) = Value::parse(bytes, start, Stop::Blank) else {
            return;
        };
        let v = value.text(bytes);
        if v.starts_with(b"-") || is_reference(v) {
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

    /// A line starts at `i`. One continued onto it (`\`, PowerShell's `` ` ``, cmd's `^` before
    /// the newline) carries its commands (`keytool … \` NEWLINE `-storepass …`): looked up once
    /// for that line, so a run of continued lines stays linear.
    fn new_line(&mut self, i: usize) {
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
    fn line_commands(&mut self, i: usize) -> u16 {
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
        let mut set = 0;
        for (bit, names) in [
            (
                LOGIN,
                &[
                    &b"docker login"[..],
                    b"podman login",
                    b"buildah login",
                    b"registry login",
                    b"nerdctl login",
                    b"sshpass",
                ][..],
            ),
            (MYSQL, &[&b"mysql"[..], b"mariadb"][..]),
            (REDIS, &[&b"redis-cli"[..]][..]),
            (CURL, &[&b"curl"[..]][..]),
            (MONGO, &[&b"mongosh"[..], b"mongo "][..]),
            (SQLCMD, &[&b"sqlcmd"[..]][..]),
            (
                LDAP,
                &[
                    &b"ldapsearch"[..],
                    b"ldapadd",
                    b"ldapmodify",
                    b"ldapdelete",
                    b"ldappasswd",
                    b"ldapwhoami",
                ][..],
            ),
            (SMB, &[&b"smbclient"[..]][..]),
            (LFTP, &[&b"lftp"[..]][..]),
            (SSH_KEYGEN, &[&b"ssh-keygen"[..]][..]),
            (OPENSSL, &[&b"openssl"[..]][..]),
            (KEYTOOL, &[&b"keytool"[..], b"jarsigner"][..]),
        ] {
            if names.iter().any(|n| contains_ci(line, n)) {
                set |= bit;
            }
        }
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
    fn assignment_after(
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
        let line = line_before(bytes, kstart);
        let colon = sep == Some(1) && bytes[pos] == b':';
        let quoted_key = pos > kend;
        // `<password>…</password>`: the element's text is the value.
        if sep.is_none() && bytes.get(pos) == Some(&b'>') && kstart > 0 && bytes[kstart - 1] == b'<' {
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
        self.assigned_value(pos, mode, &site);
    }

    /// An element whose `type` or `spec` attribute declares it a password (`<input
    /// type="password" value="…">`, a CI server's `<param … value="…" spec="password …">`, the
    /// key at `kstart..kend` being that attribute's first word): its `value` attribute, on the
    /// same line in the same tag, is the password.
    fn typed_password_element(&mut self, kstart: usize, kend: usize, kind: SecretKind) {
        let bytes = self.bytes;
        let before = line_before(bytes, kstart);
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
    fn separator_at(
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
            // `std::string secret("…")`: a literal passed to what the key names.
            // A capitalised name is a type (`new ClientSecretCredential("<tenant>", …)`).
            (Some(b'('), Some(b'"' | b'\'')) if !spaced_before && !camel_type(key) => {
                self.compared_at(pos, key, strength, kind);
                return None;
            }
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
    fn element_text(&mut self, start: usize, key: &[u8], strength: Strength, kind: SecretKind) {
        let bytes = self.bytes;
        let close = run_end_max(bytes, start, MAX_VALUE, |b| b != b'<' && b != b'\n');
        let start = run_end(bytes, start, |b| matches!(b, b' ' | b'\t')).min(close);
        let mut end = close;
        while end > start && matches!(bytes[end - 1], b' ' | b'\t') {
            end -= 1;
        }
        let value = Value {
            start,
            end,
            quoted: true,
            raw_end: end,
            span_end: end,
            cut: false,
            quote: 0,
            stop: Stop::Code,
        };
        // Closed by a tag (`</password>`), not by the next slot (`<password>&scope=… <client_id>`).
        if end > start
            && bytes.get(close) == Some(&b'<')
            && bytes.get(close + 1) == Some(&b'/')
            && value_is_secret(bytes, &value, key, strength, Mode::Literal)
        {
            self.push(kind, start, end);
        }
    }

    /// Where the value after the separator (`sep` at `pos`) starts and how it is read; `None`
    /// when there is no value or it was judged here (a glued `key:value`, a netrc line).
    fn assignment_mode(
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
                if next > pos && matches!(bytes.get(next), Some(b' ' | b'\t')) {
                    pos = skip_space(bytes, next);
                }
                let spaced_after = pos > after;
                let glued_colon =
                    bytes[after - 1] == b':' && !site.spaced_before && !spaced_after && !site.quoted_key;
                if glued_colon && !matches!(bytes.get(pos), Some(b'"' | b'\'' | b'`')) {
                    // `key:value` glued is an ARN, URN or path segment more often than a
                    // mapping: only a random-looking value without further colons counts.
                    let value = Value::parse(bytes, pos, Stop::Code)?;
                    let v = value.text(bytes);
                    if !v.contains(&b':') && value_is_secret(bytes, &value, key, strength, Mode::Prose) {
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

    /// The value starting at `pos`, read in `mode`, and whether it is the key's secret.
    fn assigned_value(&mut self, pos: usize, mode: Mode, site: &KeySite) {
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
        if mode == Mode::Prose {
            kind = SecretKind::Prose;
        }
        if value_is_secret(bytes, &value, key, strength, mode) {
            self.push(kind, value.start, value.whole_end(bytes));
        } else if mode == Mode::Prose
            && value.quoted
            && strength == Strength::Strong
            && password_key(key)
            && value.text(bytes).len() >= 4
            && quoted_word(value.text(bytes))
            && !is_placeholder(value.text(bytes))
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
            && trim_ascii(line).iter().all(|&b| b == b'-')
            && letters_password(bytes, &value, key)
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
        }
    }

    /// A literal compared with or passed to the key (`password == "…"`, `secret !== '…'`,
    /// `secret("…")`, the operator at `pos`): the literal is what the secret must be. Only a
    /// quoted literal counts; a variable compared with another is code.
    fn compared_at(&mut self, pos: usize, key: &[u8], strength: Strength, kind: SecretKind) {
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
        let closed = matches!(bytes.get(value.end + 1), Some(b')' | b',' | b';'));
        if call && !closed {
            return;
        }
        self.compared_literal(&value, key, strength, kind);
    }

    /// `"…" == password`, `'…' !== secret`: the quoted literal before a comparison with the key.
    fn compared_before(&mut self, kstart: usize, key: &[u8], strength: Strength, kind: SecretKind) {
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
        let Some(&quote) = p.checked_sub(1).and_then(|k| bytes.get(k)) else {
            return;
        };
        if !matches!(quote, b'"' | b'\'') {
            return;
        }
        let close = p - 1;
        let from = close.saturating_sub(MAX_VALUE);
        let Some(open) = bytes[from..close].iter().rposition(|&b| b == quote || b == b'\n') else {
            return;
        };
        let open = from + open;
        if bytes[open] != quote {
            return;
        }
        let value = Value {
            start: open + 1,
            end: close,
            quoted: true,
            raw_end: close,
            span_end: close,
            cut: false,
            quote,
            stop: Stop::Code,
        };
        self.compared_literal(&value, key, strength, kind);
    }

    fn compared_literal(&mut self, value: &Value, key: &[u8], strength: Strength, kind: SecretKind) {
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
    fn ldif_base64_at(&mut self, pos: usize, key: &[u8], kind: SecretKind) {
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
    fn pem_at(&mut self, i: usize) {
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
        let mut label = &bytes[after..words];
        if four {
            label = label.strip_suffix(b" ").unwrap_or(label);
        }
        let label = label.strip_suffix(b" BLOCK").unwrap_or(label);
        if label.len() < 11 || !label[label.len() - 11..].eq_ignore_ascii_case(b"private key") {
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
                    if pem_illustration(&bytes[eol.min(e)..e]) {
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
                    let quoted = matches!(bytes.get(words + armor.len()), Some(b'"' | b'\'' | b'`'));
                    if quoted && !base64_run(&bytes[words + armor.len()..end], 24) {
                        self.covered = self.covered.max(eol);
                        return;
                    }
                    end
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
    fn pem_end_after(&mut self, from: usize) -> Option<usize> {
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

    fn pem_search(&mut self, from: usize, resume: usize, limit: usize) -> Option<usize> {
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
    fn url_credentials_at(&mut self, i: usize) {
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

    /// A URL's user that is a token (`https://<token>@host`): long and random.
    fn token_user(&mut self, start: usize, end: usize) {
        let user = &self.bytes[start..end];
        if user.len() >= 20 && user.iter().all(|&b| word_class(b) || b == b'-') && looks_random(user, 20) {
            self.push(SecretKind::UrlCredentials, start, end);
        }
    }

    /// A password hash in crypt's `$id$[params$]salt$hash` form, as good as the password to an
    /// offline attack: bcrypt (`$2b$12$` + 53), md5-crypt (`$1$`, Apache's `$apr1$`), sha256- and
    /// sha512-crypt (`$5$`, `$6$`), yescrypt (`$y$`), scrypt (`$7$`), argon2 (`$argon2id$v=19$…`).
    fn crypt_hash_at(&mut self, i: usize) {
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
    fn kerberos_hash_at(&mut self, i: usize, id_end: usize) {
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
    fn crypt_word_at(&mut self, i: usize) {
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
    fn crypt_fields(&mut self, i: usize, id_end: usize, hash_len: std::ops::RangeInclusive<usize>) {
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
    fn ldap_hash_at(&mut self, i: usize) {
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
    fn terraform_at(&mut self, i: usize) {
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
    fn azure_ad_at(&mut self, i: usize) {
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
        if (31..=34).contains(&(end - i - 1)) && !fabricated(&bytes[i + 1..end]) {
            self.push(SecretKind::Vendor("azure_client_secret"), start, end);
        }
    }

    // --- anchored at the start of a line -------------------------------------------------------

    fn line_start(&mut self, i: usize) {
        let bytes = self.bytes;
        let s = skip_blank(bytes, i);
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

// ---------------------------------------------------------------------------------------------
// Keys and values
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strength {
    /// Any non-placeholder value is a secret.
    Strong,
    /// Only a random-looking value is (`key`, `auth`, `pass`, plurals).
    Weak,
}

/// A key found by the scan and what surrounds it, carried from reading its separator to judging
/// its value.
struct KeySite<'a> {
    key: &'a [u8],
    strength: Strength,
    kind: SecretKind,
    /// Read after a command's flag: the value is a literal.
    flag: bool,
    /// The line before the key.
    line: &'a [u8],
    /// Blanks between the key and its separator.
    spaced_before: bool,
    /// The key was quoted (`"password": …`).
    quoted_key: bool,
    /// The separator is a lone `:`.
    colon: bool,
}

/// Where a keyword's value starts after the key ending at `kend`: the operator's start, the
/// value's start and whether an operator stands between; `None` when what follows is no value.
fn keyword_operand(bytes: &[u8], kend: usize, generic: bool) -> Option<(usize, usize, bool)> {
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
        if next > p && bytes.get(next).is_some_and(blank) {
            p = next;
            while bytes.get(p).is_some_and(blank) {
                p += 1;
            }
        }
    }
    Some((op, p, has_operator))
}

/// [`KEY_CLASS`]: a byte of a key.
const KEY_BYTE: u8 = 1;
/// [`KEY_CLASS`]: a separator of a key's segments (`_`, `-`, `.`).
const KEY_SEPARATOR: u8 = 2;
/// [`KEY_CLASS`]: a dash.
const KEY_DASH: u8 = 4;

/// What each byte is to a key (see [`is_key_byte`]), as bits, so one lookup per byte measures a
/// key and what it holds.
static KEY_CLASS: [u8; 256] = {
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

/// Whether a keyword's value of a provider's least length (16) may follow the key ending at
/// `kend` ([`keyword_operand`], then [`KEYWORD_TOKEN`] bytes): only quotes, blanks, line breaks,
/// operator bytes and dashes stand between a key and its value, so the value cannot reach 16
/// bytes past `kend` unless the run of value bytes after those does. Most words are followed by a
/// short word, and no operand is read.
fn keyword_value_may_follow(bytes: &[u8], kend: usize) -> bool {
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

/// The words [`credential_word`] builds a key of.
const CREDENTIAL_WORDS: &[&[u8]] = &[
    b"access", b"secret", b"private", b"token", b"apikey", b"api", b"key", b"auth",
];

/// The first two letters of each of [`CREDENTIAL_WORDS`], in either case (a bit per `(first & 31,
/// second & 31)`; a one-letter word sets its whole row): most words start with none of them, and
/// are neither measured, split nor compared. Other bytes may share a bit, which only costs the
/// comparison.
static CREDENTIAL_PAIRS: [u32; 32] = {
    let mut t = [0u32; 32];
    let mut k = 0;
    while k < CREDENTIAL_WORDS.len() {
        let w = CREDENTIAL_WORDS[k];
        t[(w[0] & 31) as usize] |= if w.len() < 2 { u32::MAX } else { 1 << (w[1] & 31) };
        k += 1;
    }
    t
};

/// Whether `seg` may start with one of [`CREDENTIAL_WORDS`] (true when it is shorter than two
/// bytes).
fn may_start_credential_word(seg: &[u8]) -> bool {
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
fn credential_word_tail(key: &[u8]) -> bool {
    let last = key.rsplit(|&b| matches!(b, b'_' | b'.')).next().unwrap_or(key);
    (1..last.len()).any(|k| {
        let (a, b) = (last[k - 1], last[k]);
        a.is_ascii_lowercase() && b.is_ascii_uppercase() && credential_word(&last[k..])
    }) || last.len() < key.len() && credential_word(last)
}

/// Past up to three words that name a credential after a key ending at `kend`, each after blanks
/// (`pdfshift ACCESS …`, `eventbrite private access key …`); `kend` itself when none follows.
fn credential_words_end(bytes: &[u8], kend: usize) -> usize {
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
static KEYWORD_TOKEN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = (b as u8).is_ascii_alphanumeric()
            || matches!(b as u8, b'-' | b'_' | b'+' | b'/' | b'=' | b'.' | b'~' | b'|');
        b += 1;
    }
    t
};

/// Where a keyword's value starts, carried from reading the operator to reading the value.
struct KeywordOperand {
    /// The operator's start.
    op: usize,
    /// The value's start (past an opening quote).
    start: usize,
    has_operator: bool,
    /// The value's opening quote.
    quote: Option<u8>,
}

/// Where a key's text ends: past a closing quote (and the `]` of `config['SECRET_KEY']`) and
/// an array's size (`secret[25]`).
fn key_tail_end(bytes: &[u8], kend: usize) -> usize {
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
enum NamedValue {
    Field(usize),
    Element(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// A quoted value, a shell/env assignment or a flag: the text is the value itself.
    Literal,
    /// `key: value` / `key = value` in code or config: identifiers and types are not values.
    Code,
    /// The secret word in a sentence: only a random-looking word counts.
    Prose,
}

struct SecretWord {
    strength: Strength,
    authorization: bool,
}

/// The word for password in German, French, Spanish, Portuguese, Dutch, Chinese, Japanese,
/// Korean and Russian (Italian writes `password`): a key of its own, judged as `password` is.
/// ASCII case is ignored; other capitals are entries of their own (at most 16: a `u16` mask).
const PASSWORD_WORDS: &[&str] = &[
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
];

/// For each byte, the bit set of [`PASSWORD_WORDS`] that start with it (either ASCII case), and
/// (second array) that have it second: most words are ruled out by two lookups and an AND.
static PASSWORD_WORD_INDEX: [[u16; 256]; 2] = {
    let mut index = [[0u16; 256]; 2];
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
struct Words {
    text: &'static [u8],
    at: &'static [(u16, u8)],
}

impl Words {
    /// The words, in order.
    fn iter(&self) -> impl Iterator<Item = &'static [u8]> {
        let text = self.text;
        self.at
            .iter()
            .map(move |&(start, len)| &text[usize::from(start)..usize::from(start) + usize::from(len)])
    }
}

/// How many words a space-separated list holds.
const fn word_count(text: &[u8]) -> usize {
    let (mut i, mut n) = (0, 0);
    while i < text.len() {
        if text[i] != b' ' && (i == 0 || text[i - 1] == b' ') {
            n += 1;
        }
        i += 1;
    }
    n
}

/// Where each word of a space-separated list starts, and its length (at most 255 bytes, the
/// list at most 64 KiB: compilation fails otherwise).
const fn word_index<const N: usize>(text: &[u8]) -> [(u16, u8); N] {
    assert!(text.len() <= u16::MAX as usize, "word list too long");
    let mut at = [(0u16, 0u8); N];
    let (mut i, mut k) = (0, 0);
    while i < text.len() {
        if text[i] != b' ' && (i == 0 || text[i - 1] == b' ') {
            let mut e = i;
            while e < text.len() && text[e] != b' ' {
                e += 1;
            }
            assert!(e - i <= u8::MAX as usize, "word too long");
            // Both fit: checked above.
            at[k] = (i as u16, (e - i) as u8);
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
        const AT: [(u16, u8); word_count(TEXT)] = word_index(TEXT);
        Words { text: TEXT, at: &AT }
    }};
}

/// No words.
const NO_WORDS: Words = words_of!(b"");

/// Suffixes after a secret word that make the key metadata about a secret, not the secret.
const QUALIFIERS: Words = words_of!(
    b"count len limit max min size ttl expir timeout type kind name file path dir \
    url uri endpoint id field header prefix suffix env var hint policy pattern regex rule label input \
    prompt reset required enabled strategy provider manager store service cache valid strength format \
    encod helper handler mode version index idx pos offset iz hash digest stdin from source ref cmd \
    command usage budget rate stream lifetime age created updated location loc exists set present error \
    message msg text placeholder schema class style visible show hide mask changed per used total window \
    list ize ization ing less ary ive bucket estimat counter confirm_field algorithm algo issuer \
    audience backend scope engine rounds iterations cost enforc state status extract encoder decoder \
    hasher generator validator verifier parser serializer factory loader resolver storage method"
);

/// Prefixes before a secret word that make the key metadata (`max_tokens`, `is_secret`).
const PREFIX_QUALIFIERS: Words = words_of!(
    b"max min num n total prompt input output completion forgot reset show \
    hide is has use no next prev last first count cached reasoning thinking context byte bypass validate \
    check verify require toggle by com sur existing socket public publishable pub"
);

/// Accounts whose word glued to `pass` names their password (`userpass`, `dbpass`, `rootpass`).
const PASS_OWNERS: &[&[u8]] = &[
    b"user", b"db", b"admin", b"root", b"sql", b"mysql", b"pg", b"ftp", b"smtp", b"mail", b"ldap", b"proxy",
    b"ssh", b"redis", b"vnc",
];

/// Words glued to `key` that make it a credential's name (`apikey`, `SECRETKEY`, `masterkey`).
const KEY_COMPOUNDS: &[&[u8]] = &[
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
];

/// The first two letters a secret word may start with (either ASCII case), as two bit sets: a
/// byte's bits in the first array are the words it may start, in the second those it may follow
/// as their second letter (`p` then `a`, `w` or `r`; `s` or `k` then `e`; `t` then `o`; `a` then
/// `p`, `c` or `u`; `c` then `r` or `o`).
static SECRET_WORD_PAIRS: [[u8; 256]; 2] = {
    const PAIRS: [(&[u8], &[u8]); 5] = [
        (b"p", b"awr"),
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
fn secret_word_start(key: &[u8], j: usize) -> bool {
    let at = |k: usize| key.get(k).map_or(0, |b| b | 0x20);
    matches!(
        (at(j), at(j + 1), at(j + 2)),
        (b'p', b'a', b's' | b't')
            | (b'p', b'w', _)
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
fn may_hold_secret_word(key: &[u8]) -> bool {
    // (No word starts at the last byte: nothing is its second.)
    key.windows(2).enumerate().any(|(j, w)| {
        SECRET_WORD_PAIRS[0][usize::from(w[0])] & SECRET_WORD_PAIRS[1][usize::from(w[1])] != 0
            && secret_word_start(key, j)
    })
}

/// The strongest secret word in `key`, unless a qualifier makes the key metadata.
fn secret_word(key: &[u8]) -> Option<SecretWord> {
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
        if qualified_before(&key[..j]) {
            j = end;
            continue;
        }
        let mut tail = &key[end..];
        // A plural is about several secrets or a count of them: only random values count.
        if tail.first().is_some_and(|b| b | 0x20 == b's')
            && tail.get(1).is_none_or(|b| !b.is_ascii_lowercase())
        {
            tail = &tail[1..];
            strength = Strength::Weak;
        }
        if !qualified_after(tail) && !last_word_qualified(tail) {
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
fn secret_word_at(key: &[u8], j: usize) -> Option<(usize, Strength, bool)> {
    // A word from `j` to `e` that is a segment of its own.
    let alone = |e: usize| {
        (j == 0 || !key[j - 1].is_ascii_alphabetic()) && key.get(e).is_none_or(|b| !b.is_ascii_alphabetic())
    };
    match key[j] | 0x20 {
        b'p' => longest(key, j, &[b"password", b"passwd", b"passphrase", b"passcode"])
            .map(|e| (e, Strength::Strong, false))
            .or_else(|| two_part(key, j, b"private", b"key").map(|e| (e, Strength::Strong, false)))
            .or_else(|| eat_ci(key, j, b"pwd").map(|e| (e, Strength::Strong, false)))
            // `pw` only as a segment of its own (`my pw is`, `DB_PW`), not in `upward`.
            .or_else(|| {
                eat_ci(key, j, b"pw")
                    // `olcRootPW`: capitals end a CamelCase key.
                    .filter(|&e| {
                        alone(e) || e == key.len() && key[j..e] == *b"PW" && key[j - 1].is_ascii_lowercase()
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
                    let owned = e == key.len()
                        && PASS_OWNERS.iter().any(|o| {
                            j >= o.len()
                                && key[j - o.len()..j].eq_ignore_ascii_case(o)
                                && (j == o.len() || !key[j - o.len() - 1].is_ascii_alphabetic())
                        });
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
                word_ends
                    && (!glued
                        || KEY_COMPOUNDS.iter().any(|c| {
                            key[..j].len() >= c.len() && key[j - c.len()..j].eq_ignore_ascii_case(c)
                        }))
            })
            .map(|e| (e, Strength::Weak, false)),
        b'a' => two_part(key, j, b"api", b"key")
            .or_else(|| two_part(key, j, b"access", b"key"))
            .map(|e| (e, Strength::Strong, false))
            .or_else(|| longest(key, j, &[b"authorization"]).map(|e| (e, Strength::Strong, true)))
            // Not `author`, `authority` nor `authorizer`: a person, an issuer, a function.
            .or_else(|| {
                eat_ci(key, j, b"auth")
                    .filter(|&e| eat_ci(key, e, b"or").is_none())
                    .map(|e| (e, Strength::Weak, false))
            }),
        b'c' => longest(key, j, &[b"credential", b"creds", b"cookie"]).map(|e| (e, Strength::Strong, false)),
        _ => None,
    }
}

/// The command of a shell line that `i` is part of: what follows its last `;`, `|` or `&` (a
/// `&&` or `||` too), at most [`line_before`]'s 256 bytes.
fn command_segment(bytes: &[u8], i: usize) -> &[u8] {
    let before = line_before(bytes, i);
    let start = before
        .iter()
        .rposition(|&b| matches!(b, b';' | b'|' | b'&'))
        .map_or(0, |p| p + 1);
    &before[start..]
}

/// Whether a command's arguments end or go on with an option at `pos`, as on a command line, not
/// in a sentence (`htpasswd -b is insecure because the …`).
fn args_end(bytes: &[u8], pos: usize) -> bool {
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
fn command_position(bytes: &[u8], i: usize) -> bool {
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
fn case_particle(text: &str, pos: usize) -> bool {
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
fn foreign_qualified(tail: &[u8]) -> bool {
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

/// Whether the part of a key after its secret word starts with a qualifier (`_count`, `File`).
fn qualified_after(tail: &[u8]) -> bool {
    let tail = &tail[run_end(tail, 0, |b| matches!(b, b'_' | b'-' | b'.'))..];
    QUALIFIERS
        .iter()
        .any(|q| tail.len() >= q.len() && tail[..q.len()].eq_ignore_ascii_case(q))
}

/// Whether the key's last word, words after its secret word, says what the value is about the
/// secret rather than the secret (`GUEST_TOKEN_JWT_ALGO`, `API_KEY_HEADER_NAME`,
/// `secretValueMaxLength`).
fn last_word_qualified(tail: &[u8]) -> bool {
    const LAST: Words = words_of!(
        b"algo algorithm alg type kind name names url uri endpoint header prefix suffix length len count \
        ttl timeout expiry expires expiration time file path dir format version issuer audience size limit"
    );
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
    let word = &tail[start..];
    // The tail holds words beyond the last one (`_JWT_ALGO`), the first is read by [`qualified_after`].
    start > 0 && LAST.iter().any(|w| word.eq_ignore_ascii_case(w))
}

/// Whether the part of a key before its secret word ends with a qualifier (`max_`, `is`).
fn qualified_before(before: &[u8]) -> bool {
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
    PREFIX_QUALIFIERS.iter().any(|q| seg.eq_ignore_ascii_case(q))
}

fn longest(key: &[u8], j: usize, words: &[&[u8]]) -> Option<usize> {
    words.iter().filter_map(|w| eat_ci(key, j, w)).max()
}

/// `first[_-. ]?second` at `j`.
fn two_part(bytes: &[u8], j: usize, first: &[u8], second: &[u8]) -> Option<usize> {
    let mut pos = eat_ci(bytes, j, first)?;
    if matches!(bytes.get(pos), Some(b'_' | b'-' | b'.' | b' ')) {
        pos += 1;
    }
    eat_ci(bytes, pos, second)
}

/// `api key`, `secret key`, `access key`, `private key`, … written with a space before `key`.
fn strong_word_before(bytes: &[u8], i: usize) -> bool {
    let Some(before) = i.checked_sub(1).filter(|&p| bytes[p] == b' ') else {
        return false;
    };
    let start = before
        - bytes[..before]
            .iter()
            .rev()
            .take_while(|b| b.is_ascii_alphabetic())
            .count();
    matches!(
        lower(&bytes[start..before], &mut [0; 16]),
        b"api" | b"secret" | b"access" | b"private" | b"signing" | b"encryption" | b"master" | b"client"
    )
}

/// Where a declared type after a key ends at its `=` (`dbPassword string = …`, `password:
/// &str = …`, `val secretKey: String = …`), if one does.
fn declared_type_end(bytes: &[u8], p: usize) -> Option<usize> {
    let mut q = p;
    if bytes.get(q) == Some(&b':') {
        q += 1;
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
fn public_word_before(bytes: &[u8], i: usize) -> bool {
    let Some(before) = i.checked_sub(1).filter(|&p| bytes[p] == b' ') else {
        return false;
    };
    let start = before
        - bytes[..before]
            .iter()
            .rev()
            .take_while(|b| b.is_ascii_alphabetic())
            .count();
    matches!(
        lower(&bytes[start..before], &mut [0; 16]),
        b"public" | b"publishable"
    )
}

/// The longest value looked at: longer runs are cut there (a secret's head is enough to tell, and
/// the checks on a value then cost a bounded amount however often a key repeats).
const MAX_VALUE: usize = 512;

/// Where an unquoted value stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stop {
    /// A shell/env literal, a flag or a file entry: the value is the whole run up to a blank
    /// (`Abcd3fGh,Xyz12Q`, `R00tP4ss!`), a quote that closes an enclosing string, or the next
    /// `;Name=` / `&name=` of a connection string or URL query.
    Blank,
    /// `key: value` in code, config or prose: additionally a `,` or `;` before a blank (or a
    /// `,name=`) ends it, and closing brackets after it are structure, not value.
    Code,
}

/// The furthest a value judged a secret is extended past its head: a pasted token or key can be
/// kilobytes long, and all of it must go; past this, everything up to it goes.
const MAX_SPAN: usize = 64 * 1024;

/// A parsed value: its span (without quotes) and how it was written.
struct Value {
    start: usize,
    /// The end of the value as the checks see it (trailing punctuation trimmed).
    end: usize,
    quoted: bool,
    /// The unquoted run before trailing punctuation was trimmed (for code detection).
    raw_end: usize,
    /// The end of what is redacted: the whole run, trailing punctuation included, less
    /// structural closers in code.
    span_end: usize,
    /// Cut at [`MAX_VALUE`]: the checks saw the head only, [`Value::whole_end`] finds the rest.
    cut: bool,
    /// The quote that closes a quoted value (0 when unquoted).
    quote: u8,
    stop: Stop,
}

impl Value {
    fn parse(bytes: &[u8], pos: usize, stop: Stop) -> Option<Self> {
        let mut pos = pos;
        // Python byte/raw/format string prefixes.
        if matches!(
            bytes.get(pos),
            Some(b'b' | b'r' | b'B' | b'R' | b'f' | b'F' | b'u' | b'U')
        ) && matches!(bytes.get(pos + 1), Some(b'"' | b'\''))
        {
            pos += 1;
        }
        let first = *bytes.get(pos)?;
        if matches!(first, b'"' | b'\'' | b'`') {
            // A quoted value runs to its closing quote, whatever it holds (a double quote escaped
            // by an odd run of backslashes is one of its characters); a long one is judged on its
            // head.
            let start = pos + 1;
            let limit = char_floor(bytes, bytes.len().min(start + MAX_VALUE));
            let escaped = |k: usize| {
                first == b'"' && bytes[start..k].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1
            };
            let (end, cut) =
                match (start..limit).find(|&k| bytes[k] == first && !escaped(k) || bytes[k] == b'\n') {
                    Some(end) if bytes[end] == first => (end, false),
                    Some(_) => return None,
                    None if limit < bytes.len() => (limit, true),
                    None => return None,
                };
            return Some(Self {
                start,
                end,
                quoted: true,
                raw_end: end,
                span_end: end,
                cut,
                quote: first,
                stop,
            });
        }
        if first.is_ascii_whitespace()
            || matches!(first, b',' | b';' | b'}' | b']' | b')' | b'{' | b'[' | b'(')
        {
            return None;
        }
        let limit = char_floor(bytes, bytes.len().min(pos + MAX_VALUE));
        let raw_end = unquoted_end(bytes, pos, limit, stop);
        let mut end = raw_end;
        while end > pos
            && matches!(
                bytes[end - 1],
                b')' | b']' | b'}' | b'.' | b':' | b'!' | b'?' | b'>' | b',' | b';'
            )
        {
            end -= 1;
        }
        let span_end = code_span_end(bytes, pos, raw_end, stop);
        (end > pos).then_some(Self {
            start: pos,
            end,
            quoted: false,
            raw_end,
            span_end: span_end.max(end),
            cut: raw_end == limit && limit < bytes.len(),
            quote: 0,
            stop,
        })
    }

    /// A table cell `[s, e)`, quoted when `"` or `'` enclose it (markdown's backticks and
    /// emphasis are not quotes).
    fn cell(bytes: &[u8], s: usize, e: usize) -> Self {
        let (start, end) = unquoted(bytes, s, e);
        Self {
            start,
            end,
            quoted: start > s && matches!(bytes[start - 1], b'"' | b'\''),
            raw_end: end,
            span_end: end,
            cut: false,
            quote: 0,
            stop: Stop::Code,
        }
    }

    /// The end of the whole value, once it is judged a secret: a value cut at [`MAX_VALUE`] runs
    /// on by the same stop rules (its closing quote, a blank, …), at most [`MAX_SPAN`] bytes.
    /// The scan then covers the extension, so no rule reads it again.
    fn whole_end(&self, bytes: &[u8]) -> usize {
        if !self.cut {
            return self.span_end;
        }
        let limit = char_floor(bytes, bytes.len().min(self.start + MAX_SPAN));
        if self.quote != 0 {
            return (self.raw_end..limit)
                .find(|&k| bytes[k] == self.quote || bytes[k] == b'\n')
                .unwrap_or(limit);
        }
        let raw_end = unquoted_end(bytes, self.raw_end, limit, self.stop);
        code_span_end(bytes, self.start, raw_end, self.stop).max(self.end)
    }

    fn text<'b>(&self, bytes: &'b [u8]) -> &'b [u8] {
        &bytes[self.start..self.end]
    }
}

/// Where a start tag's attributes (`encoding="base64" id='x'`, from `pos`) end at its `>` on
/// the same line: `None` for anything else (a self-closing tag, text, a separator).
fn start_tag_attributes_end(bytes: &[u8], mut pos: usize) -> Option<usize> {
    let limit = (pos + 256).min(bytes.len());
    loop {
        let name = run_end(bytes, pos, |b| {
            b.is_ascii_alphanumeric() || matches!(b, b'_' | b':' | b'-' | b'.')
        });
        if name == pos || bytes.get(name) != Some(&b'=') {
            return None;
        }
        let q = *bytes.get(name + 1).filter(|&&q| q == b'"' || q == b'\'')?;
        let close = name
            + 2
            + bytes
                .get(name + 2..limit)?
                .iter()
                .position(|&b| b == q || b == b'\n')?;
        if bytes[close] != q {
            return None;
        }
        pos = skip_blank(bytes, close + 1);
        match bytes.get(pos) {
            Some(b'>') => return Some(pos),
            _ if pos >= limit => return None,
            _ => {}
        }
    }
}

/// A `;` at `k` followed by a connection string's next field name and its `=` (`;Database=`,
/// `;Initial Catalog=`).
fn next_connection_field(bytes: &[u8], k: usize) -> bool {
    if bytes.get(k) != Some(&b';') {
        return false;
    }
    let name = run_end_max(bytes, k + 1, 64, |c| {
        c.is_ascii_alphanumeric() || c == b'_' || c == b' '
    });
    bytes.get(k + 1).is_some_and(u8::is_ascii_alphabetic)
        && bytes.get(name) == Some(&b'=')
        && bytes[k + 1..name].windows(2).all(|w| w != b"  ")
}

/// Where an unquoted value from `pos` stops, looking no further than `limit`.
fn unquoted_end(bytes: &[u8], pos: usize, limit: usize, stop: Stop) -> usize {
    // What follows byte `k` ends a token there: a blank, the end, or structure.
    let closes = |k: usize| {
        bytes
            .get(k + 1)
            .is_none_or(|&c| c.is_ascii_whitespace() || matches!(c, b',' | b';' | b')' | b']' | b'}' | b'>'))
    };
    // `;Name=`, `&name=` (and in code `,name=`): the next field of a connection string,
    // URL query or argument list.
    let next_field = |k: usize| {
        let name = run_end_max(bytes, k + 1, 64, |c| c.is_ascii_alphanumeric() || c == b'_');
        name > k + 1 && bytes.get(name) == Some(&b'=')
    };

    let mut raw_end = pos;
    while raw_end < limit {
        let b = bytes[raw_end];
        let ends = b.is_ascii_whitespace()
            || (matches!(b, b'"' | b'\'' | b'`') && closes(raw_end))
            || (matches!(b, b'&' | b';') && next_field(raw_end))
            // A connection string's field names may hold spaces (`;Max Pool Size=`).
            || next_connection_field(bytes, raw_end)
            || (stop == Stop::Code && b == b',' && next_field(raw_end))
            || (stop == Stop::Code && matches!(b, b',' | b';') && closes(raw_end))
            // An element's closing tag (`…</password>`): markup, not the value's.
            || (b == b'<' && bytes.get(raw_end + 1) == Some(&b'/'))
            // A line break written as an escape inside a string (`'…PASSWORD=password\rDB=tests'`):
            // the next line is another entry.
            || (raw_end > pos && b == b'\\' && escaped_line_break(bytes, raw_end))
            || (bytes[pos].is_ascii() && cjk_at(bytes, raw_end));
        if ends {
            break;
        }
        raw_end += 1;
    }
    raw_end
}

/// Whether the backslashes at `k` write a line break inside a string (`\\r`, `\\\\n`) that ends an
/// entry: the string's end or the next `name=`/`name:` follows (`PASSWORD=password\\rDB=tests`),
/// not more of a path (`\\\\nas\\backup`).
fn escaped_line_break(bytes: &[u8], k: usize) -> bool {
    let e = run_end(bytes, k, |c| c == b'\\');
    if !matches!(bytes.get(e), Some(b'n' | b'r' | b't')) {
        return false;
    }
    let name = run_end(bytes, e + 1, |c| c.is_ascii_alphanumeric() || c == b'_');
    match bytes.get(name) {
        None | Some(b'"' | b'\'' | b'`' | b'\n' | b'\\') => name == e + 1,
        Some(b'=' | b':') => name > e + 1,
        _ => false,
    }
}

/// The end of what is redacted of an unquoted run: in code, closing brackets and a `,`/`;` after
/// the value are structure.
fn code_span_end(bytes: &[u8], pos: usize, raw_end: usize, stop: Stop) -> usize {
    let mut span_end = raw_end;
    if stop == Stop::Code {
        while span_end > pos && matches!(bytes[span_end - 1], b')' | b']' | b'}' | b',' | b';') {
            span_end -= 1;
        }
    }
    span_end
}

fn value_is_secret(bytes: &[u8], value: &Value, key: &[u8], strength: Strength, mode: Mode) -> bool {
    let v = value.text(bytes);
    let raw = &bytes[value.start..value.raw_end];
    // A personal access token is one base64url run (`AZURE_DEVOPS_PAT=…`); a `…_PAT` holding a
    // regex or an alphabet is a pattern.
    let pat = key.len() >= 3 && key[key.len() - 3..].eq_ignore_ascii_case(b"pat");
    if strength == Strength::Weak && pat && !v.iter().all(|&b| b64url(b)) {
        return false;
    }
    // A quoted value is whole: an opening `${` or `$(` it never closes is part of a password
    // (`"Hx7${q2Lm9"`), not a reference cut at the value's end.
    let placeholder = is_placeholder(v)
        && !(value.quoted && unclosed_template(v))
        && !(value.quote == b'\'' && dollar_literal(v))
        && !(password_key(key) && weak_literal(v));
    if placeholder
        || is_reference(v)
        || same_as_key(v, key)
        || stand_in_for_key(v, key)
        || yaml_tag(bytes, value)
    {
        return false;
    }
    // A member that holds the secret, not the secret (`pwd=instance_info.password,`), and code
    // around a name (`$this->accessToken`, `&api.Secret{`, `@password).tap(…)`).
    if !value.quoted
        && (secret_member(v)
            || sigil_code(raw)
            || secret_argument(raw)
            || composite_literal(raw)
            || cmdlet(v))
    {
        return false;
    }
    if names_no_secret(v) {
        return false;
    }
    // A name where a value goes (`"access_token": "facebook_token"`, `'db-password'`): lowercase
    // words that end with the secret's own word.
    if value.quoted && named_slot(v, key) {
        return false;
    }
    // A sentence in Chinese or Japanese after the key (`… `password` 的功能就可以了。`), not a value.
    if mode == Mode::Prose && cjk_at(bytes, value.start) {
        return false;
    }
    // A word closing emphasis or a docstring (`**token endpoint**`, `… to SSLConnection"""`).
    if mode == Mode::Prose && !value.quoted {
        let word = trim_end_of(v, |b| matches!(b, b'*' | b'_' | b'"' | b'\'' | b'`'));
        if word.len() < v.len() && !word.is_empty() && word.iter().all(u8::is_ascii_alphabetic) {
            return false;
        }
    }
    // A member of a type or an object in code (`= TestConstants.AuthorityUtid2Tenant;`).
    if mode == Mode::Code && !value.quoted && member_path(v) {
        return false;
    }
    if names_where_secret_lives(bytes, value, v, key, strength) {
        return false;
    }
    if code_continuation(v) || quoted_slot(v) || url_stand_in_userinfo(v) || ldap_dn(v) {
        return false;
    }
    if value.quoted && secret_field_name(v) {
        return false;
    }
    // A weak key's base64 of plain words (`ANY_KEY = ZHVtbXkgdGV4dCBkYXRh…`) encodes no key.
    if strength == Strength::Weak && base64_text(v) {
        return false;
    }
    // Cut short on purpose (`ops_eyJzaWdu...`, `sk-…`): an elided value is not the secret.
    let run = run_end_max(bytes, value.start, MAX_VALUE, |b| {
        !b.is_ascii_whitespace() && !b"\"'`".contains(&b)
    });
    let head = &bytes[value.start..run];
    if head.ends_with(b"...") || head.ends_with("\u{2026}".as_bytes()) {
        return false;
    }
    // A leading `-` is a flag or a negative number, except in a glued shell literal
    // (`DB_PASSWORD=-h4ck3rPw!9`) whose text is not a flag's.
    let glued_literal = mode == Mode::Literal && !value.quoted;
    if v.starts_with(b"-") && (!glued_literal || flag_like(v) || !generated(&v[1..])) {
        return false;
    }
    if strength == Strength::Weak
        && hex_key_id(v)
        && (public_key_id_key(key) || key_algorithm_before(bytes, key))
    {
        return false;
    }
    if cookie_attributes(v, key) || secret_name(bytes, value, key, mode) {
        return false;
    }
    if plain_cookie(v, key) {
        return false;
    }
    // A bare `key` word names a store's entry as often as a secret: a key path or a digest there
    // is the entry's name.
    if strength == Strength::Weak
        && (key_path(v) || hex_digest(v) && bare_key_word(text_before(bytes, key), key))
    {
        return false;
    }
    // A PIN or an all-digit password (`DB_PASSWORD=84619273`), not a count or a date; a strong
    // key's long run of digits (`secret = "9734741337193905126710251"`) is no number either.
    let digits_secret = password_key(key) && v.len() >= 4 || strength == Strength::Strong && v.len() >= 16;
    if mode != Mode::Prose && digits_secret && v.iter().all(u8::is_ascii_digit) {
        return true;
    }
    // A quoted value is a literal wherever it stands, and so is a connection string's field
    // (`…;Password=specialbill_user;Initial Catalog=…`): its text is the value itself.
    let mode = if (value.quoted || next_connection_field(bytes, value.raw_end)) && mode == Mode::Code {
        Mode::Literal
    } else {
        mode
    };
    let weak = strength == Strength::Weak;
    if !value.quoted {
        // A call, an index or a generic type. A shell/env literal is the text itself, so there
        // only a whole expression (`get_password()`) counts, not a `(` inside `Abc(d3f)Gh`.
        let code = if mode == Mode::Literal {
            code_expression(raw)
        } else {
            raw.contains(&b'(') || raw.contains(&b'[') || v.contains(&b'<') || code_name_path(v)
        };
        if code {
            return false;
        }
    }
    if value.quoted && v.iter().any(u8::is_ascii_whitespace) {
        // A scheme or a word before a stand-in (`"Authorization": "Other foobar"`) is no phrase.
        let mut words = v.split(u8::is_ascii_whitespace).filter(|w| !w.is_empty());
        if let (Some(_), Some(last), None) = (words.next(), words.next(), words.next())
            && is_placeholder(last)
        {
            return false;
        }
        // A passphrase has spaces; a message has sentence words or names the secret itself.
        return (!weak || contains_ci(key, b"passphrase")) && passphrase_like(v) || spaced_random(v);
    }
    if numeric_like(v)
        || version_like(v)
        || is_path_or_url(v) && !random_after_slash(v)
        || readable_url(v)
        || key_chord(v)
    {
        return false;
    }
    // A constant's name where code or prose names a value (`static Filter CAS_AUTH_FILTER;`, the
    // secret `GITHUB_REGISTRY_TOKEN` in a code span); a literal, quoted or in a shell or config
    // line, may still be one in capitals.
    let named = !value.quoted || value.quote == b'`';
    if constant_like(v) && named && matches!(mode, Mode::Prose | Mode::Code) {
        return false;
    }
    match mode {
        Mode::Literal if !weak => v.len() >= 4,
        // Random letters unquoted in code: unless code goes on after them (`= rndPwdStr;`) or
        // they name what the text uses again (a variable).
        Mode::Code if !weak && random_letters(v) => {
            value.raw_end == value.end
                && bytes.get(value.end) != Some(&b';')
                && !named_nearby(bytes, value.start, value.end)
        }
        Mode::Code if !weak => v.len() >= 6 && !identifier_like(v) && (has_digit(v) || has_symbol(v)),
        Mode::Prose if value.quoted => v.len() >= 4 && looks_random(v, if weak { 12 } else { 6 }),
        Mode::Prose if !prose_word(bytes, value) => false,
        Mode::Prose if !weak => looks_random(v, 6),
        // A short generated value of a weak key: letters, digits and symbols together.
        Mode::Literal | Mode::Code if v.len() >= 8 && generated(v) => true,
        _ => looks_random(v, 12),
    }
}

/// A value that names what a secret is, not the secret: a digest of it under a `hashed…` key; a
/// part of an AWS resource name (`arn:aws:secretsmanager:…:secret:<name>`); a string prefix the
/// parser left on a slot's own name (C#'s `@"Token"`, `$"…"`); a variable naming the secret
/// handed on in an argument list (`api_key=staging_api_key,`); a package name and its version
/// under a weak key (`cache-key: node-20.11.x`).
fn names_where_secret_lives(bytes: &[u8], value: &Value, v: &[u8], key: &[u8], strength: Strength) -> bool {
    if let Some(inner) = v
        .strip_prefix(b"@\"")
        .or_else(|| v.strip_prefix(b"$\""))
        .or_else(|| v.strip_prefix(b"@'"))
    {
        let inner = inner.strip_suffix(b"\"").unwrap_or(inner);
        if is_placeholder(inner) || same_as_key(inner, key) || stand_in_for_key(inner, key) {
            return true;
        }
    }
    let raw = &bytes[value.start..value.raw_end];
    if !value.quoted
        && raw.ends_with(b",")
        && line_end(bytes, value.raw_end) == value.raw_end
        && secret_variable(v)
    {
        return true;
    }
    digest_of_secret(bytes, key, v)
        || within_arn(bytes, value.start)
        || strength == Strength::Weak && name_version(v)
}

/// A digest of the secret kept to recognise it, not the secret: a hex digest under a `hashed…`
/// key (a scanner's baseline `"hashed_secret": "…"`, `hashedPassword`) or one whose last word
/// names a digest (`VALID_TOKEN_IGNORE_SHA`).
fn digest_of_secret(bytes: &[u8], key: &[u8], v: &[u8]) -> bool {
    let before = text_before(bytes, key);
    let hashed = key.len() > 6 && key[..6].eq_ignore_ascii_case(b"hashed")
        || ends_with_ci(before, b"hashed_")
        || ends_with_ci(before, b"hashed");
    // A key whose last word names a digest (`TOKEN_IGNORE_SHA`, `api_key_hash`) holds one.
    let last = &key[key
        .iter()
        .rposition(|&b| matches!(b, b'_' | b'-' | b'.'))
        .map_or(0, |k| k + 1)..];
    let digest_named = [
        &b"sha"[..],
        b"sha1",
        b"sha256",
        b"sha512",
        b"hash",
        b"digest",
        b"checksum",
    ]
    .iter()
    .any(|w| last.eq_ignore_ascii_case(w));
    (hashed || digest_named) && hex_digest(v)
}

/// Whether the text at `p` is inside an AWS resource name (`arn:aws:secretsmanager:…:secret:…`):
/// its words name a secret's home, not the secret.
fn within_arn(bytes: &[u8], p: usize) -> bool {
    let before = line_before(bytes, p);
    let start = before
        .iter()
        .rposition(|&b| b.is_ascii_whitespace() || b"\"'`=(,[{".contains(&b))
        .map_or(0, |k| k + 1);
    let token = &before[start..];
    token.starts_with(b"arn:aws:") || token.starts_with(b"arn:aws-")
}

/// A snake-case variable whose last word names a secret (`staging_api_key`, `db_password`,
/// `old_token`): lower-case words joined by `_`, none of them digits.
fn secret_variable(v: &[u8]) -> bool {
    const LAST: Words = words_of!(b"secret password passwd pwd token key apikey credential credentials pass");
    let Some(k) = v.iter().rposition(|&b| b == b'_') else {
        return false;
    };
    k > 0 && v.iter().all(|&b| b.is_ascii_lowercase() || b == b'_') && LAST.iter().any(|w| &v[k + 1..] == w)
}

/// A package or tool name and its version (`node-20.11.x`, `gradle@8.6`, `go1.21`): a name of
/// letters, a separator, then numbers joined by dots with at least one dot, `x` or `*` standing
/// for any.
fn name_version(v: &[u8]) -> bool {
    let Some(sep) = v.iter().rposition(|&b| matches!(b, b'-' | b'@' | b'_')) else {
        return false;
    };
    let (name, version) = (&v[..sep], &v[sep + 1..]);
    let version = version.strip_prefix(b"v").unwrap_or(version);
    name.len() >= 2
        && name.iter().all(|&b| b.is_ascii_alphabetic() || b == b'-')
        && version.first().is_some_and(u8::is_ascii_digit)
        && version.contains(&b'.')
        && version
            .split(|&b| b == b'.')
            .all(|p| !p.is_empty() && (p.iter().all(u8::is_ascii_digit) || p == b"x" || p == b"*"))
}

/// An unquoted value of letters (and `-`) ending its line that is not a type or schema word:
/// `SuperSecretPassword`, `trustno-one-ever`, `qwertyuiop`; not `str`, `SecretStr`, `PasswordField`,
/// `required`, nor a word shorter than eight letters (`Bcrypt`, `Rosebud`).
fn letters_password(bytes: &[u8], value: &Value, key: &[u8]) -> bool {
    const SCHEMA: Words = words_of!(
        b"bool boolean int integer number object any bytes char secretstr secretstring \
        securestring plaintext plain hashed encrypted env vault prompt ask disabled enabled ignore omit \
        keep unique nullable blank varchar sensitive writeonly readonly text none void never unknown \
        secret random generated required optional confirmed sometimes string str default hidden masked \
        redacted bcrypt argon native inherit inherited scram trust peer ident true false null anonymous \
        keychain keyring external internal database standard security"
    );
    const SUFFIXES: &[&[u8]] = &[
        b"Field", b"Type", b"Input", b"Str", b"String", b"Schema", b"Column", b"Ref", b"Name", b"Key",
        b"Hash", b"Value", b"Secret", b"Token",
    ];
    let v = value.text(bytes);
    let ends_line = matches!(
        bytes.get(skip_blank(bytes, value.raw_end)),
        None | Some(b'\n' | b'\r')
    );
    // A short word (`Bcrypt`, `Native`, `Inherit`) names a setting's choice more often than it is
    // a password: a letters-only password has at least eight letters.
    let password_shaped = v.len() >= 8;
    !value.quoted
        && value.raw_end == value.end
        && ends_line
        && password_shaped
        && v.first().is_some_and(u8::is_ascii_alphabetic)
        && v.iter().all(|&b| b.is_ascii_alphabetic() || b == b'-')
        && !is_placeholder(v)
        && !same_as_key(v, key)
        && !contains_ci(key, v)
        && !SCHEMA.iter().any(|w| v.eq_ignore_ascii_case(w))
        && !SUFFIXES.iter().any(|w| v.len() > w.len() && v.ends_with(w))
}

/// Whether what precedes a key on its line starts a statement: nothing, PHP's `$`, or an
/// earlier statement ended by `;`.
fn statement_start(line: &[u8]) -> bool {
    let before = trim_ascii(line);
    let before = trim_ascii(before.strip_suffix(b"$").unwrap_or(before));
    before.is_empty() || before.ends_with(b";") || location_prefix(before)
}

/// An `.npmrc` line's registry scope before its key (`//registry.example.com/releases:` in
/// `//…:_password=…`, the path's last segment read with the key or not): what follows `=` is
/// the setting's literal text, as in a shell's or an env file's assignment.
fn npm_scope(before: &[u8]) -> bool {
    before.len() > 3
        && before.starts_with(b"//")
        && matches!(before.last(), Some(b':' | b'/'))
        && !before.iter().any(u8::is_ascii_whitespace)
}

/// Where the text of a line quoting a file starts, after the file's location and the prefix
/// before it (`2024-03-02T10:14:07Z DEBUG sync[22]: etc/app.ini:3: `, `src/a.py:12:4: `): `None`
/// when the line's first 200 bytes hold no `path:line: `.
fn location_end(l: &[u8]) -> Option<usize> {
    let head = &l[..l.len().min(200)];
    let mut from = 0;
    while let Some(k) = find_byte(b':', &head[from..]) {
        let c = from + k;
        if head.get(c + 1) == Some(&b' ')
            && c > 0
            && head[c - 1].is_ascii_digit()
            && location_prefix(&head[..=c])
        {
            return Some(c + 2);
        }
        from = c + 1;
    }
    None
}

/// Whether `before` ends with a file's location as grep, compilers and log lines quote one
/// (`config/app.ini:3:`, `src/settings.py:12:4:`): what follows is that file's line.
fn location_prefix(before: &[u8]) -> bool {
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

/// An unquoted lowercase word ending a `password = …` line that is a literal, not a name in
/// code: `open_sesame`; not a word that names what code holds (`new_password`,
/// `user_input`, `hashed`, `none`), nor a name the text uses again within 256 bytes (`password = payload`
/// after `payload = read()`): a literal is typed once, a variable is defined and used.
fn config_literal(bytes: &[u8], value: &Value, key: &[u8]) -> bool {
    const NAMES: Words = words_of!(
        b"pass pwd pw secret token key cred auth hash input value text data field param arg env conf \
        setting request form user login salt str byte none null nil true false undefined self \
        this crypt prompt random generat default required optional hidden mask result response \
        entry option environ read get load fetch plain cipher digest vault keyring keychain sha \
        md5 argon pbkdf payload message content buffer stdin answer reply temp tmp cache store \
        current new old saved given expected actual confirm candidate attempt guess entered typed \
        original previous next first second local global other empty blank enabl disabl allow \
        deny denied strict"
    );
    const NEARBY: usize = 256;
    let v = value.text(bytes);
    // A `;` after it makes the line code, where a bare word names a variable or a constant
    // (`password = decoded;`): only a line that ends with the word itself is a config literal.
    let after = skip_blank(bytes, string_close_end(bytes, value.raw_end));
    let ends = matches!(bytes.get(after), None | Some(b'\n' | b'\r'));
    if value.quoted
        || !ends
        || value.raw_end != value.end
        || !(6..=32).contains(&v.len())
        || !v[0].is_ascii_lowercase()
        // Kebab-case names a resource or a version (`tls-cert-2024`, `shorter-version`).
        || !v.iter().all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        // `v` is lowercase already: a first-byte test, then the word.
        || NAMES.iter().any(|w| {
            w.len() <= v.len() && (0..=v.len() - w.len()).any(|k| v[k] == w[0] && v[k..].starts_with(w))
        })
        || same_as_key(v, key)
        // The key names the password itself (`db_password`), not a setting about passwords
        // (`password_auth = disabled`, `password_rotation = quarterly`).
        || !PASSWORD_KEYS
            .iter()
            .any(|w| key.len() >= w.len() && key[key.len() - w.len()..].eq_ignore_ascii_case(w))
    {
        return false;
    }
    let from = value.start.saturating_sub(NEARBY);
    let to = bytes.len().min(value.end + NEARBY);
    // The name again as a whole word: a first-byte scan, then a comparison where it starts.
    let around = |s: usize, e: usize| {
        let mut k = s;
        while let Some(off) = bytes[k..e].iter().position(|&b| b == v[0]) {
            let at = k + off;
            if bytes[at..e].starts_with(v)
                && !bytes.get(at + v.len()).is_some_and(|&b| is_key_byte(b))
                && (at == 0 || !is_key_byte(bytes[at - 1]))
            {
                return true;
            }
            k = at + 1;
        }
        false
    };
    !around(from, value.start) && !around(value.end, to) && !is_placeholder(v)
}

/// A YAML tag: `!name` followed on its line by what it tags (`password: !vault |`); `!Welcome`
/// alone is a password.
fn yaml_tag(bytes: &[u8], value: &Value) -> bool {
    let v = value.text(bytes);
    if value.quoted || v.first() != Some(&b'!') || !identifier_like(&v[1..]) && !v[1..].starts_with(b"!") {
        return false;
    }
    let after = skip_blank(bytes, value.raw_end);
    after > value.raw_end && bytes.get(after).is_some_and(|&b| b != b'\n' && b != b'\r')
}

/// `Set-Cookie: Path=/; HttpOnly`: a cookie's attributes without a cookie.
fn cookie_attributes(v: &[u8], key: &[u8]) -> bool {
    const ATTRIBUTES: &[&[u8]] = &[
        b"path",
        b"domain",
        b"expires",
        b"max-age",
        b"samesite",
        b"secure",
        b"httponly",
        b"partitioned",
        b"priority",
    ];
    let name = &v[..run_end(v, 0, |b| b.is_ascii_alphanumeric() || b == b'-')];
    contains_ci(key, b"cookie") && ATTRIBUTES.iter().any(|a| name.eq_ignore_ascii_case(a))
}

/// `tls:\n  secret: tls-cert-2024`: a bare `secret` key in YAML, under a mapping that names what
/// refers to a secret (`tls`, `volumes`), whose value is a Kubernetes object's name (three or more
/// lowercase parts, mostly words, joined by `-`). Elsewhere such a value is a memorable password
/// (`secret: blue-river-42-sky`).
fn secret_name(bytes: &[u8], value: &Value, key: &[u8], mode: Mode) -> bool {
    let v = value.text(bytes);
    mode == Mode::Code
        && !value.quoted
        && key.eq_ignore_ascii_case(b"secret")
        && v.iter().filter(|&&b| b == b'-').count() >= 2
        && v.iter()
            .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'-' | b'.'))
        && wordy(v)
        && under_secret_reference(bytes, value.start)
}

/// Whether the YAML line holding `pos` is nested under a key that refers to a secret by name:
/// the line above, less indented, is `tls:`, `ingress:`, `volumes:` or the like.
fn under_secret_reference(bytes: &[u8], pos: usize) -> bool {
    const PARENTS: &[&[u8]] = &[b"tls", b"ingress", b"certificate", b"cert", b"volumes", b"volume"];
    let line = line_before(bytes, pos);
    let start = pos - line.len();
    if start == 0 || bytes[start - 1] != b'\n' {
        return false;
    }
    let indent = |l: &[u8]| l.iter().take_while(|&&b| b == b' ' || b == b'-').count();
    let parent = line_before(bytes, start - 1);
    let name = trim_ascii(&parent[indent(parent)..]);
    indent(parent) < indent(line)
        && name
            .strip_suffix(b":")
            .is_some_and(|n| PARENTS.iter().any(|p| n.eq_ignore_ascii_case(p)))
}

/// A canonical UUID (8-4-4-4-12 hex digits): an identifier.
fn uuid(v: &[u8]) -> bool {
    v.len() == 36
        && v.iter().enumerate().all(|(k, &b)| {
            if matches!(k, 8 | 13 | 18 | 23) {
                b == b'-'
            } else {
                b.is_ascii_hexdigit()
            }
        })
}

/// `-x`, `--flag`, `--flag-name`: a dash and a word.
fn flag_like(v: &[u8]) -> bool {
    let body = &v[run_end(v, 0, |b| b == b'-')..];
    !body.is_empty() && body.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'-')
}

/// The words of a key naming a password (not a token or an API key).
const PASSWORD_KEYS: &[&[u8]] = &[b"password", b"passwd", b"pwd", b"passphrase", b"passcode"];

/// A key naming a password (not a token or an API key): an all-digit value of it is a PIN.
fn password_key(key: &[u8]) -> bool {
    PASSWORD_KEYS.iter().any(|w| contains_ci(key, w))
}

/// A public key id (`3AA5C34371567BD2`, `0x3AA5C34371567BD2`, a 40-digit fingerprint): 8, 16 or
/// 40 hex digits in one case.
fn hex_key_id(v: &[u8]) -> bool {
    let body = v.strip_prefix(b"0x").unwrap_or(v);
    matches!(body.len(), 8 | 16 | 40)
        && body.iter().all(u8::is_ascii_hexdigit)
        && !(body.iter().any(u8::is_ascii_uppercase) && body.iter().any(u8::is_ascii_lowercase))
}

/// Keys that take a public key's id (gpg's `--recv-keys`, `--default-key`, git's
/// `user.signingkey`), not a key.
fn public_key_id_key(key: &[u8]) -> bool {
    [
        &b"recv-key"[..],
        b"default-key",
        b"signingkey",
        b"local-user",
        b"trusted-key",
        b"keyid",
        b"key-id",
    ]
    .iter()
    .any(|w| contains_ci(key, w))
}

/// `expires_in=3600`: a name, `=` and a value is the next field of a log line or a query, not a
/// token after a scheme word (a token's base64 padding `=` ends it).
fn next_field_pair(t: &[u8]) -> bool {
    let name = t
        .iter()
        .take_while(|&&b| b.is_ascii_alphanumeric() || b == b'_')
        .count();
    name > 0
        && t[0].is_ascii_alphabetic()
        && t.get(name) == Some(&b'=')
        && t.get(name + 1).is_some_and(|&b| b != b'=')
}

/// `RSA key 4AEE18F83AFDEB23`, `gpg key ABCD1234`: a bare `key` after a public-key algorithm or
/// a keyring's name takes the key's id, as gpg prints it.
fn key_algorithm_before(bytes: &[u8], key: &[u8]) -> bool {
    if !key.eq_ignore_ascii_case(b"key") {
        return false;
    }
    let before = text_before(bytes, key).trim_ascii_end();
    let word = &before[before.len() - run_back(before, |b| b.is_ascii_alphanumeric())..];
    [
        &b"rsa"[..],
        b"dsa",
        b"ecdsa",
        b"ed25519",
        b"eddsa",
        b"gpg",
        b"pgp",
        b"gnupg",
        b"signing",
        b"public",
    ]
    .iter()
    .any(|w| word.eq_ignore_ascii_case(w))
}

/// `/k9Fz2LqP8sT1vXyR4wN7mB0cD3eH6jU=`, `/K7MDENG/bPxRfiCYzq8k2Lm3…`: a leading `/` before a
/// random run, a base64 value rather than a path. A path is made of readable segments (`usr`,
/// `Documents`, `id_rsa.pub`); base64's `/` splits a random run into random pieces.
fn random_after_slash(v: &[u8]) -> bool {
    let Some(rest) = v.strip_prefix(b"/") else {
        return false;
    };
    // A segment of letters in one case or capitalised is a name.
    let readable = |seg: &[u8]| {
        seg.iter().all(u8::is_ascii_alphabetic)
            && (seg[1..].iter().all(u8::is_ascii_lowercase) || seg.iter().all(u8::is_ascii_uppercase))
    };
    let pieces_random = !rest.contains(&b'/')
        || rest
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'/' | b'+' | b'='))
            && rest
                .split(|&b| b == b'/')
                .all(|seg| !seg.is_empty() && !readable(seg))
            && rest.split(|&b| b == b'/').any(|seg| seg.len() >= 16);
    rest.len() >= 16 && pieces_random && mixed_case(rest) && has_digit(rest) && entropy(rest) >= 3.5
}

/// A keyboard shortcut (`ctrl+shift+1`, `Cmd+K`): modifiers joined by `+`.
fn key_chord(v: &[u8]) -> bool {
    v.iter().rposition(|&b| b == b'+').is_some_and(|last| {
        v[..last].split(|&b| b == b'+').all(|p| {
            matches!(
                lower(p, &mut [0; 16]),
                b"ctrl" | b"control" | b"shift" | b"alt" | b"cmd" | b"meta" | b"option" | b"super" | b"win"
            )
        })
    })
}

/// `name("…`, `obj.get('…`, `Name(#{…`, `name(` at the end: a call whose first argument is a
/// string, however the value was cut. A password does not open with an identifier, a `(` and a
/// quote.
fn opens_a_call(v: &[u8]) -> bool {
    let Some(open) = v.iter().position(|&b| b == b'(') else {
        return false;
    };
    let head = &v[..open];
    let ident = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'$' | b':');
    // A generic type's path (`Aes256Gcm>::from_slice(&key_bytes)`): `::` joins its names.
    let generic = |b: &u8| ident(b) || matches!(b, b'<' | b'>');
    let path_call = head.windows(2).any(|w| w == b"::") && head.iter().all(generic);
    head.len() >= 2
        && (head[0].is_ascii_alphabetic() || matches!(head[0], b'_' | b'$'))
        && (head.iter().all(ident) || path_call)
        && (matches!(v.get(open + 1), None | Some(b'"' | b'\'' | b'`'))
            || path_call && matches!(v.get(open + 1), Some(b'&' | b'*' | b')')))
}

/// `instance_info.password`, `cfg.db_secret,`: a member path whose last name is a secret word
/// holds the secret; it is not its value.
fn secret_member(v: &[u8]) -> bool {
    let v = trim_end_of(v, |b| matches!(b, b',' | b';' | b')'));
    let mut parts = v.split(|&b| b == b'.');
    let names = v.split(|&b| b == b'.').all(|p| {
        p.first().is_some_and(|&b| b.is_ascii_alphabetic() || b == b'_')
            && p.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
    });
    let last = parts.next_back().unwrap_or_default();
    names
        && v.contains(&b'.')
        && [
            b"password".as_slice(),
            b"passwd",
            b"pwd",
            b"secret",
            b"token",
            b"apikey",
            b"api_key",
            b"credential",
        ]
        .iter()
        .any(|w| contains_ci(last, w))
}

/// A sigil's name with code after it, not a value: PHP's member access (`$this->accessToken`),
/// Go's address of a composite literal (`&api.Secret{`, `&Config{`), a Ruby instance variable
/// closing a call or an argument (`@password).tap(&:confirm)`). A password may start with a
/// sigil (`$uP3r-S3cret!9`, `@dm1n!x`), but not go on as code does.
fn sigil_code(raw: &[u8]) -> bool {
    let ident = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
    let Some((&sigil, rest)) = raw.split_first() else {
        return false;
    };
    if !rest
        .first()
        .is_some_and(|&b| b.is_ascii_alphabetic() || b == b'_')
    {
        return false;
    }
    let after = &rest[rest.iter().take_while(|b| ident(b)).count()..];
    match sigil {
        b'$' => {
            after.starts_with(b"->")
                && after
                    .get(2)
                    .is_some_and(|&b| b.is_ascii_alphabetic() || b == b'_')
        }
        // `&pkg.Type{`, and Elixir's capture of a function (`&MyApp.Secrets.for_conn/1`).
        b'&' => {
            let path = after.iter().take_while(|b| ident(b) || **b == b'.').count();
            let arity = trim_end_of(&after[(path + 1).min(after.len())..], |b| {
                matches!(b, b']' | b')' | b'}' | b',')
            });
            after.get(path) == Some(&b'{')
                || after.get(path) == Some(&b'/') && !arity.is_empty() && arity.iter().all(u8::is_ascii_digit)
        }
        b'@' => matches!(after.first(), Some(b')' | b',')) && after.len() > 1,
        // A nullable type (`): ?Response`), a dereference stepped (`*tokenCount++`).
        b'?' => after.is_empty() && rest[0].is_ascii_uppercase(),
        b'*' => matches!(after, b"++" | b"--" | b"++;" | b"--;"),
        _ => false,
    }
}

/// A composite literal opened after its type (`storage.DeviceToken{`, `&Config{`): Go builds the
/// value there.
fn composite_literal(raw: &[u8]) -> bool {
    let body = raw.strip_prefix(b"&").unwrap_or(raw);
    body.strip_suffix(b"{").is_some_and(|path| {
        let ty = path.rsplit(|&b| b == b'.').next().unwrap_or(path);
        ty.first().is_some_and(u8::is_ascii_uppercase) && path.split(|&b| b == b'.').all(name_of_words)
    })
}

/// A PowerShell command (`ConvertTo-SecureString`, `Read-Host`, `Get-Credential`): an approved
/// verb, a dash and a capitalised noun, where the value is what the command returns.
fn cmdlet(v: &[u8]) -> bool {
    const VERBS: &[&[u8]] = &[
        b"Get",
        b"Set",
        b"New",
        b"Read",
        b"ConvertTo",
        b"ConvertFrom",
        b"Import",
        b"Export",
        b"Invoke",
        b"Add",
        b"Remove",
        b"Select",
        b"Out",
        b"Write",
        b"Test",
        b"Start",
        b"Connect",
        b"Protect",
        b"Unprotect",
    ];
    let Some(dash) = v.iter().position(|&b| b == b'-') else {
        return false;
    };
    let noun = &v[dash + 1..];
    VERBS.contains(&&v[..dash])
        && noun.len() >= 3
        && noun[0].is_ascii_uppercase()
        && noun.iter().any(u8::is_ascii_lowercase)
        && noun.iter().all(u8::is_ascii_alphabetic)
}

/// A variable passed on in an argument list (`secret_key=auth_token,`, `password=db_password)`):
/// a lowercase name that names a secret (`auth)`), with the list going on after it.
fn secret_argument(raw: &[u8]) -> bool {
    let Some((&last, name)) = raw.split_last() else {
        return false;
    };
    matches!(last, b',' | b')')
        && name.first().is_some_and(u8::is_ascii_lowercase)
        && name
            .iter()
            .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        && names_secret_field(name)
}

/// Whether a field's name says it holds a secret (`private_key`, `db_password`, `authToken`).
fn names_secret_field(name: &[u8]) -> bool {
    [
        b"password".as_slice(),
        b"auth",
        b"passwd",
        b"passphrase",
        b"secret",
        b"token",
        b"key",
        b"credential",
    ]
    .iter()
    .any(|w| contains_ci(name, w))
}

/// Where a secret store keeps the value, not the value: `helm-chart-signing-key:private_key`,
/// `prod/db:password`, `kv/app/api#token` name an entry and its field. Every part is a name and
/// the last one, a lowercase field name, names a secret.
fn secret_field_reference(v: &[u8]) -> bool {
    let Some(sep) = v.iter().rposition(|&b| matches!(b, b':' | b'/' | b'#')) else {
        return false;
    };
    let (path, field) = (&v[..sep], &v[sep + 1..]);
    let name = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'/' | b':');
    !path.is_empty()
        && path[0].is_ascii_alphabetic()
        && path.iter().all(name)
        && field.len() >= 3
        && field.first().is_some_and(u8::is_ascii_lowercase)
        && field.iter().all(|&b| b.is_ascii_lowercase() || b == b'_')
        && names_secret_field(field)
}

/// What a value's shape says is no secret wherever it stands: a field of a secret store, a
/// Markdown link, a labelled digest, escaped text, Basic credentials of filler.
fn names_no_secret(v: &[u8]) -> bool {
    interpolation(v)
        || certificate(v)
        || timestamp(v)
        || jose_algorithm(v)
        || method_call(v)
        || elided(v)
        || sops_ciphertext(v)
        || namespace_path(v)
        // A JSON object's start (`{"signature_methods":`), cut where the value was read.
        || v.starts_with(b"{\"") && v.ends_with(b"\":")
        || secret_field_reference(v)
        || markdown_link(v)
        || labelled_digest(v)
        || unicode_escaped_text(v)
        || (8..=128).contains(&v.len()) && v.iter().all(|&b| b64(b)) && basic_filler(v)
}

/// A member path of names (`TestConstants.AuthorityUtid2Tenant`, `Settings.Default.ApiKeyName`):
/// each part a name of words (a capital or a digit starts the next, and words average three
/// letters or more) with at most three digits, where a token's parts are runs of mixed case and
/// digits (`hvs.JGbZZaCkOSgsZ56uhGlTK2zy…`).
fn member_path(v: &[u8]) -> bool {
    v.contains(&b'.') && v.split(|&b| b == b'.').all(name_of_words)
}

/// A name of words (`AuthorityUtid2Tenant`, `storage`, `Device_Token`): a capital, a `_` or a
/// digit starts the next word, words average three letters or more, three digits at most.
fn name_of_words(p: &[u8]) -> bool {
    let digits = p.iter().filter(|b| b.is_ascii_digit()).count();
    let words = 1 + p
        .windows(2)
        .filter(|w| w[1].is_ascii_uppercase() && !w[0].is_ascii_uppercase() || w[1] == b'_')
        .count();
    p.len() >= 2
        && p[0].is_ascii_alphabetic()
        && p.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
        && digits <= 3
        && p.len() - digits >= 3 * words
}

/// A certificate's DER in base64 (`MIIDtTCCAp2gAwIBAgIJ…`, after markup such as
/// `<ds:X509Certificate>`): X.509's version field `AwIBAgI` follows its first bytes. Public.
fn certificate(v: &[u8]) -> bool {
    if v.len() < 32 {
        return false;
    }
    let Some(at) = v.windows(3).position(|w| w == b"MII") else {
        return false;
    };
    let head = &v[at..v.len().min(at + 24)];
    head.windows(7).any(|w| w == b"AwIBAgI")
}

/// An ISO 8601 time (`2020-09-25T16:00:00+00:00`, `2015-08-31 08:54:05Z`).
fn timestamp(v: &[u8]) -> bool {
    let digit = |k: usize| v.get(k).is_some_and(u8::is_ascii_digit);
    v.len() >= 16
        && (0..4).all(digit)
        && v[4] == b'-'
        && digit(5)
        && digit(6)
        && v[7] == b'-'
        && digit(8)
        && digit(9)
        && matches!(v[10], b'T' | b' ')
        && v[11..]
            .iter()
            .all(|&b| b.is_ascii_digit() || matches!(b, b':' | b'.' | b'+' | b'-' | b'Z'))
}

/// A JOSE algorithm's name (`HS384`, `RS256`, `ES512`, `PS256`, `EdDSA`): what signs, not the key.
fn jose_algorithm(v: &[u8]) -> bool {
    v == b"EdDSA"
        || v.len() == 5
            && matches!(&v[..2], b"HS" | b"RS" | b"ES" | b"PS")
            && matches!(&v[2..], b"256" | b"384" | b"512")
}

/// A method called with named arguments, cut at a comma (`models.CharField(max_length=84`).
fn method_call(v: &[u8]) -> bool {
    let Some(open) = v.iter().position(|&b| b == b'(') else {
        return false;
    };
    let head = &v[..open];
    head.contains(&b'.')
        && head.first().is_some_and(u8::is_ascii_alphabetic)
        && head
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.'))
        && v.get(open + 1)
            .is_some_and(|&b| b.is_ascii_alphabetic() || b == b'_')
        && v[open + 1..].contains(&b'=')
}

/// A short value elided in its middle (`gA..H`, `lp..X`): documentation shortening a token.
fn elided(v: &[u8]) -> bool {
    v.len() <= 16
        && v.windows(2)
            .position(|w| w == b"..")
            .is_some_and(|k| k > 0 && k + 2 < v.len())
}

/// A PHP class's namespaced name (`OAuth2\\Storage\\AccessTokenInterface`, `App\\Models\\User`,
/// its backslashes doubled inside a string or not): names of words joined by `\\`.
fn namespace_path(v: &[u8]) -> bool {
    if !v.contains(&b'\\') {
        return false;
    }
    let mut parts = 0;
    let all = v.split(|&b| b == b'\\').filter(|p| !p.is_empty()).all(|p| {
        parts += 1;
        p[0].is_ascii_uppercase() && name_of_words(p)
    });
    all && parts >= 2 && v.contains(&b'\\')
}

/// A value sops encrypted (`ENC[AES256_GCM,data:…,iv:…,tag:…,type:str]`): ciphertext whose key
/// is kept in a key service, as Maven's `{…}` is.
fn sops_ciphertext(v: &[u8]) -> bool {
    v.starts_with(b"ENC[") && contains_ci(v, b",iv:") && contains_ci(v, b",tag:")
}

/// A string interpolated in Swift (`\(PasskeyCredentialDeviceType)`) or C# (`$"{cfg.ClientId}__Cache"`):
/// code that builds the value.
fn interpolation(v: &[u8]) -> bool {
    let path = |t: &[u8]| {
        !t.is_empty()
            && t.iter()
                .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.'))
    };
    if let Some(rest) = v.strip_prefix(b"\\(") {
        return path(rest.strip_suffix(b")").unwrap_or(rest));
    }
    v.strip_prefix(b"$\"{")
        .and_then(|rest| rest.iter().position(|&b| b == b'}').map(|close| &rest[..close]))
        .is_some_and(path)
}

/// A URL with no credentials before its host whose every long part is a word, a number or a
/// date (`http://schemas.xmlsoap.org/ws/2005/07/securitypolicy/IncludeToken/AlwaysToRecipient`):
/// a webhook's or a signed link's key is a long run of letters and digits mixed.
fn readable_url(v: &[u8]) -> bool {
    // Credentials sit before the host (`https://user:pw@host`); an `@` further on is the path's
    // or the fragment's (`…/#@tenant.onmicrosoft.com/…`).
    let no_userinfo = find_ci(v, 0, b"://").is_some_and(|s| {
        let authority = &v[s + 3..];
        let host_end = authority
            .iter()
            .position(|&b| matches!(b, b'/' | b'?' | b'#'))
            .unwrap_or(authority.len());
        !authority[..host_end].contains(&b'@')
    });
    no_userinfo
        && v.split(|b| !b.is_ascii_alphanumeric())
            .all(|part| part.len() < 12 || !has_digit(part) || part.iter().all(u8::is_ascii_digit))
}

/// A Markdown link (`[PassTLSClientCert](passtlsclientcert.md)`): text and where it points.
fn markdown_link(v: &[u8]) -> bool {
    v.first() == Some(&b'[')
        && v.windows(2).position(|w| w == b"](").is_some_and(|k| k > 1)
        && matches!(v.last(), Some(b')' | b'd' | b'l' | b'/' | b'm'))
        && !v[1..].contains(&b'[')
}

/// A digest named by its algorithm (`jwk-thumbprint:sha-256:NzbLsXh8…`, `sha1=0beec7b5…`,
/// `md5:9e107d9d…`): a hash of something, published to compare with.
fn labelled_digest(v: &[u8]) -> bool {
    const ALGORITHMS: [&[u8]; 8] = [
        b"sha-512", b"sha-384", b"sha-256", b"sha512", b"sha384", b"sha256", b"sha1", b"md5",
    ];
    // One search for where an algorithm's name can start, then its names read there.
    let Some(at) = find_ci(v, 0, b"sha").or_else(|| find_ci(v, 0, b"md5")) else {
        return false;
    };
    ALGORITHMS.iter().any(|alg| {
        if eat_ci(v, at, alg).is_none() {
            return false;
        }
        let sep = at + alg.len();
        let digest = v.get(sep + 1..).unwrap_or_default();
        (at == 0 || !v[at - 1].is_ascii_alphanumeric())
            && matches!(v.get(sep), Some(b':' | b'=' | b'-'))
            && digest.len() >= 16
            && digest
                .iter()
                .all(|&b| b64url(b) || matches!(b, b'+' | b'/' | b'='))
    })
}

/// Text written as `\uXXXX` escapes of letters outside ASCII (Java properties:
/// `Password=\u30d1\u30b9\u30ef…`, the label in Japanese).
fn unicode_escaped_text(v: &[u8]) -> bool {
    v.len() >= 12
        && v.chunks(6).all(|c| {
            c.len() == 6
                && c.starts_with(b"\\u")
                && c[2..].iter().all(u8::is_ascii_hexdigit)
                && !c[2..4].eq(b"00")
        })
}

/// Lowercase words joined by `_` or `-` ending with the key's own secret word (`"access_token":
/// "facebook_token"`, `password: db-password`): the slot's name, not a value typed into it.
fn named_slot(v: &[u8], key: &[u8]) -> bool {
    let Some(sep) = v.iter().rposition(|&b| matches!(b, b'_' | b'-')) else {
        return false;
    };
    let last = &v[sep + 1..];
    sep > 0
        && v.iter()
            .all(|&b| b.is_ascii_lowercase() || matches!(b, b'_' | b'-'))
        && [
            &b"token"[..],
            b"secret",
            b"password",
            b"passwd",
            b"pass",
            b"key",
            b"apikey",
            b"credential",
            b"credentials",
        ]
        .contains(&last)
        && contains_ci(key, last)
}

/// A version with a pre-release or build part (`v0.0.0-20230304212654-82a0ddb27589`, Go's
/// pseudo-version with its commit id, `1.4.0-rc.1+5114f85`, `v1.2.3/go.mod`) or a range of
/// them (`^3.0.1`, `~1.2.3`, `>=2.0.0`): three dotted numbers first, then names and ids.
fn version_like(v: &[u8]) -> bool {
    let v = &v[v
        .iter()
        .take_while(|b| matches!(b, b'^' | b'~' | b'>' | b'<' | b'='))
        .count()..];
    let body = v.strip_prefix(b"v").unwrap_or(v);
    let mut k = 0;
    for part in 0..3 {
        let d = run_end(body, k, |b| b.is_ascii_digit());
        if d == k {
            return false;
        }
        k = d;
        if part < 2 {
            if body.get(k) != Some(&b'.') {
                return false;
            }
            k += 1;
        }
    }
    match body.get(k) {
        None => true,
        Some(b'-' | b'+' | b'/') => body[k..]
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'/' | b'.' | b'_')),
        _ => false,
    }
}

/// `name(…)`, `name[…]`, `Name<…>`: an identifier applied to something, closed at the end.
fn code_expression(raw: &[u8]) -> bool {
    let Some(open) = raw.iter().position(|&b| matches!(b, b'(' | b'[' | b'<')) else {
        return false;
    };
    let head = &raw[..open];
    let body = trim_end_of(raw, |b| matches!(b, b';' | b',' | b'.'));
    let ident = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':');
    // A composite literal or a closure opens a brace after its type (`map[string]string{…`,
    // `[]byte{…`, `Vec<u8> {`).
    let composite = || {
        raw[open..]
            .iter()
            .position(|&b| matches!(b, b')' | b']' | b'>'))
            .is_some_and(|c| {
                let rest = &raw[open + c + 1..];
                rest.iter()
                    .position(|&b| b == b'{')
                    .is_some_and(|q| rest[..q].iter().all(|b| ident(b) || b.is_ascii_whitespace()))
            })
    };
    !head.is_empty()
        && head.iter().all(ident)
        && (matches!(body.last(), Some(b')' | b']' | b'>')) || composite())
}

fn trim_end_of(v: &[u8], class: impl Fn(u8) -> bool) -> &[u8] {
    let n = v.iter().rev().take_while(|&&b| class(b)).count();
    &v[..v.len() - n]
}

/// Letters of both cases, digits and a symbol together, not words joined by separators: a
/// generated value. Mixed case, so that key chords (`ctrl+shift+1`) and `user@host1` are not one.
fn generated(v: &[u8]) -> bool {
    mixed_case(v)
        && has_digit(v)
        && v.iter().any(|&b| {
            !b.is_ascii_alphanumeric() && !matches!(b, b'_' | b'-' | b'.' | b':' | b'/' | b'+' | b'@')
        })
        && !wordy(v)
}

/// A generated value whose alphabet holds the space (WordPress's salts: 64 printable characters,
/// `'MW1pxMctoyA(>M%0Vl 2(#o0|2$cB+K|…'`): long, a space at most every sixteenth character, and
/// as random as printable characters drawn at random, not words or code with spaces between.
fn spaced_random(v: &[u8]) -> bool {
    let spaces = v.iter().filter(|&&b| b == b' ').count();
    v.len() >= 32
        && spaces * 16 <= v.len()
        && v.iter().all(|&b| b.is_ascii_graphic() || b == b' ')
        && generated(v)
        && entropy(v) >= 4.5
        && v.split(|&b| b == b' ')
            .all(|part| part.len() >= 2 && !wordy(part))
}

/// A quoted value with spaces that reads as a passphrase, not a message: a few words, none of
/// them a sentence word or a secret word (`"Password must be at least 8 characters"`).
fn passphrase_like(v: &[u8]) -> bool {
    const MESSAGE_WORDS: Words = words_of!(
        b"a an the is are be must should at least please enter your invalid \
        required not of to for or characters chars field missing wrong incorrect match cannot \
        can't does do this that you in on if it was expired empty too short long here new old"
    );
    let parts = || v.split(u8::is_ascii_whitespace).filter(|w| !w.is_empty());
    (2..=8).contains(&parts().count())
        && v.len() >= 10
        && parts().all(|w| {
            let w = trim_end_of(w, |b| matches!(b, b'.' | b',' | b'!' | b'?' | b':'));
            !MESSAGE_WORDS.iter().any(|m| w.eq_ignore_ascii_case(m)) && secret_word(w).is_none()
        })
}

/// One word quoted in a sentence about a password (`"centipede"`, `'blooberry'`), not a word
/// that describes one (`"wrong"`, `"required"`, `"hidden"`).
fn quoted_word(v: &[u8]) -> bool {
    const DESCRIBING: Words = words_of!(
        b"wrong incorrect invalid correct right weak strong short long expired empty blank missing \
        set unset changed reset same different secure insecure"
    );
    v.iter()
        .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'!' | b'@' | b'#'))
        && !DESCRIBING.iter().any(|w| v.eq_ignore_ascii_case(w))
}

/// `my`, `our`, `the`… right before the key: the colon after it is a sentence's, not a mapping's.
fn owned_in_prose(line: &[u8]) -> bool {
    let t = trim_ascii(line);
    let last = t.rsplit(|&b| b == b' ' || b == b'\t').next().unwrap_or(t);
    [&b"my"[..], b"our", b"the", b"his", b"her", b"their"]
        .iter()
        .any(|w| last.eq_ignore_ascii_case(w))
}

/// A long run of lowercase letters standing alone: words run together as a passphrase.
fn passphrase_word(bytes: &[u8], value: &Value) -> bool {
    let v = value.text(bytes);
    !value.quoted && v.len() >= 16 && v.iter().all(u8::is_ascii_lowercase) && prose_word(bytes, value)
}

/// A value standing alone in a sentence, not glued to a quote (`name="password"`), not `Name=word`.
fn prose_word(bytes: &[u8], value: &Value) -> bool {
    let v = value.text(bytes);
    let named = v.iter().position(|&b| b == b'=').is_some_and(|eq| {
        // `Name=word`, or a short attribute with its quote (`id="password`).
        (eq >= 3 || eq >= 1 && matches!(v.get(eq + 1), Some(b'"' | b'\'')))
            && v[..eq].iter().all(u8::is_ascii_alphabetic)
    });
    let end = string_close_end(bytes, value.raw_end);
    !value.quoted
        && !named
        && (bytes
            .get(end)
            .is_none_or(|&b| b.is_ascii_whitespace() || matches!(b, b',' | b';'))
            || cjk_at(bytes, end))
}

/// Past the quote that closes a string the text sits in, and the brackets that close around it
/// (`{"prompt": "my password is …"}`): the string's end is the text's. `pos` itself otherwise.
fn string_close_end(bytes: &[u8], pos: usize) -> usize {
    if !matches!(bytes.get(pos), Some(b'"' | b'\'')) {
        return pos;
    }
    let end = run_end_max(bytes, pos + 1, 8, |b| matches!(b, b'}' | b']' | b')'));
    if bytes
        .get(end)
        .is_none_or(|&b| b.is_ascii_whitespace() || b == b',')
    {
        end
    } else {
        pos
    }
}

/// A random-looking word of at least `min` bytes: digits and letters mixed, or symbols, or a long
/// high-entropy run; not a technical word (`sha256`) nor words joined by dashes.
fn looks_random(v: &[u8], min: usize) -> bool {
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
fn camel_word_share(v: &[u8]) -> Option<usize> {
    if v.is_empty() || !v.iter().all(u8::is_ascii_alphabetic) || !mixed_case(v) {
        return None;
    }
    let vowel = |b: &u8| matches!(b.to_ascii_lowercase(), b'a' | b'e' | b'i' | b'o' | b'u' | b'y');
    let mut share = 0;
    let mut k = 0;
    while k < v.len() {
        let upper = run_end(v, k, |b| b.is_ascii_uppercase());
        let lower = run_end(v, upper, |b| b.is_ascii_lowercase());
        let start = if upper > k && lower > upper {
            upper - 1
        } else {
            upper
        };
        if lower - upper >= 2 && v[start..lower].iter().any(vowel) || abbreviation(&v[start..lower]) {
            share += lower - start;
        }
        k = lower;
    }
    Some(share)
}

/// A word programmers shorten to consonants (`Pwd`, `Cfg`, `Db`, `Str`, `Txt`): a name's part
/// in camelCase (`userPwdTxt`, `cfgDbPwd`) as much as a word with vowels.
fn abbreviation(seg: &[u8]) -> bool {
    const SHORT: Words = words_of!(
        b"pwd pw pswd passwd cfg conf db str txt msg btn ctx src dst tmp mgr svc ptr cnt rnd sql xml \
        html http cmd pkg tbl fn cb hdr ts dt tz nbr qty crt jwt ssh ssl tls dns grp std dflt lst \
        bkp prd stg lcl nxt prv frm lbl chk dlg pnl wnd hst srv cln clnt rsp rslt"
    );
    (2..=5).contains(&seg.len())
        && seg[1..].iter().all(u8::is_ascii_lowercase)
        && SHORT.iter().any(|w| seg.eq_ignore_ascii_case(w))
}

/// Whether the text within 256 bytes of `value` holds its text again as a word of its own: a
/// variable is defined and used, a literal is typed once.
fn named_nearby(bytes: &[u8], start: usize, end: usize) -> bool {
    let v = &bytes[start..end];
    let from = start.saturating_sub(256);
    let to = bytes.len().min(end + 256);
    let standalone = |at: usize| {
        (at == 0 || !is_key_byte(bytes[at - 1])) && !bytes.get(at + v.len()).is_some_and(|&b| is_key_byte(b))
    };
    let mut k = from;
    while let Some(off) = bytes[k..to].windows(v.len()).position(|w| w == v) {
        let at = k + off;
        if at != start && standalone(at) {
            return true;
        }
        k = at + 1;
    }
    false
}

/// Random mixed-case letters (`ImOIVBfPhQYm`), not an identifier (`getUserName`,
/// `PasswordField`): eight or more, under half of them in words (see [`camel_word_share`]).
fn random_letters(v: &[u8]) -> bool {
    v.len() >= 8 && camel_word_share(v).is_some_and(|w| 2 * w < v.len())
}

/// A key path (`user:1234:profile:v2`, `session:9f3a2b:cart`, `orders#2024-05#eu`,
/// `app.cache.ttl`): parts joined by `:`, `/`, `#` or `|` (or by `.` where none of those
/// stands: `rate:203.0.113.7:minute` holds an address), at least half of them words (letters,
/// `_`, `-`), the others short ids (twelve bytes at most, a UUID, a number, an address or a
/// date). What a weak key word (`cache key:`) names there is an entry of a store; a random
/// part of its own is a secret's.
fn key_path(v: &[u8]) -> bool {
    let outer = |b: &u8| matches!(b, b':' | b'/' | b'#' | b'|');
    let dotted = !v.iter().any(outer);
    let (mut parts, mut words) = (0usize, 0usize);
    for part in v.split(|b| outer(b) || dotted && *b == b'.') {
        if part.is_empty() {
            continue;
        }
        parts += 1;
        let letters = part.iter().filter(|b| b.is_ascii_alphabetic()).count();
        let word = letters >= 3
            && part
                .iter()
                .all(|&b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'-'))
            && !random_letters(part);
        if word {
            words += 1;
        } else if part.len() > 12 && !uuid(part) && !numeric_like(part) {
            return false;
        }
    }
    parts >= 2 && 2 * words >= parts
}

/// A hex digest's length in one case (an MD5, a SHA-1, a SHA-224, a SHA-256, a SHA-384, a
/// SHA-512): after a bare `key` word (`cache key:`, `md5 key`), an entry's hash or an object's
/// id; a key word with a qualifier (`master key:`, `secret key:`) holds a key.
fn hex_digest(v: &[u8]) -> bool {
    matches!(v.len(), 32 | 40 | 56 | 64 | 96 | 128)
        && v.iter().all(u8::is_ascii_hexdigit)
        && !(v.iter().any(u8::is_ascii_uppercase) && v.iter().any(u8::is_ascii_lowercase))
}

/// `key` alone, or after a word naming what a store or an index keys its entries by
/// (`cache_key`, `partitionKey`, `etag-key`, `cache key`); `before` is the text before the key
/// (a qualifier written with a space stands there). `Subscription-Key`, `license_key`,
/// `lemlist key` and `api key` name credentials.
fn bare_key_word(before: &[u8], key: &[u8]) -> bool {
    const INDEX: Words = words_of!(
        b"cache redis memcache memcached partition sort range row primary foreign hash md5 sha1 \
        sha256 etag idempotency dedup lookup object map dict index the a an this that same its each"
    );
    if key.len() < 3 || !key[key.len() - 3..].eq_ignore_ascii_case(b"key") {
        return false;
    }
    // A URL's query parameter (`?key=`, `&key=`) is where an API takes its key, not an index.
    if key.len() == 3 && matches!(before.last(), Some(b'?' | b'&')) {
        return false;
    }
    let index = |w: &[u8]| INDEX.iter().any(|x| w.eq_ignore_ascii_case(x));
    let head = trim_end_of(&key[..key.len() - 3], |b| matches!(b, b'_' | b'-' | b'.'));
    if !head.is_empty() {
        return index(head);
    }
    let spaced = trim_end_of(before, |b| b == b' ' || b == b'\t');
    let word = &spaced[spaced.len()
        - spaced
            .iter()
            .rev()
            .take_while(|b| b.is_ascii_alphanumeric())
            .count()..];
    spaced.len() == before.len() || word.is_empty() || index(word)
}

/// The text of the line before `key` (at most 256 bytes: it is read once per key) when `key`
/// is a part of `bytes` (a key the scan read), else nothing.
fn text_before<'b>(bytes: &'b [u8], key: &[u8]) -> &'b [u8] {
    if bytes.as_ptr_range().contains(&key.as_ptr()) {
        let at = key.as_ptr() as usize - bytes.as_ptr() as usize;
        line_before(bytes, at)
    } else {
        &[]
    }
}

/// A cookie (`Set-Cookie: lang=en-US`, `Cookie: consent=accepted`) whose value is plain: a
/// setting, a locale, a choice; in a quoted header (`"theme=dark; path=/"`) every pair is. A
/// cookie named for a session or a credential (`session`, `connect.sid`, `PHPSESSID`,
/// `auth_token`, `remember_me`) holds one whatever it looks like; any other holds a secret only
/// when its value looks generated (`uid=q8f3kz0v9w2m…`).
fn plain_cookie(v: &[u8], key: &[u8]) -> bool {
    let plain_pair = |pair: &[u8]| {
        let pair = trim_ascii(pair);
        let Some(eq) = pair.iter().position(|&b| b == b'=') else {
            // An attribute alone (`HttpOnly`, `Secure`).
            return pair.iter().all(u8::is_ascii_alphabetic);
        };
        let value = &pair[eq + 1..];
        let value = value.strip_prefix(b"\"").unwrap_or(value);
        let value = value.strip_suffix(b"\"").unwrap_or(value);
        plain_cookie_pair(&pair[..eq], value)
    };
    contains_ci(key, b"cookie") && v.contains(&b'=') && v.split(|&b| b == b';').all(plain_pair)
}

/// A cookie's `name` and `value` that hold no secret (see [`plain_cookie`]).
fn plain_cookie_pair(name: &[u8], value: &[u8]) -> bool {
    const SESSION: &[&[u8]] = &[
        b"sess",
        b"auth",
        b"token",
        b"jwt",
        b"login",
        b"remember",
        b"secret",
        b"cred",
        b"csrf",
        b"xsrf",
        b"passw",
        b"pwd",
        b"passphrase",
        b"private",
        b"apikey",
    ];
    // `sid` ends a part (`PHPSESSID`, `connect.sid`); `key` is one (`private_key`, `key`), not a
    // word's end (`hotkey`).
    let session = SESSION.iter().any(|w| contains_ci(name, w))
        || name.split(|&b| matches!(b, b'_' | b'-' | b'.')).any(|part| {
            part.len() >= 3 && part[part.len() - 3..].eq_ignore_ascii_case(b"sid")
                || part.eq_ignore_ascii_case(b"key")
        });
    !name.is_empty()
        && name
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        && !session
        && !looks_random(value, 8)
        && (value.len() < 16 || entropy(value) < 3.0)
}

/// Mostly capitalised words run together (`ThisIsNotAHash…`): at least two thirds of `v` are
/// capitals followed by two or more lowercase letters, which random base64 almost never is.
fn camel_words(v: &[u8]) -> bool {
    let mut words = 0;
    let mut k = 0;
    while k < v.len() {
        let e = run_end(v, k + 1, |b| b.is_ascii_lowercase());
        if v[k].is_ascii_uppercase() && e - k >= 3 {
            words += e - k;
        }
        k = e;
    }
    3 * words >= 2 * v.len()
}

/// An alphabet or a run of one (`abcdefghijklmnopqrstuvwxyz`, `A-Za-z0-9`): each byte mostly the
/// one after the byte before it. Every character once gives it a high entropy, not a random order.
fn alphabet(v: &[u8]) -> bool {
    let next = v.windows(2).filter(|w| w[1] == w[0].wrapping_add(1)).count();
    v.len() >= 8 && next * 4 >= (v.len() - 1) * 3
}

fn has_digit(v: &[u8]) -> bool {
    v.iter().any(u8::is_ascii_digit)
}

/// A character that identifiers and words do not use (a letter of any script is not one:
/// `ändern` is a word).
fn has_symbol(v: &[u8]) -> bool {
    v.utf8_chunks().any(|chunk| {
        !chunk.invalid().is_empty()
            || chunk
                .valid()
                .chars()
                .any(|c| !c.is_alphanumeric() && !matches!(c, '_' | '-' | '.' | ':' | '/'))
    })
}

/// A Chinese, Japanese or Korean character or full-width punctuation (U+3000–U+9FFF,
/// U+AC00–U+D7FF, U+FF00–U+FFEF) at byte `k`: prose glued to a value, not part of it
/// (`密码：Xy7!kq9Lm，谢谢`, `비밀번호는 Xy7!kq9Lm입니다`).
fn cjk_at(bytes: &[u8], k: usize) -> bool {
    match bytes.get(k) {
        Some(0xE3..=0xE9 | 0xEB..=0xED) => true,
        Some(0xEA) => bytes.get(k + 1).is_some_and(|&b| b >= 0xB0),
        Some(0xEF) => matches!(bytes.get(k + 1), Some(0xBC..=0xBF)),
        _ => false,
    }
}

fn mixed_case(v: &[u8]) -> bool {
    v.iter().any(u8::is_ascii_uppercase) && v.iter().any(u8::is_ascii_lowercase)
}

/// An identifier, a dotted or `::` path, a reference or a type: letters, `_`, `.`, `:`, `&`, `'`,
/// `?`, `|`, no digits (so `hunter2` is not one).
fn identifier_like(v: &[u8]) -> bool {
    v.first()
        .is_some_and(|&b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'&'))
        && v.iter().all(|&b| {
            b.is_ascii_alphabetic() || matches!(b, b'_' | b'.' | b':' | b'&' | b'\'' | b'?' | b'|' | b'-')
        })
}

/// Numbers, dates, times, versions and IP addresses.
fn numeric_like(v: &[u8]) -> bool {
    let body = v.strip_prefix(b"v").unwrap_or(v);
    !body.is_empty()
        && body[0].is_ascii_digit()
        && body
            .iter()
            .all(|&b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b':' | b'/' | b'_' | b'+'))
        || (v.len() <= 5
            && v.iter()
                .all(|&b| b.is_ascii_digit() || matches!(b, b'k' | b'K' | b'm' | b'M')))
}

fn is_path_or_url(v: &[u8]) -> bool {
    v.starts_with(b"/")
        || v.starts_with(b"./")
        || v.starts_with(b"../")
        || v.starts_with(b"~/")
        || (v.len() > 2 && v[1] == b':' && v[2] == b'\\')
        || contains_ci(v, b"://") && !v.contains(&b'@')
}

/// Words joined by `-`, `_`, `.` or `/` (`base64url-encoded`, `my-tls-secret`).
fn wordy(v: &[u8]) -> bool {
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
fn tech_word(v: &[u8]) -> bool {
    let mut named = false;
    let all_tech = v.split(|&b| matches!(b, b'-' | b'_')).all(|part| {
        if !part.is_empty() && part.iter().all(u8::is_ascii_digit) {
            return KEY_SIZES.contains(&part);
        }
        named = true;
        let stem = &part[..part.len() - part.iter().rev().take_while(|b| b.is_ascii_digit()).count()];
        tech_part(part) || tech_part(stem) && KEY_SIZES.iter().any(|size| part[stem.len()..] == **size)
    });
    all_tech && named
}

/// Bit and key sizes written after an algorithm's name.
const KEY_SIZES: &[&[u8]] = &[
    b"1", b"2", b"3", b"5", b"128", b"160", b"192", b"224", b"256", b"384", b"512", b"1024", b"2048",
    b"3072", b"4096", b"8192",
];

fn tech_part(v: &[u8]) -> bool {
    const WORDS: Words = words_of!(
        b"sha1 sha256 sha384 sha512 base64 base64url base32 utf8 utf-8 md5 x509 ipv4 \
        ipv6 http2 http3 oauth2 hs256 hs512 rs256 rs512 es256 aes128 aes256 pbkdf2 argon2 argon2id \
        argon2i argon2d bcrypt scrypt yescrypt aes sha rsa hmac ecdsa pbkdf k8s ed25519 secp256k1 \
        rsa2048 rsa4096 p256 blake3 sha3-256 x25519 chacha20 s3 ec2 gpt-4 gpt4 gpt-4o o200k cl100k \
        cl100k_base o200k_base bpe wordpiece"
    );
    WORDS.iter().any(|w| v.eq_ignore_ascii_case(w))
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
fn same_line_tokens(bytes: &[u8], found: &mut Vec<Finding>, name_words: Option<&[usize]>) -> bool {
    const NOT: Words = words_of!(
        b"public publishable fingerprint commit sha sha1 sha256 sha512 checksum digest hash hashes integrity \
        ssh-rsa ssh-ed25519 ecdsa-sha2-nistp256 gpg pgp"
    );
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
            if matches!(c | 0x20, b'k' | b't' | b'p' | b's' | b'c' | b'a') {
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
            k = run_end(bytes, k + 1, |c| CLASS[usize::from(c)] & 1 == 0);
            continue;
        }
        // A word starts at `k` (the pass goes from word to word): its first 12 bytes are the
        // word a name is looked for in, and the rest of it starts nothing.
        let run = run_end(bytes, k + 1, |c| CLASS[usize::from(c)] & 1 == 1);
        let word = &bytes[k..run.min(k + 12)];
        if class != 3 || !may_name_secret(word) || !names_secret(word) {
            k = run;
            continue;
        }
        let start = bytes[..k].iter().rposition(|&c| c == b'\n').map_or(0, |p| p + 1);
        let end = bytes[k..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(bytes.len(), |p| k + p);
        while next < before && found[next].start < end {
            reach = reach.max(found[next].end);
            next += 1;
        }
        let line = &bytes[start..end];
        let about_public = || {
            line.split(|&c| !word_byte(c))
                .any(|w| NOT.iter().any(|n| w.eq_ignore_ascii_case(n)))
        };
        if reach <= start && line.len() <= 4096 && !about_public() {
            line_tokens(line, start, found);
            if line.trim_ascii_end().ends_with(b":") {
                labelled_value(bytes, end, found);
            }
        }
        k = end;
    }
    found.len() > before
}

/// A generated token alone on its line below a label line that names a secret (an installer's
/// banner: `Please use the following password to proceed to installation:`, a blank line, the
/// password), the label ending at `end`; at most two blank lines between them.
fn labelled_value(bytes: &[u8], end: usize, found: &mut Vec<Finding>) {
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
fn line_tokens(line: &[u8], start: usize, found: &mut Vec<Finding>) {
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
        if before_ok
            && after_ok
            && generated_token(&line[t..te])
            && !named_id(&line[..t])
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
fn piped_to_password_reader(line: &[u8]) -> bool {
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
fn digest_after_key_word(before: &[u8], token: &[u8]) -> bool {
    let head = trim_end_of(before, |b| matches!(b, b' ' | b'\t' | b':' | b'=' | b'"' | b'\''));
    let at = head.len()
        - head
            .iter()
            .rev()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
            .count();
    let word = &head[at..];
    hex_digest(token)
        && bare_key_word(&head[..at], word)
        && secret_word(word).is_some_and(|w| w.strength == Strength::Weak)
}

/// An id the word before a token names (`request 01HZX3…`, `trace-id: …`, `build …`), `before`
/// being the line up to the token.
fn named_id(before: &[u8]) -> bool {
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
    )
}

/// Whether a word may name a secret (see [`names_secret`]): it starts with a name's first letter
/// and is letters holding a secret word's first letters. Most words are ruled out without
/// folding their case.
fn may_name_secret(word: &[u8]) -> bool {
    word.first()
        .is_some_and(|&b| matches!(b | 0x20, b'k' | b't' | b'p' | b's' | b'c' | b'a'))
        && word.iter().all(u8::is_ascii_alphabetic)
        && may_hold_secret_word(word)
}

/// Whether a word on a line names a secret (`key`, `token`, `password`, a strong secret word):
/// a line holding one is read by [`same_line_tokens`].
fn names_secret(word: &[u8]) -> bool {
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
fn generated_token(t: &[u8]) -> bool {
    if !(20..=256).contains(&t.len()) || t.starts_with(b"AAAA") {
        return false;
    }
    let letters = t.iter().any(u8::is_ascii_alphabetic);
    let (lower, upper) = (
        t.iter().any(u8::is_ascii_lowercase),
        t.iter().any(u8::is_ascii_uppercase),
    );
    let hex = t.iter().all(u8::is_ascii_hexdigit);
    if !letters || !has_digit(t) || uuid(t) || hex && matches!(t.len(), 40 | 64 | 128) {
        return false;
    }
    if wordy(t)
        || camel_words(t)
        || alphabet(t)
        || is_placeholder(t)
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

/// Shannon entropy in bits per byte.
fn entropy(v: &[u8]) -> f64 {
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
            -p * log2::log2(p)
        })
        .sum()
}

/// A placeholder, not a value: `<…>`, `$VAR`, `${…}`, `{{…}}`, `%VAR%`, `xxxx`, `****`, `…`,
/// `changeme`, `example`, our own `[REDACTED:…]`, a repeated character, a common stand-in word.
fn is_placeholder(v: &[u8]) -> bool {
    // A cookie's or a field's name before its slot (`appSession=${signedCookieValue}`,
    // `sid=<id>`): the slot decides.
    if let Some(eq) = v.iter().position(|&b| b == b'=')
        && eq >= 2
        && eq + 1 < v.len()
        && v[..eq].iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
        && matches!(v[eq + 1], b'$' | b'{' | b'<' | b'%')
        && is_placeholder(&v[eq + 1..])
    {
        return true;
    }
    const EXACT: Words = words_of!(
        b"secret password passwd pass pwd token key apikey api_key none null nil \
        undefined true false yes no on off empty hidden required optional string str text default test \
        testing foo bar baz foobar abc abc123 123456 12345678 value username user secretkey mysecret \
        mypassword mytoken todo tbd na n/a unset not-set not_set notset masked sensitive private public auto \
        read write readonly read-only readwrite read-write"
    );
    // Templating and elision: the value is a slot, not a value, wherever these stand.
    const TEMPLATED: &[&[u8]] = &[b"...", b"${", b"{{", b"$(", b"#{", b"\xe2\x80\xa6"];
    let Some(&first) = v.first() else { return true };
    // A slot fills the whole value: `{name}`, `[REDACTED:…]`, `$NAME`, `$USER:$PASS`; `{Xk9#mQ2z`
    // and `$uP3r-S3cret!9` are passwords that start with a symbol.
    let closed = |close: u8| v.len() > 1 && v.last() == Some(&close);
    // `$NAME`, `$USER:$PASS`, `$API_URL/$COMMIT`: references joined by separators; `\$NAME` is
    // one escaped for the shell that expands it later (a command quoted inside a script).
    let var = v
        .strip_prefix(b"\\")
        .filter(|r| r.first() == Some(&b'$'))
        .unwrap_or(v);
    let variable = var[0] == b'$'
        && var.len() > 1
        && var[1..]
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b':' | b'$' | b'/' | b'@' | b'.'));
    if first == b'<'
        || variable
        || first == b'{' && closed(b'}')
        || first == b'[' && (closed(b']') || v.starts_with(b"[REDACTED:"))
        // `[PASSWORD` cut before its bracket: a capitalised slot name.
        || first == b'[' && v.len() > 3 && v[1..].iter().all(|&b| b.is_ascii_uppercase() || matches!(b, b'_' | b']'))
        || (first == b'%' && v.len() > 2 && v.last() == Some(&b'%'))
        // An alias, a decorator, a comment: `*default`, `@Value`, `#todo` (a YAML `!tag` is told
        // by what follows it, see [`yaml_tag`]).
        || (matches!(first, b'*' | b'#' | b'@') && (v.len() == 1 || identifier_like(&v[1..])))
        // A SQL system variable read in a list (`SET @OLD_FOREIGN_KEY_CHECKS=@@FOREIGN_KEY_CHECKS,`).
        || v.len() > 2 && v.starts_with(b"@@") && identifier_like(trim_end_of(&v[2..], |b| matches!(b, b',' | b';' | b')')))
        || v == b"!"
    {
        return true;
    }
    if EXACT.iter().any(|w| v.eq_ignore_ascii_case(w))
        || TEMPLATED.iter().any(|w| contains_ci(v, w)) && templated(v)
        || fake_words(v)
        || format_slot(v) && templated(v)
        || printf_slot(v)
        || masked(v)
        || placeholder_words(v)
        || fabricated(v)
        || counted_through(v)
        || mostly_one_count(v)
        || negated_phrase(v)
        || alternating_count(v)
        || encoded_filler(v)
        || rules::prefix_then_filler(v)
        || rules::documented_example(v)
        || jwt_sketch(v)
    {
        return true;
    }
    let mut distinct = [false; 256];
    let mut n = 0;
    for &b in v {
        if !distinct[usize::from(b.to_ascii_lowercase())] {
            distinct[usize::from(b.to_ascii_lowercase())] = true;
            n += 1;
        }
    }
    n <= 2 || (v.len() >= 6 && n <= 3)
}

/// Whether every template opening in `v` (`${`, `#{`, `{{`, `$(`) is a well-formed reference
/// (`${DB_PASS}`, `{{ .Values.password }}`, `$(cat /run/secrets/db)`), or `v` elides (`...`):
/// a password may hold these characters too (`m{{h}o)p${e]nob(ody…`), and then it is one.
fn templated(v: &[u8]) -> bool {
    if contains_ci(v, b"...") || contains_ci(v, "\u{2026}".as_bytes()) {
        return true;
    }
    // What stands outside the references: a password's own characters around them
    // (`ab${c}d9Xz`) make the whole a literal, not a reference.
    let mut rest = [0u8; 64];
    let mut n = 0;
    let mut keep = |b: u8| {
        if b.is_ascii_alphanumeric() && n < rest.len() {
            rest[n] = b;
            n += 1;
        }
    };
    let mut opened = false;
    let mut k = 0;
    while k + 1 < v.len() {
        let three = v.get(k..k + 3) == Some(b"${{".as_slice());
        let close: &[u8] = match &v[k..k + 2] {
            b"${" if three => {
                k += 1;
                b"}}"
            }
            b"${" => b"}",
            // Ruby's interpolation, and release pipelines' token slots (`#{DbPassword}#`).
            b"#{" => b"}",
            b"{{" => b"}}",
            b"$(" => b")",
            _ => {
                keep(v[k]);
                k += 1;
                continue;
            }
        };
        opened = true;
        let from = k + 2;
        // A reference cut at the value's end (code ends a value before a closing bracket).
        let len = match v[from..].windows(close.len()).position(|w| w == close) {
            Some(len) => len,
            None if close == b"}" || close == b")" || close == b"}}" => v.len() - from,
            None => return false,
        };
        let body = &v[from..from + len];
        let name_like = |b: &u8| b.is_ascii_alphanumeric() || b" _.:-|\"'/[],=?$".contains(b);
        if body.trim_ascii().is_empty() || !body.iter().all(name_like) {
            return false;
        }
        k = (from + len + close.len()).min(v.len());
    }
    if k < v.len() {
        keep(v[k]);
    }
    let rest = &rest[..n];
    let letters = rest.iter().any(u8::is_ascii_alphabetic);
    !(opened && rest.len() >= 4 && letters && (has_digit(rest) || mixed_case(rest)))
}

/// A value that says it is made up or unusable (`somefakekey`, `a-fake-tooshort-key`, `dummy_secret`,
/// `invalid`, `expired-token`).
fn fake_words(v: &[u8]) -> bool {
    [
        b"fake".as_slice(),
        b"dummy",
        b"notreal",
        b"not_real",
        b"not-real",
        b"not_a_real",
        b"not-a-real",
        b"notareal",
        b"[REDACTED:",
    ]
        .iter()
        .any(|w| contains_ci(v, w))
        // Words saying it is unusable (`invalid`, `expired-token`): a token is no such word.
        || v.iter().all(|&b| b.is_ascii_alphabetic() || matches!(b, b'-' | b'_'))
            && [b"invalid".as_slice(), b"expired", b"revoked"].iter().any(|w| contains_ci(v, w))
        // Nothing but punctuation is not a value (`,.:-¨@*¿?!`).
        || std::str::from_utf8(v).is_ok_and(|t| !t.is_empty() && !t.chars().any(char::is_alphanumeric))
}

/// A JWT's header with the rest typed in (`eyJhbGciOi….badz.sig`, `eyJhbGciOi….e30.sig`): a
/// token's signature is tens of characters, and a payload of a few is base64 of JSON (`e30`).
fn jwt_sketch(v: &[u8]) -> bool {
    if !v.starts_with(b"eyJ") {
        return false;
    }
    let mut parts = v.split(|&b| b == b'.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    jwt_header(header) && (signature.len() < 8 || payload.len() < 8 && !b64url_json(payload, b"{"))
}

/// Whether a JWT's first segment decodes to a JSON object naming its algorithm (`{"alg":…}`):
/// `eyJhbasdGciOi…` with letters typed into it decodes to neither. A header longer than 2 KiB
/// is not decoded, and passes.
fn jwt_header(seg: &[u8]) -> bool {
    b64url_json(seg, b"\"alg\"")
}

/// Decodes unpadded base64 of either alphabet (`+/` or `-_`) into `out`: `None` for a byte
/// outside both alphabets or for more bytes than `out` holds.
fn base64_decode<'o>(input: &[u8], out: &'o mut [u8]) -> Option<&'o [u8]> {
    let (mut acc, mut bits, mut n) = (0u32, 0u32, 0usize);
    for &b in input {
        let d = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(d);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            *out.get_mut(n)? = (acc >> bits) as u8;
            n += 1;
        }
    }
    Some(&out[..n])
}

/// Whether a base64url segment decodes to a JSON object holding `needle`. A segment longer than
/// 2 KiB is not decoded, and passes.
fn b64url_json(seg: &[u8], needle: &[u8]) -> bool {
    if seg.len() > 2048 {
        return true;
    }
    let mut out = [0u8; 1536];
    let Some(json) = base64_decode(seg, &mut out) else {
        return false;
    };
    let json = json.trim_ascii();
    json.starts_with(b"{") && json.ends_with(b"}") && json.windows(needle.len()).any(|w| w == needle)
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
    // hand-made token without breaking its count.
    let mut p = [0u8; 512];
    let mut n = 0;
    for &b in v {
        if b.is_ascii_alphanumeric() && n < p.len() {
            p[n] = b;
            n += 1;
        }
    }
    let counts = |stride: usize, down: bool| {
        // run[k]: how long the count is that ends at `k`, stepping back by `stride`.
        let mut run = [1u16; 512];
        for k in stride..n {
            let (a, b) = (p[k - stride], p[k]);
            let next = if down {
                a.wrapping_sub(1)
            } else {
                a.wrapping_add(1)
            };
            if b == next && b.is_ascii_alphanumeric() {
                run[k] = run[k - stride] + 1;
                if run[k] >= 6 {
                    return true;
                }
            }
        }
        false
    };
    // Side by side the count is on the value itself, so a separator breaks it as before.
    let mut run = 1;
    for w in v.windows(2) {
        if w[0].is_ascii_alphanumeric() && w[1] == w[0].wrapping_add(1) && w[1].is_ascii_alphanumeric() {
            run += 1;
            if run >= 6 {
                return true;
            }
        } else {
            run = 1;
        }
    }
    counts(1, true)
        || counts(2, false)
        || counts(2, true)
        || v.windows(7).any(|w| w == b"EXAMPLE")
        // The same documentation marker in its other spelling (`SAMPLEq8Zr2…`, `…Tk9SAMPLEYn7…`):
        // six capitals a generated value holds about once in a billion.
        || v.windows(6).any(|w| w == b"SAMPLE")
        || filler_run(v)
}

/// Counts end to end, however short: every letter and digit belongs to a count of three or more,
/// one of them six or more long, side by side (`abcdef12345`, `1234567890abcdef`) or every other
/// character (`b1c2d3e4f5g6h7i8`, `z9y8x7w6v5u`). Typed to fill a slot; a generated value of
/// eight or more characters is such a chain about once in a billion.
pub(crate) fn counted_through(v: &[u8]) -> bool {
    if !(8..=64).contains(&v.len())
        || !v
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return false;
    }
    let mut p = [0u8; 64];
    let mut n = 0;
    for &b in v.iter().filter(|b| b.is_ascii_alphanumeric()) {
        p[n] = b;
        n += 1;
    }
    let p = &p[..n];
    if n >= 8 && count_chain(&mut p.iter().copied()).is_some_and(|best| best >= 6) {
        return true;
    }
    let even = count_chain(&mut p.iter().step_by(2).copied());
    let odd = count_chain(&mut p.iter().skip(1).step_by(2).copied());
    n >= 8 && matches!((even, odd), (Some(a), Some(b)) if a.max(b) >= 6 && a.min(b) >= 4)
}

/// A phrase of three or more words opening with a negation (`notHighEnoughEntropy`,
/// `not_a_real_key`, `NoSecretsHere`): the value says what it is not, as a stand-in does.
fn negated_phrase(v: &[u8]) -> bool {
    if !(8..=64).contains(&v.len())
        || !v
            .iter()
            .all(|&b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'-' | b'.'))
    {
        return false;
    }
    let mut words = 0;
    let mut first_end = v.len();
    for k in 1..v.len() {
        let starts = v[k].is_ascii_uppercase() && v[k - 1].is_ascii_lowercase()
            || v[k].is_ascii_alphabetic() && !v[k - 1].is_ascii_alphabetic();
        if starts {
            words += 1;
            first_end = first_end.min(k);
        }
    }
    let first = trim_end_of(&v[..first_end], |b| matches!(b, b'_' | b'-' | b'.'));
    words >= 2 && (first.eq_ignore_ascii_case(b"not") || first.eq_ignore_ascii_case(b"no"))
}

/// One count of six or more, up or down, is most of a short value (`123456789a1234`,
/// `23456789a1`): typed to fill a slot around a counted run, not drawn at random.
fn mostly_one_count(v: &[u8]) -> bool {
    if !(8..=32).contains(&v.len()) || !v.iter().all(u8::is_ascii_alphanumeric) {
        return false;
    }
    let (mut best, mut run, mut dir) = (1usize, 1usize, 0i8);
    for w in v.windows(2) {
        let step = if w[1] == w[0].wrapping_add(1) || w[0] == b'9' && w[1] == b'0' {
            1
        } else if w[1] == w[0].wrapping_sub(1) || w[0] == b'0' && w[1] == b'9' {
            -1
        } else {
            0
        };
        if step != 0 && (run == 1 || step == dir) {
            run += 1;
            dir = step;
        } else {
            run = 1;
            dir = 0;
        }
        best = best.max(run);
    }
    best >= 6 && best * 5 >= v.len() * 3
}

/// The runs of `seq` (each stepping by one, up or down, `9` to `0` and back counting too): the
/// longest, or `None` if one is shorter than three.
fn count_chain(seq: &mut dyn Iterator<Item = u8>) -> Option<usize> {
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

/// Counts end to end typed in alternating case (`A1bC2dE3fH4iJ5kL6…/+`, `Q1rS2tU3vW4xY5zA6bC7…`):
/// the letters, case aside, run in counts of three or more, one of them six or more, each letter's
/// case the other of the one before it, and the digits between them count too. Alternating case
/// by hand makes a typed count look mixed; a generated value is such a chain about once in a
/// billion billion.
fn alternating_count(v: &[u8]) -> bool {
    if !(16..=512).contains(&v.len())
        || !v
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'+' | b'/' | b'='))
    {
        return false;
    }
    let letters = || v.iter().filter(|b| b.is_ascii_alphabetic());
    let alternating = letters()
        .zip(letters().skip(1))
        .all(|(a, b)| a.is_ascii_uppercase() != b.is_ascii_uppercase());
    let digits = v.iter().any(u8::is_ascii_digit);
    alternating
        && count_chain(&mut letters().map(u8::to_ascii_lowercase)).is_some_and(|best| best >= 6)
        && (!digits || count_chain(&mut v.iter().copied().filter(u8::is_ascii_digit)).is_some())
}

/// Base64 of filler: text of words with a documentation marker (`…ZXhhbXBsZQ==` ends in
/// `example`) or counts end to end (`YWJjZGVm…` is `abcdef…`). A generated key decodes to bytes
/// that are no text.
fn encoded_filler(v: &[u8]) -> bool {
    let body = v
        .strip_suffix(b"==")
        .or_else(|| v.strip_suffix(b"="))
        .unwrap_or(v);
    if !(16..=1024).contains(&v.len()) {
        return false;
    }
    let mut out = [0u8; 768];
    let Some(text) = base64_decode(body, &mut out) else {
        return false;
    };
    if !text.iter().all(|&b| b.is_ascii_graphic() || b == b' ') {
        return false;
    }
    let words = text.iter().all(|&b| b.is_ascii_alphanumeric() || b == b' ')
        && text.split(|&b| b == b' ').filter(|w| !w.is_empty()).count() >= 3;
    const MARKERS: [&[u8]; 5] = [b"example", b"sample", b"placeholder", b"dummy", b"fake"];
    words && MARKERS.iter().any(|m| contains_ci(text, m)) || counted_through(text)
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
    };
    let mut run = 1;
    for (k, w) in v.windows(2).enumerate() {
        run = if w[0] == w[1] { run + 1 } else { 1 };
        if run >= 6 {
            let head = &v[..k + 2 - run];
            let end = run_end(v, k + 2, |b| b == w[0]);
            let tail = &v[end..];
            return !(random(head)
                || tail.iter().all(|&b| b64url(b) || matches!(b, b'+' | b'/' | b'=')) && random(tail));
        }
    }
    false
}

/// A `{name}` format slot inside the value (`user:{user_id}`).
fn format_slot(v: &[u8]) -> bool {
    let mut at = 0;
    while let Some(k) = v[at..].iter().position(|&b| b == b'{') {
        let open = at + k;
        let name = run_end(v, open + 1, |b| {
            b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.')
        });
        // `{name}`, and Python's positional `{}`, `{0}` (`"prefix_{}".format(…)`).
        let positional = v[open + 1..name].iter().all(u8::is_ascii_digit) && name - open <= 3;
        if v.get(name) == Some(&b'}') && (name > open + 1 && v[open + 1].is_ascii_alphabetic() || positional)
        {
            return true;
        }
        at = open + 1;
    }
    false
}

/// A printf `%s` slot inside the value (`user:%s`, `%s_pass`): one not glued to a letter or
/// digit after it, which a random password's `…%sLm2…` is.
fn printf_slot(v: &[u8]) -> bool {
    v.windows(2)
        .enumerate()
        .any(|(k, w)| w == b"%s" && v.get(k + 2).is_none_or(|b| !b.is_ascii_alphanumeric()))
}

/// Masked: runs of four or more `x` or `*` make up at least half of the value
/// (`sk_live_xxxxxxxxxxxx`, `****`), not a password that happens to hold `xxxx`.
fn masked(v: &[u8]) -> bool {
    let mut masked = 0;
    let mut k = 0;
    while k < v.len() {
        let run = run_end(v, k, |b| matches!(b, b'x' | b'X' | b'*'));
        if run - k >= 4 {
            masked += run - k;
        }
        k = run.max(k + 1);
    }
    masked > 0 && masked * 2 >= v.len()
}

/// The whole value is made of stand-in words (`YOUR_API_KEY`, `change-me`, `your-token-here`,
/// `example`, `<placeholder>`): at least one marker word and nothing else but filler words. A value
/// with a digit or symbol (`Example123!`) is a real-looking password, not a placeholder.
fn placeholder_words(v: &[u8]) -> bool {
    const MARKERS: Words = words_of!(
        b"example examples placeholder changeme changeit change your dummy redacted \
        replace insert sample fake todo fixme please plz pls obfuscated censored omitted elided scrubbed \
        sanitized removed random something whatever value"
    );
    // Sentence words: a value of four or more words with a verb among them says what it is
    // (`this-is-my-token`, `it_is_not_a_real_secret`) rather than being one.
    const SENTENCE: Words = words_of!(b"is isnt are was be probably not just only");
    const FILLERS: Words = words_of!(
        b"me it my the a an with real actual own here goes this secret password \
        passwd pass pwd token key api access auth client app db database user name id string test demo \
        com org net for of to new default private public sk pk live prod dev and or credentials \
        credential strong secure complex long admin root thing really very that looks like is \
        shared across service services generated some"
    );
    // `!ChangeMe!`, `**change-this**`: marks around the words change nothing.
    let v = v.trim_ascii();
    let edge = |b: &u8| matches!(b, b'!' | b'*' | b'#' | b'?' | b'~' | b'^');
    let v = &v[v.iter().take_while(|b| edge(b)).count()..];
    let v = &v[..v.len() - v.iter().rev().take_while(|b| edge(b)).count()];
    if v.is_empty() {
        return false;
    }
    if !v
        .iter()
        .all(|&b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'-' | b'.' | b' '))
    {
        return false;
    }
    // `django-insecure-change-me-in-production`: words around a request to replace them.
    let asks = |word: &[u8]| {
        find_ci(v, 0, word).is_some_and(|at| {
            let rest = &v[at + word.len()..];
            let rest = rest
                .strip_prefix(b"-")
                .or_else(|| rest.strip_prefix(b"_"))
                .unwrap_or(rest);
            rest.len() >= 2 && rest[..2].eq_ignore_ascii_case(b"me")
        })
    };
    if v.iter()
        .all(|&b| b.is_ascii_alphabetic() || matches!(b, b'-' | b'_'))
        && (asks(b"change") || asks(b"replace"))
    {
        return true;
    }
    let mut marker = false;
    let (mut parts, mut verb) = (0, false);
    let mut start = 0;
    for k in 0..=v.len() {
        let boundary = k == v.len()
            || matches!(v[k], b'_' | b'-' | b'.' | b' ')
            || (k > start && v[k].is_ascii_uppercase() && v[k - 1].is_ascii_lowercase());
        if !boundary {
            continue;
        }
        let part = &v[start..k];
        start = if k < v.len() && !v[k].is_ascii_alphabetic() {
            k + 1
        } else {
            k
        };
        if part.is_empty() {
            continue;
        }
        parts += 1;
        if SENTENCE.iter().any(|w| part.eq_ignore_ascii_case(w)) {
            verb = true;
            continue;
        }
        match stand_in_words(part, &MARKERS, &FILLERS) {
            Some(m) => marker |= m,
            None => return false,
        }
    }
    // Lowercase naming words joined by `-` or `_` that end with the secret's word
    // (`client-secret`, `db_password`, `my-api-key`): the slot's name, typed where it goes.
    // One that calls itself real (`real_key`) claims to be the value.
    let named = v
        .iter()
        .all(|&b| b.is_ascii_lowercase() || matches!(b, b'-' | b'_'))
        && v.iter().any(|&b| matches!(b, b'-' | b'_'))
        && !v.starts_with(b"real")
        && !v.starts_with(b"actual")
        && [
            &b"secret"[..],
            b"password",
            b"passwd",
            b"pwd",
            b"token",
            b"key",
            b"credentials",
        ]
        .iter()
        .any(|w| v.ends_with(w));
    marker || named || verb && parts >= 4
}

/// Whether `part` is stand-in words run together (`yourpassword`, `changemeplease`): `None` if
/// not, else whether a marker word is among them.
fn stand_in_words(part: &[u8], markers: &Words, fillers: &Words) -> Option<bool> {
    if part.len() > 64 {
        return None;
    }
    // reach[k]: `part[..k]` splits into words; `Some(true)` if one of them is a marker.
    let mut reach: [Option<bool>; 65] = [None; 65];
    reach[0] = Some(false);
    for k in 0..part.len() {
        let Some(seen) = reach[k] else { continue };
        for (list, marker) in [(markers, true), (fillers, false)] {
            for w in list.iter() {
                if eat_ci(part, k, w).is_some() {
                    let e = k + w.len();
                    reach[e] = Some(reach[e].unwrap_or(false) | seen | marker);
                }
            }
        }
    }
    reach[part.len()]
}

/// A reference to where the secret lives, not the secret: environment and config lookups.
fn is_reference(v: &[u8]) -> bool {
    const PREFIXES: Words = words_of!(
        b"os.environ os.getenv process.env import.meta.env env. env( env[ ENV[ ENV. \
        System.getenv getenv Deno.env std::env env! secrets. vault: ref+ config. settings. self. this. \
        cfg. conf. args. opts. options. params. props. req. request. ctx. context. credentials. data. \
        user. auth. Environment. Config. Settings."
    );
    PREFIXES.iter().any(|p| v.starts_with(p))
}

/// A `${`, `{{` or `$(` in `v` with no closing bracket after it.
fn unclosed_template(v: &[u8]) -> bool {
    [(&b"${"[..], &b"}"[..]), (b"{{", b"}}"), (b"$(", b")")]
        .iter()
        .any(|(open, close)| {
            v.windows(2)
                .position(|w| w == *open)
                .is_some_and(|at| !v[at + 2..].windows(close.len()).any(|w| w == *close))
        })
}

/// A capitalised name with lowercase letters in it is a type (`ClientSecretCredential`); an
/// all-capitals one is a function of SQL (`PASSWORD('…')`) or a constant.
fn camel_type(key: &[u8]) -> bool {
    key[0].is_ascii_uppercase() && key.iter().any(u8::is_ascii_lowercase)
}

/// What follows the key is code around a value, not a value: a command substitution (`$(…)`),
/// an interpolation (`#{password}`), an HTML-escaped slot (`&lt;YOUR_PASSWORD&gt;`), a resource
/// name (`arn:aws:iam::…`), or a concatenation or the next field after a string that held the key
/// (`"…_password = " + new Buffer(…)`, `'password = '.$p[…]`, `"Password:",rememberMe…`).
fn code_continuation(v: &[u8]) -> bool {
    let operand = |b: &u8| b.is_ascii_alphabetic() || matches!(b, b'$' | b'_' | b' ' | b'"' | b'\'' | b'(');
    // A call with no arguments quoted as code (`"obj.aFunctionCall()"`, `'getSecret()'`).
    let call = v.len() > 4
        && v.ends_with(b"()")
        && v[0].is_ascii_alphabetic()
        && v[..v.len() - 2]
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'$'));
    call || v.starts_with(b"$(")
        || v.starts_with(b"#{")
        || v.starts_with(b"&lt;")
        || v.starts_with(b"arn:")
        || matches!(v.first(), Some(b'+' | b'.' | b',')) && v.get(1).is_some_and(operand) && !base64_key(v)
}

/// One base64 run of 16 or more with a digit (`+grqXYZ40BXQaeH9…==`): a key that starts with
/// `+`, not `+` joining code to a string.
fn base64_key(v: &[u8]) -> bool {
    v.len() >= 16 && v.iter().all(|&b| b64(b)) && has_digit(v)
}

/// A value in a second pair of quotes that is itself a slot (`"'$PRECOMPILE_PASSWORD'"`,
/// `'"${DB_PASS}"'`).
fn quoted_slot(v: &[u8]) -> bool {
    let inner = match v {
        [q @ (b'"' | b'\''), inner @ .., last] if last == q => inner,
        _ => return false,
    };
    !inner.is_empty() && (is_placeholder(inner) || is_reference(inner) || code_continuation(inner))
}

/// A name path of code (`Digest::SHA1.hexdigest`, `std::env::var`): identifiers joined by `::`,
/// a method after a `.`; Ruby calls one without parentheses (`= Digest::SHA1.hexdigest [a, b]`).
fn code_name_path(v: &[u8]) -> bool {
    let ident = |s: &[u8]| {
        s.first().is_some_and(|b| b.is_ascii_alphabetic() || *b == b'_')
            && s.iter().all(|&b| b.is_ascii_alphanumeric() || b == b'_')
    };
    v.windows(2).any(|w| w == b"::")
        && v.split(|&b| b == b'.').all(|part| {
            part.split(|&b| b == b':')
                .enumerate()
                .all(|(k, s)| ident(s) || k % 2 == 1 && s.is_empty())
        })
}

/// An LDAP distinguished name (`ou=users,dc=example,dc=us`, `uid=reader,ou=services,…`): where a
/// directory's entries are, never a secret.
fn ldap_dn(v: &[u8]) -> bool {
    const ATTRIBUTES: Words = words_of!(b"dc ou cn uid o c l st");
    let mut parts = 0;
    let mut named = false;
    for part in v.split(|&b| b == b',') {
        let Some(eq) = part.iter().position(|&b| b == b'=') else {
            return false;
        };
        let attr = part[..eq].trim_ascii();
        if attr.is_empty()
            || attr.len() > 24
            || !attr.iter().all(u8::is_ascii_alphabetic)
            || eq + 1 == part.len()
        {
            return false;
        }
        named |= ATTRIBUTES.iter().any(|a| attr.eq_ignore_ascii_case(a));
        parts += 1;
    }
    parts >= 2 && named
}

/// A quoted name of where a secret is kept, not the secret: an identifier in lower camelCase that
/// ends with a secret word after the word of whose secret it is (`'userPassword'`, `'ntPassword'`,
/// `'radiusClientSecret'`: a directory attribute, a field's name); other words before it
/// (`plainSecret`) or a capital first (`SuperSecretPassword`) are typed as a password is.
fn secret_field_name(v: &[u8]) -> bool {
    const ENDS: &[&[u8]] = &[b"Password", b"Passwd", b"Secret", b"Token", b"Key", b"Pwd"];
    const OWNERS: &[&[u8]] = &[
        b"user",
        b"nt",
        b"lm",
        b"client",
        b"app",
        b"admin",
        b"root",
        b"db",
        b"service",
        b"account",
        b"bind",
        b"api",
        b"access",
        b"consumer",
    ];
    let humps = v.iter().filter(|b| b.is_ascii_uppercase()).count();
    let Some(head) = ENDS
        .iter()
        .find(|e| v.len() > e.len() + 1 && v.ends_with(e))
        .map(|e| &v[..v.len() - e.len()])
    else {
        return false;
    };
    // The word right before the secret word: after the head's last capital, or all of it.
    let owner = &head[head.iter().rposition(u8::is_ascii_uppercase).unwrap_or(0)..];
    v.first().is_some_and(u8::is_ascii_lowercase)
        && v.iter().all(u8::is_ascii_alphabetic)
        && (1..=3).contains(&humps)
        && OWNERS.iter().any(|o| owner.eq_ignore_ascii_case(o))
}

/// A `$` before letters of both cases and digits, in single quotes (`'$ecRetT0F1nD'`): shells,
/// Python, PHP and PowerShell expand nothing there, and no variable is named so.
fn dollar_literal(v: &[u8]) -> bool {
    v.len() >= 8 && v[0] == b'$' && mixed_case(&v[1..]) && has_digit(&v[1..]) && !v[1..].contains(&b'_')
}

/// Stand-in words around the words of the value's own key (`HEROKU_API_KEY='sampleHerokuKey'`,
/// `githubToken: yourGithubToken`): a placeholder that names its slot, once the key's words
/// (three letters or more) are taken out of it.
fn stand_in_for_key(v: &[u8], key: &[u8]) -> bool {
    if v.len() > 64
        || !v
            .iter()
            .all(|&b| b.is_ascii_alphabetic() || matches!(b, b'_' | b'-' | b'.'))
    {
        return false;
    }
    let mut rest = v.to_ascii_lowercase();
    let mut start = 0;
    for k in 0..=key.len() {
        let boundary = k == key.len()
            || !key[k].is_ascii_alphabetic()
            || k > start && key[k].is_ascii_uppercase() && key[k - 1].is_ascii_lowercase();
        if !boundary {
            continue;
        }
        let word = key[start..k].to_ascii_lowercase();
        start = if k < key.len() && !key[k].is_ascii_alphabetic() {
            k + 1
        } else {
            k
        };
        if word.len() < 3 {
            continue;
        }
        while let Some(at) = rest.windows(word.len()).position(|w| w == word.as_slice()) {
            rest.drain(at..at + word.len());
        }
    }
    rest.len() < v.len() && placeholder_words(&rest)
}

/// `password=PASSWORD`, `TOKEN=$TOKEN` without the `$`: the key's own name is a template.
fn same_as_key(v: &[u8], key: &[u8]) -> bool {
    // `loginConfig.servicePrincipalSecret = "servicePrincipalSecret"`: the member's own name.
    let member = key.rsplit(|&b| b == b'.').next().unwrap_or(key);
    v.eq_ignore_ascii_case(key)
        || member.len() < key.len() && v.len() >= 6 && same_letters(v, member)
        || all_caps_name(v) && v.len() >= 4 && contains_ci(key, &v[..v.len().min(4)])
        || v.len() >= 6 && same_letters(v, key)
}

/// The key's name in another casing (`"client_secret": "clientSecret"`, `apiKey = API_KEY`),
/// perhaps owned (`'aws-secret-access-key': 'MYAWSSECRETACCESSKEY'`, `yourApiKey`): the same
/// letters and digits, separators and case aside.
fn same_letters(v: &[u8], key: &[u8]) -> bool {
    fn letters(t: &[u8]) -> impl Iterator<Item = u8> + '_ {
        t.iter()
            .filter(|b| b.is_ascii_alphanumeric())
            .map(u8::to_ascii_lowercase)
    }
    // Whether `v`'s letters less `skip` of them are the key's.
    let same = |skip: usize| letters(v).skip(skip).eq(letters(key));
    // An owner before a one-word key is a weak password (`Password=myPassword`); before a name of
    // several words, a stand-in.
    let words = key.windows(2).any(|w| {
        matches!(w[0], b'_' | b'-' | b'.') || w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase()
    });
    same(0)
        || words
            && [
                &b"my"[..],
                b"your",
                b"the",
                b"test",
                b"some",
                b"fake",
                b"dummy",
                b"sample",
                b"example",
            ]
            .iter()
            .any(|w| letters(v).take(w.len()).eq(w.iter().copied()) && same(w.len()))
}

/// `USER`, `DB_PASSWORD`, `PASSWORD`: an all-caps name, used as a template slot. A name has a
/// `_` or is made of stand-in words (`DBPASSWORD`); `SUPERSECRETPASS` is a password in capitals.
fn constant_like(v: &[u8]) -> bool {
    const WORDS: Words = words_of!(
        b"password passwd pass pwd pw secret token key api user username name host \
        hostname port db database value your my the auth access client app admin root login id"
    );
    all_caps_name(v) && (v.contains(&b'_') || stand_in_words(v, &WORDS, &NO_WORDS).is_some())
}

/// Capitals and `_` only.
fn all_caps_name(v: &[u8]) -> bool {
    v.len() >= 2 && v.iter().all(|&b| b.is_ascii_uppercase() || b == b'_')
}

fn all_caps(key: &[u8]) -> bool {
    key.iter().any(u8::is_ascii_uppercase) && !key.iter().any(u8::is_ascii_lowercase)
}

fn is_auth_scheme(v: &[u8]) -> bool {
    matches!(
        lower(v, &mut [0; 16]),
        b"bearer"
            | b"basic"
            | b"token"
            | b"digest"
            | b"apikey"
            | b"key"
            | b"bot"
            | b"ssws"
            | b"api-token"
            | b"api-key"
            | b"apitoken"
            | b"dsn"
            | b"hmac"
            | b"otoken"
            | b"sharedaccesssignature"
    )
}

/// Skips `is`, `was`, `to`, `:` and similar words between a secret word and its value in prose,
/// or a short phrase ending with `:` (`password for staging: …`).
fn skip_fillers(bytes: &[u8], start: usize) -> usize {
    // `is` in English, German, French, Spanish, Portuguese, Dutch and Italian (`é`, `è`).
    let is = |w: &[u8]| {
        matches!(
            w,
            b"is" | b"was" | b"=" | b"ist" | b"lautet" | b"est" | b"es" | b"\xc3\xa9" | b"\xc3\xa8"
        )
    };
    // `for prod`, `on staging`, `in CI`, `für prod`, `do banco`, `voor prod`: a phrase naming
    // where the secret is used.
    // Its first word is letters, of any script (`für`): `on-prem` starts with `on`.
    let first = &bytes[start..run_end_max(bytes, start, 8, |b| b.is_ascii_alphabetic() || !b.is_ascii())];
    let scoped = matches!(
        lower(first, &mut [0; 16]),
        b"for"
            | b"on"
            | b"in"
            | b"at"
            | b"of"
            | b"f\xc3\xbcr"
            | b"de"
            | b"do"
            | b"da"
            | b"del"
            | b"du"
            | b"voor"
    );
    let mut pos = start;
    // `password for the user "bob" is …`: up to five words name whose it is.
    for _ in 0..6 {
        let end = run_end_max(bytes, pos, 256, |b| !b.is_ascii_whitespace());
        if end == pos || end >= bytes.len() || bytes[end] == b'\n' {
            break;
        }
        let word = &bytes[pos..end];
        // `password for staging: …`, `password for prod is …`
        if bytes[end - 1] == b':' || pos > start && scoped && is(word) {
            return skip_blank(bytes, end);
        }
        pos = skip_blank(bytes, end);
    }
    let mut pos = start;
    for _ in 0..2 {
        let end = run_end_max(bytes, pos, 256, |b| !b.is_ascii_whitespace());
        let mut buf = [0; 16];
        let word = lower(&bytes[pos..end], &mut buf);
        let filler = is(word)
            || matches!(
                word,
                b"are"
                    | b"be"
                    | b"to"
                    | b"as"
                    | b"now"
                    | b"currently"
                    | b"set"
                    | b"equals"
                    | b":"
                    | b"is:"
                    | b"of"
                    | b"here:"
                    | b"value"
            );
        if end < bytes.len() && filler {
            pos = skip_blank(bytes, end);
        } else {
            break;
        }
    }
    pos
}

/// Commands whose short flag takes a password (`-p`: logins, `sshpass` and mongo, glued for
/// `mysql`; `-P`: `sqlcmd`, `ssh-keygen`; `-N`: `ssh-keygen`; `-k`: `openssl`; `-w`: ldap tools;
/// `-a`: `redis-cli`, httpie; `-u`: `curl`, `lftp`; `-U`: `smbclient`), and the commands whose
/// `-storepass`/`-keypass` does (`keytool`, `jarsigner`).
const LOGIN: u16 = 1;
const MYSQL: u16 = 2;
const REDIS: u16 = 4;
const CURL: u16 = 8;
const MONGO: u16 = 16;
const SQLCMD: u16 = 32;
const LDAP: u16 = 64;
const SMB: u16 = 128;
const LFTP: u16 = 256;
const HTTPIE: u16 = 512;
const SSH_KEYGEN: u16 = 1024;
const OPENSSL: u16 = 2048;
const KEYTOOL: u16 = 4096;

/// Whether the argument before the flag at `i` is a user's (`-u NAME -p …`, `--user NAME -p …`,
/// `-l NAME -p …`): then `-p` is that user's password on any command (`psexec`, `mysql`, …).
fn after_user_flag(bytes: &[u8], i: usize) -> bool {
    let line = line_before(bytes, i);
    let mut args = line
        .rsplit(|&b| b == b' ' || b == b'\t')
        .filter(|a| !a.is_empty());
    let (Some(user), Some(flag)) = (args.next(), args.next()) else {
        return false;
    };
    !user.starts_with(b"-")
        && !numeric_like(user)
        && [
            &b"-u"[..],
            b"-U",
            b"-l",
            b"--user",
            b"--username",
            b"-user",
            b"-User",
            b"-Username",
        ]
        .contains(&flag)
}

/// A URL whose userinfo holds no password (`mongodb://mongodb:mongodb@…`,
/// `https://username:password@…`): judged as the URL rule judges it, not as a value.
fn url_stand_in_userinfo(v: &[u8]) -> bool {
    let Some(scheme) = find_ci(v, 0, b"://") else {
        return false;
    };
    let authority = &v[scheme + 3..];
    let authority = &authority[..authority
        .iter()
        .position(|&b| b == b'/')
        .unwrap_or(authority.len())];
    let Some(at) = authority.iter().rposition(|&b| b == b'@') else {
        return false;
    };
    let userinfo = &authority[..at];
    userinfo.contains(&b':') && user_password(userinfo, b':').is_none()
}

/// Where the password of `user<sep>password` starts in `v`, when it is one: not a placeholder, a
/// template name, nor the user again (`guest:guest`, `admin:admin` are documented defaults).
fn user_password(v: &[u8], sep: u8) -> Option<usize> {
    let at = v.iter().position(|&b| b == sep)?;
    let pw = &v[at + 1..];
    // `https://<token>:x-oauth-basic@github.com`: GitHub's fixed word where the password goes
    // when the token is the user (judged as the user's own value).
    let stand_in = is_placeholder(pw) && !weak_literal(pw) || pw.eq_ignore_ascii_case(b"x-oauth-basic");
    (pw.len() >= 3 && !stand_in && !constant_like(pw) && !pw.eq_ignore_ascii_case(&v[..at])).then_some(at + 1)
}

/// A weak password typed as one (`secret`, `myPassword`, `abc123`, `letmein`): where a password
/// stands (a URL's userinfo, a password key's value) it is a literal, however weak, unlike the
/// slot's own name (`password`, `pass`), an empty marker (`none`, `null`), a tutorial's stand-in
/// (`test`, `foobar`, `123456`) or a template.
fn weak_literal(v: &[u8]) -> bool {
    const LITERALS: Words = words_of!(
        b"secret mysecret mypassword mypass mypwd abc123 letmein qwerty admin123 password1 \
        password123 passw0rd p@ssw0rd"
    );
    LITERALS.iter().any(|w| v.eq_ignore_ascii_case(w))
}

/// A word typed as the password a comparison checks (`password == 'logmein'`,
/// `creds.Secret != "open-sesame"`): lowercase letters, perhaps joined by `-`/`_`, against a key
/// naming a password or a bare secret (a `client_secret` is generated, a word there names a
/// client); not a word describing one (`"wrong"`, `"expired"`), which [`quoted_word`] rules out,
/// nor a stand-in, which the value's own judgment does.
fn compared_word(v: &[u8], key: &[u8]) -> bool {
    let bare = key.rsplit(|&b| b == b'.').next().unwrap_or(key);
    let secret = bare.eq_ignore_ascii_case(b"secret");
    (password_key(key) || secret)
        && (6..=32).contains(&v.len())
        && v[0].is_ascii_lowercase()
        && v.iter()
            .all(|&b| b.is_ascii_lowercase() || matches!(b, b'-' | b'_'))
        && quoted_word(v)
}

/// The shell argument at or after `pos` and where the next one starts; `None` where the command
/// ends (the line's end, `|`, `;`, `&`, a redirection, a comment).
fn next_arg(bytes: &[u8], pos: usize) -> Option<(Value, usize)> {
    let start = skip_blank(bytes, pos);
    if bytes
        .get(start)
        .is_none_or(|&b| matches!(b, b'\n' | b'\r' | b'|' | b';' | b'&' | b'<' | b'>' | b'#'))
    {
        return None;
    }
    let value = Value::parse(bytes, start, Stop::Blank)?;
    let next = if value.quote != 0 {
        value.raw_end + 1
    } else {
        value.raw_end
    };
    Some((value, next))
}

/// The start of the line holding `i`.
fn line_start_of(bytes: &[u8], i: usize) -> usize {
    bytes[..i].iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1)
}

/// The text of the current line before `i` (at most 256 bytes).
fn line_before(bytes: &[u8], i: usize) -> &[u8] {
    let floor = i.saturating_sub(256);
    let start = bytes[floor..i]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(floor, |p| floor + p + 1);
    &bytes[start..i]
}

/// A line where `KEY=value` is a shell or env-file assignment: the key starts it, or follows
/// `export`, `set`, `ENV`, `-e`, `--env`, a YAML list dash, `;` or `&&`.
fn shell_line(line: &[u8]) -> bool {
    let t = trim_ascii(line);
    if t.is_empty() {
        return true;
    }
    let last = t.rsplit(|&b| b == b' ' || b == b'\t').next().unwrap_or(t);
    const STARTERS: &[&[u8]] = &[
        b"export",
        b"set",
        b"ENV",
        b"ARG",
        b"-e",
        b"--env",
        b"--build-arg",
        b"env",
        b"declare",
        b"readonly",
        b"-",
        b";",
        b"&&",
        b"--set",
        b"SET",
        b"local",
    ];
    STARTERS.contains(&last) || t.ends_with(b";")
}

/// `set -x KEY value` (fish), `setenv KEY value` (csh), `ENV KEY value` (Dockerfile).
fn env_command_line(line: &[u8]) -> bool {
    let t = trim_ascii(line);
    const COMMANDS: &[&[u8]] = &[b"set -x", b"set -gx", b"set -Ux", b"setenv", b"ENV", b"export"];
    COMMANDS.contains(&t)
}

/// A `.netrc` line: `machine <host> login <user> password <secret>`.
fn netrc_line(line: &[u8]) -> bool {
    let t = trim_ascii(line);
    (t.starts_with(b"machine ") || t.starts_with(b"default")) && contains_ci(t, b"login")
}

/// The spans of the `:`-separated fields of the line at `s` (at most nine) and how many there are,
/// when it has no blank and at most 512 bytes (a `.pgpass` or `/etc/shadow` line): most lines of a
/// prompt fail on their first word.
fn colon_fields(bytes: &[u8], s: usize) -> Option<([(usize, usize); 9], usize)> {
    let mut fields = [(s, s); 9];
    let mut n = 0;
    let mut k = s;
    while k < bytes.len() && bytes[k] != b'\n' {
        match bytes[k] {
            b':' if n == 8 => return None,
            b':' => {
                fields[n].1 = k;
                n += 1;
                fields[n] = (k + 1, k + 1);
            }
            b if b.is_ascii_whitespace() => return None,
            _ => {}
        }
        k += 1;
        if k - s > 512 {
            return None;
        }
    }
    fields[n].1 = k;
    Some((fields, n + 1))
}

/// A `.pgpass` line `host:port:database:user:password`: returns the password's span.
fn pgpass(bytes: &[u8], fields: &[(usize, usize); 9]) -> Option<(usize, usize)> {
    let [host, port, db, user, pw, ..] = fields.map(|(a, b)| &bytes[a..b]);
    let (start, end) = (fields[0].0, fields[4].1);
    let host_ok = host == b"*"
        || !host.is_empty()
            && host
                .iter()
                .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
            && host.iter().any(|&b| b.is_ascii_alphabetic() || b == b'.');
    let port_ok = port == b"*" || !port.is_empty() && port.len() <= 5 && port.iter().all(u8::is_ascii_digit);
    if end - start < 9
        || !host_ok
        || !port_ok
        || db.is_empty()
        || user.is_empty()
        || pw.len() < 3
        || is_placeholder(pw)
    {
        return None;
    }
    Some((end - pw.len(), end))
}

/// An `/etc/shadow` line `user:hash:lastchange:min:max:warn:inactive:expire:`: returns the hash's
/// span (a locked account's `!` before it is not part of it; `*` or `!` alone is no password).
fn shadow(bytes: &[u8], fields: &[(usize, usize); 9]) -> Option<(usize, usize)> {
    let [user, _, changed, ..] = fields.map(|(a, b)| &bytes[a..b]);
    let (mut start, end) = fields[1];
    start += bytes[start..end].iter().take_while(|&&b| b == b'!').count();
    let hash = &bytes[start..end];
    let numbers = fields[2..]
        .iter()
        .all(|&(a, b)| bytes[a..b].iter().all(u8::is_ascii_digit));
    (!user.is_empty()
        && user
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
        && !changed.is_empty()
        && numbers
        && hash.len() >= 13
        && hash.iter().all(|&b| crypt_byte(b) || b == b'$'))
    .then_some((start, end))
}

/// A byte of a crypt hash or its parameters (`./0-9A-Za-z`, argon2's base64 and `m=…,t=…`).
fn crypt_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'/' | b'+' | b'=' | b',')
}

/// A header row of a CSV, TSV or markdown table (`user,password`, `| user | password |`) or a SQL
/// column list: every cell a short name, at least one naming a secret with a strong word (the
/// header of a password manager's export: `name,url,username,password`).
fn table_header(bytes: &[u8], start: usize, end: usize, delim: u8) -> Option<Table> {
    // Names, separators and quotes only: most lines fail on their first symbol.
    let line = &bytes[start..end];
    let header_byte = |b: u8| {
        is_key_byte(b) || b == delim || matches!(b, b' ' | b'\t' | b'\r' | b'"' | b'\'' | b'`' | b'*')
    };
    if line.len() > 512 || !line.contains(&delim) || !line.iter().all(|&b| header_byte(b)) {
        return None;
    }
    let mut names = true;
    let mut named = 0;
    let mut secret = 0;
    let mut weak = 0;
    let mut spans = [(0, 0); 64];
    let cells = for_each_cell(bytes, start, end, delim, |k, s, e| {
        let (s, e) = unquoted(bytes, s, e);
        if k < 64 {
            spans[k] = (s, e);
        }
        let name = &bytes[s..e];
        named += usize::from(!name.is_empty());
        // A markdown header may say `API key`; a CSV line with a space in a cell is code or prose
        // (`return user, token`).
        let spaces = name.iter().filter(|&&b| b == b' ').count();
        let name_like = name.len() <= 64
            && name.iter().all(|&b| is_key_byte(b) || b == b' ')
            && spaces <= usize::from(delim == b'|');
        names &= name_like;
        // A weak word's column (`key`, `auth`) is judged as a weak key's value: it must look
        // generated (`| service | key |` over `| stripe | sk_… |`), as a `token` column's must.
        if let Some(w) = secret_word(name).filter(|_| name_like && k < 64) {
            secret |= 1 << k;
            if w.strength == Strength::Weak || contains_ci(name, b"token") {
                weak |= 1 << k;
            }
        }
    });
    // Every column is named; markdown's outer pipes leave an empty cell at each end.
    let outer = if delim == b'|' { 2 } else { 0 };
    (names && named >= 2 && named + outer >= cells && secret != 0).then_some(Table {
        delim,
        cells,
        secret,
        weak,
        names: spans,
    })
}

/// Calls `f` with the index and span (blanks trimmed) of each cell of the row `[start, end)`
/// split at `delim`, and returns how many there are. A cell that starts with a quote runs to its
/// closing quote, so a quoted `,` splits nothing.
fn for_each_cell(
    bytes: &[u8],
    start: usize,
    end: usize,
    delim: u8,
    mut f: impl FnMut(usize, usize, usize),
) -> usize {
    let mut n = 0;
    let mut pos = start;
    loop {
        let s = skip_blank(bytes, pos).min(end);
        let mut k = s;
        if k < end && matches!(bytes[k], b'"' | b'\'') {
            let quote = bytes[k];
            k = (k + 1..end).find(|&j| bytes[j] == quote).map_or(end, |j| j + 1);
        }
        while k < end && bytes[k] != delim {
            k += 1;
        }
        let e = s + trim_end_of(&bytes[s..k], |b| b.is_ascii_whitespace()).len();
        f(n, s, e);
        n += 1;
        if k >= end {
            return n;
        }
        pos = k + 1;
    }
}

/// Where the fallback after an expression's `||`, `??`, `?:` or Python's `or` at `p` starts.
fn fallback_after(bytes: &[u8], p: usize) -> Option<usize> {
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

/// The span of a cell `[s, e)` without the quotes, backticks or markdown emphasis around it.
fn unquoted(bytes: &[u8], s: usize, e: usize) -> (usize, usize) {
    let wrap = |b: &u8| matches!(b, b'"' | b'\'' | b'`' | b'*');
    let start = s + bytes[s..e].iter().take_while(|b| wrap(b)).count();
    (
        start,
        e - bytes[start..e].iter().rev().take_while(|b| wrap(b)).count(),
    )
}

/// The first of `stops` at the top level of a parenthesised list from `pos` (nested brackets and
/// quoted strings skipped), within `limit` bytes; `None` if the list closes first.
fn top_level(bytes: &[u8], pos: usize, stops: &[u8], limit: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut quote = 0;
    for (k, &b) in bytes.iter().enumerate().take(pos + limit).skip(pos) {
        if quote != 0 {
            if b == quote {
                quote = 0;
            }
        } else if depth == 0 && stops.contains(&b) {
            return Some(k);
        } else if matches!(b, b'\'' | b'"') {
            quote = b;
        } else if matches!(b, b'(' | b'[' | b'{') {
            depth += 1;
        } else if matches!(b, b')' | b']' | b'}') {
            depth = depth.checked_sub(1)?;
        }
    }
    None
}

// ---------------------------------------------------------------------------------------------
// Private keys
// ---------------------------------------------------------------------------------------------

fn is_base64_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')
}

/// The first line of a DER private key pasted without armor: PKCS#1/#8 (`MII??` + `IBA`, the
/// version integer), EC (`MHcCAQEE`), Ed25519 PKCS#8 (`MC4CAQAw`), OpenSSH (`b3BlbnNzaC1rZXktdjE`),
/// followed by at least one more base64 line. Certificates (`MII??CCA`) do not match.
fn pem_body_at(bytes: &[u8], s: usize) -> bool {
    let end = line_end(bytes, s);
    let line = &bytes[s..end];
    let line = trim_ascii(line);
    if line.len() < 40 || !line.iter().all(|&b| is_base64_byte(b)) {
        return false;
    }
    let der = line.starts_with(b"MII") && line.len() > 9 && &line[6..9] == b"IBA";
    let shape = der
        || line.starts_with(b"MHcCAQEE")
        || line.starts_with(b"MC4CAQAw")
        || line.starts_with(b"b3BlbnNzaC1rZXktdjE");
    if !shape {
        return false;
    }
    let next = skip_blank(bytes, end + 1);
    let next_end = line_end(bytes, next);
    next_end > next
        && next_end - next >= 16
        && bytes[next..next_end]
            .iter()
            .all(|&b| is_base64_byte(b) || b == b'\r')
}

/// A PEM body with no key in it: few base64 bytes and none of a key's digits or `+/=`
/// (`anything`, `<your key here>`, `...`, `xxx`, with a diff's `+` or a quote's `>` before each
/// line), base64 that decodes to plain text (`YWJjZGVm…` is `abcdef…`): DER is binary, or a
/// body typed as counts (see [`mostly_counted`]).
fn pem_illustration(body: &[u8]) -> bool {
    let (mut base64, mut encoded) = (0, false);
    let mut text = [0u8; 96];
    let mut n = 0;
    for line in body.split(|&b| b == b'\n') {
        let line = trim_ascii(line);
        let line = match line.first() {
            Some(b'+' | b'>') => trim_ascii(&line[1..]),
            _ => line,
        };
        for &b in line {
            if is_base64_byte(b) {
                base64 += 1;
                if n < text.len() {
                    text[n] = b;
                    n += 1;
                }
            }
            encoded |= b.is_ascii_digit() || matches!(b, b'+' | b'/' | b'=');
        }
    }
    // A pattern in the body's place (`[\S\s]{15,}?`, a rule that finds keys) holds characters no
    // PEM body or header does.
    let pattern = body.iter().any(|b| b"[]{}\\?()*|^$".contains(b));
    // Letters alone, no digit nor `+/=` in sixty-odd base64 bytes, is a sentence in camel case
    // (`somethingSuperRandomAndSecretHere…`): a key's body holds one in a few bytes.
    base64 < 32 && (!encoded || pattern)
        || !encoded && base64 < 128
        || base64 <= text.len() && base64_text(&text[..n])
        || mostly_counted(body)
        // Elided (`...`, `…`) with no whole line of a key left: a format's sketch.
        || (contains_ci(body, b"...") || contains_ci(body, "\u{2026}".as_bytes())) && !base64_run(body, 40)
}

/// Whether `v` holds `min` or more base64 bytes in a row, as a key's body lines do.
fn base64_run(v: &[u8], min: usize) -> bool {
    let mut run = 0;
    v.iter().any(|&b| {
        run = if is_base64_byte(b) { run + 1 } else { 0 };
        run >= min
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

/// Whether `v` is standard base64 (padding allowed) of printable ASCII text with a space or
/// of letters run together (`ZHVtbXkgdGV4dA==` is `dummy text`): words encoded, not a key.
fn base64_text(v: &[u8]) -> bool {
    let v = trim_end_of(v, |b| b == b'=');
    if v.len() < 16 {
        return false;
    }
    let (mut acc, mut bits) = (0u32, 0u32);
    let (mut letters, mut total) = (0usize, 0usize);
    for &b in v {
        let d = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return false,
        };
        acc = (acc << 6) | u32::from(d);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            let c = (acc >> bits) as u8;
            if !(c == b' ' || c.is_ascii_graphic()) {
                return false;
            }
            letters += usize::from(c.is_ascii_lowercase() || c == b' ');
            total += 1;
        }
    }
    // Mostly lowercase words: a password's base64 (`MWYyZDFlMmU2N2Rm`, `1f2d1e2e67df`) is not.
    total >= 12 && letters * 10 >= total * 9
}

/// The longest PEM block looked at (an 8192-bit RSA key is under 7 KB).
const MAX_PEM: usize = 16 * 1024;

/// The end of the run of base64 (or PEM header) lines from `pos`.
fn base64_block_end(bytes: &[u8], mut pos: usize) -> usize {
    let mut end = pos;
    let stop = bytes.len().min(pos + MAX_PEM);
    while pos < stop {
        let s = skip_blank(bytes, if bytes[pos] == b'\n' { pos + 1 } else { pos });
        let e = line_end(bytes, s);
        let line = trim_ascii(&bytes[s..e]);
        let header = line.starts_with(b"Proc-Type:")
            || line.starts_with(b"DEK-Info:")
            || line.starts_with(b"Comment:");
        if line.is_empty() || !(header || line.iter().all(|&b| is_base64_byte(b))) {
            break;
        }
        end = e;
        pos = e;
    }
    end
}

/// The start of the run of base64 lines that ends just before the line holding `i`.
fn base64_block_start(bytes: &[u8], i: usize) -> usize {
    let mut start = i;
    let floor = i.saturating_sub(MAX_PEM);
    loop {
        if start <= floor {
            return start;
        }
        let Some(nl) = start.checked_sub(1).filter(|&p| bytes[p] == b'\n') else {
            return start;
        };
        let prev_start = bytes[..nl].iter().rposition(|&b| b == b'\n').map_or(0, |p| p + 1);
        let line = trim_ascii(&bytes[prev_start..nl]);
        if line.is_empty() || !line.iter().all(|&b| is_base64_byte(b)) {
            return start;
        }
        start = prev_start;
    }
}

/// The end of the line containing `pos` (before its newline).
/// [`line_end`], looking at most `limit` bytes ahead: `None` for a longer line.
fn line_end_max(bytes: &[u8], pos: usize, limit: usize) -> Option<usize> {
    let stop = bytes.len().min(pos.saturating_add(limit));
    match bytes[pos.min(stop)..stop].iter().position(|&b| b == b'\n') {
        Some(p) => Some(pos + p),
        None => (stop == bytes.len()).then_some(stop),
    }
}

fn line_end(bytes: &[u8], pos: usize) -> usize {
    bytes[pos.min(bytes.len())..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(bytes.len(), |p| pos + p)
}

/// Whether base64 `token` decodes to `user:password` typed as filler (`aaa:bbb`, `xxxx:1234`): a
/// password of one or two characters repeated, or a count.
fn basic_filler(token: &[u8]) -> bool {
    let mut out = [0u8; 96];
    let trimmed = trim_end_of(token, |b| b == b'=');
    let Some(text) = base64_decode(trimmed, &mut out) else {
        return false;
    };
    let Some(colon) = text.iter().position(|&b| b == b':') else {
        return false;
    };
    let pw = &text[colon + 1..];
    let mut distinct = [false; 256];
    let n = pw
        .iter()
        .filter(|&&b| !std::mem::replace(&mut distinct[usize::from(b)], true))
        .count();
    // Typed text (`aaa:bbb`), not bytes of a random value that hold a `:`.
    let typed = colon > 0 && text.iter().all(|b| b.is_ascii_graphic());
    typed && pw.len() >= 3 && (n <= 2 || counted_through(pw))
}

/// Whether base64 `token` decodes to text holding a `:` (HTTP Basic `user:password`).
fn base64_has_colon(token: &[u8]) -> bool {
    let mut acc: u32 = 0;
    let mut bits = 0;
    for &b in token {
        let v = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => break,
            _ => return false,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            if (acc >> bits) & 0xff == u32::from(b':') {
                return true;
            }
        }
    }
    false
}

// ---------------------------------------------------------------------------------------------
// Vendor token shapes
// ---------------------------------------------------------------------------------------------

fn word_class(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}
fn b64url(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}
fn b64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'='
}
fn hex(b: u8) -> bool {
    b.is_ascii_hexdigit()
}

/// The longest JWT segment looked at: ID and access tokens carry kilobytes of claims, and an
/// RS512 signature alone is 683 characters.
const MAX_SEGMENT: usize = 16 * 1024;

// ---------------------------------------------------------------------------------------------
// Byte helpers
// ---------------------------------------------------------------------------------------------

/// `v` in ASCII lowercase, in `buf` (empty when longer): matching it against lowercase words
/// compiles smaller than comparing each word ignoring case.
fn lower<'b>(v: &[u8], buf: &'b mut [u8; 16]) -> &'b [u8] {
    let Some(out) = buf.get_mut(..v.len()) else {
        return &[];
    };
    out.copy_from_slice(v);
    out.make_ascii_lowercase();
    out
}

/// Whether `bytes` ends with `lit`, ASCII case ignored.
fn ends_with_ci(bytes: &[u8], lit: &[u8]) -> bool {
    bytes.len() >= lit.len() && bytes[bytes.len() - lit.len()..].eq_ignore_ascii_case(lit)
}

/// How many bytes at the end of `bytes` are of `class`.
fn run_back(bytes: &[u8], class: impl Fn(u8) -> bool) -> usize {
    bytes.iter().rev().take_while(|&&b| class(b)).count()
}

/// The end of `lit` (given in lowercase) if it appears at `pos`, ignoring ASCII case.
fn eat_ci(bytes: &[u8], pos: usize, lit: &[u8]) -> Option<usize> {
    let end = pos.checked_add(lit.len())?;
    bytes.get(pos..end)?.eq_ignore_ascii_case(lit).then_some(end)
}

fn contains_ci(hay: &[u8], needle: &[u8]) -> bool {
    let Some(&first) = needle.first() else { return true };
    let first = first.to_ascii_lowercase();
    needle.len() <= hay.len()
        && (0..=hay.len() - needle.len()).any(|k| {
            hay[k].to_ascii_lowercase() == first && hay[k..k + needle.len()].eq_ignore_ascii_case(needle)
        })
}

/// The end of the longest run of `class` bytes from `pos`.
fn run_end(bytes: &[u8], pos: usize, class: impl Fn(u8) -> bool) -> usize {
    let mut end = pos;
    while bytes.get(end).is_some_and(|&b| class(b)) {
        end += 1;
    }
    end
}

/// Like [`run_end`], but stops `limit` bytes after `pos`: rules that start anywhere must not each
/// scan the rest of the text, or a repetitive prompt would cost quadratic time.
fn run_end_max(bytes: &[u8], pos: usize, limit: usize, class: impl Fn(u8) -> bool) -> usize {
    let stop = bytes.len().min(pos.saturating_add(limit));
    let mut end = pos;
    while end < stop && class(bytes[end]) {
        end += 1;
    }
    end
}

/// `pos`, or the start of the character it falls inside: where a cut by byte count may end.
fn char_floor(bytes: &[u8], mut pos: usize) -> usize {
    while pos > 0 && bytes.get(pos).is_some_and(|&b| b & 0xC0 == 0x80) {
        pos -= 1;
    }
    pos
}

/// `pos`, or the end of the character it falls inside.
fn char_ceil(bytes: &[u8], mut pos: usize) -> usize {
    while bytes.get(pos).is_some_and(|&b| b & 0xC0 == 0x80) {
        pos += 1;
    }
    pos
}

/// Skips spaces and tabs (not newlines) from `pos`.
fn skip_blank(bytes: &[u8], pos: usize) -> usize {
    run_end(bytes, pos, |b| b == b' ' || b == b'\t')
}

/// [`skip_blank`], and the no-break spaces French typography puts around a colon (U+00A0,
/// U+202F): they are never part of a value.
fn skip_space(bytes: &[u8], mut pos: usize) -> usize {
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

fn trim_ascii(v: &[u8]) -> &[u8] {
    v.trim_ascii()
}

/// The character starting at byte `pos`; `None` at the end (or, defensively, off a boundary).
fn char_at(text: &str, pos: usize) -> Option<char> {
    text.get(pos..)?.chars().next()
}

fn word_at(text: &str, pos: usize) -> bool {
    char_at(text, pos).is_some_and(is_word)
}

/// Whether a token goes on at `pos`: an ASCII word byte or `-`. Other characters end it, so a
/// token glued to Chinese or Japanese text (`令牌ghp_…请检查`) is still whole.
fn token_continues_at(text: &str, pos: usize) -> bool {
    text.as_bytes()
        .get(pos)
        .is_some_and(|&b| b == b'-' || b == b'_' || b.is_ascii_alphanumeric())
}

/// `\w` for adjacency: Unicode alphanumerics and `_`.
fn is_word(c: char) -> bool {
    c == '_' || c.is_alphanumeric()
}

/// JavaScript's `\s`, the set the original URL rule stopped at.
fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
    )
}

#[cfg(test)]
mod tests {
    use super::{
        NO_WORDS, PREFIX_QUALIFIERS, QUALIFIERS, SecretKind, Words, find_secret, findings, is_secret_like,
        redact, strip_private, word_count, word_index,
    };
    use std::time::{Duration, Instant};

    const JWT: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.\
        eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.\
        SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c";

    /// Each text holds a secret, whichever rule finds it.
    pub(crate) fn assert_found(texts: &[&str]) {
        for text in texts {
            assert!(find_secret(text).is_some(), "expected a match for {text:?}");
        }
    }

    pub(crate) fn assert_clean(texts: &[&str]) {
        for text in texts {
            assert_eq!(find_secret(text), None, "expected no match for {text:?}");
        }
    }

    /// A config's field named `pass` alone is its password, in any syntax; `pass` inside a word
    /// or as a test's outcome is not.
    #[test]
    fn a_field_named_pass_alone_holds_a_password() {
        assert_found(&[
            "{\"host\": \"db01\", \"pass\": \"tr0ut-lake\"}",
            "smtp:\n  user: ops\n  pass: 'Vel0cipede'",
            "<Pass>quillfeather9</Pass>",
        ]);
        assert_clean(&[
            "{\"pass\": true, \"fail\": false}",
            "pass: 42",
            "{\"bypass\": \"tr0ut-lake\"}",
            "\"pass\": \"${SMTP_PASS}\"",
        ]);
    }

    /// An element's start tag may carry attributes before its text (`<Pass encoding="base64">`);
    /// a self-closing tag or an attribute alone holds no text.
    #[test]
    fn an_elements_attributes_come_before_its_text() {
        assert_found(&[
            "<Password type=\"plain\" scope='site'>Gr4nite!Lodge</Password>",
            "\t<secret encoding=\"base64\">ZDhmMmE5YzQxYjdlNjA1Mw==</secret>",
        ]);
        assert_clean(&[
            "<Password type=\"plain\" />",
            "<Password required=\"true\">{{ vault_password }}</Password>",
            "<Token kind=\"refresh\">see the docs</Token>",
        ]);
    }

    /// A run of one character inside a generated value (base64 of DER, whose zero bytes encode
    /// as `AAAA…`) is the value's own, when what follows the run is random too; filler runs
    /// with nothing random after them, or with text after them, stay filler.
    #[test]
    fn a_run_inside_a_generated_encoding_is_no_filler() {
        assert_found(&[
            "\"encryptedPassword\": \"MEIEEPgAAAAAAAAAAAAAAAAAAAEwFAYIKoZIhvcNAwcECKq7Rm2vTz9wBBhVe3uLpQ8sNkXf4Ja6Yd1cGHt\"",
            "<EncryptedPassword>MDIEEPgAAAAAAAAAAAAAAAAAAAEwFAYIKoZIhvcNAwcECHqLwTvRbMpZsYcNgKfEuDjXa</EncryptedPassword>",
        ]);
        assert_clean(&[
            "\"encryptedPassword\": \"MEIEEPgAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"",
            "api_key = \"AKIA000000000000000000;Endpoint=https://Example.test:8443/Path9\"",
        ]);
    }

    /// A generated value whose alphabet holds the space (a salt of printable characters) is one
    /// value, quoted, in an assignment or as a call's second argument; a sentence, code or a
    /// format with spaces is not.
    #[test]
    fn a_generated_value_may_hold_spaces() {
        assert_found(&[
            "define('SECURE_AUTH_KEY', 'p|V2+q8]Lx Tz;c$N4@hK!7mR^e_w(3G`sB0>uJ6 dY9*Fo%Za1{X');",
            "app.secret_key = \"Qz7!vN2#kL9 pR4$wT8&mY3^bX6 cJ1*hF5(gD0)sA\"",
        ]);
        assert_clean(&[
            "define('AUTH_KEY', 'put your unique phrase here');",
            "secret_key = \"Use a long random string of at least 32 characters\"",
            "api_key = 'SELECT id, name FROM keys WHERE owner = 42 AND kind = 7'",
            "auth_key = '%Y-%m-%d %H:%M:%S %z (UTC) 1970-01-01T00:00:00Z'",
        ]);
    }

    /// Stand-in words around the words of the value's own key name the slot; with a digit or
    /// with a word the key does not hold, the value is a password.
    #[test]
    fn stand_in_words_around_the_keys_own_words_are_a_placeholder() {
        assert_clean(&[
            "export GITLAB_TOKEN='yourGitlabToken'",
            "stripe_secret_key: sample-stripe-secret",
            "HEROKU_API_KEY=\"exampleHerokuApiKey\"",
        ]);
        assert_found(&[
            "export GITLAB_TOKEN='yourGitlabToken42'",
            "DB_PASSWORD='sampleLighthouse'",
        ]);
    }

    /// A SQL system variable (`@@NAME`) read into a session variable is a reference.
    #[test]
    fn a_sql_system_variable_is_a_reference() {
        assert_clean(&[
            "SET @OLD_AUTH_KEY_CACHE=@@AUTH_KEY_CACHE, AUTH_KEY_CACHE=0;",
            "SET @saved_secret_key=@@session.secret_key;",
        ]);
        assert_found(&["SET @secret_key = 'Zq8#Lm2vRt9!Kx';"]);
    }

    /// A key whose last word says what the value is about the secret (an algorithm, a header's
    /// name, a time) holds no secret, whatever words stand between; its secret word alone does.
    #[test]
    fn a_keys_last_word_may_qualify_its_secret_word() {
        assert_clean(&[
            "REFRESH_TOKEN_SIGNING_ALGORITHM = 'RS512'",
            "apiKeyHeaderName: X-Vendor-Key9",
            "(!(pwdLastChangedTime=20240101000000Z))",
        ]);
        assert_found(&[
            "REFRESH_TOKEN_SIGNING = 'Qm7#tR2vLx9!pZ4w'",
            "apiKeyProd: Tz8qWm3vLp6xRn2kYs5d",
        ]);
    }

    /// An LDAP distinguished name after a key holding a secret word locates entries; a password
    /// with `=` and `,` in it is still a password.
    #[test]
    fn an_ldap_distinguished_name_is_no_secret() {
        assert_clean(&[
            "LDAP_BIND_PASSWORD_BASE = 'cn=readers,ou=groups,dc=corp,dc=test'",
            "auth_ldap_user_dn: \"uid=svc-wiki,ou=apps,dc=corp,dc=test\"",
        ]);
        assert_found(&["ldap_password = 'k3=Vq9,Lm2=Zx7'"]);
    }

    /// The quoted name of an account's secret field (`'userPassword'`, a directory attribute) is
    /// a name; words typed as a password are not.
    #[test]
    fn a_quoted_name_of_an_accounts_secret_field_is_a_name() {
        assert_clean(&[
            "ldap_password_attribute = 'userPassword'",
            "secret: \"consumerSecret\"",
            "mapping[\"token\"] = 'accessToken'",
        ]);
        assert_found(&[
            "secret: \"hiddenSecret\"",
            "password = 'SuperSecretPassword'",
            "password = 'userPassword7'",
        ]);
    }

    /// A pattern in a PEM body's place (a rule that finds keys) is no key.
    #[test]
    fn a_pattern_in_a_pem_bodys_place_is_no_key() {
        assert_clean(&[
            "rule: '-----BEGIN EC PRIVATE KEY-----(?s).{20,}?-----END EC PRIVATE KEY-----'",
            "-----BEGIN OPENSSH PRIVATE KEY-----\n[A-Za-z0-9+/=\\n]+\n-----END OPENSSH PRIVATE KEY-----",
        ]);
        assert_kind(
            SecretKind::PrivateKey,
            &[
                "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oqEhf+I2lH8v\n-----END EC PRIVATE KEY-----",
            ],
        );
    }

    /// Single quotes expand no `$`: a `$` before letters of both cases and digits there is a
    /// password's first character; `$NAME` and `$snake_name` stay references.
    #[test]
    fn a_dollar_in_single_quotes_may_start_a_password() {
        assert_found(&["db_password: '$uP3rDuP3r'", "connect(password='$kYw4lk3r9')"]);
        assert_clean(&[
            "db_password: '$DB_PASSWORD'",
            "password='$db_password_2'",
            "db_password: \"$dbPassword2\"",
        ]);
    }

    /// A file's location as grep, a compiler or a log quotes it (`path:line:`) starts that file's
    /// line: a config literal after it is read as on the line itself; after prose it is not.
    #[test]
    fn a_quoted_files_location_starts_its_line() {
        assert_found(&[
            "$ grep -rn password etc/\netc/mail.cf:14: password = qzvmkrtwplsd",
            "WARN loader: deploy/app.ini:7:3: passwd = wrdlbrmpft",
        ]);
        assert_clean(&[
            "he said: password = qzvmkrtwplsd",
            "etc/mail.cf:14: password = ${MAIL_PASSWORD}",
            "note 3: password = required",
        ]);
    }

    /// Lines quoting a file after its location (a log's or grep's `… path:line: `) are read as the
    /// file's lines: a PEM block spread over them is a key, an illustration is not.
    #[test]
    fn a_files_lines_quoted_in_a_log_read_as_the_file() {
        let key = "MHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5oqEhf+I2lH8voAoGCCqGSM49";
        let log = |body: &str| {
            format!(
                "12:00:01 INFO loader[7]: keys/ec.pem:1: -----BEGIN EC PRIVATE KEY-----\n\
                 12:00:01 INFO loader[7]: keys/ec.pem:2: {body}\n\
                 12:00:01 INFO loader[7]: keys/ec.pem:3: -----END EC PRIVATE KEY-----"
            )
        };
        assert_kind(SecretKind::PrivateKey, &[log(key).as_str()]);
        assert_clean(&[log("<your key here>").as_str(), log("anything").as_str()]);
    }

    /// `plz`/`pls` are `please`: a stand-in's words; a password holding them with digits is not.
    #[test]
    fn plz_is_a_stand_ins_word() {
        assert_clean(&["JWT_SECRET='replace me pls'", "api_token: \"CHANGE-THIS-PLZ\""]);
        assert_found(&["JWT_SECRET='plz4Xq9!vRt2'"]);
    }

    /// A name path of code (`Digest::SHA1.hexdigest`) after a secret's key is code, called
    /// without parentheses as Ruby does; a password with colons is still a password.
    #[test]
    fn a_name_path_of_code_is_no_secret() {
        assert_clean(&[
            "token = SecureRandom::Base64.urlsafe [32, nil].first",
            "let secret = crypto::hmac::derive_key(&salt);",
        ]);
        assert_found(&["secret = Zk9::mQ2!zLp7"]);
    }

    /// An element typed as a password (`type="password"`, a CI parameter's `spec="password …"`)
    /// holds its password in its `value`; an empty or templated value, or another type, holds none.
    #[test]
    fn an_element_typed_password_holds_its_value() {
        assert_found(&[
            "<input class=\"form\" type=\"password\" value=\"Sn0wdr1ft-44\" name=\"pw\">",
            "<param name=\"env.DEPLOY_KEY\" value=\"q7Lm2vZx9\" spec=\"password display='hidden'\" />",
            "<input value=\"trombone77\" type=\"password\" name=\"pw\">",
        ]);
        assert_clean(&[
            "<input type=\"password\" value=\"\" name=\"pw\">",
            "<input type=\"password\" value=\"<%= @pw %>\">",
            "<input type=\"email\" value=\"ops@corp.test\" placeholder=\"password\">",
        ]);
    }

    fn assert_kind(expected: SecretKind, texts: &[&str]) {
        for text in texts {
            assert_eq!(
                find_secret(text),
                Some(expected),
                "expected {expected:?} for {text:?}"
            );
            assert!(is_secret_like(text));
        }
    }

    /// The text of each finding, for span assertions.
    fn spans(text: &str) -> Vec<&str> {
        findings(text).iter().map(|f| &text[f.start..f.end]).collect()
    }

    #[test]
    fn comparisons_declarations_and_literal_arguments_are_assignments() {
        assert_eq!(spans(r#"if (pw == "Qx7#vLm2!pR9") {"#), ["Qx7#vLm2!pR9"]);
        assert_eq!(
            spans(r#"if ("Qx7#vLm2!pR9" !== db_password) {"#),
            ["Qx7#vLm2!pR9"]
        );
        assert_eq!(spans(r#"if creds.Secret != 'k9Vt-2mQx!Lr' {"#), ["k9Vt-2mQx!Lr"]);
        assert_eq!(
            spans(r#"char api_secret[25] = "Qx7#vLm2!pR9";"#),
            ["Qx7#vLm2!pR9"]
        );
        assert_eq!(spans(r#"std::string secret("Qx7#vLm2!pR9");"#), ["Qx7#vLm2!pR9"]);
        assert_clean(&[
            r#"if (password == "") {"#,
            r#"if token != "undefined" {"#,
            r#"if password == other_password:"#,
            r#"if (password === "admin") {"#,
            r#"var c = new ClientSecretCredential("72f9d8bf-86f1-41af-91ab-2d7cd011db47", id, secret);"#,
            r#"secret("name")"#,
        ]);
    }

    #[test]
    fn a_typed_word_compared_with_a_password_or_a_bare_secret_is_the_password() {
        assert_eq!(
            spans("if username == 'bob' and password =='logmein':"),
            ["logmein"]
        );
        assert_eq!(spans(r#"if creds.Secret != "open-sesame" {"#), ["open-sesame"]);
        assert_clean(&[
            r#"if password != "expired":"#,
            r#"if password == "password":"#,
            r#"if password == "changeme":"#,
            r#"if secret_type == "generic":"#,
            r#"if client_secret == "sandbox-client":"#,
            r#"if token != "undefined" {"#,
        ]);
    }

    #[test]
    fn the_key_of_vault_operator_unseal_is_a_secret() {
        let key = "98m+o2ylRhVbOi+3o5ub6PbP343ocFUVORgSYeypMDjh";
        assert_eq!(
            spans(&format!("oc exec -ti vault-0 -- vault operator unseal {key}")),
            [key]
        );
        assert_eq!(spans(&format!("vault unseal -migrate {key}")), [key]);
        assert_kind(
            SecretKind::CommandLine,
            &[&format!("vault operator unseal {key}")],
        );
        assert_clean(&[
            "vault operator unseal",
            "vault operator unseal -reset",
            "vault operator unseal $UNSEAL_KEY",
            "vault operator init -key-shares=5 -key-threshold=3",
            "run vault operator unseal three times",
        ]);
    }

    #[test]
    fn a_token_alone_below_a_label_line_naming_a_secret_is_one() {
        let banner = "Jenkins initial setup is required.\nPlease use the following password to proceed \
            to installation:\n\nbd9627decc6346d780b3b6ab6ea8fe1f\n\nThis may also be found at: \
            $JENKINS_HOME/secrets/initialAdminPassword";
        assert_eq!(spans(banner), ["bd9627decc6346d780b3b6ab6ea8fe1f"]);
        assert_eq!(
            spans("Your new API key:\r\n\r\n  Zk3n8QwL2xVb7Rt5Yp1Mc9Ds\r\n"),
            ["Zk3n8QwL2xVb7Rt5Yp1Mc9Ds"]
        );
        assert_clean(&[
            "Steps to reset your password:\n\n1. open the settings",
            "The token was:\n\nmy_access_token_refresh_handler_v2",
            "The commit sha is:\n\n1f2e3d4c5b6a79881f2e3d4c5b6a79881f2e3d4c",
            "the key fingerprint:\n\nSHA256:Zk3n8QwL2xVb7Rt5Yp1Mc9Ds",
            "Token endpoint:\n\nhttps://auth.example.com/oauth2/v1/Zk3n8QwL2xVb7Rt5Yp1Mc9Ds",
            "Where do I put the token:\n\nsrc/config/Zk3n8QwL2xVb7Rt5Yp1Mc9Ds.json",
            "Please use the following password:\n\n\n\nZk3n8QwL2xVb7Rt5Yp1Mc9Ds",
        ]);
    }

    #[test]
    fn an_absolute_path_after_a_secret_word_is_no_value_but_an_array_literal_is() {
        assert_clean(&[
            r#""/en/enterprise/3.0/creating-a-strong-password":"/en/enterprise-server@3.0/auth""#,
            r#""password":"/en/enterprise-server@3.0/auth""#,
        ]);
        assert_eq!(
            spans(r#""password":"/Xk9mQ2zLp7vR4tB8nW3c""#),
            ["/Xk9mQ2zLp7vR4tB8nW3c"]
        );
        assert_eq!(
            spans("secret[] = m{{h}o)p${e]nob(ody[finds>-_$#thisone}};"),
            ["m{{h}o)p${e]nob(ody[finds>-_$#thisone}}"]
        );
        assert_clean(&["char secret[25] = {0};", "secret[] = getSecret(name);"]);
    }

    #[test]
    fn a_quoted_word_in_a_sentence_about_a_password_is_the_password() {
        assert_eq!(spans(r#"the default password is "marmalade""#), ["marmalade"]);
        assert_eq!(
            spans("the password for user 'deploy' is 'tangerine' here"),
            ["tangerine"]
        );
        assert_eq!(spans(r#"password = "lemon curd pie""#), ["lemon curd pie"]);
        assert_clean(&[
            r#"if the password is "wrong" we retry"#,
            r#"the password field is "required""#,
            r#"password = "Enter your password""#,
            r#"error = "Passwords do not match""#,
        ]);
    }

    #[test]
    fn make_php_sql_and_ini_continuation_syntaxes() {
        for text in [
            "DB_PASSWORD ?= Hx7!kq2Lm9",
            "DB_PASSWORD ::= Hx7!kq2Lm9",
            "DB_PASSWORD += Hx7!kq2Lm9",
            "$password .= \"Hx7!kq2Lm9\";",
            "SET PASSWORD FOR 'root'@'localhost' = PASSWORD('Hx7!kq2Lm9');",
            "[database]\npassword =\n    Hx7!kq2Lm9",
        ] {
            assert_eq!(spans(text), ["Hx7!kq2Lm9"], "{text:?}");
        }
        assert_clean(&[
            "DB_PASSWORD ?= $(shell cat .pw)",
            "[database]\npassword =\n\n[cache]",
            "secretKeyRef:\n  name: db-credentials\n  key: password",
        ]);
    }

    #[test]
    fn a_quoted_password_may_open_a_template_it_never_closes() {
        assert_eq!(spans(r#"password := "Hx7${q2Lm9""#), ["Hx7${q2Lm9"]);
        assert_eq!(spans(r#"password: "{{Hx7!kq2Lm9""#), ["{{Hx7!kq2Lm9"]);
        // A reference inside a password's own characters is part of the literal: only a value
        // that is references (and separators, a plain word) is a template.
        assert_eq!(spans(r#"password: "ab${c}d9Xz""#), ["ab${c}d9Xz"]);
        assert_eq!(spans("db_pass = q{{w}}8Rt!x"), ["q{{w}}8Rt!x"]);
        assert_clean(&[
            r#"password: "${DB_PASSWORD}""#,
            r#"password = "{{ .Values.db.password }}""#,
            r#"DB_PASSWORD="${DB_USER}:${DB_PASS}""#,
            r#"secret: "${PREFIX}_secret""#,
        ]);
    }

    #[test]
    fn telegram_bot_tokens_with_and_without_their_usual_head() {
        assert_kind(
            SecretKind::Vendor("telegram_token"),
            &[
                "bot 5829104736:AAGq3vX9LmZ2pR8tK1wN6yB4cD7fH0jS5eU",
                "bot 869511423:Qw7tOM4-oZANUkq653PAPbo4HLs3DCd9NCX",
            ],
        );
        assert_clean(&[
            "1700000000:abcdefghijklmnopqrstuvwxyzabcdefghi",
            "12345678:short",
            "api_key: '5555555555:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'",
            "TELEGRAM_TOKEN=123456789:AAxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        ]);
    }

    #[test]
    fn a_vendors_documented_example_key_is_no_secret() {
        assert_clean(&[
            "firebase: AIzaSyAnLA7NfeLquW1tJFpx_eQCxoX-oo6YyIs",
            "curl https://api.stripe.com/v1/charges -u sk_test_4eC39HqLyjWDarjtT1zdp7dc:",
        ]);
        // One character off is a key like any other.
        assert_kind(
            SecretKind::Vendor("google_api_key"),
            &["firebase: AIzaSyAnLA7NfeLquW1tJFpx_eQCxoX-oo6YyIt"],
        );
    }

    #[test]
    fn text_escaped_for_json_is_read_as_its_writer_meant_it() {
        // A document in a JSON string: its lines, its quotes and its `\u` escapes, and the span
        // is the escaped text's.
        let log = r#"{"role": "user", "content": "please check:\n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"}"#;
        assert_eq!(spans(log), ["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"]);
        let config =
            r#"{"prompt": "```\n{\n  \"client_secret\": \"p8e-ibndcvsmAp9ZgPBZ606FSlYIZVlsZ-g5\"\n}"}"#;
        assert_eq!(spans(config), ["p8e-ibndcvsmAp9ZgPBZ606FSlYIZVlsZ-g5"]);
        let unicode = r#"{"prompt": "\u5bc6\u7801\uff1aTQjz2PL0TqOVVB\uff0c\u5e2e\u6211\u770b\u770b"}"#;
        assert_eq!(spans(unicode), ["TQjz2PL0TqOVVB"]);
        // A sentence that ends where the string does.
        assert_eq!(
            spans(r#"{"prompt": "my password is yjFcoHmQK52"}"#),
            ["yjFcoHmQK52"]
        );
        let (redacted, _) = redact(config);
        assert!(
            redacted.contains(r#"\"client_secret\": \"[REDACTED:"#),
            "{redacted}"
        );
        assert_clean(&[
            r#"{"prompt": "Passwort: \u00e4ndern, dann neu anmelden"}"#,
            r#"{"prompt": "let apiKey = settings.apiKey ?? ProcessInfo.processInfo.environment[\"API_KEY\"]"}"#,
            r#"{"log": "token refreshed\n  expires_in: 3600\n  token_type: \"Bearer\""}"#,
            r#"{"prompt": "why is my password expired"}"#,
        ]);
    }

    #[test]
    fn code_escaped_for_html_is_read_as_its_source() {
        let page = "<pre><code>{\n  &quot;client_secret&quot;: &quot;p8e-ibndcvsmAp9ZgPBZ606FSlYIZVlsZ-g5&quot;\n}</code></pre>";
        assert_eq!(spans(page), ["p8e-ibndcvsmAp9ZgPBZ606FSlYIZVlsZ-g5"]);
        assert_clean(&[
            // The tag around a documented example is not part of it.
            "<pre><code>snyk_token = 123e4567-e89b-12d3-a456-426614174000</code></pre>",
            "<pre><code>String password = &quot;password&quot;;</code></pre>",
        ]);
        // Markup in a prompt that is not escaped HTML is its text (an XML element's value).
        assert_eq!(spans("<password>Qx7#vLm2!pR9</password>"), ["Qx7#vLm2!pR9"]);
    }

    #[test]
    fn blanks_around_an_elements_text_are_layout() {
        assert_eq!(spans("<password>  hunter2  </password>"), ["hunter2"]);
        assert_eq!(
            spans("<settings>\n<passphrase>\tgpgPassphrase\t</passphrase>\n</settings>"),
            ["gpgPassphrase"]
        );
        assert_clean(&[
            "<password>   </password>",
            "<password>  ${env.MAVEN_REPO_PASS}  </password>",
            "<password>  password  </password>",
        ]);
    }

    #[test]
    fn an_elements_value_never_runs_into_its_closing_tag() {
        // Whichever rule reads the element's text, the span ends where the closing tag starts,
        // symbols in the value (`=`, `}`, `#`) or not, quoted or not.
        for (key, value) in [
            ("password", "Xk9#mQ2z$!pL@7="),
            ("secret", "Xk9#mQ2z$!pL@7="),
            ("apiKey", "vR4}zLp7=Qx7#mQ2"),
            ("passphrase", "n7$Kq2=Wx!9pLz"),
            ("client_secret", "Hj7kQ2mZp9Xw4Rt8Vb3N"),
            ("token", "\"Xk9#mQ2z$!pL@7=\""),
        ] {
            let text = format!("<settings>\n<{key}>{value}</{key}> next\n</settings>");
            assert_eq!(spans(&text), [value], "{text}");
        }
        // Maven's encrypted form (`{…}`, ciphertext under a master password kept elsewhere) fills
        // the element as a slot does, and is not the password.
        assert_clean(&[
            "<password>{COQLCE6DU6GtcS5P=}</password>",
            "<settings>\n<server>\n<password>{Wq3vH8kLz0pN4sB=}</password>\n</server>\n</settings>",
            "<passphrase>{jSMOWnoPFgsHVpMvz5VrIt5kRbzGpI8u+9EF1iFQyJQ=}</passphrase>",
        ]);
        // Without its braces the same text is a value, in an element or on a line naming it.
        assert_found(&[
            "<passphrase>jSMOWnoPFgsHVpMvz5VrIt5kRbzGpI8u+9EF1iFQyJQ=</passphrase>",
            "the gpg passphrase is jSMOWnoPFgsHVpMvz5VrIt5kRbzGpI8u+9EF1iFQyJQ=",
            "<password>Wq3vH8kLz0pN4sB=</password>",
        ]);
    }

    #[test]
    fn mavens_master_password_is_a_password() {
        for (text, value) in [
            (
                "<settingsSecurity>\n<master>plainMaster</master>\n</settingsSecurity>",
                "plainMaster",
            ),
            (
                "<settingsSecurity><master>  Tr0ub4dor&3  </master></settingsSecurity>",
                "Tr0ub4dor&3",
            ),
            (
                "<?xml version=\"1.0\"?>\n<settingsSecurity>\n  <relocation>x</relocation>\n  <master>hunter2hunter</master>\n</settingsSecurity>",
                "hunter2hunter",
            ),
        ] {
            assert_eq!(spans(text), [value], "{text}");
        }
        assert_clean(&[
            // Encrypted, a reference, empty; or a `<master>` of another document.
            "<settingsSecurity>\n<master>{jSMOWnoPFgsHVpMvz5VrIt5kRbzGpI8u+9EF1iFQyJQ=}</master>\n</settingsSecurity>",
            "<settingsSecurity>\n<master>${env.MAVEN_MASTER}</master>\n</settingsSecurity>",
            "<settingsSecurity>\n<master>  </master>\n</settingsSecurity>",
            "<branches>\n<master>plainMaster</master>\n</branches>",
            "<settingsSecurity>\n</settingsSecurity>\n<config><master>plainMaster</master></config>",
        ]);
    }

    #[test]
    fn a_long_vendor_prefix_glued_after_letters_is_read() {
        for (text, token) in [
            (
                "our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",
                "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",
            ),
            (
                "set mysk_live_Xk9mQ2zLp7vR4wT8nB3hJ6cFq then",
                "sk_live_Xk9mQ2zLp7vR4wT8nB3hJ6cFq",
            ),
            (
                "prodpscale_tkn_q7Wm2xR9kL4vZp8TnB3hJ6cFqXk9mQ2zLp7vR4wT8",
                "pscale_tkn_q7Wm2xR9kL4vZp8TnB3hJ6cFqXk9mQ2zLp7vR4wT8",
            ),
        ] {
            assert_eq!(spans(text), [token], "{text}");
        }
        assert_clean(&[
            // Words, or filler, after a glued prefix; a short prefix glued to a word is its letters.
            "ask_live_superlive1",
            "ourgithub_pat_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
            "risk_live_reporting_dashboard_enabled",
            "ourghp_Xk9mQ2zLp7vR4wT8nB3hJ6cFqLp7vR4wT8nB",
        ]);
    }

    #[test]
    fn the_rfc_example_uuid_is_no_secret_wherever_it_stands() {
        assert_clean(&[
            "snyk_token = 123e4567-e89b-12d3-a456-426614174000",
            "bugsnag secret 123e4567-e89b-12d3-a456-426614174000",
            "holidayapiKEY-123e4567-e89b-12d3-a456-426614174000",
        ]);
        assert_eq!(
            spans("snyk_token = 0f3c9a71-5b2e-4d8c-a6f1-93e2b7c40d5a"),
            ["0f3c9a71-5b2e-4d8c-a6f1-93e2b7c40d5a"]
        );
    }

    #[test]
    fn words_naming_the_credential_may_stand_between_a_provider_and_its_value() {
        // Blanks between (`pdfshift ACCESS …`), or dashes glued to the value: the value counts
        // as after the provider's word alone, and a hex value with them.
        assert_found(&[
            "pdfshift ACCESS 9f71c52d839b5cd527645e42b5134f8b",
            "nimble private access key 3mL6pHJQ7NMK3v8Z1J6n2L9F6qK2dH",
            "prospect-secret-5f4dcc3b5aa765d61d8327deb882cf91",
            "buttercmsPRIVATEkey-ab8f9c72ca483c3b6c3d4e6e8f9284ab56cd78f0",
        ]);
        assert_clean(&[
            // Another word, or a hex suffix with no word naming a credential: a build's.
            "pdfshift version 9f71c52d839b5cd527645e42b5134f8b",
            "prospect-4d9f1e2b6ac3fd80e162b12f8a9c45f1",
            "pdfshift ACCESS 00000000000000000000000000000000",
        ]);
    }

    #[test]
    fn pass_as_a_config_keys_last_segment_names_a_password() {
        assert_eq!(spans("REACT_APP_AUTH_PASS=marmalade"), ["marmalade"]);
        assert_eq!(spans("smtp.pass = tangerine7"), ["tangerine7"]);
        assert_clean(&[
            "TEST_PASS=true",
            "CHECKS_PASS=3",
            "DB_PASS=$DB_PASSWORD",
            "bypass=marmalade",
        ]);
    }

    #[test]
    fn an_api_key_passed_as_curls_user_is_the_secret() {
        assert_eq!(
            spans(r#"curl -u "k7Qz2mWp9Lx!t:" https://api.example.test"#),
            ["k7Qz2mWp9Lx!t"]
        );
        assert_clean(&[
            "curl -u admin: https://localhost:9200",
            "curl -u $API_KEY: https://api.example.test",
        ]);
    }

    #[test]
    fn a_mailchimp_key_is_told_by_its_data_center_suffix() {
        assert_kind(
            SecretKind::Vendor("mailchimp_key"),
            &["the newsletter job printed 5d1f0b8e93a27c46e0d9b13f7a2c8e64-us21 and stopped"],
        );
        assert_clean(&[
            "00000000000000000000000000000000-us21",
            "5d1f0b8e93a27c46e0d9b13f7a2c8e64-used",
            "x5d1f0b8e93a27c46e0d9b13f7a2c8e6-us21",
            "5D1F0B8E93A27C46E0D9B13F7A2C8E64-us21",
        ]);
    }

    #[test]
    fn a_java_system_property_is_a_key() {
        assert_eq!(
            spans("java -Dspring.datasource.password=Vq3!xLm9Tz -jar app.jar"),
            ["Vq3!xLm9Tz"]
        );
        assert_clean(&["java -Dspring.profiles.active=prod -Dfile.encoding=UTF-8 -jar app.jar"]);
    }

    #[test]
    fn an_ldap_bind_gives_its_third_argument() {
        assert_eq!(
            spans(
                "new DirectoryEntry(\"LDAP://corp.example\",\n    \"svc@corp.example\",\n    \"Tq8mZx31\");"
            ),
            ["Tq8mZx31"]
        );
        // A weak literal in the password's place is still the password; the slot's name is not.
        assert_eq!(
            spans(r#"DirectoryEntry("LDAP://10.0.0.1", "corp\\svc", "secret")"#),
            ["secret"]
        );
        assert_clean(&[r#"DirectoryEntry("LDAP://10.0.0.1", "corp\\svc", "password")"#]);
    }

    #[test]
    fn code_around_a_value_is_no_value() {
        assert_clean(&[
            r#"PASSWORD=$($(dirname $0)/bin/get-setting DB_PASSWORD)"#,
            r#""//localhost:1337/:_password = "+new Buffer("feast").toString("base64")"#,
            r#"echo 'password = '.$p['config']['daemon_password']."\n";"#,
            r#"usernameLabel:"Username:",passwordLabel:"Password:",rememberMeLabel:"Remember me:""#,
            r#"- echo 'export DATABASE_PASSWORD="'$PRECOMPILE_PASSWORD'"' >> .env"#,
            r#""password": "&lt;YOURPASSWORD&gt;""#,
            r#"text << "Password=#{password}, ""#,
            r#"ChangePasswordPolicy = "arn:aws:iam::aws:policy/IAMUserChangePassword""#,
            "secret_oPp4m4V04lEWqgLGyh?N7b8H9JLANmyE1AYl2aG3aTN",
        ]);
    }

    #[test]
    fn a_flags_value_in_an_argument_list_written_as_data() {
        assert_found(&[
            "spec:\n  containers:\n    - name: api\n      args: [\"serve\", \"--db-password\", \"Vq7#mZ2pL9xKw\"]",
            "CMD [\"app\", \"--api-token\", \"1lpWHnQWapOocv1fwQdYS3GcqkeAYPwE\"]",
            "cmd := exec.Command(\"psql\", \"--password\", \"Vq7#mZ2pL9xKw\")",
            "subprocess.run(['deploy', '--secret',\n    'q9XbN2vLp7RzT4kW8mYc3dF'])",
            "        args:\n          - --api-key\n          - 1lpWHnQWapOocv1fwQdYS3GcqkeAYPwE\n          - --port=8080",
        ]);
        assert_clean(&[
            // A variable, a reference, a stand-in or the next flag is no value.
            "args = ['--password', pw, '--user', user]",
            "args: [\"--password\", \"$(DB_PASSWORD)\"]",
            "        args:\n          - --api-key\n          - $(API_KEY)",
            "args: [\"--password\", \"--verbose\"]",
            "['--password', '<your password>']",
            "parser.add_argument('--password', default='', help='the database password')",
        ]);
    }

    #[test]
    fn user_then_password_flags_and_named_parameters() {
        assert_eq!(
            spans(r"psexec \\10.0.0.5 -u Administrator -p Kx9vRt2q cmd"),
            ["Kx9vRt2q"]
        );
        assert_eq!(
            spans("Connect-VIServer -Server vc01 -User admin -Password Vm9!wXr2"),
            ["Vm9!wXr2"]
        );
        assert_clean(&[
            "mysql -u root -p shop_db",
            "psexec \\\\host -u Administrator -p $Password cmd",
            "Connect-VIServer $host -User $user -Password $password",
            "docker run -u 1000 -p 8080:80 nginx",
        ]);
    }

    #[test]
    fn kerberos_and_cisco_hashes_and_unsigned_jwts() {
        let krb = format!(
            "$krb5asrep$23$bob@corp.example:{}${}",
            "3e15".repeat(8),
            "9d07c1a2".repeat(24)
        );
        assert_kind(
            SecretKind::PasswordHash,
            &[
                &krb,
                "$8$Tq2X/fE4KGHOzU$pEhnEvxrZaynpi8j4f.EMHr6M.FzU8xnZnBr/tJdFWk",
            ],
        );
        let header = "eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0";
        let claims = "eyJzdWIiOiJ1c2VyLTQyIiwicm9sZSI6ImFkbWluIn0";
        assert_kind(
            SecretKind::Jwt,
            &[&format!("the claims are in {header}.{claims} here")],
        );
        assert_clean(&[&format!("the header {header} alone"), "$krb5asrep$23$x$abc"]);
    }

    #[test]
    fn pem_blocks_without_a_body_are_illustrations() {
        assert_clean(&[
            "-----BEGIN PRIVATE KEY-----\nanything\n-----END PRIVATE KEY-----",
            "-----BEGIN OPENSSH PRIVATE KEY----------END OPENSSH PRIVATE KEY-----",
            "-----BEGIN RSA PRIVATE KEY-----\n<your key here>\n-----END RSA PRIVATE KEY-----",
        ]);
        assert_kind(
            SecretKind::PrivateKey,
            &["-----BEGIN PGP PRIVATE KEY BLOCK-----\n=8xQN\n-----END PGP PRIVATE KEY BLOCK-----"],
        );
    }

    /// Illustrations in other clothes: a block on one line of JSON (`\n` escapes) with `...` for
    /// its body, a diff's `+` before `xxx`, base64 that decodes to words; a key in the same
    /// clothes is still a key.
    #[test]
    fn pem_bodies_typed_as_counts_are_illustrations() {
        let typed = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1234567890abcdefghijklmnopqrstuvwxyz\n\
            ABCDEFGHIJKLMNOPQRSTUVWXYZ1234567890abcdefghijklmnop\n\
            qrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ12345678\n-----END RSA PRIVATE KEY-----";
        assert_clean(&[typed]);
        // A generated body, and one with a count in part only, are keys.
        let real = "-----BEGIN RSA PRIVATE KEY-----\nYObVAoGAGsWtK3K2Q4OSf6Z1az3AuDfo8xj9/UBuBQe1Op9RFTXps84foAqEgFwj\n\
            7eUHc9npsdql24xsVK8huo9VKPu/mrDStv8JYRWP4cSUXWWBx5oGpPBP7uaMgQCx\n-----END RSA PRIVATE KEY-----";
        let part = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA1234567890abcdefYObVAoGAGsWtK3K2Q4OSf6Z1az3AuDfo8xj9\n\
            7eUHc9npsdql24xsVK8huo9VKPu/mrDStv8JYRWP4cSUXWWBx5oGpPBP7uaMgQCx\n-----END RSA PRIVATE KEY-----";
        assert_kind(SecretKind::PrivateKey, &[real, part]);
    }

    #[test]
    fn pem_illustrations_in_json_diffs_and_encoded_words_are_not_keys() {
        assert_clean(&[
            r#"SA={"private_key":"-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----\n","client_email":"a@b.example"}"#,
            "```diff\n+-----BEGIN PRIVATE KEY-----\n+xxx\n+-----END PRIVATE KEY-----\n```",
            "-----BEGIN PRIVATE KEY-----\nYWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXo=\n-----END PRIVATE KEY-----",
        ]);
        assert_kind(
            SecretKind::PrivateKey,
            &[
                r#""key": "-----BEGIN PRIVATE KEY-----\nzFMgU9qbVUy7Rh5N9oU6Y2xUaMeJuCNrqjdoo+d9YgIYr9mDGfMpS9JJl0mOGeEE\n-----END PRIVATE KEY-----\n""#,
                "```diff\n+-----BEGIN PRIVATE KEY-----\n+zFMgU9qbVUy7Rh5N9oU6Y2xUaMeJuCNrqjdoo+d9YgIYr9mDGfMpS9JJl0mOGeEE\n+-----END PRIVATE KEY-----\n```",
            ],
        );
    }

    /// A value judged as what it is: a URL whose userinfo is the user again or a stand-in, a weak
    /// key's base64 of plain words, a token that says it is made up.
    #[test]
    fn urls_encoded_words_and_made_up_tokens_under_a_key_are_not_secrets() {
        assert_clean(&[
            r#"const MYSQL_IDENTICAL_CREDENTIALS = "mysql://mysql:mysql@localhost:3306/database";"#,
            "DB_CREDENTIALS=postgres://username:password@localhost/db",
            "ANY_KEY = ZHVtbXkgdGV4dCBkYXRhIGRhdGEgZGF0YQ==",
            "DOCKER_TOKEN=not_a_real_token",
            "hf_FakeFakeFakeFakeFakeFakeFakeFakeFa",
        ]);
        assert_kind(
            SecretKind::Assignment,
            &[
                "DB_CREDENTIALS=postgres://app:Xk9mQ2vL7pR4@localhost/db",
                "ANY_KEY = Xk9mQ2vL7pR4wT6yZ1nB8cD3fG5hJ0kM",
            ],
        );
    }

    #[test]
    fn word_lists_index_every_word_exactly() {
        let split =
            |w: &Words| -> Vec<&[u8]> { w.text.split(|&b| b == b' ').filter(|w| !w.is_empty()).collect() };
        for list in [
            &QUALIFIERS,
            &PREFIX_QUALIFIERS,
            &NO_WORDS,
            &words_of!(b"  a bb  ccc "),
        ] {
            assert_eq!(list.iter().collect::<Vec<_>>(), split(list));
        }
        assert_eq!(words_of!(b"  a bb  ccc ").iter().count(), 3);
    }

    #[test]
    fn rule_names_are_snake_case() {
        for (kind, name) in [
            (SecretKind::PrivateKey, "private_key"),
            (SecretKind::Assignment, "assignment"),
            (SecretKind::CommandLine, "command_line"),
            (SecretKind::AuthHeader, "auth_header"),
            (SecretKind::UrlCredentials, "url_credentials"),
            (SecretKind::CredentialFile, "credential_file"),
            (SecretKind::PasswordHash, "password_hash"),
            (SecretKind::Vendor("stripe_key"), "stripe_key"),
            (SecretKind::Jwt, "jwt"),
            (SecretKind::Prose, "prose"),
        ] {
            assert_eq!(kind.as_str(), name);
        }
        for v in &super::VENDORS {
            assert!(
                v.name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{}",
                v.name
            );
        }
    }

    #[test]
    fn pem_blocks_are_private_keys_whole() {
        let block =
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq7Bz\nab+/cd==\n-----END RSA PRIVATE KEY-----";
        let text = format!("key:\n{block}\nthanks");
        assert_eq!(spans(&text), [block]);
        assert_kind(
            SecretKind::PrivateKey,
            &[
                "-----BEGIN PRIVATE KEY-----",
                "-----begin openssh private key-----",
                "-----BEGIN PGP PRIVATE KEY BLOCK-----",
                "-----BEGIN ENCRYPTED PRIVATE KEY----- then password = x",
            ],
        );
    }

    #[test]
    fn pem_bodies_without_armor_are_private_keys_but_certificates_are_not() {
        let line = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj";
        assert_kind(SecretKind::PrivateKey, &[&format!("{line}\n{line}\n{line}")]);
        let cert = "MIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ";
        assert_clean(&[
            &format!("{cert}\n{cert}"),
            "-----BEGIN PUBLIC KEY-----",
            "-----BEGIN CERTIFICATE-----",
            "-----BEGIN PRIVATE KEY----",
            line,
        ]);
    }

    #[test]
    fn keys_containing_a_secret_word_match_with_any_affix_case_and_separator() {
        assert_kind(
            SecretKind::Assignment,
            &[
                "password = hunter2",
                r#"{"api_key": "abc9"}"#,
                "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCYzzKEY",
                "DB_PASSWORD=s3cr3t docker compose up",
                "PGPASSWORD=pw4d psql",
                "mysqlRootPassword: 'Qz9!xw'",
                "spring.datasource.password=Zq7kLm2p",
                "client-secret: q8Zk!2",
                "Secret_Key = 'v4lue'",
                "passphrase = \"correct horse battery staple\"",
                "cookie: session=abc123",
                "app.config['SECRET_KEY'] = 'k3yv4l'",
                "set GITHUB_TOKEN=t0kenv4lue",
                "mypassword = hunter2",
                "<password>Hq8vN2pLxQ7</password>",
                "password:Hq8vN2pLxQ7",
            ],
        );
    }

    #[test]
    fn the_value_is_the_span_not_the_key() {
        assert_eq!(spans("DB_PASSWORD=s3cr3t docker compose up"), ["s3cr3t"]);
        assert_eq!(spans(r#"{"token": "abc9xyz", "n": 1}"#), ["abc9xyz"]);
        assert_eq!(spans("Password=hunter2;Encrypt=true"), ["hunter2"]);
        assert_eq!(spans("https://ci/x?token=Zk3n8QwL2x&page=2"), ["Zk3n8QwL2x"]);
    }

    #[test]
    fn metadata_keys_types_code_and_placeholders_are_not_secrets() {
        assert_clean(&[
            "password: String",
            "api_key: Option<String>",
            "token: string",
            "token?: string",
            "fn f(password: &str)",
            "let token = lexer.next_token();",
            "Client(api_key=os.environ[\"KEY\"])",
            "Client(api_key=api_key)",
            "const token = process.env.TOKEN;",
            "use crate::token::Token;",
            "if token == expected { ok }",
            "token_count = 3",
            "max_tokens: 4096",
            "tokenizer: bpe",
            "password_file = /run/secrets/db",
            "password = None",
            "password: ${DB_PASSWORD}",
            "password: {{ .Values.db.password }}",
            "password = \"****\"",
            "api_key = \"xxxxxxxxxxxxxxxx\"",
            "SECRET_KEY=changeme",
            "set DB_PASSWORD=%DB_PASSWORD%",
            "password: !vault |",
            "password = [REDACTED:assignment]",
            "password: \"Password must be at least 8 characters\"",
            "PWD=/home/dev/project",
            "password=password",
            "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/db",
            "the session cookie SameSite=Strict and Secure",
            "<password></password>",
        ]);
    }

    #[test]
    fn prose_needs_a_random_looking_word_after_the_secret_word() {
        assert_kind(
            SecretKind::Prose,
            &[
                "my password is hunter2",
                "the api key is 4693954bdee012a93791",
                "the db password for staging: KmNk7wV5",
                // The scope's first word ends at a `-` (`on-prem`), not only at a blank.
                "the password on-prem is Xy7!kq9Lm",
                "the password for prod-eu is Xy7!kq9Lm",
                "das Passwort für prod ist Xy7!kq9Lm",
            ],
        );
        assert_clean(&[
            "the token is here",
            "Use the token bucket algorithm",
            "password reset flow",
            "the api key rotation doc",
            "Is the token base64url-encoded or hex?",
            "Use sha256 for the token hash",
            "a secret, kept",
        ]);
    }

    #[test]
    fn command_line_credentials() {
        assert_kind(
            SecretKind::CommandLine,
            &[
                "mysqldump --password=Zq7kLm2p shop",
                "docker login -u bot -p Zq7kLm2p registry",
                "sshpass -p 'Zq7kLm2p' ssh host",
                "mysql -u root -pZq7kLm2p",
                "redis-cli -a Zq7kLm2p ping",
                "curl -u admin:Zq7kLm2p https://ci",
                "curl --user admin:Zq7kLm2p https://ci",
            ],
        );
        assert_eq!(spans("curl -u admin:Zq7kLm2p https://ci"), ["Zq7kLm2p"]);
        assert_clean(&[
            "mysql -u root -p shop",
            "psql -h db -p 5432",
            "docker login --password-stdin",
            "curl -u \"$USER:$PASS\" https://ci",
            "tar -p -x file",
        ]);
    }

    #[test]
    fn auth_headers() {
        assert_kind(
            SecretKind::AuthHeader,
            &[
                "Authorization: Bearer k7Qz2mWp12345",
                "Authorization: Basic dXNlcjpwYXNz",
                "X-Api-Key: 3f9a8b7c6d5e",
                "send it with Bearer k7Qz2mWp12345 please",
                "curl -H 'Basic dXNlcjpwYXNz'",
            ],
        );
        assert_clean(&[
            "Bearer <your-token>",
            "Authorization: Bearer $TOKEN",
            "bearer of bad news",
            "Use Bearer authentication everywhere",
            "Basic authentication is off",
            "pall-bearer k7Qz2mWp12345",
            "Bearerk7Qz2mWp12345",
        ]);
    }

    #[test]
    fn a_scheme_word_in_a_sentence_is_no_authorization_header() {
        // `secret key used`: the secret word's value would be `key`, a scheme word of headers,
        // and the word after it the token; in prose it is just the next word.
        assert_clean(&[
            "# SECURITY WARNING: keep the secret key used in production secret!",
            "the secret key stored in vault is rotated weekly",
            "which secret key rotated last night?",
            "the api token used by the worker",
        ]);
        assert_kind(
            SecretKind::AuthHeader,
            &[
                "Authorization: Key k7Qz2mWp12345xq",
                "x-api-key: Key k7Qz2mWp12345xq",
                "\"Authorization\": \"Key k7Qz2mWp12345xq\"",
            ],
        );
    }

    #[test]
    fn references_in_the_password_slot_are_not_passwords() {
        // Ruby interpolation and release pipelines' token slots; a variable escaped for the
        // shell that expands it later; GitHub's fixed word where the password goes.
        assert_clean(&[
            "mongodb://user:#{db-password}@localhost/db",
            "CONNECTION_STRING=mongodb://user:#{azure-replacement-token}#@mongo.local:27017/db",
            "password: \"#{DbPassword}#\"",
            "echo mongo --host localhost --username root --password \\$PASSWORD",
            "echo mysql -u user -h127.0.0.1 \"--password=\\$ENVVAR\"",
            "git clone https://$GITHUB_TOKEN:x-oauth-basic@github.com/acme/repo.git",
        ]);
        // A password's own characters around a slot, an escaped-looking literal, and the token
        // in the user's place are still secrets.
        assert_kind(
            SecretKind::UrlCredentials,
            &[
                "mongodb://user:#{x}Kq9mZ2pLw@localhost/db",
                "git clone https://3f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a:x-oauth-basic@github.com/a/r.git",
            ],
        );
        assert!(!findings("password=\\$uP3r-S3cret!9").is_empty());
        assert!(!findings("password=ab#{cd}ef9Xz2").is_empty());
    }

    #[test]
    fn code_that_fetches_a_secret_and_words_that_stand_in_for_one_are_not_secrets() {
        assert_clean(&[
            "c.S3SecretAccessKey = c.Get(\"UPLOAD_SECRET_ACCESS_KEY\", \"\", \"An AWS key\")",
            "PG_PASSWORD=get_setting('PG_PASSWORD')",
            "pass    = CGI.escape(\"#{$env.db_password}\").gsub('+', '%20')",
            "  pwd=instance_info.password,",
            "db_pass = settings.database.db_password;",
            "MYSQL_PASSWORD=CHANGE_THIS_STRONG_PASSWORD_ADMIN",
            "DATABASE_URL=\"mysql://app:!ChangeMe!@127.0.0.1:3306/app\"",
            "SqlSettingsDefaultDataSource = \"mysql://mmuser:obfuscated@localhost/test\"",
            "password: removed",
        ]);
        // A literal with a parenthesis, dots or marks around it is still a password.
        assert_found(&[
            "DB_PASSWORD=Abc(d3f)Gh9x",
            "password = \"kX9(\\\"mQ2zLp\"",
            "password: my.secret.value9",
            "DB_PASSWORD=!Xk9mQ2zLp!",
            "DB_PASSWORD=SuperStrongRandomPassword",
        ]);
    }

    #[test]
    fn a_providers_value_in_a_name_value_pair_is_found() {
        assert_kind(
            SecretKind::Vendor("sonarqube_token"),
            &[
                "params:\n- name: SONAR_LOGIN\n  value: 9acf34ff1e738bcd6d5daf102a8cfcb8a158e44e",
                "<property name=\"sonar.login\" value=\"9acf34ff1e738bcd6d5daf102a8cfcb8a158e44e\" />",
            ],
        );
        assert_clean(&[
            "params:\n- name: SONAR_PROJECT_KEY\n  value: my_project_key",
            "- name: SONAR_HOST_URL\n  value: https://sonar.example.com",
            "<property name=\"sonar.projectVersion\" value=\"9acf34ff\" />",
        ]);
    }

    #[test]
    fn a_connection_string_value_ends_before_the_next_field_even_one_with_spaces() {
        for (text, value) in [
            (
                "Server=db;User ID=sa;Password=YourStr0ng@Pass;Initial Catalog=Ports;",
                "YourStr0ng@Pass",
            ),
            (
                "user id=app;password=3GGb62XfnnlbKpHr;Max Pool Size=100",
                "3GGb62XfnnlbKpHr",
            ),
            // A connection string's field is its text: a word there is the password.
            (
                "Provider=SQLOLEDB.1;User ID=bill; Password =specialbill_user;Initial Catalog=Bills;",
                "specialbill_user",
            ),
            // No field follows: the `;` is the password's own.
            ("Password=Xk9;mQ2zLp", "Xk9;mQ2zLp"),
        ] {
            let found: Vec<&str> = findings(text).iter().map(|f| &text[f.start..f.end]).collect();
            assert_eq!(found, [value], "{text}");
        }
    }

    #[test]
    fn key_ids_log_fields_and_generic_paths_are_not_secrets() {
        assert_clean(&[
            "gpg: Signature made Mon 01 Jan 2026, using RSA key 4AEE18F83AFDEB23 Good signature",
            "signed with the GPG key 3AA5C34371567BD2",
            "INFO auth: user=alice token_type=Bearer expires_in=3600 scope=\"read write\"",
            "let key = Key::<Aes256Gcm>::from_slice(&key_bytes); let cipher = Aes256Gcm::new(key);",
        ]);
        // The same hex run as an API key, and a token after the scheme, are still secrets.
        assert!(!findings("my api key 4aee18f83afdeb23").is_empty());
        assert_kind(
            SecretKind::AuthHeader,
            &["Authorization: Bearer k7Qz2mWp12345xq=="],
        );
    }

    #[test]
    fn vendor_shapes_have_prefix_alphabet_and_length() {
        let cases = [
            ("sk-proj-k7Qz2mWp1234", "openai_style_key"),
            ("ghp_k7Qz2mWp1234", "github_token"),
            ("xoxb-12345678-abcD3fgh", "slack_token"),
            ("AKIAQ3EGRUPXZ7N4K2WB", "aws_access_key"),
            ("sk_live_4eC39HqLyjWDarjtT1zdp7dc", "stripe_key"),
            ("AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe", "google_api_key"),
            ("glpat-Zk3n8QwL2xVb7Rt5Yp1M", "gitlab_token"),
            ("npm_Zk3n8QwL2xVb7Rt5Yp1Mc9Ds4Fh6Jg0Ae2Ku", "npm_token"),
            (
                "dop_v1_7f3a9c1e5b2d80647f3a9c1e5b2d80647f3a9c1e5b2d80647f3a9c1e5b2d8064",
                "digitalocean_token",
            ),
            ("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", "shopify_token"),
        ];
        for (token, name) in cases {
            assert_eq!(
                find_secret(&format!("use {token} now")),
                Some(SecretKind::Vendor(name)),
                "{token}"
            );
        }
        assert_clean(&[
            "risk-based task-list on the desk-top",
            "sk-short",
            "ghp_abcdefg",
            "ghp_k7Qz2mWp1234-more",
            "my_ghp_k7Qz2mWp1234",
            "AKIAIOSFODNN7EXAMPLE",
            "AKIAQ3EGRUPXZ7N4K2W",
            "sk_live_xxxxxxxxxxxxxxxxxxxxxxxx",
            "npm_Zk3n8QwL2xVb7Rt5Yp1Mc9Ds4Fh6Jg0Ae2K",
            "中sk-abc",
            "sk-abc中defgh",
        ]);
    }

    /// Non-ASCII text and URL-encoding are word boundaries for a token: a token glued to a
    /// Chinese or Japanese sentence, or to `%3D`, is still found and redacted whole.
    #[test]
    fn tokens_glued_to_non_ascii_or_url_encoded_text_are_found() {
        let token = "ghp_pP2BpvLpyOcHYJZtrEXTEDadQyDoMNlXM1EJ";
        for text in [
            format!("这是我的令牌{token}请帮我检查"),
            format!("APIキーは{token}です"),
            format!("clé{token}"),
            format!("/cb?next=%2Fhome%3Ftoken%3D{token}%26x%3D1"),
            format!("q=hello%20{token}"),
        ] {
            assert_eq!(spans(&text), [token], "{text}");
        }
        assert_eq!(spans(&format!("令牌{JWT}。")), [JWT]);
        assert_clean(&["中文Bearer k7Qz2mWp12345", "100%ABCDEF done"]);
    }

    /// A value longer than [`super::MAX_VALUE`] is judged on its head and redacted whole.
    #[test]
    fn long_values_are_redacted_to_their_end() {
        let long: String = "Zk3n8QwL2xVb7Rt5Yp1M+/".repeat(60);
        for (text, secret) in [
            (format!("{{\"token\": \"{long}\"}}"), long.as_str()),
            (format!("export AWS_SESSION_TOKEN={long} next"), long.as_str()),
            (format!("Authorization: Bearer {long}"), long.as_str()),
            (format!("curl -H 'x' Bearer {long} x"), long.as_str()),
            (format!("client-key-data: {long}\nnext: 1"), long.as_str()),
        ] {
            assert_eq!(spans(&text), [secret], "{}", &text[..40]);
        }
        // Past the cap, everything up to it goes.
        let huge = "Zk3n8QwL2xVb7Rt5".repeat(5000);
        let text = format!("token=\"{huge}");
        assert_eq!(findings(&text)[0].end, "token=\"".len() + super::MAX_SPAN);
    }

    /// Long JWT segments (ID tokens with kilobytes of claims, RS512 signatures) are whole.
    /// A table cell and a line fed to `chpasswd` are values too: judged on their first
    /// [`super::MAX_VALUE`] bytes like any other, what follows does not change the verdict.
    #[test]
    fn long_cells_and_here_document_lines_are_judged_on_their_head() {
        let long = format!("{}...", "Zq8!pLm2xQ".repeat(60));
        for text in [
            format!("password={long}"),
            format!("user,password\nbob,{long}"),
            format!("| user | password |\n|---|---|\n| bob | {long} |"),
            format!("chpasswd <<EOF\nbob:{long}\nEOF"),
        ] {
            assert_eq!(spans(&text), [long.as_str()], "{}", &text[..40]);
        }
    }

    #[test]
    fn jwts_with_long_segments_are_found_whole() {
        let payload = format!("eyJ{}", "aXNzIjoiaHR0cHM6Ly9zZWN1cmV0b2tlbi".repeat(40));
        let jwt = format!(
            "eyJhbGciOiJSUzUxMiJ9.{payload}.{}",
            "Sfl-Kxw_RJSMeKKF2QT4fwpMeJf36P".repeat(23)
        );
        assert_eq!(spans(&format!("id_token {jwt} ok")), [jwt.as_str()]);
    }

    #[test]
    fn url_userinfo_runs_to_the_last_at_and_over_a_slash_in_a_password() {
        assert_eq!(
            spans("postgresql://admin:P@ssw0rd123@db.prod:5432/app"),
            ["P@ssw0rd123"]
        );
        assert_eq!(
            spans("redis://default:ab/Cd9+xYz12=@redis.internal:6379"),
            ["ab/Cd9+xYz12="]
        );
        assert_eq!(spans("mysql://root:SUPERSECRETPASS@db/app"), ["SUPERSECRETPASS"]);
        assert_eq!(
            spans("https://fa6eb9eb2b67d8b081abd1d97aaf35f3b68f14ad@github.com/org/repo"),
            ["fa6eb9eb2b67d8b081abd1d97aaf35f3b68f14ad"]
        );
        assert_clean(&[
            "mysql://root:DB_PASS@db/app",
            "mysql://root:YOURPASSWORD@db/app",
            "https://host:8080/a@b",
            "ssh://git@github.com:22/org/repo",
            "https://deploy-bot@github.com/org/repo",
        ]);
    }

    /// Redaction covers what made the finding: a token wrapped onto the next line, and an AWS
    /// secret access key next to its key id.
    #[test]
    fn wrapped_tokens_and_aws_secrets_near_their_id_are_redacted() {
        let (text, _) = redact("ghp_zymMlopiWfqUyHRS\nIf8NFmAUNLnY5Yx0y3Rn\nthanks");
        assert_eq!(text, "[REDACTED:github_token]\nthanks");
        let (text, _) = redact("ghp_zymMlopiWfqUyHRSIf8NFmAUNLnY5Yx0y3Rn\nThanks, bye");
        assert_eq!(text, "[REDACTED:github_token]\nThanks, bye");
        let (text, _) = redact(
            "aws_access_key_id = AKIAQ3EGRUPXZ7N4K2WB\naws_secret_access_key: kNtaU4i5GpIpatEJc2vPj/eJeRvtQRxFAoCRIsBh",
        );
        assert!(!text.contains("kNtaU4i5"), "{text}");
        let (text, _) = redact("AKIAQ3EGRUPXZ7N4K2WB\nkNtaU4i5GpIpatEJc2vPj+eJeRvtQRxFAoCRIsBh");
        assert!(!text.contains("kNtaU4i5"), "{text}");
    }

    #[test]
    fn jwts_and_url_credentials() {
        assert_kind(SecretKind::Jwt, &[JWT]);
        assert_kind(
            SecretKind::UrlCredentials,
            &[
                "https://bob:s3cret@example.com/x",
                "redis://:Zk3n8QwL@cache:6379",
                "连接 https://bob:密码密码@例子.com 吧",
            ],
        );
        assert_eq!(spans("postgres://app:Zk3n8QwL@db/prod"), ["Zk3n8QwL"]);
        assert_clean(&[
            "postgres://USER:PASSWORD@HOST:5432/DB",
            "https://user:${PASS}@host",
            "git@github.com:org/repo.git",
            "https://example.com/a@b",
            r#"{"url":"http://host:8000","owner":"a@b.c"}"#,
        ]);
    }

    #[test]
    fn credential_files() {
        assert_kind(
            SecretKind::CredentialFile,
            &[
                "machine api.example.com login me password Zq7kLm2p",
                "db.internal:5432:prod:app:Zq7kLm2p",
            ],
        );
        assert_clean(&[
            "host:port:database:username:password is the format",
            "12:30:00 on 2024-01-05",
        ]);
    }

    #[test]
    fn redaction_replaces_each_span_with_its_rule() {
        let (text, top) = redact("DB_PASSWORD=s3cr3t and ghp_k7Qz2mWp1234 done");
        assert_eq!(
            text,
            "DB_PASSWORD=[REDACTED:assignment] and [REDACTED:github_token] done"
        );
        assert_eq!(top, Some(SecretKind::Assignment));
        let (text, top) = redact("nothing here");
        assert!(matches!(text, std::borrow::Cow::Borrowed("nothing here")));
        assert_eq!(top, None);
    }

    #[test]
    fn private_blocks_are_stripped_unclosed_ones_to_the_end() {
        assert_eq!(
            strip_private("a<private>b</private>c<PRIVATE>d</Private>e"),
            "ace"
        );
        assert_eq!(strip_private("keep <private>drop all of this"), "keep ");
        assert_eq!(
            strip_private("no tags </private> here"),
            "no tags </private> here"
        );
    }

    /// One of each kind of finding, for the panic tests below.
    const SCAN_SAMPLES: [&str; 35] = [
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq7Bz\n-----END RSA PRIVATE KEY-----",
        "\"client secret\" :\u{3000}\"v4lue9\"",
        "Bearer k7Qz2mWp.ijk9",
        "github_pat_k7Qz2mWp1234",
        "AKIAQ3EGRUPXZ7N4K2WB",
        JWT,
        "postgres://u:pw9@db:5432/x",
        "curl -u a:b9cdef https://x",
        "db:5432:p:u:Zq7kLm2p",
        "k7Qz2mWpijklmn.atlasv1.x",
        "abc8Q~xyz",
        "password=Zq8!pLm2x",
        "密码是Zq8!pLm2x",
        "user,password\nbob,Zq8!pLm2x",
        "echo 'bob:Zq8!pLm2x' | chpasswd",
        "htpasswd -b f bob Zq8!pLm2x",
        "keytool -list -storepass Zq8!pLm2x",
        "net use Z: \\\\s\\x Zq8!pLm2x /user:bob",
        "pbkdf2_sha256$1$ab$ROJmJLOC3sZjQbCoA8HuEry+yDc=",
        "{SSHA}Lfv8HinZ/FSwhf/wQEdr2R7jSQ3MVv+f",
        "{crypt}7fg8LEGAKRwpC",
        "new NetworkCredential(\"a\", \"Zq8!pLm2x\".toCharArray())",
        "keyring.set_password(\"s\", \"u\", \"Zq8!pLm2x\")",
        "비밀번호는 Zq8!pLm2x입니다",
        "DB_KENNWORT_PROD=Zq8!pLm2x",
        "db_contraseña=Zq8!pLm2x",
        "mot de passe\u{202f}: Zq8!pLm2x",
        "mot de passe\u{a0}:\u{202f}Zq8!pLm2x",
        "userPassword:: e1NTSEF9TGZ2OEhp\n blovRlN3aGYvd1FF",
        "keytool -list \\\r\n -storepass Zq8!pLm2x `\n -v",
        "NET USE Z: \\\\s\\x Zq8!pLm2x",
        "비밀번호는 Zq8!pLm2x으로",
        "パスワードはZq8!pLm2xです",
        "Пароль_БД=Zq8!pLm2x",
        "비밀번호_확인: Zq8!pLm2x",
    ];

    #[test]
    fn every_prefix_of_every_sample_is_scanned_without_panicking() {
        for sample in SCAN_SAMPLES {
            for (cut, _) in sample.char_indices() {
                for tail in ["", "é", "🎉", "密", "\n"] {
                    let _ = redact(&format!("{}{tail}", &sample[..cut]));
                    let _ = redact(&format!("{tail}{}", &sample[cut..]));
                }
                let _ = redact(&format!("{}密{}", &sample[..cut], &sample[cut..]));
            }
        }
    }

    /// A rule that cuts a run at a byte count must not cut a character: `redact` slices the
    /// text at every finding's ends.
    #[test]
    fn findings_never_split_a_character() {
        let cjk = "这是一个没有空格的很长的中文句子".repeat(12);
        let long = [
            format!("chpasswd <<< 'bob:{cjk}'"),
            format!("chpasswd <<E\nbob:{cjk}\nE"),
            format!("password=\"Zq8!{cjk}\""),
            format!("password=Zq8!{cjk}"),
            format!("<password>Zq8!{cjk}</password>"),
            format!("token=\"Zq8!{}", "é".repeat(40_000)),
            format!("token=Zq8!{}", "🎉".repeat(20_000)),
            format!("비밀번호: Zq8!{}", "비밀번호".repeat(200)),
            format!("db_contraseña=Zq8!{cjk}"),
        ];
        let glue = ["", "é", "🎉", "密码", "e\u{301}", "👩‍💻", "\n"];
        for sample in SCAN_SAMPLES
            .iter()
            .copied()
            .chain(long.iter().map(String::as_str))
        {
            for before in glue {
                for after in glue {
                    let _ = redact(&format!("{before}{sample}{after}"));
                    let _ = redact(&format!("{before} {sample} {after}"));
                }
            }
        }
    }

    #[test]
    fn a_200000_character_prompt_without_secrets_is_clean() {
        let paragraph = "Refactor the risk-based task-list 中文 🎉 so the token bucket keeps \
            password reset flow working; let token = lexer.next_token(); password: String, \
            see https://example.com/a@b and git@github.com:o/r.git. ";
        let mut prompt = String::new();
        while prompt.chars().count() < 200_000 {
            prompt.push_str(paragraph);
        }
        assert_eq!(find_secret(&prompt), None);
        prompt.push_str(" password=hunter2");
        assert_eq!(find_secret(&prompt), Some(SecretKind::Assignment));
    }

    /// The shortcut that rules out a provider's value after a key agrees with reading the
    /// operand and the value byte by byte, on every mix of value bytes, blanks, `!`, operators,
    /// quotes, control and non-ASCII bytes.
    #[test]
    fn a_keyword_value_is_ruled_out_only_where_none_follows() {
        let by_bytes = |bytes: &[u8], kend: usize| {
            let r = super::run_end_max(bytes, kend, 64, |b| b" \t\n\r\"'`=:>?,.|!<-".contains(&b));
            r - kend == 64
                || super::run_end_max(bytes, r, 16, |b| super::KEYWORD_TOKEN[usize::from(b)]) - kend >= 16
        };
        let alphabet = b"aZ9 =!\"-.|\t\n\x01:+/_~\xc3";
        let mut seed = 0x9e37_79b9_u32;
        for _ in 0..200_000 {
            let len = 10 + (seed % 30) as usize;
            let bytes: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 17;
                    seed ^= seed << 5;
                    // Mostly value bytes, so that some values reach 16.
                    if seed.is_multiple_of(3) {
                        alphabet[(seed / 3) as usize % alphabet.len()]
                    } else {
                        b'k'
                    }
                })
                .collect();
            for kend in 0..bytes.len() {
                assert_eq!(
                    super::keyword_value_may_follow(&bytes, kend),
                    by_bytes(&bytes, kend),
                    "{:?} at {kend}",
                    String::from_utf8_lossy(&bytes)
                );
            }
        }
    }

    /// The pass for tokens on a line about a key, reading only the words the scan listed, finds
    /// what reading every byte finds, on every prompt of the corpora and on those prompts run
    /// together.
    #[test]
    fn the_listed_name_words_find_what_reading_every_byte_finds() {
        let corpus = include_str!("../../../tests/fixtures/secrets_corpus.txt");
        let heldout = include_str!("../../../tests/fixtures/secrets_heldout.txt");
        let prompts: Vec<String> = corpus
            .lines()
            .chain(heldout.lines())
            .filter(|l| !l.starts_with('#'))
            .filter_map(|l| l.split_once(" | "))
            .map(|(_, text)| text.replace("\\n", "\n"))
            .collect();
        let joined = prompts.join(" ");
        let (mut listed, mut found_by_pass) = (0, 0);
        for text in prompts.iter().chain([&joined]) {
            let mut scan = super::Scan::new(text);
            scan.run();
            if !scan.names_listed {
                continue;
            }
            let mut found = scan.found;
            found.sort_by_key(|f| (f.start, f.kind.rank()));
            let mut every_byte = found.clone();
            let by_list = super::same_line_tokens(text.as_bytes(), &mut found, Some(&scan.name_words));
            let by_bytes = super::same_line_tokens(text.as_bytes(), &mut every_byte, None);
            assert_eq!((by_list, &found), (by_bytes, &every_byte), "{text:?}");
            listed += 1;
            found_by_pass += usize::from(by_list);
        }
        assert!(
            listed > 500 && found_by_pass >= 5,
            "{listed} listed, {found_by_pass} found"
        );
    }

    #[test]
    fn adversarial_repetitions_scan_in_linear_time() {
        let units = [
            "bearer ",
            "bearer a.",
            "-----BEGIN ",
            "-----END ",
            "a://",
            "://a:",
            "sk-",
            "eyJ.",
            "eyJ-",
            "eyJaaaaaaaaaa.",
            "令牌eyJaaaaaaaaaa.eyJaaaaaaaaaa.",
            "%3D",
            "://a:b/",
            "token ",
            "token=",
            "password ",
            "AKIA",
            "xoxb-",
            "-",
            "密",
            "\n",
            "a:",
            "-p ",
            "MIIEowIBAAKCAQEAq7Bz\n",
            "~",
            "Q~",
            ".atlasv1.",
            "key",
            "<private>",
            "token=\"",
            "AKIAQ3EGRUPXZ7N4K2WB ",
            "identified by ",
            "----BEGIN RSA PRIVATE KEY----\n",
            "---- END SSH2 PRIVATE KEY ----\n",
            "Private-Lines: 1\n",
            "12345678:AA",
            "MTAJMlA4JahKDNl9sW7W6zCJ.",
            "&sig=",
            "ghp_zymMlopiWfqUyHRS\n",
            "密码",
            "密码是",
            "密码是AES-256-SHA-256-RSA-2048-",
            "パスワード：",
            "mot de passe ",
            "Passwort ist ",
            "пароль ",
            "user,password\n",
            "a,Zq8!pLm2x\n",
            "password,password,password,password,password,password,password,password\n",
            "| password | x |\n",
            "insert into t (a, password) values ('x', ",
            "insert into t (password) values ('Zq8!pLm2x'),",
            "login(",
            "auth=(\"a\", ",
            "HTTPBasicAuth(\"a\", \"Zq8!pLm2x\"",
            "htpasswd -b ",
            "Run htpasswd -b a b c d ",
            "openssl x ; curl -k y ",
            "ssh-keygen | -N ",
            "wpa_passphrase a ",
            "net user a ",
            "chpasswd ",
            "chpasswd <<E\n",
            "bob:Zq8pLm2xQ\n",
            "chpasswd <<E\nb:Zq8pLm2xQ",
            "|password|\n|Zq8pLm2xQ",
            "openssl -passin pass:",
            "ssh-keygen -N ",
            "$",
            "$6$",
            "$2b$12$",
            "$argon2id$v=19$m=1,t=1,p=1$",
            "root:x:1:0:0:0:0:0:\n",
            "bot12345678:AA",
            "rnd_",
            "A_PAT=",
            "tls:\n  secret: tls-cert-2024\n",
            "  secret: a-b-c-d ",
            "é\n",
            "user,password\nÉ,Zq8!pLm2x\n",
            "keytool -storepass ",
            "-storepass ",
            "keytool -keypass a -storepass ",
            "net use ",
            "net use \\\\a\\b ",
            "net use Z: \\\\a\\b /user:x ",
            "{SSHA}",
            "{SSHA}Lfv8HinZ/FSwhf/wQEdr2R7jSQ3MVv+f ",
            "{CRYPT}$6$",
            "pbkdf2:sha256:1$",
            "pbkdf2_sha256$1$ab$",
            "bcrypt_sha256$$2b$12$",
            "NetworkCredential(\"a\", ",
            "set_password(\"a\", \"b\", ",
            "\"x\".toCharArray(), ",
            "비밀번호",
            "비밀번호는 ",
            "비밀번호: ",
            "DB_KENNWORT=",
            "a_kennwort_",
            "_wachtwoord",
            "db_contraseña",
            "CONTRASEÑA ",
            "mot de passe\u{a0}: ",
            "keytool \\\n",
            "-storepass a \\\n",
            "userPassword:: ",
            "userPassword:: e1NTSEF9\n ",
            "NET USE ",
            "NET USE Z: \\\\a\\b ",
            "비밀번호_",
            "Пароль_БД",
            "비밀번호는 A으",
            "password:\u{a0}",
            "sha1$a$",
            "{SSHA}ThisIsNotAHashJustSomeLongerText",
        ];
        let (small, large) = scaling(|size| {
            let started = Instant::now();
            for unit in &units {
                let prompt = unit.repeat(size / unit.len());
                let _ = findings(&prompt);
                let _ = strip_private(&prompt);
            }
            started.elapsed()
        });
        assert!(large < small * 40, "20 KB took {small:?}, 200 KB took {large:?}");
    }

    /// The cost of 20 KB and of 200 KB, each the least of three runs. Scaling, not wall time (the
    /// machine may be loaded): ten times the input costs about ten times the time when linear, a
    /// hundred times when quadratic; one run may wait for a CPU, the least of three is the work.
    fn scaling(cost: impl Fn(usize) -> Duration) -> (Duration, Duration) {
        let least = |size| (0..3).map(|_| cost(size)).min().unwrap_or_default();
        (least(20_000).max(Duration::from_millis(1)), least(200_000))
    }

    #[test]
    fn a_base64_value_starting_with_a_slash_is_no_path_when_its_pieces_are_random() {
        assert_eq!(
            spans("aws_secret_access_key = /K7MDENG/bPxRfiCYzq8k2Lm3NpwJalrXUtnFEMI"),
            ["/K7MDENG/bPxRfiCYzq8k2Lm3NpwJalrXUtnFEMI"]
        );
        assert_eq!(
            spans(r#""client_secret": "/k9Xm2Pq7Rt4Lw8Zn3Vb6Yc1Hd5Fg0Js/Ae9Ui2Ow""#),
            ["/k9Xm2Pq7Rt4Lw8Zn3Vb6Yc1Hd5Fg0Js/Ae9Ui2Ow"]
        );
        // Paths: readable segments, a file's name, a version.
        assert_clean(&[
            r#""client_secret": "/etc/app/Secrets/client2024Secret.json""#,
            "secret_file = /home/Alice2/Projects/x9Kq3mZ7Lp2Rt8Vn4Bw/config",
            r#"token_path: "/var/run/secrets/kubernetes.io/serviceaccount/token""#,
            r#""secret": "/en/enterprise-server@3.0/auth""#,
        ]);
    }

    #[test]
    fn a_hex_key_in_a_urls_query_is_an_api_key_not_a_digest() {
        assert!(
            find_secret("https://api.trello.com/1/members/me/boards?key=9649bea0a24c623e0745006b40ce7b3a")
                .is_some()
        );
        assert!(
            find_secret(
                "GET https://api.steampowered.com/ISteamUser/GetPlayerSummaries/v2/?key=5A1F0C3E9B7D2468ACE13579BDF02468&steamids=1"
            )
            .is_some()
        );
        assert!(
            find_secret("curl 'https://example.com/v1/list?page=2&key=9649bea0a24c623e0745006b40ce7b3a'")
                .is_some()
        );
        // An index's key holds an entry's digest.
        assert_clean(&[
            "cache key: 9649bea0a24c623e0745006b40ce7b3a",
            "the key 9649bea0a24c623e0745006b40ce7b3a was evicted",
            "key=9649bea0a24c623e0745006b40ce7b3a",
        ]);
    }

    #[test]
    fn a_value_that_merely_starts_with_a_documented_example_is_a_secret() {
        assert!(find_secret("token: 123e4567-e89b-12d3-a456-426614174000.xK9mQ2zLp7vR4tB8nW3c").is_some());
        // The example alone, or before a plain field, stays clean.
        assert_clean(&[
            "token: 123e4567-e89b-12d3-a456-426614174000",
            "token: 123e4567-e89b-12d3-a456-426614174000. Is that right?",
        ]);
    }

    #[test]
    fn a_cookie_named_for_a_password_or_a_key_holds_a_secret() {
        for (prompt, secret) in [
            ("Set-Cookie: password=peMXWuCybEek; Path=/", "peMXWuCybEek"),
            (
                "Cookie: lang=en; private_key=wqpLmzTxkvRb; theme=dark",
                "wqpLmzTxkvRb",
            ),
            ("Cookie: api_key=hjkqwrtzpxvm", "hjkqwrtzpxvm"),
        ] {
            let (redacted, kind) = redact(prompt);
            assert!(
                kind.is_some() && !redacted.contains(secret),
                "{prompt} => {redacted}"
            );
        }
        // A cookie whose name merely ends like one is a setting.
        assert_clean(&[
            "Set-Cookie: hotkeys=enabled; Path=/",
            "Cookie: monkey=banana",
            "Set-Cookie: passport_country=DE; Path=/",
        ]);
    }

    #[test]
    fn an_escaped_quote_inside_a_value_keeps_the_value_whole() {
        for (prompt, secret) in [
            (r#"{"password": "Tr0ub4dor\"3xyzQ"}"#, "3xyzQ"),
            (r#"password="Xk9\"mQ2zLp7vR4""#, "mQ2zLp7vR4"),
            (r#"my password is "Xk9mQ2\"zLp7vR4""#, "zLp7vR4"),
        ] {
            let (redacted, kind) = redact(prompt);
            assert!(
                kind.is_some() && !redacted.contains(secret),
                "{prompt} => {redacted}"
            );
        }
        // Quoted words in a string are a quoted document's (see the escaped-JSON test).
        assert_eq!(
            spans(r#"{"prompt": "set it: {\"client_secret\": \"p8e-ibndcvsmAp9ZgPBZ606FSlYIZVlsZ-g5\"}"}"#),
            ["p8e-ibndcvsmAp9ZgPBZ606FSlYIZVlsZ-g5"]
        );
    }

    #[test]
    fn a_tag_inside_a_quoted_value_or_outside_a_code_element_is_text() {
        for (prompt, secret) in [
            (r#"<pre>password = "Xk9mQ2<i>zLp7vR4"</pre>"#, "zLp7vR4"),
            (r#"&quot;x&quot; then password = "Xk9mQ2<b>zLp7vR4""#, "zLp7vR4"),
        ] {
            let (redacted, kind) = redact(prompt);
            assert!(
                kind.is_some() && !redacted.contains(secret),
                "{prompt} => {redacted}"
            );
        }
        // Markup between code lines still splits them.
        assert_eq!(
            spans(
                "<pre><code><span>client_secret = p8e-ibndcvsmAp9ZgPBZ606FSlYIZVlsZ-g5</span></code></pre>"
            ),
            ["p8e-ibndcvsmAp9ZgPBZ606FSlYIZVlsZ-g5"]
        );
    }

    #[test]
    fn a_line_repeating_a_weak_key_or_a_cmdlet_is_scanned_in_linear_time() {
        // Each occurrence once looked back to its line's start (a weak key's qualifier) or
        // forward to its end (`-AsPlainText`): quadratic on one long line.
        for unit in ["key: abcdefgh ", "ConvertTo-SecureString "] {
            let (small, large) = scaling(|size| {
                let started = Instant::now();
                let prompt = unit.repeat(size / unit.len());
                let _ = findings(&prompt);
                let _ = strip_private(&prompt);
                started.elapsed()
            });
            assert!(
                large < small * 40,
                "{unit:?}: 20 KB took {small:?}, 200 KB took {large:?}"
            );
        }
        // The look-back still reads a qualifier: an index word's digest is no secret, a key is.
        assert_clean(&["cache key: 9649bea0a24c623e0745006b40ce7b3a"]);
        assert!(find_secret(r#"$p = ConvertTo-SecureString "Zq8!pLm2xQ" -AsPlainText -Force"#).is_some());
    }

    /// Review findings: a value the filter recognised must be redacted whole, so that neither a
    /// redacted capture nor the recall query carries the rest of it.
    #[test]
    fn review_a_recognised_value_is_redacted_whole() {
        let mut leaks = Vec::new();
        for (prompt, tail) in [
            ("DB_PASSWORD=Abcd3fGh,Xyz12Q", "Xyz12Q"),
            ("db_password: Abcd3fGh,Xyz12Q", "Xyz12Q"),
            ("spring.datasource.password=Abcd3fGh,Xyz12Q", "Xyz12Q"),
            ("DB_PASSWORD=Abcd3fGh'Xyz12Q", "Xyz12Q"),
        ] {
            let (redacted, kind) = redact(prompt);
            if kind.is_none() || redacted.contains(tail) {
                leaks.push(format!("{prompt} => {redacted}"));
            }
        }
        assert!(leaks.is_empty(), "part of a secret survives: {leaks:#?}");
    }

    /// Review findings: a quoted value of a strong key is the user's password whatever it contains
    /// (a passphrase has spaces; a generated password has `,`, `(` or `<`).
    #[test]
    fn review_quoted_and_punctuated_passwords_are_found() {
        let mut missed = Vec::new();
        for prompt in [
            r#"{"password": "correct horse battery staple"}"#,
            r#"DB_PASSWORD="correct horse battery staple""#,
            "export DB_PASSWORD='Abc!d3f Gh Xyz'",
            "DB_PASSWORD=Abc(d3f)GhXyz",
            "DB_PASSWORD=Abc<d3fGhXyz",
            "DB_PASSWORD=Abc,d3fGhXyz",
            // `%s` glued to what follows is part of a random password, not a printf slot.
            "DB_PASSWORD=Zq8%sLm2x!",
            r#"{"password": "Xy7%sKq9Lm"}"#,
        ] {
            if find_secret(prompt).is_none() {
                missed.push(prompt);
            }
        }
        assert!(missed.is_empty(), "not detected: {missed:#?}");
        assert_clean(&[
            "password = \"%s\" % pw",
            "DB_PASSWORD=user_%s",
            "token: \"Bearer %s\"",
            "auth_token = \"%s:%s\" % (a, b)",
        ]);
    }

    /// The span of a recognised value covers all of it: to the blank for an env literal, to the
    /// closing quote for a quoted one, to the next `;Name=` in a connection string; structure
    /// around a value in code stays outside.
    #[test]
    fn spans_cover_the_whole_value() {
        assert_eq!(spans("DB_PASSWORD=Abcd3fGh;Xyz12Q"), ["Abcd3fGh;Xyz12Q"]);
        assert_eq!(spans("export DB_PASSWORD=R00tP4ss! && make"), ["R00tP4ss!"]);
        assert_eq!(spans("db_password: R00tP4ss!"), ["R00tP4ss!"]);
        assert_eq!(spans("export DB_PASSWORD='Abc!d3f Gh Xyz'"), ["Abc!d3f Gh Xyz"]);
        assert_eq!(
            spans(r#"{"password": "correct horse battery staple"}"#),
            ["correct horse battery staple"]
        );
        assert_eq!(
            spans("Server=db;Password=Abc,d3fGhXyz;Database=x"),
            ["Abc,d3fGhXyz"]
        );
        assert_eq!(spans("f(password=Zq7kLm2p)"), ["Zq7kLm2p"]);
        assert_eq!(spans("{password: Zq7kLm2p}, next"), ["Zq7kLm2p"]);
        assert_eq!(spans("docker run -e 'DB_PASSWORD=Zq7kLm2p' x"), ["Zq7kLm2p"]);
        let (text, _) = redact("DB_PASSWORD=R00tP4ss!");
        assert_eq!(text, "DB_PASSWORD=[REDACTED:assignment]");
    }

    #[test]
    fn short_weak_key_values_prose_phrasings_and_real_looking_example_values_are_found() {
        for text in [
            "DB_PASS=Xk9#mQ2$vL",
            "auth=Xk9#mQ2$vL",
            "the password for prod is Zq7kLm2p",
            "my pw is Zq7kLm2p",
            "use password \"hunter2\"",
            "my password: correcthorsebatterystaple",
            "password=Example123!",
            "DB_PASSWORD=Chang3me!xxxx",
        ] {
            assert!(find_secret(text).is_some(), "not detected: {text:?}");
        }
        assert_clean(&[
            "password=example",
            "API_KEY=YOUR_API_KEY",
            "token: your-token-here",
            "SECRET_KEY=change-me",
            "password = \"<placeholder>\"",
            "cache_key = f\"user:{user_id}\"",
            "password = get_password()",
            "password: \"Please enter your password\"",
            "the password for prod is in the vault",
            "my pw is weak",
            "the token: authentication",
            "upward=Zq7kLm2p",
            "auth=enabled-by-default",
            "PASSWORD=yourpassword",
            "token = changemeplease",
            r#"{"key": "ctrl+shift+1"}"#,
            "auth=Dep@Host12",
        ]);
    }

    /// A secret word that qualifies the key (`PASSWORD_ALGORITHM`, `existingSecret`) makes it
    /// metadata; public key ids and WebSocket nonces are not secrets.
    #[test]
    fn qualified_keys_and_public_key_ids_are_not_secrets() {
        assert_clean(&[
            "PASSWORD_ALGORITHM=argon2id",
            "TOKEN_ISSUER=auth0",
            "SECRET_BACKEND=vault",
            "GITHUB_TOKEN_SCOPE=repo",
            "existingSecret: postgres-credentials-v2",
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
            "gpg --keyserver keys.openpgp.org --recv-keys 3AA5C34371567BD2",
            "gpg --default-key 0x3AA5C34371567BD2 --sign file",
            "git config --global user.signingkey 3AA5C34371567BD2",
            "PASSWORD_MIN_LENGTH=12",
            "PASSWORD_ROUNDS=10000",
        ]);
    }

    /// Values that start like a reference or a placeholder but are not one, all-digit passwords
    /// and letters-only YAML passwords are secrets; type and schema words are not.
    #[test]
    fn symbol_led_digit_and_letter_passwords_are_found_but_schema_words_are_not() {
        for text in [
            "DB_PASSWORD=$uP3r-S3cret!9",
            r#""password": "{Xk9#mQ2z""#,
            "password = '[Zt8!pq4Lm'",
            "DB_PASSWORD=-h4ck3rPw!9",
            "SECRET_KEY=/k9Fz2LqP8sT1vXyR4wN7mB0cD3eH6jU=",
            "password=!Welcome",
            "DB_PASSWORD=84619273",
            "password: 20240315",
            "password: SuperSecretPassword",
            "password: qwertyuiop",
            "  adminPassword: RoseBudGarden\n  user: admin",
            "- password: trustno-one-ever",
        ] {
            assert_eq!(findings(text).len(), 1, "not detected: {text:?}");
        }
        assert_clean(&[
            "password: $DB_PASSWORD",
            "curl -u \"$USER:$PASS\" https://ci",
            "password: !vault |",
            "password: !!binary |",
            "DB_PASSWORD=--from-env",
            "password: 2024-03-15",
            "SECRET_KEY=/etc/app/secret.key",
            "password: str",
            "password: String",
            "password: SecretStr",
            "password: string;",
            "password: required",
            "password: true",
            "password: null",
            "password: hidden",
            "password: PasswordField",
            "password: PasswordInput",
            "password: password",
            "the password: qwertyuiop is weak",
            "password: Secret",
            "password: secretRef",
            // A short word names a choice (a hashing scheme, an auth method).
            "validation:\n  password: required\n  password_confirm: confirmed",
            "hash:\n  password: Bcrypt",
            "mysql:\n  password: Native",
            "env:\n  password: Inherit",
            "fixture: AAAAAAAAAAAAAAAAAAAAAL4r7TNjQ8mZp2Vx9KcW3bF6hR1tY5uE0oI7sD4gA2jL8nM3qX6vB9wC1zP5kJ0hG4fT7yU2iO8eR3wQ6aS1dF9gH5jK+lZ0xC3vB7nM==",
            "Rosebud",
        ]);
    }

    #[test]
    fn more_commands_and_sql_take_passwords() {
        for (text, secret) in [
            ("mongosh mongodb://db:27017 -u admin -p Tq8vRw2zLp", "Tq8vRw2zLp"),
            (
                "mongo -u admin -p Tq8vRw2zLp --authenticationDatabase admin",
                "Tq8vRw2zLp",
            ),
            ("sqlcmd -S srv -U sa -P Tq8vRw2zLp -Q \"select 1\"", "Tq8vRw2zLp"),
            (
                "ldapsearch -x -D cn=admin,dc=ex -w Tq8vRw2zLp -b dc=ex",
                "Tq8vRw2zLp",
            ),
            ("ldapmodify -D cn=admin -w Tq8vRw2zLp -f x.ldif", "Tq8vRw2zLp"),
            ("smbclient //srv/share -U bob%Tq8vRw2zLp", "Tq8vRw2zLp"),
            ("lftp -u bob,Tq8vRw2zLp ftp.example.org", "Tq8vRw2zLp"),
            ("http -a bob:Tq8vRw2zLp https://api.example.org/me", "Tq8vRw2zLp"),
            (
                "ALTER USER 'root'@'localhost' IDENTIFIED BY 'Tq8vRw2zLp';",
                "Tq8vRw2zLp",
            ),
            (
                "CREATE USER app IDENTIFIED WITH caching_sha2_password BY 'Tq8vRw2zLp';",
                "Tq8vRw2zLp",
            ),
            ("CREATE USER app WITH PASSWORD 'Tq8vRw2zLp';", "Tq8vRw2zLp"),
        ] {
            assert_eq!(spans(text), [secret], "{text}");
        }
        assert_clean(&[
            "docker run -p 27017:27017 mongo:7",
            "sqlcmd -S srv -U sa -P",
            "smbclient //srv/share -U bob",
            "ldapsearch -x -W -b dc=ex",
            "see the http -a flag docs",
            "users identified by email",
        ]);
    }

    /// Provider shapes with a structure of their own (ids, separators, fixed parts).
    #[test]
    fn more_provider_shapes_are_found_whole() {
        for (token, name) in [
            ("4533314789:AAEsaJd_wyXxQPplH8ACyjkz4jmBQlm7knI", "telegram_token"),
            (
                "MTA4pShZFC8ZrXbeg_fT3pG-.h8msMl.c-T1ah9sdbEl7oX8nrEHAluvtdgDW1-In81LJK",
                "discord_token",
            ),
            (
                "sk.eyJ1Ijo6yc-jecsblnAk2vnXK6-Zy2GKlPOyJV9YZGWNkJnsrUgBhcpqIuRhWlMkU6a.g5t_Zj3aoeWqeHGwlifXjw",
                "mapbox_token",
            ),
            (
                "patVEnIKXVuuEomFK.dc6c369aad6b68b75b48e99f73f289509dddc3ebffc5ccd8099ee02cab83bb43",
                "airtable_token",
            ),
            (
                "AAAAAAAAAAAAAAAAAAAAACS6jkdFKsvw8f46QqXYilvBSbELgGOBomUOLc877%3DEgNB6bfbdUwFDrzIe3mGxHoL43ScQQYK8TUkl1JYnrw8tdVIIf",
                "twitter_token",
            ),
            (
                "EAAHmxOCTQE8phIECUyUALDgxkhOFosZYG9uVqv8ExVuo5Zbcb99JpX9M02bB3f8nUVRBoMFTXptvp7WhPvFMKFl8zE8Ajlb0cdkbx9ZFqJDGf1rB853IgN95Dc",
                "facebook_token",
            ),
            (
                "CCIPAT_i7xD93lgWk7J6rWs77hSx9_80598e7d8a50f510dc6c4393a96e78c3403049d3",
                "circleci_token",
            ),
            (
                "pcsk_CrNip_R0HjXFZfTvMUHoXTBzyTzbmncNnz5BhgJjH3LZ7wM6GKHVjk9tCSi5eIeeaAXZY",
                "pinecone_key",
            ),
            ("fo1_IYLsD6c060ZGUfpDNhmMLm43B3OjdK2OLMdNJTkzc_8", "flyio_token"),
            (
                "fm2_pRXhWNEuCbY+e3ZVMkfcDWKbFYV6RZc123ybgnl8LzRRIC7wQqVThu1r2WZxfm2rBvqZptcSyEXcg+8+8oeNu9Jchmw9pUNlWbDrio9ToGG1/ONo64osfMnadO70l5EEM43Onetvxr/BkuSzwPMg2eXVVwnDeV3yQjVPhfafwTfg+uWMvnH+iG9te7WmA9i7w8QJUr4Z",
                "flyio_token",
            ),
            ("nfp_FHCRQ44IHJ5lByNt5TPiKEuor5ClFKHu6MUb", "netlify_token"),
            ("aio_gXOsHzoMp7BKOHNfEkalT2ib0Z8v", "adafruit_key"),
            (
                "dp.st.prd.oX2D86ByvkNx5MYjCPC1zaPLvaLO7ZOE8JV45sXq",
                "doppler_token",
            ),
            (
                "dp.sa.GwpFOB1edmZ9AZnSgYWGB3c5pjdrDkfAIfAalRM8rUw",
                "doppler_token",
            ),
        ] {
            let text = format!("use {token}, thanks");
            assert_eq!(find_secret(&text), Some(SecretKind::Vendor(name)), "{token}");
            assert_eq!(spans(&text), [token]);
        }
        assert_eq!(
            spans(
                "https://a.blob.core.windows.net/c/b?sv=2022-11-02&sp=r&sig=sP2Cpfk%2BPeZJV5DIx7xu6SrYiyMUJEm%3D&x=1"
            ),
            ["sP2Cpfk%2BPeZJV5DIx7xu6SrYiyMUJEm%3D"]
        );
        assert_kind(
            SecretKind::AuthHeader,
            &["Authorization: SSWS 00DWzP9WYJof5Hzt4XJUtv2tIEpc1ke4M4innZMcWU"],
        );
        assert_clean(&[
            "the pattern and path modules",
            "sig=SIGTERM",
            "Order 1234567890:AAB shipped",
            "MTAJMlA4JahKDNl9sW7W6zCJ.IFrNYf",
            "pathlib.Path.home.joinpath.with.many.segments.that.run.on.and.on.forever.k7Qz2mWpi",
        ]);
    }

    /// Four-dash and SSH2 armors and PuTTY's private lines are private keys, whole.
    #[test]
    fn older_private_key_armors_and_putty_files_are_private_keys() {
        let block =
            "----BEGIN RSA PRIVATE KEY----\nMIIEowIBAAKCAQEAq7Bz\nab+/cd==\n----END RSA PRIVATE KEY----";
        assert_eq!(spans(&format!("key:\n{block}\nthanks")), [block]);
        let ssh2 = "---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----\nComment: \"k\"\nP2/56wAAAtw\n---- END SSH2 ENCRYPTED PRIVATE KEY ----";
        assert_eq!(spans(ssh2), [ssh2]);
        let private = "Private-Lines: 1\nAAAAIGq7BzQ2zLp9Xk\nPrivate-MAC: 5f2a9c";
        let ppk = format!("PuTTY-User-Key-File-3: ssh-ed25519\nPublic-Lines: 1\nAAAAC3NzaC1lZDI1\n{private}");
        assert_eq!(spans(&ppk), [private]);
        assert_clean(&[
            "---- BEGIN SSH2 PUBLIC KEY ----",
            "----BEGIN PRIVATE KEY-----",
            "-----BEGIN PRIVATE KEY----",
            "---BEGIN PRIVATE KEY---",
        ]);
    }

    /// A prompt of BEGIN lines without an END line: the END search is done once over the text,
    /// not once per line over a 16 KiB window.
    #[test]
    fn begin_lines_without_an_end_search_the_text_once() {
        let prompt = "-----BEGIN RSA PRIVATE KEY-----\n".repeat(200_000 / 32);
        let mut scan = super::Scan::new(&prompt);
        scan.run();
        assert_eq!(scan.found.len(), 200_000 / 32);
        assert!(
            scan.pem_searched <= 2 * prompt.len(),
            "searched {} bytes for a {}-byte prompt",
            scan.pem_searched,
            prompt.len()
        );
        // An END line further on still closes the block.
        let block = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAq7Bz\n-----END RSA PRIVATE KEY-----";
        let text = format!("{}{block}", "-----BEGIN RSA PRIVATE KEY-----\n".repeat(3));
        assert_eq!(findings(&text).last().map(|f| f.end), Some(text.len()));
    }

    /// The word for password in other languages is a key as `password` is, with the same value
    /// rules: a mapping needs a digit or symbol, prose a random-looking word.
    #[test]
    fn password_words_of_other_languages_take_the_same_values() {
        for text in [
            "mein Passwort ist Xy7!kq9Lm",
            "Passwort: Xy7!kq9Lm",
            "Kennwort: Xy7!kq9Lm",
            "mot de passe : Xy7!kq9Lm",
            "le mot de passe est Xy7!kq9Lm",
            "contraseña: Xy7!kq9Lm",
            "mi contraseña es Xy7!kq9Lm",
            "clave: Xy7!kq9Lm",
            "senha: Xy7!kq9Lm",
            "minha senha é Xy7!kq9Lm",
            "la password è Xy7!kq9Lm",
            "密码：Xy7!kq9Lm，谢谢",
            "我的密码是Xy7!kq9Lm。",
            "パスワード：Xy7!kq9Lm",
            "パスワードはXy7!kq9Lmです",
            "пароль: Xy7!kq9Lm",
            "мой пароль Xy7!kq9Lm",
            "das Passwort für prod ist Xy7!kq9Lm",
            "a senha do banco é Xy7!kq9Lm",
        ] {
            assert_eq!(spans(text), ["Xy7!kq9Lm"], "{text}");
        }
        assert_eq!(spans("clave de acceso: hunter22"), ["hunter22"]);
        assert_eq!(spans("clave secreta = \"hunter22\""), ["hunter22"]);
        assert_clean(&[
            "Passwort: ändern",
            "Das Passwort ist zu kurz.",
            "Passwortlänge: 12",
            "mot de passe oublié",
            "Le mot de passe est incorrect.",
            "la contraseña es obligatoria",
            "clave primaria: id_usuario",
            "enclave: sgx-enclave-01",
            // A bare `clave` is any key in Spanish.
            "{\"clave\": \"valor\"}",
            "clave = \"nombre\"",
            "la clave es nombre_usuario",
            "a senha é obrigatória",
            "密码：请输入",
            "密码错误，请重试",
            "密码学是一门科学",
            "密码长度：8-16位",
            "パスワードは8文字以上",
            "Пароль: обязательно",
            "пароля нет",
            "the password is Größe",
            // Hashing and encryption named after the word, in any language.
            "パスワードはAES-256で暗号化",
            "パスワードはPBKDF2-SHA256でハッシュ化",
            "密码是SHA-256哈希",
            "密码是RSA-2048加密",
            "密碼為SHA-512",
            "the password is PBKDF2-SHA256 hashed",
            "das Passwort ist SHA-256 gehasht",
            "la contraseña es AES-256",
            "a senha é argon2id",
            "пароль RSA-4096",
        ]);
        // A password that merely starts like an algorithm is still one.
        assert_eq!(spans("密码是AES-Xy7!kq9Lm"), ["AES-Xy7!kq9Lm"]);
        assert_eq!(spans("the password is sha-256-Zq8!pLm2x"), ["sha-256-Zq8!pLm2x"]);
    }

    /// A table whose header names a secret column, and a SQL `INSERT` column list: the cell in
    /// that column of each row is the column's value, judged as `password: …` is.
    #[test]
    fn table_cells_under_a_secret_column_are_values() {
        for (text, secret) in [
            ("user,password\nadmin,Zq8!pLm2x", &["Zq8!pLm2x"][..]),
            (
                "name,url,username,password\nmail,https://mail.example.org,bob,Zq8!pLm2x\nbank,https://bank.example.org,bob,Xy7!kq9Lm",
                &["Zq8!pLm2x", "Xy7!kq9Lm"],
            ),
            ("\"user\",\"password\"\n\"admin\",\"Zq8!pLm2x\"", &["Zq8!pLm2x"]),
            ("username\tpassword\nadmin\tZq8!pLm2x", &["Zq8!pLm2x"]),
            ("user,password\nÉmile,Zq8!pLm2x", &["Zq8!pLm2x"]),
            (
                "user,password\nbob,Xy7!kq9Lm\n张伟,Zq8!pLm2x",
                &["Xy7!kq9Lm", "Zq8!pLm2x"],
            ),
            (
                "| user | password |\n|---|---|\n| admin | Zq8!pLm2x |",
                &["Zq8!pLm2x"],
            ),
            (
                "| User | API key |\n| --- | --- |\n| ci | `Qm3xT8wPz1Lk9` |",
                &["Qm3xT8wPz1Lk9"],
            ),
            (
                "INSERT INTO users (name, password) VALUES ('bob', 'S3cr3t!pw')",
                &["S3cr3t!pw"],
            ),
            (
                "insert into `users` (`name`, `password`)\nvalues ('bob', 'S3cr3t!pw'), ('al', 'Xy7!kq9Lm');",
                &["S3cr3t!pw", "Xy7!kq9Lm"],
            ),
        ] {
            assert_eq!(spans(text), secret, "{text}");
        }
        assert_clean(&[
            "user,password\nadmin,changeme",
            "user,password\nadmin,Rosebud",
            "| user | password |\n|---|---|\n| ops | see vault |",
            "| Name | Description | Secret |\n|---|---|---|\n| DB_PASSWORD | The database password | yes |",
            "| Token | Meaning |\n|---|---|\n| IDENT | identifier |\n| `->` | arrow |",
            "text,tokens\nhello,5",
            "\"password\",\n\"und-PY\",",
            "return user, token\nyield from self.tokenize(var.base, VARIABLE)",
            "SELECT user,password\nFROM users WHERE id = 1",
            "INSERT INTO users (name, password) VALUES ($1, $2)",
            "INSERT INTO users (name, password) VALUES ('test', 'test')",
            "INSERT INTO users (name, password_hash) VALUES ('bob', 'abcdef123456')",
            // A token column holds lexer, design or model tokens as often as credentials.
            "| Token | Value |\n|---|---|\n| color-blue-500 | #3b82f6 |",
            "\"id\",\"token\"\n\"1\",\"hello\"",
            "INSERT INTO lexer_tokens (token, kind) VALUES ('SELECT','keyword')",
            "| Token | Count |\n|---|---|\n| ▁world | 3 |",
            // A quoted cell is judged as an unquoted one: a word is not a password.
            "\"user\",\"password\"\n\"admin\",\"Rosebud\"",
            "user,password\nadmin,correct-horse-battery",
        ]);
        assert_eq!(spans("id,token\n1,Zq8kLm2xPq7RtY4w"), ["Zq8kLm2xPq7RtY4w"]);
        assert_eq!(
            spans("| Token | Owner |\n|---|---|\n| `Qm3xT8wPz1Lk9vB2` | ci |"),
            ["Qm3xT8wPz1Lk9vB2"]
        );
    }

    /// A user and a password passed together to what names authentication: the second string is
    /// the password when it looks random.
    #[test]
    fn a_markdown_table_of_names_and_values_gives_each_secret_names_value() {
        assert_found(&[
            "Which of these do I still need?\n| Variable | Value |\n|---|---|\n| DB_HOST | db.internal |\n| DB_PASSWORD | Tr0ub4dor&3xyz |",
            "| `client_secret` | `6ed3d652a092f72343b649640341d7afcf04a734` | rotated in May |",
            "  | **Api Key** | \"q7XbN2vLp9RzT4kW8mYc\" |",
            "| password | hunter2 |",
        ]);
        assert_clean(&[
            // A header row names columns; the rows under it describe them.
            "| password | description |\n|---|---|\n| a | b |",
            "| `password` | The password used to log in |",
            "| access_token | str | The OAuth token |",
            "| password | `str` | |",
            "| `DB_PASSWORD` | `${{ secrets.DB_PASSWORD }}` |",
            "| token | <your token> |",
            "| API_KEY | your-api-key-here |",
            "| password | ******** |",
            // Not the row's first cell, or no row at all.
            "| db | password | Tr0ub4dor&3xyz |",
            "see the password | Tr0ub4dor&3xyz",
        ]);
    }

    #[test]
    fn a_table_header_is_split_once_per_line() {
        let line = format!("{}password\n", "password,".repeat(55));
        let prompt = line.repeat(200_000 / line.len());
        let mut scan = super::Scan::new(&prompt);
        scan.run();
        assert!(
            scan.table_read <= 2 * prompt.len(),
            "split {} bytes of a {}-byte prompt",
            scan.table_read,
            prompt.len()
        );
    }

    #[test]
    fn a_password_passed_with_its_user_is_found() {
        for text in [
            r#"auth=("admin", "Zq8!pLm2x")"#,
            r#"r = requests.get(url, auth=("admin", "Zq8!pLm2x"), timeout=5)"#,
            r#"requests.auth.HTTPBasicAuth("admin", "Zq8!pLm2x")"#,
            r#"aiohttp.BasicAuth(user, 'Zq8!pLm2x')"#,
            r#"client.login("user", "Zq8!pLm2x")"#,
            r#"server.login(os.environ["SMTP_USER"], "Zq8!pLm2x")"#,
            r#"db.check_password("bob", "Zq8!pLm2x")"#,
        ] {
            assert_eq!(spans(text), ["Zq8!pLm2x"], "{text}");
        }
        assert_clean(&[
            "auth = HTTPBasicAuth(user, password)",
            r#"auth=("admin", os.environ["PW"])"#,
            r#"login("user", "test")"#,
            r#"ftp.login('anonymous', 'guest@example.com')"#,
            r#"author("Jane", "Austen1")"#,
            r#"raise AuthenticationError(self.buffer, "Unexpected data received")"#,
            r#"keyring.get_credential(service, "nobody!")"#,
        ]);
    }

    /// Commands that take a password as an argument or on their input.
    #[test]
    fn password_arguments_of_more_commands_are_found() {
        for (text, secret) in [
            ("htpasswd -b .htpasswd admin Zq8!pLm2x", &["Zq8!pLm2x"][..]),
            (
                "sudo htpasswd -bc /etc/nginx/.htpasswd admin Zq8!pLm2x",
                &["Zq8!pLm2x"],
            ),
            ("htpasswd -nbBC 12 admin Zq8!pLm2x", &["Zq8!pLm2x"]),
            ("ssh-keygen -t ed25519 -N 'Zq8!pLm2x' -f key", &["Zq8!pLm2x"]),
            (
                "ssh-keygen -p -P 'Xy7!kq9Lm' -N 'Zq8!pLm2x' -f key",
                &["Xy7!kq9Lm", "Zq8!pLm2x"],
            ),
            ("wpa_passphrase MyWifi Zq8pLm2xQ", &["Zq8pLm2xQ"]),
            ("openssl rsa -in k.pem -passout pass:Zq8pLm2xQ", &["Zq8pLm2xQ"]),
            (
                "openssl pkcs12 -export -passin pass:Zq8pLm2xQ -out c.p12",
                &["Zq8pLm2xQ"],
            ),
            ("openssl enc -aes-256-cbc -k Zq8pLm2xQ -in f", &["Zq8pLm2xQ"]),
            ("mysqladmin -u root -pZq8pLm2xQ status", &["Zq8pLm2xQ"]),
            ("echo 'bob:Zq8pLm2xQ' | sudo chpasswd", &["Zq8pLm2xQ"]),
            ("chpasswd <<< 'bob:Zq8pLm2xQ'", &["Zq8pLm2xQ"]),
            (
                "chpasswd <<EOF\nbob:Zq8pLm2xQ\nalice:Xy7!kq9Lm\nEOF",
                &["Zq8pLm2xQ", "Xy7!kq9Lm"],
            ),
            ("net user bob Zq8pLm2xQ /add", &["Zq8pLm2xQ"]),
            ("C:\\> net user bob Zq8pLm2xQ /add", &["Zq8pLm2xQ"]),
            ("$ sudo htpasswd -b f bob hunterpass", &["hunterpass"]),
            ("cd /etc && htpasswd -b f bob hunterpass", &["hunterpass"]),
            ("Run `wpa_passphrase MyWifi hunterpass` once", &["hunterpass"]),
            ("then run wpa_passphrase MyWifi Zq8pLm2xQ", &["Zq8pLm2xQ"]),
            ("then run net user bob 'hunterpass'", &["hunterpass"]),
            (
                "openssl enc -k Zq8pLm2xQ -in f ; curl -k localhost:8443/health",
                &["Zq8pLm2xQ"],
            ),
        ] {
            assert_eq!(spans(text), secret, "{text}");
        }
        assert_clean(&[
            "sudo htpasswd -c /etc/nginx/.htpasswd admin",
            "htpasswd -b .htpasswd admin \"$PASSWORD\"",
            "htpasswd -D .htpasswd admin",
            "ssh-keygen -t ed25519 -N '' -f key",
            "wpa_passphrase MyWifi > /etc/wpa_supplicant.conf",
            "openssl rsa -in k.pem -passin env:KEY_PASS",
            "openssl rsa -in k.pem -passin file:pw.txt",
            "openssl s_client -connect host:443 | curl -k https://host/x",
            "printf 'bob:%s\\n' \"$PW\" | chpasswd",
            "echo \"$USER:$PASS\" | chpasswd",
            "run chpasswd at 12:30, see http://wiki/x",
            "net user bob * /add",
            "net user bob /delete",
            // Prose about the commands, not a command line.
            "Run net user to list accounts",
            "Run wpa_passphrase to generate the PSK",
            "htpasswd -b is insecure because the password shows in ps",
            "the net user output shows Guest",
            // A flag of the next command in the pipeline is not openssl's or ssh-keygen's.
            "openssl s_client -connect x:443 ; curl -k localhost:8443/health",
            "openssl s_client -connect x:443 && curl -k localhost:8443/health",
            "ssh-keygen -l -f key.pub | head -N foobarbaz",
        ]);
    }

    /// Password hashes: crypt's `$id$…` forms and `/etc/shadow` lines, whole.
    #[test]
    fn password_hashes_are_found_whole() {
        let hashes = [
            "$2b$12$xLh40/TtNxbVOzjwNGRt4k/ByGnYT64twED0L.Ut.KoxgOZfN9c.Z",
            "$2y$10$a.4FAY0uf9YJ0vCEJHCPq1gSYup6RPoGDIW6rRUOw9SLiHExHbCgU",
            "$6$Qw3rTy7u$DmHGlwkf3S8FDkOV3QRHzVHVAr3Es030RIfSmZzv4Sxzit/5V52iMbrNYh1XOZDgHnCDm6aeTRO7mBUbrMjyd0",
            "$6$rounds=5000$Qw3rTy7u$DmHGlwkf3S8FDkOV3QRHzVHVAr3Es030RIfSmZzv4Sxzit/5V52iMbrNYh1XOZDgHnCDm6aeTRO7mBUbrMjyd0",
            "$5$Qw3rTy7u$zaUsoEFj7C8ueSgHIo06cZQ8O8Mzwnv486q79jJcu53",
            "$1$Qw3rTy7u$ddlMnLC6ydCDHhc9XAnLp0",
            "$apr1$Qw3rTy7u$XcPWfs9Q5DEj5ROsgPY/I1",
            "$y$j9T$8xjH3PxySlT46Q1eIYJ0q1$4TDtY.DjumUlZJrLH.2BoGV4cD9g9257kGyXTNAXtu4",
            "$argon2id$v=19$m=65536,t=3,p=4$YhbfQBwcs5v3+LegT48zgg$kN12xFma/L/yHYktx3h6yG8XSPZ51cnkjxn9qPJJBm0",
        ];
        for hash in hashes {
            let text = format!("the users table stores {hash} for bob");
            assert_eq!(find_secret(&text), Some(SecretKind::PasswordHash), "{hash}");
            assert_eq!(spans(&text), [hash]);
        }
        assert_eq!(
            spans("admin:$$apr1$$Qw3rTy7u$$XcPWfs9Q5DEj5ROsgPY/I1"),
            ["$apr1$$Qw3rTy7u$$XcPWfs9Q5DEj5ROsgPY/I1"]
        );
        let shadow = format!(
            "root:{}:19000:0:99999:7:::\nbob:7fg8LEGAKRwpC:19000::::::",
            hashes[2]
        );
        assert_eq!(spans(&shadow), [hashes[2], "7fg8LEGAKRwpC"]);
        assert_kind(
            SecretKind::PasswordHash,
            &["bob:!7fg8LEGAKRwpC:19000:0:99999:7:::"],
        );
        assert_clean(&[
            "daemon:*:19000:0:99999:7:::",
            "bob:!:19000:0:99999:7:::",
            "root:x:0:0:root:/root:/bin/bash",
            "echo $1$2 and $6$ costs",
            "awk '{print $1$2$3}'",
            "$2b$12$ is the bcrypt prefix",
            "$1$Qw3rTy7u$ddlMnLC6ydCDHhc9XAnLp",
        ]);
    }

    /// keytool's and jarsigner's store and key passwords, and the password argument of `net
    /// use` (after the share, before or after `/user:`), plain only on a command line.
    #[test]
    fn keytool_store_passwords_and_net_use_passwords_are_found() {
        for (text, secret) in [
            (
                "keytool -list -keystore app.jks -storepass Zq8pLm2xQ",
                &["Zq8pLm2xQ"][..],
            ),
            (
                "keytool -genkeypair -alias app -keystore app.jks -storepass 'Xy7!kq9Lm' -keypass Zq8pLm2xQ -dname CN=app",
                &["Xy7!kq9Lm", "Zq8pLm2xQ"],
            ),
            (
                "keytool -importkeystore -srckeystore a.p12 -srcstorepass Zq8pLm2xQ -destkeystore b.jks -deststorepass Xy7!kq9Lm",
                &["Zq8pLm2xQ", "Xy7!kq9Lm"],
            ),
            (
                "keytool -keypasswd -alias a -srckeypass hunterpass -destkeypass Zq8pLm2xQ",
                &["hunterpass", "Zq8pLm2xQ"],
            ),
            (
                "jarsigner -keystore k.jks -storepass Zq8pLm2xQ app.jar app",
                &["Zq8pLm2xQ"],
            ),
            (
                "net use \\\\fs01\\share Zq8pLm2xQ /user:CORP\\bob",
                &["Zq8pLm2xQ"],
            ),
            ("net use Z: \\\\srv\\s /user:bob Zq8pLm2xQ", &["Zq8pLm2xQ"]),
            (
                "C:\\> net use Z: \\\\srv\\s hunterpass /persistent:no",
                &["hunterpass"],
            ),
            ("then run net use Z: \\\\srv\\s 'hunterpass'", &["hunterpass"]),
        ] {
            assert_eq!(spans(text), secret, "{text}");
            assert_eq!(find_secret(text), Some(SecretKind::CommandLine), "{text}");
            let (redacted, _) = redact(text);
            assert!(secret.iter().all(|s| !redacted.contains(s)), "{redacted}");
        }
        assert_clean(&[
            "keytool -list -keystore x.jks",
            "keytool -list -keystore x.jks -storepass changeit",
            "keytool -list -keystore x.jks -storepass:env STORE_PASS",
            "keytool -list -keystore x.jks -storepass $STORE_PASS",
            "keytool asks for -storepass with every command",
            "net use Z: \\\\srv\\share /persistent:yes",
            "net use Z: \\\\srv\\share * /user:CORP\\bob",
            "net use Z: /delete",
            "run net use Z: \\\\srv\\share with your password",
        ]);
    }

    /// Werkzeug's and Django's stored hashes (`algorithm[:params]$…$hash`) and LDAP's
    /// `{SCHEME}` hashes, whole, of their real lengths.
    #[test]
    fn werkzeug_django_and_ldap_password_hashes_are_found() {
        for hash in [
            "pbkdf2:sha256:600000$Ab3dEf6hIj9kLm2n$5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8",
            "scrypt:32768:8:1$Ab3dEf6hIj9kLm2n$51772ae082ed5f28cf9b0d74ba3df8384a076c529ebc1e68a7e9aeca2b155fde41cad2fcdfb211fb5c0e09ff985c5e5f2a678644681b3651d192faebda190e81",
            "pbkdf2_sha256$600000$Xk3mQ9zR2pLw8vT1nB4cHy$0s3yQm2kP9xLr7vT4nB1cWz8dF5gH6jK3lM9pQ2rS0u=",
            "argon2$argon2id$v=19$m=102400,t=2,p=8$dGhpc2lzYXNhbHQxMg$2BbvhuD4mWclbPJYNTOpT+T6hlDkUGjhSszFleLV1lQ",
            "bcrypt_sha256$$2b$12$xLh40/TtNxbVOzjwNGRt4k/ByGnYT64twED0L.Ut.KoxgOZfN9c.Z",
        ] {
            let text = format!("the auth_user row holds {hash} for bob");
            assert_eq!(find_secret(&text), Some(SecretKind::PasswordHash), "{hash}");
            assert_eq!(spans(&text), [hash]);
        }
        for (text, hash) in [
            (
                "userPassword: {SSHA}Lfv8HinZ/FSwhf/wQEdr2R7jSQ3MVv+f",
                "Lfv8HinZ/FSwhf/wQEdr2R7jSQ3MVv+f",
            ),
            (
                "userPassword: {SHA}ROJmJLOC3sZjQbCoA8HuEry+yDc=",
                "ROJmJLOC3sZjQbCoA8HuEry+yDc=",
            ),
            (
                "{SSHA512}1RVM/j520oLI8eKwwo+cFyflSQoeBsVlViNIze2fq4c1g1MUZMiINuVd6Zt40R60X/r3Zu2pw4oqMCzo5pCe/6MI1D9pTaKa",
                "1RVM/j520oLI8eKwwo+cFyflSQoeBsVlViNIze2fq4c1g1MUZMiINuVd6Zt40R60X/r3Zu2pw4oqMCzo5pCe/6MI1D9pTaKa",
            ),
            ("userPassword: {crypt}7fg8LEGAKRwpC", "7fg8LEGAKRwpC"),
            (
                "userPassword: {CRYPT}$6$Qw3rTy7u$DmHGlwkf3S8FDkOV3QRHzVHVAr3Es030RIfSmZzv4Sxzit/5V52iMbrNYh1XOZDgHnCDm6aeTRO7mBUbrMjyd0",
                "$6$Qw3rTy7u$DmHGlwkf3S8FDkOV3QRHzVHVAr3Es030RIfSmZzv4Sxzit/5V52iMbrNYh1XOZDgHnCDm6aeTRO7mBUbrMjyd0",
            ),
        ] {
            assert_eq!(find_secret(text), Some(SecretKind::PasswordHash), "{text}");
            assert_eq!(spans(text), [hash]);
            assert!(!redact(text).0.contains(hash));
        }
        assert_clean(&[
            "the {SHA} scheme is weak",
            "{SHA}abc123",
            // Words run together, of a salted SHA-1's length, are not its base64.
            "{SSHA}ThisIsNotAHashJustSomeLongerText",
            "olcPasswordHash: {SSHA}",
            "Django uses pbkdf2_sha256 by default",
            "the format is pbkdf2_sha256$<iterations>$<salt>$<hash>",
            "pbkdf2:sha256:600000$salt$hash",
            "PASSWORD_HASHERS = [\"django.contrib.auth.hashers.ScryptPasswordHasher\"]",
            "scrypt:32768:8:1 is werkzeug's default method",
        ]);
    }

    /// C#'s `NetworkCredential`, Java's `PasswordAuthentication` (its `char[]` from a string),
    /// and keyring's `set_password`, whose password is the third argument.
    #[test]
    fn credential_constructors_and_keyring_passwords_are_found() {
        for text in [
            r#"var cred = new NetworkCredential("svc", "Zq8!pLm2x");"#,
            r#"client.Credentials = new System.Net.NetworkCredential("svc", "Zq8!pLm2x", "CORP");"#,
            r#"return new PasswordAuthentication("svc", "Zq8!pLm2x".toCharArray());"#,
            r#"keyring.set_password("smtp", "svc", "Zq8!pLm2x")"#,
        ] {
            assert_eq!(spans(text), ["Zq8!pLm2x"], "{text}");
        }
        // A client id (a UUID) before the secret is an identifier, and does not hide the secret.
        assert_eq!(
            spans(
                r#"new ClientSecretCredential(tenant, "04b07795-8ddb-461a-bbee-02f9e1bf7b46", "Zq8!pLm2x")"#
            ),
            ["Zq8!pLm2x"]
        );
        assert_clean(&[
            "new NetworkCredential(user, password)",
            r#"new NetworkCredential("svc", Environment.GetEnvironmentVariable("PW"))"#,
            r#"new PasswordAuthentication(user, pw.toCharArray())"#,
            r#"keyring.set_password("smtp", "svc", password)"#,
            r#"keyring.get_password("smtp", "svc")"#,
            r#"CredentialCache.GetCredential(uri, "Basic")"#,
            r#"store.GetCredentials("svc", "nobody!")"#,
            // A tenant and a client id are identifiers, a certificate's path is not a secret.
            r#"new ClientSecretCredential("72f988bf-86f1-41af-91ab-2d7cd011db47", "04b07795-8ddb-461a-bbee-02f9e1bf7b46", secret)"#,
            r#"new ClientCertificateCredential(tenantId, "04b07795-8ddb-461a-bbee-02f9e1bf7b46", "certs/app-cert.pem")"#,
            // A call that configures authentication is given a scheme, not a user and password.
            r#"services.AddAuthentication("Cookies", "Zq8!pLm2xQ7")"#,
            r#"app.UseAuthentication("Bearer", "Zq8!pLm2xQ7")"#,
            r#"builder.WithAuthentication("Basic", "Zq8!pLm2xQ7")"#,
            r#"ConfigureAuthentication("Oidc", "Zq8!pLm2xQ7")"#,
        ]);
    }

    /// The foreign words for password in capitals, French's no-break space before its colon,
    /// Korean and Dutch, and a foreign word as a segment of a longer key.
    #[test]
    fn more_languages_capitals_and_foreign_words_inside_keys_are_found() {
        for text in [
            "CONTRASEÑA: Xy7!kq9Lm",
            "PASSWORT: Xy7!kq9Lm",
            "KENNWORT=Xy7!kq9Lm",
            "MOT DE PASSE : Xy7!kq9Lm",
            "SENHA: Xy7!kq9Lm",
            "ПАРОЛЬ: Xy7!kq9Lm",
            "Mot de passe\u{a0}: Xy7!kq9Lm",
            "mot de passe\u{202f}: Xy7!kq9Lm",
            "비밀번호: Xy7!kq9Lm",
            "비밀번호=Xy7!kq9Lm",
            "비밀번호는 Xy7!kq9Lm입니다",
            "새 비밀번호가 Xy7!kq9Lm 입니다",
            "wachtwoord: Xy7!kq9Lm",
            "mijn wachtwoord is Xy7!kq9Lm",
            "DB_KENNWORT=Xy7!kq9Lm",
            "db_contraseña=Xy7!kq9Lm",
            "APP_WACHTWOORD=Xy7!kq9Lm",
            "db_пароль=Xy7!kq9Lm",
            "DB_비밀번호=Xy7!kq9Lm",
            "export SMTP_PASSWORT_PROD=Xy7!kq9Lm",
        ] {
            assert_eq!(spans(text), ["Xy7!kq9Lm"], "{text}");
        }
        assert_clean(&[
            "mijn wachtwoord vergeten",
            "비밀번호를 재설정하는 방법",
            "비밀번호는 8자 이상이어야 합니다",
            "비밀번호는 SHA-256으로 암호화됩니다",
            "비밀번호가 틀렸습니다",
            "Mot de passe\u{a0}: oublié",
            "CONTRASEÑA: <tu contraseña>",
            "KENNWORTLÄNGE=12",
            "DB_KENNWORT_FILE=/run/secrets/db",
            "wachtwoordbeleid: sterk",
        ]);
    }

    /// Tokens without a prefix of their own next to the word that names them: a `PAT` key, Render's
    /// `rnd_` keys, a Telegram bot token glued to `bot` in its API URL.
    #[test]
    fn pat_keys_render_keys_and_telegram_urls_are_found() {
        for (text, secret) in [
            (
                "AZURE_DEVOPS_PAT=laygowxn7lzdwcw2fklp3uzukryx5qgdvjj2b6v6ppl7zlkvpsc4",
                "laygowxn7lzdwcw2fklp3uzukryx5qgdvjj2b6v6ppl7zlkvpsc4",
            ),
            (
                "azure_devops_pat: 4rd6x73hquzoqm63p3p25vsrcqf2xxeu6i5yjzgur2shznyrlr7x",
                "4rd6x73hquzoqm63p3p25vsrcqf2xxeu6i5yjzgur2shznyrlr7x",
            ),
            (
                "the render key is rnd_CJVdlUPVL83Ly16QoA3jYSRO9wUvqywL",
                "rnd_CJVdlUPVL83Ly16QoA3jYSRO9wUvqywL",
            ),
            (
                "curl https://api.telegram.org/bot7312345678:AAszJCy5YY3-1-_sAeHib8jz6jZfhY56y12/sendMessage",
                "7312345678:AAszJCy5YY3-1-_sAeHib8jz6jZfhY56y12",
            ),
        ] {
            assert_eq!(spans(text), [secret], "{text}");
        }
        assert_eq!(
            find_secret("RENDER_API_KEY=rnd_CJVdlUPVL83Ly16QoA3jYSRO9wUvqywL rest"),
            Some(SecretKind::Assignment)
        );
        assert_clean(&[
            r#"_IPV4_PAT = r"(?:[0-9]{1,3}\.){3}[0-9]{1,3}""#,
            r#"_UNRESERVED_PAT = r"ABCDEFGHIJKLMNOPQRSTUVWXYZk7Qz2mWpijklmnopqrstuvwxyz0123456789._\-~""#,
            r#"date_pat = r"\d{4}-\d{2}-\d{2}""#,
            "echo \"$CR_PAT\" | docker login ghcr.io -u USERNAME --password-stdin",
            "path = pathlib.Path(pat)",
            "rnd_seed = 42",
            "rnd_generator_for_the_benchmark_suite",
            "https://api.telegram.org/bot<token>/sendMessage",
            "the robot12345678:AAH arm",
            // An alphabet has every letter once: high entropy, no randomness.
            r#"let pat = "k7Qz2mWpijklmnopqrstuvwxyz";"#,
            r#"ALPHABET_PAT = "ABCDEFGHIJKLMNOPQRSTUVWXYZk7Qz2mWpijklmnopqrstuvwxyz0123456789""#,
            "the api key is k7Qz2mWpijklmnopqrstuvwxyz0123456789",
        ]);
        assert_eq!(spans(r#"let pat = "qZ8mTk3LwP9xRv2N""#), ["qZ8mTk3LwP9xRv2N"]);
    }

    /// Withheld for nothing before: a cookie's attributes alone, a Kubernetes secret's name, and a
    /// documented default where the password is the user again.
    #[test]
    fn cookie_attributes_secret_names_and_user_as_password_are_not_secrets() {
        assert_clean(&[
            "Set-Cookie: Path=/; HttpOnly; SameSite=Lax",
            r#"response.headers["Set-Cookie"] = "Path=/; HttpOnly; SameSite=Lax""#,
            "tls:\n  secret: tls-cert-2024",
            "amqp://guest:guest@localhost:5672/",
            "postgres://postgres:postgres@localhost/db",
            "curl -u admin:admin http://localhost:8080",
        ]);
        for text in [
            "Set-Cookie: __Host-session=Zq8pLm2xQ7; Path=/; Secure; HttpOnly",
            "secret: hunter-2",
            "secret: Zq8-pLm2x-Qw3",
            // A memorable password under a bare key is not an object's name.
            "secret: blue-river-42-sky",
            "app:\n  secret: blue-river-42-sky",
            "amqp://guest:Zq8pLm2x@rabbit:5672/",
            "curl -u admin:Zq8pLm2x http://localhost:8080",
        ] {
            assert_eq!(findings(text).len(), 1, "not detected: {text:?}");
        }
    }

    /// A short letters-only password counts where `key=value` is a literal (an env or properties
    /// line, a shell assignment, a flag); in code, INI-style `key = value` and YAML the same word
    /// is a variable or a setting's choice (`password = hashed`, `password: Bcrypt`), so it does
    /// not, and stand-ins never do.
    #[test]
    fn short_letters_only_passwords_count_as_literals_only() {
        assert_kind(
            SecretKind::Assignment,
            &[
                "password=Rosebud",
                "export DB_PASSWORD=Rosebud",
                "spring.datasource.password=Rosebud",
                // Weak, but typed as the password: a literal, not a slot.
                "password=secret",
                "Password=myPassword;",
            ],
        );
        assert_kind(SecretKind::CommandLine, &["mysqldump --password Rosebud shop"]);
        assert_clean(&[
            "password=changeme",
            "password=password",
            "password=your_password",
            "password: required",
            "password = hashed",
        ]);
    }

    /// A weak literal where a password stands is the password (a config line's word, a URL's
    /// userinfo, a credential class's argument); a name in code, the slot's own name and the user
    /// again are not.
    #[test]
    fn weak_literals_in_a_passwords_place_count_and_references_do_not() {
        assert_kind(
            SecretKind::Assignment,
            &[
                "user = Aladdin\npassword = open_sesame",
                r#"sender.Credentials = new NetworkCredential("ops@example.com", "vzihlaquknriqlht");"#,
            ],
        );
        assert_kind(
            SecretKind::UrlCredentials,
            &[
                "postgresql://user:secret@localhost/db",
                "mysql://app:myPassword@db:3306/shop",
            ],
        );
        assert_clean(&[
            "password = new_password",
            "password = user_input",
            "payload = read_line()\npassword = payload",
            "password = none",
            "password = decoded;",
            "$password = goodspec;",
            "password_auth = disabled",
            "password_rotation = quarterly",
            "password_auth_method = kerberos",
            "password = enabled",
            "docker run -e POSTGRES_PASSWORD=test postgres:16",
            "postgresql://user:password@localhost/db",
            "mongodb://mongodb:mongodb@localhost:27017/db",
            r#"new NetworkCredential("svc", "password")"#,
        ]);
    }

    /// A value followed by a Korean or Japanese case particle is a means or an object, not the
    /// password; a copula or the end after it still makes it one. A particle before a colon is a
    /// mapping.
    #[test]
    fn cjk_case_particles_after_a_value_say_it_is_not_the_password() {
        assert_clean(&[
            "비밀번호는 AES256-GCM으로 암호화됩니다",
            "비밀번호는 Argon2id로 해시됩니다",
            "비밀번호는 Xk3mQ9zR2pLw7을 포함할 수 없습니다",
            "비밀번호는 KeyVault2에서 가져옵니다",
            "パスワードはAES256-GCMで暗号化されます",
            "パスワードはVault2を使って保存します",
        ]);
        for text in [
            "비밀번호는 Xk3mQ9zR2pLw7입니다",
            "비밀번호는 Xk3mQ9zR2pLw7",
            "パスワードはXk3mQ9zR2pLw7です",
            "パスワードはXk3mQ9zR2pLw7でした",
            "パスワードはXk3mQ9zR2pLw7。",
            "비밀번호는: Xk3mQ9zR2pLw7",
        ] {
            assert_eq!(spans(text), ["Xk3mQ9zR2pLw7"], "{text}");
        }
    }

    /// ldapsearch and slapcat print a password attribute's value in base64 after `::`.
    #[test]
    fn ldif_base64_password_values_are_found() {
        let b64 = "e1NTSEF9TGZ2OEhpblovRlN3aGYvd1FFZHIyUjdqU1EzTVZ2K2Y=";
        for text in [
            format!("userPassword:: {b64}"),
            format!("dn: uid=bob,ou=people,dc=example,dc=org\nuserPassword:: {b64}\nmail: bob@example.org"),
            format!("olcRootPW:: {b64}"),
        ] {
            assert_eq!(spans(&text), [b64], "{text}");
            assert_eq!(find_secret(&text), Some(SecretKind::Assignment), "{text}");
        }
        // A value wrapped onto continuation lines is redacted with them.
        let text = format!(
            "userPassword:: {}\n {}\nmail: bob@example.org",
            &b64[..30],
            &b64[30..]
        );
        let (redacted, _) = redact(&text);
        assert_eq!(
            redacted,
            "userPassword:: [REDACTED:assignment]\nmail: bob@example.org"
        );
        assert_clean(&[
            "description:: VGhpcyBpcyBhIGRlc2NyaXB0aW9u",
            "userPassword:: xxxxxxxxxxxx",
            "let h = password::hash(input);",
            "use crate::password::Hasher;",
        ]);
    }

    /// A command continued onto the next line (`\`, PowerShell's backtick, cmd's `^`) still names
    /// the command on its next lines.
    #[test]
    fn keytool_passwords_on_continued_lines_are_found() {
        for (text, secret) in [
            (
                "keytool -genkey -keystore k.jks \\\n  -storepass Xk3mQ9zR2pLw7 \\\n  -keypass Zq8pLm2xQ",
                &["Xk3mQ9zR2pLw7", "Zq8pLm2xQ"][..],
            ),
            (
                "keytool \\\n  -list -keystore k.jks \\\n  -storepass hunterpass",
                &["hunterpass"],
            ),
            (
                "keytool -importkeystore `\r\n  -srcstorepass Xk3mQ9zR2pLw7 `\r\n  -destkeystore b.jks",
                &["Xk3mQ9zR2pLw7"],
            ),
            (
                "keytool -list ^\n  -storepass hunterpass ^\n  -v",
                &["hunterpass"],
            ),
        ] {
            assert_eq!(spans(text), secret, "{text}");
        }
        // A line that ends without a continuation ends the command.
        assert_clean(&["keytool -list -keystore k.jks\n-storepass Xk3mQ9zR2pLw7 goes on the next one"]);
    }

    /// Django's and Werkzeug's hash forms with a stand-in where the hash goes are not hashes;
    /// Django's legacy salted SHA-1 and MD5 are.
    #[test]
    fn stand_in_django_hashes_are_clean_and_legacy_ones_are_found() {
        assert_clean(&[
            "pbkdf2_sha256$600000$salt$xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "scrypt$dollars$aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "md5$salt$00000000000000000000000000000000",
            "the legacy format is sha1$<salt>$<hash>",
        ]);
        for hash in [
            "sha1$Xk3mQ9zR$2fd4e1c67a2d28fced849ee1bb76e7391b93eb12",
            "md5$Xk3mQ9zR$9e107d9d372bb6826bd81d3542a419d6",
        ] {
            let text = format!("auth_user.password = {hash}");
            assert_eq!(spans(&text), [hash], "{text}");
            let text = format!("the row has {hash}, is it still read?");
            assert_eq!(spans(&text), [hash], "{text}");
            assert_eq!(find_secret(hash), Some(SecretKind::PasswordHash), "{hash}");
        }
    }

    /// An LDAP scheme before readable words of a hash's length is not a hash.
    #[test]
    fn ldap_schemes_before_words_are_not_hashes() {
        assert_clean(&[
            "{SSHA}ThisIsNotAHashJustSomeLongerText",
            "{SHA}ThisIsNotAHashJustSomeTextX",
            "{MD5}PlaceholderValueHere12==",
        ]);
        assert_kind(SecretKind::PasswordHash, &["{MD5}CY9rzUYh03PK3k6DJie09g=="]);
    }

    /// A foreign word for password before a `-` is not the compound's head: a policy, a length.
    #[test]
    fn foreign_hyphen_compounds_and_policies_are_not_keys() {
        assert_clean(&[
            "Die Passwort-Richtlinie ist NIST800-63b",
            "Die Passwort-Regel lautet NIST800-63b",
            "Die Passwort-Richtlinie ist NIST-800-63b-rev2",
            "Die Passwort-Richtlinie: NIST-800-63b-rev2",
            "het wachtwoord_beleid: NIST800-63b",
            "la contraseña_política: NIST800-63b",
            "비밀번호_정책: NIST800-63b",
        ]);
        for text in [
            "Das WLAN-Passwort ist Xk3mQ9zR2pLw7",
            "passwort-prod: Xk3mQ9zR2pLw7",
            "DB_KENNWORT=Xk3mQ9zR2pLw7",
        ] {
            assert_eq!(spans(text), ["Xk3mQ9zR2pLw7"], "{text}");
        }
    }

    /// No-break spaces after a colon are spaces: never part of a value or its span.
    #[test]
    fn no_break_spaces_after_a_colon_are_not_part_of_the_value() {
        assert_clean(&[
            "Mot de passe\u{a0}:\u{a0}oublié",
            "mot de passe\u{202f}:\u{202f}oublié ?",
        ]);
        for text in [
            "Mot de passe\u{a0}:\u{a0}Xk3mQ9zR2pLw7",
            "mot de passe\u{202f}:\u{202f}Xk3mQ9zR2pLw7",
            "password:\u{a0}Xk3mQ9zR2pLw7",
        ] {
            assert_eq!(spans(text), ["Xk3mQ9zR2pLw7"], "{text:?}");
        }
    }

    /// Windows commands in capitals or with a tab, a digit after a foreign key word, and foreign
    /// words as key segments in their own script.
    #[test]
    fn capitals_tabs_digits_and_foreign_segments_are_found() {
        for text in [
            "NET USE Z: \\\\srv\\share Xk3mQ9zR2pLw7",
            "NET USER bob Xk3mQ9zR2pLw7",
            "Net User bob Xk3mQ9zR2pLw7 /add",
            "net use\tZ: \\\\srv\\share Xk3mQ9zR2pLw7",
            "DB_KENNWORT2=Xk3mQ9zR2pLw7",
            "Пароль_БД=Xk3mQ9zR2pLw7",
            "비밀번호_확인: Xk3mQ9zR2pLw7",
            "비밀번호는: Xk3mQ9zR2pLw7",
        ] {
            assert_eq!(spans(text), ["Xk3mQ9zR2pLw7"], "{text}");
        }
        assert_clean(&[
            "NET USER bob /DELETE",
            "NET USE Z: /DELETE",
            "Net user growth was 12% this quarter",
            "Passwortänderung: Xk3mQ9zR2pLw7 ist alt",
        ]);
    }

    #[test]
    fn any_assignment_or_argument_syntax_carries_a_secret_words_value() {
        for text in [
            "DB_PASSWORD ?= Xk9mQ2zLp4Rt",
            "API_TOKEN ::= Xk9mQ2zLp4Rt7Hw",
            "API_TOKEN :::= Xk9mQ2zLp4Rt7Hw",
            "$password .= \"Xk9mQ2zLp4Rt\";",
            "var dbPassword string = \"Xk9mQ2zLp4Rt\"",
            "const apiKey string = \"Xk9mQ2zLp4RtWq8e\"",
            "let password: &str = \"Xk9mQ2zLp4Rt\";",
            "val secretKey: String = \"Xk9mQ2zLp4RtWq8e\"",
            "config.put(\"password\", \"Xk9mQ2zLp4Rt\");",
            "set(\"api_key\", \"Xk9mQ2zLp4RtWq8eYt5u\")",
            "<password>Xk9mQ2zLp4Rt</password>",
            "[database]\npassword =\n    Xk9mQ2zLp4Rt",
            "twilio auth token - b156d7585e022bc2495105450aac4272",
            "password <- \"Xk9mQ2zLp4Rt\"",
            "if (apikey == \"m{{h}o)p${e]nob(ody[finds>-_$#thisone}}\") {",
            "sourcegraph: 9c3Fa81bD4e07aC2f5B96d1E8a3c0F7b2D4e6A91",
            "facebook 4718293640512837|Qm7vT2xLp9RkWc4ZyN8bHd3sFj6",
        ] {
            assert!(find_secret(text).is_some(), "not detected: {text:?}");
        }
        assert_clean(&[
            "var dbPassword string = os.Getenv(\"DB_PASSWORD\")",
            "let password: &str = \"\";",
            "password ?= $(DB_PASSWORD)",
            "config.put(\"password\", password);",
            "<password>${DB_PASSWORD}</password>",
            "curl -u \"${{ env.ELK_ID }}:${{ env.ELK_PASS }}\" https://elk.test",
            "keycloak realm public key: MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA7G3BRtoMRxoN1alJou8",
            "The publishable key pk_live_w1O4bH4mSLmepCUL09W35IOg is safe in the browser",
            "sumOfExposures = 3Kof2VffNQ0QgYIhXUPJosVlCaQKm2hfpWE6F1fT9YGY74blQBIPsrkCcf1TwKE5;",
            "password := \"somefakekey\"",
            "client_secret=bP88Q~xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
            "oktaKey = 00000000000000000000000000000000000TUVWXYZ",
            "export OP_SERVICE_ACCOUNT_TOKEN=ops_eyJzaWduSW5BZGRyZXNzIjoiaHR0cHM6...",
        ]);
    }

    /// Hand-made values count down or every other character as well as up: filler, not keys;
    /// a prefix followed by one count alone is filler however short.
    #[test]
    fn counting_down_or_interleaved_is_hand_made() {
        assert_clean(&[
            "--set global.licenseKey=a1b2c3d4e5f6g7h8i9j0k1l2m3n4o5p6q7r8NRAL",
            "--set chart.deployKey=px-dep-d4c3b2a1-f6e5-h8g7-j1i8-p5o0n5m3l2k1",
            "api_key = \"zyxwvutsrqponmlkjihgfedcba\"",
            "\"token1\": \"xoxp-1234567890\"",
        ]);
        assert_found(&[
            "api_key = \"k9Qm2Lx7Rv4Tz8Wp3Ny6Hb1Jd5Fs0Gc\"",
            "\"token\": \"xoxp-5028163947-7736201938475-Qm2Lx7Rv4Tz8Wp3Ny6Hb1Jd5\"",
        ]);
    }

    /// A table's column named by a weak word (`key`) holds a key when its cell looks generated;
    /// a Go composite literal after a key is code.
    #[test]
    fn weak_table_columns_and_composite_literals() {
        let text =
            "| service | key | owner |\n|---|---|---|\n| wit | 1ZLU5OXGEYX56K3IOL1Z88Y5YU5CC1KK | ops |";
        assert_eq!(spans(text), ["1ZLU5OXGEYX56K3IOL1Z88Y5YU5CC1KK"], "{text}");
        assert_clean(&[
            "| name | key | note |\n|---|---|---|\n| retries | max_retries | how often |",
            "SecretParts:  map[string]string{\"key\": resMatch},",
            "Token: []byte{0x01, 0x02},",
        ]);
    }

    /// A key named in a name field has its value in the value field after it.
    #[test]
    fn a_name_fields_key_takes_the_value_fields_value() {
        for text in [
            "env:\n- name: DB_PASSWORD\n  value: Zk3n8QwL2xVb7Rt5Yp1Mc9Ds",
            "{\"name\":\"API_TOKEN\",\"value\":\"Zk3n8QwL2xVb7Rt5Yp1Mc9Ds\"}",
            "{\"ParameterKey\": \"ApiSecret\", \"ParameterValue\": \"Zk3n8QwL2xVb7Rt5Yp1Mc9Ds\"}",
            "Key: api_token, Value: Zk3n8QwL2xVb7Rt5Yp1Mc9Ds",
            "variable \"db_password\" {\n  type    = string\n  default = \"Zk3n8QwL2xVb7Rt5Yp1Mc9Ds\"\n}",
        ] {
            assert_eq!(spans(text), ["Zk3n8QwL2xVb7Rt5Yp1Mc9Ds"], "{text}");
        }
        assert_clean(&[
            "- name: DB_PASSWORD\n  valueFrom:\n    secretKeyRef:\n      name: db\n      key: password",
            "{\"name\":\"API_TOKEN\",\"value\":\"${API_TOKEN}\"}",
            "- name: TOKEN_TTL\n  value: \"3600\"",
            "- name: SECRET_NAME\n  value: my-app-secret",
            "variable \"api_token\" {}\nvariable \"region\" {\n  default = \"eu-west-1b7\"\n}",
            "{\"name\":\"API_TOKEN\"}, {\"label\": \"x\", \"value\": \"Zk3n8QwL2xVb7Rt5Yp1Mc9Ds\"}",
        ]);
    }

    /// A generated token on a line that speaks of a key with no syntax between them is found;
    /// digests, ids, public keys and words on such lines are not.
    #[test]
    fn a_generated_token_on_a_line_about_a_key() {
        for (text, token) in [
            (
                "the new one for oopspam is a9PxCUoI7bCKQogm47qpznV3hu49kO0Qduc4025t, does the SDK cache the old key?",
                "a9PxCUoI7bCKQogm47qpznV3hu49kO0Qduc4025t",
            ),
            (
                "rotated the token yesterday: xyclb6zdiq9hyexe74ah4lvp3ea02sbv works now",
                "xyclb6zdiq9hyexe74ah4lvp3ea02sbv",
            ),
            (
                "heads up: the staging creds are kARx6uGgPqBkho0jzPNfgnAduN3hDjBY until Friday",
                "kARx6uGgPqBkho0jzPNfgnAduN3hDjBY",
            ),
        ] {
            assert_eq!(spans(text), [token], "{text}");
        }
        assert_clean(&[
            "the token refresh was fixed in 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39, see the key rotation doc",
            "key id 550e8400-e29b-41d4-a716-446655440000 belongs to the staging tenant",
            "The token endpoint returns 400 for request 01HZX3K9N4QW7E2R5T8Y6U1I0P, see the trace",
            "token refresh failed for trace-id 4bf92f3577b34da6a3ce929d0e0e4736 twice",
            "add this public key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl",
            "the token lives in https://vault.example.com/v1/secret/data/Xk9mQ2zR7pLw4vBn8cTy",
            "the key is generated by createHmacSha256SigningKeyFromSecretMaterial in the SDK",
            "the sha256 of the token bundle is 9b74c9897bac770ffc029102a200c5de0a1b2c3d4e5f60718293a4b5c6d7e8f9",
        ]);
    }

    /// A provider's word glued to its value by a dash names it as a separator would; a slug or
    /// a hex build suffix does not.
    #[test]
    fn a_provider_word_glued_by_a_dash() {
        let text = "see abyssale-ffCQRQ5V0FxJOZTOWs5iXCfRP15Ea8s6YchSx9KY in the log";
        assert_eq!(
            spans(text),
            ["ffCQRQ5V0FxJOZTOWs5iXCfRP15Ea8s6YchSx9KY"],
            "{text}"
        );
        assert_clean(&[
            "abyssale-docs-for-the-v2-api-released",
            "the image adobe-4f3c2a1b9e8d7c6b5a4f3e2d1c0b9a8f is stale",
        ]);
    }

    /// A strong key's long run of digits is its secret; a count or a timestamp's key is no key.
    #[test]
    fn a_strong_keys_long_digits_are_a_secret() {
        assert_eq!(
            spans("secret = \"9734741337193905126710251\""),
            ["9734741337193905126710251"]
        );
        assert_clean(&[
            "token_expiry = 1700000000000000000",
            "max_tokens = 1000000000000000000",
        ]);
    }

    #[test]
    fn a_weak_keys_identifier_or_key_path_is_a_name() {
        assert_clean(&[
            "cache key: user:1234:profile:v2",
            "redis key: session:9f3a2b:cart",
            "key: someVeryLongCamelCaseIdentifierName",
            "key: SomeConfigurationValueForTheService",
            "hash key: userIdTimestampComposite",
            "key: tenant/42/settings/theme",
            "the memcached key: catalog:item:88231:price",
            "partition key: orders#2024-05#eu-west",
            "sort key: createdAt#order:7731",
            r#"redis key = "rate_limit:api:203.0.113.7:minute""#,
            "key: ShoppingCartCheckoutSessionState",
            "primary key: OrderLineItemIdentifier",
        ]);
        // Generated, however it is written, it is still a key.
        assert_eq!(
            spans("key: Xk9mQ2zLp4RtWq8eYt5u7vB3nM6c"),
            ["Xk9mQ2zLp4RtWq8eYt5u7vB3nM6c"]
        );
        assert_eq!(
            spans("cache key: Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1Fg5J"),
            ["Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1Fg5J"]
        );
        assert_eq!(
            spans("key: abc:Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1Fg5J"),
            ["abc:Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1Fg5J"]
        );
        assert!(find_secret("key: hTqPwZmXvKcRbNfLgYdJsAeUoWiQ").is_some());
    }

    #[test]
    fn a_cookies_plain_value_is_a_setting_and_a_generated_one_a_session() {
        assert_clean(&[
            "Set-Cookie: lang=en-US; Path=/",
            "cookie: consent=accepted",
            "Set-Cookie: theme=dark; Path=/; SameSite=Lax",
            "Set-Cookie: locale=fr-FR; Path=/; Secure",
            "Cookie: currency=EUR",
            "set-cookie: sidebar=collapsed; Max-Age=31536000",
            "Cookie: tz=Europe/Berlin",
            "request had Cookie: view=grid; density=compact",
            r#"document.cookie = "theme=dark; path=/";"#,
            r#""cookie": "lang=en-US; consent=yes""#,
            "curl -b 'lang=en; theme=dark' https://example.com",
            "curl -b cookies.txt https://example.com",
        ]);
        assert_eq!(
            spans(r#"curl -s -b "sid=Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1; lang=en" https://example.com"#),
            ["Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1"]
        );
        assert!(find_secret(r#""cookie": "lang=en-US; session=Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1""#).is_some());
        assert_eq!(
            spans(r#"requests.get(url, cookies={"lang": "en", "session": "Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1"})"#),
            ["Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1"]
        );
        assert_clean(&[
            r#"requests.get(url, cookies={"lang": "en-US", "theme": "dark"})"#,
            r#"cookies = {"session": session_id}"#,
        ]);
        assert!(find_secret("Cookie: sessionid=q8f3kz0v9w2mx7pl4rt6yb1nc5").is_some());
        assert!(find_secret("Set-Cookie: PHPSESSID=el4ukv0kqbvoirg7nkp4dncpk3; path=/").is_some());
        assert!(
            find_secret(
                "Set-Cookie: connect.sid=s%3AqW9xL2mT8vR4nK7pZ1cY5bH3.Fj6dG0sA9eU2iO8wQ4rT7yN1mK5lP3; Path=/; HttpOnly"
            )
            .is_some()
        );
        // A session among plain cookies is found, and only it is redacted.
        assert_eq!(
            spans("Cookie: theme=dark; session=Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1; lang=de"),
            ["Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1"]
        );
    }

    #[test]
    fn a_cookie_line_over_4_kb_or_ending_in_blanks_before_its_quote_does_not_panic() {
        // A `Cookie:` line longer than the 4 KB window, a map opened on it.
        assert_eq!(find_secret(&format!("Cookie: {{{}", "x".repeat(4100))), None);
        assert_eq!(find_secret(&format!("Cookie: a=b; {}", "x".repeat(4100))), None);
        // A session at the head of a long line is still read.
        assert!(
            find_secret(&format!(
                "Cookie: theme=dark; sid=Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1; {}",
                "x ".repeat(2100)
            ))
            .is_some()
        );
        // A quoted cookie argument whose last pair is followed by blanks before its quote.
        assert_eq!(
            spans("curl -b 'sid=Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1; ' https://example.com"),
            ["Zr8Qm2Lx9Tp4Wv7Nc3Kb6Hd1"]
        );
        assert_clean(&["curl -b ' ' x", r#"curl -b "a=b; " x"#, "curl -b ''"]);
    }

    #[test]
    fn a_vendors_documented_emulator_and_example_keys_are_no_secret() {
        const AZURITE: &str =
            "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
        assert_clean(&[
            &format!("AccountName=devstoreaccount1;AccountKey={AZURITE}"),
            &format!(
                "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey={AZURITE};BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;"
            ),
            &format!("AZURE_STORAGE_KEY={AZURITE}"),
            &format!(r#"azurite account key is "{AZURITE}""#),
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
        ]);
        // One character off, or another account's key, is a key like any other.
        let changed = AZURITE.replace("GMGw==", "GMGx==");
        assert!(find_secret(&format!("AccountKey={changed}")).is_some());
        assert!(
            find_secret(
                "AccountName=prod;AccountKey=Qm7vT2xL9pR4wK8zN3cY6bH1fJ5dG0sA9eU2iO8wQ4rT7yN1mK5lP3zX6cV0bB9qW2eR4tY6uI8oP0aS1dF3gH5jK7lZ9xC=="
            )
            .is_some()
        );
    }

    #[test]
    fn random_mixed_case_letters_are_a_password_and_words_run_together_are_names() {
        for text in [
            r#"config.setPassword("ImOIVBfPhQYm");"#,
            r#"conn.set_password("ImOIVBfPhQYm")"#,
            r#"props.put("password", "ImOIVBfPhQYm");"#,
            r#"System.setProperty("javax.net.ssl.keyStorePassword", "ImOIVBfPhQYm");"#,
            r#"auth = HTTPBasicAuth("deploy", "ImOIVBfPhQYm")"#,
            r#"ds.setPassword("qWeRtYzXmKpL");"#,
            r#"client.set_password("TbHvQkRmWxZn")"#,
            r#"settings.put("db.password", "GhJkLzXcVbNm");"#,
            r#"requests.get(url, auth=HTTPBasicAuth("svc", "PqRsTuVwXyZa"))"#,
            r#"props.setProperty("mail.smtp.password", "NdFgHjKlQwEr");"#,
        ] {
            let value = text.split('"').rev().nth(1).unwrap();
            assert_eq!(spans(text), [value], "{text}");
        }
        assert_clean(&[
            "config.setPassword(password);",
            "config.setPassword(getPassword());",
            r#"props.put("password", pwd);"#,
            r#"props.setProperty("password", "PasswordField");"#,
            r#"builder.setPassword("DefaultPassword")"#,
            r#"settings.put("db.password", "ChangeMePlease");"#,
            r#"auth = HTTPBasicAuth("deploy", "XMLHttpRequest")"#,
            // Unquoted in code, a name code goes on after or uses again is a variable.
            "password = rndPwdStr;",
            "password = rndPwdStr\nconnect(user, rndPwdStr)",
        ]);
        assert_eq!(spans("password: KqWzRtYhNbVm"), ["KqWzRtYhNbVm"]);
    }

    #[test]
    fn a_letters_only_password_in_prose_or_piped_to_a_login_is_found() {
        assert_eq!(
            spans("the staging db password is ImOIVBfPhQYm, can you connect?"),
            ["ImOIVBfPhQYm"]
        );
        assert_eq!(
            spans("the prod redis password is TbHvQkRmWxZn, rotate it tomorrow"),
            ["TbHvQkRmWxZn"]
        );
        assert_eq!(spans("密码：ImOIVBfPhQYm"), ["ImOIVBfPhQYm"]);
        assert_eq!(spans("密码: qWeRtYzXmKpL"), ["qWeRtYzXmKpL"]);
        assert_eq!(
            spans(r#"echo "Xk29fLmQp3" | docker login --username deploy --password-stdin"#),
            ["Xk29fLmQp3"]
        );
        assert_eq!(
            spans("echo 'Qm7vT2xL9p' | docker login ghcr.io -u bot --password-stdin"),
            ["Qm7vT2xL9p"]
        );
        assert_eq!(
            spans(r#"printf '%s' "Zr8Qm2Lx9Tp4" | podman login --username ci --password-stdin quay.io"#),
            ["Zr8Qm2Lx9Tp4"]
        );
        assert_eq!(
            spans(r#"docker login -u ci --password-stdin <<< "Hq7vLm2Rx9""#),
            ["Hq7vLm2Rx9"]
        );
        assert_eq!(
            spans(r#"ConvertTo-SecureString "Xk29fLmQp3" -AsPlainText -Force"#),
            ["Xk29fLmQp3"]
        );
        assert_eq!(
            spans("$secure = ConvertTo-SecureString 'Hq7!vLm2Rx' -AsPlainText -Force"),
            ["Hq7!vLm2Rx"]
        );
        assert_eq!(
            spans(r#"convertto-securestring -String "Pw9zKq4Lx2" -AsPlainText -Force"#),
            ["Pw9zKq4Lx2"]
        );
        assert_eq!(
            spans("$ echo KqWzRtYhNbVm | sudo -S systemctl restart nginx"),
            ["KqWzRtYhNbVm"]
        );
        assert_eq!(
            spans(r#"echo "Hq7vLm2Rx9" | passwd --stdin deploy"#),
            ["Hq7vLm2Rx9"]
        );
        assert_clean(&[
            "echo $PW | sudo -S true",
            "cat pw.txt | sudo -S ls",
            r#"echo "Hq7vLm2Rx9" | ssh -S /tmp/sock host"#,
            r#"echo "$REGISTRY_TOKEN" | docker login ghcr.io -u bot --password-stdin"#,
            "cat token.txt | docker login --username deploy --password-stdin",
            "aws ecr get-login-password | docker login --username AWS --password-stdin 1234.dkr.ecr.aws",
            "ConvertTo-SecureString $plain -AsPlainText -Force",
            "ConvertTo-SecureString -String $env:DB_PASS -AsPlainText -Force",
            "ConvertTo-SecureString (Get-Content .\\pw.txt) -AsPlainText -Force",
            r#"ConvertTo-SecureString "Xk29fLmQp3""#,
            "the prod redis password is RotatedWeekly, ask ops",
            r#"echo "Xk29fLmQp3" | grep Xk"#,
        ]);
    }

    #[test]
    fn a_digest_after_a_bare_key_word_is_an_entry_and_after_a_qualified_one_a_key() {
        assert_found(&[
            "master key: 4b9e07c2d15a8f36e7019bd42c5fa863",
            "encryption key: 9d2c4f71a08e3b56c7e1904fd2b8a635",
            "signing key = 0f7a3e91c52bd6480e1f7c93a25bd064",
            "private key: c81f04a9e7d23b65f0a19c4e8d72b360",
            "secret key: 6e0b9d3a7f12c845e9d03a6b1f7c2e48",
            "Ocp-Apim-Subscription-Key: 06b2852c5de0abe82ca2121c21140e91",
            "the lemlist key 24203d9f149dd02d1d944ee799cfb57e stopped working",
        ]);
        assert_clean(&[
            "cache key: 4b9e07c2d15a8f36e7019bd42c5fa863",
            "key: 9d2c4f71a08e3b56c7e1904fd2b8a635",
            "md5 key: 0f7a3e91c52bd6480e1f7c93a25bd064",
            "etag key c81f04a9e7d23b65f0a19c4e8d72b360",
            "object key: 6e0b9d3a7f12c845e9d03a6b1f7c2e48",
            "cache_key = 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12",
        ]);
    }

    #[test]
    fn a_base64_key_may_start_with_a_plus() {
        assert_eq!(
            spans(
                "AccountName=prod;AccountKey=+grqXYZ40BXQaeH9aAJ0M1M++388u7C3e+s8BvfGGMl5CoO/Iqqz1hJVRrzam/WWLKFoGQFvFmLKe0/X4ageHo==;EndpointSuffix=core.windows.net"
            ),
            ["+grqXYZ40BXQaeH9aAJ0M1M++388u7C3e+s8BvfGGMl5CoO/Iqqz1hJVRrzam/WWLKFoGQFvFmLKe0/X4ageHo=="]
        );
        assert_eq!(
            spans("DB_PASSWORD=+Vq9LmZ2xR7tK4wP8nB3"),
            ["+Vq9LmZ2xR7tK4wP8nB3"]
        );
        assert_clean(&[
            "var q = 'password = '+password;",
            r#"msg = "token: "+tokenValue2"#,
        ]);
    }

    #[test]
    fn camel_word_share_tells_random_letters_from_identifiers() {
        use super::random_letters;
        for random in ["ImOIVBfPhQYm", "qWeRtYzXmKpL", "TbHvQkRmWxZn", "hYtReWqAsDfG"] {
            assert!(random_letters(random.as_bytes()), "{random}");
        }
        for name in [
            "getUserName",
            "PasswordField",
            "XMLHttpRequest",
            "PostgreSQL",
            "phpMyAdmin",
            "KeePassXC",
            "MSAppHost",
            "userIdTimestampComposite",
            "JavaScript",
            "userPwdTxt",
            "cfgDbPwd",
            "rndPwdStrVal",
        ] {
            assert!(!random_letters(name.as_bytes()), "{name}");
        }
    }

    /// Counts end to end are filler however short, side by side or every other character; a
    /// random value of that length, or one with a count only in part, is still a secret.
    #[test]
    fn short_counts_end_to_end_are_filler() {
        assert_clean(&[
            "myintervals_key = abcdef12345",
            "myintervals_token = z9y8x7w6v5u",
            "COINLIB_ACCESS_TOKEN=b1c2d3e4f5g6h7i8",
            "formcraft_key=1234567890abcdef",
            "ipinfo_secret key=abcdef12345678",
        ]);
        assert_found(&[
            "api_token = q7Wm2xR9kL4v",
            "api_key = \"Qz7pL2abcdefRw9\"",
            "password = abcdef9Qz!x",
        ]);
    }

    /// A run of one character is filler only where nothing generated comes before it: a key padded
    /// out after 16 or more random characters is still a key, under a prefix or a key word.
    #[test]
    fn filler_only_in_part_is_no_filler() {
        assert_found(&[
            "stripe_key=sk_test_51H5Z3jGXvP5CVwYOLLllllllllllllllllllllllll",
            "why does sk_live_Qm7xR2vL9pW4kZ8nB3TtZZZZZZZZZZZZ fail?",
            "password = \"Xk9mQ2zLp7vR4wT8000000\"",
        ]);
        assert_clean(&[
            "sk_test_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
            "sk_live_51H5Zlllllllllllllllllllllllllllll",
            "ghp_abcdefghijklmnop000000000000000000000",
            "password = \"abcdefghijklmnopqr000000\"",
        ]);
    }

    /// A count typed in alternating case, the digits between its letters counting too, is filler
    /// wherever it stands; one break in the alternation or in the count makes it a value again.
    #[test]
    fn counts_typed_in_alternating_case_are_filler() {
        assert_clean(&[
            "myregistry.azurecr.io password: A1bC2dE3fH4iJ5kL6mN7oP8qR9sT0u/+",
            "password: Q1rS2tU3vW4xY5zA6bC7dE8f",
            "client_secret = \"zY9xW8vU7tS6rQ5pO4nM3\"",
            "export DB_PASSWORD=aBcDeFgHiJkLmNoP",
        ]);
        assert_found(&[
            // Letters counting, digits not.
            "password: A7bC2dE9fH4iJ1kL6mN3oP8qR5sT0u/+",
            // Case not alternating (`bc`).
            "password: A1bc2dE3fH4iJ5kL6mN7oP8qR9sT0u",
            // A count interrupted by a pair (`Xy`), as in a value that only looks like a count.
            "AccountKey=Xy9aB8cD7eF6gH5iJ4kL3mN2oP1qR0sT9uV8wX7yZ6aB5cD4eF3gH2iJ1kL0mN9oP8q==",
            "password: Xk9mQ2zLp7vR4wT8nB3hJ6cF",
        ]);
    }

    /// Base64 of filler (a sentence calling itself an example, counts end to end) is filler;
    /// base64 of random bytes, or of structured text with a count in part, is still a secret.
    #[test]
    fn base64_of_filler_is_filler() {
        assert_clean(&[
            "instabot SECRET_KEY=Ym9va21hcmsgZXhhbXBsZSBpbnN0YWJvdCBrZXkgMDE=",
            "instabot TOKEN:VGhpcyBpcyBhbiBpbnN0YWJvdCBhcGkgdG9rZW4gZXhhbXBsZQ==",
            "reachmailSecret=YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXoxMjM0NTY3ODkwQUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo",
        ]);
        assert_found(&[
            "api_secret = \"q8Zr3mK1vX0pL7wN2cT5yB9dF4hJ6sA1\"",
            "api_secret = \"3q9vUQ8rS0kM1Hc2yZ7bN4xJ6wT5pL0d+fA9gR2eK8o=\"",
            "fullstory_key = \"dXNlcjp7Y29uZmlybWVkOnRydWUsImt1cmEiOiJlbGVuaXZlIERlZlo6ZGJ0OnRydWU9YWJjZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXo=\"",
        ]);
    }

    /// The literal default of an environment lookup is the secret when the variable names one,
    /// in every language's lookup; a stand-in default, or a variable that names no secret, is not.
    #[test]
    fn a_lookups_fallback_and_a_set_unless_set_literal_are_the_secret() {
        assert_found(&[
            "api_key = os.environ.get('API_KEY') or 'q9XbN2vLp7RzT4kW8mYc3dF'",
            "$token = getenv('GITLAB_TOKEN') ?: 'q9XbN2vLp7RzT4kW8mYc3dF';",
            "token = ENV['DEPLOY_TOKEN'] || 'q9XbN2vLp7RzT4kW8mYc3dF'",
            "secret = os.environ['SECRET_KEY'] or 'Vq7#mZ2pL9xKw'",
            "ENV['STRIPE_SECRET'] ||= 'q9XbN2vLp7RzT4kW8mYc3dF'",
            "@api_key ||= \"q9XbN2vLp7RzT4kW8mYc3dF\"",
            "config.password &&= 'Vq7#mZ2pL9xKw'",
        ]);
        assert_clean(&[
            "api_key = os.environ.get('API_KEY') or ''",
            "api_key = os.environ.get('API_KEY') or None",
            "token = ENV['TOKEN'] || 'changeme'",
            "token = ENV['TOKEN'] || default_token",
            "@token ||= fetch_token",
            "password ||= ENV['DB_PASSWORD']",
            "if password || token then retry end",
        ]);
    }

    #[test]
    fn an_environment_lookups_literal_default_is_the_secret() {
        for (text, value) in [
            (
                "os.environ.get('DJANGO_SECRET_KEY','wwf*2#86t64!fgh6yav$aoeuo@u2o@fy&*gg76q!&%6x_wbduad')",
                "wwf*2#86t64!fgh6yav$aoeuo@u2o@fy&*gg76q!&%6x_wbduad",
            ),
            (
                "os.getenv(\"API_KEY\", \"Zq8pLm2xW7vR4tK9bN3c\")",
                "Zq8pLm2xW7vR4tK9bN3c",
            ),
            (
                "x = os.environ.get(\"X_TOKEN\", default=\"Zq8pLm2xW7vR4tK9bN3c\")",
                "Zq8pLm2xW7vR4tK9bN3c",
            ),
            (
                "foo(process.env.API_KEY || \"Zq8pLm2xW7vR4tK9bN3c\")",
                "Zq8pLm2xW7vR4tK9bN3c",
            ),
            (
                "foo(process.env.SECRET ?? 'Zq8pLm2xW7vR4tK9bN3c')",
                "Zq8pLm2xW7vR4tK9bN3c",
            ),
            (
                "psql -W ${DB_PASSWORD:-Zq8pLm2xW7vR4tK9bN3c}",
                "Zq8pLm2xW7vR4tK9bN3c",
            ),
            (
                "x = ENV.fetch(\"SECRET_KEY_BASE\") { \"Zq8pLm2xW7vR4tK9bN3cQ1\" }",
                "Zq8pLm2xW7vR4tK9bN3cQ1",
            ),
            (
                "x = System.getenv().getOrDefault(\"API_KEY\", \"Zq8pLm2xW7vR4tK9bN3c\");",
                "Zq8pLm2xW7vR4tK9bN3c",
            ),
        ] {
            assert_eq!(spans(text), [value], "{text}");
        }
        assert_clean(&[
            "SECRET_KEY = os.environ.get('DJANGO_SECRET_KEY', '')",
            "SECRET_KEY = os.environ.get('DJANGO_SECRET_KEY', 'changeme')",
            "SECRET_KEY = os.environ.get('DJANGO_SECRET_KEY', None)",
            "x = os.environ.get('SECRET_KEY', default=None)",
            "x = os.getenv('DB_PASSWORD', 'your-password-here')",
            "const password = process.env.FIREBASE_DEV_PASSWORD || \"not-set\"",
            "x = process.env.API_TOKEN || ''",
            "debug = os.environ.get('DEBUG_MODE', 'wwf*2#86t64!fgh6yav$aoeuo')",
            "psql -W ${DB_PASSWORD:-}",
        ]);
    }

    /// A provider's two-letter abbreviation glued to a credential word and a value names the
    /// provider (`dd-apikey-…`, `dd_secret_key-…`); alone, or before any other word, it is text.
    #[test]
    fn a_providers_abbreviation_before_a_credential_word_names_it() {
        for (text, value) in [
            (
                "dd-apikey-dd52c29224affe29d163c6bf99e5c34f",
                "dd52c29224affe29d163c6bf99e5c34f",
            ),
            (
                "dd_secret_key-3c0c3965368a6b10f7640dbda46abfdca981c2d3",
                "3c0c3965368a6b10f7640dbda46abfdca981c2d3",
            ),
        ] {
            assert_eq!(spans(text), [value], "{text}");
        }
        assert_clean(&[
            "dd-trace-0e536995152fe074ce4b97c5d430cb39",
            "dd_build-75a693efd01bcc1fd177842cfc0add33cae7197f",
            "dd-mm-yyyy is the format, then dd if=/dev/zero of=disk.img bs=1M count=64",
            "dd: 3cbc7223133d327a52638de8947bd196",
        ]);
    }

    #[test]
    fn an_identifier_of_abbreviated_words_is_a_name_not_a_password() {
        assert_clean(&[
            "const password = userPwdTxt",
            "password = cfgDbPwd",
            "password = rndPwdStrVal",
            "let secret = appCfgStr;",
        ]);
        // Random letters stay a password.
        assert!(find_secret("password = ImOIVBfPhQYm").is_some());
        assert!(find_secret("password = TbHvQkRmWxZn").is_some());
    }

    #[test]
    fn a_quoted_replys_markers_leave_its_lines_as_they_were() {
        assert_found(&[
            "> SSHpassword=swordfish",
            "> > DB_PASSWORD=marmalade",
            "On Tue, ops wrote:\n> password: Tq7vLm2pZx\n\nthanks",
            ">\tpassword = open_sesame",
        ]);
        // A table, a CSV row and a REPL line read inside a quote as outside it.
        assert_found(&[
            "> | service | key | owner |\n> |---|---|---|\n> | numverify | aeo8h39fhjoa5txhrx633ad7t5ozankv | ops |",
            "> service,credential,owner\n> billing,gL1LKFp8p0q7ORUybiyovqIuGUsGjx4adxMRcHPh,team-a",
            ">>> api_key = \"Zk3n8QwL2xVb7Rt5Yp1Mc9Ds\"",
        ]);
        assert_clean(&[
            "> password=$DB_PASSWORD",
            "> the password field is required",
            "> password: ${{ secrets.DB }}",
            "> | service | key | owner |\n> |---|---|---|\n> | numverify | see the vault | ops |",
            "echo done\n> out.log",
        ]);
    }

    #[test]
    fn a_redacted_key_passed_as_curls_user_is_found_no_more() {
        let text = "curl -u \"k7Qz2mWp9Lx!t:\" https://localhost:9200";
        let (redacted, kind) = redact(text);
        assert!(kind.is_some());
        assert_eq!(find_secret(&redacted), None, "{redacted}");
    }

    #[test]
    fn curls_proxy_user_carries_the_proxys_password() {
        assert_eq!(
            spans("curl --proxy-user admin:Tq7vLm2pZx https://x.test"),
            ["Tq7vLm2pZx"]
        );
        assert_eq!(
            spans("curl -x http://proxy:3128 -U bob:Lm2p9Zx!q https://x.test"),
            ["Lm2p9Zx!q"]
        );
        assert_clean(&[
            "curl --proxy-user admin: https://x.test",
            "curl -U $PROXY_USER:$PROXY_PASS https://x.test",
            "curl --proxy-user \"${USER}:${PASS}\" https://x.test",
            "tar -U -xf archive.tar",
        ]);
    }

    #[test]
    fn an_elements_closing_tag_ends_its_value() {
        assert_eq!(
            spans("<o3_db_password>Tq7vLm2pZx9</o3_db_password>"),
            ["Tq7vLm2pZx9"]
        );
        assert_clean(&[
            "<o3_variable_password>${password}</o3_variable_password>",
            "<db2_secret_key>%env(DB_SECRET)%</db2_secret_key>",
            "<svc9_api_token>{{ token }}</svc9_api_token>",
        ]);
    }

    #[test]
    fn a_reference_cut_at_a_values_end_is_still_a_reference() {
        assert_clean(&[
            "04_variable_password: ${{password}}",
            "db_password: ${{ secrets.DB_PASSWORD }}",
        ]);
        assert!(find_secret("db_password: ${{x}}Tq7vLm2pZx").is_some());
    }

    #[test]
    fn a_positional_format_slot_makes_a_template() {
        assert_clean(&[
            r#"format_password = "prefix_{}".format(dynamic_value1)"#,
            r#"secret_key = "key_{0}_{1}".format(a, b)"#,
        ]);
        assert!(find_secret(r#"password = "Tq7vLm2p{Zx9""#).is_some());
        assert!(find_secret(r#"password = "Tq7vLm2pZx9{12345}""#).is_some());
    }

    #[test]
    fn a_quoted_call_without_arguments_is_code() {
        assert_clean(&[
            r#"variable_password8 = "obj.aFunctionCall()";"#,
            r#"const secret = 'config.getSecret()';"#,
        ]);
        assert!(find_secret(r#"password = "Tq7v(Lm2)pZx""#).is_some());
        assert!(find_secret(r#"password = "Tq7vLm2pZx9()!""#).is_some());
    }

    #[test]
    fn githubs_prefixes_are_lowercase() {
        assert_clean(&[
            "name: GHP_THISISACONSTANTNAMEOFTHESAMELENGTHAS",
            "GHS_TOKENDOCUMENTATIONLINKTEXTPLACEHOLDERS1",
        ]);
        assert_eq!(
            spans("token ghp_nQcwYQyT2h5gMpngMc29Xzq2qL0aB7dE9kFz"),
            ["ghp_nQcwYQyT2h5gMpngMc29Xzq2qL0aB7dE9kFz"]
        );
    }

    #[test]
    fn a_password_hash_that_says_it_is_made_up_is_a_stand_in() {
        assert_clean(&[
            "<passwordHash>#jbcrypt:$2a$10$fakefn2U3jfdByqbHc.fake9ejqu//fake9p8P222cdfwjdnMFdxS</passwordHash>",
        ]);
        assert!(
            find_secret("#jbcrypt:$2a$10$Qm7vXz2pLk9RtY4wNb8sUe1cJ6hGf3dA5iK0oP7lMnB2qW9xZvE4y").is_some()
        );
    }

    #[test]
    fn an_xml_entrys_name_element_names_its_value_elements_secret() {
        assert_found(&[
            "<entry>\n    <key>password</key>\n    <value>Tq7vLm2pZx</value>\n</entry>",
            "<item><name>db.password</name><value>hunter2-blue</value></item>",
            "<entry>\n  <key>api_token</key>\n  <value>Lm2pZx9Tq7vRk4Wb8Nc3</value>\n  <info>prod</info>\n</entry>",
        ]);
        assert_clean(&[
            "<entry>\n    <key>password</key>\n    <value></value>\n</entry>",
            "<entry>\n    <key>password</key>\n    <value>${DB_PASSWORD}</value>\n</entry>",
            "<entry>\n    <key>username</key>\n    <value>Tq7vLm2pZx</value>\n</entry>",
            "<entry><key>password_length</key><value>16</value></entry>",
            "<key>password</key>\n<other>x</other>\n<key>user</key>\n<value>alice</value>",
        ]);
    }

    #[test]
    fn a_template_parameters_default_is_its_value() {
        assert_found(&[
            "Parameters:\n  DBPassword:\n    Description: Database password\n    Type: String\n    Default: Tq7vLm2pZx9",
            r#""MasterUserPassword": {"Type": "String", "NoEcho": true, "Default": "Lm2p9Zx!qTk4"}"#,
            "> AdminPassword:\n>   Type: String\n>   Default: 'Rk4Wb8Nc3Tq7'",
        ]);
        assert_clean(&[
            "DBPassword:\n  Type: String\n  NoEcho: true\nDBUser:\n  Default: Tq7vLm2pZx9",
            r#""DBPassword": {"Type": "String", "NoEcho": true}, "DBUser": {"Default": "Tq7vLm2pZx9"}"#,
            "DBPassword:\n  Type: String\n  Default: !Ref AdminPassword",
            "DBPassword:\n  Description: the default is set by the pipeline\n  Type: String",
        ]);
    }

    #[test]
    fn an_accounts_word_glued_to_pass_names_its_password() {
        assert_found(&[
            "jdbc:mysql://localhost/authority?user=admin&userpass=hunter2x",
            "DBPASS=swordfish9",
            "rootPass: 'marmalade7'",
        ]);
        assert_clean(&[
            "bypass=marmalade",
            "compass=north",
            "surpass: expectations",
            "userpass=$USER_PASS",
            "mydbpass=true",
        ]);
    }

    #[test]
    fn a_jwes_five_segments_are_a_token() {
        let jwe = "eyJhbGciOiJSU0EtT0FFUCIsImVuYyI6IkEyNTZHQ00ifQ.OKOawDo13gRp2ojaHV7LFpZcgV7T6DVZKTyKOMTYUmKoTCVJRgckCL9kiMT03JGeipsEdY3mx_etLbbWSrFr05kLzcSr4qKAq7YN7e9jwQRb23nfa6c9d-StnImGyFDbSv04uVuxIp5Zms1gNxKKK2Da14B8S4rzVRltdYwam_lDp5XnZAYpQdb76FdIKLaVmqgfwX7XWRxv2322i-vDxRfqNzo_tETKzpVLzfiwQyeyPGLBIO56YJ7eObdv0je81860ppamavo35UgoRdbYaBcoh9QcfylQr66oc6vFWXRcZ_ZT2LawVCWTIy3brGPi6UklfCpIMfIjf7iGdXKHzg.48V1_ALb6US04U3b.5eym8TW_c8SuK0ltJ3rpYIzOeDQz7TALvtu6UG9oMo4vpzs9tX_EFShS8iB7j6jiSdiwkIr3ajwQzaBtQD_A.XFBoMYUZodetZdvTiFvSkQ";
        assert_eq!(
            spans(&format!("the gateway returned {jwe} as the session")),
            [jwe]
        );
        let direct = "eyJhbGciOiJkaXIiLCJlbmMiOiJBMTI4R0NNIn0..q8Zk2vLm7TpX4wRb.Nc3Tq7vLm2pZx9Rk4Wb8Nc3T.Yp1Mc9Ds5Fh2Jk7L";
        assert_eq!(spans(&format!("cookie: {direct}")), [direct]);
        assert_clean(&[
            "eyJhbGciOiJSU0EtT0FFUCIsImVuYyI6IkEyNTZHQ00ifQ.abc.def",
            "eyJhbGciOiJSU0EtT0FFUCIsImVuYyI6IkEyNTZHQ00ifQ is the header",
            "eyJhbGciOiJkaXIiLCJlbmMiOiJBMTI4R0NNIn0..q8Zk.Nc3T.Yp1M",
        ]);
    }

    #[test]
    fn a_diffs_first_column_and_a_line_number_gutter_are_layout() {
        assert_found(&[
            "```diff\n+| service | key | owner |\n+|---|---|---|\n+| numverify | aeo8h39fhjoa5txhrx633ad7t5ozankv | ops |\n```",
            "@@ -1,2 +1,3 @@\n user = Aladdin\n-password = hunter2\n+password = open_sesame",
            "error: invalid config\n 11 | [SupportSite]\n 12 | Username=thisismyunsername\n 13 | Password=Tq7vLm2pZx",
        ]);
        assert_clean(&[
            "error: invalid config\n 11 | -----BEGIN PRIVATE KEY-----\n 12 | xxx\n 13 | -----END PRIVATE KEY-----",
            "```diff\n-password = $OLD_PASSWORD\n+password = ${{ secrets.DB_PASSWORD }}\n```",
            "10 | 20 | 30 are the totals",
        ]);
    }

    #[test]
    fn a_list_items_marker_is_layout() {
        assert_found(&[
            "Notes from the call:\n* user = Aladdin\n* password = open_sesame",
            "Steps:\n1. edit smtp.conf\n2. password = marmalade_sky",
            "* [SupportSite]\n* Username=thisismyunsername\n* Password=thisismypassword",
        ]);
        assert_clean(&[
            "* password = $DB_PASSWORD",
            "2. set the password in the vault",
            " * @param password the user's password",
        ]);
    }

    #[test]
    fn a_pages_line_level_tags_break_its_lines() {
        assert_eq!(
            spans("<p>I ran<br>\ncurl -u developer:yqDVtkqPECriaLRi<br>\nwhy does this fail?</p>"),
            ["yqDVtkqPECriaLRi"]
        );
        assert!(find_secret("<p>config:<br>user = Aladdin<br>password = open_sesame</p>").is_some());
        // A page's paragraph, its entities decoded: `&lt;password&gt;…` is an element.
        assert_eq!(spans("<p>my password is yjFcoHmQK52</p>"), ["yjFcoHmQK52"]);
        assert_eq!(
            spans("<p>&lt;password&gt;Hq8vN2pLxQ7&lt;/password&gt;</p>"),
            ["Hq8vN2pLxQ7"]
        );
        assert_clean(&["<p>fn check(password: &amp;str) -&gt; bool { hash(password) == self.hash }</p>"]);
        assert_clean(&[
            "<p>curl -u &lt;user:password&gt; https://test.com/endpoint<br>\n</p>",
            "<p>password = $DB_PASSWORD<br>\ntoken: ${{ secrets.TOKEN }}</p>",
            "line one<br>\nline two<br>\n<li>item</li>",
        ]);
    }

    /// C#'s verbatim and interpolated strings (`@"…"`, `$"…"`) around a slot's own name are the
    /// name; around a random literal they hold the secret.
    #[test]
    fn a_string_prefix_around_a_slots_name_is_no_secret() {
        assert_clean(&[
            "private const string ServicePasswordSecretKey = @\"Password\";",
            "static readonly string ApiTokenSecretKey = $\"Token\";",
        ]);
        assert_found(&["public const string SmtpPassword = @\"r9T!vQ2#mZ8pL4wX\";"]);
    }

    /// A lower-case variable naming the secret, handed on in a call's argument list split over
    /// lines, holds the secret; the literal in the same place is one.
    #[test]
    fn a_variable_naming_the_secret_in_an_argument_list_is_no_secret() {
        assert_clean(&[
            "conn = connect(\n    host=db_host,\n    password=db_password,\n    port=5432,\n)",
            "client = Client(\n    api_key=staging_api_key,\n    timeout=30,\n)",
        ]);
        assert_found(&[
            "conn = connect(\n    host=db_host,\n    password=\"Wq8!zL3vR6tY\",\n    port=5432,\n)",
            "client = Client(\n    api_key=\"c4Tz9QmW2xLp7VbN8rKs\",\n    timeout=30,\n)",
        ]);
    }

    /// A tool's name and its version under a weak key (a cache key, a lock key) is a label.
    #[test]
    fn a_name_and_its_version_under_a_weak_key_is_a_label() {
        assert_clean(&[
            "    cache-key: node-20.11.x",
            "lock_key = terraform-1.7.5",
            "key: gradle@8.6",
        ]);
        assert_found(&["    cache-key: nV7qZ2xL9mT4wK8p"]);
    }

    /// A value that is a sentence about itself (`this-is-my-token`) stands in for the secret; a
    /// passphrase of words without a verb among them is one.
    #[test]
    fn a_sentence_in_the_secrets_place_stands_in_for_it() {
        assert_clean(&[
            "token: \"this-is-my-token\"",
            "API_SECRET=\"it_is_not_a_real_secret\"",
            "password = 'this.is.just.a.test'",
        ]);
        assert_found(&[
            "password = \"lantern-orbit-mossy-quartz\"",
            "API_SECRET=\"tundra_Falcon_Orbit_97\"",
        ]);
    }

    /// `SAMPLE` in capitals inside a value marks it as documentation, as `EXAMPLE` does; the
    /// same value without it is a key.
    #[test]
    fn the_sample_marker_makes_a_value_a_stand_in() {
        assert_clean(&[
            "AWS_SECRET_ACCESS_KEY=SAMPLEq8Zr2LmVx5Tk9Wb3Yn7Hc1Pf4Dj6Gs0A",
            "aws_session_token = \"Fq8Zr2LmVx5Tk9Wb3SAMPLEYn7Hc1Pf4Dj6Gs0A2Bb4Cc\"",
        ]);
        assert_found(&["AWS_SECRET_ACCESS_KEY=Wq8Zr2LmVx5Tk9Wb3Yn7Hc1Pf4Dj6Gs0A2Bb4Cc"]);
    }

    /// After a vendor's prefix, two characters in turn are typed filler, as one repeated is.
    #[test]
    fn two_characters_in_turn_after_a_prefix_are_filler() {
        assert_clean(&[
            "GH_TOKEN=ghp_cdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcdcd",
            "the format is ghp_1z1z1z1z1z1z1z1z1z1z1z1z1z1z1z1z1z1z",
        ]);
        assert_found(&["GH_TOKEN=ghp_Zq8Lm2Vx9Tk4Wb8Yn3Hc6Pf1Dj7Gs5Aa0Qe"]);
    }

    /// An `.npmrc` setting scoped to a registry (`//host/path:_password=…`) holds its literal
    /// text as an env file does; a reference there is none.
    #[test]
    fn an_npmrc_scoped_password_is_its_literal_text() {
        assert_found(&[
            "//npm.pkg.example.net/team:_password=TroubadorQuietlyJumps",
            "//registry.corp.example/:_password=MarbleOtterHarbor",
        ]);
        assert_clean(&[
            "//npm.pkg.example.net/team:_password=${NPM_PASSWORD}",
            "//registry.corp.example/:_authToken=$NPM_TOKEN",
        ]);
    }

    /// YAML's `!!binary` tag says how the value is written: the base64 after it is the value.
    #[test]
    fn a_yaml_binary_tag_is_followed_by_the_value() {
        assert_eq!(
            spans("signing_secret: !!binary cTdMbTJWeDlUazRXYjhZbjNIYzZQZjFEajdHcw=="),
            ["cTdMbTJWeDlUazRXYjhZbjNIYzZQZjFEajdHcw=="]
        );
        assert_clean(&["signing_secret: !!binary ${SIGNING_SECRET_B64}"]);
    }

    /// An AWS resource name holds words that name a secret (`:secret:BillingWebhookSecret-…`):
    /// it says where the secret lives, not what it is.
    #[test]
    fn an_aws_resource_name_names_where_a_secret_lives() {
        assert_clean(&[
            "  webhookSecret: 'arn:aws:secretsmanager:ap-south-1:210987654321:secret:BillingWebhookSigningSecret-55128830',",
            "PAYMENT_SECRET=arn:aws:secretsmanager:eu-west-1:210987654321:secret:PaymentsSharedSecret-90817263",
        ]);
        assert_found(&["  webhookSecret: 'Bq8vK2mQ5tL9wX3pN7bJ55128830',"]);
    }

    /// A hex digest under a `hashed…` key is kept to recognise the secret, not the secret; a
    /// random value there, or a digest under the secret's own name, still is one.
    #[test]
    fn a_hex_digest_under_a_hashed_key_is_no_secret() {
        assert_clean(&[
            "\"hashed_password\": \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\"",
            "hashedToken = \"5baa61e4c9b93f3f0682250b6cf8331b7ee68fd8\"",
        ]);
        assert_clean(&[
            "IGNORED_TOKEN_SHA = os.getenv(\"IGNORED_TOKEN_SHA\", \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\")",
        ]);
        assert_found(&[
            "hashedToken = \"q8Zr2LmVx5Tk9Wb3Yn7Hc1Pf4Dj6\"",
            "SERVICE_TOKEN = os.getenv(\"SERVICE_TOKEN\", \"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\")",
            "api_token = \"5baa61e4c9b93f3f0682250b6cf8331b7ee68fd8\"",
        ]);
    }

    /// A PEM block whose body is a sentence in camel case, no digit nor `+/=` in it, is a
    /// format's illustration; a base64 body is a key.
    #[test]
    fn a_pem_body_of_camel_case_words_is_an_illustration() {
        assert_clean(&[
            "-----BEGIN RSA PRIVATE KEY-----\nputTheWholeKeyBodyOfTheDeployUserHereBeforeRunningTheScript\n-----END RSA PRIVATE KEY-----",
        ]);
        assert_found(&[
            "-----BEGIN RSA PRIVATE KEY-----\nputTheWholeKeyBodyOfTheDeployUser7HereBefore+RunningTheScript/\n-----END RSA PRIVATE KEY-----",
        ]);
    }

    /// One count of six or more making most of a short value is filler typed around a run; a
    /// word with a shorter count, or a random value, is a password.
    #[test]
    fn a_short_value_mostly_one_count_is_filler() {
        assert_clean(&[
            "db_pass = 3456789012b7",
            "API_SECRET=98765432zq1",
            "auth_token: \"k345678901\"",
        ]);
        assert_found(&["db_pass = 7Qm2x9Lk4Tz8", "API_SECRET=Summer123456"]);
    }

    /// A phrase opening with a negation says what the value is not: a stand-in.
    #[test]
    fn a_phrase_opening_with_a_negation_is_a_stand_in() {
        assert_clean(&[
            "api_secret = 'notTheProductionValue'",
            "DB_PASSWORD=no_password_set_yet",
            "token: \"not-a-real-token\"",
        ]);
        assert_found(&["api_secret = 'nottinghamForestFan'", "DB_PASSWORD=Nq8vR2mXz7"]);
    }

    /// A provider's word, an app's numeric id, a separator, then the app's secret: the secret.
    #[test]
    fn a_providers_id_then_a_separated_secret_is_its_secret() {
        assert_found(&[
            "Facebook = 518236470912358 | 7d2c94e1b08af35c6e917d40a2b8f1c3;",
            "facebook: 518236470912358 / 7d2c94e1b08af35c6e917d40a2b8f1c3",
        ]);
        assert_clean(&[
            "Facebook = 518236470912358 | 00000000000000000000000000000000;",
            "facebook: 518236470912358 / likes-and-comments-per-day",
        ]);
    }

    /// A keyed hash's or a signed token's key passed as a literal is the key when it looks
    /// generated; a stand-in or a variable there is none.
    #[test]
    fn a_keyed_calls_literal_key_is_a_secret() {
        assert_found(&[
            "const sig = crypto.createHmac('sha256', 'Tz4mQ8vLx2Wp9Kd7Rb3N').update(body).digest('hex');",
            "mac = hmac.new(b'Lq7Zx2Vm9Tk4Wb8Yn3Hc', msg, hashlib.sha256)",
            "Algorithm alg = Algorithm.HMAC256(\"Pq8Wn2Zx5Lm9Tk3Vb7Rc\");",
            "const t = jwt.sign({ sub: user.id }, 'Hx9Lm2Qw7Zt4Vk8Np3Rb', { expiresIn: '1h' });",
        ]);
        assert_clean(&[
            "const sig = crypto.createHmac('sha256', process.env.WEBHOOK_KEY).update(body).digest('hex');",
            "mac = hmac.new(b'secret', msg, hashlib.sha256)",
            "const t = jwt.sign({ sub: user.id }, 'keyboard cat');",
            "Algorithm alg = Algorithm.HMAC256(\"changeme\");",
        ]);
    }
}
