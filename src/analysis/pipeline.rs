//! The pipeline: [`analyze`] runs every analysis over a [`Trace`], in two threads.

use super::{
    Analysis, DeviceActivity, Fix, Gap, Options, Phase, Steady, StepsInfo, budget, findings, gaps, host, host_cause,
    index, link, pcie, phases, ranks, regions, rule, shapes, shared, steps, transfers, whatif,
};
use crate::model::{Ns, Trace};

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
    let steps = find_steps(trace, &index, (&groups, &devices), options);
    for g in &mut gaps {
        g.window = steps.windows.of(g.start, g.end);
    }
    // After rule 6 and the windows: it names steady gaps, pooling a thread's samples.
    shapes::name(trace, &host_ix, &mut gaps);
    let mut steady = Steady::of(&devices, &gaps, steps.windows);
    let (short_by_cause, short_holes) =
        gaps::Explainer::new(trace, &index, &devices, options).short_holes(steps.windows);
    steady.short_by_cause = short_by_cause;
    let on_gpu = regions::gpu_starts(trace, &index, &steps.instances);
    let regions = regions::regions(&steps.instances, &on_gpu, steps.windows, &gaps, &groups, steps.name.as_deref());
    let hot = host_cause::top_by_cause(&host_cause::steady_hot(&gaps), host_cause::TOP_FUNCTIONS);
    let phase_ctx = phases::PhaseCtx::new(trace, &index, &devices, &gaps, options.min_gap_ns);
    let collectives = ranks::analyze(trace, &index, &steps, &groups, options);
    let rank_phases = rank_phases(trace, &index, &phase_ctx, &groups);
    let (mut phases, mut findings) = both(
        || phases::stats(&phase_ctx, groups, &launched),
        || {
            let inputs = findings::Inputs {
                trace,
                index: &index,
                devices: &devices,
                gaps: &gaps,
                steady: &steady,
                regions: &regions,
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
    let stalls = regions::stall_spans(&steps.instances, &on_gpu, &regions);
    let step_model =
        whatif::steady_model((trace, &index), &devices, &gaps, &steps, (&h2d, steady.short_idle_ns, &stalls));
    let mut whatifs = step_model.as_ref().map(|m| whatif::all(trace, m, &h2d)).unwrap_or_default();
    whatifs.extend(whatif::regions(&regions, &steady, step_instances_steady(&steps)));
    let steady_steps = step_instances_steady(&steps);
    whatifs.extend(whatif::new_shapes(&gaps, &steady, steps.windows, steady_steps));
    whatifs.extend(whatif::allocator(&gaps, &steady, steps.windows, steady_steps));
    let steady_ns = steps.windows.steady_end - steps.windows.steady_start;
    let budget = step_budget((&devices, &gaps), &steps, &regions, step_model.as_ref(), &collectives);
    let processes = shared_gpus(trace, &index, &devices, steady_ns, (&mut findings, &mut whatifs));
    let link = link::findings(&phases, steps.name.as_deref(), step_model.as_ref());
    let ranked = ranks::finding(&collectives, steady_ns);
    findings.extend(link.into_iter().chain(ranked));
    link::graphs_need_no_syncs(&mut findings, step_model.as_ref());
    link::attach(&mut findings, &whatifs);
    rule::order(&mut findings, findings::waits_on_pageable_sync(&gaps));
    let step_instances: Vec<(Ns, Ns)> = steps.instances.iter().map(|i| (i.start, i.end)).collect();
    let steps_info = summary(&steps, &step_instances);
    Analysis {
        host: std::sync::Arc::new(host_ix),
        lookups: std::sync::Arc::new(index),
        collectives,
        rank_phases,
        options: options.clone(),
        overlap: transfers::overlap(&devices),
        totals: transfers::totals(trace),
        step_instances,
        steps: steps_info,
        step_phase: steps.name,
        hot_by_cause: hot,
        steady,
        short_holes,
        regions,
        step_model,
        whatif: whatifs,
        windows: steps.windows,
        devices,
        budget,
        processes,
        gaps,
        phases,
        transfers,
        findings,
    }
}

// Per rank of a trace of several ranks: its phases, over its own processes (empty for
// one export).
fn rank_phases(
    trace: &Trace,
    index: &index::Index,
    ctx: &phases::PhaseCtx<'_>,
    groups: &[(String, Vec<phases::Instance>)],
) -> Vec<(u32, Vec<Phase>)> {
    if trace.ranks.len() <= 1 {
        return Vec::new();
    }
    let rank = |r: &crate::model::Rank| {
        let mine: Vec<(String, Vec<phases::Instance>)> = groups
            .iter()
            .map(|(n, v)| (n.clone(), v.iter().filter(|i| r.pids.contains(&i.pid)).copied().collect()))
            .filter(|(_, v): &(String, Vec<phases::Instance>)| !v.is_empty())
            .collect();
        let launched = phases::project(trace, index, &mine);
        (r.rank, phases::stats(ctx, mine, &launched))
    };
    trace.ranks.iter().map(rank).collect()
}

// Per GPU with several processes, their work on it; each such GPU's `shared_gpu` finding
// and the what-if of one job on it.
fn shared_gpus(
    trace: &Trace,
    index: &index::Index,
    devices: &[DeviceActivity],
    steady_ns: Ns,
    (findings, whatifs): (&mut Vec<super::Finding>, &mut Vec<whatif::WhatIf>),
) -> Vec<(u32, Vec<shared::GpuProcess>)> {
    let processes: Vec<(u32, Vec<shared::GpuProcess>)> = devices
        .iter()
        .map(|d| (d.device, shared::processes(trace, index, d.device)))
        .filter(|(_, p)| !p.is_empty())
        .collect();
    for (device, procs) in &processes {
        findings.extend(shared::finding(*device, procs, steady_ns));
        if whatifs.iter().all(|w| w.fix != Fix::OneJobPerGpu) {
            whatifs.extend(shared::whatif(procs));
        }
    }
    processes
}

/// The steps of `trace` alone, as [`analyze`] finds them (its `steps`), without gaps,
/// causes or findings: what `info` shows.
pub(crate) fn find_step_info(trace: &Trace, options: &Options) -> StepsInfo {
    let index = index::Index::build(trace);
    let groups = phases::instances(trace, options.exact_names);
    let devices: Vec<DeviceActivity> = trace.devices().into_iter().map(|d| DeviceActivity::compute(trace, d)).collect();
    let steps = find_steps(trace, &index, (&groups, &devices), options);
    let instances: Vec<(Ns, Ns)> = steps.instances.iter().map(|i| (i.start, i.end)).collect();
    summary(&steps, &instances)
}

// The step phase (NVTX, the profiler's), else steps inferred from the kernels, each
// step extended to the end of the GPU work it launched.
fn find_steps(
    trace: &Trace,
    index: &index::Index,
    (groups, devices): (&[(String, Vec<phases::Instance>)], &[DeviceActivity]),
    options: &Options,
) -> steps::Steps {
    // Steps are told by grouped names (`step N`) even when the phases keep exact ones.
    let grouped = options.exact_names.then(|| phases::instances(trace, false));
    let mut steps = steps::choose(
        trace,
        (index, grouped.as_deref().unwrap_or(groups)),
        devices,
        options.step_phase.as_deref(),
        options.infer_steps,
    );
    whatif::extend_to_gpu_end(&mut steps, trace, index);
    steps
}

fn summary(steps: &steps::Steps, instances: &[(Ns, Ns)]) -> StepsInfo {
    StepsInfo::of(steps.source, steps.name.as_deref(), steps.anchor.as_deref(), instances)
}

// The budget of the mean steady step on the GPU the step model priced, else the busiest.
fn step_budget(
    (devices, gaps): (&[DeviceActivity], &[Gap]),
    steps: &steps::Steps,
    regions: &[regions::Region],
    model: Option<&whatif::StepModel>,
    collectives: &ranks::Collectives,
) -> Option<super::Budget> {
    steps.found().then_some(())?;
    let device = match model {
        Some(m) => devices.iter().find(|d| d.device == m.device),
        None => devices.iter().max_by_key(|d| d.busy.total()),
    }?;
    let waits = collectives.waits.iter().find(|(d, _)| *d == device.device).map(|(_, u)| u);
    budget::budget(device, gaps, (steps.windows, step_instances_steady(steps)), regions, waits)
}

// Steady steps: those starting in the steady window.
fn step_instances_steady(steps: &steps::Steps) -> usize {
    steps.instances.iter().filter(|s| s.start >= steps.windows.steady_start).count()
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
    use crate::analysis::{Rule, Severity, Window};
    use crate::model::{ApiKind, Events, Lane, LaneKind, Ns, Strings};

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
        assert_eq!(a.steady.short_idle_ns, want);
        assert!(a.gaps.iter().all(|g| g.window != Window::Steady), "{:?}", a.gaps);
        let f = a.findings.first().unwrap();
        assert_eq!((f.rule, f.severity), (Rule::LaunchBound, Severity::Critical), "{:?}", a.findings);
        let ev = |k: &str| f.evidence.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).unwrap();
        assert_eq!(ev("median_kernel_ns"), "2000");
        assert_eq!(ev("median_launch_period_ns"), "20000");
        // Kernels as long as their period: no holes, no finding.
        let (t, _) = loop_trace(6, 1000, 20, 20, 0, 0);
        let a = analyze(&t, &Options::default());
        assert!(a.findings.iter().all(|f| f.rule != Rule::LaunchBound), "{:?}", a.findings);
    }

    #[test]
    fn a_second_loop_after_the_last_step_is_reported_when_it_idles_more() {
        // Busy steps, then 40 kernels 1 ms apart after the last one.
        let (t, _) = loop_trace(4, 1000, 19, 20, 40, 1_000_000);
        let a = analyze(&t, &Options::default());
        let f = a.findings.iter().find(|f| f.rule == Rule::TeardownLoop).expect("teardown_loop");
        assert!(f.message.contains("After the last `step N`"), "{}", f.message);
        let (t, _) = loop_trace(4, 1000, 19, 20, 0, 0);
        assert!(analyze(&t, &Options::default()).findings.iter().all(|f| f.rule != Rule::TeardownLoop));
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
