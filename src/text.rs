//! Text shared by every output (report, evidence, diff, info and the viewer): making
//! trace-derived strings safe for a terminal, cutting them to a width and wrapping
//! prose, one formatter per unit (durations, sizes, rates, counts, percentages), the
//! parser of durations the commands take (`--min-gap 50us`), and the one JSON writer. A
//! leaf module: it imports only `model::Ns`.

use std::borrow::Cow;

use crate::model::Ns;

/// True for characters that must not reach a terminal raw: C0 controls (ESC, CR, LF,
/// TAB...), DEL, C1 controls, and the bidirectional overrides and isolates that can
/// reorder what a terminal shows.
fn is_unsafe(c: char) -> bool {
    c.is_control() || is_bidi_control(c)
}

/// True for the bidirectional marks, overrides and isolates.
pub(crate) fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Write `value` as pretty-printed JSON and a newline: the one writer of every JSON
/// output (report, diff, info, bench). Besides serde's escapes (C0, quote, backslash),
/// DEL, C1 controls and bidi controls are written as `\uXXXX`, so that the raw output
/// is safe on a terminal too; a JSON parser reads the same strings back.
pub(crate) fn write_json<T: serde::Serialize + ?Sized>(w: &mut dyn std::io::Write, value: &T) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    writeln!(w, "{}", json_escape_controls(&text))
}

/// `value` as one line of compact JSON, escaped as [`write_json`] escapes (the MCP server's
/// replies).
pub(crate) fn json_line(value: &serde_json::Value) -> String {
    json_escape_controls(&value.to_string()).into_owned()
}

// JSON structure is ASCII: these characters can only occur inside strings, where
// `\uXXXX` is valid (all are in the Basic Multilingual Plane).
fn json_escape_controls(s: &str) -> Cow<'_, str> {
    use std::fmt::Write as _;
    let unsafe_char = |c: char| c == '\u{7f}' || ('\u{80}'..='\u{9f}').contains(&c) || is_bidi_control(c);
    if !s.contains(unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if unsafe_char(c) {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
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

/// Characters of a trace name (thread, kernel, call, phase, symbol) quoted in evidence
/// and captions; the full name stays where it is asked for (`info`, `events`, JSON fields).
pub(crate) const NAME_CHARS: usize = 200;

/// A trace name cut to [`NAME_CHARS`] for evidence and captions.
pub(crate) fn name(s: &str) -> Cow<'_, str> {
    ellipsize(s, NAME_CHARS)
}

/// Cut `s` to at most `max` characters, ending with `…` when cut.
pub(crate) fn ellipsize(s: &str, max: usize) -> Cow<'_, str> {
    if max == 0 {
        return Cow::Borrowed("");
    }
    if s.char_indices().nth(max).is_none() {
        return Cow::Borrowed(s);
    }
    let cut = s.char_indices().nth(max - 1).map_or(s.len(), |(i, _)| i);
    Cow::Owned(format!("{}…", &s[..cut]))
}

/// A demangled C++ kernel name as a reader would say it: no return type, namespaces or
/// argument list (`void at::native::f<a::B<2>>(…)` is `f<B<2>>`); template arguments stay,
/// since they tell two instances of one kernel apart.
pub(crate) fn short_kernel(s: &str) -> String {
    let s = s.trim().strip_prefix("void ").unwrap_or(s.trim()).replace("(anonymous namespace)::", "");
    let mut out = String::with_capacity(s.len());
    let mut depth = 0usize;
    for c in s.chars() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            '(' if depth == 0 && !out.is_empty() => break,
            ':' if out.ends_with(':') => {
                // `a::b` keeps `b`: drop the qualifier just written and its first colon.
                out.pop();
                let keep = out.rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |i| i + 1);
                out.truncate(keep);
                continue;
            }
            _ => {}
        }
        out.push(c);
    }
    out
}

/// Make a trace name safe inside SVG or HTML text and attributes: [`sanitize`] it (no
/// control characters or bidi overrides, nor XML's non-characters), then escape `&<>"'`.
pub(crate) fn escape_xml(s: &str) -> String {
    let clean = sanitize(s);
    let mut out = String::with_capacity(clean.len());
    for c in clean.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            // Not characters in XML 1.0.
            '\u{fffe}' | '\u{ffff}' => out.push('\u{fffd}'),
            _ => out.push(c),
        }
    }
    out
}

/// Format nanoseconds with an adaptive unit: `850 ns`, `12.3 µs`, `4.56 ms`, `1.234 s`.
pub(crate) fn fmt_ns(ns: Ns) -> String {
    let a = ns.unsigned_abs() as f64;
    let sign = if ns < 0 { "-" } else { "" };
    if a < 1e3 {
        format!("{ns} ns")
    } else if a < 1e6 {
        format!("{sign}{} µs", sig3(a / 1e3))
    } else if a < 1e9 {
        format!("{sign}{} ms", sig3(a / 1e6))
    } else {
        format!("{sign}{:.3} s", a / 1e9)
    }
}

// Three significant digits, without trailing noise: 12.3, 4.56, 123.
fn sig3(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Format a byte count with decimal units: `512 B`, `4.19 MB`, `3.52 GB`.
pub(crate) fn fmt_bytes(b: u64) -> String {
    let v = b as f64;
    if v < 1e3 {
        format!("{b} B")
    } else if v < 1e6 {
        format!("{} KB", sig3(v / 1e3))
    } else if v < 1e9 {
        format!("{} MB", sig3(v / 1e6))
    } else {
        format!("{} GB", sig3(v / 1e9))
    }
}

/// Bandwidth in GB/s (decimal) of `bytes` moved in `ns`; None for a zero duration.
pub(crate) fn gbps(bytes: u64, ns: Ns) -> Option<f64> {
    (ns > 0).then(|| bytes as f64 / ns as f64)
}

/// `part` over `whole` in percent; None for a zero whole.
pub(crate) fn percent(part: Ns, whole: Ns) -> Option<f64> {
    (whole > 0).then(|| 100.0 * part as f64 / whole as f64)
}

/// Format a rate of `bytes` over `ns` as `12.34 GB/s`, `-` for no time.
pub(crate) fn fmt_gbps(bytes: u64, ns: Ns) -> String {
    gbps(bytes, ns).map_or_else(|| "-".to_string(), |g| format!("{g:.2} GB/s"))
}

/// Format a count with thousands separators: `27,059`.
pub(crate) fn fmt_count(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Word-wrap `s` to `width` columns; lines after the first start with `indent` spaces.
/// Words longer than a line are cut.
pub(crate) fn wrap(s: &str, width: usize, indent: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    let mut len = 0;
    for word in s.split(' ') {
        let n = word.chars().count();
        if len > 0 && len + 1 + n > width {
            lines.push(std::mem::take(&mut line));
            line.push_str(&" ".repeat(indent));
            len = indent;
        } else if len > 0 {
            line.push(' ');
            len += 1;
        }
        let room = width.saturating_sub(len).max(1);
        line.push_str(&ellipsize(word, room));
        len += n.min(room);
    }
    lines.push(line);
    lines
}

/// Parse a duration with a unit: `500ns`, `50us`, `50µs`, `2ms`, `1.5s`.
pub(crate) fn parse_duration(s: &str) -> Result<Ns, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| format!("'{s}' is not a duration (try 100us, 2ms, 1s)"))?;
    let scale = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" | "μs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "" => return Err(format!("'{s}' has no unit (ns, us, ms or s)")),
        u => return Err(format!("unknown unit '{u}' in '{s}' (ns, us, ms or s)")),
    };
    let ns = value * scale;
    if !ns.is_finite() || ns > 1e18 {
        return Err(format!("'{s}' is too large"));
    }
    if ns < 1.0 {
        return Err(format!("'{s}' must be at least 1ns"));
    }
    Ok(ns.round() as Ns)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_kernels_short_name_keeps_its_template_arguments_and_drops_the_rest() {
        let full = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous \
                    namespace)::TensorListMetadata<2>, std::plus<float>, float>(at::native::TensorListMetadata<2>, float)";
        assert_eq!(short_kernel(full), "multi_tensor_apply_kernel<TensorListMetadata<2>, plus<float>, float>");
        assert_eq!(short_kernel("ampere_sgemm_128x64_tn"), "ampere_sgemm_128x64_tn");
        assert_eq!(short_kernel("void f(int)"), "f");
        assert_eq!(short_kernel("(weird) name"), "(weird) name");
    }

    use super::*;

    #[test]
    fn json_output_escapes_del_c1_and_bidi_controls_and_reads_back() {
        let name = "a\u{7f}b\u{9b}31m\u{202e}RLO\u{2066}\u{61c}\u{1b}z";
        let mut out = Vec::new();
        write_json(&mut out, &serde_json::json!({ "name": name })).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.chars().all(|c| c == '\n' || (' '..='~').contains(&c)), "{text:?}");
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back["name"], name);
    }

    #[test]
    fn sanitize_replaces_controls_and_borrows_clean_text() {
        assert!(matches!(sanitize("step 7 – forward ü"), Cow::Borrowed(_)));
        assert_eq!(sanitize("a\u{1b}[31mb"), "a\u{fffd}[31mb");
        assert_eq!(sanitize("x\u{7f}\u{9b}y\n\t"), "x\u{fffd}\u{fffd}y\u{fffd}\u{fffd}");
        assert_eq!(sanitize("\u{202e}evil"), "\u{fffd}evil");
    }

    #[test]
    fn control_characters_never_reach_the_terminal() {
        assert_eq!(sanitize("ok"), "ok");
        assert!(!sanitize("a\x1b[2Jb\tc\u{9b}").chars().any(char::is_control));
    }

    #[test]
    fn durations_are_adaptive() {
        assert_eq!(fmt_ns(850), "850 ns");
        assert_eq!(fmt_ns(12_346), "12.3 µs");
        assert_eq!(fmt_ns(1_250_000), "1.25 ms");
        assert_eq!(fmt_ns(100_000), "100 µs");
        assert_eq!(fmt_ns(9_298_483_969), "9.298 s");
    }

    #[test]
    fn sizes_counts_and_cuts() {
        assert_eq!(fmt_bytes(512), "512 B");
        // Decimal units, as the report and GB/s rates use.
        assert_eq!(fmt_bytes(64 << 20), "67.1 MB");
        assert_eq!(fmt_count(27_059), "27,059");
        assert_eq!(fmt_count(999), "999");
        assert_eq!(fmt_gbps(1_000_000_000, 1_000_000_000), "1.00 GB/s");
        assert_eq!(ellipsize("forward", 4), "for…");
        assert_eq!(ellipsize("fwd", 4), "fwd");
        assert_eq!(ellipsize("fwd", 0), "");
    }

    #[test]
    fn adaptive_units() {
        assert_eq!(fmt_ns(850), "850 ns");
        assert_eq!(fmt_ns(12_345), "12.3 µs");
        assert_eq!(fmt_ns(4_560_000), "4.56 ms");
        assert_eq!(fmt_ns(83_523_000), "83.5 ms");
        assert_eq!(fmt_ns(1_234_000_000), "1.234 s");
        assert_eq!(fmt_ns(-12_345), "-12.3 µs");
        assert_eq!(fmt_ns(Ns::MIN), "-9223372036.855 s");
        assert_eq!(fmt_bytes(4_194_304), "4.19 MB");
        assert_eq!(fmt_bytes(512), "512 B");
        assert_eq!(gbps(6_000_000_000, 1_000_000_000), Some(6.0));
        assert_eq!(gbps(1, 0), None);
        assert_eq!(fmt_gbps(1_000_000_000, 1_000_000_000), "1.00 GB/s");
        assert_eq!(fmt_gbps(1, 0), "-");
        assert_eq!(fmt_count(27_059), "27,059");
        assert_eq!(fmt_count(999), "999");
    }

    #[test]
    fn durations_with_units() {
        assert_eq!(parse_duration("100us"), Ok(100_000));
        assert_eq!(parse_duration("2ms"), Ok(2_000_000));
        assert_eq!(parse_duration("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_duration("50µs"), Ok(50_000));
        assert_eq!(parse_duration("500ns"), Ok(500));
        assert!(parse_duration("100").is_err());
        assert!(parse_duration("abc").is_err());
        assert!(parse_duration("5min").is_err());
    }

    #[test]
    fn wraps_words_and_cuts_long_ones() {
        assert_eq!(wrap("aa bb cc", 5, 2), ["aa bb", "  cc"]);
        assert_eq!(wrap("abcdefgh", 4, 0), ["abc…"]);
        assert_eq!(wrap("x", 100, 4), ["x"]);
        assert!(wrap(&"word ".repeat(50), 20, 3).iter().all(|l| l.chars().count() <= 20));
    }
}
