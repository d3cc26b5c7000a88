//! Shell completions and the man page come from the clap definitions: smoke tests
//! that each generator runs and names the subcommands and the viewer's options.

use crate::util::lanescope;
use predicates::prelude::*;

#[test]
fn completions_for_bash_zsh_and_fish() {
    for (shell, marker) in [("bash", "complete -F"), ("zsh", "#compdef lanescope"), ("fish", "complete -c lanescope")] {
        lanescope()
            .args(["completions", shell])
            .assert()
            .success()
            .stdout(predicate::str::contains(marker))
            .stdout(predicate::str::contains("report"))
            .stdout(predicate::str::contains("no-mouse"));
    }
}

#[test]
fn unknown_shell_is_a_usage_error() {
    lanescope().args(["completions", "cmd.exe"]).assert().code(2);
}

#[test]
fn man_page_is_roff_with_every_command() {
    lanescope()
        .arg("man")
        .assert()
        .success()
        .stdout(predicate::str::starts_with(".ie"))
        .stdout(predicate::str::contains(".TH lanescope 1"))
        .stdout(predicate::str::contains("\\-\\-no\\-mouse"))
        .stdout(predicate::str::contains("completions"));
}
