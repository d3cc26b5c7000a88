//! The column cache: a loaded [`Trace`] kept in the cache directory
//! (`$XDG_CACHE_HOME/lanescope`, as [`rep`]'s exports) so that the next open of the same
//! trace reads its columns back instead of parsing SQLite or JSON. docs/cache.md says
//! what users see.
//!
//! - An entry is `STEM-PATHHASH-KEYHASH.lsc`: PATHHASH from the trace's absolute path,
//!   KEYHASH from the trace's size, mtime and first MiB ([`rep::state_hash`]) and from
//!   this build of lanescope (its version, and its executable's size and mtime: a
//!   reader that changes never meets the entries of the one before).
//! - Layout, little-endian: a 64-byte header (magic, [`FORMAT`], the body's CRC-32 and
//!   length, the key), then the body ([`codec`]): the trace's absolute path and the
//!   model, columns back to back, each with its own CRC-32 and aligned for its values. An
//!   entry whose header, length, path, structure or checksum is wrong is removed and
//!   rebuilt, with one line on stderr.
//! - Written to `.NAME.SERIAL-PID.tmp.lsc` in the cache directory, then renamed: a reader never
//!   sees half an entry. Older entries of the same trace are removed; then the oldest
//!   entries go until all fit in [`max_bytes`]. A read refreshes an entry's mtime.
//! - Entries are memory-mapped ([`map`], the crate's one `unsafe` call): a lane's large
//!   columns stay in the mapping ([`crate::model::Col`]), the rest is copied out. The
//!   body's CRC (all but the columns' values) is checked on open; the columns' own CRCs
//!   before their numbers are used ([`Checks`]): at once for the commands, after the
//!   first frame for the viewer, since checking reads every page.
//! - A higher layer may keep a part of its own beside an entry ([`Entry::store_part`],
//!   [`part_through`]): `STEM-PATHHASH-KEYHASH-NAME.lsc`, the same header, key and checks,
//!   for what it derives from the trace alone (the viewer's render index, `-view`).
//! - Off unless [`set_enabled`]: the commands turn it on (`--no-cache` keeps it off), so
//!   the library and its tests never touch the user's cache.

mod codec;

use std::fs::{self, File};
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::rep;
use crate::model::Trace;
pub(crate) use codec::{Dec, Enc, Field};

/// First bytes of every entry.
const MAGIC: [u8; 8] = *b"LSCOLS\0\0";
/// Version of the layout: bumped whenever the header or body changes.
pub(crate) const FORMAT: u32 = 2;
/// Bytes of the header.
const HEADER: u64 = 64;
/// File extension of entries.
pub(crate) const EXT: &str = "lsc";
/// Bytes all entries may take together without `LANESCOPE_CACHE_MAX`.
pub(crate) const DEFAULT_MAX_BYTES: u64 = 8 << 30;
/// Bytes read or written at a time.
const BUFFER: usize = 1 << 20;

static ENABLED: AtomicBool = AtomicBool::new(false);
// Numbers the temporaries of one process.
static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Turn the cache on for this process's loads (the commands do, unless `--no-cache`).
pub(crate) fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// How a trace comes out of its entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Checks {
    /// Every column copied out of the mapped entry and checked: what a command that
    /// reads every number wants (columns of its own are also read faster than borrowed
    /// ones: docs/performance.md).
    Now,
    /// Large columns left in the mapped entry, checked by the caller with
    /// [`Trace::verify_columns`] before it uses any number: the viewer draws its first
    /// frame first.
    Later,
}

/// Load `path` through the cache when it is on: its entry when there is a valid one,
/// else `load()`, whose trace is then written as the entry.
pub(crate) fn through(path: &Path, checks: Checks, load: impl FnOnce() -> Result<Trace>) -> Result<Trace> {
    match rep::cache_dir().filter(|_| ENABLED.load(Ordering::Relaxed)) {
        Some(dir) => through_dir(path, &dir, checks, load),
        None => load(),
    }
}

/// Remove the cache entry of `path` when the cache is on (its columns failed
/// [`Trace::verify_columns`] after a [`Checks::Later`] load); the entry's file.
pub(crate) fn discard(path: &Path) -> Option<PathBuf> {
    let dir = rep::cache_dir().filter(|_| ENABLED.load(Ordering::Relaxed))?;
    let entry = Entry::new(path, &dir)?;
    entry.remove();
    Some(entry.file)
}

/// Load `path` through the cache in `dir`, whether or not the cache is on.
pub(crate) fn through_dir(
    path: &Path,
    dir: &Path,
    checks: Checks,
    load: impl FnOnce() -> Result<Trace>,
) -> Result<Trace> {
    let Some(entry) = Entry::new(path, dir) else { return load() };
    if let Some(mut t) = entry.open_or_say(path, checks) {
        t.meta.path = path.display().to_string();
        return Ok(t);
    }
    let t = load()?;
    if let Err(e) = entry.store(&t, max_bytes()) {
        eprintln!(
            "lanescope: cannot write the cache entry {} ({e:#}); the next open reads the trace again",
            entry.file.display()
        );
    }
    Ok(t)
}

/// The part `name` of `path`'s entry ([`Entry::store_part`]) when the cache is on and
/// holds one that `check` accepts, else `build()`, then written as the part. A damaged
/// part is removed, with one line on stderr, and built again.
pub(crate) fn part_through<T: Field>(
    path: &Path,
    name: &str,
    check: impl FnOnce(&T) -> Result<()>,
    build: impl FnOnce() -> T,
) -> T {
    let dir = rep::cache_dir().filter(|_| ENABLED.load(Ordering::Relaxed));
    let Some(entry) = dir.and_then(|dir| Entry::new(path, &dir)) else { return build() };
    match entry.open_part(name, check) {
        Ok(Some(v)) => return v,
        Ok(None) => {}
        Err(why) => {
            let _ = fs::remove_file(entry.part_file(name));
            eprintln!("lanescope: {}: {why:#}; removed it and building it again", entry.part_file(name).display());
        }
    }
    let v = build();
    if let Err(e) = entry.store_part(name, &v, max_bytes()) {
        eprintln!("lanescope: cannot write the cache entry {} ({e:#})", entry.part_file(name).display());
    }
    v
}

/// A value a higher layer derives from the trace at `path` and from `key` (the analysis
/// and its options), kept beside the trace's entry as its part `LABEL-HASH`, HASH from
/// `key`'s serialized form: None when the cache is off, there is none, or it is
/// damaged (then removed, with one line on stderr).
pub(crate) fn derived<T: DeserializeOwned>(path: &Path, label: &str, key: &impl Serialize) -> Option<T> {
    let entry = rep::cache_dir().filter(|_| ENABLED.load(Ordering::Relaxed)).and_then(|d| Entry::new(path, &d))?;
    let name = derived_name(label, key)?;
    match entry.open_derived(&name) {
        Ok(v) => v,
        Err(why) => {
            let file = entry.part_file(&name);
            let _ = fs::remove_file(&file);
            eprintln!("lanescope: {}: {why:#}; removed it and computing it again", file.display());
            None
        }
    }
}

/// Keep `value` as what [`derived`] gives back for `path`, `label` and `key`, when the
/// cache is on; a failure to write costs one line on stderr.
pub(crate) fn store_derived<T: Serialize>(path: &Path, label: &str, key: &impl Serialize, value: &T) {
    let Some(entry) = rep::cache_dir().filter(|_| ENABLED.load(Ordering::Relaxed)).and_then(|d| Entry::new(path, &d))
    else {
        return;
    };
    let Some(name) = derived_name(label, key) else { return };
    if let Err(e) = entry.store_derived(&name, value, max_bytes()) {
        eprintln!("lanescope: cannot write the cache entry {} ({e:#})", entry.part_file(&name).display());
    }
}

// `LABEL-HASH`: HASH of `key`'s serialized form (every field of the options).
fn derived_name(label: &str, key: &impl Serialize) -> Option<String> {
    let bytes = postcard::to_allocvec(key).ok()?;
    Some(format!("{label}-{:016x}", rep::fnv(&bytes, rep::FNV_OFFSET)))
}

/// Serialized bytes kept as one column (its own CRC-32, checked as it is read).
struct Blob(Vec<u8>);

impl Field for Blob {
    fn put<W: Write>(&self, w: &mut Enc<W>) -> std::io::Result<()> {
        w.col(&self.0)
    }
    fn take(r: &mut Dec<'_>) -> Result<Self> {
        Ok(Blob(r.col::<u8>()?))
    }
}

/// What an entry must say about its trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Key {
    build: u64,
    len: u64,
    mtime_ns: u128,
    state: u64,
}

impl Key {
    fn header(self, crc: u32, body: u64) -> [u8; HEADER as usize] {
        let mut h = [0u8; HEADER as usize];
        h[..8].copy_from_slice(&MAGIC);
        h[8..12].copy_from_slice(&FORMAT.to_le_bytes());
        h[12..16].copy_from_slice(&crc.to_le_bytes());
        h[16..24].copy_from_slice(&body.to_le_bytes());
        h[24..32].copy_from_slice(&self.build.to_le_bytes());
        h[32..40].copy_from_slice(&self.len.to_le_bytes());
        h[40..56].copy_from_slice(&self.mtime_ns.to_le_bytes());
        h[56..64].copy_from_slice(&self.state.to_le_bytes());
        h
    }

    fn hash(self) -> u64 {
        let mut h = rep::fnv(&self.build.to_le_bytes(), rep::FNV_OFFSET);
        h = rep::fnv(&self.len.to_le_bytes(), h);
        h = rep::fnv(&self.mtime_ns.to_le_bytes(), h);
        rep::fnv(&self.state.to_le_bytes(), h)
    }
}

// Fields of a header: (format, crc, body length, key).
fn parse_header(h: &[u8; HEADER as usize]) -> Result<(u32, u32, u64, Key)> {
    let u32_at = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().unwrap_or_default());
    let u64_at = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().unwrap_or_default());
    if h[..8] != MAGIC {
        bail!("not a lanescope cache entry");
    }
    let mtime_ns = u128::from_le_bytes(h[40..56].try_into().unwrap_or_default());
    let key = Key { build: u64_at(24), len: u64_at(32), mtime_ns, state: u64_at(56) };
    Ok((u32_at(8), u32_at(12), u64_at(16), key))
}

/// This build of lanescope: its version, layout and executable (size and mtime).
fn build_key() -> Option<u64> {
    static KEY: OnceLock<Option<u64>> = OnceLock::new();
    *KEY.get_or_init(|| {
        let exe = fs::metadata(std::env::current_exe().ok()?).ok()?;
        let mut h = rep::fnv(env!("CARGO_PKG_VERSION").as_bytes(), rep::FNV_OFFSET);
        h = rep::fnv(&FORMAT.to_le_bytes(), h);
        h = rep::fnv(&exe.len().to_le_bytes(), h);
        Some(rep::fnv(&rep::mtime_ns(&exe).to_le_bytes(), h))
    })
}

/// `LANESCOPE_CACHE_MAX` (bytes, or with a `K`, `M`, `G` suffix of 1024s), else
/// [`DEFAULT_MAX_BYTES`].
pub(crate) fn max_bytes() -> u64 {
    std::env::var("LANESCOPE_CACHE_MAX").ok().and_then(|v| parse_bytes(&v)).unwrap_or(DEFAULT_MAX_BYTES)
}

fn parse_bytes(v: &str) -> Option<u64> {
    let v = v.trim();
    let (digits, shift) = match v.char_indices().last()? {
        (i, 'k' | 'K') => (&v[..i], 10),
        (i, 'm' | 'M') => (&v[..i], 20),
        (i, 'g' | 'G') => (&v[..i], 30),
        _ => (v, 0),
    };
    digits.trim().parse::<u64>().ok()?.checked_mul(1 << shift)
}

/// One trace's entry in a cache directory.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// The entry's file.
    pub(crate) file: PathBuf,
    dir: PathBuf,
    // Every entry of this trace (any state) is named with it.
    prefix: String,
    key: Key,
    abs: String,
}

impl Entry {
    /// The entry in `dir` for the trace at `path` as it is now; None when the trace
    /// cannot be read (its load then says why) or this build cannot be told.
    pub(crate) fn new(path: &Path, dir: &Path) -> Option<Self> {
        let meta = fs::metadata(path).ok().filter(fs::Metadata::is_file)?;
        let build = build_key()?;
        let state = rep::state_hash(path, &meta).ok()?;
        let key = Key { build, len: meta.len(), mtime_ns: rep::mtime_ns(&meta), state };
        let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let stem = abs.file_stem().map_or_else(|| "trace".to_string(), |s| rep::safe_name(&s.to_string_lossy()));
        let abs = abs.to_string_lossy().into_owned();
        let prefix = format!("{stem}-{:016x}-", rep::fnv(abs.as_bytes(), rep::FNV_OFFSET));
        let file = dir.join(format!("{prefix}{:016x}.{EXT}", key.hash()));
        Some(Self { file, dir: dir.to_path_buf(), prefix, key, abs })
    }

    // The entry's trace; None without an entry, and after saying why a bad one was
    // removed.
    fn open_or_say(&self, trace: &Path, checks: Checks) -> Option<Trace> {
        let opened = match checks {
            Checks::Now => self.open(),
            Checks::Later => self.open_unchecked(),
        };
        match opened {
            Ok(t) => t,
            Err(why) => {
                let _ = fs::remove_file(&self.file);
                eprintln!(
                    "lanescope: {}: {why:#}; removed it and reading {} again",
                    self.file.display(),
                    crate::text::sanitize(&trace.display().to_string())
                );
                None
            }
        }
    }

    /// The trace kept in the entry, every column copied out of the mapped file and
    /// checked: None when there is none, an error saying what is wrong with a damaged one.
    pub(crate) fn open(&self) -> Result<Option<Trace>> {
        self.read::<Trace>(&self.file, false)
    }

    /// The trace kept in the entry, its large columns left in the mapped file and not yet
    /// checked ([`Trace::verify_columns`] must pass before its numbers are used): what the
    /// viewer draws its first frame from.
    pub(crate) fn open_unchecked(&self) -> Result<Option<Trace>> {
        self.read::<Trace>(&self.file, true)
    }

    /// Remove the entry (and the parts kept beside it).
    pub(crate) fn remove(&self) {
        for (path, ..) in entries(&self.dir) {
            let ours = path.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&self.prefix));
            if ours {
                let _ = fs::remove_file(path);
            }
        }
    }

    /// The part `name` of the entry ([`Entry::store_part`]): None when there is none, an
    /// error saying what is wrong with a damaged one or one `check` refuses.
    pub(crate) fn open_part<T: Field>(&self, name: &str, check: impl FnOnce(&T) -> Result<()>) -> Result<Option<T>> {
        let Some(v) = self.read::<T>(&self.part_file(name), false)? else { return Ok(None) };
        check(&v).context("damaged cache entry")?;
        Ok(Some(v))
    }

    /// The value kept as the part `name` by [`Entry::store_derived`]: None when there is
    /// none, an error saying what is wrong with a damaged one.
    pub(crate) fn open_derived<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>> {
        let Some(Blob(bytes)) = self.read::<Blob>(&self.part_file(name), false)? else { return Ok(None) };
        let (v, rest) = postcard::take_from_bytes::<T>(&bytes).context("damaged cache entry")?;
        if !rest.is_empty() {
            bail!("damaged cache entry ({} bytes after its value)", rest.len());
        }
        Ok(Some(v))
    }

    /// Write `value`, serialized, as the part `name` of the entry (atomically), then the
    /// oldest entries go until all fit in `max` bytes; a value larger than `max` is not kept.
    pub(crate) fn store_derived<T: Serialize>(&self, name: &str, value: &T, max: u64) -> Result<()> {
        let bytes = postcard::to_allocvec(value).context("serializing")?;
        if bytes.len() as u64 > max {
            return Ok(());
        }
        self.store_part(name, &Blob(bytes), max)
    }

    /// The file of the part `name`: `STEM-PATHHASH-KEYHASH-NAME.lsc`, an entry of its own
    /// (the same header and key) that goes with the entry's other states and by age.
    pub(crate) fn part_file(&self, name: &str) -> PathBuf {
        let stem = self.file.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        self.dir.join(format!("{stem}-{}.{EXT}", rep::safe_name(name)))
    }

    // The value of the body of `file` after the trace's absolute path: when `lend`,
    // large columns stay in the mapped file (unverified: see `Trace::verify_columns`);
    // the rest is copied out and checked.
    fn read<T: Field>(&self, file: &Path, lend: bool) -> Result<Option<T>> {
        let f = match File::open(file) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => bail!("cannot read the cache entry ({e})"),
        };
        let len = f.metadata().map_or(0, |m| m.len());
        if len < HEADER {
            bail!("cache entry truncated ({len} bytes)");
        }
        let map = Arc::new(map(&f).context("cannot map the cache entry")?);
        let h: &[u8; HEADER as usize] = map.first_chunk().context("cache entry truncated")?;
        let (format, crc, body, key) = parse_header(h)?;
        if format != FORMAT {
            bail!("cache entry of layout {format}, not {FORMAT}");
        }
        if key != self.key {
            bail!("cache entry of another state of the trace");
        }
        if HEADER.checked_add(body) != Some(map.len() as u64) {
            bail!("cache entry truncated ({} bytes, its header says {})", map.len(), HEADER.saturating_add(body));
        }
        let mut dec = Dec::mapped(&map, HEADER as usize, lend);
        let read = String::take(&mut dec).and_then(|abs| Ok((abs, T::take(&mut dec)?)));
        let (abs, value) = read.context("damaged cache entry")?;
        if dec.finish().context("damaged cache entry")? != crc {
            bail!("damaged cache entry (checksum mismatch)");
        }
        if abs != self.abs {
            bail!("cache entry of another trace ({abs})");
        }
        drop(f);
        // Recently used entries are the last to go.
        let _ =
            fs::OpenOptions::new().write(true).open(file).and_then(|f| f.set_modified(std::time::SystemTime::now()));
        Ok(Some(value))
    }

    /// Write `trace` as the entry (atomically), remove older states of the trace, then
    /// the oldest entries until all fit in `max` bytes.
    pub(crate) fn store(&self, trace: &Trace, max: u64) -> Result<()> {
        if trace.heap_bytes() as u64 > max {
            return Ok(());
        }
        fs::create_dir_all(&self.dir).context("creating the cache directory")?;
        rep::sweep_stale(&self.dir);
        self.write(&self.file, |enc| trace.put(enc))?;
        for (path, ..) in entries(&self.dir) {
            let other = path.file_name().is_some_and(|n| n.to_string_lossy().starts_with(&self.prefix));
            if other && path != self.file {
                let _ = fs::remove_file(path);
            }
        }
        evict(&self.dir, max);
        Ok(())
    }

    /// Write `value` as the part `name` of the entry (atomically), beside the trace's
    /// entry, then the oldest entries go until all fit in `max` bytes. A higher layer
    /// keeps there what it derives from the trace alone (the view's render index).
    pub(crate) fn store_part<T: Field>(&self, name: &str, value: &T, max: u64) -> Result<()> {
        fs::create_dir_all(&self.dir).context("creating the cache directory")?;
        self.write(&self.part_file(name), |enc| value.put(enc))?;
        evict(&self.dir, max);
        Ok(())
    }

    // Write the trace's absolute path and what `put` writes as `file`, through a
    // temporary in the same directory.
    fn write(&self, file: &Path, put: impl FnOnce(&mut Enc<BufWriter<File>>) -> std::io::Result<()>) -> Result<()> {
        let name = file.file_stem().map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        // Unique within the process too: threads (the tests, an MCP server) may store at once.
        let serial = SERIAL.fetch_add(1, Ordering::Relaxed);
        let tmp = self.dir.join(format!(".{name}.{serial}-{}.tmp.{EXT}", std::process::id()));
        let written = self.write_to(&tmp, put).and_then(|()| Ok(fs::rename(&tmp, file)?));
        if written.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        written
    }

    fn write_to(&self, tmp: &Path, put: impl FnOnce(&mut Enc<BufWriter<File>>) -> std::io::Result<()>) -> Result<()> {
        let mut open = fs::OpenOptions::new();
        open.write(true).create_new(true);
        // The entry holds what the trace holds (names, paths): readable by its owner only.
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut open, 0o600);
        let mut f = open.open(tmp)?;
        f.write_all(&[0u8; HEADER as usize])?;
        let mut enc = Enc::new(BufWriter::with_capacity(BUFFER, f));
        self.abs.put(&mut enc)?;
        put(&mut enc)?;
        let (w, body, crc) = enc.finish();
        let mut f = w.into_inner().map_err(std::io::IntoInnerError::into_error)?;
        f.seek(SeekFrom::Start(0))?;
        f.write_all(&self.key.header(crc, body))?;
        Ok(())
    }
}

// Entries of a cache directory (not temporaries): path, mtime, bytes.
fn entries(dir: &Path) -> Vec<(PathBuf, std::time::SystemTime, u64)> {
    let Ok(rd) = fs::read_dir(dir) else { return Vec::new() };
    rd.flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            !n.starts_with('.') && Path::new(&n).extension().is_some_and(|x| x == EXT)
        })
        .filter_map(|e| {
            let m = e.metadata().ok()?;
            Some((e.path(), m.modified().ok()?, m.len()))
        })
        .collect()
}

/// The whole of `f`, mapped read-only.
#[allow(unsafe_code)]
fn map(f: &File) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: the mapping must not change while mapped: a file truncated or rewritten
    // in place by another process would change (or fault) the columns borrowed from it.
    // Entries are private (0600) files that lanescope writes under a temporary name and
    // renames into place, and never opens for writing again (a read only updates the
    // mtime); a removed or replaced entry stays mapped as it was. Only someone with the
    // user's rights changing the file in place can break this (SECURITY.md).
    unsafe { memmap2::Mmap::map(f) }
}

/// Remove the least recently used entries of `dir` until the rest take at most `max` bytes.
pub(crate) fn evict(dir: &Path, max: u64) {
    let mut all = entries(dir);
    all.sort_by_key(|e| e.1);
    let mut total: u64 = all.iter().map(|e| e.2).sum();
    for (path, _, len) in all {
        if total <= max {
            break;
        }
        if fs::remove_file(&path).is_ok() {
            total -= len;
        }
    }
}

#[cfg(test)]
mod tests;
