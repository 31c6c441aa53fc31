//! `--metrics URL`: fmerge scrapes each pod's metrics endpoint itself, at
//! the window's start, every [`MEMORY_EVERY`] and at its end, and stamps
//! each process sample with its own clock (the midpoint of the request
//! that got it). The runtime's `/metrics` writes no timestamps, so two
//! files saved with a plain `curl` measure no cpu; here the window is the
//! time between fmerge's own requests, read from one monotonic clock, and
//! the memory peak is taken over every scrape of the window, not two.
//!
//! Plain HTTP/1.0 (the runtime's metrics port serves plain HTTP; a 1.0
//! request gets a body that ends with the connection, never chunked).

use anyhow::{Context as _, Result, bail};
use std::io::{Read as _, Write as _};
use std::net::{TcpStream, ToSocketAddrs as _};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::usage::{CPU, MEMORY};

/// How often memory is sampled within the window, beside its two ends:
/// the peak is the most any of these scrapes saw.
pub const MEMORY_EVERY: Duration = Duration::from_secs(5);

/// The window's length when `--metrics-window` is not given, seconds.
pub const DEFAULT_WINDOW: f64 = 60.0;

/// How long one scrape may take to connect, and to answer.
const TIMEOUT: Duration = Duration::from_secs(10);

/// Whether a `--metrics` value is an endpoint to scrape, not a file.
pub fn is_endpoint(value: &str) -> bool {
    value.starts_with("http://") || value.starts_with("https://")
}

/// An endpoint: where to connect, and what to ask for.
#[derive(Debug, Clone, PartialEq)]
struct Endpoint {
    url: String,
    host: String,
    port: u16,
    path: String,
}

/// `http://host[:port][/path]`, checked.
fn endpoint(url: &str) -> Result<Endpoint> {
    let fix = "fix: give each pod's metrics endpoint as http://HOST:PORT/metrics (the runtime's metrics port, 8081 by default), or scrape them yourself and give the files";
    let Some(rest) = url.strip_prefix("http://") else {
        bail!(
            "--metrics {url}: only plain http:// is scraped (the runtime's metrics port serves no TLS)\n{fix}"
        );
    };
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/metrics"),
    };
    // `[::1]` is a host; `[::1]:8081` a host and a port.
    let port_at = authority
        .rsplit_once(':')
        .filter(|(_, p)| !p.ends_with(']'));
    let (host, port) = match port_at {
        Some((host, port)) => match port.parse::<u16>() {
            Ok(port) if port > 0 => (host, port),
            _ => bail!("--metrics {url}: `{port}` is not a port\n{fix}"),
        },
        None => (authority, 80),
    };
    if host.is_empty() || authority.contains('@') {
        bail!("--metrics {url}: no host to scrape\n{fix}");
    }
    Ok(Endpoint {
        url: url.to_string(),
        host: host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string(),
        port,
        path: path.to_string(),
    })
}

/// One GET of `e`: the body of a 200.
fn get(e: &Endpoint) -> Result<String> {
    let fix = "fix: give the metrics endpoint of a running pod (the runtime serves it on its `metrics_port`, 8081 by default), reachable from here (e.g. `kubectl port-forward`)";
    let address = (e.host.as_str(), e.port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .with_context(|| format!("--metrics {}: cannot resolve {}\n{fix}", e.url, e.host))?;
    let mut stream = TcpStream::connect_timeout(&address, TIMEOUT)
        .with_context(|| format!("--metrics {}: cannot connect\n{fix}", e.url))?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.set_write_timeout(Some(TIMEOUT))?;
    let request = format!(
        "GET {} HTTP/1.0\r\nHost: {}:{}\r\nAccept: text/plain\r\n\r\n",
        e.path, e.host, e.port
    );
    let mut reply = Vec::new();
    stream
        .write_all(request.as_bytes())
        .and_then(|()| stream.read_to_end(&mut reply))
        .with_context(|| format!("--metrics {}: no whole reply\n{fix}", e.url))?;
    let reply = String::from_utf8_lossy(&reply);
    let Some((head, body)) = reply.split_once("\r\n\r\n") else {
        bail!("--metrics {}: the reply is not HTTP\n{fix}", e.url);
    };
    let status = head.split_whitespace().nth(1).unwrap_or_default();
    if status != "200" {
        bail!(
            "--metrics {}: answered `{}`, not 200\n{fix}",
            e.url,
            head.lines().next().unwrap_or_default()
        );
    }
    Ok(body.to_string())
}

/// `body` with each process sample that has no timestamp stamped `ms`, and
/// ended with `# EOF` (one pod, however its exposition ends).
fn stamped(body: &str, ms: u128) -> String {
    let mut out = String::with_capacity(body.len() + 64);
    for line in body.lines() {
        if line.trim() == "# EOF" {
            continue;
        }
        out.push_str(line);
        if let prometheus_parse::LineInfo::Sample {
            metric_name,
            timestamp: None,
            ..
        } = prometheus_parse::LineInfo::parse(line)
            && (metric_name == MEMORY || metric_name == CPU)
        {
            out.push_str(&format!(" {ms}"));
        }
        out.push('\n');
    }
    out.push_str("# EOF\n");
    out
}

/// Scrapes every one of `urls` at the window's start, every
/// [`MEMORY_EVERY`], and `window` after the start; each scrape is the pods'
/// texts concatenated, named by when it was taken. `say` hears what is
/// being waited for.
pub fn scrape(
    urls: &[String],
    window: Duration,
    say: &dyn Fn(&str),
) -> Result<Vec<(String, String)>> {
    let endpoints: Vec<Endpoint> = urls.iter().map(|u| endpoint(u)).collect::<Result<_>>()?;
    // One clock for every stamp: the epoch's time at the start, advanced by
    // the monotonic clock, so no step of the wall clock moves the window.
    let (origin, epoch_ms) = (
        Instant::now(),
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .context("the system clock is before 1970")?
            .as_millis(),
    );
    let mut offsets = Vec::new();
    let mut at = Duration::ZERO;
    while at < window {
        offsets.push(at);
        at += MEMORY_EVERY;
    }
    offsets.push(window);
    let mut scrapes = Vec::new();
    for (k, &offset) in offsets.iter().enumerate() {
        if let Some(wait) = (origin + offset).checked_duration_since(Instant::now()) {
            if k == 1 {
                say(&format!(
                    "scraped {} metrics endpoint(s); scraping again over the next {:.0} s (--metrics-window)",
                    endpoints.len(),
                    window.as_secs_f64()
                ));
            }
            std::thread::sleep(wait);
        }
        let mut text = String::new();
        for e in &endpoints {
            let sent = origin.elapsed();
            let body = get(e)?;
            let mid = (sent + origin.elapsed()) / 2;
            text.push_str(&stamped(&body, epoch_ms + mid.as_millis()));
        }
        let name = format!(
            "{} at +{:.1} s",
            if endpoints.len() == 1 {
                endpoints[0].url.clone()
            } else {
                format!("{} endpoints", endpoints.len())
            },
            offset.as_secs_f64()
        );
        scrapes.push((name, text));
    }
    Ok(scrapes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoint_is_plain_http_with_a_host_and_port() {
        let e = endpoint("http://10.0.0.5:8081/metrics").unwrap();
        assert_eq!(
            (e.host.as_str(), e.port, e.path.as_str()),
            ("10.0.0.5", 8081, "/metrics")
        );
        let e = endpoint("http://pod").unwrap();
        assert_eq!((e.port, e.path.as_str()), (80, "/metrics"));
        let e = endpoint("http://[::1]/m").unwrap();
        assert_eq!(
            (e.host.as_str(), e.port, e.path.as_str()),
            ("::1", 80, "/m")
        );
        let e = endpoint("http://[::1]:8081").unwrap();
        assert_eq!((e.host.as_str(), e.port), ("::1", 8081));
        for bad in [
            "https://pod:8081/metrics",
            "http://pod:x/metrics",
            "http://:8081/",
        ] {
            let e = endpoint(bad).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("\nfix: "), "{e}");
        }
    }

    #[test]
    fn process_samples_get_the_scrapes_time_and_each_pod_an_end() {
        let body = "http_requests_total{function=\"a\",caller=\"\"} 3\n\
            process_cpu_seconds_total 1.5\n\
            process_resident_memory_bytes 100 7\n# EOF\n";
        assert_eq!(
            stamped(body, 42),
            "http_requests_total{function=\"a\",caller=\"\"} 3\n\
             process_cpu_seconds_total 1.5 42\n\
             process_resident_memory_bytes 100 7\n# EOF\n"
        );
    }
}
