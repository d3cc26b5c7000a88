//! Interval algebra over sorted, disjoint busy lists: union, prefix sums, gaps, overlap.

use crate::model::Ns;

/// A union of intervals: disjoint, sorted, with prefix sums of busy time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Union {
    start: Vec<Ns>,
    end: Vec<Ns>,
    // cum[i] = busy time of intervals 0..i
    cum: Vec<Ns>,
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
        let mut u = Self::default();
        for (s, e) in pairs {
            if e <= s {
                continue;
            }
            match u.end.last_mut() {
                Some(last) if s <= *last => *last = (*last).max(e),
                _ => {
                    u.start.push(s);
                    u.end.push(e);
                }
            }
        }
        u.rebuild_cum();
        u
    }

    fn rebuild_cum(&mut self) {
        self.cum.clear();
        self.cum.reserve(self.start.len() + 1);
        let mut acc = 0;
        self.cum.push(0);
        for (s, e) in self.start.iter().zip(&self.end) {
            acc += e - s;
            self.cum.push(acc);
        }
    }

    /// Number of disjoint intervals.
    pub fn len(&self) -> usize {
        self.start.len()
    }

    /// True when nothing is busy.
    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    /// Interval `i` as `(start, end)`.
    pub fn get(&self, i: usize) -> (Ns, Ns) {
        (self.start[i], self.end[i])
    }

    /// Iterate the intervals.
    pub fn iter(&self) -> impl Iterator<Item = (Ns, Ns)> + '_ {
        self.start.iter().copied().zip(self.end.iter().copied())
    }

    /// Start of the first and end of the last interval.
    pub fn extent(&self) -> Option<(Ns, Ns)> {
        Some((*self.start.first()?, *self.end.last()?))
    }

    /// Total busy time.
    pub fn total(&self) -> Ns {
        self.cum.last().copied().unwrap_or(0)
    }

    /// Busy time in `(-inf, t)`, in O(log n).
    pub fn busy_before(&self, t: Ns) -> Ns {
        let i = self.start.partition_point(|&s| s < t);
        if i == 0 {
            return 0;
        }
        self.cum[i - 1] + (t.min(self.end[i - 1]) - self.start[i - 1])
    }

    /// Busy time within `[a, b)`, in O(log n).
    pub fn busy_in(&self, a: Ns, b: Ns) -> Ns {
        if b <= a { 0 } else { self.busy_before(b) - self.busy_before(a) }
    }

    /// True when `t` lies inside an interval.
    pub fn contains(&self, t: Ns) -> bool {
        let i = self.start.partition_point(|&s| s <= t);
        i > 0 && t < self.end[i - 1]
    }

    /// Index range of intervals that intersect `[a, b)`.
    pub fn range_in(&self, a: Ns, b: Ns) -> std::ops::Range<usize> {
        let lo = self.end.partition_point(|&e| e <= a);
        let hi = self.start.partition_point(|&s| s < b);
        lo..hi.max(lo)
    }

    /// Gaps between consecutive intervals lasting at least `min` (no leading or trailing gap).
    pub fn gaps(&self, min: Ns) -> impl Iterator<Item = (Ns, Ns)> + '_ {
        self.end.iter().zip(self.start.iter().skip(1)).map(|(&e, &s)| (e, s)).filter(move |(e, s)| s - e >= min.max(1))
    }

    /// Busy time shared with `other` (length of the intersection).
    pub fn overlap_with(&self, other: &Union) -> Ns {
        let (small, big) = if self.len() <= other.len() { (self, other) } else { (other, self) };
        small.iter().map(|(s, e)| big.busy_in(s, e)).sum()
    }

    /// The intersection of two unions.
    #[must_use]
    pub fn intersect(&self, other: &Union) -> Union {
        let (mut i, mut j) = (0, 0);
        let mut out = Vec::new();
        while i < self.len() && j < other.len() {
            let s = self.start[i].max(other.start[j]);
            let e = self.end[i].min(other.end[j]);
            if s < e {
                out.push((s, e));
            }
            if self.end[i] < other.end[j] { i += 1 } else { j += 1 }
        }
        Union::from_sorted(out)
    }

    /// The union of two unions, in one linear merge.
    #[must_use]
    pub fn merge(&self, other: &Union) -> Union {
        let (mut i, mut j) = (0, 0);
        let mut out = Vec::with_capacity(self.len() + other.len());
        while i < self.len() || j < other.len() {
            if j == other.len() || (i < self.len() && self.start[i] <= other.start[j]) {
                out.push(self.get(i));
                i += 1;
            } else {
                out.push(other.get(j));
                j += 1;
            }
        }
        Union::from_sorted(out)
    }

    /// The parts of `self` not covered by `other`.
    #[must_use]
    pub fn minus(&self, other: &Union) -> Union {
        let mut out = Vec::new();
        for (s, e) in self.iter() {
            let mut cur = s;
            for k in other.range_in(s, e) {
                let (os, oe) = other.get(k);
                if os > cur {
                    out.push((cur, os.min(e)));
                }
                cur = cur.max(oe);
            }
            if cur < e {
                out.push((cur, e));
            }
        }
        Union::from_sorted(out)
    }

    /// Heap bytes used.
    pub fn heap_bytes(&self) -> usize {
        (self.start.capacity() + self.end.capacity() + self.cum.capacity()) * 8
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
