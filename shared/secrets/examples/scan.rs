//! Prints the findings for each line of stdin (a debugging aid).
#![allow(clippy::print_stdout)]
use std::io::BufRead;
fn main() {
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("utf-8").replace("\\n", "\n");
        let f = powercontext_hooks_secrets::findings(&line);
        println!(
            "{:?} <- {line:?}",
            f.iter()
                .map(|f| (f.kind.as_str(), &line[f.start..f.end]))
                .collect::<Vec<_>>()
        );
    }
}
