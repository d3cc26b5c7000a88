//! What the capture rounds of issues 32 and 33 share: each cell of a round against the
//! expectation written before its capture (`matrix_r6.rs`, `matrix_r7.rs`), and each hand
//! label of a round against lanescope's gap (`labels_r6.rs`, `labels_r7.rs`). Each round's
//! file keeps its own list of what does not hold, with why.

use lanescope::{Analysis, Options, RegionKind, StepSource, analyze};
use serde_json::Value;

use crate::util::matrix_trace;

// `tests/fixtures/matrix/NAME.json`.
fn matrix_json(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/matrix/{name}.json"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn strs(v: &Value) -> Vec<&str> {
    v.as_array().map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
}

// The cell's capture: the nsys export, or the Kineto trace of the Kineto cell.
fn analysis(cell: &str) -> Analysis {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/matrix");
    let kineto = dir.join(format!("{cell}.json.gz"));
    let path = if kineto.exists() { kineto } else { matrix_trace(cell) };
    analyze(&lanescope::load(&path).unwrap(), &Options::default())
}

// Each check of one cell that fails, named `cell: what`.
fn check(cell: &str, want: &Value, a: &Analysis) -> Vec<String> {
    let mut bad = Vec::new();
    let steps = &want["steps"];
    let source = match a.steps.source {
        StepSource::Nvtx => "nvtx",
        StepSource::Profiler => "profiler",
        StepSource::Inferred => "inferred",
        StepSource::None => "none",
    };
    if steps["source"].as_str().is_some_and(|s| s != source) {
        bad.push(format!("{cell}: steps source {source}"));
    }
    if let Some(n) = steps["count"].as_u64()
        && (a.steps.count as u64).abs_diff(n) > 1
    {
        bad.push(format!("{cell}: steps count {}", a.steps.count));
    }
    let top = a.regions.first().map(|r| r.kind);
    let kinds = strs(&want["regions"]["kinds"]);
    let named = |k: RegionKind| match k {
        RegionKind::Steps => "steps",
        RegionKind::Periodic => "periodic",
        RegionKind::BetweenSteps => "between-steps",
        RegionKind::Loop => "loop",
    };
    let top_any = strs(&want["regions"]["top_any"]);
    if top_any.is_empty() {
        for k in [RegionKind::Periodic, RegionKind::BetweenSteps, RegionKind::Loop] {
            if kinds.contains(&named(k)) && top != Some(k) {
                bad.push(format!("{cell}: most idle in {:?}, not {}", top.map(named), named(k)));
            }
        }
    } else if !top.is_some_and(|k| top_any.contains(&named(k))) {
        bad.push(format!("{cell}: most idle in {:?}, not one of {top_any:?}", top.map(named)));
    }
    let head = &want["headline"];
    let Some(f) = a.findings.first() else { return vec![format!("{cell}: no finding")] };
    let mut rules = strs(&head["rule_any"]);
    rules.extend(head["rule"].as_str());
    if !rules.is_empty() && !rules.contains(&f.rule.name()) {
        bad.push(format!("{cell}: headline {}", f.rule.name()));
    }
    bad
}

/// Every cell of `expected_ROUND.json` against its expectation: steps (source, count
/// within 1), the region holding most of the steady idle (`regions.top_any`, else each
/// of `regions.kinds` but `steps`), the headline's rule. Fails on a check that fails and
/// is not in `not_yet`, and on an item of `not_yet` that holds now (take it off).
pub(crate) fn every_cell(round: &str, not_yet: &[(&str, &str)]) {
    let want = matrix_json(&format!("expected_{round}"));
    let mut seen = Vec::new();
    let mut report = Vec::new();
    for (cell, w) in want["cells"].as_object().unwrap() {
        let a = analysis(cell);
        let bad = check(cell, w, &a);
        report.push(format!(
            "{cell}: steps {:?} {}, head {}",
            a.steps.source,
            a.steps.count,
            a.findings[0].rule.name()
        ));
        seen.extend(bad);
    }
    println!("{}", report.join("\n"));
    let unexpected: Vec<&String> = seen.iter().filter(|b| !not_yet.iter().any(|(k, _)| k == b)).collect();
    let now_hold: Vec<&str> = not_yet.iter().map(|(k, _)| *k).filter(|k| !seen.iter().any(|b| b == k)).collect();
    assert!(unexpected.is_empty() && now_hold.is_empty(), "fail: {unexpected:#?}\nnow hold: {now_hold:?}");
}

/// Every labelled gap of `labels_ROUND.json`'s nsys cells (a Kineto cell has no OS calls
/// or context switches: its labels are `unknown` by construction) found by lanescope with
/// the (cause, hint) `want` reads from the label; at least `min` checked. Fails on a label
/// that disagrees and is not in `disagree` (cell, gap start), and on one listed that agrees.
pub(crate) fn every_label(
    round: &str,
    min: usize,
    disagree: &[(&str, i64, &str)],
    want: impl Fn(&Value) -> (String, String),
) {
    let labels = matrix_json(&format!("labels_{round}"));
    let (mut bad, mut agree, mut checked) = (Vec::new(), 0, 0);
    for (cell, v) in labels["cells"].as_object().unwrap() {
        let kineto = v["format"].as_str().is_some_and(|f| f.starts_with("kineto"));
        let Some(gaps) = v["gaps"].as_array().filter(|_| !kineto) else { continue };
        let trace = lanescope::load(&matrix_trace(cell)).unwrap();
        let options = Options { min_gap_ns: v["min_gap_ns"].as_i64().unwrap_or(100_000), ..Options::default() };
        let a = analyze(&trace, &options);
        for g in gaps {
            let (start, end) = (g["start_ns"].as_i64().unwrap(), g["end_ns"].as_i64().unwrap());
            checked += 1;
            let at = format!("{cell} [{start}, {end})");
            let Some(found) = a.gaps.iter().find(|x| x.start == start && x.end == end) else {
                bad.push(format!("{at}: not found by lanescope"));
                continue;
            };
            let (cause, hint) = want(g);
            let ok = found.cause.label() == cause && found.hint.label() == hint;
            agree += usize::from(ok);
            let line = format!(
                "{at} ({}): label {cause}/{hint}, lanescope {}/{} ({})",
                g["mechanism"].as_str().unwrap_or_default(),
                found.cause.label(),
                found.hint.label(),
                found.evidence
            );
            println!("{} {line}", if ok { "agree   " } else { "disagree" });
            let known = disagree.iter().any(|&(c, s, _)| c == cell && s == start);
            if ok == known {
                bad.push(format!("{}{line}", if known { "now agrees, take it off DISAGREE: " } else { "" }));
            }
        }
    }
    println!("{agree} of {checked} {round} labels agree");
    assert!(checked >= min, "only {checked} labels checked");
    assert!(bad.is_empty(), "{} of {checked}:\n{}", bad.len(), bad.join("\n"));
}
