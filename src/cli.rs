//! Command line: parse arguments and dispatch to the viewer or a headless command.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};

use crate::analysis::{self, Options};
use crate::model::{Ns, Trace};
use crate::report::FormatArg;
use crate::text::parse_duration;
use crate::{diff, info, picture, reader, report};

/// Terminal viewer for NVIDIA Nsight Systems traces that says why the GPU is idle.
#[derive(Debug, Parser)]
#[command(name = "lanescope", version)]
#[command(override_usage = "lanescope [OPTIONS] [TRACE]...\n       lanescope [--no-cache] <COMMAND> ...")]
#[command(after_help = "With no TRACE, opens the demo trace embedded in the binary.\n\
Export a report first: nsys export --type sqlite report.nsys-rep")]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// nsys SQLite export(s) or .nsys-rep report(s) to open in the viewer; several (files,
    /// a directory, a glob) open on one timeline, one rank each.
    trace: Vec<PathBuf>,
    #[command(flatten)]
    analysis: AnalysisArgs,
    /// Leave the mouse to the terminal (no wheel zoom, clicks or drags in the viewer).
    #[arg(long)]
    no_mouse: bool,
    /// Read each trace itself: neither use nor write its column cache in
    /// `$XDG_CACHE_HOME/lanescope` (see docs/cache.md).
    #[arg(long, global = true)]
    no_cache: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Build a K-times larger export from a real one (for scaling measurements).
    #[command(hide = true)]
    Scale {
        /// Real nsys SQLite export to replicate.
        input: PathBuf,
        /// New file to write (must not exist).
        output: PathBuf,
        /// How many copies of the events.
        #[arg(long, default_value_t = 10)]
        factor: u32,
    },
    /// Explain GPU idle time: phases, transfers, gaps by cause, findings.
    Report {
        /// nsys SQLite export or .nsys-rep report; several (files, a directory, a glob)
        /// are the ranks of one job, on one timeline.
        #[arg(required = true)]
        trace: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = FormatArg::Text)]
        format: FormatArg,
        #[command(flatten)]
        analysis: AnalysisArgs,
        /// List every gap (JSON `gaps.all`, every row in text, Markdown and CSV).
        #[arg(long)]
        all_gaps: bool,
    },
    /// Compare two runs: overall and per-phase metrics, findings, a verdict; CI checks.
    Diff {
        /// nsys SQLite export of the first run.
        before: PathBuf,
        /// nsys SQLite export of the second run.
        after: PathBuf,
        /// Output format.
        #[arg(long, value_enum, default_value_t = FormatArg::Text)]
        format: FormatArg,
        #[command(flatten)]
        analysis: AnalysisArgs,
        /// Exit 3 when EXPR holds: `METRIC OP VALUE`, e.g. `idle_pct>20`,
        /// `phase:copy data.wall_ns>+10%` (docs/json.md lists the metrics). Repeatable.
        #[arg(long = "fail-if", value_name = "EXPR")]
        fail_if: Vec<String>,
        /// List every phase; by default the 50 with the most wall time (and those a
        /// --fail-if names) are listed and the others summed as `other_phases`.
        #[arg(long)]
        all_phases: bool,
        /// Open both runs in the viewer, stacked on one time axis and aligned at a step,
        /// with the per-phase delta table as a panel (`P`).
        #[arg(long, conflicts_with_all = ["fail_if", "format"])]
        view: bool,
        /// With --view: leave the mouse to the terminal.
        #[arg(long, requires = "view")]
        no_mouse: bool,
    },
    /// Draw the viewer's lanes for one window as an SVG image (GPU rows with their gaps,
    /// kernel and copy lanes, the CPU threads behind the gaps, NVTX phases, axis, legend).
    Snapshot {
        /// nsys SQLite export or .nsys-rep report; several are the ranks of one job.
        #[arg(required = true)]
        trace: Vec<PathBuf>,
        /// Window START+WIDTH, START from the trace's first event: `1.2s+50ms`, `0+2s`.
        #[arg(long, value_parser = parse_window, value_name = "START+WIDTH", group = "pick")]
        window: Option<(Ns, Ns)>,
        /// The N-th longest gap (from 1, as in the gap list), shown as the viewer's gap jump.
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..), group = "pick")]
        gap: Option<u32>,
        /// The first steady instance of this NVTX phase (grouped name, e.g. "step N").
        #[arg(long, value_name = "NAME", group = "pick")]
        phase: Option<String>,
        /// Picture size in pixels, WIDTHxHEIGHT, or WIDTH alone to fit the rows.
        #[arg(long, value_parser = parse_pixels, default_value = "1400")]
        size: picture::svg::Size,
        /// File to write (`.svg`; `-` for stdout).
        #[arg(short, long, value_name = "FILE.svg")]
        output: PathBuf,
        #[command(flatten)]
        analysis: AnalysisArgs,
    },
    /// Print what the export holds: versions, duration, processes, threads, GPUs, lanes.
    Info {
        /// nsys SQLite export or .nsys-rep report; several (files, a directory, a glob)
        /// are the ranks of one job, on one timeline.
        #[arg(required = true)]
        trace: Vec<PathBuf>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = InfoFormat::Text)]
        format: InfoFormat,
    },
    /// Measure load time (against SQLite's own scan), memory per event and frame times.
    Bench {
        /// nsys SQLite export.
        trace: PathBuf,
        /// Terminal size for the frame script, WIDTHxHEIGHT.
        #[arg(long, value_parser = parse_size, default_value = "200x60")]
        size: (u16, u16),
        /// Output format.
        #[arg(long, value_enum, default_value_t = InfoFormat::Text)]
        format: InfoFormat,
        /// Also measure the export replicated K times (built in a temporary directory
        /// with `lanescope scale`, then removed): adds a `scale` section.
        #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(1..))]
        scale_to: Option<u32>,
        /// Only the second open, from the cache entry the bench wrote (run by `bench` in
        /// a process of its own: its memory is the second open's alone).
        #[arg(long, hide = true, conflicts_with = "scale_to")]
        second_open: bool,
    },
    /// Profile a program with nsys and the flags lanescope needs, then open the report.
    #[command(after_help = "Example: lanescope record -o run -- python train.py\n\
The exit code is the profiled program's. nsys is $LANESCOPE_NSYS, else nsys on PATH.")]
    Record(crate::record::RecordArgs),
    /// Serve traces to an agent: a Model Context Protocol server on stdin and stdout.
    Mcp,
    /// Print a shell completion script: `lanescope completions bash > ~/.local/share/bash-completion/completions/lanescope`.
    Completions {
        /// Shell to complete in.
        shell: clap_complete::Shell,
    },
    /// Write the man pages (roff), one per command: `lanescope man ~/.cargo/share/man/man1`.
    Man {
        /// Directory to write `lanescope.1`, `lanescope-report.1`, ... into (made when
        /// missing); without it, `lanescope.1` goes to stdout.
        dir: Option<PathBuf>,
    },
}

/// Options shared by every command that analyzes.
#[derive(Debug, Args, Clone)]
struct AnalysisArgs {
    /// Shortest GPU idle stretch counted as a gap (e.g. 50us, 2ms, 1.5s).
    #[arg(long, value_parser = parse_duration, default_value = "100us")]
    min_gap: Ns,
    /// Keep NVTX range names exact (no `step 7` -> `step N` grouping).
    #[arg(long)]
    exact_names: bool,
    /// NVTX range that is one training or inference step (e.g. "step N"); chosen from
    /// the trace when not given.
    #[arg(long, value_name = "NAME", conflicts_with = "infer_steps")]
    step_phase: Option<String>,
    /// Infer the steps from the kernel sequence that repeats once per step, even where an
    /// NVTX range marks them (without one, they are inferred anyway).
    #[arg(long)]
    infer_steps: bool,
}

impl From<AnalysisArgs> for Options {
    fn from(a: AnalysisArgs) -> Self {
        Options {
            min_gap_ns: a.min_gap,
            exact_names: a.exact_names,
            step_phase: a.step_phase,
            infer_steps: a.infer_steps,
        }
    }
}

/// An error with its own exit code (`diff --fail-if`: 2 malformed, 3 a condition holds);
/// every other error exits 1.
#[derive(Debug)]
pub struct Exit {
    /// Process exit code.
    pub code: u8,
    /// What to print after `lanescope: `.
    pub message: String,
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Exit {}

/// Exit code of a malformed `--fail-if` expression.
pub(crate) const EXIT_MALFORMED: u8 = 2;
/// Exit code when a `--fail-if` condition holds.
pub(crate) const EXIT_CONDITION: u8 = 3;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum InfoFormat {
    Text,
    Json,
}

/// Parse a terminal size `WIDTHxHEIGHT`, e.g. `200x60`.
pub(crate) fn parse_size(s: &str) -> Result<(u16, u16), String> {
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(|| format!("'{s}' is not WIDTHxHEIGHT (e.g. 200x60)"))?;
    let parse = |v: &str| v.trim().parse::<u16>().ok().filter(|&n| (10..=1000).contains(&n));
    match (parse(w), parse(h)) {
        (Some(w), Some(h)) => Ok((w, h)),
        _ => Err(format!("'{s}' is not WIDTHxHEIGHT with sides from 10 to 1000")),
    }
}

/// Parse a snapshot window `START+WIDTH`: two durations (`0` allowed for START).
pub(crate) fn parse_window(s: &str) -> Result<(Ns, Ns), String> {
    let (a, b) = s.split_once('+').ok_or_else(|| format!("'{s}' is not START+WIDTH (e.g. 1.2s+50ms)"))?;
    let start = if a.trim() == "0" { 0 } else { parse_duration(a)? };
    Ok((start, parse_duration(b)?))
}

/// Parse a picture size `WIDTHxHEIGHT` or `WIDTH` in pixels (sides 100 to 20000).
pub(crate) fn parse_pixels(s: &str) -> Result<picture::svg::Size, String> {
    let parse = |v: &str| v.trim().parse::<u32>().ok().filter(|&n| (100..=20_000).contains(&n));
    let bad = || format!("'{s}' is not WIDTHxHEIGHT or WIDTH in pixels, sides from 100 to 20000");
    match s.split_once(['x', 'X']) {
        Some((w, h)) => {
            Ok(picture::svg::Size { width: parse(w).ok_or_else(bad)?, height: Some(parse(h).ok_or_else(bad)?) })
        }
        None => Ok(picture::svg::Size { width: parse(s).ok_or_else(bad)?, height: None }),
    }
}

impl Cli {
    /// Parse the process's arguments as [`Parser::parse`] does (exiting with clap's
    /// message and code on an error), and refuse the viewer's own options before a
    /// command: `--no-cache` is the one option that goes before or after a command.
    pub fn parse_args() -> Self {
        let cli = Self::parse();
        if let Err(e) = cli.check() {
            e.exit();
        }
        cli
    }

    // The viewer's arguments given with a command, which would otherwise be dropped
    // without a word (a command takes its options after its name).
    fn check(&self) -> Result<(), clap::Error> {
        if self.command.is_none() {
            return Ok(());
        }
        let a = &self.analysis;
        let given = [
            ("TRACE", !self.trace.is_empty()),
            ("--no-mouse", self.no_mouse),
            ("--min-gap", a.min_gap != Options::default().min_gap_ns),
            ("--exact-names", a.exact_names),
            ("--step-phase", a.step_phase.is_some()),
            ("--infer-steps", a.infer_steps),
        ];
        match given.iter().find(|g| g.1) {
            Some((name, _)) => Err(Self::command().error(
                clap::error::ErrorKind::ArgumentConflict,
                format!("{name} is the viewer's: with a command, put its options after the command's name"),
            )),
            None => Ok(()),
        }
    }
}

/// Run the parsed command line.
pub fn run(cli: Cli) -> Result<()> {
    reader::cache::set_enabled(!cli.no_cache);
    match cli.command {
        Some(Command::Info { trace, format }) => {
            let t = reader::load_inputs(&trace)?;
            // The steps as the report finds them: NVTX, the profiler, else the kernels
            // (those of the report's analysis when the cache keeps it).
            let one = reader::inputs::expand(&trace)?;
            let kept = report::single_file(&one).and_then(|f| report::cached_analysis(f, &Options::default()));
            let steps = kept.map_or_else(|| analysis::find_step_info(&t, &Options::default()), |a| a.steps);
            emit(|w| match format {
                InfoFormat::Text => info::write_text(w, &t, &steps),
                InfoFormat::Json => info::write_json(w, &t, &steps),
            })
        }
        Some(Command::Report { trace, format, analysis, all_gaps }) => {
            print_report(&trace, &analysis.into(), format.into(), all_gaps)
        }
        Some(Command::Diff { before, after, analysis, view: true, no_mouse, .. }) => {
            view_diff(before, after, analysis.into(), crate::tui::Settings { mouse: !no_mouse })
        }
        Some(Command::Diff { before, after, format, analysis, fail_if, all_phases, .. }) => {
            print_diff(&before, &after, &analysis.into(), format.into(), &fail_if, all_phases)
        }
        Some(Command::Snapshot { trace, window, gap, phase, size, output, analysis }) => {
            let pick = match (window, gap, phase) {
                (Some((start, width)), _, _) => picture::Pick::Window { start, width },
                (_, Some(n), _) => picture::Pick::Gap(n as usize),
                (_, _, Some(name)) => picture::Pick::Phase(name),
                _ => picture::Pick::All,
            };
            snapshot(&trace, &analysis.into(), &pick, size, &output)
        }
        Some(Command::Bench { trace, size, second_open: true, .. }) => {
            let s = crate::bench::second_open(&trace, size)?;
            emit(|w| crate::text::write_json(w, &s))
        }
        Some(Command::Bench { trace, size, format, scale_to, .. }) => {
            let exe = std::env::current_exe().context("finding this program to run the second open")?;
            let mut b = crate::bench::run(&trace, size, (!cli.no_cache).then_some(exe.as_path()))?;
            if let Some(k) = scale_to {
                let exe = std::env::current_exe().context("finding this program to run the scaled bench")?;
                crate::bench::scale_to(&mut b, &trace, k, size, &exe)?;
            }
            emit(|w| match format {
                InfoFormat::Text => crate::bench::write_text(w, &b),
                InfoFormat::Json => crate::bench::write_json(w, &b),
            })
        }
        Some(Command::Scale { input, output, factor }) => crate::scale::scale(&input, &output, factor),
        Some(Command::Completions { shell }) => emit(|w| {
            clap_complete::generate(shell, &mut Cli::command(), "lanescope", w);
            Ok(())
        }),
        Some(Command::Record(args)) => record(&args),
        Some(Command::Mcp) => crate::mcp::serve(std::io::stdin().lock(), std::io::stdout().lock()),
        Some(Command::Man { dir: None }) => emit(|w| clap_mangen::Man::new(Cli::command()).render(w)),
        Some(Command::Man { dir: Some(dir) }) => man_pages(&dir),
        None => view(&cli.trace, cli.analysis.into(), crate::tui::Settings { mouse: !cli.no_mouse }),
    }
}

// Every command's man page into `dir`, made when missing.
fn man_pages(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("{}: cannot make the directory", dir.display()))?;
    clap_mangen::generate_to(Cli::command(), dir)
        .with_context(|| format!("{}: cannot write the man pages", dir.display()))?;
    eprintln!("man pages written to {}", crate::text::sanitize(&dir.display().to_string()));
    Ok(())
}

// Record, open the report (viewer or `--report`), then end with the program's exit code.
fn record(args: &crate::record::RecordArgs) -> Result<()> {
    let r = crate::record::record(args)?;
    let options = Options::default();
    match args.report {
        Some(format) => print_report(std::slice::from_ref(&r.report), &options, format.into(), false)?,
        None => view(std::slice::from_ref(&r.report), options, crate::tui::Settings { mouse: true })?,
    }
    if r.code == 0 {
        return Ok(());
    }
    let message = format!("the profiled program exited with code {}", r.code);
    Err(Exit { code: r.code.clamp(1, 255) as u8, message }.into())
}

fn print_report(traces: &[PathBuf], options: &Options, format: report::Format, all_gaps: bool) -> Result<()> {
    let (t, a) = analyzed(traces, options, lanes_read_by(format))?;
    emit(|w| report::write_with(w, &t, &a, format, all_gaps))
}

fn snapshot(
    traces: &[PathBuf],
    options: &Options,
    pick: &picture::Pick,
    size: picture::svg::Size,
    out: &Path,
) -> Result<()> {
    if out.extension().is_some_and(|e| !e.eq_ignore_ascii_case("svg")) {
        bail!(
            "{}: snapshot writes SVG only (name the file .svg; a browser or `rsvg-convert` makes a PNG)",
            out.display()
        );
    }
    let (t, a) = analyzed(traces, options, report::Lanes::Read)?;
    let scene = picture::Scene::new(&t, &a);
    let span = scene
        .span(pick, size.width.saturating_sub(picture::svg::LABEL_W) as usize)
        .with_context(|| t.meta.path.clone())?;
    let svg = picture::svg::render(&scene, span, size, &t.meta.path);
    if out.as_os_str() == "-" {
        return emit(|w| w.write_all(svg.as_bytes()));
    }
    std::fs::write(out, svg).with_context(|| format!("writing {}", out.display()))
}

// What `report` and `diff` read of the lanes in `format`: HTML draws them (the pictures);
// the others print names, records and the analysis alone.
fn lanes_read_by(format: report::Format) -> report::Lanes {
    if format == report::Format::Html { report::Lanes::Read } else { report::Lanes::Unread }
}

// Load and analyze traces (the analysis kept in the cache when there is one:
// `report::load_analyzed`); a `--step-phase` that names no range is an error.
fn analyzed(traces: &[PathBuf], options: &Options, lanes: report::Lanes) -> Result<(Trace, analysis::Analysis)> {
    let (t, a) = report::load_analyzed(traces, options, lanes)?;
    if let (Some(want), None) = (&options.step_phase, &a.step_phase) {
        bail!("{}: no NVTX range named `{want}` (see the phases in `lanescope report`)", t.meta.path);
    }
    Ok((t, a))
}

fn print_diff(
    before: &Path,
    after: &Path,
    options: &Options,
    format: report::Format,
    fail_if: &[String],
    all_phases: bool,
) -> Result<()> {
    let (tb, ab) = analyzed(&[before.to_path_buf()], options, lanes_read_by(format))?;
    let (ta, aa) = analyzed(&[after.to_path_buf()], options, lanes_read_by(format))?;
    let (b, a) = (diff::Run { path: &tb.meta.path, analysis: &ab }, diff::Run { path: &ta.meta.path, analysis: &aa });
    let max = (!all_phases).then_some(diff::PHASES_LISTED);
    let d = diff::diff_listing(b, a, max, &|name| diff::fail_if::names_phase(fail_if, name));
    // Checked before anything is printed: a malformed condition prints only the error.
    let outcomes = diff::fail_if::check(fail_if, &d).map_err(|message| Exit { code: EXIT_MALFORMED, message })?;
    emit(|w| diff::write_as(w, &d, format, Some([(&tb, &ab), (&ta, &aa)])))?;
    let held: Vec<String> = outcomes.iter().filter(|o| o.holds).map(ToString::to_string).collect();
    if held.is_empty() {
        return Ok(());
    }
    Err(Exit { code: EXIT_CONDITION, message: format!("--fail-if held: {}", held.join("; ")) }.into())
}

// Without a terminal (piped, CI) the two-run view prints the text diff instead.
fn view_diff(before: PathBuf, after: PathBuf, options: Options, settings: crate::tui::Settings) -> Result<()> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        return print_diff(&before, &after, &options, report::Format::Text, &[], false);
    }
    crate::tui::run_pair(before, after, options, settings)
}

fn view(traces: &[PathBuf], options: Options, settings: crate::tui::Settings) -> Result<()> {
    if !std::io::stdout().is_terminal() || !std::io::stdin().is_terminal() {
        // Not a terminal (piped, CI): print the report instead of drawing a screen.
        if !traces.is_empty() {
            return print_report(traces, &options, report::Format::Text, false);
        }
        let t = reader::load_demo_with_progress(&reader::Progress::default())?;
        let a = analysis::analyze(&t, &options);
        return emit(|w| report::write_with(w, &t, &a, report::Format::Text, false));
    }
    // The viewer checks the file itself before the screen switches; several exports are
    // checked here, each error naming its file, and open as one group.
    let files = reader::inputs::expand(traces)?;
    let source = match files.as_slice() {
        [] => crate::tui::Source::Demo,
        [one] => crate::tui::Source::Path(one.clone()),
        many => {
            for f in many {
                reader::check_file(f).with_context(|| f.display().to_string())?;
            }
            crate::tui::Source::Path(reader::inputs::group(many))
        }
    };
    crate::tui::run(source, options, settings)
}

// Write to stdout through a buffer; a closed pipe (`| head`) ends quietly.
fn emit(f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    match f(&mut w).and_then(|()| w.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing output"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_shape_is_valid() {
        Cli::command().debug_assert();
    }
}
