//! The one-line verdict of a diff: the biggest changes, in a fixed order and wording.
//!
//! Parts, each left out when it has nothing to say, joined by `; `:
//!
//! 1. step time: the mean step in the steady window (`steady_step_mean_ns`), `steps N%
//!    faster` / `slower` / `step time unchanged` (under 1%);
//! 2. steady GPU idle (`steady.idle_ns`), `down` / `up N%`;
//! 3. the phase whose steady gap idle changed most, with the cause that changed most in it;
//! 4. pageable copies gone, new, or their count before and after;
//! 5. copy/compute overlap, when it moved by 10 points or more;
//! 6. findings: `new: ...`, `gone: ...`, then severities that changed.

use super::{Compared, Diff, FindingDiffs, PhaseDiff, Status};
use crate::analysis::Cause;
use crate::model::Ns;
use crate::text::fmt_ns;

/// Build the verdict of `d` (its `verdict` field is not read).
pub(super) fn verdict(d: &Diff) -> String {
    let parts: Vec<String> =
        [step(&d.overall), idle(&d.overall), phase(&d.phases), pageable(&d.overall), overlap(&d.overall)]
            .into_iter()
            .flatten()
            .chain(findings(&d.findings))
            .collect();
    if parts.is_empty() { "no change in the metrics lanescope compares".to_string() } else { parts.join("; ") }
}

// A relative change in whole percent, or one decimal under 10%.
fn rel(b: f64, a: f64) -> String {
    let r = 100.0 * (a - b).abs() / b.abs();
    if r < 10.0 { format!("{r:.1}%") } else { format!("{r:.0}%") }
}

fn ns(v: f64) -> String {
    fmt_ns(v.round() as Ns)
}

fn signed_ns(v: f64) -> String {
    if v > 0.0 { format!("+{}", ns(v)) } else { ns(v) }
}

fn step(o: &Compared) -> Option<String> {
    let (Some(b), Some(a)) = o.pair("steady_step_mean_ns") else { return None };
    if b <= 0.0 {
        return None;
    }
    let values = format!("{} -> {}", ns(b), ns(a));
    Some(if (a - b).abs() < 0.01 * b {
        format!("step time unchanged ({values})")
    } else if a < b {
        format!("steps {} faster ({values})", rel(b, a))
    } else {
        format!("steps {} slower ({values})", rel(b, a))
    })
}

fn idle(o: &Compared) -> Option<String> {
    let (b, a) = o.pair("steady.idle_ns");
    let (b, a) = (b.unwrap_or(0.0), a.unwrap_or(0.0));
    if (a - b).abs() < 0.5 {
        return None;
    }
    let values = format!("{} -> {}", ns(b), ns(a));
    Some(if b == 0.0 {
        format!("steady GPU idle appeared ({values})")
    } else if a < b {
        format!("steady GPU idle down {} ({values})", rel(b, a))
    } else {
        format!("steady GPU idle up {} ({values})", rel(b, a))
    })
}

// The change of a number that may be absent in a run (absent counts as zero).
fn change(c: &Compared, path: &str) -> (f64, f64) {
    let (b, a) = c.pair(path);
    (b.unwrap_or(0.0), a.unwrap_or(0.0))
}

fn phase(phases: &[PhaseDiff]) -> Option<String> {
    let moved = |p: &&PhaseDiff| {
        let (b, a) = change(&p.values, "steady.idle_ns");
        (a - b).abs()
    };
    // Largest change first; ties to the earlier phase (AFTER's order), so the choice is stable.
    let p = phases.iter().filter(|p| moved(p) > 0.0).rev().max_by(|x, y| moved(x).total_cmp(&moved(y)))?;
    let (b, a) = change(&p.values, "steady.idle_ns");
    let name = crate::text::sanitize(&p.name);
    let how = match p.status {
        Status::Added => format!("new idle in `{name}` ({})", ns(a)),
        Status::Removed => format!("idle in `{name}` gone with the phase ({})", ns(b)),
        Status::Both if b == 0.0 => format!("idle in `{name}` appeared ({})", ns(a)),
        Status::Both if a < b => format!("idle in `{name}` down {}", rel(b, a)),
        Status::Both => format!("idle in `{name}` up {}", rel(b, a)),
    };
    let cause = Cause::ALL
        .iter()
        .map(|c| {
            let (b, a) = change(&p.values, &format!("steady.by_cause.{}.total_ns", c.label()));
            (c.label(), a - b)
        })
        .rev()
        .max_by(|x, y| x.1.abs().total_cmp(&y.1.abs()))
        .filter(|c| c.1 != 0.0);
    Some(match cause {
        Some((label, by)) => format!("{how} ({label} {})", signed_ns(by)),
        None => how,
    })
}

fn pageable(o: &Compared) -> Option<String> {
    let (b, a) = change(o, "pageable_copies");
    if (a - b).abs() < 0.5 {
        return None;
    }
    Some(if a == 0.0 {
        format!("pageable copies gone ({b} -> 0)")
    } else if b == 0.0 {
        format!("new: {a} pageable copies")
    } else {
        format!("pageable copies {b} -> {a}")
    })
}

fn overlap(o: &Compared) -> Option<String> {
    let (b, a) = change(o, "copy_overlap");
    ((a - b).abs() >= 0.1).then(|| format!("copy/compute overlap {:.0}% -> {:.0}%", 100.0 * b, 100.0 * a))
}

fn rank(severity: &str) -> u8 {
    match severity {
        "critical" => 2,
        "warning" => 1,
        _ => 0,
    }
}

fn findings(f: &FindingDiffs) -> Vec<String> {
    let list = |v: &[super::FindingRef]| {
        v.iter().map(|f| format!("{} ({})", f.rule, f.severity)).collect::<Vec<_>>().join(", ")
    };
    let mut parts = Vec::new();
    if !f.new.is_empty() {
        parts.push(format!("new: {}", list(&f.new)));
    }
    if !f.gone.is_empty() {
        parts.push(format!("gone: {}", list(&f.gone)));
    }
    let moved = |worse: bool| {
        f.stayed
            .iter()
            .filter(|s| (rank(s.after_severity) > rank(s.before_severity)) == worse)
            .filter(|s| s.after_severity != s.before_severity)
            .map(|s| format!("{} {} -> {}", s.rule, s.before_severity, s.after_severity))
            .collect::<Vec<_>>()
    };
    for (worse, word) in [(true, "worse"), (false, "eased")] {
        let v = moved(worse);
        if !v.is_empty() {
            parts.push(format!("{word}: {}", v.join(", ")));
        }
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::super::{Compared, Diff, FindingDiffs, FindingRef, PhaseDiff, RunInfo, Status, Stayed};
    use serde_json::{Value, json};

    fn run() -> RunInfo {
        RunInfo { path: "x".into(), step_phase: None, steady_start_ns: 0, steady_end_ns: 0, min_gap_ns: 0 }
    }

    fn diff(before: Value, after: Value, phases: Vec<PhaseDiff>, findings: FindingDiffs) -> Diff {
        Diff {
            other_phases: None,
            before: run(),
            after: run(),
            overall: Compared::new(before, after),
            phases,
            findings,
            verdict: String::new(),
            whatif: None,
        }
    }

    fn steady(host_wait: i64, pageable: i64) -> Value {
        json!({"idle_ns": host_wait + pageable, "by_cause": {
            "host-wait": {"count": 1, "total_ns": host_wait},
            "pageable-copy": {"count": 1, "total_ns": pageable}}})
    }

    #[test]
    fn names_step_time_idle_phase_cause_pageable_and_findings() {
        let b = json!({"steady_step_mean_ns": 100_000_000, "steady": {"idle_ns": 50_000_000}, "pageable_copies": 66,
            "copy_overlap": 0.0});
        let a = json!({"steady_step_mean_ns": 88_000_000, "steady": {"idle_ns": 20_000_000}, "pageable_copies": 0,
            "copy_overlap": 0.81});
        let phases = vec![
            PhaseDiff {
                name: "forward".into(),
                status: Status::Both,
                values: Compared::new(json!({"steady": steady(1_000_000, 0)}), json!({"steady": steady(2_000_000, 0)})),
            },
            PhaseDiff {
                name: "copy data".into(),
                status: Status::Both,
                values: Compared::new(
                    json!({"steady": steady(10_000_000, 40_000_000)}),
                    json!({"steady": steady(19_500_000, 0)}),
                ),
            },
        ];
        let f = |rule: &str, severity| FindingRef { rule: rule.into(), severity, message: String::new() };
        let findings = FindingDiffs {
            gone: vec![f("cuda_memcpy_async", "critical")],
            stayed: vec![Stayed {
                rule: "gpu_gaps".into(),
                before_severity: "critical",
                after_severity: "warning",
                message: String::new(),
            }],
            new: vec![f("starvation", "warning")],
        };
        let v = super::verdict(&diff(b, a, phases, findings));
        assert_eq!(
            v,
            "steps 12% faster (100 ms -> 88.0 ms); steady GPU idle down 60% (50.0 ms -> 20.0 ms); \
             idle in `copy data` down 61% (pageable-copy -40.0 ms); pageable copies gone (66 -> 0); \
             copy/compute overlap 0% -> 81%; new: starvation (warning); gone: cuda_memcpy_async (critical); eased: gpu_gaps critical -> warning"
        );
    }

    #[test]
    fn unchanged_runs_say_so() {
        let o = json!({"steady_step_mean_ns": 100_000_000, "steady": {"idle_ns": 5}, "pageable_copies": 0});
        let v = super::verdict(&diff(o.clone(), o, vec![], FindingDiffs::default()));
        assert_eq!(v, "step time unchanged (100 ms -> 100 ms)");
        let v = super::verdict(&diff(json!({}), json!({}), vec![], FindingDiffs::default()));
        assert_eq!(v, "no change in the metrics lanescope compares");
    }
}
