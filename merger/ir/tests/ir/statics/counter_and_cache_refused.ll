; A helper crate's call counter and cached client (an AtomicU64 and a
; OnceLock): mutable globals that two merged functions would share.
; CALLER: st-front
; CRATE: st_helper
; OWNERS: st-back, st-front
; ERROR: crate st-helper keeps mutable statics `st_helper::CALLS`, `st_helper::CLIENT`
; ERROR: linked by st-back, st-front
; ERROR: --allow-shared-static st_helper::CALLS

@_ZN9st_helper5CALLS17h0123456789abcdefE = internal global [8 x i8] zeroinitializer, align 8
@_ZN9st_helper6CLIENT17h0123456789abcdefE = internal global [64 x i8] zeroinitializer, align 8
@_ZN9st_helper7VERSION17h0123456789abcdefE = internal constant [8 x i8] c"\01\00\00\00\00\00\00\00", align 8
