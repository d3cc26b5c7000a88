//! The seventh round (r7_*), a validation round: loop kinds no earlier round held (timm
//! ResNet-50 fed and starved by torchvision/PIL workers, an asynchronous checkpoint, a periodic
//! gc.collect pause without NVTX, the Hugging Face Trainer with evaluation every 10 steps,
//! Lightning with a validation loop, two fed processes on one GPU, per-step `.item()` logging,
//! a Kineto twin), against `expected_r7.json`, written before the captures, with hand labels
//! (`labels_r7.json`) committed before lanescope read them: what marked the steps and how
//! many, which region holds most of the steady idle (`regions.top_any` where the trace alone
//! cannot tell a loop from a periodic long step), and the headline's rule. The code was not
//! tuned on these captures; what does not hold is to be listed in `NOT_YET` with why, after
//! the first run: the test fails when a listed item comes to hold (take it off) or another
//! stops holding.

// Checks that did not hold on the first (and only) run after the code was written, 2026-12-03
// at 9996bb6, with why; nothing was changed to make the others hold.
const NOT_YET: [(&str, &str); 2] = [
    (
        "r7_async_ckpt: headline cuda_memcpy_async",
        "the snapshot steps stall 25-33 ms on the GIL while the writer thread's torch.save truncates the \
         last checkpoint in fopen (labels_r7.json); the periodic region is found but its fix is not priced \
         above the pageable .cpu() copies' finding",
    ),
    (
        "r7_item_log: headline starvation",
        "gpu_gaps carries no fix of its own (issue 32, item 6); starvation, with the same cause, leads \
         rather than cuda_api_sync: the GIL waits behind the pin-memory thread outweigh the .item() syncs \
         (labels_r7.json)",
    ),
];

#[test]
fn every_seventh_round_cell_against_its_expectation() {
    crate::rounds::every_cell("r7", &NOT_YET);
}
