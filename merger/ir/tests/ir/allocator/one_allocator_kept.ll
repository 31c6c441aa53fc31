; A function with its own #[global_allocator]: the only one, so the merged
; binary uses it (and nothing changes in the module).
; CALLER: alloc-caller
; UNIT: alloc_caller alloc-caller
define ptr @_RNvCs1234_7___rustc12___rust_alloc(i64 %size, i64 %align) {
  ret ptr null
}
