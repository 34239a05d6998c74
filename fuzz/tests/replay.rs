//! Replays committed inputs through the same harness and checks as the fuzz targets, without
//! libFuzzer: `cargo test --manifest-path fuzz/Cargo.toml` (stable is fine).
//!
//! - `seeds`: every file of `seeds/serve_bytes/` must pass the checks, and panic nowhere
//!   (not even in a task whose panic the runtime catches: libFuzzer counts those as crashes).
//! - `regressions`: every file of `regressions/serve_bytes/` (the minimised crashes the fuzzer
//!   found) must pass too; it fails until the runtime is fixed.
//!
//! `ACP_FUZZ_VERBOSE=1` prints each run's transcript; `ACP_FUZZ_INPUT=path` replays one file.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

static PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn record_panics() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(info.to_string());
        default(info);
    }));
}

fn files(dir: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|p| p.is_file() && p.extension().is_none_or(|e| e != "md"));
    files.sort();
    files
}

/// Replays each file; returns the failures (file: why).
fn replay(files: &[PathBuf]) -> Vec<String> {
    let mut failures = Vec::new();
    for file in files {
        let input = std::fs::read(file).unwrap();
        PANICS.lock().unwrap().clear();
        let run = std::panic::catch_unwind(|| acp_fuzz::execute(acp_fuzz::ByteScript::new(&input)));
        let panics = std::mem::take(&mut *PANICS.lock().unwrap());
        let why = match run {
            Err(_) => Some(format!("panicked: {panics:?}")),
            Ok(_) if !panics.is_empty() => Some(format!(
                "a task panicked (caught by the runtime): {panics:?}"
            )),
            Ok(execution) => acp_fuzz::check::violations(&execution).err(),
        };
        if let Some(why) = why {
            failures.push(format!("{}: {why}", file.display()));
        }
    }
    failures
}

#[test]
fn seeds() {
    record_panics();
    let files = match std::env::var_os("ACP_FUZZ_INPUT") {
        Some(one) => vec![PathBuf::from(one)],
        None => files("seeds/serve_bytes"),
    };
    assert!(!files.is_empty());
    let failures = replay(&files);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn regressions() {
    record_panics();
    let failures = replay(&files("regressions/serve_bytes"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The structured target's regressions: each file decodes (with `arbitrary`, as libFuzzer
/// hands it over) into a client's actions, served and checked.
#[test]
fn frames_regressions() {
    record_panics();
    let mut failures = Vec::new();
    for file in files("regressions/serve_frames") {
        let bytes = std::fs::read(&file).unwrap();
        let data = arbitrary::Unstructured::new(&bytes);
        let Ok(input) =
            <acp_fuzz::frames::Input as arbitrary::Arbitrary>::arbitrary_take_rest(data)
        else {
            failures.push(format!("{}: does not decode", file.display()));
            continue;
        };
        if std::panic::catch_unwind(|| acp_fuzz::frames::fuzz_input(input)).is_err() {
            failures.push(format!("{}: {:?}", file.display(), PANICS.lock().unwrap()));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Time per run of each seed (release build): `cargo test --release --test replay timing -- --ignored --nocapture`.
#[test]
#[ignore]
fn timing() {
    for file in files("seeds/serve_bytes") {
        let input = std::fs::read(&file).unwrap();
        let start = std::time::Instant::now();
        let n = 50;
        for _ in 0..n {
            acp_fuzz::fuzz_bytes(&input);
        }
        println!(
            "{:>10.1?} {}",
            start.elapsed() / n,
            file.file_name().unwrap().to_string_lossy()
        );
    }
}
