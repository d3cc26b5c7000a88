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
    let name_w = phases.iter().map(|p| p.name.chars().count()).max().unwrap_or(5).clamp(5, 24) as u16;
    let widths: [u16; 11] = [name_w, 4, 9, 9, 9, 9, 8, 9, 12, 7, 8];
    // Show the columns that fit, left to right (the name and count always).
    let mut used = 0;
    let shown: Vec<usize> = (0..widths.len())
        .take_while(|&i| {
            used += widths[i] + 1;
            i < 2 || used <= inner.width + 1
        })
        .collect();
    let header = Row::new(shown.iter().map(|&i| {
        let arrow = if i == sort { if desc { "▼" } else { "▲" } } else { "" };
        format!("{}{arrow}", PHASE_COLUMNS[i])
    }))
    .style(Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED));
    let h = usize::from(inner.height.saturating_sub(1));
    let range = super::window(app.phase_order.len(), h, sel);
    let rows = range.map(|i| {
        let p = &phases[app.phase_order[i]];
        let wall = p.wall.sum_ns.max(1) as f64;
        let cells = [
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
        ];
        let row = Row::new(shown.iter().map(|&c| cells[c].clone()).collect::<Vec<_>>());
        if i == sel { row.style(app.theme.row_selected()) } else { row }
    });
    let constraints: Vec<Constraint> = shown.iter().map(|&i| Constraint::Length(widths[i])).collect();
    frame.render_widget(Table::new(rows, constraints).header(header).column_spacing(1), inner);
}
