//! Lane groups (one per GPU, one per CPU thread) and the rows they show.

use crate::model::{LaneKind, Trace};

use super::text;

/// What a group gathers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupKind {
    /// The lanes of one GPU; its header row is the GPU overview.
    Gpu(u32),
    /// The lanes of one CPU thread; its header row sums them up.
    Thread {
        /// Process id.
        pid: u32,
        /// Thread id.
        tid: u32,
    },
    /// Threads with only OS runtime calls (waiting pools, helpers), one lane each.
    Others,
    /// The CPUs a process and its workers ran on: how busy they were (no lanes).
    Cpus {
        /// Process id.
        pid: u32,
    },
}

/// A collapsible group of lanes.
#[derive(Debug, Clone)]
pub struct Group {
    /// What the group gathers.
    pub kind: GroupKind,
    /// Sanitized title.
    pub title: String,
    /// Lanes, as indices into [`Trace::lanes`], in display order.
    pub lanes: Vec<u32>,
    /// True when only the header row shows.
    pub collapsed: bool,
}

/// One row of the lane area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Row {
    /// A group header (index into the groups).
    Group(usize),
    /// A lane (index into [`Trace::lanes`]).
    Lane(u32),
}

/// Build the groups of `trace`: GPUs by device, then threads, main threads first,
/// threads with CUDA or NVTX activity next. Threads with only OS runtime calls share
/// one group, collapsed; so do threads with only scheduling data (on-CPU intervals,
/// CPU samples).
pub fn groups(trace: &Trace) -> Vec<Group> {
    let mut out: Vec<Group> = trace
        .devices()
        .into_iter()
        .map(|d| Group {
            kind: GroupKind::Gpu(d),
            title: text::clean(&trace.gpu_label(d).replacen("NVIDIA ", "", 1)).into_owned(),
            lanes: (0..trace.lanes.len() as u32)
                .filter(|&i| trace.lanes[i as usize].kind.device() == Some(d))
                .collect(),
            collapsed: false,
        })
        .collect();
    let mut threads: Vec<((u32, u8, u32), Vec<u32>)> = Vec::new();
    for (i, lane) in trace.lanes.iter().enumerate() {
        let Some(tid) = lane.kind.tid() else { continue };
        let pid = lane.pid;
        match threads.iter_mut().find(|((p, _, t), _)| *p == pid && *t == tid) {
            Some((_, v)) => v.push(i as u32),
            None => threads.push(((pid, 2, tid), vec![i as u32])),
        }
    }
    for ((pid, rank, tid), lanes) in &mut threads {
        let kinds = || lanes.iter().map(|&l| trace.lanes[l as usize].kind);
        let active = kinds().any(|k| !matches!(k, LaneKind::Osrt { .. } | LaneKind::Overhead { .. }) && !k.is_host());
        // A main thread with only scheduling data (every process of a system-wide
        // capture has one) is folded with the others.
        let host_only = kinds().all(LaneKind::is_host);
        *rank = if *tid == *pid && !host_only {
            0
        } else if active {
            1
        } else {
            2
        };
    }
    threads.sort_by_key(|(k, _)| *k);
    let processes = {
        let mut p: Vec<u32> = threads.iter().map(|((pid, _, _), _)| *pid).collect();
        p.dedup();
        p.len()
    };
    let mut others = Vec::new();
    let mut last_pid = None;
    for ((pid, rank, tid), lanes) in threads {
        if rank == 2 {
            others.extend(lanes);
            continue;
        }
        // Before a process's first thread: its CPU row, when the trace has its switches.
        if last_pid != Some(pid) && trace.lanes.iter().any(|l| l.pid == pid && matches!(l.kind, LaneKind::OnCpu { .. }))
        {
            let name = text::clean(trace.process_name(pid)).into_owned();
            out.push(Group {
                kind: GroupKind::Cpus { pid },
                title: format!("CPUs {name} {pid}"),
                lanes: Vec::new(),
                collapsed: false,
            });
        }
        last_pid = Some(pid);
        out.push(Group {
            kind: GroupKind::Thread { pid, tid },
            title: thread_title(trace, pid, tid, processes > 1),
            lanes,
            collapsed: false,
        });
    }
    if !others.is_empty() {
        out.push(Group {
            kind: GroupKind::Others,
            title: format!("{} more threads", others.len()),
            lanes: others,
            collapsed: true,
        });
    }
    out
}

fn thread_title(trace: &Trace, pid: u32, tid: u32, many_processes: bool) -> String {
    let tname = trace.thread_name(pid, tid);
    let pname = trace.process_name(pid);
    let name = if !tname.is_empty() {
        tname
    } else if tid == pid && !pname.is_empty() {
        pname
    } else {
        "thread"
    };
    let s = if many_processes && tid != pid { format!("{name} {tid} ({pid})") } else { format!("{name} {tid}") };
    text::clean(&s).into_owned()
}

/// Flatten groups into rows, honouring collapsed groups.
pub fn rows(groups: &[Group]) -> Vec<Row> {
    let mut out = Vec::new();
    for (g, group) in groups.iter().enumerate() {
        out.push(Row::Group(g));
        if !group.collapsed {
            out.extend(group.lanes.iter().map(|&l| Row::Lane(l)));
        }
    }
    out
}

/// Labels of every lane row: the lane title (`kernels s7`, `CUDA API`), or the thread
/// for lanes in the "more threads" group.
pub fn lane_labels(trace: &Trace, groups: &[Group]) -> Vec<String> {
    let many = {
        let mut p: Vec<u32> = trace.lanes.iter().map(|l| l.pid).collect();
        p.sort_unstable();
        p.dedup();
        p.len() > 1
    };
    let mut out: Vec<String> = trace.lanes.iter().map(|l| text::clean(&l.title()).into_owned()).collect();
    for g in groups.iter().filter(|g| g.kind == GroupKind::Others) {
        for &l in &g.lanes {
            let lane = &trace.lanes[l as usize];
            if let Some(tid) = lane.kind.tid() {
                out[l as usize] = thread_title(trace, lane.pid, tid, many);
            }
        }
    }
    out
}
