; PASSES: call_graph, blocking
; The handler hands a sleep to tokio's blocking pool: the task's vtable is
; reached only through spawn_blocking.
; CALLER: front
; CALLEES: offload
; CRATE: offload
; FUNCTION: offload

declare void @"_ZN3std6thread9functions5sleep17h0000000000000012E"(i64, i32)

@task_vtable = private constant <{ ptr, ptr }> <{ ptr @"_ZN5tokio7runtime4task3raw4poll17h0000000000000013E", ptr null }>

define void @fmerge.entry.offload() {
  call void @"_ZN7offload6handle28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000014E"()
  ret void
}

define void @"_ZN7offload6handle28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000014E"() {
  call void @"_ZN5tokio7runtime8blocking4pool14spawn_blocking17h0000000000000015E"()
  ret void
}

define void @"_ZN5tokio7runtime8blocking4pool14spawn_blocking17h0000000000000015E"() {
  store ptr @task_vtable, ptr null
  ret void
}

define void @"_ZN5tokio7runtime4task3raw4poll17h0000000000000013E"() {
  call void @"_ZN7offload6handle28_$u7b$$u7b$closure$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000016E"()
  ret void
}

define void @"_ZN7offload6handle28_$u7b$$u7b$closure$u7d$$u7d$28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000016E"() {
  call void @"_ZN3std6thread9functions5sleep17h0000000000000012E"(i64 1, i32 0)
  ret void
}
