; ModuleID = 'a_connect_through_tokio_and_socket2_is_not_flagged.ll'
source_filename = "a_connect_through_tokio_and_socket2_is_not_flagged.ll"

declare i32 @connect(i32, ptr, i32)

define void @fmerge.entry.client() {
  call void @"_ZN5tokio3net3tcp6socket9TcpSocket7connect28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000004E"()
  ret void
}

define void @"_ZN5tokio3net3tcp6socket9TcpSocket7connect28_$u7b$$u7b$closure$u7d$$u7d$17h0000000000000004E"() {
  call void @_ZN7socket26socket6Socket7connect17h0000000000000005E()
  ret void
}

define void @_ZN7socket26socket6Socket7connect17h0000000000000005E() {
  %r = call i32 @connect(i32 3, ptr null, i32 16)
  ret void
}
