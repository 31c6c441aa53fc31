//! Compiled objects for the reuse path: a cache of the objects fmerge
//! compiles from IR, keyed by their content (the module's bitcode and the
//! codegen settings), and the runtime's object taken out of its rlib with
//! the dispatch table made weak.
//!
//! The cache is shared by every merge in a target dir: re-merging after an
//! edit recompiles only the crates whose IR changed, and two groups that
//! merge the same callee compile its bin once.

use crate::artifact;
use anyhow::{Context as _, Result, bail};
use std::path::{Path, PathBuf};

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

    /// The key of the object compiled from `bitcode` with `settings` (the
    /// codegen settings and what identifies fmerge and rustc, one per line).
    pub fn key(settings: &[String], bitcode: &[u8]) -> String {
        crate::cache::key(settings, &["object".to_string()], &[bitcode])
    }

    /// Where the object of `key` is (or goes).
    pub fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.o"))
    }

    /// The object of `key`, if it was compiled before.
    pub fn get(&self, key: &str) -> Option<PathBuf> {
        Some(self.path(key)).filter(|p| p.is_file())
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

/// The objects of `compiled` (an rlib, or one object), written to `dir`,
/// with the definition of `symbol` made weak (as `objcopy --weaken-symbol`
/// does), so that a strong one elsewhere wins the link while the rest is
/// linked as rustc compiled it. Fails unless exactly one object defines
/// `symbol` globally.
pub fn weakened(compiled: &Path, symbol: &str, dir: &Path) -> Result<Vec<PathBuf>> {
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
            .filter(|m| m.ends_with(".o"))
            .map(|m| Ok((m, archive.extract(m, &bytes)?)))
            .collect::<Result<_, goblin::error::Error>>()
            .with_context(|| format!("cannot read the members of {}", compiled.display()))?,
        Err(_) => vec![(name, &bytes[..])],
    };
    std::fs::create_dir_all(dir)?;
    let (mut objects, mut weakened) = (Vec::new(), 0);
    for (member, data) in members {
        let mut data = data.to_vec();
        weakened += weaken(&mut data, symbol)
            .with_context(|| format!("{member} in {} is not an ELF object", compiled.display()))?;
        objects.push(artifact::write(&dir.join(member), &data)?);
    }
    if weakened != 1 {
        bail!(
            "{} defines `{symbol}` {weakened} times, where fmerge expects its runtime's one table.\n\
             Fix: check that the functions depend on one fmerge-runtime; `--lto fat` merges without linking cargo's objects.",
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
