; URLs of functions that are not merged, or whose name only starts like a
; merged one, are not this merge's business.
; CALLER: front
; CALLEES: ep-store
; CRATE: front
; OWNERS: front
@a = private unnamed_addr constant [38 x i8] c"http://gateway:8080/function/unique-id", align 1
@b = private unnamed_addr constant [40 x i8] c"http://gateway:8080/function/ep-store-v2", align 1
