//! lanescope: a terminal viewer for NVIDIA Nsight Systems traces that says why the GPU is idle.
//!
//! Data flows `reader` (SQLite export) -> `model` (lanes of sorted columns) ->
//! `analysis` (busy unions, gaps and causes, phases, transfers, findings) -> `report`
//! (headless text/JSON/CSV/Markdown/HTML) or `tui` (interactive timeline); `diff`
//! compares the analyses of two runs. The lanes that the viewer and the pictures draw
//! come from `view`, a view-model with no drawing library; docs/architecture.md has
//! the floors.
//!
//! The modules are private: the names below are the whole public surface, the ones that
//! `main`, the integration tests and the benches use.

mod analysis;
mod bench;
mod cli;
mod diff;
mod info;
mod mcp;
mod model;
mod picture;
mod reader;
mod record;
mod report;
mod scale;
#[cfg(test)]
mod testutil;
mod text;
mod tui;
mod view;

pub use analysis::host::{HostIndex, cpu_load};
pub use analysis::pcie::{CopyVerdict, Pcie};
pub use analysis::whatif::{StepModel, WhatIf, applied as applied_fix};
pub use analysis::{
    Analysis, Budget, Cause, Finding, Fix, Gap, GpuProcess, Hint, Options, Region, RegionKind, Rule, Severity, Steady,
    StepSource, StepsInfo, Window, analyze, find_gaps,
};
pub use cli::{Cli, Exit, run};
pub use diff::{Diff, Run as DiffRun, Status as DiffStatus, diff};
pub use model::counters::{Counters, Series as CounterSeries};
pub use model::{
    ApiKind, Col, EventRef, Events, Lane, LaneKind, MemClass, MemFlags, Ns, Plain, SAMPLE_GIL, SampleFlags, Strings,
    Trace, decode_global_tid, strip_api_version,
};
pub use reader::inputs::group as group_inputs;
pub use reader::{load, load_cached_in};
pub use report::json::build as report_json;
pub use report::{Format, write as write_report, write_with as write_report_with};
pub use text::sanitize;
pub use tui::compact::CompactWriter;
pub use tui::theme::{Depth, Theme};
pub use tui::{Action, App, Pair, draw, draw_pair};
pub use view::align::Align;
