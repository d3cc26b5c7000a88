//! `lanescope record -- CMD ARGS...`: profile a program with `nsys profile` and the flags
//! lanescope's analysis needs, then export the report into the cache (`reader::rep`).
//!
//! - Every flag is printed on stderr with what it collects; each group can be switched
//!   off. CPU sampling and context switches need `perf_event_paranoid` <= 2: above that
//!   lanescope says so and profiles without them.
//! - The profiled program's output goes to stderr: stdout carries only the report.
//! - SIGINT, SIGTERM and SIGHUP sent to lanescope reach nsys as SIGINT, sent to its pid
//!   (nsys then stops the program and writes what it captured); a Ctrl-C from the terminal
//!   already reaches nsys through the process group, so it is not sent twice. An nsys
//!   still running [`grace`] later gets SIGTERM, and SIGKILL after as long again.
//! - The default name `lanescope-N.nsys-rep` is reserved by creating it (atomically: two
//!   `record`s in one directory never share it); nsys then replaces that empty file.
//! - A report counts as written only when nsys replaced or changed the file that was there.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;

use crate::reader::rep;

/// Where `perf_event_paranoid` is read unless `LANESCOPE_PERF_EVENT_PARANOID` names a file.
const PARANOID: &str = "/proc/sys/kernel/perf_event_paranoid";

/// How long nsys gets to stop after SIGINT before SIGTERM, and after SIGTERM before
/// SIGKILL, unless `LANESCOPE_STOP_GRACE` gives the seconds.
const GRACE: Duration = Duration::from_secs(30);

/// Arguments of `lanescope record`.
#[derive(Debug, Args, Clone)]
pub(crate) struct RecordArgs {
    /// Do not sample GPU metrics (`--gpu-metrics-devices=all`), e.g. on GPUs without
    /// support or without profiling permission.
    #[arg(long)]
    pub no_gpu_metrics: bool,
    /// Do not sample Python backtraces (`--python-sampling=true`).
    #[arg(long)]
    pub no_python: bool,
    /// Stop collecting after S seconds (`nsys profile --duration`).
    #[arg(long, value_name = "S", value_parser = clap::value_parser!(u32).range(1..))]
    pub duration: Option<u32>,
    /// The report to write (`.nsys-rep` is added when missing); default
    /// `lanescope-N.nsys-rep` in the current directory, the first N that is free.
    #[arg(short, long, value_name = "OUT")]
    pub output: Option<PathBuf>,
    /// Overwrite OUT when it exists.
    #[arg(long)]
    pub force: bool,
    /// Print `lanescope report` in FORMAT on stdout instead of opening the viewer.
    #[arg(long, value_enum, value_name = "FORMAT")]
    pub report: Option<crate::report::FormatArg>,
    /// Extra arguments for `nsys profile`, up to `--` (e.g. `--nsys-args --cuda-memory-usage=true --`).
    #[arg(long, value_name = "ARGS", num_args = 1.., allow_hyphen_values = true, value_terminator = "--")]
    pub nsys_args: Vec<String>,
    /// The program to profile and its arguments, after `--`.
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// A finished recording.
#[derive(Debug)]
pub(crate) struct Recorded {
    /// The report nsys wrote.
    pub report: PathBuf,
    /// The profiled program's exit code (nsys passes it through), 128 + N for a signal.
    pub code: i32,
}

/// One `nsys profile` flag (one or two words) and what it is for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Flag {
    /// The words as nsys gets them (`-t`, `cuda,nvtx,osrt`).
    pub words: Vec<String>,
    /// What it collects, for the stderr line.
    pub why: &'static str,
}

/// Profile `args.command` with nsys, then export the report into the cache.
pub(crate) fn record(args: &RecordArgs) -> Result<Recorded> {
    let Some(nsys) = rep::find_nsys() else {
        bail!(
            "nsys is not on PATH: install NVIDIA Nsight Systems (https://developer.nvidia.com/nsight-systems) \
             or set LANESCOPE_NSYS to the nsys program to use"
        );
    };
    let out = output_path(args.output.as_deref(), args.force)?;
    let report = out.path.clone();
    let sampling = sampling_allowed();
    if let Err(why) = &sampling {
        eprintln!("lanescope: warning: {why}; profiling without CPU sampling, context switches and Python backtraces");
    }
    let mut flags = flags(args, sampling.is_ok());
    if out.reserved && !args.force {
        let why = "replace the empty file that reserved the report's name";
        flags.push(Flag { words: vec!["--force-overwrite=true".into()], why });
    }
    for f in &flags {
        eprintln!("lanescope: nsys profile {}  ({})", f.words.join(" "), f.why);
    }
    let mut cmd = Command::new(&nsys);
    cmd.arg("profile").args(flags.iter().flat_map(|f| &f.words)).arg("-o").arg(&report);
    // `--`: a program whose name starts with `-` is not read as an nsys option.
    cmd.args(&args.nsys_args).arg("--").args(&args.command);
    eprintln!("lanescope: recording {} into {} ...", shown(&args.command), shown_path(&report));
    let status = run_forwarding(cmd).with_context(|| format!("cannot run {}", nsys.display()));
    // No report: the empty file that reserved the name goes too.
    let status = status.inspect_err(|_| out.release())?;
    let code = exit_code(status);
    if !out.replaced() {
        out.release();
        bail!("nsys profile wrote no report {} ({status}); its messages are above", report.display());
    }
    let export = rep::export(&report).with_context(|| report.display().to_string())?;
    for missing in missing_data(&export, args, sampling.is_ok()) {
        eprintln!("lanescope: warning: nsys collected no {missing}");
    }
    eprintln!("lanescope: report {} (program exit code {code})", shown_path(&report));
    Ok(Recorded { report, code })
}

/// The flags for `args`, with CPU sampling when `sampling` (the kernel allows it).
pub(crate) fn flags(args: &RecordArgs, sampling: bool) -> Vec<Flag> {
    let f = |arg: &str, why| Flag { words: arg.split(' ').map(String::from).collect(), why };
    let mut v = vec![f("-t cuda,nvtx,osrt", "CUDA API calls, kernels and copies; NVTX ranges; OS runtime calls")];
    if sampling {
        v.push(f("--cpuctxsw=process-tree", "context switches: when each thread was on a CPU"));
        v.push(f("-s process-tree", "CPU samples: what the host threads computed in each gap"));
        if !args.no_python {
            v.push(f("--python-sampling=true", "Python backtraces of the samples (off: --no-python)"));
        }
    } else {
        v.push(f("--cpuctxsw=none", "no context switches: perf_event_paranoid is above 2"));
        v.push(f("-s none", "no CPU samples (nor Python backtraces): perf_event_paranoid is above 2"));
    }
    if !args.no_gpu_metrics {
        v.push(f("--gpu-metrics-devices=all", "GPU metrics of every GPU (off: --no-gpu-metrics)"));
    }
    if let Some(s) = args.duration {
        v.push(f(&format!("--duration={s}"), "stop collecting after that many seconds"));
    }
    if args.force {
        v.push(f("--force-overwrite=true", "--force: replace the report"));
    }
    v
}

/// The report's path, and the file that was there before nsys ran.
#[derive(Debug)]
struct Output {
    path: PathBuf,
    /// Created empty by lanescope to reserve the name.
    reserved: bool,
    /// Device, inode, mtime and size of the file there before nsys ran.
    before: Option<FileId>,
}

type FileId = (u64, u64, Option<std::time::SystemTime>, u64);

impl Output {
    // Remove the file that reserved the name, if this run made it and nsys left it as it was.
    fn release(&self) {
        if self.reserved && !self.replaced() {
            let _ = std::fs::remove_file(&self.path);
        }
    }

    // True when nsys wrote a report: a non-empty file that is not the one seen before.
    fn replaced(&self) -> bool {
        let now = file_id(&self.path);
        now.is_some_and(|n| n.3 > 0) && now != self.before
    }
}

fn file_id(p: &Path) -> Option<FileId> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(p).ok().filter(std::fs::Metadata::is_file)?;
    Some((m.dev(), m.ino(), m.modified().ok(), m.len()))
}

// The report path: OUT with `.nsys-rep`, refused when it exists unless `force`; else the
// first `lanescope-N.nsys-rep` in the current directory that this run could create.
fn output_path(out: Option<&Path>, force: bool) -> Result<Output> {
    let Some(out) = out else {
        let path = reserve_default()?;
        return Ok(Output { before: file_id(&path), path, reserved: true });
    };
    let out =
        if rep::is_report(out) { out.to_path_buf() } else { PathBuf::from(format!("{}.nsys-rep", out.display())) };
    if out.is_dir() {
        bail!("{} is a directory; name the report file with -o", out.display());
    }
    if !force && std::fs::symlink_metadata(&out).is_ok() {
        bail!("{} exists; pass --force to overwrite it, or name another with -o", out.display());
    }
    Ok(Output { before: file_id(&out), path: out, reserved: false })
}

// Create the first free `lanescope-N.nsys-rep` (create_new: of two runs, one gets it).
fn reserve_default() -> Result<PathBuf> {
    for n in 1..10_000 {
        let p = PathBuf::from(format!("lanescope-{n}.nsys-rep"));
        match std::fs::OpenOptions::new().write(true).create_new(true).open(&p) {
            Ok(_) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => {
                return Err(e).with_context(|| format!("cannot create {} here; name the report with -o", p.display()));
            }
        }
    }
    bail!("every lanescope-N.nsys-rep up to 9999 exists here; name the report with -o")
}

// Ok when the kernel lets nsys sample CPUs (`perf_event_paranoid` <= 2), else why not.
fn sampling_allowed() -> Result<(), String> {
    let path = std::env::var_os("LANESCOPE_PERF_EVENT_PARANOID").map_or_else(|| PathBuf::from(PARANOID), PathBuf::from);
    let Ok(text) = std::fs::read_to_string(&path) else {
        // No such file (not Linux, a container hiding it): let nsys decide.
        return Ok(());
    };
    match text.trim().parse::<i32>() {
        Ok(level) if level > 2 => Err(format!(
            "{} is {level}: CPU sampling needs 2 or less (sudo sysctl kernel.perf_event_paranoid=2)",
            path.display()
        )),
        _ => Ok(()),
    }
}

// Run nsys with its output on our stderr, forwarding SIGINT, SIGTERM and SIGHUP to it
// (see the module's comment); lanescope itself keeps running to report the capture.
fn run_forwarding(mut cmd: Command) -> Result<ExitStatus> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    use signal_hook::iterator::{SignalsInfo, exfiltrator::WithOrigin};
    use signal_hook::low_level::siginfo::Cause;
    let err = std::io::stderr();
    let to_stderr = || -> Result<Stdio> { Ok(Stdio::from(std::os::fd::AsFd::as_fd(&err).try_clone_to_owned()?)) };
    // Registered before nsys starts, so that no signal in between ends lanescope.
    let mut signals =
        SignalsInfo::<WithOrigin>::new([SIGINT, SIGTERM, SIGHUP]).context("installing signal handlers")?;
    let mut child = cmd.stdout(to_stderr()?).stderr(to_stderr()?).spawn()?;
    let handle = signals.handle();
    let (tx, rx) = std::sync::mpsc::channel();
    let forwarder = std::thread::spawn(move || {
        for sig in signals.forever() {
            // A Ctrl-C from the terminal went to nsys's process group too: not sent again.
            let from_terminal = sig.signal == SIGINT && matches!(sig.cause, Cause::Kernel);
            if tx.send(from_terminal).is_err() {
                break;
            }
        }
    });
    let mut stop = Stopping::new(grace());
    // Signals go to nsys only while it is unreaped, so its pid cannot be another's.
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break s;
        }
        if let Ok(from_terminal) = rx.recv_timeout(Duration::from_millis(20)) {
            stop.asked(from_terminal, child.id());
        }
        stop.escalate(child.id());
    };
    handle.close();
    let _ = forwarder.join();
    Ok(status)
}

/// Where stopping nsys stands: the last signal it got and when.
struct Stopping {
    grace: Duration,
    sent: Option<(Sig, Instant)>,
}

/// The signals nsys gets, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sig {
    Int,
    Term,
    Kill,
}

impl Sig {
    fn name(self) -> &'static str {
        match self {
            Sig::Int => "SIGINT",
            Sig::Term => "SIGTERM",
            Sig::Kill => "SIGKILL",
        }
    }
}

impl Stopping {
    fn new(grace: Duration) -> Self {
        Self { grace, sent: None }
    }

    // A stop was asked: SIGINT to nsys (unless the terminal sent it already), once.
    fn asked(&mut self, from_terminal: bool, pid: u32) {
        if self.sent.is_some() {
            return;
        }
        if !from_terminal {
            eprintln!("lanescope: stopping the recording (SIGINT to nsys {pid}); the report keeps what was captured");
            send(pid, Sig::Int);
        }
        self.sent = Some((Sig::Int, Instant::now()));
    }

    // SIGTERM, then SIGKILL, to an nsys still running a grace period after the last one.
    fn escalate(&mut self, pid: u32) {
        let Some((last, at)) = self.sent else { return };
        let next = match last {
            Sig::Int => Sig::Term,
            Sig::Term => Sig::Kill,
            Sig::Kill => return,
        };
        if at.elapsed() >= self.grace {
            let secs = self.grace.as_secs_f64();
            eprintln!("lanescope: nsys {pid} still runs {secs:.0} s after {}: sending {}", last.name(), next.name());
            send(pid, next);
            self.sent = Some((next, Instant::now()));
        }
    }
}

// Signal nsys by its pid, with the kill(2) system call (no program is started for it).
fn send(pid: u32, sig: Sig) {
    use rustix::process::{Pid, Signal, kill_process};
    let signal = match sig {
        Sig::Int => Signal::INT,
        Sig::Term => Signal::TERM,
        Sig::Kill => Signal::KILL,
    };
    if let Some(p) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = kill_process(p, signal);
    }
}

// `$LANESCOPE_STOP_GRACE` seconds, else [`GRACE`].
fn grace() -> Duration {
    match std::env::var("LANESCOPE_STOP_GRACE").ok().and_then(|v| v.trim().parse::<f64>().ok()) {
        Some(s) if s.is_finite() && s >= 0.0 => Duration::from_secs_f64(s.min(86_400.0)),
        _ => GRACE,
    }
}

fn exit_code(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

// The command as one line for messages.
fn shown(command: &[String]) -> String {
    crate::text::sanitize(&command.join(" ")).into_owned()
}

// A path for a message on the terminal.
fn shown_path(p: &Path) -> String {
    crate::text::sanitize(&p.display().to_string()).into_owned()
}

// What the export lacks of what was asked for (by the tables nsys writes).
fn missing_data(export: &Path, args: &RecordArgs, sampling: bool) -> Vec<&'static str> {
    let Ok(tables) = table_names(export) else { return Vec::new() };
    let has = |t: &str| tables.iter().any(|n| n == t);
    let mut wanted = vec![("CUPTI_ACTIVITY_KIND_KERNEL", "kernels (did the program use CUDA?)")];
    wanted.push(("OSRT_API", "OS runtime calls"));
    if sampling {
        wanted.push(("SCHED_EVENTS", "context switches"));
        wanted.push(("COMPOSITE_EVENTS", "CPU samples"));
    }
    if !args.no_gpu_metrics {
        wanted.push(("GPU_METRICS", "GPU metrics (a GPU without support, or no profiling permission)"));
    }
    wanted.into_iter().filter(|(t, _)| !has(t)).map(|(_, what)| what).collect()
}

// The tables of an SQLite file, read-only.
fn table_names(path: &Path) -> rusqlite::Result<Vec<String>> {
    let c = rusqlite::Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut q = c.prepare("SELECT name FROM sqlite_master WHERE type = 'table'")?;
    q.query_map([], |r| r.get(0))?.collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> RecordArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct T {
            #[command(flatten)]
            r: RecordArgs,
        }
        let mut v = vec!["t"];
        v.extend_from_slice(extra);
        T::parse_from(v).r
    }

    #[test]
    fn groups_switch_off() {
        let words = |a: &RecordArgs, s| flags(a, s).into_iter().flat_map(|f| f.words).collect::<Vec<_>>();
        let all = words(&args(&["--", "x"]), true);
        assert!(all.contains(&"--python-sampling=true".into()) && all.contains(&"--gpu-metrics-devices=all".into()));
        let off = words(&args(&["--no-python", "--no-gpu-metrics", "--", "x"]), true);
        assert!(off.iter().all(|w| !w.starts_with("--python") && !w.starts_with("--gpu-metrics")), "{off:?}");
        let nosample = words(&args(&["--", "x"]), false);
        assert!(nosample.windows(2).any(|w| w == ["-s", "none"]), "{nosample:?}");
        assert!(!nosample.contains(&"--python-sampling=true".into()));
    }

    #[test]
    fn nsys_args_end_at_the_double_dash() {
        let a = args(&["--nsys-args", "--cuda-memory-usage=true", "-x", "--", "python", "-c", "1"]);
        assert_eq!(a.nsys_args, ["--cuda-memory-usage=true", "-x"]);
        assert_eq!(a.command, ["python", "-c", "1"]);
    }
}
