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
// at 9996bb6, with why; nothing was changed to make the others hold. r7_async_ckpt's
// headline holds since a periodic stall's fix is priced by the wall its steps add beyond the
// median step (the snapshot's slow pageable copies and its GIL wait: 452 ms over 39 steps),
// not by its GPU idle alone (issue 32).
const NOT_YET: [(&str, &str); 1] = [(
    "r7_item_log: headline starvation",
    "gpu_gaps carries no fix of its own (issue 32, item 6); starvation, with the same cause, leads \
         rather than cuda_api_sync: the GIL waits behind the pin-memory thread outweigh the .item() syncs \
         (labels_r7.json)",
)];

#[test]
fn every_seventh_round_cell_against_its_expectation() {
    crate::rounds::every_cell("r7", &NOT_YET);
}
