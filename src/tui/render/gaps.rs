//! Gap list: idle gaps of at least the threshold, longest first, with cause.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::widgets::{Clear, Paragraph, Row, Table, Wrap};

use crate::tui::app::{App, Panel};
use crate::tui::text;

/// Draw the gap list.
pub fn render(frame: &mut Frame, app: &App, area: Rect) {
    let Some(Panel::Gaps { sel, by_start }) = app.panel else { return };
    frame.render_widget(Clear, area);
    let gaps = &app.analysis.gaps;
    let title = format!(
        "{} gaps ≥ {} by {} (Enter zooms, o sorts, < > threshold)",
        text::count(gaps.len() as u64),
        text::dur(app.threshold()),
        if by_start { "start" } else { "duration" }
    );
    let block = super::panel_block(app, &title);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if gaps.is_empty() {
        let msg = format!("No idle gap of at least {}. < halves the threshold.", text::dur(app.threshold()));
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
    let range = super::window(gaps.len(), h, sel);
    let rows = range.filter_map(|row| {
        let gi = app.gap_at_row(row, by_start)?;
        let g = &gaps[gi];
        let r = Row::new(vec![
            (gi + 1).to_string(),
            g.device.to_string(),
            text::time(app.rel(g.start), 1_000),
            text::dur(g.dur()),
            g.cause.label().to_string(),
            g.phase.as_deref().map_or_else(|| "-".to_string(), |p| text::clean(p).into_owned()),
            text::clean(&g.evidence).into_owned(),
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
