//! Hand-made exports in the shapes nsys writes across versions (nsys-sqlite.md §1d):
//! old metadata table, no ENUM tables, NULL ends, registered strings, domains,
//! start/end ranges, CUDA graphs only, backtrace rows, negative timestamps.

use lanescope::{ApiKind, LaneKind};
use rusqlite::Connection;
use tempfile::TempDir;

const PID: i64 = 4242;
// globalTid layout <hw:8><vm:8><pid:24><tid:24>; a non-zero VM id as real exports have.
const GTID: i64 = (1 << 48) | (PID << 24) | PID;
const GPID: i64 = (1 << 48) | (PID << 24);

fn make(dir: &TempDir, name: &str, sql: &str) -> std::path::PathBuf {
    let p = dir.path().join(name);
    let c = Connection::open(&p).unwrap();
    c.execute_batch(sql).unwrap();
    p
}

fn old_2022_export(dir: &TempDir) -> std::path::PathBuf {
    let sql = format!(
        "CREATE TABLE EXPORT_META_DATA (name TEXT, value TEXT);
         INSERT INTO EXPORT_META_DATA VALUES ('EXPORT_PRODUCT_VERSION', '2022.2.1.31'), ('EXPORT_SCHEMA_VERSION', '2.9.1');
         CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
         INSERT INTO StringIds VALUES (1, 'vecAdd'), (2, 'vecAdd(double*, double*, double*, int)'),
           (3, 'cudaLaunchKernel_v7000'), (4, 'cudaMemcpy_v3020'), (5, 'registered range'), (6, 'main');
         CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT NOT NULL, end INT NOT NULL, deviceId INT, contextId INT,
           streamId INT, correlationId INT, globalPid INT, demangledName INT, shortName INT);
         INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 2000, 0, 1, 7, 11, {GPID}, 2, 1), (5000, 5500, 0, 1, 7, 12, {GPID}, 2, 1);
         CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INT, end INT, deviceId INT, contextId INT, streamId INT,
           correlationId INT, globalPid INT, bytes INT, copyKind INT, srcKind INT, dstKind INT);
         INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (2500, 4500, 0, 1, 7, 13, {GPID}, 4000000, 1, 0, 2);
         CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT, end INT, eventClass INT, globalTid INT, correlationId INT,
           nameId INT, returnValue INT);
         INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (900, 950, 0, {GTID}, 11, 3, 0), (2400, 4600, 0, {GTID}, 13, 4, 0),
           (4700, 4750, 0, {GTID}, 12, 3, 0);
         CREATE TABLE NVTX_EVENTS (start INT, end INT, eventType INT, rangeId INT, category INT, color INT, text TEXT,
           globalTid INT, endGlobalTid INT, textId INT, domainId INT);
         INSERT INTO NVTX_EVENTS VALUES (-500, 6000, 59, NULL, NULL, NULL, NULL, {GTID}, NULL, 5, 0),
           (800, NULL, 59, NULL, NULL, NULL, 'never closed', {GTID}, NULL, NULL, 0);
         CREATE TABLE ThreadNames (nameId INT, priority INT, globalTid INT);
         INSERT INTO ThreadNames VALUES (6, 0, {GTID});"
    );
    make(dir, "old.sqlite", &sql)
}

#[test]
fn a_2022_export_without_enum_tables_loads() {
    let dir = TempDir::new().unwrap();
    let t = lanescope::load(&old_2022_export(&dir)).unwrap();
    assert_eq!(t.meta.nsys_version, "2022.2.1.31");
    assert_eq!(t.meta.schema_version, "2.9.1");
    // Negative timestamps are kept; the unterminated range runs to the trace end.
    assert_eq!(t.meta.start_ns, -500);
    assert_eq!(t.meta.end_ns, 6000);
    let nvtx: Vec<_> = t.lanes.iter().filter(|l| matches!(l.kind, LaneKind::Nvtx { .. })).collect();
    assert_eq!(nvtx.len(), 2, "outer range and the nested open one");
    let inner = nvtx.iter().find(|l| matches!(l.kind, LaneKind::Nvtx { depth: 1, .. })).unwrap();
    assert_eq!(inner.ev.end(0), 6000);
    assert_eq!(t.strings.get(inner.ev.name[0]), "never closed");
    let outer = nvtx.iter().find(|l| matches!(l.kind, LaneKind::Nvtx { depth: 0, .. })).unwrap();
    assert_eq!(t.strings.get(outer.ev.name[0]), "registered range");
    // Memory kinds come from built-in tables: pageable H2D.
    let mem = t.lanes.iter().find(|l| matches!(l.kind, LaneKind::Memory { .. })).unwrap();
    let f = lanescope::MemFlags::unpack(mem.ev.flags(0));
    assert!(f.is_pageable());
    assert!(matches!(mem.kind, LaneKind::Memory { class: lanescope::MemClass::H2D, .. }));
    // API names lose their version suffix and are classified.
    let api = t.lanes.iter().find(|l| matches!(l.kind, LaneKind::CudaApi { .. })).unwrap();
    assert_eq!(api.pid, PID as u32);
    assert_eq!(t.strings.get(api.ev.name[1]), "cudaMemcpy");
    assert_eq!(ApiKind::from_flags(api.ev.flags(1)), ApiKind::MemcpySync);
    assert_eq!(t.thread_name(PID as u32, PID as u32), "main");
    // Kernel demangled names are kept for the details view.
    let k = t.lanes.iter().find(|l| matches!(l.kind, LaneKind::Kernels { .. })).unwrap();
    assert_eq!(t.strings.get(k.ev.aux(0) as u32), "vecAdd(double*, double*, double*, int)");
}

#[test]
fn a_new_export_with_domains_graphs_and_backtraces_loads() {
    let dir = TempDir::new().unwrap();
    let sql = format!(
        "CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
         INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION', '2026.4.1'), ('EXPORT_SCHEMA_VERSION', '3.28.1');
         CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
         INSERT INTO StringIds VALUES (1, 'cudaGraphLaunch_v10000');
         CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE (start INT, end INT, deviceId INT, contextId INT, greenContextId INT,
           streamId INT, correlationId INT, globalPid INT, graphId INT, graphExecId INT);
         INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE VALUES (100, 900, 1, 1, NULL, 3, 5, {GPID}, 9, 1);
         CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT, end INT, eventClass INT, globalTid INT, correlationId INT,
           nameId INT, returnValue INT, callchainId INT);
         INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (50, 90, 0, {GTID}, 5, 1, 0, NULL), (50, 90, 67, {GTID}, 5, 1, 0, 1);
         CREATE TABLE NVTX_EVENTS (start INT NOT NULL, end INT, eventType INT NOT NULL, rangeId INT, category INT, color INT,
           text TEXT, globalTid INT, endGlobalTid INT, textId INT, domainId INT, uint64Value INT, int64Value INT,
           doubleValue REAL, uint32Value INT, int32Value INT, floatValue REAL, jsonTextId INT, jsonText TEXT,
           binaryData TEXT, eventId INTEGER NOT NULL PRIMARY KEY);
         INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId, eventId) VALUES
           (0, NULL, 75, 'CCCL', {GTID}, 7, 1),
           (10, 500, 60, 'load a', {GTID}, 7, 2),
           (20, 600, 60, 'load b', {GTID}, 7, 3),
           (700, 800, 60, 'load c', {GTID}, 7, 4),
           (300, NULL, 34, 'checkpoint', {GTID}, 0, 5),
           (0, NULL, 39, 'julia thread 2', {GTID}, 0, 6);"
    );
    let t = lanescope::load(&make(&dir, "new.sqlite", &sql)).unwrap();
    assert_eq!(t.meta.schema_version, "3.28.1");
    let graphs = t.lanes.iter().find(|l| matches!(l.kind, LaneKind::Graphs { device: 1, stream: 3 })).unwrap();
    assert_eq!(graphs.ev.len(), 1);
    // The backtrace row (eventClass 67) repeats the call and is not counted twice.
    let api = t.lanes.iter().find(|l| matches!(l.kind, LaneKind::CudaApi { .. })).unwrap();
    assert_eq!(api.ev.len(), 1);
    assert_eq!(ApiKind::from_flags(api.ev.flags(0)), ApiKind::Launch);
    // Overlapping start/end ranges are packed into two rows; the third reuses row 0.
    let rows: Vec<_> = t.lanes.iter().filter(|l| matches!(l.kind, LaneKind::NvtxStartEnd { .. })).collect();
    assert_eq!(rows.len(), 2);
    let row0 = rows.iter().find(|l| matches!(l.kind, LaneKind::NvtxStartEnd { row: 0, .. })).unwrap();
    assert_eq!(row0.ev.len(), 2);
    assert_eq!(t.strings.get(row0.ev.flags(0)), "CCCL", "domain name kept");
    let marks = t.lanes.iter().find(|l| matches!(l.kind, LaneKind::NvtxMarks { .. })).unwrap();
    assert_eq!((marks.ev.start[0], marks.ev.end(0)), (300, 300));
    assert_eq!(t.gpus.len(), 1);
    assert_eq!(t.gpus[0].device, 1);
}

#[test]
fn an_export_without_gpu_activity_is_valid() {
    let dir = TempDir::new().unwrap();
    let sql = format!(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
         INSERT INTO StringIds VALUES (1, 'poll');
         CREATE TABLE OSRT_API (start INT, end INT, eventClass INT, globalTid INT, nameId INT, returnValue INT,
           nestingLevel INT, callchainId INT);
         INSERT INTO OSRT_API VALUES (10, 2000, 27, {GTID}, 1, 0, 0, NULL);"
    );
    let t = lanescope::load(&make(&dir, "cpu.sqlite", &sql)).unwrap();
    assert!(t.gpus.is_empty());
    assert!(t.devices().is_empty());
    assert_eq!(t.event_count(), 1);
    let a = lanescope::analyze(&t, &lanescope::Options::default());
    assert!(a.gaps.is_empty());
}
