; PASSES: call_graph, blocking
; tokio's TcpSocket connects through socket2 on the non-blocking socket it
; made: the libc connect below them does not wait.
; CALLER: front
; CALLEES: client
; CRATE: client
; FUNCTION: client

declare i32 @connect(i32, ptr, i32)

define void @fmerge.entry.client() {
  call void @"_ZN5tokio3net3tcp6socket9TcpSocket7connect28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000004E"()
  ret void
}

define void @"_ZN5tokio3net3tcp6socket9TcpSocket7connect28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000004E"() {
  call void @"_ZN7socket26socket6Socket7connect17h0000000000000005E"()
  ret void
}

define void @"_ZN7socket26socket6Socket7connect17h0000000000000005E"() {
  %r = call i32 @connect(i32 3, ptr null, i32 16)
  ret void
}
