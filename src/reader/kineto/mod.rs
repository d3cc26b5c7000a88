//! Reader for PyTorch profiler (Kineto) Chrome-trace JSON, plain or gzipped, into the
//! same [`Trace`] as nsys exports.
//!
//! Mapping (`ph: "X"` events by `cat`):
//! - `cpu_op`, `user_annotation`, `python_function` (and the old `Operator`): ranges of
//!   their thread, as NVTX push/pop lanes with the depth given by nesting (so
//!   `ProfilerStep#N` and annotations are phases, and the step phase works);
//! - `cuda_runtime`, `cuda_driver` (old: `Runtime`): CUDA API lanes, `corr` = the
//!   `correlation` arg, classified by name as nsys calls are;
//! - `kernel`, `gpu_memcpy`, `gpu_memset` (old: `Kernel`, `Memcpy`, `Memset`): GPU
//!   lanes per `device` and `stream` arg, owned by the process whose API call has the
//!   same correlation id (Kineto writes GPU events under a pseudo-process per device);
//!   copy direction and memory kinds from the name (`Memcpy HtoD (Pageable -> Device)`),
//!   bytes from the `bytes` arg;
//! - `cuda_sync`: [`SyncRecords`] (`cuda_sync_kind` as nsys's sync type);
//! - `overhead` named `Activity Buffer Request`, `Buffer Flush`, `Instrumentation`,
//!   `Resource`: profiler overhead lanes; CUDA's own (lazy loading...) is only counted;
//! - `gpu_user_annotation`: an `annotations` lane of its GPU (ranges, not GPU work).
//! - the `Trace` span, `ac2g`/`fwdbwd` flows, instants: counted,
//!   and (`X` ones) part of the trace's extent; the model has no GPU range lane that
//!   does not count as GPU busy, and flows repeat the `correlation` args.
//!
//! Times are decimal microseconds turned into integer nanoseconds without a float
//! (`decimal`). `baseTimeNanoseconds` is kept as the wall-clock origin
//! (`Meta::utc_epoch_ns`): model times are the file's `ts`, so `base + ts` is absolute.
//!
//! The text is scanned as a stream ([`json`]) into a builder ([`builder`]) that keeps
//! rows, not events; a large plain file is scanned in parts on several threads
//! ([`split`]); [`assemble`] makes the trace.

mod assemble;
mod builder;
mod input;
mod json;
mod split;
mod values;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Instant;

use anyhow::{Result, bail};

use super::Progress;
use crate::model::Trace;
use values::decimal;

/// Product label kept in `Meta::nsys_version` for Kineto traces.
pub(crate) const PRODUCT: &str = "PyTorch Profiler (Kineto)";

/// Load the Kineto trace at `path` (plain JSON, or gzip when `gzip`).
pub(crate) fn load(path: &Path, gzip: bool, progress: &Progress) -> Result<Trace> {
    let t0 = Instant::now();
    let file = std::fs::File::open(path)?;
    let len = file.metadata().map_or(0, |m| m.len());
    progress.rows_total.store(len, Ordering::Relaxed);
    let parts = if gzip { None } else { split::scan_parts(path, len, progress)? };
    let scan = match parts {
        Some(s) => s,
        None => input::scan_stream(file, gzip, progress),
    };
    let events = scan.b.events();
    if let Some(st) = &scan.stop
        && !scan.top_seen
        && events == 0
    {
        let what = if gzip { "gzip file, but not a JSON trace" } else { "not a JSON trace" };
        bail!("{what} ({} at byte {})", st.reason, st.offset);
    }
    if scan.stop.is_none() && !scan.saw_events && events == 0 {
        bail!("JSON, but not a PyTorch profiler trace (no traceEvents)");
    }
    Ok(assemble::assemble(scan.b, scan.stop, events, t0))
}
