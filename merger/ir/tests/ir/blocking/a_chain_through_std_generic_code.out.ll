; ModuleID = 'a_chain_through_std_generic_code.ll'
source_filename = "a_chain_through_std_generic_code.ll"

declare void @_ZN3std2fs4read5inner17h0000000000000005E(ptr, ptr, i64)

define void @fmerge.entry.reader(ptr %out) {
  call void @_ZN6reader6handle17h0000000000000006E(ptr %out)
  ret void
}

define void @_ZN6reader6handle17h0000000000000006E(ptr %out) {
  call void @_ZN6reader4load17h0000000000000007E(ptr %out)
  ret void
}

define void @_ZN3std2fs4read17h0000000000000008E(ptr %out) {
  call void @_ZN3std2fs4read5inner17h0000000000000005E(ptr %out, ptr null, i64 0)
  ret void
}

define void @_ZN6reader4load17h0000000000000007E(ptr %out) {
  call void @_ZN3std2fs4read17h0000000000000008E(ptr %out)
  ret void
}
