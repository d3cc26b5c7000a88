//! The tools of `lanescope mcp`: their JSON schemas, and each call answered from the
//! report's JSON contract (`report::json::build`), the diff's, or the lanes themselves.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::SystemTime;

use serde_json::{Value, json};

use super::args::Args;
use super::{INVALID_PARAMS, RpcError};
use crate::analysis::{Analysis, Cause, Options};
use crate::model::{Lane, Ns, Trace};

/// Gaps in one `gaps` answer when `limit` is not given, and at most.
const GAPS_PAGE: (usize, usize) = (20, 100);
/// Events in one `events` answer when `limit` is not given, and at most.
const EVENTS_PAGE: (usize, usize) = (50, 500);
/// Lanes listed by `events` without `lane`, at most.
const LANES_MAX: usize = 500;
/// Bytes of one result at most: longer lists are cut (and `more` set) to fit.
pub(super) const REPLY_BYTES: usize = 256 << 10;
/// Characters of a name (an event's, a lane's) in a result; longer ones end in `…`.
const NAME_CHARS: usize = 200;
/// Characters of any other string in a result (messages, evidence).
const TEXT_CHARS: usize = 1000;
/// Traces kept open at most; the least recently used goes first.
const CACHE_MAX: usize = 4;

/// A trace opened and analyzed once, with the file state it was read at.
struct Loaded {
    trace: Trace,
    analysis: Analysis,
    state: Option<(u64, SystemTime)>,
}

/// The server's state: the traces opened last, by path, least recently used first.
#[derive(Default)]
pub(super) struct Server {
    cache: Vec<(PathBuf, Rc<Loaded>)>,
}

/// One tool: name, description, argument schema and handler.
struct Tool {
    name: &'static str,
    description: &'static str,
    schema: fn() -> Value,
    run: fn(&mut Server, &Value) -> Result<Value, String>,
}

const TOOLS: [Tool; 6] = [
    Tool {
        name: "summary",
        description: "The headline of a trace: GPU busy and idle per device, steady-state idle by cause, \
                      and the findings (most important first), each with its evidence and fix.",
        schema: || schema(&[("trace", TRACE)], &["trace"]),
        run: summary,
    },
    Tool {
        name: "gaps",
        description: "GPU idle gaps, longest first, filtered by window, cause, phase and GPU; one page of \
                      `limit` from `offset`. Each has an `id` for the `gap` tool.",
        schema: || {
            schema(
                &[
                    ("trace", TRACE),
                    ("window", WINDOW),
                    ("cause", CAUSE),
                    ("phase", PHASE),
                    ("gpu", GPU),
                    ("limit", LIMIT),
                    ("offset", OFFSET),
                ],
                &["trace"],
            )
        },
        run: gaps,
    },
    Tool {
        name: "gap",
        description: "One gap's full evidence and what the host did during it (threads, CPU time, samples).",
        schema: || schema(&[("trace", TRACE), ("id", ID)], &["trace", "id"]),
        run: gap,
    },
    Tool {
        name: "phases",
        description: "Per-phase statistics of the NVTX ranges (wall time, GPU busy, idle, copies), and the step phase.",
        schema: || schema(&[("trace", TRACE)], &["trace"]),
        run: phases,
    },
    Tool {
        name: "events",
        description: "What ran in a window on one lane (kernels, copies, CUDA API calls, NVTX ranges...), \
                      bounded by `limit`. Without `lane`: the lanes with events in the window.",
        schema: || schema(&[("trace", TRACE), ("window", WINDOW), ("lane", LANE), ("limit", LIMIT)], &["trace"]),
        run: events,
    },
    Tool {
        name: "diff",
        description: "Compare two runs: a one-line verdict, overall and per-phase metrics before and after \
                      with their change, findings gone, stayed and new.",
        schema: || {
            let path = json!({"type": "string", "description": "Path of a trace."});
            json!({"type": "object", "properties": {"before": path, "after": path},
                   "required": ["before", "after"], "additionalProperties": false})
        },
        run: diff,
    },
];

const TRACE: &str = r#"{"type": "string", "description": "Path of the trace: an nsys SQLite export, an .nsys-rep (needs nsys), or a PyTorch profiler JSON."}"#;
const WINDOW: &str = r#"{"type": "string", "pattern": "^[^+]+\\+.+$", "description": "START+WIDTH in seconds from the trace start, as the viewer shows time (e.g. 1.5+0.25; units allowed: 1500ms+250ms)."}"#;
const CAUSE: &str = r#"{"type": "string", "enum": ["sync-drain", "sync-wait", "pageable-copy", "host-wait", "host-busy", "worker-busy", "cpu-contention", "io-wait", "launch-bound", "queued", "profiler", "unknown"], "description": "Only gaps of this cause."}"#;
const PHASE: &str = r#"{"type": "string", "description": "Only gaps whose phase (innermost NVTX range, grouped name such as `step N`) is this."}"#;
const GPU: &str = r#"{"type": "integer", "minimum": 0, "description": "Only gaps of this GPU device id."}"#;
const LIMIT: &str = r#"{"type": "integer", "minimum": 1, "description": "Page size (bounded)."}"#;
const OFFSET: &str = r#"{"type": "integer", "minimum": 0, "description": "Skip this many matching gaps."}"#;
const ID: &str =
    r#"{"type": "integer", "minimum": 0, "description": "Gap id: its index in start order (the `id` of `gaps`)."}"#;
const LANE: &str = r#"{"type": ["integer", "string"], "description": "Lane index, or its name or a unique part of it (e.g. `GPU 0 · kernels s7`)."}"#;

// An object schema of `props` (name, JSON schema text).
fn schema(props: &[(&str, &str)], required: &[&str]) -> Value {
    let properties: serde_json::Map<String, Value> =
        props.iter().map(|(k, v)| ((*k).to_string(), serde_json::from_str(v).unwrap_or(Value::Null))).collect();
    json!({"type": "object", "properties": properties, "required": required, "additionalProperties": false})
}

/// The `tools/list` entries.
pub(super) fn list() -> Vec<Value> {
    TOOLS.iter().map(|t| json!({"name": t.name, "description": t.description, "inputSchema": (t.schema)()})).collect()
}

impl Server {
    /// Answer `tools/call`: a tool result, `isError` when the tool failed.
    pub(super) fn call(&mut self, params: &Value) -> Result<Value, RpcError> {
        let name =
            params.get("name").and_then(Value::as_str).ok_or((INVALID_PARAMS, "tools/call needs `name`".into()))?;
        let tool = TOOLS.iter().find(|t| t.name == name).ok_or_else(|| {
            let names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
            (INVALID_PARAMS, format!("unknown tool `{}` (tools: {})", super::shown(name), names.join(", ")))
        })?;
        let arguments = params.get("arguments").cloned().unwrap_or_else(|| json!({}));
        // A bug in the analysis of some odd trace must not end the session.
        let outcome = catch_unwind(AssertUnwindSafe(|| (tool.run)(self, &arguments)));
        Ok(match outcome {
            // One copy of the result, as text: every revision's clients read it (a
            // `structuredContent` copy would double every reply).
            Ok(Ok(v)) => json!({"content": [{"type": "text", "text": crate::text::json_line(&bound(v, REPLY_BYTES))}],
                                 "isError": false}),
            Ok(Err(e)) => failure(&e),
            Err(_) => failure(&format!("lanescope failed inside `{name}` (a bug: the message is on its stderr)")),
        })
    }

    // The trace at `path`, opened once; opened again when the file changed.
    fn open(&mut self, path: &Path) -> Result<Rc<Loaded>, String> {
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let state = file_state(&key);
        if let Some(i) = self.cache.iter().position(|(k, _)| *k == key) {
            let entry = self.cache.remove(i);
            if entry.1.state == state {
                self.cache.push(entry);
                return Ok(Rc::clone(&self.cache[self.cache.len() - 1].1));
            }
        }
        let (trace, analysis) =
            crate::report::load_analyzed(&[path.to_path_buf()], &Options::default(), crate::report::Lanes::Read)
                .map_err(|e| format!("{e:#}"))?;
        let l = Rc::new(Loaded { trace, analysis, state });
        if self.cache.len() >= CACHE_MAX {
            self.cache.remove(0);
        }
        self.cache.push((key, Rc::clone(&l)));
        Ok(l)
    }

    /// The paths of the traces held, least recently used first.
    #[cfg(test)]
    fn cached(&self) -> Vec<&Path> {
        self.cache.iter().map(|(k, _)| k.as_path()).collect()
    }
}

fn file_state(p: &Path) -> Option<(u64, SystemTime)> {
    let m = std::fs::metadata(p).ok()?;
    Some((m.len(), m.modified().ok()?))
}

fn failure(message: &str) -> Value {
    json!({"content": [{"type": "text", "text": message}], "isError": true})
}

// The report's JSON contract as a value.
fn report(l: &Loaded, all_gaps: bool) -> Value {
    serde_json::to_value(crate::report::json::build(&l.trace, &l.analysis, all_gaps)).unwrap_or(Value::Null)
}

fn summary(s: &mut Server, v: &Value) -> Result<Value, String> {
    let a = Args::new(v, &["trace"])?;
    let l = s.open(&a.path("trace")?)?;
    let mut r = report(&l, false);
    let headline = r["findings"][0]["message"].as_str().unwrap_or("no findings: the GPU is rarely idle");
    Ok(json!({
        "headline": headline,
        "trace": r["trace"].take(),
        "devices": r["devices"].take(),
        "gaps": {"count": r["gaps"]["count"], "total_ns": r["gaps"]["total_ns"], "min_gap_ns": r["gaps"]["min_gap_ns"],
                 "by_cause": r["gaps"]["by_cause"].take()},
        "steady": r["gaps"]["steady"].take(),
        "findings": r["findings"].take(),
    }))
}

fn gaps(s: &mut Server, v: &Value) -> Result<Value, String> {
    let a = Args::new(v, &["trace", "window", "cause", "phase", "gpu", "limit", "offset"])?;
    let (limit, offset) = (a.limit(GAPS_PAGE.0, GAPS_PAGE.1)?, a.integer("offset")?.unwrap_or(0) as usize);
    let l = s.open(&a.path("trace")?)?;
    let t0 = l.trace.meta.start_ns;
    let window = a.window()?.map(|(s, e)| (t0 + s, t0 + e));
    let cause = a.text("cause")?.map(check_cause).transpose()?;
    let phase = a.text("phase")?.map(|p| check_phase(&l.analysis, p)).transpose()?;
    let gpu = a.integer("gpu")?.map(|d| check_gpu(&l.analysis, d)).transpose()?;
    let mut all = report(&l, true)["gaps"]["all"].take();
    let mut found: Vec<Value> = all
        .as_array_mut()
        .map(std::mem::take)
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(id, g)| with_id(g, id, t0))
        .filter(|g| {
            window.is_none_or(|(s, e)| int(g, "start_ns") < e && int(g, "end_ns") > s)
                && cause.is_none_or(|c| g["cause"] == c)
                && phase.is_none_or(|p| g["phase"] == p)
                && gpu.is_none_or(|d| g["device"] == d)
        })
        .collect();
    found.sort_by_key(|g| (std::cmp::Reverse(int(g, "dur_ns")), int(g, "start_ns")));
    let total: i64 = found.iter().map(|g| int(g, "dur_ns")).sum();
    let matched = found.len();
    let page: Vec<Value> = found.into_iter().skip(offset).take(limit).map(without_host).collect();
    let more = matched > offset + page.len();
    Ok(
        json!({"matched": matched, "total_ns": total, "offset": offset, "returned": page.len(), "more": more, "gaps": page}),
    )
}

fn gap(s: &mut Server, v: &Value) -> Result<Value, String> {
    let a = Args::new(v, &["trace", "id"])?;
    let id = a.integer("id")?.ok_or("`id` is required: a gap's id from `gaps`")? as usize;
    let l = s.open(&a.path("trace")?)?;
    let mut all = report(&l, true)["gaps"]["all"].take();
    let n = all.as_array().map_or(0, Vec::len);
    match all.get_mut(id) {
        Some(g) => Ok(with_id(g.take(), id, l.trace.meta.start_ns)),
        None if n == 0 => Err(format!("`id` {id}: the trace has no gaps")),
        None => Err(format!("`id` {id}: the trace has {n} gaps, ids 0 to {}", n - 1)),
    }
}

fn phases(s: &mut Server, v: &Value) -> Result<Value, String> {
    let a = Args::new(v, &["trace"])?;
    let l = s.open(&a.path("trace")?)?;
    let mut r = report(&l, false);
    Ok(json!({
        "step_phase": r["trace"]["step_phase"].take(),
        "steady_start_ns": r["trace"]["steady_start_ns"].take(),
        "steady_end_ns": r["trace"]["steady_end_ns"].take(),
        "phases": r["phases"].take(),
    }))
}

fn events(s: &mut Server, v: &Value) -> Result<Value, String> {
    let a = Args::new(v, &["trace", "window", "lane", "limit"])?;
    let limit = a.limit(EVENTS_PAGE.0, EVENTS_PAGE.1)?;
    let l = s.open(&a.path("trace")?)?;
    let t = &l.trace;
    let t0 = t.meta.start_ns;
    let (ws, we) = a.window()?.map_or((t.meta.start_ns, t.meta.end_ns.max(t0 + 1)), |(s, e)| (t0 + s, t0 + e));
    let window = json!({"start_ns": ws, "end_ns": we});
    let Some(lane) = v.get("lane").filter(|x| !x.is_null()) else {
        return Ok(lanes_in(t, ws, we, &window));
    };
    let i = find_lane(t, lane)?;
    let ln = &t.lanes[i];
    let hits: Vec<usize> = in_window(ln, ws, we).collect();
    let page: Vec<Value> = hits
        .iter()
        .take(limit)
        .map(|&k| {
            let (start, end) = (ln.ev.start[k], ln.ev.end(k));
            json!({"name": crate::text::ellipsize(t.strings.get(ln.ev.name[k]), NAME_CHARS), "start_ns": start, "end_ns": end,
                   "dur_ns": end - start, "start_s": secs(start - t0)})
        })
        .collect();
    Ok(json!({"lane": i, "name": lane_name(t, ln), "window": window, "count": hits.len(),
              "returned": page.len(), "more": hits.len() > page.len(), "events": page}))
}

fn diff(s: &mut Server, v: &Value) -> Result<Value, String> {
    fn run(l: &Loaded) -> crate::diff::Run<'_> {
        crate::diff::Run { path: &l.trace.meta.path, analysis: &l.analysis }
    }
    let a = Args::new(v, &["before", "after"])?;
    let (before, after) = (s.open(&a.path("before")?)?, s.open(&a.path("after")?)?);
    let d = crate::diff::diff_listing(run(&before), run(&after), Some(crate::diff::PHASES_LISTED), &|_| false);
    serde_json::to_value(d).map_err(|e| e.to_string())
}

// Lanes with events in `[ws, we)`, in trace order (at most `LANES_MAX`).
fn lanes_in(t: &Trace, ws: Ns, we: Ns, window: &Value) -> Value {
    let all: Vec<Value> = t
        .lanes
        .iter()
        .enumerate()
        .map(|(i, ln)| (i, ln, in_window(ln, ws, we).count()))
        .filter(|&(_, _, n)| n > 0)
        .map(|(i, ln, n)| json!({"lane": i, "name": lane_name(t, ln), "pid": ln.pid, "events": n}))
        .collect();
    let more = all.len() > LANES_MAX;
    let lanes: Vec<Value> = all.into_iter().take(LANES_MAX).collect();
    json!({"window": window, "lanes": lanes, "more": more, "hint": "pass `lane` (index or name) for its events"})
}

// Indices of the lane's events that overlap `[ws, we)` (instants at `ws` included).
fn in_window(ln: &Lane, ws: Ns, we: Ns) -> impl Iterator<Item = usize> + '_ {
    let hi = ln.ev.start.partition_point(|&s| s < we);
    (0..hi).filter(move |&k| ln.ev.end(k) > ws || ln.ev.start[k] >= ws)
}

/// A lane's name: `GPU 0 · kernels s7` (`GPU 0 · kernels s7 (pid 4321)` where processes
/// share the stream), `python3 1234 · CUDA API` (a thread name cut to [`NAME_CHARS`]).
fn lane_name(t: &Trace, ln: &Lane) -> String {
    if let Some(d) = ln.kind.shown_with_gpu() {
        // Processes sharing a GPU each have their stream 7: the pid tells their lanes apart.
        let shared = t.lanes.iter().any(|o| o.kind == ln.kind && o.pid != ln.pid);
        let pid = if shared { format!(" (pid {})", ln.pid) } else { String::new() };
        return format!("GPU {d} · {}{pid}", ln.title());
    }
    let tid = ln.kind.tid().unwrap_or(0);
    let thread = t.threads.iter().find(|th| th.tid == tid && th.pid == ln.pid).map(|th| th.name.as_str());
    let thread = crate::text::ellipsize(thread.filter(|n| !n.is_empty()).unwrap_or("thread"), NAME_CHARS);
    format!("{thread} {tid} · {}", ln.title())
}

// The lane `arg` names: an index, an exact name, or a unique part of one.
fn find_lane(t: &Trace, arg: &Value) -> Result<usize, String> {
    if let Some(i) = arg.as_u64() {
        return (i < t.lanes.len() as u64).then_some(i as usize).ok_or_else(|| {
            format!("`lane` {i}: the trace has {} lanes, 0 to {}", t.lanes.len(), t.lanes.len().saturating_sub(1))
        });
    }
    let want = arg.as_str().ok_or("`lane` must be a lane index or a name")?;
    let names: Vec<String> = t.lanes.iter().map(|ln| lane_name(t, ln)).collect();
    if let Some(i) = names.iter().position(|n| n == want) {
        return Ok(i);
    }
    let low = want.to_lowercase();
    let hits: Vec<usize> = (0..names.len()).filter(|&i| names[i].to_lowercase().contains(&low)).collect();
    match hits.as_slice() {
        [one] => Ok(*one),
        [] => Err(format!("`lane` `{}` names no lane; call `events` without `lane` to list them", super::shown(want))),
        many => {
            let some: Vec<_> = many.iter().take(8).map(|&i| super::shown(&names[i])).collect();
            Err(format!(
                "`lane` `{}` matches {} lanes ({}...): be more precise or pass an index",
                super::shown(want),
                many.len(),
                some.join("; ")
            ))
        }
    }
}

fn check_cause(c: &str) -> Result<&'static str, String> {
    Cause::ALL.iter().map(|c| c.label()).find(|l| *l == c).ok_or_else(|| {
        let all: Vec<&str> = Cause::ALL.iter().map(|c| c.label()).collect();
        format!("`cause` `{}` is none of {}", super::shown(c), all.join(", "))
    })
}

fn check_phase<'a>(a: &Analysis, p: &'a str) -> Result<&'a str, String> {
    if a.phases.iter().any(|x| x.name == p) {
        return Ok(p);
    }
    let some: Vec<_> = a.phases.iter().take(10).map(|x| super::shown(&x.name)).collect();
    Err(format!(
        "`phase` `{}` is no phase of this trace (phases: {})",
        super::shown(p),
        if some.is_empty() { "none".into() } else { some.join(", ") }
    ))
}

fn check_gpu(a: &Analysis, d: u64) -> Result<u64, String> {
    if a.devices.iter().any(|x| u64::from(x.device) == d) {
        return Ok(d);
    }
    let all: Vec<String> = a.devices.iter().map(|x| x.device.to_string()).collect();
    Err(format!("`gpu` {d} is no GPU of this trace (devices: {})", all.join(", ")))
}

// A gap of `gaps.all` with its id and start in the viewer's seconds.
fn with_id(mut g: Value, id: usize, t0: Ns) -> Value {
    let start = int(&g, "start_ns");
    if let Some(o) = g.as_object_mut() {
        o.insert("id".into(), json!(id));
        o.insert("start_s".into(), json!(secs(start - t0)));
    }
    g
}

// A list entry: the host data is left to `gap`.
fn without_host(mut g: Value) -> Value {
    if let Some(o) = g.as_object_mut() {
        let had = o.remove("host").is_some();
        o.insert("has_host".into(), json!(had));
    }
    g
}

/// `v` made to fit in `budget` bytes of JSON: strings cut to [`TEXT_CHARS`], then the
/// longest list halved until it fits; a cut result gets `more: true` and `cut`, the
/// paths of the lists cut.
fn bound(mut v: Value, budget: usize) -> Value {
    cut_strings(&mut v);
    let mut cut: Vec<String> = Vec::new();
    while json_bytes(&v) > budget {
        let Some((path, len)) = largest_list(&v) else { break };
        if let Some(Value::Array(list)) = v.pointer_mut(&path) {
            list.truncate(len / 2);
        }
        if !cut.contains(&path) {
            cut.push(path);
        }
    }
    if let (false, Some(o)) = (cut.is_empty(), v.as_object_mut()) {
        o.insert("more".into(), json!(true));
        o.insert("cut".into(), json!(cut));
    }
    v
}

fn cut_strings(v: &mut Value) {
    match v {
        Value::String(s) if s.chars().nth(TEXT_CHARS).is_some() => {
            *s = crate::text::ellipsize(s, TEXT_CHARS).into_owned();
        }
        Value::Array(a) => a.iter_mut().for_each(cut_strings),
        Value::Object(o) => o.values_mut().for_each(cut_strings),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

fn json_bytes(v: &Value) -> usize {
    serde_json::to_vec(v).map_or(0, |b| b.len())
}

// The non-empty list of `v` with the most bytes, as a JSON pointer and its length.
fn largest_list(v: &Value) -> Option<(String, usize)> {
    let mut best = None;
    sizes(v, &mut String::new(), &mut best);
    best.map(|(_, path, len)| (path, len))
}

// The bytes of `v` as compact JSON (closely), keeping in `best` the largest list seen
// (bytes, pointer, length); `at` is the pointer of `v`.
fn sizes(v: &Value, at: &mut String, best: &mut Option<(usize, String, usize)>) -> usize {
    let mut child = |x: &Value, key: &str, at: &mut String| {
        let n = at.len();
        at.push('/');
        at.push_str(&key.replace('~', "~0").replace('/', "~1"));
        let bytes = sizes(x, at, best);
        at.truncate(n);
        bytes
    };
    let bytes = match v {
        Value::Array(a) => 2 + a.iter().enumerate().map(|(i, x)| 1 + child(x, &i.to_string(), at)).sum::<usize>(),
        Value::Object(o) => 2 + o.iter().map(|(k, x)| k.len() + 4 + child(x, k, at)).sum::<usize>(),
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => json_bytes(v),
    };
    if let Value::Array(a) = v
        && !a.is_empty()
        && best.as_ref().is_none_or(|b| bytes > b.0)
    {
        *best = Some((bytes, at.clone(), a.len()));
    }
    bytes
}

fn int(v: &Value, key: &str) -> i64 {
    v[key].as_i64().unwrap_or(0)
}

fn secs(ns: Ns) -> f64 {
    ns as f64 / 1e9
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cause_schema_lists_every_cause() {
        let v: Value = serde_json::from_str(CAUSE).unwrap();
        let mut listed: Vec<&str> = v["enum"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        let mut all: Vec<&str> = Cause::ALL.iter().map(|c| c.label()).collect();
        listed.sort_unstable();
        all.sort_unstable();
        assert_eq!(listed, all);
    }

    // A tiny export with `n` kernels named `name`.
    fn tiny(dir: &Path, file: &str, name: &str, n: i64) -> PathBuf {
        let p = dir.join(file);
        let c = rusqlite::Connection::open(&p).unwrap();
        c.execute_batch(
            "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
             CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, deviceId INT, streamId INT,
               correlationId INT, globalPid INT, shortName INT, demangledName INT);",
        )
        .unwrap();
        c.execute("INSERT INTO StringIds VALUES (1, ?1)", [name]).unwrap();
        for i in 0..n {
            c.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?1, ?2, 0, 7, ?3, 0, 1, 1)",
                [i * 100, i * 100 + 50, i],
            )
            .unwrap();
        }
        p
    }

    #[test]
    fn the_cache_keeps_the_traces_used_last() {
        let dir = tempfile::tempdir().unwrap();
        let paths: Vec<PathBuf> =
            (0..CACHE_MAX + 2).map(|i| tiny(dir.path(), &format!("t{i}.sqlite"), "k", 3)).collect();
        let mut s = Server::default();
        for p in &paths {
            s.open(p).unwrap();
            // The first is used again each time: it stays.
            s.open(&paths[0]).unwrap();
        }
        let held = s.cached();
        assert_eq!(held.len(), CACHE_MAX);
        let canon = |p: &PathBuf| std::fs::canonicalize(p).unwrap();
        assert_eq!(held[CACHE_MAX - 1], canon(&paths[0]), "used last");
        let want: Vec<PathBuf> = paths[paths.len() - (CACHE_MAX - 1)..].iter().map(canon).collect();
        assert_eq!(held[..CACHE_MAX - 1], want.iter().map(PathBuf::as_path).collect::<Vec<_>>()[..]);
    }

    #[test]
    fn results_fit_the_byte_budget_with_names_and_lists_cut() {
        let dir = tempfile::tempdir().unwrap();
        let name = "k".repeat(256 << 10);
        let p = tiny(dir.path(), "big.sqlite", &name, 600);
        let mut s = Server::default();
        let args = json!({"trace": p.display().to_string(), "lane": 0, "limit": 500});
        let reply = s.call(&json!({"name": "events", "arguments": args})).unwrap();
        let text = reply["content"][0]["text"].as_str().unwrap();
        assert!(text.len() <= REPLY_BYTES, "{} bytes", text.len());
        assert!(reply.get("structuredContent").is_none(), "one copy of the result");
        let v: Value = serde_json::from_str(text).unwrap();
        let events = v["events"].as_array().unwrap();
        assert_eq!(events.len(), 500, "names cut, no list needed cutting");
        let shown = events[0]["name"].as_str().unwrap();
        assert_eq!(shown.chars().count(), NAME_CHARS);
        assert!(shown.ends_with('…') && name.starts_with(shown.trim_end_matches('…')));
        // A list too large for the budget is cut, and says so.
        let big =
            json!({"a": 1, "list": (0..100_000).map(|i| json!({"i": i, "s": "x".repeat(50)})).collect::<Vec<_>>()});
        let b = bound(big, REPLY_BYTES);
        assert!(json_bytes(&b) <= REPLY_BYTES && b["list"].as_array().unwrap().len() > 100);
        assert_eq!((&b["more"], &b["cut"]), (&json!(true), &json!(["/list"])));
        assert_eq!(b["list"][3], json!({"i": 3, "s": "x".repeat(50)}), "what is kept is unchanged");
    }

    #[test]
    fn every_schema_is_an_object_schema() {
        for t in &TOOLS {
            let s = (t.schema)();
            assert_eq!(s["type"], "object", "{}", t.name);
            let props = s["properties"].as_object().unwrap();
            assert!(props.values().all(Value::is_object), "{}: a property schema did not parse", t.name);
        }
    }
}
