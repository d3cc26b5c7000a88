//! Title bar: trace name (demo marked), nsys version, visible window.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::tui::app::App;
use crate::tui::text;

/// Draw the title bar.
pub(super) fn render(frame: &mut Frame, app: &App, area: Rect) {
    let t = &app.trace;
    let v = app.viewport.view();
    let res = app.viewport.ns_per_cell();
    let name = if app.demo && !app.title.contains("demo") { format!("demo: {}", app.title) } else { app.title.clone() };
    let mut parts: Vec<String> = vec![format!(" lanescope · {name}")];
    if !t.meta.nsys_version.is_empty() {
        parts.push(text::sanitize(&t.meta.producer()).into_owned());
    }
    parts.push(format!("view {} + {}", text::time(app.rel(v.t0), res), text::fmt_ns(v.span)));
    parts.push(format!("trace {}", text::fmt_ns(app.viewport.duration())));
    parts.push(format!("{} events", text::fmt_count(t.event_count() as u64)));
    let mut s = String::new();
    for p in parts {
        let add = if s.is_empty() { p } else { format!(" · {p}") };
        if s.chars().count() + add.chars().count() > usize::from(area.width) {
            break;
        }
        s.push_str(&add);
    }
    let line = Line::from(Span::styled(
        format!("{s:<w$}", w = usize::from(area.width)),
        app.theme.bar().add_modifier(ratatui::style::Modifier::BOLD),
    ));
    frame.render_widget(line, area);
}
