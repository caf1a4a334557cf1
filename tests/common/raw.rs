//! A raw HTTP/1.1 client over TLS for the integration tests that need exact bytes on the wire:
//! request targets longer than the `http` crate's URIs (which hyper's and reqwest's clients
//! cannot send), pipelining, chunked bodies, and headers a normal client never sends.

use std::sync::Arc;

use rustls::ClientConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use super::Server;
use super::tls::{AcceptAny, PATIENCE, tls_connect};

/// A TLS client configuration offering only `http/1.1` and presenting `cert_pem` + `key_pem`.
pub fn http1_identity(cert_pem: &[u8], key_pem: &[u8]) -> Arc<ClientConfig> {
    let certs = rustls_pemfile::certs(&mut &cert_pem[..])
        .collect::<Result<Vec<_>, _>>()
        .unwrap_or_else(|e| panic!("certificate: {e}"));
    let key = rustls_pemfile::private_key(&mut &key_pem[..])
        .unwrap_or_else(|e| panic!("key: {e}"))
        .unwrap_or_else(|| panic!("no key"));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .unwrap_or_else(|e| panic!("{e}"))
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AcceptAny(provider)))
        .with_client_auth_cert(certs, key)
        .unwrap_or_else(|e| panic!("{e}"));
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

/// The admin identity (`system:masters`) over HTTP/1.1.
pub fn admin_http1(server: &Server) -> Arc<ClientConfig> {
    let pki = server.data_dir.join("pki");
    let read = |n: &str| std::fs::read(pki.join(n)).unwrap_or_else(|e| panic!("{n}: {e}"));
    http1_identity(&read("admin.crt"), &read("admin.key"))
}

/// One response: its status, headers (names lowercased) and decoded body.
#[derive(Debug)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// The headers in order.
    pub headers: Vec<(String, String)>,
    /// The body (chunked bodies decoded).
    pub body: Vec<u8>,
}

impl Response {
    /// The first value of header `name` (lowercase).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "{} body is not JSON: {e}: {}",
                self.status,
                String::from_utf8_lossy(&self.body)
            )
        })
    }
}

/// An HTTP/1.1 connection that writes bytes as given and reads responses one by one.
pub struct Conn {
    stream: TlsStream<TcpStream>,
    buf: Vec<u8>,
}

impl Conn {
    /// Connects to `server` with `config`.
    pub async fn open(server: &Server, config: Arc<ClientConfig>) -> Conn {
        let stream = tls_connect(server, config, "localhost")
            .await
            .unwrap_or_else(|e| panic!("connect: {e}"));
        Conn {
            stream,
            buf: Vec::new(),
        }
    }

    /// Writes `bytes`.
    pub async fn send(&mut self, bytes: &[u8]) {
        self.stream
            .write_all(bytes)
            .await
            .unwrap_or_else(|e| panic!("write: {e}"));
        self.stream
            .flush()
            .await
            .unwrap_or_else(|e| panic!("flush: {e}"));
    }

    /// Writes `bytes`, which the server may refuse to read to the end (a head over its
    /// limit): a failed write is not an error.
    pub async fn send_some(&mut self, bytes: &[u8]) {
        if self.stream.write_all(bytes).await.is_ok() {
            let _ = self.stream.flush().await;
        }
    }

    /// Reads more bytes; `false` at the end of the connection.
    async fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 16 * 1024];
        let n = tokio::time::timeout(PATIENCE, self.stream.read(&mut chunk))
            .await
            .unwrap_or_else(|_| panic!("no answer within {PATIENCE:?}"))
            .unwrap_or(0);
        self.buf.extend_from_slice(&chunk[..n]);
        n > 0
    }

    /// Reads until `pred` finds what it needs in the buffer (its length), or panics at the end
    /// of the connection.
    async fn until(&mut self, pred: impl Fn(&[u8]) -> Option<usize>) -> Vec<u8> {
        loop {
            if let Some(n) = pred(&self.buf) {
                return self.buf.drain(..n).collect();
            }
            assert!(
                self.fill().await,
                "the connection ended; read so far: {}",
                String::from_utf8_lossy(&self.buf)
            );
        }
    }

    /// Reads exactly `n` more bytes (after a protocol upgrade, the other protocol's bytes).
    pub async fn read_bytes(&mut self, n: usize) -> Vec<u8> {
        self.until(|b| (b.len() >= n).then_some(n)).await
    }

    /// Whether the server has closed the connection (after any buffered bytes).
    pub async fn closed(&mut self) -> bool {
        self.buf.is_empty() && !self.fill().await
    }

    /// Reads the next response (an interim `100 Continue` is a response too).
    pub async fn response(&mut self) -> Response {
        let head = self
            .until(|b| b.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4))
            .await;
        let head = String::from_utf8_lossy(&head).into_owned();
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap_or_default();
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("status line {status_line:?}"));
        let headers: Vec<(String, String)> = lines
            .filter(|l| !l.is_empty())
            .filter_map(|l| l.split_once(':'))
            .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
            .collect();
        let mut resp = Response {
            status,
            headers,
            body: Vec::new(),
        };
        if status < 200 || status == 204 || status == 304 {
            return resp;
        }
        if resp.header("transfer-encoding") == Some("chunked") {
            loop {
                let line = self
                    .until(|b| b.windows(2).position(|w| w == b"\r\n").map(|p| p + 2))
                    .await;
                let size = String::from_utf8_lossy(&line);
                let size = size.trim().split(';').next().unwrap_or_default();
                let size = usize::from_str_radix(size, 16)
                    .unwrap_or_else(|e| panic!("chunk size {size:?}: {e}"));
                if size == 0 {
                    self.until(|b| b.windows(2).position(|w| w == b"\r\n").map(|p| p + 2))
                        .await;
                    return resp;
                }
                let chunk = self
                    .until(|b| (b.len() >= size + 2).then_some(size + 2))
                    .await;
                resp.body.extend_from_slice(&chunk[..size]);
            }
        }
        let len: usize = resp
            .header("content-length")
            .map(|v| {
                v.parse()
                    .unwrap_or_else(|e| panic!("content-length {v}: {e}"))
            })
            .unwrap_or(0);
        resp.body = self.until(|b| (b.len() >= len).then_some(len)).await;
        resp
    }
}
