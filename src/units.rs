//! Human-readable times, sizes and rates: the formatters live in [`crate::text`]
//! (one per unit, shared with the viewer); this module keeps their old paths.

pub use crate::text::{fmt_bytes, fmt_ns, gbps};
