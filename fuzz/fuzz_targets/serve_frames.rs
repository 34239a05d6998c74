//! The fuzz input decodes (with `arbitrary`) into a client's actions — initialize, sessions,
//! prompts whose text drives the agent's tools, cancels, answers to the agent's requests,
//! odd frames — turned into frames at the moment the runtime reads them, reacting to what the
//! agent has written (session ids, requests to answer). Checked: see `acp_fuzz::check`.
#![no_main]

libfuzzer_sys::fuzz_target!(|input: acp_fuzz::frames::Input| acp_fuzz::frames::fuzz_input(input));
