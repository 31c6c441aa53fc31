//! Stage 6: link the merged object into one native binary.
//!
//! The bitcode holds every crate of the functions, but not the standard
//! library, the allocator shim, or the native libraries the functions link.
//! Rather than a hand-written flag list, fmerge asks the active rustc how it
//! links an empty binary (`--print link-args`, with `-C save-temps` to keep
//! its allocator shim object) and splices in the merged object plus the union
//! of every function's native libraries (see [`loaded_libs`] for those no
//! build script reports).

use crate::toolchain::Toolchain;
use anyhow::{Context as _, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The native libraries the functions link, in link order, as cargo's
/// `rustc-link-lib` / `rustc-link-search` values (`KIND[:MODIFIERS]=VALUE`).
#[derive(Debug, Default, Clone)]
pub struct NativeLibs {
    /// The build scripts' libraries, then those of `#[link]` attributes
    /// ([`loaded_libs`]).
    pub libs: Vec<String>,
    pub search: Vec<String>,
}

/// How rustc links a binary on this host.
#[derive(Debug, Clone)]
pub struct Probe {
    env: Vec<(String, String)>,
    linker: String,
    /// rustc's arguments with its own objects and `-o` taken out; the merged
    /// objects go where the first of them was.
    before: Vec<String>,
    after: Vec<String>,
    /// The allocator shim (`__rust_alloc` and friends), kept from the probe.
    pub shim: PathBuf,
}

/// Compiles an empty binary in `dir` to learn rustc's link line.
pub fn probe(dir: &Path, toolchain: &Toolchain) -> Result<Probe> {
    probe_program(dir, toolchain, "fn main() {}\n")
}

/// rustc's allocator shim for a binary that sets its own
/// `#[global_allocator]`: it defines no `__rust_alloc` (the crate that sets
/// the allocator does), learnt as [`probe`] learns the default one.
pub fn global_allocator_shim(dir: &Path, toolchain: &Toolchain) -> Result<PathBuf> {
    let program =
        "#[global_allocator]\nstatic A: std::alloc::System = std::alloc::System;\nfn main() {}\n";
    Ok(probe_program(&dir.join("global-allocator"), toolchain, program)?.shim)
}

fn probe_program(dir: &Path, toolchain: &Toolchain, program: &str) -> Result<Probe> {
    let flags = ["-Cstrip=debuginfo", "-Csave-temps"];
    let line = link_line(dir, toolchain, "fmerge_probe", program, &flags)?;
    parse(&line, dir)
}

/// Builds `program` with rustc into `dir/<name>` (at -O3, with `flags`) and
/// returns the link line rustc printed.
fn link_line(
    dir: &Path,
    toolchain: &Toolchain,
    name: &str,
    program: &str,
    flags: &[&str],
) -> Result<String> {
    std::fs::create_dir_all(dir)?;
    let src = dir.join(format!("{name}.rs"));
    std::fs::write(&src, program)?;
    let out = Command::new(&toolchain.rustc)
        .current_dir(dir)
        .args(["--edition=2021", "--crate-type=bin", "-Copt-level=3"])
        .args(flags)
        .args(["--print=link-args", "--target", toolchain.triple.as_str()])
        .arg("-o")
        .arg(dir.join(name))
        .arg(&src)
        .output()
        .context("cannot run rustc to learn its link arguments")?;
    if !out.status.success() {
        bail!(
            "rustc could not link an empty program, so it cannot link the merged one either:\n{}\nfix: install a C toolchain rustc can link with (`apt-get install gcc`, which gives `cc`) and run fmerge again",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Parses rustc's printed command line: `ENV="v" … "cc" "arg" …`.
fn parse(printed: &str, dir: &Path) -> Result<Probe> {
    let line = printed
        .lines()
        .find(|l| l.contains("\"-o\""))
        .context("rustc printed no link line")?;
    let mut env = Vec::new();
    let mut words = Vec::new();
    for word in split_quoted(line) {
        match word {
            (Some(key), value) if words.is_empty() => env.push((key, value)),
            (None, value) => words.push(value),
            (Some(key), value) => words.push(format!("{key}={value}")),
        }
    }
    let Some((linker, args)) = words.split_first() else {
        bail!("rustc printed an empty link line")
    };
    let mut before = Vec::new();
    let mut after = Vec::new();
    let mut shim = None;
    let mut seen_object = false;
    let mut args = args.iter().peekable();
    while let Some(arg) = args.next() {
        if arg == "-o" {
            args.next();
            continue;
        }
        if arg.ends_with(".o") {
            let name = Path::new(arg)
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            // The probe's own code is `fmerge_probe.fmerge_probe.<h>-cgu.N.rcgu.o`;
            // the shim is the one other `.rcgu.o`; `symbols.o` only pins the probe's symbols.
            if name.ends_with(".rcgu.o") && !name.contains("-cgu.") {
                shim = Some(dir.join(arg));
            }
            seen_object = true;
            continue;
        }
        if seen_object {
            after.push(arg.clone())
        } else {
            before.push(arg.clone())
        }
    }
    let shim = shim.context("rustc's link line has no allocator shim object; this rustc links in a way fmerge does not know")?;
    Ok(Probe {
        env,
        linker: linker.clone(),
        before,
        after,
        shim,
    })
}

/// Splits `A="x" "cc" "-m64"` into `(Some("A"), "x")`, `(None, "cc")`, ….
fn split_quoted(line: &str) -> Vec<(Option<String>, String)> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    while chars.peek().is_some() {
        while chars.peek() == Some(&' ') {
            chars.next();
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '"' || c == ' ' {
                break;
            }
            key.push(c);
            chars.next();
        }
        if chars.peek() != Some(&'"') {
            if !key.is_empty() {
                out.push((None, key));
            }
            continue;
        }
        chars.next();
        let mut value = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\\' => value.extend(chars.next()),
                '"' => break,
                c => value.push(c),
            }
        }
        let key = key.strip_suffix('=').map(str::to_string);
        out.push((key, value));
    }
    out
}

/// `-L`/`-l` arguments for cargo's `rustc-link-search` / `rustc-link-lib` values.
pub fn native_args(native: &NativeLibs) -> Vec<String> {
    let mut args = Vec::new();
    for path in &native.search {
        let (kind, path) = path.split_once('=').unwrap_or(("all", path));
        if matches!(kind, "native" | "all" | "framework") {
            args.push(format!("-L{path}"));
        }
    }
    for lib in &native.libs {
        let (kind, name) = lib.split_once('=').unwrap_or(("dylib", lib));
        let (kind, modifiers) = kind.split_once(':').unwrap_or((kind, ""));
        let name = name.split(':').next().unwrap_or(name);
        // `+verbatim`: the file name as given (`-l:libz.so.1`), as rustc does.
        let name = if modifiers.contains("+verbatim") {
            format!(":{name}")
        } else {
            name.to_string()
        };
        match kind {
            "static" if modifiers.contains("+whole-archive") => {
                args.extend([
                    "-Wl,-Bstatic".into(),
                    "-Wl,--whole-archive".into(),
                    format!("-l{name}"),
                ]);
                args.extend(["-Wl,--no-whole-archive".into(), "-Wl,-Bdynamic".into()]);
            }
            "static" => args.extend([
                "-Wl,-Bstatic".into(),
                format!("-l{name}"),
                "-Wl,-Bdynamic".into(),
            ]),
            _ => args.push(format!("-l{name}")),
        }
    }
    args
}

/// Links `objects`, the archives `rlibs` (cargo's compiled crates, each
/// member linked if something needs it, as rustc links a crate's
/// dependencies) and the native libraries into `out`, with the symbol
/// policy in `version_script` (fmerge's is `linker-scripts/merged.ver`, which
/// the fmerge binary passes in).
pub fn link(
    probe: &Probe,
    objects: &[PathBuf],
    rlibs: &[PathBuf],
    native: &NativeLibs,
    version_script: &Path,
    out: &Path,
) -> Result<()> {
    let mut cmd = Command::new(&probe.linker);
    cmd.envs(probe.env.iter().map(|(k, v)| (k, v)));
    cmd.args(&probe.before).args(objects);
    if !rlibs.is_empty() {
        // A group: the rlibs call each other in any order.
        cmd.arg("-Wl,--start-group")
            .args(rlibs)
            .arg("-Wl,--end-group");
    }
    cmd.arg(&probe.shim)
        .args(native_args(native))
        .args(&probe.after);
    cmd.arg(format!("-Wl,--version-script={}", version_script.display()));
    cmd.arg("-o").arg(out);
    let output = cmd
        .output()
        .with_context(|| format!("cannot run the linker `{}`", probe.linker))?;
    if !output.status.success() {
        bail!(
            "the native link failed:\n{}\n\
             If a symbol is undefined, a function needs a native library that fmerge did not see: it links the libraries \
             build scripts report and the shared libraries the functions' own binaries load, not a static library named \
             only by `#[link(kind = \"static\")]`\nfix: have a build script print `cargo:rustc-link-lib=static=…`",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// The symbols that the build scripts' static libraries call but do not
/// define, each with the library that calls it: C code that calls a Rust
/// `#[no_mangle]` function by name. Such a symbol must keep its name.
pub fn undefined_in_static_libs(native: &NativeLibs) -> std::collections::BTreeMap<String, String> {
    let mut out = std::collections::BTreeMap::new();
    let dirs: Vec<PathBuf> = native
        .search
        .iter()
        .map(|s| PathBuf::from(s.rsplit_once('=').map_or(s.as_str(), |(_, p)| p)))
        .collect();
    for lib in &native.libs {
        let (kind, name) = lib.split_once('=').unwrap_or(("", lib));
        if kind.starts_with("dylib") || kind.starts_with("framework") {
            continue;
        }
        let name = name.split(':').next().unwrap_or(name);
        let Some(path) = dirs
            .iter()
            .map(|d| d.join(format!("lib{name}.a")))
            .find(|p| p.is_file())
        else {
            continue;
        };
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let Ok(archive) = goblin::archive::Archive::parse(&bytes) else {
            continue;
        };
        for member in archive.members() {
            let Ok(data) = archive.extract(member, &bytes) else {
                continue;
            };
            let Ok(elf) = goblin::elf::Elf::parse(data) else {
                continue;
            };
            for sym in elf.syms.iter().filter(|s| s.is_import() && s.st_name != 0) {
                if let Some(symbol) = elf.strtab.get_at(sym.st_name) {
                    out.entry(symbol.to_string())
                        .or_insert_with(|| format!("lib{name}.a"));
                }
            }
        }
    }
    out
}

/// The shared libraries the functions' own binaries load beyond those of
/// the standard library, in link order, as `dylib:+verbatim=<soname>`: the
/// ones a `#[link(name = "…")]` in any of their crates (or a linker argument)
/// brought in, which no build script reports.
///
/// Why the binaries: rustc puts these on the link line of each function's
/// own binary, but cargo does not re-run that link when the binary is up to
/// date, so the line is gone; the binary keeps the result (DT_NEEDED, in link
/// order). rustc links with `--as-needed`, so a library is there only if the
/// function's code uses it, and the merged binary holds that same code.
/// `linked` are the build scripts' libraries, already linked by name.
pub fn loaded_libs(
    binaries: &[PathBuf],
    linked: &[String],
    dir: &Path,
    toolchain: &Toolchain,
) -> Result<Vec<String>> {
    // A directory of its own: merges in one target dir may run at once.
    std::fs::create_dir_all(dir)?;
    let scratch = tempfile::tempdir_in(dir)?;
    let (std_names, std_sonames) = std_libs(scratch.path(), toolchain)?;
    let dylib_names = linked.iter().filter_map(|lib| {
        let (kind, name) = lib.split_once('=').unwrap_or(("dylib", lib));
        kind.starts_with("dylib")
            .then(|| name.split(':').next().unwrap_or(name))
    });
    let names: Vec<String> = std_names
        .into_iter()
        .chain(dylib_names.map(str::to_string))
        .collect();
    let known = |soname: &str| {
        std_sonames.iter().any(|s| s == soname)
            || names
                .iter()
                .any(|n| soname.starts_with(&format!("lib{n}.so")))
    };
    let mut libs = Vec::new();
    for binary in binaries {
        for soname in needed(binary)? {
            let lib = format!("dylib:+verbatim={soname}");
            if !known(&soname) && !libs.contains(&lib) {
                libs.push(lib);
            }
        }
    }
    Ok(libs)
}

/// The DT_NEEDED entries of an ELF binary, in order.
fn needed(binary: &Path) -> Result<Vec<String>> {
    let bytes =
        std::fs::read(binary).with_context(|| format!("cannot read {}", binary.display()))?;
    let elf = goblin::elf::Elf::parse(&bytes)
        .with_context(|| format!("{} is not an ELF binary", binary.display()))?;
    Ok(elf.libraries.iter().map(|l| l.to_string()).collect())
}

/// What the standard library links, from `fn main() {}` built in `dir`: the
/// `-l` names on rustc's link line (`gcc_s`, `m`, `c`, …; the probe's link
/// line has them too) and the binary's DT_NEEDED (the dynamic loader, say).
fn std_libs(dir: &Path, toolchain: &Toolchain) -> Result<(Vec<String>, Vec<String>)> {
    let line = link_line(dir, toolchain, "fmerge_empty", "fn main() {}\n", &[])?;
    let names = split_quoted(&line)
        .into_iter()
        .filter_map(|(_, word)| word.strip_prefix("-l").map(str::to_string))
        .collect();
    Ok((names, needed(&dir.join("fmerge_empty"))?))
}

#[cfg(test)]
mod tests;
