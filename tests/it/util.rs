//! Helpers shared by the integration tests: fixtures, the binary, read-only SQL, hostile exports.

use std::path::{Path, PathBuf};

use assert_cmd::Command;
use rusqlite::{Connection, OpenFlags};

/// Path of a committed fixture under `tests/fixtures`. A fixture committed compressed
/// (`NAME.xz`, to keep the repository small) is unpacked once per test run into this
/// run's folder, and that copy's path is returned.
pub(crate) fn fixture(name: &str) -> PathBuf {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    let packed = PathBuf::from(format!("{}.xz", path.display()));
    if path.exists() || !packed.exists() {
        return path;
    }
    unpacked(&packed, &name.trim_end_matches(".sqlite").replace('/', "_"))
}

/// This test run's folder of unpacked fixtures, holding every top-level fixture export
/// (`tests/fixtures/NAME.sqlite`, packed or not) under its own name, so that a command run
/// there names them as siblings (and prints the same paths on every machine).
pub(crate) fn fixture_dir() -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    for entry in std::fs::read_dir(&src).expect("tests/fixtures") {
        let name = entry.expect("a fixture").file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".sqlite.xz") {
            fixture(&format!("{stem}.sqlite"));
        } else if name.ends_with(".sqlite") {
            let there = unpacked_dir().join(&name);
            if !there.exists() {
                std::fs::copy(src.join(&name), &there).expect("a fixture copies");
            }
        }
    }
    unpacked_dir().to_path_buf()
}

fn unpacked_dir() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| in_run_dir("fixtures"))
}

// `NAME` in this test run's own folder, `$TMPDIR/lanescope-tests/run-PID/NAME` (runs that
// have ended leave nothing behind: `testutil::run_dir`).
fn in_run_dir(name: &str) -> PathBuf {
    static RUN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    let dir = RUN.get_or_init(|| crate::testutil::run_dir("lanescope-tests")).join(name);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    dir
}

// `packed` (xz) unpacked as `STEM.sqlite` in this test run's temporary folder.
fn unpacked(packed: &Path, stem: &str) -> PathBuf {
    use std::sync::Mutex;
    static LOCK: Mutex<()> = Mutex::new(());
    let out = unpacked_dir().join(format!("{stem}.sqlite"));
    let _held = LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !out.exists() {
        let file = std::fs::File::open(packed).unwrap_or_else(|e| panic!("{}: {e}", packed.display()));
        let mut input = std::io::BufReader::new(file);
        let tmp = out.with_extension("part");
        let mut w = std::io::BufWriter::new(std::fs::File::create(&tmp).unwrap());
        lzma_rs::xz_decompress(&mut input, &mut w).unwrap_or_else(|e| panic!("{}: {e:?}", packed.display()));
        drop(w);
        std::fs::rename(&tmp, &out).unwrap();
    }
    out
}

/// The lanescope binary, without colour and without an `nsys` from the environment,
/// its cache in this test run's own folder ([`cache_home`]).
pub(crate) fn lanescope() -> Command {
    let mut c = Command::cargo_bin("lanescope").expect("the lanescope binary is built");
    c.env("NO_COLOR", "1").env_remove("LANESCOPE_NSYS").env("XDG_CACHE_HOME", cache_home());
    c
}

/// `XDG_CACHE_HOME` for every run of the binary in the tests: a temporary folder of this
/// test run, so that no test reads or fills the user's cache (tests/it/cache.rs checks
/// that every test that runs the binary sets it).
pub(crate) fn cache_home() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(|| in_run_dir("cache"))
}

/// `path` loaded as a command loads it the second time: back from a warm column cache
/// (in this run's [`cache_home`]). It is checked equal, column for column, to the load
/// from the export itself, so a test that checks numbers against SQL checks both.
pub(crate) fn load_warm(path: &Path) -> lanescope::Trace {
    let dir = cache_home().join("library");
    let load = |cached: bool| {
        let t = if cached { lanescope::load_cached_in(path, &dir) } else { lanescope::load(path) };
        t.unwrap_or_else(|e| panic!("{}: {e:#}", path.display()))
    };
    let _written = load(true);
    let warm = load(true);
    let entries = std::fs::read_dir(&dir)
        .map_or(0, |d| d.flatten().filter(|e| e.path().extension() == Some("lsc".as_ref())).count());
    assert!(entries > 0, "{}: no cache entry in {}", path.display(), dir.display());
    assert_eq!(everything(&warm), everything(&load(false)), "{}: the cache changed the model", path.display());
    warm
}

/// Everything a trace holds, spelled out (names by id; the tables' load times left out,
/// the cache keeps those of the load that wrote it).
pub(crate) fn everything(t: &lanescope::Trace) -> String {
    let mut meta = t.meta.clone();
    meta.tables.iter_mut().for_each(|s| s.ms = 0.0);
    let strings: Vec<(usize, &str)> = t.strings.iter().map(|(i, s)| (i as usize, s)).collect();
    format!(
        "{meta:?}\n{strings:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
        t.gpus, t.processes, t.threads, t.lanes, t.syncs, t.host, t.ranks, t.counters
    )
}

/// A read-only connection to an export, for the independent SQL the tests compare against.
pub(crate) fn sql(path: &Path) -> Connection {
    Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// One integer from a query over a read-only export.
pub(crate) fn sql_i64(path: &Path, q: &str) -> i64 {
    sql(path).query_row(q, [], |r| r.get(0)).unwrap_or_else(|e| panic!("{q}: {e}"))
}

/// A capture of the matrix (`tests/fixtures/matrix/CELL.sqlite.xz`), unpacked once per
/// test run into a temporary folder; its path.
pub(crate) fn matrix_trace(cell: &str) -> PathBuf {
    fixture(&format!("matrix/{cell}.sqlite"))
}

/// Every gap cause docs/json.md documents (`gaps.by_cause`), in its order.
pub(crate) const CAUSES: [&str; 12] = [
    "sync-wait",
    "sync-drain",
    "pageable-copy",
    "host-wait",
    "host-busy",
    "worker-busy",
    "launch-bound",
    "cpu-contention",
    "io-wait",
    "queued",
    "profiler",
    "unknown",
];

/// The tables every hand-made export in the tests starts from.
pub(crate) const MIN_SCHEMA: &str = "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
     CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, deviceId INT, streamId INT,
       correlationId INT, globalPid INT, shortName INT, demangledName INT);
     CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT, end INT, eventClass INT, globalTid INT,
       correlationId INT, nameId INT);
     CREATE TABLE NVTX_EVENTS (start INT, end INT, eventType INT, text TEXT, globalTid INT, textId INT, domainId INT);
     CREATE TABLE PROCESSES (globalPid INT, pid INT, name TEXT);
     CREATE TABLE TARGET_INFO_GPU (id INT, name TEXT);";

/// A name carrying terminal escapes: OSC title, clear screen, 8-bit CSI.
pub(crate) const EVIL: &str = "\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}31mx";

/// Write a tiny export in `dir` whose kernel, NVTX, thread, process and GPU names are [`EVIL`].
pub(crate) fn hostile_export(dir: &Path) -> PathBuf {
    let p = dir.join("hostile.sqlite");
    let evil = EVIL;
    let c = rusqlite::Connection::open(&p).unwrap();
    c.execute_batch(MIN_SCHEMA).unwrap();
    c.execute_batch("CREATE TABLE ThreadNames (nameId INT, priority INT, globalTid INT);").unwrap();
    let gtid: i64 = (7 << 24) | 7;
    c.execute("INSERT INTO StringIds VALUES (1, ?1), (2, 'cudaLaunchKernel_v7000')", [evil]).unwrap();
    c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 2000, 0, 7, 1, ?1, 1, 1)", [7i64 << 24]).unwrap();
    c.execute("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (900000, 901000, 0, 7, 2, ?1, 1, 1)", [7i64 << 24])
        .unwrap();
    c.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (500, 900, 0, ?1, 1, 2), (899000, 899500, 0, ?1, 2, 2)",
        [gtid],
    )
    .unwrap();
    c.execute("INSERT INTO NVTX_EVENTS VALUES (0, 950000, 59, ?1, ?2, NULL, 0)", rusqlite::params![evil, gtid])
        .unwrap();
    c.execute("INSERT INTO ThreadNames VALUES (1, 0, ?1)", [gtid]).unwrap();
    c.execute("INSERT INTO PROCESSES VALUES (?1, 7, ?2)", rusqlite::params![7i64 << 24, evil]).unwrap();
    c.execute("INSERT INTO TARGET_INFO_GPU VALUES (0, ?1)", [evil]).unwrap();
    drop(c);
    p
}

/// Run `sql` on a test's own (writable) export.
pub(crate) fn sql_exec(path: &Path, sql: &str) {
    rusqlite::Connection::open(path).unwrap().execute_batch(sql).unwrap();
}
