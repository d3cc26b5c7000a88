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
//!   The known gaps hold every gap of at least the lowest threshold computed so far
//!   (the floor): a threshold at or above it takes its gaps from them (a merge of two
//!   sorted runs); only a lower one reads the busy unions through the [`GapFinder`].
//!
//! The result equals [`super::find_gaps_with`] at the new threshold, with windows set
//! (tests compare the two), at the cost of the gaps that are new or changed.

use std::sync::Arc;

use itertools::Either;

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
}

/// The stream a gap comes from when [`apply`] builds the new lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum From {
    /// The current gaps.
    Current,
    /// The stash (gaps explained before, not at the current threshold).
    Stash,
    /// Explained by this plan.
    Fresh,
}

/// Where a current or stashed gap goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dest {
    /// Into the new gaps.
    Keep,
    /// Into the new stash.
    Stash,
    /// Away: a fresh gap replaces it.
    Drop,
}

/// The gaps at a new threshold, as moves over the current gaps and the stash (both
/// sorted by (start, device), as the analysis keeps gaps) plus the gaps explained now.
#[derive(Debug, Default)]
pub struct Plan {
    /// Stream of each new gap, in order.
    pub new_order: Vec<From>,
    /// Stream of each gap of the new stash, in order.
    pub stash_order: Vec<From>,
    /// Per current gap, and per stashed gap: where it goes.
    pub current_dest: Vec<Dest>,
    /// Same for the stash.
    pub stash_dest: Vec<Dest>,
    /// Gaps explained now, in order.
    pub fresh: Vec<Gap>,
    /// (device, start, end) per new gap.
    pub spans: Vec<(u32, Ns, Ns)>,
    /// [`Known`] of the new gaps then of the new stash: the next plan's input.
    pub known: Vec<Known>,
    /// Number of new gaps (the first `current` of `known`).
    pub current: usize,
    /// `known` holds every gap of at least this.
    pub floor: Ns,
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

// The gap windows of every GPU at `min`, merged in (start, device) order, each with
// the start of the busy stretch before it.
fn windows(inp: &Inputs, min: Ns) -> Vec<(Ns, u32, Ns, Ns)> {
    let per: Vec<Vec<(Ns, Ns)>> = inp.devices.iter().map(|d| inp.finder.gaps(d, min)).collect();
    let mut cursor = vec![0usize; per.len()];
    let mut stretch: Vec<Ns> = inp.devices.iter().map(|d| d.extent().map_or(0, |e| e.0)).collect();
    let mut out = Vec::with_capacity(per.iter().map(Vec::len).sum());
    loop {
        let next = (0..per.len())
            .filter(|&k| cursor[k] < per[k].len())
            .min_by_key(|&k| (per[k][cursor[k]].0, inp.devices[k].device));
        let Some(k) = next else { return out };
        let (start, end) = per[k][cursor[k]];
        out.push((start, inp.devices[k].device, end, stretch[k]));
        stretch[k] = end;
        cursor[k] += 1;
    }
}

// The same from the known gaps, when they hold every gap of at least `min`: a merge of
// the two sorted runs, nothing decoded.
fn windows_from_known(inp: &Inputs, cur: &[Known], st: &[Known], min: Ns) -> Vec<(Ns, u32, Ns, Ns)> {
    let mut stretch: Vec<(u32, Ns)> = inp.devices.iter().map(|d| (d.device, d.extent().map_or(0, |e| e.0))).collect();
    let key = |k: &Known| (k.start, k.device);
    let (mut a, mut b) = (cur.iter().peekable(), st.iter().peekable());
    let mut out = Vec::new();
    loop {
        let k = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if key(x) <= key(y) => a.next(),
            (Some(_) | None, Some(_)) => b.next(),
            (Some(_), None) => a.next(),
            (None, None) => return out,
        };
        let Some(k) = k.filter(|k| k.end - k.start >= min.max(1)) else { continue };
        let s = match stretch.iter_mut().find(|(d, _)| *d == k.device) {
            Some((_, e)) => std::mem::replace(e, k.end),
            None => 0,
        };
        out.push((k.start, k.device, k.end, s));
    }
}

/// Plan the gaps at `inp.options.min_gap_ns`. `known` describes the current gaps (its
/// first `current` entries) then the stash, each run sorted by (start, device), and
/// holds every gap of at least `floor`: a threshold at or above it is planned from
/// them alone, a lower one from the busy unions ([`GapFinder`]).
pub fn plan(inp: &Inputs, known: &[Known], current: usize, floor: Ns) -> Plan {
    let trace = &*inp.trace;
    let (cur, st) = known.split_at(current.min(known.len()));
    let key = |k: &Known| (k.start, k.device);
    let min = inp.options.min_gap_ns;
    let (windows, floor) =
        if min >= floor { (windows_from_known(inp, cur, st, min), floor) } else { (windows(inp, min), min) };
    let mut p = Plan {
        current_dest: vec![Dest::Stash; cur.len()],
        stash_dest: vec![Dest::Stash; st.len()],
        floor,
        ..Plan::default()
    };
    // Made on the first gap to explain: it costs a pass over the overlapping CPU lanes.
    let mut explainer: Option<Explainer> = None;
    let mut fallback: Vec<(u32, u32)> = Vec::new();
    let (mut i, mut j) = (0, 0);
    for (start, device, end, stretch) in windows {
        while i < cur.len() && key(&cur[i]) < (start, device) {
            i += 1;
        }
        while j < st.len() && key(&st[j]) < (start, device) {
            j += 1;
        }
        // A gap's start fixes its end (the next busy interval); `end` is checked anyway.
        let hit = if i < cur.len() && key(&cur[i]) == (start, device) && cur[i].end == end {
            Some((From::Current, i, cur[i]))
        } else if j < st.len() && key(&st[j]) == (start, device) && st[j].end == end {
            Some((From::Stash, j, st[j]))
        } else {
            None
        };
        let reusable = hit.filter(|(_, _, k)| !k.queued || k.stretch_start == Some(stretch));
        if let Some((from, at, k)) = reusable {
            match from {
                From::Current => p.current_dest[at] = Dest::Keep,
                _ => p.stash_dest[at] = Dest::Keep,
            }
            p.new_order.push(from);
            p.known.push(k);
        } else {
            if let Some((from, at, _)) = hit {
                match from {
                    From::Current => p.current_dest[at] = Dest::Drop,
                    _ => p.stash_dest[at] = Dest::Drop,
                }
            }
            let ex = explainer.get_or_insert_with(|| Explainer::new(trace, &inp.lookups, &inp.devices, &inp.options));
            let pid = if let Some(&(_, pid)) = fallback.iter().find(|(d, _)| *d == device) {
                pid
            } else {
                let pid = ex.fallback_pid(device);
                fallback.push((device, pid));
                pid
            };
            let mut g = ex.explain_window(device, pid, (start, end), stretch);
            g.window = inp.windows.of(g.start, g.end);
            p.new_order.push(From::Fresh);
            p.fresh.push(g);
            // `queued` is set after rule 6 below.
            p.known.push(Known { device, start, end, queued: false, stretch_start: Some(stretch) });
        }
        p.spans.push((device, start, end));
    }
    p.explained = p.fresh.len();
    host_cause::refine(trace, &inp.host, &mut p.fresh);
    let mut fresh = p.fresh.iter();
    for (k, from) in p.known.iter_mut().zip(&p.new_order) {
        if *from == From::Fresh
            && let Some(g) = fresh.next()
        {
            k.queued = g.cause == Cause::Queued;
        }
    }
    p.current = p.known.len();
    // The new stash: what was neither kept nor dropped, merged in (start, device) order.
    let left_cur = cur.iter().zip(&p.current_dest).filter(|(_, d)| **d == Dest::Stash).map(|(k, _)| *k);
    let left_st = st.iter().zip(&p.stash_dest).filter(|(_, d)| **d == Dest::Stash).map(|(k, _)| *k);
    let (mut a, mut b) = (left_cur.peekable(), left_st.peekable());
    loop {
        let from = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) if key(x) <= key(y) => From::Current,
            (Some(_) | None, Some(_)) => From::Stash,
            (Some(_), None) => From::Current,
            (None, None) => break,
        };
        let k = if from == From::Current { a.next() } else { b.next() };
        p.known.extend(k);
        p.stash_order.push(from);
    }
    p
}

/// The new gaps and the new stash in length order (longest first, then by start, then
/// by position), from the same orders of the current gaps and the stash, without
/// sorting again: kept gaps keep their relative order, so this is a merge of the
/// filtered old orders (and of the fresh gaps, sorted).
pub fn by_length(plan: &Plan, current_by_len: &[u32], stash_by_len: &[u32]) -> (Vec<u32>, Vec<u32>) {
    const NONE: u32 = u32::MAX;
    fn at(dest: &[Dest], want: Dest) -> impl Iterator<Item = usize> + '_ {
        dest.iter().enumerate().filter(move |&(_, d)| *d == want).map(|(i, _)| i)
    }
    // Position of each current and stashed gap in the new gaps, and in the new stash.
    let (mut cur_new, mut st_new) = (vec![NONE; plan.current_dest.len()], vec![NONE; plan.stash_dest.len()]);
    let (mut cur_st, mut st_st) = (vec![NONE; plan.current_dest.len()], vec![NONE; plan.stash_dest.len()]);
    let (mut ck, mut sk) = (at(&plan.current_dest, Dest::Keep), at(&plan.stash_dest, Dest::Keep));
    let mut fresh = Vec::new();
    for (id, from) in plan.new_order.iter().enumerate() {
        let id = id as u32;
        match from {
            From::Current => ck.next().into_iter().for_each(|i| cur_new[i] = id),
            From::Stash => sk.next().into_iter().for_each(|i| st_new[i] = id),
            From::Fresh => fresh.push(id),
        }
    }
    let (mut cs, mut ss) = (at(&plan.current_dest, Dest::Stash), at(&plan.stash_dest, Dest::Stash));
    for (id, from) in plan.stash_order.iter().enumerate() {
        let id = id as u32;
        match from {
            From::Current => cs.next().into_iter().for_each(|i| cur_st[i] = id),
            _ => ss.next().into_iter().for_each(|i| st_st[i] = id),
        }
    }
    let key = |base: usize| {
        move |id: &u32| {
            let k = &plan.known[base + *id as usize];
            (std::cmp::Reverse(k.end - k.start), k.start, *id)
        }
    };
    let (knew, kst) = (key(0), key(plan.current));
    fresh.sort_unstable_by_key(&knew);
    let remap = |order: &[u32], to: &[u32]| -> Vec<u32> {
        order.iter().map(|&i| to.get(i as usize).copied().unwrap_or(NONE)).filter(|&x| x != NONE).collect()
    };
    let (a, b) = (remap(current_by_len, &cur_new), remap(stash_by_len, &st_new));
    let kept: Vec<u32> = itertools::merge_join_by(a, b, |x, y| knew(x) <= knew(y)).map(Either::into_inner).collect();
    let new = itertools::merge_join_by(kept, fresh, |x, y| knew(x) <= knew(y)).map(Either::into_inner).collect();
    let (a, b) = (remap(current_by_len, &cur_st), remap(stash_by_len, &st_st));
    let stash = itertools::merge_join_by(a, b, |x, y| kst(x) <= kst(y)).map(Either::into_inner).collect();
    (new, stash)
}

/// Carry out `plan` over the current gaps and the stash it was made for: the new gaps
/// and the new stash. Every gap is moved once or twice, never cloned.
pub fn apply(plan: Plan, current: Vec<Gap>, stash: Vec<Gap>) -> (Vec<Gap>, Vec<Gap>) {
    use std::collections::VecDeque;
    // Next gap of a stream bound for the new list; those bound for the stash are set
    // aside on the way, dropped ones dropped.
    fn next_kept(it: &mut impl Iterator<Item = (Gap, Dest)>, aside: &mut VecDeque<Gap>) -> Option<Gap> {
        for (g, d) in it.by_ref() {
            match d {
                Dest::Keep => return Some(g),
                Dest::Stash => aside.push_back(g),
                Dest::Drop => {}
            }
        }
        None
    }
    // A higher threshold from the gaps at hand: the new gaps are some of the current
    // ones, in place (no new buffer to fault in), the others go to the stash.
    if plan.fresh.is_empty() && plan.new_order.iter().all(|&f| f == From::Current) {
        let mut current = current;
        let dest = plan.current_dest;
        let mut i = 0;
        let out: Vec<Gap> = current
            .extract_if(.., |_| {
                i += 1;
                dest.get(i - 1) != Some(&Dest::Keep)
            })
            .collect();
        let rest = if stash.is_empty() {
            out
        } else {
            let (mut a, mut b) = (out.into_iter(), stash.into_iter());
            plan.stash_order.iter().filter_map(|&f| if f == From::Current { a.next() } else { b.next() }).collect()
        };
        return (current, rest);
    }
    // A lower threshold back over gaps seen before: every current gap stays, some of the
    // stash joins them. Merged from the back into the current buffer (grown in place),
    // so only the added gaps touch new memory.
    if plan.fresh.is_empty()
        && plan.current_dest.iter().all(|&d| d == Dest::Keep)
        && plan.stash_dest.iter().all(|&d| d != Dest::Drop)
    {
        let (mut gaps, mut stash) = (current, stash);
        let dest = plan.stash_dest;
        let mut j = 0;
        let joining: Vec<Gap> = stash
            .extract_if(.., |_| {
                j += 1;
                dest.get(j - 1) == Some(&Dest::Keep)
            })
            .collect();
        let mut i = gaps.len();
        // Default gaps own nothing: slots about to be overwritten.
        gaps.resize_with(gaps.len() + joining.len(), Gap::default);
        let mut joining = joining.into_iter().rev();
        for (w, from) in plan.new_order.iter().enumerate().rev() {
            if *from == From::Current {
                // Slots above `i` hold placeholders or gaps already moved up.
                i -= 1;
                gaps.swap(i, w);
            } else if let Some(g) = joining.next() {
                gaps[w] = g;
            }
        }
        return (gaps, stash);
    }
    let mut cur = current.into_iter().zip(plan.current_dest);
    let mut st = stash.into_iter().zip(plan.stash_dest);
    let mut fresh = plan.fresh.into_iter();
    let (mut cur_aside, mut st_aside) = (VecDeque::new(), VecDeque::new());
    let mut gaps = Vec::with_capacity(plan.new_order.len());
    for from in plan.new_order {
        let g = match from {
            From::Current => next_kept(&mut cur, &mut cur_aside),
            From::Stash => next_kept(&mut st, &mut st_aside),
            From::Fresh => fresh.next(),
        };
        gaps.extend(g);
    }
    while next_kept(&mut cur, &mut cur_aside).is_some() {}
    while next_kept(&mut st, &mut st_aside).is_some() {}
    let mut rest = Vec::with_capacity(plan.stash_order.len());
    for from in plan.stash_order {
        let g = if from == From::Current { cur_aside.pop_front() } else { st_aside.pop_front() };
        rest.extend(g);
    }
    (gaps, rest)
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
