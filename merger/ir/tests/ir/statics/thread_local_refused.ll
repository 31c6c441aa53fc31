; thread_local! state is shared too: both functions run on the same threads.
; CALLER: st-front
; CRATE: st_helper
; OWNERS: st-back, st-front
; ERROR: `st_helper::SCRATCH` (thread-local)

@_ZN9st_helper7SCRATCH17h0123456789abcdefE = internal thread_local constant [8 x i8] zeroinitializer, align 8
