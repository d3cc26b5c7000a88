//! lanescope against the tenth round's hand labels (`tests/fixtures/matrix/labels_r10.json`):
//! gaps of the r10 captures (a validation round of new loop kinds: cuDNN's autotuning search
//! compiling engines with NVRTC and freeing workspaces at new image sizes, a GPT-2 on padded
//! variable-length batches, a per-iteration `synchronize()`, activation checkpointing, a
//! `threading.Thread` producer sharing the GIL with the launching thread, a capture that starts
//! mid-run) labelled from the raw rows with sqlite3 and Python and committed before lanescope
//! ever read these captures. Every labelled gap of an nsys cell must be found, with the label's
//! cause and hint (the hint the rules of `docs/causes.md` give; the label's `mechanism` says what
//! the host did, in words, and `doubt` where the mechanism and the rules part). The labels that
//! disagree are to be listed in `DISAGREE` with why, after the first run: the test fails when
//! one of them comes to agree (take it off) or another stops agreeing.

// (cell, gap start) of labels lanescope reads otherwise on the first (and only) run after the
// mechanism code landed (2026-12-03, 3c447de: 44 of 46 agree), with why. The other one,
// r10_midrun 36_587_672 (worker-busy without the GIL hint: the autograd engine's thread waited
// for the GIL held by the pin-memory thread), agrees since issue 33 item 7's last clause landed
// (b6ab6bc: short waits beside a GIL-backtraced one count as GIL waits).
const DISAGREE: [(&str, i64, &str); 1] = [(
    "r10_act_ckpt",
    14_023_877_263,
    "the autograd engine's thread waits 406 µs in pthread_cond_wait for the main thread, which ran 144 µs: \
         lanescope stops at host-wait; the label goes on past the process's own threads to a DataLoader \
         worker on CPU the whole gap (worker-busy), and marks it in doubt: the worker was not waited for",
)];

#[test]
fn lanescope_agrees_with_the_r10_labels_but_the_listed_ones() {
    crate::rounds::every_label("r10", 40, &DISAGREE, |g| {
        (g["cause"].as_str().unwrap().to_string(), g["hint"].as_str().unwrap_or("none").to_string())
    });
}
