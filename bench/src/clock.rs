//! The one clock every process of a run agrees on, and the statistics taken over its samples.
//!
//! `CLOCK_MONOTONIC` is system-wide, so a timestamp printed by the `emit` helper inside a pane and
//! the moment the bench reads fugue's answer can be subtracted directly.

use std::time::Duration;

/// Nanoseconds on `CLOCK_MONOTONIC`.
pub fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes only to `ts`, which outlives the call.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The `q`-quantile (nearest rank) of `samples`; the median is `quantile(s, 0.5)`.
pub fn quantile(samples: &[Duration], q: f64) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

pub fn median(samples: &[Duration]) -> Duration {
    quantile(samples, 0.5)
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// A duration for the table: `0.42 ms`, `12.3 ms`, `1.52 s`.
pub fn show(d: Duration) -> String {
    let ms = ms(d);
    if ms < 10.0 {
        format!("{ms:.2} ms")
    } else if ms < 1000.0 {
        format!("{ms:.1} ms")
    } else {
        format!("{:.2} s", d.as_secs_f64())
    }
}

/// Bytes in decimal megabytes, for the table.
pub fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}
