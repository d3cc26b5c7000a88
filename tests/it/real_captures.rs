//! Real captures made for this project on two H200s (`tests/fixtures/capture/`):
//! CUDA graph replay recorded as whole-graph executions, and one process driving two
//! GPUs with a peer-to-peer copy. Expected values come from SQL over the same files.

use crate::util::{fixture, sql};
use lanescope::Options;
use lanescope::{LaneKind, MemClass};
use rusqlite::Connection;

fn rows(c: &Connection, sql: &str) -> Vec<(i64, i64, i64)> {
    let mut stmt = c.prepare(sql).unwrap();
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect()
}

// Union of intervals by the plain sort-and-sweep, independent of the crate's Union.
fn union(mut v: Vec<(i64, i64)>) -> Vec<(i64, i64)> {
    v.sort_unstable();
    let mut out: Vec<(i64, i64)> = Vec::new();
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

#[test]
fn graph_executions_are_lanes_and_busy_time() {
    let f = fixture("graphs.sqlite");
    let t = lanescope::load(&f).unwrap();
    let c = sql(&f);
    let graphs = rows(&c, "SELECT start, \"end\", deviceId FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE");
    assert!(!graphs.is_empty());
    let lane_rows: usize =
        t.lanes.iter().filter(|l| matches!(l.kind, LaneKind::Graphs { .. })).map(|l| l.ev.len()).sum();
    assert_eq!(lane_rows, graphs.len());
    let a = lanescope::analyze(&t, &Options { min_gap_ns: 1_000, ..Options::default() });
    let kernels: i64 = c.query_row("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL", [], |r| r.get(0)).unwrap();
    assert_eq!((a.totals.kernels, a.totals.graphs), (kernels as u64, graphs.len() as u64));
    for &(s, e, dev) in &graphs {
        let d = a.devices.iter().find(|d| i64::from(d.device) == dev).unwrap();
        // A replaying graph keeps the GPU busy: no false gap inside it.
        assert_eq!(d.busy.busy_in(s, e), e - s, "graph {s}..{e} not busy");
        assert!(!a.gaps.iter().any(|g| g.start < e && s < g.end), "gap inside graph {s}..{e}");
    }
}

#[test]
fn two_gpus_get_their_own_lanes_busy_time_and_gaps() {
    let f = fixture("multigpu.sqlite");
    let t = lanescope::load(&f).unwrap();
    let c = sql(&f);
    let devices: Vec<u32> = {
        let mut stmt = c.prepare("SELECT DISTINCT deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY 1").unwrap();
        stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect()
    };
    assert_eq!(devices.len(), 2);
    assert_eq!(t.devices(), devices);
    let p2p = rows(&c, "SELECT start, \"end\", deviceId FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 10");
    let p2p_lanes: usize = t
        .lanes
        .iter()
        .filter(|l| matches!(l.kind, LaneKind::Memory { class: MemClass::P2P, .. }))
        .map(|l| l.ev.len())
        .sum();
    assert_eq!(p2p_lanes, p2p.len());

    let min_gap = 100_000;
    let a = lanescope::analyze(&t, &Options { min_gap_ns: min_gap, ..Options::default() });
    for d in devices {
        let ops = rows(
            &c,
            &format!(
                "SELECT start, \"end\", deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = {d}
                 UNION ALL SELECT start, \"end\", deviceId FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE deviceId = {d}
                 UNION ALL SELECT start, \"end\", deviceId FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE deviceId = {d}"
            ),
        );
        let busy = union(ops.iter().map(|&(s, e, _)| (s, e)).collect());
        let total: i64 = busy.iter().map(|(s, e)| e - s).sum();
        let dev = a.devices.iter().find(|x| x.device == d).unwrap();
        assert_eq!(dev.busy.total(), total, "busy time of GPU {d}");
        let want: Vec<(i64, i64)> =
            busy.windows(2).map(|w| (w[0].1, w[1].0)).filter(|(s, e)| e - s >= min_gap).collect();
        let got: Vec<(i64, i64)> = a.gaps.iter().filter(|g| g.device == d).map(|g| (g.start, g.end)).collect();
        assert_eq!(got, want, "gaps of GPU {d}");
    }
    // Both GPUs are named in the labels the viewer and the report use.
    assert!(t.gpu_label(1).contains("H200"), "{}", t.gpu_label(1));
}
