//! The capture matrix (tests/fixtures/matrix/): every cell's headline (the first finding)
//! against the expectation written in `expected.json` from how the cell was built, before
//! lanescope read the traces; and the Python sampler's marks against SQL.

use lanescope::{Analysis, Fix, Options, Rule, analyze};
use serde_json::Value;

use crate::util::{fixture, matrix_trace, sql_i64};

fn expected_in(file: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixture(&format!("matrix/{file}"))).unwrap()).unwrap()
}

fn analysis(cell: &str) -> Analysis {
    analyze(&lanescope::load(&matrix_trace(cell)).unwrap(), &Options::default())
}

// The cause a finding names: its evidence's dominant cause, or what its rule is about.
fn cause_of(f: &lanescope::Finding) -> Option<String> {
    if let Some((_, v)) = f.evidence.iter().find(|(k, _)| k == "dominant_cause") {
        return Some(v.clone());
    }
    match f.rule {
        Rule::CudaMemcpyAsync | Rule::CudaMemcpySync | Rule::PageableBandwidth => Some("pageable-copy".into()),
        Rule::LaunchBound => Some("launch-bound".into()),
        _ => None,
    }
}

// The phase holding most of the steady time of `cause`'s gaps.
fn phase_of(a: &Analysis, cause: &str) -> Option<String> {
    let mut by: std::collections::BTreeMap<Option<&str>, i64> = std::collections::BTreeMap::new();
    for g in a.gaps.iter().filter(|g| g.cause.label() == cause) {
        *by.entry(g.phase.as_deref()).or_default() += a.windows.steady_part(g.start, g.end);
    }
    by.into_iter().max_by_key(|&(_, t)| t).and_then(|(p, _)| p.map(str::to_string))
}

fn strs(v: &Value) -> Vec<&str> {
    v.as_array().map(|a| a.iter().filter_map(Value::as_str).collect()).unwrap_or_default()
}

// What is wrong with one cell's headline, as lines.
fn check(cell: &str, want: &Value, a: &Analysis) -> Vec<String> {
    let mut bad = Vec::new();
    let Some(f) = a.findings.first() else { return vec![format!("{cell}: no finding")] };
    let head = format!("{cell}: headline [{}] {} ({:?})", f.severity.label(), f.rule, cause_of(f));
    if let Some(c) = want["cause"].as_str() {
        if cause_of(f).as_deref() != Some(c) {
            bad.push(format!("{head}: cause should be {c}: {}", f.message));
        }
        if let Some(p) = want["phase"].as_str()
            && phase_of(a, c).as_deref() != Some(p)
        {
            bad.push(format!("{head}: phase should be {p}, the gaps say {:?}", phase_of(a, c)));
        }
    }
    if let Some(r) = want["rule"].as_str()
        && f.rule.name() != r
    {
        bad.push(format!("{head}: rule should be {r}"));
    }
    let any = strs(&want["rule_any"]);
    if !any.is_empty() && !any.contains(&f.rule.name()) {
        bad.push(format!("{head}: rule should be one of {any:?}"));
    }
    for words in want["fix"].as_array().into_iter().flatten() {
        let words = strs(words);
        if !words.iter().any(|w| f.fix_text().contains(w)) {
            bad.push(format!("{head}: fix should say one of {words:?}: {}", f.fix_text()));
        }
    }
    for w in strs(&want["not_fix"]) {
        if f.fix_text().contains(w) {
            bad.push(format!("{head}: fix must not say {w:?}: {}", f.fix_text()));
        }
    }
    if let Some(s) = want["severity"].as_str()
        && f.severity.label() != s
    {
        bad.push(format!("{head}: severity should be {s}"));
    }
    if let Some(s) = want["max_severity"].as_str() {
        let rank = |l: &str| ["info", "warning", "critical"].iter().position(|x| *x == l);
        if rank(f.severity.label()) > rank(s) {
            bad.push(format!("{head}: severity should be at most {s}"));
        }
    }
    for r in strs(&want["not_rule_at_least_warning"]) {
        if a.findings.iter().any(|x| x.rule.name() == r && x.severity >= lanescope::Severity::Warning) {
            bad.push(format!("{cell}: {r} must be at most info"));
        }
    }
    for words in want["some_fix"].as_array().into_iter().flatten() {
        let words = strs(words);
        if !a.findings.iter().any(|x| words.iter().any(|w| x.fix_text().contains(w))) {
            bad.push(format!("{cell}: no finding's fix says one of {words:?}"));
        }
    }
    bad.extend(check_copies(cell, want, a));
    for r in strs(&want["not_rule_critical"]) {
        if a.findings.iter().any(|x| x.rule.name() == r && x.severity == lanescope::Severity::Critical) {
            bad.push(format!("{cell}: {r} must not be critical"));
        }
    }
    bad
}

// The copy verdicts and PCIe RX of the phases the cell names (GPU-metrics cells).
fn check_copies(cell: &str, want: &Value, a: &Analysis) -> Vec<String> {
    let mut bad = Vec::new();
    let phase = |name: &str| a.phases.iter().find(|p| p.name == name);
    for (name, v) in want["copy_verdict"].as_object().into_iter().flatten() {
        let got = phase(name).map(|p| p.copy_verdict.label());
        if got != v.as_str() {
            bad.push(format!("{cell}: phase {name} copy verdict {got:?}, expected {v}"));
        }
    }
    for (name, v) in want["rx_during_h2d_at_least"].as_object().into_iter().flatten() {
        let got = phase(name).and_then(|p| p.pcie).and_then(|x| x.rx_pct_during_h2d);
        if got.is_none_or(|g| g < v.as_f64().unwrap()) {
            bad.push(format!("{cell}: phase {name} RX during H2D {got:?}, expected at least {v}"));
        }
    }
    bad
}

// Check every cell of `file` whose capture is committed; at least `at_least` must be.
fn check_all(file: &str, at_least: usize) {
    check_all_but(file, at_least, &[]);
}

// As `check_all`, but the cells in `known` (cell, why) must disagree: the test fails when
// one of them comes to agree (take it off) or another cell stops agreeing.
fn check_all_but(file: &str, at_least: usize, known: &[(&str, &str)]) {
    let e = expected_in(file);
    let cells = e["cells"].as_object().unwrap();
    let present: Vec<_> = cells.iter().filter(|(c, _)| fixture(&format!("matrix/{c}.sqlite.xz")).exists()).collect();
    assert!(present.len() >= at_least, "{} of {} cells have a committed capture", present.len(), cells.len());
    let mut bad = Vec::new();
    for (cell, want) in present {
        let miss = check(cell, want, &analysis(cell));
        match (known.iter().any(|(k, _)| k == cell), miss.is_empty()) {
            (true, true) => bad.push(format!("{cell} now agrees: take it off the known misses")),
            (false, false) => bad.extend(miss),
            _ => {}
        }
    }
    assert!(bad.is_empty(), "{} disagreements:\n{}", bad.len(), bad.join("\n"));
}

#[test]
fn every_cell_headline_matches_the_expectation_written_before_the_run() {
    check_all("expected.json", 15);
}

#[test]
fn every_validation_cell_headline_matches_its_expectation() {
    // Captured after the mechanisms were written, with the expectations committed first.
    // One cell's headline moved with a later mechanism and the raw rows side with it.
    const KNOWN: [(&str, &str); 1] = [(
        "v_resnet_pageable_b32",
        "headline launch_bound (warning), whose fix starts with the expectation's own: pinned copies with \
         non_blocking=True, to remove the blocking syncs. From the rows (SQL, 2026-12-03): the steady window \
         (second `step N` to the last one's end) is 478 ms; its 22 pageable HtoD copies take 40.7 ms (8.5%), \
         the holes under 100 µs between its 731 kernels a step 152.8 ms (32%), gaps of 100 µs or more 96.2 ms. \
         The pinned fix had led only because one steady gap waited on a pageable copy's sync; it now leads \
         among unpriced fixes where such waits hold more of the steady idle than any other cause \
         (r11_embed_cpu: a sliver of them beside 53 ms a step of host work)",
    )];
    check_all_but("expected_validation.json", 11, &KNOWN);
}

#[test]
fn every_gpu_metrics_cell_matches_its_expectation() {
    // Written before the capture; `after_the_run` in the file says where the build of a
    // cell differed from what was written, and the cell's fields were corrected there.
    check_all("expected_gpu.json", 10);
}

#[test]
fn every_committed_third_round_cell_matches_its_expectation() {
    // Real torchvision transforms, Hugging Face tokenizers, ResNet-18; three of the six
    // captures are committed (expected_r3.json says what the others gave).
    check_all("expected_r3.json", 3);
}

#[test]
fn every_fourth_round_cell_matches_its_expectation() {
    // Fourteen cells with numbers and combinations no earlier round used, expectations
    // committed before the capture (5e141aa).
    check_all("expected_r4.json", 14);
}

#[test]
fn every_fifth_round_cell_matches_its_expectation() {
    // Loading on the main thread, workers as many as the CPUs, storage on few CPUs, two
    // causes in one loop, ResNet-50 starved and fed; expectations committed before the
    // capture (066c5b1, 1da816f). Two cells whose premise the capture did not build are
    // not committed (`after_the_run` in the file).
    check_all("expected_r5.json", 13);
}

#[test]
fn no_cell_starved_by_full_cpus_or_a_sleep_is_told_that_more_workers_help() {
    // A contention headline's fix says workers beyond the usable CPUs only contend, and a
    // sleep is the loop's own pacing: a what-if pricing more workers would point the other
    // way (the cause each cell was built with, from every round's expectations).
    let mut bad = Vec::new();
    let mut checked = 0;
    for file in
        ["expected.json", "expected_validation.json", "expected_r3.json", "expected_r4.json", "expected_r5.json"]
    {
        let e = expected_in(file);
        for (cell, want) in e["cells"].as_object().unwrap() {
            let sleep = want["fix"].to_string().contains("sleep");
            if !(want["cause"] == "cpu-contention" || sleep) || !fixture(&format!("matrix/{cell}.sqlite.xz")).exists() {
                continue;
            }
            checked += 1;
            let a = analysis(cell);
            let f = &a.findings[0];
            if f.evidence.iter().any(|(k, v)| k == "whatif_fix" && v == "more_workers") {
                bad.push(format!("{cell}: the headline's what-if is more_workers"));
            }
            if a.whatif.iter().any(|w| w.fix == Fix::MoreWorkers && w.saving_per_step_ns > 0) {
                bad.push(format!("{cell}: the what-ifs price more workers"));
            }
        }
    }
    assert!(checked >= 10, "{checked} cells checked");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn python_sampler_marks_are_counted_and_kept_out_of_the_nvtx_lanes() {
    let path = matrix_trace("w0_mainpy");
    let want = sql_i64(
        &path,
        "SELECT count(*) FROM NVTX_EVENTS e WHERE e.eventType = 34 AND e.domainId IN \
         (SELECT domainId FROM NVTX_EVENTS WHERE eventType = 75 AND text = 'Python Periodic Sampling')",
    );
    assert!(want > 1000, "{want} sampler marks");
    let t = lanescope::load(&path).unwrap();
    assert_eq!(t.host.python_samples as i64, want);
    let marks: usize =
        t.lanes.iter().filter(|l| matches!(l.kind, lanescope::LaneKind::NvtxMarks { .. })).map(|l| l.ev.len()).sum();
    let other = sql_i64(&path, "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 34") - want;
    assert_eq!(marks as i64, other);
    // info says sampling was on and does not ask for it.
    let out = crate::util::lanescope().args(["info", "--format", "json"]).arg(&path).output().unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["host"]["python_samples"].as_i64(), Some(want));
    assert!(!v["host"]["missing"].to_string().contains("python-sampling"), "{}", v["host"]["missing"]);
}

#[test]
fn a_fed_loop_s_start_up_is_not_its_headline() {
    // Two fed loops (a prefetching copy loop, ResNet-50 from 8 quick workers) whose captures
    // are mostly start-up: the GPU's low-utilisation region is one-time start-up, so it is
    // told as such, at info, with a start-up fix. The steady window comes from the NVTX
    // step ranges by SQL.
    for cell in ["g_prefetch", "r5_rn50_pinned_w8_cpu1_b64"] {
        let path = matrix_trace(cell);
        let steady = sql_i64(
            &path,
            "SELECT (SELECT MAX(\"end\") FROM NVTX_EVENTS WHERE text LIKE 'step %') - \
             (SELECT start FROM NVTX_EVENTS WHERE text LIKE 'step %' ORDER BY start LIMIT 1 OFFSET 1)",
        );
        let a = analysis(cell);
        let f = a.findings.iter().find(|f| f.rule.name() == "gpu_time_util").expect(cell);
        let ev = |k: &str| f.evidence.iter().find(|(n, _)| n == k).map(|(_, v)| v.parse::<i64>().unwrap()).unwrap();
        assert!(2 * steady < ev("worst_dur_ns"), "{cell}: the steady window ({steady} ns) is not short");
        assert_eq!(f.severity, lanescope::Severity::Info, "{cell}");
        assert!(
            f.fix_text().contains("start-up") && f.fix_text().contains("--capture-range"),
            "{cell}: {}",
            f.fix_text()
        );
        assert!(2 * ev("worst_outside_steady_ns") > ev("worst_dur_ns"), "{cell}");
        assert_ne!(a.findings[0].rule, Rule::GpuTimeUtil, "{cell}");
    }
}
