//! `lanescope bench`: load time against SQLite's own scan, memory per event, and
//! frame times and terminal bytes for a fixed script of views.

use std::io::{self, Write};
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use ratatui::backend::CrosstermBackend;
use ratatui::layout::Rect;
use ratatui::{Terminal, TerminalOptions, Viewport};
use serde::Serialize;

use crate::analysis::{self, Options};
use crate::model::Ns;
use crate::tui::compact::CompactWriter;
use crate::tui::{Action, App};
use crate::view::index::Index;

/// Everything `bench` measures. Every key names its unit.
#[derive(Debug, Serialize)]
pub(crate) struct Bench {
    trace: TraceFacts,
    load: Load,
    memory: Memory,
    analysis_ms: f64,
    index_ms: f64,
    report: ReportTime,
    frames: Frames,
    keys: Keys,
    /// The second open, from the column cache this run wrote, in a process of its own
    /// (absent with `--no-cache`).
    #[serde(skip_serializing_if = "Option::is_none")]
    second_open: Option<SecondOpen>,
    /// The same measurements on a K-times larger export built from this one
    /// (`--scale-to K`), with the per-event ratios against this one.
    #[serde(skip_serializing_if = "Option::is_none")]
    scale: Option<Scale>,
}

/// What `lanescope report` costs on this trace: the load, the analysis, and writing the
/// JSON report (to a sink).
#[derive(Debug, Serialize)]
struct ReportTime {
    write_ms: f64,
    /// Load, analysis and writing, as the `report` command does them.
    total_ms: f64,
    /// `total_ms / load.total_ms`.
    vs_load: f64,
}

/// The second open of the trace: its model read back from the column cache.
#[derive(Debug, Serialize)]
pub(crate) struct SecondOpen {
    /// The cache entry (the model), the render index kept beside it, and the time the
    /// first open took to write both.
    cache_file_bytes: u64,
    index_file_bytes: u64,
    cache_write_ms: f64,
    load: SecondLoad,
    memory: SecondMemory,
    analysis_ms: f64,
    index_ms: f64,
    /// `load.to_first_frame_ms` over the first open's.
    vs_first_open: Option<f64>,
}

#[derive(Debug, Serialize, serde::Deserialize)]
struct SecondLoad {
    total_ms: f64,
    /// Load, view index and the first frame drawn, as for the first open (the analysis
    /// runs behind it).
    to_first_frame_ms: f64,
    /// Until the analysis is in too (the frame that shows gaps and findings).
    to_analysis_ms: f64,
    /// CPU time (user and system) of the opening thread until the first frame: what
    /// `to_first_frame_ms` comes to when no other work waits for the CPU (the entry is
    /// read from the page cache). Null off Linux.
    to_first_frame_cpu_ms: Option<f64>,
}

#[derive(Debug, Serialize, serde::Deserialize)]
struct SecondMemory {
    /// Resident set once the first frame is drawn (the process did nothing before; the
    /// analysis thread is running).
    rss_after_first_frame_bytes: u64,
    /// Once the analysis is in.
    rss_after_analysis_bytes: u64,
    peak_rss_bytes: u64,
    bytes_per_event_after_first_frame: f64,
}

/// What the second-open process measures: [`SecondOpen`] without what the first knows.
#[derive(Debug, Serialize, serde::Deserialize)]
pub(crate) struct Reopened {
    load: SecondLoad,
    memory: SecondMemory,
    analysis_ms: f64,
    index_ms: f64,
}

/// Open `path` from its cache entry and the render index kept beside it (an error
/// without them) and draw the first frame while the analysis runs, as the viewer does,
/// then wait for the analysis: the second open, measured from a fresh process.
pub(crate) fn second_open(path: &Path, size: (u16, u16)) -> Result<Reopened> {
    let dir = crate::reader::rep::cache_dir().context("no cache directory ($XDG_CACHE_HOME or $HOME)")?;
    let entry = crate::reader::cache::Entry::new(path, &dir).with_context(|| path.display().to_string())?;
    let (start, cpu_start) = (Instant::now(), thread_cpu_ns());
    let trace = entry.open_unchecked()?.with_context(|| format!("{}: no cache entry", entry.file.display()))?;
    let load_ms = ms(start);
    let events = trace.event_count();
    let t = Instant::now();
    let index = entry.open_part(crate::view::index::PART, |i: &Index| i.check(&trace))?;
    let index =
        index.with_context(|| format!("{}: no cache entry", entry.part_file(crate::view::index::PART).display()))?;
    let index_ms = ms(t);
    let t = Instant::now();
    let mut app = App::open(trace, index, Options::default(), size);
    draw_once(&mut app, size)?;
    let to_first_frame_ms = ms(start);
    let to_first_frame_cpu_ms = thread_cpu_ns().zip(cpu_start).map(|(b, a)| b.saturating_sub(a) as f64 / 1e6);
    let rss_after = rss("VmRSS");
    app.finish_jobs();
    let analysis_ms = ms(t);
    let to_analysis_ms = ms(start);
    Ok(Reopened {
        load: SecondLoad { total_ms: load_ms, to_first_frame_ms, to_analysis_ms, to_first_frame_cpu_ms },
        memory: SecondMemory {
            rss_after_first_frame_bytes: rss_after,
            rss_after_analysis_bytes: rss("VmRSS"),
            peak_rss_bytes: rss("VmHWM"),
            bytes_per_event_after_first_frame: rss_after as f64 / events.max(1) as f64,
        },
        analysis_ms,
        index_ms,
    })
}

// Write the cache entry of `app`'s trace as a first open does, then measure the second
// open in a child process (`exe bench --second-open`).
fn measure_second_open(path: &Path, app: &App, size: (u16, u16), exe: &Path, first_ms: f64) -> Result<SecondOpen> {
    let dir = crate::reader::rep::cache_dir().context("no cache directory ($XDG_CACHE_HOME or $HOME)")?;
    let entry = crate::reader::cache::Entry::new(path, &dir).with_context(|| path.display().to_string())?;
    let t = Instant::now();
    entry.store(app.trace(), crate::reader::cache::max_bytes()).context("writing the cache entry")?;
    entry
        .store_part(crate::view::index::PART, &app.index, crate::reader::cache::max_bytes())
        .context("writing the cache entry")?;
    let cache_write_ms = ms(t);
    let cache_file_bytes = std::fs::metadata(&entry.file)
        .with_context(|| {
            format!("no cache entry written: the model is larger than the bound ({})", entry.file.display())
        })?
        .len();
    let index_file_bytes = std::fs::metadata(entry.part_file(crate::view::index::PART)).map_or(0, |m| m.len());
    let out = std::process::Command::new(exe)
        .arg("bench")
        .arg(path)
        .args(["--size", &format!("{}x{}", size.0, size.1), "--second-open"])
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("running the second open")?;
    if !out.status.success() {
        anyhow::bail!("the second open failed ({})", out.status);
    }
    let r: Reopened = serde_json::from_slice(&out.stdout).context("reading the second open's result")?;
    let vs_first_open = Some(r.load.to_first_frame_ms / first_ms.max(1e-9));
    Ok(SecondOpen {
        cache_file_bytes,
        index_file_bytes,
        cache_write_ms,
        load: r.load,
        memory: r.memory,
        analysis_ms: r.analysis_ms,
        index_ms: r.index_ms,
        vs_first_open,
    })
}

// Draw one frame of `app` at `size` into a terminal that discards it.
fn draw_once(app: &mut App, size: (u16, u16)) -> Result<()> {
    let area = Rect::new(0, 0, size.0, size.1);
    let mut term = Terminal::with_options(
        CrosstermBackend::new(CompactWriter::new(Counter::default())),
        TerminalOptions { viewport: Viewport::Fixed(area) },
    )
    .context("creating the bench terminal")?;
    let (start, dur) = (app.trace().meta.start_ns, app.trace().duration().max(1));
    app.set_view(start, dur);
    term.draw(|f| crate::tui::draw(f, app))?;
    Ok(())
}

/// `--scale-to K`: the export replicated K times (`lanescope scale`) in a temporary
/// directory, measured by `bench` in a child process (its own peak RSS), then removed.
#[derive(Debug, Serialize)]
pub(crate) struct Scale {
    factor: u32,
    /// Time to build the larger export.
    build_ms: f64,
    file_bytes: u64,
    events: u64,
    /// Load time per event of the larger export over that of this one (1.0 is linear).
    load_per_event_vs_base: Option<f64>,
    /// The larger export's load over the `sqlite3` shell printing its columns.
    load_vs_sqlite3_cli: Option<f64>,
    /// The larger export's load, analysis and view index over the `sqlite3` shell.
    first_frame_vs_sqlite3_cli: Option<f64>,
    /// The larger export's `report` time over its load time.
    report_vs_load: Option<f64>,
    /// Peak RSS with analysis and view index, per event, of the larger export.
    bytes_per_event_with_view: Option<f64>,
    /// The larger export's `bench` result, every key as above.
    bench: serde_json::Value,
}

#[derive(Debug, Serialize)]
struct TraceFacts {
    path: String,
    file_bytes: u64,
    events: usize,
}

#[derive(Debug, Serialize)]
struct Load {
    total_ms: f64,
    rows_per_s: f64,
    file_mb_per_s: f64,
    tables: Vec<crate::model::TableStat>,
    /// The same columns stepped through by SQLite in this process, one thread.
    sqlite_scan_ms: f64,
    /// The `sqlite3` shell printing the same columns to /dev/null, when installed.
    sqlite3_cli_ms: Option<f64>,
    /// `total_ms / sqlite3_cli_ms` (below 1 is faster than the shell).
    vs_sqlite3_cli: Option<f64>,
    /// What the viewer waits for before its first frame: the load, the view index and
    /// the frame itself (the analysis runs behind it).
    to_first_frame_ms: f64,
    /// And the analysis: until the frame that shows gaps and findings.
    to_analysis_ms: f64,
    /// `to_first_frame_ms / sqlite3_cli_ms`.
    first_frame_vs_sqlite3_cli: Option<f64>,
}

#[derive(Debug, Serialize)]
struct Memory {
    baseline_rss_bytes: u64,
    peak_rss_after_load_bytes: u64,
    /// Resident set when the load has returned (what it kept, without its transients).
    rss_after_load_bytes: u64,
    bytes_per_event: f64,
    model_heap_bytes: usize,
    index_bytes: usize,
    /// The analysis's per-device busy unions (all operations, kernels, copies).
    busy_unions_bytes: usize,
    /// Intervals in those unions.
    busy_intervals: usize,
    /// Resident set once the first frame is drawn (model, analysis, view index).
    rss_after_first_frame_bytes: u64,
    peak_rss_after_analysis_bytes: u64,
    /// After the view index is built and the frame script drawn.
    peak_rss_after_view_bytes: u64,
    /// Peak RSS with the model, analysis and view index built, per event (the issue 13
    /// target: at most 32).
    bytes_per_event_with_view: f64,
    /// After the key script too (threshold changes keep the gaps of two thresholds, a
    /// search keeps its matches).
    peak_rss_after_keys_bytes: u64,
}

#[derive(Debug, Serialize)]
struct Frames {
    size: String,
    count: usize,
    p50_ms: f64,
    p95_ms: f64,
    max_ms: f64,
    full_frame_bytes: usize,
    pan_bytes: usize,
    /// Frames during which the drawing thread waited for a CPU (runnable, not running),
    /// and the longest such wait: a slow frame with a wait was preempted, not slow work.
    /// Null where `/proc/thread-self/schedstat` cannot be read.
    preempted_frames: Option<usize>,
    runqueue_wait_max_ms: Option<f64>,
    /// CPU time of the drawing thread per frame (its p95 and max), without the time it
    /// waited for a CPU and, in a guest with steal-time accounting, without the time the
    /// host took the virtual CPU away: what the frame code itself cost. Null off Linux.
    cpu_p95_ms: Option<f64>,
    cpu_max_ms: Option<f64>,
    levels: Vec<Level>,
}

#[derive(Debug, Serialize)]
struct Level {
    name: &'static str,
    span_ns: Ns,
    frames: usize,
    p50_ms: f64,
    p95_ms: f64,
    max_ms: f64,
    /// The same CPU-time figures as [`Frames`], for this level's frames.
    cpu_p95_ms: Option<f64>,
    cpu_max_ms: Option<f64>,
    pan_bytes_max: usize,
}

/// Run the benchmark on `path` with frames of `size` (width, height): the first open
/// reads the export itself; with `reopen` (this program), the column cache is then
/// written and the second open measured by `reopen bench --second-open`.
pub(crate) fn run(path: &Path, size: (u16, u16), reopen: Option<&Path>) -> Result<Bench> {
    let baseline = rss("VmRSS");
    let t = Instant::now();
    let trace = crate::reader::load_fresh(path).with_context(|| path.display().to_string())?;
    let load_ms = ms(t);
    let peak_load = rss("VmHWM");
    let rss_load = rss("VmRSS");
    let events = trace.event_count();
    let model_heap_bytes = trace.heap_bytes();
    let tables = trace.meta.tables.clone();
    let file_bytes = trace.meta.file_bytes;

    // The viewer builds the index and draws; the analysis comes in behind that frame.
    let t = Instant::now();
    let index = Index::build(&trace);
    let index_ms = ms(t);
    let t = Instant::now();
    let analysis = analysis::analyze(&trace, &Options::default());
    let analysis_ms = ms(t);
    let peak_analysis = rss("VmHWM");
    let unions = analysis.devices.iter().flat_map(|d| [&d.busy, &d.kernels, &d.copies]);
    let (busy_unions_bytes, busy_intervals) = unions.fold((0, 0), |(b, n), u| (b + u.heap_bytes(), n + u.len()));
    let t = Instant::now();
    crate::report::write_with(&mut io::sink(), &trace, &analysis, crate::report::Format::Json, false)?;
    let write_ms = ms(t);
    let report_total = load_ms + analysis_ms + write_ms;
    let t = Instant::now();
    let mut app = App::with_analysis(trace, index, analysis, size);
    draw_once(&mut app, size)?;
    let first_frame_ms = load_ms + index_ms + ms(t);
    let to_analysis_ms = first_frame_ms + analysis_ms;
    let rss_after_first_frame = rss("VmRSS");
    let frames = frames(&mut app, size)?;
    let peak_view = rss("VmHWM");
    // The key script grows memory of its own (gap lists of two thresholds, the matches
    // of a search): measured apart from the resting viewer.
    let keys = keys(&mut app, size)?;
    let peak_keys = rss("VmHWM");

    let second_open = reopen.map(|exe| measure_second_open(path, &app, size, exe, first_frame_ms)).transpose()?;
    let index_bytes = app.index_bytes();
    drop(app);
    let queries = crate::reader::queries(path)?;
    let sqlite_scan_ms = sqlite_scan(path, &queries)?;
    // A Kineto JSON trace has no SQLite to compare with.
    let sqlite3_cli_ms = if queries.is_empty() { None } else { sqlite3_cli(path, &queries) };
    Ok(Bench {
        trace: TraceFacts { path: path.display().to_string(), file_bytes, events },
        load: Load {
            total_ms: load_ms,
            rows_per_s: tables.iter().map(|t| t.rows).sum::<usize>() as f64 / (load_ms / 1e3),
            file_mb_per_s: file_bytes as f64 / 1e6 / (load_ms / 1e3),
            tables,
            sqlite_scan_ms,
            sqlite3_cli_ms,
            vs_sqlite3_cli: sqlite3_cli_ms.map(|c| load_ms / c),
            to_first_frame_ms: first_frame_ms,
            to_analysis_ms,
            first_frame_vs_sqlite3_cli: sqlite3_cli_ms.map(|c| first_frame_ms / c),
        },
        memory: Memory {
            baseline_rss_bytes: baseline,
            peak_rss_after_load_bytes: peak_load,
            rss_after_load_bytes: rss_load,
            bytes_per_event: peak_load.saturating_sub(baseline) as f64 / events.max(1) as f64,
            model_heap_bytes,
            index_bytes,
            busy_unions_bytes,
            busy_intervals,
            rss_after_first_frame_bytes: rss_after_first_frame,
            peak_rss_after_analysis_bytes: peak_analysis,
            peak_rss_after_view_bytes: peak_view,
            bytes_per_event_with_view: peak_view as f64 / events.max(1) as f64,
            peak_rss_after_keys_bytes: peak_keys,
        },
        analysis_ms,
        index_ms,
        report: ReportTime { write_ms, total_ms: report_total, vs_load: report_total / load_ms.max(1e-9) },
        frames,
        keys,
        second_open,
        scale: None,
    })
}

/// Build the export at `path` replicated `factor` times in a temporary directory, run
/// `bench` on it in a child process (`exe`, this binary), and add the result to `base`.
/// The directory is removed whatever happens, Ctrl-C included: an interrupt stops the
/// child and is noticed here (after the export is built, when it comes during the build).
pub(crate) fn scale_to(base: &mut Bench, path: &Path, factor: u32, size: (u16, u16), exe: &Path) -> Result<()> {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    if crate::reader::queries(path)?.is_empty() {
        anyhow::bail!("--scale-to needs an nsys SQLite export (it replicates the rows of its tables)");
    }
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM, signal_hook::consts::SIGHUP] {
        signal_hook::flag::register(sig, Arc::clone(&stop)).context("installing the interrupt handler")?;
    }
    let interrupted = || {
        if stop.load(Ordering::Relaxed) {
            anyhow::bail!("interrupted; the scaled export was removed");
        }
        Ok(())
    };
    let dir = TempDir::new()?;
    let big = dir.0.join("scaled.sqlite");
    let t = Instant::now();
    crate::scale::scale(path, &big, factor).context("building the scaled export")?;
    let build_ms = ms(t);
    interrupted()?;
    let file_bytes = std::fs::metadata(&big).map_or(0, |m| m.len());
    let out = std::process::Command::new(exe)
        .arg("bench")
        .arg(&big)
        .args(["--size", &format!("{}x{}", size.0, size.1), "--format", "json", "--no-cache"])
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("running bench on the scaled export")?;
    interrupted()?;
    if !out.status.success() {
        anyhow::bail!("bench on the scaled export failed ({})", out.status);
    }
    let bench: serde_json::Value = serde_json::from_slice(&out.stdout).context("reading the scaled bench result")?;
    let events = bench["trace"]["events"].as_u64().unwrap_or(0);
    let load_ms = bench["load"]["total_ms"].as_f64();
    let base_per_event = base.load.total_ms / base.trace.events.max(1) as f64;
    base.scale = Some(Scale {
        factor,
        build_ms,
        file_bytes,
        events,
        load_per_event_vs_base: load_ms.map(|l| l / events.max(1) as f64 / base_per_event.max(1e-12)),
        load_vs_sqlite3_cli: bench["load"]["vs_sqlite3_cli"].as_f64(),
        first_frame_vs_sqlite3_cli: bench["load"]["first_frame_vs_sqlite3_cli"].as_f64(),
        report_vs_load: bench["report"]["vs_load"].as_f64(),
        bytes_per_event_with_view: bench["memory"]["bytes_per_event_with_view"].as_f64(),
        bench,
    });
    Ok(())
}

// A directory under the system temporary directory, removed on drop.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new() -> Result<Self> {
        let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        let p = std::env::temp_dir().join(format!("lanescope-scale-{}-{nanos}", std::process::id()));
        std::fs::create_dir(&p).with_context(|| format!("creating {}", p.display()))?;
        Ok(Self(p))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

// Resident set figures from /proc (Linux); 0 elsewhere.
fn rss(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// A writer that counts bytes, standing in for the terminal.
#[derive(Default, Clone)]
struct Counter(std::rc::Rc<std::cell::Cell<usize>>);

impl Write for Counter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.set(self.0.get() + buf.len());
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

// What a real terminal gets: the same colour compaction as the viewer.
type Term = Terminal<CrosstermBackend<CompactWriter<Counter>>>;

// Draw one frame; return (milliseconds, bytes written to the terminal).
fn frame(term: &mut Term, bytes: &Counter, app: &App) -> Result<(f64, usize)> {
    let before = bytes.0.get();
    let t = Instant::now();
    term.draw(|f| crate::tui::draw(f, app))?;
    Ok((ms(t), bytes.0.get() - before))
}

// Nanoseconds this thread has spent runnable but waiting for a CPU (the second field
// of the kernel's schedstat), or None off Linux.
fn runqueue_wait_ns() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    s.split_whitespace().nth(1)?.parse().ok()
}

// CPU time of this thread in ns (`CLOCK_THREAD_CPUTIME_ID`, exact to the call, unlike
// schedstat's first field, which lags by up to a tick), or None off Linux.
#[cfg(target_os = "linux")]
fn thread_cpu_ns() -> Option<u64> {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Some(u64::try_from(t.tv_sec).ok()? * 1_000_000_000 + u64::try_from(t.tv_nsec).ok()?)
}

#[cfg(not(target_os = "linux"))]
fn thread_cpu_ns() -> Option<u64> {
    None
}

/// What the scheduler says about one frame: the time the thread waited for a CPU and
/// the CPU time it ran, in ns (None where the system does not say).
#[derive(Clone, Copy)]
struct Sched {
    wait: Option<u64>,
    cpu: Option<u64>,
}

// [`frame`], with what the scheduler says about it.
fn timed_frame(term: &mut Term, bytes: &Counter, app: &App, sched: &mut Vec<Sched>) -> Result<(f64, usize)> {
    let (wait, cpu) = (runqueue_wait_ns(), thread_cpu_ns());
    let r = frame(term, bytes, app)?;
    let cpu_after = thread_cpu_ns();
    let wait_after = runqueue_wait_ns();
    let since = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| b.saturating_sub(a));
    sched.push(Sched { wait: since(wait, wait_after), cpu: since(cpu, cpu_after) });
    Ok(r)
}

// p95 and max of the frames' CPU time in ms, when every frame has one.
fn cpu_quantiles(sched: &[Sched]) -> (Option<f64>, Option<f64>) {
    let cpu: Option<Vec<f64>> = sched.iter().map(|s| s.cpu.map(|n| n as f64 / 1e6)).collect();
    match cpu {
        Some(mut v) if !v.is_empty() => {
            let (_, p95, max) = quantiles(&mut v);
            (Some(p95), Some(max))
        }
        _ => (None, None),
    }
}

// The script: whole trace, 10x, 1000x and the deepest zoom; at each level 40 views
// spread across the trace, each followed by a one-step pan (the `d` key).
fn frames(app: &mut App, size: (u16, u16)) -> Result<Frames> {
    let area = Rect::new(0, 0, size.0, size.1);
    let bytes = Counter::default();
    let mut term = Terminal::with_options(
        CrosstermBackend::new(CompactWriter::new(bytes.clone())),
        TerminalOptions { viewport: Viewport::Fixed(area) },
    )
    .context("creating the bench terminal")?;
    let (start, dur) = (app.trace().meta.start_ns, app.trace().duration().max(1));
    // The first frame of a fresh terminal writes every non-blank cell: a full repaint.
    app.set_view(start, dur);
    let full = frame(&mut term, &bytes, app)?.1;
    let mut levels = Vec::new();
    let mut all = Vec::new();
    let mut pan_max = 0;
    let mut sched = Vec::new();
    for (name, span) in
        [("whole", dur), ("10x", dur / 10), ("1000x", dur / 1000), ("deepest", i64::from(size.0).max(1))]
    {
        let span = span.max(1);
        let mut times = Vec::new();
        let mut pan_bytes_max = 0;
        let first = sched.len();
        for k in 0..40 {
            let t0 = start + (dur - span).max(0) * k / 39;
            app.set_view(t0, span);
            times.push(timed_frame(&mut term, &bytes, app, &mut sched)?.0);
            app.apply(Action::PanRight);
            let (t, bytes) = timed_frame(&mut term, &bytes, app, &mut sched)?;
            times.push(t);
            pan_bytes_max = pan_bytes_max.max(bytes);
        }
        pan_max = pan_max.max(pan_bytes_max);
        all.extend_from_slice(&times);
        let (p50, p95, max) = quantiles(&mut times);
        let (cpu_p95_ms, cpu_max_ms) = cpu_quantiles(&sched[first..]);
        levels.push(Level {
            name,
            span_ns: span,
            frames: times.len(),
            p50_ms: p50,
            p95_ms: p95,
            max_ms: max,
            cpu_p95_ms,
            cpu_max_ms,
            pan_bytes_max,
        });
    }
    let (p50, p95, max) = quantiles(&mut all);
    let (cpu_p95_ms, cpu_max_ms) = cpu_quantiles(&sched);
    let waits: Option<Vec<u64>> = sched.iter().map(|s| s.wait).collect();
    Ok(Frames {
        preempted_frames: waits.as_ref().map(|w| w.iter().filter(|&&n| n > 0).count()),
        runqueue_wait_max_ms: waits.as_ref().map(|w| w.iter().max().copied().unwrap_or(0) as f64 / 1e6),
        cpu_p95_ms,
        cpu_max_ms,
        size: format!("{}x{}", size.0, size.1),
        count: all.len(),
        p50_ms: p50,
        p95_ms: p95,
        max_ms: max,
        full_frame_bytes: full,
        pan_bytes: pan_max,
        levels,
    })
}

fn quantiles(v: &mut [f64]) -> (f64, f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((v.len() - 1) as f64 * q).round() as usize];
    (at(0.5), at(0.95), v[v.len() - 1])
}

// SQLite's own cost of producing the rows: every column of every row read, one thread.
fn sqlite_scan(path: &Path, queries: &[String]) -> Result<f64> {
    let conn = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let t = Instant::now();
    let mut sink = 0i64;
    for sql in queries {
        let mut stmt = conn.prepare(sql)?;
        let n = stmt.column_count();
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            for i in 0..n {
                if let rusqlite::types::ValueRef::Integer(v) = r.get_ref(i)? {
                    sink = sink.wrapping_add(v);
                }
            }
        }
    }
    std::hint::black_box(sink);
    Ok(ms(t))
}

// The `sqlite3` shell printing the same columns to /dev/null; None when not installed.
fn sqlite3_cli(path: &Path, queries: &[String]) -> Option<f64> {
    use std::process::{Command, Stdio};
    let mut child = Command::new("sqlite3")
        .arg("-readonly")
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let t = Instant::now();
    let script = queries.join(";\n") + ";\n";
    child.stdin.take()?.write_all(script.as_bytes()).ok()?;
    child.wait().ok()?.success().then(|| ms(t))
}

/// Write the result as text.
pub(crate) fn write_text(w: &mut dyn Write, b: &Bench) -> io::Result<()> {
    let l = &b.load;
    writeln!(w, "trace    {} ({:.1} MB, {} events)", b.trace.path, b.trace.file_bytes as f64 / 1e6, b.trace.events)?;
    writeln!(
        w,
        "load     {:.1} ms  ({:.2} M rows/s, {:.0} MB/s of file)",
        l.total_ms,
        l.rows_per_s / 1e6,
        l.file_mb_per_s
    )?;
    for t in &l.tables {
        writeln!(w, "           {:<38} {:>9} rows {:>8.1} ms", t.name, t.rows, t.ms)?;
    }
    writeln!(w, "sqlite    in-process scan of the same columns {:.1} ms", l.sqlite_scan_ms)?;
    if let (Some(c), Some(r), Some(f)) = (l.sqlite3_cli_ms, l.vs_sqlite3_cli, l.first_frame_vs_sqlite3_cli) {
        writeln!(
            w,
            "sqlite3   shell printing them to /dev/null {c:.1} ms  (lanescope load = {r:.2}x; to the first frame, {:.1} ms = {f:.2}x)",
            l.to_first_frame_ms
        )?;
    } else {
        writeln!(w, "sqlite3   shell not installed: no comparison")?;
    }
    let m = &b.memory;
    writeln!(
        w,
        "memory   peak RSS {:.1} MB after load, baseline {:.1} MB: {:.1} bytes/event (model heap {:.1} MB, view index {:.1} MB, peak with view {:.1} MB)",
        m.peak_rss_after_load_bytes as f64 / 1e6,
        m.baseline_rss_bytes as f64 / 1e6,
        m.bytes_per_event,
        m.model_heap_bytes as f64 / 1e6,
        m.index_bytes as f64 / 1e6,
        m.peak_rss_after_view_bytes as f64 / 1e6
    )?;
    writeln!(
        w,
        "memory   peak RSS with analysis and view: {:.1} bytes/event; after the key script {:.1} MB",
        m.bytes_per_event_with_view,
        m.peak_rss_after_keys_bytes as f64 / 1e6
    )?;
    writeln!(w, "analysis {:.1} ms, view index {:.1} ms", b.analysis_ms, b.index_ms)?;
    let r = &b.report;
    writeln!(
        w,
        "report   {:.1} ms (load, analysis, JSON written in {:.1} ms): {:.2}x the load",
        r.total_ms, r.write_ms, r.vs_load
    )?;
    let f = &b.frames;
    writeln!(
        w,
        "frames   {} at {}: p50 {:.2} ms, p95 {:.2} ms, max {:.2} ms; full frame {} bytes, one-step pan <= {} bytes",
        f.count, f.size, f.p50_ms, f.p95_ms, f.max_ms, f.full_frame_bytes, f.pan_bytes
    )?;
    if let (Some(n), Some(longest)) = (f.preempted_frames, f.runqueue_wait_max_ms) {
        writeln!(w, "           {n} frames waited for a CPU while drawing (longest wait {longest:.2} ms)")?;
    }
    if let (Some(p95), Some(max)) = (f.cpu_p95_ms, f.cpu_max_ms) {
        writeln!(w, "           CPU time of the drawing thread: p95 {p95:.2} ms, max {max:.2} ms")?;
    }
    for lv in &f.levels {
        writeln!(
            w,
            "           {:<8} span {:>14}: p50 {:.2} ms, p95 {:.2} ms, max {:.2} ms (CPU max {}), pan <= {} bytes",
            lv.name,
            crate::text::fmt_ns(lv.span_ns),
            lv.p50_ms,
            lv.p95_ms,
            lv.max_ms,
            lv.cpu_max_ms.map_or_else(|| "-".to_string(), |m| format!("{m:.2} ms")),
            lv.pan_bytes_max
        )?;
    }
    write_keys(w, &b.keys)?;
    if let Some(s) = &b.second_open {
        writeln!(
            w,
            "reopen   from the cache ({:.1} MB and a {:.1} MB index, written in {:.1} ms): load {:.1} ms, index {:.1} ms, first frame {:.1} ms ({:.3}x the first open's), analysis in at {:.1} ms; RSS after the first frame {:.1} MB ({:.1} bytes/event)",
            s.cache_file_bytes as f64 / 1e6,
            s.index_file_bytes as f64 / 1e6,
            s.cache_write_ms,
            s.load.total_ms,
            s.index_ms,
            s.load.to_first_frame_ms,
            s.vs_first_open.unwrap_or(f64::NAN),
            s.load.to_analysis_ms,
            s.memory.rss_after_first_frame_bytes as f64 / 1e6,
            s.memory.bytes_per_event_after_first_frame
        )?;
    }
    if let Some(s) = &b.scale {
        write_scale_text(w, s)?;
    }
    Ok(())
}

fn write_scale_text(w: &mut dyn Write, s: &Scale) -> io::Result<()> {
    let b = &s.bench;
    let f = |v: &serde_json::Value| v.as_f64().unwrap_or(f64::NAN);
    writeln!(
        w,
        "scale    x{}: {} events, {:.1} MB, built in {:.2} s",
        s.factor,
        s.events,
        s.file_bytes as f64 / 1e6,
        s.build_ms / 1e3
    )?;
    writeln!(
        w,
        "           load {:.1} ms = {:.2}x the sqlite3 shell ({:.1} ms), first frame {:.2}x; per event {:.2}x the base",
        f(&b["load"]["total_ms"]),
        f(&b["load"]["vs_sqlite3_cli"]),
        f(&b["load"]["sqlite3_cli_ms"]),
        f(&b["load"]["first_frame_vs_sqlite3_cli"]),
        s.load_per_event_vs_base.unwrap_or(f64::NAN)
    )?;
    writeln!(
        w,
        "           peak RSS {:.1} bytes/event after load, {:.1} with analysis and view; report {:.1} ms = {:.2}x the load",
        f(&b["memory"]["bytes_per_event"]),
        s.bytes_per_event_with_view.unwrap_or(f64::NAN),
        f(&b["report"]["total_ms"]),
        f(&b["report"]["vs_load"])
    )?;
    writeln!(
        w,
        "           analysis {:.1} ms, view index {:.1} ms, frames p95 {:.2} ms, max {:.2} ms",
        f(&b["analysis_ms"]),
        f(&b["index_ms"]),
        f(&b["frames"]["p95_ms"]),
        f(&b["frames"]["max_ms"])
    )
}

/// Write the result as JSON.
pub(crate) fn write_json(w: &mut dyn Write, b: &Bench) -> io::Result<()> {
    crate::text::write_json(w, b)
}

// ----- key to screen -----

/// Key to screen: from the key press to the frame that shows its effect drawn, in ms.
/// `None` where the trace has nothing for the key (no CUDA call with a GPU operation,
/// no event name to search).
#[derive(Debug, Serialize)]
struct Keys {
    /// Zoom in (`+`) and out (`-`) from the whole trace: worst of the steps, ms.
    zoom_in_max_ms: f64,
    zoom_out_max_ms: f64,
    /// `c` from a CUDA API call to its GPU operation, and back.
    jump_to_gpu_ms: Option<f64>,
    jump_to_api_ms: Option<f64>,
    /// `>` and `<`: the key's own frame (gaps are recomputed in the background) ...
    threshold_up_key_ms: f64,
    threshold_down_key_ms: f64,
    /// ... and until the new gaps are on screen.
    threshold_up_gaps_ms: f64,
    threshold_down_gaps_ms: f64,
    /// Of those: the worker (which gaps to keep, explaining the others), taking its
    /// result in on the screen's thread, and how many gaps were explained.
    threshold_up_worker_ms: f64,
    threshold_up_apply_ms: f64,
    threshold_up_gaps_explained: usize,
    threshold_down_worker_ms: f64,
    threshold_down_apply_ms: f64,
    threshold_down_gaps_explained: usize,
    /// Gaps at the default threshold, and after `>`.
    gap_count_before: usize,
    gap_count_after_up: usize,
    /// `/` search: Enter to the frame showing the first match, and to all matches found.
    search_query: Option<String>,
    search_first_ms: Option<f64>,
    search_all_ms: Option<f64>,
    search_match_count: usize,
    /// Heap bytes of the time directories (lanes and GPU unions), total and per event.
    time_directory_bytes: usize,
    time_directory_bytes_per_event: f64,
}

// Time each key from the press to a drawn frame that shows its effect (self-contained:
// it only drives the viewer through its key handling and background polling).
fn keys(app: &mut App, size: (u16, u16)) -> Result<Keys> {
    use crate::tui::Selection;

    let area = Rect::new(0, 0, size.0, size.1);
    let term = &mut Terminal::with_options(
        CrosstermBackend::new(CompactWriter::new(Counter::default())),
        TerminalOptions { viewport: Viewport::Fixed(area) },
    )
    .context("creating the bench terminal")?;
    let (start, dur) = (app.trace().meta.start_ns, app.trace().duration().max(1));

    // Zoom: from the whole trace in 12 steps, then back out.
    app.set_view(start, dur);
    show(term, app)?;
    let (mut zin, mut zout) = (0f64, 0f64);
    for _ in 0..12 {
        zin = zin.max(press(term, app, '+')?);
    }
    for _ in 0..12 {
        zout = zout.max(press(term, app, '-')?);
    }

    // `c` from a CUDA call to its GPU operation, then back.
    let (mut to_gpu, mut to_api) = (None, None);
    if let Some(r) = launching_call(app.trace(), &app.analysis().lookups) {
        app.select(Some(Selection::Event(r)));
        show(term, app)?;
        to_gpu = Some(press(term, app, 'c')?);
        to_api = Some(press(term, app, 'c')?);
    }
    app.set_view(start, dur);
    app.select(None);

    // `>` then `<`: the key's frame, then until the recomputed gaps are drawn.
    let gap_count_before = app.gaps.len();
    let up = threshold(term, app, '>')?;
    let gap_count_after_up = app.gaps.len();
    let down = threshold(term, app, '<')?;

    // `/`: the name of an event in the middle of the largest lane, typed, then Enter.
    let trace = app.trace();
    let query = trace.lanes.iter().max_by_key(|l| l.ev.len()).filter(|l| !l.ev.is_empty()).map(|l| {
        let name = trace.strings.get(l.ev.name[l.ev.len() / 2]);
        name.chars().filter(|c| !c.is_control()).take(24).collect::<String>()
    });
    let (first, all, found) = match query.as_deref().filter(|q| !q.is_empty()) {
        Some(q) => search(term, app, q)?,
        None => (None, None, 0),
    };
    Ok(Keys {
        zoom_in_max_ms: zin,
        zoom_out_max_ms: zout,
        jump_to_gpu_ms: to_gpu,
        jump_to_api_ms: to_api,
        threshold_up_key_ms: up.key_ms,
        threshold_down_key_ms: down.key_ms,
        threshold_up_gaps_ms: up.gaps_ms,
        threshold_down_gaps_ms: down.gaps_ms,
        threshold_up_worker_ms: up.worker_ms,
        threshold_up_apply_ms: up.apply_ms,
        threshold_up_gaps_explained: up.explained,
        threshold_down_worker_ms: down.worker_ms,
        threshold_down_apply_ms: down.apply_ms,
        threshold_down_gaps_explained: down.explained,
        gap_count_before,
        gap_count_after_up,
        search_query: query,
        search_first_ms: first,
        search_all_ms: all,
        search_match_count: found,
        time_directory_bytes: app.directory_bytes(),
        time_directory_bytes_per_event: app.directory_bytes() as f64 / app.trace().event_count().max(1) as f64,
    })
}

fn show(term: &mut Term, app: &App) -> Result<()> {
    term.draw(|f| crate::tui::draw(f, app))?;
    Ok(())
}

fn char_key(c: char) -> ratatui::crossterm::event::KeyEvent {
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

// Press `c` and draw: milliseconds.
fn press(term: &mut Term, app: &mut App, c: char) -> Result<f64> {
    let t = Instant::now();
    app.handle_key(char_key(c));
    show(term, app)?;
    Ok(ms(t))
}

// A CUDA call that launched GPU work, in the middle of the largest API lane (found
// outside the timing).
fn launching_call(
    trace: &crate::model::Trace,
    lookups: &crate::analysis::index::Index,
) -> Option<crate::model::EventRef> {
    use crate::model::{EventRef, LaneKind};
    let (li, l) = trace
        .lanes
        .iter()
        .enumerate()
        .filter(|(_, l)| matches!(l.kind, LaneKind::CudaApi { .. }))
        .max_by_key(|(_, l)| l.ev.len())?;
    let n = l.ev.len();
    (n / 2..n).chain(0..n / 2).take(10_000).find_map(|i| {
        lookups.gpu_op_at(trace, l.pid, l.ev.corr(i)).map(|_| EventRef { lane: li as u32, idx: i as u32 })
    })
}

struct Threshold {
    key_ms: f64,
    gaps_ms: f64,
    worker_ms: f64,
    apply_ms: f64,
    explained: usize,
}

// `>` or `<`: the key's own frame, then until the recomputed gaps are drawn.
fn threshold(term: &mut Term, app: &mut App, c: char) -> Result<Threshold> {
    let t = Instant::now();
    let key_ms = press(term, app, c)?;
    app.finish_jobs();
    show(term, app)?;
    let (explained, worker_ms, apply_ms) = app.regap_stats;
    Ok(Threshold { key_ms, gaps_ms: ms(t), worker_ms, apply_ms, explained })
}

// Type `q` after `/`, press Enter: until the first match is drawn, until all are found
// and drawn, and how many there are.
fn search(term: &mut Term, app: &mut App, q: &str) -> Result<(Option<f64>, Option<f64>, usize)> {
    use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    app.handle_key(char_key('/'));
    for c in q.chars() {
        app.handle_key(char_key(c));
    }
    let t = Instant::now();
    app.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    while app.search.total == 0 && app.searching() {
        if !app.poll_jobs() {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }
    show(term, app)?;
    let first = ms(t);
    while app.searching() {
        if !app.poll_jobs() {
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
    }
    show(term, app)?;
    Ok((Some(first), Some(ms(t)), app.search.total))
}

fn write_keys(w: &mut dyn Write, k: &Keys) -> io::Result<()> {
    let opt = |v: Option<f64>| v.map_or_else(|| "-".to_string(), |v| format!("{v:.2} ms"));
    writeln!(
        w,
        "index    time directories {} bytes ({:.3} bytes/event)",
        k.time_directory_bytes, k.time_directory_bytes_per_event
    )?;
    writeln!(
        w,
        "keys     key to screen: zoom in <= {:.2} ms, zoom out <= {:.2} ms",
        k.zoom_in_max_ms, k.zoom_out_max_ms
    )?;
    writeln!(
        w,
        "           c: to the GPU operation {}, back to the call {}",
        opt(k.jump_to_gpu_ms),
        opt(k.jump_to_api_ms)
    )?;
    writeln!(
        w,
        "           > {:.2} ms, gaps on screen {:.1} ms ({} -> {} gaps, {} explained; worker {:.1} ms, taken in {:.1} ms)",
        k.threshold_up_key_ms,
        k.threshold_up_gaps_ms,
        k.gap_count_before,
        k.gap_count_after_up,
        k.threshold_up_gaps_explained,
        k.threshold_up_worker_ms,
        k.threshold_up_apply_ms
    )?;
    writeln!(
        w,
        "           < {:.2} ms, gaps on screen {:.1} ms ({} explained; worker {:.1} ms, taken in {:.1} ms)",
        k.threshold_down_key_ms,
        k.threshold_down_gaps_ms,
        k.threshold_down_gaps_explained,
        k.threshold_down_worker_ms,
        k.threshold_down_apply_ms
    )?;
    writeln!(
        w,
        "           / {:?}: first match on screen {}, all {} matches {}",
        k.search_query.as_deref().unwrap_or("-"),
        opt(k.search_first_ms),
        k.search_match_count,
        opt(k.search_all_ms)
    )
}
