//! Warm starts (the shim's `warm` module): through the launcher
//! `fmerge-warm`, the merged binary's first start leaves a server behind
//! and returns as a start would; every later start is a process that server
//! forks, which must be the launcher's own in everything the function can
//! see (stdin, stdout, stderr, arguments, environment, working directory,
//! exit code, death by signal), with no trace of the server's variable,
//! and must end when its launcher is killed, as of-watchdog kills a process
//! at `exec_timeout`. The request's pipes close when the process ends, the
//! server's copy included (a watchdog waits for that). The server ends with
//! what started its binary, and keeps serving past clients that stall, lie
//! or hang up.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// Prints what a process of its own would see, then does what its stdin
/// says.
const PROGRAM: &str = r#"
unsafe extern "C" { fn raise(sig: i32) -> i32; }
fn main() {
    use std::io::{Read, Write};
    let mut input = String::new();
    std::io::stdin().read_to_string(&mut input).unwrap();
    println!(
        "pid={} ppid={} args={:?} cwd={} x={:?} warm={:?} stdin={input}",
        std::process::id(),
        std::os::unix::process::parent_id(),
        std::env::args().collect::<Vec<_>>(),
        std::env::current_dir().unwrap().display(),
        std::env::var("X").ok(),
        std::env::var("FMERGE_WARM").ok(),
    );
    std::io::stdout().flush().unwrap();
    eprintln!("stderr of {input}");
    match input.as_str() {
        "sleep" => std::thread::sleep(std::time::Duration::from_secs(60)),
        "term" => unsafe { raise(15); },
        s if s.starts_with("exit ") => std::process::exit(s[5..].parse().unwrap()),
        _ => {}
    }
}
"#;

struct Fixture {
    launcher: PathBuf,
    prog: PathBuf,
    tmp: PathBuf,
}

/// What one start printed.
#[derive(Debug)]
struct Seen {
    pid: u32,
    ppid: u32,
    rest: String,
    stderr: String,
    status: ExitStatus,
    launcher: u32,
}

impl Fixture {
    /// The program built in a scratch folder of its own, `name`.
    fn new(name: &str) -> Fixture {
        let dir = common::scratch(name);
        let prog = common::build(&dir, PROGRAM, &[]);
        let tmp = dir.join("tmp");
        std::fs::create_dir_all(&tmp).unwrap();
        Fixture {
            launcher: PathBuf::from(env!("CARGO_BIN_EXE_fmerge-warm")),
            prog,
            tmp,
        }
    }

    fn spawn(&self, args: &[&str], x: &str, cwd: &Path) -> Child {
        Command::new(&self.launcher)
            .arg(&self.prog)
            .args(args)
            .env("TMPDIR", &self.tmp)
            .env("X", x)
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// A start told to sleep, once it has said its pid: the launcher and
    /// that pid.
    fn sleeping(&self, cwd: &Path) -> (Child, u32) {
        let mut child = self.spawn(&["-v"], "sleeper", cwd);
        child.stdin.take().unwrap().write_all(b"sleep").unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let pid = line["pid=".len()..].split(' ').next().unwrap();
        (child, pid.parse().expect(&line))
    }

    /// One start with `stdin`, to its end (its pipes closed: a server
    /// holding them would hold this past the deadline).
    fn run(&self, args: &[&str], x: &str, cwd: &Path, stdin: &str) -> Seen {
        let mut child = self.spawn(args, x, cwd);
        let launcher = child.id();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(child.wait_with_output().unwrap()));
        let out = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("the start ends and its pipes close");
        let stdout = String::from_utf8(out.stdout).unwrap();
        let field = |k: &str| -> u32 {
            let v = stdout.split(&format!("{k}=")).nth(1).expect(&stdout);
            v.split(' ').next().unwrap().parse().unwrap()
        };
        Seen {
            pid: field("pid"),
            ppid: field("ppid"),
            rest: stdout.split_once(" args=").expect(&stdout).1.to_string(),
            stderr: String::from_utf8(out.stderr).unwrap(),
            status: out.status,
            launcher,
        }
    }
}

/// Kills the server the fixture's starts left (the `ppid` of a warm one).
struct KillOnDrop(Vec<u32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for pid in &self.0 {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        }
    }
}

fn gone_within(pid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if !Path::new(&format!("/proc/{pid}")).exists() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn later_starts_are_forked_by_the_server_the_first_left_and_are_their_own() {
    let f = Fixture::new("warm");
    let (a, b) = (f.tmp.join("a"), f.tmp.join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    let me = std::process::id();

    let cold = f.run(&["-v"], "one", &a, "first");
    assert_eq!(
        (cold.pid, cold.ppid),
        (cold.launcher, me),
        "the first start is the launcher's process, the binary started: {cold:?}"
    );
    let expect = |x: &str, cwd: &Path, stdin: &str| {
        format!(
            "[{:?}, \"-v\"] cwd={} x=Some({x:?}) warm=None stdin={stdin}\n",
            f.prog.display().to_string(),
            cwd.display()
        )
    };
    assert_eq!(cold.rest, expect("one", &a, "first"));
    assert!(cold.status.success(), "{cold:?}");

    let warm = f.run(&["-v"], "two", &b, "exit 3");
    let _server = KillOnDrop(vec![warm.ppid]);
    assert_ne!(warm.pid, warm.launcher, "forked, not started: {warm:?}");
    assert_ne!(warm.ppid, me, "its parent is the server: {warm:?}");
    assert_eq!(warm.rest, expect("two", &b, "exit 3"), "its own everything");
    assert!(warm.stderr.contains("stderr of exit 3"), "{warm:?}");
    assert_eq!(
        warm.status.code(),
        Some(3),
        "its exit code is the launcher's"
    );

    let again = f.run(&["-v"], "three", &a, "term");
    assert_eq!(again.ppid, warm.ppid, "one server serves every start");
    assert_eq!(
        again.status.signal(),
        Some(15),
        "killed by a signal, the launcher ends by it too: {again:?}"
    );

    let other = f.run(&["-w"], "four", &a, "x");
    assert_eq!(
        other.pid, other.launcher,
        "other arguments: a start of the binary, as the server's process would have other argv"
    );

    // A killed launcher (of-watchdog at exec_timeout) takes its process.
    let (mut child, pid) = f.sleeping(&a);
    assert_ne!(pid, child.id(), "forked, not started");
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        gone_within(pid, Duration::from_secs(10)),
        "process {pid} outlived its killed launcher"
    );

    // SIGTERM to the launcher is the process's.
    let (mut child, pid) = f.sleeping(&a);
    let status = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(status.success());
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(15), "process {pid}");
}

/// The server lives as long as what started the binary it came from (the
/// watchdog, in a pod): when that ends, the server does, and its socket
/// goes.
#[test]
fn the_server_ends_with_the_process_that_started_its_binary() {
    let f = Fixture::new("warm-starter");
    let sockets = |dir: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .map(|d| {
                d.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|e| e == "sock"))
                    .collect()
            })
            .unwrap_or_default()
    };
    let tmp = f.tmp.join("starter");
    std::fs::create_dir_all(&tmp).unwrap();
    // SAFETY: a plain system call.
    let uid = unsafe { getuid() };
    let dir = tmp.join(format!("fmerge-warm-{uid}"));
    // A starter (as of-watchdog is) that starts the binary once and stays.
    let mut starter = Command::new("sh")
        .arg("-c")
        .arg(r#""$0" "$1" -z </dev/null >/dev/null 2>&1; echo started; exec sleep 60"#)
        .arg(&f.launcher)
        .arg(&f.prog)
        .env("TMPDIR", &tmp)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(starter.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "started\n");
    let left = sockets(&dir);
    assert_eq!(left.len(), 1, "the first start left a server: {left:?}");
    starter.kill().unwrap();
    starter.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !sockets(&dir).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        sockets(&dir),
        Vec::<PathBuf>::new(),
        "the server outlived its starter"
    );
}

unsafe extern "C" {
    fn getuid() -> u32;
}

/// The server's socket takes a client that stalls, one that sends what no
/// launcher sends, one that sends a request and hangs up and one that asks
/// for other arguments, and goes on forking launchers' processes.
#[test]
fn clients_that_stall_lie_or_hang_up_leave_the_server_serving() {
    use std::os::unix::net::UnixStream;
    let f = Fixture::new("warm-hostile");
    let cwd = f.tmp.clone();
    let cold = f.run(&[], "cold", &cwd, "first");
    assert_eq!(cold.pid, cold.launcher, "{cold:?}");
    // SAFETY: a plain system call.
    let uid = unsafe { getuid() };
    let socket = std::fs::read_dir(f.tmp.join(format!("fmerge-warm-{uid}")))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "sock"))
        .expect("the first start left a server");
    let stalled = UnixStream::connect(&socket).unwrap();
    let mut liar = UnixStream::connect(&socket).unwrap();
    liar.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let mut hung_up = UnixStream::connect(&socket).unwrap();
    hung_up.write_all(&[200, 0, 0]).unwrap();
    drop(hung_up);
    let warm = f.run(&[], "warm", &cwd, "second");
    let _server = KillOnDrop(vec![warm.ppid]);
    assert_ne!(warm.pid, warm.launcher, "still served warm: {warm:?}");
    assert!(warm.rest.contains("stdin=second"), "{warm:?}");
    drop(stalled);
    let mut reply = Vec::new();
    let _ = liar.read_to_end(&mut reply);
    assert!(
        reply.is_empty() || reply[0] == b'N',
        "a lie gets no process: {reply:?}"
    );
    let again = f.run(&[], "warm", &cwd, "third");
    assert_eq!(again.ppid, warm.ppid, "the same server: {again:?}");
}

/// The launcher used wrongly says why and what to do, and starts nothing.
#[test]
fn the_launcher_without_a_binary_or_with_a_missing_one_says_why() {
    let launcher = env!("CARGO_BIN_EXE_fmerge-warm");
    let tmp = common::scratch("warm-misuse");
    for (args, code) in [(vec![], 2), (vec!["/nonexistent/merged"], 127)] {
        let out = Command::new(launcher)
            .args(&args)
            .env("TMPDIR", &tmp)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("error: fmerge-warm ") && stderr.contains("\nfix: "),
            "{args:?}: {stderr}"
        );
    }
}
