//! The samples in README.md and docs/*.md are lanescope's own output, so they cannot go
//! stale: each block between `<!-- sample: KIND ARGS -->` and `<!-- sample:end -->` must
//! hold what lanescope draws or prints for it now. `UPDATE_README=1` rewrites the blocks
//! instead of failing.
//!
//! Kinds: `viewer TRACE WxH [KEYS]` (the viewer in a `TestBackend`, KEYS pressed first),
//! `diff-view BEFORE AFTER WxH [KEYS]` (`diff --view`), `run LINES ARGS...` (the first
//! LINES lines of `lanescope ARGS...`), `mcp TRACE` (a JSON-RPC exchange with `lanescope
//! mcp`). Paths are relative to the repository.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use lanescope::{App, Depth, Options, Pair, Theme, analyze, draw, draw_pair};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use crate::util::lanescope;

const BEGIN: &str = "<!-- sample: ";
const END: &str = "<!-- sample:end -->";

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

// README.md and every page of docs/.
fn pages() -> Vec<PathBuf> {
    let mut out = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .map(|e| e.expect("docs entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    out.extend(docs);
    out
}

fn size(s: &str) -> (u16, u16) {
    let (w, h) = s.split_once('x').unwrap_or_else(|| panic!("size `{s}` is not WxH"));
    (w.parse().expect("width"), h.parse().expect("height"))
}

// A path of the repository; a fixture kept packed (`NAME.xz`) is unpacked first.
fn resolve(rel: &str) -> PathBuf {
    match rel.strip_prefix("tests/fixtures/") {
        Some(name) => crate::util::fixture(name),
        None => root().join(rel),
    }
}

fn load(rel: &str) -> (lanescope::Trace, lanescope::Analysis) {
    let t = lanescope::load(&resolve(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"));
    let a = analyze(&t, &Options::default());
    (t, a)
}

fn key(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)
}

// The screen's text, each row without its trailing blanks.
fn text(buf: &Buffer) -> String {
    let area = buf.area;
    let mut out = String::new();
    for y in 0..area.height {
        let row: String = (0..area.width).map(|x| buf[(x, y)].symbol()).collect();
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out
}

fn viewer(args: &[&str]) -> String {
    let (t, a) = load(args[0]);
    let (w, h) = size(args[1]);
    let mut app = App::new(t, a, (w, h));
    app.set_theme(Theme::new(Depth::Mono));
    for c in args.get(2).copied().unwrap_or("").chars() {
        app.handle_key(key(c));
    }
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("test backend");
    term.draw(|f| draw(f, &app)).expect("draw");
    text(term.backend().buffer())
}

fn diff_view(args: &[&str]) -> String {
    let (w, h) = size(args[2]);
    let mut p = Pair::new(load(args[0]), load(args[1]), (w, h));
    p.set_theme(Theme::new(Depth::Mono));
    for c in args.get(3).copied().unwrap_or("").chars() {
        p.handle_key(key(c));
    }
    let mut term = Terminal::new(TestBackend::new(w, h)).expect("test backend");
    term.draw(|f| draw_pair(f, &p)).expect("draw");
    text(term.backend().buffer())
}

fn run(args: &[&str]) -> String {
    let lines: usize = args[0].parse().expect("run LINES ARGS...");
    let argv: Vec<PathBuf> =
        args[1..].iter().map(|a| if a.contains('/') { resolve(a) } else { PathBuf::from(a) }).collect();
    let out = lanescope().current_dir(root()).args(&argv).output().expect("lanescope runs");
    assert!(out.status.success(), "lanescope {}: {}", args[1..].join(" "), String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).expect("UTF-8");
    stdout.lines().take(lines).fold(String::new(), |mut out, l| {
        let _ = writeln!(out, "{}", l.trim_end());
        out
    })
}

// Longest reply shown in an `mcp` sample.
const MCP_REPLY: usize = 400;

fn mcp(args: &[&str]) -> String {
    let trace = serde_json::Value::String(args[0].to_string());
    let requests = [
        serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "by-hand", "version": "0"}}}),
        serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "gaps", "arguments": {"trace": trace, "limit": 1}}}),
    ];
    let stdin = requests.iter().fold(String::new(), |mut out, r| {
        let _ = writeln!(out, "{r}");
        out
    });
    let out = lanescope().current_dir(root()).arg("mcp").write_stdin(stdin).output().expect("lanescope mcp runs");
    assert!(out.status.success(), "lanescope mcp: {}", String::from_utf8_lossy(&out.stderr));
    let replies = String::from_utf8(out.stdout).expect("UTF-8");
    let mut replies = replies.lines();
    let mut shown = String::new();
    for r in &requests {
        let _ = writeln!(shown, "→ {r}");
        if r.get("id").is_some() {
            let reply = replies.next().expect("a reply per request");
            let cut = if reply.chars().count() > MCP_REPLY {
                format!("{}…", reply.chars().take(MCP_REPLY).collect::<String>())
            } else {
                reply.to_string()
            };
            let _ = writeln!(shown, "← {cut}");
        }
    }
    assert_eq!(replies.next(), None, "a reply to no request");
    shown
}

/// What the sample `spec` (the marker's words) shows now.
fn render(spec: &str) -> String {
    let words: Vec<&str> = spec.split_whitespace().collect();
    match words.split_first() {
        Some((&"viewer", rest)) if (2..=3).contains(&rest.len()) => viewer(rest),
        Some((&"diff-view", rest)) if (3..=4).contains(&rest.len()) => diff_view(rest),
        Some((&"run", rest)) if rest.len() >= 2 => run(rest),
        Some((&"mcp", rest)) if rest.len() == 1 => mcp(rest),
        _ => panic!("unknown sample `{spec}`"),
    }
}

/// `page` with every sample block holding `render`'s output; also the specs found.
fn regenerate(page: &str, render: impl Fn(&str) -> String) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut specs = Vec::new();
    let mut rest = page;
    // A marker starts a line (prose may name one in backticks).
    let start = |s: &str| s.match_indices(BEGIN).map(|(i, _)| i).find(|&i| i == 0 || s[..i].ends_with('\n'));
    while let Some(i) = start(rest) {
        let line_end = rest[i..].find('\n').map_or(rest.len(), |n| i + n + 1);
        let spec = rest[i + BEGIN.len()..line_end].trim_end().trim_end_matches("-->").trim().to_string();
        let end = rest[line_end..].find(END).map_or_else(|| panic!("`{spec}` has no {END}"), |n| line_end + n);
        out.push_str(&rest[..line_end]);
        out.push_str("```text\n");
        out.push_str(&render(&spec));
        out.push_str("```\n");
        specs.push(spec);
        rest = &rest[end..];
    }
    out.push_str(rest);
    (out, specs)
}

#[test]
fn regenerate_fills_each_block_and_keeps_the_rest() {
    let page = "a `<!-- sample: ... -->`\n<!-- sample: x 1 -->\nold\n<!-- sample:end -->\nb\n<!-- sample: y -->\n<!-- sample:end -->\n";
    let (new, specs) = regenerate(page, |s| format!("drawn {s}\n"));
    assert_eq!(specs, ["x 1", "y"]);
    assert_eq!(
        new,
        "a `<!-- sample: ... -->`\n<!-- sample: x 1 -->\n```text\ndrawn x 1\n```\n<!-- sample:end -->\nb\n<!-- sample: y -->\n```text\ndrawn y\n```\n<!-- sample:end -->\n"
    );
}

#[test]
fn readme_and_docs_samples_are_what_lanescope_draws_now() {
    let update = std::env::var_os("UPDATE_README").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    let mut count = 0;
    for page in pages() {
        let old = std::fs::read_to_string(&page).expect("page reads");
        let (new, specs) = regenerate(&old, render);
        count += specs.len();
        if new == old {
            continue;
        }
        if update {
            std::fs::write(&page, new).expect("page writes");
        } else {
            stale.push(page.strip_prefix(root()).unwrap_or(&page).display().to_string());
        }
    }
    assert!(count > 0, "README.md and docs/ show no generated sample");
    assert!(
        stale.is_empty(),
        "stale samples in {stale:?}: run `UPDATE_README=1 cargo test --test it readme` and review"
    );
}
