#![no_main]
//! Fuzz target `libsvm`: the body is [`structdr::fuzz::libsvm`].
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| structdr::fuzz::libsvm(data));
