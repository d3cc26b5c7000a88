//! Whole-screen snapshots of the viewer on a real export, drawn into a TestBackend.
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
