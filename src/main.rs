//! lanescope binary: parse the command line, run it, print errors on one line.

use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = lanescope::Cli::parse_args();
    match lanescope::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line: "lanescope: FILE: what is wrong" (the error chain joined by ": ").
            let msg = format!("{e:#}").replace(['\n', '\r'], " ");
            eprintln!("lanescope: {}", lanescope::sanitize(&msg));
            // `diff --fail-if` has its own codes (2 malformed, 3 a condition holds); else 1.
            e.downcast_ref::<lanescope::Exit>().map_or(ExitCode::FAILURE, |x| ExitCode::from(x.code))
        }
    }
}
