//! Opening a trace file strictly read-only, with one clear error per kind of bad input.

use std::fmt::Write as _;
use std::fs::File;
use std::io::Read;
use std::path::Path;

use anyhow::{Context, Result, bail};
use rusqlite::{Connection, OpenFlags};

const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// What a trace file holds, judged by its first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Format {
    /// An nsys SQLite export.
    Sqlite,
    /// A Chrome-trace JSON (PyTorch profiler / Kineto).
    Json,
    /// A gzip stream (a compressed Kineto JSON).
    Gzip,
}

/// Check that `path` names a non-empty trace lanescope reads; say what is wrong otherwise.
pub(super) fn check_file(path: &Path) -> Result<u64> {
    sniff(path).map(|(_, n)| n)
}

/// The format of the trace at `path` (by content, not by name) and its size in bytes.
pub(super) fn sniff(path: &Path) -> Result<(Format, u64)> {
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => bail!("no such file"),
        Err(e) => return Err(e).context("cannot read file"),
    };
    if meta.is_dir() {
        bail!("is a directory, not an nsys SQLite export or a PyTorch profiler trace");
    }
    not_special(&meta)?;
    if meta.len() == 0 {
        bail!("empty file, not an nsys SQLite export or a PyTorch profiler trace");
    }
    let mut head = [0u8; 64];
    let mut f = File::open(path).context("cannot open file")?;
    let n = read_up_to(&mut f, &mut head).context("cannot read file")?;
    let head = &head[..n];
    if head.starts_with(&[0x1f, 0x8b]) {
        return Ok((Format::Gzip, meta.len()));
    }
    let text = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    if let Some(&c) = text.iter().find(|b| !b.is_ascii_whitespace())
        && (c == b'{' || c == b'[')
    {
        return Ok((Format::Json, meta.len()));
    }
    if n < 16 || &head[..16] != SQLITE_MAGIC {
        if path.extension().is_some_and(|e| e == "nsys-rep" || e == "qdrep") {
            bail!("is an nsys report, not its SQLite export (run: nsys export --type sqlite {})", path.display());
        }
        if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0]) {
            bail!("is xz-compressed: decompress it first (xz -dk), or gzip it (lanescope reads .json.gz)");
        }
        bail!(
            "not a SQLite database (export one with: nsys export --type sqlite REPORT) nor a PyTorch profiler JSON trace"
        );
    }
    if meta.len() < 512 {
        bail!("truncated SQLite file ({} bytes)", meta.len());
    }
    Ok((Format::Sqlite, meta.len()))
}

/// Refuse what is not a regular file (a FIFO, a device, a socket, `/dev/stdin`): opening
/// one can block forever, so this is checked on its metadata before any open.
pub(super) fn not_special(meta: &std::fs::Metadata) -> Result<()> {
    use std::os::unix::fs::FileTypeExt;
    if meta.is_file() || meta.is_dir() {
        return Ok(());
    }
    let t = meta.file_type();
    let what = if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a file"
    };
    bail!("is {what}, not a regular file: lanescope reads trace files only")
}

/// True when `path` is a regular file that begins like a SQLite database.
pub(super) fn is_sqlite(path: &Path) -> bool {
    let mut head = [0u8; 16];
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return false;
    }
    File::open(path).and_then(|mut f| read_up_to(&mut f, &mut head)).is_ok_and(|n| n == 16 && &head == SQLITE_MAGIC)
}

fn read_up_to(f: &mut File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Open `path` read-only and immutable: SQLite takes no lock and writes no journal,
/// WAL or shared-memory file beside the trace.
pub(super) fn connect(path: &Path) -> Result<Connection> {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let uri = format!("file:{}?mode=ro&immutable=1", uri_escape(&abs.to_string_lossy()));
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(uri, flags).context("cannot open as SQLite")?;
    // A corrupt header or page map shows up on the first read of the schema.
    conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0))
        .map_err(|e| anyhow::anyhow!("corrupt or unreadable SQLite file ({e})"))?;
    Ok(conn)
}

// Percent-encode the characters that would end or alter a SQLite URI path.
fn uri_escape(p: &str) -> String {
    let mut out = String::with_capacity(p.len());
    for c in p.chars() {
        match c {
            '%' | '?' | '#' | ' ' => {
                let mut b = [0u8; 4];
                for byte in c.encode_utf8(&mut b).bytes() {
                    let _ = write!(out, "%{byte:02X}");
                }
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_escape_keeps_plain_paths() {
        assert_eq!(uri_escape("/a/b.sqlite"), "/a/b.sqlite");
        assert_eq!(uri_escape("/a b/c?#%.sqlite"), "/a%20b/c%3F%23%25.sqlite");
    }
}
