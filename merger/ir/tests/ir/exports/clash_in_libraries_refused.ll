; Two library crates export one symbol: nothing says which callers expect which.
; CALLER: caller-fn
; ERROR: symbol clash: crates clash_a and clash_b both define the exported symbol `sn_checksum`
; ERROR: export_name
; UNIT: clash_a
define i64 @sn_checksum(i64 %x) {
  ret i64 %x
}
; UNIT: clash_b
define i64 @sn_checksum(i64 %x) {
  ret i64 %x
}
