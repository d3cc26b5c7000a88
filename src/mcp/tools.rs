//! The tools of `lanescope mcp`: their JSON schemas, and each call answered from the
//! report's JSON contract (`report::json::build`), the diff's, or the lanes themselves.

use std::collections::HashMap;
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

/// A trace opened and analyzed once, with the file state it was read at.
struct Loaded {
    trace: Trace,
    analysis: Analysis,
    state: Option<(u64, SystemTime)>,
}

/// The server's state: traces opened so far, by path.
#[derive(Default)]
pub(super) struct Server {
    cache: HashMap<PathBuf, Rc<Loaded>>,
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
            (INVALID_PARAMS, format!("unknown tool `{name}` (tools: {})", names.join(", ")))
        })?;
        let arguments = params.get("arguments").cloned().unwrap_or_else(|| json!({}));
        // A bug in the analysis of some odd trace must not end the session.
        let outcome = catch_unwind(AssertUnwindSafe(|| (tool.run)(self, &arguments)));
        Ok(match outcome {
            Ok(Ok(v)) => {
                json!({"content": [{"type": "text", "text": v.to_string()}], "structuredContent": v, "isError": false})
            }
            Ok(Err(e)) => failure(&e),
            Err(_) => failure(&format!("lanescope failed inside `{name}` (a bug: the message is on its stderr)")),
        })
    }

    // The trace at `path`, opened once; opened again when the file changed.
    fn open(&mut self, path: &Path) -> Result<Rc<Loaded>, String> {
        let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let state = file_state(&key);
        if let Some(l) = self.cache.get(&key).filter(|l| l.state == state) {
            return Ok(Rc::clone(l));
        }
        let trace = crate::reader::load_inputs(&[path.to_path_buf()]).map_err(|e| format!("{e:#}"))?;
        let analysis = crate::analysis::analyze(&trace, &Options::default());
        let l = Rc::new(Loaded { trace, analysis, state });
        self.cache.insert(key, Rc::clone(&l));
        Ok(l)
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
            json!({"name": t.strings.get(ln.ev.name[k]), "start_ns": start, "end_ns": end,
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
    let d = crate::diff::diff(run(&before), run(&after));
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

/// A lane's name: `GPU 0 · kernels s7`, `python3 1234 · CUDA API`.
fn lane_name(t: &Trace, ln: &Lane) -> String {
    if let Some(d) = ln.kind.shown_with_gpu() {
        return format!("GPU {d} · {}", ln.title());
    }
    let tid = ln.kind.tid().unwrap_or(0);
    let thread = t.threads.iter().find(|th| th.tid == tid && th.pid == ln.pid).map(|th| th.name.as_str());
    format!("{} {tid} · {}", thread.filter(|n| !n.is_empty()).unwrap_or("thread"), ln.title())
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
        [] => Err(format!("`lane` `{want}` names no lane; call `events` without `lane` to list them")),
        many => {
            let some: Vec<&str> = many.iter().take(8).map(|&i| names[i].as_str()).collect();
            Err(format!(
                "`lane` `{want}` matches {} lanes ({}...): be more precise or pass an index",
                many.len(),
                some.join("; ")
            ))
        }
    }
}

fn check_cause(c: &str) -> Result<&'static str, String> {
    Cause::ALL.iter().map(|c| c.label()).find(|l| *l == c).ok_or_else(|| {
        let all: Vec<&str> = Cause::ALL.iter().map(|c| c.label()).collect();
        format!("`cause` `{c}` is none of {}", all.join(", "))
    })
}

fn check_phase<'a>(a: &Analysis, p: &'a str) -> Result<&'a str, String> {
    if a.phases.iter().any(|x| x.name == p) {
        return Ok(p);
    }
    let some: Vec<&str> = a.phases.iter().take(10).map(|x| x.name.as_str()).collect();
    Err(format!(
        "`phase` `{p}` is no phase of this trace (phases: {})",
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
