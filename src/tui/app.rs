//! UI state: the viewport, the cursor, lanes and focus, the selection, the mark,
//! panels, search and the gap threshold. Actions live in `actions.rs`.

use std::sync::{Arc, mpsc};

use ratatui::layout::Rect;

use crate::analysis::{Analysis, DeviceActivity, Gap};
use crate::model::{EventRef, Ns, Trace};

use super::details::{self, Details};
use super::index::{CellInfo, Index, bucket_edge};
use super::layout::{Areas, PanelShape};
use super::rows::{self, Group, GroupKind, Row};
use super::search::Search;
use super::theme::Theme;

/// The visible time window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct View {
    /// Time at the left edge.
    pub t0: Ns,
    /// Width of the window in ns.
    pub span: Ns,
}

/// What is selected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection {
    /// One event.
    Event(EventRef),
    /// One gap (index into `Analysis::gaps`).
    Gap(usize),
}

/// Columns of the phase table (sortable).
pub const PHASE_COLUMNS: [&str; 11] =
    ["phase", "n", "wall", "mean", "p95", "max", "GPU busy", "idle", "exposed copy", "starved", "H2D GB/s"];

/// A slide-in panel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Panel {
    /// Details of the selection.
    Details,
    /// Per-phase table.
    Phases {
        /// Highlighted row (in sorted order).
        sel: usize,
        /// Sort column (index into [`PHASE_COLUMNS`]).
        sort: usize,
        /// Descending order.
        desc: bool,
    },
    /// Gap list.
    Gaps {
        /// Highlighted row (in sorted order).
        sel: usize,
        /// Sorted by start instead of duration.
        by_start: bool,
    },
}

/// Gaps by device, for the per-cell "is there a gap here" test, and by duration.
#[derive(Debug, Clone, Default)]
pub struct GapIndex {
    /// Per device: (device, gap ids sorted by start).
    pub by_device: Vec<(u32, Vec<u32>)>,
    /// Gap ids, longest first.
    pub by_dur: Vec<u32>,
}

impl GapIndex {
    fn new(gaps: &[Gap]) -> Self {
        let mut by_device: Vec<(u32, Vec<u32>)> = Vec::new();
        for (i, g) in gaps.iter().enumerate() {
            match by_device.iter_mut().find(|(d, _)| *d == g.device) {
                Some((_, v)) => v.push(i as u32),
                None => by_device.push((g.device, vec![i as u32])),
            }
        }
        let mut by_dur: Vec<u32> = (0..gaps.len() as u32).collect();
        by_dur.sort_by_key(|&i| (std::cmp::Reverse(gaps[i as usize].dur()), gaps[i as usize].start));
        Self { by_device, by_dur }
    }

    /// The gap of `device` that overlaps `[a, b)`, if any (the first one).
    pub fn overlapping(&self, gaps: &[Gap], device: u32, a: Ns, b: Ns) -> Option<u32> {
        let (_, ids) = self.by_device.iter().find(|(d, _)| *d == device)?;
        let p = ids.partition_point(|&i| gaps[i as usize].end <= a);
        ids.get(p).copied().filter(|&i| gaps[i as usize].start < b)
    }
}

/// Gaps being recomputed on a worker thread for a new threshold.
#[derive(Debug)]
pub struct GapJob {
    /// The threshold asked for.
    pub min_gap_ns: Ns,
    rx: mpsc::Receiver<Vec<Gap>>,
}

/// The whole state of the viewer.
#[derive(Debug)]
pub struct App {
    pub(crate) trace: Arc<Trace>,
    // Moved out of `analysis` and shared with the thread that recomputes gaps.
    pub(crate) devices: Arc<Vec<DeviceActivity>>,
    pub(crate) analysis: Analysis,
    pub(crate) job: Option<GapJob>,
    pub(crate) index: Index,
    // Context switches by CPU, and per process with a CPU row: its tree's usable CPUs
    // and the tree's own switches by CPU.
    pub(crate) host: crate::analysis::host::HostIndex,
    pub(crate) cpu_rows: Vec<(u32, Vec<u32>, crate::analysis::host::HostIndex)>,
    pub(crate) title: String,
    pub(crate) demo: bool,
    pub(crate) theme: Theme,
    pub(crate) size: (u16, u16),
    pub(crate) view: View,
    pub(crate) cursor: Ns,
    pub(crate) groups: Vec<Group>,
    pub(crate) rows: Vec<Row>,
    pub(crate) lane_labels: Vec<String>,
    pub(crate) pinned: Vec<u32>,
    pub(crate) focus: usize,
    pub(crate) scroll: usize,
    pub(crate) selection: Option<Selection>,
    pub(crate) details: Option<Details>,
    pub(crate) mark: Option<Ns>,
    pub(crate) panel: Option<Panel>,
    pub(crate) help: Option<usize>,
    pub(crate) phase_order: Vec<usize>,
    pub(crate) search: Search,
    pub(crate) gap_index: GapIndex,
    pub(crate) message: Option<String>,
    pub(crate) quit: bool,
    pub(crate) suspend: bool,
}

impl App {
    /// Build the viewer state for a loaded trace, showing the whole trace on a
    /// `size` (columns, rows) terminal. Builds the render index (O(events)).
    pub fn new(trace: Trace, mut analysis: Analysis, size: (u16, u16)) -> Self {
        let devices = Arc::new(std::mem::take(&mut analysis.devices));
        let index = Index::build(&trace);
        let groups = rows::groups(&trace);
        let rows = rows::rows(&groups);
        let lane_labels = rows::lane_labels(&trace, &groups);
        let title = std::path::Path::new(&trace.meta.path)
            .file_name()
            .map_or_else(|| trace.meta.path.clone(), |n| n.to_string_lossy().into_owned());
        let gap_index = GapIndex::new(&analysis.gaps);
        let host = crate::analysis::host::HostIndex::build(&trace);
        let cpu_rows: Vec<_> = groups
            .iter()
            .filter_map(|g| match g.kind {
                GroupKind::Cpus { pid } => {
                    let tree = crate::analysis::host_cause::process_tree(&trace, pid);
                    let own = crate::analysis::host::HostIndex::build_for(&trace, |p| tree.contains(&p));
                    Some((pid, host.usable_cpus(&tree), own))
                }
                _ => None,
            })
            .collect();
        let mut groups = groups;
        for g in &mut groups {
            if let GroupKind::Cpus { pid } = g.kind {
                let n = cpu_rows.iter().find(|(p, _, _)| *p == pid).map_or(0, |(_, c, _)| c.len());
                g.title = format!("{n} {}", g.title);
            }
        }
        let mut app = Self {
            host,
            cpu_rows,
            title: super::text::clean(&title).into_owned(),
            demo: false,
            theme: Theme::from_env(),
            size,
            view: View { t0: 0, span: 1 },
            cursor: 0,
            groups,
            rows,
            lane_labels,
            pinned: Vec::new(),
            focus: 0,
            scroll: 0,
            selection: None,
            details: None,
            mark: None,
            panel: None,
            help: None,
            phase_order: Vec::new(),
            search: Search::default(),
            gap_index,
            message: None,
            quit: false,
            suspend: false,
            trace: Arc::new(trace),
            devices,
            analysis,
            job: None,
            index,
        };
        app.sort_phases(2, true);
        app.fit_all();
        app
    }

    /// Mark the trace as the embedded demo (shown in the header).
    pub fn set_demo(&mut self, demo: bool) {
        self.demo = demo;
    }

    /// Use `theme` instead of the one picked from the environment.
    pub fn set_theme(&mut self, theme: Theme) {
        self.theme = theme;
    }

    /// Tell the state the terminal size changed.
    pub fn resize(&mut self, size: (u16, u16)) {
        self.size = size;
        self.clamp_view();
        self.scroll_to_focus();
    }

    /// Terminal size the state is laid out for (columns, rows).
    pub fn size(&self) -> (u16, u16) {
        self.size
    }

    /// True once (each time) the user asked to suspend to the shell.
    pub fn take_suspend(&mut self) -> bool {
        std::mem::take(&mut self.suspend)
    }

    /// True once the user asked to quit.
    pub fn should_quit(&self) -> bool {
        self.quit
    }

    /// The trace being shown.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// The analysis being shown (its `devices` live in [`App::devices`]).
    pub fn analysis(&self) -> &Analysis {
        &self.analysis
    }

    /// Busy unions per GPU.
    pub fn devices(&self) -> &[DeviceActivity] {
        &self.devices
    }

    /// The selected gap, if a gap is selected.
    pub fn selected_gap(&self) -> Option<&Gap> {
        match self.selection {
            Some(Selection::Gap(i)) => self.analysis.gaps.get(i),
            _ => None,
        }
    }

    /// The selected event, if an event is selected.
    pub fn selected_event(&self) -> Option<EventRef> {
        match self.selection {
            Some(Selection::Event(r)) => Some(r),
            _ => None,
        }
    }

    /// The cursor time.
    pub fn cursor(&self) -> Ns {
        self.cursor
    }

    /// The timeline column of the cursor.
    pub fn cursor_column(&self) -> usize {
        self.cursor_col()
    }

    /// The status message of the last action, if any.
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// The visible window.
    pub fn view(&self) -> View {
        self.view
    }

    /// Heap bytes of the render index.
    pub fn index_bytes(&self) -> usize {
        self.index.heap_bytes()
    }

    /// Show `[t0, t0 + span)` and put the cursor in its middle.
    pub fn set_view(&mut self, t0: Ns, span: Ns) {
        self.view = View { t0, span };
        self.clamp_view();
        self.cursor = self.view.t0 + self.view.span / 2;
    }

    pub(crate) fn areas(&self) -> Areas {
        Areas::new(Rect::new(0, 0, self.size.0, self.size.1), self.panel_shape())
    }

    pub(crate) fn panel_shape(&self) -> PanelShape {
        match self.panel {
            None => PanelShape::None,
            Some(Panel::Details) => PanelShape::Text,
            Some(_) => PanelShape::Table,
        }
    }

    /// Time `t` relative to the first event of the trace (what every screen shows,
    /// like `lanescope report`).
    pub(crate) fn rel(&self, t: Ns) -> Ns {
        t - self.trace.meta.start_ns
    }

    /// Timeline columns at the current size.
    pub(crate) fn timeline_w(&self) -> usize {
        usize::from(self.areas().timeline_w()).max(1)
    }

    /// Nanoseconds per cell (at least 1).
    pub(crate) fn ns_per_cell(&self) -> Ns {
        (self.view.span / self.timeline_w() as Ns).max(1)
    }

    /// Bucket `[a, b)` of timeline column `col`.
    pub(crate) fn bucket(&self, col: usize) -> (Ns, Ns) {
        let w = self.timeline_w();
        (bucket_edge(self.view.t0, self.view.span, w, col), bucket_edge(self.view.t0, self.view.span, w, col + 1))
    }

    /// Column holding time `t`, if it is in view.
    pub(crate) fn col_of(&self, t: Ns) -> Option<usize> {
        if t < self.view.t0 || t >= self.view.t0 + self.view.span {
            return None;
        }
        let w = self.timeline_w() as i128;
        let c = (i128::from(t - self.view.t0) * w / i128::from(self.view.span)) as usize;
        // Integer edges: step back if t is left of the computed bucket.
        Some(if self.bucket(c).0 > t { c.saturating_sub(1) } else { c }.min(self.timeline_w() - 1))
    }

    pub(crate) fn cursor_col(&self) -> usize {
        self.col_of(self.cursor).unwrap_or(0)
    }

    pub(crate) fn min_span(&self) -> Ns {
        self.timeline_w() as Ns
    }

    pub(crate) fn max_span(&self) -> Ns {
        (self.trace.duration() * 2).max(self.min_span() * 2).max(1_000)
    }

    pub(crate) fn fit_all(&mut self) {
        let d = self.trace.duration().max(self.min_span());
        self.set_view(self.trace.meta.start_ns, d);
    }

    /// Keep the span within limits and the window near the trace.
    pub(crate) fn clamp_view(&mut self) {
        let (min, max) = (self.min_span(), self.max_span());
        let v = &mut self.view;
        v.span = v.span.clamp(min, max);
        let (s, e) = (self.trace.meta.start_ns, self.trace.meta.end_ns.max(self.trace.meta.start_ns));
        let lo = s - v.span / 2;
        let hi = (e - v.span / 2).max(lo);
        v.t0 = v.t0.clamp(lo, hi);
        let (a, b) = (v.t0, v.t0 + v.span - 1);
        self.cursor = self.cursor.clamp(a, b);
    }

    /// Show `[a, b)` over about 60% of the width, cursor in the middle.
    pub(crate) fn zoom_to(&mut self, a: Ns, b: Ns) {
        let len = (b - a).max(1);
        let span = (len * 5 / 3).max(self.min_span());
        self.set_view(a + len / 2 - span / 2, span);
        self.cursor = (a + len / 2).clamp(self.view.t0, self.view.t0 + self.view.span - 1);
    }

    /// Pan so that `t` is in view, keeping the zoom; centre it when it was off screen.
    pub(crate) fn reveal(&mut self, t: Ns) {
        if self.col_of(t).is_none() {
            self.view.t0 = t - self.view.span / 2;
            self.clamp_view();
        }
        self.cursor = t.clamp(self.view.t0, self.view.t0 + self.view.span - 1);
    }

    // ----- rows and focus -----

    /// All focusable rows: pinned lanes first, then the scrolling rows.
    pub(crate) fn row_at(&self, i: usize) -> Option<Row> {
        if i < self.pinned.len() {
            Some(Row::Lane(self.pinned[i]))
        } else {
            self.rows.get(i - self.pinned.len()).copied()
        }
    }

    pub(crate) fn row_count(&self) -> usize {
        self.pinned.len() + self.rows.len()
    }

    /// Rows visible in the scrolling part of the lane area.
    pub(crate) fn scroll_rows_h(&self) -> usize {
        let a = self.areas();
        let pinned = if self.pinned.is_empty() { 0 } else { self.pinned.len() + 1 };
        usize::from(a.lanes.height).saturating_sub(pinned).max(1)
    }

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

    pub(crate) fn rebuild_rows(&mut self) {
        let focused = self.row_at(self.focus);
        self.rows = rows::rows(&self.groups);
        if let Some(r) = focused {
            self.focus_row(r);
        }
        self.scroll_to_focus();
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
            self.rows = rows::rows(&self.groups);
        }
        self.focus_row(Row::Lane(lane));
        self.scroll_to_focus();
    }

    /// Group index of the GPU `device`.
    pub(crate) fn gpu_group(&self, device: u32) -> Option<usize> {
        self.groups.iter().position(|g| g.kind == GroupKind::Gpu(device))
    }

    /// Lanes behind the focused row (one lane, or a group's lanes).
    pub(crate) fn focused_lanes(&self) -> Vec<u32> {
        match self.row_at(self.focus) {
            Some(Row::Lane(l)) => vec![l],
            Some(Row::Group(g)) => self.groups[g].lanes.clone(),
            None => Vec::new(),
        }
    }

    // ----- selection -----

    pub(crate) fn select(&mut self, sel: Option<Selection>) {
        self.selection = sel;
        self.details = match sel {
            Some(Selection::Event(r)) => Some(details::event(&self.trace, r)),
            Some(Selection::Gap(i)) => Some(details::gap(&self.trace, &self.analysis, i)),
            None => None,
        };
    }

    /// The event of `lane` shown in the cursor's cell (the longest one there).
    pub(crate) fn event_at_cursor(&self, lane: u32) -> Option<EventRef> {
        let l = &self.trace.lanes[lane as usize];
        let (a, b) = self.bucket(self.cursor_col());
        let mut cells: Vec<CellInfo> = Vec::with_capacity(1);
        self.index.lanes[lane as usize].raster(&l.ev, a, (b - a).max(1), 1, None, &mut cells);
        let c = cells.first()?;
        (c.dom != CellInfo::NONE).then_some(EventRef { lane, idx: c.dom })
    }

    /// The gap under the cursor on `device`.
    pub(crate) fn gap_at_cursor(&self, device: u32) -> Option<usize> {
        let (a, b) = self.bucket(self.cursor_col());
        self.gap_index.overlapping(&self.analysis.gaps, device, a, b).map(|i| i as usize)
    }

    /// Start and end of the selection.
    pub(crate) fn selection_range(&self) -> Option<(Ns, Ns)> {
        match self.selection? {
            Selection::Event(r) => {
                let ev = &self.trace.lanes[r.lane as usize].ev;
                Some((ev.start[r.idx as usize], ev.end[r.idx as usize]))
            }
            Selection::Gap(i) => self.analysis.gaps.get(i).map(|g| (g.start, g.end)),
        }
    }

    // ----- gaps -----

    /// Recompute gaps with a new threshold (keys `>` and `<`) on a worker thread; the
    /// screen stays live and [`App::poll_jobs`] picks the result up.
    pub(crate) fn set_threshold(&mut self, min_gap_ns: Ns) {
        self.analysis.options.min_gap_ns = min_gap_ns;
        let (trace, devices, opts) =
            (Arc::clone(&self.trace), Arc::clone(&self.devices), self.analysis.options.clone());
        let windows = self.analysis.windows;
        let find = move || {
            let mut gaps = crate::analysis::find_gaps(&trace, &devices, &opts);
            for g in &mut gaps {
                g.window = windows.of(g.start, g.end);
            }
            gaps
        };
        let (tx, rx) = mpsc::channel();
        let spawned = std::thread::Builder::new().name("gaps".into()).spawn(move || {
            let _ = tx.send(find());
        });
        if spawned.is_ok() {
            self.job = Some(GapJob { min_gap_ns, rx });
        }
    }

    /// True while gaps are being recomputed.
    pub fn busy(&self) -> bool {
        self.job.is_some()
    }

    /// Take finished background results; returns true when the screen changed.
    pub fn poll_jobs(&mut self) -> bool {
        let Some(job) = &self.job else { return false };
        match job.rx.try_recv() {
            Ok(gaps) => {
                let current = job.min_gap_ns == self.threshold();
                self.job = None;
                if current {
                    self.set_gaps(gaps);
                    self.message = Some(format!(
                        "gap threshold {}: {} gaps",
                        super::text::dur(self.threshold()),
                        super::text::count(self.analysis.gaps.len() as u64)
                    ));
                } else {
                    // A newer threshold was asked for meanwhile.
                    self.set_threshold(self.threshold());
                }
                true
            }
            Err(mpsc::TryRecvError::Empty) => false,
            Err(mpsc::TryRecvError::Disconnected) => {
                self.job = None;
                self.message = Some("recomputing gaps failed".to_string());
                true
            }
        }
    }

    /// Wait for background work (tests and benches).
    pub fn finish_jobs(&mut self) {
        while self.busy() {
            if !self.poll_jobs() {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
    }

    fn set_gaps(&mut self, gaps: Vec<Gap>) {
        let selected = match self.selection {
            Some(Selection::Gap(i)) => self.analysis.gaps.get(i).map(|g| (g.device, g.start)),
            _ => None,
        };
        self.analysis.gaps = gaps;
        self.gap_index = GapIndex::new(&self.analysis.gaps);
        if let Some((d, s)) = selected {
            let keep = self.analysis.gaps.iter().position(|g| g.device == d && g.start <= s && s < g.end);
            self.select(keep.map(Selection::Gap));
        }
        if let Some(Panel::Gaps { sel, .. }) = &mut self.panel {
            *sel = (*sel).min(self.analysis.gaps.len().saturating_sub(1));
        }
    }

    /// Number of gaps and the threshold.
    pub(crate) fn threshold(&self) -> Ns {
        self.analysis.options.min_gap_ns
    }
}
