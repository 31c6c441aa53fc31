; unique-id is merged, but no merged function's code names it.
; PASSES: mentions, uncalled
; FUNCTION: caller-fn
; CALLEES: callee-fn, unique-id
; WARNING: no merged function names unique-id in its code, so it never invokes it
@name = private unnamed_addr constant [9 x i8] c"callee-fn", align 1
@other = private unnamed_addr constant [19 x i8] c"not a function name", align 1
