//! Codegen of the reuse path (`--lto off` and `own`, see `fmerge_ir::reuse`):
//! the crates no pass changed link cargo's own objects; the others, and the
//! dispatch table, compile from IR, each to an object of its own (the joint
//! crates of `--lto own` to one together), kept in the object cache under
//! its content, so a re-merge compiles only what changed since.

use super::Merging;
use crate::pipeline::stages::StageTime;
use anyhow::{Context as _, Result, anyhow};
use fmerge_cargo::objects::{self, Cache};
use fmerge_cargo::shim;
use fmerge_cargo::{emit, resolve};
use fmerge_ir::{self as ir, reuse};
use std::collections::BTreeSet;
use std::path::PathBuf;

/// One object compiled from IR (or found in the cache).
struct FromIr {
    what: String,
    is_table: bool,
    why: &'static str,
    /// One module, or the joint crates' modules, linked when compiled.
    bitcode: Vec<Vec<u8>>,
    key: String,
}

impl Merging<'_> {
    /// The objects (compiled from IR, and the runtime's with its table made
    /// weak) and the rlibs the binary links.
    pub(super) fn compile_reusing(
        &mut self,
        merged: ir::MergedModule,
        emitted: &emit::Emitted,
    ) -> Result<(Vec<PathBuf>, Vec<PathBuf>)> {
        let stage = self
            .progress
            .stage("compiling what the merge changed", None);
        // The merged module is no longer needed: only its pieces compile.
        let ir::MergedModule { pieces, table, .. } = merged;
        let settings = self.object_settings();
        let (mut objects, mut rlibs, mut from_ir) = (Vec::new(), Vec::new(), Vec::new());
        let reused = pieces.iter().filter(|p| p.compiled.is_none()).count();
        let mut joint: Vec<(String, Vec<u8>)> = Vec::new();
        for piece in pieces {
            let unit = &emitted.units[piece.unit];
            let compiled = &unit.compiled;
            match piece.compiled {
                Some(c) if piece.joint => joint.push((unit.crate_name.clone(), c.bitcode)),
                Some(c) => from_ir.push(FromIr {
                    what: unit.crate_name.clone(),
                    is_table: false,
                    why: c.why,
                    key: Cache::key(&settings, &[&c.bitcode]),
                    bitcode: vec![c.bitcode],
                }),
                None if !piece.weaken.is_empty() || piece.keeps_used => {
                    let dir = self.work.join("reused");
                    objects.extend(objects::extracted(compiled, &dir, &piece.weaken)?);
                }
                None if compiled.extension().is_some_and(|e| e == "rlib") => {
                    rlibs.push(compiled.clone())
                }
                None => objects.push(compiled.clone()),
            }
        }
        if !joint.is_empty() {
            let (crates, bitcode): (Vec<_>, Vec<_>) = joint.into_iter().unzip();
            from_ir.push(FromIr {
                what: format!("{} (as one module)", crates.join(", ")),
                is_table: false,
                why: reuse::JOINT,
                key: Cache::key(&settings, &bitcode),
                bitcode,
            });
        }
        if let Some(table) = table {
            from_ir.push(FromIr {
                what: "the dispatch table".to_string(),
                is_table: true,
                why: "the merge fills it",
                key: Cache::key(&settings, &[&table]),
                bitcode: vec![table],
            });
        }
        let compiled = self.compile_missing(&from_ir)?;
        self.objects.prune()?;
        let list: Vec<String> = from_ir
            .iter()
            .map(|p| format!("{} ({})", p.what, p.why))
            .collect();
        self.progress
            .note(&format!("compiled from IR: {}", list.join(", ")));
        let summary = format!(
            "{} object(s) from IR ({compiled} compiled, {} cached), {} crate(s) linked from cargo's objects",
            from_ir.len(),
            from_ir.len() - compiled,
            reused,
        );
        objects.splice(0..0, from_ir.iter().map(|p| self.objects.path(&p.key)));
        let took = stage.done(&summary);
        // Nothing is optimized: all of codegen is emitting objects (as
        // `bench/run` reports it, beside the other path's "optimize").
        for stage in [super::CODEGEN, super::EMIT] {
            self.timings.push(StageTime { stage, took });
        }
        Ok((objects, rlibs))
    }

    /// Compiles the pieces the cache lacks (all of them with `--force`),
    /// largest first, on up to [`Merging::threads`] threads; returns how
    /// many it compiled, or the first piece's error.
    fn compile_missing(&self, pieces: &[FromIr]) -> Result<usize> {
        let missing: Vec<(u64, &FromIr)> = pieces
            .iter()
            .filter(|p| self.opts.force || self.objects.get(&p.key).is_none())
            .map(|p| (p.bitcode.iter().map(|b| b.len() as u64).sum(), p))
            .collect();
        let count = missing.len();
        let (target, cache) = (self.target(), &self.objects);
        let compiled = crate::pipeline::parallel::largest_first(missing, self.threads(), |p| {
            cache.put(&p.key, |temp| {
                reuse::compile(&p.bitcode, &p.what, p.is_table, &target, temp)
            })
        });
        for result in compiled {
            result.ok_or_else(|| anyhow!("LLVM crashed while compiling an object"))??;
        }
        Ok(count)
    }

    /// The shim's object for this group's members (`fmerge_cargo::shim`),
    /// with a note naming the gateways whose calls stay in the pod, one
    /// naming each call site the members' code makes and where it goes, and
    /// one per callee saying where it runs.
    pub(super) fn shim(&self, merged: &ir::MergedModule) -> Result<PathBuf> {
        let (gateway_urls, at_run_time) = (&merged.gateway_urls, &merged.at_run_time);
        let settings = self.object_settings();
        let in_process: BTreeSet<String> = merged
            .in_process
            .iter()
            .filter(|(_, verdict)| verdict.is_ok())
            .map(|(callee, _)| callee.clone())
            .collect();
        self.check_servers(merged)?;
        let elsewhere: BTreeSet<String> = merged.handle_elsewhere.keys().cloned().collect();
        let members = shim::members(
            &self.members,
            &self.modes,
            &in_process,
            self.handles,
            &elsewhere,
        );
        let rewrites: Vec<shim::RuntimeRewrite> = at_run_time
            .iter()
            .map(|r| shim::RuntimeRewrite {
                member: fmerge_contract::function_name(&r.callee),
                from: r.from.clone(),
                to: r.to.clone(),
            })
            .collect();
        let table = shim::table(
            &members[0].name,
            &members,
            gateway_urls,
            &rewrites,
            &self.opts.caller_env,
            merged.not_inline.is_none(),
        );
        let sources = shim_sources();
        let object = shim::compile(
            &self.toolchain,
            &sources,
            &table,
            &settings,
            &self.objects,
            &self.work,
        )?;
        self.note_call_sites(&members);
        let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
        self.progress.note(&format!(
            "calls to {} through the gateway ({}, or the URL in ${}) are answered in the pod",
            names.join(", "),
            match gateway_urls.as_slice() {
                [] => "no literal URL in the code".to_string(),
                urls => urls.join(", "),
            },
            shim::GATEWAY_VARS.join(", $"),
        ));
        let caller = &self.members.caller.name;
        for f in self.members.functions().filter(|f| &f.name != caller) {
            let name = fmerge_contract::function_name(&f.name);
            self.progress.note(&match f.form {
                resolve::Form::Http if self.handles.contains(&f.name) => format!(
                    "calls to {name} call its handler library's `handle` in the caller's process, \
                     without its template's server or a socket, where `handle` is an `async fn` or \
                     `fn` from `Request<Bytes>` to `Response<Bytes>` (else its template's server \
                     starts with the process); {}",
                    match merged.handle_elsewhere.get(&f.name) {
                        None =>
                            "an async `handle` is started on the caller's own thread".to_string(),
                        Some(why) =>
                            format!("from a thread of the pod's own, never the caller's: {why}"),
                    }
                ),
                resolve::Form::Http => format!(
                    "{name}'s server runs in the caller's process, started with it, on a free port \
                     of 127.0.0.1 instead of the one it asks for; calls to it are forwarded there"
                ),
                _ => where_it_runs(&name, merged.in_process.get(&f.name)),
            });
        }
        if let Some(why) = &merged.not_inline
            && !in_process.is_empty()
        {
            self.progress.note(&format!(
                "calls to callees run in the caller's process are answered on a thread of the \
                 stand-in, not on the calling thread: {why}"
            ));
        }
        Ok(object)
    }

    /// Refuses a callee that serves HTTP itself where the build found in
    /// its code a reason it needs a process of its own: its server runs
    /// for the whole life of the caller's process, in it, or not at all.
    fn check_servers(&self, merged: &ir::MergedModule) -> Result<()> {
        for f in &self.members.callees {
            if f.form != resolve::Form::Http {
                continue;
            }
            let why = match merged.in_process.get(&f.name) {
                Some(Ok(())) => continue,
                Some(Err(why)) => why.clone(),
                None => format!("no `main` of {} was found to run", f.name),
            };
            anyhow::bail!(
                "{} serves HTTP itself, so its server must run in the caller's process, and it cannot: {why}\n\
                 fix: leave {} out of the group (calls to it keep going through the gateway)",
                f.name,
                f.name
            );
        }
        Ok(())
    }

    /// Says each call site of the members' code (read as `fmerge graph`
    /// reads it) and where its call goes: in the pod (a member), through
    /// the gateway (a function not merged), or decided at run time (a name
    /// the code computes).
    fn note_call_sites(&self, members: &[shim::Member]) {
        let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
        let mut said = Vec::new();
        for f in self.members.functions() {
            let Some(own) = self.members.local_dirs.get(&f.package_id) else {
                continue;
            };
            let deps = crate::graph::user_deps(f, &self.members);
            let Ok(sites) = crate::graph::client_calls::read(own, &deps) else {
                continue;
            };
            let from = fmerge_contract::function_name(&f.name);
            for site in sites {
                let goes = match site.callee.as_deref().map(crate::graph::function_of) {
                    Some(to) if names.contains(&to) => format!("{to}: in the pod"),
                    Some(to) => format!("{to}: through the gateway (not merged)"),
                    None => {
                        "a name computed at run time: in the pod if it names a member".to_string()
                    }
                };
                said.push(format!("{from} (`{}`) → {goes}", site.within));
            }
        }
        if !said.is_empty() {
            self.progress
                .note(&format!("call sites: {}", said.join("; ")));
        }
    }

    /// The warm-start launcher (`shim::LAUNCHER`) beside the binary, for a
    /// caller that of-watchdog starts per request: its image runs the binary
    /// through it. `None` for the other forms, started once.
    pub(super) fn launcher(&self) -> Result<Option<PathBuf>> {
        if self.members.caller.form != resolve::Form::Process {
            return Ok(None);
        }
        let mut settings = self.tools.clone();
        settings.push(self.toolchain.triple.clone());
        let built = shim::compile_launcher(
            &self.toolchain,
            &shim_sources(),
            &settings,
            &self.objects,
            &self.work,
        )?;
        let path = self.binary.with_file_name(shim::LAUNCHER);
        let temp = fmerge_cargo::artifact::temp_beside(&path)?;
        std::fs::copy(&built, &temp).with_context(|| format!("cannot write {}", temp.display()))?;
        fmerge_cargo::artifact::commit(temp, &path, 0o755)?;
        self.progress.note(&format!(
            "{} written beside the binary: run as of-watchdog's fprocess in front of it \
             (its image does), later starts are forks of a warm copy, without the dynamic loader",
            path.display()
        ));
        Ok(Some(path))
    }

    /// What decides an object besides its IR: the tools and the codegen.
    fn object_settings(&self) -> Vec<String> {
        let mut settings = self.tools.clone();
        settings.push(format!(
            "codegen {} O{} (reuse path, {:?})",
            self.toolchain.triple, self.opts.opt_level, self.lto
        ));
        settings
    }
}

/// The shim's sources, and the contract's, which it includes from
/// `../contract/src/lib.rs` as in the repository.
fn shim_sources() -> Vec<shim::Source<'static>> {
    let contract = crate::assets::VENDORED
        .iter()
        .find(|c| c.dir == "fmerge-contract")
        .expect("the contract is vendored");
    let contract_lib = contract
        .files
        .iter()
        .find(|f| f.path == "src/lib.rs")
        .expect("the contract's lib.rs");
    crate::assets::SHIM
        .files
        .iter()
        .map(|f| shim::Source {
            path: f.path,
            text: f.text,
        })
        .chain([shim::Source {
            path: "../contract/src/lib.rs",
            text: contract_lib.text,
        }])
        .collect()
}

/// Where a callee runs, for the build's output: in the caller's process
/// (`Ok`), or in a process of its own, with why and what that costs.
fn where_it_runs(callee: &str, verdict: Option<&Result<(), String>>) -> String {
    match verdict {
        Some(Ok(())) => {
            format!("{callee} runs in the caller's process, on a thread per call (no fork)")
        }
        Some(Err(why)) => format!(
            "{callee} runs in a process of its own, forked from the binary's start: {why} \
             (a fork and its own run per call)"
        ),
        None => format!(
            "{callee} runs in a process of its own, forked from the binary's start \
             (a fork and its own run per call)"
        ),
    }
}
