//! Findings in the room left under the lanes: why the GPU is idle, with the fix and,
//! where the analysis priced it, what the fix would save per step.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use crate::analysis::Severity;
use crate::report::fixes::{FixLine, fix_lines};
use crate::tui::app::App;
use crate::tui::text;

/// Rows the findings need: the box's border and one line.
pub(super) const MIN_ROWS: u16 = crate::tui::layout::FINDINGS_ROWS;

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
    // Each distinct fix once, its what-if under it; later findings point back to it.
    for (i, (f, fix)) in findings.iter().zip(fix_lines(findings)).enumerate() {
        if lines.len() >= rows {
            break;
        }
        let (tag, style) = match f.severity {
            Severity::Critical => ("critical", app.theme.warn()),
            Severity::Warning => ("warning", app.theme.key()),
            Severity::Info => ("info", app.theme.dim()),
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{}. {tag} ", i + 1), style.add_modifier(Modifier::BOLD)),
            Span::styled(format!("{} ", f.rule), Style::new().add_modifier(Modifier::BOLD)),
            Span::raw(text::sanitize(&f.message).into_owned()),
        ]));
        lines.extend(fix_rows(app, fix));
    }
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}

// The fix lines of one finding: the fix and its what-if (the report's own line, so both
// say the same), or where an earlier finding shows it.
fn fix_rows(app: &App, fix: FixLine) -> Vec<Line<'static>> {
    let row = |k: &'static str, v: &str| {
        Line::from(vec![Span::styled(k, app.theme.dim()), Span::raw(text::sanitize(v).into_owned())])
    };
    match fix {
        FixLine::None { whatif } => {
            whatif.map(|w| row("  what-if ", w.strip_prefix("what-if: ").unwrap_or(&w))).into_iter().collect()
        }
        FixLine::Full { fix, whatif } => {
            let mut out = vec![row("  fix ", &fix)];
            if let Some(w) = whatif {
                out.push(row("  what-if ", w.strip_prefix("what-if: ").unwrap_or(&w)));
            }
            out
        }
        FixLine::As { n, note } => vec![row("  fix ", &FixLine::as_in(n, &note))],
    }
}
