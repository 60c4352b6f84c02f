//! The run-record reader on arbitrary files (body: report::fuzzing).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| report::fuzzing::read_run(data));
