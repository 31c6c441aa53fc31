; ModuleID = 'built_with_format.ll'
source_filename = "built_with_format.ll"

@template = private unnamed_addr constant [43 x i8] c"\C0'/function/ep-store.openfaas-fn failed: \C0\00", align 1
