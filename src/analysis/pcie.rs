//! How each phase's host-device copies ran, and the PCIe link under them.
//!
//! A phase's copies are the H2D and D2H copies launched from inside its instances (the
//! CUDA call starts and ends inside an instance, on the instance's thread: the NVTX GPU
//! projection). With GPU metrics (`PCIe RX/TX Throughput [Throughput %]`) a sample counts
//! in a span when its whole sampling interval `[t, t + period)` lies inside the span, so a
//! mean over copies holds only time the copies ran. (A sample's timestamp starts its
//! interval: over 100 MB copies the first sample after a copy starts reads 92% RX, the
//! last before it ends 45% and the first after it 1%.)
//!
//! The verdict of a phase's H2D copies, first that applies:
//! 1. `none`: no H2D copies;
//! 2. `small-copies`: at least half the H2D copy time is in copies under 1 MiB (latency-bound);
//! 3. `pageable-staged`: at least half the bytes came from pageable memory (staged by the
//!    driver through a pinned bounce buffer);
//! 4. `link-bound`: PCIe RX during the copies at least 70%; without a measured RX, the
//!    copies ran at 70% or more of the link's rate (from the metrics, else the best pinned
//!    rate of the trace);
//! 5. `below-link`: pinned, large copies that left the link under 70%.

use std::collections::HashMap;

use super::index::{Hints, Index};
use super::{DeviceActivity, Instance, Union};
use crate::model::counters::{Counters, Series, names};
use crate::model::{LaneKind, MemClass, MemFlags, MemKind, Ns, Trace};

/// A copy under 1 MiB is latency-bound: its fixed cost is comparable to its transfer.
pub(crate) const SMALL_COPY_BYTES: u64 = 1 << 20;
/// RX share of the link's peak from which H2D copies are link-bound.
pub(crate) const LINK_BOUND_PCT: f64 = 70.0;

/// One host-device copy on the GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CopyOp {
    /// GPU.
    pub device: u32,
    /// GPU start.
    pub start: Ns,
    /// GPU end.
    pub end: Ns,
    /// Bytes.
    pub bytes: u64,
    /// Host side in pageable memory.
    pub pageable: bool,
}

impl CopyOp {
    // Copy `i` of memory lane `l` on `device`.
    fn of(l: &crate::model::Lane, i: usize, device: u32) -> Self {
        Self {
            device,
            start: l.ev.start[i],
            end: l.ev.end(i),
            bytes: l.ev.aux(i),
            pageable: MemFlags::unpack(l.ev.flags(i)).host_kind() == MemKind::Pageable,
        }
    }

    fn dur(&self) -> Ns {
        (self.end - self.start).max(0)
    }
}

/// The host-device copies a phase launched.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct PhaseCopies {
    /// Host-to-device copies, sorted by start.
    pub h2d: Vec<CopyOp>,
    /// Device-to-host copies, sorted by start.
    pub d2h: Vec<CopyOp>,
}

/// PCIe throughput of a phase (means of `[Throughput %]` samples).
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Pcie {
    /// RX (host to device) over the phase's instances.
    pub rx_pct_mean: Option<f64>,
    /// TX (device to host) over the phase's instances.
    pub tx_pct_mean: Option<f64>,
    /// RX while the phase's H2D copies ran (None when its samples cover under half the
    /// copies' time: copies shorter than the sampling period).
    pub rx_pct_during_h2d: Option<f64>,
    /// TX while the phase's D2H copies ran (same rule).
    pub tx_pct_during_d2h: Option<f64>,
}

/// How a phase's H2D copies ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum CopyVerdict {
    /// No H2D copies.
    #[default]
    None,
    /// Mostly copies under 1 MiB: latency-bound.
    SmallCopies,
    /// Mostly from pageable memory: staged through a bounce buffer.
    PageableStaged,
    /// The link ran at 70% of its peak or more: the link is the limit.
    LinkBound,
    /// Pinned, large copies that left the link under 70%.
    BelowLink,
}

impl CopyVerdict {
    /// The JSON and text label.
    pub fn label(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::SmallCopies => "small-copies",
            Self::PageableStaged => "pageable-staged",
            Self::LinkBound => "link-bound",
            Self::BelowLink => "below-link",
        }
    }
}

// (start, end, group) of an instance span.
type Span = (Ns, Ns, usize);

// (call start, call end, H2D?, copy) of a copy's launching call.
type Call = (Ns, Ns, bool, CopyOp);

/// The copies each group of `groups` launched (same order).
pub(crate) fn launched_copies(trace: &Trace, index: &Index, groups: &[(String, Vec<Instance>)]) -> Vec<PhaseCopies> {
    let spans = thread_spans(groups);
    // Per thread: every copy launched there.
    let mut calls: HashMap<(u32, u32), Vec<Call>> = HashMap::new();
    let mut hints = Hints::new(trace);
    for l in &trace.lanes {
        let LaneKind::Memory { class: class @ (MemClass::H2D | MemClass::D2H), device, .. } = l.kind else { continue };
        for i in 0..l.ev.len() {
            let Some(call) = index.api_call(trace, l.pid, l.ev.corr(i), &mut hints) else { continue };
            if !spans.contains_key(&(l.pid, call.tid)) {
                continue;
            }
            let op = CopyOp::of(l, i, device);
            calls.entry((l.pid, call.tid)).or_default().push((call.start, call.end, class == MemClass::H2D, op));
        }
    }
    let mut out = vec![PhaseCopies::default(); groups.len()];
    for (k, mut v) in calls {
        v.sort_unstable_by_key(|c| (c.0, c.1));
        sweep(&spans[&k], &v, |g, h2d, op| {
            let p = &mut out[g];
            if h2d { p.h2d.push(op) } else { p.d2h.push(op) }
        });
    }
    for p in &mut out {
        p.h2d.sort_unstable_by_key(|c| c.start);
        p.d2h.sort_unstable_by_key(|c| c.start);
    }
    out
}

/// Per thread: every group's instance spans (outermost, so disjoint within a group),
/// sorted by start.
fn thread_spans(groups: &[(String, Vec<Instance>)]) -> HashMap<(u32, u32), Vec<Span>> {
    let mut spans: HashMap<(u32, u32), Vec<Span>> = HashMap::new();
    for (g, (_, inst)) in groups.iter().enumerate() {
        let mut by_thread: HashMap<(u32, u32), Vec<(Ns, Ns)>> = HashMap::new();
        for i in inst {
            by_thread.entry((i.pid, i.tid)).or_default().push((i.start, i.end));
        }
        for (k, v) in by_thread {
            spans.entry(k).or_default().extend(Union::from_pairs(v).iter().map(|(a, b)| (a, b, g)));
        }
    }
    for v in spans.values_mut() {
        v.sort_unstable();
    }
    spans
}

/// Call `hit(group, h2d, copy)` for every span of `spans` that holds a call of `calls`
/// (both sorted by start). One sweep: the spans open at a call's start are those of
/// the enclosing ranges (a stack's depth), not every span before it, so a trace with
/// thousands of Python-function groups costs what its copies and spans cost.
fn sweep(spans: &[Span], calls: &[Call], mut hit: impl FnMut(usize, bool, CopyOp)) {
    let mut open: Vec<Span> = Vec::new();
    let mut next = 0;
    for &(start, end, h2d, op) in calls {
        while next < spans.len() && spans[next].0 <= start {
            open.push(spans[next]);
            next += 1;
        }
        // A span that ended before this call starts cannot hold any later call either.
        open.retain(|s| s.1 >= start);
        for s in open.iter().filter(|s| end <= s.1) {
            hit(s.2, h2d, op);
        }
    }
}

/// The GPU a phase's copies ran on (most H2D then D2H bytes), else `fallback`.
pub(crate) fn device_of(c: &PhaseCopies, fallback: Option<u32>) -> Option<u32> {
    let mut bytes: HashMap<u32, u64> = HashMap::new();
    for op in c.h2d.iter().chain(&c.d2h) {
        *bytes.entry(op.device).or_default() += op.bytes;
    }
    bytes.into_iter().max_by_key(|&(d, b)| (b, std::cmp::Reverse(d))).map(|(d, _)| d).or(fallback)
}

/// Disjoint `[start, end]` spans of `ops` on `device`.
pub(crate) fn spans_of(ops: &[CopyOp], device: u32) -> Vec<(Ns, Ns)> {
    Union::from_pairs(ops.iter().filter(|c| c.device == device).map(|c| (c.start, c.end))).iter().collect()
}

// Mean of `s` over samples whose sampling interval `[t, t + period)` lies inside one of `spans`.
fn mean_inside(s: &Series, spans: &[(Ns, Ns)]) -> Option<f64> {
    inside(s, spans).map(|x| x.0)
}

/// Sum and count of the samples of `s` whose sampling interval `[t, t + period)` lies
/// inside `[a, b]`: none when the span is shorter than the period. The one rule for a
/// mean over a span (phases, copies, the viewer's details).
pub(crate) fn sum_inside(s: &Series, (a, b): (Ns, Ns)) -> (i128, usize) {
    let period = s.period_ns();
    if b - a < period { (0, 0) } else { s.sum_in(a, b - period) }
}

// The mean and the time the counted samples cover.
fn inside(s: &Series, spans: &[(Ns, Ns)]) -> Option<(f64, Ns)> {
    let p = s.period_ns();
    let (sum, n) = spans.iter().fold((0i128, 0usize), |(sum, n), &span| {
        let (ds, dn) = sum_inside(s, span);
        (sum + ds, n + dn)
    });
    (n > 0).then(|| (sum as f64 / n as f64, n as Ns * p))
}

// The mean over copies, when its samples cover at least half the copy time: copies
// shorter than the sampling period are not measured by it.
fn mean_over_copies(s: &Series, spans: &[(Ns, Ns)]) -> Option<f64> {
    let total: Ns = spans.iter().map(|(a, b)| b - a).sum();
    inside(s, spans).filter(|&(_, covered)| 2 * covered >= total).map(|x| x.0)
}

/// PCIe means of a phase on `device`: over `windows` (its instances) and its copies; None
/// when the trace has no PCIe metrics for that GPU.
pub(crate) fn pcie(counters: &Counters, device: u32, windows: &[(Ns, Ns)], c: &PhaseCopies) -> Option<Pcie> {
    let rx = counters.get(device, names::PCIE_RX);
    let tx = counters.get(device, names::PCIE_TX);
    if rx.is_none() && tx.is_none() {
        return None;
    }
    Some(Pcie {
        rx_pct_mean: rx.and_then(|s| mean_inside(s, windows)),
        tx_pct_mean: tx.and_then(|s| mean_inside(s, windows)),
        rx_pct_during_h2d: rx.and_then(|s| mean_over_copies(s, &spans_of(&c.h2d, device))),
        tx_pct_during_d2h: tx.and_then(|s| mean_over_copies(s, &spans_of(&c.d2h, device))),
    })
}

/// The link's H2D rate at 100% RX on `device`, bytes per ns: from H2D copies with RX
/// samples inside them (bytes over RX-weighted copy time); None without such samples.
pub(crate) fn link_rate(counters: &Counters, device: u32, copies: &[CopyOp]) -> Option<f64> {
    let rx = counters.get(device, names::PCIE_RX)?;
    let (mut bytes, mut weighted) = (0f64, 0f64);
    for c in copies.iter().filter(|c| c.device == device && c.bytes >= SMALL_COPY_BYTES) {
        if let Some(m) = mean_inside(rx, &[(c.start, c.end)]) {
            bytes += c.bytes as f64;
            weighted += m / 100.0 * c.dur() as f64;
        }
    }
    (weighted > 0.0).then(|| bytes / weighted)
}

/// The best sustained pinned H2D rate of the trace (copies of 1 MiB or more), bytes per ns.
pub(crate) fn best_pinned_rate(copies: &[CopyOp]) -> Option<f64> {
    copies
        .iter()
        .filter(|c| !c.pageable && c.bytes >= SMALL_COPY_BYTES && c.dur() > 0)
        .map(|c| c.bytes as f64 / c.dur() as f64)
        .max_by(f64::total_cmp)
}

/// The verdict of a phase's H2D copies (see the module docs); `link` is the link's rate
/// in bytes per ns when known.
pub(crate) fn verdict(h2d: &[CopyOp], rx_during: Option<f64>, link: Option<f64>) -> CopyVerdict {
    let time: Ns = h2d.iter().map(CopyOp::dur).sum();
    if h2d.is_empty() {
        return CopyVerdict::None;
    }
    let small: Ns = h2d.iter().filter(|c| c.bytes < SMALL_COPY_BYTES).map(CopyOp::dur).sum();
    if 2 * small >= time {
        return CopyVerdict::SmallCopies;
    }
    let bytes: u64 = h2d.iter().map(|c| c.bytes).sum();
    let pageable: u64 = h2d.iter().filter(|c| c.pageable).map(|c| c.bytes).sum();
    if 2 * pageable >= bytes {
        return CopyVerdict::PageableStaged;
    }
    let share = match (rx_during, link) {
        (Some(rx), _) => rx,
        (None, Some(l)) if time > 0 => 100.0 * bytes as f64 / time as f64 / l,
        _ => return CopyVerdict::BelowLink,
    };
    if share >= LINK_BOUND_PCT { CopyVerdict::LinkBound } else { CopyVerdict::BelowLink }
}

/// Copy time of `ops` with no kernel running on their GPU (`devices` by id).
pub(crate) fn exposed_ns(ops: &[CopyOp], devices: &[DeviceActivity]) -> Ns {
    let mut total = 0;
    for d in devices {
        let mine = Union::from_pairs(ops.iter().filter(|c| c.device == d.device).map(|c| (c.start, c.end)));
        total += mine.total() - mine.overlap_with(&d.kernels);
    }
    total
}

/// Every H2D copy of the trace, by GPU, sorted by start.
pub(crate) fn all_h2d(trace: &Trace) -> Vec<CopyOp> {
    let mut out = Vec::new();
    for l in &trace.lanes {
        let LaneKind::Memory { class: MemClass::H2D, device, .. } = l.kind else { continue };
        out.extend((0..l.ev.len()).map(|i| CopyOp::of(l, i, device)));
    }
    out.sort_unstable_by_key(|c| (c.device, c.start));
    out
}

/// The link's H2D rate on `device` (bytes per ns): from the PCIe metrics, else the best
/// pinned copy rate of the trace.
pub(crate) fn link_or_pinned(counters: &Counters, device: u32, h2d: &[CopyOp]) -> Option<f64> {
    let mine: Vec<CopyOp> = h2d.iter().filter(|c| c.device == device).copied().collect();
    link_rate(counters, device, &mine).or_else(|| best_pinned_rate(&mine))
}

/// Per phase name: the copies it launched and its instances' spans.
#[derive(Debug, Default)]
pub(crate) struct ByPhase {
    /// Copies launched, by phase name.
    pub copies: HashMap<String, PhaseCopies>,
    /// Disjoint instance spans, by phase name.
    pub windows: HashMap<String, Vec<(Ns, Ns)>>,
}

impl ByPhase {
    /// The copies and spans of every group of `groups`.
    pub(crate) fn of(trace: &Trace, index: &Index, groups: &[(String, Vec<Instance>)]) -> Self {
        let copies = groups.iter().map(|(n, _)| n.clone()).zip(launched_copies(trace, index, groups)).collect();
        let windows = groups
            .iter()
            .map(|(n, v)| (n.clone(), Union::from_pairs(v.iter().map(|i| (i.start, i.end))).iter().collect()))
            .collect();
        Self { copies, windows }
    }
}

/// Fill each phase's `pcie`, `copy_verdict` and `h2d_exposed_ns` from the copies it
/// launched; `h2d`: every H2D copy of the trace ([`all_h2d`]).
pub(crate) fn annotate(
    trace: &Trace,
    devices: &[DeviceActivity],
    phases: &mut [super::Phase],
    by: &ByPhase,
    h2d: &[CopyOp],
) {
    let (copies, windows) = (&by.copies, &by.windows);
    let fallback = trace.counters.devices().first().copied();
    let mut links: HashMap<u32, Option<f64>> = HashMap::new();
    for p in phases {
        let Some(c) = copies.get(&p.name) else { continue };
        let device = device_of(c, fallback);
        p.pcie = device.and_then(|d| pcie(&trace.counters, d, windows.get(&p.name).map_or(&[], Vec::as_slice), c));
        let link = device.and_then(|d| *links.entry(d).or_insert_with(|| link_or_pinned(&trace.counters, d, h2d)));
        p.copy_verdict = verdict(&c.h2d, p.pcie.and_then(|x| x.rx_pct_during_h2d), link);
        p.h2d_exposed_ns = exposed_ns(&c.h2d, devices);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // Spans per group disjoint (as `thread_spans` makes them), calls possibly nested.
    fn arb_case() -> impl Strategy<Value = (Vec<Span>, Vec<(Ns, Ns)>)> {
        let group = prop::collection::vec((0i64..40, 1i64..30), 0..12);
        let groups = prop::collection::vec(group, 1..5);
        let calls = prop::collection::vec((0i64..600, 0i64..25), 0..25);
        (groups, calls).prop_map(|(groups, calls)| {
            let mut spans: Vec<Span> = Vec::new();
            for (g, steps) in groups.iter().enumerate() {
                let mut t = 0;
                for &(gap, len) in steps {
                    spans.push((t + gap, t + gap + len, g));
                    t += gap + len + 1;
                }
            }
            spans.sort_unstable();
            let mut calls: Vec<(Ns, Ns)> = calls.into_iter().map(|(s, d)| (s, s + d)).collect();
            calls.sort_unstable();
            (spans, calls)
        })
    }

    proptest! {
        #[test]
        fn the_sweep_finds_every_span_that_holds_a_call((spans, calls) in arb_case()) {
            let ops: Vec<Call> =
                calls.iter().map(|&(a, b)| (a, b, true, op(a, b - a, 1, false))).collect();
            let mut got: Vec<(usize, Ns, Ns)> = Vec::new();
            sweep(&spans, &ops, |g, _, c| got.push((g, c.start, c.end)));
            let mut want: Vec<(usize, Ns, Ns)> = Vec::new();
            for &(a, b) in &calls {
                for s in spans.iter().filter(|s| s.0 <= a && b <= s.1) {
                    want.push((s.2, a, b));
                }
            }
            got.sort_unstable();
            want.sort_unstable();
            prop_assert_eq!(got, want);
        }
    }

    fn op(start: Ns, dur: Ns, bytes: u64, pageable: bool) -> CopyOp {
        CopyOp { device: 0, start, end: start + dur, bytes, pageable }
    }

    #[test]
    fn verdicts_follow_the_rules_in_order() {
        assert_eq!(verdict(&[], None, None), CopyVerdict::None);
        let small = [op(0, 10, 1000, false), op(20, 10, 1000, false)];
        assert_eq!(verdict(&small, Some(99.0), None), CopyVerdict::SmallCopies);
        let page = [op(0, 100, 8 << 20, true), op(200, 10, 2 << 20, false)];
        assert_eq!(verdict(&page, Some(95.0), None), CopyVerdict::PageableStaged);
        let pinned = [op(0, 100, 8 << 20, false)];
        assert_eq!(verdict(&pinned, Some(85.0), None), CopyVerdict::LinkBound);
        assert_eq!(verdict(&pinned, Some(40.0), None), CopyVerdict::BelowLink);
        // Without RX: 8 MiB in 100 ns against a link of twice that rate is 50%.
        let rate = (8u64 << 20) as f64 / 100.0;
        assert_eq!(verdict(&pinned, None, Some(2.0 * rate)), CopyVerdict::BelowLink);
        assert_eq!(verdict(&pinned, None, Some(rate)), CopyVerdict::LinkBound);
    }

    #[test]
    fn samples_count_only_when_their_interval_is_inside_a_copy() {
        let times: Vec<Ns> = (0..10).map(|i| i * 100).collect();
        let values = [0, 10, 20, 30, 40, 50, 60, 70, 80, 90];
        let s = Series::new(0, names::PCIE_RX.into(), times.into(), &values);
        // [150, 450]: the samples at 200 and 300 cover [200, 300) and [300, 400).
        assert_eq!(mean_inside(&s, &[(150, 450)]), Some(25.0));
        assert_eq!(mean_inside(&s, &[(150, 240)]), None);
        // One span: the sum and count the viewer's details show; a span as long as the
        // period holds the sample that starts it.
        assert_eq!(sum_inside(&s, (150, 450)), (50, 2));
        assert_eq!(sum_inside(&s, (300, 400)), (30, 1));
        assert_eq!(sum_inside(&s, (310, 399)), (0, 0));
    }
}
