//! In-memory timeline model: lanes of events stored as columns sorted by start,
//! names interned once. Knows nothing about SQLite or the terminal.

use std::borrow::Cow;
use std::collections::HashMap;

mod col;
pub(crate) mod counters;

pub use col::{Col, Plain};

/// Nanoseconds on the session timeline (may be negative for pre-capture events).
pub type Ns = i64;
/// Index into [`Strings`].
pub(crate) type StrId = u32;

/// Interned strings: each distinct name is stored once.
#[derive(Debug, Default, Clone)]
pub struct Strings {
    values: Vec<Box<str>>,
    lookup: HashMap<Box<str>, StrId>,
}

impl Strings {
    /// Create a table whose id 0 is the empty string.
    pub fn new() -> Self {
        let mut s = Self::default();
        s.intern("");
        s
    }

    /// Return the id of `s`, adding it if it is new.
    pub fn intern(&mut self, s: &str) -> StrId {
        if let Some(&id) = self.lookup.get(s) {
            return id;
        }
        let id = StrId::try_from(self.values.len()).expect("fewer than 4G strings");
        self.values.push(s.into());
        self.lookup.insert(s.into(), id);
        id
    }

    /// Return the string for `id` (empty for an unknown id).
    pub fn get(&self, id: StrId) -> &str {
        self.values.get(id as usize).map_or("", |s| s)
    }

    /// Number of distinct strings.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// True when only the empty string is present.
    pub fn is_empty(&self) -> bool {
        self.values.len() <= 1
    }

    /// Iterate `(id, string)` pairs.
    pub fn iter(&self) -> impl Iterator<Item = (StrId, &str)> {
        self.values.iter().enumerate().map(|(i, s)| (i as StrId, &**s))
    }

    /// Approximate heap bytes used.
    pub fn heap_bytes(&self) -> usize {
        self.values.iter().map(|s| 2 * s.len() + 48).sum::<usize>()
    }

    /// A table holding `values` under ids `0..`, as [`Strings::iter`] gave them (the
    /// reader's cache); a repeated value keeps its first id for [`Strings::intern`].
    pub(crate) fn from_values(values: Vec<Box<str>>) -> Self {
        let mut lookup = HashMap::with_capacity(values.len());
        for (i, v) in values.iter().enumerate() {
            lookup.entry(v.clone()).or_insert(i as StrId);
        }
        Self { values, lookup }
    }
}

/// Columns of one lane's events, sorted by start.
///
/// `corr`, aux and flags are empty for lanes that do not use them; the accessors then
/// return 0. Ends are kept as `u32` durations while every event of the lane lasts less
/// than 4.29 s (kernels, API calls), else as absolute `i64` ends. Aux values are kept as
/// `u32` while they all fit (string ids, CPU ids, most byte counts) and widened to `u64`
/// on the first one that does not. Flags that depend only on the name (CUDA API kinds,
/// memcpy kinds) are kept once per distinct name instead of once per event, see
/// [`Events::compact`]. docs/performance.md has the bytes per column.
#[derive(Debug, Default, Clone)]
pub struct Events {
    /// Start times.
    pub start: Col<Ns>,
    // End times (`>= start`): durations while every one fits in a u32, else absolute
    // ends (then `dur32` is empty). Read them with `end(i)`, `ends()`, `dur(i)`.
    dur32: Col<u32>,
    end64: Col<Ns>,
    /// Display name.
    pub name: Col<StrId>,
    /// CUDA correlation id (GPU operations and CUDA API calls).
    pub corr: Col<u32>,
    // Bytes for memory operations; demangled name id for kernels: narrow while every
    // value fits in a u32, else wide (then `aux32` is empty).
    aux32: Col<u32>,
    aux64: Col<u64>,
    // Kind bits (see [`MemFlags`], [`ApiKind`], NVTX domain id): one per event, or,
    // after `compact`, one per distinct name in `flags_by_name` (sorted by name).
    flags: Col<u32>,
    flags_by_name: Vec<(StrId, u32)>,
}

/// The columns of an [`Events`] as it keeps them, for the reader's cache to write out
/// and read back unchanged ([`Events::columns`], [`Events::from_columns`]).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Columns<S, D, E, N, A, B, P> {
    /// Starts.
    pub start: S,
    /// Durations while every one fits a `u32` (else empty).
    pub dur32: D,
    /// Absolute ends otherwise (else empty).
    pub end64: E,
    /// Names.
    pub name: N,
    /// Correlation ids (empty when unused).
    pub corr: N,
    /// Narrow aux values (empty when unused or wide).
    pub aux32: D,
    /// Wide aux values (empty when unused or narrow).
    pub aux64: A,
    /// Flags per event (empty when unused or kept per name).
    pub flags: D,
    /// Flags per name, sorted by name: the names and their flags.
    pub flags_by_name: (B, P),
}

/// Borrowed columns of an [`Events`].
pub(crate) type ColumnsRef<'a> = Columns<&'a [Ns], &'a [u32], &'a [Ns], &'a [StrId], &'a [u64], Vec<StrId>, Vec<u32>>;
/// Owned columns of an [`Events`].
pub(crate) type ColumnsOwned = Columns<Col<Ns>, Col<u32>, Col<Ns>, Col<StrId>, Col<u64>, Vec<StrId>, Vec<u32>>;

/// Most distinct names a lane may have for its flags to be kept per name.
const FLAGS_BY_NAME_MAX: usize = 4096;

impl Events {
    /// Number of events.
    pub fn len(&self) -> usize {
        self.start.len()
    }

    /// True when there are no events.
    pub fn is_empty(&self) -> bool {
        self.start.is_empty()
    }

    /// Durations of rows `lo..hi` when the lane keeps them as `u32` (every event
    /// shorter than 4.29 s), for scans over many rows: no per-row branch.
    #[inline]
    pub fn narrow_durs(&self, lo: usize, hi: usize) -> Option<&[u32]> {
        (self.dur32.len() == self.start.len()).then(|| &self.dur32[lo..hi])
    }

    /// Duration of event `i`.
    pub fn dur(&self, i: usize) -> Ns {
        match self.dur32.get(i) {
            Some(&d) => Ns::from(d),
            None => self.end64[i] - self.start[i],
        }
    }

    /// End of event `i`.
    #[inline]
    pub fn end(&self, i: usize) -> Ns {
        match self.dur32.get(i) {
            Some(&d) => self.start[i].saturating_add(Ns::from(d)),
            None => self.end64[i],
        }
    }

    /// Every end, in row order.
    pub fn ends(&self) -> impl DoubleEndedIterator<Item = Ns> + ExactSizeIterator + '_ {
        (0..self.len()).map(|i| self.end(i))
    }

    /// The first row whose end fails `pred` (ends must be partitioned by it, as in a
    /// lane whose events do not overlap): the `partition_point` of the ends.
    pub fn end_partition_point(&self, pred: impl Fn(Ns) -> bool) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if pred(self.end(mid)) { lo = mid + 1 } else { hi = mid }
        }
        lo
    }

    /// True when ends are kept as `u32` durations.
    pub fn narrow_ends(&self) -> bool {
        self.end64.is_empty()
    }

    /// Replace every end `e` by `f(e)` (kept `>= start`); ends are narrowed again when
    /// every duration fits.
    pub fn map_ends(&mut self, mut f: impl FnMut(Ns) -> Ns) {
        self.widen_ends();
        for (e, &s) in self.end64.iter_mut().zip(&self.start) {
            *e = f(*e).max(s);
        }
        self.try_narrow_ends();
    }

    /// Move every event by `offset` (saturating at the ends of the time axis).
    pub fn shift(&mut self, offset: Ns) {
        if offset == 0 {
            return;
        }
        let narrow = self.narrow_ends();
        for v in self.start.iter_mut().chain(self.end64.iter_mut()) {
            *v = v.saturating_add(offset);
        }
        if narrow && self.start.iter().any(|&s| s == Ns::MAX || s == Ns::MIN) {
            // A start pinned at the end of the axis: keep what the old ends saturate to.
            self.widen_ends();
        }
    }

    fn widen_ends(&mut self) {
        if self.end64.is_empty() && !self.start.is_empty() {
            self.end64 = self.ends().collect();
            self.dur32 = Col::default();
        }
    }

    fn try_narrow_ends(&mut self) {
        if self.end64.is_empty() {
            return;
        }
        let fits = |(&s, &e): (&Ns, &Ns)| e.checked_sub(s).and_then(|d| u32::try_from(d).ok()).is_some();
        if self.start.iter().zip(&self.end64).all(fits) {
            self.dur32 = self.start.iter().zip(&self.end64).map(|(&s, &e)| (e - s) as u32).collect();
            self.end64 = Col::default();
        }
    }

    /// Correlation id of event `i` (0 when unknown).
    pub fn corr(&self, i: usize) -> u32 {
        self.corr.get(i).copied().unwrap_or(0)
    }

    /// Aux value of event `i` (0 when unused).
    pub fn aux(&self, i: usize) -> u64 {
        match self.aux32.get(i) {
            Some(&a) => u64::from(a),
            None => self.aux64.get(i).copied().unwrap_or(0),
        }
    }

    /// True when the lane keeps aux values.
    pub fn has_aux(&self) -> bool {
        !self.aux32.is_empty() || !self.aux64.is_empty()
    }

    /// Every aux value in row order (empty when the lane keeps none).
    pub fn aux_values(&self) -> impl Iterator<Item = u64> + '_ {
        self.aux32.iter().map(|&a| u64::from(a)).chain(self.aux64.iter().copied())
    }

    /// Replace every aux value `a` by `f(a)`, widening the column if a result needs it.
    pub fn map_aux(&mut self, mut f: impl FnMut(u64) -> u64) {
        for i in 0..self.aux32.len() {
            let v = f(u64::from(self.aux32[i]));
            if let Ok(n) = u32::try_from(v) {
                self.aux32[i] = n;
            } else {
                self.widen_aux();
                self.aux64[i] = v;
                for a in &mut self.aux64[i + 1..] {
                    *a = f(*a);
                }
                return;
            }
        }
        for a in &mut self.aux64 {
            *a = f(*a);
        }
    }

    fn widen_aux(&mut self) {
        if self.aux64.is_empty() {
            self.aux64 = self.aux32.iter().map(|&a| u64::from(a)).collect();
            self.aux32 = Col::default();
        }
    }

    /// Flags of event `i` (0 when unused).
    pub fn flags(&self, i: usize) -> u32 {
        if let Some(&f) = self.flags.get(i) {
            return f;
        }
        if self.flags_by_name.is_empty() {
            return 0;
        }
        let n = self.name[i];
        self.flags_by_name.binary_search_by_key(&n, |p| p.0).map_or(0, |k| self.flags_by_name[k].1)
    }

    /// True when the lane keeps flags (per event or per name).
    pub fn has_flags(&self) -> bool {
        !self.flags.is_empty() || !self.flags_by_name.is_empty()
    }

    /// Replace every flags word `f` by `g(f)`.
    pub fn map_flags(&mut self, mut g: impl FnMut(u32) -> u32) {
        self.map_flags_named(|_, f| g(f));
    }

    /// Replace every flags word `f` of an event named `n` by `g(n, f)`.
    pub fn map_flags_named(&mut self, mut g: impl FnMut(StrId, u32) -> u32) {
        for (f, &n) in self.flags.iter_mut().zip(&self.name) {
            *f = g(n, *f);
        }
        for p in &mut self.flags_by_name {
            p.1 = g(p.0, p.1);
        }
    }

    /// Append one event; optional columns are kept only when `Some`.
    pub fn push(&mut self, start: Ns, end: Ns, name: StrId, corr: Option<u32>, aux: Option<u64>, flags: Option<u32>) {
        let end = end.max(start);
        match end.checked_sub(start).and_then(|d| u32::try_from(d).ok()) {
            Some(d) if self.end64.is_empty() => self.dur32.push(d),
            _ => {
                self.widen_ends();
                self.end64.push(end);
            }
        }
        self.start.push(start);
        self.name.push(name);
        if let Some(c) = corr {
            self.corr.push(c);
        }
        if let Some(a) = aux {
            match u32::try_from(a) {
                Ok(n) if self.aux64.is_empty() => self.aux32.push(n),
                _ => {
                    self.widen_aux();
                    self.aux64.push(a);
                }
            }
        }
        if let Some(f) = flags {
            self.expand_flags();
            self.flags.push(f);
        }
    }

    // Back to one flags word per event (before rows are added or moved).
    #[inline]
    fn expand_flags(&mut self) {
        if !self.flags_by_name.is_empty() {
            self.expand_flags_by_name();
        }
    }

    #[cold]
    fn expand_flags_by_name(&mut self) {
        let by = std::mem::take(&mut self.flags_by_name);
        let look = |n: StrId| by.binary_search_by_key(&n, |p| p.0).map_or(0, |k| by[k].1);
        self.flags = self.name.iter().map(|&n| look(n)).collect();
    }

    /// Move all events of `other` to the end of `self` (both must use the same columns).
    pub fn append_from(&mut self, mut other: Events) {
        self.expand_flags();
        other.expand_flags();
        if !self.aux64.is_empty() || !other.aux64.is_empty() {
            self.widen_aux();
            other.widen_aux();
        }
        if !self.end64.is_empty() || !other.end64.is_empty() {
            self.widen_ends();
            other.widen_ends();
        }
        self.start.append(&mut other.start);
        self.dur32.append(&mut other.dur32);
        self.end64.append(&mut other.end64);
        self.name.append(&mut other.name);
        self.corr.append(&mut other.corr);
        self.aux32.append(&mut other.aux32);
        self.aux64.append(&mut other.aux64);
        self.flags.append(&mut other.flags);
    }

    /// Keep flags once per distinct name when every event of a name has the same flags
    /// (and there are at most [`FLAGS_BY_NAME_MAX`] names): CUDA API kinds and memcpy
    /// kinds follow from the name. Otherwise (and for lanes of fewer than 1,024 events)
    /// nothing changes.
    pub fn compact(&mut self) {
        if self.flags.len() != self.name.len() || self.flags.is_empty() {
            return;
        }
        // A table indexed by name (names are dense small ids): one load per event.
        // Small lanes are not worth it.
        let top = self.name.iter().copied().max().unwrap_or(0) as usize;
        if self.flags.len() < 1024 || top >= 16 * self.flags.len() {
            return;
        }
        let mut by: Vec<Option<u32>> = vec![None; top + 1];
        let mut distinct = 0;
        for (&n, &f) in self.name.iter().zip(&self.flags) {
            match &mut by[n as usize] {
                Some(g) if *g != f => return,
                Some(_) => {}
                slot @ None => {
                    distinct += 1;
                    if distinct > FLAGS_BY_NAME_MAX {
                        return;
                    }
                    *slot = Some(f);
                }
            }
        }
        self.flags_by_name = by.iter().enumerate().filter_map(|(n, f)| Some((n as StrId, (*f)?))).collect();
        self.flags = Col::default();
    }

    /// Keep only the rows whose (start, end) pass `keep`; returns how many were removed.
    pub fn retain_times(&mut self, keep: impl Fn(Ns, Ns) -> bool) -> usize {
        // Nothing to drop (the common case): one pass, no allocation.
        let Some(first) = (0..self.len()).position(|i| !keep(self.start[i], self.end(i))) else { return 0 };
        let rows: Vec<bool> = (0..self.len()).map(|i| i != first && keep(self.start[i], self.end(i))).collect();
        let removed = rows.iter().filter(|&&k| !k).count();
        if removed > 0 {
            fn filter<T: Plain>(v: &mut Col<T>, rows: &[bool]) {
                if v.len() == rows.len() {
                    let mut it = rows.iter();
                    v.retain(|_| *it.next().unwrap_or(&true));
                }
            }
            filter(&mut self.start, &rows);
            filter(&mut self.dur32, &rows);
            filter(&mut self.end64, &rows);
            filter(&mut self.name, &rows);
            filter(&mut self.corr, &rows);
            filter(&mut self.aux32, &rows);
            filter(&mut self.aux64, &rows);
            filter(&mut self.flags, &rows);
        }
        removed
    }

    /// Sort every column by (start, end) and release spare capacity.
    pub fn sort_by_start(&mut self) {
        let n = self.len();
        // Ends are read only where starts tie.
        let sorted = (1..n).all(|i| {
            let (a, b) = (self.start[i - 1], self.start[i]);
            a < b || (a == b && self.end(i - 1) <= self.end(i))
        });
        if !sorted {
            let mut order: Vec<u32> = (0..n as u32).collect();
            order.sort_unstable_by_key(|&i| (self.start[i as usize], self.end(i as usize)));
            permute(&mut self.start, &order);
            permute(&mut self.dur32, &order);
            permute(&mut self.end64, &order);
            permute(&mut self.name, &order);
            permute(&mut self.corr, &order);
            permute(&mut self.aux32, &order);
            permute(&mut self.aux64, &order);
            permute(&mut self.flags, &order);
        }
        self.start.shrink_to_fit();
        self.dur32.shrink_to_fit();
        self.end64.shrink_to_fit();
        self.name.shrink_to_fit();
        self.corr.shrink_to_fit();
        self.aux32.shrink_to_fit();
        self.aux64.shrink_to_fit();
        self.flags.shrink_to_fit();
    }

    /// The columns as kept, for writing them out.
    pub(crate) fn columns(&self) -> ColumnsRef<'_> {
        Columns {
            start: &self.start,
            dur32: &self.dur32,
            end64: &self.end64,
            name: &self.name,
            corr: &self.corr,
            aux32: &self.aux32,
            aux64: &self.aux64,
            flags: &self.flags,
            flags_by_name: self.flags_by_name.iter().copied().unzip(),
        }
    }

    /// Events from columns [`Events::columns`] gave, or what is inconsistent about them
    /// (a column of another length, both or neither end columns, flags per name unsorted):
    /// every accessor may then index any row without a check failing.
    pub(crate) fn from_columns(c: ColumnsOwned) -> Result<Self, &'static str> {
        let n = c.start.len();
        let full_or_empty = |len: usize| len == n || len == 0;
        if c.name.len() != n {
            return Err("name column of another length");
        }
        if n > 0 && (c.dur32.len() == n) == (c.end64.len() == n) {
            return Err("ends kept both or neither way");
        }
        if !full_or_empty(c.dur32.len()) || !full_or_empty(c.end64.len()) || !full_or_empty(c.corr.len()) {
            return Err("end or correlation column of another length");
        }
        if !full_or_empty(c.aux32.len()) || !full_or_empty(c.aux64.len()) || !c.aux32.is_empty() && !c.aux64.is_empty()
        {
            return Err("aux column of another length");
        }
        if !full_or_empty(c.flags.len()) || !c.flags.is_empty() && !c.flags_by_name.0.is_empty() {
            return Err("flags column of another length");
        }
        let (names, flags) = c.flags_by_name;
        if names.len() != flags.len() || !names.is_sorted_by(|a, b| a < b) {
            return Err("flags per name unsorted");
        }
        // Mapped columns are read when they are verified, not before.
        if !c.end64.is_mapped() && !c.start.is_mapped() && ends_before_starts(&c.start, &c.end64) {
            return Err("an end before its start");
        }
        Ok(Self {
            start: c.start,
            dur32: c.dur32,
            end64: c.end64,
            name: c.name,
            corr: c.corr,
            aux32: c.aux32,
            aux64: c.aux64,
            flags: c.flags,
            flags_by_name: names.into_iter().zip(flags).collect(),
        })
    }

    /// Check the columns borrowed from a mapped cache entry against their checksums,
    /// and what [`Events::from_columns`] leaves to this for them (ends after starts).
    pub(crate) fn verify(&self) -> Result<(), &'static str> {
        for c in [&self.dur32, &self.name, &self.corr, &self.aux32, &self.flags] {
            c.verify()?;
        }
        for c in [&self.start, &self.end64] {
            c.verify()?;
        }
        self.aux64.verify()?;
        if ends_before_starts(&self.start, &self.end64) {
            return Err("an end before its start");
        }
        Ok(())
    }

    /// Copy the columns borrowed from a mapped cache entry into vectors of their own.
    pub(crate) fn own_columns(&mut self) {
        for c in [&mut self.dur32, &mut self.name, &mut self.corr, &mut self.aux32, &mut self.flags] {
            c.to_mut();
        }
        self.start.to_mut();
        self.end64.to_mut();
        self.aux64.to_mut();
    }

    /// True when some columns are borrowed from a mapped cache entry.
    pub(crate) fn is_mapped(&self) -> bool {
        [&self.dur32, &self.name, &self.corr, &self.aux32, &self.flags].iter().any(|c| c.is_mapped())
            || self.start.is_mapped()
            || self.end64.is_mapped()
            || self.aux64.is_mapped()
    }

    /// Heap bytes used by the columns (a mapped column counts the bytes it maps).
    pub fn heap_bytes(&self) -> usize {
        self.start.capacity() * 8
            + self.dur32.capacity() * 4
            + self.end64.capacity() * 8
            + self.name.capacity() * 4
            + self.corr.capacity() * 4
            + self.aux32.capacity() * 4
            + self.aux64.capacity() * 8
            + self.flags.capacity() * 4
            + self.flags_by_name.capacity() * 8
    }
}

fn ends_before_starts(start: &[Ns], end64: &[Ns]) -> bool {
    end64.iter().zip(start).any(|(e, s)| e < s)
}

fn permute<T: Plain>(v: &mut Col<T>, order: &[u32]) {
    if v.len() == order.len() {
        *v = order.iter().map(|&i| v[i as usize]).collect();
    }
}

/// Direction of a memory operation as users read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum MemClass {
    /// Host to device.
    H2D,
    /// Device to host.
    D2H,
    /// Device to device (same GPU).
    D2D,
    /// Peer to peer (between GPUs).
    P2P,
    /// Memset.
    Memset,
    /// Anything else (host-to-host, arrays, unified memory).
    Other,
}

impl MemClass {
    /// Short label used in lanes, tables and JSON.
    pub fn label(self) -> &'static str {
        match self {
            MemClass::H2D => "H2D",
            MemClass::D2H => "D2H",
            MemClass::D2D => "D2D",
            MemClass::P2P => "P2P",
            MemClass::Memset => "memset",
            MemClass::Other => "other",
        }
    }

    /// Classify an nsys `copyKind` (`ENUM_CUDA_MEMCPY_OPER`).
    pub fn from_copy_kind(kind: u8) -> Self {
        match kind {
            1 | 3 | 11 => MemClass::H2D,
            2 | 4 | 12 => MemClass::D2H,
            5..=8 | 13 => MemClass::D2D,
            10 => MemClass::P2P,
            _ => MemClass::Other,
        }
    }
}

/// Memory kinds in nsys numbering (`ENUM_CUDA_MEM_KIND`), not CUPTI's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum MemKind {
    /// Pageable host memory.
    Pageable,
    /// Pinned (page-locked) host memory.
    Pinned,
    /// Device memory.
    Device,
    /// CUDA array.
    Array,
    /// Managed (unified) memory.
    Managed,
    /// Static device memory.
    DeviceStatic,
    /// Static managed memory.
    ManagedStatic,
    /// Unknown or not recorded.
    Unknown,
}

impl MemKind {
    /// Decode the nsys enum value.
    pub fn from_raw(v: u8) -> Self {
        match v {
            0 => MemKind::Pageable,
            1 => MemKind::Pinned,
            2 => MemKind::Device,
            3 => MemKind::Array,
            4 => MemKind::Managed,
            5 => MemKind::DeviceStatic,
            6 => MemKind::ManagedStatic,
            _ => MemKind::Unknown,
        }
    }

    /// Lower-case label used in tables and JSON.
    pub fn label(self) -> &'static str {
        match self {
            MemKind::Pageable => "pageable",
            MemKind::Pinned => "pinned",
            MemKind::Device => "device",
            MemKind::Array => "array",
            MemKind::Managed => "managed",
            MemKind::DeviceStatic => "device-static",
            MemKind::ManagedStatic => "managed-static",
            MemKind::Unknown => "unknown",
        }
    }
}

/// Packing of memcpy/memset kinds into [`Events::flags`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemFlags {
    /// nsys copyKind (0 for memsets).
    pub copy_kind: u8,
    /// Source memory kind (memset: the memory kind set).
    pub src: MemKind,
    /// Destination memory kind (memset: same as `src`).
    pub dst: MemKind,
}

impl MemFlags {
    /// Pack into a flags word.
    pub fn pack(copy_kind: u8, src: u8, dst: u8) -> u32 {
        u32::from(copy_kind) | (u32::from(src) << 8) | (u32::from(dst) << 16)
    }

    /// Unpack a flags word.
    pub fn unpack(f: u32) -> Self {
        Self {
            copy_kind: (f & 0xff) as u8,
            src: MemKind::from_raw(((f >> 8) & 0xff) as u8),
            dst: MemKind::from_raw(((f >> 16) & 0xff) as u8),
        }
    }

    /// The host-side memory kind of a copy (pageable/pinned/managed), else the device side.
    /// Unified-memory copies (copy kinds 11-13) are `managed` whatever the sides say.
    pub fn host_kind(self) -> MemKind {
        if (11..=13).contains(&self.copy_kind) {
            return MemKind::Managed;
        }
        match MemClass::from_copy_kind(self.copy_kind) {
            MemClass::D2H => self.dst,
            _ => self.src,
        }
    }

    /// True when either side is pageable host memory.
    pub fn is_pageable(self) -> bool {
        self.src == MemKind::Pageable || self.dst == MemKind::Pageable
    }
}

/// What a CUDA API call does, decided once per distinct name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum ApiKind {
    /// Anything else.
    Other = 0,
    /// Kernel or graph launch.
    Launch = 1,
    /// Synchronous memcpy (`cudaMemcpy`, `cuMemcpyHtoD`, ...).
    MemcpySync = 2,
    /// Asynchronous memcpy API (`cudaMemcpyAsync`, ...).
    MemcpyAsync = 3,
    /// Memset API.
    Memset = 4,
    /// Explicit synchronization (device, stream, event, context).
    Sync = 5,
}

impl ApiKind {
    /// Flag bit set on driver-API calls.
    pub const DRIVER_BIT: u32 = 1 << 8;

    /// Classify a (suffix-stripped) CUDA API name.
    pub fn classify(name: &str) -> Self {
        let n = name.to_ascii_lowercase();
        if n.contains("synchronize") || n == "cuctxsynchronize" || n == "cudathreadsynchronize" {
            ApiKind::Sync
        } else if n.contains("memcpy") {
            if n.contains("async") { ApiKind::MemcpyAsync } else { ApiKind::MemcpySync }
        } else if n.contains("memset") {
            ApiKind::Memset
        } else if n.contains("launch") || n.starts_with("cugraphlaunch") {
            ApiKind::Launch
        } else {
            ApiKind::Other
        }
    }

    /// Decode from [`Events::flags`].
    pub fn from_flags(f: u32) -> Self {
        match f & 0xff {
            1 => ApiKind::Launch,
            2 => ApiKind::MemcpySync,
            3 => ApiKind::MemcpyAsync,
            4 => ApiKind::Memset,
            5 => ApiKind::Sync,
            _ => ApiKind::Other,
        }
    }
}

/// What a lane holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LaneKind {
    /// Kernels of one stream.
    Kernels {
        /// GPU device id.
        device: u32,
        /// CUDA stream id.
        stream: u32,
    },
    /// Memory operations of one class on one stream.
    Memory {
        /// GPU device id.
        device: u32,
        /// CUDA stream id.
        stream: u32,
        /// Direction.
        class: MemClass,
    },
    /// Whole CUDA-graph executions (when per-node kernels were not traced).
    Graphs {
        /// GPU device id.
        device: u32,
        /// CUDA stream id.
        stream: u32,
    },
    /// Ranges annotating a GPU's timeline (the PyTorch profiler's `gpu_user_annotation`):
    /// shown with the GPU, never counted as GPU work.
    GpuRanges {
        /// GPU device id.
        device: u32,
    },
    /// NVTX push/pop ranges of one thread at one nesting depth.
    Nvtx {
        /// Thread id.
        tid: u32,
        /// Nesting depth (0 = outermost).
        depth: u16,
    },
    /// NVTX start/end ranges of one thread, packed into non-overlapping rows.
    NvtxStartEnd {
        /// Thread id.
        tid: u32,
        /// Row index.
        row: u16,
    },
    /// NVTX marks (instants) of one thread.
    NvtxMarks {
        /// Thread id.
        tid: u32,
    },
    /// CUDA runtime and driver API calls of one thread.
    CudaApi {
        /// Thread id.
        tid: u32,
    },
    /// OS runtime calls of one thread.
    Osrt {
        /// Thread id.
        tid: u32,
    },
    /// Profiler overhead (`PROFILER_OVERHEAD`: buffer flushes, injection) on one thread.
    Overhead {
        /// Thread id.
        tid: u32,
    },
    /// On-CPU intervals of one thread (`SCHED_EVENTS` switch-in to switch-out):
    /// name `cpu N`, aux = CPU id.
    OnCpu {
        /// Thread id.
        tid: u32,
    },
    /// CPU samples of one thread as instants (`COMPOSITE_EVENTS`): name = leaf frame
    /// symbol, aux = its module's name id, flags = [`SampleFlags`].
    Samples {
        /// Thread id.
        tid: u32,
    },
}

/// Flag of an OS runtime call made while taking Python's GIL (its backtrace holds
/// `take_gil`, `PyEval_RestoreThread`...).
pub(crate) const OSRT_GIL: u32 = 1;

/// Flag of an OS runtime call made by a serializer writing a checkpoint (its backtrace
/// holds `PyTorchStreamWriter`, `torch.save`'s writer, pickle or safetensors).
pub(crate) const OSRT_SERIALIZER: u32 = 2;

/// Where a lane is shown: with a GPU, or with a thread of the lane's process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// With GPU `device`.
    Gpu(u32),
    /// With thread `tid` of the lane's process.
    Thread(u32),
}

/// The column of a lane, besides `name`, that holds string ids (0 = none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamedColumn {
    /// No other column names anything.
    None,
    /// `aux`: a kernel's demangled name, a CPU sample's module.
    Aux,
    /// `flags`: the NVTX domain of a range or mark.
    Flags,
}

/// The NVTX domain of a framework operator's range (Kineto `cpu_op`, `python_function`),
/// which is no user range: a gap's phase skips it.
pub(crate) const OPERATOR_DOMAIN: u32 = u32::MAX;

// Every question below is one `match` naming every kind, with no wildcard: a new kind
// must say where it is shown, whether it is GPU work and what its columns hold.
impl LaneKind {
    /// Where the lane is shown.
    pub fn place(self) -> Place {
        match self {
            LaneKind::Kernels { device, .. }
            | LaneKind::Memory { device, .. }
            | LaneKind::Graphs { device, .. }
            | LaneKind::GpuRanges { device } => Place::Gpu(device),
            LaneKind::Nvtx { tid, .. }
            | LaneKind::NvtxStartEnd { tid, .. }
            | LaneKind::NvtxMarks { tid }
            | LaneKind::CudaApi { tid }
            | LaneKind::Osrt { tid }
            | LaneKind::Overhead { tid }
            | LaneKind::OnCpu { tid }
            | LaneKind::Samples { tid } => Place::Thread(tid),
        }
    }

    /// True for GPU work: kernels, copies and memsets, graph executions. A GPU's
    /// annotations are shown with it but are no work (they never make it busy).
    pub fn is_gpu_work(self) -> bool {
        match self {
            LaneKind::Kernels { .. } | LaneKind::Memory { .. } | LaneKind::Graphs { .. } => true,
            LaneKind::GpuRanges { .. }
            | LaneKind::Nvtx { .. }
            | LaneKind::NvtxStartEnd { .. }
            | LaneKind::NvtxMarks { .. }
            | LaneKind::CudaApi { .. }
            | LaneKind::Osrt { .. }
            | LaneKind::Overhead { .. }
            | LaneKind::OnCpu { .. }
            | LaneKind::Samples { .. } => false,
        }
    }

    /// The GPU a lane is shown with: GPU work and the GPU's annotations.
    pub fn shown_with_gpu(self) -> Option<u32> {
        match self.place() {
            Place::Gpu(d) => Some(d),
            Place::Thread(_) => None,
        }
    }

    /// The GPU whose work the lane holds (None for annotations and CPU lanes).
    pub fn gpu_work_device(self) -> Option<u32> {
        self.shown_with_gpu().filter(|_| self.is_gpu_work())
    }

    /// Thread of a lane shown with a thread.
    pub fn tid(self) -> Option<u32> {
        match self.place() {
            Place::Thread(t) => Some(t),
            Place::Gpu(_) => None,
        }
    }

    /// The same kind on GPU `f(device)` when it is shown with a GPU (a merge renumbers
    /// every input's GPUs); other kinds as they are.
    #[must_use]
    pub fn with_device(self, f: impl FnOnce(u32) -> u32) -> Self {
        match self {
            LaneKind::Kernels { device, stream } => LaneKind::Kernels { device: f(device), stream },
            LaneKind::Memory { device, stream, class } => LaneKind::Memory { device: f(device), stream, class },
            LaneKind::Graphs { device, stream } => LaneKind::Graphs { device: f(device), stream },
            LaneKind::GpuRanges { device } => LaneKind::GpuRanges { device: f(device) },
            LaneKind::Nvtx { .. }
            | LaneKind::NvtxStartEnd { .. }
            | LaneKind::NvtxMarks { .. }
            | LaneKind::CudaApi { .. }
            | LaneKind::Osrt { .. }
            | LaneKind::Overhead { .. }
            | LaneKind::OnCpu { .. }
            | LaneKind::Samples { .. } => self,
        }
    }

    /// The column, besides `name`, whose values are string ids.
    pub fn named_column(self) -> NamedColumn {
        match self {
            LaneKind::Kernels { .. } | LaneKind::Samples { .. } => NamedColumn::Aux,
            LaneKind::Nvtx { .. } | LaneKind::NvtxStartEnd { .. } | LaneKind::NvtxMarks { .. } => NamedColumn::Flags,
            LaneKind::Memory { .. }
            | LaneKind::Graphs { .. }
            | LaneKind::GpuRanges { .. }
            | LaneKind::CudaApi { .. }
            | LaneKind::Osrt { .. }
            | LaneKind::Overhead { .. }
            | LaneKind::OnCpu { .. } => NamedColumn::None,
        }
    }

    /// True for lanes of host scheduling data (on-CPU intervals, CPU samples).
    pub fn is_host(self) -> bool {
        matches!(self, LaneKind::OnCpu { .. } | LaneKind::Samples { .. })
    }
}

/// The flags word of a CPU sample: CPU id in bits 0..24, nsys thread state
/// (`ENUM_SAMPLING_THREAD_STATE`, 0 = unknown) in bits 24..32.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleFlags {
    /// CPU the sample was taken on.
    pub cpu: u32,
    /// Thread state (1 = running; 0 when not recorded).
    pub state: u8,
}

impl SampleFlags {
    /// Pack into a flags word (CPU ids above 2^24 - 1 are saturated; states, 0-10 in
    /// nsys's enum, keep 7 bits: the top bit is [`SAMPLE_GIL`]).
    pub fn pack(cpu: u32, state: u8) -> u32 {
        cpu.min(0xFF_FFFF) | (u32::from(state & 0x7F) << 24)
    }

    /// Unpack a flags word.
    pub fn unpack(f: u32) -> Self {
        Self { cpu: f & 0xFF_FFFF, state: ((f >> 24) & 0x7F) as u8 }
    }
}

/// Flag of a CPU sample whose stack takes or drops Python's GIL (`take_gil`,
/// `drop_gil`, `PyEval_RestoreThread`...), beside its [`SampleFlags`].
pub const SAMPLE_GIL: u32 = 1 << 31;

/// One row of the timeline.
#[derive(Debug, Clone)]
pub struct Lane {
    /// What the lane holds.
    pub kind: LaneKind,
    /// Process the events belong to.
    pub pid: u32,
    /// The events, sorted by start.
    pub ev: Events,
    /// True when no two events overlap (ends are then sorted too).
    pub disjoint: bool,
}

impl Lane {
    /// Build a lane, sorting its events.
    pub fn new(kind: LaneKind, pid: u32, mut ev: Events) -> Self {
        ev.sort_by_start();
        ev.compact();
        let disjoint = (1..ev.len()).all(|i| ev.end(i - 1) <= ev.start[i]);
        Self { kind, pid, ev, disjoint }
    }

    /// Short title, e.g. `stream 7`, `H2D s7`, `NVTX 1`, `CUDA API`.
    pub fn title(&self) -> String {
        match self.kind {
            LaneKind::Kernels { stream, .. } => format!("kernels s{stream}"),
            LaneKind::Memory { stream, class, .. } => format!("{} s{stream}", class.label()),
            LaneKind::Graphs { stream, .. } => format!("graphs s{stream}"),
            LaneKind::GpuRanges { .. } => "annotations".to_string(),
            LaneKind::Nvtx { depth, .. } => format!("NVTX {depth}"),
            LaneKind::NvtxStartEnd { row, .. } => format!("NVTX s/e {row}"),
            LaneKind::NvtxMarks { .. } => "NVTX marks".to_string(),
            LaneKind::CudaApi { .. } => "CUDA API".to_string(),
            LaneKind::Osrt { .. } => "OS runtime".to_string(),
            LaneKind::Overhead { .. } => "profiler".to_string(),
            LaneKind::OnCpu { .. } => "on CPU".to_string(),
            LaneKind::Samples { .. } => "CPU samples".to_string(),
        }
    }
}

/// A GPU as described by the trace.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Gpu {
    /// Device id used by GPU events.
    pub device: u32,
    /// Marketing name, e.g. `NVIDIA H200`.
    pub name: String,
    /// Number of SMs (0 when unknown).
    pub sm_count: u32,
    /// Device memory in bytes (0 when unknown).
    pub memory_bytes: u64,
}

/// A process seen in the trace.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Process {
    /// Operating-system process id.
    pub pid: u32,
    /// Process name (may be empty).
    pub name: String,
}

/// A thread seen in the trace.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Thread {
    /// Owning process id.
    pub pid: u32,
    /// Operating-system thread id.
    pub tid: u32,
    /// Thread name (may be empty).
    pub name: String,
}

/// Facts about the export itself.
#[derive(Debug, Clone, Default)]
pub struct Meta {
    /// Path the trace was read from (or a label for the embedded demo).
    pub path: String,
    /// nsys product version, e.g. `2025.3.1.90`.
    pub nsys_version: String,
    /// Export schema version, e.g. `3.20.3`.
    pub schema_version: String,
    /// Earliest event start.
    pub start_ns: Ns,
    /// Latest event end.
    pub end_ns: Ns,
    /// Wall-clock start of the session (UTC epoch ns), 0 when unknown.
    pub utc_epoch_ns: i64,
    /// Tables read, with rows and load time.
    pub tables: Vec<TableStat>,
    /// Size of the trace file in bytes (0 for the embedded demo).
    pub file_bytes: u64,
    /// Events left out because their times lie far outside the rest (corrupt
    /// timestamps): how many, and the first one seen as `lane: start..end`.
    pub outliers: (u64, Option<String>),
    /// Events skipped because they could not be read (a Kineto event whose `ts` is no
    /// readable time: a string, NaN, out of range; or one over the reader's item limit).
    pub unreadable_events: u64,
    /// Host name of the profiled machine (`TARGET_INFO_SYSTEM_ENV` `Hostname`), when recorded.
    pub hostname: String,
    /// The job rank recorded in the profiled process's environment (`RANK`, else
    /// `OMPI_COMM_WORLD_RANK`, `PMI_RANK`, `SLURM_PROCID`), when recorded.
    pub env_rank: Option<u32>,
    /// `LOCAL_RANK` of the profiled process's environment, when recorded.
    pub env_local_rank: Option<u32>,
    /// Set on a trace merged from several exports when their clocks could not be
    /// aligned on their session starts: what was done instead.
    pub align_note: Option<String>,
}

/// How an input of a merged trace was placed on the common timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Alignment {
    /// Absolute session start (`TARGET_INFO_SESSION_START_TIME`, with the export's time base).
    SessionStart,
    /// The start of its first step (an NVTX range such as `step 0`): clocks could not be aligned.
    FirstStep,
    /// Its first event: clocks could not be aligned and it has no step range.
    FirstEvent,
}

impl Alignment {
    /// Label used in reports (`session-start`, `first-step`, `first-event`).
    pub fn label(self) -> &'static str {
        match self {
            Alignment::SessionStart => "session-start",
            Alignment::FirstStep => "first-step",
            Alignment::FirstEvent => "first-event",
        }
    }
}

/// One input of a trace merged from several exports (the ranks of one job, or processes
/// profiled apart). Its pids and devices were remapped into ranges of their own and its
/// times shifted by `offset_ns` onto the common timeline.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct Rank {
    /// Rank: from the environment (`rank_source`), else the position in the input order.
    pub rank: u32,
    /// Where `rank` comes from: `RANK` (or another job launcher's variable), `LOCAL_RANK`
    /// or `file order`.
    pub rank_source: String,
    /// Host name (empty when the export does not record it).
    pub host: String,
    /// Path of the export (or report) as given.
    pub path: String,
    /// nsys version that exported it.
    pub nsys_version: String,
    /// Absolute session start (UTC epoch ns), 0 when unknown.
    pub session_start_utc_ns: i64,
    /// Added to every time of the export to place it on the common timeline.
    pub offset_ns: Ns,
    /// How it was aligned.
    pub aligned_on: Option<Alignment>,
    /// First event on the common timeline.
    pub start_ns: Ns,
    /// Last event end on the common timeline.
    pub end_ns: Ns,
    /// Its processes, as pids of the merged trace.
    pub pids: Vec<u32>,
    /// Its GPUs as (device id of the merged trace, device id in the export).
    pub devices: Vec<(u32, u32)>,
}

impl Rank {
    /// Duration covered by its events.
    pub fn duration(&self) -> Ns {
        (self.end_ns - self.start_ns).max(0)
    }
}

impl Meta {
    /// The tool and version that wrote the trace: `nsys 2025.3.1`, or the producer's own
    /// name (`PyTorch Profiler (Kineto)`).
    pub fn producer(&self) -> String {
        producer(&self.nsys_version)
    }
}

/// `nsys VERSION` for an nsys version string, else the string itself (another producer,
/// such as `PyTorch Profiler (Kineto)`).
pub(crate) fn producer(version: &str) -> String {
    if version.is_empty() {
        "nsys ?".to_string()
    } else if version.starts_with(|c: char| c.is_ascii_digit()) {
        format!("nsys {version}")
    } else {
        version.to_string()
    }
}

/// How one table was loaded.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct TableStat {
    /// SQLite table name.
    pub name: String,
    /// Rows read.
    pub rows: usize,
    /// Wall time spent reading, in milliseconds.
    pub ms: f64,
}

/// CUDA synchronization records (host waits), one process.
#[derive(Debug, Clone, Default)]
pub struct SyncRecords {
    /// Process id.
    pub pid: u32,
    /// Events: name = sync type label, corr = API correlation id, aux = device << 32 | stream.
    pub ev: Events,
}

/// A whole trace: metadata, names, lanes.
#[derive(Debug, Clone, Default)]
pub struct Trace {
    /// Export facts.
    pub meta: Meta,
    /// Interned names.
    pub strings: Strings,
    /// GPUs, by device id.
    pub gpus: Vec<Gpu>,
    /// Processes that own events, by pid.
    pub processes: Vec<Process>,
    /// Threads that own events, by (pid, tid).
    pub threads: Vec<Thread>,
    /// Lanes in display order: GPUs first, then processes and their threads.
    pub lanes: Vec<Lane>,
    /// CUDA synchronization records per process.
    pub syncs: Vec<SyncRecords>,
    /// What the export says about the host: CPUs, samples, context switches.
    pub host: HostData,
    /// The inputs of a trace merged from several exports, by rank; empty for one export.
    pub ranks: Vec<Rank>,
    /// GPU counters (`GPU_METRICS`); empty when the capture sampled none.
    pub counters: counters::Counters,
}

/// Host data of an export: which CPU tables it holds and their sizes. Counts are 0 and
/// flags false when a table is absent.
//
// Parent pids: no table of the exports seen (2022.4 to 2025.3: `PROCESSES` has
// globalPid, pid, name only) records a process's parent, so process trees are not kept.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct HostData {
    /// CPU ids seen in context switches or samples, sorted.
    pub cpus: Vec<u32>,
    /// Logical CPUs of the machine (`TARGET_INFO_SYSTEM_ENV` `CpuCores`), when recorded.
    pub cpu_cores: Option<u32>,
    /// CPU samples (`COMPOSITE_EVENTS` rows) loaded.
    pub samples: usize,
    /// Context switches (`SCHED_EVENTS` rows) loaded.
    pub switches: usize,
    /// OS runtime calls (`OSRT_API` rows) loaded.
    pub osrt_calls: usize,
    /// Sampled threads with their sample counts and mean rates, by (pid, tid).
    pub sampled_threads: Vec<SampleRate>,
    /// Which host tables the export has.
    pub tables: HostTables,
    /// Some sample's leaf frame is Python code, or the export has a `PYTHON_*` table.
    pub has_python: bool,
    /// Samples of nsys's Python sampler (`--python-sampling`): its NVTX marks in the
    /// domain `Python Periodic Sampling`.
    pub python_samples: usize,
}

/// Host tables present in an export (possibly empty).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct HostTables {
    /// `OSRT_API` (OS runtime calls, `--trace=osrt`).
    pub osrt: bool,
    /// `SCHED_EVENTS` (context switches, `--cpuctxsw`).
    pub sched: bool,
    /// `COMPOSITE_EVENTS` (CPU samples, `--sample`).
    pub samples: bool,
}

impl HostData {
    /// Mean sampling rate over all sampled threads (samples per second of the time the
    /// rates were measured over), 0 without samples.
    pub fn sample_rate_hz(&self) -> f64 {
        let (n, secs) = self.sampled_threads.iter().fold((0.0, 0.0), |(n, s), r| (n + r.samples as f64, s + r.seconds));
        if secs > 0.0 { n / secs } else { 0.0 }
    }
}

/// CPU samples of one thread.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct SampleRate {
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
    /// Samples of the thread.
    pub samples: usize,
    /// Seconds the rate is measured over: the thread's time on CPU when context
    /// switches were recorded, else the span from its first to its last sample.
    pub seconds: f64,
    /// Samples per second of `seconds` (0 when it is 0).
    pub hz: f64,
}

impl Trace {
    /// Duration covered by events.
    pub fn duration(&self) -> Ns {
        (self.meta.end_ns - self.meta.start_ns).max(0)
    }

    /// Total number of events in all lanes.
    pub fn event_count(&self) -> usize {
        self.lanes.iter().map(|l| l.ev.len()).sum()
    }

    /// Device ids that have lanes shown with a GPU, sorted.
    pub fn devices(&self) -> Vec<u32> {
        let mut d: Vec<u32> = self.lanes.iter().filter_map(|l| l.kind.shown_with_gpu()).collect();
        d.sort_unstable();
        d.dedup();
        d
    }

    /// Name of a thread (empty when unknown).
    pub fn thread_name(&self, pid: u32, tid: u32) -> &str {
        self.threads.iter().find(|t| t.pid == pid && t.tid == tid).map_or("", |t| &t.name)
    }

    /// Name of a process (empty when unknown).
    pub fn process_name(&self, pid: u32) -> &str {
        self.processes.iter().find(|p| p.pid == pid).map_or("", |p| &p.name)
    }

    /// A thread as evidence and details name it: `python3 (tid 814)`; an unnamed main
    /// thread takes the process name; otherwise `tid 827`. Names are cut to
    /// 200 characters (`…`): every gap's evidence quotes them.
    pub fn thread_label(&self, pid: u32, tid: u32) -> String {
        match (self.thread_name(pid, tid), self.process_name(pid)) {
            ("", p) if tid == pid && !p.is_empty() => format!("{} (tid {tid})", cut_name(p)),
            ("", _) => format!("tid {tid}"),
            (t, _) => format!("{} (tid {tid})", cut_name(t)),
        }
    }

    /// Display name of a GPU, e.g. `GPU 0 NVIDIA H200`; in a trace of several exports
    /// `rank 1 · GPU 0 NVIDIA H200`, with the device id of its own export.
    pub fn gpu_label(&self, device: u32) -> String {
        let (prefix, local) = match self.rank_of_device(device) {
            Some(r) => {
                let local = r.devices.iter().find(|d| d.0 == device).map_or(device, |d| d.1);
                (format!("rank {} · ", r.rank), local)
            }
            None => (String::new(), device),
        };
        match self.gpus.iter().find(|g| g.device == device) {
            Some(g) if !g.name.is_empty() => format!("{prefix}GPU {local} {}", g.name),
            _ => format!("{prefix}GPU {local}"),
        }
    }

    /// The input (rank) a GPU of a merged trace belongs to.
    pub fn rank_of_device(&self, device: u32) -> Option<&Rank> {
        self.ranks.iter().find(|r| r.devices.iter().any(|d| d.0 == device))
    }

    /// The input (rank) a process of a merged trace belongs to.
    pub fn rank_of_pid(&self, pid: u32) -> Option<&Rank> {
        self.ranks.iter().find(|r| r.pids.contains(&pid))
    }

    /// Find the GPU operation launched by API call `corr` of process `pid`.
    pub fn gpu_op_for(&self, pid: u32, corr: u32) -> Option<EventRef> {
        self.find_corr(pid, corr, LaneKind::is_gpu_work)
    }

    /// Find the CUDA API call with correlation id `corr` in process `pid`.
    pub fn api_call_for(&self, pid: u32, corr: u32) -> Option<EventRef> {
        self.find_corr(pid, corr, |k| matches!(k, LaneKind::CudaApi { .. }))
    }

    // A linear scan of the correlation columns: it runs on a key press, and keeps the
    // model free of a per-event index (memory budget of the performance issue).
    fn find_corr(&self, pid: u32, corr: u32, want: impl Fn(LaneKind) -> bool) -> Option<EventRef> {
        if corr == 0 {
            return None;
        }
        self.lanes.iter().enumerate().filter(|(_, l)| l.pid == pid && want(l.kind)).find_map(|(li, l)| {
            l.ev.corr.iter().position(|&c| c == corr).map(|i| EventRef { lane: li as u32, idx: i as u32 })
        })
    }

    /// Approximate heap bytes used by the model.
    pub fn heap_bytes(&self) -> usize {
        self.lanes.iter().map(|l| l.ev.heap_bytes()).sum::<usize>()
            + self.syncs.iter().map(|s| s.ev.heap_bytes()).sum::<usize>()
            + self.strings.heap_bytes()
    }

    /// Check every column borrowed from a mapped cache entry (reads all of them): the
    /// numbers of a trace read from the cache are trusted only after this.
    pub fn verify_columns(&self) -> Result<(), String> {
        let lanes = self.lanes.iter().map(|l| &l.ev).enumerate();
        let syncs = self.syncs.iter().map(|s| &s.ev).enumerate();
        for (what, (i, ev)) in lanes.map(|l| ("lane", l)).chain(syncs.map(|s| ("sync records", s))) {
            ev.verify().map_err(|why| format!("{what} {i}: {why}"))?;
        }
        Ok(())
    }

    /// Copy every column borrowed from a mapped cache entry into a vector of its own
    /// (the analysis reads owned columns faster: docs/performance.md).
    pub fn own_columns(&mut self) {
        self.lanes.iter_mut().for_each(|l| l.ev.own_columns());
        self.syncs.iter_mut().for_each(|s| s.ev.own_columns());
    }

    /// True when some columns are borrowed from a mapped cache entry, not yet copied.
    pub fn is_mapped(&self) -> bool {
        self.lanes.iter().any(|l| l.ev.is_mapped()) || self.syncs.iter().any(|s| s.ev.is_mapped())
    }
}

/// A reference to one event: lane index and row within the lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EventRef {
    /// Index into [`Trace::lanes`].
    pub lane: u32,
    /// Row within the lane.
    pub idx: u32,
}

/// Decode an nsys globalTid/globalPid into (pid, tid).
pub fn decode_global_tid(g: i64) -> (u32, u32) {
    let g = g.cast_unsigned();
    (((g >> 24) & 0xFF_FFFF) as u32, (g & 0xFF_FFFF) as u32)
}

// A name cut to 200 characters with `…`, as `text::name` cuts (the model sits below
// `text`, so it does not call it).
fn cut_name(s: &str) -> std::borrow::Cow<'_, str> {
    match s.char_indices().nth(199) {
        Some((i, _)) if s[i..].chars().nth(1).is_some() => format!("{}…", &s[..i]).into(),
        _ => s.into(),
    }
}

/// Strip the `_vNNNN` version suffix nsys keeps on API names (`cudaLaunchKernel_v7000`).
pub fn strip_api_version(name: &str) -> &str {
    if let Some(pos) = name.rfind("_v") {
        let tail = &name[pos + 2..];
        if !tail.is_empty() && tail.bytes().all(|b| b.is_ascii_digit()) {
            return &name[..pos];
        }
    }
    name
}

// ----- range names -----

/// Group a range name: every run of ASCII digits becomes `N` (`step 12` -> `step N`,
/// `layer3.conv1` -> `layerN.convN`). Names without digits are returned as they are.
pub(crate) fn group_name(name: &str) -> Cow<'_, str> {
    if !name.bytes().any(|b| b.is_ascii_digit()) {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len());
    let mut in_digits = false;
    for c in name.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('N');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    Cow::Owned(out)
}

/// Rank of a step-like name: 0 for step/iteration names, 1 batch, 2 epoch; None for
/// names without a number or a step word.
pub(crate) fn step_rank(grouped: &str) -> Option<u8> {
    let n = grouped.to_ascii_lowercase();
    // A number in the name (grouped to a lone `N`) marks one instance per step.
    let b = grouped.as_bytes();
    let numbered = (0..b.len()).any(|i| {
        b[i] == b'N'
            && b.get(i + 1).is_none_or(|c| !c.is_ascii_alphabetic())
            && (i == 0 || !b[i - 1].is_ascii_uppercase())
    });
    if !numbered {
        return None;
    }
    let has = |w: &str| n.contains(w);
    if has("profilerstep") || has("step") || has("iter") {
        Some(0)
    } else if has("batch") {
        Some(1)
    } else if has("epoch") {
        Some(2)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn digits_become_n() {
        assert_eq!(group_name("step 7"), "step N");
        assert_eq!(group_name("step 123"), "step N");
        assert_eq!(group_name("layer3.conv12"), "layerN.convN");
        assert_eq!(group_name("forward"), "forward");
        assert_eq!(group_name("42"), "N");
        assert_eq!(group_name(""), "");
        assert_eq!(group_name("é1ü"), "éNü");
    }

    #[test]
    fn step_like_names_need_a_number_and_a_step_word() {
        assert_eq!(step_rank("step N"), Some(0));
        assert_eq!(step_rank("ProfilerStep#N"), Some(0));
        assert_eq!(step_rank("iteration N"), Some(0));
        assert_eq!(step_rank("batch N"), Some(1));
        assert_eq!(step_rank("epoch N"), Some(2));
        assert_eq!(step_rank("optimizer step"), None);
        assert_eq!(step_rank("aten::to, seq = N"), None);
        assert_eq!(step_rank("layerN.convN"), None);
        assert_eq!(step_rank("Newton step"), None);
        assert_eq!(step_rank("NCCL step"), None);
    }

    proptest! {
        #[test]
        fn grouping_is_idempotent_and_digit_free(name in "[a-z 0-9._]{0,20}") {
            let g = group_name(&name).into_owned();
            prop_assert!(!g.bytes().any(|b| b.is_ascii_digit()));
            prop_assert_eq!(group_name(&g).into_owned(), g.clone());
            // Names that differ only in their numbers group together.
            let other: String = name.chars().map(|c| if c.is_ascii_digit() { '9' } else { c }).collect();
            prop_assert_eq!(group_name(&other).into_owned(), g);
        }
    }

    // One kind of each variant.
    fn every_kind() -> Vec<LaneKind> {
        let (device, stream, tid) = (3, 7, 11);
        vec![
            LaneKind::Kernels { device, stream },
            LaneKind::Memory { device, stream, class: MemClass::H2D },
            LaneKind::Graphs { device, stream },
            LaneKind::GpuRanges { device },
            LaneKind::Nvtx { tid, depth: 1 },
            LaneKind::NvtxStartEnd { tid, row: 1 },
            LaneKind::NvtxMarks { tid },
            LaneKind::CudaApi { tid },
            LaneKind::Osrt { tid },
            LaneKind::Overhead { tid },
            LaneKind::OnCpu { tid },
            LaneKind::Samples { tid },
        ]
    }

    #[test]
    fn a_new_device_moves_every_lane_shown_with_the_gpu() {
        for k in every_kind() {
            let moved = k.with_device(|d| d + 256);
            assert_eq!(moved.shown_with_gpu(), k.shown_with_gpu().map(|d| d + 256), "{k:?}");
            assert_eq!(
                (moved.tid(), moved.is_gpu_work(), moved.named_column()),
                (k.tid(), k.is_gpu_work(), k.named_column())
            );
            // Work is shown with its GPU; annotations are shown there without being work.
            assert_eq!(k.gpu_work_device().is_some(), k.is_gpu_work(), "{k:?}");
            assert!(!k.is_gpu_work() || k.shown_with_gpu().is_some(), "{k:?}");
            assert_ne!(k.shown_with_gpu().is_some(), k.tid().is_some(), "{k:?}");
        }
        assert_eq!(LaneKind::GpuRanges { device: 3 }.place(), Place::Gpu(3));
        assert!(!LaneKind::GpuRanges { device: 3 }.is_gpu_work());
    }

    #[test]
    fn global_tid_layout_matches_nsys_docs() {
        // Values from the nsys documentation examples (see reference notes §2.1).
        assert_eq!(decode_global_tid(72_057_700_439_031_808).0, 6342);
        assert_eq!(decode_global_tid(281_560_221_750_233), (5081, 5081));
        assert_eq!(decode_global_tid(-1), (0xFF_FFFF, 0xFF_FFFF));
    }

    #[test]
    fn api_version_suffix_is_stripped() {
        assert_eq!(strip_api_version("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
        assert_eq!(strip_api_version("cuLaunchKernel"), "cuLaunchKernel");
        assert_eq!(strip_api_version("cuMemAlloc_v2"), "cuMemAlloc");
        assert_eq!(strip_api_version("foo_vx"), "foo_vx");
    }

    #[test]
    fn api_kinds() {
        assert_eq!(ApiKind::classify("cudaMemcpyAsync"), ApiKind::MemcpyAsync);
        assert_eq!(ApiKind::classify("cudaMemcpy"), ApiKind::MemcpySync);
        assert_eq!(ApiKind::classify("cudaStreamSynchronize"), ApiKind::Sync);
        assert_eq!(ApiKind::classify("cudaLaunchKernel"), ApiKind::Launch);
        assert_eq!(ApiKind::classify("cudaMalloc"), ApiKind::Other);
    }

    #[test]
    fn events_sort_keeps_columns_together() {
        let mut e = Events::default();
        e.push(30, 40, 3, Some(3), None, None);
        e.push(10, 20, 1, Some(1), None, None);
        e.push(20, 25, 2, Some(2), None, None);
        e.sort_by_start();
        assert_eq!(e.start, vec![10, 20, 30]);
        assert_eq!(e.name, vec![1, 2, 3]);
        assert_eq!(e.corr, vec![1, 2, 3]);
        assert!(!e.has_aux());
        assert_eq!(e.aux(1), 0);
    }

    #[test]
    fn aux_widens_on_the_first_value_over_u32() {
        let mut e = Events::default();
        e.push(0, 1, 0, None, Some(7), None);
        e.push(1, 2, 0, None, Some(u64::from(u32::MAX)), None);
        assert_eq!(e.heap_bytes() % 8, 0);
        assert!(e.aux64.is_empty(), "narrow while every value fits");
        e.push(2, 3, 0, None, Some(1 << 40), None);
        assert!(e.aux32.is_empty() && e.aux64.len() == 3, "widened whole");
        assert_eq!((e.aux(0), e.aux(1), e.aux(2)), (7, u64::from(u32::MAX), 1 << 40));
    }

    #[test]
    fn ends_are_durations_until_one_does_not_fit() {
        let mut e = Events::default();
        e.push(-5, 10, 0, None, None, None);
        e.push(0, i64::from(u32::MAX) - 1, 0, None, None, None);
        assert!(e.narrow_ends());
        e.sort_by_start(); // releases spare capacity
        assert_eq!(e.heap_bytes(), 2 * 8 + 2 * 4 + 2 * 4, "start, duration, name");
        e.push(1, 5_000_000_000, 0, None, None, None); // 5 s: does not fit
        assert!(!e.narrow_ends());
        assert_eq!(e.ends().collect::<Vec<_>>(), vec![10, i64::from(u32::MAX) - 1, 5_000_000_000]);
        assert_eq!(e.dur(2), 4_999_999_999);
        // An open end (i64::MAX) from a negative start does not overflow.
        let mut o = Events::default();
        o.push(-3, i64::MAX, 0, None, None, None);
        assert_eq!(o.end(0), i64::MAX);
        // Closing it narrows the lane again.
        o.map_ends(|x| if x == i64::MAX { 7 } else { x });
        assert!(o.narrow_ends());
        assert_eq!((o.end(0), o.dur(0)), (7, 10));
        o.shift(100);
        assert_eq!((o.start[0], o.end(0)), (97, 107));
        assert_eq!(o.end_partition_point(|x| x <= 107), 1);
    }

    #[test]
    fn map_aux_widens_when_a_result_overflows() {
        let mut e = Events::default();
        for i in 0..4 {
            e.push(i, i + 1, 0, None, Some(i as u64), None);
        }
        e.map_aux(|a| if a == 2 { 1 << 33 } else { a + 1 });
        assert_eq!(e.aux_values().collect::<Vec<_>>(), vec![1, 2, 1 << 33, 4]);
    }

    #[test]
    fn flags_by_name_only_when_the_name_decides() {
        let mut e = Events::default();
        for i in 0..2048 {
            e.push(i, i + 1, (i % 3) as StrId, None, None, Some((i % 3) as u32 * 10));
        }
        let before: Vec<u32> = (0..e.len()).map(|i| e.flags(i)).collect();
        e.compact();
        assert!(e.flags.is_empty() && e.flags_by_name.len() == 3);
        assert_eq!((0..e.len()).map(|i| e.flags(i)).collect::<Vec<_>>(), before);
        // One event whose flags differ from its name's: kept per event.
        let mut e = Events::default();
        for i in 0..2048 {
            e.push(i, i + 1, 1, None, None, Some(u32::from(i == 5)));
        }
        e.compact();
        assert_eq!(e.flags.len(), 2048);
        assert_eq!(e.flags(5), 1);
    }

    proptest::proptest! {
        // Whatever the values, the narrow/wide aux column and flags kept per name give
        // back exactly what was pushed, through sorting, filtering and appending.
        #[test]
        fn columns_roundtrip(
            rows in proptest::collection::vec((0i64..1000, 0i64..50, 0u32..6, proptest::option::of(0u64..(1 << 34)), 0u32..3), 0..3000),
            cut in 0i64..1000,
            long in proptest::option::of(0usize..3000),
        ) {
            let mut e = Events::default();
            let mut want: Vec<(Ns, Ns, StrId, u64, u32)> = Vec::new();
            // aux is pushed for every row or none (a lane uses a column or not).
            let with_aux = rows.first().is_some_and(|r| r.3.is_some());
            for (k, &(s, d, n, a, f)) in rows.iter().enumerate() {
                // At most one event too long for a u32 duration: the lane is kept wide.
                let d = if long == Some(k) { d + (1 << 33) } else { d };
                let a = if with_aux { a.unwrap_or(0) } else { 0 };
                let f = n * 7 + f.min(u32::from(n == 5) * 2); // name decides, except for name 5
                e.push(s, s + d, n, None, with_aux.then_some(a), Some(f));
                want.push((s, s + d, n, a, f));
            }
            let half = e.len() / 2;
            let mut tail = Events::default();
            for i in half..e.len() {
                tail.push(e.start[i], e.end(i), e.name[i], None, with_aux.then_some(e.aux(i)), Some(e.flags(i)));
            }
            let mut head = Events::default();
            for i in 0..half {
                head.push(e.start[i], e.end(i), e.name[i], None, with_aux.then_some(e.aux(i)), Some(e.flags(i)));
            }
            head.sort_by_start();
            head.compact();
            head.append_from(tail);
            head.retain_times(|s, _| s != cut);
            head.sort_by_start();
            head.compact();
            want.retain(|r| r.0 != cut);
            want.sort_by_key(|r| (r.0, r.1));
            let got: Vec<(Ns, Ns, StrId, u64, u32)> =
                (0..head.len()).map(|i| (head.start[i], head.end(i), head.name[i], head.aux(i), head.flags(i))).collect();
            // Rows equal in (start, end) may come in either order: compare as multisets.
            let mut g = got.clone();
            let mut w = want.clone();
            g.sort_unstable();
            w.sort_unstable();
            proptest::prop_assert_eq!(g, w);
            proptest::prop_assert_eq!(got.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>(), want.iter().map(|r| (r.0, r.1)).collect::<Vec<_>>());
        }
    }

    #[test]
    fn interning_is_stable() {
        let mut s = Strings::new();
        let a = s.intern("forward");
        assert_eq!(s.intern("forward"), a);
        assert_eq!(s.get(a), "forward");
        assert_eq!(s.get(0), "");
    }
}
