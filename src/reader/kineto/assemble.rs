//! The [`Builder`]'s rows into a [`Trace`]: CPU ranges nested into depth lanes, GPU
//! lanes split by owning process, syncs, the extent, processes, threads, GPUs and the
//! per-category counts.

use std::collections::HashMap;
use std::time::Instant;

use super::PRODUCT;
use super::builder::{Builder, CpuRange};
use super::json::{self, Stop};
use super::values::decimal;
use crate::model::{Events, Gpu, HostData, Lane, LaneKind, Meta, Process, SyncRecords, TableStat, Thread, Trace};

// The lane that only carries every event's times for the extent, removed after.
const EXTENT: LaneKind = LaneKind::Overhead { tid: u32::MAX };

/// The trace of builder `b`; `stop` is where the scan ended early, `events` how many
/// events it saw, `t0` when the load began.
pub(super) fn assemble(mut b: Builder, stop: Option<Stop>, events: usize, t0: Instant) -> Trace {
    let mut meta = Meta { nsys_version: PRODUCT.to_string(), ..Meta::default() };
    let (mut gpus, rank) = top_level(&mut meta, std::mem::take(&mut b.top));
    let mut lanes: Vec<Lane> =
        std::mem::take(&mut b.host).into_iter().map(|((k, pid), ev)| Lane::new(k, pid, ev)).collect();
    lanes.extend(nvtx_lanes(std::mem::take(&mut b.cpu)));
    lanes.extend(gpu_lanes(&mut b));
    let overhead = std::mem::take(&mut b.overhead);
    if !overhead.is_empty() {
        lanes.push(Lane::new(LaneKind::Overhead { tid: 0 }, b.owner(0), overhead));
    }
    let syncs = sync_records(&mut b, &mut lanes);
    meta.outliers = super::super::drop_outliers(&mut lanes);
    (meta.start_ns, meta.end_ns) = extent(&mut lanes);
    let processes = processes(&b, &lanes, rank);
    let threads = threads(&b, &lanes);
    used_gpus(&mut gpus, &lanes);
    let ms = t0.elapsed().as_secs_f64() * 1e3;
    tables(&mut meta, &mut b, stop, events, ms);
    let mut trace = Trace {
        meta,
        strings: b.strings,
        gpus,
        processes,
        threads,
        lanes,
        syncs,
        host: HostData::default(),
        ..Trace::default()
    };
    super::super::order_lanes(&mut trace);
    trace
}

// The top-level keys into `meta`; the GPUs of `deviceProperties` and the distributed
// (rank, world size) are returned.
fn top_level(meta: &mut Meta, top: Vec<(String, serde_json::Value)>) -> (Vec<Gpu>, Option<(u64, Option<u64>)>) {
    let mut gpus: Vec<Gpu> = Vec::new();
    let mut rank = None;
    for (k, v) in top {
        match k.as_str() {
            "schemaVersion" => meta.schema_version = v.to_string().trim_matches('"').to_string(),
            "baseTimeNanoseconds" => {
                meta.utc_epoch_ns = match &v {
                    serde_json::Value::Number(n) => decimal(n.to_string().as_bytes(), 0),
                    serde_json::Value::String(s) => decimal(s.as_bytes(), 0),
                    _ => None,
                }
                .and_then(|x| i64::try_from(x).ok())
                .unwrap_or(0);
            }
            "deviceProperties" => gpus.extend(v.as_array().into_iter().flatten().filter_map(gpu)),
            "distributedInfo" => {
                let g = |f: &str| v.get(f).and_then(serde_json::Value::as_u64);
                rank = g("rank").map(|r| (r, g("world_size")));
                // The distributed rank, as nsys exports record RANK: ranks merge by it.
                meta.env_rank = rank.map(|(r, _)| r as u32);
            }
            _ => {}
        }
    }
    (gpus, rank)
}

// One entry of `deviceProperties`, when it has an id.
fn gpu(d: &serde_json::Value) -> Option<Gpu> {
    let id = d.get("id").and_then(serde_json::Value::as_u64)?;
    Some(Gpu {
        device: id as u32,
        name: d.get("name").and_then(|n| n.as_str()).unwrap_or("").to_string(),
        sm_count: d.get("numSms").and_then(serde_json::Value::as_u64).unwrap_or(0) as u32,
        memory_bytes: d.get("totalGlobalMem").and_then(serde_json::Value::as_u64).unwrap_or(0),
    })
}

// CPU ranges as NVTX push/pop lanes, one per thread and nesting depth: sorted by start
// and longest first (ties in text order), a range's depth is the number of ranges still
// open at its start.
fn nvtx_lanes(cpu: foldhash::HashMap<(u32, u32), Vec<CpuRange>>) -> Vec<Lane> {
    let mut threads: Vec<_> = cpu.into_iter().collect();
    threads.sort_unstable_by_key(|t| t.0);
    let mut lanes = Vec::new();
    let mut stack: Vec<i64> = Vec::new();
    for ((pid, tid), mut ranges) in threads {
        // Kineto writes a thread's ranges nearly in order: a stable sort merges its runs.
        ranges.sort_by_key(|r| (r.start, std::cmp::Reverse(r.end)));
        stack.clear();
        let mut depths: Vec<Events> = Vec::new();
        for r in &ranges {
            while stack.last().is_some_and(|&e| e <= r.start) {
                stack.pop();
            }
            let depth = stack.len().min(usize::from(u16::MAX));
            stack.push(r.end);
            if depths.len() <= depth {
                depths.resize_with(depth + 1, Events::default);
            }
            let domain = if r.user { 0 } else { crate::model::OPERATOR_DOMAIN };
            depths[depth].push(r.start, r.end, r.name, None, None, Some(domain));
        }
        let kind = |depth: usize| LaneKind::Nvtx { tid, depth: depth as u16 };
        lanes.extend(depths.into_iter().enumerate().map(|(d, ev)| Lane::new(kind(d), pid, ev)));
    }
    lanes
}

// GPU lanes, split by the process whose API call launched each operation.
fn gpu_lanes(b: &mut Builder) -> Vec<Lane> {
    let mut lanes = Vec::new();
    for (kind, ev) in std::mem::take(&mut b.gpu) {
        if b.other_pid.is_empty() {
            lanes.push(Lane::new(kind, b.owner(0), ev));
            continue;
        }
        let mut by_pid: HashMap<u32, Events> = HashMap::new();
        for i in 0..ev.len() {
            let f = ev.has_flags().then(|| ev.flags(i));
            by_pid.entry(b.owner(ev.corr[i])).or_default().push(
                ev.start[i],
                ev.end(i),
                ev.name[i],
                Some(ev.corr[i]),
                Some(ev.aux(i)),
                f,
            );
        }
        // In pid order: lanes of one kind differ only by process, and the lane order
        // keeps ties as they come.
        let mut by_pid: Vec<(u32, Events)> = by_pid.into_iter().collect();
        by_pid.sort_unstable_by_key(|p| p.0);
        lanes.extend(by_pid.into_iter().map(|(pid, ev)| Lane::new(kind, pid, ev)));
    }
    lanes
}

// Syncs per owning process. They, the events of no lane and all lanes set the extent:
// their times go to an extent lane added to `lanes`.
fn sync_records(b: &mut Builder, lanes: &mut Vec<Lane>) -> Vec<SyncRecords> {
    let mut syncs: HashMap<u32, Events> = HashMap::new();
    let mut extra = std::mem::take(&mut b.extra);
    for s in std::mem::take(&mut b.syncs) {
        extra.push(s.start, s.end, 0, None, None, None);
        syncs.entry(b.owner(s.corr)).or_default().push(s.start, s.end, s.name, Some(s.corr), Some(s.aux), Some(s.ty));
    }
    lanes.push(Lane::new(EXTENT, u32::MAX, extra));
    syncs
        .into_iter()
        .map(|(pid, mut ev)| {
            ev.sort_by_start();
            SyncRecords { pid, ev }
        })
        .collect()
}

// First start and last end over all lanes; the extent lane is removed.
fn extent(lanes: &mut Vec<Lane>) -> (i64, i64) {
    let start = lanes.iter().filter_map(|l| l.ev.start.first()).min().copied().unwrap_or(0);
    let end = lanes.iter().filter_map(|l| l.ev.ends().max()).max().unwrap_or(start).max(start);
    lanes.retain(|l| !(l.kind == EXTENT && l.pid == u32::MAX));
    (start, end)
}

// The processes with lanes, named by their metadata and the distributed rank.
fn processes(b: &Builder, lanes: &[Lane], rank: Option<(u64, Option<u64>)>) -> Vec<Process> {
    let mut pids: Vec<u32> = lanes.iter().map(|l| l.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    let rank_label = rank.map(|(r, w)| match w {
        Some(w) => format!("rank {r} of {w}"),
        None => format!("rank {r}"),
    });
    pids.iter()
        .map(|&pid| {
            let base = b.process_names.get(&pid).cloned().unwrap_or_default();
            let name = match &rank_label {
                Some(r) if base.is_empty() => r.clone(),
                Some(r) => format!("{base} ({r})"),
                None => base,
            };
            Process { pid, name }
        })
        .collect()
}

// The threads with lanes, named by their metadata.
fn threads(b: &Builder, lanes: &[Lane]) -> Vec<Thread> {
    let mut tids: Vec<(u32, u32)> = lanes.iter().filter_map(|l| l.kind.tid().map(|t| (l.pid, t))).collect();
    tids.sort_unstable();
    tids.dedup();
    tids.into_iter()
        .map(|(pid, tid)| Thread { pid, tid, name: b.thread_names.get(&(pid, tid)).cloned().unwrap_or_default() })
        .collect()
}

// Keep the described GPUs that have lanes, add those that have lanes only; by device.
fn used_gpus(gpus: &mut Vec<Gpu>, lanes: &[Lane]) {
    let mut used: Vec<u32> = lanes.iter().filter_map(|l| l.kind.shown_with_gpu()).collect();
    used.sort_unstable();
    used.dedup();
    gpus.retain(|g| used.contains(&g.device));
    for d in used {
        if !gpus.iter().any(|g| g.device == d) {
            gpus.push(Gpu { device: d, ..Gpu::default() });
        }
    }
    gpus.sort_by_key(|g| g.device);
    gpus.dedup_by_key(|g| g.device);
}

// The load's table statistics: all events, per category, the unreadable, where it stopped.
fn tables(meta: &mut Meta, b: &mut Builder, stop: Option<Stop>, events: usize, ms: f64) {
    meta.tables.push(TableStat { name: "traceEvents".to_string(), rows: events, ms });
    b.counts.sort();
    for (k, n) in &b.counts {
        meta.tables.push(TableStat { name: format!("  {}", k.trim()), rows: *n, ms: 0.0 });
    }
    if b.no_time > 0 {
        meta.tables.push(TableStat {
            name: "  X events without a readable ts (skipped)".into(),
            rows: b.no_time,
            ms: 0.0,
        });
    }
    if b.oversized > 0 {
        let name = format!("  events over {} MiB (skipped)", json::MAX_ITEM >> 20);
        meta.tables.push(TableStat { name, rows: b.oversized, ms: 0.0 });
    }
    meta.unreadable_events = (b.no_time + b.oversized) as u64;
    if let Some(s) = stop {
        let name = format!("stopped at byte {}: {} (events before it kept)", s.offset, s.reason);
        meta.tables.push(TableStat { name, rows: events, ms: 0.0 });
    }
}
