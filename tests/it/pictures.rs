//! `snapshot` and `--format html`: gap rectangles where SQL over the export puts the
//! gaps, hostile names escaped, self-contained pages, and a real browser (headless
//! Chromium, skipped with a message where none is installed) that draws the gaps in the
//! gap colour at the expected x.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{EVIL, fixture, hostile_export, lanescope, sql};

/// `GAP_COLOUR` of the picture (`#d62728`).
const GAP_RGB: [u8; 3] = [0xd6, 0x27, 0x28];
/// The window of these tests: 20 s from the trace start (the demo lasts 9.3 s).
const SPAN_NS: f64 = 20e9;

fn demo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/demo.sqlite")
}

// The two longest GPU idle gaps (start, end) of a one-GPU export, straight from SQL: the
// holes between each operation and the latest end before it.
fn sql_gaps(path: &Path) -> Vec<(i64, i64)> {
    let q = "WITH ops AS (SELECT start, end FROM CUPTI_ACTIVITY_KIND_KERNEL
               UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMCPY
               UNION ALL SELECT start, end FROM CUPTI_ACTIVITY_KIND_MEMSET),
             r AS (SELECT start, MAX(end) OVER (ORDER BY start, end ROWS BETWEEN UNBOUNDED PRECEDING
                                                AND 1 PRECEDING) AS prev FROM ops)
             SELECT prev, start FROM r WHERE start - prev >= 100000 ORDER BY start - prev DESC LIMIT 2";
    let c = sql(path);
    let mut st = c.prepare(q).unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
}

fn snapshot(args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("s.svg");
    lanescope().arg("snapshot").args(args).arg("-o").arg(&out).assert().success();
    std::fs::read_to_string(&out).unwrap()
}

fn attr(tag: &str, name: &str) -> f64 {
    let at = tag.find(&format!(" {name}=\"")).unwrap_or_else(|| panic!("{name} in {tag}")) + name.len() + 3;
    tag[at..at + tag[at..].find('"').unwrap()].parse().unwrap()
}

// (x, width) of the gap rectangles, and the plot's left edge and width (the axis line).
fn layout(svg: &str) -> (Vec<(f64, f64)>, f64, f64) {
    let gaps = svg.split("<rect class=\"gap\"").skip(1).map(|t| (attr(t, "x"), attr(t, "width"))).collect();
    let axis = svg.split("<line").nth(1).expect("an axis line");
    (gaps, attr(axis, "x1"), attr(axis, "x2") - attr(axis, "x1"))
}

#[test]
fn snapshot_draws_the_sql_gaps_at_their_times() {
    let svg = snapshot(&[demo().to_str().unwrap(), "--window", "0+20s", "--size", "1400"]);
    let (mut rects, _, plot_w) = layout(&svg);
    let want = sql_gaps(&demo());
    rects.sort_by(|a, b| b.1.total_cmp(&a.1));
    let px = |ns: i64| ns as f64 / SPAN_NS * plot_w;
    // Widths are the gaps' lengths; the offset between the two is the offset of their starts.
    for (r, g) in rects.iter().zip(&want) {
        assert!((r.1 - px(g.1 - g.0)).abs() < 0.02, "{r:?} vs {g:?}");
    }
    assert!((rects[1].0 - rects[0].0 - px(want[1].0 - want[0].0)).abs() < 0.02);
}

#[test]
fn snapshot_of_gap_one_centres_the_longest_sql_gap() {
    let svg = snapshot(&[demo().to_str().unwrap(), "--gap", "1"]);
    let (rects, x0, plot_w) = layout(&svg);
    let g = sql_gaps(&demo())[0];
    let widest = rects.iter().copied().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
    // The viewer's gap jump: the gap fills the middle 3/5 of the width.
    assert!((widest.0 - (x0 + 0.2 * plot_w)).abs() < 1.0, "{widest:?}");
    assert!((widest.1 - 0.6 * plot_w).abs() < 1.0, "{widest:?}");
    assert!(svg.contains(&format!("idle {:.3} s", (g.1 - g.0) as f64 / 1e9)), "the label says the SQL length");
}

#[test]
fn snapshot_phase_shows_a_steady_step() {
    let svg = snapshot(&[demo().to_str().unwrap(), "--phase", "step N", "--size", "1200x600"]);
    assert!(svg.contains(">step 1<"), "the first steady step is drawn with its name");
    assert!(svg.contains("height=\"600\""));
}

#[test]
fn snapshot_refuses_bad_choices_with_one_line() {
    let d = demo();
    let d = d.to_str().unwrap();
    for (args, want) in [
        (vec![d, "--gap", "0", "-o", "x.svg"], "0"),
        (vec![d, "--gap", "1", "--phase", "x", "-o", "x.svg"], "cannot be used with"),
        (vec![d, "--gap", "9999", "-o", "x.svg"], "no gap 9999"),
        (vec![d, "--phase", "nope", "-o", "x.svg"], "no NVTX range named `nope`"),
        (vec![d, "-o", "x.png"], "SVG only"),
        (vec![d, "--window", "5ms", "-o", "x.svg"], "START+WIDTH"),
        (vec![d, "--size", "20x20", "-o", "x.svg"], "sides from 100"),
    ] {
        let out = lanescope().arg("snapshot").args(&args).assert().failure().get_output().stderr.clone();
        let err = String::from_utf8_lossy(&out);
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

// A copy of the hostile export whose names also carry markup.
fn hostile_with_markup(dir: &Path) -> PathBuf {
    let p = hostile_export(dir);
    let c = rusqlite::Connection::open(&p).unwrap();
    let evil = format!("<script>alert('x')</script>\"&{EVIL}");
    c.execute("UPDATE StringIds SET value = ?1 WHERE id = 1", [&evil]).unwrap();
    c.execute("UPDATE PROCESSES SET name = ?1", [&evil]).unwrap();
    c.execute("UPDATE NVTX_EVENTS SET text = ?1", [&evil]).unwrap();
    p
}

fn assert_clean(doc: &str) {
    for bad in ["<script", "\u{1b}", "\u{9b}", "\u{7}", "alert('x')", "\"&"] {
        assert!(!doc.contains(bad), "{bad:?} got through");
    }
    assert!(doc.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&quot;&amp;"), "names show, escaped");
}

#[test]
fn hostile_names_are_escaped_in_svg_and_html() {
    let dir = tempfile::tempdir().unwrap();
    let p = hostile_with_markup(dir.path());
    let p = p.to_str().unwrap();
    assert_clean(&snapshot(&[p, "--min-gap", "1us"]));
    let html = lanescope().args(["report", p, "--format", "html", "--min-gap", "1us"]).output().unwrap();
    assert!(html.status.success());
    assert_clean(&String::from_utf8(html.stdout).unwrap());
    let diff = lanescope().args(["diff", p, p, "--format", "html", "--min-gap", "1us"]).output().unwrap();
    assert!(diff.status.success());
    assert_clean(&String::from_utf8(diff.stdout).unwrap());
}

fn stdout(args: &[&str]) -> String {
    let o = lanescope().args(args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    String::from_utf8(o.stdout).unwrap()
}

// Nothing that a browser would fetch or run: the only URL is SVG's namespace name.
fn assert_self_contained(doc: &str) {
    assert!(doc.starts_with("<!DOCTYPE html>") && doc.trim_end().ends_with("</html>"));
    let urls = doc.matches("http").count();
    assert_eq!(urls, doc.matches("xmlns=\"http://www.w3.org/2000/svg\"").count(), "no link out");
    for bad in ["<script", "<link", "<img", "src=", "@import"] {
        assert!(!doc.contains(bad), "{bad}");
    }
}

#[test]
fn report_html_is_one_page_with_findings_tables_and_pictures() {
    let d = demo();
    let d = d.to_str().unwrap();
    let html = stdout(&["report", d, "--format", "html"]);
    assert_self_contained(&html);
    let json: serde_json::Value = serde_json::from_str(&stdout(&["report", d, "--format", "json"])).unwrap();
    for f in json["findings"].as_array().unwrap() {
        let fix = lanescope::sanitize(f["fix"].as_str().unwrap()).replace('\'', "&#39;").replace('"', "&quot;");
        assert!(html.contains(&fix), "the fix of {} is on the page", f["rule"]);
    }
    // Phase names from SQL (digits grouped as `N`) are table cells.
    let c = sql(&demo());
    let names: Vec<String> = c
        .prepare("SELECT DISTINCT text FROM NVTX_EVENTS WHERE text IS NOT NULL")
        .unwrap()
        .query_map([], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|n| group_digits(&n.unwrap()))
        .collect();
    for n in names {
        assert!(html.contains(&format!("<td>{n}</td>")), "{n}");
    }
    assert_eq!(html.matches("<svg").count(), 4, "the steady state and three gaps");
    // The answer leads: the headline (with the what-if of its fix, when priced), then the
    // steady-state picture, both before the first table.
    let first_table = html.find("<table").expect("tables");
    let headline = html.find("class=\"headline\"").expect("a headline");
    let steady = html.find("<svg").expect("a picture");
    assert!(headline < steady && steady < first_table, "headline {headline}, picture {steady}, table {first_table}");
    if let Some(w) = json["findings"][0]["evidence"]["whatif_fix"].as_str() {
        let box_end = headline + html[headline..].find("</p>").unwrap();
        assert!(html[headline..box_end].contains(&format!("what-if: {w} saves")), "the headline's what-if");
    }
    // Each distinct fix is written out once.
    let fixes: std::collections::BTreeSet<&str> = json["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["fix"].as_str())
        .filter(|f| !f.is_empty())
        .collect();
    for fix in fixes {
        let fix = lanescope::sanitize(fix).replace('\'', "&#39;").replace('"', "&quot;");
        assert_eq!(html.matches(&format!("fix: {fix}</div>")).count(), 1, "{fix}");
    }
}

// Every run of digits becomes `N` (`step 12` -> `step N`), as README says phases group.
fn group_digits(name: &str) -> String {
    let (mut out, mut digits) = (String::new(), false);
    for ch in name.chars() {
        if !ch.is_ascii_digit() {
            out.push(ch);
        } else if !digits {
            out.push('N');
        }
        digits = ch.is_ascii_digit();
    }
    out
}

#[test]
fn diff_html_stacks_both_runs_at_one_step() {
    let (b, a) = (fixture("pageable.sqlite"), fixture("pinned.sqlite"));
    let html = stdout(&["diff", b.to_str().unwrap(), a.to_str().unwrap(), "--format", "html"]);
    assert_self_contained(&html);
    let json: serde_json::Value =
        serde_json::from_str(&stdout(&["diff", b.to_str().unwrap(), a.to_str().unwrap(), "--format", "json"])).unwrap();
    let verdict = json["verdict"].as_str().unwrap().replace("->", "-&gt;");
    assert_eq!(html.matches(&verdict).count(), 1, "the verdict once");
    // Tables, not the text diff in a <pre>.
    assert!(html.contains("<table") && !html.contains("<pre"));
    assert_eq!(html.matches("aligned at its start, same scale").count(), 2);
    // Both aligned pictures show one span: the same scale.
    let spans: Vec<&str> = html.split("<svg").skip(1).take(2).map(|s| s.split(" · ").nth(1).unwrap()).collect();
    assert_eq!(spans[0].split(" from").next(), spans[1].split(" from").next());
}

// ---- a real browser ----

fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join("chromium")).find(|p| p.is_file())
}

// Render `file` in headless Chromium at `w`x`h` CSS pixels (scale 1) to a PNG.
fn screenshot(browser: &Path, file: &Path, w: u32, h: u32) -> PathBuf {
    let png = file.with_extension("png");
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(browser)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--force-device-scale-factor=1"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", png.display()))
        .arg(format!("--window-size={w},{h}"))
        .arg(format!("file://{}", file.display()))
        .output()
        .expect("chromium runs");
    assert!(png.exists(), "chromium wrote no PNG: {}", String::from_utf8_lossy(&out.stderr));
    png
}

#[test]
fn a_browser_draws_the_sql_gaps_in_the_gap_colour() {
    let Some(browser) = chromium() else {
        eprintln!(
            "SKIPPED a_browser_draws_the_sql_gaps_in_the_gap_colour: no `chromium` on PATH (apt-get install chromium)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let svg_path = dir.path().join("demo.svg");
    let d = demo();
    lanescope()
        .args(["snapshot", d.to_str().unwrap(), "--window", "0+20s", "--size", "1400x500", "-o"])
        .arg(&svg_path)
        .assert()
        .success();
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    let (_, x0, plot_w) = layout(&svg);
    let img = Png::read(&screenshot(&browser, &svg_path, 1400, 500));
    let px = |ns: i64| ns as f64 / SPAN_NS * plot_w;
    let gaps = sql_gaps(&d);
    // The first GPU row is the first row: its top 3 px sit above the gap's label.
    let y = 50;
    let widest = layout(&svg).0.into_iter().max_by(|a, b| a.1.total_cmp(&b.1)).unwrap();
    for (i, g) in gaps.iter().enumerate() {
        // x from SQL: the longest gap's left edge as drawn, plus the SQL offset.
        let left = widest.0 + px(g.0 - gaps[0].0);
        let mid = (left + px(g.1 - g.0) / 2.0).round() as u32;
        assert!(img.near(mid, y, GAP_RGB), "gap {i} at x {mid}: {:?}", img.rgb(mid, y));
    }
    // Left of the plot is the label column: never the gap colour.
    assert!(!img.near((x0 / 2.0) as u32, y, GAP_RGB));
}

#[test]
fn a_browser_renders_the_html_report_with_its_pictures() {
    let Some(browser) = chromium() else {
        eprintln!("SKIPPED a_browser_renders_the_html_report_with_its_pictures: no `chromium` on PATH");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("report.html");
    std::fs::write(&page, stdout(&["report", demo().to_str().unwrap(), "--format", "html"])).unwrap();
    let img = Png::read(&screenshot(&browser, &page, 1300, 6000));
    let red =
        (0..img.h).flat_map(|y| (0..img.w).map(move |x| (x, y))).filter(|&(x, y)| img.near(x, y, GAP_RGB)).count();
    assert!(red > 5_000, "gap-coloured pixels on the page: {red}");
}

/// A decoded 8-bit RGB or RGBA PNG (what Chromium writes), enough for the tests.
struct Png {
    w: u32,
    h: u32,
    channels: usize,
    data: Vec<u8>,
}

impl Png {
    fn read(path: &Path) -> Self {
        let bytes = std::fs::read(path).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        let (mut pos, mut idat, mut head) = (8, Vec::new(), None);
        while pos + 8 <= bytes.len() {
            let len = u32::from_be_bytes(bytes[pos..pos + 4].try_into().unwrap()) as usize;
            let kind = &bytes[pos + 4..pos + 8];
            let body = &bytes[pos + 8..pos + 8 + len];
            match kind {
                b"IHDR" => head = Some((be(&body[0..4]), be(&body[4..8]), body[8], body[9], body[12])),
                b"IDAT" => idat.extend_from_slice(body),
                _ => {}
            }
            pos += 12 + len;
        }
        let (w, h, depth, colour, interlace) = head.expect("IHDR");
        assert!(depth == 8 && (colour == 2 || colour == 6) && interlace == 0, "8-bit RGB(A), not interlaced");
        let channels = if colour == 6 { 4 } else { 3 };
        let mut raw = Vec::new();
        flate2::read::ZlibDecoder::new(&idat[..]).read_to_end(&mut raw).unwrap();
        Self { w, h, channels, data: unfilter(&raw, w as usize * channels, h as usize, channels) }
    }

    fn rgb(&self, x: u32, y: u32) -> [u8; 3] {
        let i = (y as usize * self.w as usize + x as usize) * self.channels;
        [self.data[i], self.data[i + 1], self.data[i + 2]]
    }

    fn near(&self, x: u32, y: u32, want: [u8; 3]) -> bool {
        self.rgb(x, y).iter().zip(want).all(|(&a, b)| a.abs_diff(b) <= 12)
    }
}

fn be(b: &[u8]) -> u32 {
    u32::from_be_bytes(b.try_into().unwrap())
}

// Undo PNG's per-row filters (none, sub, up, average, Paeth).
fn unfilter(raw: &[u8], stride: usize, h: usize, bpp: usize) -> Vec<u8> {
    let mut out = vec![0u8; stride * h];
    for y in 0..h {
        let (f, row) = (raw[y * (stride + 1)], &raw[y * (stride + 1) + 1..(y + 1) * (stride + 1)]);
        for x in 0..stride {
            let a = if x >= bpp { out[y * stride + x - bpp] } else { 0 };
            let b = if y > 0 { out[(y - 1) * stride + x] } else { 0 };
            let c = if x >= bpp && y > 0 { out[(y - 1) * stride + x - bpp] } else { 0 };
            let pred = match f {
                0 => 0,
                1 => a,
                2 => b,
                3 => a.midpoint(b),
                _ => paeth(a, b, c),
            };
            out[y * stride + x] = row[x].wrapping_add(pred);
        }
    }
    out
}

fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let p = i16::from(a) + i16::from(b) - i16::from(c);
    let (pa, pb, pc) = ((p - i16::from(a)).abs(), (p - i16::from(b)).abs(), (p - i16::from(c)).abs());
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}

// Issue 36, item 2: a 1 MiB thread and process name is cut in every gap's evidence, so
// the HTML report, the SVG and the JSON stay small; `info` still shows it whole.
#[test]
fn a_huge_thread_name_is_cut_in_evidence_and_pictures() {
    let d = tempfile::TempDir::new().unwrap();
    let p = hostile_export(d.path());
    let name = "\u{167}".repeat(1 << 20);
    crate::util::sql_exec(
        &p,
        &format!("UPDATE StringIds SET value = '{name}' WHERE id = 1; UPDATE PROCESSES SET name = '{name}';"),
    );
    let ps = p.to_str().unwrap();
    let long = "\u{167}".repeat(201);
    for args in [
        vec!["report", ps, "--format", "html", "--min-gap", "1us"],
        vec!["report", ps, "--format", "json", "--min-gap", "1us", "--all-gaps"],
        vec!["snapshot", ps, "--min-gap", "1us", "-o", "-"],
    ] {
        let out = lanescope().args(&args).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.len() < 256 << 10, "{args:?}: {} bytes", text.len());
        assert!(!text.contains(&long), "{args:?}: a name over 200 characters");
        assert!(text.contains(&format!("{}…", "\u{167}".repeat(199))), "{args:?}: the name is shown, cut");
    }
    let info = lanescope().args(["info", ps]).output().unwrap();
    assert!(String::from_utf8(info.stdout).unwrap().contains(&name), "info shows the whole name");
}
