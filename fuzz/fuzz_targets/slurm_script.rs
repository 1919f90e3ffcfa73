#![no_main]
//! Fuzz target `slurm_script`: the body is [`structdr::fuzz::slurm_script`].
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| structdr::fuzz::slurm_script(data));
