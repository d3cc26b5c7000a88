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
    let out = run_dir().join(name.replace('/', "_"));
    let _held = LOCK.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !out.exists() {
        let mut input = std::io::BufReader::new(std::fs::File::open(&packed).expect("the packed fixture"));
        let mut bytes = Vec::new();
        lzma_rs::xz_decompress(&mut input, &mut bytes).expect("an xz stream");
        std::fs::write(&out, bytes).expect("the unpacked fixture");
    }
    out
}

// `$TMPDIR/lanescope-unit-tests/run-PID`, made empty. A `TempDir` held in a `static` is
// never dropped and would stay behind after every run, so each run removes instead the
// folders of runs whose process is gone.
fn run_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    static SWEPT: Once = Once::new();
    DIR.get_or_init(|| {
        let runs = std::env::temp_dir().join("lanescope-unit-tests");
        let mine = runs.join(format!("run-{}", std::process::id()));
        SWEPT.call_once(|| {
            for entry in std::fs::read_dir(&runs).into_iter().flatten().flatten() {
                let path = entry.path();
                if path == mine || run_is_gone(&path) {
                    let _ = std::fs::remove_dir_all(&path);
                }
            }
        });
        std::fs::create_dir_all(&mine).expect("the test run's folder");
        mine
    })
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
