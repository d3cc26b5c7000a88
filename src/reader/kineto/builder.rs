//! Events into lanes as they stream by: one [`Builder`] call per trace event, nothing
//! kept of the event but its row in a lane (or a CPU range, a sync, a name).

use std::collections::HashMap;

use super::json::{Event, Id};
use super::values::{Cat, category, decimal, id32, int, is_profiler_overhead, memcpy_flags, memset_kind, sync_type};
use crate::model::{ApiKind, Events, LaneKind, MemClass, MemFlags, StrId, Strings, strip_api_version};

/// A CPU-side range (`cpu_op`, `user_annotation`, `python_function`) of a thread: its
/// nesting depth is known only once the thread's ranges are sorted.
pub(super) struct CpuRange {
    pub(super) start: i64,
    pub(super) end: i64,
    pub(super) name: StrId,
    /// A user range (`record_function`, `ProfilerStep#N`), not an operator's.
    pub(super) user: bool,
}

/// A `cuda_sync` event, filed under its owning process at the end.
pub(super) struct SyncRow {
    pub(super) corr: u32,
    pub(super) start: i64,
    pub(super) end: i64,
    pub(super) name: StrId,
    pub(super) aux: u64,
    pub(super) ty: u32,
}

/// What the events of a trace (or of one part of it, see `split`) add up to.
#[derive(Default)]
pub(super) struct Builder {
    pub(super) strings: Strings,
    // Name text -> id in front of `strings`: its std hasher is slow on long Python names.
    names: foldhash::HashMap<Box<str>, StrId>,
    // API kind per name id (`u32::MAX`: not classified yet).
    api_kind: Vec<u32>,
    // Per (pid, tid), in text order.
    pub(super) cpu: foldhash::HashMap<(u32, u32), Vec<CpuRange>>,
    pub(super) host: foldhash::HashMap<(LaneKind, u32), Events>,
    // GPU lanes before their owning process is known.
    pub(super) gpu: foldhash::HashMap<LaneKind, Events>,
    pub(super) syncs: Vec<SyncRow>,
    pub(super) overhead: Events,
    pub(super) extra: Events,
    // The first process seen making CUDA API calls, and the calls of any other one.
    pub(super) main_pid: Option<u32>,
    pub(super) other_pid: HashMap<u32, u32>,
    // A later part cannot know the first part's main process: it keeps every call's
    // (correlation, pid) and `merge` decides.
    pub(super) calls: Option<Vec<(u32, u32)>>,
    pub(super) first_cpu_pid: Option<u32>,
    pub(super) counts: Vec<(String, usize)>,
    // Complete events whose `ts` is no readable time, and events over the item limit.
    pub(super) no_time: usize,
    pub(super) oversized: usize,
    pub(super) process_names: HashMap<u32, String>,
    pub(super) gpu_pids: Vec<u32>,
    pub(super) thread_names: HashMap<(u32, u32), String>,
    pub(super) top: Vec<(String, serde_json::Value)>,
}

// The times and ids every complete event has.
struct Row {
    start: i64,
    end: i64,
    pid: u32,
    tid: u32,
}

impl Builder {
    /// A builder for the first (or only) part of a trace.
    pub(super) fn new() -> Self {
        Self { strings: Strings::new(), ..Self::default() }
    }

    /// A builder for a later part: API calls are kept for `merge` to attribute.
    pub(super) fn later_part() -> Self {
        Self { calls: Some(Vec::new()), ..Self::new() }
    }

    /// Number of events seen.
    pub(super) fn events(&self) -> usize {
        self.counts.iter().map(|c| c.1).sum()
    }

    fn count(&mut self, ph: &str, cat: &str) {
        // Few distinct categories: a linear search beats hashing a fresh key.
        let key_eq = |k: &str| k.len() == ph.len() + 1 + cat.len() && k.starts_with(ph) && k.ends_with(cat);
        if let Some(c) = self.counts.iter_mut().find(|(k, _)| key_eq(k)) {
            c.1 += 1;
        } else {
            self.counts.push((format!("{ph} {cat}"), 1));
        }
    }

    // The string id of `s`.
    fn name(&mut self, s: &str) -> StrId {
        if let Some(&id) = self.names.get(s) {
            return id;
        }
        let id = self.strings.intern(s);
        self.names.insert(s.into(), id);
        id
    }

    /// Take one trace event.
    pub(super) fn event(&mut self, e: &Event<'_>) {
        self.count(&e.ph, &e.cat);
        match &*e.ph {
            "X" => self.complete(e),
            "M" => self.metadata(e),
            _ => {}
        }
    }

    fn metadata(&mut self, e: &Event<'_>) {
        let (Id::Num(pid), Some(name)) = (e.pid, e.arg_name.as_deref()) else {
            // process_labels carries `labels`, not `name`: GPU pseudo-processes say "GPU N".
            return;
        };
        let pid = id32(pid);
        match &*e.name {
            "process_name" => {
                self.process_names.entry(pid).or_insert_with(|| name.to_string());
            }
            "thread_name" => {
                let tid = match e.tid {
                    Id::Num(t) => id32(t),
                    _ => return,
                };
                // Kineto writes `thread 1490 (pt_autograd_0)`.
                let short = match (name.strip_prefix("thread "), name.rfind('('), name.ends_with(')')) {
                    (Some(_), Some(a), true) => &name[a + 1..name.len() - 1],
                    _ => name,
                };
                self.thread_names.entry((pid, tid)).or_insert_with(|| short.trim().to_string());
            }
            _ => {}
        }
    }

    fn complete(&mut self, e: &Event<'_>) {
        let Some(start) = e.ts.and_then(|t| decimal(t, 3)).and_then(|v| i64::try_from(v).ok()) else {
            self.no_time += 1;
            return;
        };
        let dur = e.dur.and_then(|d| decimal(d, 3)).and_then(|v| i64::try_from(v).ok()).unwrap_or(0).max(0);
        let end = start.saturating_add(dur);
        let (pid, tid) = match (e.pid, e.tid) {
            (Id::Num(p), Id::Num(t)) => (Some(id32(p)), id32(t)),
            (Id::Num(p), _) => (Some(id32(p)), 0),
            _ => (None, 0),
        };
        let cat = category(&e.cat);
        let Some(pid) = pid.filter(|_| cat != Cat::Other) else {
            self.extra.push(start, end, 0, None, None, None);
            return;
        };
        let row = Row { start, end, pid, tid };
        match cat {
            Cat::Cpu { user } => {
                self.first_cpu_pid.get_or_insert(pid);
                let name = self.name(&e.name);
                self.cpu.entry((pid, tid)).or_default().push(CpuRange { start, end, name, user });
            }
            Cat::Api { driver } => self.api(e, &row, driver),
            Cat::Kernel | Cat::Memcpy | Cat::Memset => self.gpu_op(e, &row, cat),
            Cat::Sync => self.sync(e, &row),
            Cat::GpuAnnotation => {
                // Filed under the GPU's pseudo-process: its pid is the device.
                let device = int(e.device).map_or(pid, id32);
                let name = self.name(&e.name);
                self.extra.push(start, end, 0, None, None, None);
                let lane = self.gpu.entry(LaneKind::GpuRanges { device }).or_default();
                lane.push(start, end, name, Some(0), Some(0), None);
            }
            Cat::Overhead if is_profiler_overhead(&e.name) => {
                let name = self.name(&e.name);
                self.overhead.push(start, end, name, None, None, None);
            }
            Cat::Overhead | Cat::Other => self.extra.push(start, end, 0, None, None, None),
        }
    }

    // A CUDA runtime or driver call.
    fn api(&mut self, e: &Event<'_>, r: &Row, driver: bool) {
        let corr = int(e.correlation).map_or(0, |c| c as u32);
        let main = *self.main_pid.get_or_insert(r.pid);
        match &mut self.calls {
            Some(calls) if corr != 0 => calls.push((corr, r.pid)),
            None if r.pid != main && corr != 0 => {
                self.other_pid.insert(corr, r.pid);
            }
            _ => {}
        }
        let name = self.name(strip_api_version(&e.name));
        let flags = self.api_kind(name) | if driver { ApiKind::DRIVER_BIT } else { 0 };
        let lane = self.host.entry((LaneKind::CudaApi { tid: r.tid }, r.pid)).or_default();
        lane.push(r.start, r.end, name, Some(corr), None, Some(flags));
    }

    // The API kind bits of name `id`, classified once per name.
    fn api_kind(&mut self, id: StrId) -> u32 {
        let i = id as usize;
        if self.api_kind.len() <= i {
            self.api_kind.resize(i + 1, u32::MAX);
        }
        if self.api_kind[i] == u32::MAX {
            self.api_kind[i] = ApiKind::classify(self.strings.get(id)) as u32;
        }
        self.api_kind[i]
    }

    // A kernel, memcpy or memset.
    fn gpu_op(&mut self, e: &Event<'_>, r: &Row, cat: Cat) {
        let device = int(e.device).map_or(r.pid, id32);
        let stream = int(e.stream).map_or(r.tid, id32);
        let corr = int(e.correlation).map_or(0, |c| c as u32);
        let bytes = int(e.bytes).map_or(0, |b| b.max(0) as u64);
        let name = self.name(&e.name);
        let (kind, aux, flags) = match cat {
            Cat::Kernel => (LaneKind::Kernels { device, stream }, u64::from(name), None),
            Cat::Memcpy => {
                let f = memcpy_flags(&e.name);
                let class = MemClass::from_copy_kind(f as u8);
                (LaneKind::Memory { device, stream, class }, bytes, Some(f))
            }
            _ => {
                let k = memset_kind(&e.name);
                (LaneKind::Memory { device, stream, class: MemClass::Memset }, bytes, Some(MemFlags::pack(0, k, k)))
            }
        };
        if !self.gpu_pids.contains(&r.pid) {
            self.gpu_pids.push(r.pid);
        }
        self.gpu.entry(kind).or_default().push(r.start, r.end, name, Some(corr), Some(aux), flags);
    }

    fn sync(&mut self, e: &Event<'_>, r: &Row) {
        let kind = e.sync_kind.as_deref().unwrap_or(&e.name);
        let (ty, label) = sync_type(kind);
        let device = int(e.device).map_or(r.pid, id32);
        let stream = int(e.stream).map_or(r.tid, id32);
        let corr = int(e.correlation).map_or(0, |c| c as u32);
        let name = self.name(label);
        let aux = (u64::from(device) << 32) | u64::from(stream);
        self.syncs.push(SyncRow { corr, start: r.start, end: r.end, name, aux, ty });
    }

    /// Append what `later` (the part of the text after this one's) built, as one pass
    /// over both parts would have: names keep the ids of their first appearance, rows
    /// follow in text order, and the later part's API calls are attributed to
    /// processes only now that the first part's main process is known.
    pub(super) fn merge(&mut self, later: Builder) {
        let ids: Vec<StrId> = later.strings.iter().map(|(_, s)| self.name(s)).collect();
        let id = |n: StrId| ids[n as usize];
        let rename = |ev: &mut Events, kernels: bool| {
            ev.name.iter_mut().for_each(|n| *n = id(*n));
            if kernels {
                // A kernel's aux is its name id.
                ev.map_aux(|a| u64::from(id(a as StrId)));
            }
        };
        for (thread, ranges) in later.cpu {
            let ranges = ranges.into_iter().map(|r| CpuRange { name: id(r.name), ..r });
            self.cpu.entry(thread).or_default().extend(ranges);
        }
        for (key, mut ev) in later.host {
            rename(&mut ev, false);
            self.host.entry(key).or_default().append_from(ev);
        }
        for (kind, mut ev) in later.gpu {
            rename(&mut ev, matches!(kind, LaneKind::Kernels { .. }));
            self.gpu.entry(kind).or_default().append_from(ev);
        }
        self.syncs.extend(later.syncs.into_iter().map(|s| SyncRow { name: id(s.name), ..s }));
        for (mine, mut theirs) in [(&mut self.overhead, later.overhead), (&mut self.extra, later.extra)] {
            rename(&mut theirs, false);
            mine.append_from(theirs);
        }
        self.main_pid = self.main_pid.or(later.main_pid);
        for (corr, pid) in later.calls.into_iter().flatten() {
            if Some(pid) != self.main_pid {
                self.other_pid.insert(corr, pid);
            }
        }
        self.first_cpu_pid = self.first_cpu_pid.or(later.first_cpu_pid);
        self.merge_counts(later.counts);
        self.no_time += later.no_time;
        self.oversized += later.oversized;
        for (pid, n) in later.process_names {
            self.process_names.entry(pid).or_insert(n);
        }
        for (t, n) in later.thread_names {
            self.thread_names.entry(t).or_insert(n);
        }
        for pid in later.gpu_pids {
            if !self.gpu_pids.contains(&pid) {
                self.gpu_pids.push(pid);
            }
        }
        self.top.extend(later.top);
    }

    // Add another part's per-category counts. Keys are compared whole: `count` could
    // also fold a `ph` with a space into another key, which no real trace has.
    fn merge_counts(&mut self, counts: Vec<(String, usize)>) {
        for (k, n) in counts {
            match self.counts.iter_mut().find(|c| c.0 == k) {
                Some(c) => c.1 += n,
                None => self.counts.push((k, n)),
            }
        }
    }

    /// The process that owns a GPU operation (or a sync) with correlation id `corr`.
    pub(super) fn owner(&self, corr: u32) -> u32 {
        let main = self.main_pid.or(self.first_cpu_pid).unwrap_or(0);
        if self.other_pid.is_empty() { main } else { self.other_pid.get(&corr).copied().unwrap_or(main) }
    }
}
