//! Writers of a [`Diff`]: text (fits 100 columns), Markdown, CSV and JSON (HTML in `html.rs`).
//!
//! Text and Markdown show a curated set of rows (those with a value in either run);
//! CSV and JSON hold every metric. CSV is one long table,
//! `section,item,metric,before,after,change,change_pct`, with sections `run`,
//! `overall`, `phase` (item: the phase name), `finding` (item: the rule; metric:
//! `gone`, `stayed` or `new`; before and after: the severities) and `verdict`.
//! Names from the traces go through [`sanitize`] (and Markdown escaping) before they
//! are written; JSON relies on serde's escaping plus `\uXXXX` for DEL and C1.

use std::io::{self, Write};

use serde_json::Value;

use super::{Compared, Diff, FindingDiffs, Status};
use crate::analysis::Cause;
use crate::model::Ns;
use crate::report::csv::field;
use crate::report::fields::{self, Field, Unit};
use crate::report::table::{Table, md_escape};
use crate::text::{ellipsize, escape_xml, sanitize, wrap};
use crate::text::{fmt_bytes, fmt_ns};

/// Width the text output fits in.
pub(crate) const WIDTH: usize = 100;

/// Write `d` as text, or as Markdown when `md`.
pub(crate) fn text(w: &mut dyn Write, d: &Diff, md: bool) -> io::Result<()> {
    sections(&mut Out { w, style: if md { Style::Md } else { Style::Text } }, d)
}

/// Write the sections of `d` as HTML elements (the page's body, under its verdict).
pub(crate) fn html(w: &mut dyn Write, d: &Diff) -> io::Result<()> {
    sections(&mut Out { w, style: Style::Html }, d)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Text,
    Md,
    Html,
}

struct Out<'w> {
    w: &'w mut dyn Write,
    style: Style,
}

impl Out<'_> {
    fn heading(&mut self, level: usize, s: &str) -> io::Result<()> {
        match self.style {
            Style::Md => writeln!(self.w, "\n{} {}\n", "#".repeat(level), md_escape(&sanitize(s))),
            Style::Text => writeln!(self.w, "\n{}", ellipsize(&sanitize(s), WIDTH)),
            Style::Html => writeln!(self.w, "<h{level}>{}</h{level}>", escape_xml(s)),
        }
    }

    // Prose: sanitized, wrapped to WIDTH in text with `indent` spaces after the first line.
    fn para(&mut self, s: &str, indent: usize) -> io::Result<()> {
        match self.style {
            Style::Md => writeln!(self.w, "{}  ", md_escape(&sanitize(s))),
            Style::Html => writeln!(self.w, "<p>{}</p>", escape_xml(s)),
            Style::Text => {
                for line in wrap(&sanitize(s), WIDTH, indent) {
                    writeln!(self.w, "{line}")?;
                }
                Ok(())
            }
        }
    }

    fn table(&mut self, t: &Table) -> io::Result<()> {
        match self.style {
            Style::Md => t.write_md(self.w),
            Style::Text => t.write_text(self.w),
            Style::Html => t.write_html(self.w),
        }
    }
}

fn value(v: f64, u: Unit) -> String {
    match u {
        Unit::Ns => fmt_ns(v.round() as Ns),
        Unit::Count => format!("{v:.0}"),
        Unit::Bytes => fmt_bytes(v.max(0.0) as u64),
        Unit::Pct => format!("{v:.1}%"),
        Unit::Share => format!("{:.0}%", 100.0 * v),
        Unit::Gbps => format!("{v:.2}"),
    }
}

fn change(b: f64, a: f64, u: Unit) -> String {
    let d = a - b;
    let sign = if d > 0.0 { "+" } else { "" };
    match u {
        Unit::Ns => format!("{sign}{}", fmt_ns(d.round() as Ns)),
        Unit::Count => format!("{sign}{d:.0}"),
        Unit::Bytes if d < 0.0 => format!("-{}", fmt_bytes(-d as u64)),
        Unit::Bytes => format!("{sign}{}", fmt_bytes(d as u64)),
        Unit::Pct => format!("{sign}{d:.1} pt"),
        Unit::Share => format!("{sign}{:.0} pt", 100.0 * d),
        Unit::Gbps => format!("{sign}{d:.2}"),
    }
}

fn change_pct(p: Option<f64>) -> String {
    match p {
        Some(p) if p.abs() < 10.0 => format!("{p:+.1}%"),
        // Beyond that the ratio says nothing a reader needs; it keeps the column narrow.
        Some(p) if p > 999.0 => ">+999%".to_string(),
        Some(p) => format!("{p:+.0}%"),
        None => "-".to_string(),
    }
}

// One table of `rows` (label, path, unit) over `c`; rows zero or absent in both runs are left out.
fn rows(c: &Compared, rows: &[(String, String, Unit)]) -> Table {
    let mut t = Table::new(&["metric", "before", "after", "change", "change%"]);
    for (label, path, unit) in rows {
        let (b, a) = c.pair(path);
        if b.unwrap_or(0.0) == 0.0 && a.unwrap_or(0.0) == 0.0 {
            continue;
        }
        let show = |v: Option<f64>| v.map_or("-".to_string(), |v| value(v, *unit));
        let (delta, pct) = match (b, a) {
            (Some(b), Some(a)) => (change(b, a, *unit), change_pct(super::number(&c.delta, &format!("{path}.pct")))),
            _ => ("-".to_string(), "-".to_string()),
        };
        t.row(vec![label.clone(), show(b), show(a), delta, pct]);
    }
    t
}

fn row(label: &str, path: &str, unit: Unit) -> (String, String, Unit) {
    (label.to_string(), path.to_string(), unit)
}

// A row of a phase field, under `label`.
fn field_row(f: Field) -> (String, String, Unit) {
    row(f.label, f.key, f.unit)
}

fn cause_rows(prefix: &str) -> Vec<(String, String, Unit)> {
    Cause::ALL
        .iter()
        .map(|c| row(&format!("  {}", c.label()), &format!("{prefix}.by_cause.{}.total_ns", c.label()), Unit::Ns))
        .collect()
}

fn overall_rows(c: &Compared) -> Vec<(String, String, Unit)> {
    let mut v = vec![
        row("steps", "steps", Unit::Count),
        row("step, steady mean", "steady_step_mean_ns", Unit::Ns),
        row("step, mean of all", "step_wall_mean_ns", Unit::Ns),
        row("steady wall time", "wall_ns", Unit::Ns),
        row("GPU busy", "gpu_busy_ns", Unit::Ns),
        row("GPU busy % of GPU span", "gpu_busy_pct", Unit::Pct),
        row("idle, all gaps", "idle_ns", Unit::Ns),
        row("gaps", "gaps", Unit::Count),
        row("steady idle", "steady.idle_ns", Unit::Ns),
    ];
    v.extend(cause_rows("steady"));
    v.extend([
        row("steady idle % (idle_pct)", "idle_pct", Unit::Pct),
        row("pageable copies", "pageable_copies", Unit::Count),
        row("copy time", "copy_ns", Unit::Ns),
        row("exposed copy", "exposed_copy_ns", Unit::Ns),
        row("copy/compute overlap", "copy_overlap", Unit::Share),
    ]);
    let mut keys: Vec<&String> = [&c.before, &c.after]
        .into_iter()
        .filter_map(|v| v.get("transfers").and_then(Value::as_object))
        .flat_map(serde_json::Map::keys)
        .collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        v.push(row(&format!("{k} count"), &format!("transfers.{k}.count"), Unit::Count));
        v.push(row(&format!("{k} GB/s"), &format!("transfers.{k}.gbps"), Unit::Gbps));
    }
    v
}

// The sums of the phases a diff does not list.
fn other_rows() -> Vec<(String, String, Unit)> {
    vec![
        row("phases", "phases", Unit::Count),
        row("instances", "count", Unit::Count),
        row("wall time", "wall_ns", Unit::Ns),
        row("GPU busy", "gpu_busy_ns", Unit::Ns),
        row("GPU idle in the ranges", "idle_ns", Unit::Ns),
        row("exposed copy", "exposed_copy_ns", Unit::Ns),
        row("H2D bytes", "h2d_bytes", Unit::Bytes),
        row("D2H bytes", "d2h_bytes", Unit::Bytes),
    ]
}

fn phase_rows() -> Vec<(String, String, Unit)> {
    let mut v = vec![
        field_row(fields::COUNT),
        field_row(fields::WALL),
        field_row(fields::WALL_MEAN.headed("wall, mean")),
        field_row(fields::BUSY_PCT.headed("GPU busy %")),
        field_row(fields::IDLE.headed("GPU idle in the ranges")),
        row("steady gap idle", "steady.idle_ns", Unit::Ns),
    ];
    v.extend(cause_rows("steady"));
    v.extend([
        field_row(fields::EXPOSED_COPY),
        field_row(fields::COPY_OVERLAP.headed("copy/compute overlap")),
        field_row(fields::H2D_GBPS),
        field_row(fields::D2H_GBPS),
        field_row(fields::LAUNCHED_GPU.headed("launched GPU time")),
    ]);
    v
}

fn sections(o: &mut Out<'_>, d: &Diff) -> io::Result<()> {
    // The verdict comes first: it is what a reader (or a CI log) needs. The HTML page
    // shows it as its headline, once.
    if o.style == Style::Md {
        writeln!(o.w, "# lanescope diff\n")?;
    }
    if o.style != Style::Html {
        o.para(&format!("Verdict: {}", d.verdict), 9)?;
    }
    o.para(&format!("before: {}", d.before.path), 8)?;
    o.para(&format!("after:  {}", d.after.path), 8)?;
    let step = |r: &super::RunInfo| r.step_phase.as_deref().map_or("none".to_string(), |s| format!("`{s}`"));
    o.para(
        &format!(
            "Step phase {} -> {}; the steady state runs from the second step to the end of the last.",
            step(&d.before),
            step(&d.after)
        ),
        4,
    )?;
    if let Some(w) = &d.whatif {
        o.para(
            &format!(
                "What-if: BEFORE predicted {} would save {} per step (limited by {}); measured: {}.",
                w.fix,
                crate::text::fmt_ns(w.predicted_saving_per_step_ns),
                w.limited_by,
                crate::text::fmt_ns(w.measured_saving_per_step_ns)
            ),
            9,
        )?;
    }
    o.heading(2, "Overall")?;
    o.table(&rows(&d.overall, &overall_rows(&d.overall)))?;
    let table = phase_rows();
    for p in &d.phases {
        let side = match p.status {
            Status::Both => "",
            Status::Removed => " (only in BEFORE)",
            Status::Added => " (only in AFTER)",
        };
        o.heading(2, &format!("Phase `{}`{side}", ellipsize(&p.name, 60)))?;
        o.table(&rows(&p.values, &table))?;
    }
    if let Some(other) = &d.other_phases {
        o.heading(2, &format!("{} other phases, summed (--all-phases lists them)", other.phases))?;
        o.table(&rows(&other.values, &other_rows()))?;
    }
    findings(o, &d.findings)
}

fn findings(o: &mut Out<'_>, f: &FindingDiffs) -> io::Result<()> {
    o.heading(2, "Findings")?;
    if f.gone.is_empty() && f.stayed.is_empty() && f.new.is_empty() {
        return o.para("No findings in either run.", 0);
    }
    for x in &f.gone {
        o.para(&format!("gone    [{}] {}: {}", x.severity, x.rule, x.message), 8)?;
    }
    for x in &f.stayed {
        let sev = if x.before_severity == x.after_severity {
            x.after_severity.to_string()
        } else {
            format!("{} -> {}", x.before_severity, x.after_severity)
        };
        o.para(&format!("stayed  [{sev}] {}: {}", x.rule, x.message), 8)?;
    }
    for x in &f.new {
        o.para(&format!("new     [{}] {}: {}", x.severity, x.rule, x.message), 8)?;
    }
    Ok(())
}

fn cell(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

/// Write `d` as one long CSV table.
pub(crate) fn csv(w: &mut dyn Write, d: &Diff) -> io::Result<()> {
    let mut line = |cells: [&str; 7]| {
        let v: Vec<String> = cells.iter().map(|c| field(c)).collect();
        writeln!(w, "{}", v.join(","))
    };
    line(["section", "item", "metric", "before", "after", "change", "change_pct"])?;
    let (rb, ra) = (serde_json::to_value(&d.before)?, serde_json::to_value(&d.after)?);
    for k in ["path", "step_phase", "steady_start_ns", "steady_end_ns", "min_gap_ns"] {
        line(["run", "", k, &cell(rb.get(k)), &cell(ra.get(k)), "", ""])?;
    }
    let mut compared = |section: &str, item: &str, c: &Compared| -> io::Result<()> {
        for p in super::leaf_paths(&c.before, &c.after) {
            let (b, a) = (super::lookup(&c.before, &p), super::lookup(&c.after, &p));
            let (abs, pct) =
                (super::lookup(&c.delta, &format!("{p}.abs")), super::lookup(&c.delta, &format!("{p}.pct")));
            line([section, item, &p, &cell(b), &cell(a), &cell(abs), &cell(pct)])?;
        }
        Ok(())
    };
    compared("overall", "", &d.overall)?;
    for p in &d.phases {
        compared("phase", &p.name, &p.values)?;
    }
    if let Some(other) = &d.other_phases {
        compared("other_phases", "", &other.values)?;
    }
    let f = &d.findings;
    for x in &f.gone {
        line(["finding", &x.rule, "gone", x.severity, "", "", ""])?;
    }
    for x in &f.stayed {
        line(["finding", &x.rule, "stayed", x.before_severity, x.after_severity, "", ""])?;
    }
    for x in &f.new {
        line(["finding", &x.rule, "new", "", x.severity, "", ""])?;
    }
    line(["verdict", "", "verdict", "", &d.verdict, "", ""])
}

/// Write `d` as JSON.
pub(crate) fn json(w: &mut dyn Write, d: &Diff) -> io::Result<()> {
    crate::text::write_json(w, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_changes_read_well() {
        assert_eq!(value(1_500_000.0, Unit::Ns), "1.50 ms");
        assert_eq!(change(2e6, 1e6, Unit::Ns), "-1.00 ms");
        assert_eq!(change(1.0, 3.0, Unit::Count), "+2");
        assert_eq!(change(0.5, 0.75, Unit::Share), "+25 pt");
        assert_eq!(change_pct(Some(-61.2)), "-61%");
        assert_eq!(change_pct(Some(2.34)), "+2.3%");
        assert_eq!(change_pct(None), "-");
        assert_eq!(change_pct(Some(643_974.0)), ">+999%");
    }
}
