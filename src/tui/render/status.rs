//! Status lines: what is under the cursor and selected, then the keys that matter now.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::tui::app::{App, Selection};
use crate::tui::input::{self, Mode};
use crate::tui::panels::search;
use crate::tui::text;

fn info(app: &App) -> Vec<(String, Style)> {
    let theme = app.theme;
    let mut out: Vec<(String, Style)> = Vec::new();
    if let Some(m) = &app.message {
        out.push((m.clone(), theme.warn()));
    }
    if let Some(d) = app.viewport.measured() {
        out.push((format!("mark→cursor {}", text::fmt_ns(d)), theme.key()));
    }
    match app.selection {
        Some(Selection::Gap(i)) => {
            if let Some(g) = app.gaps.get(i) {
                let mut s = format!(
                    "gap {}/{} GPU {} · {} idle · cause {}",
                    i + 1,
                    app.gaps.len(),
                    g.device,
                    text::fmt_ns(g.dur()),
                    g.cause.label()
                );
                if !g.evidence.is_empty() {
                    s.push_str(" · ");
                    s.push_str(&text::sanitize(&g.evidence));
                }
                out.push((s, theme.warn().remove_modifier(ratatui::style::Modifier::BOLD)));
            }
        }
        Some(Selection::Event(r)) => {
            let l = &app.trace.lanes[r.lane as usize];
            let i = r.idx as usize;
            out.push((
                format!("{} · {}", text::sanitize(app.trace.strings.get(l.ev.name[i])), text::fmt_ns(l.ev.dur(i))),
                Style::new(),
            ));
        }
        None => {}
    }
    if app.search.active() {
        out.push((
            format!(
                "/{}: {} matches",
                text::ellipsize(&text::sanitize(&app.search.query), 24),
                text::fmt_count(app.search.total as u64)
            ),
            theme.key(),
        ));
    }
    let res = app.viewport.ns_per_cell();
    out.push((format!("cursor {}", text::time(app.rel(app.viewport.cursor), res)), Style::new()));
    if app.analysing() {
        out.push(("analysing…".to_string(), theme.key()));
    } else {
        let count = if app.busy() { "…".to_string() } else { text::fmt_count(app.gaps.len() as u64) };
        out.push((format!("gaps ≥ {}: {count}", text::fmt_ns(app.threshold())), Style::new()));
    }
    out
}

// (key, what, priority: lower shows first when space is short), from the key table.
fn keys(app: &App) -> Vec<(&'static str, &'static str, u8)> {
    let mode = if app.mode() == Mode::List { Mode::List } else { Mode::Timeline };
    input::hints(mode, app.facts())
}

fn fit(spans: &mut Vec<Span<'static>>, used: &mut usize, width: usize, s: String, style: Style) -> bool {
    let n = s.chars().count();
    if *used + n > width {
        let room = width.saturating_sub(*used);
        if room > 8 {
            spans.push(Span::styled(text::ellipsize(&s, room).into_owned(), style));
            *used = width;
        }
        return false;
    }
    *used += n;
    spans.push(Span::styled(s, style));
    true
}

fn info_line(app: &App, width: usize) -> Line<'static> {
    let mut spans = Vec::new();
    let mut used = 0;
    for (i, (s, st)) in info(app).into_iter().enumerate() {
        let s = if i == 0 { format!(" {s}") } else { format!(" │ {s}") };
        if !fit(&mut spans, &mut used, width, s, st) {
            break;
        }
    }
    Line::from(spans)
}

fn keys_line(app: &App, width: usize) -> Line<'static> {
    let theme = app.theme;
    let all = keys(app);
    let cost = |k: &str, what: &str| k.chars().count() + what.chars().count() + 3;
    // Keep the most important keys that fit, shown in their usual order.
    let mut keep = vec![false; all.len()];
    let mut used = 0;
    for prio in 0..=5 {
        for (i, (k, what, p)) in all.iter().enumerate() {
            if *p == prio && used + cost(k, what) <= width {
                used += cost(k, what);
                keep[i] = true;
            }
        }
    }
    let mut spans = Vec::new();
    for (i, (k, what, _)) in all.into_iter().enumerate() {
        if keep[i] {
            spans.push(Span::styled(format!(" {k}"), theme.key()));
            spans.push(Span::raw(format!(" {what} ")));
        }
    }
    Line::from(spans)
}

/// Draw the status lines (one or two).
pub(crate) fn render(frame: &mut Frame, app: &App, area: Rect) {
    let width = usize::from(area.width);
    let theme = app.theme;
    if let Some(q) = &app.search.input {
        search::render_prompt(frame, app.theme, area, q);
        if area.height > 1 {
            frame.render_widget(info_line(app, width), Rect { height: 1, ..area });
        }
        return;
    }
    frame.buffer_mut().set_style(area, theme.bar());
    if area.height >= 2 {
        frame.render_widget(info_line(app, width), Rect { height: 1, ..area });
        frame.render_widget(keys_line(app, width), Rect { height: 1, y: area.y + 1, ..area });
    } else {
        // One line: the facts first, then as many keys as fit.
        let mut line = info_line(app, width);
        let used: usize = line.width();
        let rest = keys_line(app, width.saturating_sub(used + 3));
        if rest.width() > 0 {
            line.spans.push(Span::raw(" │"));
            line.spans.extend(rest.spans);
        }
        frame.render_widget(line, area);
    }
}
