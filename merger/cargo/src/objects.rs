//! Compiled objects for the reuse path: a cache of the objects fmerge
//! compiles from IR, keyed by their content (the module's bitcode and the
//! codegen settings), and the objects linked whole, taken out of their rlib
//! (the runtime's with the dispatch table made weak).
//!
//! The cache is shared by every merge in a target dir: re-merging after an
//! edit recompiles only the crates whose IR changed, and two groups that
//! merge the same callee compile its bin once.

use crate::artifact;
use anyhow::{Context as _, Result, bail};
use std::path::{Path, PathBuf};

/// How long an object no merge used stays in the cache.
pub const UNUSED_DAYS: u64 = 7;

/// The cache: `<target>/fmerge/objects/<key>.o`.
pub struct Cache {
    dir: PathBuf,
}

impl Cache {
    pub fn new(target_dir: &Path) -> Cache {
        Cache {
            dir: target_dir.join("fmerge").join("objects"),
        }
    }

    /// The key of the object compiled from `bitcode` (one module, or the
    /// modules linked in this order into one) with `settings` (the codegen
    /// settings and what identifies fmerge and rustc, one per line).
    pub fn key<B: AsRef<[u8]> + Sync>(settings: &[String], bitcode: &[B]) -> String {
        let labels: Vec<String> = (0..bitcode.len()).map(|i| format!("object {i}")).collect();
        crate::cache::key(settings, &labels, bitcode)
    }

    /// Where the object of `key` is (or goes).
    pub fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.o"))
    }

    /// The object of `key`, if it was compiled before; marked as used now,
    /// so that [`Cache::prune`] keeps it.
    pub fn get(&self, key: &str) -> Option<PathBuf> {
        let path = self.path(key);
        let file = std::fs::File::options().write(true).open(&path).ok()?;
        file.set_modified(std::time::SystemTime::now()).ok()?;
        Some(path)
    }

    /// Removes the objects no merge used for [`UNUSED_DAYS`]: every edit
    /// adds the edited crates' objects, so the cache would only grow.
    pub fn prune(&self) -> Result<()> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Ok(());
        };
        let horizon = std::time::Duration::from_secs(UNUSED_DAYS * 24 * 3600);
        for entry in entries {
            let entry = entry?;
            let unused = entry
                .metadata()?
                .modified()?
                .elapsed()
                .is_ok_and(|age| age > horizon);
            if unused && entry.path().extension().is_some_and(|e| e == "o") {
                // Another merge may remove it first.
                let _ = std::fs::remove_file(entry.path());
            }
        }
        Ok(())
    }

    /// Compiles the object of `key` with `compile` (given a temporary path)
    /// and moves it into place; merges running at once may both do it.
    pub fn put(&self, key: &str, compile: impl FnOnce(&Path) -> Result<()>) -> Result<PathBuf> {
        let path = self.path(key);
        let temp = artifact::temp_beside(&path)?;
        compile(&temp)?;
        artifact::commit(temp, &path, 0o644)
    }
}

/// The objects rustc compiled in `compiled` (an rlib, or one object),
/// written to `dir`, to be linked whole, with the definitions of `weak`
/// made weak (as `objcopy --weaken-symbol` does), so that a strong one
/// elsewhere wins the link while the rest is linked as rustc compiled it.
/// Fails unless exactly one object defines each of `weak` globally.
pub fn extracted(compiled: &Path, dir: &Path, weak: &[&str]) -> Result<Vec<PathBuf>> {
    let bytes =
        std::fs::read(compiled).with_context(|| format!("cannot read {}", compiled.display()))?;
    let name = compiled
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("object.o");
    let members: Vec<(&str, &[u8])> = match goblin::archive::Archive::parse(&bytes) {
        Ok(archive) => archive
            .members()
            .into_iter()
            // rustc's own code; a static native library bundled in the rlib
            // is linked as the build script reports it, as without reuse.
            .filter(|m| m.ends_with(".rcgu.o"))
            .map(|m| Ok((m, archive.extract(m, &bytes)?)))
            .collect::<Result<_, goblin::error::Error>>()
            .with_context(|| format!("cannot read the members of {}", compiled.display()))?,
        Err(_) => vec![(name, &bytes[..])],
    };
    std::fs::create_dir_all(dir)?;
    let mut objects = Vec::new();
    let mut weakened = vec![0; weak.len()];
    for (member, data) in members {
        let mut data = data.to_vec();
        for (symbol, n) in weak.iter().zip(&mut weakened) {
            *n += weaken(&mut data, symbol).with_context(|| {
                format!("{member} in {} is not an ELF object", compiled.display())
            })?;
        }
        objects.push(artifact::write(&dir.join(member), &data)?);
    }
    if let Some((symbol, n)) = weak.iter().zip(weakened).find(|(_, n)| *n != 1) {
        bail!(
            "{} defines `{symbol}` {n} times where fmerge expects one definition to make weak \
             (the runtime's `fmerge.routes`, a callee's `main`)\n\
             fix: check that the functions depend on one fmerge-runtime; `--lto fat` merges without linking cargo's objects",
            compiled.display()
        );
    }
    Ok(objects)
}

/// Makes `symbol`'s global definitions in the ELF64 object `data` weak;
/// returns how many there were.
fn weaken(data: &mut [u8], symbol: &str) -> Result<usize> {
    use goblin::elf::section_header::SHT_SYMTAB;
    use goblin::elf::sym::{STB_GLOBAL, STB_WEAK};
    let elf = goblin::elf::Elf::parse(data)?;
    if !elf.is_64 || !elf.little_endian {
        bail!("not a little-endian ELF64 object");
    }
    let Some(symtab) = elf.section_headers.iter().find(|s| s.sh_type == SHT_SYMTAB) else {
        return Ok(0);
    };
    let mut at = Vec::new();
    for (i, sym) in elf.syms.iter().enumerate() {
        let defined = sym.st_shndx != 0;
        if defined && sym.st_bind() == STB_GLOBAL && elf.strtab.get_at(sym.st_name) == Some(symbol)
        {
            // `st_info` is the byte after the 4-byte `st_name` of an Elf64_Sym.
            let offset = symtab.sh_offset as usize + i * symtab.sh_entsize as usize + 4;
            at.push((offset, (STB_WEAK << 4) | sym.st_type()));
        }
    }
    for &(offset, info) in &at {
        data[offset] = info;
    }
    Ok(at.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An object of `source` (C), compiled by `cc` in `dir`.
    fn object(dir: &Path, source: &str) -> PathBuf {
        let c = dir.join("t.c");
        std::fs::write(&c, source).unwrap();
        let o = dir.join("t.o");
        let ok = std::process::Command::new("cc")
            .args(["-c", "-o"])
            .arg(&o)
            .arg(&c)
            .status()
            .unwrap()
            .success();
        assert!(ok, "cc failed");
        o
    }

    #[test]
    fn the_table_is_made_weak_in_a_copy_and_only_it() {
        let dir = tempfile::tempdir().unwrap();
        let o = object(dir.path(), "long tbl[2] = {0, 0};\nlong other = 1;\n");
        let out = extracted(&o, &dir.path().join("out"), &["tbl"]).unwrap();
        let bytes = std::fs::read(&out[0]).unwrap();
        let elf = goblin::elf::Elf::parse(&bytes).unwrap();
        let bind = |name: &str| {
            let sym = elf
                .syms
                .iter()
                .find(|s| elf.strtab.get_at(s.st_name) == Some(name));
            sym.unwrap().st_bind()
        };
        assert_eq!(bind("tbl"), goblin::elf::sym::STB_WEAK);
        assert_eq!(bind("other"), goblin::elf::sym::STB_GLOBAL);
        let err = extracted(&o, &dir.path().join("out"), &["absent"]).unwrap_err();
        assert!(
            format!("{err:#}").contains("defines `absent` 0 times"),
            "{err:#}"
        );
    }

    #[test]
    fn objects_no_merge_used_for_a_week_are_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        for key in ["old", "new"] {
            cache.put(key, |p| Ok(std::fs::write(p, key)?)).unwrap();
        }
        let week = std::time::Duration::from_secs((UNUSED_DAYS + 1) * 24 * 3600);
        let file = std::fs::File::options()
            .write(true)
            .open(cache.path("old"))
            .unwrap();
        file.set_modified(std::time::SystemTime::now() - week)
            .unwrap();
        cache.prune().unwrap();
        assert!(cache.get("old").is_none());
        assert!(cache.get("new").is_some());
    }
}
