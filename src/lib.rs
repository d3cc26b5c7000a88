//! lanescope: a terminal viewer for NVIDIA Nsight Systems traces that says why the GPU is idle.
//!
//! Data flows `reader` (SQLite export) -> `model` (lanes of sorted columns) ->
//! `analysis` (busy unions, gaps and causes, phases, transfers, findings) -> `report`
//! (headless text/JSON/CSV/Markdown) or `tui` (interactive timeline); `diff` compares
//! the analyses of two runs.

pub mod analysis;
pub mod bench;
pub mod cli;
pub mod diff;
pub mod info;
pub mod model;
pub mod reader;
pub mod report;
pub mod scale;
pub mod text;
pub mod tui;
pub mod units;
