//! A whole lab or run directory, as anyone may have edited it, read and
//! rendered as `report` and `compare` do (body: experiments::fuzzing).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| experiments::fuzzing::lab_dir(data));
