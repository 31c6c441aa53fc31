; ModuleID = 'a_rewrite_that_matched_is_noted.ll'
source_filename = "a_rewrite_that_matched_is_noted.ll"

@url = private unnamed_addr constant [23 x i8] c"redis://store.int:6379/", align 1
@url.rewritten = private unnamed_addr constant [24 x i8] c"redis://127.0.0.12:6379/", align 1

declare void @_ZN6client4open17h0123456789abcdefE(ptr, i64)

define void @_ZN12callee_crate7connect17h0123456789abcdefE() {
  call void @_ZN6client4open17h0123456789abcdefE(ptr @url.rewritten, i64 24)
  ret void
}
