//! GPU idle gaps and their causes.
//!
//! A gap is an idle stretch of at least `min_gap` between two busy intervals of one GPU
//! (all streams, kernels, copies and memsets merged; nothing before the first or after
//! the last operation). Its cause comes from one CPU thread, the *deciding thread*: the
//! one whose CUDA API call (matched by process and correlation id) launched the GPU
//! operation that ends the gap; without a match, the process's main launcher (the thread
//! with the most launch, copy and memset calls). The gap's `pid` is that operation's
//! process. docs/causes.md is the rule in full; in order, the first that applies wins:
//!
//! 1. `profiler`: profiler overhead covers at least half of the gap: `PROFILER_OVERHEAD`
//!    rows of the process, on any thread, while the deciding thread is inside a CUDA call
//!    (rows that time a `dlopen`/`dlclose` are the application's own library loads).
//! 2. `queued`: the launching call returned before the gap began. Evidence: module
//!    loading in flight, a stream wait or host function issued since the busy stretch
//!    before the gap began, another GPU of the process busy, or nothing.
//! 3. `launch-bound`: the launching call began inside the gap, and from the gap start to
//!    its return (or the gap end) the deciding thread spent no more than
//!    [`LAUNCH_STRETCH_MAX_NS`] in a row outside CUDA calls, nor in any one CUDA call but
//!    a launch, nor more than [`LAUNCH_CALL_MAX_NS`] in one launch (driver work such as
//!    module loading or allocation is not launch overhead), and less than half of that
//!    time blocked in synchronize calls or pageable copies.
//! 4. The gap's time on the deciding thread is split, each instant counted once, with
//!    this precedence: *pageable* (a memcpy call with a pageable side), *sync* (a
//!    synchronize call or a synchronous memcpy), *launch* (launch, memset, async copy),
//!    *other API*, *OS wait* (a blocking OS runtime call, [`is_blocking_os_call`]), *OS
//!    work*, *no call*. Scores: pageable-copy = pageable; sync-wait = sync; host-wait =
//!    OS wait; host-busy = launch + other API + OS work + no call, where the process
//!    has an OS runtime trace (without one, no-call time scores `unknown`). The largest
//!    wins; ties go to the earlier cause in [`Cause::ALL`].
//! 5. `sync-drain`: rule 4 said host-busy or unknown, and a host-blocking call of the
//!    deciding thread (synchronize, synchronous or pageable memcpy) running at the gap
//!    start returned within [`DRAIN_SLACK_NS`] of it: the host drained the queue, then
//!    worked instead of queueing.
//!
//! `phase` is the innermost NVTX range (grouped name unless exact names are asked for)
//! covering at least half of the gap on the deciding thread, else on another thread of
//! the process. `window` is set afterwards by [`super::steps`].
//!
//! Every search looks only at the calls that overlap the gap, found by galloping from
//! where the previous gap's search ended; the cost is that of the calls inside gaps,
//! with no per-thread copy of the calls.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use super::index::{ApiCall, Hints, Index};
use super::intervals::BLOCK;
use super::names::phase_name;
use super::{Cause, DeviceActivity, Gap, Hint, Options, ShortHoles, Union, Window};
use crate::model::{ApiKind, LaneKind, MemFlags, Ns, StrId, Trace};
use crate::text::fmt_ns;

/// Longest stretch outside CUDA calls that still counts as issuing calls back to back
/// (launch overhead is tens of µs): 50 µs.
pub(crate) const LAUNCH_STRETCH_MAX_NS: Ns = 50_000;

/// Longest launch call (launch, memset, async copy) that is still launch overhead: a
/// slower one is driver work such as lazy module loading: 500 µs.
pub(crate) const LAUNCH_CALL_MAX_NS: Ns = 500_000;

/// How long after the gap start a host-blocking call may return and still be the one
/// that drained the GPU: 100 µs.
pub(crate) const DRAIN_SLACK_NS: Ns = 100_000;

// How far back from the gap start to look for calls that began before it (calls of one
// thread rarely nest deeper than runtime -> driver).
const LOOKBACK: usize = 64;

// Rows per block of the running maximum of ends kept for lanes whose calls overlap.
pub(crate) const MAX_END_BLOCK: usize = 64;

// Most running maxima the explainer keeps per lane before it widens blocks (up to
// MAX_END_BLOCK rows): a small lane gets one per row, so a search for the rows
// overlapping an instant scans none that end before it.
const MAX_END_VALUES: usize = 8192;

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

/// CUDA calls that explain queued work, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NameClass {
    Plain,
    // cuModuleLoad*, cuLibraryLoad*: lazy loading of GPU code.
    ModuleLoad,
    // A stream waits on an event or a host function.
    StreamWait,
    // Profiler overhead rows that time the application loading a library.
    LibraryLoad,
    // An allocator call that waits for the device (`is_implicit_sync`).
    ImplicitSync,
}

impl NameClass {
    const ALL: [NameClass; 5] = [
        NameClass::Plain,
        NameClass::ModuleLoad,
        NameClass::StreamWait,
        NameClass::LibraryLoad,
        NameClass::ImplicitSync,
    ];

    fn of(name: &str) -> Self {
        const WAITS: [&str; 4] = ["StreamWaitEvent", "LaunchHostFunc", "StreamAddCallback", "StreamWaitValue"];
        if is_implicit_sync(name) {
            NameClass::ImplicitSync
        } else if is_module_load(name) {
            NameClass::ModuleLoad
        } else if WAITS.iter().any(|w| name.contains(w)) {
            NameClass::StreamWait
        } else if name.starts_with("dlopen") || name.starts_with("dlclose") {
            NameClass::LibraryLoad
        } else {
            NameClass::Plain
        }
    }
}

/// True for the CUDA calls that load GPU code (`cuModuleLoad*`, `cuLibraryLoad*`): lazy
/// loading of a kernel at its first launch.
pub(crate) fn is_module_load(name: &str) -> bool {
    name.contains("ModuleLoad") || name.contains("LibraryLoad")
}

/// True for CUDA calls that synchronise implicitly: they wait for the device's queued
/// work before they return. Frees and unmaps (`cudaFree`, `cudaFreeHost`, `cuMemFree`,
/// `cuMemUnmap`...), `cudaHostUnregister` and `cudaDeviceSetLimit` always count as syncs;
/// allocations and registrations ([`syncs_when_busy`]) only where the trace shows them
/// waiting. Stream-ordered `cudaFreeAsync`/`cudaMallocAsync` do not synchronise. The
/// version suffix nsys adds (`_v3020`) is ignored.
pub(crate) fn is_implicit_sync(name: &str) -> bool {
    const ALWAYS: &[&str] = &[
        "cudaFree",
        "cudaFreeHost",
        "cudaFreeArray",
        "cudaFreeMipmappedArray",
        "cudaHostUnregister",
        "cudaDeviceSetLimit",
        "cuMemFree",
        "cuMemFreeHost",
        "cuMemHostUnregister",
        "cuMemUnmap",
        "cuMemRelease",
        "cuCtxSetLimit",
    ];
    let base = api_base(name);
    ALWAYS.contains(&base) || syncs_when_busy(base)
}

/// True for allocations and registrations (`cudaMalloc`, `cudaHostAlloc`,
/// `cudaMallocHost`, `cudaHostRegister`, their `cuMem*` forms): they wait for the device
/// only when it is busy, and then return when it idles; the rest of such a call is its
/// own driver work (mapping or pinning memory). They count as syncs only when they began
/// before the gap and returned within [`DRAIN_SLACK_NS`] after its start.
pub(crate) fn syncs_when_busy(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "cudaMalloc",
        "cudaMallocPitch",
        "cudaMallocHost",
        "cudaHostAlloc",
        "cudaHostRegister",
        "cuMemAlloc",
        "cuMemAllocPitch",
        "cuMemAllocHost",
        "cuMemHostAlloc",
        "cuMemHostRegister",
    ];
    NAMES.contains(&api_base(name))
}

// A CUDA API name without the version suffix nsys adds (`cudaFree_v3020`, `cuMemFree_v2`).
fn api_base(name: &str) -> &str {
    match name.rfind("_v") {
        Some(i) if i + 2 < name.len() && name[i + 2..].bytes().all(|b| b.is_ascii_digit()) => &name[..i],
        _ => name,
    }
}

// Reads and syncs that wait on storage (or, for `read`, on a pipe): both blocking and
// storage calls. Base names: see `libc_base`.
const BLOCKING_READS: &[&str] = &["read", "readv", "pread", "preadv", "preadv2", "fread", "fsync", "fdatasync"];

/// The call a libc symbol stands for: glibc's large-file (`pread64`, `preadv64v2`,
/// `fopen64`) and fortified (`__read_chk`, `__pread64_chk`) entry points are the same
/// calls as `pread`, `preadv2`, `fopen` and `read`.
pub(crate) fn libc_base(name: &str) -> std::borrow::Cow<'_, str> {
    let n = name.strip_prefix("__").unwrap_or(name);
    let n = n.strip_suffix("_chk").unwrap_or(n);
    // nsys names the symbol it hooked, and Python's os.preadv reaches `preadv64v2`.
    match n.strip_suffix("64v2") {
        Some(stem) => format!("{stem}2").into(),
        None => n.strip_suffix("64").unwrap_or(n).into(),
    }
}

/// True for OS runtime calls that touch storage: file reads, opens, stats and syncs.
pub(crate) fn is_io_call(name: &str) -> bool {
    is_io_base(&libc_base(name))
}

// `is_io_call` of a base name.
fn is_io_base(name: &str) -> bool {
    const EXACT: &[&str] = &["sendfile", "copy_file_range", "readahead", "posix_fadvise"];
    const PREFIX: &[&str] = &["open", "fopen", "stat", "fstat", "lstat", "newfstatat", "statx", "access", "getdents"];
    BLOCKING_READS.contains(&name) || EXACT.contains(&name) || PREFIX.iter().any(|p| name.starts_with(p))
}

/// True for storage calls that only touch files: [`is_io_call`] but `read` and `readv`,
/// which may read a pipe (a DataLoader worker's queue).
pub(crate) fn is_file_call(name: &str) -> bool {
    let base = libc_base(name);
    is_io_base(&base) && !matches!(&*base, "read" | "readv")
}

/// True for OS runtime calls that block waiting for another thread, a process or I/O.
pub(crate) fn is_blocking_os_call(name: &str) -> bool {
    const EXACT: &[&str] = &[
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
    ];
    const PARTS: &[&str] = &["wait", "poll", "select", "sleep", "_lock", "sigsuspend"];
    let name = &*libc_base(name);
    BLOCKING_READS.contains(&name)
        || EXACT.contains(&name)
        || (PARTS.iter().any(|p| name.contains(p)) && !name.contains("unlock") && !name.contains("trylock"))
}

/// Per-trace state shared by all gaps: lanes by thread, cached name classes and search
/// positions. Nothing in it grows with the number of events but the running maxima of
/// ends of lanes whose calls overlap (at most `MAX_END_VALUES` per lane, or one per 64 calls).
struct Ctx<'a> {
    trace: &'a Trace,
    index: &'a Index,
    options: &'a Options,
    // Lanes of each thread, sorted by (pid, tid).
    lanes: Vec<((u32, u32), ThreadLanes)>,
    os_traced: Vec<u32>,
    // GPU lanes of each device.
    gpu_lanes: Vec<(u32, Vec<usize>)>,
    // Per lane: rows per block, and max end over blocks 0..=k; empty for disjoint lanes.
    max_end: Vec<(usize, Vec<Ns>)>,
    // Per name id: 0 not seen yet, 1 not blocking, 2 blocking (OS call names).
    blocking: Vec<u8>,
    launcher: HashMap<u32, Option<u32>>,
    // Profiler overhead lanes by pid, sorted by pid.
    overhead: Vec<(u32, Vec<usize>)>,
    // CUDA API lanes by pid, sorted by pid.
    api_by_pid: Vec<(u32, Vec<usize>)>,
    // Per name id: 0 not seen yet, else 1 + NameClass.
    api_class: Vec<u8>,
    // Search positions in start columns and in corr columns.
    starts: Hints,
    corrs: Hints,
    // Search positions in the running maxima of ends (`max_end`).
    max_ends: Hints,
    flags: FlagCache,
    // Calls overlapping the current gap, reused.
    calls: Vec<(Ns, Ns, Act)>,
    // Start of the gap being explained: an implicitly synchronising call that began
    // before it (while the device was busy) waited for the device.
    gap_start: Ns,
}

// Flags of rows of lanes that keep them per name, by (lane, name), in a small table
// indexed by a hash of the two: the search of the lane's per-name list, asked for every
// call and range a hole looks at, is done once per name while the entry stays.
struct FlagCache {
    // Per lane: flags are kept per name.
    per_name: Vec<bool>,
    // (lane, name, flags); lane u32::MAX for an empty slot.
    slots: Vec<(u32, StrId, u32)>,
}

impl FlagCache {
    const SLOTS: usize = 1024;

    fn new(trace: &Trace) -> Self {
        let per_name = trace
            .lanes
            .iter()
            .map(|l| {
                let c = l.ev.columns();
                c.flags.is_empty() && !c.flags_by_name.0.is_empty()
            })
            .collect();
        Self { per_name, slots: vec![(u32::MAX, 0, 0); Self::SLOTS] }
    }

    // `Events::flags` of row `i` of lane `li`.
    fn get(&mut self, trace: &Trace, li: usize, i: usize) -> u32 {
        let ev = &trace.lanes[li].ev;
        if !self.per_name[li] {
            return ev.flags(i);
        }
        let name = ev.name[i];
        let slot = (name as usize ^ li.wrapping_mul(0x9e37)) % Self::SLOTS;
        match self.slots[slot] {
            (l, n, f) if l as usize == li && n == name => f,
            _ => {
                let f = ev.flags(i);
                self.slots[slot] = (li as u32, name, f);
                f
            }
        }
    }
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
        let mut max_end = vec![(1, Vec::new()); trace.lanes.len()];
        let mut os_traced = Vec::new();
        let mut overhead: Vec<(u32, Vec<usize>)> = Vec::new();
        let mut api_by_pid: Vec<(u32, Vec<usize>)> = Vec::new();
        for (i, l) in trace.lanes.iter().enumerate() {
            if matches!(l.kind, LaneKind::Overhead { .. } | LaneKind::CudaApi { .. }) {
                let list = if matches!(l.kind, LaneKind::Overhead { .. }) { &mut overhead } else { &mut api_by_pid };
                match list.iter_mut().find(|(p, _)| *p == l.pid) {
                    Some((_, v)) => v.push(i),
                    None => list.push((l.pid, vec![i])),
                }
            }
            if let Some(d) = l.kind.gpu_work_device() {
                match gpu_lanes.iter_mut().find(|(x, _)| *x == d) {
                    Some((_, v)) => v.push(i),
                    None => gpu_lanes.push((d, vec![i])),
                }
            }
            let Some(tid) = l.kind.tid() else { continue };
            let e = lanes.entry((l.pid, tid)).or_default();
            #[allow(
                clippy::wildcard_enum_match_arm,
                reason = "a filter: the explainer reads a thread's API, OS runtime and NVTX lanes, no other"
            )]
            match l.kind {
                LaneKind::CudaApi { .. } => e.api = Some(i),
                LaneKind::Osrt { .. } => {
                    e.os = Some(i);
                    os_traced.push(l.pid);
                }
                LaneKind::Nvtx { .. } | LaneKind::NvtxStartEnd { .. } => e.nvtx.push(i),
                _ => {}
            }
            if matches!(l.kind, LaneKind::CudaApi { .. } | LaneKind::Osrt { .. } | LaneKind::Overhead { .. })
                && !l.disjoint
            {
                let block = l.ev.len().div_ceil(MAX_END_VALUES).clamp(1, MAX_END_BLOCK);
                max_end[i] = (block, running_max_end_by(&l.ev, block));
            }
        }
        os_traced.sort_unstable();
        os_traced.dedup();
        overhead.sort_unstable();
        api_by_pid.sort_unstable();
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
            overhead,
            api_by_pid,
            api_class: vec![0; trace.strings.len()],
            starts: Hints::new(trace),
            corrs: Hints::new(trace),
            max_ends: Hints::new(trace),
            flags: FlagCache::new(trace),
            calls: Vec::new(),
            gap_start: Ns::MIN,
        }
    }

    // Category of API call `i` of lane `li`.
    fn api_act(&mut self, li: usize, i: usize) -> Act {
        let lane = &self.trace.lanes[li];
        let kind = ApiKind::from_flags(self.flags.get(self.trace, li, i));
        let mut pageable = || {
            self.index
                .copy_flags(self.trace, lane.pid, lane.ev.corr(i), &mut self.corrs)
                .is_some_and(MemFlags::is_pageable)
        };
        match kind {
            ApiKind::MemcpySync | ApiKind::MemcpyAsync if pageable() => Act::Pageable,
            ApiKind::MemcpySync | ApiKind::Sync => Act::Sync,
            ApiKind::Launch | ApiKind::Memset | ApiKind::MemcpyAsync => Act::Launch,
            ApiKind::Other if self.implicit_sync(li, i) => Act::Sync,
            ApiKind::Other => Act::ApiOther,
        }
    }

    // True when API call `i` of lane `li` synchronises implicitly ([`is_implicit_sync`]);
    // an allocation only when it waited for the device: it began before the gap start,
    // while the device was busy, and returned as the device idled.
    fn implicit_sync(&mut self, li: usize, i: usize) -> bool {
        let ev = &self.trace.lanes[li].ev;
        // A call that waited for the device cannot return before the device idled.
        let waited =
            ev.start[i] < self.gap_start && (self.gap_start..=self.gap_start + DRAIN_SLACK_NS).contains(&ev.end(i));
        self.name_class(ev.name[i]) == NameClass::ImplicitSync
            && (waited || !syncs_when_busy(self.trace.strings.get(ev.name[i])))
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

    // Profiler overhead lanes of process `pid`.
    fn overhead_lanes(&self, pid: u32) -> &[usize] {
        self.overhead.iter().find(|(p, _)| *p == pid).map_or(&[], |(_, v)| v.as_slice())
    }

    fn name_class(&mut self, name: StrId) -> NameClass {
        let k = name as usize;
        if self.api_class.len() <= k {
            self.api_class.resize(k + 1, 0);
        }
        if self.api_class[k] == 0 {
            self.api_class[k] = 1 + NameClass::of(self.trace.strings.get(name)) as u8;
        }
        NameClass::ALL[(self.api_class[k] - 1) as usize]
    }

    // The longest CUDA call of class `class` of process `pid` overlapping `[a, b)`, as
    // (name, duration, thread label).
    // (name, its duration in the gap as `in_gap` says it, thread label).
    fn process_call_matching(&mut self, pid: u32, a: Ns, b: Ns, class: NameClass) -> Option<(String, String, String)> {
        let lanes = self.api_by_pid.iter().find(|(p, _)| *p == pid).map(|(_, v)| v.clone()).unwrap_or_default();
        let mut best: Option<(Ns, usize, usize)> = None;
        for li in lanes {
            for i in self.overlapping(li, a, b) {
                let ev = &self.trace.lanes[li].ev;
                let d = ev.end(i).min(b) - ev.start[i].max(a);
                if d > 0 && best.is_none_or(|x| d > x.0) && self.name_class(ev.name[i]) == class {
                    best = Some((d, li, i));
                }
            }
        }
        best.map(|(d, li, i)| {
            let (name, _, owner) = self.describe(li, i, d);
            let ev = &self.trace.lanes[li].ev;
            (name, in_gap(ev.start[i], ev.end(i), a, b), owner)
        })
    }

    // The last stream-wait or host-function call of process `pid` starting in `[a, b)`.
    fn process_call_starting(&mut self, pid: u32, a: Ns, b: Ns) -> Option<(String, Ns, String)> {
        let lanes = self.api_by_pid.iter().find(|(p, _)| *p == pid).map(|(_, v)| v.clone()).unwrap_or_default();
        let mut best: Option<(Ns, usize, usize)> = None;
        for li in lanes {
            let lo = self.starting_before(li, a);
            let hi = self.starting_before(li, b);
            for i in (lo..hi).rev() {
                let ev = &self.trace.lanes[li].ev;
                if best.is_some_and(|x| ev.start[i] <= x.0) {
                    break;
                }
                if self.name_class(ev.name[i]) == NameClass::StreamWait {
                    best = Some((ev.start[i], li, i));
                    break;
                }
            }
        }
        best.map(|(_, li, i)| self.describe(li, i, self.trace.lanes[li].ev.dur(i)))
    }

    fn describe(&self, li: usize, i: usize, d: Ns) -> (String, Ns, String) {
        let l = &self.trace.lanes[li];
        let owner = l.kind.tid().map_or_else(String::new, |t| self.trace.thread_label(l.pid, t));
        (crate::text::name(self.trace.strings.get(l.ev.name[i])).into_owned(), d, owner)
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
            (_, m) if m.is_empty() => lo - usize::from(lo > 0 && ev.end(lo - 1) > a),
            // Gallops from the last search: holes come in time order.
            (block, m) => self.max_ends.find(li, m, |&e| e <= a) * block,
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
                if ev.end(i) > a && ev.end(i) > ev.start[i] {
                    calls.push((ev.start[i], ev.end(i), self.act(li, i)));
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
pub(crate) fn running_max_end(ev: &crate::model::Events) -> Vec<Ns> {
    running_max_end_by(ev, MAX_END_BLOCK)
}

// Max end of rows 0..=k * block + block - 1, per block k.
fn running_max_end_by(ev: &crate::model::Events, block: usize) -> Vec<Ns> {
    let mut m = Ns::MIN;
    (0..ev.len())
        .step_by(block)
        .map(|lo| {
            m = (lo..(lo + block).min(ev.len())).fold(m, |a, i| a.max(ev.end(i)));
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
pub(crate) fn find(trace: &Trace, devices: &[DeviceActivity], index: &Index, options: &Options) -> Vec<Gap> {
    Explainer::new(trace, index, devices, options).find()
}

/// Finds and explains gaps; keeps what it learned about lanes, so that parts of gaps
/// can be explained again cheaply (the starvation finding clips gaps to the steps: a gap
/// that starts before a step may have a different cause inside it).
pub(crate) struct Explainer<'a> {
    ctx: Ctx<'a>,
    devices: &'a [DeviceActivity],
}

impl<'a> Explainer<'a> {
    /// An explainer over `trace` and its device unions.
    pub(crate) fn new(trace: &'a Trace, index: &'a Index, devices: &'a [DeviceActivity], options: &'a Options) -> Self {
        Self { ctx: Ctx::new(trace, index, options), devices }
    }

    /// Gaps of every device, sorted by start, with causes. Windows are all steady
    /// until [`super::steps`] sets them.
    pub(crate) fn find(&mut self) -> Vec<Gap> {
        let mut gaps = Vec::new();
        for d in self.devices {
            let fallback_pid = self.fallback_pid(d.device);
            let mut stretch_start = d.extent().map_or(0, |e| e.0);
            for (start, end) in d.busy.gaps(self.ctx.options.min_gap_ns) {
                gaps.push(self.explain_window(d.device, fallback_pid, (start, end), stretch_start));
                stretch_start = end;
            }
        }
        gaps.sort_by_key(|g| (g.start, g.device));
        gaps
    }

    /// The process that stands for `device` when the operation ending a gap has none
    /// (the one with the most GPU operations there).
    pub(crate) fn fallback_pid(&self, device: u32) -> u32 {
        busiest_pid(self.ctx.trace, device_lanes(&self.ctx.gpu_lanes, device))
    }

    /// The gap `[start, end)` of `device`, whose busy stretch before it began at
    /// `stretch_start` (the end of the previous gap, or the device's first operation),
    /// explained as [`Explainer::find`] does. Only the evidence of a queued gap depends
    /// on `stretch_start`.
    pub(crate) fn explain_window(
        &mut self,
        device: u32,
        fallback_pid: u32,
        (start, end): (Ns, Ns),
        stretch_start: Ns,
    ) -> Gap {
        let (op, call) = self.ctx.launch_of_op_at(device, end);
        let pid = op.map_or(fallback_pid, |(p, _)| p);
        self.explain(&Win { device, pid, call, start, end, stretch_start })
    }

    /// Cause and phase of the part `[start, end)` of `gap`, decided by the thread that
    /// launched the operation ending the gap. Cheapest when parts come in time order.
    pub(crate) fn part(&mut self, gap: &Gap, start: Ns, end: Ns) -> (Cause, Option<String>) {
        if (start, end) == (gap.start, gap.end) {
            return (gap.cause, gap.phase.clone());
        }
        let (_, call) = self.ctx.launch_of_op_at(gap.device, gap.end);
        let w = Win { device: gap.device, pid: gap.pid, call, start, end, stretch_start: gap.start };
        let tid = self.deciding_thread(&w);
        let phase = phase_of(&mut self.ctx, w.pid, tid.unwrap_or(w.pid), start, end);
        let cause = tid.map_or(Cause::Unknown, |tid| self.decide(&w, tid).cause);
        (cause, phase)
    }

    /// The steady window's holes shorter than the gap threshold, by cause and by phase
    /// and cause (see [`Explainer::hole`]); per device, in time order, so that every
    /// search gallops on from the last.
    pub(crate) fn short_holes(&mut self, w: super::Windows) -> ([(usize, Ns); Cause::ALL.len()], Vec<ShortHoles>) {
        let mut by_cause = [(0usize, 0 as Ns); Cause::ALL.len()];
        let mut by_phase: HashMap<(Option<StrId>, Cause), (usize, Ns)> = HashMap::new();
        let min = self.ctx.options.min_gap_ns;
        for d in self.devices {
            let fallback_pid = self.fallback_pid(d.device);
            // From the interval before the first that reaches into the window to the
            // first that starts after it: every hole with time in the window.
            let lo = d.busy.range_in(w.steady_start, w.steady_end).start.saturating_sub(1);
            let mut busy = d.busy.iter_from(lo / BLOCK).skip(lo % BLOCK);
            let Some(mut prev) = busy.next() else { continue };
            for (s, e) in busy {
                let (start, end) = (prev.1, s);
                prev = (s, e);
                if start >= w.steady_end {
                    break;
                }
                let part = w.steady_part(start, end);
                if end - start >= min || part <= 0 {
                    continue;
                }
                let (cause, phase) = self.hole(d.device, fallback_pid, start, end);
                let c = &mut by_cause[cause as usize];
                (c.0, c.1) = (c.0 + 1, c.1 + part);
                let p = by_phase.entry((phase, cause)).or_default();
                (p.0, p.1) = (p.0 + 1, p.1 + part);
            }
        }
        // Phases are grouped names: ranges of different names may share one.
        let mut named: HashMap<(Option<String>, Cause), (usize, Ns)> = HashMap::new();
        for ((phase, cause), (n, t)) in by_phase {
            let phase =
                phase.map(|id| phase_name(self.ctx.trace.strings.get(id), self.ctx.options.exact_names).into_owned());
            let e = named.entry((phase, cause)).or_default();
            (e.0, e.1) = (e.0 + n, e.1 + t);
        }
        let mut out: Vec<ShortHoles> = named
            .into_iter()
            .map(|((phase, cause), (count, total_ns))| ShortHoles { phase, cause, count, total_ns })
            .collect();
        out.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then_with(|| (a.cause, &a.phase).cmp(&(b.cause, &b.phase))));
        (by_cause, out)
    }

    // Cause and phase (its range's name id) of a hole `[start, end)` of `device` shorter
    // than the gap threshold: rules 1-5 as for a gap, but the hole right after a sync is
    // the sync's, `sync-drain` (see `refilling`), whatever the host did after it: the
    // sync emptied the queue, and the hole is the GPU waiting for the host to fill it
    // again (the refill after a `nonzero()` or `.item()`), which no faster host work
    // could avoid. No evidence line is built: holes may number millions.
    fn hole(&mut self, device: u32, fallback_pid: u32, start: Ns, end: Ns) -> (Cause, Option<StrId>) {
        let (op, call) = self.ctx.launch_of_op_at(device, end);
        let pid = op.map_or(fallback_pid, |(p, _)| p);
        let w = Win { device, pid, call, start, end, stretch_start: start };
        let Some(tid) = self.deciding_thread(&w) else { return (Cause::Unknown, None) };
        let phase = phase_id(&mut self.ctx, pid, tid, start, end);
        // Rule 5's slack (100 µs either side) is as long as a hole: it would give a sync
        // the holes after its refill too. Only the refill is the sync's.
        let mut cause = match self.decide(&w, tid) {
            Verdict { detail: Detail::Drain(_, s), .. } => s.cause,
            v => v.cause,
        };
        if matches!(cause, Cause::LaunchBound | Cause::HostBusy | Cause::Unknown | Cause::SyncWait)
            && refilling(&mut self.ctx, pid, tid, (start, end))
        {
            cause = Cause::SyncDrain;
        }
        (cause, phase)
    }

    fn deciding_thread(&mut self, w: &Win) -> Option<u32> {
        w.call.map(|c| c.tid).or_else(|| self.ctx.main_launcher(w.pid))
    }

    fn explain(&mut self, w: &Win) -> Gap {
        let tid = self.deciding_thread(w);
        let mut gap = Gap {
            device: w.device,
            pid: w.pid,
            tid,
            start: w.start,
            end: w.end,
            cause: Cause::Unknown,
            evidence: format!("no CUDA API calls traced for process {}", w.pid),
            phase: phase_of(&mut self.ctx, w.pid, tid.unwrap_or(w.pid), w.start, w.end),
            window: Window::Steady,
            hint: super::Hint::None,
            host: None,
        };
        if let Some(tid) = tid {
            let v = self.decide(w, tid);
            (gap.cause, gap.hint) = (v.cause, v.hint);
            gap.evidence = self.evidence(w, tid, &v);
        }
        gap
    }

    // Rules 1-5 of docs/causes.md for the deciding thread `tid`.
    fn decide(&mut self, w: &Win, tid: u32) -> Verdict {
        let ctx = &mut self.ctx;
        ctx.gap_start = w.start;
        let dur = w.end - w.start;
        let profiler = profiler_time(ctx, w.pid, tid, w.start, w.end);
        if 2 * profiler.0 >= dur && profiler.0 > 0 {
            return Verdict {
                cause: Cause::Profiler,
                detail: Detail::Profiler(profiler.0, profiler.1),
                hint: Hint::None,
            };
        }
        if let Some(c) = w.call.filter(|c| c.end <= w.start) {
            return Verdict { cause: Cause::Queued, detail: Detail::Queued(c), hint: Hint::None };
        }
        let inside = w.call.filter(|c| (w.start..w.end).contains(&c.start));
        if let Some(c) = inside
            && let Some(stretch) = launch_bound(ctx, w.pid, tid, w.start, c.end.min(w.end))
        {
            return Verdict { cause: Cause::LaunchBound, detail: Detail::Launch(stretch, c), hint: Hint::None };
        }
        let s = score(ctx, w.pid, tid, w.start, w.end);
        if matches!(s.cause, Cause::HostBusy | Cause::Unknown)
            && let Some(d) = draining_call(ctx, w.pid, tid, w.start)
        {
            // A sync drains a queue worth waiting for only when the host waited in it at
            // least half as long as the work after it: after a tiny sync (a metrics
            // .item()), the host's own work is the gap, sync or not.
            // A pageable copy's sync takes the same test: the host's work after it decides.
            if 2 * (d.call.end - d.since) >= dur {
                let hint = if d.pageable {
                    Hint::PageableSync
                } else if ctx.implicit_sync(d.call.at.lane as usize, d.call.at.idx as usize) {
                    Hint::Allocator
                } else {
                    Hint::None
                };
                return Verdict { cause: Cause::SyncDrain, detail: Detail::Drain(d.call, s), hint };
            }
            if let Some(v) = loader_wait(ctx, w.pid, tid, (w.start, w.end), &s) {
                return v;
            }
            let hint = if checkpoint_writes(ctx, w.pid, tid, w.start, w.end) { Hint::Checkpoint } else { Hint::None };
            return Verdict { cause: s.cause, detail: Detail::AfterSync(d.call, s), hint };
        }
        if let Some(v) = loader_wait(ctx, w.pid, tid, (w.start, w.end), &s) {
            return v;
        }
        // A wait mostly in allocator calls that synchronise is allocator churn; host work
        // or waits in writing a file are a checkpoint.
        let hint = if s.cause == Cause::SyncWait && implicit_sync_waits(ctx, w.pid, tid, w.start, w.end) {
            Hint::Allocator
        } else if matches!(s.cause, Cause::HostBusy | Cause::HostWait | Cause::Unknown)
            && checkpoint_writes(ctx, w.pid, tid, w.start, w.end)
        {
            Hint::Checkpoint
        } else {
            Hint::None
        };
        Verdict { cause: s.cause, detail: Detail::Score(s), hint }
    }

    fn evidence(&mut self, w: &Win, tid: u32, v: &Verdict) -> String {
        let ctx = &mut self.ctx;
        ctx.gap_start = w.start;
        let who = ctx.trace.thread_label(w.pid, tid);
        let dur = w.end - w.start;
        match &v.detail {
            Detail::Profiler(t, row) => {
                let (name, owner) = row.map_or(("profiler overhead".to_string(), String::new()), |(li, i)| {
                    let l = &ctx.trace.lanes[li];
                    let owner = l.kind.tid().map_or(String::new(), |t| ctx.trace.thread_label(l.pid, t));
                    let d = in_gap(l.ev.start[i], l.ev.end(i), w.start, w.end);
                    (format!("{} {d}", crate::text::name(ctx.trace.strings.get(l.ev.name[i]))), owner)
                });
                format!(
                    "{name} on {owner}: profiler overhead covers {} of {} while {who} waited",
                    fmt_ns(*t),
                    fmt_ns(dur)
                )
            }
            Detail::Queued(c) => queued_evidence(ctx, self.devices, w, c, &who),
            Detail::Launch(stretch, c) => {
                let n = calls_between(ctx, w.pid, tid, w.start, c.start);
                format!(
                    "{n} CUDA calls back to back (longest stretch outside them {}), then {} launched the next op, in a {} gap on {who}",
                    fmt_ns(*stretch),
                    call_name(ctx.trace, c.at),
                    fmt_ns(dur)
                )
            }
            Detail::Drain(sync, s) => {
                let phase = phase_of(ctx, w.pid, tid, sync.end - 1, sync.end)
                    .map_or(String::new(), |p| format!(" in `{}`", crate::text::name(&p)));
                let after = if s.busy_none >= s.busy_calls {
                    format!("{} outside CUDA and OS calls on {who}", fmt_ns(s.busy_none.max(s.unknown)))
                } else {
                    let acts = [Act::ApiOther, Act::OsBusy, Act::Launch];
                    format!(
                        "{} in calls, the longest {}",
                        fmt_ns(s.busy_calls),
                        longest_call(ctx, w.pid, tid, &acts, w.start, w.end)
                    )
                };
                let when = if sync.end >= w.start {
                    format!("{} into the gap", fmt_ns(sync.end - w.start))
                } else {
                    format!("{} before the gap", fmt_ns(w.start - sync.end))
                };
                let of = match v.hint {
                    Hint::PageableSync => " (the sync of a copy from pageable memory)",
                    Hint::Allocator => " (an allocator call that waits for the device)",
                    Hint::None
                    | Hint::Sleep
                    | Hint::Compile
                    | Hint::Gil
                    | Hint::Checkpoint
                    | Hint::OpenMp
                    | Hint::Loader
                    | Hint::NewShapes => "",
                };
                format!(
                    "{}{of} returned {when}{phase}; then {after}, before the next launch",
                    call_name(ctx.trace, sync.at),
                )
            }
            Detail::AfterSync(sync, s) => format!(
                "{} after a {} {}",
                score_evidence(ctx, w.pid, tid, (w.start, w.end), s),
                fmt_ns(sync.end - sync.start),
                call_name(ctx.trace, sync.at)
            ),
            Detail::Loader(range, cover) => format!(
                "no OS runtime trace; {who} was in `{}` for {} of {}: the loop waited for the DataLoader's next batch",
                crate::text::name(ctx.trace.strings.get(*range)),
                fmt_ns(*cover),
                fmt_ns(dur)
            ),
            Detail::Score(_) if v.hint == Hint::Allocator => allocator_evidence(ctx, w.pid, tid, w.start, w.end),
            Detail::Score(s) => score_evidence(ctx, w.pid, tid, (w.start, w.end), s),
        }
    }
}

// One gap, or one part of a gap, to explain.
struct Win {
    device: u32,
    pid: u32,
    // The call that launched the operation ending the gap.
    call: Option<ApiCall>,
    start: Ns,
    end: Ns,
    // Start of the busy stretch before the gap.
    stretch_start: Ns,
}

struct Verdict {
    cause: Cause,
    detail: Detail,
    hint: Hint,
}

// What the evidence line quotes.
enum Detail {
    // Overhead time, and the longest overhead row (lane, row).
    Profiler(Ns, Option<(usize, usize)>),
    Queued(ApiCall),
    // Longest stretch outside CUDA calls, and the launching call.
    Launch(Ns, ApiCall),
    Drain(ApiCall, Score),
    // A sync that returned at the gap start but waited too little to matter.
    AfterSync(ApiCall, Score),
    Score(Score),
    // The DataLoader's `__next__` range the thread sat in, and its time in the gap.
    Loader(StrId, Ns),
}

// The process with the most operations on these GPU lanes.
fn busiest_pid(trace: &Trace, gpu_lanes: &[usize]) -> u32 {
    let mut by_pid: HashMap<u32, usize> = HashMap::new();
    for &li in gpu_lanes {
        *by_pid.entry(trace.lanes[li].pid).or_default() += trace.lanes[li].ev.len();
    }
    by_pid.into_iter().max_by_key(|&(p, n)| (n, std::cmp::Reverse(p))).map_or(0, |(p, _)| p)
}

// The name of a call, cut for evidence.
fn call_name(trace: &Trace, at: crate::model::EventRef) -> std::borrow::Cow<'_, str> {
    crate::text::name(trace.strings.get(trace.lanes[at.lane as usize].ev.name[at.idx as usize]))
}

// Rows of lane `li` overlapping `[a, b)`, clipped to it, with their row index.
fn clipped(ctx: &mut Ctx<'_>, li: usize, a: Ns, b: Ns) -> Vec<(Ns, Ns, usize)> {
    let ev = &ctx.trace.lanes[li].ev;
    let r = ctx.overlapping(li, a, b);
    r.filter(|&i| ev.end(i) > a && ev.start[i] < b).map(|i| (ev.start[i].max(a), ev.end(i).min(b), i)).collect()
}

// Rule 1: profiler overhead time in `[a, b)` that stalls thread `tid`: overhead rows of
// the process (any thread but library loads) while the thread is inside a CUDA call.
// Also the longest overhead row that counts.
fn profiler_time(ctx: &mut Ctx<'_>, pid: u32, tid: u32, a: Ns, b: Ns) -> (Ns, Option<(usize, usize)>) {
    let (Some(api), _) = ctx.thread_lanes(pid, tid) else { return (0, None) };
    let trace = ctx.trace;
    // No copy of the lane list, no list of rows until one overlaps: short holes ask
    // this hundreds of thousands of times, and overhead rarely overlaps them.
    let mut rows = Vec::new();
    let mut longest: Option<(Ns, usize, usize)> = None;
    for k in 0..ctx.overhead_lanes(pid).len() {
        let li = ctx.overhead_lanes(pid)[k];
        let ev = &trace.lanes[li].ev;
        for i in ctx.overlapping(li, a, b) {
            let (s, e) = (ev.start[i], ev.end(i));
            if e <= a || s >= b || ctx.name_class(ev.name[i]) == NameClass::LibraryLoad {
                continue;
            }
            rows.push((s.max(a), e.min(b)));
            let d = ev.dur(i);
            if longest.is_none_or(|l| d > l.0) {
                longest = Some((d, li, i));
            }
        }
    }
    if rows.is_empty() {
        return (0, None);
    }
    let calls = Union::from_pairs(clipped(ctx, api, a, b).into_iter().map(|c| (c.0, c.1)));
    (Union::from_pairs(rows).overlap_with(&calls), longest.map(|l| (l.1, l.2)))
}

// Rule 3: Some(longest stretch outside CUDA calls) when thread `tid` issued calls back
// to back over `[a, b)` (the gap up to the launching call's return): no stretch outside
// CUDA calls and no single call longer than launch overhead allows, and less than half
// of the time blocked in synchronize calls or pageable copies.
fn launch_bound(ctx: &mut Ctx<'_>, pid: u32, tid: u32, a: Ns, b: Ns) -> Option<Ns> {
    let (Some(api), _) = ctx.thread_lanes(pid, tid) else { return None };
    let trace = ctx.trace;
    let ev = &trace.lanes[api].ev;
    // One pass over the calls clipped to `[a, b)`, in start order: the longest stretch
    // outside them is the largest distance from the furthest end so far to a start
    // (empty calls cover nothing and are skipped, as a union of them would).
    let (mut longest, mut prev) = (0, a);
    for i in ctx.overlapping(api, a, b) {
        let (s, e) = (ev.start[i].max(a), ev.end(i).min(b));
        if ev.end(i) <= a || ev.start[i] >= b {
            continue;
        }
        let limit = if ctx.act(api, i) == Act::Launch { LAUNCH_CALL_MAX_NS } else { LAUNCH_STRETCH_MAX_NS };
        if e - s > limit {
            return None;
        }
        if e > s {
            longest = longest.max(s - prev);
            prev = prev.max(e);
        }
    }
    longest = longest.max(b - prev);
    let t = ctx.act_times(Some(api), None, a, b);
    let blocked = t[Act::Sync as usize] + t[Act::Pageable as usize];
    (longest <= LAUNCH_STRETCH_MAX_NS && 2 * blocked < b - a).then_some(longest)
}

// Calls of thread `tid` starting in `[a, b)`.
fn calls_between(ctx: &mut Ctx<'_>, pid: u32, tid: u32, a: Ns, b: Ns) -> usize {
    let (Some(li), _) = ctx.thread_lanes(pid, tid) else { return 0 };
    let lo = ctx.starting_before(li, a);
    let hi = ctx.starting_before(li, b);
    hi - lo
}

// A host-blocking call that may have drained the GPU's queue, as rule 5 sees it.
#[derive(Debug, Clone, Copy)]
struct Drain {
    // The call the evidence names (the sync, or the pageable copy).
    call: ApiCall,
    // When the host began waiting: the call's start, or that of the pageable copy the
    // sync belongs to.
    since: Ns,
    // The call, or the copy the sync belongs to, is a copy from pageable memory.
    pageable: bool,
}

// Rule 5: the host-blocking call of thread `tid` that started or returned within
// DRAIN_SLACK_NS on either side of `start` (the latest to return). A synchronize that
// follows a pageable copy on the same thread within the slack is that copy's own sync.
fn draining_call(ctx: &mut Ctx<'_>, pid: u32, tid: u32, start: Ns) -> Option<Drain> {
    let (Some(li), _) = ctx.thread_lanes(pid, tid) else { return None };
    let near = |t: Ns| (start - DRAIN_SLACK_NS..=start + DRAIN_SLACK_NS).contains(&t);
    let mut best: Option<(usize, Ns, Ns)> = None;
    for i in ctx.overlapping(li, start - DRAIN_SLACK_NS, start + DRAIN_SLACK_NS + 1) {
        let ev = &ctx.trace.lanes[li].ev;
        let (s, e) = (ev.start[i], ev.end(i));
        if (near(s) || near(e)) && matches!(ctx.act(li, i), Act::Sync | Act::Pageable) && best.is_none_or(|b| e > b.2) {
            best = Some((i, s, e));
        }
    }
    let (i, s, e) = best?;
    let at = |i: usize| crate::model::EventRef { lane: li as u32, idx: i as u32 };
    let kind = ApiKind::from_flags(ctx.trace.lanes[li].ev.flags(i));
    let call = ApiCall { at: at(i), tid, start: s, end: e, kind };
    if ctx.act(li, i) == Act::Pageable {
        return Some(Drain { call, since: s, pageable: true });
    }
    // The copy the sync belongs to: the thread's last pageable copy, ending within the
    // slack before the sync began.
    let copy = (i.saturating_sub(4)..i).rev().find(|&k| {
        let ev = &ctx.trace.lanes[li].ev;
        ev.end(k) <= s && s - ev.end(k) <= DRAIN_SLACK_NS && ctx.act(li, k) == Act::Pageable
    });
    Some(match copy {
        Some(k) => Drain { call, since: ctx.trace.lanes[li].ev.start[k], pageable: true },
        None => Drain { call, since: s, pageable: false },
    })
}

// The hole `[a, b)` is the refill after a sync: a host-blocking call of thread `tid`
// (synchronize, synchronous or pageable copy, allocator call that waits for the device)
// was running when the GPU went idle at `a` and returned inside the hole. Only the first
// hole after the call qualifies: the GPU was busy until the call's wait ended.
fn refilling(ctx: &mut Ctx<'_>, pid: u32, tid: u32, (a, b): (Ns, Ns)) -> bool {
    let (Some(li), _) = ctx.thread_lanes(pid, tid) else { return false };
    ctx.overlapping(li, a, a + 1).any(|i| {
        let ev = &ctx.trace.lanes[li].ev;
        ev.start[i] < a && (a..b).contains(&ev.end(i)) && matches!(ctx.act(li, i), Act::Sync | Act::Pageable)
    })
}

// True when at least half of thread `tid`'s time in sync calls in `[a, b)` is in
// implicitly synchronising allocator calls.
fn implicit_sync_waits(ctx: &mut Ctx<'_>, pid: u32, tid: u32, a: Ns, b: Ns) -> bool {
    let (Some(api), _) = ctx.thread_lanes(pid, tid) else { return false };
    let (mut all, mut implicit) = (0, 0);
    for (s, e, i) in clipped(ctx, api, a, b) {
        if ctx.act(api, i) == Act::Sync {
            all += e - s;
            if ctx.implicit_sync(api, i) {
                implicit += e - s;
            }
        }
    }
    implicit > 0 && 2 * implicit >= all
}

// The evidence of a wait in allocator calls that synchronise: the calls seen, by name
// and count, their time in the gap, and the longest.
fn allocator_evidence(ctx: &mut Ctx<'_>, pid: u32, tid: u32, a: Ns, b: Ns) -> String {
    let who = ctx.trace.thread_label(pid, tid);
    let (Some(api), _) = ctx.thread_lanes(pid, tid) else { return String::new() };
    let mut by: Vec<(String, usize)> = Vec::new();
    let (mut total, mut longest) = (0, None::<(Ns, usize)>);
    for (s, e, i) in clipped(ctx, api, a, b) {
        if !ctx.implicit_sync(api, i) {
            continue;
        }
        let name = api_base(ctx.trace.strings.get(ctx.trace.lanes[api].ev.name[i])).to_string();
        match by.iter_mut().find(|(n, _)| *n == name) {
            Some((_, k)) => *k += 1,
            None => by.push((name, 1)),
        }
        total += e - s;
        if longest.is_none_or(|(d, _)| e - s > d) {
            longest = Some((e - s, i));
        }
    }
    let names: Vec<String> = by.iter().map(|(n, k)| format!("{n} ×{k}")).collect();
    let ev = &ctx.trace.lanes[api].ev;
    let long =
        longest.map_or(String::new(), |(_, i)| format!("; the longest {}", in_gap(ev.start[i], ev.end(i), a, b)));
    format!(
        "{} (allocator calls that synchronise) {} of {} on {who}{long}",
        names.join(", "),
        fmt_ns(total),
        fmt_ns(b - a)
    )
}

/// True for OS calls that write or sync a file (base libc names): what saving a
/// checkpoint spends its time in.
pub(crate) fn is_file_write(name: &str) -> bool {
    const NAMES: &[&str] = &[
        "write",
        "writev",
        "pwrite",
        "pwritev",
        "pwritev2",
        "fwrite",
        "fflush",
        "fsync",
        "fdatasync",
        "sync_file_range",
        "msync",
        "close",
        "fclose",
        "fopen",
        "ftruncate",
    ];
    NAMES.contains(&&*libc_base(name))
}

// True when thread `tid` wrote a checkpoint in `[a, b)`: at least half of it in calls
// that write or sync a file, or its longest OS call there made by a serializer (its
// backtrace holds `PyTorchStreamWriter` or pickle).
fn checkpoint_writes(ctx: &mut Ctx<'_>, pid: u32, tid: u32, a: Ns, b: Ns) -> bool {
    let (_, Some(os)) = ctx.thread_lanes(pid, tid) else { return false };
    let rows = clipped(ctx, os, a, b);
    let ev = &ctx.trace.lanes[os].ev;
    let writes = Union::from_pairs(
        rows.iter().filter(|r| is_file_write(ctx.trace.strings.get(ev.name[r.2]))).map(|r| (r.0, r.1)),
    );
    let longest = rows.iter().max_by_key(|r| (r.1 - r.0, Reverse(r.0)));
    2 * writes.total() >= b - a
        || longest.is_some_and(|r| ev.flags(r.2) & crate::model::OSRT_SERIALIZER != 0 && r.1 > r.0)
}

// Rule 2's evidence: what delayed work that was already queued.
fn queued_evidence(ctx: &mut Ctx<'_>, devices: &[DeviceActivity], w: &Win, c: &ApiCall, who: &str) -> String {
    let head =
        format!("{} on {who} queued the work {} before the gap", call_name(ctx.trace, c.at), fmt_ns(w.start - c.end));
    if let Some((name, d, owner)) = ctx.process_call_matching(w.pid, w.start, w.end, NameClass::ModuleLoad) {
        return format!("{head}; {name} {d} on {owner} was loading code (lazy loading)");
    }
    if let Some((name, _, owner)) = ctx.process_call_starting(w.pid, w.stretch_start, c.start) {
        return format!("{head}; {name} on {owner} made the stream wait");
    }
    let dur = w.end - w.start;
    let other = ctx.index.devices_of(w.pid).filter(|&d| d != w.device).find_map(|d| {
        let busy = devices.iter().find(|x| x.device == d)?.busy.busy_in(w.start, w.end);
        (2 * busy >= dur).then_some((d, busy))
    });
    if let Some((d, busy)) = other {
        return format!("{head}; GPU {d} was busy for {} of it (a cross-device dependency)", fmt_ns(busy));
    }
    format!("{head}; nothing in the trace says what delayed the GPU")
}

// The winning cause of rule 4 and the times its evidence quotes.
struct Score {
    cause: Cause,
    // `no call` time counted as host-busy (the process has an OS runtime trace) or unknown.
    busy_none: Ns,
    unknown: Ns,
    // Time in calls counted as host-busy.
    busy_calls: Ns,
}

// Rule 4 of docs/causes.md, for the deciding thread over [start, end).
fn score(ctx: &mut Ctx<'_>, pid: u32, tid: u32, start: Ns, end: Ns) -> Score {
    let (api, os) = ctx.thread_lanes(pid, tid);
    let times = ctx.act_times(api, os, start, end);
    let t = |act: Act| times[act as usize];
    let none = (end - start) - ACTS.iter().map(|&x| t(x)).sum::<Ns>();
    let (busy_none, unknown) = if ctx.os_traced.binary_search(&pid).is_ok() { (none, 0) } else { (0, none) };
    let busy_calls = t(Act::Launch) + t(Act::ApiOther) + t(Act::OsBusy);
    let scores = [
        (Cause::SyncWait, t(Act::Sync)),
        (Cause::PageableCopy, t(Act::Pageable)),
        (Cause::HostWait, t(Act::OsWait)),
        (Cause::HostBusy, busy_calls + busy_none),
        (Cause::Unknown, unknown),
    ];
    // max_by_key keeps the last maximum: iterate in reverse so ties go to the earlier cause.
    let (cause, _) = scores.iter().rev().copied().max_by_key(|&(_, s)| s).unwrap_or((Cause::Unknown, 0));
    Score { cause, busy_none, unknown, busy_calls }
}

// The evidence line of a gap decided by rule 4.
#[allow(
    clippy::wildcard_enum_match_arm,
    reason = "rule 4 scores only the causes above and `Unknown` (see `score`), which the last arm is"
)]
fn score_evidence(ctx: &mut Ctx<'_>, pid: u32, tid: u32, (start, end): (Ns, Ns), s: &Score) -> String {
    let who = || ctx.trace.thread_label(pid, tid);
    let dur = end - start;
    match s.cause {
        Cause::SyncWait => longest_call(ctx, pid, tid, &[Act::Sync], start, end),
        Cause::PageableCopy => longest_call(ctx, pid, tid, &[Act::Pageable], start, end),
        Cause::HostWait => longest_call(ctx, pid, tid, &[Act::OsWait], start, end),
        Cause::HostBusy if s.busy_none < s.busy_calls => {
            longest_call(ctx, pid, tid, &[Act::ApiOther, Act::OsBusy, Act::Launch], start, end)
        }
        Cause::HostBusy => format!("no CUDA or OS call for {} of {} on {}", fmt_ns(s.busy_none), fmt_ns(dur), who()),
        _ => format!("no OS runtime trace; {} of {} outside CUDA calls on {}", fmt_ns(s.unknown), fmt_ns(dur), who()),
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
            // The longest inside the gap: a call that outlasts it counts by its part in it.
            let d = ev.end(i).min(end) - ev.start[i].max(start);
            if d > 0 && best.is_none_or(|(b, _, _)| d > b) && acts.contains(&ctx.act(li, i)) {
                best = Some((d, li, i));
            }
        }
    }
    let who = trace.thread_label(pid, tid);
    match best {
        Some((_, li, i)) => {
            let ev = &trace.lanes[li].ev;
            let name = crate::text::name(trace.strings.get(ev.name[i]));
            format!("{name} {} on {who}", in_gap(ev.start[i], ev.end(i), start, end))
        }
        None => format!("calls nested in longer ones on {who}"),
    }
}

/// The duration of a call `[s, e)` as a gap `[a, b)` saw it: its part inside the gap,
/// and the whole call in brackets when it outlasts the gap (`2.07 ms in the gap (32.4 ms
/// call)`).
pub(crate) fn in_gap(s: Ns, e: Ns, a: Ns, b: Ns) -> String {
    let (inside, whole) = (fmt_ns((e.min(b) - s.max(a)).max(0)), fmt_ns(e - s));
    // A call a few ns outside the gap reads the same both ways: no brackets.
    if inside == whole { whole } else { format!("{inside} in the gap ({whole} call)") }
}

// Rule 4's `unknown` (no OS runtime trace) where the thread's own ranges say what it did:
// in a DataLoader's `__next__` (`enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__`,
// the name PyTorch's profiler gives the fetch) for at least half of the gap, the loop
// waited for its next batch: `host-wait` on workers, `host-busy` where the loader runs on
// the thread itself (`_SingleProcessDataLoaderIter`: `num_workers=0`).
fn loader_wait(ctx: &mut Ctx<'_>, pid: u32, tid: u32, (a, b): (Ns, Ns), s: &Score) -> Option<Verdict> {
    if s.cause != Cause::Unknown {
        return None;
    }
    let range = covering_range(ctx, pid, Some(tid), a, b)?;
    let name = ctx.trace.strings.get(range);
    if !is_loader_next(name) {
        return None;
    }
    let cause = if name.contains("SingleProcess") { Cause::HostBusy } else { Cause::HostWait };
    let cover = range_time(ctx, pid, tid, range, a, b);
    Some(Verdict { cause, detail: Detail::Loader(range, cover), hint: Hint::Loader })
}

/// True for the range PyTorch's profiler records around a DataLoader's fetch
/// (`enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`, or its multi-process twin).
pub(crate) fn is_loader_next(name: &str) -> bool {
    name.contains("DataLoader") && name.ends_with("__next__")
}

// Time in `[a, b)` under ranges named `name` on thread `tid` of `pid`.
fn range_time(ctx: &mut Ctx<'_>, pid: u32, tid: u32, name: StrId, a: Ns, b: Ns) -> Ns {
    let trace = ctx.trace;
    let (table, starts) = (&ctx.lanes, &mut ctx.starts);
    let lo = table.partition_point(|&((p, _), _)| p < pid);
    let hi = table.partition_point(|&((p, _), _)| p <= pid);
    let mut t = 0;
    for li in table[lo..hi].iter().filter(|((_, x), _)| *x == tid).flat_map(|(_, l)| l.nvtx.iter().copied()) {
        let ev = &trace.lanes[li].ev;
        let mut i = starts.find(li, &ev.start, |&s| s < b);
        while i > 0 && ev.end(i - 1) > a {
            i -= 1;
            if ev.name[i] == name {
                t += ev.end(i).min(b) - ev.start[i].max(a);
            }
        }
    }
    t
}

// The phase of `[a, b)`: the innermost NVTX range covering at least half of it on
// thread `tid`, else on another thread of the process.
fn phase_of(ctx: &mut Ctx<'_>, pid: u32, tid: u32, a: Ns, b: Ns) -> Option<String> {
    let trace = ctx.trace;
    let best = phase_id(ctx, pid, tid, a, b)?;
    Some(phase_name(trace.strings.get(best), ctx.options.exact_names).into_owned())
}

// The range [`phase_of`] names: on thread `tid`, else on any thread of `pid`.
fn phase_id(ctx: &mut Ctx<'_>, pid: u32, tid: u32, a: Ns, b: Ns) -> Option<StrId> {
    covering_range(ctx, pid, Some(tid), a, b).or_else(|| covering_range(ctx, pid, None, a, b))
}

// Name of the innermost user range (no framework operator's) covering at least half of
// `[a, b)` on thread `tid` (None: on any other thread of `pid`).
fn covering_range(ctx: &mut Ctx<'_>, pid: u32, tid: Option<u32>, a: Ns, b: Ns) -> Option<StrId> {
    let trace = ctx.trace;
    // Disjoint fields: the lane table is read while the start finder moves on (no copy
    // of the lane list per call: short holes call this hundreds of thousands of times).
    let (table, starts, flags) = (&ctx.lanes, &mut ctx.starts, &mut ctx.flags);
    let lo = table.partition_point(|&((p, _), _)| p < pid);
    let hi = table.partition_point(|&((p, _), _)| p <= pid);
    let lanes = table[lo..hi]
        .iter()
        .filter(|((_, t), _)| tid.is_none_or(|x| x == *t))
        .flat_map(|(_, l)| l.nvtx.iter().copied());
    let need = (b - a).max(1);
    // (start, -end, name): the latest start, then the shortest, is the innermost.
    let mut best: Option<(Ns, Ns, StrId)> = None;
    for li in lanes {
        let ev = &trace.lanes[li].ev;
        // Ranges of one NVTX lane do not overlap: those overlapping [a, b) are the
        // last ones starting before b, back to the first ending after a.
        let mut i = starts.find(li, &ev.start, |&s| s < b);
        while i > 0 && ev.end(i - 1) > a {
            i -= 1;
            let cover = ev.end(i).min(b) - ev.start[i].max(a);
            // An operator's range (aten::mm) is no phase: the user range around it is.
            let innermost = 2 * cover >= need && best.is_none_or(|(s, ne, _)| (ev.start[i], -ev.end(i)) > (s, ne));
            if innermost && flags.get(trace, li, i) != crate::model::OPERATOR_DOMAIN {
                best = Some((ev.start[i], -ev.end(i), ev.name[i]));
            }
            if ev.start[i] <= a {
                break;
            }
        }
    }
    best.map(|(_, _, n)| n)
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
                #[allow(
                    clippy::wildcard_enum_match_arm,
                    reason = "a test helper: every other kind gets rows without a correlation id"
                )]
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

    // Short holes of a trace with kernels at [0, 100 µs), [130, 140 µs) and [170, 180 µs)
    // (launched by thread 100 at [110, 120 µs) and [150, 160 µs)) and `sync` on thread
    // 100: per cause, and the steady short idle they must add up to.
    fn short_holes(sync: (Ns, Ns)) -> ([(usize, Ns); Cause::ALL.len()], Ns) {
        const US: Ns = 1_000;
        let b = Builder::new()
            .lane(
                LaneKind::Kernels { device: 0, stream: 7 },
                &[(0, 100 * US, "k1", 1), (130 * US, 140 * US, "k2", 2), (170 * US, 180 * US, "k3", 3)],
            )
            .lane(
                API,
                &[
                    (sync.0, sync.1, "cudaStreamSynchronize", 9),
                    (110 * US, 120 * US, "cudaLaunchKernel", 2),
                    (150 * US, 160 * US, "cudaLaunchKernel", 3),
                ],
            )
            .lane(OS, &[(0, 10, "ioctl", 0)]);
        let devices = [DeviceActivity::compute(&b.0, 0)];
        let (index, options) = (Index::build(&b.0), Options::default());
        let w = super::super::Windows { steady_start: 0, steady_end: MS };
        let (by_cause, _) = Explainer::new(&b.0, &index, &devices, &options).short_holes(w);
        (by_cause, super::super::Steady::of(&devices, &[], w).short_idle_ns)
    }

    #[test]
    fn the_hole_right_after_a_sync_is_the_syncs() {
        const US: Ns = 1_000;
        // The sync waits for k1 and returns 3 µs into the 30 µs hole: its refill.
        let (by_cause, short) = short_holes((50 * US, 103 * US));
        assert_eq!(by_cause[Cause::SyncDrain as usize], (1, 30 * US));
        // The next hole waits on the next launch alone: launch-bound, not the sync's,
        // though the sync returned within rule 5's slack of it.
        assert_eq!(by_cause[Cause::LaunchBound as usize], (1, 30 * US));
        assert_eq!(by_cause.iter().map(|c| c.1).sum::<Ns>(), short);
        // A sync that returned while k1 still ran emptied no queue: both holes are launches.
        let (by_cause, _) = short_holes((50 * US, 90 * US));
        assert_eq!(by_cause[Cause::SyncDrain as usize], (0, 0));
        assert_eq!(by_cause[Cause::LaunchBound as usize], (2, 60 * US));
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
        // The call began before the gap: the evidence says its part in the gap.
        assert_eq!(g.evidence, "cudaStreamSynchronize 8.00 ms in the gap (8.50 ms call) on python3 (tid 100)");
    }

    #[test]
    fn a_free_that_waits_for_the_device_is_a_sync_of_the_allocator() {
        // empty_cache()'s cudaFree began while the GPU ran and returns inside the gap.
        let g = Builder::new()
            .gap_until(10 * MS)
            .lane(API, &[(MS / 2, 8 * MS, "cudaFree_v3020", 9), launch_at(10 * MS)])
            .lane(OS, &[(0, 10, "ioctl", 0)])
            .gap();
        assert_eq!((g.cause, g.hint), (Cause::SyncWait, Hint::Allocator), "{}", g.evidence);
        assert_eq!(
            g.evidence,
            "cudaFree ×1 (allocator calls that synchronise) 7.00 ms of 9.00 ms on python3 (tid 100); the longest 7.00 ms \
             in the gap (7.50 ms call)"
        );
        // A free that drained the queue, then host work: sync-drain, allocator.
        let g = Builder::new()
            .gap_until(3 * MS)
            .lane(API, &[(0, MS + 50_000, "cudaFree", 9), launch_at(3 * MS)])
            .lane(OS, &[(0, 10, "ioctl", 0)])
            .gap();
        assert_eq!((g.cause, g.hint), (Cause::SyncDrain, Hint::Allocator), "{}", g.evidence);
        assert!(
            g.evidence.starts_with("cudaFree (an allocator call that waits for the device) returned"),
            "{}",
            g.evidence
        );
        // An allocation that began before the gap and went on 6 ms after it (mapping
        // memory) did not wait for the device: driver work, host-busy.
        let g = Builder::new()
            .gap_until(10 * MS)
            .lane(API, &[(MS / 2, 7 * MS, "cudaHostAlloc_v3020", 9), launch_at(10 * MS)])
            .lane(OS, &[(0, 10, "ioctl", 0)])
            .gap();
        assert_eq!((g.cause, g.hint), (Cause::HostBusy, Hint::None), "{}", g.evidence);
        // One that returned before the device idled (launches followed it) did not wait.
        let g = Builder::new()
            .gap_until(3 * MS)
            .lane(API, &[(-2 * MS, MS - 90_000, "cudaMalloc_v3020", 9), launch_at(3 * MS)])
            .lane(OS, &[(0, 10, "ioctl", 0)])
            .gap();
        assert_eq!((g.cause, g.hint), (Cause::HostBusy, Hint::None), "{}", g.evidence);
        // One that returned as the device idled waited for it: a drain.
        let g = Builder::new()
            .gap_until(3 * MS)
            .lane(API, &[(0, MS + 50_000, "cudaMalloc_v3020", 9), launch_at(3 * MS)])
            .lane(OS, &[(0, 10, "ioctl", 0)])
            .gap();
        assert_eq!((g.cause, g.hint), (Cause::SyncDrain, Hint::Allocator), "{}", g.evidence);
        // A cudaMalloc that began on an idle device waited for nothing: host work.
        let g = Builder::new()
            .gap_until(10 * MS)
            .lane(API, &[(2 * MS, 8 * MS, "cudaMalloc_v3020", 9), launch_at(10 * MS)])
            .lane(OS, &[(0, 10, "ioctl", 0)])
            .gap();
        assert_eq!((g.cause, g.hint), (Cause::HostBusy, Hint::None), "{}", g.evidence);
        // Stream-ordered frees do not synchronise.
        assert!(!is_implicit_sync("cudaFreeAsync_v11020"));
        assert!(is_implicit_sync("cudaHostAlloc_v3020") && syncs_when_busy("cudaHostAlloc_v3020"));
        assert!(is_implicit_sync("cuMemFree_v2") && !syncs_when_busy("cuMemFree_v2"));
    }

    #[test]
    fn file_writes_and_a_serializer_on_the_launching_thread_are_a_checkpoint() {
        // torch.save's fclose then fsync of the file: 8 ms of the 9 ms gap.
        let g = Builder::new()
            .gap_until(10 * MS)
            .lane(API, &[launch_at(10 * MS)])
            .lane(OS, &[(MS / 2, 3 * MS, "fclose", 0), (3 * MS, 9 * MS, "fsync", 0)])
            .gap();
        assert_eq!(g.hint, Hint::Checkpoint, "{:?} {}", g.cause, g.evidence);
        // Serializing: a 3 ms writev whose backtrace is PyTorchStreamWriter's, then 6 ms
        // of CPU (the zip's checksum): the cause is host work, the mechanism a checkpoint.
        let mut b = Builder::new().gap_until(10 * MS).lane(API, &[launch_at(10 * MS)]);
        let mut ev = Events::default();
        let id = b.0.strings.intern("writev");
        ev.push(MS, 4 * MS, id, None, None, Some(crate::model::OSRT_SERIALIZER));
        b.0.lanes.push(Lane::new(OS, PID, ev));
        let g = b.gap();
        assert_eq!((g.cause, g.hint), (Cause::HostBusy, Hint::Checkpoint), "{}", g.evidence);
        // The same writev without a serializer's backtrace (a log line): no checkpoint.
        let g = Builder::new()
            .gap_until(10 * MS)
            .lane(API, &[launch_at(10 * MS)])
            .lane(OS, &[(MS, 4 * MS, "writev", 0)])
            .gap();
        assert_eq!((g.cause, g.hint), (Cause::HostBusy, Hint::None), "{}", g.evidence);
    }

    #[test]
    fn evidence_clips_calls_to_the_gap() {
        // A condition wait from before the gap to after its end: 9 ms of it in the gap.
        let g = Builder::new()
            .gap_until(10 * MS)
            .lane(API, &[launch_at(10 * MS)])
            .lane(OS, &[(0, 20 * MS, "pthread_cond_wait", 0)])
            .gap();
        assert_eq!(g.cause, Cause::HostWait);
        assert_eq!(g.evidence, "pthread_cond_wait 9.00 ms in the gap (20.0 ms call) on python3 (tid 100)");
        // The longest call is the longest in the gap, not the longest call.
        let g = Builder::new()
            .gap_until(10 * MS)
            .lane(API, &[launch_at(10 * MS)])
            .lane(OS, &[(0, 2 * MS, "pthread_cond_wait", 0), (3 * MS, 7 * MS, "poll", 0)])
            .gap();
        assert_eq!(g.evidence, "poll 4.00 ms on python3 (tid 100)");
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

    // Calls of `len` ns every `every` ns over [from, to), alternating two names.
    fn back_to_back(
        from: Ns,
        to: Ns,
        every: Ns,
        len: Ns,
        names: [&'static str; 2],
    ) -> Vec<(Ns, Ns, &'static str, u32)> {
        (0..=((to - from) / every))
            .map(|k| from + k * every)
            .take_while(|&t| t < to)
            .enumerate()
            .map(|(k, t)| (t, t + len, names[k % 2], 100 + k as u32))
            .collect()
    }

    #[test]
    fn calls_back_to_back_are_launch_bound_at_any_length() {
        // A 5 ms gap: launches and runtime queries every 10 us (4 us each, 40% of the
        // time in calls), then the launch of the next kernel.
        let end = 6 * MS;
        let mut calls = back_to_back(MS, end - 20_000, 10_000, 4_000, ["cudaLaunchKernel", "cudaGetDevice"]);
        calls.push(launch_at(end));
        let g = Builder::new().gap_until(end).lane(API, &calls).lane(OS, &[(0, 10, "ioctl", 0)]).gap();
        assert_eq!(g.cause, Cause::LaunchBound, "{}", g.evidence);
        assert!(
            g.evidence.contains("CUDA calls back to back (longest stretch outside them 6.00 µs)"),
            "{}",
            g.evidence
        );
        // One stretch of 80 us of Python in the middle: host work, not launch overhead.
        let mut slow = back_to_back(MS, 3 * MS, 10_000, 4_000, ["cudaLaunchKernel", "cudaGetDevice"]);
        slow.extend(back_to_back(3 * MS + 80_000, end - 20_000, 10_000, 4_000, ["cudaLaunchKernel", "cudaGetDevice"]));
        slow.push(launch_at(end));
        let g = Builder::new().gap_until(end).lane(API, &slow).lane(OS, &[(0, 10, "ioctl", 0)]).gap();
        assert_eq!(g.cause, Cause::HostBusy, "{}", g.evidence);
        // Back to back, but in long allocation calls: driver work, host-busy.
        let mut alloc = back_to_back(MS, end - 20_000, 200_000, 195_000, ["cudaMalloc", "cudaMalloc"]);
        alloc.push(launch_at(end));
        let g = Builder::new().gap_until(end).lane(API, &alloc).lane(OS, &[(0, 10, "ioctl", 0)]).gap();
        assert_eq!(g.cause, Cause::HostBusy, "{}", g.evidence);
    }

    #[test]
    fn work_launched_before_the_gap_is_queued_with_what_delayed_it() {
        let end = MS + 300_000;
        let queued = Builder::new()
            .gap_until(end)
            .lane(API, &[(MS / 2, MS / 2 + 10, "cudaLaunchKernel", 2)])
            .lane(OS, &[(0, 10, "ioctl", 0)])
            .gap();
        assert_eq!(queued.cause, Cause::Queued);
        assert!(queued.evidence.ends_with("nothing in the trace says what delayed the GPU"), "{}", queued.evidence);
        // A module load on another thread across the gap.
        let lazy = Builder::new()
            .gap_until(end)
            .lane(API, &[(MS / 2, MS / 2 + 10, "cudaLaunchKernel", 2)])
            .lane(LaneKind::CudaApi { tid: 101 }, &[(MS, end, "cuLibraryLoadData", 9)])
            .gap();
        assert_eq!(lazy.cause, Cause::Queued);
        assert!(
            lazy.evidence.contains("cuLibraryLoadData 300 µs on pt_data_worker (tid 101) was loading code"),
            "{}",
            lazy.evidence
        );
        // A stream wait issued between the busy stretch and the launch.
        let wait = Builder::new()
            .gap_until(end)
            .lane(API, &[(MS / 4, MS / 4 + 5, "cudaStreamWaitEvent", 3), (MS / 2, MS / 2 + 10, "cudaLaunchKernel", 2)])
            .gap();
        assert!(
            wait.evidence.contains("cudaStreamWaitEvent on python3 (tid 100) made the stream wait"),
            "{}",
            wait.evidence
        );
    }

    #[test]
    fn profiler_overhead_while_the_thread_is_in_a_cuda_call_is_profiler() {
        let end = 10 * MS;
        let b = Builder::new()
            .gap_until(end)
            .lane(API, &[(MS, end - 5_000, "cudaLaunchKernel", 2)])
            .lane(OS, &[(0, 10, "ioctl", 0)])
            .lane(LaneKind::Overhead { tid: 101 }, &[(2 * MS, 8 * MS, "CUPTI Buffer flush", 0)]);
        let g = b.gap();
        assert_eq!(g.cause, Cause::Profiler, "{}", g.evidence);
        assert!(g.evidence.starts_with("CUPTI Buffer flush 6.00 ms on pt_data_worker (tid 101)"), "{}", g.evidence);
        // The same flush while the thread runs Python: the flush did not stall it.
        let g = Builder::new()
            .gap_until(end)
            .lane(API, &[launch_at(end)])
            .lane(OS, &[(0, 10, "ioctl", 0)])
            .lane(LaneKind::Overhead { tid: 101 }, &[(2 * MS, 8 * MS, "CUPTI Buffer flush", 0)])
            .gap();
        assert_eq!(g.cause, Cause::HostBusy, "{}", g.evidence);
    }

    #[test]
    fn a_gap_that_begins_as_a_sync_returns_is_sync_drain_unless_the_thread_then_waits() {
        let end = 10 * MS;
        // The host waited 5.5 ms in the sync, more than half the 9 ms it then worked.
        let sync = (-4 * MS, MS + 20_000, "cudaStreamSynchronize", 1);
        let g = Builder::new().gap_until(end).lane(API, &[sync, launch_at(end)]).lane(OS, &[(0, 10, "ioctl", 0)]).gap();
        assert_eq!(g.cause, Cause::SyncDrain);
        assert!(g.evidence.starts_with("cudaStreamSynchronize returned 20.0 µs into the gap; then"), "{}", g.evidence);
        // The same sync returning 4 us before the gap start: the same cause.
        let early = (-4 * MS, MS - 4_000, "cudaStreamSynchronize", 1);
        let g =
            Builder::new().gap_until(end).lane(API, &[early, launch_at(end)]).lane(OS, &[(0, 10, "ioctl", 0)]).gap();
        assert_eq!(g.cause, Cause::SyncDrain, "{}", g.evidence);
        assert!(g.evidence.contains("returned 4.00 µs before the gap"), "{}", g.evidence);
        // A short sync (a metrics .item()) then long Python: the Python is the gap.
        let short = (MS / 2, MS + 20_000, "cudaStreamSynchronize", 1);
        let g =
            Builder::new().gap_until(end).lane(API, &[short, launch_at(end)]).lane(OS, &[(0, 10, "ioctl", 0)]).gap();
        assert_eq!(g.cause, Cause::HostBusy, "{}", g.evidence);
        assert!(g.evidence.ends_with("after a 520 µs cudaStreamSynchronize"), "{}", g.evidence);
        // The sync of a pageable copy takes the same test: a short copy and sync, then
        // 9 ms of host work (an eval loop building its batch after `.cpu()`): host-busy.
        let copy = (0, MS / 2, "cudaMemcpyAsync", 3);
        let g = Builder::new()
            .gap_until(end)
            .lane(API, &[copy, short, launch_at(end)])
            .lane(OS, &[(0, 10, "ioctl", 0)])
            .lane(LaneKind::Memory { device: 1, stream: 3, class: MemClass::H2D }, &[(0, MS / 2, "copy", 3)])
            .gap();
        assert_eq!((g.cause, g.hint), (Cause::HostBusy, Hint::None), "{}", g.evidence);
        // A copy and its sync that waited from 4 ms before the gap: they drained it.
        let (copy, sync) =
            ((-4 * MS, -3 * MS, "cudaMemcpyAsync", 3), (-3 * MS + 50_000, MS + 20_000, "cudaStreamSynchronize", 1));
        let g = Builder::new()
            .gap_until(end)
            .lane(API, &[copy, sync, launch_at(end)])
            .lane(OS, &[(0, 10, "ioctl", 0)])
            .lane(LaneKind::Memory { device: 1, stream: 3, class: MemClass::H2D }, &[(-4 * MS, -3 * MS, "copy", 3)])
            .gap();
        assert_eq!((g.cause, g.hint), (Cause::SyncDrain, Hint::PageableSync), "{}", g.evidence);
        // After the sync the thread waits for a batch: host-wait.
        let g = Builder::new()
            .gap_until(end)
            .lane(API, &[sync, launch_at(end)])
            .lane(OS, &[(2 * MS, 9 * MS, "poll", 0)])
            .gap();
        assert_eq!(g.cause, Cause::HostWait);
        // A sync that starts and returns more than 100 us from the gap start did not drain it.
        let late = (MS / 2, MS + 200_000, "cudaStreamSynchronize", 1);
        let g = Builder::new().gap_until(end).lane(API, &[late, launch_at(end)]).lane(OS, &[(0, 10, "ioctl", 0)]).gap();
        assert_eq!(g.cause, Cause::HostBusy);
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
    fn the_phase_is_the_innermost_range_covering_half_the_gap() {
        // Gap [1 ms, 10 ms): `report` closes 1 ms in, `copy data` covers the rest.
        let b = Builder::new()
            .gap_until(10 * MS)
            .lane(API, &[launch_at(10 * MS)])
            .lane(LaneKind::Nvtx { tid: 100, depth: 0 }, &[(0, 20 * MS, "step 3", 0)])
            .lane(
                LaneKind::Nvtx { tid: 100, depth: 1 },
                &[(0, 2 * MS, "report", 0), (2 * MS, 12 * MS, "copy data", 0)],
            );
        assert_eq!(b.gap().phase.as_deref(), Some("copy data"));
        // Nothing inside the step covers half the gap: the step itself.
        let b = Builder::new()
            .gap_until(10 * MS)
            .lane(API, &[launch_at(10 * MS)])
            .lane(LaneKind::Nvtx { tid: 100, depth: 0 }, &[(0, 20 * MS, "step 3", 0)])
            .lane(
                LaneKind::Nvtx { tid: 100, depth: 1 },
                &[(0, 4 * MS, "report", 0), (7 * MS, 12 * MS, "copy data", 0)],
            );
        assert_eq!(b.gap().phase.as_deref(), Some("step N"));
        let d = DeviceActivity::compute(&b.0, 0);
        let exact = Options { exact_names: true, ..Options::default() };
        assert_eq!(find_gaps(&b.0, &[d], &exact)[0].phase.as_deref(), Some("step 3"));
        // A range on another thread of the process when the deciding thread has none.
        let b = Builder::new()
            .gap_until(10 * MS)
            .lane(API, &[launch_at(10 * MS)])
            .lane(LaneKind::Nvtx { tid: 101, depth: 0 }, &[(MS, 9 * MS, "load batch", 0)]);
        assert_eq!(b.gap().phase.as_deref(), Some("load batch"));
        // Ranges covering less than half: no phase.
        let b = Builder::new()
            .gap_until(10 * MS)
            .lane(API, &[launch_at(10 * MS)])
            .lane(LaneKind::Nvtx { tid: 100, depth: 0 }, &[(0, 3 * MS, "report", 0)]);
        assert_eq!(b.gap().phase, None);
    }

    #[test]
    fn without_an_os_trace_a_gap_in_the_dataloader_s_next_is_a_wait_for_the_loader() {
        // Gap [1 ms, 10 ms), no OS runtime trace; the thread sits in the loader's `__next__`
        // from 2 ms to 9.5 ms: the loop waited for its next batch.
        let with = |name: &str, (a, b): (Ns, Ns)| {
            Builder::new()
                .gap_until(10 * MS)
                .lane(API, &[launch_at(10 * MS)])
                .lane(LaneKind::Nvtx { tid: 100, depth: 0 }, &[(a, b, name, 0)])
        };
        let multi = "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__";
        let g = with(multi, (2 * MS, 9 * MS + MS / 2)).gap();
        assert_eq!((g.cause, g.hint), (Cause::HostWait, Hint::Loader), "{}", g.evidence);
        assert!(g.evidence.contains(&format!("`{multi}` for 7.50 ms of 9.00 ms")), "{}", g.evidence);
        // `num_workers=0`: the thread itself loads.
        let single = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__";
        let g = with(single, (2 * MS, 9 * MS + MS / 2)).gap();
        assert_eq!((g.cause, g.hint), (Cause::HostBusy, Hint::Loader), "{}", g.evidence);
        // Under half of the gap, or another range: nothing said.
        assert_eq!(with(multi, (2 * MS, 5 * MS)).gap().cause, Cause::Unknown);
        assert_eq!(with("eval", (2 * MS, 9 * MS)).gap().cause, Cause::Unknown);
        // With an OS runtime trace the calls decide, as ever.
        let g = with(multi, (2 * MS, 9 * MS + MS / 2)).lane(OS, &[(0, 10, "ioctl", 0)]).gap();
        assert_eq!((g.cause, g.hint), (Cause::HostBusy, Hint::None), "{}", g.evidence);
    }

    #[test]
    fn storage_calls_by_name() {
        for n in ["read", "pread64", "openat", "open64", "fopen", "stat", "fstat", "newfstatat", "fsync"] {
            assert!(is_io_call(n), "{n}");
        }
        // glibc's large-file and fortified symbols, as nsys names them (`os.preadv` in
        // Python reaches preadv64v2): storage calls that block, on files only.
        for n in ["preadv64v2", "preadv64", "pread64", "__pread64_chk", "__read_chk", "fopen64", "stat64", "fread"] {
            assert!(is_io_call(n), "{n}");
        }
        for n in ["preadv64v2", "preadv64", "pread64", "__pread64_chk", "__fread_chk"] {
            assert!(is_blocking_os_call(n) && is_file_call(n), "{n}");
        }
        assert!(!is_file_call("__read_chk"), "read may read a pipe");
        assert_eq!(libc_base("preadv64v2"), "preadv2");
        assert_eq!(libc_base("mmap64"), "mmap");
        for n in ["poll", "pthread_cond_wait", "munmap", "ioctl", "write", "mmap", "sem_wait"] {
            assert!(!is_io_call(n), "{n}");
        }
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
        let mut score = [0usize; Cause::ALL.len()];
        for (a, o) in api.iter().zip(os) {
            let c = match (*a, *o) {
                (Slot::Api("cudaStreamSynchronize"), _) => Cause::SyncWait,
                (Slot::Api("cudaMemcpyAsync"), _) => Cause::PageableCopy,
                (Slot::Api(_), _) | (_, Slot::Os("munmap") | Slot::Free) => Cause::HostBusy,
                _ => Cause::HostWait,
            };
            score[c as usize] += 1;
        }
        let cause = Cause::ALL.into_iter().rev().max_by_key(|&c| score[c as usize]).unwrap();
        if cause == Cause::HostBusy && drains(api) { Cause::SyncDrain } else { cause }
    }

    // Rule 5 over slots (one slot is the 100 us slack; the gap starts at slot 0 and lasts
    // `api.len()` slots): the blocking run that starts or ends within a slot of the start,
    // the latest to end, drains when it (with the pageable copy it follows, for a sync)
    // lasts half the gap.
    fn drains(api: &[Slot]) -> bool {
        let runs = rows(api, 0, 1, 0);
        let blocking = |n: &str| n == "cudaStreamSynchronize" || n == "cudaMemcpyAsync";
        let Some(best) = runs.iter().filter(|r| blocking(r.2) && (r.0 <= 1 || r.1 <= 1)).max_by_key(|r| r.1) else {
            return false;
        };
        // A sync right after a pageable copy waited from the copy's start.
        let since = if best.2 == "cudaStreamSynchronize" {
            runs.iter()
                .rev()
                .find(|r| r.2 == "cudaMemcpyAsync" && r.1 <= best.0 && best.0 - r.1 <= 1)
                .map_or(best.0, |r| r.0)
        } else {
            best.0
        };
        2 * (best.1 - since) >= api.len() as Ns
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
        fn overlapping_holds_every_row_that_overlaps_at_any_block(
            api in nested_calls(300),
            block in 1usize..=MAX_END_BLOCK,
            windows in prop::collection::vec((0i64..700, 0i64..300), 1..8),
        ) {
            let rows: Vec<_> = api.iter().map(|&(s, d, n)| (s, s + d, APIS[n], 0)).collect();
            let b = Builder::new().lane(API, &rows);
            let (index, options) = (Index::build(&b.0), Options::default());
            let mut ctx = Ctx::new(&b.0, &index, &options);
            let (Some(li), _) = ctx.thread_lanes(PID, 100) else { return Ok(()) };
            let ev = &b.0.lanes[li].ev;
            if !b.0.lanes[li].disjoint {
                ctx.max_end[li] = (block, running_max_end_by(ev, block));
            }
            // Windows in any order: the searches gallop back as well as on.
            for (a, w) in windows {
                let r = ctx.overlapping(li, a, a + w);
                for i in 0..ev.len() {
                    if ev.end(i) > a && ev.start[i] < a + w {
                        prop_assert!(r.contains(&i), "row {} ({}, {}) not in {:?} for [{}, {})", i, ev.start[i], ev.end(i), r, a, a + w);
                    }
                }
            }
        }

        #[test]
        fn launch_bound_s_longest_stretch_is_that_outside_the_union_of_calls(
            api in nested_calls(150),
            windows in prop::collection::vec((0i64..700, 1i64..300), 1..8),
        ) {
            let rows: Vec<_> = api.iter().map(|&(s, d, _)| (s, s + d, "cudaLaunchKernel", 0)).collect();
            let b = Builder::new().lane(API, &rows);
            let (index, options) = (Index::build(&b.0), Options::default());
            let mut ctx = Ctx::new(&b.0, &index, &options);
            for (a, w) in windows {
                let clipped = rows.iter().filter(|r| r.1 > a && r.0 < a + w).map(|r| (r.0.max(a), r.1.min(a + w)));
                let (mut want, mut prev) = (0, a);
                for (s, e) in Union::from_pairs(clipped).iter().chain(std::iter::once((a + w, a + w))) {
                    want = want.max(s - prev);
                    prev = prev.max(e);
                }
                prop_assert_eq!(launch_bound(&mut ctx, PID, 100, a, a + w), Some(want));
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
