#![no_main]
//! Fuzz target `spec_toml`: the body is [`structdr::fuzz::spec_toml`].
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| structdr::fuzz::spec_toml(data));
