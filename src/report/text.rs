//! Text and Markdown reports: the same sections, as aligned tables for a terminal or as
//! GitHub tables. Every string from the trace goes through [`sanitize`] (and Markdown
//! escaping) before it is written.

use std::io::{self, Write};

use super::fields::{self, Field, Num, Unit};
use super::fixes::{FixLine, fix_lines};
use super::json::by_cause;
use super::sanitize;
use super::table::{Align, Table, md_escape};
use crate::analysis::top::top_gaps;
use crate::analysis::{Analysis, Cause, Finding, Gap, Phase, Rule, StepSource};
use crate::model::{Ns, Trace};
use crate::text::{escape_xml, fmt_bytes, fmt_ns};

/// Gaps listed in the text and Markdown reports.
pub(crate) const TOP_GAPS_TEXT: usize = 10;

/// Plain text or Markdown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    /// Aligned tables for a terminal.
    Text,
    /// GitHub-flavoured Markdown.
    Md,
    /// HTML elements for the body of `report --format html` (see [`super::html`]).
    Html,
}

struct Out<'w> {
    w: &'w mut dyn Write,
    style: Style,
}

impl Out<'_> {
    fn title(&mut self, s: &str) -> io::Result<()> {
        match self.style {
            Style::Text => writeln!(self.w, "{s}"),
            Style::Md => writeln!(self.w, "# {}\n", md_escape(s)),
            // The page writes its title above the headline (`html::write`).
            Style::Html => Ok(()),
        }
    }

    fn heading(&mut self, s: &str) -> io::Result<()> {
        match self.style {
            Style::Text => writeln!(self.w, "\n{s}"),
            Style::Md => writeln!(self.w, "\n## {s}\n"),
            Style::Html => writeln!(self.w, "<h2>{}</h2>", escape_xml(s)),
        }
    }

    // A line of prose; `s` is sanitized (and escaped for Markdown).
    fn line(&mut self, s: &str) -> io::Result<()> {
        match self.style {
            Style::Text => writeln!(self.w, "{}", sanitize(s)),
            Style::Md => writeln!(self.w, "{}  ", md_escape(&sanitize(s))),
            Style::Html if s.is_empty() => Ok(()),
            Style::Html => writeln!(self.w, "<p>{}</p>", escape_xml(s)),
        }
    }

    fn table(&mut self, t: &Table) -> io::Result<()> {
        match self.style {
            Style::Text => t.write_text(self.w),
            Style::Md => t.write_md(self.w),
            Style::Html => t.write_html(self.w),
        }
    }
}

fn pct(part: Ns, whole: Ns) -> String {
    crate::text::percent(part, whole).map_or("-".to_string(), |v| format!("{v:.1}%"))
}

/// Write the report in `style`.
pub(crate) fn write(w: &mut dyn Write, trace: &Trace, a: &Analysis, style: Style, all_gaps: bool) -> io::Result<()> {
    let mut o = Out { w, style };
    summary(&mut o, trace, a)?;
    phases(&mut o, a)?;
    rank_phases(&mut o, a)?;
    transfers(&mut o, a)?;
    gaps(&mut o, trace, a, all_gaps)?;
    findings(&mut o, &a.findings)
}

fn summary(o: &mut Out<'_>, trace: &Trace, a: &Analysis) -> io::Result<()> {
    let m = &trace.meta;
    o.title(&format!("lanescope report: {}", sanitize(&m.path)))?;
    o.line(&format!(
        "{}, schema {}; {} traced",
        sanitize(&m.producer()),
        or_dash(&m.schema_version),
        fmt_ns(trace.duration())
    ))?;
    for r in &trace.ranks {
        let host = if r.host.is_empty() { String::new() } else { format!(" on {}", r.host) };
        o.line(&format!(
            "rank {} ({}): {}{host}, {}, {} traced, aligned on {} ({:+} ns)",
            r.rank,
            r.rank_source,
            sanitize(&r.path),
            sanitize(&crate::model::producer(&r.nsys_version)),
            fmt_ns(r.duration()),
            r.aligned_on.map_or("-", |x| x.label()),
            r.offset_ns
        ))?;
    }
    if let Some(note) = &m.align_note {
        o.line(note)?;
    }
    if a.devices.is_empty() {
        if let Some(f) = a.findings.iter().find(|f| f.rule == Rule::GpuRecordsMissing) {
            let n = f.evidence.iter().find(|(k, _)| k == "launch_calls").map_or("", |(_, v)| v.as_str());
            o.line(&format!(
                "The GPU side was not recorded: {n} kernel launches were traced but the export holds no GPU \
                 records, so GPU busy and idle time cannot be measured."
            ))?;
        } else {
            o.line("No GPU activity in this trace: nothing ran on a GPU, so there is nothing to explain.")?;
        }
    }
    if m.outliers.0 > 0 {
        o.line(&format!(
            "{} events left out: their times lie far outside the rest (corrupt timestamps, e.g. {})",
            m.outliers.0,
            m.outliers.1.as_deref().unwrap_or("-")
        ))?;
    }
    if m.unreadable_events > 0 {
        o.line(&format!(
            "{} events skipped as unreadable: no readable time (ts a string, NaN, out of range) or too large",
            m.unreadable_events
        ))?;
    }
    for d in &a.devices {
        let (lo, hi) = d.extent().unwrap_or((0, 0));
        o.line(&format!(
            "{}: busy {} of {} ({}): kernels {}, copy-only {}, idle {}",
            trace.gpu_label(d.device),
            fmt_ns(d.busy.total()),
            fmt_ns(hi - lo),
            pct(d.busy.total(), hi - lo),
            fmt_ns(d.kernels.total()),
            fmt_ns(d.copy_only_ns()),
            fmt_ns(d.idle_ns())
        ))?;
        let wait = a.collectives.wait_ns(d.device);
        if wait > 0 {
            o.line(&format!(
                "  of its busy time, {} ({}) was waiting in collectives for another rank: idle in truth",
                fmt_ns(wait),
                pct(wait, d.busy.total())
            ))?;
        }
    }
    let t = a.totals;
    let graphs = if t.graphs > 0 { format!(", {} CUDA graph executions", t.graphs) } else { String::new() };
    o.line(&format!(
        "Events: {} kernels{graphs}, {} memcpy, {} memset, {} CUDA API calls, {} NVTX ranges, {} OS runtime calls",
        t.kernels, t.memcpy, t.memset, t.api_calls, t.nvtx_ranges, t.osrt_calls
    ))
}

fn or_dash(s: &str) -> &str {
    if s.is_empty() { "-" } else { s }
}

/// The phase tables' columns after the name: the CPU side, then the GPU during the ranges.
const WALL_COLUMNS: [Field; 10] = [
    fields::COUNT,
    fields::WALL,
    fields::WALL_MEAN,
    fields::WALL_P50,
    fields::WALL_P95,
    fields::WALL_MAX,
    fields::STARVED,
    fields::LAUNCHED,
    fields::LAUNCHED_GPU,
    fields::LAUNCHED_SPAN,
];
const GPU_COLUMNS: [Field; 11] = [
    fields::GPU_BUSY,
    fields::BUSY_PCT,
    fields::KERNEL_BUSY,
    fields::COPY_BUSY,
    fields::IDLE,
    fields::EXPOSED_COPY,
    fields::COPY_OVERLAP,
    fields::H2D_BYTES,
    fields::H2D_GBPS,
    fields::D2H_BYTES,
    fields::D2H_GBPS,
];
/// Each rank's phases, in short.
const RANK_COLUMNS: [Field; 6] = [
    fields::COUNT,
    fields::WALL,
    fields::WALL_MEAN,
    fields::WALL_P95,
    fields::GPU_BUSY.headed("GPU busy"),
    fields::IDLE.headed("GPU idle"),
];

// A field's value as the report prints it.
fn cell(f: &Field, p: &Phase) -> String {
    match (f.unit, f.of(p)) {
        (Unit::Ns, Num::Int(n)) => fmt_ns(n),
        (Unit::Bytes, Num::Int(n)) => fmt_bytes(n.max(0) as u64),
        (Unit::Share, Num::Real(v)) => v.map_or("-".to_string(), |v| format!("{:.0}%", 100.0 * v)),
        (Unit::Pct, Num::Real(v)) => v.map_or("-".to_string(), |v| format!("{v:.1}%")),
        (Unit::Gbps, Num::Real(v)) => v.map_or("-".to_string(), |v| format!("{v:.2}")),
        // Counts (and nothing else: a unit test holds every field to its unit's kind).
        (_, n) => n.to_string(),
    }
}

// One table of `phases` under `heading`: the name, then `columns`.
fn phase_table(o: &mut Out<'_>, heading: &str, phases: &[Phase], columns: &[Field]) -> io::Result<()> {
    o.heading(heading)?;
    let header: Vec<&'static str> = std::iter::once("phase").chain(columns.iter().map(|f| f.label)).collect();
    let mut t = Table::new(&header);
    for p in phases {
        t.row(std::iter::once(p.name.clone()).chain(columns.iter().map(|f| cell(f, p))).collect());
    }
    o.table(&t)
}

// Per rank of a trace of several: its phases, in short.
fn rank_phases(o: &mut Out<'_>, a: &Analysis) -> io::Result<()> {
    for (rank, phases) in a.rank_phases.iter().filter(|(_, p)| !p.is_empty()) {
        phase_table(o, &format!("Phases of rank {rank}"), phases, &RANK_COLUMNS)?;
    }
    Ok(())
}

fn phases(o: &mut Out<'_>, a: &Analysis) -> io::Result<()> {
    if a.phases.is_empty() {
        return Ok(());
    }
    let cpu = "Phases: CPU wall time of the NVTX ranges, and the GPU work launched from them";
    phase_table(o, cpu, &a.phases, &WALL_COLUMNS)?;
    phase_table(o, "Phases: the GPU during the ranges", &a.phases, &GPU_COLUMNS)?;
    copies_table(o, a)
}

/// The copy columns: the H2D copies each phase launched, and the link under them.
const COPY_COLUMNS: [Field; 5] =
    [fields::H2D_EXPOSED, fields::PCIE_RX, fields::PCIE_TX, fields::PCIE_RX_H2D, fields::PCIE_TX_D2H];

// How each phase's launched copies ran (phases that launched H2D copies only).
fn copies_table(o: &mut Out<'_>, a: &Analysis) -> io::Result<()> {
    let with: Vec<&Phase> =
        a.phases.iter().filter(|p| p.copy_verdict != crate::analysis::pcie::CopyVerdict::None).collect();
    if with.is_empty() {
        return Ok(());
    }
    o.heading("Phases: the host-device copies they launched (PCIe % of the link, GPU metrics)")?;
    let header: Vec<&'static str> =
        std::iter::once("phase").chain(COPY_COLUMNS.iter().map(|f| f.label)).chain(["copies"]).collect();
    let mut t = Table::new(&header);
    for p in with {
        t.row(
            std::iter::once(p.name.clone())
                .chain(COPY_COLUMNS.iter().map(|f| cell(f, p)))
                .chain([p.copy_verdict.label().to_string()])
                .collect(),
        );
    }
    o.table(&t)
}

fn transfers(o: &mut Out<'_>, a: &Analysis) -> io::Result<()> {
    if a.transfers.is_empty() {
        return Ok(());
    }
    o.heading("Transfers by direction and host memory")?;
    let mut t = Table::new(&[
        "direction",
        "memory",
        "count",
        "bytes",
        "time",
        "GB/s",
        "fastest GB/s",
        "async pageable",
        "sync API",
    ])
    .align(1, Align::Left);
    for x in &a.transfers {
        t.row(vec![
            x.direction.label().to_string(),
            x.memory.label().to_string(),
            x.count.to_string(),
            fmt_bytes(x.bytes),
            fmt_ns(x.busy_ns),
            format!("{:.2}", x.gbps),
            format!("{:.2}", x.max_gbps),
            x.async_pageable.to_string(),
            x.sync_api.to_string(),
        ]);
    }
    o.table(&t)?;
    let ov = a.overlap;
    o.line("")?;
    o.line(&format!(
        "Copy/compute overlap: {} of {} copy time ran beside a kernel ({})",
        fmt_ns(ov.overlapped_ns),
        fmt_ns(ov.copy_ns),
        pct(ov.overlapped_ns, ov.copy_ns)
    ))
}

// The mean steady step in one line: its parts add up to its wall (`budget`).
fn budget_line(b: &crate::analysis::Budget) -> String {
    let idle: Vec<String> = b.idle_by_cause.iter().map(|&(c, v)| format!("{} {}", c.label(), fmt_ns(v))).collect();
    let collective = if b.collective_wait_ns > 0 {
        format!(", collective wait {}", fmt_ns(b.collective_wait_ns))
    } else {
        String::new()
    };
    format!(
        "Mean steady step on GPU {} ({} steps): {} = busy {} (exposed copy {}{collective}) + idle {}{}short holes {}",
        b.device,
        b.steps,
        fmt_ns(b.step_ns),
        fmt_ns(b.gpu_busy_ns),
        fmt_ns(b.exposed_copy_ns),
        idle.join(" + "),
        if idle.is_empty() { "" } else { " + " },
        fmt_ns(b.short_idle_ns)
    )
}

fn gaps(o: &mut Out<'_>, trace: &Trace, a: &Analysis, all: bool) -> io::Result<()> {
    if a.devices.is_empty() {
        return Ok(());
    }
    let total: Ns = a.gaps.iter().map(Gap::dur).sum();
    let w = a.windows;
    let steady = a.steady.idle_ns();
    o.heading(&format!("GPU idle gaps >= {} by cause", fmt_ns(a.options.min_gap_ns)))?;
    o.line(&match &a.step_phase {
        Some(p) => format!(
            "Step phase `{}`: steady state from the second step (+{}) to the end of the last (+{})",
            sanitize(p),
            fmt_ns(w.steady_start - trace.meta.start_ns),
            fmt_ns(w.steady_end - trace.meta.start_ns)
        ),
        None => match &a.steps.anchor {
            Some(k) if a.steps.source == StepSource::Inferred => format!(
                "No NVTX range marks a step: {} steps inferred from the kernels (boundaries at `{}`, median {}); \
                 steady state from the second (+{}) to the end of the last (+{})",
                a.steps.count,
                crate::text::ellipsize(&sanitize(&crate::text::short_kernel(k)), 100),
                a.steps.median_ns.map_or_else(|| "-".to_string(), fmt_ns),
                fmt_ns(w.steady_start - trace.meta.start_ns),
                fmt_ns(w.steady_end - trace.meta.start_ns)
            ),
            _ => "No step phase (no NVTX range marks a step, and no kernel sequence repeats once per step): \
                  the steady state is the whole GPU span"
                .to_string(),
        },
    })?;
    let mut t = Table::new(&["cause", "gaps", "idle", "share", "steady idle", "steady share"]);
    let sums = by_cause(&a.gaps);
    for c in Cause::ALL {
        let s = &sums[c.label()];
        let st = a.steady.by_cause[c as usize].1;
        t.row(vec![
            c.label().to_string(),
            s.count.to_string(),
            fmt_ns(s.total_ns),
            pct(s.total_ns, total),
            fmt_ns(st),
            pct(st, steady),
        ]);
    }
    t.row(vec![
        "total".to_string(),
        a.gaps.len().to_string(),
        fmt_ns(total),
        pct(total, total),
        fmt_ns(steady),
        pct(steady, steady),
    ]);
    o.table(&t)?;
    if let Some(b) = &a.budget {
        o.line(&budget_line(b))?;
    }
    if a.gaps.is_empty() {
        return Ok(());
    }
    o.heading(if all {
        "Every gap (start relative to the trace start)"
    } else {
        "Longest gaps (start relative to the trace start)"
    })?;
    let mut t = Table::new(&["GPU", "start", "length", "window", "cause", "phase", "evidence"])
        .align(3, Align::Left)
        .align(4, Align::Left)
        .align(5, Align::Left)
        .align(6, Align::Left);
    let rows = if all { a.gaps.iter().collect() } else { top_gaps(&a.gaps, TOP_GAPS_TEXT) };
    for g in rows {
        t.row(vec![
            g.device.to_string(),
            fmt_ns(g.start - trace.meta.start_ns),
            fmt_ns(g.dur()),
            g.window.label().to_string(),
            g.cause.label().to_string(),
            g.phase.clone().unwrap_or_else(|| "-".to_string()),
            g.evidence.clone(),
        ]);
    }
    o.table(&t)
}

// Evidence values: nanoseconds and bytes made readable, the rest as they are.
fn evidence_value(k: &str, v: &str) -> String {
    match v.parse::<i64>() {
        Ok(n) if k.ends_with("_ns") => fmt_ns(n),
        Ok(n) if k == "bytes" || k.ends_with("_bytes") => fmt_bytes(n.max(0) as u64),
        _ => v.to_string(),
    }
}

fn findings(o: &mut Out<'_>, fs: &[Finding]) -> io::Result<()> {
    o.heading("Findings")?;
    if fs.is_empty() {
        return o.line("No findings.");
    }
    // Each distinct fix once, its what-if under it.
    for (i, (f, fix)) in fs.iter().zip(fix_lines(fs)).enumerate() {
        let ev: Vec<String> = f.evidence.iter().map(|(k, v)| format!("{k}={}", evidence_value(k, v))).collect();
        let head = format!("{}. [{}] {}: {}", i + 1, f.severity.label(), f.rule, f.message);
        let indent = match o.style {
            Style::Text => "   ",
            Style::Md => "",
            Style::Html => {
                html_finding(o.w, i + 1, f, &ev.join(", "), &fix)?;
                continue;
            }
        };
        o.line(&head)?;
        o.line(&format!("{indent}evidence: {}", ev.join(", ")))?;
        match fix {
            FixLine::None { whatif } => {
                if let Some(w) = whatif {
                    o.line(&format!("{indent}{w}"))?;
                }
            }
            FixLine::Full { fix, whatif } => {
                o.line(&format!("{indent}fix: {fix}"))?;
                if let Some(w) = whatif {
                    o.line(&format!("{indent}{w}"))?;
                }
            }
            FixLine::As { n, note } => o.line(&format!("{indent}fix: {}", FixLine::as_in(n, &note)))?,
        }
        if o.style == Style::Md {
            o.line("")?;
        }
    }
    Ok(())
}

// One finding of the HTML findings section (`evidence` already formatted).
fn html_finding(w: &mut dyn Write, n: usize, f: &Finding, evidence: &str, fix: &FixLine) -> io::Result<()> {
    let sev = f.severity.label();
    let fix = match fix {
        FixLine::None { whatif } => {
            whatif.as_ref().map(|w| format!("<div class=\"whatif\">{}</div>", escape_xml(w))).unwrap_or_default()
        }
        FixLine::Full { fix, whatif } => {
            let w =
                whatif.as_ref().map(|w| format!("<div class=\"whatif\">{}</div>", escape_xml(w))).unwrap_or_default();
            format!("<div class=\"fix\">fix: {}</div>{w}", escape_xml(fix))
        }
        FixLine::As { n, note } => format!("<div class=\"fix\">fix: {}</div>", escape_xml(&FixLine::as_in(*n, note))),
    };
    writeln!(
        w,
        "<div class=\"finding {sev}\"><b>{n}. [{sev}] {}</b>: {}<div class=\"ev\">evidence: {}</div>{fix}</div>",
        f.rule,
        escape_xml(&f.message),
        escape_xml(evidence),
    )
}
