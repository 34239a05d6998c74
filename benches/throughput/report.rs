//! The report: statistics of the samples, the printed table and the small readings and
//! formats it uses.

use std::thread;
use std::time::Duration;

use crate::{CANCEL_RUNS, Column, LATENCY_ROUNDS, PERMISSION_N};

pub(crate) struct Stats {
    pub(crate) mean: Duration,
    pub(crate) p50: Duration,
    pub(crate) p99: Duration,
}

impl Stats {
    pub(crate) fn of(samples: &[Duration]) -> Option<Stats> {
        let mut samples = samples.to_vec();
        if samples.is_empty() {
            return None;
        }
        samples.sort();
        let total: Duration = samples.iter().sum();
        let at = |q: f64| {
            samples[((samples.len() as f64 * q).ceil() as usize).clamp(1, samples.len()) - 1]
        };
        Some(Stats {
            mean: total / samples.len() as u32,
            p50: at(0.50),
            p99: at(0.99),
        })
    }
}

pub(crate) fn print_table(columns: &[Column], baseline: Option<(f64, f64)>) {
    let find = |name: &str| columns.iter().find(|c| c.name == name);
    let ours = find("ours");
    let ts = find("official TS SDK");
    let rust = find("official Rust SDK");
    let bare = find("bare loop");

    type Metric = fn(&Column) -> Option<f64>;
    type Format = fn(f64) -> String;
    let permission = format!("permission {LATENCY_ROUNDS}x{PERMISSION_N}");
    let cancel = format!("cancel {LATENCY_ROUNDS}x{CANCEL_RUNS}");
    let rows: [(String, Metric, Format); 10] = [
        (
            "stream 100k: chunks/s (best of 3)".to_string(),
            |c| best_run(c).map(|r| r.0),
            |v| format!("{v:.0}"),
        ),
        (
            "stream 100k: MB/s of frames".to_string(),
            |c| best_run(c).map(|r| r.1 / 1e6),
            |v| format!("{v:.1}"),
        ),
        (
            "stream 100k: peak RSS MiB".to_string(),
            |c| c.rss_large_kib.map(mib),
            |v| format!("{v:.1}"),
        ),
        (
            "stream 10k: peak RSS MiB".to_string(),
            |c| c.rss_small_kib.map(mib),
            |v| format!("{v:.1}"),
        ),
        (
            format!("{permission}: mean µs"),
            |c| Stats::of(&c.permission).map(|s| us(s.mean)),
            fmt_us,
        ),
        (
            format!("{permission}: p50 µs"),
            |c| Stats::of(&c.permission).map(|s| us(s.p50)),
            fmt_us,
        ),
        (
            format!("{permission}: p99 µs"),
            |c| Stats::of(&c.permission).map(|s| us(s.p99)),
            fmt_us,
        ),
        (
            format!("{cancel}: p50 µs"),
            |c| Stats::of(&c.cancel).map(|s| us(s.p50)),
            fmt_us,
        ),
        (
            format!("{cancel}: p99 µs"),
            |c| Stats::of(&c.cancel).map(|s| us(s.p99)),
            fmt_us,
        ),
        (
            format!("{cancel}: mean µs"),
            |c| Stats::of(&c.cancel).map(|s| us(s.mean)),
            fmt_us,
        ),
    ];

    let headers = [
        "workload",
        "ours",
        "official TS SDK",
        "official Rust SDK",
        "bare loop agent",
        "in-process loop",
        "ours/TS",
        "ours/Rust SDK",
        "ours/bare",
    ];
    let mut table: Vec<Vec<String>> = vec![headers.iter().map(|h| (*h).to_owned()).collect()];
    for (i, (label, metric, fmt)) in rows.iter().enumerate() {
        let value = |c: Option<&Column>| c.and_then(metric);
        let cell = |v: Option<f64>| v.map_or_else(|| "n/a".to_owned(), fmt);
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
            _ => "n/a".to_owned(),
        };
        let base = match i {
            0 => baseline.map(|r| r.0),
            1 => baseline.map(|r| r.1 / 1e6),
            _ => None,
        };
        table.push(vec![
            (*label).to_owned(),
            cell(value(ours)),
            cell(value(ts)),
            cell(value(rust)),
            cell(value(bare)),
            base.map_or_else(|| "-".to_owned(), fmt),
            ratio(value(ours), value(ts)),
            ratio(value(ours), value(rust)),
            ratio(value(ours), value(bare)),
        ]);
    }
    let widths: Vec<usize> = (0..headers.len())
        .map(|col| {
            table
                .iter()
                .map(|row| row[col].chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    println!();
    println!(
        "ACP agent runtime, measured over pipes on this machine ({} cores)",
        thread::available_parallelism().map_or(0, |n| n.get())
    );
    for (r, row) in table.iter().enumerate() {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, w))| {
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
    println!(
        "ratios are ours / other: above 1 is better for chunks/s and MB/s, below 1 is better for µs and MiB; \
         the bare loop agent is a one-thread blocking serde_json loop over the same pipes (the ceiling), \
         the in-process loop writes the stream into a pipe in this process"
    );
    for column in columns {
        for problem in &column.problems {
            println!("note: {}: {problem}", column.name);
        }
    }
}

/// The fastest `stream 100000` run: (chunks/s, bytes/s).
fn best_run(c: &Column) -> Option<(f64, f64)> {
    c.stream_rates
        .iter()
        .copied()
        .reduce(|a, b| if b.0 > a.0 { b } else { a })
}

pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

pub(crate) fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn fmt_us(v: f64) -> String {
    format!("{v:.0}")
}

/// What recording sessions in the default store costs: ours (as every agent runs, recording)
/// against the same agent without a store, in the same run.
pub(crate) fn print_recording(columns: &[Column]) {
    let find = |name: &str| columns.iter().find(|c| c.name == name);
    let (Some(on), Some(off)) = (find("ours"), find("ours, no store")) else {
        return;
    };
    let best = |c: &Column| {
        c.stream_rates
            .iter()
            .map(|r| r.0)
            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
    };
    println!();
    println!("recording sessions (default SQLite store) | with store | without | with/without");
    if let (Some(a), Some(b)) = (best(on), best(off)) {
        println!(
            "stream 100k: chunks/s (best of 3)         | {a:>10.0} | {b:>7.0} | {:.2}",
            a / b
        );
    }
    for (label, pick) in [("cancel: p50 µs", 0), ("cancel: p99 µs", 1)] {
        if let (Some(a), Some(b)) = (Stats::of(&on.cancel), Stats::of(&off.cancel)) {
            let (a, b) = if pick == 0 {
                (a.p50, b.p50)
            } else {
                (a.p99, b.p99)
            };
            println!(
                "{label:<42}| {:>10} | {:>7} | {:.2}",
                a.as_micros(),
                b.as_micros(),
                a.as_secs_f64() / b.as_secs_f64()
            );
        }
    }
}

/// Protocol v2 beside v1: the same agent binary, its client negotiating 2.
pub(crate) fn print_v2(columns: &[Column]) {
    print_pair(
        columns,
        ("ours, v2", "ours"),
        "protocol v2 (same agent, same store)      |         v2 |      v1 | v2/v1",
    );
}

/// This build beside another one measured in the same rounds (`ACP_BENCH_BEFORE`), on each
/// protocol version.
pub(crate) fn print_before(columns: &[Column]) {
    print_pair(
        columns,
        ("ours", "before"),
        "this build / before (v1, default store)   |      after |  before | after/before",
    );
    print_pair(
        columns,
        ("ours, v2", "before, v2"),
        "this build / before (v2, default store)   |      after |  before | after/before",
    );
}

/// The stream, permission and cancel figures of the columns `names` (a, b) side by side,
/// under `header`, with a/b.
fn print_pair(columns: &[Column], names: (&str, &str), header: &str) {
    let find = |name: &str| columns.iter().find(|c| c.name == name);
    let (Some(a_col), Some(b_col)) = (find(names.0), find(names.1)) else {
        return;
    };
    println!();
    println!("{header}");
    if let (Some(a), Some(b)) = (best_run(a_col), best_run(b_col)) {
        println!(
            "stream 100k: chunks/s (best of 3)         | {:>10.0} | {:>7.0} | {:.2}",
            a.0,
            b.0,
            a.0 / b.0
        );
    }
    type Pick = fn(&Stats) -> std::time::Duration;
    type Samples = fn(&Column) -> &Vec<std::time::Duration>;
    let rows: [(&str, Samples, Pick); 4] = [
        ("permission: p50 µs", |c| &c.permission, |s| s.p50),
        ("permission: p99 µs", |c| &c.permission, |s| s.p99),
        ("cancel: p50 µs", |c| &c.cancel, |s| s.p50),
        ("cancel: p99 µs", |c| &c.cancel, |s| s.p99),
    ];
    for (label, samples, pick) in rows {
        if let (Some(a), Some(b)) = (Stats::of(samples(a_col)), Stats::of(samples(b_col))) {
            let (a, b) = (pick(&a), pick(&b));
            println!(
                "{label:<42}| {:>10} | {:>7} | {:.2}",
                a.as_micros(),
                b.as_micros(),
                a.as_secs_f64() / b.as_secs_f64()
            );
        }
    }
    for col in [a_col, b_col] {
        if !col.problems.is_empty() {
            println!("{} problems: {}", col.name, col.problems.join("; "));
        }
    }
}
