//! Linking many units smallest pair first (`link::all`) gives what linking
//! them one by one into the first gives: every definition once, and where
//! `linkonce` copies meet, the earliest unit's.
//!
//! Run: `cargo test --release -p fmerge-ir --test link`

use fmerge_ir::Context;
use fmerge_ir::link::{self, Linkable};
use inkwell::memory_buffer::MemoryBuffer;

fn unit<'ctx>(ctx: &'ctx Context, i: usize) -> Linkable<'ctx> {
    let ir = format!(
        "define i64 @own_{i}() {{\n  %x = call i64 @shared()\n  ret i64 %x\n}}\n\
         define linkonce_odr i64 @shared() {{\n  ret i64 {i}\n}}\n"
    );
    let buffer = MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), &format!("unit{i}"));
    // Sizes that make the cheapest links happen out of order.
    Linkable {
        module: ctx.create_module_from_ir(buffer).unwrap(),
        crates: format!("crate_{i}"),
        size: [5, 1, 9, 2, 2, 7, 1, 3][i % 8],
    }
}

#[test]
fn every_unit_is_linked_and_the_earliest_linkonce_copy_wins() {
    for count in [1, 2, 5, 8] {
        let ctx = Context::create();
        let merged = link::all((0..count).map(|i| unit(&ctx, i)).collect()).unwrap();
        merged.verify().unwrap();
        for i in 0..count {
            assert!(
                merged
                    .get_function(&format!("own_{i}"))
                    .is_some_and(|f| f.count_basic_blocks() > 0),
                "own_{i} of {count}"
            );
        }
        let ir = merged.print_to_string().to_string();
        assert!(
            ir.contains("define linkonce_odr i64 @shared() {\n  ret i64 0\n}"),
            "unit 0's copy wins among {count}:\n{ir}"
        );
    }
}

#[test]
fn a_symbol_two_units_define_names_the_crates() {
    let ctx = Context::create();
    let strong = |i: usize| {
        let ir = format!("define i64 @same() {{\n  ret i64 {i}\n}}\n");
        let buffer =
            MemoryBuffer::create_from_memory_range_copy(ir.as_bytes(), &format!("strong{i}"));
        Linkable {
            module: ctx.create_module_from_ir(buffer).unwrap(),
            crates: format!("strong_{i}"),
            size: 1,
        }
    };
    let err = link::all(vec![unit(&ctx, 0), strong(1), unit(&ctx, 2), strong(3)])
        .unwrap_err()
        .to_string();
    assert!(err.contains("strong_3") && err.contains("same"), "{err}");
}

#[test]
fn nothing_to_link_is_an_error() {
    assert!(link::all(Vec::new()).is_err());
}
