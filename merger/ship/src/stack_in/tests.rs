//! The merged stack: what merge_into folds, what merged_all keeps; and
//! how of-watchdog runs a function its Dockerfile builds.

use super::*;

#[test]
fn a_plans_merged_stack_drops_what_the_plan_drops_and_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("provider:\n  name: openfaas\nfunctions:\n");
    for f in ["a", "b", "c", "d"] {
        text.push_str(&format!("  {f}:\n    image: x/{f}\n"));
    }
    let path = dir.path().join("stack.yml");
    std::fs::write(&path, text).unwrap();
    let stack = StackIn::load(&path).unwrap();
    // a's group holds b and c; the plan drops b (only a calls it), c
    // stays (another caller, say); d is no member.
    let mut spec = StackSpec::new(vec!["a".into(), "b".into(), "c".into()], "x/a-merged:1");
    spec.deployment
        .requests
        .insert("memory".into(), "40Mi".into());
    let merged = stack
        .merged_all(std::slice::from_ref(&spec), false, &["b".into()])
        .unwrap();
    let doc: Value = serde_yaml_ng::from_str(&merged).unwrap();
    let names: Vec<&str> = doc["functions"]
        .as_mapping()
        .unwrap()
        .keys()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(names, ["a", "c", "d"], "{merged}");
    assert_eq!(doc["functions"]["a"]["image"], "x/a-merged:1");
    assert_eq!(
        doc["functions"]["a"]["requests"]["memory"], "40Mi",
        "{merged}"
    );
    // --remove-callees drops every callee's entry.
    let all = stack.merged_all(&[spec], true, &[]).unwrap();
    assert!(!all.contains("  c:") && all.contains("  d:"), "{all}");
}

#[test]
fn limits_add_up_and_secrets_unite() {
    let e = |name: &str, mem: &str, secret: &str| Entry {
        name: name.into(),
        deployment: Deployment {
            limits: BTreeMap::from([("memory".into(), mem.into())]),
            secrets: vec![secret.into()],
            environment: BTreeMap::from([("REDIS_URL".into(), format!("redis://{name}"))]),
            ..Deployment::default()
        },
        ..Entry::default()
    };
    let mut spec = StackSpec::new(vec!["a".into(), "b".into()], "img:1");
    let notes = merge_into(&mut spec, &[e("a", "128Mi", "s1"), e("b", "64Mi", "s2")]);
    assert!(notes.is_empty(), "{notes:?}");
    assert_eq!(spec.deployment.limits["memory"], "192Mi");
    assert_eq!(spec.deployment.secrets, ["s1", "s2"]);
    assert_eq!(
        spec.deployment.environment,
        BTreeMap::from([("REDIS_URL".to_string(), "redis://a".to_string())])
    );
    assert_eq!(spec.callee_environment[0].key, "REDIS_URL");
    let notes = merge_into(
        &mut StackSpec::new(vec!["a".into(), "b".into()], "i:1"),
        &[e("a", "lots", "s"), e("b", "1Gi", "s")],
    );
    assert!(notes[0].contains("limits.memory"), "{notes:?}");
}

/// The ENV lines of a Dockerfile in the forms teams write them.
#[test]
fn a_dockerfile_says_fprocess_and_mode_in_every_env_form() {
    let env = |text: &str| dockerfile_env(text);
    let team = "FROM ghcr.io/openfaas/of-watchdog:0.11.6 AS watchdog\n\
                FROM rust:1-bookworm AS build\n\
                ENV fprocess=cargo-in-the-build-stage\n\
                RUN cargo build --release\n\
                FROM debian:bookworm-slim\n\
                COPY --from=watchdog /fwatchdog /usr/bin/fwatchdog\n\
                # ENV fprocess=commented-out\n\
                ENV fprocess=\"/usr/bin/WriteHomeTimeline\"\n\
                CMD [\"fwatchdog\"]\n";
    // The final stage's only: the build stage's ENV is not in the image.
    let e = env(team);
    assert_eq!(e["fprocess"], "/usr/bin/WriteHomeTimeline", "{e:?}");
    assert!(!e.contains_key("mode"));
    let e = env("from scratch\nenv fprocess WriteHomeTimeline --verbose\n");
    assert_eq!(e["fprocess"], "WriteHomeTimeline --verbose");
    let e = env("FROM x\nENV fprocess='./a b' mode=serializing \\\n    write_timeout=\"10s\"\n");
    assert_eq!(
        (
            e["fprocess"].as_str(),
            e["mode"].as_str(),
            e["write_timeout"].as_str()
        ),
        ("./a b", "serializing", "10s")
    );
    let e = env("FROM x\nENV fprocess=\"a \\\"q\\\" \\x\"\n");
    assert_eq!(e["fprocess"], "a \"q\" \\x");
    // A stage FROM an earlier one starts with its environment.
    let e = env("FROM x AS base\nENV mode=serializing\nFROM base\nENV fprocess=f\n");
    assert_eq!(
        (e["fprocess"].as_str(), e["mode"].as_str()),
        ("f", "serializing")
    );
}

/// The stack's environment wins over the Dockerfile's, as at run time;
/// `function_process` over `fprocess`, as of-watchdog reads them.
#[test]
fn the_stack_environment_wins_over_the_dockerfile() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("fn");
    std::fs::create_dir_all(&f).unwrap();
    std::fs::write(f.join("Cargo.toml"), "[package]\nname = \"Fn\"\n").unwrap();
    std::fs::write(
        f.join("Dockerfile"),
        "FROM scratch\nENV fprocess=Fn mode=serializing\nCMD [\"fwatchdog\"]\n",
    )
    .unwrap();
    let stack = |lang: &str, extra: &str| {
        let path = dir.path().join("stack.yml");
        std::fs::write(
            &path,
            format!(
                "provider: {{name: openfaas}}\nfunctions:\n  my-fn:\n    lang: {lang}\n    handler: ./fn\n{extra}"
            ),
        )
        .unwrap();
        StackIn::load(&path)
            .unwrap()
            .entry("my-fn")
            .unwrap()
            .watchdog
    };
    let w = stack("dockerfile", "").unwrap();
    assert_eq!(
        (w.fprocess.as_deref(), w.mode.as_str(), w.from.as_str()),
        (Some("Fn"), "serializing", "its Dockerfile")
    );
    let w = stack(
        "dockerfile",
        "    environment:\n      mode: streaming\n      function_process: ./Fn -v\n",
    )
    .unwrap();
    assert_eq!(
        (w.fprocess.as_deref(), w.mode.as_str()),
        (Some("./Fn -v"), "streaming")
    );
    assert_eq!((w.program(), w.arguments()), (Some("Fn"), "-v"));
    // Another lang's Dockerfile is its template's, not this folder's.
    assert_eq!(stack("rust", ""), None);
    // No mode anywhere: of-watchdog's default.
    let w = Watchdog::from_env(
        &BTreeMap::from([("fprocess".into(), "Fn".into())]),
        &BTreeMap::new(),
    );
    assert_eq!(w.unwrap().mode, DEFAULT_MODE);
}

/// Modes that are neither a process per request nor the function's own
/// server are refused naming the function, the mode and the fix; so is a
/// mode that does not fit the code, and an `fprocess` of another binary.
#[test]
fn foreign_modes_and_a_foreign_fprocess_are_refused() {
    let w = |fprocess: Option<&str>, mode: &str| Watchdog {
        fprocess: fprocess.map(str::to_string),
        mode: mode.into(),
        from: "its Dockerfile".into(),
    };
    let bins = ["UserFilter".to_string()];
    w(Some("/usr/bin/UserFilter"), "serializing")
        .check("user-filter", "UserFilter", &bins, None)
        .unwrap();
    w(Some("UserFilter"), "http")
        .check("user-filter", "UserFilter", &bins, Some("axum"))
        .unwrap();
    // Refused, its error saying every one of `says`.
    let refused = |fprocess: Option<&str>, mode: &str, server: Option<&str>, says: &[&str]| {
        let e = w(fprocess, mode)
            .check("user-filter", "UserFilter", &bins, server)
            .unwrap_err()
            .to_string();
        assert!(says.iter().all(|s| e.contains(s)), "{says:?} in {e}");
    };
    for mode in ["static", "inproc", "afterburn", "nonsense"] {
        let says = [
            "function user-filter runs in of-watchdog mode `",
            mode,
            "\nfix: leave user-filter out of the group",
        ];
        refused(Some("UserFilter"), mode, None, &says);
    }
    // `http` without a server crate, a server crate per request.
    let says = ["mode `http`", "depends on no crate"];
    refused(Some("UserFilter"), "http", None, &says);
    let says = [
        "serves HTTP itself (it depends on `axum`)",
        "\nfix: set `mode=http`",
    ];
    refused(Some("UserFilter"), "streaming", Some("axum"), &says);
    let says = ["runs `xargs`", "its package UserFilter (it has UserFilter)"];
    refused(Some("xargs cat"), "streaming", None, &says);
    let says = ["no `fprocess`", "\nfix: set `ENV fprocess="];
    refused(None, "streaming", None, &says);
}

/// A Dockerfile's `ENV`s are the function's environment under the stack's:
/// the merged image carries none of them, so the merged stack must, the
/// caller's under their names and each callee's namespaced.
#[test]
fn a_dockerfiles_env_is_the_functions_environment_under_the_stacks() {
    let dir = tempfile::tempdir().unwrap();
    for (folder, package, env) in [
        (
            "front",
            "Front",
            "ENV fprocess=Front RUST_LOG=info GREETING=hi",
        ),
        (
            "back",
            "Back",
            "ENV fprocess=Back mode=serializing exec_timeout=2s",
        ),
    ] {
        let f = dir.path().join(folder);
        std::fs::create_dir_all(&f).unwrap();
        std::fs::write(
            f.join("Cargo.toml"),
            format!("[package]\nname = \"{package}\"\n"),
        )
        .unwrap();
        std::fs::write(
            f.join("Dockerfile"),
            format!("FROM scratch\n{env}\nCMD [\"fwatchdog\"]\n"),
        )
        .unwrap();
    }
    let path = dir.path().join("stack.yml");
    std::fs::write(
        &path,
        "provider: {name: openfaas}\nfunctions:\n  front:\n    lang: dockerfile\n    handler: ./front\n    \
         environment:\n      GREETING: hello\n  back:\n    lang: dockerfile\n    handler: ./back\n",
    )
    .unwrap();
    let stack = StackIn::load(&path).unwrap();
    let (front, back) = (stack.entry("front").unwrap(), stack.entry("back").unwrap());
    let env = |e: &Entry| {
        e.deployment
            .environment
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
    };
    // The stack wins; the watchdog's own keys stay the image's.
    assert_eq!(env(&front), ["GREETING=hello", "RUST_LOG=info"]);
    assert_eq!(env(&back), ["exec_timeout=2s"]);
    assert_eq!(back.watchdog.as_ref().unwrap().mode, "serializing");
    let mut spec = StackSpec::new(vec!["front".into(), "back".into()], "i:1");
    merge_into(&mut spec, &[front, back]);
    assert_eq!(spec.deployment.environment["RUST_LOG"], "info");
    let callee: Vec<_> = spec
        .callee_environment
        .iter()
        .map(|c| (c.function.as_str(), c.key.as_str(), c.value.as_str()))
        .collect();
    assert_eq!(callee, [("back", "exec_timeout", "2s")]);
}
