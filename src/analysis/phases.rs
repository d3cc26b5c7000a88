//! Per-phase statistics: NVTX ranges grouped by name.
//!
//! Every NVTX push/pop and start/end range is an *instance* of the phase named by its
//! text (digit runs grouped to `N` unless `exact_names`; the domain is not part of the
//! name). The phase's *windows* are the union of its instances, per process.
//!
//! GPU columns are measured over the windows, on each GPU the range's process ran work
//! on, and summed over those GPUs (one GPU: plain numbers; two GPUs: GPU-seconds):
//! - busy, kernel busy, copy busy: the device unions intersected with the windows;
//! - idle: window length minus busy;
//! - exposed copy: copy time with no kernel on the same GPU;
//! - H2D/D2H bytes: of copies overlapping the windows, *prorated* by the fraction of
//!   each copy's duration inside them; GB/s divides those bytes by the time H2D (D2H)
//!   copies ran inside the windows.
//!
//! `launched` is nsys's NVTX GPU projection: GPU operations whose launching CUDA call
//! (matched by process and correlation id) starts and ends inside the instance, on the
//! instance's thread. `span_ns` sums, per instance, last op end minus first op start.
//!
//! An instance is *starved* when gaps (>= min-gap, on the process's GPUs) cover at
//! least min-gap of it.

use std::collections::HashMap;

use itertools::Itertools;

use super::index::{Hints, Index};
use super::intervals::Cursor;
use super::names::phase_name;
use super::{DeviceActivity, DurStats, Gap, Launched, Phase, Union};
use crate::model::{Events, LaneKind, MemClass, Ns, Trace};
use crate::text::gbps;

/// One NVTX range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Instance {
    /// Process.
    pub pid: u32,
    /// Thread that opened the range.
    pub tid: u32,
    /// Start.
    pub start: Ns,
    /// End.
    pub end: Ns,
    /// Nesting depth (0 for start/end ranges).
    pub depth: u16,
}

/// Every NVTX range of the trace, grouped by phase name (sorted by name).
pub(crate) fn instances(trace: &Trace, exact: bool) -> Vec<(String, Vec<Instance>)> {
    let nvtx = || {
        trace.lanes.iter().filter_map(|l| {
            #[allow(clippy::wildcard_enum_match_arm, reason = "a filter: only NVTX ranges are phase instances")]
            match l.kind {
                LaneKind::Nvtx { tid, depth } => Some((l, tid, depth)),
                LaneKind::NvtxStartEnd { tid, .. } => Some((l, tid, 0)),
                _ => None,
            }
        })
    };
    // Name id -> group (ids are dense), and grouped name -> group: each distinct name is
    // grouped once. Instances are counted first, so that each group is allocated once.
    let mut of_id: Vec<Option<u32>> = vec![None; trace.strings.len()];
    let mut of_name: HashMap<String, usize> = HashMap::new();
    let mut groups: Vec<(String, Vec<Instance>)> = Vec::new();
    let mut counts: Vec<usize> = Vec::new();
    for (l, ..) in nvtx() {
        for &id in &l.ev.name {
            if of_id.len() <= id as usize {
                of_id.resize(id as usize + 1, None);
            }
            let g = *of_id[id as usize].get_or_insert_with(|| {
                let name = phase_name(trace.strings.get(id), exact).into_owned();
                *of_name.entry(name.clone()).or_insert_with(|| {
                    groups.push((name, Vec::new()));
                    counts.push(0);
                    groups.len() - 1
                }) as u32
            });
            counts[g as usize] += 1;
        }
    }
    for (g, &n) in groups.iter_mut().zip(&counts) {
        g.1.reserve_exact(n);
    }
    for (l, tid, depth) in nvtx() {
        for i in 0..l.ev.len() {
            let g = of_id[l.ev.name[i] as usize].map_or(0, |g| g as usize);
            groups[g].1.push(Instance { pid: l.pid, tid, start: l.ev.start[i], end: l.ev.end(i), depth });
        }
    }
    groups.sort_by(|a, b| a.0.cmp(&b.0));
    groups
}

/// Per-device unions the phase statistics need, built once.
pub(crate) struct PhaseCtx<'a> {
    trace: &'a Trace,
    index: &'a Index,
    devices: &'a [DeviceActivity],
    copy_only: Vec<Union>,
    h2d: Vec<Union>,
    d2h: Vec<Union>,
    gaps: Vec<Union>,
    min_gap: Ns,
}

impl<'a> PhaseCtx<'a> {
    /// Precompute the per-device unions.
    pub(crate) fn new(
        trace: &'a Trace,
        index: &'a Index,
        devices: &'a [DeviceActivity],
        gaps: &[Gap],
        min_gap: Ns,
    ) -> Self {
        let class_union = |device: u32, class: MemClass| {
            super::lanes_union(
                trace,
                |k| matches!(k, LaneKind::Memory { device: d, class: c, .. } if d == device && c == class),
            )
        };
        Self {
            trace,
            index,
            devices,
            copy_only: devices.iter().map(|d| d.copies.minus(&d.kernels)).collect(),
            h2d: devices.iter().map(|d| class_union(d.device, MemClass::H2D)).collect(),
            d2h: devices.iter().map(|d| class_union(d.device, MemClass::D2H)).collect(),
            gaps: devices
                .iter()
                .map(|d| Union::from_sorted(gaps.iter().filter(|g| g.device == d.device).map(|g| (g.start, g.end))))
                .collect(),
            min_gap,
        }
    }

    // Positions in `devices` of the GPUs process `pid` used.
    fn device_slots(&self, pid: u32) -> Vec<usize> {
        self.index.devices_of(pid).filter_map(|d| self.devices.iter().position(|a| a.device == d)).collect()
    }

    /// True when gaps on the process's GPUs cover at least min-gap of the instance.
    pub(crate) fn starved(&self, slots: &[usize], start: Ns, end: Ns) -> bool {
        slots.iter().any(|&k| self.gaps[k].busy_in(start, end) >= self.min_gap.max(1))
    }

    // How many of `inst` are `starved`. A lane's instances come in time order: one cursor
    // per GPU's gaps continues from the previous instance instead of searching again.
    fn count_starved<'i>(&self, slots: &[usize], inst: impl Iterator<Item = &'i Instance>) -> usize {
        let min = self.min_gap.max(1);
        let mut gaps: Vec<Cursor<'_>> = slots.iter().map(|&k| self.gaps[k].cursor()).collect();
        // Gaps cover at most the instance: a shorter one cannot be starved.
        inst.filter(|i| i.end - i.start >= min && gaps.iter_mut().any(|c| c.busy_in(i.start, i.end) >= min)).count()
    }

    // Statistics of one phase; `launched` comes from `project`.
    fn phase(&self, name: String, inst: &[Instance], launched: Launched) -> Phase {
        let mut durs: Vec<Ns> = inst.iter().map(|i| i.end - i.start).collect();
        let slowest = inst
            .iter()
            .max_by_key(|i| (i.end - i.start, std::cmp::Reverse(i.start)))
            .map_or((0, 0), |i| (i.start, i.end));
        let mut g = GpuSums::default();
        let mut pids: Vec<u32> = inst.iter().map(|i| i.pid).collect();
        pids.sort_unstable();
        pids.dedup();
        let mut starved = 0usize;
        for pid in pids {
            let mine = || inst.iter().filter(move |i| i.pid == pid);
            let windows = Union::from_pairs(mine().map(|i| (i.start, i.end)));
            let slots = self.device_slots(pid);
            for &k in &slots {
                self.add_gpu(&mut g, k, &windows);
            }
            starved += self.count_starved(&slots, mine());
        }
        let copy_overlap = (g.copy > 0).then(|| (g.copy - g.exposed) as f64 / g.copy as f64);
        Phase {
            name,
            count: inst.len() as u64,
            wall: DurStats::from_durations(&mut durs),
            gpu_busy_ns: g.busy,
            kernel_busy_ns: g.kernel,
            copy_busy_ns: g.copy,
            idle_ns: g.idle,
            exposed_copy_ns: g.exposed,
            copy_overlap,
            h2d_bytes: g.h2d_bytes.round() as u64,
            d2h_bytes: g.d2h_bytes.round() as u64,
            h2d_gbps: gbps(g.h2d_bytes.round() as u64, g.h2d_ns),
            d2h_gbps: gbps(g.d2h_bytes.round() as u64, g.d2h_ns),
            launched,
            slowest,
            starved_share: if inst.is_empty() { 0.0 } else { starved as f64 / inst.len() as f64 },
            pcie: None,
            copy_verdict: super::pcie::CopyVerdict::default(),
            h2d_exposed_ns: 0,
        }
    }

    fn add_gpu(&self, g: &mut GpuSums, k: usize, w: &Union) {
        let d = &self.devices[k];
        // Busy is kernels or copies: the kernels and the copies under no kernel, disjoint.
        let (kernel, exposed) = (d.kernels.overlap_with(w), self.copy_only[k].overlap_with(w));
        g.busy += kernel + exposed;
        g.kernel += kernel;
        g.copy += d.copies.overlap_with(w);
        g.idle += w.total() - (kernel + exposed);
        g.exposed += exposed;
        g.h2d_ns += self.h2d[k].overlap_with(w);
        g.d2h_ns += self.d2h[k].overlap_with(w);
        for l in &self.trace.lanes {
            let LaneKind::Memory { device, class, .. } = l.kind else { continue };
            if device != d.device || !matches!(class, MemClass::H2D | MemClass::D2H) {
                continue;
            }
            // Copies outside the windows add 0.0: skipping them leaves the sum as it is.
            let mut c = w.cursor();
            let bytes: f64 = copies_in(&l.ev, l.disjoint, w)
                .map(|i| prorated(l.ev.aux(i), l.ev.start[i], l.ev.end(i), w, &mut c))
                .sum();
            if class == MemClass::H2D { g.h2d_bytes += bytes } else { g.d2h_bytes += bytes }
        }
    }
}

// Rows of a memory lane that may lie in the windows, in row order. Rows of a disjoint
// lane have sorted ends: those of each window are one range, searched for from the end
// of the previous window's.
fn copies_in<'a>(ev: &'a Events, disjoint: bool, w: &'a Union) -> Box<dyn Iterator<Item = usize> + 'a> {
    if !disjoint {
        return Box::new(0..ev.len());
    }
    let mut next = 0;
    Box::new(w.iter().flat_map(move |(a, b)| {
        // Ending at `a` or later: a copy of length 0 at `a` lies in the window.
        let lo = gallop(next, ev.len(), |i| ev.end(i) < a);
        let hi = gallop(lo, ev.len(), |i| ev.start[i] < b);
        next = hi;
        lo..hi
    }))
}

// The first row in `from..len` failing `pred` (which holds on a prefix of them), by
// doubling steps from `from`: O(log d) for an answer `d` rows on.
fn gallop(from: usize, len: usize, pred: impl Fn(usize) -> bool) -> usize {
    if from >= len || !pred(from) {
        return from;
    }
    let (mut lo, mut step) = (from + 1, 1);
    loop {
        let probe = lo + step - 1;
        if probe >= len || !pred(probe) {
            let mut hi = probe.min(len);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if pred(mid) { lo = mid + 1 } else { hi = mid }
            }
            return lo;
        }
        lo = probe + 1;
        step *= 2;
    }
}

#[derive(Debug, Default)]
struct GpuSums {
    busy: Ns,
    kernel: Ns,
    copy: Ns,
    idle: Ns,
    exposed: Ns,
    h2d_ns: Ns,
    d2h_ns: Ns,
    h2d_bytes: f64,
    d2h_bytes: f64,
}

// Bytes of a copy inside the windows `w` (`c`: a cursor over them), in proportion to
// the time inside them.
fn prorated(bytes: u64, start: Ns, end: Ns, w: &Union, c: &mut Cursor<'_>) -> f64 {
    if end > start {
        bytes as f64 * c.busy_in(start, end) as f64 / (end - start) as f64
    } else if w.contains(start) {
        bytes as f64
    } else {
        0.0
    }
}

// An instance open during the projection sweep.
struct Open {
    group: usize,
    end: Ns,
    // First start and last end of the operations launched inside it so far.
    span: Option<(Ns, Ns)>,
}

/// nsys's projection for every group of instances: GPU operations whose launching call
/// starts and ends inside an instance, on its thread.
///
/// One pass per thread over its API calls inside instances, in time order, with the
/// instances open at each call; a call's operations are found by correlation id on the
/// process's GPU lanes. Nothing is stored per call or per operation.
pub(crate) fn project(trace: &Trace, index: &Index, groups: &[(String, Vec<Instance>)]) -> Vec<Launched> {
    let mut out = vec![Launched::default(); groups.len()];
    let mut starts = Hints::new(trace);
    let mut corrs = Hints::new(trace);
    for ((pid, tid), mut refs) in by_thread(groups) {
        let Some(api) = index.api_lane(pid, tid) else { continue };
        // By start; the start is kept beside the reference so that sorting reads no instance.
        refs.sort_unstable_by_key(|r| r.0);
        let gpu: Vec<usize> = index.gpu_lanes(pid).collect();
        let sweep = Sweep { trace, index, api, gpu: &gpu, groups };
        sweep.run(&refs, &mut out, &mut starts, &mut corrs);
    }
    out
}

// One thread's instances as (start, group, position in the group).
type Refs = Vec<(Ns, u32, u32)>;

// Every instance's ref, per thread (in thread order), each list allocated at its size.
fn by_thread(groups: &[(String, Vec<Instance>)]) -> Vec<((u32, u32), Refs)> {
    let each = || {
        groups
            .iter()
            .enumerate()
            .flat_map(|(g, (_, v))| v.iter().enumerate().map(move |(i, n)| (g as u32, i as u32, n)))
    };
    // Instances come lane by lane: runs of one thread, one count per run.
    let mut counts: std::collections::BTreeMap<(u32, u32), usize> = std::collections::BTreeMap::new();
    for (n, thread) in each().map(|(.., n)| (n.pid, n.tid)).dedup_with_count() {
        *counts.entry(thread).or_default() += n;
    }
    let mut threads: Vec<((u32, u32), Refs)> = counts.into_iter().map(|(t, n)| (t, Vec::with_capacity(n))).collect();
    for (g, i, n) in each() {
        if let Ok(k) = threads.binary_search_by_key(&(n.pid, n.tid), |t| t.0) {
            threads[k].1.push((n.start, g, i));
        }
    }
    threads
}

// The projection sweep over one thread's API lane.
struct Sweep<'s> {
    trace: &'s Trace,
    index: &'s Index,
    api: usize,
    gpu: &'s [usize],
    groups: &'s [(String, Vec<Instance>)],
}

impl Sweep<'_> {
    // `inst`: (start, group, position in the group) sorted by start.
    fn run(&self, inst: &[(Ns, u32, u32)], out: &mut [Launched], starts: &mut Hints, corrs: &mut Hints) {
        let ev = &self.trace.lanes[self.api].ev;
        let mut open: Vec<Open> = Vec::new();
        let (mut next, mut i) = (0, 0);
        loop {
            if open.is_empty() {
                // Skip to the first call of the next instance.
                let Some(&(start, ..)) = inst.get(next) else { break };
                i = i.max(starts.find(self.api, &ev.start, |&s| s < start));
            }
            let Some(&cs) = ev.start.get(i) else { break };
            while let Some(&(_, group, k)) = inst.get(next).filter(|(s, ..)| *s <= cs) {
                let end = self.groups[group as usize].1[k as usize].end;
                open.push(Open { group: group as usize, end, span: None });
                next += 1;
            }
            open.retain(|o| {
                let keep = o.end > cs;
                if !keep {
                    close(o, out);
                }
                keep
            });
            let (ce, corr) = (ev.end(i), ev.corr(i));
            if corr != 0 && open.iter().any(|o| ce <= o.end) {
                self.add_ops(corr, ce, &mut open, out, corrs);
            }
            i += 1;
        }
        for o in &open {
            close(o, out);
        }
    }

    // Credit the operations of call `corr` (ending at `ce`) to the open instances it ends in.
    fn add_ops(&self, corr: u32, ce: Ns, open: &mut [Open], out: &mut [Launched], corrs: &mut Hints) {
        for &g in self.gpu {
            let ops = &self.trace.lanes[g].ev;
            for j in self.index.rows(self.trace, g, corr, corrs) {
                let (s, e) = (ops.start[j], ops.end(j));
                for o in open.iter_mut().filter(|o| ce <= o.end) {
                    out[o.group].count += 1;
                    out[o.group].gpu_ns += e - s;
                    o.span = Some(o.span.map_or((s, e), |(a, b)| (a.min(s), b.max(e))));
                }
            }
        }
    }
}

fn close(o: &Open, out: &mut [Launched]) {
    out[o.group].span_ns += o.span.map_or(0, |(s, e)| e - s);
}

/// Phases from [`instances`] and their [`project`]ion, sorted by total wall time
/// (largest first), then name.
pub(crate) fn stats(ctx: &PhaseCtx<'_>, groups: Vec<(String, Vec<Instance>)>, launched: &[Launched]) -> Vec<Phase> {
    let mut first: Vec<_> = groups.into_iter().zip(launched.iter().copied()).collect();
    // Phases are independent: the groups holding the second half of the instances are
    // measured on another thread.
    let total: usize = first.iter().map(|(g, _)| g.1.len()).sum();
    let mut seen = 0;
    let half = first.iter().position(|(g, _)| {
        seen += g.1.len();
        seen * 2 >= total
    });
    // A thread is worth it only for many instances (a Kineto trace's Python stacks).
    let second = if total < 1 << 16 { Vec::new() } else { first.split_off(half.map_or(first.len(), |k| k + 1)) };
    let measure = |v: Vec<((String, Vec<Instance>), Launched)>| -> Vec<Phase> {
        v.into_iter().map(|((name, inst), l)| ctx.phase(name, &inst, l)).collect()
    };
    if second.is_empty() {
        return sorted(measure(first));
    }
    let out = std::thread::scope(|s| {
        let side = s.spawn(|| measure(second));
        let mut out = measure(first);
        out.extend(side.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        out
    });
    sorted(out)
}

// Largest total wall time first, then by name.
fn sorted(mut out: Vec<Phase>) -> Vec<Phase> {
    out.sort_by(|a, b| b.wall.sum_ns.cmp(&a.wall.sum_ns).then_with(|| a.name.cmp(&b.name)));
    out
}

#[cfg(test)]
mod tests {
    use super::{Instance, PhaseCtx, copies_in, gallop, instances, project, prorated, sorted};
    use crate::analysis::index::{Hints, Index};
    use crate::analysis::{Launched, Options, Phase, Union, analyze};
    use crate::model::{ApiKind, Events, Lane, LaneKind, MemClass, MemFlags, Ns, Strings, Trace};
    use proptest::prelude::*;

    fn lane(t: &mut Trace, kind: LaneKind, rows: &[(i64, i64, &str, u32)]) {
        let mut ev = Events::default();
        for &(s, e, name, corr) in rows {
            let id = t.strings.intern(name);
            #[allow(clippy::wildcard_enum_match_arm, reason = "a test helper: every other kind gets plain rows")]
            match kind {
                LaneKind::CudaApi { .. } => ev.push(s, e, id, Some(corr), None, Some(ApiKind::classify(name) as u32)),
                LaneKind::Memory { .. } => ev.push(s, e, id, Some(corr), Some(1000), Some(MemFlags::pack(1, 1, 2))),
                LaneKind::Kernels { .. } => ev.push(s, e, id, Some(corr), Some(0), None),
                _ => ev.push(s, e, id, None, None, Some(0)),
            }
        }
        t.lanes.push(Lane::new(kind, 7, ev));
    }

    #[test]
    fn phase_columns_on_a_hand_made_trace() {
        let mut t = Trace { strings: Strings::new(), ..Trace::default() };
        lane(&mut t, LaneKind::Kernels { device: 0, stream: 1 }, &[(10, 20, "k", 1)]);
        lane(&mut t, LaneKind::Memory { device: 0, stream: 2, class: MemClass::H2D }, &[(15, 35, "copy", 2)]);
        lane(&mut t, LaneKind::CudaApi { tid: 7 }, &[(5, 6, "cudaLaunchKernel", 1), (6, 7, "cudaMemcpyAsync", 2)]);
        lane(&mut t, LaneKind::Nvtx { tid: 7, depth: 0 }, &[(0, 25, "forward 1", 0), (40, 50, "forward 2", 0)]);
        let a = analyze(&t, &Options { min_gap_ns: 1, ..Options::default() });
        assert_eq!(a.phases.len(), 1);
        let p = &a.phases[0];
        // Windows [0,25) + [40,50); GPU busy [10,35): kernel [10,20), copy [15,35).
        assert_eq!((p.name.as_str(), p.count, p.wall.sum_ns, p.wall.max_ns), ("forward N", 2, 35, 25));
        assert_eq!((p.gpu_busy_ns, p.kernel_busy_ns, p.copy_busy_ns, p.idle_ns), (15, 10, 10, 20));
        assert_eq!(p.exposed_copy_ns, 5);
        assert_eq!(p.copy_overlap, Some(0.5));
        // Half of the copy's time lies in the windows: half its bytes, over 10 ns.
        assert_eq!((p.h2d_bytes, p.h2d_gbps, p.d2h_gbps), (500, Some(50.0), None));
        assert_eq!((p.launched.count, p.launched.gpu_ns, p.launched.span_ns), (2, 30, 25));
        assert_eq!(p.slowest, (0, 25));
        assert!(p.starved_share.abs() < f64::EPSILON);
        let exact = analyze(&t, &Options { min_gap_ns: 1, exact_names: true, ..Options::default() });
        assert_eq!(exact.phases.len(), 2);
    }

    #[test]
    fn phases_measured_on_two_threads_are_those_measured_one_by_one() {
        // Over 65,536 ranges (the statistics split), in names of very different counts.
        let names = ["alpha", "beta", "gamma", "delta", "epsilon"];
        let rows: Vec<(i64, i64, &str, u32)> =
            (0..70_000i64).map(|i| (i * 100, i * 100 + 60, names[(i as usize % 7).min(4)], 0)).collect();
        let kernels: Vec<(i64, i64, &str, u32)> = (0..5_000i64).map(|i| (i * 1_300, i * 1_300 + 700, "k", 0)).collect();
        let mut t = Trace { strings: Strings::new(), ..Trace::default() };
        lane(&mut t, LaneKind::Kernels { device: 0, stream: 1 }, &kernels);
        lane(&mut t, LaneKind::Nvtx { tid: 7, depth: 0 }, &rows);
        let opts = Options { min_gap_ns: 50, ..Options::default() };
        let a = analyze(&t, &opts);
        let index = Index::build(&t);
        let ctx = PhaseCtx::new(&t, &index, &a.devices, &a.gaps, opts.min_gap_ns);
        let groups = instances(&t, false);
        let launched = project(&t, &index, &groups);
        let one_by_one: Vec<Phase> =
            sorted(groups.into_iter().zip(launched).map(|((n, inst), l)| ctx.phase(n, &inst, l)).collect());
        assert_eq!(a.phases.len(), names.len());
        assert!(a.phases.iter().any(|p| p.gpu_busy_ns > 0 && p.starved_share > 0.0));
        assert_eq!(a.phases, one_by_one);
    }

    // The projection as first written: every operation with its launching call, sorted
    // by (pid, tid, call start), and a range per instance.
    fn reference(t: &Trace, index: &Index, inst: &[Instance]) -> Launched {
        let mut hints = Hints::new(t);
        let mut ops = Vec::new();
        for l in t.lanes.iter().filter(|l| l.kind.is_gpu_work()) {
            for i in 0..l.ev.len() {
                if let Some(c) = index.api_call(t, l.pid, l.ev.corr(i), &mut hints) {
                    ops.push((l.pid, c.tid, c.start, c.end, l.ev.start[i], l.ev.end(i)));
                }
            }
        }
        ops.sort_unstable();
        let mut out = Launched::default();
        for i in inst {
            let lo = ops.partition_point(|o| (o.0, o.1, o.2) < (i.pid, i.tid, i.start));
            let hi = ops.partition_point(|o| (o.0, o.1, o.2) < (i.pid, i.tid, i.end));
            let mut span: Option<(Ns, Ns)> = None;
            for o in ops[lo..hi].iter().filter(|o| o.3 <= i.end) {
                out.count += 1;
                out.gpu_ns += o.5 - o.4;
                span = Some(span.map_or((o.4, o.5), |(s, e)| (s.min(o.4), e.max(o.5))));
            }
            out.span_ns += span.map_or(0, |(s, e)| e - s);
        }
        out
    }

    fn rows(v: &[(i64, i64)], name: &'static str, corr: impl Fn(usize) -> u32) -> Vec<(i64, i64, &'static str, u32)> {
        v.iter().enumerate().map(|(i, &(s, d))| (s, s + d, name, corr(i))).collect()
    }

    fn spans(n: usize, len: i64) -> impl Strategy<Value = Vec<(i64, i64)>> {
        prop::collection::vec((0i64..1_000, 0i64..len), 0..n)
    }

    proptest! {
        #[test]
        fn the_projection_matches_the_per_operation_join(
            calls in spans(120, 20),
            shuffle in any::<bool>(),
            ops in prop::collection::vec((0i64..1_000, 0i64..30, 0u32..140, any::<bool>()), 0..150),
            ranges in spans(30, 300),
            async_ranges in spans(10, 400),
        ) {
            let mut t = Trace { strings: Strings::new(), ..Trace::default() };
            // Correlation ids in time order, or shuffled (the lane then gets a sorted copy).
            let corr = |i: usize| if shuffle { ((i * 37) % 120 + 1) as u32 } else { i as u32 + 1 };
            let (a, b): (Vec<_>, Vec<_>) = calls.iter().enumerate().partition(|(i, _)| i % 3 == 0);
            let pick = |v: Vec<(usize, &(i64, i64))>| -> Vec<_> {
                v.into_iter().map(|(i, &(s, d))| (s, s + d, "cudaLaunchKernel", corr(i))).collect()
            };
            lane(&mut t, LaneKind::CudaApi { tid: 7 }, &pick(a));
            lane(&mut t, LaneKind::CudaApi { tid: 8 }, &pick(b));
            for stream in [1, 2] {
                let mine: Vec<_> = ops.iter().filter(|o| o.3 == (stream == 1)).map(|o| (o.0, o.0 + o.1, "k", o.2)).collect();
                lane(&mut t, LaneKind::Kernels { device: 0, stream }, &mine);
            }
            let (outer, inner): (Vec<_>, Vec<_>) = ranges.iter().enumerate().partition(|(i, _)| i % 2 == 0);
            let strip = |v: Vec<(usize, &(i64, i64))>| -> Vec<(i64, i64)> { v.into_iter().map(|(_, &r)| r).collect() };
            lane(&mut t, LaneKind::Nvtx { tid: 7, depth: 0 }, &rows(&strip(outer), "step 1", |_| 0));
            lane(&mut t, LaneKind::Nvtx { tid: 7, depth: 1 }, &rows(&strip(inner), "forward", |_| 0));
            lane(&mut t, LaneKind::NvtxStartEnd { tid: 8, row: 0 }, &rows(&async_ranges, "load 2", |_| 0));
            let index = Index::build(&t);
            let groups = instances(&t, false);
            let got = project(&t, &index, &groups);
            for ((_, inst), got) in groups.iter().zip(got) {
                prop_assert_eq!(got, reference(&t, &index, inst));
            }
        }

        #[test]
        fn copies_in_keeps_every_copy_inside_the_windows(
            copies in prop::collection::vec((0i64..20, 0i64..30), 0..40),
            windows in spans(10, 80),
        ) {
            // A disjoint lane: each copy starts after the previous one ends.
            let mut ev = Events::default();
            let mut t = 0;
            for (gap, len) in copies {
                t += gap;
                ev.push(t, t + len, 0, Some(0), Some(1000), Some(0));
                t += len;
            }
            let w = Union::from_pairs(windows.iter().map(|&(s, d)| (s, s + d)));
            let got: Vec<usize> = copies_in(&ev, true, &w).collect();
            prop_assert!(got.windows(2).all(|p| p[0] < p[1]));
            for i in 0..ev.len() {
                if prorated(1000, ev.start[i], ev.end(i), &w, &mut w.cursor()) != 0.0 {
                    prop_assert!(got.contains(&i), "copy {} missing", i);
                }
            }
        }

        #[test]
        fn gallop_matches_partition_point(mut v in prop::collection::vec(0u32..50, 0..80), from in 0usize..90, x in 0u32..55) {
            v.sort_unstable();
            let from = from.min(v.len());
            let want = from + v[from..].partition_point(|&c| c < x);
            prop_assert_eq!(gallop(from, v.len(), |i| v[i] < x), want);
        }
    }
}
