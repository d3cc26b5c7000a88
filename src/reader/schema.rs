//! Which tables and columns this export has.

use std::collections::{HashMap, HashSet};

use anyhow::{Context, Result};
use rusqlite::Connection;

/// Tables and their columns, probed from `sqlite_master` and `PRAGMA table_info`.
#[derive(Debug, Default)]
pub(super) struct Schema {
    tables: HashMap<String, HashSet<String>>,
}

/// Tables whose rows become timeline events (for progress estimates).
pub(crate) const EVENT_TABLES: &[&str] = &[
    "CUPTI_ACTIVITY_KIND_KERNEL",
    "CUPTI_ACTIVITY_KIND_MEMCPY",
    "CUPTI_ACTIVITY_KIND_MEMSET",
    "CUPTI_ACTIVITY_KIND_RUNTIME",
    "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
    "CUPTI_ACTIVITY_KIND_GRAPH_TRACE",
    "NVTX_EVENTS",
    "OSRT_API",
    "PROFILER_OVERHEAD",
    "SCHED_EVENTS",
    "COMPOSITE_EVENTS",
];

impl Schema {
    /// Read the list of tables and their columns.
    pub(super) fn probe(conn: &Connection) -> Result<Self> {
        let mut stmt = conn
            .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
            .context("corrupt or unreadable SQLite file")?;
        let names: Vec<String> = stmt
            .query_map([], |r| r.get(0))
            .and_then(Iterator::collect)
            .context("corrupt or unreadable SQLite file")?;
        let mut tables = HashMap::new();
        for t in names {
            let mut cols = HashSet::new();
            let mut info = conn.prepare(&format!("PRAGMA table_info(\"{}\")", t.replace('"', "\"\"")))?;
            let rows = info.query_map([], |r| r.get::<_, String>(1))?;
            for c in rows {
                cols.insert(c?);
            }
            tables.insert(t, cols);
        }
        Ok(Self { tables })
    }

    /// True when `table` exists.
    pub(super) fn has(&self, table: &str) -> bool {
        self.tables.contains_key(table)
    }

    /// Names of all tables.
    pub(super) fn tables(&self) -> impl Iterator<Item = &str> {
        self.tables.keys().map(String::as_str)
    }

    /// True when `table` exists and has `column`.
    pub(super) fn has_col(&self, table: &str, column: &str) -> bool {
        self.tables.get(table).is_some_and(|c| c.contains(column))
    }

    /// `column` quoted when present, else `NULL`, for building SELECT lists.
    pub(super) fn col_or_null(&self, table: &str, column: &str) -> String {
        if self.has_col(table, column) { format!("\"{column}\"") } else { "NULL".to_string() }
    }

    /// True when this looks like an nsys export at all.
    pub(super) fn is_nsys_export(&self) -> bool {
        self.has("StringIds")
            || self.has("META_DATA_EXPORT")
            || self.has("EXPORT_META_DATA")
            || EVENT_TABLES.iter().any(|t| self.has(t))
    }

    /// Rows in the event tables, from `max(rowid)`, which SQLite answers without a scan.
    pub(super) fn event_rows_estimate(&self, conn: &Connection) -> u64 {
        EVENT_TABLES
            .iter()
            .filter(|t| self.has(t))
            .filter_map(|t| {
                conn.query_row(&format!("SELECT max(rowid) FROM {t}"), [], |r| r.get::<_, Option<i64>>(0)).ok()
            })
            .map(|n| n.unwrap_or(0).max(0) as u64)
            .sum()
    }
}
