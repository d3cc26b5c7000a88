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

#[test]
fn man_dir_gets_a_page_per_command_made_where_asked() {
    use clap::CommandFactory;
    let tmp = tempfile::tempdir().unwrap();
    // A directory that does not exist yet, as on a fresh home.
    let dir = tmp.path().join("share/man/man1");
    lanescope().arg("man").arg(&dir).assert().success().stdout("");
    let commands: Vec<String> = lanescope::Cli::command()
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .collect();
    assert!(commands.iter().any(|c| c == "report"), "{commands:?}");
    let main = std::fs::read_to_string(dir.join("lanescope.1")).expect("lanescope.1");
    assert!(main.contains(".TH lanescope 1"));
    for c in &commands {
        let page = std::fs::read_to_string(dir.join(format!("lanescope-{c}.1")))
            .unwrap_or_else(|e| panic!("lanescope-{c}.1: {e}"));
        assert!(page.contains(&format!(".TH lanescope-{c} 1")), "lanescope-{c}.1 has no title:\n{page}");
        // The main page refers to each one.
        assert!(main.contains(&format!("lanescope\\-{c}(1)")), "lanescope.1 does not name lanescope-{c}(1)");
    }
    // Nothing else: no page for hidden commands.
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), commands.len() + 1);
}
