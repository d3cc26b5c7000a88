//! The battery's part for issue 36 (`cargo test -- --ignored battery` runs it with
//! `battery::battery`): hostile MCP sessions,
//! `record` against misbehaving stub `nsys`es, hostile names in the HTML and SVG outputs
//! parsed as XML and HTML, GPU-metrics table mutants, and exports with shuffled rows
//! (whose report must equal the original's).

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use rusqlite::Connection;

use crate::battery::{Tally, both, mutations_of, print, run, watch};
use crate::util::{fixture, matrix_trace};

#[test]
#[ignore = "slow: the hostile-input battery for SECURITY.md"]
fn battery_hardening4() {
    let d = tempfile::TempDir::new().unwrap();
    let d = d.path();
    let mut ok = mcp_sessions(d);
    ok &= record_stubs(d);
    ok &= pictures(d);
    ok &= metrics_mutants(d);
    ok &= shuffled_rows(d);
    assert!(ok, "crashes, hangs or wrong answers: see above");
}

fn done(kind: &str, t: &Tally, wrong: &[String]) -> bool {
    print(kind, t);
    for w in wrong {
        println!("    wrong: {w}");
    }
    t.crashes.is_empty() && t.hangs.is_empty() && wrong.is_empty()
}

fn bin() -> Command {
    let mut c = Command::new(assert_cmd::cargo::cargo_bin("lanescope"));
    c.env("NO_COLOR", "1").env_remove("LANESCOPE_NSYS").env("XDG_CACHE_HOME", crate::util::cache_home());
    c
}

// An export whose kernel, thread, process, NVTX and GPU names are `name`.
fn named(d: &Path, file: &str, name: &[u8]) -> PathBuf {
    let p = d.join(file);
    let _ = std::fs::remove_file(&p);
    let base = d.join(format!("{file}.d"));
    std::fs::create_dir_all(&base).unwrap();
    std::fs::rename(crate::util::hostile_export(&base), &p).unwrap();
    let c = Connection::open(&p).unwrap();
    let v = rusqlite::types::Value::Text(String::from_utf8_lossy(name).into_owned());
    // Bytes that are not UTF-8 go in as a blob cast to text, as a broken export has them.
    let raw = std::str::from_utf8(name).is_err();
    let set = |sql: &str| {
        if raw {
            c.execute(&sql.replace("?1", "CAST(?1 AS TEXT)"), [name]).unwrap();
        } else {
            c.execute(sql, [&v]).unwrap();
        }
    };
    set("UPDATE StringIds SET value = ?1 WHERE id = 1");
    set("UPDATE PROCESSES SET name = ?1");
    set("UPDATE NVTX_EVENTS SET text = ?1");
    set("UPDATE TARGET_INFO_GPU SET name = ?1");
    p
}

// Hostile names: markup, controls, bidi, XML non-characters, bad UTF-8, 1 MiB.
fn hostile_names() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("markup", b"<script>alert(1)</script><img src=x onerror=alert(2)>\"'&amp;]]><!--".to_vec()),
        ("controls", "\u{1b}]0;t\u{7}\u{1b}[2J\u{9b}31m\u{7f}\u{0}x".as_bytes().to_vec()),
        ("bidi", "a\u{202e}gnp.exe\u{2066}\u{2069}\u{61c}".as_bytes().to_vec()),
        ("non-characters", "\u{fffe}\u{ffff}\u{fdd0}".as_bytes().to_vec()),
        ("not UTF-8", b"ok\xff\xfe\xc3\x28".to_vec()),
        ("1 MiB", "\u{167}".repeat(1 << 19).into_bytes()),
    ]
}

// Feed `input` to `lanescope mcp`; the replies, under the battery's watch.
fn session(t: &mut Tally, label: &str, input: Vec<u8>) -> Vec<u8> {
    let mut child =
        bin().arg("mcp").stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let mut stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = stdout.read_to_end(&mut out);
        out
    });
    watch(t, label, child);
    let _ = writer.join();
    reader.join().unwrap_or_default()
}

fn line(v: &serde_json::Value) -> Vec<u8> {
    format!("{v}\n").into_bytes()
}

fn call(id: u64, tool: &str, args: &serde_json::Value) -> Vec<u8> {
    line(&serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                             "params": {"name": tool, "arguments": args}}))
}

const PING: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"ping\"}\n";

// Sessions: (label, input, replies expected).
fn sessions(d: &Path) -> Vec<(String, Vec<u8>, usize)> {
    let big = |n: usize, c: u8| vec![c; n];
    let mut out: Vec<(String, Vec<u8>, usize)> = vec![
        ("not UTF-8".into(), [&b"\xff\xfe{\"id\":1}\n"[..], PING].concat(), 2),
        ("a 20 MiB line".into(), [&big(20 << 20, b'a')[..], b"\n", PING].concat(), 2),
        ("20 MiB without a newline".into(), big(20 << 20, b'{'), 1),
        ("100,000 nested arrays".into(), [&big(100_000, b'[')[..], b"\n", PING].concat(), 2),
        (
            "ids 1e400, 2^64, 1.5, [], {}".into(),
            {
                let ids = ["1e400", "18446744073709551616", "1.5", "[]", "{}"];
                ids.iter().flat_map(|i| format!("{{\"id\":{i},\"method\":\"ping\"}}\n").into_bytes()).collect()
            },
            5,
        ),
        ("a 1 MiB method".into(), line(&serde_json::json!({"id": 1, "method": "m".repeat(1 << 20)})), 1),
        (
            "a batch of 10,000 pings".into(),
            {
                let one = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
                format!("[{}]\n", vec![one; 10_000].join(",")).into_bytes()
            },
            1,
        ),
        ("a 1 MiB tool name".into(), call(1, &"t".repeat(1 << 20), &serde_json::json!({})), 1),
    ];
    let fifo = d.join("mcp-fifo.nsys-rep");
    let _ = std::fs::remove_file(&fifo);
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let zero = d.join("mcp-zero.qdrep");
    let _ = std::fs::remove_file(&zero);
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    for (i, p) in [fifo, zero].iter().enumerate() {
        out.push((format!("special file {i}"), call(1, "summary", &serde_json::json!({"trace": p})), 1));
    }
    for (label, name) in hostile_names() {
        let p = named(d, &format!("mcp-{}.sqlite", out.len()), &name);
        let t = serde_json::json!({"trace": p});
        let mut input = Vec::new();
        for (i, (tool, args)) in [
            ("summary", t.clone()),
            ("gaps", t.clone()),
            ("gap", serde_json::json!({"trace": p, "id": 0})),
            ("phases", t.clone()),
            ("events", t.clone()),
            ("events", serde_json::json!({"trace": p, "lane": 0})),
            ("diff", serde_json::json!({"before": p, "after": p})),
            (
                "gaps",
                serde_json::json!({"trace": p, "phase": String::from_utf8_lossy(&name), "window": "x".repeat(1 << 20)}),
            ),
        ]
        .into_iter()
        .enumerate()
        {
            input.extend(call(i as u64, tool, &args));
        }
        out.push((format!("every tool, {label} names"), input, 8));
    }
    // More traces than the cache holds, each opened twice.
    let copies: Vec<PathBuf> = (0..10)
        .map(|i| {
            let p = d.join(format!("mcp-copy{i}.sqlite"));
            std::fs::copy(fixture("pageable.sqlite"), &p).unwrap();
            p
        })
        .collect();
    let input: Vec<u8> = copies
        .iter()
        .chain(&copies)
        .enumerate()
        .flat_map(|(i, p)| call(i as u64, "summary", &serde_json::json!({"trace": p})))
        .collect();
    out.push(("20 summaries of 10 traces".into(), input, 20));
    out
}

// What is wrong with `out`, the replies to a session expecting `want` of them.
fn judge(out: &[u8], want: usize) -> Option<String> {
    let Ok(text) = std::str::from_utf8(out) else { return Some("replies not UTF-8".into()) };
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() != want {
        return Some(format!("{} replies, {want} expected", lines.len()));
    }
    if let Some(l) = lines.iter().find(|l| l.len() > 512 << 10) {
        return Some(format!("a reply of {} bytes", l.len()));
    }
    if text.chars().any(|c| (c.is_control() && c != '\n') || lanescope_bidi(c)) {
        return Some("a raw control or bidi character".into());
    }
    lines.iter().find(|l| serde_json::from_str::<serde_json::Value>(l).is_err()).map(|l| format!("not JSON: {l:.80}"))
}

fn lanescope_bidi(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn mcp_sessions(d: &Path) -> bool {
    let (mut t, mut wrong) = (Tally::default(), Vec::new());
    for (label, input, want) in sessions(d) {
        let out = session(&mut t, &label, input);
        if let Some(w) = judge(&out, want) {
            wrong.push(format!("{label}: {w}"));
        }
    }
    done("MCP sessions", &t, &wrong)
}

// Stub nsys: (label, what `export` does, what `profile` does, SIGTERM to lanescope after 1 s).
const STUBS: [(&str, &str, &str, bool); 7] = [
    ("writes no report", "cp \"$STUB_EXPORT\" \"$7\"", "exit 0", false),
    ("writes garbage", "echo junk > \"$7\"", "echo garbage > \"$out\"", false),
    ("records fine", "cp \"$STUB_EXPORT\" \"$7\"", "echo report > \"$out\"", false),
    ("kills itself", "cp \"$STUB_EXPORT\" \"$7\"", "kill -9 $$", false),
    (
        "ignores SIGINT and SIGTERM",
        "cp \"$STUB_EXPORT\" \"$7\"",
        "echo report > \"$out\"; trap '' INT TERM; exec sleep 30",
        true,
    ),
    (
        "stops on SIGINT",
        "cp \"$STUB_EXPORT\" \"$7\"",
        "echo report > \"$out\"; trap 'exit 130' INT; sleep 30 & wait",
        true,
    ),
    (
        "20 MB of output",
        "cp \"$STUB_EXPORT\" \"$7\"",
        "head -c 20000000 /dev/zero | tr '\\0' x; echo report > \"$out\"",
        false,
    ),
];

fn stub_dir(d: &Path, i: usize, export: &str, profile: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = d.join(format!("rec{i}"));
    std::fs::create_dir_all(&dir).unwrap();
    let stub = dir.join("nsys");
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = export ]; then {export}; exit 0; fi\nprev=\"\"; out=/dev/null\n\
         for a in \"$@\"; do [ \"$prev\" = \"-o\" ] && out=\"$a\"; prev=\"$a\"; done\n{profile}\n"
    );
    std::fs::write(&stub, script).unwrap();
    std::fs::set_permissions(&stub, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(dir.join("paranoid"), "2\n").unwrap();
    dir
}

fn record_in(dir: &Path, args: &[&str]) -> Command {
    let mut c = bin();
    c.current_dir(dir).arg("record").args(args);
    c.env("LANESCOPE_NSYS", dir.join("nsys")).env("XDG_CACHE_HOME", dir.join("cache"));
    c.env("LANESCOPE_PERF_EVENT_PARANOID", dir.join("paranoid")).env("LANESCOPE_STOP_GRACE", "1");
    c.env("STUB_EXPORT", fixture("pageable.sqlite")).env("LANESCOPE_NSYS_TIMEOUT", "10");
    c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
    c
}

fn record_stubs(d: &Path) -> bool {
    let mut t = Tally::default();
    for (i, (label, export, profile, signal)) in STUBS.iter().enumerate() {
        let dir = stub_dir(d, i, export, profile);
        for args in
            [&["--report", "json", "--", "true"][..], &["-o", "x\u{1b}[2J", "--report", "json", "--", "-dash"][..]]
        {
            let child = record_in(&dir, args).spawn().unwrap();
            if *signal {
                let pid = child.id().to_string();
                std::thread::spawn(move || {
                    std::thread::sleep(std::time::Duration::from_secs(1));
                    let _ = Command::new("/bin/kill").args(["-TERM", &pid]).status();
                });
            }
            record_watch(&mut t, &format!("{label} {args:?}"), child);
        }
    }
    // Four at once without -o, in one directory.
    let dir = stub_dir(d, STUBS.len(), "cp \"$STUB_EXPORT\" \"$7\"", "sleep 1; echo report > \"$out\"");
    let kids: Vec<_> = (0..4).map(|_| record_in(&dir, &["--report", "csv", "--", "true"]).spawn().unwrap()).collect();
    for k in kids {
        record_watch(&mut t, "four at once", k);
    }
    let reports = std::fs::read_dir(&dir)
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "nsys-rep"));
    let wrong = if reports.count() == 4 { Vec::new() } else { vec!["four at once: not four reports".to_string()] };
    done("record, stub nsys", &t, &wrong)
}

// `record` passes the program's exit code on: only a panic (101) or a signal is a crash.
fn record_watch(t: &mut Tally, label: &str, child: std::process::Child) {
    let mut inner = Tally::default();
    watch(&mut inner, label, child);
    t.tried += inner.tried;
    t.errors += inner.errors;
    t.peak_kib = t.peak_kib.max(inner.peak_kib);
    t.hangs.extend(inner.hangs);
    // `watch` counts any code but 0 and 1 as a crash; here 130 or 137 are the program's.
    let code = |c: &String| c.rsplit("exit status: ").next().and_then(|x| x.trim().parse::<i32>().ok());
    t.crashes.extend(inner.crashes.into_iter().filter(|c| code(c).is_none_or(|n| n == 101)));
}

// A Python check of one output: SVG parsed as XML; HTML parsed as HTML with no script,
// no event-handler attribute, and each inline SVG parsed as XML. Prints what is wrong.
const PARSE: &str = r#"
import sys, re, xml.etree.ElementTree as ET
from html.parser import HTMLParser
doc = open(sys.argv[1], encoding="utf-8").read()
bad = []
def xml(s, what):
    try:
        ET.fromstring(s)
    except Exception as e:
        bad.append(f"{what}: {e}")
if sys.argv[2] == "svg":
    xml(doc, "svg")
else:
    class P(HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag in ("script", "iframe", "object", "embed"):
                bad.append(f"<{tag}>")
            for k, v in attrs:
                if k.startswith("on") or (v or "").strip().lower().startswith("javascript:"):
                    bad.append(f"attribute {k}")
    P().feed(doc)
    for i, s in enumerate(re.findall(r"<svg.*?</svg>", doc, re.S)):
        xml(s, f"svg {i}")
print("; ".join(bad))
"#;

fn pictures(d: &Path) -> bool {
    let (mut t, mut wrong) = (Tally::default(), Vec::new());
    let has_python = Command::new("python3").args(["-c", "import xml.etree.ElementTree, html.parser"]).status();
    if !has_python.is_ok_and(|s| s.success()) {
        println!("pictures: skipped (python3 with xml.etree and html.parser is needed)");
        return true;
    }
    let script = d.join("parse.py");
    std::fs::write(&script, PARSE).unwrap();
    for (label, name) in hostile_names() {
        let p = named(d, &format!("pic-{}.sqlite", label.replace(' ', "-")), &name);
        let ps = p.to_str().unwrap();
        let outputs: [(&str, Vec<&str>); 3] = [
            ("svg", vec!["snapshot", ps, "--min-gap", "1us", "-o", "-"]),
            ("html", vec!["report", ps, "--format", "html", "--min-gap", "1us"]),
            ("html", vec!["diff", ps, ps, "--format", "html", "--min-gap", "1us"]),
        ];
        for (kind, args) in outputs {
            let what = format!("{label}: {}", args[0]);
            let file = d.join(format!("out.{kind}"));
            let mut c = bin();
            c.args(&args).stdout(std::fs::File::create(&file).unwrap()).stderr(Stdio::null());
            watch(&mut t, &what, c.spawn().unwrap());
            let size = std::fs::metadata(&file).map_or(0, |m| m.len());
            if size > 8 << 20 {
                wrong.push(format!("{what}: {size} bytes"));
            }
            let o = Command::new("python3").arg(&script).arg(&file).arg(kind).output().unwrap();
            let said = String::from_utf8_lossy(&o.stdout).trim().to_string();
            if !o.status.success() || !said.is_empty() {
                wrong.push(format!("{what}: {said}{}", String::from_utf8_lossy(&o.stderr)));
            }
        }
    }
    done("hostile names in SVG/HTML", &t, &wrong)
}

fn metrics_mutants(d: &Path) -> bool {
    let mut t = Tally::default();
    let base = matrix_trace("g_pinned");
    for (label, p) in mutations_of(d, &base, "gm", &|t| t.contains("GPU_METRICS")) {
        both(&mut t, &label, &p, &[]);
    }
    done("GPU-metrics table mutants", &t, &[])
}

// A copy of `src` with the rows of every table in another order.
fn shuffle(src: &Path, dst: &Path) {
    std::fs::copy(src, dst).unwrap();
    let c = Connection::open(dst).unwrap();
    let tables: Vec<String> = c
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for t in tables {
        c.execute_batch(&format!(
            "CREATE TEMP TABLE s AS SELECT * FROM \"{t}\" ORDER BY random();
             DELETE FROM \"{t}\"; INSERT INTO \"{t}\" SELECT * FROM s; DROP TABLE s;"
        ))
        .unwrap();
    }
}

// The report as JSON, without the paths (the copies are elsewhere).
fn report(t: &mut Tally, label: &str, p: &Path) -> serde_json::Value {
    run(t, label, &[OsStr::new("report"), OsStr::new("--format"), OsStr::new("json"), p.as_os_str()], &[]);
    let out = bin().args(["report", "--format", "json"]).arg(p).output().unwrap();
    let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    strip_paths(&mut v);
    v
}

fn strip_paths(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(o) => {
            o.remove("path");
            o.values_mut().for_each(strip_paths);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip_paths),
        _ => {}
    }
}

fn shuffled_rows(d: &Path) -> bool {
    let (mut t, mut wrong) = (Tally::default(), Vec::new());
    for (label, src) in [("pageable", fixture("pageable.sqlite")), ("g_pinned", matrix_trace("g_pinned"))] {
        let want = report(&mut t, label, &src);
        for k in 0..3 {
            let p = d.join(format!("shuffled-{label}-{k}.sqlite"));
            shuffle(&src, &p);
            if report(&mut t, label, &p) != want {
                wrong.push(format!("{label}, shuffle {k}: another report"));
            }
        }
    }
    done("shuffled rows", &t, &wrong)
}
