; A function with its own #[global_allocator].
; CALLER: alloc-caller
; ERROR: sets its own #[global_allocator]
; ERROR: Fix: remove the #[global_allocator]
; UNIT: alloc_caller alloc-caller
define ptr @_RNvCs1234_7___rustc12___rust_alloc(i64 %size, i64 %align) {
  ret ptr null
}
