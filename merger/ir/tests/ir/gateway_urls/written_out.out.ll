; ModuleID = 'written_out.ll'
source_filename = "written_out.ll"

@url = private unnamed_addr constant [46 x i8] c"http://gateway.openfaas:8080/function/ep-store", align 1
