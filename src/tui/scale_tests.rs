//! Frames and keys at scale (issue 13, the viewer's half), on real fixtures:
//! - the render index's time directory gives the same cells as plain binary searches;
//! - the correlation index gives the same answers as the linear scans and as SQL joins
//!   on correlationId;
//! - gaps after threshold changes (`>`, `<`: only new or changed gaps explained) equal
//!   a full recomputation at that threshold.
//!
//! No wall-clock figure is asserted here: `lanescope bench` measures them. These tests
//! reach the view index and the regap planner, so they sit in the crate, not in `tests/it`.

use crate::analysis::index::Index as Lookups;
use crate::analysis::{self, Options};
use crate::model::{EventRef, LaneKind, Ns, Trace};
use crate::testutil::fixture;
use crate::tui::App;
use crate::view::index::{CellInfo, Index, UnionDir};
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

fn load(name: &str) -> Trace {
    crate::reader::load(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e:#}"))
}

const TRACES: [&str; 5] =
    ["pageable.sqlite", "queued.sqlite", "multigpu.sqlite", "contention.sqlite", "launchbound.sqlite"];

#[test]
fn directory_cells_equal_binary_search_cells_on_real_traces() {
    for name in TRACES {
        let t = load(name);
        let mut index = Index::build(&t);
        let (start, dur) = (t.meta.start_ns, t.duration().max(1));
        // Views: whole trace, zooms down to a few ns per cell, at spread offsets; odd widths.
        let mut views: Vec<(Ns, Ns, usize)> = Vec::new();
        for (zoom, width) in [(1, 200), (3, 157), (10, 200), (100, 80), (10_000, 200), (1_000_000, 31)] {
            let span = (dur / zoom).max(1);
            for k in 0..7 {
                views.push((start - span / 3 + (dur - span).max(0) * k / 6, span, width));
            }
        }
        for per_bucket in [0, 1, 3, 32] {
            let (mut fast, mut slow) = (Vec::new(), Vec::new());
            for (li, lane) in t.lanes.iter().enumerate() {
                let ix = &mut index.lanes[li];
                if per_bucket > 0 {
                    ix.rebuild_dir(&lane.ev, per_bucket);
                }
                let matches: Vec<u32> = (0..lane.ev.len() as u32).filter(|i| i % 3 == 1).collect();
                for &(t0, span, w) in &views {
                    for m in [None, Some(matches.as_slice())] {
                        ix.raster(&lane.ev, t0, span, w, m, &mut fast);
                        ix.raster_searching(&lane.ev, t0, span, w, m, &mut slow);
                        assert_eq!(fast, slow, "{name} lane {li} view {t0} +{span} x{w} per bucket {per_bucket}");
                        assert_eq!(fast.len(), w);
                        assert!(fast.iter().all(|c| c.dom == CellInfo::NONE || (c.dom as usize) < lane.ev.len()));
                    }
                }
            }
        }
    }
}

#[test]
fn correlation_index_equals_the_linear_scans() {
    for name in TRACES {
        let t = load(name);
        let ix = Lookups::build(&t);
        let mut checked = 0;
        for lane in t.lanes.iter().filter(|l| l.kind.is_gpu_work() || matches!(l.kind, LaneKind::CudaApi { .. })) {
            for i in 0..lane.ev.len() {
                let c = lane.ev.corr(i);
                for pid in [lane.pid, lane.pid + 1] {
                    assert_eq!(ix.gpu_op_at(&t, pid, c), t.gpu_op_for(pid, c), "{name} pid {pid} corr {c}");
                    assert_eq!(ix.api_call_at(&t, pid, c), t.api_call_for(pid, c), "{name} pid {pid} corr {c}");
                }
                checked += 1;
            }
        }
        assert!(checked > 0, "{name} has CUDA calls");
    }
}

#[test]
fn correlation_index_follows_sql_correlation_joins() {
    for name in ["pageable.sqlite", "multigpu.sqlite", "queued.sqlite"] {
        let f = fixture(name);
        let t = load(name);
        let ix = Lookups::build(&t);
        let c = rusqlite::Connection::open_with_flags(&f, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        let mut stmt = c
            .prepare(
                "SELECT k.correlationId, k.end - k.start, r.end - r.start FROM CUPTI_ACTIVITY_KIND_KERNEL k
                 JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId
                 AND r.globalTid / 16777216 % 16777216 = k.globalPid / 16777216 % 16777216",
            )
            .unwrap();
        let rows: Vec<(i64, i64, i64)> =
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().map(Result::unwrap).collect();
        assert!(!rows.is_empty(), "{name}: kernels with launches");
        let pids: Vec<u32> = {
            let mut v: Vec<u32> = t.lanes.iter().filter(|l| l.kind.is_gpu_work()).map(|l| l.pid).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let dur = |r: EventRef| t.lanes[r.lane as usize].ev.dur(r.idx as usize);
        for (corr, kdur, rdur) in rows {
            let corr = corr as u32;
            let pid = pids.iter().copied().find(|&p| ix.gpu_op_at(&t, p, corr).is_some());
            let pid = pid.unwrap_or_else(|| panic!("{name}: no GPU op for correlation {corr}"));
            let op = ix.gpu_op_at(&t, pid, corr).unwrap();
            assert!(matches!(t.lanes[op.lane as usize].kind, LaneKind::Kernels { .. }), "{name} {corr}");
            assert_eq!(dur(op), kdur, "{name}: kernel of correlation {corr}");
            let call = ix.api_call_at(&t, pid, corr).unwrap_or_else(|| panic!("{name}: no call for {corr}"));
            assert_eq!(dur(call), rdur, "{name}: launch of correlation {corr}");
            assert_eq!(t.lanes[call.lane as usize].ev.corr(call.idx as usize), corr);
        }
    }
}

fn key(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

// Gaps at `min` from scratch, as the report and the first load compute them.
fn full(app: &App, min: Ns) -> Vec<analysis::Gap> {
    let a = app.analysis();
    let opts = Options { min_gap_ns: min, ..a.options.clone() };
    let mut gaps = analysis::find_gaps_with(app.trace(), app.devices(), &opts, &a.host);
    for g in &mut gaps {
        g.window = a.windows.of(g.start, g.end);
    }
    // Mechanisms read after the windows, as the first analysis does.
    analysis::shapes::name(app.trace(), &a.host, &mut gaps);
    gaps
}

#[test]
fn gaps_after_threshold_changes_equal_a_full_recomputation() {
    for name in TRACES {
        let t = load(name);
        let a = analysis::analyze(&t, &Options::default());
        let mut app = App::new(t, a, (160, 48));
        let shown = |app: &App| app.gaps().cloned().collect::<Vec<_>>();
        assert_eq!(shown(&app), full(&app, app.analysis().options.min_gap_ns), "{name}: at load");
        // Up and down, back over thresholds seen before, and below them all.
        for (step, c) in "><<<>>>><<<<<<>".chars().enumerate() {
            app.handle_key(key(c));
            app.finish_jobs();
            let min = app.analysis().options.min_gap_ns;
            let want = full(&app, min);
            assert_eq!(app.gaps().len(), want.len(), "{name}: step {step} ({c}) at {min} ns");
            assert_eq!(shown(&app), want, "{name}: step {step} ({c}) at {min} ns");
            lookups_agree(&app, &want, name);
        }
    }
}

// The gap list's length order and the per-cell gap lookup, against sorts and scans of
// the recomputed gaps.
fn lookups_agree(app: &App, want: &[analysis::Gap], name: &str) {
    let mut order: Vec<usize> = (0..want.len()).collect();
    order.sort_by_key(|&i| (std::cmp::Reverse(want[i].dur()), want[i].start, i));
    for (row, &i) in order.iter().enumerate() {
        assert_eq!(app.gaps.by_length(row), Some(i), "{name}: row {row}");
        assert_eq!(app.gaps.length_row(i), Some(row), "{name}: gap {i}");
    }
    assert_eq!(app.gaps.by_length(want.len()), None);
    let (t0, t1) = (app.trace().meta.start_ns, app.trace().meta.end_ns);
    let edges: Vec<Ns> = (0..=200).map(|k| t0 + (t1 - t0) / 200 * k).collect();
    for d in app.devices() {
        let row = app.gaps.overlapping_cells(d.device, &edges);
        for (k, w) in edges.windows(2).enumerate() {
            let (a, b) = (w[0], w[1]);
            let scan = want.iter().position(|g| g.device == d.device && g.start < b && g.end > a);
            let one = app.gaps.overlapping(d.device, a, b).map(|i| i as usize);
            assert_eq!(one, scan, "{name}: GPU {} cell {k}", d.device);
            assert_eq!(row[k].map(|i| i as usize), scan, "{name}: GPU {} cell {k} of the row", d.device);
        }
    }
}

#[test]
fn a_threshold_with_too_many_gaps_is_refused() {
    let t = load("launchbound.sqlite");
    let a = analysis::analyze(&t, &Options::default());
    let mut app = App::new(t, a, (160, 48));
    let before = app.threshold();
    let lower = full(&app, before / 2);
    assert!(lower.len() > app.gaps().len(), "halving the threshold adds gaps");
    let kept: Vec<analysis::Gap> = app.gaps().cloned().collect();
    app.max_gaps = lower.len() - 1;
    app.handle_key(key('<'));
    app.finish_jobs();
    assert_eq!(app.threshold(), before, "threshold kept");
    assert!(app.gaps().cloned().eq(kept), "gaps kept");
    let msg = app.message.clone().unwrap_or_default();
    assert!(msg.contains("the threshold stays"), "{msg}");
    // At the limit it is taken.
    app.max_gaps = lower.len();
    app.handle_key(key('<'));
    app.finish_jobs();
    assert_eq!(app.threshold(), before / 2);
    assert!(app.gaps().cloned().eq(lower), "gaps at the lower threshold");
}

#[test]
fn gpu_row_busy_time_per_cell_equals_the_union() {
    for name in TRACES {
        let t = load(name);
        let a = analysis::analyze(&t, &Options::default());
        let (t0, dur) = (t.meta.start_ns, t.duration().max(1));
        for d in &a.devices {
            let (busy, kernels) = (UnionDir::build(&d.busy), UnionDir::build(&d.kernels));
            for (zoom, width) in [(1, 200), (7, 157), (1_000, 80), (1_000_000, 31)] {
                let span = (dur / zoom).max(1);
                let start = t0 + (dur - span) / 3;
                let edges: Vec<Ns> =
                    (0..=width).map(|k| crate::view::index::bucket_edge(start, span, width, k)).collect();
                let (got_busy, got_kern) = (busy.busy_cells(&d.busy, &edges), kernels.busy_cells(&d.kernels, &edges));
                for (k, w) in edges.windows(2).enumerate() {
                    assert_eq!(got_busy[k], d.busy.busy_in(w[0], w[1]), "{name} GPU {} zoom {zoom} cell {k}", d.device);
                    assert_eq!(got_kern[k], d.kernels.busy_in(w[0], w[1]), "{name} GPU {} kernels cell {k}", d.device);
                }
            }
        }
    }
}

#[test]
fn gap_finder_finds_the_gaps_of_the_busy_union() {
    for name in TRACES {
        let t = load(name);
        let a = analysis::analyze(&t, &Options::default());
        let finder = analysis::regap::GapFinder::build(&a.devices);
        for d in &a.devices {
            for min in [1, 500, 1_000, 4_000, 50_000, 1_000_000, 100_000_000, Ns::MAX] {
                let want: Vec<(Ns, Ns)> = d.busy.gaps(min).collect();
                assert_eq!(finder.gaps(d, min), want, "{name} GPU {} min {min}", d.device);
            }
        }
    }
}

// Every lane's cells at a spread of views: whole trace, zooms, odd widths.
fn all_cells(t: &Trace, index: &Index) -> Vec<Vec<CellInfo>> {
    let (start, dur) = (t.meta.start_ns, t.duration().max(1));
    let mut out = Vec::new();
    for (zoom, width) in [(1, 200), (10, 157), (10_000, 80)] {
        let span = (dur / zoom).max(1);
        for k in 0..3 {
            let t0 = start + (dur - span).max(0) * k / 2;
            for (l, lane) in t.lanes.iter().enumerate() {
                let mut cells = Vec::new();
                index.lanes[l].raster(&lane.ev, t0, span, width, None, &mut cells);
                out.push(cells);
            }
        }
    }
    out
}

#[test]
fn the_render_index_kept_in_the_cache_reads_back_as_built() {
    use crate::reader::cache::Entry;
    use crate::view::index::PART;
    let dir = tempfile::tempdir().unwrap();
    for name in TRACES {
        let path = fixture(name);
        let t = load(name);
        let entry = Entry::new(&path, dir.path()).expect("an entry");
        let check = |i: &Index| i.check(&t);
        assert!(entry.open_part(PART, check).unwrap().is_none(), "{name}: nothing kept yet");
        let built = Index::build(&t);
        entry.store_part(PART, &built, u64::MAX).unwrap();
        let back = entry.open_part(PART, check).unwrap().unwrap_or_else(|| panic!("{name}: it was written"));
        assert_eq!(format!("{back:?}"), format!("{built:?}"), "{name}");
        assert_eq!(all_cells(&t, &back), all_cells(&t, &built), "{name}");
        assert_eq!(back.grid(), built.grid(), "{name}");
    }
}

#[test]
fn a_damaged_or_forged_render_index_in_the_cache_is_refused() {
    use crate::reader::cache::Entry;
    use crate::view::index::PART;
    let dir = tempfile::tempdir().unwrap();
    let (path, t) = (fixture("pageable.sqlite"), load("pageable.sqlite"));
    let entry = Entry::new(&path, dir.path()).expect("an entry");
    let built = Index::build(&t);
    let check = |i: &Index| i.check(&t);
    let file = entry.part_file(PART);
    // Every tenth byte flipped in turn, and the file cut short.
    entry.store_part(PART, &built, u64::MAX).unwrap();
    let good = std::fs::read(&file).unwrap();
    for at in (0..good.len()).step_by(good.len() / 97) {
        let mut bad = good.clone();
        bad[at] ^= 0x41;
        std::fs::write(&file, &bad).unwrap();
        assert!(entry.open_part(PART, check).is_err(), "a flipped byte at {at} of {}", good.len());
    }
    std::fs::write(&file, &good[..good.len() - 3]).unwrap();
    assert!(entry.open_part(PART, check).is_err(), "truncated");
    // A well-formed entry (its checksum right) of an index that does not fit the trace:
    // a row past the end of the longest lane, then the index of another trace.
    let longest = (0..t.lanes.len()).max_by_key(|&l| t.lanes[l].ev.len()).unwrap();
    let mut forged = built.clone();
    let n = t.lanes[longest].ev.len() as u32;
    let mut lanes = Vec::new();
    std::mem::swap(&mut lanes, &mut forged.lanes);
    let mut enc = crate::reader::cache::Enc::new(Vec::new());
    crate::reader::cache::Field::put(&lanes[longest], &mut enc).unwrap();
    let (mut bytes, ..) = enc.finish();
    // The lane's first sparse row: after the flag (1), the cum and maxend columns (a
    // count of 8, a checksum of 4, zeros to 8-byte alignment, 8 per value), the level
    // count (8), then the first level's count and checksum (its values are u32s, so no
    // zeros). Its checksum is made right again, so that only the index's check can tell.
    let nb = t.lanes[longest].ev.len().div_ceil(32);
    let maxend = if t.lanes[longest].disjoint { 0 } else { nb + 1 };
    let col8 = |at: usize, n: usize| (at + 12).next_multiple_of(8) + 8 * n;
    let levels = col8(col8(1, nb + 1), maxend);
    let (crc_at, at) = (levels + 8 + 8, levels + 8 + 12);
    bytes[at..at + 4].copy_from_slice(&n.to_le_bytes());
    let crc = crc32fast::hash(&bytes[at..at + 4 * nb]);
    bytes[crc_at..crc_at + 4].copy_from_slice(&crc.to_le_bytes());
    let mut dec = crate::reader::cache::Dec::new(&bytes[..]);
    lanes[longest] = crate::reader::cache::Field::take(&mut dec).unwrap();
    forged.lanes = lanes;
    entry.store_part(PART, &forged, u64::MAX).unwrap();
    let why = entry.open_part(PART, check).expect_err("a row out of its lane");
    assert!(format!("{why:#}").contains("does not fit"), "{why:#}");
    let other = Index::build(&load("multigpu.sqlite"));
    entry.store_part(PART, &other, u64::MAX).unwrap();
    assert!(entry.open_part(PART, check).is_err(), "the index of another trace");
}

// The screen of `app` at its size, as text.
fn screen(app: &App) -> String {
    let (w, h) = app.size();
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(w, h)).unwrap();
    term.draw(|f| crate::tui::draw(f, app)).unwrap();
    term.backend().buffer().content().iter().map(ratatui::buffer::Cell::symbol).collect()
}

#[test]
fn the_viewer_draws_before_its_analysis_is_in_and_then_as_if_it_had_waited() {
    for name in TRACES {
        let t = load(name);
        let mut waited = App::new(t.clone(), analysis::analyze(&t, &Options::default()), (160, 48));
        let index = Index::build(&t);
        let mut app = App::open(t, index, Options::default(), (160, 48));
        // The first frame needs nothing of the analysis.
        let first = screen(&app);
        assert!(first.contains("analysing…") || !app.analysing(), "{name}: {first}");
        // Keys that need it (the next gap, twice) wait for it, then act as on `waited`.
        for c in "]]".chars() {
            app.handle_key(key(c));
            waited.handle_key(key(c));
        }
        app.finish_jobs();
        assert!(!app.analysing());
        assert_eq!(app.gaps().count(), waited.gaps().count(), "{name}");
        assert_eq!(app.selected_gap().map(|g| g.start), waited.selected_gap().map(|g| g.start), "{name}");
        assert!(waited.gaps().count() < 2 || waited.selected_gap().is_some(), "{name}: ] selected no gap");
        assert_eq!(screen(&app), screen(&waited), "{name}");
    }
}

#[test]
fn a_damaged_cache_entry_drawn_first_is_read_again_before_any_number() {
    use crate::reader::cache::Entry;
    use zerocopy::IntoBytes;
    let dir = tempfile::tempdir().unwrap();
    let (path, t) = (fixture("pageable.sqlite"), load("pageable.sqlite"));
    let entry = Entry::new(&path, dir.path()).expect("an entry");
    entry.store(&t, u64::MAX).unwrap();
    // Intact: drawn from the mapped entry, then its columns checked and copied out for
    // the analysis, the same trace.
    let mut app = App::open(entry.open_unchecked().unwrap().unwrap(), Index::build(&t), Options::default(), (160, 48));
    assert!(app.trace().is_mapped());
    app.finish_jobs();
    assert!(!app.trace().is_mapped() && app.message.is_none());
    assert_eq!(format!("{:?}", app.trace().lanes), format!("{:?}", t.lanes));
    drop(app);
    // A start in the middle of the longest lane changed: a column the entry lends.
    let mut bytes = std::fs::read(&entry.file).unwrap();
    let l = t.lanes.iter().max_by_key(|l| l.ev.len()).unwrap();
    let head = l.ev.start[..4].as_bytes();
    let at = bytes.windows(head.len()).position(|w| w == head).unwrap();
    bytes[at + 8 * (l.ev.len() / 2) + 1] ^= 0x10;
    std::fs::write(&entry.file, &bytes).unwrap();
    let damaged = entry.open_unchecked().unwrap().expect("its skeleton is intact");
    assert!(damaged.is_mapped());
    let mut waited = App::new(t.clone(), analysis::analyze(&t, &Options::default()), (160, 48));
    let mut app = App::open(damaged, Index::build(&t), Options::default(), (160, 48));
    app.finish_jobs();
    // The trace shown is the one read again, with the analysis of the export's rows.
    assert!(!app.trace().is_mapped());
    assert_eq!(format!("{:?}", app.trace().lanes), format!("{:?}", t.lanes));
    assert_eq!(app.gaps().count(), waited.gaps().count());
    let said = screen(&app);
    assert!(said.contains("damaged cache entry"), "{said}");
    waited.message = None;
    app.message = None;
    assert_eq!(screen(&app), screen(&waited));
}

// The union of a GPU's kernels, copies and memsets, read straight from the export.
fn sql_busy(c: &rusqlite::Connection, device: u32) -> Vec<(Ns, Ns)> {
    let sql = "SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE deviceId = ?1
               UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE deviceId = ?1
               UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE deviceId = ?1
               ORDER BY 1";
    let mut stmt = c.prepare(sql).unwrap();
    let rows = stmt.query_map([device], |r| Ok((r.get::<_, Ns>(0)?, r.get::<_, Ns>(1)?))).unwrap();
    let mut out: Vec<(Ns, Ns)> = Vec::new();
    for (a, b) in rows.map(Result::unwrap) {
        match out.last_mut() {
            Some(l) if a <= l.1 => l.1 = l.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

fn clipped(v: &[(Ns, Ns)], a: Ns, b: Ns) -> Ns {
    v.iter().map(|&(s, e)| (e.min(b) - s.max(a)).max(0)).sum()
}

#[test]
fn step_bars_split_each_step_as_sql_does() {
    use crate::analysis::regap::Pool;
    use crate::view::steps::{Part, step_bars};
    for name in ["pageable.sqlite", "matrix/r6_plain_nonvtx.sqlite"] {
        let t = load(name);
        let a = analysis::analyze(&t, &Options::default());
        let pool = Pool::new(a.gaps.clone(), &a.devices, a.options.min_gap_ns);
        let bars = step_bars(&a, &a.devices, &pool).expect("steps");
        let c =
            rusqlite::Connection::open_with_flags(fixture(name), rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        let busy = sql_busy(&c, bars.device);
        // Holes of the union at least the threshold: the gaps the bars split by cause.
        let holes: Vec<(Ns, Ns)> =
            busy.windows(2).map(|w| (w[0].1, w[1].0)).filter(|h| h.1 - h.0 >= a.options.min_gap_ns).collect();
        if name == "pageable.sqlite" {
            let mut stmt = c
                .prepare(
                    "SELECT n.start FROM NVTX_EVENTS n LEFT JOIN StringIds s ON s.id = n.textId
                     WHERE coalesce(n.text, s.value) LIKE 'step %' ORDER BY n.start",
                )
                .unwrap();
            let starts: Vec<Ns> = stmt.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
            assert_eq!(bars.rows.iter().map(|r| r.start).collect::<Vec<_>>(), starts, "{name}: a row per NVTX step");
        }
        assert!(bars.rows.len() > 10, "{name}: {} steps", bars.rows.len());
        for r in &bars.rows {
            let idle: Ns = r.parts.iter().filter(|p| matches!(p.0, Part::Idle(_))).map(|p| p.1).sum();
            assert_eq!(r.of(Part::Busy), clipped(&busy, r.start, r.end), "{name} step {} busy", r.index);
            assert_eq!(idle, clipped(&holes, r.start, r.end), "{name} step {} gap idle", r.index);
            assert_eq!(r.parts.iter().map(|p| p.1).sum::<Ns>(), r.wall(), "{name} step {} adds up", r.index);
        }
    }
}
