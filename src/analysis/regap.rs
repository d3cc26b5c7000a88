//! Gaps at a new threshold (the viewer's `>` and `<` keys) without recomputing every gap.
//!
//! Two parts:
//! - [`GapFinder`] keeps, per GPU and per block of [`BLOCK`] busy intervals, the
//!   longest idle time before an interval of the block (`u32`, saturating): the gaps
//!   of at least a threshold are found by skipping the blocks whose longest gap is
//!   shorter, in O(blocks + gaps found). About 0.25 bytes per busy interval (with the
//!   gap before each block's first interval, so a block is decoded alone).
//! - [`Pool`] keeps every gap explained so far: every gap of at least the lowest
//!   threshold asked for (the floor), sorted by (start, device), with a length order.
//!   The gaps at a threshold are ids into it ([`Shown`]), never copies or moves. A
//!   gap's cause, evidence and host window depend only on its device, start and end,
//!   except the evidence of a queued gap, which also quotes the busy stretch before it
//!   (from the end of the previous gap): such a gap is explained again when that
//!   stretch changed. A threshold at or above the floor is one pass over the pool's
//!   [`Known`] list (40 bytes a gap); only a lower one reads the busy unions through
//!   the [`GapFinder`], explains the new gaps and merges them into the pool.
//!   The pass runs on a worker thread ([`Job`]); [`Pool::apply`] takes its result in.
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
pub(crate) struct GapFinder {
    // (device, longest gap before an interval of block k, gap before block k's first
    // interval), in `devices` order.
    blocks: Vec<(u32, Vec<u32>, Vec<u32>)>,
}

impl GapFinder {
    /// Scan the busy unions once: O(intervals).
    pub(crate) fn build(devices: &[DeviceActivity]) -> Self {
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
    #[cfg(test)]
    pub(crate) fn gaps(&self, d: &DeviceActivity, min: Ns) -> Vec<(Ns, Ns)> {
        self.gaps_up_to(d, min, usize::MAX).unwrap_or_default()
    }

    /// The same, or None as soon as there are more than `limit`.
    pub(crate) fn gaps_up_to(&self, d: &DeviceActivity, min: Ns, limit: usize) -> Option<Vec<(Ns, Ns)>> {
        let min = min.max(1);
        let Some((_, longest, first)) = self.blocks.iter().find(|(dev, _, _)| *dev == d.device) else {
            let all: Vec<(Ns, Ns)> = d.busy.gaps(min).take(limit.saturating_add(1)).collect();
            return (all.len() <= limit).then_some(all);
        };
        let starts = d.busy.block_starts();
        let mut out = Vec::new();
        for (k, &g) in longest.iter().enumerate() {
            if Ns::from(g) < min && g != u32::MAX {
                continue;
            }
            // The gap before the block's first interval: from its stored length, else
            // (too long for u32) from decoding the block before.
            let prev: Option<Ns> = match (k, first[k]) {
                (0, _) => None,
                (_, u32::MAX) => d.busy.iter_from(k - 1).take(BLOCK).last().map(|(_, e)| e),
                (_, f) => Some(starts[k] - Ns::from(f)),
            };
            if let Some(p) = prev
                && starts[k] - p >= min
            {
                out.push((p, starts[k]));
            }
            d.busy.gaps_in_block(k, min, &mut out);
            if out.len() > limit {
                return None;
            }
        }
        Some(out)
    }

    /// Heap bytes used.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.blocks.iter().map(|(_, a, b)| (a.capacity() + b.capacity()) * 4).sum()
    }
}

/// A gap of the pool: where it is, where it is stored and what its explanation
/// depended on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Known {
    /// GPU.
    pub device: u32,
    /// Where the pool stores its [`Gap`].
    pub slot: u32,
    /// Gap start.
    pub start: Ns,
    /// Gap end.
    pub end: Ns,
    /// Start of the busy stretch it was explained with.
    pub stretch_start: Ns,
    /// Whether its cause is [`Cause::Queued`] (its evidence depends on the stretch).
    pub queued: bool,
}

impl Known {
    /// Describe `gaps` (every gap of at least one threshold, sorted by (start,
    /// device) as the analysis keeps them, stored in that order) with the stretch each
    /// was explained with: the end of the previous gap of its GPU, or the GPU's first
    /// operation.
    fn of_gaps(gaps: &[Gap], devices: &[DeviceActivity]) -> Vec<Known> {
        let mut last = Stretches::new(devices);
        gaps.iter()
            .enumerate()
            .map(|(slot, g)| Known {
                device: g.device,
                slot: slot as u32,
                start: g.start,
                end: g.end,
                stretch_start: last.next(g.device, g.end),
                queued: g.cause == Cause::Queued,
            })
            .collect()
    }

    fn len(&self) -> Ns {
        self.end - self.start
    }

    fn key(&self) -> (Ns, u32) {
        (self.start, self.device)
    }
}

// Per GPU, where the busy stretch before its next gap starts: the end of its previous
// gap, or its first operation.
struct Stretches(Vec<(u32, Ns)>);

impl Stretches {
    fn new(devices: &[DeviceActivity]) -> Self {
        Self(devices.iter().map(|d| (d.device, d.extent().map_or(0, |e| e.0))).collect())
    }

    // The stretch before a gap of `device` ending at `end`, which starts the next one.
    fn next(&mut self, device: u32, end: Ns) -> Ns {
        match self.0.iter_mut().find(|(d, _)| *d == device) {
            Some((_, e)) => std::mem::replace(e, end),
            None => 0,
        }
    }
}

/// The gaps at one threshold, as positions in the [`Pool`]'s [`Known`] list.
#[derive(Debug, Clone, Default)]
pub(crate) struct Shown {
    // The threshold.
    min: Ns,
    // Positions in the known list, ascending (so by (start, device)).
    ids: Vec<u32>,
    // Per GPU: its gaps, for the per-cell lookups of the timeline.
    by_device: Vec<DeviceGaps>,
}

// The gaps of one GPU: positions in `Shown::ids` and their ends, both in time order
// (the ends are searched without reaching into the pool: 8 bytes a probe).
#[derive(Debug, Clone, Default)]
struct DeviceGaps {
    device: u32,
    pos: Vec<u32>,
    ends: Vec<Ns>,
}

impl Shown {
    fn new(min: Ns, ids: Vec<u32>, known: &[Known]) -> Self {
        let mut by_device: Vec<DeviceGaps> = Vec::new();
        for (pos, &id) in ids.iter().enumerate() {
            let k = &known[id as usize];
            let at = if let Some(at) = by_device.iter().position(|g| g.device == k.device) {
                at
            } else {
                by_device.push(DeviceGaps { device: k.device, ..DeviceGaps::default() });
                by_device.len() - 1
            };
            by_device[at].pos.push(pos as u32);
            by_device[at].ends.push(k.end);
        }
        Self { min, ids, by_device }
    }
}

/// The viewer's gaps: every gap explained so far, which is every gap of at least the
/// lowest threshold asked for (the floor), and the ones at the current threshold
/// ([`Shown`]: positions, not copies). See the module text.
#[derive(Debug, Default)]
pub(crate) struct Pool {
    // The gaps, in chunks that are only added to (one per lowering of the floor, made
    // by the worker thread): taking one in is a move of the chunk, not of its gaps.
    chunks: Vec<Vec<Gap>>,
    // Slot of each chunk's first gap.
    chunk_start: Vec<u32>,
    // Every gap, sorted by (start, device).
    known: Arc<Vec<Known>>,
    // Positions in `known`, longest first, then by start, then by position: the gaps
    // of at least a threshold at or above the floor are a prefix.
    by_len: Arc<Vec<u32>>,
    // Place of each position of `known` in `by_len`.
    rank: Vec<u32>,
    floor: Ns,
    shown: Shown,
}

impl Pool {
    /// The pool of `gaps`, every gap of at least `min` (sorted as the analysis keeps them).
    pub(crate) fn new(gaps: Vec<Gap>, devices: &[DeviceActivity], min: Ns) -> Self {
        let known = Known::of_gaps(&gaps, devices);
        let mut by_len: Vec<u32> = (0..gaps.len() as u32).collect();
        by_len.sort_unstable_by_key(|&id| length_key(&known, id));
        let shown = Shown::new(min, (0..gaps.len() as u32).collect(), &known);
        let rank = ranks(&by_len);
        Self {
            chunks: vec![gaps],
            chunk_start: vec![0],
            known: Arc::new(known),
            by_len: Arc::new(by_len),
            rank,
            floor: min,
            shown,
        }
    }

    fn stored(&self, slot: u32) -> &Gap {
        let c = self.chunk_start.partition_point(|&s| s <= slot) - 1;
        &self.chunks[c][(slot - self.chunk_start[c]) as usize]
    }

    fn stored_mut(&mut self, slot: u32) -> &mut Gap {
        let c = self.chunk_start.partition_point(|&s| s <= slot) - 1;
        &mut self.chunks[c][(slot - self.chunk_start[c]) as usize]
    }

    fn slots(&self) -> usize {
        self.chunks.iter().map(Vec::len).sum()
    }

    /// Number of gaps at the current threshold.
    pub(crate) fn len(&self) -> usize {
        self.shown.ids.len()
    }

    /// True when no gap reaches the current threshold.
    pub(crate) fn is_empty(&self) -> bool {
        self.shown.ids.is_empty()
    }

    /// Gap `i` at the current threshold (in start order).
    pub(crate) fn get(&self, i: usize) -> Option<&Gap> {
        self.shown.ids.get(i).map(|&id| self.stored(self.known[id as usize].slot))
    }

    /// The gaps at the current threshold, in start order.
    pub(crate) fn iter(&self) -> impl ExactSizeIterator<Item = &Gap> + DoubleEndedIterator + '_ {
        self.shown.ids.iter().map(|&id| self.stored(self.known[id as usize].slot))
    }

    /// Index of the first gap at the current threshold (in start order) for which
    /// `pred(start, end)` is false, all before it true: [`slice::partition_point`].
    pub(crate) fn partition_point(&self, pred: impl Fn(Ns, Ns) -> bool) -> usize {
        self.shown.ids.partition_point(|&id| {
            let k = &self.known[id as usize];
            pred(k.start, k.end)
        })
    }

    /// Gap `row` of the current gaps in length order (longest first): its index.
    pub(crate) fn by_length(&self, row: usize) -> Option<usize> {
        let id = *self.by_len.get(row).filter(|_| row < self.len())?;
        self.shown.ids.binary_search(&id).ok()
    }

    /// Row of gap `i` in length order.
    pub(crate) fn length_row(&self, i: usize) -> Option<usize> {
        self.shown.ids.get(i).map(|&id| self.rank[id as usize] as usize)
    }

    /// The gap of `device` that overlaps `[a, b)`, if any (the first one): O(log n).
    pub(crate) fn overlapping(&self, device: u32, a: Ns, b: Ns) -> Option<u32> {
        let g = self.shown.by_device.iter().find(|g| g.device == device)?;
        self.first_overlap(g, g.ends.partition_point(|&e| e <= a), b)
    }

    /// [`Pool::overlapping`] for each cell `[edges[k], edges[k + 1])` of a row, edges
    /// ascending: each search starts where the one before ended.
    pub(crate) fn overlapping_cells(&self, device: u32, edges: &[Ns]) -> Vec<Option<u32>> {
        let cells = edges.len().saturating_sub(1);
        let Some(g) = self.shown.by_device.iter().find(|g| g.device == device) else {
            return vec![None; cells];
        };
        let mut p = 0;
        edges
            .windows(2)
            .map(|w| {
                p = crate::analysis::intervals::partition_near(&g.ends, p, |&e| e <= w[0]);
                self.first_overlap(g, p, w[1])
            })
            .collect()
    }

    // Gap `p` of `g` (the first ending after a cell's start), if it starts before `b`.
    fn first_overlap(&self, g: &DeviceGaps, p: usize, b: Ns) -> Option<u32> {
        let pos = *g.pos.get(p)?;
        (self.known[self.shown.ids[pos as usize] as usize].start < b).then_some(pos)
    }

    /// The threshold of the gaps shown.
    pub(crate) fn threshold(&self) -> Ns {
        self.shown.min
    }

    /// What a worker thread needs to compute [`Change`] for the threshold of `inputs`.
    pub(crate) fn job(&self, inputs: Inputs) -> Job {
        Job {
            inputs,
            known: Arc::clone(&self.known),
            by_len: Arc::clone(&self.by_len),
            floor: self.floor,
            slots: self.slots(),
        }
    }

    /// Take in a change computed from this pool's [`Pool::job`]: no gap is moved
    /// or copied, only the changed ones replaced.
    pub(crate) fn apply(&mut self, change: Change) {
        debug_assert_eq!(change.slots, self.slots(), "a change applies to the pool it was made from");
        for (slot, g) in change.replaced {
            *self.stored_mut(slot) = g;
        }
        if !change.known_updates.is_empty() {
            let known = Arc::make_mut(&mut self.known);
            for (id, k) in change.known_updates {
                known[id as usize] = k;
            }
        }
        if let Some(added) = change.added {
            self.chunk_start.push(self.slots() as u32);
            self.chunks.push(added.gaps);
            self.known = Arc::new(added.known);
            self.by_len = Arc::new(added.by_len);
            self.rank = added.rank;
            self.floor = change.shown.min;
        }
        self.shown = change.shown;
    }
}

fn length_key(known: &[Known], id: u32) -> (std::cmp::Reverse<Ns>, Ns, u32) {
    let k = &known[id as usize];
    (std::cmp::Reverse(k.len()), k.start, id)
}

fn ranks(by_len: &[u32]) -> Vec<u32> {
    let mut rank = vec![0u32; by_len.len()];
    for (r, &id) in by_len.iter().enumerate() {
        rank[id as usize] = r as u32;
    }
    rank
}

/// What a threshold change needs besides the pool's [`Known`] list.
#[derive(Debug, Clone)]
pub(crate) struct Inputs {
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
    /// The most gaps to explain ([`MAX_GAPS`]).
    pub max_gaps: usize,
}

/// The most gaps the pool explains (about 300 bytes each with their text, so about
/// 1.2 GB): a lower threshold that would give more is refused ([`TooMany`]). The gaps
/// of a 100M-event training run at 50 µs are 2.4M; at 25 µs, 11.7M.
pub(crate) const MAX_GAPS: usize = 4_000_000;

/// A threshold refused: it gives more than `limit` gaps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooMany {
    /// The threshold asked for.
    pub min: Ns,
    /// The most gaps explained ([`MAX_GAPS`]).
    pub limit: usize,
}

/// A threshold change to compute off the screen's thread ([`Job::run`]).
#[derive(Debug)]
pub(crate) struct Job {
    inputs: Inputs,
    known: Arc<Vec<Known>>,
    by_len: Arc<Vec<u32>>,
    floor: Ns,
    slots: usize,
}

/// The pool at a new threshold, as [`Pool::apply`] takes it in.
#[derive(Debug)]
pub(crate) struct Change {
    shown: Shown,
    // Gaps explained again (queued gaps whose stretch changed), by slot.
    replaced: Vec<(u32, Gap)>,
    // At or above the floor: their known entries, by position.
    known_updates: Vec<(u32, Known)>,
    // Below the floor: the new gaps and the pool's new lists.
    added: Option<Added>,
    slots: usize,
    /// How many gaps were explained.
    pub explained: usize,
}

#[derive(Debug)]
struct Added {
    // New gaps, stored in this order from the pool's next free slot.
    gaps: Vec<Gap>,
    known: Vec<Known>,
    by_len: Vec<u32>,
    rank: Vec<u32>,
}

impl Job {
    /// Compute the change. Its memory is the new positions (4 bytes per gap shown)
    /// and the gaps explained; the pool's lists are shared, and released when this
    /// returns. A threshold below the floor with more than `max_gaps` gaps is refused.
    pub(crate) fn run(self) -> Result<Change, TooMany> {
        let min = self.inputs.options.min_gap_ns.max(1);
        if min >= self.floor { Ok(self.select(min)) } else { self.extend(min) }
    }

    // At or above the floor: the pool's gaps of at least `min`.
    fn select(self, min: Ns) -> Change {
        let inp = &self.inputs;
        let mut stretch = Stretches::new(&inp.devices);
        let mut ids = Vec::new();
        let mut redo: Vec<(u32, Known)> = Vec::new();
        for (id, k) in self.known.iter().enumerate().filter(|(_, k)| k.len() >= min) {
            let s = stretch.next(k.device, k.end);
            if k.queued && k.stretch_start != s {
                redo.push((id as u32, Known { stretch_start: s, ..*k }));
            }
            ids.push(id as u32);
        }
        let explained = redo.len();
        let (ids_redone, todo): (Vec<u32>, Vec<Known>) = redo.into_iter().unzip();
        let (mut replaced, mut known_updates) = (Vec::new(), Vec::new());
        for (id, (g, k)) in ids_redone.into_iter().zip(explain(inp, todo)) {
            replaced.push((k.slot, g));
            known_updates.push((id, k));
        }
        let shown = Shown::new(min, ids, &self.known);
        Change { shown, replaced, known_updates, added: None, slots: self.slots, explained }
    }

    // Below the floor: every gap of at least `min` from the busy unions; those already
    // in the pool are kept (a queued one explained again if its stretch changed), the
    // others explained and stored in a new chunk.
    fn extend(self, min: Ns) -> Result<Change, TooMany> {
        let inp = &self.inputs;
        let windows = windows(inp, min, inp.max_gaps)?;
        let old = &self.known;
        // Each window as its known entry, the pool's when it has the gap (its stretch
        // updated), and whether it must be explained.
        let mut j = 0;
        let mut next_slot = self.slots as u32;
        let mut known: Vec<Known> = Vec::with_capacity(windows.len());
        // New position of each old one; u32::MAX where a window was not found (never: the
        // gaps of the floor are among those of any lower threshold).
        let mut old_pos = vec![u32::MAX; old.len()];
        let mut todo: Vec<(usize, Known)> = Vec::new();
        for &(start, device, end, s) in &windows {
            while j < old.len() && old[j].key() < (start, device) {
                j += 1;
            }
            let hit = j < old.len() && old[j].key() == (start, device) && old[j].end == end;
            let k = if hit {
                old_pos[j] = known.len() as u32;
                Known { stretch_start: s, ..old[j] }
            } else {
                next_slot += 1;
                Known { device, slot: next_slot - 1, start, end, stretch_start: s, queued: false }
            };
            if !hit || (k.queued && old[j].stretch_start != s) {
                todo.push((known.len(), k));
            }
            known.push(k);
        }
        let explained = todo.len();
        let (at, todo): (Vec<usize>, Vec<Known>) = todo.into_iter().unzip();
        let (mut replaced, mut added) = (Vec::new(), Vec::new());
        let mut fresh_ids = Vec::new();
        for (n, (g, k)) in at.into_iter().zip(explain(inp, todo)) {
            known[n] = k;
            if (k.slot as usize) < self.slots {
                replaced.push((k.slot, g));
            } else {
                added.push(g);
                fresh_ids.push(n as u32);
            }
        }
        // Length order: the old one renumbered (still ordered, as positions keep their
        // order), and the new gaps sorted, merged.
        let old_order = self.by_len.iter().map(|&id| old_pos[id as usize]).filter(|&p| p != u32::MAX);
        fresh_ids.sort_unstable_by_key(|&id| length_key(&known, id));
        let by_len: Vec<u32> =
            itertools::merge_join_by(old_order, fresh_ids, |a, b| length_key(&known, *a) <= length_key(&known, *b))
                .map(itertools::Either::into_inner)
                .collect();
        let rank = ranks(&by_len);
        let shown = Shown::new(min, (0..known.len() as u32).collect(), &known);
        let added = Some(Added { gaps: added, known, by_len, rank });
        Ok(Change { shown, replaced, known_updates: Vec::new(), added, slots: self.slots, explained })
    }
}

// Explain the gaps of `todo` (each with the stretch before it), in (start, device)
// order, rule 6 included: each gap with its known entry updated.
fn explain(inp: &Inputs, todo: Vec<Known>) -> Vec<(Gap, Known)> {
    if todo.is_empty() {
        return Vec::new();
    }
    let trace = &*inp.trace;
    // Made once: it costs a pass over the overlapping CPU lanes.
    let mut ex = Explainer::new(trace, &inp.lookups, &inp.devices, &inp.options);
    let mut fallback: Vec<(u32, u32)> = Vec::new();
    let mut gaps: Vec<Gap> = todo
        .iter()
        .map(|k| {
            let pid = if let Some(&(_, pid)) = fallback.iter().find(|(d, _)| *d == k.device) {
                pid
            } else {
                let pid = ex.fallback_pid(k.device);
                fallback.push((k.device, pid));
                pid
            };
            let mut g = ex.explain_window(k.device, pid, (k.start, k.end), k.stretch_start);
            g.window = inp.windows.of(g.start, g.end);
            g
        })
        .collect();
    host_cause::refine(trace, &inp.host, &mut gaps);
    super::shapes::name(trace, &inp.host, &mut gaps);
    todo.into_iter()
        .zip(gaps)
        .map(|(k, g)| {
            let queued = g.cause == Cause::Queued;
            (g, Known { queued, ..k })
        })
        .collect()
}

// The gap windows of every GPU at `min`, merged in (start, device) order, each with
// the start of the busy stretch before it; Err(more than) when over `limit`.
fn windows(inp: &Inputs, min: Ns, limit: usize) -> Result<Vec<(Ns, u32, Ns, Ns)>, TooMany> {
    let mut per: Vec<Vec<(Ns, Ns)>> = Vec::with_capacity(inp.devices.len());
    for d in inp.devices.iter() {
        let left = limit - per.iter().map(Vec::len).sum::<usize>();
        per.push(inp.finder.gaps_up_to(d, min, left).ok_or(TooMany { min, limit })?);
    }
    let mut cursor = vec![0usize; per.len()];
    let mut stretch: Vec<Ns> = inp.devices.iter().map(|d| d.extent().map_or(0, |e| e.0)).collect();
    let mut out = Vec::with_capacity(per.iter().map(Vec::len).sum());
    loop {
        let next = (0..per.len())
            .filter(|&k| cursor[k] < per[k].len())
            .min_by_key(|&k| (per[k][cursor[k]].0, inp.devices[k].device));
        let Some(k) = next else { return Ok(out) };
        let (start, end) = per[k][cursor[k]];
        out.push((start, inp.devices[k].device, end, stretch[k]));
        stretch[k] = end;
        cursor[k] += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Union;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn finder_gaps_equal_the_union_gaps(
            steps in prop::collection::vec((0i64..3, 1i64..50, 0u8..20), 0..300),
            mins in prop::collection::vec(0i64..60, 1..6),
        ) {
            // Idle times from 0 to a few ns, some of them wider than u32.
            let mut t = 0;
            let mut pairs = Vec::new();
            for (gap, len, wide) in steps {
                t += if wide == 0 { 5_000_000_000 } else { gap * 10 };
                pairs.push((t, t + len));
                t += len;
            }
            let d = DeviceActivity { device: 0, busy: Union::from_pairs(pairs), ..DeviceActivity::default() };
            let f = GapFinder::build(std::slice::from_ref(&d));
            for min in mins.into_iter().chain([1, 5_000_000_000, Ns::MAX]) {
                let want: Vec<(Ns, Ns)> = d.busy.gaps(min).collect();
                prop_assert_eq!(f.gaps(&d, min), want, "min {}", min);
            }
        }
    }
}
