//! The step budget as rows (the viewer's `B` panel): each step's wall on the GPU the
//! steps ran on, split into busy time, idle gaps by cause and the holes under the gap
//! threshold, and the bar a row draws. The split adds up to the wall by construction;
//! `tests/it/step_bars.rs` checks busy and gap idle per step against SQL.

use crate::analysis::regap::Pool;
use crate::analysis::{Analysis, Cause, DeviceActivity};
use crate::model::Ns;

/// A step is drawn as an outlier when its wall is at least this many times the median's
/// (the factor the regions use for a stall).
pub(crate) const OUTLIER_FACTOR: f64 = 2.0;

/// A part of a step's wall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    /// The GPU ran a kernel, copy or memset.
    Busy,
    /// An idle gap of at least the threshold, by its cause.
    Idle(Cause),
    /// Idle holes under the gap threshold.
    Short,
}

/// One step's row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StepBar {
    /// Its number, from 0 in start order.
    pub index: usize,
    /// Start of the step.
    pub start: Ns,
    /// Start of the next step (the last step: its own end), so that the holes between
    /// steps count in the step before them.
    pub end: Ns,
    /// True when the step is in the steady window (the first step is start-up).
    pub steady: bool,
    /// The wall's parts in drawing order: busy, gap idle by cause (report order), short
    /// holes; parts of no time left out.
    pub parts: Vec<(Part, Ns)>,
}

impl StepBar {
    /// The step's wall.
    pub(crate) fn wall(&self) -> Ns {
        self.end - self.start
    }

    /// Time in `part`.
    pub(crate) fn of(&self, part: Part) -> Ns {
        self.parts.iter().filter(|p| p.0 == part).map(|p| p.1).sum()
    }

    /// The idle cause holding the most of the step (short holes and busy time aside).
    pub(crate) fn top_idle(&self) -> Option<(Cause, Ns)> {
        let idle = self.parts.iter().filter_map(|&(p, t)| if let Part::Idle(c) = p { Some((c, t)) } else { None });
        idle.max_by_key(|&(c, t)| (t, std::cmp::Reverse(c as usize)))
    }
}

/// How many median steps a full bar holds at most.
pub(crate) const FULL_BAR_MEDIANS: Ns = 4;

/// The rows of every step, on one GPU.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StepBars {
    /// The GPU.
    pub device: u32,
    /// One row per step, in start order.
    pub rows: Vec<StepBar>,
    /// The median wall of the steady steps (of every step when none is steady).
    pub median_ns: Ns,
    /// The wall of a full bar: the longest steady wall, at most [`FULL_BAR_MEDIANS`] ×
    /// the median (longer steps, a slow first step or a periodic stall, are drawn clipped,
    /// so that they do not shrink every other bar).
    pub max_ns: Ns,
}

impl StepBars {
    /// How many times the median step `row` is.
    pub(crate) fn ratio(&self, row: &StepBar) -> f64 {
        row.wall() as f64 / self.median_ns.max(1) as f64
    }

    /// The cells of `row`'s bar in `width` cells: its parts in order, each with its
    /// cells, and whether the bar is clipped. A step of [`Self::max_ns`] fills `width`; a
    /// longer step fills one cell less, its parts in proportion, and is clipped; a part
    /// of any time may round to none.
    pub(crate) fn cells(&self, row: &StepBar, width: u16) -> (Vec<(Part, u16)>, bool) {
        let w = f64::from(width);
        let clipped = row.wall() > self.max_ns && width > 1;
        let total =
            if clipped { w - 1.0 } else { (row.wall() as f64 / self.max_ns.max(1) as f64 * w).round().clamp(1.0, w) };
        let wall = row.wall().max(1) as f64;
        let (mut held, mut drawn) = (0 as Ns, 0u16);
        let mut out = Vec::new();
        for &(part, t) in &row.parts {
            held += t;
            // Cumulative rounding: the cells add up to the bar, whatever the parts.
            let upto = (held as f64 / wall * total).round() as u16;
            if upto > drawn {
                out.push((part, upto - drawn));
                drawn = upto;
            }
        }
        (out, clipped)
    }
}

/// The step rows of `analysis` on `devices` (the viewer keeps them apart from the
/// analysis) with the gaps of `pool` (the viewer's current threshold), on the GPU the
/// budget describes, else the busiest; None without steps.
pub(crate) fn step_bars(analysis: &Analysis, devices: &[DeviceActivity], pool: &Pool) -> Option<StepBars> {
    let steps = &analysis.step_instances;
    if steps.is_empty() {
        return None;
    }
    let device = analysis
        .budget
        .as_ref()
        .and_then(|b| devices.iter().find(|d| d.device == b.device))
        .or_else(|| devices.iter().max_by_key(|d| (d.busy.total(), std::cmp::Reverse(d.device))))?;
    let spans: Vec<(Ns, Ns)> =
        steps.iter().enumerate().map(|(i, &(a, b))| (a, steps.get(i + 1).map_or(b, |n| n.0.max(a)))).collect();
    let idle = idle_by_step(&spans, device.device, pool);
    let rows: Vec<StepBar> = spans
        .iter()
        .zip(idle)
        .enumerate()
        .map(|(index, (&(start, end), by))| {
            bar(index, (start, end), device, by, start >= analysis.windows.steady_start)
        })
        .collect();
    let mut walls: Vec<Ns> = rows.iter().filter(|r| r.steady).map(StepBar::wall).collect();
    if walls.is_empty() {
        walls = rows.iter().map(StepBar::wall).collect();
    }
    let (median_ns, max_ns) = scale(&mut walls);
    Some(StepBars { device: device.device, rows, median_ns, max_ns })
}

// The median of `walls` and the wall of a full bar: the longest, at most
// FULL_BAR_MEDIANS × the median, so that one long evaluation or checkpoint step does not
// leave every ordinary step a cell or two (longer steps are drawn clipped, and their
// ×median column says how long they are).
fn scale(walls: &mut [Ns]) -> (Ns, Ns) {
    walls.sort_unstable();
    let median = walls.get(walls.len().saturating_sub(1) / 2).copied().unwrap_or(0);
    (median, walls.last().copied().unwrap_or(0).min(median.saturating_mul(FULL_BAR_MEDIANS)))
}

// One row: busy from the device's union, gap idle as given, the rest short holes.
fn bar(index: usize, (start, end): (Ns, Ns), d: &DeviceActivity, by: [Ns; Cause::ALL.len()], steady: bool) -> StepBar {
    let busy = d.busy.busy_in(start, end);
    let in_gaps: Ns = by.iter().sum();
    let mut parts = vec![(Part::Busy, busy)];
    parts.extend(Cause::ALL.into_iter().map(|c| (Part::Idle(c), by[c as usize])));
    parts.push((Part::Short, (end - start - busy - in_gaps).max(0)));
    parts.retain(|p| p.1 > 0);
    StepBar { index, start, end, steady, parts }
}

// Gap idle of `device` by cause within each span (spans sorted and disjoint): one pass
// over the gaps, each split at the spans it crosses.
fn idle_by_step(spans: &[(Ns, Ns)], device: u32, pool: &Pool) -> Vec<[Ns; Cause::ALL.len()]> {
    let mut out = vec![[0 as Ns; Cause::ALL.len()]; spans.len()];
    for g in pool.iter().filter(|g| g.device == device) {
        let mut k = spans.partition_point(|s| s.1 <= g.start);
        while let Some(&(a, b)) = spans.get(k).filter(|s| s.0 < g.end) {
            out[k][g.cause as usize] += g.end.min(b) - g.start.max(a);
            k += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(parts: Vec<(Part, Ns)>) -> StepBar {
        let wall = parts.iter().map(|p| p.1).sum();
        StepBar { index: 0, start: 0, end: wall, steady: true, parts }
    }

    #[test]
    fn the_cells_add_up_to_the_bar_and_the_longest_step_fills_it() {
        let a = row(vec![(Part::Busy, 30), (Part::Idle(Cause::HostBusy), 60), (Part::Short, 10)]);
        let b = row(vec![(Part::Busy, 25), (Part::Idle(Cause::SyncDrain), 25)]);
        let bars = StepBars { device: 0, rows: vec![a.clone(), b.clone()], median_ns: 50, max_ns: 100 };
        let (cells, clipped) = bars.cells(&a, 20);
        assert_eq!(cells, vec![(Part::Busy, 6), (Part::Idle(Cause::HostBusy), 12), (Part::Short, 2)]);
        assert!(!clipped);
        let half: u16 = bars.cells(&b, 20).0.iter().map(|c| c.1).sum();
        assert_eq!(half, 10);
        // A step longer than the longest steady one fills all but the clip mark.
        let short = StepBars { max_ns: 50, ..bars.clone() };
        let (cells, clipped) = short.cells(&a, 20);
        assert!(clipped);
        assert_eq!(cells.iter().map(|c| c.1).sum::<u16>(), 19);
        assert!((bars.ratio(&a) - 2.0).abs() < 1e-9);
        assert_eq!(a.top_idle(), Some((Cause::HostBusy, 60)));
    }

    #[test]
    fn a_full_bar_is_the_longest_step_but_at_most_four_medians() {
        assert_eq!(scale(&mut [30, 10, 12]), (12, 30));
        assert_eq!(scale(&mut [10, 500, 10, 11, 10]), (10, 40));
        assert_eq!(scale(&mut []), (0, 0));
    }

    #[test]
    fn a_gap_is_split_at_the_steps_it_crosses() {
        use crate::analysis::Gap;
        let busy = crate::analysis::Union::from_pairs([(0, 10), (40, 50)]);
        let d =
            DeviceActivity { device: 0, busy: busy.clone(), kernels: busy, copies: crate::analysis::Union::default() };
        let gaps = vec![Gap { start: 10, end: 40, cause: Cause::IoWait, ..Gap::default() }];
        let pool = Pool::new(gaps, std::slice::from_ref(&d), 5);
        let spans = [(0, 20), (20, 30), (30, 60)];
        let by = idle_by_step(&spans, 0, &pool);
        let io = Cause::IoWait as usize;
        assert_eq!((by[0][io], by[1][io], by[2][io]), (10, 10, 10));
        let r = bar(2, spans[2], &d, by[2], true);
        // [30, 60): busy 10, io-wait 10, and 10 after the last busy time counts short.
        assert_eq!(r.parts, vec![(Part::Busy, 10), (Part::Idle(Cause::IoWait), 10), (Part::Short, 10)]);
    }
}
