//! Headless report of an [`Analysis`]: text (aligned tables), Markdown (GitHub tables),
//! CSV (one long `section,item,metric,value` table, see [`csv`]) or JSON (the documented
//! contract, see [`json`]) or HTML (one page with the timeline pictures, see [`html`]).
//!
//! Names come from the trace and may hold anything: text, Markdown and CSV pass them
//! through [`sanitize`] so no escape sequence reaches a terminal; JSON escapes them
//! (`text::write_json`, shared with `diff`, `info` and `bench`).

pub(crate) mod csv;
pub(crate) mod fields;
pub(crate) mod fixes;
pub(crate) mod html;
pub(crate) mod json;
pub(crate) mod table;
pub(crate) mod text;

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::analysis::{Analysis, Options};
use crate::model::Trace;
use crate::reader;

/// The label of the analysis kept beside a trace's cache entry (docs/cache.md).
const CACHED_ANALYSIS: &str = "analysis";

/// Whether a command reads the lanes' columns (the events themselves) or only names,
/// records and the analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lanes {
    /// It reads events (`snapshot`, `mcp`): every column checked as it loads.
    Read,
    /// It reads none (`report`, `diff`): with a kept analysis, the lanes' large columns
    /// stay in the mapped cache entry, unread and unchecked.
    Unread,
}

/// Load `paths` (one trace, or the ranks of one job) and analyze them with `options`. The
/// analysis of a single file comes from the cache beside its entry when one is kept for
/// these options (docs/cache.md), else it is computed and kept there. A kept analysis
/// comes without its lookup indexes (`host`, `lookups`, empty), which no command reads.
pub(crate) fn load_analyzed(paths: &[PathBuf], options: &Options, lanes: Lanes) -> anyhow::Result<(Trace, Analysis)> {
    let files = reader::inputs::expand(paths)?;
    let one = single_file(&files);
    if let Some((f, a)) = one.and_then(|f| Some((f, cached_analysis(f, options)?))) {
        let t = if lanes == Lanes::Unread { reader::load_one_lent(f)? } else { reader::load_one(f)? };
        return Ok((t, a));
    }
    let t = reader::load_inputs(paths)?;
    let a = crate::analysis::analyze(&t, options);
    if let Some(f) = one {
        keep_analysis(f, options, &a);
    }
    Ok((t, a))
}

/// The one file of expanded `files` whose analysis may be kept: a single trace, not a
/// group (a group's analysis is of all its files).
pub(crate) fn single_file(files: &[PathBuf]) -> Option<&Path> {
    match files {
        [f] if reader::inputs::grouped(f).is_none() => Some(f.as_path()),
        _ => None,
    }
}

/// The analysis of the trace at `file` with `options` kept beside its cache entry, when
/// the cache is on and keeps one (without its lookup indexes).
pub(crate) fn cached_analysis(file: &Path, options: &Options) -> Option<Analysis> {
    reader::cache::derived(file, CACHED_ANALYSIS, options)
}

/// Keep `a`, the analysis of the trace at `file` with `options`, beside its cache entry.
pub(crate) fn keep_analysis(file: &Path, options: &Options, a: &Analysis) {
    reader::cache::store_derived(file, CACHED_ANALYSIS, options, a);
}

/// The analysis of `trace`, the file at `file`, with `options`, whole: the kept one with
/// its lookup indexes built again from `trace` (whose columns must be checked), else
/// computed and kept. The viewer's.
pub(crate) fn analysis_of(file: Option<&Path>, trace: &Trace, options: &Options) -> Analysis {
    // A group's analysis is of all its files: not kept.
    let file = file.filter(|f| reader::inputs::grouped(f).is_none());
    if let Some(mut a) = file.and_then(|f| cached_analysis(f, options)) {
        a.host = Arc::new(crate::analysis::host::HostIndex::build(trace));
        a.lookups = Arc::new(crate::analysis::index::Index::build(trace));
        return a;
    }
    let a = crate::analysis::analyze(trace, options);
    if let Some(f) = file {
        keep_analysis(f, options, &a);
    }
    a
}

/// Output format of [`write`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Aligned tables for a terminal.
    Text,
    /// The JSON contract.
    Json,
    /// One long CSV table.
    Csv,
    /// GitHub-flavoured Markdown.
    Md,
    /// One self-contained HTML page with inline SVG timelines ([`html`]).
    Html,
}

/// [`Format`] as the command line names it (`--format` of `report` and `diff`, `record
/// --report`). Its values carry no doc comments: clap would print them in `--help`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub(crate) enum FormatArg {
    Text,
    Json,
    Csv,
    Md,
    Html,
}

impl From<FormatArg> for Format {
    fn from(f: FormatArg) -> Self {
        match f {
            FormatArg::Text => Format::Text,
            FormatArg::Json => Format::Json,
            FormatArg::Csv => Format::Csv,
            FormatArg::Md => Format::Md,
            FormatArg::Html => Format::Html,
        }
    }
}

/// Write the report of `analysis` over `trace` in `format`. I/O errors (a closed pipe
/// included) are returned to the caller.
pub fn write(w: &mut dyn Write, trace: &Trace, analysis: &Analysis, format: Format) -> io::Result<()> {
    write_with(w, trace, analysis, format, false)
}

/// [`write`], listing every gap when `all_gaps` (JSON `gaps.all`, the text gap table,
/// CSV gap rows) instead of the longest ones.
pub fn write_with(
    w: &mut dyn Write,
    trace: &Trace,
    analysis: &Analysis,
    format: Format,
    all_gaps: bool,
) -> io::Result<()> {
    match format {
        Format::Text => text::write(w, trace, analysis, text::Style::Text, all_gaps),
        Format::Md => text::write(w, trace, analysis, text::Style::Md, all_gaps),
        Format::Csv => csv::write(w, trace, analysis, all_gaps),
        Format::Json => json::write(w, trace, analysis, all_gaps),
        Format::Html => html::write(w, trace, analysis, all_gaps),
    }
}

/// Sanitizing lives in the neutral [`crate::text`] module; re-exported here for the
/// report writers and existing callers.
use crate::text::sanitize;
