//! `report --format html`: one self-contained page (inline CSS and SVG, no scripts, no
//! network) that a person can attach to a pull request or a chat. The answer first: the
//! headline finding with its fix and what-if, and the timeline of the steady state; then
//! the text report's sections as HTML (the same tables, `text::Style::Html`), then the
//! longest gaps' pictures. Every name from the trace is escaped ([`escape_xml`]).

use std::io::{self, Write};

use super::fixes::{FixLine, fix_lines};
use super::text::{self, Style};
use crate::analysis::{Analysis, Finding};
use crate::model::{Ns, Trace};
use crate::picture::svg::{self, Size};
use crate::picture::{Pick, Scene};
use crate::text::{escape_xml, fmt_ns};

/// Longest gaps drawn, each in its own picture.
pub(crate) const GAP_PICTURES: usize = 3;
/// Steady steps shown in the steady-state picture.
pub(crate) const STEADY_STEPS: usize = 3;
/// Width of the pictures in the page.
pub(crate) const PICTURE: Size = Size { width: 1200, height: None };

const CSS: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1240px;color:#222}\
h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ddd}\
table{border-collapse:collapse;font-size:12px;margin:8px 0}th,td{padding:2px 8px;border-bottom:1px solid #eee;text-align:left}\
.n{text-align:right;font-variant-numeric:tabular-nums}\
.headline{background:#fff4e5;border-left:4px solid #ff7f0e;padding:8px 12px;font-size:15px}\
.finding{margin:10px 0;padding:6px 10px;border-left:4px solid #999}.critical{border-color:#d62728}\
.warning{border-color:#ff7f0e}.info{border-color:#1f77b4}.fix{color:#064}.whatif{color:#064;font-style:italic}\
.ev{color:#666;font-size:12px}td{vertical-align:top}.n{white-space:nowrap}\
figure{margin:12px 0}figcaption{font-size:13px;color:#444}svg{max-width:100%;height:auto}\
pre{font-size:12px;background:#f7f7f7;padding:8px;overflow-x:auto}";

/// Write the HTML report of `a` over `trace`.
pub(crate) fn write(w: &mut dyn Write, trace: &Trace, a: &Analysis, all_gaps: bool) -> io::Result<()> {
    let title = format!("lanescope report: {}", trace.meta.path);
    head(w, &title)?;
    writeln!(w, "<h1>{}</h1>", escape_xml(&title))?;
    if let Some(f) = a.findings.first() {
        // The what-if under the headline's fix is the one the findings show with it.
        let whatif = match fix_lines(&a.findings).into_iter().next() {
            Some(FixLine::Full { whatif, .. }) => whatif,
            _ => None,
        };
        headline(w, f, whatif.as_deref())?;
    }
    let scene = Scene::new(trace, a);
    steady_picture(w, &scene)?;
    text::write(w, trace, a, Style::Html, all_gaps)?;
    gap_pictures(w, &scene)?;
    tail(w)
}

/// The page's start: doctype, title and style.
pub(crate) fn head(w: &mut dyn Write, title: &str) -> io::Result<()> {
    writeln!(
        w,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{CSS}</style></head><body>",
        escape_xml(title)
    )
}

/// The page's end.
pub(crate) fn tail(w: &mut dyn Write) -> io::Result<()> {
    writeln!(w, "</body></html>")
}

/// The headline box: the first finding's message, its fix and the `whatif` line that
/// prices it.
pub(crate) fn headline(w: &mut dyn Write, f: &Finding, whatif: Option<&str>) -> io::Result<()> {
    let whatif = whatif.map(|x| format!("<br><span class=\"whatif\">{}</span>", escape_xml(x))).unwrap_or_default();
    writeln!(
        w,
        "<p class=\"headline\"><b>{}</b><br><span class=\"fix\">fix: {}</span>{whatif}</p>",
        escape_xml(&f.message),
        escape_xml(&f.fix_text())
    )
}

// The steady state: its first steps.
fn steady_picture(w: &mut dyn Write, scene: &Scene) -> io::Result<()> {
    let a = scene.analysis;
    if a.devices.is_empty() {
        return Ok(());
    }
    let (from, to) = steady_range(a);
    let caption = match &a.step_phase {
        Some(p) => {
            format!("Steady state: the first {STEADY_STEPS} steps of `{}` after the first", crate::text::name(p))
        }
        None => "Steady state: the whole GPU span (no step phase)".to_string(),
    };
    figure(w, scene, &Pick::Range(from, to), &caption)
}

// The longest gaps, each in its own picture.
fn gap_pictures(w: &mut dyn Write, scene: &Scene) -> io::Result<()> {
    let (t, a) = (scene.trace, scene.analysis);
    if a.devices.is_empty() || a.gaps.is_empty() {
        return Ok(());
    }
    writeln!(w, "<h2>The longest gaps</h2>")?;
    for n in 1..=GAP_PICTURES.min(a.gaps.len()) {
        let Some(g) = scene.nth_gap(n) else { break };
        let caption = format!(
            "The {} gap: idle {} at +{}, {}: {}",
            longest(n),
            fmt_ns(g.dur()),
            fmt_ns(g.start - t.meta.start_ns),
            g.cause.label(),
            g.evidence
        );
        figure(w, scene, &Pick::Gap(n), &caption)?;
    }
    Ok(())
}

// `longest`, `2nd longest`, ...
fn longest(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    if n == 1 { "longest".to_string() } else { format!("{n}{suffix} longest") }
}

// The steady window, cut to its first STEADY_STEPS step instances when there are steps.
fn steady_range(a: &Analysis) -> (Ns, Ns) {
    let w = a.windows;
    let steady: Vec<&(Ns, Ns)> =
        a.step_instances.iter().filter(|s| s.0 >= w.steady_start && s.0 < w.steady_end).take(STEADY_STEPS).collect();
    match (steady.first(), steady.last()) {
        (Some(f), Some(l)) => (f.0, l.1),
        _ => (w.steady_start, w.steady_end),
    }
}

/// One picture of `scene` with its caption.
pub(crate) fn figure(w: &mut dyn Write, scene: &Scene, pick: &Pick, caption: &str) -> io::Result<()> {
    let Ok(span) = scene.span(pick, (PICTURE.width - svg::LABEL_W) as usize) else { return Ok(()) };
    figure_at(w, scene, span, caption)
}

/// One picture of window `span` of `scene` with its caption.
pub(crate) fn figure_at(w: &mut dyn Write, scene: &Scene, span: crate::picture::Span, caption: &str) -> io::Result<()> {
    let svg = svg::render(scene, span, PICTURE, &scene.trace.meta.path);
    writeln!(w, "<figure>{svg}<figcaption>{}</figcaption></figure>", escape_xml(caption))
}
