//! Render index, built once at load, so that a frame costs O(cells x log events).
//!
//! Per lane, every `BLOCK` events, it keeps the busy time (union measure) of the
//! events before the block and, for lanes whose events overlap, their latest end.
//! The busy time before any instant is then one binary search plus at most
//! `BLOCK` steps. A sparse table over per-block longest events answers "the longest
//! event among rows `lo..hi`" (the name a cell shows) in O(1) plus two block scans.
//! Cost: about 2.5 bytes per event. [`GapIndex`] finds the gap of a cell the same way.

use crate::model::{Events, Ns, Trace};

/// Events per block of the prefix tables.
const BLOCK: usize = 32;

/// What one timeline cell (a time bucket) of a lane holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CellInfo {
    /// Share of the bucket covered by events, in `[0, 1]`.
    pub busy: f32,
    /// True when any event touches the bucket (instants and tiny events included).
    pub any: bool,
    /// Row of the longest event touching the bucket, `NONE` when empty.
    pub dom: u32,
    /// True when a search match touches the bucket.
    pub matched: bool,
}

impl CellInfo {
    /// Marker for "no event".
    pub const NONE: u32 = u32::MAX;
    /// An empty cell.
    pub const EMPTY: Self = Self { busy: 0.0, any: false, dom: Self::NONE, matched: false };
}

/// Index of one lane.
#[derive(Debug, Clone, Default)]
pub struct LaneIndex {
    disjoint: bool,
    // cum[k]: union measure of events [0, k * BLOCK)
    cum: Vec<Ns>,
    // maxend[k]: latest end among events [0, k * BLOCK); overlapping lanes only
    maxend: Vec<Ns>,
    // sparse[l][k]: row of the longest event in blocks [k, k + 2^l)
    sparse: Vec<Vec<u32>>,
}

fn better(ev: &Events, a: u32, b: u32) -> u32 {
    if ev.dur(b as usize) > ev.dur(a as usize) { b } else { a }
}

impl LaneIndex {
    /// Build the index of a lane whose events are sorted by start.
    pub fn build(ev: &Events, disjoint: bool) -> Self {
        let n = ev.len();
        let nb = n.div_ceil(BLOCK);
        let mut cum = Vec::with_capacity(nb + 1);
        let mut maxend = Vec::with_capacity(if disjoint { 0 } else { nb + 1 });
        let mut level0 = Vec::with_capacity(nb);
        let (mut u, mut m) = (0, Ns::MIN);
        for b in 0..nb {
            cum.push(u);
            if !disjoint {
                maxend.push(m);
            }
            let lo = b * BLOCK;
            let mut best = lo as u32;
            for j in lo..(lo + BLOCK).min(n) {
                let s = ev.start[j].max(m);
                if ev.end(j) > s {
                    u += ev.end(j) - s;
                }
                m = m.max(ev.end(j));
                best = better(ev, best, j as u32);
            }
            level0.push(best);
        }
        cum.push(u);
        if !disjoint {
            maxend.push(m);
        }
        let mut sparse = vec![level0];
        let mut w = 1;
        while 2 * w <= nb {
            let prev = &sparse[sparse.len() - 1];
            let next: Vec<u32> = (0..=nb - 2 * w).map(|k| better(ev, prev[k], prev[k + w])).collect();
            sparse.push(next);
            w *= 2;
        }
        Self { disjoint, cum, maxend, sparse }
    }

    /// Union measure and latest end of events `[0, i)`.
    fn prefix(&self, ev: &Events, i: usize) -> (Ns, Ns) {
        let k = i / BLOCK;
        let mut u = self.cum[k];
        let mut m = if !self.disjoint {
            self.maxend[k]
        } else if k == 0 {
            Ns::MIN
        } else {
            ev.end(k * BLOCK - 1)
        };
        for j in k * BLOCK..i {
            let s = ev.start[j].max(m);
            if ev.end(j) > s {
                u += ev.end(j) - s;
            }
            m = m.max(ev.end(j));
        }
        (u, m)
    }

    /// Busy time (union of events) strictly before `t`.
    #[cfg(test)]
    pub fn busy_before(&self, ev: &Events, t: Ns) -> Ns {
        let i = ev.start.partition_point(|&s| s < t);
        self.busy_before_at(ev, t, i)
    }

    // `i` = number of events starting before `t`.
    fn busy_before_at(&self, ev: &Events, t: Ns, i: usize) -> Ns {
        if i == 0 {
            return 0;
        }
        let (u, m) = self.prefix(ev, i);
        u - (m.saturating_sub(t)).max(0)
    }

    /// First row whose event ends after `a`.
    pub fn first_ending_after(&self, ev: &Events, a: Ns) -> usize {
        if self.disjoint {
            return ev.end_partition_point(|e| e <= a);
        }
        let k = self.maxend.partition_point(|&m| m <= a);
        if k >= self.maxend.len() {
            return ev.len();
        }
        let mut j = (k - 1) * BLOCK;
        while j < ev.len() && ev.end(j) <= a {
            j += 1;
        }
        j
    }

    /// Row of the longest event among rows `lo..hi` (the earliest on ties).
    pub fn longest(&self, ev: &Events, lo: usize, hi: usize) -> Option<usize> {
        if lo >= hi {
            return None;
        }
        let scan = |a: usize, b: usize| (a..b).fold(a as u32, |best, j| better(ev, best, j as u32));
        let (bl, bh) = (lo / BLOCK, (hi - 1) / BLOCK);
        if bh <= bl + 1 {
            return Some(scan(lo, hi) as usize);
        }
        let head = scan(lo, (bl + 1) * BLOCK);
        let (l, r) = (bl + 1, bh);
        let level = (usize::BITS - 1 - (r - l).leading_zeros()) as usize;
        let mid = better(ev, self.sparse[level][l], self.sparse[level][r - (1 << level)]);
        let tail = scan(bh * BLOCK, hi);
        Some(better(ev, better(ev, head, mid), tail) as usize)
    }

    /// Fill `out` with one [`CellInfo`] per bucket of `[t0, t0 + span)` split into `width` cells.
    /// `matches` are sorted rows of search matches in this lane.
    pub fn raster(
        &self,
        ev: &Events,
        t0: Ns,
        span: Ns,
        width: usize,
        matches: Option<&[u32]>,
        out: &mut Vec<CellInfo>,
    ) {
        out.clear();
        if width == 0 {
            return;
        }
        if ev.is_empty() {
            out.resize(width, CellInfo::EMPTY);
            return;
        }
        let mut a = t0;
        let mut ia = ev.start.partition_point(|&s| s < a);
        let mut busy_a = self.busy_before_at(ev, a, ia);
        for k in 0..width {
            let b = bucket_edge(t0, span, width, k + 1);
            let ib = ia + ev.start[ia..].partition_point(|&s| s < b);
            let busy_b = self.busy_before_at(ev, b, ib);
            let busy = busy_b - busy_a;
            let any = busy > 0 || ib > ia;
            let mut cell = CellInfo { busy: (busy as f64 / (b - a).max(1) as f64) as f32, any, ..CellInfo::EMPTY };
            if any {
                let lo = if ia == 0 {
                    0
                } else if self.disjoint {
                    if ev.end(ia - 1) > a { ia - 1 } else { ia }
                } else {
                    self.first_ending_after(ev, a).min(ia)
                };
                if let Some(d) = self.longest(ev, lo, ib) {
                    cell.dom = d as u32;
                }
                if let Some(m) = matches {
                    let p = m.partition_point(|&x| (x as usize) < lo);
                    cell.matched = p < m.len() && (m[p] as usize) < ib;
                }
            }
            out.push(cell);
            (a, ia, busy_a) = (b, ib, busy_b);
        }
    }

    /// Approximate heap bytes used.
    pub fn heap_bytes(&self) -> usize {
        (self.cum.capacity() + self.maxend.capacity()) * 8 + self.sparse.iter().map(|v| v.capacity() * 4).sum::<usize>()
    }
}

/// Left edge of bucket `k` when `[t0, t0 + span)` is cut into `width` cells (exact
/// tiling; saturating at the limits of [`Ns`]).
pub fn bucket_edge(t0: Ns, span: Ns, width: usize, k: usize) -> Ns {
    let t = i128::from(t0) + i128::from(span) * k as i128 / width.max(1) as i128;
    t.clamp(i128::from(Ns::MIN), i128::from(Ns::MAX)) as Ns
}

/// Render index of a whole trace: one [`LaneIndex`] per lane.
#[derive(Debug, Clone, Default)]
pub struct Index {
    /// Per lane, in [`Trace::lanes`] order.
    pub lanes: Vec<LaneIndex>,
}

impl Index {
    /// Build the index of every lane.
    pub fn build(trace: &Trace) -> Self {
        Self { lanes: trace.lanes.iter().map(|l| LaneIndex::build(&l.ev, l.disjoint)).collect() }
    }

    /// Approximate heap bytes used.
    pub fn heap_bytes(&self) -> usize {
        self.lanes.iter().map(LaneIndex::heap_bytes).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn events(pairs: &[(Ns, Ns)]) -> Events {
        let mut e = Events::default();
        for &(s, d) in pairs {
            e.push(s, s + d, 0, None, None, None);
        }
        e.sort_by_start();
        e
    }

    fn brute_busy(ev: &Events, t: Ns) -> Ns {
        let lo = ev.start.iter().copied().min().unwrap_or(0);
        (lo..t).filter(|&x| (0..ev.len()).any(|i| ev.start[i] <= x && x < ev.end(i))).count() as Ns
    }

    fn arb() -> impl Strategy<Value = Vec<(Ns, Ns)>> {
        prop::collection::vec((0i64..400, 0i64..30), 0..120)
    }

    proptest! {
        #[test]
        fn busy_before_matches_brute_force(p in arb(), t in -5i64..450) {
            let ev = events(&p);
            let disjoint = (1..ev.len()).all(|i| ev.end(i - 1) <= ev.start[i]);
            let idx = LaneIndex::build(&ev, disjoint);
            prop_assert_eq!(idx.busy_before(&ev, t), brute_busy(&ev, t));
            let slow = LaneIndex::build(&ev, false);
            prop_assert_eq!(slow.busy_before(&ev, t), brute_busy(&ev, t));
        }

        #[test]
        fn longest_matches_brute_force(p in arb(), lo in 0usize..130, len in 0usize..130) {
            let ev = events(&p);
            let idx = LaneIndex::build(&ev, false);
            let hi = (lo + len).min(ev.len());
            let brute = (lo..hi).fold(None, |best: Option<usize>, j| match best {
                Some(b) if ev.dur(b) >= ev.dur(j) => Some(b),
                _ => Some(j),
            });
            prop_assert_eq!(idx.longest(&ev, lo, hi), brute);
        }

        #[test]
        fn first_ending_after_matches_brute_force(p in arb(), a in -5i64..450) {
            let ev = events(&p);
            let idx = LaneIndex::build(&ev, false);
            let brute = (0..ev.len()).find(|&i| ev.end(i) > a).unwrap_or(ev.len());
            prop_assert_eq!(idx.first_ending_after(&ev, a), brute);
        }

        #[test]
        fn cells_tile_the_view_and_nothing_vanishes(p in arb(), t0 in -20i64..200, span in 1i64..600, w in 1usize..90) {
            let ev = events(&p);
            let span = span.max(w as i64);
            let idx = LaneIndex::build(&ev, false);
            let mut cells = Vec::new();
            idx.raster(&ev, t0, span, w, None, &mut cells);
            prop_assert_eq!(cells.len(), w);
            let total: f64 = (0..w).map(|k| {
                f64::from(cells[k].busy) * (bucket_edge(t0, span, w, k + 1) - bucket_edge(t0, span, w, k)) as f64
            }).sum();
            let exact = (brute_busy(&ev, t0 + span) - brute_busy(&ev, t0)) as f64;
            prop_assert!((total - exact).abs() < 1e-3 * exact.max(1.0) + 1e-2);
            for (k, c) in cells.iter().enumerate() {
                let (a, b) = (bucket_edge(t0, span, w, k), bucket_edge(t0, span, w, k + 1));
                // Overlaps the bucket, or is an instant inside it.
                let touched = (0..ev.len()).any(|i| ev.start[i] < b && (ev.end(i) > a || ev.start[i] >= a));
                prop_assert_eq!(c.any, touched, "cell {}", k);
                if touched {
                    let d = c.dom as usize;
                    prop_assert!(ev.end(d) > a || ev.start[d] >= a, "dominant event touches the cell");
                }
            }
        }
    }
}

/// Gaps by device, for the per-cell "is there a gap here" test, and by duration.
#[derive(Debug, Clone, Default)]
pub struct GapIndex {
    /// Per device: (device, gap ids sorted by start).
    pub by_device: Vec<(u32, Vec<u32>)>,
    /// Gap ids, longest first.
    pub by_dur: Vec<u32>,
}

impl GapIndex {
    /// Index `gaps` (sorted by start).
    pub fn new(gaps: &[crate::analysis::Gap]) -> Self {
        let mut by_device: Vec<(u32, Vec<u32>)> = Vec::new();
        for (i, g) in gaps.iter().enumerate() {
            match by_device.iter_mut().find(|(d, _)| *d == g.device) {
                Some((_, v)) => v.push(i as u32),
                None => by_device.push((g.device, vec![i as u32])),
            }
        }
        let mut by_dur: Vec<u32> = (0..gaps.len() as u32).collect();
        by_dur.sort_by_key(|&i| (std::cmp::Reverse(gaps[i as usize].dur()), gaps[i as usize].start));
        Self { by_device, by_dur }
    }

    /// The gap of `device` that overlaps `[a, b)`, if any (the first one).
    pub fn overlapping(&self, gaps: &[crate::analysis::Gap], device: u32, a: Ns, b: Ns) -> Option<u32> {
        let (_, ids) = self.by_device.iter().find(|(d, _)| *d == device)?;
        let p = ids.partition_point(|&i| gaps[i as usize].end <= a);
        ids.get(p).copied().filter(|&i| gaps[i as usize].start < b)
    }
}
