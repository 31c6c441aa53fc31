; A watchdog-process function: a plain `main`, no entry, and that is its form.
; FUNCTION: callee-fn
; FORM: process
define i32 @main(i32 %argc, ptr %argv) {
  ret i32 0
}
