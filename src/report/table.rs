//! A small table: aligned plain text for terminals, or a GitHub Markdown table.

use std::io::{self, Write};

use super::sanitize;

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    /// Text columns.
    Left,
    /// Number columns.
    Right,
}

/// Rows of cells under a header. Cells are sanitized when rendered.
#[derive(Debug, Clone)]
pub(crate) struct Table {
    header: Vec<&'static str>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table whose first column is left-aligned text and the rest right-aligned numbers.
    pub(crate) fn new(header: &[&'static str]) -> Self {
        let align = (0..header.len()).map(|i| if i == 0 { Align::Left } else { Align::Right }).collect();
        Self { header: header.to_vec(), align, rows: Vec::new() }
    }

    /// Override the alignment of column `i`.
    #[must_use]
    pub(crate) fn align(mut self, i: usize, a: Align) -> Self {
        self.align[i] = a;
        self
    }

    /// Append a row (missing cells render empty).
    pub(crate) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    fn cell(&self, r: usize, c: usize) -> String {
        self.rows[r].get(c).map(|s| sanitize(s).into_owned()).unwrap_or_default()
    }

    /// Plain text: columns padded to their widest cell, two spaces apart.
    pub(crate) fn write_text(&self, w: &mut dyn Write) -> io::Result<()> {
        let n = self.header.len();
        let cells: Vec<Vec<String>> = (0..self.rows.len()).map(|r| (0..n).map(|c| self.cell(r, c)).collect()).collect();
        let width: Vec<usize> = (0..n)
            .map(|c| cells.iter().map(|r| r[c].chars().count()).chain([self.header[c].len()]).max().unwrap_or(0))
            .collect();
        let line = |w: &mut dyn Write, row: &[String]| -> io::Result<()> {
            let mut out = String::new();
            for (c, cell) in row.iter().enumerate() {
                let pad = " ".repeat(width[c] - cell.chars().count());
                let sep = if c == 0 { "" } else { "  " };
                out.push_str(sep);
                match self.align[c] {
                    Align::Left => out.extend([cell.as_str(), &pad]),
                    Align::Right => out.extend([pad.as_str(), cell]),
                }
            }
            writeln!(w, "{}", out.trim_end())
        };
        line(w, &self.header.iter().map(|h| (*h).to_string()).collect::<Vec<_>>())?;
        for row in &cells {
            line(w, row)?;
        }
        Ok(())
    }

    /// GitHub Markdown table.
    pub(crate) fn write_md(&self, w: &mut dyn Write) -> io::Result<()> {
        writeln!(w, "| {} |", self.header.join(" | "))?;
        let rule: Vec<&str> = self.align.iter().map(|a| if *a == Align::Left { ":---" } else { "---:" }).collect();
        writeln!(w, "|{}|", rule.join("|"))?;
        for r in 0..self.rows.len() {
            let cells: Vec<String> = (0..self.header.len()).map(|c| md_escape(&self.cell(r, c))).collect();
            writeln!(w, "| {} |", cells.join(" | "))?;
        }
        Ok(())
    }

    /// An HTML `<table>`; cells are escaped, number columns carry `class="n"`.
    pub(crate) fn write_html(&self, w: &mut dyn Write) -> io::Result<()> {
        let class = |c: usize| if self.align[c] == Align::Right { " class=\"n\"" } else { "" };
        write!(w, "<table><thead><tr>")?;
        for (c, h) in self.header.iter().enumerate() {
            write!(w, "<th{}>{}</th>", class(c), crate::text::escape_xml(h))?;
        }
        writeln!(w, "</tr></thead><tbody>")?;
        for r in 0..self.rows.len() {
            write!(w, "<tr>")?;
            for c in 0..self.header.len() {
                write!(w, "<td{}>{}</td>", class(c), crate::text::escape_xml(&self.cell(r, c)))?;
            }
            writeln!(w, "</tr>")?;
        }
        writeln!(w, "</tbody></table>")
    }
}

/// Escape text for a Markdown table cell or paragraph: pipes, HTML, and emphasis marks.
pub(crate) fn md_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '|' | '\\' | '`' | '*' | '_' | '[' | ']' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_columns_line_up() {
        let mut t = Table::new(&["name", "n"]);
        t.row(vec!["forward".into(), "3".into()]);
        t.row(vec!["x".into(), "12345".into()]);
        let mut out = Vec::new();
        t.write_text(&mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert_eq!(s, "name         n\nforward      3\nx        12345\n");
    }

    #[test]
    fn markdown_escapes_cells() {
        let mut t = Table::new(&["name", "n"]);
        t.row(vec!["a|b<c>\u{1b}[2J".into(), "1".into()]);
        let mut out = Vec::new();
        t.write_md(&mut out).unwrap();
        let s = String::from_utf8(out).unwrap();
        assert!(s.contains("| a\\|b&lt;c&gt;\u{fffd}\\[2J | 1 |"), "{s}");
        assert!(s.contains("|:---|---:|"));
    }
}
