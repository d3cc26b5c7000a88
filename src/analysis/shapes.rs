//! The "new shapes" mechanism (docs/causes.md, hint `new-shapes`): at an input shape not
//! seen before, cuBLAS(Lt) or cuDNN chooses a kernel on the launching thread (heuristics,
//! `cudnn.benchmark` autotuning) and CUDA then loads the chosen kernel lazily, while the
//! GPU waits. A lazy load alone (the first optimizer step's kernels) is not it: there the
//! load itself is the gap, and no library chose anything.
//!
//! A steady `host-busy` gap (start-up's first shapes are start-up) is a candidate when its deciding thread made a module-loading call in
//! it ([`is_module_load`]) and spent at least half of it outside CUDA calls (the host's
//! work before the load, not the load). It is named when its thread's CPU samples in the
//! host work before each of its kernel loads (from its previous CUDA call to the load),
//! pooled over the trace (a sampler at 1 kHz leaves one or none in a 3 ms gap), number at
//! least [`MIN_SAMPLES`] and sit mostly in a GEMM or convolution library's host code
//! ([`is_shape_library`]). The pool does not depend on which gaps are read, so a gap is
//! named alike at any threshold. Without samples nothing says a library chose: no hint.

use std::collections::HashMap;

use super::gaps::is_module_load;
use super::host::{self, HostIndex, MIN_SAMPLES};
use super::{Cause, Gap, Hint, Union, Window};
use crate::model::{LaneKind, Ns, StrId, Trace};
use crate::text::fmt_ns;

// How far back from the gap start to look for calls that began before it (calls of one
// thread nest no deeper than runtime -> driver).
const LOOKBACK: usize = 64;

/// Name the gaps of `gaps` whose host work chose and loaded kernels for new shapes. Each
/// gap is decided alone (the viewer names the gaps of a new threshold as a full analysis
/// does): its own calls, and its thread's samples before all of its kernel loads.
pub(crate) fn name(trace: &Trace, ix: &HostIndex, gaps: &mut [Gap]) {
    if ix.is_empty() {
        return;
    }
    let api = api_lanes(trace);
    let mut pools: HashMap<(u32, u32), Pool> = HashMap::new();
    for g in
        gaps.iter_mut().filter(|g| g.window == Window::Steady && g.cause == Cause::HostBusy && g.hint == Hint::None)
    {
        let Some(tid) = g.tid else { continue };
        let Some(lanes) = api.get(&(g.pid, tid)) else { continue };
        let Some(p) = prep(trace, lanes, g).filter(|p| 2 * p.outside_ns >= g.dur()) else { continue };
        let pool = pools.entry((g.pid, tid)).or_insert_with(|| pool(trace, ix, (g.pid, tid), lanes));
        if pool.total >= MIN_SAMPLES && 2 * pool.library >= pool.total {
            g.hint = Hint::NewShapes;
            g.evidence = format!("{}; {}", g.evidence, evidence(trace, &p, pool));
        }
    }
}

// The thread's samples in the host work before each of its kernel loads: from the end of its
// last CUDA call before the load to the load's start (a library choosing the kernel, or the
// Python before a first launch).
fn pool(trace: &Trace, ix: &HostIndex, who: (u32, u32), lanes: &[usize]) -> Pool {
    let mut calls: Vec<(Ns, Ns, bool)> = Vec::new();
    for &li in lanes {
        let ev = &trace.lanes[li].ev;
        calls.extend((0..ev.len()).map(|k| (ev.start[k], ev.end(k), is_module_load(trace.strings.get(ev.name[k])))));
    }
    calls.sort_unstable();
    let mut p = Pool::default();
    let mut last_end = Ns::MIN;
    for &(s, e, load) in &calls {
        if load && last_end > Ns::MIN && last_end < s {
            let (modules, total) = host::module_samples(trace, ix, who, (last_end, s));
            p.total += total;
            for (m, k) in modules.into_iter().filter(|(m, _)| is_shape_library(m)) {
                p.library += k;
                *p.modules.entry(m).or_default() += k;
            }
        }
        last_end = last_end.max(e);
    }
    p
}

/// True for the host code of GEMM and convolution libraries that choose a kernel per
/// shape: cuBLAS and cuBLASLt (`libcublas*`), cuDNN (`libcudnn*`).
pub(crate) fn is_shape_library(module: &str) -> bool {
    let m = host::module_file(module).to_ascii_lowercase();
    m.starts_with("libcublas") || m.starts_with("libcudnn")
}

// A thread's samples before its kernel loads.
#[derive(Default)]
struct Pool {
    total: usize,
    library: usize,
    modules: HashMap<String, usize>,
}

// What the deciding thread did in a gap: its time outside CUDA calls, and the
// module-loading calls it made (time in the gap, whole call).
#[derive(Debug, Default)]
struct Prep {
    outside_ns: Ns,
    loads: Vec<(StrId, Ns, Ns)>,
}

// The CUDA API lanes of each thread.
fn api_lanes(trace: &Trace) -> HashMap<(u32, u32), Vec<usize>> {
    let mut out: HashMap<(u32, u32), Vec<usize>> = HashMap::new();
    for (li, l) in trace.lanes.iter().enumerate() {
        if let LaneKind::CudaApi { tid } = l.kind {
            out.entry((l.pid, tid)).or_default().push(li);
        }
    }
    out
}

// The deciding thread's calls in `g` on `lanes`; None when it loaded no module in it.
fn prep(trace: &Trace, lanes: &[usize], g: &Gap) -> Option<Prep> {
    let mut inside: Vec<(Ns, Ns)> = Vec::new();
    let mut loads = Vec::new();
    for &li in lanes {
        let ev = &trace.lanes[li].ev;
        let first = ev.start.partition_point(|&s| s < g.start).saturating_sub(LOOKBACK);
        for k in first..ev.len() {
            let (s, e) = (ev.start[k], ev.end(k));
            if s >= g.end {
                break;
            }
            let (a, b) = (s.max(g.start), e.min(g.end));
            if b <= a {
                continue;
            }
            inside.push((a, b));
            if is_module_load(trace.strings.get(ev.name[k])) {
                loads.push((ev.name[k], b - a, e - s));
            }
        }
    }
    if loads.is_empty() {
        return None;
    }
    Some(Prep { outside_ns: g.dur() - Union::from_pairs(inside).total(), loads })
}

// `a kernel chosen for a shape not seen before, then loaded lazily (cuLibraryLoadData
// 36.2 µs); 58 of this thread's 81 samples in the host work before its kernel loads...`.
fn evidence(trace: &Trace, p: &Prep, pool: &Pool) -> String {
    let mut modules: Vec<(&String, &usize)> = pool.modules.iter().collect();
    modules.sort_by(|x, y| y.1.cmp(x.1).then_with(|| x.0.cmp(y.0)));
    let names: Vec<&str> = modules.iter().map(|(m, _)| m.as_str()).collect();
    format!(
        "a kernel chosen for a shape not seen before, then loaded lazily ({}); {} of this thread's {} samples in \
         the host work before its kernel loads in {} (the library choosing a kernel)",
        loads_text(trace, &p.loads),
        pool.library,
        pool.total,
        names.join(", ")
    )
}

// The loading calls by name, with their time in the gap: `cuLibraryLoadData 36.2 µs`, the
// whole call in brackets where it outlasts the gap; `cuLibraryLoadData ×12 30.1 ms`.
fn loads_text(trace: &Trace, loads: &[(StrId, Ns, Ns)]) -> String {
    let mut by: Vec<(StrId, usize, Ns, Ns)> = Vec::new();
    for &(name, part, whole) in loads {
        match by.iter_mut().find(|b| b.0 == name) {
            Some(b) => (b.1, b.2, b.3) = (b.1 + 1, b.2 + part, b.3 + whole),
            None => by.push((name, 1, part, whole)),
        }
    }
    let one = |&(name, n, part, whole): &(StrId, usize, Ns, Ns)| {
        let name = trace.strings.get(name);
        match n {
            1 if whole > part => format!("{name} {} ({} call)", fmt_ns(part), fmt_ns(whole)),
            1 => format!("{name} {}", fmt_ns(part)),
            _ => format!("{name} ×{n} {}", fmt_ns(part)),
        }
    };
    by.iter().map(one).collect::<Vec<_>>().join(", ")
}
