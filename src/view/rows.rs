//! Lane groups (one per GPU, one per CPU thread), the rows they show, and the
//! [`LaneList`]: order, focus, collapse, pins and scroll of the lane area. A GPU with
//! counters (`GPU_METRICS`) shows a row per key metric under its header, the other
//! metrics on a toggle ([`LaneList::toggle_metrics`]).

use itertools::Itertools;

use crate::model::counters::{Counters, names, unit_of};
use crate::model::{LaneKind, Trace};
use crate::text;

/// What a group gathers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GroupKind {
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
pub(crate) struct Group {
    /// What the group gathers.
    pub kind: GroupKind,
    /// Sanitized title.
    pub title: String,
    /// Lanes, as indices into [`Trace::lanes`], in display order.
    pub lanes: Vec<u32>,
    /// Key metric rows of a GPU (indices into [`Counters::series`]), in [`KEY_METRICS`] order.
    pub key_metrics: Vec<u32>,
    /// The GPU's other metrics, in the export's order (shown on the toggle).
    pub more_metrics: Vec<u32>,
    /// True when only the header row shows.
    pub collapsed: bool,
}

/// One row of the lane area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Row {
    /// A group header (index into the groups).
    Group(usize),
    /// A lane (index into [`Trace::lanes`]).
    Lane(u32),
    /// A GPU counter (index into [`Counters::series`]).
    Metric(u32),
}

/// The metrics shown under each GPU that has them, with their row labels.
pub(crate) const KEY_METRICS: [(&str, &str); 3] =
    [(names::PCIE_RX, "PCIe RX %"), (names::PCIE_TX, "PCIe TX %"), (names::SMS_ACTIVE, "SMs %")];

/// The row label of metric `name`: its short name for a key metric, else the name
/// without its bracket, then the unit (`DRAM Read Bandwidth %`, `GPC Clock Frequency MHz`),
/// sanitized.
pub(crate) fn metric_label(name: &str) -> String {
    if let Some((_, label)) = KEY_METRICS.iter().find(|(n, _)| *n == name) {
        return (*label).to_string();
    }
    let base = name.rfind('[').map_or(name, |i| name[..i].trim_end());
    let unit = unit_of(name);
    // The unit tells apart the rows of one quantity (`[Avg]`, `[Throughput %]`).
    let label = if unit.is_empty() { base.to_string() } else { format!("{base} {unit}") };
    text::sanitize(&label).into_owned()
}

// The key metrics of `device` and the rest, as indices into the series.
fn metrics_of(counters: &Counters, device: u32) -> (Vec<u32>, Vec<u32>) {
    let of = || counters.series.iter().enumerate().filter(|(_, s)| s.device == device);
    let key =
        KEY_METRICS.iter().filter_map(|(name, _)| of().find(|(_, s)| s.name == *name).map(|(i, _)| i as u32)).collect();
    let more = of().filter(|(_, s)| !KEY_METRICS.iter().any(|(n, _)| *n == s.name)).map(|(i, _)| i as u32).collect();
    (key, more)
}

/// Build the groups of `trace`: GPUs by device, then threads, main threads first,
/// threads with CUDA or NVTX activity next. Threads with only OS runtime calls share
/// one group, collapsed; so do threads with only scheduling data (on-CPU intervals,
/// CPU samples).
pub(crate) fn groups(trace: &Trace) -> Vec<Group> {
    let mut out = gpu_groups(trace);
    out.extend(thread_groups(trace, ranked_threads(trace)));
    out
}

// One group per GPU, by device, holding every lane shown with it and its counters.
fn gpu_groups(trace: &Trace) -> Vec<Group> {
    trace
        .devices()
        .into_iter()
        .map(|d| {
            let (key_metrics, more_metrics) = metrics_of(&trace.counters, d);
            Group {
                kind: GroupKind::Gpu(d),
                title: text::sanitize(&trace.gpu_label(d).replacen("NVIDIA ", "", 1)).into_owned(),
                lanes: (0..trace.lanes.len() as u32)
                    .filter(|&i| trace.lanes[i as usize].kind.shown_with_gpu() == Some(d))
                    .collect(),
                key_metrics,
                more_metrics,
                collapsed: false,
            }
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
            key_metrics: Vec::new(),
            more_metrics: Vec::new(),
            collapsed: trace.ranks.len() > 1,
        });
    }
    if !others.is_empty() {
        out.push(Group {
            kind: GroupKind::Others,
            title: format!("{} more threads", threads_of(trace, &others)),
            lanes: others,
            key_metrics: Vec::new(),
            more_metrics: Vec::new(),
            collapsed: true,
        });
    }
    out
}

// How many threads `lanes` belong to.
fn threads_of(trace: &Trace, lanes: &[u32]) -> usize {
    lanes
        .iter()
        .filter_map(|&l| trace.lanes[l as usize].kind.tid().map(|t| (trace.lanes[l as usize].pid, t)))
        .unique()
        .count()
}

// The CPU row of process `pid` (the trace has its switches).
fn cpu_group(trace: &Trace, pid: u32) -> Group {
    let name = text::sanitize(trace.process_name(pid)).into_owned();
    Group {
        kind: GroupKind::Cpus { pid },
        title: format!("CPUs {name} {pid}"),
        lanes: Vec::new(),
        key_metrics: Vec::new(),
        more_metrics: Vec::new(),
        collapsed: false,
    }
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

/// Flatten groups into rows, honouring collapsed groups: a GPU's header, its key metrics
/// (all its metrics when `all_metrics`), then its lanes.
pub(crate) fn rows(groups: &[Group], all_metrics: bool) -> Vec<Row> {
    let mut out = Vec::new();
    for (g, group) in groups.iter().enumerate() {
        out.push(Row::Group(g));
        if !group.collapsed {
            out.extend(group.key_metrics.iter().map(|&s| Row::Metric(s)));
            if all_metrics {
                out.extend(group.more_metrics.iter().map(|&s| Row::Metric(s)));
            }
            out.extend(group.lanes.iter().map(|&l| Row::Lane(l)));
        }
    }
    out
}

/// Labels of every lane row: the lane title (`kernels s7`, `CUDA API`), or the thread
/// for lanes in the "more threads" group.
pub(crate) fn lane_labels(trace: &Trace, groups: &[Group]) -> Vec<String> {
    let many = {
        let mut p: Vec<u32> = trace.lanes.iter().map(|l| l.pid).collect();
        p.sort_unstable();
        p.dedup();
        p.len() > 1
    };
    let mut out: Vec<String> = trace.lanes.iter().map(|l| text::sanitize(&l.title()).into_owned()).collect();
    // Several processes on one GPU: each GPU lane starts with its process's pid.
    let mut pairs: Vec<(u32, u32)> =
        trace.lanes.iter().filter_map(|l| Some((l.kind.gpu_work_device()?, l.pid))).collect();
    pairs.sort_unstable();
    pairs.dedup();
    let shared: Vec<u32> = pairs.windows(2).filter(|w| w[0].0 == w[1].0).map(|w| w[0].0).collect();
    for (l, label) in trace.lanes.iter().zip(out.iter_mut()) {
        if l.kind.gpu_work_device().is_some_and(|d| shared.contains(&d)) {
            *label = format!("{} {label}", l.pid);
        }
    }
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

/// What tells apart the rows of one thread in the "more threads" group, where each row
/// is labelled with its thread: the lane's kind (`OS`, `on CPU`, `samples`, `prof` for
/// the profiler's overhead); empty
/// for every other lane.
pub(crate) fn lane_kind_tags(trace: &Trace, groups: &[Group]) -> Vec<&'static str> {
    let mut out = vec![""; trace.lanes.len()];
    for g in groups.iter().filter(|g| g.kind == GroupKind::Others) {
        for &l in &g.lanes {
            out[l as usize] = kind_tag(trace.lanes[l as usize].kind);
        }
    }
    out
}

// A lane kind in a word or two.
fn kind_tag(kind: LaneKind) -> &'static str {
    match kind {
        LaneKind::Osrt { .. } => "OS",
        LaneKind::OnCpu { .. } => "on CPU",
        LaneKind::Samples { .. } => "samples",
        LaneKind::Overhead { .. } => "prof",
        LaneKind::CudaApi { .. } => "CUDA API",
        _ => "lane",
    }
}

/// The lane area: groups and their rows, pinned lanes, the focused row and the scroll.
/// Focus indices count pinned lanes first, then the scrolling rows.
#[derive(Debug, Clone)]
pub(crate) struct LaneList {
    /// Groups in display order.
    pub groups: Vec<Group>,
    /// Scrolling rows (collapsed groups show only their header).
    pub rows: Vec<Row>,
    /// Sanitized label of every lane.
    pub labels: Vec<String>,
    /// The kind shown after a lane's label ([`lane_kind_tags`]).
    pub kind_tags: Vec<&'static str>,
    /// Sanitized label of every counter series ([`metric_label`]).
    pub metric_labels: Vec<String>,
    /// True when every metric of a GPU shows, not only the key ones.
    pub all_metrics: bool,
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
    pub(crate) fn new(trace: &Trace, groups: Vec<Group>) -> Self {
        let rows = rows(&groups, false);
        let labels = lane_labels(trace, &groups);
        let kind_tags = lane_kind_tags(trace, &groups);
        let metric_labels = trace.counters.series.iter().map(|s| metric_label(&s.name)).collect();
        Self {
            groups,
            rows,
            labels,
            kind_tags,
            metric_labels,
            all_metrics: false,
            pinned: Vec::new(),
            focus: 0,
            scroll: 0,
            height: 1,
        }
    }

    /// Lay the list out on `height` rows and keep the focus visible.
    pub(crate) fn set_height(&mut self, height: usize) {
        self.height = height;
        self.scroll_to_focus();
    }

    /// The row at focus index `i`.
    pub(crate) fn row_at(&self, i: usize) -> Option<Row> {
        if i < self.pinned.len() {
            Some(Row::Lane(self.pinned[i]))
        } else {
            self.rows.get(i - self.pinned.len()).copied()
        }
    }

    /// The focused row.
    pub(crate) fn focused(&self) -> Option<Row> {
        self.row_at(self.focus)
    }

    /// Number of focusable rows.
    pub(crate) fn row_count(&self) -> usize {
        self.pinned.len() + self.rows.len()
    }

    /// Rows visible in the scrolling part of the lane area.
    pub(crate) fn scroll_rows_h(&self) -> usize {
        let pinned = if self.pinned.is_empty() { 0 } else { self.pinned.len() + 1 };
        self.height.saturating_sub(pinned).max(1)
    }

    /// The focus index of the row drawn `dy` rows below the top of the lane area
    /// (None for the separator under pinned lanes and past the last row).
    pub(crate) fn index_at(&self, dy: usize) -> Option<usize> {
        if dy < self.pinned.len() {
            return Some(dy);
        }
        let first = if self.pinned.is_empty() { 0 } else { self.pinned.len() + 1 };
        let k = dy.checked_sub(first)? + self.scroll;
        (k < self.rows.len() && dy < self.height).then_some(self.pinned.len() + k)
    }

    /// Scroll so that the focused row is visible.
    pub(crate) fn scroll_to_focus(&mut self) {
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
    pub(crate) fn move_focus(&mut self, delta: isize) {
        let n = self.row_count() as isize;
        self.focus = (self.focus as isize).saturating_add(delta).clamp(0, (n - 1).max(0)) as usize;
        self.scroll_to_focus();
    }

    /// Scroll the rows by `delta` without moving the focus off screen more than needed.
    pub(crate) fn scroll_by(&mut self, delta: isize) {
        let max = self.rows.len().saturating_sub(self.scroll_rows_h());
        self.scroll = (self.scroll as isize).saturating_add(delta).clamp(0, max as isize) as usize;
        let (lo, hi) = (self.pinned.len() + self.scroll, self.pinned.len() + self.scroll + self.scroll_rows_h() - 1);
        if self.focus >= self.pinned.len() {
            self.focus = self.focus.clamp(lo, hi.min(self.row_count().saturating_sub(1)));
        }
    }

    fn rebuild(&mut self) {
        let focused = self.focused();
        self.rows = rows(&self.groups, self.all_metrics);
        if let Some(r) = focused {
            // A metric row the toggle hid leaves the focus on its GPU's header.
            match self.group_of(r) {
                Some(g) if matches!(r, Row::Metric(_)) && !self.rows.contains(&r) => self.focus_row(Row::Group(g)),
                _ => self.focus_row(r),
            }
        }
        self.scroll_to_focus();
    }

    /// The group a row belongs to (a lane's group, a metric's GPU).
    pub(crate) fn group_of(&self, row: Row) -> Option<usize> {
        match row {
            Row::Group(g) => Some(g),
            Row::Lane(l) => self.groups.iter().position(|g| g.lanes.contains(&l)),
            Row::Metric(s) => {
                self.groups.iter().position(|g| g.key_metrics.contains(&s) || g.more_metrics.contains(&s))
            }
        }
    }

    /// True when some GPU has metrics beyond the key ones.
    pub(crate) fn has_more_metrics(&self) -> bool {
        self.groups.iter().any(|g| !g.more_metrics.is_empty())
    }

    /// Show every metric of each GPU, or only the key ones again.
    pub(crate) fn toggle_metrics(&mut self) {
        self.all_metrics = !self.all_metrics;
        self.rebuild();
    }

    /// Focus `row` in the scrolling list (or a pinned copy of it when not listed).
    pub(crate) fn focus_row(&mut self, row: Row) {
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
    pub(crate) fn focus_lane(&mut self, lane: u32) {
        if let Some(i) = self.pinned.iter().position(|&p| p == lane) {
            self.focus = i;
            return;
        }
        if let Some(g) = self.groups.iter_mut().find(|g| g.lanes.contains(&lane))
            && g.collapsed
        {
            g.collapsed = false;
            self.rows = rows(&self.groups, self.all_metrics);
        }
        self.focus_row(Row::Lane(lane));
    }

    /// Focus the first GPU group of the next rank after the focused row's (wrapping);
    /// None when the trace has one rank.
    pub(crate) fn focus_next_rank(&mut self, trace: &Trace) -> Option<u32> {
        if trace.ranks.len() < 2 {
            return None;
        }
        let rank_of = |g: &Group| match g.kind {
            GroupKind::Gpu(d) => trace.rank_of_device(d).map(|r| r.rank),
            GroupKind::Thread { pid, .. } | GroupKind::Cpus { pid } => trace.rank_of_pid(pid).map(|r| r.rank),
            GroupKind::Others => None,
        };
        let current = self.focused().and_then(|r| self.group_of(r)).and_then(|g| rank_of(&self.groups[g]));
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
    pub(crate) fn gpu_group(&self, device: u32) -> Option<usize> {
        self.groups.iter().position(|g| g.kind == GroupKind::Gpu(device))
    }

    /// Lanes behind the focused row (one lane, or a group's lanes; none for a metric).
    pub(crate) fn focused_lanes(&self) -> Vec<u32> {
        match self.focused() {
            Some(Row::Lane(l)) => vec![l],
            Some(Row::Group(g)) => self.groups[g].lanes.clone(),
            Some(Row::Metric(_)) | None => Vec::new(),
        }
    }

    /// Collapse or expand the focused group (on a lane: collapse its group).
    pub(crate) fn toggle_group(&mut self) {
        match self.focused() {
            Some(Row::Group(g)) => self.toggle_group_at(g),
            Some(r @ (Row::Lane(_) | Row::Metric(_))) if self.focus >= self.pinned.len() => {
                if let Some(g) = self.group_of(r) {
                    self.groups[g].collapsed = true;
                    self.rows = rows(&self.groups, self.all_metrics);
                    self.focus_row(Row::Group(g));
                }
            }
            _ => {}
        }
    }

    /// Collapse or expand group `g`.
    pub(crate) fn toggle_group_at(&mut self, g: usize) {
        if let Some(grp) = self.groups.get_mut(g) {
            grp.collapsed = !grp.collapsed;
            self.rebuild();
        }
    }

    /// Collapse every group, or expand them all when all are collapsed.
    pub(crate) fn toggle_all(&mut self) {
        let collapse = self.groups.iter().any(|g| !g.collapsed);
        for g in &mut self.groups {
            g.collapsed = collapse;
        }
        self.rebuild();
    }

    /// Pin the focused lane, or unpin it; an error message when a group is focused.
    pub(crate) fn toggle_pin(&mut self) -> Result<(), &'static str> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::counters::Series;

    #[test]
    fn gpu_lanes_of_several_processes_on_one_gpu_start_with_their_pid() {
        use crate::model::{Events, Gpu, Lane, LaneKind};
        let kernels = |device| LaneKind::Kernels { device, stream: 7 };
        let t = Trace {
            gpus: vec![Gpu { device: 0, ..Gpu::default() }, Gpu { device: 1, ..Gpu::default() }],
            lanes: vec![
                Lane::new(kernels(0), 11, Events::default()),
                Lane::new(kernels(0), 12, Events::default()),
                Lane::new(kernels(1), 11, Events::default()),
            ],
            ..Trace::default()
        };
        // GPU 0 is shared: its lanes name their process; GPU 1 holds one process.
        assert_eq!(lane_labels(&t, &[]), ["11 kernels s7", "12 kernels s7", "kernels s7"]);
    }

    fn series(device: u32, name: &str) -> Series {
        Series::new(device, name.to_string(), vec![0, 100].into(), &[1, 2])
    }

    // GPU 0 with TX, a clock and RX (in that export order), GPU 1 with SMs Active.
    fn list() -> LaneList {
        let mut trace = Trace::default();
        trace.counters.series = vec![
            series(0, names::PCIE_TX),
            series(0, "GPC Clock Frequency [MHz]"),
            series(0, names::PCIE_RX),
            series(1, names::SMS_ACTIVE),
        ];
        let gpu = |d: u32| {
            let (key_metrics, more_metrics) = metrics_of(&trace.counters, d);
            Group {
                kind: GroupKind::Gpu(d),
                title: format!("GPU {d}"),
                lanes: Vec::new(),
                key_metrics,
                more_metrics,
                collapsed: false,
            }
        };
        let groups = vec![gpu(0), gpu(1)];
        LaneList::new(&trace, groups)
    }

    #[test]
    fn key_metrics_come_first_in_their_order_and_the_rest_on_the_toggle() {
        let mut l = list();
        assert_eq!((l.groups[0].key_metrics.as_slice(), l.groups[0].more_metrics.as_slice()), (&[2, 0][..], &[1][..]));
        assert_eq!(l.rows, [Row::Group(0), Row::Metric(2), Row::Metric(0), Row::Group(1), Row::Metric(3)]);
        assert_eq!(l.metric_labels, ["PCIe TX %", "GPC Clock Frequency MHz", "PCIe RX %", "SMs %"]);
        assert!(l.has_more_metrics());
        l.toggle_metrics();
        assert_eq!(l.rows[..4], [Row::Group(0), Row::Metric(2), Row::Metric(0), Row::Metric(1)]);
        // Hiding the metric the focus is on leaves the focus on its GPU.
        l.focus_row(Row::Metric(1));
        l.toggle_metrics();
        assert_eq!(l.focused(), Some(Row::Group(0)));
        // A metric row belongs to its GPU's group: collapsing from it folds the group.
        l.focus_row(Row::Metric(3));
        assert_eq!(l.group_of(Row::Metric(3)), Some(1));
        assert!(l.focused_lanes().is_empty(), "a metric row steps through no events");
        assert!(l.toggle_pin().is_err(), "only lanes pin");
        l.toggle_group();
        assert_eq!((l.focused(), l.rows.len()), (Some(Row::Group(1)), 4));
    }

    #[test]
    fn more_threads_counts_threads_and_tags_each_row_with_its_kind() {
        use crate::model::{Events, Lane};
        let mut trace = Trace::default();
        let lane = |kind| Lane::new(kind, 10, Events::default());
        // Thread 11 has two rows, thread 12 one: two threads, three rows.
        trace.lanes =
            vec![lane(LaneKind::Osrt { tid: 11 }), lane(LaneKind::OnCpu { tid: 11 }), lane(LaneKind::Osrt { tid: 12 })];
        let groups = groups(&trace);
        let others = groups.iter().find(|g| g.kind == GroupKind::Others).expect("folded threads");
        assert_eq!(others.lanes.len(), 3);
        assert!(others.title.starts_with("2 "), "{}", others.title);
        let tags = lane_kind_tags(&trace, &groups);
        assert_eq!(tags, ["OS", "on CPU", "OS"]);
        let labels = lane_labels(&trace, &groups);
        assert_eq!(labels[0], labels[1], "both rows of thread 11 name it");
    }

    #[test]
    fn metric_labels_drop_the_bracket_and_keep_the_unit() {
        assert_eq!(metric_label("DRAM Read Bandwidth [Throughput %]"), "DRAM Read Bandwidth %");
        assert_eq!(
            metric_label("Compute Warps in Flight [Avg Warps per Cycle]"),
            "Compute Warps in Flight Avg Warps per Cycle"
        );
        assert_eq!(metric_label("no unit"), "no unit");
        assert!(!metric_label("a\u{1b}[2Jb [MHz]").chars().any(char::is_control));
    }
}
