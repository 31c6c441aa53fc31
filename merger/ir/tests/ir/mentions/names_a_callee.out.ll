; ModuleID = 'names_a_callee.ll'
source_filename = "names_a_callee.ll"

@name = private unnamed_addr constant [9 x i8] c"callee-fn", align 1
@other = private unnamed_addr constant [19 x i8] c"not a function name", align 1
