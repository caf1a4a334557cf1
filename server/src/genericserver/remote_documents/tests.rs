//! Tests of the fetcher.
