//! The headless report: the JSON contract's keys, the text, Markdown and CSV layouts,
//! and that names from a trace cannot drive the terminal.

use std::collections::BTreeSet;

use crate::util::fixture;
use lanescope::{Analysis, Options, analyze};
use lanescope::{ApiKind, Events, Lane, LaneKind, Strings, Trace};
use lanescope::{Format, sanitize, write_report as write};
use serde_json::Value;

fn render(t: &Trace, a: &Analysis, f: Format) -> String {
    let mut out = Vec::new();
    write(&mut out, t, a, f).unwrap();
    String::from_utf8(out).unwrap()
}

fn load(name: &str) -> (Trace, Analysis) {
    let t = lanescope::load(&fixture(name)).unwrap();
    let a = analyze(&t, &Options::default());
    (t, a)
}

fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object().unwrap_or_else(|| panic!("not an object: {v}")).keys().map(String::as_str).collect()
}

// The JSON keys are the contract snapshots' (tests/it/contract.rs): no list of them here.
#[test]
fn json_lists_the_longest_gaps_and_with_all_gaps_every_gap_in_start_order() {
    let (t, a) = load("pageable.sqlite");
    let v: Value = serde_json::from_str(&render(&t, &a, Format::Json)).unwrap();
    assert_eq!(v["trace"]["step_phase"], "step N");
    assert_eq!(v["trace"]["gpus"][0]["name"], "NVIDIA H200");
    let top = v["gaps"]["top"].as_array().unwrap();
    assert_eq!(top.len(), 20.min(a.gaps.len()));
    let mut out = Vec::new();
    lanescope::write_report_with(&mut out, &t, &a, Format::Json, true).unwrap();
    let all: Value = serde_json::from_slice(&out).unwrap();
    let all = all["gaps"]["all"].as_array().unwrap();
    assert_eq!(all.len(), a.gaps.len());
    assert!(all.windows(2).all(|w| w[0]["start_ns"].as_i64() <= w[1]["start_ns"].as_i64()));
    // Every gap of `all` is written as the top ones are.
    for g in all {
        assert_eq!(keys(g), keys(&top[0]));
    }
    assert!(v["findings"][0]["evidence"].is_object());
}

#[test]
fn json_values_follow_the_analysis() {
    let (t, a) = load("pinned.sqlite");
    let v: Value = serde_json::from_str(&render(&t, &a, Format::Json)).unwrap();
    assert_eq!(v["trace"]["duration_ns"].as_i64(), Some(t.duration()));
    assert_eq!(v["totals"]["kernels"].as_u64(), Some(a.totals.kernels));
    assert_eq!(v["gaps"]["count"].as_u64(), Some(a.gaps.len() as u64));
    assert_eq!(v["gaps"]["min_gap_ns"].as_i64(), Some(100_000));
    let by: u64 = v["gaps"]["by_cause"].as_object().unwrap().values().map(|c| c["count"].as_u64().unwrap()).sum();
    assert_eq!(by, a.gaps.len() as u64);
    let durs: Vec<i64> = v["gaps"]["top"].as_array().unwrap().iter().map(|g| g["dur_ns"].as_i64().unwrap()).collect();
    assert!(durs.windows(2).all(|w| w[0] >= w[1]), "longest first");
    assert_eq!(durs[0], a.gaps.iter().map(lanescope::Gap::dur).max().unwrap());
    let sev: Vec<&str> = v["findings"].as_array().unwrap().iter().map(|f| f["severity"].as_str().unwrap()).collect();
    let rank = |s: &str| ["critical", "warning", "info"].iter().position(|x| *x == s).unwrap();
    assert!(sev.windows(2).all(|w| rank(w[0]) <= rank(w[1])), "{sev:?}");
    assert_eq!(v["phases"][0]["name"], "step N");
}

#[test]
fn text_markdown_and_csv_name_the_phases() {
    let (t, a) = load("prefetch.sqlite");
    for f in [Format::Text, Format::Md, Format::Csv] {
        let s = render(&t, &a, f);
        for name in ["step N", "copy data", "forward", "backward", "optimizer step", "report"] {
            assert!(s.contains(name), "{f:?} lacks {name}");
        }
        for cause in ["host-wait", "host-busy"] {
            assert!(s.contains(cause), "{f:?} lacks {cause}");
        }
    }
    let text = render(&t, &a, Format::Text);
    assert!(text.starts_with("lanescope report: "));
    assert!(text.contains("GPU 0 NVIDIA H200: busy "));
    assert!(text.contains("\nFindings\n") && text.contains("fix: "));
    let md = render(&t, &a, Format::Md);
    assert!(md.starts_with("# lanescope report"));
    assert!(md.contains("\n## Findings\n") && md.contains("|:---|"));
}

// Split one CSV line into fields (RFC 4180 quoting, no embedded line breaks).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                chars.next();
                out.last_mut().unwrap().push('"');
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(String::new()),
            _ => out.last_mut().unwrap().push(c),
        }
    }
    out
}

#[test]
fn csv_is_one_long_table() {
    let (t, a) = load("pageable.sqlite");
    let csv = render(&t, &a, Format::Csv);
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("section,item,metric,value"));
    let rows: Vec<Vec<String>> = lines.map(csv_fields).collect();
    assert!(rows.iter().all(|r| r.len() == 4), "every row has 4 fields");
    let find = |section: &str, item: &str, metric: &str| {
        rows.iter().find(|r| r[0] == section && r[1] == item && r[2] == metric).map(|r| r[3].clone())
    };
    assert_eq!(find("totals", "", "kernels"), Some(a.totals.kernels.to_string()));
    assert_eq!(find("phase", "forward", "count"), Some("30".to_string()));
    assert_eq!(find("transfer", "H2D/pageable", "count"), Some("66".to_string()));
    assert!(find("finding", "cuda_memcpy_async", "fix").is_some());
}

// A small trace whose names try to drive the terminal.
fn hostile_trace() -> Trace {
    let mut t = Trace { strings: Strings::new(), ..Trace::default() };
    t.meta.path = "evil\u{1b}]0;title\u{7}.sqlite".to_string();
    let evil = t.strings.intern("\u{1b}[2J\u{1b}[31mstep 1\u{9b}");
    let launch = t.strings.intern("cudaLaunchKernel");
    let kernel = t.strings.intern("k");
    let mut k = Events::default();
    k.push(0, 1_000, kernel, Some(1), Some(0), None);
    k.push(1_000_000, 1_001_000, kernel, Some(2), Some(0), None);
    t.lanes.push(Lane::new(LaneKind::Kernels { device: 0, stream: 7 }, 5, k));
    let mut api = Events::default();
    api.push(999_000, 999_500, launch, Some(2), None, Some(ApiKind::Launch as u32));
    t.lanes.push(Lane::new(LaneKind::CudaApi { tid: 5 }, 5, api));
    let mut nvtx = Events::default();
    for i in 0..3 {
        nvtx.push(i * 400_000, i * 400_000 + 300_000, evil, None, None, Some(0));
    }
    t.lanes.push(Lane::new(LaneKind::Nvtx { tid: 5, depth: 0 }, 5, nvtx));
    t.meta.end_ns = 1_001_000;
    t
}

#[test]
fn names_from_the_trace_cannot_reach_the_terminal_raw() {
    let t = hostile_trace();
    let a = analyze(&t, &Options::default());
    assert!(!a.gaps.is_empty() && !a.phases.is_empty());
    for f in [Format::Text, Format::Md, Format::Csv, Format::Json] {
        let s = render(&t, &a, f);
        assert!(!s.contains('\u{1b}') && !s.contains('\u{9b}') && !s.contains('\u{7}'), "{f:?}: {s:?}");
    }
    let json: Value = serde_json::from_str(&render(&t, &a, Format::Json)).unwrap();
    // JSON keeps the (grouped) name itself, escaped; text shows replacement characters.
    assert_eq!(json["phases"][0]["name"], "\u{1b}[NJ\u{1b}[Nmstep N\u{9b}");
    assert!(render(&t, &a, Format::Text).contains("\u{fffd}[NJ\u{fffd}[Nmstep N\u{fffd}"));
}

#[test]
fn sanitize_strips_escape() {
    assert_eq!(sanitize("\u{1b}[31mred\u{1b}[0m"), "\u{fffd}[31mred\u{fffd}[0m");
    assert_eq!(sanitize("tab\there\r\n"), "tab\u{fffd}here\u{fffd}\u{fffd}");
    assert_eq!(sanitize("plain"), "plain");
}

#[test]
fn a_trace_without_gpu_work_reports_without_findings() {
    let t = Trace::default();
    let a = analyze(&t, &Options::default());
    for f in [Format::Text, Format::Md, Format::Csv, Format::Json] {
        assert!(!render(&t, &a, f).is_empty());
    }
    assert!(render(&t, &a, Format::Text).contains("No GPU activity"));
    let v: Value = serde_json::from_str(&render(&t, &a, Format::Json)).unwrap();
    assert_eq!(v["findings"].as_array().map(Vec::len), Some(0));
    assert_eq!(v["gaps"]["count"], 0);
}

#[test]
fn write_errors_reach_the_caller() {
    struct Closed;
    impl std::io::Write for Closed {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(std::io::ErrorKind::BrokenPipe.into())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let (t, a) = load("pinned.sqlite");
    for f in [Format::Text, Format::Md, Format::Csv, Format::Json] {
        let e = write(&mut Closed, &t, &a, f).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{f:?}");
    }
}
