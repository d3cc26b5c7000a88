//! `diff --format html`: one self-contained page. The verdict as the headline, the text
//! diff's sections as HTML tables (the same rows as `--format text`), then both runs' timelines
//! stacked at an aligned step: the same step instance of each run (the first of the
//! steady state, as `diff --view` opens), on the same time scale, then each run's
//! longest gap. Without the runs' traces ([`write_as`](super::write_as) without `runs`) the
//! page has no pictures.

use std::io::{self, Write};

use super::Diff;
use crate::analysis::Analysis;
use crate::model::Trace;
use crate::picture::{Pick, Scene, Span};
use crate::report::html::{figure, figure_at, head, tail};
use crate::text::escape_xml;
use crate::view::align::{self, RunSpan};

/// Write the HTML diff `d`; with `runs` (BEFORE, AFTER), add their timelines.
pub(crate) fn write(w: &mut dyn Write, d: &Diff, runs: Option<[(&Trace, &Analysis); 2]>) -> io::Result<()> {
    head(w, &format!("lanescope diff: {} -> {}", d.before.path, d.after.path))?;
    writeln!(w, "<h1>lanescope diff</h1><p class=\"headline\"><b>{}</b></p>", escape_xml(&d.verdict))?;
    super::write::html(w, d)?;
    if let Some(runs) = runs {
        pictures(w, runs)?;
    }
    tail(w)
}

fn pictures(w: &mut dyn Write, runs: [(&Trace, &Analysis); 2]) -> io::Result<()> {
    let scenes = runs.map(|(t, a)| Scene::new(t, a));
    let spans = runs.map(|(t, a)| RunSpan { start: t.meta.start_ns, end: t.meta.end_ns, steps: &a.step_instances });
    writeln!(w, "<h2>Timelines</h2>")?;
    let names = ["before", "after"];
    match align::first_step(spans) {
        Some(k) => {
            let origins = align::origins(align::Align::Step(k), spans);
            let (off, span) = align::step_window(k, spans);
            for (i, scene) in scenes.iter().enumerate() {
                let s = Span { t0: origins[i].saturating_add(off), span };
                let caption =
                    format!("{}: step instance {} (both runs aligned at its start, same scale)", names[i], k + 1);
                figure_at(w, scene, s, &caption)?;
            }
        }
        None => {
            for (i, scene) in scenes.iter().enumerate() {
                figure(w, scene, &Pick::All, &format!("{}: the whole run (no common step phase)", names[i]))?;
            }
        }
    }
    for (i, scene) in scenes.iter().enumerate() {
        if let Some(g) = scene.nth_gap(1) {
            let caption =
                format!("{}: its longest gap, idle {} ({})", names[i], crate::text::fmt_ns(g.dur()), g.cause.label());
            figure(w, scene, &Pick::Gap(1), &caption)?;
        }
    }
    Ok(())
}
