//! Byte-preserving edits of a JSONC host config (OpenCode's `opencode.json[c]`, Claude Code's
//! settings, OpenClaw's `openclaw.json`): add, replace or remove one member of the root object or
//! of an object below it (its parent named by a dotted path, `plugins.entries`), or one element of an array there (a hooks list), and leave every other byte (comments, trailing commas, layout, foreign keys, CRLF, a
//! byte-order mark) exactly as it was. It never reformats a file and never touches a member it
//! was not asked about.
//!
//! Parsing and lookup are `jsonc-parser`'s CST, which prints back every byte it read (so it also
//! gives each node's byte offset). Adding and removing a member stay two small splices here: the
//! crate's `append` re-lays out the user's object (a one-line object becomes multi-line, blank
//! lines at its start and end go) and its `remove` collapses an emptied `{ }` to `{}`, drops a
//! comment written after the member on its line and drops the previous member's comma whether or
//! not we added it, so neither could undo our insert byte for byte or keep the user's comment.

use anyhow::{Result, anyhow, bail};
use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstNode, CstObject, CstRootNode};
use serde_json::{Map, Value};

use crate::support::textstyle::Style;

/// JSON plus comments and trailing commas, nothing looser (the JSONC the hosts read).
fn options() -> ParseOptions {
    ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
        allow_bare_decimal_point_numbers: false,
        allow_non_finite_numbers: false,
        allow_extended_string_escapes: false,
    }
}

/// A parsed file. The CST's nodes only reach their ancestors while the root lives, so it is kept.
struct Doc {
    root: CstRootNode,
    top: CstObject,
}

impl Doc {
    fn parse(text: &str) -> Result<Self> {
        let root = CstRootNode::parse(text, &options())?;
        let top = root
            .object_value()
            .ok_or_else(|| anyhow!("the top level is not an object"))?;
        Ok(Self { root, top })
    }

    /// The object at `parent` (a dotted path; the root when empty), if present.
    fn object(&self, parent: &str) -> Result<Option<CstObject>> {
        let mut at = self.top.clone();
        for (i, name) in segments(parent).enumerate() {
            match at.get(name) {
                None => return Ok(None),
                Some(p) => {
                    at = p.object_value().ok_or_else(|| {
                        anyhow!(
                            "`{}` is not an object",
                            segments(parent).take(i + 1).collect::<Vec<_>>().join(".")
                        )
                    })?;
                }
            }
        }
        Ok(Some(at))
    }

    /// The longest prefix of `parent` that exists as objects: its segment count and object.
    fn deepest(&self, parent: &str) -> Result<(usize, CstObject)> {
        let names: Vec<&str> = segments(parent).collect();
        for n in (0..=names.len()).rev() {
            if let Some(obj) = self.object(&names[..n].join("."))? {
                return Ok((n, obj));
            }
        }
        Ok((0, self.top.clone()))
    }
}

/// The names of a dotted parent path (none for the root).
fn segments(parent: &str) -> impl Iterator<Item = &str> {
    parent.split('.').filter(|s| !s.is_empty())
}

/// One `"key": value` member of an object, by byte offsets.
#[derive(Debug, Clone)]
struct Member {
    key: String,
    /// From the opening quote of the key.
    start: usize,
    /// Just past the value.
    end: usize,
    /// The `,` after the value, if any.
    comma: Option<usize>,
}

/// An object's braces and members, by byte offsets.
#[derive(Debug, Clone)]
struct Object {
    open: usize,
    close: usize,
    members: Vec<Member>,
}

/// Where `node` starts in the text it was parsed from.
fn offset(node: CstNode) -> usize {
    let mut at = 0;
    let mut node = node;
    loop {
        at += node
            .previous_siblings()
            .map(|s| s.to_string().len())
            .sum::<usize>();
        match node.parent() {
            Some(parent) => node = parent.into(),
            None => return at,
        }
    }
}

fn layout(obj: &CstObject) -> Object {
    let open = offset(obj.clone().into());
    let mut at = open;
    let mut members: Vec<Member> = Vec::new();
    for child in obj.children() {
        let len = child.to_string().len();
        if let Some(prop) = child.as_object_prop() {
            members.push(Member {
                key: prop.decoded_name().unwrap_or_default(),
                start: at,
                end: at + len,
                comma: None,
            });
        } else if child.is_comma()
            && let Some(m) = members.last_mut()
        {
            m.comma = Some(at);
        }
        at += len;
    }
    Object {
        open,
        close: at - 1,
        members,
    }
}

/// The names of the root object's members, in the file's order.
pub fn root_keys(text: &str) -> Result<Vec<String>> {
    let doc = Doc::parse(&Style::split(text).1)?;
    Ok(layout(&doc.top).members.into_iter().map(|m| m.key).collect())
}

/// Parses JSONC (comments, trailing commas, a leading byte-order mark) to a value.
pub fn parse(text: &str) -> Result<Value> {
    let doc = Doc::parse(&Style::split(text).1)?;
    doc.root
        .to_serde_value()
        .ok_or_else(|| anyhow!("the top level is not an object"))
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

#[expect(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde's skip_serializing_if signature"
)]
fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// What [`insert`] did, so [`remove`] can undo exactly that.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Inserted {
    /// A `,` was added after the previous member.
    pub added_comma: bool,
    /// The parent object had to be created.
    pub created_parent: bool,
    /// How many leading segments of a dotted parent already existed when it was created (the
    /// member inserted is the next segment, in that object); 0 for a one-level parent.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub parent_existed: usize,
    /// The object we added to was empty, with this text between its braces.
    pub empty_inner: Option<String>,
}

/// Adds `"key": value` as the last member of the object at `parent` (a dotted path below the root;
/// the missing part of it created; an empty `parent` is the root itself). Fails if the key is
/// already there.
///
/// The file's byte-order mark and CRLF line ends are kept (new lines use them too).
pub fn insert(text: &str, parent: &str, key: &str, value: &Value) -> Result<(String, Inserted)> {
    let (style, plain) = Style::split(text);
    let (out, how) = insert_plain(&plain, parent, key, value)?;
    Ok((style.join(&out), how))
}

fn insert_plain(text: &str, parent: &str, key: &str, value: &Value) -> Result<(String, Inserted)> {
    let doc = Doc::parse(text)?;
    let root = layout(&doc.top);
    let names: Vec<&str> = segments(parent).collect();
    let (existed, obj) = doc.deepest(parent)?;
    let (target, depth, key, value, created_parent) = if existed == names.len() {
        if obj.get(key).is_some() {
            let at = if parent.is_empty() {
                String::new()
            } else {
                format!("{parent}.")
            };
            bail!("`{at}{key}` already exists")
        }
        (layout(&obj), names.len() + 1, key, value.clone(), false)
    } else {
        // The missing part of the path is created around the member, in the deepest object there.
        let mut inner = Value::Object(Map::from_iter([(key.to_owned(), value.clone())]));
        for name in names[existed + 1..].iter().rev() {
            inner = Value::Object(Map::from_iter([((*name).to_owned(), inner)]));
        }
        (layout(&obj), existed + 1, names[existed], inner, true)
    };
    let parent_indent = if depth == 1 {
        String::new()
    } else {
        root_indent(text, &root).repeat(depth - 1)
    };
    let empty_inner = target
        .members
        .is_empty()
        .then(|| text[target.open + 1..target.close].to_owned());
    let (out, added_comma) = insert_member(text, &target, &parent_indent, key, &value, depth);
    Ok((
        out,
        Inserted {
            added_comma,
            created_parent,
            parent_existed: if created_parent { existed } else { 0 },
            empty_inner,
        },
    ))
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
            let (after, added_comma) = last.comma.map_or((last.end, true), |c| (c + 1, false));
            // A comment closing the last member's line stays on that line, above our member:
            // then our member is a line of its own, which `remove` cuts whole.
            let at = comment_line_end(text, after).unwrap_or(after);
            let mut out = text[..last.end].to_owned();
            if added_comma {
                out.push(',');
            }
            out.push_str(&text[last.end..at]);
            out.push_str(&member);
            out.push_str(&text[at..]);
            (out, added_comma)
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

/// The end of the line starting at `at` (its `\n`) when the rest of that line is one comment.
fn comment_line_end(text: &str, at: usize) -> Option<usize> {
    let eol = text[at..].find('\n').map(|n| at + n)?;
    let rest = text[at..eol].trim();
    let single = rest.starts_with("//");
    let block = rest.starts_with("/*") && rest.find("*/") == Some(rest.len() - 2);
    (single || block).then_some(eol)
}

/// The value of `parent.key` (of the root's `key` when `parent` is empty), if present.
pub fn get(text: &str, parent: &str, key: &str) -> Result<Option<Value>> {
    let root = parse(text)?;
    let obj = segments(parent).try_fold(&root, |at, name| at.get(name));
    Ok(obj.and_then(|p| p.get(key)).cloned())
}

/// Replaces the value of an existing `parent.key`, keeping everything around it.
pub fn replace(text: &str, parent: &str, key: &str, value: &Value) -> Result<String> {
    Style::edit(text, |plain| replace_plain(plain, parent, key, value))
}

fn replace_plain(text: &str, parent: &str, key: &str, value: &Value) -> Result<String> {
    let doc = Doc::parse(text)?;
    let missing = || anyhow!("no `{parent}.{key}`");
    let prop = doc.object(parent)?.and_then(|o| o.get(key)).ok_or_else(missing)?;
    let old = prop.value().ok_or_else(missing)?;
    let start = offset(old.clone());
    let indent = line_indent(text, offset(prop.into())).unwrap_or("");
    let mut out = text[..start].to_owned();
    out.push_str(&render(value, indent));
    out.push_str(&text[start + old.to_string().len()..]);
    Ok(out)
}

/// Removes `parent.key` (and `parent` itself when `how.created_parent` and it is now empty),
/// undoing [`insert`] byte for byte when nothing else changed.
pub fn remove(text: &str, parent: &str, key: &str, how: &Inserted) -> Result<String> {
    Style::edit(text, |plain| remove_plain(plain, parent, key, how))
}

fn remove_plain(text: &str, parent: &str, key: &str, how: &Inserted) -> Result<String> {
    let doc = Doc::parse(text)?;
    let Some(obj) = doc.object(parent)?.as_ref().map(layout) else {
        return Ok(text.to_owned());
    };
    let Some(idx) = obj.members.iter().position(|m| m.key == key) else {
        return Ok(text.to_owned());
    };
    let names: Vec<&str> = segments(parent).collect();
    // Parents we created go with our member, from the deepest up, while each holds nothing else.
    let mut level = names.len();
    if how.created_parent {
        while level > how.parent_existed.min(names.len())
            && doc
                .object(&names[..level].join("."))?
                .is_some_and(|o| layout(&o).members.len() == 1)
        {
            level -= 1;
        }
    }
    let (target, idx) = if level < names.len() {
        let outer = doc
            .object(&names[..level].join("."))?
            .as_ref()
            .map(layout)
            .ok_or_else(|| anyhow!("no `{parent}`"))?;
        let pidx = outer
            .members
            .iter()
            .position(|m| m.key == names[level])
            .ok_or_else(|| anyhow!("no `{parent}`"))?;
        (outer, pidx)
    } else {
        (obj, idx)
    };
    // The text that was between the braces is put back only in the object we inserted into.
    let inserted_here = !how.created_parent || level == how.parent_existed;
    if target.members.len() == 1
        && inserted_here
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

/// The root object's members put back in `order` (their names), each member's own text and every
/// separator between members kept: only which member stands in which slot changes. The text as
/// it is unless the root has exactly the members `order` names.
pub fn reorder_root(text: &str, order: &[String]) -> Result<String> {
    Style::edit(text, |plain| {
        let doc = Doc::parse(plain)?;
        let obj = layout(&doc.top);
        let mut names: Vec<&str> = obj.members.iter().map(|m| m.key.as_str()).collect();
        names.sort_unstable();
        let mut wanted: Vec<&str> = order.iter().map(String::as_str).collect();
        wanted.sort_unstable();
        if names != wanted {
            return Ok(plain.to_owned());
        }
        let by_name = |k: &str| obj.members.iter().find(|m| m.key == k);
        let mut out = String::with_capacity(plain.len());
        let mut at = 0;
        for (slot, key) in obj.members.iter().zip(order) {
            let Some(m) = by_name(key) else {
                return Ok(plain.to_owned());
            };
            out.push_str(&plain[at..slot.start]);
            out.push_str(&plain[m.start..m.end]);
            at = slot.end;
        }
        out.push_str(&plain[at..]);
        Ok(out)
    })
}

/// Cuts member `idx` with its line; `drop_prev_comma` also removes the previous member's comma.
fn cut_member(text: &str, obj: &Object, idx: usize, drop_prev_comma: bool) -> String {
    let m = &obj.members[idx];
    let mut start = m.start;
    let mut end = m.comma.map_or(m.end, |c| c + 1);
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

/// One element of an array, by byte offsets.
#[derive(Debug, Clone)]
struct Element {
    start: usize,
    end: usize,
}

/// An array's brackets and elements, by byte offsets.
#[derive(Debug, Clone)]
struct Array {
    open: usize,
    close: usize,
    elements: Vec<Element>,
}

/// The array at `parent.key`: `None` when the member is absent, an error when it is not an array.
fn array_at(doc: &Doc, parent: &str, key: &str) -> Result<Option<Array>> {
    let Some(prop) = doc.object(parent)?.and_then(|o| o.get(key)) else {
        return Ok(None);
    };
    let arr = prop
        .value()
        .and_then(|v| v.as_array())
        .ok_or_else(|| anyhow!("`{parent}.{key}` is not an array"))?;
    let open = offset(arr.clone().into());
    let mut at = open;
    let mut elements = Vec::new();
    for child in arr.children() {
        let len = child.to_string().len();
        if !child.is_trivia() && !child.is_token() {
            elements.push(Element {
                start: at,
                end: at + len,
            });
        }
        at += len;
    }
    Ok(Some(Array {
        open,
        close: at - 1,
        elements,
    }))
}

/// Appends `value` as the last element of the array at `parent.key` (which must exist), keeping
/// every other byte. Returns the new text and, when the array was empty, the text that stood
/// between its brackets (what [`pull`] puts back when our element is the only one again).
pub fn push(text: &str, parent: &str, key: &str, value: &Value) -> Result<(String, Option<String>)> {
    let (style, plain) = Style::split(text);
    let doc = Doc::parse(&plain)?;
    let arr = array_at(&doc, parent, key)?.ok_or_else(|| anyhow!("no `{parent}.{key}`"))?;
    let (out, empty) = match arr.elements.last() {
        Some(last) => {
            // After the last element: `,` and our element on a line of its own (indented like
            // that element), or inline when the array is written on one line.
            let item = match line_indent(&plain, last.start) {
                Some(indent) => format!(",\n{indent}{}", render(value, indent)),
                None => format!(", {value}"),
            };
            let mut out = plain[..last.end].to_owned();
            out.push_str(&item);
            out.push_str(&plain[last.end..]);
            (out, None)
        }
        None => {
            let inner = plain[arr.open + 1..arr.close].to_owned();
            let close_indent = line_indent(&plain, arr.close)
                .map(str::to_owned)
                .or_else(|| line_indent(&plain, offset_line_start(&plain, arr.open)).map(str::to_owned))
                .unwrap_or_default();
            let indent = format!("{close_indent}  ");
            let mut out = plain[..=arr.open].to_owned();
            out.push('\n');
            out.push_str(&indent);
            out.push_str(&render(value, &indent));
            out.push('\n');
            out.push_str(&close_indent);
            out.push_str(&plain[arr.close..]);
            (out, Some(inner))
        }
    };
    Ok((style.join(&out), empty))
}

/// Where the first non-blank character of the line holding `at` is.
fn offset_line_start(text: &str, at: usize) -> usize {
    let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
    line_start + (text[line_start..at].len() - text[line_start..at].trim_start_matches([' ', '\t']).len())
}

/// The elements of the array at `parent.key` (`None` when absent).
pub fn elements(text: &str, parent: &str, key: &str) -> Result<Option<Vec<Value>>> {
    let root = parse(text)?;
    let obj = if parent.is_empty() {
        Some(&root)
    } else {
        root.get(parent)
    };
    match obj.and_then(|p| p.get(key)) {
        None => Ok(None),
        Some(Value::Array(items)) => Ok(Some(items.clone())),
        Some(_) => bail!("`{parent}.{key}` is not an array"),
    }
}

/// Removes element `index` of the array at `parent.key`, undoing [`push`] byte for byte when
/// nothing else changed: the separator before it goes with it (after the first element, the one
/// after it). `empty_inner`: what stood between the brackets before [`push`] made the array
/// non-empty, put back when this was the only element.
pub fn pull(text: &str, parent: &str, key: &str, index: usize, empty_inner: Option<&str>) -> Result<String> {
    Style::edit(text, |plain| {
        let doc = Doc::parse(plain)?;
        let arr = array_at(&doc, parent, key)?.ok_or_else(|| anyhow!("no `{parent}.{key}`"))?;
        let Some(el) = arr.elements.get(index) else {
            bail!("`{parent}.{key}` has no element {index}");
        };
        let (start, end) = if arr.elements.len() == 1 {
            if empty_inner.is_some() {
                (arr.open + 1, arr.close)
            } else {
                (el.start, el.end)
            }
        } else if index > 0 {
            (arr.elements[index - 1].end, el.end)
        } else {
            (el.start, arr.elements[1].start)
        };
        let mut out = plain[..start].to_owned();
        if arr.elements.len() == 1
            && let Some(inner) = empty_inner
        {
            out.push_str(inner);
        }
        out.push_str(&plain[end..]);
        Ok(out)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_members_go_back_to_their_order_with_every_separator_kept() {
        let text = "\u{feff}{\r\n  \"model\": \"x\",\r\n  \"theme\": {\"a\": 1} // mine\r\n}\r\n";
        assert_eq!(root_keys(text).unwrap(), ["model", "theme"]);
        let order = ["theme".to_owned(), "model".to_owned()];
        assert_eq!(
            reorder_root(text, &order).unwrap(),
            "\u{feff}{\r\n  \"theme\": {\"a\": 1},\r\n  \"model\": \"x\" // mine\r\n}\r\n"
        );
        // A different set of members: left as it is.
        assert_eq!(reorder_root(text, &order[..1]).unwrap(), text);
    }
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
            "{\n  \"mcp\": {\n    \"other\": {\"type\": \"local\"}, // mine\n  }\n}\n",
            "{\n  \"mcp\": {\n    \"other\": {\"type\": \"local\"} // mine\n  }\n}\n",
            "{\n  \"mcp\": {\n    \"other\": 1 /* mine */\n  }\n}\n",
            "{\n  \"mcp\": {\n    \"other\": 1 /* a */ /* b */ , \"x\": 2 // c\n  }\n}\n",
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
            // A comment closing the last member's line stays on that line, after its comma.
            if text.contains("} // mine") || text.contains("}, // mine") {
                assert!(
                    new.contains("\"other\": {\"type\": \"local\"}, // mine\n"),
                    "{new}"
                );
            }
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
    fn only_comments_and_trailing_commas_are_accepted_beyond_json() {
        assert_eq!(
            parse("{\"a\": [1, 2,], /* c */ \"b\": {},} // c").unwrap(),
            json!({"a": [1, 2], "b": {}})
        );
        for looser in [
            "{'a': 1}",
            "{a: 1}",
            "{\"a\": 0x1}",
            "{\"a\": +1}",
            "{\"a\": .5}",
            "{\"a\": NaN}",
            "{\"a\": 1 \"b\": 2}",
            "{\"a\": \"\\x41\"}",
            "{} {}",
        ] {
            assert!(parse(looser).is_err(), "{looser}");
        }
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

    #[test]
    fn push_then_pull_is_byte_exact_and_keeps_foreign_elements() {
        let ours = json!({"hooks": [{"type": "command", "command": "/x/hook", "timeout": 10}]});
        let cases = [
            "{\n  \"hooks\": {\n    \"Stop\": [\n      {\"hooks\": [{\"type\": \"command\", \"command\": \"mine\"}]}\n    ]\n  }\n}\n",
            "{\n  \"hooks\": {\n    \"Stop\": [\n      {\"hooks\": []}, // mine\n    ]\n  }\n}\n",
            "{\"hooks\": {\"Stop\": [{\"hooks\": []}]}}",
            "{\"hooks\": {\"Stop\": []}}",
            "{\n  \"hooks\": {\n    \"Stop\": [ ]\n  }\n}\n",
            "\u{feff}{\r\n  \"hooks\": {\r\n    \"Stop\": [\r\n      1\r\n    ]\r\n  }\r\n}\r\n",
        ];
        for text in cases {
            let before = elements(text, "hooks", "Stop").unwrap().unwrap();
            let (new, empty) = push(text, "hooks", "Stop", &ours).unwrap();
            let after = elements(&new, "hooks", "Stop").unwrap().unwrap();
            assert_eq!(after.len(), before.len() + 1, "{new}");
            assert_eq!(after.last(), Some(&ours), "{new}");
            assert_eq!(&after[..before.len()], &before[..], "{new}");
            let back = pull(&new, "hooks", "Stop", before.len(), empty.as_deref()).unwrap();
            assert_eq!(back, text);
        }
        // An element the user added after ours stays when ours goes.
        let text = "{\"hooks\": {\"Stop\": [1]}}";
        let (new, empty) = push(text, "hooks", "Stop", &ours).unwrap();
        let (new, _) = push(&new, "hooks", "Stop", &json!(2)).unwrap();
        let back = pull(&new, "hooks", "Stop", 1, empty.as_deref()).unwrap();
        assert_eq!(
            elements(&back, "hooks", "Stop").unwrap().unwrap(),
            [json!(1), json!(2)]
        );
        // Ours first, a foreign one after it.
        let text = "{\"hooks\": {\"Stop\": []}}";
        let (new, empty) = push(text, "hooks", "Stop", &ours).unwrap();
        let (new, _) = push(&new, "hooks", "Stop", &json!(2)).unwrap();
        let back = pull(&new, "hooks", "Stop", 0, empty.as_deref()).unwrap();
        assert_eq!(elements(&back, "hooks", "Stop").unwrap().unwrap(), [json!(2)]);
        assert!(push("{\"hooks\": {\"Stop\": {}}}", "hooks", "Stop", &ours).is_err());
    }

    #[test]
    fn a_member_two_levels_down_is_added_and_removed_byte_for_byte() {
        let want = serde_json::json!({"enabled": true, "hooks": {"allowConversationAccess": true}});
        for text in [
            "{\n  \"models\": {\"a\": 1} // mine\n}\n",
            "{\n  \"plugins\": {}\n}\n",
            "{\n  \"plugins\": {\n    \"allow\": [\"x\"]\n  }\n}\n",
            "{\n  \"plugins\": {\n    \"entries\": {\n      \"other\": {\"enabled\": false},\n    }\n  }\n}\n",
            "{}",
        ] {
            let (out, how) = insert(text, "plugins.entries", "memory-powercontext", &want).unwrap();
            assert_eq!(
                get(&out, "plugins.entries", "memory-powercontext").unwrap(),
                Some(want.clone()),
                "{out}"
            );
            // Everything that was there is still there.
            let before = parse(text).unwrap();
            let after = parse(&out).unwrap();
            for (k, v) in before.as_object().unwrap() {
                if k != "plugins" {
                    assert_eq!(&after[k], v);
                }
            }
            assert_eq!(
                remove(&out, "plugins.entries", "memory-powercontext", &how).unwrap(),
                text,
                "{out}"
            );
        }
        // A parent path through something that is not an object is refused.
        assert!(insert("{\"plugins\": []}", "plugins.entries", "k", &want).is_err());
        // A member there already is refused.
        let (out, _) = insert("{}", "plugins.entries", "k", &want).unwrap();
        assert!(insert(&out, "plugins.entries", "k", &want).is_err());
    }

    #[test]
    fn a_created_parent_the_user_has_since_added_to_stays() {
        let want = serde_json::json!(true);
        let (out, how) = insert("{\n  \"a\": 1\n}\n", "plugins.entries", "ours", &want).unwrap();
        let (out, _) = insert(&out, "plugins", "allow", &serde_json::json!(["x"])).unwrap();
        let back = remove(&out, "plugins.entries", "ours", &how).unwrap();
        assert_eq!(
            parse(&back).unwrap(),
            serde_json::json!({"a": 1, "plugins": {"allow": ["x"]}}),
            "{back}"
        );
    }
}
