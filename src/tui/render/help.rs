//! Help overlay, generated from the key table, plus the glyph legend.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use crate::tui::app::App;
use crate::tui::input::{self, Section};
use crate::tui::theme::glyph;

fn section_lines(app: &App, s: &Section, out: &mut Vec<Line<'static>>) {
    out.push(Line::from(Span::styled(s.title.to_string(), Style::new().add_modifier(Modifier::BOLD))));
    for b in s.bindings.iter().filter(|b| !b.label.is_empty()) {
        out.push(Line::from(vec![
            Span::styled(format!("  {:<11}", b.label), app.theme.key()),
            Span::raw(b.help.to_string()),
        ]));
    }
    out.push(Line::default());
}

/// Every help line, in one column.
pub fn lines(app: &App) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for s in input::GLOBAL {
        section_lines(app, s, &mut out);
    }
    section_lines(app, &input::LIST, &mut out);
    section_lines(app, &input::HELP, &mut out);
    out.push(Line::from(Span::styled("Legend", Style::new().add_modifier(Modifier::BOLD))));
    let legend = [
        (glyph::SHADES.iter().rev().collect::<String>(), "busy share of a cell: full, ≥½, ≥¼, >0"),
        (format!("{}", glyph::GAP), "GPU idle gap ≥ threshold, even if short"),
        (format!("{}{}", glyph::COPY_ONLY, glyph::COPY_ONLY_LOW), "GPU only copying, no kernel (GPU row)"),
        (format!("{}", glyph::PAGEABLE), "copy from/to pageable host memory"),
        (format!("{}", glyph::SYNC), "call blocking its thread (sync, sync copy)"),
        (format!("{}", glyph::MARK), "NVTX mark (instant)"),
        (format!("{} {}", glyph::CURSOR, glyph::MARK_POS), "cursor and mark on the ruler"),
        ("▾ ▸ *".to_string(), "expanded / collapsed group, pinned lane"),
    ];
    for (g, what) in legend {
        out.push(Line::from(vec![Span::styled(format!("  {g:<11}"), app.theme.key()), Span::raw(what)]));
    }
    out.push(Line::default());
    out.push(Line::from(Span::styled("Panels", Style::new().add_modifier(Modifier::BOLD))));
    for (k, what) in [
        ("Enter / i", "details: times, bytes, GB/s, call, NVTX"),
        ("p", "phases: NVTX ranges by name, GPU busy, idle"),
        ("g", "gaps ≥ threshold, longest first, with cause"),
        ("?", "this help"),
    ] {
        out.push(Line::from(vec![Span::styled(format!("  {k:<11}"), app.theme.key()), Span::raw(what)]));
    }
    out
}

/// Lines the help shows in one column at `width` (for scrolling limits).
pub fn height(app: &App, width: u16) -> usize {
    let all = lines(app);
    if width >= 100 { split(&all).0.max(all.len() - split(&all).0) } else { all.len() }
}

// Split at the first blank line after the middle: (left length, right start).
fn split(all: &[Line]) -> (usize, usize) {
    let mid = all.len() / 2;
    let at = (mid..all.len()).find(|&i| all[i].width() == 0).unwrap_or(all.len());
    (at, (at + 1).min(all.len()))
}

/// Draw the help overlay.
pub fn render(frame: &mut Frame, app: &App, area: Rect) {
    let w = area.width.saturating_sub(4).min(190);
    let h = area.height.saturating_sub(2);
    let r = Rect::new(area.x + (area.width - w) / 2, area.y + 1, w, h);
    frame.render_widget(Clear, r);
    let block = super::panel_block(app, "Help: j/k scroll, ? or Esc close, q quit");
    let inner = block.inner(r);
    frame.render_widget(block, r);
    let mut all = lines(app);
    let max_scroll = height(app, inner.width).saturating_sub(usize::from(inner.height));
    let scroll = (app.help.unwrap_or(0).min(max_scroll) as u16, 0);
    if inner.width >= 100 {
        let (at, right) = split(&all);
        let rest = all.split_off(right);
        all.truncate(at);
        let half = inner.width / 2;
        frame.render_widget(Paragraph::new(all).scroll(scroll), Rect { width: half - 1, ..inner });
        frame.render_widget(
            Paragraph::new(rest).scroll(scroll),
            Rect { x: inner.x + half, width: inner.width - half, ..inner },
        );
    } else {
        frame.render_widget(Paragraph::new(all).scroll(scroll), inner);
    }
}
