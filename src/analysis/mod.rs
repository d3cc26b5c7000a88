//! Analysis: pure functions over a [`Trace`] that say when and why the GPU is idle.
//! Shared by the TUI and the headless report.
//!
//! [`analyze`] runs everything: device unions, gaps with causes ([`gaps`] documents
//! the rule), phases ([`phases`]), transfers and overlap ([`transfers`]), findings
//! ([`findings`]) and totals. Everything is a sweep or a binary search over the sorted
//! lane columns; nothing joins events pairwise, so time is linear in the events.
//! Searches made in time order gallop from the previous hit ([`index::Hints`]): a plain
//! binary search over a column of millions of rows misses the cache at every step.
//!
//! Memory: what is kept is the device unions (about 8.5 bytes per interval, see
//! [`intervals`]) and the gaps. Everything else is per gap, per NVTX range, per lane or
//! per thread, never a copy of the events.

// A `_` arm over one of our enums hides the variant added next (it is how annotations
// once stayed on the wrong GPU): name the variants, or allow it with a reason.
#![warn(clippy::wildcard_enum_match_arm)]

pub(crate) mod budget;
pub(crate) mod cycle;
pub(crate) mod findings;
pub(crate) mod gaps;
pub(crate) mod host;
pub(crate) mod host_cause;
pub(crate) mod index;
pub(crate) mod intervals;
pub(crate) mod link;
pub(crate) mod names;
pub(crate) mod pcie;
pub(crate) mod phases;
pub(crate) use phases::Instance;
pub(crate) mod ranks;
pub(crate) mod regap;
pub(crate) mod regions;
pub(crate) mod shapes;
pub(crate) mod shared;
pub(crate) mod steps;
pub(crate) mod top;
pub(crate) mod transfers;
pub(crate) mod whatif;

pub(crate) mod pipeline;
pub(crate) mod rule;
pub(crate) mod types;

pub use budget::Budget;
pub(crate) use intervals::Union;
#[cfg(test)]
pub(crate) use pipeline::find_gaps_with;
pub(crate) use pipeline::find_step_info;
pub use pipeline::{analyze, find_gaps};
pub use regions::{Region, RegionKind};
pub use rule::{Fix, Rule};
pub use shared::GpuProcess;
pub use types::*;
