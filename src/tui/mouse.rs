//! The mouse, mapped onto the same state the keys drive. The terminal reports it in
//! SGR form (1006), which works over SSH and inside tmux and screen; `--no-mouse`
//! leaves it off. What lies under the pointer comes from `layout::Areas`, the same
//! rectangles the renderer draws into.
//!
//! Wheel over the lanes zooms around the pointer; Shift-wheel or the horizontal wheel
//! pans. A click selects the event or gap under the pointer (and focuses its row);
//! on a label it collapses or expands the group. A drag on the ruler sets the mark
//! where it starts and the cursor where it is, so the status line shows the range's
//! length. In the gap list and the phase table a click highlights a row, a second
//! click zooms to it; the wheel scrolls them and the help.

use ratatui::crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use super::app::{App, Drag};
use super::input::{Action, Mode};
use crate::view::rows::Row;

/// Lines the wheel scrolls a list or the help by.
const WHEEL_LINES: usize = 3;

fn inside(r: Rect, x: u16, y: u16) -> bool {
    r.contains(Position { x, y })
}

impl App {
    /// Handle one mouse event; returns true when the screen must be redrawn.
    pub fn handle_mouse(&mut self, ev: MouseEvent) -> bool {
        // A press or the wheel replaces the last message; a release keeps what the press said.
        let acts = !matches!(ev.kind, MouseEventKind::Up(_) | MouseEventKind::Drag(_) | MouseEventKind::Moved);
        let had_message = acts && self.message.take().is_some();
        let a = self.areas();
        if a.too_small || self.mode() == Mode::Search {
            return had_message;
        }
        let changed = if self.help.is_some() {
            self.mouse_help(ev, a.help)
        } else if let Some(r) = a.panel.filter(|&r| inside(r, ev.column, ev.row)) {
            self.mouse_panel(ev, r)
        } else if self.drag.is_some() || (ev.row == a.ruler.y && inside(a.ruler, ev.column, ev.row)) {
            self.mouse_ruler(ev, a.timeline_x())
        } else if inside(a.lanes, ev.column, ev.row) {
            self.mouse_lanes(ev, a.lanes, a.label_w, a.timeline_x())
        } else {
            false
        };
        self.relayout();
        changed || had_message
    }

    fn mouse_help(&mut self, ev: MouseEvent, r: Rect) -> bool {
        let Some(mut h) = self.help else { return false };
        match ev.kind {
            MouseEventKind::ScrollDown => h.scroll_by(WHEEL_LINES as isize, &self.panel_context()),
            MouseEventKind::ScrollUp => h.scroll_by(-(WHEEL_LINES as isize), &self.panel_context()),
            MouseEventKind::Down(MouseButton::Left) if !inside(r, ev.column, ev.row) => {
                self.help = None;
                return true;
            }
            _ => return false,
        }
        self.help = Some(h);
        true
    }

    fn mouse_panel(&mut self, ev: MouseEvent, r: Rect) -> bool {
        let list = self.mode() == Mode::List;
        match ev.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                let Some(mut p) = self.panel.take() else { return false };
                let effect = p.on_click(r, ev.row, &self.panel_context());
                self.panel = Some(p);
                self.run_effect(effect);
            }
            MouseEventKind::ScrollDown if list => (0..WHEEL_LINES).for_each(|_| self.apply(Action::ListDown)),
            MouseEventKind::ScrollUp if list => (0..WHEEL_LINES).for_each(|_| self.apply(Action::ListUp)),
            _ => return false,
        }
        true
    }

    // Column of the timeline under `x` (clamped to the timeline).
    fn timeline_col(&self, x: u16, timeline_x: u16) -> usize {
        usize::from(x.saturating_sub(timeline_x)).min(self.viewport.width() - 1)
    }

    fn mouse_ruler(&mut self, ev: MouseEvent, timeline_x: u16) -> bool {
        let col = self.timeline_col(ev.column, timeline_x);
        let t = self.viewport.time_at(col);
        let vp = &mut self.viewport;
        match ev.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                vp.cursor = t;
                vp.mark = None;
                self.drag = Some(Drag { from: t });
            }
            MouseEventKind::Drag(MouseButton::Left) => {
                let Some(d) = self.drag else { return false };
                vp.mark = (vp.col_of(d.from) != Some(col)).then_some(d.from);
                vp.cursor = t;
            }
            MouseEventKind::Up(MouseButton::Left) => {
                let Some(d) = self.drag.take() else { return false };
                vp.cursor = t;
                // A click without a drag only moves the cursor.
                vp.mark = (vp.col_of(d.from) != Some(col)).then_some(d.from);
            }
            MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => return self.wheel(ev, col),
            _ => return false,
        }
        true
    }

    fn mouse_lanes(&mut self, ev: MouseEvent, lanes: Rect, label_w: u16, timeline_x: u16) -> bool {
        let on_label = ev.column < lanes.x + label_w;
        let col = self.timeline_col(ev.column, timeline_x);
        match ev.kind {
            MouseEventKind::Down(MouseButton::Left) => {
                let Some(i) = self.lanes.index_at(usize::from(ev.row - lanes.y)) else { return false };
                self.lanes.focus = i;
                self.lanes.scroll_to_focus();
                if on_label {
                    if let Some(Row::Group(g)) = self.lanes.focused() {
                        self.lanes.toggle_group_at(g);
                    }
                } else if ev.column >= timeline_x {
                    self.viewport.set_cursor_col(col);
                    self.select_at(col);
                }
                true
            }
            MouseEventKind::ScrollUp | MouseEventKind::ScrollDown if on_label => {
                let step = if ev.kind == MouseEventKind::ScrollUp { -1 } else { 1 };
                self.lanes.scroll_by(step * WHEEL_LINES as isize);
                true
            }
            _ => self.wheel(ev, col),
        }
    }

    // Wheel over the timeline: zoom around the pointer; Shift or the horizontal wheel pans.
    fn wheel(&mut self, ev: MouseEvent, col: usize) -> bool {
        let shift = ev.modifiers.contains(KeyModifiers::SHIFT);
        let vp = &mut self.viewport;
        match ev.kind {
            MouseEventKind::ScrollUp if shift => vp.pan_eighths(-1),
            MouseEventKind::ScrollDown if shift => vp.pan_eighths(1),
            MouseEventKind::ScrollLeft => vp.pan_eighths(-1),
            MouseEventKind::ScrollRight => vp.pan_eighths(1),
            MouseEventKind::ScrollUp => vp.zoom_around(vp.time_at(col), 1, 2),
            MouseEventKind::ScrollDown => vp.zoom_around(vp.time_at(col), 2, 1),
            _ => return false,
        }
        true
    }
}
