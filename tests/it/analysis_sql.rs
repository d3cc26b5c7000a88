//! The analysis against independent SQL over the same exports: totals, transfers, the
//! GPU busy union and its gaps, NVTX phases and their GPU projection, and what the
//! traces show about the causes of the gaps.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::util::fixture;
use lanescope::{Analysis, Cause, Options, analyze, find_gaps};
use lanescope::{Ns, Trace};
use rusqlite::{Connection, params};

fn fixtures() -> [PathBuf; 3] {
    [fixture("pageable.sqlite"), fixture("pinned.sqlite"), fixture("prefetch.sqlite")]
}

fn open(path: &Path) -> (Trace, Analysis, Connection) {
    let t = crate::util::load_warm(path);
    let a = analyze(&t, &Options::default());
    let c = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    (t, a, c)
}

fn count(c: &Connection, sql: &str) -> u64 {
    c.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap() as u64
}

// GPU operations the reader keeps: CUPTI writes start = end = 0 when it had no timestamps.
const KEPT: &str = "NOT (start = 0 AND \"end\" = 0)";

#[test]
fn totals_match_sql() {
    for f in fixtures() {
        let (_, a, c) = open(&f);
        let t = a.totals;
        let gpu = |table: &str| count(&c, &format!("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_{table} WHERE {KEPT}"));
        assert_eq!(t.kernels, gpu("KERNEL"), "{}", f.display());
        assert_eq!(t.memcpy, gpu("MEMCPY"));
        assert_eq!(t.memset, gpu("MEMSET"));
        // Backtrace records (eventClass 67-69) repeat the call they annotate.
        let api = "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE eventClass IS NULL OR eventClass NOT BETWEEN 67 AND 69";
        assert_eq!(t.api_calls, count(&c, api));
        // Push/pop (59, NVTXT 70) and start/end (60, 71) ranges; marks and domains are not ranges.
        assert_eq!(t.nvtx_ranges, count(&c, "SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60, 70, 71)"));
        assert_eq!(t.osrt_calls, count(&c, "SELECT count(*) FROM OSRT_API"));
    }
}

// Direction and host memory kind of an nsys copyKind, written out from the nsys enums.
fn direction(copy_kind: i64, src: i64, dst: i64) -> (&'static str, i64) {
    match copy_kind {
        1 | 3 | 11 => ("H2D", src),
        2 | 4 | 12 => ("D2H", dst),
        5..=8 | 13 => ("D2D", src),
        10 => ("P2P", src),
        _ => ("other", src),
    }
}

// Memory kind labels from the export's own enum table, lower-cased.
fn mem_kind_labels(c: &Connection) -> HashMap<i64, String> {
    let mut stmt = c.prepare("SELECT id, label FROM ENUM_CUDA_MEM_KIND").unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get::<_, String>(1)?.to_lowercase())))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn transfers_match_sql() {
    for f in fixtures() {
        let (_, a, c) = open(&f);
        let labels = mem_kind_labels(&c);
        let mut want: HashMap<(String, String), (u64, u64, Ns)> = HashMap::new();
        let sql = format!(
            "SELECT copyKind, srcKind, dstKind, count(*), sum(bytes), sum(\"end\" - start) \
             FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE {KEPT} GROUP BY 1, 2, 3"
        );
        let mut stmt = c.prepare(&sql).unwrap();
        let mut rows = stmt.query([]).unwrap();
        while let Some(r) = rows.next().unwrap() {
            let (dir, kind) = direction(r.get(0).unwrap(), r.get(1).unwrap(), r.get(2).unwrap());
            let e = want.entry((dir.to_string(), labels[&kind].clone())).or_default();
            e.0 += r.get::<_, i64>(3).unwrap() as u64;
            e.1 += r.get::<_, i64>(4).unwrap() as u64;
            e.2 += r.get::<_, i64>(5).unwrap();
        }
        let got: HashMap<(String, String), (u64, u64, Ns)> = a
            .transfers
            .iter()
            .filter(|t| t.direction.label() != "memset")
            .map(|t| ((t.direction.label().to_string(), t.memory.label().to_string()), (t.count, t.bytes, t.busy_ns)))
            .collect();
        assert_eq!(got, want, "{}", f.display());
        for t in &a.transfers {
            assert!((t.gbps - t.bytes as f64 / t.busy_ns as f64).abs() < 1e-9);
        }
        // Async copies of pageable memory, joined to their call as nsys's rule does (plus the process).
        let async_pageable = count(
            &c,
            "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY m \
             JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = m.correlationId \
                  AND (r.globalTid >> 24) & 16777215 = (m.globalPid >> 24) & 16777215 \
             JOIN StringIds s ON s.id = r.nameId \
             WHERE s.value LIKE 'cudaMemcpy%Async%' AND (m.srcKind = 0 OR m.dstKind = 0)",
        );
        assert_eq!(a.transfers.iter().map(|t| t.async_pageable).sum::<u64>(), async_pageable, "{}", f.display());
    }
}

// The busy union of every GPU operation of one device, from SQL rows sorted by start.
fn sql_union(c: &Connection, device: u32) -> Vec<(Ns, Ns)> {
    let sql = format!(
        "SELECT start, \"end\" FROM ( \
           SELECT start, \"end\", deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE {KEPT} \
           UNION ALL SELECT start, \"end\", deviceId FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE {KEPT} \
           UNION ALL SELECT start, \"end\", deviceId FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE {KEPT}) \
         WHERE deviceId = ?1 ORDER BY start"
    );
    let mut stmt = c.prepare(&sql).unwrap();
    let rows = stmt.query_map([device], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))).unwrap();
    let mut u: Vec<(Ns, Ns)> = Vec::new();
    for (s, e) in rows.map(Result::unwrap) {
        match u.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ if e > s => u.push((s, e)),
            _ => {}
        }
    }
    u
}

fn sql_gaps(u: &[(Ns, Ns)], min: Ns) -> Vec<(Ns, Ns)> {
    u.windows(2).map(|w| (w[0].1, w[1].0)).filter(|(a, b)| b - a >= min).collect()
}

#[test]
fn gpu_busy_and_gaps_match_an_sql_union() {
    for f in fixtures() {
        let (t, a, c) = open(&f);
        assert_eq!(a.devices.len(), 1, "one H200 in these traces");
        for d in &a.devices {
            let u = sql_union(&c, d.device);
            let busy: Ns = u.iter().map(|(s, e)| e - s).sum();
            assert_eq!(d.busy.total(), busy, "{}", f.display());
            let want = sql_gaps(&u, 100_000);
            let got: Vec<(Ns, Ns)> = a.gaps.iter().filter(|g| g.device == d.device).map(|g| (g.start, g.end)).collect();
            assert_eq!(got, want, "{}", f.display());
            // Another threshold through the TUI's entry point: the same intervals, filtered.
            let wider = find_gaps(&t, &a.devices, &Options { min_gap_ns: 2_000_000, ..Options::default() });
            let want2 = sql_gaps(&u, 2_000_000);
            assert_eq!(wider.iter().map(|g| (g.start, g.end)).collect::<Vec<_>>(), want2);
            for g in &wider {
                let same = a.gaps.iter().find(|x| x.start == g.start).unwrap();
                assert_eq!((same.cause, &same.evidence), (g.cause, &g.evidence));
            }
        }
    }
}

// `step 12` -> `step N`, written independently of the crate's grouping.
fn grouped(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if !c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('\u{0}') {
            out.push('\u{0}');
        }
    }
    out.replace('\u{0}', "N")
}

#[test]
fn phases_match_sql_per_grouped_name() {
    for f in fixtures() {
        let (t, a, c) = open(&f);
        let mut stmt = c
            .prepare("SELECT text, count(*), sum(\"end\" - start) FROM NVTX_EVENTS WHERE eventType = 59 GROUP BY text")
            .unwrap();
        let rows: Vec<(String, u64, Ns)> = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)? as u64, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let mut want: HashMap<String, (u64, Ns)> = HashMap::new();
        for (text, n, wall) in &rows {
            let e = want.entry(grouped(text)).or_default();
            e.0 += n;
            e.1 += wall;
        }
        let got: HashMap<String, (u64, Ns)> =
            a.phases.iter().map(|p| (p.name.clone(), (p.count, p.wall.sum_ns))).collect();
        assert_eq!(got, want, "{}", f.display());
        assert!(a.phases.windows(2).all(|w| w[0].wall.sum_ns >= w[1].wall.sum_ns), "sorted by wall time");
        let exact = analyze(&t, &Options { exact_names: true, ..Options::default() });
        let got: HashMap<String, (u64, Ns)> =
            exact.phases.iter().map(|p| (p.name.clone(), (p.count, p.wall.sum_ns))).collect();
        let want: HashMap<String, (u64, Ns)> = rows.into_iter().map(|(t, n, w)| (t, (n, w))).collect();
        assert_eq!(got, want);
    }
}

#[test]
fn launched_work_matches_an_sql_projection() {
    // nsys NVTX GPU projection: GPU ops whose launching call lies inside the range, on
    // the range's thread, matched by correlation id within the process.
    let sql = format!(
        "SELECT count(*), coalesce(sum(g.\"end\" - g.start), 0) FROM NVTX_EVENTS n \
         JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.globalTid = n.globalTid AND r.start >= n.start AND r.\"end\" <= n.\"end\" \
         JOIN (SELECT correlationId, globalPid, start, \"end\" FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE {KEPT} \
               UNION ALL SELECT correlationId, globalPid, start, \"end\" FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE {KEPT} \
               UNION ALL SELECT correlationId, globalPid, start, \"end\" FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE {KEPT}) g \
           ON g.correlationId = r.correlationId AND (g.globalPid >> 24) & 16777215 = (r.globalTid >> 24) & 16777215 \
         WHERE n.eventType = 59 AND n.text = ?1"
    );
    for f in fixtures() {
        let (_, a, c) = open(&f);
        for name in ["forward", "backward", "copy data", "optimizer step", "report"] {
            let (n, gpu): (i64, i64) = c.query_row(&sql, [name], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
            let p = a.phases.iter().find(|p| p.name == name).unwrap();
            assert_eq!((p.launched.count, p.launched.gpu_ns), (n as u64, gpu), "{name} in {}", f.display());
        }
        let forward = a.phases.iter().find(|p| p.name == "forward").unwrap();
        assert!(forward.launched.count > 0);
    }
}

#[test]
fn pageable_copies_are_found_where_sql_sees_them() {
    let (_, a, c) = open(&fixture("pageable.sqlite"));
    let pageable_async = count(
        &c,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY m JOIN CUPTI_ACTIVITY_KIND_RUNTIME r \
         ON r.correlationId = m.correlationId JOIN StringIds s ON s.id = r.nameId \
         WHERE s.value LIKE 'cudaMemcpy%Async%' AND m.srcKind = 0 AND m.copyKind = 1",
    );
    assert!(pageable_async > 0);
    let f = a.findings.iter().find(|f| f.rule.name() == "cuda_memcpy_async").expect("cuda_memcpy_async fires");
    assert!(f.message.starts_with(&format!("{pageable_async} async memcpy calls")), "{}", f.message);
    assert!(a.findings.iter().any(|f| f.rule.name() == "pageable_bandwidth"));
    // Every pageable-copy gap overlaps a memcpy call whose copy has a pageable side.
    let overlapping = "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId \
         JOIN CUPTI_ACTIVITY_KIND_MEMCPY m ON m.correlationId = r.correlationId \
         WHERE s.value LIKE 'cudaMemcpy%' AND (m.srcKind = 0 OR m.dstKind = 0) AND r.start < ?2 AND r.\"end\" > ?1";
    let pageable_gaps: Vec<_> = a.gaps.iter().filter(|g| g.cause == Cause::PageableCopy).collect();
    assert!(!pageable_gaps.is_empty());
    for g in pageable_gaps {
        let n: i64 = c.query_row(overlapping, params![g.start, g.end], |r| r.get(0)).unwrap();
        assert!(n > 0, "{g:?}");
        assert!(g.evidence.starts_with("cudaMemcpy"), "{}", g.evidence);
    }
}

#[test]
fn pinned_copies_are_pinned_and_compared() {
    let (_, a, c) = open(&fixture("pinned.sqlite"));
    let h2d = |src: i64| -> u64 {
        c.query_row(
            "SELECT coalesce(sum(bytes), 0) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 1 AND srcKind = ?1",
            [src],
            |r| r.get::<_, i64>(0),
        )
        .unwrap() as u64
    };
    // The batches are pinned; the few pageable bytes left are small model-setup copies.
    let (pinned, pageable) = (h2d(1), h2d(0));
    assert!(pinned > 1_000_000_000 && pageable * 1000 < pinned, "{pinned} {pageable}");
    let row = |kind: &str| a.transfers.iter().find(|t| t.direction.label() == "H2D" && t.memory.label() == kind);
    assert_eq!(row("pinned").map(|t| t.bytes), Some(pinned));
    assert_eq!(row("pageable").map_or(0, |t| t.bytes), pageable);
    // Under 1 MB of pageable H2D: nothing to compare.
    assert!(!a.findings.iter().any(|f| f.rule.name() == "pageable_bandwidth"));
    let async_pageable = a.findings.iter().find(|f| f.rule.name() == "cuda_memcpy_async");
    assert!(async_pageable.is_none_or(|f| f.severity == lanescope::Severity::Info));
}

// The `step N` ranges, from SQL.
fn steps(c: &Connection) -> Vec<(Ns, Ns)> {
    let mut stmt =
        c.prepare("SELECT start, \"end\" FROM NVTX_EVENTS WHERE eventType = 59 AND text LIKE 'step %'").unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
}

fn clipped(a: (Ns, Ns), b: (Ns, Ns)) -> Ns {
    (a.1.min(b.1) - a.0.max(b.0)).max(0)
}

// Gap time inside the step ranges, by cause of the gap.
fn step_gap_time(a: &Analysis, c: &Connection) -> HashMap<Cause, Ns> {
    let steps = steps(c);
    let mut m = HashMap::new();
    for g in &a.gaps {
        *m.entry(g.cause).or_default() += steps.iter().map(|&s| clipped((g.start, g.end), s)).sum::<Ns>();
    }
    m
}

#[test]
fn host_wait_gaps_sit_in_blocking_calls_of_the_main_thread() {
    // In the pinned run the host cannot make batches fast enough: the main thread blocks
    // in the DataLoader's queue. Check each host-wait gap against OSRT rows in SQL.
    for name in ["pinned.sqlite", "prefetch.sqlite"] {
        let (_, a, c) = open(&fixture(name));
        let blocked = "SELECT coalesce(max(min(o.\"end\", ?2) - max(o.start, ?1)), 0) FROM OSRT_API o \
             JOIN StringIds s ON s.id = o.nameId \
             WHERE o.start < ?2 AND o.\"end\" > ?1 AND (o.globalTid >> 24) & 16777215 = ?3 \
               AND (s.value LIKE '%wait%' OR s.value LIKE '%poll%' OR s.value = 'read')";
        let waits: Vec<_> = a.gaps.iter().filter(|g| g.cause == Cause::HostWait).collect();
        assert!(!waits.is_empty(), "{name}");
        for g in waits {
            let longest: i64 = c.query_row(blocked, params![g.start, g.end, g.pid], |r| r.get(0)).unwrap();
            assert!(longest > 0, "{g:?}");
        }
        let by = step_gap_time(&a, &c);
        assert!(by.get(&Cause::HostWait).copied().unwrap_or(0) > 1_000_000_000, "{name}: {by:?}");
    }
}

#[test]
fn the_starvation_finding_names_the_data_wait_in_pinned_and_prefetch() {
    for name in ["pinned.sqlite", "prefetch.sqlite"] {
        let (_, a, c) = open(&fixture(name));
        let f = a.findings.iter().find(|f| f.rule.name() == "starvation").expect("starvation fires");
        let ev: HashMap<&str, &str> = f.evidence.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(ev["step_phase"], "step N");
        // The first step is warm-up: the finding judges the steady ones.
        let steps = count(&c, "SELECT count(*) FROM NVTX_EVENTS WHERE text LIKE 'step %'");
        assert_eq!(ev["steps"], (steps - 1).to_string());
        assert_eq!(ev["dominant_cause"], "host-wait", "{name}: {}", f.message);
        assert_eq!(ev["phase"], "copy data");
    }
}

// Time the main thread spent in munmap inside GPU gaps inside steps, and that gap time.
fn munmap_in_step_gaps(a: &Analysis, c: &Connection) -> (Ns, Ns) {
    let mut stmt = c
        .prepare(
            "SELECT o.start, o.\"end\" FROM OSRT_API o JOIN StringIds s ON s.id = o.nameId \
             WHERE s.value = 'munmap' AND o.globalTid = (SELECT globalTid FROM NVTX_EVENTS WHERE text LIKE 'step %' LIMIT 1)",
        )
        .unwrap();
    let munmaps: Vec<(Ns, Ns)> =
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect();
    let (mut in_munmap, mut total) = (0, 0);
    for s in steps(c) {
        for g in &a.gaps {
            let part = (g.start.max(s.0), g.end.min(s.1));
            if part.1 > part.0 {
                total += part.1 - part.0;
                in_munmap += munmaps.iter().map(|&m| clipped(m, part)).sum::<Ns>();
            }
        }
    }
    (in_munmap, total)
}

#[test]
fn the_pageable_main_thread_frees_its_batches_inside_the_gaps() {
    // SQL shows the pageable run's main thread in munmap (freeing each pageable batch
    // after its copy and the stream sync that ends it) for a large part of the idle time
    // in steps, and the pinned run's not at all. The copy and its sync last a few ms of
    // gaps of 11-12 ms: the host's work after the sync (munmap) is the gap, host-busy,
    // and the evidence names munmap and the sync before it (issue 33, item 1).
    let (_, a, c) = open(&fixture("pageable.sqlite"));
    let (munmap, total) = munmap_in_step_gaps(&a, &c);
    assert!(munmap * 5 > total, "{munmap} of {total}");
    let named: Vec<_> = a.gaps.iter().filter(|g| g.evidence.starts_with("munmap ")).collect();
    assert!(named.len() >= 20 && named.iter().all(|g| g.cause == Cause::HostBusy), "{named:?}");
    assert!(
        named.iter().all(|g| g.evidence.contains(" cudaStreamSynchronize") && g.evidence.contains("after a")),
        "{named:?}"
    );
    let f = a.findings.iter().find(|f| f.rule.name() == "starvation").unwrap();
    assert!(f.evidence.iter().any(|(k, v)| k == "dominant_cause" && v == "host-busy"), "{}", f.message);
    let (_, pinned, c) = open(&fixture("pinned.sqlite"));
    let (munmap, total) = munmap_in_step_gaps(&pinned, &c);
    assert!(munmap * 100 < total, "{munmap} of {total}");
}

#[test]
fn short_idle_in_the_steady_window_equals_sql() {
    // SQL: per device, the union of kernel, copy and memset rows; the holes between its
    // intervals shorter than the threshold, clipped to the steady window.
    for name in ["pageable.sqlite", "launchbound.sqlite", "multigpu.sqlite"] {
        let (_, a, c) = open(&fixture(name));
        let (lo, hi) = (a.windows.steady_start, a.windows.steady_end);
        let mut rows: Vec<(i64, Ns, Ns)> = Vec::new();
        for t in ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"] {
            let Ok(mut st) = c.prepare(&format!("SELECT deviceId, start, \"end\" FROM {t}")) else { continue };
            rows.extend(st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap));
        }
        rows.sort_unstable();
        let mut want = 0;
        let mut last: Option<(i64, Ns)> = None;
        for (d, s, e) in rows {
            match last {
                Some((ld, le)) if ld == d && s <= le => last = Some((d, le.max(e))),
                Some((ld, le)) if ld == d => {
                    if s - le < a.options.min_gap_ns {
                        want += (s.min(hi) - le.max(lo)).max(0);
                    }
                    last = Some((d, e));
                }
                _ => last = Some((d, e)),
            }
        }
        assert_eq!(a.steady.short_idle_ns, want, "{name}");
        assert!(want > 0, "{name}");
    }
}

#[test]
fn the_refill_holes_after_the_moe_syncs_are_the_syncs() {
    // r6_moe_nonzero: 32 nonzero() a step, each a 4-byte D2H copy and a
    // cudaStreamSynchronize. From SQL: the GPU busy union of device 0, its holes under
    // 100 µs with time in the steady window, and those whose start falls inside a
    // synchronize call that returns inside the hole (the refill after it).
    let path = fixture("matrix/r6_moe_nonzero.sqlite");
    let (_, a, c) = open(&path);
    let (w0, w1) = (a.windows.steady_start, a.windows.steady_end);
    let mut busy: Vec<(Ns, Ns)> = Vec::new();
    for table in ["KERNEL", "MEMCPY", "MEMSET"] {
        let sql = format!("SELECT start, \"end\" FROM CUPTI_ACTIVITY_KIND_{table} WHERE deviceId = 0 AND {KEPT}");
        let mut stmt = c.prepare(&sql).unwrap();
        busy.extend(stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap));
    }
    busy.sort_unstable();
    let mut union: Vec<(Ns, Ns)> = Vec::new();
    for (s, e) in busy {
        match union.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => union.push((s, e)),
        }
    }
    let in_window = |(s, e): (Ns, Ns)| (e.min(w1) - s.max(w0)).max(0);
    let holes: Vec<(Ns, Ns)> =
        union.windows(2).map(|p| (p[0].1, p[1].0)).filter(|&(s, e)| e - s < 100_000 && in_window((s, e)) > 0).collect();
    let mut stmt = c
        .prepare(
            "SELECT r.start, r.\"end\" FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId \
             WHERE s.value LIKE 'cudaStreamSynchronize%' ORDER BY r.start",
        )
        .unwrap();
    let syncs: Vec<(Ns, Ns)> =
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect();
    let refills: Vec<(Ns, Ns)> = holes
        .iter()
        .copied()
        .filter(|&(hs, he)| {
            let i = syncs.partition_point(|s| s.0 < hs);
            syncs[i.saturating_sub(8)..i].iter().any(|&(_, e)| hs <= e && e < he)
        })
        .collect();
    let want = (refills.len(), refills.iter().map(|&h| in_window(h)).sum::<Ns>());
    assert!(want.0 >= 25 * 29, "{want:?}: about 32 refills a steady step");
    assert_eq!(a.steady.short_by_cause[Cause::SyncDrain as usize], want);
    // Every short hole has a cause: they add up to the short idle, and count as SQL's.
    let all: usize = a.steady.short_by_cause.iter().map(|c| c.0).sum();
    assert_eq!(all, holes.len());
    assert_eq!(a.steady.short_by_cause.iter().map(|c| c.1).sum::<Ns>(), a.steady.short_idle_ns);
    // The sync finding counts them.
    let f = a.findings.iter().find(|f| f.rule.name() == "cuda_api_sync").expect("cuda_api_sync fires");
    assert!(f.evidence.iter().any(|(k, v)| k == "sync_holes" && *v == want.0.to_string()), "{:?}", f.evidence);
}
