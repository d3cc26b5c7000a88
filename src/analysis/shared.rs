//! Several processes on one GPU (issue 32, item 4): each process's busy time and steps,
//! and how long its kernels waited in the queue while another process's work ran. The
//! GPU's idle is the union of every process's work ([`super::DeviceActivity`]): a gap of
//! one process filled by another's kernels is not idle.

use super::index::Index;
use super::{Finding, Fix, Rule, Severity, Union};
use crate::model::{Ns, Trace};
use crate::text::fmt_ns;

/// One process's work on one GPU.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GpuProcess {
    /// Process id.
    pub pid: u32,
    /// Process name (escaped by the JSON writer, sanitized where shown).
    pub name: String,
    /// Union of its kernels, copies and memsets on the GPU.
    pub busy_ns: Ns,
    /// Steps inferred from its own kernel sequence (null when none repeat).
    pub steps: Option<usize>,
    /// Its mean step: first to last step start over the steps between (null without steps).
    pub step_ns: Option<Ns>,
    /// Time its launched kernels waited to start while another process's work ran.
    pub waited_ns: Ns,
}

/// The processes with work on `device`, busiest first (empty with fewer than two).
pub(crate) fn processes(trace: &Trace, index: &Index, device: u32) -> Vec<GpuProcess> {
    let mut pids: Vec<u32> =
        trace.lanes.iter().filter(|l| l.kind.gpu_work_device() == Some(device)).map(|l| l.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    if pids.len() < 2 {
        return Vec::new();
    }
    let busy: Vec<Union> = pids.iter().map(|&p| own_busy(trace, p, device)).collect();
    let mut out: Vec<GpuProcess> = pids
        .iter()
        .enumerate()
        .map(|(i, &pid)| {
            let others =
                busy.iter().enumerate().filter(|&(j, _)| j != i).fold(Union::default(), |u, (_, b)| u.merge(b));
            let steps = super::cycle::infer_for(trace, index, pid, device).map(|s| s.instances);
            let n = steps.as_ref().map_or(0, Vec::len);
            let step_ns = steps.as_ref().filter(|_| n >= 2).map(|v| (v[n - 1].start - v[0].start) / (n - 1) as Ns);
            GpuProcess {
                pid,
                name: trace.process_name(pid).to_string(),
                busy_ns: busy[i].total(),
                steps: (n > 0).then_some(n),
                step_ns,
                waited_ns: waited(trace, index, (pid, device), &others),
            }
        })
        .collect();
    out.sort_by_key(|p| std::cmp::Reverse(p.busy_ns));
    out
}

fn own_busy(trace: &Trace, pid: u32, device: u32) -> Union {
    Union::from_pairs(
        trace
            .lanes
            .iter()
            .filter(|l| l.pid == pid && l.kind.gpu_work_device() == Some(device))
            .flat_map(|l| l.ev.start.iter().copied().zip(l.ev.ends())),
    )
}

// Sum over `pid`'s GPU operations on `device` of the part of [launch returned, operation
// started] that `others` kept the GPU busy: time in the queue behind another process.
fn waited(trace: &Trace, index: &Index, (pid, device): (u32, u32), others: &Union) -> Ns {
    let mut total = 0;
    for l in trace.lanes.iter().filter(|l| l.pid == pid && l.kind.gpu_work_device() == Some(device)) {
        for i in 0..l.ev.len() {
            let Some(call) = index.api_call_at(trace, pid, l.ev.corr(i)) else { continue };
            let launched = trace.lanes[call.lane as usize].ev.end(call.idx as usize);
            if launched < l.ev.start[i] {
                total += others.busy_in(launched, l.ev.start[i]);
            }
        }
    }
    total
}

/// `shared_gpu`: two or more processes with work on one GPU, each holding at least a
/// tenth of its busy time; the evidence gives each one's busy time, steps and wait.
pub(crate) fn finding(device: u32, procs: &[GpuProcess], steady_ns: Ns) -> Option<Finding> {
    let total: Ns = procs.iter().map(|p| p.busy_ns).sum();
    let big: Vec<&GpuProcess> = procs.iter().filter(|p| p.busy_ns * 10 >= total).collect();
    if big.len() < 2 {
        return None;
    }
    let waited: Ns = big.iter().map(|p| p.waited_ns).sum();
    let each: Vec<String> = big
        .iter()
        .map(|p| {
            format!(
                "{} (pid {}) busy {}, waited {} behind the others",
                crate::text::sanitize(&p.name),
                p.pid,
                fmt_ns(p.busy_ns),
                fmt_ns(p.waited_ns)
            )
        })
        .collect();
    let mut evidence = vec![(String::from("device"), device.to_string()), ("processes".into(), big.len().to_string())];
    for p in &big {
        evidence.push((format!("pid_{}_busy_ns", p.pid), p.busy_ns.to_string()));
        evidence.push((format!("pid_{}_waited_ns", p.pid), p.waited_ns.to_string()));
        evidence.push((format!("pid_{}_steps", p.pid), p.steps.map_or_else(|| "-".into(), |s| s.to_string())));
    }
    // Waiting behind another job costs as idle does: its share of the steady span rates it.
    let share = waited as f64 / steady_ns.max(1) as f64;
    let severity = if share >= 0.5 { Severity::Critical } else { Severity::Warning };
    let message = format!(
        "{} processes shared GPU {device}: {}; the GPU's idle is the union of their work",
        big.len(),
        each.join("; ")
    );
    Some(
        Finding::new(Rule::SharedGpu, severity, message, evidence)
            .with_fix(Fix::OneJobPerGpu, String::new())
            .weighing(waited),
    )
}

/// What the busiest process with steps would save per step alone on the GPU: its wait
/// behind the others, per step.
pub(crate) fn whatif(procs: &[GpuProcess]) -> Option<super::whatif::WhatIf> {
    let p = procs.iter().find(|p| p.steps.is_some() && p.step_ns.is_some())?;
    let (steps, step) = (p.steps? as Ns, p.step_ns?);
    let saving = (p.waited_ns / steps.max(1)).min(step);
    Some(super::whatif::WhatIf {
        fix: Fix::OneJobPerGpu,
        saving_per_step_ns: saving,
        step_ns_after: step - saving,
        limited_by: "none",
        basis: format!(
            "{} (pid {}) waited {} in the queue behind the other processes' work over {steps} steps of {}",
            crate::text::sanitize(&p.name),
            p.pid,
            fmt_ns(p.waited_ns),
            fmt_ns(step)
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ApiKind, Events, Lane, LaneKind};

    // Process `pid` on GPU 0: kernels `(launch end, start, end)`, each launched by a
    // `cudaLaunchKernel` call that returns at `launch end`.
    fn process(t: &mut Trace, pid: u32, rows: &[(Ns, Ns, Ns)]) {
        let (k, l) = (t.strings.intern("gemm"), t.strings.intern("cudaLaunchKernel"));
        let (mut kernels, mut calls) = (Events::default(), Events::default());
        for (i, &(launched, s, e)) in rows.iter().enumerate() {
            let corr = i as u32 + 1;
            kernels.push(s, e, k, Some(corr), Some(0), None);
            calls.push(launched - 5, launched, l, Some(corr), None, Some(ApiKind::Launch as u32));
        }
        t.lanes.push(Lane::new(LaneKind::Kernels { device: 0, stream: 7 }, pid, kernels));
        t.lanes.push(Lane::new(LaneKind::CudaApi { tid: pid }, pid, calls));
    }

    #[test]
    fn each_process_waits_only_while_another_runs() {
        let mut t = Trace { strings: crate::model::Strings::new(), ..Trace::default() };
        // A: launched at 0, starts at 30 behind B's [10, 30) (waits 20 of its 30 in the
        // queue, 10 of them on an idle GPU); then [40, 50) launched at 40: no wait.
        process(&mut t, 1, &[(0, 30, 40), (40, 40, 50)]);
        // B: [10, 30) launched at 10; then launched at 35, starts at 50 behind A's [30, 40)
        // and [40, 50): 15 in the queue.
        process(&mut t, 2, &[(10, 10, 30), (35, 50, 60)]);
        let index = Index::build(&t);
        let procs = processes(&t, &index, 0);
        let by = |pid| procs.iter().find(|p| p.pid == pid).unwrap();
        assert_eq!((by(1).busy_ns, by(1).waited_ns), (20, 20));
        assert_eq!((by(2).busy_ns, by(2).waited_ns), (30, 15));
        let f = finding(0, &procs, 60).expect("two processes share GPU 0");
        assert_eq!(f.rule, Rule::SharedGpu);
        assert_eq!(f.weight, 35);
        // One process alone: no list, no finding.
        let mut one = Trace { strings: crate::model::Strings::new(), ..Trace::default() };
        process(&mut one, 1, &[(0, 0, 10)]);
        assert!(processes(&one, &Index::build(&one), 0).is_empty());
    }
}
