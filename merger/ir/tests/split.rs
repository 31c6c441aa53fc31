//! The module split behind parallel codegen, on a small module: every
//! function defined in exactly one partition, data and constructors in one,
//! aliases resolved, and each partition valid IR on its own.
//!
//! Run: `cargo test --release -p fmerge-ir --test split`

use fmerge_ir::{Context, Module, codegen, split};
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::targets::TargetMachine;
use std::collections::BTreeSet;

const IR: &str = r#"
@data = internal global i64 0
@llvm.global_ctors = appending global [1 x { i32, ptr, ptr }] [{ i32, ptr, ptr } { i32 65535, ptr @init, ptr null }]

define internal void @init() {
  store i64 1, ptr @data
  ret void
}
define internal i64 @a() {
  %x = load i64, ptr @data
  %y = add i64 %x, 1
  ret i64 %y
}
define internal i64 @b() {
  %x = call i64 @a()
  %y = mul i64 %x, 3
  ret i64 %y
}
@_ZN4demo1c17h0123456789abcdefE = unnamed_addr alias i64 (), ptr @b
define i32 @main() {
  %x = call i64 @_ZN4demo1c17h0123456789abcdefE()
  %y = trunc i64 %x to i32
  ret i32 %y
}
"#;

fn defined(module: &inkwell::module::Module<'_>) -> (BTreeSet<String>, BTreeSet<String>) {
    let functions = module
        .get_functions()
        .filter(|f| f.count_basic_blocks() > 0)
        .map(|f| f.get_name().to_string_lossy().into_owned())
        .collect();
    let globals = module
        .get_globals()
        .filter(|g| !g.is_declaration())
        .map(|g| g.get_name().to_string_lossy().into_owned())
        .collect();
    (functions, globals)
}

const TRIPLE: &str = "x86_64-unknown-linux-gnu";

/// The IR, parsed in `ctx`; the machine it compiles for (at -O3); its cut in two.
fn cut_in_two(ctx: &Context) -> (Module<'_>, TargetMachine, split::Cut) {
    let ir = MemoryBuffer::create_from_memory_range_copy(IR.as_bytes(), "split.ll");
    let module = ctx.create_module_from_ir(ir).unwrap();
    let machine = codegen::machine(TRIPLE, 3).unwrap();
    let cut = codegen::cut(&module, &machine, 2)
        .unwrap()
        .expect("the module can be cut");
    (module, machine, cut)
}

#[test]
fn each_definition_lands_in_exactly_one_partition() {
    let ctx = Context::create();
    let (module, machine, cut) = cut_in_two(&ctx);
    assert_eq!(cut.partitions(), 2);

    let mut all_functions = Vec::new();
    let mut data_in = Vec::new();
    for p in 0..2 {
        let ctx = Context::create();
        let part = split::partition(&ctx, &cut, p).unwrap();
        fmerge_ir::codegen::verify(&part, &format!("partition {p}")).unwrap();
        let (functions, globals) = defined(&part);
        assert!(!functions.is_empty(), "partition {p} compiles something");
        all_functions.extend(functions);
        if globals.contains("data") {
            data_in.push(p);
        }
        assert_eq!(
            globals.contains("llvm.global_ctors"),
            p == 0,
            "the constructor table is in partition 0 only"
        );
    }
    all_functions.sort();
    assert_eq!(
        all_functions,
        ["a", "b", "init", "main"],
        "each function defined once, the alias gone"
    );
    assert_eq!(data_in, [0], "data lives in partition 0");
    // The same module and n give the same cut.
    assert!(codegen::cut(&module, &machine, 2).unwrap() == Some(cut));
}

/// The objects of the IR's two partitions, compiled on `threads` threads.
fn objects(threads: usize, dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let ctx = Context::create();
    let (module, _machine, cut) = cut_in_two(&ctx);
    drop(module);
    drop(ctx);
    codegen::emit_partitions(cut, TRIPLE, 3, threads, dir, "demo").unwrap()
}

#[test]
fn the_partitions_compile_to_one_object_each_whatever_the_threads() {
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let objects = objects(2, two.path());
    assert_eq!(
        objects,
        [two.path().join("demo.0.o"), two.path().join("demo.1.o")]
    );
    for object in &objects {
        let bytes = std::fs::read(object).unwrap();
        assert_eq!(
            &bytes[..4],
            b"\x7fELF",
            "{} is an ELF object",
            object.display()
        );
    }
    // One thread at a time gives the same objects, byte for byte.
    for (a, b) in objects.iter().zip(self::objects(1, one.path())) {
        assert_eq!(std::fs::read(a).unwrap(), std::fs::read(&b).unwrap());
    }
}
