//! The count, and with the access log the line, of each request and
//! in-process call however it ends.

use crate::metrics;
use http::{Method, StatusCode, Uri};
use std::time::Instant;

/// The status counted for a request whose client went away before its
/// reply (nginx's "client closed request").
pub(crate) const CLIENT_CLOSED: u16 = 499;

/// The URI and call id for the access log line, when it is on (boxed: a
/// record lives in every call's state, the log is mostly off).
pub(crate) type LogLine = Box<(Uri, Option<String>)>;

/// Counts (and with the access log, logs) one request of `function` when
/// it ends: with its reply's status, or [`CLIENT_CLOSED`] when it is
/// dropped first (the client disconnected, or the caller gave up).
pub(crate) struct Record {
    function: &'static str,
    caller: &'static str,
    method: Method,
    started: Instant,
    log: Option<LogLine>,
    done: bool,
}

impl Record {
    pub(crate) fn start(
        function: &'static str,
        caller: &'static str,
        method: Method,
        log: Option<LogLine>,
    ) -> Record {
        Record {
            function,
            caller,
            method,
            started: Instant::now(),
            log,
            done: false,
        }
    }

    pub(crate) fn finish(mut self, status: StatusCode, bytes: usize) {
        self.done = true;
        self.count(status, bytes);
    }

    fn count(&self, status: StatusCode, bytes: usize) {
        let elapsed = self.started.elapsed();
        metrics::finished(self.function, self.caller, &self.method, status, elapsed);
        if let Some((uri, call_id)) = self.log.as_deref() {
            let call_id = call_id
                .as_deref()
                .map(|id| format!(" call_id={id}"))
                .unwrap_or_default();
            eprintln!(
                "{}: {} {uri} {} {bytes}B {:.4}s caller={}{call_id}",
                self.function,
                self.method,
                status.as_u16(),
                elapsed.as_secs_f64(),
                self.caller,
            );
        }
    }
}

impl Drop for Record {
    fn drop(&mut self) {
        if !self.done {
            let closed = StatusCode::from_u16(CLIENT_CLOSED).expect("a valid status");
            self.count(closed, 0);
        }
    }
}
