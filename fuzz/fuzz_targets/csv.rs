#![no_main]
//! Fuzz target `csv`: the body is [`structdr::fuzz::csv`].
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| structdr::fuzz::csv(data));
