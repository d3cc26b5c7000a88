//! Findings on real captures, each number checked against SQL over the same file.

use crate::util::fixture;
use lanescope::{Options, analyze};
use rusqlite::Connection;

#[test]
fn pageable_d2h_is_named_against_pinned_copies_of_the_same_size() {
    // d2h.py copies 10 x 128 MiB to pageable memory (.cpu()), then 10 x 128 MiB into a
    // pinned buffer.
    let f = fixture("d2h.sqlite");
    let a = analyze(&lanescope::load(&f).unwrap(), &Options::default());
    let c = Connection::open_with_flags(&f, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let sum = |dst: i64| -> (i64, i64) {
        c.query_row(
            "SELECT sum(bytes), sum(\"end\" - start) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 2 AND dstKind = ?1",
            [dst],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap()
    };
    let (page_b, page_ns) = sum(0);
    let (pin_b, pin_ns) = sum(1);
    let span: i64 = c
        .query_row(
            "SELECT max(e) - min(s) FROM (SELECT start s, \"end\" e FROM CUPTI_ACTIVITY_KIND_KERNEL
             UNION ALL SELECT start, \"end\" FROM CUPTI_ACTIVITY_KIND_MEMCPY)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let f = a.findings.iter().find(|f| f.rule.name() == "pageable_bandwidth").expect("the finding");
    let ev = |k: &str| f.evidence.iter().find(|(x, _)| x == k).map(|(_, v)| v.clone()).unwrap();
    assert_eq!(ev("direction"), "D2H");
    assert_eq!(ev("pageable_bytes"), page_b.to_string());
    assert_eq!(ev("pageable_ns"), page_ns.to_string());
    assert_eq!(ev("size_class"), "16-256 MiB", "128 MiB copies");
    assert_eq!(ev("pinned_gbps_in_class"), format!("{:.2}", pin_b as f64 / pin_ns as f64));
    // Pageable D2H took more than 30% of the GPU span: critical.
    assert!(page_ns * 10 >= span * 3, "{page_ns} of {span}");
    assert_eq!(f.severity.label(), "critical");
    assert!(f.message.starts_with("Pageable D2H copies"), "{}", f.message);
}

#[test]
fn the_shared_pageable_trace_does_not_lead_with_a_fix_its_own_what_if_prices_at_nothing() {
    // The shared H200 capture (a copy of ../shared/traces/h200/pageable.sqlite): SQL says
    // every H2D copy is from pageable memory, and each is followed on the launching
    // thread by a stream sync, the sync of PyTorch's blocking `.to()`.
    let path = crate::util::fixture("pageable.sqlite");
    let pageable = crate::util::sql_i64(
        &path,
        "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 1 AND srcKind = 0",
    );
    let h2d = crate::util::sql_i64(&path, "SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 1");
    assert_eq!((pageable, h2d), (66, 66));
    let a = lanescope::analyze(&lanescope::load(&path).unwrap(), &lanescope::Options::default());
    // Its steps wait for the input pipeline: pinning alone is priced at nothing, so the
    // pinned-memory advice is neither the headline nor critical (issue 32: no fix beside
    // a what-if that contradicts it).
    let pin = |f: &lanescope::Finding| f.whatif.as_ref().is_some_and(|w| w.fix == lanescope::Fix::PinMemory);
    let priced: Vec<_> = a.findings.iter().filter(|f| pin(f)).collect();
    assert!(!priced.is_empty());
    for f in priced {
        let w = f.whatif.as_ref().unwrap();
        assert!(w.saving_per_step_ns == 0 && w.limited_by == "input pipeline", "{w:?}");
        // The finding keeps the what-if that says so, and shows no fix beside it.
        assert!(f.fix.is_none() && f.severity != lanescope::Severity::Critical, "{f:?}");
    }
    // The headline is a fix its what-if prices above nothing.
    let head = &a.findings[0];
    assert!(head.fix.is_some() && head.whatif.as_ref().is_some_and(|w| w.saving_per_step_ns > 0), "{head:?}");
    // cuda_api_sync does not turn critical on the syncs of those copies alone.
    let sync = a.findings.iter().find(|f| f.rule.name() == "cuda_api_sync").unwrap();
    assert_ne!(sync.severity, lanescope::Severity::Critical, "{}", sync.message);
}

#[test]
fn weights_copied_from_pageable_memory_at_start_up_only_are_no_warning() {
    // r9_amp_scaler: SQL says the pageable H2D copies (the model's weights) all end before
    // the steady state, while the loop's batches come pinned and 2x faster or more.
    let path = crate::util::matrix_trace("r9_amp_scaler");
    let a = lanescope::analyze(&crate::util::load_warm(&path), &lanescope::Options::default());
    let last_pageable = crate::util::sql_i64(
        &path,
        "SELECT max(\"end\") FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind = 1 AND srcKind = 0",
    );
    assert!(last_pageable > 0 && last_pageable < a.windows.steady_start, "{last_pageable} {:?}", a.windows);
    let f = a.findings.iter().find(|f| f.rule.name() == "pageable_bandwidth").expect("the finding");
    let ev = |k: &str| f.evidence.iter().find(|(x, _)| x == k).map(|(_, v)| v.parse::<f64>().unwrap()).unwrap();
    assert!(ev("pinned_gbps_in_class") >= 2.0 * ev("pageable_gbps_in_class"));
    assert_eq!(f.severity.label(), "info", "{}", f.message);
    assert_ne!(a.findings[0].rule.name(), "pageable_bandwidth");
}
