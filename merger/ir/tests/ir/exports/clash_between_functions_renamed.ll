; Two functions' own crates export `sn_tag`, and no native code calls it:
; the second keeps its own under a new name.
; CALLER: rn-front
; PASSES: exports, internalize
; WARNING: two functions export one symbol; sn_tag in rn-back is now sn_tag.rn-back
; UNIT: rn_front rn-front
define i64 @sn_tag(i64 %x) {
  %y = add i64 %x, 1000
  ret i64 %y
}
; UNIT: rn_back rn-back
define i64 @sn_tag(i64 %x) {
  %y = add i64 %x, 2000
  ret i64 %y
}
define i64 @_ZN7rn_back6handle17h0123456789abcdefE(i64 %x) {
  %y = call i64 @sn_tag(i64 %x)
  ret i64 %y
}
