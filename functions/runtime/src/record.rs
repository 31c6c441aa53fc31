//! The count, and with the access log the line, of each request and
//! in-process call however it ends.

use crate::metrics;
use http::{Method, StatusCode, Uri};
use std::time::{Duration, Instant};

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
    /// A request or call that began at `started` (the server's, as its head
    /// was read: the clock read once for the record and the reply's timing).
    pub(crate) fn start(
        function: &'static str,
        caller: &'static str,
        method: Method,
        log: Option<LogLine>,
        started: Instant,
    ) -> Record {
        Record {
            function,
            caller,
            method,
            started,
            log,
            done: false,
        }
    }

    pub(crate) fn finish(self, status: StatusCode, bytes: usize) {
        let elapsed = self.started.elapsed();
        self.finish_after(status, bytes, elapsed);
    }

    /// [`Record::finish`] when its caller has read the clock already:
    /// `elapsed` since the record's start.
    pub(crate) fn finish_after(mut self, status: StatusCode, bytes: usize, elapsed: Duration) {
        self.done = true;
        self.count(status, bytes, elapsed);
    }

    fn count(&self, status: StatusCode, bytes: usize, elapsed: Duration) {
        metrics::finished(self.function, self.caller, &self.method, status, elapsed);
        if let Some((uri, call_id)) = self.log.as_deref() {
            // of-watchdog's line (`GET /path - 200 OK - ContentLength: 5B
            // (0.0012s)`, its call id in brackets), after the name every
            // line starts with, and the caller.
            let call_id = call_id
                .as_deref()
                .map(|id| format!(" [{id}]"))
                .unwrap_or_default();
            let reason = status.canonical_reason().unwrap_or_default();
            eprintln!(
                "{}: {} {uri} - {}{}{reason} - ContentLength: {} ({:.4}s) caller={}{call_id}",
                self.function,
                self.method,
                status.as_u16(),
                if reason.is_empty() { "" } else { " " },
                human_size(bytes),
                elapsed.as_secs_f64(),
                self.caller,
            );
        }
    }
}

/// `bytes` as of-watchdog's log writes a size (go-units' `HumanSize`: four
/// significant digits, decimal units).
fn human_size(bytes: usize) -> String {
    const UNITS: [&str; 7] = ["B", "kB", "MB", "GB", "TB", "PB", "EB"];
    let mut size = bytes as f64;
    let mut unit = 0;
    while size >= 1000.0 && unit < UNITS.len() - 1 {
        size /= 1000.0;
        unit += 1;
    }
    let digits = if size >= 100.0 {
        1
    } else if size >= 10.0 {
        2
    } else {
        3
    };
    let text = format!("{size:.digits$}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{}", UNITS[unit])
}

impl Drop for Record {
    fn drop(&mut self) {
        if !self.done {
            let closed = StatusCode::from_u16(CLIENT_CLOSED).expect("a valid status");
            self.count(closed, 0, self.started.elapsed());
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_are_written_as_of_watchdog_writes_them() {
        let sizes = [0, 5, 1000, 1234, 4_194_304, 33_554_432].map(super::human_size);
        assert_eq!(sizes, ["0B", "5B", "1kB", "1.234kB", "4.194MB", "33.55MB"]);
    }
}
