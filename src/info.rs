//! `lanescope info`: what an export holds, without analysis.

use std::io::{self, Write};

use serde::Serialize;

use crate::analysis::{StepSource, StepsInfo};
use crate::model::{HostData, HostTables, Lane, SampleRate, Trace};
use crate::text::sanitize;

/// Facts about one lane, for `info`.
#[derive(Debug, Serialize)]
struct LaneInfo {
    group: String,
    lane: String,
    pid: u32,
    events: usize,
}

#[derive(Debug, Serialize)]
struct Info<'a> {
    path: &'a str,
    nsys_version: &'a str,
    schema_version: &'a str,
    start_ns: i64,
    end_ns: i64,
    duration_ns: i64,
    events: usize,
    outlier_events: u64,
    unreadable_events: u64,
    gpus: &'a [crate::model::Gpu],
    processes: &'a [crate::model::Process],
    threads: &'a [crate::model::Thread],
    lanes: Vec<LaneInfo>,
    tables: &'a [crate::model::TableStat],
    host: HostInfo<'a>,
    /// GPU counters per GPU (`GPU_METRICS`); empty when not captured.
    gpu_metrics: Vec<MetricsInfo<'a>>,
    /// The capture flag that adds them, when an nsys trace has none.
    #[serde(skip_serializing_if = "Option::is_none")]
    gpu_metrics_missing: Option<&'static str>,
    /// One entry per input of a merged trace (several exports only).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    traces: &'a [crate::model::Rank],
    #[serde(skip_serializing_if = "Option::is_none")]
    align_note: Option<&'a str>,
    /// The steps, as the report's `steps`: from NVTX, the profiler, or the kernels.
    steps: &'a StepsInfo,
}

/// The host data section of `info`.
#[derive(Debug, Serialize)]
struct HostInfo<'a> {
    tables: HostTables,
    samples: usize,
    sample_rate_hz: f64,
    switches: usize,
    osrt_calls: usize,
    python_backtraces: bool,
    python_samples: usize,
    profiler_cpu_ns: i64,
    cpus: &'a [u32],
    cpu_cores: Option<u32>,
    sampled_threads: &'a [SampleRate],
    missing: Vec<&'static str>,
}

fn host_info(t: &Trace) -> HostInfo<'_> {
    let h: &HostData = &t.host;
    HostInfo {
        tables: h.tables,
        samples: h.samples,
        sample_rate_hz: (h.sample_rate_hz() * 10.0).round() / 10.0,
        switches: h.switches,
        osrt_calls: h.osrt_calls,
        python_backtraces: h.has_python,
        python_samples: h.python_samples,
        profiler_cpu_ns: profiler_cpu_ns(t),
        cpus: &h.cpus,
        cpu_cores: h.cpu_cores,
        sampled_threads: &h.sampled_threads,
        missing: missing(t),
    }
}

// On-CPU time of nsys's own threads in the profiled processes: profiler overhead on the
// host, which no CPU load of the causes counts.
fn profiler_cpu_ns(t: &Trace) -> i64 {
    t.lanes
        .iter()
        .filter(|l| matches!(l.kind, crate::model::LaneKind::OnCpu { .. }))
        .filter(|l| {
            l.kind.tid().is_some_and(|tid| crate::analysis::host::is_profiler_thread(t.thread_name(l.pid, tid)))
        })
        .map(|l| (0..l.ev.len()).map(|i| l.ev.dur(i)).sum::<i64>())
        .sum()
}

/// What the export lacks for the host side of gap causes, with the nsys flag that adds it.
fn missing(t: &Trace) -> Vec<&'static str> {
    let h = &t.host;
    if t.meta.nsys_version == crate::reader::kineto::PRODUCT {
        return vec![
            "PyTorch profiler traces hold no CPU samples, context switches or OS runtime calls: \
             time outside CUDA calls is `unknown`; profile with nsys (-t cuda,nvtx,osrt -s process-tree) for them",
        ];
    }
    let python = t.processes.iter().any(|p| p.name.contains("python"));
    [
        (!h.tables.samples, "no CPU samples: capture with --sample=process-tree"),
        (!h.tables.sched, "no context switches: capture with --cpuctxsw=process-tree"),
        (!h.tables.osrt, "no OS runtime calls: capture with --trace=osrt (added to -t)"),
        (python && !h.has_python && h.python_samples == 0, "no Python backtraces: capture with --python-sampling=true"),
    ]
    .into_iter()
    .filter_map(|(m, s)| m.then_some(s))
    .collect()
}

/// The GPU counters of one GPU, for `info`.
#[derive(Debug, Serialize)]
struct MetricsInfo<'a> {
    device: u32,
    samples: usize,
    period_ns: i64,
    rate_hz: f64,
    metrics: Vec<&'a str>,
}

/// What `info` says when a trace has no GPU counters.
pub(crate) const NO_GPU_METRICS: &str = "no GPU metrics: capture with --gpu-metrics-devices=all";

fn metrics_info(t: &Trace) -> Vec<MetricsInfo<'_>> {
    t.counters
        .devices()
        .into_iter()
        .filter_map(|d| {
            let first = t.counters.of(d).next()?;
            let period_ns = first.period_ns();
            Some(MetricsInfo {
                device: d,
                samples: first.len(),
                period_ns,
                rate_hz: if period_ns > 0 { (1e10 / period_ns as f64).round() / 10.0 } else { 0.0 },
                metrics: t.counters.of(d).map(|s| s.name.as_str()).collect(),
            })
        })
        .collect()
}

fn write_metrics_text(w: &mut dyn Write, t: &Trace) -> io::Result<()> {
    if t.meta.nsys_version == crate::reader::kineto::PRODUCT {
        return Ok(());
    }
    writeln!(w, "GPU metrics")?;
    let all = metrics_info(t);
    if all.is_empty() {
        return writeln!(w, "  {NO_GPU_METRICS}");
    }
    for m in &all {
        writeln!(
            w,
            "  GPU {}: {} metrics, {} samples each, every {} ({:.0} Hz)",
            m.device,
            m.metrics.len(),
            m.samples,
            crate::text::fmt_ns(m.period_ns),
            m.rate_hz
        )?;
        for name in &m.metrics {
            writeln!(w, "    {}", sanitize(name))?;
        }
    }
    Ok(())
}

fn write_host_text(w: &mut dyn Write, t: &Trace) -> io::Result<()> {
    let h = host_info(t);
    let yes_no = |b: bool| if b { "yes" } else { "no" };
    writeln!(w, "host data")?;
    let rate = if h.samples > 0 { format!(" ({:.0} Hz per thread on CPU)", h.sample_rate_hz) } else { String::new() };
    writeln!(w, "  CPU samples        {}{rate}", h.samples)?;
    writeln!(w, "  context switches   {}", h.switches)?;
    writeln!(w, "  OS runtime calls   {}", h.osrt_calls)?;
    writeln!(w, "  Python backtraces  {}", yes_no(h.python_backtraces))?;
    if h.profiler_cpu_ns > 0 {
        writeln!(
            w,
            "  nsys threads       {} on CPU (profiler overhead; no CPU load counts it)",
            crate::text::fmt_ns(h.profiler_cpu_ns)
        )?;
    }
    if h.python_samples > 0 {
        writeln!(
            w,
            "  Python sampling    on: {} samples (their frames are not in the SQLite export)",
            h.python_samples
        )?;
    }
    let cores = h.cpu_cores.map(|n| format!(" of {n} on the machine")).unwrap_or_default();
    writeln!(w, "  CPUs seen          {}{cores}", h.cpus.len())?;
    for m in &h.missing {
        writeln!(w, "  missing: {m}")?;
    }
    Ok(())
}

/// The group a lane is shown under: `GPU 0 NVIDIA H200` or `python3 (814) / pt_main (tid 815)`.
pub(crate) fn lane_group(trace: &Trace, lane: &Lane) -> String {
    if let Some(d) = lane.kind.shown_with_gpu() {
        return trace.gpu_label(d);
    }
    let tid = lane.kind.tid().unwrap_or(0);
    format!("{} ({}) / {}", trace.process_name(lane.pid), lane.pid, trace.thread_label(lane.pid, tid))
}

fn lanes(trace: &Trace) -> Vec<LaneInfo> {
    trace
        .lanes
        .iter()
        .map(|l| LaneInfo { group: lane_group(trace, l), lane: l.title(), pid: l.pid, events: l.ev.len() })
        .collect()
}

/// Write `info` as text.
/// The steps in one line: how many, what marked them, their median and p95 period.
fn steps_line(s: &StepsInfo) -> String {
    let by = match s.source {
        StepSource::Nvtx => format!("NVTX `{}`", sanitize(s.phase.as_deref().unwrap_or(""))),
        StepSource::Profiler => format!("profiler `{}`", sanitize(s.phase.as_deref().unwrap_or(""))),
        StepSource::Inferred => {
            format!(
                "inferred from the kernels (anchor `{}`)",
                crate::text::ellipsize(&sanitize(&crate::text::short_kernel(s.anchor.as_deref().unwrap_or(""))), 100)
            )
        }
        StepSource::None => return "none: no step phase, and no kernel sequence repeats once a step".to_string(),
    };
    let ns = |v: Option<i64>| v.map_or_else(|| "-".to_string(), crate::text::fmt_ns);
    format!("{} {by}, median {}, p95 {}", s.count, ns(s.median_ns), ns(s.p95_ns))
}

pub(crate) fn write_text(w: &mut dyn Write, t: &Trace, steps: &StepsInfo) -> io::Result<()> {
    let m = &t.meta;
    writeln!(w, "trace     {}", sanitize(&m.path))?;
    if m.nsys_version == crate::reader::kineto::PRODUCT {
        writeln!(w, "format    {}  (schemaVersion {})", m.nsys_version, or_unknown(&m.schema_version))?;
    } else {
        writeln!(w, "nsys      {}  (export schema {})", or_unknown(&m.nsys_version), or_unknown(&m.schema_version))?;
    }
    writeln!(w, "duration  {}  ({} .. {} ns)", crate::text::fmt_ns(t.duration()), m.start_ns, m.end_ns)?;
    writeln!(w, "events    {}", t.event_count())?;
    writeln!(w, "steps     {}", steps_line(steps))?;
    for r in &t.ranks {
        let host = if r.host.is_empty() { String::new() } else { format!(" on {}", sanitize(&r.host)) };
        writeln!(
            w,
            "rank {:<4} {}{host}, {}, {}, rank from {}, aligned on {} ({:+} ns)",
            r.rank,
            sanitize(&r.path),
            sanitize(&crate::model::producer(&r.nsys_version)),
            crate::text::fmt_ns(r.duration()),
            r.rank_source,
            r.aligned_on.map_or("-", |a| a.label()),
            r.offset_ns
        )?;
    }
    if let Some(n) = &m.align_note {
        writeln!(w, "note      {}", sanitize(n))?;
    }
    if let (n @ 1.., first) = &m.outliers {
        let first = first.as_deref().map_or(String::new(), |f| format!(", e.g. {}", sanitize(f)));
        writeln!(w, "outliers  {n} events left out: their times lie far outside the rest (corrupt timestamps{first})")?;
    }
    if m.unreadable_events > 0 {
        let n = m.unreadable_events;
        writeln!(w, "unreadable {n} events skipped: no readable time (ts a string, NaN, out of range) or too large")?;
    }
    if t.gpus.is_empty() {
        writeln!(w, "GPUs      none: this trace has no GPU activity")?;
    }
    for g in &t.gpus {
        let mem = if g.memory_bytes > 0 { format!(", {:.0} GB", g.memory_bytes as f64 / 1e9) } else { String::new() };
        if t.ranks.is_empty() {
            writeln!(w, "GPU {}     {} ({} SMs{mem})", g.device, sanitize(&g.name), g.sm_count)?;
        } else {
            writeln!(w, "{} ({} SMs{mem}, device {} here)", sanitize(&t.gpu_label(g.device)), g.sm_count, g.device)?;
        }
    }
    for p in &t.processes {
        let n = t.threads.iter().filter(|th| th.pid == p.pid).count();
        writeln!(w, "process   {} ({}), {n} threads with events", sanitize(&p.name), p.pid)?;
    }
    writeln!(w)?;
    write_host_text(w, t)?;
    writeln!(w)?;
    write_metrics_text(w, t)?;
    writeln!(w)?;
    let rows = lanes(t);
    let gw = rows.iter().map(|r| r.group.chars().count()).max().unwrap_or(5).max(5);
    let lw = rows.iter().map(|r| r.lane.len()).max().unwrap_or(4).max(4);
    writeln!(w, "{:<gw$}  {:<lw$}  {:>9}", "group", "lane", "events")?;
    for r in &rows {
        writeln!(w, "{:<gw$}  {:<lw$}  {:>9}", sanitize(&r.group), r.lane, r.events)?;
    }
    writeln!(w)?;
    writeln!(w, "{:<40} {:>9} {:>9}", "table", "rows", "ms")?;
    for s in &m.tables {
        writeln!(w, "{:<40} {:>9} {:>9.1}", s.name, s.rows, s.ms)?;
    }
    Ok(())
}

/// Write `info` as JSON.
pub(crate) fn write_json(w: &mut dyn Write, t: &Trace, steps: &StepsInfo) -> io::Result<()> {
    let m = &t.meta;
    let info = Info {
        path: &m.path,
        nsys_version: &m.nsys_version,
        schema_version: &m.schema_version,
        start_ns: m.start_ns,
        end_ns: m.end_ns,
        duration_ns: t.duration(),
        events: t.event_count(),
        outlier_events: m.outliers.0,
        unreadable_events: m.unreadable_events,
        gpus: &t.gpus,
        processes: &t.processes,
        threads: &t.threads,
        lanes: lanes(t),
        tables: &m.tables,
        host: host_info(t),
        gpu_metrics: metrics_info(t),
        gpu_metrics_missing: (t.counters.is_empty() && t.meta.nsys_version != crate::reader::kineto::PRODUCT)
            .then_some(NO_GPU_METRICS),
        traces: &t.ranks,
        align_note: m.align_note.as_deref(),
        steps,
    };
    crate::text::write_json(w, &info)
}

fn or_unknown(s: &str) -> &str {
    if s.is_empty() { "unknown" } else { s }
}
