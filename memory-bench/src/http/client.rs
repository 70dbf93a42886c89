//! A client of the memory service, just enough to measure it: one keep-alive HTTP/1.1
//! connection, the JSON bodies of `/v1/prefetch` and `/v1/sync`, the JSON-RPC calls of `/mcp`,
//! and what counts as a success of each.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use serde_json::json;

use crate::backends::BoxError;

/// One keep-alive connection to the service.
pub struct Client {
    sender: SendRequest<Full<Bytes>>,
    host: String,
}

impl Client {
    /// Connects to the service at `address`, with Nagle's algorithm off.
    pub async fn connect(address: std::net::SocketAddr) -> Result<Client, BoxError> {
        let stream = tokio::net::TcpStream::connect(address).await?;
        stream.set_nodelay(true)?;
        let (sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(connection);
        Ok(Client {
            sender,
            host: address.to_string(),
        })
    }

    /// POSTs `body` (JSON) to `path`, with `key` as its `Idempotency-Key`; the status and
    /// the body.
    pub async fn post(
        &mut self,
        path: &str,
        body: Bytes,
        key: Option<&str>,
    ) -> Result<(u16, Bytes), BoxError> {
        match key {
            Some(key) => {
                self.post_with(path, body, &[("idempotency-key", key)])
                    .await
            }
            None => self.post_with(path, body, &[]).await,
        }
    }

    /// One JSON-RPC message to `/mcp` at `path`; the status and the body.
    pub async fn mcp(&mut self, path: &str, message: Bytes) -> Result<(u16, Bytes), BoxError> {
        let accept = [("accept", "application/json, text/event-stream")];
        self.post_with(path, message, &accept).await
    }

    async fn post_with(
        &mut self,
        path: &str,
        body: Bytes,
        headers: &[(&str, &str)],
    ) -> Result<(u16, Bytes), BoxError> {
        let mut request = hyper::Request::post(path)
            .header("host", &self.host)
            .header("content-type", "application/json");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        self.sender.ready().await?;
        let response = self
            .sender
            .send_request(request.body(Full::new(body))?)
            .await?;
        let status = response.status().as_u16();
        let body = response.into_body().collect().await?.to_bytes();
        Ok((status, body))
    }
}

/// A `POST /v1/prefetch` body for `personality`'s memory, with the workloads' query.
pub fn prefetch_body(personality: &str) -> Bytes {
    Bytes::from(
        json!({"personality": personality, "user": "bench", "query": crate::workloads::QUERY, "max_chars": 1 << 20})
            .to_string(),
    )
}

/// Prefetch as `memory_view` renders it: no query.
pub fn view_body(personality: &str) -> Bytes {
    Bytes::from(json!({"personality": personality, "user": "bench"}).to_string())
}

/// The `/mcp` path of `personality`'s memory for the bench's user.
pub fn mcp_path(personality: &str) -> String {
    format!("/mcp/{personality}/bench")
}

/// A `tools/call` of `memory_view`.
pub fn view_call() -> Bytes {
    Bytes::from(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "memory_view", "arguments": {}}})
        .to_string(),
    )
}

/// A `tools/call` of `memory_add` of `content` to MEMORY.md, keyed by `key` in `_meta`.
pub fn add_call(content: &str, key: &str) -> Bytes {
    Bytes::from(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "memory_add",
                          "arguments": {"file": "MEMORY.md", "entry": content},
                          "_meta": {(memory_web::MCP_IDEMPOTENCY_META): key}}})
        .to_string(),
    )
}

/// Whether a `/mcp` answer is a tool result that is not an error.
pub fn expect_tool_ok((status, body): (u16, Bytes), what: &str) -> Result<(), BoxError> {
    let reply: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    if status == 200 && reply["result"]["isError"] == false {
        Ok(())
    } else {
        Err(format!(
            "{what} over /mcp answered {status}: {}",
            String::from_utf8_lossy(&body)
        )
        .into())
    }
}

/// A `POST /v1/sync` body of one add of `content` to `personality`'s MEMORY.md.
pub fn add_body(personality: &str, content: &str) -> Bytes {
    Bytes::from(
        json!({"personality": personality, "user": "bench",
               "updates": [{"action": "add", "store": "memory", "content": content}]})
        .to_string(),
    )
}

/// Whether a `/v1` answer is a success.
pub fn expect_ok((status, body): (u16, Bytes), what: &str) -> Result<(), BoxError> {
    if status == 200 {
        Ok(())
    } else {
        Err(format!(
            "{what} over HTTP answered {status}: {}",
            String::from_utf8_lossy(&body)
        )
        .into())
    }
}
