//! Summary pyramid of a large lane: per power-of-two time bucket, its busy time and
//! the longest event touching it, at every level from a finest bucket of about
//! [`EVENTS_PER_FINEST`] events up to one bucket for the whole lane.
//!
//! A cell whose edges are multiples of the finest bucket width is a union of at most
//! two buckets per level (as in a segment tree), so it costs O(levels) reads of small
//! arrays that sit near each other for neighbouring cells, instead of searches into
//! the lane's columns that miss the cache at every cell. The result is the same cell
//! as the render index's row path computes: the busy time is a sum of exact bucket
//! busy times, and the longest event touching a union of buckets is the longest of
//! each bucket's (the earliest row on ties). The viewport rounds its cell edges to
//! such multiples when cells are wide (`index::snap_edge`).

use std::io::{self, Write};

use anyhow::{Result, bail};

use crate::model::{Events, Ns};
use crate::reader::cache::{Dec, Enc, Field};

/// Row marker for "no event" (the render index's `CellInfo::NONE`).
pub(crate) const NONE: u32 = u32::MAX;

/// Average events per finest bucket: memory is about 2 x 16 bytes per this many events.
pub(crate) const EVENTS_PER_FINEST: usize = 128;

/// Lanes with fewer events get no pyramid: their columns stay in cache.
pub(crate) const MIN_EVENTS: usize = 16 * EVENTS_PER_FINEST;

/// One bucket: its busy ns, the longest event touching it (`NONE`: none)
/// and that event's duration (saturated to `u32::MAX`), kept here so that comparing
/// two buckets' events does not read the lane's columns.
#[derive(Debug, Clone, Copy)]
struct Node {
    busy: u64,
    dom: u32,
    dur: u32,
}

impl Node {
    const EMPTY: Self = Self { busy: 0, dom: NONE, dur: 0 };

    fn new(ev: &Events, busy: u64, dom: u32) -> Self {
        let dur = if dom == NONE { 0 } else { u32::try_from(ev.dur(dom as usize)).unwrap_or(u32::MAX) };
        Self { busy, dom, dur }
    }

    // The union of two buckets: busy time adds up, the longer event wins (the earlier
    // row on ties; saturated durations are compared in full).
    fn join(self, other: Self, ev: &Events) -> Self {
        let busy = self.busy + other.busy;
        let (a, b) = (self, other);
        let b_wins = if a.dom == NONE {
            true
        } else if b.dom == NONE {
            false
        } else if a.dur == u32::MAX && b.dur == u32::MAX {
            let (da, db) = (ev.dur(a.dom as usize), ev.dur(b.dom as usize));
            db > da || (db == da && b.dom < a.dom)
        } else {
            b.dur > a.dur || (b.dur == a.dur && b.dom < a.dom)
        };
        let w = if b_wins { b } else { a };
        Self { busy, ..w }
    }
}

/// One level: the buckets `[i << shift, (i + 1) << shift)` for `i` in `base..base + len`.
#[derive(Debug, Clone, Default)]
struct Level {
    base: i64,
    nodes: Vec<Node>,
}

impl Level {
    fn len(&self) -> usize {
        self.nodes.len()
    }

    // Absolute bucket `i` (empty outside the level).
    fn get(&self, i: i64) -> Node {
        usize::try_from(i - self.base).ok().and_then(|k| self.nodes.get(k).copied()).unwrap_or(Node::EMPTY)
    }
}

/// The pyramid of one lane.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pyramid {
    /// log2 of the finest bucket width in ns.
    shift: u32,
    /// `levels[j]`: buckets of `2^(shift + j)` ns.
    levels: Vec<Level>,
}

impl Pyramid {
    /// The pyramid of a lane (events sorted by start) whose finest level is computed
    /// by `cells`: given ascending edges, each cell's busy ns and longest touching
    /// event. None for lanes shorter than [`MIN_EVENTS`].
    pub(crate) fn build(ev: &Events, cells: impl FnOnce(&[Ns]) -> (Vec<u64>, Vec<u32>)) -> Option<Self> {
        Self::build_with(ev, EVENTS_PER_FINEST, MIN_EVENTS, cells)
    }

    /// The same with about `per_bucket` events per finest bucket, for lanes of at least
    /// `min_events` (tests build pyramids of small lanes).
    pub(crate) fn build_with(
        ev: &Events,
        per_bucket: usize,
        min_events: usize,
        cells: impl FnOnce(&[Ns]) -> (Vec<u64>, Vec<u32>),
    ) -> Option<Self> {
        let n = ev.len();
        if n == 0 || n < min_events {
            return None;
        }
        let first = ev.start[0];
        // The last instant any event covers (an instant covers its start).
        let last = (0..n).map(|i| ev.end(i).saturating_sub(1).max(ev.start[i])).max()?;
        // At least two buckets: one bucket cannot hold a lane on both sides of zero.
        let want = (n / per_bucket.max(1)).max(2) as u64;
        let mut shift = 0;
        while shift < 62 && (last >> shift).abs_diff(first >> shift) + 1 > want {
            shift += 1;
        }
        let (b0, b1) = (first >> shift, last >> shift);
        let edge = |i: i64| (i128::from(i) << shift).min(i128::from(Ns::MAX)) as Ns;
        let edges: Vec<Ns> = (b0..=b1).map(edge).chain([edge(b1.saturating_add(1))]).collect();
        let (busy, dom) = cells(&edges);
        let nodes = busy.into_iter().zip(dom).map(|(b, d)| Node::new(ev, b, d)).collect();
        let mut levels = vec![Level { base: b0, nodes }];
        // Until at most two buckets are left (buckets either side of zero never merge).
        while levels[levels.len() - 1].len() > 2 {
            let below = &levels[levels.len() - 1];
            let (base, top) = (below.base >> 1, (below.base + below.len() as i64 - 1) >> 1);
            let nodes = (base..=top).map(|p| below.get(2 * p).join(below.get(2 * p + 1), ev)).collect();
            levels.push(Level { base, nodes });
        }
        Some(Self { shift, levels })
    }

    /// log2 of the finest bucket width: cells whose edges are multiples of it are read
    /// from the pyramid.
    pub(crate) fn shift(&self) -> u32 {
        self.shift
    }

    /// Whether `t` is a multiple of the finest bucket width.
    pub(crate) fn aligned(&self, t: Ns) -> bool {
        t & ((1 << self.shift) - 1) == 0
    }

    /// Busy ns and longest touching event of the cell `[a, b)` (both [`Pyramid::aligned`]).
    pub(crate) fn cell(&self, ev: &Events, a: Ns, b: Ns) -> (u64, u32) {
        let l0 = &self.levels[0];
        let (mut lo, mut hi) = ((a >> self.shift).max(l0.base), (b >> self.shift).min(l0.base + l0.len() as i64));
        let mut cell = Node::EMPTY;
        let mut take = |level: &Level, i: i64| cell = cell.join(level.get(i), ev);
        let top = self.levels.len() - 1;
        for (j, level) in self.levels.iter().enumerate() {
            if lo >= hi {
                break;
            }
            if j == top {
                (lo..hi).for_each(|i| take(level, i));
                break;
            }
            if lo & 1 == 1 {
                take(level, lo);
                lo += 1;
            }
            if hi & 1 == 1 {
                hi -= 1;
                take(level, hi);
            }
            lo >>= 1;
            hi >>= 1;
        }
        (cell.busy, cell.dom)
    }

    /// Heap bytes used.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.levels.iter().map(|l| l.nodes.capacity() * std::mem::size_of::<Node>()).sum()
    }
}

// A level as its base, then its nodes' busy time, event and duration as three columns.
impl Field for Level {
    fn put<W: Write>(&self, w: &mut Enc<W>) -> io::Result<()> {
        self.base.put(w)?;
        w.col(&self.nodes.iter().map(|n| n.busy).collect::<Vec<u64>>())?;
        w.col(&self.nodes.iter().map(|n| n.dom).collect::<Vec<u32>>())?;
        w.col(&self.nodes.iter().map(|n| n.dur).collect::<Vec<u32>>())
    }
    fn take(r: &mut Dec<'_>) -> Result<Self> {
        let base = i64::take(r)?;
        let (busy, dom, dur): (Vec<u64>, Vec<u32>, Vec<u32>) = (r.col()?, r.col()?, r.col()?);
        if busy.len() != dom.len() || busy.len() != dur.len() {
            bail!("a pyramid level of columns of different lengths");
        }
        let nodes = busy.into_iter().zip(dom).zip(dur).map(|((busy, dom), dur)| Node { busy, dom, dur }).collect();
        Ok(Self { base, nodes })
    }
}

impl Field for Pyramid {
    fn put<W: Write>(&self, w: &mut Enc<W>) -> io::Result<()> {
        self.shift.put(w)?;
        self.levels.put(w)
    }
    fn take(r: &mut Dec<'_>) -> Result<Self> {
        Ok(Self { shift: u32::take(r)?, levels: Field::take(r)? })
    }
}

impl Pyramid {
    /// Whether a pyramid read back from the cache can serve the lane `ev`: a shift the
    /// builder could give, a finest level, and events that are rows of the lane.
    pub(crate) fn check(&self, ev: &Events) -> Result<()> {
        if self.shift > 62 || self.levels.is_empty() {
            bail!("a pyramid of shift {} and {} levels", self.shift, self.levels.len());
        }
        let n = ev.len();
        let rows_ok = self.levels.iter().flat_map(|l| &l.nodes).all(|x| x.dom == NONE || (x.dom as usize) < n);
        if !rows_ok {
            bail!("a pyramid naming an event that is not in its lane");
        }
        Ok(())
    }
}

/// Busy ns and longest touching event of each cell `[edges[k], edges[k + 1])` of a lane
/// whose events do not overlap (sorted by start, `edges` ascending over all of them):
/// one pass over the events, O(events + cells).
pub(crate) fn disjoint_cells(ev: &Events, edges: &[Ns]) -> (Vec<u64>, Vec<u32>) {
    let cells = edges.len().saturating_sub(1);
    let (mut busy, mut dom) = (vec![0u64; cells], vec![NONE; cells]);
    let mut k = 0;
    for j in 0..ev.len() {
        let (s, e) = (ev.start[j], ev.end(j));
        while k < cells && edges[k + 1] <= s {
            k += 1;
        }
        let mut c = k;
        // An instant touches the cell it is in; a longer event every cell it overlaps.
        while c < cells && (edges[c] < e || (c == k && s == e && edges[c] <= s)) {
            busy[c] += (e.min(edges[c + 1]) - s.max(edges[c])).max(0) as u64;
            if dom[c] == NONE || ev.dur(j) > ev.dur(dom[c] as usize) {
                dom[c] = j as u32;
            }
            c += 1;
        }
    }
    (busy, dom)
}
