//! Load and analysis time of a real export (pageable.sqlite by default; set
//! `LANESCOPE_BENCH_TRACE` to measure another, e.g. the 2.2M-event many.sqlite), and
//! of a Kineto trace (`step_prefetch.json.gz` unpacked to plain JSON, 4,142 events;
//! `LANESCOPE_BENCH_KINETO` names another plain JSON file, e.g. the 1 GB one of
//! docs/performance.md).

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

fn kineto(c: &mut Criterion) {
    use std::io::Read;
    // Unpacked once: the scanner, not gunzip, is what is measured.
    let dir = tempfile::tempdir().expect("temporary directory");
    let p = std::env::var("LANESCOPE_BENCH_KINETO").map_or_else(
        |_| {
            let gz = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/kineto/step_prefetch.json.gz");
            let mut text = Vec::new();
            let file = std::fs::File::open(gz).expect("fixture");
            flate2::read::GzDecoder::new(file).read_to_end(&mut text).expect("gunzip");
            let p = dir.path().join("step_prefetch.json");
            std::fs::write(&p, text).expect("unpacked fixture");
            p
        },
        std::path::PathBuf::from,
    );
    let mut g = c.benchmark_group("kineto");
    g.sample_size(10);
    g.bench_function("load", |b| b.iter(|| lanescope::load(&p).expect("trace loads")));
    let trace = lanescope::load(&p).expect("trace loads");
    g.bench_function("analyze", |b| b.iter(|| lanescope::analyze(&trace, &Options::default())));
    g.finish();
}

criterion_group!(benches, reader, kineto);
criterion_main!(benches);
