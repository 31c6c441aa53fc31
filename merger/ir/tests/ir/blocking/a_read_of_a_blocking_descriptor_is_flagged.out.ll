; ModuleID = 'a_read_of_a_blocking_descriptor_is_flagged.ll'
source_filename = "a_read_of_a_blocking_descriptor_is_flagged.ll"

declare i64 @read(i32, ptr, i64)

define void @fmerge.entry.raw() {
  call void @_ZN3raw6handle17h000000000000001cE()
  ret void
}

define void @_ZN3raw6handle17h000000000000001cE() {
  %r = call i64 @read(i32 0, ptr null, i64 16)
  ret void
}
