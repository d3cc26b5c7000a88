//! The longest gaps, in the one order the outputs list them: the report's top gaps and
//! the pictures' gap picks (`snapshot --gap N`, the HTML pages).

use super::Gap;

/// The `n` longest gaps, longest first (earlier first on ties).
pub(crate) fn top_gaps(gaps: &[Gap], n: usize) -> Vec<&Gap> {
    let mut v: Vec<&Gap> = gaps.iter().collect();
    v.sort_by_key(|g| (std::cmp::Reverse(g.dur()), g.start, g.device));
    v.truncate(n);
    v
}
