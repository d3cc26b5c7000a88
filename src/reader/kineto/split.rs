//! A large plain JSON trace scanned in parts, one thread each.
//!
//! The file is cut near equal offsets at what looks like the start of an event of the
//! `traceEvents` array (a `{` after `}` and `,`); part `i` is scanned from its cut as
//! the rest of that array and of the top-level object. What makes the parts one scan:
//! part `i - 1` must arrive at an event starting exactly at cut `i`, and stops there.
//! When it does not (the cut was inside an event, or it stopped at an error first), it
//! carries on to the end and the later parts are dropped, so the result is always that
//! of one pass. Builders are then merged in order ([`Builder::merge`]).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::atomic::AtomicUsize;

use super::builder::Builder;
use super::input::{Counting, Scan, scan};
use super::json::Scanner;
#[cfg(test)]
use crate::model::LaneKind;
use crate::reader::Progress;

/// Smallest part worth a thread of its own.
const MIN_PART: u64 = 32 << 20;
/// Most parts.
const MAX_PARTS: u64 = 8;
/// Bytes searched for a cut after each target offset.
const WINDOW: usize = 1 << 20;

/// Scan the plain JSON file at `path` (`len` bytes) in parts, or `None` when it is too
/// small, the machine has one core, or no cut was found (then scan it whole).
pub(super) fn scan_parts(path: &Path, len: u64, progress: &Progress) -> std::io::Result<Option<Scan>> {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get) as u64;
    scan_in(path, len, cores.min(len / MIN_PART).min(MAX_PARTS), progress)
}

// `scan_parts` in (at most) `parts` parts.
fn scan_in(path: &Path, len: u64, parts: u64, progress: &Progress) -> std::io::Result<Option<Scan>> {
    if parts < 2 || !starts_with_object(&mut File::open(path)?)? {
        return Ok(None);
    }
    let mut cuts = Vec::new();
    for i in 1..parts {
        let target = (len * i / parts).max(cuts.last().map_or(0, |&c| c + 1));
        if let Some(c) = find_cut(&mut File::open(path)?, target)? {
            cuts.push(c);
        }
    }
    if cuts.is_empty() {
        return Ok(None);
    }
    scan_cuts(path, &cuts, progress).map(Some)
}

// Scan the file at `path` in parts that begin at `cuts` (increasing offsets).
fn scan_cuts(path: &Path, cuts: &[u64], progress: &Progress) -> std::io::Result<Scan> {
    let missed = AtomicUsize::new(usize::MAX);
    let scans = std::thread::scope(|s| {
        let later: Vec<_> = (1..=cuts.len())
            .map(|i| {
                let missed = &missed;
                s.spawn(move || part(path, i, cuts, missed, progress))
            })
            .collect();
        let first = part(path, 0, cuts, &missed, progress);
        let mut scans = vec![first];
        for h in later {
            scans.push(h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)));
        }
        scans
    });
    Ok(join(scans.into_iter().collect::<std::io::Result<Vec<Scan>>>()?))
}

// Scan part `i`: from cut `i` (the start for part 0) to cut `i + 1`, or on to the end
// when that cut is missed.
fn part(path: &Path, i: usize, cuts: &[u64], missed: &AtomicUsize, progress: &Progress) -> std::io::Result<Scan> {
    let mut file = File::open(path)?;
    let from = i.checked_sub(1).map(|k| cuts[k]);
    if let Some(at) = from {
        file.seek(SeekFrom::Start(at))?;
    }
    let mut sc = Scanner::new(Counting { r: file, progress });
    sc.boundary = cuts.get(i).copied();
    sc.split = Some((i, missed));
    let b = if i == 0 { Builder::new() } else { Builder::later_part() };
    Ok(scan(sc, b, from))
}

// The parts' results as one: each part that follows one which reached its boundary is
// merged; the rest are dropped.
fn join(scans: Vec<Scan>) -> Scan {
    let mut scans = scans.into_iter();
    let mut all = scans.next().expect("part 0 is always scanned");
    while all.reached {
        let Some(next) = scans.next() else { break };
        all.b.merge(next.b);
        all.stop = next.stop;
        all.top_seen |= next.top_seen;
        all.saw_events |= next.saw_events;
        all.reached = next.reached;
        all.parts += 1;
    }
    all
}

// True when the text's first byte (after a byte-order mark and whitespace) opens an
// object: a bare events array ends the scan at its `]`, which a later part cannot know.
fn starts_with_object(file: &mut File) -> std::io::Result<bool> {
    let mut head = vec![0u8; 64 << 10];
    let n = read_full(file, &mut head)?;
    let head = head[..n].strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&head[..n]);
    Ok(head.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{'))
}

// The first offset at or after `target` that looks like the start of an event: a `{`
// whose previous non-blank byte is `,` and the one before that `}`.
fn find_cut(file: &mut File, target: u64) -> std::io::Result<Option<u64>> {
    // From a little before the target, so that the `}` and `,` are in the window.
    let from = target.saturating_sub(256);
    file.seek(SeekFrom::Start(from))?;
    let mut w = vec![0u8; WINDOW];
    let n = read_full(file, &mut w)?;
    let w = &w[..n];
    let back = |mut j: usize| {
        while j > 0 && w[j - 1].is_ascii_whitespace() {
            j -= 1;
        }
        j.checked_sub(1).map(|k| (k, w[k]))
    };
    let start = (target - from) as usize;
    for j in memchr::memchr_iter(b'{', w.get(start..).unwrap_or(&[])).map(|j| j + start) {
        if let Some((k, b',')) = back(j)
            && let Some((_, b'}')) = back(k)
        {
            return Ok(Some(from + j as u64));
        }
    }
    Ok(None)
}

// Read until `buf` is full or the file ends; the bytes read.
fn read_full(file: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::time::Instant;

    use proptest::prelude::*;

    use super::*;
    use crate::reader::kineto::assemble::assemble;
    use crate::reader::kineto::input::scan_stream;

    // Everything the trace of a scan holds, as text (load times zeroed; syncs, filed by
    // hashed process, in pid order).
    fn summary(s: Scan) -> String {
        let head = format!("{:?} {} {}", s.stop, s.top_seen, s.saw_events);
        let events = s.b.events();
        let mut t = assemble(s.b, s.stop, events, Instant::now());
        t.meta.tables.iter_mut().for_each(|x| x.ms = 0.0);
        t.syncs.sort_by_key(|s| s.pid);
        let strings: Vec<_> = t.strings.iter().collect();
        let lanes: Vec<String> = t.lanes.iter().map(|l| format!("{l:?}")).collect();
        format!(
            "{head}\n{:?}\n{strings:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{}",
            t.meta,
            t.gpus,
            t.processes,
            t.threads,
            t.syncs,
            lanes.join("\n")
        )
    }

    // The first line where two summaries differ, shortened; None when they are equal.
    fn diff(got: &str, want: &str) -> Option<String> {
        let short = |l: Option<&str>| l.map(|l| l.chars().take(300).collect::<String>());
        let at = got.lines().zip(want.lines()).position(|(a, b)| a != b);
        match at {
            Some(i) => {
                Some(format!("line {i}:\n got {:?}\nwant {:?}", short(got.lines().nth(i)), short(want.lines().nth(i))))
            }
            None if got.lines().count() != want.lines().count() => Some("line counts differ".into()),
            None => None,
        }
    }

    fn whole(path: &Path) -> String {
        summary(scan_stream(File::open(path).unwrap(), false, &Progress::default()))
    }

    fn file(text: &[u8]) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text).unwrap();
        f
    }

    // Two processes calling the CUDA API (the second only after the middle), kernels,
    // nested ranges, syncs, copies, metadata late in the file, a top-level key after the
    // array; cpu_op args hold objects on their own lines (`}`, `,`, newline, `{`) and
    // strings with `},{` in them: cuts that look like event starts but are not.
    fn synthetic(n: usize) -> String {
        let mut ev = vec![r#"{"ph":"M","name":"process_name","pid":10,"tid":0,"args":{"name":"main"}}"#.to_string()];
        for i in 0..n {
            let pid = if i > n / 2 && i % 3 == 0 { 20 } else { 10 };
            let ts = i * 10;
            ev.push(format!(
                r#"{{"ph":"X","cat":"python_function","name":"f{}","pid":{pid},"tid":{pid},"ts":{ts}.5,"dur":8}}"#,
                i % 7
            ));
            ev.push(format!(
                r#"{{"ph":"X","cat":"cpu_op","name":"aten::op{}","pid":{pid},"tid":{pid},"ts":{}.25,"dur":3,"args":{{"Input Dims":[[1,2],[]],"nested":[{{"a":"}},{{"}},
{{"b":2}}]}}}}"#,
                i % 5,
                ts + 1
            ));
            ev.push(format!(
                r#"{{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":{pid},"tid":{pid},"ts":{}.1,"dur":1,"args":{{"correlation":{i}}}}}"#,
                ts + 2
            ));
            ev.push(format!(
                r#"{{"ph":"X","cat":"kernel","name":"k{}","pid":0,"tid":7,"ts":{},"dur":4,"args":{{"correlation":{i},"device":0,"stream":7}}}}"#,
                i % 4,
                ts + 4
            ));
            if i % 40 == 0 {
                ev.push(format!(
                    r#"{{"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Pageable -> Device)","pid":0,"tid":8,"ts":{ts},"dur":2,"args":{{"correlation":{i},"device":0,"stream":8,"bytes":4096}}}}"#
                ));
                ev.push(format!(
                    r#"{{"ph":"X","cat":"cuda_sync","name":"cudaStreamSynchronize","pid":{pid},"tid":{pid},"ts":{ts},"dur":1,"args":{{"correlation":{i},"cuda_sync_kind":"Stream Sync","device":0,"stream":7}}}}"#
                ));
                ev.push(format!(
                    r#"{{"ph":"M","name":"thread_name","pid":{pid},"tid":{pid},"args":{{"name":"thread {pid} (t{i})"}}}}"#
                ));
            }
        }
        format!("{{\"schemaVersion\":1,\"traceEvents\":[\n{}\n],\"distributedInfo\":{{\"rank\":1}}}}\n", ev.join(",\n"))
    }

    // Offsets of the events that start a line.
    fn line_starts(text: &str) -> Vec<u64> {
        text.match_indices("\n{\"ph\"").map(|(i, _)| i as u64 + 1).collect()
    }

    fn parts(path: &Path, cuts: &[u64]) -> Scan {
        scan_cuts(path, cuts, &Progress::default()).unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        #[test]
        fn cuts_anywhere_give_the_result_of_one_pass(mut cuts in prop::collection::vec(0u64..1, 1..5), at in prop::collection::vec(any::<prop::sample::Index>(), 4)) {
            let text = synthetic(300);
            let f = file(text.as_bytes());
            for (c, ix) in cuts.iter_mut().zip(&at) {
                *c = ix.index(text.len()) as u64;
            }
            cuts.sort_unstable();
            cuts.dedup();
            let d = diff(&summary(parts(f.path(), &cuts)), &whole(f.path()));
            prop_assert!(d.is_none(), "cuts {:?}: {}", cuts, d.unwrap_or_default());
        }

        #[test]
        fn cuts_at_events_join_every_part(at in prop::collection::vec(any::<prop::sample::Index>(), 1..5)) {
            let text = synthetic(300);
            let f = file(text.as_bytes());
            let starts = line_starts(&text);
            let mut cuts: Vec<u64> = at.iter().map(|ix| starts[ix.index(starts.len())]).collect();
            cuts.sort_unstable();
            cuts.dedup();
            let s = parts(f.path(), &cuts);
            prop_assert_eq!(s.parts, cuts.len() + 1);
            let d = diff(&summary(s), &whole(f.path()));
            prop_assert!(d.is_none(), "cuts {:?}: {}", cuts, d.unwrap_or_default());
        }
    }

    #[test]
    fn a_later_process_is_attributed_as_in_one_pass() {
        // The second process first calls the API after the cut: its kernels are its own.
        let text = synthetic(300);
        let f = file(text.as_bytes());
        let cut = line_starts(&text)[text.len() / 2 * line_starts(&text).len() / text.len()];
        let s = parts(f.path(), &[cut]);
        assert_eq!(s.parts, 2);
        let events = s.b.events();
        let t = assemble(s.b, s.stop, events, Instant::now());
        let owners: std::collections::BTreeSet<u32> =
            t.lanes.iter().filter(|l| matches!(l.kind, LaneKind::Kernels { .. })).map(|l| l.pid).collect();
        assert_eq!(owners, [10, 20].into());
    }

    #[test]
    fn errors_stop_where_one_pass_stops() {
        let text = synthetic(300);
        let cut = line_starts(&text)[200];
        // A bad byte before the cut (the later part is dropped), then a file cut short
        // after it (the later part's stop is the result's).
        let mut bad = text.clone().into_bytes();
        bad[line_starts(&text)[100] as usize - 2] = b'#';
        let short = &text.as_bytes()[..text.len() * 3 / 4];
        for t in [&bad[..], short] {
            let f = file(t);
            let s = parts(f.path(), &[cut]);
            assert!(s.stop.is_some());
            assert_eq!(diff(&summary(s), &whole(f.path())), None);
        }
    }

    #[test]
    fn fixtures_in_parts_are_the_fixtures() {
        for name in ["step_prefetch", "rank0", "kineto_pageable"] {
            let gz = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/kineto/{name}.json.gz"));
            let mut text = Vec::new();
            flate2::read::GzDecoder::new(File::open(gz).unwrap()).read_to_end(&mut text).unwrap();
            // As written, and pretty-printed (events over many lines, nested objects too).
            let value: serde_json::Value = serde_json::from_slice(&text).unwrap();
            for t in [text.clone(), serde_json::to_vec_pretty(&value).unwrap()] {
                let f = file(&t);
                let want = whole(f.path());
                for n in 2..=4 {
                    let s = scan_in(f.path(), t.len() as u64, n, &Progress::default()).unwrap().unwrap();
                    assert!(s.parts > 1, "{name}: {n} parts");
                    assert_eq!(diff(&summary(s), &want), None, "{name} in {n} parts");
                }
            }
        }
    }

    #[test]
    fn a_bare_array_or_a_small_file_is_scanned_whole() {
        let f = file(br#"[{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1,"dur":1}]"#);
        assert!(scan_in(f.path(), 60, 2, &Progress::default()).unwrap().is_none());
        let f = file(synthetic(10).as_bytes());
        assert!(scan_in(f.path(), 60, 1, &Progress::default()).unwrap().is_none());
    }
}
