//! The run entry at run time, on what rustc really builds: a program
//! compiled by the toolchain's rustc, optimized and not (the two shapes of
//! `main` that `run_entry` reads), goes through the crate passes as a
//! watchdog-process callee, is compiled to an object as the reuse path
//! compiles a crate, and is called from another binary as fmerge-shim
//! calls it (`extern "C-unwind" fn() -> i32`, under `catch_unwind`): its
//! output, its `Termination` as the exit code, and its panic unwinding to
//! the caller.
//!
//! Run: `cargo test --release -p fmerge-ir --test run_entry` (needs rustc
//! and `ar`).

use fmerge_ir::passes::{self, Crate, Facts, Found};
use fmerge_ir::{Context, Target, link, reuse};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// The callee: a whole program, reading its request from stdin.
const MEMBER: &str = r#"
use std::io::BufRead;
fn main() -> Result<(), String> {
    let line = std::io::stdin().lock().lines().next().unwrap().unwrap();
    match line.as_str() {
        "panic" => panic!("the member panicked"),
        "err" => Err("the member failed".into()),
        _ => {
            println!("the member read {line}");
            Ok(())
        }
    }
}
"#;

/// What the shim does with a run entry.
const DRIVER: &str = r#"
unsafe extern "C-unwind" {
    #[link_name = "fmerge.run.member"]
    fn run() -> i32;
}
fn main() {
    let code = std::panic::catch_unwind(|| unsafe { run() });
    println!("driver: {}", match code { Ok(c) => format!("exit code {c}"), Err(_) => "unwound".into() });
}
"#;

fn rustc() -> String {
    std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into())
}

fn run(cmd: &mut Command) {
    let out = cmd.output().expect("run rustc");
    assert!(
        out.status.success(),
        "{cmd:?}:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn host() -> String {
    let out = Command::new(rustc())
        .arg("-vV")
        .output()
        .expect("rustc -vV");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .expect("rustc names its host")
}

/// The member compiled with `opt` into `dir/libmember.a`, through the crate
/// passes as a watchdog-process callee of `caller`.
fn member(dir: &Path, opt: &str, triple: &str) {
    let source = dir.join("member.rs");
    std::fs::write(&source, MEMBER).unwrap();
    let bitcode = dir.join("member.bc");
    run(Command::new(rustc())
        .args([
            "--edition",
            "2024",
            "--crate-name",
            "member",
            "--crate-type",
            "bin",
        ])
        .args(["--emit=llvm-bc", "-C", "codegen-units=1", "-C", opt])
        .arg("-o")
        .arg(&bitcode)
        .arg(&source));
    let ctx = Context::create();
    let module = link::parse(&ctx, &std::fs::read(&bitcode).unwrap(), "member", &bitcode)
        .expect("rustc's bitcode parses");
    let facts = Facts {
        caller: "caller".into(),
        callees: vec!["member".into()],
        process: true,
        serving: Default::default(),
        ..Facts::default()
    };
    let owners = BTreeSet::from(["member".to_string()]);
    let krate = Crate {
        name: "member",
        package: "member",
        function: Some("member"),
        owners: &owners,
        local: true,
    };
    let mut found = Found::default();
    passes::on_crate(&module, &krate, &facts, &mut found).unwrap();
    assert_eq!(
        found.run_entries.get("member"),
        Some(&Ok(())),
        "{opt}: the run entry is made"
    );
    assert!(found.touched, "{opt}: the crate is compiled from its IR");
    let object = dir.join("member.o");
    let bitcode = module.write_bitcode_to_memory().as_slice().to_vec();
    let target = Target {
        triple,
        opt_level: 2,
    };
    reuse::compile(&[bitcode], "member", false, &target, &object).unwrap();
    let _ = std::fs::remove_file(dir.join("libmember.a"));
    run(Command::new("ar")
        .arg("crs")
        .arg(dir.join("libmember.a"))
        .arg(&object));
}

/// The driver's stdout and stderr for one request on stdin.
fn call(driver: &Path, request: &str) -> (String, String) {
    let mut child = Command::new(driver)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    writeln!(child.stdin.take().unwrap(), "{request}").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the driver itself ends well");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_entry_runs_the_users_main_in_both_shapes() {
    let triple = host();
    for opt in ["opt-level=3", "opt-level=0"] {
        let dir = tempfile::tempdir().unwrap();
        member(dir.path(), opt, &triple);
        let source = dir.path().join("driver.rs");
        std::fs::write(&source, DRIVER).unwrap();
        let driver = dir.path().join("driver");
        run(Command::new(rustc())
            .args([
                "--edition",
                "2024",
                "-C",
                "opt-level=1",
                "-l",
                "static=member",
                "-L",
            ])
            .arg(dir.path())
            .arg("-o")
            .arg(&driver)
            .arg(&source));

        let (stdout, _) = call(&driver, "hello");
        assert_eq!(
            stdout, "the member read hello\ndriver: exit code 0\n",
            "{opt}"
        );
        // `Err` is std's `Termination`: the error on stderr, exit code 1.
        let (stdout, stderr) = call(&driver, "err");
        assert_eq!(stdout, "driver: exit code 1\n", "{opt}");
        assert!(
            stderr.contains("Error: \"the member failed\""),
            "{opt}: {stderr}"
        );
        // A panic unwinds out of the entry, to the caller's catch_unwind.
        let (stdout, stderr) = call(&driver, "panic");
        assert_eq!(stdout, "driver: unwound\n", "{opt}");
        assert!(stderr.contains("the member panicked"), "{opt}: {stderr}");
    }
}
