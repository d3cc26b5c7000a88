//! lanescope against the eleventh round's hand labels (`tests/fixtures/matrix/labels_r11.json`):
//! gaps of the r11 captures (a validation round of new loop kinds: Adam over CPU master weights on
//! the launching thread, CUDA graph trees recorded in the steady window with `cudaFreeHost` and a
//! lazy kernel load, a side-stream prefetcher whose only gaps are `.item()` drains, a CPU
//! embedding table's `index_add_` / `index_select` around pageable copies, weight histograms in
//! numpy every 20 steps, `pool.map` waiting for `multiprocessing.Pool` processes) labelled from the
//! raw rows with sqlite3 and Python and committed before lanescope ever read these captures. Every
//! labelled gap of an nsys cell must be found, with the label's cause and hint (the hint the rules
//! of `docs/causes.md` give; the label's `mechanism` says what the host did, in words, and `doubt`
//! where the mechanism and the rules part). The labels that disagree are to be listed in
//! `DISAGREE` with why, after the first run: the test fails when one of them comes to agree (take
//! it off) or another stops agreeing.

// (cell, gap start, why) of labels lanescope reads otherwise. The first run (2026-12-03 at
// aa6648b) agreed on 38 of 41; the three mp_pool gaps it read io-wait (the pool's result
// handler in `read` of a pipe) agree since reads that may be pipes relay to the workers
// (matrix_r11.rs says more).
const DISAGREE: [(&str, i64, &str); 0] = [];

#[test]
fn lanescope_agrees_with_the_r11_labels_but_the_listed_ones() {
    crate::rounds::every_label("r11", 40, &DISAGREE, |g| {
        (g["cause"].as_str().unwrap().to_string(), g["hint"].as_str().unwrap_or("none").to_string())
    });
}
