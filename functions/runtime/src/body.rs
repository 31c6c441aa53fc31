//! A request's body, read by its read deadline into one buffer and charged
//! to the body budget (`max_buffered_bytes`) as its bytes arrive: never on
//! a declared length, so that a client that declares much and sends
//! little holds nothing; a body that finds the budget spent waits a while
//! for it, then gets 503 with `Retry-After`.

use crate::connections::BUDGET_UNIT;
use crate::limits::{closing, deadline_after, retry_later};
use crate::server_settings::ServerSettings;
use crate::{Bytes, Error, Response};
use bytes::BytesMut;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use hyper::body::Incoming;
use hyper::header;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};

/// How long a body may wait for budget to free, each time it needs more,
/// before it gets [`over_budget`]. Bodies only ever wait on each other, so
/// some must give up: those that waited longest free their share first.
const BUDGET_WAIT: Duration = Duration::from_secs(1);

/// Takes enough of the body budget into `held` for `total` bytes of a body
/// (bytes that arrived, never a declared length), waiting up to
/// [`BUDGET_WAIT`] for it; the reply is [`over_budget`] if it does not free.
async fn charge(
    settings: &ServerSettings,
    buffered: &Arc<Semaphore>,
    held: &mut Option<OwnedSemaphorePermit>,
    total: usize,
) -> Result<(), Response> {
    if settings.max_buffered_bytes == 0 {
        return Ok(());
    }
    let need = total.div_ceil(BUDGET_UNIT);
    let have = held.as_ref().map_or(0, OwnedSemaphorePermit::num_permits);
    if need <= have {
        return Ok(());
    }
    if need > budget_units(settings.max_buffered_bytes) {
        return Err(over_budget(settings));
    }
    let more = u32::try_from(need - have).unwrap_or(u32::MAX);
    let permit = match buffered.clone().try_acquire_many_owned(more) {
        Ok(permit) => permit,
        Err(TryAcquireError::Closed) => return Err(over_budget(settings)),
        Err(TryAcquireError::NoPermits) => {
            let wait = buffered.clone().acquire_many_owned(more);
            match tokio::time::timeout(BUDGET_WAIT, wait).await {
                Ok(Ok(permit)) => permit,
                _ => return Err(over_budget(settings)),
            }
        }
    };
    match held {
        Some(h) => h.merge(permit),
        None => *held = Some(permit),
    }
    Ok(())
}

/// 503 for a body past `max_buffered_bytes`.
fn over_budget(settings: &ServerSettings) -> Response {
    retry_later(format!(
        "the request bodies in memory would exceed max_buffered_bytes ({} bytes); retry later",
        settings.max_buffered_bytes
    ))
}

/// The budget's size in its units, for the semaphore.
pub(crate) fn budget_units(max_buffered_bytes: usize) -> usize {
    (max_buffered_bytes / BUDGET_UNIT).max(1)
}

/// The most of a declared length allocated before the body has arrived:
/// past it the buffer grows with what arrives.
const FIRST_ALLOCATION: usize = 1 << 20;

/// Reads a body of at most `max_body_size` bytes by `deadline` (the
/// request's read deadline; `None`: `read_timeout` from now), into one
/// buffer, holding the body budget for the bytes that arrived. A declared
/// length over the limit is refused before a byte of the body is read.
pub(crate) async fn read_body(
    settings: &ServerSettings,
    buffered: &Arc<Semaphore>,
    headers: &http::HeaderMap,
    body: Incoming,
    deadline: Option<tokio::time::Instant>,
) -> Result<(Bytes, Option<OwnedSemaphorePermit>), Response> {
    let s = settings;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(n) = declared {
        s.limits.body_fits(n).map_err(|r| closing(*r))?;
    }
    let declared = declared.map_or(0, |n| n as usize);
    let mut body = Limited::new(body, s.limits.max_body_size);
    let mut held = None;
    let mut buffer = BytesMut::new();
    let read = async {
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| match e.downcast_ref::<LengthLimitError>() {
                Some(_) => closing(crate::limits::too_large(s.limits.max_body_size)),
                None => Error::bad_request(format!("cannot read request body: {e}"))
                    .into_response_quiet(),
            })?;
            if let Ok(data) = frame.into_data() {
                let total = buffer.len() + data.len();
                charge(settings, buffered, &mut held, total).await?;
                if buffer.capacity() == 0 {
                    buffer.reserve(declared.min(FIRST_ALLOCATION).max(data.len()));
                }
                buffer.extend_from_slice(&data);
            }
        }
        Ok(())
    };
    let deadline = deadline.or_else(|| deadline_after(s.read_timeout));
    match deadline {
        None => read.await?,
        Some(deadline) => match tokio::time::timeout_at(deadline, read).await {
            Ok(result) => result?,
            Err(_) => {
                let r = Error::with_status(
                    408,
                    format!(
                        "request not received within read_timeout ({:?})",
                        s.read_timeout
                    ),
                )
                .into_response_quiet();
                return Err(closing(r));
            }
        },
    }
    Ok((buffer.freeze(), held))
}
