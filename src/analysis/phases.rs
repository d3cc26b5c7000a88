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

use super::index::Index;
use super::names::phase_name;
use super::{DeviceActivity, DurStats, Gap, Launched, Options, Phase, Union};
use crate::model::{LaneKind, MemClass, Ns, StrId, Trace};
use crate::units::gbps;

/// One NVTX range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Instance {
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
pub fn instances(trace: &Trace, exact: bool) -> Vec<(String, Vec<Instance>)> {
    let mut names: HashMap<StrId, String> = HashMap::new();
    let mut groups: HashMap<String, Vec<Instance>> = HashMap::new();
    for l in &trace.lanes {
        let (tid, depth) = match l.kind {
            LaneKind::Nvtx { tid, depth } => (tid, depth),
            LaneKind::NvtxStartEnd { tid, .. } => (tid, 0),
            _ => continue,
        };
        for i in 0..l.ev.len() {
            let id = l.ev.name[i];
            let name = names.entry(id).or_insert_with(|| phase_name(trace.strings.get(id), exact).into_owned());
            let inst = Instance { pid: l.pid, tid, start: l.ev.start[i], end: l.ev.end[i], depth };
            groups.entry(name.clone()).or_default().push(inst);
        }
    }
    let mut v: Vec<(String, Vec<Instance>)> = groups.into_iter().collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v
}

/// Per-device unions the phase statistics need, built once.
pub struct PhaseCtx<'a> {
    trace: &'a Trace,
    index: &'a Index,
    devices: &'a [DeviceActivity],
    copy_only: Vec<Union>,
    h2d: Vec<Union>,
    d2h: Vec<Union>,
    gaps: Vec<Union>,
    min_gap: Ns,
}

// A GPU operation with its launching call, sorted by (pid, tid, call start).
#[derive(Debug, Clone, Copy)]
struct LaunchedOp {
    pid: u32,
    tid: u32,
    call_start: Ns,
    call_end: Ns,
    start: Ns,
    end: Ns,
}

impl<'a> PhaseCtx<'a> {
    /// Precompute the per-device unions.
    pub fn new(trace: &'a Trace, index: &'a Index, devices: &'a [DeviceActivity], gaps: &[Gap], min_gap: Ns) -> Self {
        let class_union = |device: u32, class: MemClass| {
            Union::from_pairs(
                trace
                    .lanes
                    .iter()
                    .filter(
                        |l| matches!(l.kind, LaneKind::Memory { device: d, class: c, .. } if d == device && c == class),
                    )
                    .flat_map(|l| l.ev.start.iter().copied().zip(l.ev.end.iter().copied())),
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
    pub fn starved(&self, slots: &[usize], start: Ns, end: Ns) -> bool {
        slots.iter().any(|&k| self.gaps[k].busy_in(start, end) >= self.min_gap.max(1))
    }

    // Statistics of one phase; `launched` comes from `launched_ops`.
    fn phase(&self, name: String, inst: &[Instance], launched: &[LaunchedOp]) -> Phase {
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
            starved += mine().filter(|i| self.starved(&slots, i.start, i.end)).count();
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
            launched: project(inst, launched),
            slowest,
            starved_share: if inst.is_empty() { 0.0 } else { starved as f64 / inst.len() as f64 },
        }
    }

    fn add_gpu(&self, g: &mut GpuSums, k: usize, w: &Union) {
        let d = &self.devices[k];
        let busy = d.busy.overlap_with(w);
        g.busy += busy;
        g.kernel += d.kernels.overlap_with(w);
        g.copy += d.copies.overlap_with(w);
        g.idle += w.total() - busy;
        g.exposed += self.copy_only[k].overlap_with(w);
        g.h2d_ns += self.h2d[k].overlap_with(w);
        g.d2h_ns += self.d2h[k].overlap_with(w);
        for l in &self.trace.lanes {
            let LaneKind::Memory { device, class, .. } = l.kind else { continue };
            if device != d.device || !matches!(class, MemClass::H2D | MemClass::D2H) {
                continue;
            }
            let bytes: f64 = (0..l.ev.len()).map(|i| prorated(l.ev.aux(i), l.ev.start[i], l.ev.end[i], w)).sum();
            if class == MemClass::H2D { g.h2d_bytes += bytes } else { g.d2h_bytes += bytes }
        }
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

// Bytes of a copy inside the windows, in proportion to the time inside them.
fn prorated(bytes: u64, start: Ns, end: Ns, w: &Union) -> f64 {
    if end > start {
        bytes as f64 * w.busy_in(start, end) as f64 / (end - start) as f64
    } else if w.contains(start) {
        bytes as f64
    } else {
        0.0
    }
}

// nsys's projection: ops whose launching call starts and ends inside an instance, on its thread.
fn project(inst: &[Instance], ops: &[LaunchedOp]) -> Launched {
    let mut out = Launched::default();
    for i in inst {
        let key = |o: &LaunchedOp| (o.pid, o.tid, o.call_start);
        let lo = ops.partition_point(|o| key(o) < (i.pid, i.tid, i.start));
        let hi = ops.partition_point(|o| key(o) < (i.pid, i.tid, i.end));
        let mut span: Option<(Ns, Ns)> = None;
        for o in ops[lo..hi].iter().filter(|o| o.call_end <= i.end) {
            out.count += 1;
            out.gpu_ns += o.end - o.start;
            span = Some(span.map_or((o.start, o.end), |(s, e)| (s.min(o.start), e.max(o.end))));
        }
        out.span_ns += span.map_or(0, |(s, e)| e - s);
    }
    out
}

// Every GPU operation with its launching call, sorted for range queries by thread.
fn launched_ops(trace: &Trace, index: &Index) -> Vec<LaunchedOp> {
    let mut v = Vec::with_capacity(trace.lanes.iter().filter(|l| l.kind.is_gpu()).map(|l| l.ev.len()).sum());
    for l in trace.lanes.iter().filter(|l| l.kind.is_gpu()) {
        for i in 0..l.ev.len() {
            if let Some(c) = index.api_call(trace, l.pid, l.ev.corr(i)) {
                v.push(LaunchedOp {
                    pid: l.pid,
                    tid: c.tid,
                    call_start: c.start,
                    call_end: c.end,
                    start: l.ev.start[i],
                    end: l.ev.end[i],
                });
            }
        }
    }
    v.sort_unstable_by_key(|o| (o.pid, o.tid, o.call_start, o.start));
    v
}

/// Phases of the trace, sorted by total wall time (largest first), then name.
pub fn phases(trace: &Trace, ctx: &PhaseCtx<'_>, options: &Options) -> Vec<Phase> {
    let groups = instances(trace, options.exact_names);
    // The projection is the costliest part: skip it when there is nothing to project on.
    let launched = if groups.is_empty() { Vec::new() } else { launched_ops(trace, ctx.index) };
    let mut out: Vec<Phase> = groups.into_iter().map(|(name, inst)| ctx.phase(name, &inst, &launched)).collect();
    out.sort_by(|a, b| b.wall.sum_ns.cmp(&a.wall.sum_ns).then_with(|| a.name.cmp(&b.name)));
    out
}

#[cfg(test)]
mod tests {
    use crate::analysis::{Options, analyze};
    use crate::model::{ApiKind, Events, Lane, LaneKind, MemClass, MemFlags, Strings, Trace};

    fn lane(t: &mut Trace, kind: LaneKind, rows: &[(i64, i64, &str, u32)]) {
        let mut ev = Events::default();
        for &(s, e, name, corr) in rows {
            let id = t.strings.intern(name);
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
        let a = analyze(&t, &Options { min_gap_ns: 1, exact_names: false });
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
        let exact = analyze(&t, &Options { min_gap_ns: 1, exact_names: true });
        assert_eq!(exact.phases.len(), 2);
    }
}
