; ModuleID = 'static_field.ll'
source_filename = "static_field.ll"

@lit = private unnamed_addr constant [23 x i8] c"redis://store.int:6379/", align 1
@SETTINGS = internal constant <{ ptr, [16 x i8] }> <{ ptr @lit.rewritten, [16 x i8] c"\18\00\00\00\00\00\00\00\05\00\00\00\00\00\00\00" }>, align 8
@lit.rewritten = private unnamed_addr constant [24 x i8] c"redis://127.0.0.12:6379/", align 1

define ptr @settings() {
  ret ptr @SETTINGS
}
