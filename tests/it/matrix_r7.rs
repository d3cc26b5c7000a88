//! The seventh round (r7_*), a validation round: loop kinds no earlier round held (timm
//! ResNet-50 fed and starved by torchvision/PIL workers, an asynchronous checkpoint, a periodic
//! gc.collect pause without NVTX, the Hugging Face Trainer with evaluation every 10 steps,
//! Lightning with a validation loop, two fed processes on one GPU, per-step `.item()` logging,
//! a Kineto twin), against `expected_r7.json`, written before the captures, with hand labels
//! (`labels_r7.json`) committed before lanescope read them: what marked the steps and how
//! many, which region holds most of the steady idle (`regions.top_any` where the trace alone
//! cannot tell a loop from a periodic long step), and the headline's rule. The code was not
//! tuned on these captures; what does not hold is to be listed in `NOT_YET` with why, after
//! the first run: the test fails when a listed item comes to hold (take it off) or another
//! stops holding.

use lanescope::{Analysis, Options, RegionKind, StepSource, analyze};
use serde_json::Value;

use crate::util::matrix_trace;

fn expected() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/matrix/expected_r7.json");
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

// Checks that did not hold on the first (and only) run after the code was written, 2026-12-03
// at 9996bb6, with why; nothing was changed to make the others hold.
const NOT_YET: [(&str, &str); 3] = [
    (
        "r7_async_ckpt: headline cuda_memcpy_async",
        "the snapshot steps stall 25-33 ms on the GIL while the writer thread's torch.save truncates the \
         last checkpoint in fopen (labels_r7.json); the periodic region is found but its fix is not priced \
         above the pageable .cpu() copies' finding",
    ),
    ("r7_hf_eval: steps count 44", "44 optimizer steps inferred against 42 (count within 1 asked)"),
    (
        "r7_item_log: headline starvation",
        "gpu_gaps carries no fix of its own (issue 32, item 6); starvation, with the same cause, leads \
         rather than cuda_api_sync: the GIL waits behind the pin-memory thread outweigh the .item() syncs \
         (labels_r7.json)",
    ),
];

#[test]
fn every_seventh_round_cell_against_its_expectation() {
    let want = expected();
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
    let unexpected: Vec<&String> = seen.iter().filter(|b| !NOT_YET.iter().any(|(k, _)| k == b)).collect();
    let now_hold: Vec<&str> = NOT_YET.iter().map(|(k, _)| *k).filter(|k| !seen.iter().any(|b| b == k)).collect();
    assert!(unexpected.is_empty() && now_hold.is_empty(), "fail: {unexpected:#?}\nnow hold: {now_hold:?}");
}
