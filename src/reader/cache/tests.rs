//! The cache gives back the model it was given, column for column; a damaged entry is
//! an error, never a panic or another model; entries are bounded and keyed.

use std::path::PathBuf;

use proptest::prelude::*;

use super::*;
use crate::testutil::fixture;

// Everything a trace holds, spelled out: the columns as kept (narrow or wide, flags per
// event or per name), names by id, every record. The interning table's hash map is
// left out (its order is random); `Strings::from_values` rebuilds it from the names.
fn everything(t: &Trace) -> String {
    let strings: Vec<(u32, &str)> = t.strings.iter().collect();
    format!(
        "{:?}\n{strings:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}",
        t.meta, t.gpus, t.processes, t.threads, t.lanes, t.syncs, t.host, t.ranks, t.counters
    )
}

fn load(name: &str) -> (PathBuf, Trace) {
    let path = fixture(name);
    let t = crate::reader::load(&path).unwrap_or_else(|e| panic!("{name}: {e:#}"));
    (path, t)
}

// Traces with every kind of data: CUDA and NVTX (pageable), CPU samples and context
// switches (contention, pageable_s), GPU counters (matrix g_pinned), PyTorch JSON
// (kineto), many lanes and GPUs (multigpu).
const TRACES: [&str; 6] = [
    "pageable.sqlite",
    "contention.sqlite",
    "pageable_s.sqlite",
    "multigpu.sqlite",
    "matrix/g_pinned.sqlite",
    "kineto/rank0.json.gz",
];

#[test]
fn an_entry_reads_back_the_model_it_was_given() {
    let dir = tempfile::tempdir().unwrap();
    for name in TRACES {
        let (path, t) = load(name);
        let entry = Entry::new(&path, dir.path()).expect("an entry");
        assert!(entry.open().unwrap().is_none(), "{name}: no entry yet");
        entry.store(&t, u64::MAX).unwrap();
        let back = entry.open().unwrap().unwrap_or_else(|| panic!("{name}: the entry was written"));
        assert_eq!(everything(&back), everything(&t), "{name}");
        // As narrow as before (spare capacity the reader left is not kept).
        let (b, a) = (back.heap_bytes(), t.heap_bytes());
        assert!(b <= a && b + b / 100 >= a, "{name}: {b} bytes of model read back, {a} written");
        // At most 1.2 times the model's heap (GPU counters included: their prefix sums
        // are written as values).
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&entry.file).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600, "{name}: the owner's alone");
        }
        let file = fs::metadata(&entry.file).unwrap().len();
        let model = t.heap_bytes() + t.counters.heap_bytes();
        assert!(file as f64 <= 1.2 * model as f64 + 4096.0, "{name}: entry {file} B, model {model} B");
    }
    // GPU counters did travel (the fixture has them), a shared time column stays shared.
    let (path, t) = load("matrix/g_pinned.sqlite");
    assert!(!t.counters.is_empty());
    let back = Entry::new(&path, dir.path()).unwrap().open().unwrap().unwrap();
    let shared = |c: &crate::model::counters::Counters| {
        c.series.windows(2).filter(|w| std::sync::Arc::ptr_eq(&w[0].times, &w[1].times)).count()
    };
    assert!(shared(&t.counters) > 0);
    assert_eq!(shared(&back.counters), shared(&t.counters));
}

#[test]
fn a_changed_trace_has_another_entry() {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("copy.sqlite");
    fs::copy(fixture("pageable.sqlite"), &copy).unwrap();
    let cache = dir.path().join("cache");
    let (_, t) = load("pageable.sqlite");
    let before = Entry::new(&copy, &cache).unwrap();
    before.store(&t, u64::MAX).unwrap();
    // Same bytes, another mtime: another key, and the old entry is gone after a store.
    let f = fs::OpenOptions::new().write(true).open(&copy).unwrap();
    f.set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000)).unwrap();
    drop(f);
    let after = Entry::new(&copy, &cache).unwrap();
    assert_ne!(after.file, before.file);
    assert!(after.open().unwrap().is_none());
    after.store(&t, u64::MAX).unwrap();
    assert!(!before.file.exists() && after.file.exists());
    // A renamed entry (another trace's name) is refused by its header.
    fs::rename(&after.file, &before.file).unwrap();
    assert!(before.open().unwrap_err().to_string().contains("another state"));
}

#[test]
fn the_oldest_entries_go_first() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let (_, t) = load("pageable.sqlite");
    let mut files = Vec::new();
    for k in 0..3 {
        let copy = dir.path().join(format!("t{k}.sqlite"));
        fs::copy(fixture("pageable.sqlite"), &copy).unwrap();
        let e = Entry::new(&copy, &cache).unwrap();
        e.store(&t, u64::MAX).unwrap();
        // Older entries first, a second apart.
        let f = fs::OpenOptions::new().write(true).open(&e.file).unwrap();
        f.set_modified(std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1000 + k)).unwrap();
        files.push(e.file);
    }
    let one = fs::metadata(&files[0]).unwrap().len();
    evict(&cache, 2 * one + one / 2);
    assert_eq!(files.iter().map(|f| f.exists()).collect::<Vec<_>>(), [false, true, true]);
    evict(&cache, one);
    assert_eq!(files.iter().map(|f| f.exists()).collect::<Vec<_>>(), [false, false, true]);
    assert_eq!(parse_bytes("3K"), Some(3072));
    assert_eq!(parse_bytes(" 2g"), Some(2 << 30));
    assert_eq!(parse_bytes("12"), Some(12));
    assert_eq!(parse_bytes("x"), None);
}

// One entry of the pageable trace, its bytes and the model it holds.
fn pristine() -> &'static (tempfile::TempDir, Entry, Vec<u8>, String) {
    static ONE: OnceLock<(tempfile::TempDir, Entry, Vec<u8>, String)> = OnceLock::new();
    ONE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let (path, t) = load("pageable.sqlite");
        let e = Entry::new(&path, dir.path()).unwrap();
        e.store(&t, u64::MAX).unwrap();
        let bytes = fs::read(&e.file).unwrap();
        (dir, e, bytes, everything(&t))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    // Truncated, or with bytes flipped anywhere (header, counts, columns, checksum): an
    // error, never a panic and never another model.
    #[test]
    fn a_damaged_entry_is_an_error(
        cut in proptest::option::of(0usize..1 << 30),
        flips in proptest::collection::vec((0usize..1 << 30, 1u8..=255), 0..4),
    ) {
        let (_, pristine, bytes, model) = pristine();
        let mut b = bytes.clone();
        for &(at, x) in &flips {
            let at = at % b.len();
            b[at] ^= x;
        }
        if let Some(c) = cut {
            b.truncate(c % b.len());
        }
        let damaged = b != *bytes;
        let dir = tempfile::tempdir().unwrap();
        let e = Entry { file: dir.path().join("entry.lsc"), ..pristine.clone() };
        fs::write(&e.file, &b).unwrap();
        match e.open() {
            Ok(Some(t)) => prop_assert!(!damaged && everything(&t) == *model),
            Ok(None) => prop_assert!(false, "an entry that is there"),
            Err(why) => prop_assert!(damaged, "{why:#}"),
        }
    }
}

// Where the values of the longest lane's start column begin in `bytes` (an entry).
fn longest_starts(t: &Trace, bytes: &[u8]) -> (usize, usize) {
    use zerocopy::IntoBytes;
    let l = t.lanes.iter().max_by_key(|l| l.ev.len()).expect("a lane");
    let head = l.ev.start[..4].as_bytes();
    let at = bytes.windows(head.len()).position(|w| w == head).expect("the column in the entry");
    (at, l.ev.len())
}

#[test]
fn large_columns_stay_in_the_entry_and_are_checked_before_use() {
    let (_, pristine, bytes, model) = pristine();
    let t = pristine.open_unchecked().unwrap().unwrap();
    assert!(t.is_mapped(), "the longest lanes are borrowed from the mapped entry");
    assert_eq!(everything(&t), *model);
    t.verify_columns().unwrap();
    // A start in the middle of the longest lane changed: the body's own checksum does not
    // cover it, so the entry opens unchecked, and its check then fails, as does `open`.
    let (at, n) = longest_starts(&t, bytes);
    drop(t);
    let mut b = bytes.clone();
    b[at + 8 * (n / 2) + 1] ^= 0x10;
    let dir = tempfile::tempdir().unwrap();
    let e = Entry { file: dir.path().join("entry.lsc"), ..pristine.clone() };
    fs::write(&e.file, &b).unwrap();
    let unchecked = e.open_unchecked().unwrap().expect("its skeleton is intact");
    let why = unchecked.verify_columns().expect_err("a changed column");
    assert!(why.contains("checksum"), "{why}");
    drop(unchecked);
    let why = e.open().expect_err("open checks every column");
    assert!(format!("{why:#}").contains("checksum"), "{why:#}");
}

// A value of the kind a higher layer derives (strings, numbers, options, nesting), kept
// as a part of the pageable trace's entry, and that part's bytes.
type Derived = Vec<(String, u64, Option<f64>, Vec<i64>)>;

fn derived_value() -> Derived {
    (0..200u64)
        .map(|i| {
            (
                format!("gap {i}"),
                i * 1_000_003,
                (i % 3 == 0).then_some(i as f64 / 7.0),
                vec![-(i as i64); (i % 5) as usize],
            )
        })
        .collect()
}

fn pristine_derived() -> &'static (tempfile::TempDir, Entry, Vec<u8>) {
    static ONE: OnceLock<(tempfile::TempDir, Entry, Vec<u8>)> = OnceLock::new();
    ONE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let e = Entry::new(&fixture("pageable.sqlite"), dir.path()).unwrap();
        e.store_derived("analysis-1", &derived_value(), u64::MAX).unwrap();
        let bytes = fs::read(e.part_file("analysis-1")).unwrap();
        (dir, e, bytes)
    })
}

#[test]
fn a_derived_value_reads_back_under_its_key_alone() {
    let dir = tempfile::tempdir().unwrap();
    let e = Entry::new(&fixture("pageable.sqlite"), dir.path()).unwrap();
    assert!(e.open_derived::<Derived>("analysis-1").unwrap().is_none());
    e.store_derived("analysis-1", &derived_value(), u64::MAX).unwrap();
    assert_eq!(e.open_derived::<Derived>("analysis-1").unwrap(), Some(derived_value()));
    assert!(e.open_derived::<Derived>("analysis-2").unwrap().is_none(), "another key, another part");
    // Another type read from the same bytes is an error, not a value.
    assert!(e.open_derived::<Vec<(u64, String)>>("analysis-1").is_err());
    // Every field of the key counts in the name.
    let name = |k: &(u64, bool, Option<&str>)| derived_name("analysis", k).unwrap();
    let base = (100_000u64, false, None);
    for other in [(50_000, false, None), (100_000, true, None), (100_000, false, Some("step N"))] {
        assert_ne!(name(&base), name(&other), "{other:?}");
    }
    assert_eq!(name(&base), name(&(100_000, false, None)));
    // Too large for the bound: not kept.
    let small = Entry::new(&fixture("pinned.sqlite"), dir.path()).unwrap();
    small.store_derived("analysis-1", &derived_value(), 100).unwrap();
    assert!(!small.part_file("analysis-1").exists());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    // A part truncated, or with bytes flipped anywhere: an error, never a panic and never
    // another value.
    #[test]
    fn a_damaged_derived_value_is_an_error(
        cut in proptest::option::of(0usize..1 << 30),
        flips in proptest::collection::vec((0usize..1 << 30, 1u8..=255), 0..4),
    ) {
        let (_, pristine, bytes) = pristine_derived();
        let mut b = bytes.clone();
        for &(at, x) in &flips {
            let at = at % b.len();
            b[at] ^= x;
        }
        if let Some(c) = cut {
            b.truncate(c % b.len());
        }
        let damaged = b != *bytes;
        let dir = tempfile::tempdir().unwrap();
        let e = Entry { file: dir.path().join("entry.lsc"), dir: dir.path().to_path_buf(), ..pristine.clone() };
        fs::write(e.part_file("analysis-1"), &b).unwrap();
        match e.open_derived::<Derived>("analysis-1") {
            Ok(Some(v)) => prop_assert!(!damaged && v == derived_value()),
            Ok(None) => prop_assert!(false, "a part that is there"),
            Err(why) => prop_assert!(damaged, "{why:#}"),
        }
    }
}
