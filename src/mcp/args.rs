//! Tool arguments, checked one at a time; every error names the argument and what it
//! takes, since an agent reads it to correct its call.

use std::path::PathBuf;

use serde_json::{Map, Value};

use crate::model::Ns;

/// The arguments object of one call, with only known names.
pub(super) struct Args<'a> {
    map: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    /// Check that `v` is an object whose names are all in `known`.
    pub(super) fn new(v: &'a Value, known: &[&str]) -> Result<Self, String> {
        let map = v.as_object().ok_or("`arguments` must be an object")?;
        if let Some(k) = map.keys().find(|k| !known.contains(&k.as_str())) {
            return Err(format!("unknown argument `{}` (this tool takes {})", super::shown(k), known.join(", ")));
        }
        Ok(Self { map })
    }

    /// A required path.
    pub(super) fn path(&self, key: &str) -> Result<PathBuf, String> {
        match self.text(key)? {
            Some(s) if !s.trim().is_empty() => Ok(PathBuf::from(s)),
            _ => Err(format!("`{key}` is required: the path of a trace (.sqlite, .nsys-rep, .json)")),
        }
    }

    /// An optional string.
    pub(super) fn text(&self, key: &str) -> Result<Option<&'a str>, String> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(format!("`{key}` must be a string")),
        }
    }

    /// An optional non-negative integer.
    pub(super) fn integer(&self, key: &str) -> Result<Option<u64>, String> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => v.as_u64().map(Some).ok_or_else(|| format!("`{key}` must be a non-negative integer")),
        }
    }

    /// `limit`: `default` when absent, else 1 to `max`.
    pub(super) fn limit(&self, default: usize, max: usize) -> Result<usize, String> {
        match self.integer("limit")? {
            None => Ok(default),
            Some(n) if (1..=max as u64).contains(&n) => Ok(n as usize),
            Some(n) => Err(format!("`limit` is {n}: it must be from 1 to {max}")),
        }
    }

    /// `window` as offsets from the trace start, in ns: `[start, end)`.
    pub(super) fn window(&self) -> Result<Option<(Ns, Ns)>, String> {
        self.text("window")?.map(parse_window).transpose()
    }
}

/// Parse `START+WIDTH`, seconds from the trace start as the viewer shows them (`1.5+0.25`),
/// or durations with units (`1500ms+250ms`); the offsets `[start, start + width)` in ns.
pub(super) fn parse_window(s: &str) -> Result<(Ns, Ns), String> {
    let bad =
        |why: &str| format!("`window` is `{}`: {why}; write START+WIDTH in seconds, e.g. 1.5+0.25", super::shown(s));
    if s.len() > 64 {
        return Err(bad("too long for a window"));
    }
    // A `+` after an exponent's `e` belongs to the number.
    let split = s.char_indices().skip(1).find(|&(i, c)| c == '+' && !s[..i].ends_with(['e', 'E'])).map(|(i, _)| i);
    let Some(i) = split else { return Err(bad("no `+`")) };
    let start = seconds(&s[..i]).map_err(|e| bad(&e))?;
    let width = seconds(&s[i + 1..]).map_err(|e| bad(&e))?;
    if width == 0 {
        return Err(bad("WIDTH is 0"));
    }
    Ok((start, start.saturating_add(width)))
}

// Plain seconds, or a duration with a unit.
fn seconds(s: &str) -> Result<Ns, String> {
    let t = s.trim();
    if let Ok(x) = t.parse::<f64>() {
        if !x.is_finite() || !(0.0..=1e9).contains(&x) {
            return Err(format!("`{t}` is not a time from 0 to 1e9 s"));
        }
        return Ok((x * 1e9).round() as Ns);
    }
    crate::text::parse_duration(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_in_seconds_or_units() {
        assert_eq!(parse_window("1.5+0.25"), Ok((1_500_000_000, 1_750_000_000)));
        assert_eq!(parse_window("0+2ms"), Ok((0, 2_000_000)));
        assert_eq!(parse_window("1e-3+1e+0"), Ok((1_000_000, 1_001_000_000)));
        for bad in ["1.5", "+1", "a+1", "1+0", "-1+1", "1+inf"] {
            assert!(parse_window(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn unknown_and_mistyped_arguments_are_named() {
        let v = serde_json::json!({"trace": 3, "limit": 0, "x": 1});
        assert!(Args::new(&v, &["trace", "limit"]).err().unwrap().contains("`x`"));
        let a = Args::new(&v, &["trace", "limit", "x"]).unwrap();
        assert!(a.path("trace").unwrap_err().contains("must be a string"));
        assert!(a.limit(10, 100).unwrap_err().contains("from 1 to 100"));
    }
}
