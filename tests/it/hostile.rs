//! Hostile and broken inputs of issue 21, one test per defect: each builds its input at test
//! time (a mutated copy of a fixture, a generated Kineto file, a stub `nsys`) and checks
//! the answer against the input it built, never against lanescope's own earlier output.

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use tempfile::TempDir;

use crate::util::{fixture, lanescope, sql_i64};
use lanescope::{LaneKind, Options, analyze};

// A writable copy of a committed fixture in a fresh temporary directory.
fn scratch(name: &str) -> (TempDir, PathBuf) {
    let d = TempDir::new().unwrap();
    let p = d.path().join(name);
    std::fs::copy(fixture(name), &p).unwrap();
    (d, p)
}

fn mutate(p: &Path, sql: &str) {
    Connection::open(p).unwrap().execute_batch(sql).unwrap();
}

fn events(t: &lanescope::Trace, gpu: bool) -> usize {
    t.lanes.iter().filter(|l| l.kind.device().is_some() == gpu).map(|l| l.ev.len()).sum()
}

#[test]
fn a_kernel_or_copy_ending_at_i64_max_is_an_outlier_not_an_open_range() {
    let (_d, p) = scratch("pageable.sqlite");
    let gpu_rows = sql_i64(&p, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
        + sql_i64(&p, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY")
        + sql_i64(&p, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET");
    let span = sql_i64(&p, "SELECT max(end) - min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL");
    mutate(
        &p,
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 9223372036854775807
           WHERE rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL);
         UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET end = 9223372036854775807
           WHERE rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_MEMCPY);",
    );
    let t = lanescope::load(&p).unwrap();
    assert_eq!(t.meta.outliers.0, 2);
    assert_eq!(events(&t, true) as i64, gpu_rows - 2);
    let a = analyze(&t, &Options::default());
    // Busy time fits in the trace (9.2e18 ns before the fix).
    let busy: i64 = a.devices.iter().map(|d| d.busy.total()).sum();
    assert!(busy <= t.meta.end_ns - t.meta.start_ns && busy <= span, "busy {busy} ns");
}
