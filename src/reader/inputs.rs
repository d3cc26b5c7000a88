//! Several inputs on one timeline: command-line arguments expanded into export files
//! (directories, globs), and groups of files that load as one merged trace.
//!
//! A group is registered under a label path ([`group`]) so that code that opens one
//! path (the viewer) opens the whole group: [`super::check_file`] and
//! [`super::load_with_progress`] look the label up first.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result, bail};

use super::Progress;
use crate::model::Trace;

static GROUPS: Mutex<Vec<(PathBuf, Vec<PathBuf>)>> = Mutex::new(Vec::new());

/// True for a file name lanescope opens from a directory or a glob.
fn is_input_name(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "sqlite") || super::rep::is_report(p)
}

/// Expand command-line inputs into files, in order: a directory gives its `.sqlite`
/// and `.nsys-rep` files sorted by name (a report whose `.sqlite` export lies beside it
/// is left out), a path with `*`, `?` or `[` in its last part that names no file is a
/// glob over its directory; anything else is kept as it is (the reader then says what
/// is wrong with it). A file named twice (under any spelling: `./a`, an absolute path, a
/// symbolic link) counts once, under its first name. Errors name the argument.
pub(crate) fn expand(args: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = Vec::new();
    let mut seen: Vec<Identity> = Vec::new();
    for a in args {
        let found = if a.is_dir() {
            let files = exports_in(a, |_| true).with_context(|| a.display().to_string())?;
            if files.is_empty() {
                bail!("{}: is a directory with no nsys exports (.sqlite, .nsys-rep) in it", a.display());
            }
            files
        } else if !a.exists() && a.file_name().is_some_and(|n| n.to_string_lossy().contains(['*', '?', '['])) {
            let pattern = a.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let dir = a.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
            let files = exports_in(dir, |n| glob_match(&pattern, n)).unwrap_or_default();
            if files.is_empty() {
                bail!("{}: no nsys export (.sqlite, .nsys-rep) matches", a.display());
            }
            files
        } else {
            vec![a.clone()]
        };
        for f in found {
            let id = identity(&f);
            if !seen.contains(&id) {
                seen.push(id);
                out.push(f);
            }
        }
    }
    Ok(out)
}

// What makes two paths the same file: device and inode (links followed), else the
// canonical path, else (a file that does not exist) the path as written.
#[derive(Debug, PartialEq, Eq)]
enum Identity {
    Inode(u64, u64),
    Path(PathBuf),
}

fn identity(p: &Path) -> Identity {
    #[cfg(unix)]
    if let Ok(m) = std::fs::metadata(p) {
        use std::os::unix::fs::MetadataExt;
        return Identity::Inode(m.dev(), m.ino());
    }
    Identity::Path(std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf()))
}

fn exports_in(dir: &Path, keep: impl Fn(&str) -> bool) -> Result<Vec<PathBuf>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .context("cannot read directory")?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && is_input_name(p))
        .filter(|p| p.file_name().is_some_and(|n| keep(&n.to_string_lossy())))
        .collect();
    files.sort();
    let sqlite: Vec<PathBuf> = files.iter().filter(|p| !super::rep::is_report(p)).cloned().collect();
    files.retain(|p| !super::rep::is_report(p) || !sqlite.contains(&p.with_extension("sqlite")));
    Ok(files)
}

/// Shell-style match of a file name: `*` any run, `?` one character, `[abc]` / `[a-z]`
/// / `[!a]` a set (a `[` that opens no set is itself). Time O(pattern × name) at worst:
/// a mismatch after a `*` goes back to that last `*` only, never to earlier ones.
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    let p = tokens(&pattern.chars().collect::<Vec<char>>());
    let n: Vec<char> = name.chars().collect();
    let (mut i, mut j) = (0, 0);
    // The token after the last `*` seen, and the name position that `*` now ends at.
    let mut star: Option<(usize, usize)> = None;
    while j < n.len() {
        match p.get(i) {
            Some(Tok::Star) => {
                star = Some((i + 1, j));
                i += 1;
            }
            Some(t) if t.matches(n[j]) => {
                i += 1;
                j += 1;
            }
            _ => match star {
                // Let the last `*` take one more character and retry what follows it.
                Some((after, at)) => {
                    star = Some((after, at + 1));
                    i = after;
                    j = at + 1;
                }
                None => return false,
            },
        }
    }
    p[i..].iter().all(|t| *t == Tok::Star)
}

#[derive(Debug, PartialEq)]
enum Tok {
    Star,
    Any,
    Char(char),
    // Ranges (a single character is `c..=c`), negated.
    Set(Vec<(char, char)>, bool),
}

impl Tok {
    fn matches(&self, c: char) -> bool {
        match self {
            Tok::Star | Tok::Any => true,
            Tok::Char(x) => *x == c,
            Tok::Set(ranges, neg) => ranges.iter().any(|&(a, b)| (a..=b).contains(&c)) != *neg,
        }
    }
}

fn tokens(p: &[char]) -> Vec<Tok> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < p.len() {
        let (t, len) = match p[i] {
            '*' => (Tok::Star, 1),
            '?' => (Tok::Any, 1),
            '[' => set(&p[i..]).unwrap_or((Tok::Char('['), 1)),
            c => (Tok::Char(c), 1),
        };
        // Runs of `*` are one `*`.
        if !(t == Tok::Star && out.last() == Some(&Tok::Star)) {
            out.push(t);
        }
        i += len;
    }
    out
}

// The set at p[0] == '[' and its length, if it is closed (`]` right after `[` or `[!` is a member).
fn set(p: &[char]) -> Option<(Tok, usize)> {
    let neg = matches!(p.get(1), Some('!' | '^'));
    let mut i = 1 + usize::from(neg);
    let mut ranges = Vec::new();
    let mut first = true;
    while i < p.len() && (p[i] != ']' || first) {
        first = false;
        if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
            ranges.push((p[i], p[i + 2]));
            i += 3;
        } else {
            ranges.push((p[i], p[i]));
            i += 1;
        }
    }
    (i < p.len()).then_some((Tok::Set(ranges, neg), i + 1))
}

/// Register `files` as one input and return the label path that opens them together
/// (their file names joined by `+`).
pub fn group(files: &[PathBuf]) -> PathBuf {
    let label: Vec<String> = files
        .iter()
        .map(|p| p.file_name().map_or_else(|| p.display().to_string(), |n| n.to_string_lossy().into_owned()))
        .collect();
    let label = PathBuf::from(label.join("+"));
    let mut g = GROUPS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    g.retain(|(l, _)| *l != label);
    g.push((label.clone(), files.to_vec()));
    label
}

/// The files registered under `label`, if it is a group's label.
pub(crate) fn grouped(label: &Path) -> Option<Vec<PathBuf>> {
    let g = GROUPS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    g.iter().find(|(l, _)| l == label).map(|(_, f)| f.clone())
}

/// Check every file of a group; the error names the file. Returns their total size.
pub(crate) fn check_group(files: &[PathBuf]) -> Result<u64> {
    files.iter().map(|f| super::check_file(f).with_context(|| f.display().to_string())).sum()
}

/// Load every file of a group and merge them ([`super::merge`]); the error names the file.
pub(crate) fn load_group(files: &[PathBuf], progress: &Progress) -> Result<Trace> {
    let mut traces = Vec::with_capacity(files.len());
    for f in files {
        traces.push(super::load_with_progress(f, progress).with_context(|| f.display().to_string())?);
    }
    Ok(super::merge::merge(traces))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("rank*.sqlite", "rank12.sqlite"));
        assert!(!glob_match("rank*.sqlite", "rank1.nsys-rep"));
        assert!(glob_match("rank?.sqlite", "rank1.sqlite"));
        assert!(!glob_match("rank?.sqlite", "rank12.sqlite"));
        assert!(glob_match("rank[0-3].sqlite", "rank2.sqlite"));
        assert!(!glob_match("rank[!0-3].sqlite", "rank2.sqlite"));
        assert!(glob_match("*", ""));
        assert!(glob_match("a[b", "a[b") && !glob_match("a[b", "ab"));
        assert!(glob_match("[]x]*", "]y") && glob_match("*[!.]", "ab") && !glob_match("*[!.]", "a."));
    }

    // The old recursive matcher: exponential in the stars, but plainly right.
    fn reference(p: &[char], n: &[char]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some('*') => (0..=n.len()).any(|k| reference(&p[1..], &n[k..])),
            Some('?') => !n.is_empty() && reference(&p[1..], &n[1..]),
            Some('[') if !n.is_empty() => match set(p) {
                Some((t, len)) => t.matches(n[0]) && reference(&p[len..], &n[1..]),
                None => n[0] == '[' && reference(&p[1..], &n[1..]),
            },
            Some(&c) => n.first() == Some(&c) && reference(&p[1..], &n[1..]),
        }
    }

    proptest::proptest! {
        #[test]
        fn globs_match_as_the_recursive_definition(p in "[ab*?\\[\\]!-]{0,8}", n in "[ab\\[\\]!-]{0,8}") {
            let (pc, nc): (Vec<char>, Vec<char>) = (p.chars().collect(), n.chars().collect());
            proptest::prop_assert_eq!(glob_match(&p, &n), reference(&pc, &nc), "{} ~ {}", p, n);
        }
    }

    #[test]
    fn many_stars_over_a_long_name_take_no_time() {
        // The recursive matcher tries about C(200, 9) splits here before it says no.
        let name = "a".repeat(200);
        assert!(!glob_match("*a*a*a*a*a*a*a*a*a*b", &name));
        assert!(glob_match("*a*a*a*a*a*a*a*a*a*", &name));
        // A name of n characters is looked at most (stars + 1) × n times: count it by
        // matching a name built so that every star backtracks.
        let long = format!("{}.sqlite", "ab".repeat(5000));
        assert!(glob_match("*a*b*a*b*.sqlite", &long));
    }
}
