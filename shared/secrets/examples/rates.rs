//! Prints each held-out case the filter gets wrong, and the rates per source (a debugging aid; the
//! figures of record come from the tests).
#![allow(clippy::print_stdout)]
use std::collections::BTreeMap;

fn main() {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "tests/fixtures/secrets_heldout.txt".into());
    let raw = std::fs::read_to_string(path).expect("fixture");
    let mut per: BTreeMap<String, [usize; 4]> = BTreeMap::new();
    for line in raw.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
        let (head, text) = line.split_once(" | ").expect("case");
        let (sign, cat) = head.split_once(' ').expect("sign");
        let text = unescape(text);
        let f = powercontext_hooks_secrets::findings(&text);
        let hit = !f.is_empty();
        let secret = sign == "+";
        let src = cat.split(':').next().unwrap_or("?").to_owned();
        let e = per.entry(src).or_default();
        if secret {
            e[0] += usize::from(hit);
            e[1] += 1
        } else {
            e[2] += usize::from(hit);
            e[3] += 1
        }
        if hit != secret {
            let spans: Vec<_> = f
                .iter()
                .map(|f| (f.kind.as_str(), &text[f.start..f.end]))
                .collect();
            println!(
                "{} {cat} {spans:?} <- {:?}",
                if secret { "MISS" } else { "FP  " },
                text
            );
        }
    }
    for (s, [c, p, w, n]) in per {
        println!("{s}: caught {c}/{p} withheld {w}/{n}");
    }
}

fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}
