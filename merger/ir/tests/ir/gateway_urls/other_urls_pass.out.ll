; ModuleID = 'other_urls_pass.ll'
source_filename = "other_urls_pass.ll"

@a = private unnamed_addr constant [38 x i8] c"http://gateway:8080/function/unique-id", align 1
@b = private unnamed_addr constant [40 x i8] c"http://gateway:8080/function/ep-store-v2", align 1
