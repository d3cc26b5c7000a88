//! Findings: nsys analyze's rules with lanescope's thresholds, and our own.
//!
//! Shares below are of the *GPU span*: the sum over GPUs of first-operation-start to
//! last-operation-end. No rule fires on a trace without GPU operations.
//!
//! | rule | fires when | severity |
//! |---|---|---|
//! | `cuda_memcpy_async` | a copy with a pageable side was issued by an async memcpy API | critical if those calls took >= 10% of the span, warning >= 1%, else info |
//! | `cuda_memcpy_sync` | a synchronous memcpy API issued a copy (H2D <= 64 KB left out, as nsys does) | same as above |
//! | `cuda_api_sync` | `cudaDeviceSynchronize*` / `cudaStreamSynchronize*` were called (as nsys) | by the GPU idle time they caused (sync-wait gaps): critical >= 25% of the span, warning >= 5%, else info (a sync while the GPU is busy costs little) |
//! | `gpu_gaps` | a gap >= min-gap (ours: 100 us by default; nsys: 500 ms) | critical if gaps are >= 50% of the span, warning >= 20%, else info |
//! | `gpu_time_util` | a GPU's span, cut into 30 chunks, has chunks under 50% busy; consecutive low chunks merge into one region | warning if half the chunks or more are low, else info |
//! | `starvation` | an instance of the step phase holds >= min-gap of gaps | critical if >= 50% of the steps starved, warning >= 20%, else info |
//! | `pageable_bandwidth` | the trace moved >= 1 MB of pageable H2D | warning when pinned H2D (>= 1 MB) in the same trace is >= 2x faster, else info |
//!
//! `gpu_time_util` uses the busy union (at most 100% per chunk), where nsys sums
//! operation time across streams (so its chunks can exceed 100%).
//!
//! The *step phase* is the outermost NVTX phase (grouped names, depth 0) with at least
//! 3 instances, preferring names with `step`, `iter` or `batch`, then the most
//! instances, then the largest wall time.

use std::collections::HashMap;

use super::gaps::Explainer;
use super::index::Index;
use super::phases::{Instance, PhaseCtx, instances};
use super::transfers::{CallSet, CopyFacts};
use super::{Cause, DeviceActivity, Finding, Gap, Options, Severity, Transfer};
use crate::model::{MemClass, MemKind, Ns, Trace};
use crate::units::{fmt_bytes, fmt_ns, gbps};

/// Chunks of `gpu_time_util`.
pub const UTIL_CHUNKS: i64 = 30;
/// Utilization under which a chunk is low, percent.
pub const UTIL_LOW_PCT: f64 = 50.0;
/// Fewest bytes for a bandwidth comparison.
pub const BANDWIDTH_MIN_BYTES: u64 = 1_000_000;

/// Everything the rules look at.
pub struct Inputs<'a> {
    /// The trace.
    pub trace: &'a Trace,
    /// Lookups.
    pub index: &'a Index,
    /// GPU unions.
    pub devices: &'a [DeviceActivity],
    /// Gaps with causes.
    pub gaps: &'a [Gap],
    /// Transfer rows.
    pub transfers: &'a [Transfer],
    /// Copy facts.
    pub copies: &'a CopyFacts,
    /// Phase helpers (starved instances).
    pub phases: &'a PhaseCtx<'a>,
    /// Options.
    pub options: &'a Options,
}

/// Run every rule; most severe first, rule order within a severity. `explainer` is the
/// one that found the gaps.
pub fn findings(x: &Inputs<'_>, explainer: &mut Explainer<'_>) -> Vec<Finding> {
    let span: Ns = x.devices.iter().filter_map(DeviceActivity::extent).map(|(a, b)| b - a).sum();
    if span <= 0 {
        return Vec::new();
    }
    let mut out: Vec<Finding> = [
        memcpy_async(x, span),
        memcpy_sync(x, span),
        api_sync(x, span),
        gpu_gaps(x, span),
        time_util(x),
        starvation(x, explainer),
        pageable_bandwidth(x),
    ]
    .into_iter()
    .flatten()
    .collect();
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out
}

fn by_share(share: f64, critical: f64, warning: f64) -> Severity {
    if share >= critical {
        Severity::Critical
    } else if share >= warning {
        Severity::Warning
    } else {
        Severity::Info
    }
}

fn ev(k: &str, v: &impl ToString) -> (String, String) {
    (k.to_string(), v.to_string())
}

fn pct(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

/// What to do about gaps of each cause.
pub fn cause_fix(cause: Cause) -> &'static str {
    match cause {
        Cause::SyncWait => {
            "Remove per-step synchronization (loss.item(), .cpu(), torch.cuda.synchronize(), cudaDeviceSynchronize) \
             or do it every N steps; order streams with events (cudaStreamWaitEvent) instead of host waits."
        }
        Cause::PageableCopy => {
            "Copy from pinned memory: DataLoader(pin_memory=True) or cudaHostAlloc/cudaHostRegister, then \
             .to(device, non_blocking=True) / cudaMemcpyAsync so the copy overlaps compute."
        }
        Cause::HostWait => {
            "The launching thread waits for input: raise DataLoader num_workers, set persistent_workers=True and \
             prefetch_factor, or move decoding and augmentation to the GPU (DALI, torchvision v2 on GPU)."
        }
        Cause::HostBusy => {
            "The launching thread is busy with CPU work between launches: move preprocessing into DataLoader \
             workers, drop per-step host work (logging, Python loops over tensors), and profile the host with \
             nsys --sample=cpu or py-spy."
        }
        Cause::LaunchBound => {
            "Kernels are shorter than their launch overhead: capture the step in a CUDA graph \
             (torch.cuda.graphs / torch.compile mode=\"reduce-overhead\"), fuse small kernels, or raise the batch size."
        }
        Cause::Unknown => {
            "Trace the CPU side to explain the idle time: nsys profile --trace=cuda,nvtx,osrt --sample=cpu, and \
             check cross-stream dependencies (cudaStreamWaitEvent)."
        }
    }
}

fn call_set_evidence(s: &CallSet, trace: &Trace) -> Vec<(String, String)> {
    let mut e = vec![ev("copies", &s.count), ev("bytes", &s.bytes), ev("gpu_ns", &s.gpu_ns), ev("api_ns", &s.api_ns)];
    if let Some((d, name, pid, tid)) = &s.longest {
        e.push(ev("longest_call", &format!("{name} {} on {}", fmt_ns(*d), trace.thread_label(*pid, *tid))));
    }
    e
}

fn memcpy_async(x: &Inputs<'_>, span: Ns) -> Option<Finding> {
    let s = &x.copies.async_pageable;
    (s.count > 0).then(|| Finding {
        rule: "cuda_memcpy_async",
        severity: by_share(s.api_ns as f64 / span as f64, 0.10, 0.01),
        message: format!(
            "{} async memcpy calls used pageable memory ({}): they ran synchronously, blocking the host for {}",
            s.count,
            fmt_bytes(s.bytes),
            fmt_ns(s.api_ns)
        ),
        evidence: call_set_evidence(s, x.trace),
        fix: cause_fix(Cause::PageableCopy).to_string(),
    })
}

fn memcpy_sync(x: &Inputs<'_>, span: Ns) -> Option<Finding> {
    let s = &x.copies.sync;
    (s.count > 0).then(|| Finding {
        rule: "cuda_memcpy_sync",
        severity: by_share(s.api_ns as f64 / span as f64, 0.10, 0.01),
        message: format!(
            "{} synchronous memcpy calls ({}) blocked the host for {} (H2D copies <= 64 KB not counted)",
            s.count,
            fmt_bytes(s.bytes),
            fmt_ns(s.api_ns)
        ),
        evidence: call_set_evidence(s, x.trace),
        fix: "Use cudaMemcpyAsync on a non-default stream with pinned host memory (PyTorch: \
              .to(device, non_blocking=True) from pinned tensors) and synchronize only where the result is needed."
            .to_string(),
    })
}

fn api_sync(x: &Inputs<'_>, span: Ns) -> Option<Finding> {
    let mut n = 0u64;
    let mut total: Ns = 0;
    let mut longest: Option<(Ns, &str, u32, u32)> = None;
    // Per name id: whether it is a device or stream synchronize (names repeat millions of times).
    let mut is_sync: Vec<Option<bool>> = vec![None; x.trace.strings.len()];
    for l in &x.trace.lanes {
        let crate::model::LaneKind::CudaApi { tid } = l.kind else { continue };
        for i in 0..l.ev.len() {
            let name = x.trace.strings.get(l.ev.name[i]);
            let cached = is_sync.get_mut(l.ev.name[i] as usize);
            if !cached.map_or_else(|| sync_name(name), |c| *c.get_or_insert_with(|| sync_name(name))) {
                continue;
            }
            n += 1;
            total += l.ev.dur(i);
            if longest.is_none_or(|b| l.ev.dur(i) > b.0) {
                longest = Some((l.ev.dur(i), name, l.pid, tid));
            }
        }
    }
    let (d, name, pid, tid) = longest?;
    let idle: Ns = x.gaps.iter().filter(|g| g.cause == Cause::SyncWait).map(Gap::dur).sum();
    Some(Finding {
        rule: "cuda_api_sync",
        severity: by_share(idle as f64 / span as f64, 0.25, 0.05),
        message: format!(
            "{n} cudaDeviceSynchronize/cudaStreamSynchronize calls blocked the host for {}",
            fmt_ns(total)
        ),
        evidence: vec![
            ev("calls", &n),
            ev("total_ns", &total),
            ev("sync_wait_idle_ns", &idle),
            ev("longest_call", &format!("{name} {} on {}", fmt_ns(d), x.trace.thread_label(pid, tid))),
        ],
        fix: cause_fix(Cause::SyncWait).to_string(),
    })
}

fn sync_name(name: &str) -> bool {
    name.starts_with("cudaDeviceSynchronize") || name.starts_with("cudaStreamSynchronize")
}

// Cause with the most gap time, with that time.
fn dominant_cause<'g>(gaps: impl Iterator<Item = &'g Gap>) -> Option<(Cause, Ns)> {
    let mut t = [0 as Ns; 6];
    for g in gaps {
        t[g.cause as usize] += g.dur();
    }
    Cause::ALL.into_iter().map(|c| (c, t[c as usize])).filter(|&(_, v)| v > 0).rev().max_by_key(|&(_, v)| v)
}

fn gpu_gaps(x: &Inputs<'_>, span: Ns) -> Option<Finding> {
    let longest = x.gaps.iter().max_by_key(|g| g.dur())?;
    let idle: Ns = x.gaps.iter().map(Gap::dur).sum();
    let share = idle as f64 / span as f64;
    let (cause, cause_ns) = dominant_cause(x.gaps.iter())?;
    let place = longest.phase.as_deref().map_or("outside any NVTX range".to_string(), |p| format!("in `{p}`"));
    // One long gap (start-up, a checkpoint) can dominate: say so.
    let alone = if 2 * longest.dur() >= idle && x.gaps.len() > 1 {
        format!(
            "; the longest alone is {} ({}, {place})",
            fmt_ns(longest.dur()),
            pct(longest.dur() as f64 / idle as f64)
        )
    } else {
        String::new()
    };
    Some(Finding {
        rule: "gpu_gaps",
        severity: by_share(share, 0.5, 0.2),
        message: format!(
            "{} gap{} >= {} left the GPU idle for {} ({} of the GPU span); {} of it is {}{alone}",
            x.gaps.len(),
            if x.gaps.len() == 1 { "" } else { "s" },
            fmt_ns(x.options.min_gap_ns),
            fmt_ns(idle),
            pct(share),
            pct(cause_ns as f64 / idle as f64),
            cause.label()
        ),
        evidence: vec![
            ev("gaps", &x.gaps.len()),
            ev("min_gap_ns", &x.options.min_gap_ns),
            ev("idle_ns", &idle),
            ev("span_ns", &span),
            ev("dominant_cause", &cause.label()),
            ev(
                "longest_gap",
                &format!(
                    "{} at +{} on GPU {} ({}, {place})",
                    fmt_ns(longest.dur()),
                    fmt_ns(longest.start - x.trace.meta.start_ns),
                    longest.device,
                    longest.cause.label(),
                ),
            ),
        ],
        fix: cause_fix(cause).to_string(),
    })
}

/// Low-utilization regions of one GPU: (start, end, utilization %) after merging.
pub fn low_util_regions(d: &DeviceActivity) -> (usize, Vec<(Ns, Ns, f64)>) {
    let Some((lo, hi)) = d.extent() else { return (0, Vec::new()) };
    let size = (hi - lo + UTIL_CHUNKS - 1) / UTIL_CHUNKS;
    let mut low = 0;
    let mut regions: Vec<(Ns, Ns, f64)> = Vec::new();
    let mut prev_low = false;
    for i in 0..UTIL_CHUNKS {
        let (a, b) = (lo + i * size, (lo + (i + 1) * size).min(hi));
        if b <= a {
            break;
        }
        let busy = d.busy.busy_in(a, b);
        let util = 100.0 * busy as f64 / (b - a) as f64;
        let is_low = util < UTIL_LOW_PCT;
        if is_low {
            low += 1;
            match regions.last_mut() {
                // Size-weighted average of the merged chunks.
                Some(r) if prev_low => {
                    let (w0, w1) = ((r.1 - r.0) as f64, (b - a) as f64);
                    *r = (r.0, b, (r.2 * w0 + util * w1) / (w0 + w1));
                }
                _ => regions.push((a, b, util)),
            }
        }
        prev_low = is_low;
    }
    (low, regions)
}

fn time_util(x: &Inputs<'_>) -> Option<Finding> {
    let mut worst: Option<(u32, Ns, Ns, f64)> = None;
    let (mut low, mut chunks, mut nregions) = (0usize, 0usize, 0usize);
    for d in x.devices {
        let (l, regions) = low_util_regions(d);
        low += l;
        chunks += if d.extent().is_some() { UTIL_CHUNKS as usize } else { 0 };
        nregions += regions.len();
        for r in regions {
            if worst.is_none_or(|w| (r.1 - r.0) as f64 * (100.0 - r.2) > (w.2 - w.1) as f64 * (100.0 - w.3)) {
                worst = Some((d.device, r.0, r.1, r.2));
            }
        }
    }
    let (device, a, b, util) = worst?;
    let in_low = x.gaps.iter().filter(|g| g.device == device && g.start < b && g.end > a);
    let cause = dominant_cause(in_low).map_or(Cause::Unknown, |c| c.0);
    Some(Finding {
        rule: "gpu_time_util",
        severity: if 2 * low >= chunks { Severity::Warning } else { Severity::Info },
        message: format!(
            "{low} of {chunks} time chunks ran the GPU under {UTIL_LOW_PCT:.0}% busy, in {nregions} region{}; \
             the worst: {} at {util:.1}% on GPU {device}",
            if nregions == 1 { "" } else { "s" },
            fmt_ns(b - a)
        ),
        evidence: vec![
            ev("low_chunks", &low),
            ev("chunks", &chunks),
            ev("regions", &nregions),
            ev("worst_offset_ns", &(a - x.trace.meta.start_ns)),
            ev("worst_dur_ns", &(b - a)),
            ev("worst_util_pct", &format!("{util:.1}")),
            ev("worst_cause", &cause.label()),
        ],
        fix: cause_fix(cause).to_string(),
    })
}

/// The step phase (see the module doc) and its outermost instances.
pub fn step_phase(trace: &Trace) -> Option<(String, Vec<Instance>)> {
    let stepish = |n: &str| {
        let n = n.to_ascii_lowercase();
        ["step", "iter", "batch"].iter().any(|k| n.contains(k))
    };
    instances(trace, false)
        .into_iter()
        .map(|(name, inst)| (name, inst.into_iter().filter(|i| i.depth == 0).collect::<Vec<_>>()))
        .filter(|(_, inst)| inst.len() >= 3)
        .max_by_key(|(name, inst)| {
            let wall: Ns = inst.iter().map(|i| i.end - i.start).sum();
            (stepish(name), inst.len(), wall, std::cmp::Reverse(name.clone()))
        })
}

fn starvation(x: &Inputs<'_>, explainer: &mut Explainer<'_>) -> Option<Finding> {
    let (name, steps) = step_phase(x.trace)?;
    // Gaps of each device in start order: those overlapping a step are one range.
    let by_device: Vec<Vec<&Gap>> =
        x.devices.iter().map(|d| x.gaps.iter().filter(|g| g.device == d.device).collect()).collect();
    let mut idle = [0 as Ns; 6];
    let mut by_phase: HashMap<(Cause, Option<String>), Ns> = HashMap::new();
    let mut starved = 0usize;
    for s in &steps {
        let slots: Vec<usize> =
            x.index.devices_of(s.pid).filter_map(|d| x.devices.iter().position(|a| a.device == d)).collect();
        if !x.phases.starved(&slots, s.start, s.end) {
            continue;
        }
        starved += 1;
        for &k in &slots {
            let gaps = &by_device[k];
            let lo = gaps.partition_point(|g| g.end <= s.start);
            for g in gaps[lo..].iter().take_while(|g| g.start < s.end) {
                let (a, b) = (g.start.max(s.start), g.end.min(s.end));
                let (cause, phase) = explainer.part(g, a, b);
                idle[cause as usize] += b - a;
                *by_phase.entry((cause, phase)).or_default() += b - a;
            }
        }
    }
    if starved == 0 {
        return None;
    }
    let total: Ns = idle.iter().sum();
    let cause = Cause::ALL.into_iter().rev().max_by_key(|&c| idle[c as usize]).unwrap_or(Cause::Unknown);
    let phase = by_phase
        .into_iter()
        .filter(|((c, _), _)| *c == cause)
        .max_by(|(ka, ta), (kb, tb)| ta.cmp(tb).then_with(|| kb.1.cmp(&ka.1)))
        .and_then(|((_, p), _)| p);
    let share = starved as f64 / steps.len() as f64;
    let where_ = phase.as_ref().map_or(String::new(), |p| format!(" in phase `{p}`"));
    Some(Finding {
        rule: "starvation",
        severity: by_share(share, 0.5, 0.2),
        message: format!(
            "The GPU starved in {} of the `{name}` ranges ({starved} of {}): {} idle in them, {} of it {}{where_}",
            pct(share),
            steps.len(),
            fmt_ns(total),
            pct(idle[cause as usize] as f64 / total.max(1) as f64),
            cause.label()
        ),
        evidence: vec![
            ev("step_phase", &name),
            ev("steps", &steps.len()),
            ev("starved_steps", &starved),
            ev("idle_ns", &total),
            ev("dominant_cause", &cause.label()),
            ev("cause_ns", &idle[cause as usize]),
            ev("phase", &phase.unwrap_or_default()),
        ],
        fix: cause_fix(cause).to_string(),
    })
}

fn h2d(x: &Inputs<'_>, memory: MemKind) -> Option<(u64, Ns)> {
    let rows = x.transfers.iter().filter(|t| t.direction == MemClass::H2D && t.memory == memory);
    let (b, ns) = rows.fold((0u64, 0 as Ns), |(b, ns), t| (b + t.bytes, ns + t.busy_ns));
    (b >= BANDWIDTH_MIN_BYTES && ns > 0).then_some((b, ns))
}

fn pageable_bandwidth(x: &Inputs<'_>) -> Option<Finding> {
    let (pb, pns) = h2d(x, MemKind::Pageable)?;
    let pg = gbps(pb, pns).unwrap_or(0.0);
    let mut evidence =
        vec![ev("pageable_bytes", &pb), ev("pageable_ns", &pns), ev("pageable_gbps", &format!("{pg:.2}"))];
    let (severity, message) = match h2d(x, MemKind::Pinned) {
        Some((b, ns)) => {
            let pin = gbps(b, ns).unwrap_or(0.0);
            evidence.extend([ev("pinned_bytes", &b), ev("pinned_ns", &ns), ev("pinned_gbps", &format!("{pin:.2}"))]);
            let sev = if pin >= 2.0 * pg { Severity::Warning } else { Severity::Info };
            (sev, format!("Pageable H2D at {pg:.1} GB/s against {pin:.1} GB/s for pinned copies in the same trace"))
        }
        None => (
            Severity::Info,
            format!(
                "Pageable H2D at {pg:.1} GB/s ({} in {}); no pinned H2D copies to compare with",
                fmt_bytes(pb),
                fmt_ns(pns)
            ),
        ),
    };
    Some(Finding {
        rule: "pageable_bandwidth",
        severity,
        message,
        evidence,
        fix: cause_fix(Cause::PageableCopy).to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Union;

    #[test]
    fn low_chunks_merge_into_regions() {
        // Span [0, 300): 30 chunks of 10. Busy [0, 100), [150, 152), [295, 300).
        let busy = Union::from_pairs([(0, 100), (150, 152), (295, 300)]);
        let d = DeviceActivity { device: 0, busy: busy.clone(), kernels: busy, copies: Union::default() };
        let (low, regions) = low_util_regions(&d);
        // Chunks 10..=28 are under 50%; chunk 29 is at exactly 50%, which is not low.
        assert_eq!(low, 19);
        assert_eq!(regions.len(), 1);
        let (a, b, util) = regions[0];
        assert_eq!((a, b), (100, 290));
        assert!((util - 200.0 / 190.0).abs() < 1e-9, "{util}");
    }
}
