//! Name search: the `/` prompt (its keys are the key table's search section; other
//! characters are typed), and the active query: a set of interned-name ids, then per
//! lane the sorted rows whose name is in the set. Frames only binary-search those rows.
//!
//! On a large trace the rows are found on a worker thread, a chunk of rows at a time
//! in lane order: matches stream in ([`Search::poll`], called between frames), the
//! screen stays live, and a new query cancels the old one (dropping its [`Search`]).

use ratatui::Frame;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

use crate::model::{LaneKind, Trace};
use crate::tui::input::{self, Action, Facts, Mode};
use crate::tui::text;
use crate::tui::theme::Theme;

/// Longest query the prompt takes, in characters.
const MAX_QUERY: usize = 200;

/// Traces with fewer events are searched at once, on the caller's thread.
pub(crate) const SYNC_EVENTS: usize = 1 << 18;

/// Rows of one lane looked at per message of the worker.
const CHUNK_ROWS: usize = 1 << 18;

/// A search running on a worker thread: rows (lane, sorted rows) arrive in lane order.
#[derive(Debug)]
struct SearchJob {
    rx: mpsc::Receiver<(u32, Vec<u32>)>,
    cancel: Arc<AtomicBool>,
}

impl Drop for SearchJob {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
}

/// The state of the search.
#[derive(Debug, Default)]
pub(crate) struct Search {
    /// Text being typed after `/`, when the prompt is open.
    pub input: Option<String>,
    /// The active query (empty: none).
    pub query: String,
    /// Per lane, sorted rows whose name matches.
    pub matches: Vec<Vec<u32>>,
    /// Total number of matching events.
    pub total: usize,
    // The worker, while it runs.
    job: Option<SearchJob>,
}

// Which interned names contain `query`, any case.
fn hits(trace: &Trace, query: &str) -> Vec<bool> {
    let q = query.to_lowercase();
    let mut hit = vec![false; trace.strings.len()];
    if !q.is_empty() {
        for (id, s) in trace.strings.iter() {
            hit[id as usize] = s.to_lowercase().contains(&q);
        }
    }
    hit
}

// Matching rows of lane `li` among `rows`.
fn scan(trace: &Trace, hit: &[bool], li: usize, rows: std::ops::Range<usize>) -> Vec<u32> {
    let l = &trace.lanes[li];
    let is_hit = |id: u64| hit.get(id as usize).copied().unwrap_or(false);
    let kernels = matches!(l.kind, LaneKind::Kernels { .. });
    rows.filter(|&i| is_hit(u64::from(l.ev.name[i])) || (kernels && is_hit(l.ev.aux(i)))).map(|i| i as u32).collect()
}

impl Search {
    /// Run `query` (case-insensitive substring of the name, or of a kernel's demangled name).
    pub(crate) fn run(trace: &Trace, query: &str) -> Self {
        let hit = hits(trace, query);
        let matches: Vec<Vec<u32>> =
            (0..trace.lanes.len()).map(|li| scan(trace, &hit, li, 0..trace.lanes[li].ev.len())).collect();
        let total = matches.iter().map(Vec::len).sum();
        Self { input: None, query: query.to_string(), matches, total, job: None }
    }

    /// Start `query`: at once on a small trace, else on a worker thread whose matches
    /// [`Search::poll`] takes in.
    pub(crate) fn start(trace: &Arc<Trace>, query: &str) -> Self {
        if trace.event_count() < SYNC_EVENTS || query.is_empty() {
            return Self::run(trace, query);
        }
        let (tx, rx) = mpsc::channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let (t, q, stop) = (Arc::clone(trace), query.to_string(), Arc::clone(&cancel));
        let work = move || {
            let hit = hits(&t, &q);
            for (li, l) in t.lanes.iter().enumerate() {
                let n = l.ev.len();
                for lo in (0..n).step_by(CHUNK_ROWS) {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let rows = scan(&t, &hit, li, lo..(lo + CHUNK_ROWS).min(n));
                    if !rows.is_empty() && tx.send((li as u32, rows)).is_err() {
                        return;
                    }
                }
            }
        };
        let job = std::thread::Builder::new().name("search".into()).spawn(work).ok().map(|_| SearchJob { rx, cancel });
        if job.is_none() {
            return Self::run(trace, query);
        }
        let matches = vec![Vec::new(); trace.lanes.len()];
        Self { input: None, query: query.to_string(), matches, total: 0, job }
    }

    /// True while matches are still being looked for.
    pub(crate) fn running(&self) -> bool {
        self.job.is_some()
    }

    /// Take in the matches found since the last call; returns true when some arrived
    /// or the search finished.
    pub(crate) fn poll(&mut self) -> bool {
        let Some(job) = &self.job else { return false };
        let mut changed = false;
        loop {
            match job.rx.try_recv() {
                Ok((li, rows)) => {
                    self.total += rows.len();
                    self.matches[li as usize].extend_from_slice(&rows);
                    changed = true;
                }
                Err(mpsc::TryRecvError::Empty) => return changed,
                Err(mpsc::TryRecvError::Disconnected) => {
                    self.job = None;
                    return true;
                }
            }
        }
    }

    /// True when a query is active.
    pub(crate) fn active(&self) -> bool {
        !self.query.is_empty()
    }

    /// Matching rows of `lane`, if a query is active.
    pub(crate) fn lane(&self, lane: usize) -> Option<&[u32]> {
        if self.active() { self.matches.get(lane).map(Vec::as_slice) } else { None }
    }
}

impl Search {
    /// Open the prompt.
    pub(crate) fn open_prompt(&mut self) {
        self.input = Some(String::new());
    }

    /// Handle a key while the prompt is open: the query to run when Enter was pressed,
    /// and whether the user asked to quit.
    pub(crate) fn on_key(&mut self, key: &KeyEvent) -> (Option<String>, bool) {
        let Some(buf) = self.input.as_mut() else { return (None, false) };
        match input::action(Mode::Search, key) {
            Some(Action::SearchRun) => return (self.input.take(), false),
            Some(Action::SearchCancel) => self.input = None,
            Some(Action::SearchClear) => buf.clear(),
            Some(Action::SearchBackspace) => {
                buf.pop();
            }
            Some(Action::Quit) => return (None, true),
            Some(_) => {}
            None => {
                let plain = !key.modifiers.intersects(KeyModifiers::CONTROL | KeyModifiers::ALT);
                if let KeyCode::Char(c) = key.code
                    && plain
                    && buf.chars().count() < MAX_QUERY
                {
                    buf.push(c);
                }
            }
        }
        (None, false)
    }
}

/// Draw the prompt on the last row of `area` (the status lines).
pub(crate) fn render_prompt(frame: &mut Frame, theme: Theme, area: Rect, q: &str) {
    let hints: Vec<String> =
        input::hints(Mode::Search, Facts::default()).iter().map(|(k, what, _)| format!("{k} {what}")).collect();
    let prompt = Line::from(vec![
        Span::styled("/", theme.key()),
        Span::raw(text::sanitize(q).into_owned()),
        Span::styled("█", theme.key()),
        Span::styled(format!("   {} · names contain the text, any case", hints.join(" · ")), theme.dim()),
    ]);
    frame.render_widget(prompt, Rect { height: 1, y: area.y + area.height - 1, ..area });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Events, Lane, Strings};

    fn big_trace() -> Trace {
        let mut t = Trace { strings: Strings::new(), ..Trace::default() };
        let names = [t.strings.intern("gemm_kernel"), t.strings.intern("memcpy"), t.strings.intern("GEMM big")];
        for lane in 0..3u32 {
            let mut ev = Events::default();
            for i in 0..(SYNC_EVENTS as i64 / 2) {
                let name = names[(i as usize * 7 + lane as usize) % 3];
                ev.push(i * 10, i * 10 + 5, name, None, None, None);
            }
            t.lanes.push(Lane::new(LaneKind::Nvtx { tid: lane, depth: 0 }, 1, ev));
        }
        t
    }

    #[test]
    fn streamed_matches_equal_matches_found_at_once() {
        let t = Arc::new(big_trace());
        let at_once = Search::run(&t, "gemm");
        let mut s = Search::start(&t, "gemm");
        assert!(s.running(), "a large trace is searched on a worker");
        while s.running() {
            if !s.poll() {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        assert_eq!(s.matches, at_once.matches);
        assert_eq!(s.total, at_once.total);
        assert!(s.total > SYNC_EVENTS / 2);
        // A new query replaces (and cancels) a running one.
        let first = Search::start(&t, "memcpy");
        drop(first);
        let mut none = Search::start(&t, "no such name");
        while none.running() {
            none.poll();
        }
        assert_eq!(none.total, 0);
    }
}
