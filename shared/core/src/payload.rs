//! Decoding host stdin payloads: tolerant of unknown fields, of invalid UTF-8 bytes and of lone
//! surrogate escapes (repaired to U+FFFD and flagged lossy, so the text is never persisted), and
//! never echoing payload content anywhere.

use serde_json::Value;

/// A decoded JSON payload and whether decoding had to repair it.
#[derive(Debug, Clone)]
pub struct Decoded {
    /// The JSON value.
    pub value: Value,
    /// True when invalid UTF-8 or lone surrogates were replaced: the text is not what the user
    /// typed, so it may be used as a recall query but is never captured.
    pub lossy: bool,
}

/// Decodes stdin bytes as JSON, repairing invalid UTF-8 and lone surrogate escapes.
// Kept out of line: a host's own (speed-optimized) code calls this size-optimized copy.
#[inline(never)]
#[must_use]
pub fn decode(bytes: &[u8]) -> Option<Decoded> {
    if let Ok(value) = serde_json::from_slice::<Value>(bytes) {
        return Some(Decoded { value, lossy: false });
    }
    let text = String::from_utf8_lossy(bytes);
    let repaired = repair_lone_surrogates(&text);
    let candidate = repaired.as_deref().unwrap_or(&text);
    let value = serde_json::from_str::<Value>(candidate).ok()?;
    let lossy = repaired.is_some() || matches!(text, std::borrow::Cow::Owned(_));
    Some(Decoded { value, lossy })
}

/// Replaces `\uD800`–`\uDFFF` escapes that do not form a valid pair with `\uFFFD`. Returns `None`
/// when nothing needed replacing.
#[must_use]
pub fn repair_lone_surrogates(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut changed = false;
    let mut copied = 0;
    let mut i = 0;
    let hex_at = |i: usize| -> Option<u16> {
        let h = text.get(i..i + 4)?;
        u16::from_str_radix(h, 16).ok()
    };
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        if bytes.get(i + 1) != Some(&b'u') {
            i += 2; // an escaped character, e.g. `\\` or `\"`
            continue;
        }
        let Some(unit) = hex_at(i + 2) else {
            i += 2;
            continue;
        };
        let high = (0xD800..0xDC00).contains(&unit);
        let low = (0xDC00..0xE000).contains(&unit);
        if high
            && bytes.get(i + 6) == Some(&b'\\')
            && bytes.get(i + 7) == Some(&b'u')
            && hex_at(i + 8).is_some_and(|next| (0xDC00..0xE000).contains(&next))
        {
            i += 12; // a valid pair
            continue;
        }
        if high || low {
            out.push_str(&text[copied..i]);
            out.push_str("\\uFFFD");
            changed = true;
            copied = i + 6;
        }
        i += 6;
    }
    if !changed {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

/// True when `text` shows nothing: only white space and invisible format characters (zero-width
/// spaces and joiners, the byte-order mark, bidi controls, variation selectors, tag characters,
/// fillers). Such a prompt carries no question to recall for and nothing worth storing.
#[must_use]
pub fn is_blank(text: &str) -> bool {
    text.chars().all(|c| c.is_whitespace() || is_invisible(c))
}

/// Characters that render as nothing (Unicode format characters and their look-alikes).
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{17B4}'
            | '\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{2800}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{13430}'..='\u{1343F}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E007F}'
            | '\u{E0100}'..='\u{E01EF}'
    )
}

/// The first of `fields` that holds a non-blank string (see [`is_blank`]), trimmed.
#[must_use]
pub fn first_text<'a>(value: &'a Value, fields: &[&str]) -> Option<&'a str> {
    fields.iter().find_map(|f| {
        value
            .get(*f)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !is_blank(s))
    })
}

/// A turn number from the roles of a session's earlier entries (`null` for entries that are not
/// messages): 1 + the user messages; anything but an array counts as an empty history. The
/// JavaScript shims (Pi, OpenClaw) send these roles because their hosts give the hook no turn id.
#[must_use]
pub fn turn_from_roles(roles: Option<&Value>) -> String {
    let users = roles.and_then(Value::as_array).map_or(0, |roles| {
        roles.iter().filter(|r| r.as_str() == Some("user")).count()
    });
    (users + 1).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clean_json_is_not_lossy() {
        let d = decode(br#"{"prompt":"h\u00e9llo \ud83d\ude00"}"#).unwrap();
        assert!(!d.lossy);
        assert_eq!(d.value["prompt"], "héllo 😀");
    }

    #[test]
    fn invalid_utf8_is_repaired_and_flagged() {
        let d = decode(b"{\"prompt\":\"a\xffb\"}").unwrap();
        assert!(d.lossy);
        assert_eq!(d.value["prompt"], "a\u{fffd}b");
    }

    #[test]
    fn lone_surrogates_are_repaired_and_flagged() {
        let d = decode(br#"{"prompt":"x\ud800y","cwd":"\udc00"}"#).unwrap();
        assert!(d.lossy);
        assert_eq!(d.value["prompt"], "x\u{fffd}y");
        assert_eq!(d.value["cwd"], "\u{fffd}");
        // A literal backslash followed by `ud800` is text, not an escape.
        assert_eq!(repair_lone_surrogates(r#""\\ud800""#), None);
        // A valid pair stays.
        assert_eq!(repair_lone_surrogates(r#""\ud83d\ude00""#), None);
    }

    #[test]
    fn garbage_is_rejected() {
        assert!(decode(b"not json").is_none());
        assert!(decode(b"").is_none());
    }

    #[test]
    fn invisible_only_text_is_blank() {
        for blank in [
            "",
            " \t\n",
            "\u{200B}",
            "\u{FEFF}\u{200B} \u{2060}\u{200D}",
            "\u{E0041}\u{FE0F}\u{00AD}",
        ] {
            assert!(is_blank(blank), "{blank:?}");
        }
        for text in ["a", "\u{200B}x", "\u{FEFF}é", "👍\u{FE0F}", "\u{3000}字"] {
            assert!(!is_blank(text), "{text:?}");
        }
        let v: Value = serde_json::json!({"a": "\u{200B}\u{FEFF}", "b": "x"});
        assert_eq!(first_text(&v, &["a", "b"]), Some("x"));
    }

    #[test]
    fn first_text_skips_blank_and_non_strings() {
        let v: Value = serde_json::json!({"a": " ", "b": 3, "c": " x "});
        assert_eq!(first_text(&v, &["a", "b", "c"]), Some("x"));
        assert_eq!(first_text(&v, &["a"]), None);
    }
}
