//! The reader against independent SQL over the same files, and against hand-made
//! exports in the shapes of older and newer nsys schemas.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::util::{fixture, sql};
use lanescope::{LaneKind, MemClass, Trace, decode_global_tid};

fn count_by<K: std::hash::Hash + Eq>(trace: &Trace, key: impl Fn(LaneKind, u32) -> Option<K>) -> HashMap<K, usize> {
    let mut m = HashMap::new();
    for l in &trace.lanes {
        if let Some(k) = key(l.kind, l.pid) {
            *m.entry(k).or_insert(0) += l.ev.len();
        }
    }
    m
}

fn fixtures() -> [PathBuf; 3] {
    [fixture("pageable.sqlite"), fixture("pinned.sqlite"), fixture("prefetch.sqlite")]
}

#[test]
fn kernels_per_stream_match_sql() {
    for f in fixtures() {
        let t = crate::util::load_warm(&f);
        let got = count_by(&t, |k, _| match k {
            LaneKind::Kernels { device, stream } => Some((i64::from(device), i64::from(stream))),
            _ => None,
        });
        let c = sql(&f);
        let mut stmt =
            c.prepare("SELECT deviceId, streamId, count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY 1, 2").unwrap();
        let want: HashMap<(i64, i64), usize> = stmt
            .query_map([], |r| Ok(((r.get(0)?, r.get(1)?), r.get::<_, i64>(2)? as usize)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(got, want, "{}", f.display());
    }
}

#[test]
fn memcpy_and_memset_match_sql() {
    for f in fixtures() {
        let t = crate::util::load_warm(&f);
        let mut got: HashMap<&str, (usize, u64)> = HashMap::new();
        for l in &t.lanes {
            if let LaneKind::Memory { class, .. } = l.kind {
                let e = got.entry(class.label()).or_default();
                e.0 += l.ev.len();
                e.1 += l.ev.aux_values().sum::<u64>();
            }
        }
        let c = sql(&f);
        let mut want: HashMap<&str, (usize, u64)> = HashMap::new();
        let mut stmt =
            c.prepare("SELECT copyKind, count(*), sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMCPY GROUP BY 1").unwrap();
        for row in stmt.query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))).unwrap()
        {
            let (k, n, b) = row.unwrap();
            let e = want.entry(MemClass::from_copy_kind(k as u8).label()).or_default();
            e.0 += n as usize;
            e.1 += b as u64;
        }
        let (n, b): (i64, i64) = c
            .query_row("SELECT count(*), sum(bytes) FROM CUPTI_ACTIVITY_KIND_MEMSET", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        want.insert("memset", (n as usize, b as u64));
        assert_eq!(got, want, "{}", f.display());
    }
}

#[test]
fn api_calls_per_thread_match_sql() {
    for f in fixtures() {
        let t = crate::util::load_warm(&f);
        let got = count_by(&t, |k, pid| match k {
            LaneKind::CudaApi { tid } => Some((pid, tid)),
            _ => None,
        });
        let c = sql(&f);
        let mut stmt = c
            .prepare(
                "SELECT globalTid, count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME \
                 WHERE eventClass NOT IN (67, 68, 69) GROUP BY 1",
            )
            .unwrap();
        let want: HashMap<(u32, u32), usize> = stmt
            .query_map([], |r| Ok((decode_global_tid(r.get(0)?), r.get::<_, i64>(1)? as usize)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(got, want, "{}", f.display());
    }
}

#[test]
fn osrt_calls_per_thread_match_sql() {
    let f = fixture("pageable.sqlite");
    let t = crate::util::load_warm(&f);
    let got = count_by(&t, |k, pid| match k {
        LaneKind::Osrt { tid } => Some((pid, tid)),
        _ => None,
    });
    let c = sql(&f);
    let mut stmt = c.prepare("SELECT globalTid, count(*) FROM OSRT_API GROUP BY 1").unwrap();
    let want: HashMap<(u32, u32), usize> = stmt
        .query_map([], |r| Ok((decode_global_tid(r.get(0)?), r.get::<_, i64>(1)? as usize)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(got, want);
}

#[test]
fn nvtx_ranges_nest_by_depth() {
    let f = fixture("pageable.sqlite");
    let t = crate::util::load_warm(&f);
    let c = sql(&f);
    let n: i64 = c.query_row("SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59", [], |r| r.get(0)).unwrap();
    let steps: i64 = c
        .query_row("SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59 AND text LIKE 'step %'", [], |r| r.get(0))
        .unwrap();
    let depth = |d: u16| {
        t.lanes.iter().filter(|l| matches!(l.kind, LaneKind::Nvtx { depth, .. } if depth == d)).collect::<Vec<_>>()
    };
    let total: usize = t.lanes.iter().filter(|l| matches!(l.kind, LaneKind::Nvtx { .. })).map(|l| l.ev.len()).sum();
    assert_eq!(total as i64, n);
    // The training loop pushes `step N` and nests its phases inside: steps are depth 0.
    let top = depth(0);
    assert_eq!(top.iter().map(|l| l.ev.len()).sum::<usize>() as i64, steps);
    for l in &top {
        for i in 0..l.ev.len() {
            assert!(t.strings.get(l.ev.name[i]).starts_with("step "));
        }
    }
    for child in depth(1) {
        let parent = top.iter().find(|p| p.kind.tid() == child.kind.tid()).unwrap();
        for i in 0..child.ev.len() {
            let (s, e) = (child.ev.start[i], child.ev.end(i));
            let inside = (0..parent.ev.len()).any(|j| parent.ev.start[j] <= s && e <= parent.ev.end(j));
            assert!(inside, "child range {s}..{e} not inside a step");
        }
    }
}

#[test]
fn names_meta_and_extent_match_sql() {
    let f = fixture("pageable.sqlite");
    let t = crate::util::load_warm(&f);
    let c = sql(&f);
    let v: String = c
        .query_row("SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_PRODUCT_VERSION'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(t.meta.nsys_version, v);
    let gpu: String = c.query_row("SELECT name FROM TARGET_INFO_GPU", [], |r| r.get(0)).unwrap();
    assert_eq!(t.gpus[0].name, gpu);
    let (start, end): (i64, i64) = c
        .query_row(
            "SELECT min(s), max(e) FROM (
               SELECT min(start) s, max(\"end\") e FROM CUPTI_ACTIVITY_KIND_KERNEL UNION ALL
               SELECT min(start), max(\"end\") FROM CUPTI_ACTIVITY_KIND_MEMCPY UNION ALL
               SELECT min(start), max(\"end\") FROM CUPTI_ACTIVITY_KIND_MEMSET UNION ALL
               SELECT min(start), max(\"end\") FROM CUPTI_ACTIVITY_KIND_RUNTIME UNION ALL
               SELECT min(start), max(\"end\") FROM NVTX_EVENTS UNION ALL
               SELECT min(start), max(\"end\") FROM OSRT_API)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((t.meta.start_ns, t.meta.end_ns), (start, end));
    // Kernel names resolve through StringIds (shortName).
    let name: String = c
        .query_row(
            "SELECT s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName ORDER BY k.start LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let lane = t.lanes.iter().find(|l| matches!(l.kind, LaneKind::Kernels { .. })).unwrap();
    assert_eq!(t.strings.get(lane.ev.name[0]), name);
    let main_tid = t.lanes.iter().find_map(|l| match l.kind {
        LaneKind::CudaApi { tid } if tid == l.pid => Some(tid),
        _ => None,
    });
    let pname: String =
        c.query_row("SELECT name FROM PROCESSES WHERE pid = ?1", [main_tid.unwrap()], |r| r.get(0)).unwrap();
    assert_eq!(t.process_name(main_tid.unwrap()), pname);
}

#[test]
fn correlation_links_kernels_to_launches() {
    let f = fixture("pageable.sqlite");
    let t = crate::util::load_warm(&f);
    let c = sql(&f);
    let (corr, api): (i64, String) = c
        .query_row(
            "SELECT k.correlationId, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k
             JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
             JOIN StringIds s ON s.id = r.nameId ORDER BY k.start LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let lane = t.lanes.iter().find(|l| matches!(l.kind, LaneKind::Kernels { .. })).unwrap();
    let op = t.gpu_op_for(lane.pid, corr as u32).unwrap();
    assert!(t.lanes[op.lane as usize].kind.is_gpu_work());
    let call = t.api_call_for(lane.pid, corr as u32).unwrap();
    let l = &t.lanes[call.lane as usize];
    assert_eq!(t.strings.get(l.ev.name[call.idx as usize]), lanescope::strip_api_version(&api));
}

#[test]
fn public_exports_of_older_versions_load() {
    // Older real exports live outside the repository (never committed); test them when present.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/traces/public");
    let Ok(entries) = std::fs::read_dir(&dir) else { return };
    for e in entries {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "sqlite") {
            let t = crate::util::load_warm(&p);
            let c = sql(&p);
            let kernels: i64 =
                c.query_row("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL", [], |r| r.get(0)).unwrap();
            let got: usize =
                t.lanes.iter().filter(|l| matches!(l.kind, LaneKind::Kernels { .. })).map(|l| l.ev.len()).sum();
            assert_eq!(got as i64, kernels, "{}", p.display());
            assert!(!t.meta.nsys_version.is_empty(), "{}", p.display());
        }
    }
}
