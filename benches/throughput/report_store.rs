//! The tables of the concurrent-sessions and startup workloads: ours with the default store
//! against ours without one, with the ratios (and the official SDKs' startup for reference).

use std::time::Duration;

use crate::concurrent::{Run, Settings};
use crate::report::{Stats, mib};
use crate::startup::Samples;

/// Prints `rows` (the first one the header) as a Markdown table, the first column left
/// aligned and the others right aligned.
pub(crate) fn print_rows(rows: &[Vec<String>]) {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for (r, row) in rows.iter().enumerate() {
        let cells: Vec<String> = widths
            .iter()
            .enumerate()
            .map(|(c, &w)| {
                let cell = row.get(c).map_or("", String::as_str);
                if c == 0 {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        println!("| {} |", cells.join(" | "));
        if r == 0 {
            let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
            println!("|-{}-|", rule.join("-|-"));
        }
    }
}

pub(crate) fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
        _ => "n/a".to_owned(),
    }
}

pub(crate) fn cell(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.decimals$}"))
}

/// The with/without-store updates/s ratio of one round, when both runs finished.
pub(crate) fn concurrent_ratio(runs: &[(&'static str, Result<Run, String>)]) -> Option<f64> {
    let rate = |name: &str| {
        runs.iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, r)| r.as_ref().ok())
            .map(|r| r.updates as f64 / r.wall.as_secs_f64())
    };
    Some(rate("ours")? / rate("ours, no store")?)
}

/// The concurrent-sessions table: ours with the store, without, and with/without.
pub(crate) fn print_concurrent(runs: &[(&'static str, Result<Run, String>)], s: &Settings) {
    let find = |name: &str| {
        runs.iter()
            .find(|(n, _)| *n == name)
            .and_then(|(_, r)| r.as_ref().ok())
    };
    let (on, off) = (find("ours"), find("ours, no store"));
    println!();
    println!(
        "concurrent sessions: {} sessions on one connection, each prompted `stream {}` at once \
         (time limit {} s)",
        s.sessions,
        s.chunks,
        s.limit.as_secs()
    );
    type Metric = fn(&Run) -> f64;
    let rows: [(&str, Metric, usize); 5] = [
        ("turns answered", |r| r.answered as f64, 0),
        (
            "wall time s (first prompt → last answer)",
            |r| r.wall.as_secs_f64(),
            2,
        ),
        ("updates/s", |r| r.updates as f64 / r.wall.as_secs_f64(), 0),
        ("peak RSS MiB", |r| mib(r.rss_kib), 1),
        (
            "creating the sessions ms",
            |r| r.create.as_secs_f64() * 1e3,
            1,
        ),
    ];
    let mut table = vec![
        [
            "",
            "with the default store",
            "without a store",
            "with/without",
        ]
        .map(str::to_owned)
        .to_vec(),
    ];
    for (label, metric, decimals) in rows {
        let (a, b) = (on.map(metric), off.map(metric));
        let mut with = cell(a, decimals);
        if label == "wall time s (first prompt → last answer)" && on.is_some_and(|r| r.timed_out)
        {
            with.push_str(" (limit)");
        }
        let mut without = cell(b, decimals);
        if label == "wall time s (first prompt → last answer)" && off.is_some_and(|r| r.timed_out)
        {
            without.push_str(" (limit)");
        }
        table.push(vec![label.to_owned(), with, without, ratio(a, b)]);
    }
    print_rows(&table);
    for (name, run) in runs {
        match run {
            Err(e) => println!("note: {name}: concurrent: {e}"),
            Ok(run) if run.timed_out => println!(
                "note: {name}: {} of {} turns answered ({} updates) when the limit passed",
                run.answered, s.sessions, run.updates
            ),
            Ok(_) => {}
        }
    }
    let Some(on) = on else { return };
    if let Some(exit) = on.exit {
        println!(
            "with the store: the agent exited {:.2} s after its stdin closed",
            exit.as_secs_f64()
        );
    }
    match &on.store {
        None => {}
        Some(Err(e)) => println!("store check: {e}"),
        Some(Ok(check)) => {
            let verdict = if check.chunks == check.expected && check.prompts == check.loaded {
                "every update the client read is in the store"
            } else {
                "UPDATES MISSING FROM THE STORE"
            };
            println!(
                "store check: the agent started again on the same data directory; {} sessions \
                 loaded back with session/load ({:.2} s): {} of {} chunks replayed, in order; \
                 the prompt replayed in {} of {}: {verdict}",
                check.loaded,
                check.elapsed.as_secs_f64(),
                check.chunks,
                check.expected,
                check.prompts,
                check.loaded
            );
        }
    }
}

/// The startup table: spawn → `initialize` answered, per variant, with ratios to ours
/// without a store and to the official Rust SDK.
pub(crate) fn print_startup(samples: &[Samples], runs: usize, sessions: usize) {
    let stats = |name: &str| {
        samples
            .iter()
            .find(|s| s.name == name)
            .and_then(|s| Stats::of(&s.samples))
    };
    let (none, rust) = (stats("ours, no store"), stats("official Rust SDK"));
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!();
    println!(
        "startup: spawn → `initialize` answered, {runs} samples per row, interleaved (the \
         existing database holds {sessions} sessions of `stream 10`)"
    );
    let mut table = vec![
        [
            "",
            "p50 ms",
            "p99 ms",
            "mean ms",
            "p50 / no store",
            "p99 / no store",
            "p50 / Rust SDK",
        ]
        .map(str::to_owned)
        .to_vec(),
    ];
    for s in samples {
        let st = Stats::of(&s.samples);
        let p50 = st.as_ref().map(|s| ms(s.p50));
        let p99 = st.as_ref().map(|s| ms(s.p99));
        table.push(vec![
            format!("{} (n={})", s.name, s.samples.len()),
            cell(p50, 2),
            cell(p99, 2),
            cell(st.as_ref().map(|s| ms(s.mean)), 2),
            ratio(p50, none.as_ref().map(|s| ms(s.p50))),
            ratio(p99, none.as_ref().map(|s| ms(s.p99))),
            ratio(p50, rust.as_ref().map(|s| ms(s.p50))),
        ]);
    }
    print_rows(&table);
    for s in samples {
        for problem in &s.problems {
            println!("note: startup: {}: {problem}", s.name);
        }
    }
}
