//! Correlation lookups for the `c` jump and the details panel: the CUDA API call and
//! the GPU operation that share a correlation id, without scanning columns.
//!
//! Built once with the render index. Correlation ids grow with time, so a lane's `corr`
//! column is almost always sorted already: such a lane is binary-searched in place and
//! costs nothing. Only a lane whose ids are out of order gets a sorted list of
//! (id, row), 8 bytes per event of that lane. Answers are those of
//! [`Trace::gpu_op_for`] and [`Trace::api_call_for`] (linear scans): among the lanes of
//! the process in lane order, the first row holding the id.

use crate::model::{EventRef, LaneKind, Trace};

/// Correlation id to event, per process.
#[derive(Debug, Clone, Default)]
pub struct CorrIndex {
    // (pid, lane) of CUDA API lanes and of GPU lanes, sorted (lane order within a pid).
    api: Vec<(u32, u32)>,
    gpu: Vec<(u32, u32)>,
    // Per lane: (corr, row) sorted, only for a lane whose corr column is out of order.
    unsorted: Vec<Vec<(u32, u32)>>,
}

impl CorrIndex {
    /// Index the CUDA API and GPU lanes of `trace`: O(events) to check the order, plus
    /// a sort of the lanes whose ids are out of order.
    pub fn build(trace: &Trace) -> Self {
        let mut ix = Self { unsorted: vec![Vec::new(); trace.lanes.len()], ..Self::default() };
        for (li, l) in trace.lanes.iter().enumerate() {
            let list = if l.kind.is_gpu() {
                &mut ix.gpu
            } else if matches!(l.kind, LaneKind::CudaApi { .. }) {
                &mut ix.api
            } else {
                continue;
            };
            list.push((l.pid, li as u32));
            if !l.ev.corr.is_sorted() {
                let mut pairs: Vec<(u32, u32)> = l.ev.corr.iter().enumerate().map(|(i, &c)| (c, i as u32)).collect();
                pairs.sort_unstable();
                ix.unsorted[li] = pairs;
            }
        }
        ix.api.sort_unstable();
        ix.gpu.sort_unstable();
        ix
    }

    /// The GPU operation launched by API call `corr` of process `pid`.
    pub fn gpu_op_for(&self, trace: &Trace, pid: u32, corr: u32) -> Option<EventRef> {
        self.find(trace, &self.gpu, pid, corr)
    }

    /// The CUDA API call with correlation id `corr` in process `pid`.
    pub fn api_call_for(&self, trace: &Trace, pid: u32, corr: u32) -> Option<EventRef> {
        self.find(trace, &self.api, pid, corr)
    }

    fn find(&self, trace: &Trace, lanes: &[(u32, u32)], pid: u32, corr: u32) -> Option<EventRef> {
        if corr == 0 {
            return None;
        }
        let lo = lanes.partition_point(|&(p, _)| p < pid);
        lanes[lo..].iter().take_while(|&&(p, _)| p == pid).find_map(|&(_, lane)| {
            let pairs = &self.unsorted[lane as usize];
            let row = if pairs.is_empty() {
                let col = &trace.lanes[lane as usize].ev.corr;
                let i = col.partition_point(|&c| c < corr);
                (col.get(i) == Some(&corr)).then_some(i as u32)
            } else {
                let i = pairs.partition_point(|&(c, _)| c < corr);
                pairs.get(i).filter(|&&(c, _)| c == corr).map(|&(_, r)| r)
            };
            row.map(|idx| EventRef { lane, idx })
        })
    }

    /// Heap bytes used.
    pub fn heap_bytes(&self) -> usize {
        (self.api.capacity() + self.gpu.capacity()) * 8
            + self.unsorted.capacity() * std::mem::size_of::<Vec<(u32, u32)>>()
            + self.unsorted.iter().map(|v| v.capacity() * 8).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Events, Lane, Strings};
    use proptest::prelude::*;

    fn lane(kind: LaneKind, pid: u32, corrs: &[u32]) -> Lane {
        let mut ev = Events::default();
        for (i, &c) in corrs.iter().enumerate() {
            ev.push(i as i64 * 10, i as i64 * 10 + 5, 0, Some(c), None, None);
        }
        Lane::new(kind, pid, ev)
    }

    proptest! {
        #[test]
        fn lookups_equal_the_linear_scans(
            lanes in prop::collection::vec((0u8..3, 1u32..3, prop::collection::vec(0u32..40, 0..30), any::<bool>()), 0..8),
            probes in prop::collection::vec((1u32..3, 0u32..42), 1..30),
        ) {
            let mut t = Trace { strings: Strings::new(), ..Trace::default() };
            for (k, pid, mut corrs, sorted) in lanes {
                if sorted {
                    corrs.sort_unstable();
                }
                let kind = match k {
                    0 => LaneKind::Kernels { device: 0, stream: 7 },
                    1 => LaneKind::CudaApi { tid: 3 },
                    _ => LaneKind::Nvtx { tid: 3, depth: 0 },
                };
                t.lanes.push(lane(kind, pid, &corrs));
            }
            let ix = CorrIndex::build(&t);
            for (pid, corr) in probes {
                prop_assert_eq!(ix.gpu_op_for(&t, pid, corr), t.gpu_op_for(pid, corr));
                prop_assert_eq!(ix.api_call_for(&t, pid, corr), t.api_call_for(pid, corr));
            }
        }
    }
}
