; ModuleID = 'wp_front'
source_filename = "wp_front"

define i32 @main(i32 %argc, ptr %argv) {
  ret i32 0
}

define i32 @fmerge.main.wp-back(i32 %argc, ptr %argv) {
  ret i32 1
}
