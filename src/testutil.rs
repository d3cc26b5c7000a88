//! Fixtures for the unit tests, unpacked in this test run's own folder (as tests/it/util.rs
//! does for the integration tests).

use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once, OnceLock};

/// `tests/fixtures/NAME`, unpacked from `NAME.xz` into this run's folder when it is
/// committed compressed.
pub(crate) fn fixture(name: &str) -> PathBuf {
    static LOCK: Mutex<()> = Mutex::new(());
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(name);
    let packed = PathBuf::from(format!("{}.xz", path.display()));
    if path.exists() || !packed.exists() {
        return path;
    }
    let out = unit_dir().join(name.replace('/', "_"));
    let _held = LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !out.exists() {
        let mut input = std::io::BufReader::new(std::fs::File::open(&packed).expect("the packed fixture"));
        let mut bytes = Vec::new();
        lzma_rs::xz_decompress(&mut input, &mut bytes).expect("an xz stream");
        std::fs::write(&out, bytes).expect("the unpacked fixture");
    }
    out
}

// This run's folder for the unit tests' fixtures.
fn unit_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| run_dir("lanescope-unit-tests"))
}

/// `$TMPDIR/FAMILY/run-PID`, this test run's own folder, made empty. A `TempDir` held in a
/// `static` is never dropped and would stay behind after every run (400 MB of unpacked
/// exports and cache entries each time), so the first call instead removes the folders of
/// runs whose process is gone. The integration tests include this file too.
pub(crate) fn run_dir(family: &str) -> PathBuf {
    static SWEPT: Once = Once::new();
    let runs = std::env::temp_dir().join(family);
    let mine = runs.join(format!("run-{}", std::process::id()));
    SWEPT.call_once(|| {
        for entry in std::fs::read_dir(&runs).into_iter().flatten().flatten() {
            let path = entry.path();
            if path == mine || run_is_gone(&path) {
                let _ = std::fs::remove_dir_all(&path);
            }
        }
    });
    std::fs::create_dir_all(&mine).unwrap_or_else(|e| panic!("{}: {e}", mine.display()));
    mine
}

// Whether the run that made `dir` (`run-PID`) has ended: its process is gone where
// `/proc` tells, else the folder is over a day old.
fn run_is_gone(dir: &Path) -> bool {
    let Some(pid) = dir.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_prefix("run-")) else {
        return false;
    };
    if Path::new("/proc/self").exists() {
        return !Path::new("/proc").join(pid).exists();
    }
    let age = std::fs::metadata(dir).and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok());
    age.is_some_and(|a| a > std::time::Duration::from_secs(24 * 3600))
}
