//! Loading for the commands (`report`, `info`, `diff`, `snapshot`, `record`, the MCP
//! server): one export or several (files, directories, globs) merged on one timeline,
//! errors naming the file, and a progress bar on stderr while a load takes long.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::Progress;
use crate::model::Trace;

/// Load the inputs of a command: one export, or several (files, directories, globs)
/// merged on one timeline ([`merge`](super::merge)). Errors name the file.
pub(crate) fn load_inputs(paths: &[PathBuf]) -> Result<Trace> {
    let files = super::inputs::expand(paths)?;
    let mut traces = Vec::with_capacity(files.len());
    for f in &files {
        traces.push(load_one(f)?);
    }
    let t = super::merge::merge(traces);
    if let Some(note) = &t.meta.align_note {
        eprintln!("lanescope: {}", crate::text::sanitize(note));
    }
    Ok(t)
}

/// Load a trace for a headless command; errors name the file. Loads that take
/// over a second show a progress bar on stderr when stderr is a terminal.
pub(crate) fn load_one(path: &Path) -> Result<Trace> {
    load_one_by(path, super::load_with_progress)
}

/// [`load_one`] for a command that reads none of the lanes' columns (`report` and
/// `diff` over a cached analysis): from the cache, the large columns stay in the mapped
/// entry, unchecked ([`super::load_unchecked`]), so that none is read.
pub(crate) fn load_one_lent(path: &Path) -> Result<Trace> {
    load_one_by(path, super::load_unchecked)
}

fn load_one_by(path: &Path, load: fn(&Path, &Progress) -> Result<Trace>) -> Result<Trace> {
    let progress = Progress::default();
    let trace = std::thread::scope(|s| {
        let job = s.spawn(|| load(path, &progress));
        if std::io::stderr().is_terminal() {
            show_progress(&job, &progress, path);
        }
        job.join().unwrap_or_else(|_| Err(anyhow::anyhow!("reader panicked")))
    });
    trace.with_context(|| path.display().to_string())
}

fn show_progress<T>(job: &std::thread::ScopedJoinHandle<'_, T>, progress: &Progress, path: &Path) {
    let started = std::time::Instant::now();
    let mut shown = false;
    while !job.is_finished() {
        std::thread::sleep(std::time::Duration::from_millis(50));
        if started.elapsed().as_secs_f64() < 1.0 {
            continue;
        }
        let f = progress.fraction();
        let filled = (f * 30.0).round() as usize;
        let name = path.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
        eprint!(
            "\r[{}{}] {:>3.0}% loading {}",
            "#".repeat(filled),
            " ".repeat(30 - filled),
            f * 100.0,
            crate::text::sanitize(&name)
        );
        shown = true;
    }
    if shown {
        // Clear the bar so the output starts on a clean line.
        eprint!("\r{}\r", " ".repeat(80));
    }
}
