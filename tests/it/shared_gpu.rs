//! Two processes on one GPU (issue 32, item 4), on the r6 capture made for it: each
//! process's busy time against SQL over its own rows, steps per process, and the
//! `shared_gpu` finding leading with its what-if; and the step budget.

use lanescope::{Options, Rule, analyze};

use crate::util::{matrix_trace, sql};

// The union of `pid`'s kernel, copy and memset rows on device 0, from SQL.
fn busy_by_sql(path: &std::path::Path, pid: i64) -> i64 {
    let c = sql(path);
    let mut rows: Vec<(i64, i64)> = Vec::new();
    for table in ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"] {
        let q = format!("SELECT start, end FROM {table} WHERE deviceId = 0 AND (globalPid >> 24) & 16777215 = ?1");
        let mut st = c.prepare(&q).unwrap();
        rows.extend(st.query_map([pid], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap));
    }
    union_ns(rows)
}

#[test]
fn two_processes_on_one_gpu_get_their_own_busy_time_and_steps_and_lead_the_findings() {
    let path = matrix_trace("r6_two_procs");
    let a = analyze(&lanescope::load(&path).unwrap(), &Options::default());
    let (device, procs) = a.processes.first().expect("GPU 0 holds two processes");
    assert_eq!(*device, 0);
    assert_eq!(procs.len(), 2, "{procs:?}");
    for p in procs {
        assert_eq!(p.busy_ns, busy_by_sql(&path, i64::from(p.pid)), "pid {}", p.pid);
        // Each ran 3 warm-up steps and 60 more (expected_r6.json), within 1.
        assert!(p.steps.is_some_and(|n| n.abs_diff(63) <= 1), "{p:?}");
        assert!(p.waited_ns > 0);
    }
    // Together they were busier than the GPU: each one's gap is the other's work.
    assert!(procs.iter().map(|p| p.busy_ns).sum::<i64>() > a.devices[0].busy.total());
    let head = &a.findings[0];
    assert_eq!(head.rule, Rule::SharedGpu, "{}", head.message);
    assert!(head.whatif.as_ref().is_some_and(|w| w.saving_per_step_ns > 0));
}

// Issue 32, item 5: the budget of the mean steady step, its busy time against the union of
// the GPU's rows by SQL over the steady window, and its parts adding up to its wall; on an
// NVTX-marked capture and on one whose steps are inferred.
#[test]
fn the_step_budget_adds_up_and_its_busy_time_is_sql_s() {
    for path in [crate::util::fixture("pageable.sqlite"), matrix_trace("r6_plain_nonvtx")] {
        let a = analyze(&lanescope::load(&path).unwrap(), &Options::default());
        let b = a.budget.as_ref().expect("steps, so a budget");
        let (lo, hi) = (a.windows.steady_start, a.windows.steady_end);
        let c = sql(&path);
        let mut rows: Vec<(i64, i64)> = Vec::new();
        for table in ["CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"] {
            let q = format!(
                "SELECT max(start, ?1), min(end, ?2) FROM {table} WHERE deviceId = ?3 AND end > ?1 AND start < ?2"
            );
            let mut st = c.prepare(&q).unwrap();
            let it = st.query_map([lo, hi, i64::from(b.device)], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
            rows.extend(it.map(Result::unwrap));
        }
        let busy = union_ns(rows);
        let n = b.steps as i64;
        assert_eq!(b.step_ns, (hi - lo) / n, "{}", path.display());
        assert_eq!(b.gpu_busy_ns, busy / n, "{}", path.display());
        let idle: i64 = b.idle_by_cause.iter().map(|c| c.1).sum();
        assert_eq!(b.gpu_busy_ns + idle + b.short_idle_ns + b.residual_ns, b.step_ns);
        // Only integer division is left over: under one ns per part.
        assert!((0..=b.idle_by_cause.len() as i64 + 2).contains(&b.residual_ns), "{b:?}");
    }
}

fn union_ns(mut rows: Vec<(i64, i64)>) -> i64 {
    rows.sort_unstable();
    let (mut total, mut cur): (i64, Option<(i64, i64)>) = (0, None);
    for (s, e) in rows {
        cur = match cur {
            Some((a, b)) if s <= b => Some((a, b.max(e))),
            Some((a, b)) => {
                total += b - a;
                Some((s, e))
            }
            None => Some((s, e)),
        };
    }
    total + cur.map_or(0, |(a, b)| b - a)
}
