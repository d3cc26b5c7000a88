//! Details panel: the facts about the selected event or gap, computed once per
//! selection (never per frame), and their drawing. No keys of its own.

use crate::analysis::{Analysis, Gap};
use crate::model::{ApiKind, EventRef, LaneKind, MemClass, MemFlags, Ns, Place, SampleFlags, Trace};

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use super::{Context, panel_block};
use crate::analysis::index::Index;
use crate::analysis::pcie::sum_inside;
use crate::model::counters::Series;
use crate::tui::text::{self, sanitize};
use crate::view::rows::KEY_METRICS;

/// Title and key/value lines of the details panel.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Details {
    /// First line, e.g. the event name.
    pub title: String,
    /// Facts as (key, value).
    pub lines: Vec<(String, String)>,
}

impl Details {
    fn add(&mut self, k: &str, v: impl Into<String>) {
        self.lines.push((k.to_string(), v.into()));
    }
}

fn where_label(trace: &Trace, lane: u32) -> String {
    let l = &trace.lanes[lane as usize];
    match l.kind.place() {
        Place::Gpu(d) => format!("{} · {}", l.title(), trace.gpu_label(d)),
        Place::Thread(tid) => format!("{} · {}", l.title(), trace.thread_label(l.pid, tid)),
    }
}

/// NVTX ranges of thread `tid` that contain `t`, outermost first: `step 3 › forward`.
pub(crate) fn nvtx_around(trace: &Trace, pid: u32, tid: u32, t: Ns) -> Option<String> {
    let mut found: Vec<(u16, &str)> = Vec::new();
    for l in &trace.lanes {
        let depth = match l.kind {
            LaneKind::Nvtx { tid: lt, depth } if lt == tid && l.pid == pid => depth,
            LaneKind::NvtxStartEnd { tid: lt, row } if lt == tid && l.pid == pid => 1000 + row,
            _ => continue,
        };
        // Ranges on one lane may nest only in start/end lanes; take the last one that contains t.
        let i = l.ev.start.partition_point(|&s| s <= t);
        if let Some(j) = (0..i).rev().take(64).find(|&j| l.ev.end(j) > t) {
            found.push((depth, trace.strings.get(l.ev.name[j])));
        }
    }
    found.sort_by_key(|f| f.0);
    if found.is_empty() {
        return None;
    }
    Some(found.iter().map(|(_, n)| sanitize(n).into_owned()).collect::<Vec<_>>().join(" › "))
}

/// Details of one event.
pub(crate) fn event(trace: &Trace, links: &Index, r: EventRef) -> Details {
    let lane = &trace.lanes[r.lane as usize];
    let ev = &lane.ev;
    let i = r.idx as usize;
    let name = trace.strings.get(ev.name[i]);
    let mut d = Details { title: sanitize(name).into_owned(), lines: Vec::new() };
    d.add("lane", sanitize(&where_label(trace, r.lane)));
    d.add("start", text::time(ev.start[i].saturating_sub(trace.meta.start_ns), 1));
    d.add("duration", text::fmt_ns(ev.dur(i)));
    match lane.kind {
        LaneKind::Kernels { stream, .. } | LaneKind::Graphs { stream, .. } => {
            d.add("stream", stream.to_string());
            let full = trace.strings.get(ev.aux(i) as u32);
            if ev.aux(i) != 0 && full != name {
                d.add("demangled", sanitize(full));
            }
        }
        LaneKind::Memory { stream, class, .. } => {
            d.add("stream", stream.to_string());
            let f = MemFlags::unpack(ev.flags(i));
            let bytes = ev.aux(i);
            d.add("bytes", format!("{} ({})", text::fmt_bytes(bytes), text::fmt_count(bytes)));
            if class == MemClass::Memset {
                d.add("memory", f.src.label());
            } else {
                d.add("rate", text::fmt_gbps(bytes, ev.dur(i)));
                d.add("memory", format!("{} {} → {}", class.label(), f.src.label(), f.dst.label()));
            }
            if f.is_pageable() {
                d.add("note", "pageable host memory: staged copy, blocks the calling thread");
            }
            if class != MemClass::Memset
                && let Place::Gpu(device) = lane.kind.place()
            {
                metrics_over(trace, device, (ev.start[i], ev.end(i)), &mut d);
            }
        }
        LaneKind::CudaApi { .. } => {
            let kind = match ApiKind::from_flags(ev.flags(i)) {
                ApiKind::Launch => "launch",
                ApiKind::MemcpySync => "synchronous copy (blocks the thread)",
                ApiKind::MemcpyAsync => "asynchronous copy",
                ApiKind::Memset => "memset",
                ApiKind::Sync => "synchronization (blocks the thread)",
                ApiKind::Other => "other",
            };
            d.add("kind", kind);
        }
        LaneKind::Samples { .. } => {
            d.add("module", sanitize(trace.strings.get(ev.aux(i) as u32)));
            d.add("cpu", SampleFlags::unpack(ev.flags(i)).cpu.to_string());
        }
        LaneKind::OnCpu { .. } => d.add("cpu", ev.aux(i).to_string()),
        _ => {}
    }
    let corr = ev.corr(i);
    if corr != 0 {
        d.add("correlation", corr.to_string());
    }
    describe_links(trace, links, lane.kind, lane.pid, corr, ev.start[i], &mut d);
    d
}

fn describe_links(trace: &Trace, links: &Index, kind: LaneKind, pid: u32, corr: u32, start: Ns, d: &mut Details) {
    let mut nvtx_at = None;
    if kind.is_gpu_work() {
        if let Some(api) = links.api_call_at(trace, pid, corr) {
            let al = &trace.lanes[api.lane as usize];
            let j = api.idx as usize;
            let tid = al.kind.tid().unwrap_or(0);
            d.add(
                "launched by",
                format!("{} ({})", sanitize(trace.strings.get(al.ev.name[j])), text::fmt_ns(al.ev.dur(j))),
            );
            d.add("thread", sanitize(&trace.thread_label(al.pid, tid)));
            d.add("queued", format!("{} from call to start", text::fmt_ns(start.saturating_sub(al.ev.start[j]))));
            nvtx_at = Some((al.pid, tid, al.ev.start[j]));
        } else {
            d.add("launched by", "-");
        }
    } else if let Some(tid) = kind.tid() {
        if matches!(kind, LaneKind::CudaApi { .. })
            && let Some(op) = links.gpu_op_at(trace, pid, corr)
        {
            let ol = &trace.lanes[op.lane as usize];
            let j = op.idx as usize;
            d.add(
                "GPU op",
                format!(
                    "{} on {} ({})",
                    sanitize(trace.strings.get(ol.ev.name[j])),
                    ol.title(),
                    text::fmt_ns(ol.ev.dur(j))
                ),
            );
            d.add("starts", format!("{} after the call", text::fmt_ns(ol.ev.start[j].saturating_sub(start))));
        }
        nvtx_at = Some((pid, tid, start));
    }
    if let Some((p, tid, t)) = nvtx_at {
        d.add("NVTX", nvtx_around(trace, p, tid, t).unwrap_or_else(|| "-".to_string()));
    }
}

/// The means of the key GPU metrics of `device` over `[start, end]`, one line each with
/// the number of samples, counting the samples whose sampling interval lies inside (the
/// report's rule, `pcie::sum_inside`); one line saying why when none does. Nothing
/// without metrics.
fn metrics_over(trace: &Trace, device: u32, span: (Ns, Ns), d: &mut Details) {
    let key: Vec<(&Series, &str)> =
        KEY_METRICS.iter().filter_map(|(name, label)| Some((trace.counters.get(device, name)?, *label))).collect();
    let Some(period) = key.first().map(|k| k.0.period_ns()) else { return };
    let mut none = true;
    for &(s, label) in &key {
        let (sum, n) = sum_inside(s, span);
        if n > 0 {
            none = false;
            let samples =
                if n == 1 { "1 sample".to_string() } else { format!("{} samples", text::fmt_count(n as u64)) };
            d.add(label, format!("{:.1} (mean of {samples})", sum as f64 / n as f64));
        }
    }
    if none {
        // Shorter than the period: no sample's interval fits inside.
        let why = if span.1 - span.0 < period {
            format!("shorter than the {} period", text::fmt_ns(period))
        } else {
            "not sampled then".to_string()
        };
        d.add("GPU metrics", format!("no samples inside ({why})"));
    }
}

/// Details of gap `g`, number `gi` of `count`.
pub(crate) fn gap(trace: &Trace, analysis: &Analysis, g: &Gap, (gi, count): (usize, usize)) -> Details {
    let mut d = Details {
        title: format!("idle gap {}/{count} on {}", gi + 1, sanitize(&trace.gpu_label(g.device))),
        lines: Vec::new(),
    };
    d.add("start", text::time(g.start.saturating_sub(trace.meta.start_ns), 1));
    d.add("duration", text::fmt_ns(g.dur()));
    d.add("cause", g.cause.label());
    if !g.evidence.is_empty() {
        d.add("evidence", sanitize(&g.evidence));
    }
    if let Some(p) = &g.phase {
        d.add("phase", sanitize(p));
    }
    d.add("window", g.window.label());
    metrics_over(trace, g.device, (g.start, g.end), &mut d);
    if let Some(h) = &g.host {
        d.add("CPU", crate::analysis::host_cause::summary(h, trace.host.cpu_cores));
        if !h.producers.is_empty() {
            let list: Vec<String> = h
                .producers
                .iter()
                .take(3)
                .map(|p| format!("{} {:.0}%", sanitize(&p.name), p.on_cpu_share * 100.0))
                .collect();
            d.add("producers", format!("on CPU: {}", list.join(", ")));
        }
        if !h.top.is_empty() {
            let list: Vec<String> =
                h.top.iter().map(|t| format!("{:.0}% {}", t.share * 100.0, sanitize(&t.label()))).collect();
            d.add("hot", format!("{} ({} samples)", list.join(", "), h.samples));
        }
    }
    let ops = || trace.lanes.iter().filter(|l| l.kind.shown_with_gpu() == Some(g.device));
    // The operation that ends the gap, and the call that launched it.
    let after = ops().filter_map(|l| {
        let i = l.ev.start.partition_point(|&s| s < g.end);
        (i < l.ev.len() && l.ev.start[i] == g.end).then_some((l, i))
    });
    if let Some((l, i)) = after.into_iter().next() {
        d.add("next op", format!("{} ({})", sanitize(trace.strings.get(l.ev.name[i])), l.title()));
        if let Some(api) = analysis.lookups.api_call_at(trace, l.pid, l.ev.corr(i)) {
            let al = &trace.lanes[api.lane as usize];
            let j = api.idx as usize;
            d.add(
                "launched by",
                format!(
                    "{} at {} ({} before the op)",
                    sanitize(trace.strings.get(al.ev.name[j])),
                    text::time(al.ev.start[j].saturating_sub(trace.meta.start_ns), 1000),
                    text::fmt_ns(g.end.saturating_sub(al.ev.start[j]))
                ),
            );
        }
    }
    let before = ops().filter_map(|l| {
        let i = l.ev.end_partition_point(|e| e <= g.start);
        (l.disjoint && i > 0 && l.ev.end(i - 1) == g.start).then(|| (l, i - 1))
    });
    if let Some((l, i)) = before.into_iter().next() {
        d.add("prev op", format!("{} ({})", sanitize(trace.strings.get(l.ev.name[i])), l.title()));
    }
    d
}
/// Draw the details panel.
pub(crate) fn render(frame: &mut Frame, app: &Context, area: Rect) {
    frame.render_widget(Clear, area);
    let block = panel_block(app.theme, "Details (i hides, c jumps call↔op, f fits)");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(d) = app.details else {
        let p = Paragraph::new(
            "Nothing selected. Enter selects the event under the cursor, Tab the next one, ] the next gap.",
        )
        .wrap(Wrap { trim: true });
        frame.render_widget(p, inner);
        return;
    };
    let kw = d.lines.iter().map(|(k, _)| k.chars().count()).max().unwrap_or(0).min(12);
    let line = |(k, v): &(String, String)| {
        Line::from(vec![Span::styled(format!("{k:<kw$} "), app.theme.dim()), Span::raw(v.clone())])
    };
    let title = Line::from(Span::styled(d.title.clone(), Style::new().add_modifier(Modifier::BOLD)));
    let rows = usize::from(inner.height.saturating_sub(1));
    if d.lines.len() > rows && inner.width >= 100 {
        // Wide and short (a bottom panel): two columns of facts.
        frame.render_widget(title, Rect { height: 1, ..inner });
        let half = inner.width / 2;
        let split = d.lines.len().div_ceil(2);
        let (left, right) = d.lines.split_at(split.min(d.lines.len()));
        let body = Rect { y: inner.y + 1, height: inner.height.saturating_sub(1), ..inner };
        let l: Vec<Line> = left.iter().map(line).collect();
        let r: Vec<Line> = right.iter().map(line).collect();
        frame.render_widget(Paragraph::new(l), Rect { width: half - 1, ..body });
        frame.render_widget(Paragraph::new(r), Rect { x: body.x + half, width: inner.width - half, ..body });
        return;
    }
    let mut lines = vec![title];
    lines.extend(d.lines.iter().map(line));
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}
