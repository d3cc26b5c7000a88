//! Time ruler: tick labels in seconds at a 1-2-5 step that follows the zoom, the
//! steady-state window (`[` .. `]`), the cursor (`▼`), the mark (`M`) and the
//! measured range between them.

use ratatui::Frame;
use ratatui::style::Modifier;

use crate::model::Ns;
use crate::tui::app::App;
use crate::tui::layout::Areas;
use crate::tui::text;
use crate::view::palette::glyph;

/// Pick a tick step (ns) and the decimals of its labels so labels do not collide.
pub(crate) fn ticks(t0: Ns, span: Ns, width: usize) -> (Ns, usize) {
    let mut step: Ns = 1;
    loop {
        for m in [1, 2, 5] {
            let s = step * m;
            let dec = text::decimals_for(s);
            let len = text::secs(t0.saturating_add(span), dec).len().max(text::secs(t0, dec).len());
            let cols = i128::from(s) * width as i128 / i128::from(span.max(1));
            if cols >= (len + 3) as i128 || s >= 1_000_000_000_000_000 {
                return (s, dec);
            }
        }
        step *= 10;
    }
}

// The steady-state window: `[` and `]` at its edges when in view, underlined between.
fn steady(buf: &mut ratatui::buffer::Buffer, app: &App, a: &Areas) {
    let Some((s, e)) = app.steady() else { return };
    let (vp, x0, y) = (&app.viewport, a.timeline_x(), a.ruler.y);
    let v = vp.view();
    if e <= v.t0 || s >= v.end() {
        return;
    }
    let lo = vp.col_of(s).unwrap_or(0);
    let hi = vp.col_of(e.saturating_sub(1)).unwrap_or(vp.width() - 1);
    for c in lo..=hi {
        if let Some(cell) = buf.cell_mut((x0 + c as u16, y)) {
            cell.modifier.insert(Modifier::UNDERLINED);
        }
    }
    let style = app.theme.key();
    if let Some(c) = vp.col_of(s) {
        buf.set_stringn(x0 + c as u16, y, glyph::STEADY_START.to_string(), 1, style);
    }
    if let Some(c) = vp.col_of(e.saturating_sub(1)) {
        buf.set_stringn(x0 + c as u16, y, glyph::STEADY_END.to_string(), 1, style);
    }
}

/// Draw the ruler.
pub(crate) fn render(frame: &mut Frame, app: &App, a: &Areas) {
    let theme = app.theme;
    let y = a.ruler.y;
    let x0 = a.timeline_x();
    let w = usize::from(a.timeline_w());
    let buf = frame.buffer_mut();
    let label = match (a.label_w >= 16, app.time_base != app.trace.meta.start_ns) {
        (true, false) => " time (s)",
        (true, true) => " s since step",
        (false, _) => " s",
    };
    buf.set_stringn(a.ruler.x, y, label, usize::from(a.label_w), theme.dim());
    buf.set_stringn(x0 - 1, y, "│", 1, theme.border());
    let vp = &app.viewport;
    let v = vp.view();
    // Ticks at round times since the time base (the first event, or the aligned step).
    let base = app.time_base;
    let (step, dec) = ticks(app.rel(v.t0), v.span, w);
    let cur = vp.cursor_col();
    // In i128: relative times can exceed i64 on a trace spanning its whole range.
    let rel0 = i128::from(v.t0) - i128::from(base);
    let first = rel0.div_euclid(i128::from(step)) * i128::from(step) + i128::from(base);
    let mut t = Some(first.clamp(i128::from(Ns::MIN), i128::from(Ns::MAX)) as Ns);
    // At most one tick per column (and two more), whatever the arithmetic says.
    let mut budget = w + 2;
    while let Some(tt) = t
        && tt < v.end()
        && budget > 0
    {
        budget -= 1;
        if let Some(c) = vp.col_of(tt) {
            let s = text::secs(app.rel(tt), dec);
            let hides_cursor = cur >= c && cur <= c + s.len();
            if c + 1 + s.len() <= w && !hides_cursor {
                buf.set_stringn(x0 + c as u16, y, "▏", 1, theme.dim());
                buf.set_stringn(x0 + c as u16 + 1, y, &s, s.len(), theme.dim());
            }
        }
        t = tt.checked_add(step);
    }
    steady(buf, app, a);
    if let Some(m) = vp.mark {
        let mc = vp.col_of(m);
        let (lo, hi) = match mc {
            Some(mc) => (mc.min(cur), mc.max(cur)),
            None if m < v.t0 => (0, cur),
            None => (cur, w - 1),
        };
        for c in lo..=hi {
            if let Some(cell) = buf.cell_mut((x0 + c as u16, y)) {
                cell.set_style(theme.measured());
            }
        }
        if let Some(mc) = mc {
            buf.set_stringn(x0 + mc as u16, y, glyph::MARK_POS.to_string(), 1, theme.key());
        }
    }
    if let Some(cell) = buf.cell_mut((x0 + cur as u16, y)) {
        cell.set_char(glyph::CURSOR).set_style(theme.key().add_modifier(Modifier::BOLD));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_follow_zoom() {
        // 9.3 s over 100 columns: labels like "2.0" need 6 columns: 1 s step would be ~10 cols.
        assert_eq!(ticks(0, 9_300_000_000, 100), (1_000_000_000, 0));
        let (s, d) = ticks(5_000_000_000, 10_000, 100);
        assert!(s <= 2_000 && d >= 6, "{s} {d}");
    }
}
