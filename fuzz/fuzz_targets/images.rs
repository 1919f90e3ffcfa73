#![no_main]
//! Fuzz target `images`: the body is [`structdr::fuzz::images`].
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| structdr::fuzz::images(data));
