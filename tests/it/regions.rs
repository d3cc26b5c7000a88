//! A periodic stall priced as a whole: on `r7_async_ckpt` (a snapshot every 5 steps: pageable
//! `.cpu()` copies, then the writer thread holding the GIL), against SQL over the NVTX rows.

use lanescope::{Cause, Options, Window, analyze};

use crate::util::{matrix_trace, sql};

// (start, end, holds a `snapshot` range) of each NVTX `step N` range, by start.
fn steps(path: &std::path::Path) -> Vec<(i64, i64, bool)> {
    let db = sql(path);
    let q = "SELECT s.start, s.end, EXISTS (SELECT 1 FROM NVTX_EVENTS c WHERE c.text = 'snapshot' AND c.start >= \
             s.start AND c.end <= s.end) FROM NVTX_EVENTS s WHERE s.text LIKE 'step %' ORDER BY s.start";
    let mut st = db.prepare(q).unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect()
}

// `less_often` saves the wall the snapshot steps take beyond the median step (their copies
// keep the GPU busy: not only the GIL wait's idle), per steady step; and the waits inside
// the snapshot steps are the stall's, not an input pipeline setting the pace.
#[test]
fn a_checkpoint_stall_is_priced_by_its_extra_wall_and_its_waits_are_no_input_pipeline() {
    let path = matrix_trace("r7_async_ckpt");
    let steps = steps(&path);
    let mut walls: Vec<i64> = steps.iter().map(|s| s.1 - s.0).collect();
    walls.sort_unstable();
    let median = walls[(walls.len() - 1) / 2];
    // The steady state starts at the second step.
    let steady = &steps[1..];
    let extra: i64 = steady.iter().filter(|s| s.2).map(|s| s.1 - s.0 - median).sum();
    let a = analyze(&lanescope::load(&path).unwrap(), &Options::default());
    let w = a.whatif.iter().find(|w| w.fix.id() == "less_often").expect("less_often priced");
    let want = extra / steady.len() as i64;
    assert!((w.saving_per_step_ns - want).abs() <= 1, "{w:?}: SQL {extra} ns over {} steps", steady.len());
    let p = a.regions.iter().find(|r| r.name == "snapshot").unwrap();
    // Priced by the idle alone, the copies' GPU time would be missed.
    assert!(p.idle_ns < extra, "idle {} against the extra wall {extra}", p.idle_ns);
    // Every steady input-like wait (io-wait here: the writer holds the GIL in fopen) lies
    // in a snapshot step; with them left to the stall, the loop is not input-bound.
    let waits: Vec<_> = a.gaps.iter().filter(|g| g.window == Window::Steady && g.cause == Cause::IoWait).collect();
    assert!(!waits.is_empty());
    for g in &waits {
        assert!(
            steps.iter().any(|s| s.2 && s.0 <= g.start && g.start < s.1),
            "io-wait at {} outside a snapshot",
            g.start
        );
    }
    let m = a.step_model.as_ref().unwrap();
    assert!(!m.input_bound, "{m:?}");
}
