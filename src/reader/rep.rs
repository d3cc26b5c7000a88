//! `.nsys-rep` reports: exported to SQLite with nsys into the user's cache directory,
//! and reused while the report is unchanged.
//!
//! - nsys is `$LANESCOPE_NSYS`, else `nsys` on `PATH`.
//! - The cache is `$XDG_CACHE_HOME/lanescope`, else `~/.cache/lanescope`; nothing is
//!   ever written beside the report.
//! - An entry is named `STEM-PATHHASH-STATEHASH.sqlite`: PATHHASH from the report's
//!   absolute path, STATEHASH from its size, mtime and the first MiB of its bytes. An
//!   entry whose name matches and that opens as an nsys export is used, with or without
//!   nsys; a corrupt one is removed and rebuilt; entries of older states of the same
//!   report are removed after a rebuild.
//! - nsys writes to a temporary name in the cache directory (`.STEM-...-PID.tmp.sqlite`,
//!   its messages to `.STEM-...-PID.tmp.log`) that is renamed once the export is complete
//!   and checked, so an interrupted export is never used. Temporaries whose PID is no
//!   running process are swept before every export.
//! - nsys is bounded: it is killed after `$LANESCOPE_NSYS_TIMEOUT` seconds (an hour by
//!   default, `0` for no limit), and on SIGTERM, SIGINT and SIGHUP, which then remove its
//!   temporary files and end lanescope as the signal would have.
//! - When nsys fails, the error quotes its last line cut to [`QUOTE_CHARS`] characters;
//!   its whole output stays in the cache as `STEM-PATHHASH-nsys-error.log`.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once, PoisonError};
use std::time::{Duration, Instant, UNIX_EPOCH};

use anyhow::{Context, Result, bail};

/// Bytes of the report's head that go into its state hash.
const HEAD_BYTES: u64 = 1 << 20;

/// Characters of nsys's last line quoted in an error.
pub(crate) const QUOTE_CHARS: usize = 200;

/// How long nsys may run without `LANESCOPE_NSYS_TIMEOUT`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3600);

// An nsys export in progress: what a signal or the timeout must clean up.
struct Running {
    child: Child,
    files: [PathBuf; 2],
}

// Every export in progress (one per report being loaded).
static RUNNING: Mutex<Vec<Running>> = Mutex::new(Vec::new());
// Set while another handler (the viewer's) ends the process on a signal.
static EXIT_ELSEWHERE: AtomicBool = AtomicBool::new(false);
static WATCH: Once = Once::new();

/// True for a path named like an nsys report (`.nsys-rep`, `.qdrep`).
pub(crate) fn is_report(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "nsys-rep" || e == "qdrep")
}

/// The SQLite export of the report at `path`: a valid cached one, else a fresh export
/// made with nsys (one progress line on stderr). Errors say how to export by hand.
pub(crate) fn export(path: &Path) -> Result<PathBuf> {
    #[allow(
        clippy::wildcard_enum_match_arm,
        reason = "`io::ErrorKind` is non-exhaustive: every error but a missing file reads as unreadable"
    )]
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => anyhow::anyhow!("no such file"),
        _ => anyhow::anyhow!("cannot read file ({e})"),
    })?;
    if meta.is_dir() {
        bail!("is a directory, not an nsys report");
    }
    super::open::not_special(&meta)?;
    let hint = format!("export it with: nsys export --type sqlite {}", path.display());
    let dir = cache_dir().with_context(|| format!("is an nsys report and there is no cache directory ({hint})"))?;
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let stem = abs.file_stem().map_or_else(|| "report".to_string(), |s| safe_name(&s.to_string_lossy()));
    let path_hash = fnv(abs.to_string_lossy().as_bytes(), FNV_OFFSET);
    let state = state_hash(path, &meta).context("cannot read file")?;
    let prefix = format!("{stem}-{path_hash:016x}-");
    let cached = dir.join(format!("{prefix}{state:016x}.sqlite"));
    if cached.exists() {
        if valid(&cached) {
            return Ok(cached);
        }
        // A corrupt entry (a disk error, a user's edit): rebuild it.
        let _ = std::fs::remove_file(&cached);
    }
    let Some(nsys) = find_nsys() else {
        bail!("is an nsys report, not its SQLite export, and nsys is not on PATH (set LANESCOPE_NSYS or {hint})");
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create the cache {} ({hint})", dir.display()))?;
    sweep_stale(&dir);
    let tmp = dir.join(format!(".{prefix}{state:016x}-{}.tmp.sqlite", std::process::id()));
    let log = tmp.with_extension("log");
    let error_log = dir.join(format!("{prefix}nsys-error.log"));
    let name = abs.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    let failed = |why: String| {
        let _ = std::fs::remove_file(&tmp);
        let _ = std::fs::remove_file(&log);
        anyhow::anyhow!("nsys export --type sqlite failed ({why}); {hint}")
    };
    let mut cmd = Command::new(&nsys);
    cmd.args(["export", "--type", "sqlite", "--force-overwrite", "true", "--output"]).arg(&tmp).arg(&abs);
    let limit = timeout();
    let status = run(cmd, [tmp.clone(), log.clone()], limit, |pid| {
        let bound = limit.map_or_else(|| "no time limit".to_string(), |l| format!("at most {} s", l.as_secs()));
        eprintln!(
            "lanescope: exporting {} to SQLite into {}: waiting for nsys (pid {pid}, {bound}, \
             LANESCOPE_NSYS_TIMEOUT) ...",
            crate::text::sanitize(&name),
            dir.display()
        );
    })
    .map_err(|e| failed(format!("cannot run {}: {e}", nsys.display())))?;
    let status = match status {
        Done::Exited(s) => s,
        Done::TimedOut(l) => {
            return Err(failed(format!(
                "nsys ran longer than {} s and was stopped; set LANESCOPE_NSYS_TIMEOUT to allow more, 0 for no limit",
                l.as_secs()
            )));
        }
        Done::Killed => return Err(failed("stopped by a signal".to_string())),
    };
    if !status.success() {
        // Keep nsys's whole output where the error says.
        let quote = last_line(&log);
        let kept = std::fs::rename(&log, &error_log).is_ok();
        let whole = if kept { format!("; its whole output: {}", error_log.display()) } else { String::new() };
        return Err(failed(format!("{status}: {}{whole}", crate::text::sanitize(&quote))));
    }
    let _ = std::fs::remove_file(&log);
    let _ = std::fs::remove_file(&error_log);
    if !valid(&tmp) {
        return Err(failed("it wrote no valid export".to_string()));
    }
    std::fs::rename(&tmp, &cached).map_err(|e| failed(format!("cannot move the export into the cache: {e}")))?;
    // Older states of the same report are stale now.
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with(&prefix) && n.ends_with(".sqlite") && e.path() != cached {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    Ok(cached)
}

/// How nsys ended.
enum Done {
    Exited(std::process::ExitStatus),
    TimedOut(Duration),
    Killed,
}

// Run `cmd` (output to `files[1]`) as a registered export, calling `started` with its
// pid; kill it after `limit`. A signal kills it from the watcher thread.
fn run(
    mut cmd: Command,
    files: [PathBuf; 2],
    limit: Option<Duration>,
    started: impl FnOnce(u32),
) -> std::io::Result<Done> {
    watch_signals();
    let out = std::fs::File::create(&files[1])?;
    let child = cmd.stdin(Stdio::null()).stdout(out.try_clone()?).stderr(out).spawn();
    let child = child.inspect_err(|_| {
        let _ = std::fs::remove_file(&files[1]);
    })?;
    let pid = child.id();
    lock().push(Running { child, files });
    started(pid);
    let t0 = Instant::now();
    loop {
        {
            let mut running = lock();
            let Some(i) = running.iter().position(|r| r.child.id() == pid) else {
                // A signal handler stopped it and is ending the process: let it.
                drop(running);
                std::thread::sleep(Duration::from_secs(5));
                return Ok(Done::Killed);
            };
            if let Some(status) = running[i].child.try_wait()? {
                running.remove(i);
                return Ok(Done::Exited(status));
            }
            if let Some(l) = limit.filter(|&l| t0.elapsed() >= l) {
                stop(running.remove(i));
                return Ok(Done::TimedOut(l));
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn lock() -> std::sync::MutexGuard<'static, Vec<Running>> {
    RUNNING.lock().unwrap_or_else(PoisonError::into_inner)
}

// Kill nsys, reap it, remove its temporary files.
fn stop(mut r: Running) {
    let _ = r.child.kill();
    let _ = r.child.wait();
    for f in &r.files {
        let _ = std::fs::remove_file(f);
    }
}

/// Kill every nsys export in progress and remove its temporary files: for a signal
/// handler that is about to end the process.
pub(crate) fn abort_exports() {
    for r in lock().drain(..) {
        stop(r);
    }
}

/// Tell the export's signal watcher that another handler ends the process on SIGTERM,
/// SIGINT and SIGHUP (after calling [`abort_exports`]), or no longer does.
pub(crate) fn signals_exit_elsewhere(yes: bool) {
    EXIT_ELSEWHERE.store(yes, Ordering::SeqCst);
}

// Once per process: on SIGTERM, SIGINT or SIGHUP, abort the exports, then end as the
// signal's default action would (unless the viewer's handler does).
fn watch_signals() {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    WATCH.call_once(|| {
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP]) else { return };
        let _ = std::thread::Builder::new().name("nsys-signals".into()).spawn(move || {
            for sig in signals.forever() {
                abort_exports();
                if !EXIT_ELSEWHERE.load(Ordering::SeqCst) {
                    let _ = signal_hook::low_level::emulate_default_handler(sig);
                    std::process::exit(128 + sig);
                }
            }
        });
    });
}

// `$LANESCOPE_NSYS_TIMEOUT` seconds (0: none), else the default; None for no limit.
fn timeout() -> Option<Duration> {
    match std::env::var("LANESCOPE_NSYS_TIMEOUT").ok().and_then(|v| v.trim().parse::<f64>().ok()) {
        Some(s) if s <= 0.0 || !s.is_finite() => None,
        Some(s) => Some(Duration::from_secs_f64(s.min(1e9))),
        None => Some(DEFAULT_TIMEOUT),
    }
}

/// Remove the temporary files (`.NAME-PID.tmp.*`) of exports and cache entries whose
/// process is gone: a lanescope killed with SIGKILL, a crash. Where running processes
/// cannot be listed (no /proc), those a day old.
pub(crate) fn sweep_stale(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let proc_fs = Path::new("/proc/self").exists();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = temp_pid(&name) else { continue };
        let stale = if proc_fs {
            !Path::new("/proc").join(pid.to_string()).exists()
        } else {
            e.metadata().and_then(|m| m.modified()).is_ok_and(|t| t.elapsed().is_ok_and(|a| a.as_secs() > 86_400))
        };
        if stale {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

// The PID in a temporary file's name, `.STEM-HASH-HASH-PID.tmp.EXT`.
fn temp_pid(name: &str) -> Option<u32> {
    let base = name.strip_prefix('.')?;
    let (base, _) = base.rsplit_once(".tmp.")?;
    base.rsplit_once('-')?.1.parse().ok()
}

// The last non-empty line of a log, cut to `QUOTE_CHARS` characters (from its last 64 KiB).
fn last_line(log: &Path) -> String {
    let mut tail = Vec::new();
    if let Ok(mut f) = std::fs::File::open(log) {
        let len = f.metadata().map_or(0, |m| m.len());
        let _ = f.seek(SeekFrom::Start(len.saturating_sub(64 << 10)));
        let _ = f.read_to_end(&mut tail);
    }
    let text = String::from_utf8_lossy(&tail);
    let last = text.lines().rev().map(str::trim).find(|l| !l.is_empty()).unwrap_or("no message");
    let mut out: String = last.chars().take(QUOTE_CHARS).collect();
    if last.chars().nth(QUOTE_CHARS).is_some() {
        out.push('…');
    }
    out
}

/// `$XDG_CACHE_HOME/lanescope`, else `$HOME/.cache/lanescope` (absolute paths only, as
/// the XDG base directory specification asks).
pub(crate) fn cache_dir() -> Option<PathBuf> {
    let abs = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").and_then(abs) {
        return Some(x.join("lanescope"));
    }
    std::env::var_os("HOME").and_then(abs).map(|h| h.join(".cache").join("lanescope"))
}

/// `$LANESCOPE_NSYS`, else the first `nsys` on PATH that is a file.
pub(crate) fn find_nsys() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("LANESCOPE_NSYS").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(p));
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join("nsys")).find(|p| p.is_file())
}

// An export that lanescope can open: SQLite with nsys tables.
fn valid(p: &Path) -> bool {
    super::open::check_file(p).is_ok()
        && super::open::connect(p)
            .ok()
            .and_then(|c| super::schema::Schema::probe(&c).ok())
            .is_some_and(|s| s.is_nsys_export())
}

/// Modification time of a file in ns since the epoch (0 when the system does not say).
pub(crate) fn mtime_ns(meta: &std::fs::Metadata) -> u128 {
    meta.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos())
}

/// Hash of a file's state: its size, modification time and first MiB (`meta` is its
/// metadata). A file changed in any of these gets another hash.
pub(crate) fn state_hash(path: &Path, meta: &std::fs::Metadata) -> std::io::Result<u64> {
    let mut state = fnv(&meta.len().to_le_bytes(), FNV_OFFSET);
    state = fnv(&mtime_ns(meta).to_le_bytes(), state);
    Ok(fnv(&head(path)?, state))
}

fn head(p: &Path) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    std::fs::File::open(p)?.take(HEAD_BYTES).read_to_end(&mut buf)?;
    Ok(buf)
}

/// FNV-1a's offset basis: the hash of nothing.
pub(crate) const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a of `bytes` after `h`: stable across builds and platforms (the cache outlives
/// the binary).
pub(crate) fn fnv(bytes: &[u8], mut h: u64) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// Letters, digits, `-`, `_` and `.` only, at most 64 characters.
pub(crate) fn safe_name(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).take(64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_is_the_reference_fnv1a() {
        assert_eq!(fnv(b"", FNV_OFFSET), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv(b"a", FNV_OFFSET), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn temporaries_name_their_pid() {
        assert_eq!(temp_pid(".run-00ab-00cd-4242.tmp.sqlite"), Some(4242));
        assert_eq!(temp_pid(".run-00ab-00cd-4242.tmp.log"), Some(4242));
        assert_eq!(temp_pid("run-00ab-00cd.sqlite"), None);
        assert_eq!(temp_pid(".x.tmp.sqlite"), None);
    }

    #[test]
    fn cache_names_are_plain() {
        assert_eq!(safe_name("run 1/é"), "run_1__");
        assert!(is_report(Path::new("a/b.nsys-rep")) && is_report(Path::new("x.qdrep")));
        assert!(!is_report(Path::new("x.sqlite")));
    }
}
