//! GPU counters (`nsys profile --gpu-metrics-devices`): one sampled time series per GPU and
//! metric, held by the trace beside its lanes. Means over any time range cost two binary
//! searches (prefix sums), so a screen cell or a phase never scans samples.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::Ns;

/// The counter series of a trace, by (device, metric name); empty when not captured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counters {
    /// Series sorted by device, then by the export's metric id.
    pub series: Vec<Series>,
}

/// One metric of one GPU: sample instants and values.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// GPU id (the low byte of `GPU_METRICS.typeId`, as `deviceId` of the CUDA tables).
    pub device: u32,
    /// Metric name as `TARGET_INFO_GPU_METRICS.metricName` spells it.
    pub name: String,
    /// Sample instants, sorted; shared by the metrics of one GPU sampled together.
    pub times: Arc<[Ns]>,
    // prefix[i] = sum of the first i values: a range's sum is two lookups. 128 bits: a
    // sum of 64-bit samples never saturates (values near i64::MAX are legal samples).
    prefix: Vec<i128>,
    max: i64,
    // The median time between samples, found once (it scans every sample).
    period: Ns,
}

/// Mean, 95th percentile and maximum of a series' samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Mean of the samples.
    pub mean: f64,
    /// 95th percentile (nearest rank).
    pub p95: i64,
    /// Largest sample.
    pub max: i64,
}

impl Series {
    /// A series from samples sorted by time (`times` and `values` of equal length).
    pub fn new(device: u32, name: String, times: Arc<[Ns]>, values: &[i64]) -> Self {
        debug_assert_eq!(times.len(), values.len());
        let mut prefix = Vec::with_capacity(values.len() + 1);
        let mut sum = 0i128;
        prefix.push(0);
        for &v in values {
            sum += i128::from(v);
            prefix.push(sum);
        }
        let max = values.iter().copied().max().unwrap_or(0);
        let period = median_period(&times);
        Self { device, name, times, prefix, max, period }
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// True without samples.
    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    /// The unit in the name's brackets (`%` for `[Throughput %]`, `MHz`, `Avg`), or "".
    pub fn unit(&self) -> &str {
        unit_of(&self.name)
    }

    /// The `i`-th sample's value.
    pub fn value(&self, i: usize) -> i64 {
        (self.prefix[i + 1] - self.prefix[i]) as i64
    }

    /// Largest sample (0 without samples).
    pub fn max(&self) -> i64 {
        self.max
    }

    /// Index range of the samples taken in `[start, end]`.
    pub fn range(&self, start: Ns, end: Ns) -> std::ops::Range<usize> {
        let lo = self.times.partition_point(|&t| t < start);
        let hi = self.times.partition_point(|&t| t <= end);
        lo..hi.max(lo)
    }

    /// Sum and count of the samples taken in `[start, end]`.
    pub fn sum_in(&self, start: Ns, end: Ns) -> (i128, usize) {
        let r = self.range(start, end);
        (self.prefix[r.end] - self.prefix[r.start], r.len())
    }

    /// Mean of the samples taken in `[start, end]`, if any.
    pub fn mean_in(&self, start: Ns, end: Ns) -> Option<f64> {
        let (sum, n) = self.sum_in(start, end);
        (n > 0).then(|| sum as f64 / n as f64)
    }

    /// Mean of the samples taken inside any of `spans` (sorted, non-overlapping `[start, end]`).
    pub fn mean_over(&self, spans: &[(Ns, Ns)]) -> Option<f64> {
        let (sum, n) = spans.iter().fold((0i128, 0usize), |(s, n), &(a, b)| {
            let (ds, dn) = self.sum_in(a, b);
            (s + ds, n + dn)
        });
        (n > 0).then(|| sum as f64 / n as f64)
    }

    /// Mean, p95 and max of every sample, if any.
    pub fn summary(&self) -> Option<Summary> {
        if self.is_empty() {
            return None;
        }
        let mut v: Vec<i64> = (0..self.len()).map(|i| self.value(i)).collect();
        let rank = (v.len() * 95).div_ceil(100).max(1) - 1;
        let (_, p95, _) = v.select_nth_unstable(rank);
        Some(Summary { mean: self.prefix[self.len()] as f64 / self.len() as f64, p95: *p95, max: self.max })
    }

    /// The median time between samples (0 with fewer than two).
    pub fn period_ns(&self) -> Ns {
        self.period
    }

    /// Approximate heap bytes (times counted once per shared column by the caller).
    pub fn heap_bytes(&self) -> usize {
        self.prefix.capacity() * 16 + self.name.len()
    }
}

// The median of the times between consecutive samples (0 with fewer than two).
fn median_period(times: &[Ns]) -> Ns {
    let mut d: Vec<Ns> = times.windows(2).map(|w| w[1].saturating_sub(w[0])).collect();
    if d.is_empty() {
        return 0;
    }
    let mid = d.len() / 2;
    *d.select_nth_unstable(mid).1
}

/// The unit in a metric name's trailing brackets: `%` for `[Throughput %]`, else the bracket text.
pub(crate) fn unit_of(name: &str) -> &str {
    let Some(open) = name.rfind('[') else { return "" };
    let inner = name[open + 1..].trim_end_matches(']').trim();
    if inner.ends_with('%') { "%" } else { inner }
}

/// Names of the metrics lanescope reads for copies and compute.
pub(crate) mod names {
    /// Host-to-device traffic over PCIe, as a share of the link's peak.
    pub(crate) const PCIE_RX: &str = "PCIe RX Throughput [Throughput %]";
    /// Device-to-host traffic over PCIe, as a share of the link's peak.
    pub(crate) const PCIE_TX: &str = "PCIe TX Throughput [Throughput %]";
    /// Share of SMs with work resident.
    pub(crate) const SMS_ACTIVE: &str = "SMs Active [Throughput %]";
}

impl Counters {
    /// True when the trace has no counters.
    pub fn is_empty(&self) -> bool {
        self.series.is_empty()
    }

    /// The series `name` of `device`.
    pub fn get(&self, device: u32, name: &str) -> Option<&Series> {
        self.series.iter().find(|s| s.device == device && s.name == name)
    }

    /// GPUs with counters, sorted.
    pub fn devices(&self) -> Vec<u32> {
        let mut d: Vec<u32> = self.series.iter().map(|s| s.device).collect();
        d.dedup();
        d
    }

    /// The series of `device`, in the export's order.
    pub fn of(&self, device: u32) -> impl Iterator<Item = &Series> {
        self.series.iter().filter(move |s| s.device == device)
    }

    /// Sample rows held (one per metric per instant).
    pub fn rows(&self) -> usize {
        self.series.iter().map(Series::len).sum()
    }

    /// Approximate heap bytes, shared time columns counted once.
    pub fn heap_bytes(&self) -> usize {
        // A set, not a list: a trace can hold 100,000 series with columns of their own.
        let mut seen: HashSet<*const Ns> = HashSet::new();
        let mut bytes = 0;
        for s in &self.series {
            bytes += s.heap_bytes();
            if seen.insert(s.times.as_ptr()) {
                bytes += s.times.len() * 8;
            }
        }
        bytes
    }

    /// The series moved onto a merged timeline: times shifted by `by`, GPUs through `dev`;
    /// time columns shared before stay shared.
    #[must_use]
    pub fn moved(self, by: Ns, dev: impl Fn(u32) -> u32) -> Self {
        // Columns moved so far, by their address: one lookup per series, not a scan.
        let mut done: HashMap<*const Ns, Arc<[Ns]>> = HashMap::new();
        let mut series = self.series;
        for s in &mut series {
            s.device = dev(s.device);
            let moved = done
                .entry(s.times.as_ptr())
                .or_insert_with(|| s.times.iter().map(|&t| t.saturating_add(by)).collect::<Arc<[Ns]>>());
            s.times = Arc::clone(moved);
        }
        Self { series }
    }

    /// Add `other`'s series (already moved), keeping the order by device.
    pub fn append(&mut self, other: Self) {
        self.series.extend(other.series);
        self.series.sort_by_key(|s| s.device);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(times: &[Ns], values: &[i64]) -> Series {
        Series::new(0, "PCIe RX Throughput [Throughput %]".into(), times.into(), values)
    }

    #[test]
    fn means_over_ranges_equal_a_scan() {
        let times: Vec<Ns> = (0..50).map(|i| i * 100).collect();
        let values: Vec<i64> = (0..50).map(|i| (i * 37) % 101).collect();
        let s = series(&times, &values);
        for (a, b) in [(0, 4900), (150, 150), (150, 250), (-10, 5), (4900, 9999), (5000, 6000)] {
            let picked: Vec<i64> =
                times.iter().zip(&values).filter(|(t, _)| **t >= a && **t <= b).map(|(_, v)| *v).collect();
            let want = (!picked.is_empty()).then(|| picked.iter().sum::<i64>() as f64 / picked.len() as f64);
            assert_eq!(s.mean_in(a, b), want, "[{a}, {b}]");
        }
        let spans = [(0, 250), (1000, 1000), (4000, 4200)];
        let picked: Vec<i64> = times
            .iter()
            .zip(&values)
            .filter(|(t, _)| spans.iter().any(|(a, b)| **t >= *a && **t <= *b))
            .map(|(_, v)| *v)
            .collect();
        assert_eq!(s.mean_over(&spans), Some(picked.iter().sum::<i64>() as f64 / picked.len() as f64));
    }

    #[test]
    fn means_of_samples_near_the_64_bit_limit_do_not_saturate() {
        let big = [i64::MAX, i64::MAX - 6, i64::MAX - 2, i64::MIN, i64::MAX];
        let s = series(&[0, 10, 20, 30, 40], &big);
        let exact = |v: &[i64]| (v.iter().map(|&x| i128::from(x)).sum::<i128>() as f64) / v.len() as f64;
        let sum = s.summary().unwrap();
        assert_eq!(sum.mean.to_bits(), exact(&big).to_bits());
        assert_eq!((sum.p95, sum.max), (i64::MAX, i64::MAX));
        assert_eq!((0..5).map(|i| s.value(i)).collect::<Vec<_>>(), big);
        assert_eq!(s.mean_in(0, 20).map(f64::to_bits), Some(exact(&big[..3]).to_bits()));
        assert!((s.mean_in(0, 20).unwrap() - 9.223_372_036_854_775e18).abs() < 1e4);
        assert_eq!(s.mean_over(&[(0, 0), (40, 40)]).map(f64::to_bits), Some(exact(&[big[0], big[4]]).to_bits()));
    }

    #[test]
    fn moving_many_series_takes_linear_time() {
        // Each series with a time column of its own, as 100,000 metrics sampled apart give.
        let n = 50_000;
        let series: Vec<Series> =
            (0..n).map(|i| Series::new(i as u32 % 4, format!("m{i}"), vec![i].into(), &[1])).collect();
        let mut c = Counters { series };
        c.series.push(Series { name: "shares".into(), ..c.series[7].clone() });
        let t0 = std::time::Instant::now();
        let moved = c.moved(1000, |d| d + 256);
        let bytes = moved.heap_bytes();
        // A scan of the columns moved so far per series takes over 10 s here.
        assert!(t0.elapsed().as_secs_f64() < 2.0, "{:?}", t0.elapsed());
        assert_eq!(moved.series.len(), n as usize + 1);
        assert!(moved.series.iter().take(n as usize).enumerate().all(|(i, s)| *s.times == [i as Ns + 1000]));
        assert!(Arc::ptr_eq(&moved.series[7].times, &moved.series[n as usize].times), "a shared column stays shared");
        let want: usize = moved.series.iter().map(Series::heap_bytes).sum::<usize>() + n as usize * 8;
        assert_eq!(bytes, want);
    }

    #[test]
    fn summary_period_and_unit() {
        let s = series(&[0, 100, 200, 300, 450], &[5, 1, 9, 3, 7]);
        let sum = s.summary().unwrap();
        assert_eq!((sum.mean, sum.p95, sum.max), (5.0, 9, 9));
        assert_eq!(s.period_ns(), 100);
        assert_eq!(s.value(2), 9);
        assert_eq!(unit_of("PCIe RX Throughput [Throughput %]"), "%");
        assert_eq!(unit_of("GPC Clock Frequency [MHz]"), "MHz");
        assert_eq!(unit_of("no unit"), "");
        assert!(series(&[], &[]).summary().is_none());
    }
}
