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

use std::io::{self, Write};

use anyhow::{Result, bail};

use super::pyramid::Pyramid;
use crate::model::{Events, Ns, Trace};
use crate::reader::cache::{Dec, Enc, Field};

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

    /// Whether a directory read back from the cache can serve the column `v`: each
    /// bucket a range of its rows, so that no lookup can leave the column.
    fn check(&self, v: &[Ns]) -> Result<()> {
        if self.first.is_empty() {
            return Ok(());
        }
        let ordered = self.first.windows(2).all(|w| w[0] <= w[1]);
        if self.shift >= Ns::BITS || !ordered || self.first.last().is_some_and(|&l| l as usize > v.len()) {
            bail!("a time directory that does not fit its column");
        }
        Ok(())
    }
}

impl Field for TimeDir {
    fn put<W: Write>(&self, w: &mut Enc<W>) -> io::Result<()> {
        self.t0.put(w)?;
        self.shift.put(w)?;
        w.col(&self.first)
    }
    fn take(r: &mut Dec<'_>) -> Result<Self> {
        Ok(Self { t0: i64::take(r)?, shift: u32::take(r)?, first: r.col()? })
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
    pub(crate) const NONE: u32 = super::pyramid::NONE;
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
    // per-bucket summaries for wide aligned cells; large lanes only
    pyramid: Option<Pyramid>,
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
        let mut index = Self { disjoint, cum, maxend, sparse, dir, pyramid: None };
        index.pyramid = Pyramid::build(ev, |edges| index.level_cells(ev, edges));
        index
    }

    // The cells of a pyramid's finest level: one pass over the events when they do not
    // overlap, else the exact raster.
    fn level_cells(&self, ev: &Events, edges: &[Ns]) -> (Vec<u64>, Vec<u32>) {
        if self.disjoint { super::pyramid::disjoint_cells(ev, edges) } else { self.exact_cells(ev, edges) }
    }

    /// Rebuild the pyramid with about `per_bucket` events per finest bucket, whatever the
    /// lane's length (tests use it on small lanes).
    #[cfg(test)]
    pub(crate) fn rebuild_pyramid(&mut self, ev: &Events, per_bucket: usize) {
        self.pyramid = Pyramid::build_with(ev, per_bucket, 1, |edges| self.level_cells(ev, edges));
    }

    /// log2 of the finest pyramid bucket, for lanes that have a pyramid.
    pub(crate) fn pyramid_shift(&self) -> Option<u32> {
        self.pyramid.as_ref().map(Pyramid::shift)
    }

    // Per edge of a frame: the rows starting before it and the busy time before it.
    // Edge by edge in separate passes: the iterations of a pass are independent, so
    // the reads of different edges (cache misses on a large lane) overlap.
    fn edge_pass(&self, dir: &TimeDir, ev: &Events, edges: &[Ns]) -> (Vec<usize>, Vec<Ns>) {
        let counts: Vec<usize> = edges.iter().map(|&t| dir.count_below(&ev.start, t)).collect();
        let busy: Vec<Ns> = edges.iter().zip(&counts).map(|(&t, &i)| self.busy_before_at(ev, t, i)).collect();
        (counts, busy)
    }

    // The first row that can touch a cell starting at `a`, of which `ia` start before it.
    fn first_touching(&self, ev: &Events, a: Ns, ia: usize) -> usize {
        if ia == 0 {
            0
        } else if self.disjoint {
            if ev.end(ia - 1) > a { ia - 1 } else { ia }
        } else {
            self.first_ending_after_near(ev, a, ia / BLOCK).min(ia)
        }
    }

    // Busy ns and longest touching event (`CellInfo::NONE` if none) of each cell
    // `[edges[k], edges[k + 1])`, the exact way: what the pyramid's finest level holds.
    fn exact_cells(&self, ev: &Events, edges: &[Ns]) -> (Vec<u64>, Vec<u32>) {
        let (counts, busy) = self.edge_pass(&self.dir, ev, edges);
        let cells = edges.len().saturating_sub(1);
        let mut dom = Vec::with_capacity(cells);
        for k in 0..cells {
            let any = busy[k + 1] > busy[k] || counts[k + 1] > counts[k];
            let longest = any.then(|| self.longest(ev, self.first_touching(ev, edges[k], counts[k]), counts[k + 1]));
            dom.push(longest.flatten().map_or(CellInfo::NONE, |d| d as u32));
        }
        (busy.windows(2).map(|w| (w[1] - w[0]).max(0) as u64).collect(), dom)
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
    /// computes its edges once for every lane. When every edge is a multiple of the
    /// pyramid's finest bucket and no search marks matches, the cells come from the
    /// pyramid (the same cells, read from small arrays).
    pub(crate) fn raster_edges(&self, ev: &Events, edges: &[Ns], matches: Option<&[u32]>, out: &mut Vec<CellInfo>) {
        if let Some(p) = &self.pyramid
            && matches.is_none()
            && edges.iter().all(|&t| p.aligned(t))
        {
            out.clear();
            out.extend(edges.windows(2).map(|w| {
                let (busy, dom) = p.cell(ev, w[0], w[1]);
                let share = busy as f64 / (w[1] - w[0]).max(1) as f64;
                CellInfo { busy: share as f32, any: dom != CellInfo::NONE, dom, matched: false }
            }));
            return;
        }
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
        let (counts, busy) = self.edge_pass(dir, ev, edges);
        // Per cell that holds anything: the first row that can touch it.
        let any = |k: usize| busy[k + 1] > busy[k] || counts[k + 1] > counts[k];
        let lo: Vec<usize> =
            (0..width).map(|k| if any(k) { self.first_touching(ev, edges[k], counts[k]) } else { 0 }).collect();
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
            + self.pyramid.as_ref().map_or(0, Pyramid::heap_bytes)
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

/// A cell holds at least this many grid steps before its edges are rounded to the grid.
pub(crate) const SNAP_STEPS: Ns = 16;

/// Edge `k` of the cells of `[t0, t0 + span)` on `width` columns, rounded to the nearest
/// multiple of the largest power of two ns that a cell holds [`SNAP_STEPS`] times, when
/// that power is at least `2^grid` (the finest pyramid bucket of the trace): then the
/// lanes with a pyramid read each cell from it. `None`: the exact edge.
pub(crate) fn snap_edge(t0: Ns, span: Ns, width: usize, k: usize, grid: Option<u32>) -> Ns {
    let e = bucket_edge(t0, span, width, k);
    let Some(g) = grid else { return e };
    let steps = span / width.max(1) as Ns / SNAP_STEPS;
    if steps < 1 {
        return e;
    }
    let j = Ns::BITS - 1 - steps.leading_zeros();
    if j < g {
        return e;
    }
    let half = if j == 0 { 0 } else { 1i128 << (j - 1) };
    let r = ((i128::from(e) + half) >> j) << j;
    r.clamp(i128::from(Ns::MIN >> j << j), i128::from(Ns::MAX >> j << j)) as Ns
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

impl Field for LaneIndex {
    fn put<W: Write>(&self, w: &mut Enc<W>) -> io::Result<()> {
        self.disjoint.put(w)?;
        w.col(&self.cum)?;
        w.col(&self.maxend)?;
        self.sparse.len().put(w)?;
        self.sparse.iter().try_for_each(|level| w.col(level))?;
        self.dir.put(w)?;
        self.pyramid.put(w)
    }
    fn take(r: &mut Dec<'_>) -> Result<Self> {
        let (disjoint, cum, maxend) = (bool::take(r)?, r.col()?, r.col()?);
        // Every level is at least its count's eight bytes.
        let levels = r.count(8)?;
        let sparse = (0..levels).map(|_| r.col()).collect::<Result<Vec<Vec<u32>>>>()?;
        Ok(Self { disjoint, cum, maxend, sparse, dir: Field::take(r)?, pyramid: Field::take(r)? })
    }
}

impl LaneIndex {
    /// Whether an index read back from the cache can serve the lane `ev` (`disjoint` as
    /// the lane says): every table of the length [`LaneIndex::build`] gives it, prefixes
    /// that only grow, and rows of the lane; so that no lookup can leave a table.
    pub(crate) fn check(&self, ev: &Events, disjoint: bool) -> Result<()> {
        let n = ev.len();
        let nb = n.div_ceil(BLOCK);
        let grows = |v: &[Ns]| v.windows(2).all(|w| w[0] <= w[1]);
        if self.disjoint != disjoint || self.cum.len() != nb + 1 || self.cum[0] != 0 || !grows(&self.cum) {
            bail!("a lane index that does not fit its lane");
        }
        let maxend_ok = if disjoint {
            self.maxend.is_empty()
        } else {
            self.maxend.len() == nb + 1 && self.maxend[0] == Ns::MIN && grows(&self.maxend)
        };
        // The sparse table's levels: blocks [k, k + 2^l) for every k that fits.
        let mut want = vec![nb];
        let mut w = 1;
        while 2 * w <= nb {
            want.push(nb + 1 - 2 * w);
            w *= 2;
        }
        let lens: Vec<usize> = self.sparse.iter().map(Vec::len).collect();
        let rows_ok = self.sparse.iter().flatten().all(|&r| (r as usize) < n);
        if !maxend_ok || lens != want || !rows_ok {
            bail!("a lane index that does not fit its lane");
        }
        self.dir.check(&ev.start)?;
        match &self.pyramid {
            Some(p) => p.check(ev),
            None => Ok(()),
        }
    }
}

/// Name of the cache part that holds the render index.
pub(crate) const PART: &str = "view";

impl Field for Index {
    fn put<W: Write>(&self, w: &mut Enc<W>) -> io::Result<()> {
        self.lanes.put(w)
    }
    fn take(r: &mut Dec<'_>) -> Result<Self> {
        Ok(Self { lanes: Field::take(r)? })
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

    /// The index of the trace loaded from `path`: kept in the column cache beside the
    /// trace's entry (it depends on the trace alone), read back when the cache is on
    /// and holds a valid one, else built (and then kept).
    pub(crate) fn cached(path: &std::path::Path, trace: &Trace) -> Self {
        crate::reader::cache::part_through(path, PART, |i: &Self| i.check(trace), || Self::build(trace))
    }

    /// Whether an index read back from the cache can serve `trace`: one lane index per
    /// lane, each fitting its lane ([`LaneIndex::check`]).
    pub(crate) fn check(&self, trace: &Trace) -> Result<()> {
        if self.lanes.len() != trace.lanes.len() {
            bail!("an index of {} lanes for {} lanes", self.lanes.len(), trace.lanes.len());
        }
        self.lanes.iter().zip(&trace.lanes).try_for_each(|(i, l)| i.check(&l.ev, l.disjoint))
    }

    /// Approximate heap bytes used.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.lanes.iter().map(LaneIndex::heap_bytes).sum()
    }

    /// The finest pyramid bucket of any lane (log2 ns): the viewport rounds wide cells
    /// to a grid no finer. None when no lane is large enough to have a pyramid.
    pub(crate) fn grid(&self) -> Option<u32> {
        self.lanes.iter().filter_map(LaneIndex::pyramid_shift).min()
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

    // The pyramid's cells over edges `from`, then `steps` finest buckets each (empty
    // cells included), against the brute-force cells.
    fn check_pyramid(ev: &Events, disjoint: bool, per: usize, from: Ns, steps: &[Ns]) -> Result<(), TestCaseError> {
        let mut idx = LaneIndex::build(ev, disjoint);
        idx.rebuild_pyramid(ev, per);
        let shift = idx.pyramid_shift().expect("a pyramid");
        let mut edges = vec![from << shift];
        for s in steps {
            edges.push(edges[edges.len() - 1] + (s << shift));
        }
        let mut fast = Vec::new();
        idx.raster_edges(ev, &edges, None, &mut fast);
        for (k, w) in edges.windows(2).enumerate() {
            if w[1] > w[0] {
                let want = brute_cells(ev, w[0], w[1] - w[0], 1, None)[0];
                prop_assert_eq!(fast[k], want, "cell {} [{}, {}) shift {}", k, w[0], w[1], shift);
            } else {
                prop_assert!(!fast[k].any);
            }
        }
        Ok(())
    }

    fn arb() -> impl Strategy<Value = Vec<(Ns, Ns)>> {
        prop::collection::vec((0i64..400, 0i64..30), 0..120)
    }

    // `idx` written and read back through the cache's codec, in memory.
    fn round_trip(idx: &LaneIndex) -> LaneIndex {
        let mut enc = Enc::new(Vec::new());
        idx.put(&mut enc).unwrap();
        let (bytes, ..) = enc.finish();
        let mut dec = Dec::new(&bytes[..]);
        let back = LaneIndex::take(&mut dec).unwrap();
        dec.finish().unwrap();
        back
    }

    proptest! {
        // Every index the builder gives passes the check of an index read back from the
        // cache, and reads back the same; one naming a row out of the lane does not pass.
        #[test]
        fn a_built_index_passes_the_cache_check_and_a_forged_one_fails(
            p in arb(),
            per in 1usize..8,
            pick in 0usize..1000,
            forge in 0usize..4,
        ) {
            let ev = events(&p);
            let disjoint = (1..ev.len()).all(|i| ev.end(i - 1) <= ev.start[i]);
            for d in [disjoint, false] {
                let mut idx = LaneIndex::build(&ev, d);
                if !ev.is_empty() {
                    idx.rebuild_pyramid(&ev, per);
                    idx.rebuild_dir(&ev, per);
                }
                prop_assert!(idx.check(&ev, d).is_ok(), "{:?}", idx.check(&ev, d));
                let back = round_trip(&idx);
                prop_assert_eq!(format!("{back:?}"), format!("{idx:?}"));
                prop_assert!(back.check(&ev, d).is_ok());
                prop_assert!(idx.check(&ev, !d).is_err(), "the other overlap flag");
                let n = ev.len() as u32;
                let mut bad = idx.clone();
                let forged = match forge {
                    0 => bad.sparse.iter_mut().flatten().nth(pick % (ev.len().div_ceil(BLOCK) + 1)).map(|r| *r = n),
                    1 => bad.cum.last_mut().filter(|_| ev.len() > BLOCK).map(|c| *c = -1),
                    2 => bad.dir.first.last_mut().map(|f| *f = n + 1),
                    _ => {
                        bad.cum.push(0);
                        Some(())
                    }
                };
                if forged.is_some() {
                    prop_assert!(bad.check(&ev, d).is_err(), "forge {} passed", forge);
                }
            }
        }

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
        fn pyramid_cells_equal_brute_force_cells(
            p in prop::collection::vec((0i64..4000, 0i64..300), 1..400),
            per in 1usize..9,
            from in -40i64..60,
            steps in prop::collection::vec(0i64..90, 1..40),
        ) {
            let ev = events(&p);
            let disjoint = (1..ev.len()).all(|i| ev.end(i - 1) <= ev.start[i]);
            for d in [disjoint, false] {
                check_pyramid(&ev, d, per, from, &steps)?;
            }
        }

        #[test]
        fn pyramid_cells_of_a_lane_without_overlaps_equal_brute_force_cells(
            gaps in prop::collection::vec((0i64..50, 0i64..40), 1..400),
            per in 1usize..9,
            from in -40i64..60,
            steps in prop::collection::vec(0i64..90, 1..40),
        ) {
            // Back to back, apart or instants: the one-pass build of the finest level.
            let mut t = -300;
            let p: Vec<(Ns, Ns)> = gaps.iter().map(|&(g, d)| { t += g; let e = (t, d); t += d; e }).collect();
            check_pyramid(&events(&p), true, per, from, &steps)?;
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

    proptest! {
        #[test]
        fn snapped_edges_ascend_on_the_grid_near_the_exact_ones(
            t0 in -1_000_000_000i64..1_000_000_000,
            span in 1i64..10_000_000_000,
            w in 1usize..300,
            grid in 0u32..30,
        ) {
            let cell = span / w as i64;
            let snapped: Vec<Ns> = (0..=w).map(|k| snap_edge(t0, span, w, k, Some(grid))).collect();
            let exact: Vec<Ns> = (0..=w).map(|k| bucket_edge(t0, span, w, k)).collect();
            let step = cell / SNAP_STEPS;
            if step < 1 || (Ns::BITS - 1 - step.leading_zeros()) < grid {
                prop_assert_eq!(&snapped, &exact);
            } else {
                let g = 1i64 << (Ns::BITS - 1 - step.leading_zeros());
                prop_assert!(g * SNAP_STEPS <= cell && cell < 2 * g * SNAP_STEPS);
                for (s, e) in snapped.iter().zip(&exact) {
                    prop_assert_eq!(s.rem_euclid(g), 0);
                    prop_assert!((s - e).abs() <= g / 2, "{} is more than half a step from {}", s, e);
                }
                prop_assert!(snapped.windows(2).all(|p| p[0] < p[1]));
            }
            prop_assert_eq!(snap_edge(t0, span, w, 3, None), bucket_edge(t0, span, w, 3));
        }
    }

    #[test]
    fn edges_at_the_limits_of_time_stay_in_range() {
        for (t0, span) in [(Ns::MIN, Ns::MAX), (0, Ns::MAX), (Ns::MAX - 1_000_000, 1_000_000)] {
            let e: Vec<Ns> = (0..=7).map(|k| snap_edge(t0, span, 7, k, Some(0))).collect();
            assert!(e.windows(2).all(|p| p[0] <= p[1]), "{e:?}");
        }
    }
}
