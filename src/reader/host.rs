//! Host scheduling data: `SCHED_EVENTS` (context switches) into on-CPU intervals per
//! thread, `COMPOSITE_EVENTS` (CPU samples) with the leaf frame of their
//! `SAMPLING_CALLCHAINS` stack (and whether the stack takes Python's GIL) into instants per thread, and the [`HostData`] summary.
//!
//! Both tables can hold tens of millions of rows, every process of the machine in a
//! system-wide capture: rows are streamed into columns, names stay `StringIds`
//! references until the end, and nothing per row is a `String`.

use std::collections::HashMap;

use anyhow::Result;
use rusqlite::Connection;

use super::schema::Schema;
use super::tables::{Partial, Sink, Src, int, scan, text};
use crate::model::{
    HostData, HostTables, Lane, LaneKind, Ns, SAMPLE_GIL, SampleFlags, SampleRate, TableStat, decode_global_tid,
};

const SCHED: &str = "SCHED_EVENTS";
const SAMPLES: &str = "COMPOSITE_EVENTS";
const CHAINS: &str = "SAMPLING_CALLCHAINS";

// Marks a switch-in in a raw switch row's CPU word.
const IN_BIT: u32 = 1 << 31;

/// The `SELECT` the reader runs on `SCHED_EVENTS` or `COMPOSITE_EVENTS` (the latter
/// joined to the leaf frame of its callchain), or None when the table is absent.
pub(super) fn select(schema: &Schema, table: &str) -> Option<String> {
    if !schema.has_col(table, "start") {
        return None;
    }
    let c = |t: &str, alias: &str, col: &str| {
        if schema.has_col(t, col) { format!("{alias}.\"{col}\"") } else { "NULL".to_string() }
    };
    match table {
        SCHED => Some(format!(
            "SELECT s.start, {}, {}, {} FROM {SCHED} s",
            c(SCHED, "s", "cpu"),
            c(SCHED, "s", "isSchedIn"),
            c(SCHED, "s", "globalTid")
        )),
        SAMPLES => {
            let join = schema.has_col(SAMPLES, "id")
                && ["id", "stackDepth", "symbol", "module"].iter().all(|col| schema.has_col(CHAINS, col));
            let (frame, from) = if join {
                ("c.symbol, c.module, e.id", format!(" LEFT JOIN {CHAINS} c ON c.id = e.id AND c.stackDepth = 0"))
            } else {
                ("NULL, NULL, NULL", String::new())
            };
            Some(format!(
                "SELECT e.start, {}, {}, {}, {frame} FROM {SAMPLES} e{from}",
                c(SAMPLES, "e", "cpu"),
                c(SAMPLES, "e", "threadState"),
                c(SAMPLES, "e", "globalTid")
            ))
        }
        _ => None,
    }
}

/// Context switches and CPU samples, on the calling thread (its own connection).
pub(super) fn read_host(src: Src<'_>) -> Result<Partial> {
    let mut sink = Sink::default();
    read_sched(src, &mut sink)?;
    read_samples(src, &mut sink)?;
    Ok(sink.finish())
}

// Raw switches of one thread: (time, cpu | IN_BIT for a switch-in), in row order.
type Switches = Vec<(Ns, u32)>;

fn read_sched(src: Src<'_>, sink: &mut Sink) -> Result<()> {
    let Some(sql) = select(src.schema, SCHED) else { return Ok(()) };
    let mut index: HashMap<(u32, u32), usize> = HashMap::new();
    let mut threads: Vec<((u32, u32), Switches)> = Vec::new();
    let mut last: Option<((u32, u32), usize)> = None;
    let (mut first_t, mut last_t) = (Ns::MAX, Ns::MIN);
    scan(src.conn, SCHED, &sql, src.progress, &mut sink.out.stats, |r| {
        let Some(t) = int(r.get_ref(0)?) else { return Ok(()) };
        let cpu = int(r.get_ref(1)?).unwrap_or(0).clamp(0, i64::from(!IN_BIT)) as u32;
        let is_in = int(r.get_ref(2)?).unwrap_or(0) != 0;
        let key = int(r.get_ref(3)?).map_or((0, 0), decode_global_tid);
        let i = match last {
            Some((k, i)) if k == key => i,
            _ => {
                let n = threads.len();
                let i = *index.entry(key).or_insert(n);
                if i == n {
                    threads.push((key, Vec::new()));
                }
                last = Some((key, i));
                i
            }
        };
        threads[i].1.push((t, if is_in { cpu | IN_BIT } else { cpu }));
        (first_t, last_t) = (first_t.min(t), last_t.max(t));
        Ok(())
    })?;
    let mut labels: HashMap<u32, u32> = HashMap::new();
    for ((pid, tid), mut sw) in threads {
        // Rows of one thread are in time order in practice; the stable sort keeps a
        // switch-out before the switch-in it ties with.
        if !sw.is_sorted_by_key(|s| s.0) {
            sw.sort_by_key(|s| s.0);
        }
        let intervals = on_cpu_intervals(&sw, first_t, last_t);
        drop(sw);
        let names: Vec<u32> = intervals
            .iter()
            .map(|&(_, _, cpu)| *labels.entry(cpu).or_insert_with(|| sink.local(&format!("cpu {cpu}"))))
            .collect();
        let ev = sink.lanes.get((LaneKind::OnCpu { tid }, pid));
        for ((s, e, cpu), name) in intervals.into_iter().zip(names) {
            ev.push(s, e, name, None, Some(u64::from(cpu)), None);
        }
    }
    Ok(())
}

/// Pair the switches of one thread (sorted by time) into on-CPU intervals
/// `(start, end, cpu)`. A thread whose first switch is a switch-out was on CPU since
/// `first`; one still on CPU after its last switch stays on until `last`. A switch-in
/// while already in (a lost switch-out) ends the open interval there; a switch-out
/// while out is dropped.
pub(super) fn on_cpu_intervals(sw: &[(Ns, u32)], first: Ns, last: Ns) -> Vec<(Ns, Ns, u32)> {
    let mut out = Vec::with_capacity(sw.len() / 2 + 1);
    let mut open: Option<(Ns, u32)> = None;
    for (k, &(t, w)) in sw.iter().enumerate() {
        let cpu = w & !IN_BIT;
        match (open.take(), w & IN_BIT != 0) {
            (Some((s, c)), true) => {
                out.push((s, t, c));
                open = Some((t, cpu));
            }
            (None, true) => open = Some((t, cpu)),
            (Some((s, c)), false) => out.push((s, t, c)),
            (None, false) if k == 0 => out.push((first.min(t), t, cpu)),
            (None, false) => {}
        }
    }
    if let Some((s, c)) = open {
        out.push((s, last.max(s), c));
    }
    out
}

// Frames of CPython taking or handing over the GIL. `PyThread_acquire_lock` is left out:
// it is the lock behind `threading.Lock` and `queue.Queue.get`, a wait for a producer.
const GIL_FRAMES: [&str; 6] =
    ["take_gil", "drop_gil", "PyEval_RestoreThread", "PyEval_AcquireThread", "PyGILState_Ensure", "PyEval_AcquireLock"];

// Sample ids (`COMPOSITE_EVENTS.id`) whose stack holds a GIL frame; empty without stacks.
fn gil_samples(src: Src<'_>) -> Result<std::collections::HashSet<i64>> {
    let mut out = std::collections::HashSet::new();
    if !["id", "stackDepth", "symbol"].iter().all(|c| src.schema.has_col(CHAINS, c)) {
        return Ok(out);
    }
    let list = GIL_FRAMES.iter().map(|f| format!("'{f}'")).collect::<Vec<_>>().join(", ");
    let sql = format!(
        "SELECT DISTINCT c.id FROM {CHAINS} c WHERE c.symbol IN (SELECT id FROM StringIds WHERE value IN ({list}))"
    );
    let mut stmt = src.conn.prepare(&sql)?;
    let mut rows = stmt.query([])?;
    while let Some(r) = rows.next()? {
        if let Some(id) = int(r.get_ref(0)?) {
            out.insert(id);
        }
    }
    Ok(out)
}

fn read_samples(src: Src<'_>, sink: &mut Sink) -> Result<()> {
    let Some(sql) = select(src.schema, SAMPLES) else { return Ok(()) };
    let gil = gil_samples(src)?;
    let unknown = sink.local("[unknown]");
    let lanes = &mut sink.lanes;
    scan(src.conn, SAMPLES, &sql, src.progress, &mut sink.out.stats, |r| {
        let Some(t) = int(r.get_ref(0)?) else { return Ok(()) };
        let cpu = int(r.get_ref(1)?).unwrap_or(0).clamp(0, 0xFF_FFFF) as u32;
        let state = int(r.get_ref(2)?).unwrap_or(0).clamp(0, 255) as u8;
        let (pid, tid) = int(r.get_ref(3)?).map_or((0, 0), decode_global_tid);
        let symbol = int(r.get_ref(4)?).map_or(unknown, |s| s as u32);
        let module = int(r.get_ref(5)?).map_or(u64::from(unknown), |m| u64::from(m as u32));
        let in_gil = int(r.get_ref(6)?).is_some_and(|id| gil.contains(&id));
        let flags = SampleFlags::pack(cpu, state) | if in_gil { SAMPLE_GIL } else { 0 };
        lanes.get((LaneKind::Samples { tid }, pid)).push(t, t, symbol, None, Some(module), Some(flags));
        Ok(())
    })
}

/// Summarize the host data of the assembled lanes (names resolved) and the export.
pub(super) fn host_data(
    conn: &Connection,
    schema: &Schema,
    lanes: &[Lane],
    strings: &crate::model::Strings,
    stats: &[TableStat],
) -> HostData {
    let rows = |t: &str| stats.iter().filter(|s| s.name == t).map(|s| s.rows).sum::<usize>();
    let mut cpus: Vec<u32> = Vec::new();
    let mut modules: Vec<u32> = Vec::new();
    let mut on_cpu: HashMap<(u32, u32), Ns> = HashMap::new();
    for l in lanes {
        #[allow(clippy::wildcard_enum_match_arm, reason = "a filter: the summary reads on-CPU and sample lanes")]
        match l.kind {
            LaneKind::OnCpu { tid } => {
                cpus.extend(l.ev.aux_values().map(|c| c as u32));
                *on_cpu.entry((l.pid, tid)).or_default() += (0..l.ev.len()).map(|i| l.ev.dur(i)).sum::<Ns>();
            }
            LaneKind::Samples { .. } => {
                if l.ev.has_flags() {
                    cpus.extend((0..l.ev.len()).map(|i| SampleFlags::unpack(l.ev.flags(i)).cpu));
                }
                modules.extend(l.ev.aux_values().map(|m| m as u32));
            }
            _ => {}
        }
        // Keep the scratch lists short: most rows repeat a few CPUs and modules.
        for v in [&mut cpus, &mut modules] {
            v.sort_unstable();
            v.dedup();
        }
    }
    #[allow(clippy::wildcard_enum_match_arm, reason = "a filter: sampled threads are those with sample lanes")]
    let sampled_threads = lanes
        .iter()
        .filter_map(|l| match l.kind {
            LaneKind::Samples { tid } => Some(sample_rate(l, tid, on_cpu.get(&(l.pid, tid)).copied())),
            _ => None,
        })
        .collect();
    let python_table = schema.tables().any(|t| t.to_ascii_uppercase().starts_with("PYTHON"));
    HostData {
        cpus,
        cpu_cores: cpu_cores(conn, schema),
        samples: rows(SAMPLES),
        switches: rows(SCHED),
        osrt_calls: rows("OSRT_API"),
        sampled_threads,
        tables: HostTables { osrt: schema.has("OSRT_API"), sched: schema.has(SCHED), samples: schema.has(SAMPLES) },
        python_samples: 0,
        has_python: python_table || modules.iter().any(|&m| is_python_module(strings.get(m))),
    }
}

/// True for a module name of Python source (`train.py`, `<frozen importlib._bootstrap>`).
pub(super) fn is_python_module(m: &str) -> bool {
    std::path::Path::new(m).extension().is_some_and(|e| e.eq_ignore_ascii_case("py")) || m.starts_with("<frozen ")
}

fn sample_rate(l: &Lane, tid: u32, on_cpu: Option<Ns>) -> SampleRate {
    let n = l.ev.len();
    let span = match (l.ev.start.first(), l.ev.start.last()) {
        (Some(a), Some(b)) => b - a,
        _ => 0,
    };
    let ns = on_cpu.filter(|&t| t > 0).unwrap_or(span);
    let seconds = ns as f64 / 1e9;
    let hz = if seconds > 0.0 { n as f64 / seconds } else { 0.0 };
    SampleRate { pid: l.pid, tid, samples: n, seconds, hz }
}

// Logical CPUs of the machine from `TARGET_INFO_SYSTEM_ENV` (value stored as text or integer).
fn cpu_cores(conn: &Connection, schema: &Schema) -> Option<u32> {
    const T: &str = "TARGET_INFO_SYSTEM_ENV";
    if !schema.has_col(T, "name") || !schema.has_col(T, "value") {
        return None;
    }
    let sql = format!("SELECT value FROM {T} WHERE name = 'CpuCores' LIMIT 1");
    let v = conn
        .query_row(&sql, [], |r| {
            let v = r.get_ref(0)?;
            Ok(int(v).or_else(|| text(v).and_then(|s| s.trim().parse().ok())))
        })
        .ok()
        .flatten()?;
    u32::try_from(v).ok().filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sw(v: &[(Ns, u32, bool)]) -> Vec<(Ns, u32)> {
        v.iter().map(|&(t, c, i)| (t, if i { c | IN_BIT } else { c })).collect()
    }

    #[test]
    fn pairs_in_and_out() {
        let s = sw(&[(10, 1, true), (20, 1, false), (30, 2, true), (45, 2, false)]);
        assert_eq!(on_cpu_intervals(&s, 0, 100), vec![(10, 20, 1), (30, 45, 2)]);
    }

    #[test]
    fn clips_open_ends_to_the_capture() {
        let s = sw(&[(10, 3, false), (30, 2, true)]);
        assert_eq!(on_cpu_intervals(&s, 5, 100), vec![(5, 10, 3), (30, 100, 2)]);
    }

    #[test]
    fn lost_switches() {
        // In, in (lost out): the first interval ends at the second in; out, out: dropped.
        let s = sw(&[(10, 1, true), (20, 2, true), (30, 2, false), (40, 2, false)]);
        assert_eq!(on_cpu_intervals(&s, 0, 100), vec![(10, 20, 1), (20, 30, 2)]);
    }

    #[test]
    fn python_modules() {
        assert!(is_python_module("/usr/lib/python3.12/threading.py"));
        assert!(!is_python_module("/usr/lib/libpython3.12.so.1.0"));
    }
}
