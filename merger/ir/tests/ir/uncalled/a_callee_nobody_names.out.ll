; ModuleID = 'a_callee_nobody_names.ll'
source_filename = "a_callee_nobody_names.ll"

@name = private unnamed_addr constant [9 x i8] c"callee-fn", align 1
@other = private unnamed_addr constant [19 x i8] c"not a function name", align 1
