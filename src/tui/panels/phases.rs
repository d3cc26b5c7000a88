//! Per-phase table: NVTX ranges grouped by name, sortable by column. Each column is
//! one [`PhaseColumn`]: its header, width, cell and order live together.

use std::cmp::Ordering;

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Clear, Paragraph, Row, Table, Wrap};

use crate::analysis::Phase;
use crate::tui::input::Action;
use crate::tui::text;

use super::{Context, Effect, panel_block, window};

/// A column of the phase table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PhaseColumn {
    /// Phase name.
    Name,
    /// Instances.
    Count,
    /// Total wall time.
    Wall,
    /// Mean wall time.
    Mean,
    /// 95th percentile wall time.
    P95,
    /// Longest instance.
    Max,
    /// GPU busy share of the wall time.
    GpuBusy,
    /// GPU idle time inside the phase.
    Idle,
    /// Copy time not hidden under kernels.
    ExposedCopy,
    /// Share of instances where the GPU starved.
    Starved,
    /// Host-to-device bandwidth.
    H2d,
}

impl PhaseColumn {
    /// Every column, left to right.
    pub const ALL: [Self; 11] = [
        Self::Name,
        Self::Count,
        Self::Wall,
        Self::Mean,
        Self::P95,
        Self::Max,
        Self::GpuBusy,
        Self::Idle,
        Self::ExposedCopy,
        Self::Starved,
        Self::H2d,
    ];

    /// The column the table opens sorted by (descending).
    pub const DEFAULT: Self = Self::Wall;

    /// Header text.
    pub fn label(self) -> &'static str {
        match self {
            Self::Name => "phase",
            Self::Count => "n",
            Self::Wall => "wall",
            Self::Mean => "mean",
            Self::P95 => "p95",
            Self::Max => "max",
            Self::GpuBusy => "GPU busy",
            Self::Idle => "idle",
            Self::ExposedCopy => "exposed copy",
            Self::Starved => "starved",
            Self::H2d => "H2D GB/s",
        }
    }

    /// Width in cells (the name column's is `name_w`).
    fn width(self, name_w: u16) -> u16 {
        match self {
            Self::Name => name_w,
            Self::Count => 4,
            Self::Wall | Self::Mean | Self::P95 | Self::Max | Self::Idle => 9,
            Self::GpuBusy | Self::H2d => 8,
            Self::ExposedCopy => 12,
            Self::Starved => 7,
        }
    }

    fn index(self) -> usize {
        Self::ALL.iter().position(|&c| c == self).unwrap_or(0)
    }

    fn busy(p: &Phase) -> f64 {
        p.gpu_busy_ns as f64 / p.wall.sum_ns.max(1) as f64
    }

    /// The cell of phase `p`.
    pub fn cell(self, p: &Phase) -> String {
        match self {
            Self::Name => text::clean(&p.name).into_owned(),
            Self::Count => text::count(p.count),
            Self::Wall => text::dur(p.wall.sum_ns),
            Self::Mean => text::dur(p.wall.mean_ns),
            Self::P95 => text::dur(p.wall.p95_ns),
            Self::Max => text::dur(p.wall.max_ns),
            Self::GpuBusy => text::pct(Self::busy(p)),
            Self::Idle => text::dur(p.idle_ns),
            Self::ExposedCopy => text::dur(p.exposed_copy_ns),
            Self::Starved => text::pct(p.starved_share),
            Self::H2d => p.h2d_gbps.map_or_else(|| "-".to_string(), |g| format!("{g:.2}")),
        }
    }

    /// Ascending order of two phases by this column.
    pub fn cmp(self, x: &Phase, y: &Phase) -> Ordering {
        match self {
            Self::Name => x.name.cmp(&y.name),
            Self::Count => x.count.cmp(&y.count),
            Self::Wall => x.wall.sum_ns.cmp(&y.wall.sum_ns),
            Self::Mean => x.wall.mean_ns.cmp(&y.wall.mean_ns),
            Self::P95 => x.wall.p95_ns.cmp(&y.wall.p95_ns),
            Self::Max => x.wall.max_ns.cmp(&y.wall.max_ns),
            Self::GpuBusy => Self::busy(x).total_cmp(&Self::busy(y)),
            Self::Idle => x.idle_ns.cmp(&y.idle_ns),
            Self::ExposedCopy => x.exposed_copy_ns.cmp(&y.exposed_copy_ns),
            Self::Starved => x.starved_share.total_cmp(&y.starved_share),
            Self::H2d => x.h2d_gbps.unwrap_or(0.0).total_cmp(&y.h2d_gbps.unwrap_or(0.0)),
        }
    }
}

/// State of the phase table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PhaseTable {
    /// Highlighted row (in sorted order).
    pub sel: usize,
    /// Sort column.
    pub sort: PhaseColumn,
    /// Descending order.
    pub desc: bool,
    /// Phase indices in display order.
    pub order: Vec<usize>,
}

impl PhaseTable {
    /// Open sorted by total wall time, largest first.
    pub fn open(app: &Context) -> Self {
        let mut t = Self { sel: 0, sort: PhaseColumn::DEFAULT, desc: true, order: Vec::new() };
        t.sort_by(app, PhaseColumn::DEFAULT, true);
        t
    }

    fn sort_by(&mut self, app: &Context, col: PhaseColumn, desc: bool) {
        let ph = &app.analysis.phases;
        let mut order: Vec<usize> = (0..ph.len()).collect();
        order.sort_by(|&a, &b| {
            let o = col.cmp(&ph[a], &ph[b]);
            if desc { o.reverse() } else { o }
        });
        *self = Self { sel: 0, sort: col, desc, order };
    }

    /// Handle a list action.
    pub fn on_action(&mut self, action: Action, app: &Context) -> Effect {
        if super::list_move(&mut self.sel, self.order.len(), action) {
            return Effect::None;
        }
        let n = PhaseColumn::ALL.len();
        let sort = self.sort.index();
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
        self.sort_by(app, PhaseColumn::ALL[col], desc);
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
        Effect::ZoomTo(a, b, format!("{}: slowest instance, {}", text::clean(&ph.name), text::dur(b - a)))
    }

    /// A click on a row highlights it; on the highlighted row, zooms to its slowest instance.
    pub fn on_click(&mut self, area: Rect, y: u16, app: &Context) -> Effect {
        let row = super::row_at(area, y, self.order.len(), self.sel);
        if super::click(&mut self.sel, row) { self.enter(app) } else { Effect::None }
    }

    /// Draw the phase table.
    pub fn render(&self, frame: &mut Frame, app: &Context, area: Rect) {
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
        let shown: Vec<PhaseColumn> = PhaseColumn::ALL
            .into_iter()
            .enumerate()
            .take_while(|&(i, c)| {
                used += c.width(name_w) + 1;
                i < 2 || used <= inner.width + 1
            })
            .map(|(_, c)| c)
            .collect();
        let header = Row::new(shown.iter().map(|&c| {
            let arrow = if c == self.sort { if self.desc { "▼" } else { "▲" } } else { "" };
            format!("{}{arrow}", c.label())
        }))
        .style(Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED));
        let h = usize::from(inner.height.saturating_sub(1));
        let rows = window(self.order.len(), h, self.sel).map(|i| {
            let p = &phases[self.order[i]];
            let row = Row::new(shown.iter().map(|&c| c.cell(p)).collect::<Vec<_>>());
            if i == self.sel { row.style(app.theme.row_selected()) } else { row }
        });
        let constraints: Vec<Constraint> = shown.iter().map(|&c| Constraint::Length(c.width(name_w))).collect();
        frame.render_widget(Table::new(rows, constraints).header(header).column_spacing(1), inner);
    }
}
