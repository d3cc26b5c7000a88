//! `--fail-if EXPR`: conditions over a [`Diff`] for CI.
//!
//! Grammar: `METRIC OP VALUE`, spaces around the parts allowed.
//!
//! - `METRIC`: an overall metric path (`pageable_copies`, `idle_pct`, `steady.idle_ns`,
//!   `steady.by_cause.host-wait.total_ns`, `transfers.H2D/pinned.gbps`), or
//!   `phase:NAME.FIELD` for a field of a phase (`phase:copy data.wall_ns`,
//!   `phase:step N.launched.gpu_ns`); NAME may hold spaces and dots.
//! - `OP`: `>`, `>=`, `<`, `<=` or `==`.
//! - `VALUE`: a number compared with AFTER's value (`N%` is the same number, allowed for
//!   `*_pct` metrics only), or `+N%` / `-N%`: the relative change from BEFORE to AFTER in
//!   percent is compared with +N / -N (`wall_ns>+10%`: grew by more than 10%). From a
//!   BEFORE of 0, the change is 0% when AFTER is 0 too, else infinitely up or down.
//!
//! A metric missing from a run (a phase or transfer only in the other one, a rate with
//! nothing to divide) never holds. A metric in neither run is an error, as is bad syntax.

use std::fmt;

use super::{Diff, Status, lookup};

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `==`
    Eq,
}

impl Op {
    fn holds(self, x: f64, y: f64) -> bool {
        match self {
            Op::Gt => x > y,
            Op::Ge => x >= y,
            Op::Lt => x < y,
            Op::Le => x <= y,
            Op::Eq => (x - y).abs() <= 1e-9 * y.abs().max(1.0),
        }
    }
}

/// What AFTER is compared with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Threshold {
    /// AFTER's value against this number.
    Value(f64),
    /// The change from BEFORE to AFTER, in percent, against this number.
    Change(f64),
}

/// Where a metric lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Metric {
    /// A path in `overall`.
    Overall(String),
    /// `phase:REST`: a phase name and a field path, split when resolved.
    Phase(String),
}

/// One parsed `--fail-if` expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Condition {
    /// The expression as given.
    pub text: String,
    /// The metric.
    pub metric: Metric,
    /// The operator.
    pub op: Op,
    /// The value.
    pub threshold: Threshold,
}

/// A condition evaluated on a diff.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outcome {
    /// The expression as given.
    pub text: String,
    /// BEFORE's value, None when absent.
    pub before: Option<f64>,
    /// AFTER's value, None when absent.
    pub after: Option<f64>,
    /// Whether the condition holds.
    pub holds: bool,
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = |x: Option<f64>| x.map_or_else(|| "none".to_string(), |x| format!("{}", (x * 1e4).round() / 1e4));
        write!(f, "`{}`: after {}, before {}", self.text, v(self.after), v(self.before))
    }
}

const OPS: [(&str, Op); 5] = [(">=", Op::Ge), ("<=", Op::Le), ("==", Op::Eq), (">", Op::Gt), ("<", Op::Lt)];

/// Parse `METRIC OP VALUE`; the error names what is wrong.
pub(crate) fn parse(text: &str) -> Result<Condition, String> {
    let bad = |why: &str| Err(format!("--fail-if `{text}`: {why}"));
    // The value holds no operator character: the last one ends the operator.
    let Some(end) = text.rfind(['>', '<', '=']) else {
        return bad("no comparison (use >, >=, <, <= or ==)");
    };
    let head = &text[..=end];
    let Some((sym, op)) = OPS.iter().find(|(s, _)| head.ends_with(s)) else {
        let got = if head.ends_with("!=") { "!=" } else { "=" };
        return bad(&format!("`{got}` is not a comparison (use >, >=, <, <= or ==)"));
    };
    let metric = head[..head.len() - sym.len()].trim();
    if metric.is_empty() || metric.ends_with(['>', '<', '=', '!']) {
        return bad("expected METRIC OP VALUE with OP one of >, >=, <, <=, ==");
    }
    let value = text[end + 1..].trim();
    let threshold = match threshold(value, metric) {
        Ok(t) => t,
        Err(why) => return bad(&why),
    };
    let metric = match metric.strip_prefix("phase:") {
        Some(rest) => Metric::Phase(rest.to_string()),
        None => Metric::Overall(metric.to_string()),
    };
    Ok(Condition { text: text.to_string(), metric, op: *op, threshold })
}

fn threshold(value: &str, metric: &str) -> Result<Threshold, String> {
    let number = |s: &str| s.trim().parse::<f64>().ok().filter(|v| v.is_finite());
    if value.is_empty() {
        return Err("no value after the comparison".to_string());
    }
    let Some(body) = value.strip_suffix('%') else {
        return number(value).map(Threshold::Value).ok_or_else(|| format!("`{value}` is not a number"));
    };
    let n = number(body).ok_or_else(|| format!("`{value}` is not a number or a percentage"))?;
    if body.starts_with(['+', '-']) {
        Ok(Threshold::Change(n))
    } else if metric.ends_with("_pct") {
        Ok(Threshold::Value(n))
    } else {
        Err(format!("`{value}`: a plain N% needs a *_pct metric; use +{body}% or -{body}% for a relative change"))
    }
}

/// True when one of `exprs` names phase `name` (`phase:NAME.FIELD`): a diff lists it
/// even past its cap on phases.
pub(crate) fn names_phase(exprs: &[String], name: &str) -> bool {
    exprs.iter().any(|e| {
        e.trim()
            .strip_prefix("phase:")
            .is_some_and(|rest| rest.starts_with(name) && rest[name.len()..].starts_with('.'))
    })
}

/// Parse and evaluate `exprs` on `d`; an error names the expression, what is wrong and
/// the metrics that exist.
pub(crate) fn check(exprs: &[String], d: &Diff) -> Result<Vec<Outcome>, String> {
    exprs
        .iter()
        .map(|e| parse(e).and_then(|c| evaluate(&c, d)))
        .collect::<Result<_, _>>()
        .map_err(|why| format!("{why}; {}", metrics(d)))
}

/// Evaluate `c` on `d`; an error names the expression and what is wrong.
pub(crate) fn evaluate(c: &Condition, d: &Diff) -> Result<Outcome, String> {
    let (before, after) = values(c, d).map_err(|why| format!("--fail-if `{}`: {why}", c.text))?;
    let holds = match (c.threshold, before, after) {
        (Threshold::Value(v), _, Some(a)) => c.op.holds(a, v),
        (Threshold::Change(v), Some(b), Some(a)) => c.op.holds(change_pct(b, a), v),
        _ => false,
    };
    Ok(Outcome { text: c.text.clone(), before, after, holds })
}

/// Relative change in percent; from 0 it is 0 or infinite.
pub(crate) fn change_pct(before: f64, after: f64) -> f64 {
    if before == 0.0 {
        if after == 0.0 { 0.0 } else { f64::INFINITY.copysign(after) }
    } else {
        100.0 * (after - before) / before.abs()
    }
}

// The metric's values in BEFORE and AFTER, or why it names nothing.
fn values(c: &Condition, d: &Diff) -> Result<(Option<f64>, Option<f64>), String> {
    match &c.metric {
        Metric::Overall(path) => leaf(&d.overall.before, &d.overall.after, path, "metric"),
        Metric::Phase(rest) => {
            // The longest phase name followed by `.FIELD`: names may hold dots.
            let p = d
                .phases
                .iter()
                .filter(|p| rest.len() > p.name.len() + 1 && rest.starts_with(&p.name))
                .filter(|p| rest.as_bytes()[p.name.len()] == b'.')
                .max_by_key(|p| p.name.len())
                .ok_or_else(|| format!("no phase in `phase:{rest}` (want phase:NAME.FIELD)"))?;
            let field = &rest[p.name.len() + 1..];
            let (b, a) = leaf(&p.values.before, &p.values.after, field, "phase field")?;
            Ok(match p.status {
                Status::Both => (b, a),
                Status::Removed => (b, None),
                Status::Added => (None, a),
            })
        }
    }
}

fn leaf(
    before: &serde_json::Value,
    after: &serde_json::Value,
    path: &str,
    what: &str,
) -> Result<(Option<f64>, Option<f64>), String> {
    let (b, a) = (lookup(before, path), lookup(after, path));
    if b.is_none() && a.is_none() {
        return Err(format!("unknown {what} `{path}`"));
    }
    if b.into_iter().chain(a).any(serde_json::Value::is_object) {
        return Err(format!("`{path}` is a group, not a number"));
    }
    Ok((b.and_then(serde_json::Value::as_f64), a.and_then(serde_json::Value::as_f64)))
}

/// The metrics `--fail-if` knows for `d`, on one line; causes and transfer rows are
/// written once as `CAUSE` and `DIR/MEMORY`.
pub(crate) fn metrics(d: &Diff) -> String {
    let mut transfers: Vec<String> = Vec::new();
    let mut compact = |paths: Vec<String>| {
        let mut out: Vec<String> = Vec::new();
        for p in paths {
            let parts: Vec<&str> = p.split('.').collect();
            let p = match parts.as_slice() {
                [.., "by_cause", _, f] => format!("{}.by_cause.CAUSE.{f}", parts[..parts.len() - 3].join(".")),
                ["transfers", k, f] => {
                    transfers.push((*k).to_string());
                    format!("transfers.DIR/MEMORY.{f}")
                }
                _ => p,
            };
            if !out.contains(&p) {
                out.push(p);
            }
        }
        out.join(", ")
    };
    let overall = compact(super::leaf_paths(&d.overall.before, &d.overall.after));
    let fields =
        d.phases.first().map(|p| compact(super::leaf_paths(&p.values.before, &p.values.after))).unwrap_or_default();
    transfers.dedup();
    let names: Vec<String> = d.phases.iter().map(|p| format!("`{}`", p.name)).collect();
    let causes: Vec<&str> = crate::analysis::Cause::ALL.iter().map(|c| c.label()).collect();
    format!(
        "metrics: {overall}; phase:NAME.FIELD with NAME one of {} and FIELD one of {fields}; \
         CAUSE one of {}; DIR/MEMORY one of {}",
        names.join(", "),
        causes.join(", "),
        transfers.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Condition {
        parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn parses_the_grammar() {
        let c = ok("pageable_copies>0");
        assert_eq!(
            (c.metric, c.op, c.threshold),
            (Metric::Overall("pageable_copies".into()), Op::Gt, Threshold::Value(0.0))
        );
        let c = ok(" idle_pct >= 20% ");
        assert_eq!((c.metric, c.op, c.threshold), (Metric::Overall("idle_pct".into()), Op::Ge, Threshold::Value(20.0)));
        let c = ok("phase:copy data.wall_ns>+10%");
        assert_eq!(
            (c.metric, c.op, c.threshold),
            (Metric::Phase("copy data.wall_ns".into()), Op::Gt, Threshold::Change(10.0))
        );
        let c = ok("steady.idle_ns<=-5.5%");
        assert_eq!((c.op, c.threshold), (Op::Le, Threshold::Change(-5.5)));
        assert_eq!(ok("gaps==3").op, Op::Eq);
        assert_eq!(ok("gaps<3").op, Op::Lt);
        assert_eq!(ok("gaps < -3").threshold, Threshold::Value(-3.0));
    }

    #[test]
    fn malformed_expressions_say_what_is_wrong() {
        let err = |s: &str| parse(s).expect_err(s);
        assert!(err("idle_pct").contains("no comparison"));
        assert!(err("idle_pct=3").contains("`=` is not a comparison"));
        assert!(err(">3").contains("METRIC OP VALUE"));
        assert!(err("idle_pct>").contains("no value"));
        assert!(err("idle_pct>abc").contains("not a number"));
        assert!(err("idle_pct=>3").contains("METRIC OP VALUE"));
        assert!(err("idle_pct!=3").contains("`!=` is not a comparison"));
        assert!(err("wall_ns>10%").contains("*_pct"));
        assert!(err("wall_ns>+x%").contains("not a number"));
        assert!(err("wall_ns>inf").contains("not a number"));
    }

    #[test]
    fn operators_and_changes() {
        assert!(Op::Gt.holds(2.0, 1.0) && !Op::Gt.holds(1.0, 1.0));
        assert!(Op::Ge.holds(1.0, 1.0) && Op::Le.holds(1.0, 1.0) && Op::Eq.holds(0.1 + 0.2, 0.3));
        assert!(Op::Lt.holds(-1.0, 0.0));
        assert!((change_pct(100.0, 110.0) - 10.0).abs() < 1e-12);
        assert!((change_pct(-100.0, -50.0) - 50.0).abs() < 1e-12);
        assert!(change_pct(0.0, 0.0).abs() < f64::EPSILON);
        assert!(change_pct(0.0, 3.0).is_infinite() && change_pct(0.0, 3.0) > 0.0);
        assert!(change_pct(0.0, -3.0).is_infinite() && change_pct(0.0, -3.0) < 0.0);
    }
}
