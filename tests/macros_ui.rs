//! Compile-time behaviour of `#[acp::agent]`, `#[acp::tool]` and `#[derive(acp::JsonSchema)]`,
//! with trybuild.
//!
//! - `tests/ui/fail/*.rs`: each misuse must fail to compile with the errors in the matching
//!   `.stderr` file: at the author's own span, saying what to write instead.
//! - `tests/ui/pass/*.rs`: agents that must compile (and run their `main`).
//!
//! The `.stderr` files hold rustc's own wording around our messages, which changes between
//! releases, so they are compared only on the toolchain they were written with, recorded in
//! `tests/ui/TOOLCHAIN` (the output of `rustc --version`). On any other toolchain this test
//! still builds and runs every pass case and checks that every fail case fails to compile —
//! trybuild on copies of the fail cases without their `.stderr` files, the fresh output written
//! next to the copies under `target/ui-unpinned/` — and says loudly that the text was not
//! compared.
//!
//! After changing a message on purpose, regenerate the expected output with
//! `TRYBUILD=overwrite cargo test --test macros_ui` and read every changed `.stderr`: each
//! error must point at the author's code and say what to write instead. Run on another
//! toolchain, the same command moves the pin: it rewrites every `.stderr` file and
//! `tests/ui/TOOLCHAIN`.

use std::path::{Path, PathBuf};
use std::process::Command;

const PINNED: &str = "tests/ui/TOOLCHAIN";

#[test]
fn ui() {
    let pinned = std::fs::read_to_string(PINNED).expect("tests/ui/TOOLCHAIN exists");
    let pinned = pinned.trim();
    let current = rustc_version();
    let overwrite = std::env::var_os("TRYBUILD").is_some_and(|v| v == "overwrite");
    if current == pinned || overwrite {
        if current != pinned {
            std::fs::write(PINNED, format!("{current}\n")).expect("tests/ui/TOOLCHAIN is writable");
            eprintln!("tests/ui/TOOLCHAIN moved from `{pinned}` to `{current}`");
        }
        let t = trybuild::TestCases::new();
        t.compile_fail("tests/ui/fail/*.rs");
        t.pass("tests/ui/pass/*.rs");
        return;
    }

    eprintln!(
        "\n{bar}\nTHE .stderr FILES OF tests/ui/fail WERE NOT COMPARED.\n\
         They were written with `{pinned}` (tests/ui/TOOLCHAIN); this is `{current}`, whose\n\
         wording may differ. Checking only that every pass case compiles and runs and every\n\
         fail case fails to compile; the fresh output is under target/ui-unpinned/ (trybuild\n\
         marks each such case `wip`: it wrote what it printed next to the copy).\n\
         To move the pin: TRYBUILD=overwrite cargo test --test macros_ui, then review the diff.\n\
         {bar}\n",
        bar = "!".repeat(90),
    );
    trybuild::TestCases::new().pass("tests/ui/pass/*.rs");
    // The fail cases, in a child run of this binary with `TRYBUILD=overwrite`: trybuild then
    // fails a case only if it compiles, and writes what it printed next to the copy.
    let status = Command::new(std::env::current_exe().expect("the test binary's path"))
        .args([
            "fail_cases_fail_to_compile",
            "--exact",
            "--ignored",
            "--nocapture",
        ])
        .env("TRYBUILD", "overwrite")
        .status()
        .expect("the test binary runs");
    assert!(status.success(), "a fail case compiled (see above)");
}

/// Run by [`ui`] on a toolchain other than the pinned one.
#[test]
#[ignore = "run by `ui` when the toolchain is not the one in tests/ui/TOOLCHAIN"]
fn fail_cases_fail_to_compile() {
    assert_eq!(
        std::env::var("TRYBUILD").as_deref(),
        Ok("overwrite"),
        "run through `ui`, which sets TRYBUILD=overwrite for the copies"
    );
    let copies = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ui-unpinned/fail");
    let _ = std::fs::remove_dir_all(&copies);
    std::fs::create_dir_all(&copies).expect("target/ui-unpinned/fail is writable");
    for case in fail_cases() {
        let name = case.file_name().expect("a file name");
        std::fs::copy(&case, copies.join(name)).expect("a fail case copies");
    }
    trybuild::TestCases::new().compile_fail(copies.join("*.rs"));
}

fn fail_cases() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui/fail");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("tests/ui/fail exists")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .collect();
    cases.sort();
    cases
}

/// `rustc --version` of the compiler cargo would use (`$RUSTC`, else `rustc`).
fn rustc_version() -> String {
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let output = Command::new(rustc)
        .arg("--version")
        .output()
        .expect("rustc runs");
    String::from_utf8(output.stdout)
        .expect("rustc prints UTF-8")
        .trim()
        .to_owned()
}
