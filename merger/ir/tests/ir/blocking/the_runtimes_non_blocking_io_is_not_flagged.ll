; PASSES: call_graph, blocking
; mio reads and connects on the non-blocking sockets it made: not a wait.
; CALLER: front
; CALLEES: net
; CRATE: net
; FUNCTION: net

declare i64 @read(i32, ptr, i64)
declare i32 @connect(i32, ptr, i32)

define void @fmerge.entry.net() {
  call void @"_ZN3mio3net3tcp6stream9TcpStream7connect17h000000000000001aE"()
  call void @"_ZN70_$LT$$RF$mio..net..tcp..stream..TcpStream$u20$as$u20$std..io..Read$GT$4read17h000000000000001bE"()
  ret void
}

define void @"_ZN3mio3net3tcp6stream9TcpStream7connect17h000000000000001aE"() {
  %r = call i32 @connect(i32 3, ptr null, i32 16)
  ret void
}

define void @"_ZN70_$LT$$RF$mio..net..tcp..stream..TcpStream$u20$as$u20$std..io..Read$GT$4read17h000000000000001bE"() {
  %r = call i64 @read(i32 3, ptr null, i64 16)
  ret void
}
