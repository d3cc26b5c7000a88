//! The two-run view of `lanescope diff BEFORE AFTER --view`: both runs stacked on one
//! time axis, each an [`App`] of its own (lanes, panels, selection, search), so every
//! key of the one-run viewer works on the focused run and nothing is duplicated.
//!
//! The pair owns what joins them: which run has the keys, the alignment (both at the
//! start of the same step instance, or each from its own start: `view::align`), the
//! shared zoom and pan (the other run's [`Viewport`](crate::view::viewport::Viewport) follows the
//! focused one, shifted by the difference of their origins), the per-phase delta
//! table (`delta.rs`) and the screen areas each run draws into (`App::slot`).
//! Drawing (`render.rs`) reuses the one-run renderers on those areas, so a frame
//! costs what two one-run frames cost: O(cells x log n) through each run's index.

mod delta;
mod render;

use ratatui::crossterm::event::{KeyEvent, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use crate::analysis::Analysis;
use crate::diff::{self, Diff};
use crate::model::{Ns, Trace};
use crate::view::align::{self, Align, RunSpan};

use super::app::App;
use super::input::{self, Action};
use super::layout::{Areas, MIN_SIZE};
use super::theme::Theme;

pub use render::draw as draw_pair;

use delta::DeltaTable;

/// Which run: 0 is BEFORE, 1 is AFTER.
pub(crate) const RUN_NAMES: [&str; 2] = ["before", "after"];

/// Where the pair's regions go.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PairAreas {
    /// True when the terminal is below [`MIN_SIZE`].
    pub too_small: bool,
    /// Title bar.
    pub header: Rect,
    /// The shared ruler.
    pub ruler: Rect,
    /// Each run's block: a title row, then its lanes.
    pub blocks: [Rect; 2],
    /// The panel under both blocks (the focused run's panel, else the delta table).
    pub panel: Option<Rect>,
    /// Status lines.
    pub status: Rect,
    /// The help overlay.
    pub help: Rect,
    /// Width of the label column.
    pub label_w: u16,
}

impl PairAreas {
    /// Lay a `size` screen out, with a panel under the blocks when `panel` is true.
    pub(crate) fn new(size: (u16, u16), panel: bool) -> Self {
        let one = Areas::new(Rect::new(0, 0, size.0, size.1), super::layout::PanelShape::None, false);
        if one.too_small {
            return Self { too_small: true, ..Self::default() };
        }
        let body = one.lanes;
        let ph = if panel { (body.height * 2 / 5).clamp(6, 14).min(body.height.saturating_sub(6)) } else { 0 };
        let top = body.height - ph;
        let first = Rect { height: top / 2, ..body };
        let second = Rect { y: body.y + top / 2, height: top - top / 2, ..body };
        Self {
            too_small: false,
            header: one.header,
            ruler: one.ruler,
            blocks: [first, second],
            panel: (ph > 0).then(|| Rect { y: body.y + top, height: ph, ..body }),
            status: one.status,
            help: one.help,
            label_w: one.label_w,
        }
    }

    /// The areas run `i` draws into; only the focused run gets the ruler and the panel.
    pub(crate) fn slot(&self, i: usize, focused: bool, own_panel: bool) -> Areas {
        let b = self.blocks[i];
        Areas {
            too_small: self.too_small,
            header: Rect { height: 1.min(b.height), ..b },
            ruler: if focused { self.ruler } else { Rect { height: 0, ..self.ruler } },
            lanes: Rect { y: b.y + 1, height: b.height.saturating_sub(1), ..b },
            findings: Rect { y: b.y + b.height, height: 0, ..b },
            label_w: self.label_w,
            panel: self.panel.filter(|_| focused && own_panel),
            status: self.status,
            help: self.help,
        }
    }
}

/// Both runs, the alignment and the delta table.
#[derive(Debug)]
pub struct Pair {
    pub(crate) runs: [App; 2],
    pub(crate) focus: usize,
    pub(crate) align: Align,
    // The instant of each run at the shared axis origin (its step start or first event).
    pub(crate) origins: [Ns; 2],
    // Each run's NVTX name of the step instance aligned on (`step 7`), sanitized.
    pub(crate) step_names: [String; 2],
    pub(crate) diff: Diff,
    pub(crate) delta: Option<DeltaTable>,
    pub(crate) size: (u16, u16),
}

impl Pair {
    /// Build the view of two loaded runs on a `size` terminal, aligned at the first
    /// steady step when both have a step phase. Builds each run's render index.
    pub fn new(before: (Trace, Analysis), after: (Trace, Analysis), size: (u16, u16)) -> Self {
        // The delta table lists the phases `diff` lists (a trace of 100,000 range names
        // would take minutes and gigabytes for all), always with the step phases.
        let steps = [before.1.step_phase.clone(), after.1.step_phase.clone()];
        let diff = diff::diff_listing(
            diff::Run { path: &before.0.meta.path, analysis: &before.1 },
            diff::Run { path: &after.0.meta.path, analysis: &after.1 },
            Some(diff::PHASES_LISTED),
            &|n| steps.iter().any(|s| s.as_deref() == Some(n)),
        );
        let runs = [App::new(before.0, before.1, size), App::new(after.0, after.1, size)];
        let mut pair = Self {
            runs,
            focus: 0,
            align: Align::Start,
            origins: [0, 0],
            step_names: Default::default(),
            diff,
            delta: None,
            size,
        };
        pair.align = align::first_step(pair.spans()).map_or(Align::Start, Align::Step);
        pair.relayout();
        pair.realign();
        pair
    }

    /// Use `theme` for both runs.
    pub fn set_theme(&mut self, theme: Theme) {
        for r in &mut self.runs {
            r.set_theme(theme);
        }
    }

    /// Run `i` (0 before, 1 after).
    pub fn run(&self, i: usize) -> &App {
        &self.runs[i]
    }

    /// The run that has the keys.
    pub fn focused(&self) -> usize {
        self.focus
    }

    /// The alignment.
    pub fn align(&self) -> Align {
        self.align
    }

    /// The comparison shown in the delta table.
    pub fn diff(&self) -> &Diff {
        &self.diff
    }

    /// True while the delta table shows.
    pub fn delta_open(&self) -> bool {
        self.delta.is_some()
    }

    /// Timeline column of run `i`'s time `t`, if in view.
    pub fn column(&self, i: usize, t: Ns) -> Option<usize> {
        self.runs[i].viewport.col_of(t)
    }

    /// Screen column of the timeline's first cell.
    pub fn timeline_x(&self) -> u16 {
        self.runs[self.focus].timeline_x()
    }

    /// Terminal size the state is laid out for.
    pub fn size(&self) -> (u16, u16) {
        self.size
    }

    /// Tell the state the terminal size changed.
    pub fn resize(&mut self, size: (u16, u16)) {
        self.size = size;
        for r in &mut self.runs {
            r.size = size;
        }
        self.relayout();
        self.sync();
    }

    /// True once the user asked to quit.
    pub fn should_quit(&self) -> bool {
        self.runs.iter().any(App::should_quit)
    }

    /// True once (each time) the user asked to suspend to the shell.
    pub fn take_suspend(&mut self) -> bool {
        let [a, b] = &mut self.runs;
        a.take_suspend() | b.take_suspend()
    }

    /// True while either run recomputes its gaps.
    pub fn busy(&self) -> bool {
        self.runs.iter().any(App::busy)
    }

    /// Take finished background results; true when the screen changed.
    pub fn poll_jobs(&mut self) -> bool {
        let [a, b] = &mut self.runs;
        a.poll_jobs() | b.poll_jobs()
    }

    /// Wait for background work (tests).
    pub fn finish_jobs(&mut self) {
        self.runs.iter_mut().for_each(App::finish_jobs);
    }

    /// Handle one key press: the pair's own keys, else the focused run's.
    pub fn handle_key(&mut self, key: KeyEvent) -> bool {
        let mode = self.runs[self.focus].mode();
        let own_panel = self.runs[self.focus].panel.is_some();
        let changed = if let Some(a) = input::pair_action(mode, &key) {
            self.runs[self.focus].message = None;
            self.apply(a);
            true
        } else if self.delta.is_some() && !own_panel && input::action(mode, &key) == Some(Action::Back) {
            // Esc closes the delta table before it quits.
            self.delta = None;
            true
        } else {
            self.runs[self.focus].handle_key(key)
        };
        self.relayout();
        self.sync();
        changed
    }

    /// Handle one mouse event: a press on the other run's block focuses it first.
    pub fn handle_mouse(&mut self, ev: MouseEvent) -> bool {
        let pa = self.areas();
        if pa.too_small {
            return false;
        }
        let at = Position { x: ev.column, y: ev.row };
        let on_delta = self.delta.is_some() && self.runs[self.focus].panel.is_none();
        if let Some(r) = pa.panel.filter(|r| on_delta && r.contains(at)) {
            return self.delta.as_mut().is_some_and(|d| d.on_mouse(ev.kind, r));
        }
        let other = 1 - self.focus;
        let helping = self.runs[self.focus].help.is_some();
        let over_other = !helping && pa.blocks[other].contains(at);
        let changed = match ev.kind {
            // A press on the other run's block moves the focus (and the keys) there.
            MouseEventKind::Down(_) if over_other => {
                self.focus = other;
                self.relayout();
                self.runs[self.focus].handle_mouse(ev);
                true
            }
            // The wheel over it zooms or pans both, around the pointer, focus unchanged.
            MouseEventKind::ScrollUp
            | MouseEventKind::ScrollDown
            | MouseEventKind::ScrollLeft
            | MouseEventKind::ScrollRight
                if over_other =>
            {
                let moved = self.runs[other].handle_mouse(ev);
                self.sync_from(other);
                moved
            }
            _ => self.runs[self.focus].handle_mouse(ev),
        };
        self.relayout();
        self.sync();
        changed
    }

    /// Apply one of the pair's own actions.
    pub fn apply(&mut self, action: Action) {
        let n = align::common_steps(self.spans());
        match action {
            Action::NextStep | Action::PrevStep => self.step_by(if action == Action::NextStep { 1 } else { -1 }, n),
            Action::ToggleAlign => self.toggle_align(n),
            Action::DeltaPanel if self.delta.is_some() => self.delta = None,
            Action::DeltaPanel => {
                // The focused run's own panel would cover the table: close it.
                self.runs[self.focus].panel = None;
                self.delta = Some(DeltaTable::new(&self.diff));
            }
            Action::SwitchRun => {
                self.focus = 1 - self.focus;
                self.say(format!("keys act on {}", self.label(self.focus)));
            }
            _ => {}
        }
    }

    fn label(&self, i: usize) -> String {
        format!("{} ({})", RUN_NAMES[i], self.runs[i].title)
    }

    fn say(&mut self, message: String) {
        self.runs[self.focus].message = Some(message);
    }

    fn step_by(&mut self, delta: isize, n: usize) {
        if n == 0 {
            return self.say(self.no_steps());
        }
        let k = match self.align {
            Align::Step(k) => k.saturating_add_signed(delta).min(n - 1),
            Align::Start => align::first_step(self.spans()).unwrap_or(0),
        };
        if self.align == Align::Step(k) {
            let edge = if delta > 0 { "last" } else { "first" };
            return self.say(format!("already at the {edge} step both runs have ({n})"));
        }
        self.align = Align::Step(k);
        self.realign();
    }

    fn toggle_align(&mut self, n: usize) {
        self.align = match self.align {
            Align::Step(_) => Align::Start,
            Align::Start if n == 0 => return self.say(self.no_steps()),
            Align::Start => Align::Step(align::first_step(self.spans()).unwrap_or(0)),
        };
        self.realign();
    }

    fn no_steps(&self) -> String {
        let missing = (0..2).find(|&i| self.runs[i].analysis.step_instances.is_empty()).unwrap_or(0);
        format!("no step phase in {}: each run shows from its own start", self.label(missing))
    }

    fn spans(&self) -> [RunSpan<'_>; 2] {
        [0, 1].map(|i| {
            let r = &self.runs[i];
            RunSpan { start: r.trace.meta.start_ns, end: r.trace.meta.end_ns, steps: &r.analysis.step_instances }
        })
    }

    // Put both runs on the axis for the alignment, and show it: the step, or everything.
    fn realign(&mut self) {
        let spans = self.spans();
        let origins = align::origins(self.align, spans);
        let extents = align::shared_extents(origins, spans);
        let window = match self.align {
            Align::Step(k) => Some(align::step_window(k, spans)),
            Align::Start => None,
        };
        let steps = align::common_steps(spans);
        self.origins = origins;
        for (r, &o) in self.runs.iter_mut().zip(&origins) {
            r.time_base = o;
        }
        if let Align::Step(k) = self.align {
            self.step_names = [0, 1].map(|i| {
                let r = &self.runs[i];
                let name = r.analysis.step_instances.get(k).and_then(|&range| range_name(&r.trace, range));
                name.unwrap_or_else(|| format!("step #{}", k + 1))
            });
        }
        for (r, (lo, hi)) in self.runs.iter_mut().zip(extents) {
            r.viewport.set_extent(lo, hi);
        }
        let origin = self.origins[self.focus];
        let vp = &mut self.runs[self.focus].viewport;
        match window {
            Some((off, span)) => {
                vp.set_view(origin.saturating_add(off), span);
                vp.cursor = origin.clamp(vp.view().t0, vp.view().end() - 1);
            }
            None => vp.fit_all(),
        }
        let message = match self.align {
            Align::Step(k) => {
                format!("both at the start of step {}/{steps}: {} · {}", k + 1, self.step_names[0], self.step_names[1])
            }
            Align::Start => "each run from its own start".to_string(),
        };
        self.say(message);
        self.sync();
    }

    // The other run shows the focused run's window, shifted by the difference of origins.
    fn sync(&mut self) {
        self.sync_from(self.focus);
    }

    // Run `f` leads: the other shows its window, shifted by the difference of origins.
    fn sync_from(&mut self, f: usize) {
        let shift = self.origins[1 - f].saturating_sub(self.origins[f]);
        let [a, b] = &mut self.runs;
        let (lead, follow) = if f == 0 { (a, b) } else { (b, a) };
        follow.viewport.follow(&lead.viewport, shift);
    }

    pub(crate) fn areas(&self) -> PairAreas {
        let own = self.runs[self.focus].panel.is_some();
        PairAreas::new(self.size, own || self.delta.is_some())
    }

    // Give each run its areas and lay it out there.
    fn relayout(&mut self) {
        let pa = self.areas();
        for i in 0..2 {
            let own = self.runs[i].panel.is_some();
            let slot = pa.slot(i, i == self.focus, own);
            let r = &mut self.runs[i];
            r.slot = Some(slot);
            if !pa.too_small {
                r.relayout();
            }
        }
    }
}

/// The sanitized name of the NVTX range `(start, end)`: binary searches per NVTX lane.
fn range_name(trace: &Trace, (start, end): (Ns, Ns)) -> Option<String> {
    use crate::model::LaneKind;
    trace.lanes.iter().filter(|l| matches!(l.kind, LaneKind::Nvtx { .. } | LaneKind::NvtxStartEnd { .. })).find_map(
        |l| {
            let ev = &l.ev;
            let i = ev.start.partition_point(|&t| t < start);
            (i < ev.len() && ev.start[i] == start && ev.end(i) == end)
                .then(|| crate::text::sanitize(trace.strings.get(ev.name[i])).into_owned())
        },
    )
}

/// Load both runs (`--step-phase` must name a range in each) and build the view.
pub(crate) fn load(
    paths: [&std::path::Path; 2],
    options: &crate::analysis::Options,
    progress: &crate::reader::Progress,
    stage: &std::sync::atomic::AtomicU8,
) -> anyhow::Result<Pair> {
    use anyhow::Context;
    use std::sync::atomic::Ordering;
    let mut loaded = Vec::with_capacity(2);
    for p in paths {
        stage.store(0, Ordering::Relaxed);
        let t = crate::reader::load_with_progress(p, progress).with_context(|| p.display().to_string())?;
        stage.store(1, Ordering::Relaxed);
        let a = crate::report::analysis_of(Some(p), &t, options);
        if let (Some(want), None) = (&options.step_phase, &a.step_phase) {
            anyhow::bail!("{}: no NVTX range named `{want}` (see the phases in `lanescope report`)", p.display());
        }
        loaded.push((t, a));
    }
    stage.store(2, Ordering::Relaxed);
    let after = loaded.pop().context("two runs")?;
    let before = loaded.pop().context("two runs")?;
    Ok(Pair::new(before, after, (MIN_SIZE.0, MIN_SIZE.1)))
}
