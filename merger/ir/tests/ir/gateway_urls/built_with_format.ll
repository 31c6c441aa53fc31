; A callee builds the URL with `format!("{}/function/ep-store.openfaas-fn
; failed: {}", gateway, e)`: rustc 1.95's template, whose pieces carry their
; length in front. The warning shows it as written, never the length bytes.
; CALLER: front
; CALLEES: ep-store, ep-env
; CRATE: ep_env
; OWNERS: ep-env
; WARNING: crate ep_env (linked by ep-env) holds the gateway URL `{}/function/ep-store.openfaas-fn` of merged function ep-store
@template = private unnamed_addr constant [43 x i8] c"\C0'/function/ep-store.openfaas-fn failed: \C0\00", align 1
