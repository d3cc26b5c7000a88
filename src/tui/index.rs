//! Render index, built once at load, so that a frame costs O(cells), whatever the
//! number of events.
//!
//! Per lane, every `BLOCK` events, it keeps the busy time (union measure) of the
//! events before the block and, for lanes whose events overlap, their latest end.
//! The busy time before any instant is then one row lookup plus at most `BLOCK`
//! steps. A sparse table over per-block longest events answers "the longest event
//! among rows `lo..hi`" (the name a cell shows) in O(1) plus two block scans.
//!
//! The row lookup ("how many events start before `t`") goes through a [`TimeDir`]:
//! the lane's time range cut into power-of-two buckets, about [`EVENTS_PER_BUCKET`]
//! events each, holding the first row of each bucket. A cell edge then costs one
//! table read and a search among the few rows of its bucket, instead of a binary
//! search over millions of rows that misses the cache at every step. It is exact:
//! cells are the same as with plain binary searches (tests compare the two).
//! Cost: about 2.5 bytes per event for the tables, 0.125 for the directory.
//! [`GapIndex`] finds the gap of a cell the same way.

use crate::model::{Events, Ns, Trace};

/// Events per block of the prefix tables.
const BLOCK: usize = 32;

/// Average rows per bucket of a [`TimeDir`].
pub(crate) const EVENTS_PER_BUCKET: usize = 32;

/// Columns shorter than this get no directory: a binary search over them stays in cache.
const MIN_DIR_ROWS: usize = 512;

/// Rows of a sorted time column by power-of-two time bucket: `first[k]` is the number
/// of values below `t0 + k << shift`. [`TimeDir::count_below`] is then exact and costs
/// one read plus a search among one bucket's values.
#[derive(Debug, Clone, Default)]
pub(crate) struct TimeDir {
    t0: Ns,
    shift: u32,
    first: Vec<u32>,
}

impl TimeDir {
    /// Directory over `v` (sorted ascending), with about `per_bucket` values per
    /// bucket; empty (plain binary search) for short columns.
    pub(crate) fn build(v: &[Ns], per_bucket: usize) -> Self {
        Self::build_from(v, per_bucket, MIN_DIR_ROWS)
    }

    /// The same, for columns of at least `min_rows` values.
    pub(crate) fn build_from(v: &[Ns], per_bucket: usize, min_rows: usize) -> Self {
        let n = v.len();
        if n == 0 || n < min_rows || n > u32::MAX as usize {
            return Self::default();
        }
        let (t0, last) = (v[0], v[n - 1]);
        let range = last.abs_diff(t0);
        let want = (n / per_bucket.max(1)).max(1) as u64;
        let mut shift = 0;
        while (range >> shift) + 1 > want {
            shift += 1;
        }
        let buckets = ((range >> shift) + 1) as usize;
        let mut first = Vec::with_capacity(buckets + 1);
        let mut i = 0;
        for k in 0..=buckets {
            // Values below the start of bucket k.
            let edge = i128::from(t0) + ((k as i128) << shift);
            while i < n && i128::from(v[i]) < edge {
                i += 1;
            }
            first.push(i as u32);
        }
        Self { t0, shift, first }
    }

    /// Number of values of `v` (the column it was built over) below `t`.
    #[inline]
    pub(crate) fn count_below(&self, v: &[Ns], t: Ns) -> usize {
        if self.first.is_empty() {
            return v.partition_point(|&s| s < t);
        }
        if t <= self.t0 {
            return 0;
        }
        let k = (t.abs_diff(self.t0) >> self.shift) as usize;
        if k + 1 >= self.first.len() {
            return v.len();
        }
        let (lo, hi) = (self.first[k] as usize, self.first[k + 1] as usize);
        lo + v[lo..hi].partition_point(|&s| s < t)
    }

    /// Heap bytes used.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.first.capacity() * 4
    }
}

/// What one timeline cell (a time bucket) of a lane holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct CellInfo {
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
    pub(crate) const NONE: u32 = u32::MAX;
    /// An empty cell.
    pub(crate) const EMPTY: Self = Self { busy: 0.0, any: false, dom: Self::NONE, matched: false };
}

/// Index of one lane.
#[derive(Debug, Clone, Default)]
pub(crate) struct LaneIndex {
    disjoint: bool,
    // cum[k]: union measure of events [0, k * BLOCK)
    cum: Vec<Ns>,
    // maxend[k]: latest end among events [0, k * BLOCK); overlapping lanes only
    maxend: Vec<Ns>,
    // sparse[l][k]: row of the longest event in blocks [k, k + 2^l)
    sparse: Vec<Vec<u32>>,
    // rows by start time
    dir: TimeDir,
}

// Index of the first largest of `durs` (0 when empty).
fn first_longest(durs: &[u32]) -> usize {
    let mut best = 0;
    for (i, &d) in durs.iter().enumerate() {
        if d > durs[best] {
            best = i;
        }
    }
    best
}

fn better(ev: &Events, a: u32, b: u32) -> u32 {
    if ev.dur(b as usize) > ev.dur(a as usize) { b } else { a }
}

impl LaneIndex {
    /// Build the index of a lane whose events are sorted by start.
    pub(crate) fn build(ev: &Events, disjoint: bool) -> Self {
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
        let dir = TimeDir::build(&ev.start, EVENTS_PER_BUCKET);
        Self { disjoint, cum, maxend, sparse, dir }
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
        let mut add = |start: Ns, end: Ns| {
            let s = start.max(m);
            if end > s {
                u += end - s;
            }
            m = m.max(end);
        };
        let lo = k * BLOCK;
        if let Some(durs) = ev.narrow_durs(lo, i) {
            for (&s, &d) in ev.start[lo..i].iter().zip(durs) {
                add(s, s.saturating_add(Ns::from(d)));
            }
        } else {
            (lo..i).for_each(|j| add(ev.start[j], ev.end(j)));
        }
        (u, m)
    }

    /// Busy time (union of events) strictly before `t`.
    #[cfg(test)]
    pub(crate) fn busy_before(&self, ev: &Events, t: Ns) -> Ns {
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
    #[cfg(test)]
    pub(crate) fn first_ending_after(&self, ev: &Events, a: Ns) -> usize {
        if self.disjoint {
            return ev.end_partition_point(|e| e <= a);
        }
        self.first_ending_after_near(ev, a, self.maxend.len() / 2)
    }

    // The same, searching the block table outward from block `hint`.
    fn first_ending_after_near(&self, ev: &Events, a: Ns, hint: usize) -> usize {
        let k = crate::analysis::intervals::partition_near(&self.maxend, hint, |&m| m <= a);
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
    pub(crate) fn longest(&self, ev: &Events, lo: usize, hi: usize) -> Option<usize> {
        if lo >= hi {
            return None;
        }
        let scan = |a: usize, b: usize| match ev.narrow_durs(a, b) {
            Some(durs) => (a + first_longest(durs)) as u32,
            None => (a..b).fold(a as u32, |best, j| better(ev, best, j as u32)),
        };
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

    /// Rebuild the time directory with about `per_bucket` rows per bucket, whatever the
    /// lane's length (tests use it to exercise the directory on small traces).
    #[cfg(test)]
    pub(crate) fn rebuild_dir(&mut self, ev: &Events, per_bucket: usize) {
        self.dir = TimeDir::build_from(&ev.start, per_bucket, 1);
    }

    /// Fill `out` with one [`CellInfo`] per bucket of `[t0, t0 + span)` split into `width` cells.
    /// `matches` are sorted rows of search matches in this lane.
    pub(crate) fn raster(
        &self,
        ev: &Events,
        t0: Ns,
        span: Ns,
        width: usize,
        matches: Option<&[u32]>,
        out: &mut Vec<CellInfo>,
    ) {
        let edges: Vec<Ns> = (0..=width).map(|k| bucket_edge(t0, span, width, k)).collect();
        self.raster_edges(ev, &edges, matches, out);
    }

    /// The same for the cells `[edges[k], edges[k + 1])` (edges ascending): a frame
    /// computes its edges once for every lane.
    pub(crate) fn raster_edges(&self, ev: &Events, edges: &[Ns], matches: Option<&[u32]>, out: &mut Vec<CellInfo>) {
        self.raster_with(&self.dir, ev, edges, matches, out);
    }

    /// [`LaneIndex::raster`] with plain binary searches over the whole lane instead of
    /// the time directory: what frames cost before it, and the reference tests compare with.
    #[cfg(test)]
    pub(crate) fn raster_searching(
        &self,
        ev: &Events,
        t0: Ns,
        span: Ns,
        width: usize,
        matches: Option<&[u32]>,
        out: &mut Vec<CellInfo>,
    ) {
        let edges: Vec<Ns> = (0..=width).map(|k| bucket_edge(t0, span, width, k)).collect();
        self.raster_with(&TimeDir::default(), ev, &edges, matches, out);
    }

    fn raster_with(&self, dir: &TimeDir, ev: &Events, edges: &[Ns], matches: Option<&[u32]>, out: &mut Vec<CellInfo>) {
        out.clear();
        let width = edges.len().saturating_sub(1);
        if width == 0 {
            return;
        }
        if ev.is_empty() {
            out.resize(width, CellInfo::EMPTY);
            return;
        }
        // Edge by edge in separate passes: the iterations of a pass are independent, so
        // the reads of different edges (cache misses on a large lane) overlap.
        let counts: Vec<usize> = edges.iter().map(|&t| dir.count_below(&ev.start, t)).collect();
        let busy: Vec<Ns> = edges.iter().zip(&counts).map(|(&t, &i)| self.busy_before_at(ev, t, i)).collect();
        // Per cell that holds anything: the first row that can touch it.
        let any = |k: usize| busy[k + 1] > busy[k] || counts[k + 1] > counts[k];
        let lo: Vec<usize> = (0..width)
            .map(|k| {
                let (a, ia) = (edges[k], counts[k]);
                if ia == 0 || !any(k) {
                    0
                } else if self.disjoint {
                    if ev.end(ia - 1) > a { ia - 1 } else { ia }
                } else {
                    self.first_ending_after_near(ev, a, ia / BLOCK).min(ia)
                }
            })
            .collect();
        // Where the last search in `matches` ended; cells go forward in time.
        let mut mp = 0;
        for k in 0..width {
            let (a, b, ib) = (edges[k], edges[k + 1], counts[k + 1]);
            let share = (busy[k + 1] - busy[k]) as f64 / (b - a).max(1) as f64;
            let mut cell = CellInfo { busy: share as f32, any: any(k), ..CellInfo::EMPTY };
            if cell.any {
                if let Some(d) = self.longest(ev, lo[k], ib) {
                    cell.dom = d as u32;
                }
                if let Some(m) = matches {
                    mp = crate::analysis::intervals::partition_near(m, mp, |&x| (x as usize) < lo[k]);
                    cell.matched = mp < m.len() && (m[mp] as usize) < ib;
                }
            }
            out.push(cell);
        }
    }

    /// Approximate heap bytes used.
    pub(crate) fn heap_bytes(&self) -> usize {
        (self.cum.capacity() + self.maxend.capacity()) * 8
            + self.sparse.iter().map(|v| v.capacity() * 4).sum::<usize>()
            + self.dir.heap_bytes()
    }

    /// Bytes of the time directory alone.
    pub(crate) fn dir_bytes(&self) -> usize {
        self.dir.heap_bytes()
    }
}

/// Left edge of bucket `k` when `[t0, t0 + span)` is cut into `width` cells (exact
/// tiling; saturating at the limits of [`Ns`]).
pub(crate) fn bucket_edge(t0: Ns, span: Ns, width: usize, k: usize) -> Ns {
    let t = i128::from(t0) + i128::from(span) * k as i128 / width.max(1) as i128;
    t.clamp(i128::from(Ns::MIN), i128::from(Ns::MAX)) as Ns
}

/// A busy [`Union`](crate::analysis::Union) with a [`TimeDir`] over its blocks: busy
/// time before a cell edge is a table read and a block scan.
#[derive(Debug, Clone, Default)]
pub(crate) struct UnionDir {
    dir: TimeDir,
}

impl UnionDir {
    /// Directory over the blocks of `u`.
    pub(crate) fn build(u: &crate::analysis::Union) -> Self {
        // A block holds 32 intervals: one block per bucket on average.
        Self { dir: TimeDir::build(u.block_starts(), 1) }
    }

    /// `u.busy_in(a, b)` of each cell `[a, b)` = `[edges[k], edges[k + 1])` (edges
    /// ascending, `u` the union this was built over): the busy time before each edge is
    /// found once, in one pass over the edges.
    pub(crate) fn busy_cells(&self, u: &crate::analysis::Union, edges: &[Ns]) -> Vec<Ns> {
        let before: Vec<Ns> =
            edges.iter().map(|&t| u.busy_before_block(t, self.dir.count_below(u.block_starts(), t))).collect();
        before.windows(2).map(|w| (w[1] - w[0]).max(0)).collect()
    }

    /// Heap bytes used.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.dir.heap_bytes()
    }
}

/// Render index of a whole trace: one [`LaneIndex`] per lane.
#[derive(Debug, Clone, Default)]
pub(crate) struct Index {
    /// Per lane, in [`Trace::lanes`] order.
    pub lanes: Vec<LaneIndex>,
}

impl Index {
    /// Build the index of every lane.
    pub(crate) fn build(trace: &Trace) -> Self {
        Self { lanes: trace.lanes.iter().map(|l| LaneIndex::build(&l.ev, l.disjoint)).collect() }
    }

    /// Approximate heap bytes used.
    pub(crate) fn heap_bytes(&self) -> usize {
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

    // Union measure of the events clipped to (-inf, t), by merging (rows are sorted by start).
    fn union_before(ev: &Events, t: Ns) -> Ns {
        let (mut total, mut cur): (Ns, Option<(Ns, Ns)>) = (0, None);
        for i in 0..ev.len() {
            let (s, e) = (ev.start[i], ev.end(i).min(t));
            if s >= e {
                continue;
            }
            cur = match cur {
                Some((cs, ce)) if s <= ce => Some((cs, ce.max(e))),
                Some((cs, ce)) => {
                    total += ce - cs;
                    Some((s, e))
                }
                None => Some((s, e)),
            };
        }
        total + cur.map_or(0, |(s, e)| e - s)
    }

    // Cells computed the slow way: per cell, every event looked at (the definition the
    // render index must reproduce exactly).
    fn brute_cells(ev: &Events, t0: Ns, span: Ns, w: usize, matches: Option<&[u32]>) -> Vec<CellInfo> {
        (0..w)
            .map(|k| {
                let (a, b) = (bucket_edge(t0, span, w, k), bucket_edge(t0, span, w, k + 1));
                if ev.is_empty() {
                    return CellInfo::EMPTY;
                }
                let ia = ev.start.partition_point(|&s| s < a);
                let ib = ev.start.partition_point(|&s| s < b).max(ia);
                let busy = union_before(ev, b.max(a)) - union_before(ev, a);
                let any = busy > 0 || ib > ia;
                let mut c = CellInfo { busy: (busy as f64 / (b - a).max(1) as f64) as f32, any, ..CellInfo::EMPTY };
                if any {
                    let lo = (0..ev.len()).find(|&i| ev.end(i) > a).unwrap_or(ev.len()).min(ia);
                    let dom = (lo..ib).fold(None, |best: Option<usize>, j| match best {
                        Some(x) if ev.dur(x) >= ev.dur(j) => Some(x),
                        _ => Some(j),
                    });
                    c.dom = dom.map_or(CellInfo::NONE, |d| d as u32);
                    c.matched = matches.is_some_and(|m| m.iter().any(|&r| (lo..ib).contains(&(r as usize))));
                }
                c
            })
            .collect()
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
        fn time_directory_counts_like_a_binary_search(
            mut v in prop::collection::vec(-1000i64..1000, 0..400),
            per in 1usize..40,
            probes in prop::collection::vec(-1100i64..1100, 1..40),
        ) {
            v.sort_unstable();
            let dir = TimeDir::build_from(&v, per, 1);
            for t in probes.into_iter().chain([Ns::MIN, Ns::MAX, Ns::MIN + 1, Ns::MAX - 1]) {
                prop_assert_eq!(dir.count_below(&v, t), v.partition_point(|&s| s < t), "t = {}", t);
            }
        }

        #[test]
        fn directory_cells_equal_brute_force_cells(
            p in prop::collection::vec((0i64..4000, 0i64..300), 0..400),
            t0 in -200i64..4000,
            span in 1i64..5000,
            w in 1usize..120,
            per in 1usize..20,
            every in 1usize..8,
        ) {
            let ev = events(&p);
            let disjoint = (1..ev.len()).all(|i| ev.end(i - 1) <= ev.start[i]);
            let matches: Vec<u32> = (0..ev.len() as u32).filter(|i| (*i as usize).is_multiple_of(every)).collect();
            for d in [disjoint, false] {
                let mut idx = LaneIndex::build(&ev, d);
                idx.rebuild_dir(&ev, per);
                let mut fast = Vec::new();
                idx.raster(&ev, t0, span, w, Some(&matches), &mut fast);
                prop_assert_eq!(&fast, &brute_cells(&ev, t0, span, w, Some(&matches)));
                let mut slow = Vec::new();
                idx.raster_searching(&ev, t0, span, w, Some(&matches), &mut slow);
                prop_assert_eq!(&fast, &slow);
            }
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
