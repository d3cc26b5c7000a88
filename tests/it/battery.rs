//! The hostile-input battery behind SECURITY.md's figures: inputs of every kind the README
//! accepts, each run through `lanescope info` and `report --format json` with a deadline,
//! counting crashes (a signal, a panic), hangs and peak memory; and (issue 36) hostile MCP
//! sessions, `record` against misbehaving stub `nsys`es, hostile names in the HTML and
//! SVG outputs (parsed as XML and HTML), GPU-metrics table mutants and shuffled rows
//! (`battery4.rs`, its own test: `battery` runs both).
//! Slow (a few minutes), so ignored: `cargo test --release -- --ignored --nocapture battery`.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rusqlite::Connection;
use tempfile::TempDir;

use crate::util::fixture;

#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) tried: usize,
    pub(crate) errors: usize,
    pub(crate) crashes: Vec<String>,
    pub(crate) hangs: Vec<String>,
    pub(crate) peak_kib: u64,
}

// Peak resident memory of a running process so far (VmHWM), KiB.
fn hwm(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

pub(crate) fn run(t: &mut Tally, label: &str, args: &[&OsStr], env: &[(&str, &OsStr)]) {
    let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("lanescope"));
    c.args(args).env("NO_COLOR", "1").env_remove("LANESCOPE_NSYS").env("XDG_CACHE_HOME", crate::util::cache_home());
    for (k, v) in env {
        c.env(k, v);
    }
    c.stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped());
    watch(t, label, c.spawn().unwrap());
}

// Wait for `child` (60 s at most), tallying its end and peak memory.
pub(crate) fn watch(t: &mut Tally, label: &str, mut child: std::process::Child) {
    let (t0, mut peak) = (Instant::now(), 0);
    let status = loop {
        peak = peak.max(hwm(child.id()).unwrap_or(0));
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    t.tried += 1;
    t.peak_kib = t.peak_kib.max(peak);
    match status {
        None => t.hangs.push(label.to_string()),
        Some(s) if s.code() == Some(1) => t.errors += 1,
        Some(s) if s.success() => {}
        Some(s) => t.crashes.push(format!("{label}: {s}")),
    }
}

pub(crate) fn both(t: &mut Tally, label: &str, p: &Path, env: &[(&str, &OsStr)]) {
    for cmd in [&["info"][..], &["report", "--format", "json"][..]] {
        let mut args: Vec<&OsStr> = cmd.iter().map(OsStr::new).collect();
        args.push(p.as_os_str());
        run(t, label, &args, env);
    }
}

fn sqlite_mutations(d: &Path) -> Vec<(String, PathBuf)> {
    mutations_of(d, &fixture("pageable.sqlite"), "m", &|_| true)
}

// Structural mutations of the tables of `base` that `pick` keeps and lanescope reads.
pub(crate) fn mutations_of(d: &Path, base: &Path, prefix: &str, pick: &dyn Fn(&str) -> bool) -> Vec<(String, PathBuf)> {
    let c = Connection::open(base).unwrap();
    let tables: Vec<String> = c
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let values = ["NULL", "'x'", "X'00ff'", "9223372036854775807", "-9223372036854775808", "-1", "1e308", "0.5"];
    let mut out = Vec::new();
    let mut n = 0;
    // The tables lanescope reads (the enums, analysis and diagnostic tables it does not).
    let read = |t: &&String| !t.starts_with("ENUM_") && !t.starts_with("ANALYSIS") && *t != "DIAGNOSTIC_EVENT";
    for t in tables.iter().filter(read).filter(|t| pick(t)) {
        let cols: Vec<String> = c
            .prepare(&format!("SELECT name FROM pragma_table_info('{t}')"))
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let mut sqls = vec![format!("DROP TABLE {t}"), format!("DELETE FROM {t}")];
        for col in &cols {
            sqls.push(format!("ALTER TABLE {t} DROP COLUMN \"{col}\""));
            for v in values {
                sqls.push(format!("UPDATE {t} SET \"{col}\" = {v} WHERE rowid IN (SELECT rowid FROM {t} LIMIT 3)"));
            }
        }
        for sql in sqls {
            n += 1;
            let p = d.join(format!("{prefix}{n}.sqlite"));
            std::fs::copy(base, &p).unwrap();
            // Constraints refuse some values (NOT NULL, INTEGER PRIMARY KEY): skip those.
            if Connection::open(&p).unwrap().execute_batch(&sql).is_ok() {
                out.push((sql, p));
            } else {
                std::fs::remove_file(&p).unwrap();
            }
        }
    }
    out
}

fn byte_damage(d: &Path, src: &Path, ext: &str, n: usize) -> Vec<(String, PathBuf)> {
    let bytes = std::fs::read(src).unwrap();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut out = Vec::new();
    for i in 0..n {
        let mut b = bytes.clone();
        let label = if i % 2 == 0 {
            for _ in 0..=rnd() % 16 {
                let at = (rnd() as usize) % b.len();
                b[at] ^= 1 << (rnd() % 8);
            }
            format!("flips #{i}")
        } else {
            b.truncate((rnd() as usize) % b.len());
            format!("truncated to {}", b.len())
        };
        let p = d.join(format!("b{i}.{ext}"));
        std::fs::write(&p, b).unwrap();
        out.push((label, p));
    }
    out
}

// A gzipped file: `head`, `unit` repeated `count` times, `tail`.
struct Bomb {
    label: &'static str,
    head: &'static [u8],
    unit: Vec<u8>,
    count: usize,
    tail: &'static [u8],
}

fn gz(p: &Path, b: &Bomb) {
    let mut g = flate2::write::GzEncoder::new(std::fs::File::create(p).unwrap(), flate2::Compression::fast());
    g.write_all(b.head).unwrap();
    for _ in 0..b.count {
        g.write_all(&b.unit).unwrap();
    }
    g.write_all(b.tail).unwrap();
    g.finish().unwrap();
}

fn kineto_inputs(d: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let fields = ["ph", "cat", "name", "ts", "dur", "pid", "tid", "args"];
    let values = [
        "\"x\"",
        "NaN",
        "1e308",
        "0x10",
        "100000000000000000000000000",
        "-1",
        "null",
        "[]",
        "{}",
        "true",
        "\"\u{1b}[2J\"",
    ];
    let mut n = 0;
    for f in fields {
        for v in values {
            n += 1;
            let mut ev = serde_json::json!({"ph": "X", "cat": "kernel", "name": "k", "ts": 5, "dur": 2, "pid": 0,
                "tid": 7, "args": {"device": 0, "stream": 7, "correlation": 1}})
            .to_string();
            ev = ev.replacen(&format!("\"{f}\":"), &format!("\"{f}\":{v},\"_{f}\":"), 1);
            let p = d.join(format!("k{n}.json"));
            std::fs::write(&p, format!("{{\"traceEvents\": [{ev}, {ev}]}}")).unwrap();
            out.push((format!("{f} = {v}"), p));
        }
    }
    let mib = |c: u8| vec![c; 1 << 20];
    let bombs = [
        Bomb {
            label: "512 MiB string",
            head: b"{\"traceEvents\": [{\"ph\":\"X\",\"name\":\"",
            unit: mib(b'A'),
            count: 512,
            tail: b"\"}]}",
        },
        Bomb {
            label: "1 GiB of zeros as a number",
            head: b"{\"traceEvents\": [",
            unit: mib(b'0'),
            count: 1024,
            tail: b"]}",
        },
        Bomb {
            label: "1 GiB top-level string",
            head: b"{\"x\": \"",
            unit: mib(b'y'),
            count: 1024,
            tail: b"\", \"traceEvents\": []}",
        },
        Bomb {
            label: "2^20 nested arrays",
            head: b"{\"traceEvents\": [",
            unit: b"[".to_vec(),
            count: 1 << 20,
            tail: b"]}",
        },
        Bomb {
            label: "4M empty events",
            head: b"{\"traceEvents\": [",
            unit: b"{},".to_vec(),
            count: 4 << 20,
            tail: b"{}]}",
        },
    ];
    for (i, b) in bombs.iter().enumerate() {
        let p = d.join(format!("bomb{i}.json.gz"));
        gz(&p, b);
        out.push((b.label.to_string(), p));
    }
    out
}

pub(crate) fn print(kind: &str, t: &Tally) {
    println!(
        "{kind:<28} tried {:>4}  refused {:>4}  crashes {}  hangs {}  peak {} MiB",
        t.tried,
        t.errors,
        t.crashes.len(),
        t.hangs.len(),
        t.peak_kib >> 10
    );
    for c in t.crashes.iter().chain(&t.hangs) {
        println!("    {c}");
    }
}

#[test]
#[ignore = "slow: the hostile-input battery for SECURITY.md"]
fn battery() {
    let d = TempDir::new().unwrap();
    let mut all_ok = true;
    let report = |kind: &str, inputs: Vec<(String, PathBuf)>| {
        let mut t = Tally::default();
        for (label, p) in &inputs {
            both(&mut t, label, p, &[]);
        }
        print(kind, &t);
        t.crashes.is_empty() && t.hangs.is_empty()
    };
    // Mutations through `info` only: it reads every table `report` does.
    let mut t = Tally::default();
    for (label, p) in sqlite_mutations(d.path()) {
        run(&mut t, &label, &[OsStr::new("info"), p.as_os_str()], &[]);
    }
    print("SQLite structural mutations", &t);
    all_ok &= t.crashes.is_empty() && t.hangs.is_empty();
    all_ok &= report("SQLite byte flips/truncation", byte_damage(d.path(), &fixture("pageable.sqlite"), "sqlite", 60));
    let kineto = fixture("kineto/step_pageable.json.gz");
    let mut plain = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&kineto).unwrap()).read_to_end(&mut plain).unwrap();
    let plain_path = d.path().join("plain.json");
    std::fs::write(&plain_path, plain).unwrap();
    all_ok &= report("Kineto JSON byte damage", byte_damage(d.path(), &plain_path, "json", 60));
    all_ok &= report("Kineto gzip byte damage", byte_damage(d.path(), &kineto, "json.gz", 40));
    all_ok &= report("Kineto wrong types, bombs", kineto_inputs(d.path()));
    // Several inputs at once, and globs with many stars.
    let mut t = Tally::default();
    let a = fixture("pageable.sqlite");
    let link = d.path().join("link.sqlite");
    std::os::unix::fs::symlink(&a, &link).unwrap();
    let stars = d.path().join(format!("{}*.sqlite", "*a".repeat(12)));
    let long = d.path().join(format!("{}.sqlite", "a".repeat(200)));
    std::fs::copy(&a, &long).unwrap();
    let sets: Vec<Vec<&OsStr>> = vec![
        vec![a.as_os_str(), link.as_os_str(), a.as_os_str()],
        vec![a.as_os_str(), kineto.as_os_str()],
        vec![stars.as_os_str()],
        vec![d.path().as_os_str()],
        std::iter::repeat_n(long.as_os_str(), 20).collect(),
    ];
    for set in &sets {
        let mut args = vec![OsStr::new("info")];
        args.extend(set);
        run(&mut t, &format!("{} inputs", set.len()), &args, &[]);
    }
    print("several inputs, globs", &t);
    all_ok &= t.crashes.is_empty() && t.hangs.is_empty();
    // `.nsys-rep` with a misbehaving nsys (each bounded by a 2 s timeout).
    let mut t = Tally::default();
    let stubs = [
        "exec sleep 30",
        "head -c 20000000 /dev/zero | tr '\\0' x >&2; exit 3",
        "echo garbage > \"$7\"",
        "exit 0",
        "head -c 100000 /dev/urandom > \"$7\"",
        "kill -9 $$",
    ];
    for (i, body) in stubs.iter().enumerate() {
        use std::os::unix::fs::PermissionsExt;
        let stub = d.path().join(format!("nsys{i}"));
        std::fs::write(&stub, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
        let rep = d.path().join(format!("r{i}.nsys-rep"));
        std::fs::write(&rep, format!("report {i}")).unwrap();
        let cache = d.path().join("cache");
        std::fs::create_dir_all(&cache).unwrap();
        let env: [(&str, &OsStr); 3] = [
            ("LANESCOPE_NSYS", stub.as_os_str()),
            ("XDG_CACHE_HOME", cache.as_os_str()),
            ("LANESCOPE_NSYS_TIMEOUT", OsStr::new("2")),
        ];
        both(&mut t, body, &rep, &env);
    }
    print(".nsys-rep, bad nsys", &t);
    all_ok &= t.crashes.is_empty() && t.hangs.is_empty();
    assert!(all_ok, "crashes or hangs: see above");
}
