//! The delta table of the two-run view: the verdict, then per phase (the run's steady
//! step first) the mean wall time per instance and the steady GPU idle, before and
//! after, with the change: the numbers of `lanescope diff`, read from its [`Diff`].

use ratatui::Frame;
use ratatui::crossterm::event::MouseEventKind;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph};

use crate::diff::{Compared, Diff, Status, number};
use crate::report::fields;
use crate::tui::app::App;
use crate::tui::text;

/// Column headers after the phase name.
const HEADS: [&str; 6] = ["wall B", "wall A", "Δ", "idle B", "idle A", "Δ"];
/// Widths of those columns.
const WIDTHS: [usize; 6] = [9, 9, 6, 9, 9, 6];
/// Rows the verdict always may take; it takes more while the header and
/// [`MIN_TABLE_ROWS`] rows still fit (the table scrolls).
const VERDICT_LINES: usize = 2;
/// Table rows the verdict leaves room for.
const MIN_TABLE_ROWS: usize = 3;

/// One row: a phase (or the whole run) and its six cells.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    name: String,
    cells: [String; 6],
}

/// The table, built once when opened, and its scroll.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct DeltaTable {
    verdict: String,
    rows: Vec<Row>,
    scroll: usize,
}

// A duration in ns, or a dash.
fn ns_or_dash(v: Option<f64>) -> String {
    v.map_or_else(|| "–".to_string(), |ns| text::fmt_ns(ns.round() as crate::model::Ns))
}

// A change in percent (`+12%`), or what replaces it for a phase in one run only.
fn change(pct: Option<f64>, status: Status) -> String {
    match (status, pct) {
        (Status::Added, _) => "new".to_string(),
        (Status::Removed, _) => "gone".to_string(),
        (Status::Both, Some(p)) => format!("{p:+.0}%"),
        (Status::Both, None) => String::new(),
    }
}

// The six cells of `values` for the wall and idle metrics at `wall` and `idle`.
fn cells(values: &Compared, wall: &str, idle: &str, status: Status) -> [String; 6] {
    let (wb, wa) = values.pair(wall);
    let (ib, ia) = values.pair(idle);
    let pct = |path: &str| number(&values.delta, &format!("{path}.pct"));
    [
        ns_or_dash(wb),
        ns_or_dash(wa),
        change(pct(wall), status),
        ns_or_dash(ib),
        ns_or_dash(ia),
        change(pct(idle), status),
    ]
}

impl DeltaTable {
    /// Build the rows of `d`: the steady step of the whole run, then every phase.
    pub(crate) fn new(d: &Diff) -> Self {
        let run = Row {
            name: "steady step (run)".to_string(),
            cells: cells(&d.overall, "steady_step_mean_ns", "steady.idle_ns", Status::Both),
        };
        let phases = d.phases.iter().map(|p| Row {
            name: text::sanitize(&p.name).into_owned(),
            cells: cells(&p.values, fields::WALL_MEAN.key, "steady.idle_ns", p.status),
        });
        Self {
            verdict: text::sanitize(&d.verdict).into_owned(),
            rows: std::iter::once(run).chain(phases).collect(),
            scroll: 0,
        }
    }

    /// Scroll with the wheel over the table at `area`; true when it moved.
    pub(crate) fn on_mouse(&mut self, kind: MouseEventKind, area: Rect) -> bool {
        let (w, h) = (usize::from(area.width.saturating_sub(2)), usize::from(area.height.saturating_sub(2)));
        let verdict = self.verdict_shown(w, h).1;
        let shown = h.saturating_sub(1 + verdict).max(1);
        let max = self.rows.len().saturating_sub(shown);
        let to = match kind {
            MouseEventKind::ScrollDown => (self.scroll + 3).min(max),
            MouseEventKind::ScrollUp => self.scroll.saturating_sub(3),
            _ => return false,
        };
        let moved = to != self.scroll;
        self.scroll = to;
        moved
    }

    fn line(name: &str, cells: &[String], name_w: usize) -> String {
        use std::fmt::Write as _;
        let mut s = format!("{:<name_w$}", text::ellipsize(name, name_w));
        for (c, w) in cells.iter().zip(WIDTHS) {
            let _ = write!(s, " {c:>w$}");
        }
        s
    }

    /// The verdict's lines at `width`, and how many of them show in `height` rows.
    fn verdict_shown(&self, width: usize, height: usize) -> (Vec<String>, usize) {
        let lines = crate::text::wrap(&self.verdict, width, 2);
        let table = 1 + self.rows.len().min(MIN_TABLE_ROWS);
        let take = verdict_rows(lines.len(), height, table);
        (lines, take)
    }

    /// Draw the verdict and the rows that fit into `area`.
    pub(crate) fn render(&self, frame: &mut Frame, app: &App, area: Rect) {
        frame.render_widget(Clear, area);
        let block =
            crate::tui::panels::panel_block(app.theme, "before → after: wall per instance, steady GPU idle (P closes)");
        let inner = block.inner(area);
        frame.render_widget(block, area);
        let width = usize::from(inner.width);
        let name_w = width.saturating_sub(WIDTHS.iter().map(|w| w + 1).sum::<usize>()).max(8);
        let (verdict, take) = self.verdict_shown(width, usize::from(inner.height));
        let mut lines: Vec<Line> = verdict
            .iter()
            .take(take)
            .enumerate()
            .map(|(i, l)| {
                // A verdict cut short says so.
                let l = if i + 1 == take && take < verdict.len() {
                    text::ellipsize(&format!("{l}…"), width).into_owned()
                } else {
                    l.clone()
                };
                Line::styled(l, Style::new().add_modifier(Modifier::BOLD))
            })
            .collect();
        let heads: Vec<String> = HEADS.iter().map(ToString::to_string).collect();
        lines.push(Line::styled(Self::line("phase", &heads, name_w), app.theme.dim()));
        let room = usize::from(inner.height).saturating_sub(lines.len());
        for r in self.rows.iter().skip(self.scroll).take(room) {
            lines.push(Line::raw(Self::line(&r.name, &r.cells, name_w)));
        }
        frame.render_widget(Paragraph::new(lines), inner);
    }
}

// Rows for a verdict of `lines` in a box of `height` rows over `table_rows` that must
// show (header included): at least VERDICT_LINES, and every row those leave.
fn verdict_rows(lines: usize, height: usize, table_rows: usize) -> usize {
    lines.min(VERDICT_LINES.max(height.saturating_sub(table_rows)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_verdict_takes_the_rows_the_table_leaves() {
        // Room enough: the whole verdict shows.
        assert_eq!(verdict_rows(4, 12, 6), 4);
        // A short box: the verdict keeps its two rows.
        assert_eq!(verdict_rows(4, 6, 4), VERDICT_LINES);
        // Never more rows than the verdict has.
        assert_eq!(verdict_rows(1, 12, 2), 1);
    }

    #[test]
    fn changes_say_new_and_gone_for_phases_in_one_run() {
        assert_eq!(change(Some(-61.4), Status::Both), "-61%");
        assert_eq!(change(Some(12.0), Status::Both), "+12%");
        assert_eq!(change(None, Status::Added), "new");
        assert_eq!(change(None, Status::Removed), "gone");
        assert_eq!(ns_or_dash(None), "–");
        let row = DeltaTable::line("a name longer than ten", &[String::from("1 ms")], 10);
        assert!(row.starts_with("a name lo…") && row.ends_with("     1 ms"), "{row}");
    }
}
