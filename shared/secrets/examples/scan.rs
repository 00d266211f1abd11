//! Prints the findings for each line of stdin (`\n` inside a line is a newline), or with `--time`
//! the median scan time of stdin's whole text repeated to 10 KB and 200 KB, or with `--once` one
//! scan of it repeated to 200 KB (a debugging aid; the benchmark of record is `make bench`).
#![allow(clippy::print_stdout)]
use std::io::{BufRead, Read};
use std::time::Instant;

fn main() {
    if std::env::args().nth(1).as_deref() == Some("--once") {
        // One scan of stdin's text repeated to 200 KB (for an instruction count under callgrind).
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).expect("utf-8");
        let prompt = text.repeat(200_000 / text.len().max(1) + 1);
        println!("{} findings", powercontext_hooks_secrets::findings(&prompt).len());
        return;
    }
    if std::env::args().nth(1).as_deref() == Some("--time") {
        let mut text = String::new();
        std::io::stdin().read_to_string(&mut text).expect("utf-8");
        for size in [10_000, 200_000] {
            let prompt = text.repeat(size / text.len().max(1) + 1);
            let mut times: Vec<f64> = (0..51)
                .map(|_| {
                    let started = Instant::now();
                    let _ = powercontext_hooks_secrets::findings(&prompt);
                    started.elapsed().as_secs_f64() * 1000.0
                })
                .collect();
            times.sort_by(f64::total_cmp);
            println!("{} bytes: p50 {:.3} ms", prompt.len(), times[25]);
        }
        return;
    }
    for line in std::io::stdin().lock().lines() {
        let line = line.expect("utf-8").replace("\\n", "\n");
        let f = powercontext_hooks_secrets::findings(&line);
        let spans: Vec<_> = f
            .iter()
            .map(|f| (f.kind.as_str(), &line[f.start..f.end]))
            .collect();
        println!("{spans:?} <- {line:?}");
    }
}
