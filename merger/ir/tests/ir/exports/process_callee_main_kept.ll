; Watchdog-process members: the caller's `main` starts the binary, the
; callee's is renamed and stays exported, for the shim to start it.
; CALLER: wp-front
; FORM: process
; PASSES: exports, internalize
; UNIT: wp_front wp-front
define i32 @main(i32 %argc, ptr %argv) {
  ret i32 0
}
; UNIT: wp_back wp-back
define i32 @main(i32 %argc, ptr %argv) {
  ret i32 1
}
