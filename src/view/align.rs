//! Where each run sits on the two-run view's shared time axis: both at the start of
//! the same step instance, or each from its own start. Pure: tested without a trace.

use crate::model::Ns;

/// How the two runs are placed on the shared axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Both at the start of step instance `k` (0-based, in start order).
    Step(usize),
    /// Each run from its own first event.
    Start,
}

/// What alignment needs of one run: its extent and its step instances (sorted by start).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunSpan<'a> {
    /// First event.
    pub start: Ns,
    /// Last event's end.
    pub end: Ns,
    /// Step instances as (start, end).
    pub steps: &'a [(Ns, Ns)],
}

/// Step instances both runs have (0 when either has no step phase).
pub(crate) fn common_steps(runs: [RunSpan<'_>; 2]) -> usize {
    runs[0].steps.len().min(runs[1].steps.len())
}

/// The step instance the view opens on: the first of the steady state (the second
/// step) when both runs have it, else the first.
pub(crate) fn first_step(runs: [RunSpan<'_>; 2]) -> Option<usize> {
    match common_steps(runs) {
        0 => None,
        1 => Some(0),
        _ => Some(1),
    }
}

/// The instant of each run that sits at the axis origin.
pub(crate) fn origins(align: Align, runs: [RunSpan<'_>; 2]) -> [Ns; 2] {
    runs.map(|r| match align {
        Align::Step(k) => r.steps.get(k).map_or(r.start, |s| s.0),
        Align::Start => r.start,
    })
}

/// Each run's extent on the shared axis, in its own time: the union of both runs.
pub(crate) fn shared_extents(origins: [Ns; 2], runs: [RunSpan<'_>; 2]) -> [(Ns, Ns); 2] {
    let rel = |t: Ns, o: Ns| i128::from(t) - i128::from(o);
    let lo = rel(runs[0].start, origins[0]).min(rel(runs[1].start, origins[1]));
    let hi = rel(runs[0].end, origins[0]).max(rel(runs[1].end, origins[1]));
    let back = |x: i128, o: Ns| (x + i128::from(o)).clamp(i128::from(Ns::MIN), i128::from(Ns::MAX)) as Ns;
    origins.map(|o| (back(lo, o), back(hi, o)))
}

/// The window (start relative to the origin, span) that shows step `k` of both runs:
/// the longer of the two instances with a margin, its start a tenth of the way in.
pub(crate) fn step_window(k: usize, runs: [RunSpan<'_>; 2]) -> (Ns, Ns) {
    let len = runs.iter().filter_map(|r| r.steps.get(k)).map(|s| s.1.saturating_sub(s.0)).max().unwrap_or(1);
    let span = len.saturating_add(len / 4).max(1);
    (-(span / 10), span)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: [(Ns, Ns); 3] = [(100, 200), (300, 420), (500, 600)];
    const B: [(Ns, Ns); 2] = [(1_000, 1_050), (1_100, 1_300)];

    fn runs() -> [RunSpan<'static>; 2] {
        [RunSpan { start: 0, end: 700, steps: &A }, RunSpan { start: 900, end: 1_400, steps: &B }]
    }

    #[test]
    fn step_alignment_puts_the_same_instance_at_the_origin() {
        assert_eq!(common_steps(runs()), 2);
        assert_eq!(first_step(runs()), Some(1));
        assert_eq!(origins(Align::Step(1), runs()), [300, 1_100]);
        assert_eq!(origins(Align::Start, runs()), [0, 900]);
        // Run 0 spans -300..400 around its origin, run 1 -200..300: the union is -300..400.
        assert_eq!(shared_extents([300, 1_100], runs()), [(0, 700), (800, 1_500)]);
        // The longer instance of step 1 is run 1's (200 ns): 250 ns, 25 before the start.
        assert_eq!(step_window(1, runs()), (-25, 250));
    }

    #[test]
    fn no_steps_in_one_run_means_no_step_alignment() {
        let r = [RunSpan { start: 0, end: 10, steps: &[] }, runs()[1]];
        assert_eq!(first_step(r), None);
        assert_eq!(origins(Align::Step(0), r), [0, 1_000]);
        let far = [RunSpan { start: Ns::MIN, end: Ns::MAX, steps: &[] }, runs()[1]];
        let e = shared_extents([Ns::MIN, 0], far);
        assert!(e[0].0 <= e[0].1 && e[1].0 <= e[1].1);
    }
}
