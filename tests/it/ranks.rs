//! Several exports on one timeline (ranks), the straggler finding, and `.nsys-rep`
//! reports exported through a stub nsys into the cache.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::util::{fixture, lanescope, sql_i64};
use rusqlite::Connection;
use serde_json::Value;
use tempfile::TempDir;

fn json(args: &[&str], files: &[&Path]) -> Value {
    let out = lanescope().args(args).args(files).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

const MS: i64 = 1_000_000;
const STEPS: i64 = 10;
const PID: i64 = 1000;
/// Session start of rank 0 (UTC epoch ns); rank 1's starts 5 ms later.
const UTC0: i64 = 1_796_000_000_000_000_000;

/// A synthetic DDP rank: per step (50 ms apart, from 100 ms on the common clock) a
/// `forward` of `fwd_ms` with a compute kernel, then a `backward` whose NCCL all-reduce
/// kernel starts 2 ms after `forward` ends and ends 2 ms after the slowest rank's starts
/// (`slow_ms` is the slowest rank's forward). Times in the file are relative to its own
/// session start, `utc`; `utc = None` leaves `TARGET_INFO_SESSION_START_TIME` out.
fn rank_export(dir: &Path, name: &str, rank: u32, utc: Option<i64>, fwd_ms: i64, slow_ms: i64) -> PathBuf {
    let p = dir.join(name);
    let c = Connection::open(&p).unwrap();
    c.execute_batch(crate::util::MIN_SCHEMA).unwrap();
    c.execute_batch(
        "CREATE TABLE META_DATA_CAPTURE (name TEXT, value TEXT);
         CREATE TABLE TARGET_INFO_SYSTEM_ENV (globalVid INT, devStateName TEXT, name TEXT, nameEnum INT, value TEXT);
         INSERT INTO StringIds VALUES (1, 'gemm'), (2, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL'),
           (3, 'cudaLaunchKernel_v7000');
         INSERT INTO TARGET_INFO_GPU VALUES (0, 'NVIDIA H200');
         INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES (0, 'x', 'Hostname', 0, 'node0');",
    )
    .unwrap();
    c.execute("INSERT INTO PROCESSES VALUES (?1, ?2, 'python3')", [PID << 24, PID]).unwrap();
    c.execute(
        "INSERT INTO META_DATA_CAPTURE VALUES ('PROCESS_0:ENVIRONMENT_VARIABLE', ?1), \
         ('PROCESS_0:ENVIRONMENT_VARIABLE', 'LOCAL_RANK=\"7\"')",
        [format!("RANK=\"{rank}\"")],
    )
    .unwrap();
    let shift = utc.map_or(5 * MS * i64::from(rank), |u| u - UTC0);
    if let Some(u) = utc {
        c.execute_batch("CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INT, utcTime TEXT, localTime TEXT)")
            .unwrap();
        c.execute("INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (?1, '', '')", [u]).unwrap();
    }
    let (gpid, gtid) = (PID << 24, (PID << 24) | PID);
    for k in 0..STEPS {
        let t = 100 * MS + k * 50 * MS - shift;
        let f = fwd_ms * MS;
        let nvtx = |s: i64, e: i64, text: &str| {
            c.execute(
                "INSERT INTO NVTX_EVENTS VALUES (?1, ?2, 59, ?3, ?4, NULL, 0)",
                rusqlite::params![s, e, text, gtid],
            )
            .unwrap();
        };
        nvtx(t, t + 45 * MS, &format!("step {k}"));
        nvtx(t, t + f, "forward");
        nvtx(t + f, t + 45 * MS, "backward");
        let corr = 2 * k + 1;
        let kernel = |s: i64, e: i64, corr: i64, name: i64| {
            c.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (?1, ?2, 0, 7, ?3, ?4, ?5, ?5)",
                [s, e, corr, gpid, name],
            )
            .unwrap();
            c.execute(
                "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?1, ?2, 0, ?3, ?4, 3)",
                [s - MS / 2, s - MS / 4, gtid, corr],
            )
            .unwrap();
        };
        kernel(t + MS, t + f - MS, corr, 1);
        kernel(t + f + 2 * MS, t + slow_ms * MS + 4 * MS, corr + 1, 2);
    }
    drop(c);
    p
}

/// Rank 1 (named second, given first) is slow in `forward`: 28 ms against 10 ms.
pub(crate) fn two_ranks(dir: &Path, clocks: bool) -> [PathBuf; 2] {
    let r1 = rank_export(dir, "b_rank1.sqlite", 1, clocks.then_some(UTC0 + 5 * MS), 28, 28);
    let r0 = rank_export(dir, "a_rank0.sqlite", 0, clocks.then_some(UTC0), 10, 28);
    [r1, r0]
}

#[test]
fn ranks_are_aligned_on_session_start_and_the_straggler_is_named() {
    let d = TempDir::new().unwrap();
    let [r1, r0] = two_ranks(d.path(), true);
    let v = json(&["report", "--format", "json"], &[&r1, &r0]);
    let traces = v["traces"].as_array().unwrap();
    assert_eq!(traces.len(), 2);
    // Ranks from RANK in the environment, in rank order whatever the argument order.
    assert_eq!(traces[0]["rank"], 0);
    assert_eq!(traces[0]["rank_source"], "RANK");
    assert!(traces[0]["path"].as_str().unwrap().ends_with("a_rank0.sqlite"));
    assert_eq!(traces[1]["offset_ns"], 5 * MS);
    assert_eq!(traces[1]["aligned_on"], "session-start");
    assert_eq!(traces[1]["host"], "node0");
    // Pids collide (1000 in both) and both use GPU 0: rank 1 gets ranges of its own.
    assert_eq!(traces[0]["pids"], serde_json::json!([PID]));
    assert_eq!(traces[1]["pids"], serde_json::json!([(1 << 24) | PID]));
    assert_eq!(traces[1]["gpus"], serde_json::json!([{"device": 256, "gpu": 0}]));
    for (t, p) in traces.iter().zip([&r0, &r1]) {
        let kernels = sql_i64(p, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL");
        assert_eq!(t["totals"]["kernels"], kernels);
        let nvtx = sql_i64(p, "SELECT count(*) FROM NVTX_EVENTS WHERE eventType = 59");
        assert_eq!(t["totals"]["nvtx_ranges"], nvtx);
        let fwd = t["phases"].as_array().unwrap().iter().find(|x| x["name"] == "forward").unwrap();
        assert_eq!(fwd["count"], STEPS);
    }
    assert_eq!(v["totals"]["kernels"], 4 * STEPS);
    // Rank 0 waits from its all-reduce start (12 ms into the step) to rank 1's (30 ms).
    let c = &v["collectives"];
    assert_eq!(c["count"], STEPS);
    let s = &c["straggler"];
    assert_eq!(s["rank"], 1);
    assert_eq!((s["steps"].as_i64(), s["straggler_steps"].as_i64()), (Some(STEPS - 1), Some(STEPS - 1)));
    assert_eq!(s["phase"], "forward");
    assert_eq!((s["straggler_phase_ns"].as_i64(), s["others_phase_ns"].as_i64()), (Some(28 * MS), Some(10 * MS)));
    assert_eq!(s["wait_per_step_ns"], 18 * MS);
    assert_eq!(s["lost_ns"], 18 * MS * (STEPS - 1));
    assert_eq!(s["collective"], "ncclAllReduce");
    let dev = v["devices"].as_array().unwrap();
    assert_eq!((dev[0]["rank"].as_i64(), dev[0]["collective_wait_ns"].as_i64()), (Some(0), Some(18 * MS * STEPS)));
    assert_eq!(dev[1]["collective_wait_ns"], 0);
    let f = v["findings"].as_array().unwrap().iter().find(|f| f["rule"] == "straggler").unwrap();
    let msg = f["message"].as_str().unwrap();
    assert!(
        msg.starts_with(
            "straggler: rank 1 in 9 of 9 steps, its `forward` takes 28.0 ms against 10.0 ms on the others; \
             they wait 18.0 ms per step in ncclAllReduce"
        ),
        "{msg}"
    );
    // Labels carry the rank.
    let out = lanescope().arg("report").arg(&r0).arg(&r1).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("rank 1 · GPU 0 NVIDIA H200"), "{text}");
    assert!(text.contains("waiting in collectives"), "{text}");
    assert!(text.contains("Phases of rank 1"), "{text}");
}

#[test]
fn without_session_starts_the_ranks_are_aligned_on_their_first_step() {
    let d = TempDir::new().unwrap();
    let [r1, r0] = two_ranks(d.path(), false);
    let out = lanescope().args(["report", "--format", "json"]).arg(&r0).arg(&r1).output().unwrap();
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("clocks cannot be aligned") && err.contains("first step"), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["traces"][1]["aligned_on"], "first-step");
    assert_eq!(v["traces"][1]["offset_ns"], 5 * MS);
    assert_eq!(v["collectives"]["straggler"]["rank"], 1);
}

#[test]
fn a_directory_or_a_glob_gives_every_export_in_it() {
    let d = TempDir::new().unwrap();
    two_ranks(d.path(), true);
    let a = json(&["info", "--format", "json"], &[d.path()]);
    assert_eq!(a["traces"].as_array().unwrap().len(), 2);
    let glob = d.path().join("*_rank?.sqlite");
    let b = json(&["info", "--format", "json"], &[&glob]);
    assert_eq!(a["events"], b["events"]);
    let none = d.path().join("*.nope");
    let out = lanescope().arg("report").arg(&none).output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no nsys export") && err.contains("*.nope"), "{err}");
    // One bad input among good ones: one line naming it.
    let bad = d.path().join("c_bad.sqlite");
    std::fs::write(&bad, "text").unwrap();
    let out = lanescope().arg("report").arg(d.path()).output().unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(err.contains("c_bad.sqlite") && err.contains("not a SQLite database") && !err.contains("panicked"));
}

#[test]
fn real_exports_merge_with_per_rank_totals_matching_sql() {
    let (a, b) = (fixture("pageable.sqlite"), fixture("pinned.sqlite"));
    let v = json(&["report", "--format", "json"], &[&a, &b]);
    let utc = |p: &Path| sql_i64(p, "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME");
    let traces = v["traces"].as_array().unwrap();
    let origin = utc(&a).min(utc(&b));
    let mut kernels = 0;
    for (t, p) in traces.iter().zip([&a, &b]) {
        assert_eq!(t["rank_source"], "file order");
        assert_eq!(t["offset_ns"], utc(p) - origin);
        let k = sql_i64(p, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL");
        assert_eq!(t["totals"]["kernels"], k);
        kernels += k;
        let m = sql_i64(p, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY");
        assert_eq!(t["totals"]["memcpy"], m);
        let first = sql_i64(p, "SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL");
        assert!(t["start_ns"].as_i64().unwrap() <= first + utc(p) - origin);
    }
    assert_eq!(v["totals"]["kernels"], kernels);
    assert_eq!(v["devices"].as_array().unwrap().len(), 2);
    assert!(v["findings"].as_array().unwrap().iter().all(|f| f["rule"] != "straggler"));
    // One input: no `traces`, as before.
    let one = json(&["report", "--format", "json"], &[&a]);
    assert!(one.get("traces").is_none() && one.get("collectives").is_none());
    assert_eq!(one["devices"][0]["collective_wait_ns"], 0);
}

// A stub nsys that checks its arguments, counts its calls and copies a known export.
fn stub_nsys(bin: &Path) {
    std::fs::create_dir_all(bin).unwrap();
    let script = r#"#!/bin/sh
echo "$*" >> "$STUB_CALLS"
if [ "$1" != export ] || [ "$2" != --type ] || [ "$3" != sqlite ] || [ "$4" != --force-overwrite ] \
   || [ "$5" != true ] || [ "$6" != --output ] || [ "$#" -ne 8 ]; then
  echo "stub nsys: bad arguments: $*" >&2; exit 9
fi
case "$7" in "$XDG_CACHE_HOME"/lanescope/*.sqlite) ;; *) echo "stub nsys: bad output $7" >&2; exit 9;; esac
[ "$8" = "$STUB_REPORT" ] || { echo "stub nsys: bad report $8" >&2; exit 9; }
cp "$STUB_EXPORT" "$7"
"#;
    let p = bin.join("nsys");
    std::fs::write(&p, script).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn nsys_rep_is_exported_once_into_the_cache_and_rebuilt_when_it_changes() {
    let d = TempDir::new().unwrap();
    let (bin, cache, reports) = (d.path().join("bin"), d.path().join("cache"), d.path().join("reports"));
    stub_nsys(&bin);
    std::fs::create_dir_all(&reports).unwrap();
    let rep = reports.join("run.nsys-rep");
    std::fs::write(&rep, b"not really a report, but nsys is a stub").unwrap();
    let calls = d.path().join("calls");
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let run = |with_nsys: bool| {
        // The export's cache alone: the column cache would skip the export once it holds the report.
        let mut c = lanescope();
        c.args(["info", "--no-cache", "--format", "json"]).arg(&rep).env("XDG_CACHE_HOME", &cache);
        c.env("PATH", if with_nsys { path.as_str() } else { "/nonexistent" });
        c.env("STUB_CALLS", &calls).env("STUB_REPORT", &rep).env("STUB_EXPORT", fixture("d2h.sqlite"));
        c.output().unwrap()
    };
    let n_calls = || std::fs::read_to_string(&calls).map_or(0, |s| s.lines().count());
    let entries = || {
        let mut v: Vec<String> = std::fs::read_dir(cache.join("lanescope"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    };
    let out = run(true);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("exporting run.nsys-rep"));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["path"], rep.display().to_string());
    let kernels = sql_i64(&fixture("d2h.sqlite"), "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL") as usize;
    let lanes = v["lanes"].as_array().unwrap();
    let seen: u64 = lanes
        .iter()
        .filter(|l| l["lane"].as_str().unwrap().starts_with("kernels"))
        .map(|l| l["events"].as_u64().unwrap())
        .sum();
    assert_eq!(seen as usize, kernels);
    assert_eq!(n_calls(), 1);
    let first = entries();
    assert_eq!(first.len(), 1, "{first:?}");
    assert!(first[0].starts_with("run-") && first[0].ends_with(".sqlite"));
    // Reused: no second export, and nothing beside the report.
    assert!(run(true).status.success());
    assert_eq!(n_calls(), 1);
    assert_eq!(std::fs::read_dir(&reports).unwrap().count(), 1);
    // A valid cached export is used without nsys.
    let out = run(false);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The report changes: exported again, the old entry goes.
    std::fs::write(&rep, b"a newer report, of another size").unwrap();
    assert!(run(true).status.success());
    assert_eq!(n_calls(), 2);
    let second = entries();
    assert_eq!(second.len(), 1);
    assert_ne!(first, second);
    // A corrupt entry is rebuilt.
    std::fs::write(cache.join("lanescope").join(&second[0]), vec![0xA5u8; 8192]).unwrap();
    assert!(run(true).status.success());
    assert_eq!(n_calls(), 3);
    assert_eq!(entries(), second);
    assert_eq!(std::fs::read_dir(&reports).unwrap().count(), 1, "nothing written beside the report");
    // No nsys and no cached export: one line saying how to export.
    std::fs::write(&rep, b"yet another report").unwrap();
    let out = run(false);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("run.nsys-rep") && err.contains("nsys export --type sqlite"), "{err}");
    // nsys failing: one line, the temporary file removed.
    let out = {
        let mut c = lanescope();
        c.args(["report"]).arg(&rep).env("XDG_CACHE_HOME", &cache).env("PATH", &path);
        c.env("STUB_CALLS", &calls).env("STUB_REPORT", "/elsewhere").env("STUB_EXPORT", fixture("d2h.sqlite"));
        c.output().unwrap()
    };
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("nsys export --type sqlite failed") && err.contains("bad report"), "{err}");
    assert!(entries().iter().all(|e| !e.contains("tmp")), "{:?}", entries());
}

#[test]
fn the_viewer_draws_collective_wait_on_the_waiting_rank() {
    use lanescope::{Depth, Theme};
    // Rank 1 is slow in `forward`: rank 0 waits in ncclAllReduce, rank 1 hardly at all.
    let d = TempDir::new().unwrap();
    let files = two_ranks(d.path(), true).to_vec();
    let t = lanescope::load(&lanescope::group_inputs(&files)).unwrap();
    let a = lanescope::analyze(&t, &lanescope::Options::default());
    let mut app = lanescope::App::new(t, a, (160, 30));
    app.set_theme(Theme::new(Depth::Mono));
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(160, 30)).unwrap();
    term.draw(|f| lanescope::draw(f, &app)).unwrap();
    let buf = term.backend().buffer();
    let row = |label: &str| -> String {
        (0..30u16)
            .map(|y| (0..160u16).map(|x| buf[(x, y)].symbol().to_string()).collect::<String>())
            .find(|l| l.contains(label))
            .unwrap_or_default()
    };
    let waits = |l: &str| l.chars().filter(|&c| c == '≈').count();
    let (r0, r1) = (row("rank 0 · GPU 0"), row("rank 1 · GPU 0"));
    assert!(waits(&r0) > 0, "{r0}");
    assert!(waits(&r0) > waits(&r1), "{r0}\n{r1}");
}
