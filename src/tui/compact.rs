//! A writer between ratatui's crossterm backend and the terminal that shortens escape
//! codes, to spend less SSH bandwidth per frame.
//!
//! - Colours: crossterm writes every colour change as `ESC[38;5;N;49m` (foreground and
//!   background together, 256-colour form even for the 16 ANSI colours). This filter
//!   keeps the colours the terminal has and writes only what changes, in the shortest
//!   form: `ESC[36m` instead of `ESC[38;5;6;49m`, nothing when both are already set.
//! - Cursor moves: ratatui moves with absolute `ESC[row;colH`. When the cursor position
//!   is known (text since the last move had known display widths) and the target is
//!   further right on the same row, `ESC[nC` is written instead; a move to where the
//!   cursor already is is dropped. Anything else makes the position unknown again.
//!
//! Every other byte passes through unchanged.

use std::io::{self, Write};

/// A colour as set by SGR: default, or the exact parameter text that set it.
type Colour = Option<Vec<u8>>;

/// Shortens SGR colour sequences written through it; see the module docs.
#[derive(Debug)]
pub struct CompactWriter<W: Write> {
    inner: W,
    // Bytes of an escape sequence not yet complete (writes may split one).
    seq: Vec<u8>,
    // Colours the terminal has now; None = unknown (emit the next change in full).
    fg: Option<Colour>,
    bg: Option<Colour>,
    // 1-based (row, column) of the cursor, when known.
    cursor: Option<(u32, u32)>,
}

impl<W: Write> CompactWriter<W> {
    /// Wrap `inner`; nothing is assumed about the terminal's current colours.
    pub fn new(inner: W) -> Self {
        Self { inner, seq: Vec::new(), fg: None, bg: None, cursor: None }
    }

    // Write plain text and advance the known cursor by its display width.
    fn text(&mut self, bytes: &[u8]) -> io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        self.cursor = match (self.cursor, std::str::from_utf8(bytes)) {
            (Some((r, c)), Ok(t)) if !t.chars().any(char::is_control) => {
                Some((r, c + unicode_width::UnicodeWidthStr::width(t) as u32))
            }
            _ => None,
        };
        self.inner.write_all(bytes)
    }

    // An absolute move `row;col`: relative when that is shorter and certainly right.
    fn move_to(&mut self, params: &[u8]) -> io::Result<()> {
        let target = std::str::from_utf8(params).ok().and_then(|p| {
            let (r, c) = p.split_once(';')?;
            Some((r.parse::<u32>().ok()?, c.parse::<u32>().ok()?))
        });
        match (self.cursor, target) {
            (Some(now), Some(t)) if now == t => Ok(()),
            (Some((r, c)), Some((tr, tc))) if r == tr && tc > c => {
                self.cursor = target;
                write!(self.inner, "\x1b[{}C", tc - c)
            }
            _ => {
                self.cursor = target;
                self.inner.write_all(b"\x1b[")?;
                self.inner.write_all(params)?;
                self.inner.write_all(b"H")
            }
        }
    }

    fn sgr(&mut self, params: &[u8]) -> io::Result<()> {
        let parts: Vec<&[u8]> = params.split(|&b| b == b';').collect();
        let mut out: Vec<Vec<u8>> = Vec::new();
        let mut i = 0;
        while i < parts.len() {
            let p = parts[i];
            match p {
                b"" | b"0" => {
                    out.push(b"0".to_vec());
                    self.fg = Some(None);
                    self.bg = Some(None);
                }
                b"38" | b"48" => {
                    let n = if parts.get(i + 1) == Some(&&b"5"[..]) { 2 } else { 4 };
                    let end = (i + 1 + n).min(parts.len());
                    let spec = parts[i + 1..end].join(&b';');
                    let fg = p == b"38";
                    self.set(&mut out, fg, Some(spec));
                    i = end;
                    continue;
                }
                b"39" => self.set(&mut out, true, None),
                b"49" => self.set(&mut out, false, None),
                _ => out.push(p.to_vec()),
            }
            i += 1;
        }
        if out.is_empty() {
            return Ok(());
        }
        self.inner.write_all(b"\x1b[")?;
        self.inner.write_all(&out.join(&b';'))?;
        self.inner.write_all(b"m")
    }

    // Record a colour change and queue its shortest form, unless it changes nothing.
    fn set(&mut self, out: &mut Vec<Vec<u8>>, fg: bool, colour: Colour) {
        let slot = if fg { &mut self.fg } else { &mut self.bg };
        if slot.as_ref() == Some(&colour) {
            return;
        }
        out.push(short(fg, colour.as_deref()));
        *slot = Some(colour);
    }
}

// `5;N` with N < 16 becomes the classic 30-37/90-97 (or 40-47/100-107) code.
fn short(fg: bool, colour: Option<&[u8]>) -> Vec<u8> {
    let (base, bright, long, default) = if fg { (30, 90, "38", "39") } else { (40, 100, "48", "49") };
    let Some(spec) = colour else { return default.as_bytes().to_vec() };
    let n = spec.strip_prefix(b"5;").and_then(|n| std::str::from_utf8(n).ok()?.parse::<u8>().ok());
    match n {
        Some(n) if n < 8 => (base + u32::from(n)).to_string().into_bytes(),
        Some(n) if n < 16 => (bright + u32::from(n) - 8).to_string().into_bytes(),
        _ => [long.as_bytes(), b";", spec].concat(),
    }
}

impl<W: Write> Write for CompactWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // Start of the run of plain bytes not yet written.
        let mut run = 0;
        for (i, &b) in buf.iter().enumerate() {
            if self.seq.is_empty() {
                if b == 0x1b {
                    self.text(&buf[run..i])?;
                    self.seq.push(b);
                    run = i + 1;
                }
                continue;
            }
            self.seq.push(b);
            run = i + 1;
            let done = if self.seq.len() == 2 { b != b'[' } else { (0x40..=0x7e).contains(&b) };
            if done {
                let seq = std::mem::take(&mut self.seq);
                let csi = seq.len() > 2 && seq[1] == b'[';
                match b {
                    b'm' if csi => self.sgr(&seq[2..seq.len() - 1])?,
                    b'H' if csi => self.move_to(&seq[2..seq.len() - 1])?,
                    _ => {
                        // Some other command: it may move the cursor.
                        self.cursor = None;
                        self.inner.write_all(&seq)?;
                    }
                }
            }
        }
        self.text(&buf[run..])?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(chunks: &[&[u8]]) -> Vec<u8> {
        let mut w = CompactWriter::new(Vec::new());
        for c in chunks {
            w.write_all(c).unwrap();
        }
        w.inner
    }

    #[test]
    fn shortens_and_drops_repeats() {
        let out = run(&[b"\x1b[38;5;6;49mab\x1b[38;5;6;49mc\x1b[39;49m d"]);
        assert_eq!(out, b"\x1b[36;49mabc\x1b[39m d");
    }

    #[test]
    fn keeps_256_colours_and_other_sequences() {
        let out = run(&[b"\x1b[12;40H\x1b[38;5;71;48;5;8mx\x1b[1m\x1b[?25l\x1b[38;5;71;48;5;8my"]);
        assert_eq!(out, b"\x1b[12;40H\x1b[38;5;71;100mx\x1b[1m\x1b[?25ly");
    }

    #[test]
    fn reset_forgets_colours() {
        let out = run(&[b"\x1b[38;5;2;49ma\x1b[0mb\x1b[38;5;2;49mc"]);
        assert_eq!(out, b"\x1b[32;49ma\x1b[0mb\x1b[32mc");
    }

    #[test]
    fn sequences_split_across_writes() {
        let whole = run(&[b"x\x1b[38;5;9;49my\x1b[5;7Hz\x1b[39;49m"]);
        let bytes = b"x\x1b[38;5;9;49my\x1b[5;7Hz\x1b[39;49m";
        let split: Vec<&[u8]> = bytes.chunks(1).collect();
        assert_eq!(run(&split), whole);
        assert_eq!(whole, b"x\x1b[91;49my\x1b[5;7Hz\x1b[39m");
    }

    #[test]
    fn moves_on_the_same_row_become_relative() {
        // Known after an absolute move: "ab" leaves the cursor at column 7.
        let out = run(&[b"\x1b[3;5Hab\x1b[3;9Hc\x1b[3;10Hd\x1b[4;1He"]);
        assert_eq!(out, b"\x1b[3;5Hab\x1b[2Ccd\x1b[4;1He");
        // Wide characters count two columns, as ratatui lays them out.
        assert_eq!(run(&["\x1b[1;1H漢\x1b[1;5Hx".as_bytes()]), "\x1b[1;1H漢\x1b[2Cx".as_bytes());
        // Backwards, unknown position, or after another command: absolute.
        assert_eq!(run(&[b"\x1b[2;9Hx\x1b[2;3Hy"]), b"\x1b[2;9Hx\x1b[2;3Hy");
        assert_eq!(run(&[b"x\x1b[2;3Hy"]), b"x\x1b[2;3Hy");
        assert_eq!(run(&[b"\x1b[2;1Hx\x1b[2J\x1b[2;5Hy"]), b"\x1b[2;1Hx\x1b[2J\x1b[2;5Hy");
        assert_eq!(run(&[b"\x1b[2;1Hx\n\x1b[2;5Hy"]), b"\x1b[2;1Hx\n\x1b[2;5Hy");
    }

    #[test]
    fn plain_text_and_utf8_pass_through() {
        assert_eq!(run(&["█▓▒░ × é".as_bytes()]), "█▓▒░ × é".as_bytes());
        assert_eq!(run(&[b"\x1bMx"]), b"\x1bMx");
    }
}
