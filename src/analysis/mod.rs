//! Analysis: pure functions over a [`Trace`] that say when and why the GPU is idle.
//! Shared by the TUI and the headless report.

pub mod intervals;

use crate::model::{Ns, Trace};
pub use intervals::Union;

/// Default minimum idle gap: 100 us.
pub const DEFAULT_MIN_GAP_NS: Ns = 100_000;

/// Knobs of the analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Shortest idle stretch reported as a gap.
    pub min_gap_ns: Ns,
    /// Keep NVTX names exactly (no `step 7` -> `step N` grouping).
    pub exact_names: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self { min_gap_ns: DEFAULT_MIN_GAP_NS, exact_names: false }
    }
}

/// Busy time of one GPU, as unions of its operations (all streams merged).
#[derive(Debug, Clone, Default)]
pub struct DeviceActivity {
    /// Device id.
    pub device: u32,
    /// Any operation: kernels, copies, memsets, graph executions.
    pub busy: Union,
    /// Kernels and graph executions.
    pub kernels: Union,
    /// Memcpy and memset.
    pub copies: Union,
}

impl DeviceActivity {
    /// Compute the unions for `device` from the trace's GPU lanes.
    pub fn compute(trace: &Trace, device: u32) -> Self {
        use crate::model::LaneKind;
        let lanes = || trace.lanes.iter().filter(move |l| l.kind.device() == Some(device));
        let pairs = |want: fn(LaneKind) -> bool| {
            Union::from_pairs(
                lanes()
                    .filter(move |l| want(l.kind))
                    .flat_map(|l| l.ev.start.iter().copied().zip(l.ev.end.iter().copied())),
            )
        };
        let kernels = pairs(|k| matches!(k, LaneKind::Kernels { .. } | LaneKind::Graphs { .. }));
        let copies = pairs(|k| matches!(k, LaneKind::Memory { .. }));
        let busy = Union::from_pairs(kernels.iter().chain(copies.iter()));
        Self { device, busy, kernels, copies }
    }

    /// First and last busy instant.
    pub fn extent(&self) -> Option<(Ns, Ns)> {
        self.busy.extent()
    }

    /// Time with copies running and no kernel: the GPU is busy, but only moving data.
    pub fn copy_only_in(&self, a: Ns, b: Ns) -> Ns {
        self.busy.busy_in(a, b) - self.kernels.busy_in(a, b)
    }
}
