//! `lanescope scale`: build a K-times larger export from a real one, for load and
//! memory scaling measurements. Rows of every event table are replicated K-1 times,
//! shifted in time by the trace length and in correlation id by the id range, so the
//! copies do not overlap and launches still match their GPU work.

use std::path::Path;

use anyhow::{Context, Result, bail};
use rusqlite::Connection;

use crate::reader::check_file;

// The tables whose rows are timeline events: the reader's own list.
const TABLES: &[&str] = crate::reader::EVENT_TABLES;

/// Write `out` as `input` with every event table replicated `factor` times.
pub(crate) fn scale(input: &Path, out: &Path, factor: u32) -> Result<()> {
    if factor < 1 {
        bail!("--factor must be at least 1");
    }
    check_file(input).with_context(|| input.display().to_string())?;
    if out.exists() {
        bail!("{}: already exists; not overwriting", out.display());
    }
    std::fs::copy(input, out).with_context(|| format!("copying to {}", out.display()))?;
    let mut c = Connection::open(out).with_context(|| out.display().to_string())?;
    c.execute_batch("PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;")?;
    let tx = c.transaction()?;
    let span = span_of(&tx)?;
    let corr_stride = max_corr(&tx)? + 1;
    for table in TABLES {
        replicate(&tx, table, factor, span, corr_stride)?;
    }
    tx.commit()?;
    Ok(())
}

fn exists(c: &Connection, table: &str) -> Result<bool> {
    Ok(c.query_row("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?1", [table], |r| {
        r.get::<_, i64>(0)
    })? > 0)
}

// Length of the trace in ns, plus one, so shifted copies never touch.
fn span_of(c: &Connection) -> Result<i64> {
    let mut lo = i64::MAX;
    let mut hi = i64::MIN;
    for t in TABLES {
        if exists(c, t)? {
            // Instants (context switches, CPU samples) have no end column.
            let has_end: bool = c.query_row(
                &format!("SELECT count(*) > 0 FROM pragma_table_info('{t}') WHERE name = 'end'"),
                [],
                |r| r.get(0),
            )?;
            let end = if has_end { "\"end\"" } else { "start" };
            let (a, b): (Option<i64>, Option<i64>) =
                c.query_row(&format!("SELECT min(start), max(coalesce({end}, start)) FROM {t}"), [], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?;
            lo = lo.min(a.unwrap_or(lo));
            hi = hi.max(b.unwrap_or(hi));
        }
    }
    Ok(if hi >= lo { hi - lo + 1 } else { 1 })
}

// Correlation ids of all tables shift together, by one stride above the largest id.
fn max_corr(c: &Connection) -> Result<i64> {
    let mut m = 0;
    for t in TABLES {
        if exists(c, t)? && c.prepare(&format!("SELECT correlationId FROM {t} LIMIT 0")).is_ok() {
            m = m.max(c.query_row(&format!("SELECT coalesce(max(correlationId), 0) FROM {t}"), [], |r| r.get(0))?);
        }
    }
    Ok(m)
}

fn replicate(c: &Connection, table: &str, factor: u32, span: i64, corr_stride: i64) -> Result<()> {
    if !exists(c, table)? {
        return Ok(());
    }
    let mut stmt = c.prepare(&format!("PRAGMA table_info({table})"))?;
    let cols: Vec<(String, bool)> =
        stmt.query_map([], |r| Ok((r.get::<_, String>(1)?, r.get::<_, i64>(5)? > 0)))?.collect::<Result<_, _>>()?;
    let rows: i64 = c.query_row(&format!("SELECT coalesce(max(rowid), 0) FROM {table}"), [], |r| r.get(0))?;
    for k in 1..i64::from(factor) {
        let list: Vec<String> = cols
            .iter()
            .filter(|(_, pk)| !pk) // integer primary keys (eventId) are renumbered by SQLite
            .map(|(n, _)| match n.as_str() {
                "start" => format!("start + {}", k * span),
                "end" => format!("\"end\" + {}", k * span),
                "correlationId" => format!("correlationId + {}", k * corr_stride),
                other => format!("\"{other}\""),
            })
            .collect();
        let names: Vec<String> = cols.iter().filter(|(_, pk)| !pk).map(|(n, _)| format!("\"{n}\"")).collect();
        c.execute(
            &format!(
                "INSERT INTO {table} ({}) SELECT {} FROM {table} WHERE rowid <= {rows}",
                names.join(", "),
                list.join(", ")
            ),
            [],
        )
        .with_context(|| format!("replicating {table}"))?;
    }
    Ok(())
}
