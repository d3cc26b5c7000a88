//! Frame time of the viewer: a full 200x60 frame on pageable.sqlite, whole trace and
//! deep zoom, drawn into a `TestBackend` (no terminal I/O).

use criterion::{Criterion, criterion_group, criterion_main};
use lanescope::Options;
use lanescope::{Action, App, draw};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn app() -> App {
    let path = std::env::var("LANESCOPE_BENCH_TRACE")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/pageable.sqlite").to_string());
    let trace = lanescope::load(std::path::Path::new(&path)).expect("trace loads");
    let analysis = lanescope::analyze(&trace, &Options::default());
    App::new(trace, analysis, (200, 60))
}

fn frames(c: &mut Criterion) {
    let mut app = app();
    let mut term = Terminal::new(TestBackend::new(200, 60)).expect("backend");
    let mut g = c.benchmark_group("frame_200x60");
    g.bench_function("whole_trace", |b| {
        b.iter(|| {
            // A fresh buffer each time: the whole frame is drawn, not a diff.
            term.clear().expect("clear");
            term.draw(|f| draw(f, &app)).expect("draw");
        });
    });
    app.apply(Action::NextGap);
    for _ in 0..12 {
        app.apply(Action::ZoomIn);
    }
    g.bench_function("deep_zoom", |b| {
        b.iter(|| {
            term.clear().expect("clear");
            term.draw(|f| draw(f, &app)).expect("draw");
        });
    });
    app.apply(Action::FitAll);
    g.bench_function("pan_whole_trace", |b| {
        b.iter(|| {
            app.apply(Action::PanRight);
            term.draw(|f| draw(f, &app)).expect("draw");
        });
    });
    g.finish();
}

criterion_group!(benches, frames);
criterion_main!(benches);
