; ModuleID = 'caller_fn'
source_filename = "caller_fn"

define i32 @main(i32 %argc, ptr %argv) {
  %r = call i64 @_ZN9caller_fn6handle17h0123456789abcdefE()
  ret i32 0
}

define internal i64 @_ZN9caller_fn6handle17h0123456789abcdefE() {
  ret i64 1
}

declare i64 @__rustc___rust_alloc_error_handler_should_panic()

define i64 @sn_export() {
  ret i64 2
}
