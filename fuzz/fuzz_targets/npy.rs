#![no_main]
//! Fuzz target `npy`: the body is [`structdr::fuzz::npy`].
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| structdr::fuzz::npy(data));
