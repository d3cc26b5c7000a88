//! The phase fields: one row per metric of a phase ([`PHASE`]), the one definition that
//! the JSON report's `phases[]` ([`PhaseFields`]), the CSV, the text report's phase
//! tables, `diff`'s per-phase metrics and rows, and the viewer's phase table read.
//!
//! A row is the metric's JSON key (`launched.count` is `count` inside `launched`), its
//! column header, its unit and its getter. Views pick rows and order them (each view's
//! order is its own), and may show a row under another header ([`Field::headed`]); the
//! JSON and the CSV hold every row of [`PHASE`], in its order. Derived fields that the
//! report leaves out ([`BUSY_PCT`], [`BUSY_OF_WALL`]) are rows of the same kind beside it.

use std::cmp::Ordering;

use serde::ser::{Serialize, SerializeMap, Serializer};

use crate::analysis::Phase;

/// How a field's values read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    /// A number of things.
    Count,
    /// Nanoseconds.
    Ns,
    /// Bytes.
    Bytes,
    /// A fraction in `[0, 1]`.
    Share,
    /// A percentage, `0..=100`.
    Pct,
    /// Decimal GB/s (bytes per ns).
    Gbps,
}

impl Unit {
    /// True for units whose values are integers (counts, durations, bytes).
    pub(crate) fn is_integer(self) -> bool {
        match self {
            Self::Count | Self::Ns | Self::Bytes => true,
            Self::Share | Self::Pct | Self::Gbps => false,
        }
    }
}

/// A field's value: an integer, or a real that is null when there is nothing to divide by.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Num {
    /// Counts, nanoseconds, bytes.
    Int(i64),
    /// Shares, percentages, rates.
    Real(Option<f64>),
}

impl Num {
    /// The value as a float, None for a null real.
    pub(crate) fn as_f64(self) -> Option<f64> {
        match self {
            Self::Int(i) => Some(i as f64),
            Self::Real(r) => r,
        }
    }

    /// Ascending order for sorting: integers exactly, reals with null as 0.
    pub(crate) fn sort_cmp(self, other: Self) -> Ordering {
        match (self, other) {
            (Self::Int(a), Self::Int(b)) => a.cmp(&b),
            (a, b) => a.as_f64().unwrap_or(0.0).total_cmp(&b.as_f64().unwrap_or(0.0)),
        }
    }
}

impl std::fmt::Display for Num {
    /// The plain number (as in JSON and CSV), empty for null.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Int(i) => write!(f, "{i}"),
            Self::Real(Some(r)) => write!(f, "{r}"),
            Self::Real(None) => Ok(()),
        }
    }
}

impl Serialize for Num {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            Self::Int(i) => s.serialize_i64(i),
            Self::Real(Some(r)) => s.serialize_f64(r),
            Self::Real(None) => s.serialize_none(),
        }
    }
}

/// One metric of a phase.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Field {
    /// JSON key; a dot nests (`launched.count`). The CSV metric is the key with `_` for `.`.
    pub key: &'static str,
    /// Column header of the text report (views may give another, [`Field::headed`]).
    pub label: &'static str,
    /// How its values read.
    pub unit: Unit,
    /// Its value for a phase.
    pub get: fn(&Phase) -> Num,
}

impl Field {
    /// The same field under another header.
    #[must_use]
    pub(crate) const fn headed(self, label: &'static str) -> Self {
        Self { label, ..self }
    }

    /// Its value for `p`.
    pub(crate) fn of(&self, p: &Phase) -> Num {
        (self.get)(p)
    }
}

// Counts and byte totals are far below i64::MAX; the JSON has always printed them as integers.
fn int(n: u64) -> Num {
    Num::Int(n as i64)
}

/// Range instances.
pub(crate) const COUNT: Field = Field { key: "count", label: "count", unit: Unit::Count, get: |p| int(p.count) };
/// Total CPU wall time of the instances.
pub(crate) const WALL: Field =
    Field { key: "wall_ns", label: "wall", unit: Unit::Ns, get: |p| Num::Int(p.wall.sum_ns) };
/// Mean wall time.
pub(crate) const WALL_MEAN: Field =
    Field { key: "wall_mean_ns", label: "mean", unit: Unit::Ns, get: |p| Num::Int(p.wall.mean_ns) };
/// Median wall time.
pub(crate) const WALL_P50: Field =
    Field { key: "wall_p50_ns", label: "p50", unit: Unit::Ns, get: |p| Num::Int(p.wall.p50_ns) };
/// 95th percentile wall time.
pub(crate) const WALL_P95: Field =
    Field { key: "wall_p95_ns", label: "p95", unit: Unit::Ns, get: |p| Num::Int(p.wall.p95_ns) };
/// Longest instance.
pub(crate) const WALL_MAX: Field =
    Field { key: "wall_max_ns", label: "max", unit: Unit::Ns, get: |p| Num::Int(p.wall.max_ns) };
/// GPU busy over the phase's windows.
pub(crate) const GPU_BUSY: Field =
    Field { key: "gpu_busy_ns", label: "busy", unit: Unit::Ns, get: |p| Num::Int(p.gpu_busy_ns) };
/// Kernel busy over the windows.
pub(crate) const KERNEL_BUSY: Field =
    Field { key: "kernel_busy_ns", label: "kernels", unit: Unit::Ns, get: |p| Num::Int(p.kernel_busy_ns) };
/// Copy busy over the windows.
pub(crate) const COPY_BUSY: Field =
    Field { key: "copy_busy_ns", label: "copies", unit: Unit::Ns, get: |p| Num::Int(p.copy_busy_ns) };
/// GPU idle over the windows.
pub(crate) const IDLE: Field = Field { key: "idle_ns", label: "idle", unit: Unit::Ns, get: |p| Num::Int(p.idle_ns) };
/// Copy time with no kernel over the windows.
pub(crate) const EXPOSED_COPY: Field =
    Field { key: "exposed_copy_ns", label: "exposed copy", unit: Unit::Ns, get: |p| Num::Int(p.exposed_copy_ns) };
/// Share of copy time with a kernel running.
pub(crate) const COPY_OVERLAP: Field =
    Field { key: "copy_overlap", label: "overlap", unit: Unit::Share, get: |p| Num::Real(p.copy_overlap) };
/// H2D bytes (prorated) in the windows.
pub(crate) const H2D_BYTES: Field =
    Field { key: "h2d_bytes", label: "H2D", unit: Unit::Bytes, get: |p| int(p.h2d_bytes) };
/// D2H bytes (prorated) in the windows.
pub(crate) const D2H_BYTES: Field =
    Field { key: "d2h_bytes", label: "D2H", unit: Unit::Bytes, get: |p| int(p.d2h_bytes) };
/// H2D bandwidth.
pub(crate) const H2D_GBPS: Field =
    Field { key: "h2d_gbps", label: "H2D GB/s", unit: Unit::Gbps, get: |p| Num::Real(p.h2d_gbps) };
/// D2H bandwidth.
pub(crate) const D2H_GBPS: Field =
    Field { key: "d2h_gbps", label: "D2H GB/s", unit: Unit::Gbps, get: |p| Num::Real(p.d2h_gbps) };
/// Share of instances with a gap >= min-gap inside.
pub(crate) const STARVED: Field =
    Field { key: "starved_share", label: "starved", unit: Unit::Share, get: |p| Num::Real(Some(p.starved_share)) };
/// GPU operations launched from inside the ranges.
pub(crate) const LAUNCHED: Field =
    Field { key: "launched.count", label: "launched", unit: Unit::Count, get: |p| int(p.launched.count) };
/// Their GPU time.
pub(crate) const LAUNCHED_GPU: Field =
    Field { key: "launched.gpu_ns", label: "launched GPU", unit: Unit::Ns, get: |p| Num::Int(p.launched.gpu_ns) };
/// Sum over instances of first-op-start to last-op-end.
pub(crate) const LAUNCHED_SPAN: Field =
    Field { key: "launched.span_ns", label: "span", unit: Unit::Ns, get: |p| Num::Int(p.launched.span_ns) };

/// H2D copy time the phase launched with no kernel running on their GPU.
pub(crate) const H2D_EXPOSED: Field =
    Field { key: "h2d_exposed_ns", label: "H2D exposed", unit: Unit::Ns, get: |p| Num::Int(p.h2d_exposed_ns) };
/// PCIe RX (host to device) over the phase's instances.
pub(crate) const PCIE_RX: Field = Field {
    key: "pcie.rx_pct_mean",
    label: "RX%",
    unit: Unit::Pct,
    get: |p| Num::Real(p.pcie.and_then(|x| x.rx_pct_mean)),
};
/// PCIe TX (device to host) over the phase's instances.
pub(crate) const PCIE_TX: Field = Field {
    key: "pcie.tx_pct_mean",
    label: "TX%",
    unit: Unit::Pct,
    get: |p| Num::Real(p.pcie.and_then(|x| x.tx_pct_mean)),
};
/// PCIe RX while the phase's H2D copies ran.
pub(crate) const PCIE_RX_H2D: Field = Field {
    key: "pcie.rx_pct_during_h2d",
    label: "RX% in H2D",
    unit: Unit::Pct,
    get: |p| Num::Real(p.pcie.and_then(|x| x.rx_pct_during_h2d)),
};
/// PCIe TX while the phase's D2H copies ran.
pub(crate) const PCIE_TX_D2H: Field = Field {
    key: "pcie.tx_pct_during_d2h",
    label: "TX% in D2H",
    unit: Unit::Pct,
    get: |p| Num::Real(p.pcie.and_then(|x| x.tx_pct_during_d2h)),
};

/// Every field of the report's `phases[]` (after `name`), in JSON order.
pub(crate) const PHASE: [Field; 25] = [
    COUNT,
    WALL,
    WALL_MEAN,
    WALL_P50,
    WALL_P95,
    WALL_MAX,
    GPU_BUSY,
    KERNEL_BUSY,
    COPY_BUSY,
    IDLE,
    EXPOSED_COPY,
    COPY_OVERLAP,
    H2D_BYTES,
    D2H_BYTES,
    H2D_GBPS,
    D2H_GBPS,
    STARVED,
    LAUNCHED,
    LAUNCHED_GPU,
    LAUNCHED_SPAN,
    H2D_EXPOSED,
    PCIE_RX,
    PCIE_TX,
    PCIE_RX_H2D,
    PCIE_TX_D2H,
];

/// GPU busy over busy plus idle in the windows, in percent (`diff`'s `gpu_busy_pct`).
pub(crate) const BUSY_PCT: Field = Field {
    key: "gpu_busy_pct",
    label: "busy%",
    unit: Unit::Pct,
    get: |p| Num::Real(crate::text::percent(p.gpu_busy_ns, p.gpu_busy_ns + p.idle_ns)),
};

/// GPU busy over the instances' summed wall time, at most 1 (the viewer's `GPU busy`).
pub(crate) const BUSY_OF_WALL: Field = Field {
    key: "gpu_busy_of_wall",
    label: "GPU busy",
    unit: Unit::Share,
    get: |p| Num::Real(Some(p.gpu_busy_ns as f64 / p.wall.sum_ns.max(1) as f64)),
};

/// The fields of [`PHASE`] of one phase, as JSON: the map that `phases[]` holds after its
/// `name` (and that `diff` flattens into its per-phase metrics).
#[derive(Debug, Clone, Copy)]
pub struct PhaseFields<'a>(pub &'a Phase);

impl Serialize for PhaseFields<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        let mut rest = &PHASE[..];
        while let Some(f) = rest.first() {
            // A dotted key opens an object of the fields next to it with the same prefix.
            let Some((group, _)) = f.key.split_once('.') else {
                m.serialize_entry(f.key, &f.of(self.0))?;
                rest = &rest[1..];
                continue;
            };
            let n = rest.iter().take_while(|g| g.key.split_once('.').is_some_and(|(x, _)| x == group)).count();
            // A group without a single number (`pcie` of a trace without GPU metrics) is null.
            if rest[..n].iter().all(|f| f.of(self.0) == Num::Real(None)) {
                m.serialize_entry(group, &None::<()>)?;
            } else {
                m.serialize_entry(group, &Group(&rest[..n], self.0))?;
            }
            rest = &rest[n..];
        }
        m.end()
    }
}

// The fields of one dotted group, keyed by what follows the dot.
struct Group<'a>(&'a [Field], &'a Phase);

impl Serialize for Group<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for f in self.0 {
            m.serialize_entry(f.key.split_once('.').map_or(f.key, |(_, k)| k), &f.of(self.1))?;
        }
        m.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::{DurStats, Launched};

    fn phase() -> Phase {
        Phase {
            name: "step N".to_string(),
            count: 3,
            wall: DurStats { sum_ns: 300, mean_ns: 100, p50_ns: 90, p95_ns: 150, max_ns: 160 },
            gpu_busy_ns: 120,
            kernel_busy_ns: 100,
            copy_busy_ns: 30,
            idle_ns: 80,
            exposed_copy_ns: 20,
            copy_overlap: Some(0.25),
            h2d_bytes: 4096,
            d2h_bytes: 0,
            h2d_gbps: Some(12.5),
            d2h_gbps: None,
            launched: Launched { count: 7, gpu_ns: 110, span_ns: 140 },
            slowest: (0, 160),
            starved_share: 1.0 / 3.0,
            pcie: Some(crate::analysis::pcie::Pcie { rx_pct_mean: Some(40.0), ..Default::default() }),
            copy_verdict: crate::analysis::pcie::CopyVerdict::LinkBound,
            h2d_exposed_ns: 25,
        }
    }

    #[test]
    fn json_nests_dotted_keys_in_table_order() {
        let v = serde_json::to_value(PhaseFields(&phase())).unwrap();
        let text = serde_json::to_string(&PhaseFields(&phase())).unwrap();
        assert!(text.starts_with(r#"{"count":3,"wall_ns":300,"wall_mean_ns":100,"#), "{text}");
        assert!(text.contains(r#""launched":{"count":7,"gpu_ns":110,"span_ns":140},"#), "{text}");
        assert!(
            text.ends_with(
                r#""pcie":{"rx_pct_mean":40.0,"tx_pct_mean":null,"rx_pct_during_h2d":null,"tx_pct_during_d2h":null}}"#
            ),
            "{text}"
        );
        // Without GPU metrics the whole group is null.
        let bare = Phase { pcie: None, ..phase() };
        assert_eq!(serde_json::to_value(PhaseFields(&bare)).unwrap()["pcie"], serde_json::Value::Null);
        assert_eq!(v["d2h_gbps"], serde_json::Value::Null);
        assert_eq!(v["starved_share"], 1.0 / 3.0);
        let keys: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        assert_eq!(
            keys.len(),
            PHASE.len() - 5,
            "three `launched.` rows and four `pcie.` rows make two objects: {keys:?}"
        );
    }

    #[test]
    fn keys_are_unique_and_groups_are_contiguous() {
        let mut seen: Vec<&str> = Vec::new();
        let mut groups: Vec<&str> = Vec::new();
        for f in PHASE {
            assert!(!seen.contains(&f.key), "{} twice", f.key);
            seen.push(f.key);
            let g = f.key.split_once('.').map_or("", |(g, _)| g);
            if groups.last() != Some(&g) {
                assert!(g.is_empty() || !groups.contains(&g), "`{g}.` rows apart");
                groups.push(g);
            }
        }
    }

    #[test]
    fn derived_fields_and_numbers() {
        let p = phase();
        assert_eq!(BUSY_PCT.of(&p), Num::Real(Some(60.0)));
        assert_eq!(BUSY_OF_WALL.of(&p), Num::Real(Some(0.4)));
        assert_eq!(COUNT.headed("n").label, "n");
        assert_eq!(Num::Real(None).to_string(), "");
        assert_eq!(Num::Int(-5).to_string(), "-5");
        assert_eq!(Num::Real(None).sort_cmp(Num::Real(Some(0.5))), Ordering::Less);
        assert!(PHASE.iter().filter(|f| f.unit.is_integer()).all(|f| matches!(f.of(&p), Num::Int(_))));
        assert!(PHASE.iter().filter(|f| !f.unit.is_integer()).all(|f| matches!(f.of(&p), Num::Real(_))));
    }
}
