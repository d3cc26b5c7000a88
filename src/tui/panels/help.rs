//! Help overlay: its scroll state, its keys (the key table's help section) and its
//! drawing, generated from the key table (keys, mouse), plus the glyph legend.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use crate::tui::input::{self, Action, Section};
use crate::view::palette::glyph;

use super::{Context, panel_block};

fn section_lines(app: &Context, s: &Section, out: &mut Vec<Line<'static>>) {
    out.push(Line::from(Span::styled(s.title.to_string(), Style::new().add_modifier(Modifier::BOLD))));
    for b in s.bindings.iter().filter(|b| !b.label.is_empty()) {
        out.push(Line::from(vec![
            Span::styled(format!("  {:<11}", b.label), app.theme.key()),
            Span::raw(b.help.to_string()),
        ]));
    }
    out.push(Line::default());
}

/// State of the help overlay.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Help {
    /// First line shown.
    pub scroll: usize,
}

impl Help {
    /// Scroll by a list action (the help keys); true when it was one.
    pub(crate) fn on_action(&mut self, action: Action, app: &Context) -> bool {
        let delta: isize = match action {
            Action::ListUp => -1,
            Action::ListDown => 1,
            Action::ListPageUp => -10,
            Action::ListPageDown => 10,
            _ => return false,
        };
        self.scroll_by(delta, app);
        true
    }

    /// Scroll by `delta` lines, within what the help rectangle can show.
    pub(crate) fn scroll_by(&mut self, delta: isize, app: &Context) {
        let inner = app.help_inner;
        let max = height(app, inner.width).saturating_sub(usize::from(inner.height));
        self.scroll = (self.scroll as isize).saturating_add(delta).clamp(0, max as isize) as usize;
    }
}

/// Every help line, in one column.
pub(crate) fn lines(app: &Context) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for s in input::sections() {
        section_lines(app, s, &mut out);
    }
    out.push(Line::from(Span::styled("Mouse (off with --no-mouse)", Style::new().add_modifier(Modifier::BOLD))));
    for (m, what) in input::MOUSE {
        out.push(Line::from(vec![Span::styled(format!("  {m:<11}"), app.theme.key()), Span::raw(*what)]));
    }
    out.push(Line::default());
    out.push(Line::from(Span::styled("Legend", Style::new().add_modifier(Modifier::BOLD))));
    let legend = [
        (glyph::SHADES.iter().rev().collect::<String>(), "busy share of a cell: full, ≥½, ≥¼, >0"),
        (format!("{}", glyph::GAP), "GPU idle gap ≥ threshold, even if short"),
        (format!("{}{}", glyph::COPY_ONLY, glyph::COPY_ONLY_LOW), "GPU only copying, no kernel (GPU row)"),
        (format!("{}", glyph::COLLECTIVE_WAIT), "waiting in a collective for another rank"),
        (format!("{}", glyph::PAGEABLE), "copy from/to pageable host memory"),
        (format!("{}", glyph::SYNC), "call blocking its thread (sync, sync copy)"),
        (format!("{}", glyph::MARK), "NVTX mark (instant)"),
        (format!("{}{}{}", glyph::BARS[0], glyph::BARS[3], glyph::BARS[7]), "GPU metric: mean of the cell's samples"),
        (format!("{}", glyph::NO_SAMPLE), "GPU metric: no sample in the cell"),
        (format!("{} {}", glyph::CURSOR, glyph::MARK_POS), "cursor and mark on the ruler"),
        (format!("{} {}", glyph::STEADY_START, glyph::STEADY_END), "steady state (steps after the first) on the ruler"),
        ("▾ ▸ *".to_string(), "expanded / collapsed group, pinned lane"),
    ];
    for (g, what) in legend {
        out.push(Line::from(vec![Span::styled(format!("  {g:<11}"), app.theme.key()), Span::raw(what)]));
    }
    out
}

/// Lines the help shows in one column at `width` (for scrolling limits).
pub(crate) fn height(app: &Context, width: u16) -> usize {
    let all = lines(app);
    if width >= 100 { split(&all).0.max(all.len() - split(&all).0) } else { all.len() }
}

// Split at the first blank line after the middle: (left length, right start).
fn split(all: &[Line]) -> (usize, usize) {
    let mid = all.len() / 2;
    let at = (mid..all.len()).find(|&i| all[i].width() == 0).unwrap_or(all.len());
    (at, (at + 1).min(all.len()))
}

/// Draw the help overlay into `r` (`layout::Areas::help`).
pub(crate) fn render(frame: &mut Frame, app: &Context, help: Help, r: Rect) {
    frame.render_widget(Clear, r);
    let block = panel_block(app.theme, "Help: j/k scroll, ? or Esc close, q quit");
    let inner = block.inner(r);
    frame.render_widget(block, r);
    let mut all = lines(app);
    let max_scroll = height(app, inner.width).saturating_sub(usize::from(inner.height));
    let scroll = (help.scroll.min(max_scroll) as u16, 0);
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
