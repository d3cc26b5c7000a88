//! Per-phase table: NVTX ranges grouped by name, sortable by column. Each column is a
//! phase field of `report::fields` (header, unit, value) in a width; the viewer's own
//! formatters print it.

use std::cmp::Ordering;

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Clear, Paragraph, Row, Table, Wrap};

use crate::analysis::Phase;
use crate::report::fields::{self, Field, Num, Unit};
use crate::tui::input::Action;
use crate::tui::text;

use super::{Context, Effect, panel_block, window};

/// A column of the phase table: the name, or a phase field (its header is the field's
/// label) in a width.
#[derive(Debug, Clone, Copy)]
enum PhaseColumn {
    /// Phase name, as wide as the longest name (within bounds).
    Name,
    /// A field of [`fields`], in this many cells.
    Field(Field, u16),
}

/// Every column, left to right.
const COLUMNS: [PhaseColumn; 11] = [
    PhaseColumn::Name,
    PhaseColumn::Field(fields::COUNT.headed("n"), 4),
    PhaseColumn::Field(fields::WALL, 9),
    PhaseColumn::Field(fields::WALL_MEAN, 9),
    PhaseColumn::Field(fields::WALL_P95, 9),
    PhaseColumn::Field(fields::WALL_MAX, 9),
    PhaseColumn::Field(fields::BUSY_OF_WALL, 8),
    PhaseColumn::Field(fields::IDLE, 9),
    PhaseColumn::Field(fields::EXPOSED_COPY, 12),
    PhaseColumn::Field(fields::STARVED, 7),
    PhaseColumn::Field(fields::H2D_GBPS, 8),
];

/// The column the table opens sorted by (descending): total wall time.
const DEFAULT_SORT: usize = 2;

impl PhaseColumn {
    /// Header text.
    fn label(self) -> &'static str {
        match self {
            Self::Name => "phase",
            Self::Field(f, _) => f.label,
        }
    }

    /// Width in cells (the name column's is `name_w`).
    fn width(self, name_w: u16) -> u16 {
        match self {
            Self::Name => name_w,
            Self::Field(_, w) => w,
        }
    }

    /// The cell of phase `p`.
    fn cell(self, p: &Phase) -> String {
        let Self::Field(f, _) = self else { return text::sanitize(&p.name).into_owned() };
        match (f.unit, f.of(p)) {
            (Unit::Count, Num::Int(n)) => text::fmt_count(n.max(0) as u64),
            (Unit::Ns, Num::Int(n)) => text::fmt_ns(n),
            (Unit::Bytes, Num::Int(n)) => text::fmt_bytes(n.max(0) as u64),
            (Unit::Share, Num::Real(v)) => v.map_or_else(|| "-".to_string(), text::pct),
            (Unit::Pct, Num::Real(v)) => v.map_or_else(|| "-".to_string(), |v| format!("{v:.0}%")),
            (Unit::Gbps, Num::Real(v)) => v.map_or_else(|| "-".to_string(), |g| format!("{g:.2}")),
            // Never: a unit test holds every field to its unit's kind.
            (_, n) => n.to_string(),
        }
    }

    /// Ascending order of two phases by this column.
    fn cmp(self, x: &Phase, y: &Phase) -> Ordering {
        match self {
            Self::Name => x.name.cmp(&y.name),
            Self::Field(f, _) => f.of(x).sort_cmp(f.of(y)),
        }
    }
}

/// State of the phase table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PhaseTable {
    /// Highlighted row (in sorted order).
    pub sel: usize,
    /// Sort column (an index into the columns, left to right).
    pub sort: usize,
    /// Descending order.
    pub desc: bool,
    /// Phase indices in display order.
    pub order: Vec<usize>,
}

impl PhaseTable {
    /// Open sorted by total wall time, largest first.
    pub(crate) fn open(app: &Context) -> Self {
        let mut t = Self { sel: 0, sort: DEFAULT_SORT, desc: true, order: Vec::new() };
        t.sort_by(app, DEFAULT_SORT, true);
        t
    }

    fn sort_by(&mut self, app: &Context, col: usize, desc: bool) {
        let ph = &app.analysis.phases;
        let mut order: Vec<usize> = (0..ph.len()).collect();
        order.sort_by(|&a, &b| {
            let o = COLUMNS[col].cmp(&ph[a], &ph[b]);
            if desc { o.reverse() } else { o }
        });
        *self = Self { sel: 0, sort: col, desc, order };
    }

    /// Handle a list action.
    pub(crate) fn on_action(&mut self, action: Action, app: &Context) -> Effect {
        if super::list_move(&mut self.sel, self.order.len(), action) {
            return Effect::None;
        }
        let n = COLUMNS.len();
        let sort = self.sort;
        let (col, desc) = match action {
            Action::ListEnter => return self.enter(app),
            Action::SortNext => ((sort + 1) % n, sort + 1 != n),
            Action::SortReverse => (sort, !self.desc),
            Action::SortColumn(c) => {
                let c = usize::from(c).saturating_sub(1).min(n - 1);
                (c, if c == sort { !self.desc } else { c != 0 })
            }
            _ => return Effect::None,
        };
        self.sort_by(app, col, desc);
        Effect::None
    }

    // Zoom to the slowest instance of the highlighted phase.
    fn enter(&self, app: &Context) -> Effect {
        let Some(&p) = self.order.get(self.sel) else { return Effect::None };
        let ph = &app.analysis.phases[p];
        let (a, b) = ph.slowest;
        if b <= a {
            return Effect::None;
        }
        Effect::ZoomTo(a, b, format!("{}: slowest instance, {}", text::sanitize(&ph.name), text::fmt_ns(b - a)))
    }

    /// A click on a row highlights it; on the highlighted row, zooms to its slowest instance.
    pub(crate) fn on_click(&mut self, area: Rect, y: u16, app: &Context) -> Effect {
        let row = super::row_at(area, y, self.order.len(), self.sel);
        if super::click(&mut self.sel, row) { self.enter(app) } else { Effect::None }
    }

    /// Draw the phase table.
    pub(crate) fn render(&self, frame: &mut Frame, app: &Context, area: Rect) {
        frame.render_widget(Clear, area);
        let block = panel_block(app.theme, "Phases (Enter: slowest instance, o/1-9 sort, Esc close)");
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let phases = &app.analysis.phases;
        if phases.is_empty() {
            let msg = "No phases: the trace has no NVTX ranges to group (or the analysis found none).";
            frame.render_widget(Paragraph::new(msg).wrap(Wrap { trim: true }), inner);
            return;
        }
        let name_w = phases.iter().map(|p| p.name.chars().count()).max().unwrap_or(5).clamp(5, 24) as u16;
        // Show the columns that fit, left to right (the name and count always).
        let mut used = 0;
        let shown: Vec<(usize, PhaseColumn)> = COLUMNS
            .into_iter()
            .enumerate()
            .take_while(|&(i, c)| {
                used += c.width(name_w) + 1;
                i < 2 || used <= inner.width + 1
            })
            .collect();
        let header = Row::new(shown.iter().map(|&(i, c)| {
            let arrow = if i == self.sort { if self.desc { "▼" } else { "▲" } } else { "" };
            format!("{}{arrow}", c.label())
        }))
        .style(Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED));
        let h = usize::from(inner.height.saturating_sub(1));
        let rows = window(self.order.len(), h, self.sel).map(|i| {
            let p = &phases[self.order[i]];
            let row = Row::new(shown.iter().map(|&(_, c)| c.cell(p)).collect::<Vec<_>>());
            if i == self.sel { row.style(app.theme.row_selected()) } else { row }
        });
        let constraints: Vec<Constraint> = shown.iter().map(|&(_, c)| Constraint::Length(c.width(name_w))).collect();
        frame.render_widget(Table::new(rows, constraints).header(header).column_spacing(1), inner);
    }
}
