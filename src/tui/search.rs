//! Name search: a query becomes a set of interned-name ids, then per lane the sorted
//! rows whose name is in the set. Frames only binary-search those rows.

use crate::model::{LaneKind, Trace};

/// The state of the search.
#[derive(Debug, Clone, Default)]
pub struct Search {
    /// Text being typed after `/`, when the prompt is open.
    pub input: Option<String>,
    /// The active query (empty: none).
    pub query: String,
    /// Per lane, sorted rows whose name matches.
    pub matches: Vec<Vec<u32>>,
    /// Total number of matching events.
    pub total: usize,
}

impl Search {
    /// Run `query` (case-insensitive substring of the name, or of a kernel's demangled name).
    pub fn run(trace: &Trace, query: &str) -> Self {
        let q = query.to_lowercase();
        let mut hit = vec![false; trace.strings.len()];
        if !q.is_empty() {
            for (id, s) in trace.strings.iter() {
                hit[id as usize] = s.to_lowercase().contains(&q);
            }
        }
        let is_hit = |id: u64| hit.get(id as usize).copied().unwrap_or(false);
        let mut total = 0;
        let matches: Vec<Vec<u32>> = trace
            .lanes
            .iter()
            .map(|l| {
                let kernels = matches!(l.kind, LaneKind::Kernels { .. });
                let v: Vec<u32> = (0..l.ev.len())
                    .filter(|&i| is_hit(u64::from(l.ev.name[i])) || (kernels && is_hit(l.ev.aux(i))))
                    .map(|i| i as u32)
                    .collect();
                total += v.len();
                v
            })
            .collect();
        Self { input: None, query: query.to_string(), matches, total }
    }

    /// True when a query is active.
    pub fn active(&self) -> bool {
        !self.query.is_empty()
    }

    /// Matching rows of `lane`, if a query is active.
    pub fn lane(&self, lane: usize) -> Option<&[u32]> {
        if self.active() { self.matches.get(lane).map(Vec::as_slice) } else { None }
    }
}
