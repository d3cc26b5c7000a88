//! GPU counters: `GPU_METRICS` joined to `TARGET_INFO_GPU_METRICS`, read in one pass into
//! one series per (GPU, metric). A trace without the table costs one schema lookup.

use std::collections::HashMap;
use std::sync::Arc;

use anyhow::Result;

use super::tables::{Src, scan};
use crate::model::counters::{Counters, Series};
use crate::model::{Ns, TableStat};

/// The export's counters (empty without `GPU_METRICS`), and the table's read stats.
pub(super) fn read_counters(src: Src<'_>) -> Result<(Counters, Vec<TableStat>)> {
    let mut stats = Vec::new();
    if !src.schema.has("GPU_METRICS") || !src.schema.has("TARGET_INFO_GPU_METRICS") {
        return Ok((Counters::default(), stats));
    }
    // Metric ids are not stable between exports: names come from this file's own table.
    let mut names: HashMap<(i64, i64), String> = HashMap::new();
    let mut order: Vec<(i64, i64)> = Vec::new();
    scan(
        src.conn,
        "TARGET_INFO_GPU_METRICS",
        "SELECT typeId, metricId, metricName FROM TARGET_INFO_GPU_METRICS",
        src.progress,
        &mut stats,
        |r| {
            let key = (r.get::<_, i64>(0)?, r.get::<_, i64>(1)?);
            if names.insert(key, r.get::<_, Option<String>>(2)?.unwrap_or_default()).is_none() {
                order.push(key);
            }
            Ok(())
        },
    )?;
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
            if let Some(&i) = slot.get(&(r.get::<_, i64>(1)?, r.get::<_, i64>(2)?)) {
                let c = &mut cols[i];
                c.0.push(r.get(0)?);
                c.1.push(r.get::<_, Option<i64>>(3)?.unwrap_or(0));
            }
            Ok(())
        },
    )?;
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
