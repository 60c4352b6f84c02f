//! Every parser of a kernel file on arbitrary text (body: probe::fuzzing).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| probe::fuzzing::parse_everything(data));
