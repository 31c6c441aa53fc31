; ModuleID = 'callee_crate'
source_filename = "callee_crate"

@f = private unnamed_addr constant [9 x i8] c"callee-fn", align 1
@k = private unnamed_addr constant [9 x i8] c"REDIS_URL", align 1
@d = private unnamed_addr constant [18 x i8] c"redis://store:6379", align 1
@k2 = private unnamed_addr constant [4 x i8] c"HOST", align 1
@_ZN10shared_lib4HOST17h0000000000000001E = constant [5 x i8] c"store"

declare void @fmerge.config(ptr, ptr, i64, ptr, i64, ptr, i64)

define void @read(ptr %out) {
  call void @fmerge.config(ptr %out, ptr @f, i64 9, ptr @k, i64 9, ptr @d, i64 18)
  call void @fmerge.config(ptr %out, ptr @f, i64 9, ptr @k2, i64 4, ptr @_ZN10shared_lib4HOST17h0000000000000001E, i64 5)
  ret void
}
