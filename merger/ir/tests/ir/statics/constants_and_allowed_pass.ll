; Constants are fine; a mutable static the user allows is fine.
; CALLER: st-front
; CRATE: st_helper
; OWNERS: st-back, st-front
; ALLOW: st_helper::CALLS

@_ZN9st_helper5CALLS17h0123456789abcdefE = internal global [8 x i8] zeroinitializer, align 8
@_ZN9st_helper7VERSION17h0123456789abcdefE = internal constant [8 x i8] c"\01\00\00\00\00\00\00\00", align 8
