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
//! example on the benchmark's prompt text (release, loaded 2-core machine, p50): 200 KB in 0.97 ms,
//! 17.2 M instructions counted inside `findings` for one 200 KB scan (`scan --once`; the rules
//! grew it from 15.2 M, 16.9 M before a word was passed over without the calls of the rules that
//! would do nothing there, 22.7 M before the quick rejections of `prefilter`, tables compiled from
//! the rule data); 0.12 ms, 2.4 ms and 43.0 M before a plain word was made cheap (the
//! hand-written filter before the rule data: 0.06 ms, 1.25 ms, 25 M). A plain word is cheap
//! because one pass over a key measures it and what it holds (separators, dashes, two letters a
//! secret word may start with) and the rules that need those are not tried; a vendor prefix's
//! first three bytes are a bit filter; a provider's value is looked for only where 16 value bytes
//! may follow (a blank within them, read as one number, rules it out); the scan goes on after a
//! word of letters and digits at once, and blanks and punctuation no rule starts with take one
//! lookup; the pass for tokens on a line about a key reads only the words the scan listed as
//! possibly naming a secret (at a character outside ASCII too: a word of another script, `clé`, a
//! word glued after a letter of another script), unless a key start went unlisted (a foreign word
//! for password); text escaped for JSON or HTML is decoded by copying the runs between quotes,
//! backslashes and markup whole; a line's password-taking commands are found in one pass over it;
//! word lists compare each word's first byte before the rest. These took 200 KB of this
//! repository's Rust sources from 53.1 M to 24.0 M instructions, of its Markdown docs from 62.6 M
//! to 33.6 M and of the fixtures' ordinary prompts joined from 77.3 M to 50.2 M (the benchmark's
//! prompt, plain ASCII with no backslash: 17.5 M to 17.2 M). Adversarial repetitions scan in linear
//! time (the tests check the scaling); nothing is parsed at run time. Every run a rule scans is
//! bounded (a value's head at 512 bytes, its redacted whole, a table row or a here-document line at
//! 64 KiB), a line's command words are looked up once per line, and a span already found is not
//! scanned again, so repetitive prompts stay linear.
//!
//! Real text and dense keys cost more than the benchmark's plain prompt: every word that may
//! name a secret starts a key's reading. One 200 KB scan (`scan --once`, start-up subtracted) of
//! code, docs, lock files and prompts full of such words took 24.6–145.3 M instructions, and shapes
//! a user may paste (`.env` lines, JSON of keys, one long line of `key=value` pairs, secret words
//! in prose on one line) 427–12,446 M, up to about 1.5 s. Now 23.9–81.9 M and 150–480 M: word
//! lists are grouped by first byte at build time and the last values judged are remembered (for
//! values up to 64 bytes; copying longer ones cost real text more than it saved); a line's start
//! and end are found once per line and remembered across its keys, by a vectorised search; a
//! value's cheap facts (its shape, whether a provider's keyword names the key) are read before
//! the text around it and before its judging; a lone hard-wrap cut is read again only around the
//! cut. What is left is spread over the readers a key runs (no one function over 15%). Keys
//! packed so densely that each one's value runs over the next ones (`key=key=key=…`) would have
//! the same bytes read and judged hundreds of times over (8,374 M): the bytes read or judged
//! again are counted (`judge::reset_judged`), real text has next to none, and past four times
//! the text's length the rest of each key's line is withheld unread (183 M; values holding
//! `key=value` pairs of their own are read again about 1.2 times over and stay well under it).
//! A second round, with every finding kept, took real text to 21.7–65.7 M (this repository's Rust
//! sources 30.8 to 25.2 M, its Cargo.lock 67.8 to 57.1 M) and the dense shapes to 91–204 M
//! (`"pwd=;"` repeated, whose keys each re-read a window after them, 1,282 to 197 M): a line's
//! checks for secret-printing commands, file locations and `.pgpass`-like fields rule most lines
//! out on one byte or one table lookup a byte; a provider's keyword is looked up only where a key's
//! segment starts with a letter and the four-byte filter lets one start; HTML's quote state is
//! found by a search; a word list passes over a position whose first two bytes start none of its
//! words, and a value is compared only with the prefixes of its first byte's group; the window
//! after a secret word is cut by a vectorised search, and a window or a packed run of keys with
//! under 16 distinct bytes (too few for the entropy asked) is passed over once; an unquoted value's
//! end is looked for only at the bytes that can end one; and a value's checks ask first for the
//! byte each one needs (an ASCII value is not decoded as another script's).
//!
//! Size: the release profile (root `Cargo.toml`) optimizes the dependencies (TLS, JSON, TOML) for
//! size (`opt-level = "s"`) and the workspace's crates, this one among them, for speed: every hook
//! executable went from 3.07–3.15 MiB to 2.69–2.77 MiB (`powercontext-hook-opencode`, the largest,
//! 3,298,880 to 2,905,784 bytes; `claude-code` 3,228,520 to 2,836,064), and the scan's code is
//! built as before. Size for the whole workspace would shrink the scan's loops too, which is the
//! code that must stay fast; the tables are static data either way. As rules and readers grew,
//! the largest reached 3,022,664 bytes; the executables' relocations are now packed at link time
//! (the root `build.rs`, where the toolchain and C library support it), about 95 KB each, and
//! every hook is under 3,000,000 bytes (the largest 2,980,696 in the last benchmark), which a test holds.
//!
//! What is found (the rule names are what diagnostics and `[REDACTED:<rule>]` markers show):
//! - `private_key`: a PEM block (`-----BEGIN … PRIVATE KEY-----` to its END line, the four-dash
//!   and SSH2 armors `----BEGIN …----`, `---- BEGIN SSH2 … PRIVATE KEY ----` to the end of their
//!   body), an END line alone, a DER body pasted without its armor (`MII…IBA…`,
//!   `b3BlbnNzaC1rZXktdjE…`), or the `Private-Lines:` of a PuTTY `.ppk` file through its MAC.
//! - `assignment`: a key that *contains* a secret word (`password`, `passwd`, `pwd`,
//!   `passphrase`, `passcode`, `secret`, `token`, `api key`, `access key`, `private key`,
//!   `credential`, `cookie`, `pw`; weaker: `key`, `auth`, `pass`, `cred` ending its word, `PAT`
//!   as a segment of its own, whose value must be one base64url run) with any prefix or suffix,
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
//!   The word for password in German, French, Spanish, Portuguese, Dutch, Polish, Czech,
//!   Hungarian, Swedish, Norwegian, Danish, Finnish, Turkish, Chinese, Japanese, Korean and
//!   Russian (`Passwort`, `Kennwort`, `mot de passe`, `contraseña`, `clave`, `senha`,
//!   `wachtwoord`, `hasło`, `lösenord`, `şifre`, `密码`, `口令`, `パスワード`, `비밀번호`,
//!   `пароль`, in capitals too; Italian writes `password`), and those for token, secret key and
//!   private key in Chinese, Japanese, Korean and Russian (`令牌`, `密钥`, `私钥`, `トークン`,
//!   `秘密鍵`, `토큰`, `токен`: judged as `token`, `secret_key`, `private_key` are), is a key as
//!   `password` is, alone, with no-break spaces around its colon
//!   (`Mot de passe\u{a0}: …`; they are never part of a value), as `密码：…`, or as a segment of a
//!   longer key (`DB_KENNWORT`, `KENNWORT2`, `db_contraseña`, `Пароль_БД`, `비밀번호_확인`; a bare
//!   `clave` is any key in Spanish, as `chave`, `chiave`, `sleutel`, `clé` and `キー` are in Portuguese,
//!   Italian, Dutch, French and Japanese, and secret in German, Portuguese, Italian, Spanish, Polish,
//!   Swedish and Russian (`Geheimnis`, `segredo`, `секрет`): its value must look generated, unlike
//!   `clave de acceso`). Before
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
//!   token, password, secret or creds as a word of its own (a key in ten other languages too, or a
//!   credential rotated or revoked) and not of public keys, fingerprints,
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
//!
//! # Layers
//!
//! A module imports only from its own layer or the layers listed before it, and the modules'
//! imports form no cycle (both held by a test that reads these sources):
//!
//! 1. Values and bytes: `kinds`, `bytes`, `log2`.
//! 2. Names and characters: `words`, `chars`.
//! 3. Structures and providers' rules: `tables`, `pem`, `layout`, `rules`, `prefilter`.
//! 4. Judgments of one value or one command: `judge`, `commands`.
//! 5. The scan: `scan`.
//! 6. Tests: `prefilter_tests`, `ordinary_tests`.

use std::borrow::Cow;

mod bytes;
mod chars;
mod commands;
mod judge;
mod kinds;
mod layout;
mod log2;
#[cfg(test)]
mod ordinary_tests;
mod pem;
mod prefilter;
#[cfg(test)]
mod prefilter_tests;
mod rules;
mod scan;
mod tables;
mod words;

use crate::bytes::{find_byte, find_ci};
use crate::layout::{csv_cell, line_escapes, second_readings, unescaped, unwrapped};
use crate::scan::scan_text;
pub use kinds::{Finding, SecretKind};
pub use rules::{FAMILIES, KEYWORD_INFO, RULE_INFO, RuleInfo, VENDORS, Vendor, keyword_providers};

/// Every secret in `text`, in order of position, overlapping spans merged (the higher-priority
/// rule names the merged span).
#[must_use]
pub fn findings(text: &str) -> Vec<Finding> {
    // A word encoded for a URL or a form (`password%3D…`) and a field quoted with its quotes
    // doubled (a CSV file's field, SQL's string) are read again decoded, each on its own, and
    // what is found there is added: the text as it stands is read too, for a password may hold a
    // `%` or a quote of its own.
    // Past the first few, the parts are read together in one reading, those on one line a blank
    // apart: a prompt of thousands of encoded words or quoted fields costs one more reading, not
    // thousands.
    const ALONE: usize = 16;
    crate::judge::reset_judged(text.len());
    let mut found = read(text);
    let again = second_readings(text);
    if let Ok(plain) = std::str::from_utf8(&again.plain) {
        let alone = again.parts.len().min(ALONE);
        for r in &again.parts[..alone] {
            found.extend(mapped(read(&plain[r.clone()]), &again.at[r.start..=r.end]));
        }
        if let Some(r) = again.parts.get(alone) {
            let rest = mapped(read(&plain[r.start..]), &again.at[r.start..]);
            found.extend(rest.filter(|f| f.start < f.end));
        }
    }
    // A text hard-wrapped at a fixed width (a terminal's copy, `fold`, a mail client) is read
    // again with its cut lines rejoined: a token or a `key=value` cut in two is whole there.
    // When only its longest line says so, only what is found across that cut counts, and a key's
    // or a flag's value of no shape of its own only when the next line starts as a random
    // token's tail: a value glued to the next line's first word (`…=abc123` + `the`) would be
    // read as a value it is not, and a prose token anywhere near a secret word is too loose.
    let rejoined = unwrapped(text);
    if let Some((plain, at, alone)) = &rejoined {
        let across = |f: &Finding| {
            alone.is_none_or(|(cut, random_tail)| {
                f.start < cut
                    && f.end > cut
                    && (random_tail && matches!(f.kind, SecretKind::Assignment | SecretKind::CommandLine)
                        || matches!(
                            f.kind,
                            SecretKind::Vendor(_)
                                | SecretKind::Jwt
                                | SecretKind::PasswordHash
                                | SecretKind::UrlCredentials
                                | SecretKind::AuthHeader
                        ))
            })
        };
        // When only the longest line was cut, the text rejoined is the lines around the cut
        // (see [`unwrapped`]): only what crosses the cut counts.
        found.extend(mapped(read(plain), at).filter(across));
    }
    if !again.parts.is_empty() || rejoined.is_some() {
        found.sort_by_key(|f| (f.start, f.kind.rank()));
    }
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

/// `found` in a decoded text, mapped back through `at` (each decoded byte's offset, and the end).
fn mapped(found: Vec<Finding>, at: &[usize]) -> impl Iterator<Item = Finding> + '_ {
    found.into_iter().map(|f| Finding {
        kind: f.kind,
        start: at[f.start],
        end: at[f.end],
    })
}

/// Every secret in `text` as it is written, sorted by start, not merged.
fn read(text: &str) -> Vec<Finding> {
    // Text escaped for JSON or a log (`\"api_key\": \"…\"`, `…\nTOKEN=…`) or for HTML is read
    // unescaped, as its writer meant it, and what is found there is mapped back onto the
    // escaped bytes. A spreadsheet's cell copied whole is read as its text first, and a string
    // escaped twice (a notebook's JSON quoted in a JSON log record, `\\\"api_key\\\"`) is read
    // once more, at most twice more, each map composed onto the one before.
    // A PowerShell string or a tab-separated cell holding escaped line breaks is read as its
    // lines before JSON's escapes are: a backslash inside it is its text's own.
    let mut decoded = csv_cell(text);
    decoded = then_read(decoded, text, line_escapes);
    decoded = then_read(decoded, text, unescaped);
    match decoded {
        Some((mut plain, mut at)) => {
            for _ in 0..2 {
                if !escaped_twice(&plain, &at) {
                    break;
                }
                let Some((again, inner)) = unescaped(&plain) else {
                    break;
                };
                at = inner.into_iter().map(|k| at[k]).collect();
                plain = again;
            }
            mapped(scan_text(&plain), &at).collect()
        }
        None => scan_text(text),
    }
}

/// A text decoded, and each of its bytes' offset in the text it came from, and the end.
type Decoded = (String, Vec<usize>);

/// `decoded` (or `text` when nothing is yet) read again by `read`, its map composed onto the
/// one before; as it was when `read` finds nothing to decode.
fn then_read(decoded: Option<Decoded>, text: &str, read: fn(&str) -> Option<Decoded>) -> Option<Decoded> {
    let Some((plain, at)) = read(decoded.as_ref().map_or(text, |d| d.0.as_str())) else {
        return decoded;
    };
    Some(match decoded {
        Some((_, outer)) => (plain, at.into_iter().map(|k| outer[k]).collect()),
        None => (plain, at),
    })
}

/// Whether `plain` holds a quote escaped twice: an escaped backslash before a quote (`\\\"`
/// decoded to `\"`), as a JSON document quoted in a JSON string has around its keys. A path's
/// escaped backslashes (`\\\\nas\\backup`) are no reason to read it again.
fn escaped_twice(plain: &str, at: &[usize]) -> bool {
    let bytes = plain.as_bytes();
    let mut from = 0;
    while let Some(p) = find_byte(b'\\', &bytes[from..]) {
        let k = from + p;
        if at[k + 1] == at[k] + 2 && bytes.get(k + 1) == Some(&b'"') {
            return true;
        }
        from = k + 1;
    }
    false
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

#[cfg(test)]
mod tests;
