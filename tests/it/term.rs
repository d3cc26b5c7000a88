//! The real binary in a pseudo-terminal, read back through a vt100 screen: the session
//! the PTY journeys share. Every wait has a deadline and the child is killed when a test
//! fails, so a hang cannot stall CI.

use std::io::{Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use portable_pty::{Child, CommandBuilder, MasterPty, PtySize, native_pty_system};

/// Generous: CI is a slow, shared 2-core box and the debug binary loads the trace.
const DEADLINE: Duration = Duration::from_secs(60);

/// lanescope running in a pseudo-terminal of a given size.
pub(crate) struct Session {
    child: Box<dyn Child + Send + Sync>,
    writer: Box<dyn Write + Send>,
    screen: Arc<Mutex<vt100::Parser>>,
    /// Set when the pty reader saw the end of the output (the child and its pty closed).
    drained: Arc<AtomicBool>,
    _master: Box<dyn MasterPty + Send>,
}

impl Session {
    pub(crate) fn start(args: &[&str], cols: u16, rows: u16) -> Self {
        let pty =
            native_pty_system().openpty(PtySize { rows, cols, pixel_width: 0, pixel_height: 0 }).expect("open a pty");
        let mut cmd = CommandBuilder::new(env!("CARGO_BIN_EXE_lanescope"));
        cmd.args(args);
        cmd.env("XDG_CACHE_HOME", crate::util::cache_home());
        cmd.cwd(env!("CARGO_MANIFEST_DIR"));
        cmd.env("TERM", "xterm-256color");
        cmd.env_remove("NO_COLOR");
        let child = pty.slave.spawn_command(cmd).expect("spawn lanescope");
        drop(pty.slave);
        let mut reader = pty.master.try_clone_reader().expect("pty reader");
        let writer = pty.master.take_writer().expect("pty writer");
        let screen = Arc::new(Mutex::new(vt100::Parser::new(
            rows.try_into().expect("rows > 0"),
            cols.try_into().expect("cols > 0"),
            0,
        )));
        let sink = Arc::clone(&screen);
        let drained = Arc::new(AtomicBool::new(false));
        let done = Arc::clone(&drained);
        std::thread::spawn(move || {
            let mut buf = [0u8; 1 << 14];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 {
                    break;
                }
                sink.lock().expect("screen lock").process(&buf[..n]);
            }
            done.store(true, Ordering::Release);
        });
        Self { child, writer, screen, drained, _master: pty.master }
    }

    pub(crate) fn contents(&self) -> String {
        self.screen.lock().expect("screen lock").screen().contents()
    }

    /// Wait until the screen shows any of `texts`; fail with the screen on timeout.
    pub(crate) fn wait_for_any(&mut self, texts: &[&str]) -> String {
        let start = Instant::now();
        loop {
            let s = self.contents();
            if texts.iter().any(|t| s.contains(t)) {
                return s;
            }
            if start.elapsed() > DEADLINE {
                let _ = self.child.kill();
                panic!("timed out waiting for {texts:?}; the screen shows:\n{s}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub(crate) fn wait_for(&mut self, text: &str) -> String {
        self.wait_for_any(&[text])
    }

    pub(crate) fn send(&mut self, keys: &str) {
        self.writer.write_all(keys.as_bytes()).expect("write keys");
        self.writer.flush().expect("flush keys");
    }

    /// Wait for the process to exit and its last output to reach the screen; return its
    /// exit code.
    pub(crate) fn exit_code(&mut self) -> u32 {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                // The child may exit before the reader thread has parsed its last bytes
                // (the terminal restore): wait for the end of the output too.
                while !self.drained.load(Ordering::Acquire) && start.elapsed() < DEADLINE {
                    std::thread::sleep(Duration::from_millis(10));
                }
                return status.exit_code();
            }
            if start.elapsed() > DEADLINE {
                let _ = self.child.kill();
                panic!("lanescope did not exit; the screen shows:\n{}", self.contents());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Session {
    /// The mouse reporting the terminal was asked for.
    pub(crate) fn mouse_mode(&self) -> (vt100::MouseProtocolMode, vt100::MouseProtocolEncoding) {
        let p = self.screen.lock().expect("screen lock");
        (p.screen().mouse_protocol_mode(), p.screen().mouse_protocol_encoding())
    }

    /// Process id of the child, to signal it.
    pub(crate) fn pid(&self) -> u32 {
        self.child.process_id().expect("the child has a pid")
    }

    /// True while the alternate screen is shown.
    pub(crate) fn alternate_screen(&self) -> bool {
        self.screen.lock().expect("screen lock").screen().alternate_screen()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
    }
}
