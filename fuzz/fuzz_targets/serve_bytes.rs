//! The fuzz input is the agent's whole stdin: `acp::serve` reads it line by line (the
//! runtime's tasks run between lines), then reaches end of file and must shut down. Checked:
//! see `acp_fuzz::check`.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: &[u8]| acp_fuzz::fuzz_bytes(input));
