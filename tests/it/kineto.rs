//! The Kineto (PyTorch profiler) reader against an independent, non-streaming parse of
//! the same files with `serde_json`: counts per category, ns times, correlation links,
//! ProfilerStep#N phases; and against truncated, malformed and mistyped traces.
//!
//! Fixtures (tests/fixtures/kineto/, made by capture.py there on an H200, PyTorch 2.11):
//! `step_pageable` and `step_prefetch` (schedule + `prof.step()`, shapes, stacks, CUDA sync
//! events; prefetch copies on a side stream), `rank0`/`rank1` (two gloo ranks), and
//! `kineto_pageable` (`../shared/traces/h200/kineto_pageable.json.xz`, regzipped).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use lanescope::{ApiKind, LaneKind, MemClass, MemFlags, Trace};
use lanescope::{Options, analyze};
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kineto").join(name)
}

const ALL: [&str; 5] = ["step_pageable", "step_prefetch", "rank0", "rank1", "kineto_pageable"];

fn text(name: &str) -> String {
    let mut s = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(fixture(&format!("{name}.json.gz"))).unwrap())
        .read_to_string(&mut s)
        .unwrap();
    s
}

fn load(name: &str) -> Trace {
    lanescope::load(&fixture(&format!("{name}.json.gz"))).unwrap()
}

#[derive(Deserialize)]
struct Ev {
    ph: Option<String>,
    cat: Option<String>,
    name: Option<String>,
    ts: Option<Box<RawValue>>,
    dur: Option<Box<RawValue>>,
    pid: Option<Value>,
    #[serde(default)]
    args: Value,
}

#[derive(Deserialize)]
struct Top {
    #[serde(rename = "traceEvents")]
    events: Vec<Ev>,
    #[serde(rename = "baseTimeNanoseconds")]
    base: Option<i64>,
    #[serde(rename = "distributedInfo")]
    dist: Option<Value>,
}

fn parse(name: &str) -> Top {
    serde_json::from_str(&text(name)).unwrap()
}

// Microseconds as written ("123.456") to ns by string surgery: independent of the
// reader's decimal parser. The fixtures have at most three decimals.
fn ns(raw: &RawValue) -> i64 {
    let t = raw.get();
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    assert!(frac.len() <= 3 && !t.contains('e'), "{t}");
    int.parse::<i64>().unwrap() * 1000 + format!("{frac:0<3}").parse::<i64>().unwrap()
}

impl Ev {
    fn cat(&self) -> &str {
        self.cat.as_deref().unwrap_or("")
    }
    fn x(&self, cat: &str) -> bool {
        self.ph.as_deref() == Some("X") && self.cat() == cat
    }
    fn span(&self) -> (i64, i64) {
        let s = ns(self.ts.as_ref().unwrap());
        (s, s + self.dur.as_ref().map_or(0, |d| ns(d)))
    }
    fn arg(&self, k: &str) -> i64 {
        self.args.get(k).and_then(Value::as_i64).unwrap()
    }
}

fn spans(trace: &Trace, want: impl Fn(LaneKind) -> bool) -> Vec<(i64, i64, String)> {
    let mut v: Vec<(i64, i64, String)> = trace
        .lanes
        .iter()
        .filter(|l| want(l.kind))
        .flat_map(|l| {
            (0..l.ev.len()).map(move |i| (l.ev.start[i], l.ev.end(i), trace.strings.get(l.ev.name[i]).into()))
        })
        .collect();
    v.sort();
    v
}

// Compare span lists, reporting only the first difference.
fn same(got: &[(i64, i64, String)], want: &[(i64, i64, String)], ctx: &str) {
    let first = got.iter().zip(want).position(|(a, b)| a != b);
    assert!(
        got.len() == want.len() && first.is_none(),
        "{ctx}: {} vs {} events; first difference at {first:?}: {:?} vs {:?}",
        got.len(),
        want.len(),
        first.map(|i| &got[i]),
        first.map(|i| &want[i])
    );
}

fn json_spans(top: &Top, cats: &[&str]) -> Vec<(i64, i64, String)> {
    let mut v: Vec<(i64, i64, String)> = top
        .events
        .iter()
        .filter(|e| cats.iter().any(|c| e.x(c)))
        .map(|e| {
            let (s, t) = e.span();
            (s, t, e.name.clone().unwrap_or_default())
        })
        .collect();
    v.sort();
    v
}

#[test]
fn counts_per_category_equal_the_json() {
    for f in ALL {
        let (t, top) = (load(f), parse(f));
        let mut want: BTreeMap<String, usize> = BTreeMap::new();
        for e in &top.events {
            *want.entry(format!("{} {}", e.ph.as_deref().unwrap_or(""), e.cat()).trim().to_string()).or_default() += 1;
        }
        let got: BTreeMap<String, usize> = t
            .meta
            .tables
            .iter()
            .filter(|s| s.name.starts_with("  "))
            .map(|s| (s.name.trim().to_string(), s.rows))
            .collect();
        assert_eq!(got, want, "{f}");
        let total = t.meta.tables.iter().find(|s| s.name == "traceEvents").unwrap().rows;
        assert_eq!(total, top.events.len(), "{f}");
    }
}

#[test]
fn every_event_kept_with_its_ns_times() {
    for f in ALL {
        let (t, top) = (load(f), parse(f));
        let ctx = f;
        same(&spans(&t, |k| matches!(k, LaneKind::Kernels { .. })), &json_spans(&top, &["kernel"]), ctx);
        same(
            &spans(&t, |k| matches!(k, LaneKind::Memory { .. })),
            &json_spans(&top, &["gpu_memcpy", "gpu_memset"]),
            ctx,
        );
        // API names lose nsys's `_vN` version suffix (`cudaGetDeviceProperties_v2`), as in nsys exports.
        let unversioned = |(s, e, n): (i64, i64, String)| {
            let cut = n.rfind("_v").filter(|&i| n.len() > i + 2 && n[i + 2..].bytes().all(|b| b.is_ascii_digit()));
            (s, e, cut.map_or(n.clone(), |i| n[..i].to_string()))
        };
        let mut api: Vec<_> = json_spans(&top, &["cuda_runtime", "cuda_driver"]).into_iter().map(unversioned).collect();
        api.sort();
        same(&spans(&t, |k| matches!(k, LaneKind::CudaApi { .. })), &api, ctx);
        same(
            &spans(&t, |k| matches!(k, LaneKind::Nvtx { .. })),
            &json_spans(&top, &["cpu_op", "user_annotation", "python_function"]),
            ctx,
        );
        // GPU annotations: a lane of their GPU, every one kept.
        same(&spans(&t, |k| matches!(k, LaneKind::GpuRanges { .. })), &json_spans(&top, &["gpu_user_annotation"]), ctx);
        let syncs: usize = t.syncs.iter().map(|s| s.ev.len()).sum();
        assert_eq!(syncs, top.events.iter().filter(|e| e.x("cuda_sync")).count(), "{ctx}");
        // The extent: earliest start to latest end of all complete events, Trace span included.
        let all: Vec<(i64, i64)> = top.events.iter().filter(|e| e.ph.as_deref() == Some("X")).map(Ev::span).collect();
        let start = all.iter().map(|s| s.0).min().unwrap();
        let end = all.iter().map(|s| s.1).max().unwrap();
        assert_eq!((t.meta.start_ns, t.meta.end_ns), (start, end), "{ctx}");
        assert_eq!(t.meta.utc_epoch_ns, top.base.unwrap(), "{ctx}");
        assert_eq!(t.meta.nsys_version, "PyTorch Profiler (Kineto)");
    }
}

#[test]
fn gpu_lanes_per_device_and_stream_with_kinds_and_bytes() {
    for f in ALL {
        let (t, top) = (load(f), parse(f));
        let mut want: HashMap<(u32, u32, &str), (usize, u64)> = HashMap::new();
        for e in top.events.iter().filter(|e| e.x("kernel") || e.x("gpu_memcpy") || e.x("gpu_memset")) {
            let bytes = e.args.get("bytes").and_then(Value::as_u64).unwrap_or(0);
            let name = e.name.as_deref().unwrap();
            let class = if e.x("kernel") {
                "kernel"
            } else if e.x("gpu_memset") {
                "memset"
            } else if name.contains("HtoD") {
                "H2D"
            } else if name.contains("DtoH") {
                "D2H"
            } else if name.contains("DtoD") {
                "D2D"
            } else {
                "other"
            };
            let w = want.entry((e.arg("device") as u32, e.arg("stream") as u32, class)).or_default();
            w.0 += 1;
            w.1 += if class == "kernel" { 0 } else { bytes };
        }
        let mut got: HashMap<(u32, u32, &str), (usize, u64)> = HashMap::new();
        for l in &t.lanes {
            let (key, bytes) = match l.kind {
                LaneKind::Kernels { device, stream } => ((device, stream, "kernel"), 0),
                LaneKind::Memory { device, stream, class } => {
                    ((device, stream, class.label()), l.ev.aux_values().sum())
                }
                _ => continue,
            };
            let g = got.entry(key).or_default();
            g.0 += l.ev.len();
            g.1 += bytes;
        }
        assert_eq!(got, want, "{f}");
        // Pageable/pinned from the names.
        for l in &t.lanes {
            if let LaneKind::Memory { class: MemClass::H2D | MemClass::D2H, .. } = l.kind {
                for i in 0..l.ev.len() {
                    let name = t.strings.get(l.ev.name[i]);
                    let m = MemFlags::unpack(l.ev.flags(i));
                    assert_eq!(m.is_pageable(), name.contains("Pageable"), "{f}: {name}");
                }
            }
        }
    }
}

#[test]
fn launches_link_to_gpu_ops_as_the_ac2g_flows_say() {
    for f in ALL {
        let (t, top) = (load(f), parse(f));
        let id = |e: &Ev| e.args.get("correlation").and_then(Value::as_u64);
        let api: HashSet<u64> =
            top.events.iter().filter(|e| e.x("cuda_runtime") || e.x("cuda_driver")).filter_map(id).collect();
        let gpu: Vec<u64> = top
            .events
            .iter()
            .filter(|e| e.x("kernel") || e.x("gpu_memcpy") || e.x("gpu_memset"))
            .filter_map(id)
            .filter(|c| api.contains(c))
            .collect();
        assert!(!gpu.is_empty(), "{f}");
        let host_pid = top
            .events
            .iter()
            .find(|e| e.x("cuda_runtime"))
            .and_then(|e| e.pid.as_ref().and_then(Value::as_u64))
            .unwrap() as u32;
        for c in gpu {
            let op = t.gpu_op_for(host_pid, c as u32).unwrap_or_else(|| panic!("{f}: no GPU op for {c}"));
            let call = t.api_call_for(host_pid, c as u32).unwrap();
            assert!(t.lanes[op.lane as usize].kind.is_gpu_work());
            let lane = &t.lanes[call.lane as usize];
            let kind = ApiKind::from_flags(lane.ev.flags(call.idx as usize));
            assert_ne!(kind, ApiKind::Sync, "{f}: {c}");
        }
    }
}

#[test]
fn profiler_steps_are_the_step_phase() {
    for f in ["step_pageable", "step_prefetch", "rank0", "rank1"] {
        let (t, top) = (load(f), parse(f));
        let steps = top
            .events
            .iter()
            .filter(|e| e.x("user_annotation") && e.name.as_deref().is_some_and(|n| n.starts_with("ProfilerStep#")))
            .count();
        assert!(steps >= 3, "{f}");
        let a = analyze(&t, &Options::default());
        assert_eq!(a.step_phase.as_deref(), Some("ProfilerStep#N"), "{f}");
        let p = a.phases.iter().find(|p| p.name == "ProfilerStep#N").unwrap();
        assert_eq!(p.count as usize, steps, "{f}");
        // Kineto has no OS runtime trace: time outside CUDA calls is `unknown`, never guessed.
        assert!(t.host.osrt_calls == 0 && t.lanes.iter().all(|l| !matches!(l.kind, LaneKind::Osrt { .. })));
    }
}

#[test]
fn ranks_name_their_process() {
    for (f, r) in [("rank0", 0), ("rank1", 1)] {
        let (t, top) = (load(f), parse(f));
        assert_eq!(top.dist.unwrap()["rank"], r);
        let p = t.processes.iter().find(|p| t.lanes.iter().any(|l| l.pid == p.pid && l.kind.tid().is_some())).unwrap();
        assert!(p.name.ends_with(&format!("(rank {r} of 2)")), "{}", p.name);
    }
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

#[test]
fn truncated_traces_keep_what_is_complete() {
    let d = tempfile::tempdir().unwrap();
    let full = text("step_prefetch");
    let whole = load("step_prefetch");
    for frac in [0.3, 0.75, 0.999] {
        let cut = (full.len() as f64 * frac) as usize;
        let p = write(d.path(), "cut.json", &full.as_bytes()[..cut]);
        let t = lanescope::load(&p).unwrap();
        let stop = t.meta.tables.iter().find(|s| s.name.starts_with("stopped at byte")).unwrap();
        assert!(stop.name.contains(&format!("stopped at byte {cut}:")), "{}", stop.name);
        // Every event kept is one of the whole trace's.
        let all: HashSet<(i64, i64, String)> = spans(&whole, |_| true).into_iter().collect();
        let kept = spans(&t, |_| true);
        assert!(!kept.is_empty() && kept.len() <= all.len());
        assert!(kept.iter().all(|k| all.contains(k)));
    }
}

#[test]
fn wrong_types_and_missing_fields_never_panic() {
    let d = tempfile::tempdir().unwrap();
    let odd = br#"{"schemaVersion": "x", "baseTimeNanoseconds": [], "deviceProperties": {"id": "a"},
      "distributedInfo": 5, "traceEvents": [
      {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": "12.5", "dur": 1, "args": {"device": "zero", "stream": [], "correlation": {}}},
      {"ph": "X", "cat": "kernel", "ts": {}, "dur": 1},
      {"ph": "X", "cat": "cuda_runtime", "name": null, "pid": "p", "tid": null, "ts": 1, "dur": -5},
      {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1e3, "tid": 1.5, "ts": 1e2, "dur": 2.5e0},
      {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy", "pid": 0, "tid": 0, "ts": 3, "args": "none"},
      {"ph": 5, "cat": ["x"], "args": {"name": 7}},
      {"ph": "M", "name": "process_name", "pid": 1000, "args": {"name": "trainer"}},
      3, null, "str", [1, 2],
      {"ph": "X", "cat": "kernel", "name": "\ud83d\ude00 \u00e9\n", "pid": 0, "tid": 7, "ts": 99999999999999999999999, "dur": 1}
    ]}"#;
    let p = write(d.path(), "odd.json", odd);
    let t = lanescope::load(&p).unwrap();
    assert_eq!(t.process_name(1000), "trainer");
    let cpu = spans(&t, |k| matches!(k, LaneKind::Nvtx { .. }));
    assert_eq!(cpu, vec![(100_000, 102_500, "op".to_string())]);
    let k = spans(&t, |k| matches!(k, LaneKind::Kernels { .. }));
    assert_eq!(k[0], (12_500, 13_500, "k".to_string()));
    // Reports work on it.
    let _ = analyze(&t, &Options::default());
}

#[test]
fn bad_json_is_one_error_naming_the_file() {
    let d = tempfile::tempdir().unwrap();
    for (name, bytes, says) in [
        ("garbage.json", &b"{ this is not json"[..], "not a JSON trace"),
        ("other.json", &br#"{"a": 1}"#[..], "no traceEvents"),
        ("gz.json.gz", &[0x1f, 0x8b, 8, 0, 0, 0][..], "gzip file, but not a JSON trace"),
    ] {
        let p = write(d.path(), name, bytes);
        let out = assert_cmd::Command::cargo_bin("lanescope")
            .unwrap()
            .env("XDG_CACHE_HOME", crate::util::cache_home())
            .arg("report")
            .arg(&p)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(name) && err.contains(says) && !err.contains("panicked"), "{err}");
    }
    // An empty event list is a valid, empty trace.
    let p = write(d.path(), "empty.json", br#"{"traceEvents": []}"#);
    assert_eq!(lanescope::load(&p).unwrap().event_count(), 0);
}

#[test]
fn kineto_ranks_merge_by_their_distributed_rank() {
    // Given in reverse order, the two gloo ranks still come out as rank 0 then rank 1:
    // the rank is `distributedInfo.rank` of each file (checked here with serde_json).
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kineto");
    let files = [dir.join("rank1.json.gz"), dir.join("rank0.json.gz")];
    let rank_in = |p: &std::path::Path| -> u64 {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(std::fs::File::open(p).unwrap()), &mut text)
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["distributedInfo"]["rank"].as_u64().unwrap()
    };
    let group = lanescope::group_inputs(&files);
    let t = lanescope::load(&group).unwrap();
    let got: Vec<(u32, String)> = t.ranks.iter().map(|r| (r.rank, r.path.clone())).collect();
    let mut want: Vec<(u32, String)> = files.iter().map(|f| (rank_in(f) as u32, f.display().to_string())).collect();
    want.sort();
    assert_eq!(got, want);
    assert!(t.ranks.iter().all(|r| r.rank_source == "RANK"));
}

#[test]
fn gpu_annotations_are_drawn_but_never_gpu_work() {
    // GPU busy time is the union of the JSON's kernels, copies and memsets alone.
    for f in ALL {
        let (t, top) = (load(f), parse(f));
        let mut ops = json_spans(&top, &["kernel", "gpu_memcpy", "gpu_memset"]);
        ops.sort();
        let (mut busy, mut reach) = (0i64, i64::MIN);
        for (s, e, _) in ops {
            let s = s.max(reach);
            if e > s {
                busy += e - s;
                reach = e;
            }
        }
        let a = lanescope::analyze(&t, &lanescope::Options::default());
        let got: i64 = a.devices.iter().map(|d| d.busy.total()).sum();
        assert_eq!(got, busy, "{f}");
    }
}

#[test]
fn merged_ranks_keep_every_gpu_lane_under_its_own_rank() {
    // Each file's GPU events (kernels, copies, memsets, and the `gpu_user_annotation`
    // ranges shown with the GPU) come out under a device of that file's rank, with the
    // device the JSON gives (`args.device`, else the pid of the GPU's pseudo-process) and
    // their times shifted by the rank's offset.
    let files = [fixture("rank0.json.gz"), fixture("rank1.json.gz")];
    let t = lanescope::load(&lanescope::group_inputs(&files)).unwrap();
    assert_eq!(t.ranks.len(), 2);
    let gpu = ["kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation"];
    for r in &t.ranks {
        let name = Path::new(&r.path).file_name().unwrap().to_str().unwrap().trim_end_matches(".json.gz");
        let top = parse(name);
        let device = |e: &Ev| e.args.get("device").and_then(Value::as_u64).or(e.pid.as_ref().and_then(Value::as_u64));
        let mut want: Vec<(&str, u32, i64, i64, String)> = top
            .events
            .iter()
            .filter_map(|e| {
                let cat = gpu.into_iter().find(|c| e.x(c))?;
                let (s, end) = e.span();
                let d = device(e).unwrap() as u32;
                Some((cat, d, s + r.offset_ns, end + r.offset_ns, e.name.clone().unwrap_or_default()))
            })
            .collect();
        want.sort();
        let mut got: Vec<(&str, u32, i64, i64, String)> = Vec::new();
        for l in &t.lanes {
            let (cat, merged) = match l.kind {
                LaneKind::Kernels { device, .. } => ("kernel", device),
                LaneKind::Memory { device, class: MemClass::Memset, .. } => ("gpu_memset", device),
                LaneKind::Memory { device, .. } => ("gpu_memcpy", device),
                LaneKind::GpuRanges { device } => ("gpu_user_annotation", device),
                _ => continue,
            };
            let Some(&(_, own)) = r.devices.iter().find(|(m, _)| *m == merged) else { continue };
            got.extend(
                (0..l.ev.len())
                    .map(|i| (cat, own, l.ev.start[i], l.ev.end(i), t.strings.get(l.ev.name[i]).to_string())),
            );
        }
        got.sort();
        let count = |v: &[(&str, u32, i64, i64, String)], c: &str| v.iter().filter(|x| x.0 == c).count();
        for c in gpu {
            assert_eq!(count(&got, c), count(&want, c), "rank {}: {c} events under its GPUs", r.rank);
        }
        assert!(count(&want, "gpu_user_annotation") > 0, "{name} has GPU annotations");
        assert!(got == want, "rank {}: GPU events differ from {name}'s JSON", r.rank);
    }
}

// Issue 32, item 7: a gap's phase is the innermost user range (`record_function`,
// `ProfilerStep#N`: cat `user_annotation`), never a framework operator's (`aten::`).
#[test]
fn a_gaps_phase_is_a_user_range_never_an_operator() {
    for name in ["kineto_pageable", "step_pageable", "step_prefetch"] {
        let v: Value = serde_json::from_str(&text(name)).unwrap();
        let events = v["traceEvents"].as_array().expect("traceEvents");
        let of = |cat: &str| -> HashSet<&str> {
            events.iter().filter(|e| e["cat"] == cat).filter_map(|e| e["name"].as_str()).collect()
        };
        let (user, ops) = (of("user_annotation"), of("cpu_op"));
        let t = load(name);
        let a = analyze(&t, &Options { exact_names: true, ..Options::default() });
        let phases: Vec<&str> = a.gaps.iter().filter_map(|g| g.phase.as_deref()).collect();
        assert!(!phases.is_empty(), "{name}: gaps in user ranges");
        for p in phases {
            assert!(user.contains(p) && !ops.contains(p), "{name}: phase {p} is no user range");
        }
    }
}

// With no OS trace, a gap the launching thread spent mostly inside the DataLoader's
// `__next__` range is a wait for the loader (`host-wait`, hint `loader`), and no other gap
// is: the `__next__` ranges read from the JSON itself, per thread, decide.
#[test]
fn a_gap_inside_the_dataloader_s_next_is_a_wait_for_the_loader() {
    let name = "kineto_pageable";
    let v: Value = serde_json::from_str(&text(name)).unwrap();
    let us = |x: &Value| -> i64 { ns(&RawValue::from_string(x.to_string()).unwrap()) };
    let mut next: HashMap<i64, Vec<(i64, i64)>> = HashMap::new();
    for e in v["traceEvents"].as_array().expect("traceEvents") {
        let n = e["name"].as_str().unwrap_or("");
        if e["cat"] == "user_annotation" && n.starts_with("enumerate(DataLoader)#") && n.ends_with(".__next__") {
            let s = us(&e["ts"]);
            next.entry(e["tid"].as_i64().unwrap()).or_default().push((s, s + us(&e["dur"])));
        }
    }
    assert!(!next.is_empty(), "{name}: __next__ ranges");
    let a = analyze(&load(name), &Options::default());
    let mut waits = 0;
    for g in &a.gaps {
        let inside: i64 = g
            .tid
            .and_then(|t| next.get(&i64::from(t)))
            .map_or(0, |r| r.iter().map(|&(s, e)| (e.min(g.end) - s.max(g.start)).max(0)).sum());
        let loader = g.hint == lanescope::Hint::Loader;
        if loader {
            waits += 1;
            assert_eq!(g.cause, lanescope::Cause::HostWait, "{}", g.evidence);
            assert!(2 * inside >= g.end - g.start, "{inside} of {}: {}", g.end - g.start, g.evidence);
            assert!(g.evidence.contains("_MultiProcessingDataLoaderIter.__next__"), "{}", g.evidence);
        } else {
            assert!(g.cause != lanescope::Cause::Unknown || 2 * inside < g.end - g.start, "{}", g.evidence);
        }
    }
    assert!(waits >= 2, "{waits} gaps waited for the loader");
}
