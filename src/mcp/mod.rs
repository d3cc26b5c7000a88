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

/// Serve requests from `input` until it closes, answering on `output`.
pub(crate) fn serve(input: impl BufRead, mut output: impl Write) -> Result<()> {
    let mut server = tools::Server::default();
    for line in input.lines() {
        let line = line.context("reading a request from stdin")?;
        if line.trim().is_empty() {
            continue;
        }
        if let Some(reply) = handle_line(&mut server, &line) {
            let sent = writeln!(output, "{reply}").and_then(|()| output.flush());
            // The client went away: nobody is left to answer.
            if matches!(&sent, Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe) {
                return Ok(());
            }
            sent.context("writing a reply to stdout")?;
        }
    }
    Ok(())
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
        _ => Err((METHOD_NOT_FOUND, format!("unknown method `{method}`"))),
    }
}

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

    #[test]
    fn an_unknown_version_gets_ours() {
        let v = initialize(&json!({"protocolVersion": "1999-01-01"}));
        assert_eq!(v["protocolVersion"], VERSIONS[0]);
        assert_eq!(initialize(&json!({"protocolVersion": "2024-11-05"}))["protocolVersion"], "2024-11-05");
    }
}
