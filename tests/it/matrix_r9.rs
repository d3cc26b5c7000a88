//! The ninth round (r9_*), a validation round of loop kinds no earlier round held: AMP fp16
//! with a `GradScaler` whose `found_inf` `.item()` is the only per-step sync of a fed loop, a
//! training step replayed as CUDA graphs (whole-graph executions only) starved by its
//! DataLoader, a reinforcement-learning loop whose numpy environment steps on the launching
//! thread, the DataLoader's pin-memory thread as the producer that binds, an inference server
//! loop with random batch sizes (no optimizer), Hugging Face `generate()` whose step is a request
//! marked by a top-level NVTX range that is not a step-like name, and a Kineto twin of the RL
//! loop; against `expected_r9.json`, written before the captures, with hand labels
//! (`labels_r9.json`) committed before lanescope read them: what marked the steps and how many,
//! which region holds most of the steady idle, and the headline's rule. The code was not tuned
//! on these captures; what does not hold is to be listed in `NOT_YET` with why, after the first
//! run: the test fails when a listed item comes to hold (take it off) or another stops holding.

// Checks that did not hold on the first (and only) run after the mechanism code landed,
// 2026-12-03 at 51a2fe7 (41 of 47 labels agree, 5 of 7 cells hold whole), with why; nothing was
// changed to make the others hold. After that run one more did not hold: r9_amp_scaler's
// headline was pageable_bandwidth, raised to warning by the model's weights copied from
// pageable memory at start-up (0% of the steady state); the comparison with pinned copies now
// raises only copies of the loop (a mechanism change, on every round; 559c7c5 records the run).
const NOT_YET: [(&str, &str); 1] = [(
    "r9_serve_varbatch: headline starvation",
    "the expectation reasoned a per-batch response sync (rule cuda_api_sync, gpu_gaps or gpu_time_util, at most a \
         warning); the raw rows (after_the_run in expected_r9.json) show the syncs wait 5-20 µs and 96% of the steady \
         idle is host-busy in `forward`: cuBLASLt's host work and lazy kernel loads at batch sizes not seen before. \
         lanescope now names that mechanism (hint new-shapes on the 93 gaps with a load, 293 ms; fix new_shapes, \
         priced at 1.84 ms of the 3.15 ms mean step) as the starvation headline's fix: critical starvation, 80% of \
         the steady window idle, which the expectation's rule and severity do not allow",
)];

#[test]
fn every_ninth_round_cell_against_its_expectation() {
    crate::rounds::every_cell("r9", &NOT_YET);
}
