//! Random exports: any subset of the tables lanescope reads, NULLs, unsorted and
//! overlapping times, ends before starts, dangling string and correlation ids, huge and
//! hostile strings. Loading, analysing and every report format must not panic, and the
//! model must be consistent.

use lanescope::{Format, write_report_with as write_with};
use lanescope::{Options, analyze};
use proptest::prelude::*;
use rusqlite::Connection;
use tempfile::TempDir;

// One row of any event table: (start, end, a small id used for names/correlation/thread).
type Row = (Option<i64>, Option<i64>, u8);

#[derive(Debug, Clone)]
struct Spec {
    tables: [bool; 7],
    rows: Vec<Row>,
    strings: Vec<String>,
}

fn time() -> impl Strategy<Value = Option<i64>> {
    prop_oneof![
        8 => (0i64..2_000_000).prop_map(Some),
        1 => Just(None),
        1 => prop_oneof![Just(i64::MAX - 5), Just(-1_000_000_000i64), Just(0)].prop_map(Some),
    ]
}

fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z _0-9]{0,12}",
        1 => Just("\u{1b}[2J\u{1b}]0;pwned\u{7}\u{9b}31m\u{202e}evil".to_string()),
        1 => Just("x".repeat(100_000)),
    ]
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        prop::array::uniform7(any::<bool>()),
        prop::collection::vec((time(), time(), 0u8..12), 0..60),
        prop::collection::vec(string(), 0..8),
    )
        .prop_map(|(tables, rows, strings)| Spec { tables, rows, strings })
}

const TID_BASE: i64 = 9 << 24;

fn write(spec: &Spec, dir: &TempDir) -> std::path::PathBuf {
    let p = dir.path().join("r.sqlite");
    let c = Connection::open(&p).unwrap();
    c.execute_batch("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);").unwrap();
    for (i, s) in spec.strings.iter().enumerate() {
        c.execute("INSERT INTO StringIds VALUES (?1, ?2)", (i as i64, s)).unwrap();
    }
    let tables = [
        (
            "CUPTI_ACTIVITY_KIND_KERNEL",
            "start INT, end INT, deviceId INT, streamId INT, correlationId INT, globalPid INT, shortName INT",
        ),
        (
            "CUPTI_ACTIVITY_KIND_MEMCPY",
            "start INT, end INT, deviceId INT, streamId INT, correlationId INT, globalPid INT, bytes INT, copyKind INT, srcKind INT, dstKind INT",
        ),
        (
            "CUPTI_ACTIVITY_KIND_RUNTIME",
            "start INT, end INT, eventClass INT, globalTid INT, correlationId INT, nameId INT",
        ),
        ("OSRT_API", "start INT, end INT, globalTid INT, nameId INT"),
        ("NVTX_EVENTS", "start INT, end INT, eventType INT, text TEXT, globalTid INT, textId INT, domainId INT"),
        ("PROFILER_OVERHEAD", "start INT, end INT, globalTid INT, nameId INT"),
        ("ThreadNames", "nameId INT, priority INT, globalTid INT"),
    ];
    for (i, (name, cols)) in tables.iter().enumerate() {
        if !spec.tables[i] {
            continue;
        }
        c.execute_batch(&format!("CREATE TABLE {name} ({cols});")).unwrap();
        for &(s, e, k) in &spec.rows {
            let k = i64::from(k);
            let (gtid, id, text) = (TID_BASE | (k % 3), k, spec.strings.get(k as usize).cloned());
            let r = match *name {
                "CUPTI_ACTIVITY_KIND_KERNEL" => c.execute(
                    &format!("INSERT INTO {name} VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
                    (s, e, k % 2, k % 3, id, TID_BASE, id),
                ),
                "CUPTI_ACTIVITY_KIND_MEMCPY" => c.execute(
                    &format!("INSERT INTO {name} VALUES (?1, ?2, 0, 1, ?3, ?4, ?5, ?6, ?7, ?8)"),
                    (s, e, id, TID_BASE, k * 1000, k % 14, k % 8, (k + 1) % 8),
                ),
                "CUPTI_ACTIVITY_KIND_RUNTIME" => {
                    c.execute(&format!("INSERT INTO {name} VALUES (?1, ?2, 0, ?3, ?4, ?5)"), (s, e, gtid, id, id))
                }
                "NVTX_EVENTS" => c.execute(
                    &format!("INSERT INTO {name} VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0)"),
                    (s, e, [59, 60, 34][(k % 3) as usize], text, gtid, id),
                ),
                "ThreadNames" => c.execute(&format!("INSERT INTO {name} VALUES (?1, 0, ?2)"), (id, gtid)),
                _ => c.execute(&format!("INSERT INTO {name} VALUES (?1, ?2, ?3, ?4)"), (s, e, gtid, id)),
            };
            r.unwrap();
        }
    }
    p
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_exports_load_analyse_and_report_without_panic(spec in spec()) {
        let dir = TempDir::new().unwrap();
        let path = write(&spec, &dir);
        let Ok(trace) = lanescope::load(&path) else { return Ok(()) };
        for l in &trace.lanes {
            prop_assert!(l.ev.start.windows(2).all(|w| w[0] <= w[1]), "lane {:?} not sorted", l.kind);
            prop_assert!(l.ev.start.iter().zip(l.ev.ends()).all(|(&s, e)| e >= s), "end before start in {:?}", l.kind);
            prop_assert!(l.ev.name.iter().all(|&n| (n as usize) < trace.strings.len()), "dangling name id");
        }
        let a = analyze(&trace, &Options::default());
        for g in &a.gaps {
            prop_assert!(g.end > g.start);
            let d = a.devices.iter().find(|d| d.device == g.device).unwrap();
            let (lo, hi) = d.extent().unwrap();
            prop_assert!(lo <= g.start && g.end <= hi);
        }
        for f in [Format::Text, Format::Json, Format::Csv, Format::Md] {
            let mut out = Vec::new();
            write_with(&mut out, &trace, &a, f, true).unwrap();
            let text = String::from_utf8(out).unwrap();
            prop_assert!(!text.contains('\u{1b}') && !text.contains('\u{9b}') && !text.contains('\u{202e}'), "{f:?} leaks a control");
        }
    }
}

#[test]
fn a_kernel_with_times_near_i64_max_is_left_out_and_reported() {
    let dir = TempDir::new().unwrap();
    let p = dir.path().join("corrupt.sqlite");
    let c = Connection::open(&p).unwrap();
    let far = i64::MAX - 10;
    c.execute_batch(&format!(
        "CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
         INSERT INTO StringIds VALUES (1, 'k');
         CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, deviceId INT, streamId INT, correlationId INT,
           globalPid INT, shortName INT);
         INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 2000, 0, 7, 1, {TID_BASE}, 1), (5000, 6000, 0, 7, 2, {TID_BASE}, 1),
           ({far}, {far}, 0, 7, 3, {TID_BASE}, 1), (3000, {far}, 0, 7, 4, {TID_BASE}, 1);"
    ))
    .unwrap();
    drop(c);
    let t = lanescope::load(&p).unwrap();
    assert_eq!((t.meta.start_ns, t.meta.end_ns), (1000, 6000));
    assert_eq!(t.meta.outliers.0, 2);
    let a = analyze(&t, &Options::default());
    assert_eq!(a.devices[0].extent(), Some((1000, 6000)));
    let info = assert_cmd::Command::cargo_bin("lanescope")
        .unwrap()
        .env("XDG_CACHE_HOME", crate::util::cache_home())
        .arg("info")
        .arg(&p)
        .output()
        .unwrap();
    let text = String::from_utf8(info.stdout).unwrap();
    assert!(text.contains("outliers  2 events left out"), "{text}");
}
