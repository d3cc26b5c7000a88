//! Findings in the room left under the lanes: why the GPU is idle, with the fix and,
//! where the analysis priced it, what the fix would save per step.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use crate::analysis::Severity;
use crate::tui::app::App;
use crate::tui::text;

/// Rows the findings need before they are worth showing.
pub(super) const MIN_ROWS: u16 = 5;

/// Draw the findings into `area` (the free rows under the lanes).
pub(super) fn render(frame: &mut Frame, app: &App, area: Rect) {
    let findings = &app.analysis.findings;
    if findings.is_empty() || area.height < MIN_ROWS {
        return;
    }
    let block = crate::tui::panels::panel_block(app.theme, "Why the GPU is idle (lanescope report has the evidence)");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let mut lines = Vec::new();
    // Each line takes a row or more: lines past the box's height never show.
    let rows = usize::from(inner.height);
    for f in findings {
        if lines.len() >= rows {
            break;
        }
        let (tag, style) = match f.severity {
            Severity::Critical => ("critical", app.theme.warn()),
            Severity::Warning => ("warning", app.theme.key()),
            Severity::Info => ("info", app.theme.dim()),
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{tag} "), style.add_modifier(Modifier::BOLD)),
            Span::styled(format!("{} ", f.rule), Style::new().add_modifier(Modifier::BOLD)),
            Span::raw(text::sanitize(&f.message).into_owned()),
        ]));
        if f.fix.is_some() {
            lines.push(Line::from(vec![
                Span::styled("  fix ", app.theme.dim()),
                Span::raw(text::sanitize(&f.fix_text()).into_owned()),
            ]));
        }
        // The report's own line, so both say the same.
        if let Some(w) = crate::analysis::link::whatif_line(f) {
            let w = text::sanitize(&w).into_owned();
            let rest = w.strip_prefix("what-if: ").unwrap_or(&w).to_string();
            lines.push(Line::from(vec![Span::styled("  what-if ", app.theme.dim()), Span::raw(rest)]));
        }
    }
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}
