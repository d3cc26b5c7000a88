//! lanescope: a terminal viewer for NVIDIA Nsight Systems traces that says why the GPU is idle.
//!
//! Data flows `reader` (SQLite export) -> `model` (lanes of sorted columns) ->
//! `analysis` (busy unions, gaps and causes, phases, transfers, findings) -> `report`
//! (headless text/JSON/CSV/Markdown) or `tui` (interactive timeline).

pub mod analysis;
pub mod model;
pub mod reader;
pub mod units;
