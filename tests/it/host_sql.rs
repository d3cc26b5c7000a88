//! Host data (context switches, CPU samples) against independent SQL over real exports.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::util::{fixture, sql};
use lanescope::{HostIndex, cpu_load};
use lanescope::{LaneKind, SampleFlags, Trace, decode_global_tid};
use rusqlite::Connection;

// Committed captures with samples and switches, and the public 2023.3 export when present
// (never committed: it lives next to the repository).
fn exports() -> Vec<PathBuf> {
    let public = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/traces/public/2023.3_pageable_h2d_a.sqlite");
    let mut v = vec![fixture("contention.sqlite"), fixture("slowpy.sqlite")];
    if public.exists() {
        v.push(public);
    } else {
        println!("note: {} absent, not tested", public.display());
    }
    v
}

fn query_map<K: std::hash::Hash + Eq>(c: &Connection, q: &str, f: impl Fn(i64) -> K) -> HashMap<K, i64> {
    let mut stmt = c.prepare(q).unwrap();
    stmt.query_map([], |r| Ok((f(r.get(0)?), r.get::<_, i64>(1)?))).unwrap().map(Result::unwrap).collect()
}

fn load(p: &Path) -> Trace {
    crate::util::load_warm(p)
}

fn per_thread(t: &Trace, want: fn(LaneKind) -> bool, f: impl Fn(&lanescope::Lane) -> i64) -> HashMap<(u32, u32), i64> {
    let mut m = HashMap::new();
    for l in t.lanes.iter().filter(|l| want(l.kind)) {
        *m.entry((l.pid, l.kind.tid().unwrap())).or_insert(0) += f(l);
    }
    m
}

#[test]
fn samples_per_thread_match_sql() {
    for f in exports() {
        let t = load(&f);
        let got = per_thread(&t, |k| matches!(k, LaneKind::Samples { .. }), |l| l.ev.len() as i64);
        let want =
            query_map(&sql(&f), "SELECT globalTid, count(*) FROM COMPOSITE_EVENTS GROUP BY 1", decode_global_tid);
        assert_eq!(got, want, "{}", f.display());
        assert_eq!(t.host.samples as i64, want.values().sum::<i64>());
        assert!(t.host.sampled_threads.iter().all(|r| r.hz > 0.0), "{}", f.display());
    }
}

#[test]
fn on_cpu_time_per_thread_matches_sql_pairing() {
    for f in exports() {
        let t = load(&f);
        let c = sql(&f);
        let on_cpu = |k| matches!(k, LaneKind::OnCpu { .. });
        let got = per_thread(&t, on_cpu, |l| (0..l.ev.len()).map(|i| l.ev.dur(i)).sum());
        let q = format!("SELECT g, sum(e - s) FROM ({INTERVALS}) GROUP BY g");
        let want = query_map(&c, &q, decode_global_tid);
        assert_eq!(got, want, "{}", f.display());
        let got = per_thread(&t, on_cpu, |l| l.ev.len() as i64);
        let want = query_map(&c, &format!("SELECT g, count(*) FROM ({INTERVALS}) GROUP BY g"), decode_global_tid);
        assert_eq!(got, want, "{}", f.display());
        let switches: i64 = c.query_row("SELECT count(*) FROM SCHED_EVENTS", [], |r| r.get(0)).unwrap();
        assert_eq!(t.host.switches as i64, switches);
    }
}

#[test]
fn busy_time_per_cpu_matches_sql() {
    for f in exports() {
        let t = load(&f);
        let ix = HostIndex::build(&t);
        let c = sql(&f);
        let (lo, hi): (i64, i64) =
            c.query_row("SELECT min(start), max(start) FROM SCHED_EVENTS", [], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
        // The whole capture, and windows cutting through intervals.
        let third = (hi - lo) / 3;
        for (a, b) in [(lo, hi + 1), (lo + third, lo + 2 * third), (lo + 12_345, lo + third + 777)] {
            // nsys's own threads are no CPU load.
            let q = format!(
                "SELECT cpu, sum(max(0, min(e, {b}) - max(s, {a}))) FROM ({INTERVALS}) WHERE g NOT IN ({NSYS_THREADS}) \
                 GROUP BY cpu"
            );
            let want = query_map(&c, &q, |cpu| cpu as u32);
            for (&cpu, &busy) in &want {
                assert_eq!(ix.cpu_busy_ns(cpu, a, b), busy, "{} cpu {cpu} [{a}, {b})", f.display());
            }
            let all = query_map(&c, &format!("SELECT cpu, count(*) FROM ({INTERVALS}) GROUP BY cpu"), |cpu| cpu as u32);
            let mut cpus: Vec<u32> = all.keys().copied().collect();
            cpus.sort_unstable();
            assert_eq!(t.host.cpus, cpus);
            let pid = t.lanes.iter().find(|l| l.kind.is_host()).unwrap().pid;
            let load = cpu_load(&ix, &[pid], a, b);
            assert!(load.usable.iter().all(|c| cpus.contains(c)));
            assert!((0.0..=1.0).contains(&load.busy_share), "{}", load.busy_share);
        }
    }
}

// On-CPU intervals paired in SQL: a switch-in runs to the thread's next switch (or the last
// switch of the capture); a thread whose first switch is a switch-out ran since the first
// switch of the capture. Columns: g (globalTid), cpu, s, e.
const INTERVALS: &str = "
    WITH b AS (SELECT min(start) lo, max(start) hi FROM SCHED_EVENTS),
    x AS (SELECT globalTid g, cpu, start, isSchedIn i,
                 LEAD(start) OVER w nxt, ROW_NUMBER() OVER w rn
          FROM SCHED_EVENTS WINDOW w AS (PARTITION BY globalTid ORDER BY start, rowid))
    SELECT g, cpu, start s, coalesce(nxt, (SELECT hi FROM b)) e FROM x WHERE i != 0
    UNION ALL
    SELECT g, cpu, (SELECT lo FROM b) s, start e FROM x WHERE i = 0 AND rn = 1";

// Threads that nsys runs inside the profiled processes, by name.
const NSYS_THREADS: &str = "SELECT t.globalTid FROM ThreadNames t JOIN StringIds n ON n.id = t.nameId
    WHERE n.value LIKE '[NSys%' OR n.value LIKE 'NSys%' OR n.value LIKE '%CUPTI%' OR n.value LIKE '%CommsProcess%'";

#[test]
fn leaf_frames_match_sql() {
    for f in exports() {
        let t = load(&f);
        let c = sql(&f);
        let mut stmt = c
            .prepare(
                "SELECT e.globalTid, e.start, e.cpu, s.value, m.value FROM COMPOSITE_EVENTS e
                 JOIN SAMPLING_CALLCHAINS k ON k.id = e.id AND k.stackDepth = 0
                 JOIN StringIds s ON s.id = k.symbol JOIN StringIds m ON m.id = k.module
                 WHERE e.id % 97 = 1 ORDER BY e.id LIMIT 40",
            )
            .unwrap();
        let rows: Vec<(i64, i64, i64, String, String)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(!rows.is_empty(), "{}", f.display());
        for (g, start, cpu, symbol, module) in rows {
            let (pid, tid) = decode_global_tid(g);
            let lane = t.lanes.iter().find(|l| l.pid == pid && l.kind == LaneKind::Samples { tid }).unwrap();
            let ev = &lane.ev;
            let found = (0..ev.len()).any(|i| {
                ev.start[i] == start
                    && t.strings.get(ev.name[i]) == symbol
                    && t.strings.get(ev.aux(i) as u32) == module
                    && i64::from(SampleFlags::unpack(ev.flags(i)).cpu) == cpu
            });
            assert!(found, "{}: sample of tid {tid} at {start}: {symbol} in {module}", f.display());
        }
    }
}

#[test]
fn traces_without_host_tables_have_no_host_lanes() {
    for name in ["pageable.sqlite", "pinned.sqlite", "prefetch.sqlite", "graphs.sqlite", "multigpu.sqlite"] {
        let t = load(&fixture(name));
        assert!(t.lanes.iter().all(|l| !l.kind.is_host()), "{name}");
        assert!(!t.host.tables.sched && !t.host.tables.samples, "{name}");
        assert_eq!((t.host.samples, t.host.switches), (0, 0), "{name}");
        assert!(t.host.cpus.is_empty(), "{name}");
        assert!(HostIndex::build(&t).is_empty(), "{name}");
        assert!(t.meta.tables.iter().all(|s| s.name != "SCHED_EVENTS" && s.name != "COMPOSITE_EVENTS"));
    }
}

#[test]
fn host_lanes_stay_out_of_the_extent() {
    // Context switches start with nsys, before the application: the extent starts with
    // the CUDA, NVTX and OS runtime tables.
    const TABLES: [&str; 7] = [
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
        "NVTX_EVENTS",
        "OSRT_API",
    ];
    for f in exports() {
        let t = load(&f);
        let c = sql(&f);
        let first = |tb: &str| c.query_row(&format!("SELECT min(start) FROM {tb}"), [], |r| r.get::<_, Option<i64>>(0));
        let others = TABLES.iter().filter_map(|tb| first(tb).ok().flatten()).min().unwrap();
        let switch = first("SCHED_EVENTS").unwrap().unwrap();
        assert!(switch < others, "{}", f.display());
        assert!(t.meta.start_ns >= others, "{}", f.display());
    }
}

#[test]
fn nsys_threads_cpu_time_is_reported_apart_and_equals_sql() {
    for f in exports() {
        let c = sql(&f);
        let q = format!("SELECT coalesce(sum(e - s), 0) FROM ({INTERVALS}) WHERE g IN ({NSYS_THREADS})");
        let want: i64 = c.query_row(&q, [], |r| r.get(0)).unwrap();
        let out = crate::util::lanescope().args(["info", "--format", "json"]).arg(&f).output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["host"]["profiler_cpu_ns"].as_i64(), Some(want), "{}", f.display());
    }
}

#[test]
fn samples_whose_stacks_take_the_gil_are_flagged() {
    // r7_timm_fed and contention hold samples with CPython's GIL frames somewhere in their
    // stacks (SAMPLING_CALLCHAINS, any depth): the reader flags exactly those samples.
    for name in ["matrix/r7_timm_fed.sqlite", "contention.sqlite"] {
        let path = fixture(name);
        let c = Connection::open(&path).unwrap();
        let want: i64 = c
            .query_row(
                "SELECT count(*) FROM COMPOSITE_EVENTS WHERE id IN (SELECT c.id FROM SAMPLING_CALLCHAINS c JOIN \
                 StringIds s ON s.id = c.symbol WHERE s.value IN ('take_gil', 'drop_gil', 'PyEval_RestoreThread', \
                 'PyEval_AcquireThread', 'PyGILState_Ensure', 'PyEval_AcquireLock'))",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(want > 0, "{name}: no GIL samples to check");
        let t = crate::util::load_warm(&path);
        let got: usize = t
            .lanes
            .iter()
            .filter(|l| matches!(l.kind, LaneKind::Samples { .. }))
            .map(|l| (0..l.ev.len()).filter(|&i| l.ev.flags(i) & lanescope::SAMPLE_GIL != 0).count())
            .sum();
        assert_eq!(got as i64, want, "{name}");
    }
}

// Length of the union of `v`.
fn union_ns(mut v: Vec<(i64, i64)>) -> i64 {
    v.sort_unstable();
    let (mut total, mut end) = (0, i64::MIN);
    for (a, b) in v {
        if b > end {
            total += b - a.max(end);
            end = b;
        }
    }
    total
}

#[test]
fn new_shape_gaps_and_their_samples_match_sql() {
    // From the raw rows: steady gaps of at least 100 µs on GPU 0 whose deciding thread (the
    // launching call of the op ending the gap) made a module-loading call in the gap and
    // spent at least half of it outside CUDA calls; that thread's samples before its kernel
    // loads, and those in cuBLAS/cuDNN. Among lanescope's host-busy gaps, exactly these are
    // `new-shapes`.
    let f = crate::util::matrix_trace("r9_serve_varbatch");
    let a = lanescope::analyze(&load(&f), &lanescope::Options::default());
    let c = sql(&f);
    let rows = |q: &str| -> Vec<(i64, i64, i64, i64, String)> {
        let mut st = c.prepare(q).unwrap();
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let mut ops = rows(
        "SELECT start, end, correlationId, 0, '' FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = 0 UNION ALL \
         SELECT start, end, correlationId, 0, '' FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE deviceId = 0 UNION ALL \
         SELECT start, end, correlationId, 0, '' FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE deviceId = 0",
    );
    ops.sort_unstable();
    let calls = rows(
        "SELECT r.start, r.end, r.correlationId, r.globalTid, s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r \
         JOIN StringIds s ON s.id = r.nameId",
    );
    let by_corr: HashMap<i64, i64> = calls.iter().map(|c| (c.2, c.3)).collect();
    let samples = rows(
        "SELECT e.start, 0, 0, e.globalTid, m.value FROM COMPOSITE_EVENTS e JOIN SAMPLING_CALLCHAINS k \
         ON k.id = e.id AND k.stackDepth = 0 JOIN StringIds m ON m.id = k.module",
    );
    let w = a.windows;
    let busy_starts: Vec<i64> =
        a.gaps.iter().filter(|g| g.cause == lanescope::Cause::HostBusy).map(|g| g.start).collect();
    let (mut want, mut busy) = (Vec::new(), None);
    for &(s, e, corr, _, _) in &ops {
        let Some(gs) = busy.replace(busy.unwrap_or(e).max(e)) else { continue };
        let ge = s;
        if ge - gs < 100_000 || w.of(gs, ge) != lanescope::Window::Steady || !busy_starts.contains(&gs) {
            continue;
        }
        let tid = by_corr[&corr];
        let mine: Vec<&(i64, i64, i64, i64, String)> =
            calls.iter().filter(|c| c.3 == tid && c.0 < ge && c.1 > gs).collect();
        let loads = mine.iter().any(|c| c.4.contains("ModuleLoad") || c.4.contains("LibraryLoad"));
        let inside = union_ns(mine.iter().map(|c| (c.0.max(gs), c.1.min(ge))).collect());
        if loads && 2 * (ge - gs - inside) >= ge - gs {
            want.push((gs, ge, tid));
        }
    }
    // The thread's samples from its last CUDA call before each of its kernel loads to the load.
    let tid = want.first().map(|w| w.2).unwrap();
    let mut mine: Vec<&(i64, i64, i64, i64, String)> = calls.iter().filter(|c| c.3 == tid).collect();
    mine.sort_unstable();
    let (mut stretches, mut last_end) = (Vec::new(), None);
    for c in mine {
        let is_load = c.4.contains("ModuleLoad") || c.4.contains("LibraryLoad");
        if let Some(e) = last_end.filter(|&e| is_load && e < c.0) {
            stretches.push((e, c.0));
        }
        last_end = Some(last_end.unwrap_or(c.1).max(c.1));
    }
    let in_gaps = || samples.iter().filter(|x| x.3 == tid && stretches.iter().any(|&(a, b)| x.0 >= a && x.0 < b));
    let total = in_gaps().count();
    let library = in_gaps()
        .filter(|x| ["libcublas", "libcudnn"].iter().any(|l| x.4.rsplit('/').next().unwrap().starts_with(l)))
        .count();
    let want: Vec<i64> = want.iter().map(|w| w.0).collect();
    let got: Vec<i64> = a.gaps.iter().filter(|g| g.hint == lanescope::Hint::NewShapes).map(|g| g.start).collect();
    assert!(want.len() >= 10, "the capture's new-shape gaps: {}", want.len());
    assert!(2 * library >= total && total >= 5, "{library} of {total}");
    assert_eq!(got, want);
    let pooled = format!("{library} of this thread's {total} samples in the host work before its kernel loads");
    for g in a.gaps.iter().filter(|g| g.hint == lanescope::Hint::NewShapes) {
        assert!(g.evidence.contains(&pooled), "{pooled}: {}", g.evidence);
    }
}
