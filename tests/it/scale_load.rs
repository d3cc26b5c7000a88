//! Issue 13 (100M events), the load and memory half: `bench --scale-to K`, and the
//! narrow columns (u32 durations, aux and flags kept per name) against independent SQL
//! on real exports and on a scaled one. No test here asserts a wall-clock time.

use std::path::Path;

use lanescope::{ApiKind, LaneKind, Trace};
use rusqlite::Connection;

use crate::util::{fixture, lanescope, sql};

fn one(c: &Connection, q: &str) -> i64 {
    c.query_row(q, [], |r| r.get::<_, Option<i64>>(0)).unwrap().unwrap_or(0)
}

// Rows the reader turns into lane events: every event table but the synchronization
// records (kept apart, not in lanes) and the backtrace rows of the API table.
fn sql_events(path: &Path) -> i64 {
    let c = sql(path);
    [
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL",
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY",
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET",
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass NOT IN (67, 68, 69)",
        "SELECT count(*) FROM NVTX_EVENTS",
        "SELECT count(*) FROM OSRT_API",
        "SELECT count(*) FROM PROFILER_OVERHEAD",
    ]
    .iter()
    .map(|q| one(&c, q))
    .sum()
}

#[test]
fn bench_scale_to_measures_factor_times_the_events_and_cleans_up() {
    let path = fixture("pageable.sqlite");
    let tmp = tempfile::tempdir().unwrap();
    let out = lanescope()
        .env("TMPDIR", tmp.path())
        .args(["bench", path.to_str().unwrap(), "--size", "80x24", "--format", "json", "--scale-to", "3"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let b: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let base = sql_events(&path);
    assert_eq!(b["trace"]["events"].as_i64(), Some(base), "base events = SQL rows");
    let s = &b["scale"];
    assert_eq!(s["factor"].as_u64(), Some(3));
    assert_eq!(s["events"].as_i64(), Some(3 * base), "scaled events = factor x SQL rows");
    assert_eq!(s["bench"]["trace"]["events"].as_i64(), Some(3 * base));
    for key in ["load_per_event_vs_base", "bytes_per_event_with_view", "build_ms"] {
        assert!(s[key].as_f64().is_some_and(|v| v > 0.0), "{key}: {}", s[key]);
    }
    assert!(s["bench"]["report"]["vs_load"].as_f64().is_some_and(|v| v >= 1.0));
    assert!(s["file_bytes"].as_u64().unwrap() > std::fs::metadata(&path).unwrap().len());
    // The scaled export lived in the temporary directory and is gone.
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0, "temporary export removed");
}

#[test]
fn bench_without_scale_to_has_no_scale_section() {
    let path = fixture("d2h.sqlite");
    let out =
        lanescope().args(["bench", path.to_str().unwrap(), "--size", "80x24", "--format", "json"]).output().unwrap();
    assert!(out.status.success());
    let b: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(b.get("scale").is_none());
    let m = &b["memory"];
    assert!(m["bytes_per_event_with_view"].as_f64().unwrap() > 0.0);
    assert!(m["peak_rss_after_view_bytes"].as_u64() >= m["peak_rss_after_analysis_bytes"].as_u64());
    // The second open read the model and the render index kept beside it.
    let s = &b["second_open"];
    assert!(s["cache_file_bytes"].as_u64().unwrap() > 0 && s["index_file_bytes"].as_u64().unwrap() > 0, "{s}");
    assert!(s["load"]["to_analysis_ms"].as_f64().is_some() && s["index_ms"].as_f64().is_some(), "{s}");
}

// Total duration and event count per table of the model, to set against SQL.
fn model_sums(t: &Trace, want: impl Fn(LaneKind) -> bool) -> (i64, i64) {
    t.lanes
        .iter()
        .filter(|l| want(l.kind))
        .fold((0, 0), |(n, d), l| (n + l.ev.len() as i64, d + (0..l.ev.len()).map(|i| l.ev.dur(i)).sum::<i64>()))
}

// Kernels and API calls (the bulk of the events) are kept with u32 durations; OS
// runtime calls of several seconds make their lanes keep absolute ends. Both give back
// exactly SQL's durations, on the export and on the export scaled 4 times.
#[test]
fn narrow_and_wide_columns_equal_sql_on_real_and_scaled_exports() {
    let tmp = tempfile::tempdir().unwrap();
    let scaled = tmp.path().join("x4.sqlite");
    let built = lanescope()
        .args(["scale", fixture("pageable.sqlite").to_str().unwrap(), scaled.to_str().unwrap(), "--factor", "4"])
        .output()
        .unwrap();
    assert!(built.status.success(), "{}", String::from_utf8_lossy(&built.stderr));
    for (path, k) in [(fixture("pageable.sqlite"), 1), (scaled, 4)] {
        let t = lanescope::load(&path).unwrap();
        let c = sql(&path);
        let kernels = model_sums(&t, |k| matches!(k, LaneKind::Kernels { .. }));
        let sql_k = (
            one(&c, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"),
            one(&c, "SELECT sum(\"end\" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL"),
        );
        assert_eq!(kernels, sql_k, "kernels of {}", path.display());
        let osrt = model_sums(&t, |k| matches!(k, LaneKind::Osrt { .. }));
        let sql_o = (one(&c, "SELECT count(*) FROM OSRT_API"), one(&c, "SELECT sum(\"end\" - start) FROM OSRT_API"));
        assert_eq!(osrt, sql_o, "OS runtime calls of {}", path.display());
        assert_eq!(t.event_count() as i64, k * sql_events(&fixture("pageable.sqlite")));
        // Both encodings are in use: the test covers the fallback on real data.
        let lanes = |narrow: bool| t.lanes.iter().filter(|l| !l.ev.is_empty() && l.ev.narrow_ends() == narrow).count();
        assert!(lanes(true) > 0 && lanes(false) > 0, "narrow and wide lanes");
        // API kinds kept per name read back as SQL's names say.
        let c_launch = one(
            &c,
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId \
             WHERE lower(s.value) LIKE '%launch%' AND lower(s.value) NOT LIKE '%synchronize%' \
             AND lower(s.value) NOT LIKE '%memcpy%' AND lower(s.value) NOT LIKE '%memset%'",
        );
        let launches: usize = t
            .lanes
            .iter()
            .filter(|l| matches!(l.kind, LaneKind::CudaApi { .. }))
            .map(|l| (0..l.ev.len()).filter(|&i| ApiKind::from_flags(l.ev.flags(i)) == ApiKind::Launch).count())
            .sum();
        assert_eq!(launches as i64, c_launch, "launches of {}", path.display());
    }
}
