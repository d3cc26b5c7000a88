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
    t.lanes.iter().filter(|l| l.kind.shown_with_gpu().is_some() == gpu).map(|l| l.ev.len()).sum()
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
        .env("XDG_CACHE_HOME", crate::util::cache_home())
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

// An `.nsys-rep` "report", a cache, and a stub nsys running `body` (`$7` is the output).
struct Rep {
    dir: TempDir,
    rep: PathBuf,
    stub: PathBuf,
}

impl Rep {
    fn new(body: &str) -> Rep {
        use std::os::unix::fs::PermissionsExt;
        let dir = TempDir::new().unwrap();
        let rep = dir.path().join("run.nsys-rep");
        std::fs::write(&rep, b"a report; nsys is a stub").unwrap();
        let stub = dir.path().join("nsys");
        std::fs::write(&stub, format!("#!/bin/sh\necho $$ > \"$STUB_PID\"\n{body}\n")).unwrap();
        std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::create_dir_all(dir.path().join("cache/lanescope")).unwrap();
        Rep { dir, rep, stub }
    }

    fn cache(&self) -> PathBuf {
        self.dir.path().join("cache/lanescope")
    }

    fn command(&self) -> std::process::Command {
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("lanescope"));
        c.args(["info"]).arg(&self.rep).env("NO_COLOR", "1");
        c.env("LANESCOPE_NSYS", &self.stub).env("XDG_CACHE_HOME", self.dir.path().join("cache"));
        c.env("STUB_PID", self.dir.path().join("pid")).env("STUB_EXPORT", fixture("d2h.sqlite"));
        c
    }

    // The stub's pid, once it started.
    fn nsys_pid(&self) -> u32 {
        let f = self.dir.path().join("pid");
        for _ in 0..500 {
            if let Some(pid) = std::fs::read_to_string(&f).ok().and_then(|s| s.trim().parse().ok()) {
                return pid;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("the stub nsys never started");
    }

    fn temporaries(&self) -> Vec<String> {
        let names = std::fs::read_dir(self.cache()).unwrap().map(|e| e.unwrap().file_name());
        names.map(|n| n.to_string_lossy().into_owned()).filter(|n| n.contains(".tmp.")).collect()
    }
}

fn alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

// Wait for `child` with a deadline; kill it and fail past the deadline.
fn wait(mut child: std::process::Child, secs: u64) -> std::process::Output {
    let t0 = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed().as_secs() > secs {
            let _ = child.kill();
            panic!("lanescope still runs after {secs} s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

#[test]
fn a_hanging_nsys_is_stopped_after_lanescope_nsys_timeout() {
    let r = Rep::new("echo partial > \"$7\"\nexec sleep 60");
    let child = r.command().env("LANESCOPE_NSYS_TIMEOUT", "1").stderr(std::process::Stdio::piped()).spawn().unwrap();
    let out = wait(child, 20);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("waiting for nsys (pid") && err.contains("at most 1 s"), "{err}");
    assert!(err.lines().last().unwrap().contains("LANESCOPE_NSYS_TIMEOUT to allow more"), "{err}");
    assert!(!alive(r.nsys_pid()), "nsys still runs");
    assert_eq!(r.temporaries(), Vec::<String>::new());
}

#[test]
fn a_signal_stops_nsys_and_removes_its_temporary_files() {
    use std::os::unix::process::ExitStatusExt;
    for sig in [15, 2, 1] {
        let r = Rep::new("echo partial > \"$7\"\nexec sleep 60");
        let child = r.command().stderr(std::process::Stdio::piped()).spawn().unwrap();
        let nsys = r.nsys_pid();
        assert!(!r.temporaries().is_empty());
        let killed = std::process::Command::new("kill").arg(format!("-{sig}")).arg(child.id().to_string()).status();
        assert!(killed.unwrap().success());
        let out = wait(child, 20);
        // Ended as the signal ends a process, after cleaning up.
        assert_eq!(out.status.signal(), Some(sig), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(!alive(nsys), "signal {sig}: nsys still runs");
        assert_eq!(r.temporaries(), Vec::<String>::new(), "signal {sig}");
    }
}

#[test]
fn stale_temporaries_of_dead_exports_are_swept() {
    let r = Rep::new("cp \"$STUB_EXPORT\" \"$7\"");
    // No process has pid 999999999 (Linux pids stay under 2^22); this test's own is alive.
    let stale = r.cache().join(".old-0123456789abcdef-0123456789abcdef-999999999.tmp.sqlite");
    let live = r.cache().join(format!(".old-0123456789abcdef-0123456789abcdef-{}.tmp.sqlite", std::process::id()));
    std::fs::write(&stale, b"left by a lanescope killed with SIGKILL").unwrap();
    std::fs::write(&live, b"another lanescope exporting now").unwrap();
    let out = r.command().output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!stale.exists() && live.exists());
}

#[test]
fn a_huge_nsys_error_line_is_cut_and_kept_in_the_cache() {
    let r = Rep::new("head -c 20000000 /dev/zero | tr '\\0' x >&2\necho >&2\nexit 3");
    let out = r.command().output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8(out.stderr).unwrap();
    let line = err.lines().last().unwrap();
    assert!(line.len() < 1000, "{} bytes", line.len());
    assert!(line.contains(&format!("{}…", "x".repeat(200))) && !line.contains(&"x".repeat(201)), "{line}");
    let log = line.rsplit_once("its whole output: ").unwrap().1.split(')').next().unwrap();
    assert!(std::fs::metadata(log).unwrap().len() >= 20_000_000, "{log}");
    assert_eq!(r.temporaries(), Vec::<String>::new());
}
