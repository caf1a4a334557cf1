#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| apiary_fuzz::continue_token(data));
