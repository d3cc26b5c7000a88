//! `lanescope mcp`: a Model Context Protocol server on stdin and stdout, so that an agent
//! asks lanescope about a trace instead of reading the export.
//!
//! The protocol is the small JSON-RPC 2.0 subset a tools-only server needs (`initialize`,
//! `notifications/initialized`, `ping`, `tools/list`, `tools/call`), written by hand:
//! requests are answered one at a time in the order read, so a synchronous loop serves
//! them and no async runtime is needed. Messages are one JSON value per line.
//!
//! - Every request read before stdin closes is answered; notifications are not.
//! - A tool's bad arguments (and any failure inside a tool, a panic included) are a tool
//!   result with `isError: true`; an unknown method or tool is a JSON-RPC error.

mod args;
mod tools;

use std::io::{BufRead, Write};

use anyhow::{Context, Result};
use serde_json::{Value, json};

/// Protocol revisions this server speaks; an unknown one requested gets the first.
const VERSIONS: [&str; 4] = ["2025-06-18", "2025-11-25", "2025-03-26", "2024-11-05"];

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC code of invalid parameters (an unknown tool, `params` not an object).
const INVALID_PARAMS: i64 = -32602;

/// A JSON-RPC error: code and message.
type RpcError = (i64, String);

/// Longest request line read: a longer one is skipped (never held whole) and answered
/// with an error.
const MAX_LINE: usize = 16 << 20;

/// Serve requests from `input` until it closes, answering on `output`.
pub(crate) fn serve(input: impl BufRead, output: impl Write) -> Result<()> {
    serve_limited(input, output, MAX_LINE)
}

fn serve_limited(mut input: impl BufRead, mut output: impl Write, max_line: usize) -> Result<()> {
    let mut server = tools::Server::default();
    let mut buf = Vec::new();
    loop {
        let reply = match read_line(&mut input, &mut buf, max_line).context("reading a request from stdin")? {
            Line::End => return Ok(()),
            Line::TooLong => {
                Some(error(&Value::Null, INVALID_REQUEST, &format!("a request line over {max_line} bytes was skipped")))
            }
            Line::Read => match std::str::from_utf8(&buf) {
                // One bad line must not end the session: say so and read the next.
                Err(e) => Some(error(&Value::Null, PARSE_ERROR, &format!("not UTF-8: {e}"))),
                Ok(line) if line.trim().is_empty() => None,
                Ok(line) => handle_line(&mut server, line),
            },
        };
        let Some(reply) = reply else { continue };
        let sent = writeln!(output, "{}", crate::text::json_line(&reply)).and_then(|()| output.flush());
        // The client went away: nobody is left to answer.
        if matches!(&sent, Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe) {
            return Ok(());
        }
        sent.context("writing a reply to stdout")?;
    }
}

/// What [`read_line`] found.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    /// A line, in the buffer (without its newline).
    Read,
    /// A line longer than the limit, consumed and dropped.
    TooLong,
    /// The end of the input.
    End,
}

// Read the next line into `buf` (cleared first), holding at most `max` bytes of it: a
// longer line is read to its end and dropped.
fn read_line(input: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> std::io::Result<Line> {
    buf.clear();
    let (mut any, mut too_long) = (false, false);
    loop {
        let chunk = match input.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(if !any {
                Line::End
            } else if too_long {
                Line::TooLong
            } else {
                Line::Read
            });
        }
        any = true;
        let newline = memchr::memchr(b'\n', chunk);
        let part = &chunk[..newline.unwrap_or(chunk.len())];
        if too_long || buf.len() + part.len() > max {
            too_long = true;
            buf.clear();
        } else {
            buf.extend_from_slice(part);
        }
        let used = newline.map_or(chunk.len(), |i| i + 1);
        input.consume(used);
        if newline.is_some() {
            return Ok(if too_long { Line::TooLong } else { Line::Read });
        }
    }
}

// The reply to one line: a message, or a batch (an array) of them.
fn handle_line(server: &mut tools::Server, line: &str) -> Option<Value> {
    match serde_json::from_str::<Value>(line) {
        Err(e) => Some(error(&Value::Null, PARSE_ERROR, &format!("not JSON: {e}"))),
        Ok(Value::Array(batch)) if batch.is_empty() => Some(error(&Value::Null, INVALID_REQUEST, "empty batch")),
        Ok(Value::Array(batch)) => {
            let replies: Vec<Value> = batch.iter().filter_map(|m| handle(server, m)).collect();
            (!replies.is_empty()).then_some(Value::Array(replies))
        }
        Ok(message) => handle(server, &message),
    }
}

// The reply to one message; None for notifications and for the client's own replies.
fn handle(server: &mut tools::Server, message: &Value) -> Option<Value> {
    let Some(object) = message.as_object() else {
        return Some(error(&Value::Null, INVALID_REQUEST, "a message is a JSON object"));
    };
    let id = object.get("id").cloned();
    let Some(method) = object.get("method").and_then(Value::as_str) else {
        // A response (this server sends no requests) needs no answer; anything else does.
        let is_response = object.contains_key("result") || object.contains_key("error");
        return (!is_response).then(|| error(&id.unwrap_or(Value::Null), INVALID_REQUEST, "no method"));
    };
    let id = id?;
    if let Err(why) = check_id(&id) {
        return Some(error(&Value::Null, INVALID_REQUEST, why));
    }
    let params = object.get("params").cloned().unwrap_or_else(|| json!({}));
    Some(match dispatch(server, method, &params) {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err((code, message)) => error(&id, code, &message),
    })
}

fn dispatch(server: &mut tools::Server, method: &str, params: &Value) -> Result<Value, RpcError> {
    match method {
        "initialize" => Ok(initialize(params)),
        "ping" => Ok(json!({})),
        "tools/list" => Ok(json!({"tools": tools::list()})),
        "tools/call" => server.call(params),
        _ => Err((METHOD_NOT_FOUND, format!("unknown method `{}`", shown(method)))),
    }
}

/// Ids a JSON-RPC client can read back exactly: strings, null, and integers a double
/// holds (JavaScript's safe range); anything else is refused, not echoed altered.
fn check_id(id: &Value) -> Result<(), &'static str> {
    const SAFE: u64 = 1 << 53;
    let ok = match id {
        Value::Null | Value::String(_) => true,
        Value::Number(n) => n.as_i64().is_some_and(|i| i.unsigned_abs() <= SAFE),
        Value::Bool(_) | Value::Array(_) | Value::Object(_) => false,
    };
    if ok { Ok(()) } else { Err("`id` must be a string or an integer from -2^53 to 2^53") }
}

/// Client-sent text echoed in a message, cut to a readable length.
pub(super) fn shown(s: &str) -> std::borrow::Cow<'_, str> {
    crate::text::ellipsize(s, ECHO_CHARS)
}

/// Characters of a client's own text (a method, a tool or argument name) quoted back.
const ECHO_CHARS: usize = 80;

fn initialize(params: &Value) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str);
    let version = asked.filter(|v| VERSIONS.contains(v)).unwrap_or(VERSIONS[0]);
    json!({
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": false}},
        "serverInfo": {"name": "lanescope", "version": env!("CARGO_PKG_VERSION")},
        "instructions": "Ask why the GPU is idle in an NVIDIA Nsight Systems trace (.sqlite export, \
            .nsys-rep with nsys installed, or a PyTorch profiler JSON). Start with `summary`, \
            then `gaps` and `gap` for evidence, `phases`, `events` for what ran, `diff` for two runs. \
            Times are ns in results; windows are `START+WIDTH` in seconds from the trace start.",
    })
}

fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn talk(lines: &str) -> Vec<Value> {
        let mut out = Vec::new();
        serve(lines.as_bytes(), &mut out).unwrap();
        String::from_utf8(out).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }

    #[test]
    fn notifications_and_responses_get_no_reply() {
        let r = talk(
            "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n\
             {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\
             {\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}\n",
        );
        assert_eq!(r, [json!({"jsonrpc": "2.0", "id": 2, "result": {}})]);
    }

    #[test]
    fn garbage_gets_json_rpc_errors() {
        let r = talk("not json\n[]\n{\"id\":3,\"method\":\"nope\"}\n[{\"id\":4,\"method\":\"ping\"}]\n");
        let codes: Vec<i64> = r.iter().filter_map(|v| v["error"]["code"].as_i64()).collect();
        assert_eq!(codes, [PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND]);
        assert_eq!(r[3][0]["id"], 4);
    }

    // Replies to raw request bytes, with a line limit of `max`.
    fn talk_bytes(bytes: &[u8], max: usize) -> Vec<String> {
        let mut out = Vec::new();
        serve_limited(bytes, &mut out, max).unwrap();
        String::from_utf8(out).unwrap().lines().map(String::from).collect()
    }

    #[test]
    fn a_line_that_is_not_utf8_is_a_parse_error_and_the_server_goes_on() {
        let r = talk_bytes(b"{\"id\":1,\"method\":\"ping\xff\"}\n{\"id\":2,\"method\":\"ping\"}\n", MAX_LINE);
        let r: Vec<Value> = r.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(r.len(), 2, "{r:?}");
        assert_eq!((r[0]["error"]["code"].as_i64(), &r[0]["id"]), (Some(PARSE_ERROR), &Value::Null));
        assert_eq!(r[1], json!({"jsonrpc": "2.0", "id": 2, "result": {}}));
    }

    #[test]
    fn a_line_over_the_limit_is_refused_without_being_held() {
        let long = format!("{{\"id\":1,\"method\":\"ping\",\"x\":\"{}\"}}\n", "a".repeat(5000));
        let input = format!("{long}{{\"id\":2,\"method\":\"ping\"}}\n{long}");
        let r: Vec<Value> =
            talk_bytes(input.as_bytes(), 1000).iter().map(|l| serde_json::from_str(l).unwrap()).collect();
        let codes: Vec<Option<i64>> = r.iter().map(|v| v["error"]["code"].as_i64()).collect();
        assert_eq!(codes, [Some(INVALID_REQUEST), None, Some(INVALID_REQUEST)], "{r:?}");
        assert_eq!(r[1]["id"], 2);
        // The limit is on the line, not on the buffer: a line of exactly the limit is read.
        let exact = format!("{{\"id\":3,\"method\":\"ping\"}}{}\n", " ".repeat(10));
        assert_eq!(talk_bytes(exact.as_bytes(), exact.len() - 1).len(), 1);
        let mut buf = Vec::new();
        let long = "x".repeat(4096);
        let mut src = std::io::BufReader::with_capacity(16, long.as_bytes());
        assert_eq!(read_line(&mut src, &mut buf, 100).unwrap(), Line::TooLong);
        assert!(buf.capacity() <= 128, "held {} bytes", buf.capacity());
        assert_eq!(read_line(&mut src, &mut buf, 100).unwrap(), Line::End);
    }

    #[test]
    fn ids_a_client_cannot_read_back_exactly_are_refused() {
        let lines = "{\"id\":9007199254740993,\"method\":\"ping\"}\n\
                     {\"id\":18446744073709551617,\"method\":\"ping\"}\n\
                     {\"id\":1.5,\"method\":\"ping\"}\n\
                     {\"id\":-9007199254740992,\"method\":\"ping\"}\n\
                     {\"id\":\"x\",\"method\":\"ping\"}\n";
        let r = talk_bytes(lines.as_bytes(), MAX_LINE);
        // Each id is the text sent, or the request is refused with a null id.
        assert!(r[0].contains("\"id\":null") && r[0].contains(&INVALID_REQUEST.to_string()), "{}", r[0]);
        assert!(r[1].contains("\"id\":null") && r[1].contains(&INVALID_REQUEST.to_string()), "{}", r[1]);
        assert!(r[2].contains("\"id\":null"), "{}", r[2]);
        assert!(r[3].contains("\"id\":-9007199254740992,") && r[3].contains("\"result\""), "{}", r[3]);
        assert!(r[4].contains("\"id\":\"x\",") && r[4].contains("\"result\""), "{}", r[4]);
    }

    #[test]
    fn a_long_method_name_is_not_echoed_whole_and_replies_escape_controls() {
        let method = format!("\u{7f}\u{9b}\u{202e}{}", "m".repeat(100_000));
        let line = format!("{}\n", json!({"jsonrpc": "2.0", "id": 1, "method": method}));
        let r = talk_bytes(line.as_bytes(), MAX_LINE);
        assert!(r[0].len() < 1000, "{} bytes", r[0].len());
        assert!(r[0].chars().all(|c| !c.is_control() && !crate::text::is_bidi_control(c)), "{:?}", &r[0][..200]);
        let v: Value = serde_json::from_str(&r[0]).unwrap();
        assert!(v["error"]["message"].as_str().unwrap().contains("\u{7f}\u{9b}\u{202e}mmm"), "{v}");
    }

    #[test]
    fn an_unknown_version_gets_ours() {
        let v = initialize(&json!({"protocolVersion": "1999-01-01"}));
        assert_eq!(v["protocolVersion"], VERSIONS[0]);
        assert_eq!(initialize(&json!({"protocolVersion": "2024-11-05"}))["protocolVersion"], "2024-11-05");
    }
}
