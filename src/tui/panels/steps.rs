//! Step budget (`B`): one row per step, its wall drawn as a bar split into GPU busy time
//! and idle by cause, scaled so the longest steady step (at most 4 medians) fills the
//! bar: outliers and periodic stalls stand out as long or clipped bars. Enter zooms to the step; `o` orders by wall.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Row, Table, Wrap};

use crate::tui::input::Action;
use crate::tui::text;
use crate::tui::theme::Theme;
use crate::view::palette;
use crate::view::steps::{OUTLIER_FACTOR, Part, StepBar, StepBars, step_bars};

use super::{Context, Effect, panel_block, window};

/// Fixed columns before the bar: #, start, wall, ×median, busy (with their spaces).
const FIXED: [u16; 5] = [5, 13, 9, 6, 5];
/// Width of the last column, the step's largest idle cause.
const TOP_W: u16 = 20;

/// State of the step budget panel.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StepPanel {
    /// The rows, at the threshold the panel was opened (or last refreshed) at.
    pub bars: Option<StepBars>,
    /// Highlighted row (in display order).
    pub sel: usize,
    /// Ordered by wall, longest first, rather than by start.
    pub by_wall: bool,
    /// Row indices in display order.
    pub order: Vec<usize>,
}

impl StepPanel {
    /// Open on the first step, in start order.
    pub(crate) fn open(app: &Context) -> Self {
        let bars = step_bars(app.analysis, app.devices, app.gaps);
        let order = (0..bars.as_ref().map_or(0, |b| b.rows.len())).collect();
        Self { bars, sel: 0, by_wall: false, order }
    }

    /// Recompute the rows after the gaps changed (a new threshold moves idle between
    /// gaps and short holes); the order and highlight stay.
    pub(crate) fn refresh(&mut self, app: &Context) {
        self.bars = step_bars(app.analysis, app.devices, app.gaps);
        self.sort(self.by_wall);
    }

    fn sort(&mut self, by_wall: bool) {
        let rows = self.bars.as_ref().map_or(&[][..], |b| &b.rows[..]);
        let mut order: Vec<usize> = (0..rows.len()).collect();
        if by_wall {
            order.sort_by_key(|&i| (std::cmp::Reverse(rows[i].wall()), i));
        }
        self.by_wall = by_wall;
        self.order = order;
        self.sel = self.sel.min(self.order.len().saturating_sub(1));
    }

    /// Handle a list action.
    pub(crate) fn on_action(&mut self, action: Action, app: &Context) -> Effect {
        if super::list_move(&mut self.sel, self.order.len(), action) {
            return Effect::None;
        }
        match action {
            Action::ListEnter => self.enter(app),
            Action::SortNext | Action::SortReverse => {
                self.sel = 0;
                self.sort(!self.by_wall);
                Effect::None
            }
            _ => Effect::None,
        }
    }

    // Zoom to the highlighted step.
    fn enter(&self, app: &Context) -> Effect {
        let Some(bars) = &self.bars else { return Effect::None };
        let Some(r) = self.order.get(self.sel).map(|&i| &bars.rows[i]) else { return Effect::None };
        if r.end <= r.start {
            return Effect::None;
        }
        let idle = r.wall() - r.of(Part::Busy);
        let msg = format!(
            "step {} at {}: wall {}, GPU idle {} ({})",
            r.index,
            text::time(app.rel(r.start), 1_000),
            text::fmt_ns(r.wall()),
            text::fmt_ns(idle),
            text::pct(idle as f64 / r.wall() as f64)
        );
        Effect::ZoomTo(r.start, r.end, msg)
    }

    /// A click on a row highlights it; on the highlighted row, zooms to the step.
    pub(crate) fn on_click(&mut self, area: Rect, y: u16, app: &Context) -> Effect {
        // The legend takes the panel's last inner row, so the table is one row shorter.
        let table = Rect { height: area.height.saturating_sub(1), ..area };
        let row = super::row_at(table, y, self.order.len(), self.sel);
        if super::click(&mut self.sel, row) { self.enter(app) } else { Effect::None }
    }

    /// Draw the panel.
    pub(crate) fn render(&self, frame: &mut Frame, app: &Context, area: Rect) {
        frame.render_widget(Clear, area);
        let Some(bars) = &self.bars else {
            let block = panel_block(app.theme, "Steps (Esc close)");
            let inner = block.inner(area);
            frame.render_widget(block, area);
            let msg = "No steps: the trace has no step phase and no kernel sequence that repeats once per step \
                       (`lanescope info` shows what was tried).";
            frame.render_widget(Paragraph::new(msg).wrap(Wrap { trim: true }), inner);
            return;
        };
        let title = format!(
            "{} steps on GPU {}, median {} (Enter zooms, o: by {}, Esc close)",
            bars.rows.len(),
            bars.device,
            text::fmt_ns(bars.median_ns),
            if self.by_wall { "start" } else { "wall" }
        );
        let block = panel_block(app.theme, &title);
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let [table, legend] = Layout::vertical([Constraint::Min(1), Constraint::Length(1)]).areas(inner);
        let bar_w = table.width.saturating_sub(FIXED.iter().sum::<u16>() + TOP_W + 1).max(4);
        self.render_table(frame, app, bars, (table, bar_w));
        frame.render_widget(Paragraph::new(legend_line(bars, app.theme)), legend);
    }

    fn render_table(&self, frame: &mut Frame, app: &Context, bars: &StepBars, (area, bar_w): (Rect, u16)) {
        let head = |s: &str, on: bool| if on { format!("{s} ▼") } else { s.to_string() };
        let header = Row::new(vec![
            head("#", !self.by_wall),
            "start".to_string(),
            head("wall", self.by_wall),
            "×med".to_string(),
            "busy".to_string(),
            "busy, idle by cause".to_string(),
            "most idle".to_string(),
        ])
        .style(Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED));
        let h = usize::from(area.height.saturating_sub(1));
        let rows = window(self.order.len(), h, self.sel).map(|k| {
            let r = &bars.rows[self.order[k]];
            let row = step_row(app, bars, r, bar_w);
            if k == self.sel { row.style(app.theme.row_selected()) } else { row }
        });
        let mut widths: Vec<Constraint> = FIXED.iter().map(|&w| Constraint::Length(w - 1)).collect();
        widths.extend([Constraint::Length(bar_w), Constraint::Min(8)]);
        frame.render_widget(Table::new(rows, widths).header(header).column_spacing(1), area);
    }
}

// One step's row: its numbers, its bar, its largest idle cause.
fn step_row<'a>(app: &Context, bars: &StepBars, r: &StepBar, bar_w: u16) -> Row<'a> {
    let ratio = bars.ratio(r);
    let ratio_cell =
        Span::styled(format!("×{ratio:.1}"), if ratio >= OUTLIER_FACTOR { app.theme.warn() } else { Style::new() });
    let index = if r.steady { r.index.to_string() } else { format!("{}*", r.index) };
    let busy = text::pct(r.of(Part::Busy) as f64 / r.wall().max(1) as f64);
    let top = r.top_idle().map_or_else(|| "-".to_string(), |(c, t)| format!("{} {}", c.label(), text::fmt_ns(t)));
    let (cells, clipped) = bars.cells(r, bar_w);
    let mut spans: Vec<Span> = cells
        .into_iter()
        .map(|(p, n)| {
            let (glyph, style) = look(p, app.theme);
            Span::styled(glyph.to_string().repeat(usize::from(n)), style)
        })
        .collect();
    if clipped {
        spans.push(Span::styled("»", app.theme.warn()));
    }
    Row::new(vec![
        Line::from(index),
        Line::from(text::time(app.rel(r.start), 1_000)),
        Line::from(text::fmt_ns(r.wall())),
        Line::from(ratio_cell),
        Line::from(busy),
        Line::from(spans),
        Line::from(top),
    ])
}

// The legend: every part some step shows, with its glyph; `*` marks start-up.
fn legend_line(bars: &StepBars, theme: Theme) -> Line<'static> {
    let mut parts: Vec<Part> = Vec::new();
    for p in bars.rows.iter().flat_map(|r| r.parts.iter().map(|p| p.0)) {
        if !parts.contains(&p) {
            parts.push(p);
        }
    }
    parts.sort_by_key(|&p| order_key(p));
    let mut spans = Vec::new();
    for p in parts {
        let (glyph, style) = look(p, theme);
        spans.push(Span::styled(format!("{glyph}{glyph}"), style));
        spans.push(Span::raw(format!(" {}  ", name(p))));
    }
    spans.push(Span::styled("* start-up  » clipped", theme.dim()));
    Line::from(spans)
}

fn order_key(p: Part) -> usize {
    match p {
        Part::Busy => 0,
        Part::Idle(c) => 1 + c as usize,
        Part::Short => 100,
    }
}

fn name(p: Part) -> &'static str {
    match p {
        Part::Busy => "GPU busy",
        Part::Idle(c) => c.label(),
        Part::Short => "short holes",
    }
}

// Glyph and style of a part.
fn look(p: Part, theme: Theme) -> (char, Style) {
    let (glyph, colour) = palette::step_part(p);
    (glyph, theme.paint(colour))
}
