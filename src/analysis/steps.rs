//! The step phase and the startup / steady / teardown windows (docs/causes.md).
//!
//! The *step phase* is the NVTX phase one instance of which is one training or
//! inference step. Asked for by name (`--step-phase`), else chosen among phases of at
//! least 2 instances (grouped names): first those with a numbered step-like name
//! (`step N`, `iter N`, `iteration N`, `batch N`, `epoch N`, `ProfilerStep#N`, any
//! case; step and iteration names before batch, batch before epoch), else top-level
//! ranges of at least 3 instances whose instances hold at least half of the GPU busy
//! time, framework operators (names with `::`, such as `aten::to`) left out. Within a rank, the phase whose instances hold the most GPU busy time wins.
//!
//! Without a step phase (or with `Options::infer_steps`), the steps are inferred from the
//! kernels the process with the most GPU time launches ([`super::cycle`]): a Kineto
//! `ProfilerStep#N` is a step phase like any NVTX one (source `profiler`).
//!
//! Windows: *startup* up to the start of the second step, *steady* from there to the
//! end of the last step's GPU work, *teardown* after it. Without steps of any source,
//! steady runs from the first GPU operation to the last.

use super::index::Index;
use super::phases::Instance;
use super::{DeviceActivity, StepSource, Union, Windows};
use crate::model::{Ns, Trace, group_name, step_rank};

/// Fewest instances of a top-level phase without a step-like name.
const MIN_TOP_LEVEL: usize = 3;

/// The chosen step phase: its name and its outermost instances, sorted by start.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Steps {
    /// Grouped name, e.g. `step N`; None when no NVTX phase marks the steps.
    pub name: Option<String>,
    /// What marked the steps.
    pub source: StepSource,
    /// For inferred steps, the kernel whose launches mark their boundaries.
    pub anchor: Option<String>,
    /// Outermost instances, sorted by start.
    pub instances: Vec<Instance>,
    /// The steady window.
    pub windows: Windows,
}

impl Steps {
    /// True when the trace has steps of any source.
    pub(crate) fn found(&self) -> bool {
        !self.instances.is_empty()
    }

    /// How messages name one step: `` `step N` `` or `inferred step`.
    pub(crate) fn label(&self) -> String {
        self.name.as_ref().map_or_else(|| "inferred step".to_string(), |n| format!("`{n}`"))
    }
}

/// Choose the step phase among `groups` (grouped names), else infer the steps from the
/// kernels (always with `infer`), and derive the windows.
pub(crate) fn choose(
    trace: &Trace,
    (index, groups): (&Index, &[(String, Vec<Instance>)]),
    devices: &[DeviceActivity],
    wanted: Option<&str>,
    infer: bool,
) -> Steps {
    // Saturating sums: corrupt timestamps near i64::MAX must not overflow.
    let total: Ns = devices.iter().fold(0, |t, d| t.saturating_add(d.busy.total()));
    let held = |inst: &[Instance]| -> Ns {
        let windows = Union::from_pairs(inst.iter().map(|i| (i.start, i.end)));
        devices.iter().flat_map(|d| windows.iter().map(|(a, b)| d.busy.busy_in(a, b))).fold(0, Ns::saturating_add)
    };
    let pick = match wanted {
        _ if infer => None,
        Some(w) => asked(groups, w),
        None => numbered(groups, &held).or_else(|| top_level(groups, &held, total)),
    };
    let gpu_extent = devices.iter().filter_map(DeviceActivity::extent).reduce(|a, b| (a.0.min(b.0), a.1.max(b.1)));
    let whole = gpu_extent.unwrap_or((trace.meta.start_ns, trace.meta.end_ns));
    let (name, source, anchor, instances) = match pick {
        Some((name, instances)) if !instances.is_empty() => {
            let source = if name.starts_with("ProfilerStep") { StepSource::Profiler } else { StepSource::Nvtx };
            (Some(name), source, None, instances)
        }
        _ if wanted.is_some() && !infer => (None, StepSource::None, None, Vec::new()),
        _ => match super::cycle::infer(trace, index) {
            Some(c) => (None, StepSource::Inferred, Some(trace.strings.get(c.anchor).to_string()), c.instances),
            None => (None, StepSource::None, None, Vec::new()),
        },
    };
    let windows = if instances.is_empty() {
        Windows { steady_start: whole.0, steady_end: whole.1 }
    } else {
        let steady_start = second_step_start(trace, &instances);
        let steady_end = instances.iter().map(|i| i.end).max().unwrap_or(whole.1).max(steady_start);
        Windows { steady_start, steady_end }
    };
    Steps { name, source, anchor, instances, windows }
}

// Where the steady state begins: the start of the second step; with several ranks, of
// each rank's own second step, the latest of them (a rank that starts late is still in
// warm-up while the others run steps).
fn second_step_start(trace: &Trace, instances: &[Instance]) -> Ns {
    let second = |inst: &mut dyn Iterator<Item = &Instance>| {
        let first = inst.next()?;
        Some(inst.next().unwrap_or(first).start)
    };
    let whole = second(&mut instances.iter()).unwrap_or(0);
    if trace.ranks.len() < 2 {
        return whole;
    }
    trace
        .ranks
        .iter()
        .filter_map(|r| second(&mut instances.iter().filter(|i| r.pids.contains(&i.pid))))
        .max()
        .unwrap_or(whole)
}

type Pick = Option<(String, Vec<Instance>)>;

// The phase asked for by name (exact or grouped).
fn asked(groups: &[(String, Vec<Instance>)], want: &str) -> Pick {
    let g = group_name(want);
    groups.iter().find(|(n, _)| n == want || *n == g).map(|(n, inst)| (n.clone(), outermost(inst)))
}

// The best numbered step-like phase: lowest rank, then most GPU busy time held.
fn numbered(groups: &[(String, Vec<Instance>)], held: &dyn Fn(&[Instance]) -> Ns) -> Pick {
    groups
        .iter()
        .filter_map(|(n, inst)| Some((step_rank(n)?, n, outermost(inst))))
        .filter(|(_, _, inst)| inst.len() >= 2)
        .map(|(r, n, inst)| ((r, std::cmp::Reverse(held(&inst))), n.clone(), inst))
        .min_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)))
        .map(|(_, n, inst)| (n, inst))
}

// The repeated top-level phase holding the most GPU busy time, if it holds half of it.
// Framework operators (`aten::to`, `c10d::allreduce_`: names with `::`) are never steps.
fn top_level(groups: &[(String, Vec<Instance>)], held: &dyn Fn(&[Instance]) -> Ns, total: Ns) -> Pick {
    groups
        .iter()
        .filter(|(n, _)| !n.contains("::"))
        .map(|(n, inst)| (n, inst.iter().filter(|i| i.depth == 0).copied().collect::<Vec<_>>()))
        .filter(|(_, inst)| inst.len() >= MIN_TOP_LEVEL)
        .map(|(n, inst)| (held(&inst), n.clone(), outermost(&inst)))
        .filter(|(h, _, _)| total > 0 && 2 * h >= total)
        .max_by(|a, b| a.0.cmp(&b.0).then_with(|| b.1.cmp(&a.1)))
        .map(|(_, n, inst)| (n, inst))
}

/// Instances not nested in another instance of the same phase on the same thread,
/// sorted by start.
fn outermost(inst: &[Instance]) -> Vec<Instance> {
    let mut v = inst.to_vec();
    v.sort_by_key(|i| (i.pid, i.tid, i.start, std::cmp::Reverse(i.end)));
    let mut out: Vec<Instance> = Vec::with_capacity(v.len());
    let mut cover: Option<(u32, u32, Ns)> = None;
    for i in v {
        if cover.is_some_and(|(p, t, e)| p == i.pid && t == i.tid && i.end <= e) {
            continue;
        }
        cover = Some((i.pid, i.tid, i.end));
        out.push(i);
    }
    out.sort_by_key(|i| (i.start, i.end));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Window;

    fn inst(start: Ns, end: Ns, depth: u16) -> Instance {
        Instance { pid: 1, tid: 1, start, end, depth }
    }

    fn busy(pairs: &[(Ns, Ns)]) -> DeviceActivity {
        let u = Union::from_pairs(pairs.iter().copied());
        DeviceActivity { device: 0, busy: u.clone(), kernels: u, copies: Union::default() }
    }

    #[test]
    fn a_numbered_step_wins_over_a_busier_top_level_range_and_sets_the_windows() {
        let d = [busy(&[(0, 1000)])];
        let groups = vec![
            ("compile".to_string(), vec![inst(0, 300, 0), inst(300, 600, 0), inst(600, 900, 0)]),
            ("optimizer step".to_string(), vec![inst(10, 20, 1), inst(110, 120, 1)]),
            ("step N".to_string(), vec![inst(100, 200, 0), inst(200, 300, 0), inst(300, 400, 0)]),
        ];
        let s = choose(&Trace::default(), (&Index::default(), &groups), &d, None, false);
        assert_eq!(s.name.as_deref(), Some("step N"));
        assert_eq!(s.windows, Windows { steady_start: 200, steady_end: 400 });
        assert_eq!(s.windows.of(150, 210), Window::Startup);
        assert_eq!(s.windows.of(380, 410), Window::Steady);
        assert_eq!(s.windows.of(390, 500), Window::Teardown);
    }

    #[test]
    fn without_a_step_name_a_top_level_range_must_hold_half_the_gpu_work() {
        let d = [busy(&[(0, 1000)])];
        let small = vec![("jit".to_string(), vec![inst(0, 100, 0), inst(200, 300, 0), inst(400, 450, 0)])];
        let s = choose(&Trace::default(), (&Index::default(), &small), &d, None, false);
        assert_eq!(s.name, None);
        assert_eq!(s.windows, Windows { steady_start: 0, steady_end: 1000 });
        let big = vec![("train".to_string(), vec![inst(0, 400, 0), inst(400, 800, 0), inst(800, 1000, 0)])];
        assert_eq!(
            choose(&Trace::default(), (&Index::default(), &big), &d, None, false).name.as_deref(),
            Some("train")
        );
        // A PyTorch operator holding the GPU work is no step.
        let op = vec![("aten::to".to_string(), vec![inst(0, 400, 0), inst(400, 800, 0), inst(800, 1000, 0)])];
        assert_eq!(choose(&Trace::default(), (&Index::default(), &op), &d, None, false).name, None);
        // Asked for by name, even a small phase is the step.
        assert_eq!(
            choose(&Trace::default(), (&Index::default(), &small), &d, Some("jit"), false).name.as_deref(),
            Some("jit")
        );
    }

    #[test]
    fn with_several_ranks_the_steady_state_starts_at_the_latest_rank_s_second_step() {
        let d = [busy(&[(0, 1000)])];
        let on = |pid: u32, start: Ns| Instance { pid, tid: pid, start, end: start + 100, depth: 0 };
        let steps = vec![on(1, 0), on(1, 100), on(1, 200), on(2, 150), on(2, 250), on(2, 350)];
        let groups = vec![("step N".to_string(), steps)];
        let mut t = Trace::default();
        assert_eq!(choose(&t, (&Index::default(), &groups), &d, None, false).windows.steady_start, 100);
        for (rank, pid) in [(0, 1), (1, 2)] {
            t.ranks.push(crate::model::Rank { rank, pids: vec![pid], ..crate::model::Rank::default() });
        }
        // Rank 1 starts late: its first step is still warm-up while rank 0 runs its second.
        assert_eq!(
            choose(&t, (&Index::default(), &groups), &d, None, false).windows,
            Windows { steady_start: 250, steady_end: 450 }
        );
    }

    #[test]
    fn nested_instances_of_the_same_phase_count_once() {
        let v = outermost(&[inst(0, 100, 0), inst(10, 20, 1), inst(100, 200, 0)]);
        assert_eq!(v.iter().map(|i| (i.start, i.end)).collect::<Vec<_>>(), vec![(0, 100), (100, 200)]);
    }
}
