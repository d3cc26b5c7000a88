//! `NVTX_EVENTS`: push/pop ranges by nesting depth, start/end ranges packed into rows,
//! marks, domain names.

use std::collections::HashMap;

use anyhow::Result;

use super::tables::{LaneMap, Sink, Src, int as int_of, open_end, scan as scan_rows, select, text as text_of};
use crate::model::{LaneKind, decode_global_tid};

const T: &str = "NVTX_EVENTS";

struct Row {
    start: i64,
    end: i64,
    pid: u32,
    tid: u32,
    name: u32,
    domain: u32,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    PushPop,
    StartEnd,
    Mark,
}

/// NVTX domain of the marks nsys's Python sampler writes.
pub(super) const PYTHON_SAMPLER: &str = "Python Periodic Sampling";

/// Read `NVTX_EVENTS` into NVTX lanes.
pub(super) fn read_nvtx(src: Src<'_>, sink: &mut Sink) -> Result<()> {
    let Some(sql) = select(src.schema, T) else { return Ok(()) };
    let mut rows: Vec<(Kind, Row)> = Vec::new();
    let mut domains: HashMap<(u32, i64), String> = HashMap::new();
    let mut stats = Vec::new();
    let mut texts: Vec<String> = Vec::new();
    let mut text_index: HashMap<String, u32> = HashMap::new();
    scan_rows(src.conn, T, &sql, src.progress, &mut stats, |r| {
        let ty = int_of(r.get_ref(2)?).unwrap_or(0);
        let (pid, tid) = int_of(r.get_ref(3)?).map_or((0, 0), decode_global_tid);
        let domain = int_of(r.get_ref(6)?).unwrap_or(0);
        let inline = text_of(r.get_ref(4)?);
        if ty == 75 {
            domains.insert((pid, domain), inline.unwrap_or("").to_string());
            return Ok(());
        }
        let kind = match ty {
            59 | 70 => Kind::PushPop,
            60 | 71 => Kind::StartEnd,
            34 | 65 => Kind::Mark,
            _ => return Ok(()),
        };
        let start = int_of(r.get_ref(0)?).unwrap_or(0);
        let end = if kind == Kind::Mark { start } else { open_end(int_of(r.get_ref(1)?)) };
        // Registered strings live in StringIds; inline text is kept locally for now.
        let name = match (inline, int_of(r.get_ref(5)?)) {
            (Some(t), _) => {
                let n = texts.len() as u32;
                let idx = *text_index.entry(t.to_string()).or_insert(n);
                if idx == n {
                    texts.push(t.to_string());
                }
                idx | (1 << 30)
            }
            (None, Some(id)) => id as u32,
            (None, None) => 0,
        };
        rows.push((kind, Row { start, end, pid, tid, name, domain: domain as u32 }));
        Ok(())
    })?;
    sink.out.stats.append(&mut stats);
    // nsys's Python sampler (--python-sampling) writes one mark per sample in a domain of
    // its own; its frames are not in the export. Count them; they are no NVTX lane.
    let sampler: Vec<(u32, u32)> =
        domains.iter().filter(|(_, n)| n.as_str() == PYTHON_SAMPLER).map(|(&(p, d), _)| (p, d as u32)).collect();
    if !sampler.is_empty() {
        let before = rows.len();
        rows.retain(|(k, r)| !(*k == Kind::Mark && sampler.contains(&(r.pid, r.domain))));
        sink.out.python_samples += before - rows.len();
    }
    let mut domain_refs: HashMap<(u32, u32), u32> = HashMap::new();
    for ((pid, d), name) in &domains {
        domain_refs.insert((*pid, *d as u32), sink.local(name));
    }
    let mut text_refs: Vec<Option<u32>> = vec![None; texts.len()];
    for (_, row) in &mut rows {
        if row.name & (1 << 30) != 0 {
            let i = (row.name & !(1 << 30)) as usize;
            row.name = *text_refs[i].get_or_insert_with(|| sink.local(&texts[i]));
        }
    }
    place(rows, &domain_refs, &mut sink.lanes);
    Ok(())
}

fn place(mut rows: Vec<(Kind, Row)>, domains: &HashMap<(u32, u32), u32>, lanes: &mut LaneMap) {
    // Parents before children: by thread, then start, then longest first.
    rows.sort_unstable_by_key(|(k, r)| (r.pid, r.tid, *k as u8, r.start, std::cmp::Reverse(r.end)));
    let mut stack: Vec<i64> = Vec::new();
    let mut row_ends: Vec<i64> = Vec::new();
    let mut cur: Option<(u32, u32, Kind)> = None;
    for (kind, r) in rows {
        if cur != Some((r.pid, r.tid, kind)) {
            stack.clear();
            row_ends.clear();
            cur = Some((r.pid, r.tid, kind));
        }
        let domain = if r.domain == 0 { 0 } else { domains.get(&(r.pid, r.domain)).copied().unwrap_or(0) };
        let lane = match kind {
            Kind::PushPop => {
                while stack.last().is_some_and(|&e| e <= r.start) {
                    stack.pop();
                }
                let depth = stack.len() as u16;
                stack.push(r.end);
                LaneKind::Nvtx { tid: r.tid, depth }
            }
            Kind::StartEnd => {
                let row = if let Some(i) = row_ends.iter().position(|&e| e <= r.start) {
                    row_ends[i] = r.end;
                    i
                } else {
                    row_ends.push(r.end);
                    row_ends.len() - 1
                };
                LaneKind::NvtxStartEnd { tid: r.tid, row: row as u16 }
            }
            Kind::Mark => LaneKind::NvtxMarks { tid: r.tid },
        };
        lanes.get((lane, r.pid)).push(r.start, r.end, r.name, None, None, Some(domain));
    }
}
