//! Reading the text: the whole stream (plain or gunzipped) on a second thread, handed
//! over in chunks, and a scan of it (or of part of it) into a [`Builder`].

use std::io::Read;
use std::sync::atomic::Ordering;

use super::builder::Builder;
use super::json::{Event, Scanner, Stop};
use crate::reader::Progress;

/// What scanning the text (or one part of it) gave.
pub(super) struct Scan {
    pub(super) b: Builder,
    /// Where it stopped early, if it did.
    pub(super) stop: Option<Stop>,
    /// A top-level value was read.
    pub(super) top_seen: bool,
    /// An events array began.
    pub(super) saw_events: bool,
    /// The scan stopped at its boundary (the next part's start).
    pub(super) reached: bool,
    /// Parts of the text joined in it (see `split`).
    pub(super) parts: usize,
}

/// Scan with `sc` into `b`: from the start, or (`from`) from an event at that offset of
/// the `traceEvents` array.
pub(super) fn scan<Rd: Read>(mut sc: Scanner<'_, Rd>, mut b: Builder, from: Option<u64>) -> Scan {
    let mut top = Vec::new();
    let on_top = |k: &str, v| top.push((k.to_string(), v));
    let on_event = |e: &Event<'_>| b.event(e);
    let stop = match from {
        None => sc.run(on_top, on_event),
        Some(at) => sc.run_from_events(at, on_top, on_event),
    };
    if !sc.reached {
        sc.missed();
    }
    b.oversized += sc.oversized;
    let top_seen = !top.is_empty();
    b.top = top;
    Scan { b, stop, top_seen, saw_events: sc.saw_events, reached: sc.reached, parts: 1 }
}

/// Scan the whole of `file` (gunzipped when `gzip`), read and decompressed on a second thread.
pub(super) fn scan_stream(file: std::fs::File, gzip: bool, progress: &Progress) -> Scan {
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::sync_channel(4);
        s.spawn(move || {
            let r = Counting { r: file, progress };
            if gzip {
                pump(flate2::read::MultiGzDecoder::new(std::io::BufReader::with_capacity(1 << 20, r)), &tx);
            } else {
                pump(r, &tx);
            }
        });
        scan(Scanner::new(Pipe { rx, cur: Vec::new(), at: 0 }), Builder::new(), None)
    })
}

// Hand decompression and reading to another thread: chunks through a small channel.
struct Pipe {
    rx: std::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>,
    cur: Vec<u8>,
    at: usize,
}

impl Read for Pipe {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.cur.len() {
            match self.rx.recv() {
                Ok(chunk) => {
                    self.cur = chunk?;
                    self.at = 0;
                }
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.cur.len() - self.at);
        buf[..n].copy_from_slice(&self.cur[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

fn pump(mut r: impl Read, tx: &std::sync::mpsc::SyncSender<std::io::Result<Vec<u8>>>) {
    loop {
        let mut chunk = vec![0u8; 1 << 20];
        let mut n = 0;
        while n < chunk.len() {
            match r.read(&mut chunk[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    if n > 0 {
                        chunk.truncate(n);
                        let _ = tx.send(Ok(chunk));
                    }
                    let _ = tx.send(Err(e));
                    return;
                }
            }
        }
        if n == 0 {
            return;
        }
        chunk.truncate(n);
        if tx.send(Ok(chunk)).is_err() {
            return;
        }
    }
}

/// Counts the file's bytes read for the progress gauge.
pub(super) struct Counting<'a, Rd> {
    pub(super) r: Rd,
    pub(super) progress: &'a Progress,
}

impl<Rd: Read> Read for Counting<'_, Rd> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.r.read(buf)?;
        self.progress.rows_done.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}
