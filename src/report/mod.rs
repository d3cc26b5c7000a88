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

use crate::analysis::Analysis;
use crate::model::Trace;

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
