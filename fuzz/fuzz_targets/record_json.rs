#![no_main]
//! Fuzz target `record_json`: the body is [`structdr::fuzz::record_json`].
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| structdr::fuzz::record_json(data));
