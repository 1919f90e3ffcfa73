#![no_main]
//! Fuzz target `mat`: the body is [`structdr::fuzz::mat`].
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| structdr::fuzz::mat(data));
