//! Phase names (grouped as [`group_name`] does, unless exact) and duration statistics.

use std::borrow::Cow;

use super::DurStats;
use crate::model::{Ns, group_name};

/// The phase name of a range: grouped unless `exact`.
pub(crate) fn phase_name(name: &str, exact: bool) -> Cow<'_, str> {
    if exact { Cow::Borrowed(name) } else { group_name(name) }
}

impl DurStats {
    /// Statistics of `durs` (any order). Percentiles use the nearest-rank method: the
    /// p-th percentile is the smallest value with at least p% of the values at or below
    /// it (`sorted[ceil(p * n / 100) - 1]`). The mean is rounded down. Empty input gives
    /// all zeros.
    pub fn from_durations(durs: &mut [Ns]) -> Self {
        if durs.is_empty() {
            return Self::default();
        }
        durs.sort_unstable();
        let n = durs.len();
        let sum: Ns = durs.iter().sum();
        Self {
            sum_ns: sum,
            mean_ns: sum.div_euclid(n as Ns),
            p50_ns: durs[nearest_rank(50, n)],
            p95_ns: durs[nearest_rank(95, n)],
            max_ns: durs[n - 1],
        }
    }
}

// Index of the p-th percentile in a sorted slice of length n >= 1.
fn nearest_rank(p: usize, n: usize) -> usize {
    (p * n).div_ceil(100).clamp(1, n) - 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn phase_names_are_grouped_unless_exact() {
        assert_eq!(phase_name("step 7", true), "step 7");
        assert_eq!(phase_name("step 7", false), "step N");
    }

    #[test]
    fn stats_of_a_known_list() {
        let mut d = vec![5, 1, 4, 2, 3];
        let s = DurStats::from_durations(&mut d);
        assert_eq!(s, DurStats { sum_ns: 15, mean_ns: 3, p50_ns: 3, p95_ns: 5, max_ns: 5 });
        assert_eq!(DurStats::from_durations(&mut []), DurStats::default());
        let mut one = vec![7];
        assert_eq!(DurStats::from_durations(&mut one).p95_ns, 7);
    }

    // Brute force: the smallest value v with count(x <= v) * 100 >= p * n.
    fn brute_percentile(v: &[Ns], p: usize) -> Ns {
        let mut c = v.to_vec();
        c.sort_unstable();
        *c.iter().find(|&&x| v.iter().filter(|&&y| y <= x).count() * 100 >= p * v.len()).unwrap()
    }

    proptest! {
        #[test]
        fn percentiles_match_brute_force(v in prop::collection::vec(0i64..1_000, 1..60)) {
            let s = DurStats::from_durations(&mut v.clone());
            prop_assert_eq!(s.p50_ns, brute_percentile(&v, 50));
            prop_assert_eq!(s.p95_ns, brute_percentile(&v, 95));
            prop_assert_eq!(s.max_ns, *v.iter().max().unwrap());
            prop_assert_eq!(s.sum_ns, v.iter().sum::<Ns>());
            prop_assert_eq!(s.mean_ns, v.iter().sum::<Ns>() / v.len() as Ns);
            prop_assert!(s.p50_ns <= s.p95_ns && s.p95_ns <= s.max_ns);
        }
    }
}
