; `static SETTINGS: Settings = Settings { redis: "…", db: 0 }` as rustc writes
; it: the &str's length is the first 8 bytes after the pointer.
; REWRITE: store.int:6379=127.0.0.12:6379
; OWNERS: callee-fn
; HITS: 1
; CALLEES: callee-fn

@lit = private unnamed_addr constant [23 x i8] c"redis://store.int:6379/", align 1
@SETTINGS = internal constant <{ ptr, [16 x i8] }> <{ ptr @lit, [16 x i8] c"\17\00\00\00\00\00\00\00\05\00\00\00\00\00\00\00" }>, align 8

define ptr @settings() {
  ret ptr @SETTINGS
}
