//! Findings about how copies use the link (`link_bound`, `small_copies`), and the
//! what-if of each finding's fix.

use super::pcie::CopyVerdict;
use super::whatif::{StepModel, WhatIf};
use super::{Cause, Finding, Phase, Severity};
use std::fmt::Write as _;

use crate::model::Ns;
use crate::text::fmt_ns;

/// The fix for copies that saturate the link.
pub(crate) const LINK_FIX: &str = "The link is the bottleneck: move fewer bytes (send uint8 images to the GPU and \
    normalise there, or compress), overlap the copy with compute (prefetch the next batch on a side stream with \
    pinned memory and non_blocking=True), or use a faster link (a PCIe Gen5 slot, NVLink-C2C)";
/// The fix for many small copies.
pub(crate) const SMALL_FIX: &str = "Each copy pays a fixed cost: collate the samples into one contiguous pinned \
    buffer on the host (torch.stack / the DataLoader's collate) and make one copy per batch";

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
                    rule: "link_bound",
                    severity: severity(s),
                    message: format!(
                        "Phase `{}`: its H2D copies ran {how} for {} per instance with no kernel running ({} of \
                         the step): the PCIe link limits the step",
                        crate::text::sanitize(&p.name),
                        fmt_ns(per_step),
                        pct(s)
                    ),
                    evidence,
                    fix: LINK_FIX.to_string(),
                    weight: p.h2d_exposed_ns,
                });
            }
            CopyVerdict::SmallCopies => out.push(Finding {
                rule: "small_copies",
                severity: severity(s),
                message: format!(
                    "Phase `{}`: most of its H2D copy time is in copies under 1 MiB, {} per instance with no \
                     kernel running ({} of the step): latency-bound copies",
                    crate::text::sanitize(&p.name),
                    fmt_ns(per_step),
                    pct(s)
                ),
                evidence,
                fix: SMALL_FIX.to_string(),
                weight: p.h2d_exposed_ns,
            }),
            CopyVerdict::None | CopyVerdict::PageableStaged | CopyVerdict::BelowLink => {}
        }
    }
    out
}

/// The what-if that belongs to finding `f`, if one was priced.
pub(crate) fn whatif_of<'a>(f: &Finding, whatifs: &'a [WhatIf]) -> Option<&'a WhatIf> {
    let cause = f.evidence.iter().find(|(k, _)| k == "cause" || k == "dominant_cause").map(|(_, v)| v.as_str());
    // The fix the finding proposes: by rule, else by the words of its fix, else its cause.
    // Contention's fix names num_workers only to warn against more of them, and no
    // what-if prices its fix (more CPUs): it gets none.
    let fx = f.fix.as_str();
    let cause = cause.and_then(Cause::from_label);
    let fix = match f.rule {
        "cuda_memcpy_async" | "pageable_bandwidth" => "pin_memory",
        "link_bound" => "prefetch",
        "launch_bound" => "cuda_graphs",
        _ if cause == Some(Cause::CpuContention) => return None,
        _ if fx.contains("pin_memory") => "pin_memory",
        _ if fx.contains("num_workers") => "more_workers",
        _ if fx.contains("CUDA graph") => "cuda_graphs",
        _ => match cause {
            Some(Cause::WorkerBusy) => "more_workers",
            Some(Cause::SyncDrain) => "drop_sync",
            Some(Cause::LaunchBound) => "cuda_graphs",
            _ => return None,
        },
    };
    whatifs.iter().find(|w| w.fix == fix)
}

/// Add each finding's what-if to its evidence (`whatif_*` keys). A finding whose fix would
/// not shorten the step (another limit binds) drops a severity level and says which limit:
/// the headline is what a user acts on.
pub(crate) fn attach(findings: &mut [Finding], whatifs: &[WhatIf]) {
    for f in findings {
        let Some(w) = whatif_of(f, whatifs).cloned() else { continue };
        if w.saving_per_step_ns == 0 && w.limited_by != "none" {
            f.severity = match f.severity {
                Severity::Critical => Severity::Warning,
                Severity::Warning | Severity::Info => Severity::Info,
            };
            let _ =
                write!(f.message, "; {} alone would not shorten the step: the {} sets its pace", w.fix, w.limited_by);
        }
        f.evidence.extend([
            ev("whatif_fix", &w.fix),
            ev("whatif_saving_per_step_ns", &w.saving_per_step_ns),
            ev("whatif_step_after_ns", &w.step_ns_after),
            ev("whatif_limited_by", &w.limited_by),
        ]);
    }
}

/// The finding's what-if as one line (`what-if: pin_memory saves 13.9 ms per step
/// (22.7 ms -> 8.72 ms), limited by none`), from its `whatif_*` evidence.
pub(crate) fn whatif_line(f: &Finding) -> Option<String> {
    let get = |k: &str| f.evidence.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let num = |k: &str| get(k).and_then(|v| v.parse::<Ns>().ok());
    let (fix, save, after, by) = (
        get("whatif_fix")?,
        num("whatif_saving_per_step_ns")?,
        num("whatif_step_after_ns")?,
        get("whatif_limited_by")?,
    );
    Some(format!(
        "what-if: {fix} saves {} per step ({} -> {}), limited by {by}",
        fmt_ns(save),
        fmt_ns(after + save),
        fmt_ns(after)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(cause: Cause) -> Finding {
        Finding {
            rule: "gpu_gaps",
            severity: Severity::Critical,
            message: String::new(),
            evidence: vec![ev("cause", &cause.label())],
            fix: super::super::findings::cause_fix(cause).to_string(),
            weight: 0,
        }
    }

    #[test]
    fn a_fix_that_warns_against_more_workers_gets_no_more_workers_what_if() {
        let w = WhatIf {
            fix: "more_workers",
            saving_per_step_ns: 5,
            step_ns_after: 10,
            limited_by: "host",
            basis: String::new(),
        };
        // Contention's fix says "keep num_workers at or below them": no what-if prices its fix.
        assert!(finding(Cause::CpuContention).fix.contains("num_workers"));
        assert_eq!(whatif_of(&finding(Cause::CpuContention), std::slice::from_ref(&w)), None);
        // The input pipeline's own causes do propose more workers.
        assert_eq!(whatif_of(&finding(Cause::WorkerBusy), std::slice::from_ref(&w)), Some(&w));
        assert_eq!(whatif_of(&finding(Cause::IoWait), std::slice::from_ref(&w)), Some(&w));
    }
}
