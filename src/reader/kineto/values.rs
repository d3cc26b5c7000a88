//! The values of Kineto events: decimal times without floats, ids, copy and memset
//! kinds from operation names, sync kinds, event categories.

use crate::model::MemFlags;

/// `raw` (a JSON number, or the text of a numeric string) times 10^`scale`, rounded to
/// the nearest integer (halves away from zero), by integer arithmetic only.
pub(super) fn decimal(raw: &[u8], scale: i32) -> Option<i128> {
    short_decimal(raw, scale).or_else(|| long_decimal(raw, scale))
}

// `decimal` of the common case in 64-bit arithmetic: `[-]digits[.digits]` with at most
// 18 digits (below 10^18) and a scale of 0 to 9. Anything else is left to `long_decimal`.
fn short_decimal(raw: &[u8], scale: i32) -> Option<i128> {
    if !(0..=9).contains(&scale) {
        return None;
    }
    let (neg, rest) = match raw.first()? {
        b'-' => (true, &raw[1..]),
        _ => (false, raw),
    };
    let (mut mant, mut digits, mut frac, mut dot) = (0u64, 0u32, 0u32, false);
    for &c in rest {
        match c {
            b'0'..=b'9' if digits < 18 => {
                mant = mant * 10 + u64::from(c - b'0');
                digits += 1;
                frac += u32::from(dot);
            }
            b'.' if !dot => dot = true,
            _ => return None,
        }
    }
    if digits == 0 {
        return None;
    }
    let scale = scale as u32;
    let v = if scale >= frac {
        i128::from(mant) * 10i128.pow(scale - frac)
    } else {
        let p = 10u64.pow(frac - scale);
        let (q, r) = (mant / p, mant % p);
        i128::from(if r * 2 >= p { q + 1 } else { q })
    };
    Some(if neg { -v } else { v })
}

// `decimal` of any number: a mantissa of up to 31 digits in 128 bits, exponents.
fn long_decimal(raw: &[u8], scale: i32) -> Option<i128> {
    let (neg, rest) = match raw.first()? {
        b'-' => (true, &raw[1..]),
        b'+' => (false, &raw[1..]),
        _ => (false, raw),
    };
    let (mut mant, mut exp, mut digits, mut dot) = (0i128, scale, 0u32, false);
    let mut i = 0;
    while i < rest.len() {
        match rest[i] {
            c @ b'0'..=b'9' => {
                digits += 1;
                if mant < 10i128.pow(30) {
                    mant = mant * 10 + i128::from(c - b'0');
                    if dot {
                        exp -= 1;
                    }
                } else if !dot {
                    exp += 1;
                }
            }
            b'.' if !dot => dot = true,
            b'e' | b'E' if digits > 0 => {
                let e: i32 = std::str::from_utf8(&rest[i + 1..]).ok()?.parse().ok()?;
                exp = exp.checked_add(e)?;
                break;
            }
            _ => return None,
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    let v = if exp >= 0 {
        mant.checked_mul(10i128.checked_pow(exp as u32)?)?
    } else if exp < -38 {
        0
    } else {
        let p = 10i128.pow((-exp) as u32);
        let (q, r) = (mant / p, mant % p);
        if r * 2 >= p { q + 1 } else { q }
    };
    Some(if neg { -v } else { v })
}

/// `raw` as an integer, when it is one that fits.
pub(super) fn int(raw: Option<&[u8]>) -> Option<i64> {
    raw.and_then(|r| decimal(r, 0)).and_then(|v| i64::try_from(v).ok())
}

/// Fold an id into 32 bits: small ids stay as they are, -1 becomes `u32::MAX`.
pub(super) fn id32(v: i64) -> u32 {
    if let Ok(x) = u32::try_from(v) {
        return x;
    }
    if let Ok(x) = i32::try_from(v) {
        return x as u32;
    }
    (v ^ (v >> 32)) as u32
}

fn mem_kind(word: &str) -> u8 {
    match word.trim().to_ascii_lowercase().as_str() {
        "pageable" => 0,
        "pinned" => 1,
        "device" => 2,
        "array" => 3,
        "managed" => 4,
        "device static" => 5,
        "managed static" => 6,
        _ => 7,
    }
}

/// Copy kind (nsys numbering) and memory kinds of a Kineto memcpy name such as
/// `Memcpy HtoD (Pageable -> Device)`.
pub(super) fn memcpy_flags(name: &str) -> u32 {
    let dir = name.split_whitespace().nth(1).unwrap_or("");
    let kind = match dir {
        "HtoD" => 1,
        "DtoH" => 2,
        "HtoA" => 3,
        "AtoH" => 4,
        "AtoA" => 5,
        "AtoD" => 6,
        "DtoA" => 7,
        "DtoD" => 8,
        "HtoH" => 9,
        "PtoP" => 10,
        _ => 0,
    };
    let (src, dst) = match name.find('(').zip(name.rfind(')')) {
        Some((a, b)) if a < b => match name[a + 1..b].split_once("->") {
            Some((s, d)) => (mem_kind(s), mem_kind(d)),
            None => (7, 7),
        },
        _ => (7, 7),
    };
    MemFlags::pack(kind, src, dst)
}

/// Memory kind (nsys numbering) of a memset name such as `Memset (Device)`.
pub(super) fn memset_kind(name: &str) -> u8 {
    match name.find('(').zip(name.rfind(')')) {
        Some((a, b)) if a < b => mem_kind(&name[a + 1..b]),
        _ => 7,
    }
}

/// nsys sync type and label of a Kineto `cuda_sync_kind`.
pub(super) fn sync_type(kind: &str) -> (u32, &'static str) {
    match kind {
        "Event Sync" => (1, "Event sync"),
        "Stream Wait Event" => (2, "Stream wait event"),
        "Stream Sync" => (3, "Stream sync"),
        "Context Sync" => (4, "Context sync"),
        _ => (0, "Sync"),
    }
}

/// What an `X` event is, by its `cat`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Cat {
    /// A CPU range; `user`: a `user_annotation` (`record_function`, `ProfilerStep#N`), not
    /// an operator (`cpu_op`, `python_function`).
    Cpu {
        user: bool,
    },
    Api {
        driver: bool,
    },
    Kernel,
    Memcpy,
    Memset,
    Sync,
    Overhead,
    GpuAnnotation,
    Other,
}

/// The [`Cat`] of a `cat` value (any case; the old names too).
pub(super) fn category(cat: &str) -> Cat {
    let is = |s: &str| cat.eq_ignore_ascii_case(s);
    if is("user_annotation") {
        Cat::Cpu { user: true }
    } else if is("cpu_op") || is("python_function") || is("operator") {
        Cat::Cpu { user: false }
    } else if is("cuda_runtime") || is("runtime") {
        Cat::Api { driver: false }
    } else if is("cuda_driver") || is("driver") {
        Cat::Api { driver: true }
    } else if is("kernel") {
        Cat::Kernel
    } else if is("gpu_memcpy") || is("memcpy") {
        Cat::Memcpy
    } else if is("gpu_memset") || is("memset") {
        Cat::Memset
    } else if is("cuda_sync") {
        Cat::Sync
    } else if is("gpu_user_annotation") {
        Cat::GpuAnnotation
    } else if is("overhead") {
        Cat::Overhead
    } else {
        Cat::Other
    }
}

/// True for the overhead events that are the profiler's own work.
pub(super) fn is_profiler_overhead(name: &str) -> bool {
    ["activity buffer request", "buffer flush", "instrumentation", "resource"]
        .iter()
        .any(|n| name.eq_ignore_ascii_case(n))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_are_exact() {
        assert_eq!(decimal(b"5140583009067.660", 3), Some(5_140_583_009_067_660));
        assert_eq!(decimal(b"1.2345", 3), Some(1235));
        assert_eq!(decimal(b"1.2344", 3), Some(1234));
        assert_eq!(decimal(b"-0.0005", 3), Some(-1));
        assert_eq!(decimal(b"1e3", 3), Some(1_000_000));
        assert_eq!(decimal(b"2.5E-1", 3), Some(250));
        assert_eq!(decimal(b"12", 0), Some(12));
        assert_eq!(decimal(b"", 0), None);
        assert_eq!(decimal(b"-", 0), None);
        assert_eq!(decimal(b"1.2.3", 0), None);
        assert_eq!(decimal(b"nan", 3), None);
        assert_eq!(decimal(b"1e99999999999", 3), None);
    }

    proptest::proptest! {
        #[test]
        fn the_short_path_agrees_with_the_long_one(
            neg in proptest::bool::ANY,
            int in "[0-9]{0,12}",
            frac in proptest::option::of("[0-9]{0,10}"),
            scale in -2i32..12,
        ) {
            let text = format!("{}{int}{}", if neg { "-" } else { "" }, frac.map(|f| format!(".{f}")).unwrap_or_default());
            let short = short_decimal(text.as_bytes(), scale);
            let digits = int.len() + frac_len(&text);
            // Whatever the short path answers is the long path's answer...
            if short.is_some() {
                proptest::prop_assert_eq!(short, long_decimal(text.as_bytes(), scale), "{} at scale {}", text, scale);
            }
            // ...and it answers every number it is meant for.
            proptest::prop_assert_eq!(short.is_some(), (0..=9).contains(&scale) && (1..=18).contains(&digits), "{}", text);
        }
    }

    fn frac_len(text: &str) -> usize {
        text.split_once('.').map_or(0, |(_, f)| f.len())
    }

    #[test]
    fn copy_names() {
        let f = MemFlags::unpack(memcpy_flags("Memcpy HtoD (Pageable -> Device)"));
        assert_eq!((f.copy_kind, f.src, f.dst), (1, crate::model::MemKind::Pageable, crate::model::MemKind::Device));
        let f = MemFlags::unpack(memcpy_flags("Memcpy DtoH (Device -> Pinned)"));
        assert_eq!((f.copy_kind, f.dst), (2, crate::model::MemKind::Pinned));
        assert_eq!(memset_kind("Memset (Device)"), 2);
        assert_eq!(MemFlags::unpack(memcpy_flags("garbage")).copy_kind, 0);
    }
}
