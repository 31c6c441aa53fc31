//! `fmerge plan`'s flags: each one reaches the planner, each check refuses
//! its bad values with a cause and a fix, and the defaults are the
//! planner's own.

use super::*;
use clap::{Command, FromArgMatches as _};

/// `PlanFlags` from a command line, as `fmerge plan` reads it.
fn parse(args: &[&str]) -> Result<PlanFlags, clap::Error> {
    let command = PlanFlags::augment_args(Command::new("plan").no_binary_name(true));
    let matches = command.try_get_matches_from(args)?;
    PlanFlags::from_arg_matches(&matches)
}

/// Every flag of `PlanFlags` (as clap lists them: none can be forgotten),
/// given a value other than its default, changes what the planner is
/// given.
#[test]
fn every_plan_flag_reaches_the_planner() {
    let base = PlanFlags::default().planning();
    let command = PlanFlags::augment_args(Command::new("plan"));
    let mut seen = 0;
    for arg in command.get_arguments() {
        let long = format!("--{}", arg.get_long().expect("every plan flag is long"));
        let tried: Vec<Vec<String>> = if arg.get_action().takes_values() {
            let default = arg.get_default_values().first().cloned();
            let enumerated = arg
                .get_possible_values()
                .into_iter()
                .map(|v| v.get_name().to_string())
                .find(|v| Some(std::ffi::OsStr::new(v)) != default.as_deref());
            // A number every numeric check takes, and a set of names.
            let examples = enumerated.map_or(vec!["3".to_string(), "a,b".to_string()], |v| vec![v]);
            examples
                .into_iter()
                .map(|v| vec![long.clone(), v])
                .collect()
        } else {
            vec![vec![long.clone()]]
        };
        let flags = tried
            .iter()
            .find_map(|args| parse(&args.iter().map(String::as_str).collect::<Vec<_>>()).ok())
            .unwrap_or_else(|| panic!("{long}: no example value is valid: {tried:?}"));
        assert_ne!(
            flags.planning(),
            base,
            "{long} changes nothing the planner is given"
        );
        seen += 1;
    }
    assert_eq!(seen, 11, "every flag was tried");
}

/// The command line without plan flags plans as the planner's defaults
/// (`Constraints::default`, written apart from the flags) say.
#[test]
fn no_flag_plans_with_the_planners_defaults() {
    let Planning {
        constraints,
        hop_source,
        method,
        time_limit,
    } = PlanFlags::default().planning();
    assert_eq!(constraints, Constraints::default());
    assert!(
        hop_source.starts_with("the default, fmerge's bench"),
        "{hop_source}"
    );
    assert_eq!(method, Method::Auto);
    assert_eq!(time_limit, DEFAULT_TIME_LIMIT);
}

/// Each check, on a bad value: clap's usage error naming the flag, then
/// the check's cause and fix.
#[test]
fn each_check_refuses_a_bad_value_with_its_cause_and_fix() {
    for (args, cause, fix) in [
        (
            ["--max-memory", "512K"],
            "--max-memory: \"512K\" is not a Kubernetes quantity",
            "fix: write a number with one of the suffixes",
        ),
        (
            ["--max-total-cpu", "0"],
            "--max-total-cpu \"0\" is not more than zero",
            "fix: give a size above 0",
        ),
        (
            ["--min-gain-ms", "-1"],
            "--min-gain-ms -1 is below 0",
            "fix: give a number of 0 or more",
        ),
        (
            ["--min-calls-removed", "many"],
            "--min-calls-removed many is not a number",
            "fix: give a number of 0 or more",
        ),
        (
            ["--hop-ms", "0"],
            "--hop-ms 0 is no latency",
            "fix: give the latency of one gateway hop in milliseconds, more than 0",
        ),
        (
            ["--time-limit", "NaN"],
            "--time-limit NaN is no time",
            "fix: give the seconds the search may take, more than 0",
        ),
        (
            ["--time-limit", "1e30"],
            "--time-limit 1000000000000000000000000000000 is no time",
            "fix: give the seconds the search may take",
        ),
        (
            ["--keep-apart", "compose-post,"],
            "--keep-apart compose-post names fewer than two functions",
            "fix: name two or more, separated by commas: --keep-apart A,B",
        ),
        (
            ["--objective", "speed"],
            "invalid value 'speed' for '--objective <WHAT>'",
            "[possible values: latency, calls, memory, cost]",
        ),
        (
            ["--search", "fast"],
            "invalid value 'fast' for '--search <HOW>'",
            "[possible values: auto, exact, heuristic]",
        ),
    ] {
        // `--flag=VALUE`, so that a value such as -1 is not taken for a flag.
        let e = parse(&[&args.join("=")]).expect_err(&args.join(" "));
        use clap::error::ErrorKind::{InvalidValue, ValueValidation};
        assert!(
            matches!(e.kind(), InvalidValue | ValueValidation),
            "{args:?}: {:?}",
            e.kind()
        );
        let text = e.render().to_string();
        let long = args[0];
        assert!(
            text.starts_with(&format!("error: invalid value '{}' for '{long} ", args[1])),
            "{text}"
        );
        assert!(
            text.contains(cause) && text.contains(fix),
            "{args:?}:\n{text}"
        );
    }
}

#[test]
fn a_set_to_keep_apart_is_its_names() {
    let flags = parse(&["--keep-apart", " a, b,,c ", "--keep-apart=d,e"]).unwrap();
    assert_eq!(
        flags.planning().constraints.keep_apart,
        [vec!["a", "b", "c"], vec!["d", "e"]]
    );
}
