//! Several exports (the ranks of one job, or processes profiled apart) merged into one
//! [`Trace`] on one timeline.
//!
//! - **Rank** of each input: `RANK` (or `OMPI_COMM_WORLD_RANK`, `PMI_RANK`,
//!   `SLURM_PROCID`) of the profiled process's environment when every input records
//!   one and no two agree; else `LOCAL_RANK` on the same terms; else the position in the
//!   input order. Inputs are merged in rank order.
//! - **Time**: every input is shifted onto the timeline of the earliest absolute session
//!   start: `offset = start_utc(input) - min start_utc`, where `start_utc` is
//!   `TARGET_INFO_SESSION_START_TIME.utcEpochNs` and times of an export already in epoch
//!   ns (`--ts-normalize`) are taken as they are. When an input has no session start,
//!   clocks cannot be aligned: the first step (an NVTX range `step N`, `iteration N`...)
//!   of every input is aligned with the first input's (the first event, without one),
//!   and [`crate::model::Meta::align_note`] says so.
//! - **Ids**: the GPUs of the input at position `i` (in rank order) become devices
//!   `256 * i + d`; pids stay as they are unless an earlier input already has them,
//!   then they become `i << 24 | pid`. Names of processes and named threads get a
//!   `rank R · ` prefix (`rank R @ HOST · ` when the inputs come from several hosts), so
//!   every label in reports and the viewer carries the rank.

use std::collections::{HashMap, HashSet};

use crate::model::{
    Alignment, Gpu, HostData, Lane, LaneKind, Meta, NamedColumn, Ns, Process, Rank, StrId, Strings, SyncRecords,
    Thread, Trace, group_name, step_rank,
};

/// Device ids each input may use in the merged trace.
pub(crate) const DEVICES_PER_INPUT: u32 = 256;

/// Times at or above this (about 1973 in epoch ns) are absolute, not session-relative.
const EPOCH_TIMES_NS: Ns = 100_000_000_000_000_000;

/// Merge `inputs` into one trace (one input is returned as it is).
pub(crate) fn merge(inputs: Vec<Trace>) -> Trace {
    if inputs.len() <= 1 {
        return inputs.into_iter().next().unwrap_or_default();
    }
    let (ranks, source) = choose_ranks(&inputs);
    let mut order: Vec<(u32, Trace)> = ranks.into_iter().zip(inputs).collect();
    order.sort_by_key(|(r, _)| *r);
    let (offsets, aligned, note) = offsets(&order);
    let mut hosts: Vec<String> = order.iter().map(|(_, t)| t.meta.hostname.clone()).collect();
    hosts.sort();
    hosts.dedup();
    let mut m = Merged::new(source, hosts.len() > 1);
    for (i, ((rank, t), (offset, aligned))) in order.into_iter().zip(offsets.into_iter().zip(aligned)).enumerate() {
        m.add(Input { i: i as u32, rank, offset, aligned }, t);
    }
    m.finish(hosts, note)
}

/// Where one input goes: its position in rank order, its rank, its time offset and how
/// it was aligned.
#[derive(Clone, Copy)]
struct Input {
    i: u32,
    rank: u32,
    offset: Ns,
    aligned: Alignment,
}

/// The merged trace being built, and what it gathers from every input.
struct Merged {
    out: Trace,
    // Pids of the merged trace given out so far.
    taken: HashSet<u32>,
    versions: Vec<String>,
    schemas: Vec<String>,
    paths: Vec<String>,
    source: &'static str,
    show_host: bool,
}

/// How one input's ids become the merged trace's: string ids, pids and devices.
struct Remap {
    i: u32,
    ids: Vec<StrId>,
    pids: HashMap<u32, u32>,
}

impl Remap {
    // The input's strings interned into the merged table; its processes' pids, then any
    // other lane's, given out in that order.
    fn new(i: u32, t: &Trace, strings: &mut Strings, taken: &mut HashSet<u32>) -> Self {
        let ids = t.strings.iter().map(|(_, s)| strings.intern(s)).collect();
        let mut map = Self { i, ids, pids: HashMap::new() };
        for p in t.processes.iter().map(|p| p.pid).chain(t.lanes.iter().map(|l| l.pid)) {
            map.pid(p, taken);
        }
        map
    }

    fn id(&self, s: StrId) -> StrId {
        self.ids.get(s as usize).copied().unwrap_or(0)
    }

    // A pid as it is, unless an earlier input already has it.
    fn pid(&mut self, pid: u32, taken: &mut HashSet<u32>) -> u32 {
        let i = self.i;
        *self.pids.entry(pid).or_insert_with(|| {
            let p = if taken.contains(&pid) { (i << 24) | (pid & 0xFF_FFFF) } else { pid };
            taken.insert(p);
            p
        })
    }

    fn dev(&self, d: u32) -> u32 {
        self.i * DEVICES_PER_INPUT + d % DEVICES_PER_INPUT
    }

    // The merged pids of the input, sorted.
    fn pids(&self) -> Vec<u32> {
        let mut pids: Vec<u32> = self.pids.values().copied().collect();
        pids.sort_unstable();
        pids
    }
}

impl Merged {
    fn new(source: &'static str, show_host: bool) -> Self {
        Self {
            out: Trace { strings: Strings::new(), ..Trace::default() },
            taken: HashSet::new(),
            versions: Vec::new(),
            schemas: Vec::new(),
            paths: Vec::new(),
            source,
            show_host,
        }
    }

    // One input, every part of it renumbered and shifted.
    fn add(&mut self, at: Input, t: Trace) {
        let mut map = Remap::new(at.i, &t, &mut self.out.strings, &mut self.taken);
        let mut rank = self.rank(&at, &t, &map);
        let prefix = if self.show_host && !t.meta.hostname.is_empty() {
            format!("rank {} @ {} · ", at.rank, t.meta.hostname)
        } else {
            format!("rank {} · ", at.rank)
        };
        let Trace { meta, gpus, processes, threads, lanes, syncs, host, counters, .. } = t;
        self.out.counters.append(counters.moved(at.offset, |d| map.dev(d)));
        self.add_lanes(lanes, syncs, &mut map, at.offset);
        self.add_who(gpus, processes, threads, &prefix, &mut map);
        self.add_host(host, &mut map);
        rank.pids = map.pids();
        self.add_meta(meta);
        self.out.ranks.push(rank);
    }

    // The input's entry in `Trace::ranks` (its pids are filled in once all are given out).
    fn rank(&self, at: &Input, t: &Trace, map: &Remap) -> Rank {
        Rank {
            rank: at.rank,
            rank_source: self.source.to_string(),
            host: t.meta.hostname.clone(),
            path: t.meta.path.clone(),
            nsys_version: t.meta.nsys_version.clone(),
            session_start_utc_ns: t.meta.utc_epoch_ns,
            offset_ns: at.offset,
            aligned_on: Some(at.aligned),
            start_ns: t.meta.start_ns + at.offset,
            end_ns: t.meta.end_ns + at.offset,
            pids: Vec::new(),
            devices: t.devices().into_iter().map(|d| (map.dev(d), d)).collect(),
        }
    }

    fn add_lanes(&mut self, lanes: Vec<Lane>, syncs: Vec<SyncRecords>, map: &mut Remap, offset: Ns) {
        for mut l in lanes {
            l.pid = map.pid(l.pid, &mut self.taken);
            // Every lane shown with a GPU moves with it, its annotations too.
            l.kind = l.kind.with_device(|d| map.dev(d));
            for n in &mut l.ev.name {
                *n = map.id(*n);
            }
            match l.kind.named_column() {
                NamedColumn::Aux => l.ev.map_aux(|a| u64::from(map.id(a as StrId))),
                NamedColumn::Flags => l.ev.map_flags(|f| if f == 0 { 0 } else { map.id(f) }),
                NamedColumn::None => {}
            }
            l.ev.shift(offset);
            self.out.lanes.push(l);
        }
        for mut s in syncs {
            s.pid = map.pid(s.pid, &mut self.taken);
            for n in &mut s.ev.name {
                *n = map.id(*n);
            }
            // aux: device << 32 | stream.
            s.ev.map_aux(|a| (u64::from(map.dev((a >> 32) as u32)) << 32) | (a & 0xFFFF_FFFF));
            s.ev.shift(offset);
            self.out.syncs.push(s);
        }
    }

    // GPUs, processes and threads, named with the rank's `prefix`.
    fn add_who(
        &mut self,
        gpus: Vec<Gpu>,
        processes: Vec<Process>,
        threads: Vec<Thread>,
        prefix: &str,
        map: &mut Remap,
    ) {
        for mut g in gpus {
            g.device = map.dev(g.device);
            self.out.gpus.push(g);
        }
        for mut p in processes {
            p.pid = map.pid(p.pid, &mut self.taken);
            p.name = format!("{prefix}{}", p.name);
            self.out.processes.push(p);
        }
        for mut th in threads {
            th.pid = map.pid(th.pid, &mut self.taken);
            if !th.name.is_empty() {
                th.name = format!("{prefix}{}", th.name);
            }
            self.out.threads.push(th);
        }
    }

    fn add_host(&mut self, h: HostData, map: &mut Remap) {
        let out = &mut self.out.host;
        out.cpus.extend(h.cpus);
        out.cpu_cores = out.cpu_cores.max(h.cpu_cores);
        out.samples += h.samples;
        out.switches += h.switches;
        out.osrt_calls += h.osrt_calls;
        for mut s in h.sampled_threads {
            s.pid = map.pid(s.pid, &mut self.taken);
            out.sampled_threads.push(s);
        }
        out.tables.osrt |= h.tables.osrt;
        out.tables.sched |= h.tables.sched;
        out.tables.samples |= h.tables.samples;
        out.has_python |= h.has_python;
        out.python_samples += h.python_samples;
    }

    fn add_meta(&mut self, m: Meta) {
        for (v, all) in
            [(m.nsys_version, &mut self.versions), (m.schema_version, &mut self.schemas), (m.path, &mut self.paths)]
        {
            if !all.contains(&v) {
                all.push(v);
            }
        }
        let out = &mut self.out.meta;
        out.tables.extend(m.tables);
        out.file_bytes += m.file_bytes;
        out.outliers.0 += m.outliers.0;
        out.outliers.1 = out.outliers.1.take().or(m.outliers.1);
        out.unreadable_events += m.unreadable_events;
    }

    // Sorted lists, joined labels, the common extent and the display order.
    fn finish(self, hosts: Vec<String>, note: Option<String>) -> Trace {
        let mut out = self.out;
        out.host.cpus.sort_unstable();
        out.host.cpus.dedup();
        out.gpus.sort_by_key(|g| g.device);
        out.processes.sort_by_key(|p| p.pid);
        out.threads.sort_by_key(|t| (t.pid, t.tid));
        let m = &mut out.meta;
        m.path = self.paths.join(", ");
        m.nsys_version = self.versions.join(", ");
        m.schema_version = self.schemas.join(", ");
        m.utc_epoch_ns = out.ranks.iter().map(|r| r.session_start_utc_ns).filter(|&s| s > 0).min().unwrap_or(0);
        m.align_note = note;
        m.hostname = hosts.into_iter().filter(|h| !h.is_empty()).collect::<Vec<_>>().join(", ");
        let (start, end) = super::extent(&out.lanes);
        out.meta.start_ns = start;
        out.meta.end_ns = end;
        super::order_lanes(&mut out);
        out
    }
}

// Each input's rank (in input order) and where the ranks come from.
fn choose_ranks(inputs: &[Trace]) -> (Vec<u32>, &'static str) {
    let unique = |v: &[Option<u32>]| -> Option<Vec<u32>> {
        let v: Vec<u32> = v.iter().copied().collect::<Option<Vec<u32>>>()?;
        let set: HashSet<u32> = v.iter().copied().collect();
        (set.len() == v.len()).then_some(v)
    };
    let env: Vec<Option<u32>> = inputs.iter().map(|t| t.meta.env_rank).collect();
    if let Some(v) = unique(&env) {
        return (v, "RANK");
    }
    let local: Vec<Option<u32>> = inputs.iter().map(|t| t.meta.env_local_rank).collect();
    if let Some(v) = unique(&local) {
        return (v, "LOCAL_RANK");
    }
    ((0..inputs.len() as u32).collect(), "file order")
}

// The offset of each input (in rank order), how it was aligned, and a note when clocks
// could not be aligned.
fn offsets(order: &[(u32, Trace)]) -> (Vec<Ns>, Vec<Alignment>, Option<String>) {
    let missing: Vec<&str> =
        order.iter().filter(|(_, t)| t.meta.utc_epoch_ns <= 0).map(|(_, t)| t.meta.path.as_str()).collect();
    if missing.is_empty() {
        let start = |t: &Trace| if t.meta.start_ns >= EPOCH_TIMES_NS { 0 } else { t.meta.utc_epoch_ns };
        let origin = order.iter().map(|(_, t)| t.meta.utc_epoch_ns).min().unwrap_or(0);
        let offsets = order.iter().map(|(_, t)| start(t).saturating_sub(origin)).collect();
        return (offsets, vec![Alignment::SessionStart; order.len()], None);
    }
    let anchors: Vec<(Ns, Alignment)> = order
        .iter()
        .map(|(_, t)| first_step(t).map_or((t.meta.start_ns, Alignment::FirstEvent), |s| (s, Alignment::FirstStep)))
        .collect();
    let base = anchors[0].0;
    let how = if anchors.iter().all(|a| a.1 == Alignment::FirstStep) {
        "the first step"
    } else {
        "the first step (or first event)"
    };
    let note = format!(
        "clocks cannot be aligned: {} {} no session start time (TARGET_INFO_SESSION_START_TIME); the inputs are aligned on {how}",
        missing.join(", "),
        if missing.len() == 1 { "has" } else { "have" },
    );
    (anchors.iter().map(|a| base - a.0).collect(), anchors.into_iter().map(|a| a.1).collect(), Some(note))
}

/// Start of the first instance of the best step-like NVTX range (lowest
/// [`step_rank`]), if the trace has one.
pub(crate) fn first_step(t: &Trace) -> Option<Ns> {
    let mut best: Option<(u8, Ns)> = None;
    for l in t.lanes.iter().filter(|l| matches!(l.kind, LaneKind::Nvtx { .. } | LaneKind::NvtxStartEnd { .. })) {
        let mut rank_of: HashMap<StrId, Option<u8>> = HashMap::new();
        for i in 0..l.ev.len() {
            let n = l.ev.name[i];
            let r = *rank_of.entry(n).or_insert_with(|| step_rank(&group_name(t.strings.get(n))));
            if let Some(r) = r
                && best.is_none_or(|b| (r, l.ev.start[i]) < b)
            {
                best = Some((r, l.ev.start[i]));
            }
        }
    }
    best.map(|b| b.1)
}
