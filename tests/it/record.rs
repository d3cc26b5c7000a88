//! `lanescope record` with a stub `nsys`: the arguments it gets, the exit code passed
//! through, the report never overwritten without `--force`, the report on stdout, Ctrl-C.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use tempfile::TempDir;

use crate::util::{fixture, sql_i64};

// The stub: appends its arguments to `$STUB_ARGS` (one line per run); `export` copies the
// fixture to its output (`$7`); `profile` prints a line as the program would, writes the
// report after `-o` (after `$STUB_DELAY` s; not with `$STUB_NOWRITE`), then waits for
// SIGINT when `$STUB_WAIT` is set (ignores SIGINT and SIGTERM with `$STUB_STUBBORN`), and
// exits `$STUB_CODE`.
const STUB: &str = r#"#!/bin/sh
echo "$@" >> "$STUB_ARGS"
if [ "$1" = export ]; then cp "$STUB_EXPORT" "$7"; exit 0; fi
prev=""; out=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
echo "the program's own output"
[ -n "$STUB_DELAY" ] && sleep "$STUB_DELAY"
[ -z "$STUB_NOWRITE" ] && echo "a report; nsys is a stub" > "$out"
if [ -n "$STUB_STUBBORN" ]; then
  trap '' INT TERM
  touch "$STUB_STUBBORN"
  exec sleep 60
fi
if [ -n "$STUB_WAIT" ]; then
  trap 'kill $p; exit 130' INT
  sleep 30 & p=$!
  touch "$STUB_WAIT"
  wait $p
fi
exit "${STUB_CODE:-0}"
"#;

struct Rec {
    dir: TempDir,
}

impl Rec {
    fn new() -> Rec {
        use std::os::unix::fs::PermissionsExt;
        let dir = TempDir::new().unwrap();
        let stub = dir.path().join("nsys");
        std::fs::write(&stub, STUB).unwrap();
        std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::write(dir.path().join("paranoid"), "2\n").unwrap();
        Rec { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut c = Command::new(assert_cmd::cargo::cargo_bin("lanescope"));
        c.env("NO_COLOR", "1").current_dir(self.dir.path()).arg("record").args(args);
        c.env("LANESCOPE_NSYS", self.path("nsys")).env("XDG_CACHE_HOME", self.path("cache"));
        c.env("LANESCOPE_PERF_EVENT_PARANOID", self.path("paranoid"));
        c.env("STUB_ARGS", self.path("args")).env("STUB_EXPORT", fixture("pageable.sqlite"));
        c
    }

    fn run(&self, args: &[&str]) -> Output {
        self.command(args).output().unwrap()
    }

    // The arguments of each stub run.
    fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.path("args")).map(|s| s.lines().map(String::from).collect()).unwrap_or_default()
    }
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn flags_exit_code_and_the_report_on_stdout() {
    let r = Rec::new();
    let out =
        r.command(&["--report", "json", "--", "python3", "train.py", "--epochs", "1"]).env("STUB_CODE", "7").output();
    let out = out.unwrap();
    assert_eq!(out.status.code(), Some(7), "{}", stderr(&out));
    let calls = r.calls();
    assert_eq!(
        calls[0],
        "profile -t cuda,nvtx,osrt --cpuctxsw=process-tree -s process-tree --python-sampling=true \
         --gpu-metrics-devices=all --force-overwrite=true -o lanescope-1.nsys-rep -- python3 train.py --epochs 1"
    );
    assert!(calls[1].starts_with("export --type sqlite"), "{calls:?}");
    assert!(calls[1].ends_with("lanescope-1.nsys-rep"), "{calls:?}");
    // stdout is the report alone: the program's output went to stderr.
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
    let kernels = sql_i64(&fixture("pageable.sqlite"), "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL");
    assert_eq!(v["totals"]["kernels"].as_i64(), Some(kernels));
    let err = stderr(&out);
    for flag in ["-t cuda,nvtx,osrt", "--cpuctxsw=process-tree", "-s process-tree", "--python-sampling=true"] {
        assert!(err.contains(&format!("nsys profile {flag} ")), "{flag}: {err}");
    }
    assert!(err.contains("the program's own output") && err.contains("exited with code 7"), "{err}");
    assert!(err.contains("collected no GPU metrics"), "the fixture has none: {err}");
    assert!(r.path("lanescope-1.nsys-rep").is_file());
    // The next default name is the next free one.
    assert!(r.run(&["--report", "csv", "--", "true"]).status.success());
    assert!(r.calls()[2].contains(" -o lanescope-2.nsys-rep "), "{:?}", r.calls());
}

#[test]
fn an_existing_report_is_kept_without_force() {
    let r = Rec::new();
    std::fs::write(r.path("run.nsys-rep"), b"the user's report").unwrap();
    let out = r.run(&["-o", "run", "--report", "text", "--", "true"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("run.nsys-rep exists; pass --force"), "{}", stderr(&out));
    assert!(r.calls().is_empty(), "nsys ran");
    assert_eq!(std::fs::read(r.path("run.nsys-rep")).unwrap(), b"the user's report");
    let out = r.run(&["-o", "run.nsys-rep", "--force", "--report", "text", "--", "true"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(r.calls()[0].contains("--force-overwrite=true -o run.nsys-rep -- true"), "{:?}", r.calls());
    assert!(String::from_utf8_lossy(&out.stdout).contains("step N"));
}

#[test]
fn groups_switch_off_and_sampling_needs_the_kernel() {
    let r = Rec::new();
    std::fs::write(r.path("paranoid"), "3\n").unwrap();
    let args = ["--no-gpu-metrics", "--duration", "5", "-o", "x", "--report", "json"];
    let out =
        r.command(&args).args(["--nsys-args", "--cuda-memory-usage=true", "--", "./a.out", "-v"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        r.calls()[0],
        "profile -t cuda,nvtx,osrt --cpuctxsw=none -s none --duration=5 -o x.nsys-rep --cuda-memory-usage=true -- ./a.out -v"
    );
    let err = stderr(&out);
    assert!(err.contains("is 3: CPU sampling needs 2 or less"), "{err}");
    assert!(!err.contains("collected no CPU samples") && !err.contains("GPU metrics"), "not asked for: {err}");
}

#[test]
fn without_nsys_one_line_says_where_to_get_it() {
    let r = Rec::new();
    let out = r.command(&["--", "true"]).env("LANESCOPE_NSYS", "").env("PATH", "/nonexistent").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("https://developer.nvidia.com/nsight-systems") && err.contains("LANESCOPE_NSYS"), "{err}");
}

#[test]
fn a_signal_stops_the_recording_and_the_capture_is_still_reported() {
    let r = Rec::new();
    let ready = r.path("ready");
    let mut c = r.command(&["--report", "json", "--", "sleep", "60"]);
    let child = c.env("STUB_WAIT", &ready).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    wait_for(&ready);
    let sent = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    // nsys (the stub) got the SIGINT and ended as nsys does; lanescope reported the capture.
    assert_eq!(out.status.code(), Some(130), "{}", stderr(&out));
    assert!(stderr(&out).contains("stopping the recording (SIGINT to nsys"), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("the report of what was captured");
    assert!(v["phases"].as_array().is_some_and(|p| !p.is_empty()));
}

fn wait_for(p: &Path) {
    for _ in 0..1000 {
        if p.exists() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("{} never appeared", p.display());
}

// Issue 36, item 8: with --force, a report left from an earlier run is not taken for this
// run's when nsys writes none.
#[test]
fn force_with_no_new_report_is_an_error_not_the_old_report() {
    let r = Rec::new();
    std::fs::write(r.path("run.nsys-rep"), b"an earlier run's report").unwrap();
    let out = r.command(&["-o", "run", "--force", "--report", "json", "--", "true"]).env("STUB_NOWRITE", "1").output();
    let out = out.unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("nsys profile wrote no report run.nsys-rep"), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "a report was printed");
    assert_eq!(r.calls().len(), 1, "nothing was exported: {:?}", r.calls());
    // Without -o, the empty file that reserved the name goes too.
    let out = r.command(&["--report", "json", "--", "true"]).env("STUB_NOWRITE", "1").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(!r.path("lanescope-1.nsys-rep").exists());
    // So does it when nsys cannot even start.
    std::fs::write(r.path("not-a-program"), b"").unwrap();
    let out = r.command(&["--report", "json", "--", "true"]).env("LANESCOPE_NSYS", r.path("not-a-program")).output();
    assert_eq!(out.unwrap().status.code(), Some(1));
    assert!(!r.path("lanescope-1.nsys-rep").exists());
}

// Issue 36, item 9: concurrent runs without -o (ranks under srun in one directory) each
// get their own report.
#[test]
fn concurrent_runs_pick_distinct_default_names() {
    let r = Rec::new();
    let children: Vec<_> = (0..6)
        .map(|_| {
            let mut c = r.command(&["--report", "csv", "--", "true"]);
            c.env("STUB_DELAY", "1").stdout(Stdio::null()).stderr(Stdio::piped()).spawn().unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let mut names: Vec<String> = r
        .calls()
        .iter()
        .filter(|c| c.starts_with("profile"))
        .map(|c| c.split(" -o ").nth(1).unwrap().split(' ').next().unwrap().to_string())
        .collect();
    names.sort();
    let want: Vec<String> = (1..=6).map(|n| format!("lanescope-{n}.nsys-rep")).collect();
    assert_eq!(names, want);
}

// Issue 36, item 10: the signal reaches nsys without any `kill` program (a `kill` first on
// PATH is never run), and an nsys that ignores SIGINT and SIGTERM is killed after the grace.
#[test]
fn signals_reach_nsys_directly_and_escalate_to_sigkill() {
    use std::os::unix::fs::PermissionsExt;
    let r = Rec::new();
    let bin = r.path("bin");
    std::fs::create_dir(&bin).unwrap();
    let fake = bin.join("kill");
    std::fs::write(&fake, format!("#!/bin/sh\ntouch {}\n", r.path("fake-kill-ran").display())).unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let ready = r.path("ready");
    let mut c = r.command(&["--report", "json", "--", "sleep", "60"]);
    c.env("PATH", path).env("STUB_STUBBORN", &ready).env("LANESCOPE_STOP_GRACE", "1");
    let child = c.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    wait_for(&ready);
    let t0 = std::time::Instant::now();
    assert!(Command::new("/bin/kill").args(["-TERM", &child.id().to_string()]).status().unwrap().success());
    let out = child.wait_with_output().unwrap();
    assert!(t0.elapsed().as_secs() < 20, "took {:?}", t0.elapsed());
    let err = stderr(&out);
    assert!(!r.path("fake-kill-ran").exists(), "a `kill` program ran");
    assert!(
        err.contains("SIGINT to nsys") && err.contains("sending SIGTERM") && err.contains("sending SIGKILL"),
        "{err}"
    );
    // nsys died of SIGKILL: its code is passed on as 128 + 9.
    assert_eq!(out.status.code(), Some(137), "{err}");
}

// Issue 36, item 11: a program whose name starts with `-` comes after `--`, and the report
// name is shown sanitized.
#[test]
fn the_command_follows_a_double_dash_and_the_name_is_sanitized() {
    let r = Rec::new();
    let out = r.run(&["-o", "ev\u{1b}]0;x\u{7}il", "--report", "csv", "--", "-weird", "arg"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(r.calls()[0].ends_with(" -- -weird arg"), "{:?}", r.calls());
    let err = stderr(&out);
    assert!(!err.contains('\u{1b}') && !err.contains('\u{7}'), "{err:?}");
    assert!(err.contains("ev\u{fffd}]0;x\u{fffd}il.nsys-rep"), "{err}");
}
