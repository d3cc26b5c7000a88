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
/// is wrong with it). Files named twice count once. Errors name the argument.
pub fn expand(args: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = Vec::new();
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
            if !out.contains(&f) {
                out.push(f);
            }
        }
    }
    Ok(out)
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
/// / `[!a]` a set.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    fn set(p: &[char], c: char) -> Option<(bool, usize)> {
        let neg = matches!(p.get(1), Some('!' | '^'));
        let mut i = 1 + usize::from(neg);
        let mut hit = false;
        let mut first = true;
        while i < p.len() && (p[i] != ']' || first) {
            first = false;
            if i + 2 < p.len() && p[i + 1] == '-' && p[i + 2] != ']' {
                hit |= (p[i]..=p[i + 2]).contains(&c);
                i += 3;
            } else {
                hit |= p[i] == c;
                i += 1;
            }
        }
        (i < p.len()).then_some((hit != neg, i + 1))
    }
    fn go(p: &[char], n: &[char]) -> bool {
        match p.first() {
            None => n.is_empty(),
            Some('*') => (0..=n.len()).any(|k| go(&p[1..], &n[k..])),
            Some('?') => !n.is_empty() && go(&p[1..], &n[1..]),
            Some('[') if !n.is_empty() => match set(p, n[0]) {
                Some((true, len)) => go(&p[len..], &n[1..]),
                Some((false, _)) => false,
                None => n[0] == '[' && go(&p[1..], &n[1..]),
            },
            Some(&c) => n.first() == Some(&c) && go(&p[1..], &n[1..]),
        }
    }
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    go(&p, &n)
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
pub fn grouped(label: &Path) -> Option<Vec<PathBuf>> {
    let g = GROUPS.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    g.iter().find(|(l, _)| l == label).map(|(_, f)| f.clone())
}

/// Check every file of a group; the error names the file. Returns their total size.
pub fn check_group(files: &[PathBuf]) -> Result<u64> {
    files.iter().map(|f| super::check_file(f).with_context(|| f.display().to_string())).sum()
}

/// Load every file of a group and merge them ([`super::merge`]); the error names the file.
pub fn load_group(files: &[PathBuf], progress: &Progress) -> Result<Trace> {
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
    }
}
