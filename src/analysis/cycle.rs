//! Steps inferred from the GPU stream, for traces where no NVTX range marks a step (most
//! users add none: plain loops, PyTorch Lightning, the Hugging Face `Trainer`).
//!
//! A training or inference loop launches the same kernels in the same order once per
//! step. On the process with the most GPU time, on its busiest GPU:
//!
//! The sequence holds the GPU operations in start order: kernels, whole CUDA-graph replays
//! (a loop of graphs launches one a step) and copies (the batch's copy in, a result's copy
//! back: where identical layers repeat inside a step, the copy once a block of them is
//! what marks the step), not memsets. Kernels are told apart by their demangled names,
//! template arguments included: a `multi_tensor_apply_kernel` of `clip_grad_norm_` is not
//! the optimizer's; a copy is its lane (direction and stream), whatever its memory kinds.
//!
//! 1. **Period.** The kernel names in start order repeat with a period of `P` kernels:
//!    the smallest lag at which most sampled positions hold the same kernel name as one
//!    lag later ([`REPEAT_SHARE`]). Candidate lags are the median distances between
//!    consecutive launches of each kernel name, so a kernel launched several times per
//!    step (a layer's GEMM) offers a lag that fails the test, and a kernel once per two
//!    steps offers a multiple of `P` that the smaller lag beats. A stall without kernels
//!    (a checkpoint, a data wait) does not break the repeat: it holds no kernels.
//!    Launches with an optimizer step between them (an optimizer kernel and a kernel of
//!    the model) are never one burst: a recompile's thousands of kernels between some
//!    steps would otherwise read as the jump between bursts.
//! 2. **Anchor.** An operation launched once per period (most of its distances `P`):
//!    optimizer kernels first (`multi_tensor_apply`, fused or foreach Adam/SGD...), then
//!    an NCCL all-reduce, then the most regular one, of those whose repeats span at least
//!    half the time the longest one's do (an eager warm-up's cycle before a loop of graph
//!    replays repeats at the same period, over a fraction of the run).
//! 3. **Check.** A second kernel must fall as often (once, or a micro-batch's kernel
//!    several times) between consecutive anchors in [`AGREE_SHARE`] of the periods;
//!    without one, no period holds and no step is guessed.
//!
//! A step is then a range of the launching thread's time, as an NVTX step range would
//! be: from the end of one optimizer anchor's launch call to the end of the next (the
//! step ends with its optimizer), or from one anchor's launch call to the next for other
//! anchors.

use std::collections::HashMap;

use super::index::{Hints, Index};
use super::phases::Instance;
use crate::model::{EventRef, LaneKind, MemClass, Ns, StrId, Trace};

/// Most kernels read to find the period; a longer run is searched only for its anchors.
const MAX_SEQUENCE: usize = 1 << 21;
/// Positions sampled to test a lag.
const LAG_SAMPLES: usize = 4096;
/// Share of sampled positions whose kernel repeats one period later, for a period to hold.
const REPEAT_SHARE: f64 = 0.7;
/// Share of an anchor's distances that must be the period (the rest are stalls or other
/// loops between steps).
const ONCE_SHARE: f64 = 0.5;
/// Ratio between sorted distances of a kernel's launches that splits them into bursts.
const JUMP: u32 = 4;
/// Share of anchor periods holding exactly one launch of the second anchor.
const AGREE_SHARE: f64 = 0.9;
/// Fewest steps inferred.
const MIN_STEPS: usize = 3;

/// Steps inferred for one process.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Inferred {
    /// The process.
    pub pid: u32,
    /// The kernel whose launches mark the boundaries (its display name).
    pub anchor: StrId,
    /// Steps as ranges of the launching thread, sorted by start.
    pub instances: Vec<Instance>,
}

/// Steps of the process with the most GPU kernel time, when its kernels repeat.
pub(crate) fn infer(trace: &Trace, index: &Index) -> Option<Inferred> {
    let (pid, device) = busiest(trace)?;
    infer_for(trace, index, pid, device)
}

/// Steps of process `pid` on GPU `device`, when its kernels repeat.
pub(crate) fn infer_for(trace: &Trace, index: &Index, pid: u32, device: u32) -> Option<Inferred> {
    let lanes: Vec<usize> = (0..trace.lanes.len())
        .filter(|&i| trace.lanes[i].pid == pid && operations_of(trace.lanes[i].kind) == Some(device))
        .collect();
    let seq = sequence(trace, &lanes);
    let cands = candidates(trace, &seq.names, &seq.copies);
    let period = period(&seq.names, &cands)?;
    let anchor = anchor(&cands, period, &|p| start_of(trace, seq.refs[p as usize]))?;
    let at_end = anchor.kind == 0;
    let refs: Vec<EventRef> = if seq.complete {
        let pos = if at_end { &anchor.ends } else { &anchor.starts };
        pos.iter().map(|&p| seq.refs[p as usize]).collect()
    } else {
        every_launch(trace, &lanes, anchor.name, period, at_end)
    };
    let shown = refs.first().map_or(anchor.name, |r| trace.lanes[r.lane as usize].ev.name[r.idx as usize]);
    let instances = steps(trace, index, pid, &refs, at_end);
    (instances.len() >= MIN_STEPS).then_some(Inferred { pid, anchor: shown, instances })
}

// The GPU of a lane whose operations are in the sequence: kernels, whole CUDA-graph
// replays (a graph launched once a step is the step's work) and copies (an input copy or
// a result's copy back once a step), not memsets.
fn operations_of(kind: LaneKind) -> Option<u32> {
    if let LaneKind::Kernels { device, .. } | LaneKind::Graphs { device, .. } = kind {
        return Some(device);
    }
    let LaneKind::Memory { device, class, .. } = kind else { return None };
    matches!(class, MemClass::H2D | MemClass::D2H | MemClass::D2D | MemClass::P2P).then_some(device)
}

// Start of the operation at `r`.
fn start_of(trace: &Trace, r: EventRef) -> Ns {
    trace.lanes[r.lane as usize].ev.start[r.idx as usize]
}

// The (process, GPU) with the most kernel time (graph replays counted as kernels).
fn busiest(trace: &Trace) -> Option<(u32, u32)> {
    let mut time: HashMap<(u32, u32), Ns> = HashMap::new();
    for l in &trace.lanes {
        if let LaneKind::Kernels { device, .. } | LaneKind::Graphs { device, .. } = l.kind {
            *time.entry((l.pid, device)).or_default() += (0..l.ev.len()).map(|i| l.ev.dur(i)).sum::<Ns>();
        }
    }
    time.into_iter().max_by_key(|&(k, t)| (t, std::cmp::Reverse(k))).map(|(k, _)| k)
}

// Kernel names in start order over `lanes`, with where each is.
struct Sequence {
    names: Vec<StrId>,
    refs: Vec<EventRef>,
    // True where the operation is a copy.
    copies: Vec<bool>,
    // False when the run had more than MAX_SEQUENCE kernels.
    complete: bool,
}

// The kernels of `lanes` in start order, as (lane, row).
fn in_start_order<'a>(trace: &'a Trace, lanes: &'a [usize]) -> impl Iterator<Item = (usize, usize)> + 'a {
    let rows = lanes.iter().map(|&li| {
        let ev = &trace.lanes[li].ev;
        (0..ev.len()).map(move |i| (ev.start[i], li, i))
    });
    itertools::kmerge_by(rows, |a: &(Ns, usize, usize), b: &(Ns, usize, usize)| a.0 < b.0).map(|(_, li, i)| (li, i))
}

fn sequence(trace: &Trace, lanes: &[usize]) -> Sequence {
    let mut names = Vec::new();
    let mut refs = Vec::new();
    let mut copies = Vec::new();
    let mut complete = true;
    for (li, i) in in_start_order(trace, lanes) {
        if names.len() == MAX_SEQUENCE {
            complete = false;
            break;
        }
        names.push(operation_id(&trace.lanes[li], i));
        refs.push(EventRef { lane: li as u32, idx: i as u32 });
        copies.push(matches!(trace.lanes[li].kind, LaneKind::Memory { .. }));
    }
    Sequence { names, refs, copies, complete }
}

// What tells operations apart: for a kernel, the demangled name with its template
// arguments (kept in `aux`), else the display name. The short name is not enough:
// `clip_grad_norm_`'s norms and the optimizer's foreach updates are both
// `multi_tensor_apply_kernel`, and as one name their launches read as two bursts a step.
// A graph replay is its display name (the graph's id). A copy is its lane: one
// direction on one stream, named by the lane's first copy. Its memory kinds are not
// part of it: a loop whose copy back goes from pageable to pinned memory halfway is the
// same loop.
fn operation_id(lane: &crate::model::Lane, i: usize) -> StrId {
    let ev = &lane.ev;
    if let LaneKind::Kernels { .. } = lane.kind {
        return StrId::try_from(ev.aux(i)).ok().filter(|&a| a != 0).unwrap_or(ev.name[i]);
    }
    if let LaneKind::Memory { .. } = lane.kind { ev.name[0] } else { ev.name[i] }
}

// A kernel name's launches grouped into bursts: launches closer together than the
// largest jump in their distances (a layer's kernel several times per step) are one burst.
#[derive(Debug, Clone)]
struct Candidate {
    name: StrId,
    // 0 optimizer, 1 NCCL all-reduce, 2 any other.
    kind: u8,
    // Position of each burst's first and last launch.
    starts: Vec<u32>,
    ends: Vec<u32>,
    // Median distance between burst starts, in kernels.
    lag: usize,
}

impl Candidate {
    // Where the name repeats: from its second burst (the first step is warm-up) to its last.
    fn region(&self) -> (usize, usize) {
        (self.starts[1] as usize, *self.starts.last().unwrap_or(&0) as usize)
    }

    // Share of burst distances within 10% of `period`.
    fn regularity(&self, period: usize) -> f64 {
        let near = |d: u32| (d as usize).abs_diff(period) * 10 <= period;
        self.starts.windows(2).filter(|w| near(w[1] - w[0])).count() as f64 / (self.starts.len() - 1) as f64
    }
}

// Every name launched at least MIN_STEPS times, in bursts; `copies` marks the copies of
// the sequence (empty: none).
fn candidates(trace: &Trace, names: &[StrId], copies: &[bool]) -> Vec<Candidate> {
    let mut at: HashMap<StrId, Vec<u32>> = HashMap::new();
    for (p, &n) in names.iter().enumerate() {
        at.entry(n).or_default().push(p as u32);
    }
    let kinds: HashMap<StrId, u8> = at.keys().map(|&n| (n, kind(trace.strings.get(n)))).collect();
    let steps = OptimizerSteps::new(names, &kinds, copies);
    let mut out: Vec<Candidate> = at
        .into_iter()
        .filter(|(_, p)| p.len() >= MIN_STEPS)
        .filter_map(|(name, pos)| bursts(name, kinds[&name], &pos, &steps))
        .collect();
    out.sort_by_key(|c| (c.kind, c.lag, c.starts[0], c.name));
    out
}

// Where optimizer kernels and copies sit in the sequence, to tell whether an optimizer
// step falls between two positions.
struct OptimizerSteps {
    // Optimizer kernels before each position (one entry more than the sequence).
    before: Vec<u32>,
    // Copies before each position, likewise.
    copies: Vec<u32>,
}

impl OptimizerSteps {
    fn new(names: &[StrId], kinds: &HashMap<StrId, u8>, copies: &[bool]) -> Self {
        let count = |is: &dyn Fn(usize) -> bool| {
            std::iter::once(0)
                .chain((0..names.len()).scan(0u32, |n, p| {
                    *n += u32::from(is(p));
                    Some(*n)
                }))
                .collect()
        };
        Self {
            before: count(&|p| kinds.get(&names[p]) == Some(&0)),
            copies: count(&|p| copies.get(p).copied().unwrap_or(false)),
        }
    }

    // True when two launches of a kernel at `p` and `q` (an optimizer kernel when `opt`)
    // have an optimizer kernel and a kernel of the model between them, the kernel itself
    // counted on its side: a step ended between them. Only optimizer kernels (a foreach
    // update over several parameter groups) is one update; only the model's, one step.
    // A copy is no kernel of the model: a prefetch on a side stream starts in the middle
    // of the update as readily as anywhere.
    fn between(&self, p: u32, q: u32, opt: bool) -> bool {
        let o = self.before[q as usize] - self.before[p as usize + 1];
        let c = self.copies[q as usize] - self.copies[p as usize + 1];
        let model = q - p - 1 - o - c;
        (o > 0 || opt) && (model > 0 || !opt)
    }
}

// A name's launches in bursts. A burst breaks at the largest jump in the sorted distances
// between launches (at least JUMP) that at least MIN_STEPS - 1 distances reach, and
// wherever an optimizer step falls between two launches: a training step ends with its
// optimizer, so no burst spans two steps, however far apart stalls (recompiles,
// checkpoints) push some steps in kernels. A jump fewer distances reach is no step's: it
// is the pause between a warm-up (or start-up copies) and the loop, and splitting there
// would merge the whole loop into one burst.
fn bursts(name: StrId, kind: u8, pos: &[u32], steps: &OptimizerSteps) -> Option<Candidate> {
    let mut d: Vec<u32> = pos.windows(2).map(|w| w[1] - w[0]).collect();
    d.sort_unstable();
    let reached = |j: usize| d.len() - (j + 1) >= MIN_STEPS - 1;
    let split = d
        .windows(2)
        .enumerate()
        .filter(|&(j, w)| w[1] >= JUMP * w[0].max(1) && reached(j))
        .max_by_key(|(_, w)| w[1] / w[0].max(1))
        .map(|(_, w)| w[1]);
    let (mut starts, mut ends) = (vec![pos[0]], vec![pos[0]]);
    for w in pos.windows(2) {
        if split.is_none_or(|s| w[1] - w[0] >= s) || steps.between(w[0], w[1], kind == 0) {
            starts.push(w[1]);
            ends.push(w[1]);
        } else if let Some(e) = ends.last_mut() {
            *e = w[1];
        }
    }
    if starts.len() < MIN_STEPS {
        return None;
    }
    let mut gaps: Vec<u32> = starts.windows(2).map(|w| w[1] - w[0]).collect();
    let k = (gaps.len() - 1) / 2;
    let lag = *gaps.select_nth_unstable(k).1 as usize;
    (lag >= 2).then_some(Candidate { name, kind, starts, ends, lag })
}

// The period: the smallest lag of an optimizer kernel that repeats or comes regularly; else, of the lags
// that repeat, the smallest whose period holds (almost) as many distinct kernels as the
// longest (a layer's cycle holds fewer than the step's; two steps hold no more than one).
fn period(names: &[StrId], cands: &[Candidate]) -> Option<usize> {
    let holds = |c: &&Candidate| {
        let (a, b) = c.region();
        b - a >= (MIN_STEPS - 1) * c.lag && repeats(&names[a..b.min(names.len())], c.lag)
    };
    // Optimizer kernels at regular distances mark the step even where the kernels between
    // them change from step to step (shapes that vary, an allocator emptied each step).
    if let Some(c) = cands.iter().filter(|c| c.kind == 0).find(|c| holds(c) || c.regularity(c.lag) >= ONCE_SHARE) {
        return Some(c.lag);
    }
    let distinct: Vec<(usize, usize)> = cands.iter().filter(holds).map(|c| (c.lag, distinct_in(names, c))).collect();
    let most = distinct.iter().map(|d| d.1).max()?;
    distinct.into_iter().filter(|d| d.1 * 20 >= most * 19).map(|d| d.0).min()
}

// Distinct names in one period of `c` from its burst in the middle of its region. A
// period starts at the candidate's own launch: a layer's cycle from its GEMM never holds
// the copy that comes once per block of layers, wherever the block's middle falls.
fn distinct_in(names: &[StrId], c: &Candidate) -> usize {
    let mid = c.starts[c.starts.len() / 2] as usize;
    let mut w: Vec<StrId> = names[mid.min(names.len() - c.lag)..][..c.lag].to_vec();
    w.sort_unstable();
    w.dedup();
    w.len()
}

// True when most sampled positions hold the name found `lag` later, and a period holds
// more than one name.
fn repeats(names: &[StrId], lag: usize) -> bool {
    if names.len() <= lag {
        return false;
    }
    let span = names.len() - lag;
    let stride = span.div_ceil(LAG_SAMPLES).max(1);
    let (mut same, mut all) = (0usize, 0usize);
    for i in (0..span).step_by(stride) {
        all += 1;
        same += usize::from(names[i] == names[i + lag]);
    }
    let distinct = names[..lag].iter().any(|&n| n != names[0]);
    distinct && same as f64 >= REPEAT_SHARE * all as f64
}

// The anchor: an operation once per period that another operation agrees with, in the
// loop that runs longest (`at` gives a position's start time).
fn anchor<'a>(cands: &'a [Candidate], period: usize, at: &dyn Fn(u32) -> Ns) -> Option<&'a Candidate> {
    let mut once: Vec<(&Candidate, f64)> = cands
        .iter()
        .map(|c| (c, c.regularity(period)))
        .filter(|c| c.1 >= ONCE_SHARE)
        // The second anchor may come several times a step (a micro-batch's kernel), as often in each.
        .filter(|(a, _)| cands.iter().any(|b| b.name != a.name && agree(&a.starts, &b.starts)))
        .collect();
    // Optimizer kernels, then NCCL all-reduce, then any other.
    let kind = once.iter().map(|a| a.0.kind).min()?;
    once.retain(|a| a.0.kind == kind);
    // Of these, a warm-up's eager cycle before a loop of graph replays repeats at the same
    // period: the loop is the one whose repeats span the most time, and a cycle over less
    // than half of that is another, shorter loop.
    let span = |c: &Candidate| {
        let (a, b) = c.region();
        at(b as u32).saturating_sub(at(a as u32))
    };
    let longest = once.iter().map(|a| span(a.0)).max()?;
    once.retain(|a| span(a.0).saturating_mul(2) >= longest);
    // The most regular; the earliest on ties.
    once.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.starts[0].cmp(&b.0.starts[0])));
    once.first().map(|a| a.0)
}

// 0 for an optimizer kernel, 1 for an NCCL all-reduce, 2 for any other.
fn kind(name: &str) -> u8 {
    let n = name.to_ascii_lowercase();
    if optimizer(name) {
        0
    } else if n.contains("nccl") && n.contains("allreduce") {
        1
    } else {
        2
    }
}

/// True for the kernels of an optimizer step (fused and foreach Adam, SGD, LAMB...).
pub(crate) fn optimizer(name: &str) -> bool {
    // Demangled names hold lambdas (`[lambda() ...]`), which are no LAMB optimizer.
    let n = name.to_ascii_lowercase().replace("lambda", "");
    ["multi_tensor_apply", "adam", "sgd", "lamb", "adagrad", "rmsprop", "optimizer"].iter().any(|w| n.contains(w))
}

// True when the periods between consecutive bursts of `a` hold the same number (one or
// more: micro-batches under one optimizer step) of bursts of `b` in AGREE_SHARE of them.
fn agree(a: &[u32], b: &[u32]) -> bool {
    let mut j = 0;
    let mut counts: HashMap<usize, usize> = HashMap::new();
    for w in a.windows(2) {
        while j < b.len() && b[j] < w[0] {
            j += 1;
        }
        *counts.entry(b[j..].partition_point(|&p| p < w[1])).or_default() += 1;
    }
    counts
        .into_iter()
        .filter(|&(k, _)| k > 0)
        .map(|(_, n)| n)
        .max()
        .is_some_and(|n| n as f64 >= AGREE_SHARE * (a.len() - 1) as f64)
}

// The launches of `name` on `lanes` that start (or, `at_end`, end) its bursts, over the
// whole run (runs longer than MAX_SEQUENCE): a burst breaks where consecutive launches
// are half a period of kernels apart or more.
fn every_launch(trace: &Trace, lanes: &[usize], name: StrId, period: usize, at_end: bool) -> Vec<EventRef> {
    let mut out = Vec::new();
    let mut last: Option<usize> = None;
    for (p, (li, i)) in in_start_order(trace, lanes).enumerate() {
        if operation_id(&trace.lanes[li], i) != name {
            continue;
        }
        let r = EventRef { lane: li as u32, idx: i as u32 };
        match last {
            Some(q) if 2 * (p - q) < period => {
                if at_end && let Some(x) = out.last_mut() {
                    *x = r;
                }
            }
            _ => out.push(r),
        }
        last = Some(p);
    }
    out
}

// Steps between the anchor's launch calls: from one call's end to the next's for an
// optimizer anchor (with the first step from the process's first launch), else from one
// call's start to the next's.
fn steps(trace: &Trace, index: &Index, pid: u32, anchors: &[EventRef], at_end: bool) -> Vec<Instance> {
    let mut hints = Hints::new(trace);
    let calls: Vec<(u32, Ns, Ns)> = anchors
        .iter()
        .map(|r| {
            let ev = &trace.lanes[r.lane as usize].ev;
            let i = r.idx as usize;
            index
                .api_call(trace, pid, ev.corr(i), &mut hints)
                .map_or((0, ev.start[i], ev.end(i)), |c| (c.tid, c.start, c.end))
        })
        .collect();
    let mut out = Vec::with_capacity(calls.len());
    if at_end {
        let first = first_launch(trace, index, pid, calls.first().map(|c| c.0));
        let mut from = first.unwrap_or(calls.first().map_or(0, |c| c.1));
        for &(tid, _, end) in &calls {
            if end > from {
                out.push(Instance { pid, tid, start: from, end, depth: 0 });
            }
            from = end;
        }
    } else {
        for w in calls.windows(2) {
            out.push(Instance { pid, tid: w[0].0, start: w[0].1, end: w[1].1, depth: 0 });
        }
    }
    out
}

// Start of the first kernel launch of `pid` on thread `tid`.
fn first_launch(trace: &Trace, index: &Index, pid: u32, tid: Option<u32>) -> Option<Ns> {
    let lane = index.api_lane(pid, tid?)?;
    let ev = &trace.lanes[lane].ev;
    (0..ev.len())
        .find(|&i| crate::model::ApiKind::from_flags(ev.flags(i)) == crate::model::ApiKind::Launch)
        .map(|i| ev.start[i])
}

#[cfg(test)]
mod tests {
    use super::*;

    // A trace whose strings are the letters, and `s` as their ids.
    fn ids(s: &str) -> (Trace, Vec<StrId>) {
        let mut t = Trace::default();
        let ids = s.chars().map(|c| t.strings.intern(&c.to_string())).collect();
        (t, ids)
    }

    #[test]
    fn the_period_is_the_step_not_a_layer_s_cycle_nor_two_steps() {
        // A step "a b a b a b c d e f": `a` three times a step is one burst a step; the
        // layer cycle "a b" (lag 2) holds 2 names of the step's 6.
        let (t, names) = ids(&format!("xyz{}", "ababab cdef".replace(' ', "").repeat(10)));
        assert_eq!(period(&names, &candidates(&t, &names, &[])), Some(10));
        // One name only: no structure, no period.
        let (t, names) = ids(&"a".repeat(30));
        assert_eq!(period(&names, &candidates(&t, &names, &[])), None);
    }

    #[test]
    fn two_optimizer_kernels_of_one_short_name_are_told_apart_by_their_template_arguments() {
        // A step: a layer's kernels, `clip_grad_norm_`'s norms (4 launches), 7 kernels, the
        // SGD's foreach updates (8 launches), 50 more kernels. As one short name the norms
        // and the updates are two bursts a step (distances 1, 8 and 58: the jump from 1 to 8
        // splits them); by demangled name each is one burst a step.
        let mut t = Trace::default();
        let norm = t.strings.intern("multi_tensor_apply_kernel<TensorListMetadata<1>, LpNormFunctor<float>>");
        let sgd = t.strings.intern("multi_tensor_apply_kernel<TensorListMetadata<2>, BinaryOpListFunctor<float>>");
        let other: Vec<StrId> = (0..57).map(|k| t.strings.intern(&format!("k{k}"))).collect();
        let mut step = other[..7].to_vec();
        step.extend([norm; 4]);
        step.extend(&other[7..14]);
        step.extend([sgd; 8]);
        step.extend(&other[14..]);
        let names: Vec<StrId> = step.iter().copied().cycle().take(step.len() * 12).collect();
        let cands = candidates(&t, &names, &[]);
        let p = period(&names, &cands).expect("a period");
        assert_eq!(p, step.len());
        let a = anchor(&cands, p, &Ns::from).expect("an anchor");
        assert_eq!(a.starts.len(), 12, "one burst a step");
        // The same kernels under one name read as two bursts a step.
        let merged: Vec<StrId> = names.iter().map(|&n| if n == sgd { norm } else { n }).collect();
        let c = candidates(&t, &merged, &[]).into_iter().find(|c| c.name == norm).expect("the merged name");
        assert_eq!(c.starts.len(), 24);
    }

    #[test]
    fn stalls_full_of_other_kernels_do_not_merge_steps_into_bursts() {
        // 40 steps "a b c d e f o" (`o` the optimizer), and after steps 10, 20 and 30 a
        // recompile's 400 kernels of other names (autotuning): in kernel counts the jump
        // from 7 to 400 would make each ten steps one burst of `o`; the optimizer between
        // two launches of a kernel ends a step, so every step is a burst.
        let mut t = Trace::default();
        let step: Vec<StrId> = ["a", "b", "c", "d", "e", "f", "multi_tensor_apply_kernel<SGD>"]
            .iter()
            .map(|n| t.strings.intern(n))
            .collect();
        let tune: Vec<StrId> = (0..400).map(|k| t.strings.intern(&format!("triton_{}", k % 37))).collect();
        let mut names = Vec::new();
        for s in 0..40 {
            if s > 0 && s % 10 == 0 {
                names.extend(&tune);
            }
            names.extend(&step);
        }
        let cands = candidates(&t, &names, &[]);
        let p = period(&names, &cands).expect("a period");
        assert_eq!(p, step.len());
        let a = anchor(&cands, p, &Ns::from).expect("an anchor");
        assert_eq!((a.name, a.starts.len()), (step[6], 40));
        // Optimizer kernels back to back (a foreach update over two parameter groups)
        // are one update: `o p o p` with nothing of the model between is one burst.
        let (o, q) =
            (t.strings.intern("multi_tensor_apply_kernel<1>"), t.strings.intern("multi_tensor_apply_kernel<2>"));
        let one = [o, q, o, q];
        let names: Vec<StrId> = (0..5).flat_map(|_| step[..6].iter().copied().chain(one)).collect();
        let c = candidates(&t, &names, &[]).into_iter().find(|c| c.name == o).expect("o");
        assert_eq!(c.starts.len(), 5);
        // A side stream's prefetch copy that starts between two launches of one update
        // is no kernel of the model: `o h o` stays one burst; a model kernel there splits it.
        let h = t.strings.intern("[memcpy HtoD]");
        let names: Vec<StrId> =
            (0..5).flat_map(|_| step[..6].iter().chain(&step[..4]).copied().chain([o, h, o])).collect();
        let copies: Vec<bool> = names.iter().map(|&n| n == h).collect();
        let c = candidates(&t, &names, &copies).into_iter().find(|c| c.name == o).expect("o");
        assert_eq!(c.starts.len(), 5);
        let c = candidates(&t, &names, &[]).into_iter().find(|c| c.name == o).expect("o");
        assert_eq!(c.starts.len(), 10, "read as a kernel of the model, the copy splits every update");
    }

    // Process 1 on GPU 0: for each of `steps` steps 1,000 ns apart, an H2D copy (when
    // `copy`; from pageable memory in the first half, pinned in the second) and then
    // `units` times (gemm, add, add), each operation launched by its own API call 5 ns long.
    fn blocks(steps: Ns, units: Ns, copy: bool) -> Trace {
        use crate::model::{ApiKind, Events, Lane};
        let mut t = Trace { strings: crate::model::Strings::new(), ..Trace::default() };
        let [gemm, add, pageable, pinned, launch, memcpy] =
            ["gemm", "add", "Memcpy HtoD (Pageable)", "Memcpy HtoD (Pinned)", "cudaLaunchKernel", "cudaMemcpyAsync"]
                .map(|n| t.strings.intern(n));
        let (mut kernels, mut copies, mut calls) = (Events::default(), Events::default(), Events::default());
        let mut corr = 0;
        let mut op = |ev: &mut Events, calls: &mut Events, at: Ns, name, call, kind: ApiKind| {
            corr += 1;
            calls.push(at, at + 5, call, Some(corr), None, Some(kind as u32));
            ev.push(at + 10, at + 20, name, Some(corr), Some(0), None);
        };
        for s in 0..steps {
            let base = s * 1000;
            if copy {
                let h2d = if 2 * s < steps { pageable } else { pinned };
                op(&mut copies, &mut calls, base, h2d, memcpy, ApiKind::MemcpyAsync);
            }
            for u in 0..units {
                for (k, name) in [gemm, add, add].into_iter().enumerate() {
                    op(&mut kernels, &mut calls, base + 100 + u * 60 + k as Ns * 20, name, launch, ApiKind::Launch);
                }
            }
        }
        t.lanes.push(Lane::new(LaneKind::Kernels { device: 0, stream: 7 }, 1, kernels));
        if copy {
            t.lanes.push(Lane::new(LaneKind::Memory { device: 0, stream: 7, class: MemClass::H2D }, 1, copies));
        }
        t.lanes.push(Lane::new(LaneKind::CudaApi { tid: 1 }, 1, calls));
        t
    }

    #[test]
    fn a_copy_once_a_block_of_repeated_units_makes_the_block_the_step() {
        // Four identical (gemm, add, add) units a step: by names alone the unit repeats
        // every 3 kernels. The step's H2D copy, once a block, is in the sequence: the
        // block is the period, the copy its anchor, a step from one copy's call to the
        // next, through the change of its source memory halfway.
        let t = blocks(10, 4, true);
        let got = infer_for(&t, &Index::build(&t), 1, 0).expect("steps");
        assert_eq!(t.strings.get(got.anchor), "Memcpy HtoD (Pageable)");
        let starts: Vec<Ns> = got.instances.iter().map(|i| i.start).collect();
        assert_eq!(starts, (0..9).map(|s| s * 1000).collect::<Vec<_>>());
        // Without the copy, nothing marks the block: the steps found are not these.
        let t = blocks(10, 4, false);
        assert_ne!(infer_for(&t, &Index::build(&t), 1, 0).map(|s| s.instances.len()), Some(9));
    }

    #[test]
    fn a_pause_between_start_up_copies_and_the_loop_does_not_merge_the_loop_into_one_burst() {
        // Sixteen start-up copies back to back, a warm-up of 24 `a b`, then a loop whose
        // step is one copy and one graph replay. The copy's distances are 1 (15 times), 2
        // (19 times) and 49 once: a jump one distance reaches is no step's, so every copy
        // of the loop is its own burst, once per period (was: two bursts, no candidate).
        let (t, names) = ids(&format!("{}{}{}", "c".repeat(16), "ab".repeat(24), "cg".repeat(20)));
        let c = candidates(&t, &names, &[]).into_iter().find(|c| c.name == names[0]).expect("the copy");
        assert_eq!((c.starts.len(), c.lag), (36, 2));
        // A jump that several distances reach still splits: three bursts of four `c`.
        let (t, names) = ids(&"ccccxxxxxxxxxxxxxxxxxxxx".repeat(3));
        let c = candidates(&t, &names, &[]).into_iter().find(|c| c.name == names[0]).expect("the burst");
        assert_eq!(c.starts, vec![0, 24, 48]);
    }

    #[test]
    fn of_two_cycles_at_one_period_the_anchor_is_in_the_one_that_runs_longest() {
        // A warm-up's eager cycle `a b` (24 times, over 48 ns) and then a loop of graph
        // replays with their copies `c g` (20 times, 1,000 ns apart): both repeat every 2
        // operations; the loop's anchor is the graph replay or its copy, not the warm-up's.
        let (t, names) = ids(&format!("{}{}", "ab".repeat(24), "cg".repeat(20)));
        let time = |p: u32| if p < 48 { Ns::from(p) } else { 48 + Ns::from(p - 48) * 500 };
        let cands = candidates(&t, &names, &[]);
        let p = period(&names, &cands).expect("a period");
        assert_eq!(p, 2);
        let a = anchor(&cands, p, &time).expect("an anchor");
        assert!(a.starts[0] >= 48, "anchor {} from position {}", t.strings.get(a.name), a.starts[0]);
        // By position alone the warm-up comes first.
        assert!(anchor(&cands, p, &Ns::from).is_some_and(|a| a.starts[0] < 48));
    }

    #[test]
    fn a_second_anchor_must_fall_as_often_between_every_two_anchors() {
        assert!(agree(&[0, 10, 20, 30], &[5, 15, 25]));
        // Twice in every period agrees too (micro-batches); once, then twice, does not.
        assert!(agree(&[0, 10, 20, 30], &[5, 6, 15, 16, 25, 26]));
        assert!(!agree(&[0, 10, 20, 30], &[5, 15, 16, 25, 26]));
        assert!(!agree(&[0, 10, 20, 30], &[5, 25]));
    }

    #[test]
    fn optimizer_kernels_are_known_by_name() {
        assert!(optimizer("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<...>"));
        assert!(optimizer("fused_adam_kernel"));
        assert!(!optimizer("ampere_sgemm_128x64_tn"));
        assert!(!optimizer(
            "void at::native::reduce_kernel<512, 1, ReduceOp<float, [lambda(float, float) (instance 1)]>>"
        ));
        assert!(optimizer("multi_tensor_apply_kernel<TensorListMetadata<4>, LambFunctor<float>>"));
        assert_eq!(kind("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), 1);
    }
}
