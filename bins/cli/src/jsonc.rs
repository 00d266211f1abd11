//! Byte-preserving edits of a JSONC host config (OpenCode's `opencode.json[c]`): parse it with
//! comments and trailing commas, add or remove one member of a nested object, and leave every
//! other byte — comments, ordering, formatting, foreign keys — exactly as it was. It never
//! reformats a file and never touches a member it was not asked about.

use std::ops::Range;

use anyhow::{Result, anyhow, bail};
use serde_json::{Map, Value};

use crate::textstyle::Style;

/// One `"key": value` member of an object, by byte ranges.
#[derive(Debug, Clone)]
struct Member {
    key: String,
    /// From the opening quote of the key.
    start: usize,
    value: Range<usize>,
    /// The `,` after the value, if any.
    comma: Option<usize>,
}

/// An object's braces and members.
#[derive(Debug, Clone)]
struct Object {
    open: usize,
    close: usize,
    members: Vec<Member>,
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn skip(&mut self) -> Result<()> {
        loop {
            match self.s.get(self.i) {
                Some(b' ' | b'\t' | b'\n' | b'\r') => self.i += 1,
                Some(b'/') if self.s.get(self.i + 1) == Some(&b'/') => {
                    while self.i < self.s.len() && self.s[self.i] != b'\n' {
                        self.i += 1;
                    }
                }
                Some(b'/') if self.s.get(self.i + 1) == Some(&b'*') => {
                    let rest = &self.s[self.i + 2..];
                    let end = rest
                        .windows(2)
                        .position(|w| w == b"*/")
                        .ok_or_else(|| anyhow!("unterminated comment"))?;
                    self.i += 2 + end + 2;
                }
                _ => return Ok(()),
            }
        }
    }

    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    fn string(&mut self) -> Result<String> {
        let start = self.i;
        self.i += 1;
        while let Some(&c) = self.s.get(self.i) {
            self.i += 1;
            match c {
                b'\\' => self.i += 1,
                b'"' => {
                    let raw = std::str::from_utf8(&self.s[start..self.i])?;
                    return Ok(serde_json::from_str(raw)?);
                }
                _ => {}
            }
        }
        bail!("unterminated string")
    }

    /// Parses a value; objects are returned with their layout.
    fn value(&mut self, depth: usize) -> Result<(Value, Option<Object>)> {
        if depth > 64 {
            bail!("nested too deeply");
        }
        self.skip()?;
        match self.peek() {
            Some(b'{') => {
                let open = self.i;
                self.i += 1;
                let mut map = Map::new();
                let mut members = Vec::new();
                loop {
                    self.skip()?;
                    match self.peek() {
                        Some(b'}') => {
                            let close = self.i;
                            self.i += 1;
                            return Ok((Value::Object(map), Some(Object { open, close, members })));
                        }
                        Some(b'"') => {}
                        _ => bail!("expected a key at byte {}", self.i),
                    }
                    let start = self.i;
                    let key = self.string()?;
                    self.skip()?;
                    if self.peek() != Some(b':') {
                        bail!("expected `:` at byte {}", self.i);
                    }
                    self.i += 1;
                    self.skip()?;
                    let vstart = self.i;
                    let (v, _) = self.value(depth + 1)?;
                    let vend = self.i;
                    self.skip()?;
                    let comma = if self.peek() == Some(b',') {
                        self.i += 1;
                        Some(self.i - 1)
                    } else {
                        None
                    };
                    map.insert(key.clone(), v);
                    members.push(Member {
                        key,
                        start,
                        value: vstart..vend,
                        comma,
                    });
                    if comma.is_none() {
                        self.skip()?;
                        if self.peek() != Some(b'}') {
                            bail!("expected `,` or `}}` at byte {}", self.i);
                        }
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    self.skip()?;
                    if self.peek() == Some(b']') {
                        self.i += 1;
                        return Ok((Value::Array(items), None));
                    }
                    let (v, _) = self.value(depth + 1)?;
                    items.push(v);
                    self.skip()?;
                    match self.peek() {
                        Some(b',') => self.i += 1,
                        Some(b']') => {}
                        _ => bail!("expected `,` or `]` at byte {}", self.i),
                    }
                }
            }
            Some(b'"') => Ok((Value::String(self.string()?), None)),
            Some(_) => {
                let start = self.i;
                while let Some(c) = self.peek() {
                    if matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r' | b'/') {
                        break;
                    }
                    self.i += 1;
                }
                let raw = std::str::from_utf8(&self.s[start..self.i])?;
                let v: Value =
                    serde_json::from_str(raw).map_err(|_| anyhow!("bad literal at byte {start}"))?;
                Ok((v, None))
            }
            None => bail!("unexpected end"),
        }
    }
}

/// Parses JSONC (comments, trailing commas, a leading byte-order mark) to a value.
pub fn parse(text: &str) -> Result<Value> {
    Ok(parse_root(&Style::split(text).1)?.0)
}

fn parse_root(text: &str) -> Result<(Value, Object)> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    let (v, obj) = p.value(0)?;
    p.skip()?;
    if p.i != text.len() {
        bail!("trailing content at byte {}", p.i);
    }
    let obj = obj.ok_or_else(|| anyhow!("the top level is not an object"))?;
    Ok((v, obj))
}

/// The object at `path` (keys from the root), with its layout.
fn find(text: &str, path: &[&str]) -> Result<Option<Object>> {
    let (_, mut obj) = parse_root(text)?;
    for key in path {
        let Some(m) = obj.members.iter().find(|m| m.key == *key) else {
            return Ok(None);
        };
        let mut p = Parser {
            s: text.as_bytes(),
            i: m.value.start,
        };
        match p.value(0)? {
            (_, Some(o)) => obj = o,
            _ => bail!("`{key}` is not an object"),
        }
    }
    Ok(Some(obj))
}

fn line_indent(text: &str, at: usize) -> Option<&str> {
    let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
    let indent = &text[line_start..at];
    indent.bytes().all(|b| b == b' ' || b == b'\t').then_some(indent)
}

/// Renders `value` pretty-printed, continuation lines indented by `indent`.
fn render(value: &Value, indent: &str) -> String {
    let pretty = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    pretty.replace('\n', &format!("\n{indent}"))
}

/// What [`insert`] did, so [`remove`] can undo exactly that.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Inserted {
    /// A `,` was added after the previous member.
    pub added_comma: bool,
    /// The parent object had to be created.
    pub created_parent: bool,
    /// The object we added to was empty, with this text between its braces.
    pub empty_inner: Option<String>,
}

/// Adds `"key": value` as the last member of the object at `parent` (one level below the root;
/// created when missing; an empty `parent` is the root itself). Fails if the key is already there.
///
/// The file's byte-order mark and CRLF line ends are kept (new lines use them too).
pub fn insert(text: &str, parent: &str, key: &str, value: &Value) -> Result<(String, Inserted)> {
    let (style, plain) = Style::split(text);
    let (out, how) = insert_plain(&plain, parent, key, value)?;
    Ok((style.join(&out), how))
}

fn insert_plain(text: &str, parent: &str, key: &str, value: &Value) -> Result<(String, Inserted)> {
    let root = find(text, &[])?.ok_or_else(|| anyhow!("no root object"))?;
    if parent.is_empty() {
        if root.members.iter().any(|m| m.key == key) {
            bail!("`{key}` already exists");
        }
        let empty_inner = root
            .members
            .is_empty()
            .then(|| text[root.open + 1..root.close].to_owned());
        let (out, added_comma) = insert_member(text, &root, "", key, value, 1);
        return Ok((
            out,
            Inserted {
                added_comma,
                created_parent: false,
                empty_inner,
            },
        ));
    }
    match find(text, &[parent])? {
        Some(obj) => {
            if obj.members.iter().any(|m| m.key == key) {
                bail!("`{parent}.{key}` already exists");
            }
            let empty_inner = obj
                .members
                .is_empty()
                .then(|| text[obj.open + 1..obj.close].to_owned());
            let (out, added_comma) = insert_member(text, &obj, &root_indent(text, &root), key, value, 2);
            Ok((
                out,
                Inserted {
                    added_comma,
                    created_parent: false,
                    empty_inner,
                },
            ))
        }
        None => {
            let mut inner = Map::new();
            inner.insert(key.to_owned(), value.clone());
            let empty_inner = root
                .members
                .is_empty()
                .then(|| text[root.open + 1..root.close].to_owned());
            let (out, added_comma) = insert_member(text, &root, "", parent, &Value::Object(inner), 1);
            Ok((
                out,
                Inserted {
                    added_comma,
                    created_parent: true,
                    empty_inner,
                },
            ))
        }
    }
}

/// The indentation of the root object's members' parent line (normally empty).
fn root_indent(text: &str, root: &Object) -> String {
    let parent = root
        .members
        .first()
        .and_then(|m| line_indent(text, m.start))
        .unwrap_or("  ");
    parent.to_owned()
}

fn insert_member(
    text: &str,
    obj: &Object,
    parent_indent: &str,
    key: &str,
    value: &Value,
    depth: usize,
) -> (String, bool) {
    let key_json = Value::String(key.to_owned()).to_string();
    match obj.members.last() {
        Some(last) => {
            let indent = line_indent(text, last.start).map_or_else(|| "  ".repeat(depth), str::to_owned);
            let member = format!("\n{indent}{key_json}: {}", render(value, &indent));
            match last.comma {
                Some(c) => {
                    let mut out = text[..=c].to_owned();
                    out.push_str(&member);
                    out.push_str(&text[c + 1..]);
                    (out, false)
                }
                None => {
                    let at = last.value.end;
                    let mut out = text[..at].to_owned();
                    out.push(',');
                    out.push_str(&member);
                    out.push_str(&text[at..]);
                    (out, true)
                }
            }
        }
        None => {
            let close_indent = line_indent(text, obj.close).map_or(parent_indent, |i| i);
            let indent = format!("{close_indent}  ");
            let inner = &text[obj.open + 1..obj.close];
            let member = format!("\n{indent}{key_json}: {}", render(value, &indent));
            let mut out = text[..=obj.open].to_owned();
            out.push_str(&member);
            if inner.trim().is_empty() {
                out.push('\n');
                out.push_str(close_indent);
                out.push_str(&text[obj.close..]);
            } else {
                out.push_str(&text[obj.open + 1..]);
            }
            (out, false)
        }
    }
}

/// The value of `parent.key` (of the root's `key` when `parent` is empty), if present.
pub fn get(text: &str, parent: &str, key: &str) -> Result<Option<Value>> {
    let root = parse(text)?;
    let obj = if parent.is_empty() {
        Some(&root)
    } else {
        root.get(parent)
    };
    Ok(obj.and_then(|p| p.get(key)).cloned())
}

/// The object path of `parent` (the root when empty).
fn path_of(parent: &str) -> Vec<&str> {
    if parent.is_empty() {
        Vec::new()
    } else {
        vec![parent]
    }
}

/// Replaces the value of an existing `parent.key`, keeping everything around it.
pub fn replace(text: &str, parent: &str, key: &str, value: &Value) -> Result<String> {
    Style::edit(text, |plain| replace_plain(plain, parent, key, value))
}

fn replace_plain(text: &str, parent: &str, key: &str, value: &Value) -> Result<String> {
    let obj = find(text, &path_of(parent))?.ok_or_else(|| anyhow!("no `{parent}` object"))?;
    let m = obj
        .members
        .iter()
        .find(|m| m.key == key)
        .ok_or_else(|| anyhow!("no `{parent}.{key}`"))?;
    let indent = line_indent(text, m.start).unwrap_or("");
    let mut out = text[..m.value.start].to_owned();
    out.push_str(&render(value, indent));
    out.push_str(&text[m.value.end..]);
    Ok(out)
}

/// Removes `parent.key` (and `parent` itself when `how.created_parent` and it is now empty),
/// undoing [`insert`] byte for byte when nothing else changed.
pub fn remove(text: &str, parent: &str, key: &str, how: &Inserted) -> Result<String> {
    Style::edit(text, |plain| remove_plain(plain, parent, key, how))
}

fn remove_plain(text: &str, parent: &str, key: &str, how: &Inserted) -> Result<String> {
    let Some(obj) = find(text, &path_of(parent))? else {
        return Ok(text.to_owned());
    };
    let Some(idx) = obj.members.iter().position(|m| m.key == key) else {
        return Ok(text.to_owned());
    };
    let (target, idx) = if obj.members.len() == 1 && how.created_parent {
        let root = find(text, &[])?.ok_or_else(|| anyhow!("no root object"))?;
        let pidx = root
            .members
            .iter()
            .position(|m| m.key == parent)
            .ok_or_else(|| anyhow!("no `{parent}`"))?;
        (root, pidx)
    } else {
        (obj, idx)
    };
    if target.members.len() == 1
        && let Some(inner) = &how.empty_inner
    {
        let mut out = text[..=target.open].to_owned();
        out.push_str(inner);
        out.push_str(&text[target.close..]);
        return Ok(out);
    }
    let is_last = idx + 1 == target.members.len();
    Ok(cut_member(text, &target, idx, is_last && how.added_comma))
}

/// Cuts member `idx` with its line; `drop_prev_comma` also removes the previous member's comma.
fn cut_member(text: &str, obj: &Object, idx: usize, drop_prev_comma: bool) -> String {
    let m = &obj.members[idx];
    let mut start = m.start;
    let mut end = m.comma.map_or(m.value.end, |c| c + 1);
    if let Some(indent) = line_indent(text, m.start) {
        // Whole line: from its start through its newline, when nothing else is on it.
        let rest = &text[end..];
        let tail = rest.len() - rest.trim_start_matches([' ', '\t']).len();
        if text[end + tail..].starts_with('\n') {
            start = m.start - indent.len();
            end += tail + 1;
        } else if text[end + tail..].starts_with('}') && start > indent.len() {
            // `…, "key": v }` style on a line that ends the object: cut the newline before.
            start = m.start - indent.len() - 1;
            end += tail;
            end -= text[..end].len() - text[..end].trim_end_matches([' ', '\t']).len();
        }
    }
    let prev_comma = if drop_prev_comma && m.comma.is_none() && idx > 0 {
        obj.members[idx - 1].comma
    } else {
        None
    };
    let mut out = String::with_capacity(text.len());
    match prev_comma {
        Some(c) => {
            out.push_str(&text[..c]);
            out.push_str(&text[c + 1..start]);
        }
        None => out.push_str(&text[..start]),
    }
    out.push_str(&text[end..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ours() -> Value {
        json!({"type": "remote", "url": "http://127.0.0.1:9/mcp", "enabled": true})
    }

    #[test]
    fn insert_then_remove_is_byte_exact() {
        let cases = [
            "{\n  // mine\n  \"model\": \"x/y\", /* keep */\n  \"mcp\": {\n    \"other\": {\"type\": \"local\"}\n  }\n}\n",
            "{\n  \"model\": \"x/y\",\n  \"mcp\": {\n    \"other\": {\"type\": \"local\"},\n  },\n}\n",
            "{\n  \"model\": \"x/y\"\n}\n",
            "{\n  \"model\": \"x/y\",\n  \"mcp\": {}\n}\n",
            "{\n  \"mcp\": {\n  }\n}",
            "{}\n",
            "{\"a\":1}",
        ];
        for text in cases {
            let (new, how) = insert(text, "mcp", "powercontext", &ours()).unwrap();
            assert_eq!(get(&new, "mcp", "powercontext").unwrap(), Some(ours()), "{new}");
            // Everything else still parses to the same.
            let mut before = parse(text).unwrap();
            let mut after = parse(&new).unwrap();
            after["mcp"].as_object_mut().unwrap().remove("powercontext");
            if how.created_parent {
                after.as_object_mut().unwrap().remove("mcp");
            }
            before.as_object_mut().unwrap();
            assert_eq!(before, after, "{new}");
            let back = remove(&new, "mcp", "powercontext", &how).unwrap();
            assert_eq!(back, text, "inserted:\n{new}");
        }
    }

    #[test]
    fn a_root_member_inserts_and_removes_byte_exact() {
        let line = json!({"type": "command", "command": "/x/powercontext-hooks statusline", "padding": 0});
        let cases = [
            "{\n  \"model\": \"opus\",\n  \"enabledPlugins\": {\"a@b\": true}\n}\n",
            "{\n  \"model\": \"opus\",\n}\n",
            "{}\n",
            "{\"a\":1}",
        ];
        for text in cases {
            let (new, how) = insert(text, "", "statusLine", &line).unwrap();
            assert_eq!(get(&new, "", "statusLine").unwrap(), Some(line.clone()), "{new}");
            let mut after = parse(&new).unwrap();
            after.as_object_mut().unwrap().remove("statusLine");
            assert_eq!(parse(text).unwrap(), after, "{new}");
            let swapped = replace(
                &new,
                "",
                "statusLine",
                &json!({"type": "command", "command": "y"}),
            )
            .unwrap();
            assert_eq!(get(&swapped, "", "statusLine").unwrap().unwrap()["command"], "y");
            assert_eq!(
                remove(&new, "", "statusLine", &how).unwrap(),
                text,
                "inserted:\n{new}"
            );
            assert!(insert(&new, "", "statusLine", &line).is_err());
        }
    }

    #[test]
    fn replace_and_foreign_members_survive() {
        let text = "{\n  \"mcp\": {\n    \"powercontext\": {\"url\": \"a\"}, // c\n    \"z\": 1\n  }\n}\n";
        let new = replace(text, "mcp", "powercontext", &json!({"url": "b"})).unwrap();
        assert_eq!(parse(&new).unwrap()["mcp"]["powercontext"]["url"], "b");
        assert!(new.contains("// c\n    \"z\": 1"));
        let gone = remove(&new, "mcp", "powercontext", &Inserted::default()).unwrap();
        // The user's comment on that line stays.
        assert_eq!(gone, "{\n  \"mcp\": {\n     // c\n    \"z\": 1\n  }\n}\n");
        assert!(insert(text, "mcp", "powercontext", &json!(1)).is_err());
        assert!(parse("{\"a\": }").is_err());
        assert!(parse("[1]").is_err());
    }

    #[test]
    fn bom_and_crlf_are_kept_and_undone_byte_for_byte() {
        let text = "\u{feff}{\r\n  // mine\r\n  \"model\": \"x/y\"\r\n}\r\n";
        assert_eq!(parse(text).unwrap()["model"], "x/y");
        let v = serde_json::json!({"type": "remote", "url": "http://127.0.0.1:1/mcp"});
        let (new, how) = insert(text, "mcp", "powercontext", &v).unwrap();
        assert!(new.starts_with('\u{feff}'), "{new:?}");
        assert_eq!(new.matches('\n').count(), new.matches("\r\n").count(), "{new:?}");
        assert_eq!(get(&new, "mcp", "powercontext").unwrap().unwrap(), v);
        assert_eq!(remove(&new, "mcp", "powercontext", &how).unwrap(), text);
    }
}
