//! Viewer text helpers: timestamps at the ruler's resolution and shares. Sanitizing,
//! cutting to a width and the unit formatters are the shared ones of [`crate::text`],
//! re-exported under their own names so that the renderers need one `text` module: one
//! duration formatter, so a gap shows the same number in every column (`83.5 ms`, not
//! `83.52 ms` beside `of 83.5 ms`).

use crate::model::Ns;

pub(crate) use crate::text::{ellipsize, fmt_bytes, fmt_count, fmt_gbps, fmt_ns, sanitize};

/// Decimal places of seconds needed to show times at `resolution` ns.
pub(crate) fn decimals_for(resolution: Ns) -> usize {
    let mut d = 0usize;
    let mut unit: Ns = 1_000_000_000;
    while unit > resolution.max(1) && d < 9 {
        unit /= 10;
        d += 1;
    }
    d
}

/// Format a timestamp in seconds with `decimals` places, without the unit.
pub(crate) fn secs(t: Ns, decimals: usize) -> String {
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
pub(crate) fn time(t: Ns, resolution: Ns) -> String {
    format!("{} s", secs(t, decimals_for(resolution)))
}

/// Format a share in `[0, 1]` as a whole percentage.
pub(crate) fn pct(x: f64) -> String {
    format!("{:.0}%", (x * 100.0).clamp(0.0, 100.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_resolve_the_requested_precision() {
        assert_eq!(time(1_234_567_891, 1_000_000), "1.234 s");
        assert_eq!(time(1_234_567_891, 1), "1.234567891 s");
        assert_eq!(time(5_000_000_000, 2_000_000_000), "5 s");
        assert_eq!(secs(-1_500_000_000, 1), "-1.5");
    }
}
