//! `Idempotency-Key` on writes (the IETF httpapi draft, as Stripe runs it): a request repeated
//! with its key gets the first response again, marked `Idempotent-Replayed: true`; the key
//! sent with another request (method, path, `If-Match` or body) is refused with 422.
//!
//! Two layers keep that promise. This server remembers the successful responses of keyed
//! writes for a day (bounded), so a repeat gets exactly the first response, and a repeat
//! arriving while the first is still running waits for it. Underneath, the key reaches the
//! provider as the call's idempotency key, whose receipts are stored with the documents: a
//! repeat sent to another server of the deployment, or after a restart, applies nothing twice
//! either, and reports what the first call did (also marked as a replay).
//!
//! Every write runs to its end once started, even when its client goes away: a lost reply is
//! then only a lost reply, and its repeat finds the outcome.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, MatchedPath, Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use memory_core::IdempotencyKey;
use sha2::{Digest, Sha256};
use tokio::sync::watch;
use tokio_util::task::TaskTracker;

use crate::auth::{Caller, Principal};
use crate::headers::{IDEMPOTENCY_KEY, IDEMPOTENT_REPLAYED};
use crate::openapi::WriteShape;
use crate::problem::{Problem, ProblemKind};

/// How long a response is remembered for its key.
const KEPT_FOR: Duration = Duration::from_secs(24 * 60 * 60);

/// The most responses remembered, and their most bytes: the oldest go first.
const MAX_KEPT: usize = 10_000;
const MAX_KEPT_BYTES: usize = 64 * 1024 * 1024;

/// The responses of keyed writes, by caller and key.
#[derive(Clone, Default)]
pub(crate) struct Replays {
    state: Arc<Mutex<Kept>>,
}

#[derive(Default)]
struct Kept {
    entries: HashMap<(String, String), Entry>,
    /// Finished entries, oldest first, to evict by age and size.
    order: VecDeque<((String, String), Instant)>,
    bytes: usize,
}

enum Entry {
    Running {
        fingerprint: [u8; 32],
        done: watch::Receiver<bool>,
    },
    Done {
        fingerprint: [u8; 32],
        response: Stored,
        at: Instant,
    },
}

#[derive(Clone)]
struct Stored {
    status: StatusCode,
    headers: Vec<(HeaderName, HeaderValue)>,
    body: Bytes,
}

impl Stored {
    fn replay(&self) -> Response {
        let mut response = (self.status, self.body.clone()).into_response();
        for (name, value) in &self.headers {
            response.headers_mut().insert(name.clone(), value.clone());
        }
        let headers = response.headers_mut();
        headers.insert(IDEMPOTENT_REPLAYED, HeaderValue::from_static("true"));
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    }
}

/// What a keyed request finds.
enum Found {
    Replay(Response),
    Refused(Problem),
    Wait(watch::Receiver<bool>),
    Run(watch::Sender<bool>),
}

impl Replays {
    fn lock(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn find(&self, slot: &(String, String), fingerprint: [u8; 32]) -> Found {
        let mut kept = self.lock();
        kept.evict(Instant::now());
        let reused = || {
            Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                ProblemKind::Memory(memory_core::ErrorKind::Refused),
                format!(
                    "Idempotency-Key {:?} was already used for another request (method, path, If-Match or body); a key names one request: use a fresh key for a new one",
                    slot.1
                ),
            )
            .with_code(memory_core::KEY_REUSED_CODE)
        };
        match kept.entries.get(slot) {
            Some(Entry::Done {
                fingerprint: seen,
                response,
                ..
            }) => {
                if *seen == fingerprint {
                    Found::Replay(response.replay())
                } else {
                    Found::Refused(reused())
                }
            }
            Some(Entry::Running {
                fingerprint: seen,
                done,
            }) => {
                if *seen == fingerprint {
                    Found::Wait(done.clone())
                } else {
                    Found::Refused(reused())
                }
            }
            None => {
                let (sender, done) = watch::channel(false);
                kept.entries
                    .insert(slot.clone(), Entry::Running { fingerprint, done });
                Found::Run(sender)
            }
        }
    }

    /// Ends the run of `slot`: keeps `response` for replays when it is one, else forgets the
    /// key (a refused or failed write wrote nothing to remember; a repeat runs again).
    fn finish(&self, slot: (String, String), fingerprint: [u8; 32], response: Option<Stored>) {
        let mut kept = self.lock();
        match response {
            Some(response) => {
                let now = Instant::now();
                kept.bytes += response.body.len();
                kept.order.push_back((slot.clone(), now));
                kept.entries.insert(
                    slot,
                    Entry::Done {
                        fingerprint,
                        response,
                        at: now,
                    },
                );
                kept.evict(now);
            }
            None => {
                kept.entries.remove(&slot);
            }
        }
    }
}

impl Kept {
    fn evict(&mut self, now: Instant) {
        while let Some((slot, at)) = self.order.front().cloned() {
            let over = self.order.len() > MAX_KEPT || self.bytes > MAX_KEPT_BYTES;
            if !over && now.duration_since(at) < KEPT_FOR {
                break;
            }
            self.order.pop_front();
            if let Some(Entry::Done {
                response,
                at: kept_at,
                ..
            }) = self.entries.get(&slot)
                && *kept_at == at
            {
                self.bytes = self.bytes.saturating_sub(response.body.len());
                self.entries.remove(&slot);
            }
        }
    }
}

/// The state the write middleware needs.
#[derive(Clone)]
pub(crate) struct Writes {
    pub replays: Replays,
    pub tasks: TaskTracker,
    /// The writes the API takes, as (method, route template), each with what its request must
    /// be: any other request is passed on untouched, to be answered (405, 404) before a key is
    /// looked at.
    pub shapes: Arc<HashMap<(Method, String), WriteShape>>,
}

/// Runs every write the API takes on a task of its own, tracked for a graceful stop, so it
/// finishes even when its client goes away; and applies `Idempotency-Key`.
pub(crate) async fn writes(State(writes): State<Writes>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(|route| (request.method().clone(), route.as_str().to_owned()));
    let Some(shape) = route.and_then(|route| writes.shapes.get(&route)) else {
        return next.run(request).await;
    };
    let key = match idempotency_key(request.headers()) {
        Ok(key) => key,
        Err(problem) => return problem.into_response(),
    };
    let principal = request
        .extensions()
        .get::<Caller>()
        .and_then(|caller| caller.principal().cloned());
    let caller = principal.as_ref().map(|principal| principal.name.clone());
    // The write holds its place among the requests served at once until it ends.
    let place = request
        .extensions()
        .get::<crate::ops::Place>()
        .and_then(crate::ops::Place::take);
    let (Some(key), Some(caller)) = (key, caller) else {
        let run = next.run(request);
        return detached(&writes.tasks, async move {
            let response = run.await;
            drop(place);
            response
        })
        .await;
    };
    let (parts, body) = request.into_parts();
    // `ops::receive` has read the body whole, within `max_body_bytes`: this takes it back.
    let Ok(body) = axum::body::to_bytes(body, usize::MAX).await else {
        return Problem::invalid("the request body was cut off before its end; nothing was done")
            .into_response();
    };
    let fingerprint = fingerprint(&parts.method, &parts.uri, &parts.headers, &body);
    let slot = (caller, key.to_string());
    loop {
        match writes.replays.find(&slot, fingerprint) {
            // What the key finds is the answer only to a request that is valid in itself: an
            // empty If-Match, or a body sent as another charset, gets the answer it gets
            // without the key, not the first request's.
            Found::Replay(response) => {
                return match own_validity(shape, &parts.headers, principal.as_deref()).await {
                    Ok(()) => response,
                    Err(problem) => problem.into_response(),
                };
            }
            Found::Refused(problem) => {
                return own_validity(shape, &parts.headers, principal.as_deref())
                    .await
                    .err()
                    .unwrap_or(problem)
                    .into_response();
            }
            Found::Wait(mut done) => {
                // The first request with this key is still running: its outcome is ours.
                let _ = done.wait_for(|done| *done).await;
            }
            Found::Run(done) => {
                let request = Request::from_parts(parts, Body::from(body));
                let mut run = Run {
                    replays: writes.replays.clone(),
                    slot: Some(slot),
                    fingerprint,
                    done,
                };
                let work = async move {
                    let response = next.run(request).await;
                    let (response, stored) = remember(response).await;
                    run.finish(stored);
                    drop(place);
                    response
                };
                return detached(&writes.tasks, work).await;
            }
        }
    }
}

/// A keyed write running: it ends by keeping its response or, if it stops early (a panic),
/// by forgetting its key, and wakes the repeats waiting for it either way.
struct Run {
    replays: Replays,
    slot: Option<(String, String)>,
    fingerprint: [u8; 32],
    done: watch::Sender<bool>,
}

impl Run {
    fn finish(&mut self, stored: Option<Stored>) {
        if let Some(slot) = self.slot.take() {
            self.replays.finish(slot, self.fingerprint, stored);
            let _ = self.done.send(true);
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        self.finish(None);
    }
}

/// The response, and a copy to replay when it is a success.
async fn remember(response: Response) -> (Response, Option<Stored>) {
    if !response.status().is_success() {
        return (response, None);
    }
    let (parts, body) = response.into_parts();
    let Ok(body) = axum::body::to_bytes(body, usize::MAX).await else {
        return (
            Problem::busy("the response could not be read back; repeat the request with the same Idempotency-Key").into_response(),
            None,
        );
    };
    let kept = [header::CONTENT_TYPE, header::ETAG, header::LOCATION];
    let stored = Stored {
        status: parts.status,
        headers: kept
            .into_iter()
            .filter_map(|name| parts.headers.get(&name).map(|value| (name, value.clone())))
            .collect(),
        body: body.clone(),
    };
    (Response::from_parts(parts, Body::from(body)), Some(stored))
}

/// Runs `work` on a tracked task and waits for it; the task goes on if this future is dropped.
async fn detached<F>(tasks: &TaskTracker, work: F) -> Response
where
    F: std::future::Future<Output = Response> + Send + 'static,
{
    match tasks.spawn(work).await {
        Ok(response) => response,
        Err(err) => {
            Problem::busy(format!("the write stopped before it answered ({err}); repeat it with the same Idempotency-Key to learn whether it landed")).into_response()
        }
    }
}

/// Whether a keyed write of `shape` is valid in itself, as its handler
/// would find before touching memory: a JSON body in UTF-8 where it takes one, and a
/// well-formed `If-Match` (present, where required). A caller without the operation's scope
/// is left to the handler's 403, which comes first there.
async fn own_validity(
    shape: &WriteShape,
    headers: &HeaderMap,
    principal: Option<&Principal>,
) -> Result<(), Problem> {
    if !principal.is_some_and(|principal| principal.has(shape.scope)) {
        return Ok(());
    }
    if shape.json_body {
        crate::request::utf8_charset(headers)?;
        // The JSON extractor's own test of the Content-Type, on the headers alone: the body is
        // the first request's, which it took.
        let mut probe = Request::new(Body::empty());
        *probe.headers_mut() = headers.clone();
        if let Err(rejection @ JsonRejection::MissingJsonContentType(_)) =
            axum::Json::<serde::de::IgnoredAny>::from_request(probe, &()).await
        {
            return Err(Problem::from_json(rejection));
        }
    }
    match shape.if_match {
        Some(true) => crate::conditional::required_if_match(headers).map(drop),
        Some(false) => crate::conditional::if_match(headers).map(drop),
        None => Ok(()),
    }
}

/// The `Idempotency-Key` header, validated: the middleware names the cache slot by it, the
/// handlers pass it on as the call's idempotency key.
pub(crate) fn idempotency_key(headers: &HeaderMap) -> Result<Option<IdempotencyKey>, Problem> {
    let mut values = headers.get_all(IDEMPOTENCY_KEY).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(Problem::invalid(
            "send one Idempotency-Key header, not several",
        ));
    }
    let text = value.to_str().map_err(|_| {
        Problem::invalid("Idempotency-Key must be 1 to 128 visible ASCII characters")
    })?;
    Ok(Some(IdempotencyKey::new(text.trim_matches('"'))?))
}

/// What makes two requests the same request: method, path and query, `If-Match`, body.
fn fingerprint(
    method: &Method,
    uri: &axum::http::Uri,
    headers: &HeaderMap,
    body: &[u8],
) -> [u8; 32] {
    let mut hash = Sha256::new();
    for part in [
        method.as_str().as_bytes(),
        uri.path_and_query().map_or("", |p| p.as_str()).as_bytes(),
        headers
            .get(header::IF_MATCH)
            .map_or(&b""[..], HeaderValue::as_bytes),
        body,
    ] {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part);
    }
    hash.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(body: &str) -> Stored {
        Stored {
            status: StatusCode::OK,
            headers: Vec::new(),
            body: Bytes::from(body.to_owned()),
        }
    }

    #[tokio::test]
    async fn a_key_replays_its_response_and_refuses_other_requests() {
        let replays = Replays::default();
        let slot = ("agents".to_owned(), "k1".to_owned());
        let Found::Run(done) = replays.find(&slot, [1; 32]) else {
            panic!("the first request runs");
        };
        // A repeat while it runs waits; another request with the key is refused.
        assert!(matches!(replays.find(&slot, [1; 32]), Found::Wait(_)));
        assert!(matches!(replays.find(&slot, [2; 32]), Found::Refused(_)));
        replays.finish(slot.clone(), [1; 32], Some(stored("first")));
        let _ = done.send(true);
        let Found::Replay(response) = replays.find(&slot, [1; 32]) else {
            panic!("a repeat replays");
        };
        assert_eq!(response.headers()[IDEMPOTENT_REPLAYED], "true");
        let body = axum::body::to_bytes(response.into_body(), 100)
            .await
            .unwrap();
        assert_eq!(body, "first");
        let Found::Refused(problem) = replays.find(&slot, [2; 32]) else {
            panic!("another request with the key is refused");
        };
        assert_eq!(problem.status, 422);
        // Keys are per caller.
        assert!(matches!(
            replays.find(&("other".to_owned(), "k1".to_owned()), [2; 32]),
            Found::Run(_)
        ));
    }

    #[test]
    fn a_failed_write_is_forgotten_and_old_ones_are_evicted() {
        let replays = Replays::default();
        let slot = ("agents".to_owned(), "k1".to_owned());
        assert!(matches!(replays.find(&slot, [1; 32]), Found::Run(_)));
        replays.finish(slot.clone(), [1; 32], None);
        assert!(
            matches!(replays.find(&slot, [9; 32]), Found::Run(_)),
            "nothing was kept"
        );
        replays.finish(slot.clone(), [9; 32], None);
        for n in 0..MAX_KEPT + 5 {
            let slot = ("agents".to_owned(), format!("n{n}"));
            assert!(matches!(replays.find(&slot, [0; 32]), Found::Run(_)));
            replays.finish(slot, [0; 32], Some(stored("x")));
        }
        let kept = replays.lock();
        assert_eq!(kept.order.len(), MAX_KEPT);
        assert!(
            !kept
                .entries
                .contains_key(&("agents".to_owned(), "n0".to_owned()))
        );
    }

    #[test]
    fn fingerprints_cover_method_path_precondition_and_body() {
        let uri: axum::http::Uri = "/v1/sync".parse().unwrap();
        let other: axum::http::Uri = "/v1/sync?x=1".parse().unwrap();
        let mut guarded = HeaderMap::new();
        guarded.insert(header::IF_MATCH, "\"1\"".parse().unwrap());
        let plain = HeaderMap::new();
        let base = fingerprint(&Method::POST, &uri, &plain, b"{}");
        assert_eq!(base, fingerprint(&Method::POST, &uri, &plain, b"{}"));
        assert_ne!(base, fingerprint(&Method::PUT, &uri, &plain, b"{}"));
        assert_ne!(base, fingerprint(&Method::POST, &other, &plain, b"{}"));
        assert_ne!(base, fingerprint(&Method::POST, &uri, &guarded, b"{}"));
        assert_ne!(base, fingerprint(&Method::POST, &uri, &plain, b"{ }"));
    }
}
