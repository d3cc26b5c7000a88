//! The crate's floors, read from its source: every `use crate::`, `use super::` and
//! `crate::`/`super::` path of every file under `src/` is an edge from the file's module
//! to the module it names.
//!
//! Floors, lowest first (a module may use its own floor and those below it, never one
//! above):
//!
//! 0. `model`: timeline types, lane meaning, name grouping
//! 1. `text`: formatting, sanitizing, wrapping, durations (a leaf over `model`)
//! 2. `reader`: exports and traces into a `model::Trace`, and the commands' loading
//! 3. `analysis`: pure functions over a `Trace`
//! 4. `view`: the lane view-model (rows, render index, viewport, pyramid, two-run
//!    alignment, palette as data); no ratatui
//! 5. headless outputs: `report`, `diff`, `picture`, `info`
//! 6. `tui`: the interactive viewer (ratatui)
//! 7. entry commands: `cli`, `mcp`, `record`, `bench`, `scale`
//!
//! `scale` (the hidden `lanescope scale`) uses only `reader`, so its imports would let it
//! sit just above `reader`; it stands with the commands because it is one (`cli`
//! dispatches to it), and `bench`, which needs the viewer, runs it to measure a scaled
//! export: a one-way use between siblings of one floor.
//!
//! Siblings, on one floor of the crate root or inside any module, may use one another
//! only without a circle: the tests fail naming the import that runs up a floor or
//! closes a circle. `mcp` serves agents and needs none of the viewer: it reads `view`
//! and the headless outputs (and what lies below them) only.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules by floor, lowest first; every module under `src/` must be listed.
const FLOORS: [&[&str]; 8] = [
    &["model", "testutil"],
    &["text"],
    &["reader"],
    &["analysis"],
    &["view"],
    &["report", "diff", "picture", "info"],
    &["tui"],
    &["cli", "mcp", "record", "bench", "scale"],
];

/// A module path below the crate root (`["reader", "host"]`).
type Module = Vec<String>;

/// One use of a module by another, with where it is written.
#[derive(Debug, Clone)]
struct Edge {
    from: Module,
    to: Module,
    at: String,
}

// The floor of a top-level module; every one must have one.
fn floor(m: &str, at: &str) -> usize {
    FLOORS.iter().position(|f| f.contains(&m)).unwrap_or_else(|| panic!("{at}: module `{m}` is on no floor of FLOORS"))
}

#[test]
fn lower_floors_never_use_higher_ones() {
    let edges = edges();
    assert!(edges.len() > 100, "too few edges read ({}): is the parser blind?", edges.len());
    let mut wrong = Vec::new();
    for e in &edges {
        let (Some(from), Some(to)) = (e.from.first(), e.to.first()) else { continue };
        if floor(to, &e.at) > floor(from, &e.at) {
            wrong.push(format!("{}: {} uses {}", e.at, e.from.join("::"), e.to.join("::")));
        }
    }
    assert!(wrong.is_empty(), "edges up the floors:\n{}", wrong.join("\n"));
}

#[test]
fn sibling_modules_form_no_circle() {
    // Every parent, the crate root ("") included: siblings of one floor there.
    let found = circles(&sibling_edges(|_| true));
    assert!(found.is_empty(), "circles between sibling modules:\n{}", found.join("\n"));
}

#[test]
fn mcp_needs_none_of_the_viewer() {
    let edges = edges();
    let from_mcp: Vec<&Edge> = edges.iter().filter(|e| e.from.first().is_some_and(|m| m == "mcp")).collect();
    assert!(!from_mcp.is_empty(), "no edge read from `mcp`: is the parser blind?");
    let to_tui: Vec<&str> =
        from_mcp.iter().filter(|e| e.to.first().is_some_and(|m| m == "tui")).map(|e| e.at.as_str()).collect();
    assert!(to_tui.is_empty(), "mcp uses the viewer:\n{}", to_tui.join("\n"));
    // Nor another command: view, the headless outputs and below only.
    let tui = floor("tui", "FLOORS");
    let above: Vec<&str> = from_mcp
        .iter()
        .filter(|e| e.to.first().is_some_and(|m| m != "mcp" && floor(m, &e.at) >= tui))
        .map(|e| e.at.as_str())
        .collect();
    assert!(above.is_empty(), "mcp uses more than view and the headless outputs:\n{}", above.join("\n"));
}

#[test]
fn the_view_draws_nothing() {
    // The view-model is data for every front end: no terminal library in it.
    let view = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/view");
    let files = rust_files(&view);
    assert!(files.len() >= 5, "too few files under src/view: {files:?}");
    for f in files {
        let t = tokens(&std::fs::read_to_string(&f).unwrap());
        let found: Vec<&String> = t.iter().filter(|s| *s == "ratatui" || *s == "crossterm").collect();
        assert!(found.is_empty(), "{}: names {found:?}", f.display());
    }
}

// Edges between the children of one parent (named `a::b`, "" for the root) that `keep`
// keeps, by the two children the edge runs between, with one place each is written.
fn sibling_edges(keep: impl Fn(&str) -> bool) -> BTreeMap<Module, BTreeMap<Module, String>> {
    let mut graph: BTreeMap<Module, BTreeMap<Module, String>> = BTreeMap::new();
    for e in edges() {
        let common = e.from.iter().zip(&e.to).take_while(|(a, b)| a == b).count();
        if common < e.from.len() && common < e.to.len() && keep(&e.from[..common].join("::")) {
            let (a, b) = (e.from[..=common].to_vec(), e.to[..=common].to_vec());
            graph.entry(a).or_default().entry(b).or_insert(e.at);
        }
    }
    graph
}

#[test]
fn the_parser_reads_grouped_relative_and_inline_paths() {
    // Known edges of the tree, one per form the parser must read.
    let edges = edges();
    let has = |from: &str, to: &str| {
        let (f, t) = (split(from), split(to));
        edges.iter().any(|e| e.from == f && e.to == t)
    };
    // `use crate::model::{...}` over several lines.
    assert!(has("reader::tables", "model"));
    // `use super::tables::{...}` from a sibling.
    assert!(has("reader::nvtx", "reader::tables"));
    // `use super::index::snap_edge;` between the view's files.
    assert!(has("view::viewport", "view::index"));
    // `use crate::view::index::{...}` from another floor.
    assert!(has("picture", "view::index"));
    // `crate::text::sanitize(...)` in code.
    assert!(has("reader::rep", "text"));
    // The parser sees through strings and comments: nothing names `crate::` there as code.
    let t = tokens("let s = \"crate::tui\"; // crate::cli\n/* crate::diff */ let c = '\"'; r#\"crate::x\"#;");
    assert!(!t.iter().any(|s| s == "crate"), "{t:?}");
    let paths = use_paths(&tokens("use crate::{a::{b, c as d}, e};"));
    assert_eq!(paths, vec![split("crate::a::b"), split("crate::a::c"), split("crate::e")]);
}

fn split(p: &str) -> Module {
    p.split("::").map(str::to_string).collect()
}

// Every edge of every file under src/ (main.rs is the binary: it uses the library by name).
fn edges() -> Vec<Edge> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files: Vec<PathBuf> = rust_files(&src).into_iter().filter(|f| *f != src.join("main.rs")).collect();
    let modules: BTreeSet<Module> = files.iter().map(|f| module_of(&src, f)).collect();
    let mut out = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let here = module_of(&src, f);
        let name = f.strip_prefix(src.parent().unwrap()).unwrap().display().to_string();
        for (path, inline) in file_paths(&tokens(&text)) {
            let scope: Module = here.iter().cloned().chain(inline).collect();
            if let Some(to) = resolve(&path, &scope, &modules)
                && to != here
            {
                out.push(Edge { from: here.clone(), to, at: format!("{name}: {}", path.join("::")) });
            }
        }
    }
    out
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            out.extend(rust_files(&p));
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
    out.sort();
    out
}

// `src/reader/host.rs` -> reader::host, `src/reader/mod.rs` -> reader, `src/lib.rs` -> root.
fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).unwrap().with_extension("");
    let mut m: Module = rel.iter().map(|s| s.to_string_lossy().into_owned()).collect();
    if m.last().is_some_and(|l| l == "mod" || l == "lib") {
        m.pop();
    }
    m
}

// The module a path names: `crate::`, `super::` and `self::` paths, and paths that start
// with a child module's name; the longest prefix that is a module of the tree.
fn resolve(path: &[String], scope: &[String], modules: &BTreeSet<Module>) -> Option<Module> {
    let mut abs: Module = scope.to_vec();
    let mut rest = path;
    match path.first().map(String::as_str) {
        Some("crate") => {
            abs.clear();
            rest = &path[1..];
        }
        Some("self" | "super") => {
            while let Some(s) = rest.first() {
                match s.as_str() {
                    "super" => abs.pop(),
                    "self" => None,
                    _ => break,
                };
                rest = &rest[1..];
            }
        }
        _ => {
            let child: Module = scope.iter().cloned().chain(path.first().cloned()).collect();
            if !modules.contains(&child) {
                return None;
            }
        }
    }
    abs.extend(rest.iter().cloned());
    // Inline modules (`mod tests`) are not files: the longest prefix that is one is.
    (0..=abs.len()).rev().map(|n| abs[..n].to_vec()).find(|m| modules.contains(m) || m.is_empty())
}

// Tokens of Rust source without comments, strings, chars and lifetimes: identifiers,
// `::`, and single punctuation characters.
fn tokens(text: &str) -> Vec<String> {
    let c: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        i = match c[i] {
            '/' if c.get(i + 1) == Some(&'/') => c[i..].iter().position(|&x| x == '\n').map_or(c.len(), |n| i + n),
            '/' if c.get(i + 1) == Some(&'*') => skip_block_comment(&c, i),
            '"' => skip_string(&c, i + 1),
            'r' if raw_string_at(&c, i) => skip_raw_string(&c, i + 1),
            'b' if c.get(i + 1) == Some(&'"') => skip_string(&c, i + 2),
            'b' if c.get(i + 1) == Some(&'r') && raw_string_at(&c, i + 1) => skip_raw_string(&c, i + 2),
            '\'' => skip_char_or_lifetime(&c, i),
            ':' if c.get(i + 1) == Some(&':') => {
                out.push("::".to_string());
                i + 2
            }
            x if x.is_alphanumeric() || x == '_' => {
                let n = c[i..].iter().position(|&y| !(y.is_alphanumeric() || y == '_')).unwrap_or(c.len() - i);
                out.push(c[i..i + n].iter().collect());
                i + n
            }
            x if x.is_whitespace() => i + 1,
            x => {
                out.push(x.to_string());
                i + 1
            }
        };
    }
    out
}

fn skip_block_comment(c: &[char], mut i: usize) -> usize {
    let mut depth = 0;
    while i < c.len() {
        if c[i] == '/' && c.get(i + 1) == Some(&'*') {
            depth += 1;
            i += 2;
        } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    i
}

// Past the closing quote of a string whose body starts at `i`.
fn skip_string(c: &[char], mut i: usize) -> usize {
    while i < c.len() {
        match c[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

// `r"..."` or `r#"..."#` at `i` (identifiers are read whole, so an `r` here starts a token).
fn raw_string_at(c: &[char], i: usize) -> bool {
    c[i + 1..].iter().position(|&x| x != '#').map(|n| c[i + 1 + n]) == Some('"')
}

// Past a raw string whose hashes start at `i`.
fn skip_raw_string(c: &[char], i: usize) -> usize {
    let hashes = c[i..].iter().take_while(|&&x| x == '#').count();
    let body = i + hashes + 1;
    let close: Vec<char> = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
    (body..c.len()).find(|&j| c[j..].starts_with(&close)).map_or(c.len(), |j| j + close.len())
}

// Past a char literal (`'a'`, `'\n'`, `'"'`), or past the quote of a lifetime (`'a`).
fn skip_char_or_lifetime(c: &[char], i: usize) -> usize {
    if c.get(i + 1) == Some(&'\\') {
        return c[(i + 3).min(c.len())..].iter().position(|&x| x == '\'').map_or(c.len(), |n| i + 3 + n + 1);
    }
    if c.get(i + 2) == Some(&'\'') { i + 3 } else { i + 1 }
}

// Every `use` path and every `crate::`/`super::`/`self::` path outside `use`, each with
// the inline modules (`mod tests { ... }`) it is written in.
fn file_paths(t: &[String]) -> Vec<(Module, Module)> {
    let mut out = Vec::new();
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < t.len() {
        let names = || inline.iter().map(|m| m.0.clone()).collect::<Module>();
        match t[i].as_str() {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|m| m.1 == depth) {
                    inline.pop();
                }
            }
            "mod" if t.get(i + 2).is_some_and(|s| s == "{") => {
                inline.push((t[i + 1].clone(), depth));
            }
            "use" => {
                let end = t[i..].iter().position(|s| s == ";").map_or(t.len(), |n| i + n);
                out.extend(use_paths(&t[i..end]).into_iter().map(|p| (p, names())));
                i = end;
                continue;
            }
            "crate" | "super" | "self" if t.get(i + 1).is_some_and(|s| s == "::") => {
                let n = path_len(&t[i..]);
                out.push((t[i..i + n].iter().filter(|s| *s != "::").cloned().collect(), names()));
                i += n;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

// Tokens of a path `a :: b :: c` at the start of `t`.
fn path_len(t: &[String]) -> usize {
    let mut n = 1;
    while t.get(n).is_some_and(|s| s == "::") && t.get(n + 1).is_some_and(|s| is_ident(s)) {
        n += 2;
    }
    n
}

fn is_ident(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
}

// The paths of one `use` item (`use a::{b, c::{d as e}}` -> a::b, a::c::d); `t[0]` is `use`.
fn use_paths(t: &[String]) -> Vec<Module> {
    let mut out = Vec::new();
    let mut i = 1;
    use_tree(t, &mut i, &mut Vec::new(), &mut out);
    out
}

fn use_tree(t: &[String], i: &mut usize, prefix: &mut Module, out: &mut Vec<Module>) {
    let base = prefix.len();
    let mut grouped = false;
    while let Some(s) = t.get(*i) {
        *i += 1;
        match s.as_str() {
            "::" | "*" => {}
            "{" => {
                loop {
                    use_tree(t, i, prefix, out);
                    if t.get(*i).is_none_or(|s| s != ",") {
                        break;
                    }
                    *i += 1;
                }
                *i += 1; // the closing brace
                grouped = true;
                break;
            }
            "as" => *i += 1,
            "," | "}" | ";" => {
                *i -= 1;
                break;
            }
            name => prefix.push(name.to_string()),
        }
    }
    if prefix.len() > base && !grouped {
        out.push(prefix.clone());
    }
    prefix.truncate(base);
}

// Every circle of the graph, once each (from its smallest module), with the edges' places.
fn circles(graph: &BTreeMap<Module, BTreeMap<Module, String>>) -> Vec<String> {
    let mut found = BTreeSet::new();
    for start in graph.keys() {
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        while let Some((at, path)) = stack.pop() {
            for next in graph.get(&at).into_iter().flat_map(BTreeMap::keys) {
                if next == start {
                    let names: Vec<String> = path.iter().map(|m| m.join("::")).collect();
                    let places: Vec<&str> = path
                        .iter()
                        .zip(path.iter().skip(1).chain([start]))
                        .map(|(a, b)| graph[a][b].as_str())
                        .collect();
                    found.insert(format!("{} -> {} ({})", names.join(" -> "), start.join("::"), places.join("; ")));
                } else if next > start && !path.contains(next) {
                    let mut p = path.clone();
                    p.push(next.clone());
                    stack.push((next.clone(), p));
                }
            }
        }
    }
    found.into_iter().collect()
}
