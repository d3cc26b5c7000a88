//! Headless report of an [`Analysis`]: text (aligned tables), Markdown (GitHub tables),
//! CSV (one long `section,item,metric,value` table, see [`csv`]) or JSON (the documented
//! contract, see [`json`]).
//!
//! Names come from the trace and may hold anything: text, Markdown and CSV pass them
//! through [`sanitize`] so no escape sequence reaches a terminal; JSON relies on
//! serde's string escaping.

pub mod csv;
pub mod json;
pub mod table;
pub mod text;

use std::borrow::Cow;
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
    }
}

/// True for characters that must not reach a terminal raw: C0 controls (ESC, CR, LF,
/// TAB...), DEL, C1 controls, and the bidirectional overrides and isolates that can
/// reorder what a terminal shows.
fn is_unsafe(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

/// True for the bidirectional marks, overrides and isolates.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Replace every control character (C0 including ESC, DEL, C1) and bidirectional
/// control with U+FFFD, so trace strings can be printed on a terminal. Borrows when
/// there is nothing to replace.
pub fn sanitize(s: &str) -> Cow<'_, str> {
    if s.chars().any(is_unsafe) {
        Cow::Owned(s.chars().map(|c| if is_unsafe(c) { '\u{fffd}' } else { c }).collect())
    } else {
        Cow::Borrowed(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitize_replaces_controls_and_borrows_clean_text() {
        assert!(matches!(sanitize("step 7 – forward ü"), Cow::Borrowed(_)));
        assert_eq!(sanitize("a\u{1b}[31mb"), "a\u{fffd}[31mb");
        assert_eq!(sanitize("x\u{7f}\u{9b}y\n\t"), "x\u{fffd}\u{fffd}y\u{fffd}\u{fffd}");
        assert_eq!(sanitize("\u{202e}evil"), "\u{fffd}evil");
    }
}
