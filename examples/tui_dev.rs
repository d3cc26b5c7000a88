// Temporary dev harness for the viewer until `lanescope TRACE` is wired (removed before commit).
fn main() -> anyhow::Result<()> {
    let arg = std::env::args().nth(1);
    if std::env::var_os("TIME_GAPS").is_some() {
        let p = arg.unwrap();
        let t0 = std::time::Instant::now();
        let trace = lanescope::reader::load(std::path::Path::new(&p))?;
        let t1 = std::time::Instant::now();
        let mut o = lanescope::analysis::Options::default();
        let a = lanescope::analysis::analyze(&trace, &o);
        let t2 = std::time::Instant::now();
        let app = lanescope::tui::App::new(trace.clone(), a.clone(), (200, 60));
        let t3 = std::time::Instant::now();
        o.min_gap_ns *= 2;
        let g = lanescope::analysis::find_gaps(&trace, &a.devices, &o);
        let t4 = std::time::Instant::now();
        println!("load {:?} analyze {:?} app {:?} (index {} B for {} events) find_gaps {:?} ({})", t1 - t0, t2 - t1, t3 - t2, app.index_bytes(), trace.event_count(), t4 - t3, g.len());
        return Ok(());
    }
    let src = match arg {
        Some(p) => lanescope::tui::Source::Path(p.into()),
        None => lanescope::tui::Source::Demo,
    };
    lanescope::tui::run(src, lanescope::analysis::Options::default())
}
