//! Where the steady idle sits: inside ordinary steps, in periodic stalls, between steps,
//! or in another loop.
//!
//! Each gap's steady part is split at the step ranges:
//!
//! - inside a step whose wall is at least [`STALL_FACTOR`] times the median step's, on
//!   the host and on the GPU alike, when such steps recur at a regular interval (most of
//!   their distances equal): a **periodic** stall (a checkpoint, an evaluation, logging
//!   every N steps), named by the NVTX phase holding at least half of its idle, else by
//!   its dominant cause. A step's span on the GPU runs from the first operation it
//!   launched to the next step's first: where the host runs ahead of the GPU, a sync
//!   every N steps makes those steps long on the host only (it waits for the work the
//!   steps before it queued), and they are no stall;
//! - outside every step, in an NVTX phase that is a loop of its own (repeated, never
//!   overlapping a step: `eval`): a **loop** region named by the phase;
//! - outside every step otherwise: **between-steps** (epoch boundaries: DataLoader
//!   workers restarting, a new epoch's first batches);
//! - the rest: **steps**, the ordinary steps.

use std::collections::HashMap;

use super::index::Index;
use super::phases::Instance;
use super::{Cause, Gap, Windows};
use crate::model::{ApiKind, Ns, Trace};

/// A step is a stall when its wall is at least this many times the median step's.
const STALL_FACTOR: Ns = 2;
/// Share of the idle between steps that the recurring holes must hold.
const RECUR_SHARE: f64 = 0.75;
/// Share of a recurring thing's distances that must be equal for it to be periodic.
const REGULAR_SHARE: f64 = 0.5;

/// Where a region's idle sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RegionKind {
    /// Inside ordinary steps.
    Steps,
    /// Inside steps far longer than the median that recur every N steps.
    Periodic,
    /// Outside every step, in no loop of its own.
    BetweenSteps,
    /// In an NVTX phase that is a loop of its own.
    Loop,
}

/// One region of the steady idle: the report's `regions[]`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Region {
    /// `steps`, `periodic`, `between-steps` or `loop`.
    pub kind: RegionKind,
    /// The phase, or what the idle was (its dominant cause), or `ordinary steps`.
    pub name: String,
    /// Steps from one occurrence to the next, when they recur regularly.
    pub every_steps: Option<usize>,
    /// Occurrences (steps, stalls, holes between steps, instances of the loop) holding idle.
    pub occurrences: usize,
    /// Steady idle in the region (gaps of at least `--min-gap`).
    pub idle_ns: Ns,
    /// That idle per steady step.
    pub idle_per_step_ns: Ns,
    /// The cause holding most of it.
    #[serde(deserialize_with = "super::static_str")]
    pub dominant_cause: super::Label,
    /// Periodic stalls: the wall their steady steps take beyond the median step's (the
    /// stall's own work, its GPU work included: a snapshot's copies, an evaluation's
    /// kernels); 0 for the other kinds. It prices `less_often`.
    pub extra_ns: Ns,
}

impl Region {
    /// What removing the region would give back over the steady state: for a periodic
    /// stall the wall its steps add beyond the median step, at least its idle (removing
    /// the stall removes its work, not only the GPU's waits); the idle for the others.
    pub fn cost_ns(&self) -> Ns {
        self.idle_ns.max(self.extra_ns)
    }
}

// Idle of one region while it is summed: by occurrence and by cause and phase.
#[derive(Default)]
struct Sum {
    // Idle per occurrence (step index, or index of the step before a hole).
    occurrences: std::collections::BTreeMap<usize, Ns>,
    by_cause: HashMap<Cause, Ns>,
    by_phase: HashMap<Option<String>, Ns>,
    idle: Ns,
}

impl Sum {
    fn add(&mut self, at: usize, g: &Gap, t: Ns) {
        *self.occurrences.entry(at).or_default() += t;
        *self.by_cause.entry(g.cause).or_default() += t;
        *self.by_phase.entry(g.phase.clone()).or_default() += t;
        self.idle += t;
    }

    fn merge(&mut self, o: Sum) {
        for (k, t) in o.occurrences {
            *self.occurrences.entry(k).or_default() += t;
        }
        for (c, t) in o.by_cause {
            *self.by_cause.entry(c).or_default() += t;
        }
        for (p, t) in o.by_phase {
            *self.by_phase.entry(p).or_default() += t;
        }
        self.idle += o.idle;
    }

    // The NVTX phase (not the step phase) holding most of the idle: at least half of it.
    // A phase that holds a sliver (the loader's `__next__` at the edge of an evaluation
    // step) names nothing.
    fn phase(&self, step_phase: Option<&str>) -> Option<&String> {
        let named = self.by_phase.iter().filter(|(p, _)| p.is_some() && p.as_deref() != step_phase);
        let (p, t) = named.max_by_key(|&(p, t)| (*t, p.clone()))?;
        (2 * t >= self.idle).then_some(p.as_ref()).flatten()
    }

    fn dominant(&self) -> Cause {
        let best = self.by_cause.iter().max_by_key(|&(c, t)| (*t, std::cmp::Reverse(*c)));
        best.map_or(Cause::Unknown, |(c, _)| *c)
    }
}

/// The regions of the steady idle of `gaps`, given the steps (sorted by start), the
/// NVTX phases by name (`loops`: phases that may be loops of their own), largest idle
/// first. Profiler overhead counts in none.
pub(crate) fn regions(
    steps: &[Instance],
    gpu: &[Option<Ns>],
    w: Windows,
    gaps: &[Gap],
    phases: &[(String, Vec<Instance>)],
    step_phase: Option<&str>,
) -> Vec<Region> {
    if steps.len() < 2 {
        return Vec::new();
    }
    let stalls = stalls(steps, gpu);
    let loops = loops(phases, steps, step_phase);
    let steady_steps = steps.iter().filter(|s| s.start >= w.steady_start).count().max(1) as Ns;
    let mut sums: HashMap<(RegionKind, Option<String>), Sum> = HashMap::new();
    for g in gaps.iter().filter(|g| g.cause != Cause::Profiler) {
        let (a, b) = (g.start.max(w.steady_start), g.end.min(w.steady_end));
        for (k, inside, t) in split(steps, a, b) {
            let key = if inside {
                (if stalls.1.contains(&k) { RegionKind::Periodic } else { RegionKind::Steps }, None)
            } else {
                match g.phase.as_ref().filter(|p| loops.contains(p)) {
                    Some(p) => (RegionKind::Loop, Some(p.clone())),
                    None => (RegionKind::BetweenSteps, None),
                }
            };
            sums.entry(key).or_default().add(k, g, t);
        }
    }
    // Long steps whose idle is no work of their own stay ordinary steps.
    if let Some(p) = sums.remove(&(RegionKind::Periodic, None)) {
        let kind =
            if periodic_work(&p, phases, steps.len(), step_phase) { RegionKind::Periodic } else { RegionKind::Steps };
        sums.entry((kind, None)).or_default().merge(p);
    }
    let mut out: Vec<Region> = sums
        .into_iter()
        .map(|((kind, name), s)| {
            // Holes between steps recur where they are far longer than the usual hole.
            let (every, occurrences) = match kind {
                RegionKind::Periodic => (stalls.0, s.occurrences.len()),
                RegionKind::Loop => (regular(&s.occurrences.keys().copied().collect::<Vec<_>>()), s.occurrences.len()),
                RegionKind::BetweenSteps => match recurring(&s.occurrences) {
                    Some((every, at)) => (Some(every), at.len()),
                    None => (None, s.occurrences.len()),
                },
                RegionKind::Steps => (None, s.occurrences.len()),
            };
            let name = name.unwrap_or_else(|| match kind {
                RegionKind::Steps => "ordinary steps".to_string(),
                RegionKind::BetweenSteps => "between steps".to_string(),
                RegionKind::Periodic | RegionKind::Loop => {
                    s.phase(step_phase).cloned().unwrap_or_else(|| s.dominant().label().to_string())
                }
            });
            Region {
                kind,
                name,
                every_steps: every,
                occurrences,
                idle_ns: s.idle,
                idle_per_step_ns: s.idle / steady_steps,
                dominant_cause: s.dominant().label(),
                extra_ns: if kind == RegionKind::Periodic { extra(steps, gpu, &stalls.1, w.steady_start) } else { 0 },
            }
        })
        .collect();
    out.sort_by_key(|r| (std::cmp::Reverse(r.idle_ns), r.kind, r.name.clone()));
    out
}

/// The host ranges of the periodic stall's steps, where `regions` holds one (none
/// otherwise): waits inside them are the stall's, not the input pipeline's pace.
pub(crate) fn stall_spans(steps: &[Instance], gpu: &[Option<Ns>], regions: &[Region]) -> Vec<(Ns, Ns)> {
    if steps.len() < 2 || !regions.iter().any(|r| r.kind == RegionKind::Periodic) {
        return Vec::new();
    }
    stalls(steps, gpu).1.into_iter().map(|k| (steps[k].start, steps[k].end)).collect()
}

/// Start of the first GPU operation each step launched from its thread (a kernel, graph,
/// copy or memset), `None` where it launched none: with the next step's, the step's span
/// on the GPU.
pub(crate) fn gpu_starts(trace: &Trace, index: &Index, steps: &[Instance]) -> Vec<Option<Ns>> {
    steps
        .iter()
        .map(|s| {
            let ev = &trace.lanes[index.api_lane(s.pid, s.tid)?].ev;
            let from = ev.start.partition_point(|&t| t < s.start);
            (from..ev.len())
                .take_while(|&i| ev.start[i] < s.end)
                .filter(|&i| !matches!(ApiKind::from_flags(ev.flags(i)), ApiKind::Other | ApiKind::Sync))
                .find_map(|i| index.gpu_op_at(trace, s.pid, ev.corr(i)))
                .map(|r| trace.lanes[r.lane as usize].ev.start[r.idx as usize])
        })
        .collect()
}

// Each step's span on the GPU (`gpu`: [`gpu_starts`]): from its first operation to the
// next step's first; its host wall where either launched none.
fn gpu_spans(steps: &[Instance], gpu: &[Option<Ns>]) -> Vec<Ns> {
    (0..steps.len())
        .map(|k| match (gpu.get(k).copied().flatten(), gpu.get(k + 1).copied().flatten()) {
            (Some(a), Some(b)) if b > a => b - a,
            _ => steps[k].end - steps[k].start,
        })
        .collect()
}

// True when the idle of the long steps is work done every few steps: named by an NVTX
// phase that runs in fewer than half of the steps (a checkpoint, not `next batch`), or,
// without one, not a wait for the input pipeline (whose workers deliver in turn, so that
// every W-th step waits: that is the loader, told by its causes).
fn periodic_work(s: &Sum, phases: &[(String, Vec<Instance>)], steps: usize, step_phase: Option<&str>) -> bool {
    match s.phase(step_phase) {
        Some(name) => phases.iter().find(|(n, _)| n == name).is_some_and(|(_, v)| 2 * v.len() < steps),
        None => !matches!(s.dominant(), Cause::WorkerBusy | Cause::IoWait | Cause::CpuContention | Cause::HostWait),
    }
}

// The wall the stall steps `long` of the steady state take beyond the median step's, on
// the host and on the GPU (`gpu`: [`gpu_starts`]) alike: the less of the two.
fn extra(steps: &[Instance], gpu: &[Option<Ns>], long: &[usize], steady_start: Ns) -> Ns {
    let walls: Vec<Ns> = steps.iter().map(|s| s.end - s.start).collect();
    let spans = gpu_spans(steps, gpu);
    let (median, on_gpu) = (median(&walls), median(&spans));
    let beyond = |k: usize| (walls[k] - median).min(spans[k] - on_gpu).max(0);
    long.iter().filter(|&&k| steps[k].start >= steady_start).map(|&k| beyond(k)).sum()
}

fn median(v: &[Ns]) -> Ns {
    let mut v = v.to_vec();
    let k = (v.len() - 1) / 2;
    *v.select_nth_unstable(k).1
}

// The steps that are stalls (at least STALL_FACTOR times the median step on the host and
// on the GPU alike), when they recur regularly, with their interval in steps.
fn stalls(steps: &[Instance], gpu: &[Option<Ns>]) -> (Option<usize>, Vec<usize>) {
    let walls: Vec<Ns> = steps.iter().map(|s| s.end - s.start).collect();
    let spans = gpu_spans(steps, gpu);
    let (median, on_gpu) = (median(&walls).max(1), median(&spans).max(1));
    let long: Vec<usize> =
        (0..steps.len()).filter(|&i| walls[i] >= STALL_FACTOR * median && spans[i] >= STALL_FACTOR * on_gpu).collect();
    match regular(&long) {
        Some(every) => (Some(every), long),
        None => (None, Vec::new()),
    }
}

// The holes between steps that recur: the fewest largest holes holding RECUR_SHARE of
// the idle between steps, when they come at a regular interval; then every hole at that
// interval and phase that holds idle.
fn recurring(idle: &std::collections::BTreeMap<usize, Ns>) -> Option<(usize, Vec<usize>)> {
    let total: Ns = idle.values().sum();
    let mut by: Vec<(usize, Ns)> = idle.iter().map(|(&i, &t)| (i, t)).collect();
    by.sort_by_key(|&(i, t)| (std::cmp::Reverse(t), i));
    let (mut held, mut top) = (0 as Ns, Vec::new());
    for (i, t) in by {
        if held as f64 >= RECUR_SHARE * total as f64 {
            break;
        }
        held += t;
        top.push(i);
    }
    top.sort_unstable();
    let every = regular(&top)?;
    let phase = top.iter().map(|i| i % every).fold(HashMap::<usize, usize>::new(), |mut m, r| {
        *m.entry(r).or_default() += 1;
        m
    });
    let r = phase.into_iter().max_by_key(|&(r, n)| (n, std::cmp::Reverse(r)))?.0;
    Some((every, idle.iter().filter(|&(&i, &t)| i % every == r && t > 0).map(|(&i, _)| i).collect()))
}

// The interval of indices that recur regularly (at least two, most distances equal, and
// not every step: that is no recurrence).
fn regular(at: &[usize]) -> Option<usize> {
    if at.len() < 2 {
        return None;
    }
    let mut count: HashMap<usize, usize> = HashMap::new();
    for w in at.windows(2) {
        *count.entry(w[1] - w[0]).or_default() += 1;
    }
    let (every, n) = count.into_iter().max_by_key(|&(d, n)| (n, std::cmp::Reverse(d)))?;
    (n as f64 >= REGULAR_SHARE * (at.len() - 1) as f64 && every > 1).then_some(every)
}

// NVTX phases that are loops of their own: repeated, and no instance overlapping a step.
fn loops(phases: &[(String, Vec<Instance>)], steps: &[Instance], step_phase: Option<&str>) -> Vec<String> {
    let overlaps = |i: &Instance| {
        let k = steps.partition_point(|s| s.end <= i.start);
        steps.get(k).is_some_and(|s| s.start < i.end)
    };
    phases
        .iter()
        .filter(|(n, v)| Some(n.as_str()) != step_phase && v.len() >= 2 && !v.iter().any(overlaps))
        .map(|(n, _)| n.clone())
        .collect()
}

// The parts of [a, b) inside steps (step index, true, time) and between them (index of
// the step before, false, time).
fn split(steps: &[Instance], a: Ns, b: Ns) -> Vec<(usize, bool, Ns)> {
    let mut out = Vec::new();
    if b <= a {
        return out;
    }
    let mut at = a;
    let mut k = steps.partition_point(|s| s.end <= a);
    while at < b {
        match steps.get(k) {
            Some(s) if s.start <= at => {
                let end = s.end.min(b);
                out.push((k, true, end - at));
                at = end;
                k += 1;
            }
            Some(s) => {
                let end = s.start.min(b);
                out.push((k.saturating_sub(1), false, end - at));
                at = end;
            }
            None => {
                out.push((k.saturating_sub(1), false, b - at));
                at = b;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(start: Ns, end: Ns) -> Instance {
        Instance { pid: 1, tid: 1, start, end, depth: 0 }
    }

    fn gap(start: Ns, end: Ns, cause: Cause, phase: Option<&str>) -> Gap {
        Gap { start, end, cause, phase: phase.map(str::to_string), ..Gap::default() }
    }

    #[test]
    fn a_gap_splits_at_the_steps() {
        let steps = [step(0, 10), step(20, 30)];
        assert_eq!(split(&steps, 5, 25), vec![(0, true, 5), (0, false, 10), (1, true, 5)]);
        assert_eq!(split(&steps, 31, 40), vec![(1, false, 9)]);
    }

    #[test]
    fn every_third_step_long_is_a_periodic_stall_and_an_eval_loop_a_loop() {
        // Steps of 10 from 0 to 120, every third (2, 5, 8, 11) 40 long instead; an `eval`
        // range between steps 6 and 7.
        let mut steps = Vec::new();
        let mut t = 0;
        for i in 0..12 {
            let len = if i % 3 == 2 { 40 } else { 10 };
            steps.push(step(t, t + len));
            t += len;
            if i == 6 {
                t += 50;
            }
        }
        let eval_start = steps[6].end;
        let checkpoints =
            vec![step(steps[5].start + 5, steps[5].start + 35), step(steps[8].start + 5, steps[8].start + 35)];
        let mut phases = vec![
            ("checkpoint".to_string(), checkpoints),
            ("eval".to_string(), vec![step(eval_start, eval_start + 50), step(1000, 1010)]),
        ];
        let w = Windows { steady_start: steps[1].start, steady_end: steps[11].end };
        let gaps = vec![
            gap(steps[5].start + 5, steps[5].start + 35, Cause::IoWait, Some("checkpoint")),
            gap(steps[8].start + 5, steps[8].start + 35, Cause::IoWait, Some("checkpoint")),
            gap(steps[4].start + 2, steps[4].start + 4, Cause::HostBusy, None),
            gap(eval_start + 10, eval_start + 40, Cause::HostBusy, Some("eval")),
        ];
        let r = regions(&steps, &[], w, &gaps, &phases, Some("step N"));
        let find = |k: RegionKind| r.iter().find(|r| r.kind == k).unwrap();
        let p = find(RegionKind::Periodic);
        assert_eq!((p.name.as_str(), p.every_steps, p.occurrences, p.idle_ns), ("checkpoint", Some(3), 2, 60));
        assert_eq!(p.dominant_cause, "io-wait");
        let l = find(RegionKind::Loop);
        assert_eq!((l.name.as_str(), l.idle_ns), ("eval", 30));
        assert_eq!(find(RegionKind::Steps).idle_ns, 2);
        // Largest first; per step over the 11 steady steps.
        assert_eq!(r[0].kind, RegionKind::Periodic);
        assert_eq!(p.idle_per_step_ns, 60 / 11);
        // The same idle in a phase that runs in every step is no work of its own: it stays
        // in the ordinary steps (the loader's workers delivering in turn).
        phases[0].1 = steps.clone();
        let r = regions(&steps, &[], w, &gaps, &phases, Some("step N"));
        assert!(r.iter().all(|r| r.kind != RegionKind::Periodic), "{r:?}");
        assert_eq!(r.iter().find(|r| r.kind == RegionKind::Steps).unwrap().idle_ns, 62);
    }

    #[test]
    fn a_periodic_stall_costs_the_wall_its_steps_add_not_only_its_idle() {
        // Steps of 10; every fifth (4, 9, 14) 40 long: a snapshot whose slow copies keep
        // the GPU busy 25 of its 30 extra, and idle 5 (in `snapshot`, io-wait). Removing
        // the snapshot gives back 3 x 30, not the 3 x 5 of idle; the first step, before
        // the steady window, counts in neither.
        let mut steps = Vec::new();
        let mut t = 0;
        for i in 0..15 {
            let len = if i % 5 == 4 { 40 } else { 10 };
            steps.push(step(t, t + len));
            t += len;
        }
        let stalls: Vec<Instance> = steps.iter().filter(|s| s.end - s.start == 40).copied().collect();
        let gaps: Vec<Gap> =
            stalls.iter().map(|s| gap(s.start + 30, s.start + 35, Cause::IoWait, Some("snapshot"))).collect();
        let phases = vec![("snapshot".to_string(), stalls.iter().map(|s| step(s.start + 5, s.end)).collect())];
        let w = Windows { steady_start: steps[1].start, steady_end: t };
        let r = regions(&steps, &[], w, &gaps, &phases, Some("step N"));
        let p = r.iter().find(|r| r.kind == RegionKind::Periodic).unwrap();
        assert_eq!(
            (p.name.as_str(), p.every_steps, p.idle_ns, p.extra_ns, p.cost_ns()),
            ("snapshot", Some(5), 15, 90, 90)
        );
        // Priced per steady step (14 of them) off the mean step: the extra wall, not the idle.
        let steady = super::super::Steady { span_ns: t - steps[1].start, ..Default::default() };
        let w = &super::super::whatif::regions(&r, &steady, 14)[0];
        assert_eq!((&w.fix, w.saving_per_step_ns), (&super::super::Fix::LessOften, 90 / 14));
        // Ordinary steps and other regions have no extra wall.
        assert!(r.iter().filter(|r| r.kind != RegionKind::Periodic).all(|r| r.extra_ns == 0));
        // The same snapshot on the GPU: each step's work starts 10 after the last (the
        // host launches it at once), the snapshot steps' 30 later: long on both sides.
        let mut at = Vec::new();
        let mut g = 0;
        for s in &steps {
            at.push(Some(g));
            g += s.end - s.start;
        }
        let win = Windows { steady_start: steps[1].start, steady_end: t };
        let r = regions(&steps, &at, win, &gaps, &phases, Some("step N"));
        let p = r.iter().find(|r| r.kind == RegionKind::Periodic).unwrap();
        assert_eq!((p.every_steps, p.extra_ns), (Some(5), 90));
    }

    #[test]
    fn steps_long_on_the_host_only_while_it_waits_for_queued_work_are_no_stall() {
        // A host far ahead of the GPU: it launches a step's 10 of GPU work in 2, and in
        // every fifth step syncs, waiting for all the work queued before (a host step of
        // 40 or more), then runs 1 of Python while the GPU idles.
        let (mut steps, mut at, mut gaps) = (Vec::new(), Vec::new(), Vec::new());
        let (mut t, mut free) = (0, 0);
        for i in 0..15 {
            let on_gpu = t.max(free);
            free = on_gpu + 10;
            let end = if i % 5 == 4 { free + 1 } else { t + 2 };
            if i % 5 == 4 {
                gaps.push(gap(free, end, Cause::SyncDrain, None));
            }
            steps.push(step(t, end));
            at.push(Some(on_gpu));
            t = end;
        }
        let w = Windows { steady_start: steps[1].start, steady_end: free };
        // On the GPU those steps are 11 against 10: no stall.
        let r = regions(&steps, &at, w, &gaps, &[], None);
        assert!(r.iter().all(|r| r.kind == RegionKind::Steps), "{r:?}");
        // Read from the host ranges alone, the waits made a stall every 5 steps.
        let r = regions(&steps, &[], w, &gaps, &[], None);
        assert!(r.iter().any(|r| r.kind == RegionKind::Periodic && r.every_steps == Some(5)), "{r:?}");
    }

    #[test]
    fn a_phase_that_holds_a_sliver_of_a_stall_does_not_name_it() {
        // Profiler steps of 10, every tenth (7, 17) 250 long with 240 of idle under the
        // step phase only (an evaluation the profiler saw no op of), and 2 of it in the
        // loader's `__next__`, a range of every step: the stall is periodic all the same,
        // named by its cause; it is the loader's only where the loader holds most of it.
        let mut steps = Vec::new();
        let mut t = 0;
        for i in 0..22 {
            let len = if i % 10 == 7 { 250 } else { 10 };
            steps.push(step(t, t + len));
            t += len;
        }
        let next = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";
        let phases = vec![(next.to_string(), steps.iter().map(|s| step(s.start, s.start + 3)).collect())];
        let w = Windows { steady_start: steps[1].start, steady_end: steps[21].end };
        let mut gaps = Vec::new();
        for k in [7, 17] {
            let s = steps[k].start;
            gaps.push(gap(s, s + 2, Cause::Unknown, Some(next)));
            gaps.push(gap(s + 5, s + 245, Cause::Unknown, Some("ProfilerStep#N")));
        }
        let r = regions(&steps, &[], w, &gaps, &phases, Some("ProfilerStep#N"));
        assert_eq!(
            (r[0].kind, r[0].name.as_str(), r[0].every_steps, r[0].idle_ns),
            (RegionKind::Periodic, "unknown", Some(10), 484)
        );
        // Where the loader's range holds most of the stalls' idle, they are its waits.
        for g in &mut gaps {
            g.phase = Some(next.to_string());
        }
        let r = regions(&steps, &[], w, &gaps, &phases, Some("ProfilerStep#N"));
        assert!(r.iter().all(|r| r.kind != RegionKind::Periodic), "{r:?}");
    }
}
