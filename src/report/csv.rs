//! The CSV report: one long table, `section,item,metric,value`, one value per row, so
//! any tool can filter or pivot it without knowing each section's columns.
//!
//! | section | item | metrics |
//! |---|---|---|
//! | `trace` | (empty) | `path`, `nsys_version`, `schema_version`, `duration_ns`, `start_ns` |
//! | `gpu` | device id | `name` |
//! | `totals` | (empty) | `kernels`, `graphs`, `memcpy`, `memset`, `api_calls`, `nvtx_ranges`, `osrt_calls` |
//! | `device` | device id | `busy_ns`, `kernel_ns`, `copy_only_ns`, `idle_ns` |
//! | `transfer` | `H2D/pageable`, ... | `count`, `bytes`, `busy_ns`, `gbps`, `max_gbps`, `async_pageable`, `sync_api` |
//! | `overlap` | (empty) | `copy_ns`, `overlapped_ns` |
//! | `phase` | phase name | the JSON phase fields (`fields::PHASE`); `launched_count`, `launched_gpu_ns`, `launched_span_ns` |
//! | `gaps` | (empty) | `min_gap_ns`, `count`, `total_ns` |
//! | `gap_cause` | cause label | `count`, `total_ns` |
//! | `gap` | rank 1..20 | `device`, `start_ns`, `end_ns`, `dur_ns`, `cause`, `evidence`, `phase` |
//! | `finding` | rule | `severity`, `message`, `fix`, `evidence.<key>` |
//!
//! Values follow the JSON report (integer nanoseconds, bytes, GB/s); empty for null.
//! Fields are quoted when they hold a comma, a quote or a line break; control
//! characters are replaced as in [`super::sanitize`].

use std::io::{self, Write};

use super::fields::{Field, PHASE};
use super::json::{self, Report};
use super::sanitize;
use crate::analysis::Analysis;
use crate::model::Trace;

struct Csv<'w> {
    w: &'w mut dyn Write,
}

impl Csv<'_> {
    fn row(&mut self, section: &str, item: &str, metric: &str, value: &dyn ToString) -> io::Result<()> {
        writeln!(self.w, "{},{},{},{}", field(section), field(item), field(metric), field(&value.to_string()))
    }
}

/// Quote a CSV field when needed (RFC 4180), after replacing control characters.
pub(crate) fn field(s: &str) -> String {
    let s = sanitize(s);
    if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s.into_owned() }
}

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

/// Write the CSV report.
pub(crate) fn write(w: &mut dyn Write, trace: &Trace, a: &Analysis, all_gaps: bool) -> io::Result<()> {
    let r = json::build(trace, a, all_gaps);
    let mut c = Csv { w };
    c.row("section", "item", "metric", &"value")?;
    head(&mut c, &r)?;
    for p in &r.phases {
        phase(&mut c, p)?;
    }
    gaps(&mut c, &r)?;
    for f in &r.findings {
        c.row("finding", f.rule, "severity", &f.severity)?;
        c.row("finding", f.rule, "message", &f.message)?;
        c.row("finding", f.rule, "fix", &f.fix)?;
        for (k, v) in &f.evidence {
            c.row("finding", f.rule, &format!("evidence.{k}"), v)?;
        }
    }
    Ok(())
}

fn head(c: &mut Csv<'_>, r: &Report<'_>) -> io::Result<()> {
    let t = &r.trace;
    c.row("trace", "", "path", &t.path)?;
    c.row("trace", "", "nsys_version", &t.nsys_version)?;
    c.row("trace", "", "schema_version", &t.schema_version)?;
    c.row("trace", "", "duration_ns", &t.duration_ns)?;
    c.row("trace", "", "start_ns", &t.start_ns)?;
    c.row("trace", "", "step_phase", &opt(t.step_phase))?;
    c.row("trace", "", "steady_start_ns", &t.steady_start_ns)?;
    c.row("trace", "", "steady_end_ns", &t.steady_end_ns)?;
    for g in &t.gpus {
        c.row("gpu", &g.device.to_string(), "name", &g.name)?;
    }
    let x = &r.totals;
    for (k, v) in [
        ("kernels", x.kernels),
        ("graphs", x.graphs),
        ("memcpy", x.memcpy),
        ("memset", x.memset),
        ("api_calls", x.api_calls),
        ("nvtx_ranges", x.nvtx_ranges),
        ("osrt_calls", x.osrt_calls),
    ] {
        c.row("totals", "", k, &v)?;
    }
    for d in &r.devices {
        let id = d.device.to_string();
        for (k, v) in [
            ("busy_ns", d.busy_ns),
            ("kernel_ns", d.kernel_ns),
            ("copy_only_ns", d.copy_only_ns),
            ("idle_ns", d.idle_ns),
        ] {
            c.row("device", &id, k, &v)?;
        }
    }
    for t in &r.transfers {
        let id = format!("{}/{}", t.direction, t.memory);
        let x = &t.sums;
        c.row("transfer", &id, "count", &x.count)?;
        c.row("transfer", &id, "bytes", &x.bytes)?;
        c.row("transfer", &id, "busy_ns", &x.busy_ns)?;
        c.row("transfer", &id, "gbps", &x.gbps)?;
        c.row("transfer", &id, "max_gbps", &x.max_gbps)?;
        c.row("transfer", &id, "async_pageable", &t.async_pageable)?;
        c.row("transfer", &id, "sync_api", &t.sync_api)?;
    }
    c.row("overlap", "", "copy_ns", &r.overlap.copy_ns)?;
    c.row("overlap", "", "overlapped_ns", &r.overlap.overlapped_ns)
}

// Every phase field, `launched.count` as `launched_count`: the integers first, then the
// shares and rates (the order the CSV has always had).
fn phase(c: &mut Csv<'_>, p: &json::Phase<'_>) -> io::Result<()> {
    let (ints, reals): (Vec<&Field>, Vec<&Field>) = PHASE.iter().partition(|f| f.unit.is_integer());
    for f in ints.into_iter().chain(reals) {
        c.row("phase", p.name, &f.key.replace('.', "_"), &f.of(p.fields.0))?;
    }
    Ok(())
}

fn gaps(c: &mut Csv<'_>, r: &Report<'_>) -> io::Result<()> {
    let g = &r.gaps;
    c.row("gaps", "", "min_gap_ns", &g.min_gap_ns)?;
    c.row("gaps", "", "count", &g.count)?;
    c.row("gaps", "", "total_ns", &g.total_ns)?;
    for (cause, s) in &g.by_cause {
        c.row("gap_cause", cause, "count", &s.count)?;
        c.row("gap_cause", cause, "total_ns", &s.total_ns)?;
    }
    c.row("gaps", "steady", "count", &g.steady.count)?;
    c.row("gaps", "steady", "total_ns", &g.steady.total_ns)?;
    for (cause, s) in &g.steady.by_cause {
        c.row("gap_cause_steady", cause, "count", &s.count)?;
        c.row("gap_cause_steady", cause, "total_ns", &s.total_ns)?;
    }
    for (i, t) in g.all.as_ref().unwrap_or(&g.top).iter().enumerate() {
        let rank = (i + 1).to_string();
        c.row("gap", &rank, "device", &t.device)?;
        c.row("gap", &rank, "start_ns", &t.start_ns)?;
        c.row("gap", &rank, "end_ns", &t.end_ns)?;
        c.row("gap", &rank, "dur_ns", &t.dur_ns)?;
        c.row("gap", &rank, "cause", &t.cause)?;
        c.row("gap", &rank, "evidence", &t.evidence)?;
        c.row("gap", &rank, "phase", &opt(t.phase))?;
        c.row("gap", &rank, "window", &t.window)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::field;

    #[test]
    fn fields_are_quoted_only_when_needed() {
        assert_eq!(field("forward"), "forward");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(field("x\u{1b}y"), "x\u{fffd}y");
    }
}
