//! Lane groups (one per GPU, one per CPU thread), the rows they show, and the
//! [`LaneList`]: order, focus, collapse, pins and scroll of the lane area.

use itertools::Itertools;

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
    let mut out = gpu_groups(trace);
    out.extend(thread_groups(trace, ranked_threads(trace)));
    out
}

// One group per GPU, by device, holding every lane shown with it.
fn gpu_groups(trace: &Trace) -> Vec<Group> {
    trace
        .devices()
        .into_iter()
        .map(|d| Group {
            kind: GroupKind::Gpu(d),
            title: text::sanitize(&trace.gpu_label(d).replacen("NVIDIA ", "", 1)).into_owned(),
            lanes: (0..trace.lanes.len() as u32)
                .filter(|&i| trace.lanes[i as usize].kind.shown_with_gpu() == Some(d))
                .collect(),
            collapsed: false,
        })
        .collect()
}

/// A thread's lanes, keyed by (pid, rank, tid): rank 0 for a main thread, 1 for a thread
/// with CUDA or NVTX activity, 2 for the rest (folded into one group).
type RankedThread = ((u32, u8, u32), Vec<u32>);

// Every thread with lanes, in display order.
fn ranked_threads(trace: &Trace) -> Vec<RankedThread> {
    let mut threads: Vec<RankedThread> = Vec::new();
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
    threads
}

// The thread groups, each process's CPU row before its first thread, and the folded rest.
fn thread_groups(trace: &Trace, threads: Vec<RankedThread>) -> Vec<Group> {
    let processes = threads.iter().map(|((pid, _, _), _)| *pid).dedup().count();
    let mut out = Vec::new();
    let mut others = Vec::new();
    let mut last_pid = None;
    for ((pid, rank, tid), lanes) in threads {
        if rank == 2 {
            others.extend(lanes);
            continue;
        }
        if last_pid != Some(pid) && trace.lanes.iter().any(|l| l.pid == pid && matches!(l.kind, LaneKind::OnCpu { .. }))
        {
            out.push(cpu_group(trace, pid));
        }
        last_pid = Some(pid);
        // Several ranks: each rank's threads start folded, its GPUs open.
        out.push(Group {
            kind: GroupKind::Thread { pid, tid },
            title: thread_title(trace, pid, tid, processes > 1),
            lanes,
            collapsed: trace.ranks.len() > 1,
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

// The CPU row of process `pid` (the trace has its switches).
fn cpu_group(trace: &Trace, pid: u32) -> Group {
    let name = text::sanitize(trace.process_name(pid)).into_owned();
    Group { kind: GroupKind::Cpus { pid }, title: format!("CPUs {name} {pid}"), lanes: Vec::new(), collapsed: false }
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
    text::sanitize(&s).into_owned()
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
    let mut out: Vec<String> = trace.lanes.iter().map(|l| text::sanitize(&l.title()).into_owned()).collect();
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

/// The lane area: groups and their rows, pinned lanes, the focused row and the scroll.
/// Focus indices count pinned lanes first, then the scrolling rows.
#[derive(Debug, Clone)]
pub struct LaneList {
    /// Groups in display order.
    pub groups: Vec<Group>,
    /// Scrolling rows (collapsed groups show only their header).
    pub rows: Vec<Row>,
    /// Sanitized label of every lane.
    pub labels: Vec<String>,
    /// Lanes pinned to the top, in pin order.
    pub pinned: Vec<u32>,
    /// Focused row (focus index).
    pub focus: usize,
    /// First scrolling row shown.
    pub scroll: usize,
    /// Height of the lane area in rows.
    height: usize,
}

impl LaneList {
    /// Lanes of `trace` grouped as [`groups`] does.
    pub fn new(trace: &Trace, groups: Vec<Group>) -> Self {
        let rows = rows(&groups);
        let labels = lane_labels(trace, &groups);
        Self { groups, rows, labels, pinned: Vec::new(), focus: 0, scroll: 0, height: 1 }
    }

    /// Lay the list out on `height` rows and keep the focus visible.
    pub fn set_height(&mut self, height: usize) {
        self.height = height;
        self.scroll_to_focus();
    }

    /// The row at focus index `i`.
    pub fn row_at(&self, i: usize) -> Option<Row> {
        if i < self.pinned.len() {
            Some(Row::Lane(self.pinned[i]))
        } else {
            self.rows.get(i - self.pinned.len()).copied()
        }
    }

    /// The focused row.
    pub fn focused(&self) -> Option<Row> {
        self.row_at(self.focus)
    }

    /// Number of focusable rows.
    pub fn row_count(&self) -> usize {
        self.pinned.len() + self.rows.len()
    }

    /// Rows visible in the scrolling part of the lane area.
    pub fn scroll_rows_h(&self) -> usize {
        let pinned = if self.pinned.is_empty() { 0 } else { self.pinned.len() + 1 };
        self.height.saturating_sub(pinned).max(1)
    }

    /// The focus index of the row drawn `dy` rows below the top of the lane area
    /// (None for the separator under pinned lanes and past the last row).
    pub fn index_at(&self, dy: usize) -> Option<usize> {
        if dy < self.pinned.len() {
            return Some(dy);
        }
        let first = if self.pinned.is_empty() { 0 } else { self.pinned.len() + 1 };
        let k = dy.checked_sub(first)? + self.scroll;
        (k < self.rows.len() && dy < self.height).then_some(self.pinned.len() + k)
    }

    /// Scroll so that the focused row is visible.
    pub fn scroll_to_focus(&mut self) {
        self.focus = self.focus.min(self.row_count().saturating_sub(1));
        let h = self.scroll_rows_h();
        self.scroll = self.scroll.min(self.rows.len().saturating_sub(h));
        if self.focus < self.pinned.len() {
            return;
        }
        let f = self.focus - self.pinned.len();
        if f < self.scroll {
            self.scroll = f;
        } else if f >= self.scroll + h {
            self.scroll = f + 1 - h;
        }
    }

    /// Move the focus by `delta` rows.
    pub fn move_focus(&mut self, delta: isize) {
        let n = self.row_count() as isize;
        self.focus = (self.focus as isize).saturating_add(delta).clamp(0, (n - 1).max(0)) as usize;
        self.scroll_to_focus();
    }

    /// Scroll the rows by `delta` without moving the focus off screen more than needed.
    pub fn scroll_by(&mut self, delta: isize) {
        let max = self.rows.len().saturating_sub(self.scroll_rows_h());
        self.scroll = (self.scroll as isize).saturating_add(delta).clamp(0, max as isize) as usize;
        let (lo, hi) = (self.pinned.len() + self.scroll, self.pinned.len() + self.scroll + self.scroll_rows_h() - 1);
        if self.focus >= self.pinned.len() {
            self.focus = self.focus.clamp(lo, hi.min(self.row_count().saturating_sub(1)));
        }
    }

    fn rebuild(&mut self) {
        let focused = self.focused();
        self.rows = rows(&self.groups);
        if let Some(r) = focused {
            self.focus_row(r);
        }
        self.scroll_to_focus();
    }

    /// Focus `row` in the scrolling list (or a pinned copy of it when not listed).
    pub fn focus_row(&mut self, row: Row) {
        if let Some(i) = self.rows.iter().position(|&r| r == row) {
            self.focus = self.pinned.len() + i;
        } else if let Row::Lane(l) = row
            && let Some(i) = self.pinned.iter().position(|&p| p == l)
        {
            self.focus = i;
        }
        self.scroll_to_focus();
    }

    /// Focus lane `lane`, expanding its group when collapsed.
    pub fn focus_lane(&mut self, lane: u32) {
        if let Some(i) = self.pinned.iter().position(|&p| p == lane) {
            self.focus = i;
            return;
        }
        if let Some(g) = self.groups.iter_mut().find(|g| g.lanes.contains(&lane))
            && g.collapsed
        {
            g.collapsed = false;
            self.rows = rows(&self.groups);
        }
        self.focus_row(Row::Lane(lane));
    }

    /// Focus the first GPU group of the next rank after the focused row's (wrapping);
    /// None when the trace has one rank.
    pub fn focus_next_rank(&mut self, trace: &Trace) -> Option<u32> {
        if trace.ranks.len() < 2 {
            return None;
        }
        let rank_of = |g: &Group| match g.kind {
            GroupKind::Gpu(d) => trace.rank_of_device(d).map(|r| r.rank),
            GroupKind::Thread { pid, .. } | GroupKind::Cpus { pid } => trace.rank_of_pid(pid).map(|r| r.rank),
            GroupKind::Others => None,
        };
        let current = match self.focused() {
            Some(Row::Group(g)) => rank_of(&self.groups[g]),
            Some(Row::Lane(l)) => self.groups.iter().find(|g| g.lanes.contains(&l)).and_then(rank_of),
            None => None,
        };
        let mut ranks: Vec<u32> = trace.ranks.iter().map(|r| r.rank).collect();
        ranks.sort_unstable();
        let next = match current {
            Some(c) => ranks.iter().copied().find(|&r| r > c).unwrap_or(ranks[0]),
            None => ranks[0],
        };
        let g = self.groups.iter().position(|g| matches!(g.kind, GroupKind::Gpu(_)) && rank_of(g) == Some(next))?;
        self.focus_row(Row::Group(g));
        Some(next)
    }

    /// Group index of the GPU `device`.
    pub fn gpu_group(&self, device: u32) -> Option<usize> {
        self.groups.iter().position(|g| g.kind == GroupKind::Gpu(device))
    }

    /// Lanes behind the focused row (one lane, or a group's lanes).
    pub fn focused_lanes(&self) -> Vec<u32> {
        match self.focused() {
            Some(Row::Lane(l)) => vec![l],
            Some(Row::Group(g)) => self.groups[g].lanes.clone(),
            None => Vec::new(),
        }
    }

    /// Collapse or expand the focused group (on a lane: collapse its group).
    pub fn toggle_group(&mut self) {
        match self.focused() {
            Some(Row::Group(g)) => self.toggle_group_at(g),
            Some(Row::Lane(l)) if self.focus >= self.pinned.len() => {
                if let Some(g) = self.groups.iter().position(|g| g.lanes.contains(&l)) {
                    self.groups[g].collapsed = true;
                    self.rows = rows(&self.groups);
                    self.focus_row(Row::Group(g));
                }
            }
            _ => {}
        }
    }

    /// Collapse or expand group `g`.
    pub fn toggle_group_at(&mut self, g: usize) {
        if let Some(grp) = self.groups.get_mut(g) {
            grp.collapsed = !grp.collapsed;
            self.rebuild();
        }
    }

    /// Collapse every group, or expand them all when all are collapsed.
    pub fn toggle_all(&mut self) {
        let collapse = self.groups.iter().any(|g| !g.collapsed);
        for g in &mut self.groups {
            g.collapsed = collapse;
        }
        self.rebuild();
    }

    /// Pin the focused lane, or unpin it; an error message when a group is focused.
    pub fn toggle_pin(&mut self) -> Result<(), &'static str> {
        let Some(Row::Lane(l)) = self.focused() else {
            return Err("only lanes can be pinned: focus a lane with j/k");
        };
        if let Some(i) = self.pinned.iter().position(|&p| p == l) {
            self.pinned.remove(i);
            self.focus_row(Row::Lane(l));
        } else {
            self.pinned.push(l);
            self.focus = self.pinned.len() - 1;
        }
        self.scroll_to_focus();
        Ok(())
    }
}
