//! Every integration test in one binary (one link instead of one per file); helpers in `util`.

mod analysis_sql;
mod battery;
mod causes_export;
mod cli;
mod compact_writer;
mod completions;
mod diff;
mod diff_view;
mod findings_real;
mod host_causes;
mod host_sql;
mod hostile;
mod kineto;
mod labels;
mod pty;
mod random_exports;
mod ranks;
mod reader_schemas;
mod reader_sql;
mod real_captures;
mod report;
mod scale_load;
mod term;
mod tui_hostile;
mod tui_snapshots;
mod util;
