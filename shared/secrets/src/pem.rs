//! PEM blocks and base64 bodies: where a key's armour and its body start and end, and whether the
//! body is an illustration. It reads armour only and must never judge a key-value pair.

use crate::bytes::{contains_ci, line_end, skip_blank, trim_ascii, trim_end_of};
use crate::chars::{base64_digit, mostly_counted};

pub(crate) fn is_base64_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')
}

/// The first line of a DER private key pasted without armor: PKCS#1/#8 (`MII??` + `IBA`, the
/// version integer), EC (`MHcCAQEE`), Ed25519 PKCS#8 (`MC4CAQAw`), OpenSSH (`b3BlbnNzaC1rZXktdjE`),
/// followed by at least one more base64 line. Certificates (`MII??CCA`) do not match.
pub(crate) fn pem_body_at(bytes: &[u8], s: usize) -> bool {
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
pub(crate) fn pem_illustration(body: &[u8]) -> bool {
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

/// A PEM body with no key in it behind the prefix its BEGIN line has (`prefix`: a log line's
/// timestamp and logger, a quoting mark) on every line: the body judged without that column.
/// Each line must open as the prefix does (a log's date, the same mark), so a key pasted at the
/// margin under a header that stands after other text keeps every byte of its body.
pub(crate) fn prefixed_pem_illustration(body: &[u8], prefix: &[u8]) -> bool {
    let column = prefix.len();
    let opening = &prefix[..column.min(4)];
    if prefix.iter().all(u8::is_ascii_whitespace) {
        return false;
    }
    let mut stripped = Vec::with_capacity(body.len());
    let mut lines = body.split(|&b| b == b'\n').peekable();
    while let Some(line) = lines.next() {
        let last = lines.peek().is_none();
        if line.is_empty() && !last {
            continue;
        }
        // The END line's own prefix ends the body.
        if last && line.len() <= column {
            break;
        }
        if line.len() < column || !line.starts_with(opening) {
            return false;
        }
        stripped.extend_from_slice(&line[column..]);
        stripped.push(b'\n');
    }
    pem_illustration(&stripped)
}

/// Whether `v` holds `min` or more base64 bytes in a row, as a key's body lines do.
pub(crate) fn base64_run(v: &[u8], min: usize) -> bool {
    let mut run = 0;
    v.iter().any(|&b| {
        run = if is_base64_byte(b) { run + 1 } else { 0 };
        run >= min
    })
}

/// Whether `v` is standard base64 (padding allowed) of printable ASCII text with a space or
/// of letters run together (`ZHVtbXkgdGV4dA==` is `dummy text`): words encoded, not a key.
pub(crate) fn base64_text(v: &[u8]) -> bool {
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
pub(crate) const MAX_PEM: usize = 16 * 1024;

/// The end of the run of base64 (or PEM header) lines from `pos`.
pub(crate) fn base64_block_end(bytes: &[u8], mut pos: usize) -> usize {
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
pub(crate) fn base64_block_start(bytes: &[u8], i: usize) -> usize {
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

/// Whether base64 `token` decodes to text holding a `:` (HTTP Basic `user:password`).
pub(crate) fn base64_has_colon(token: &[u8]) -> bool {
    let mut acc: u32 = 0;
    let mut bits = 0;
    for &b in token {
        if b == b'=' {
            break;
        }
        let Some(v) = base64_digit(b) else {
            return false;
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

/// The end of a key's body written as quoted strings on the lines after `eol` (its header's
/// line end): each such line holds a run of 32 or more base64 bytes and, besides base64, only
/// quotes, `+`, `,`, `;`, brackets, backslashes and blanks (`"MIIEow…" +`, `'MIIEow…\n'`). `eol`
/// when no line does.
pub(crate) fn quoted_body_end(bytes: &[u8], eol: usize) -> usize {
    let mut end = eol;
    let mut pos = eol;
    while bytes.get(pos) == Some(&b'\n') {
        let start = pos + 1;
        let stop = line_end(bytes, start);
        let line = &bytes[start..stop];
        let framing = |b: &u8| is_base64_byte(*b) || b" \t\r\"'`+,;()[]\\".contains(b);
        if !base64_run(line, 32) || !line.iter().all(framing) {
            break;
        }
        end = stop;
        pos = stop;
    }
    end
}
