//! Journeys of the single-trace viewer in a pseudo-terminal (`term::Session`), driven by
//! keys and mouse reports: what a user over SSH sees.

use std::time::Duration;

use crate::term::Session;

fn journey(cols: u16, rows: u16) {
    let mut s = Session::start(&["tests/fixtures/pageable.sqlite"], cols, rows);
    s.wait_for("pageable.sqlite");
    s.wait_for("GPU 0");
    // First gap: the status line names its cause.
    s.send("]");
    let screen = s.wait_for("gap 1/");
    assert!(
        crate::util::CAUSES.iter().any(|c| screen.contains(&format!("cause {c}"))),
        "no cause on screen:\n{screen}"
    );
    // Phases panel.
    s.send("p");
    s.wait_for("Phases");
    s.wait_for("forward");
    s.send("\x1b");
    // A lone Esc must not run into the next key (it would read as Alt-/).
    std::thread::sleep(Duration::from_millis(300));
    // Step budget: 30 NVTX steps (as the export holds `step 0`..`step 29`); `o` puts the
    // longest first, Enter zooms to it and the status line says which step.
    s.send("B");
    s.wait_for("30 steps on GPU 0");
    s.send("o\r");
    s.wait_for("step 0 at");
    s.send("\x1b");
    std::thread::sleep(Duration::from_millis(300));
    // Search a kernel name: the status line counts the matches.
    s.send("/nchwToNhwc\r");
    s.wait_for("matches");
    let screen = s.contents();
    assert!(screen.contains("nchwToNhwc"), "search not shown:\n{screen}");
    s.send("q");
    assert_eq!(s.exit_code(), 0);
}

#[test]
fn journey_120x40() {
    journey(120, 40);
}

#[test]
fn journey_80x24() {
    journey(80, 24);
}

#[test]
fn demo_opens_without_arguments() {
    let mut s = Session::start(&[], 100, 30);
    s.wait_for("demo");
    s.wait_for("GPU 0");
    s.send("q");
    assert_eq!(s.exit_code(), 0);
}

#[test]
fn help_and_escape_then_q_quits() {
    let mut s = Session::start(&["tests/fixtures/pageable.sqlite"], 100, 30);
    s.wait_for("GPU 0");
    s.send("?");
    s.wait_for("zoom in around the cursor");
    s.send("\x1b");
    // Esc closes help; with nothing left to close it never quits (reopening a large trace
    // takes seconds) but says which key does.
    s.wait_for("GPU 0");
    std::thread::sleep(Duration::from_millis(200));
    s.send("\x1b");
    s.wait_for("q quits");
    s.send("q");
    assert_eq!(s.exit_code(), 0);
}

#[test]
fn too_small_terminal_says_so_and_quits() {
    let mut s = Session::start(&["tests/fixtures/pageable.sqlite"], 40, 8);
    s.wait_for("too small");
    s.send("q");
    assert_eq!(s.exit_code(), 0);
}

#[test]
fn sigterm_restores_the_terminal() {
    signal_restores_the_terminal("TERM", 15);
}

#[test]
fn sighup_from_a_dropped_ssh_session_restores_the_terminal() {
    signal_restores_the_terminal("HUP", 1);
}

fn signal_restores_the_terminal(signal: &str, number: u32) {
    let mut s = Session::start(&["tests/fixtures/pageable.sqlite"], 100, 30);
    s.wait_for("GPU 0");
    let pid = s.pid();
    let status =
        std::process::Command::new("kill").args([&format!("-{signal}"), &pid.to_string()]).status().expect("kill");
    assert!(status.success());
    assert_eq!(s.exit_code(), 128 + number);
    // Leaving the alternate screen brings the shell's (empty) screen back.
    std::thread::sleep(Duration::from_millis(200));
    let screen = s.contents();
    assert!(!screen.contains("GPU 0"), "SIG{signal}: the viewer is still on screen:\n{screen}");
}

/// SGR (1006) mouse reports, as a terminal (or tmux, or screen) sends them over SSH:
/// `ESC [ < button ; column ; row M` for a press or motion, `m` for a release,
/// coordinates from 1.
fn sgr(button: u8, col: u16, row: u16, press: bool) -> String {
    format!("\x1b[<{button};{col};{row}{}", if press { 'M' } else { 'm' })
}

#[test]
fn mouse_in_sgr_mode_clicks_wheels_and_drags() {
    let mut s = Session::start(&["tests/fixtures/pageable.sqlite"], 120, 40);
    s.wait_for("▾ GPU 0");
    // The viewer asked for press/drag reporting in SGR form, not every motion.
    assert_eq!(s.mouse_mode(), (vt100::MouseProtocolMode::ButtonMotion, vt100::MouseProtocolEncoding::Sgr));
    // Click the GPU group's label (screen row 3): it collapses, a second click expands it.
    s.send(&(sgr(0, 3, 3, true) + &sgr(0, 3, 3, false)));
    s.wait_for("▸ GPU 0");
    s.send(&(sgr(0, 3, 3, true) + &sgr(0, 3, 3, false)));
    s.wait_for("▾ GPU 0");
    // Wheel up over the lanes zooms in around the pointer: half of 9.298 s.
    s.send(&sgr(64, 60, 10, true));
    s.wait_for("+ 4.649 s");
    // Wheel down zooms back out.
    s.send(&sgr(65, 60, 10, true));
    s.wait_for("+ 9.298 s");
    // Drag on the ruler (screen row 2): the status line measures the range.
    s.send(&(sgr(0, 40, 2, true) + &sgr(32, 55, 2, true) + &sgr(32, 70, 2, true) + &sgr(0, 70, 2, false)));
    s.wait_for("mark→cursor");
    // A click on a GPU idle gap (the long one, in the middle of the GPU row) selects it.
    s.send(&(sgr(0, 60, 3, true) + &sgr(0, 60, 3, false)));
    s.wait_for("gap 2/");
    s.send("q");
    assert_eq!(s.exit_code(), 0);
    // Quitting turned reporting off again.
    assert_eq!(s.mouse_mode().0, vt100::MouseProtocolMode::None);
}

#[test]
fn no_mouse_leaves_the_mouse_to_the_terminal() {
    let mut s = Session::start(&["--no-mouse", "tests/fixtures/pageable.sqlite"], 100, 30);
    s.wait_for("GPU 0");
    assert_eq!(s.mouse_mode().0, vt100::MouseProtocolMode::None);
    s.send("q");
    assert_eq!(s.exit_code(), 0);
}
