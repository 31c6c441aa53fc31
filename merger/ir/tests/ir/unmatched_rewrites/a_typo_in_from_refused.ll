; FROM is in no literal of the callee's code: the old address would ship.
; PASSES: endpoints, unmatched_rewrites
; REWRITE: store.intt:6379=127.0.0.12:6379
; OWNERS: callee-fn
; CALLEES: callee-fn
; ERROR: --rewrite store.intt:6379: no string literal in the code of callee-fn contains `store.intt:6379`
; ERROR: fix: check FROM
@url = private unnamed_addr constant [23 x i8] c"redis://store.int:6379/", align 1
