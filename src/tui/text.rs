//! Text helpers: sanitizing trace-derived strings and formatting times, sizes, rates.

use std::borrow::Cow;

use crate::model::Ns;

/// Make a trace-derived string safe for the terminal (control characters, ESC
/// included, and bidirectional overrides become U+FFFD).
pub fn clean(s: &str) -> Cow<'_, str> {
    crate::report::sanitize(s)
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

/// Format a duration with three or four significant digits: `850 ns`, `12.3 µs`, `1.25 ms`, `9.30 s`.
pub fn dur(ns: Ns) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let v = ns.unsigned_abs();
    let (scaled, unit) = match v {
        0..1_000 => return format!("{sign}{v} ns"),
        1_000..1_000_000 => (v as f64 / 1e3, "µs"),
        1_000_000..1_000_000_000 => (v as f64 / 1e6, "ms"),
        _ => (v as f64 / 1e9, "s"),
    };
    let digits = if scaled >= 100.0 {
        1
    } else if scaled >= 10.0 {
        2
    } else {
        3
    };
    let num = format!("{scaled:.digits$}");
    let num = if num.contains('.') { num.trim_end_matches('0').trim_end_matches('.') } else { &num };
    format!("{sign}{num} {unit}")
}

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

pub use crate::units::fmt_bytes as bytes;

/// Format a rate of `bytes` over `ns` in decimal GB/s, `-` for no time.
pub fn gbps(bytes: u64, ns: Ns) -> String {
    crate::units::gbps(bytes, ns).map_or_else(|| "-".to_string(), |g| format!("{g:.2} GB/s"))
}

/// Format a count with thousands separators: `27,059`.
pub fn count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

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
        assert_eq!(dur(12_346), "12.35 µs");
        assert_eq!(dur(1_250_000), "1.25 ms");
        assert_eq!(dur(100_000), "100 µs");
        assert_eq!(dur(123_400_000), "123.4 ms");
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
