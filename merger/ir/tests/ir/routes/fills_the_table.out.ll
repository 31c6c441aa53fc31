; ModuleID = 'fills_the_table.ll'
source_filename = "fills_the_table.ll"

@fmerge.route.callee-fn = private unnamed_addr constant [9 x i8] c"callee-fn"
@fmerge.routes.table = private constant [1 x { ptr, i64, ptr, i64 }] [{ ptr, i64, ptr, i64 } { ptr @fmerge.route.callee-fn, i64 9, ptr @fmerge.entry.callee-fn, i64 0 }]
@fmerge.routes = internal constant { ptr, i64 } { ptr @fmerge.routes.table, i64 1 }, align 8

define ptr @lookup() {
  ret ptr @fmerge.routes
}

define ptr @fmerge.entry.callee-fn(ptr %body) {
  ret ptr null
}
