//! `lanescope diff`: what changed between two runs of the same program.
//!
//! [`diff`] is pure: it takes two [`Analysis`] values and returns a [`Diff`] with the
//! overall metrics and the per-phase metrics of each run (named as in `report --format
//! json`), their absolute and relative change, the findings that went away, stayed and
//! appeared, and a one-line verdict ([`verdict`]). Metrics are kept as JSON values so
//! that the JSON output, the `--fail-if` paths ([`fail_if`]) and the CSV rows are the
//! same names by construction.
//!
//! The metrics, overall and per phase, are docs/json.md's tables (`lanescope diff`), checked
//! against the output by `tests/it/contract.rs`.

pub(crate) mod fail_if;
pub(crate) mod html;
mod verdict;
pub(crate) mod write;

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::analysis::{Analysis, Finding, Gap, Phase};
use crate::model::{MemKind, Ns, Trace};
use crate::report::Format;
use crate::report::fields::{self, Num, PhaseFields};
use crate::report::json::{self, CauseSum, Overlap, TransferSums};
use crate::text::percent;

/// Write `d` in `format`. The HTML page draws both runs' timelines when `runs` holds
/// their traces and analyses (BEFORE, AFTER), and has no pictures without them.
pub(crate) fn write_as(
    w: &mut dyn Write,
    d: &Diff,
    format: Format,
    runs: Option<[(&Trace, &Analysis); 2]>,
) -> io::Result<()> {
    match format {
        Format::Text => write::text(w, d, false),
        Format::Md => write::text(w, d, true),
        Format::Csv => write::csv(w, d),
        Format::Json => write::json(w, d),
        Format::Html => html::write(w, d, runs),
    }
}

/// One side of a diff: the export's path and its analysis.
#[derive(Debug, Clone, Copy)]
pub struct Run<'a> {
    /// Path of the export, as given.
    pub path: &'a str,
    /// Its analysis.
    pub analysis: &'a Analysis,
}

/// The whole comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Diff {
    /// The first run.
    pub before: RunInfo,
    /// The second run.
    pub after: RunInfo,
    /// Overall metrics of both runs and their change.
    pub overall: Compared,
    /// Phases matched by name: both runs first (in AFTER's order), then removed, then added;
    /// at most [`PHASES_LISTED`] (the longest) unless all are asked for.
    pub phases: Vec<PhaseDiff>,
    /// The phases not listed, summed; absent when every phase is listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub other_phases: Option<OtherPhases>,
    /// Findings gone, stayed and new.
    pub findings: FindingDiffs,
    /// One line: the biggest changes.
    pub verdict: String,
    /// The fix that made AFTER from BEFORE (told by what changed), BEFORE's prediction for
    /// it and the measured change; null when no priced fix was told.
    pub whatif: Option<WhatIfCheck>,
}

/// BEFORE's what-if for the fix applied, against the change measured in AFTER.
#[derive(Debug, Clone, Serialize)]
pub struct WhatIfCheck {
    /// `pin_memory`, `prefetch`, `more_workers`, `drop_sync`, `cuda_graphs`.
    pub fix: &'static str,
    /// BEFORE's predicted saving per steady step.
    pub predicted_saving_per_step_ns: Ns,
    /// The steady step of BEFORE minus that of AFTER.
    pub measured_saving_per_step_ns: Ns,
    /// The limit BEFORE expected the step to meet.
    pub limited_by: &'static str,
}

fn whatif_check(b: &Analysis, a: &Analysis) -> Option<WhatIfCheck> {
    let w = crate::analysis::whatif::applied(b, a)?;
    let step = |x: &Analysis| x.step_model.as_ref().map(|m| m.step_ns);
    Some(WhatIfCheck {
        fix: w.fix.id(),
        predicted_saving_per_step_ns: w.saving_per_step_ns,
        measured_saving_per_step_ns: step(b)? - step(a)?,
        limited_by: w.limited_by,
    })
}

/// What identifies a run.
#[derive(Debug, Clone, Serialize)]
pub struct RunInfo {
    /// Path of the export.
    pub path: String,
    /// The step phase, or null.
    pub step_phase: Option<String>,
    /// First instant of the steady window.
    pub steady_start_ns: Ns,
    /// First instant after it.
    pub steady_end_ns: Ns,
    /// Gap threshold used.
    pub min_gap_ns: Ns,
}

/// Metrics of both runs (null when absent from one) and `delta`: per numeric leaf,
/// `{abs, pct}` (AFTER - BEFORE, and that over BEFORE in percent, null when BEFORE is 0).
#[derive(Debug, Clone, Serialize)]
pub struct Compared {
    /// BEFORE's metrics.
    pub before: Value,
    /// AFTER's metrics.
    pub after: Value,
    /// The change.
    pub delta: Value,
}

impl Compared {
    fn new(before: Value, after: Value) -> Self {
        let delta = delta(&before, &after);
        Self { before, after, delta }
    }

    /// The numbers at `path` (dot-separated) in BEFORE and AFTER.
    pub fn pair(&self, path: &str) -> (Option<f64>, Option<f64>) {
        (number(&self.before, path), number(&self.after, path))
    }
}

/// Whether a phase is in both runs or only one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// In both runs.
    Both,
    /// Only in BEFORE.
    Removed,
    /// Only in AFTER.
    Added,
}

/// One phase in both runs.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseDiff {
    /// Grouped (or exact) name.
    pub name: String,
    /// Both, removed or added.
    pub status: Status,
    /// Its metrics.
    #[serde(flatten)]
    pub values: Compared,
}

/// Phases a diff lists when not asked for all (`--all-phases`): the rest are summed.
pub(crate) const PHASES_LISTED: usize = 50;

/// The phases a diff does not list, summed over each run.
#[derive(Debug, Clone, Serialize)]
pub struct OtherPhases {
    /// How many phase names are not listed.
    pub phases: usize,
    /// Their sums in both runs and the change.
    #[serde(flatten)]
    pub values: Compared,
}

/// Sums of the phases not listed, in one run.
#[derive(Debug, Default, Serialize)]
struct PhaseSums {
    phases: usize,
    count: u64,
    wall_ns: Ns,
    gpu_busy_ns: Ns,
    kernel_busy_ns: Ns,
    copy_busy_ns: Ns,
    idle_ns: Ns,
    exposed_copy_ns: Ns,
    h2d_bytes: u64,
    d2h_bytes: u64,
}

impl PhaseSums {
    fn add(&mut self, p: &Phase) {
        self.phases += 1;
        self.count += p.count;
        self.wall_ns = self.wall_ns.saturating_add(p.wall.sum_ns);
        self.gpu_busy_ns = self.gpu_busy_ns.saturating_add(p.gpu_busy_ns);
        self.kernel_busy_ns = self.kernel_busy_ns.saturating_add(p.kernel_busy_ns);
        self.copy_busy_ns = self.copy_busy_ns.saturating_add(p.copy_busy_ns);
        self.idle_ns = self.idle_ns.saturating_add(p.idle_ns);
        self.exposed_copy_ns = self.exposed_copy_ns.saturating_add(p.exposed_copy_ns);
        self.h2d_bytes = self.h2d_bytes.saturating_add(p.h2d_bytes);
        self.d2h_bytes = self.d2h_bytes.saturating_add(p.d2h_bytes);
    }
}

/// Findings of the two runs, matched by rule (and direction, for per-direction rules).
#[derive(Debug, Clone, Default, Serialize)]
pub struct FindingDiffs {
    /// In BEFORE only.
    pub gone: Vec<FindingRef>,
    /// In both.
    pub stayed: Vec<Stayed>,
    /// In AFTER only.
    pub new: Vec<FindingRef>,
}

/// A finding of one run.
#[derive(Debug, Clone, Serialize)]
pub struct FindingRef {
    /// Rule id, with the direction for per-direction rules (`pageable_bandwidth H2D`).
    pub rule: String,
    /// `info`, `warning` or `critical`.
    pub severity: &'static str,
    /// Its message.
    pub message: String,
}

/// A finding in both runs.
#[derive(Debug, Clone, Serialize)]
pub struct Stayed {
    /// Rule id, as in [`FindingRef`].
    pub rule: String,
    /// Severity in BEFORE.
    pub before_severity: &'static str,
    /// Severity in AFTER.
    pub after_severity: &'static str,
    /// AFTER's message.
    pub message: String,
}

/// Compare two runs, listing every phase.
pub fn diff(before: Run<'_>, after: Run<'_>) -> Diff {
    diff_listing(before, after, None, &|_| false)
}

/// Compare two runs, listing at most `max` phases (the longest, and those `keep` names);
/// the others are summed in [`Diff::other_phases`].
pub(crate) fn diff_listing(before: Run<'_>, after: Run<'_>, max: Option<usize>, keep: &dyn Fn(&str) -> bool) -> Diff {
    let (b, a) = (before.analysis, after.analysis);
    let overall = Compared::new(to_value(&overall(b)), to_value(&overall(a)));
    let (phases, other_phases) = phases(&Side::new(b), &Side::new(a), max, keep);
    let mut d = Diff {
        before: info(before),
        after: info(after),
        overall,
        phases,
        other_phases,
        findings: findings(&b.findings, &a.findings),
        verdict: String::new(),
        whatif: whatif_check(b, a),
    };
    d.verdict = verdict::verdict(&d);
    d
}

fn info(r: Run<'_>) -> RunInfo {
    let a = r.analysis;
    RunInfo {
        path: r.path.to_string(),
        step_phase: a.step_phase.clone(),
        steady_start_ns: a.windows.steady_start,
        steady_end_ns: a.windows.steady_end,
        min_gap_ns: a.options.min_gap_ns,
    }
}

fn to_value(v: &impl Serialize) -> Value {
    // Plain structs of numbers, strings and maps with string keys: this cannot fail.
    serde_json::to_value(v).unwrap_or(Value::Null)
}

/// Overall metrics of one run (docs/json.md): the report's overlap and transfer sums, and the
/// diff's own over the steady window, the GPUs and the gaps.
#[derive(Debug, Serialize)]
struct Overall {
    wall_ns: Ns,
    steps: u64,
    step_wall_mean_ns: Option<Ns>,
    steady_step_mean_ns: Option<Ns>,
    gpu_busy_ns: Ns,
    gpu_busy_pct: Option<f64>,
    kernel_ns: Ns,
    idle_ns: Ns,
    gaps: usize,
    steady: Steady,
    steady_span_ns: Ns,
    idle_pct: Option<f64>,
    pageable_copies: u64,
    #[serde(flatten)]
    overlap: Overlap,
    exposed_copy_ns: Ns,
    copy_overlap: Option<f64>,
    transfers: BTreeMap<String, TransferSums>,
}

/// Gap time clipped to the steady window (named `idle_ns` here, `total_ns` in the report's
/// `gaps.steady`).
#[derive(Debug, Serialize)]
struct Steady {
    count: usize,
    idle_ns: Ns,
    by_cause: BTreeMap<&'static str, CauseSum>,
}

/// Per-phase metrics: the report's `phases[]` fields, plus `gpu_busy_pct` and `steady`.
#[derive(Debug, Serialize)]
struct PhaseMetrics<'a> {
    #[serde(flatten)]
    fields: PhaseFields<'a>,
    copy_verdict: &'static str,
    gpu_busy_pct: Num,
    steady: Steady,
}

fn overall(a: &Analysis) -> Overall {
    let w = a.windows;
    let step = a.step_phase.as_ref().and_then(|s| a.phases.iter().find(|p| &p.name == s));
    let steps = step.map_or(0, |p| p.count);
    let wall_ns = w.steady_end - w.steady_start;
    let span: Ns = a.devices.iter().filter_map(crate::analysis::DeviceActivity::extent).map(|(lo, hi)| hi - lo).sum();
    let steady_span_ns = a.steady.span_ns;
    let busy: Ns = a.devices.iter().map(|d| d.busy.total()).sum();
    let steady =
        Steady { count: a.steady.gaps(), idle_ns: a.steady.idle_ns(), by_cause: json::steady_by_cause(&a.steady) };
    let ov = a.overlap;
    Overall {
        wall_ns,
        steps,
        step_wall_mean_ns: step.map(|p| p.wall.mean_ns),
        steady_step_mean_ns: (steps > 1).then(|| wall_ns / (steps as Ns - 1)),
        gpu_busy_ns: busy,
        gpu_busy_pct: percent(busy, span),
        kernel_ns: a.devices.iter().map(|d| d.kernels.total()).sum(),
        idle_ns: a.gaps.iter().map(Gap::dur).sum(),
        gaps: a.gaps.len(),
        idle_pct: percent(steady.idle_ns, steady_span_ns),
        steady,
        steady_span_ns,
        pageable_copies: a.transfers.iter().filter(|t| t.memory == MemKind::Pageable).map(|t| t.count).sum(),
        overlap: Overlap::of(ov),
        exposed_copy_ns: ov.copy_ns - ov.overlapped_ns,
        copy_overlap: (ov.copy_ns > 0).then(|| ov.overlapped_ns as f64 / ov.copy_ns as f64),
        transfers: a.transfers.iter().map(|t| (transfer_key(t), TransferSums::of(t))).collect(),
    }
}

/// `H2D/pinned`: the key of a transfer row in `transfers`.
pub(crate) fn transfer_key(t: &crate::analysis::Transfer) -> String {
    format!("{}/{}", t.direction.label(), t.memory.label())
}

// `gaps` clipped to the steady window, by cause (every cause present).
fn steady<'g>(a: &Analysis, gaps: impl Iterator<Item = &'g Gap>) -> Steady {
    let part = |g: &Gap| a.windows.steady_part(g.start, g.end);
    let by_cause = json::by_cause_timed(gaps, part);
    Steady {
        count: by_cause.values().map(|c| c.count).sum(),
        idle_ns: by_cause.values().map(|c| c.total_ns).sum(),
        by_cause,
    }
}

fn phase_metrics<'a>(a: &Analysis, p: &'a Phase, gaps: &[&Gap]) -> PhaseMetrics<'a> {
    PhaseMetrics {
        fields: PhaseFields(p),
        copy_verdict: p.copy_verdict.label(),
        gpu_busy_pct: fields::BUSY_PCT.of(p),
        steady: steady(a, gaps.iter().copied()),
    }
}

/// One run's phases by name and its gaps by phase, each found once (a trace can hold
/// 100,000 distinct range names: a scan per phase would be quadratic).
struct Side<'a> {
    a: &'a Analysis,
    phases: HashMap<&'a str, &'a Phase>,
    gaps: HashMap<&'a str, Vec<&'a Gap>>,
}

impl<'a> Side<'a> {
    fn new(a: &'a Analysis) -> Self {
        let mut phases = HashMap::with_capacity(a.phases.len());
        for p in &a.phases {
            phases.entry(p.name.as_str()).or_insert(p);
        }
        let mut gaps: HashMap<&str, Vec<&Gap>> = HashMap::new();
        for g in &a.gaps {
            if let Some(p) = g.phase.as_deref() {
                gaps.entry(p).or_default().push(g);
            }
        }
        Self { a, phases, gaps }
    }

    fn has(&self, name: &str) -> bool {
        self.phases.contains_key(name)
    }

    // The phase's metrics as JSON, null when the run lacks it.
    fn metrics(&self, name: &str) -> Value {
        self.phases.get(name).map_or(Value::Null, |p| {
            to_value(&phase_metrics(self.a, p, self.gaps.get(name).map_or(&[][..], Vec::as_slice)))
        })
    }

    fn wall(&self, name: &str) -> Ns {
        self.phases.get(name).map_or(0, |p| p.wall.sum_ns)
    }
}

// Phases in both runs (AFTER's order: largest wall time first), then removed, then added;
// past `max`, only the longest (by the larger wall time of the two runs) and those `keep`
// names are listed, and the rest summed.
fn phases(
    b: &Side<'_>,
    a: &Side<'_>,
    max: Option<usize>,
    keep: &dyn Fn(&str) -> bool,
) -> (Vec<PhaseDiff>, Option<OtherPhases>) {
    let both = a.a.phases.iter().filter(|p| b.has(&p.name)).map(|p| (p.name.as_str(), Status::Both));
    let removed = b.a.phases.iter().filter(|p| !a.has(&p.name)).map(|p| (p.name.as_str(), Status::Removed));
    let added = a.a.phases.iter().filter(|p| !b.has(&p.name)).map(|p| (p.name.as_str(), Status::Added));
    let all: Vec<(&str, Status)> = both.chain(removed).chain(added).collect();
    let listed = listed(&all, max, |n| b.wall(n).max(a.wall(n)), keep);
    let (mut out, mut sums) = (Vec::new(), (PhaseSums::default(), PhaseSums::default()));
    for (&(name, status), shown) in all.iter().zip(listed) {
        if shown {
            out.push(PhaseDiff {
                name: name.to_string(),
                status,
                values: Compared::new(b.metrics(name), a.metrics(name)),
            });
            continue;
        }
        if let Some(p) = b.phases.get(name) {
            sums.0.add(p);
        }
        if let Some(p) = a.phases.get(name) {
            sums.1.add(p);
        }
    }
    let others = all.len() - out.len();
    let other = (others > 0)
        .then(|| OtherPhases { phases: others, values: Compared::new(to_value(&sums.0), to_value(&sums.1)) });
    (out, other)
}

// Which of `all` are listed: all within `max`; else the `max` with the most wall time
// (earlier first on ties), and every one `keep` names.
fn listed(
    all: &[(&str, Status)],
    max: Option<usize>,
    wall: impl Fn(&str) -> Ns,
    keep: &dyn Fn(&str) -> bool,
) -> Vec<bool> {
    let Some(max) = max.filter(|&m| all.len() > m) else { return vec![true; all.len()] };
    let mut by_wall: Vec<(Ns, usize)> = all.iter().enumerate().map(|(i, (n, _))| (wall(n), i)).collect();
    by_wall.sort_unstable_by_key(|&(w, i)| (std::cmp::Reverse(w), i));
    let mut shown = vec![false; all.len()];
    for &(_, i) in by_wall.iter().take(max) {
        shown[i] = true;
    }
    for (i, (n, _)) in all.iter().enumerate() {
        shown[i] |= keep(n);
    }
    shown
}

// A finding's identity across runs: its rule, and its direction when the rule has one.
fn finding_key(f: &Finding) -> String {
    match f.evidence.iter().find(|(k, _)| k == "direction") {
        Some((_, d)) => format!("{} {d}", f.rule),
        None => f.rule.to_string(),
    }
}

fn findings(before: &[Finding], after: &[Finding]) -> FindingDiffs {
    let key_in = |fs: &[Finding], k: &str| fs.iter().find(|f| finding_key(f) == k).map(|f| f.severity.label());
    let one =
        |f: &Finding| FindingRef { rule: finding_key(f), severity: f.severity.label(), message: f.message.clone() };
    let mut d = FindingDiffs::default();
    for f in before.iter().filter(|f| key_in(after, &finding_key(f)).is_none()) {
        d.gone.push(one(f));
    }
    for f in after {
        match key_in(before, &finding_key(f)) {
            Some(was) => d.stayed.push(Stayed {
                rule: finding_key(f),
                before_severity: was,
                after_severity: f.severity.label(),
                message: f.message.clone(),
            }),
            None => d.new.push(one(f)),
        }
    }
    d
}

/// `{abs, pct}` at every numeric leaf of `before` or `after` (a leaf missing from one
/// side counts as null); null where neither side has a number.
pub(crate) fn delta(before: &Value, after: &Value) -> Value {
    use Value::{Null, Number, Object};
    match (before, after) {
        (Object(_), Object(_) | Null) | (Null, Object(_)) => {
            let mut keys: Vec<&String> = before.as_object().into_iter().flat_map(Map::keys).collect();
            keys.extend(after.as_object().into_iter().flat_map(Map::keys).filter(|k| before.get(k.as_str()).is_none()));
            let m: Map<String, Value> = keys
                .into_iter()
                .map(|k| (k.clone(), delta(before.get(k).unwrap_or(&Null), after.get(k).unwrap_or(&Null))))
                .collect();
            Object(m)
        }
        (Number(_), _) | (_, Number(_)) => {
            let abs = match (before.as_i64(), after.as_i64(), before.as_f64(), after.as_f64()) {
                (Some(b), Some(a), ..) => Value::from(a - b),
                (_, _, Some(b), Some(a)) => Value::from(a - b),
                _ => Null,
            };
            let pct = match (before.as_f64(), after.as_f64()) {
                (Some(b), Some(a)) if b != 0.0 => Value::from(100.0 * (a - b) / b.abs()),
                _ => Null,
            };
            serde_json::json!({ "abs": abs, "pct": pct })
        }
        _ => Null,
    }
}

/// The value at a dot-separated `path` (`steady.by_cause.host-wait.total_ns`).
pub(crate) fn lookup<'v>(v: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(v, |v, k| v.get(k))
}

/// The number at `path`, None when absent or null.
pub(crate) fn number(v: &Value, path: &str) -> Option<f64> {
    lookup(v, path).and_then(Value::as_f64)
}

/// Every numeric (or null) leaf path of `before` and `after`, in key order, each once.
pub(crate) fn leaf_paths(before: &Value, after: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect_paths(&delta(before, after), "", &mut out);
    out
}

// Walk a delta tree: its leaves are `{abs, pct}` objects (or null).
fn collect_paths(d: &Value, prefix: &str, out: &mut Vec<String>) {
    let Some(m) = d.as_object() else {
        out.push(prefix.to_string());
        return;
    };
    if m.contains_key("abs") && m.contains_key("pct") && m.len() == 2 {
        out.push(prefix.to_string());
        return;
    }
    for (k, v) in m {
        let p = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
        collect_paths(v, &p, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn delta_of_numbers_nulls_and_missing_keys() {
        let b = json!({"a": 10, "b": {"c": 2.0}, "d": null, "gone": 4});
        let a = json!({"a": 15, "b": {"c": 1.0}, "d": 3, "new": 1});
        let d = delta(&b, &a);
        assert_eq!(d["a"], json!({"abs": 5, "pct": 50.0}));
        assert_eq!(d["b"]["c"], json!({"abs": -1.0, "pct": -50.0}));
        assert_eq!(d["d"], json!({"abs": null, "pct": null}));
        assert_eq!(d["gone"], json!({"abs": null, "pct": null}));
        assert_eq!(d["new"], json!({"abs": null, "pct": null}));
        assert_eq!(delta(&json!({"z": 0}), &json!({"z": 3}))["z"], json!({"abs": 3, "pct": null}));
        assert_eq!(leaf_paths(&b, &a), ["a", "b.c", "d", "gone", "new"]);
        assert_eq!(number(&a, "b.c"), Some(1.0));
        assert_eq!(number(&a, "d"), Some(3.0));
        assert_eq!(number(&b, "d"), None);
    }
}
