//! Transfers by direction and host memory kind, copy/compute overlap, event totals.
//!
//! A transfer row groups copies by [`MemClass`] and [`MemFlags::host_kind`] (memsets by
//! the memory kind they set). `busy_ns` is the sum of copy durations (as nsys's
//! `cuda_gpu_mem_time_sum`), `gbps` is bytes over that time (decimal GB/s: bytes/ns),
//! `max_gbps` the fastest single copy. The launching call, matched by (process,
//! correlation id), marks `async_pageable` (an async memcpy API on a copy with a
//! pageable side: the async that is not) and `sync_api` (a synchronous memcpy API).

use std::collections::BTreeMap;

use super::index::{Hints, Index};
use super::{DeviceActivity, Overlap, Totals, Transfer};
use crate::model::{ApiKind, LaneKind, MemClass, MemFlags, MemKind, Ns, Trace};
use crate::text::gbps;

/// H2D copies of at most this many bytes are asynchronous to the host even through a
/// synchronous API: nsys's `cuda_memcpy_sync` leaves them out, and so do we.
pub(crate) const SMALL_H2D_BYTES: u64 = 64 * 1024;

/// Facts about copies the findings need.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CopyFacts {
    /// Async memcpy calls on pageable memory.
    pub async_pageable: CallSet,
    /// Synchronous memcpy calls (H2D copies <= 64 KB left out).
    pub sync: CallSet,
    /// Bytes and copy time by (direction, host memory kind, size class), for
    /// comparing pageable and pinned copies of like sizes.
    pub by_size: BTreeMap<(MemClass, MemKind, u8), (u64, Ns)>,
    /// Copies with a pageable host side: (direction, start, end) on the GPU.
    pub pageable: Vec<(MemClass, Ns, Ns)>,
}

/// Size class of a copy: 0 under 64 KiB, then one class per factor of 16 (64 KiB-1 MiB,
/// 1-16 MiB, 16-256 MiB, 256 MiB and more).
pub(crate) fn size_class(bytes: u64) -> u8 {
    let mut c = 0;
    let mut limit = 64 * 1024;
    while bytes >= limit && c < 4 {
        c += 1;
        limit *= 16;
    }
    c
}

/// Label of a size class, e.g. `1-16 MiB`.
pub(crate) fn size_class_label(class: u8) -> &'static str {
    ["< 64 KiB", "64 KiB-1 MiB", "1-16 MiB", "16-256 MiB", ">= 256 MiB"][usize::from(class.min(4))]
}

/// A set of copies and the API calls that issued them.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CallSet {
    /// Number of copies.
    pub count: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Sum of copy durations on the GPU.
    pub gpu_ns: Ns,
    /// Sum of the issuing calls' durations on the CPU.
    pub api_ns: Ns,
    /// The longest issuing call: (duration, call name, pid, tid).
    pub longest: Option<(Ns, String, u32, u32)>,
    /// The issuing calls as (start, end), for the share inside the steady window.
    pub calls: Vec<(Ns, Ns)>,
}

impl CallSet {
    /// Count one copy and its issuing call.
    pub(crate) fn add(&mut self, bytes: u64, gpu: Ns, (start, end): (Ns, Ns), name: &str, pid: u32, tid: u32) {
        let api = end - start;
        self.calls.push((start, end));
        self.count += 1;
        self.bytes += bytes;
        self.gpu_ns += gpu;
        self.api_ns += api;
        if self.longest.as_ref().is_none_or(|l| api > l.0) {
            self.longest = Some((api, name.to_string(), pid, tid));
        }
    }
}

/// Transfer rows sorted by direction then memory kind, and the copy facts.
pub(crate) fn transfers(trace: &Trace, index: &Index) -> (Vec<Transfer>, CopyFacts) {
    let mut rows: BTreeMap<(MemClass, MemKind), Transfer> = BTreeMap::new();
    let mut facts = CopyFacts::default();
    let mut hints = Hints::new(trace);
    for l in &trace.lanes {
        let LaneKind::Memory { class, .. } = l.kind else { continue };
        for i in 0..l.ev.len() {
            let f = MemFlags::unpack(l.ev.flags(i));
            let memory = if class == MemClass::Memset { f.src } else { f.host_kind() };
            let (bytes, dur) = (l.ev.aux(i), l.ev.dur(i));
            let row = rows.entry((class, memory)).or_insert_with(|| empty_row(class, memory));
            row.count += 1;
            row.bytes += bytes;
            row.busy_ns += dur;
            if let Some(g) = gbps(bytes, dur) {
                row.max_gbps = row.max_gbps.max(g);
            }
            if matches!(class, MemClass::H2D | MemClass::D2H) {
                let e = facts.by_size.entry((class, memory, size_class(bytes))).or_default();
                *e = (e.0 + bytes, e.1 + dur);
                if memory == MemKind::Pageable {
                    facts.pageable.push((class, l.ev.start[i], l.ev.end(i)));
                }
            }
            let Some(call) = index.api_call(trace, l.pid, l.ev.corr(i), &mut hints) else { continue };
            let name = trace.strings.get(trace.lanes[call.at.lane as usize].ev.name[call.at.idx as usize]);
            let api = (call.start, call.end);
            if call.kind == ApiKind::MemcpyAsync && f.is_pageable() {
                row.async_pageable += 1;
                facts.async_pageable.add(bytes, dur, api, name, l.pid, call.tid);
            }
            if call.kind == ApiKind::MemcpySync {
                row.sync_api += 1;
                if !(class == MemClass::H2D && bytes <= SMALL_H2D_BYTES) {
                    facts.sync.add(bytes, dur, api, name, l.pid, call.tid);
                }
            }
        }
    }
    let mut out: Vec<Transfer> = rows.into_values().collect();
    for t in &mut out {
        t.gbps = gbps(t.bytes, t.busy_ns).unwrap_or(0.0);
    }
    (out, facts)
}

fn empty_row(direction: MemClass, memory: MemKind) -> Transfer {
    Transfer {
        direction,
        memory,
        count: 0,
        bytes: 0,
        busy_ns: 0,
        gbps: 0.0,
        max_gbps: 0.0,
        async_pageable: 0,
        sync_api: 0,
    }
}

/// Copy time (union per GPU, summed) and the part of it with a kernel on the same GPU.
pub(crate) fn overlap(devices: &[DeviceActivity]) -> Overlap {
    devices.iter().fold(Overlap::default(), |acc, d| Overlap {
        copy_ns: acc.copy_ns + d.copies.total(),
        overlapped_ns: acc.overlapped_ns + d.copies.overlap_with(&d.kernels),
    })
}

/// Event counts by kind. Graph executions count as kernels.
pub(crate) fn totals(trace: &Trace) -> Totals {
    totals_of(trace, |_| true)
}

/// Event counts of the lanes that pass `keep` (one rank's, say).
pub(crate) fn totals_of(trace: &Trace, keep: impl Fn(&crate::model::Lane) -> bool) -> Totals {
    let mut t = Totals::default();
    for l in trace.lanes.iter().filter(|l| keep(l)) {
        let n = l.ev.len() as u64;
        match l.kind {
            LaneKind::Kernels { .. } => t.kernels += n,
            LaneKind::Graphs { .. } => t.graphs += n,
            LaneKind::Memory { class: MemClass::Memset, .. } => t.memset += n,
            LaneKind::Memory { .. } => t.memcpy += n,
            LaneKind::CudaApi { .. } => t.api_calls += n,
            LaneKind::Nvtx { .. } | LaneKind::NvtxStartEnd { .. } => t.nvtx_ranges += n,
            LaneKind::Osrt { .. } => t.osrt_calls += n,
            LaneKind::NvtxMarks { .. }
            | LaneKind::Overhead { .. }
            | LaneKind::OnCpu { .. }
            | LaneKind::Samples { .. }
            | LaneKind::GpuRanges { .. } => {}
        }
    }
    t
}
