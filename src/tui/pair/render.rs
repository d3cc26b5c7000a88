//! Drawing the two-run view with the one-run renderers, each run into its own areas:
//!
//! ```text
//! ┌ lanescope diff · before → after · aligned at step 2 of 30 · view 73 ms ───┐
//! │ ruler (the focused run's times)  ▼ both origins share this column         │
//! │ ▶ before · pageable.sqlite · step 2 at 4.12 s    (focused: marked, bold)  │
//! │ ▾ GPU 0 H200 │ ××××██▓▓  lanes of the first run                           │
//! │   after · pinned.sqlite · step 2 at 3.87 s                                │
//! │ ▾ GPU 0 H200 │ ██▓▓      lanes of the second run                          │
//! │ panel: the focused run's (details, phases, gaps), else the delta table    │
//! └ status and keys of the focused run, the pair's keys included ─────────────┘
//! ```

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};

use super::{Pair, RUN_NAMES};
use crate::tui::panels::help;
use crate::tui::render::{lanes, ruler, status, too_small};
use crate::tui::text;
use crate::view::align::{self, Align};

/// Draw the whole two-run screen.
pub fn draw(frame: &mut Frame, pair: &Pair) {
    let area = frame.area();
    let pa = pair.areas();
    if pa.too_small || (area.width, area.height) != pair.size {
        too_small(frame, area, pa.too_small);
        return;
    }
    header(frame, pair, pa.header);
    for (i, run) in pair.runs.iter().enumerate() {
        let Some(slot) = run.slot else { continue };
        title(frame, pair, i, slot.header);
        lanes::render(frame, run, &slot);
    }
    let focused = &pair.runs[pair.focus];
    if let Some(slot) = focused.slot {
        ruler::render(frame, focused, &slot);
    }
    if let Some(r) = pa.panel {
        match (&focused.panel, &pair.delta) {
            (Some(p), _) => p.render(frame, &focused.panel_context(), r),
            (None, Some(d)) => d.render(frame, focused, r),
            (None, None) => {}
        }
    }
    status::render(frame, focused, pa.status);
    if let Some(h) = focused.help {
        help::render(frame, &focused.panel_context(), h, pa.help);
    }
}

fn header(frame: &mut Frame, pair: &Pair, area: Rect) {
    let [b, a] = [&pair.runs[0].title, &pair.runs[1].title];
    let at = match pair.align {
        Align::Step(k) => {
            let name = text::sanitize(pair.runs[0].analysis.step_phase.as_deref().unwrap_or("step"));
            format!("aligned at `{name}` {}/{}", k + 1, align::common_steps(pair.spans()))
        }
        Align::Start => "each from its own start".to_string(),
    };
    let span = text::fmt_ns(pair.runs[pair.focus].viewport.view().span);
    let s = format!(" lanescope diff · {b} → {a} · {at} · view {span}");
    let style = pair.runs[pair.focus].theme.bar().add_modifier(Modifier::BOLD);
    let w = usize::from(area.width);
    frame.render_widget(Line::styled(format!("{:<w$}", text::ellipsize(&s, w)), style), area);
}

// The block's title row: which run, its file, where its origin lies; the focused one marked.
fn title(frame: &mut Frame, pair: &Pair, i: usize, area: Rect) {
    let run = &pair.runs[i];
    let theme = run.theme;
    let focused = i == pair.focus;
    let origin = pair.origins[i];
    let step = match pair.align {
        Align::Step(k) => run.analysis.step_instances.get(k),
        Align::Start => None,
    };
    let place = match step {
        Some(&(s, e)) => {
            format!(
                "{} at {}, {} long",
                pair.step_names[i],
                text::time(s - run.trace.meta.start_ns, 1_000_000),
                text::fmt_ns(e - s)
            )
        }
        None => format!("from its start · trace {}", text::fmt_ns(run.trace.meta.end_ns - origin)),
    };
    let mark = if focused { "▶" } else { " " };
    let style = if focused { theme.focus().add_modifier(Modifier::BOLD) } else { theme.group() };
    let head = format!("{mark} {} · {}", RUN_NAMES[i], run.title);
    let line = Line::from(vec![Span::styled(head, style), Span::styled(format!(" · {place}"), theme.dim())]);
    frame.buffer_mut().set_line(area.x, area.y, &line, area.width);
}
