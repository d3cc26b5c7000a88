//! Lane rows: a label column, then one cell per time bucket. Per row the work is
//! O(columns x log events) through the render index (GPU metric rows: through the
//! series' prefix sums, `metrics.rs`); nothing here walks events or samples.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::style::{Modifier, Style};

use super::metrics;
use crate::analysis::DeviceActivity;
use crate::model::Ns;
use crate::tui::app::{App, Selection};
use crate::tui::layout::Areas;
use crate::tui::text;
use crate::tui::theme::Theme;
use crate::view::index::CellInfo;
use crate::view::palette::{Class, cell_glyph, classify, glyph};
use crate::view::rows::{GroupKind, Row};

/// Shortest run of full cells that gets a name written inside.
const MIN_LABEL_RUN: usize = 4;

struct Ctx<'a> {
    app: &'a App,
    x0: u16,
    w: usize,
    edges: Vec<Ns>,
    // per-frame cache of lane rasters, by lane index
    cache: Vec<Option<Vec<CellInfo>>>,
}

impl Ctx<'_> {
    fn raster(&mut self, lane: u32) -> &[CellInfo] {
        let li = lane as usize;
        if self.cache[li].is_none() {
            let app = self.app;
            let mut out = Vec::with_capacity(self.w);
            app.index.lanes[li].raster_edges(&app.trace.lanes[li].ev, &self.edges, app.search.lane(li), &mut out);
            self.cache[li] = Some(out);
        }
        self.cache[li].as_deref().unwrap_or_default()
    }
}

/// Draw the pinned rows and the visible scrolling rows; returns the first row left free.
pub(crate) fn render(frame: &mut Frame, app: &App, a: &Areas) -> u16 {
    let w = usize::from(a.timeline_w());
    let mut ctx =
        Ctx { app, x0: a.timeline_x(), w, edges: app.viewport.edges_on(w), cache: vec![None; app.trace.lanes.len()] };
    let buf = frame.buffer_mut();
    let bottom = a.lanes.y + a.lanes.height;
    let mut y = a.lanes.y;
    let mut drawn: Vec<(u16, usize)> = Vec::new();
    for (i, &l) in app.lanes.pinned.iter().enumerate() {
        if y >= bottom {
            break;
        }
        draw_row(buf, &mut ctx, a, Row::Lane(l), i, y, true);
        drawn.push((y, i));
        y += 1;
    }
    if !app.lanes.pinned.is_empty() && y < bottom {
        let line = "─".repeat(usize::from(a.lanes.width));
        buf.set_stringn(a.lanes.x, y, &line, usize::from(a.lanes.width), app.theme.border());
        y += 1;
    }
    let first = y;
    for (k, &row) in app.lanes.rows.iter().enumerate().skip(app.lanes.scroll) {
        if y >= bottom {
            break;
        }
        let focus_index = app.lanes.pinned.len() + k;
        draw_row(buf, &mut ctx, a, row, focus_index, y, false);
        drawn.push((y, focus_index));
        y += 1;
    }
    scrollbar(buf, app, a, first, bottom);
    overlays(buf, &ctx, &drawn);
    y
}

fn draw_row(buf: &mut Buffer, ctx: &mut Ctx, a: &Areas, row: Row, focus_index: usize, y: u16, pinned: bool) {
    let app = ctx.app;
    let theme = app.theme;
    let lw = usize::from(a.label_w);
    let (label, style) = match row {
        Row::Group(g) => {
            let grp = &app.lanes.groups[g];
            let arrow = if grp.collapsed { '▸' } else { '▾' };
            (format!("{arrow} {}", grp.title), theme.group())
        }
        Row::Lane(l) => {
            let prefix = if pinned { "* " } else { "  " };
            let name = &app.lanes.labels[l as usize];
            // The kind always shows: the thread's name gives way, its id last.
            let tag = app.lanes.kind_tags[l as usize];
            let label = if tag.is_empty() {
                format!("{prefix}{name}")
            } else {
                let room = lw.saturating_sub(prefix.len() + tag.chars().count() + 1);
                format!("{prefix}{} {tag}", keep_tail(name, room))
            };
            (label, Style::new())
        }
        Row::Metric(s) => (format!("  {}", app.lanes.metric_labels[s as usize]), Style::new()),
    };
    let style = if focus_index == app.lanes.focus { theme.focus() } else { style };
    let label = text::ellipsize(&label, lw);
    buf.set_stringn(a.lanes.x, y, format!("{label:<lw$}"), lw, style);
    buf.set_stringn(a.lanes.x + a.label_w, y, "│", 1, theme.border());
    match row {
        Row::Lane(l) => draw_lane(buf, ctx, l, y),
        Row::Metric(s) => metrics::draw(buf, theme, &app.trace.counters.series[s as usize], &ctx.edges, (ctx.x0, y)),
        Row::Group(g) => match app.lanes.groups[g].kind {
            GroupKind::Gpu(d) => {
                if let Some(i) = app.devices.iter().position(|x| x.device == d) {
                    draw_gpu(buf, ctx, i, y);
                }
            }
            GroupKind::Thread { .. } | GroupKind::Others => draw_thread(buf, ctx, g, y),
            GroupKind::Cpus { pid } => draw_cpus(buf, ctx, pid, y),
        },
    }
}

// `name` in `max` columns, cut in the middle so that its last word (a thread id) stays.
fn keep_tail(name: &str, max: usize) -> String {
    let n = name.chars().count();
    if n <= max {
        return name.to_string();
    }
    let Some((head, tail)) = name.rsplit_once(' ') else { return text::ellipsize(name, max).into_owned() };
    let tail_n = tail.chars().count();
    if tail_n + 2 > max {
        return text::ellipsize(name, max).into_owned();
    }
    let head: String = head.chars().take(max - tail_n - 2).collect();
    format!("{head}… {tail}")
}

fn selected_event(app: &App, lane: u32) -> Option<u32> {
    match app.selection {
        Some(Selection::Event(r)) if r.lane == lane => Some(r.idx),
        _ => None,
    }
}

fn draw_lane(buf: &mut Buffer, ctx: &mut Ctx, lane: u32, y: u16) {
    let (app, x0) = (ctx.app, ctx.x0);
    let cells = ctx.raster(lane);
    let l = &app.trace.lanes[lane as usize];
    let sel = selected_event(app, lane);
    let theme = app.theme;
    let mut k = 0;
    while k < cells.len() {
        let c = cells[k];
        if !c.any || c.dom == CellInfo::NONE {
            k += 1;
            continue;
        }
        let class = classify(l, c.dom as usize);
        let base = theme.event(class, l.ev.name[c.dom as usize]);
        let mut style = base;
        if c.matched {
            style = style.patch(theme.matched());
        }
        if sel == Some(c.dom) {
            style = style.patch(theme.selected());
        }
        // A run of full cells showing the same event: write its name inside.
        let mut end = k;
        while end < cells.len() && cells[end].dom == c.dom && cells[end].busy >= 0.875 {
            end += 1;
        }
        let name = if end - k >= MIN_LABEL_RUN && !matches!(class, Class::Mark | Class::Sample) {
            let name = text::sanitize(app.trace.strings.get(l.ev.name[c.dom as usize]));
            // Write a cut name only when enough of it shows to be read.
            (name.chars().count() <= end - k || end - k >= 2 * MIN_LABEL_RUN)
                .then(|| text::ellipsize(&name, end - k).into_owned())
        } else {
            None
        };
        if let Some(name) = name {
            let mut lstyle = theme.label(base);
            if c.matched {
                lstyle = lstyle.patch(theme.matched());
            }
            if sel == Some(c.dom) {
                lstyle = lstyle.patch(theme.selected());
            }
            let padded = format!("{name:<n$}", n = end - k);
            buf.set_stringn(x0 + k as u16, y, padded, end - k, lstyle);
            k = end;
            continue;
        }
        if let Some(cell) = buf.cell_mut((x0 + k as u16, y)) {
            cell.set_char(cell_glyph(class, c.busy)).set_style(style);
        }
        k += 1;
    }
}

// The GPU overview row of device `i` (in `App::devices` order): its cells, then the
// lengths written on long gaps.
fn draw_gpu(buf: &mut Buffer, ctx: &Ctx, i: usize, y: u16) {
    let app = ctx.app;
    let sel_gap = if let Some(Selection::Gap(g)) = app.selection { Some(g as u32) } else { None };
    let gap_of = app.gaps.overlapping_cells(app.devices[i].device, &ctx.edges);
    gpu_cells(buf, ctx, i, y, &gap_of, sel_gap);
    gap_labels(buf, ctx, y, &gap_of, sel_gap);
}

/// What one cell of a GPU row holds: busy time, the kernels' part of it, time waiting
/// in collectives, and the share of the cell that is busy.
struct GpuCell {
    busy: Ns,
    kern: Ns,
    waiting: Ns,
    frac: f32,
}

fn gpu_cells(buf: &mut Buffer, ctx: &Ctx, i: usize, y: u16, gap_of: &[Option<u32>], sel_gap: Option<u32>) {
    let app = ctx.app;
    let dev: &DeviceActivity = &app.devices[i];
    let (busy_dir, kern_dir) = &app.gpu_dirs[i];
    // Several ranks: time waiting in collectives for another rank (two binary searches).
    let waits = app.analysis.collectives.waits.iter().find(|(d, _)| *d == dev.device).map(|(_, u)| u);
    let (busy_of, kern_of) =
        (busy_dir.busy_cells(&dev.busy, &ctx.edges), kern_dir.busy_cells(&dev.kernels, &ctx.edges));
    for (k, &gap) in gap_of.iter().enumerate() {
        let (a, b) = (ctx.edges[k], ctx.edges[k + 1]);
        let busy = busy_of[k];
        let c = GpuCell {
            busy,
            kern: kern_of[k],
            waiting: waits.map_or(0, |u| u.busy_in(a, b)),
            frac: busy as f32 / (b - a).max(1) as f32,
        };
        let Some((ch, style)) = gpu_glyph(app.theme, gap.map(|g| sel_gap == Some(g)), &c) else { continue };
        if let Some(cell) = buf.cell_mut((ctx.x0 + k as u16, y)) {
            cell.set_char(ch).set_style(style);
        }
    }
}

// The glyph of one GPU cell (None: blank). `gap`: whether a gap overlaps the cell, and
// whether that gap is the selected one.
fn gpu_glyph(theme: Theme, gap: Option<bool>, c: &GpuCell) -> Option<(char, Style)> {
    if let Some(selected) = gap {
        let style = if selected { theme.gap_selected() } else { theme.gap() };
        // A mostly busy cell keeps its shade; the gap shows by colour and underline.
        let ch = if c.frac < 0.5 {
            glyph::GAP
        } else if c.kern >= c.busy - c.kern {
            glyph::shade(c.frac)
        } else {
            glyph::COPY_ONLY
        };
        return Some((ch, if ch == glyph::GAP { style } else { style.add_modifier(Modifier::UNDERLINED) }));
    }
    if c.busy == 0 {
        return None;
    }
    Some(if 2 * c.waiting >= c.busy {
        (glyph::COLLECTIVE_WAIT, theme.gap())
    } else if c.kern >= c.busy - c.kern {
        (glyph::shade(c.frac), theme.gpu_busy())
    } else if c.frac >= 0.5 {
        (glyph::COPY_ONLY, theme.gpu_copy())
    } else {
        (glyph::COPY_ONLY_LOW, theme.gpu_copy())
    })
}

// Label long runs of one gap with its length (and cause when selected).
fn gap_labels(buf: &mut Buffer, ctx: &Ctx, y: u16, gap_of: &[Option<u32>], sel_gap: Option<u32>) {
    let app = ctx.app;
    let mut k = 0;
    while k < gap_of.len() {
        let Some(g) = gap_of[k] else {
            k += 1;
            continue;
        };
        let mut end = k;
        while end < gap_of.len() && gap_of[end] == Some(g) {
            end += 1;
        }
        let Some(gap) = app.gaps.get(g as usize) else { break };
        let selected = sel_gap == Some(g);
        let long = format!(" idle {} {} ", text::fmt_ns(gap.dur()), gap.cause.label());
        let short = format!(" idle {} ", text::fmt_ns(gap.dur()));
        let label = if selected && long.chars().count() + 2 <= end - k { long } else { short };
        let n = label.chars().count();
        if n + 2 <= end - k {
            let x = k + (end - k - n) / 2;
            let style = if selected { app.theme.gap_selected() } else { app.theme.gap() };
            buf.set_stringn(ctx.x0 + x as u16, y, &label, n, style);
        }
        k = end;
    }
}

// Per cell, the CPUs that gave the process tree at least 5% of the cell, and how busy
// they were (any thread): two binary searches per CPU per cell in each index. Cells
// where those CPUs were saturated (>= 90%) stand out.
fn draw_cpus(buf: &mut Buffer, ctx: &Ctx, pid: u32, y: u16) {
    use crate::analysis::host::ACTIVE_CPU_SHARE;
    let app = ctx.app;
    let Some(row) = app.cpu_rows.iter().find(|r| r.pid == pid) else { return };
    let (cpus, own) = (&row.cpus, &row.own);
    for k in 0..ctx.w {
        let (a, b) = (ctx.edges[k], ctx.edges[k + 1]);
        if b <= a {
            continue;
        }
        let cell = (b - a) as f64;
        let (mut n, mut busy) = (0u32, 0);
        for &c in cpus {
            if own.cpu_busy_ns(c, a, b) as f64 >= ACTIVE_CPU_SHARE * cell {
                n += 1;
                busy += app.host.cpu_busy_ns(c, a, b);
            }
        }
        if n == 0 {
            continue;
        }
        let share = busy as f64 / (f64::from(n) * cell);
        let style =
            if share >= crate::analysis::host_cause::SATURATED { app.theme.gap() } else { app.theme.gpu_busy() };
        // The digit says how many CPUs the tree used; the colour how busy they were.
        let ch = if n <= 9 { char::from_digit(n, 10).unwrap_or('+') } else { '+' };
        if let Some(cell) = buf.cell_mut((ctx.x0 + k as u16, y)) {
            cell.set_char(ch).set_style(style);
        }
    }
}

fn draw_thread(buf: &mut Buffer, ctx: &mut Ctx, g: usize, y: u16) {
    let app = ctx.app;
    let lanes = &app.lanes.groups[g].lanes;
    let mut best: Vec<(f32, u32, u32)> = vec![(0.0, u32::MAX, CellInfo::NONE); ctx.w];
    for &l in lanes {
        let cells = ctx.raster(l);
        for (k, c) in cells.iter().enumerate() {
            if c.any && c.dom != CellInfo::NONE && (best[k].1 == u32::MAX || c.busy > best[k].0) {
                best[k] = (c.busy, l, c.dom);
            }
        }
    }
    let theme = app.theme;
    for (k, &(busy, l, dom)) in best.iter().enumerate() {
        if l == u32::MAX {
            continue;
        }
        let lane = &app.trace.lanes[l as usize];
        let class = classify(lane, dom as usize);
        if let Some(cell) = buf.cell_mut((ctx.x0 + k as u16, y)) {
            cell.set_char(cell_glyph(class, busy)).set_style(theme.event(class, lane.ev.name[dom as usize]));
        }
    }
}

fn scrollbar(buf: &mut Buffer, app: &App, a: &Areas, top: u16, bottom: u16) {
    let h = usize::from(bottom.saturating_sub(top));
    let n = app.lanes.rows.len();
    if h == 0 || n <= h {
        return;
    }
    let thumb = (h * h / n).max(1);
    let pos = (app.lanes.scroll * (h - thumb)).checked_div(n - h).unwrap_or(0);
    let x = a.lanes.x + a.label_w;
    for i in 0..h {
        let ch = if i >= pos && i < pos + thumb { "┃" } else { "│" };
        buf.set_stringn(x, top + i as u16, ch, 1, app.theme.border());
    }
}

/// Selected gap band and cursor column across the drawn rows.
fn overlays(buf: &mut Buffer, ctx: &Ctx, drawn: &[(u16, usize)]) {
    let app = ctx.app;
    let theme = app.theme;
    if theme.colored()
        && let Some(Selection::Gap(i)) = app.selection
        && let Some(g) = app.gaps.get(i)
    {
        for k in 0..ctx.w {
            if ctx.edges[k] < g.end && ctx.edges[k + 1] > g.start {
                for &(y, _) in drawn {
                    if let Some(cell) = buf.cell_mut((ctx.x0 + k as u16, y))
                        && cell.symbol() == " "
                    {
                        cell.set_style(theme.gap_band());
                    }
                }
            }
        }
    }
    let cx = ctx.x0 + app.viewport.cursor_col() as u16;
    for &(y, fi) in drawn {
        if let Some(cell) = buf.cell_mut((cx, y)) {
            if fi == app.lanes.focus {
                cell.set_style(theme.cursor_cell());
            } else if theme.colored() {
                cell.set_style(theme.cursor_column());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::keep_tail;

    #[test]
    fn a_cut_thread_name_keeps_its_id() {
        assert_eq!(keep_tail("python3 1234", 20), "python3 1234");
        assert_eq!(keep_tail("python3 1234", 8), "py… 1234");
        assert_eq!(keep_tail("python3 1234", 6), "… 1234");
        // No room for the id: an ordinary cut.
        assert_eq!(keep_tail("python3 1234", 4), "pyt…");
    }
}
