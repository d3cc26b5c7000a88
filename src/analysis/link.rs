//! Findings about how copies use the link (`link_bound`, `small_copies`), and the
//! what-if of each finding's fix.

use super::pcie::CopyVerdict;
use super::whatif::{StepModel, WhatIf};
use super::{Finding, Fix, Phase, Rule, Severity};
use std::fmt::Write as _;

use crate::model::Ns;
use crate::text::fmt_ns;

fn pct(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

fn ev(k: &str, v: &impl ToString) -> (String, String) {
    (k.to_string(), v.to_string())
}

// The phase's exposed H2D time per step as a share of the step.
fn share(p: &Phase, step_ns: Option<Ns>) -> f64 {
    let n = p.count.max(1) as f64;
    let step = step_ns.filter(|&s| s > 0).map_or(p.wall.mean_ns as f64, |s| s as f64);
    if step <= 0.0 { 0.0 } else { p.h2d_exposed_ns as f64 / n / step }
}

fn severity(share: f64) -> Severity {
    if share >= 0.30 {
        Severity::Critical
    } else if share >= 0.10 {
        Severity::Warning
    } else {
        Severity::Info
    }
}

/// `link_bound` and `small_copies` findings of the phases (the step phase left out: its
/// copies are its children's).
pub(crate) fn findings(phases: &[Phase], step_phase: Option<&str>, model: Option<&StepModel>) -> Vec<Finding> {
    let step_ns = model.map(|m| m.step_ns);
    let mut out = Vec::new();
    for p in phases.iter().filter(|p| Some(p.name.as_str()) != step_phase && p.h2d_exposed_ns > 0) {
        let s = share(p, step_ns);
        let per_step = p.h2d_exposed_ns / p.count.max(1) as Ns;
        let mut evidence =
            vec![ev("phase", &p.name), ev("h2d_exposed_ns", &p.h2d_exposed_ns), ev("exposed_share_of_step", &pct(s))];
        match p.copy_verdict {
            CopyVerdict::LinkBound => {
                let rx = p.pcie.and_then(|x| x.rx_pct_during_h2d);
                let how = rx.map_or_else(
                    || "at the link's rate".to_string(),
                    |r| {
                        evidence.push(ev("rx_pct_during_h2d", &format!("{r:.1}")));
                        format!("at {r:.0}% PCIe RX")
                    },
                );
                out.push(Finding {
                    rule: Rule::LinkBound,
                    severity: severity(s),
                    message: format!(
                        "Phase `{}`: its H2D copies ran {how} for {} per instance with no kernel running ({} of \
                         the step): the PCIe link limits the step",
                        crate::text::sanitize(&p.name),
                        fmt_ns(per_step),
                        pct(s)
                    ),
                    evidence,
                    fix: Some(Fix::Prefetch),
                    fix_note: String::new(),
                    whatif: None,
                    weight: p.h2d_exposed_ns,
                });
            }
            CopyVerdict::SmallCopies => out.push(Finding {
                rule: Rule::SmallCopies,
                severity: severity(s),
                message: format!(
                    "Phase `{}`: most of its H2D copy time is in copies under 1 MiB, {} per instance with no \
                     kernel running ({} of the step): latency-bound copies",
                    crate::text::sanitize(&p.name),
                    fmt_ns(per_step),
                    pct(s)
                ),
                evidence,
                fix: Some(Fix::Collate),
                fix_note: String::new(),
                whatif: None,
                weight: p.h2d_exposed_ns,
            }),
            CopyVerdict::None | CopyVerdict::PageableStaged | CopyVerdict::BelowLink => {}
        }
    }
    out
}

/// The what-if that prices finding `f`'s fix ([`Fix::priced_as`]), if one was priced.
pub(crate) fn whatif_of<'a>(f: &Finding, whatifs: &'a [WhatIf]) -> Option<&'a WhatIf> {
    let priced = f.fix.as_ref()?.priced_as()?;
    whatifs.iter().find(|w| w.fix == priced)
}

/// Add each finding's what-if to its evidence (`whatif_*` keys). A finding whose fix would
/// not shorten the step (another limit binds) drops a severity level, says which limit,
/// and shows no fix: no finding shows a fix beside a what-if that says it saves nothing
/// (the limit's own finding carries its fix). One whose fix saves under 5% of the step is
/// at most a warning: the headline is what a user acts on.
pub(crate) fn attach(findings: &mut [Finding], whatifs: &[WhatIf]) {
    for f in findings.iter_mut() {
        let Some(w) = whatif_of(f, whatifs).cloned() else { continue };
        if w.saving_per_step_ns == 0 && w.limited_by != "none" {
            f.severity = match f.severity {
                Severity::Critical => Severity::Warning,
                Severity::Warning | Severity::Info => Severity::Info,
            };
            let _ = write!(
                f.message,
                "; {} alone would not shorten the step: the {} sets its pace",
                w.fix.id(),
                w.limited_by
            );
            f.fix = None;
            f.fix_note.clear();
        }
        set_whatif(f, w);
    }
}

/// A step that blocks on the GPU cannot be captured in one CUDA graph: `launch_bound` then
/// names the blocking calls and proposes removing them first (issue 33, item 4), and no
/// what-if prices graphs ([`super::whatif::cuda_graphs`]).
pub(crate) fn graphs_need_no_syncs(findings: &mut [Finding], model: Option<&StepModel>) {
    let Some(m) = model.filter(|m| m.blocking_calls > 0) else { return };
    for f in findings.iter_mut().filter(|f| f.rule == Rule::LaunchBound && f.fix == Some(Fix::GraphTheStep)) {
        let _ = write!(
            f.message,
            "; the launching thread waits for the GPU {} times a step (syncs, blocking copies): a CUDA graph \
             cannot hold a step that syncs",
            m.blocking_calls
        );
        f.evidence.push(ev("blocking_calls_per_step", &m.blocking_calls));
        f.fix = Some(Fix::SyncsFirst);
    }
}

// `w` as the finding's what-if, in its evidence too; a fix that saves little of the step
// is never critical (nor the headline: rule::rank).
fn set_whatif(f: &mut Finding, w: WhatIf) {
    f.evidence.extend([
        ev("whatif_fix", &w.fix.id()),
        ev("whatif_saving_per_step_ns", &w.saving_per_step_ns),
        ev("whatif_step_after_ns", &w.step_ns_after),
        ev("whatif_limited_by", &w.limited_by),
    ]);
    f.whatif = Some(w);
    if f.fix.is_some() && super::rule::saves_little(f) {
        f.severity = f.severity.min(Severity::Warning);
    }
}

/// The finding's what-if as one line (`what-if: pin_memory saves 13.9 ms per step
/// (22.7 ms -> 8.72 ms), limited by none`).
pub(crate) fn whatif_line(f: &Finding) -> Option<String> {
    let w = f.whatif.as_ref()?;
    Some(format!(
        "what-if: {} saves {} per step ({} -> {}), limited by {}",
        w.fix.id(),
        fmt_ns(w.saving_per_step_ns),
        fmt_ns(w.step_ns_after + w.saving_per_step_ns),
        fmt_ns(w.step_ns_after),
        w.limited_by
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Cause;

    fn finding(cause: Cause) -> Finding {
        Finding::new(Rule::GpuGaps, Severity::Critical, String::new(), vec![ev("cause", &cause.label())])
            .with_fix(Fix::for_cause(cause), String::new())
    }

    #[test]
    fn a_fix_that_warns_against_more_workers_gets_no_more_workers_what_if() {
        let w = WhatIf {
            fix: Fix::MoreWorkers,
            saving_per_step_ns: 5,
            step_ns_after: 10,
            limited_by: "host",
            basis: String::new(),
        };
        // Contention's fix says "keep num_workers at or below them": no what-if prices its fix.
        assert!(finding(Cause::CpuContention).fix_text().contains("num_workers"));
        assert_eq!(whatif_of(&finding(Cause::CpuContention), std::slice::from_ref(&w)), None);
        // The input pipeline's own causes do propose more workers.
        assert_eq!(whatif_of(&finding(Cause::WorkerBusy), std::slice::from_ref(&w)), Some(&w));
        assert_eq!(whatif_of(&finding(Cause::IoWait), std::slice::from_ref(&w)), Some(&w));
    }
}
