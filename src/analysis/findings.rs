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
//! | `periodic_stall` | a periodic or between-steps region ([`super::regions`]) holds >= 5% of the steady span | by that share: critical >= 50%, warning >= 20% |
//! | `loop_region` | a loop region (an NVTX phase outside the steps) holds >= 5% of the steady span | as above |
//!
//! Copy rules (`cuda_memcpy_*`, `pageable_bandwidth`) are graded on the steady window
//! where the trace has a step phase. The first finding is the headline: see [`super::rule::rank`].
//! | `pageable_bandwidth` | one per direction (H2D, D2H) that moved >= 1 MB pageable | warning when pinned copies of the same size class run >= 2x faster and some pageable ones ran in the steady state, or pageable copies of that direction took >= 10% of the GPU span (critical >= 30%), else info |
//!
//! `gpu_time_util` uses the busy union (at most 100% per chunk), where nsys sums
//! operation time across streams (so its chunks can exceed 100%).

use std::collections::HashMap;
use std::fmt::Write as _;

use super::RegionKind;
use super::gaps::Explainer;
use super::index::Index;
use super::phases::PhaseCtx;
use super::steps::Steps;
use super::transfers::{CallSet, CopyFacts, size_class_label};
use super::{
    Cause, DeviceActivity, Finding, Fix, Gap, Hint, Options, Rule, Severity, Steady, Transfer, Window, Windows,
};
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
    /// The steady window's idle, summed once.
    pub steady: &'a Steady,
    /// Where the steady idle sits.
    pub regions: &'a [super::Region],
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

/// Run every rule, in rule order (the pipeline sorts them once, [`super::rule::order`]).
/// `explainer` is the one that found the gaps.
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
            region(x, RegionKind::Periodic),
            region(x, RegionKind::BetweenSteps),
            region(x, RegionKind::Loop),
            pageable_bandwidth(x, MemClass::H2D, span),
            pageable_bandwidth(x, MemClass::D2H, span),
        ]);
    }
    out.into_iter().flatten().collect()
}

/// True when steady gaps wait on copies from pageable memory or on their syncs more than
/// on anything else (no other cause holds more of the steady idle): among fixes of one
/// saving and severity, the pinned-memory fix then leads ([`super::rule::rank`]). A few
/// such waits beside a host that computes most of the step do not put it first.
pub(crate) fn waits_on_pageable_sync(gaps: &[Gap]) -> bool {
    let mut by: HashMap<Option<Cause>, Ns> = HashMap::new();
    for g in gaps.iter().filter(|g| g.cause != Cause::Profiler && g.window == Window::Steady) {
        let pageable = g.hint == Hint::PageableSync || g.cause == Cause::PageableCopy;
        *by.entry((!pageable).then_some(g.cause)).or_default() += g.end - g.start;
    }
    let pageable = by.remove(&None).unwrap_or(0);
    pageable > 0 && by.values().all(|&t| pageable >= t)
}

// The steady window's length on each GPU between its first and last operation, summed.
fn steady_span(x: &Inputs<'_>) -> Ns {
    x.steady.span_ns
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
        rule: Rule::GpuRecordsMissing,
        weight: Ns::MAX,
        severity: Severity::Warning,
        message: format!(
            "{n} kernel launches were traced ({list}) but the export holds no kernel records: \
             GPU activity was not recorded, so GPU busy and idle time cannot be measured"
        ),
        evidence: vec![ev("launch_calls", &n), ev("top_launch_calls", &list)],
        fix: Some(Fix::CaptureGpu),
        fix_note: String::new(),
        whatif: None,
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

/// The fix for gaps of `cause` with `hint` in this trace ([`Fix::for_gaps`]), and what
/// the trace adds to it: for CPU work the hottest sampled functions, or how to capture
/// them when the trace has no samples.
fn fix(x: &Inputs<'_>, cause: Cause, hint: Hint) -> (Option<Fix>, String) {
    let fix = Fix::for_gaps(cause, hint);
    if hint != Hint::None
        || !matches!(
            cause,
            Cause::HostBusy | Cause::WorkerBusy | Cause::SyncDrain | Cause::CpuContention | Cause::HostWait
        )
    {
        return (Some(fix), String::new());
    }
    if x.trace.host.samples == 0 {
        return (Some(fix), "Capture with nsys profile -s process-tree to see which functions run.".to_string());
    }
    let note = x.hot.get(&cause).filter(|v| !v.is_empty()).map_or_else(String::new, |top| {
        let list: Vec<String> = top.iter().take(3).map(|t| format!("{} {:.0}%", t.label(), t.share * 100.0)).collect();
        format!("Hottest sampled functions in these gaps: {}.", list.join(", "))
    });
    (Some(fix), note)
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
    if x.steps.found() && steady > 0 {
        intervals.map(|(a, b)| w.steady_part(a, b)).sum::<Ns>() as f64 / steady as f64
    } else {
        intervals.map(|(a, b)| b - a).sum::<Ns>() as f64 / span.max(1) as f64
    }
}

fn memcpy_async(x: &Inputs<'_>, span: Ns) -> Option<Finding> {
    let s = &x.copies.async_pageable;
    (s.count > 0).then(|| Finding {
        rule: Rule::CudaMemcpyAsync,
        weight: s.api_ns,
        severity: by_share(run_share(x, s.calls.iter().copied(), span), 0.10, 0.01),
        message: format!(
            "{} async memcpy calls used pageable memory ({}): they ran synchronously, blocking the host for {}",
            s.count,
            fmt_bytes(s.bytes),
            fmt_ns(s.api_ns)
        ),
        evidence: call_set_evidence(s, x.trace),
        fix: Some(Fix::PinMemory),
        fix_note: String::new(),
        whatif: None,
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
        rule: Rule::CudaMemcpySync,
        weight: s.api_ns,
        severity: by_share(run_share(x, s.calls.iter().copied(), span), 0.10, 0.01),
        message: format!(
            "{} synchronous memcpy calls ({}) blocked the host for {} (H2D copies <= 64 KB not counted)",
            s.count,
            fmt_bytes(s.bytes),
            fmt_ns(s.api_ns)
        ),
        evidence: call_set_evidence(s, x.trace),
        fix: Some(Fix::AsyncCopy),
        fix_note: String::new(),
        whatif: None,
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
    // Holes under the threshold right after a sync are the sync's too (the refill).
    let (holes, hole_idle) = x.steady.short_by_cause[Cause::SyncDrain as usize];
    let idle: Ns = sync_gaps.clone().map(|g| w.steady_part(g.start, g.end)).sum::<Ns>() + hole_idle;
    // Syncs that are allocator calls (cudaFree from empty_cache()) have the allocator's fix.
    let allocator: Ns = sync_gaps.filter(|g| g.hint == Hint::Allocator).map(|g| w.steady_part(g.start, g.end)).sum();
    let hint = if allocator > 0 && 2 * allocator >= idle { Hint::Allocator } else { Hint::None };
    let steady = steady_span(x);
    // One sync before reading results is necessary, not per-step synchronization.
    let severity = if gaps + holes <= 1 || steady <= 0 {
        Severity::Info
    } else {
        by_share(idle as f64 / steady as f64, 0.25, 0.05)
    };
    let (fix, fix_note) = fix(x, if gaps > 0 { Cause::SyncDrain } else { Cause::SyncWait }, hint);
    Some(Finding {
        rule: Rule::CudaApiSync,
        weight: idle,
        severity,
        message: format!(
            "{n} cudaDeviceSynchronize/cudaStreamSynchronize calls blocked the host for {}; \
             {gaps} gaps{} began at a host sync, {} of steady-state GPU idle",
            fmt_ns(total),
            if holes > 0 {
                format!(" and {holes} holes under {}", fmt_ns(x.options.min_gap_ns))
            } else {
                String::new()
            },
            fmt_ns(idle)
        ),
        evidence: vec![
            ev("calls", &n),
            ev("total_ns", &total),
            ev("sync_gaps", &gaps),
            ev("sync_holes", &holes),
            ev("sync_idle_ns", &idle),
            ev("longest_call", &format!("{name} {} on {}", fmt_ns(d), x.trace.thread_label(pid, tid))),
        ],
        fix,
        fix_note,
        whatif: None,
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
    let idle = x.steady.counted_idle_ns();
    let startup_note = if startup > 0 {
        format!("; start-up (before the second step) adds {} idle", fmt_ns(startup))
    } else {
        String::new()
    };
    let Some(longest) = longest else {
        // Only start-up or profiler gaps: say so, as information.
        let g = counted(x).max_by_key(|g| g.dur())?;
        return Some(Finding {
            rule: Rule::GpuGaps,
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
            // The summary: the fix is the headline's (issue 32, item 6).
            fix: None,
            fix_note: String::new(),
            whatif: None,
        });
    };
    let share = if steady > 0 { idle as f64 / steady as f64 } else { 0.0 };
    let (cause, cause_ns) = x.steady.dominant()?;
    let hint = dominant_hint(steady_gaps.iter().copied(), cause, in_steady);
    let place = longest.phase.as_deref().map_or("outside any NVTX range".to_string(), |p| format!("in `{p}`"));
    let n = steady_gaps.len();
    Some(Finding {
        rule: Rule::GpuGaps,
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
        fix: None,
        fix_note: String::new(),
        whatif: None,
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
    let u = low_util(x.devices, x.steps.found().then_some(&w));
    let (low, chunks, nregions) = (u.low, u.chunks, u.regions);
    // A loop region leads; a start-up or teardown one is told as such, at info.
    let ((device, a, b, util), of_loop) = match (u.of_loop, u.outside) {
        (Some(r), _) => (r, true),
        (None, Some(r)) => (r, false),
        (None, None) => return None,
    };
    let (severity, last, (fix, fix_note), outside) = if of_loop {
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
        (Severity::Info, ev("worst_outside_steady_ns", &outside_ns), (Some(Fix::StartupOnly), String::new()), note)
    };
    Some(Finding {
        rule: Rule::GpuTimeUtil,
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
        fix_note,
        whatif: None,
    })
}

fn starvation(x: &Inputs<'_>, explainer: &mut Explainer<'_>) -> Option<Finding> {
    if !x.steps.found() {
        return None;
    }
    let name = x.steps.label();
    // The first step is warm-up (lazy loading, the first batch): judge the rest.
    let steps = if x.steps.instances.len() > 1 { &x.steps.instances[1..] } else { &x.steps.instances[..] };
    // Gaps of each device in start order: those overlapping a step are one range.
    let by_device: Vec<Vec<&Gap>> =
        x.devices.iter().map(|d| x.gaps.iter().filter(|g| g.device == d.device).collect()).collect();
    let mut idle = [0 as Ns; Cause::ALL.len()];
    let mut by_phase: HashMap<(Cause, Option<String>), Ns> = HashMap::new();
    let mut hints: HashMap<(Cause, Hint), Ns> = HashMap::new();
    let mut starved = 0usize;
    let mut trees = super::host_cause::Trees::default();
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
                let cause = if whole {
                    cause
                } else {
                    super::host_cause::part_cause(x.trace, x.host, &mut trees, g, (a, b), cause)
                };
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
    let (fix, fix_note) = fix(x, cause, hint);
    Some(Finding {
        rule: Rule::Starvation,
        weight: idle[cause as usize],
        severity: by_share(share, 0.5, 0.2).min(by_share(idle_share, 0.5, 0.2)),
        message: format!(
            "The GPU starved in {} of the {name} ranges ({starved} of {}): {} idle in them, {} of it {}{}{where_}",
            pct(share),
            steps.len(),
            fmt_ns(total),
            pct(idle[cause as usize] as f64 / total.max(1) as f64),
            cause.label(),
            hint.words()
        ),
        evidence: vec![
            ev("step_phase", &x.steps.name.as_deref().unwrap_or("inferred")),
            ev("steps", &steps.len()),
            ev("starved_steps", &starved),
            ev("idle_ns", &total),
            ev("dominant_cause", &cause.label()),
            ev("cause_ns", &idle[cause as usize]),
            ev("phase", &phase.unwrap_or_default()),
        ],
        fix,
        fix_note,
        whatif: None,
    })
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
    let steady = steady_span(x);
    // Holes right after a sync are the sync's refill, not launch overhead.
    let short = x.steady.short_idle_ns - x.steady.short_by_cause[Cause::SyncDrain as usize].1;
    let gaps_idle = x.steady.counted_idle_ns();
    let lb = x.steady.by_cause[Cause::LaunchBound as usize].1;
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
        rule: Rule::LaunchBound,
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
        fix: Some(if graphs_replayed(x) { Fix::HostAheadOfGraphs } else { Fix::GraphTheStep }),
        fix_note: String::new(),
        whatif: None,
    })
}

// A second dense loop after the last step (an evaluation or inference phase, a graph
// replay loop) falls in teardown: say so when teardown holds more GPU idle than the
// steady state, so that the headline's steady numbers are not read as the whole run.
fn teardown_loop(x: &Inputs<'_>) -> Option<Finding> {
    if !x.steps.found() {
        return None;
    }
    let name = x.steps.label();
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
    let steady_idle = x.steady.short_idle_ns + x.steady.counted_idle_ns();
    if busy <= 0 || idle <= steady_idle {
        return None;
    }
    let teardown: Vec<&Gap> = counted(x).filter(|g| g.window == Window::Teardown).collect();
    let cause = dominant_cause(teardown.iter().copied(), Gap::dur).map_or(Cause::Unknown, |c| c.0);
    Some(Finding {
        rule: Rule::TeardownLoop,
        weight: idle,
        severity: Severity::Warning,
        message: format!(
            "After the last {name} the GPU ran on for {} ({} busy) and idled {}, more than the {} idle of the \
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
        fix: Some(Fix::SecondLoop(cause)),
        fix_note: String::new(),
        whatif: None,
    })
}

/// Share of the steady span a region's cost ([`super::Region::cost_ns`]) must hold for a
/// finding: what removing it would save is then worth a user's time.
const REGION_MIN_SHARE: f64 = 0.05;

// A periodic stall, the holes between steps, or another loop, when its cost is a share of
// the steady span worth removing: the largest region of `kind`. Its severity is that
// share: a stall whose steps are long with the GPU busy on the stall's own work (a
// snapshot's slow copies) costs that time too.
fn region(x: &Inputs<'_>, kind: RegionKind) -> Option<Finding> {
    let r = x.regions.iter().find(|r| r.kind == kind)?;
    let span = steady_span(x);
    let share = r.cost_ns() as f64 / span.max(1) as f64;
    if span <= 0 || share < REGION_MIN_SHARE {
        return None;
    }
    let of_idle = pct(r.idle_ns as f64 / x.steady.counted_idle_ns().max(1) as f64);
    let per = r.idle_ns / r.occurrences.max(1) as Ns;
    let every = r.every_steps.map_or_else(String::new, |n| format!(" every {n} steps"));
    let name = crate::text::sanitize(&r.name);
    let (rule, mut message) = match kind {
        RegionKind::Loop => (
            Rule::LoopRegion,
            format!(
                "`{name}`, a loop outside the steps, left the GPU idle for {} in {} instances{every} ({} of the \
                 steady idle, {} of the steady state); mostly {}",
                fmt_ns(r.idle_ns),
                r.occurrences,
                of_idle,
                pct(share),
                r.dominant_cause
            ),
        ),
        RegionKind::Periodic | RegionKind::BetweenSteps | RegionKind::Steps => (
            Rule::PeriodicStall,
            format!(
                "{}{every} the GPU idled {} each time ({} times, `{name}`): {} of the steady idle, {} per step; \
                 mostly {}",
                if kind == RegionKind::Periodic { "In long steps" } else { "Between steps" },
                fmt_ns(per),
                r.occurrences,
                of_idle,
                fmt_ns(r.idle_per_step_ns),
                r.dominant_cause
            ),
        ),
    };
    let mut evidence = vec![
        ev("where", &serde_json::to_value(kind).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default()),
        ev("name", &r.name),
        ev("occurrences", &r.occurrences),
        ev("idle_ns", &r.idle_ns),
        ev("idle_per_occurrence_ns", &per),
        ev("idle_per_step_ns", &r.idle_per_step_ns),
        ev("dominant_cause", &r.dominant_cause),
    ];
    if let Some(n) = r.every_steps {
        evidence.push(ev("every_steps", &n));
    }
    if r.extra_ns > r.idle_ns {
        let _ = write!(
            message,
            "; its long steps take {} beyond the median step in all, GPU work included",
            fmt_ns(r.extra_ns)
        );
        evidence.push(ev("extra_ns", &r.extra_ns));
    }
    let fix = Fix::for_region(kind)?;
    Some(
        Finding::new(rule, by_share(share, 0.5, 0.2), message, evidence)
            .with_fix(fix, String::new())
            .weighing(r.idle_ns),
    )
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
        if x.steps.found() { "steady state" } else { "GPU span" }
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
            // Copies that never ran in the steady state (weights moved at start-up) are
            // slow once: the comparison raises only those of the loop.
            if pin >= 2.0 * page && share > 0.0 {
                severity = severity.max(Severity::Warning);
            }
        }
        None => {
            let _ = write!(message, "; no pinned {d} copies of a like size to compare with");
        }
    }
    let fix = if dir == MemClass::D2H { Fix::PinnedResults } else { Fix::PinMemory };
    Some(Finding::new(Rule::PageableBandwidth, severity, message, evidence).with_fix(fix, String::new()).weighing(pns))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Union;

    #[test]
    fn the_pinned_fix_leads_only_where_pageable_waits_hold_the_most_steady_idle() {
        let g = |start: Ns, end: Ns, cause: Cause, hint: Hint| Gap {
            start,
            end,
            cause,
            hint,
            window: Window::Steady,
            ..Gap::default()
        };
        let sync = |a, b| g(a, b, Cause::SyncDrain, Hint::PageableSync);
        // A sliver of waits on pageable copies beside a host computing most of the step.
        let sliver = [sync(0, 5), g(10, 60, Cause::HostBusy, Hint::None), g(70, 72, Cause::PageableCopy, Hint::None)];
        assert!(!waits_on_pageable_sync(&sliver));
        // The waits (a sync of a pageable copy, the copy's own staging) outweigh each other cause.
        let most = [sync(0, 30), g(40, 60, Cause::HostBusy, Hint::None), g(70, 80, Cause::PageableCopy, Hint::None)];
        assert!(waits_on_pageable_sync(&most));
        // Start-up does not count.
        let early = [Gap { window: Window::Startup, ..sync(0, 30) }, g(40, 45, Cause::HostBusy, Hint::None)];
        assert!(!waits_on_pageable_sync(&early));
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
