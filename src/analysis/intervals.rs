//! Interval algebra over sorted, disjoint busy lists: union, prefix sums, gaps, overlap.
//!
//! A [`Union`] holds as many intervals as a lane has events, so it is stored compactly:
//! about 5 to 6 bytes per interval of GPU work (kernels of microseconds to milliseconds)
//! instead of 24 for start, end and prefix-sum columns. Intervals are cut into blocks of
//! [`BLOCK`]; a block keeps the absolute start of its first interval, the busy time
//! before it and where its bytes begin; an interval keeps its idle time since the
//! previous interval (not for a block's first) and its length as LEB128 varints: 1 byte
//! below 128 ns, 2 below 16 us, 3 below 2.1 ms, any length fits. Lookups are a binary
//! search over the blocks and a scan of at most one block.

use std::ops::Range;

use crate::model::Ns;

/// Intervals per block of a [`Union`].
pub(crate) const BLOCK: usize = 32;

/// A union of intervals: disjoint, sorted, never touching, with prefix sums of busy time.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Union {
    // Per block: start of its first interval, busy time before it, offset of its first
    // interval in `bytes`.
    block_start: Vec<Ns>,
    block_cum: Vec<Ns>,
    block_pos: Vec<usize>,
    // Per interval: idle time since the previous end (not for a block's first) and
    // length, as LEB128 varints.
    bytes: Vec<u8>,
    n: usize,
    last_end: Ns,
    total: Ns,
}

/// Builds a [`Union`] from intervals sorted by start, merging overlapping and touching ones.
#[derive(Debug, Default)]
pub(crate) struct Builder {
    u: Union,
    cur: Option<(Ns, Ns)>,
}

impl Builder {
    /// A builder with room for `n` intervals.
    pub(crate) fn with_capacity(n: usize) -> Self {
        let u = Union {
            block_start: Vec::with_capacity(n.div_ceil(BLOCK)),
            block_cum: Vec::with_capacity(n.div_ceil(BLOCK)),
            block_pos: Vec::with_capacity(n.div_ceil(BLOCK)),
            bytes: Vec::with_capacity(n.saturating_mul(5)),
            ..Union::default()
        };
        Self { u, cur: None }
    }

    /// Add `[s, e)`; `s` must not be before the previous start. Empty intervals are dropped.
    pub(crate) fn add(&mut self, s: Ns, e: Ns) {
        if e <= s {
            return;
        }
        match &mut self.cur {
            Some((_, ce)) if s <= *ce => *ce = (*ce).max(e),
            cur => {
                if let Some((cs, ce)) = cur.replace((s, e)) {
                    self.u.push(cs, ce);
                }
            }
        }
    }

    /// The union of everything added.
    pub(crate) fn finish(mut self) -> Union {
        if let Some((s, e)) = self.cur.take() {
            self.u.push(s, e);
        }
        let u = &mut self.u;
        for v in [&mut u.block_start, &mut u.block_cum] {
            v.shrink_to_fit();
        }
        u.block_pos.shrink_to_fit();
        u.bytes.shrink_to_fit();
        self.u
    }
}

impl Union {
    /// Build the union of `(start, end)` pairs given in any order; empty pairs are dropped.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (Ns, Ns)>) -> Self {
        let mut v: Vec<(Ns, Ns)> = pairs.into_iter().filter(|(s, e)| e > s).collect();
        v.sort_unstable();
        Self::from_sorted(v)
    }

    /// Build the union of pairs already sorted by start.
    pub fn from_sorted(pairs: impl IntoIterator<Item = (Ns, Ns)>) -> Self {
        let pairs = pairs.into_iter();
        let mut b = Builder::with_capacity(pairs.size_hint().0);
        for (s, e) in pairs {
            b.add(s, e);
        }
        b.finish()
    }

    // Append `[s, e)`, which starts after the last end.
    fn push(&mut self, s: Ns, e: Ns) {
        if self.n.is_multiple_of(BLOCK) {
            self.block_start.push(s);
            self.block_cum.push(self.total);
            self.block_pos.push(self.bytes.len());
        } else {
            put_varint(&mut self.bytes, (s - self.last_end) as u64);
        }
        put_varint(&mut self.bytes, (e - s) as u64);
        self.n += 1;
        self.last_end = e;
        self.total += e - s;
    }

    /// Number of disjoint intervals.
    pub fn len(&self) -> usize {
        self.n
    }

    /// True when nothing is busy.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Interval `i` as `(start, end)`.
    pub fn get(&self, i: usize) -> (Ns, Ns) {
        self.iter_from(i / BLOCK).nth(i % BLOCK).expect("interval index in range")
    }

    /// The intervals from the first of block `k` (interval `k * BLOCK`) on.
    pub fn iter_from(&self, k: usize) -> Iter<'_> {
        Iter { u: self, i: k * BLOCK, pos: 0, end: 0 }
    }

    // The intervals of block `k`.
    fn block(&self, k: usize) -> std::iter::Take<Iter<'_>> {
        self.iter_from(k).take(BLOCK)
    }

    /// Iterate the intervals.
    pub fn iter(&self) -> impl Iterator<Item = (Ns, Ns)> + Clone + '_ {
        self.iter_from(0)
    }

    /// Start of the first and end of the last interval.
    pub fn extent(&self) -> Option<(Ns, Ns)> {
        Some((*self.block_start.first()?, self.last_end))
    }

    /// Total busy time.
    pub fn total(&self) -> Ns {
        self.total
    }

    /// Busy time in `(-inf, t)`, in O(log n).
    pub fn busy_before(&self, t: Ns) -> Ns {
        self.busy_before_block(t, self.block_start.partition_point(|&s| s < t))
    }

    /// Gaps of at least `min` (at least 1) between the intervals of block `k` (not the
    /// one before its first interval), in order.
    pub fn gaps_in_block(&self, k: usize, min: Ns, out: &mut Vec<(Ns, Ns)>) {
        let min = min.max(1);
        let mut prev_end = None;
        for (s, e) in self.block(k) {
            if let Some(pe) = prev_end
                && s - pe >= min
            {
                out.push((pe, s));
            }
            prev_end = Some(e);
        }
    }

    /// Start of each block's first interval (sorted): callers that find the block of an
    /// instant by other means (the viewer's time directory) pass it to
    /// [`Union::busy_before_block`].
    pub fn block_starts(&self) -> &[Ns] {
        &self.block_start
    }

    /// Busy time before `t`, given the number `k` of blocks starting before it.
    pub fn busy_before_block(&self, t: Ns, k: usize) -> Ns {
        if k == 0 {
            return 0;
        }
        let mut acc = self.block_cum[k - 1];
        for (s, e) in self.block(k - 1).take_while(|&(s, _)| s < t) {
            acc += t.min(e) - s;
        }
        acc
    }

    /// Busy time within `[a, b)`, in O(log n).
    pub fn busy_in(&self, a: Ns, b: Ns) -> Ns {
        if b <= a { 0 } else { self.busy_before(b) - self.busy_before(a) }
    }

    /// True when `t` lies inside an interval.
    pub fn contains(&self, t: Ns) -> bool {
        let k = self.block_start.partition_point(|&s| s <= t);
        k > 0 && self.block(k - 1).take_while(|&(s, _)| s <= t).any(|(_, e)| t < e)
    }

    /// Index range of intervals that intersect `[a, b)`.
    pub fn range_in(&self, a: Ns, b: Ns) -> Range<usize> {
        // First interval ending after `a`: in the block of the last start at or before
        // `a`, else the first of the next block.
        let k = self.block_start.partition_point(|&s| s <= a);
        let lo = match k {
            0 => 0,
            _ => (k - 1) * BLOCK + self.block(k - 1).take_while(|&(_, e)| e <= a).count(),
        };
        let k = self.block_start.partition_point(|&s| s < b);
        let hi = match k {
            0 => 0,
            _ => (k - 1) * BLOCK + self.block(k - 1).take_while(|&(s, _)| s < b).count(),
        };
        lo..hi.max(lo)
    }

    /// Gaps between consecutive intervals lasting at least `min` (no leading or trailing gap).
    pub fn gaps(&self, min: Ns) -> impl Iterator<Item = (Ns, Ns)> + '_ {
        let mut prev: Option<Ns> = None;
        self.iter().filter_map(move |(s, e)| prev.replace(e).map(|p| (p, s))).filter(move |(e, s)| s - e >= min.max(1))
    }

    /// Busy time shared with `other` (length of the intersection).
    pub fn overlap_with(&self, other: &Union) -> Ns {
        let (small, big) = if self.len() <= other.len() { (self, other) } else { (other, self) };
        // The instants only move forward: each lookup continues from the previous one.
        let mut c = big.cursor();
        small.iter().map(|(s, e)| c.busy_in(s, e)).sum()
    }

    /// A [`Cursor`] for lookups in increasing time order.
    pub(crate) fn cursor(&self) -> Cursor<'_> {
        Cursor { u: self, k: 0, it: self.iter_from(0), at: None, idx: 0, cum: 0, last: Ns::MIN }
    }

    /// The intersection of two unions.
    #[must_use]
    pub fn intersect(&self, other: &Union) -> Union {
        let mut out = Builder::default();
        let (mut a, mut b) = (self.iter().peekable(), other.iter().peekable());
        while let (Some(&(sa, ea)), Some(&(sb, eb))) = (a.peek(), b.peek()) {
            out.add(sa.max(sb), ea.min(eb));
            if ea < eb {
                a.next();
            } else {
                b.next();
            }
        }
        out.finish()
    }

    /// The union of two unions, in one linear merge.
    #[must_use]
    pub fn merge(&self, other: &Union) -> Union {
        let mut out = Builder::with_capacity(self.len() + other.len());
        for (s, e) in itertools::merge(self.iter(), other.iter()) {
            out.add(s, e);
        }
        out.finish()
    }

    /// The parts of `self` not covered by `other`.
    #[must_use]
    pub fn minus(&self, other: &Union) -> Union {
        let mut out = Builder::default();
        let mut rest = other.iter().peekable();
        for (s, e) in self.iter() {
            while rest.next_if(|&(_, oe)| oe <= s).is_some() {}
            // The last interval of `other` seen here may reach into the next one of `self`.
            let mut cur = s;
            for (os, oe) in rest.clone().take_while(|&(os, _)| os < e) {
                if os > cur {
                    out.add(cur, os);
                }
                cur = cur.max(oe);
            }
            out.add(cur, e);
        }
        out.finish()
    }

    /// Heap bytes used.
    pub fn heap_bytes(&self) -> usize {
        (self.block_start.capacity() + self.block_cum.capacity() + self.block_pos.capacity()) * 8
            + self.bytes.capacity()
    }
}

// LEB128: 7 bits a byte, low first, the high bit set on every byte but the last.
fn put_varint(v: &mut Vec<u8>, mut x: u64) {
    while x >= 0x80 {
        v.push((x as u8) | 0x80);
        x >>= 7;
    }
    v.push(x as u8);
}

fn get_varint(v: &[u8], pos: &mut usize) -> u64 {
    let (mut x, mut shift) = (0u64, 0);
    loop {
        let b = v[*pos];
        *pos += 1;
        x |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return x;
        }
        shift += 7;
    }
}

/// `v.partition_point(pred)`, searched outward from `hint` by doubling steps: O(log d)
/// for an answer `d` rows away.
pub(crate) fn partition_near<T>(v: &[T], hint: usize, pred: impl Fn(&T) -> bool) -> usize {
    let h = hint.min(v.len());
    if h < v.len() && pred(&v[h]) {
        // The answer is after h.
        let (mut lo, mut step) = (h + 1, 1);
        loop {
            let hi = (lo + step).min(v.len());
            if hi == v.len() || !pred(&v[hi]) {
                return lo + v[lo..hi].partition_point(&pred);
            }
            lo = hi + 1;
            step *= 2;
        }
    }
    // The answer is at or before h.
    let (mut hi, mut step) = (h, 1);
    loop {
        if hi == 0 {
            return 0;
        }
        let lo = hi.saturating_sub(step);
        if pred(&v[lo]) {
            return lo + 1 + v[lo + 1..hi].partition_point(&pred);
        }
        hi = lo;
        step *= 2;
    }
}

/// Busy time of a [`Union`] before instants asked for in (mostly) increasing order: a
/// lookup continues the scan of the previous one when it lies in the same block or the
/// next, so a sweep over `m` instants costs O(m + intervals passed) rather than a block
/// scan each. An instant before the previous one starts again from its block.
#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    u: &'a Union,
    // Blocks starting before the last instant asked (the search hint).
    k: usize,
    // The scan: the interval it stands at (`None` past the last), its index, and the busy
    // time before it.
    it: Iter<'a>,
    at: Option<(Ns, Ns)>,
    idx: usize,
    cum: Ns,
    last: Ns,
}

impl Cursor<'_> {
    /// Busy time in `(-inf, t)`.
    pub(crate) fn busy_before(&mut self, t: Ns) -> Ns {
        let u = self.u;
        let bs = &u.block_start;
        // Most instants fall in the block of the previous one: check that before searching.
        let same = self.k > 0 && bs[self.k - 1] < t && bs.get(self.k).is_none_or(|&s| s >= t);
        if !same {
            self.k = partition_near(bs, self.k, |&s| s < t);
        }
        if self.k == 0 {
            return 0;
        }
        // The answer lies in block k - 1 (or is the busy time before block k's first
        // interval): a scan behind that block, or past `t`, starts at the block.
        let first = (self.k - 1) * BLOCK;
        if t < self.last || self.idx < first || self.last == Ns::MIN {
            self.it = u.iter_from(self.k - 1);
            self.idx = first;
            self.cum = u.block_cum[self.k - 1];
            self.at = self.it.next();
        }
        self.last = t;
        while let Some((s, e)) = self.at
            && e <= t
        {
            self.cum += e - s;
            self.at = self.it.next();
            self.idx += 1;
        }
        match self.at {
            Some((s, _)) if s < t => self.cum + (t - s),
            _ => self.cum,
        }
    }

    /// Busy time within `[a, b)` (0 when `b <= a`).
    pub(crate) fn busy_in(&mut self, a: Ns, b: Ns) -> Ns {
        if b <= a {
            return 0;
        }
        let before = self.busy_before(a);
        self.busy_before(b) - before
    }
}

/// Iterator over the intervals of a [`Union`] from some index on.
#[derive(Debug, Clone)]
pub struct Iter<'a> {
    u: &'a Union,
    i: usize,
    // Offset of interval i's bytes (set at each block's first interval).
    pos: usize,
    // End of interval i - 1.
    end: Ns,
}

impl Iterator for Iter<'_> {
    type Item = (Ns, Ns);

    fn next(&mut self) -> Option<(Ns, Ns)> {
        if self.i >= self.u.len() {
            return None;
        }
        let s = if self.i.is_multiple_of(BLOCK) {
            self.pos = self.u.block_pos[self.i / BLOCK];
            self.u.block_start[self.i / BLOCK]
        } else {
            self.end + get_varint(&self.u.bytes, &mut self.pos) as Ns
        };
        let len = get_varint(&self.u.bytes, &mut self.pos) as Ns;
        self.i += 1;
        self.end = s + len;
        Some((s, self.end))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.u.len().saturating_sub(self.i);
        (n, Some(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn brute_busy(pairs: &[(Ns, Ns)], a: Ns, b: Ns) -> Ns {
        (a..b).filter(|&t| pairs.iter().any(|&(s, e)| s <= t && t < e)).count() as Ns
    }

    fn pairs() -> impl Strategy<Value = Vec<(Ns, Ns)>> {
        prop::collection::vec((-50i64..200, 0i64..40).prop_map(|(s, d)| (s, s + d)), 0..30)
    }

    // The union as plain sorted, disjoint (start, end) pairs.
    fn reference(p: &[(Ns, Ns)]) -> Vec<(Ns, Ns)> {
        let mut v: Vec<(Ns, Ns)> = p.iter().copied().filter(|(s, e)| e > s).collect();
        v.sort_unstable();
        let mut out: Vec<(Ns, Ns)> = Vec::new();
        for (s, e) in v {
            match out.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => out.push((s, e)),
            }
        }
        out
    }

    fn ref_busy_before(r: &[(Ns, Ns)], t: Ns) -> Ns {
        r.iter().map(|&(s, e)| (e.min(t) - s).max(0)).sum()
    }

    // Many intervals, some gaps and lengths beyond u32 (stored aside).
    fn wide_pairs() -> impl Strategy<Value = Vec<(Ns, Ns)>> {
        let step = prop_oneof![8 => 0i64..1_000, 1 => 4_000_000_000i64..9_000_000_000];
        let len =
            prop_oneof![8 => 0i64..600, 1 => 4_294_967_290i64..4_294_967_300, 1 => 5_000_000_000i64..6_000_000_000];
        prop::collection::vec((step, len), 0..200).prop_map(|v| {
            let mut t = -3_000_000_000;
            v.into_iter()
                .map(|(st, l)| {
                    t += st;
                    (t, t + l)
                })
                .collect()
        })
    }

    proptest! {
        #[test]
        fn busy_in_matches_brute_force(p in pairs(), a in -60i64..250, w in 0i64..120) {
            let u = Union::from_pairs(p.iter().copied());
            prop_assert_eq!(u.busy_in(a, a + w), brute_busy(&p, a, a + w));
        }

        #[test]
        fn union_is_disjoint_and_no_larger_than_sum(p in pairs()) {
            let u = Union::from_pairs(p.iter().copied());
            let sum: Ns = p.iter().map(|(s, e)| e - s).sum();
            prop_assert!(u.total() <= sum);
            for i in 1..u.len() {
                prop_assert!(u.get(i - 1).1 < u.get(i).0);
            }
            for t in -60..250 {
                prop_assert_eq!(u.contains(t), p.iter().any(|&(s, e)| s <= t && t < e));
            }
        }

        #[test]
        fn gaps_are_the_complement_inside_the_extent(p in pairs(), min in 1i64..10) {
            let u = Union::from_pairs(p.iter().copied());
            if let Some((lo, hi)) = u.extent() {
                for (gs, ge) in u.gaps(min) {
                    prop_assert!(ge - gs >= min);
                    prop_assert_eq!(brute_busy(&p, gs, ge), 0);
                    prop_assert!(gs >= lo);
                    prop_assert!(ge <= hi);
                }
                let idle_all: Ns = u.gaps(1).map(|(s, e)| e - s).sum();
                prop_assert_eq!(idle_all + u.total(), hi - lo);
            }
        }

        #[test]
        fn a_large_union_matches_a_plain_list(p in wide_pairs(), q in wide_pairs(), probes in prop::collection::vec(any::<prop::sample::Index>(), 1..20)) {
            let u = Union::from_pairs(p.iter().copied());
            let r = reference(&p);
            prop_assert_eq!(u.len(), r.len());
            prop_assert_eq!(u.iter().collect::<Vec<_>>(), r.clone());
            prop_assert_eq!(u.total(), ref_busy_before(&r, Ns::MAX));
            prop_assert_eq!(u.extent(), r.first().map(|f| (f.0, r[r.len() - 1].1)));
            let gaps: Vec<_> = r.windows(2).map(|w| (w[0].1, w[1].0)).filter(|g| g.1 - g.0 >= 700).collect();
            prop_assert_eq!(u.gaps(700).collect::<Vec<_>>(), gaps);
            // Probe at every boundary, one before and one after.
            let points: Vec<Ns> = r.iter().flat_map(|&(s, e)| [s - 1, s, s + 1, e - 1, e, e + 1]).collect();
            for ix in &probes {
                if points.is_empty() { break; }
                let a = points[ix.index(points.len())];
                let b = points[(ix.index(points.len()) * 7 + 3) % points.len()];
                prop_assert_eq!(u.busy_before(a), ref_busy_before(&r, a));
                prop_assert_eq!(u.busy_in(a, b), (ref_busy_before(&r, b) - ref_busy_before(&r, a)).max(0));
                prop_assert_eq!(u.contains(a), r.iter().any(|&(s, e)| s <= a && a < e));
                let lo = r.iter().position(|&(_, e)| e > a).unwrap_or(r.len());
                let hi = r.iter().position(|&(s, _)| s >= b).unwrap_or(r.len());
                prop_assert_eq!(u.range_in(a, b), lo..hi.max(lo));
                let i = ix.index(r.len());
                prop_assert_eq!(u.get(i), r[i]);
            }
            let v = Union::from_pairs(q.iter().copied());
            let inter = reference(&u.intersect(&v).iter().collect::<Vec<_>>());
            let brute: Ns = r.iter().map(|&(s, e)| v.busy_in(s, e)).sum();
            prop_assert_eq!(ref_busy_before(&inter, Ns::MAX), brute);
            prop_assert_eq!(u.overlap_with(&v), brute);
            prop_assert_eq!(u.minus(&v).total(), u.total() - brute);
            prop_assert_eq!(u.merge(&v), Union::from_pairs(p.iter().chain(q.iter()).copied()));
        }

        #[test]
        fn a_cursor_answers_as_the_plain_list_in_any_order(p in wide_pairs(), probes in prop::collection::vec((any::<prop::sample::Index>(), -2i64..3), 1..300)) {
            let u = Union::from_pairs(p.iter().copied());
            let r = reference(&p);
            let points: Vec<Ns> = r.iter().flat_map(|&(s, e)| [s, i64::midpoint(s, e), e]).chain([-(1 << 50), 0, 1 << 50]).collect();
            let mut asked: Vec<Ns> =
                probes.iter().map(|(ix, d)| points[ix.index(points.len())].saturating_add(*d)).collect();
            // Shuffled (backward steps restart from a block), then in order (the forward scan).
            let mut c = u.cursor();
            for &t in &asked {
                prop_assert_eq!(c.busy_before(t), ref_busy_before(&r, t), "t = {}", t);
            }
            asked.sort_unstable();
            let mut c = u.cursor();
            for w in asked.windows(2) {
                prop_assert_eq!(c.busy_in(w[0], w[1]), ref_busy_before(&r, w[1]) - ref_busy_before(&r, w[0]));
            }
        }

        #[test]
        fn many_blocks_and_long_intervals_roundtrip(
            steps in prop::collection::vec((prop_oneof![1i64..200, 1i64..(1 << 40)], prop_oneof![1i64..200, 1i64..(1 << 40)]), 0..300),
        ) {
            // Disjoint, non-touching intervals with gaps and lengths of 1 to 6 varint bytes.
            let mut t = -(1 << 41);
            let mut want = Vec::new();
            for (g, l) in steps {
                want.push((t + g, t + g + l));
                t += g + l;
            }
            let u = Union::from_sorted(want.iter().copied());
            prop_assert_eq!(u.iter().collect::<Vec<_>>(), want.clone());
            prop_assert_eq!(u.total(), want.iter().map(|(s, e)| e - s).sum::<Ns>());
            for (i, &w) in want.iter().enumerate() {
                prop_assert_eq!(u.get(i), w);
                prop_assert_eq!(u.busy_before(w.1), want[..=i].iter().map(|(s, e)| e - s).sum::<Ns>());
            }
        }

        #[test]
        fn partition_near_matches_partition_point(mut v in prop::collection::vec(0u32..50, 0..80), hint in 0usize..100, x in 0u32..55) {
            v.sort_unstable();
            prop_assert_eq!(partition_near(&v, hint, |&c| c < x), v.partition_point(|&c| c < x));
            prop_assert_eq!(partition_near(&v, hint, |&c| c <= x), v.partition_point(|&c| c <= x));
        }

        #[test]
        fn overlap_intersect_minus_agree(p in pairs(), q in pairs()) {
            let a = Union::from_pairs(p.iter().copied());
            let b = Union::from_pairs(q.iter().copied());
            let inter = a.intersect(&b);
            let brute: Ns = (-60..250).filter(|&t| a.contains(t) && b.contains(t)).count() as Ns;
            prop_assert_eq!(inter.total(), brute);
            prop_assert_eq!(a.overlap_with(&b), brute);
            prop_assert_eq!(a.minus(&b).total(), a.total() - brute);
            let merged = a.merge(&b);
            prop_assert_eq!(&merged, &Union::from_pairs(p.iter().chain(q.iter()).copied()));
            prop_assert_eq!(merged.total(), a.total() + b.total() - brute);
        }
    }
}
