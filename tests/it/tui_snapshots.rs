//! Whole-screen snapshots of the viewer on a real export, drawn into a `TestBackend`.
//! The text content is snapshotted (glyphs do not depend on colours).

use std::sync::OnceLock;

use lanescope::Trace;
use lanescope::{Action, App, draw};
use lanescope::{Analysis, Options};
use lanescope::{Depth, Theme};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};

fn pageable() -> &'static (Trace, Analysis) {
    static T: OnceLock<(Trace, Analysis)> = OnceLock::new();
    T.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pageable.sqlite");
        let t = lanescope::load(std::path::Path::new(path)).expect("fixture loads");
        let a = lanescope::analyze(&t, &Options::default());
        (t, a)
    })
}

fn app(w: u16, h: u16) -> App {
    let (t, a) = pageable();
    let mut app = App::new(t.clone(), a.clone(), (w, h));
    app.set_theme(Theme::new(Depth::Mono));
    app
}

fn screen(app: &App) -> String {
    let (w, h) = (app_size(app).0, app_size(app).1);
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("test backend");
    term.draw(|f| draw(f, app)).expect("draw");
    let buf = term.backend().buffer();
    let mut out = String::new();
    for y in 0..h {
        let mut line = String::new();
        for x in 0..w {
            line.push_str(buf[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

fn app_size(app: &App) -> (u16, u16) {
    app.size()
}

fn keys(app: &mut App, keys: &str) {
    for c in keys.chars() {
        let code = match c {
            '\n' => KeyCode::Enter,
            '\t' => KeyCode::Tab,
            c => KeyCode::Char(c),
        };
        app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
    }
}

#[test]
fn whole_trace_120x40() {
    insta::assert_snapshot!(screen(&app(120, 40)));
}

#[test]
fn whole_trace_80x24() {
    insta::assert_snapshot!(screen(&app(80, 24)));
}

#[test]
fn first_gap_zoomed() {
    let mut a = app(120, 40);
    a.apply(Action::NextGap);
    insta::assert_snapshot!(screen(&a));
}

#[test]
fn details_of_a_copy_after_the_first_gap() {
    let mut a = app(120, 40);
    a.apply(Action::NextGap);
    // Focus the H2D lane of GPU 0 and step to its next copy.
    keys(&mut a, "jj\t");
    a.apply(Action::Details);
    insta::assert_snapshot!(screen(&a));
}

#[test]
fn details_side_panel_160x45() {
    let mut a = app(160, 45);
    keys(&mut a, "j\t\t\ti");
    insta::assert_snapshot!(screen(&a));
}

#[test]
fn phases_panel() {
    let mut a = app(120, 40);
    a.apply(Action::Phases);
    insta::assert_snapshot!(screen(&a));
}

#[test]
fn step_budget_panel() {
    let mut a = app(120, 40);
    a.apply(Action::Steps);
    insta::assert_snapshot!(screen(&a));
}

#[test]
fn step_budget_panel_80x24_by_wall_then_zoomed() {
    let mut a = app(80, 24);
    keys(&mut a, "Bo");
    insta::assert_snapshot!("step_budget_80x24_by_wall", screen(&a));
    keys(&mut a, "\n");
    insta::assert_snapshot!("step_budget_80x24_zoomed", screen(&a));
}

#[test]
fn gap_list() {
    let mut a = app(120, 40);
    a.apply(Action::GapList);
    insta::assert_snapshot!(screen(&a));
}

#[test]
fn help() {
    let mut a = app(120, 40);
    a.apply(Action::Help);
    insta::assert_snapshot!(screen(&a));
}

#[test]
fn search_highlights_matches() {
    let mut a = app(120, 40);
    keys(&mut a, "/nchwToNhwc\n");
    insta::assert_snapshot!(screen(&a));
}

#[test]
fn too_small() {
    insta::assert_snapshot!(screen(&app(50, 10)));
}

#[test]
fn threshold_change_keeps_the_selected_gap() {
    let mut a = app(120, 40);
    for _ in 0..5 {
        a.apply(Action::NextGap);
    }
    let before = a.selected_gap().cloned().expect("a gap is selected");
    a.apply(Action::ThresholdUp);
    a.finish_jobs();
    let after = a.selected_gap().cloned().expect("the gap survives a doubled threshold");
    assert_eq!((before.start, before.end), (after.start, after.end));
    a.apply(Action::ThresholdDown);
    a.apply(Action::ThresholdDown);
    a.finish_jobs();
    let after = a.selected_gap().cloned().expect("still selected");
    assert_eq!((before.start, before.end), (after.start, after.end));
}

#[test]
fn zoom_keeps_the_cursor_column() {
    let mut a = app(120, 40);
    keys(&mut a, "DDDDDDDDDD");
    let col = a.cursor_column();
    for _ in 0..6 {
        a.apply(Action::ZoomIn);
        assert!(a.cursor_column().abs_diff(col) <= 1, "zoom in moved the cursor column");
    }
    for _ in 0..6 {
        a.apply(Action::ZoomOut);
        assert!(a.cursor_column().abs_diff(col) <= 1, "zoom out moved the cursor column");
    }
    a.apply(Action::FitAll);
    assert_eq!(a.view().span, a.trace().duration());
}

#[test]
fn tab_steps_through_a_lane_in_order_and_back() {
    let mut a = app(120, 40);
    keys(&mut a, "j0");
    let mut seen = Vec::new();
    for _ in 0..5 {
        a.apply(Action::NextEvent);
        seen.push(a.selected_event().expect("an event is selected"));
    }
    let lane = &a.trace().lanes[seen[0].lane as usize];
    assert!(matches!(lane.kind, lanescope::LaneKind::Kernels { .. }));
    assert!(seen.windows(2).all(|w| w[1].lane == w[0].lane && w[1].idx == w[0].idx + 1));
    a.apply(Action::PrevEvent);
    assert_eq!(a.selected_event(), Some(seen[3]));
}

#[test]
fn c_jumps_from_kernel_to_its_launch_and_back() {
    let mut a = app(120, 40);
    keys(&mut a, "j\t");
    let kernel = a.selected_event().expect("kernel selected");
    a.apply(Action::Jump);
    let call = a.selected_event().expect("API call selected");
    let lane = &a.trace().lanes[call.lane as usize];
    assert!(matches!(lane.kind, lanescope::LaneKind::CudaApi { .. }));
    assert_eq!(lane.ev.corr(call.idx as usize), a.trace().lanes[kernel.lane as usize].ev.corr(kernel.idx as usize));
    a.apply(Action::Jump);
    assert_eq!(a.selected_event(), Some(kernel));
}

#[test]
fn search_steps_through_matches() {
    let mut a = app(120, 40);
    keys(&mut a, "/reduce_kernel\n");
    let first = a.selected_event().expect("a match is selected");
    let name = |a: &App, r: lanescope::EventRef| {
        let l = &a.trace().lanes[r.lane as usize];
        a.trace().strings.get(l.ev.name[r.idx as usize]).to_string()
    };
    assert!(name(&a, first).contains("reduce_kernel"));
    keys(&mut a, "n");
    let second = a.selected_event().expect("next match");
    assert_ne!(first, second);
    assert!(name(&a, second).contains("reduce_kernel"));
    keys(&mut a, "N");
    assert_eq!(a.selected_event(), Some(first));
    keys(&mut a, "/no such name at all\n");
    assert!(a.message().is_some_and(|m| m.contains("no event name")));
}

#[test]
fn gap_list_enter_zooms_to_the_longest_gap() {
    let mut a = app(120, 40);
    a.apply(Action::GapList);
    a.apply(Action::ListEnter);
    let longest = a.gaps().map(lanescope::Gap::dur).max().expect("gaps");
    let g = a.selected_gap().expect("gap selected");
    assert_eq!(g.dur(), longest);
    let v = a.view();
    assert!(v.t0 <= g.start && g.end <= v.t0 + v.span, "the gap is in view");
}

#[test]
fn controls_in_trace_names_never_reach_the_screen() {
    let (t, an) = pageable();
    let mut t = t.clone();
    let evil = t.strings.intern("evil\u{1b}[2J\u{7}name");
    for l in t.lanes.iter_mut().filter(|l| matches!(l.kind, lanescope::LaneKind::Kernels { .. })) {
        l.ev.name.iter_mut().for_each(|n| *n = evil);
    }
    let mut a = App::new(t, an.clone(), (120, 40));
    keys(&mut a, "j\ti");
    let s = screen(&a);
    assert!(s.contains("evil"), "{s}");
    assert!(!s.chars().any(|c| c.is_control() && c != '\n'), "{s}");
}

const EVERY_ACTION: &[Action] = &[
    Action::ZoomIn,
    Action::ZoomOut,
    Action::PanLeft,
    Action::PanRight,
    Action::CursorLeft,
    Action::CursorRight,
    Action::FitAll,
    Action::ViewEnd,
    Action::FitSelection,
    Action::FitSteady,
    Action::LaneUp,
    Action::LaneDown,
    Action::LanePageUp,
    Action::LanePageDown,
    Action::ToggleGroup,
    Action::ToggleAllGroups,
    Action::Pin,
    Action::ToggleMetrics,
    Action::NextEvent,
    Action::PrevEvent,
    Action::Select,
    Action::Jump,
    Action::Details,
    Action::NextGap,
    Action::PrevGap,
    Action::GapList,
    Action::ListDown,
    Action::ListEnter,
    Action::SortNext,
    Action::SortColumn(3),
    Action::SortReverse,
    Action::ListBottom,
    Action::ListPageUp,
    Action::ThresholdUp,
    Action::ThresholdDown,
    Action::Phases,
    Action::ListDown,
    Action::ListEnter,
    Action::SortColumn(7),
    Action::NextMatch,
    Action::PrevMatch,
    Action::Mark,
    Action::Help,
    Action::ListDown,
    Action::ListPageDown,
    Action::Help,
    Action::Back,
];

#[test]
fn every_action_draws_on_an_empty_trace_and_a_tiny_screen() {
    let t = Trace::default();
    let an = lanescope::analyze(&t, &Options::default());
    for size in [(60, 12), (80, 24), (50, 10)] {
        let mut a = App::new(t.clone(), an.clone(), size);
        for &act in EVERY_ACTION {
            a.apply(act);
            a.finish_jobs();
            screen(&a);
        }
        let mut a = app(size.0, size.1);
        for &act in EVERY_ACTION.iter().chain(EVERY_ACTION) {
            a.apply(act);
            a.finish_jobs();
            screen(&a);
        }
    }
}

// ----- mouse -----

fn mouse(app: &mut App, kind: MouseEventKind, x: u16, y: u16, modifiers: KeyModifiers) {
    app.handle_mouse(MouseEvent { kind, column: x, row: y, modifiers });
}

fn click(app: &mut App, x: u16, y: u16) {
    mouse(app, MouseEventKind::Down(MouseButton::Left), x, y, KeyModifiers::NONE);
    mouse(app, MouseEventKind::Up(MouseButton::Left), x, y, KeyModifiers::NONE);
}

/// Rows of the 120x40 screen: header 0, ruler 1, first lane row (GPU 0) 2.
const RULER: u16 = 1;
const GPU_ROW: u16 = 2;

#[test]
fn wheel_zooms_around_the_pointer_and_shift_wheel_pans() {
    let mut a = app(120, 40);
    let x = a.timeline_x() + 30;
    let span = a.view().span;
    let col_time = |a: &App| {
        let v = a.view();
        v.t0 + (i128::from(v.span) * 30 / i128::from(120 - a.timeline_x())) as i64
    };
    let before = col_time(&a);
    mouse(&mut a, MouseEventKind::ScrollUp, x, GPU_ROW + 3, KeyModifiers::NONE);
    assert_eq!(a.view().span, span / 2, "wheel up zooms in");
    assert!((col_time(&a) - before).abs() <= a.view().span / 50, "the time under the pointer stays put");
    mouse(&mut a, MouseEventKind::ScrollDown, x, GPU_ROW + 3, KeyModifiers::NONE);
    assert!(a.view().span.abs_diff(span) <= 1);
    mouse(&mut a, MouseEventKind::ScrollUp, x, GPU_ROW + 3, KeyModifiers::NONE);
    let t0 = a.view().t0;
    mouse(&mut a, MouseEventKind::ScrollDown, x, GPU_ROW + 3, KeyModifiers::SHIFT);
    assert!(a.view().t0 > t0, "shift-wheel pans forward");
    let t0 = a.view().t0;
    mouse(&mut a, MouseEventKind::ScrollLeft, x, GPU_ROW + 3, KeyModifiers::NONE);
    assert!(a.view().t0 < t0, "the horizontal wheel pans back");
}

/// Screen column of time `t` at the current view.
fn x_of(a: &App, t: i64) -> u16 {
    let v = a.view();
    let w = i128::from(a.size().0 - a.timeline_x());
    a.timeline_x() + (i128::from(t - v.t0) * w / i128::from(v.span)) as u16
}

#[test]
fn click_selects_the_gap_under_the_pointer() {
    let mut a = app(120, 40);
    a.apply(Action::NextGap);
    a.apply(Action::NextGap);
    let gap = a.selected_gap().cloned().expect("a gap");
    // Select something else, then click the middle of the gap on the GPU row.
    keys(&mut a, "jj\t");
    assert!(a.selected_gap().is_none());
    let x = x_of(&a, gap.start + gap.dur() / 2);
    click(&mut a, x, GPU_ROW);
    assert_eq!(a.selected_gap().map(|g| (g.start, g.end)), Some((gap.start, gap.end)));
    assert!(screen(&a).contains("Details"), "the details panel opened");
}

#[test]
fn click_selects_the_event_under_the_pointer() {
    let mut a = app(120, 40);
    keys(&mut a, "j\t");
    let kernel = a.selected_event().expect("a kernel");
    let ev = &a.trace().lanes[kernel.lane as usize].ev;
    let (start, dur) = (ev.start[kernel.idx as usize], ev.dur(kernel.idx as usize));
    keys(&mut a, "\t");
    assert_ne!(a.selected_event(), Some(kernel));
    a.set_view(start - dur / 2, dur * 2);
    let x = x_of(&a, start + dur / 2);
    click(&mut a, x, GPU_ROW + 1);
    assert_eq!(a.selected_event(), Some(kernel));
}

#[test]
fn click_on_a_label_collapses_and_expands_its_group() {
    let mut a = app(120, 40);
    assert!(screen(&a).contains("▾ GPU 0"));
    click(&mut a, 2, GPU_ROW);
    let s = screen(&a);
    assert!(s.contains("▸ GPU 0") && !s.contains("kernels s7"), "{s}");
    click(&mut a, 2, GPU_ROW);
    assert!(screen(&a).contains("▾ GPU 0"));
}

#[test]
fn drag_on_the_ruler_measures_a_range() {
    let mut a = app(120, 40);
    let x0 = a.timeline_x();
    mouse(&mut a, MouseEventKind::Down(MouseButton::Left), x0 + 20, RULER, KeyModifiers::NONE);
    mouse(&mut a, MouseEventKind::Drag(MouseButton::Left), x0 + 35, RULER, KeyModifiers::NONE);
    mouse(&mut a, MouseEventKind::Drag(MouseButton::Left), x0 + 50, RULER, KeyModifiers::NONE);
    mouse(&mut a, MouseEventKind::Up(MouseButton::Left), x0 + 50, RULER, KeyModifiers::NONE);
    let (m, c) = (a.mark().expect("the drag set the mark"), a.cursor());
    assert!(c > m);
    assert_eq!(a.cursor_column(), 50);
    insta::assert_snapshot!(screen(&a));
    // f fits the dragged range.
    a.apply(Action::FitSelection);
    assert!(a.view().t0 <= m && c <= a.view().t0 + a.view().span && a.view().span < (c - m) * 2);
    // A click without a drag moves the cursor and drops the mark.
    click(&mut a, x0 + 5, RULER);
    assert_eq!((a.mark(), a.cursor_column()), (None, 5));
}

#[test]
fn clicks_in_the_gap_list_select_rows_and_a_second_click_zooms() {
    let mut a = app(120, 40);
    a.apply(Action::GapList);
    // Bottom panel: 14 rows ending above the status line; border, header, then rows.
    let first_row = 40 - 2 - 14 + 2;
    click(&mut a, 30, first_row + 2);
    assert!(a.selected_gap().is_none(), "one click only highlights");
    click(&mut a, 30, first_row + 2);
    let mut by_dur: Vec<_> = a.gaps().map(lanescope::Gap::dur).collect();
    by_dur.sort_unstable_by(|x, y| y.cmp(x));
    assert_eq!(a.selected_gap().map(lanescope::Gap::dur), Some(by_dur[2]));
    // The wheel scrolls the list; the phase table takes clicks too.
    mouse(&mut a, MouseEventKind::ScrollDown, 30, first_row, KeyModifiers::NONE);
    a.apply(Action::Phases);
    click(&mut a, 30, first_row + 1);
    click(&mut a, 30, first_row + 1);
    assert!(a.message().is_some_and(|m| m.contains("slowest instance")), "{:?}", a.message());
}

#[test]
fn the_first_view_marks_the_steady_state_and_f_fits_it() {
    let mut a = app(120, 40);
    let (s, e) = {
        let w = a.analysis().windows;
        (w.steady_start, w.steady_end)
    };
    let ruler = screen(&a).lines().nth(1).unwrap_or_default().to_string();
    assert!(ruler.contains('[') && ruler.contains(']'), "{ruler}");
    a.apply(Action::FitSteady);
    let v = a.view();
    assert!(v.t0 <= s && e <= v.t0 + v.span && v.span <= (e - s) * 3 / 2, "{v:?} vs {s}..{e}");
}

#[test]
fn zoom_and_pan_at_the_limits_of_i64() {
    use lanescope::{Events, Lane, LaneKind};
    let mut t = Trace::default();
    let name = t.strings.intern("edge_kernel");
    let mut ev = Events::default();
    ev.push(i64::MIN + 10, i64::MIN + 1_000, name, Some(1), None, None);
    ev.push(i64::MAX - 1_000, i64::MAX - 10, name, Some(2), None, None);
    t.lanes.push(Lane::new(LaneKind::Kernels { device: 0, stream: 7 }, 1, ev));
    t.meta.start_ns = i64::MIN + 10;
    t.meta.end_ns = i64::MAX - 10;
    let an = lanescope::analyze(&Trace::default(), &Options::default());
    let mut a = App::new(t, an, (100, 30));
    let x = a.timeline_x() + 40;
    let script: &[Action] = &[
        Action::FitAll,
        Action::ViewEnd,
        Action::PageRight,
        Action::PageRight,
        Action::CursorRight,
        Action::Mark,
        Action::FitAll,
        Action::PageLeft,
        Action::PageLeft,
        Action::CursorLeft,
        Action::FitSelection,
        Action::LaneDown,
        Action::NextEvent,
        Action::NextEvent,
        Action::PrevEvent,
        Action::Select,
        Action::FitSelection,
        Action::FitSteady,
    ];
    for &act in script {
        a.apply(act);
        screen(&a);
        for _ in 0..70 {
            a.apply(Action::ZoomIn);
        }
        screen(&a);
        a.apply(Action::PanRight);
        mouse(&mut a, MouseEventKind::ScrollDown, x, 3, KeyModifiers::SHIFT);
        mouse(&mut a, MouseEventKind::ScrollUp, x, 3, KeyModifiers::NONE);
        screen(&a);
        for _ in 0..70 {
            a.apply(Action::ZoomOut);
            mouse(&mut a, MouseEventKind::ScrollDown, x, 3, KeyModifiers::NONE);
        }
        mouse(&mut a, MouseEventKind::Down(MouseButton::Left), x, 1, KeyModifiers::NONE);
        mouse(&mut a, MouseEventKind::Drag(MouseButton::Left), x + 30, 1, KeyModifiers::NONE);
        mouse(&mut a, MouseEventKind::Up(MouseButton::Left), x + 30, 1, KeyModifiers::NONE);
        let s = screen(&a);
        assert!(s.contains("lanescope"), "{s}");
        let v = a.view();
        assert!(v.span >= 1 && i128::from(v.t0) + i128::from(v.span) <= i128::from(i64::MAX));
    }
}

#[test]
fn several_ranks_fold_their_threads_and_r_moves_between_their_gpus() {
    // Two real exports on one timeline: rank 0 (pageable) and rank 1 (pinned), by file order.
    let files = [crate::util::fixture("pageable.sqlite"), crate::util::fixture("pinned.sqlite")];
    let t = lanescope::load(&lanescope::group_inputs(&files)).expect("both load");
    let a = lanescope::analyze(&t, &Options::default());
    let mut app = App::new(t, a, (120, 40));
    app.set_theme(Theme::new(Depth::Mono));
    let s = screen(&app);
    assert!(s.contains("rank 0 · GPU 0") && s.contains("rank 1 · GPU 0"), "{s}");
    // Thread groups start folded: no lane of theirs shows, their headers do.
    assert!(!s.contains("  CUDA API "), "{s}");
    // Focus starts on rank 0's GPU: `r` moves to rank 1's, then wraps; the status line says which.
    let status = |app: &App| screen(app).lines().rev().nth(1).unwrap_or_default().to_string();
    for want in ["rank 1", "rank 0", "rank 1"] {
        keys(&mut app, "r");
        assert!(status(&app).contains(want), "{want}: {}", status(&app));
    }
}

#[test]
fn esc_steps_back_one_layer_and_never_quits() {
    let mut app = app(120, 40);
    let esc = |app: &mut App| app.handle_key(KeyEvent::new(KeyCode::Esc, KeyModifiers::NONE));
    // A gap selected (`]`), a mark set (`m`), the gap list open (`g`), then help (`?`).
    keys(&mut app, "]mg?");
    assert!(app.help_open() && app.selected_gap().is_some() && app.mark().is_some());
    esc(&mut app);
    assert!(!app.help_open(), "help first");
    esc(&mut app);
    assert!(app.selected_gap().is_some(), "the panel closes before the selection clears");
    esc(&mut app);
    assert!(app.selected_gap().is_none() && app.mark().is_some(), "then the selection");
    esc(&mut app);
    assert!(app.mark().is_none(), "then the mark");
    esc(&mut app);
    assert!(!app.should_quit(), "Esc never quits");
    assert_eq!(app.message(), Some("q quits"));
    keys(&mut app, "q");
    assert!(app.should_quit());
}

#[test]
fn from_80x24_up_the_first_finding_always_shows() {
    for name in ["pageable.sqlite", "pinned.sqlite", "multigpu.sqlite", "graphs.sqlite"] {
        let t = lanescope::load(&crate::util::fixture(name)).expect("fixture loads");
        let a = lanescope::analyze(&t, &Options::default());
        let first = a.findings.first().map(|f| format!("1. {} {} ", f.severity.label(), f.rule)).expect("a finding");
        for (w, h) in [(80, 24), (100, 30), (200, 60)] {
            let mut app = App::new(t.clone(), a.clone(), (w, h));
            app.set_theme(Theme::new(Depth::Mono));
            let s = screen(&app);
            assert!(s.contains(&first), "{name} at {w}x{h}: no `{first}`\n{s}");
        }
    }
}
