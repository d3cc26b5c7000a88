//! Reader: nsys SQLite exports (2022.2 and later) and PyTorch profiler (Kineto) JSON
//! traces ([`kineto`]) into the in-memory [`Trace`]; the format is told by content.
//!
//! Every table and column is optional: the schema is probed first and only what
//! exists is selected. Tables are read on up to four threads (CUDA API calls; host
//! scheduling data; GPU metrics; the rest), names are resolved once.

// A `_` arm over one of our enums hides the variant added next (it is how annotations
// once stayed on the wrong GPU): name the variants, or allow it with a reason.
#![warn(clippy::wildcard_enum_match_arm)]

pub(crate) mod cache;
mod command;
mod counters;
mod host;
pub(crate) mod inputs;
// Its three `_` arms (a thread id that is no number, memsets after kernels and copies,
// a JSON value of another type) are being rewritten with the reader's speed-up (issue
// 19); they state their own reasons there.
#[allow(clippy::wildcard_enum_match_arm, reason = "kineto's arms are revisited by its rewrite")]
pub(crate) mod kineto;
pub(crate) mod merge;
mod nvtx;
mod open;
pub(crate) mod rep;
mod schema;
mod tables;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result, bail};

use crate::model::counters::Counters;
use crate::model::{Lane, LaneKind, Meta, TableStat, Trace};
pub(crate) use command::{load_inputs, load_one, load_one_lent};
pub(crate) use schema::EVENT_TABLES;
use schema::Schema;
use tables::{Names, Partial};

/// Load progress shared with a UI thread: rows read so far and rows expected.
#[derive(Debug, Default)]
pub(crate) struct Progress {
    /// Rows read so far, over all tables.
    pub rows_done: AtomicU64,
    /// Rows expected (known after the schema probe; 0 before).
    pub rows_total: AtomicU64,
}

impl Progress {
    /// Fraction done in `[0, 1]`.
    pub(crate) fn fraction(&self) -> f64 {
        let total = self.rows_total.load(Ordering::Relaxed);
        if total == 0 { 0.0 } else { (self.rows_done.load(Ordering::Relaxed) as f64 / total as f64).min(1.0) }
    }
}

/// Load the export at `path`. Errors name what is wrong with the file, not the path
/// (callers prefix the path).
pub fn load(path: &Path) -> Result<Trace> {
    load_with_progress(path, &Progress::default())
}

/// Load the export at `path` through a column cache in `dir`: its entry there when it
/// is valid, else the export, then written there (see docs/cache.md). The commands use
/// the user's cache directory; this is for tests and tools that keep their own.
pub fn load_cached_in(path: &Path, dir: &Path) -> Result<Trace> {
    cache::through_dir(path, dir, cache::Checks::Now, || load_file(path, &Progress::default()))
}

/// Load the export at `path` from the file itself, never from the column cache (the
/// first open that `bench` measures).
pub(crate) fn load_fresh(path: &Path) -> Result<Trace> {
    load_file(path, &Progress::default())
}

/// Label used as the path of the embedded demo trace.
pub(crate) const DEMO_NAME: &str = "demo (pageable.sqlite, embedded)";

static DEMO: &[u8] = include_bytes!("../../assets/demo.sqlite");

/// Where a trace comes from: a file, or bytes built into the binary.
#[derive(Debug, Clone, Copy)]
enum Source<'a> {
    File(&'a Path),
    Bytes(&'static [u8]),
}

impl Source<'_> {
    fn connect(self) -> Result<rusqlite::Connection> {
        match self {
            Source::File(p) => open::connect(p),
            Source::Bytes(b) => {
                let mut c = rusqlite::Connection::open_in_memory()?;
                c.deserialize_bytes(rusqlite::MAIN_DB, b)?;
                Ok(c)
            }
        }
    }
}

/// Load the demo trace embedded in the binary.
pub(crate) fn load_demo_with_progress(progress: &Progress) -> Result<Trace> {
    let mut t = load_source(Source::Bytes(DEMO), progress)?;
    t.meta.path = DEMO_NAME.to_string();
    Ok(t)
}

/// The `SELECT`s the reader runs on the export at `path`, `StringIds` first: `bench`
/// times SQLite producing exactly these rows.
pub(crate) fn queries(path: &Path) -> Result<Vec<String>> {
    if open::sniff(path)?.0 != open::Format::Sqlite {
        return Ok(Vec::new());
    }
    let schema = Schema::probe(&open::connect(path)?)?;
    // Host scheduling tables are host.rs's, the others tables.rs's: neither calls the other.
    let tables = EVENT_TABLES.iter().filter_map(|t| host::select(&schema, t).or_else(|| tables::select(&schema, t)));
    Ok(schema.has("StringIds").then(|| tables::STRING_IDS.to_string()).into_iter().chain(tables).collect())
}

/// Check that `path` names an export lanescope can open (an `.nsys-rep` is exported
/// first, see [`rep`]; a group of [`inputs::group`] checks each file); say what is wrong
/// otherwise. Returns the file's size.
pub(crate) fn check_file(path: &Path) -> Result<u64> {
    if let Some(files) = inputs::grouped(path) {
        return inputs::check_group(&files);
    }
    open::check_file(&sqlite_of(path)?)
}

// The SQLite file to read for `path`: itself, or the cached export of a report.
fn sqlite_of(path: &Path) -> Result<std::path::PathBuf> {
    if rep::is_report(path) && !open::is_sqlite(path) { rep::export(path) } else { Ok(path.to_path_buf()) }
}

/// Load the export at `path` (or the merged exports of a group), updating `progress`
/// as rows are read.
pub(crate) fn load_with_progress(path: &Path, progress: &Progress) -> Result<Trace> {
    if let Some(files) = inputs::grouped(path) {
        return inputs::load_group(&files, progress);
    }
    cache::through(path, cache::Checks::Now, || load_file(path, progress))
}

/// [`load_with_progress`] for the viewer: a trace from the column cache comes with its
/// large columns left in the mapped entry and not yet checked, so the first frame is
/// drawn without reading them all. [`Trace::verify_columns`] must pass before any number
/// is taken from it; [`reload_damaged`] is the way back when it does not.
pub(crate) fn load_unchecked(path: &Path, progress: &Progress) -> Result<Trace> {
    if let Some(files) = inputs::grouped(path) {
        return inputs::load_group(&files, progress);
    }
    cache::through(path, cache::Checks::Later, || load_file(path, progress))
}

/// The trace at `path` again after [`Trace::verify_columns`] failed on a trace
/// [`load_unchecked`] gave: its cache entry is removed, the trace read again and the
/// entry rebuilt. Also the removed entry's file, for the caller to say so.
pub(crate) fn reload_damaged(path: &Path) -> Result<(Trace, Option<std::path::PathBuf>)> {
    let removed = cache::discard(path);
    Ok((load_with_progress(path, &Progress::default())?, removed))
}

// One export or report, read from the file itself.
fn load_file(path: &Path, progress: &Progress) -> Result<Trace> {
    let file = sqlite_of(path)?;
    let (format, file_bytes) = open::sniff(&file)?;
    let mut t = match format {
        open::Format::Sqlite => load_source(Source::File(&file), progress)?,
        open::Format::Json | open::Format::Gzip => kineto::load(&file, format == open::Format::Gzip, progress)?,
    };
    t.meta.path = path.display().to_string();
    t.meta.file_bytes = file_bytes;
    Ok(t)
}

fn load_source(source: Source<'_>, progress: &Progress) -> Result<Trace> {
    let conn = source.connect()?;
    let schema = Schema::probe(&conn)?;
    if !schema.is_nsys_export() {
        bail!("SQLite database, but not an nsys export (no StringIds, CUPTI, NVTX or OS runtime tables)");
    }
    progress.rows_total.store(schema.event_rows_estimate(&conn), Ordering::Relaxed);
    let meta = tables::read_meta(&conn, &schema)?;
    let names = tables::read_string_ids(&conn, &schema).context("reading StringIds")?;

    // The CUDA API table is usually the largest: give it its own connection and core.
    // Context switches and CPU samples, when present, can be as large: a third one.
    let has_host = schema.has("SCHED_EVENTS") || schema.has("COMPOSITE_EVENTS");
    // GPU counters (millions of rows when captured) get a connection of their own too.
    let has_counters = schema.has("GPU_METRICS");
    let (api, host, counters, rest) = std::thread::scope(|s| {
        let api = s.spawn(|| -> Result<Partial> {
            let c = source.connect()?;
            tables::read_runtime(tables::Src { conn: &c, schema: &schema, progress })
        });
        let host = has_host.then(|| {
            s.spawn(|| -> Result<Partial> {
                let c = source.connect()?;
                host::read_host(tables::Src { conn: &c, schema: &schema, progress })
            })
        });
        let counters = has_counters.then(|| {
            s.spawn(|| -> Result<(Counters, Vec<TableStat>)> {
                let c = source.connect()?;
                counters::read_counters(tables::Src { conn: &c, schema: &schema, progress })
            })
        });
        let rest = read_rest(tables::Src { conn: &conn, schema: &schema, progress });
        let join = |h: std::thread::ScopedJoinHandle<'_, Result<Partial>>| {
            h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("reader thread panicked")))
        };
        let counters = counters.map(|h| h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("reader thread panicked"))));
        (join(api), host.map(join), counters, rest)
    });
    let mut parts = rest?;
    parts.push(api?);
    if let Some(h) = host {
        parts.push(h?);
    }
    let mut trace = assemble(meta, &conn, &schema, names, parts)?;
    if let Some(c) = counters {
        let (counters, mut stats) = c.context("reading GPU_METRICS")?;
        trace.meta.tables.append(&mut stats);
        trace.counters = counters;
    }
    Ok(trace)
}

// Everything but CUDA API calls and host data, on the calling thread.
fn read_rest(src: tables::Src<'_>) -> Result<Vec<Partial>> {
    let mut sink = tables::Sink::default();
    tables::read_gpu_and_os(src, &mut sink)?;
    nvtx::read_nvtx(src, &mut sink)?;
    Ok(vec![sink.finish()])
}

fn assemble(
    mut meta: Meta,
    conn: &rusqlite::Connection,
    schema: &Schema,
    mut names: Names,
    parts: Vec<Partial>,
) -> Result<Trace> {
    let mut lanes_by_key: HashMap<(LaneKind, u32), crate::model::Events> = HashMap::new();
    let mut syncs = Vec::new();
    let mut python_samples = 0;
    for mut p in parts {
        meta.tables.append(&mut p.stats);
        python_samples += p.python_samples;
        for (key, mut ev) in p.lanes {
            names.resolve(&mut ev, key.0, &p.local_names);
            // Move a lane seen once (the common case) instead of copying it into an empty one.
            match lanes_by_key.entry(key) {
                std::collections::hash_map::Entry::Occupied(mut o) => o.get_mut().append_from(ev),
                std::collections::hash_map::Entry::Vacant(v) => {
                    v.insert(ev);
                }
            }
        }
        for mut s in p.syncs {
            names.resolve_plain(&mut s.ev, &p.local_names);
            syncs.push(s);
        }
    }
    let mut lanes: Vec<Lane> = lanes_by_key.into_iter().map(|((kind, pid), ev)| Lane::new(kind, pid, ev)).collect();
    meta.outliers = drop_outliers(&mut lanes);
    let (start, end) = extent(&lanes);
    close_open_ranges(&mut lanes, end);
    let (gpus, processes, threads) =
        tables::read_who(conn, schema, &names, &lanes).context("reading processes, threads and GPUs")?;
    let strings = names.into_strings();
    let mut host = host::host_data(conn, schema, &lanes, &strings, &meta.tables);
    host.python_samples = python_samples;
    let mut trace = Trace { meta, strings, gpus, processes, threads, lanes, syncs, host, ..Trace::default() };
    trace.meta.start_ns = start;
    trace.meta.end_ns = end;
    order_lanes(&mut trace);
    Ok(trace)
}

const OPEN_END: i64 = i64::MAX;

/// How far from the bulk of the events (the median start) an event may lie, and how long
/// it may last, before it counts as a corrupt timestamp: about 11.6 days.
pub(crate) const OUTLIER_NS: i64 = 1_000_000_000_000_000;

// Remove events with corrupt times (far from the median start, or absurdly long; an
// open NVTX end is not one): the time axis and every sum stay within range.
pub(crate) fn drop_outliers(lanes: &mut [Lane]) -> (u64, Option<String>) {
    // The median of up to 64 evenly spaced starts per lane stands for the bulk.
    let mut sample: Vec<i64> = lanes
        .iter()
        .flat_map(|l| {
            let n = l.ev.len();
            let step = (n / 64).max(1);
            (0..n).step_by(step).map(move |i| l.ev.start[i])
        })
        .collect();
    if sample.is_empty() {
        return (0, None);
    }
    let mid = sample.len() / 2;
    let median = *sample.select_nth_unstable(mid).1;
    let (lo, hi) = (median.saturating_sub(OUTLIER_NS), median.saturating_add(OUTLIER_NS));
    let mut dropped = 0u64;
    let mut first = None;
    for l in lanes.iter_mut() {
        // Only an NVTX range may be left open: a kernel or a copy ending at the sentinel
        // is a corrupt row, and would count as 292 years of GPU work.
        let open = may_end_open(l.kind);
        let ok = |s: i64, e: i64| {
            (lo..=hi).contains(&s) && ((open && e == OPEN_END) || ((lo..=hi).contains(&e) && e - s <= OUTLIER_NS))
        };
        // One pass over a lane without outliers (the common case).
        let Some(i) = (0..l.ev.len()).position(|i| !ok(l.ev.start[i], l.ev.end(i))) else { continue };
        if first.is_none() {
            first = Some(format!("{}: {}..{}", l.title(), l.ev.start[i], l.ev.end(i)));
        }
        let n = l.ev.retain_times(ok);
        if n > 0 {
            dropped += n as u64;
            l.disjoint = (1..l.ev.len()).all(|i| l.ev.end(i - 1) <= l.ev.start[i]);
        }
    }
    (dropped, first)
}

// NVTX push/pop and start/end ranges may never have been closed: nsys writes the open end
// as `i64::MAX`, and the reader closes them at the end of the trace.
fn may_end_open(kind: LaneKind) -> bool {
    matches!(kind, LaneKind::Nvtx { .. } | LaneKind::NvtxStartEnd { .. })
}

// Profiler overhead stays out of the extent: nsys initializes before the application
// starts and flushes after it ends. So do context switches and CPU samples: they cover
// the whole capture, nsys's own start-up included, and (system-wide) other processes.
pub(crate) fn extent(lanes: &[Lane]) -> (i64, i64) {
    let lanes: Vec<&Lane> =
        lanes.iter().filter(|l| !matches!(l.kind, LaneKind::Overhead { .. }) && !l.kind.is_host()).collect();
    let start = lanes.iter().filter_map(|l| l.ev.start.first()).min().copied().unwrap_or(0);
    // In a disjoint lane ends are sorted (an open range can only be the last event), so
    // the latest closed end is found from the back; other lanes need a full scan.
    let closed = |e: &i64| *e != OPEN_END;
    let latest = |l: &Lane| {
        let end = if l.disjoint { l.ev.ends().rev().find(closed) } else { l.ev.ends().filter(closed).max() };
        end.max(l.ev.start.last().copied())
    };
    let end = lanes.iter().copied().filter_map(latest).max().unwrap_or(start);
    (start, end.max(start))
}

// NVTX ranges that were never closed run to the end of the trace, as nsys reports do.
fn close_open_ranges(lanes: &mut [Lane], end: i64) {
    for l in lanes.iter_mut().filter(|l| matches!(l.kind, LaneKind::Nvtx { .. } | LaneKind::NvtxStartEnd { .. })) {
        if !l.ev.narrow_ends() {
            l.ev.map_ends(|e| if e == OPEN_END { end } else { e });
        }
    }
}

// Display order: GPUs by device (kernels, graphs, then memory lanes, by stream, then pid),
// then processes by pid with the main thread first (NVTX by depth, API, OS runtime); the
// same on every run over the same file.
pub(crate) fn order_lanes(trace: &mut Trace) {
    fn rank(kind: LaneKind, pid: u32) -> (u8, u32, u32, u8, u32, u32) {
        match kind {
            LaneKind::Kernels { device, stream } => (0, device, 0, 0, stream, 0),
            LaneKind::Graphs { device, stream } => (0, device, 0, 1, stream, 0),
            LaneKind::Memory { device, stream, class } => (0, device, 0, 2, class as u32, stream),
            LaneKind::GpuRanges { device } => (0, device, 0, 3, 0, 0),
            LaneKind::Nvtx { tid, depth } => (1, pid, u32::from(tid != pid), 0, tid, u32::from(depth)),
            LaneKind::NvtxStartEnd { tid, row } => (1, pid, u32::from(tid != pid), 1, tid, u32::from(row)),
            LaneKind::NvtxMarks { tid } => (1, pid, u32::from(tid != pid), 2, tid, 0),
            LaneKind::CudaApi { tid } => (1, pid, u32::from(tid != pid), 3, tid, 0),
            LaneKind::Osrt { tid } => (1, pid, u32::from(tid != pid), 4, tid, 0),
            LaneKind::Overhead { tid } => (1, pid, u32::from(tid != pid), 5, tid, 0),
            LaneKind::OnCpu { tid } => (1, pid, u32::from(tid != pid), 6, tid, 0),
            LaneKind::Samples { tid } => (1, pid, u32::from(tid != pid), 7, tid, 0),
        }
    }
    // Keep a thread's lanes together: sort by (pid, main-first, tid) before the kind. The
    // pid last: two processes' lanes of one GPU stream (each has a stream 7) are told
    // apart by it, not by the hash order they were gathered in.
    trace.lanes.sort_by_key(|l| {
        let (g, a, b, k, c, d) = rank(l.kind, l.pid);
        if g == 0 { (g, a, b, u32::from(k), c, d, l.pid) } else { (g, a, b, c, u32::from(k), d, l.pid) }
    });
    // Everything else gathered by hash (syncs by process) gets one order too.
    trace.syncs.sort_by_key(|s| s.pid);
    trace.processes.sort_by_key(|p| p.pid);
    trace.threads.sort_by_key(|t| (t.pid, t.tid));
    trace.host.sampled_threads.sort_by_key(|t| (t.pid, t.tid));
}
