; ModuleID = 'front'
source_filename = "front"

@fmerge.route.quick = private unnamed_addr constant [5 x i8] c"quick"
@fmerge.route.slow = private unnamed_addr constant [4 x i8] c"slow"
@fmerge.routes.table = private constant [2 x { ptr, i64, ptr, i64 }] [{ ptr, i64, ptr, i64 } { ptr @fmerge.route.quick, i64 5, ptr @fmerge.entry.quick, i64 0 }, { ptr, i64, ptr, i64 } { ptr @fmerge.route.slow, i64 4, ptr @fmerge.entry.slow, i64 1 }]
@fmerge.routes = internal constant { ptr, i64 } { ptr @fmerge.routes.table, i64 2 }, align 8

define ptr @lookup() {
  ret ptr @fmerge.routes
}

define ptr @fmerge.entry.quick(ptr %body) {
  ret ptr null
}

define ptr @fmerge.entry.slow(ptr %body) {
  call void @_ZN4slow6handle17h0123456789abcdefE()
  ret ptr null
}

define void @_ZN4slow6handle17h0123456789abcdefE() {
  call void @_ZN3std6thread5sleep17h0123456789abcdefE(i64 1, i32 0)
  ret void
}

declare void @_ZN3std6thread5sleep17h0123456789abcdefE(i64, i32)
