//! Command lines and credential files: the commands that take a password (and which flag), netrc,
//! pgpass and shadow lines. It reads a command's arguments; a value is judged by the judging layer.

use crate::bytes::{contains_ci, line_before, skip_blank, trim_ascii};
use crate::judge::uuid;
use crate::judge::{Stop, Value, is_placeholder, numeric_like, password_key, quoted_word};
use crate::words::{Strength, Words, secret_word, words_from};

/// Commands whose short flag takes a password (`-p`: logins, `sshpass` and mongo, glued for
/// `mysql`; `-P`: `sqlcmd`, `ssh-keygen`; `-N`: `ssh-keygen`; `-k`: `openssl`; `-w`: ldap tools;
/// `-a`: `redis-cli`, httpie; `-u`: `curl`, `lftp`; `-U`: `smbclient`), and the commands whose
/// `-storepass`/`-keypass` does (`keytool`, `jarsigner`).
pub(crate) const LOGIN: u16 = 1;

pub(crate) const MYSQL: u16 = 2;

pub(crate) const REDIS: u16 = 4;

pub(crate) const CURL: u16 = 8;

pub(crate) const MONGO: u16 = 16;

pub(crate) const SQLCMD: u16 = 32;

pub(crate) const LDAP: u16 = 64;

pub(crate) const SMB: u16 = 128;

pub(crate) const LFTP: u16 = 256;

pub(crate) const HTTPIE: u16 = 512;

pub(crate) const SSH_KEYGEN: u16 = 1024;

pub(crate) const OPENSSL: u16 = 2048;

pub(crate) const KEYTOOL: u16 = 4096;

/// Archivers that take the password glued to `-p` (`7z a -pPASS`, `rar a -pPASS`, and rar's
/// `-hpPASS`, which encrypts the headers too).
pub(crate) const ARCHIVE: u16 = 8192;

/// The net-snmp tools, whose `-A` and `-X` take the SNMPv3 authentication and privacy
/// passphrases.
pub(crate) const SNMP: u16 = 16384;

/// The names of the commands that take a password, each with its bit, as a line names them
/// (any ASCII case, anywhere on the line); httpie's `http` only where a command starts. `-P`
/// takes a password after a blank for `sqlcmd` and the tools named with its bit: `zip` and
/// `unzip`, `ipmitool`, Sybase's `isql`, SQL Server's `bcp`, mosquitto's clients.
const COMMAND_NAMES: [(&[u8], u16); 33] = [
    (b"docker login", LOGIN),
    (b"podman login", LOGIN),
    (b"buildah login", LOGIN),
    (b"registry login", LOGIN),
    (b"nerdctl login", LOGIN),
    (b"sshpass", LOGIN),
    (b"mysql", MYSQL),
    (b"mariadb", MYSQL),
    (b"redis-cli", REDIS),
    (b"curl", CURL),
    (b"mongosh", MONGO),
    (b"mongo ", MONGO),
    (b"sqlcmd", SQLCMD),
    (b"zip ", SQLCMD),
    (b"ipmitool", SQLCMD),
    (b"isql ", SQLCMD),
    (b"bcp ", SQLCMD),
    (b"mosquitto_", SQLCMD),
    (b"7z", ARCHIVE),
    (b"rar ", ARCHIVE),
    (b"snmp", SNMP),
    (b"ldapsearch", LDAP),
    (b"ldapadd", LDAP),
    (b"ldapmodify", LDAP),
    (b"ldapdelete", LDAP),
    (b"ldappasswd", LDAP),
    (b"ldapwhoami", LDAP),
    (b"smbclient", SMB),
    (b"lftp", LFTP),
    (b"ssh-keygen", SSH_KEYGEN),
    (b"openssl", OPENSSL),
    (b"keytool", KEYTOOL),
    (b"jarsigner", KEYTOOL),
];

/// For each byte, the [`COMMAND_NAMES`] that have it first (`[0]`) or second (`[1]`), either
/// ASCII case, as bit sets.
static COMMAND_HEADS: [[u64; 256]; 2] = {
    let mut t = [[0u64; 256]; 2];
    let mut k = 0;
    while k < COMMAND_NAMES.len() {
        let mut j = 0;
        while j < 2 {
            let b = COMMAND_NAMES[k].0[j];
            t[j][b.to_ascii_lowercase() as usize] |= 1u64 << k;
            t[j][b.to_ascii_uppercase() as usize] |= 1u64 << k;
            j += 1;
        }
        k += 1;
    }
    t
};

/// The bits of the [`COMMAND_NAMES`] that `line` holds. One pass: two lookups rule out most
/// positions, where a search for each name would read the whole line 25 times.
pub(crate) fn named_commands(line: &[u8]) -> u16 {
    let mut set = 0;
    for k in 0..line.len().saturating_sub(1) {
        let mut mask = COMMAND_HEADS[0][usize::from(line[k])] & COMMAND_HEADS[1][usize::from(line[k + 1])];
        while mask != 0 {
            let (name, bit) = COMMAND_NAMES[mask.trailing_zeros() as usize];
            mask &= mask - 1;
            if line[k..].len() >= name.len() && line[k..k + name.len()].eq_ignore_ascii_case(name) {
                set |= bit;
            }
        }
    }
    set
}

/// The bits of the [`COMMAND_NAMES`] that a command segment runs: a name right after a `.` is a
/// file's extension (`out.zip`, `config.7z`), not a command. Asked only at a password flag.
#[cold]
pub(crate) fn segment_commands(segment: &[u8]) -> u16 {
    COMMAND_NAMES
        .iter()
        .filter(|(name, _)| {
            segment
                .windows(name.len())
                .enumerate()
                .any(|(k, w)| w.eq_ignore_ascii_case(name) && (k == 0 || segment[k - 1] != b'.'))
        })
        .fold(0, |set, (_, bit)| set | bit)
}

/// Whether the argument before the flag at `i` is a user's (`-u NAME -p …`, `--user NAME -p …`,
/// `-l NAME -p …`): then `-p` is that user's password on any command (`psexec`, `mysql`, …).
pub(crate) fn after_user_flag(bytes: &[u8], i: usize) -> bool {
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

/// A word typed as the password a comparison checks (`password == 'logmein'`,
/// `creds.Secret != "open-sesame"`): lowercase letters, perhaps joined by `-`/`_`, against a key
/// naming a password or a bare secret (a `client_secret` is generated, a word there names a
/// client); not a word describing one (`"wrong"`, `"expired"`), which [`quoted_word`] rules out,
/// nor a stand-in, which the value's own judgment does.
pub(crate) fn compared_word(v: &[u8], key: &[u8]) -> bool {
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
pub(crate) fn next_arg(bytes: &[u8], pos: usize) -> Option<(Value, usize)> {
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

/// A line where `KEY=value` is a shell or env-file assignment: the key starts it, or follows
/// `export`, `set`, `ENV`, `-e`, `--env`, a YAML list dash, `;` or `&&`.
pub(crate) fn shell_line(line: &[u8]) -> bool {
    let t = trim_ascii(line);
    if t.is_empty() {
        return true;
    }
    // The last word is looked for among its last bytes only: a word longer than any starter
    // is none (a long line without a blank is not searched back whole).
    let tail = &t[t.len().saturating_sub(STARTER_MAX + 1)..];
    let last = match tail.iter().rposition(|&b| b == b' ' || b == b'\t') {
        Some(p) => &tail[p + 1..],
        None if tail.len() == t.len() => t,
        None => &[],
    };
    const STARTER_MAX: usize = STARTERS.longest();
    const STARTERS: Words = words_from!(&[
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
    ]);
    STARTERS.contains(last) || t.ends_with(b";")
}

/// `set -x KEY value` (fish), `setenv KEY value` (csh), `ENV KEY value` (Dockerfile).
pub(crate) fn env_command_line(line: &[u8]) -> bool {
    let t = trim_ascii(line);
    const COMMANDS: Words = words_from!(&[b"set -x", b"set -gx", b"set -Ux", b"setenv", b"ENV", b"export"]);
    COMMANDS.contains(t)
}

/// A `.netrc` line: `machine <host> login <user> password <secret>`.
pub(crate) fn netrc_line(line: &[u8]) -> bool {
    let t = trim_ascii(line);
    (t.starts_with(b"machine ") || t.starts_with(b"default")) && contains_ci(t, b"login")
}

/// The spans of the `:`-separated fields of the line at `s` (at most nine) and how many there are,
/// when it has no blank and at most 512 bytes (a `.pgpass` or `/etc/shadow` line): most lines of a
/// prompt fail on their first word.
pub(crate) fn colon_fields(bytes: &[u8], s: usize) -> Option<([(usize, usize); 9], usize)> {
    let mut fields = [(s, s); 9];
    let mut n = 0;
    // One lookup a byte until a byte that is no field's: a line's first word ends at a blank,
    // which a chain of byte tests would mispredict on every line. No line is longer than 512
    // bytes.
    let stop = bytes.len().min(s + 513);
    let mut k = s;
    while let Some(d) = bytes[k..stop]
        .iter()
        .position(|&b| FIELD_BYTE[usize::from(b)] != FIELD_PLAIN)
    {
        k += d;
        match FIELD_BYTE[usize::from(bytes[k])] {
            FIELD_COLON if n == 8 => return None,
            FIELD_COLON => {
                fields[n].1 = k;
                n += 1;
                fields[n] = (k + 1, k + 1);
                k += 1;
            }
            FIELD_NEWLINE => {
                fields[n].1 = k;
                return Some((fields, n + 1));
            }
            _ => return None,
        }
    }
    if stop - s > 512 {
        return None;
    }
    fields[n].1 = stop;
    Some((fields, n + 1))
}

/// [`colon_fields`]' reading of a byte: part of a field, a separator, the line's end, or a blank
/// that rules the line out.
static FIELD_BYTE: [u8; 256] = {
    let mut t = [FIELD_PLAIN; 256];
    t[b':' as usize] = FIELD_COLON;
    t[b'\n' as usize] = FIELD_NEWLINE;
    let mut b = 0;
    while b < 128 {
        if b != b'\n' as usize && (b as u8).is_ascii_whitespace() {
            t[b] = FIELD_BLANK;
        }
        b += 1;
    }
    t
};
const FIELD_PLAIN: u8 = 0;
const FIELD_COLON: u8 = 1;
const FIELD_NEWLINE: u8 = 2;
const FIELD_BLANK: u8 = 3;

/// A `.pgpass` line `host:port:database:user:password`: returns the password's span.
pub(crate) fn pgpass(bytes: &[u8], fields: &[(usize, usize); 9]) -> Option<(usize, usize)> {
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
pub(crate) fn shadow(bytes: &[u8], fields: &[(usize, usize); 9]) -> Option<(usize, usize)> {
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
pub(crate) fn crypt_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'/' | b'+' | b'=' | b',')
}

/// How a command that reads a stored secret prints it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Printed {
    /// Alone on the next line (`vault kv get -field=password …`, `op read …`).
    Line,
    /// As the `"value"` (or `"Value"`) member of the JSON document that follows.
    JsonValue,
}

/// A command that prints a stored secret (see [`PRINTERS`]).
struct Printer {
    command: &'static [u8],
    flags: &'static [&'static [u8]],
    printed: Printed,
    always: bool,
}

const fn printer(
    command: &'static [u8],
    flags: &'static [&'static [u8]],
    printed: Printed,
    always: bool,
) -> Printer {
    Printer {
        command,
        flags,
        printed,
        always,
    }
}

/// Commands that print a stored secret as plain text: the command's words, the flags of which
/// the line must hold one (none: the command always prints it), how it is printed, and whether
/// what it prints is always a secret (a password store, a secret manager's secret) rather than
/// the entry or field the line names (`op read op://vault/db/username`, `{.data.host}`).
/// The first entry whose command and flag the line holds decides.
const PRINTERS: &[Printer] = &[
    printer(b"vault kv get", &[b"-field"], Printed::Line, false),
    printer(b"terraform output", &[b"-raw"], Printed::Line, false),
    printer(b"secret-tool lookup", &[], Printed::Line, true),
    printer(b"lpass show", &[b"--password"], Printed::Line, true),
    printer(b"vault read", &[b"-field"], Printed::Line, false),
    printer(b"gcloud secrets versions access", &[], Printed::Line, true),
    printer(b"op read", &[], Printed::Line, false),
    printer(b"op item get", &[b"--reveal"], Printed::Line, false),
    printer(
        b"kubectl get secret",
        &[b"base64 -d", b"base64 --decode", b"base64 -D", b"base64decode"],
        Printed::Line,
        false,
    ),
    printer(b"security find-generic-password", &[b" -w"], Printed::Line, true),
    printer(b"security find-internet-password", &[b" -w"], Printed::Line, true),
    printer(b"Get-Secret", &[b"-AsPlainText"], Printed::Line, true),
    printer(b"pass show", &[], Printed::Line, true),
    printer(b"gopass show", &[], Printed::Line, true),
    printer(b"doppler secrets get", &[b"--plain"], Printed::Line, false),
    printer(b"infisical secrets get", &[b"--plain"], Printed::Line, false),
    printer(b"bw get password", &[], Printed::Line, true),
    printer(b"heroku config:get", &[], Printed::Line, false),
    printer(b"credstash get", &[], Printed::Line, true),
    printer(b"az keyvault secret show", &[b"tsv"], Printed::Line, true),
    printer(b"az keyvault secret show", &[], Printed::JsonValue, true),
    printer(
        b"aws ssm get-parameter",
        &[b"--output text"],
        Printed::Line,
        false,
    ),
    // A parameter may be a plain string (`/aws/service/ami-…`): its name says whether a secret.
    printer(
        b"aws ssm get-parameter",
        &[b"--with-decryption"],
        Printed::JsonValue,
        false,
    ),
    printer(
        b"aws secretsmanager get-secret-value",
        &[b"--output text"],
        Printed::Line,
        true,
    ),
];

/// For each byte, the lengths of the [`PRINTERS`]' first words that start with it, as a bit set
/// (bit `n`: a word of `n` bytes; a first word is as long as 31 bytes at most): the line's first
/// word must be one of them, and most lines' first words fail on this one lookup, where
/// comparing with each command costs a few hundred instructions a line.
static PRINTER_HEADS: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut k = 0;
    while k < PRINTERS.len() {
        let c = PRINTERS[k].command;
        let mut n = 0;
        while n < c.len() && c[n] != b' ' {
            n += 1;
        }
        assert!(n > 0 && n < 32);
        t[c[0] as usize] |= 1 << n;
        k += 1;
    }
    t
};

/// Whether the line starting at `s` (blanks skipped) runs a command that prints a stored secret,
/// how it prints it and how strongly the line says it is one: a password's when the command
/// always prints a secret or the line names one (`-field=password`, `{.data.api_token}`), else
/// only a generated value counts. The command starts the line or follows a shell's prompt (`$ `,
/// `% `, `> `, `# `, `dev@box:~/app$ `, `PS C:\app> `).
pub(crate) fn secret_printer(bytes: &[u8], s: usize) -> Option<(Printed, Strength)> {
    // Every line comes here: its first byte rules most out (a capital starts a sentence; a
    // prompt's user or a command starts lowercase).
    // (`[dev@web01 app]$ `, `(venv) $ ` and zsh's `❯ ` open prompts too.)
    let opens =
        |b: u8| b.is_ascii_lowercase() || matches!(b, b'$' | b'%' | b'>' | b'#' | b'G' | b'[' | b'(' | 0xE2);
    if !bytes.get(s).is_some_and(|&b| opens(b)) && !bytes[s..].starts_with(b"PS ") {
        return None;
    }
    let (c, word) = command_start(bytes, s);
    // Only a line whose command is one of the table's is measured further.
    let first = &bytes[c..word];
    if first.len() >= 32
        || PRINTER_HEADS[usize::from(first.first().copied().unwrap_or(0))] & (1 << first.len()) == 0
    {
        return None;
    }
    let named =
        |p: &Printer| p.command.get(first.len()).is_none_or(|&b| b == b' ') && p.command.starts_with(first);
    if !PRINTERS.iter().any(named) {
        return None;
    }
    let line = &bytes[c..crate::bytes::line_end(bytes, c)];
    // Piped on (`| base64 -d | sha256sum`, `| pbcopy`), it prints something else: the last stage
    // must be the command or its decoding flag.
    let last_stage = line.iter().rposition(|&b| b == b'|').map_or(line, |k| &line[k..]);
    let (p, rest) = PRINTERS.iter().find_map(|p| {
        let rest = command_words(line, p.command)?;
        (p.flags.is_empty() || p.flags.iter().any(|f| contains_ci(line, f))).then_some((p, rest))
    })?;
    if last_stage.len() < line.len() && !p.flags.iter().any(|f| contains_ci(last_stage, f)) {
        return None;
    }
    // Written to a file (`> /tmp/pw`, `--out-file=tls.key`), it prints nothing.
    let redirected = last_stage
        .windows(2)
        .any(|w| w[1] == b'>' && matches!(w[0], b' ' | b'1' | b'&' | b'>'))
        || contains_ci(last_stage, b"--out-file")
        || contains_ci(last_stage, b"--outfile");
    if redirected {
        return None;
    }
    let (printed, always) = (p.printed, p.always);
    // A JMESPath query (`--query ARN`, `--query Parameter.Value`) picks what is printed: the
    // value itself, a secret's field, or metadata (an id, a version, a date), which is no secret.
    let query = query_field(rest);
    let field = match query {
        Some(q) if VALUE_FIELDS.iter().any(|f| q.eq_ignore_ascii_case(f)) => printed_field(rest),
        Some(q) if secret_word(q).is_some() => q,
        Some(_) => return None,
        None => printed_field(rest),
    };
    // Listing a store's entries (`pass show`, `credstash get` with no name) prints no secret.
    if field.is_empty() {
        return None;
    }
    // A secret's word, not qualified as metadata (`password`, `api_token`; not `key_id`).
    let named = secret_word(field).is_some();
    // With no prompt before it, the line is a script's or a document's, and the next line is
    // as likely the next command (`deactivate`, `set_env_from_secret`): only a generated value
    // is taken for the secret there.
    let prompted = c != s;
    Some((
        printed,
        if prompted && (always || named) {
            Strength::Strong
        } else {
            Strength::Weak
        },
    ))
}

/// The members a query names when it prints a stored secret's value itself.
const VALUE_FIELDS: Words = words_from!(&[b"value", b"secretstring", b"secretbinary"]);

/// The last segment of a `--query` argument (`Parameter.Value` → `Value`), quotes dropped.
fn query_field(rest: &[u8]) -> Option<&[u8]> {
    let k = rest.windows(8).position(|w| w == b"--query ")?;
    let q = &rest[k + 8..];
    let q = &q[..q.iter().position(|&b| b == b' ').unwrap_or(q.len())];
    let (from, to) = crate::tables::unquoted(q, 0, q.len());
    let q = &q[from..to];
    Some(q.rsplit(|&b| b == b'.').next().unwrap_or_default())
}

/// Where the command of the line at `s` and its first word start and end: after a shell's prompt when one opens the line
/// (`$ `, `% `, `> `, `# `, `dev@box:~/app$ `, `PS C:\app> `, a bracketed `[user@host dir]$ `, a
/// virtual environment's `(venv) `, zsh's `❯ `, or one of these after another), else at `s`.
fn command_start(bytes: &[u8], s: usize) -> (usize, usize) {
    let line = |from: usize| {
        let head = &bytes[from..bytes.len().min(from + 96)];
        &head[..head.iter().position(|&b| b == b'\n').unwrap_or(head.len())]
    };
    let word_end = |from: usize| {
        from + bytes[from..]
            .iter()
            .take(64)
            .take_while(|&&b| b != b' ' && b != b'\n')
            .count()
    };
    let s = match bytes.get(s) {
        Some(b'[') => line(s)
            .windows(3)
            .position(|w| w[0] == b']' && matches!(w[1], b'$' | b'#' | b'%') && w[2] == b' ')
            .map_or(s, |k| skip_blank(bytes, s + k + 3)),
        Some(b'(') => {
            let head = line(s);
            head.windows(2)
                .position(|w| w == b") ")
                .filter(|&k| !head[1..k].contains(&b' '))
                .map_or(s, |k| skip_blank(bytes, s + k + 2))
        }
        Some(0xE2) if bytes[s..].starts_with("❯ ".as_bytes()) => skip_blank(bytes, s + 4),
        _ => s,
    };
    let e = word_end(s);
    let first = &bytes[s..e];
    let c = match first.last() {
        Some(b'$' | b'%' | b'>' | b'#') if bytes.get(e) == Some(&b' ') => skip_blank(bytes, e),
        _ if first == b"PS" => line(e)
            .windows(2)
            .position(|w| w == b"> ")
            .map_or(s, |k| skip_blank(bytes, e + k + 2)),
        _ => return (s, e),
    };
    (c, word_end(c))
}

/// A value a command printed that is an identifier or a digest, not a generated secret: a UUID,
/// hex digits (a commit, a hash, a serial's `57:44:…`), an id or a label before hex (`ami-0…`,
/// `serial=…`).
pub(crate) fn printed_id(v: &[u8]) -> bool {
    let hex = |t: &[u8]| !t.is_empty() && t.iter().all(|&b| b.is_ascii_hexdigit() || b == b':');
    let label = v
        .iter()
        .take(12)
        .take_while(|b| b.is_ascii_alphabetic() || **b == b'_')
        .count();
    uuid(v)
        || hex(v)
        || label > 0
            && matches!(v.get(label), Some(b'-' | b'='))
            && (hex(&v[label + 1..]) || uuid(&v[label + 1..]))
}

/// What follows a command's words `name` in `line`: its first word starts the line and each next
/// one follows in order as a whole word (options may stand between: `kubectl -n shop get secret`).
fn command_words<'a>(line: &'a [u8], name: &[u8]) -> Option<&'a [u8]> {
    let mut words = name.split(|&b| b == b' ');
    let first = words.next()?;
    if !line.starts_with(first) {
        return None;
    }
    let ends = |k: usize| line.get(k).is_none_or(|&b| b == b' ' || b == b'\r');
    let mut at = first.len();
    for word in words {
        let k = (at..line.len())
            .find(|&k| line[k] == b' ' && line[k + 1..].starts_with(word) && ends(k + 1 + word.len()))?;
        at = k + 1 + word.len();
    }
    ends(at).then(|| &line[at..])
}

/// The name of the field or entry a command's arguments `rest` print: `-field=NAME`, the member
/// after `.data.`, the last segment of an `op://` reference, else the first argument.
fn printed_field(rest: &[u8]) -> &[u8] {
    let name_end = |from: usize| {
        from + rest[from..]
            .iter()
            .take_while(|&&b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
            .count()
    };
    for marker in [&b"-field="[..], b".data."] {
        if let Some(k) = rest.windows(marker.len()).position(|w| w == marker) {
            let from = k + marker.len();
            return &rest[from..name_end(from)];
        }
    }
    let mut args = rest
        .split(|&b| b == b' ')
        .filter(|a| !a.is_empty() && !a.starts_with(b"-"));
    let first = args.next().unwrap_or_default();
    match first.strip_prefix(b"op://") {
        Some(reference) => reference.rsplit(|&b| b == b'/').next().unwrap_or_default(),
        None => first,
    }
}

/// How a call takes its passwords (see [`password_arguments`]).
pub(crate) struct PasswordArgs {
    /// Which arguments: bit `n`, the `n`-th (from 0).
    pub(crate) places: u8,
    /// Only Java's `char[]` there (`"…".toCharArray()`), for calls whose names are common
    /// (`ks.load(in, "…".toCharArray())`).
    pub(crate) chars: bool,
    /// Only a random-looking literal: a library whose examples name the slot with a word
    /// (pysnmp's `UsmUserData("usr", "authkey1", "privkey1")`).
    pub(crate) random: bool,
    /// Only after an LDAP name as the first argument (`client.bind("cn=admin,dc=…", "…")`): a
    /// common name that binds many other things (`fn.bind(this, "…")`).
    pub(crate) dn: bool,
}

/// Library calls that take a password or a key's passphrase at a fixed place. `key` is the called
/// name with its qualifiers (`pkcs12.Decode`), `name` its last segment. A quoted literal there is
/// a password however it looks (unless `random`); a variable, a call or a stand-in is none.
pub(crate) fn password_arguments(key: &[u8], name: &[u8]) -> Option<PasswordArgs> {
    let qualified = |q: &[u8]| key.len() > name.len() && key[..key.len() - name.len() - 1].ends_with(q);
    let (places, chars, random) = match name {
        // .NET: `new X509Certificate2("c.pfx", "…")`.
        b"X509Certificate2" | b"X509Certificate" => (0b10, false, false),
        // Python's `cryptography` and pyOpenSSL, `ssl`'s `load_cert_chain(cert, key, password)`,
        // `ftplib.FTP(host, user, passwd)`, python-ldap's binds, pysnmp's SNMPv3 user (its
        // authentication and privacy keys), poplib's `pass_`.
        b"load_key_and_certificates" | b"load_pem_private_key" | b"load_der_private_key" | b"load_pkcs12" => {
            (0b10, false, false)
        }
        b"load_privatekey" | b"load_cert_chain" | b"FTP_TLS" | b"FTP" => (0b100, false, false),
        b"simple_bind_s" | b"simple_bind" | b"bind_s" => (0b10, false, false),
        b"UsmUserData" => (0b110, false, true),
        b"pass_" => (0b1, false, false),
        // Go's `pkcs12.Decode(data, "…")`; Ruby's `OpenSSL::PKCS12.new(der, "…")` and
        // `OpenSSL::PKey::RSA.new(pem, "…")`.
        b"Decode" | b"DecodeChain" if qualified(b"pkcs12") => (0b10, false, false),
        b"new" if qualified(b"PKCS12") || qualified(b"RSA") || qualified(b"EC") => (0b10, false, false),
        b"read" if qualified(b"PKey") => (0b10, false, false),
        // PHP: `new PDO(dsn, user, "…")`, `ldap_bind(conn, dn, "…")`,
        // `openssl_pkcs12_read(data, certs, "…")`, `openssl_pkey_get_private(key, "…")`.
        b"PDO" | b"ldap_bind" | b"openssl_pkcs12_read" => (0b100, false, false),
        b"openssl_pkey_get_private" => (0b10, false, false),
        // Java's KeyStore and KeyManagerFactory: `load(in, pw)`, `init(ks, pw)`,
        // `getKey(alias, pw)`, `store(out, pw)`, `setKeyEntry(alias, key, pw, chain)`.
        b"load" | b"init" | b"getKey" | b"store" => (0b10, true, false),
        b"setKeyEntry" => (0b100, true, false),
        // ldapjs's and Net::LDAP's `bind(dn, "…")`.
        b"bind" => {
            return Some(PasswordArgs {
                places: 0b10,
                chars: false,
                random: false,
                dn: true,
            });
        }
        _ => return None,
    };
    Some(PasswordArgs {
        places,
        chars,
        random,
        dn: false,
    })
}

/// A flag whose name says nothing of a password but whose command takes one there (see
/// [`command_flag`]).
pub(crate) struct CommandFlag {
    /// The command, as its line's segment names it.
    pub(crate) command: &'static [u8],
    /// What stands before the password in the argument, if anything (`FILE:PASS`).
    pub(crate) after: Option<u8>,
    /// Whether the command's next argument names the value, as a key does (`gh secret set NAME`).
    pub(crate) named: bool,
}

/// Flags whose names say nothing of a password but whose command takes one there: sendEmail's
/// `-xp PASS`, `gh secret set NAME --body VALUE`, curl's `--cert FILE:PASS` (a client
/// certificate's passphrase).
pub(crate) fn command_flag(dashes: usize, name: &[u8]) -> Option<CommandFlag> {
    let (command, after, named): (&'static [u8], _, _) = match (dashes, name) {
        (1, b"xp") => (b"sendemail", None, false),
        (2, b"body") => (b"gh secret set", None, true),
        (2, b"cert") => (b"curl", Some(b':'), false),
        _ => return None,
    };
    Some(CommandFlag {
        command,
        after,
        named,
    })
}
