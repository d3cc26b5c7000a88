//! What CPU threads did in a time window, from context switches (`OnCpu` lanes), CPU
//! samples (`Samples` lanes) and OS runtime calls: time on and off CPU, the functions
//! sampled, how busy the CPUs a process can use were, and which other threads ran.
//!
//! * *Usable CPUs* of a set of processes are the CPUs any of their threads ran on during
//!   the whole trace (the process's affinity as observed; cgroup limits are not in the
//!   export).
//! * *Busy share* of those CPUs in `[a, b)` is the on-CPU time of every thread of the
//!   trace, any process, on them, over `usable CPUs x (b - a)`. A process-tree capture
//!   records only the profiled processes' threads, so other processes' load is missing:
//!   the share is then a lower bound.
//! * Off-CPU time of a thread is split by what the OS runtime trace says about it:
//!   inside a blocking call ([`is_blocking_os_call`]: waiting on a thread, a process or
//!   I/O), inside another OS call (`open`, `mmap`... often storage or page faults), or
//!   outside any call: runnable (preempted) or in an untraced wait. nsys records no run
//!   state on switch-out (`threadState` is 0), so that last part is all we know.
//!
//! [`HostIndex`] is built once per trace (O(n log n) over the on-CPU intervals, 16
//! bytes per interval); every query is a few binary searches plus the events inside the
//! window.

use std::collections::HashMap;

use super::gaps::{MAX_END_BLOCK, is_blocking_os_call, is_file_call, is_io_call, running_max_end};
use crate::model::{Lane, LaneKind, Ns, StrId, Trace};

// Name classes of OS calls.
const BLOCKING: u8 = 1;
const IO: u8 = 2;
const FILE: u8 = 4;
const SLEEP: u8 = 8;
const LOCK: u8 = 16;

// Sleeps: the thread waits on a clock, not on anything else.
fn is_sleep_call(name: &str) -> bool {
    name.contains("sleep")
}

// Waits on another thread of the same process: futexes, condition variables, mutexes,
// semaphores (the autograd engine, a GIL hand-off, a pin-memory thread).
fn is_lock_wait(name: &str) -> bool {
    ["futex", "pthread_cond", "pthread_mutex", "_lock", "sem_"].iter().any(|p| name.contains(p))
        && !name.contains("unlock")
        && !name.contains("trylock")
}

// Intervals per block of prefix sums in a CPU's columns.
const BLOCK: usize = 32;

/// On-CPU intervals of one CPU, all threads: disjoint, sorted, with prefix sums.
#[derive(Debug, Clone, Default)]
struct CpuColumns {
    start: Vec<Ns>,
    // Lengths; an interval longer than u32::MAX ns is split.
    len: Vec<u32>,
    // Index into `HostIndex::threads`.
    who: Vec<u32>,
    // Busy time before the first interval of each block.
    block_cum: Vec<Ns>,
}

impl CpuColumns {
    fn build(mut v: Vec<(Ns, Ns, u32)>) -> Self {
        v.sort_unstable_by_key(|&(s, e, w)| (s, e, w));
        let mut c = Self::default();
        let mut prev_end = Ns::MIN;
        let mut cum = 0;
        for (s, e, w) in v {
            // One CPU runs one thread at a time: clip overlaps from lost switches.
            let mut s = s.max(prev_end);
            while s < e {
                let l = (e - s).min(Ns::from(u32::MAX));
                if c.start.len().is_multiple_of(BLOCK) {
                    c.block_cum.push(cum);
                }
                c.start.push(s);
                c.len.push(l as u32);
                c.who.push(w);
                cum += l;
                s += l;
            }
            prev_end = prev_end.max(e);
        }
        c
    }

    fn end(&self, i: usize) -> Ns {
        self.start[i] + Ns::from(self.len[i])
    }

    // Busy time in (-inf, t).
    fn busy_before(&self, t: Ns) -> Ns {
        let k = self.start.partition_point(|&s| s < t);
        if k == 0 {
            return 0;
        }
        let b = (k - 1) / BLOCK;
        let mut acc = self.block_cum[b];
        for i in b * BLOCK..k {
            acc += self.end(i).min(t) - self.start[i];
        }
        acc
    }

    fn busy_in(&self, a: Ns, b: Ns) -> Ns {
        if b <= a { 0 } else { self.busy_before(b) - self.busy_before(a) }
    }

    // Rows intersecting [a, b).
    fn rows_in(&self, a: Ns, b: Ns) -> std::ops::Range<usize> {
        if b <= a {
            return 0..0;
        }
        let lo = self.start.partition_point(|&s| s < a);
        let lo = lo - usize::from(lo > 0 && self.end(lo - 1) > a);
        lo..self.start.partition_point(|&s| s < b).max(lo)
    }

    fn heap_bytes(&self) -> usize {
        self.start.capacity() * 8 + self.len.capacity() * 4 + self.who.capacity() * 4 + self.block_cum.capacity() * 8
    }
}

/// Host lanes of one thread.
#[derive(Debug, Clone, Default)]
struct ThreadLanes {
    on_cpu: Option<usize>,
    samples: Option<usize>,
    os: Option<usize>,
    // Running max of OS call ends per MAX_END_BLOCK rows; empty when calls do not nest.
    os_max_end: Vec<Ns>,
    // The thread's life: from the start of its first row to the end of its last, over
    // every lane of it (CUDA API, OS runtime, NVTX, samples, context switches).
    life: Option<(Ns, Ns)>,
    // Its record in `Trace::threads` (the first with its pid and tid), if any: rule 6
    // reads the names of the threads of every gap.
    record: Option<usize>,
}

/// Fewest samples in a gap for its evidence line to name hot functions (the `host`
/// object and the per-cause totals keep every sample), or for a mechanism read from the
/// samples (`openmp`, `new-shapes`).
pub(crate) const MIN_SAMPLES: usize = 5;

/// Share of a process tree's on-CPU time below which a CPU it touched is a stray, not
/// one its affinity allows: 0.2%.
pub(crate) const STRAY_CPU_SHARE: f64 = 0.002;

/// Share of a viewer cell a CPU must give a process for its CPU row to count it.
pub(crate) const ACTIVE_CPU_SHARE: f64 = 0.05;

/// Per-CPU on-CPU intervals and per-thread host lanes of a trace, built once.
#[derive(Debug, Clone, Default)]
pub struct HostIndex {
    // Sorted CPU ids and their columns.
    cpu_ids: Vec<u32>,
    cpus: Vec<CpuColumns>,
    // (pid, tid) sorted, and their lanes.
    threads: Vec<(u32, u32)>,
    lanes: Vec<ThreadLanes>,
    // Per pid (sorted): CPU ids its threads ran on during the trace, sorted.
    pid_cpus: Vec<(u32, Vec<(u32, Ns)>)>,
    // Per string id: BLOCKING and IO bits of an OS call name.
    blocking: Vec<u8>,
    // Per pid (sorted): on-CPU time of nsys's own threads in it (left out of every load).
    profiler_cpu: Vec<(u32, Ns)>,
}

/// Threads that nsys itself runs inside the profiled processes (`[NSys]`, `[NSys Comms]`,
/// `NSys PySampling`, `CUPTI worker thread`...): they are no part of the job's load,
/// thread counts or producers.
pub(crate) fn is_profiler_thread(name: &str) -> bool {
    name.starts_with("[NSys") || name.starts_with("NSys") || name.contains("CUPTI") || name.contains("CommsProcess")
}

impl HostIndex {
    /// Index the `OnCpu`, `Samples` and `Osrt` lanes of `trace`.
    pub fn build(trace: &Trace) -> Self {
        Self::build_for(trace, |_| true)
    }

    /// Index the host lanes of the processes that `keep` accepts.
    pub fn build_for(trace: &Trace, keep: impl Fn(u32) -> bool) -> Self {
        let mut ix = Self::default();
        let mut by_thread: HashMap<(u32, u32), ThreadLanes> = HashMap::new();
        for (li, l) in trace.lanes.iter().enumerate().filter(|(_, l)| keep(l.pid)) {
            #[allow(
                clippy::wildcard_enum_match_arm,
                reason = "a filter: the index keeps a thread's on-CPU, sample and OS runtime lanes"
            )]
            match l.kind {
                LaneKind::OnCpu { tid } => by_thread.entry((l.pid, tid)).or_default().on_cpu = Some(li),
                LaneKind::Samples { tid } => by_thread.entry((l.pid, tid)).or_default().samples = Some(li),
                LaneKind::Osrt { tid } => {
                    let t = by_thread.entry((l.pid, tid)).or_default();
                    t.os = Some(li);
                    if !l.disjoint {
                        t.os_max_end = running_max_end(&l.ev);
                    }
                }
                _ => {}
            }
        }
        // A thread exists from its first row to its last, on any lane.
        for l in trace.lanes.iter().filter(|l| keep(l.pid) && !l.ev.is_empty()) {
            let Some(t) = l.kind.tid().and_then(|tid| by_thread.get_mut(&(l.pid, tid))) else { continue };
            let last = if l.disjoint {
                l.ev.end(l.ev.len() - 1)
            } else {
                (0..l.ev.len()).map(|i| l.ev.end(i)).max().unwrap_or(0)
            };
            t.life = Some(t.life.map_or((l.ev.start[0], last), |(s, e)| (s.min(l.ev.start[0]), e.max(last))));
        }
        for (k, t) in trace.threads.iter().enumerate().rev() {
            if let Some(lanes) = by_thread.get_mut(&(t.pid, t.tid)) {
                lanes.record = Some(k);
            }
        }
        let mut threads: Vec<_> = by_thread.into_iter().collect();
        threads.sort_unstable_by_key(|&(k, _)| k);
        (ix.threads, ix.lanes) = threads.into_iter().unzip();
        ix.index_cpus(trace);
        ix.blocking = trace
            .strings
            .iter()
            .map(|(_, s)| {
                (u8::from(is_blocking_os_call(s)) * BLOCKING)
                    | (u8::from(is_io_call(s)) * IO)
                    | (u8::from(is_file_call(s)) * FILE)
                    | (u8::from(is_sleep_call(s)) * SLEEP)
                    | (u8::from(is_lock_wait(s)) * LOCK)
            })
            .collect();
        ix
    }

    fn index_cpus(&mut self, trace: &Trace) {
        let mut per_cpu: HashMap<u32, Vec<(Ns, Ns, u32)>> = HashMap::new();
        let mut pid_cpus: HashMap<u32, HashMap<u32, Ns>> = HashMap::new();
        let mut profiler: HashMap<u32, Ns> = HashMap::new();
        // The affinity is read from the part of the run that feeds the GPU: a program may
        // pin itself after it starts (os.sched_setaffinity before importing torch).
        let from = first_gpu_op(trace).unwrap_or(Ns::MIN);
        for (w, t) in self.lanes.iter().enumerate() {
            let Some(li) = t.on_cpu else { continue };
            let ev = &trace.lanes[li].ev;
            let (pid, tid) = self.threads[w];
            if is_profiler_thread(self.thread_name(trace, pid, tid)) {
                *profiler.entry(pid).or_default() += (0..ev.len()).map(|i| ev.dur(i)).sum::<Ns>();
                continue;
            }
            let seen = pid_cpus.entry(pid).or_default();
            for i in 0..ev.len() {
                let cpu = ev.aux(i) as u32;
                per_cpu.entry(cpu).or_default().push((ev.start[i], ev.end(i), w as u32));
                if ev.end(i) > from {
                    *seen.entry(cpu).or_default() += ev.end(i) - ev.start[i].max(from);
                }
            }
        }
        self.profiler_cpu = profiler.into_iter().collect();
        self.profiler_cpu.sort_unstable();
        let mut cpus: Vec<_> = per_cpu.into_iter().collect();
        cpus.sort_unstable_by_key(|&(c, _)| c);
        (self.cpu_ids, self.cpus) = cpus.into_iter().map(|(c, v)| (c, CpuColumns::build(v))).unzip();
        self.pid_cpus = pid_cpus
            .into_iter()
            .map(|(p, m)| {
                let mut v: Vec<(u32, Ns)> = m.into_iter().collect();
                v.sort_unstable();
                (p, v)
            })
            .collect();
        self.pid_cpus.sort_unstable_by_key(|&(p, _)| p);
    }

    /// Time in `[a, b)` during which at least one of `others` ran on a CPU while thread
    /// `me` did not: how much of `me`'s time off CPU they computed through.
    pub fn on_cpu_while_off_ns(&self, trace: &Trace, me: (u32, u32), others: &[(u32, u32)], a: Ns, b: Ns) -> Ns {
        let on = |threads: &[(u32, u32)]| {
            let mut v: Vec<(Ns, Ns)> = threads
                .iter()
                .filter_map(|&(p, t)| self.thread(p, t)?.on_cpu)
                .flat_map(|li| clipped(&trace.lanes[li], a, b))
                .collect();
            v.sort_unstable();
            merge(v)
        };
        let (mine, theirs) = (on(&[me]), on(others));
        len(&theirs) - overlap(&theirs, &mine)
    }

    /// True when thread (`pid`, `tid`) has an OS runtime trace.
    pub fn has_os_calls(&self, pid: u32, tid: u32) -> bool {
        self.thread(pid, tid).is_some_and(|t| t.os.is_some())
    }

    /// On-CPU time of nsys's own threads in the processes `pids` (profiler overhead on
    /// the host; no load counts it).
    pub fn profiler_cpu_ns(&self, pids: &[u32]) -> Ns {
        self.profiler_cpu.iter().filter(|(p, _)| pids.contains(p)).map(|&(_, t)| t).sum()
    }

    /// True when the trace has no context switches and no CPU samples.
    pub fn is_empty(&self) -> bool {
        self.cpus.is_empty() && self.lanes.iter().all(|t| t.samples.is_none())
    }

    /// Heap bytes of the index.
    pub fn heap_bytes(&self) -> usize {
        self.cpus.iter().map(CpuColumns::heap_bytes).sum::<usize>()
            + self.lanes.iter().map(|t| t.os_max_end.capacity() * 8 + 48).sum::<usize>()
            + self.threads.capacity() * 8
            + self.blocking.capacity()
    }

    /// [`Trace::thread_name`] of `trace` (the trace this index was built from), found by
    /// a binary search for the threads it indexes, by a scan for the others.
    pub(crate) fn thread_name<'t>(&self, trace: &'t Trace, pid: u32, tid: u32) -> &'t str {
        match self.thread(pid, tid) {
            Some(t) => t.record.and_then(|k| trace.threads.get(k)).map_or("", |t| &t.name),
            None => trace.thread_name(pid, tid),
        }
    }

    fn thread(&self, pid: u32, tid: u32) -> Option<&ThreadLanes> {
        self.threads.binary_search(&(pid, tid)).ok().map(|i| &self.lanes[i])
    }

    /// True when OS call `name` waits on another thread of the process (a futex,
    /// condition variable, mutex or semaphore).
    pub(crate) fn is_lock_call(&self, name: StrId) -> bool {
        self.blocking.get(name as usize).is_some_and(|c| c & LOCK != 0)
    }

    // Threads of process `pid`, as indices.
    fn threads_of(&self, pid: u32) -> std::ops::Range<usize> {
        let lo = self.threads.partition_point(|&(p, _)| p < pid);
        lo..self.threads.partition_point(|&(p, _)| p <= pid)
    }

    /// CPUs the threads of `pids` ran on while the GPU was in use (from the trace's first
    /// GPU operation on), sorted: their affinity as observed. A CPU that got less than
    /// [`STRAY_CPU_SHARE`] of their time there is a stray (a thread started before the
    /// program pinned itself) and not counted.
    pub fn usable_cpus(&self, pids: &[u32]) -> Vec<u32> {
        let mut per: HashMap<u32, Ns> = HashMap::new();
        for i in pids.iter().filter_map(|p| self.pid_cpus.binary_search_by_key(p, |&(q, _)| q).ok()) {
            for &(c, t) in &self.pid_cpus[i].1 {
                *per.entry(c).or_default() += t;
            }
        }
        let total: Ns = per.values().sum();
        let mut v: Vec<u32> =
            per.into_iter().filter(|&(_, t)| t as f64 >= STRAY_CPU_SHARE * total as f64).map(|(c, _)| c).collect();
        v.sort_unstable();
        v
    }

    /// Instants of `[a, b)` at which every CPU of `cpus` ran a thread (nsys's own
    /// threads left out), as disjoint sorted intervals. Cost: the switches in the window.
    pub fn all_busy(&self, cpus: &[u32], a: Ns, b: Ns) -> Vec<(Ns, Ns)> {
        let mut acc: Vec<(Ns, Ns)> = if b > a && !cpus.is_empty() { vec![(a, b)] } else { Vec::new() };
        for c in cpus {
            if acc.is_empty() {
                break;
            }
            let Ok(k) = self.cpu_ids.binary_search(c) else { return Vec::new() };
            let col = &self.cpus[k];
            let busy: Vec<(Ns, Ns)> =
                merge(col.rows_in(a, b).map(|r| (col.start[r].max(a), col.end(r).min(b))).collect());
            acc = intersect(&acc, &busy);
        }
        acc
    }

    /// Time thread (`pid`, `tid`) was runnable in `[a, b)` (off CPU outside any OS
    /// call) during `full`, the instants at which every usable CPU ran another thread
    /// ([`HostIndex::all_busy`]): waiting for a CPU. None without context switches of
    /// the thread.
    pub fn contended_ns(&self, trace: &Trace, (pid, tid): (u32, u32), full: &[(Ns, Ns)], a: Ns, b: Ns) -> Option<Ns> {
        let runnable = runnable_intervals(trace, self, pid, tid, a, b)?;
        Some(overlap(&runnable, full))
    }

    /// On-CPU time of all threads on `cpu` in `[a, b)`: two binary searches.
    pub fn cpu_busy_ns(&self, cpu: u32, a: Ns, b: Ns) -> Ns {
        self.cpu_ids.binary_search(&cpu).map_or(0, |i| self.cpus[i].busy_in(a, b))
    }

    /// Time thread (`pid`, `tid`) spent on a CPU in `[a, b)`; None when the trace has
    /// no context switches of it.
    pub fn on_cpu_ns(&self, trace: &Trace, pid: u32, tid: u32, a: Ns, b: Ns) -> Option<Ns> {
        let li = self.thread(pid, tid)?.on_cpu?;
        Some(clipped(&trace.lanes[li], a, b).map(|(s, e)| e - s).sum())
    }
}

// Start of the trace's first GPU operation.
fn first_gpu_op(trace: &Trace) -> Option<Ns> {
    trace.lanes.iter().filter(|l| l.kind.is_gpu_work()).filter_map(|l| l.ev.start.first().copied()).min()
}

// Events of a disjoint lane intersecting [a, b), clipped to it.
fn clipped(lane: &Lane, a: Ns, b: Ns) -> impl Iterator<Item = (Ns, Ns)> + '_ {
    let ev = &lane.ev;
    let lo = ev.start.partition_point(|&s| s < a);
    let lo = lo - usize::from(lo > 0 && ev.end(lo - 1) > a);
    let hi = ev.start.partition_point(|&s| s < b).max(lo);
    (lo..hi).map(move |i| (ev.start[i].max(a), ev.end(i).min(b))).filter(|(s, e)| s < e)
}

// Rows of OS lane `lane` that may overlap [a, b) (every row that does is in the range).
fn os_rows(lane: &Lane, max_end: &[Ns], a: Ns, b: Ns) -> std::ops::Range<usize> {
    let ev = &lane.ev;
    let lo = ev.start.partition_point(|&s| s < a);
    let hi = ev.start.partition_point(|&s| s < b);
    let first = if max_end.is_empty() {
        lo - usize::from(lo > 0 && ev.end(lo - 1) > a)
    } else {
        max_end.partition_point(|&e| e <= a) * MAX_END_BLOCK
    };
    first.min(lo)..hi
}

/// Where a thread's time went in a window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub(crate) struct ThreadTime {
    /// Window length.
    pub window_ns: Ns,
    /// On a CPU.
    pub on_cpu_ns: Ns,
    /// Off CPU inside a blocking OS runtime call (waiting on a thread, process or I/O).
    pub blocked_ns: Ns,
    /// Off CPU inside another OS runtime call (`open`, `mmap`, `ioctl`...).
    pub os_call_ns: Ns,
    /// Off CPU outside any OS runtime call: runnable (preempted) or an untraced wait.
    pub runnable_ns: Ns,
    /// Off CPU inside a storage call ([`is_io_call`]: `read`, `pread`, `open`, `stat`...),
    /// part of `blocked_ns` and `os_call_ns`.
    pub io_ns: Ns,
    /// The part of `io_ns` in calls that only touch files ([`is_file_call`]: not `read`,
    /// which may be a pipe).
    pub file_ns: Ns,
    /// Off CPU inside a sleep (`nanosleep`, `clock_nanosleep`, `usleep`...).
    pub sleep_ns: Ns,
    /// Off CPU waiting on a futex, condition variable, mutex or semaphore.
    pub lock_ns: Ns,
    /// Off CPU in OS calls made while taking Python's GIL (from their backtraces).
    pub gil_ns: Ns,
}

/// On/off-CPU split of thread (`pid`, `tid`) over `[a, b)`; None when the trace has no
/// context switches of it.
pub(crate) fn thread_time(trace: &Trace, ix: &HostIndex, pid: u32, tid: u32, a: Ns, b: Ns) -> Option<ThreadTime> {
    let t = ix.thread(pid, tid)?;
    let window_ns = (b - a).max(0);
    // Before its first row and after its last the thread does not exist: it waits for
    // nothing there (the window stays the one asked for: shares are of it).
    let life = t.life.unwrap_or((a, a));
    let (a, b) = (a.max(life.0), b.min(life.1).max(a.max(life.0)));
    let on: Vec<(Ns, Ns)> = clipped(&trace.lanes[t.on_cpu?], a, b).collect();
    let (mut blocking, mut all, mut io, mut file) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut sleep, mut lock, mut gil) = (Vec::new(), Vec::new(), Vec::new());
    if let Some(li) = t.os {
        let lane = &trace.lanes[li];
        for i in os_rows(lane, &t.os_max_end, a, b) {
            let (s, e) = (lane.ev.start[i].max(a), lane.ev.end(i).min(b));
            if s < e {
                all.push((s, e));
                let class = ix.blocking.get(lane.ev.name[i] as usize).copied().unwrap_or(0);
                if class & BLOCKING != 0 {
                    blocking.push((s, e));
                }
                if class & IO != 0 {
                    io.push((s, e));
                }
                if class & FILE != 0 {
                    file.push((s, e));
                }
                if class & SLEEP != 0 {
                    sleep.push((s, e));
                }
                if class & LOCK != 0 {
                    lock.push((s, e));
                }
                if lane.ev.flags(i) & crate::model::OSRT_GIL != 0 {
                    gil.push((s, e));
                }
            }
        }
    }
    let (blocking, all, io, file) = (merge(blocking), merge(all), merge(io), merge(file));
    let (sleep, lock, gil) = (merge(sleep), merge(lock), merge(gil));
    let on_cpu_ns: Ns = on.iter().map(|(s, e)| e - s).sum();
    let len = |v: &[(Ns, Ns)]| v.iter().map(|(s, e)| e - s).sum::<Ns>();
    let blocked_ns = len(&blocking) - overlap(&blocking, &on);
    let off_in_calls = len(&all) - overlap(&all, &on);
    Some(ThreadTime {
        window_ns,
        on_cpu_ns,
        blocked_ns,
        os_call_ns: off_in_calls - blocked_ns,
        runnable_ns: (b - a).max(0) - on_cpu_ns - off_in_calls,
        io_ns: len(&io) - overlap(&io, &on),
        file_ns: len(&file) - overlap(&file, &on),
        sleep_ns: len(&sleep) - overlap(&sleep, &on),
        lock_ns: len(&lock) - overlap(&lock, &on),
        gil_ns: len(&gil) - overlap(&gil, &on),
    })
}

/// The OS calls of thread (`pid`, `tid`) in `[a, b)` whose names `keep` accepts, by
/// base libc name ([`super::gaps::libc_base`]), with their time in the window (calls
/// clipped to it), longest first: what an evidence line names.
pub(crate) fn os_calls_seen(
    trace: &Trace,
    ix: &HostIndex,
    (pid, tid): (u32, u32),
    (a, b): (Ns, Ns),
    keep: impl Fn(&str) -> bool,
) -> Vec<(String, Ns)> {
    let Some((lane, rows)) = os_calls_in(trace, ix, (pid, tid), (a, b)) else { return Vec::new() };
    let mut by: HashMap<String, Ns> = HashMap::new();
    for i in rows {
        let d = lane.ev.end(i).min(b) - lane.ev.start[i].max(a);
        let name = trace.strings.get(lane.ev.name[i]);
        if d > 0 && keep(name) {
            *by.entry(super::gaps::libc_base(name).into_owned()).or_default() += d;
        }
    }
    let mut v: Vec<(String, Ns)> = by.into_iter().collect();
    v.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
    v
}

/// The OS runtime lane of thread (`pid`, `tid`) and its rows that may overlap `[a, b)`
/// (every row that does is in the range); None without an OS runtime trace.
pub(crate) fn os_calls_in<'t>(
    trace: &'t Trace,
    ix: &HostIndex,
    (pid, tid): (u32, u32),
    (a, b): (Ns, Ns),
) -> Option<(&'t Lane, std::ops::Range<usize>)> {
    let t = ix.thread(pid, tid)?;
    let lane = &trace.lanes[t.os?];
    Some((lane, os_rows(lane, &t.os_max_end, a, b)))
}

/// Shortest OS runtime call nsys records a backtrace for (`--osrt-backtrace-threshold`,
/// 80 µs by default): a shorter call has none, so nothing in it says what it waited for.
pub(crate) const BACKTRACE_MIN_NS: Ns = 80_000;

/// Fewest backtraced calls of one wait on one thread that say what that wait is for.
pub(crate) const MIN_BACKTRACED: usize = 5;

/// A lock wait (`pthread_cond_timedwait`...) that a thread makes for Python's GIL, known
/// from the calls of it long enough to have a backtrace ([`BACKTRACE_MIN_NS`]): at least
/// [`MIN_BACKTRACED`] of them, and more than half, take the GIL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GilWait {
    /// The thread.
    pub tid: u32,
    /// The call's name.
    pub name: StrId,
    /// Its calls with a backtrace over the trace.
    pub backtraced: usize,
    /// Those whose backtrace takes the GIL.
    pub gil: usize,
}

/// The [`GilWait`]s of the threads of process `pid`, by thread and name; empty where the
/// capture has no OS-call backtraces.
pub(crate) fn gil_waits(trace: &Trace, ix: &HostIndex, pid: u32) -> Vec<GilWait> {
    let mut out = Vec::new();
    for i in ix.threads_of(pid) {
        let Some(li) = ix.lanes[i].os else { continue };
        let ev = &trace.lanes[li].ev;
        let mut by: HashMap<StrId, (usize, usize)> = HashMap::new();
        for k in (0..ev.len()).filter(|&k| ix.is_lock_call(ev.name[k]) && ev.end(k) - ev.start[k] >= BACKTRACE_MIN_NS) {
            let n = by.entry(ev.name[k]).or_default();
            *n = (n.0 + 1, n.1 + usize::from(ev.flags(k) & crate::model::OSRT_GIL != 0));
        }
        let tid = ix.threads[i].1;
        out.extend(
            by.into_iter()
                .filter(|&(_, (all, gil))| gil >= MIN_BACKTRACED && 2 * gil > all)
                .map(|(name, (backtraced, gil))| GilWait { tid, name, backtraced, gil }),
        );
    }
    out.sort_by_key(|w| (w.tid, w.name));
    out
}

/// Off-CPU time of thread `(pid, tid)` in `[a, b)` inside its OS calls that `keep`
/// accepts (row of its OS runtime lane), each instant once.
pub(crate) fn off_cpu_in_calls(
    trace: &Trace,
    ix: &HostIndex,
    (pid, tid): (u32, u32),
    (a, b): (Ns, Ns),
    keep: impl Fn(&crate::model::Events, usize) -> bool,
) -> Ns {
    let Some((lane, rows)) = os_calls_in(trace, ix, (pid, tid), (a, b)) else { return 0 };
    let ev = &lane.ev;
    let kept = rows.filter(|&k| keep(ev, k)).map(|k| (ev.start[k].max(a), ev.end(k).min(b))).filter(|(s, e)| s < e);
    merge(kept.collect()).into_iter().map(|(s, e)| e - s - ix.on_cpu_ns(trace, pid, tid, s, e).unwrap_or(0)).sum()
}

/// `fsync 40.1 ms, close 2.6 ms`: the first `n` of [`os_calls_seen`].
pub(crate) fn calls_text(calls: &[(String, Ns)], n: usize) -> String {
    let parts: Vec<String> = calls.iter().take(n).map(|(c, d)| format!("{c} {}", crate::text::fmt_ns(*d))).collect();
    parts.join(", ")
}

// Off-CPU stretches of a thread in [a, b) outside any OS runtime call: runnable, or an
// untraced wait.
fn runnable_intervals(trace: &Trace, ix: &HostIndex, pid: u32, tid: u32, a: Ns, b: Ns) -> Option<Vec<(Ns, Ns)>> {
    let t = ix.thread(pid, tid)?;
    let life = t.life.unwrap_or((a, a));
    let (a, b) = (a.max(life.0), b.min(life.1).max(a.max(life.0)));
    let mut covered: Vec<(Ns, Ns)> = clipped(&trace.lanes[t.on_cpu?], a, b).collect();
    if let Some(li) = t.os {
        let lane = &trace.lanes[li];
        covered.extend(
            os_rows(lane, &t.os_max_end, a, b)
                .map(|i| (lane.ev.start[i].max(a), lane.ev.end(i).min(b)))
                .filter(|(s, e)| s < e),
        );
        covered.sort_unstable();
    }
    let covered = merge(covered);
    let mut out = Vec::new();
    let mut prev = a;
    for (s, e) in covered.into_iter().chain(std::iter::once((b, b))) {
        if s > prev {
            out.push((prev, s));
        }
        prev = prev.max(e);
    }
    Some(out)
}

// Intersection of two disjoint sorted interval lists.
fn intersect(x: &[(Ns, Ns)], y: &[(Ns, Ns)]) -> Vec<(Ns, Ns)> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < x.len() && j < y.len() {
        let (s, e) = (x[i].0.max(y[j].0), x[i].1.min(y[j].1));
        if s < e {
            out.push((s, e));
        }
        if x[i].1 < y[j].1 { i += 1 } else { j += 1 }
    }
    out
}

// Union of intervals sorted by start as disjoint sorted intervals.
fn merge(v: Vec<(Ns, Ns)>) -> Vec<(Ns, Ns)> {
    let mut out: Vec<(Ns, Ns)> = Vec::with_capacity(v.len());
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

// Total length of disjoint intervals.
fn len(v: &[(Ns, Ns)]) -> Ns {
    v.iter().map(|(s, e)| e - s).sum()
}

// Length of the intersection of two disjoint sorted interval lists.
fn overlap(x: &[(Ns, Ns)], y: &[(Ns, Ns)]) -> Ns {
    let (mut i, mut j, mut acc) = (0, 0, 0);
    while i < x.len() && j < y.len() {
        acc += (x[i].1.min(y[j].1) - x[i].0.max(y[j].0)).max(0);
        if x[i].1 < y[j].1 { i += 1 } else { j += 1 }
    }
    acc
}

/// A sampled function and its share of a thread's samples.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TopSymbol {
    /// Leaf frame symbol (`[module]` for the addresses nsys could not resolve).
    pub symbol: String,
    /// File name of its module (`libc.so.6`, `python3.12`), without the directory.
    pub module: String,
    /// Samples of this symbol.
    pub samples: usize,
    /// Share of the window's samples in `[0, 1]`.
    pub share: f64,
}

impl TopSymbol {
    /// `symbol (module)`, or `[module]` for unresolved addresses.
    pub fn label(&self) -> String {
        if self.symbol.starts_with('[') { self.symbol.clone() } else { format!("{} ({})", self.symbol, self.module) }
    }
}

/// CPU samples of a thread in a window.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub(crate) struct SampleSummary {
    /// Samples in the window.
    pub samples: usize,
    /// The most sampled leaf symbols, most first (ties by name).
    pub top: Vec<TopSymbol>,
}

/// The `n` most sampled leaf symbols of thread (`pid`, `tid`) in `[a, b)`.
pub(crate) fn top_symbols(
    trace: &Trace,
    ix: &HostIndex,
    pid: u32,
    tid: u32,
    (a, b): (Ns, Ns),
    n: usize,
) -> SampleSummary {
    let Some(li) = ix.thread(pid, tid).and_then(|t| t.samples) else { return SampleSummary::default() };
    let ev = &trace.lanes[li].ev;
    let rows = ev.start.partition_point(|&s| s < a)..ev.start.partition_point(|&s| s < b);
    let samples = rows.len();
    let mut counts: HashMap<(StrId, StrId), usize> = HashMap::new();
    for i in rows {
        *counts.entry((ev.name[i], ev.aux(i) as StrId)).or_default() += 1;
    }
    // Unresolved addresses (`0x7f...`) count together per module: `[libm.so.6]`.
    let mut merged: HashMap<(String, String), usize> = HashMap::new();
    for ((s, m), k) in counts {
        let module = module_file(trace.strings.get(m)).to_string();
        let sym = trace.strings.get(s);
        let symbol = if sym.starts_with("0x") { format!("[{module}]") } else { sym.to_string() };
        *merged.entry((symbol, module)).or_default() += k;
    }
    let mut top: Vec<TopSymbol> = merged
        .into_iter()
        .map(|((symbol, module), k)| TopSymbol { symbol, module, samples: k, share: k as f64 / samples as f64 })
        .collect();
    top.sort_by(|x, y| y.samples.cmp(&x.samples).then_with(|| (&x.symbol, &x.module).cmp(&(&y.symbol, &y.module))));
    top.truncate(n);
    SampleSummary { samples, top }
}

/// Samples of thread `(pid, tid)` in `[a, b)`, and those whose stack takes or hands over
/// Python's GIL ([`crate::model::SAMPLE_GIL`]).
pub(crate) fn gil_samples(trace: &Trace, ix: &HostIndex, (pid, tid): (u32, u32), (a, b): (Ns, Ns)) -> (usize, usize) {
    let Some(li) = ix.thread(pid, tid).and_then(|t| t.samples) else { return (0, 0) };
    let ev = &trace.lanes[li].ev;
    let rows = ev.start.partition_point(|&s| s < a)..ev.start.partition_point(|&s| s < b);
    let gil = rows.clone().filter(|&i| ev.flags(i) & crate::model::SAMPLE_GIL != 0).count();
    (rows.len(), gil)
}

/// Samples of thread `(pid, tid)` in `[a, b)` per module file (`libgomp.so.1`), most
/// first, and their total.
pub(crate) fn module_samples(
    trace: &Trace,
    ix: &HostIndex,
    (pid, tid): (u32, u32),
    (a, b): (Ns, Ns),
) -> (Vec<(String, usize)>, usize) {
    let Some(li) = ix.thread(pid, tid).and_then(|t| t.samples) else { return (Vec::new(), 0) };
    let ev = &trace.lanes[li].ev;
    let rows = ev.start.partition_point(|&s| s < a)..ev.start.partition_point(|&s| s < b);
    let total = rows.len();
    let mut by_id: HashMap<StrId, usize> = HashMap::new();
    for i in rows {
        *by_id.entry(ev.aux(i) as StrId).or_default() += 1;
    }
    let mut by_file: HashMap<String, usize> = HashMap::new();
    for (m, k) in by_id {
        *by_file.entry(module_file(trace.strings.get(m)).to_string()).or_default() += k;
    }
    let mut v: Vec<(String, usize)> = by_file.into_iter().collect();
    v.sort_by(|x, y| y.1.cmp(&x.1).then_with(|| x.0.cmp(&y.0)));
    (v, total)
}

/// The file name of a module path.
pub(crate) fn module_file(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Load of the CPUs a set of processes can use, in a window.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CpuLoad {
    /// CPU ids the processes' threads ran on during the trace.
    pub usable: Vec<u32>,
    /// On-CPU time of all threads on those CPUs over `usable x window`, in `[0, 1]`.
    pub busy_share: f64,
    /// Distinct threads (any process) that ran on those CPUs in the window.
    pub threads: usize,
}

/// Load of the CPUs usable by `pids` over `[a, b)`.
pub fn cpu_load(ix: &HostIndex, pids: &[u32], a: Ns, b: Ns) -> CpuLoad {
    cpu_load_on(ix, ix.usable_cpus(pids), a, b)
}

/// The same for CPUs `usable` already found ([`HostIndex::usable_cpus`] of the pids).
pub(crate) fn cpu_load_on(ix: &HostIndex, usable: Vec<u32>, a: Ns, b: Ns) -> CpuLoad {
    let mut busy = 0;
    let mut who: Vec<u32> = Vec::new();
    for c in &usable {
        let Ok(i) = ix.cpu_ids.binary_search(c) else { continue };
        let col = &ix.cpus[i];
        busy += col.busy_in(a, b);
        who.extend(col.rows_in(a, b).map(|r| col.who[r]));
    }
    who.sort_unstable();
    who.dedup();
    let cap = usable.len() as f64 * (b - a).max(0) as f64;
    CpuLoad { busy_share: if cap > 0.0 { busy as f64 / cap } else { 0.0 }, usable, threads: who.len() }
}

/// Another thread of the process tree and its time on CPU in a window.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Producer {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Thread label (`pt_data_worker (tid 815)`).
    pub name: String,
    /// On-CPU time over the window, in `[0, 1]`.
    pub on_cpu_share: f64,
}

/// Threads of `pids` other than (`pid`, `tid`) that ran in `[a, b)`, busiest first
/// (ties by pid, tid).
pub(crate) fn producers(
    trace: &Trace,
    ix: &HostIndex,
    pids: &[u32],
    (pid, tid): (u32, u32),
    a: Ns,
    b: Ns,
) -> Vec<Producer> {
    let w = (b - a).max(1) as f64;
    let mut pids = pids.to_vec();
    pids.sort_unstable();
    pids.dedup();
    let mut out: Vec<Producer> = Vec::new();
    for p in pids {
        for i in ix.threads_of(p) {
            let (tp, tt) = ix.threads[i];
            if (tp, tt) == (pid, tid) {
                continue;
            }
            let Some(on) = ix.on_cpu_ns(trace, tp, tt, a, b).filter(|&n| n > 0) else { continue };
            out.push(Producer { pid: tp, tid: tt, name: trace.thread_label(tp, tt), on_cpu_share: on as f64 / w });
        }
    }
    out.sort_by(|x, y| y.on_cpu_share.total_cmp(&x.on_cpu_share).then((x.pid, x.tid).cmp(&(y.pid, y.tid))));
    out
}

/// What the host did during a window, for one deciding thread and its process tree.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HostWindow {
    /// CPU samples of the thread in the window.
    pub samples: usize,
    /// Its most sampled leaf symbols.
    pub top: Vec<TopSymbol>,
    /// Its on-CPU share of the window (None without context switches of it).
    pub on_cpu_share: Option<f64>,
    /// Off CPU outside any OS call: runnable or an untraced wait.
    pub runnable_share: Option<f64>,
    /// Off CPU inside a blocking OS call.
    pub blocked_share: Option<f64>,
    /// Off CPU inside another OS call.
    pub os_call_share: Option<f64>,
    /// Load of the CPUs the tree can use.
    pub cpus: CpuLoad,
    /// Other threads of the tree that ran, busiest first.
    pub producers: Vec<Producer>,
}

/// Host view of `[a, b)` for thread (`pid`, `tid`) of the process tree `pids` (the
/// caller's choice: the process, its DataLoader workers...), with the `top` most
/// sampled symbols.
pub(crate) fn window(
    trace: &Trace,
    ix: &HostIndex,
    (pid, tid): (u32, u32),
    pids: &[u32],
    (a, b): (Ns, Ns),
    top: usize,
) -> HostWindow {
    let s = top_symbols(trace, ix, pid, tid, (a, b), top);
    let t = thread_time(trace, ix, pid, tid, a, b);
    let share = |f: fn(&ThreadTime) -> Ns| t.filter(|t| t.window_ns > 0).map(|t| f(&t) as f64 / t.window_ns as f64);
    HostWindow {
        samples: s.samples,
        top: s.top,
        on_cpu_share: share(|t| t.on_cpu_ns),
        runnable_share: share(|t| t.runnable_ns),
        blocked_share: share(|t| t.blocked_ns),
        os_call_share: share(|t| t.os_call_ns),
        cpus: cpu_load(ix, pids, a, b),
        producers: producers(trace, ix, pids, (pid, tid), a, b),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Events, SampleFlags, Strings};

    // (pid, tid, start, end, cpu)
    type OnCpu = (u32, u32, Ns, Ns, u32);
    // (pid, tid, start, end, name)
    type Call = (u32, u32, Ns, Ns, &'static str);
    // (pid, tid, time, symbol, module)
    type Sample = (u32, u32, Ns, &'static str, &'static str);

    fn trace(on: &[OnCpu], calls: &[Call], samples: &[Sample]) -> Trace {
        let mut t = Trace { strings: Strings::new(), ..Trace::default() };
        let mut lanes: HashMap<(LaneKind, u32), Events> = HashMap::new();
        for &(pid, tid, s, e, cpu) in on {
            let name = t.strings.intern(&format!("cpu {cpu}"));
            lanes.entry((LaneKind::OnCpu { tid }, pid)).or_default().push(s, e, name, None, Some(cpu.into()), None);
        }
        for &(pid, tid, s, e, n) in calls {
            let name = t.strings.intern(n);
            lanes.entry((LaneKind::Osrt { tid }, pid)).or_default().push(s, e, name, None, None, None);
        }
        for &(pid, tid, at, sym, module) in samples {
            let (name, m) = (t.strings.intern(sym), t.strings.intern(module));
            let f = Some(SampleFlags::pack(0, 1));
            lanes.entry((LaneKind::Samples { tid }, pid)).or_default().push(at, at, name, None, Some(m.into()), f);
        }
        let mut v: Vec<Lane> = lanes.into_iter().map(|((k, pid), ev)| Lane::new(k, pid, ev)).collect();
        v.sort_by_key(|l| (l.pid, l.kind));
        t.lanes = v;
        t
    }

    #[test]
    fn split_of_a_thread() {
        // On CPU 0-10 and 30-40; futex 10-20 (blocked), open 20-25 (OS call), 25-30
        // outside any call (runnable); 40-50 after its last row (the thread has exited).
        let t = trace(&[(1, 1, 0, 10, 0), (1, 1, 30, 40, 1)], &[(1, 1, 10, 20, "futex"), (1, 1, 20, 25, "open")], &[]);
        let ix = HostIndex::build(&t);
        let got = thread_time(&t, &ix, 1, 1, 0, 50).unwrap();
        assert_eq!(
            got,
            ThreadTime {
                window_ns: 50,
                on_cpu_ns: 20,
                blocked_ns: 10,
                os_call_ns: 5,
                runnable_ns: 5,
                io_ns: 5,
                file_ns: 5,
                sleep_ns: 0,
                lock_ns: 10,
                gil_ns: 0
            }
        );
        assert_eq!(thread_time(&t, &ix, 1, 2, 0, 50), None);
    }

    #[test]
    fn cpu_load_counts_other_processes_on_usable_cpus() {
        // Process 1 runs on CPUs 0 and 1; process 9 keeps CPU 0 busy, and CPU 2 (not usable).
        let t = trace(&[(1, 1, 0, 10, 0), (1, 2, 0, 100, 1), (9, 9, 10, 100, 0), (9, 10, 0, 100, 2)], &[], &[]);
        let ix = HostIndex::build(&t);
        let load = cpu_load(&ix, &[1], 0, 100);
        assert_eq!(load.usable, vec![0, 1]);
        assert!((load.busy_share - 1.0).abs() < 1e-12);
        assert_eq!(load.threads, 3);
        let p = producers(&t, &ix, &[1, 9], (1, 1), 50, 100);
        let got: Vec<_> = p.iter().map(|p| (p.pid, p.tid, p.on_cpu_share)).collect();
        assert_eq!(got, vec![(1, 2, 1.0), (9, 9, 1.0), (9, 10, 1.0)]);
    }

    #[test]
    fn top_symbols_by_count() {
        let s = [
            (1, 1, 5, "cv::resize", "/usr/lib/libopencv_imgproc.so.4.5"),
            (1, 1, 6, "cv::resize", "/usr/lib/libopencv_imgproc.so.4.5"),
            (1, 1, 7, "_PyEval_EvalFrameDefault", "/usr/bin/python3.12"),
            (1, 1, 50, "memcpy", "libc.so.6"),
        ];
        let t = trace(&[], &[], &s);
        let ix = HostIndex::build(&t);
        let got = top_symbols(&t, &ix, 1, 1, (0, 10), 5);
        assert_eq!(got.samples, 3);
        assert_eq!(got.top[0].symbol, "cv::resize");
        assert_eq!(got.top[0].module, "libopencv_imgproc.so.4.5");
        assert!((got.top[0].share - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(got.top[1].module, "python3.12");
        assert_eq!(top_symbols(&t, &ix, 1, 1, (0, 10), 1).top.len(), 1);
    }

    #[test]
    fn long_intervals_are_split_in_the_cpu_columns() {
        let long = 3 * Ns::from(u32::MAX);
        let t = trace(&[(1, 1, 0, long, 0)], &[], &[]);
        let ix = HostIndex::build(&t);
        assert_eq!(ix.cpu_busy_ns(0, 0, long), long);
        assert_eq!(ix.cpu_busy_ns(0, 10, long - 10), long - 20);
        assert_eq!(cpu_load(&ix, &[1], 5, 6).threads, 1);
    }

    use proptest::prelude::*;

    const CHUNK: Ns = 5;
    const NAMES: [&str; 4] = ["futex", "open", "poll", "ioctl"];
    const THREADS: [(u32, u32); 4] = [(1, 1), (1, 2), (2, 3), (3, 4)];

    // Per chunk of CHUNK ns, which thread (1-based, 0 idle) each of 3 CPUs runs; a
    // thread runs on at most one CPU at a time.
    fn schedule() -> impl Strategy<Value = Vec<[usize; 3]>> {
        prop::collection::vec(prop::array::uniform3(0..=THREADS.len()), 1..20)
    }

    fn build(sched: &[[usize; 3]], calls: &[(usize, Ns, Ns, usize)], samples: &[(usize, Ns, usize)]) -> Trace {
        let mut on: Vec<OnCpu> = Vec::new();
        for (k, row) in sched.iter().enumerate() {
            let mut used = [false; THREADS.len() + 1];
            for (cpu, &w) in row.iter().enumerate() {
                if w == 0 || used[w] {
                    continue;
                }
                used[w] = true;
                let (pid, tid) = THREADS[w - 1];
                let s = k as Ns * CHUNK;
                on.push((pid, tid, s, s + CHUNK, cpu as u32));
            }
        }
        let calls: Vec<Call> =
            calls.iter().map(|&(w, s, d, n)| (THREADS[w].0, THREADS[w].1, s, s + d, NAMES[n])).collect();
        let samples: Vec<Sample> =
            samples.iter().map(|&(w, at, n)| (THREADS[w].0, THREADS[w].1, at, NAMES[n], "m")).collect();
        trace(&on, &calls, &samples)
    }

    fn covers(lane: Option<&Lane>, t: Ns) -> impl Iterator<Item = usize> + '_ {
        lane.into_iter().flat_map(move |l| (0..l.ev.len()).filter(move |&i| l.ev.start[i] <= t && t < l.ev.end(i)))
    }

    fn lane(t: &Trace, kind: LaneKind, pid: u32) -> Option<&Lane> {
        t.lanes.iter().find(|l| l.kind == kind && l.pid == pid)
    }

    proptest! {
        // The index's thread names (a binary search, for the threads it indexes) are
        // `Trace::thread_name`'s (a scan, the first record of the thread), whatever the
        // records' order, duplicates and unnamed threads.
        #[test]
        fn indexed_thread_names_equal_the_scan(
            sched in schedule(),
            records in prop::collection::vec((1u32..4, 0u32..6, 0usize..NAMES.len()), 0..12),
        ) {
            let mut t = build(&sched, &[], &[]);
            t.threads = records
                .iter()
                .map(|&(pid, tid, n)| crate::model::Thread { pid, tid, name: format!("{}{tid}", NAMES[n]) })
                .collect();
            let ix = HostIndex::build(&t);
            for pid in 0..5 {
                for tid in 0..7 {
                    prop_assert_eq!(ix.thread_name(&t, pid, tid), t.thread_name(pid, tid), "({}, {})", pid, tid);
                }
            }
        }

        #[test]
        fn windows_match_brute_force(
            sched in schedule(),
            calls in prop::collection::vec((0..THREADS.len(), 0..100 as Ns, 1..30 as Ns, 0..NAMES.len()), 0..12),
            samples in prop::collection::vec((0..THREADS.len(), 0..100 as Ns, 0..NAMES.len()), 0..30),
            a in -5..105 as Ns,
            len in 0..60 as Ns,
        ) {
            let b = a + len;
            let t = build(&sched, &calls, &samples);
            let ix = HostIndex::build(&t);
            for &(pid, tid) in &THREADS {
                let on = lane(&t, LaneKind::OnCpu { tid }, pid);
                let os = lane(&t, LaneKind::Osrt { tid }, pid);
                let mut want = ThreadTime { window_ns: b - a, ..ThreadTime::default() };
                // The thread's life: its first row's start to its last row's end, any lane.
                let rows = t.lanes.iter().filter(|l| l.pid == pid && l.kind.tid() == Some(tid));
                let life = rows.flat_map(|l| (0..l.ev.len()).map(|i| (l.ev.start[i], l.ev.end(i)))).fold(
                    None,
                    |acc: Option<(Ns, Ns)>, (s, e)| Some(acc.map_or((s, e), |(x, y)| (x.min(s), y.max(e)))),
                );
                for x in a..b {
                    let calls: Vec<usize> = covers(os, x).collect();
                    let blocking = calls.iter().any(|&i| is_blocking_os_call(t.strings.get(os.unwrap().ev.name[i])));
                    let io = calls.iter().any(|&i| is_io_call(t.strings.get(os.unwrap().ev.name[i])));
                    let file = calls.iter().any(|&i| is_file_call(t.strings.get(os.unwrap().ev.name[i])));
                    if covers(on, x).next().is_none() && io {
                        want.io_ns += 1;
                    }
                    if covers(on, x).next().is_none() && file {
                        want.file_ns += 1;
                    }
                    let named = |f: fn(&str) -> bool| calls.iter().any(|&i| f(t.strings.get(os.unwrap().ev.name[i])));
                    if covers(on, x).next().is_none() && named(is_sleep_call) {
                        want.sleep_ns += 1;
                    }
                    if covers(on, x).next().is_none() && named(is_lock_wait) {
                        want.lock_ns += 1;
                    }
                    if covers(on, x).next().is_some() {
                        want.on_cpu_ns += 1;
                    } else if blocking {
                        want.blocked_ns += 1;
                    } else if !calls.is_empty() {
                        want.os_call_ns += 1;
                    } else if life.is_some_and(|(s, e)| (s..e).contains(&x)) {
                        want.runnable_ns += 1;
                    }
                }
                prop_assert_eq!(thread_time(&t, &ix, pid, tid, a, b), on.map(|_| want));
                prop_assert_eq!(ix.on_cpu_ns(&t, pid, tid, a, b), on.map(|_| want.on_cpu_ns));
                let n = samples.iter().filter(|&&(w, at, _)| THREADS[w] == (pid, tid) && (a..b).contains(&at)).count();
                let got = top_symbols(&t, &ix, pid, tid, (a, b), 10);
                prop_assert_eq!(got.samples, n);
                prop_assert_eq!(got.top.iter().map(|s| s.samples).sum::<usize>(), n);
            }
            // Per CPU busy time, and the load of the CPUs process 1 can use.
            let on_lanes: Vec<&Lane> = t.lanes.iter().filter(|l| matches!(l.kind, LaneKind::OnCpu { .. })).collect();
            let runs = |x: Ns, cpu: u32| -> Vec<(u32, u32)> {
                on_lanes.iter()
                    .filter(|l| (0..l.ev.len()).any(|i| l.ev.aux(i) == u64::from(cpu) && l.ev.start[i] <= x && x < l.ev.end(i)))
                    .map(|l| (l.pid, l.kind.tid().unwrap_or(0)))
                    .collect()
            };
            for cpu in 0..3 {
                let busy = (a..b).filter(|&x| !runs(x, cpu).is_empty()).count() as Ns;
                prop_assert_eq!(ix.cpu_busy_ns(cpu, a, b), busy);
            }
            let mut usable: Vec<u32> = on_lanes.iter().filter(|l| l.pid == 1).flat_map(|l| l.ev.aux_values().map(|c| c as u32)).collect();
            usable.sort_unstable();
            usable.dedup();
            let load = cpu_load(&ix, &[1], a, b);
            prop_assert_eq!(&load.usable, &usable);
            let mut who: Vec<(u32, u32)> = usable.iter().flat_map(|&c| (a..b).flat_map(move |x| runs(x, c))).collect();
            who.sort_unstable();
            who.dedup();
            prop_assert_eq!(load.threads, who.len());
            let busy: Ns = usable.iter().map(|&c| (a..b).filter(|&x| !runs(x, c).is_empty()).count() as Ns).sum();
            let cap = usable.len() as f64 * (b - a) as f64;
            let want = if cap > 0.0 { busy as f64 / cap } else { 0.0 };
            prop_assert!((load.busy_share - want).abs() < 1e-9);
        }
    }
}
