//! GPU metric rows, the metrics in the details of a copy or a gap, and the what-if in
//! the findings box, on the `g_pinned` capture (pinned H2D copies, 22 metrics at 10 kHz,
//! trimmed to 0.84 s of the run). Every number on screen is checked against SQL over the
//! same file: the bar of each cell, the means and sample counts in the details.

use std::path::PathBuf;
use std::sync::OnceLock;

use lanescope::{Action, Analysis, App, Depth, Options, Theme, Trace, draw};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};

use crate::util::{self, EVIL};

/// `metricId` of PCIe RX, PCIe TX and SMs Active in this capture, with their row labels.
const KEY: [(i64, &str); 3] = [(20, "PCIe RX %"), (21, "PCIe TX %"), (3, "SMs %")];

struct Loaded {
    path: PathBuf,
    trace: Trace,
    analysis: Analysis,
}

fn loaded() -> &'static Loaded {
    static T: OnceLock<Loaded> = OnceLock::new();
    T.get_or_init(|| {
        let path = util::matrix_trace("g_pinned");
        let trace = lanescope::load(&path).expect("the capture loads");
        let analysis = lanescope::analyze(&trace, &Options::default());
        Loaded { path, trace, analysis }
    })
}

fn app(w: u16, h: u16) -> App {
    let l = loaded();
    let mut app = App::new(l.trace.clone(), l.analysis.clone(), (w, h));
    app.set_theme(Theme::new(Depth::Mono));
    app
}

fn screen(app: &App) -> String {
    let (w, h) = app.size();
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("test backend");
    term.draw(|f| draw(f, app)).expect("draw");
    let buf = term.backend().buffer();
    let mut out = String::new();
    for y in 0..h {
        let line: String = (0..w).map(|x| buf[(x, y)].symbol()).collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn keys(app: &mut App, keys: &str) {
    for c in keys.chars() {
        app.handle_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    }
}

/// Focus the row labelled `label` with a click on its label.
fn focus(app: &mut App, label: &str) {
    let s = screen(app);
    let y = s.lines().position(|l| l.starts_with(&format!("  {label}"))).unwrap_or_else(|| panic!("{label}\n{s}"));
    for kind in [MouseEventKind::Down(MouseButton::Left), MouseEventKind::Up(MouseButton::Left)] {
        app.handle_mouse(MouseEvent { kind, column: 3, row: y as u16, modifiers: KeyModifiers::NONE });
    }
}

/// (sum, count) of metric `id`'s samples with `a <= timestamp < b`, or `<= b` when `closed`.
fn sql_sum(id: i64, a: i64, b: i64, closed: bool) -> (i64, i64) {
    let op = if closed { "<=" } else { "<" };
    let q = format!(
        "SELECT coalesce(sum(value), 0), count(*) FROM GPU_METRICS WHERE metricId = ?1 AND timestamp >= ?2 AND timestamp {op} ?3"
    );
    util::sql(&loaded().path).query_row(&q, [id, a, b], |r| Ok((r.get(0)?, r.get(1)?))).unwrap()
}

/// The cells of the row labelled `label` on `screen`.
fn row_cells(app: &App, screen: &str, label: &str) -> Vec<char> {
    let line = screen.lines().find(|l| l.starts_with(&format!("  {label} "))).unwrap_or_else(|| panic!("{screen}"));
    let mut cells: Vec<char> = line.chars().skip(usize::from(app.timeline_x())).collect();
    cells.resize(usize::from(app.size().0 - app.timeline_x()), ' ');
    cells
}

/// The bar of a mean on a 0..100 scale, to the nearest eighth, anything above zero shown.
fn bar(mean: f64) -> char {
    if mean <= 0.0 {
        return ' ';
    }
    let eighths = ((mean / 100.0 * 8.0).round() as usize).clamp(1, 8);
    ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'][eighths - 1]
}

#[test]
fn key_metric_rows_sit_under_the_gpu() {
    let mut a = app(120, 40);
    let s = screen(&a);
    let labels: Vec<&str> = s.lines().skip(2).take(5).map(|l| l.split('│').next().unwrap().trim()).collect();
    assert_eq!(labels, ["▾ GPU 0 H200", "PCIe RX %", "PCIe TX %", "SMs %", "kernels s7"], "{s}");
    // The steady state, where the samples are.
    a.apply(Action::FitSteady);
    insta::assert_snapshot!(screen(&a));
}

#[test]
fn each_cell_is_the_mean_of_the_samples_in_its_bucket_by_sql() {
    let mut a = app(120, 40);
    let (first, last): (i64, i64) = util::sql(&loaded().path)
        .query_row("SELECT min(timestamp), max(timestamp) FROM GPU_METRICS", [], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    let mid = i64::midpoint(first, last);
    // Whole trace (samples in a few cells), the sampled time, then zoomed past the period.
    for view in [None, Some((first - 1_000_000, last - first + 2_000_000)), Some((mid, 2_000_000)), Some((mid, 30_000))]
    {
        if let Some((t0, span)) = view {
            a.set_view(t0, span);
        }
        let scr = screen(&a);
        let v = a.view();
        for (id, label) in KEY {
            let cells = row_cells(&a, &scr, label);
            let w = cells.len();
            let edge = |k: usize| v.t0 + (i128::from(v.span) * k as i128 / w as i128) as i64;
            for (k, &got) in cells.iter().enumerate() {
                let (lo, hi) = (edge(k), edge(k + 1));
                let (sum, n) = sql_sum(id, lo, hi, false);
                let want = if n > 0 {
                    bar(sum as f64 / n as f64)
                } else if hi > first && lo <= last && hi > lo {
                    '·'
                } else {
                    ' '
                };
                assert_eq!(got, want, "{label} cell {k} [{lo}, {hi}) of view {view:?}: {n} samples, sum {sum}");
            }
        }
    }
}

#[test]
fn m_shows_every_metric_and_hides_them_again() {
    let mut a = app(160, 50);
    a.apply(Action::FitSteady);
    let s = screen(&a);
    assert!(!s.contains("GPC Clock Frequency"), "{s}");
    keys(&mut a, "M");
    let s = screen(&a);
    assert!(s.contains("  GPC Clock Frequency…") && s.contains("  DRAM Read Bandwidth…"), "{s}");
    assert!(s.lines().any(|l| l.contains("M metrics")), "the hint shows: {s}");
    insta::assert_snapshot!(s);
    // The focus on a metric the toggle hides moves to its GPU.
    focus(&mut a, "GPC Clock Frequency…");
    keys(&mut a, "M");
    let s = screen(&a);
    assert!(!s.contains("GPC Clock Frequency"), "{s}");
    assert!(a.message().is_some_and(|m| m.contains("key GPU metrics only")));
}

#[test]
fn a_trace_without_metrics_has_no_metric_rows_and_says_so_on_m() {
    let t = lanescope::load(&util::fixture("pinned.sqlite")).unwrap();
    let an = lanescope::analyze(&t, &Options::default());
    let mut a = App::new(t, an, (160, 40));
    let s = screen(&a);
    assert!(!s.lines().any(|l| l.starts_with("  PCIe") || l.starts_with("  SMs %")), "{s}");
    assert!(!s.contains("M metrics"), "{s}");
    keys(&mut a, "M");
    assert!(a.message().is_some_and(|m| m.contains("--gpu-metrics-devices=all")), "{:?}", a.message());
}

/// The sampling period of metric `id`: the median time between its samples (upper median).
fn period(id: i64) -> i64 {
    util::sql_i64(
        &loaded().path,
        &format!(
            "WITH d AS (SELECT timestamp - lag(timestamp) OVER (ORDER BY timestamp) AS x FROM GPU_METRICS
               WHERE metricId = {id})
             SELECT x FROM d WHERE x IS NOT NULL ORDER BY x LIMIT 1 OFFSET (SELECT count(x) / 2 FROM d)"
        ),
    )
}

/// (sum, count) of metric `id`'s samples whose interval `[t, t + period)` lies inside `[s, e]`.
fn sql_inside(id: i64, s: i64, e: i64) -> (i64, i64) {
    let p = period(id);
    if e - s < p { (0, 0) } else { sql_sum(id, s, e - p, true) }
}

/// The details line `label` shows: (mean, samples).
fn details_line(screen: &str, label: &str) -> Option<(String, i64)> {
    let line = (screen.lines().filter(|l| l.contains(" (mean of ")))
        .find_map(|l| l.split_once(&format!("│{label} ")).map(|(_, r)| r.trim_end_matches(['│', ' ']).trim()))?;
    let (mean, rest) = line.split_once(" (mean of ")?;
    let n = rest.split(' ').next()?.replace(',', "");
    Some((mean.to_string(), n.parse().ok()?))
}

/// The details on `screen` show the key metrics' means over `[s, e]` as SQL has them
/// (samples whose interval lies inside, the report's rule), or that no sample falls
/// inside; returns how many samples of PCIe RX it holds.
fn assert_means(screen: &str, (s, e): (i64, i64)) -> i64 {
    let mut any = 0;
    for (id, label) in KEY {
        let (sum, n) = sql_inside(id, s, e);
        let got = details_line(screen, label);
        if n == 0 {
            assert!(got.is_none(), "{label} has no samples over [{s}, {e}]: {screen}");
        } else {
            assert_eq!(got, Some((format!("{:.1}", sum as f64 / n as f64), n)), "{label} over [{s}, {e}]: {screen}");
        }
        any += n;
    }
    assert_eq!(any == 0, screen.contains("no samples inside"), "[{s}, {e}]: {screen}");
    sql_inside(KEY[0].0, s, e).1
}

#[test]
fn every_copy_shows_the_metrics_means_over_it() {
    let mut a = app(160, 45);
    a.apply(Action::FitAll);
    focus(&mut a, "H2D s7");
    a.apply(Action::Details);
    a.set_view(a.trace().meta.start_ns, 1);
    let (mut with, mut without) = (0, 0);
    loop {
        a.apply(Action::NextEvent);
        let Some(r) = a.selected_event() else { break };
        if a.message().is_some_and(|m| m.contains("no later event")) {
            break;
        }
        let ev = &a.trace().lanes[r.lane as usize].ev;
        let (start, end) = (ev.start[r.idx as usize], ev.end(r.idx as usize));
        let e: i64 = util::sql_i64(
            &loaded().path,
            &format!("SELECT end FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 1 AND start = {start}"),
        );
        assert_eq!(end, e, "the copy as the export has it");
        let scr = screen(&a);
        assert!(scr.contains("Memcpy HtoD"), "{scr}");
        if assert_means(&scr, (start, e)) > 0 { with += 1 } else { without += 1 }
    }
    assert_eq!(with + without, 54, "every H2D copy was visited");
    assert!(with >= 10 && without >= 10, "copies with samples ({with}) and without ({without})");
}

#[test]
fn a_copy_shows_its_means_in_the_details() {
    let mut a = app(160, 45);
    a.apply(Action::FitSteady);
    focus(&mut a, "H2D s7");
    a.apply(Action::Details);
    a.apply(Action::NextEvent);
    while sql_inside(20, sel(&a).0, sel(&a).1).1 < 3 {
        a.apply(Action::NextEvent);
    }
    a.apply(Action::FitSelection);
    let scr = screen(&a);
    assert!(assert_means(&scr, sel(&a)) >= 3);
    insta::assert_snapshot!(scr);
}

fn sel(a: &App) -> (i64, i64) {
    let r = a.selected_event().expect("an event is selected");
    let ev = &a.trace().lanes[r.lane as usize].ev;
    (ev.start[r.idx as usize], ev.end(r.idx as usize))
}

#[test]
fn every_gap_shows_the_metrics_means_over_it() {
    let mut a = app(160, 45);
    a.apply(Action::Details);
    let n = a.gaps().len();
    let mut with = 0;
    for _ in 0..n {
        a.apply(Action::NextGap);
        let g = a.selected_gap().cloned().expect("a gap");
        with += usize::from(assert_means(&screen(&a), (g.start, g.end)) > 0);
    }
    assert!(with > 0, "some gaps lie in the sampled time");
}

#[test]
fn a_copy_shorter_than_the_period_has_no_samples_inside() {
    let mut a = app(160, 45);
    a.apply(Action::FitSteady);
    focus(&mut a, "H2D s7");
    a.apply(Action::Details);
    a.apply(Action::NextEvent);
    let p = period(20);
    while sel(&a).1 - sel(&a).0 >= p {
        a.apply(Action::NextEvent);
    }
    let scr = screen(&a);
    let want = format!("no samples inside (shorter than the {} µs period)", p / 1_000);
    assert!(p % 1_000 == 0 && scr.contains(&want), "{want}\n{scr}");
    assert!(!scr.contains(" (mean of "), "{scr}");
}

#[test]
fn each_priced_finding_shows_its_what_if() {
    let a = app(120, 60);
    let an = &loaded().analysis;
    let scr = screen(&a);
    let priced: Vec<&lanescope::Finding> =
        an.findings.iter().filter(|f| f.evidence.iter().any(|(k, _)| k == "whatif_fix")).take(2).collect();
    assert!(!priced.is_empty(), "the capture prices a fix");
    for f in priced {
        let w =
            an.whatif.iter().find(|w| f.evidence.iter().any(|(k, v)| k == "whatif_fix" && v == w.fix.id())).unwrap();
        let head = format!("what-if {} saves ", w.fix.id());
        let line = scr.lines().find_map(|l| l.split_once(&head)).unwrap_or_else(|| panic!("{head}\n{scr}")).1;
        // `1.23 ms per step (57.8 ms -> 56.6 ms), limited by host`
        let (saving, rest) = line.split_once(" per step (").unwrap();
        let (before, rest) = rest.split_once(" -> ").unwrap();
        let (after, limit) = rest.split_once("), limited by ").unwrap();
        assert!(close(parse_dur(saving), w.saving_per_step_ns), "{saving} vs {w:?}");
        assert!(close(parse_dur(before), w.step_ns_after + w.saving_per_step_ns), "{before} vs {w:?}");
        assert!(close(parse_dur(after), w.step_ns_after), "{after} vs {w:?}");
        assert_eq!(limit.trim_end_matches(['│', ' ']), w.limited_by);
    }
}

/// Nanoseconds of a duration as shown (`850 ns`, `12.3 µs`, `4.56 ms`, `1.234 s`).
fn parse_dur(s: &str) -> f64 {
    let (v, unit) = s.trim().split_once(' ').unwrap_or_else(|| panic!("{s}"));
    let scale = match unit {
        "ns" => 1.0,
        "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        u => panic!("unit {u} in {s}"),
    };
    v.parse::<f64>().unwrap() * scale
}

/// True when a shown duration (three significant digits) rounds `ns`.
fn close(shown: f64, ns: i64) -> bool {
    (shown - ns as f64).abs() <= (ns.abs() as f64 * 0.005).max(0.5)
}

#[test]
fn hostile_metric_names_never_reach_the_screen() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("g_pinned_hostile.sqlite");
    std::fs::copy(&loaded().path, &p).unwrap();
    let c = rusqlite::Connection::open(&p).unwrap();
    c.execute("UPDATE TARGET_INFO_GPU_METRICS SET metricName = ?1 WHERE metricId = 0", [format!("{EVIL} [MHz]")])
        .unwrap();
    drop(c);
    let t = lanescope::load(&p).unwrap();
    let an = lanescope::analyze(&t, &Options::default());
    let mut a = App::new(t, an, (160, 50));
    keys(&mut a, "M");
    let s = screen(&a);
    assert!(s.contains("owned"), "the hostile metric has a row: {s}");
    assert!(!s.chars().any(|c| c.is_control() && c != '\n'), "{s}");
}
