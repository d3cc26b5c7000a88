//! Viewer text helpers: timestamps at the ruler's resolution, shares, cutting to a
//! width. Sanitizing and the unit formatters are the shared ones of [`crate::text`],
//! re-exported under the short names the renderers use.

use std::borrow::Cow;

use crate::model::Ns;

/// Make a trace-derived string safe for the terminal (control characters, ESC
/// included, and bidirectional overrides become U+FFFD).
pub fn clean(s: &str) -> Cow<'_, str> {
    crate::text::sanitize(s)
}

/// Cut `s` to at most `max` characters, ending with `…` when cut.
pub fn ellipsize(s: &str, max: usize) -> Cow<'_, str> {
    if max == 0 {
        return Cow::Borrowed("");
    }
    if s.char_indices().nth(max).is_none() {
        return Cow::Borrowed(s);
    }
    let cut = s.char_indices().nth(max - 1).map_or(s.len(), |(i, _)| i);
    Cow::Owned(format!("{}…", &s[..cut]))
}

/// Format a duration: the one formatter of the report and the evidence, so a gap shows
/// the same number in every column (`83.5 ms`, not `83.52 ms` beside `of 83.5 ms`).
pub use crate::text::fmt_ns as dur;

/// Decimal places of seconds needed to show times at `resolution` ns.
pub fn decimals_for(resolution: Ns) -> usize {
    let mut d = 0usize;
    let mut unit: Ns = 1_000_000_000;
    while unit > resolution.max(1) && d < 9 {
        unit /= 10;
        d += 1;
    }
    d
}

/// Format a timestamp in seconds with `decimals` places, without the unit.
pub fn secs(t: Ns, decimals: usize) -> String {
    let sign = if t < 0 { "-" } else { "" };
    let v = t.unsigned_abs();
    let whole = v / 1_000_000_000;
    if decimals == 0 {
        return format!("{sign}{whole}");
    }
    let frac = v % 1_000_000_000;
    let frac = frac / 10u64.pow(9 - decimals as u32);
    format!("{sign}{whole}.{frac:0decimals$}")
}

/// Format a timestamp in seconds precise enough to resolve `resolution` ns: `1.2346 s`.
pub fn time(t: Ns, resolution: Ns) -> String {
    format!("{} s", secs(t, decimals_for(resolution)))
}

pub use crate::text::{fmt_bytes as bytes, fmt_count as count, fmt_gbps as gbps};

/// Format a share in `[0, 1]` as a whole percentage.
pub fn pct(x: f64) -> String {
    format!("{:.0}%", (x * 100.0).clamp(0.0, 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_never_reach_the_terminal() {
        assert_eq!(clean("ok"), "ok");
        assert!(!clean("a\x1b[2Jb\tc\u{9b}").chars().any(char::is_control));
    }

    #[test]
    fn durations_are_adaptive() {
        assert_eq!(dur(850), "850 ns");
        assert_eq!(dur(12_346), "12.3 µs");
        assert_eq!(dur(1_250_000), "1.25 ms");
        assert_eq!(dur(100_000), "100 µs");
        assert_eq!(dur(83_523_000), crate::text::fmt_ns(83_523_000));
        assert_eq!(dur(9_298_483_969), "9.298 s");
    }

    #[test]
    fn times_resolve_the_requested_precision() {
        assert_eq!(time(1_234_567_891, 1_000_000), "1.234 s");
        assert_eq!(time(1_234_567_891, 1), "1.234567891 s");
        assert_eq!(time(5_000_000_000, 2_000_000_000), "5 s");
        assert_eq!(secs(-1_500_000_000, 1), "-1.5");
    }

    #[test]
    fn sizes_and_counts() {
        assert_eq!(bytes(512), "512 B");
        // Decimal units, as the report and GB/s rates use.
        assert_eq!(bytes(64 << 20), "67.1 MB");
        assert_eq!(count(27_059), "27,059");
        assert_eq!(count(999), "999");
        assert_eq!(gbps(1_000_000_000, 1_000_000_000), "1.00 GB/s");
        assert_eq!(ellipsize("forward", 4), "for…");
        assert_eq!(ellipsize("fwd", 4), "fwd");
    }
}
