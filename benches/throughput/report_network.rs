//! The table of the network workload: per variant (agent × transport) the round with the
//! median updates/s, every round's updates/s, and the ratios the comparison is about.

use crate::network::{Run, Settings, Transport, Variant};
use crate::report::mib;
use crate::report_store::{cell, print_rows, ratio};

/// KiB of RSS per connection (per session over stdio): peak minus idle, over N.
fn per_connection_kib(run: &Run, n: usize) -> f64 {
    run.peak_kib.saturating_sub(run.idle_kib) as f64 / n as f64
}

pub(crate) fn print_network(variants: &[Variant], s: &Settings) {
    let n = s.connections;
    println!();
    println!(
        "network: {n} WebSocket connections, one session each, each prompted `stream {}` at \
         once, against the same {n} turns as {n} sessions over one stdio connection (time \
         limit {} s; {} rounds, the median round's figures)",
        s.chunks,
        s.limit.as_secs(),
        s.rounds
    );
    type Metric = fn(&Run, usize) -> f64;
    let columns: [(&str, Metric, usize); 10] = [
        ("turns answered", |r, _| r.answered as f64, 0),
        ("wall s", |r, _| r.wall.as_secs_f64(), 2),
        ("updates/s", |r, _| r.updates_per_s(), 0),
        ("peak RSS MiB", |r, _| mib(r.peak_kib), 1),
        ("idle RSS MiB", |r, _| mib(r.idle_kib), 1),
        ("RSS/connection KiB", per_connection_kib, 1),
        (
            "agent CPU µs/update",
            |r, _| r.agent_cpu.as_secs_f64() * 1e6 / r.updates.max(1) as f64,
            2,
        ),
        ("client CPU s", |r, _| r.client_cpu.as_secs_f64(), 2),
        (
            "TCP segments/update",
            |r, _| {
                r.segments
                    .map_or(f64::NAN, |s| s as f64 / r.updates.max(1) as f64)
            },
            2,
        ),
        ("setup s", |r, _| r.setup.as_secs_f64(), 2),
    ];
    let mut header = vec!["".to_owned()];
    header.extend(columns.iter().map(|(label, _, _)| label.to_string()));
    let mut table = vec![header];
    for variant in variants {
        let median = variant.median();
        let mut row = vec![variant.label()];
        for (label, metric, decimals) in columns {
            // NaN: not measured for this transport.
            let value = median.map(|r| metric(r, n)).filter(|v| !v.is_nan());
            let mut value = cell(value, decimals);
            if label == "wall s" && median.is_some_and(|r| r.timed_out) {
                value.push_str(" (limit)");
            }
            row.push(value);
        }
        table.push(row);
    }
    print_rows(&table);
    for variant in variants {
        let rates: Vec<String> = variant
            .runs
            .iter()
            .map(|r| match r {
                Ok(run) => format!("{:.0}", run.updates_per_s()),
                Err(_) => "failed".to_owned(),
            })
            .collect();
        println!(
            "{}: updates/s per round: {}",
            variant.label(),
            rates.join(", ")
        );
        for (round, run) in variant.runs.iter().enumerate() {
            match run {
                Err(e) => println!("note: {}: round {}: {e}", variant.label(), round + 1),
                Ok(run) if run.timed_out => println!(
                    "note: {}: round {}: {} of {n} turns answered ({} updates) when the limit \
                     passed",
                    variant.label(),
                    round + 1,
                    run.answered,
                    run.updates
                ),
                Ok(_) => {}
            }
        }
    }
    print_ratios(variants, n);
}

/// WebSocket against stdio for each agent, and ours against the official crate's server.
fn print_ratios(variants: &[Variant], n: usize) {
    let find = |name: &str, transport: Transport| {
        variants
            .iter()
            .find(|v| v.name == name && v.transport == transport)
            .and_then(Variant::median)
    };
    let rate = |r: Option<&Run>| r.map(Run::updates_per_s);
    let per = |r: Option<&Run>| r.map(|r| per_connection_kib(r, n));
    let peak = |r: Option<&Run>| r.map(|r| r.peak_kib as f64);
    let ws = Transport::WebSocket;
    let io = Transport::Stdio;
    let sdk = find("official Rust SDK", ws);
    let pairs = [
        (
            "ours: WebSocket / stdio",
            find("ours", ws),
            find("ours", io),
        ),
        (
            "ours, no store: WebSocket / stdio",
            find("ours, no store", ws),
            find("ours, no store", io),
        ),
        (
            "official Rust SDK: WebSocket / stdio",
            sdk,
            find("official Rust SDK", io),
        ),
        ("WebSocket: ours / official Rust SDK", find("ours", ws), sdk),
        (
            "WebSocket: ours, no store / official Rust SDK",
            find("ours, no store", ws),
            sdk,
        ),
    ];
    let mut table = vec![
        ["", "updates/s", "peak RSS", "RSS/connection"]
            .map(str::to_owned)
            .to_vec(),
    ];
    for (label, a, b) in pairs {
        if a.is_none() || b.is_none() {
            continue;
        }
        table.push(vec![
            label.to_owned(),
            ratio(rate(a), rate(b)),
            ratio(peak(a), peak(b)),
            ratio(per(a), per(b)),
        ]);
    }
    println!();
    print_rows(&table);
}
