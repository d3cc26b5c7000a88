//! What each [`Action`] does to the [`App`].

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::model::{EventRef, LaneKind, Ns, Trace};

use super::app::{App, PHASE_COLUMNS, Panel, Selection};
use super::input::{self, Action, Mode};
use super::rows::{GroupKind, Row};
use super::search::Search;
use super::text;

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
        if self.search.input.is_some() {
            self.search_key(key);
            return true;
        }
        let mode = if self.help.is_some() {
            Mode::Help
        } else if matches!(self.panel, Some(Panel::Phases { .. } | Panel::Gaps { .. })) {
            Mode::List
        } else {
            Mode::Timeline
        };
        match input::action(mode, &key) {
            Some(a) => {
                self.apply(a);
                true
            }
            None => had_message,
        }
    }

    fn search_key(&mut self, key: KeyEvent) {
        let Some(buf) = self.search.input.as_mut() else { return };
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        match key.code {
            KeyCode::Char('c') if ctrl => self.quit = true,
            KeyCode::Char('u') if ctrl => buf.clear(),
            KeyCode::Char(c) if !ctrl && buf.chars().count() < 200 => buf.push(c),
            KeyCode::Backspace => {
                buf.pop();
            }
            KeyCode::Esc => self.search.input = None,
            KeyCode::Enter => {
                let q = self.search.input.take().unwrap_or_default();
                self.run_search(&q);
            }
            _ => {}
        }
    }

    fn run_search(&mut self, q: &str) {
        if q.is_empty() {
            self.search = Search::default();
            return;
        }
        self.search = Search::run(&self.trace, q);
        if self.search.total == 0 {
            self.message = Some(format!("no event name contains \"{}\"", text::clean(q)));
        } else {
            self.next_match(false);
        }
    }

    /// Apply one action.
    pub fn apply(&mut self, action: Action) {
        match action {
            Action::ZoomIn => self.zoom(1, 2),
            Action::ZoomOut => self.zoom(2, 1),
            Action::PanLeft => self.pan(-(self.view.span / 8).max(self.ns_per_cell())),
            Action::PanRight => self.pan((self.view.span / 8).max(self.ns_per_cell())),
            Action::PageLeft => self.pan(-self.view.span),
            Action::PageRight => self.pan(self.view.span),
            Action::CursorLeft => self.move_cursor(-1),
            Action::CursorRight => self.move_cursor(1),
            Action::FitAll => self.fit_all(),
            Action::ViewEnd => {
                let end = self.trace.meta.end_ns;
                self.view.t0 = end - self.view.span + self.view.span / 20;
                self.cursor = end - 1;
                self.clamp_view();
            }
            Action::FitSelection => self.fit_selection(),
            Action::LaneUp => self.move_focus(-1),
            Action::LaneDown => self.move_focus(1),
            Action::LanePageUp => self.move_focus(-(self.scroll_rows_h() as isize)),
            Action::LanePageDown => self.move_focus(self.scroll_rows_h() as isize),
            Action::ToggleGroup => self.toggle_group(),
            Action::ToggleAllGroups => {
                let collapse = self.groups.iter().any(|g| !g.collapsed);
                for g in &mut self.groups {
                    g.collapsed = collapse;
                }
                self.rebuild_rows();
            }
            Action::Pin => self.toggle_pin(),
            Action::NextEvent => self.step_event(false),
            Action::PrevEvent => self.step_event(true),
            Action::Select => self.select_at_cursor(),
            Action::Jump => self.jump(),
            Action::Details => {
                self.panel = if self.panel == Some(Panel::Details) { None } else { Some(Panel::Details) };
                self.scroll_to_focus();
            }
            Action::NextGap => self.step_gap(false),
            Action::PrevGap => self.step_gap(true),
            Action::GapList => self.toggle_gap_list(),
            Action::ThresholdUp => self.change_threshold(2, 1),
            Action::ThresholdDown => self.change_threshold(1, 2),
            Action::Phases => {
                self.panel = if matches!(self.panel, Some(Panel::Phases { .. })) {
                    None
                } else {
                    Some(Panel::Phases { sel: 0, sort: 2, desc: true })
                };
                self.sort_phases(2, true);
                self.scroll_to_focus();
            }
            Action::Search => self.search.input = Some(String::new()),
            Action::NextMatch => self.next_match(false),
            Action::PrevMatch => self.next_match(true),
            Action::Mark => self.mark = if self.mark == Some(self.cursor) { None } else { Some(self.cursor) },
            Action::Help => self.help = if self.help.is_some() { None } else { Some(0) },
            Action::Back => {
                if self.help.is_some() {
                    self.help = None;
                } else if self.panel.is_some() {
                    self.panel = None;
                    self.scroll_to_focus();
                } else {
                    self.quit = true;
                }
            }
            Action::Quit => self.quit = true,
            Action::Suspend => self.suspend = true,
            Action::ListUp => self.list_move(-1),
            Action::ListDown => self.list_move(1),
            Action::ListPageUp => self.list_move(-10),
            Action::ListPageDown => self.list_move(10),
            Action::ListTop => self.list_move(isize::MIN / 2),
            Action::ListBottom => self.list_move(isize::MAX / 2),
            Action::ListEnter => self.list_enter(),
            Action::SortNext | Action::SortReverse | Action::SortColumn(_) => self.sort(action),
        }
    }

    fn zoom(&mut self, num: Ns, den: Ns) {
        let old = self.view.span;
        let span = (i128::from(old) * i128::from(num) / i128::from(den)) as Ns;
        let span = span.clamp(self.min_span(), self.max_span());
        let off = i128::from(self.cursor - self.view.t0) * i128::from(span) / i128::from(old.max(1));
        self.view = super::app::View { t0: self.cursor - off as Ns, span };
        let cursor = self.cursor;
        self.clamp_view();
        if self.col_of(cursor).is_some() {
            self.cursor = cursor;
        }
    }

    fn pan(&mut self, delta: Ns) {
        let t0 = self.view.t0;
        self.view.t0 += delta;
        self.clamp_view();
        self.cursor += self.view.t0 - t0;
        self.clamp_view();
    }

    fn move_cursor(&mut self, cols: isize) {
        let w = self.timeline_w() as isize;
        let c = self.cursor_col() as isize + cols;
        if c < 0 || c >= w {
            self.pan(cols as Ns * self.ns_per_cell());
            return;
        }
        let (a, b) = self.bucket(c as usize);
        self.cursor = a + (b - a) / 2;
    }

    fn fit_selection(&mut self) {
        let range = self.selection_range().or_else(|| self.mark.map(|m| (m.min(self.cursor), m.max(self.cursor))));
        match range {
            Some((a, b)) => {
                let len = (b - a).max(1);
                let span = (len + len / 4).max(self.min_span());
                let cursor = self.cursor;
                self.view = super::app::View { t0: a + len / 2 - span / 2, span };
                self.clamp_view();
                // Keep the cursor when it stays in view (mark..cursor), else go to the start.
                let keep = (a..=b).contains(&cursor) && self.col_of(cursor).is_some();
                self.cursor = if keep { cursor } else { a.clamp(self.view.t0, self.view.t0 + self.view.span - 1) };
            }
            None => self.message = Some("nothing selected: Enter selects, m sets a mark".to_string()),
        }
    }

    fn move_focus(&mut self, delta: isize) {
        let n = self.row_count() as isize;
        self.focus = (self.focus as isize + delta).clamp(0, (n - 1).max(0)) as usize;
        self.scroll_to_focus();
    }

    fn toggle_group(&mut self) {
        match self.row_at(self.focus) {
            Some(Row::Group(g)) => {
                self.groups[g].collapsed = !self.groups[g].collapsed;
                self.rebuild_rows();
            }
            Some(Row::Lane(l)) if self.focus >= self.pinned.len() => {
                if let Some(g) = self.groups.iter().position(|g| g.lanes.contains(&l)) {
                    self.groups[g].collapsed = true;
                    self.rows = super::rows::rows(&self.groups);
                    self.focus_row(Row::Group(g));
                    self.scroll_to_focus();
                }
            }
            _ => {}
        }
    }

    fn toggle_pin(&mut self) {
        let Some(Row::Lane(l)) = self.row_at(self.focus) else {
            self.message = Some("only lanes can be pinned: focus a lane with j/k".to_string());
            return;
        };
        if let Some(i) = self.pinned.iter().position(|&p| p == l) {
            self.pinned.remove(i);
            self.focus_row(Row::Lane(l));
        } else {
            self.pinned.push(l);
            self.focus = self.pinned.len() - 1;
        }
        self.scroll_to_focus();
    }

    fn here(&self, back: bool) -> (Ns, u32, u32) {
        match self.selection {
            Some(Selection::Event(r)) => (self.trace.lanes[r.lane as usize].ev.start[r.idx as usize], r.lane, r.idx),
            _ if back => (self.cursor, u32::MAX, u32::MAX),
            _ => (self.cursor, 0, 0),
        }
    }

    fn show_event(&mut self, r: EventRef, focus: bool) {
        self.select(Some(Selection::Event(r)));
        if focus {
            self.focus_lane(r.lane);
        }
        let ev = &self.trace.lanes[r.lane as usize].ev;
        self.reveal(ev.start[r.idx as usize]);
    }

    fn step_event(&mut self, back: bool) {
        let lanes = self.focused_lanes();
        let here = self.here(back);
        match step(&self.trace, lanes.iter().map(|&l| (l, None)), here, back) {
            Some(r) => self.show_event(r, false),
            None => self.message = Some(format!("no {} event in this lane", if back { "earlier" } else { "later" })),
        }
    }

    fn select_at_cursor(&mut self) {
        let row = self.row_at(self.focus);
        if let Some(Row::Group(g)) = row
            && let GroupKind::Gpu(d) = self.groups[g].kind
            && let Some(i) = self.gap_at_cursor(d)
        {
            self.select(Some(Selection::Gap(i)));
            self.panel = Some(Panel::Details);
            self.scroll_to_focus();
            return;
        }
        let lanes = self.focused_lanes();
        let best = lanes
            .iter()
            .filter_map(|&l| self.event_at_cursor(l))
            .max_by_key(|r| (self.trace.lanes[r.lane as usize].ev.dur(r.idx as usize), std::cmp::Reverse(r.lane)));
        match best {
            Some(r) => {
                self.select(Some(Selection::Event(r)));
                self.panel = Some(Panel::Details);
                self.scroll_to_focus();
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
        let target = if lane.kind.is_gpu() {
            self.trace.api_call_for(lane.pid, corr)
        } else if matches!(lane.kind, LaneKind::CudaApi { .. }) {
            self.trace.gpu_op_for(lane.pid, corr)
        } else {
            self.message = Some("c works on GPU operations and CUDA calls".to_string());
            return;
        };
        match target {
            Some(t) => self.show_event(t, true),
            None if lane.kind.is_gpu() => self.message = Some("no API call recorded for this operation".to_string()),
            None => self.message = Some("this call launched no GPU operation".to_string()),
        }
    }

    /// Select gap `i`, zoom to it and focus its GPU.
    pub(crate) fn show_gap(&mut self, i: usize) {
        let g = &self.analysis.gaps[i];
        let (a, b, d) = (g.start, g.end, g.device);
        self.select(Some(Selection::Gap(i)));
        self.zoom_to(a, b);
        if let Some(g) = self.gpu_group(d) {
            self.focus_row(Row::Group(g));
            self.scroll_to_focus();
        }
    }

    fn step_gap(&mut self, back: bool) {
        let gaps = &self.analysis.gaps;
        let (v0, v1) = (self.view.t0, self.view.t0 + self.view.span);
        // Step from the selected gap while it is on screen, else from the screen's edge:
        // `]` on a fresh view goes to the first gap in sight.
        let selected = match self.selection {
            Some(Selection::Gap(i)) => gaps.get(i).filter(|g| g.start < v1 && g.end > v0).map(|_| i),
            _ => None,
        };
        let next = match selected {
            Some(i) if back => i.checked_sub(1),
            Some(i) => Some(i + 1).filter(|&j| j < gaps.len()),
            None if back => gaps.partition_point(|g| g.start < v1).checked_sub(1),
            None => Some(gaps.partition_point(|g| g.end <= v0)).filter(|&j| j < gaps.len()),
        };
        match next {
            Some(i) => self.show_gap(i),
            None => {
                self.message = Some(format!(
                    "no {} idle gap ≥ {} (< > change the threshold)",
                    if back { "earlier" } else { "later" },
                    text::dur(self.threshold())
                ));
            }
        }
    }

    fn toggle_gap_list(&mut self) {
        if matches!(self.panel, Some(Panel::Gaps { .. })) {
            self.panel = None;
        } else {
            let sel = match self.selection {
                Some(Selection::Gap(i)) => self.gap_index.by_dur.iter().position(|&g| g as usize == i).unwrap_or(0),
                _ => 0,
            };
            self.panel = Some(Panel::Gaps { sel, by_start: false });
        }
        self.scroll_to_focus();
    }

    fn change_threshold(&mut self, num: Ns, den: Ns) {
        let t = (self.threshold() * num / den).clamp(MIN_THRESHOLD, MAX_THRESHOLD);
        self.set_threshold(t);
        self.message = Some(format!("finding gaps ≥ {}…", text::dur(t)));
    }

    fn next_match(&mut self, back: bool) {
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

    fn list_len(&self) -> usize {
        match self.panel {
            Some(Panel::Phases { .. }) => self.analysis.phases.len(),
            Some(Panel::Gaps { .. }) => self.analysis.gaps.len(),
            _ => 0,
        }
    }

    fn list_move(&mut self, delta: isize) {
        if self.help.is_some() {
            let max = super::render::help_height(self).saturating_sub(usize::from(self.size.1.saturating_sub(4)));
            let h = self.help.unwrap_or(0) as isize;
            self.help = Some(h.saturating_add(delta).clamp(0, max as isize) as usize);
            return;
        }
        let n = self.list_len() as isize;
        if let Some(Panel::Phases { sel, .. } | Panel::Gaps { sel, .. }) = &mut self.panel {
            *sel = (*sel as isize).saturating_add(delta).clamp(0, (n - 1).max(0)) as usize;
        }
    }

    /// Gap ids in the gap list's order.
    pub(crate) fn gap_at_row(&self, row: usize, by_start: bool) -> Option<usize> {
        if by_start {
            (row < self.analysis.gaps.len()).then_some(row)
        } else {
            self.gap_index.by_dur.get(row).map(|&g| g as usize)
        }
    }

    fn list_enter(&mut self) {
        match self.panel {
            Some(Panel::Gaps { sel, by_start }) => {
                if let Some(g) = self.gap_at_row(sel, by_start) {
                    self.show_gap(g);
                }
            }
            Some(Panel::Phases { sel, .. }) => {
                if let Some(&p) = self.phase_order.get(sel) {
                    let ph = &self.analysis.phases[p];
                    let (a, b) = ph.slowest;
                    let name = text::clean(&ph.name).into_owned();
                    if b > a {
                        self.zoom_to(a, b);
                        self.message = Some(format!("{name}: slowest instance, {}", text::dur(b - a)));
                    }
                }
            }
            _ => {}
        }
    }

    fn sort(&mut self, action: Action) {
        match self.panel {
            Some(Panel::Phases { sort, desc, .. }) => {
                let (col, desc) = match action {
                    Action::SortNext => ((sort + 1) % PHASE_COLUMNS.len(), sort + 1 != PHASE_COLUMNS.len()),
                    Action::SortReverse => (sort, !desc),
                    Action::SortColumn(n) => {
                        let c = usize::from(n).saturating_sub(1).min(PHASE_COLUMNS.len() - 1);
                        (c, if c == sort { !desc } else { c != 0 })
                    }
                    _ => (sort, desc),
                };
                self.sort_phases(col, desc);
                self.panel = Some(Panel::Phases { sel: 0, sort: col, desc });
            }
            Some(Panel::Gaps { by_start, .. }) => {
                let by_start = match action {
                    Action::SortColumn(3) => true,
                    Action::SortColumn(4) => false,
                    Action::SortColumn(_) => by_start,
                    _ => !by_start,
                };
                self.panel = Some(Panel::Gaps { sel: 0, by_start });
            }
            _ => {}
        }
    }

    /// Order the phase table by column `col`.
    pub(crate) fn sort_phases(&mut self, col: usize, desc: bool) {
        let ph = &self.analysis.phases;
        let mut order: Vec<usize> = (0..ph.len()).collect();
        let busy = |p: &crate::analysis::Phase| {
            let wall = p.wall.sum_ns.max(1) as f64;
            p.gpu_busy_ns as f64 / wall
        };
        order.sort_by(|&a, &b| {
            let (x, y) = (&ph[a], &ph[b]);
            let o = match col {
                0 => x.name.cmp(&y.name),
                1 => x.count.cmp(&y.count),
                2 => x.wall.sum_ns.cmp(&y.wall.sum_ns),
                3 => x.wall.mean_ns.cmp(&y.wall.mean_ns),
                4 => x.wall.p95_ns.cmp(&y.wall.p95_ns),
                5 => x.wall.max_ns.cmp(&y.wall.max_ns),
                6 => busy(x).total_cmp(&busy(y)),
                7 => x.idle_ns.cmp(&y.idle_ns),
                8 => x.exposed_copy_ns.cmp(&y.exposed_copy_ns),
                9 => x.starved_share.total_cmp(&y.starved_share),
                _ => x.h2d_gbps.unwrap_or(0.0).total_cmp(&y.h2d_gbps.unwrap_or(0.0)),
            };
            if desc { o.reverse() } else { o }
        });
        self.phase_order = order;
    }
}
