//! A connection as hyper reads and writes it, with one change: the bare answer hyper gives a
//! request it cannot parse (a control character in a header value, a byte not allowed in the
//! path, headers too large) becomes a problem document naming what was wrong, as every other
//! error of the API is. Such a request never reaches the router: hyper answers it itself, with
//! an empty body, and closes the connection.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use axum::http::StatusCode;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::problem::Problem;

/// The most bytes of a request kept to name what is wrong with its head.
const KEPT: usize = 16 * 1024;

/// A connection whose unparsable requests are answered with a problem document.
pub(crate) struct Wire<S> {
    inner: S,
    /// The bytes read since the last answer began: the head of the request being read.
    read: Vec<u8>,
    /// The problem document sent in place of hyper's bare answer, and how much of it is sent.
    answer: Option<(Vec<u8>, usize)>,
}

impl<S> Wire<S> {
    pub(crate) fn new(inner: S) -> Wire<S> {
        Wire {
            inner,
            read: Vec::new(),
            answer: None,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Wire<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.inner).poll_read(cx, buf))?;
        let room = KEPT.saturating_sub(self.read.len());
        let fresh = &buf.filled()[before..];
        let kept = &fresh[..fresh.len().min(room)];
        self.read.extend_from_slice(kept);
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Wire<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if self.answer.is_none()
            && let Some(status) = bare_parse_error(buf)
        {
            self.answer = Some((problem_answer(status, &self.read), 0));
        }
        let this = &mut *self;
        if let Some((answer, sent)) = &mut this.answer {
            // hyper's own answer, and anything after it, is replaced by ours.
            while *sent < answer.len() {
                let written = ready!(Pin::new(&mut this.inner).poll_write(cx, &answer[*sent..]))?;
                if written == 0 {
                    return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                }
                *sent += written;
            }
            return Poll::Ready(Ok(buf.len()));
        }
        let written = ready!(Pin::new(&mut this.inner).poll_write(cx, buf))?;
        this.read.clear();
        Poll::Ready(Ok(written))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    // Not vectored: hyper then writes each answer's head in one call, where it can be seen.
}

/// The status of hyper's answer to a request it could not parse, when `written` is one: a
/// head alone, with an empty body, of 400, 414 or 431. Every answer of the API with those
/// statuses carries a problem document, so it is never one of ours.
fn bare_parse_error(written: &[u8]) -> Option<StatusCode> {
    // Checked on every write: a prefix first, without allocating.
    const STATUS_LINES: [(&[u8], StatusCode); 3] = [
        (b"HTTP/1.1 400 ", StatusCode::BAD_REQUEST),
        (b"HTTP/1.1 414 ", StatusCode::URI_TOO_LONG),
        (
            b"HTTP/1.1 431 ",
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        ),
    ];
    let (_, status) = STATUS_LINES
        .iter()
        .find(|(line, _)| written.starts_with(line))?;
    let head_alone = written.ends_with(b"\r\n\r\n");
    let empty = written
        .windows(b"\r\ncontent-length: 0\r\n".len())
        .any(|window| window.eq_ignore_ascii_case(b"\r\ncontent-length: 0\r\n"));
    (head_alone && empty).then_some(*status)
}

/// The whole answer to an unparsable request whose first bytes are `read`.
fn problem_answer(status: StatusCode, read: &[u8]) -> Vec<u8> {
    let detail = match status {
        StatusCode::URI_TOO_LONG => {
            "the request target is too long; nothing was done: send a shorter path and query"
                .to_owned()
        }
        StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE => {
            "the request's headers are too large; nothing was done: send fewer or shorter ones"
                .to_owned()
        }
        _ => what_is_malformed(read),
    };
    let problem = Problem::invalid_with(status, detail);
    let body = serde_json::to_vec(&*problem).unwrap_or_default();
    let mut answer = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: {}\r\ncontent-length: {}\r\ncache-control: no-store\r\nconnection: close\r\n\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or(""),
        crate::PROBLEM_JSON,
        body.len()
    )
    .into_bytes();
    answer.extend_from_slice(&body);
    answer
}

/// What is wrong with the request head at the start of `read`, in words: the first line that
/// holds a byte HTTP does not allow there, by the header's name.
fn what_is_malformed(read: &[u8]) -> String {
    const DONE: &str = "nothing was done";
    let mut lines = read
        .split(|b| *b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line));
    if let Some(first) = lines.next()
        && let Some(byte) = first.iter().find(|b| !b.is_ascii_graphic() && **b != b' ')
    {
        return format!(
            "the request line holds the byte {byte:#04x}, which HTTP does not allow there (percent-encode it in the path); {DONE}"
        );
    }
    for line in lines.take_while(|line| !line.is_empty()) {
        let Some(colon) = line.iter().position(|b| *b == b':') else {
            return format!("a header line has no ':' between a name and a value; {DONE}");
        };
        let (name, value) = (&line[..colon], &line[colon + 1..]);
        let name_text = String::from_utf8_lossy(name);
        if name.is_empty() || !name.iter().all(|b| is_token(*b)) {
            return format!(
                "the header name {name_text:?} holds a character names may not; {DONE}"
            );
        }
        if let Some(byte) = value.iter().find(|b| b.is_ascii_control() && **b != b'\t') {
            return format!(
                "the header {name_text} holds the control character {byte:#04x}, which header values may not; {DONE}"
            );
        }
    }
    format!("the request's first line or a header is malformed; {DONE}")
}

/// Whether `byte` may be in a header name (RFC 9110's `tchar`).
fn is_token(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_empty_answer_of_a_parse_error_status_is_hypers() {
        let hyper = b"HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        assert_eq!(bare_parse_error(hyper), Some(StatusCode::BAD_REQUEST));
        let ours = b"HTTP/1.1 400 Bad Request\r\ncontent-length: 12\r\n\r\n";
        assert_eq!(bare_parse_error(ours), None);
        let fine = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(bare_parse_error(fine), None);
    }

    #[test]
    fn the_malformed_line_is_named() {
        let header = what_is_malformed(b"PUT /v1 HTTP/1.1\r\nHost: x\r\nIf-Match: \x01\r\n\r\n");
        assert!(
            header.contains("If-Match") && header.contains("0x01"),
            "{header}"
        );
        let path = what_is_malformed(b"GET /v1/\xff HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(
            path.contains("request line") && path.contains("0xff"),
            "{path}"
        );
        let name = what_is_malformed(b"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n");
        assert!(name.contains("\"Bad Name\""), "{name}");
    }
}
