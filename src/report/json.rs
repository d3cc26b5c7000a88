//! The JSON report: a documented contract. All times are integer nanoseconds on the
//! trace's timeline, bytes are integers, rates are decimal GB/s (bytes/ns).
//!
//! docs/json.md's table (`report --format json`) lists every field, and `tests/it/contract.rs`
//! checks it against the output of the fixtures, whose snapshots pin the values; the
//! structs below are the serde side of it. Several exports (ranks) add `traces` and
//! `collectives`, and `devices[]` gets `rank` and `gpu`; no other field changes meaning.
//! Null stands for nothing to divide by (`copy_overlap`, `h2d_gbps`, `d2h_gbps`) or for
//! no such thing (a gap's `phase` outside any NVTX range, no straggler).

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde::Serialize;

use super::fields::PhaseFields;
use crate::analysis::top::top_gaps;
use crate::analysis::{Analysis, Cause, Gap, Totals};
use crate::model::{Ns, Trace};

/// Number of gaps listed in `gaps.top`.
pub(crate) const TOP_GAPS: usize = 20;

/// The whole JSON document.
#[derive(Debug, Serialize)]
pub struct Report<'a> {
    /// The export (with several: the merged trace).
    pub trace: TraceInfo<'a>,
    /// One entry per input, by rank (several exports only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traces: Option<Vec<InputInfo<'a>>>,
    /// Collective waits and the straggler (several exports only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub collectives: Option<CollectivesInfo<'a>>,
    /// The steps and what marked them (an NVTX phase, `ProfilerStep#N`, or inferred from
    /// the kernels).
    pub steps: &'a crate::analysis::StepsInfo,
    /// Event counts.
    pub totals: Totals,
    /// Per-GPU busy and idle time.
    pub devices: Vec<Device>,
    /// Transfers by direction and memory kind.
    pub transfers: Vec<Transfer>,
    /// Copy/compute overlap.
    pub overlap: Overlap,
    /// NVTX phases, largest wall time first.
    pub phases: Vec<Phase<'a>>,
    /// Idle gaps.
    pub gaps: Gaps<'a>,
    /// Where the steady idle sits: ordinary steps, periodic stalls, between steps, other
    /// loops; largest first.
    pub regions: &'a [crate::analysis::Region],
    /// The mean steady step split into busy time and idle by cause (null without steps).
    pub budget: Option<StepBudget>,
    /// Findings, in headline order.
    pub findings: Vec<Finding<'a>>,
    /// GPU counters per GPU; empty when the capture sampled none.
    pub gpu_metrics: Vec<GpuMetrics<'a>>,
    /// What each fix the trace holds the numbers for would save per steady step.
    pub whatif: &'a [crate::analysis::whatif::WhatIf],
}

/// One GPU's counters in `gpu_metrics`.
#[derive(Debug, Serialize)]
pub struct GpuMetrics<'a> {
    /// GPU id.
    pub device: u32,
    /// Sampling instants (per metric).
    pub samples: usize,
    /// Median time between samples.
    pub period_ns: Ns,
    /// Each metric's summary.
    pub series: Vec<SeriesSummary<'a>>,
}

/// One metric's mean, p95 and max over the whole capture.
#[derive(Debug, Serialize)]
pub struct SeriesSummary<'a> {
    /// As `TARGET_INFO_GPU_METRICS.metricName` spells it.
    pub name: &'a str,
    /// Mean of the samples.
    pub mean: f64,
    /// 95th percentile (nearest rank).
    pub p95: i64,
    /// Largest sample.
    pub max: i64,
}

fn gpu_metrics(trace: &Trace) -> Vec<GpuMetrics<'_>> {
    let c = &trace.counters;
    c.devices()
        .into_iter()
        .filter_map(|d| {
            let first = c.of(d).next()?;
            let series = c
                .of(d)
                .filter_map(|s| {
                    s.summary().map(|x| SeriesSummary { name: &s.name, mean: x.mean, p95: x.p95, max: x.max })
                })
                .collect();
            Some(GpuMetrics { device: d, samples: first.len(), period_ns: first.period_ns(), series })
        })
        .collect()
}

/// `trace`.
#[derive(Debug, Serialize)]
pub struct TraceInfo<'a> {
    /// Path of the export.
    pub path: &'a str,
    /// nsys version that exported it.
    pub nsys_version: &'a str,
    /// Export schema version.
    pub schema_version: &'a str,
    /// Duration covered by events.
    pub duration_ns: Ns,
    /// First event start.
    pub start_ns: Ns,
    /// GPUs with activity.
    pub gpus: Vec<GpuInfo<'a>>,
    /// The NVTX phase taken as one step (grouped name), or null.
    pub step_phase: Option<&'a str>,
    /// First instant of the steady window.
    pub steady_start_ns: Ns,
    /// First instant after the steady window.
    pub steady_end_ns: Ns,
    /// Events left out for corrupt timestamps (far outside the rest).
    pub outlier_events: u64,
    /// Events skipped as unreadable (a Kineto `ts` that is no time, an event too large).
    pub unreadable_events: u64,
}

/// One entry of `traces` (an input of a merged trace).
#[derive(Debug, Serialize)]
pub struct InputInfo<'a> {
    /// Path as given.
    pub path: &'a str,
    /// nsys version that exported it.
    pub nsys_version: &'a str,
    /// Its rank.
    pub rank: u32,
    /// Where the rank comes from: `RANK` (or another launcher's variable), `LOCAL_RANK`, `file order`.
    pub rank_source: &'a str,
    /// Host name (empty when not recorded).
    pub host: &'a str,
    /// Duration covered by its events.
    pub duration_ns: Ns,
    /// Its first event on the merged timeline.
    pub start_ns: Ns,
    /// Added to its times to place them on the merged timeline.
    pub offset_ns: Ns,
    /// `session-start`, `first-step` or `first-event`.
    pub aligned_on: &'static str,
    /// Absolute session start (UTC epoch ns), 0 when unknown.
    pub session_start_utc_ns: i64,
    /// Its GPUs: `device` in the merged trace (as in `devices[]`), `gpu` in its export.
    pub gpus: Vec<RankGpu>,
    /// Its processes, as pids of the merged trace.
    pub pids: &'a [u32],
    /// Its event counts.
    pub totals: Totals,
    /// Its phases (fields as `phases[]`), over its own processes and GPUs.
    pub phases: Vec<Phase<'a>>,
}

/// One GPU of `traces[].gpus`.
#[derive(Debug, Serialize)]
pub struct RankGpu {
    /// Device id in the merged trace.
    pub device: u32,
    /// Device id in its own export.
    pub gpu: u32,
}

/// `collectives`.
#[derive(Debug, Serialize)]
pub struct CollectivesInfo<'a> {
    /// Collectives matched across the ranks.
    pub count: usize,
    /// Time all GPUs spent waiting in collectives (sum of `devices[].collective_wait_ns`).
    pub wait_ns: Ns,
    /// Steady steps with collectives.
    pub steps: Vec<StepWaitInfo>,
    /// The straggler, or null.
    pub straggler: Option<StragglerInfo<'a>>,
}

/// One entry of `collectives.steps`.
#[derive(Debug, Serialize)]
pub struct StepWaitInfo {
    /// Index of the step among the step phase's instances (0 is the first).
    pub step: usize,
    /// The rank the others waited for the longest.
    pub straggler_rank: u32,
    /// The other ranks' mean wait in the step's collectives.
    pub wait_ns: Ns,
}

/// `collectives.straggler`.
#[derive(Debug, Serialize)]
pub struct StragglerInfo<'a> {
    /// Its rank.
    pub rank: u32,
    /// Steady steps with collectives.
    pub steps: usize,
    /// Steps in which it was the straggler.
    pub straggler_steps: usize,
    /// The phase in which it spends the difference, or null.
    pub phase: Option<&'a str>,
    /// Its mean time per step in that phase.
    pub straggler_phase_ns: Option<Ns>,
    /// The others' mean time per step in that phase.
    pub others_phase_ns: Option<Ns>,
    /// The others' mean wait per step.
    pub wait_per_step_ns: Ns,
    /// Their wait summed over its steps: the time the job lost.
    pub lost_ns: Ns,
    /// The collective waited in (`ncclAllReduce`).
    pub collective: &'a str,
}

/// One GPU of `trace.gpus`.
#[derive(Debug, Serialize)]
pub struct GpuInfo<'a> {
    /// Device id.
    pub device: u32,
    /// Marketing name.
    pub name: &'a str,
}

// `devices[].processes` of `device` (names escaped by the JSON writer, as every name).
fn processes(a: &Analysis, device: u32) -> Vec<crate::analysis::GpuProcess> {
    a.processes.iter().find(|(d, _)| *d == device).map(|(_, p)| p.clone()).unwrap_or_default()
}

/// `budget`: the mean steady step, split; the parts (busy, idle by cause, short idle,
/// residual) add up to `step_ns`.
#[derive(Debug, Serialize)]
pub struct StepBudget {
    /// The GPU it describes.
    pub device: u32,
    /// Steady steps it is the mean of.
    pub steps: usize,
    /// The mean steady step's wall.
    pub step_ns: Ns,
    /// GPU busy.
    pub gpu_busy_ns: Ns,
    /// Of the busy time, copies with no kernel running.
    pub exposed_copy_ns: Ns,
    /// Of the busy time, waits in collective kernels for another rank.
    pub collective_wait_ns: Ns,
    /// Idle in gaps, by cause.
    pub idle_by_cause: BTreeMap<&'static str, Ns>,
    /// Idle in holes under the gap threshold.
    pub short_idle_ns: Ns,
    /// The gap idle by region name.
    pub idle_by_region: BTreeMap<String, Ns>,
    /// What the parts leave of `step_ns` (integer division).
    pub residual_ns: Ns,
}

impl StepBudget {
    fn of(b: &crate::analysis::Budget) -> Self {
        StepBudget {
            device: b.device,
            steps: b.steps,
            step_ns: b.step_ns,
            gpu_busy_ns: b.gpu_busy_ns,
            exposed_copy_ns: b.exposed_copy_ns,
            collective_wait_ns: b.collective_wait_ns,
            idle_by_cause: b.idle_by_cause.iter().map(|&(c, v)| (c.label(), v)).collect(),
            short_idle_ns: b.short_idle_ns,
            idle_by_region: b.idle_by_region.iter().cloned().collect(),
            residual_ns: b.residual_ns,
        }
    }
}

/// One entry of `devices`.
#[derive(Debug, Serialize)]
pub struct Device {
    /// Device id.
    pub device: u32,
    /// Union of all operations.
    pub busy_ns: Ns,
    /// Union of kernels.
    pub kernel_ns: Ns,
    /// Copies running with no kernel.
    pub copy_only_ns: Ns,
    /// Idle between the first and the last operation.
    pub idle_ns: Ns,
    /// Part of `busy_ns` spent waiting inside collective kernels for another rank
    /// (idle in truth; 0 for one export).
    pub collective_wait_ns: Ns,
    /// Its rank (several exports only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rank: Option<u32>,
    /// Its device id in its own export (several exports only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu: Option<u32>,
    /// With two processes or more on the GPU: each one's work on it, busiest first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub processes: Vec<crate::analysis::GpuProcess>,
}

/// One entry of `transfers`.
#[derive(Debug, Serialize)]
pub struct Transfer {
    /// `H2D`, `D2H`, `D2D`, `P2P`, `memset` or `other`.
    pub direction: &'static str,
    /// Host memory kind (`pageable`, `pinned`, `managed`, ...; `device` for D2D).
    pub memory: &'static str,
    /// Count, bytes, time and rates (also `diff`'s `transfers.DIR/MEMORY`).
    #[serde(flatten)]
    pub sums: TransferSums,
    /// Copies issued by an async API on pageable memory.
    pub async_pageable: u64,
    /// Copies issued by a synchronous API.
    pub sync_api: u64,
}

/// What a transfer row adds up: `transfers[]` between its direction and its API counts.
#[derive(Debug, Serialize)]
pub struct TransferSums {
    /// Number of operations.
    pub count: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Sum of durations.
    pub busy_ns: Ns,
    /// `bytes / busy_ns`.
    pub gbps: f64,
    /// Fastest single operation.
    pub max_gbps: f64,
}

impl TransferSums {
    /// The sums of one transfer row of the analysis.
    pub fn of(t: &crate::analysis::Transfer) -> Self {
        Self { count: t.count, bytes: t.bytes, busy_ns: t.busy_ns, gbps: t.gbps, max_gbps: t.max_gbps }
    }
}

/// `overlap`.
#[derive(Debug, Serialize)]
pub struct Overlap {
    /// Copy time (union per GPU, summed).
    pub copy_ns: Ns,
    /// Copy time with a kernel running on the same GPU.
    pub overlapped_ns: Ns,
}

/// One entry of `phases`: its name, then every field of [`super::fields::PHASE`].
#[derive(Debug, Serialize)]
pub struct Phase<'a> {
    /// Grouped (or exact) name.
    pub name: &'a str,
    /// Its metrics.
    #[serde(flatten)]
    pub fields: PhaseFields<'a>,
    /// How the H2D copies it launched ran (`none`, `small-copies`, `pageable-staged`,
    /// `link-bound`, `below-link`).
    pub copy_verdict: &'static str,
}

impl Overlap {
    /// The copy/compute overlap of the analysis.
    pub fn of(o: crate::analysis::Overlap) -> Self {
        Self { copy_ns: o.copy_ns, overlapped_ns: o.overlapped_ns }
    }
}

/// `gaps`.
#[derive(Debug, Serialize)]
pub struct Gaps<'a> {
    /// Threshold used.
    pub min_gap_ns: Ns,
    /// Number of gaps.
    pub count: usize,
    /// Their total length.
    pub total_ns: Ns,
    /// Count and time per cause, every cause present.
    pub by_cause: BTreeMap<&'static str, CauseSum>,
    /// Gap time inside the steady window.
    pub steady: Steady<'a>,
    /// The longest gaps, longest first.
    pub top: Vec<TopGap<'a>>,
    /// Every gap in start order (`--all-gaps` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all: Option<Vec<TopGap<'a>>>,
}

/// `gaps.steady`: gaps clipped to the steady window.
#[derive(Debug, Serialize)]
pub struct Steady<'a> {
    /// Gaps with any time in the window.
    pub count: usize,
    /// Their time inside the window.
    pub total_ns: Ns,
    /// Count and clipped time per cause, every cause present.
    pub by_cause: BTreeMap<&'static str, CauseSum>,
    /// GPU idle inside the window in holes shorter than `min_gap_ns`, all GPUs.
    pub short_idle_ns: Ns,
    /// The same holes' count and time per cause, every cause present.
    pub short_by_cause: BTreeMap<&'static str, CauseSum>,
    /// The same holes per phase and cause, the most idle first (at most 20).
    pub short_holes: Vec<ShortHoleSum<'a>>,
}

/// Entries of `gaps.steady.short_holes` kept.
pub(crate) const SHORT_HOLES: usize = 20;

/// `gaps.steady.short_holes[]`: holes under `min_gap_ns` of one phase and cause.
#[derive(Debug, Serialize)]
pub struct ShortHoleSum<'a> {
    /// Phase (null outside any), as a gap's.
    pub phase: Option<&'a str>,
    /// Cause, as a gap's.
    pub cause: &'static str,
    /// Holes with time in the steady window.
    pub count: usize,
    /// Their time inside it.
    pub total_ns: Ns,
}

/// `gaps.by_cause.*`.
#[derive(Debug, Default, Serialize)]
pub struct CauseSum {
    /// Gaps of this cause.
    pub count: usize,
    /// Their total length.
    pub total_ns: Ns,
    /// The most sampled functions of the threads that explain these gaps (traces with
    /// CPU samples; whole-run `by_cause` only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub top: Vec<HotFunction>,
}

/// A sampled function with its share of the samples of a cause's gaps.
#[derive(Debug, Clone, Serialize)]
pub struct HotFunction {
    /// Leaf symbol.
    pub symbol: String,
    /// Module file name.
    pub module: String,
    /// Share of the samples, in `[0, 1]`.
    pub share: f64,
    /// Samples.
    pub samples: usize,
}

/// One entry of `gaps.top`.
#[derive(Debug, Serialize)]
pub struct TopGap<'a> {
    /// GPU.
    pub device: u32,
    /// First idle instant.
    pub start_ns: Ns,
    /// First busy instant after.
    pub end_ns: Ns,
    /// Length.
    pub dur_ns: Ns,
    /// Cause label.
    pub cause: &'static str,
    /// One line of evidence.
    pub evidence: &'a str,
    /// Innermost NVTX range covering at least half of the gap.
    pub phase: Option<&'a str>,
    /// `startup`, `steady` or `teardown`: the window holding most of the gap.
    pub window: &'static str,
    /// What the evidence adds to the cause (`none`, `sleep`, `pageable-sync`, `gil`, `compile`).
    pub hint: &'static str,
    /// What the host did (traces with context switches or CPU samples).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host: Option<&'a crate::analysis::host::HostWindow>,
}

/// One entry of `findings`.
#[derive(Debug, Serialize)]
pub struct Finding<'a> {
    /// Rule id.
    pub rule: &'static str,
    /// `info`, `warning` or `critical`.
    pub severity: &'static str,
    /// One sentence with the numbers.
    pub message: &'a str,
    /// Key facts.
    pub evidence: BTreeMap<&'a str, &'a str>,
    /// What to do.
    pub fix: String,
}

/// Gap count and time per cause (every cause present).
pub(crate) fn by_cause(gaps: &[Gap]) -> BTreeMap<&'static str, CauseSum> {
    by_cause_timed(gaps.iter(), Gap::dur)
}

/// Count and `time` per cause of the gaps with time, every cause present.
pub(crate) fn by_cause_timed<'g>(
    gaps: impl Iterator<Item = &'g Gap>,
    time: impl Fn(&Gap) -> Ns,
) -> BTreeMap<&'static str, CauseSum> {
    let mut m: BTreeMap<&'static str, CauseSum> = Cause::ALL.iter().map(|c| (c.label(), CauseSum::default())).collect();
    for g in gaps {
        let t = time(g);
        if t > 0 {
            let e = m.entry(g.cause.label()).or_default();
            e.count += 1;
            e.total_ns += t;
        }
    }
    m
}

// `by_cause` with each cause's hot functions.
fn with_hot(mut m: BTreeMap<&'static str, CauseSum>, a: &Analysis) -> BTreeMap<&'static str, CauseSum> {
    for (c, top) in &a.hot_by_cause {
        if let Some(e) = m.get_mut(c.label()) {
            e.top = top
                .iter()
                .map(|t| HotFunction {
                    symbol: t.symbol.clone(),
                    module: t.module.clone(),
                    share: t.share,
                    samples: t.samples,
                })
                .collect();
        }
    }
    m
}

fn steady(a: &Analysis) -> Steady<'_> {
    let s = &a.steady;
    let sum = |c: Cause| CauseSum {
        count: s.short_by_cause[c as usize].0,
        total_ns: s.short_by_cause[c as usize].1,
        ..CauseSum::default()
    };
    let short_holes = a
        .short_holes
        .iter()
        .take(SHORT_HOLES)
        .map(|h| ShortHoleSum {
            phase: h.phase.as_deref(),
            cause: h.cause.label(),
            count: h.count,
            total_ns: h.total_ns,
        })
        .collect();
    Steady {
        count: s.gaps(),
        total_ns: s.idle_ns(),
        by_cause: steady_by_cause(s),
        short_idle_ns: s.short_idle_ns,
        short_by_cause: Cause::ALL.iter().map(|&c| (c.label(), sum(c))).collect(),
        short_holes,
    }
}

/// The steady summary's gaps and time per cause, every cause present.
pub(crate) fn steady_by_cause(s: &crate::analysis::Steady) -> BTreeMap<&'static str, CauseSum> {
    let sum = |c: Cause| CauseSum {
        count: s.by_cause[c as usize].0,
        total_ns: s.by_cause[c as usize].1,
        ..CauseSum::default()
    };
    Cause::ALL.iter().map(|&c| (c.label(), sum(c))).collect()
}

/// Build the JSON document; `all_gaps` adds `gaps.all`.
pub fn build<'a>(trace: &'a Trace, a: &'a Analysis, all_gaps: bool) -> Report<'a> {
    let several = trace.ranks.len() > 1;
    Report {
        traces: several.then(|| inputs(trace, a)),
        collectives: several.then(|| collectives(a)),
        trace: TraceInfo {
            path: &trace.meta.path,
            nsys_version: &trace.meta.nsys_version,
            schema_version: &trace.meta.schema_version,
            duration_ns: trace.duration(),
            start_ns: trace.meta.start_ns,
            gpus: trace.gpus.iter().map(|g| GpuInfo { device: g.device, name: &g.name }).collect(),
            step_phase: a.step_phase.as_deref(),
            steady_start_ns: a.windows.steady_start,
            steady_end_ns: a.windows.steady_end,
            outlier_events: trace.meta.outliers.0,
            unreadable_events: trace.meta.unreadable_events,
        },
        steps: &a.steps,
        totals: a.totals,
        devices: a
            .devices
            .iter()
            .map(|d| Device {
                device: d.device,
                busy_ns: d.busy.total(),
                kernel_ns: d.kernels.total(),
                copy_only_ns: d.copy_only_ns(),
                idle_ns: d.idle_ns(),
                collective_wait_ns: a.collectives.wait_ns(d.device),
                rank: trace.rank_of_device(d.device).map(|r| r.rank),
                gpu: trace
                    .rank_of_device(d.device)
                    .and_then(|r| r.devices.iter().find(|x| x.0 == d.device).map(|x| x.1)),
                processes: processes(a, d.device),
            })
            .collect(),
        transfers: a.transfers.iter().map(transfer).collect(),
        overlap: Overlap::of(a.overlap),
        phases: a.phases.iter().map(phase).collect(),
        gaps: Gaps {
            min_gap_ns: a.options.min_gap_ns,
            count: a.gaps.len(),
            total_ns: a.gaps.iter().map(Gap::dur).sum(),
            by_cause: with_hot(by_cause(&a.gaps), a),
            steady: steady(a),
            top: top_gaps(&a.gaps, TOP_GAPS).into_iter().map(top_gap).collect(),
            all: all_gaps.then(|| a.gaps.iter().map(top_gap).collect()),
        },
        regions: &a.regions,
        budget: a.budget.as_ref().map(StepBudget::of),
        findings: a
            .findings
            .iter()
            .map(|f| Finding {
                rule: f.rule.name(),
                severity: f.severity.label(),
                message: &f.message,
                evidence: f.evidence.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect(),
                fix: f.fix_text(),
            })
            .collect(),
        gpu_metrics: gpu_metrics(trace),
        whatif: &a.whatif,
    }
}

fn inputs<'a>(trace: &'a Trace, a: &'a Analysis) -> Vec<InputInfo<'a>> {
    trace
        .ranks
        .iter()
        .map(|r| {
            let phases = a.rank_phases.iter().find(|(k, _)| *k == r.rank).map_or(&[][..], |(_, p)| p.as_slice());
            InputInfo {
                path: &r.path,
                nsys_version: &r.nsys_version,
                rank: r.rank,
                rank_source: &r.rank_source,
                host: &r.host,
                duration_ns: r.duration(),
                start_ns: r.start_ns,
                offset_ns: r.offset_ns,
                aligned_on: r.aligned_on.map_or("", |x| x.label()),
                session_start_utc_ns: r.session_start_utc_ns,
                gpus: r.devices.iter().map(|&(device, gpu)| RankGpu { device, gpu }).collect(),
                pids: &r.pids,
                totals: crate::analysis::transfers::totals_of(trace, |l| r.pids.contains(&l.pid)),
                phases: phases.iter().map(phase).collect(),
            }
        })
        .collect()
}

fn collectives(a: &Analysis) -> CollectivesInfo<'_> {
    let c = &a.collectives;
    CollectivesInfo {
        count: c.count,
        wait_ns: c.waits.iter().map(|(_, u)| u.total()).sum(),
        steps: c
            .steps
            .iter()
            .map(|s| StepWaitInfo { step: s.step, straggler_rank: s.straggler_rank, wait_ns: s.wait_ns })
            .collect(),
        straggler: c.straggler.as_ref().map(|s| StragglerInfo {
            rank: s.rank,
            steps: s.steps,
            straggler_steps: s.late_steps,
            phase: s.phase.as_ref().map(|p| p.0.as_str()),
            straggler_phase_ns: s.phase.as_ref().map(|p| p.1),
            others_phase_ns: s.phase.as_ref().map(|p| p.2),
            wait_per_step_ns: s.wait_per_step_ns,
            lost_ns: s.lost_ns,
            collective: &s.collective,
        }),
    }
}

fn transfer(t: &crate::analysis::Transfer) -> Transfer {
    Transfer {
        direction: t.direction.label(),
        memory: t.memory.label(),
        sums: TransferSums::of(t),
        async_pageable: t.async_pageable,
        sync_api: t.sync_api,
    }
}

fn phase(p: &crate::analysis::Phase) -> Phase<'_> {
    Phase { name: &p.name, fields: PhaseFields(p), copy_verdict: p.copy_verdict.label() }
}

fn top_gap(g: &Gap) -> TopGap<'_> {
    TopGap {
        device: g.device,
        start_ns: g.start,
        end_ns: g.end,
        dur_ns: g.dur(),
        cause: g.cause.label(),
        evidence: &g.evidence,
        phase: g.phase.as_deref(),
        window: g.window.label(),
        hint: g.hint.label(),
        host: g.host.as_deref(),
    }
}

/// Write the JSON report, pretty-printed, with a final newline, through
/// [`crate::text::write_json`] (DEL, C1 and bidi controls escaped as `\uXXXX`).
pub(crate) fn write(w: &mut dyn Write, trace: &Trace, a: &Analysis, all_gaps: bool) -> io::Result<()> {
    crate::text::write_json(w, &build(trace, a, all_gaps))
}
