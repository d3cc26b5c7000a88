//! `lanescope mcp`: a scripted JSON-RPC conversation through the binary (every tool, bad
//! arguments, requests left when stdin closes), and one run of the official Python client.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::util::{fixture, sql_i64};

// Send `requests` (one per line), close stdin, and return the replies by id.
fn converse(requests: &[Value]) -> Vec<Value> {
    let text = converse_raw(requests);
    text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect()
}

// The server's whole output for `requests`.
fn converse_raw(requests: &[Value]) -> String {
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("lanescope"))
        .arg("mcp")
        .env("XDG_CACHE_HOME", crate::util::cache_home())
        .env("NO_COLOR", "1")
        .env_remove("LANESCOPE_NSYS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for r in requests {
        writeln!(stdin, "{r}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn call(id: u64, tool: &str, arguments: &Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
}

fn by_id(replies: &[Value], id: u64) -> &Value {
    replies.iter().find(|r| r["id"] == id).unwrap_or_else(|| panic!("no reply to request {id}"))
}

// The result of a successful tool call: one copy, as JSON text.
fn ok(replies: &[Value], id: u64) -> Value {
    let r = &by_id(replies, id)["result"];
    assert_eq!(r["isError"], false, "request {id}: {r}");
    assert!(r.get("structuredContent").is_none(), "request {id}: the result is sent once");
    assert_eq!(r["content"].as_array().map(Vec::len), Some(1), "request {id}");
    serde_json::from_str(r["content"][0]["text"].as_str().unwrap()).unwrap()
}

// The message of a tool error.
fn tool_error(replies: &[Value], id: u64) -> String {
    let r = &by_id(replies, id)["result"];
    assert_eq!(r["isError"], true, "request {id}: {r}");
    r["content"][0]["text"].as_str().unwrap().to_string()
}

fn p(path: &Path) -> String {
    path.display().to_string()
}

#[test]
fn a_scripted_conversation_uses_every_tool() {
    let (t, pinned) = (p(&fixture("pageable.sqlite")), p(&fixture("pinned.sqlite")));
    let replies = converse(&[
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
               "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        call(3, "summary", &json!({"trace": t})),
        call(4, "gaps", &json!({"trace": t, "cause": "pageable-copy", "limit": 3})),
        call(5, "gap", &json!({"trace": t, "id": 0})),
        call(6, "phases", &json!({"trace": t})),
        call(7, "events", &json!({"trace": t, "lane": "kernels s7", "limit": 4})),
        call(8, "events", &json!({"trace": t, "window": "0+1000"})),
        call(9, "diff", &json!({"before": t, "after": pinned})),
        call(10, "gaps", &json!({"trace": t, "window": "4+0.5", "limit": 100})),
        json!({"jsonrpc": "2.0", "id": 11, "method": "ping"}),
    ]);
    assert_eq!(replies.len(), 11, "one reply per request, none to the notification");
    let init = &by_id(&replies, 1)["result"];
    assert_eq!(
        (init["protocolVersion"].as_str(), init["serverInfo"]["name"].as_str()),
        (Some("2025-06-18"), Some("lanescope"))
    );
    let tools = by_id(&replies, 2)["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["summary", "gaps", "gap", "phases", "events", "diff"]);
    assert!(tools.iter().all(|t| t["inputSchema"]["type"] == "object" && t["description"].is_string()));

    let s = ok(&replies, 3);
    assert_eq!(s["headline"], s["findings"][0]["message"]);
    // The pinned-memory what-if is there, not first, and beside no fix: it saves nothing here.
    let fixes = s["findings"].as_array().unwrap();
    let pin: Vec<&Value> = fixes.iter().filter(|f| f["evidence"]["whatif_fix"] == "pin_memory").collect();
    assert!(!pin.is_empty() && pin.iter().all(|f| f["fix"] == "" && f["evidence"]["whatif_saving_per_step_ns"] == "0"));
    assert_ne!(fixes[0]["evidence"]["whatif_fix"], "pin_memory", "{}", s["findings"]);
    assert!(s["steady"]["by_cause"]["pageable-copy"]["total_ns"].as_i64() > Some(0));

    let g = ok(&replies, 4);
    let list = g["gaps"].as_array().unwrap();
    assert_eq!(list.len(), 3);
    assert!(list.iter().all(|x| x["cause"] == "pageable-copy" && x["has_host"].is_boolean()));
    assert!(list.windows(2).all(|w| w[0]["dur_ns"].as_i64() >= w[1]["dur_ns"].as_i64()), "longest first");
    assert!(g["matched"].as_u64() > Some(3) && g["more"] == true);

    // Gap 0 is the earliest: no gap of `gaps` starts before it.
    let first = ok(&replies, 5);
    assert_eq!(first["id"], 0);
    assert!(list.iter().all(|x| x["start_ns"].as_i64() > first["start_ns"].as_i64()));
    assert!(first["evidence"].as_str().is_some_and(|e| !e.is_empty()));

    let ph = ok(&replies, 6);
    assert_eq!(ph["step_phase"], "step N");
    assert!(ph["phases"].as_array().unwrap().iter().any(|x| x["name"] == "forward"));

    let ev = ok(&replies, 7);
    let kernels =
        sql_i64(&fixture("pageable.sqlite"), "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE streamId = 7");
    assert_eq!((ev["count"].as_i64(), ev["returned"].as_u64()), (Some(kernels), Some(4)));
    let e = ev["events"].as_array().unwrap();
    assert!(e.iter().all(|x| x["name"].is_string() && x["end_ns"].as_i64() >= x["start_ns"].as_i64()));
    let lanes_reply = ok(&replies, 8);
    let lanes = lanes_reply["lanes"].as_array().unwrap();
    let kernel_lane = lanes.iter().find(|l| l["name"] == "GPU 0 · kernels s7").expect("the kernel lane is listed");
    assert_eq!(kernel_lane["events"].as_i64(), Some(kernels));

    let d = ok(&replies, 9);
    assert!(d["verdict"].as_str().is_some_and(|v| !v.is_empty()));
    assert!(
        d["findings"]["gone"]
            .as_array()
            .is_some_and(|g| g.iter().any(|f| f["rule"].as_str().is_some_and(|r| r.starts_with("pageable_bandwidth")))),
        "{}",
        d["findings"]
    );

    // A window keeps the gaps that overlap it.
    let w = ok(&replies, 10);
    let (lo, hi) = (4_000_000_000_i64, 4_500_000_000_i64);
    let t0 = s["trace"]["start_ns"].as_i64().unwrap();
    assert!(
        w["gaps"]
            .as_array()
            .unwrap()
            .iter()
            .all(|x| { x["start_ns"].as_i64().unwrap() < t0 + hi && x["end_ns"].as_i64().unwrap() > t0 + lo })
    );
}

#[test]
fn bad_arguments_are_tool_errors_and_the_server_goes_on() {
    let t = p(&fixture("pageable.sqlite"));
    let replies = converse(&[
        call(1, "summary", &json!({})),
        call(2, "summary", &json!({"trace": 5})),
        call(3, "summary", &json!({"trace": "/no/such/trace.sqlite"})),
        call(4, "gaps", &json!({"trace": t, "limit": 0})),
        call(5, "gaps", &json!({"trace": t, "window": "soon"})),
        call(6, "gaps", &json!({"trace": t, "cause": "gremlins"})),
        call(7, "gaps", &json!({"trace": t, "phase": "nope"})),
        call(8, "gaps", &json!({"trace": t, "gpu": 42})),
        call(9, "gap", &json!({"trace": t, "id": 1_000_000})),
        call(10, "events", &json!({"trace": t, "lane": "GPU"})),
        call(11, "events", &json!({"trace": t, "lane": 100_000})),
        call(12, "summary", &json!({"trace": t, "verbose": true})),
        call(13, "no-such-tool", &json!({})),
        json!({"jsonrpc": "2.0", "id": 14, "method": "resources/list"}),
        json!({"jsonrpc": "2.0", "id": 15, "method": "tools/call", "params": {"name": "summary", "arguments": [1]}}),
        call(16, "summary", &json!({"trace": t})),
    ]);
    assert_eq!(replies.len(), 16);
    let expect = [
        (1, "`trace` is required"),
        (2, "`trace` must be a string"),
        (3, "/no/such/trace.sqlite"),
        (4, "from 1 to 100"),
        (5, "START+WIDTH"),
        (6, "`cause` `gremlins` is none of"),
        (7, "no phase of this trace"),
        (8, "`gpu` 42 is no GPU"),
        (9, "ids 0 to 96"),
        (10, "matches"),
        (11, "lanes, 0 to"),
        (12, "unknown argument `verbose`"),
        (15, "must be an object"),
    ];
    for (id, text) in expect {
        let e = tool_error(&replies, id);
        assert!(e.contains(text), "request {id}: {e}");
    }
    assert_eq!(by_id(&replies, 13)["error"]["code"], -32602);
    assert_eq!(by_id(&replies, 14)["error"]["code"], -32601);
    assert!(ok(&replies, 16)["headline"].is_string(), "the server still answers");
}

// The official Python SDK's stdio client lists the tools and calls `summary`. Skipped, with
// a message, where the `mcp` package is not installed; with LANESCOPE_REQUIRE_MCP=1 (set by
// `.ci/run` once it installed the package) a missing package fails the test instead.
#[test]
fn the_official_python_client_lists_and_calls() {
    let probe = Command::new("python3").args(["-c", "import mcp"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        let why = "the Python `mcp` package is not installed (python3 -m pip install mcp)";
        assert!(
            std::env::var_os("LANESCOPE_REQUIRE_MCP").is_none_or(|v| v != "1"),
            "LANESCOPE_REQUIRE_MCP=1 but {why}"
        );
        eprintln!("skipped: {why}");
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp_client.py");
    let out = Command::new("python3")
        .arg(&script)
        .arg(assert_cmd::cargo::cargo_bin("lanescope"))
        .arg(fixture("pageable.sqlite"))
        .env("XDG_CACHE_HOME", crate::util::cache_home())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["tools"], json!(["summary", "gaps", "gap", "phases", "events", "diff"]));
    assert_eq!(v["is_error"], false);
    // The headline is the one `report` writes for the same trace (findings[0]'s message).
    let report = Command::new(assert_cmd::cargo::cargo_bin("lanescope"))
        .env("XDG_CACHE_HOME", crate::util::cache_home())
        .args(["report", "--format", "json"])
        .arg(fixture("pageable.sqlite"))
        .env("XDG_CACHE_HOME", crate::util::cache_home())
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&report.stdout).unwrap();
    let first = report["findings"][0]["message"].as_str().expect("a first finding");
    assert_eq!(v["headline"].as_str(), Some(first), "{v}");
}

// Issue 36, item 4: a FIFO named like a report is refused at once, and the server goes on.
#[test]
fn a_fifo_named_like_a_report_is_a_tool_error_not_a_hang() {
    let d = tempfile::TempDir::new().unwrap();
    let fifo = d.path().join("run.nsys-rep");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let (tx, rx) = std::sync::mpsc::channel();
    let requests =
        [call(1, "summary", &json!({"trace": p(&fifo)})), json!({"jsonrpc": "2.0", "id": 2, "method": "ping"})];
    std::thread::spawn(move || tx.send(converse(&requests)));
    let replies = rx.recv_timeout(std::time::Duration::from_secs(30)).expect("the server hangs on a FIFO");
    assert!(tool_error(&replies, 1).contains("not a regular file"), "{replies:?}");
    assert_eq!(by_id(&replies, 2)["result"], json!({}));
}

// Issue 36, item 6: DEL, C1 and bidi controls of trace names are escaped in the reply's
// bytes (as every JSON writer of lanescope does), and read back as the names.
#[test]
fn replies_escape_del_c1_and_bidi_controls() {
    let d = tempfile::TempDir::new().unwrap();
    let t = crate::util::hostile_export(d.path());
    let evil = "\u{7f}\u{9b}31m\u{202e}rlo\u{2066}";
    crate::util::sql_exec(&t, &format!("UPDATE StringIds SET value = '{evil}' WHERE id = 1"));
    let out = converse_raw(&[call(1, "events", &json!({"trace": p(&t), "lane": 0}))]);
    assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "a raw control: {out:?}");
    assert!(!out.contains(['\u{202e}', '\u{2066}']), "a raw bidi control: {out:?}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    let r: Value = serde_json::from_str(v["result"]["content"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(r["events"][0]["name"], evil);
}

// Issue 36, items 3 and 5: bytes that are not UTF-8 and a huge id get errors and the
// session goes on; a 256 KiB kernel name is cut in every reply.
#[test]
fn bad_lines_are_answered_and_big_names_are_cut() {
    let d = tempfile::TempDir::new().unwrap();
    let t = crate::util::hostile_export(d.path());
    let name = "n".repeat(256 << 10);
    crate::util::sql_exec(&t, &format!("UPDATE StringIds SET value = '{name}' WHERE id = 1"));
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("lanescope"))
        .arg("mcp")
        .env("XDG_CACHE_HOME", crate::util::cache_home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\xc3\x28\"}\n").unwrap();
    writeln!(stdin, "{{\"jsonrpc\":\"2.0\",\"id\":1e400,\"method\":\"ping\"}}").unwrap();
    writeln!(stdin, "{}", call(3, "events", &json!({"trace": p(&t), "lane": 0}))).unwrap();
    writeln!(stdin, "{}", call(4, "summary", &json!({"trace": p(&t)}))).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(lines.len(), 4, "{lines:?}");
    let replies: Vec<Value> = lines.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(replies[0]["error"]["code"], -32700);
    assert_eq!(replies[1]["error"]["code"], -32700);
    for (id, line) in [(3, lines[2]), (4, lines[3])] {
        assert!(line.len() < 64 << 10, "reply {id}: {} bytes", line.len());
        assert!(!ok(&replies, id).to_string().contains(&"n".repeat(1001)), "reply {id}");
    }
    let events = ok(&replies, 3);
    let shown = events["events"][0]["name"].as_str().unwrap();
    assert!(shown.ends_with('…') && name.starts_with(shown.trim_end_matches('…')), "{shown}");
}

// Issue 36, item 3: a line over 16 MiB is refused (not parsed), ids a client cannot read
// back exactly are refused, a long method is not echoed whole; the session goes on.
#[test]
fn long_lines_unsafe_ids_and_long_methods_are_refused() {
    let pad = " ".repeat(17 << 20);
    let mut input = format!("{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"{pad}}}\n").into_bytes();
    for id in ["18446744073709551616", "9007199254740993", "2.5"] {
        input.extend(format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n").bytes());
    }
    let method = "m".repeat(1 << 20);
    input.extend(format!("{}\n", json!({"jsonrpc": "2.0", "id": 5, "method": method})).bytes());
    input.extend(b"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\"}\n");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("lanescope"))
        .arg("mcp")
        .env("XDG_CACHE_HOME", crate::util::cache_home())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    let lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(lines.len(), 6, "{lines:?}");
    let r: Vec<Value> = lines.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    for v in &r[..4] {
        assert_eq!((v["error"]["code"].as_i64(), &v["id"]), (Some(-32600), &Value::Null), "{v}");
    }
    assert_eq!(r[4]["error"]["code"], -32601);
    assert!(lines[4].len() < 1000, "{} bytes", lines[4].len());
    assert_eq!(r[5]["result"], json!({}));
}

// Issue 36, item 13: lanes of processes that share a GPU stream have one index and one
// name on every run of the server, the name telling the process.
#[test]
fn lanes_shared_by_processes_keep_their_index_and_name() {
    let d = tempfile::TempDir::new().unwrap();
    let t = crate::hostile4::processes_on_one_stream(d.path(), 4);
    let list = || {
        let replies = converse(&[call(1, "events", &json!({"trace": p(&t)}))]);
        ok(&replies, 1)["lanes"].clone()
    };
    let first = list();
    let kernels: Vec<(String, i64)> = first
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["name"].as_str().is_some_and(|n| n.starts_with("GPU 0 · kernels s7")))
        .map(|l| (l["name"].as_str().unwrap().to_string(), l["pid"].as_i64().unwrap()))
        .collect();
    let want: Vec<(String, i64)> = (101..105).map(|p| (format!("GPU 0 · kernels s7 (pid {p})"), p)).collect();
    assert_eq!(kernels, want);
    for _ in 0..4 {
        assert_eq!(list(), first);
    }
}
