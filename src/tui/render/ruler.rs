//! Time ruler: tick labels in seconds at a 1-2-5 step that follows the zoom, the
//! cursor (`▼`), the mark (`M`) and the measured range between them.

use ratatui::Frame;
use ratatui::style::Modifier;

use crate::model::Ns;
use crate::tui::app::App;
use crate::tui::layout::Areas;
use crate::tui::text;
use crate::tui::theme::glyph;

/// Pick a tick step (ns) and the decimals of its labels so labels do not collide.
pub fn ticks(t0: Ns, span: Ns, width: usize) -> (Ns, usize) {
    let mut step: Ns = 1;
    loop {
        for m in [1, 2, 5] {
            let s = step * m;
            let dec = text::decimals_for(s);
            let len = text::secs(t0 + span, dec).len().max(text::secs(t0, dec).len());
            let cols = i128::from(s) * width as i128 / i128::from(span.max(1));
            if cols >= (len + 3) as i128 || s >= 1_000_000_000_000_000 {
                return (s, dec);
            }
        }
        step *= 10;
    }
}

/// Draw the ruler.
pub fn render(frame: &mut Frame, app: &App, a: &Areas) {
    let theme = app.theme;
    let y = a.ruler.y;
    let x0 = a.timeline_x();
    let w = usize::from(a.timeline_w());
    let buf = frame.buffer_mut();
    let label = if a.label_w >= 16 { " time (s)" } else { " s" };
    buf.set_stringn(a.ruler.x, y, label, usize::from(a.label_w), theme.dim());
    buf.set_stringn(x0 - 1, y, "│", 1, theme.border());
    let v = app.view();
    // Ticks at round times since the first event.
    let base = app.trace.meta.start_ns;
    let (step, dec) = ticks(v.t0 - base, v.span, w);
    let cur = app.cursor_col();
    let mut t = (v.t0 - base).div_euclid(step) * step + base;
    if t < v.t0 {
        t += step;
    }
    while t < v.t0 + v.span {
        if let Some(c) = app.col_of(t) {
            let s = text::secs(t - base, dec);
            let hides_cursor = cur >= c && cur <= c + s.len();
            if c + 1 + s.len() <= w && !hides_cursor {
                buf.set_stringn(x0 + c as u16, y, "▏", 1, theme.dim());
                buf.set_stringn(x0 + c as u16 + 1, y, &s, s.len(), theme.dim());
            }
        }
        t += step;
    }
    if let Some(m) = app.mark {
        let mc = app.col_of(m);
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
