//! The output contract, pinned: `lanescope report` and `lanescope diff` in every headless
//! format on the fixtures, as insta snapshots of the binary's stdout
//! (`snapshots/it__contract__*.snap`), and README's JSON field tables against the keys those
//! snapshots hold.
//!
//! Each command runs in the folder of its inputs and names them relative to it, so the
//! paths the outputs print are the same on every machine: no snapshot needs a filter.

use std::path::{Path, PathBuf};

use crate::util::{fixture, lanescope, matrix_trace};

/// The committed fixtures' folder.
fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The binary's stdout for `args`, run in `dir`; it must succeed.
fn stdout(dir: &Path, args: &[&str]) -> String {
    let out = lanescope().current_dir(dir).args(args).output().expect("lanescope runs");
    assert!(out.status.success(), "lanescope {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

/// The formats a case is pinned in: every one, or the three that share no code with another.
const ALL: [&str; 4] = ["json", "text", "csv", "md"];
const MAIN: [&str; 3] = ["json", "text", "csv"];

/// Snapshot `lanescope CMD --format F EXTRA.. INPUTS..` in each of `formats` as `CMD_NAME_F`.
fn pin(cmd: &str, name: &str, dir: &Path, inputs: &[&str], extra: &[&str], formats: &[&str]) {
    for f in formats {
        let mut args = vec![cmd, "--format", f];
        args.extend(extra);
        args.extend(inputs);
        insta::assert_snapshot!(format!("{cmd}_{name}_{f}"), stdout(dir, &args));
    }
}

fn report(name: &str, inputs: &[&str], formats: &[&str]) {
    pin("report", name, &fixtures(), inputs, &[], formats);
}

/// A capture of the matrix, by its unpacked file name in the unpacked folder.
fn matrix_report(cell: &str) {
    let path = matrix_trace(cell);
    let (dir, file) = split(&path);
    pin("report", cell, dir, &[file], &[], &MAIN);
}

fn split(path: &Path) -> (&Path, &str) {
    let dir = path.parent().expect("a fixture has a folder");
    (dir, path.file_name().and_then(|f| f.to_str()).expect("a UTF-8 file name"))
}

/// A Kineto fixture without its Python-stack and operator ranges (`python_function` and
/// `cpu_op` events), written as `NAME.json` in `dir`. The captures were made `with_stack`:
/// those ranges are 300-400 phases that make a diff of 3 MB; without them the phases are
/// the `record_function` ranges and `ProfilerStep#N`, and the steps, copies, kernels and
/// findings are those of the full capture.
fn kineto_without_stacks(dir: &Path, name: &str) -> String {
    let packed = fixture(&format!("kineto/{name}.json.gz"));
    let mut v: serde_json::Value =
        serde_json::from_reader(flate2::read::GzDecoder::new(std::fs::File::open(&packed).unwrap())).unwrap();
    let events = v["traceEvents"].as_array_mut().expect("a Kineto trace has traceEvents");
    events.retain(|e| !matches!(e["cat"].as_str(), Some("python_function" | "cpu_op")));
    let file = format!("{name}.json");
    std::fs::write(dir.join(&file), serde_json::to_vec(&v).unwrap()).unwrap();
    file
}

#[test]
fn report_pageable() {
    report("pageable", &["pageable.sqlite"], &ALL);
}

#[test]
fn report_pinned() {
    report("pinned", &["pinned.sqlite"], &MAIN);
}

#[test]
fn report_all_gaps_with_host_data() {
    let path = fixture("pageable_s.sqlite");
    let (dir, file) = split(&path);
    pin("report", "pageable_s_all_gaps", dir, &[file], &["--all-gaps", "--min-gap", "1ms"], &MAIN);
}

#[test]
fn report_prefetch() {
    report("prefetch", &["prefetch.sqlite"], &MAIN);
}

#[test]
fn report_d2h() {
    report("d2h", &["d2h.sqlite"], &MAIN);
}

#[test]
fn report_graphs() {
    report("graphs", &["graphs.sqlite"], &MAIN);
}

#[test]
fn report_multigpu() {
    report("multigpu", &["multigpu.sqlite"], &ALL);
}

#[test]
fn report_kineto() {
    report("kineto_pageable", &["kineto/kineto_pageable.json.gz"], &MAIN);
}

#[test]
fn report_kineto_ranks() {
    let d = tempfile::tempdir().unwrap();
    let ranks = [kineto_without_stacks(d.path(), "rank0"), kineto_without_stacks(d.path(), "rank1")];
    pin("report", "kineto_ranks", d.path(), &[&ranks[0], &ranks[1]], &[], &MAIN);
}

#[test]
fn report_two_exports_as_ranks() {
    report("pageable_pinned_ranks", &["pageable.sqlite", "pinned.sqlite"], &ALL);
}

#[test]
fn report_straggler() {
    let d = tempfile::tempdir().unwrap();
    let files = crate::ranks::two_ranks(d.path(), true);
    let names: Vec<&str> = files.iter().map(|f| split(f).1).collect();
    pin("report", "straggler", d.path(), &names, &[], &MAIN);
}

#[test]
fn report_matrix_fetch() {
    matrix_report("w2_c16_fetch");
}

#[test]
fn report_matrix_sleep() {
    matrix_report("v_sleep8");
}

#[test]
fn diff_pageable_pinned() {
    pin("diff", "pageable_pinned", &fixtures(), &["pageable.sqlite", "pinned.sqlite"], &[], &ALL);
}

#[test]
fn diff_pinned_pageable() {
    // The reverse of the first: its findings are new, not gone.
    pin("diff", "pinned_pageable", &fixtures(), &["pinned.sqlite", "pageable.sqlite"], &[], &["json", "text"]);
}

#[test]
fn diff_pinned_prefetch() {
    pin("diff", "pinned_prefetch", &fixtures(), &["pinned.sqlite", "prefetch.sqlite"], &[], &ALL);
}

#[test]
fn diff_kineto() {
    let d = tempfile::tempdir().unwrap();
    let runs = [kineto_without_stacks(d.path(), "step_pageable"), kineto_without_stacks(d.path(), "step_prefetch")];
    pin("diff", "kineto", d.path(), &[&runs[0], &runs[1]], &[], &ALL);
}
