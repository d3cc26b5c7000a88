//! Timeline pictures: the viewer's lanes for one time window, drawn as SVG (`snapshot`,
//! and inline in the HTML report and diff).
//!
//! The rows and their cells come from the view layer that the viewer draws too: lane
//! groups and labels from `view::rows`, per-lane cells from the render index
//! (`view::index`, one cell per pixel column), the GPU busy cells from the same union
//! directories, and the window from `view::viewport` (a gap is shown as the viewer's gap jump shows it). Only the
//! gaps are drawn from their exact times rather than from cells, so a gap's rectangle
//! starts and ends where the gap does. `svg.rs` writes the picture.

pub(crate) mod svg;

use anyhow::{Result, bail};

use crate::analysis::names::phase_name;
use crate::analysis::{Analysis, Gap};
use crate::model::{LaneKind, Ns, Trace};
use crate::view::index::{CellInfo, Index, UnionDir};
use crate::view::rows::{self, Group, GroupKind};
use crate::view::viewport::Viewport;

/// Most CPU threads a picture shows.
pub(crate) const MAX_THREADS: usize = 4;

/// Which part of the trace a picture shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pick {
    /// `START+WIDTH`, START relative to the trace's first event.
    Window {
        /// Offset from the trace start.
        start: Ns,
        /// Length of the window.
        width: Ns,
    },
    /// The N-th longest gap (from 1), as in the gap list.
    Gap(usize),
    /// The first steady instance (else the first) of an NVTX phase.
    Phase(String),
    /// Absolute instants `[a, b]`, with the viewer's small margin.
    Range(Ns, Ns),
    /// The whole trace.
    All,
}

/// A time window `[t0, t0 + span)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    /// First instant shown.
    pub t0: Ns,
    /// Length shown (at least 1).
    pub span: Ns,
}

impl Span {
    /// First instant after the window.
    pub(crate) fn end(self) -> Ns {
        self.t0.saturating_add(self.span)
    }
}

/// What one row of the picture shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowKind {
    /// A GPU's overview: busy share and its gaps (index into `Analysis::devices`).
    Gpu(usize),
    /// One lane (index into `Trace::lanes`).
    Lane(u32),
    /// A thread's summary row (index into the groups).
    Thread(usize),
}

/// One row: what it shows and its sanitized label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RowSpec {
    /// What the row shows.
    pub kind: RowKind,
    /// Sanitized label (as in the viewer).
    pub label: String,
}

/// A trace with the viewer's groups and render index, ready to draw any window.
#[derive(Debug)]
pub(crate) struct Scene<'a> {
    /// The trace.
    pub trace: &'a Trace,
    /// Its analysis.
    pub analysis: &'a Analysis,
    groups: Vec<Group>,
    labels: Vec<String>,
    kind_tags: Vec<&'static str>,
    index: Index,
    dirs: Vec<(UnionDir, UnionDir)>,
}

impl<'a> Scene<'a> {
    /// Build the groups and the render index of `trace` (O(events), once per trace).
    pub(crate) fn new(trace: &'a Trace, analysis: &'a Analysis) -> Self {
        let groups = rows::groups(trace);
        let labels = rows::lane_labels(trace, &groups);
        let kind_tags = rows::lane_kind_tags(trace, &groups);
        let dirs = analysis.devices.iter().map(|d| (UnionDir::build(&d.busy), UnionDir::build(&d.kernels))).collect();
        Self { trace, analysis, groups, labels, kind_tags, index: Index::build(trace), dirs }
    }

    /// The window `pick` asks for, laid out on `width` columns as the viewer would.
    pub(crate) fn span(&self, pick: &Pick, width: usize) -> Result<Span> {
        let m = &self.trace.meta;
        let mut v = Viewport::new(m.start_ns, m.end_ns, width);
        match pick {
            Pick::All => {}
            Pick::Window { start, width } => {
                return Ok(Span { t0: m.start_ns.saturating_add(*start), span: (*width).max(1) });
            }
            Pick::Range(a, b) => v.fit_range(*a, *b),
            Pick::Gap(n) => {
                let Some(g) = self.nth_gap(*n) else {
                    bail!("no gap {n}: the trace has {} gaps at this threshold", self.analysis.gaps.len());
                };
                v.zoom_to(g.start, g.end);
            }
            Pick::Phase(name) => {
                let Some((a, b)) = self.phase_instance(name) else {
                    bail!("no NVTX range named `{name}` (see the phases in `lanescope report`)");
                };
                v.fit_range(a, b);
            }
        }
        let view = v.view();
        Ok(Span { t0: view.t0, span: view.span.max(1) })
    }

    /// The `n`-th longest gap (from 1): longest first, earlier first on ties.
    pub(crate) fn nth_gap(&self, n: usize) -> Option<&Gap> {
        let top = crate::analysis::top::top_gaps(&self.analysis.gaps, n);
        if n == 0 { None } else { top.get(n - 1).copied() }
    }

    // The first instance of phase `name` in the steady window, else its first.
    fn phase_instance(&self, name: &str) -> Option<(Ns, Ns)> {
        let exact = self.analysis.options.exact_names;
        let mut found: Vec<(Ns, Ns)> = Vec::new();
        for lane in &self.trace.lanes {
            if !matches!(lane.kind, LaneKind::Nvtx { .. } | LaneKind::NvtxStartEnd { .. }) {
                continue;
            }
            for i in 0..lane.ev.len() {
                let n = self.trace.strings.get(lane.ev.name[i]);
                if n == name || phase_name(n, exact) == name {
                    found.push((lane.ev.start[i], lane.ev.end(i)));
                }
            }
        }
        found.sort_unstable();
        let w = self.analysis.windows;
        found.iter().find(|(a, _)| *a >= w.steady_start && *a < w.steady_end).or(found.first()).copied()
    }

    /// Gaps of device index `i` that overlap `s`, in start order.
    pub(crate) fn gaps_in(&self, i: usize, s: Span) -> impl Iterator<Item = &Gap> {
        let device = self.analysis.devices[i].device;
        let gaps = &self.analysis.gaps;
        // Sorted by start: every gap that starts before the window's end, kept when it
        // ends inside or after the window's start.
        let to = gaps.partition_point(|g| g.start < s.end());
        gaps[..to].iter().filter(move |g| g.device == device && g.end > s.t0)
    }

    /// The rows shown for window `s`: every GPU with its lanes that hold events in the
    /// window, then the CPU threads that explain the window's gaps (the deciding
    /// threads, else their processes' threads active in the window; with no gap, the
    /// threads active in it), at most [`MAX_THREADS`], each with its active lanes.
    pub(crate) fn rows(&self, s: Span) -> Vec<RowSpec> {
        let mut out = Vec::new();
        for g in &self.groups {
            let GroupKind::Gpu(d) = g.kind else { continue };
            if let Some(i) = self.analysis.devices.iter().position(|x| x.device == d) {
                out.push(RowSpec { kind: RowKind::Gpu(i), label: g.title.clone() });
            }
            self.push_lanes(&mut out, g, s);
        }
        for gi in self.threads(s) {
            let g = &self.groups[gi];
            out.push(RowSpec { kind: RowKind::Thread(gi), label: g.title.clone() });
            self.push_lanes(&mut out, g, s);
        }
        out
    }

    fn push_lanes(&self, out: &mut Vec<RowSpec>, g: &Group, s: Span) {
        for &l in &g.lanes {
            if self.active(l, s) {
                let label = format!("  {} {}", self.labels[l as usize], self.kind_tags[l as usize]);
                out.push(RowSpec { kind: RowKind::Lane(l), label: label.trim_end().to_string() });
            }
        }
    }

    // True when lane `l` holds an event that touches the window (one raster cell).
    fn active(&self, l: u32, s: Span) -> bool {
        self.cells(l, &[s.t0, s.end()]).first().is_some_and(|c| c.any)
    }

    // Thread groups to show for the window, in display order.
    fn threads(&self, s: Span) -> Vec<usize> {
        let gaps: Vec<&Gap> = (0..self.analysis.devices.len()).flat_map(|i| self.gaps_in(i, s)).collect();
        let is_thread = |g: &Group, want: &dyn Fn(u32, u32) -> bool| match g.kind {
            GroupKind::Thread { pid, tid } => want(pid, tid),
            _ => false,
        };
        let active = |g: &Group| g.lanes.iter().any(|&l| self.active(l, s));
        let pick = |want: &dyn Fn(u32, u32) -> bool| -> Vec<usize> {
            (0..self.groups.len())
                .filter(|&i| is_thread(&self.groups[i], want) && active(&self.groups[i]))
                .take(MAX_THREADS)
                .collect()
        };
        let deciding = pick(&|pid, tid| gaps.iter().any(|g| g.pid == pid && g.tid == Some(tid)));
        if !deciding.is_empty() {
            return deciding;
        }
        if !gaps.is_empty() {
            return pick(&|pid, _| gaps.iter().any(|g| g.pid == pid));
        }
        pick(&|_, _| true)
    }

    /// The viewer's cells of lane `l` between consecutive `edges`.
    pub(crate) fn cells(&self, l: u32, edges: &[Ns]) -> Vec<CellInfo> {
        let mut out = Vec::with_capacity(edges.len());
        self.index.lanes[l as usize].raster_edges(&self.trace.lanes[l as usize].ev, edges, None, &mut out);
        out
    }

    /// Busy and kernel time of device index `i` in each cell between `edges`.
    pub(crate) fn gpu_cells(&self, i: usize, edges: &[Ns]) -> (Vec<Ns>, Vec<Ns>) {
        let (d, (busy, kern)) = (&self.analysis.devices[i], &self.dirs[i]);
        (busy.busy_cells(&d.busy, edges), kern.busy_cells(&d.kernels, edges))
    }

    /// The lanes of thread group `g`.
    pub(crate) fn group_lanes(&self, g: usize) -> &[u32] {
        &self.groups[g].lanes
    }
}

/// Left x of time `t` on a plot of `width` pixels starting at `x0` that shows `s`,
/// clamped to the plot.
pub(crate) fn x_of(t: Ns, s: Span, x0: f64, width: f64) -> f64 {
    let off = (i128::from(t) - i128::from(s.t0)) as f64 / s.span as f64;
    x0 + off.clamp(0.0, 1.0) * width
}

#[cfg(test)]
mod tests {
    use super::svg::{Geometry, Size, render};
    use super::*;
    use crate::analysis::{Options, analyze};

    fn demo() -> (Trace, Analysis) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo.sqlite");
        let t = crate::reader::load(&path).expect("the demo trace loads");
        let a = analyze(&t, &Options::default());
        (t, a)
    }

    // (x, width) of every `<rect class="gap" ...>` in an SVG, in document order.
    fn gap_rects(svg: &str) -> Vec<(f64, f64)> {
        let attr = |tag: &str, name: &str| -> f64 {
            let at = tag.find(&format!(" {name}=\"")).expect("attribute") + name.len() + 3;
            tag[at..tag[at..].find('"').map(|e| at + e).expect("closing quote")].parse().expect("a number")
        };
        svg.split("<rect class=\"gap\"").skip(1).map(|t| (attr(t, "x"), attr(t, "width"))).collect()
    }

    #[test]
    fn gap_rectangles_sit_at_their_times() {
        let (t, a) = demo();
        let scene = Scene::new(&t, &a);
        let size = Size { width: 1400, height: None };
        // A window from 1 s to 9 s after the trace start: x = x0 + (t - t0) / span * width.
        let s = Span { t0: t.meta.start_ns + 1_000_000_000, span: 8_000_000_000 };
        let svg = render(&scene, s, size, "demo");
        let plot_w = f64::from(size.width - svg::LABEL_W - 12);
        let want: Vec<(f64, f64)> = a
            .gaps
            .iter()
            .filter(|g| g.end > s.t0 && g.start < s.t0 + s.span)
            .map(|g| {
                let x = |v: Ns| 220.0 + ((v - s.t0) as f64 / 8e9).clamp(0.0, 1.0) * plot_w;
                (x(g.start), (x(g.end) - x(g.start)).max(1.0))
            })
            .collect();
        let got = gap_rects(&svg);
        assert_eq!(got.len(), want.len(), "one rectangle per gap in the window");
        for (g, w) in got.iter().zip(&want) {
            assert!((g.0 - w.0).abs() < 0.01 && (g.1 - w.1).abs() < 0.01, "{g:?} vs {w:?}");
        }
    }

    #[test]
    fn a_gap_jump_shows_the_gap_over_the_middle_three_fifths() {
        let (t, a) = demo();
        let scene = Scene::new(&t, &a);
        let longest = a.gaps.iter().map(Gap::dur).max().expect("the demo has gaps");
        let g = scene.nth_gap(1).expect("gap 1");
        assert_eq!(g.dur(), longest);
        let geom = Geometry::new(Size { width: 1400, height: None }, 1);
        let s = scene.span(&Pick::Gap(1), geom.plot_w as usize).expect("a window");
        let (x0, x1) = svg::gap_x(g, s, &geom);
        let w = f64::from(geom.plot_w);
        assert!((x0 - (geom.x0 + 0.2 * w)).abs() < 1.0 && (x1 - (geom.x0 + 0.8 * w)).abs() < 1.0, "{x0} {x1}");
        assert!(scene.nth_gap(0).is_none() && scene.nth_gap(a.gaps.len() + 1).is_none());
    }

    #[test]
    fn rows_show_every_gpu_then_the_thread_that_decides_the_gaps() {
        let (t, a) = demo();
        let scene = Scene::new(&t, &a);
        let g = scene.nth_gap(2).expect("gap 2");
        let s = Span { t0: g.start, span: g.dur() };
        let rows = scene.rows(s);
        assert!(matches!(rows[0].kind, RowKind::Gpu(0)));
        let threads: Vec<&RowSpec> = rows.iter().filter(|r| matches!(r.kind, RowKind::Thread(_))).collect();
        let tid = g.tid.expect("the demo's gaps have a deciding thread");
        assert_eq!(threads.len(), 1, "{rows:?}");
        assert!(threads[0].label.ends_with(&format!(" {tid}")), "{}", threads[0].label);
    }

    #[test]
    fn a_fixed_height_leaves_rows_out_and_says_so() {
        let (t, a) = demo();
        let scene = Scene::new(&t, &a);
        let svg = render(
            &scene,
            Span { t0: t.meta.start_ns, span: t.duration() },
            Size { width: 800, height: Some(140) },
            "x",
        );
        assert!(svg.contains("more rows left out"));
        assert!(svg.contains("height=\"140\""));
    }

    #[test]
    fn tick_steps_are_round() {
        assert_eq!(svg::tick_step(8_000), 1_000);
        assert_eq!(svg::tick_step(9_000), 2_000);
        assert_eq!(svg::tick_step(30_000_000), 5_000_000);
        assert_eq!(svg::tick_step(1), 1);
    }

    #[test]
    fn names_are_escaped_for_xml() {
        let evil = "<script>\"a\"&'b'</script>\u{1b}]0;x\u{7}\u{9b}\u{202e}\u{ffff}";
        let e = crate::text::escape_xml(evil);
        assert!(!e.contains(['<', '>', '"', '\'', '\u{1b}', '\u{7}', '\u{9b}', '\u{202e}', '\u{ffff}']), "{e}");
        assert!(e.starts_with("&lt;script&gt;&quot;a&quot;&amp;&#39;b&#39;"));
    }
}
