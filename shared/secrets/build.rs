//! Compiles the rule data (`rules/*.toml`, one file per family) into static tables: the vendor
//! shapes, their character classes and body segments, a first-byte dispatch index, and (for the
//! tests only) every rule's samples. It must never accept a rule without samples or with a shape
//! it cannot express: the build fails and names the rule.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    /// What the family holds (for the docs).
    family: String,
    #[serde(default)]
    rule: Vec<Rule>,
    #[serde(default)]
    keyword: Vec<Keyword>,
    #[serde(default)]
    example: Vec<Example>,
}

/// A key a vendor publishes in its documentation or SDK as an example: the whole token, never a
/// secret wherever it stands.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Example {
    value: String,
    /// Where it is published.
    source: String,
}

/// A provider named by a keyword in the key, its value of one class run.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Keyword {
    id: String,
    name: String,
    source: String,
    /// Lowercase words, each a segment of a key (`twitch` in `TWITCH_CLIENT`, `twitchKey`).
    keywords: Vec<String>,
    /// The whole value: `[class]{n}` or `[class]{n,m}`.
    value: String,
    tp: Vec<String>,
    fp: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Rule {
    /// Unique, kebab-case.
    id: String,
    /// The name findings report (several ids may share one provider name).
    name: String,
    /// Where the facts come from.
    source: String,
    /// The literal the token starts with, or with `head` the marker it holds at a fixed place.
    prefix: String,
    /// A run of one class (`[class]{n}`) before `prefix`: the token opens with `n` random
    /// characters and then its marker (Microsoft's identifiable keys hold `AzFu`, `+ASt`, …).
    #[serde(default)]
    head: String,
    /// The body after the prefix: `[class]{n}`, `[class]{n,m}` and literal characters.
    body: String,
    #[serde(default)]
    ignore_case: bool,
    /// Matched right after a `-` too (off for the short, ambiguous prefixes).
    #[serde(default = "yes")]
    after_dash: bool,
    /// Judged only against filler: `xxxx`, `example`, six of one character (the original
    /// filter's shapes, kept as lenient as they were).
    #[serde(default)]
    lenient: bool,
    /// Minimum Shannon entropy of the body, bits per character.
    #[serde(default)]
    entropy: f64,
    /// The body must hold a digit.
    #[serde(default)]
    digit: bool,
    /// Bytes that may not follow the token (it would be a longer blob).
    #[serde(default)]
    not_before: String,
    /// Allow-list: a body containing one of these (any case) is a stand-in.
    #[serde(default)]
    stopwords: Vec<String>,
    /// At least one: a text holding a token of this shape.
    tp: Vec<String>,
    /// At least one: a text with this prefix that is not a token.
    fp: Vec<String>,
}

fn yes() -> bool {
    true
}

struct Seg {
    class: Option<usize>,
    lit: u8,
    min: u16,
    max: u16,
}

fn parse_class(spec: &[u8], id: &str) -> [u64; 4] {
    let mut bits = [0u64; 4];
    let mut set = |b: u8| bits[usize::from(b >> 6)] |= 1 << (b & 63);
    let mut k = 0;
    while k < spec.len() {
        let mut c = spec[k];
        if c == b'\\' {
            k += 1;
            c = *spec
                .get(k)
                .unwrap_or_else(|| panic!("rule {id}: dangling escape"));
            match c {
                b'w' => {
                    for b in (b'a'..=b'z').chain(b'A'..=b'Z').chain(b'0'..=b'9') {
                        set(b);
                    }
                    set(b'_');
                    k += 1;
                    continue;
                }
                b'd' => {
                    for b in b'0'..=b'9' {
                        set(b);
                    }
                    k += 1;
                    continue;
                }
                _ => {}
            }
        }
        if spec.get(k + 1) == Some(&b'-') && k + 2 < spec.len() {
            let hi = spec[k + 2];
            assert!(c <= hi, "rule {id}: bad range");
            for b in c..=hi {
                set(b);
            }
            k += 3;
        } else {
            set(c);
            k += 1;
        }
    }
    bits
}

fn parse_body(body: &str, id: &str, classes: &mut Vec<[u64; 4]>) -> Vec<Seg> {
    let b = body.as_bytes();
    let mut segs = Vec::new();
    let mut k = 0;
    while k < b.len() {
        if b[k] == b'[' {
            let close = k
                + 1
                + b[k + 1..]
                    .iter()
                    .position(|&c| c == b']')
                    .unwrap_or_else(|| panic!("rule {id}: unclosed class"));
            let bits = parse_class(&b[k + 1..close], id);
            let class = classes.iter().position(|c| *c == bits).unwrap_or_else(|| {
                classes.push(bits);
                classes.len() - 1
            });
            assert_eq!(
                b.get(close + 1),
                Some(&b'{'),
                "rule {id}: a class needs {{n}} or {{n,m}}"
            );
            let end = close
                + 2
                + b[close + 2..]
                    .iter()
                    .position(|&c| c == b'}')
                    .unwrap_or_else(|| panic!("rule {id}: unclosed count"));
            let count = std::str::from_utf8(&b[close + 2..end]).expect("ascii");
            let (min, max) = match count.split_once(',') {
                Some((lo, hi)) => (lo.parse().expect("min"), hi.parse().expect("max")),
                None => {
                    let n = count.parse().unwrap_or_else(|_| panic!("rule {id}: bad count"));
                    (n, n)
                }
            };
            assert!(min <= max && max > 0, "rule {id}: bad count");
            segs.push(Seg {
                class: Some(class),
                lit: 0,
                min,
                max,
            });
            k = end + 1;
        } else {
            let c = if b[k] == b'\\' {
                k += 1;
                b[k]
            } else {
                b[k]
            };
            assert!(c.is_ascii(), "rule {id}: literal must be ASCII");
            segs.push(Seg {
                class: None,
                lit: c,
                min: 1,
                max: 1,
            });
            k += 1;
        }
    }
    assert!(!segs.is_empty(), "rule {id}: empty body");
    segs
}

/// Everything the rule files hold, in file order.
struct RuleFiles {
    /// Each vendor rule with its file's stem.
    rules: Vec<(String, Rule)>,
    keyword_rules: Vec<Keyword>,
    /// Each file's stem, family and number of rules.
    families: Vec<(String, String, usize)>,
    examples: Vec<Example>,
}

/// Reads every `rules/*.toml` in name order, telling cargo to rerun when one changes.
fn read_rule_files(dir: &Path) -> RuleFiles {
    println!("cargo::rerun-if-changed=rules");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .expect("rules/")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    paths.sort();
    let mut rules: Vec<(String, Rule)> = Vec::new();
    let mut keyword_rules: Vec<Keyword> = Vec::new();
    let mut families = Vec::new();
    let mut examples: Vec<Example> = Vec::new();
    for path in &paths {
        println!("cargo::rerun-if-changed={}", path.display());
        let text = std::fs::read_to_string(path).expect("read rule file");
        let file: File = toml::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let stem = path.file_stem().expect("stem").to_string_lossy().into_owned();
        families.push((stem.clone(), file.family, file.rule.len() + file.keyword.len()));
        keyword_rules.extend(file.keyword);
        examples.extend(file.example);
        for r in file.rule {
            rules.push((stem.clone(), r));
        }
    }
    RuleFiles {
        rules,
        keyword_rules,
        families,
        examples,
    }
}

/// Fails the build on a vendor rule with a duplicate id, no samples, no source, a short prefix
/// or a name that is not snake_case; returns the ids seen.
fn check_rules(rules: &[(String, Rule)]) -> BTreeMap<String, ()> {
    let mut ids = BTreeMap::new();
    for (_, r) in rules {
        assert!(
            ids.insert(r.id.clone(), ()).is_none(),
            "duplicate rule id {}",
            r.id
        );
        assert!(!r.tp.is_empty(), "rule {} has no true-positive sample", r.id);
        assert!(!r.fp.is_empty(), "rule {} has no false-positive sample", r.id);
        assert!(!r.source.trim().is_empty(), "rule {} cites no source", r.id);
        assert!(
            r.prefix.len() >= 2 && r.prefix.is_ascii(),
            "rule {}: prefix",
            r.id
        );
        assert!(
            r.name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
            "rule {}: name must be snake_case",
            r.id
        );
    }
    ids
}

/// Writes `RULE_INFO`, `VENDORS` and `SEGMENTS` for the sorted vendor rules, adding their body
/// classes to `classes`.
fn emit_vendors(out: &mut String, rules: &[(String, Rule)], classes: &mut Vec<[u64; 4]>) {
    let mut segs: Vec<Seg> = Vec::new();
    let mut table = String::new();
    // Names, prefixes, following bytes and stopwords as slices of one text (offset and length),
    // not as `&str` fields: in a position-independent executable each pointer of a table costs a
    // relocation besides itself.
    let mut text = String::new();
    let mut stopwords = String::new();
    let mut stopword_count = 0usize;
    let mut slice_of = |s: &str| {
        let off = text.find(s).unwrap_or_else(|| {
            text.push_str(s);
            text.len() - s.len()
        });
        let off = u16::try_from(off).expect("vendor text under 64 KiB");
        (
            off,
            u8::try_from(s.len()).expect("a vendor string under 256 bytes"),
        )
    };
    for (_, r) in rules {
        let start = segs.len();
        segs.extend(parse_body(&r.body, &r.id, classes));
        let body_max: u32 = segs[start..].iter().map(|s| u32::from(s.max)).sum();
        let head = if r.head.is_empty() {
            (u8::MAX, 0)
        } else {
            let h = parse_body(&r.head, &r.id, classes);
            assert!(
                h.len() == 1 && h[0].min == h[0].max && h[0].min >= 16 && h[0].max <= 255,
                "rule {}: a head is one class run of a fixed length, 16 to 255",
                r.id
            );
            let class = u8::try_from(h[0].class.expect("class")).expect("fewer than 255 classes");
            (class, u8::try_from(h[0].min).expect("short head"))
        };
        let first_stopword = stopword_count;
        for w in &r.stopwords {
            let _ = writeln!(stopwords, "    {:?},", slice_of(&w.to_ascii_lowercase()));
            stopword_count += 1;
        }
        let stop_range = (
            u16::try_from(first_stopword).expect("fewer than 65536 stopwords"),
            u16::try_from(stopword_count).expect("fewer than 65536 stopwords"),
        );
        let _ = writeln!(
            table,
            "    Vendor {{ name: {:?}, prefix: {:?}, head: {head:?}, ci: {}, after_dash: {}, lenient: {}, segs: ({start}, {}), max: {body_max}, entropy: {:?}, digit: {}, not_before: {:?}, stopwords: {stop_range:?} }},",
            slice_of(&r.name),
            slice_of(&r.prefix),
            r.ignore_case,
            r.after_dash,
            r.lenient,
            segs.len(),
            r.entropy as f32,
            r.digit,
            slice_of(&r.not_before),
        );
    }
    let _ = writeln!(
        out,
        "/// The text [`VENDORS`]' names, prefixes, following bytes and stopwords are slices of.\nconst VENDOR_TEXT: &str = {text:?};"
    );
    let _ = writeln!(
        out,
        "/// Every rule's stopwords in [`VENDOR_TEXT`], each rule's a range of them.\nstatic VENDOR_STOPWORDS: [(u16, u8); {stopword_count}] = [\n{stopwords}];"
    );
    let _ = writeln!(
        out,
        "/// Each rule's id, family and cited source, in the order of [`VENDORS`] (kept apart so that an\n/// executable that never reads them does not carry them).\npub static RULE_INFO: [RuleInfo; {}] = [",
        rules.len()
    );
    for (family, r) in rules {
        let _ = writeln!(
            out,
            "    RuleInfo {{ id: {:?}, family: {:?}, source: {:?} }},",
            r.id, family, r.source
        );
    }
    let _ = writeln!(out, "];");
    let _ = writeln!(out, "/// Every vendor rule, compiled from `rules/*.toml`.");
    let _ = writeln!(
        out,
        "pub static VENDORS: [Vendor; {}] = [\n{table}];",
        rules.len()
    );
    let _ = writeln!(out, "static SEGMENTS: [Seg; {}] = [", segs.len());
    for s in &segs {
        let _ = writeln!(
            out,
            "    Seg {{ class: {}, lit: {}, min: {}, max: {} }},",
            s.class
                .map_or(u8::MAX, |c| u8::try_from(c).expect("fewer than 255 classes")),
            s.lit,
            s.min,
            s.max
        );
    }
    let _ = writeln!(out, "];");
}

/// Writes the dispatch tables over the sorted vendor rules: `FIRST` (the rules per first byte)
/// and `PAIRS` (a filter of the prefixes' first two bytes).
fn emit_dispatch(out: &mut String, rules: &[(String, Rule)]) {
    let mut first = vec![(0u16, 0u16); 256];
    for (k, (_, r)) in rules.iter().enumerate() {
        let b = usize::from(r.prefix.as_bytes()[0].to_ascii_lowercase());
        let k = u16::try_from(k).expect("fewer than 65536 rules");
        if first[b].1 == 0 {
            first[b] = (k, k + 1);
        } else {
            first[b].1 = k + 1;
        }
    }
    let _ = writeln!(
        out,
        "/// For each lowercase first byte, the range of [`VENDORS`] whose prefix starts with it.\nstatic FIRST: [(u16, u16); 256] = {first:?};"
    );
    // A 4096-bit filter of the prefixes' first two bytes (folded, hashed): most word starts
    // begin no prefix, and one lookup says so.
    let mut pairs = [0u64; 64];
    for (_, r) in rules {
        let p = r.prefix.as_bytes();
        let h = pair_hash(p[0], p[1]);
        pairs[h / 64] |= 1 << (h % 64);
    }
    let _ = writeln!(out, "static PAIRS: [u64; 64] = {pairs:?};");
    // A 32768-bit filter of their first three bytes, the same way: two bytes of a word start
    // often begin a prefix (`th`, `se`, `pa`), three seldom do. A two-byte prefix sets every
    // third byte.
    let mut triples = vec![0u64; 512];
    for (_, r) in rules {
        let p = r.prefix.as_bytes();
        let thirds: Vec<u8> = match p.get(2) {
            Some(&b2) => vec![b2],
            None => (0..=255).collect(),
        };
        for b2 in thirds {
            let h = triple_hash(p[0], p[1], b2);
            triples[h / 64] |= 1 << (h % 64);
        }
    }
    let _ = writeln!(out, "static TRIPLES: [u64; 512] = {triples:?};");
}

/// Writes `DOCUMENTED_EXAMPLES`, failing the build on an example that is not a whole token or
/// cites no source.
fn emit_examples(out: &mut String, examples: &[Example]) {
    for e in examples {
        assert!(
            e.value.len() >= 16 && e.value.is_ascii() && !e.value.contains(char::is_whitespace),
            "documented example {:?}: a whole token",
            e.value
        );
        assert!(
            !e.source.trim().is_empty(),
            "documented example {:?} cites no source",
            e.value
        );
    }
    let values: String = examples.iter().map(|e| format!("b{:?}, ", e.value)).collect();
    let _ = writeln!(
        out,
        "/// Vendors' documented example keys (`rules/*.toml`, `[[example]]`).\npub(crate) const DOCUMENTED_EXAMPLES: crate::words::Words = crate::words::words_from!(&[{values}]);"
    );
}

/// The source of `SAMPLES`: every keyword rule's samples (indexed down from `usize::MAX`), then
/// every vendor rule's.
fn samples_source(keyword_rules: &[Keyword], rules: &[(String, Rule)]) -> String {
    let mut samples = String::from(
        "/// Each rule's samples: rule index, true positive, text.\npub(crate) static SAMPLES: &[(usize, bool, &str)] = &[\n",
    );
    for (k, r) in keyword_rules.iter().enumerate() {
        for t in &r.tp {
            let _ = writeln!(samples, "    ({}, true, {t:?}),", usize::MAX - k);
        }
        for t in &r.fp {
            let _ = writeln!(samples, "    ({}, false, {t:?}),", usize::MAX - k);
        }
    }
    for (k, (_, r)) in rules.iter().enumerate() {
        for t in &r.tp {
            let _ = writeln!(samples, "    ({k}, true, {t:?}),");
        }
        for t in &r.fp {
            let _ = writeln!(samples, "    ({k}, false, {t:?}),");
        }
    }
    samples.push_str("];\n");
    samples
}

/// Compiles `rules/*.toml` into `rules.rs` (the tables) and `samples.rs` (the tests' samples).
fn main() {
    let RuleFiles {
        mut rules,
        keyword_rules,
        families,
        examples,
    } = read_rule_files(Path::new("rules"));
    let mut ids = check_rules(&rules);
    // Dispatch on the prefix's first byte in ASCII lowercase, then on its second (sorted within
    // the bucket); among equal pairs the longer prefix is tried first (`xoxe.xoxp-` before
    // `xoxe-`).
    // Rules with a head come last: no word starts with their marker, so no dispatch holds them.
    rules.sort_by(|(_, a), (_, b)| {
        let key = |r: &Rule| {
            let p = r.prefix.as_bytes();
            (
                !r.head.is_empty(),
                p[0].to_ascii_lowercase(),
                p[1].to_ascii_lowercase(),
            )
        };
        key(a)
            .cmp(&key(b))
            .then(b.prefix.len().cmp(&a.prefix.len()))
            .then(a.id.cmp(&b.id))
    });

    let mut classes: Vec<[u64; 4]> = Vec::new();
    let mut out = String::new();
    emit_vendors(&mut out, &rules, &mut classes);
    let plain = rules.iter().take_while(|(_, r)| r.head.is_empty()).count();
    emit_dispatch(&mut out, &rules[..plain]);
    let shortest = rules[plain..]
        .iter()
        .map(|(_, r)| parse_body(&r.head, &r.id, &mut classes)[0].min)
        .min()
        .unwrap_or(u16::MAX);
    let _ = writeln!(
        out,
        "/// Where the rules with a head start in [`VENDORS`] (their marker sits inside the token).\nstatic HEADED_FROM: usize = {plain};\n/// Their shortest head.\npub(crate) const HEADED_SHORTEST: usize = {shortest};"
    );
    emit_examples(&mut out, &examples);
    let _ = writeln!(out, "/// The rule files: stem, family, number of rules.");
    let _ = writeln!(
        out,
        "pub static FAMILIES: [(&str, &str, usize); {}] = {families:?};",
        families.len()
    );
    emit_keywords(&mut out, &keyword_rules, &mut classes, &mut ids);
    let _ = writeln!(
        out,
        "static CLASSES: [[u64; 4]; {}] = {classes:?};",
        classes.len()
    );
    // A build script has no injected `Env`: cargo hands it the output directory this way.
    #[allow(clippy::disallowed_methods)]
    let out_dir = std::env::var("OUT_DIR").expect("OUT_DIR");
    std::fs::write(Path::new(&out_dir).join("rules.rs"), out).expect("write rules.rs");
    let samples = samples_source(&keyword_rules, &rules);
    std::fs::write(Path::new(&out_dir).join("samples.rs"), samples).expect("write samples.rs");
    let mut filters = filters_source(&keyword_rules);
    filters.push_str(&vendor_filter_source(&rules[..plain], &mut classes));
    std::fs::write(Path::new(&out_dir).join("filters.rs"), filters).expect("write filters.rs");
}

/// The source of the scan's quick rejections over the keyword rules' words: `KEYWORD_QUADS`, a
/// 32768-bit filter of each keyword's first four bytes (folded, hashed), and `KEYWORD_PAIRS`, the
/// first two bytes of the keywords shorter than four (a bit per `(first & 31, second & 31)`). A
/// key in which no segment starts with a set bit holds no keyword.
fn filters_source(keyword_rules: &[Keyword]) -> String {
    let mut quads = vec![0u64; 512];
    let mut pairs = [0u32; 32];
    for w in keyword_rules.iter().flat_map(|r| &r.keywords) {
        let w = w.as_bytes();
        if let [a, b, c, d, ..] = *w {
            let h = quad_hash([a, b, c, d]);
            quads[h / 64] |= 1 << (h % 64);
        } else {
            pairs[usize::from(w[0] & 31)] |= 1 << (w[1] & 31);
        }
    }
    format!(
        "/// Each keyword's first four bytes, folded and hashed ([`quad_hash`]).\nstatic KEYWORD_QUADS: [u64; 512] = {quads:?};\n/// The first two bytes of each keyword shorter than four, a bit per `(first & 31, second & 31)`.\nstatic KEYWORD_PAIRS: [u32; 32] = {pairs:?};\n"
    )
}

/// The source of the scan's quick rejection of a word no plain vendor rule (no head) can match
/// at: `VENDOR_SHORTEST`, the fewest bytes a token of theirs has (prefix, literals and each class
/// run's least length), and `VENDOR_BYTES`, every byte one may hold (a prefix's in either case,
/// a literal, a class's). A token at a word is made of such bytes only, so a word shorter than
/// the shortest token, after which stands a byte no token holds, starts none.
fn vendor_filter_source(rules: &[(String, Rule)], classes: &mut Vec<[u64; 4]>) -> String {
    let mut bytes = [0u64; 4];
    let set = |bytes: &mut [u64; 4], b: u8| bytes[usize::from(b >> 6)] |= 1 << (b & 63);
    let mut shortest = usize::MAX;
    for (_, r) in rules {
        for b in r.prefix.bytes() {
            set(&mut bytes, b.to_ascii_lowercase());
            set(&mut bytes, b.to_ascii_uppercase());
        }
        let mut len = r.prefix.len();
        for seg in parse_body(&r.body, &r.id, classes) {
            len += usize::from(seg.min);
            match seg.class {
                Some(c) => {
                    for (w, bits) in classes[c].iter().enumerate() {
                        bytes[w] |= bits;
                    }
                }
                None => set(&mut bytes, seg.lit),
            }
        }
        shortest = shortest.min(len);
    }
    format!(
        "/// The fewest bytes a token of a vendor rule without a head has.\npub(crate) const VENDOR_SHORTEST: usize = {shortest};\n/// Every byte such a token may hold, a bit per byte.\npub(crate) static VENDOR_BYTES: [u64; 4] = {bytes:?};\n"
    )
}

/// The bit of four bytes in `KEYWORD_QUADS`, each folded with `| 0x20` (the matcher computes the
/// same).
fn quad_hash(q: [u8; 4]) -> usize {
    let w = u32::from_le_bytes(q) | 0x2020_2020;
    (w.wrapping_mul(0x9e37_79b1) >> 17) as usize
}

/// The keyword rules: names and keywords in one string each (a rule costs eight bytes, a keyword
/// six), keywords sorted by first byte with a range index.
fn emit_keywords(
    out: &mut String,
    rules: &[Keyword],
    classes: &mut Vec<[u64; 4]>,
    ids: &mut BTreeMap<String, ()>,
) {
    let mut names = String::new();
    let mut table = String::new();
    let mut info = String::new();
    let mut words: Vec<(String, usize)> = Vec::new();
    for (k, r) in rules.iter().enumerate() {
        assert!(
            ids.insert(r.id.clone(), ()).is_none(),
            "duplicate rule id {}",
            r.id
        );
        assert!(
            !r.tp.is_empty() && !r.fp.is_empty(),
            "rule {} needs samples",
            r.id
        );
        assert!(!r.source.trim().is_empty(), "rule {} cites no source", r.id);
        let segs = parse_body(&r.value, &r.id, classes);
        assert!(
            segs.len() == 1 && segs[0].class.is_some() && segs[0].min >= 16 && segs[0].max <= 255,
            "rule {}: a keyword value is one class run of 16 to 255",
            r.id
        );
        let s = &segs[0];
        let off = names.find(&r.name).unwrap_or_else(|| {
            names.push_str(&r.name);
            names.len() - r.name.len()
        });
        let _ = writeln!(
            table,
            "    KeywordRule {{ name: ({off}, {}), class: {}, min: {}, max: {} }},",
            r.name.len(),
            s.class.expect("class"),
            s.min,
            s.max
        );
        let _ = writeln!(
            info,
            "    RuleInfo {{ id: {:?}, family: \"keyword\", source: {:?} }},",
            r.id, r.source
        );
        for w in &r.keywords {
            assert!(
                w.len() >= 2
                    && w.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"_.-".contains(&b)),
                "rule {}: keyword {w:?} must be lowercase, 2 bytes or more",
                r.id
            );
            words.push((w.clone(), k));
        }
    }
    words.sort();
    let mut blob = String::new();
    let mut first = vec![(0u16, 0u16); 256];
    let mut entries = String::new();
    for (n, (w, k)) in words.iter().enumerate() {
        let b = usize::from(w.as_bytes()[0]);
        let n = u16::try_from(n).expect("fewer than 65536 keywords");
        if first[b].1 == 0 {
            first[b] = (n, n + 1);
        } else {
            first[b].1 = n + 1;
        }
        let _ = writeln!(entries, "    ({}, {}, {k}),", blob.len(), w.len());
        blob.push_str(w);
    }
    let _ = writeln!(out, "static KEYWORD_NAMES: &str = {names:?};");
    let _ = writeln!(
        out,
        "static KEYWORD_RULES: [KeywordRule; {}] = [\n{table}];",
        rules.len()
    );
    let _ = writeln!(
        out,
        "/// The keyword rules' ids and sources, in the order of the keyword table.\npub static KEYWORD_INFO: [RuleInfo; {}] = [\n{info}];",
        rules.len()
    );
    let _ = writeln!(out, "static KEYWORD_BLOB: &str = {blob:?};");
    let _ = writeln!(
        out,
        "/// Each keyword: offset and length in the blob, rule index."
    );
    let _ = writeln!(
        out,
        "static KEYWORDS: [(u32, u8, u16); {}] = [\n{entries}];",
        words.len()
    );
    let _ = writeln!(out, "static KEYWORD_FIRST: [(u16, u16); 256] = {first:?};");
}

/// The bit of three folded bytes in `TRIPLES` (the matcher computes the same).
fn triple_hash(b0: u8, b1: u8, b2: u8) -> usize {
    let fold = |b: u8| usize::from(b | 0x20);
    ((fold(b0) << 10) ^ (fold(b1) << 5) ^ fold(b2)) & 32767
}

/// The bit of a folded byte pair in `PAIRS` (the matcher computes the same).
fn pair_hash(b0: u8, b1: u8) -> usize {
    (usize::from(b0.to_ascii_lowercase()) * 61 + usize::from(b1.to_ascii_lowercase())) & 4095
}
