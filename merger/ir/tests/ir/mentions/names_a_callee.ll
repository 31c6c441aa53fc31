; The caller's code names callee-fn (the first argument of `invoke`), and
; never unique-id.
; FUNCTION: caller-fn
; CALLEES: callee-fn, unique-id
; MENTIONED: callee-fn
@name = private unnamed_addr constant [9 x i8] c"callee-fn", align 1
@other = private unnamed_addr constant [19 x i8] c"not a function name", align 1
