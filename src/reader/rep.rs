//! `.nsys-rep` reports: exported to SQLite with nsys into the user's cache directory,
//! and reused while the report is unchanged.
//!
//! - nsys is `$LANESCOPE_NSYS`, else `nsys` on `PATH`.
//! - The cache is `$XDG_CACHE_HOME/lanescope`, else `~/.cache/lanescope`; nothing is
//!   ever written beside the report.
//! - An entry is named `STEM-PATHHASH-STATEHASH.sqlite`: PATHHASH from the report's
//!   absolute path, STATEHASH from its size, mtime and the first MiB of its bytes. An
//!   entry whose name matches and that opens as an nsys export is used, with or without
//!   nsys; a corrupt one is removed and rebuilt; entries of older states of the same
//!   report are removed after a rebuild.
//! - nsys writes to a temporary name in the cache directory (`.STEM-...-PID.tmp.sqlite`)
//!   that is renamed once the export is complete and checked, so an interrupted export is
//!   never used.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::UNIX_EPOCH;

use anyhow::{Context, Result, bail};

/// Bytes of the report's head that go into its state hash.
const HEAD_BYTES: u64 = 1 << 20;

/// True for a path named like an nsys report (`.nsys-rep`, `.qdrep`).
pub fn is_report(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "nsys-rep" || e == "qdrep")
}

/// The SQLite export of the report at `path`: a valid cached one, else a fresh export
/// made with nsys (one progress line on stderr). Errors say how to export by hand.
pub fn export(path: &Path) -> Result<PathBuf> {
    let meta = std::fs::metadata(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => anyhow::anyhow!("no such file"),
        _ => anyhow::anyhow!("cannot read file ({e})"),
    })?;
    if meta.is_dir() {
        bail!("is a directory, not an nsys report");
    }
    let hint = format!("export it with: nsys export --type sqlite {}", path.display());
    let dir = cache_dir().with_context(|| format!("is an nsys report and there is no cache directory ({hint})"))?;
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let stem = abs.file_stem().map_or_else(|| "report".to_string(), |s| safe_name(&s.to_string_lossy()));
    let path_hash = fnv(abs.to_string_lossy().as_bytes(), FNV_OFFSET);
    let mtime = meta.modified().ok().and_then(|t| t.duration_since(UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos());
    let mut state = fnv(&meta.len().to_le_bytes(), FNV_OFFSET);
    state = fnv(&mtime.to_le_bytes(), state);
    state = fnv(&head(path).context("cannot read file")?, state);
    let prefix = format!("{stem}-{path_hash:016x}-");
    let cached = dir.join(format!("{prefix}{state:016x}.sqlite"));
    if cached.exists() {
        if valid(&cached) {
            return Ok(cached);
        }
        // A corrupt entry (a disk error, a user's edit): rebuild it.
        let _ = std::fs::remove_file(&cached);
    }
    let Some(nsys) = find_nsys() else {
        bail!("is an nsys report, not its SQLite export, and nsys is not on PATH (set LANESCOPE_NSYS or {hint})");
    };
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create the cache {} ({hint})", dir.display()))?;
    let tmp = dir.join(format!(".{prefix}{state:016x}-{}.tmp.sqlite", std::process::id()));
    let name = abs.file_name().map_or_else(|| path.display().to_string(), |n| n.to_string_lossy().into_owned());
    eprintln!("lanescope: exporting {} to SQLite with nsys into {} ...", crate::text::sanitize(&name), dir.display());
    let out = Command::new(&nsys)
        .args(["export", "--type", "sqlite", "--force-overwrite", "true", "--output"])
        .arg(&tmp)
        .arg(&abs)
        .output();
    let failed = |why: String| {
        let _ = std::fs::remove_file(&tmp);
        anyhow::anyhow!("nsys export --type sqlite failed ({why}); {hint}")
    };
    let out = out.map_err(|e| failed(format!("cannot run {}: {e}", nsys.display())))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = err.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message").trim().to_string();
        return Err(failed(format!("{}: {}", out.status, crate::text::sanitize(&last))));
    }
    if !valid(&tmp) {
        return Err(failed("it wrote no valid export".to_string()));
    }
    std::fs::rename(&tmp, &cached).map_err(|e| failed(format!("cannot move the export into the cache: {e}")))?;
    // Older states of the same report are stale now.
    if let Ok(entries) = std::fs::read_dir(&dir) {
        for e in entries.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with(&prefix) && n.ends_with(".sqlite") && e.path() != cached {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    Ok(cached)
}

/// `$XDG_CACHE_HOME/lanescope`, else `$HOME/.cache/lanescope` (absolute paths only, as
/// the XDG base directory specification asks).
pub fn cache_dir() -> Option<PathBuf> {
    let abs = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").and_then(abs) {
        return Some(x.join("lanescope"));
    }
    std::env::var_os("HOME").and_then(abs).map(|h| h.join(".cache").join("lanescope"))
}

// `$LANESCOPE_NSYS`, else the first `nsys` on PATH that is a file.
fn find_nsys() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("LANESCOPE_NSYS").filter(|v| !v.is_empty()) {
        return Some(PathBuf::from(p));
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|d| d.join("nsys")).find(|p| p.is_file())
}

// An export that lanescope can open: SQLite with nsys tables.
fn valid(p: &Path) -> bool {
    super::open::check_file(p).is_ok()
        && super::open::connect(p)
            .ok()
            .and_then(|c| super::schema::Schema::probe(&c).ok())
            .is_some_and(|s| s.is_nsys_export())
}

fn head(p: &Path) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    std::fs::File::open(p)?.take(HEAD_BYTES).read_to_end(&mut buf)?;
    Ok(buf)
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

// FNV-1a: stable across builds and platforms (the cache outlives the binary).
fn fnv(bytes: &[u8], mut h: u64) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

// Letters, digits, `-`, `_` and `.` only, at most 64 characters.
fn safe_name(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).take(64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_is_the_reference_fnv1a() {
        assert_eq!(fnv(b"", FNV_OFFSET), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv(b"a", FNV_OFFSET), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn cache_names_are_plain() {
        assert_eq!(safe_name("run 1/é"), "run_1__");
        assert!(is_report(Path::new("a/b.nsys-rep")) && is_report(Path::new("x.qdrep")));
        assert!(!is_report(Path::new("x.sqlite")));
    }
}
