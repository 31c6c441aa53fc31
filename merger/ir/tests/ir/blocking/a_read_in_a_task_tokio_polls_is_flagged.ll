; PASSES: call_graph, blocking
; The handler spawns a task on the runtime (its vtable stored by tokio's
; spawn), and the task reads a file: it runs on the caller's threads, so it
; counts, though tokio's code is between.
; CALLER: front
; CALLEES: spawner
; CRATE: spawner
; FUNCTION: spawner
; BLOCKING: spawner std::fs::read::inner
; WARNING: spawner (crate spawner) blocks its thread: spawner's handler → `tokio::task::spawn::spawn` → `tokio::runtime::task::raw::poll` → `spawner::job::{{closure}}` → `std::fs::read::inner` (it waits on a descriptor or a file)

declare void @"_ZN3std2fs4read5inner17h0000000000000006E"(ptr, ptr, i64)

@task_vtable = private constant <{ ptr, ptr }> <{ ptr @"_ZN5tokio7runtime4task3raw4poll17h0000000000000007E", ptr null }>

define void @fmerge.entry.spawner() {
  call void @"_ZN5tokio4task5spawn5spawn17h0000000000000008E"()
  ret void
}

define void @"_ZN5tokio4task5spawn5spawn17h0000000000000008E"() {
  store ptr @task_vtable, ptr null
  ret void
}

define void @"_ZN5tokio7runtime4task3raw4poll17h0000000000000007E"() {
  call void @"_ZN7spawner3job28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000009E"()
  ret void
}

define void @"_ZN7spawner3job28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000009E"() {
  call void @"_ZN3std2fs4read5inner17h0000000000000006E"(ptr null, ptr null, i64 0)
  ret void
}
