//! The column cache through the binary: a second open reads the entry and prints what
//! the first printed; a damaged entry costs one line and a load from the trace; a
//! changed trace gets a new entry; the trace is never written; no test touches the
//! user's cache.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::util::{fixture, lanescope};

// `lanescope ARGS TRACE` with its cache in `home`: (stdout, stderr), after checking that it
// succeeded.
fn run(home: &Path, args: &[&str], trace: &Path) -> (String, String) {
    let out = lanescope().args(args).arg(trace).env("XDG_CACHE_HOME", home).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?} {}: {err}", trace.display());
    (String::from_utf8(out.stdout).unwrap(), err)
}

// The traces' entries of the cache under `home` (not the analyses kept beside them).
fn entries(home: &Path) -> Vec<PathBuf> {
    files(home).into_iter().filter(|p| !is_analysis(p)).collect()
}

// The analyses kept beside the entries under `home`.
fn analyses(home: &Path) -> Vec<PathBuf> {
    files(home).into_iter().filter(|p| is_analysis(p)).collect()
}

fn is_analysis(p: &Path) -> bool {
    p.file_name().is_some_and(|n| n.to_string_lossy().contains("-analysis-"))
}

// Every file of the cache under `home`.
fn files(home: &Path) -> Vec<PathBuf> {
    let Ok(d) = std::fs::read_dir(home.join("lanescope")) else { return Vec::new() };
    let mut v: Vec<PathBuf> = d.flatten().map(|e| e.path()).collect();
    v.sort();
    v
}

// A way of damaging an entry's bytes.
type Damage = fn(&mut Vec<u8>);

// The same, that may hold what it writes.
type Change<'a> = dyn Fn(&mut Vec<u8>) + 'a;

const REPORT: [&str; 3] = ["report", "--format", "json"];

#[test]
fn a_second_open_prints_what_the_first_did() {
    // SQLite exports (one committed plain, others packed with xz) and a PyTorch trace.
    for name in
        ["pageable.sqlite", "contention.sqlite", "multigpu.sqlite", "matrix/g_pinned.sqlite", "kineto/rank0.json.gz"]
    {
        let home = tempfile::tempdir().unwrap();
        let trace = fixture(name);
        let (plain, _) = run(home.path(), &["report", "--no-cache", "--format", "json"], &trace);
        assert!(entries(home.path()).is_empty(), "{name}: --no-cache wrote an entry");
        let (cold, err) = run(home.path(), &REPORT, &trace);
        assert_eq!(entries(home.path()).len(), 1, "{name}: one entry after the first open");
        let (warm, err2) = run(home.path(), &REPORT, &trace);
        assert!(err.is_empty() && err2.is_empty(), "{name}: {err}{err2}");
        assert_eq!(cold, plain, "{name}");
        assert_eq!(warm, plain, "{name}");
        // `info` lists the tables with their load times: those of the load that wrote the entry.
        let info = |args: &[&str]| {
            let mut v: serde_json::Value = serde_json::from_str(&run(home.path(), args, &trace).0).unwrap();
            v["tables"].as_array_mut().unwrap().iter_mut().for_each(|t| t["ms"] = 0.into());
            v
        };
        assert_eq!(info(&["info", "--format", "json"]), info(&["info", "--no-cache", "--format", "json"]), "{name}");
    }
}

// A copy of `name` in `dir` whose bytes after the first MiB are zeroed and whose size and
// mtime are those of the original: the cache key cannot tell, the export is broken.
fn same_key_other_tail(src: &Path, copy: &Path) {
    let mut bytes = std::fs::read(src).unwrap();
    assert!(bytes.len() > (1 << 20) + 4096, "a fixture larger than 1 MiB");
    bytes[1 << 20..].fill(0);
    let mtime = std::fs::metadata(copy).unwrap().modified().unwrap();
    std::fs::write(copy, bytes).unwrap();
    std::fs::OpenOptions::new().write(true).open(copy).unwrap().set_modified(mtime).unwrap();
}

#[test]
fn the_second_open_reads_the_entry_not_the_trace() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("run.sqlite");
    std::fs::copy(fixture("pageable.sqlite"), &trace).unwrap();
    let (want, _) = run(dir.path(), &REPORT, &trace);
    same_key_other_tail(&fixture("pageable.sqlite"), &trace);
    let broken = lanescope().args(["report", "--no-cache"]).arg(&trace).output().unwrap();
    assert!(!broken.status.success() || broken.stdout != want.as_bytes(), "the tail matters to the export");
    let (got, err) = run(dir.path(), &REPORT, &trace);
    assert_eq!(got, want, "{err}");
}

#[test]
fn a_damaged_entry_costs_one_line_and_a_load_from_the_trace() {
    let trace = fixture("pageable.sqlite");
    let home = tempfile::tempdir().unwrap();
    let (want, _) = run(home.path(), &["report", "--no-cache", "--format", "json"], &trace);
    let damages: [(&str, Damage); 4] = [
        ("truncated", |b| b.truncate(b.len() / 2)),
        ("a flipped byte in a column", |b| {
            let i = b.len() * 2 / 3;
            b[i] ^= 0x40;
        }),
        ("a flipped byte in the header", |b| b[20] ^= 1),
        ("empty", Vec::clear),
    ];
    for (what, damage) in damages {
        run(home.path(), &REPORT, &trace);
        // Without the analysis kept beside it, the report reads the entry's columns.
        for a in analyses(home.path()) {
            std::fs::remove_file(a).unwrap();
        }
        let [entry] = entries(home.path()).try_into().unwrap();
        let mut bytes = std::fs::read(&entry).unwrap();
        damage(&mut bytes);
        std::fs::write(&entry, bytes).unwrap();
        let (got, err) = run(home.path(), &REPORT, &trace);
        assert_eq!(got, want, "{what}");
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
        assert!(err.contains(&entry.display().to_string()) && !err.contains("panicked"), "{what}: {err}");
        // Rebuilt: the next open is quiet.
        let (again, err) = run(home.path(), &REPORT, &trace);
        assert!(err.is_empty() && again == want, "{what}: {err}");
    }
}

#[test]
fn a_changed_trace_gets_a_new_entry_and_is_never_written() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("run.sqlite");
    std::fs::copy(fixture("pinned.sqlite"), &trace).unwrap();
    let before = (std::fs::read(&trace).unwrap(), std::fs::metadata(&trace).unwrap().modified().unwrap());
    let (pinned, _) = run(dir.path(), &REPORT, &trace);
    run(dir.path(), &REPORT, &trace);
    run(dir.path(), &["info"], &trace);
    let after = (std::fs::read(&trace).unwrap(), std::fs::metadata(&trace).unwrap().modified().unwrap());
    assert!(before == after, "the trace was written");
    let [first] = entries(dir.path()).try_into().unwrap();
    // Another export under the same name (another size), then only another mtime.
    std::fs::copy(fixture("pageable.sqlite"), &trace).unwrap();
    let (pageable, _) = run(dir.path(), &REPORT, &trace);
    assert_ne!(pageable, pinned);
    assert_eq!(pageable, run(dir.path(), &["report", "--no-cache", "--format", "json"], &trace).0);
    let [second] = entries(dir.path()).try_into().unwrap();
    assert_ne!(first, second, "the old state's entry is replaced");
    let f = std::fs::OpenOptions::new().write(true).open(&trace).unwrap();
    f.set_modified(SystemTime::now() + Duration::from_secs(60)).unwrap();
    drop(f);
    run(dir.path(), &REPORT, &trace);
    let [third] = entries(dir.path()).try_into().unwrap();
    assert_ne!(third, second);
}

#[test]
fn the_cache_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let mut sizes = Vec::new();
    for k in 0..3 {
        let trace = dir.path().join(format!("t{k}.sqlite"));
        std::fs::copy(fixture("pageable.sqlite"), &trace).unwrap();
        let out = lanescope().args(REPORT).arg(&trace).env("XDG_CACHE_HOME", dir.path()).output().unwrap();
        assert!(out.status.success());
        // Each trace's entry and the analysis kept beside it.
        sizes = (0..=k)
            .map(|j| {
                let mine = files(dir.path())
                    .into_iter()
                    .filter(|f| f.file_name().unwrap().to_string_lossy().starts_with(&format!("t{j}-")));
                mine.map(|f| std::fs::metadata(f).unwrap().len()).sum::<u64>()
            })
            .collect();
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(sizes.len(), 3);
    // Room for two: the oldest (t0) goes when t3 is written.
    let max = (2 * sizes[0] + sizes[0] / 2).to_string();
    let trace = dir.path().join("t3.sqlite");
    std::fs::copy(fixture("pageable.sqlite"), &trace).unwrap();
    let mut c = lanescope();
    c.args(REPORT).arg(&trace).env("XDG_CACHE_HOME", dir.path()).env("LANESCOPE_CACHE_MAX", &max);
    assert!(c.output().unwrap().status.success());
    let names: Vec<String> =
        entries(dir.path()).iter().map(|e| e.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.iter().any(|n| n.starts_with("t3-")) && names.iter().any(|n| n.starts_with("t2-")), "{names:?}");
}

#[test]
fn every_test_that_runs_the_binary_keeps_to_its_own_cache() {
    // Each way of running the binary in these tests, and what keeps it off the user's cache.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it");
    for e in std::fs::read_dir(&dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name == "util.rs" || name == "cache.rs" || e.path().extension().is_none_or(|x| x != "rs") {
            continue;
        }
        let src = std::fs::read_to_string(e.path()).unwrap();
        let runs = ["cargo_bin(", "CARGO_BIN_EXE_lanescope"].iter().map(|p| src.matches(p).count()).sum::<usize>();
        let kept = src.matches("XDG_CACHE_HOME").count();
        assert!(kept >= runs, "{name}: {runs} runs of the binary, {kept} set XDG_CACHE_HOME");
    }
}

#[test]
fn each_export_of_a_group_has_its_entry() {
    let home = tempfile::tempdir().unwrap();
    let (a, b) = (fixture("pageable.sqlite"), fixture("pinned.sqlite"));
    let report = |extra: &[&str]| {
        let out = lanescope().args(REPORT).args(extra).arg(&a).arg(&b).env("XDG_CACHE_HOME", home.path()).output();
        let out = out.unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    let plain = report(&["--no-cache"]);
    assert!(entries(home.path()).is_empty());
    assert_eq!(report(&[]), plain);
    assert_eq!(entries(home.path()).len(), 2, "one entry per export");
    assert_eq!(report(&[]), plain, "both read back");
}

// `lanescope ARGS TRACE` without the cache, the first run with it (which keeps the
// analysis) and the second (which reads it back): the three outputs, checked equal.
fn same_three_ways(home: &Path, args: &[&str], traces: &[&Path]) -> String {
    let go = |extra: &[&str]| {
        let out = lanescope().args(args).args(extra).args(traces).env("XDG_CACHE_HOME", home).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success() && err.is_empty(), "{args:?} {extra:?} {traces:?}: {err}");
        String::from_utf8(out.stdout).unwrap()
    };
    let plain = go(&["--no-cache"]);
    let (cold, warm) = (go(&[]), go(&[]));
    assert_eq!(cold, plain, "{args:?} {traces:?}: the first run with the cache");
    assert_eq!(warm, plain, "{args:?} {traces:?}: the analysis read back");
    plain
}

#[test]
fn a_kept_analysis_prints_what_a_fresh_one_does() {
    for name in
        ["pageable.sqlite", "contention.sqlite", "multigpu.sqlite", "matrix/g_pinned.sqlite", "kineto/rank0.json.gz"]
    {
        let home = tempfile::tempdir().unwrap();
        let trace = fixture(name);
        let json = same_three_ways(home.path(), &REPORT, &[&trace]);
        assert!(json.contains("\"findings\""), "{name}: a report");
        let [kept] = analyses(home.path()).try_into().unwrap_or_else(|v| panic!("{name}: one analysis kept, {v:?}"));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777, 0o600, "{name}");
        }
        same_three_ways(home.path(), &["report"], &[&trace]);
        same_three_ways(home.path(), &["report", "--format", "md", "--all-gaps"], &[&trace]);
        same_three_ways(home.path(), &["snapshot", "-o", "-"], &[&trace]);
        same_three_ways(home.path(), &["report", "--format", "html"], &[&trace]);
        assert_eq!(analyses(home.path()).len(), 1, "{name}: the same options, the same analysis");
    }
    let home = tempfile::tempdir().unwrap();
    let (a, b) = (fixture("pageable.sqlite"), fixture("pinned.sqlite"));
    same_three_ways(home.path(), &["diff", "--format", "json"], &[&a, &b]);
    assert_eq!(analyses(home.path()).len(), 2, "one per side");
}

#[test]
fn other_options_keep_another_analysis() {
    let home = tempfile::tempdir().unwrap();
    let trace = fixture("pageable.sqlite");
    let default = same_three_ways(home.path(), &REPORT, &[&trace]);
    let lower = same_three_ways(home.path(), &["report", "--format", "json", "--min-gap", "20us"], &[&trace]);
    assert_ne!(default, lower, "the threshold shows in the report");
    assert_eq!(analyses(home.path()).len(), 2);
    same_three_ways(home.path(), &["report", "--format", "json", "--exact-names"], &[&trace]);
    same_three_ways(home.path(), &["report", "--format", "json", "--infer-steps"], &[&trace]);
    assert_eq!(analyses(home.path()).len(), 4);
    assert_eq!(run(home.path(), &REPORT, &trace).0, default, "each read back under its own options");
}

#[test]
fn a_damaged_analysis_costs_one_line_and_is_computed_again() {
    let trace = fixture("pageable.sqlite");
    let home = tempfile::tempdir().unwrap();
    let (want, _) = run(home.path(), &["report", "--no-cache", "--format", "json"], &trace);
    // Another trace's analysis, to put in this one's place: its header and path say so.
    let other = tempfile::tempdir().unwrap();
    run(other.path(), &REPORT, &fixture("pinned.sqlite"));
    let [foreign] = analyses(other.path()).try_into().unwrap();
    let foreign = std::fs::read(foreign).unwrap();
    let damages: [(&str, Box<Change<'_>>); 6] = [
        ("truncated", Box::new(|b| b.truncate(b.len() / 2))),
        ("one byte short", Box::new(|b| b.truncate(b.len() - 1))),
        (
            "a flipped byte in the values",
            Box::new(|b| {
                let i = b.len() * 2 / 3;
                b[i] ^= 0x40;
            }),
        ),
        ("a flipped byte in the header", Box::new(|b| b[20] ^= 1)),
        ("empty", Box::new(Vec::clear)),
        ("another trace's", Box::new(|b| b.clone_from(&foreign))),
    ];
    for (what, damage) in damages {
        run(home.path(), &REPORT, &trace);
        let [kept] = analyses(home.path()).try_into().unwrap();
        let mut bytes = std::fs::read(&kept).unwrap();
        damage(&mut bytes);
        std::fs::write(&kept, bytes).unwrap();
        let (got, err) = run(home.path(), &REPORT, &trace);
        assert_eq!(got, want, "{what}");
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
        assert!(err.contains(&kept.display().to_string()) && !err.contains("panicked"), "{what}: {err}");
        // Kept again: the next run is quiet and reads it.
        let (again, err) = run(home.path(), &REPORT, &trace);
        assert!(err.is_empty() && again == want, "{what}: {err}");
    }
}

#[test]
fn a_changed_trace_does_not_use_the_old_analysis() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("run.sqlite");
    std::fs::copy(fixture("pinned.sqlite"), &trace).unwrap();
    let pinned = same_three_ways(dir.path(), &REPORT, &[&trace]);
    let [old] = analyses(dir.path()).try_into().unwrap();
    // Another export under the same name: its own analysis, the old one removed.
    std::fs::copy(fixture("pageable.sqlite"), &trace).unwrap();
    let pageable = same_three_ways(dir.path(), &REPORT, &[&trace]);
    assert_ne!(pageable, pinned);
    let [new] = analyses(dir.path()).try_into().unwrap();
    assert_ne!(new, old);
    assert!(!old.exists());
    // Only its mtime changed: a new key, nothing read from the old one.
    let f = std::fs::OpenOptions::new().write(true).open(&trace).unwrap();
    f.set_modified(SystemTime::now() + Duration::from_secs(60)).unwrap();
    drop(f);
    assert_eq!(same_three_ways(dir.path(), &REPORT, &[&trace]), pageable);
    let [newer] = analyses(dir.path()).try_into().unwrap();
    assert_ne!(newer, new);
}

#[test]
fn a_kept_analysis_never_shows_an_unchecked_column() {
    // A lane's column damaged, the analysis kept intact: the JSON report prints the kept
    // analysis and reads no column; the HTML report draws the lanes, so it checks them
    // first, says so in one line and reads the trace again.
    let trace = fixture("pageable.sqlite");
    let home = tempfile::tempdir().unwrap();
    let want = |format: &str| run(home.path(), &["report", "--no-cache", "--format", format], &trace).0;
    let (json, html) = (want("json"), want("html"));
    for (format, want) in [("json", &json), ("html", &html)] {
        run(home.path(), &["report", "--format", format], &trace);
        let [entry] = entries(home.path()).try_into().unwrap();
        let mut bytes = std::fs::read(&entry).unwrap();
        let i = bytes.len() * 2 / 3;
        bytes[i] ^= 0x40;
        std::fs::write(&entry, bytes).unwrap();
        let (got, err) = run(home.path(), &["report", "--format", format], &trace);
        assert_eq!(got, *want, "{format}");
        // One line where the lanes are read, none where they are not.
        assert_eq!(err.lines().count(), usize::from(format == "html"), "{format}: {err}");
        assert!(!err.contains("panicked"), "{format}: {err}");
    }
}
