//! `lanescope diff` over the training-loop variants (pageable -> pinned -> prefetch):
//! every number equals what `report --format json` says of each file (or independent
//! SQL), the JSON shape, the verdict, and the `--fail-if` exit codes.

use std::collections::BTreeSet;

use crate::util::{fixture, lanescope};
use lanescope::Trace;
use lanescope::{Analysis, Options, analyze};
use lanescope::{Diff, DiffRun as Run, DiffStatus as Status, diff};
use serde_json::Value;

const PAIRS: [(&str, &str); 2] = [("pageable.sqlite", "pinned.sqlite"), ("pinned.sqlite", "prefetch.sqlite")];

struct Side {
    trace: Trace,
    analysis: Analysis,
}

impl Side {
    fn load(name: &str) -> Self {
        let trace = lanescope::load(&fixture(name)).unwrap();
        let analysis = analyze(&trace, &Options::default());
        Self { trace, analysis }
    }

    // `report --format json --all-gaps` of this file, as a JSON value.
    fn report(&self) -> Value {
        serde_json::to_value(lanescope::report_json(&self.trace, &self.analysis, true)).unwrap()
    }

    fn run(&self) -> Run<'_> {
        Run { path: &self.trace.meta.path, analysis: &self.analysis }
    }
}

fn diff_of(before: &Side, after: &Side) -> (Diff, Value) {
    let d = diff(before.run(), after.run());
    let v = serde_json::to_value(&d).unwrap();
    (d, v)
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

fn float(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

fn sum(r: &Value, list: &str, field: &str) -> i64 {
    r[list].as_array().unwrap().iter().map(|x| int(&x[field])).sum()
}

fn sql(name: &str, q: &str) -> i64 {
    crate::util::sql_i64(&fixture(name), q)
}

// The overall metrics of one run against its report.
fn check_overall(m: &Value, r: &Value, file: &str) {
    let (t, g) = (&r["trace"], &r["gaps"]);
    let wall = int(&t["steady_end_ns"]) - int(&t["steady_start_ns"]);
    assert_eq!(int(&m["wall_ns"]), wall);
    let step = r["phases"].as_array().unwrap().iter().find(|p| p["name"] == t["step_phase"]).unwrap();
    assert_eq!(m["steps"], step["count"]);
    assert_eq!(m["step_wall_mean_ns"], step["wall_mean_ns"]);
    assert_eq!(int(&m["steady_step_mean_ns"]), wall / (int(&step["count"]) - 1));
    assert_eq!(int(&m["gpu_busy_ns"]), sum(r, "devices", "busy_ns"));
    assert_eq!(int(&m["kernel_ns"]), sum(r, "devices", "kernel_ns"));
    let span = sum(r, "devices", "busy_ns") + sum(r, "devices", "idle_ns");
    assert!(close(float(&m["gpu_busy_pct"]), 100.0 * sum(r, "devices", "busy_ns") as f64 / span as f64));
    assert_eq!(m["idle_ns"], g["total_ns"]);
    assert_eq!(m["gaps"], g["count"]);
    assert_eq!(m["steady"]["idle_ns"], g["steady"]["total_ns"]);
    assert_eq!(m["steady"]["count"], g["steady"]["count"]);
    assert_eq!(m["steady"]["by_cause"], g["steady"]["by_cause"]);
    let transfers = r["transfers"].as_array().unwrap();
    let pageable: i64 = transfers.iter().filter(|x| x["memory"] == "pageable").map(|x| int(&x["count"])).sum();
    assert_eq!(int(&m["pageable_copies"]), pageable);
    let by_sql = sql(file, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE srcKind = 0 OR dstKind = 0");
    assert_eq!(int(&m["pageable_copies"]), by_sql, "{file}: pageable copies against SQL");
    assert_eq!(m["copy_ns"], r["overlap"]["copy_ns"]);
    assert_eq!(m["overlapped_ns"], r["overlap"]["overlapped_ns"]);
    // Copy time with no kernel is the devices' copy-only time.
    assert_eq!(int(&m["exposed_copy_ns"]), sum(r, "devices", "copy_only_ns"));
    let ov = &r["overlap"];
    assert!(close(float(&m["copy_overlap"]), float(&ov["overlapped_ns"]) / float(&ov["copy_ns"])));
    assert_eq!(m["transfers"].as_object().unwrap().len(), transfers.len());
    for x in transfers {
        let k = format!("{}/{}", x["direction"].as_str().unwrap(), x["memory"].as_str().unwrap());
        for f in ["count", "bytes", "busy_ns", "gbps", "max_gbps"] {
            assert_eq!(m["transfers"][&k][f], x[f], "{file}: transfers.{k}.{f}");
        }
    }
    check_idle_pct(m, t, file);
}

// `idle_pct`: steady idle over the steady window clipped to the GPU's first..last
// operation, which comes from SQL (one GPU in these files).
fn check_idle_pct(m: &Value, t: &Value, file: &str) {
    let ops = "SELECT start, \"end\" FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL \
               SELECT start, \"end\" FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL \
               SELECT start, \"end\" FROM CUPTI_ACTIVITY_KIND_MEMSET";
    let first = sql(file, &format!("SELECT min(start) FROM ({ops}) WHERE NOT (start = 0 AND \"end\" = 0)"));
    let last = sql(file, &format!("SELECT max(\"end\") FROM ({ops})"));
    let span = last.min(int(&t["steady_end_ns"])) - first.max(int(&t["steady_start_ns"]));
    assert_eq!(int(&m["steady_span_ns"]), span, "{file}: steady span against SQL");
    assert!(close(float(&m["idle_pct"]), 100.0 * float(&m["steady"]["idle_ns"]) / span as f64));
}

// One phase of one run against the report: every report field, busy %, and its steady
// gap idle from `gaps.all` (gaps whose phase it is, clipped to the steady window).
fn check_phase(m: &Value, name: &str, r: &Value) {
    let p = r["phases"].as_array().unwrap().iter().find(|p| p["name"] == name).unwrap();
    for (k, v) in p.as_object().unwrap() {
        if k != "name" {
            assert_eq!(&m[k], v, "phase {name}: {k}");
        }
    }
    let (busy, idle) = (float(&p["gpu_busy_ns"]), float(&p["idle_ns"]));
    if busy + idle > 0.0 {
        assert!(close(float(&m["gpu_busy_pct"]), 100.0 * busy / (busy + idle)));
    }
    let (s0, s1) = (int(&r["trace"]["steady_start_ns"]), int(&r["trace"]["steady_end_ns"]));
    let mut total = 0;
    for c in r["gaps"]["by_cause"].as_object().unwrap().keys() {
        let part = |g: &&Value| int(&g["end_ns"]).min(s1) - int(&g["start_ns"]).max(s0);
        let gaps: Vec<&Value> = r["gaps"]["all"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|g| g["phase"] == name && g["cause"] == c.as_str())
            .filter(|g| part(g) > 0)
            .collect();
        let t: i64 = gaps.iter().map(part).sum();
        assert_eq!(int(&m["steady"]["by_cause"][c]["total_ns"]), t, "phase {name}: steady {c}");
        assert_eq!(m["steady"]["by_cause"][c]["count"].as_u64().unwrap() as usize, gaps.len());
        total += t;
    }
    assert_eq!(int(&m["steady"]["idle_ns"]), total, "phase {name}: steady idle");
}

// Every delta leaf is AFTER - BEFORE, and that over BEFORE in percent.
fn check_delta(before: &Value, after: &Value, delta: &Value, path: &str) {
    if let Some(d) = delta.as_object().filter(|d| !d.contains_key("abs")) {
        for (k, dv) in d {
            let (b, a) = (before.get(k).unwrap_or(&Value::Null), after.get(k).unwrap_or(&Value::Null));
            check_delta(b, a, dv, &format!("{path}.{k}"));
        }
        return;
    }
    match (before.as_f64(), after.as_f64()) {
        (Some(b), Some(a)) => {
            assert!(close(float(&delta["abs"]), a - b), "{path}");
            if b == 0.0 {
                assert!(delta["pct"].is_null(), "{path}");
            } else {
                assert!(close(float(&delta["pct"]), 100.0 * (a - b) / b.abs()), "{path}");
            }
        }
        _ => assert!(delta.is_null() || delta["abs"].is_null(), "{path}: {delta}"),
    }
}

fn finding_keys(r: &Value) -> BTreeSet<String> {
    let key = |f: &Value| match f["evidence"]["direction"].as_str() {
        Some(d) => format!("{} {d}", f["rule"].as_str().unwrap()),
        None => f["rule"].as_str().unwrap().to_string(),
    };
    r["findings"].as_array().unwrap().iter().map(key).collect()
}

#[test]
fn every_number_equals_the_two_reports() {
    for (b, a) in PAIRS {
        let (sb, sa) = (Side::load(b), Side::load(a));
        let (rb, ra) = (sb.report(), sa.report());
        let (d, v) = diff_of(&sb, &sa);
        check_overall(&v["overall"]["before"], &rb, b);
        check_overall(&v["overall"]["after"], &ra, a);
        check_delta(&v["overall"]["before"], &v["overall"]["after"], &v["overall"]["delta"], "overall");
        let names = |r: &Value| -> BTreeSet<String> {
            r["phases"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap().to_string()).collect()
        };
        let all: BTreeSet<String> = names(&rb).union(&names(&ra)).cloned().collect();
        assert_eq!(d.phases.iter().map(|p| p.name.clone()).collect::<BTreeSet<_>>(), all);
        for (p, pv) in d.phases.iter().zip(v["phases"].as_array().unwrap()) {
            assert_eq!(p.status, Status::Both, "the variants share their phases");
            check_phase(&pv["before"], &p.name, &rb);
            check_phase(&pv["after"], &p.name, &ra);
            check_delta(&pv["before"], &pv["after"], &pv["delta"], &p.name);
        }
        let (kb, ka) = (finding_keys(&rb), finding_keys(&ra));
        let rules = |key: &str| -> BTreeSet<String> {
            v["findings"][key].as_array().unwrap().iter().map(|f| f["rule"].as_str().unwrap().to_string()).collect()
        };
        assert_eq!(rules("gone"), kb.difference(&ka).cloned().collect());
        assert_eq!(rules("stayed"), kb.intersection(&ka).cloned().collect());
        assert_eq!(rules("new"), ka.difference(&kb).cloned().collect());
        assert_eq!(v["before"]["path"], rb["trace"]["path"]);
        assert_eq!(v["after"]["steady_end_ns"], ra["trace"]["steady_end_ns"]);
    }
}

#[test]
fn pinned_removes_the_pageable_copies_sql_sees() {
    let q = "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE srcKind = 0 OR dstKind = 0";
    let (b, a) = (sql("pageable.sqlite", q), sql("pinned.sqlite", q));
    assert!(b > a, "the fixtures are what they claim");
    let (_, v) = diff_of(&Side::load("pageable.sqlite"), &Side::load("pinned.sqlite"));
    assert_eq!(int(&v["overall"]["delta"]["pageable_copies"]["abs"]), a - b);
    assert!(v["verdict"].as_str().unwrap().contains(&format!("pageable copies {b} -> {a}")), "{}", v["verdict"]);
}

// The verdict's step part, recomputed from the two reports' steady windows and step counts.
#[test]
fn verdict_leads_with_step_time_and_names_the_changes() {
    for (b, a) in PAIRS {
        let (sb, sa) = (Side::load(b), Side::load(a));
        let step = |r: &Value| {
            let t = &r["trace"];
            let n = r["phases"].as_array().unwrap().iter().find(|p| p["name"] == t["step_phase"]).unwrap()["count"]
                .as_i64()
                .unwrap();
            (int(&t["steady_end_ns"]) - int(&t["steady_start_ns"])) as f64 / (n - 1) as f64
        };
        let (tb, ta) = (step(&sb.report()), step(&sa.report()));
        let (d, _) = diff_of(&sb, &sa);
        let word = if ta < tb { "faster" } else { "slower" };
        let r = 100.0 * (ta - tb).abs() / tb;
        let pct = if r < 10.0 { format!("{r:.1}%") } else { format!("{r:.0}%") };
        assert!(d.verdict.starts_with(&format!("steps {pct} {word} (")), "{b} -> {a}: {}", d.verdict);
        assert!(d.verdict.contains("steady GPU idle "), "{}", d.verdict);
        assert!(d.verdict.contains("idle in `copy data`"), "{}", d.verdict);
        assert!(!d.verdict.contains('\n'));
    }
}

fn run_diff(b: &str, a: &str, extra: &[&str]) -> std::process::Output {
    lanescope().arg("diff").arg(fixture(b)).arg(fixture(a)).args(extra).output().unwrap()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

#[test]
fn json_has_the_documented_shape() {
    let o = run_diff("pageable.sqlite", "pinned.sqlite", &["--format", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<BTreeSet<_>>();
    let set = |k: &[&str]| k.iter().map(|s| (*s).to_string()).collect::<BTreeSet<_>>();
    assert_eq!(keys(&v), set(&["before", "after", "overall", "phases", "findings", "verdict", "whatif"]));
    let run = set(&["path", "step_phase", "steady_start_ns", "steady_end_ns", "min_gap_ns"]);
    assert_eq!(keys(&v["before"]), run);
    assert_eq!(keys(&v["overall"]), set(&["before", "after", "delta"]));
    for p in v["phases"].as_array().unwrap() {
        assert_eq!(keys(p), set(&["name", "status", "before", "after", "delta"]));
    }
    assert_eq!(keys(&v["findings"]), set(&["gone", "stayed", "new"]));
    let overall = [
        "wall_ns",
        "steps",
        "step_wall_mean_ns",
        "steady_step_mean_ns",
        "gpu_busy_ns",
        "gpu_busy_pct",
        "kernel_ns",
        "idle_ns",
        "gaps",
        "steady",
        "steady_span_ns",
        "idle_pct",
        "pageable_copies",
        "copy_ns",
        "overlapped_ns",
        "exposed_copy_ns",
        "copy_overlap",
        "transfers",
    ];
    assert_eq!(keys(&v["overall"]["after"]), set(&overall));
    assert_eq!(v["overall"]["delta"]["wall_ns"].as_object().unwrap().len(), 2);
    assert!(v["verdict"].as_str().unwrap().starts_with("steps "));
}

#[test]
fn text_fits_100_columns_and_other_formats_run() {
    for (b, a) in PAIRS {
        let o = run_diff(b, a, &[]);
        assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
        let text = String::from_utf8(o.stdout).unwrap();
        assert!(text.starts_with("Verdict: steps "), "the verdict comes first: {text}");
        for line in text.lines() {
            assert!(line.chars().count() <= 100, "{} chars: {line}", line.chars().count());
        }
        for section in ["Overall", "Phase `copy data`", "Findings"] {
            assert!(text.lines().any(|l| l == section), "{section}");
        }
    }
    let csv = run_diff("pinned.sqlite", "prefetch.sqlite", &["--format", "csv"]);
    let csv = String::from_utf8(csv.stdout).unwrap();
    assert_eq!(csv.lines().next(), Some("section,item,metric,before,after,change,change_pct"));
    assert!(csv.lines().any(|l| l.starts_with("overall,,steady.idle_ns,")));
    assert!(csv.lines().any(|l| l.starts_with("phase,copy data,wall_ns,")));
    let md = run_diff("pinned.sqlite", "prefetch.sqlite", &["--format", "md"]);
    let md = String::from_utf8(md.stdout).unwrap();
    assert!(md.starts_with("# lanescope diff\n") && md.contains("## Overall") && md.contains("|:---|---:|"));
}

#[test]
fn bad_input_exits_1_naming_the_file() {
    let o = lanescope().args(["diff", "/nonexistent/before.sqlite"]).arg(fixture("pinned.sqlite")).output().unwrap();
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("/nonexistent/before.sqlite") && err.contains("no such file"), "{err}");
    assert!(o.stdout.is_empty());
}

// Thresholds on both sides of the true value (from the reports and SQL), so the tests
// prove the comparison, not a number lanescope printed.
#[test]
fn fail_if_holds_and_does_not_hold() {
    let q = "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE srcKind = 0 OR dstKind = 0";
    let pageable_after = sql("pinned.sqlite", q);
    let (rb, ra) = (Side::load("pageable.sqlite").report(), Side::load("pinned.sqlite").report());
    let wall = |r: &Value| {
        float(&r["phases"].as_array().unwrap().iter().find(|p| p["name"] == "copy data").unwrap()["wall_ns"])
    };
    let change = 100.0 * (wall(&ra) - wall(&rb)) / wall(&rb);
    let idle = |r: &Value| float(&r["gaps"]["steady"]["total_ns"]);
    let idle_change = 100.0 * (idle(&ra) - idle(&rb)) / idle(&rb);
    let holding = [
        format!("pageable_copies>{}", pageable_after - 1),
        format!("pageable_copies == {pageable_after}"),
        format!("phase:copy data.wall_ns>{:+.0}%", change.floor() - 1.0),
        format!("steady.idle_ns>={:+.0}%", idle_change.floor()),
        format!("transfers.H2D/pageable.count<={pageable_after}"),
    ];
    let not_holding = [
        format!("pageable_copies>{pageable_after}"),
        format!("phase:copy data.wall_ns>{:+.0}%", change.ceil() + 1.0),
        format!("steady.idle_ns<{:+.0}%", idle_change.floor()),
        "idle_pct>100%".to_string(),
        "phase:step N.launched.gpu_ns<0".to_string(),
    ];
    let args = |conds: &[String]| conds.iter().flat_map(|c| ["--fail-if".to_string(), c.clone()]).collect::<Vec<_>>();
    let o = run_diff(
        "pageable.sqlite",
        "pinned.sqlite",
        &args(&not_holding).iter().map(String::as_str).collect::<Vec<_>>(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    for c in &holding {
        let mut all = not_holding.to_vec();
        all.push(c.clone());
        let o =
            run_diff("pageable.sqlite", "pinned.sqlite", &args(&all).iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(o.status.code(), Some(3), "{c}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(err.contains(c.as_str()) && err.contains("after "), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(!o.stdout.is_empty(), "the diff is still printed");
    }
}

#[test]
fn malformed_fail_if_exits_2_naming_the_problem_and_the_metrics() {
    let cases = [
        ("idle_pct", "no comparison"),
        ("idle_pct=3", "not a comparison"),
        ("wall_ns>10%", "*_pct"),
        ("idle_pct>lots", "not a number"),
        ("no_such_metric>1", "unknown metric `no_such_metric`"),
        ("steady>1", "is a group"),
        ("phase:nowhere.wall_ns>1", "no phase"),
        ("phase:copy data.nope>1", "unknown phase field `nope`"),
    ];
    for (expr, what) in cases {
        let o = run_diff("pageable.sqlite", "pinned.sqlite", &["--fail-if", "pageable_copies>1000", "--fail-if", expr]);
        assert_eq!(o.status.code(), Some(2), "{expr}");
        let err = stderr(&o);
        assert!(err.contains(what), "{expr}: {err}");
        assert!(err.contains(expr), "{expr}: names the expression: {err}");
        assert!(o.stdout.is_empty(), "{expr}: nothing printed");
        assert_eq!(err.lines().count(), 1, "{err}");
        for m in ["pageable_copies", "idle_pct", "steady.idle_ns", "phase:NAME.FIELD", "`copy data`", "wall_ns"] {
            assert!(err.contains(m), "lists {m}: {err}");
        }
    }
}
