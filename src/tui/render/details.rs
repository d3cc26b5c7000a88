//! Details panel: the selected event or gap, computed at selection time.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use crate::tui::app::App;

/// Draw the details panel.
pub fn render(frame: &mut Frame, app: &App, area: Rect) {
    frame.render_widget(Clear, area);
    let block = super::panel_block(app, "Details (i hides, c jumps call↔op, f fits)");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(d) = &app.details else {
        let p = Paragraph::new(
            "Nothing selected. Enter selects the event under the cursor, Tab the next one, ] the next gap.",
        )
        .wrap(Wrap { trim: true });
        frame.render_widget(p, inner);
        return;
    };
    let kw = d.lines.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0).min(12);
    let line = |(k, v): &(String, String)| {
        Line::from(vec![Span::styled(format!("{k:<kw$} "), app.theme.dim()), Span::raw(v.clone())])
    };
    let title = Line::from(Span::styled(d.title.clone(), Style::new().add_modifier(Modifier::BOLD)));
    let rows = usize::from(inner.height.saturating_sub(1));
    if d.lines.len() > rows && inner.width >= 100 {
        // Wide and short (a bottom panel): two columns of facts.
        frame.render_widget(title, Rect { height: 1, ..inner });
        let half = inner.width / 2;
        let split = d.lines.len().div_ceil(2);
        let (left, right) = d.lines.split_at(split.min(d.lines.len()));
        let body = Rect { y: inner.y + 1, height: inner.height.saturating_sub(1), ..inner };
        let l: Vec<Line> = left.iter().map(line).collect();
        let r: Vec<Line> = right.iter().map(line).collect();
        frame.render_widget(Paragraph::new(l), Rect { width: half - 1, ..body });
        frame.render_widget(Paragraph::new(r), Rect { x: body.x + half, width: inner.width - half, ..body });
        return;
    }
    let mut lines = vec![title];
    lines.extend(d.lines.iter().map(line));
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}
