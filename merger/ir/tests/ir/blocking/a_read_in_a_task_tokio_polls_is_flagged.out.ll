; ModuleID = 'a_read_in_a_task_tokio_polls_is_flagged.ll'
source_filename = "a_read_in_a_task_tokio_polls_is_flagged.ll"

@task_vtable = private constant <{ ptr, ptr }> <{ ptr @_ZN5tokio7runtime4task3raw4poll17h0000000000000007E, ptr null }>

declare void @_ZN3std2fs4read5inner17h0000000000000006E(ptr, ptr, i64)

define void @fmerge.entry.spawner() {
  call void @_ZN5tokio4task5spawn5spawn17h0000000000000008E()
  ret void
}

define void @_ZN5tokio4task5spawn5spawn17h0000000000000008E() {
  store ptr @task_vtable, ptr null, align 8
  ret void
}

define void @_ZN5tokio7runtime4task3raw4poll17h0000000000000007E() {
  call void @"_ZN7spawner3job28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000009E"()
  ret void
}

define void @"_ZN7spawner3job28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000009E"() {
  call void @_ZN3std2fs4read5inner17h0000000000000006E(ptr null, ptr null, i64 0)
  ret void
}
