//! Interactive timeline viewer: lanes of kernels, copies and CPU activity with idle
//! gaps, per-phase stats and keyboard inspection, for terminals from 80x24 up.
//!
//! [`run`] loads on a background thread (a progress gauge shows after 150 ms), draws
//! the first frame as soon as the trace and its render index are there (the analysis
//! comes in behind it), then redraws only on input (keys, mouse), resize and finished
//! background work: nothing repaints while idle.
//! Frames are pure functions of [`App`] ([`draw`]), which the render bench and the
//! snapshot tests use directly.

mod actions;
mod app;
pub(crate) mod compact;
mod input;
mod layout;
mod mouse;
pub(crate) mod pair;
mod panels;
mod render;
#[cfg(test)]
mod scale_tests;
mod terminal;
pub(crate) mod text;
pub(crate) mod theme;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use ratatui::crossterm::event::{
    self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind,
};
use ratatui::crossterm::terminal::{BeginSynchronizedUpdate, EndSynchronizedUpdate};
use ratatui::crossterm::{execute, queue};
use ratatui::layout::Rect;
use ratatui::widgets::{Block, Borders, Gauge, Paragraph};

pub use app::App;
pub(crate) use app::Selection;
pub use input::Action;
pub use pair::{Pair, draw_pair};
pub use render::draw;

use crate::analysis::Options;
use crate::reader::{self, Progress};

/// What to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// An nsys SQLite export.
    Path(PathBuf),
    /// The demo trace embedded in the binary.
    Demo,
}

/// Show the loading screen only when loading takes longer than this.
const GAUGE_AFTER: Duration = Duration::from_millis(150);

const STAGES: [&str; 3] = ["reading", "analysing", "indexing"];

/// How the viewer talks to the terminal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Settings {
    /// Capture the mouse (SGR reporting).
    pub mouse: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Self { mouse: true }
    }
}

/// Open the viewer on `source` and run it until the user quits.
pub(crate) fn run(source: Source, options: Options, settings: Settings) -> Result<()> {
    if let Source::Path(p) = &source {
        reader::check_file(p).with_context(|| p.display().to_string())?;
    }
    let label = match &source {
        Source::Path(p) => file_name(p),
        Source::Demo => "the demo trace".to_string(),
    };
    let demo = source == Source::Demo;
    show(&label, settings, move |progress, stage| {
        let mut app = load(&source, &options, progress, stage)?;
        app.set_demo(demo);
        Ok(app)
    })
}

/// Open the two-run view of `lanescope diff BEFORE AFTER --view` until the user quits.
pub(crate) fn run_pair(before: PathBuf, after: PathBuf, options: Options, settings: Settings) -> Result<()> {
    // Checked before the screen switches: a bad file is one line naming it.
    for p in [&before, &after] {
        reader::check_file(p).with_context(|| p.display().to_string())?;
    }
    let label = format!("{} and {}", file_name(&before), file_name(&after));
    show(&label, settings, move |progress, stage| pair::load([&before, &after], &options, progress, stage))
}

fn file_name(p: &std::path::Path) -> String {
    p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned())
}

// Load on a thread behind the progress gauge, then run the event loop; the terminal is
// restored however it ends.
fn show<S: Screen + Send + 'static>(
    label: &str,
    settings: Settings,
    load: impl FnOnce(&Progress, &AtomicU8) -> Result<S> + Send + 'static,
) -> Result<()> {
    let progress = Arc::new(Progress::default());
    let stage = Arc::new(AtomicU8::new(0));
    let (tx, rx) = mpsc::channel::<Result<S>>();
    {
        let (progress, stage) = (Arc::clone(&progress), Arc::clone(&stage));
        std::thread::Builder::new().name("loader".into()).spawn(move || {
            let _ = tx.send(load(&progress, &stage));
        })?;
    }
    let mut term = terminal::init(settings.mouse).context("setting up the terminal")?;
    let signals = terminal::watch_signals().context("watching signals");
    let result =
        signals.and_then(|_guard| match wait_for_load(&mut term, &rx, &progress, &stage, &text::sanitize(label))? {
            Some(mut screen) => event_loop(&mut term, &mut screen),
            None => Ok(()),
        });
    {
        let _screen = terminal::lock();
        terminal::restore();
    }
    result
}

/// What the event loop drives: one run ([`App`]) or two ([`Pair`]).
pub(crate) trait Screen {
    /// Terminal size the state is laid out for.
    fn size(&self) -> (u16, u16);
    /// Lay out for a new terminal size.
    fn resize(&mut self, size: (u16, u16));
    /// Handle a key press; true when the screen must be redrawn.
    fn key(&mut self, key: KeyEvent) -> bool;
    /// Handle a mouse event; true when the screen must be redrawn.
    fn mouse(&mut self, ev: MouseEvent) -> bool;
    /// True while background work runs.
    fn busy(&self) -> bool;
    /// Take finished background results; true when the screen changed.
    fn poll_jobs(&mut self) -> bool;
    /// True once the user asked to quit.
    fn should_quit(&self) -> bool;
    /// True once (each time) the user asked to suspend.
    fn take_suspend(&mut self) -> bool;
    /// Draw the whole screen.
    fn draw(&self, frame: &mut ratatui::Frame);
}

impl Screen for App {
    fn size(&self) -> (u16, u16) {
        App::size(self)
    }
    fn resize(&mut self, size: (u16, u16)) {
        App::resize(self, size);
    }
    fn key(&mut self, key: KeyEvent) -> bool {
        self.handle_key(key)
    }
    fn mouse(&mut self, ev: MouseEvent) -> bool {
        self.handle_mouse(ev)
    }
    fn busy(&self) -> bool {
        App::busy(self)
    }
    fn poll_jobs(&mut self) -> bool {
        App::poll_jobs(self)
    }
    fn should_quit(&self) -> bool {
        App::should_quit(self)
    }
    fn take_suspend(&mut self) -> bool {
        App::take_suspend(self)
    }
    fn draw(&self, frame: &mut ratatui::Frame) {
        draw(frame, self);
    }
}

impl Screen for Pair {
    fn size(&self) -> (u16, u16) {
        Pair::size(self)
    }
    fn resize(&mut self, size: (u16, u16)) {
        Pair::resize(self, size);
    }
    fn key(&mut self, key: KeyEvent) -> bool {
        self.handle_key(key)
    }
    fn mouse(&mut self, ev: MouseEvent) -> bool {
        self.handle_mouse(ev)
    }
    fn busy(&self) -> bool {
        Pair::busy(self)
    }
    fn poll_jobs(&mut self) -> bool {
        Pair::poll_jobs(self)
    }
    fn should_quit(&self) -> bool {
        Pair::should_quit(self)
    }
    fn take_suspend(&mut self) -> bool {
        Pair::take_suspend(self)
    }
    fn draw(&self, frame: &mut ratatui::Frame) {
        draw_pair(frame, self);
    }
}

// The trace and its render index (both from the column cache when it holds them); the
// analysis then runs behind the first frame ([`App::open`]).
fn load(source: &Source, options: &Options, progress: &Progress, stage: &AtomicU8) -> Result<App> {
    let trace = match source {
        Source::Path(p) => reader::load_unchecked(p, progress).with_context(|| p.display().to_string())?,
        Source::Demo => reader::load_demo_with_progress(progress).context("loading the demo trace")?,
    };
    stage.store(2, Ordering::Relaxed);
    let index = match source {
        Source::Path(p) => crate::view::index::Index::cached(p, &trace),
        Source::Demo => crate::view::index::Index::build(&trace),
    };
    Ok(App::open(trace, index, options.clone(), (0, 0)))
}

fn is_quit(ev: &Event) -> bool {
    match ev {
        Event::Key(k) if k.kind == KeyEventKind::Press => {
            matches!(k.code, KeyCode::Char('q') | KeyCode::Esc)
                || (k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL))
        }
        _ => false,
    }
}

// Poll input while the loader works; draw the gauge once loading is slower than a blink.
fn wait_for_load<S>(
    term: &mut terminal::Term,
    rx: &mpsc::Receiver<Result<S>>,
    progress: &Progress,
    stage: &AtomicU8,
    label: &str,
) -> Result<Option<S>> {
    let started = Instant::now();
    let mut shown: Option<(u16, u8)> = None;
    let mut dirty = false;
    loop {
        match rx.try_recv() {
            Ok(r) => return r.map(Some),
            Err(mpsc::TryRecvError::Disconnected) => anyhow::bail!("the loader thread stopped"),
            Err(mpsc::TryRecvError::Empty) => {}
        }
        if event::poll(Duration::from_millis(40))? {
            let ev = event::read()?;
            if is_quit(&ev) {
                return Ok(None);
            }
            dirty |= matches!(ev, Event::Resize(..));
        }
        if started.elapsed() >= GAUGE_AFTER {
            let now = ((progress.fraction() * 1000.0) as u16, stage.load(Ordering::Relaxed));
            if dirty || shown != Some(now) {
                let _screen = terminal::lock();
                term.autoresize()?;
                term.draw(|f| draw_loading(f, label, progress, now.1, started.elapsed()))?;
                shown = Some(now);
                dirty = false;
            }
        }
    }
}

fn draw_loading(frame: &mut ratatui::Frame, label: &str, progress: &Progress, stage: u8, elapsed: Duration) {
    let area = frame.area();
    let w = area.width.saturating_sub(4).min(70);
    let r = Rect::new(
        area.x + (area.width - w) / 2,
        area.y + area.height / 2 - 3.min(area.height / 2),
        w,
        5.min(area.height),
    );
    let block = Block::default().borders(Borders::ALL).title(format!(" lanescope: loading {label} "));
    let inner = block.inner(r);
    frame.render_widget(block, r);
    let done = progress.rows_done.load(Ordering::Relaxed);
    let total = progress.rows_total.load(Ordering::Relaxed);
    let stage_name = STAGES.get(usize::from(stage)).copied().unwrap_or("");
    let text_line = if stage == 0 && total > 0 {
        let rate = (done as f64 / elapsed.as_secs_f64().max(1e-3)) as u64;
        format!(
            "{stage_name} {} / {} rows · {} rows/s · q quits",
            text::fmt_count(done),
            text::fmt_count(total),
            text::fmt_count(rate)
        )
    } else {
        format!("{stage_name}… · q quits")
    };
    if inner.height >= 2 {
        frame.render_widget(Paragraph::new(text_line), Rect { height: 1, ..inner });
        let ratio = if stage == 0 { progress.fraction() } else { 1.0 };
        let gauge = Gauge::default().ratio(ratio.clamp(0.0, 1.0)).use_unicode(true);
        frame.render_widget(gauge, Rect { y: inner.y + 1, height: 1, ..inner });
    }
}

fn draw_app(term: &mut terminal::Term, app: &mut impl Screen) -> Result<()> {
    let _screen = terminal::lock();
    let size = term.size()?;
    if (size.width, size.height) != app.size() {
        app.resize((size.width, size.height));
    }
    queue!(term.backend_mut(), BeginSynchronizedUpdate)?;
    term.draw(|f| app.draw(f))?;
    execute!(term.backend_mut(), EndSynchronizedUpdate)?;
    Ok(())
}

fn handle(app: &mut impl Screen, ev: &Event) -> bool {
    match ev {
        Event::Key(k) if k.kind == KeyEventKind::Press => app.key(*k),
        Event::Mouse(m) => app.mouse(*m),
        Event::Resize(w, h) => {
            app.resize((*w, *h));
            true
        }
        _ => false,
    }
}

// Block on input; apply every queued event, then draw once (key repeat over SSH
// arrives in bursts).
fn event_loop(term: &mut terminal::Term, app: &mut impl Screen) -> Result<()> {
    let size = term.size()?;
    app.resize((size.width, size.height));
    draw_app(term, app)?;
    loop {
        // Block on input, except while background work runs: then poll, to show its result.
        let ready = !app.busy() || event::poll(Duration::from_millis(30))?;
        let mut dirty = ready && handle(app, &event::read()?);
        while !app.should_quit() && event::poll(Duration::ZERO)? {
            let ev = event::read()?;
            // Pointer motion without a button does nothing: skip it cheaply.
            if !matches!(ev, Event::Mouse(m) if m.kind == MouseEventKind::Moved) {
                dirty |= handle(app, &ev);
            }
        }
        dirty |= app.poll_jobs();
        if app.should_quit() {
            return Ok(());
        }
        if app.take_suspend() {
            terminal::suspend(term)?;
            dirty = true;
        }
        if dirty {
            draw_app(term, app)?;
        }
    }
}

#[cfg(test)]
mod loading_tests {
    use super::*;

    #[test]
    fn the_gauge_says_rows_read_and_their_rate() {
        let progress = Progress::default();
        progress.rows_done.store(3_000_000, Ordering::Relaxed);
        progress.rows_total.store(12_000_000, Ordering::Relaxed);
        let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(100, 12)).unwrap();
        term.draw(|f| draw_loading(f, "run.sqlite", &progress, 0, Duration::from_secs(2))).unwrap();
        let screen: String = term.backend().buffer().content().iter().map(ratatui::buffer::Cell::symbol).collect();
        assert!(screen.contains("3,000,000 / 12,000,000 rows · 1,500,000 rows/s"), "{screen}");
    }
}
