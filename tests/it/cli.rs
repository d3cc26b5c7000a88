//! The binary as scripts meet it: bad input, headless commands, pipes.

use std::path::Path;

use crate::util::{self, fixture, lanescope};
use predicates::prelude::*;
use tempfile::TempDir;

/// Run `report` and `info` on `path`; both must fail with one line naming the file and `what`.
fn assert_bad(path: &Path, what: &str) {
    for args in [&["report"][..], &["info"][..], &["report", "--format", "json"][..]] {
        let out = lanescope().args(args).arg(path).output().unwrap();
        assert!(!out.status.success(), "{args:?} {} should fail", path.display());
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8(out.stderr).unwrap();
        assert_eq!(err.lines().count(), 1, "one line, got: {err}");
        assert!(err.contains(&path.display().to_string()), "names the file: {err}");
        assert!(err.contains(what), "says '{what}': {err}");
        assert!(!err.contains("panicked"), "{err}");
        assert!(out.stdout.is_empty());
    }
}

/// Bytes and names of every file in `dir`, to prove nothing was written beside a trace.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let p = e.unwrap().path();
            let bytes = if p.is_file() { std::fs::read(&p).unwrap() } else { Vec::new() };
            (p.file_name().unwrap().to_string_lossy().into_owned(), bytes)
        })
        .collect();
    v.sort();
    v
}

#[test]
fn missing_file() {
    assert_bad(Path::new("/nonexistent/trace.sqlite"), "no such file");
}

#[test]
fn a_directory() {
    let d = TempDir::new().unwrap();
    assert_bad(d.path(), "is a directory");
}

#[test]
fn empty_text_random_and_report_files() {
    let d = TempDir::new().unwrap();
    let empty = d.path().join("empty.sqlite");
    std::fs::write(&empty, b"").unwrap();
    assert_bad(&empty, "empty file");
    let text = d.path().join("notes.sqlite");
    std::fs::write(&text, "just some text\n").unwrap();
    assert_bad(&text, "not a SQLite database");
    let random = d.path().join("random.sqlite");
    let bytes: Vec<u8> = (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    std::fs::write(&random, bytes).unwrap();
    assert_bad(&random, "not a SQLite database");
    let rep = d.path().join("run.nsys-rep");
    std::fs::write(&rep, b"QDSTRM\0\0binary").unwrap();
    assert_bad(&rep, "nsys export --type sqlite");
    let before = snapshot(d.path());
    let _ = lanescope().arg("report").arg(&random).output().unwrap();
    assert_eq!(snapshot(d.path()), before);
}

#[test]
fn truncated_and_corrupt_sqlite() {
    let d = TempDir::new().unwrap();
    let good = std::fs::read(fixture("pageable.sqlite")).unwrap();
    let truncated = d.path().join("truncated.sqlite");
    std::fs::write(&truncated, &good[..good.len() / 3]).unwrap();
    let out = lanescope().arg("report").arg(&truncated).output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("truncated.sqlite") && !err.contains("panicked"), "{err}");

    let tiny = d.path().join("tiny.sqlite");
    std::fs::write(&tiny, &good[..100]).unwrap();
    assert_bad(&tiny, "truncated");

    // Garbage over the page after the header: the schema or a table can't be read.
    let mut corrupt = good.clone();
    for b in &mut corrupt[100..40_000] {
        *b = 0xA5;
    }
    let path = d.path().join("corrupt.sqlite");
    std::fs::write(&path, &corrupt).unwrap();
    assert_bad(&path, "corrupt");
    let before = snapshot(d.path());
    let _ = lanescope().arg("info").arg(&path).output().unwrap();
    assert_eq!(snapshot(d.path()), before, "nothing written beside the trace");
}

#[test]
fn sqlite_that_is_not_an_nsys_export() {
    let d = TempDir::new().unwrap();
    let p = d.path().join("other.sqlite");
    let c = rusqlite::Connection::open(&p).unwrap();
    c.execute_batch("CREATE TABLE customers (id INTEGER, name TEXT); INSERT INTO customers VALUES (1, 'x');").unwrap();
    drop(c);
    assert_bad(&p, "not an nsys export");
}

#[test]
fn export_without_gpu_activity_opens_and_says_so() {
    let d = TempDir::new().unwrap();
    let p = d.path().join("cpu_only.sqlite");
    let c = rusqlite::Connection::open(&p).unwrap();
    c.execute_batch(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
         INSERT INTO StringIds VALUES (1, 'poll');
         CREATE TABLE OSRT_API (start INT, end INT, eventClass INT, globalTid INT, nameId INT);
         INSERT INTO OSRT_API VALUES (10, 2000, 27, 16777217, 1);",
    )
    .unwrap();
    drop(c);
    lanescope().arg("info").arg(&p).assert().success().stdout(predicate::str::contains("GPU activity"));
    lanescope().arg("report").arg(&p).assert().success().stdout(predicate::str::contains("GPU activity"));
}

#[test]
fn reading_leaves_the_trace_untouched() {
    let d = TempDir::new().unwrap();
    let p = d.path().join("copy.sqlite");
    std::fs::copy(fixture("pageable.sqlite"), &p).unwrap();
    let mtime = std::fs::metadata(&p).unwrap().modified().unwrap();
    let before = snapshot(d.path());
    lanescope().arg("report").arg(&p).assert().success();
    lanescope().arg("info").arg(&p).assert().success();
    lanescope().args(["report", "--format", "json"]).arg(&p).assert().success();
    assert_eq!(snapshot(d.path()), before, "same files, same bytes");
    assert_eq!(std::fs::metadata(&p).unwrap().modified().unwrap(), mtime);
}

#[test]
fn bad_min_gap_is_rejected_by_clap() {
    lanescope()
        .args(["report", "--min-gap", "100"])
        .arg(fixture("pageable.sqlite"))
        .assert()
        .failure()
        .stderr(predicate::str::contains("no unit"));
}

#[test]
fn info_lists_versions_gpus_and_lanes() {
    let c = util::sql(&fixture("pageable.sqlite"));
    let version: String = c
        .query_row("SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_PRODUCT_VERSION'", [], |r| r.get(0))
        .unwrap();
    let gpu: String = c.query_row("SELECT name FROM TARGET_INFO_GPU", [], |r| r.get(0)).unwrap();
    let kernels: i64 = c.query_row("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL", [], |r| r.get(0)).unwrap();
    let out = lanescope().arg("info").arg(fixture("pageable.sqlite")).output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(&version) && text.contains(&gpu), "{text}");
    let kernel_line = text.lines().find(|l| l.contains("kernels s")).unwrap();
    assert!(kernel_line.trim_end().ends_with(&kernels.to_string()), "{kernel_line}");

    let out = lanescope().args(["info", "--format", "json"]).arg(fixture("pageable.sqlite")).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["nsys_version"], version.as_str());
    assert_eq!(v["gpus"][0]["name"], gpu.as_str());
}

#[test]
fn piping_into_head_prints_no_error() {
    // A reader that closes early: the writer gets EPIPE and must end quietly.
    let bin = assert_cmd::cargo::cargo_bin("lanescope");
    let sh = format!(
        "'{}' report --format json '{}' | head -c 10 >/dev/null; '{}' info '{}' | head -n 1 >/dev/null",
        bin.display(),
        fixture("pageable.sqlite").display(),
        bin.display(),
        fixture("pageable.sqlite").display()
    );
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(&sh)
        .env("XDG_CACHE_HOME", crate::util::cache_home())
        .output()
        .unwrap();
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn no_terminal_prints_the_report_of_the_demo() {
    // Without a terminal the viewer falls back to the report (CI, pipes).
    lanescope().assert().success().stdout(predicate::str::contains("demo"));
}

#[test]
fn names_with_escape_codes_never_reach_the_terminal() {
    let d = TempDir::new().unwrap();
    let p = util::hostile_export(d.path());
    for args in [&["report"][..], &["report", "--format", "md"], &["report", "--format", "csv"], &["info"], &[]] {
        let out = lanescope().args(args).arg(&p).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("owned"), "{args:?}: the name is shown, defanged");
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\u{9b}'),
            "{args:?}: raw escape in {text:?}"
        );
    }
    let out = lanescope().args(["report", "--format", "json"]).arg(&p).output().unwrap();
    assert!(!out.stdout.contains(&0x1b) && !out.stdout.contains(&0x07), "JSON escapes control characters");
}

// `--no-cache` goes before or after a command's name (it is the one option that does):
// the same report either way, and no cache entry written; the viewer's own options
// before a command are refused rather than dropped.
#[test]
fn no_cache_goes_before_or_after_the_command() {
    let trace = fixture("pageable.sqlite");
    let home = TempDir::new().unwrap();
    let run = |args: &[&str]| {
        let out = lanescope().args(args).arg(&trace).env("XDG_CACHE_HOME", home.path()).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    let before = run(&["--no-cache", "report", "--format", "json"]);
    let after = run(&["report", "--format", "json", "--no-cache"]);
    assert!(!before.is_empty());
    assert_eq!(before, after);
    assert!(!home.path().join("lanescope").exists(), "--no-cache before the command wrote to the cache");
    run(&["--no-cache", "info"]);
    assert!(!home.path().join("lanescope").exists(), "--no-cache before info wrote to the cache");
    // Without it the same command keeps an entry: the flag above was not ignored.
    run(&["report", "--format", "json"]);
    assert!(home.path().join("lanescope").read_dir().unwrap().count() > 0, "no entry written without --no-cache");
    for viewer_only in [&["--min-gap", "1ms"][..], &["--no-mouse"][..], &["--infer-steps"][..]] {
        lanescope()
            .args(viewer_only)
            .arg("report")
            .arg(&trace)
            .assert()
            .code(2)
            .stderr(predicate::str::contains(viewer_only[0]).and(predicate::str::contains("after the command")));
    }
}
