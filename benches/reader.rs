//! Load and analysis time of a real export (pageable.sqlite by default; set
//! `LANESCOPE_BENCH_TRACE` to measure another, e.g. the 2.2M-event many.sqlite).

use criterion::{Criterion, criterion_group, criterion_main};
use lanescope::Options;

fn path() -> std::path::PathBuf {
    std::env::var("LANESCOPE_BENCH_TRACE")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pageable.sqlite").to_string())
        .into()
}

fn reader(c: &mut Criterion) {
    let p = path();
    let mut g = c.benchmark_group("reader");
    g.sample_size(10);
    g.bench_function("load", |b| b.iter(|| lanescope::load(&p).expect("trace loads")));
    let trace = lanescope::load(&p).expect("trace loads");
    g.bench_function("analyze", |b| b.iter(|| lanescope::analyze(&trace, &Options::default())));
    g.finish();
}

criterion_group!(benches, reader);
criterion_main!(benches);
