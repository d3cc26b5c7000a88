//! Lookups built once per analysis: CUDA API calls and GPU operations by (process,
//! correlation id), the API lane of each thread, and which GPUs each process used.
//!
//! Correlation ids grow with time, so a lane's `corr` column is almost always sorted
//! already: such a lane is searched in place and costs no memory. Only a lane whose ids
//! are out of order gets a sorted list of (id, row). Searches gallop from a [`Hints`]
//! position, so lookups made in time order stay cheap on lanes of millions of rows
//! (a plain binary search there misses the cache at every step).

use std::ops::Range;

use itertools::Either;

use super::intervals::partition_near;

use crate::model::{ApiKind, EventRef, LaneKind, MemClass, MemFlags, Ns, Trace};

/// A CUDA API call found by correlation id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApiCall {
    /// Where the call is in the trace.
    pub at: EventRef,
    /// Thread that made the call.
    pub tid: u32,
    /// Call start.
    pub start: Ns,
    /// Call end.
    pub end: Ns,
    /// What the call does.
    pub kind: ApiKind,
}

/// Correlation lookups and per-process GPU usage.
#[derive(Debug, Default)]
pub struct Index {
    // (pid, tid, lane) of CUDA API lanes, sorted by pid, then largest lane first.
    api: Vec<(u32, u32, usize)>,
    // (pid, lane) of copy lanes (memory lanes but memsets), sorted.
    copies: Vec<(u32, usize)>,
    // (pid, lane) of GPU lanes, sorted.
    gpu: Vec<(u32, usize)>,
    // Per lane: (corr, row) sorted, for a lane whose corr column is out of order.
    unsorted: Vec<Vec<(u32, u32)>>,
    // (pid, device) pairs that have GPU lanes, sorted.
    pid_devices: Vec<(u32, u32)>,
}

/// Row positions per lane where the previous search ended; searches start from there.
#[derive(Debug, Clone)]
pub struct Hints(Vec<usize>);

impl Hints {
    /// One position per lane of `trace`, all at 0.
    pub fn new(trace: &Trace) -> Self {
        Self(vec![0; trace.lanes.len()])
    }

    /// Partition point of `pred` in column `v` of lane `li`, searched from the hint,
    /// which then moves there.
    pub fn find<T>(&mut self, li: usize, v: &[T], pred: impl Fn(&T) -> bool) -> usize {
        let i = partition_near(v, self.0[li], pred);
        self.0[li] = i;
        i
    }
}

impl Index {
    /// Build the lookups for `trace`.
    pub fn build(trace: &Trace) -> Self {
        let mut ix = Self { unsorted: vec![Vec::new(); trace.lanes.len()], ..Self::default() };
        for (li, lane) in trace.lanes.iter().enumerate() {
            #[allow(
                clippy::wildcard_enum_match_arm,
                reason = "a filter: only API lanes and copy lanes (not memsets) are listed here"
            )]
            match lane.kind {
                LaneKind::CudaApi { tid } => ix.api.push((lane.pid, tid, li)),
                LaneKind::Memory { class, .. } if class != MemClass::Memset => ix.copies.push((lane.pid, li)),
                _ => {}
            }
            if let Some(d) = lane.kind.gpu_work_device() {
                ix.gpu.push((lane.pid, li));
                ix.pid_devices.push((lane.pid, d));
            }
            let corr = &lane.ev.corr;
            if !corr.is_sorted() {
                let mut pairs: Vec<(u32, u32)> = corr.iter().enumerate().map(|(i, &c)| (c, i as u32)).collect();
                pairs.sort_unstable();
                ix.unsorted[li] = pairs;
            }
        }
        ix.api.sort_unstable_by_key(|&(pid, _, li)| (pid, std::cmp::Reverse(trace.lanes[li].ev.len()), li));
        ix.copies.sort_unstable();
        ix.gpu.sort_unstable();
        ix.pid_devices.sort_unstable();
        ix.pid_devices.dedup();
        ix
    }

    /// Rows of lane `li` with correlation id `corr`, in row order for a sorted lane.
    pub fn rows<'a>(
        &'a self,
        trace: &'a Trace,
        li: usize,
        corr: u32,
        hints: &mut Hints,
    ) -> Either<Range<usize>, impl Iterator<Item = usize> + 'a> {
        let pairs = &self.unsorted[li];
        if pairs.is_empty() {
            let col = &trace.lanes[li].ev.corr;
            let lo = hints.find(li, col, |&c| c < corr);
            let n = col[lo..].iter().take_while(|&&c| c == corr).count();
            Either::Left(lo..lo + n)
        } else {
            let lo = pairs.partition_point(|&(c, _)| c < corr);
            Either::Right(pairs[lo..].iter().take_while(move |&&(c, _)| c == corr).map(|&(_, i)| i as usize))
        }
    }

    // First row of lane `li` with correlation id `corr`, by a plain binary search (for
    // one-off lookups, such as the viewer's, that have no time order to gallop along).
    fn first_row(&self, trace: &Trace, li: usize, corr: u32) -> Option<usize> {
        let pairs = &self.unsorted[li];
        if pairs.is_empty() {
            let col = &trace.lanes[li].ev.corr;
            let i = col.partition_point(|&c| c < corr);
            (col.get(i) == Some(&corr)).then_some(i)
        } else {
            let i = pairs.partition_point(|&(c, _)| c < corr);
            pairs.get(i).filter(|&&(c, _)| c == corr).map(|&(_, r)| r as usize)
        }
    }

    /// The GPU operation launched by API call `corr` of `pid`: the same answer as
    /// [`Trace::gpu_op_for`], without its scan.
    pub fn gpu_op_at(&self, trace: &Trace, pid: u32, corr: u32) -> Option<EventRef> {
        if corr == 0 {
            return None;
        }
        Self::of_pid(&self.gpu, pid)
            .find_map(|li| self.first_row(trace, li, corr).map(|j| EventRef { lane: li as u32, idx: j as u32 }))
    }

    /// The CUDA API call with correlation id `corr` in `pid`: the same answer as
    /// [`Trace::api_call_for`], without its scan.
    pub fn api_call_at(&self, trace: &Trace, pid: u32, corr: u32) -> Option<EventRef> {
        if corr == 0 {
            return None;
        }
        // `api` puts the busiest lane first; the answer is the first lane in lane order.
        let lo = self.api.partition_point(|&(p, _, _)| p < pid);
        self.api[lo..]
            .iter()
            .take_while(|&&(p, _, _)| p == pid)
            .filter_map(|&(_, _, li)| {
                self.first_row(trace, li, corr).map(|j| EventRef { lane: li as u32, idx: j as u32 })
            })
            .min_by_key(|r| r.lane)
    }

    /// Heap bytes used.
    pub fn heap_bytes(&self) -> usize {
        self.api.capacity() * std::mem::size_of::<(u32, u32, usize)>()
            + (self.copies.capacity() + self.gpu.capacity()) * std::mem::size_of::<(u32, usize)>()
            + self.unsorted.capacity() * std::mem::size_of::<Vec<(u32, u32)>>()
            + self.unsorted.iter().map(|v| v.capacity() * 8).sum::<usize>()
            + self.pid_devices.capacity() * 8
    }

    // Lanes of `pid` in a (pid, lane) list.
    fn of_pid(list: &[(u32, usize)], pid: u32) -> impl Iterator<Item = usize> + '_ {
        let lo = list.partition_point(|&(p, _)| p < pid);
        list[lo..].iter().take_while(move |&&(p, _)| p == pid).map(|&(_, li)| li)
    }

    /// The API call of process `pid` with correlation id `corr` (None for 0 or unknown).
    pub fn api_call(&self, trace: &Trace, pid: u32, corr: u32, hints: &mut Hints) -> Option<ApiCall> {
        if corr == 0 {
            return None;
        }
        let lo = self.api.partition_point(|&(p, _, _)| p < pid);
        self.api[lo..].iter().take_while(|&&(p, _, _)| p == pid).find_map(|&(_, tid, li)| {
            let j = self.rows(trace, li, corr, hints).next()?;
            let ev = &trace.lanes[li].ev;
            Some(ApiCall {
                at: EventRef { lane: li as u32, idx: j as u32 },
                tid,
                start: ev.start[j],
                end: ev.end(j),
                kind: ApiKind::from_flags(ev.flags(j)),
            })
        })
    }

    /// Memory kinds of the copy launched by API call `corr` of `pid`, if it made one.
    pub fn copy_flags(&self, trace: &Trace, pid: u32, corr: u32, hints: &mut Hints) -> Option<MemFlags> {
        if corr == 0 {
            return None;
        }
        Self::of_pid(&self.copies, pid).find_map(|li| {
            let j = self.rows(trace, li, corr, hints).next()?;
            Some(MemFlags::unpack(trace.lanes[li].ev.flags(j)))
        })
    }

    /// The CUDA API lane of thread `tid` of `pid`.
    pub fn api_lane(&self, pid: u32, tid: u32) -> Option<usize> {
        let lo = self.api.partition_point(|&(p, _, _)| p < pid);
        self.api[lo..].iter().take_while(|&&(p, _, _)| p == pid).find(|&&(_, t, _)| t == tid).map(|&(_, _, li)| li)
    }

    /// GPU lanes (kernels, memory, graphs) of process `pid`.
    pub fn gpu_lanes(&self, pid: u32) -> impl Iterator<Item = usize> + '_ {
        Self::of_pid(&self.gpu, pid)
    }

    /// GPUs that process `pid` ran work on, sorted.
    pub fn devices_of(&self, pid: u32) -> impl Iterator<Item = u32> + '_ {
        let lo = self.pid_devices.partition_point(|&(p, _)| p < pid);
        self.pid_devices[lo..].iter().take_while(move |&&(p, _)| p == pid).map(|&(_, d)| d)
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
        fn one_off_lookups_equal_the_linear_scans(
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
            let ix = Index::build(&t);
            for (pid, corr) in probes {
                prop_assert_eq!(ix.gpu_op_at(&t, pid, corr), t.gpu_op_for(pid, corr));
                prop_assert_eq!(ix.api_call_at(&t, pid, corr), t.api_call_for(pid, corr));
            }
        }
    }
}
