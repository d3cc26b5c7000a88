//! Findings: nsys analyze's rules with lanescope's thresholds, and our own.
//!
//! Idle shares are of the *steady span*: the sum over GPUs of the part of the steady
//! window (docs/causes.md) between the GPU's first and last operation. Gaps of cause
//! `profiler` (nsys's own overhead) count in no finding. Host-call shares are of the
//! *GPU span* (first to last operation, summed over GPUs), or of the trace's duration
//! when it has no GPU records.
//!
//! | rule | fires when | severity |
//! |---|---|---|
//! | `gpu_records_missing` | CUDA launch calls were traced but no kernel or graph records | warning |
//! | `cuda_memcpy_async` | a copy with a pageable side was issued by an async memcpy API | critical if those calls took >= 10% of the span, warning >= 1%, else info |
//! | `cuda_memcpy_sync` | a synchronous memcpy API issued a copy (H2D <= 64 KB left out, as nsys does; without GPU records, every synchronous memcpy call) | same as above |
//! | `cuda_api_sync` | `cudaDeviceSynchronize*` / `cudaStreamSynchronize*` were called (as nsys) | by the steady idle of sync-drain and sync-wait gaps: critical >= 25% of the steady span, warning >= 5%, else info; info when at most one gap is due to a sync (a single sync before reading results is no per-step sync) |
//! | `gpu_gaps` | a steady gap >= min-gap (ours: 100 us by default; nsys: 500 ms) | critical if steady gaps are >= 50% of the steady span, warning >= 20%, else info; startup idle is told apart |
//! | `gpu_time_util` | a GPU's span, cut into 30 chunks, has chunks under 50% busy; consecutive low chunks merge into one region | warning if half the chunks or more are low, else info; info, with a start-up fix, when the worst region lies mostly outside the steady window and holds under half of it |
//! | `starvation` | a steady instance of the step phase (all but the first) holds >= min-gap of gaps | the lower of: by the share of steps starved and by their idle's share of the steady span (critical >= 50%, warning >= 20%, else info); no step phase, no finding |
//! | `launch_bound` | idle in holes under min-gap plus launch-bound gaps is at least half of the steady idle, and the median kernel is shorter than the median launch period | by that idle's share of the steady span: critical >= 50%, warning >= 20% |
//! | `teardown_loop` | after the last step the GPU was busy and idled more than in the steady state (gaps and short holes) | warning |
//!
//! Copy rules (`cuda_memcpy_*`, `pageable_bandwidth`) are graded on the steady window
//! where the trace has a step phase. The first finding is the headline: see [`order`].
//! | `pageable_bandwidth` | one per direction (H2D, D2H) that moved >= 1 MB pageable | warning when pinned copies of the same size class run >= 2x faster, or pageable copies of that direction took >= 10% of the GPU span (critical >= 30%), else info |
//!
//! `gpu_time_util` uses the busy union (at most 100% per chunk), where nsys sums
//! operation time across streams (so its chunks can exceed 100%).

use std::collections::HashMap;
use std::fmt::Write as _;

use super::gaps::Explainer;
use super::index::Index;
use super::phases::PhaseCtx;
use super::steps::Steps;
use super::transfers::{CallSet, CopyFacts, size_class_label};
use super::{Cause, DeviceActivity, Finding, Gap, Hint, Options, Severity, Transfer, Window, Windows};
use crate::model::{ApiKind, LaneKind, MemClass, MemKind, Ns, Trace};
use crate::text::{fmt_bytes, fmt_ns, gbps};

/// Chunks of `gpu_time_util`.
pub(crate) const UTIL_CHUNKS: i64 = 30;
/// Utilization under which a chunk is low, percent.
pub(crate) const UTIL_LOW_PCT: f64 = 50.0;
/// Fewest bytes for a bandwidth comparison.
pub(crate) const BANDWIDTH_MIN_BYTES: u64 = 1_000_000;

/// Everything the rules look at.
pub(crate) struct Inputs<'a> {
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
    /// The step phase and the windows.
    pub steps: &'a Steps,
    /// The most sampled functions per cause.
    pub hot: &'a HashMap<Cause, Vec<super::host::TopSymbol>>,
    /// Context switches and samples, for the causes of gap parts.
    pub host: &'a super::host::HostIndex,
    /// Options.
    pub options: &'a Options,
}

/// Run every rule; most severe first, rule order within a severity. `explainer` is the
/// one that found the gaps.
pub(crate) fn findings(x: &Inputs<'_>, explainer: &mut Explainer<'_>) -> Vec<Finding> {
    let span: Ns = x.devices.iter().filter_map(DeviceActivity::extent).map(|(a, b)| b - a).sum();
    let host_span = if span > 0 { span } else { x.trace.duration() };
    let mut out: Vec<Option<Finding>> = vec![gpu_records_missing(x)];
    if host_span > 0 {
        out.extend([memcpy_async(x, host_span), memcpy_sync(x, host_span), api_sync(x)]);
    }
    if span > 0 {
        out.extend([
            gpu_gaps(x),
            time_util(x),
            starvation(x, explainer),
            launch_bound_finding(x),
            teardown_loop(x),
            pageable_bandwidth(x, MemClass::H2D, span),
            pageable_bandwidth(x, MemClass::D2H, span),
        ]);
    }
    let mut out: Vec<Finding> = out.into_iter().flatten().collect();
    let pageable_sync = counted(x)
        .any(|g| g.window == Window::Steady && (g.hint == Hint::PageableSync || g.cause == Cause::PageableCopy));
    order(&mut out, pageable_sync);
    out
}

/// Put the headline first: most severe first; within a severity, a straggler, then (when
/// steady gaps wait on the sync of pageable copies, `pageable_sync`) the pinned-memory
/// fix, then the finding that explains the most steady idle; rule order breaks ties.
pub(crate) fn order(findings: &mut [Finding], pageable_sync: bool) {
    let pinned = cause_fix(Cause::PageableCopy);
    findings.sort_by_cached_key(|f| {
        let first = match f.rule {
            "straggler" => 2,
            _ if pageable_sync && f.fix == pinned => 1,
            _ => 0,
        };
        (std::cmp::Reverse(f.severity), std::cmp::Reverse(first), std::cmp::Reverse(f.weight))
    });
}

// The steady window's length on each GPU between its first and last operation, summed.
fn steady_span(x: &Inputs<'_>) -> Ns {
    let w = x.steps.windows;
    x.devices.iter().filter_map(DeviceActivity::extent).map(|(a, b)| w.steady_part(a, b)).sum()
}

// Gaps that findings count: all but profiler overhead.
fn counted<'g>(x: &'g Inputs<'_>) -> impl Iterator<Item = &'g Gap> + Clone {
    x.gaps.iter().filter(|g| g.cause != Cause::Profiler)
}

fn gpu_records_missing(x: &Inputs<'_>) -> Option<Finding> {
    let has_kernels =
        x.trace.lanes.iter().any(|l| matches!(l.kind, LaneKind::Kernels { .. } | LaneKind::Graphs { .. }));
    if has_kernels {
        return None;
    }
    let mut by_name: HashMap<&str, u64> = HashMap::new();
    for l in x.trace.lanes.iter().filter(|l| matches!(l.kind, LaneKind::CudaApi { .. })) {
        for i in (0..l.ev.len()).filter(|&i| ApiKind::from_flags(l.ev.flags(i)) == ApiKind::Launch) {
            *by_name.entry(x.trace.strings.get(l.ev.name[i])).or_default() += 1;
        }
    }
    let n: u64 = by_name.values().sum();
    if n == 0 {
        return None;
    }
    let mut names: Vec<(&str, u64)> = by_name.into_iter().collect();
    names.sort_by_key(|&(name, c)| (std::cmp::Reverse(c), name));
    let list = names.iter().take(3).map(|(name, c)| format!("{name} x{c}")).collect::<Vec<_>>().join(", ");
    Some(Finding {
        rule: "gpu_records_missing",
        weight: Ns::MAX,
        severity: Severity::Warning,
        message: format!(
            "{n} kernel launches were traced ({list}) but the export holds no kernel records: \
             GPU activity was not recorded, so GPU busy and idle time cannot be measured"
        ),
        evidence: vec![ev("launch_calls", &n), ev("top_launch_calls", &list)],
        fix: "Capture with CUDA tracing on (nsys profile --trace=cuda,...) using an nsys version that supports \
              this GPU driver; check `nsys status -e` and the capture's diagnostics for CUPTI errors."
            .to_string(),
    })
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
pub(crate) fn cause_fix(cause: Cause) -> &'static str {
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
            "The launching thread waited in an OS call for something the trace does not show being produced: \
             look at what it waits for (a queue from DataLoader workers: raise num_workers and prefetch_factor; \
             a lock or another thread: see the evidence)."
        }
        Cause::HostBusy => {
            "CPU work on the launching thread delays the launches: move the hot functions off the loop \
             (preprocessing into DataLoader workers or onto the GPU, no Python loops over tensors, metrics and \
             logging every N steps or on another thread)."
        }
        Cause::WorkerBusy => {
            "The input pipeline's workers compute too slowly while CPUs the job may use are idle: raise DataLoader \
             num_workers (up to the idle CPUs), make transforms and collate cheaper (decode on the GPU: DALI, \
             torchvision v2), or cache decoded samples."
        }
        Cause::CpuContention => {
            "Threads were ready to run but every CPU the job may use was busy: give the job more CPUs (affinity, \
             cgroup quota) or make the per-sample work cheaper; workers beyond the usable CPUs only contend \
             (keep num_workers at or below them), and set OMP_NUM_THREADS=1 / torch.set_num_threads(1) in workers."
        }
        Cause::IoWait => {
            "The input pipeline waited on I/O (storage or network) while CPUs were free: read from faster or local \
             storage, cache the dataset in RAM or the page cache, read larger sequential chunks (sharded formats \
             such as WebDataset), and raise num_workers / prefetch_factor so that reads overlap compute."
        }
        Cause::LaunchBound => {
            "Kernels are shorter than their launch overhead: capture the step in a CUDA graph \
             (torch.cuda.graphs / torch.compile mode=\"reduce-overhead\"), fuse small kernels, or raise the batch size."
        }
        Cause::SyncDrain => {
            "A host sync emptied the GPU's queue and the host then did CPU work before launching more: drop \
             per-step .item()/.cpu()/torch.cuda.synchronize() or move them after the next step's launches, copy \
             results with non_blocking=True into pinned memory, and log every N steps."
        }
        Cause::Queued => {
            "The work was already queued: look at what it waited for (lazy module loading: warm up or set \
             CUDA_MODULE_LOADING=EAGER; a stream wait or host function: reorder or remove it; another GPU: balance \
             the work)."
        }
        Cause::Profiler => {
            "Profiler overhead, not the application: nsys flushed its buffers. Capture fewer events (narrower \
             --trace, --capture-range) or raise buffer sizes; this time is not counted in findings."
        }
        Cause::Unknown => {
            "Trace the CPU side to explain the idle time: nsys profile --trace=cuda,nvtx,osrt --sample=cpu, and \
             check cross-stream dependencies (cudaStreamWaitEvent)."
        }
    }
}

/// What to do about gaps of `cause` whose evidence says `hint` (a sleep, the sync of a
/// pageable copy, a JIT compile): the evidence decides where it knows more than the cause.
pub(crate) fn hinted_fix(cause: Cause, hint: Hint) -> &'static str {
    match hint {
        Hint::Sleep => {
            "The launching thread sleeps (time.sleep, a rate limiter or a polling loop): remove the sleep, or wait \
             on the event that it stands for."
        }
        Hint::PageableSync => cause_fix(Cause::PageableCopy),
        Hint::Compile => {
            "A one-time JIT compile (Triton / torch.compile, nvFuser, NVRTC) ran inside the loop: warm up before \
             the measured or production run, keep the compile cache (TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR, \
             CUDA_CACHE_PATH), and avoid recompiles on new shapes (fixed batch shapes, drop_last=True, \
             torch._dynamo.mark_dynamic)."
        }
        Hint::Gil => {
            "The launching thread waited for Python's GIL while another thread of the process held it (named in \
             the evidence): move that work out of the process (DataLoader worker processes rather than threads), \
             make it release the GIL (native code, fewer Python-level loops), or use a free-threaded Python."
        }
        Hint::None => cause_fix(cause),
    }
}

/// The fix for gaps of `cause` in this trace: [`cause_fix`], and for CPU work the
/// hottest sampled functions, or how to capture them when the trace has no samples.
fn fix(x: &Inputs<'_>, cause: Cause, hint: Hint) -> String {
    let base = hinted_fix(cause, hint);
    if hint != Hint::None
        || !matches!(cause, Cause::HostBusy | Cause::WorkerBusy | Cause::SyncDrain | Cause::CpuContention)
    {
        return base.to_string();
    }
    if x.trace.host.samples == 0 {
        return format!("{base} Capture with nsys profile -s process-tree to see which functions run.");
    }
    match x.hot.get(&cause).filter(|v| !v.is_empty()) {
        Some(top) => {
            let list: Vec<String> =
                top.iter().take(3).map(|t| format!("{} {:.0}%", t.label(), t.share * 100.0)).collect();
            format!("{base} Hottest sampled functions in these gaps: {}.", list.join(", "))
        }
        None => base.to_string(),
    }
}

fn call_set_evidence(s: &CallSet, trace: &Trace) -> Vec<(String, String)> {
    let mut e = vec![ev("copies", &s.count), ev("bytes", &s.bytes), ev("gpu_ns", &s.gpu_ns), ev("api_ns", &s.api_ns)];
    if let Some((d, name, pid, tid)) = &s.longest {
        e.push(ev("longest_call", &format!("{name} {} on {}", fmt_ns(*d), trace.thread_label(*pid, *tid))));
    }
    e
}

// The share of the run that `intervals` cover: of the steady window where the trace has
// a step phase (start-up's one-time copies of weights say nothing about the loop), else
// of `span`.
fn run_share(x: &Inputs<'_>, intervals: impl Iterator<Item = (Ns, Ns)>, span: Ns) -> f64 {
    let w = x.steps.windows;
    let steady = steady_span(x);
    if x.steps.name.is_some() && steady > 0 {
        intervals.map(|(a, b)| w.steady_part(a, b)).sum::<Ns>() as f64 / steady as f64
    } else {
        intervals.map(|(a, b)| b - a).sum::<Ns>() as f64 / span.max(1) as f64
    }
}

fn memcpy_async(x: &Inputs<'_>, span: Ns) -> Option<Finding> {
    let s = &x.copies.async_pageable;
    (s.count > 0).then(|| Finding {
        rule: "cuda_memcpy_async",
        weight: s.api_ns,
        severity: by_share(run_share(x, s.calls.iter().copied(), span), 0.10, 0.01),
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

// Synchronous memcpy calls from the API alone (an export without GPU copy records).
fn sync_copy_calls(trace: &Trace) -> CallSet {
    let mut s = CallSet::default();
    for l in &trace.lanes {
        let LaneKind::CudaApi { tid } = l.kind else { continue };
        for i in (0..l.ev.len()).filter(|&i| ApiKind::from_flags(l.ev.flags(i)) == ApiKind::MemcpySync) {
            s.add(0, 0, (l.ev.start[i], l.ev.end(i)), trace.strings.get(l.ev.name[i]), l.pid, tid);
        }
    }
    s
}

fn memcpy_sync(x: &Inputs<'_>, span: Ns) -> Option<Finding> {
    let no_copies = !x.trace.lanes.iter().any(|l| matches!(l.kind, LaneKind::Memory { .. }));
    let from_api = no_copies.then(|| sync_copy_calls(x.trace));
    let s = from_api.as_ref().unwrap_or(&x.copies.sync);
    (s.count > 0).then(|| Finding {
        rule: "cuda_memcpy_sync",
        weight: s.api_ns,
        severity: by_share(run_share(x, s.calls.iter().copied(), span), 0.10, 0.01),
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

fn api_sync(x: &Inputs<'_>) -> Option<Finding> {
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
    let w = x.steps.windows;
    // The sync inside a pageable copy is the copy's cost: the pinned-memory finding
    // counts it, not this one.
    let sync_gaps =
        counted(x).filter(|g| matches!(g.cause, Cause::SyncDrain | Cause::SyncWait) && g.hint != Hint::PageableSync);
    let gaps = sync_gaps.clone().count();
    let idle: Ns = sync_gaps.map(|g| w.steady_part(g.start, g.end)).sum();
    let steady = steady_span(x);
    // One sync before reading results is necessary, not per-step synchronization.
    let severity =
        if gaps <= 1 || steady <= 0 { Severity::Info } else { by_share(idle as f64 / steady as f64, 0.25, 0.05) };
    Some(Finding {
        rule: "cuda_api_sync",
        weight: idle,
        severity,
        message: format!(
            "{n} cudaDeviceSynchronize/cudaStreamSynchronize calls blocked the host for {}; \
             {gaps} gaps began at a host sync, {} of steady-state GPU idle",
            fmt_ns(total),
            fmt_ns(idle)
        ),
        evidence: vec![
            ev("calls", &n),
            ev("total_ns", &total),
            ev("sync_gaps", &gaps),
            ev("sync_idle_ns", &idle),
            ev("longest_call", &format!("{name} {} on {}", fmt_ns(d), x.trace.thread_label(pid, tid))),
        ],
        fix: fix(x, if gaps > 0 { Cause::SyncDrain } else { Cause::SyncWait }, Hint::None),
    })
}

fn sync_name(name: &str) -> bool {
    name.starts_with("cudaDeviceSynchronize") || name.starts_with("cudaStreamSynchronize")
}

// Cause with the most gap time, with that time; `time` gives the time of a gap.
fn dominant_cause<'g>(gaps: impl Iterator<Item = &'g Gap>, time: impl Fn(&Gap) -> Ns) -> Option<(Cause, Ns)> {
    let mut t = [0 as Ns; Cause::ALL.len()];
    for g in gaps {
        t[g.cause as usize] += time(g);
    }
    Cause::ALL.into_iter().map(|c| (c, t[c as usize])).filter(|&(_, v)| v > 0).rev().max_by_key(|&(_, v)| v)
}

// The hint that holds most of the time of `cause`'s gaps (None when no hint holds half).
fn dominant_hint<'g>(gaps: impl Iterator<Item = &'g Gap>, cause: Cause, time: impl Fn(&Gap) -> Ns) -> Hint {
    let mut by: HashMap<Hint, Ns> = HashMap::new();
    let mut total = 0;
    for g in gaps.filter(|g| g.cause == cause) {
        *by.entry(g.hint).or_default() += time(g);
        total += time(g);
    }
    by.into_iter().filter(|&(h, t)| h != Hint::None && 2 * t >= total).max().map_or(Hint::None, |(h, _)| h)
}

fn gpu_gaps(x: &Inputs<'_>) -> Option<Finding> {
    let w = x.steps.windows;
    let steady = steady_span(x);
    let in_steady = |g: &Gap| w.steady_part(g.start, g.end);
    let steady_gaps: Vec<&Gap> = counted(x).filter(|g| in_steady(g) > 0).collect();
    let startup: Ns = counted(x).filter(|g| g.window == Window::Startup).map(Gap::dur).sum();
    let profiler: Ns = x.gaps.iter().filter(|g| g.cause == Cause::Profiler).map(Gap::dur).sum();
    let longest = steady_gaps.iter().copied().max_by_key(|g| in_steady(g));
    let idle: Ns = steady_gaps.iter().map(|g| in_steady(g)).sum();
    let startup_note = if startup > 0 {
        format!("; start-up (before the second step) adds {} idle", fmt_ns(startup))
    } else {
        String::new()
    };
    let Some(longest) = longest else {
        // Only start-up or profiler gaps: say so, as information.
        let g = counted(x).max_by_key(|g| g.dur())?;
        return Some(Finding {
            rule: "gpu_gaps",
            weight: 0,
            severity: Severity::Info,
            message: format!(
                "No steady-state gaps >= {}; {} of idle lies outside the steady state (the longest: {} in {})",
                fmt_ns(x.options.min_gap_ns),
                fmt_ns(counted(x).map(Gap::dur).sum()),
                fmt_ns(g.dur()),
                g.window.label()
            ),
            evidence: vec![ev("steady_gaps", &0), ev("startup_idle_ns", &startup), ev("profiler_idle_ns", &profiler)],
            fix: fix(x, g.cause, g.hint),
        });
    };
    let share = if steady > 0 { idle as f64 / steady as f64 } else { 0.0 };
    let (cause, cause_ns) = dominant_cause(steady_gaps.iter().copied(), in_steady)?;
    let hint = dominant_hint(steady_gaps.iter().copied(), cause, in_steady);
    let place = longest.phase.as_deref().map_or("outside any NVTX range".to_string(), |p| format!("in `{p}`"));
    let n = steady_gaps.len();
    Some(Finding {
        rule: "gpu_gaps",
        weight: cause_ns,
        severity: by_share(share, 0.5, 0.2),
        message: format!(
            "{n} gap{} >= {} left the GPU idle for {} in the steady state ({} of it); {} of it is {}{}{startup_note}",
            if n == 1 { "" } else { "s" },
            fmt_ns(x.options.min_gap_ns),
            fmt_ns(idle),
            pct(share),
            pct(cause_ns as f64 / idle.max(1) as f64),
            cause.label(),
            hint.words()
        ),
        evidence: vec![
            ev("gaps", &n),
            ev("min_gap_ns", &x.options.min_gap_ns),
            ev("idle_ns", &idle),
            ev("steady_span_ns", &steady),
            ev("startup_idle_ns", &startup),
            ev("profiler_idle_ns", &profiler),
            ev("dominant_cause", &cause.label()),
            ev("cause_ns", &cause_ns),
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
        fix: fix(x, cause, hint),
    })
}

/// Low-utilization regions of one GPU: (start, end, utilization %) after merging.
pub(crate) fn low_util_regions(d: &DeviceActivity) -> (usize, Vec<(Ns, Ns, f64)>) {
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

// A low-utilisation region: (device, start, end, utilisation %).
type Region = (u32, Ns, Ns, f64);

// What `gpu_time_util` reads: low chunks, chunks and regions over all GPUs, and the worst
// region by idle area of the loop and of start-up or teardown.
#[derive(Debug, Default)]
struct LowUtil {
    low: usize,
    chunks: usize,
    regions: usize,
    of_loop: Option<Region>,
    outside: Option<Region>,
}

// Low regions of `devices`, each told as the loop's or as start-up and teardown's
// (`windows` when the trace has a step phase).
fn low_util(devices: &[DeviceActivity], windows: Option<&Windows>) -> LowUtil {
    let mut u = LowUtil::default();
    let area = |r: &Region| (r.2 - r.1) as f64 * (100.0 - r.3);
    for d in devices {
        let (l, regions) = low_util_regions(d);
        u.low += l;
        u.chunks += if d.extent().is_some() { UTIL_CHUNKS as usize } else { 0 };
        u.regions += regions.len();
        let steady_len = match (windows, d.extent()) {
            (Some(w), Some((lo, hi))) => w.steady_part(lo, hi),
            _ => 0,
        };
        for (a, b, util) in regions {
            // A region mostly before the second step or after the last, holding under half
            // of the loop, is one-time start-up or teardown: on a short capture of a fed
            // loop it fills most chunks, and a loop fix would point the wrong way.
            let outside = windows.is_some_and(|w| {
                let in_loop = w.steady_part(a, b);
                2 * in_loop < b - a && 2 * in_loop < steady_len
            });
            let slot = if outside { &mut u.outside } else { &mut u.of_loop };
            let r = (d.device, a, b, util);
            if slot.is_none_or(|s| area(&r) > area(&s)) {
                *slot = Some(r);
            }
        }
    }
    u
}

fn time_util(x: &Inputs<'_>) -> Option<Finding> {
    let w = x.steps.windows;
    let u = low_util(x.devices, x.steps.name.is_some().then_some(&w));
    let (low, chunks, nregions) = (u.low, u.chunks, u.regions);
    // A loop region leads; a start-up or teardown one is told as such, at info.
    let ((device, a, b, util), of_loop) = match (u.of_loop, u.outside) {
        (Some(r), _) => (r, true),
        (None, Some(r)) => (r, false),
        (None, None) => return None,
    };
    let (severity, last, fix, outside) = if of_loop {
        // The cause comes from steady gaps: start-up idle (context creation, the first
        // batch) says nothing about the loop.
        let in_low =
            || x.gaps.iter().filter(|g| g.device == device && g.start < b && g.end > a && g.cause != Cause::Profiler);
        let steady_low = || in_low().filter(|g| g.window == Window::Steady);
        let (cause, hint) = match dominant_cause(steady_low(), |g| w.steady_part(g.start, g.end)) {
            Some((c, _)) => (c, dominant_hint(steady_low(), c, |g| w.steady_part(g.start, g.end))),
            None => (dominant_cause(in_low(), Gap::dur).map_or(Cause::Unknown, |c| c.0), Hint::None),
        };
        let severity = if 2 * low >= chunks { Severity::Warning } else { Severity::Info };
        (severity, ev("worst_cause", &cause.label()), fix(x, cause, hint), String::new())
    } else {
        let outside_ns = (b - a) - w.steady_part(a, b);
        let note = format!(", {} of it before the second step or after the last", fmt_ns(outside_ns));
        (Severity::Info, ev("worst_outside_steady_ns", &outside_ns), OUTSIDE_STEADY_FIX.to_string(), note)
    };
    Some(Finding {
        rule: "gpu_time_util",
        weight: 0,
        severity,
        message: format!(
            "{low} of {chunks} time chunks ran the GPU under {UTIL_LOW_PCT:.0}% busy, in {nregions} region{}; \
             the worst: {} at {util:.1}% on GPU {device}{outside}",
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
            last,
        ],
        fix,
    })
}

/// What to do about a GPU idle outside the steady window: start-up or teardown.
const OUTSIDE_STEADY_FIX: &str = "This idle is one-time start-up or teardown (CUDA context, lazy module loading, \
     cuDNN autotuning, JIT compiles, the first batches), not the loop: warm up before the measured run, keep JIT \
     and autotuning caches (TORCHINDUCTOR_CACHE_DIR, CUDA_CACHE_PATH), and capture the loop alone (nsys profile \
     --capture-range=cudaProfilerApi around torch.cuda.profiler.start()/stop(), or --delay).";

fn starvation(x: &Inputs<'_>, explainer: &mut Explainer<'_>) -> Option<Finding> {
    let name = x.steps.name.as_deref()?;
    // The first step is warm-up (lazy loading, the first batch): judge the rest.
    let steps = if x.steps.instances.len() > 1 { &x.steps.instances[1..] } else { &x.steps.instances[..] };
    // Gaps of each device in start order: those overlapping a step are one range.
    let by_device: Vec<Vec<&Gap>> =
        x.devices.iter().map(|d| x.gaps.iter().filter(|g| g.device == d.device).collect()).collect();
    let mut idle = [0 as Ns; Cause::ALL.len()];
    let mut by_phase: HashMap<(Cause, Option<String>), Ns> = HashMap::new();
    let mut hints: HashMap<(Cause, Hint), Ns> = HashMap::new();
    let mut starved = 0usize;
    for s in steps {
        let slots: Vec<usize> =
            x.index.devices_of(s.pid).filter_map(|d| x.devices.iter().position(|a| a.device == d)).collect();
        if !x.phases.starved(&slots, s.start, s.end) {
            continue;
        }
        starved += 1;
        for &k in &slots {
            let gaps = &by_device[k];
            let lo = gaps.partition_point(|g| g.end <= s.start);
            for g in gaps[lo..].iter().take_while(|g| g.start < s.end).filter(|g| g.cause != Cause::Profiler) {
                let (a, b) = (g.start.max(s.start), g.end.min(s.end));
                // A whole gap keeps its cause; a clipped part is decided again, rule 6 included.
                let (cause, phase) = explainer.part(g, a, b);
                let whole = (a, b) == (g.start, g.end);
                let cause =
                    if whole { cause } else { super::host_cause::part_cause(x.trace, x.host, g, (a, b), cause) };
                idle[cause as usize] += b - a;
                if cause == g.cause {
                    *hints.entry((cause, g.hint)).or_default() += b - a;
                }
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
    // Deterministic: two hints can each hold exactly half.
    let hint = hints
        .iter()
        .filter(|&(&(c, h), &t)| c == cause && h != Hint::None && 2 * t >= idle[cause as usize])
        .map(|(&(_, h), _)| h)
        .max()
        .unwrap_or(Hint::None);
    let share = starved as f64 / steps.len() as f64;
    let where_ = phase.as_ref().map_or(String::new(), |p| format!(" in phase `{p}`"));
    // Severity is what the starvation costs: a step counts as starved from one gap of
    // min-gap, so the share of starved steps alone would call 1% idle critical.
    let idle_share = total as f64 / steady_span(x).max(1) as f64;
    Some(Finding {
        rule: "starvation",
        weight: idle[cause as usize],
        severity: by_share(share, 0.5, 0.2).min(by_share(idle_share, 0.5, 0.2)),
        message: format!(
            "The GPU starved in {} of the `{name}` ranges ({starved} of {}): {} idle in them, {} of it {}{}{where_}",
            pct(share),
            steps.len(),
            fmt_ns(total),
            pct(idle[cause as usize] as f64 / total.max(1) as f64),
            cause.label(),
            hint.words()
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
        fix: fix(x, cause, hint),
    })
}

/// GPU idle inside the steady window in holes shorter than `--min-gap`, summed over GPUs.
pub(crate) fn short_idle_ns(devices: &[DeviceActivity], gaps: &[Gap], w: super::Windows) -> Ns {
    devices
        .iter()
        .filter_map(|d| Some((d, d.extent()?)))
        .map(|(d, (a, b))| {
            let (a, b) = (a.max(w.steady_start), b.min(w.steady_end));
            if b <= a {
                return 0;
            }
            let idle = (b - a) - d.busy.busy_in(a, b);
            let long: Ns = gaps.iter().filter(|g| g.device == d.device).map(|g| w.steady_part(g.start, g.end)).sum();
            (idle - long).max(0)
        })
        .sum()
}

// Median of a list (the lower middle).
fn median(mut v: Vec<Ns>) -> Option<Ns> {
    if v.is_empty() {
        return None;
    }
    let k = (v.len() - 1) / 2;
    Some(*v.select_nth_unstable(k).1)
}

// Values kept for a median: at most this many, evenly strided (the median of a stride
// sample; exact below it), so that a frame of 100M events allocates nothing per event.
const MEDIAN_SAMPLE: usize = 1 << 16;

// Kernels in the steady window (count, median duration), and the median period between
// the launch calls of the thread that launched the most of them there.
fn launch_rhythm(x: &Inputs<'_>) -> (usize, Option<Ns>, Option<Ns>) {
    let w = x.steps.windows;
    // Lanes are sorted by start: the steady rows of a lane are one range.
    let steady = |l: &crate::model::Lane| {
        l.ev.start.partition_point(|&s| s < w.steady_start)..l.ev.start.partition_point(|&s| s < w.steady_end)
    };
    let kernels: Vec<_> = x.trace.lanes.iter().filter(|l| matches!(l.kind, LaneKind::Kernels { .. })).collect();
    let n: usize = kernels.iter().map(|l| steady(l).len()).sum();
    let stride = n.div_ceil(MEDIAN_SAMPLE).max(1);
    let durs: Vec<Ns> = kernels.iter().flat_map(|l| steady(l).step_by(stride).map(|i| l.ev.dur(i))).collect();
    let launch = |l: &crate::model::Lane, i: usize| ApiKind::from_flags(l.ev.flags(i)) == ApiKind::Launch;
    let apis = x.trace.lanes.iter().filter(|l| matches!(l.kind, LaneKind::CudaApi { .. }));
    let best = apis.map(|l| (steady(l).filter(|&i| launch(l, i)).count(), l)).max_by_key(|&(c, _)| c);
    let period = best.filter(|&(c, _)| c > 1).and_then(|(c, l)| {
        let stride = c.div_ceil(MEDIAN_SAMPLE).max(1);
        let starts = steady(l).filter(|&i| launch(l, i)).map(|i| l.ev.start[i]);
        let periods = starts.clone().zip(starts.skip(1)).step_by(stride).map(|(a, b)| b - a);
        median(periods.collect())
    });
    (n, median(durs), period)
}

// True when most launch calls of the steady window replay CUDA graphs.
fn graphs_replayed(x: &Inputs<'_>) -> bool {
    let w = x.steps.windows;
    let (mut graph, mut all) = (0usize, 0usize);
    // Names repeat millions of times: classify each name id once.
    let mut is_graph: HashMap<crate::model::StrId, bool> = HashMap::new();
    for l in x.trace.lanes.iter().filter(|l| matches!(l.kind, LaneKind::CudaApi { .. })) {
        let rows =
            l.ev.start.partition_point(|&s| s < w.steady_start)..l.ev.start.partition_point(|&s| s < w.steady_end);
        for i in rows.filter(|&i| ApiKind::from_flags(l.ev.flags(i)) == ApiKind::Launch) {
            all += 1;
            let id = l.ev.name[i];
            graph +=
                usize::from(*is_graph.entry(id).or_insert_with(|| x.trace.strings.get(id).contains("GraphLaunch")));
        }
    }
    all > 0 && 2 * graph >= all
}

// Idle in holes shorter than the threshold, or in launch-bound gaps, dominates the
// steady window: kernels shorter than their launch period, launched back to back.
fn launch_bound_finding(x: &Inputs<'_>) -> Option<Finding> {
    let w = x.steps.windows;
    let steady = steady_span(x);
    let short = short_idle_ns(x.devices, x.gaps, w);
    let gaps_idle: Ns = counted(x).map(|g| w.steady_part(g.start, g.end)).sum();
    let lb: Ns = counted(x).filter(|g| g.cause == Cause::LaunchBound).map(|g| w.steady_part(g.start, g.end)).sum();
    let explained = short + lb;
    if steady <= 0 || 2 * explained < short + gaps_idle || explained <= 0 {
        return None;
    }
    let (kernels, kernel_ns, period) = launch_rhythm(x);
    let (Some(k), Some(p)) = (kernel_ns, period) else { return None };
    // The launch period must exceed the kernel time: otherwise launches keep up.
    if p <= k {
        return None;
    }
    let share = explained as f64 / steady as f64;
    let steps = x.steps.instances.len().saturating_sub(1).max(1);
    Some(Finding {
        rule: "launch_bound",
        weight: short + lb,
        severity: by_share(share, 0.5, 0.2),
        message: format!(
            "The GPU idled {} of the steady state ({}) between short kernels: {} in holes under {} and {} in \
             launch-bound gaps; {} kernels per step, median kernel {}, median launch period {}",
            fmt_ns(explained),
            pct(share),
            fmt_ns(short),
            fmt_ns(x.options.min_gap_ns),
            fmt_ns(lb),
            kernels / steps,
            fmt_ns(k),
            fmt_ns(p)
        ),
        evidence: vec![
            ev("short_idle_ns", &short),
            ev("launch_bound_idle_ns", &lb),
            ev("steady_span_ns", &steady),
            ev("kernels_per_step", &(kernels / steps)),
            ev("median_kernel_ns", &k),
            ev("median_launch_period_ns", &p),
            ev("dominant_cause", &Cause::LaunchBound.label()),
        ],
        fix: if graphs_replayed(x) {
            "The steps already replay CUDA graphs; the idle is the host between replays: drop per-token or \
             per-step host syncs (.item(), .cpu()) so that the host runs ahead, capture more work per graph \
             (several tokens or steps), and use larger batches."
        } else {
            "Kernels are shorter than the time to launch them: capture the step in a CUDA graph \
             (torch.cuda.graphs, torch.compile(mode=\"reduce-overhead\")), fuse small kernels, use larger \
             batches, and drop per-token or per-step host syncs (.item(), .cpu()) that stop the host from \
             running ahead."
        }
        .to_string(),
    })
}

// A second dense loop after the last step (an evaluation or inference phase, a graph
// replay loop) falls in teardown: say so when teardown holds more GPU idle than the
// steady state, so that the headline's steady numbers are not read as the whole run.
fn teardown_loop(x: &Inputs<'_>) -> Option<Finding> {
    let name = x.steps.name.as_deref()?;
    let w = x.steps.windows;
    let (mut busy, mut idle, mut span) = (0, 0, 0);
    for d in x.devices {
        let Some((a, b)) = d.extent() else { continue };
        let a = a.max(w.steady_end);
        if b > a {
            let bz = d.busy.busy_in(a, b);
            (busy, idle, span) = (busy + bz, idle + (b - a - bz), span + (b - a));
        }
    }
    let steady_idle: Ns =
        short_idle_ns(x.devices, x.gaps, w) + counted(x).map(|g| w.steady_part(g.start, g.end)).sum::<Ns>();
    if busy <= 0 || idle <= steady_idle {
        return None;
    }
    let teardown: Vec<&Gap> = counted(x).filter(|g| g.window == Window::Teardown).collect();
    let cause = dominant_cause(teardown.iter().copied(), Gap::dur).map_or(Cause::Unknown, |c| c.0);
    Some(Finding {
        rule: "teardown_loop",
        weight: idle,
        severity: Severity::Warning,
        message: format!(
            "After the last `{name}` the GPU ran on for {} ({} busy) and idled {}, more than the {} idle of the \
             steady state: a second loop outside the step phase (evaluation, inference, graph replay); most of its \
             gap time is {}",
            fmt_ns(span),
            fmt_ns(busy),
            fmt_ns(idle),
            fmt_ns(steady_idle),
            cause.label()
        ),
        evidence: vec![
            ev("teardown_span_ns", &span),
            ev("teardown_busy_ns", &busy),
            ev("teardown_idle_ns", &idle),
            ev("steady_idle_ns", &steady_idle),
            ev("dominant_cause", &cause.label()),
        ],
        fix: format!(
            "Analyse that loop on its own: mark its iterations with NVTX and choose them with --step-phase NAME (or \
             open the window in the viewer); for its gaps: {}",
            cause_fix(cause)
        ),
    })
}

// Bytes moved and copy time.
type BytesTime = (u64, Ns);

// Pageable and pinned (bytes, ns) of one direction in its busiest pageable size class
// that also has pinned copies, as (class, pageable, pinned).
fn same_size_pinned(x: &Inputs<'_>, dir: MemClass) -> Option<(u8, BytesTime, BytesTime)> {
    let of = |m: MemKind, c: u8| {
        x.copies.by_size.get(&(dir, m, c)).copied().filter(|&(b, ns)| b >= BANDWIDTH_MIN_BYTES && ns > 0)
    };
    (0..5u8).filter_map(|c| Some((c, of(MemKind::Pageable, c)?, of(MemKind::Pinned, c)?))).max_by_key(|&(_, p, _)| p.0)
}

fn pageable_bandwidth(x: &Inputs<'_>, dir: MemClass, span: Ns) -> Option<Finding> {
    let rows = x.transfers.iter().filter(|t| t.direction == dir && t.memory == MemKind::Pageable);
    let (pb, pns) = rows.fold((0u64, 0 as Ns), |(b, ns), t| (b + t.bytes, ns + t.busy_ns));
    if pb < BANDWIDTH_MIN_BYTES || pns <= 0 {
        return None;
    }
    let pg = gbps(pb, pns).unwrap_or(0.0);
    let copies = x.copies.pageable.iter().filter(|c| c.0 == dir).map(|&(_, a, b)| (a, b));
    let share = run_share(x, copies, span);
    let d = dir.label();
    let mut evidence = vec![
        ev("direction", &d),
        ev("pageable_bytes", &pb),
        ev("pageable_ns", &pns),
        ev("pageable_gbps", &format!("{pg:.2}")),
        ev("pageable_share_of_span", &pct(share)),
    ];
    let mut severity = by_share(share, 0.30, 0.10);
    let mut message = format!(
        "Pageable {d} copies moved {} at {pg:.1} GB/s and kept the copy engine busy for {} ({} of the {})",
        fmt_bytes(pb),
        fmt_ns(pns),
        pct(share),
        if x.steps.name.is_some() { "steady state" } else { "GPU span" }
    );
    match same_size_pinned(x, dir) {
        Some((class, (b, ns), (pin_b, pin_ns))) => {
            let (page, pin) = (gbps(b, ns).unwrap_or(0.0), gbps(pin_b, pin_ns).unwrap_or(0.0));
            evidence.extend([
                ev("size_class", &size_class_label(class)),
                ev("pageable_gbps_in_class", &format!("{page:.2}")),
                ev("pinned_gbps_in_class", &format!("{pin:.2}")),
            ]);
            let _ = write!(
                message,
                "; copies of {} ran at {page:.1} GB/s from pageable memory against {pin:.1} GB/s pinned",
                size_class_label(class)
            );
            if pin >= 2.0 * page {
                severity = severity.max(Severity::Warning);
            }
        }
        None => {
            let _ = write!(message, "; no pinned {d} copies of a like size to compare with");
        }
    }
    let fix = if dir == MemClass::D2H {
        "Copy results into pinned host memory: preallocate a pinned buffer (torch.empty(..., pin_memory=True)) and \
         .copy_(out, non_blocking=True), or cudaHostAlloc; read it after an event, not a device sync."
            .to_string()
    } else {
        cause_fix(Cause::PageableCopy).to_string()
    };
    Some(Finding { rule: "pageable_bandwidth", severity, message, evidence, fix, weight: pns })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Union;

    fn finding(rule: &'static str, severity: Severity, weight: (&str, Ns), fix: &str) -> Finding {
        Finding {
            rule,
            severity,
            message: String::new(),
            evidence: vec![(weight.0.to_string(), weight.1.to_string())],
            fix: fix.to_string(),
            weight: weight.1,
        }
    }

    #[test]
    fn the_headline_is_the_most_severe_then_the_straggler_the_pinned_fix_and_the_most_idle() {
        let pinned = cause_fix(Cause::PageableCopy);
        let make = || {
            vec![
                finding("gpu_time_util", Severity::Warning, ("x", 0), "a"),
                finding("pageable_bandwidth", Severity::Warning, ("pageable_ns", 5), pinned),
                finding("gpu_gaps", Severity::Warning, ("cause_ns", 10), "b"),
                finding("starvation", Severity::Critical, ("cause_ns", 1), "c"),
                finding("straggler", Severity::Warning, ("lost_ns", 1), "d"),
            ]
        };
        let rules = |v: &[Finding]| v.iter().map(|f| f.rule).collect::<Vec<_>>();
        let mut v = make();
        order(&mut v, false);
        assert_eq!(rules(&v), ["starvation", "straggler", "gpu_gaps", "pageable_bandwidth", "gpu_time_util"]);
        let mut v = make();
        order(&mut v, true);
        assert_eq!(rules(&v), ["starvation", "straggler", "pageable_bandwidth", "gpu_gaps", "gpu_time_util"]);
    }

    #[test]
    fn a_low_region_of_start_up_gives_way_to_one_of_the_loop() {
        // Span [0, 300): chunks of 10. A first copy, idle start-up to 200, then the loop
        // [200, 300) with one idle stretch [250, 270).
        let busy = Union::from_pairs([(0, 6), (200, 250), (270, 300)]);
        let d = DeviceActivity { device: 0, busy: busy.clone(), kernels: busy, copies: Union::default() };
        let w = Windows { steady_start: 200, steady_end: 300 };
        let u = low_util(std::slice::from_ref(&d), Some(&w));
        assert_eq!((u.low, u.chunks, u.regions), (21, 30, 2));
        assert_eq!(u.outside.map(|r| (r.1, r.2)), Some((10, 200)));
        assert_eq!(u.of_loop.map(|r| (r.1, r.2)), Some((250, 270)));
        // A fed loop: only the start-up region is low, and it is told apart.
        let busy = Union::from_pairs([(0, 6), (200, 300)]);
        let d = DeviceActivity { device: 0, busy: busy.clone(), kernels: busy, copies: Union::default() };
        let u = low_util(std::slice::from_ref(&d), Some(&w));
        assert!(u.of_loop.is_none());
        assert_eq!(u.outside.map(|r| (r.1, r.2)), Some((10, 200)));
        // Without a step phase every region is the loop's.
        let u = low_util(std::slice::from_ref(&d), None);
        assert_eq!(u.of_loop.map(|r| (r.1, r.2)), Some((10, 200)));
        // A low region holding most of the loop is the loop's, however much start-up it holds.
        let busy = Union::from_pairs([(0, 6), (290, 300)]);
        let d = DeviceActivity { device: 0, busy: busy.clone(), kernels: busy, copies: Union::default() };
        let u = low_util(std::slice::from_ref(&d), Some(&w));
        assert_eq!(u.of_loop.map(|r| (r.1, r.2)), Some((10, 290)));
    }

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
