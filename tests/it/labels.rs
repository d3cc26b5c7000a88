//! lanescope against gaps labelled by hand from the raw rows (tests/fixtures/labels/,
//! made without running lanescope; see its README). Every labelled gap must be found
//! with the same bounds, cause, phase and window, and the step phase and the steady
//! window must match the labels. Labels of public exports (never committed) are read
//! from `.labels-public/` when present, with the exports from `../shared/traces/public`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lanescope::{Analysis, Options, analyze};
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

// (label file, trace file) pairs: committed labels of committed fixtures, then local
// labels of public exports when both exist.
fn label_sets() -> Vec<(PathBuf, PathBuf)> {
    let mut out = Vec::new();
    let dirs = [
        (root().join("tests/fixtures/labels"), root().join("tests/fixtures")),
        (root().join("tests/fixtures/matrix/labels"), root().join("tests/fixtures/matrix")),
        (root().join(".labels-public"), root().join("../shared/traces/public")),
    ];
    for (labels, traces) in dirs {
        let Ok(rd) = std::fs::read_dir(&labels) else { continue };
        let mut files: Vec<PathBuf> = rd
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        for f in files {
            let v = read(&f);
            let trace = traces.join(v["trace"].as_str().expect("trace name"));
            if trace.exists() {
                out.push((f, trace));
            } else if let Some(rel) = packed_fixture(&trace) {
                out.push((f, crate::util::fixture(&rel)));
            } else {
                eprintln!("skipping {}: {} is absent", f.display(), trace.display());
            }
        }
    }
    out
}

// The fixture name (relative to tests/fixtures) of `trace` when only its compressed
// copy (`.xz`) is committed.
fn packed_fixture(trace: &Path) -> Option<String> {
    let rel = trace.strip_prefix(root().join("tests/fixtures")).ok()?.to_str()?.to_string();
    PathBuf::from(format!("{}.xz", trace.display())).exists().then_some(rel)
}

fn read(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

// Disagreements between one label file and lanescope, as lines.
fn check(labels: &Value, a: &Analysis, file: &str) -> Vec<String> {
    let mut bad = Vec::new();
    let want_step = labels["step_phase"].as_str();
    if want_step != a.step_phase.as_deref() {
        bad.push(format!("{file}: step phase {want_step:?}, lanescope {:?}", a.step_phase));
    }
    if let Some(w) = labels["windows"].as_object() {
        let got = (a.windows.steady_start, a.windows.steady_end);
        let want = (w["startup_end_ns"].as_i64().unwrap(), w["steady_end_ns"].as_i64().unwrap());
        if got != want {
            bad.push(format!("{file}: steady window {want:?}, lanescope {got:?}"));
        }
    }
    for g in labels["gaps"].as_array().unwrap() {
        let (dev, start, end) =
            (g["device"].as_u64().unwrap() as u32, g["start_ns"].as_i64().unwrap(), g["end_ns"].as_i64().unwrap());
        let at = format!("{file}: gap GPU {dev} [{start}, {end})");
        let Some(found) = a.gaps.iter().find(|x| x.device == dev && x.start == start && x.end == end) else {
            bad.push(format!("{at}: not found by lanescope"));
            continue;
        };
        let want_cause = g["cause"].as_str().unwrap();
        if found.cause.label() != want_cause {
            bad.push(format!("{at}: cause {want_cause}, lanescope {} ({})", found.cause.label(), found.evidence));
        }
        let want_phase = g["phase"].as_str();
        if found.phase.as_deref() != want_phase {
            bad.push(format!("{at}: phase {want_phase:?}, lanescope {:?}", found.phase));
        }
        let want_window = g["window"].as_str().unwrap();
        if found.window.label() != want_window {
            bad.push(format!("{at}: window {want_window}, lanescope {}", found.window.label()));
        }
        if let Some(h) = g["hint"].as_str()
            && found.hint.label() != h
        {
            bad.push(format!("{at}: hint {h}, lanescope {} ({})", found.hint.label(), found.evidence));
        }
    }
    bad
}

#[test]
fn lanescope_agrees_with_every_hand_label() {
    let sets = label_sets();
    assert!(sets.len() >= 5, "the committed label files are missing");
    let mut bad = Vec::new();
    let mut by_cause: BTreeMap<String, usize> = BTreeMap::new();
    for (labels, trace) in &sets {
        let v = read(labels);
        let t = lanescope::load(trace).unwrap();
        let options = Options { min_gap_ns: v["min_gap_ns"].as_i64().unwrap_or(100_000), ..Options::default() };
        let a = analyze(&t, &options);
        for g in v["gaps"].as_array().unwrap() {
            *by_cause.entry(g["cause"].as_str().unwrap().to_string()).or_default() += 1;
        }
        bad.extend(check(&v, &a, &labels.file_name().unwrap().to_string_lossy()));
    }
    let n: usize = by_cause.values().sum();
    eprintln!("{n} labelled gaps: {by_cause:?}");
    assert!(bad.is_empty(), "{} disagreements:\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn the_matrix_has_forty_labels_over_every_cell() {
    let dir = root().join("tests/fixtures/matrix/labels");
    let (mut n, mut cells, mut causes) = (0, 0, std::collections::BTreeSet::new());
    for e in std::fs::read_dir(dir).unwrap().filter_map(Result::ok) {
        if e.path().extension().is_some_and(|x| x == "json") {
            cells += 1;
            for g in read(&e.path())["gaps"].as_array().unwrap() {
                n += 1;
                causes.insert(g["cause"].as_str().unwrap().to_string());
            }
        }
    }
    assert!(n >= 40 && cells >= 15, "{n} labelled gaps in {cells} cells");
    for c in ["worker-busy", "cpu-contention", "io-wait", "host-wait", "host-busy", "launch-bound"] {
        assert!(causes.contains(c), "no matrix label of cause {c}: {causes:?}");
    }
}

#[test]
fn the_committed_corpus_has_forty_gaps_and_every_steady_cause() {
    let dir = root().join("tests/fixtures/labels");
    let mut n = 0;
    let mut causes = std::collections::BTreeSet::new();
    for e in std::fs::read_dir(dir).unwrap().filter_map(Result::ok) {
        if e.path().extension().is_some_and(|x| x == "json") {
            for g in read(&e.path())["gaps"].as_array().unwrap() {
                n += 1;
                causes.insert(g["cause"].as_str().unwrap().to_string());
            }
        }
    }
    assert!(n >= 40, "{n} labelled gaps");
    for c in ["sync-drain", "host-wait", "host-busy", "pageable-copy"] {
        assert!(causes.contains(c), "no label of cause {c}: {causes:?}");
    }
}
