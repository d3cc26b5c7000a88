//! The compacting writer must not change what the terminal shows: the same frames,
//! written raw and through `CompactWriter`, give identical screens (every cell's
//! text, colours and attributes) in a terminal emulator, frame after frame.

use std::cell::RefCell;
use std::io::Write;
use std::num::NonZeroU16;
use std::rc::Rc;

use lanescope::CompactWriter;
use lanescope::Options;
use lanescope::{Action, App, draw};
use lanescope::{Depth, Theme};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};

#[derive(Clone, Default)]
struct Sink(Rc<RefCell<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn term<W: Write>(w: W, size: (u16, u16)) -> Terminal<CrosstermBackend<W>> {
    let viewport = Viewport::Fixed(Rect::new(0, 0, size.0, size.1));
    Terminal::with_options(CrosstermBackend::new(w), TerminalOptions { viewport }).unwrap()
}

fn cells(p: &vt100::Parser, size: (u16, u16)) -> Vec<String> {
    let s = p.screen();
    let mut out = Vec::new();
    for r in 0..size.1 {
        for c in 0..size.0 {
            let cell = s.cell(r, c).unwrap();
            out.push(format!(
                "{r},{c}:{:?} fg={:?} bg={:?} b={} i={} u={} inv={}",
                cell.contents(),
                cell.fgcolor(),
                cell.bgcolor(),
                cell.bold(),
                cell.italic(),
                cell.underline(),
                cell.inverse()
            ));
        }
    }
    out
}

#[test]
fn compacted_frames_look_the_same() {
    for depth in [Depth::Ansi16, Depth::Ansi256] {
        same_screens(depth);
    }
}

fn same_screens(depth: Depth) {
    let size = (140, 42);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pageable.sqlite");
    let trace = lanescope::load(std::path::Path::new(path)).unwrap();
    let analysis = lanescope::analyze(&trace, &Options::default());
    let mut app = App::new(trace, analysis, size);
    app.set_theme(Theme::new(depth));
    let (raw, small) = (Sink::default(), Sink::default());
    let mut t_raw = term(raw.clone(), size);
    let mut t_small = term(CompactWriter::new(small.clone()), size);
    let dims = || (NonZeroU16::new(size.1).unwrap(), NonZeroU16::new(size.0).unwrap());
    let mut p_raw = vt100::Parser::new(dims().0, dims().1, 0);
    let mut p_small = vt100::Parser::new(dims().0, dims().1, 0);
    let script = [
        Action::NextGap,
        Action::ZoomOut,
        Action::PanRight,
        Action::PanRight,
        Action::LaneDown,
        Action::NextEvent,
        Action::Select,
        Action::ZoomIn,
        Action::PanLeft,
        Action::Phases,
        Action::FitAll,
        Action::GapList,
        Action::NextGap,
        Action::NextGap,
        Action::Help,
        Action::FitAll,
    ];
    let (mut raw_bytes, mut small_bytes) = (0, 0);
    for (step, action) in std::iter::once(None).chain(script.iter().map(Some)).enumerate() {
        if let Some(a) = action {
            app.apply(*a);
        }
        t_raw.draw(|f| draw(f, &app)).unwrap();
        t_small.draw(|f| draw(f, &app)).unwrap();
        let (r, s) = (raw.0.take(), small.0.take());
        raw_bytes += r.len();
        small_bytes += s.len();
        p_raw.process(&r);
        p_small.process(&s);
        assert_eq!(
            cells(&p_raw, size),
            cells(&p_small, size),
            "{depth:?}: screens differ after step {step} ({action:?})"
        );
    }
    assert!(small_bytes < raw_bytes, "compaction saves bytes: {small_bytes} vs {raw_bytes}");
}
