//! lanescope binary: parse the command line, run it, print errors on one line.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = lanescope::cli::Cli::parse();
    match lanescope::cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // One line: "lanescope: FILE: what is wrong" (the error chain joined by ": ").
            let msg = format!("{e:#}").replace(['\n', '\r'], " ");
            eprintln!("lanescope: {}", lanescope::report::sanitize(&msg));
            ExitCode::FAILURE
        }
    }
}
