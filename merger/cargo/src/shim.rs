//! The shim a merged binary of watchdog-process functions links
//! (`functions/shim`, the crate `fmerge-shim`): it starts a callee's `main`
//! in a process of its own, and answers in the pod the calls the members
//! make to each other through their own HTTP clients.
//!
//! Its table names each member's `main` symbol and the gateway URLs found in
//! the members' code, so it is compiled for each group: rustc on its own
//! (the shim is std only), its sources given as data by the binary crate,
//! the object cached under its content as the objects compiled from IR are.

use crate::objects::Cache;
use crate::resolve::{Form, Members};
use crate::toolchain::Toolchain;
use anyhow::{Context as _, Result, bail};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The environment variables that hold the gateway's URL in OpenFaaS
/// functions' code (of-watchdog's templates, faas-cli's, teams' own): a
/// member reading one of them calls the gateway it names.
pub const GATEWAY_VARS: &[&str] = &[
    "GATEWAY_URL",
    "OPENFAAS_URL",
    "OPENFAAS_GATEWAY",
    "gateway_url",
];

/// The parameters and result of a handler library's `handle` entry
/// (written by `workspace::handle`), as the shim's `Handle::call` has them.
const HANDLE_ARGS: &str = "(method: *const u8, method_len: usize, target: *const u8, \
    target_len: usize, headers: *const u8, headers_len: usize, body: *const u8, body_len: usize, \
    limit_ms: u64, ctx: *mut std::ffi::c_void, reply: crate::HandleReply) -> i32";
/// The parameters of a handle's `.now` entry (fmerge-shim's `HandleNow`).
const HANDLE_NOW_ARGS: &str = "(method: *const u8, method_len: usize, target: *const u8, \
    target_len: usize, headers: *const u8, headers_len: usize, body: *const u8, body_len: usize, \
    ctx: *mut std::ffi::c_void, done: crate::HandleDone) -> i32";

/// A source file of the shim crate, by its path inside the crate (`src/lib.rs`).
pub struct Source<'a> {
    pub path: &'a str,
    pub text: &'a str,
}

/// One member of the merged binary, for the shim's table.
pub struct Member {
    /// Its OpenFaaS name, which calls name.
    pub name: String,
    /// The symbol of its C `main` in the merged binary.
    pub main: String,
    /// Its of-watchdog mode: how a call to it is answered.
    pub mode: Mode,
    /// The symbol of its Rust `main` callable in the caller's process
    /// ([`fmerge_contract::run_symbol`]), where it may run there.
    pub run: Option<String>,
    /// The symbol of its handler library's `handle` entry
    /// ([`fmerge_contract::handle_symbol`]), for a callee in a
    /// handler-library template whose build exports one.
    pub handle: Option<String>,
    /// Whether the shim may start that `handle` on its caller's thread
    /// (the entry's `.now`), else only from a thread of its own.
    pub handle_now: bool,
}

/// The of-watchdog modes a watchdog-process member may run in (the shim's
/// `Mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// One process per request, stdout streamed back (of-watchdog's default).
    Streaming,
    /// One process per request, the whole reply buffered.
    Serializing,
    /// Its own server, started once, which of-watchdog proxies to.
    Http,
}

impl Mode {
    /// A member's mode: `http` for a function that serves HTTP itself,
    /// else the one of-watchdog's `mode` setting names (absent:
    /// streaming); the others are refused before the build
    /// (`stack_in::watchdog`).
    pub fn of(form: Form, setting: Option<&str>) -> Mode {
        match (form, setting) {
            (Form::Http, _) => Mode::Http,
            (_, Some("serializing")) => Mode::Serializing,
            _ => Mode::Streaming,
        }
    }
}

/// The members of a merge, the caller first: the caller's `main` starts
/// the binary, each callee's was renamed ([`fmerge_contract::main_symbol`]);
/// `modes` are the of-watchdog modes known, by function name;
/// `in_process`, the callees (by package) that run in the caller's process,
/// through their run entry ([`fmerge_contract::run_symbol`]); `handles`, the
/// callees whose handler library's `handle` the build exports;
/// `handle_elsewhere`, those of them whose `handle` may not be started on
/// its caller's thread.
pub fn members(
    members: &Members,
    modes: &BTreeMap<String, String>,
    in_process: &BTreeSet<String>,
    handles: &BTreeSet<String>,
    handle_elsewhere: &BTreeSet<String>,
) -> Vec<Member> {
    members
        .functions()
        .map(|f| Member {
            name: fmerge_contract::function_name(&f.name),
            main: match f.name == members.caller.name {
                true => "main".to_string(),
                false => fmerge_contract::main_symbol(&f.name),
            },
            mode: Mode::of(f.form, modes.get(&f.name).map(String::as_str)),
            // The caller's own `main` runs as the binary's: never a run entry.
            run: (f.name != members.caller.name && in_process.contains(&f.name))
                .then(|| fmerge_contract::run_symbol(&f.name)),
            handle: (f.name != members.caller.name && handles.contains(&f.name))
                .then(|| fmerge_contract::handle_symbol(&f.name)),
            handle_now: !handle_elsewhere.contains(&f.name),
        })
        .collect()
}

/// A rewrite the shim applies in one member's process: a host name or an
/// absolute file path FROM used as TO (`fmerge-shim`'s `rewrite`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RuntimeRewrite {
    /// The member's OpenFaaS name.
    pub member: String,
    pub from: String,
    pub to: String,
}

/// The generated `src/table.rs`: the caller, every member and its `main`,
/// the gateway URLs and variables, the members' rewrites, the variables
/// the caller's own deployment sets (`caller_env`), which the members'
/// processes do not see, and whether a call between members may run on the
/// calling thread (`inline`).
pub fn table(
    caller: &str,
    members: &[Member],
    gateway_urls: &[String],
    rewrites: &[RuntimeRewrite],
    caller_env: &[String],
    inline: bool,
) -> String {
    let mut s = String::from(
        "//! The members of this merged binary (generated by fmerge).\n\
         use crate::rewrite::Rewrite;\n\
         use crate::{Member, Mode};\n",
    );
    let _ = writeln!(s, "pub(crate) static CALLER: &str = {caller:?};");
    s.push_str("pub(crate) static MEMBERS: &[Member] = &[\n");
    for (i, m) in members.iter().enumerate() {
        let _ = writeln!(
            s,
            "    Member {{ name: {:?}, main: m{i}, mode: Mode::{:?}, run: {}, handle: {} }},",
            m.name,
            m.mode,
            match m.run {
                Some(_) => format!("Some(r{i})"),
                None => "None".to_string(),
            },
            match m.handle {
                Some(_) if m.handle_now => {
                    format!("Some(crate::Handle {{ call: h{i}, now: Some(n{i}), shape: s{i} }})")
                }
                Some(_) => format!("Some(crate::Handle {{ call: h{i}, now: None, shape: s{i} }})"),
                None => "None".to_string(),
            }
        );
    }
    s.push_str("];\nunsafe extern \"C\" {\n");
    for (i, m) in members.iter().enumerate() {
        let _ = writeln!(
            s,
            "    #[link_name = {:?}] fn m{i}(argc: i32, argv: *const *const u8) -> i32;",
            m.main
        );
    }
    s.push_str("}\nunsafe extern \"C-unwind\" {\n");
    for (i, m) in members.iter().enumerate() {
        if let Some(run) = &m.run {
            let _ = writeln!(s, "    #[link_name = {run:?}] fn r{i}() -> i32;");
        }
    }
    s.push_str("}\nunsafe extern \"C\" {\n");
    for (i, m) in members.iter().enumerate() {
        if let Some(handle) = &m.handle {
            let _ = writeln!(s, "    #[link_name = {handle:?}] fn h{i}{HANDLE_ARGS};");
            let _ = writeln!(
                s,
                "    #[link_name = \"{handle}.now\"] fn n{i}{HANDLE_NOW_ARGS};"
            );
            let _ = writeln!(s, "    #[link_name = \"{handle}.shape\"] fn s{i}() -> i32;");
        }
    }
    s.push_str("}\n");
    let _ = writeln!(
        s,
        "pub(crate) static GATEWAY_URLS: &[&str] = &{gateway_urls:?};"
    );
    let _ = writeln!(
        s,
        "pub(crate) static GATEWAY_VARS: &[&str] = &{GATEWAY_VARS:?};"
    );
    let _ = writeln!(
        s,
        "pub(crate) static CALLER_ENV: &[&str] = &{caller_env:?};"
    );
    s.push_str("pub(crate) static REWRITES: &[Rewrite] = &[\n");
    for r in rewrites {
        let _ = writeln!(
            s,
            "    Rewrite {{ member: {:?}, from: {:?}, to: {:?} }},",
            r.member, r.from, r.to
        );
    }
    s.push_str("];\n");
    let _ = writeln!(s, "pub(crate) static INLINE_CALLS: bool = {inline};");
    s
}

/// The shim's object for `table`, from the cache or compiled now into it
/// (`settings`: what identifies the toolchain and codegen, as for the
/// objects compiled from IR), using `work` for the sources.
pub fn compile(
    toolchain: &Toolchain,
    sources: &[Source],
    table: &str,
    settings: &[String],
    cache: &Cache,
    work: &Path,
) -> Result<PathBuf> {
    compiled(
        &OBJECT,
        toolchain,
        sources,
        Some(table),
        settings,
        (cache, work),
    )
}

/// The warm-start launcher's file name, beside a merged binary that
/// of-watchdog starts per request (the shim's `warm` module says why).
pub const LAUNCHER: &str = "fmerge-warm";

/// The warm-start launcher, a static executable (its own start costs no
/// dynamic loading), from the cache or compiled now into it; arguments as
/// for [`compile`].
pub fn compile_launcher(
    toolchain: &Toolchain,
    sources: &[Source],
    settings: &[String],
    cache: &Cache,
    work: &Path,
) -> Result<PathBuf> {
    compiled(
        &LAUNCHER_BIN,
        toolchain,
        sources,
        None,
        settings,
        (cache, work),
    )
}

/// Refuses, before cargo builds, a machine whose C toolchain cannot link
/// the launcher for `caller` (a watchdog-process caller) statically: the
/// static C library is often left out of a minimal one.
pub fn check_launcher_links(caller: &str) -> Result<()> {
    let found = Command::new("cc")
        .arg("-print-file-name=libc.a")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    match found {
        Some(libc) if libc.is_absolute() && libc.exists() => Ok(()),
        _ => bail!(
            "{caller} is started by of-watchdog per request, and the warm-start launcher fmerge \
             writes for it links statically: this machine's C toolchain has no static C library \
             (`cc -print-file-name=libc.a` finds none)\nfix: install it (Debian: `apt-get install \
             libc6-dev`; `gcc` installed without recommends may lack it) and run fmerge again"
        ),
    }
}

/// What rustc compiles of the shim's sources: the crate root, in a folder
/// of its own under the merge's work folder, with these arguments.
struct Compiled {
    root: &'static str,
    dir: &'static str,
    what: &'static str,
    args: &'static [&'static str],
}

/// The shim's object, linked into the merged binary.
const OBJECT: Compiled = Compiled {
    root: "src/lib.rs",
    dir: "shim",
    what: "fmerge's shim for process-form functions",
    args: &[
        "--crate-type=lib",
        "--crate-name=fmerge_shim",
        "--emit=obj",
        "-Cpanic=unwind",
        "--cfg=fmerge_merged",
    ],
};

/// The launcher, std only and linked statically.
const LAUNCHER_BIN: Compiled = Compiled {
    root: "src/bin/fmerge-warm.rs",
    dir: "launcher",
    what: "fmerge's warm-start launcher",
    args: &[
        "--crate-type=bin",
        "--crate-name=fmerge_warm",
        "-Cpanic=abort",
        "-Ctarget-feature=+crt-static",
        "-Cstrip=symbols",
    ],
};

/// `what.root` of the shim's `sources` (with `table` written as
/// `src/table.rs`) compiled by rustc, cached under its inputs.
fn compiled(
    what: &Compiled,
    toolchain: &Toolchain,
    sources: &[Source],
    table: Option<&str>,
    settings: &[String],
    (cache, work): (&Cache, &Path),
) -> Result<PathBuf> {
    let texts: Vec<&[u8]> = sources
        .iter()
        .flat_map(|s| [s.path.as_bytes(), s.text.as_bytes()])
        .chain(table.map(str::as_bytes))
        .chain(what.args.iter().map(|a| a.as_bytes()))
        .chain([what.root.as_bytes()])
        .collect();
    let key = Cache::key(settings, &texts);
    if let Some(object) = cache.get(&key) {
        return Ok(object);
    }
    let dir = work.join(what.dir);
    let _ = std::fs::remove_dir_all(&dir);
    for source in sources {
        let path = dir.join(source.path);
        std::fs::create_dir_all(path.parent().context("a source in a folder")?)?;
        std::fs::write(&path, source.text)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    if let Some(table) = table {
        std::fs::write(dir.join("src/table.rs"), table)?;
    }
    cache.put(&key, |temp| {
        let output = Command::new(&toolchain.rustc)
            .args(["--edition", "2024"])
            .args(what.args)
            .args(["-C", "codegen-units=1", "-C", "opt-level=2"])
            .args(["--target", &toolchain.triple])
            .arg("-o")
            .arg(temp)
            .arg(dir.join(what.root))
            .output()
            .with_context(|| format!("cannot run `{}`", toolchain.rustc))?;
        if !output.status.success() {
            bail!(
                "rustc could not compile {}:\n{}",
                what.what,
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_each_members_main() {
        let members = [
            Member {
                name: "write-home-timeline".into(),
                main: "main".into(),
                mode: Mode::Streaming,
                run: None,
                handle: None,
                handle_now: true,
            },
            Member {
                name: "user-filter".into(),
                main: "fmerge.main.UserFilter".into(),
                mode: Mode::Serializing,
                run: Some("fmerge.run.UserFilter".into()),
                handle: None,
                handle_now: true,
            },
            Member {
                name: "tax".into(),
                main: "fmerge.main.tax".into(),
                mode: Mode::Http,
                run: Some("fmerge.run.tax".into()),
                handle: Some("fmerge.handle.tax".into()),
                handle_now: true,
            },
            Member {
                name: "price".into(),
                main: "fmerge.main.price".into(),
                mode: Mode::Http,
                run: Some("fmerge.run.price".into()),
                handle: Some("fmerge.handle.price".into()),
                handle_now: false,
            },
        ];
        let rewrites = [RuntimeRewrite {
            member: "user-filter".into(),
            from: "/var/openfaas/secrets/redis-password".into(),
            to: "/var/openfaas/secrets/uf-redis-password".into(),
        }];
        let table = table(
            "write-home-timeline",
            &members,
            &["http://gw:8080".into()],
            &rewrites,
            &["REDIS_HOST".into()],
            false,
        );
        assert!(table.contains(
            r#"Rewrite { member: "user-filter", from: "/var/openfaas/secrets/redis-password", to: "/var/openfaas/secrets/uf-redis-password" },"#
        ));
        assert!(table.contains(
            r#"Member { name: "user-filter", main: m1, mode: Mode::Serializing, run: Some(r1), handle: None }"#
        ));
        assert!(table.contains(
            r#"Member { name: "tax", main: m2, mode: Mode::Http, run: Some(r2), handle: Some(crate::Handle { call: h2, now: Some(n2), shape: s2 }) }"#
        ));
        assert!(table.contains(r#"#[link_name = "fmerge.handle.tax"] fn h2(method: *const u8,"#));
        assert!(table.contains(r#"#[link_name = "fmerge.handle.tax.shape"] fn s2() -> i32;"#));
        assert!(
            table.contains(r#"#[link_name = "fmerge.handle.tax.now"] fn n2(method: *const u8,"#)
        );
        assert!(table.contains(r#"#[link_name = "fmerge.main.UserFilter"] fn m1("#));
        assert!(table.contains(r#"#[link_name = "fmerge.run.UserFilter"] fn r1() -> i32;"#));
        assert!(table.contains(r#"run: None, handle: None }"#));
        assert!(table.contains(r#"GATEWAY_URLS: &[&str] = &["http://gw:8080"];"#));
        assert!(table.contains(r#""OPENFAAS_URL""#));
        assert!(table.contains(r#"CALLER_ENV: &[&str] = &["REDIS_HOST"];"#));
        assert!(table.contains("INLINE_CALLS: bool = false;"));
    }
}
