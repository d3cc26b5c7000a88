//! Per-phase table: NVTX ranges grouped by name, sortable by column.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Clear, Paragraph, Row, Table, Wrap};

use crate::tui::app::{App, PHASE_COLUMNS, Panel};
use crate::tui::text;

/// Draw the phase table.
pub fn render(frame: &mut Frame, app: &App, area: Rect) {
    let Some(Panel::Phases { sel, sort, desc }) = app.panel else { return };
    frame.render_widget(Clear, area);
    let block = super::panel_block(app, "Phases (Enter: slowest instance, o/1-9 sort, Esc close)");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let phases = &app.analysis.phases;
    if phases.is_empty() {
        let msg = "No phases: the trace has no NVTX ranges to group (or the analysis found none).";
        frame.render_widget(Paragraph::new(msg).wrap(Wrap { trim: true }), inner);
        return;
    }
    let header = Row::new(PHASE_COLUMNS.iter().enumerate().map(|(i, c)| {
        let arrow = if i == sort { if desc { " ▼" } else { " ▲" } } else { "" };
        format!("{c}{arrow}")
    }))
    .style(Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED));
    let h = usize::from(inner.height.saturating_sub(1));
    let range = super::window(app.phase_order.len(), h, sel);
    let rows = range.clone().map(|i| {
        let p = &phases[app.phase_order[i]];
        let wall = p.wall.sum_ns.max(1) as f64;
        let row = Row::new(vec![
            text::clean(&p.name).into_owned(),
            text::count(p.count),
            text::dur(p.wall.sum_ns),
            text::dur(p.wall.mean_ns),
            text::dur(p.wall.p95_ns),
            text::dur(p.wall.max_ns),
            text::pct(p.gpu_busy_ns as f64 / wall),
            text::dur(p.idle_ns),
            text::dur(p.exposed_copy_ns),
            text::pct(p.starved_share),
            p.h2d_gbps.map_or_else(|| "-".to_string(), |g| format!("{g:.2}")),
        ]);
        if i == sel { row.style(app.theme.row_selected()) } else { row }
    });
    let name_w = phases.iter().map(|p| p.name.chars().count()).max().unwrap_or(5).clamp(5, 24) as u16;
    let widths = [
        Constraint::Length(name_w),
        Constraint::Length(6),
        Constraint::Length(10),
        Constraint::Length(10),
        Constraint::Length(10),
        Constraint::Length(10),
        Constraint::Length(10),
        Constraint::Length(10),
        Constraint::Length(14),
        Constraint::Length(9),
        Constraint::Length(10),
    ];
    frame.render_widget(Table::new(rows, widths).header(header).column_spacing(1), inner);
}
