//! Terminal lifecycle: raw mode, the alternate screen and mouse reporting, restored
//! on quit, on panic (before the panic message prints) and on
//! SIGTERM/SIGHUP/SIGINT/SIGQUIT (which also stop an nsys export in progress).
//!
//! Mouse reporting asks for button presses and drags (1000, 1002) in SGR form
//! (1006), not every motion (1003): over SSH an idle pointer sends nothing.

use std::io::{self, BufWriter, Stdout, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, Once, PoisonError};
use std::thread::JoinHandle;

use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

use super::compact::CompactWriter;
use ratatui::crossterm::terminal::{
    Clear, ClearType, EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::crossterm::{cursor, execute};
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use signal_hook::iterator::{Handle, Signals};

/// The terminal the viewer draws on (buffered: one write per frame).
pub(super) type Term = Terminal<CrosstermBackend<CompactWriter<BufWriter<Stdout>>>>;

static ACTIVE: AtomicBool = AtomicBool::new(false);
static MOUSE: AtomicBool = AtomicBool::new(false);

/// Turn on press/release and drag reporting in SGR form.
const MOUSE_ON: &str = "\x1b[?1000h\x1b[?1002h\x1b[?1006h";
/// Turn it off again.
const MOUSE_OFF: &str = "\x1b[?1006l\x1b[?1002l\x1b[?1000l";
// Held while drawing, so a signal never restores the screen in the middle of a frame.
static SCREEN: Mutex<()> = Mutex::new(());
static HOOK: Once = Once::new();

/// Lock the screen for drawing.
pub(super) fn lock() -> MutexGuard<'static, ()> {
    SCREEN.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Switch to raw mode and the alternate screen, with mouse reporting when `mouse`.
pub(super) fn init(mouse: bool) -> io::Result<Term> {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    // Clear directly: `Terminal::clear` would query the cursor position, a round trip
    // over SSH (and a 2 s wait on terminals that do not answer).
    execute!(io::stdout(), EnterAlternateScreen, cursor::Hide, Clear(ClearType::All))?;
    if mouse {
        MOUSE.store(true, Ordering::SeqCst);
        io::stdout().write_all(MOUSE_ON.as_bytes())?;
        io::stdout().flush()?;
    }
    Terminal::new(CrosstermBackend::new(CompactWriter::new(BufWriter::with_capacity(1 << 16, io::stdout()))))
}

/// Leave raw mode and the alternate screen (idempotent, errors ignored: the
/// terminal may be gone).
pub(super) fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        if MOUSE.load(Ordering::SeqCst) {
            let _ = io::stdout().write_all(MOUSE_OFF.as_bytes());
        }
        let _ = disable_raw_mode();
        let _ = execute!(io::stdout(), LeaveAlternateScreen, cursor::Show);
        let _ = io::stdout().flush();
    }
}

/// Give the terminal back and stop the process (Ctrl-Z); returns a fresh terminal
/// once the shell resumes it with `fg`.
pub(super) fn suspend(term: &mut Term) -> io::Result<()> {
    {
        let _screen = lock();
        restore();
    }
    signal_hook::low_level::raise(signal_hook::consts::SIGTSTP)?;
    // Resumed: a new terminal has empty buffers, so the next frame repaints everything.
    *term = init(MOUSE.load(Ordering::SeqCst))?;
    Ok(())
}

/// Restores the terminal and exits on termination signals while alive.
pub(super) struct SignalGuard {
    handle: Handle,
    thread: Option<JoinHandle<()>>,
}

/// Watch termination signals: stop an nsys export in progress, restore the terminal,
/// say why, exit 128 + signal.
pub(super) fn watch_signals() -> io::Result<SignalGuard> {
    let mut signals = Signals::new([SIGTERM, SIGHUP, SIGINT, SIGQUIT])?;
    let handle = signals.handle();
    crate::reader::rep::signals_exit_elsewhere(true);
    let thread = std::thread::Builder::new().name("signals".into()).spawn(move || {
        if let Some(sig) = signals.forever().next() {
            crate::reader::rep::abort_exports();
            let _screen = lock();
            restore();
            let _ = writeln!(io::stderr(), "lanescope: stopped by signal {sig}");
            std::process::exit(128 + sig);
        }
    })?;
    Ok(SignalGuard { handle, thread: Some(thread) })
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        crate::reader::rep::signals_exit_elsewhere(false);
        self.handle.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
