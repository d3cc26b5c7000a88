//! A column of fixed-size values: a vector of its own, or a view into a mapped cache
//! entry (the reader's cache maps entries and lets columns borrow from the mapping, so
//! pages not yet read are not resident). Both read as a `&[T]`; the first change turns a
//! mapped column into an owned copy.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout};

/// A value a column may hold: any bit pattern is a value, so bytes read as values.
pub trait Plain: Copy + FromBytes + IntoBytes + Immutable + KnownLayout + 'static {}

impl<T: Copy + FromBytes + IntoBytes + Immutable + KnownLayout + 'static> Plain for T {}

/// A column: owned, or borrowed from a mapped file.
#[derive(Clone)]
pub struct Col<T: Plain>(Repr<T>);

#[derive(Clone)]
enum Repr<T> {
    Owned(Vec<T>),
    Mapped(Mapped),
}

// `len` values at byte `at` of `map`, whose CRC-32 should be `crc` (checked by
// `Col::verify`, not when mapped: checking reads every page).
#[derive(Clone)]
struct Mapped {
    map: Arc<memmap2::Mmap>,
    at: usize,
    bytes: usize,
    crc: u32,
}

impl Mapped {
    #[inline]
    fn slice<T: Plain>(&self) -> &[T] {
        // `Col::mapped` checked range and alignment, and a mapping does not move: the
        // view cannot fail (an empty one would fail every index, never give a number).
        let b = self.map.get(self.at..self.at + self.bytes).unwrap_or_default();
        <[T]>::ref_from_bytes(b).unwrap_or(&[])
    }
}

impl<T: Plain> Col<T> {
    /// A column of the `len` values at byte `at` of `map`, whose bytes should have the
    /// CRC-32 `crc`; None when they are out of the mapping or misaligned for `T`.
    pub(crate) fn mapped(map: Arc<memmap2::Mmap>, at: usize, len: usize, crc: u32) -> Option<Self> {
        let bytes = len.checked_mul(size_of::<T>())?;
        let b = map.get(at..at.checked_add(bytes)?)?;
        <[T]>::ref_from_bytes(b).ok()?;
        Some(Self(Repr::Mapped(Mapped { map, at, bytes, crc })))
    }

    /// The values.
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        match &self.0 {
            Repr::Owned(v) => v,
            Repr::Mapped(m) => m.slice(),
        }
    }

    /// The values as a vector of their own (a mapped column is copied first).
    pub fn to_mut(&mut self) -> &mut Vec<T> {
        if let Repr::Mapped(_) = self.0 {
            self.0 = Repr::Owned(self.as_slice().to_vec());
        }
        match &mut self.0 {
            Repr::Owned(v) => v,
            Repr::Mapped(_) => unreachable!("copied just above"),
        }
    }

    /// True when the values are borrowed from a mapped file.
    pub fn is_mapped(&self) -> bool {
        matches!(self.0, Repr::Mapped(_))
    }

    /// Check a mapped column's bytes against the CRC-32 its entry gave (reads every
    /// page of it); an owned column is always right.
    pub fn verify(&self) -> Result<(), &'static str> {
        match &self.0 {
            Repr::Mapped(m) if crc32fast::hash(&m.map[m.at..m.at + m.bytes]) != m.crc => Err("checksum mismatch"),
            _ => Ok(()),
        }
    }

    /// Append a value.
    pub fn push(&mut self, v: T) {
        self.to_mut().push(v);
    }

    /// Move every value of `other` to the end of this one.
    pub fn append(&mut self, other: &mut Self) {
        if self.is_empty() {
            *self = std::mem::take(other);
        } else {
            self.to_mut().extend_from_slice(other);
            *other = Self::default();
        }
    }

    /// Keep the values `keep` accepts.
    pub fn retain(&mut self, keep: impl FnMut(&T) -> bool) {
        self.to_mut().retain(keep);
    }

    /// Release spare capacity (nothing to release in a mapped column).
    pub fn shrink_to_fit(&mut self) {
        if let Repr::Owned(v) = &mut self.0 {
            v.shrink_to_fit();
        }
    }

    /// Values the column holds room for: its capacity when owned, its length when mapped
    /// (the bytes it holds, resident or not).
    pub fn capacity(&self) -> usize {
        match &self.0 {
            Repr::Owned(v) => v.capacity(),
            Repr::Mapped(_) => self.len(),
        }
    }
}

impl<T: Plain> Default for Col<T> {
    fn default() -> Self {
        Self(Repr::Owned(Vec::new()))
    }
}

impl<T: Plain> Deref for Col<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

impl<T: Plain> DerefMut for Col<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.to_mut()
    }
}

impl<T: Plain> From<Vec<T>> for Col<T> {
    fn from(v: Vec<T>) -> Self {
        Self(Repr::Owned(v))
    }
}

impl<T: Plain> FromIterator<T> for Col<T> {
    fn from_iter<I: IntoIterator<Item = T>>(it: I) -> Self {
        Self(Repr::Owned(it.into_iter().collect()))
    }
}

impl<'a, T: Plain> IntoIterator for &'a Col<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl<'a, T: Plain> IntoIterator for &'a mut Col<T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.to_mut().iter_mut()
    }
}

impl<T: Plain + PartialEq> PartialEq for Col<T> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Plain + Eq> Eq for Col<T> {}

impl<T: Plain + PartialEq> PartialEq<Vec<T>> for Col<T> {
    fn eq(&self, other: &Vec<T>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T: Plain + fmt::Debug> fmt::Debug for Col<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_slice().fmt(f)
    }
}
