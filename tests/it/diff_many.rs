//! `diff` of runs with many distinct phases (issue 36, item 1): the phases listed are
//! capped, the rest summed, and the time and output stay near `report`'s.

use std::path::Path;
use std::time::Instant;

use tempfile::TempDir;

use crate::util::lanescope;

/// A name of letters only for `i` (digits would be grouped: `req 7` is phase `req N`).
fn letters(mut i: usize) -> String {
    let mut s = String::from("req-");
    loop {
        s.push(char::from(b'a' + (i % 26) as u8));
        i /= 26;
        if i == 0 {
            return s;
        }
    }
}

/// An export with `n` NVTX ranges of distinct names on one thread, range `i` lasting
/// `wall(i)` ns from `i` ms, each with one kernel launched in it (a gap between each).
pub(crate) fn many_phases(p: &Path, n: usize, wall: impl Fn(usize) -> i64) {
    let mut c = rusqlite::Connection::open(p).unwrap();
    c.execute_batch(crate::util::MIN_SCHEMA).unwrap();
    let tx = c.transaction().unwrap();
    let (gpid, gtid) = (7i64 << 24, (7i64 << 24) | 7);
    tx.execute("INSERT INTO StringIds VALUES (1, 'kernel'), (2, 'cudaLaunchKernel_v7000')", []).unwrap();
    tx.execute("INSERT INTO PROCESSES VALUES (?1, 7, 'python3')", [gpid]).unwrap();
    {
        let mut nvtx = tx.prepare("INSERT INTO NVTX_EVENTS VALUES (?1, ?2, 59, ?3, ?4, NULL, 0)").unwrap();
        let mut k = tx.prepare("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?1, ?2, 0, 7, ?3, ?4, 1, 1)").unwrap();
        let mut api = tx.prepare("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?1, ?2, 0, ?3, ?4, 2)").unwrap();
        for i in 0..n {
            let t = i as i64 * 1_000_000;
            nvtx.execute(rusqlite::params![t, t + wall(i), letters(i), gtid]).unwrap();
            api.execute(rusqlite::params![t + 10_000, t + 20_000, gtid, i as i64 + 1]).unwrap();
            k.execute(rusqlite::params![t + 100_000, t + 300_000, i as i64 + 1, gpid]).unwrap();
        }
    }
    tx.commit().unwrap();
}

// Issue 36, item 1: a diff of runs with thousands of distinct range names lists the 50
// longest, sums the rest, and takes about the time of `report` on the same files; with
// --all-phases every phase is listed; a phase a --fail-if names is listed past the cap.
#[test]
fn a_diff_of_many_distinct_phases_is_bounded() {
    let d = TempDir::new().unwrap();
    let n = 2000;
    // Distinct walls: range i lasts 100 µs + i ns (the longest are the last ones).
    let (b, a) = (d.path().join("b.sqlite"), d.path().join("a.sqlite"));
    many_phases(&b, n, |i| 100_000 + i as i64);
    many_phases(&a, n, |i| 200_000 + i as i64);
    let t0 = Instant::now();
    let report = lanescope().args(["report", "--format", "json"]).arg(&b).output().unwrap();
    let report_s = t0.elapsed().as_secs_f64();
    assert!(report.status.success());
    let t0 = Instant::now();
    let out = lanescope().args(["diff", "--format", "json"]).arg(&b).arg(&a).output().unwrap();
    let diff_s = t0.elapsed().as_secs_f64();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // Two exports loaded and analyzed: about twice one report.
    assert!(diff_s < 3.0 * report_s + 2.0, "diff {diff_s:.2} s, report {report_s:.2} s");
    assert!(out.stdout.len() < 4 << 20, "{} bytes", out.stdout.len());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let phases = v["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 50);
    // The listed ones are the 50 longest: the last 50 names, by SQL over BEFORE.
    let db = crate::util::sql(&b);
    let mut q = db.prepare("SELECT text FROM NVTX_EVENTS ORDER BY end - start DESC LIMIT 50").unwrap();
    let mut longest: Vec<String> = q.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
    let mut listed: Vec<String> = phases.iter().map(|p| p["name"].as_str().unwrap().to_string()).collect();
    longest.sort();
    listed.sort();
    assert_eq!(listed, longest);
    let other = &v["other_phases"];
    assert_eq!(other["phases"], n - 50);
    let rest_wall = crate::util::sql_i64(
        &b,
        "SELECT sum(end - start) FROM NVTX_EVENTS WHERE rowid NOT IN \
         (SELECT rowid FROM NVTX_EVENTS ORDER BY end - start DESC LIMIT 50)",
    );
    assert_eq!(other["before"]["wall_ns"].as_i64(), Some(rest_wall));
    assert_eq!(other["before"]["count"].as_i64(), Some(n as i64 - 50));
    // A phase --fail-if names is listed (and evaluated) though short.
    let short = letters(3);
    let cond = format!("phase:{short}.wall_ns>+1000%");
    let out = lanescope().args(["diff", "--format", "json", "--fail-if", &cond]).arg(&b).arg(&a).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["phases"].as_array().unwrap().iter().any(|p| p["name"] == short.as_str()));
    let all = lanescope().args(["diff", "--format", "json", "--all-phases"]).arg(&b).arg(&a).output().unwrap();
    let v: serde_json::Value = serde_json::from_slice(&all.stdout).unwrap();
    assert_eq!(v["phases"].as_array().unwrap().len(), n);
    assert!(v.get("other_phases").is_none());
}

// The inputs of SECURITY.md's issue-36 figures: `B.sqlite` and `A.sqlite` with 100,000
// distinct phases each, in `$MANY_PHASES_DIR` (`cargo test -- --ignored write_many_phases`).
#[test]
#[ignore = "writes SECURITY.md's 100,000-phase inputs where MANY_PHASES_DIR says"]
fn write_many_phases() {
    let Some(dir) = std::env::var_os("MANY_PHASES_DIR") else {
        eprintln!("skipped: set MANY_PHASES_DIR to the folder to write B.sqlite and A.sqlite in");
        return;
    };
    let dir = Path::new(&dir);
    many_phases(&dir.join("B.sqlite"), 100_000, |i| 100_000 + i as i64);
    many_phases(&dir.join("A.sqlite"), 100_000, |i| 200_000 + i as i64);
}
