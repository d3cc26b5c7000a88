//! Each distinct fix once. Findings that share a [`Fix`](crate::analysis::Fix) print it,
//! with the what-if that prices it, at the first of them; the others point back to that
//! one. The text, Markdown and HTML reports and the viewer's findings box all use it, in
//! whatever order the findings come.

use crate::analysis::Finding;
use crate::analysis::link::whatif_line;

/// How one finding shows its fix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FixLine {
    /// The finding has no fix; the what-if that says why (its fix saves nothing while
    /// another limit binds), unless an earlier finding showed the same line.
    None {
        /// The what-if line (`what-if: ...`).
        whatif: Option<String>,
    },
    /// The fix in full and the what-if line that prices it (the first line any finding
    /// sharing the fix has), unless an earlier fix showed the same what-if line.
    Full {
        /// [`Finding::fix_text`].
        fix: String,
        /// The what-if line (`what-if: ...`).
        whatif: Option<String>,
    },
    /// The fix of finding `n` (numbered from 1), shown there.
    As {
        /// The finding that shows the fix, from 1.
        n: usize,
        /// What this finding adds to the fix (its own note, when it differs), else empty.
        note: String,
    },
}

impl FixLine {
    /// The pointer's text: `as in 1.`, then the finding's own note.
    pub(crate) fn as_in(n: usize, note: &str) -> String {
        if note.is_empty() { format!("as in {n}.") } else { format!("as in {n}; {note}") }
    }
}

/// How each of `fs` shows its fix, in the same order.
pub(crate) fn fix_lines(fs: &[Finding]) -> Vec<FixLine> {
    let mut shown_whatifs: Vec<String> = Vec::new();
    let mut out = Vec::with_capacity(fs.len());
    for (i, f) in fs.iter().enumerate() {
        let Some(fix) = &f.fix else {
            let whatif = whatif_line(f).filter(|w| !shown_whatifs.contains(w));
            if let Some(w) = &whatif {
                shown_whatifs.push(w.clone());
            }
            out.push(FixLine::None { whatif });
            continue;
        };
        if let Some(first) = fs[..i].iter().position(|g| g.fix.as_ref() == Some(fix)) {
            let note = if f.fix_note == fs[first].fix_note { String::new() } else { f.fix_note.clone() };
            out.push(FixLine::As { n: first + 1, note });
            continue;
        }
        // The what-if of the first finding with this fix that has one.
        let whatif = fs[i..]
            .iter()
            .filter(|g| g.fix.as_ref() == Some(fix))
            .find_map(whatif_line)
            .filter(|w| !shown_whatifs.contains(w));
        if let Some(w) = &whatif {
            shown_whatifs.push(w.clone());
        }
        out.push(FixLine::Full { fix: f.fix_text(), whatif });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{Fix, Rule, Severity};

    fn finding(fix: Option<Fix>, note: &str) -> Finding {
        Finding {
            rule: Rule::GpuGaps,
            severity: Severity::Warning,
            message: "m".to_string(),
            evidence: Vec::new(),
            fix,
            fix_note: note.to_string(),
            whatif: None,
            weight: 0,
        }
    }

    #[test]
    fn a_fix_shows_once_at_its_first_finding_in_any_order() {
        let fs = [
            finding(Some(Fix::MoreWorkers), ""),
            finding(Some(Fix::PinMemory), ""),
            finding(None, ""),
            finding(Some(Fix::PinMemory), ""),
            finding(Some(Fix::MoreWorkers), "hot: decode"),
        ];
        let lines = fix_lines(&fs);
        assert!(matches!(&lines[0], FixLine::Full { fix, .. } if *fix == fs[0].fix_text()));
        assert!(matches!(&lines[1], FixLine::Full { fix, .. } if *fix == fs[1].fix_text()));
        assert_eq!(lines[2], FixLine::None { whatif: None });
        assert_eq!(lines[3], FixLine::As { n: 2, note: String::new() });
        assert_eq!(lines[4], FixLine::As { n: 1, note: "hot: decode".to_string() });
    }

    #[test]
    fn the_what_if_goes_under_the_shown_fix_and_never_twice() {
        use crate::analysis::whatif::WhatIf;
        let w = WhatIf {
            fix: Fix::PinMemory,
            saving_per_step_ns: 0,
            step_ns_after: 9,
            limited_by: "gpu",
            basis: String::new(),
        };
        let priced = |fix| Finding { whatif: Some(w.clone()), ..finding(Some(fix), "") };
        // The first pin_memory finding has no what-if; a later one does.
        let fs = [finding(Some(Fix::PinMemory), ""), priced(Fix::PinMemory), priced(Fix::Prefetch)];
        let lines = fix_lines(&fs);
        let line = whatif_line(&fs[1]);
        assert!(line.is_some());
        assert!(matches!(&lines[0], FixLine::Full { whatif, .. } if *whatif == line));
        assert_eq!(lines[1], FixLine::As { n: 1, note: String::new() });
        // Another fix priced by the same what-if: its line is not repeated.
        assert!(matches!(&lines[2], FixLine::Full { whatif: None, .. }));
    }

    #[test]
    fn the_pointer_names_the_finding_and_adds_the_note() {
        assert_eq!(FixLine::as_in(3, ""), "as in 3.");
        assert_eq!(FixLine::as_in(1, "hot: decode"), "as in 1; hot: decode");
    }
}
