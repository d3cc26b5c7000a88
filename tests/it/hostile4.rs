//! Hostile inputs of issue 36 (hardening 4), one test per defect: special files named like
//! reports, odd GPU-metrics cells, extreme metric values, lane order, many metrics merged,
//! huge names in pictures, many distinct phases in `diff`. Each builds its input at test
//! time and checks the answer against that input, never against lanescope's earlier output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::util::lanescope;

// Run `c` with a deadline: a hang fails the test instead of blocking it.
fn within(mut c: Command, secs: u64) -> Output {
    let mut child = c.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // Stdin stays open and silent: a reader of /dev/stdin would wait forever.
    let _stdin = child.stdin.take();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(secs) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("still running after {secs} s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

// A FIFO, a link to /dev/stdin and one to a device, each named like a report or an export.
fn special_files(d: &Path) -> Vec<PathBuf> {
    let fifo = d.join("fifo.nsys-rep");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let stdin = d.join("stdin.qdrep");
    std::os::unix::fs::symlink("/dev/stdin", &stdin).unwrap();
    let dev = d.join("zero.nsys-rep");
    std::os::unix::fs::symlink("/dev/zero", &dev).unwrap();
    let fifo_sqlite = d.join("fifo.sqlite");
    assert!(Command::new("mkfifo").arg(&fifo_sqlite).status().unwrap().success());
    vec![fifo, stdin, dev, fifo_sqlite]
}

#[test]
fn a_fifo_or_device_named_like_a_report_is_refused_at_once() {
    let d = TempDir::new().unwrap();
    for p in special_files(d.path()) {
        for cmd in [&["info"][..], &["report", "--format", "json"][..]] {
            let mut c = Command::new(assert_cmd::cargo::cargo_bin("lanescope"));
            c.args(cmd).arg(&p).env("XDG_CACHE_HOME", d.path().join("cache")).env_remove("LANESCOPE_NSYS");
            let out = within(c, 20);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{}: {err}", p.display());
            assert_eq!(err.lines().count(), 1, "{err}");
            assert!(err.contains(&p.display().to_string()) && err.contains("not a regular file"), "{err}");
        }
    }
}

// A writable copy of a capture with GPU metrics.
fn metrics_copy(d: &Path) -> PathBuf {
    let p = d.join("metrics.sqlite");
    std::fs::copy(crate::util::matrix_trace("g_pinned"), &p).unwrap();
    p
}

// Issue 36, item 12: one odd cell in GPU_METRICS or TARGET_INFO_GPU_METRICS skips its row
// (counted), not the export.
#[test]
fn odd_gpu_metrics_cells_skip_their_rows_and_are_counted() {
    let d = TempDir::new().unwrap();
    let p = metrics_copy(d.path());
    let rx = "PCIe RX Throughput [Throughput %]";
    let db = crate::util::sql(&p);
    let (ty, id): (i64, i64) = db
        .query_row("SELECT typeId, metricId FROM TARGET_INFO_GPU_METRICS WHERE metricName = ?1", [rx], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    drop(db);
    let of_rx = format!("typeId = {ty} AND metricId = {id}");
    crate::util::sql_exec(
        &p,
        &format!(
            "UPDATE GPU_METRICS SET value = 'x' WHERE rowid IN (SELECT rowid FROM GPU_METRICS WHERE {of_rx} LIMIT 3);
             UPDATE GPU_METRICS SET timestamp = X'00ff' WHERE rowid IN (SELECT rowid FROM GPU_METRICS WHERE {of_rx} LIMIT 2 OFFSET 10);
             UPDATE TARGET_INFO_GPU_METRICS SET metricId = 'odd' WHERE metricName = 'SMs Active [Throughput %]';"
        ),
    );
    let t = lanescope::load(&p).expect("the export loads");
    let readable = crate::util::sql_i64(
        &p,
        &format!(
            "SELECT count(*) FROM GPU_METRICS WHERE {of_rx} AND typeof(timestamp) IN ('integer', 'real') \
             AND typeof(value) IN ('integer', 'real', 'null')"
        ),
    );
    assert_eq!(t.counters.get(0, rx).map(lanescope::CounterSeries::len), Some(readable as usize));
    assert!(t.counters.get(0, "SMs Active [Throughput %]").is_none(), "its metric row was unreadable");
    let skipped = |table: &str| {
        t.meta.tables.iter().find(|s| s.name.contains(table) && s.name.contains("unreadable")).map(|s| s.rows)
    };
    assert_eq!(skipped(" GPU_METRICS"), Some(5));
    assert_eq!(skipped("TARGET_INFO_GPU_METRICS"), Some(1));
    let out = lanescope().args(["report", "--format", "json"]).arg(&p).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // A column gone is no counters, not a refused export (every column is optional).
    for (table, col) in [("GPU_METRICS", "value"), ("TARGET_INFO_GPU_METRICS", "metricId")] {
        let q = metrics_copy(d.path());
        crate::util::sql_exec(&q, &format!("ALTER TABLE {table} DROP COLUMN {col}"));
        assert!(lanescope::load(&q).expect("the export loads").counters.is_empty(), "{table}.{col}");
    }
}

// An export of `n` processes (pids 101, 102...) whose kernels all run on GPU 0 stream 7,
// each with a CUDA API thread and synchronization records.
pub(crate) fn processes_on_one_stream(d: &Path, n: i64) -> PathBuf {
    let p = d.join("procs.sqlite");
    crate::util::sql_exec(&p, crate::util::MIN_SCHEMA);
    crate::util::sql_exec(
        &p,
        "CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INT, end INT, deviceId INT, streamId INT,
           correlationId INT, globalPid INT, syncType INT);
         CREATE TABLE ThreadNames (nameId INT, priority INT, globalTid INT);
         INSERT INTO StringIds VALUES (1, 'k'), (2, 'cudaLaunchKernel_v7000'), (3, 'worker');",
    );
    for i in 0..n {
        let pid = 101 + i;
        let (gpid, gtid) = (pid << 24, (pid << 24) | (pid + 1000));
        let t = 1000 * i;
        crate::util::sql_exec(
            &p,
            &format!(
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES ({a}, {b}, 0, 7, {c}, {gpid}, 1, 1);
                 INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES ({t}, {a}, 0, {gtid}, {c}, 2);
                 INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES ({b}, {e}, 0, 7, {c}, {gpid}, 3);
                 INSERT INTO PROCESSES VALUES ({gpid}, {pid}, 'python3');
                 INSERT INTO ThreadNames VALUES (3, 0, {gtid});",
                a = t + 100,
                b = t + 200,
                e = t + 300,
                c = i + 1
            ),
        );
    }
    p
}

// Issue 36, item 13: lanes, threads and sync records come in one order on every load:
// lanes of one GPU stream by pid, threads by (pid, tid).
#[test]
fn lane_and_thread_order_is_the_same_on_every_load() {
    let d = TempDir::new().unwrap();
    let p = processes_on_one_stream(d.path(), 6);
    let order = |t: &lanescope::Trace| {
        let lanes: Vec<String> = t.lanes.iter().map(|l| format!("{:?}/{}", l.kind, l.pid)).collect();
        let threads: Vec<(u32, u32)> = t.threads.iter().map(|x| (x.pid, x.tid)).collect();
        let syncs: Vec<u32> = t.syncs.iter().map(|s| s.pid).collect();
        (lanes, threads, syncs)
    };
    let first = order(&lanescope::load(&p).unwrap());
    let kernel_pids: Vec<u32> = lanescope::load(&p)
        .unwrap()
        .lanes
        .iter()
        .filter(|l| matches!(l.kind, lanescope::LaneKind::Kernels { .. }))
        .map(|l| l.pid)
        .collect();
    assert_eq!(kernel_pids, (101..107).collect::<Vec<u32>>());
    assert_eq!(first.2, (101..107).collect::<Vec<u32>>());
    for _ in 0..8 {
        assert_eq!(order(&lanescope::load(&p).unwrap()), first);
    }
}
