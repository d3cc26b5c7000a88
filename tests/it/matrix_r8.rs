//! The eighth round (r8_*), a validation round aimed at issue 33's mechanisms and issue 32's
//! loop anatomy: evaluation batches built on the launching thread after a `.cpu()` that waits
//! microseconds, GIL contention with a pure-Python thread of the training process, steady-state
//! `torch.compile` recompiles and an eager twin whose helper thread is no compiler, data-dependent
//! syncs without NVTX (holes under 100 µs), the caching allocator turned off, Lightning with a
//! checkpoint callback, OpenMP oversubscription in DataLoader workers with `pin_memory`, and a
//! Kineto twin of the evaluation cell; against `expected_r8.json`, written before the captures,
//! with hand labels (`labels_r8.json`) committed before lanescope read them: what marked the
//! steps and how many, which region holds most of the steady idle, and the headline's rule. The
//! code was not tuned on these captures; what does not hold is to be listed in `NOT_YET` with
//! why, after the first run: the test fails when a listed item comes to hold (take it off) or
//! another stops holding.

// Checks that did not hold on the first (and only) run after the mechanism code landed,
// 2026-12-03 at e9b3bba, with why; nothing was changed to make the others hold.
const NOT_YET: [(&str, &str); 1] = [(
    "r8_mask_sync: headline launch_bound",
    "the expectation reasoned sync-drain; the raw rows (after_the_run in expected_r8.json) show the syncs \
         wait 5-30 µs while the host is the slower side: launch-bound and host-busy hold the idle",
)];

#[test]
fn every_eighth_round_cell_against_its_expectation() {
    crate::rounds::every_cell("r8", &NOT_YET);
}
