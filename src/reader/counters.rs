//! GPU counters: `GPU_METRICS` joined to `TARGET_INFO_GPU_METRICS`, read in one pass into
//! one series per (GPU, metric). A trace without the table costs one schema lookup.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::Result;

use super::tables::{Src, int, scan, text};
use crate::model::counters::{Counters, Series};
use crate::model::{Ns, TableStat};

/// The export's counters (empty without `GPU_METRICS`), and the table's read stats.
pub(super) fn read_counters(src: Src<'_>) -> Result<(Counters, Vec<TableStat>)> {
    let mut stats = Vec::new();
    // Every column is optional, as in other tables: without one of these there are no
    // counters to read (the metric name alone may be missing).
    let has = |t: &str, cols: &[&str]| cols.iter().all(|c| src.schema.has_col(t, c));
    if !has("GPU_METRICS", &["timestamp", "typeId", "metricId", "value"])
        || !has("TARGET_INFO_GPU_METRICS", &["typeId", "metricId"])
    {
        return Ok((Counters::default(), stats));
    }
    let name_col = src.schema.col_or_null("TARGET_INFO_GPU_METRICS", "metricName");
    // Metric ids are not stable between exports: names come from this file's own table.
    let mut names: HashMap<(i64, i64), String> = HashMap::new();
    let mut order: Vec<(i64, i64)> = Vec::new();
    // A row with a cell of the wrong type is skipped and counted, as in other tables.
    let mut bad = [0usize; 2];
    scan(
        src.conn,
        "TARGET_INFO_GPU_METRICS",
        &format!("SELECT typeId, metricId, {name_col} FROM TARGET_INFO_GPU_METRICS"),
        src.progress,
        &mut stats,
        |r| {
            let (Some(ty), Some(id)) = (int(r.get_ref(0)?), int(r.get_ref(1)?)) else {
                bad[0] += 1;
                return Ok(());
            };
            let name = text(r.get_ref(2)?).unwrap_or_default();
            if names.insert((ty, id), name.to_string()).is_none() {
                order.push((ty, id));
            }
            Ok(())
        },
    )?;
    // By (type, metric id), not row order: the same export read with its rows in another
    // order lists its metrics alike.
    order.sort_unstable();
    let slot: HashMap<(i64, i64), usize> = order.iter().enumerate().map(|(i, k)| (*k, i)).collect();
    let mut cols: Vec<(Vec<Ns>, Vec<i64>)> = vec![(Vec::new(), Vec::new()); order.len()];
    // Samples of an unlisted metric are skipped, as are rows without a time (schema 3.x allows NULL).
    scan(
        src.conn,
        "GPU_METRICS",
        "SELECT timestamp, typeId, metricId, value FROM GPU_METRICS WHERE timestamp IS NOT NULL",
        src.progress,
        &mut stats,
        |r| {
            let (Some(t), Some(ty), Some(id)) = (int(r.get_ref(0)?), int(r.get_ref(1)?), int(r.get_ref(2)?)) else {
                bad[1] += 1;
                return Ok(());
            };
            let v = r.get_ref(3)?;
            let value = if matches!(v, rusqlite::types::ValueRef::Null) { Some(0) } else { int(v) };
            match (slot.get(&(ty, id)), value) {
                (Some(&i), Some(v)) => {
                    cols[i].0.push(t);
                    cols[i].1.push(v);
                }
                (Some(_), None) => bad[1] += 1,
                (None, _) => {}
            }
            Ok(())
        },
    )?;
    for (table, n) in ["TARGET_INFO_GPU_METRICS", "GPU_METRICS"].into_iter().zip(bad).filter(|x| x.1 > 0) {
        stats.push(TableStat { name: format!("  {table} rows with an unreadable cell (skipped)"), rows: n, ms: 0.0 });
    }
    let mut series = Vec::new();
    let mut shared: HashMap<u32, Arc<[Ns]>> = HashMap::new();
    for (key, (times, values)) in order.iter().zip(cols) {
        if times.is_empty() {
            continue;
        }
        let (times, values) = sorted(times, values);
        // typeId = <hw:8><vm:8><source:16><type:32>, and the type's low byte is the GPU id.
        let device = (key.0 & 0xFF) as u32;
        let times = match shared.get(&device) {
            Some(t) if **t == *times => Arc::clone(t),
            _ => {
                let t: Arc<[Ns]> = times.into();
                shared.entry(device).or_insert_with(|| Arc::clone(&t));
                t
            }
        };
        series.push(Series::new(device, names[key].clone(), times, &values));
    }
    series.sort_by_key(|s| s.device);
    Ok((Counters { series }, stats))
}

// Rows come in insertion order, which is time order in every export seen; sort when not.
fn sorted(times: Vec<Ns>, values: Vec<i64>) -> (Vec<Ns>, Vec<i64>) {
    if times.is_sorted() {
        return (times, values);
    }
    let mut pairs: Vec<(Ns, i64)> = times.into_iter().zip(values).collect();
    pairs.sort_by_key(|p| p.0);
    pairs.into_iter().unzip()
}
