//! GPU metric rows (`GPU_METRICS` counters) under a GPU's header: per cell, the mean of
//! the samples taken in its time bucket, as a bar of eighths. A cell costs two binary
//! searches in the series' prefix sums, so a frame costs the same for a thousand
//! samples or ten million.

use ratatui::buffer::Buffer;
use ratatui::style::Style;

use crate::model::counters::{Series, names};
use crate::model::{MemClass, Ns};
use crate::tui::theme::Theme;
use crate::view::palette::{Class, glyph};

/// What one cell of a metric row shows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Cell {
    /// Before the first sample or after the last: blank.
    Outside,
    /// Inside the sampled time, but no sample falls in the bucket (zoomed in past the
    /// sampling period).
    NoSample,
    /// Mean of the samples taken in the bucket.
    Mean(f64),
}

/// Per bucket `[edges[k], edges[k + 1])`, what the row of `s` shows.
pub(super) fn cells(s: &Series, edges: &[Ns]) -> Vec<Cell> {
    let (Some(&first), Some(&last)) = (s.times.first(), s.times.last()) else {
        return vec![Cell::Outside; edges.len().saturating_sub(1)];
    };
    edges
        .windows(2)
        .map(|w| {
            let (a, b) = (w[0], w[1]);
            if b <= a || b <= first || a > last {
                return Cell::Outside;
            }
            // Buckets are half-open: a sample on an edge counts once, in the later bucket.
            let (sum, n) = s.sum_in(a, b - 1);
            if n == 0 { Cell::NoSample } else { Cell::Mean(sum as f64 / n as f64) }
        })
        .collect()
}

/// The top of a series' bar scale: 100 for a percentage, else its largest sample.
pub(super) fn full_scale(s: &Series) -> f64 {
    if s.unit() == "%" { 100.0 } else { s.max() as f64 }
}

// PCIe rows take the colours of the copies they carry, SMs Active that of kernels.
fn style(theme: Theme, s: &Series) -> Style {
    match s.name.as_str() {
        names::PCIE_RX => theme.event(Class::Memory(MemClass::H2D), 0),
        names::PCIE_TX => theme.event(Class::Memory(MemClass::D2H), 0),
        names::SMS_ACTIVE => theme.gpu_busy(),
        _ => theme.counter(),
    }
}

/// Draw the row of `s` on screen row `y` from column `x0`, one cell per bucket of `edges`.
pub(super) fn draw(buf: &mut Buffer, theme: Theme, s: &Series, edges: &[Ns], (x0, y): (u16, u16)) {
    let (full, bar_style) = (full_scale(s), style(theme, s));
    for (k, c) in cells(s, edges).into_iter().enumerate() {
        let (ch, st) = match c {
            Cell::Outside => continue,
            Cell::NoSample => (glyph::NO_SAMPLE, theme.dim()),
            Cell::Mean(m) => (glyph::bar(m, full), bar_style),
        };
        if ch != ' '
            && let Some(cell) = buf.cell_mut((x0 + k as u16, y))
        {
            cell.set_char(ch).set_style(st);
        }
    }
}

#[cfg(test)]
mod tests {
    use ratatui::layout::Rect;

    use super::*;
    use crate::view::index::bucket_edge;

    // Irregular instants (runs of 100 ns, a few jitters, a long hole) and values 0..=100.
    fn series(name: &str) -> (Vec<Ns>, Vec<i64>, Series) {
        let mut times = Vec::new();
        let mut t: Ns = 1_000;
        for i in 0..4_000i64 {
            t += if i % 997 == 0 { 50_000 } else { 100 + (i * 7) % 13 };
            times.push(t);
        }
        let values: Vec<i64> = (0..4_000i64).map(|i| (i * 37 + i * i / 11) % 101).collect();
        let s = Series::new(0, name.to_string(), times.clone().into(), &values);
        (times, values, s)
    }

    // The mean of the samples in [a, b) by a scan over all of them.
    fn brute(times: &[Ns], values: &[i64], a: Ns, b: Ns) -> Option<f64> {
        let picked: Vec<i64> = times.iter().zip(values).filter(|(t, _)| **t >= a && **t < b).map(|(_, v)| *v).collect();
        (!picked.is_empty()).then(|| picked.iter().sum::<i64>() as f64 / picked.len() as f64)
    }

    #[test]
    fn each_cell_shows_the_mean_of_the_samples_in_its_bucket() {
        let (times, values, s) = series(names::PCIE_RX);
        let (first, last) = (times[0], times[times.len() - 1]);
        // Whole series, zoomed past the period, straddling both ends, one cell wide.
        for (t0, span, w) in
            [(0, last + 10_000, 100), (first + 123_456, 5_000, 80), (last - 3_000, 9_000, 37), (first, 100, 1)]
        {
            let edges: Vec<Ns> = (0..=w).map(|k| bucket_edge(t0, span, w, k)).collect();
            let mut buf = Buffer::empty(Rect::new(0, 0, w as u16, 1));
            draw(&mut buf, Theme::new(crate::tui::theme::Depth::Mono), &s, &edges, (0, 0));
            for k in 0..w {
                let (a, b) = (edges[k], edges[k + 1]);
                let want = match brute(&times, &values, a, b) {
                    Some(m) => glyph::bar(m, 100.0),
                    None if b > first && a <= last => glyph::NO_SAMPLE,
                    None => ' ',
                };
                assert_eq!(buf[(k as u16, 0)].symbol(), want.to_string(), "cell {k} [{a}, {b}) of view {t0}+{span}");
            }
        }
    }

    #[test]
    fn bars_round_to_eighths_and_never_hide_a_sample_above_zero() {
        assert_eq!(glyph::bar(0.0, 100.0), ' ');
        assert_eq!(glyph::bar(0.4, 100.0), '▁');
        assert_eq!(glyph::bar(50.0, 100.0), '▄');
        assert_eq!(glyph::bar(100.0, 100.0), '█');
        assert_eq!(glyph::bar(250.0, 100.0), '█');
        assert_eq!(glyph::bar(990.0, 1980.0), '▄');
        assert_eq!(glyph::bar(5.0, 0.0), ' ');
    }

    #[test]
    fn a_percentage_tops_at_100_and_other_units_at_their_largest_sample() {
        let (_, _, pct) = series(names::SMS_ACTIVE);
        assert!((full_scale(&pct) - 100.0).abs() < f64::EPSILON);
        let clock = Series::new(0, "GPC Clock Frequency [MHz]".into(), vec![0, 10, 20].into(), &[1_200, 1_980, 1_500]);
        assert!((full_scale(&clock) - 1_980.0).abs() < f64::EPSILON);
        let edges = [0, 10, 20, 30];
        assert_eq!(cells(&clock, &edges), [Cell::Mean(1_200.0), Cell::Mean(1_980.0), Cell::Mean(1_500.0)]);
        let empty = Series::new(0, names::PCIE_TX.into(), Vec::new().into(), &[]);
        assert_eq!(cells(&empty, &edges), [Cell::Outside; 3]);
    }
}
