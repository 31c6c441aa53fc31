; The caller keeps a gateway URL of a merged function as a constant.
; CALLER: front
; CALLEES: ep-store
; CRATE: front
; OWNERS: front
; WARNING: crate front (linked by front) holds the gateway URL `http://gateway.openfaas:8080/function/ep-store` of merged function ep-store
; WARNING: fix: call `fmerge_runtime::invoke("ep-store", …)`
@url = private unnamed_addr constant [46 x i8] c"http://gateway.openfaas:8080/function/ep-store", align 1
