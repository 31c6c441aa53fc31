; ModuleID = 'constants_and_allowed_pass.ll'
source_filename = "constants_and_allowed_pass.ll"

@_ZN9st_helper5CALLS17h0123456789abcdefE = internal global [8 x i8] zeroinitializer, align 8
@_ZN9st_helper7VERSION17h0123456789abcdefE = internal constant [8 x i8] c"\01\00\00\00\00\00\00\00", align 8
