//! CSV, TSV and markdown tables: a header naming secret columns and a row's cells. It splits and
//! names cells; what a cell holds is judged by the caller, never here.

use crate::bytes::{contains_ci, skip_blank, trim_end_of};
use crate::words::{Strength, is_key_byte, secret_word};

/// A table whose header names secret columns: the cells under them in each row are values.
#[derive(Clone, Copy)]
pub(crate) struct Table {
    pub(crate) delim: u8,
    pub(crate) cells: usize,
    /// A bit per column (the first 64) whose header names a secret.
    pub(crate) secret: u64,
    /// Of those, the `token` columns: lexer, design and model tokens are tabulated as often as
    /// credentials, so only a random-looking cell counts.
    pub(crate) weak: u64,
    /// The name of each of the first 64 columns, `[start, end)` without quotes: split once, not
    /// for every cell of every row.
    pub(crate) names: [(usize, usize); 64],
}

/// A header row of a CSV, TSV or markdown table (`user,password`, `| user | password |`) or a SQL
/// column list: every cell a short name, at least one naming a secret with a strong word (the
/// header of a password manager's export: `name,url,username,password`).
pub(crate) fn table_header(bytes: &[u8], start: usize, end: usize, delim: u8) -> Option<Table> {
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
        // (`return user, token`) unless the cell opens with a capital, as an export's column
        // titles do (`Client ID,Client secret`, `Secret access key`).
        let spaces = name.iter().filter(|&&b| b == b' ').count();
        let titled = name.first().is_some_and(u8::is_ascii_uppercase) && spaces <= 3;
        let name_like = name.len() <= 64
            && name.iter().all(|&b| is_key_byte(b) || b == b' ')
            && (spaces <= usize::from(delim == b'|') || titled);
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
pub(crate) fn for_each_cell(
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

/// The span of a cell `[s, e)` without the quotes, backticks or markdown emphasis around it.
pub(crate) fn unquoted(bytes: &[u8], s: usize, e: usize) -> (usize, usize) {
    let wrap = |b: &u8| matches!(b, b'"' | b'\'' | b'`' | b'*');
    let start = s + bytes[s..e].iter().take_while(|b| wrap(b)).count();
    (
        start,
        e - bytes[start..e].iter().rev().take_while(|b| wrap(b)).count(),
    )
}

/// The first of `stops` at the top level of a parenthesised list from `pos` (nested brackets and
/// quoted strings skipped), within `limit` bytes; `None` if the list closes first.
pub(crate) fn top_level(bytes: &[u8], pos: usize, stops: &[u8], limit: usize) -> Option<usize> {
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
