//! The cache's body: a [`Trace`] in a fixed little-endian layout. Columns are a count,
//! the CRC-32 of their values, zeros up to their values' alignment, then the values back
//! to back; records are their fields in declaration order (the `record!` impls name
//! every field, so a field added to the model does not build until it is written here
//! too). Every count is checked against the bytes left before anything is allocated, so
//! a damaged body is an error, never a panic or an allocation of its claimed size.
//!
//! Two checksums: the body's own (in the entry's header) covers every byte but the
//! columns' values, and is checked when the entry is read; each column's covers its
//! values, checked when they are copied, or, for a column left in the mapped entry
//! ([`Dec::col_shared`]), by [`crate::model::Col::verify`] before its numbers are used.

use std::collections::HashMap;
use std::io::{self, Write};
use std::sync::Arc;

use anyhow::{Result, bail};
use zerocopy::IntoBytes;

use crate::model::counters::{Counters, Series};
use crate::model::{
    Alignment, Col, Columns, Events, Gpu, HostData, HostTables, Lane, LaneKind, MemClass, Meta, Ns, Plain, Process,
    Rank, SampleRate, Strings, SyncRecords, TableStat, Thread, Trace,
};

/// Bytes of values below which a column is copied out of a mapped entry rather than
/// left there (a page or so: borrowing it would save nothing).
const MAP_MIN: usize = 16 << 10;

/// The writing side: every byte goes through here, counted, and checksummed unless it
/// is a column's values (those have their own checksum).
pub(crate) struct Enc<W: Write> {
    out: W,
    crc: crc32fast::Hasher,
    bytes: u64,
}

impl<W: Write> Enc<W> {
    pub(crate) fn new(out: W) -> Self {
        Self { out, crc: crc32fast::Hasher::new(), bytes: 0 }
    }

    fn raw(&mut self, b: &[u8]) -> io::Result<()> {
        self.crc.update(b);
        self.bytes += b.len() as u64;
        self.out.write_all(b)
    }

    /// Bytes written and the CRC-32 of all but the columns' values, and the writer back.
    pub(crate) fn finish(self) -> (W, u64, u32) {
        (self.out, self.bytes, self.crc.finalize())
    }

    /// A column: its length, its values' CRC-32, zeros up to `T`'s alignment (so that
    /// a mapped entry can lend the values in place), then its values.
    pub(crate) fn col<T: Le>(&mut self, v: &[T]) -> io::Result<()> {
        let converted: Vec<u8>;
        let values: &[u8] = if cfg!(target_endian = "little") {
            v.as_bytes()
        } else {
            converted = v.iter().fold(Vec::with_capacity(v.len() * T::SIZE), |mut out, x| {
                x.put_le(&mut out);
                out
            });
            &converted
        };
        (v.len() as u64).put(self)?;
        crc32fast::hash(values).put(self)?;
        let pad = pad_to(self.bytes, align_of::<T>());
        self.raw(&[0u8; 16][..pad])?;
        self.bytes += values.len() as u64;
        self.out.write_all(values)
    }
}

// Zeros from `at` up to the next multiple of `align` (a power of two, at most 16).
fn pad_to(at: u64, align: usize) -> usize {
    (at.wrapping_neg() & (align as u64 - 1)) as usize
}

/// The reading side: a body in memory (a mapped entry, or bytes), read in order,
/// checksummed as [`Enc`] checksummed it.
pub(crate) struct Dec<'a> {
    body: &'a [u8],
    at: usize,
    crc: crc32fast::Hasher,
    // The mapping and where the body starts in it, when columns may stay there.
    map: Option<(&'a Arc<memmap2::Mmap>, usize)>,
}

impl<'a> Dec<'a> {
    /// A reader of `body`; every column is copied out of it.
    #[cfg(test)]
    pub(crate) fn new(body: &'a [u8]) -> Self {
        Self { body, at: 0, crc: crc32fast::Hasher::new(), map: None }
    }

    /// A reader of the body at byte `from` of `map` to its end; when `lend`, large
    /// columns read with [`Dec::col_shared`] stay in the mapping, else all are copied.
    pub(crate) fn mapped(map: &'a Arc<memmap2::Mmap>, from: usize, lend: bool) -> Self {
        let body = map.get(from..).unwrap_or_default();
        Self { body, at: 0, crc: crc32fast::Hasher::new(), map: lend.then_some((map, from)) }
    }

    fn left(&self) -> usize {
        self.body.len() - self.at
    }

    // The next `n` bytes, without checksumming them.
    fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.left() {
            bail!("truncated");
        }
        let b = &self.body[self.at..self.at + n];
        self.at += n;
        Ok(b)
    }

    fn raw(&mut self, n: usize) -> Result<&'a [u8]> {
        let b = self.bytes(n)?;
        self.crc.update(b);
        Ok(b)
    }

    /// The CRC-32 of the body but its columns' values, once all of it has been read.
    pub(crate) fn finish(self) -> Result<u32> {
        if self.left() != 0 {
            bail!("{} bytes left over", self.left());
        }
        Ok(self.crc.finalize())
    }

    /// A count of items of at least `size` bytes each that fits in what is left.
    pub(crate) fn count(&mut self, size: usize) -> Result<usize> {
        let n = u64::take(self)?;
        if n.saturating_mul(size as u64) > self.left() as u64 {
            bail!("a count ({n}) larger than the file");
        }
        Ok(n as usize)
    }

    // A column's length, checksum and values, as [`Enc::col`] wrote them.
    fn col_bytes<T: Le>(&mut self) -> Result<(usize, u32, usize, &'a [u8])> {
        let n = self.count(T::SIZE)?;
        let crc = u32::take(self)?;
        let pad = pad_to(self.at as u64, align_of::<T>());
        self.raw(pad)?;
        let at = self.at;
        Ok((n, crc, at, self.bytes(n * T::SIZE)?))
    }

    /// A column written by [`Enc::col`], copied into a vector of its own and checked
    /// against its checksum.
    pub(crate) fn col<T: Le>(&mut self) -> Result<Vec<T>> {
        let (n, crc, _, values) = self.col_bytes::<T>()?;
        copied(n, crc, values)
    }

    /// A column written by [`Enc::col`]: left in the mapped entry when the body is one
    /// and the column is large (its checksum then checked by [`Col::verify`], before
    /// its numbers are used), else copied and checked at once.
    pub(crate) fn col_shared<T: Le>(&mut self) -> Result<Col<T>> {
        let (n, crc, at, values) = self.col_bytes::<T>()?;
        match self.map {
            Some((map, from)) if cfg!(target_endian = "little") && values.len() >= MAP_MIN => {
                Col::mapped(Arc::clone(map), from + at, n, crc).ok_or_else(|| anyhow::anyhow!("a misaligned column"))
            }
            _ => copied(n, crc, values).map(Col::from),
        }
    }
}

// `n` values of the little-endian `bytes`, whose CRC-32 must be `crc`.
fn copied<T: Le>(n: usize, crc: u32, bytes: &[u8]) -> Result<Vec<T>> {
    if crc32fast::hash(bytes) != crc {
        bail!("checksum mismatch");
    }
    let mut v = vec![T::ZERO; n];
    v.as_mut_bytes().copy_from_slice(bytes);
    if cfg!(target_endian = "big") {
        for x in &mut v {
            *x = x.le_to_native();
        }
    }
    Ok(v)
}

/// A fixed-size number kept little-endian in columns (any bit pattern is a value, so a
/// column is read straight into its vector's bytes).
pub(crate) trait Le: Plain {
    const SIZE: usize;
    const ZERO: Self;
    fn put_le(self, out: &mut Vec<u8>);
    /// The value whose little-endian bytes this holds (itself on a little-endian machine).
    fn le_to_native(self) -> Self;
}

macro_rules! le {
    ($($t:ty),*) => {$(
        impl Le for $t {
            const SIZE: usize = size_of::<$t>();
            const ZERO: Self = 0;
            #[inline]
            fn put_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            #[inline]
            fn le_to_native(self) -> Self {
                <$t>::from_le(self)
            }
        }
        impl Field for $t {
            fn put<W: Write>(&self, w: &mut Enc<W>) -> io::Result<()> {
                w.raw(&self.to_le_bytes())
            }
            fn take(r: &mut Dec<'_>) -> Result<Self> {
                let mut a = [0u8; size_of::<$t>()];
                a.copy_from_slice(r.raw(size_of::<$t>())?);
                Ok(<$t>::from_le_bytes(a))
            }
        }
    )*};
}

/// A value written to and read from the body.
pub(crate) trait Field: Sized {
    /// Write the value.
    fn put<W: Write>(&self, w: &mut Enc<W>) -> io::Result<()>;
    /// Read a value written by [`Field::put`].
    fn take(r: &mut Dec<'_>) -> Result<Self>;
}

le!(u8, u16, u32, u64, i64, u128);

impl Field for usize {
    fn put<W: Write>(&self, w: &mut Enc<W>) -> io::Result<()> {
        (*self as u64).put(w)
    }
    fn take(r: &mut Dec<'_>) -> Result<Self> {
        usize::try_from(u64::take(r)?).map_err(|_| anyhow::anyhow!("a size too large"))
    }
}

impl Field for f64 {
    fn put<W: Write>(&self, w: &mut Enc<W>) -> io::Result<()> {
        self.to_bits().put(w)
    }
    fn take(r: &mut Dec<'_>) -> Result<Self> {
        Ok(f64::from_bits(u64::take(r)?))
    }
}

impl Field for bool {
    fn put<W: Write>(&self, w: &mut Enc<W>) -> io::Result<()> {
        u8::from(*self).put(w)
    }
    fn take(r: &mut Dec<'_>) -> Result<Self> {
        match u8::take(r)? {
            0 => Ok(false),
            1 => Ok(true),
            b => bail!("a flag of value {b}"),
        }
    }
}

impl Field for String {
    fn put<W: Write>(&self, w: &mut Enc<W>) -> io::Result<()> {
        w.col(self.as_bytes())
    }
    fn take(r: &mut Dec<'_>) -> Result<Self> {
        String::from_utf8(r.col::<u8>()?).map_err(|_| anyhow::anyhow!("a name that is not UTF-8"))
    }
}

impl<T: Field> Field for Option<T> {
    fn put<W: Write>(&self, w: &mut Enc<W>) -> io::Result<()> {
        self.is_some().put(w)?;
        self.as_ref().map_or(Ok(()), |v| v.put(w))
    }
    fn take(r: &mut Dec<'_>) -> Result<Self> {
        if bool::take(r)? { Ok(Some(T::take(r)?)) } else { Ok(None) }
    }
}

impl<T: Field> Field for Vec<T> {
    fn put<W: Write>(&self, w: &mut Enc<W>) -> io::Result<()> {
        self.len().put(w)?;
        self.iter().try_for_each(|v| v.put(w))
    }
    fn take(r: &mut Dec<'_>) -> Result<Self> {
        // Every item takes at least a byte.
        let n = r.count(1)?;
        (0..n).map(|_| T::take(r)).collect()
    }
}

impl<A: Field, B: Field> Field for (A, B) {
    fn put<W: Write>(&self, w: &mut Enc<W>) -> io::Result<()> {
        self.0.put(w)?;
        self.1.put(w)
    }
    fn take(r: &mut Dec<'_>) -> Result<Self> {
        Ok((A::take(r)?, B::take(r)?))
    }
}

// Every field of a struct, in order; the patterns name them all, so a new field must be
// added here.
macro_rules! record {
    ($t:ident { $($f:ident),* $(,)? }) => {
        impl Field for $t {
            fn put<W: Write>(&self, w: &mut Enc<W>) -> io::Result<()> {
                let $t { $($f),* } = self;
                $($f.put(w)?;)*
                Ok(())
            }
            fn take(r: &mut Dec<'_>) -> Result<Self> {
                Ok($t { $($f: Field::take(r)?),* })
            }
        }
    };
}

record!(Trace { meta, strings, gpus, processes, threads, lanes, syncs, host, ranks, counters });
record!(Meta {
    path,
    nsys_version,
    schema_version,
    start_ns,
    end_ns,
    utc_epoch_ns,
    tables,
    file_bytes,
    outliers,
    unreadable_events,
    hostname,
    env_rank,
    env_local_rank,
    align_note,
});
record!(TableStat { name, rows, ms });
record!(Gpu { device, name, sm_count, memory_bytes });
record!(Process { pid, name });
record!(Thread { pid, tid, name });
record!(Lane { kind, pid, ev, disjoint });
record!(SyncRecords { pid, ev });
record!(HostData {
    cpus,
    cpu_cores,
    samples,
    switches,
    osrt_calls,
    sampled_threads,
    tables,
    has_python,
    python_samples
});
record!(HostTables { osrt, sched, samples });
record!(SampleRate { pid, tid, samples, seconds, hz });
record!(Rank {
    rank,
    rank_source,
    host,
    path,
    nsys_version,
    session_start_utc_ns,
    offset_ns,
    aligned_on,
    start_ns,
    end_ns,
    pids,
    devices
});

impl Field for Alignment {
    fn put<W: Write>(&self, w: &mut Enc<W>) -> io::Result<()> {
        let tag: u8 = match self {
            Alignment::SessionStart => 0,
            Alignment::FirstStep => 1,
            Alignment::FirstEvent => 2,
        };
        tag.put(w)
    }
    fn take(r: &mut Dec<'_>) -> Result<Self> {
        Ok(match u8::take(r)? {
            0 => Alignment::SessionStart,
            1 => Alignment::FirstStep,
            2 => Alignment::FirstEvent,
            t => bail!("an alignment of tag {t}"),
        })
    }
}

impl Field for MemClass {
    fn put<W: Write>(&self, w: &mut Enc<W>) -> io::Result<()> {
        let tag: u8 = match self {
            MemClass::H2D => 0,
            MemClass::D2H => 1,
            MemClass::D2D => 2,
            MemClass::P2P => 3,
            MemClass::Memset => 4,
            MemClass::Other => 5,
        };
        tag.put(w)
    }
    fn take(r: &mut Dec<'_>) -> Result<Self> {
        Ok(match u8::take(r)? {
            0 => MemClass::H2D,
            1 => MemClass::D2H,
            2 => MemClass::D2D,
            3 => MemClass::P2P,
            4 => MemClass::Memset,
            5 => MemClass::Other,
            t => bail!("a memory class of tag {t}"),
        })
    }
}

// A tag, then the kind's fields in declaration order.
impl Field for LaneKind {
    fn put<W: Write>(&self, w: &mut Enc<W>) -> io::Result<()> {
        match *self {
            LaneKind::Kernels { device, stream } => (0u8, (device, stream)).put(w),
            LaneKind::Memory { device, stream, class } => (1u8, (device, (stream, class))).put(w),
            LaneKind::Graphs { device, stream } => (2u8, (device, stream)).put(w),
            LaneKind::GpuRanges { device } => (3u8, device).put(w),
            LaneKind::Nvtx { tid, depth } => (4u8, (tid, depth)).put(w),
            LaneKind::NvtxStartEnd { tid, row } => (5u8, (tid, row)).put(w),
            LaneKind::NvtxMarks { tid } => (6u8, tid).put(w),
            LaneKind::CudaApi { tid } => (7u8, tid).put(w),
            LaneKind::Osrt { tid } => (8u8, tid).put(w),
            LaneKind::Overhead { tid } => (9u8, tid).put(w),
            LaneKind::OnCpu { tid } => (10u8, tid).put(w),
            LaneKind::Samples { tid } => (11u8, tid).put(w),
        }
    }
    fn take(r: &mut Dec<'_>) -> Result<Self> {
        let tag = u8::take(r)?;
        let one = |r: &mut Dec<'_>| u32::take(r);
        Ok(match tag {
            0 => LaneKind::Kernels { device: one(r)?, stream: one(r)? },
            1 => LaneKind::Memory { device: one(r)?, stream: one(r)?, class: MemClass::take(r)? },
            2 => LaneKind::Graphs { device: one(r)?, stream: one(r)? },
            3 => LaneKind::GpuRanges { device: one(r)? },
            4 => LaneKind::Nvtx { tid: one(r)?, depth: u16::take(r)? },
            5 => LaneKind::NvtxStartEnd { tid: one(r)?, row: u16::take(r)? },
            6 => LaneKind::NvtxMarks { tid: one(r)? },
            7 => LaneKind::CudaApi { tid: one(r)? },
            8 => LaneKind::Osrt { tid: one(r)? },
            9 => LaneKind::Overhead { tid: one(r)? },
            10 => LaneKind::OnCpu { tid: one(r)? },
            11 => LaneKind::Samples { tid: one(r)? },
            t => bail!("a lane kind of tag {t}"),
        })
    }
}

// Columns as the lane keeps them (narrow or wide, flags per event or per name): the
// model reads back exactly as it was, its heap size included.
impl Field for Events {
    fn put<W: Write>(&self, w: &mut Enc<W>) -> io::Result<()> {
        let c = self.columns();
        w.col(c.start)?;
        w.col(c.dur32)?;
        w.col(c.end64)?;
        w.col(c.name)?;
        w.col(c.corr)?;
        w.col(c.aux32)?;
        w.col(c.aux64)?;
        w.col(c.flags)?;
        w.col(&c.flags_by_name.0)?;
        w.col(&c.flags_by_name.1)
    }
    fn take(r: &mut Dec<'_>) -> Result<Self> {
        let c = Columns {
            start: r.col_shared()?,
            dur32: r.col_shared()?,
            end64: r.col_shared()?,
            name: r.col_shared()?,
            corr: r.col_shared()?,
            aux32: r.col_shared()?,
            aux64: r.col_shared()?,
            flags: r.col_shared()?,
            flags_by_name: (r.col()?, r.col()?),
        };
        Events::from_columns(c).map_err(|why| anyhow::anyhow!("a lane with {why}"))
    }
}

// All strings as one UTF-8 block and their ends.
impl Field for Strings {
    fn put<W: Write>(&self, w: &mut Enc<W>) -> io::Result<()> {
        let mut ends = Vec::with_capacity(self.len());
        let mut block = String::new();
        for (_, s) in self.iter() {
            block.push_str(s);
            ends.push(block.len() as u64);
        }
        w.col(&ends)?;
        w.col(block.as_bytes())
    }
    fn take(r: &mut Dec<'_>) -> Result<Self> {
        let ends: Vec<u64> = r.col()?;
        let block = String::from_utf8(r.col::<u8>()?).map_err(|_| anyhow::anyhow!("names that are not UTF-8"))?;
        let mut start = 0;
        let mut values = Vec::with_capacity(ends.len());
        for &end in &ends {
            let s = usize::try_from(end).ok().and_then(|e| block.get(start..e));
            let s = s.ok_or_else(|| anyhow::anyhow!("a name out of its block"))?;
            values.push(Box::from(s));
            start = end as usize;
        }
        Ok(Strings::from_values(values))
    }
}

// Each series' values; a time column shared by several series is written once and
// shared again when read.
impl Field for Counters {
    fn put<W: Write>(&self, w: &mut Enc<W>) -> io::Result<()> {
        let mut seen: HashMap<*const Ns, u64> = HashMap::new();
        self.series.len().put(w)?;
        for s in &self.series {
            s.device.put(w)?;
            s.name.put(w)?;
            let next = seen.len() as u64;
            if let Some(&k) = seen.get(&s.times.as_ptr()) {
                (true, k).put(w)?;
            } else {
                seen.insert(s.times.as_ptr(), next);
                false.put(w)?;
                w.col(&s.times)?;
            }
            let values: Vec<i64> = (0..s.len()).map(|i| s.value(i)).collect();
            w.col(&values)?;
        }
        Ok(())
    }
    fn take(r: &mut Dec<'_>) -> Result<Self> {
        let n = r.count(1)?;
        let mut columns: Vec<Arc<[Ns]>> = Vec::new();
        let mut series = Vec::with_capacity(n);
        for _ in 0..n {
            let (device, name) = <(u32, String)>::take(r)?;
            let times = if bool::take(r)? {
                let k = usize::take(r)?;
                columns.get(k).cloned().ok_or_else(|| anyhow::anyhow!("a shared time column that is not there"))?
            } else {
                let t: Arc<[Ns]> = r.col::<i64>()?.into();
                columns.push(Arc::clone(&t));
                t
            };
            let values: Vec<i64> = r.col()?;
            if values.len() != times.len() {
                bail!("a counter with {} times and {} values", times.len(), values.len());
            }
            series.push(Series::new(device, name, times, &values));
        }
        Ok(Counters { series })
    }
}
