//! Gaps at a new threshold (the viewer's `>` and `<` keys) without recomputing every gap.
//!
//! Two parts:
//! - [`GapFinder`] keeps, per GPU and per block of [`BLOCK`] busy intervals, the
//!   longest idle time before an interval of the block (`u32`, saturating): the gaps
//!   of at least a threshold are found by skipping the blocks whose longest gap is
//!   shorter, in O(blocks + gaps found). About 0.25 bytes per busy interval (with the
//!   gap before each block's first interval, so a block is decoded alone).
//! - [`plan`] decides, for every gap at the new threshold, whether a gap explained
//!   before ([`Known`]: the current gaps and those dropped by earlier threshold
//!   changes) can be kept as it is, or must be explained. A gap's cause, evidence and
//!   host window depend only on its device, start and end, except the evidence of a
//!   queued gap, which also quotes the busy stretch before it (from the end of the
//!   previous gap): such a gap is kept only when that stretch did not change.
//!
//! The result equals [`super::find_gaps_with`] at the new threshold, with windows set
//! (tests compare the two), at the cost of the gaps that are new or changed.

use std::sync::Arc;

use super::gaps::Explainer;
use super::host::HostIndex;
use super::intervals::BLOCK;
use super::{Cause, DeviceActivity, Gap, Options, Windows, host_cause, index};
use crate::model::{Ns, Trace};

/// Per GPU, the longest gap per block of busy intervals.
#[derive(Debug, Clone, Default)]
pub struct GapFinder {
    // (device, longest gap before an interval of block k, gap before block k's first
    // interval), in `devices` order.
    blocks: Vec<(u32, Vec<u32>, Vec<u32>)>,
}

impl GapFinder {
    /// Scan the busy unions once: O(intervals).
    pub fn build(devices: &[DeviceActivity]) -> Self {
        let blocks = devices
            .iter()
            .map(|d| {
                let n = d.busy.len().div_ceil(BLOCK);
                let (mut longest, mut first) = (vec![0u32; n], vec![0u32; n]);
                let mut prev: Option<Ns> = None;
                for (i, (s, e)) in d.busy.iter().enumerate() {
                    if let Some(p) = prev {
                        let g = u32::try_from(s - p).unwrap_or(u32::MAX);
                        longest[i / BLOCK] = longest[i / BLOCK].max(g);
                        if i % BLOCK == 0 {
                            first[i / BLOCK] = g;
                        }
                    }
                    prev = Some(e);
                }
                (d.device, longest, first)
            })
            .collect();
        Self { blocks }
    }

    /// Gaps of `d` lasting at least `min`, in time order: what `d.busy.gaps(min)` gives.
    pub fn gaps(&self, d: &DeviceActivity, min: Ns) -> Vec<(Ns, Ns)> {
        let min = min.max(1);
        let Some((_, longest, first)) = self.blocks.iter().find(|(dev, _, _)| *dev == d.device) else {
            return d.busy.gaps(min).collect();
        };
        let starts = d.busy.block_starts();
        let mut out = Vec::new();
        for (k, &g) in longest.iter().enumerate() {
            if Ns::from(g) < min && g != u32::MAX {
                continue;
            }
            // The end of the interval before the block: from the gap before its first
            // interval, else (a gap too long for u32) from decoding the block before.
            let mut prev: Option<Ns> = match (k, first[k]) {
                (0, _) => None,
                (_, u32::MAX) => d.busy.iter_from(k - 1).take(BLOCK).last().map(|(_, e)| e),
                (_, f) => Some(starts[k] - Ns::from(f)),
            };
            for (s, e) in d.busy.iter_from(k).take(BLOCK) {
                if let Some(p) = prev
                    && s - p >= min
                {
                    out.push((p, s));
                }
                prev = Some(e);
            }
        }
        out
    }

    /// Heap bytes used.
    pub fn heap_bytes(&self) -> usize {
        self.blocks.iter().map(|(_, a, b)| (a.capacity() + b.capacity()) * 4).sum()
    }
}

/// A gap explained before, by where it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Known {
    /// GPU.
    pub device: u32,
    /// Gap start.
    pub start: Ns,
    /// Gap end.
    pub end: Ns,
    /// Whether its cause is [`Cause::Queued`] (its evidence depends on the stretch).
    pub queued: bool,
    /// Start of the busy stretch it was explained with, when known.
    pub stretch_start: Option<Ns>,
}

impl Known {
    /// Describe `gaps` (sorted by start, as the analysis keeps them) with the stretch
    /// each was explained with: the end of the previous gap of its GPU, or the GPU's
    /// first operation.
    pub fn of_current(gaps: &[Gap], devices: &[DeviceActivity]) -> Vec<Known> {
        let mut last: Vec<(u32, Ns)> = devices.iter().map(|d| (d.device, d.extent().map_or(0, |e| e.0))).collect();
        gaps.iter()
            .map(|g| {
                let slot = last.iter_mut().find(|(d, _)| *d == g.device);
                let stretch = slot.map(|(_, e)| std::mem::replace(e, g.end));
                Known {
                    device: g.device,
                    start: g.start,
                    end: g.end,
                    queued: g.cause == Cause::Queued,
                    stretch_start: stretch,
                }
            })
            .collect()
    }

    /// Describe gaps whose stretch is not known any more.
    pub fn of_stashed(gaps: &[Gap]) -> Vec<Known> {
        gaps.iter()
            .map(|g| Known {
                device: g.device,
                start: g.start,
                end: g.end,
                queued: g.cause == Cause::Queued,
                stretch_start: None,
            })
            .collect()
    }
}

/// Where each gap at the new threshold comes from.
#[derive(Debug)]
pub enum Source {
    /// Known gap `i`, unchanged.
    Known(usize),
    /// A gap explained now.
    Fresh(Gap),
}

/// The gaps at a new threshold, sorted by (start, device) as the analysis keeps them.
#[derive(Debug, Default)]
pub struct Plan {
    /// One entry per gap.
    pub gaps: Vec<Source>,
    /// (device, start, end) per gap, in the same order.
    pub spans: Vec<(u32, Ns, Ns)>,
    /// Known gaps at the same place as a fresh one (a queued gap whose stretch changed):
    /// to be dropped.
    pub superseded: Vec<usize>,
    /// How many gaps were explained.
    pub explained: usize,
}

/// What [`plan`] needs besides the known gaps.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// The trace.
    pub trace: Arc<Trace>,
    /// Busy unions per GPU.
    pub devices: Arc<Vec<DeviceActivity>>,
    /// Options, with the new threshold.
    pub options: Options,
    /// Host data index.
    pub host: Arc<HostIndex>,
    /// Correlation lookups of the analysis.
    pub lookups: Arc<index::Index>,
    /// The steady window (gaps' `window`).
    pub windows: Windows,
    /// Longest gaps per block.
    pub finder: Arc<GapFinder>,
}

/// Plan the gaps at `inp.options.min_gap_ns`, reusing `known` gaps where possible.
pub fn plan(inp: &Inputs, known: &[Known]) -> Plan {
    let trace = &*inp.trace;
    let mut order: Vec<(u32, Ns, Ns, u32)> =
        known.iter().enumerate().map(|(i, k)| (k.device, k.start, k.end, i as u32)).collect();
    order.sort_unstable();
    let find = |device: u32, start: Ns, end: Ns| -> Option<usize> {
        let p = order.partition_point(|&(d, s, e, _)| (d, s, e) < (device, start, end));
        order.get(p).filter(|&&(d, s, e, _)| (d, s, e) == (device, start, end)).map(|&(_, _, _, i)| i as usize)
    };
    // Made on the first gap to explain: it costs a pass over the overlapping CPU lanes.
    let mut explainer: Option<Explainer> = None;
    // (start, device), then a known gap or the index of a fresh one.
    let mut out: Vec<((Ns, u32), Result<usize, usize>)> = Vec::new();
    let (mut superseded, mut fresh) = (Vec::new(), Vec::new());
    for d in inp.devices.iter() {
        let mut fallback = None;
        let mut stretch = d.extent().map_or(0, |e| e.0);
        for (start, end) in inp.finder.gaps(d, inp.options.min_gap_ns) {
            let hit = find(d.device, start, end);
            let keep = hit.filter(|&i| !known[i].queued || known[i].stretch_start == Some(stretch));
            match keep {
                Some(i) => out.push(((start, d.device), Ok(i))),
                None => {
                    superseded.extend(hit);
                    let ex = explainer
                        .get_or_insert_with(|| Explainer::new(trace, &inp.lookups, &inp.devices, &inp.options));
                    let pid = *fallback.get_or_insert_with(|| ex.fallback_pid(d.device));
                    let mut g = ex.explain_window(d.device, pid, (start, end), stretch);
                    g.window = inp.windows.of(g.start, g.end);
                    out.push(((start, d.device), Err(fresh.len())));
                    fresh.push(g);
                }
            }
            stretch = end;
        }
    }
    let explained = fresh.len();
    host_cause::refine(trace, &inp.host, &mut fresh);
    out.sort_by_key(|(k, _)| *k);
    let spans = out
        .iter()
        .map(|&((start, device), s)| match s {
            Ok(i) => (device, start, known[i].end),
            Err(j) => (device, start, fresh[j].end),
        })
        .collect();
    let mut fresh: Vec<Option<Gap>> = fresh.into_iter().map(Some).collect();
    let gaps = out
        .into_iter()
        .filter_map(|(_, s)| match s {
            Ok(i) => Some(Source::Known(i)),
            Err(j) => fresh[j].take().map(Source::Fresh),
        })
        .collect();
    Plan { gaps, spans, superseded, explained }
}

/// Carry out `plan` over `pool`, the gaps `known` described (same order): the gaps at
/// the new threshold, and the rest (kept to be reused by a later change).
pub fn apply(plan: Plan, pool: Vec<Gap>) -> (Vec<Gap>, Vec<Gap>) {
    let mut pool: Vec<Option<Gap>> = pool.into_iter().map(Some).collect();
    for i in plan.superseded {
        if let Some(slot) = pool.get_mut(i) {
            *slot = None;
        }
    }
    let gaps = plan
        .gaps
        .into_iter()
        .filter_map(|s| match s {
            Source::Known(i) => pool.get_mut(i).and_then(Option::take),
            Source::Fresh(g) => Some(g),
        })
        .collect();
    (gaps, pool.into_iter().flatten().collect())
}
