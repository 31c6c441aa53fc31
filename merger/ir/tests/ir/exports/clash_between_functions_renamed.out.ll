; ModuleID = 'rn_front'
source_filename = "rn_front"

define i64 @sn_tag(i64 %x) {
  %y = add i64 %x, 1000
  ret i64 %y
}

define i64 @sn_tag.rn-back(i64 %x) {
  %y = add i64 %x, 2000
  ret i64 %y
}

define internal i64 @_ZN7rn_back6handle17h0123456789abcdefE(i64 %x) {
  %y = call i64 @sn_tag.rn-back(i64 %x)
  ret i64 %y
}
