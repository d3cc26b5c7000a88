//! The tenth round (r10_*), a validation round of loop kinds no earlier round held: cuDNN
//! autotuning (`cudnn.benchmark`) at image sizes that keep changing, a small GPT-2 trained on
//! sequences padded per batch (new GEMM shapes in most steps), a benchmark loop with a
//! `torch.cuda.synchronize()` every iteration, activation checkpointing in a fed loop, batches
//! from a Python `threading.Thread` producer through a `queue.Queue` (one GIL for producer and
//! launcher), a capture that starts mid-training (`--capture-range=cudaProfilerApi`: no start-up
//! in the trace), and a Kineto twin of the GPT-2 cell; against `expected_r10.json`, written
//! before the captures, with hand labels (`labels_r10.json`) committed before lanescope read
//! them: what marked the steps and how many, which region holds most of the steady idle, and
//! the headline's rule. The code was not tuned on these captures; what does not hold is to be
//! listed in `NOT_YET` with why, after the first run: the test fails when a listed item comes
//! to hold (take it off) or another stops holding.

// Checks that did not hold on the first (and only) run after the mechanism code landed,
// 2026-12-03 at 3c447de (44 of 46 labels agree, 4 of 7 cells hold whole), with why; nothing
// was changed to make the others hold. Two more misses of that run, r10_var_seq and
// r10_kineto_seq (headline cuda_api_sync, info: drop_sync priced at 46 µs of a 22.0 ms step
// and 183 µs of 29.3 ms, the other findings unpriced), broke issue 32's rule that a what-if
// under 5% of the step never leads; the ranking now puts findings that save little after the
// unpriced ones, and the summary first where no fix is worth acting on (a rule change on every
// round: 54fd8aa records the run, and seven headlines of all rounds moved, all to `gpu_gaps`).
const NOT_YET: [(&str, &str); 1] = [(
    "r10_act_ckpt: headline starvation",
    "the expectation reasoned a fed loop (1-4% idle); the raw rows (after_the_run in expected_r10.json) \
     show 41% idle, a 24.8 ms step against the reasoned 11 ms: the host's Python between launches (the \
     recompute handing work between the main thread and the autograd engine) is the slower side, \
     host-busy as the labels read it, so a warning starvation headline is the rows' reading",
)];

#[test]
fn every_tenth_round_cell_against_its_expectation() {
    crate::rounds::every_cell("r10", &NOT_YET);
}
