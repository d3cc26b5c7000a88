//! Human-readable times, sizes and rates.

use crate::model::Ns;

/// Format nanoseconds with an adaptive unit: `850 ns`, `12.3 µs`, `4.56 ms`, `1.234 s`.
pub fn fmt_ns(ns: Ns) -> String {
    let a = ns.unsigned_abs() as f64;
    let sign = if ns < 0 { "-" } else { "" };
    if a < 1e3 {
        format!("{ns} ns")
    } else if a < 1e6 {
        format!("{sign}{} µs", sig3(a / 1e3))
    } else if a < 1e9 {
        format!("{sign}{} ms", sig3(a / 1e6))
    } else {
        format!("{sign}{:.3} s", a / 1e9)
    }
}

// Three significant digits, without trailing noise: 12.3, 4.56, 123.
fn sig3(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Format a byte count with decimal units: `512 B`, `4.19 MB`, `3.52 GB`.
pub fn fmt_bytes(b: u64) -> String {
    let v = b as f64;
    if v < 1e3 {
        format!("{b} B")
    } else if v < 1e6 {
        format!("{} KB", sig3(v / 1e3))
    } else if v < 1e9 {
        format!("{} MB", sig3(v / 1e6))
    } else {
        format!("{} GB", sig3(v / 1e9))
    }
}

/// Bandwidth in GB/s (decimal) of `bytes` moved in `ns`; None for a zero duration.
pub fn gbps(bytes: u64, ns: Ns) -> Option<f64> {
    (ns > 0).then(|| bytes as f64 / ns as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adaptive_units() {
        assert_eq!(fmt_ns(850), "850 ns");
        assert_eq!(fmt_ns(12_345), "12.3 µs");
        assert_eq!(fmt_ns(4_560_000), "4.56 ms");
        assert_eq!(fmt_ns(1_234_000_000), "1.234 s");
        assert_eq!(fmt_ns(-12_345), "-12.3 µs");
        assert_eq!(fmt_bytes(4_194_304), "4.19 MB");
        assert_eq!(gbps(6_000_000_000, 1_000_000_000), Some(6.0));
        assert_eq!(gbps(1, 0), None);
    }
}
