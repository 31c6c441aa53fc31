; ModuleID = 'declared_entry.ll'
source_filename = "declared_entry.ll"

define void @fmerge.entry.callee-fn(ptr %req) {
  ret void
}
