#![no_main]
//! Fuzz target `idx`: the body is [`structdr::fuzz::idx`].
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| structdr::fuzz::idx(data));
