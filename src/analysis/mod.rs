//! Analysis: pure functions over a [`Trace`] that say when and why the GPU is idle.
//! Shared by the TUI and the headless report.
//!
//! [`analyze`] runs everything: device unions, gaps with causes ([`gaps`] documents
//! the rule), phases ([`phases`]), transfers and overlap ([`transfers`]), findings
//! ([`findings`]) and totals. Everything is a sweep or a binary search over the sorted
//! lane columns; nothing joins events pairwise, so time is linear in the events.
//! Searches made in time order gallop from the previous hit ([`index::Hints`]): a plain
//! binary search over a column of millions of rows misses the cache at every step.
//!
//! Memory: what is kept is the device unions (about 8.5 bytes per interval, see
//! [`intervals`]) and the gaps. Everything else is per gap, per NVTX range, per lane or
//! per thread, never a copy of the events.

// A `_` arm over one of our enums hides the variant added next (it is how annotations
// once stayed on the wrong GPU): name the variants, or allow it with a reason.
#![warn(clippy::wildcard_enum_match_arm)]

pub(crate) mod findings;
pub(crate) mod gaps;
pub(crate) mod host;
pub(crate) mod host_cause;
pub(crate) mod index;
pub(crate) mod intervals;
pub(crate) mod link;
pub(crate) mod names;
pub(crate) mod pcie;
pub(crate) mod phases;
pub(crate) use phases::Instance;
pub(crate) mod ranks;
pub(crate) mod regap;
pub(crate) mod steps;
pub(crate) mod top;
pub(crate) mod transfers;
pub(crate) mod whatif;

use crate::model::{Ns, Trace};
use intervals::Builder;
pub(crate) use intervals::Union;

/// Default minimum idle gap: 100 us.
pub(crate) const DEFAULT_MIN_GAP_NS: Ns = 100_000;

/// Knobs of the analysis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Shortest idle stretch reported as a gap.
    pub min_gap_ns: Ns,
    /// Keep NVTX names exactly (no `step 7` -> `step N` grouping).
    pub exact_names: bool,
    /// The NVTX phase that is one step (`--step-phase`); chosen from the trace when None.
    pub step_phase: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Self { min_gap_ns: DEFAULT_MIN_GAP_NS, exact_names: false, step_phase: None }
    }
}

/// Busy time of one GPU, as unions of its operations (all streams merged).
#[derive(Debug, Clone, Default)]
pub struct DeviceActivity {
    /// Device id.
    pub device: u32,
    /// Any operation: kernels, copies, memsets, graph executions.
    pub busy: Union,
    /// Kernels and graph executions.
    pub kernels: Union,
    /// Memcpy and memset.
    pub copies: Union,
}

impl DeviceActivity {
    /// Compute the unions for `device` from the trace's GPU lanes, in one merge of
    /// the lanes (each sorted by start already: no copy, no sort).
    pub fn compute(trace: &Trace, device: u32) -> Self {
        use crate::model::LaneKind;
        let lanes: Vec<_> = trace.lanes.iter().filter(|l| l.kind.gpu_work_device() == Some(device)).collect();
        let is_kernel = |k: LaneKind| matches!(k, LaneKind::Kernels { .. } | LaneKind::Graphs { .. });
        let is_copy = |k: LaneKind| matches!(k, LaneKind::Memory { .. });
        let rows = |want: fn(LaneKind) -> bool| lanes.iter().filter(|l| want(l.kind)).map(|l| l.ev.len()).sum();
        let (mut kernels, mut copies) =
            (Builder::with_capacity(rows(is_kernel)), Builder::with_capacity(rows(is_copy)));
        let mut busy = Builder::with_capacity(rows(is_kernel) + rows(is_copy));
        let tagged = lanes.iter().filter(|l| is_kernel(l.kind) || is_copy(l.kind)).map(|l| {
            let kernel = is_kernel(l.kind);
            l.ev.start.iter().zip(l.ev.ends()).map(move |(&s, e)| (s, e, kernel))
        });
        for (s, e, kernel) in itertools::kmerge_by(tagged, |a: &(Ns, Ns, bool), b: &(Ns, Ns, bool)| a.0 < b.0) {
            busy.add(s, e);
            if kernel { kernels.add(s, e) } else { copies.add(s, e) }
        }
        Self { device, busy: busy.finish(), kernels: kernels.finish(), copies: copies.finish() }
    }

    /// First and last busy instant.
    pub fn extent(&self) -> Option<(Ns, Ns)> {
        self.busy.extent()
    }

    /// Total time with copies running and no kernel.
    pub fn copy_only_ns(&self) -> Ns {
        self.busy.total() - self.kernels.total()
    }

    /// Idle time between the first and the last operation (every gap, however short).
    pub fn idle_ns(&self) -> Ns {
        self.extent().map_or(0, |(a, b)| b - a - self.busy.total())
    }
}

/// The union of the events of the lanes whose kind passes `want`. Lanes are sorted by
/// start: they are merged as they are, with no copy and no sort.
pub(crate) fn lanes_union(trace: &Trace, want: impl Fn(crate::model::LaneKind) -> bool) -> Union {
    let lanes = trace.lanes.iter().filter(|l| want(l.kind));
    let rows = lanes.map(|l| l.ev.start.iter().copied().zip(l.ev.ends()));
    Union::from_sorted(itertools::kmerge_by(rows, |a: &(Ns, Ns), b: &(Ns, Ns)| a.0 < b.0))
}

// ---------------------------------------------------------------------------------
// The analysis contract shared by `report` and `tui`. Field names are part of the
// JSON contract documented in README.
// ---------------------------------------------------------------------------------

use crate::model::{MemClass, MemKind};

/// Why the GPU was idle during a gap, from what the CPU threads of its process did
/// (the rule is in [`gaps`] and docs/causes.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cause {
    /// The deciding thread was blocked in a synchronize call or a synchronous copy.
    SyncWait,
    /// A host sync drained the GPU's queue, then the thread worked instead of queueing.
    SyncDrain,
    /// The deciding thread was inside a copy API on pageable memory.
    PageableCopy,
    /// The deciding thread was blocked in an OS runtime call (`poll`, `pthread_cond_wait`, `read`...).
    HostWait,
    /// No API or blocking call: Python or other CPU work on the launching thread.
    HostBusy,
    /// The launching thread waited for producers (DataLoader workers, a pin-memory
    /// thread) that were computing while CPUs the job may use had spare capacity.
    WorkerBusy,
    /// The thread issued CUDA calls back to back; the GPU ran them faster.
    LaunchBound,
    /// The thread, or the producers it waited on, were runnable on saturated CPUs.
    CpuContention,
    /// The thread, or the producers it waited on, were off CPU on storage.
    IoWait,
    /// The work was launched before the gap: the GPU waited on something else.
    Queued,
    /// Profiler overhead (buffer flushes) stalled the launching thread.
    Profiler,
    /// Nothing in the trace explains it.
    #[default]
    Unknown,
}

impl Cause {
    /// Every cause, in report order.
    pub const ALL: [Cause; 12] = [
        Cause::SyncWait,
        Cause::SyncDrain,
        Cause::PageableCopy,
        Cause::HostWait,
        Cause::HostBusy,
        Cause::WorkerBusy,
        Cause::LaunchBound,
        Cause::CpuContention,
        Cause::IoWait,
        Cause::Queued,
        Cause::Profiler,
        Cause::Unknown,
    ];

    /// Stable label used in reports, JSON and the TUI (`sync-wait`, ...).
    pub fn label(self) -> &'static str {
        match self {
            Cause::SyncWait => "sync-wait",
            Cause::SyncDrain => "sync-drain",
            Cause::PageableCopy => "pageable-copy",
            Cause::HostWait => "host-wait",
            Cause::HostBusy => "host-busy",
            Cause::WorkerBusy => "worker-busy",
            Cause::LaunchBound => "launch-bound",
            Cause::CpuContention => "cpu-contention",
            Cause::IoWait => "io-wait",
            Cause::Queued => "queued",
            Cause::Profiler => "profiler",
            Cause::Unknown => "unknown",
        }
    }

    /// The cause with this label.
    pub fn from_label(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.label() == s)
    }
}

/// What the evidence of a gap says beyond its cause, where that changes the fix.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Hint {
    /// Nothing beyond the cause.
    #[default]
    None,
    /// The wait was a sleep (`nanosleep`, `clock_nanosleep`, `usleep`...).
    Sleep,
    /// The draining sync is the one inside a copy from pageable memory (`.to()` of a
    /// pageable tensor: the copy, then a stream synchronize on the same thread).
    PageableSync,
    /// A just-in-time compile (Triton, `torch.compile`, nvFuser, NVRTC) ran in the gap.
    Compile,
    /// The thread waited for Python's GIL, held by another thread of its process.
    Gil,
}

impl Hint {
    /// What the hint says, as words to follow a cause in a message (empty for `None`).
    pub fn words(self) -> &'static str {
        match self {
            Hint::None => "",
            Hint::Sleep => " (sleeps)",
            Hint::PageableSync => " (the syncs of copies from pageable memory)",
            Hint::Compile => " (a JIT compile)",
            Hint::Gil => " (GIL contention)",
        }
    }

    /// Stable label used in JSON (`none`, `sleep`, `pageable-sync`, `compile`).
    pub fn label(self) -> &'static str {
        match self {
            Hint::None => "none",
            Hint::Sleep => "sleep",
            Hint::PageableSync => "pageable-sync",
            Hint::Compile => "compile",
            Hint::Gil => "gil",
        }
    }
}

/// Part of the run a gap falls in (see [`Windows`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub enum Window {
    /// Before the second instance of the step phase: context creation, lazy loading, warm-up.
    Startup,
    /// From the second step to the end of the last one.
    #[default]
    Steady,
    /// After the last step.
    Teardown,
}

impl Window {
    /// Every window, in time order.
    pub const ALL: [Window; 3] = [Window::Startup, Window::Steady, Window::Teardown];

    /// Stable label used in reports and JSON.
    pub fn label(self) -> &'static str {
        match self {
            Window::Startup => "startup",
            Window::Steady => "steady",
            Window::Teardown => "teardown",
        }
    }
}

/// Where the steady state of the run begins and ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Windows {
    /// First instant of the steady window.
    pub steady_start: Ns,
    /// First instant after it.
    pub steady_end: Ns,
}

impl Windows {
    /// The window holding most of `[start, end)`.
    pub fn of(&self, start: Ns, end: Ns) -> Window {
        let clip = |a: Ns, b: Ns| (end.min(b) - start.max(a)).max(0);
        let parts = [
            (Window::Startup, clip(Ns::MIN, self.steady_start)),
            (Window::Steady, clip(self.steady_start, self.steady_end)),
            (Window::Teardown, clip(self.steady_end, Ns::MAX)),
        ];
        // Ties go to steady, then startup.
        parts.iter().rev().max_by_key(|&&(w, t)| (t, w == Window::Steady)).map_or(Window::Steady, |p| p.0)
    }

    /// Length of `[start, end)` inside the steady window.
    pub fn steady_part(&self, start: Ns, end: Ns) -> Ns {
        (end.min(self.steady_end) - start.max(self.steady_start)).max(0)
    }
}

/// One idle stretch of one GPU.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gap {
    /// GPU device id.
    pub device: u32,
    /// Process whose CPU threads explain the gap.
    pub pid: u32,
    /// The deciding thread (it launched the operation that ends the gap), if known.
    pub tid: Option<u32>,
    /// First idle instant.
    pub start: Ns,
    /// First busy instant after the gap.
    pub end: Ns,
    /// The cause.
    pub cause: Cause,
    /// One line of evidence, e.g. `cudaStreamSynchronize 1.2 ms on python3 (tid 814)`.
    pub evidence: String,
    /// Innermost NVTX range (grouped name) covering at least half of the gap on the
    /// deciding thread (else another thread of the process), if any.
    pub phase: Option<String>,
    /// Startup, steady or teardown.
    pub window: Window,
    /// What the evidence adds to the cause, where that changes the fix.
    pub hint: Hint,
    /// What the host did (traces with context switches or CPU samples).
    pub host: Option<Box<host::HostWindow>>,
}

impl Gap {
    /// Length of the gap.
    pub fn dur(&self) -> Ns {
        self.end - self.start
    }
}

/// Distribution of a set of durations.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DurStats {
    /// Sum.
    pub sum_ns: Ns,
    /// Mean.
    pub mean_ns: Ns,
    /// Median.
    pub p50_ns: Ns,
    /// 95th percentile.
    pub p95_ns: Ns,
    /// Maximum.
    pub max_ns: Ns,
}

/// GPU work launched from inside a range (nsys NVTX GPU projection).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Launched {
    /// GPU operations launched by API calls inside the range instances.
    pub count: u64,
    /// Sum of their GPU durations.
    pub gpu_ns: Ns,
    /// Sum over instances of (last op end - first op start).
    pub span_ns: Ns,
}

/// Statistics of one NVTX phase (ranges grouped by name).
#[derive(Debug, Clone, PartialEq)]
pub struct Phase {
    /// Grouped name (`step N`) or the exact name with `--exact-names`.
    pub name: String,
    /// Number of range instances.
    pub count: u64,
    /// CPU wall time of the instances.
    pub wall: DurStats,
    /// GPU busy (any operation) over the union of the phase's windows, summed over the
    /// GPUs of the ranges' process (see [`phases`]).
    pub gpu_busy_ns: Ns,
    /// Kernel busy over the windows.
    pub kernel_busy_ns: Ns,
    /// Copy (memcpy/memset) busy over the windows.
    pub copy_busy_ns: Ns,
    /// Idle time of those GPUs over the windows (window length minus busy, per GPU).
    pub idle_ns: Ns,
    /// Copy time with no kernel running over the windows.
    pub exposed_copy_ns: Ns,
    /// Share of copy time with a kernel running (0..=1), None without copies.
    pub copy_overlap: Option<f64>,
    /// Host-to-device bytes of copies running in the windows, prorated by overlap.
    pub h2d_bytes: u64,
    /// Device-to-host bytes of copies running in the windows.
    pub d2h_bytes: u64,
    /// Effective H2D bandwidth (those bytes over the H2D copy time in the windows), GB/s.
    pub h2d_gbps: Option<f64>,
    /// Effective D2H bandwidth, GB/s.
    pub d2h_gbps: Option<f64>,
    /// GPU projection of the ranges.
    pub launched: Launched,
    /// (start, end) of the slowest instance.
    pub slowest: (Ns, Ns),
    /// Share of instances in which gaps (>= min-gap) cover at least min-gap (0..=1).
    pub starved_share: f64,
    /// PCIe throughput over the phase and its copies; None without GPU metrics.
    pub pcie: Option<pcie::Pcie>,
    /// How the H2D copies the phase launched ran.
    pub copy_verdict: pcie::CopyVerdict,
    /// H2D copy time the phase launched with no kernel running on their GPU.
    pub h2d_exposed_ns: Ns,
}

/// Transfers of one direction and host memory kind.
#[derive(Debug, Clone, PartialEq)]
pub struct Transfer {
    /// Direction.
    pub direction: MemClass,
    /// Memory kind on the host side (device for D2D).
    pub memory: MemKind,
    /// Number of copies.
    pub count: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Sum of copy durations.
    pub busy_ns: Ns,
    /// bytes / busy time, GB/s (decimal).
    pub gbps: f64,
    /// Fastest single copy seen, GB/s.
    pub max_gbps: f64,
    /// Copies issued by an async API on pageable memory (the async that is not).
    pub async_pageable: u64,
    /// Copies issued by a synchronous API.
    pub sync_api: u64,
}

/// Copy/compute overlap over the whole trace.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Overlap {
    /// Total copy busy time (union per GPU, summed).
    pub copy_ns: Ns,
    /// Copy time with a kernel running on the same GPU.
    pub overlapped_ns: Ns,
}

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Worth knowing.
    Info,
    /// Costs time.
    Warning,
    /// Dominates the run.
    Critical,
}

impl Severity {
    /// Stable label used in reports and JSON (`info`, `warning`, `critical`).
    pub fn label(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Critical => "critical",
        }
    }
}

/// A problem found in the trace, with evidence and a fix.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// Rule id (`cuda_memcpy_async`, `gpu_gaps`, `starvation`, ...).
    pub rule: &'static str,
    /// Severity.
    pub severity: Severity,
    /// One-sentence message with the numbers.
    pub message: String,
    /// Evidence: key facts as (name, value) pairs.
    pub evidence: Vec<(String, String)>,
    /// Concrete fix.
    pub fix: String,
    /// What it explains, in ns, to rank findings of one severity: the steady idle (or host
    /// time) it accounts for, `Ns::MAX` for missing GPU records, 0 for none. Not reported.
    pub weight: Ns,
}

/// Event counts of the trace; serialized as the report's `totals` (and `traces[].totals`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Totals {
    /// Kernels.
    pub kernels: u64,
    /// Whole CUDA-graph executions (recorded when per-node kernels were not traced).
    pub graphs: u64,
    /// Memcpy operations.
    pub memcpy: u64,
    /// Memset operations.
    pub memset: u64,
    /// CUDA runtime and driver calls.
    pub api_calls: u64,
    /// NVTX ranges (push/pop and start/end).
    pub nvtx_ranges: u64,
    /// OS runtime calls.
    pub osrt_calls: u64,
}

/// Everything the report and the TUI show about a trace.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// Options used.
    pub options: Options,
    /// Context switches by CPU and the host lanes by thread, built once; the viewer and
    /// gap recomputations share it.
    pub host: std::sync::Arc<host::HostIndex>,
    /// Correlation lookups, built once; gap recomputations at a new threshold share it.
    pub lookups: std::sync::Arc<index::Index>,
    /// Per GPU busy unions.
    pub devices: Vec<DeviceActivity>,
    /// Gaps of at least `options.min_gap_ns`, sorted by start.
    pub gaps: Vec<Gap>,
    /// The step phase (grouped name), if the trace has one.
    pub step_phase: Option<String>,
    /// Its outermost instances as (start, end), sorted by start (the two-run view aligns on them).
    pub step_instances: Vec<(Ns, Ns)>,
    /// The steady window.
    pub windows: Windows,
    /// GPU idle inside the steady window in holes shorter than `options.min_gap_ns`.
    pub short_idle_ns: Ns,
    /// Phases, sorted by total wall time, largest first.
    pub phases: Vec<Phase>,
    /// Transfers by direction and memory kind.
    pub transfers: Vec<Transfer>,
    /// Copy/compute overlap.
    pub overlap: Overlap,
    /// Findings, most severe first.
    pub findings: Vec<Finding>,
    /// Event counts.
    pub totals: Totals,
    /// The most sampled functions of the threads that explain each cause's gaps.
    pub hot_by_cause: std::collections::HashMap<Cause, Vec<host::TopSymbol>>,
    /// Collective waits and the straggler (traces of several ranks; empty otherwise).
    pub collectives: ranks::Collectives,
    /// Per rank of a trace of several ranks: its phases (as `phases`, over its own
    /// processes and GPUs); empty for one export.
    pub rank_phases: Vec<(u32, Vec<Phase>)>,
    /// The steady step's numbers the what-ifs stand on (None without two steady steps).
    pub step_model: Option<whatif::StepModel>,
    /// What each applicable fix would save per step.
    pub whatif: Vec<whatif::WhatIf>,
}

/// Run every analysis over `trace`.
///
/// Two threads: the NVTX projection and the transfer rows need neither the device
/// unions nor the gaps, so they run beside them; then the phase statistics run beside
/// the step phase and the findings.
pub fn analyze(trace: &Trace, options: &Options) -> Analysis {
    let index = index::Index::build(trace);
    let ((groups, launched, (transfers, copies)), (devices, (mut gaps, host_ix))) = both(
        || {
            let groups = phases::instances(trace, options.exact_names);
            let launched = phases::project(trace, &index, &groups);
            (groups, launched, transfers::transfers(trace, &index))
        },
        || {
            let devices: Vec<DeviceActivity> =
                trace.devices().into_iter().map(|d| DeviceActivity::compute(trace, d)).collect();
            let mut gaps = gaps::find(trace, &devices, &index, options);
            let host_ix = host::HostIndex::build(trace);
            host_cause::refine(trace, &host_ix, &mut gaps);
            (devices, (gaps, host_ix))
        },
    );
    let by_phase = pcie::ByPhase::of(trace, &index, &groups);
    let grouped = options.exact_names.then(|| phases::instances(trace, false));
    let mut steps = steps::choose(trace, grouped.as_ref().unwrap_or(&groups), &devices, options.step_phase.as_deref());
    whatif::extend_to_gpu_end(&mut steps, trace, &index);
    for g in &mut gaps {
        g.window = steps.windows.of(g.start, g.end);
    }
    let hot = host_cause::top_by_cause(&host_cause::steady_hot(&gaps), host_cause::TOP_FUNCTIONS);
    let phase_ctx = phases::PhaseCtx::new(trace, &index, &devices, &gaps, options.min_gap_ns);
    let collectives = ranks::analyze(trace, &index, &steps, &groups, options);
    let rank_phases: Vec<(u32, Vec<Phase>)> = if trace.ranks.len() > 1 {
        trace
            .ranks
            .iter()
            .map(|r| {
                let mine: Vec<(String, Vec<phases::Instance>)> = groups
                    .iter()
                    .map(|(n, v)| (n.clone(), v.iter().filter(|i| r.pids.contains(&i.pid)).copied().collect()))
                    .filter(|(_, v): &(String, Vec<phases::Instance>)| !v.is_empty())
                    .collect();
                let launched = phases::project(trace, &index, &mine);
                (r.rank, phases::stats(&phase_ctx, mine, &launched))
            })
            .collect()
    } else {
        Vec::new()
    };
    let (mut phases, mut findings) = both(
        || phases::stats(&phase_ctx, groups, &launched),
        || {
            let inputs = findings::Inputs {
                trace,
                index: &index,
                devices: &devices,
                gaps: &gaps,
                transfers: &transfers,
                copies: &copies,
                phases: &phase_ctx,
                steps: &steps,
                hot: &hot,
                host: &host_ix,
                options,
            };
            findings::findings(&inputs, &mut gaps::Explainer::new(trace, &index, &devices, options))
        },
    );
    let h2d = pcie::all_h2d(trace);
    pcie::annotate(trace, &devices, &mut phases, &by_phase, &h2d);
    let short_idle_ns = findings::short_idle_ns(&devices, &gaps, steps.windows);
    let step_model = whatif::steady_model((trace, &index), &devices, &gaps, &steps, (&h2d, short_idle_ns));
    let whatifs = step_model.as_ref().map(|m| whatif::all(trace, m, &h2d)).unwrap_or_default();
    let steady_ns = steps.windows.steady_end - steps.windows.steady_start;
    let link = link::findings(&phases, steps.name.as_deref(), step_model.as_ref());
    let ranked = ranks::finding(&collectives, steady_ns);
    findings.extend(link.into_iter().chain(ranked));
    link::attach(&mut findings, &whatifs);
    let pageable_sync = gaps.iter().any(|g| g.window == Window::Steady && g.hint == Hint::PageableSync);
    findings::order(&mut findings, pageable_sync);
    Analysis {
        host: std::sync::Arc::new(host_ix),
        lookups: std::sync::Arc::new(index),
        collectives,
        rank_phases,
        options: options.clone(),
        overlap: transfers::overlap(&devices),
        totals: transfers::totals(trace),
        step_instances: steps.instances.iter().map(|i| (i.start, i.end)).collect(),
        step_phase: steps.name,
        hot_by_cause: hot,
        short_idle_ns,
        step_model,
        whatif: whatifs,
        windows: steps.windows,
        devices,
        gaps,
        phases,
        transfers,
        findings,
    }
}

// Run `a` on a second thread and `b` on this one.
fn both<A: Send, B>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B) -> (A, B) {
    std::thread::scope(|s| {
        let side = s.spawn(a);
        let b = b();
        let a = side.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
        (a, b)
    })
}

/// Idle gaps of at least `options.min_gap_ns` on every GPU, sorted by start, with causes
/// (the rule is in [`gaps`]).
pub fn find_gaps(trace: &Trace, devices: &[DeviceActivity], options: &Options) -> Vec<Gap> {
    find_gaps_with(trace, devices, options, &host::HostIndex::build(trace))
}

/// [`find_gaps`] with the host index already built (`Analysis::host`).
pub(crate) fn find_gaps_with(
    trace: &Trace,
    devices: &[DeviceActivity],
    options: &Options,
    host: &host::HostIndex,
) -> Vec<Gap> {
    let mut gaps = gaps::find(trace, devices, &index::Index::build(trace), options);
    host_cause::refine(trace, host, &mut gaps);
    gaps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ApiKind, Events, Lane, LaneKind, Strings};

    // Steps of `step_us` µs from 0; in each, kernels of `k_us` launched every `period_us`
    // by thread 1 of process 1; then `tail` more kernels after the last step, `tail_gap`
    // apart. Returns the trace and the kernels' (start, end).
    fn loop_trace(
        steps: i64,
        step_us: i64,
        k_us: i64,
        period_us: i64,
        tail: i64,
        tail_gap: i64,
    ) -> (Trace, Vec<(Ns, Ns)>) {
        let mut t = Trace { strings: Strings::new(), ..Trace::default() };
        let (mut k, mut api, mut nvtx) = (Events::default(), Events::default(), Events::default());
        let (kname, lname) = (t.strings.intern("k"), t.strings.intern("cudaLaunchKernel"));
        let mut spans = Vec::new();
        let mut corr = 1;
        let mut launch = |at: Ns, spans: &mut Vec<(Ns, Ns)>| {
            api.push(at - 8_000, at - 3_000, lname, Some(corr), None, Some(ApiKind::Launch as u32));
            k.push(at, at + k_us * 1000, kname, Some(corr), Some(0), None);
            spans.push((at, at + k_us * 1000));
            corr += 1;
        };
        for s in 0..steps {
            let name = t.strings.intern(&format!("step {s}"));
            nvtx.push(s * step_us * 1000, (s + 1) * step_us * 1000, name, None, None, Some(0));
            let mut at = s * step_us * 1000 + 10_000;
            while at + k_us * 1000 < (s + 1) * step_us * 1000 {
                launch(at, &mut spans);
                at += period_us * 1000;
            }
        }
        for i in 0..tail {
            launch(steps * step_us * 1000 + 10_000 + i * tail_gap, &mut spans);
        }
        t.lanes.push(Lane::new(LaneKind::Kernels { device: 0, stream: 7 }, 1, k));
        t.lanes.push(Lane::new(LaneKind::CudaApi { tid: 1 }, 1, api));
        t.lanes.push(Lane::new(LaneKind::Nvtx { tid: 1, depth: 0 }, 1, nvtx));
        (t, spans)
    }

    #[test]
    fn idle_in_holes_under_the_threshold_is_counted_and_can_be_launch_bound() {
        // 2 µs kernels every 20 µs: 90% idle in 18 µs holes, no gap reaches 100 µs.
        let (t, spans) = loop_trace(6, 1000, 2, 20, 0, 0);
        let a = analyze(&t, &Options::default());
        let (lo, hi) = (a.windows.steady_start, a.windows.steady_end);
        // Brute force: the holes between consecutive kernels, clipped to the steady window,
        // plus the idle from the window's edges to the GPU's first and last kernel in it.
        let mut want = 0;
        for w in spans.windows(2) {
            want += (w[1].0.min(hi) - w[0].1.max(lo)).max(0);
        }
        assert_eq!(a.short_idle_ns, want);
        assert!(a.gaps.iter().all(|g| g.window != Window::Steady), "{:?}", a.gaps);
        let f = a.findings.first().unwrap();
        assert_eq!((f.rule, f.severity), ("launch_bound", Severity::Critical), "{:?}", a.findings);
        let ev = |k: &str| f.evidence.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).unwrap();
        assert_eq!(ev("median_kernel_ns"), "2000");
        assert_eq!(ev("median_launch_period_ns"), "20000");
        // Kernels as long as their period: no holes, no finding.
        let (t, _) = loop_trace(6, 1000, 20, 20, 0, 0);
        let a = analyze(&t, &Options::default());
        assert!(a.findings.iter().all(|f| f.rule != "launch_bound"), "{:?}", a.findings);
    }

    #[test]
    fn a_second_loop_after_the_last_step_is_reported_when_it_idles_more() {
        // Busy steps, then 40 kernels 1 ms apart after the last one.
        let (t, _) = loop_trace(4, 1000, 19, 20, 40, 1_000_000);
        let a = analyze(&t, &Options::default());
        let f = a.findings.iter().find(|f| f.rule == "teardown_loop").expect("teardown_loop");
        assert!(f.message.contains("After the last `step N`"), "{}", f.message);
        let (t, _) = loop_trace(4, 1000, 19, 20, 0, 0);
        assert!(analyze(&t, &Options::default()).findings.iter().all(|f| f.rule != "teardown_loop"));
    }

    #[test]
    fn a_trace_without_gpu_work_analyzes_to_nothing() {
        let a = analyze(&Trace::default(), &Options::default());
        assert!(a.devices.is_empty() && a.gaps.is_empty() && a.findings.is_empty() && a.transfers.is_empty());
        let mut t = Trace { strings: Strings::new(), ..Trace::default() };
        let mut ev = Events::default();
        let name = t.strings.intern("step 1");
        ev.push(0, 100, name, None, None, Some(0));
        ev.push(200, 300, name, None, None, Some(0));
        ev.push(400, 500, name, None, None, Some(0));
        t.lanes.push(Lane::new(LaneKind::Nvtx { tid: 1, depth: 0 }, 1, ev));
        let a = analyze(&t, &Options::default());
        assert!(a.findings.is_empty(), "{:?}", a.findings);
        assert_eq!(a.phases.len(), 1);
        assert_eq!((a.phases[0].gpu_busy_ns, a.phases[0].idle_ns, a.phases[0].launched.count), (0, 0, 0));
    }
}
