//! The analysis's shared types: what a gap, a phase, a finding and the whole
//! [`Analysis`] hold. Field names are part of the JSON contract documented in docs/json.md.

use super::intervals::{Builder, Union};
use super::{Fix, Rule};
use super::{host, index, pcie, ranks, whatif};
use crate::model::{MemClass, MemKind, Ns, Trace};

/// Default minimum idle gap: 100 us.
pub(crate) const DEFAULT_MIN_GAP_NS: Ns = 100_000;

/// Knobs of the analysis.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Options {
    /// Shortest idle stretch reported as a gap.
    pub min_gap_ns: Ns,
    /// Keep NVTX names exactly (no `step 7` -> `step N` grouping).
    pub exact_names: bool,
    /// The NVTX phase that is one step (`--step-phase`); chosen from the trace when None.
    pub step_phase: Option<String>,
    /// Infer the steps from the kernels even where an NVTX phase marks them (`--infer-steps`).
    pub infer_steps: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self { min_gap_ns: DEFAULT_MIN_GAP_NS, exact_names: false, step_phase: None, infer_steps: false }
    }
}

/// A fixed label (a cause's or a limit's name); named so that serde's derive reads it
/// with [`static_str`] rather than borrowing it from its input.
pub(crate) type Label = &'static str;

/// A `&'static str` label read back from the analysis cache (a cause's or a limit's
/// name), kept once per process: reading entries again does not grow memory.
pub(crate) fn static_str<'de, D: serde::Deserializer<'de>>(d: D) -> Result<&'static str, D::Error> {
    use std::sync::{Mutex, PoisonError};
    static SEEN: Mutex<std::collections::BTreeSet<&'static str>> = Mutex::new(std::collections::BTreeSet::new());
    let s = <String as serde::Deserialize>::deserialize(d)?;
    let mut seen = SEEN.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(&known) = seen.get(s.as_str()) {
        return Ok(known);
    }
    let new: &'static str = Box::leak(s.into_boxed_str());
    seen.insert(new);
    Ok(new)
}

/// Busy time of one GPU, as unions of its operations (all streams merged).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
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

/// Why the GPU was idle during a gap, from what the CPU threads of its process did
/// (the rule is in [`gaps`] and docs/causes.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
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
    /// The draining or waiting call is an allocator call that synchronises implicitly
    /// (`cudaFree` from `torch.cuda.empty_cache()`, `cudaMalloc` on a busy device,
    /// `cudaHostAlloc`/`cudaHostRegister`...): allocator churn.
    Allocator,
    /// The launching thread wrote a checkpoint in the gap: most of it in file writes and
    /// syncs (`write`, `writev`, `fsync`, `close`...), or its longest OS call made by a
    /// serializer (`PyTorchStreamWriter`, pickle).
    Checkpoint,
    /// The thread whose work explains the gap spent most of its samples in OpenMP's
    /// runtime (`libgomp`): threads spin-waiting after parallel regions.
    OpenMp,
    /// With no OS trace, the deciding thread sat in the DataLoader's `__next__` (a user
    /// range such as `enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__`):
    /// the loop waited for its next batch.
    Loader,
    /// A kernel chosen and loaded for an input shape not seen before: the launching thread
    /// ran cuBLAS(Lt)/cuDNN host code (heuristics, autotuning) and then loaded the chosen
    /// kernel lazily (`cuLibraryLoadData`, `cuModuleLoadData`) in the gap.
    NewShapes,
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
            Hint::Allocator => " (allocator calls that synchronise: cudaFree, cudaMalloc...)",
            Hint::Checkpoint => " (checkpoint writes on the launching thread)",
            Hint::OpenMp => " (OpenMP threads spinning in libgomp)",
            Hint::Loader => " (waiting in the DataLoader's next batch)",
            Hint::NewShapes => " (kernels chosen and loaded for input shapes not seen before)",
        }
    }

    /// Stable label used in JSON (`none`, `sleep`, `pageable-sync`, `compile`, `gil`,
    /// `allocator`, `checkpoint`, `openmp`, `loader`, `new-shapes`).
    pub fn label(self) -> &'static str {
        match self {
            Hint::None => "none",
            Hint::Sleep => "sleep",
            Hint::PageableSync => "pageable-sync",
            Hint::Compile => "compile",
            Hint::Gil => "gil",
            Hint::Allocator => "allocator",
            Hint::Checkpoint => "checkpoint",
            Hint::OpenMp => "openmp",
            Hint::Loader => "loader",
            Hint::NewShapes => "new-shapes",
        }
    }
}

/// Part of the run a gap falls in (see [`Windows`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Launched {
    /// GPU operations launched by API calls inside the range instances.
    pub count: u64,
    /// Sum of their GPU durations.
    pub gpu_ns: Ns,
    /// Sum over instances of (last op end - first op start).
    pub span_ns: Ns,
}

/// Statistics of one NVTX phase (ranges grouped by name).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Overlap {
    /// Total copy busy time (union per GPU, summed).
    pub copy_ns: Ns,
    /// Copy time with a kernel running on the same GPU.
    pub overlapped_ns: Ns,
}

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
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
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Finding {
    /// The rule that found it.
    pub rule: Rule,
    /// Severity.
    pub severity: Severity,
    /// One-sentence message with the numbers.
    pub message: String,
    /// Evidence: key facts as (name, value) pairs.
    pub evidence: Vec<(String, String)>,
    /// What to do about it.
    pub fix: Option<Fix>,
    /// What this trace adds to the fix's text (its hottest sampled functions, or how to
    /// capture them); empty for none.
    pub fix_note: String,
    /// The what-if that prices the fix, when one does (see [`Fix::priced_as`]).
    pub whatif: Option<whatif::WhatIf>,
    /// What it explains, in ns, to rank findings of one severity: the steady idle (or host
    /// time) it accounts for, `Ns::MAX` for missing GPU records, 0 for none. Not reported.
    pub weight: Ns,
}

impl Finding {
    /// A finding of `rule` with its fix and no what-if yet (the pipeline attaches it).
    pub(crate) fn new(rule: Rule, severity: Severity, message: String, evidence: Vec<(String, String)>) -> Self {
        Finding { rule, severity, message, evidence, fix: None, fix_note: String::new(), whatif: None, weight: 0 }
    }

    /// With this fix, and what the trace adds to it.
    pub(crate) fn with_fix(self, fix: Fix, note: String) -> Self {
        Finding { fix: Some(fix), fix_note: note, ..self }
    }

    /// With this weight (see [`Finding::weight`]).
    pub(crate) fn weighing(self, weight: Ns) -> Self {
        Finding { weight, ..self }
    }

    /// The fix in words, with what the trace adds (empty without a fix).
    pub fn fix_text(&self) -> String {
        let Some(fix) = &self.fix else { return String::new() };
        let text = fix.text();
        if self.fix_note.is_empty() { text.into_owned() } else { format!("{text} {}", self.fix_note) }
    }
}

/// Event counts of the trace; serialized as the report's `totals` (and `traces[].totals`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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

/// Everything the report and the TUI show about a trace (the default: that of a trace
/// with nothing in it, which the viewer shows until the analysis is done).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Analysis {
    /// Options used.
    pub options: Options,
    /// Context switches by CPU and the host lanes by thread, built once; the viewer and
    /// gap recomputations share it.
    #[serde(skip)]
    pub host: std::sync::Arc<host::HostIndex>,
    /// Correlation lookups, built once; gap recomputations at a new threshold share it.
    #[serde(skip)]
    pub lookups: std::sync::Arc<index::Index>,
    /// Per GPU busy unions.
    pub devices: Vec<DeviceActivity>,
    /// The mean steady step of the GPU the steps ran on, split (None without steps).
    pub budget: Option<super::Budget>,
    /// Per GPU with two processes or more: each process's work on it, busiest first.
    pub processes: Vec<(u32, Vec<super::GpuProcess>)>,
    /// Gaps of at least `options.min_gap_ns`, sorted by start.
    pub gaps: Vec<Gap>,
    /// The step phase (grouped name), if an NVTX (or Kineto) phase marks the steps.
    pub step_phase: Option<String>,
    /// The steps, whatever marked them.
    pub steps: StepsInfo,
    /// Its outermost instances as (start, end), sorted by start (the two-run view aligns on them).
    pub step_instances: Vec<(Ns, Ns)>,
    /// The steady window.
    pub windows: Windows,
    /// The steady window's idle: gaps by cause and short holes, summed once.
    pub steady: Steady,
    /// The steady window's holes shorter than `options.min_gap_ns` per phase and cause,
    /// the most idle first.
    pub short_holes: Vec<ShortHoles>,
    /// Where the steady idle sits (ordinary steps, periodic stalls, between steps, other
    /// loops), largest first.
    pub regions: Vec<super::Region>,
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

/// The steady window's idle, summed once: the report, the diff and the findings read it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Steady {
    /// Each GPU's first to last operation, clipped to the window, summed over GPUs.
    pub span_ns: Ns,
    /// Per cause (indexed by `Cause as usize`): gaps with time in the window, and that time.
    pub by_cause: [(usize, Ns); Cause::ALL.len()],
    /// GPU idle inside the window in holes shorter than `options.min_gap_ns`, all GPUs.
    pub short_idle_ns: Ns,
    /// The same short holes per cause (indexed by `Cause as usize`): holes with time in
    /// the window, and that time; the times add up to `short_idle_ns`.
    pub short_by_cause: [(usize, Ns); Cause::ALL.len()],
}

impl Steady {
    /// The steady idle of `gaps` on `devices` (gaps' windows already set).
    pub(crate) fn of(devices: &[DeviceActivity], gaps: &[Gap], w: Windows) -> Self {
        let mut by_cause = [(0usize, 0 as Ns); Cause::ALL.len()];
        for g in gaps {
            let part = w.steady_part(g.start, g.end);
            if part > 0 {
                let c = &mut by_cause[g.cause as usize];
                (c.0, c.1) = (c.0 + 1, c.1 + part);
            }
        }
        Steady {
            span_ns: devices.iter().filter_map(DeviceActivity::extent).map(|(a, b)| w.steady_part(a, b)).sum(),
            by_cause,
            short_idle_ns: short_idle_ns(devices, gaps, w),
            short_by_cause: [(0, 0); Cause::ALL.len()],
        }
    }

    /// Gaps with any time in the window.
    pub fn gaps(&self) -> usize {
        self.by_cause.iter().map(|c| c.0).sum()
    }

    /// Gap time inside the window, every cause.
    pub fn idle_ns(&self) -> Ns {
        self.by_cause.iter().map(|c| c.1).sum()
    }

    /// Gap time inside the window that findings count: all but profiler overhead.
    pub fn counted_idle_ns(&self) -> Ns {
        self.idle_ns() - self.by_cause[Cause::Profiler as usize].1
    }

    /// The cause with the most steady gap time, profiler overhead left out, and that
    /// time; ties go to the cause first in [`Cause::ALL`].
    pub fn dominant(&self) -> Option<(Cause, Ns)> {
        Cause::ALL
            .into_iter()
            .filter(|&c| c != Cause::Profiler)
            .map(|c| (c, self.by_cause[c as usize].1))
            .filter(|&(_, t)| t > 0)
            .rev()
            .max_by_key(|&(_, t)| t)
    }
}

/// GPU idle inside the steady window in holes shorter than the gaps, summed over GPUs.
fn short_idle_ns(devices: &[DeviceActivity], gaps: &[Gap], w: Windows) -> Ns {
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

/// Holes shorter than the gap threshold in the steady window that share a phase and a
/// cause, summed (they may number millions: none is kept alone).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ShortHoles {
    /// The phase the holes fall in (grouped name), as a gap's.
    pub phase: Option<String>,
    /// Their cause, as a gap's.
    pub cause: Cause,
    /// Holes with time in the window.
    pub count: usize,
    /// Their time inside the window.
    pub total_ns: Ns,
}

/// What marked the steps of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepSource {
    /// An NVTX range, one instance per step.
    Nvtx,
    /// The PyTorch profiler's `ProfilerStep#N`.
    Profiler,
    /// The kernel sequence that repeats once per step.
    Inferred,
    /// Nothing: no period holds.
    #[default]
    None,
}

/// The steps of a run: the report's `steps`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StepsInfo {
    /// `nvtx`, `profiler`, `inferred` or `none`.
    pub source: StepSource,
    /// The step phase, for NVTX and profiler steps.
    pub phase: Option<String>,
    /// What marked a boundary: the NVTX phase, or the kernel whose launches repeat once per step.
    pub anchor: Option<String>,
    /// Steps.
    pub count: usize,
    /// Median step period (start to next start; the last step's own length counts once).
    pub median_ns: Option<Ns>,
    /// 95th percentile of the same.
    pub p95_ns: Option<Ns>,
}

impl StepsInfo {
    /// The summary of `instances` (sorted by start) marked by `source`.
    pub(crate) fn of(source: StepSource, phase: Option<&str>, anchor: Option<&str>, instances: &[(Ns, Ns)]) -> Self {
        let mut periods: Vec<Ns> = instances.windows(2).map(|w| w[1].0 - w[0].0).collect();
        periods.sort_unstable();
        let at = |q: usize| (!periods.is_empty()).then(|| periods[((periods.len() - 1) * q).div_ceil(100)]);
        StepsInfo {
            source,
            phase: phase.map(str::to_string),
            anchor: anchor.or(phase).map(str::to_string),
            count: instances.len(),
            median_ns: at(50),
            p95_ns: at(95),
        }
    }
}
