//! GPU metrics (issue 20): the counters, the per-phase PCIe means and the what-if of each
//! fix, against SQL over the same captures (tests/fixtures/matrix/g_*, captured with
//! `--gpu-metrics-devices=all`).

use std::path::Path;

use lanescope::{Analysis, Options, analyze};

use crate::util::{fixture, lanescope as bin, matrix_trace, sql};

const RX: &str = "PCIe RX Throughput [Throughput %]";

fn analysis(path: &Path) -> Analysis {
    analyze(&crate::util::load_warm(path), &Options::default())
}

// (timestamp, value) of metric `name`, sorted by time.
fn samples(path: &Path, name: &str) -> Vec<(i64, i64)> {
    let db = sql(path);
    let mut st = db
        .prepare(
            "SELECT m.timestamp, m.value FROM GPU_METRICS m JOIN TARGET_INFO_GPU_METRICS t USING (typeId, metricId) \
             WHERE t.metricName = ?1 ORDER BY m.timestamp",
        )
        .unwrap();
    st.query_map([name], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
}

fn median_period(s: &[(i64, i64)]) -> i64 {
    let mut d: Vec<i64> = s.windows(2).map(|w| w[1].0 - w[0].0).collect();
    d.sort_unstable();
    d[d.len() / 2]
}

#[test]
fn every_metric_is_read_with_its_samples_as_sql_has_them() {
    let path = matrix_trace("g_pinned");
    let t = crate::util::load_warm(&path);
    let db = sql(&path);
    let names: Vec<String> = db
        .prepare("SELECT metricName FROM TARGET_INFO_GPU_METRICS ORDER BY metricId")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(t.counters.series.len(), names.len());
    for name in &names {
        let want = samples(&path, name);
        let s = t.counters.get(0, name).unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(s.len(), want.len(), "{name}");
        let sum: i64 = want.iter().map(|x| x.1).sum();
        let got = s.summary().unwrap();
        assert!((got.mean - sum as f64 / want.len() as f64).abs() < 1e-9, "{name}");
        assert_eq!(got.max, want.iter().map(|x| x.1).max().unwrap(), "{name}");
        assert_eq!(s.period_ns(), median_period(&want), "{name}");
    }
    // A trace without the table has no counters and says how to get them.
    assert!(crate::util::load_warm(&fixture("pinned.sqlite")).counters.is_empty());
    let out = bin().args(["info", fixture("pinned.sqlite").to_str().unwrap()]).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("--gpu-metrics-devices=all"));
}

#[test]
fn info_json_lists_the_metrics_with_their_rate() {
    let path = matrix_trace("g_pageable");
    let out = bin().args(["info", path.to_str().unwrap(), "--format", "json"]).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let g = &v["gpu_metrics"][0];
    let rx = samples(&path, RX);
    assert_eq!(g["samples"].as_u64().unwrap() as usize, rx.len());
    assert_eq!(g["period_ns"].as_i64().unwrap(), median_period(&rx));
    let n = crate::util::sql_i64(&path, "SELECT count(*) FROM TARGET_INFO_GPU_METRICS");
    assert_eq!(g["metrics"].as_array().unwrap().len() as i64, n);
}

// (start, end) of the H2D copies launched by a runtime call inside an NVTX range `phase`
// on the range's thread, merged where they overlap.
fn phase_h2d(path: &Path, phase: &str) -> Vec<(i64, i64)> {
    let db = sql(path);
    let mut st = db
        .prepare(
            "SELECT DISTINCT c.start, c.[end] FROM CUPTI_ACTIVITY_KIND_MEMCPY c \
             JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = c.correlationId \
             JOIN NVTX_EVENTS n ON n.globalTid = r.globalTid AND r.start >= n.start AND r.[end] <= n.[end] \
             WHERE c.copyKind = 1 AND n.text = ?1 ORDER BY c.start",
        )
        .unwrap();
    let rows: Vec<(i64, i64)> =
        st.query_map([phase], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect();
    let mut out: Vec<(i64, i64)> = Vec::new();
    for (s, e) in rows {
        match out.last_mut() {
            Some(l) if s <= l.1 => l.1 = l.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

#[test]
fn rx_during_a_phase_s_copies_is_the_mean_of_the_samples_inside_them() {
    for cell in ["g_pinned", "g_pageable", "gv_pinned", "g_lpin"] {
        let path = matrix_trace(cell);
        let rx = samples(&path, RX);
        let p = median_period(&rx);
        let spans = phase_h2d(&path, "copy data");
        // A sample covers [t, t + period): it counts when that lies inside a copy.
        let inside: Vec<i64> =
            rx.iter().filter(|(t, _)| spans.iter().any(|&(s, e)| *t >= s && t + p <= e)).map(|x| x.1).collect();
        let want = inside.iter().sum::<i64>() as f64 / inside.len() as f64;
        let a = analysis(&path);
        let ph = a.phases.iter().find(|x| x.name == "copy data").unwrap();
        let got = ph.pcie.unwrap().rx_pct_during_h2d.unwrap();
        assert!((got - want).abs() < 1e-9, "{cell}: {got} against SQL {want}");
    }
}

// The steady step as SQL gives it: the period between the ends of the GPU work the first
// and the last `step N` ranges launched, over the steps between.
fn measured_step(path: &Path) -> f64 {
    let db = sql(path);
    let ends: Vec<i64> = db
        .prepare(
            "SELECT (SELECT max(o.e) FROM (SELECT [end] e, correlationId c FROM CUPTI_ACTIVITY_KIND_KERNEL \
             UNION ALL SELECT [end], correlationId FROM CUPTI_ACTIVITY_KIND_MEMCPY \
             UNION ALL SELECT [end], correlationId FROM CUPTI_ACTIVITY_KIND_MEMSET) o \
             JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = o.c \
             WHERE r.globalTid = n.globalTid AND r.start >= n.start AND r.[end] <= n.[end]) \
             FROM NVTX_EVENTS n WHERE n.text LIKE 'step %' ORDER BY n.start",
        )
        .unwrap()
        .query_map([], |r| r.get::<_, Option<i64>>(0))
        .unwrap()
        .map(|r| r.unwrap().unwrap())
        .collect();
    (ends[ends.len() - 1] - ends[0]) as f64 / (ends.len() - 1) as f64
}

// Each pair: before, after, the fix applied; the before-run's prediction for it must be
// within 30% of the measured change, or within 3 ms per step when the change is small.
#[test]
fn each_fix_s_prediction_matches_the_measured_change_of_its_pair() {
    let pairs = [
        ("matrix/g_pageable.sqlite", "matrix/g_pinned.sqlite", "pin_memory"),
        ("matrix/gv_pageable.sqlite", "matrix/gv_pinned.sqlite", "pin_memory"),
        ("matrix/g_pinned.sqlite", "matrix/g_prefetch.sqlite", "prefetch"),
        ("matrix/g_w1.sqlite", "matrix/g_w4.sqlite", "more_workers"),
        // The shared pair: the DataLoader bounds the step, pinning alone saves nothing.
        ("pageable.sqlite", "pinned.sqlite", "pin_memory"),
    ];
    let mut bad = Vec::new();
    for (b, a, fix) in pairs {
        let (pb, pa) = (fixture(b), fixture(a));
        let measured = measured_step(&pb) - measured_step(&pa);
        let (before, after) = (analysis(&pb), analysis(&pa));
        let w = lanescope::applied_fix(&before, &after).unwrap_or_else(|| panic!("{b} -> {a}: no fix told"));
        let predicted = w.saving_per_step_ns as f64;
        let ok = w.fix.id() == fix
            && ((predicted - measured).abs() <= 0.3 * measured.abs() || (predicted - measured).abs() <= 3e6);
        let line = format!(
            "{b} -> {a}: {} predicted {:.2} ms, measured {:.2} ms ({})",
            w.fix.id(),
            predicted / 1e6,
            measured / 1e6,
            w.limited_by
        );
        if !ok {
            bad.push(line);
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn pinning_a_loader_bound_loop_is_priced_at_nothing_limited_by_the_pipeline() {
    // g_lpage: two workers deliver a batch every ~55 ms; the pageable copy takes 10 ms of it.
    let a = analysis(&matrix_trace("g_lpage"));
    let w = a.whatif.iter().find(|w| w.fix == lanescope::Fix::PinMemory).unwrap();
    assert_eq!((w.saving_per_step_ns, w.limited_by), (0, "input pipeline"), "{w:?}");
    // Its pair's measured change is noise: 15 periods that alternate ~23 and ~100 ms.
    let stderr = {
        let per = |p: &Path| {
            let db = sql(p);
            let s: Vec<i64> = db
                .prepare("SELECT start FROM NVTX_EVENTS WHERE text LIKE 'step %' ORDER BY start")
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            let d: Vec<f64> = s.windows(2).skip(1).map(|w| (w[1] - w[0]) as f64).collect();
            let m = d.iter().sum::<f64>() / d.len() as f64;
            (d.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (d.len() - 1) as f64 / d.len() as f64).sqrt()
        };
        let (x, y) = (per(&matrix_trace("g_lpage")), per(&matrix_trace("g_lpin")));
        (x * x + y * y).sqrt()
    };
    let measured = measured_step(&matrix_trace("g_lpage")) - measured_step(&matrix_trace("g_lpin"));
    assert!(measured.abs() <= 2.0 * stderr, "measured {measured} ns against a standard error of {stderr} ns");
}

#[test]
fn merged_ranks_keep_each_gpu_s_counters_on_the_merged_timeline() {
    let files = [matrix_trace("g_pinned"), matrix_trace("gv_pinned")];
    let t = lanescope::load(&lanescope::group_inputs(&files)).unwrap();
    assert_eq!(t.ranks.len(), 2);
    for r in &t.ranks {
        // Neither capture records a rank: they are ranked in file order.
        let own = &files[r.rank as usize];
        let rx = samples(own, RX);
        let (merged, gpu) = r.devices[0];
        assert_eq!(gpu, 0);
        let s = t.counters.get(merged, RX).unwrap_or_else(|| panic!("rank {}: no RX on device {merged}", r.rank));
        assert_eq!(s.len(), rx.len());
        assert_eq!(s.times[0], rx[0].0 + r.offset_ns, "rank {}", r.rank);
        assert_eq!(s.value(7), rx[7].1);
    }
}
