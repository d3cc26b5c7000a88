//! The output contract, pinned: `lanescope report` and `lanescope diff` in every headless
//! format on the fixtures, as insta snapshots of the binary's stdout
//! (`snapshots/it__contract__*.snap`), and docs/json.md's JSON field tables against the keys those
//! snapshots hold.
//!
//! Each command runs in the folder of its inputs and names them relative to it, so the
//! paths the outputs print are the same on every machine: no snapshot needs a filter.

use std::path::{Path, PathBuf};

use crate::util::{fixture, fixture_dir, lanescope, matrix_trace};

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
    // Exports run among the unpacked ones (some are kept packed), other inputs in place.
    let dir = if inputs.iter().all(|i| i.ends_with(".sqlite")) { fixture_dir() } else { fixtures() };
    pin("report", name, &dir, inputs, &[], formats);
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
fn report_two_processes_on_one_gpu() {
    // `devices[].processes[]` and `shared_gpu` (issue 32, item 4); JSON only.
    let path = matrix_trace("r6_two_procs");
    let (dir, file) = split(&path);
    pin("report", "r6_two_procs", dir, &[file], &[], &["json"]);
}

#[test]
fn report_gpu_metrics() {
    // PCIe means, copy verdicts, `gpu_metrics` and the what-ifs.
    matrix_report("g_pinned");
}

#[test]
fn diff_gpu_metrics_pin_memory() {
    // The two are unpacked into one folder, so they are named as siblings.
    let (b, a) = (matrix_trace("g_pageable"), matrix_trace("g_pinned"));
    let (dir, before) = split(&b);
    assert_eq!(a.parent(), Some(dir));
    pin("diff", "gpu_metrics_pin", dir, &[before, split(&a).1], &[], &["json", "text"]);
}

#[test]
fn diff_pageable_pinned() {
    pin("diff", "pageable_pinned", &fixture_dir(), &["pageable.sqlite", "pinned.sqlite"], &[], &ALL);
}

#[test]
fn diff_pinned_pageable() {
    // The reverse of the first: its findings are new, not gone.
    pin("diff", "pinned_pageable", &fixture_dir(), &["pinned.sqlite", "pageable.sqlite"], &[], &["json", "text"]);
}

#[test]
fn diff_pinned_prefetch() {
    pin("diff", "pinned_prefetch", &fixture_dir(), &["pinned.sqlite", "prefetch.sqlite"], &[], &ALL);
}

#[test]
fn diff_kineto() {
    let d = tempfile::tempdir().unwrap();
    let runs = [kineto_without_stacks(d.path(), "step_pageable"), kineto_without_stacks(d.path(), "step_prefetch")];
    pin("diff", "kineto", d.path(), &[&runs[0], &runs[1]], &[], &ALL);
}

// docs/json.md's field tables against the snapshots.
//
// A table follows a marker line `<!-- json fields: CMD ... -->` or `<!-- json metrics: CMD
// PREFIX... -->`. In a fields table, each row's first cell names objects (backticked
// paths, `[]` after an array; no path: the document itself) and its second cell their
// fields. In a metrics table, the first cell holds metric paths under each PREFIX. Names
// are the backticked words outside parentheses; an upper-case name (`CAUSE`, `KEY`,
// `DIR/MEMORY`) stands for any key of an object whose keys are data.

/// A key path: object keys, `NAME[]` for the elements of an array.
type KeyPath = Vec<String>;

/// The JSON documents of the snapshots of `cmd` in JSON.
fn json_snapshots(cmd: &str) -> Vec<serde_json::Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/snapshots");
    let prefix = format!("it__contract__{cmd}_");
    let mut docs = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with(&prefix) && name.ends_with("_json.snap") {
            let text = std::fs::read_to_string(&path).unwrap();
            // insta's header is a block between two `---` lines.
            let body = text.splitn(3, "---\n").nth(2).unwrap_or_else(|| panic!("{name}: no insta header"));
            docs.push(serde_json::from_str(body).unwrap_or_else(|e| panic!("{name}: {e}")));
        }
    }
    assert!(docs.len() >= 3, "few JSON snapshots of {cmd} in {}", dir.display());
    docs
}

/// Every key path of `v` under `at`, not descending into the objects at `opaque`.
fn key_paths(v: &serde_json::Value, at: &KeyPath, opaque: &[&str], out: &mut std::collections::BTreeSet<KeyPath>) {
    let Some(m) = v.as_object() else { return };
    if opaque.contains(&at.join(".").as_str()) {
        return;
    }
    for (k, x) in m {
        let mut p = at.clone();
        p.push(k.clone());
        out.insert(p.clone());
        match x {
            serde_json::Value::Array(items) => {
                *p.last_mut().unwrap() = format!("{k}[]");
                for item in items {
                    key_paths(item, &p, opaque, out);
                }
            }
            _ => key_paths(x, &p, opaque, out),
        }
    }
}

/// The backticked words of a docs/json.md cell that are not inside parentheses.
fn names(cell: &str) -> Vec<String> {
    let (mut out, mut depth, mut word): (Vec<String>, usize, Option<String>) = (Vec::new(), 0, None);
    for c in cell.chars() {
        match (&mut word, c) {
            (Some(w), '`') => {
                if depth == 0 {
                    out.push(std::mem::take(w));
                }
                word = None;
            }
            (Some(w), c) => w.push(c),
            (None, '`') => word = Some(String::new()),
            (None, '(') => depth += 1,
            (None, ')') => depth = depth.saturating_sub(1),
            (None, _) => {}
        }
    }
    out
}

fn segments(path: &str) -> KeyPath {
    path.split('.').map(str::to_string).collect()
}

/// The key paths docs/json.md's tables for `cmd` document (with placeholders).
fn documented(readme: &str, cmd: &str) -> std::collections::BTreeSet<KeyPath> {
    let mut out = std::collections::BTreeSet::new();
    let mut tables = 0;
    let mut lines = readme.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(spec) = line.strip_prefix("<!-- json ") else { continue };
        let words: Vec<&str> = spec.split(['(', '-']).next().unwrap_or("").split_whitespace().collect();
        let (kind, args) = match words.as_slice() {
            [kind, c, args @ ..] if *c == cmd => (*kind, args),
            _ => continue,
        };
        tables += 1;
        // The table: its header and rule, then the rows.
        let rows: Vec<&str> = std::iter::from_fn(|| lines.next_if(|l| l.starts_with('|'))).skip(2).collect();
        assert!(!rows.is_empty(), "docs/json.md: no table after `{line}`");
        for row in rows {
            let cells: Vec<&str> = row.split('|').collect();
            assert!(cells.len() == 4 && !row.contains("\\|"), "docs/json.md: a row of two cells: {row}");
            for (object, field) in table_row(kind, args, cells[1], cells[2]) {
                out.insert([object, field].concat());
            }
        }
    }
    assert!(tables > 0, "docs/json.md has no `<!-- json ... {cmd} -->` table");
    out
}

/// The (object, field) pairs of one row of a `fields:` or `metrics:` table.
fn table_row(kind: &str, prefixes: &[&str], first: &str, second: &str) -> Vec<(KeyPath, KeyPath)> {
    match kind {
        "fields:" => {
            let objects: Vec<KeyPath> = names(first).iter().map(|o| segments(o)).collect();
            let objects = if objects.is_empty() { vec![Vec::new()] } else { objects };
            objects.iter().flat_map(|o| names(second).into_iter().map(move |f| (o.clone(), vec![f]))).collect()
        }
        // A metric path documents its leaf and the objects on the way there.
        "metrics:" => prefixes
            .iter()
            .flat_map(|p| names(first).into_iter().map(move |m| (segments(p), segments(&m))))
            .flat_map(|(p, m)| (1..=m.len()).map(move |i| (p.clone(), m[..i].to_vec())))
            .collect(),
        _ => panic!("docs/json.md: `<!-- json {kind}` is neither `fields:` nor `metrics:`"),
    }
}

/// A documented segment against a key: the same, or a placeholder for any key.
fn segment_matches(doc: &str, key: &str) -> bool {
    let (d, d_arr) = doc.strip_suffix("[]").map_or((doc, false), |d| (d, true));
    let (k, k_arr) = key.strip_suffix("[]").map_or((key, false), |k| (k, true));
    let placeholder =
        d.chars().any(|c| c.is_ascii_uppercase()) && d.chars().all(|c| c.is_ascii_uppercase() || c == '/' || c == '_');
    d_arr == k_arr && (d == k || placeholder)
}

fn path_matches(doc: &KeyPath, key: &KeyPath) -> bool {
    doc.len() == key.len() && doc.iter().zip(key).all(|(d, k)| segment_matches(d, k))
}

/// docs/json.md's tables for `cmd` list exactly the key paths of its JSON snapshots.
fn readme_lists_exactly_the_keys(cmd: &str, opaque: &[&str]) {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/json.md")).unwrap();
    let doc = documented(&readme, cmd);
    let mut keys = std::collections::BTreeSet::new();
    for v in json_snapshots(cmd) {
        key_paths(&v, &Vec::new(), opaque, &mut keys);
    }
    let show = |v: Vec<&KeyPath>| v.iter().map(|p| p.join(".")).collect::<Vec<_>>().join("\n  ");
    let missing: Vec<&KeyPath> = keys.iter().filter(|k| !doc.iter().any(|d| path_matches(d, k))).collect();
    let extra: Vec<&KeyPath> = doc.iter().filter(|d| !keys.iter().any(|k| path_matches(d, k))).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/json.md's `{cmd}` JSON tables differ from the snapshots.\nIn the output, not in docs/json.md:\n  {}\n\
         In docs/json.md, in no snapshot:\n  {}",
        show(missing),
        show(extra)
    );
}

#[test]
fn readme_lists_the_report_keys() {
    readme_lists_exactly_the_keys("report", &[]);
}

#[test]
fn readme_lists_the_diff_keys() {
    // `delta` mirrors the metrics (checked below), so docs/json.md describes it in words.
    readme_lists_exactly_the_keys("diff", &["overall.delta", "phases[].delta"]);
}

/// The numeric (true) and null (false) leaves of a metrics object, by dotted path.
fn leaves(v: &serde_json::Value, at: &str, out: &mut std::collections::BTreeMap<String, bool>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                leaves(x, &if at.is_empty() { k.clone() } else { format!("{at}.{k}") }, out);
            }
        }
        // Text leaves (`copy_verdict`) have no number in either run: their delta is null.
        serde_json::Value::Number(_) | serde_json::Value::Null | serde_json::Value::String(_) if !at.is_empty() => {
            *out.entry(at.to_string()).or_default() |= v.is_number();
        }
        _ => {}
    }
}

#[test]
fn diff_deltas_have_abs_and_pct_where_either_run_has_a_number() {
    for d in json_snapshots("diff") {
        let phases = d["phases"].as_array().unwrap().iter();
        for c in std::iter::once(&d["overall"]).chain(phases) {
            let mut runs = std::collections::BTreeMap::new();
            leaves(&c["before"], "", &mut runs);
            leaves(&c["after"], "", &mut runs);
            let want: std::collections::BTreeSet<String> = runs
                .iter()
                .flat_map(
                    |(l, &number)| if number { vec![format!("{l}.abs"), format!("{l}.pct")] } else { vec![l.clone()] },
                )
                .collect();
            let mut got = std::collections::BTreeMap::new();
            leaves(&c["delta"], "", &mut got);
            assert_eq!(got.into_keys().collect::<std::collections::BTreeSet<_>>(), want, "delta of {}", c["name"]);
        }
    }
}
