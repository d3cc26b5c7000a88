//! Whole-screen snapshots of the viewer on a real export, drawn into a `TestBackend`.
//! The text content is snapshotted (glyphs do not depend on colours).

use std::sync::OnceLock;

use lanescope::analysis::{self, Analysis, Options};
use lanescope::model::Trace;
use lanescope::tui::theme::{Depth, Theme};
use lanescope::tui::{Action, App, draw};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

fn pageable() -> &'static (Trace, Analysis) {
    static T: OnceLock<(Trace, Analysis)> = OnceLock::new();
    T.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pageable.sqlite");
        let t = lanescope::reader::load(std::path::Path::new(path)).expect("fixture loads");
        let a = analysis::analyze(&t, &Options::default());
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
    assert!(matches!(lane.kind, lanescope::model::LaneKind::Kernels { .. }));
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
    assert!(matches!(lane.kind, lanescope::model::LaneKind::CudaApi { .. }));
    assert_eq!(lane.ev.corr(call.idx as usize), a.trace().lanes[kernel.lane as usize].ev.corr(kernel.idx as usize));
    a.apply(Action::Jump);
    assert_eq!(a.selected_event(), Some(kernel));
}

#[test]
fn search_steps_through_matches() {
    let mut a = app(120, 40);
    keys(&mut a, "/reduce_kernel\n");
    let first = a.selected_event().expect("a match is selected");
    let name = |a: &App, r: lanescope::model::EventRef| {
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
    let longest = a.analysis().gaps.iter().map(lanescope::analysis::Gap::dur).max().expect("gaps");
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
    for l in t.lanes.iter_mut().filter(|l| matches!(l.kind, lanescope::model::LaneKind::Kernels { .. })) {
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
    Action::LaneUp,
    Action::LaneDown,
    Action::LanePageUp,
    Action::LanePageDown,
    Action::ToggleGroup,
    Action::ToggleAllGroups,
    Action::Pin,
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
    let an = analysis::analyze(&t, &Options::default());
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
