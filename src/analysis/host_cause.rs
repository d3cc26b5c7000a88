//! Rule 6 of docs/causes.md: what the CPU was doing, from context switches, CPU samples
//! and the worker processes of the trace. Runs after rules 1-5, on traces with host data.
//!
//! The *process tree* of a gap is its process and the processes that started after it
//! with a higher pid (DataLoader workers are forked children; no export records the
//! parent pid). Its CPUs *saturated* in a window when the CPUs that gave it at least 5%
//! of the window were at least [`SATURATED`] busy and more of its threads ran than there
//! were such CPUs.
//!
//! - `host-busy` or `unknown`: the deciding thread was off CPU outside any OS call for
//!   at least half of the gap while the CPUs saturated: `cpu-contention`. Off CPU in
//!   storage calls or outside any call for at least half of it while the CPUs were free:
//!   `io-wait` (only where the process has an OS runtime trace: without one, off-CPU time
//!   could be any wait). An `unknown` gap whose thread was on CPU for half of it:
//!   `host-busy`; runnable on saturated CPUs for half of it: `cpu-contention`.
//! - `host-wait`: the deciding thread off CPU in calls that only touch files (`pread`, `open`,
//!   `stat`...; not `read`, which may be a pipe) for half of the gap: `io-wait`. Else it
//!   waited for others: follow the wait to the *producers*, the
//!   threads of the tree's other processes (else of the same process) that ran or
//!   blocked in the gap. CPUs saturated: `cpu-contention`. A producer on CPU for half of
//!   the gap: `host-busy`, the input pipeline's compute, with its hot code. Producers in
//!   other processes are their main threads (where DataLoader workers work); nsys's own
//!   threads are never producers. A producer
//!   off CPU in storage calls or outside any call for half of it while the CPUs were
//!   free: `io-wait`; but its untraced time while its own process's other threads ran is a
//!   wait for them (a worker's queue feeder pickling its batch), and where they ran
//!   through half of the gap, their work decides. Otherwise `host-wait` stays: nothing in
//!   the trace says more. A GIL wait is known from a backtrace or sample in the gap, or
//!   from the thread's own backtraced calls of the same wait elsewhere ([`host::GilWait`]).
//! - Every gap of the tree gets a `host` object: the deciding thread's time on and off
//!   CPU, the CPUs' load, the producers, and the hot code of the thread whose work
//!   explains the gap (the deciding thread, or the producer followed).
//!
//! Cost per gap: binary searches plus the switches and samples inside the gap.

use std::collections::HashMap;

use super::gaps::is_file_call;
use super::host::{self, HostIndex, HostWindow, TopSymbol, is_profiler_thread};
use super::{Cause, Gap, Hint};
use crate::model::{ApiKind, LaneKind, Ns, Trace};
use crate::text::fmt_ns;

/// Busy share above which the CPUs a process tree uses count as saturated.
pub(crate) const SATURATED: f64 = 0.9;

pub(crate) use super::host::MIN_SAMPLES;

/// Hot functions kept per gap.
pub(crate) const TOP_FUNCTIONS: usize = 5;

/// Sample counts per cause: (symbol, module) -> samples, over the gaps' explaining threads.
pub(crate) type HotByCause = HashMap<Cause, HashMap<(String, String), usize>>;

/// A process tree as rule 6 reads it: its pids ([`process_tree`]), the CPUs they may
/// run on ([`HostIndex::usable_cpus`]), the tree's compiler threads and the waits the
/// process's threads make for the GIL ([`host::gil_waits`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Tree {
    pids: Vec<u32>,
    usable: Vec<u32>,
    compilers: Vec<(u32, u32)>,
    gil_waits: Vec<host::GilWait>,
}

/// The [`Tree`] of each process, found once: every gap of a process (and every clipped
/// part of one) has the same tree.
#[derive(Debug, Default)]
pub(crate) struct Trees(HashMap<u32, std::rc::Rc<Tree>>);

impl Trees {
    /// The tree of process `pid` of `trace`.
    pub(crate) fn of(&mut self, trace: &Trace, ix: &HostIndex, pid: u32) -> std::rc::Rc<Tree> {
        let t = self.0.entry(pid).or_insert_with(|| {
            let pids = process_tree(trace, pid);
            let usable = ix.usable_cpus(&pids);
            let compilers = compiler_threads(trace, &pids);
            let gil_waits = host::gil_waits(trace, ix, pid);
            std::rc::Rc::new(Tree { pids, usable, compilers, gil_waits })
        });
        std::rc::Rc::clone(t)
    }
}

/// Apply rule 6 to `gaps` in place (the hot functions per cause are pooled afterwards,
/// over steady gaps only: [`steady_hot`]).
pub(crate) fn refine(trace: &Trace, ix: &HostIndex, gaps: &mut [Gap]) {
    if ix.is_empty() {
        return;
    }
    // Per process: its tree, usable CPUs and compiler threads (found once).
    let mut trees = Trees::default();
    for g in gaps.iter_mut() {
        let Some(tid) = g.tid else { continue };
        let tree = trees.of(trace, ix, g.pid);
        let d = decide(trace, ix, g, tid, &tree);
        let mut w = host::window(trace, ix, (g.pid, tid), &tree.pids, (g.start, g.end), TOP_FUNCTIONS);
        w.producers.retain(|p| !is_profiler_thread(ix.thread_name(trace, p.pid, p.tid)));
        if d.explainer != (g.pid, tid) {
            let s = host::top_symbols(trace, ix, d.explainer.0, d.explainer.1, (g.start, g.end), TOP_FUNCTIONS);
            (w.samples, w.top) = (s.samples, s.top);
        }
        // A checkpoint written by the deciding thread stays named whatever rule 6 finds
        // its wait to be (io-wait in an fsync, host-busy serializing).
        let checkpoint = g.hint == Hint::Checkpoint && d.hint == Hint::None && d.explainer == (g.pid, tid);
        (g.cause, g.hint) = (d.cause, if checkpoint { Hint::Checkpoint } else { d.hint });
        if g.hint == Hint::None
            && may_compile(g.cause)
            && compiling_in(trace, ix, (&tree.compilers, &tree.pids), (g.pid, tid), g)
        {
            g.hint = Hint::Compile;
        }
        let host_side = may_compile(g.cause) || g.cause == Cause::CpuContention;
        if g.hint == Hint::None && host_side && omp_spinning(trace, ix, d.explainer, g) {
            g.hint = Hint::OpenMp;
        }
        if let Some(n) = d.note {
            g.evidence = n;
        }
        if w.samples >= MIN_SAMPLES
            && matches!(g.cause, Cause::HostBusy | Cause::WorkerBusy | Cause::SyncDrain | Cause::CpuContention)
        {
            g.evidence = format!("{}; hot: {}", g.evidence, hot_text(&w.top, w.samples));
        }
        g.host = Some(Box::new(w));
    }
}

/// Sample counts per cause pooled over the steady gaps only (start-up's imports and
/// compiles say nothing about the loop).
pub(crate) fn steady_hot(gaps: &[Gap]) -> HotByCause {
    let mut hot = HotByCause::new();
    for g in gaps.iter().filter(|g| g.window == super::Window::Steady) {
        let Some(h) = &g.host else { continue };
        let counts = hot.entry(g.cause).or_default();
        for t in &h.top {
            *counts.entry((t.symbol.clone(), t.module.clone())).or_default() += t.samples;
        }
    }
    hot
}

/// Rule 6 for the part `[start, end)` of `gap`, whose rules 1-5 gave `cause` (the
/// starvation finding clips gaps to steps); `trees` keeps the process trees found.
pub(crate) fn part_cause(
    trace: &Trace,
    ix: &HostIndex,
    trees: &mut Trees,
    gap: &Gap,
    (start, end): (Ns, Ns),
    cause: Cause,
) -> Cause {
    let Some(tid) = gap.tid.filter(|_| !ix.is_empty()) else { return cause };
    let part = Gap { start, end, cause, evidence: String::new(), host: None, ..gap.clone() };
    decide(trace, ix, &part, tid, &trees.of(trace, ix, gap.pid)).cause
}

/// The top `n` functions of each cause, with their share of that cause's samples.
pub(crate) fn top_by_cause(hot: &HotByCause, n: usize) -> HashMap<Cause, Vec<TopSymbol>> {
    hot.iter()
        .map(|(&c, counts)| {
            let total: usize = counts.values().sum();
            let mut v: Vec<TopSymbol> = counts
                .iter()
                .map(|((symbol, module), &samples)| TopSymbol {
                    symbol: symbol.clone(),
                    module: module.clone(),
                    samples,
                    share: samples as f64 / total.max(1) as f64,
                })
                .collect();
            v.sort_by(|a, b| b.samples.cmp(&a.samples).then_with(|| a.symbol.cmp(&b.symbol)));
            v.truncate(n);
            (c, v)
        })
        .collect()
}

// `48% _PyEval_EvalFrameDefault (python3.12), 20% ... of 312 samples`.
fn hot_text(top: &[TopSymbol], samples: usize) -> String {
    let parts: Vec<String> =
        top.iter().take(3).map(|t| format!("{:.0}% {}", t.share * 100.0, crate::text::name(&t.label()))).collect();
    format!("{} of {samples} samples", parts.join(", "))
}

/// The gap's process and the processes with host data that started after it with a
/// higher pid (its forked workers), sorted.
pub(crate) fn process_tree(trace: &Trace, pid: u32) -> Vec<u32> {
    let first = |p: u32| {
        trace.lanes.iter().filter(|l| l.pid == p && !l.ev.is_empty()).filter_map(|l| l.ev.start.first()).min().copied()
    };
    let Some(main_start) = first(pid) else { return vec![pid] };
    let mut pids: Vec<u32> =
        trace.lanes.iter().filter(|l| l.pid > pid && matches!(l.kind, LaneKind::OnCpu { .. })).map(|l| l.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    pids.retain(|&p| first(p).is_some_and(|s| s >= main_start));
    pids.insert(0, pid);
    pids
}

// What rule 6 decided for one gap: the cause, a new evidence line if any, the thread
// whose work explains the gap, and what the evidence adds.
struct Decision {
    cause: Cause,
    note: Option<String>,
    explainer: (u32, u32),
    hint: Hint,
}

impl Decision {
    fn keep(g: &Gap, me: (u32, u32)) -> Self {
        Self { cause: g.cause, note: None, explainer: me, hint: g.hint }
    }

    fn new(cause: Cause, note: String, explainer: (u32, u32)) -> Self {
        Self { cause, note: Some(note), explainer, hint: Hint::None }
    }

    fn hinted(mut self, hint: Hint) -> Self {
        self.hint = hint;
        self
    }
}

// The CPUs of the tree and how busy they were in the gap, for evidence lines; `full`:
// the instants of the gap at which every usable CPU ran a thread (computed once a gap).
struct Cpus {
    usable: Vec<u32>,
    load: host::CpuLoad,
    full: Vec<(Ns, Ns)>,
}

impl Cpus {
    fn text(&self) -> String {
        format!(
            "{} usable CPUs {:.0}% busy, {} threads",
            self.usable.len(),
            self.load.busy_share * 100.0,
            self.load.threads
        )
    }
}

#[allow(
    clippy::wildcard_enum_match_arm,
    reason = "rule 6 revisits only host-busy, unknown and host-wait gaps; every other cause stays as rules 1-5 decided"
)]
fn decide(trace: &Trace, ix: &HostIndex, g: &Gap, tid: u32, tree: &Tree) -> Decision {
    let me = (g.pid, tid);
    let dur = g.end - g.start;
    let full = ix.all_busy(&tree.usable, g.start, g.end);
    let load = host::cpu_load_on(ix, tree.usable.clone(), g.start, g.end);
    let cpus = Cpus { load, usable: tree.usable.clone(), full };
    let gil_waits: Vec<host::GilWait> = tree.gil_waits.iter().filter(|w| w.tid == tid).copied().collect();
    let tree = &tree.pids[..];
    let who = trace.thread_label(g.pid, tid);
    let Some(t) = host::thread_time(trace, ix, g.pid, tid, g.start, g.end) else { return Decision::keep(g, me) };
    let contended = ix.contended_ns(trace, me, &cpus.full, g.start, g.end).unwrap_or(0);
    match g.cause {
        Cause::HostBusy | Cause::Unknown => {
            if 2 * contended >= dur {
                let note = format!(
                    "{who} runnable while every usable CPU ran other threads for {} of {}: {}",
                    fmt_ns(contended),
                    fmt_ns(dur),
                    cpus.text()
                );
                return Decision::new(Cause::CpuContention, note, me);
            }
            // Off CPU outside any call while a CPU was free is a wait, not contention.
            let waited = t.io_ns + t.runnable_ns - contended;
            // An untraced wait (Rust and C++ pools wait on raw futexes, which no OS
            // runtime trace shows) while the process's own threads computed is a wait for
            // them: the launching thread's work, spread over a pool.
            if g.cause == Cause::HostBusy && 2 * waited >= dur {
                let pool = ran(trace, ix, g, me, &[g.pid], false);
                if let Some(p) = pool.first().filter(|p| 2.0 * p.on_cpu_share >= 1.0) {
                    let note = format!(
                        "{who} off CPU for {} of {} while its own thread {} computed {:.0}% of the gap",
                        fmt_ns(waited),
                        fmt_ns(dur),
                        trace.thread_label(p.pid, p.tid),
                        p.on_cpu_share * 100.0
                    );
                    return Decision::new(work_of(trace, ix, (p.pid, p.tid), g), note, (p.pid, p.tid));
                }
            }
            // Without an OS runtime trace, off-CPU time could be any wait: say nothing.
            if g.cause == Cause::HostBusy && 2 * waited >= dur {
                let note = format!(
                    "{who} off CPU for {} of {} (storage or page faults) while {}",
                    fmt_ns(waited),
                    fmt_ns(dur),
                    cpus.text()
                );
                return Decision::new(Cause::IoWait, note, me);
            }
            if g.cause == Cause::Unknown && 2 * t.on_cpu_ns >= dur {
                let note = format!("{who} on CPU for {} of {} outside CUDA calls", fmt_ns(t.on_cpu_ns), fmt_ns(dur));
                return Decision::new(Cause::HostBusy, note, me);
            }
            if g.cause == Cause::Unknown && 2 * (dur - t.on_cpu_ns) >= dur {
                // Off CPU with no traced call: follow to the threads that computed.
                return follow(trace, ix, g, me, tree, &cpus, Order::SameProcessFirst);
            }
            Decision::keep(g, me)
        }
        Cause::HostWait => {
            if 2 * t.file_ns >= dur {
                let seen = host::os_calls_seen(trace, ix, me, (g.start, g.end), is_file_call);
                let note = format!(
                    "{who} in storage calls ({}) for {} of {}",
                    host::calls_text(&seen, 3),
                    fmt_ns(t.file_ns),
                    fmt_ns(dur)
                );
                return Decision::new(Cause::IoWait, note, me);
            }
            if 2 * t.sleep_ns >= dur {
                let note = format!("{who} asleep for {} of {}", fmt_ns(t.sleep_ns), fmt_ns(dur));
                return Decision::new(Cause::HostWait, format!("{}; {note}", g.evidence), me).hinted(Hint::Sleep);
            }
            // OS-call backtraces exist only for calls of 80 µs and more: most GIL waits are
            // short futex and condition waits with none. A thread that took the GIL in the
            // gap (a wait of it has a GIL backtrace, or a sample of it takes or hands over
            // the GIL) while a sibling thread of its process ran through half of the gap
            // (the two on CPU in turn) waited for the GIL in those waits too; where a GIL
            // backtrace shows the capture has backtraces, not in a wait whose own
            // backtrace holds no GIL frame. Where nothing in the gap took it, the thread's
            // own backtraced waits elsewhere may say what its short waits are: a wait whose
            // backtraced calls on this thread mostly take the GIL ([`host::GilWait`]) is
            // a GIL wait in its short calls too, while a sibling runs through the gap.
            let traced = t.gil_ns > 0;
            let (gil_ns, habit) = if t.gil_ns < t.lock_ns && in_turn(trace, ix, g, me) {
                if traced || host::gil_samples(trace, ix, me, (g.start, g.end)).1 > 0 {
                    let not_gil = if traced { not_gil_ns(trace, ix, g, me) } else { 0 };
                    ((t.lock_ns - not_gil).max(t.gil_ns), None)
                } else {
                    let (ns, w) = habitual_gil_ns(trace, ix, g, me, &gil_waits);
                    (ns.max(t.gil_ns), w)
                }
            } else {
                (t.gil_ns, None)
            };
            if 2 * gil_ns >= dur {
                return gil(trace, ix, g, me, tree, &cpus, (gil_ns, t.gil_ns), habit);
            }
            // A futex or condition wait waits on the process's own threads first; a poll or
            // read of a pipe waits on the workers.
            let order = if 2 * t.lock_ns >= t.blocked_ns { Order::SameProcessFirst } else { Order::WorkersFirst };
            follow(trace, ix, g, me, tree, &cpus, order)
        }
        _ => Decision::keep(g, me),
    }
}

// The deciding thread waited for the GIL (`gil_ns` off CPU, `traced_ns` of it in waits
// whose backtrace takes the GIL; `habit`: the wait, known as a GIL wait from its
// backtraces elsewhere, that its short calls made): the thread of its process that ran
// most in the gap held it; its work decides the cause as any followed wait does.
#[allow(clippy::too_many_arguments, reason = "rule 6's context plus what the GIL evidence was")]
fn gil(
    trace: &Trace,
    ix: &HostIndex,
    g: &Gap,
    me: (u32, u32),
    tree: &[u32],
    cpus: &Cpus,
    (gil_ns, traced_ns): (Ns, Ns),
    habit: Option<host::GilWait>,
) -> Decision {
    let d = follow(trace, ix, g, me, tree, cpus, Order::SameProcessFirst);
    let holder = ran(trace, ix, g, me, &[g.pid], false).into_iter().next();
    let Some(h) = holder else { return d };
    let traced = if let Some(w) = habit {
        let name = crate::text::name(trace.strings.get(w.name));
        format!(
            " (in {name} calls too short for a backtrace; {} of its {} backtraced {name} calls take the GIL)",
            w.gil, w.backtraced
        )
    } else if traced_ns > 0 && traced_ns < gil_ns {
        format!(" ({} in a wait whose backtrace takes it)", fmt_ns(traced_ns))
    } else {
        String::new()
    };
    let note = format!(
        "{}; GIL contention: {} waited {}{traced} for the GIL while {} ran {:.0}% of the gap",
        g.evidence,
        trace.thread_label(me.0, me.1),
        fmt_ns(gil_ns),
        trace.thread_label(h.pid, h.tid),
        h.on_cpu_share * 100.0
    );
    let cause = if d.cause == Cause::HostWait { Cause::HostBusy } else { d.cause };
    Decision { cause, note: Some(note), explainer: (h.pid, h.tid), hint: Hint::Gil }
}

// Python threads in turn: another thread of the process of `me` (not nsys's) was on CPU
// for half of the gap.
fn in_turn(trace: &Trace, ix: &HostIndex, g: &Gap, me: (u32, u32)) -> bool {
    ran(trace, ix, g, me, &[g.pid], false).first().is_some_and(|h| 2.0 * h.on_cpu_share >= 1.0)
}

// Off-CPU time in the gap of thread `me` in futex and condition waits whose backtrace
// holds no GIL frame: the calls long enough to have one ([`host::BACKTRACE_MIN_NS`])
// without the GIL's flag. They waited for something else.
fn not_gil_ns(trace: &Trace, ix: &HostIndex, g: &Gap, me: (u32, u32)) -> Ns {
    host::off_cpu_in_calls(trace, ix, me, (g.start, g.end), |ev, k| {
        ix.is_lock_call(ev.name[k])
            && ev.end(k) - ev.start[k] >= host::BACKTRACE_MIN_NS
            && ev.flags(k) & crate::model::OSRT_GIL == 0
    })
}

// Off-CPU time in the gap of thread `me` in its GIL waits known from their backtraces
// elsewhere (`waits`, its [`host::GilWait`]s): calls of those waits too short for a
// backtrace, or whose backtrace takes the GIL; and the wait that held most of it.
fn habitual_gil_ns(
    trace: &Trace,
    ix: &HostIndex,
    g: &Gap,
    me: (u32, u32),
    waits: &[host::GilWait],
) -> (Ns, Option<host::GilWait>) {
    // One pass per wait: a thread is in one call at a time, so the waits' times add up.
    let short_or_gil = |ev: &crate::model::Events, k: usize| {
        ev.end(k) - ev.start[k] < host::BACKTRACE_MIN_NS || ev.flags(k) & crate::model::OSRT_GIL != 0
    };
    let per: Vec<(Ns, host::GilWait)> = waits
        .iter()
        .map(|w| {
            let ns = host::off_cpu_in_calls(trace, ix, me, (g.start, g.end), |ev, k| {
                ev.name[k] == w.name && short_or_gil(ev, k)
            });
            (ns, *w)
        })
        .collect();
    let top = per.iter().filter(|p| p.0 > 0).max_by_key(|p| p.0).map(|p| p.1);
    (per.iter().map(|p| p.0).sum(), top)
}

// OpenMP's runtime holds the most samples of thread `who` in the gap (at least
// [`MIN_SAMPLES`]): its threads spin-wait after parallel regions (`gomp_barrier_wait_end`,
// `do_spin`) on CPUs the loop needs.
fn omp_spinning(trace: &Trace, ix: &HostIndex, who: (u32, u32), g: &Gap) -> bool {
    let (modules, total) = host::module_samples(trace, ix, who, (g.start, g.end));
    total >= MIN_SAMPLES && modules.first().is_some_and(|(m, _)| m.to_ascii_lowercase().starts_with("libgomp"))
}

// Whose threads a wait is followed to first.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    WorkersFirst,
    SameProcessFirst,
}

// Threads of `pids` (other than `me`) that ran in the gap, busiest first; workers (other
// processes) count with their main thread only; nsys's threads never count.
fn ran(trace: &Trace, ix: &HostIndex, g: &Gap, me: (u32, u32), pids: &[u32], workers: bool) -> Vec<host::Producer> {
    let mut v = host::producers(trace, ix, pids, me, g.start, g.end);
    v.retain(|p| (!workers || p.tid == p.pid) && !is_profiler_thread(ix.thread_name(trace, p.pid, p.tid)));
    v
}

// Rule 6 for a thread waiting on others: the cause of what its producers did.
fn follow(trace: &Trace, ix: &HostIndex, g: &Gap, me: (u32, u32), tree: &[u32], cpus: &Cpus, order: Order) -> Decision {
    let others: Vec<u32> = tree.iter().copied().filter(|&p| p != g.pid).collect();
    let (workers, siblings) = (ran(trace, ix, g, me, &others, true), ran(trace, ix, g, me, &[g.pid], false));
    let groups = match order {
        Order::WorkersFirst => [workers, siblings],
        Order::SameProcessFirst => [siblings, workers],
    };
    // The first group whose threads say what the wait was for decides; but a thread of the
    // process waiting in reads that may be pipes (not calls that only touch files), or an
    // input-pipeline thread (a pin-memory thread) waiting in its reads, waits for the
    // worker processes' queue (a pin-memory thread, a process pool's result handler), not
    // for storage: the workers, where they say what they did, decide instead.
    let mut relayed = None;
    for producers in groups.iter().filter(|p| !p.is_empty()) {
        let d = follow_group(trace, ix, g, me, cpus, producers);
        if d.note.is_none() {
            continue;
        }
        let (pid, tid) = d.explainer;
        if relayed.is_none()
            && d.cause == Cause::IoWait
            && pid == g.pid
            && (is_input_thread(ix.thread_name(trace, pid, tid)) || reads_maybe_pipes(trace, ix, g, (pid, tid)))
        {
            relayed = Some(d);
            continue;
        }
        return d;
    }
    relayed.unwrap_or_else(|| Decision::keep(g, me))
}

// True when thread `who` was off CPU in the gap in storage calls mostly other than those
// that only touch files: `read` and its kin, which may read a pipe.
fn reads_maybe_pipes(trace: &Trace, ix: &HostIndex, g: &Gap, (pid, tid): (u32, u32)) -> bool {
    host::thread_time(trace, ix, pid, tid, g.start, g.end).is_some_and(|t| t.io_ns > 0 && 2 * t.file_ns < t.io_ns)
}

// One group of producers (busiest first, not empty): what they did in the gap.
fn follow_group(
    trace: &Trace,
    ix: &HostIndex,
    g: &Gap,
    me: (u32, u32),
    cpus: &Cpus,
    producers: &[host::Producer],
) -> Decision {
    let dur = g.end - g.start;
    let first = &producers[0];
    let busiest = (first.pid, first.tid);
    let wait = g.evidence.clone();
    let label = |p: (u32, u32)| trace.thread_label(p.0, p.1);
    // The producers' time waiting for a CPU, and their time off CPU in storage calls or
    // untraced waits while a CPU was free. An untraced wait while other threads of the
    // producer's own process computed is a wait for them, as for the deciding thread (a
    // worker that made its batch waits while its queue's feeder thread pickles it and its
    // fd-sharing thread serves it): no storage.
    let times: Vec<Off> = producers
        .iter()
        .take(8)
        .filter_map(|p| {
            let t = host::thread_time(trace, ix, p.pid, p.tid, g.start, g.end)?;
            let c = ix.contended_ns(trace, (p.pid, p.tid), &cpus.full, g.start, g.end)?;
            let untraced = (t.runnable_ns - c).max(0);
            let (handed, helper) =
                if 2 * (t.io_ns + untraced) >= dur { own_ran_while_off(trace, ix, g, me, p) } else { (0, None) };
            let waited = t.io_ns + untraced - handed.min(untraced);
            Some(Off { contended: c, waited, who: (p.pid, p.tid), handed, helper })
        })
        .collect();
    if let Some(&Off { contended: c, who: p, .. }) =
        times.iter().max_by_key(|t| t.contended).filter(|t| 2 * t.contended >= dur)
    {
        let note = format!(
            "{wait}; producer {} waited for a CPU for {} of {}: {}",
            label(p),
            fmt_ns(c),
            fmt_ns(dur),
            cpus.text()
        );
        return Decision::new(Cause::CpuContention, note, p);
    }
    // Producers computing while every usable CPU was busy: the CPUs are the limit, and
    // more workers would only contend.
    let full: Ns = cpus.full.iter().map(|(a, b)| b - a).sum();
    if 2.0 * first.on_cpu_share >= 1.0 && 2 * full >= dur && busiest.0 != g.pid {
        let note = format!(
            "{wait}; producer {} on CPU {:.0}% of the gap while every usable CPU was busy for {}: {}",
            label(busiest),
            first.on_cpu_share * 100.0,
            fmt_ns(full),
            cpus.text()
        );
        return Decision::new(Cause::CpuContention, note, busiest);
    }
    // The process's own threads sharing its work (a pool): they computed through most of
    // the time the waiting thread was off CPU, and with it through half of the gap.
    let own = busiest.0 == g.pid;
    let (mine, through) = if own {
        let who: Vec<(u32, u32)> = producers.iter().map(|p| (p.pid, p.tid)).collect();
        let mine = ix.on_cpu_ns(trace, me.0, me.1, g.start, g.end).unwrap_or(0);
        (mine, ix.on_cpu_while_off_ns(trace, me, &who, g.start, g.end))
    } else {
        (0, 0)
    };
    let pool = own && 2 * through >= dur - mine && 2 * (mine + through) >= dur;
    if 2.0 * first.on_cpu_share >= 1.0 || pool {
        let note = if 2.0 * first.on_cpu_share >= 1.0 {
            format!("{wait}; producer {} on CPU {:.0}% of the gap", label(busiest), first.on_cpu_share * 100.0)
        } else {
            format!(
                "{wait}; {} threads of its process (the busiest {} {:.0}%) computed through {} of the {} it was off CPU",
                producers.len(),
                label(busiest),
                first.on_cpu_share * 100.0,
                fmt_ns(through),
                fmt_ns(dur - mine)
            )
        };
        let compiling = compile_thread(trace, ix, busiest, g);
        let d = Decision::new(work_of(trace, ix, busiest, g), note, busiest);
        return if compiling { d.hinted(Hint::Compile) } else { d };
    }
    // A producer off CPU while a thread of its own process computed through half of the gap
    // handed its work to that thread (a worker's queue feeder pickling the batch it made):
    // that thread's work decides.
    if let Some(o) = times.iter().filter(|o| 2 * o.handed >= dur).max_by_key(|o| o.handed)
        && let Some(h) = o.helper
    {
        let note = format!(
            "{wait}; producer {} off CPU while its own thread {} computed through {} of {}",
            label(o.who),
            label(h),
            fmt_ns(o.handed),
            fmt_ns(dur)
        );
        return Decision::new(work_of(trace, ix, h, g), note, h);
    }
    if let Some(&Off { waited: w, who: p, .. }) = times.iter().max_by_key(|t| t.waited).filter(|t| 2 * t.waited >= dur)
    {
        let traced = host::thread_time(trace, ix, p.0, p.1, g.start, g.end).map_or(0, |t| t.io_ns);
        let how = if 2 * traced >= w {
            "in storage calls".to_string()
        } else if ix.has_os_calls(p.0, p.1) {
            "outside any traced call: storage, page faults or a lock".to_string()
        } else {
            "in an untraced wait (its process has no OS runtime trace): storage, network or a lock".to_string()
        };
        let note = format!(
            "{wait}; producer {} off CPU for {} of {} ({how}) while a usable CPU was free",
            label(p),
            fmt_ns(w),
            fmt_ns(dur)
        );
        return Decision::new(Cause::IoWait, note, p);
    }
    Decision::keep(g, me)
}

// A producer's time in the gap off CPU: waiting for a CPU (`contended`), in storage calls
// or untraced waits while a CPU was free (`waited`), and the part of its time off CPU during
// which its own process's other threads computed (`handed`, the busiest of them `helper`).
struct Off {
    contended: Ns,
    waited: Ns,
    who: (u32, u32),
    handed: Ns,
    helper: Option<(u32, u32)>,
}

// Time in the gap during which the other threads of producer `p`'s process (not the
// deciding thread `me`, not nsys's) ran while `p` was off CPU, and the busiest of them.
fn own_ran_while_off(
    trace: &Trace,
    ix: &HostIndex,
    g: &Gap,
    me: (u32, u32),
    p: &host::Producer,
) -> (Ns, Option<(u32, u32)>) {
    let who = (p.pid, p.tid);
    let own: Vec<(u32, u32)> =
        ran(trace, ix, g, who, &[p.pid], false).into_iter().map(|q| (q.pid, q.tid)).filter(|&q| q != me).collect();
    (ix.on_cpu_while_off_ns(trace, who, &own, g.start, g.end), own.first().copied())
}

// Whose work a thread computing for the deciding thread of `g` does: a worker process,
// or a thread of the input pipeline (a pin-memory thread), is the input pipeline
// (`worker-busy`); any other thread of the process (one that launches CUDA work, a
// tokenizer's or OpenMP's pool) does the launching thread's own work (`host-busy`).
fn work_of(trace: &Trace, ix: &HostIndex, who: (u32, u32), g: &Gap) -> Cause {
    let pipeline =
        who.0 != g.pid || (is_input_thread(ix.thread_name(trace, who.0, who.1)) && !launches_in(trace, who, g));
    if pipeline { Cause::WorkerBusy } else { Cause::HostBusy }
}

/// True for names of input-pipeline threads inside the training process (PyTorch's
/// `pt_data_pin`, a data loader's or prefetcher's thread).
pub(crate) fn is_input_thread(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    ["data", "pin", "loader", "prefetch"].iter().any(|k| n.contains(k))
}

// True when thread `who` did CUDA work during the gap: a launch, copy or memset, or an
// allocation or free (driver work that holds the driver's locks). Queries do not count: a
// pin-memory thread asks whether its pinned blocks' events are done while it copies batches.
fn launches_in(trace: &Trace, (pid, tid): (u32, u32), g: &Gap) -> bool {
    let works = |l: &crate::model::Lane, k: usize| {
        !matches!(ApiKind::from_flags(l.ev.flags(k)), ApiKind::Other | ApiKind::Sync)
            || ["Alloc", "Free", "Register"].iter().any(|w| trace.strings.get(l.ev.name[k]).contains(w))
    };
    trace.lanes.iter().filter(|l| l.pid == pid && l.kind == LaneKind::CudaApi { tid }).any(|l| {
        let i = l.ev.start.partition_point(|&s| s < g.end);
        i > 0 && (0..i).rev().take(64).any(|k| l.ev.end(k) > g.start && works(l, k))
    })
}

// True when thread `who` is a compiler (its name, or the modules of its samples in the gap).
fn compile_thread(trace: &Trace, ix: &HostIndex, who: (u32, u32), g: &Gap) -> bool {
    if is_compiler(ix.thread_name(trace, who.0, who.1)) {
        return true;
    }
    let s = host::top_symbols(trace, ix, who.0, who.1, (g.start, g.end), TOP_FUNCTIONS);
    let compiling: usize = s.top.iter().filter(|t| is_compiler_module(&t.module)).map(|t| t.samples).sum();
    s.samples >= MIN_SAMPLES && 2 * compiling >= s.samples
}

// Causes under which a compile can hide: the host computed or waited on others.
fn may_compile(c: Cause) -> bool {
    matches!(c, Cause::HostBusy | Cause::WorkerBusy | Cause::HostWait | Cause::SyncDrain | Cause::Unknown)
}

// Threads of the tree that are compiler processes (ptxas, cicc, nvcc, the gcc/cc1 that
// builds Triton's launcher...), found by name.
fn compiler_threads(trace: &Trace, tree: &[u32]) -> Vec<(u32, u32)> {
    trace.threads.iter().filter(|t| tree.contains(&t.pid) && is_compiler(&t.name)).map(|t| (t.pid, t.tid)).collect()
}

// A JIT compile sits in the gap: one of the tree's compiler processes ran in it, a
// process of the tree called NVRTC or nvJitLink in it, or the deciding thread's samples
// sit in compiler code (Triton's compiler, NVRTC, the PTX compiler).
fn compiling_in(
    trace: &Trace,
    ix: &HostIndex,
    (compilers, tree): (&[(u32, u32)], &[u32]),
    me: (u32, u32),
    g: &Gap,
) -> bool {
    compilers.iter().any(|&(p, t)| ix.on_cpu_ns(trace, p, t, g.start, g.end).is_some_and(|n| n > 0))
        || nvrtc_in(trace, tree, g)
        || compile_thread(trace, ix, me, g)
}

// A CUDA API row of the tree's processes overlapping the gap is an NVRTC or nvJitLink
// call (`nvrtcCompileProgram`, `nvJitLinkComplete`).
fn nvrtc_in(trace: &Trace, tree: &[u32], g: &Gap) -> bool {
    trace.lanes.iter().filter(|l| tree.contains(&l.pid) && matches!(l.kind, LaneKind::CudaApi { .. })).any(|l| {
        let i = l.ev.start.partition_point(|&s| s < g.end);
        // Calls of one thread nest no deeper than runtime -> driver: a few rows back.
        (0..i).rev().take(64).any(|k| l.ev.end(k) > g.start && is_jit_call(trace.strings.get(l.ev.name[k])))
    })
}

/// True for the API calls of runtime compilation: NVRTC (`nvrtc*`) and nvJitLink.
pub(crate) fn is_jit_call(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n.starts_with("nvrtc") || n.starts_with("nvjitlink")
}

/// True for names of compiler processes and their threads: the CUDA toolchain (`ptxas`,
/// `cicc`, `nvcc`, `nvlink`, `fatbinary`, `cudafe++`) and the C compiler Triton builds
/// its launcher with (`gcc`, `gcc-real`, `x86_64-linux-gnu-gcc-12`, `cc1`, `clang`).
/// Whole names, not parts: `libgcc_s` or a `triton` thread compiles nothing.
pub(crate) fn is_compiler(name: &str) -> bool {
    const TOOLS: [&str; 11] =
        ["ptxas", "cicc", "nvcc", "nvlink", "fatbinary", "cudafe++", "gcc", "g++", "clang", "clang++", "cc1"];
    let n = name.to_ascii_lowercase();
    // A cross compiler's triplet prefix and a version or wrapper suffix name the same
    // tool (`x86_64-linux-gnu-gcc-12`, `gcc-real`); `cc1plus` is cc1 for C++.
    n.rsplit('/').next().unwrap_or(&n).split(['-', '.']).any(|p| TOOLS.contains(&p) || p.starts_with("cc1"))
}

/// True for modules of compiler code a sampled thread can run in: NVRTC, the PTX compiler
/// and nvJitLink libraries, Triton's compiler (`libtriton.so`: its MLIR and LLVM passes;
/// Triton launches kernels from a separately built launcher), or a compiler executable.
pub(crate) fn is_compiler_module(module: &str) -> bool {
    let m = host::module_file(module).to_ascii_lowercase();
    ["libnvrtc", "libnvptxcompiler", "libnvjitlink", "libtriton"].iter().any(|k| m.starts_with(k)) || is_compiler(&m)
}

/// What `host` says about a gap, as one line for the viewer; `cores` are the machine's
/// logical CPUs where the export records them.
pub(crate) fn summary(w: &HostWindow, cores: Option<u32>) -> String {
    let pct = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:.0}%", v * 100.0));
    let of = cores.map_or(String::new(), |n| format!(" (of {n} on the machine)"));
    format!(
        "on CPU {}, runnable {}, blocked {}; {} usable CPUs{of} {:.0}% busy, {} threads",
        pct(w.on_cpu_share),
        pct(w.runnable_share),
        pct(w.blocked_share),
        w.cpus.usable.len(),
        w.cpus.busy_share * 100.0,
        w.cpus.threads
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{DeviceActivity, Options, find_gaps};
    use crate::model::{ApiKind, Events, Lane, SampleFlags, Strings, Thread};

    const MS: Ns = 1_000_000;
    const MAIN: u32 = 100;
    const WORKER: u32 = 200;

    // A trace with one 9 ms GPU gap [1 ms, 10 ms) on GPU 0; the kernel after it was
    // launched by the main thread just before its start.
    struct T(Trace);

    impl T {
        fn new() -> Self {
            let mut t = Trace { strings: Strings::new(), ..Trace::default() };
            for (pid, tid, name) in
                [(MAIN, MAIN, "python3"), (WORKER, WORKER, "pt_data_worker"), (WORKER, 201, "worker2")]
            {
                t.threads.push(Thread { pid, tid, name: name.to_string() });
            }
            let mut s = Self(t);
            s.push(MAIN, LaneKind::Kernels { device: 0, stream: 7 }, &[(0, MS, "k", 1), (10 * MS, 11 * MS, "k", 2)]);
            s.push(
                MAIN,
                LaneKind::CudaApi { tid: MAIN },
                &[(10 * MS - 20_000, 10 * MS - 10_000, "cudaLaunchKernel", 2)],
            );
            s
        }

        fn push(&mut self, pid: u32, kind: LaneKind, rows: &[(Ns, Ns, &str, u64)]) {
            let mut ev = Events::default();
            for &(a, b, name, x) in rows {
                let id = self.0.strings.intern(name);
                #[allow(clippy::wildcard_enum_match_arm, reason = "a test helper: every other kind gets plain rows")]
                match kind {
                    LaneKind::CudaApi { .. } => {
                        ev.push(a, b, id, Some(x as u32), None, Some(ApiKind::classify(name) as u32));
                    }
                    LaneKind::Kernels { .. } => ev.push(a, b, id, Some(x as u32), Some(0), None),
                    LaneKind::OnCpu { .. } => ev.push(a, b, id, None, Some(x), None),
                    _ => ev.push(a, b, id, None, None, Some(0)),
                }
            }
            self.0.lanes.push(Lane::new(kind, pid, ev));
        }

        // On-CPU intervals of thread `tid` of `pid` on `cpu`.
        fn on(mut self, pid: u32, tid: u32, cpu: u64, spans: &[(Ns, Ns)]) -> Self {
            let rows: Vec<_> = spans.iter().map(|&(a, b)| (a, b, "cpu", cpu)).collect();
            self.push(pid, LaneKind::OnCpu { tid }, &rows);
            self
        }

        fn os(mut self, pid: u32, tid: u32, rows: &[(Ns, Ns, &str)]) -> Self {
            let rows: Vec<_> = rows.iter().map(|&(a, b, n)| (a, b, n, 0)).collect();
            self.push(pid, LaneKind::Osrt { tid }, &rows);
            self
        }

        fn gap(&self) -> Gap {
            let d = DeviceActivity::compute(&self.0, 0);
            let gaps = find_gaps(&self.0, &[d], &Options::default());
            assert_eq!(gaps.len(), 1, "{gaps:?}");
            gaps[0].clone()
        }
    }

    // Busy on `cpu` for the whole gap, by another thread of the worker.
    fn hog(t: T, cpu: u64) -> T {
        t.on(WORKER, 201, cpu, &[(0, 11 * MS)])
    }

    #[test]
    fn a_runnable_thread_on_saturated_cpus_is_cpu_contention() {
        // Main runs 2 ms of the 9 ms gap on CPU 0; worker threads hold CPUs 0 and 1.
        let t = T::new().os(MAIN, MAIN, &[(0, 10, "ioctl")]).on(MAIN, MAIN, 0, &[(MS, 2 * MS), (9 * MS, 10 * MS)]).on(
            WORKER,
            WORKER,
            0,
            &[(2 * MS, 9 * MS)],
        );
        let g = hog(t, 1).gap();
        assert_eq!(g.cause, Cause::CpuContention, "{}", g.evidence);
        assert!(
            g.evidence.contains("runnable while every usable CPU ran other threads for 7.00 ms of 9.00 ms"),
            "{}",
            g.evidence
        );
        let h = g.host.unwrap();
        assert_eq!(h.cpus.usable, vec![0, 1]);
        assert!((h.on_cpu_share.unwrap() - 2.0 / 9.0).abs() < 1e-9);
    }

    #[test]
    fn off_cpu_in_a_read_while_cpus_are_free_is_io_wait() {
        let g = T::new()
            .os(MAIN, MAIN, &[(2 * MS, 9 * MS, "pread64")])
            .on(MAIN, MAIN, 0, &[(MS, 2 * MS), (9 * MS, 10 * MS)])
            .gap();
        // pread is a blocking call (rule 4: host-wait) on a file: io-wait.
        assert_eq!(g.cause, Cause::IoWait, "{}", g.evidence);
        assert!(g.evidence.contains("in storage calls (pread 7.00 ms) for 7.00 ms of 9.00 ms"), "{}", g.evidence);
        // A `read` may be a pipe from a worker: the wait is followed, and no producer ran.
        let g = T::new()
            .os(MAIN, MAIN, &[(2 * MS, 9 * MS, "read")])
            .on(MAIN, MAIN, 0, &[(MS, 2 * MS), (9 * MS, 10 * MS)])
            .gap();
        assert_eq!(g.cause, Cause::HostWait, "{}", g.evidence);
        let g = T::new()
            .os(MAIN, MAIN, &[(2 * MS, 9 * MS, "openat")])
            .on(MAIN, MAIN, 0, &[(MS, 2 * MS), (9 * MS, 10 * MS)])
            .gap();
        assert_eq!(g.cause, Cause::IoWait, "{}", g.evidence);
    }

    #[test]
    fn a_wait_follows_to_the_producers() {
        // Main blocks in poll for the whole gap.
        let base = || T::new().os(MAIN, MAIN, &[(MS, 10 * MS - 30_000, "poll")]).on(MAIN, MAIN, 0, &[(0, MS)]);
        // The worker computes 8 of the 9 ms while CPU 0 is free: input-pipeline compute.
        let g = base().on(WORKER, WORKER, 2, &[(MS, 9 * MS)]).gap();
        assert_eq!(g.cause, Cause::WorkerBusy, "{}", g.evidence);
        assert!(g.evidence.contains("producer pt_data_worker (tid 200) on CPU 89%"), "{}", g.evidence);
        // The worker runs 1 ms then is off CPU untraced (reading) until it runs again
        // after the gap: io-wait.
        let g = base().on(WORKER, WORKER, 2, &[(MS, 2 * MS), (11 * MS, 12 * MS)]).gap();
        assert_eq!(g.cause, Cause::IoWait, "{}", g.evidence);
        // Worker and another thread share one CPU while the other usable CPU is busy too:
        // the worker waits for a CPU.
        let g = base()
            .on(WORKER, WORKER, 2, &[(MS, 4 * MS)])
            .on(WORKER, 201, 2, &[(4 * MS, 10 * MS)])
            .on(300, 300, 0, &[(MS, 10 * MS)])
            .gap();
        assert_eq!(g.cause, Cause::CpuContention, "{}", g.evidence);
        // No producer ran: the wait stays.
        assert_eq!(base().gap().cause, Cause::HostWait);
    }

    #[test]
    fn a_thread_after_its_last_row_is_no_wait() {
        // A worker of the last epoch runs 1 ms into the gap and exits (no row after 2 ms):
        // its absence is no untraced wait, and nothing says what main waited for.
        let base = || T::new().os(MAIN, MAIN, &[(MS, 10 * MS - 30_000, "poll")]).on(MAIN, MAIN, 0, &[(0, MS)]);
        let g = base().on(WORKER, WORKER, 2, &[(0, 2 * MS)]).gap();
        assert_eq!(g.cause, Cause::HostWait, "{}", g.evidence);
        // A new worker forks mid-gap and computes its start-up to the gap end: worker-busy,
        // though the old one exited.
        let g = base().on(WORKER, WORKER, 2, &[(0, 2 * MS)]).on(300, 300, 3, &[(4 * MS, 10 * MS)]).gap();
        assert_eq!(g.cause, Cause::WorkerBusy, "{}", g.evidence);
    }

    #[test]
    fn nsys_threads_are_no_load_no_thread_and_no_producer() {
        // Main waits in poll; only nsys's sampler runs, on CPU 1, for the whole gap.
        let t = T::new().os(MAIN, MAIN, &[(MS, 10 * MS - 30_000, "poll")]).on(MAIN, MAIN, 0, &[(0, MS)]);
        let mut t = t.on(MAIN, 150, 1, &[(0, 11 * MS)]);
        t.0.threads.push(Thread { pid: MAIN, tid: 150, name: "NSys PySampling".to_string() });
        let g = t.gap();
        assert_eq!(g.cause, Cause::HostWait, "{}", g.evidence);
        let h = g.host.unwrap();
        assert_eq!(h.cpus.usable, vec![0], "CPU 1 ran only nsys's thread");
        assert!(h.producers.is_empty(), "{:?}", h.producers);
    }

    #[test]
    fn a_cpu_touched_before_the_first_gpu_op_is_not_usable() {
        // The worker ran on CPU 5 only before the first kernel (at 0): a stray.
        let t = T::new().os(MAIN, MAIN, &[(MS, 10 * MS - 30_000, "poll")]).on(MAIN, MAIN, 0, &[(0, MS)]);
        let g = t.on(MAIN, 102, 5, &[(-MS, -MS / 2)]).on(WORKER, WORKER, 2, &[(MS, 9 * MS)]).gap();
        assert_eq!(g.host.unwrap().cpus.usable, vec![0, 2]);
    }

    #[test]
    fn contention_needs_a_thread_waiting_for_a_cpu_not_a_busy_one() {
        // One worker runs 100% on its own core while another core idles: worker-busy.
        let base = || T::new().os(MAIN, MAIN, &[(MS, 10 * MS - 30_000, "poll")]).on(MAIN, MAIN, 0, &[(0, MS)]);
        let g = base().on(WORKER, WORKER, 1, &[(0, 11 * MS)]).gap();
        assert_eq!(g.cause, Cause::WorkerBusy, "{}", g.evidence);
        // Main and two workers on one usable CPU; a worker is off CPU outside any call
        // while the other runs: waiting for a CPU.
        let g = T::new()
            .os(MAIN, MAIN, &[(MS, 10 * MS - 30_000, "poll")])
            .on(MAIN, MAIN, 1, &[(0, MS)])
            .on(WORKER, WORKER, 1, &[(MS, 3 * MS), (5 * MS, 7 * MS)])
            .on(300, 300, 1, &[(3 * MS, 5 * MS), (7 * MS, 11 * MS)])
            .gap();
        assert_eq!(g.cause, Cause::CpuContention, "{}", g.evidence);
        // A worker computing while every usable CPU is busy: the CPUs are the limit.
        let g = base().on(WORKER, WORKER, 1, &[(0, 11 * MS)]).on(300, 300, 0, &[(MS, 11 * MS)]).gap();
        assert_eq!(g.cause, Cause::CpuContention, "{}", g.evidence);
    }

    #[test]
    fn untraced_off_cpu_time_is_io_only_while_a_cpu_is_free() {
        let base = || T::new().os(MAIN, MAIN, &[(MS, 10 * MS - 30_000, "poll")]).on(MAIN, MAIN, 0, &[(0, MS)]);
        // The worker (no OS runtime trace) runs 1 ms and is off CPU for the rest, CPU 1 free.
        let g = base().on(WORKER, WORKER, 1, &[(MS, 2 * MS), (11 * MS, 12 * MS)]).gap();
        assert_eq!(g.cause, Cause::IoWait, "{}", g.evidence);
        assert!(g.evidence.contains("untraced wait"), "{}", g.evidence);
    }

    #[test]
    fn an_untraced_wait_while_the_workers_own_threads_run_is_no_storage() {
        // Main waits in poll; the worker (no OS runtime trace) computes 3 ms, then is off CPU
        // to the gap's end while its other thread 201 (its queue's feeder, pickling the batch)
        // runs `handed` ms of it: the worker waited for that thread, not for storage.
        let t = |handed: Ns| {
            let t = T::new().os(MAIN, MAIN, &[(MS, 10 * MS - 30_000, "poll")]).on(MAIN, MAIN, 0, &[(0, MS)]);
            let t = t.on(WORKER, WORKER, 2, &[(MS, 4 * MS), (11 * MS, 12 * MS)]);
            if handed > 0 { t.on(WORKER, 201, 3, &[(4 * MS, (4 + handed) * MS)]) } else { t }
        };
        let g = t(0).gap();
        assert_eq!(g.cause, Cause::IoWait, "{}", g.evidence);
        // 2 ms handed over: 4 ms of untraced wait are left, under half of the gap; nothing
        // says what they were.
        let g = t(2).gap();
        assert_eq!(g.cause, Cause::HostWait, "{}", g.evidence);
        // The thread computed through half of the gap: the input pipeline's work.
        let g = t(5).gap();
        assert_eq!(g.cause, Cause::WorkerBusy, "{}", g.evidence);
        assert!(
            g.evidence.contains("off CPU while its own thread worker2 (tid 201) computed through 5.00 ms"),
            "{}",
            g.evidence
        );
    }

    #[test]
    fn short_waits_of_a_call_whose_backtraces_take_the_gil_elsewhere_wait_for_it() {
        // Main waits in 75 condition waits of 70 µs through the gap (too short for a
        // backtrace; no sample in the gap), on CPU 40 µs between them, while the pin-memory
        // thread runs. After the gap it makes `n` waits `name` of 200 µs, `gil` of them
        // with a backtrace that takes the GIL.
        let t = |name: &str, n: Ns, gil: Ns| {
            let short: Vec<(Ns, Ns)> = (0..75).map(|k| (MS + k * 110_000, MS + k * 110_000 + 70_000)).collect();
            let mut on = vec![(0, MS)];
            on.extend(short.windows(2).map(|w| (w[0].1, w[1].0)));
            on.push((short[short.len() - 1].1, 10 * MS));
            let mut t = T::new().on(MAIN, MAIN, 0, &on).on(MAIN, 101, 1, &[(MS, 10 * MS)]);
            let (cond, other) = (t.0.strings.intern("pthread_cond_timedwait"), t.0.strings.intern(name));
            let mut ev = Events::default();
            for &(a, b) in &short {
                ev.push(a, b, cond, None, None, Some(0));
            }
            for k in 0..n {
                let flag = if k < gil { crate::model::OSRT_GIL } else { 0 };
                ev.push(11 * MS + k * 300_000, 11 * MS + k * 300_000 + 200_000, other, None, None, Some(flag));
            }
            t.0.lanes.push(Lane::new(LaneKind::Osrt { tid: MAIN }, MAIN, ev));
            t.0.threads.push(Thread { pid: MAIN, tid: 101, name: "pt_data_pin".to_string() });
            t.gap()
        };
        let g = t("pthread_cond_timedwait", 5, 5);
        assert_eq!((g.cause, g.hint), (Cause::WorkerBusy, Hint::Gil), "{}", g.evidence);
        let says = "waited 5.25 ms (in pthread_cond_timedwait calls too short for a backtrace; 5 of its 5 backtraced";
        assert!(g.evidence.contains(says) && g.evidence.contains("pt_data_pin"), "{}", g.evidence);
        // Too few backtraces to say, most of them without the GIL, or the GIL waits of
        // another call: the short waits stay unnamed and follow to the pin-memory thread.
        for (name, n, gil) in [("pthread_cond_timedwait", 4, 4), ("pthread_cond_timedwait", 10, 5), ("futex", 5, 5)] {
            let g = t(name, n, gil);
            assert_eq!((g.cause, g.hint), (Cause::WorkerBusy, Hint::None), "{name} {n} {gil}: {}", g.evidence);
        }
    }

    #[test]
    fn a_sleep_is_named_and_a_lock_wait_follows_the_process_first() {
        let g =
            T::new().os(MAIN, MAIN, &[(MS, 10 * MS - 30_000, "clock_nanosleep")]).on(MAIN, MAIN, 0, &[(0, MS)]).gap();
        assert_eq!((g.cause, g.hint), (Cause::HostWait, Hint::Sleep), "{}", g.evidence);
        // A futex wait: the sibling thread 101 (no CUDA calls) computes, a worker computes
        // less: the sibling is followed first.
        let lock = || {
            let t = T::new().os(MAIN, MAIN, &[(MS, 10 * MS - 30_000, "futex")]).on(MAIN, MAIN, 0, &[(0, MS)]);
            t.on(MAIN, 101, 1, &[(MS, 9 * MS)]).on(WORKER, WORKER, 2, &[(MS, 6 * MS)])
        };
        // An unnamed helper thread (a tokenizer's pool) does the launching thread's work.
        let g = lock().gap();
        assert_eq!(g.cause, Cause::HostBusy, "{}", g.evidence);
        assert!(g.evidence.contains("tid 101"), "{}", g.evidence);
        // A pin-memory thread is the input pipeline.
        let mut t = lock();
        t.0.threads.push(Thread { pid: MAIN, tid: 101, name: "pt_data_pin".to_string() });
        let g = t.gap();
        assert_eq!(g.cause, Cause::WorkerBusy, "{}", g.evidence);
        // Its event queries leave it the input pipeline; a copy or an allocation makes it a
        // thread doing CUDA work for the loop.
        for (call, cause) in [
            ("cudaEventQuery", Cause::WorkerBusy),
            ("cudaMemcpyAsync", Cause::HostBusy),
            ("cudaHostAlloc", Cause::HostBusy),
        ] {
            let mut t = lock();
            t.0.threads.push(Thread { pid: MAIN, tid: 101, name: "pt_data_pin".to_string() });
            t.push(MAIN, LaneKind::CudaApi { tid: 101 }, &[(2 * MS, 2 * MS + 20_000, call, 9)]);
            assert_eq!(t.gap().cause, cause, "{call}");
        }
    }

    #[test]
    fn a_pin_memory_thread_waiting_in_its_reads_relays_the_wait_to_the_workers() {
        // Main waits on a lock; its pin-memory thread is off CPU in a read (the workers'
        // queue) for most of the gap while a worker computes: the workers decide.
        let t = || {
            let mut t = T::new().os(MAIN, MAIN, &[(MS, 10 * MS - 30_000, "futex")]).on(MAIN, MAIN, 0, &[(0, MS)]);
            t.0.threads.push(Thread { pid: MAIN, tid: 101, name: "pt_data_pin".to_string() });
            t.os(MAIN, 101, &[(MS, 9 * MS, "read")]).on(MAIN, 101, 1, &[(9 * MS, 9 * MS + 100_000)])
        };
        let g = t().on(WORKER, WORKER, 2, &[(MS, 9 * MS)]).gap();
        assert_eq!(g.cause, Cause::WorkerBusy, "{}", g.evidence);
        assert!(g.evidence.contains("pt_data_worker"), "{}", g.evidence);
        // With no worker that ran, the pin thread's read stays what it was.
        let g = t().gap();
        assert_eq!(g.cause, Cause::IoWait, "{}", g.evidence);
        // Any thread of the process reading what may be a pipe (a process pool's result
        // handler, unnamed) relays the wait likewise; one that only opens and reads files
        // at offsets (`pread64`) waits for storage.
        let other = |call: &'static str| {
            let t = T::new().os(MAIN, MAIN, &[(MS, 10 * MS - 30_000, "sem_wait")]).on(MAIN, MAIN, 0, &[(0, MS)]);
            t.os(MAIN, 101, &[(MS, 9 * MS, call)]).on(MAIN, 101, 1, &[(9 * MS, 9 * MS + 100_000)]).on(
                WORKER,
                WORKER,
                2,
                &[(MS, 9 * MS)],
            )
        };
        let g = other("read").gap();
        assert_eq!(g.cause, Cause::WorkerBusy, "{}", g.evidence);
        let g = other("pread64").gap();
        assert_eq!(g.cause, Cause::IoWait, "{}", g.evidence);
    }

    #[test]
    fn a_gil_wait_names_the_thread_that_held_it() {
        let mut t = T::new().on(MAIN, MAIN, 0, &[(0, MS)]).on(MAIN, 101, 1, &[(MS, 10 * MS)]);
        let id = t.0.strings.intern("pthread_cond_timedwait");
        let mut ev = Events::default();
        ev.push(MS, 10 * MS - 30_000, id, None, None, Some(crate::model::OSRT_GIL));
        t.0.lanes.push(Lane::new(LaneKind::Osrt { tid: MAIN }, MAIN, ev));
        t.0.threads.push(Thread { pid: MAIN, tid: 101, name: "pt_data_pin".to_string() });
        let g = t.gap();
        assert_eq!((g.cause, g.hint), (Cause::WorkerBusy, Hint::Gil), "{}", g.evidence);
        assert!(g.evidence.contains("GIL contention") && g.evidence.contains("pt_data_pin"), "{}", g.evidence);
    }

    #[test]
    fn a_compiler_running_in_the_gap_is_a_compile() {
        // Main computes (host-busy) while a ptxas process of the tree runs.
        let mut t = T::new().os(MAIN, MAIN, &[(0, 10, "ioctl")]).on(MAIN, MAIN, 0, &[(MS, 10 * MS)]);
        t = t.on(300, 300, 3, &[(2 * MS, 3 * MS)]);
        t.0.threads.push(Thread { pid: 300, tid: 300, name: "ptxas".to_string() });
        let g = t.gap();
        assert_eq!((g.cause, g.hint), (Cause::HostBusy, Hint::Compile), "{}", g.evidence);
        assert_eq!(
            T::new().os(MAIN, MAIN, &[(0, 10, "ioctl")]).on(MAIN, MAIN, 0, &[(MS, 10 * MS)]).gap().hint,
            Hint::None
        );
    }

    // Host-busy main thread (on CPU for the whole gap) with `n` samples of `symbol` in
    // `module` in the gap.
    fn busy_sampled(n: usize, symbol: &str, module: &str) -> T {
        let mut t = T::new().os(MAIN, MAIN, &[(0, 10, "ioctl")]).on(MAIN, MAIN, 0, &[(MS, 10 * MS)]);
        let (sym, m) = (t.0.strings.intern(symbol), t.0.strings.intern(module));
        let mut ev = Events::default();
        for k in 0..n as Ns {
            ev.push(
                2 * MS + k * 100_000,
                2 * MS + k * 100_000,
                sym,
                None,
                Some(m.into()),
                Some(SampleFlags::pack(0, 1)),
            );
        }
        t.0.lanes.push(Lane::new(LaneKind::Samples { tid: MAIN }, MAIN, ev));
        t
    }

    #[test]
    fn a_compile_needs_a_compiler_an_nvrtc_call_or_compiler_code_in_the_gap() {
        // Samples in libgcc_s (unwinding) or in a `triton`-named module that is no
        // compiler are no compile; samples in Triton's compiler library are.
        let g = busy_sampled(20, "_Unwind_Find_FDE", "/usr/lib/x86_64-linux-gnu/libgcc_s.so.1").gap();
        assert_eq!((g.cause, g.hint), (Cause::HostBusy, Hint::None), "{}", g.evidence);
        let g = busy_sampled(20, "_launch", "/root/.triton/cache/x/__triton_launcher.cpython-312-x86_64-linux-gnu.so")
            .gap();
        assert_eq!(g.hint, Hint::None, "{}", g.evidence);
        let g = busy_sampled(20, "mlir::PassManager::run", "/site-packages/triton/_C/libtriton.so").gap();
        assert_eq!((g.cause, g.hint), (Cause::HostBusy, Hint::Compile), "{}", g.evidence);
        // An NVRTC call of another thread of the process inside the gap is a compile.
        let mut t = busy_sampled(0, "-", "-");
        t.push(MAIN, LaneKind::CudaApi { tid: 101 }, &[(2 * MS, 5 * MS, "nvrtcCompileProgram", 9)]);
        assert_eq!(t.gap().hint, Hint::Compile);
        // The same call before the gap compiled nothing in it.
        let mut t = busy_sampled(0, "-", "-");
        t.push(MAIN, LaneKind::CudaApi { tid: 101 }, &[(MS / 4, MS / 2, "nvrtcCompileProgram", 9)]);
        assert_eq!(t.gap().hint, Hint::None);
    }

    #[test]
    fn a_gil_wait_is_read_from_the_samples_where_the_waits_have_no_backtraces() {
        // Main waits in short condition waits with no backtrace (no OSRT_GIL flag) for
        // most of the gap, on CPU for 20 µs between them; the pin-memory thread runs
        // throughout. `gil_sample`: one sample of main in that moment takes the GIL.
        let t = |gil_sample: bool| {
            let mut t = T::new()
                .on(MAIN, MAIN, 0, &[(0, MS), (5 * MS, 5 * MS + 20_000)])
                .on(MAIN, 101, 1, &[(MS, 10 * MS)])
                .os(
                    MAIN,
                    MAIN,
                    &[(MS, 5 * MS, "pthread_cond_timedwait"), (5 * MS + 20_000, 10 * MS - 30_000, "futex")],
                );
            t.0.threads.push(Thread { pid: MAIN, tid: 101, name: "pt_data_pin".to_string() });
            let sym = t.0.strings.intern("take_gil");
            let module = t.0.strings.intern("python3.12");
            let mut ev = Events::default();
            let flags = SampleFlags::pack(0, 1) | if gil_sample { crate::model::SAMPLE_GIL } else { 0 };
            ev.push(5 * MS + 10_000, 5 * MS + 10_000, sym, None, Some(module.into()), Some(flags));
            t.0.lanes.push(Lane::new(LaneKind::Samples { tid: MAIN }, MAIN, ev));
            t.gap()
        };
        let g = t(true);
        assert_eq!((g.cause, g.hint), (Cause::WorkerBusy, Hint::Gil), "{}", g.evidence);
        assert!(g.evidence.contains("GIL contention") && g.evidence.contains("pt_data_pin"), "{}", g.evidence);
        // Without the sample nothing says the waits were for the GIL: the wait follows to
        // the pin-memory thread, no hint.
        let g = t(false);
        assert_eq!((g.cause, g.hint), (Cause::WorkerBusy, Hint::None), "{}", g.evidence);
    }

    #[test]
    fn short_waits_between_gil_waits_with_backtraces_wait_for_the_gil_too() {
        // Main waits 3 ms for the GIL in a condition wait whose backtrace takes it (under half
        // of the 9 ms gap), then in 40 condition waits of 70 µs, too short to have a
        // backtrace, on CPU for 30 µs between them; the pin-memory thread runs throughout.
        // `first_gil`: the long wait has the GIL backtrace; `long_rest`: the short waits are
        // one long wait instead, whose own backtrace (it is long enough to have one) holds
        // no GIL frame.
        let short: Vec<(Ns, Ns)> = (0..40).map(|k| (4 * MS + k * 100_000, 4 * MS + k * 100_000 + 70_000)).collect();
        let t = |first_gil: bool, long_rest: bool| {
            let rest = if long_rest { vec![(4 * MS, 4 * MS + 40 * 70_000)] } else { short.clone() };
            let mut on = vec![(0, MS)];
            on.extend(rest.windows(2).map(|w| (w[0].1, w[1].0)));
            on.push((rest[rest.len() - 1].1, 10 * MS));
            let mut t = T::new().on(MAIN, MAIN, 0, &on).on(MAIN, 101, 1, &[(MS, 10 * MS)]);
            let id = t.0.strings.intern("pthread_cond_timedwait");
            let mut ev = Events::default();
            let flag = if first_gil { crate::model::OSRT_GIL } else { 0 };
            ev.push(MS, 4 * MS, id, None, None, Some(flag));
            for &(a, b) in &rest {
                ev.push(a, b, id, None, None, Some(0));
            }
            t.0.lanes.push(Lane::new(LaneKind::Osrt { tid: MAIN }, MAIN, ev));
            t.0.threads.push(Thread { pid: MAIN, tid: 101, name: "pt_data_pin".to_string() });
            t.gap()
        };
        let g = t(true, false);
        assert_eq!((g.cause, g.hint), (Cause::WorkerBusy, Hint::Gil), "{}", g.evidence);
        let waited = format!("waited {} ({} in a wait", fmt_ns(3 * MS + 40 * 70_000), fmt_ns(3 * MS));
        assert!(g.evidence.contains(&waited) && g.evidence.contains("pt_data_pin"), "{}", g.evidence);
        // No wait with a GIL backtrace (and no samples): nothing says the waits were for
        // the GIL; the wait follows to the pin-memory thread, no hint.
        let g = t(false, false);
        assert_eq!((g.cause, g.hint), (Cause::WorkerBusy, Hint::None), "{}", g.evidence);
        // A long wait whose backtrace holds no GIL frame waited for something else.
        let g = t(true, true);
        assert_eq!((g.cause, g.hint), (Cause::WorkerBusy, Hint::None), "{}", g.evidence);
    }

    #[test]
    fn openmp_spinning_is_named_by_the_samples_in_libgomp() {
        let g = busy_sampled(20, "gomp_barrier_wait_end", "/usr/lib/x86_64-linux-gnu/libgomp.so.1").gap();
        assert_eq!((g.cause, g.hint), (Cause::HostBusy, Hint::OpenMp), "{}", g.evidence);
        assert_eq!(crate::analysis::Fix::for_gaps(g.cause, g.hint), crate::analysis::Fix::TameOpenMp);
        let g = busy_sampled(20, "_PyEval_EvalFrameDefault", "python3.12").gap();
        assert_eq!(g.hint, Hint::None, "{}", g.evidence);
        // Too few samples to say what the thread ran.
        let g = busy_sampled(MIN_SAMPLES - 1, "gomp_barrier_wait_end", "libgomp.so.1").gap();
        assert_eq!(g.hint, Hint::None, "{}", g.evidence);
    }

    // The gap of `t` after rule 6, then the new-shapes mechanism, the gap in `window`.
    fn shaped(t: &T, window: crate::analysis::Window) -> Gap {
        let mut gaps = vec![t.gap()];
        gaps[0].window = window;
        crate::analysis::shapes::name(&t.0, &HostIndex::build(&t.0), &mut gaps);
        gaps.pop().unwrap()
    }

    // Host-busy main thread with `n` samples in `module` and a module load in [a, b).
    fn loading(n: usize, module: &str, load: Option<(Ns, Ns)>) -> T {
        let mut t = busy_sampled(n, "0x7f5c4bf2150d", module);
        // The thread's samples count from its last CUDA call before the load.
        let mut calls = vec![(MS / 2, MS / 2 + 10_000, "cudaLaunchKernel", 1)];
        calls.extend(load.map(|(a, b)| (a, b, "cuLibraryLoadData", 0)));
        t.push(MAIN, LaneKind::CudaApi { tid: MAIN }, &calls);
        t
    }

    #[test]
    fn a_kernel_chosen_by_cublas_and_loaded_lazily_in_the_loop_is_a_new_shape() {
        use crate::analysis::Window;
        let lt = "/site-packages/nvidia/cu13/lib/libcublasLt.so.13";
        // 8.9 ms of host work in cuBLASLt, then a 40 µs load of the chosen kernel.
        let load = Some((9 * MS + 900_000, 9 * MS + 940_000));
        let g = shaped(&loading(20, lt, load), Window::Steady);
        assert_eq!((g.cause, g.hint), (Cause::HostBusy, Hint::NewShapes), "{}", g.evidence);
        assert!(g.evidence.contains("then loaded lazily (cuLibraryLoadData 40.0 µs)"), "{}", g.evidence);
        assert!(
            g.evidence
                .contains("20 of this thread's 20 samples in the host work before its kernel loads in libcublasLt"),
            "{}",
            g.evidence
        );
        assert_eq!(crate::analysis::Fix::for_gaps(g.cause, g.hint), crate::analysis::Fix::NewShapes);
        // cuDNN's host code (autotuning, heuristics) is the same mechanism.
        assert_eq!(
            shaped(&loading(20, "libcudnn_engines_precompiled.so.9", load), Window::Steady).hint,
            Hint::NewShapes
        );
        // Start-up's first shapes are start-up.
        assert_eq!(shaped(&loading(20, lt, load), Window::Startup).hint, Hint::None);
        // No load in the gap: library work with its kernels already loaded says no new shape.
        assert_eq!(shaped(&loading(20, lt, None), Window::Steady).hint, Hint::None);
        // The load is the gap (a first launch's lazy load of a large module): not a choice.
        let long = Some((2 * MS, 10 * MS - 30_000));
        assert_eq!(shaped(&loading(20, lt, long), Window::Steady).hint, Hint::None);
        // Python's own work before a load, or too few samples to say: no library chose.
        assert_eq!(shaped(&loading(20, "python3.12", load), Window::Steady).hint, Hint::None);
        assert_eq!(shaped(&loading(MIN_SAMPLES - 1, lt, load), Window::Steady).hint, Hint::None);
    }

    #[test]
    fn compilers_are_named_by_their_tool_not_by_a_part_of_a_name() {
        for n in ["ptxas", "cicc", "nvcc", "gcc-real", "x86_64-linux-gnu-gcc-12", "cc1", "cc1plus", "/usr/bin/g++"] {
            assert!(is_compiler(n), "{n}");
        }
        for n in ["libgcc_s.so.1", "python3", "triton", "pt_autograd_0", "inductor_worker", "gccgo-helper"] {
            assert!(!is_compiler(n), "{n}");
        }
    }

    #[test]
    fn without_host_data_nothing_changes() {
        let g = T::new().os(MAIN, MAIN, &[(MS, 10 * MS - 30_000, "poll")]).gap();
        assert_eq!((g.cause, g.host.is_none()), (Cause::HostWait, true));
    }

    #[test]
    fn the_tree_is_the_process_and_later_higher_pids() {
        let t = T::new().on(MAIN, MAIN, 0, &[(0, MS)]).on(WORKER, WORKER, 1, &[(MS, 2 * MS)]).on(50, 50, 1, &[(0, MS)]);
        assert_eq!(process_tree(&t.0, MAIN), vec![MAIN, WORKER]);
    }
}
