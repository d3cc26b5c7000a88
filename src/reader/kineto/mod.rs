//! Reader for PyTorch profiler (Kineto) Chrome-trace JSON, plain or gzipped, into the
//! same [`Trace`] as nsys exports.
//!
//! Mapping (`ph: "X"` events by `cat`):
//! - `cpu_op`, `user_annotation`, `python_function` (and the old `Operator`): ranges of
//!   their thread, as NVTX push/pop lanes with the depth given by nesting (so
//!   `ProfilerStep#N` and annotations are phases, and the step phase works);
//! - `cuda_runtime`, `cuda_driver` (old: `Runtime`): CUDA API lanes, `corr` = the
//!   `correlation` arg, classified by name as nsys calls are;
//! - `kernel`, `gpu_memcpy`, `gpu_memset` (old: `Kernel`, `Memcpy`, `Memset`): GPU
//!   lanes per `device` and `stream` arg, owned by the process whose API call has the
//!   same correlation id (Kineto writes GPU events under a pseudo-process per device);
//!   copy direction and memory kinds from the name (`Memcpy HtoD (Pageable -> Device)`),
//!   bytes from the `bytes` arg;
//! - `cuda_sync`: [`SyncRecords`] (`cuda_sync_kind` as nsys's sync type);
//! - `overhead` named `Activity Buffer Request`, `Buffer Flush`, `Instrumentation`,
//!   `Resource`: profiler overhead lanes; CUDA's own (lazy loading...) is only counted;
//! - `gpu_user_annotation`: an `annotations` lane of its GPU (ranges, not GPU work).
//! - the `Trace` span, `ac2g`/`fwdbwd` flows, instants: counted,
//!   and (`X` ones) part of the trace's extent; the model has no GPU range lane that
//!   does not count as GPU busy, and flows repeat the `correlation` args.
//!
//! Times are decimal microseconds turned into integer nanoseconds without a float
//! (`decimal`). `baseTimeNanoseconds` is kept as the wall-clock origin
//! (`Meta::utc_epoch_ns`): model times are the file's `ts`, so `base + ts` is absolute.

mod json;

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::{Result, bail};

use super::Progress;
use crate::model::{
    ApiKind, Events, Gpu, Lane, LaneKind, MemClass, MemFlags, Meta, Process, StrId, Strings, SyncRecords, TableStat,
    Thread, Trace, strip_api_version,
};
use json::{Event, Id, Scanner};

/// Product label kept in `Meta::nsys_version` for Kineto traces.
pub const PRODUCT: &str = "PyTorch Profiler (Kineto)";

/// `raw` (a JSON number, or the text of a numeric string) times 10^`scale`, rounded to
/// the nearest integer (halves away from zero), by integer arithmetic only.
pub fn decimal(raw: &[u8], scale: i32) -> Option<i128> {
    short_decimal(raw, scale).or_else(|| long_decimal(raw, scale))
}

// `decimal` of the common case in 64-bit arithmetic: `[-]digits[.digits]` with at most
// 18 digits (below 10^18) and a scale of 0 to 9. Anything else is left to `long_decimal`.
fn short_decimal(raw: &[u8], scale: i32) -> Option<i128> {
    if !(0..=9).contains(&scale) {
        return None;
    }
    let (neg, rest) = match raw.first()? {
        b'-' => (true, &raw[1..]),
        _ => (false, raw),
    };
    let (mut mant, mut digits, mut frac, mut dot) = (0u64, 0u32, 0u32, false);
    for &c in rest {
        match c {
            b'0'..=b'9' if digits < 18 => {
                mant = mant * 10 + u64::from(c - b'0');
                digits += 1;
                frac += u32::from(dot);
            }
            b'.' if !dot => dot = true,
            _ => return None,
        }
    }
    if digits == 0 {
        return None;
    }
    let scale = scale as u32;
    let v = if scale >= frac {
        i128::from(mant) * 10i128.pow(scale - frac)
    } else {
        let p = 10u64.pow(frac - scale);
        let (q, r) = (mant / p, mant % p);
        i128::from(if r * 2 >= p { q + 1 } else { q })
    };
    Some(if neg { -v } else { v })
}

// `decimal` of any number: a mantissa of up to 31 digits in 128 bits, exponents.
fn long_decimal(raw: &[u8], scale: i32) -> Option<i128> {
    let (neg, rest) = match raw.first()? {
        b'-' => (true, &raw[1..]),
        b'+' => (false, &raw[1..]),
        _ => (false, raw),
    };
    let (mut mant, mut exp, mut digits, mut dot) = (0i128, scale, 0u32, false);
    let mut i = 0;
    while i < rest.len() {
        match rest[i] {
            c @ b'0'..=b'9' => {
                digits += 1;
                if mant < 10i128.pow(30) {
                    mant = mant * 10 + i128::from(c - b'0');
                    if dot {
                        exp -= 1;
                    }
                } else if !dot {
                    exp += 1;
                }
            }
            b'.' if !dot => dot = true,
            b'e' | b'E' if digits > 0 => {
                let e: i32 = std::str::from_utf8(&rest[i + 1..]).ok()?.parse().ok()?;
                exp = exp.checked_add(e)?;
                break;
            }
            _ => return None,
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    let v = if exp >= 0 {
        mant.checked_mul(10i128.checked_pow(exp as u32)?)?
    } else if exp < -38 {
        0
    } else {
        let p = 10i128.pow((-exp) as u32);
        let (q, r) = (mant / p, mant % p);
        if r * 2 >= p { q + 1 } else { q }
    };
    Some(if neg { -v } else { v })
}

fn int(raw: Option<&[u8]>) -> Option<i64> {
    raw.and_then(|r| decimal(r, 0)).and_then(|v| i64::try_from(v).ok())
}

// Fold an id into 32 bits: small ids stay as they are, -1 becomes u32::MAX.
fn id32(v: i64) -> u32 {
    if let Ok(x) = u32::try_from(v) {
        return x;
    }
    if let Ok(x) = i32::try_from(v) {
        return x as u32;
    }
    (v ^ (v >> 32)) as u32
}

fn mem_kind(word: &str) -> u8 {
    match word.trim().to_ascii_lowercase().as_str() {
        "pageable" => 0,
        "pinned" => 1,
        "device" => 2,
        "array" => 3,
        "managed" => 4,
        "device static" => 5,
        "managed static" => 6,
        _ => 7,
    }
}

/// Copy kind (nsys numbering) and memory kinds of a Kineto memcpy name such as
/// `Memcpy HtoD (Pageable -> Device)`.
pub fn memcpy_flags(name: &str) -> u32 {
    let dir = name.split_whitespace().nth(1).unwrap_or("");
    let kind = match dir {
        "HtoD" => 1,
        "DtoH" => 2,
        "HtoA" => 3,
        "AtoH" => 4,
        "AtoA" => 5,
        "AtoD" => 6,
        "DtoA" => 7,
        "DtoD" => 8,
        "HtoH" => 9,
        "PtoP" => 10,
        _ => 0,
    };
    let (src, dst) = match name.find('(').zip(name.rfind(')')) {
        Some((a, b)) if a < b => match name[a + 1..b].split_once("->") {
            Some((s, d)) => (mem_kind(s), mem_kind(d)),
            None => (7, 7),
        },
        _ => (7, 7),
    };
    MemFlags::pack(kind, src, dst)
}

/// Memory kind (nsys numbering) of a memset name such as `Memset (Device)`.
pub fn memset_kind(name: &str) -> u8 {
    match name.find('(').zip(name.rfind(')')) {
        Some((a, b)) if a < b => mem_kind(&name[a + 1..b]),
        _ => 7,
    }
}

/// nsys sync type and label of a Kineto `cuda_sync_kind`.
fn sync_type(kind: &str) -> (u32, &'static str) {
    match kind {
        "Event Sync" => (1, "Event sync"),
        "Stream Wait Event" => (2, "Stream wait event"),
        "Stream Sync" => (3, "Stream sync"),
        "Context Sync" => (4, "Context sync"),
        _ => (0, "Sync"),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Cat {
    Cpu,
    Api { driver: bool },
    Kernel,
    Memcpy,
    Memset,
    Sync,
    Overhead,
    GpuAnnotation,
    Other,
}

fn category(cat: &str) -> Cat {
    let is = |s: &str| cat.eq_ignore_ascii_case(s);
    if is("cpu_op") || is("user_annotation") || is("python_function") || is("operator") {
        Cat::Cpu
    } else if is("cuda_runtime") || is("runtime") {
        Cat::Api { driver: false }
    } else if is("cuda_driver") || is("driver") {
        Cat::Api { driver: true }
    } else if is("kernel") {
        Cat::Kernel
    } else if is("gpu_memcpy") || is("memcpy") {
        Cat::Memcpy
    } else if is("gpu_memset") || is("memset") {
        Cat::Memset
    } else if is("cuda_sync") {
        Cat::Sync
    } else if is("gpu_user_annotation") {
        Cat::GpuAnnotation
    } else if is("overhead") {
        Cat::Overhead
    } else {
        Cat::Other
    }
}

fn is_profiler_overhead(name: &str) -> bool {
    ["activity buffer request", "buffer flush", "instrumentation", "resource"]
        .iter()
        .any(|n| name.eq_ignore_ascii_case(n))
}

struct CpuRange {
    pid: u32,
    tid: u32,
    start: i64,
    end: i64,
    name: StrId,
}

struct SyncRow {
    corr: u32,
    start: i64,
    end: i64,
    name: StrId,
    aux: u64,
    ty: u32,
}

#[derive(Default)]
struct Builder {
    strings: Strings,
    api_kind: HashMap<StrId, u32>,
    cpu: Vec<CpuRange>,
    host: HashMap<(LaneKind, u32), Events>,
    // GPU lanes before their owning process is known.
    gpu: HashMap<LaneKind, Events>,
    syncs: Vec<SyncRow>,
    overhead: Events,
    extra: Events,
    // The first process seen making CUDA API calls, and the calls of any other one.
    main_pid: Option<u32>,
    other_pid: HashMap<u32, u32>,
    first_cpu_pid: Option<u32>,
    counts: Vec<(String, usize)>,
    // Complete events whose `ts` is no readable time, and events over the item limit.
    no_time: usize,
    oversized: usize,
    process_names: HashMap<u32, String>,
    gpu_pids: Vec<u32>,
    thread_names: HashMap<(u32, u32), String>,
    top: Vec<(String, serde_json::Value)>,
}

impl Builder {
    fn count(&mut self, ph: &str, cat: &str) {
        // Few distinct categories: a linear search beats hashing a fresh key.
        let key_eq = |k: &str| k.len() == ph.len() + 1 + cat.len() && k.starts_with(ph) && k.ends_with(cat);
        if let Some(c) = self.counts.iter_mut().find(|(k, _)| key_eq(k)) {
            c.1 += 1;
        } else {
            self.counts.push((format!("{ph} {cat}"), 1));
        }
    }

    fn event(&mut self, e: &Event<'_>) {
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
        match cat {
            Cat::Cpu => {
                self.first_cpu_pid.get_or_insert(pid);
                let name = self.strings.intern(&e.name);
                self.cpu.push(CpuRange { pid, tid, start, end, name });
            }
            Cat::Api { driver } => {
                let corr = int(e.correlation).map_or(0, |c| c as u32);
                let main = *self.main_pid.get_or_insert(pid);
                if pid != main && corr != 0 {
                    self.other_pid.insert(corr, pid);
                }
                let name = self.strings.intern(strip_api_version(&e.name));
                let strings = &self.strings;
                let kind = *self.api_kind.entry(name).or_insert_with(|| ApiKind::classify(strings.get(name)) as u32);
                let flags = kind | if driver { ApiKind::DRIVER_BIT } else { 0 };
                let lane = self.host.entry((LaneKind::CudaApi { tid }, pid)).or_default();
                lane.push(start, end, name, Some(corr), None, Some(flags));
            }
            Cat::Kernel | Cat::Memcpy | Cat::Memset => {
                let device = int(e.device).map_or(pid, id32);
                let stream = int(e.stream).map_or(tid, id32);
                let corr = int(e.correlation).map_or(0, |c| c as u32);
                let bytes = int(e.bytes).map_or(0, |b| b.max(0) as u64);
                let name = self.strings.intern(&e.name);
                let (kind, aux, flags) = match cat {
                    Cat::Kernel => (LaneKind::Kernels { device, stream }, u64::from(name), None),
                    Cat::Memcpy => {
                        let f = memcpy_flags(&e.name);
                        let class = MemClass::from_copy_kind(f as u8);
                        (LaneKind::Memory { device, stream, class }, bytes, Some(f))
                    }
                    _ => {
                        let k = memset_kind(&e.name);
                        (
                            LaneKind::Memory { device, stream, class: MemClass::Memset },
                            bytes,
                            Some(MemFlags::pack(0, k, k)),
                        )
                    }
                };
                if !self.gpu_pids.contains(&pid) {
                    self.gpu_pids.push(pid);
                }
                self.gpu.entry(kind).or_default().push(start, end, name, Some(corr), Some(aux), flags);
            }
            Cat::Sync => {
                let kind = e.sync_kind.as_deref().unwrap_or(&e.name);
                let (ty, label) = sync_type(kind);
                let device = int(e.device).map_or(pid, id32);
                let stream = int(e.stream).map_or(tid, id32);
                let corr = int(e.correlation).map_or(0, |c| c as u32);
                let name = self.strings.intern(label);
                let aux = (u64::from(device) << 32) | u64::from(stream);
                self.syncs.push(SyncRow { corr, start, end, name, aux, ty });
            }
            Cat::GpuAnnotation => {
                // Filed under the GPU's pseudo-process: its pid is the device.
                let device = int(e.device).map_or(pid, id32);
                let name = self.strings.intern(&e.name);
                self.extra.push(start, end, 0, None, None, None);
                self.gpu.entry(LaneKind::GpuRanges { device }).or_default().push(
                    start,
                    end,
                    name,
                    Some(0),
                    Some(0),
                    None,
                );
            }
            Cat::Overhead if is_profiler_overhead(&e.name) => {
                let name = self.strings.intern(&e.name);
                self.overhead.push(start, end, name, None, None, None);
            }
            Cat::Overhead | Cat::Other => self.extra.push(start, end, 0, None, None, None),
        }
    }

    // The process that owns a GPU operation (or a sync) with correlation id `corr`.
    fn owner(&self, corr: u32) -> u32 {
        let main = self.main_pid.or(self.first_cpu_pid).unwrap_or(0);
        if self.other_pid.is_empty() { main } else { self.other_pid.get(&corr).copied().unwrap_or(main) }
    }
}

// Hand decompression and reading to another thread: chunks through a small channel.
struct Pipe {
    rx: std::sync::mpsc::Receiver<std::io::Result<Vec<u8>>>,
    cur: Vec<u8>,
    at: usize,
}

impl Read for Pipe {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.cur.len() {
            match self.rx.recv() {
                Ok(chunk) => {
                    self.cur = chunk?;
                    self.at = 0;
                }
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.cur.len() - self.at);
        buf[..n].copy_from_slice(&self.cur[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

fn pump(mut r: impl Read, tx: &std::sync::mpsc::SyncSender<std::io::Result<Vec<u8>>>) {
    loop {
        let mut chunk = vec![0u8; 1 << 20];
        let mut n = 0;
        while n < chunk.len() {
            match r.read(&mut chunk[n..]) {
                Ok(0) => break,
                Ok(k) => n += k,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    if n > 0 {
                        chunk.truncate(n);
                        let _ = tx.send(Ok(chunk));
                    }
                    let _ = tx.send(Err(e));
                    return;
                }
            }
        }
        if n == 0 {
            return;
        }
        chunk.truncate(n);
        if tx.send(Ok(chunk)).is_err() {
            return;
        }
    }
}

// Counts the file's bytes read for the progress gauge.
struct Counting<'a, Rd> {
    r: Rd,
    progress: &'a Progress,
}

impl<Rd: Read> Read for Counting<'_, Rd> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.r.read(buf)?;
        self.progress.rows_done.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Load the Kineto trace at `path` (plain JSON, or gzip when `gzip`).
pub fn load(path: &Path, gzip: bool, progress: &Progress) -> Result<Trace> {
    let t0 = Instant::now();
    let file = std::fs::File::open(path)?;
    progress.rows_total.store(file.metadata().map_or(0, |m| m.len()), Ordering::Relaxed);
    let mut b = Builder { strings: Strings::new(), ..Builder::default() };
    let mut top_seen = false;
    let mut has_events = false;
    let stop = std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::sync_channel(4);
        s.spawn(move || {
            let r = Counting { r: file, progress };
            if gzip {
                pump(flate2::read::MultiGzDecoder::new(std::io::BufReader::with_capacity(1 << 20, r)), &tx);
            } else {
                pump(r, &tx);
            }
        });
        let mut sc = Scanner::new(Pipe { rx, cur: Vec::new(), at: 0 });
        let mut top = Vec::new();
        let stop = sc.run(
            |k, v| {
                top_seen = true;
                top.push((k.to_string(), v));
            },
            |e| b.event(e),
        );
        has_events = sc.saw_events;
        b.oversized = sc.oversized;
        drop(sc);
        b.top = top;
        stop
    });
    let events: usize = b.counts.iter().map(|c| c.1).sum();
    if let Some(st) = &stop
        && !top_seen
        && events == 0
    {
        let what = if gzip { "gzip file, but not a JSON trace" } else { "not a JSON trace" };
        bail!("{what} ({} at byte {})", st.reason, st.offset);
    }
    if stop.is_none() && !has_events && events == 0 {
        bail!("JSON, but not a PyTorch profiler trace (no traceEvents)");
    }
    Ok(assemble(b, stop, events, t0))
}

#[allow(clippy::too_many_lines)]
fn assemble(mut b: Builder, stop: Option<json::Stop>, events: usize, t0: Instant) -> Trace {
    let mut meta = Meta { nsys_version: PRODUCT.to_string(), ..Meta::default() };
    let mut gpus: Vec<Gpu> = Vec::new();
    let mut rank = None;
    for (k, v) in std::mem::take(&mut b.top) {
        match k.as_str() {
            "schemaVersion" => meta.schema_version = v.to_string().trim_matches('"').to_string(),
            "baseTimeNanoseconds" => {
                meta.utc_epoch_ns = match &v {
                    serde_json::Value::Number(n) => decimal(n.to_string().as_bytes(), 0),
                    serde_json::Value::String(s) => decimal(s.as_bytes(), 0),
                    _ => None,
                }
                .and_then(|x| i64::try_from(x).ok())
                .unwrap_or(0);
            }
            "deviceProperties" => {
                for d in v.as_array().into_iter().flatten() {
                    let Some(id) = d.get("id").and_then(serde_json::Value::as_u64) else { continue };
                    gpus.push(Gpu {
                        device: id as u32,
                        name: d.get("name").and_then(|n| n.as_str()).unwrap_or("").to_string(),
                        sm_count: d.get("numSms").and_then(serde_json::Value::as_u64).unwrap_or(0) as u32,
                        memory_bytes: d.get("totalGlobalMem").and_then(serde_json::Value::as_u64).unwrap_or(0),
                    });
                }
            }
            "distributedInfo" => {
                let g = |f: &str| v.get(f).and_then(serde_json::Value::as_u64);
                rank = g("rank").map(|r| (r, g("world_size")));
                // The distributed rank, as nsys exports record RANK: ranks merge by it.
                meta.env_rank = rank.map(|(r, _)| r as u32);
            }
            _ => {}
        }
    }

    // Lanes: host lanes as they are; CPU ranges by nesting depth; GPU lanes split by owner.
    let mut lanes: Vec<Lane> = Vec::new();
    for ((kind, pid), ev) in std::mem::take(&mut b.host) {
        lanes.push(Lane::new(kind, pid, ev));
    }
    let mut cpu = std::mem::take(&mut b.cpu);
    cpu.sort_unstable_by_key(|r| (r.pid, r.tid, r.start, std::cmp::Reverse(r.end)));
    let mut nvtx: HashMap<(LaneKind, u32), Events> = HashMap::new();
    let mut stack: Vec<i64> = Vec::new();
    let mut cur = None;
    for r in cpu {
        if cur != Some((r.pid, r.tid)) {
            stack.clear();
            cur = Some((r.pid, r.tid));
        }
        while stack.last().is_some_and(|&e| e <= r.start) {
            stack.pop();
        }
        let depth = stack.len().min(usize::from(u16::MAX)) as u16;
        stack.push(r.end);
        nvtx.entry((LaneKind::Nvtx { tid: r.tid, depth }, r.pid)).or_default().push(
            r.start,
            r.end,
            r.name,
            None,
            None,
            Some(0),
        );
    }
    lanes.extend(nvtx.into_iter().map(|((k, pid), ev)| Lane::new(k, pid, ev)));
    for (kind, ev) in std::mem::take(&mut b.gpu) {
        if b.other_pid.is_empty() {
            lanes.push(Lane::new(kind, b.owner(0), ev));
            continue;
        }
        let mut by_pid: HashMap<u32, Events> = HashMap::new();
        for i in 0..ev.len() {
            let f = ev.has_flags().then(|| ev.flags(i));
            by_pid.entry(b.owner(ev.corr[i])).or_default().push(
                ev.start[i],
                ev.end(i),
                ev.name[i],
                Some(ev.corr[i]),
                Some(ev.aux(i)),
                f,
            );
        }
        lanes.extend(by_pid.into_iter().map(|(pid, ev)| Lane::new(kind, pid, ev)));
    }
    let overhead = std::mem::take(&mut b.overhead);
    if !overhead.is_empty() {
        lanes.push(Lane::new(LaneKind::Overhead { tid: 0 }, b.owner(0), overhead));
    }

    // Syncs per owning process; they, the extra events and everything else set the extent.
    let mut syncs: HashMap<u32, Events> = HashMap::new();
    let mut extra = std::mem::take(&mut b.extra);
    for s in std::mem::take(&mut b.syncs) {
        extra.push(s.start, s.end, 0, None, None, None);
        syncs.entry(b.owner(s.corr)).or_default().push(s.start, s.end, s.name, Some(s.corr), Some(s.aux), Some(s.ty));
    }
    let extent_kind = LaneKind::Overhead { tid: u32::MAX };
    lanes.push(Lane::new(extent_kind, u32::MAX, extra));
    meta.outliers = super::drop_outliers(&mut lanes);
    let start = lanes.iter().filter_map(|l| l.ev.start.first()).min().copied().unwrap_or(0);
    let end = lanes.iter().filter_map(|l| l.ev.ends().max()).max().unwrap_or(start).max(start);
    lanes.retain(|l| !(l.kind == extent_kind && l.pid == u32::MAX));
    meta.start_ns = start;
    meta.end_ns = end;

    let mut pids: Vec<u32> = lanes.iter().map(|l| l.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    let rank_label = rank.map(|(r, w)| match w {
        Some(w) => format!("rank {r} of {w}"),
        None => format!("rank {r}"),
    });
    let processes: Vec<Process> = pids
        .iter()
        .map(|&pid| {
            let base = b.process_names.get(&pid).cloned().unwrap_or_default();
            let name = match &rank_label {
                Some(r) if base.is_empty() => r.clone(),
                Some(r) => format!("{base} ({r})"),
                None => base,
            };
            Process { pid, name }
        })
        .collect();
    let mut tids: Vec<(u32, u32)> = lanes.iter().filter_map(|l| l.kind.tid().map(|t| (l.pid, t))).collect();
    tids.sort_unstable();
    tids.dedup();
    let threads = tids
        .into_iter()
        .map(|(pid, tid)| Thread { pid, tid, name: b.thread_names.get(&(pid, tid)).cloned().unwrap_or_default() })
        .collect();
    let used: Vec<u32> = {
        let mut d: Vec<u32> = lanes.iter().filter_map(|l| l.kind.device()).collect();
        d.sort_unstable();
        d.dedup();
        d
    };
    gpus.retain(|g| used.contains(&g.device));
    for d in used {
        if !gpus.iter().any(|g| g.device == d) {
            gpus.push(Gpu { device: d, ..Gpu::default() });
        }
    }
    gpus.sort_by_key(|g| g.device);
    gpus.dedup_by_key(|g| g.device);

    let ms = t0.elapsed().as_secs_f64() * 1e3;
    meta.tables.push(TableStat { name: "traceEvents".to_string(), rows: events, ms });
    b.counts.sort();
    for (k, n) in &b.counts {
        meta.tables.push(TableStat { name: format!("  {}", k.trim()), rows: *n, ms: 0.0 });
    }
    if b.no_time > 0 {
        meta.tables.push(TableStat {
            name: "  X events without a readable ts (skipped)".into(),
            rows: b.no_time,
            ms: 0.0,
        });
    }
    if b.oversized > 0 {
        meta.tables.push(TableStat {
            name: format!("  events over {} MiB (skipped)", json::MAX_ITEM >> 20),
            rows: b.oversized,
            ms: 0.0,
        });
    }
    meta.unreadable_events = (b.no_time + b.oversized) as u64;
    if let Some(s) = stop {
        meta.tables.push(TableStat {
            name: format!("stopped at byte {}: {} (events before it kept)", s.offset, s.reason),
            rows: events,
            ms: 0.0,
        });
    }
    let syncs = syncs
        .into_iter()
        .map(|(pid, mut ev)| {
            ev.sort_by_start();
            SyncRecords { pid, ev }
        })
        .collect();
    let mut trace = Trace {
        meta,
        strings: b.strings,
        gpus,
        processes,
        threads,
        lanes,
        syncs,
        host: crate::model::HostData::default(),
        ranks: Vec::new(),
    };
    super::order_lanes(&mut trace);
    trace
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_are_exact() {
        assert_eq!(decimal(b"5140583009067.660", 3), Some(5_140_583_009_067_660));
        assert_eq!(decimal(b"1.2345", 3), Some(1235));
        assert_eq!(decimal(b"1.2344", 3), Some(1234));
        assert_eq!(decimal(b"-0.0005", 3), Some(-1));
        assert_eq!(decimal(b"1e3", 3), Some(1_000_000));
        assert_eq!(decimal(b"2.5E-1", 3), Some(250));
        assert_eq!(decimal(b"12", 0), Some(12));
        assert_eq!(decimal(b"", 0), None);
        assert_eq!(decimal(b"-", 0), None);
        assert_eq!(decimal(b"1.2.3", 0), None);
        assert_eq!(decimal(b"nan", 3), None);
        assert_eq!(decimal(b"1e99999999999", 3), None);
    }

    proptest::proptest! {
        #[test]
        fn the_short_path_agrees_with_the_long_one(
            neg in proptest::bool::ANY,
            int in "[0-9]{0,12}",
            frac in proptest::option::of("[0-9]{0,10}"),
            scale in -2i32..12,
        ) {
            let text = format!("{}{int}{}", if neg { "-" } else { "" }, frac.map(|f| format!(".{f}")).unwrap_or_default());
            let short = short_decimal(text.as_bytes(), scale);
            let digits = int.len() + frac_len(&text);
            // Whatever the short path answers is the long path's answer...
            if short.is_some() {
                proptest::prop_assert_eq!(short, long_decimal(text.as_bytes(), scale), "{} at scale {}", text, scale);
            }
            // ...and it answers every number it is meant for.
            proptest::prop_assert_eq!(short.is_some(), (0..=9).contains(&scale) && (1..=18).contains(&digits), "{}", text);
        }
    }

    fn frac_len(text: &str) -> usize {
        text.split_once('.').map_or(0, |(_, f)| f.len())
    }

    #[test]
    fn copy_names() {
        let f = MemFlags::unpack(memcpy_flags("Memcpy HtoD (Pageable -> Device)"));
        assert_eq!((f.copy_kind, f.src, f.dst), (1, crate::model::MemKind::Pageable, crate::model::MemKind::Device));
        let f = MemFlags::unpack(memcpy_flags("Memcpy DtoH (Device -> Pinned)"));
        assert_eq!((f.copy_kind, f.dst), (2, crate::model::MemKind::Pinned));
        assert_eq!(memset_kind("Memset (Device)"), 2);
        assert_eq!(MemFlags::unpack(memcpy_flags("garbage")).copy_kind, 0);
    }
}
