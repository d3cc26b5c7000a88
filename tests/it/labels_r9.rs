//! lanescope against the ninth round's hand labels (`tests/fixtures/matrix/labels_r9.json`):
//! gaps of the r9 captures (a validation round of new loop kinds: a `GradScaler`'s per-step sync,
//! a CUDA-graphed step starved by its DataLoader whose graph executions count as busy, an RL
//! environment on the launching thread, a pin-memory thread that binds, an inference loop whose
//! new batch sizes cost cuBLAS host work and lazy kernel loads, eager `generate()`) labelled
//! from the raw rows with sqlite3 and Python and committed before lanescope ever read these
//! captures. Every labelled gap of an nsys cell must be found, with the label's cause and hint
//! (the hint the rules of `docs/causes.md` give; the label's `mechanism` says what the host
//! did, in words, and `doubt` where the mechanism and the rules part). The labels that disagree
//! are to be listed in `DISAGREE` with why, after the first run: the test fails when one of them
//! comes to agree (take it off) or another stops agreeing.

// (cell, gap start) of labels lanescope reads otherwise on the first run after the mechanism
// code landed, with why (none listed yet: the lead's first run fills it).
const DISAGREE: [(&str, i64, &str); 0] = [];

#[test]
fn lanescope_agrees_with_the_r9_labels_but_the_listed_ones() {
    crate::rounds::every_label("r9", 40, &DISAGREE, |g| {
        (g["cause"].as_str().unwrap().to_string(), g["hint"].as_str().unwrap_or("none").to_string())
    });
}
