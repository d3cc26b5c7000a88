//! A streaming scanner for Chrome-trace JSON: the top-level object's small values are
//! parsed whole (`serde_json`), the `traceEvents` array one event at a time straight from a
//! refillable buffer, borrowing names from it. Nothing but the current buffer (and one
//! event larger than it, if any) is held.
//!
//! Time is linear in the input: an item that straddles the buffer's end is parsed again
//! only once the buffered part of it has doubled, so a 512 MiB string is rescanned about
//! twice, not once per chunk. An item over [`MAX_ITEM`] is skipped by a streaming scan
//! that holds none of it, and counted ([`Scanner::oversized`]).

use std::borrow::Cow;
use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A `pid` or `tid`: Chrome traces allow numbers and strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum Id<'a> {
    /// Absent, null, or another type.
    #[default]
    None,
    /// A number (fractions dropped).
    Num(i64),
    /// A string such as `"Spans"`.
    Str(&'a [u8]),
}

/// The fields of one trace event that the reader uses. Numbers are kept as their text.
#[derive(Debug, Default)]
pub(super) struct Event<'a> {
    /// `ph`: `X`, `s`, `f`, `M`, `i`...
    pub ph: Cow<'a, str>,
    /// `cat`.
    pub cat: Cow<'a, str>,
    /// `name`.
    pub name: Cow<'a, str>,
    /// `pid`.
    pub pid: Id<'a>,
    /// `tid`.
    pub tid: Id<'a>,
    /// `ts` (microseconds) as written.
    pub ts: Option<&'a [u8]>,
    /// `dur` (microseconds) as written.
    pub dur: Option<&'a [u8]>,
    /// `args.correlation`.
    pub correlation: Option<&'a [u8]>,
    /// `args.device`.
    pub device: Option<&'a [u8]>,
    /// `args.stream`.
    pub stream: Option<&'a [u8]>,
    /// `args.bytes`.
    pub bytes: Option<&'a [u8]>,
    /// `args.name` (metadata events).
    pub arg_name: Option<Cow<'a, str>>,
    /// `args.cuda_sync_kind`.
    pub sync_kind: Option<Cow<'a, str>>,
}

/// Why scanning stopped before the end of a well-formed file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Stop {
    /// Byte offset (in the decompressed text) where the problem is.
    pub offset: u64,
    /// What was wrong.
    pub reason: String,
}

#[derive(Debug)]
enum Err {
    /// The buffer ended inside the item: read more and retry.
    More,
    /// Malformed at this position of the slice.
    Bad(usize, &'static str),
}

type R<T> = Result<T, Err>;

/// The largest single event (or top-level value) held in memory; larger ones are skipped.
pub(super) const MAX_ITEM: usize = 64 << 20;
const CHUNK: usize = 4 << 20;

// What `Scanner::unit` did with the item at the read position.
enum Unit {
    Done,
    // Longer than the item limit: nothing consumed, the caller skips it.
    TooLarge,
}

/// The streaming scanner over any reader.
pub(super) struct Scanner<'c, Rd: Read> {
    r: Rd,
    buf: Vec<u8>,
    pos: usize,
    end: usize,
    eof: bool,
    base: u64,
    /// True once a `traceEvents` array (or a bare top-level array) began.
    pub saw_events: bool,
    /// Events skipped for being larger than the item limit.
    pub oversized: usize,
    /// Where the next part of a split scan begins (see `split`): the scan stops there
    /// when an event begins exactly there, and forgets it once past it.
    pub boundary: Option<u64>,
    /// True once the scan stopped at `boundary`.
    pub reached: bool,
    /// In a split scan, this scan's part and the first part that passed its boundary
    /// without stopping (a later part is then of no use: it stops at its next event).
    pub split: Option<(usize, &'c AtomicUsize)>,
    max_item: usize,
    // Bytes parsed again after a refill: the work beyond one pass over the input.
    #[cfg(test)]
    rescanned: u64,
}

impl<Rd: Read> Scanner<'_, Rd> {
    /// Scan `r`.
    pub(super) fn new(r: Rd) -> Self {
        Self {
            r,
            buf: vec![0; CHUNK],
            pos: 0,
            end: 0,
            eof: false,
            base: 0,
            saw_events: false,
            oversized: 0,
            boundary: None,
            reached: false,
            split: None,
            max_item: MAX_ITEM,
            #[cfg(test)]
            rescanned: 0,
        }
    }

    // Read more bytes, keeping buf[pos..end]; false at end of input.
    fn refill(&mut self) -> std::io::Result<bool> {
        if self.eof {
            return Ok(false);
        }
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.base += self.pos as u64;
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            let cap = self.max_item + CHUNK;
            if self.buf.len() >= cap {
                return Err(std::io::Error::other("one JSON value larger than the item limit"));
            }
            self.buf.resize((self.buf.len() * 2).min(cap), 0);
        }
        loop {
            match self.r.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    fn stop(&self, at: usize, reason: impl Into<String>) -> Stop {
        Stop { offset: self.base + at as u64, reason: reason.into() }
    }

    // Run `f` on the unread bytes until it has a whole item: it returns the bytes it
    // consumed. `f` must have no effect when it returns `More`. It runs again only after
    // the unread bytes at least doubled (linear time); an item that does not fit in the
    // item limit is left unread: `TooLarge`.
    fn unit(&mut self, mut f: impl FnMut(&[u8]) -> R<usize>) -> Result<Unit, Stop> {
        loop {
            let have = (self.end - self.pos).min(self.max_item);
            match f(&self.buf[self.pos..self.pos + have]) {
                Ok(n) => {
                    self.pos += n;
                    return Ok(Unit::Done);
                }
                Err(Err::Bad(at, why)) => return Err(self.stop(self.pos + at, why)),
                Err(Err::More) => {
                    if have == self.max_item {
                        return Ok(Unit::TooLarge);
                    }
                    #[cfg(test)]
                    {
                        self.rescanned += have as u64;
                    }
                    let want = (2 * have).max(64 << 10).min(self.max_item);
                    match self.fill(want) {
                        Ok(true) => {}
                        Ok(false) => return Err(self.stop(self.end, "unexpected end of file (truncated trace?)")),
                        Err(e) => return Err(self.stop(self.end, format!("read error: {e}"))),
                    }
                }
            }
        }
    }

    // Refill until `want` unread bytes are buffered or the input ends; false when
    // nothing more came.
    fn fill(&mut self, want: usize) -> std::io::Result<bool> {
        let before = self.end - self.pos;
        while self.end - self.pos < want && self.refill()? {}
        Ok(self.end - self.pos > before)
    }

    // Skip the value at the read position (no leading whitespace) without holding it:
    // each buffer is dropped once scanned. Strings, nesting and escapes are tracked, so
    // a quote or bracket inside a string ends nothing.
    fn skip_streaming(&mut self) -> Result<(), Stop> {
        let (mut depth, mut in_str, mut esc, mut scalar) = (0usize, false, false, false);
        loop {
            while self.pos < self.end {
                if esc {
                    esc = false;
                    self.pos += 1;
                    continue;
                }
                if in_str {
                    let rest = &self.buf[self.pos..self.end];
                    let Some(k) = rest.iter().position(|&b| b == b'"' || b == b'\\') else {
                        self.pos = self.end;
                        continue;
                    };
                    self.pos += k + 1;
                    if rest[k] == b'\\' {
                        esc = true;
                    } else {
                        in_str = false;
                        if depth == 0 {
                            return Ok(());
                        }
                    }
                    continue;
                }
                let b = self.buf[self.pos];
                if scalar {
                    if !(b.is_ascii_alphanumeric() || matches!(b, b'-' | b'+' | b'.')) {
                        return Ok(());
                    }
                    self.pos += 1;
                    continue;
                }
                self.pos += 1;
                match b {
                    b'"' => in_str = true,
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' if depth > 0 => {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(());
                        }
                    }
                    b'}' | b']' => return Err(self.stop(self.pos - 1, "expected a value")),
                    _ if depth == 0 => scalar = true,
                    _ => {}
                }
            }
            match self.refill() {
                Ok(true) => {}
                // A scalar may end the input (a bare top-level number).
                Ok(false) if scalar => return Ok(()),
                Ok(false) => return Err(self.stop(self.end, "unexpected end of file (truncated trace?)")),
                Err(e) => return Err(self.stop(self.end, format!("read error: {e}"))),
            }
        }
    }

    // Skip whitespace, then return the next byte without consuming it (None at the end).
    fn peek(&mut self) -> Result<Option<u8>, Stop> {
        loop {
            while self.pos < self.end && self.buf[self.pos].is_ascii_whitespace() {
                self.pos += 1;
            }
            if self.pos < self.end {
                return Ok(Some(self.buf[self.pos]));
            }
            match self.refill() {
                Ok(true) => {}
                Ok(false) => return Ok(None),
                Err(e) => return Err(self.stop(self.end, format!("read error: {e}"))),
            }
        }
    }

    fn expect_peek(&mut self) -> Result<u8, Stop> {
        self.peek()?.ok_or_else(|| self.stop(self.end, "unexpected end of file (truncated trace?)"))
    }

    /// Scan the whole input: `top(key, value)` for each top-level key but `traceEvents`
    /// (values over the item limit are skipped), `event` for each event. Returns where it stopped
    /// early, if it did; what came before was delivered.
    pub(super) fn run(
        &mut self,
        mut top: impl FnMut(&str, serde_json::Value),
        mut event: impl FnMut(&Event<'_>),
    ) -> Option<Stop> {
        self.run_inner(&mut top, &mut event).err()
    }

    fn run_inner(
        &mut self,
        top: &mut impl FnMut(&str, serde_json::Value),
        event: &mut impl FnMut(&Event<'_>),
    ) -> Result<(), Stop> {
        // A UTF-8 byte-order mark is allowed.
        self.peek()?;
        if self.buf[self.pos..self.end].starts_with(b"\xEF\xBB\xBF") {
            self.pos += 3;
        }
        match self.expect_peek()? {
            b'[' => {
                self.pos += 1;
                return self.events(event);
            }
            b'{' => self.pos += 1,
            _ => return Err(self.stop(self.pos, "not a JSON object or array")),
        }
        self.members(top, event)
    }

    /// Scan from an event of the top-level object's `traceEvents` array (the reader
    /// starts at it, `offset` bytes into the text): the rest of the array, then the
    /// rest of the object, as [`Scanner::run`] would.
    pub(super) fn run_from_events(
        &mut self,
        offset: u64,
        mut top: impl FnMut(&str, serde_json::Value),
        mut event: impl FnMut(&Event<'_>),
    ) -> Option<Stop> {
        self.base = offset;
        let mut rest = |sc: &mut Self| {
            sc.events(&mut event)?;
            sc.members(&mut top, &mut event)
        };
        rest(self).err()
    }

    // The members of the top-level object after its `{`, up to its `}`.
    fn members(
        &mut self,
        top: &mut impl FnMut(&str, serde_json::Value),
        event: &mut impl FnMut(&Event<'_>),
    ) -> Result<(), Stop> {
        loop {
            match self.expect_peek()? {
                b'}' => {
                    self.pos += 1;
                    return Ok(());
                }
                b',' => {
                    self.pos += 1;
                    continue;
                }
                b'"' => {}
                _ => return Err(self.stop(self.pos, "expected a key")),
            }
            let mut key = String::new();
            let unit = self.unit(|s| {
                let (k, n) = string(s, 0)?;
                let n = ws(s, n)?;
                if s[n] != b':' {
                    return Err(Err::Bad(n, "expected ':'"));
                }
                key = k.into_owned();
                Ok(n + 1)
            })?;
            if let Unit::TooLarge = unit {
                return Err(self.stop(self.pos, "a key larger than the item limit"));
            }
            if key == "traceEvents" {
                if self.expect_peek()? != b'[' {
                    return Err(self.stop(self.pos, "traceEvents is not an array"));
                }
                self.pos += 1;
                self.events(event)?;
                if self.reached {
                    return Ok(());
                }
            } else {
                let mut value = None;
                self.expect_peek()?;
                if let Unit::TooLarge = self.unit(|s| {
                    let n = skip_value(s, 0)?;
                    value = serde_json::from_slice(&s[..n]).ok();
                    Ok(n)
                })? {
                    self.skip_streaming()?;
                }
                if let Some(v) = value {
                    top(&key, v);
                }
            }
        }
    }

    // Before the element starting with byte `b`: stop at the boundary (`reached`), note
    // passing it, stop when an earlier part passed its own.
    fn at_boundary(&mut self, b: u8) -> Result<(), Stop> {
        if let Some((part, missed)) = self.split
            && missed.load(Ordering::Relaxed) < part
        {
            return Err(self.stop(self.pos, "cancelled"));
        }
        let Some(at) = self.boundary else { return Ok(()) };
        let here = self.base + self.pos as u64;
        if here == at && b == b'{' {
            self.reached = true;
        } else if here >= at {
            self.missed();
        }
        Ok(())
    }

    /// Give up the boundary (passed inside an event, or the scan stopped before it).
    pub(super) fn missed(&mut self) {
        if self.boundary.take().is_some()
            && let Some((part, missed)) = self.split
        {
            missed.fetch_min(part, Ordering::Relaxed);
        }
    }

    // The elements of the events array, up to and including its `]`.
    fn events(&mut self, event: &mut impl FnMut(&Event<'_>)) -> Result<(), Stop> {
        self.saw_events = true;
        loop {
            let b = self.expect_peek()?;
            if self.boundary.is_some() || self.split.is_some() {
                self.at_boundary(b)?;
                if self.reached {
                    return Ok(());
                }
            }
            match b {
                b']' => {
                    self.pos += 1;
                    return Ok(());
                }
                b',' => self.pos += 1,
                b'{' => {
                    let unit = self.unit(|s| {
                        let (ev, n) = parse_event(s)?;
                        event(&ev);
                        Ok(n)
                    })?;
                    if let Unit::TooLarge = unit {
                        self.oversized += 1;
                        self.skip_streaming()?;
                    }
                }
                _ => {
                    // Not an object (a number, null...): skip it.
                    if let Unit::TooLarge = self.unit(|s| skip_value(s, 0))? {
                        self.skip_streaming()?;
                    }
                }
            }
        }
    }
}

fn ws(s: &[u8], mut i: usize) -> R<usize> {
    while i < s.len() {
        if !s[i].is_ascii_whitespace() {
            return Ok(i);
        }
        i += 1;
    }
    Err(Err::More)
}

// A string starting at s[i] == '"': its text and the index after the closing quote.
fn string(s: &[u8], i: usize) -> R<(Cow<'_, str>, usize)> {
    let start = i + 1;
    let mut j = start;
    let mut escaped = false;
    loop {
        match memchr::memchr2(b'"', b'\\', &s[j.min(s.len())..]) {
            None => return Err(Err::More),
            Some(k) if s[j + k] == b'"' => {
                j += k;
                break;
            }
            Some(k) => {
                escaped = true;
                j += k + 2;
            }
        }
    }
    let raw = &s[start..j];
    let text = if escaped {
        Cow::Owned(unescape(raw))
    } else {
        // Valid UTF-8 (nearly always) is checked by the fast path and borrowed.
        std::str::from_utf8(raw).map_or_else(|_| String::from_utf8_lossy(raw), Cow::Borrowed)
    };
    Ok((text, j + 1))
}

fn hex4(s: &[u8]) -> Option<u32> {
    let t = std::str::from_utf8(s.get(..4)?).ok()?;
    u32::from_str_radix(t, 16).ok()
}

fn unescape(raw: &[u8]) -> String {
    let mut out: Vec<u8> = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let b = raw[i];
        if b != b'\\' || i + 1 >= raw.len() {
            out.push(b);
            i += 1;
            continue;
        }
        let c = raw[i + 1];
        i += 2;
        let ch = match c {
            b'n' => '\n',
            b't' => '\t',
            b'r' => '\r',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'u' => {
                let Some(hi) = hex4(&raw[i..]) else {
                    out.extend_from_slice(b"\\u");
                    continue;
                };
                i += 4;
                let code =
                    if (0xD800..0xDC00).contains(&hi) && raw.get(i) == Some(&b'\\') && raw.get(i + 1) == Some(&b'u') {
                        match hex4(&raw[i + 2..]) {
                            Some(lo) if (0xDC00..0xE000).contains(&lo) => {
                                i += 6;
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            }
                            _ => hi,
                        }
                    } else {
                        hi
                    };
                char::from_u32(code).unwrap_or('\u{FFFD}')
            }
            other => char::from(other),
        };
        let mut tmp = [0u8; 4];
        out.extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
    }
    String::from_utf8_lossy(&out).into_owned()
}

// Any scalar that is not a string: numbers, true/false/null, and leniently NaN/Infinity.
fn scalar(s: &[u8], i: usize) -> R<(&[u8], usize)> {
    let mut j = i;
    while j < s.len() && (s[j].is_ascii_alphanumeric() || matches!(s[j], b'-' | b'+' | b'.')) {
        j += 1;
    }
    if j == s.len() {
        return Err(Err::More);
    }
    if j == i {
        return Err(Err::Bad(i, "unexpected character"));
    }
    Ok((&s[i..j], j))
}

// Skip the value starting at s[i] (no leading whitespace); index after it.
fn skip_value(s: &[u8], i: usize) -> R<usize> {
    match s.get(i) {
        None => Err(Err::More),
        Some(b'"') => string_end(s, i),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match s.get(j) {
                    None => return Err(Err::More),
                    Some(b'"') => {
                        j = string_end(s, j)?;
                        continue;
                    }
                    Some(b'{' | b'[') => depth += 1,
                    Some(b'}' | b']') => {
                        depth -= 1;
                        if depth == 0 {
                            return Ok(j + 1);
                        }
                    }
                    Some(_) => {}
                }
                j += 1;
            }
        }
        Some(b'}' | b']' | b',' | b':') => Err(Err::Bad(i, "expected a value")),
        Some(_) => scalar(s, i).map(|(_, n)| n),
    }
}

fn string_end(s: &[u8], i: usize) -> R<usize> {
    let mut j = i + 1;
    loop {
        // Fast path: find the next quote or backslash.
        match memchr::memchr2(b'"', b'\\', &s[j.min(s.len())..]) {
            None => return Err(Err::More),
            Some(k) => {
                j += k;
                if s[j] == b'"' {
                    return Ok(j + 1);
                }
                j += 2;
            }
        }
    }
}

fn id(s: &[u8], i: usize) -> R<(Id<'_>, usize)> {
    match s.get(i) {
        Some(b'"') => {
            let n = string_end(s, i)?;
            Ok((Id::Str(&s[i + 1..n - 1]), n))
        }
        Some(b'-' | b'0'..=b'9') => {
            let (raw, n) = scalar(s, i)?;
            Ok((super::decimal(raw, 0).and_then(|v| i64::try_from(v).ok()).map_or(Id::None, Id::Num), n))
        }
        _ => Ok((Id::None, skip_value(s, i)?)),
    }
}

// A number (or a numeric string) as text; other types give None.
fn number(s: &[u8], i: usize) -> R<(Option<&[u8]>, usize)> {
    match s.get(i) {
        Some(b'-' | b'0'..=b'9') => scalar(s, i).map(|(r, n)| (Some(r), n)),
        Some(b'"') => {
            let n = string_end(s, i)?;
            let inner = &s[i + 1..n - 1];
            Ok((super::decimal(inner, 0).is_some().then_some(inner), n))
        }
        _ => Ok((None, skip_value(s, i)?)),
    }
}

fn text(s: &[u8], i: usize) -> R<(Option<Cow<'_, str>>, usize)> {
    match s.get(i) {
        Some(b'"') => string(s, i).map(|(t, n)| (Some(t), n)),
        _ => Ok((None, skip_value(s, i)?)),
    }
}

// Iterate the members of the object at s[i] == '{': `f(key, value_start)` returns the
// index after the value. Returns the index after the closing brace.
fn members<'a>(s: &'a [u8], i: usize, mut f: impl FnMut(&'a [u8], usize) -> R<usize>) -> R<usize> {
    let mut j = i + 1;
    loop {
        j = ws(s, j)?;
        match s[j] {
            b'}' => return Ok(j + 1),
            b',' => {
                j += 1;
                continue;
            }
            b'"' => {}
            _ => return Err(Err::Bad(j, "expected a key")),
        }
        let end = string_end(s, j)?;
        let key = &s[j + 1..end - 1];
        j = ws(s, end)?;
        if s[j] != b':' {
            return Err(Err::Bad(j, "expected ':'"));
        }
        j = ws(s, j + 1)?;
        j = f(key, j)?;
    }
}

fn parse_event(s: &[u8]) -> R<(Event<'_>, usize)> {
    let mut ev = Event::default();
    let n = members(s, 0, |key, j| {
        Ok(match key {
            b"ph" => text(s, j).map(|(t, n)| {
                ev.ph = t.unwrap_or_default();
                n
            })?,
            b"cat" => text(s, j).map(|(t, n)| {
                ev.cat = t.unwrap_or_default();
                n
            })?,
            b"name" => text(s, j).map(|(t, n)| {
                ev.name = t.unwrap_or_default();
                n
            })?,
            b"pid" => id(s, j).map(|(v, n)| {
                ev.pid = v;
                n
            })?,
            b"tid" => id(s, j).map(|(v, n)| {
                ev.tid = v;
                n
            })?,
            b"ts" => number(s, j).map(|(v, n)| {
                ev.ts = v;
                n
            })?,
            b"dur" => number(s, j).map(|(v, n)| {
                ev.dur = v;
                n
            })?,
            b"args" if s.get(j) == Some(&b'{') => members(s, j, |k, j| {
                Ok(match k {
                    b"correlation" => number(s, j).map(|(v, n)| {
                        ev.correlation = v;
                        n
                    })?,
                    b"device" => number(s, j).map(|(v, n)| {
                        ev.device = v;
                        n
                    })?,
                    b"stream" => number(s, j).map(|(v, n)| {
                        ev.stream = v;
                        n
                    })?,
                    b"bytes" => number(s, j).map(|(v, n)| {
                        ev.bytes = v;
                        n
                    })?,
                    b"name" => text(s, j).map(|(v, n)| {
                        ev.arg_name = v;
                        n
                    })?,
                    b"cuda_sync_kind" => text(s, j).map(|(v, n)| {
                        ev.sync_kind = v;
                        n
                    })?,
                    _ => skip_value(s, j)?,
                })
            })?,
            _ => skip_value(s, j)?,
        })
    })?;
    Ok((ev, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(text: &[u8], chunk: usize) -> (Vec<String>, Vec<String>, Option<Stop>) {
        // A reader that returns at most `chunk` bytes per read, to cross buffer ends.
        struct Slow<'a>(&'a [u8], usize);
        impl Read for Slow<'_> {
            fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
                let n = self.0.len().min(self.1).min(b.len());
                b[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut sc = Scanner::new(Slow(text, chunk));
        sc.buf = vec![0; 8];
        let (mut keys, mut names) = (Vec::new(), Vec::new());
        let stop = sc.run(
            |k, v| keys.push(format!("{k}={v}")),
            |e| names.push(format!("{}:{}:{:?}", e.ph, e.name, e.ts.map(|t| String::from_utf8_lossy(t).into_owned()))),
        );
        (keys, names, stop)
    }

    #[test]
    fn events_and_top_level_values_across_tiny_buffers() {
        let t = br#" {"schemaVersion": 1, "traceEvents": [ {"ph":"X","name":"a\"b\u00e9","ts":1.5,"args":{"x":[1,{"y":"}"}]}},
            {"name":"c","ph":"i","ts":"2.25"} , 7 ], "traceName": "t.json", "deviceProperties":[{"id":0}]}"#;
        for chunk in [1, 3, 7, 64] {
            let (keys, names, stop) = scan(t, chunk);
            assert_eq!(stop, None);
            assert_eq!(keys, vec!["schemaVersion=1", "traceName=\"t.json\"", "deviceProperties=[{\"id\":0}]"]);
            assert_eq!(names, vec!["X:a\"bé:Some(\"1.5\")", "i:c:Some(\"2.25\")"]);
        }
    }

    #[test]
    fn truncation_keeps_whole_events_and_says_where() {
        let t = br#"{"traceEvents": [{"ph":"X","name":"a","ts":1},{"ph":"X","name":"b","ts":2"#;
        let (_, names, stop) = scan(t, 5);
        assert_eq!(names.len(), 1);
        let stop = stop.unwrap();
        assert!(stop.reason.contains("unexpected end"), "{stop:?}");
        assert_eq!(stop.offset, t.len() as u64);
    }

    #[test]
    fn malformed_json_stops_at_the_bad_byte() {
        let t = br#"{"traceEvents": [{"ph":"X","name":"a","ts":1}, {"ph" "X"}]}"#;
        let (_, names, stop) = scan(t, 1000);
        assert_eq!(names.len(), 1);
        assert_eq!(stop.unwrap().offset, 53); // the `"X"` where a `:` belongs
    }

    // One event whose name is `len` bytes, then a small one, read 1 MiB at a time.
    fn big_name(len: usize) -> Vec<u8> {
        let mut t = br#"{"traceEvents": [{"ph":"X","ts":1,"name":""#.to_vec();
        t.extend(std::iter::repeat_n(b'A', len));
        t.extend_from_slice(br#"","args":{"k":"]}\"}"}}, {"ph":"X","name":"after","ts":2}], "x": 1}"#);
        t
    }

    struct Chunks<'a>(&'a [u8]);
    impl Read for Chunks<'_> {
        fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.len().min(1 << 20).min(b.len());
            b[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_large_value_is_parsed_again_only_after_its_buffered_part_doubled() {
        let len = 16 << 20;
        let t = big_name(len);
        let mut sc = Scanner::new(Chunks(&t));
        let mut names = Vec::new();
        assert_eq!(sc.run(|_, _| {}, |e| names.push(e.name.len())), None);
        assert_eq!(names, [len, 5]);
        // Geometric: under twice the item. Reparsing after every 1 MiB chunk would be
        // 1 + 2 + ... + 16 MiB = 136 MiB.
        assert!(sc.rescanned <= 2 * len as u64, "rescanned {} MiB", sc.rescanned >> 20);
        assert_eq!(sc.oversized, 0);
    }

    #[test]
    fn a_value_over_the_item_limit_is_skipped_without_holding_it() {
        let t = big_name(8 << 20);
        let mut sc = Scanner::new(Chunks(&t));
        sc.buf = vec![0; 1024];
        sc.max_item = 1 << 20;
        let (mut names, mut keys) = (Vec::new(), Vec::new());
        assert_eq!(sc.run(|k, _| keys.push(k.to_string()), |e| names.push(e.name.to_string())), None);
        assert_eq!((names, keys, sc.oversized), (vec!["after".to_string()], vec!["x".to_string()], 1));
        assert!(sc.buf.len() <= sc.max_item + CHUNK, "buffer {} MiB", sc.buf.len() >> 20);
        // A top-level value too: skipped, and what follows it still read.
        let mut t = br#"{"big": [""#.to_vec();
        t.extend(std::iter::repeat_n(b'x', 3 << 20));
        t.extend_from_slice(br#"", {"a": "[{"}], "traceEvents": [{"ph":"X","name":"e","ts":1}]}"#);
        let mut sc = Scanner::new(Chunks(&t));
        sc.max_item = 1 << 20;
        let (mut names, mut keys) = (Vec::new(), Vec::new());
        assert_eq!(sc.run(|k, _| keys.push(k.to_string()), |e| names.push(e.name.to_string())), None);
        assert_eq!((names, keys.len(), sc.oversized), (vec!["e".to_string()], 0, 0));
    }

    #[test]
    fn a_bare_array_is_a_trace() {
        let (_, names, stop) = scan(br#"[{"ph":"X","name":"a"}]"#, 2);
        assert_eq!((names.len(), stop), (1, None));
    }
}
