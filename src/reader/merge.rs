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

use crate::model::{Alignment, LaneKind, NamedColumn, Ns, Rank, StrId, Strings, Trace, group_name, step_rank};

/// Device ids each input may use in the merged trace.
pub const DEVICES_PER_INPUT: u32 = 256;

/// Times at or above this (about 1973 in epoch ns) are absolute, not session-relative.
const EPOCH_TIMES_NS: Ns = 100_000_000_000_000_000;

/// Merge `inputs` into one trace (one input is returned as it is).
// One pass per input over every part of a trace: splitting it would pass the maps around.
#[allow(clippy::too_many_lines)]
pub fn merge(inputs: Vec<Trace>) -> Trace {
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
    let show_host = hosts.len() > 1;

    let mut out = Trace { strings: Strings::new(), ..Trace::default() };
    let mut taken: HashSet<u32> = HashSet::new();
    let mut versions: Vec<String> = Vec::new();
    let mut schemas: Vec<String> = Vec::new();
    let mut paths: Vec<String> = Vec::new();
    for (i, ((rank, t), offset)) in order.into_iter().zip(offsets).enumerate() {
        let i = i as u32;
        let ids: Vec<StrId> = t.strings.iter().map(|(_, s)| out.strings.intern(s)).collect();
        let id = |s: StrId| ids.get(s as usize).copied().unwrap_or(0);
        let mut pid_map: HashMap<u32, u32> = HashMap::new();
        let mut pids_of = |pid: u32, taken: &mut HashSet<u32>| -> u32 {
            *pid_map.entry(pid).or_insert_with(|| {
                let p = if taken.contains(&pid) { (i << 24) | (pid & 0xFF_FFFF) } else { pid };
                taken.insert(p);
                p
            })
        };
        let dev = |d: u32| i * DEVICES_PER_INPUT + d % DEVICES_PER_INPUT;
        let prefix = if show_host && !t.meta.hostname.is_empty() {
            format!("rank {rank} @ {} · ", t.meta.hostname)
        } else {
            format!("rank {rank} · ")
        };
        // Pids in the order of the export's processes, then any other lane's.
        for p in t.processes.iter().map(|p| p.pid).chain(t.lanes.iter().map(|l| l.pid)) {
            pids_of(p, &mut taken);
        }
        let mut r = Rank {
            rank,
            rank_source: source.to_string(),
            host: t.meta.hostname.clone(),
            path: t.meta.path.clone(),
            nsys_version: t.meta.nsys_version.clone(),
            session_start_utc_ns: t.meta.utc_epoch_ns,
            offset_ns: offset,
            aligned_on: Some(aligned[i as usize]),
            start_ns: t.meta.start_ns + offset,
            end_ns: t.meta.end_ns + offset,
            pids: Vec::new(),
            devices: t.devices().into_iter().map(|d| (dev(d), d)).collect(),
        };
        for mut l in t.lanes {
            l.pid = pids_of(l.pid, &mut taken);
            // Every lane shown with a GPU moves with it, its annotations too.
            l.kind = l.kind.with_device(dev);
            for n in &mut l.ev.name {
                *n = id(*n);
            }
            match l.kind.named_column() {
                NamedColumn::Aux => l.ev.map_aux(|a| u64::from(id(a as StrId))),
                NamedColumn::Flags => l.ev.map_flags(|f| if f == 0 { 0 } else { id(f) }),
                NamedColumn::None => {}
            }
            l.ev.shift(offset);
            out.lanes.push(l);
        }
        for mut s in t.syncs {
            s.pid = pids_of(s.pid, &mut taken);
            for n in &mut s.ev.name {
                *n = id(*n);
            }
            s.ev.map_aux(|a| (u64::from(dev((a >> 32) as u32)) << 32) | (a & 0xFFFF_FFFF));
            s.ev.shift(offset);
            out.syncs.push(s);
        }
        for mut g in t.gpus {
            g.device = dev(g.device);
            out.gpus.push(g);
        }
        for mut p in t.processes {
            p.pid = pids_of(p.pid, &mut taken);
            p.name = format!("{prefix}{}", p.name);
            out.processes.push(p);
        }
        for mut th in t.threads {
            th.pid = pids_of(th.pid, &mut taken);
            if !th.name.is_empty() {
                th.name = format!("{prefix}{}", th.name);
            }
            out.threads.push(th);
        }
        let h = t.host;
        out.host.cpus.extend(h.cpus);
        out.host.cpu_cores = out.host.cpu_cores.max(h.cpu_cores);
        out.host.samples += h.samples;
        out.host.switches += h.switches;
        out.host.osrt_calls += h.osrt_calls;
        out.host.sampled_threads.extend(h.sampled_threads.into_iter().map(|mut s| {
            s.pid = pids_of(s.pid, &mut taken);
            s
        }));
        out.host.tables.osrt |= h.tables.osrt;
        out.host.tables.sched |= h.tables.sched;
        out.host.tables.samples |= h.tables.samples;
        out.host.has_python |= h.has_python;
        out.host.python_samples += h.python_samples;
        let mut pids: Vec<u32> = pid_map.values().copied().collect();
        pids.sort_unstable();
        r.pids = pids;
        let m = t.meta;
        for (v, all) in [(m.nsys_version, &mut versions), (m.schema_version, &mut schemas), (m.path, &mut paths)] {
            if !all.contains(&v) {
                all.push(v);
            }
        }
        out.meta.tables.extend(m.tables);
        out.meta.file_bytes += m.file_bytes;
        out.meta.outliers.0 += m.outliers.0;
        out.meta.outliers.1 = out.meta.outliers.1.take().or(m.outliers.1);
        out.meta.unreadable_events += m.unreadable_events;
        out.ranks.push(r);
    }
    out.host.cpus.sort_unstable();
    out.host.cpus.dedup();
    out.gpus.sort_by_key(|g| g.device);
    out.processes.sort_by_key(|p| p.pid);
    out.threads.sort_by_key(|t| (t.pid, t.tid));
    let m = &mut out.meta;
    m.path = paths.join(", ");
    m.nsys_version = versions.join(", ");
    m.schema_version = schemas.join(", ");
    m.utc_epoch_ns = out.ranks.iter().map(|r| r.session_start_utc_ns).filter(|&s| s > 0).min().unwrap_or(0);
    m.align_note = note;
    m.hostname = hosts.into_iter().filter(|h| !h.is_empty()).collect::<Vec<_>>().join(", ");
    let (start, end) = super::extent(&out.lanes);
    out.meta.start_ns = start;
    out.meta.end_ns = end;
    super::order_lanes(&mut out);
    out
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
pub fn first_step(t: &Trace) -> Option<Ns> {
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
