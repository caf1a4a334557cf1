//! Fault points of the storage layer, for tests: compiled in only with the `fault-injection`
//! cargo feature (forwarded by the server's feature of the same name, which `--all-features`
//! turns on), never in the default build. Without the feature every setter is ignored and every
//! fault point is empty.
//!
//! The server exposes them through its fault header (`server/src/fault.rs`).

#[cfg(feature = "fault-injection")]
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Whether this build has the storage fault points.
pub const ENABLED: bool = cfg!(feature = "fault-injection");

/// The delay, in microseconds, the embedded writer adds before each commit's sync.
#[cfg(feature = "fault-injection")]
static COMMIT_DELAY_MICROS: AtomicU64 = AtomicU64::new(0);

/// Makes every later commit of the embedded writer wait `delay` before its durable commit (its
/// fsync), as a slow disk would; zero clears it. Ignored without the `fault-injection` feature.
pub fn set_commit_delay(delay: Duration) {
    #[cfg(feature = "fault-injection")]
    COMMIT_DELAY_MICROS.store(
        u64::try_from(delay.as_micros()).unwrap_or(u64::MAX),
        Ordering::Relaxed,
    );
    #[cfg(not(feature = "fault-injection"))]
    let _ = delay;
}

/// The fault point before a commit's sync: sleeps for the delay [`set_commit_delay`] set, on
/// the writer thread (so the batch, and every write queued behind it, waits).
#[inline(always)]
pub(crate) fn before_commit_sync() {
    #[cfg(feature = "fault-injection")]
    {
        let micros = COMMIT_DELAY_MICROS.load(Ordering::Relaxed);
        if micros > 0 {
            std::thread::sleep(Duration::from_micros(micros));
        }
    }
}
