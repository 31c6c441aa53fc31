; ModuleID = 'process_main_needs_no_entry.ll'
source_filename = "process_main_needs_no_entry.ll"

define i32 @main(i32 %argc, ptr %argv) {
  ret i32 0
}
