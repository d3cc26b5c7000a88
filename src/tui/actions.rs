//! Dispatch: each [`Action`] mapped onto the state that owns it (viewport, lane
//! list, panels, overlays), plus the actions that join several (selection, jumps,
//! gap stepping, search).

use ratatui::crossterm::event::KeyEvent;

use crate::model::{EventRef, LaneKind, Ns, Trace};

use super::app::{App, Selection};
use super::input::{self, Action, Mode};
use super::panels::{Effect, Help, Panel, Search};
use super::text;
use crate::view::rows::{GroupKind, Row};

/// Threshold limits for `>` and `<`.
const MIN_THRESHOLD: Ns = 1_000;
const MAX_THRESHOLD: Ns = 100_000_000_000;

/// The next (or previous, when `back`) row after `here` = (start, lane, row) among `lanes`;
/// `rows(lane)` restricts a lane to some rows (sorted), `None` means all rows.
pub(crate) fn step<'a>(
    trace: &Trace,
    lanes: impl Iterator<Item = (u32, Option<&'a [u32]>)>,
    here: (Ns, u32, u32),
    back: bool,
) -> Option<EventRef> {
    let mut best: Option<((Ns, u32, u32), EventRef)> = None;
    for (lane, rows) in lanes {
        let ev = &trace.lanes[lane as usize].ev;
        let n = rows.map_or(ev.len(), <[u32]>::len);
        let row = |k: usize| rows.map_or(k as u32, |r| r[k]);
        let key = |k: usize| (ev.start[row(k) as usize], lane, row(k));
        // first k with key(k) > here (forward) or >= here (back)
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = usize::midpoint(lo, hi);
            let before = if back { key(mid) < here } else { key(mid) <= here };
            if before { lo = mid + 1 } else { hi = mid }
        }
        let cand = if back { lo.checked_sub(1) } else { (lo < n).then_some(lo) };
        if let Some(k) = cand {
            let better = best.is_none_or(|(bk, _)| if back { key(k) > bk } else { key(k) < bk });
            if better {
                best = Some((key(k), EventRef { lane, idx: row(k) }));
            }
        }
    }
    best.map(|b| b.1)
}

impl App {
    /// Handle one key press; returns true when the screen must be redrawn.
    pub fn handle_key(&mut self, key: KeyEvent) -> bool {
        let had_message = self.message.take().is_some();
        let mode = self.mode();
        if mode == Mode::Search {
            let (run, quit) = self.search.on_key(&key);
            self.quit |= quit;
            if let Some(q) = run {
                self.run_search(&q);
            }
            return true;
        }
        match input::action(mode, &key) {
            // Kept for when the analysis is in: `]` pressed on the first frame still
            // selects the first gap, a moment later.
            Some(a) if self.analysing() && a.needs_analysis() => {
                self.deferred.push(key);
                self.message = Some("analysing… the key takes effect when it is done".to_string());
                true
            }
            Some(a) => {
                self.apply(a);
                true
            }
            None => had_message,
        }
    }

    fn run_search(&mut self, q: &str) {
        if q.is_empty() {
            self.search = Search::default();
            return;
        }
        self.search = Search::start(&self.trace, q);
        if self.search.running() {
            self.message = Some(format!("searching \"{}\"…", text::sanitize(q)));
        } else if self.search.total == 0 {
            self.message = Some(format!("no event name contains \"{}\"", text::sanitize(q)));
        } else {
            self.next_match(false);
        }
    }

    /// Apply one action.
    pub fn apply(&mut self, action: Action) {
        let vp = &mut self.viewport;
        match action {
            Action::ZoomIn => vp.zoom(1, 2),
            Action::ZoomOut => vp.zoom(2, 1),
            Action::PanLeft => vp.pan_eighths(-1),
            Action::PanRight => vp.pan_eighths(1),
            Action::PageLeft => vp.pan_screens(-1),
            Action::PageRight => vp.pan_screens(1),
            Action::CursorLeft => vp.move_cursor(-1),
            Action::CursorRight => vp.move_cursor(1),
            Action::FitAll => vp.fit_all(),
            Action::ViewEnd => vp.view_end(),
            Action::FitSelection => self.fit_selection(),
            Action::FitSteady => self.fit_steady(),
            Action::Mark => vp.toggle_mark(),
            Action::LaneUp => self.lanes.move_focus(-1),
            Action::LaneDown => self.lanes.move_focus(1),
            Action::LanePageUp => self.lanes.move_focus(-(self.lanes.scroll_rows_h() as isize)),
            Action::LanePageDown => self.lanes.move_focus(self.lanes.scroll_rows_h() as isize),
            Action::ToggleGroup => self.lanes.toggle_group(),
            Action::ToggleAllGroups => self.lanes.toggle_all(),
            Action::Pin => {
                if let Err(m) = self.lanes.toggle_pin() {
                    self.message = Some(m.to_string());
                }
            }
            Action::ToggleMetrics => self.toggle_metrics(),
            Action::NextEvent => self.step_event(false),
            Action::PrevEvent => self.step_event(true),
            Action::Select => self.select_at(self.viewport.cursor_col()),
            Action::Jump => self.jump(),
            Action::NextGap => self.step_gap(false),
            Action::PrevGap => self.step_gap(true),
            Action::NextRank => {
                let trace = std::sync::Arc::clone(&self.trace);
                self.message = Some(match self.lanes.focus_next_rank(&trace) {
                    Some(r) => format!("rank {r}"),
                    None => "one rank in this trace".to_string(),
                });
            }
            Action::ThresholdUp => self.change_threshold(2, 1),
            Action::ThresholdDown => self.change_threshold(1, 2),
            Action::Details | Action::GapList | Action::Phases | Action::Steps => self.toggle_panel(action),
            Action::Search => self.search.open_prompt(),
            Action::NextMatch => self.next_match(false),
            Action::PrevMatch => self.next_match(true),
            Action::Help => self.help = if self.help.is_some() { None } else { Some(Help::default()) },
            Action::Back => self.back(),
            Action::Quit => self.quit = true,
            Action::Suspend => self.suspend = true,
            Action::ListUp
            | Action::ListDown
            | Action::ListPageUp
            | Action::ListPageDown
            | Action::ListTop
            | Action::ListBottom
            | Action::ListEnter
            | Action::SortNext
            | Action::SortReverse
            | Action::SortColumn(_) => self.list_action(action),
            // The search prompt handles these itself (`Search::on_key`), the two-run view
            // the others (`tui::pair`): one run has nothing to do.
            Action::SearchRun
            | Action::SearchCancel
            | Action::SearchClear
            | Action::SearchBackspace
            | Action::NextStep
            | Action::PrevStep
            | Action::ToggleAlign
            | Action::DeltaPanel
            | Action::SwitchRun => {}
        }
        self.relayout();
    }

    // Open the panel `action` names, or close it when it is the one open.
    fn toggle_panel(&mut self, action: Action) {
        let Some(new) = Panel::for_action(action, &self.panel_context()) else { return };
        let same = self.panel.as_ref().is_some_and(|p| p.same_kind(&new));
        self.panel = if same { None } else { Some(new) };
    }

    // Esc steps back one layer and never quits: reopening a large trace takes seconds, and
    // the findings box at the bottom reads like a dialog that Esc would close.
    fn back(&mut self) {
        if self.help.is_some() {
            self.help = None;
        } else if self.panel.is_some() {
            self.panel = None;
        } else if self.selection.is_some() {
            self.select(None);
        } else if self.viewport.mark.is_some() {
            self.viewport.mark = None;
        } else {
            self.message = Some("q quits".to_string());
        }
    }

    // List keys go to the help when it is open, else to the open panel.
    fn list_action(&mut self, action: Action) {
        if let Some(mut h) = self.help.take() {
            h.on_action(action, &self.panel_context());
            self.help = Some(h);
            return;
        }
        if let Some(mut p) = self.panel.take() {
            let effect = p.on_action(action, &self.panel_context());
            self.panel = Some(p);
            self.run_effect(effect);
        }
    }

    /// Carry out what a panel asked for.
    pub(crate) fn run_effect(&mut self, effect: Effect) {
        match effect {
            Effect::None => {}
            Effect::ShowGap(i) => self.show_gap(i),
            Effect::ZoomTo(a, b, message) => {
                self.viewport.zoom_to(a, b);
                self.message = Some(message);
            }
        }
    }

    fn fit_selection(&mut self) {
        let vp = &self.viewport;
        let range = self.selection_range().or_else(|| vp.mark.map(|m| (m.min(vp.cursor), m.max(vp.cursor))));
        match range {
            Some((a, b)) => self.viewport.fit_range(a, b),
            None => self.message = Some("nothing selected: Enter selects, m sets a mark".to_string()),
        }
    }

    fn fit_steady(&mut self) {
        match self.steady() {
            Some((a, b)) => {
                self.viewport.fit_range(a, b);
                let what = match &self.analysis.step_phase {
                    Some(name) => format!("`{}`", text::sanitize(name)),
                    None => "inferred steps".to_string(),
                };
                self.message = Some(format!("steady state: {what} after the first, {}", text::fmt_ns(b - a)));
            }
            None => {
                self.message =
                    Some("no steps in this trace: no NVTX range marks them and no kernel sequence repeats".to_string());
            }
        }
    }

    fn toggle_metrics(&mut self) {
        if !self.lanes.has_more_metrics() {
            self.message = Some(if self.trace.counters.is_empty() {
                "no GPU metrics in this trace: nsys profile --gpu-metrics-devices=all samples them".to_string()
            } else {
                "no GPU metrics here beyond PCIe RX, TX and SMs Active".to_string()
            });
            return;
        }
        self.lanes.toggle_metrics();
        self.message = Some(
            if self.lanes.all_metrics {
                "every GPU metric shown (M: key ones only)"
            } else {
                "key GPU metrics only (M: all)"
            }
            .to_string(),
        );
    }

    fn here(&self, back: bool) -> (Ns, u32, u32) {
        match self.selection {
            Some(Selection::Event(r)) => (self.trace.lanes[r.lane as usize].ev.start[r.idx as usize], r.lane, r.idx),
            _ if back => (self.viewport.cursor, u32::MAX, u32::MAX),
            _ => (self.viewport.cursor, 0, 0),
        }
    }

    fn show_event(&mut self, r: EventRef, focus: bool) {
        self.select(Some(Selection::Event(r)));
        if focus {
            self.lanes.focus_lane(r.lane);
        }
        let ev = &self.trace.lanes[r.lane as usize].ev;
        self.viewport.reveal(ev.start[r.idx as usize]);
    }

    fn step_event(&mut self, back: bool) {
        let lanes = self.lanes.focused_lanes();
        let here = self.here(back);
        match step(&self.trace, lanes.iter().map(|&l| (l, None)), here, back) {
            Some(r) => self.show_event(r, false),
            None => self.message = Some(format!("no {} event in this lane", if back { "earlier" } else { "later" })),
        }
    }

    /// Select what the focused row shows in column `col` (a gap on a GPU row, else the
    /// longest event) and open the details.
    pub(crate) fn select_at(&mut self, col: usize) {
        let focused = self.lanes.focused();
        // A GPU's header and its metric rows select the gap there.
        if let Some(r @ (Row::Group(_) | Row::Metric(_))) = focused
            && let Some(g) = self.lanes.group_of(r)
            && let GroupKind::Gpu(d) = self.lanes.groups[g].kind
            && let Some(i) = self.gap_at(d, col)
        {
            self.select(Some(Selection::Gap(i)));
            self.panel = Some(Panel::Details);
            return;
        }
        if let Some(Row::Metric(_)) = focused {
            self.message = Some("a metric row: select a copy or a gap to see the metrics over it".to_string());
            return;
        }
        let lanes = self.lanes.focused_lanes();
        let best = lanes
            .iter()
            .filter_map(|&l| self.event_at(l, col))
            .max_by_key(|r| (self.trace.lanes[r.lane as usize].ev.dur(r.idx as usize), std::cmp::Reverse(r.lane)));
        match best {
            Some(r) => {
                self.select(Some(Selection::Event(r)));
                self.panel = Some(Panel::Details);
            }
            None => self.message = Some("nothing under the cursor here: Tab steps to the next event".to_string()),
        }
    }

    fn jump(&mut self) {
        let Some(Selection::Event(r)) = self.selection else {
            self.message = Some("select a GPU operation or a CUDA call first (Enter)".to_string());
            return;
        };
        let lane = &self.trace.lanes[r.lane as usize];
        let corr = lane.ev.corr(r.idx as usize);
        let target = if lane.kind.is_gpu_work() {
            self.analysis.lookups.api_call_at(&self.trace, lane.pid, corr)
        } else if matches!(lane.kind, LaneKind::CudaApi { .. }) {
            self.analysis.lookups.gpu_op_at(&self.trace, lane.pid, corr)
        } else {
            self.message = Some("c works on GPU operations and CUDA calls".to_string());
            return;
        };
        match target {
            Some(t) => self.show_event(t, true),
            None if lane.kind.is_gpu_work() => {
                self.message = Some("no API call recorded for this operation".to_string());
            }
            None => self.message = Some("this call launched no GPU operation".to_string()),
        }
    }

    /// Select gap `i`, zoom to it and focus its GPU.
    pub(crate) fn show_gap(&mut self, i: usize) {
        let Some(g) = self.gaps.get(i) else { return };
        let (start, end, device) = (g.start, g.end, g.device);
        self.select(Some(Selection::Gap(i)));
        self.viewport.zoom_to(start, end);
        if let Some(g) = self.lanes.gpu_group(device) {
            self.lanes.focus_row(Row::Group(g));
        }
    }

    fn step_gap(&mut self, back: bool) {
        let gaps = &self.gaps;
        let v = self.viewport.view();
        let (v0, v1) = (v.t0, v.end());
        // Step from the selected gap while it is on screen, else from the screen's edge:
        // `]` on a fresh view goes to the first gap in sight.
        let selected = match self.selection {
            Some(Selection::Gap(i)) => gaps.get(i).filter(|g| g.start < v1 && g.end > v0).map(|_| i),
            _ => None,
        };
        let next = match selected {
            Some(i) if back => i.checked_sub(1),
            Some(i) => Some(i + 1).filter(|&j| j < gaps.len()),
            None if back => gaps.partition_point(|s, _| s < v1).checked_sub(1),
            None => Some(gaps.partition_point(|_, e| e <= v0)).filter(|&j| j < gaps.len()),
        };
        match next {
            Some(i) => self.show_gap(i),
            None => {
                self.message = Some(format!(
                    "no {} idle gap ≥ {} (< > change the threshold)",
                    if back { "earlier" } else { "later" },
                    text::fmt_ns(self.threshold())
                ));
            }
        }
    }

    fn change_threshold(&mut self, num: Ns, den: Ns) {
        let t = (self.threshold().saturating_mul(num) / den).clamp(MIN_THRESHOLD, MAX_THRESHOLD);
        self.set_threshold(t);
        self.message = Some(format!("finding gaps ≥ {}…", text::fmt_ns(t)));
    }

    pub(crate) fn next_match(&mut self, back: bool) {
        if !self.search.active() {
            self.message = Some("no search yet: / then a name".to_string());
            return;
        }
        let here = self.here(back);
        let lanes = self.search.matches.iter().enumerate().map(|(l, m)| (l as u32, Some(m.as_slice())));
        match step(&self.trace, lanes, here, back) {
            Some(r) => self.show_event(r, true),
            None => self.message = Some(format!("no {} match", if back { "earlier" } else { "later" })),
        }
    }
}
