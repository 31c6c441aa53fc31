//! Runs a call to a member the way of-watchdog 0.11.6 runs a request: a
//! process per call, the body on stdin, the reply from stdout, killed with
//! SIGKILL at `exec_timeout` as Go's `exec.CommandContext` does. A process of
//! its own, not a thread, because a member is a whole program: it owns its
//! globals, its stdio and its exit. The process is forked by the binary's
//! zygote ([`crate::zygote`]) where it can be, else started from this binary,
//! told by `FMERGE_RUN_MEMBER` which member to be. Where fmerge found
//! nothing in a member's code that needs a process, and its `exec_timeout`
//! cannot cut it off before this process ends, it runs in this process
//! instead ([`crate::inproc`]), answered the same way.

use std::ffi::{CStr, OsString};
use std::io::{Read, Write};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::cgi::{self, Call};
use crate::inproc;
use crate::sys::{P_PID, SIGKILL, WEXITED, WNOWAIT, kill, waitid};
use crate::zygote::{self, Outcome};
use crate::{Member, Mode, RUN_MEMBER_VAR};

/// of-watchdog's `content_type` when unset (config.go).
pub const DEFAULT_CONTENT_TYPE: &str = "application/octet-stream";
/// of-watchdog's `exec_timeout` when unset or unparsable (config.go's
/// `defaultTimeout`).
pub const DEFAULT_EXEC_TIMEOUT: Duration = Duration::from_secs(30);

/// A reply to send back for a call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// The of-watchdog settings of one member that shape its reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub content_type: String,
    /// `None`: no limit (`exec_timeout` of zero or less).
    pub timeout: Option<Duration>,
    /// The port of its `upstream_url` (of-watchdog reads `http_upstream_url`
    /// after it), for a member that serves HTTP itself.
    pub upstream_port: Option<u16>,
}

/// A member's settings, from its namespaced variables in `env`.
pub fn settings(name: &str, env: &[(OsString, OsString)]) -> Settings {
    let prefix = cgi::namespaced_prefix(name);
    let get = |key: &str| {
        let want = format!("{prefix}{key}");
        env.iter()
            .rev()
            .find(|(k, _)| k.to_str() == Some(want.as_str()))
            .and_then(|(_, v)| v.to_str().map(str::to_string))
    };
    Settings {
        content_type: get("content_type").unwrap_or_else(|| DEFAULT_CONTENT_TYPE.to_string()),
        timeout: exec_timeout(get("exec_timeout").as_deref()),
        upstream_port: get("http_upstream_url")
            .or_else(|| get("upstream_url"))
            .and_then(|url| url_port(&url)),
    }
}

/// The port an `upstream_url` names (80 where it names none).
fn url_port(url: &str) -> Option<u16> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let host = rest.split('/').next()?;
    match host.rsplit_once(':') {
        Some((_, port)) => port.parse().ok(),
        None => Some(80),
    }
}

/// The limit an `exec_timeout` setting (`None`: unset) means, as
/// of-watchdog reads it; `None` for no limit.
fn exec_timeout(setting: Option<&str>) -> Option<Duration> {
    match setting.and_then(cgi::parse_watchdog_duration) {
        Some(d) => d.timeout(),
        None => Some(DEFAULT_EXEC_TIMEOUT),
    }
}

/// Whether a call to `member`, whose settings are `settings`, runs in this
/// process ([`inproc`]); the others need a process.
pub fn runs_here(member: &Member, settings: &Settings) -> bool {
    member.run.is_some() && inproc::fits(settings.timeout, own_timeout())
}

/// The `exec_timeout` this process runs under (its watchdog's setting, as
/// of-watchdog reads it, which the process inherits), `None` for no limit.
fn own_timeout() -> Option<Duration> {
    static OWN: OnceLock<Option<Duration>> = OnceLock::new();
    // From the environment itself (`vars_os` reads it without `getenv`,
    // which a member's thread would answer with the member's own).
    *OWN.get_or_init(|| {
        let own = std::env::vars_os()
            .find(|(k, _)| k == "exec_timeout")
            .and_then(|(_, v)| v.into_string().ok());
        exec_timeout(own.as_deref())
    })
}

/// The binary to start members from: this one.
pub fn current_program() -> PathBuf {
    std::env::current_exe().unwrap_or_else(|_| PathBuf::from("/proc/self/exe"))
}

/// Runs `call` to `member` with this process's environment: in this
/// process where it may run here, else forked by the zygote, or started
/// from this binary where the zygote cannot serve.
pub fn run(member: &Member, call: &Call) -> Reply {
    if let Some(reply) = run_in_process(member, call) {
        return reply;
    }
    let base: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let settings = settings(&call.name, &base);
    let env = cgi::member_env(base, call, crate::caller_env());
    let start = Instant::now();
    let ended = match zygote::execute(&call.name, &env, &call.body, settings.timeout) {
        Outcome::Ran(out, status) => (
            out,
            status.and_then(|raw| status_error(ExitStatus::from_raw(raw))),
        ),
        Outcome::NotStarted => execute(&current_program(), call, env, settings.timeout),
    };
    answer(member.mode, settings, start, ended)
}

/// Runs `call` to `member` in this process, on this thread, if it may run
/// here ([`runs_here`]); `None` if it needs a process of its own.
pub fn run_in_process(member: &Member, call: &Call) -> Option<Reply> {
    // A member that serves HTTP itself runs once, as a server (`servers`).
    let entry = member.run.filter(|_| member.mode != Mode::Http)?;
    let resident = resident(member.name);
    if !runs_here(member, &resident.settings) {
        return None;
    }
    let start = Instant::now();
    let (out, code) = inproc::run(
        &call.name,
        entry,
        &call.body,
        resident.env,
        cgi::cgi_vars(call),
    );
    let ended = (out, status_error(ExitStatus::from_raw(code << 8)));
    Some(answer(member.mode, resident.settings.clone(), start, ended))
}

/// What every call to one member run in this process has in common, made
/// at its first: its settings and its environment but for the call's own
/// variables, both from this process's environment, which its members do
/// not change (fmerge runs no member here that writes it).
pub(crate) struct Resident {
    pub(crate) settings: Settings,
    /// `KEY=VALUE`, later entries winning.
    pub(crate) env: &'static [&'static CStr],
    /// For a member that serves HTTP, what the threads acting for it
    /// outside its server have ([`inproc::serving_context`]), made at the
    /// first need.
    serving: OnceLock<Arc<inproc::Context>>,
}

impl Resident {
    /// The context of threads acting for member `name` (this one's) that
    /// serves HTTP, outside its own server.
    pub(crate) fn serving(&self, name: &str) -> Arc<inproc::Context> {
        Arc::clone(
            self.serving
                .get_or_init(|| inproc::serving_context(name, self.env)),
        )
    }
}

/// The [`Resident`] of member `name`.
pub(crate) fn resident(name: &'static str) -> &'static Resident {
    static MADE: Mutex<Vec<(&'static str, &'static Resident)>> = Mutex::new(Vec::new());
    let mut made = MADE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, r)) = made.iter().find(|(n, _)| *n == name) {
        return r;
    }
    let base: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let settings = settings(name, &base);
    let env = inproc::c_env(cgi::own_env(base, name, crate::caller_env()));
    let r: &'static Resident = Box::leak(Box::new(Resident {
        settings,
        env,
        serving: OnceLock::new(),
    }));
    made.push((name, r));
    r
}

/// Runs `call` with `program` (`argv[0]` the member's name), `base` being the
/// environment it inherits, and answers as of-watchdog's runner for `mode`.
pub fn run_program(
    program: &Path,
    mode: Mode,
    call: &Call,
    base: Vec<(OsString, OsString)>,
) -> Reply {
    let settings = settings(&call.name, &base);
    let env = cgi::member_env(base, call, &[]);
    let start = Instant::now();
    let ended = execute(program, call, env, settings.timeout);
    answer(mode, settings, start, ended)
}

/// The reply of-watchdog's runner for `mode` makes of a process that wrote
/// `out` and ended with `result`, started at `start`.
fn answer(
    mode: Mode,
    settings: Settings,
    start: Instant,
    (out, result): (Vec<u8>, Result<(), String>),
) -> Reply {
    let mut headers = vec![("Content-Type".to_string(), settings.content_type)];
    let duration = || {
        (
            "X-Duration-Seconds".to_string(),
            format!("{:.6}", start.elapsed().as_secs_f64()),
        )
    };
    match mode {
        // Streaming: the header is written before the process runs, so a
        // failure cannot change the status.
        Mode::Streaming => Reply {
            status: 200,
            headers,
            body: out,
        },
        // (A member that serves HTTP itself is never run per call: the
        // stand-in forwards to its server.)
        Mode::Serializing | Mode::Http => match result {
            Ok(()) => {
                headers.push(duration());
                Reply {
                    status: 200,
                    headers,
                    body: out,
                }
            }
            Err(e) => {
                headers.push(duration());
                Reply {
                    status: 500,
                    headers,
                    body: e.into_bytes(),
                }
            }
        },
    }
}

/// Go's `ExitError` text for a status that is not success.
fn status_error(status: ExitStatus) -> Result<(), String> {
    if status.success() {
        return Ok(());
    }
    match (status.code(), status.signal()) {
        (Some(code), _) => Err(format!("exit status {code}")),
        (None, Some(9)) => Err("signal: killed".to_string()),
        (None, Some(sig)) => Err(format!("signal: {sig}")),
        _ => Err(format!("{status}")),
    }
}

/// Starts the process, feeds it `call.body`, and returns what it wrote to
/// stdout with how it ended.
fn execute(
    program: &Path,
    call: &Call,
    env: Vec<(OsString, OsString)>,
    timeout: Option<Duration>,
) -> (Vec<u8>, Result<(), String>) {
    let mut cmd = Command::new(program);
    cmd.arg0(&call.name)
        .env_clear()
        .envs(env)
        .env(RUN_MEMBER_VAR, &call.name)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return (Vec::new(), Err(e.to_string())),
    };
    let pid = child.id();
    // Set once the process is known to have exited but before it is reaped,
    // so that the timer never kills a pid that may have been reused.
    let exited = Arc::new(Mutex::new(false));
    let (done, timer_rx) = mpsc::channel::<()>();
    let timer = timeout.map(|t| {
        let exited = Arc::clone(&exited);
        std::thread::spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = timer_rx.recv_timeout(t) {
                let exited = exited.lock().unwrap_or_else(|p| p.into_inner());
                if !*exited {
                    // SAFETY: the child is not reaped while `exited` is false
                    // and this lock is held, so `pid` is still that child.
                    unsafe { kill(pid as i32, SIGKILL) };
                }
            }
        })
    });
    // A thread writes stdin so that a member that answers before reading
    // everything cannot deadlock against a full pipe.
    let mut stdin = child.stdin.take();
    let body = call.body.clone();
    let writer = std::thread::spawn(move || {
        if let Some(s) = stdin.as_mut() {
            let _ = s.write_all(&body);
        }
    });
    let mut out = Vec::new();
    let read = child.stdout.take().map(|mut s| s.read_to_end(&mut out));
    let mut info = [0u64; 16];
    loop {
        // SAFETY: `info` is as large as siginfo_t; WNOWAIT leaves the child
        // unreaped, so its pid stays valid for the timer.
        let r = unsafe { waitid(P_PID, pid, &mut info, WEXITED | WNOWAIT) };
        if r == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
            break;
        }
    }
    *exited.lock().unwrap_or_else(|p| p.into_inner()) = true;
    drop(done);
    let status = child.wait();
    let _ = writer.join();
    if let Some(t) = timer {
        let _ = t.join();
    }
    let result = match (status, read) {
        (Err(e), _) | (_, Some(Err(e))) => Err(e.to_string()),
        (Ok(s), _) => status_error(s),
    };
    (out, result)
}
