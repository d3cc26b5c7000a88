//! One loader per nsys table. Loaders keep raw name references; [`Names`] resolves
//! them once at the end.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::{Context, Result};
use rusqlite::Connection;
use rusqlite::types::ValueRef;

use super::schema::Schema;
use super::{OPEN_END, Progress};
use crate::model::{
    ApiKind, Events, Gpu, Lane, LaneKind, MemClass, MemFlags, MemKind, Meta, NamedColumn, OSRT_GIL, OSRT_SERIALIZER,
    Process, StrId, Strings, SyncRecords, TableStat, Thread, decode_global_tid, strip_api_version,
};

// A raw name reference: a StringIds id, or LOCAL | index into `Partial::local_names`.
const LOCAL: u32 = 1 << 31;

/// What one loader produced.
#[derive(Debug, Default)]
pub(super) struct Partial {
    /// Events keyed by (lane kind, pid); names are raw references.
    pub lanes: Vec<((LaneKind, u32), Events)>,
    /// Names made by the loader (NVTX inline text, memcpy labels).
    pub local_names: Vec<String>,
    /// CUDA synchronization records.
    pub syncs: Vec<SyncRecords>,
    /// Rows and time per table.
    pub stats: Vec<TableStat>,
    /// NVTX marks of nsys's Python sampler (domain `Python Periodic Sampling`), left out.
    pub python_samples: usize,
}

impl Partial {
    /// Reference to a loader-made name.
    pub(super) fn local(&mut self, cache: &mut HashMap<String, u32>, s: &str) -> u32 {
        if let Some(&r) = cache.get(s) {
            return r;
        }
        let r = LOCAL | self.local_names.len() as u32;
        self.local_names.push(s.to_string());
        cache.insert(s.to_string(), r);
        r
    }
}

/// Lanes being filled, keyed by (kind, pid), with the last key cached: rows of one
/// stream or thread tend to come in runs. When they do not (threads interleave), every
/// row looks its lane up: a multiply-rotate hash, not `SipHash` (the keys are ours).
#[derive(Default)]
pub(super) struct LaneMap {
    index: HashMap<(LaneKind, u32), usize, std::hash::BuildHasherDefault<FastHasher>>,
    lanes: Vec<((LaneKind, u32), Events)>,
    last: Option<((LaneKind, u32), usize)>,
}

/// A multiply-rotate hasher (as in rustc's `FxHash`) for small keys of our own.
#[derive(Default, Clone, Copy)]
pub(super) struct FastHasher(u64);

impl std::hash::Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }

    fn write_u16(&mut self, v: u16) {
        self.write_u64(u64::from(v));
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }

    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }

    fn write_isize(&mut self, v: isize) {
        self.write_u64(v as u64);
    }

    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl LaneMap {
    /// The events of lane `key`, created on first use.
    pub(super) fn get(&mut self, key: (LaneKind, u32)) -> &mut Events {
        let i = match self.last {
            Some((k, i)) if k == key => i,
            _ => {
                let n = self.lanes.len();
                let i = *self.index.entry(key).or_insert(n);
                if i == n {
                    self.lanes.push((key, Events::default()));
                }
                self.last = Some((key, i));
                i
            }
        };
        &mut self.lanes[i].1
    }
}

/// `StringIds` of the file, and the interned table they resolve into.
pub(super) struct Names {
    file: FileStrings,
    map: Vec<StrId>,
    strings: Strings,
    api_kind: HashMap<StrId, ApiKind>,
}

/// The `StringIds` texts by id: a vector while ids stay within a small multiple of the
/// rows read, a map for the ids past that (a corrupt or hostile id sizes nothing).
#[derive(Debug, Default)]
struct FileStrings {
    dense: Vec<Option<Box<str>>>,
    sparse: HashMap<u32, Box<str>>,
}

impl FileStrings {
    // Ids up to 4 times the rows read so far (plus a little) are dense; nsys numbers
    // them 0, 1, 2... so in a real export every id is.
    fn insert(&mut self, id: u32, text: Option<Box<str>>, rows: usize) {
        let i = id as usize;
        if i < self.dense.len() {
            self.dense[i] = text;
        } else if i < rows.saturating_mul(4).saturating_add(1024) {
            self.dense.resize(i + 1, None);
            self.dense[i] = text;
        } else if let Some(t) = text {
            self.sparse.insert(id, t);
        }
    }

    fn get(&self, id: u32) -> Option<&str> {
        match self.dense.get(id as usize) {
            Some(t) => t.as_deref(),
            None => self.sparse.get(&id).map(|t| &**t),
        }
    }
}

impl Names {
    /// Text of a `StringIds` id.
    pub(super) fn file_str(&self, id: i64) -> Option<&str> {
        u32::try_from(id).ok().and_then(|i| self.file.get(i))
    }

    fn intern_ref(&mut self, r: u32, local: &[String], strip: bool) -> StrId {
        if r & LOCAL != 0 {
            return self.strings.intern(local.get((r & !LOCAL) as usize).map_or("", String::as_str));
        }
        let i = r as usize;
        if let Some(&id) = self.map.get(i)
            && id != StrId::MAX
        {
            return id;
        }
        let text = self.file.get(r).unwrap_or("");
        let id = self.strings.intern(if strip { strip_api_version(text) } else { text });
        if i < self.map.len() {
            self.map[i] = id;
        }
        id
    }

    /// Turn raw references of one lane into interned ids; classify API calls.
    pub(super) fn resolve(&mut self, ev: &mut Events, kind: LaneKind, local: &[String]) {
        let is_api = matches!(kind, LaneKind::CudaApi { .. });
        for n in &mut ev.name {
            *n = self.intern_ref(*n, local, is_api);
        }
        match kind.named_column() {
            NamedColumn::Aux => ev.map_aux(|a| u64::from(self.intern_ref(a as u32, local, false))),
            NamedColumn::Flags => ev.map_flags(|f| if f == 0 { 0 } else { self.intern_ref(f, local, false) }),
            NamedColumn::None => {}
        }
        if is_api {
            // Kinds by name id, looked up once per name: a table, not a hash per call.
            let (strings, api_kind) = (&self.strings, &mut self.api_kind);
            let mut kinds: Vec<Option<ApiKind>> = Vec::new();
            ev.map_flags_named(|n, f| {
                let i = n as usize;
                if i >= kinds.len() {
                    kinds.resize(i + 1, None);
                }
                let k = *kinds[i]
                    .get_or_insert_with(|| *api_kind.entry(n).or_insert_with(|| ApiKind::classify(strings.get(n))));
                f | k as u32
            });
        }
    }

    /// Resolve only the name column.
    pub(super) fn resolve_plain(&mut self, ev: &mut Events, local: &[String]) {
        for n in &mut ev.name {
            *n = self.intern_ref(*n, local, false);
        }
    }

    /// The interned table.
    pub(super) fn into_strings(self) -> Strings {
        self.strings
    }
}

/// The query for the name table.
pub(super) const STRING_IDS: &str = "SELECT id, value FROM StringIds";

/// Read the whole `StringIds` table.
pub(super) fn read_string_ids(conn: &Connection, schema: &Schema) -> Result<Names> {
    let mut file = FileStrings::default();
    if schema.has("StringIds") {
        let mut stmt = conn.prepare(STRING_IDS)?;
        let mut rows = stmt.query([])?;
        let mut n = 0usize;
        while let Some(r) = rows.next()? {
            // A row whose id is not an integer id (text, a fraction, negative, or in the
            // range of loader-made names) names nothing: skip it, as bad cells elsewhere.
            let Some(id) = string_id(r.get_ref(0)?) else { continue };
            n += 1;
            file.insert(id, text(r.get_ref(1)?).map(Into::into), n);
        }
    }
    let map = vec![StrId::MAX; file.dense.len()];
    Ok(Names { file, map, strings: Strings::new(), api_kind: HashMap::new() })
}

// A `StringIds` id: an integer below the loader-made names' range.
#[allow(clippy::wildcard_enum_match_arm, reason = "a column value of any other SQLite type reads as NULL")]
fn string_id(v: ValueRef<'_>) -> Option<u32> {
    match v {
        ValueRef::Integer(i) => u32::try_from(i).ok().filter(|&i| i & LOCAL == 0),
        _ => None,
    }
}

/// Text of a column value, if it is text.
#[allow(clippy::wildcard_enum_match_arm, reason = "a column value of any other SQLite type reads as NULL")]
pub(super) fn text(v: ValueRef<'_>) -> Option<&str> {
    match v {
        ValueRef::Text(t) => std::str::from_utf8(t).ok(),
        _ => None,
    }
}

/// Integer of a column value, if it is numeric.
#[allow(clippy::wildcard_enum_match_arm, reason = "a column value of any other SQLite type reads as NULL")]
pub(super) fn int(v: ValueRef<'_>) -> Option<i64> {
    match v {
        ValueRef::Integer(i) => Some(i),
        ValueRef::Real(f) => Some(f as i64),
        _ => None,
    }
}

/// Export versions and session start.
pub(super) fn read_meta(conn: &Connection, schema: &Schema) -> Result<Meta> {
    let mut meta = Meta::default();
    for table in ["META_DATA_EXPORT", "EXPORT_META_DATA"] {
        if !schema.has_col(table, "name") || !schema.has_col(table, "value") {
            continue;
        }
        let mut stmt = conn.prepare(&format!("SELECT name, value FROM {table}"))?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let v = text(r.get_ref(1)?).unwrap_or("").to_string();
            match text(r.get_ref(0)?) {
                Some("EXPORT_PRODUCT_VERSION") => meta.nsys_version = v,
                Some("EXPORT_SCHEMA_VERSION") => meta.schema_version = v,
                _ => {}
            }
        }
        break;
    }
    if schema.has_col("TARGET_INFO_SESSION_START_TIME", "utcEpochNs") {
        meta.utc_epoch_ns = conn
            .query_row("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1", [], |r| {
                r.get::<_, Option<i64>>(0)
            })
            .ok()
            .flatten()
            .unwrap_or(0);
    }
    read_identity(conn, schema, &mut meta)?;
    Ok(meta)
}

/// Environment variables that give a process's rank in its job, in order of preference.
const RANK_VARS: [&str; 4] = ["RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"];

// Host name and the rank variables of the profiled process's environment: nsys records
// it in META_DATA_CAPTURE (`PROCESS_N:ENVIRONMENT_VARIABLE`, `NAME="value"`); its own
// environment (`TARGET_INFO_SYSTEM_ENV` `DeviceEnvironment`, `NAME=value;...`) is the
// fallback.
fn read_identity(conn: &Connection, schema: &Schema, meta: &mut Meta) -> Result<()> {
    let mut vars: HashMap<String, String> = HashMap::new();
    let mut device_env = String::new();
    if schema.has_col("TARGET_INFO_SYSTEM_ENV", "name") && schema.has_col("TARGET_INFO_SYSTEM_ENV", "value") {
        let mut stmt = conn.prepare(
            "SELECT name, value FROM TARGET_INFO_SYSTEM_ENV WHERE name IN ('Hostname', 'DeviceEnvironment')",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let v = text(r.get_ref(1)?).unwrap_or("").to_string();
            match text(r.get_ref(0)?) {
                Some("Hostname") if meta.hostname.is_empty() => meta.hostname = v,
                Some("DeviceEnvironment") => device_env = v,
                _ => {}
            }
        }
    }
    if schema.has_col("META_DATA_CAPTURE", "name") && schema.has_col("META_DATA_CAPTURE", "value") {
        let mut stmt = conn.prepare(
            "SELECT value FROM META_DATA_CAPTURE WHERE name LIKE 'PROCESS\\_%:ENVIRONMENT\\_VARIABLE' ESCAPE '\\'",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            if let Some((k, v)) = text(r.get_ref(0)?).and_then(|t| t.split_once('=')) {
                vars.entry(k.to_string()).or_insert_with(|| v.trim_matches('"').to_string());
            }
        }
    }
    for kv in device_env.split(';') {
        if let Some((k, v)) = kv.split_once('=') {
            vars.entry(k.to_string()).or_insert_with(|| v.to_string());
        }
    }
    let num = |k: &str| vars.get(k).and_then(|v| v.trim().parse::<u32>().ok());
    meta.env_rank = RANK_VARS.iter().find_map(|k| num(k));
    meta.env_local_rank = num("LOCAL_RANK");
    Ok(())
}

/// Run `sql` and feed each row to `f`, counting rows for progress and stats.
pub(super) fn scan(
    conn: &Connection,
    table: &str,
    sql: &str,
    progress: &Progress,
    stats: &mut Vec<TableStat>,
    mut f: impl FnMut(&rusqlite::Row<'_>) -> Result<()>,
) -> Result<()> {
    let t = Instant::now();
    let mut stmt = conn.prepare(sql).with_context(|| format!("reading {table}"))?;
    let mut rows = stmt.query([]).with_context(|| format!("reading {table}"))?;
    let mut n = 0usize;
    while let Some(r) = rows.next().with_context(|| format!("reading {table} (corrupt file?)"))? {
        f(r)?;
        n += 1;
        if n.is_multiple_of(65_536) {
            progress.rows_done.fetch_add(65_536, Ordering::Relaxed);
        }
    }
    progress.rows_done.fetch_add((n % 65_536) as u64, Ordering::Relaxed);
    stats.push(TableStat { name: table.to_string(), rows: n, ms: t.elapsed().as_secs_f64() * 1e3 });
    Ok(())
}

/// The `SELECT` the reader runs on event table `table` of this export (columns it
/// lacks read as NULL), or None when the table is absent or not one of this file's
/// (`host::select` has the scheduling tables).
pub(super) fn select(schema: &Schema, table: &str) -> Option<String> {
    const GPU: [&str; 4] = ["deviceId", "streamId", "correlationId", "globalPid"];
    let extra: &[&str] = match table {
        "CUPTI_ACTIVITY_KIND_KERNEL" => &["shortName", "demangledName"],
        "CUPTI_ACTIVITY_KIND_MEMCPY" => &["bytes", "copyKind", "srcKind", "dstKind"],
        "CUPTI_ACTIVITY_KIND_MEMSET" => &["bytes", "memKind"],
        "CUPTI_ACTIVITY_KIND_GRAPH_TRACE" => &["graphId"],
        "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION" => &["syncType"],
        "CUPTI_ACTIVITY_KIND_RUNTIME" => &["eventClass", "globalTid", "correlationId", "nameId"],
        "NVTX_EVENTS" => &["eventType", "globalTid", "text", "textId", "domainId"],
        "OSRT_API" | "PROFILER_OVERHEAD" => &["globalTid", "nameId"],
        _ => return None,
    };
    let gpu: &[&str] =
        if table.starts_with("CUPTI_ACTIVITY_KIND_") && table != "CUPTI_ACTIVITY_KIND_RUNTIME" { &GPU } else { &[] };
    let cols: Vec<String> = gpu.iter().chain(extra).map(|c| schema.col_or_null(table, c)).collect();
    schema.has(table).then(|| format!("SELECT start, \"end\", {} FROM {table}", cols.join(", ")))
}

// Columns 0..6 of a GPU table's `select`: start, end, device, stream, corr, pid. None for records
// without timestamps (CUPTI writes 0/0 when it could not collect them).
/// start, end, device, stream, correlation id, pid of one GPU record.
type GpuRow = (i64, i64, u32, u32, u32, u32);

fn gpu_row(r: &rusqlite::Row<'_>) -> Result<Option<GpuRow>> {
    let s = int(r.get_ref(0)?).unwrap_or(0);
    let e = int(r.get_ref(1)?).unwrap_or(s);
    if s == 0 && e == 0 {
        return Ok(None);
    }
    let dev = int(r.get_ref(2)?).unwrap_or(0) as u32;
    let stream = int(r.get_ref(3)?).unwrap_or(0) as u32;
    let corr = int(r.get_ref(4)?).unwrap_or(0) as u32;
    let pid = int(r.get_ref(5)?).map_or(0, |g| decode_global_tid(g).0);
    Ok(Some((s, e, dev, stream, corr, pid)))
}

/// Where loaders read from.
#[derive(Clone, Copy)]
pub(super) struct Src<'a> {
    /// The export.
    pub conn: &'a Connection,
    /// Its tables and columns.
    pub schema: &'a Schema,
    /// Rows read so far.
    pub progress: &'a Progress,
}

/// What the loaders of one thread fill.
#[derive(Default)]
pub(super) struct Sink {
    /// Lanes, names and stats so far.
    pub out: Partial,
    /// Lanes being filled.
    pub lanes: LaneMap,
    cache: HashMap<String, u32>,
}

impl Sink {
    /// Reference to a loader-made name.
    pub(super) fn local(&mut self, s: &str) -> u32 {
        self.out.local(&mut self.cache, s)
    }

    /// The loaders' output.
    pub(super) fn finish(mut self) -> Partial {
        self.out.lanes = self.lanes.lanes;
        self.out
    }
}

/// GPU operations, sync records, OS runtime calls and profiler overhead into `sink`
/// (everything but CUDA API calls, NVTX and host data, which have loaders of their own).
pub(super) fn read_gpu_and_os(src: Src<'_>, sink: &mut Sink) -> Result<()> {
    read_kernels(src, sink)?;
    read_memcpy(src, sink)?;
    read_memset(src, sink)?;
    read_graphs(src, sink)?;
    read_sync(src, sink)?;
    read_osrt(src, sink)?;
    read_overhead(src, sink)
}

// The kernel table can hold millions of rows: stream them into lanes, keep nothing else.
fn read_kernels(src: Src<'_>, sink: &mut Sink) -> Result<()> {
    const T: &str = "CUPTI_ACTIVITY_KIND_KERNEL";
    let Some(sql) = select(src.schema, T) else { return Ok(()) };
    let lanes = &mut sink.lanes;
    scan(src.conn, T, &sql, src.progress, &mut sink.out.stats, |r| {
        let Some((s, e, device, stream, corr, pid)) = gpu_row(r)? else { return Ok(()) };
        let short = int(r.get_ref(6)?);
        let long = int(r.get_ref(7)?);
        let name = short.or(long).unwrap_or(0) as u32;
        let demangled = long.or(short).unwrap_or(0) as u64;
        lanes.get((LaneKind::Kernels { device, stream }, pid)).push(s, e, name, Some(corr), Some(demangled), None);
        Ok(())
    })
}

// Rows of a (small) GPU activity table: the common columns, then the table's own
// columns decoded by `f`.
fn gpu_rows<X>(
    src: Src<'_>,
    sink: &mut Sink,
    table: &str,
    mut f: impl FnMut(&rusqlite::Row<'_>) -> Result<X>,
) -> Result<Vec<(GpuRow, X)>> {
    let mut rows = Vec::new();
    if let Some(sql) = select(src.schema, table) {
        scan(src.conn, table, &sql, src.progress, &mut sink.out.stats, |r| {
            if let Some(g) = gpu_row(r)? {
                rows.push((g, f(r)?));
            }
            Ok(())
        })?;
    }
    Ok(rows)
}

fn col(r: &rusqlite::Row<'_>, i: usize, default: i64) -> Result<i64> {
    Ok(int(r.get_ref(i)?).unwrap_or(default))
}

fn memcpy_label(copy_kind: u8, src: u8, dst: u8) -> String {
    let dir = match copy_kind {
        1 => "HtoD",
        2 => "DtoH",
        3 => "HtoA",
        4 => "AtoH",
        5 => "AtoA",
        6 => "AtoD",
        7 => "DtoA",
        8 => "DtoD",
        9 => "HtoH",
        10 => "PtoP",
        11 => "Unified HtoD",
        12 => "Unified DtoH",
        13 => "Unified DtoD",
        _ => "Unknown",
    };
    let cap = |k: u8| {
        let l = MemKind::from_raw(k).label();
        let mut c = l.chars();
        c.next().map(|f| f.to_ascii_uppercase().to_string() + c.as_str()).unwrap_or_default()
    };
    format!("Memcpy {dir} ({} -> {})", cap(src), cap(dst))
}

fn read_memcpy(src: Src<'_>, sink: &mut Sink) -> Result<()> {
    let rows = gpu_rows(src, sink, "CUPTI_ACTIVITY_KIND_MEMCPY", |r| {
        let kinds = (col(r, 7, 0)? as u8, col(r, 8, 7)? as u8, col(r, 9, 7)? as u8);
        Ok((col(r, 6, 0)?.max(0) as u64, MemFlags::pack(kinds.0, kinds.1, kinds.2)))
    })?;
    let mut labels: HashMap<u32, u32> = HashMap::new();
    for ((s, e, device, stream, corr, pid), (bytes, flags)) in rows {
        let name = *labels
            .entry(flags)
            .or_insert_with(|| sink.local(&memcpy_label(flags as u8, (flags >> 8) as u8, (flags >> 16) as u8)));
        let class = MemClass::from_copy_kind(flags as u8);
        let lane = sink.lanes.get((LaneKind::Memory { device, stream, class }, pid));
        lane.push(s, e, name, Some(corr), Some(bytes), Some(flags));
    }
    Ok(())
}

fn read_memset(src: Src<'_>, sink: &mut Sink) -> Result<()> {
    let rows =
        gpu_rows(src, sink, "CUPTI_ACTIVITY_KIND_MEMSET", |r| Ok((col(r, 6, 0)?.max(0) as u64, col(r, 7, 7)? as u8)))?;
    for ((s, e, device, stream, corr, pid), (bytes, kind)) in rows {
        let name = sink.local(&format!("Memset ({})", MemKind::from_raw(kind).label()));
        let key = (LaneKind::Memory { device, stream, class: MemClass::Memset }, pid);
        sink.lanes.get(key).push(s, e, name, Some(corr), Some(bytes), Some(MemFlags::pack(0, kind, kind)));
    }
    Ok(())
}

fn read_graphs(src: Src<'_>, sink: &mut Sink) -> Result<()> {
    let rows = gpu_rows(src, sink, "CUPTI_ACTIVITY_KIND_GRAPH_TRACE", |r| col(r, 6, 0))?;
    for ((s, e, device, stream, corr, pid), graph) in rows {
        let name = sink.local(&format!("CUDA graph {graph}"));
        sink.lanes.get((LaneKind::Graphs { device, stream }, pid)).push(s, e, name, Some(corr), None, None);
    }
    Ok(())
}

fn sync_label(t: i64) -> &'static str {
    match t {
        1 => "Event sync",
        2 => "Stream wait event",
        3 => "Stream sync",
        4 => "Context sync",
        _ => "Sync",
    }
}

fn read_sync(src: Src<'_>, sink: &mut Sink) -> Result<()> {
    let rows = gpu_rows(src, sink, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", |r| col(r, 6, 0))?;
    let mut by_pid: HashMap<u32, Events> = HashMap::new();
    for ((s, e, device, stream, corr, pid), ty) in rows {
        let name = sink.local(sync_label(ty));
        let aux = (u64::from(device) << 32) | u64::from(stream);
        by_pid.entry(pid).or_default().push(s, e, name, Some(corr), Some(aux), Some(ty as u32));
    }
    for (pid, mut ev) in by_pid {
        ev.sort_by_start();
        sink.out.syncs.push(SyncRecords { pid, ev });
    }
    Ok(())
}

/// CUDA runtime and driver calls (one table), on its own connection.
pub(super) fn read_runtime(src: Src<'_>) -> Result<Partial> {
    const T: &str = "CUPTI_ACTIVITY_KIND_RUNTIME";
    let mut sink = Sink::default();
    let Some(sql) = select(src.schema, T) else { return Ok(sink.finish()) };
    let lanes = &mut sink.lanes;
    scan(src.conn, T, &sql, src.progress, &mut sink.out.stats, |r| {
        let class = col(r, 2, 0)?;
        // Backtrace records repeat the call they annotate: counting them would double it.
        if (67..=69).contains(&class) {
            return Ok(());
        }
        let s = col(r, 0, 0)?;
        let e = col(r, 1, s)?;
        let (pid, tid) = int(r.get_ref(3)?).map_or((0, 0), decode_global_tid);
        let (corr, name) = (col(r, 4, 0)? as u32, col(r, 5, 0)? as u32);
        let flags = if class == 1 { ApiKind::DRIVER_BIT } else { 0 };
        lanes.get((LaneKind::CudaApi { tid }, pid)).push(s, e, name, Some(corr), None, Some(flags));
        Ok(())
    })?;
    Ok(sink.finish())
}

fn read_osrt(src: Src<'_>, sink: &mut Sink) -> Result<()> {
    let gil = gil_callchains(src)?;
    let serializer = serializer_callchains(src)?;
    if gil.is_empty() && serializer.is_empty() {
        return read_thread_rows(src, sink, "OSRT_API", |tid| LaneKind::Osrt { tid });
    }
    let Some(sql) = select(src.schema, "OSRT_API") else { return Ok(()) };
    let sql = sql.replacen(" FROM ", ", callchainId FROM ", 1);
    let lanes = &mut sink.lanes;
    scan(src.conn, "OSRT_API", &sql, src.progress, &mut sink.out.stats, |r| {
        let s = col(r, 0, 0)?;
        let e = col(r, 1, s)?;
        let (pid, tid) = int(r.get_ref(2)?).map_or((0, 0), decode_global_tid);
        let chain = int(r.get_ref(4)?);
        let flags = if chain.is_some_and(|c| gil.contains(&c)) { OSRT_GIL } else { 0 }
            | if chain.is_some_and(|c| serializer.contains(&c)) { OSRT_SERIALIZER } else { 0 };
        lanes.get((LaneKind::Osrt { tid }, pid)).push(s, e, col(r, 3, 0)? as u32, None, None, Some(flags));
        Ok(())
    })
}

// Frames that mark an OS runtime call made while taking Python's GIL.
const GIL_FRAMES: [&str; 5] =
    ["take_gil", "PyEval_RestoreThread", "PyEval_AcquireThread", "PyGILState_Ensure", "PyEval_AcquireLock"];

// Callchain ids whose first frames take the GIL (OSRT_CALLCHAINS, where the capture has
// OS runtime backtraces); empty without them.
fn gil_callchains(src: Src<'_>) -> Result<std::collections::HashSet<i64>> {
    let list = GIL_FRAMES.iter().map(|f| format!("'{f}'")).collect::<Vec<_>>().join(", ");
    callchains_where(
        src,
        &format!("c.stackDepth < 6 AND c.symbol IN (SELECT id FROM StringIds WHERE value IN ({list}))"),
    )
}

// Callchain ids of OSRT_CALLCHAINS rows passing `filter` (over `c`); empty without backtraces.
fn callchains_where(src: Src<'_>, filter: &str) -> Result<std::collections::HashSet<i64>> {
    let mut out = std::collections::HashSet::new();
    if !src.schema.has_col("OSRT_CALLCHAINS", "symbol") || !src.schema.has_col("OSRT_API", "callchainId") {
        return Ok(out);
    }
    let mut stmt = src.conn.prepare(&format!("SELECT DISTINCT c.id FROM OSRT_CALLCHAINS c WHERE {filter}"))?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        if let Some(id) = int(r.get_ref(0)?) {
            out.insert(id);
        }
    }
    Ok(out)
}

// Frames (substrings of symbols) of a serializer writing a checkpoint: PyTorch's
// `torch.save` (caffe2::serialize::PyTorchStreamWriter), pickle, safetensors.
const SERIALIZER_FRAMES: [&str; 4] = ["PyTorchStreamWriter", "_pickle", "pickle_", "safetensors"];

// Callchain ids with a serializer's frame (OSRT_CALLCHAINS); empty without backtraces.
fn serializer_callchains(src: Src<'_>) -> Result<std::collections::HashSet<i64>> {
    let like = SERIALIZER_FRAMES.iter().map(|f| format!("value LIKE '%{f}%'")).collect::<Vec<_>>().join(" OR ");
    callchains_where(src, &format!("c.symbol IN (SELECT id FROM StringIds WHERE {like})"))
}

// Profiler overhead rows, one lane per thread (names are StringIds like OS runtime calls).
fn read_overhead(src: Src<'_>, sink: &mut Sink) -> Result<()> {
    read_thread_rows(src, sink, "PROFILER_OVERHEAD", |tid| LaneKind::Overhead { tid })
}

// Rows of (start, end, globalTid, nameId) into one lane per thread of kind `kind(tid)`.
fn read_thread_rows(src: Src<'_>, sink: &mut Sink, table: &str, kind: fn(u32) -> LaneKind) -> Result<()> {
    let Some(sql) = select(src.schema, table) else { return Ok(()) };
    let lanes = &mut sink.lanes;
    scan(src.conn, table, &sql, src.progress, &mut sink.out.stats, |r| {
        let s = col(r, 0, 0)?;
        let e = col(r, 1, s)?;
        let (pid, tid) = int(r.get_ref(2)?).map_or((0, 0), decode_global_tid);
        lanes.get((kind(tid), pid)).push(s, e, col(r, 3, 0)? as u32, None, None, None);
        Ok(())
    })
}

/// Processes, threads and GPUs that own events.
pub(super) fn read_who(
    conn: &Connection,
    schema: &Schema,
    names: &Names,
    lanes: &[Lane],
) -> Result<(Vec<Gpu>, Vec<Process>, Vec<Thread>)> {
    let mut pids: Vec<u32> = lanes.iter().map(|l| l.pid).collect();
    pids.sort_unstable();
    pids.dedup();
    let mut tids: Vec<(u32, u32)> = lanes.iter().filter_map(|l| l.kind.tid().map(|t| (l.pid, t))).collect();
    tids.sort_unstable();
    tids.dedup();

    let mut pnames: HashMap<u32, String> = HashMap::new();
    if schema.has_col("PROCESSES", "pid") && schema.has_col("PROCESSES", "name") {
        let mut stmt = conn.prepare("SELECT pid, name FROM PROCESSES")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            if let (Some(pid), Some(name)) = (int(r.get_ref(0)?), text(r.get_ref(1)?)) {
                pnames.insert(pid as u32, name.to_string());
            }
        }
    }
    let mut tnames: HashMap<(u32, u32), String> = HashMap::new();
    if schema.has_col("ThreadNames", "globalTid") && schema.has_col("ThreadNames", "nameId") {
        let mut stmt = conn.prepare("SELECT globalTid, nameId FROM ThreadNames")?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            if let (Some(g), Some(n)) = (int(r.get_ref(0)?), int(r.get_ref(1)?)) {
                tnames.insert(decode_global_tid(g), names.file_str(n).unwrap_or("").to_string());
            }
        }
    }
    let processes = pids
        .iter()
        .map(|&pid| {
            let name = pnames.get(&pid).or_else(|| tnames.get(&(pid, pid))).cloned().unwrap_or_default();
            Process { pid, name }
        })
        .collect();
    let threads = tids
        .iter()
        .map(|&(pid, tid)| Thread { pid, tid, name: tnames.get(&(pid, tid)).cloned().unwrap_or_default() })
        .collect();
    Ok((read_gpus(conn, schema, lanes)?, processes, threads))
}

fn read_gpus(conn: &Connection, schema: &Schema, lanes: &[Lane]) -> Result<Vec<Gpu>> {
    const T: &str = "TARGET_INFO_GPU";
    let mut used: Vec<u32> = lanes.iter().filter_map(|l| l.kind.shown_with_gpu()).collect();
    used.sort_unstable();
    used.dedup();
    let mut gpus: Vec<Gpu> = Vec::new();
    if schema.has_col(T, "id") {
        let sql = format!(
            "SELECT id, {}, {}, {} FROM {T}",
            schema.col_or_null(T, "name"),
            schema.col_or_null(T, "smCount"),
            schema.col_or_null(T, "totalMemory")
        );
        let mut stmt = conn.prepare(&sql)?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let device = int(r.get_ref(0)?).unwrap_or(0) as u32;
            if gpus.iter().any(|g| g.device == device) {
                continue;
            }
            gpus.push(Gpu {
                device,
                name: text(r.get_ref(1)?).unwrap_or("").to_string(),
                sm_count: int(r.get_ref(2)?).unwrap_or(0) as u32,
                memory_bytes: int(r.get_ref(3)?).unwrap_or(0).max(0) as u64,
            });
        }
    }
    // Keep GPUs that ran something (exports list every GPU on the box), and make sure
    // every device with events has an entry.
    if !used.is_empty() {
        gpus.retain(|g| used.contains(&g.device));
    }
    for d in used {
        if !gpus.iter().any(|g| g.device == d) {
            gpus.push(Gpu { device: d, ..Gpu::default() });
        }
    }
    gpus.sort_by_key(|g| g.device);
    Ok(gpus)
}

/// Set an open NVTX end (NULL) to the sentinel closed later to the trace end.
pub(super) fn open_end(e: Option<i64>) -> i64 {
    e.unwrap_or(OPEN_END)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn far_string_ids_go_to_the_map_not_the_vector() {
        let mut f = FileStrings::default();
        for i in 0..10 {
            f.insert(i, Some(format!("s{i}").into()), i as usize + 1);
        }
        f.insert(1_073_741_823, Some("far".into()), 11);
        f.insert(2000, Some("past 4x".into()), 12);
        assert!(f.dense.len() <= 12 * 4 + 1024, "{}", f.dense.len());
        assert_eq!(
            (f.get(3), f.get(1_073_741_823), f.get(2000), f.get(77)),
            (Some("s3"), Some("far"), Some("past 4x"), None)
        );
    }
}
