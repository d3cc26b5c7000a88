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
// was changed to make the others hold.
const NOT_YET: [(&str, &str); 3] = [
    (
        "r10_act_ckpt: headline starvation",
        "the expectation reasoned a fed loop (1-4% idle); the raw rows (after_the_run in expected_r10.json) \
         show 41% idle, a 24.8 ms step against the reasoned 11 ms: the host's Python between launches \
         (the recompute handing work between the main thread and the autograd engine) is the slower side, \
         host-busy as the labels read it, so a warning starvation headline is the rows' reading",
    ),
    (
        "r10_kineto_seq: headline cuda_api_sync",
        "every finding is info; cuda_api_sync leads because its what-if is priced (drop_sync 183 µs of a \
         29.3 ms step) and the others are not, though a what-if under 5% of the step must never lead \
         (issue 32, item 6)",
    ),
    (
        "r10_var_seq: headline cuda_api_sync",
        "as r10_kineto_seq: drop_sync's 46 µs of a 22.0 ms step is priced, the others are not, and the \
         priced one leads though it saves 0.2% of the step",
    ),
];

#[test]
fn every_tenth_round_cell_against_its_expectation() {
    crate::rounds::every_cell("r10", &NOT_YET);
}
