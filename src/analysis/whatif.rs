//! What each proposed fix would save per step, from the trace alone.
//!
//! The steady step `T` is the GPU's completion period: from the end of the last GPU
//! operation launched by the first steady step to that of the last step, over the steps
//! between (with a host that runs ahead, host ranges are shorter than the work they queue).
//! Per step, the model takes the limits a step cannot go below:
//! - `gpu`: the GPU's busy time (kernels and copies);
//! - `host`: the launching thread's time in the step, less its waits on the GPU (syncs,
//!   blocking copies) and on input (gaps the input pipeline caused);
//! - `input pipeline`: when the thread's waits for input recur (in two steps or more, and
//!   5% of the steady time or more, outside the steps of a periodic stall, whose waits
//!   are the stall's), the pipeline delivers a batch every `T` now (a faster
//!   one would have built a queue of ready batches), and only more producers change that.
//!   Untraced waits (`host-wait`: a DataLoader queue in a capture without host data)
//!   count the same way.
//!   Producers are the processes other than the launching one seen feeding those waits.
//!
//! A fix removes time (`raw`) and may lower one limit; the step after is
//! `max(T - raw, limits after)`, and `limited_by` names the limit that binds.

use super::Fix;
use super::Instance;
use super::index::{Hints, Index};
use super::pcie::CopyOp;
use super::{Cause, DeviceActivity, Gap, Hint, Union, Window};
use crate::model::{ApiKind, Ns, Trace};

/// One fix priced on the trace.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct WhatIf {
    /// The fix it prices: `pin_memory`, `prefetch`, `more_workers`, `drop_sync` or
    /// `cuda_graphs` (see [`Fix::priced_as`]).
    pub fix: Fix,
    /// Predicted saving per steady step.
    pub saving_per_step_ns: Ns,
    /// Predicted steady step after the fix.
    pub step_ns_after: Ns,
    /// The limit the step meets after the fix: `gpu`, `host`, `input pipeline`, or
    /// `none` when the fix removes all the time it targets.
    #[serde(deserialize_with = "super::static_str")]
    pub limited_by: super::Label,
    /// The numbers the prediction stands on.
    pub basis: String,
}

/// The per-step numbers of the steady state the fixes are priced on.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StepModel {
    /// The GPU the steps ran on most.
    pub device: u32,
    /// Steady steps counted (periods between the first and last steady step).
    pub periods: usize,
    /// The completion period now.
    pub step_ns: Ns,
    /// GPU busy per step.
    pub gpu_ns: Ns,
    /// Kernel busy per step.
    pub kernel_ns: Ns,
    /// Launching thread's own time per step (no GPU or input waits).
    pub host_ns: Ns,
    /// The thread's waits for input recur: the pipeline sets the pace.
    pub input_bound: bool,
    /// Producers (input pipeline processes or threads) seen in the input gaps.
    pub producers: usize,
    /// CPUs the job may use, when the input waits show them full (`cpu-contention` for at
    /// least half of their time): producers beyond them share those CPUs and add no
    /// throughput. 0 otherwise: the CPUs a job's threads happened to run on say nothing
    /// of its affinity while CPUs are spare.
    pub usable_cpus: usize,
    /// Pageable H2D copies per step: (bytes, GPU time).
    pub pageable_h2d: (u64, Ns),
    /// H2D copy time per step with no kernel running.
    pub exposed_h2d_ns: Ns,
    /// GPU idle per step in gaps a host sync drained (no sleep, no pageable copy).
    pub sync_idle_ns: Ns,
    /// GPU idle per step in launch-bound gaps and holes under the gap threshold.
    pub launch_idle_ns: Ns,
    /// Calls per step in which the launching thread waited for the GPU (syncs, synchronous
    /// copies, async copies from pageable memory): a step with one cannot be a CUDA graph.
    pub blocking_calls: usize,
}

/// Steady-step inputs of [`model`].
pub(crate) struct Inputs<'a> {
    /// The trace.
    pub trace: &'a Trace,
    /// Its correlation lookups.
    pub index: &'a Index,
    /// Outermost step instances, sorted by start.
    pub steps: &'a [Instance],
    /// End of the GPU work each step launched (None without any), same order.
    pub gpu_ends: &'a [Option<Ns>],
    /// The GPU the steps ran on.
    pub device: &'a DeviceActivity,
    /// Every H2D copy of the trace on that GPU, sorted by start.
    pub h2d: &'a [CopyOp],
    /// Gaps, with windows set.
    pub gaps: &'a [Gap],
    /// Idle in holes under the gap threshold in the steady window.
    pub short_idle_ns: Ns,
    /// Host ranges of the periodic stall's steps, sorted ([`super::regions::stall_spans`]).
    pub stalls: &'a [(Ns, Ns)],
}

// Waits of the launching thread on something other than the GPU that set a pace: the
// input pipeline's causes, and untraced waits (a DataLoader queue without host data).
const INPUT: [Cause; 4] = [Cause::WorkerBusy, Cause::IoWait, Cause::CpuContention, Cause::HostWait];

/// The model of the steady state, if it has at least two steps with GPU work.
pub(crate) fn model(x: &Inputs<'_>) -> Option<StepModel> {
    let ends: Vec<(usize, Ns)> = x.gpu_ends.iter().enumerate().filter_map(|(i, e)| e.map(|e| (i, e))).collect();
    let (&(first, a), &(last, b)) = (ends.first()?, ends.last()?);
    let periods = last.checked_sub(first).filter(|&p| p > 0)?;
    let per = |ns: Ns| ns / periods as Ns;
    let host_span = (x.steps[first + 1].start, x.steps[last].end);
    let mut m = StepModel { device: x.device.device, periods, step_ns: per(b - a), ..StepModel::default() };
    m.gpu_ns = per(x.device.busy.busy_in(a, b));
    m.kernel_ns = per(x.device.kernels.busy_in(a, b));
    let copies: Vec<&CopyOp> = x.h2d.iter().filter(|c| c.end > a && c.start < b).collect();
    let page = copies.iter().filter(|c| c.pageable);
    m.pageable_h2d =
        (page.clone().map(|c| c.bytes).sum::<u64>() / periods as u64, per(page.map(|c| c.end - c.start).sum()));
    let h2d = Union::from_pairs(copies.iter().map(|c| (c.start.max(a), c.end.min(b))));
    m.exposed_h2d_ns = per(h2d.total() - h2d.overlap_with(&x.device.kernels));
    let steady = || x.gaps.iter().filter(|g| g.window == Window::Steady && g.device == x.device.device);
    // A sleep is the loop's own pacing, not a wait for input; a wait inside a periodic
    // stall (a checkpoint's writer holding the GIL) is the stall's, priced by its region.
    let in_stall = |g: &Gap| {
        let k = x.stalls.partition_point(|s| s.1 <= g.start);
        x.stalls.get(k).is_some_and(|s| s.0 <= g.start)
    };
    let input_gaps: Vec<&Gap> =
        steady().filter(|g| INPUT.contains(&g.cause) && g.hint != Hint::Sleep && !in_stall(g)).collect();
    // A pipeline faster than the loop builds a queue of ready batches, and the loop stops
    // waiting after warm-up: waits that recur mean the pipeline sets the pace.
    let waits = Union::from_pairs(input_gaps.iter().map(|g| (g.start, g.end)));
    let waited = x.steps[first + 1..=last].iter().filter(|s| waits.busy_in(s.start, s.end) > 0).count();
    let input_wait: Ns = input_gaps.iter().map(|g| overlap(g.start, g.end, host_span)).sum();
    m.input_bound = waited >= 2 && input_wait * 20 >= host_span.1 - host_span.0;
    let launcher = x.steps[last].pid;
    let mut producers: Vec<u32> = input_gaps
        .iter()
        .filter_map(|g| g.host.as_ref())
        .flat_map(|h| h.producers.iter().map(|p| p.pid))
        .filter(|&p| p != launcher)
        .collect();
    producers.sort_unstable();
    producers.dedup();
    m.producers = producers.len();
    let contended: Ns = input_gaps.iter().filter(|g| g.cause == Cause::CpuContention).map(|g| g.dur()).sum();
    if 2 * contended >= input_gaps.iter().map(|g| g.dur()).sum::<Ns>() {
        m.usable_cpus =
            input_gaps.iter().filter_map(|g| g.host.as_ref()).map(|h| h.cpus.usable.len()).max().unwrap_or(0);
    }
    let (blocked, calls) =
        x.index.api_lane(launcher, x.steps[last].tid).map_or((0, 0), |l| blocked_ns(x.trace, l, host_span, x.h2d));
    m.blocking_calls = calls / periods;
    m.host_ns = per((host_span.1 - host_span.0 - blocked - input_wait).max(0));
    m.sync_idle_ns = per(steady().filter(|g| g.cause == Cause::SyncDrain && g.hint == Hint::None).map(Gap::dur).sum());
    m.launch_idle_ns =
        per(steady().filter(|g| g.cause == Cause::LaunchBound).map(Gap::dur).sum::<Ns>() + x.short_idle_ns);
    Some(m)
}

fn overlap(s: Ns, e: Ns, (a, b): (Ns, Ns)) -> Ns {
    (e.min(b) - s.max(a)).max(0)
}

// Time the calls of CUDA API lane `api` spent waiting for the GPU inside `span`, and how
// many: syncs, synchronous copies, and async copies that a pageable host side made blocking.
fn blocked_ns(trace: &Trace, api: usize, span: (Ns, Ns), h2d: &[CopyOp]) -> (Ns, usize) {
    let l = &trace.lanes[api];
    let pageable_starts: Vec<Ns> = h2d.iter().filter(|c| c.pageable).map(|c| c.start).collect();
    let lo = l.ev.start.partition_point(|&s| s < span.0);
    let (mut total, mut calls) = (0, 0);
    for i in lo..l.ev.len() {
        let (s, e) = (l.ev.start[i], l.ev.end(i));
        if s >= span.1 {
            break;
        }
        let blocking = match ApiKind::from_flags(l.ev.flags(i)) {
            ApiKind::Sync | ApiKind::MemcpySync => true,
            // An async copy whose pageable H2D copy ran while the call was open waited for it.
            ApiKind::MemcpyAsync => {
                let k = pageable_starts.partition_point(|&c| c < s);
                pageable_starts.get(k).is_some_and(|&c| c < e)
            }
            ApiKind::Other | ApiKind::Launch | ApiKind::Memset => false,
        };
        if blocking {
            total += overlap(s, e, span);
            calls += 1;
        }
    }
    (total, calls)
}

// The step after removing `raw`, against the limits after the fix.
fn price(m: &StepModel, fix: Fix, raw: Ns, gpu_after: Ns, input_after: Ns, basis: String) -> WhatIf {
    let target = (m.step_ns - raw.max(0)).max(0);
    let limits = [("gpu", gpu_after), ("host", m.host_ns), ("input pipeline", input_after)];
    let (name, floor) = limits.into_iter().max_by_key(|l| l.1).unwrap_or(("none", 0));
    let after = target.max(floor).min(m.step_ns);
    WhatIf {
        fix,
        saving_per_step_ns: m.step_ns - after,
        step_ns_after: after,
        limited_by: if floor >= target { name } else { "none" },
        basis,
    }
}

fn input_floor(m: &StepModel) -> Ns {
    if m.input_bound { m.step_ns } else { 0 }
}

/// Pin the pageable copies: they run at `pinned_rate` (bytes per ns) and stop blocking.
pub(crate) fn pin_memory(m: &StepModel, pinned_rate: Option<f64>) -> Option<WhatIf> {
    let (bytes, ns) = m.pageable_h2d;
    if ns <= 0 {
        return None;
    }
    let Some(rate) = pinned_rate else {
        // Without a pinned rate the copy cannot be priced, but a paced loop saves nothing.
        let basis = format!(
            "{} pageable H2D per step in {} now; no pinned rate in the trace, and the loop waits for its input",
            crate::text::fmt_bytes(bytes),
            crate::text::fmt_ns(ns)
        );
        return m.input_bound.then(|| price(m, Fix::PinMemory, 0, m.gpu_ns, input_floor(m), basis));
    };
    let pinned_ns = (bytes as f64 / rate).round() as Ns;
    let raw = (ns - pinned_ns).max(0);
    let basis = format!(
        "{} pageable H2D per step in {} now, {} at {:.1} GB/s pinned",
        crate::text::fmt_bytes(bytes),
        crate::text::fmt_ns(ns),
        crate::text::fmt_ns(pinned_ns),
        rate
    );
    Some(price(m, Fix::PinMemory, raw, m.gpu_ns - raw, input_floor(m), basis))
}

/// Copy the next batch on a side stream: exposed H2D time hides under compute.
pub(crate) fn prefetch(m: &StepModel) -> Option<WhatIf> {
    if m.exposed_h2d_ns <= 0 {
        return None;
    }
    let raw = m.exposed_h2d_ns.min(m.kernel_ns);
    let basis = format!(
        "{} of H2D copy per step with no kernel running, against {} of kernels",
        crate::text::fmt_ns(m.exposed_h2d_ns),
        crate::text::fmt_ns(m.kernel_ns)
    );
    Some(price(m, Fix::Prefetch, raw, m.gpu_ns - raw, input_floor(m), basis))
}

/// `workers` producers instead of today's: the pipeline's period scales down with the
/// producers that get a CPU of their own. None when no more of them would (today's
/// producers already fill the usable CPUs): more workers would only contend.
pub(crate) fn more_workers(m: &StepModel, workers: usize) -> Option<WhatIf> {
    let cap = |n: usize| if m.usable_cpus > 0 { n.min(m.usable_cpus) } else { n };
    let (now, after) = (cap(m.producers), cap(workers));
    if !m.input_bound || now == 0 || after <= now {
        return None;
    }
    let input_after = (m.step_ns as f64 * now as f64 / after as f64).round() as Ns;
    let basis = format!(
        "a batch every {} from {} producer(s) now; {} from {workers}{}",
        crate::text::fmt_ns(m.step_ns),
        m.producers,
        crate::text::fmt_ns(input_after),
        if m.usable_cpus > 0 { format!(" on {} usable CPUs", m.usable_cpus) } else { String::new() }
    );
    Some(price(m, Fix::MoreWorkers, m.step_ns - input_after, m.gpu_ns, input_after, basis))
}

/// An input pipeline that keeps up, where the trace shows the loop waiting for input but
/// not who produces it (no process tree, or untraced waits): the step falls to what the
/// GPU and the host need, an upper bound of what more or faster producers save.
pub(crate) fn keep_up(m: &StepModel) -> Option<WhatIf> {
    if !m.input_bound || m.producers > 0 {
        return None;
    }
    let floor = m.gpu_ns.max(m.host_ns);
    let basis = format!(
        "the loop waits for its input: a batch every {} now; no producer in the trace, so a pipeline \
         that keeps up leaves the GPU's {} and the host's {} per step",
        crate::text::fmt_ns(m.step_ns),
        crate::text::fmt_ns(m.gpu_ns),
        crate::text::fmt_ns(m.host_ns)
    );
    Some(price(m, Fix::MoreWorkers, m.step_ns - floor, m.gpu_ns, 0, basis))
}

/// The smallest producer count whose pipeline keeps up with the GPU and host, within `cpus`.
pub(crate) fn workers_needed(m: &StepModel, cpus: usize) -> usize {
    let other = m.gpu_ns.max(m.host_ns).max(1);
    let want = (m.step_ns as f64 * m.producers as f64 / other as f64).ceil() as usize;
    want.clamp(m.producers + 1, cpus.max(m.producers + 1))
}

/// Drop the per-step host syncs: the idle they drained goes.
pub(crate) fn drop_sync(m: &StepModel) -> Option<WhatIf> {
    (m.sync_idle_ns > 0).then(|| {
        let basis = format!("{} per step idle after host syncs", crate::text::fmt_ns(m.sync_idle_ns));
        price(m, Fix::DropSync, m.sync_idle_ns, m.gpu_ns, input_floor(m), basis)
    })
}

/// Replay the step as a CUDA graph: launch-bound idle goes. None while the step blocks on
/// the GPU: a step that syncs cannot be captured.
pub(crate) fn cuda_graphs(m: &StepModel) -> Option<WhatIf> {
    (m.launch_idle_ns > 0 && m.blocking_calls == 0).then(|| {
        let basis = format!("{} per step idle between launches", crate::text::fmt_ns(m.launch_idle_ns));
        // The host's launch time is what graphs remove, so only the GPU and input bound it.
        let m2 = StepModel { host_ns: 0, ..m.clone() };
        price(&m2, Fix::CudaGraphs, m.launch_idle_ns, m.gpu_ns, input_floor(m), basis)
    })
}

/// End of the GPU work launched by calls of thread (pid, tid) inside `[start, end]`.
pub(crate) fn gpu_end(trace: &Trace, index: &Index, (pid, tid): (u32, u32), start: Ns, end: Ns) -> Option<Ns> {
    let api = &trace.lanes[index.api_lane(pid, tid)?].ev;
    let lo = api.start.partition_point(|&s| s < start);
    let gpu: Vec<usize> = index.gpu_lanes(pid).collect();
    let mut hints = Hints::new(trace);
    let mut last = None;
    for i in lo..api.len() {
        if api.start[i] > end {
            break;
        }
        if api.end(i) > end || api.corr(i) == 0 {
            continue;
        }
        for &g in &gpu {
            let ev = &trace.lanes[g].ev;
            for j in index.rows(trace, g, api.corr(i), &mut hints) {
                last = last.max(Some(ev.end(j)));
            }
        }
    }
    last
}

/// The model of the steady state of the step phase in `steps`, on the GPU the steps used
/// most; `h2d`: every H2D copy of the trace ([`super::pcie::all_h2d`]); `stalls`: the
/// periodic stall's steps ([`super::regions::stall_spans`]).
pub(crate) fn steady_model(
    x: (&Trace, &Index),
    devices: &[DeviceActivity],
    gaps: &[Gap],
    steps: &super::steps::Steps,
    (h2d, short_idle_ns, stalls): (&[CopyOp], Ns, &[(Ns, Ns)]),
) -> Option<StepModel> {
    let (trace, index) = x;
    steps.found().then_some(())?;
    let w = steps.windows;
    // The step before the first steady one bounds the first period: its GPU end starts it.
    let before = steps.instances.iter().rev().find(|i| i.start < w.steady_start);
    let all: Vec<Instance> = before
        .into_iter()
        .chain(steps.instances.iter().filter(|i| i.start >= w.steady_start && i.end <= w.steady_end))
        .copied()
        .collect();
    if all.len() < 3 {
        return None;
    }
    let mut ends = vec![None; all.len()];
    let end_of = |s: &Instance| gpu_end(trace, index, (s.pid, s.tid), s.start, s.end);
    let last = all.len() - 1;
    ends[0] = Some(end_of(&all[0])?);
    ends[last] = end_of(&all[last]);
    let busiest = index.devices_of(all[last].pid).max_by_key(|&d| {
        devices.iter().find(|x| x.device == d).map_or(0, |x| x.busy.busy_in(all[1].start, all[last].end))
    })?;
    let device = devices.iter().find(|d| d.device == busiest)?;
    let h2d: Vec<CopyOp> = h2d.iter().filter(|c| c.device == busiest).copied().collect();
    model(&Inputs { trace, index, steps: &all, gpu_ends: &ends, device, h2d: &h2d, gaps, short_idle_ns, stalls })
}

/// Every fix the trace holds the numbers for, priced on `m` (`h2d` as for [`steady_model`]).
pub(crate) fn all(trace: &Trace, m: &StepModel, h2d: &[CopyOp]) -> Vec<WhatIf> {
    let rate = super::pcie::link_or_pinned(&trace.counters, m.device, h2d);
    // On full CPUs `more_workers` itself caps the producers at the usable ones.
    let cpus = trace.host.cpus.len().max(trace.host.cpu_cores.unwrap_or(0) as usize);
    [
        pin_memory(m, rate),
        prefetch(m),
        more_workers(m, workers_needed(m, cpus.saturating_sub(1))).or_else(|| keep_up(m)),
        drop_sync(m),
        cuda_graphs(m),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// What removing each periodic stall, hole between steps or other loop would save per
/// steady step: its cost per step ([`super::Region::cost_ns`]: a periodic stall's whole
/// wall beyond the median step, the others' idle), off the mean steady step (`steps`
/// steady steps).
pub(crate) fn regions(regions: &[super::Region], steady: &super::Steady, steps: usize) -> Vec<WhatIf> {
    let Some(mean) = (steps > 0).then(|| steady.span_ns / steps as Ns) else { return Vec::new() };
    let mut out: Vec<WhatIf> = Vec::new();
    for r in regions {
        let Some(fix) = super::Fix::for_region(r.kind) else { continue };
        if out.iter().any(|w| w.fix == fix) {
            continue;
        }
        let per_step = if r.extra_ns > r.idle_ns { r.extra_ns / steps as Ns } else { r.idle_per_step_ns };
        let saving = per_step.min(mean);
        let name = crate::text::sanitize(&r.name);
        let what = if r.extra_ns > r.idle_ns {
            let (extra, idle) = (crate::text::fmt_ns(r.extra_ns), crate::text::fmt_ns(r.idle_ns));
            format!("the {extra} that the long steps of `{name}` take beyond the median step ({idle} of it GPU idle, ")
        } else {
            format!("the {} idle of `{name}` (", crate::text::fmt_ns(r.idle_ns))
        };
        out.push(WhatIf {
            fix,
            saving_per_step_ns: saving,
            step_ns_after: mean - saving,
            limited_by: "none",
            basis: format!(
                "removes {what}{} over {steps} steady steps) from the mean step of {}",
                r.occurrences,
                crate::text::fmt_ns(mean)
            ),
        });
    }
    out
}

/// Pad or bucket the input shapes and warm each up: the steady idle of the gaps named
/// `new-shapes` goes, per steady step (`steps` of them), off the mean steady step.
pub(crate) fn new_shapes(gaps: &[Gap], steady: &super::Steady, w: super::Windows, steps: usize) -> Option<WhatIf> {
    let what = "gaps where kernels were chosen and loaded for new shapes";
    hinted(gaps, (steady, w, steps), (Hint::NewShapes, Fix::NewShapes), what)
}

/// Stop the allocator's syncs (no `empty_cache()` in the loop, stable shapes, reused
/// pinned buffers): the steady idle of the gaps whose syncs were allocator calls (hint
/// `allocator`) goes, per steady step.
pub(crate) fn allocator(gaps: &[Gap], steady: &super::Steady, w: super::Windows, steps: usize) -> Option<WhatIf> {
    let what = "gaps at allocator calls that synchronise";
    hinted(gaps, (steady, w, steps), (Hint::Allocator, Fix::AllocatorChurn), what)
}

// The fix of a mechanism named by `hint`: the steady idle of its gaps per steady step, off
// the mean steady step.
fn hinted(
    gaps: &[Gap],
    (steady, w, steps): (&super::Steady, super::Windows, usize),
    (hint, fix): (Hint, Fix),
    what: &str,
) -> Option<WhatIf> {
    let mean = (steps > 0).then(|| steady.span_ns / steps as Ns)?;
    let named: Vec<Ns> = gaps.iter().filter(|g| g.hint == hint).map(|g| w.steady_part(g.start, g.end)).collect();
    let idle: Ns = named.iter().sum();
    (idle > 0).then(|| {
        let saving = (idle / steps as Ns).min(mean);
        WhatIf {
            fix,
            saving_per_step_ns: saving,
            step_ns_after: mean - saving,
            limited_by: "none",
            basis: format!(
                "removes the {} of steady idle in {} {what} ({steps} steady steps) from the mean step of {}",
                crate::text::fmt_ns(idle),
                named.iter().filter(|&&n| n > 0).count(),
                crate::text::fmt_ns(mean)
            ),
        }
    })
}

/// The fix that turned `before` into `after`, told by what changed between the two
/// steady states, with the before-run's prediction for it.
pub fn applied(before: &super::Analysis, after: &super::Analysis) -> Option<WhatIf> {
    let (b, a) = (before.step_model.as_ref()?, after.step_model.as_ref()?);
    let fix = if b.pageable_h2d.0 > 0 && a.pageable_h2d.0 * 10 < b.pageable_h2d.0 {
        Fix::PinMemory
    } else if b.producers > 0 && a.producers > b.producers {
        return more_workers(b, a.producers);
    } else if b.exposed_h2d_ns > 0 && a.exposed_h2d_ns * 2 < b.exposed_h2d_ns {
        Fix::Prefetch
    } else if b.sync_idle_ns > 0 && a.sync_idle_ns * 2 < b.sync_idle_ns {
        Fix::DropSync
    } else if b.launch_idle_ns > 0 && a.launch_idle_ns * 2 < b.launch_idle_ns {
        Fix::CudaGraphs
    } else {
        return None;
    };
    before.whatif.iter().find(|w| w.fix == fix).cloned()
}

/// A host that runs ahead ends its last step before the GPU ran that step's work: the
/// steady state lasts until the work the last step launched is done.
pub(crate) fn extend_to_gpu_end(steps: &mut super::steps::Steps, trace: &Trace, index: &Index) {
    if let Some(last) = steps.instances.iter().max_by_key(|i| i.end)
        && let Some(end) = gpu_end(trace, index, (last.pid, last.tid), last.start, last.end)
    {
        steps.windows.steady_end = steps.windows.steady_end.max(end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m() -> StepModel {
        StepModel {
            periods: 10,
            step_ns: 22_000,
            gpu_ns: 21_500,
            kernel_ns: 6_500,
            host_ns: 6_000,
            pageable_h2d: (100_000, 15_000),
            exposed_h2d_ns: 15_000,
            ..StepModel::default()
        }
    }

    #[test]
    fn an_input_pipeline_with_no_producer_in_the_trace_is_priced_down_to_gpu_and_host() {
        // A batch every 40 us, the GPU needs 12 and the host 9: a pipeline that keeps up
        // saves 28, the GPU binding; with producers seen, `more_workers` prices instead.
        let waits = StepModel { step_ns: 40_000, gpu_ns: 12_000, host_ns: 9_000, input_bound: true, ..m() };
        let w = keep_up(&waits).unwrap();
        assert_eq!((w.saving_per_step_ns, w.step_ns_after, w.limited_by), (28_000, 12_000, "gpu"));
        assert_eq!(keep_up(&StepModel { producers: 2, ..waits.clone() }), None);
        assert_eq!(keep_up(&StepModel { input_bound: false, ..waits }), None);
    }

    #[test]
    fn a_step_that_blocks_on_the_gpu_gets_no_graph_priced() {
        let holes = StepModel { launch_idle_ns: 4_000, ..m() };
        assert!(cuda_graphs(&holes).is_some());
        assert_eq!(cuda_graphs(&StepModel { blocking_calls: 1, ..holes }), None);
    }

    #[test]
    fn workers_beyond_full_cpus_are_not_priced() {
        let step = StepModel { step_ns: 40_000, gpu_ns: 1_000, host_ns: 1_000, input_bound: true, ..m() };
        // Five producers on three full CPUs: more workers would only share them.
        let full = StepModel { producers: 5, usable_cpus: 3, ..step.clone() };
        assert_eq!(more_workers(&full, 8), None);
        // Two producers on four full CPUs: two more get a CPU each, no more than that.
        let room = StepModel { producers: 2, usable_cpus: 4, ..step.clone() };
        assert_eq!(more_workers(&room, 4).unwrap().saving_per_step_ns, 20_000);
        assert_eq!(more_workers(&room, 8).unwrap().saving_per_step_ns, 20_000);
        // CPUs not known to be full: the producers scale as asked.
        let free = StepModel { producers: 2, ..step };
        assert_eq!(more_workers(&free, 8).unwrap().saving_per_step_ns, 30_000);
    }

    #[test]
    fn pinning_saves_the_copy_time_down_to_the_next_limit() {
        // 100 kB at 50 B/ns = 2 µs pinned: 13 µs saved, the GPU then bound at 8.5 µs.
        let w = pin_memory(&m(), Some(50.0)).unwrap();
        assert_eq!((w.saving_per_step_ns, w.step_ns_after, w.limited_by), (13_000, 9_000, "none"));
        // A loop that waits for input every step: pinning saves nothing.
        let bound = StepModel { input_bound: true, producers: 2, ..m() };
        let w = pin_memory(&bound, Some(50.0)).unwrap();
        assert_eq!((w.saving_per_step_ns, w.limited_by), (0, "input pipeline"));
        // Four producers instead of two halve the pipeline's period, bounded by the GPU.
        let w = more_workers(&bound, 4).unwrap();
        assert_eq!((w.step_ns_after, w.limited_by), (21_500, "gpu"));
    }

    #[test]
    fn a_mechanism_s_fix_saves_the_steady_idle_of_its_gaps_per_step() {
        let w = super::super::Windows { steady_start: 1_000, steady_end: 101_000 };
        let gap = |start: Ns, end: Ns, hint: Hint| Gap { start, end, hint, ..Gap::default() };
        // 10 steps over a 100 µs steady span: 6 µs + the 4 µs of a gap that starts before it.
        let gaps =
            [gap(10_000, 16_000, Hint::NewShapes), gap(0, 5_000, Hint::NewShapes), gap(20_000, 40_000, Hint::None)];
        let steady = super::super::Steady { span_ns: 100_000, ..super::super::Steady::default() };
        let x = new_shapes(&gaps, &steady, w, 10).unwrap();
        assert_eq!((x.fix, x.saving_per_step_ns, x.step_ns_after), (Fix::NewShapes, 1_000, 9_000));
        assert!(new_shapes(&gaps[2..], &steady, w, 10).is_none());
        assert!(new_shapes(&gaps, &steady, w, 0).is_none());
        // The allocator's fix is priced the same way, by its own gaps only.
        assert!(allocator(&gaps, &steady, w, 10).is_none());
        let syncs = [gap(50_000, 53_000, Hint::Allocator), gap(60_000, 70_000, Hint::NewShapes)];
        let x = allocator(&syncs, &steady, w, 10).unwrap();
        assert_eq!((x.fix, x.saving_per_step_ns, x.step_ns_after), (Fix::AllocatorChurn, 300, 9_700));
    }

    #[test]
    fn prefetch_hides_at_most_the_kernel_time() {
        let w = prefetch(&m()).unwrap();
        assert_eq!(w.saving_per_step_ns, 6_500);
        assert!(pin_memory(&StepModel { pageable_h2d: (0, 0), ..m() }, Some(1.0)).is_none());
    }
}
