//! The viewer state, composed by concern: the loaded trace and its indexes, the
//! [`Viewport`] (time axis, cursor, mark), the [`LaneList`] (order, focus, collapse,
//! pins), the open [`Panel`] and the help and search overlays (each in its own file
//! under `panels/`), the selection and the background gap job. `actions.rs` maps
//! actions onto these; `mouse.rs` maps the mouse.

use std::sync::{Arc, mpsc};

use ratatui::layout::Rect;

use crate::analysis::host::HostIndex;
use crate::analysis::regap::{self, Change, GapFinder, Pool, TooMany};
use crate::analysis::{Analysis, DeviceActivity, Gap, Options};
use crate::model::{EventRef, Ns, Trace};

use super::input::{Facts, Mode};
use super::layout::{Areas, PanelShape};
use super::panels::{Context, Details, Help, Panel, Search, details};
use super::theme::Theme;
use crate::view::index::{CellInfo, Index, UnionDir};
use crate::view::rows::{self, GroupKind, LaneList};
use crate::view::viewport::{View, Viewport};

/// What is selected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Selection {
    /// One event.
    Event(EventRef),
    /// One gap (its index among the gaps at the current threshold, [`App::gaps`]).
    Gap(usize),
}

/// Gaps being recomputed on a worker thread for a new threshold: the change to the
/// gap pool, and the worker's milliseconds.
#[derive(Debug)]
pub(crate) struct GapJob {
    /// The threshold asked for.
    pub min_gap_ns: Ns,
    rx: mpsc::Receiver<(Result<Change, TooMany>, f64)>,
}

/// Per process with a CPU row: its tree's usable CPUs and the tree's own switches.
#[derive(Debug)]
pub(crate) struct CpuRow {
    /// Process id.
    pub pid: u32,
    /// CPUs the process tree may run on.
    pub cpus: Vec<u32>,
    /// The tree's own context switches by CPU.
    pub own: HostIndex,
}

/// A drag in progress on the ruler (mouse).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Drag {
    /// Where it started.
    pub from: Ns,
}

/// The whole state of the viewer.
#[derive(Debug)]
pub struct App {
    // Loaded data and indexes (fixed after load, except gaps on a new threshold).
    pub(crate) trace: Arc<Trace>,
    // Moved out of `analysis` and shared with the thread that recomputes gaps.
    pub(crate) devices: Arc<Vec<DeviceActivity>>,
    // Its gaps are moved into `gaps`.
    pub(crate) analysis: Analysis,
    pub(crate) index: Index,
    // Every gap explained so far, and those at the current threshold.
    pub(crate) gaps: Pool,
    // Longest gap per block of busy intervals (thresholds below any asked before).
    pub(crate) gap_finder: Arc<GapFinder>,
    // The most gaps a threshold may give ([`regap::MAX_GAPS`]; tests lower it).
    pub(crate) max_gaps: usize,
    // Per GPU (in `devices` order): time directories over its busy and kernel unions.
    pub(crate) gpu_dirs: Vec<(UnionDir, UnionDir)>,
    // Of the last threshold change: gaps explained, worker and apply milliseconds (bench).
    pub(crate) regap_stats: (usize, f64, f64),
    // Context switches by CPU, and the per-process CPU rows.
    pub(crate) host: Arc<HostIndex>,
    pub(crate) cpu_rows: Vec<CpuRow>,
    pub(crate) title: String,
    pub(crate) demo: bool,
    pub(crate) theme: Theme,
    pub(crate) size: (u16, u16),
    // One struct per concern.
    pub(crate) viewport: Viewport,
    pub(crate) lanes: LaneList,
    pub(crate) panel: Option<Panel>,
    pub(crate) help: Option<Help>,
    pub(crate) search: Search,
    pub(crate) selection: Option<Selection>,
    pub(crate) details: Option<Details>,
    pub(crate) drag: Option<Drag>,
    // The screen areas given by the two-run view (`tui::pair`); None: the whole screen.
    pub(crate) slot: Option<Areas>,
    // Where displayed times count from: the trace's first event, or in the two-run view
    // the instant both runs are aligned at (a step start), so their times compare.
    pub(crate) time_base: Ns,
    // Flags and feedback.
    pub(crate) job: Option<GapJob>,
    // The analysis still running on its thread ([`App::open`]); `analysis` is empty till then.
    pub(crate) pending: Pending,
    // Keys pressed meanwhile that need it, applied in order once it is in.
    pub(crate) deferred: Vec<ratatui::crossterm::event::KeyEvent>,
    pub(crate) message: Option<String>,
    pub(crate) quit: bool,
    pub(crate) suspend: bool,
}

fn cpu_rows(trace: &Trace, host: &HostIndex, groups: &mut [rows::Group]) -> Vec<CpuRow> {
    let out: Vec<CpuRow> = groups
        .iter()
        .filter_map(|g| match g.kind {
            GroupKind::Cpus { pid } => {
                let tree = crate::analysis::host_cause::process_tree(trace, pid);
                let own = HostIndex::build_for(trace, |p| tree.contains(&p));
                Some(CpuRow { pid, cpus: host.usable_cpus(&tree), own })
            }
            _ => None,
        })
        .collect();
    for g in groups {
        if let GroupKind::Cpus { pid } = g.kind {
            let n = out.iter().find(|r| r.pid == pid).map_or(0, |r| r.cpus.len());
            g.title = format!("{n} {}", g.title);
        }
    }
    out
}

/// The analysis of [`App::open`], while it is not in.
#[derive(Debug)]
pub(crate) enum Pending {
    /// None to wait for.
    None,
    /// To start at the next [`App::poll_jobs`] (after the first frame).
    Unstarted,
    /// Running on its thread.
    Running(mpsc::Receiver<Opened>),
}

/// What the analysis thread of [`App::open`] sends back.
#[derive(Debug)]
pub(crate) enum Opened {
    /// The analysis of the trace shown.
    Analysis(Analysis),
    /// The trace shown, its columns checked and copied out of the mapped cache entry
    /// (the same numbers, read faster), and its analysis.
    Owned(Box<Trace>, Analysis),
    /// The trace shown came from a damaged cache entry: the trace read again, its
    /// analysis, and the line that says so.
    Reloaded(Box<Trace>, Analysis, String),
    /// The trace shown came from a damaged cache entry and could not be read again: why.
    Failed(String),
}

// The analysis of `trace` once its columns pass their checks (a trace from the column
// cache is shown before they are read, [`crate::reader::load_unchecked`]); else the
// trace read again and its analysis.
// The analysis comes from the cache when it keeps one for these options.
fn checked_analysis(trace: &Trace, options: &Options) -> Opened {
    let path = std::path::Path::new(&trace.meta.path);
    let analyze = |t: &Trace| crate::report::analysis_of(Some(path), t, options);
    let Err(why) = trace.verify_columns() else {
        if !trace.is_mapped() {
            return Opened::Analysis(analyze(trace));
        }
        let mut owned = trace.clone();
        owned.own_columns();
        let a = analyze(&owned);
        return Opened::Owned(Box::new(owned), a);
    };
    match crate::reader::reload_damaged(path) {
        Ok((t, removed)) => {
            let removed = removed.map_or_else(String::new, |f| format!("; removed {}", f.display()));
            let said = format!("damaged cache entry ({why}){removed}; read the trace again");
            let a = analyze(&t);
            Opened::Reloaded(Box::new(t), a, super::text::sanitize(&said).into_owned())
        }
        Err(e) => Opened::Failed(
            super::text::sanitize(&format!("damaged cache entry ({why}), and reading the trace again failed: {e:#}"))
                .into_owned(),
        ),
    }
}

impl App {
    /// Build the viewer state for a loaded trace, showing the whole trace on a
    /// `size` (columns, rows) terminal. Builds the render index (O(events)).
    pub fn new(trace: Trace, analysis: Analysis, size: (u16, u16)) -> Self {
        let index = Index::build(&trace);
        Self::with_analysis(trace, index, analysis, size)
    }

    /// The same with the render index given (the bench times it apart).
    pub(crate) fn with_analysis(trace: Trace, index: Index, analysis: Analysis, size: (u16, u16)) -> Self {
        let mut app = Self::with_index(trace, index, size);
        app.install(analysis);
        app
    }

    /// The viewer state for a loaded trace and its render index (built, or read back
    /// from the cache), ready to draw at once: the analysis runs on a thread of its own
    /// and [`App::poll_jobs`] shows it when it is done. Until then the timeline shows
    /// the lanes, and the GPU rows, gaps and panels are empty.
    pub(crate) fn open(trace: Trace, index: Index, options: Options, size: (u16, u16)) -> Self {
        let mut app = Self::with_index(trace, index, size);
        app.analysis.options = options;
        app.pending = Pending::Unstarted;
        app
    }

    // Start the analysis of [`App::open`] on a thread of its own: after the first frame
    // ([`App::poll_jobs`]), so that the frame has the CPU, and the columns left in a
    // mapped cache entry are read (checked) only after it.
    fn start_analysis(&mut self) {
        let (tx, rx) = mpsc::channel();
        let (trace, options) = (Arc::clone(&self.trace), self.analysis.options.clone());
        let spawned = std::thread::Builder::new().name("analysis".into()).spawn(move || {
            let _ = tx.send(checked_analysis(&trace, &options));
        });
        if spawned.is_ok() {
            self.pending = Pending::Running(rx);
        } else {
            self.pending = Pending::None;
            let opened = checked_analysis(&self.trace, &self.analysis.options);
            self.take_opened(opened);
        }
    }

    // Take what the analysis thread sent in: the analysis, or a trace read again (its
    // cache entry was damaged) that replaces the one shown, or why there is none.
    fn take_opened(&mut self, opened: Opened) {
        match opened {
            Opened::Analysis(a) => self.install(a),
            Opened::Owned(trace, a) => {
                // The same trace: the lanes, index and view built on the shown one hold.
                self.trace = Arc::new(*trace);
                self.install(a);
            }
            Opened::Reloaded(trace, a, said) => {
                let index = Index::build(&trace);
                let mut fresh = Self::with_index(*trace, index, self.size);
                (fresh.theme, fresh.demo) = (self.theme, self.demo);
                fresh.deferred = std::mem::take(&mut self.deferred);
                *self = fresh;
                self.install(a);
                self.message = Some(said);
            }
            Opened::Failed(said) => {
                self.deferred.clear();
                self.message = Some(said);
            }
        }
    }

    // The state of a trace whose analysis is not there yet (an empty one).
    fn with_index(trace: Trace, index: Index, size: (u16, u16)) -> Self {
        let devices = Arc::new(Vec::new());
        let gap_finder = Arc::new(GapFinder::build(&devices));
        let analysis = Analysis::default();
        let gaps = Pool::new(Vec::new(), &devices, analysis.options.min_gap_ns);
        let groups = rows::groups(&trace);
        let lanes = LaneList::new(&trace, groups);
        let title = std::path::Path::new(&trace.meta.path)
            .file_name()
            .map_or_else(|| trace.meta.path.clone(), |n| n.to_string_lossy().into_owned());
        let mut viewport = Viewport::new(trace.meta.start_ns, trace.meta.end_ns, 1);
        viewport.set_grid(index.grid());
        let mut app = Self {
            host: Arc::clone(&analysis.host),
            cpu_rows: Vec::new(),
            title: super::text::sanitize(&title).into_owned(),
            demo: false,
            theme: Theme::from_env(),
            size,
            viewport,
            lanes,
            panel: None,
            help: None,
            search: Search::default(),
            selection: None,
            details: None,
            drag: None,
            slot: None,
            time_base: trace.meta.start_ns,
            gaps,
            message: None,
            quit: false,
            suspend: false,
            trace: Arc::new(trace),
            devices,
            analysis,
            job: None,
            pending: Pending::None,
            deferred: Vec::new(),
            index,
            gap_finder,
            max_gaps: regap::MAX_GAPS,
            gpu_dirs: Vec::new(),
            regap_stats: (0, 0.0, 0.0),
        };
        app.relayout();
        app.viewport.fit_all();
        app
    }

    // Take the analysis in: the GPU rows' unions, the gaps and their lookups, the CPU
    // rows (their titles count the usable CPUs), the findings' area, open panels.
    fn install(&mut self, mut analysis: Analysis) {
        self.devices = Arc::new(std::mem::take(&mut analysis.devices));
        self.gap_finder = Arc::new(GapFinder::build(&self.devices));
        self.gaps = Pool::new(std::mem::take(&mut analysis.gaps), &self.devices, analysis.options.min_gap_ns);
        self.gpu_dirs = self.devices.iter().map(|d| (UnionDir::build(&d.busy), UnionDir::build(&d.kernels))).collect();
        self.host = Arc::clone(&analysis.host);
        self.cpu_rows = cpu_rows(&self.trace, &self.host, &mut self.lanes.groups);
        self.analysis = analysis;
        self.relayout();
        // Details shown before carry no correlation lookups: show them again.
        if self.details.is_some() {
            self.select(self.selection);
        }
        if let Some(mut p) = self.panel.take() {
            p.gaps_changed(&self.panel_context());
            self.panel = Some(p);
        }
    }

    /// True while the analysis of [`App::open`] still runs.
    pub fn analysing(&self) -> bool {
        !matches!(self.pending, Pending::None)
    }

    // The analysis, once its thread is done; true when it came in.
    fn poll_analysis(&mut self) -> bool {
        if let Pending::Unstarted = self.pending {
            self.start_analysis();
        }
        let Pending::Running(rx) = &self.pending else { return false };
        match rx.try_recv() {
            Ok(opened) => {
                self.pending = Pending::None;
                if self.message.as_deref().is_some_and(|m| m.starts_with("analysing")) {
                    self.message = None;
                }
                self.take_opened(opened);
                for key in std::mem::take(&mut self.deferred) {
                    self.handle_key(key);
                }
                true
            }
            Err(mpsc::TryRecvError::Empty) => false,
            Err(mpsc::TryRecvError::Disconnected) => {
                self.pending = Pending::None;
                self.deferred.clear();
                self.message = Some("the analysis failed: the timeline shows the events alone".to_string());
                true
            }
        }
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
        self.relayout();
    }

    /// Lay the viewport and the lane list out for the current size and panel.
    pub(crate) fn relayout(&mut self) {
        let a = self.areas();
        self.viewport.set_width(usize::from(a.timeline_w()));
        self.lanes.set_height(usize::from(a.lanes.height));
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

    /// The analysis being shown (its `devices` live in [`App::devices`], its `gaps`
    /// in [`App::gaps`]).
    pub fn analysis(&self) -> &Analysis {
        &self.analysis
    }

    /// The gaps at the current threshold, in start order.
    pub fn gaps(&self) -> impl ExactSizeIterator<Item = &Gap> + '_ {
        self.gaps.iter()
    }

    /// Busy unions per GPU.
    pub fn devices(&self) -> &[DeviceActivity] {
        &self.devices
    }

    /// The selected gap, if a gap is selected.
    pub fn selected_gap(&self) -> Option<&Gap> {
        match self.selection {
            Some(Selection::Gap(i)) => self.gaps.get(i),
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
        self.viewport.cursor
    }

    /// The mark, when set.
    pub fn mark(&self) -> Option<Ns> {
        self.viewport.mark
    }

    /// The timeline column of the cursor.
    pub fn cursor_column(&self) -> usize {
        self.viewport.cursor_col()
    }

    /// The status message of the last action, if any.
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// The visible window.
    pub fn view(&self) -> View {
        self.viewport.view()
    }

    /// Screen column of the timeline's first cell (mouse tests aim with it).
    pub fn timeline_x(&self) -> u16 {
        self.areas().timeline_x()
    }

    /// True while the help is open.
    pub fn help_open(&self) -> bool {
        self.help.is_some()
    }

    /// Heap bytes of the render index and the viewer's gap and busy-time lookups (the
    /// correlation lookups are the analysis's, [`Analysis::lookups`]).
    pub fn index_bytes(&self) -> usize {
        self.index.heap_bytes()
            + self.gap_finder.heap_bytes()
            + self.gpu_dirs.iter().map(|(a, b)| a.heap_bytes() + b.heap_bytes()).sum::<usize>()
    }

    /// Heap bytes of the lanes' time directories alone (part of [`App::index_bytes`]).
    pub fn directory_bytes(&self) -> usize {
        self.index.lanes.iter().map(crate::view::index::LaneIndex::dir_bytes).sum::<usize>()
            + self.gpu_dirs.iter().map(|(a, b)| a.heap_bytes() + b.heap_bytes()).sum::<usize>()
    }

    /// Show `[t0, t0 + span)` and put the cursor in its middle.
    pub fn set_view(&mut self, t0: Ns, span: Ns) {
        self.viewport.set_view(t0, span);
    }

    /// Where keys go now: the one place the mode is decided.
    pub fn mode(&self) -> Mode {
        if self.search.input.is_some() {
            Mode::Search
        } else if self.help.is_some() {
            Mode::Help
        } else {
            self.panel.as_ref().map_or(Mode::Timeline, Panel::mode)
        }
    }

    /// Facts that decide the status-line hints.
    pub(crate) fn facts(&self) -> Facts {
        Facts {
            event_selected: matches!(self.selection, Some(Selection::Event(_))),
            search_active: self.search.active(),
            steady: self.steady().is_some(),
            pair: self.slot.is_some(),
            metrics: self.lanes.has_more_metrics(),
        }
    }

    /// The steady-state window, when the trace has steps (NVTX, profiler or inferred).
    pub(crate) fn steady(&self) -> Option<(Ns, Ns)> {
        let w = self.analysis.windows;
        (self.analysis.steps.count > 0 && w.steady_end > w.steady_start).then_some((w.steady_start, w.steady_end))
    }

    pub(crate) fn areas(&self) -> Areas {
        if let Some(a) = self.slot {
            return a;
        }
        Areas::new(Rect::new(0, 0, self.size.0, self.size.1), self.panel_shape(), !self.analysis.findings.is_empty())
    }

    pub(crate) fn panel_shape(&self) -> PanelShape {
        self.panel.as_ref().map_or(PanelShape::None, Panel::shape)
    }

    /// The app as panels see it.
    pub(crate) fn panel_context(&self) -> Context<'_> {
        Context {
            analysis: &self.analysis,
            devices: &self.devices,
            gaps: &self.gaps,
            threshold: self.threshold(),
            selected_gap: if let Some(Selection::Gap(i)) = self.selection { Some(i) } else { None },
            details: self.details.as_ref(),
            time_base: self.time_base,
            theme: self.theme,
            help_inner: self.areas().help_inner(),
        }
    }

    /// Time `t` as every screen shows it: since the first event of the trace, like
    /// `lanescope report`, or in the two-run view since the aligned step's start.
    pub(crate) fn rel(&self, t: Ns) -> Ns {
        t.saturating_sub(self.time_base)
    }

    // ----- selection -----

    pub(crate) fn select(&mut self, sel: Option<Selection>) {
        self.selection = sel;
        self.details = match sel {
            Some(Selection::Event(r)) => Some(details::event(&self.trace, &self.analysis.lookups, r)),
            Some(Selection::Gap(i)) => {
                self.gaps.get(i).map(|g| details::gap(&self.trace, &self.analysis, g, (i, self.gaps.len())))
            }
            None => None,
        };
    }

    /// The event of `lane` shown in column `col` (the longest one there).
    pub(crate) fn event_at(&self, lane: u32, col: usize) -> Option<EventRef> {
        let l = &self.trace.lanes[lane as usize];
        let (a, b) = self.viewport.bucket(col);
        let mut cells: Vec<CellInfo> = Vec::with_capacity(1);
        self.index.lanes[lane as usize].raster(&l.ev, a, (b - a).max(1), 1, None, &mut cells);
        let c = cells.first()?;
        (c.dom != CellInfo::NONE).then_some(EventRef { lane, idx: c.dom })
    }

    /// The gap of `device` in column `col`.
    pub(crate) fn gap_at(&self, device: u32, col: usize) -> Option<usize> {
        let (a, b) = self.viewport.bucket(col);
        self.gaps.overlapping(device, a, b).map(|i| i as usize)
    }

    /// Start and end of the selection.
    pub(crate) fn selection_range(&self) -> Option<(Ns, Ns)> {
        match self.selection? {
            Selection::Event(r) => {
                let ev = &self.trace.lanes[r.lane as usize].ev;
                Some((ev.start[r.idx as usize], ev.end(r.idx as usize)))
            }
            Selection::Gap(i) => self.gaps.get(i).map(|g| (g.start, g.end)),
        }
    }

    // ----- gaps -----

    /// Recompute gaps with a new threshold (keys `>` and `<`) on a worker thread; the
    /// screen stays live and [`App::poll_jobs`] picks the result up. Only gaps that are
    /// new or whose explanation changed are explained ([`regap`]).
    pub(crate) fn set_threshold(&mut self, min_gap_ns: Ns) {
        if self.analysing() {
            self.message = Some("still analysing: the gap threshold can change once it is done".to_string());
            return;
        }
        self.analysis.options.min_gap_ns = min_gap_ns;
        let inputs = regap::Inputs {
            trace: Arc::clone(&self.trace),
            devices: Arc::clone(&self.devices),
            options: self.analysis.options.clone(),
            host: Arc::clone(&self.analysis.host),
            lookups: Arc::clone(&self.analysis.lookups),
            windows: self.analysis.windows,
            finder: Arc::clone(&self.gap_finder),
            max_gaps: self.max_gaps,
        };
        let job = self.gaps.job(inputs);
        let (tx, rx) = mpsc::channel();
        let spawned = std::thread::Builder::new().name("gaps".into()).spawn(move || {
            let t = std::time::Instant::now();
            // `run` releases its share of the pool's lists before the result is sent, so
            // taking it in changes them in place.
            let change = job.run();
            let _ = tx.send((change, t.elapsed().as_secs_f64() * 1e3));
        });
        if spawned.is_ok() {
            self.job = Some(GapJob { min_gap_ns, rx });
        }
    }

    /// True while a search is still looking for matches.
    pub fn searching(&self) -> bool {
        self.search.running()
    }

    /// True while the analysis runs, gaps are being recomputed or a search runs.
    pub fn busy(&self) -> bool {
        self.analysing() || self.job.is_some() || self.searching()
    }

    /// Take finished background results; returns true when the screen changed.
    pub fn poll_jobs(&mut self) -> bool {
        let analysed = self.poll_analysis();
        let searched = self.poll_search();
        analysed | searched | self.poll_gaps()
    }

    // Matches of a running search: the first ones select the next match, as a search
    // that ran at once would.
    fn poll_search(&mut self) -> bool {
        let (first, before) = (self.search.total == 0, self.search.running());
        if !self.search.poll() {
            return false;
        }
        if first && self.search.total > 0 {
            self.next_match(false);
        }
        if before && !self.search.running() {
            let q = super::text::sanitize(&self.search.query).into_owned();
            self.message = Some(if self.search.total == 0 {
                format!("no event name contains \"{q}\"")
            } else {
                format!("\"{q}\": {} matches", super::text::fmt_count(self.search.total as u64))
            });
        }
        true
    }

    fn poll_gaps(&mut self) -> bool {
        let Some(job) = &self.job else { return false };
        let (result, worker_ms) = match job.rx.try_recv() {
            Ok(r) => r,
            Err(mpsc::TryRecvError::Empty) => return false,
            Err(mpsc::TryRecvError::Disconnected) => {
                self.job = None;
                self.analysis.options.min_gap_ns = self.gaps.threshold();
                self.message = Some("recomputing gaps failed".to_string());
                return true;
            }
        };
        let current = job.min_gap_ns == self.threshold();
        self.job = None;
        if !current {
            // A newer threshold was asked for meanwhile.
            self.set_threshold(self.threshold());
            return true;
        }
        match result {
            Ok(change) => self.take_gaps(change, worker_ms),
            Err(too_many) => {
                let kept = self.gaps.threshold();
                self.analysis.options.min_gap_ns = kept;
                self.message = Some(format!(
                    "gaps ≥ {} are over {}, more than the viewer explains: the threshold stays {}",
                    super::text::fmt_ns(too_many.min),
                    super::text::fmt_count(too_many.limit as u64),
                    super::text::fmt_ns(kept)
                ));
            }
        }
        true
    }

    fn take_gaps(&mut self, change: Change, worker_ms: f64) {
        let selected = match self.selection {
            Some(Selection::Gap(i)) => self.gaps.get(i).map(|g| (g.device, g.start)),
            _ => None,
        };
        let t = std::time::Instant::now();
        let explained = change.explained;
        self.gaps.apply(change);
        self.gaps_changed(selected);
        self.regap_stats = (explained, worker_ms, t.elapsed().as_secs_f64() * 1e3);
        self.message = Some(format!(
            "gap threshold {}: {} gaps",
            super::text::fmt_ns(self.threshold()),
            super::text::fmt_count(self.gaps.len() as u64)
        ));
    }

    /// Wait for background work (tests and benches).
    pub fn finish_jobs(&mut self) {
        while self.busy() {
            if !self.poll_jobs() {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        }
    }

    // `selected`: (device, start) of the gap selected before; the new gap holding that
    // instant stays selected.
    fn gaps_changed(&mut self, selected: Option<(u32, Ns)>) {
        if let Some((d, s)) = selected {
            // Gaps of one GPU are disjoint: only its last one starting at or before `s` can hold it.
            let gaps = &self.gaps;
            let p = gaps.partition_point(|start, _| start <= s);
            let keep = (0..p)
                .rev()
                .find(|&i| gaps.get(i).is_some_and(|g| g.device == d))
                .filter(|&i| gaps.get(i).is_some_and(|g| s < g.end));
            self.select(keep.map(Selection::Gap));
        }
        if let Some(mut p) = self.panel.take() {
            p.gaps_changed(&self.panel_context());
            self.panel = Some(p);
        }
    }

    /// The gap threshold.
    pub(crate) fn threshold(&self) -> Ns {
        self.analysis.options.min_gap_ns
    }
}
