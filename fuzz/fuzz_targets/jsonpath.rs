#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| apiary_fuzz::jsonpath(data));
