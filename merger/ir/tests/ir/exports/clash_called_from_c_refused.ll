; The same clash, but a build script's C library calls `sn_scale` by name.
; CALLER: nc-front
; NATIVE: sn_scale libnctwice.a
; ERROR: functions nc-front (crate nc_front) and nc-back (crate nc_back) both export `sn_scale`
; ERROR: libnctwice.a refers to it
; ERROR: fix:
; UNIT: nc_front nc-front
define i64 @sn_scale(i64 %x) {
  ret i64 %x
}
; UNIT: nc_back nc-back
define i64 @sn_scale(i64 %x) {
  ret i64 %x
}
