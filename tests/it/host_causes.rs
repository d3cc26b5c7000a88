//! The host causes on real captures made to show them (tests/fixtures/README.md), each
//! claim checked against the raw rows with SQL: on-CPU intervals paired from
//! `SCHED_EVENTS`, samples and their leaf frames from `COMPOSITE_EVENTS` and
//! `SAMPLING_CALLCHAINS`.

use std::collections::HashMap;

use crate::util::fixture;
use lanescope::{Analysis, Cause, Gap, Options, Window, analyze};
use rusqlite::Connection;

fn open(name: &str) -> (Analysis, Connection) {
    let t = lanescope::load(&fixture(name)).unwrap();
    let a = analyze(&t, &Options::default());
    (a, Connection::open_with_flags(fixture(name), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap())
}

// (pid, tid, cpu, start, end) of every on-CPU interval: a switch-in and the thread's
// next switch, when that is a switch-out.
fn on_cpu(c: &Connection) -> Vec<(u32, u32, u32, i64, i64)> {
    let sql = "SELECT globalTid, cpu, start, nxt FROM (
                 SELECT globalTid, cpu, start, isSchedIn,
                        LEAD(start) OVER (PARTITION BY globalTid ORDER BY start, rowid) AS nxt,
                        LEAD(isSchedIn) OVER (PARTITION BY globalTid ORDER BY start, rowid) AS nin
                 FROM SCHED_EVENTS)
               WHERE isSchedIn != 0 AND nin = 0";
    let mut st = c.prepare(sql).unwrap();
    st.query_map([], |r| {
        let g: i64 = r.get(0)?;
        Ok((((g >> 24) & 0xFF_FFFF) as u32, (g & 0xFF_FFFF) as u32, r.get::<_, i64>(1)? as u32, r.get(2)?, r.get(3)?))
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

fn clip(s: i64, e: i64, a: i64, b: i64) -> i64 {
    (e.min(b) - s.max(a)).max(0)
}

fn steady(a: &Analysis, cause: Cause) -> Vec<&Gap> {
    a.gaps.iter().filter(|g| g.window == Window::Steady && g.cause == cause).collect()
}

fn steady_idle_by_cause(a: &Analysis) -> HashMap<Cause, i64> {
    let mut m = HashMap::new();
    for g in &a.gaps {
        *m.entry(g.cause).or_default() += a.windows.steady_part(g.start, g.end);
    }
    m
}

fn dominant(a: &Analysis) -> Cause {
    steady_idle_by_cause(a).into_iter().max_by_key(|&(_, t)| t).unwrap().0
}

#[test]
fn squeezed_workers_are_cpu_contention_on_saturated_cpus() {
    // contention.py pins the process tree to CPUs 0-1 and runs 8 CPU-bound workers.
    let (a, c) = open("contention.sqlite");
    assert_eq!(dominant(&a), Cause::CpuContention, "{:?}", steady_idle_by_cause(&a));
    let iv = on_cpu(&c);
    let gaps = steady(&a, Cause::CpuContention);
    assert!(gaps.len() >= 10, "{}", gaps.len());
    for g in gaps {
        // SQL: CPUs 0 and 1 (any thread) were at least 90% busy across the gap, and more
        // threads than those two CPUs ran on them.
        let busy: i64 = iv.iter().filter(|x| x.2 <= 1).map(|x| clip(x.3, x.4, g.start, g.end)).sum();
        assert!(busy as f64 >= 0.9 * 2.0 * g.dur() as f64, "gap {} busy {busy} of 2 x {}", g.start, g.dur());
        let mut threads: Vec<_> =
            iv.iter().filter(|x| x.2 <= 1 && clip(x.3, x.4, g.start, g.end) > 0).map(|x| (x.0, x.1)).collect();
        threads.sort_unstable();
        threads.dedup();
        assert!(threads.len() > 2, "gap {}: {threads:?}", g.start);
        let h = g.host.as_ref().unwrap();
        assert_eq!(h.cpus.usable, vec![0, 1], "gap {}", g.start);
    }
}

#[test]
fn workers_reading_cold_files_are_io_wait() {
    // iowait.py's workers read files evicted from the page cache; the main thread waits.
    let (a, c) = open("iowait.sqlite");
    assert_eq!(dominant(&a), Cause::IoWait, "{:?}", steady_idle_by_cause(&a));
    let iv = on_cpu(&c);
    let main: u32 =
        c.query_row("SELECT (globalTid >> 24) & 16777215 FROM NVTX_EVENTS LIMIT 1", [], |r| r.get(0)).unwrap();
    for g in steady(&a, Cause::IoWait) {
        // SQL: no worker process thread was on CPU for half of the gap, and the CPUs were
        // far from busy (at most 4 of the machine's CPUs' worth of work).
        let mut by_thread: HashMap<(u32, u32), i64> = HashMap::new();
        for x in iv.iter().filter(|x| x.0 != main) {
            *by_thread.entry((x.0, x.1)).or_default() += clip(x.3, x.4, g.start, g.end);
        }
        let busiest = by_thread.values().max().copied().unwrap_or(0);
        assert!(2 * busiest < g.dur(), "gap {}: a worker thread ran {busiest} of {}", g.start, g.dur());
        // The main thread was waiting in the DataLoader (a blocking OS call).
        let waited: i64 = c
            .query_row(
                "SELECT coalesce(sum(min(o.\"end\", ?2) - max(o.start, ?1)), 0) FROM OSRT_API o JOIN StringIds s ON s.id = o.nameId
                 WHERE o.start < ?2 AND o.\"end\" > ?1 AND (o.globalTid >> 24) & 16777215 = ?3 AND s.value IN ('poll', 'read', 'pthread_cond_timedwait', 'sem_clockwait', 'sem_timedwait')",
                rusqlite::params![g.start, g.end, main],
                |r| r.get(0),
            )
            .unwrap();
        assert!(2 * waited >= g.dur(), "gap {}: main waited {waited} of {}", g.start, g.dur());
    }
}

#[test]
fn a_slow_python_loop_is_host_busy_naming_the_interpreter() {
    let (a, c) = open("slowpy.sqlite");
    assert_eq!(dominant(&a), Cause::HostBusy, "{:?}", steady_idle_by_cause(&a));
    // SQL: the leaf frames of the main thread's samples inside the steady host-busy gaps.
    let main: i64 = c.query_row("SELECT globalTid FROM NVTX_EVENTS LIMIT 1", [], |r| r.get(0)).unwrap();
    let mut st = c
        .prepare(
            "SELECT e.start, s.value FROM COMPOSITE_EVENTS e JOIN SAMPLING_CALLCHAINS k ON k.id = e.id AND k.stackDepth = 0
             JOIN StringIds s ON s.id = k.symbol WHERE e.globalTid = ?1",
        )
        .unwrap();
    let samples: Vec<(i64, String)> =
        st.query_map([main], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for g in steady(&a, Cause::HostBusy) {
        for (t, s) in samples.iter().filter(|(t, _)| (g.start..g.end).contains(t)) {
            let _ = t;
            *counts.entry(s.as_str()).or_default() += 1;
        }
    }
    let (top, _) = counts.iter().max_by_key(|&(s, n)| (*n, std::cmp::Reverse(*s))).unwrap();
    assert_eq!(*top, "_PyEval_EvalFrameDefault");
    let named = &a.hot_by_cause[&Cause::HostBusy][0];
    assert_eq!(named.symbol, *top);
    assert!(
        a.findings.iter().any(|f| f.fix_text().contains("_PyEval_EvalFrameDefault")),
        "the fix names the hot function"
    );
    assert!(
        a.findings.iter().all(|f| !f.fix_text().contains("-s process-tree")),
        "no advice to sample a sampled trace"
    );
}

#[test]
fn traces_without_host_data_keep_their_causes_and_ask_for_samples() {
    let (a, c) = open("pageable.sqlite");
    let sched: i64 = c
        .query_row("SELECT count(*) FROM sqlite_master WHERE name IN ('SCHED_EVENTS', 'COMPOSITE_EVENTS')", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(sched, 0, "the fixture has no host data");
    assert!(a.gaps.iter().all(|g| g.host.is_none()));
    assert!(!a.gaps.iter().any(|g| matches!(g.cause, Cause::CpuContention | Cause::IoWait)));
    // The headline's fix (the untraced wait for input) asks for the samples that would name it.
    let head = &a.findings[0];
    assert!(head.fix_text().contains("nsys profile -s process-tree"), "{}", head.fix_text());
}

#[test]
fn main_thread_reads_through_preadv64v2_are_io_wait() {
    // The matrix cell r5_w0_disk64_b8 loads its batches on the main thread (num_workers=0,
    // 16 CPUs) with os.preadv, which glibc names preadv64v2. From SCHED_EVENTS and OSRT_API
    // alone: a steady gap in which that thread was off CPU inside those reads for half of
    // it or more is a wait on storage, whatever else it did.
    let path = crate::util::matrix_trace("r5_w0_disk64_b8");
    let c = Connection::open_with_flags(&path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let g: i64 =
        c.query_row("SELECT globalTid FROM NVTX_EVENTS WHERE text = 'next batch' LIMIT 1", [], |r| r.get(0)).unwrap();
    let me = (((g >> 24) & 0xFF_FFFF) as u32, (g & 0xFF_FFFF) as u32);
    let on: Vec<(i64, i64)> =
        on_cpu(&c).into_iter().filter(|&(p, t, ..)| (p, t) == me).map(|(.., s, e)| (s, e)).collect();
    let mut st = c
        .prepare(
            "SELECT o.start, o.end FROM OSRT_API o JOIN StringIds s ON o.nameId = s.id \
             WHERE o.globalTid = ?1 AND s.value = 'preadv64v2'",
        )
        .unwrap();
    let reads: Vec<(i64, i64)> =
        st.query_map([g], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect();
    let a = analyze(&lanescope::load(&path).unwrap(), &Options::default());
    let (mut waits, mut bad) = (0, Vec::new());
    for gap in a.gaps.iter().filter(|g| g.window == Window::Steady) {
        let (gs, ge) = (gap.start, gap.end);
        let off_reading: i64 = reads
            .iter()
            .filter(|&&(s, e)| s < ge && e > gs)
            .map(|&(s, e)| {
                let (s, e) = (s.max(gs), e.min(ge));
                (e - s) - on.iter().map(|&(a, b)| clip(a, b, s, e)).sum::<i64>()
            })
            .sum();
        if 2 * off_reading >= ge - gs {
            waits += 1;
            if gap.cause != Cause::IoWait {
                bad.push(format!("gap at {gs}: off CPU in reads {off_reading} of {} ns, {:?}", ge - gs, gap.cause));
            }
        }
    }
    assert!(waits >= 10, "{waits} gaps were mostly reads");
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
