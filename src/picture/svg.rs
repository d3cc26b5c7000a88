//! The SVG writer of a [`Scene`] window: a title, a time axis, one row per
//! [`RowSpec`] (labels left, one cell per pixel column right, runs of equal cells
//! merged into one rectangle), the gaps on their GPU rows at their exact times, and a
//! legend. Every name from the trace goes through [`escape`].
//!
//! ```text
//!  title                                               (y 0..TOP)
//!  label column | time axis: ticks relative to the trace start
//!  label        | ███▒▒  [idle 1.2 ms sync-wait]  ████   one row per RowSpec
//!  ...
//!  legend: colours, the causes of the gaps in the window
//! ```

use std::fmt::Write as _;

use super::{RowKind, RowSpec, Scene, Span, x_of};
use crate::analysis::{Cause, Gap};
use crate::model::{MemClass, Ns};
use crate::text::{escape_xml as escape, fmt_ns};
use crate::view::index::{CellInfo, bucket_edge};
use crate::view::palette::{Class, classify, glyph};

/// Fill of an idle gap on a GPU row.
pub(crate) const GAP_COLOUR: &str = "#d62728";
/// Width of the label column in pixels.
pub(crate) const LABEL_W: u32 = 220;
/// Height of the title and axis band above the rows.
pub(crate) const TOP: u32 = 48;
/// Row height when the height is left to the picture.
pub(crate) const ROW_H: u32 = 18;
/// Smallest row height before rows are left out.
pub(crate) const MIN_ROW_H: u32 = 8;
/// Height of the legend band below the rows.
pub(crate) const LEGEND_H: u32 = 44;
const RIGHT_MARGIN: u32 = 12;
// Average advance of an 11 px monospace character, for fitting labels.
const CHAR_W: f64 = 6.7;

/// Size of the picture in pixels; `height: None` fits the rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Size {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels, or as tall as the rows need.
    pub height: Option<u32>,
}

/// Where things go: the plot's left edge and width, the rows' top and height.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Geometry {
    /// Left edge of the plot.
    pub x0: f64,
    /// Width of the plot (whole pixels: one cell each).
    pub plot_w: u32,
    /// Top of the first row.
    pub y0: f64,
    /// Height of a row.
    pub row_h: f64,
    /// Rows that fit.
    pub rows: usize,
    /// Height of the whole picture.
    pub height: u32,
}

impl Geometry {
    /// Lay `n` rows out on `size`.
    pub(crate) fn new(size: Size, n: usize) -> Self {
        let plot_w = size.width.saturating_sub(LABEL_W + RIGHT_MARGIN).max(10);
        let (row_h, rows, height) = match size.height {
            None => (ROW_H, n, TOP + ROW_H * n as u32 + LEGEND_H),
            Some(h) => {
                let room = h.saturating_sub(TOP + LEGEND_H);
                let row_h = (room / n.max(1) as u32).clamp(MIN_ROW_H, ROW_H);
                (row_h, n.min((room / row_h) as usize), h)
            }
        };
        Self { x0: f64::from(LABEL_W), plot_w, y0: f64::from(TOP), row_h: f64::from(row_h), rows, height }
    }

    /// Top of row `r`.
    pub(crate) fn row_y(&self, r: usize) -> f64 {
        self.y0 + self.row_h * r as f64
    }
}

/// Draw window `s` of `scene` as a standalone SVG document titled `title`.
pub(crate) fn render(scene: &Scene, s: Span, size: Size, title: &str) -> String {
    let rows = scene.rows(s);
    let g = Geometry::new(size, rows.len());
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="11">"#,
        w = size.width,
        h = g.height
    );
    out.push_str(concat!(
        r##"<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">"##,
        r##"<rect width="3" height="6" fill="#ffffff" fill-opacity="0.55"/></pattern></defs>"##
    ));
    let _ = write!(out, r##"<rect width="100%" height="100%" fill="#ffffff"/>"##);
    let _ = write!(
        out,
        r#"<text x="8" y="16" font-size="13" font-weight="bold">{}</text>"#,
        escape(&format!("{title} · {} from +{}", fmt_ns(s.span), fmt_ns(s.t0 - scene.trace.meta.start_ns)))
    );
    axis(&mut out, scene, s, &g);
    let edges: Vec<Ns> = (0..=g.plot_w as usize).map(|k| bucket_edge(s.t0, s.span, g.plot_w as usize, k)).collect();
    for (r, row) in rows.iter().take(g.rows).enumerate() {
        draw_row(&mut out, scene, s, &g, &edges, r, row);
    }
    legend(&mut out, scene, s, &g, rows.len() - g.rows);
    out.push_str("</svg>\n");
    out
}

fn draw_row(out: &mut String, scene: &Scene, s: Span, g: &Geometry, edges: &[Ns], r: usize, row: &RowSpec) {
    let y = g.row_y(r);
    if r % 2 == 1 {
        let _ = write!(out, r##"<rect x="0" y="{y}" width="100%" height="{}" fill="#f4f4f4"/>"##, g.row_h);
    }
    let bold = if matches!(row.kind, RowKind::Lane(_)) { "" } else { r#" font-weight="bold""# };
    let max = ((f64::from(LABEL_W) - 12.0) / CHAR_W) as usize;
    let _ = write!(
        out,
        r#"<text x="6" y="{}"{bold}>{}</text>"#,
        y + g.row_h * 0.5 + 4.0,
        escape(&crate::text::ellipsize(&row.label, max))
    );
    match row.kind {
        RowKind::Gpu(i) => gpu_row(out, scene, s, g, edges, i, y),
        RowKind::Lane(l) => {
            let cells = scene.cells(l, edges);
            let lane = &scene.trace.lanes[l as usize];
            let classes: Vec<Option<Class>> = cells.iter().map(|c| cell_class(c).map(|d| classify(lane, d))).collect();
            runs(out, g, y, &cells, &classes, |d| scene.trace.strings.get(lane.ev.name[d as usize]));
        }
        RowKind::Thread(gi) => thread_row(out, scene, g, edges, gi, y),
    }
}

fn cell_class(c: &CellInfo) -> Option<usize> {
    (c.any && c.dom != CellInfo::NONE).then_some(c.dom as usize)
}

// Merge runs of cells with the same dominant event and shade into rectangles; write
// the event's name inside runs wide enough to read it.
fn runs<'n>(
    out: &mut String,
    g: &Geometry,
    y: f64,
    cells: &[CellInfo],
    classes: &[Option<Class>],
    name: impl Fn(u32) -> &'n str,
) {
    let mut k = 0;
    while k < cells.len() {
        let Some(class) = classes[k] else {
            k += 1;
            continue;
        };
        let (dom, level) = (cells[k].dom, shade(cells[k].busy));
        let mut end = k + 1;
        while end < cells.len()
            && cells[end].dom == dom
            && classes[end] == Some(class)
            && shade(cells[end].busy) == level
        {
            end += 1;
        }
        let (x, w) = (g.x0 + k as f64, (end - k) as f64);
        let (fill, tag) = class_style(class);
        let _ = write!(
            out,
            r#"<rect class="{tag}" x="{x}" y="{}" width="{w}" height="{}" fill="{fill}" fill-opacity="{}"/>"#,
            y + 2.0,
            g.row_h - 4.0,
            OPACITY[level]
        );
        if class == Class::Pageable {
            let _ = write!(
                out,
                r#"<rect x="{x}" y="{}" width="{w}" height="{}" fill="url(#hatch)"/>"#,
                y + 2.0,
                g.row_h - 4.0
            );
        }
        let chars = ((w - 6.0) / CHAR_W).floor();
        if chars >= 4.0 && g.row_h >= 12.0 && !matches!(class, Class::Mark | Class::Sample) {
            let text = crate::text::ellipsize(name(dom), chars as usize).into_owned();
            let _ = write!(
                out,
                r##"<text x="{}" y="{}" fill="#ffffff">{}</text>"##,
                x + 3.0,
                y + g.row_h * 0.5 + 4.0,
                escape(&text)
            );
        }
        k = end;
    }
}

// The viewer's four shades (0 lightest), drawn as four opacities.
fn shade(busy: f32) -> usize {
    glyph::SHADES.iter().position(|&c| c == glyph::shade(busy)).unwrap_or(0)
}

const OPACITY: [f32; 4] = [0.4, 0.6, 0.8, 1.0];

/// Fill colour and CSS class of an event class.
pub(crate) fn class_style(class: Class) -> (&'static str, &'static str) {
    match class {
        Class::Kernel => ("#1f77b4", "kernel"),
        Class::Memory(MemClass::H2D) => ("#2ca02c", "copy"),
        Class::Memory(MemClass::D2H) => ("#17becf", "copy"),
        Class::Memory(MemClass::Memset) => ("#8c564b", "memset"),
        Class::Memory(_) => ("#bcbd22", "copy"),
        Class::Pageable => ("#ff7f0e", "pageable"),
        Class::Nvtx => ("#9467bd", "nvtx"),
        Class::Mark | Class::Sample => ("#333333", "mark"),
        Class::Launch => ("#98df8a", "launch"),
        Class::Sync => ("#7f7f7f", "sync"),
        Class::CopyCall => ("#c5b0d5", "copycall"),
        Class::Api => ("#c7c7c7", "api"),
        Class::Osrt => ("#aec7e8", "osrt"),
        Class::Overhead => ("#f7b6d2", "overhead"),
        Class::OnCpu => ("#dbdb8d", "oncpu"),
    }
}

fn gpu_row(out: &mut String, scene: &Scene, s: Span, g: &Geometry, edges: &[Ns], i: usize, y: f64) {
    let (busy, kern) = scene.gpu_cells(i, edges);
    let fake: Vec<CellInfo> = busy
        .iter()
        .enumerate()
        .map(|(k, &b)| {
            let frac = b as f32 / (edges[k + 1] - edges[k]).max(1) as f32;
            // dom 0: kernels dominate the cell, 1: copies do.
            let dom = u32::from(kern[k] < b - kern[k]);
            CellInfo { busy: frac, any: b > 0, dom, matched: false }
        })
        .collect();
    let classes: Vec<Option<Class>> = fake
        .iter()
        .map(|c| c.any.then_some(if c.dom == 0 { Class::Kernel } else { Class::Memory(MemClass::H2D) }))
        .collect();
    runs(out, g, y, &fake, &classes, |_| "");
    for gap in scene.gaps_in(i, s) {
        gap_rect(out, scene, s, g, gap, y);
    }
}

/// Left and right x of `gap` on the plot of `g` showing `s`; at least one pixel wide.
pub(crate) fn gap_x(gap: &Gap, s: Span, g: &Geometry) -> (f64, f64) {
    let w = f64::from(g.plot_w);
    let (a, b) = (x_of(gap.start, s, g.x0, w), x_of(gap.end, s, g.x0, w));
    (a, b.max(a + 1.0))
}

fn gap_rect(out: &mut String, scene: &Scene, s: Span, g: &Geometry, gap: &Gap, y: f64) {
    let (a, b) = gap_x(gap, s, g);
    let rel = gap.start - scene.trace.meta.start_ns;
    let tip = format!("idle {} at +{} · {}: {}", fmt_ns(gap.dur()), fmt_ns(rel), gap.cause.label(), gap.evidence);
    let _ = write!(
        out,
        r#"<rect class="gap" data-cause="{}" x="{a:.2}" y="{}" width="{:.2}" height="{}" fill="{GAP_COLOUR}"><title>{}</title></rect>"#,
        gap.cause.label(),
        y + 1.0,
        b - a,
        g.row_h - 2.0,
        escape(&tip)
    );
    let long = format!("idle {} {}", fmt_ns(gap.dur()), gap.cause.label());
    let short = fmt_ns(gap.dur());
    let room = ((b - a - 6.0) / CHAR_W).floor() as usize;
    let label = [long, short].into_iter().find(|l| l.chars().count() <= room);
    if let Some(label) = label.filter(|_| g.row_h >= 12.0) {
        let _ = write!(
            out,
            r##"<text x="{:.2}" y="{}" text-anchor="middle" fill="#ffffff" font-weight="bold">{}</text>"##,
            f64::midpoint(a, b),
            y + g.row_h * 0.5 + 4.0,
            escape(&label)
        );
    }
}

// Per cell the lane of the group with the busiest dominant event, as the viewer's
// thread header row.
fn thread_row(out: &mut String, scene: &Scene, g: &Geometry, edges: &[Ns], gi: usize, y: f64) {
    let n = edges.len() - 1;
    let mut best: Vec<(CellInfo, Option<Class>, u32)> = vec![(CellInfo::EMPTY, None, 0); n];
    for &l in scene.group_lanes(gi) {
        let lane = &scene.trace.lanes[l as usize];
        for (k, c) in scene.cells(l, edges).into_iter().enumerate() {
            if let Some(d) = cell_class(&c)
                && (best[k].1.is_none() || c.busy > best[k].0.busy)
            {
                best[k] = (c, Some(classify(lane, d)), lane.ev.name[d]);
            }
        }
    }
    // Dominant ids are per lane; on the summary row a run is one name.
    let cells: Vec<CellInfo> = best.iter().map(|(c, _, name)| CellInfo { dom: *name, ..*c }).collect();
    let classes: Vec<Option<Class>> = best.iter().map(|b| b.1).collect();
    runs(out, g, y, &cells, &classes, |id| scene.trace.strings.get(id));
}

fn axis(out: &mut String, scene: &Scene, s: Span, g: &Geometry) {
    let base = scene.trace.meta.start_ns;
    let step = tick_step(s.span);
    let rows_end = g.row_y(g.rows);
    let _ = write!(
        out,
        r##"<line x1="{x}" y1="{y}" x2="{x2}" y2="{y}" stroke="#333333"/>"##,
        x = g.x0,
        x2 = g.x0 + f64::from(g.plot_w),
        y = g.y0 - 2.0
    );
    // The first tick at or after the window start.
    let first = (s.t0 - base + step - 1).div_euclid(step) * step;
    let mut t = first;
    while base + t < s.end() {
        let x = x_of(base + t, s, g.x0, f64::from(g.plot_w));
        let _ = write!(
            out,
            r##"<line x1="{x:.2}" y1="{}" x2="{x:.2}" y2="{rows_end}" stroke="#dddddd"/><text x="{x:.2}" y="{}" text-anchor="middle" fill="#333333">+{}</text>"##,
            g.y0 - 6.0,
            g.y0 - 9.0,
            escape(&fmt_ns(t))
        );
        t += step;
    }
}

/// A round tick interval (1, 2 or 5 times a power of ten ns) giving about 8 ticks.
pub(crate) fn tick_step(span: Ns) -> Ns {
    let raw = (span / 8).max(1);
    let mut p: Ns = 1;
    while p.saturating_mul(10) <= raw {
        p *= 10;
    }
    [1, 2, 5, 10].into_iter().map(|m| m * p).find(|&v| v >= raw).unwrap_or(10 * p)
}

fn legend(out: &mut String, scene: &Scene, s: Span, g: &Geometry, left_out: usize) {
    let y = g.row_y(g.rows) + 16.0;
    let items = [
        (Class::Kernel, "kernel"),
        (Class::Memory(MemClass::H2D), "H2D copy"),
        (Class::Memory(MemClass::D2H), "D2H copy"),
        (Class::Pageable, "pageable copy"),
        (Class::Nvtx, "NVTX range"),
        (Class::Launch, "launch"),
        (Class::Sync, "sync call"),
        (Class::Osrt, "OS runtime"),
    ];
    let mut x = 8.0;
    for (class, name) in items {
        let (fill, _) = class_style(class);
        let _ = write!(out, r#"<rect x="{x}" y="{}" width="12" height="10" fill="{fill}"/>"#, y - 9.0);
        if class == Class::Pageable {
            let _ = write!(out, r#"<rect x="{x}" y="{}" width="12" height="10" fill="url(#hatch)"/>"#, y - 9.0);
        }
        let _ = write!(out, r#"<text x="{}" y="{y}">{name}</text>"#, x + 16.0);
        x += 24.0 + name.len() as f64 * CHAR_W;
    }
    let _ = write!(out, r#"<rect x="{x}" y="{}" width="12" height="10" fill="{GAP_COLOUR}"/>"#, y - 9.0);
    let _ = write!(out, r#"<text x="{}" y="{y}">idle gap</text>"#, x + 16.0);
    let mut line = causes_line(scene, s);
    if left_out > 0 {
        let _ = write!(line, " · {left_out} more rows left out (a taller --size shows them)");
    }
    let _ = write!(out, r##"<text x="8" y="{}" fill="#333333">{}</text>"##, y + 18.0, escape(&line));
}

// "gaps here: sync-wait 3 (2.1 ms), ..." over the window's gaps, by cause order.
fn causes_line(scene: &Scene, s: Span) -> String {
    let gaps: Vec<&Gap> = (0..scene.analysis.devices.len()).flat_map(|i| scene.gaps_in(i, s)).collect();
    if gaps.is_empty() {
        return "no GPU idle gap in this window".to_string();
    }
    let parts: Vec<String> = Cause::ALL
        .iter()
        .filter_map(|&c| {
            let of: Vec<&&Gap> = gaps.iter().filter(|g| g.cause == c).collect();
            (!of.is_empty())
                .then(|| format!("{} {} ({})", c.label(), of.len(), fmt_ns(of.iter().map(|g| g.dur()).sum())))
        })
        .collect();
    format!("gaps here by cause: {}", parts.join(", "))
}
