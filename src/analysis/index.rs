//! Lookups built once per analysis: CUDA API calls by (process, correlation id), the
//! copies' memory kinds by the same key, and which GPUs each process used.
//!
//! Keys are `pid << 32 | corr` in sorted vectors searched by binary search: no per-event
//! hash map, and building is one sort.

use crate::model::{ApiKind, EventRef, LaneKind, MemFlags, Ns, Trace};

fn key(pid: u32, corr: u32) -> u64 {
    (u64::from(pid) << 32) | u64::from(corr)
}

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
    // Sorted by key.
    api: Vec<(u64, EventRef)>,
    copies: Vec<(u64, u32)>,
    // (pid, device) pairs that have GPU lanes, sorted.
    pid_devices: Vec<(u32, u32)>,
}

impl Index {
    /// Build the lookups for `trace`.
    pub fn build(trace: &Trace) -> Self {
        let calls = trace.lanes.iter().filter(|l| matches!(l.kind, LaneKind::CudaApi { .. })).map(|l| l.ev.len()).sum();
        let mut api: Vec<(u64, EventRef)> = Vec::with_capacity(calls);
        let mut copies: Vec<(u64, u32)> = Vec::new();
        let mut pid_devices = Vec::new();
        for (li, lane) in trace.lanes.iter().enumerate() {
            match lane.kind {
                LaneKind::CudaApi { .. } => api.extend(
                    lane.ev
                        .corr
                        .iter()
                        .enumerate()
                        .filter(|&(_, &c)| c != 0)
                        .map(|(i, &c)| (key(lane.pid, c), EventRef { lane: li as u32, idx: i as u32 })),
                ),
                LaneKind::Memory { class, .. } if class != crate::model::MemClass::Memset => {
                    copies.extend((0..lane.ev.len()).map(|i| (key(lane.pid, lane.ev.corr(i)), lane.ev.flags(i))));
                }
                _ => {}
            }
            if let Some(d) = lane.kind.device() {
                pid_devices.push((lane.pid, d));
            }
        }
        api.sort_unstable_by_key(|&(k, _)| k);
        copies.sort_unstable_by_key(|&(k, _)| k);
        pid_devices.sort_unstable();
        pid_devices.dedup();
        Self { api, copies, pid_devices }
    }

    /// The API call of process `pid` with correlation id `corr` (None for 0 or unknown).
    pub fn api_call(&self, trace: &Trace, pid: u32, corr: u32) -> Option<ApiCall> {
        if corr == 0 {
            return None;
        }
        let k = key(pid, corr);
        let i = self.api.partition_point(|&(x, _)| x < k);
        let at = self.api.get(i).filter(|&&(x, _)| x == k)?.1;
        let lane = &trace.lanes[at.lane as usize];
        let j = at.idx as usize;
        Some(ApiCall {
            at,
            tid: lane.kind.tid().unwrap_or(0),
            start: lane.ev.start[j],
            end: lane.ev.end[j],
            kind: ApiKind::from_flags(lane.ev.flags(j)),
        })
    }

    /// Memory kinds of the copy launched by API call `corr` of `pid`, if it made one.
    pub fn copy_flags(&self, pid: u32, corr: u32) -> Option<MemFlags> {
        if corr == 0 {
            return None;
        }
        let k = key(pid, corr);
        let i = self.copies.partition_point(|&(x, _)| x < k);
        self.copies.get(i).filter(|&&(x, _)| x == k).map(|&(_, f)| MemFlags::unpack(f))
    }

    /// GPUs that process `pid` ran work on, sorted.
    pub fn devices_of(&self, pid: u32) -> impl Iterator<Item = u32> + '_ {
        let lo = self.pid_devices.partition_point(|&(p, _)| p < pid);
        self.pid_devices[lo..].iter().take_while(move |&&(p, _)| p == pid).map(|&(_, d)| d)
    }
}
