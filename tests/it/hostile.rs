//! Hostile and broken inputs of issue 21, one test per defect: each builds its input at test
//! time (a mutated copy of a fixture, a generated Kineto file, a stub `nsys`) and checks
//! the answer against the input it built, never against lanescope's own earlier output.

use std::path::{Path, PathBuf};

use rusqlite::Connection;
use tempfile::TempDir;

use crate::util::{fixture, lanescope, sql_i64};
use lanescope::{LaneKind, Options, analyze};

// A writable copy of a committed fixture in a fresh temporary directory.
fn scratch(name: &str) -> (TempDir, PathBuf) {
    let d = TempDir::new().unwrap();
    let p = d.path().join(name);
    std::fs::copy(fixture(name), &p).unwrap();
    (d, p)
}

fn mutate(p: &Path, sql: &str) {
    Connection::open(p).unwrap().execute_batch(sql).unwrap();
}

fn events(t: &lanescope::Trace, gpu: bool) -> usize {
    t.lanes.iter().filter(|l| l.kind.device().is_some() == gpu).map(|l| l.ev.len()).sum()
}

#[test]
fn a_kernel_or_copy_ending_at_i64_max_is_an_outlier_not_an_open_range() {
    let (_d, p) = scratch("pageable.sqlite");
    let gpu_rows = sql_i64(&p, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL")
        + sql_i64(&p, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY")
        + sql_i64(&p, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET");
    let span = sql_i64(&p, "SELECT max(end) - min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL");
    mutate(
        &p,
        "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 9223372036854775807
           WHERE rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL);
         UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET end = 9223372036854775807
           WHERE rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_MEMCPY);",
    );
    let t = lanescope::load(&p).unwrap();
    assert_eq!(t.meta.outliers.0, 2);
    assert_eq!(events(&t, true) as i64, gpu_rows - 2);
    let a = analyze(&t, &Options::default());
    // Busy time fits in the trace (9.2e18 ns before the fix).
    let busy: i64 = a.devices.iter().map(|d| d.busy.total()).sum();
    assert!(busy <= t.meta.end_ns - t.meta.start_ns && busy <= span, "busy {busy} ns");
}

#[test]
fn a_far_string_id_sizes_no_allocation() {
    let (_d, p) = scratch("pageable.sqlite");
    let far = 1_073_741_823i64;
    mutate(
        &p,
        &format!(
            "INSERT INTO StringIds VALUES ({far}, 'far');
             UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET shortName = {far}
               WHERE rowid = (SELECT min(rowid) FROM CUPTI_ACTIVITY_KIND_KERNEL);"
        ),
    );
    // 16 bytes per id up to the far one was 17 GB: under a 3 GiB address-space limit the
    // load aborted. Now it fits and the far name resolves.
    let bin = assert_cmd::cargo::cargo_bin("lanescope");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"ulimit -v 3145728 && exec "$0" info --format json "$1""#)
        .arg(&bin)
        .arg(&p)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let t = lanescope::load(&p).unwrap();
    let names: Vec<&str> = t
        .lanes
        .iter()
        .filter(|l| matches!(l.kind, LaneKind::Kernels { .. }))
        .flat_map(|l| l.ev.name.iter().map(|&n| t.strings.get(n)))
        .collect();
    assert_eq!(names.iter().filter(|&&n| n == "far").count(), 1);
}

#[test]
fn string_ids_rows_with_a_non_integer_id_are_skipped() {
    let (_d, p) = scratch("pageable.sqlite");
    // nsys declares `id INTEGER PRIMARY KEY`; a table without it takes any value.
    mutate(
        &p,
        "ALTER TABLE StringIds RENAME TO s0;
         CREATE TABLE StringIds (id, value);
         INSERT INTO StringIds SELECT id, value FROM s0;
         DROP TABLE s0;
         INSERT INTO StringIds VALUES ('x', 'text id'), (2.5, 'fraction'), (-3, 'negative'), (NULL, 'null'),
           (X'00', 'blob');",
    );
    let t = lanescope::load(&p).unwrap();
    let want = crate::util::sql(&p)
        .prepare(
            "SELECT count(DISTINCT s.value) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName",
        )
        .unwrap()
        .query_row([], |r| r.get::<_, i64>(0))
        .unwrap();
    let mut names: Vec<&str> = t
        .lanes
        .iter()
        .filter(|l| matches!(l.kind, LaneKind::Kernels { .. }))
        .flat_map(|l| l.ev.name.iter().map(|&n| t.strings.get(n)))
        .collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len() as i64, want);
    assert!(names.iter().all(|n| !n.is_empty() && !["text id", "fraction", "negative"].contains(n)), "{names:?}");
    assert!(lanescope().arg("report").arg(&p).output().unwrap().status.success());
}

// Raw DEL, C1 controls and bidi controls (override, isolate, Arabic letter mark).
const CONTROLS: [char; 6] = ['\u{7f}', '\u{9b}', '\u{85}', '\u{202e}', '\u{2066}', '\u{61c}'];

#[test]
fn every_json_writer_escapes_del_c1_and_bidi_controls() {
    let d = TempDir::new().unwrap();
    // In the file name (every JSON output carries the path) and in the GPU name.
    let name: String = format!("gpu{}.sqlite", CONTROLS.iter().collect::<String>());
    let p = d.path().join(&name);
    std::fs::copy(fixture("pageable.sqlite"), &p).unwrap();
    mutate(&p, "UPDATE TARGET_INFO_GPU SET name = 'GPU' || char(127) || char(155) || '31m' || char(8238) || 'RLO'");
    let runs: [&[&str]; 4] = [
        &["info", "--format", "json"],
        &["report", "--format", "json"],
        &["diff", "--format", "json"],
        &["bench", "--format", "json", "--size", "80x24"],
    ];
    for args in runs {
        let mut c = lanescope();
        c.args(args).arg(&p);
        if args[0] == "diff" {
            c.arg(&p);
        }
        let out = c.output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(!text.contains(CONTROLS), "{args:?} writes a raw control");
        // Escaped, not lost: the parsed output holds the file name as it is.
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        let paths = serde_json::to_string(&v).unwrap();
        let escaped = serde_json::to_string(&p.display().to_string()).unwrap();
        assert!(paths.contains(&escaped), "{args:?}: no {escaped} in {paths:.300}");
    }
    let info: serde_json::Value =
        serde_json::from_slice(&lanescope().args(["info", "--format", "json"]).arg(&p).output().unwrap().stdout)
            .unwrap();
    assert_eq!(info["gpus"][0]["name"], "GPU\u{7f}\u{9b}31m\u{202e}RLO");
}

#[test]
fn one_file_under_several_spellings_is_one_input() {
    let d = TempDir::new().unwrap();
    let p = d.path().join("a.sqlite");
    std::fs::copy(fixture("pageable.sqlite"), &p).unwrap();
    std::os::unix::fs::symlink(&p, d.path().join("link.sqlite")).unwrap();
    std::fs::create_dir(d.path().join("sub")).unwrap();
    let abs = p.canonicalize().unwrap();
    let out = lanescope()
        .current_dir(d.path())
        .args(["report", "--format", "json", "a.sqlite", "./a.sqlite", "link.sqlite", "sub/../a.sqlite"])
        .arg(&abs)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.get("traces").is_none(), "several ranks: {}", v["traces"]);
    assert_eq!(v["totals"]["kernels"], sql_i64(&p, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"));
    assert_eq!(v["trace"]["path"], "a.sqlite");
    // A glob and the file itself: still one.
    let out = lanescope().current_dir(d.path()).args(["info", "--format", "json", "a.sqlite", "a*.sqlite"]).output();
    let v: serde_json::Value = serde_json::from_slice(&out.unwrap().stdout).unwrap();
    assert!(v.get("traces").is_none_or(|t| t.as_array().is_none_or(Vec::is_empty)), "{}", v["traces"]);
}

// A Kineto trace: `events` (JSON objects) and one kernel with its launch, gzipped.
fn kineto_gz(dir: &Path, name: &str, events: &[&[u8]]) -> PathBuf {
    use std::io::Write;
    let p = dir.join(name);
    let mut g = flate2::write::GzEncoder::new(std::fs::File::create(&p).unwrap(), flate2::Compression::fast());
    g.write_all(b"{\"traceEvents\": [").unwrap();
    for e in events {
        g.write_all(e).unwrap();
        g.write_all(b",\n").unwrap();
    }
    g.write_all(
        br#"{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":10,"dur":2,"args":{"correlation":5}},
           {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":20,"dur":3,"args":{"device":0,"stream":7,"correlation":5}}]}"#,
    )
    .unwrap();
    g.finish().unwrap();
    p
}

#[test]
fn a_kineto_string_of_64_mib_loads_in_linear_time_and_is_counted() {
    let d = TempDir::new().unwrap();
    // One name of 64 MiB: before, each 1 MiB refill parsed the event again from its start
    // (2 s here, 123 s at 512 MiB); now it is skipped by one streaming pass, unheld.
    let mut big = br#"{"ph":"X","cat":"cpu_op","pid":1,"tid":1,"ts":1,"dur":1,"name":""#.to_vec();
    big.extend(std::iter::repeat_n(b'A', 64 << 20));
    big.extend_from_slice(b"\"}");
    let p = kineto_gz(d.path(), "str.json.gz", &[&big]);
    let t = lanescope::load(&p).unwrap();
    assert_eq!(t.meta.unreadable_events, 1);
    let kernels: usize =
        t.lanes.iter().filter(|l| matches!(l.kind, LaneKind::Kernels { .. })).map(|l| l.ev.len()).sum();
    assert_eq!(kernels, 1);
}

#[test]
fn kineto_events_with_an_unreadable_ts_are_counted_in_info_and_report() {
    let d = TempDir::new().unwrap();
    let bad: [&[u8]; 5] = [
        br#"{"ph":"X","cat":"kernel","name":"a","pid":0,"tid":7,"ts":"soon","dur":1,"args":{"device":0,"stream":7}}"#,
        br#"{"ph":"X","cat":"kernel","name":"b","pid":0,"tid":7,"ts":NaN,"dur":1,"args":{"device":0,"stream":7}}"#,
        br#"{"ph":"X","cat":"kernel","name":"c","pid":0,"tid":7,"ts":1e308,"dur":1,"args":{"device":0,"stream":7}}"#,
        br#"{"ph":"X","cat":"kernel","name":"d","pid":0,"tid":7,"ts":0x10,"dur":1,"args":{"device":0,"stream":7}}"#,
        br#"{"ph":"X","cat":"kernel","name":"e","pid":0,"tid":7,"ts":100000000000000000000000000,"dur":1,"args":{"device":0,"stream":7}}"#,
    ];
    let p = kineto_gz(d.path(), "ts.json.gz", &bad);
    let text = |args: &[&str]| {
        let out = lanescope().args(args).arg(&p).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    assert!(text(&["info"]).contains("unreadable 5 events skipped"), "{}", text(&["info"]));
    assert!(text(&["report"]).contains("5 events skipped as unreadable"), "{}", text(&["report"]));
    let v: serde_json::Value = serde_json::from_str(&text(&["report", "--format", "json"])).unwrap();
    assert_eq!((v["trace"]["unreadable_events"].as_u64(), v["totals"]["kernels"].as_u64()), (Some(5), Some(1)));
    let v: serde_json::Value = serde_json::from_str(&text(&["info", "--format", "json"])).unwrap();
    assert_eq!(v["unreadable_events"], 5);
}
