//! GPU idle gaps and their causes.
//!
//! A gap is an idle stretch of at least `min_gap` between two busy intervals of one GPU
//! (all streams, kernels, copies and memsets merged; nothing before the first or after
//! the last operation). Its cause comes from one CPU thread, the *deciding thread*:
//!
//! 1. The GPU operation that ends the gap (starts at its end) is looked up; its CUDA API
//!    call, matched by (process, correlation id), gives the deciding thread: the GPU was
//!    waiting for that thread to launch it. The gap's `pid` is that operation's process.
//!    Without a match, the deciding thread is the process's main launcher: the thread
//!    with the most launch, copy and memset calls.
//! 2. If that launching call had already returned when the gap began, the work was queued
//!    and the GPU waited on something else (a stream or event dependency): `unknown`,
//!    with the call as evidence.
//! 3. Otherwise the time of the gap on the deciding thread is split, each instant
//!    counted once, with this precedence:
//!    - *pageable-copy*: inside a memcpy API call (sync or async) whose copy has a
//!      pageable side;
//!    - *sync-wait*: inside a synchronize call (`ApiKind::Sync`) or another synchronous
//!      memcpy call;
//!    - *launch*: inside a launch, memset or (non-pageable) async copy call;
//!    - *other API*: inside any other CUDA call (module loading, allocation, ...);
//!    - *OS wait*: inside a blocking OS runtime call (`poll`, `select`, `epoll_wait`,
//!      `futex`, `pthread_cond_*wait`, `pthread_join`, pthread mutex/rwlock locks,
//!      `sem_*wait`, `*sleep`, `read`/`recv`/`accept`, `waitpid`/`wait4`...): waiting for
//!      another thread or process;
//!    - *OS work*: inside any other OS runtime call (munmap, ioctl, open...);
//!    - *no call*: none of the above.
//! 4. Scores: sync-wait = sync-wait time; pageable-copy = pageable time; host-wait = OS
//!    wait time; launch-bound = launch time in a *short* gap (at most
//!    [`LAUNCH_BOUND_MAX_NS`]); host-busy = other API + OS work + no call + launch time
//!    in a longer gap (a long launch call is driver work such as lazy module loading).
//!    When the process has no OS runtime trace at all, *no call* time goes to `unknown`
//!    instead (an untraced thread may as well be blocked). The largest score wins; ties
//!    go to the earlier cause in [`Cause::ALL`].
//! 5. A short gap whose winner is host-busy or unknown becomes `launch-bound` when the
//!    deciding thread issued the call that launched the op ending it inside the gap and
//!    spent at most half of the gap in non-launch CUDA calls and OS calls: the host
//!    issues launches slower than the GPU runs them.
//!
//! `evidence` names the longest call of the winning category overlapping the gap (with
//! its full duration, thread name and tid), or the uncovered time for *no call*.
//! `phase` is the innermost NVTX range (grouped name unless exact names are asked for)
//! that covers the gap start on the deciding thread, else on the process's main thread.
//!
//! Step 3 looks only at the calls that overlap the gap, found by searching the thread's
//! lanes from where the previous gap's search ended, and sweeps them once in time
//! order: the cost is that of the calls inside gaps, with no per-thread copy of the calls.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::index::{ApiCall, Hints, Index};
use super::names::phase_name;
use super::{Cause, DeviceActivity, Gap, Options};
use crate::model::{ApiKind, LaneKind, MemFlags, Ns, StrId, Trace};
use crate::units::fmt_ns;

/// Longest gap that can be called launch-bound: 1 ms.
pub const LAUNCH_BOUND_MAX_NS: Ns = 1_000_000;

// How far back from the gap start to look for calls that began before it (calls of one
// thread rarely nest deeper than runtime -> driver).
const LOOKBACK: usize = 64;

// Rows per block of the running maximum of ends kept for lanes whose calls overlap.
const MAX_END_BLOCK: usize = 64;

/// What a thread was doing at an instant, in precedence order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Act {
    Pageable,
    Sync,
    Launch,
    ApiOther,
    OsWait,
    OsBusy,
}

const ACTS: [Act; 6] = [Act::Pageable, Act::Sync, Act::Launch, Act::ApiOther, Act::OsWait, Act::OsBusy];

/// True for OS runtime calls that block waiting for another thread, a process or I/O.
pub fn is_blocking_os_call(name: &str) -> bool {
    const EXACT: &[&str] = &[
        "read",
        "readv",
        "pread",
        "pread64",
        "preadv",
        "fread",
        "recv",
        "recvfrom",
        "recvmsg",
        "recvmmsg",
        "accept",
        "accept4",
        "futex",
        "pthread_join",
        "msgrcv",
        "pause",
        "flock",
        "lockf",
        "fsync",
        "fdatasync",
    ];
    const PARTS: &[&str] = &["wait", "poll", "select", "sleep", "_lock", "sigsuspend"];
    EXACT.contains(&name)
        || (PARTS.iter().any(|p| name.contains(p)) && !name.contains("unlock") && !name.contains("trylock"))
}

/// Per-trace state shared by all gaps: lanes by thread, cached name classes and search
/// positions. Nothing in it grows with the number of events but the running maxima of
/// ends of lanes whose calls overlap (one value per 64 calls).
struct Ctx<'a> {
    trace: &'a Trace,
    index: &'a Index,
    options: &'a Options,
    // Lanes of each thread, sorted by (pid, tid).
    lanes: Vec<((u32, u32), ThreadLanes)>,
    os_traced: Vec<u32>,
    // GPU lanes of each device.
    gpu_lanes: Vec<(u32, Vec<usize>)>,
    // Per lane: max end over blocks 0..=k of MAX_END_BLOCK rows; empty for disjoint lanes.
    max_end: Vec<Vec<Ns>>,
    // Per name id: 0 not seen yet, 1 not blocking, 2 blocking (OS call names).
    blocking: Vec<u8>,
    launcher: HashMap<u32, Option<u32>>,
    // Search positions in start columns and in corr columns.
    starts: Hints,
    corrs: Hints,
    // Calls overlapping the current gap, reused.
    calls: Vec<(Ns, Ns, Act)>,
}

#[derive(Debug, Default)]
struct ThreadLanes {
    api: Option<usize>,
    os: Option<usize>,
    nvtx: Vec<usize>,
}

impl<'a> Ctx<'a> {
    fn new(trace: &'a Trace, index: &'a Index, options: &'a Options) -> Self {
        let mut lanes: HashMap<(u32, u32), ThreadLanes> = HashMap::new();
        let mut gpu_lanes: Vec<(u32, Vec<usize>)> = Vec::new();
        let mut max_end = vec![Vec::new(); trace.lanes.len()];
        let mut os_traced = Vec::new();
        for (i, l) in trace.lanes.iter().enumerate() {
            if let Some(d) = l.kind.device() {
                match gpu_lanes.iter_mut().find(|(x, _)| *x == d) {
                    Some((_, v)) => v.push(i),
                    None => gpu_lanes.push((d, vec![i])),
                }
            }
            let Some(tid) = l.kind.tid() else { continue };
            let e = lanes.entry((l.pid, tid)).or_default();
            match l.kind {
                LaneKind::CudaApi { .. } => e.api = Some(i),
                LaneKind::Osrt { .. } => {
                    e.os = Some(i);
                    os_traced.push(l.pid);
                }
                LaneKind::Nvtx { .. } | LaneKind::NvtxStartEnd { .. } => e.nvtx.push(i),
                _ => {}
            }
            if matches!(l.kind, LaneKind::CudaApi { .. } | LaneKind::Osrt { .. }) && !l.disjoint {
                max_end[i] = running_max_end(&l.ev.end);
            }
        }
        os_traced.sort_unstable();
        os_traced.dedup();
        let mut lanes: Vec<_> = lanes.into_iter().collect();
        lanes.sort_unstable_by_key(|&(k, _)| k);
        Self {
            trace,
            index,
            options,
            lanes,
            os_traced,
            gpu_lanes,
            max_end,
            blocking: vec![0; trace.strings.len()],
            launcher: HashMap::new(),
            starts: Hints::new(trace),
            corrs: Hints::new(trace),
            calls: Vec::new(),
        }
    }

    // Category of API call `i` of lane `li`.
    fn api_act(&mut self, li: usize, i: usize) -> Act {
        let lane = &self.trace.lanes[li];
        let kind = ApiKind::from_flags(lane.ev.flags(i));
        let mut pageable = || {
            self.index
                .copy_flags(self.trace, lane.pid, lane.ev.corr(i), &mut self.corrs)
                .is_some_and(MemFlags::is_pageable)
        };
        match kind {
            ApiKind::MemcpySync | ApiKind::MemcpyAsync if pageable() => Act::Pageable,
            ApiKind::MemcpySync | ApiKind::Sync => Act::Sync,
            ApiKind::Launch | ApiKind::Memset | ApiKind::MemcpyAsync => Act::Launch,
            ApiKind::Other => Act::ApiOther,
        }
    }

    fn os_act(&mut self, li: usize, i: usize) -> Act {
        let name = self.trace.lanes[li].ev.name[i] as usize;
        if self.blocking.len() <= name {
            self.blocking.resize(name + 1, 0);
        }
        if self.blocking[name] == 0 {
            self.blocking[name] = 1 + u8::from(is_blocking_os_call(self.trace.strings.get(name as StrId)));
        }
        if self.blocking[name] == 2 { Act::OsWait } else { Act::OsBusy }
    }

    fn thread(&self, pid: u32, tid: u32) -> Option<&ThreadLanes> {
        thread_of(&self.lanes, pid, tid)
    }

    fn act(&mut self, li: usize, i: usize) -> Act {
        if matches!(self.trace.lanes[li].kind, LaneKind::CudaApi { .. }) {
            self.api_act(li, i)
        } else {
            self.os_act(li, i)
        }
    }

    // API and OS lanes of a thread.
    fn thread_lanes(&self, pid: u32, tid: u32) -> (Option<usize>, Option<usize>) {
        self.thread(pid, tid).map_or((None, None), |l| (l.api, l.os))
    }

    // Rows of lane `li` starting before `t`.
    fn starting_before(&mut self, li: usize, t: Ns) -> usize {
        self.starts.find(li, &self.trace.lanes[li].ev.start, |&s| s < t)
    }

    // Rows of lane `li` that may overlap `[a, b)`: every row that does is in the range.
    fn overlapping(&mut self, li: usize, a: Ns, b: Ns) -> std::ops::Range<usize> {
        let lo = self.starting_before(li, a);
        let hi = self.starting_before(li, b);
        let ev = &self.trace.lanes[li].ev;
        let first = match &self.max_end[li] {
            // No overlaps: only the last row starting before `a` can reach into it.
            m if m.is_empty() => lo - usize::from(lo > 0 && ev.end[lo - 1] > a),
            m => m.partition_point(|&e| e <= a) * MAX_END_BLOCK,
        };
        first.min(lo)..hi
    }

    // Time of each activity in `[a, b)` on a thread, each instant counted once, for
    // the earliest activity in precedence order that covers it.
    fn act_times(&mut self, api: Option<usize>, os: Option<usize>, a: Ns, b: Ns) -> [Ns; 6] {
        let trace = self.trace;
        let mut calls = std::mem::take(&mut self.calls);
        calls.clear();
        for li in api.into_iter().chain(os) {
            let ev = &trace.lanes[li].ev;
            for i in self.overlapping(li, a, b) {
                if ev.end[i] > a && ev.end[i] > ev.start[i] {
                    calls.push((ev.start[i], ev.end[i], self.act(li, i)));
                }
            }
        }
        // Two sorted runs: the stable sort merges them in linear time.
        calls.sort_by_key(|c| c.0);
        let t = sweep(&calls, a, b);
        self.calls = calls;
        t
    }

    // The thread of `pid` with the most launch, copy and memset calls.
    fn main_launcher(&mut self, pid: u32) -> Option<u32> {
        if let Some(&t) = self.launcher.get(&pid) {
            return t;
        }
        let best = self
            .lanes
            .iter()
            .filter(|&&((p, _), _)| p == pid)
            .filter_map(|((_, tid), l)| Some((*tid, &self.trace.lanes[l.api?].ev)))
            .map(|(tid, ev)| {
                let n = (0..ev.len())
                    .filter(|&i| !matches!(ApiKind::from_flags(ev.flags(i)), ApiKind::Other | ApiKind::Sync))
                    .count();
                (n, std::cmp::Reverse(tid))
            })
            .max()
            .map(|(_, std::cmp::Reverse(tid))| tid);
        self.launcher.insert(pid, best);
        best
    }

    // (pid, correlation id) of an operation of `device` starting exactly at `t`.
    fn op_starting_at(&mut self, device: u32, t: Ns) -> Option<(u32, u32)> {
        let trace = self.trace;
        let lanes = device_lanes(&self.gpu_lanes, device);
        lanes.iter().find_map(|&li| {
            let l = &trace.lanes[li];
            let i = self.starts.find(li, &l.ev.start, |&s| s < t);
            (i < l.ev.len() && l.ev.start[i] == t).then(|| (l.pid, l.ev.corr(i)))
        })
    }

    // The API call that launched the operation of `device` starting at `t`.
    fn launch_of_op_at(&mut self, device: u32, t: Ns) -> (Option<(u32, u32)>, Option<ApiCall>) {
        let op = self.op_starting_at(device, t);
        let call = op.and_then(|(p, corr)| self.index.api_call(self.trace, p, corr, &mut self.corrs));
        (op, call)
    }
}

fn thread_of(lanes: &[((u32, u32), ThreadLanes)], pid: u32, tid: u32) -> Option<&ThreadLanes> {
    let i = lanes.binary_search_by_key(&(pid, tid), |&(k, _)| k).ok()?;
    Some(&lanes[i].1)
}

fn device_lanes(gpu_lanes: &[(u32, Vec<usize>)], device: u32) -> &[usize] {
    gpu_lanes.iter().find(|(d, _)| *d == device).map_or(&[], |(_, v)| v.as_slice())
}

// Max end of rows 0..=k * MAX_END_BLOCK + MAX_END_BLOCK - 1, per block k.
fn running_max_end(end: &[Ns]) -> Vec<Ns> {
    let mut m = Ns::MIN;
    end.chunks(MAX_END_BLOCK)
        .map(|c| {
            m = c.iter().fold(m, |a, &e| a.max(e));
            m
        })
        .collect()
}

// Time of each activity in `[a, b)` for calls sorted by start, all overlapping it.
fn sweep(calls: &[(Ns, Ns, Act)], a: Ns, b: Ns) -> [Ns; 6] {
    let mut out = [0; 6];
    let mut open = [0u32; 6];
    let mut ends: BinaryHeap<Reverse<(Ns, Act)>> = BinaryHeap::new();
    let mut next = calls.iter().peekable();
    let mut now = a;
    loop {
        let ns = next.peek().map_or(Ns::MAX, |c| c.0.max(a));
        let ne = ends.peek().map_or(Ns::MAX, |r| r.0.0);
        let t = ns.min(ne).min(b);
        if let Some(w) = open.iter().position(|&n| n > 0) {
            out[w] += t - now;
        }
        now = t;
        if t == b {
            return out;
        }
        if ne <= ns {
            if let Some(Reverse((_, act))) = ends.pop() {
                open[act as usize] -= 1;
            }
        } else if let Some(&(_, e, act)) = next.next() {
            open[act as usize] += 1;
            ends.push(Reverse((e, act)));
        }
    }
}

/// Idle gaps of at least `options.min_gap_ns` on every GPU, sorted by start, with causes.
pub fn find(trace: &Trace, devices: &[DeviceActivity], index: &Index, options: &Options) -> Vec<Gap> {
    Explainer::new(trace, index, options).find(devices)
}

/// Finds and explains gaps; keeps what it learned about lanes, so that parts of gaps
/// can be explained again cheaply (the starvation finding clips gaps to the steps: a gap
/// that starts before a step may have a different cause inside it).
pub struct Explainer<'a> {
    ctx: Ctx<'a>,
}

impl<'a> Explainer<'a> {
    /// An explainer over `trace`.
    pub fn new(trace: &'a Trace, index: &'a Index, options: &'a Options) -> Self {
        Self { ctx: Ctx::new(trace, index, options) }
    }

    /// Gaps of every device, sorted by start, with causes.
    pub fn find(&mut self, devices: &[DeviceActivity]) -> Vec<Gap> {
        let trace = self.ctx.trace;
        let mut gaps = Vec::new();
        for d in devices {
            let fallback_pid = busiest_pid(trace, device_lanes(&self.ctx.gpu_lanes, d.device));
            for (start, end) in d.busy.gaps(self.ctx.options.min_gap_ns) {
                let (op, call) = self.ctx.launch_of_op_at(d.device, end);
                let pid = op.map_or(fallback_pid, |(p, _)| p);
                gaps.push(explain(&mut self.ctx, d.device, pid, call, start, end));
            }
        }
        gaps.sort_by_key(|g| (g.start, g.device));
        gaps
    }

    /// Cause and phase of the part `[start, end)` of `gap`, decided by the thread that
    /// launched the operation ending the gap. Cheapest when parts come in time order.
    pub fn part(&mut self, gap: &Gap, start: Ns, end: Ns) -> (Cause, Option<String>) {
        if (start, end) == (gap.start, gap.end) {
            return (gap.cause, gap.phase.clone());
        }
        let (_, call) = self.ctx.launch_of_op_at(gap.device, gap.end);
        let ctx = &mut self.ctx;
        let (pid, tid) = (gap.pid, call.map(|c| c.tid).or_else(|| ctx.main_launcher(gap.pid)));
        let Some(tid) = tid else { return (Cause::Unknown, phase_at(ctx, pid, pid, start)) };
        let phase = phase_at(ctx, pid, tid, start);
        if call.is_some_and(|c| c.end <= start) {
            return (Cause::Unknown, phase);
        }
        let launched_inside = call.is_some_and(|c| (start..end).contains(&c.start));
        (score(ctx, pid, tid, start, end, launched_inside).cause, phase)
    }
}

// The process with the most operations on these GPU lanes.
fn busiest_pid(trace: &Trace, gpu_lanes: &[usize]) -> u32 {
    let mut by_pid: HashMap<u32, usize> = HashMap::new();
    for &li in gpu_lanes {
        *by_pid.entry(trace.lanes[li].pid).or_default() += trace.lanes[li].ev.len();
    }
    by_pid.into_iter().max_by_key(|&(p, n)| (n, std::cmp::Reverse(p))).map_or(0, |(p, _)| p)
}

fn explain(ctx: &mut Ctx<'_>, device: u32, pid: u32, call: Option<ApiCall>, start: Ns, end: Ns) -> Gap {
    let mut gap = Gap { device, pid, start, end, cause: Cause::Unknown, evidence: String::new(), phase: None };
    let tid = call.map(|c| c.tid).or_else(|| ctx.main_launcher(pid));
    let Some(tid) = tid else {
        gap.evidence = format!("no CUDA API calls traced for process {pid}");
        gap.phase = phase_at(ctx, pid, pid, start);
        return gap;
    };
    gap.phase = phase_at(ctx, pid, tid, start);
    if let Some(c) = call.filter(|c| c.end <= start) {
        let name = ctx.trace.strings.get(ctx.trace.lanes[c.at.lane as usize].ev.name[c.at.idx as usize]);
        gap.evidence = format!(
            "work was queued {} before the gap by {name} on {}: waiting on a stream or event dependency",
            fmt_ns(start - c.end),
            ctx.trace.thread_label(pid, tid)
        );
        return gap;
    }
    let inside = call.filter(|c| (start..end).contains(&c.start));
    let s = score(ctx, pid, tid, start, end, inside.is_some());
    gap.cause = s.cause;
    let launcher =
        inside.map(|c| ctx.trace.strings.get(ctx.trace.lanes[c.at.lane as usize].ev.name[c.at.idx as usize]));
    gap.evidence = evidence(ctx, pid, tid, (start, end), &s, launcher);
    gap
}

// The winning cause of a gap and the times its evidence quotes.
struct Score {
    cause: Cause,
    // Time outside any call.
    none: Ns,
    // `none` counted as host-busy (the process has an OS runtime trace) or unknown.
    busy_none: Ns,
    unknown: Ns,
    // Time in calls counted as host-busy.
    busy_calls: Ns,
}

// Steps 3-5 of the module rule, for the deciding thread over [start, end).
fn score(ctx: &mut Ctx<'_>, pid: u32, tid: u32, start: Ns, end: Ns, launched_inside: bool) -> Score {
    let (api, os) = ctx.thread_lanes(pid, tid);
    let times = ctx.act_times(api, os, start, end);
    let t = |act: Act| times[act as usize];
    let dur = end - start;
    let short = dur <= LAUNCH_BOUND_MAX_NS;
    let none = dur - ACTS.iter().map(|&x| t(x)).sum::<Ns>();
    let (busy_none, unknown) = if ctx.os_traced.binary_search(&pid).is_ok() { (none, 0) } else { (0, none) };
    // A long launch call is driver work (lazy module loading...), not launch overhead.
    let (launch, slow_launch) = if short { (t(Act::Launch), 0) } else { (0, t(Act::Launch)) };
    let busy_calls = t(Act::ApiOther) + t(Act::OsBusy) + slow_launch;
    let scores = [
        (Cause::SyncWait, t(Act::Sync)),
        (Cause::PageableCopy, t(Act::Pageable)),
        (Cause::HostWait, t(Act::OsWait)),
        (Cause::HostBusy, busy_calls + busy_none),
        (Cause::LaunchBound, launch),
        (Cause::Unknown, unknown),
    ];
    // max_by_key keeps the last maximum: iterate in reverse so ties go to the earlier cause.
    let (mut cause, _) = scores.iter().rev().copied().max_by_key(|&(_, s)| s).unwrap_or((Cause::Unknown, 0));
    let calls = t(Act::ApiOther) + t(Act::OsBusy) + t(Act::OsWait);
    if matches!(cause, Cause::HostBusy | Cause::Unknown) && short && launched_inside && 2 * calls <= dur {
        cause = Cause::LaunchBound;
    }
    Score { cause, none, busy_none, unknown, busy_calls }
}

// The evidence line of a scored gap.
fn evidence(
    ctx: &mut Ctx<'_>,
    pid: u32,
    tid: u32,
    (start, end): (Ns, Ns),
    s: &Score,
    launcher: Option<&str>,
) -> String {
    let who = || ctx.trace.thread_label(pid, tid);
    let dur = end - start;
    match s.cause {
        Cause::SyncWait => longest_call(ctx, pid, tid, &[Act::Sync], start, end),
        Cause::PageableCopy => longest_call(ctx, pid, tid, &[Act::Pageable], start, end),
        Cause::HostWait => longest_call(ctx, pid, tid, &[Act::OsWait], start, end),
        Cause::LaunchBound => launch_evidence(ctx, pid, tid, (start, end), s.none, launcher),
        Cause::HostBusy if s.busy_none < s.busy_calls => {
            longest_call(ctx, pid, tid, &[Act::ApiOther, Act::OsBusy, Act::Launch], start, end)
        }
        Cause::HostBusy => format!("no CUDA or OS call for {} of {} on {}", fmt_ns(s.busy_none), fmt_ns(dur), who()),
        Cause::Unknown => {
            format!("no OS runtime trace; {} of {} outside CUDA calls on {}", fmt_ns(s.unknown), fmt_ns(dur), who())
        }
    }
}

// Rows of lane `li` that may overlap [start, end): those starting inside, and up to
// LOOKBACK before.
fn candidates(ctx: &mut Ctx<'_>, li: usize, start: Ns, end: Ns) -> std::ops::Range<usize> {
    let lo = ctx.starting_before(li, start);
    let hi = ctx.starting_before(li, end);
    lo.saturating_sub(LOOKBACK)..hi
}

// The longest call of one of `acts` overlapping the gap, as `name 1.2 ms on thread`.
fn longest_call(ctx: &mut Ctx<'_>, pid: u32, tid: u32, acts: &[Act], start: Ns, end: Ns) -> String {
    let trace = ctx.trace;
    let (api, os) = ctx.thread_lanes(pid, tid);
    let mut best: Option<(Ns, usize, usize)> = None;
    for li in api.into_iter().chain(os) {
        let ev = &trace.lanes[li].ev;
        for i in candidates(ctx, li, start, end) {
            let d = ev.dur(i);
            if ev.end[i] > start && best.is_none_or(|(b, _, _)| d > b) && acts.contains(&ctx.act(li, i)) {
                best = Some((d, li, i));
            }
        }
    }
    let who = trace.thread_label(pid, tid);
    match best {
        Some((d, li, i)) => format!("{} {} on {who}", trace.strings.get(trace.lanes[li].ev.name[i]), fmt_ns(d)),
        None => format!("calls nested in longer ones on {who}"),
    }
}

fn launch_evidence(
    ctx: &mut Ctx<'_>,
    pid: u32,
    tid: u32,
    (start, end): (Ns, Ns),
    outside: Ns,
    launcher: Option<&str>,
) -> String {
    let trace = ctx.trace;
    let mut n = 0;
    if let (Some(li), _) = ctx.thread_lanes(pid, tid) {
        let ev = &trace.lanes[li].ev;
        n = candidates(ctx, li, start, end).filter(|&i| ev.start[i] >= start && ev.start[i] < end).count();
    }
    let then = launcher.map_or_else(String::new, |l| format!(", then {l} launched the next op"));
    format!(
        "{} of CPU work between {n} CUDA call{}{then}, in a {} gap on {}",
        fmt_ns(outside),
        if n == 1 { "" } else { "s" },
        fmt_ns(end - start),
        trace.thread_label(pid, tid)
    )
}

// Innermost NVTX range covering `t` on thread `tid`, else on the main thread.
fn phase_at(ctx: &mut Ctx<'_>, pid: u32, tid: u32, t: Ns) -> Option<String> {
    let trace = ctx.trace;
    let mut on = |tid: u32| -> Option<String> {
        let lanes = &thread_of(&ctx.lanes, pid, tid)?.nvtx;
        let mut best: Option<(Ns, StrId)> = None;
        for &li in lanes {
            let ev = &trace.lanes[li].ev;
            // Ranges of one NVTX lane do not overlap: only the last one starting at or
            // before `t` can cover it.
            let i = ctx.starts.find(li, &ev.start, |&s| s <= t);
            if i > 0 && ev.end[i - 1] > t && best.is_none_or(|(s, _)| ev.start[i - 1] >= s) {
                best = Some((ev.start[i - 1], ev.name[i - 1]));
            }
        }
        best.map(|(_, n)| phase_name(trace.strings.get(n), ctx.options.exact_names).into_owned())
    };
    on(tid).or_else(|| if tid == pid { None } else { on(pid) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::find_gaps;
    use crate::model::{Events, Lane, MemClass, MemFlags, Thread};
    use proptest::prelude::*;

    const MS: Ns = 1_000_000;
    const PID: u32 = 100;

    // A trace built row by row: (start, end, name, corr) per lane.
    struct Builder(Trace);

    impl Builder {
        fn new() -> Self {
            let mut t = Trace { strings: crate::model::Strings::new(), ..Trace::default() };
            for (tid, name) in [(100, "python3"), (101, "pt_data_worker")] {
                t.threads.push(Thread { pid: PID, tid, name: name.to_string() });
            }
            Self(t)
        }

        fn lane(mut self, kind: LaneKind, rows: &[(Ns, Ns, &str, u32)]) -> Self {
            let mut ev = Events::default();
            for &(s, e, name, corr) in rows {
                let id = self.0.strings.intern(name);
                match kind {
                    LaneKind::CudaApi { .. } => {
                        ev.push(s, e, id, Some(corr), None, Some(ApiKind::classify(name) as u32));
                    }
                    LaneKind::Memory { .. } => ev.push(s, e, id, Some(corr), Some(1000), Some(MemFlags::pack(1, 0, 2))),
                    LaneKind::Kernels { .. } => ev.push(s, e, id, Some(corr), Some(0), None),
                    _ => ev.push(s, e, id, None, None, Some(0)),
                }
            }
            self.0.lanes.push(Lane::new(kind, PID, ev));
            self
        }

        // Kernels at [0, 1 ms) and [end, end + 1 ms) on GPU 0, the second launched by
        // `cudaLaunchKernel` (corr 2) on thread 100 just before `end`.
        fn gap_until(self, end: Ns) -> Self {
            self.lane(LaneKind::Kernels { device: 0, stream: 7 }, &[(0, MS, "k1", 1), (end, end + MS, "k2", 2)])
        }

        fn gap(&self) -> Gap {
            let d = DeviceActivity::compute(&self.0, 0);
            let gaps = find_gaps(&self.0, &[d], &Options::default());
            assert_eq!(gaps.len(), 1, "{gaps:?}");
            gaps[0].clone()
        }
    }

    const API: LaneKind = LaneKind::CudaApi { tid: 100 };
    const OS: LaneKind = LaneKind::Osrt { tid: 100 };

    fn launch_at(t: Ns) -> (Ns, Ns, &'static str, u32) {
        (t - 20_000, t - 10_000, "cudaLaunchKernel", 2)
    }

    #[test]
    fn a_synchronize_across_the_gap_is_sync_wait() {
        let g = Builder::new()
            .gap_until(10 * MS)
            .lane(API, &[(MS / 2, 9 * MS, "cudaStreamSynchronize", 1), launch_at(10 * MS)])
            .lane(OS, &[(0, 10, "ioctl", 0)])
            .gap();
        assert_eq!((g.start, g.end, g.pid), (MS, 10 * MS, PID));
        assert_eq!(g.cause, Cause::SyncWait);
        assert_eq!(g.evidence, "cudaStreamSynchronize 8.50 ms on python3 (tid 100)");
    }

    #[test]
    fn an_async_copy_of_pageable_memory_is_pageable_copy() {
        // The copy runs on another GPU so that GPU 0 stays idle.
        let g = Builder::new()
            .gap_until(10 * MS)
            .lane(LaneKind::Memory { device: 1, stream: 3, class: MemClass::H2D }, &[(8 * MS, 9 * MS, "copy", 5)])
            .lane(API, &[(2 * MS, 9 * MS, "cudaMemcpyAsync", 5), launch_at(10 * MS)])
            .lane(OS, &[(0, 10, "ioctl", 0)])
            .gap();
        assert_eq!(g.cause, Cause::PageableCopy);
        assert!(g.evidence.starts_with("cudaMemcpyAsync 7.00 ms"), "{}", g.evidence);
    }

    #[test]
    fn blocking_os_calls_are_host_wait_and_other_os_calls_host_busy() {
        let wait = Builder::new()
            .gap_until(10 * MS)
            .lane(API, &[launch_at(10 * MS)])
            .lane(OS, &[(2 * MS, 8 * MS, "sem_wait", 0), (8 * MS, 9 * MS, "munmap", 0)])
            .gap();
        assert_eq!(wait.cause, Cause::HostWait);
        assert_eq!(wait.evidence, "sem_wait 6.00 ms on python3 (tid 100)");
        let busy = Builder::new()
            .gap_until(10 * MS)
            .lane(API, &[launch_at(10 * MS)])
            .lane(OS, &[(2 * MS, 4 * MS, "sem_wait", 0), (4 * MS, 9 * MS, "munmap", 0)])
            .gap();
        assert_eq!(busy.cause, Cause::HostBusy);
        assert_eq!(busy.evidence, "munmap 5.00 ms on python3 (tid 100)");
    }

    #[test]
    fn no_call_is_host_busy_with_osrt_and_unknown_without() {
        let traced =
            Builder::new().gap_until(10 * MS).lane(API, &[launch_at(10 * MS)]).lane(OS, &[(0, 10, "ioctl", 0)]).gap();
        assert_eq!(traced.cause, Cause::HostBusy);
        assert!(traced.evidence.starts_with("no CUDA or OS call for 8.99 ms of 9.00 ms"), "{}", traced.evidence);
        let untraced = Builder::new().gap_until(10 * MS).lane(API, &[launch_at(10 * MS)]).gap();
        assert_eq!(untraced.cause, Cause::Unknown);
    }

    #[test]
    fn a_short_gap_ending_with_a_launch_from_inside_is_launch_bound() {
        let end = MS + 300_000;
        let g = Builder::new().gap_until(end).lane(API, &[launch_at(end)]).lane(OS, &[(0, 10, "ioctl", 0)]).gap();
        assert_eq!(g.cause, Cause::LaunchBound);
        assert!(g.evidence.contains("between 1 CUDA call, then cudaLaunchKernel launched"), "{}", g.evidence);
        // The same gap with the launch issued before it began: the work was queued.
        let queued = Builder::new()
            .gap_until(end)
            .lane(API, &[(MS / 2, MS / 2 + 10, "cudaLaunchKernel", 2)])
            .lane(OS, &[(0, 10, "ioctl", 0)])
            .gap();
        assert_eq!(queued.cause, Cause::Unknown);
        assert!(queued.evidence.contains("queued"), "{}", queued.evidence);
    }

    #[test]
    fn the_thread_that_launched_the_next_op_decides() {
        // Thread 101 waits across the gap, but thread 100 launched the next kernel and
        // was synchronizing.
        let g = Builder::new()
            .gap_until(10 * MS)
            .lane(API, &[(MS, 9 * MS, "cudaDeviceSynchronize", 1), launch_at(10 * MS)])
            .lane(LaneKind::Osrt { tid: 101 }, &[(MS, 10 * MS, "pthread_cond_wait", 0)])
            .lane(OS, &[(0, 10, "ioctl", 0)])
            .gap();
        assert_eq!(g.cause, Cause::SyncWait);
        assert!(g.evidence.ends_with("python3 (tid 100)"));
    }

    #[test]
    fn the_phase_is_the_innermost_range_at_the_gap_start() {
        let b = Builder::new()
            .gap_until(10 * MS)
            .lane(API, &[launch_at(10 * MS)])
            .lane(LaneKind::Nvtx { tid: 100, depth: 0 }, &[(0, 20 * MS, "step 3", 0)])
            .lane(
                LaneKind::Nvtx { tid: 100, depth: 1 },
                &[(0, MS / 2, "copy data", 0), (MS / 2, 12 * MS, "forward", 0)],
            );
        assert_eq!(b.gap().phase.as_deref(), Some("forward"));
        let b = Builder::new()
            .gap_until(10 * MS)
            .lane(API, &[launch_at(10 * MS)])
            .lane(LaneKind::Nvtx { tid: 100, depth: 0 }, &[(0, 20 * MS, "step 3", 0)]);
        assert_eq!(b.gap().phase.as_deref(), Some("step N"));
        let d = DeviceActivity::compute(&b.0, 0);
        let exact = Options { exact_names: true, ..Options::default() };
        assert_eq!(find_gaps(&b.0, &[d], &exact)[0].phase.as_deref(), Some("step 3"));
    }

    #[test]
    fn blocking_calls_by_name() {
        for n in
            ["poll", "pthread_cond_timedwait", "sem_clockwait", "read", "epoll_wait", "nanosleep", "pthread_mutex_lock"]
        {
            assert!(is_blocking_os_call(n), "{n}");
        }
        for n in ["munmap", "ioctl", "open64", "pthread_mutex_unlock", "pthread_mutex_trylock", "readlink", "write"] {
            assert!(!is_blocking_os_call(n), "{n}");
        }
    }

    // What a thread does in one 100 us slot of the gap.
    #[derive(Debug, Clone, Copy, PartialEq)]
    enum Slot {
        Free,
        Api(&'static str),
        Os(&'static str),
    }

    const APIS: [&str; 4] = ["cudaStreamSynchronize", "cudaMemcpyAsync", "cudaMalloc", "cudaLaunchKernel"];
    const OSES: [&str; 3] = ["poll", "munmap", "sem_wait"];

    // Brute force: the winning cause from per-slot categories, with the rule's precedence.
    fn brute(api: &[Slot], os: &[Slot]) -> Cause {
        let mut score = [0usize; 6];
        for (a, o) in api.iter().zip(os) {
            let c = match (*a, *o) {
                (Slot::Api("cudaStreamSynchronize"), _) => Cause::SyncWait,
                (Slot::Api("cudaMemcpyAsync"), _) => Cause::PageableCopy,
                (Slot::Api(_), _) | (_, Slot::Os("munmap") | Slot::Free) => Cause::HostBusy,
                _ => Cause::HostWait,
            };
            score[c as usize] += 1;
        }
        Cause::ALL.into_iter().rev().max_by_key(|&c| score[c as usize]).unwrap()
    }

    // Runs of equal slots as rows of a lane.
    fn rows(slots: &[Slot], t0: Ns, unit: Ns, corr0: u32) -> Vec<(Ns, Ns, &'static str, u32)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < slots.len() {
            let j = (i..slots.len()).find(|&j| slots[j] != slots[i]).unwrap_or(slots.len());
            if let Slot::Api(n) | Slot::Os(n) = slots[i] {
                out.push((t0 + i as Ns * unit, t0 + j as Ns * unit, n, corr0 + i as u32));
            }
            i = j;
        }
        out
    }

    fn slots(names: &'static [&'static str], api: bool) -> impl Strategy<Value = Vec<Slot>> {
        prop::collection::vec(prop::option::weighted(0.7, prop::sample::select(names)), 30).prop_map(move |v| {
            v.into_iter()
                .map(|n| match n {
                    None => Slot::Free,
                    Some(n) if api => Slot::Api(n),
                    Some(n) => Slot::Os(n),
                })
                .collect()
        })
    }

    // Calls that overlap and nest, as (start, duration, name index).
    fn nested_calls(n: usize) -> impl Strategy<Value = Vec<(Ns, Ns, usize)>> {
        let dur = prop_oneof![6 => 0i64..30, 1 => 100i64..600];
        prop::collection::vec((0i64..600, dur, 0usize..4), 0..n)
    }

    // Precedence of the activity of each call, by name.
    fn act_of(name: &str) -> Act {
        match name {
            "cudaStreamSynchronize" => Act::Sync,
            "cudaLaunchKernel" | "cudaMemcpyAsync" => Act::Launch,
            "cudaMalloc" => Act::ApiOther,
            "poll" | "sem_wait" => Act::OsWait,
            _ => Act::OsBusy,
        }
    }

    proptest! {
        #[test]
        fn activity_times_match_brute_force(
            api in nested_calls(150),
            os in nested_calls(100),
            windows in prop::collection::vec((0i64..700, 0i64..300), 1..8),
        ) {
            let api_rows: Vec<_> =
                api.iter().enumerate().map(|(i, &(s, d, n))| (s, s + d, APIS[n], 10 + i as u32)).collect();
            let os_rows: Vec<_> = os.iter().map(|&(s, d, n)| (s, s + d, OSES[n % 3], 0)).collect();
            let b = Builder::new().lane(API, &api_rows).lane(OS, &os_rows);
            let (index, options) = (Index::build(&b.0), Options::default());
            let mut ctx = Ctx::new(&b.0, &index, &options);
            let (al, ol) = ctx.thread_lanes(PID, 100);
            for (a, w) in windows {
                let got = ctx.act_times(al, ol, a, a + w);
                let mut want = [0 as Ns; 6];
                for x in a..a + w {
                    let covering = api_rows.iter().chain(&os_rows).filter(|r| r.0 <= x && x < r.1);
                    if let Some(act) = covering.map(|r| act_of(r.2)).min() {
                        want[act as usize] += 1;
                    }
                }
                prop_assert_eq!(got, want);
            }
        }
    }

    proptest! {
        #[test]
        fn the_cause_is_the_category_covering_most_of_the_gap(api in slots(&APIS, true), os in slots(&OSES, false)) {
            // A 3.1 ms gap: 30 slots of 100 us, then 100 us for the launch of the next kernel.
            let (t0, unit, end) = (MS, 100_000, MS + 3_100_000);
            let mut api_rows = rows(&api, t0, unit, 10);
            api_rows.push((end - 60_000, end - 50_000, "cudaLaunchKernel", 2));
            // Every memcpy call gets a pageable copy on GPU 1 (which keeps GPU 0 idle).
            let copies: Vec<_> =
                api_rows.iter().filter(|r| r.2 == "cudaMemcpyAsync").map(|r| (r.0, r.1, "copy", r.3)).collect();
            let g = Builder::new()
                .gap_until(end)
                .lane(API, &api_rows)
                .lane(OS, &rows(&os, t0, unit, 0))
                .lane(LaneKind::Memory { device: 1, stream: 3, class: MemClass::H2D }, &copies)
                .gap();
            let mut api_full = api.clone();
            api_full.push(Slot::Free);
            let mut os_full = os.clone();
            os_full.push(Slot::Free);
            prop_assert_eq!(g.cause, brute(&api_full, &os_full));
        }
    }
}
