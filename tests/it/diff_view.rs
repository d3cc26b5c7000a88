//! The two-run view of `lanescope diff BEFORE AFTER --view` on the real pageable and
//! pinned exports: drawn into a `TestBackend` and driven by keys and the mouse, with
//! step and kernel times from independent SQL over the same files; the delta table
//! against the headless `lanescope diff --format json`; and one journey of the real
//! binary in a pseudo-terminal.

use std::path::PathBuf;
use std::sync::OnceLock;

use lanescope::{Align, Analysis, Depth, Options, Pair, Theme, Trace, analyze, draw_pair};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use rusqlite::Connection;

use crate::term::Session;
use crate::util;

const BEFORE: &str = "tests/fixtures/pageable.sqlite";
const AFTER: &str = "tests/fixtures/pinned.sqlite";

// A fixture kept packed (`NAME.xz`) is unpacked first.
fn path(rel: &str) -> PathBuf {
    match rel.strip_prefix("tests/fixtures/") {
        Some(name) => util::fixture(name),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(rel),
    }
}

// A run as the binary is given it.
fn arg(rel: &str) -> String {
    path(rel).display().to_string()
}

fn loaded(rel: &'static str) -> &'static (Trace, Analysis) {
    static RUNS: OnceLock<[(Trace, Analysis); 2]> = OnceLock::new();
    let runs = RUNS.get_or_init(|| {
        [BEFORE, AFTER].map(|r| {
            let t = lanescope::load(&path(r)).expect("fixture loads");
            let a = analyze(&t, &Options::default());
            (t, a)
        })
    });
    &runs[usize::from(rel == AFTER)]
}

fn pair(w: u16, h: u16) -> Pair {
    let mut p = Pair::new(loaded(BEFORE).clone(), loaded(AFTER).clone(), (w, h));
    p.set_theme(Theme::new(Depth::Mono));
    p
}

fn lines(p: &Pair) -> Vec<String> {
    let (w, h) = p.size();
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("test backend");
    term.draw(|f| draw_pair(f, p)).expect("draw");
    let buf = term.backend().buffer();
    (0..h).map(|y| (0..w).map(|x| buf[(x, y)].symbol()).collect::<String>()).collect()
}

fn key(p: &mut Pair, c: char) {
    p.handle_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
}

fn db(rel: &str) -> Connection {
    util::sql(&path(rel))
}

/// The `step N` push/pop ranges of an export, by start: (start, end, name).
fn sql_steps(rel: &str) -> Vec<(i64, i64, String)> {
    let c = db(rel);
    let mut stmt = c
        .prepare(
            "SELECT start, \"end\", text FROM NVTX_EVENTS WHERE eventType = 59 AND text LIKE 'step %' ORDER BY start",
        )
        .expect("prepare");
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).expect("query").map(Result::unwrap).collect()
}

/// The first kernel that starts inside `[from, to)`.
fn sql_first_kernel(rel: &str, from: i64, to: i64) -> Option<i64> {
    db(rel)
        .query_row(
            "SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE start >= ?1 AND start < ?2",
            [from, to],
            |r| r.get(0),
        )
        .expect("query")
}

/// Kernel streams of an export.
fn sql_kernel_streams(rel: &str) -> Vec<i64> {
    let c = db(rel);
    let mut stmt = c.prepare("SELECT DISTINCT streamId FROM CUPTI_ACTIVITY_KIND_KERNEL").expect("prepare");
    stmt.query_map([], |r| r.get(0)).expect("query").map(Result::unwrap).collect()
}

/// Screen rows of each run's block: from its title row to the next block (or the status).
fn blocks(screen: &[String]) -> [std::ops::Range<usize>; 2] {
    let title = |name: &str| screen.iter().position(|l| l.contains(name)).unwrap_or_else(|| panic!("no {name} title"));
    let (b, a) = (title("before · pageable.sqlite"), title("after · pinned.sqlite"));
    let end = screen.iter().rposition(|l| l.contains('┌') || l.contains("cursor")).unwrap_or(screen.len());
    [b..a, a..end]
}

/// Screen column of the ruler's cursor `▼`.
fn cursor_x(screen: &[String]) -> usize {
    screen[1].chars().position(|c| c == '▼').expect("the ruler shows the cursor")
}

/// The row of lane `label` inside `rows`.
fn lane_row<'a>(screen: &'a [String], rows: &std::ops::Range<usize>, label: &str) -> &'a str {
    let y = rows.clone().find(|&y| screen[y].trim_start().starts_with(label)).unwrap_or_else(|| panic!("no {label}"));
    &screen[y]
}

/// Step `k` of both runs starts in the cursor's column, and the first kernel of each
/// step is drawn in the column of its SQL start time.
fn assert_aligned_at(p: &Pair, k: usize) {
    let screen = lines(p);
    let x0 = usize::from(p.timeline_x());
    let blocks = blocks(&screen);
    for (i, rel) in [BEFORE, AFTER].into_iter().enumerate() {
        let (start, end, name) = sql_steps(rel).swap_remove(k);
        let col = p.column(i, start).unwrap_or_else(|| panic!("{rel}: {name} is off screen"));
        assert_eq!(x0 + col, cursor_x(&screen), "{rel}: {name} does not start under the cursor");
        assert!(
            screen[blocks[i].start].contains(&name),
            "{rel}: the title does not name {name}:\n{}",
            screen.join("\n")
        );
        let kernel = sql_first_kernel(rel, start, end).expect("a kernel in the step");
        let kcol = p.column(i, kernel).expect("the step's first kernel is on screen");
        let row = lane_row(&screen, &blocks[i], "kernels s");
        let cell = row.chars().nth(x0 + kcol).expect("cell");
        assert_ne!(cell, ' ', "{rel}: no kernel drawn at column {kcol}:\n{row}");
    }
}

#[test]
fn both_runs_show_their_file_name_and_every_gpu_lane_at_80x24() {
    let p = pair(80, 24);
    let screen = lines(&p);
    let b = blocks(&screen);
    assert!(screen[b[0].start].contains("▶ before · pageable.sqlite"), "{}", screen.join("\n"));
    assert!(screen[b[1].start].contains("after · pinned.sqlite") && !screen[b[1].start].contains('▶'));
    for (i, rel) in [BEFORE, AFTER].into_iter().enumerate() {
        let rows = &screen[b[i].clone()];
        assert!(rows.iter().any(|l| l.starts_with("▾ GPU 0")), "{rel}: no GPU row:\n{}", screen.join("\n"));
        for s in sql_kernel_streams(rel) {
            let label = format!("kernels s{s} ");
            assert!(rows.iter().any(|l| l.contains(&label)), "{rel}: no {label}lane:\n{}", screen.join("\n"));
        }
        assert!(rows.iter().any(|l| l.contains("H2D s")), "{rel}: no H2D lane");
    }
}

#[test]
fn aligned_at_the_step_both_step_starts_share_the_cursor_column() {
    let p = pair(120, 40);
    // The view opens on the first step of the steady state: the second `step N` range.
    assert_eq!(p.align(), Align::Step(1));
    assert_aligned_at(&p, 1);
    let [(b, _, _), (a, _, _)] = [BEFORE, AFTER].map(|r| sql_steps(r).swap_remove(1));
    assert_eq!(p.column(0, b), p.column(1, a));
}

#[test]
fn step_keys_move_both_runs_to_the_next_and_previous_instance() {
    let mut p = pair(120, 40);
    key(&mut p, '}');
    assert_eq!(p.align(), Align::Step(2));
    assert_aligned_at(&p, 2);
    key(&mut p, '}');
    assert_aligned_at(&p, 3);
    for _ in 0..3 {
        key(&mut p, '{');
    }
    assert_eq!(p.align(), Align::Step(0));
    assert_aligned_at(&p, 0);
    key(&mut p, '{');
    assert!(p.run(0).message().is_some_and(|m| m.contains("first step")), "{:?}", p.run(0).message());
    // The last step both runs have, and no further.
    let n = sql_steps(BEFORE).len().min(sql_steps(AFTER).len());
    for _ in 0..n + 2 {
        key(&mut p, '}');
    }
    assert_eq!(p.align(), Align::Step(n - 1));
    assert_aligned_at(&p, n - 1);
}

#[test]
fn align_key_shows_each_run_from_its_own_start_and_back() {
    let mut p = pair(120, 40);
    key(&mut p, 'v');
    assert_eq!(p.align(), Align::Start);
    let screen = lines(&p);
    assert!(screen[0].contains("each from its own start"), "{}", screen[0]);
    // Both first events share a column; the steps now sit where their offsets from
    // the first event put them, apart by the difference of those offsets.
    let first = [0, 1].map(|i| p.run(i).trace().meta.start_ns);
    assert_eq!(p.column(0, first[0]), p.column(1, first[1]));
    let steps = [BEFORE, AFTER].map(|r| sql_steps(r).swap_remove(1).0);
    let cols = [0, 1].map(|i| p.column(i, steps[i]).expect("step in view") as i64);
    let ns_per_col = p.run(0).view().span as f64 / f64::from(p.run(0).size().0 - p.timeline_x());
    let want = ((steps[0] - first[0]) - (steps[1] - first[1])) as f64 / ns_per_col;
    assert!(((cols[0] - cols[1]) as f64 - want).abs() <= 2.0, "columns {cols:?}, expected {want:.1} apart");
    key(&mut p, 'v');
    assert_eq!(p.align(), Align::Step(1));
    assert_aligned_at(&p, 1);
}

#[test]
fn keys_act_on_the_focused_run_and_zoom_is_shared() {
    let mut p = pair(120, 40);
    key(&mut p, 'b');
    assert_eq!(p.focused(), 1);
    let screen = lines(&p);
    assert!(screen[blocks(&screen)[1].start].contains("▶ after"), "focus not marked");
    // Lane focus is per run: j moves the after run's focus only.
    let before_focus = lines(&p);
    key(&mut p, 'j');
    let after_focus = lines(&p);
    assert_ne!(before_focus, after_focus);
    // Zoom on the focused run keeps both step starts in one column, under the cursor.
    key(&mut p, 'w');
    key(&mut p, 'w');
    assert_eq!(p.run(0).view().span, p.run(1).view().span);
    let starts = [BEFORE, AFTER].map(|r| sql_steps(r).swap_remove(1).0);
    let cols = [0, 1].map(|i| p.column(i, starts[i]).expect("step start in view"));
    assert_eq!(cols[0], cols[1]);
    assert_eq!(usize::from(p.timeline_x()) + cols[0], cursor_x(&lines(&p)));
    // The wheel over the other run's block zooms both and leaves the focus; a click focuses it.
    let [b, _] = blocks(&lines(&p));
    let span = p.run(0).view().span;
    let wheel = MouseEvent {
        kind: MouseEventKind::ScrollDown,
        column: p.timeline_x() + 30,
        row: b.start as u16 + 2,
        modifiers: KeyModifiers::NONE,
    };
    p.handle_mouse(wheel);
    assert!(p.run(1).view().span > span && p.run(0).view().span == p.run(1).view().span);
    assert_eq!(p.focused(), 1);
    let click = MouseEvent { kind: MouseEventKind::Down(MouseButton::Left), ..wheel };
    p.handle_mouse(click);
    assert_eq!(p.focused(), 0);
}

/// The numbers of a delta row after its name, each with half a unit of its last digit:
/// durations (`57.6 ms`, `1.421 s`) in ns, changes (`+57%`) in percent.
fn cells(row: &str) -> Vec<(f64, f64)> {
    let words: Vec<&str> = row.split_whitespace().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        let half = |num: &str| 0.5 * 10f64.powi(-(num.split('.').nth(1).map_or(0, str::len) as i32));
        if let Some(p) = w.strip_suffix('%') {
            out.push((p.parse::<f64>().expect("a change"), half(p)));
            i += 1;
            continue;
        }
        let unit = match words.get(i + 1).copied() {
            Some("ns") => 1.0,
            Some("µs") => 1e3,
            Some("ms") => 1e6,
            Some("s") => 1e9,
            other => panic!("`{w}` then {other:?} in `{row}`"),
        };
        out.push((w.parse::<f64>().expect("a duration") * unit, half(w) * unit));
        i += 2;
    }
    out
}

/// The instant of run `i` at the shared origin, from SQL (step) or the trace (start).
fn origin(p: &Pair, i: usize) -> i64 {
    match p.align() {
        Align::Step(k) => sql_steps([BEFORE, AFTER][i]).swap_remove(k).0,
        Align::Start => p.run(i).trace().meta.start_ns,
    }
}

#[test]
fn every_key_keeps_both_runs_on_one_time_axis() {
    let mut p = pair(100, 30);
    // Every printable key but quit, on either run: the other run shows the same window,
    // shifted by exactly the difference of the two origins.
    for c in (' '..='~').filter(|&c| c != 'q') {
        key(&mut p, c);
        p.finish_jobs();
        let (a, b) = (p.run(0), p.run(1));
        assert_eq!(a.view().span, b.view().span, "after {c:?}");
        assert_eq!(a.cursor() - origin(&p, 0), b.cursor() - origin(&p, 1), "after {c:?}");
        assert_eq!(a.view().t0 - origin(&p, 0), b.view().t0 - origin(&p, 1), "after {c:?}");
        assert!(!p.should_quit(), "{c:?} quit");
        // Close what takes the keys away from the timeline: the search prompt, the help.
        if c == '/' || p.run(p.focused()).help_open() {
            p.handle_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
        }
    }
    lines(&p);
}

#[test]
fn the_delta_table_shows_the_numbers_of_the_headless_diff() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_lanescope"))
        .args(["diff", &arg(BEFORE), &arg(AFTER), "--format", "json"])
        .env("XDG_CACHE_HOME", crate::util::cache_home())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run lanescope diff");
    assert!(out.status.success());
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let mut p = pair(120, 50);
    key(&mut p, 'P');
    assert!(p.delta_open());
    let screen = lines(&p);
    let text = screen.join("\n");
    let verdict = json["verdict"].as_str().expect("verdict");
    let head: String = verdict.split_whitespace().take(6).collect::<Vec<_>>().join(" ");
    assert!(text.contains(&head), "no verdict `{head}`:\n{text}");
    let row = |name: &str, values: &serde_json::Value, wall: &str| {
        let line = screen.iter().find(|l| l.trim_start_matches('│').starts_with(name));
        let line = line.unwrap_or_else(|| panic!("no row {name}:\n{text}"));
        let cells = cells(&line.trim_matches('│')[name.len()..]);
        let want = [
            &values["before"][wall],
            &values["after"][wall],
            &values["delta"][wall]["pct"],
            &values["before"]["steady"]["idle_ns"],
            &values["after"]["steady"]["idle_ns"],
            &values["delta"]["steady"]["idle_ns"]["pct"],
        ];
        let want: Vec<f64> = want.iter().filter_map(|v| v.as_f64()).collect();
        assert_eq!(cells.len(), want.len(), "{name}: cells {cells:?}, JSON {want:?}");
        for (&(shown, tol), json) in cells.iter().zip(want) {
            assert!((shown - json).abs() <= tol, "{name}: shown {shown} ± {tol}, JSON {json}");
        }
    };
    row("steady step (run)", &json["overall"], "steady_step_mean_ns");
    let phases = json["phases"].as_array().expect("phases");
    assert!(phases.len() >= 3);
    for ph in phases.iter().filter(|ph| ph["status"] == "both") {
        row(ph["name"].as_str().expect("name"), ph, "wall_mean_ns");
    }
    // Esc closes the table before it would quit.
    p.handle_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    assert!(!p.delta_open() && !p.should_quit());
}

#[test]
fn hostile_names_never_reach_the_screen_and_runs_without_steps_show_from_their_start() {
    let dir = tempfile::tempdir().expect("temp dir");
    let made = util::hostile_export(dir.path());
    let evil_file = dir.path().join(format!("{}.sqlite", util::EVIL));
    std::fs::copy(&made, &evil_file).expect("copy");
    let load = |p: &std::path::Path| {
        let t = lanescope::load(p).expect("hostile export loads");
        let a = analyze(&t, &Options::default());
        (t, a)
    };
    let mut p = Pair::new(load(&made), load(&evil_file), (100, 30));
    assert_eq!(p.align(), Align::Start);
    key(&mut p, '}');
    assert!(p.run(0).message().is_some_and(|m| m.contains("no step phase")), "{:?}", p.run(0).message());
    for k in ['P', 'b', 'j', '.', 'g'] {
        key(&mut p, k);
        let text = lines(&p).join("\n");
        assert!(!text.contains(['\u{1b}', '\u{9b}', '\u{7}']), "a control character reached the screen:\n{text}");
    }
    assert!(lines(&p).iter().any(|l| l.contains("after · ") && l.contains("]0;owned")));
}

#[test]
fn without_a_terminal_view_prints_the_text_diff() {
    let run = |view: bool| {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_lanescope"));
        cmd.args(["diff", &arg(BEFORE), &arg(AFTER)]).current_dir(env!("CARGO_MANIFEST_DIR"));
        cmd.env("XDG_CACHE_HOME", crate::util::cache_home());
        if view {
            cmd.arg("--view");
        }
        cmd.output().expect("run lanescope")
    };
    let (plain, viewed) = (run(false), run(true));
    assert!(viewed.status.success() && !viewed.stdout.is_empty());
    assert_eq!(plain.stdout, viewed.stdout);
}

// ----- the real binary in a pseudo-terminal (term::Session) -----

#[test]
fn journey_through_the_two_run_view_in_a_terminal() {
    let mut s = Session::start(&["diff", &arg(BEFORE), &arg(AFTER), "--view"], 100, 30);
    s.wait_for("▶ before · pageable.sqlite");
    s.wait_for("after · pinned.sqlite");
    let name = |k: usize| sql_steps(BEFORE).swap_remove(k).2;
    s.wait_for(&name(1));
    s.send("}");
    s.wait_for("step 3/");
    s.wait_for(&name(2));
    s.send("P");
    s.wait_for("wall B");
    s.wait_for("steady step (run)");
    s.send("b");
    let screen = s.wait_for("▶ after · pinned.sqlite");
    assert!(!screen.contains("▶ before"), "both runs marked focused:\n{screen}");
    assert!(s.alternate_screen());
    s.send("q");
    assert_eq!(s.exit_code(), 0);
    // Restored: the alternate screen is left and the view is gone.
    assert!(!s.alternate_screen() && !s.contents().contains("pinned.sqlite"));
}

#[test]
fn a_missing_file_is_one_line_naming_it() {
    let mut s = Session::start(&["diff", "tests/fixtures/no-such-run.sqlite", &arg(AFTER), "--view"], 100, 30);
    assert_eq!(s.exit_code(), 1);
    let text = s.contents();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{text}");
    assert!(lines[0].starts_with("lanescope: tests/fixtures/no-such-run.sqlite"), "{text}");
}

/// The seconds the status line shows after `cursor `.
fn shown_cursor_secs(p: &Pair) -> f64 {
    let screen = lines(p);
    let line = screen.iter().rev().find(|l| l.contains("cursor ")).expect("a status line with the cursor");
    let rest = &line[line.find("cursor ").expect("cursor") + 7..];
    rest.split_whitespace().next().and_then(|v| v.parse().ok()).expect("cursor seconds")
}

#[test]
fn times_count_from_the_aligned_step_and_from_the_first_event_after_v() {
    let mut p = pair(120, 40);
    for _ in 0..7 {
        key(&mut p, 'L');
    }
    // Aligned at the second step: the ruler says so and the cursor reads as time since
    // that step's start (SQL), for the focused run and, after `b`, for the other one.
    assert!(lines(&p)[1].contains("s since step"), "{}", lines(&p)[1]);
    for (run, rel) in [(0, BEFORE), (1, AFTER)] {
        if run == 1 {
            key(&mut p, 'b');
        }
        let step = sql_steps(rel).swap_remove(1).0;
        let want = (p.run(run).cursor() - step) as f64 / 1e9;
        assert!(want > 0.0, "{rel}: the cursor moved past the step start");
        let shown = shown_cursor_secs(&p);
        assert!((shown - want).abs() < 1e-4, "{rel}: shown {shown} s, SQL says {want} s since the step");
    }
    // Each run from its own start: times since the run's first event again.
    key(&mut p, 'v');
    assert!(lines(&p)[1].contains("time (s)"), "{}", lines(&p)[1]);
    let first: i64 = db(AFTER)
        .query_row(
            "SELECT min(s) FROM (SELECT min(start) s FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL \
             SELECT min(start) FROM CUPTI_ACTIVITY_KIND_RUNTIME UNION ALL SELECT min(start) FROM NVTX_EVENTS \
             UNION ALL SELECT min(start) FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL SELECT min(start) FROM OSRT_API)",
            [],
            |r| r.get(0),
        )
        .expect("first event");
    let want = (p.run(1).cursor() - first) as f64 / 1e9;
    let shown = shown_cursor_secs(&p);
    // The whole view (30 s over about 100 columns) shows the cursor to about a cell, 0.3 s;
    // counted from the step instead, it would be 7 s off.
    assert!((shown - want).abs() <= 0.5, "shown {shown} s, SQL says {want} s since the first event");
}
