fn main() {
    let p = std::env::args().nth(1).unwrap();
    match lanescope::reader::load(std::path::Path::new(&p)) {
        Ok(t) => {
            println!("{} {} lanes={} events={} dur={}", t.meta.nsys_version, t.meta.schema_version, t.lanes.len(), t.event_count(), t.duration());
            for l in &t.lanes { println!("{:?} pid={} n={} {}", l.kind, l.pid, l.ev.len(), l.disjoint); }
            println!("{:?} {:?}", t.gpus, t.processes);
        }
        Err(e) => eprintln!("{p}: {e:#}"),
    }
}
