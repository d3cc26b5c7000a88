//! Gap list: idle gaps of at least the threshold, longest first (or by start), with
//! cause. Keys: the list keys of the key table; `o`/`O`/`3`/`4` change the order.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Clear, Paragraph, Row, Table, Wrap};

use crate::tui::input::Action;
use crate::tui::text;

use super::{Context, Effect, panel_block, window};

/// Column of the gap list sorted by start (1-based, as the `1`-`9` keys count).
const START_COLUMN: u8 = 3;
/// Column of the gap list sorted by duration.
const DURATION_COLUMN: u8 = 4;

/// State of the gap list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GapList {
    /// Highlighted row (in sorted order).
    pub sel: usize,
    /// Sorted by start instead of duration.
    pub by_start: bool,
}

impl GapList {
    /// Open on the selected gap, if any, sorted by duration.
    pub(crate) fn open(app: &Context) -> Self {
        let sel = app.selected_gap.and_then(|i| app.gaps.length_row(i)).unwrap_or(0);
        Self { sel, by_start: false }
    }

    /// Gap id at row `row` of the list's order.
    pub(crate) fn gap_at_row(&self, app: &Context, row: usize) -> Option<usize> {
        if self.by_start { (row < app.gaps.len()).then_some(row) } else { app.gaps.by_length(row) }
    }

    /// Keep the highlight on a row after the gaps changed.
    pub(crate) fn clamp(&mut self, app: &Context) {
        self.sel = self.sel.min(app.gaps.len().saturating_sub(1));
    }

    /// Handle a list action.
    pub(crate) fn on_action(&mut self, action: Action, app: &Context) -> Effect {
        if super::list_move(&mut self.sel, app.gaps.len(), action) {
            return Effect::None;
        }
        match action {
            Action::ListEnter => self.gap_at_row(app, self.sel).map_or(Effect::None, Effect::ShowGap),
            Action::SortNext | Action::SortReverse => {
                *self = Self { sel: 0, by_start: !self.by_start };
                Effect::None
            }
            Action::SortColumn(c @ (START_COLUMN | DURATION_COLUMN)) => {
                *self = Self { sel: 0, by_start: c == START_COLUMN };
                Effect::None
            }
            _ => Effect::None,
        }
    }

    /// A click on a row highlights it; on the highlighted row, zooms to the gap.
    pub(crate) fn on_click(&mut self, area: Rect, y: u16, app: &Context) -> Effect {
        let row = super::row_at(area, y, app.gaps.len(), self.sel);
        if super::click(&mut self.sel, row) { self.on_action(Action::ListEnter, app) } else { Effect::None }
    }

    /// Draw the gap list.
    pub(crate) fn render(&self, frame: &mut Frame, app: &Context, area: Rect) {
        let Self { sel, by_start } = *self;
        frame.render_widget(Clear, area);
        let gaps = &app.gaps;
        let title = format!(
            "{} gaps ≥ {} by {} (Enter zooms, o sorts, < > threshold)",
            text::fmt_count(gaps.len() as u64),
            text::fmt_ns(app.threshold),
            if by_start { "start" } else { "duration" }
        );
        let block = panel_block(app.theme, &title);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        if gaps.is_empty() {
            let msg = format!("No idle gap of at least {}. < halves the threshold.", text::fmt_ns(app.threshold));
            frame.render_widget(Paragraph::new(msg).wrap(Wrap { trim: true }), inner);
            return;
        }
        let sorted = |c: &str, on: bool| if on { format!("{c} ▼") } else { c.to_string() };
        let header = Row::new(vec![
            "#".to_string(),
            "GPU".to_string(),
            sorted("start", by_start),
            sorted("duration", !by_start),
            "cause".to_string(),
            "phase".to_string(),
            "evidence".to_string(),
        ])
        .style(Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED));
        let h = usize::from(inner.height.saturating_sub(1));
        let rows = window(gaps.len(), h, sel).filter_map(|row| {
            let gi = self.gap_at_row(app, row)?;
            let g = gaps.get(gi)?;
            let r = Row::new(vec![
                (gi + 1).to_string(),
                g.device.to_string(),
                text::time(app.rel(g.start), 1_000),
                text::fmt_ns(g.dur()),
                g.cause.label().to_string(),
                g.phase.as_deref().map_or_else(|| "-".to_string(), |p| text::sanitize(p).into_owned()),
                text::sanitize(&g.evidence).into_owned(),
            ]);
            Some(if row == sel { r.style(app.theme.row_selected()) } else { r })
        });
        let widths = [
            Constraint::Length(6),
            Constraint::Length(3),
            Constraint::Length(12),
            Constraint::Length(10),
            Constraint::Length(14),
            Constraint::Length(16),
            Constraint::Min(10),
        ];
        frame.render_widget(Table::new(rows, widths).header(header).column_spacing(1), inner);
    }
}
