//! The shared libraries a dynamically linked binary loads, found the way `ldd` finds them.
//!
//! Why: the image is `FROM scratch`, so it holds nothing the binary does not bring.
//! A merged binary links glibc dynamically (`libc`, `libm`, `libgcc_s`, the loader
//! `/lib64/ld-linux-x86-64.so.2`), and glibc loads its NSS modules (`libnss_dns`,
//! `libnss_files`, `libresolv`) at run time with `dlopen`, which no `DT_NEEDED` entry
//! names: without them `gateway.openfaas` and other cluster DNS names do not resolve.
//! We read `PT_INTERP` and `DT_NEEDED` with `goblin` instead of running `ldd`, which
//! would execute the binary's loader.

use std::collections::{BTreeMap, VecDeque};
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use goblin::elf::Elf;

/// glibc's NSS and resolver modules: loaded with `dlopen`, so no ELF names them.
pub const NSS_LIBRARIES: &[&str] = &["libnss_dns.so.2", "libnss_files.so.2", "libresolv.so.2"];

/// The directories the glibc loader searches without `/etc/ld.so.cache`
/// (`ld.so --help` lists them as "system search path"). A scratch image has no
/// cache, so a library put anywhere else needs `LD_LIBRARY_PATH`.
pub const LOADER_SYSTEM_DIRS: &[&str] = &[
    "/lib/x86_64-linux-gnu",
    "/usr/lib/x86_64-linux-gnu",
    "/lib",
    "/usr/lib",
];

/// Where a library is put in the image when it was found outside the loader's system dirs.
pub const EXTRA_LIBRARY_DIR: &str = "/usr/local/lib/fmerge";

/// One file the binary needs at run time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedLib {
    /// The name the loader asks for (`libc.so.6`), or the interpreter's path.
    pub name: String,
    /// The absolute path inside the image.
    pub image_path: PathBuf,
    /// The real file on this machine (symlinks followed).
    pub host_path: PathBuf,
}

/// What [`resolve`] found.
#[derive(Debug, Clone, Default)]
pub struct Resolved {
    /// The interpreter, every `DT_NEEDED` library (transitively) and the NSS modules.
    pub libs: Vec<SharedLib>,
    /// True when a library had to go to [`EXTRA_LIBRARY_DIR`] (the image then sets
    /// `LD_LIBRARY_PATH`).
    pub needs_library_path: bool,
}

/// Finds every shared library `binary` (whose contents are `bytes`) loads on
/// this machine, plus the NSS modules. A static binary (no `PT_INTERP`, no
/// `DT_NEEDED`) needs none and gets an empty list.
pub fn resolve(binary: &Path, bytes: &[u8]) -> Result<Resolved> {
    let elf = Elf::parse(bytes).with_context(|| {
        format!(
            "{} is not an ELF executable\nfix: pass the Linux binary that `fmerge build` wrote (target/fmerge/<NAME>/<NAME>)",
            binary.display()
        )
    })?;
    let machine = elf.header.e_machine;
    let mut out = Resolved::default();
    let mut seen: BTreeMap<String, ()> = BTreeMap::new();

    let Some(interp) = elf.interpreter.map(str::to_owned) else {
        if elf.libraries.is_empty() {
            return Ok(out);
        }
        bail!(
            "{} names shared libraries but no program interpreter\nfix: link it as a normal dynamic executable or fully static",
            binary.display()
        );
    };
    let interp_host = fs::canonicalize(&interp).with_context(|| {
        format!("the program interpreter {interp} of {} is not on this machine\nfix: build the image on the machine (or an identical one) that linked the binary", binary.display())
    })?;
    out.libs.push(SharedLib {
        name: interp.clone(),
        image_path: PathBuf::from(&interp),
        host_path: interp_host,
    });
    // The loader itself answers to its file name too (libc names `ld-linux-x86-64.so.2`).
    if let Some(file) = Path::new(&interp).file_name().and_then(|f| f.to_str()) {
        seen.insert(file.to_owned(), ());
    }

    let origin = binary.parent().map(Path::to_path_buf).unwrap_or_default();
    let mut queue: VecDeque<(String, Vec<PathBuf>)> = VecDeque::new();
    let own_dirs = rpath_dirs(&elf, &origin);
    for lib in &elf.libraries {
        queue.push_back((lib.to_string(), own_dirs.clone()));
    }
    for lib in NSS_LIBRARIES {
        queue.push_back((lib.to_string(), Vec::new()));
    }
    let conf_dirs = ld_so_conf_dirs();

    while let Some((name, rpaths)) = queue.pop_front() {
        if seen.insert(name.clone(), ()).is_some() {
            continue;
        }
        let (found_dir, host) = find_library(&name, &rpaths, &conf_dirs, machine).with_context(|| {
            format!(
                "{} needs {name}, which is not installed on this machine\nfix: install the Debian package that ships it (`apt-file search {name}`), or link that library statically",
                binary.display()
            )
        })?;
        let in_system_dir = LOADER_SYSTEM_DIRS.iter().any(|d| Path::new(d) == found_dir);
        let image_dir = if in_system_dir {
            found_dir.clone()
        } else {
            out.needs_library_path = true;
            PathBuf::from(EXTRA_LIBRARY_DIR)
        };
        let real = fs::canonicalize(&host).with_context(|| {
            format!(
                "cannot follow {}\nfix: repair the broken symlink",
                host.display()
            )
        })?;
        let lib_bytes =
            fs::read(&real).with_context(|| format!("cannot read {}", real.display()))?;
        if let Ok(lib_elf) = Elf::parse(&lib_bytes) {
            let dirs = rpath_dirs(&lib_elf, real.parent().unwrap_or(Path::new("/")));
            for dep in &lib_elf.libraries {
                queue.push_back((dep.to_string(), dirs.clone()));
            }
        }
        out.libs.push(SharedLib {
            image_path: image_dir.join(&name),
            host_path: real,
            name,
        });
    }
    Ok(out)
}

/// `DT_RUNPATH`, or else `DT_RPATH`, with `$ORIGIN` expanded.
fn rpath_dirs(elf: &Elf<'_>, origin: &Path) -> Vec<PathBuf> {
    let list = if elf.runpaths.is_empty() {
        &elf.rpaths
    } else {
        &elf.runpaths
    };
    list.iter()
        .flat_map(|s| s.split(':'))
        .filter(|s| !s.is_empty())
        .map(|s| {
            let origin = origin.to_string_lossy();
            PathBuf::from(s.replace("${ORIGIN}", &origin).replace("$ORIGIN", &origin))
        })
        .collect()
}

/// The directories of `/etc/ld.so.conf` and its `include`s (one level of globs in
/// `ld.so.conf.d`, which is all Debian uses).
fn ld_so_conf_dirs() -> Vec<PathBuf> {
    fn read(path: &Path, out: &mut Vec<PathBuf>, depth: usize) {
        let Ok(text) = fs::read_to_string(path) else {
            return;
        };
        for line in text.lines() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            if let Some(pattern) = line.strip_prefix("include") {
                let pattern = pattern.trim();
                if depth > 3 {
                    continue;
                }
                let pattern = Path::new(pattern);
                let (Some(dir), Some(file)) = (pattern.parent(), pattern.file_name()) else {
                    continue;
                };
                let file = file.to_string_lossy();
                let suffix = file.strip_prefix('*').unwrap_or(&file).to_owned();
                let Ok(entries) = fs::read_dir(dir) else {
                    continue;
                };
                let mut confs: Vec<PathBuf> = entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.to_string_lossy().ends_with(&suffix))
                    .collect();
                confs.sort();
                for conf in confs {
                    read(&conf, out, depth + 1);
                }
            } else {
                out.push(PathBuf::from(line));
            }
        }
    }
    let mut dirs = Vec::new();
    read(Path::new("/etc/ld.so.conf"), &mut dirs, 0);
    dirs
}

/// Search order of the glibc loader: RUNPATH/RPATH, ld.so.conf (the cache), system dirs.
/// Candidates for another machine type (an i386 `libc.so.6`) are skipped.
fn find_library(
    name: &str,
    rpaths: &[PathBuf],
    conf_dirs: &[PathBuf],
    machine: u16,
) -> Result<(PathBuf, PathBuf)> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return Ok((p.parent().unwrap_or(Path::new("/")).to_path_buf(), p));
    }
    let system = LOADER_SYSTEM_DIRS.iter().map(PathBuf::from);
    for dir in rpaths
        .iter()
        .cloned()
        .chain(conf_dirs.iter().cloned())
        .chain(system)
    {
        let candidate = dir.join(name);
        if !candidate.exists() {
            continue;
        }
        let Ok(bytes) = fs::read(&candidate) else {
            continue;
        };
        let Ok(header) = Elf::parse_header(&bytes) else {
            continue;
        };
        if header.e_machine == machine {
            // Prefer the loader's own directory spelling when the dir is a symlink
            // of one (`/lib/x86_64-linux-gnu` and `/usr/lib/x86_64-linux-gnu` on merged-/usr).
            return Ok((dir, candidate));
        }
    }
    bail!(
        "{name} not found in RUNPATH, /etc/ld.so.conf or {}",
        LOADER_SYSTEM_DIRS.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_this_test_binary() {
        let exe = std::env::current_exe().unwrap();
        let r = resolve(&exe, &fs::read(&exe).unwrap()).unwrap();
        let names: Vec<&str> = r.libs.iter().map(|l| l.name.as_str()).collect();
        assert!(names.iter().any(|n| n.contains("ld-linux")), "{names:?}");
        assert!(names.contains(&"libc.so.6"), "{names:?}");
        assert!(names.contains(&"libnss_dns.so.2"), "{names:?}");
        for lib in &r.libs {
            assert!(lib.host_path.is_file(), "{lib:?}");
            assert!(lib.image_path.is_absolute(), "{lib:?}");
        }
    }

    #[test]
    fn not_an_elf_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("script");
        fs::write(&p, "#!/bin/sh\n").unwrap();
        let e = format!("{:#}", resolve(&p, b"#!/bin/sh\n").unwrap_err());
        assert!(e.contains("not an ELF"), "{e}");
    }
}
