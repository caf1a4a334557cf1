#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| apiary_fuzz::custom_resource_decode(data));
