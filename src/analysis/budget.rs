//! The reconciled step budget (issue 32, item 5): the mean steady step of the GPU the
//! steps ran on, split into GPU busy time and idle by cause, with what else the idle and
//! the busy time hold (regions, exposed copies, collective waits) beside it. The parts add
//! up to the step's wall; `residual_ns` shows what does not (integer division only).

use super::intervals::Union;
use super::{Cause, DeviceActivity, Gap, Region, Windows};
use crate::model::Ns;

/// The mean steady step, split.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Budget {
    /// The GPU it describes.
    pub device: u32,
    /// Steady steps it is the mean of.
    pub steps: usize,
    /// The mean steady step's wall: the steady window over `steps`.
    pub step_ns: Ns,
    /// GPU busy: kernels, copies and memsets.
    pub gpu_busy_ns: Ns,
    /// Of `gpu_busy_ns`, copies with no kernel running.
    pub exposed_copy_ns: Ns,
    /// Of `gpu_busy_ns`, time in collective kernels waiting for another rank.
    pub collective_wait_ns: Ns,
    /// Idle in gaps of at least the gap threshold, by cause (causes with none left out).
    pub idle_by_cause: Vec<(Cause, Ns)>,
    /// Idle in holes under the gap threshold.
    pub short_idle_ns: Ns,
    /// The same gap idle by region (`steps`, a periodic stall, between steps, a loop).
    pub idle_by_region: Vec<(String, Ns)>,
    /// `step_ns` less busy, idle by cause and short idle.
    pub residual_ns: Ns,
}

/// The budget of `device` over the steady window `w` of `steps` steady steps; None
/// without steps or without the device.
pub(crate) fn budget(
    device: &DeviceActivity,
    gaps: &[Gap],
    (w, steps): (Windows, usize),
    regions: &[Region],
    collective_waits: Option<&Union>,
) -> Option<Budget> {
    let n = Ns::try_from(steps).ok().filter(|&n| n > 0)?;
    let (a, b) = (w.steady_start, w.steady_end);
    let per = |ns: Ns| ns / n;
    let busy = device.busy.busy_in(a, b);
    let mut by = [0 as Ns; Cause::ALL.len()];
    for g in gaps.iter().filter(|g| g.device == device.device) {
        by[g.cause as usize] += w.steady_part(g.start, g.end);
    }
    let in_gaps: Ns = by.iter().sum();
    let idle_by_cause: Vec<(Cause, Ns)> =
        Cause::ALL.into_iter().map(|c| (c, per(by[c as usize]))).filter(|&(_, v)| v > 0).collect();
    let mut out = Budget {
        device: device.device,
        steps,
        step_ns: per(b - a),
        gpu_busy_ns: per(busy),
        exposed_copy_ns: per(busy - device.kernels.busy_in(a, b)),
        collective_wait_ns: per(collective_waits.map_or(0, |u| u.busy_in(a, b))),
        short_idle_ns: per((b - a - busy - in_gaps).max(0)),
        idle_by_cause,
        idle_by_region: regions.iter().map(|r| (r.name.clone(), r.idle_per_step_ns)).collect(),
        residual_ns: 0,
    };
    let parts: Ns = out.gpu_busy_ns + out.idle_by_cause.iter().map(|c| c.1).sum::<Ns>() + out.short_idle_ns;
    out.residual_ns = out.step_ns - parts;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_add_up_to_the_step() {
        // Steady window [0, 100) over 2 steps: kernels [0, 30) and [50, 80), a copy
        // [30, 40); a host-busy gap [40, 50) and a sync-drain gap [80, 95); a 5 ns hole.
        let kernels = Union::from_pairs([(0, 30), (50, 80)]);
        let copies = Union::from_pairs([(30, 40)]);
        let device = DeviceActivity { device: 0, busy: kernels.merge(&copies), kernels, copies };
        let gap = |start, end, cause| Gap { start, end, cause, ..Gap::default() };
        let gaps = [gap(40, 50, Cause::HostBusy), gap(80, 95, Cause::SyncDrain)];
        let w = Windows { steady_start: 0, steady_end: 100 };
        let b = budget(&device, &gaps, (w, 2), &[], None).unwrap();
        assert_eq!((b.step_ns, b.gpu_busy_ns, b.exposed_copy_ns), (50, 35, 5));
        assert_eq!(b.idle_by_cause, [(Cause::SyncDrain, 7), (Cause::HostBusy, 5)]);
        assert_eq!((b.short_idle_ns, b.residual_ns), (2, 1));
        assert_eq!(budget(&device, &gaps, (w, 0), &[], None), None);
    }
}
