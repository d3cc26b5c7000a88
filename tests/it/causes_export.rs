//! Every cause rule of docs/causes.md, end to end: a hand-made export per rule (the
//! tables and columns nsys writes), the real binary's `report --format json --all-gaps`,
//! and the cause, phase and window it prints. Also the findings issue 7 added:
//! missing GPU records, managed copies, pageable D2H.

use assert_cmd::Command;
use rusqlite::Connection;
use serde_json::Value;
use tempfile::TempDir;

const PID: i64 = 700;
const US: i64 = 1_000;
const MS: i64 = 1_000_000;

fn gtid(tid: i64) -> i64 {
    (PID << 24) | tid
}

// One export under construction: rows as SQL values, tables made on `write`.
#[derive(Default)]
struct Export {
    strings: Vec<String>,
    kernels: Vec<(i64, i64, i64)>,
    memcpy: Vec<(i64, i64, i64, i64, i64, i64, i64)>,
    runtime: Vec<(i64, i64, i64, i64, i64)>,
    osrt: Vec<(i64, i64, i64, i64)>,
    nvtx: Vec<(i64, i64, i64, String)>,
    overhead: Vec<(i64, i64, i64, i64)>,
    no_kernel_table: bool,
}

impl Export {
    fn id(&mut self, s: &str) -> i64 {
        if let Some(i) = self.strings.iter().position(|x| x == s) {
            return i as i64 + 1;
        }
        self.strings.push(s.to_string());
        self.strings.len() as i64
    }

    // A kernel on GPU 0 stream 7 with correlation id `corr`.
    fn kernel(mut self, s: i64, e: i64, corr: i64) -> Self {
        self.id("k");
        self.kernels.push((s, e, corr));
        self
    }

    // A CUDA API call on thread `tid`.
    fn call(mut self, tid: i64, s: i64, e: i64, name: &str, corr: i64) -> Self {
        let n = self.id(name);
        self.runtime.push((s, e, gtid(tid), corr, n));
        self
    }

    fn os(mut self, tid: i64, s: i64, e: i64, name: &str) -> Self {
        let n = self.id(name);
        self.osrt.push((s, e, gtid(tid), n));
        self
    }

    fn range(mut self, tid: i64, s: i64, e: i64, text: &str) -> Self {
        self.nvtx.push((s, e, gtid(tid), text.to_string()));
        self
    }

    fn flush(mut self, tid: i64, s: i64, e: i64, name: &str) -> Self {
        let n = self.id(name);
        self.overhead.push((s, e, gtid(tid), n));
        self
    }

    // A copy: (start, end, corr, bytes, copyKind, srcKind, dstKind).
    fn copy(mut self, row: (i64, i64, i64, i64, i64, i64, i64)) -> Self {
        self.memcpy.push(row);
        self
    }

    fn write(&self, dir: &TempDir, name: &str) -> std::path::PathBuf {
        let p = dir.path().join(name);
        let c = Connection::open(&p).unwrap();
        let mut sql = String::from(
            "CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
             INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION', '2025.3.1.90'), ('EXPORT_SCHEMA_VERSION', '3.20.3');
             CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
             CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT, end INT, eventClass INT, globalTid INT, correlationId INT, nameId INT);
             CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INT, end INT, deviceId INT, streamId INT, correlationId INT,
               globalPid INT, bytes INT, copyKind INT, srcKind INT, dstKind INT);
             CREATE TABLE OSRT_API (start INT, end INT, globalTid INT, nameId INT);
             CREATE TABLE NVTX_EVENTS (start INT, end INT, eventType INT, text TEXT, globalTid INT, textId INT, domainId INT);
             CREATE TABLE PROFILER_OVERHEAD (start INT, end INT, globalTid INT, nameId INT);
             CREATE TABLE ThreadNames (nameId INT, priority INT, globalTid INT);",
        );
        if !self.no_kernel_table {
            sql.push_str(
                "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, deviceId INT, streamId INT, correlationId INT,
                   globalPid INT, shortName INT, demangledName INT);",
            );
        }
        c.execute_batch(&sql).unwrap();
        for (i, s) in self.strings.iter().enumerate() {
            c.execute("INSERT INTO StringIds VALUES (?1, ?2)", (i as i64 + 1, s)).unwrap();
        }
        let k = self.strings.iter().position(|s| s == "k").map_or(0, |i| i as i64 + 1);
        for &(s, e, corr) in self.kernels.iter().filter(|_| !self.no_kernel_table) {
            c.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?1, ?2, 0, 7, ?3, ?4, ?5, ?5)",
                (s, e, corr, PID << 24, k),
            )
            .unwrap();
        }
        for &(s, e, corr, bytes, kind, src, dst) in &self.memcpy {
            c.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (?1, ?2, 0, 7, ?3, ?4, ?5, ?6, ?7, ?8)",
                (s, e, corr, PID << 24, bytes, kind, src, dst),
            )
            .unwrap();
        }
        for &(s, e, g, corr, n) in &self.runtime {
            c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?1, ?2, 0, ?3, ?4, ?5)", (s, e, g, corr, n))
                .unwrap();
        }
        for &(s, e, g, n) in &self.osrt {
            c.execute("INSERT INTO OSRT_API VALUES (?1, ?2, ?3, ?4)", (s, e, g, n)).unwrap();
        }
        for (s, e, g, text) in &self.nvtx {
            c.execute("INSERT INTO NVTX_EVENTS VALUES (?1, ?2, 59, ?3, ?4, NULL, 0)", (s, e, text, g)).unwrap();
        }
        for &(s, e, g, n) in &self.overhead {
            c.execute("INSERT INTO PROFILER_OVERHEAD VALUES (?1, ?2, ?3, ?4)", (s, e, g, n)).unwrap();
        }
        p
    }
}

fn report(path: &std::path::Path) -> Value {
    let out = Command::cargo_bin("lanescope")
        .unwrap()
        .env("XDG_CACHE_HOME", crate::util::cache_home())
        .args(["report", "--format", "json", "--all-gaps"])
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

// The one gap between a kernel ending at 1 ms and the next starting at `end`
// (launched by corr 2), with what `more` adds: (cause, evidence, phase).
fn one_gap(end: i64, more: impl FnOnce(Export) -> Export) -> (String, String, Option<String>) {
    let dir = TempDir::new().unwrap();
    let e = more(Export::default().kernel(0, MS, 1).kernel(end, end + MS, 2).os(PID, 0, 10, "ioctl"));
    let v = report(&e.write(&dir, "t.sqlite"));
    let all = v["gaps"]["all"].as_array().unwrap();
    assert_eq!(all.len(), 1, "{all:?}");
    let g = &all[0];
    assert_eq!((g["start_ns"].as_i64(), g["end_ns"].as_i64()), (Some(MS), Some(end)));
    (g["cause"].as_str().unwrap().into(), g["evidence"].as_str().unwrap().into(), g["phase"].as_str().map(Into::into))
}

fn launch(end: i64) -> impl FnOnce(Export) -> Export {
    move |e: Export| e.call(PID, end - 20 * US, end - 10 * US, "cudaLaunchKernel_v7000", 2)
}

#[test]
fn rule_1_profiler_flush_while_the_thread_is_in_a_cuda_call() {
    let (cause, ev, _) = one_gap(10 * MS, |e| {
        e.call(PID, MS - 5 * US, 10 * MS - 5 * US, "cudaLaunchKernel_v7000", 2).flush(
            PID + 5,
            2 * MS,
            9 * MS,
            "CUPTI Buffer flush",
        )
    });
    assert_eq!(cause, "profiler", "{ev}");
    assert!(ev.starts_with("CUPTI Buffer flush 7.00 ms"), "{ev}");
}

#[test]
fn rule_2_queued_work_names_the_lazy_load() {
    let (cause, ev, _) = one_gap(10 * MS, |e| {
        e.call(PID, MS / 2, MS / 2 + 10 * US, "cudaLaunchKernel_v7000", 2).call(
            PID,
            2 * MS,
            9 * MS,
            "cuLibraryLoadData",
            3,
        )
    });
    assert_eq!(cause, "queued");
    assert!(ev.contains("cuLibraryLoadData 7.00 ms") && ev.contains("lazy loading"), "{ev}");
}

#[test]
fn rule_3_launch_bound_at_any_length() {
    let end = 8 * MS;
    let (cause, ev, _) = one_gap(end, |mut e| {
        let mut t = MS;
        let mut corr = 100;
        while t < end - 30 * US {
            e = e.call(
                PID,
                t,
                t + 4 * US,
                if corr % 2 == 0 { "cudaLaunchKernel_v7000" } else { "cudaGetDevice" },
                corr,
            );
            t += 10 * US;
            corr += 1;
        }
        launch(end)(e)
    });
    assert_eq!(cause, "launch-bound", "{ev}");
}

#[test]
fn rule_4_scores_the_thread_time() {
    let (cause, _, _) = one_gap(10 * MS, |e| launch(10 * MS)(e.call(PID, 2 * MS, 9 * MS, "cudaEventSynchronize", 9)));
    assert_eq!(cause, "sync-wait");
    let (cause, _, phase) = one_gap(10 * MS, |e| {
        launch(10 * MS)(e.os(PID, 2 * MS, 9 * MS, "poll").range(PID, 0, 20 * MS, "step 1").range(
            PID,
            MS / 2,
            12 * MS,
            "copy data",
        ))
    });
    assert_eq!((cause.as_str(), phase.as_deref()), ("host-wait", Some("copy data")));
    let (cause, ev, _) = one_gap(10 * MS, |e| launch(10 * MS)(e.os(PID, 2 * MS, 9 * MS, "munmap")));
    assert_eq!(cause, "host-busy", "{ev}");
    let (cause, _, _) = one_gap(10 * MS, |e| {
        launch(10 * MS)(e.call(PID, 2 * MS, 9 * MS, "cudaMemcpyAsync_v3020", 5).copy((
            10 * MS,
            10 * MS + 1,
            5,
            10,
            1,
            0,
            2,
        )))
    });
    assert_eq!(cause, "pageable-copy");
}

#[test]
fn rule_5_sync_drain_names_the_sync() {
    // The host waited 5 ms in the sync, more than half of the 9 ms gap after it.
    let (cause, ev, _) =
        one_gap(10 * MS, |e| launch(10 * MS)(e.call(PID, -4 * MS, MS + 8 * US, "cudaStreamSynchronize_v3020", 9)));
    assert_eq!(cause, "sync-drain");
    assert!(ev.starts_with("cudaStreamSynchronize returned 8.00 µs into the gap"), "{ev}");
    // A 508 µs sync then 9 ms of work: the work is the gap.
    let (cause, ev, _) =
        one_gap(10 * MS, |e| launch(10 * MS)(e.call(PID, MS / 2, MS + 8 * US, "cudaStreamSynchronize_v3020", 9)));
    assert_eq!(cause, "host-busy", "{ev}");
    assert!(ev.ends_with("after a 508 µs cudaStreamSynchronize"), "{ev}");
}

#[test]
fn launches_without_kernel_records_say_so_and_keep_api_findings() {
    let dir = TempDir::new().unwrap();
    let mut e = Export::default()
        .call(PID, 0, 10, "cudaLaunchKernel_v7000", 1)
        .call(PID, 20, 30, "cudaLaunchKernel_v7000", 2)
        .call(PID, 40, 5 * MS, "cudaDeviceSynchronize_v3020", 3)
        .kernel(0, 1, 1);
    e.no_kernel_table = true;
    let v = report(&e.write(&dir, "nokernels.sqlite"));
    let rules: Vec<&str> = v["findings"].as_array().unwrap().iter().map(|f| f["rule"].as_str().unwrap()).collect();
    assert!(rules.contains(&"gpu_records_missing"), "{rules:?}");
    assert!(rules.contains(&"cuda_api_sync"), "{rules:?}");
    let f = v["findings"].as_array().unwrap().iter().find(|f| f["rule"] == "gpu_records_missing").unwrap();
    assert!(f["message"].as_str().unwrap().starts_with("2 kernel launches were traced (cudaLaunchKernel x2)"), "{f}");
}

#[test]
fn unified_memory_copies_are_managed_and_pageable_d2h_is_named() {
    let dir = TempDir::new().unwrap();
    // A UVM H2D copy (kind 11, sides unknown) and 8 pageable D2H copies of 64 MiB taking
    // 40 ms of a 100 ms span, against pinned D2H copies of the same size 4x faster.
    let mut e =
        Export::default().kernel(0, MS, 1).kernel(99 * MS, 100 * MS, 2).copy((MS, 2 * MS, 3, 1 << 20, 11, 7, 7));
    for k in 0..8 {
        e = e.copy((10 * MS + k * 6 * MS, 15 * MS + k * 6 * MS, 10 + k, 64 << 20, 2, 2, 0));
        e = e.copy((70 * MS + k * 3 * MS, 71 * MS + k * 3 * MS + 250 * US, 30 + k, 64 << 20, 2, 2, 1));
    }
    let v = report(&e.write(&dir, "d2h.sqlite"));
    let memories: Vec<&str> =
        v["transfers"].as_array().unwrap().iter().map(|t| t["memory"].as_str().unwrap()).collect();
    assert!(memories.contains(&"managed"), "{memories:?}");
    let f = v["findings"].as_array().unwrap().iter().find(|f| f["rule"] == "pageable_bandwidth").unwrap();
    assert_eq!(f["evidence"]["direction"], "D2H");
    assert_eq!(f["evidence"]["size_class"], "16-256 MiB");
    assert_eq!(f["severity"], "critical", "{f}");
    assert!(f["fix"].as_str().unwrap().contains("pinned host memory"), "{f}");
}
