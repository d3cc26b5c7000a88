//! Terminal lifecycle: raw mode and the alternate screen, restored on quit, on
//! panic (before the panic message prints) and on SIGTERM/SIGHUP/SIGINT/SIGQUIT.

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
pub type Term = Terminal<CrosstermBackend<CompactWriter<BufWriter<Stdout>>>>;

static ACTIVE: AtomicBool = AtomicBool::new(false);
// Held while drawing, so a signal never restores the screen in the middle of a frame.
static SCREEN: Mutex<()> = Mutex::new(());
static HOOK: Once = Once::new();

/// Lock the screen for drawing.
pub fn lock() -> MutexGuard<'static, ()> {
    SCREEN.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Switch to raw mode and the alternate screen.
pub fn init() -> io::Result<Term> {
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
    Terminal::new(CrosstermBackend::new(CompactWriter::new(BufWriter::with_capacity(1 << 16, io::stdout()))))
}

/// Leave raw mode and the alternate screen (idempotent, errors ignored: the
/// terminal may be gone).
pub fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = disable_raw_mode();
        let _ = execute!(io::stdout(), LeaveAlternateScreen, cursor::Show);
        let _ = io::stdout().flush();
    }
}

/// Give the terminal back and stop the process (Ctrl-Z); returns a fresh terminal
/// once the shell resumes it with `fg`.
pub fn suspend(term: &mut Term) -> io::Result<()> {
    {
        let _screen = lock();
        restore();
    }
    signal_hook::low_level::raise(signal_hook::consts::SIGTSTP)?;
    // Resumed: a new terminal has empty buffers, so the next frame repaints everything.
    *term = init()?;
    Ok(())
}

/// Restores the terminal and exits on termination signals while alive.
pub struct SignalGuard {
    handle: Handle,
    thread: Option<JoinHandle<()>>,
}

/// Watch termination signals: restore the terminal, say why, exit 128 + signal.
pub fn watch_signals() -> io::Result<SignalGuard> {
    let mut signals = Signals::new([SIGTERM, SIGHUP, SIGINT, SIGQUIT])?;
    let handle = signals.handle();
    let thread = std::thread::Builder::new().name("signals".into()).spawn(move || {
        if let Some(sig) = signals.forever().next() {
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
        self.handle.close();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
