#!/usr/bin/env python3
# The probes of issue 16, re-measured against the runtime serving examples/probe.rs:
#   cargo build --release -p fmerge-runtime --example probe
#   python3 docs/operating-probes.py target/release/examples/probe sigterm|slowloris|exec|fdlimit
import os, socket, subprocess, sys, tempfile, threading, time, signal, urllib.request
PROBE = sys.argv[1]
def start(env, port):
    e = dict(os.environ, port=str(port), metrics_port="0", listen_address="127.0.0.1", **env)
    p = subprocess.Popen([PROBE], env=e, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL)
    for _ in range(200):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_/health", timeout=1); return p
        except Exception: time.sleep(0.05)
    raise SystemExit("no start")
def get(port, path, timeout=60):
    try:
        r = urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout); return r.status, r.read()
    except urllib.error.HTTPError as e: return e.code, e.read()
    except Exception as e: return None, str(e)

which = sys.argv[2]
if which == "sigterm":
    port = 25111; p = start({}, port)
    res = []
    ts = [threading.Thread(target=lambda: res.append(get(port, "/sleep?ms=3000"))) for _ in range(5)]
    [t.start() for t in ts]; time.sleep(0.5)
    t0 = time.time(); p.send_signal(signal.SIGTERM)
    time.sleep(0.2); h = get(port, "/_/health")
    [t.join() for t in ts]
    p.wait(); print(f"sigterm (defaults): in-flight results {[r[0] for r in res]}, health after signal {h[0]}, exit {p.returncode} after {time.time()-t0:.2f}s")
    port = 25112; p = start({"healthcheck_interval": "1s", "write_timeout": "10s"}, port)
    res = []
    ts = [threading.Thread(target=lambda: res.append(get(port, "/sleep?ms=3000"))) for _ in range(5)]
    [t.start() for t in ts]; time.sleep(0.5)
    t0 = time.time(); p.send_signal(signal.SIGTERM); [t.join() for t in ts]; p.wait()
    print(f"sigterm (healthcheck_interval=1s): in-flight results {[r[0] for r in res]}, exit {p.returncode} after {time.time()-t0:.2f}s")
elif which == "slowloris":
    port = 25113; p = start({}, port)
    socks = []
    for _ in range(400):
        s = socket.create_connection(("127.0.0.1", port)); s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-a:"); socks.append(s)
    t0 = time.time(); closed = {}
    for s in socks: s.setblocking(False)
    while time.time() - t0 < 65 and len(closed) < 400:
        for i, s in enumerate(socks):
            if i in closed: continue
            try:
                d = s.recv(100)
                if d == b"": closed[i] = time.time() - t0
            except BlockingIOError: pass
            except ConnectionResetError: closed[i] = time.time() - t0
        time.sleep(0.1)
    v = sorted(closed.values())
    print(f"400 partial-header connections (read_timeout default 30s): {len(v)} closed within 65 s, first at {v[0]:.1f}s, last at {v[-1]:.1f}s" if v else "none closed")
    print("health meanwhile:", get(port, "/_/health")[0]); p.kill()
elif which == "exec":
    port = 25114; p = start({}, port)
    t0 = time.time(); st, _ = get(port, "/sleep?ms=600000", timeout=120)
    print(f"a request that never finishes (exec_timeout default 30s): {st} after {time.time()-t0:.1f}s"); p.kill()
elif which == "fdlimit":
    port = 25115
    e = dict(os.environ, port=str(port), metrics_port="0", listen_address="127.0.0.1")
    log_path = tempfile.mkstemp(suffix=".log")[1]
    log = open(log_path, "w")
    p = subprocess.Popen(["bash", "-c", f"ulimit -n 128 && exec {PROBE}"], env=e, stderr=log, stdout=log)
    time.sleep(0.5)
    socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(200)]
    time.sleep(0.5)
    def ticks():
        f = open(f"/proc/{p.pid}/stat").read().rsplit(")", 1)[1].split()
        return int(f[11]) + int(f[12])
    t0 = ticks(); w0 = time.time(); time.sleep(10); t1 = ticks()
    log.flush(); size = os.path.getsize(log_path)
    print(f"fd limit 128, 200 idle connections: {(t1-t0)/os.sysconf('SC_CLK_TCK')/(time.time()-w0)*100:.1f}% of a core over 10 s, server log {size} bytes")
    t2 = time.time(); st = get(port, "/echo", timeout=60)[0]
    print(f"a new client meanwhile: {st} after {time.time()-t2:.1f}s (idle connections closed by read_timeout 30s)")
    p.kill()
