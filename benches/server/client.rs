//! The HTTPS client side of the load generator: TLS material from the admin kubeconfig, one
//! keep-alive connection per task over HTTP/1.1 or HTTP/2, and request sending.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, anyhow, bail};
use base64::Engine;
use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

/// The HTTP version a connection speaks (negotiated with ALPN, as kubectl does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proto {
    /// HTTP/1.1 with keep-alive: one request at a time per connection.
    H1,
    /// HTTP/2 (what kubectl negotiates): one stream at a time per connection here.
    H2,
}

impl Proto {
    /// The label used in the report.
    pub fn label(self) -> &'static str {
        match self {
            Proto::H1 => "HTTP/1.1",
            Proto::H2 => "HTTP/2",
        }
    }

    fn alpn(self) -> Vec<u8> {
        match self {
            Proto::H1 => b"http/1.1".to_vec(),
            Proto::H2 => b"h2".to_vec(),
        }
    }
}

/// The credentials and address of the admin kubeconfig.
pub struct Kubeconfig {
    /// `https://127.0.0.1:<port>`.
    pub server: String,
    /// The CA certificate (PEM).
    pub ca_pem: Vec<u8>,
    /// The client certificate (PEM).
    pub cert_pem: Vec<u8>,
    /// The client key (PEM).
    pub key_pem: Vec<u8>,
}

fn field<'a>(
    doc: &'a serde_yaml_ng::Value,
    list: &str,
    item: &str,
    key: &str,
) -> anyhow::Result<&'a str> {
    doc.get(list)
        .and_then(|l| l.get(0))
        .and_then(|e| e.get(item))
        .and_then(|e| e.get(key))
        .and_then(serde_yaml_ng::Value::as_str)
        .ok_or_else(|| anyhow!("kubeconfig has no {list}[0].{item}.{key}"))
}

impl Kubeconfig {
    /// Reads the first cluster and user of a kubeconfig with embedded credentials.
    pub fn read(path: &Path) -> anyhow::Result<Self> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let doc: serde_yaml_ng::Value = serde_yaml_ng::from_str(&text)?;
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.decode(s);
        Ok(Self {
            server: field(&doc, "clusters", "cluster", "server")?.to_string(),
            ca_pem: b64(field(
                &doc,
                "clusters",
                "cluster",
                "certificate-authority-data",
            )?)?,
            cert_pem: b64(field(&doc, "users", "user", "client-certificate-data")?)?,
            key_pem: b64(field(&doc, "users", "user", "client-key-data")?)?,
        })
    }

    /// The `host:port` of the server.
    pub fn addr(&self) -> anyhow::Result<SocketAddr> {
        let hostport = self
            .server
            .strip_prefix("https://")
            .ok_or_else(|| anyhow!("server {} is not https", self.server))?;
        Ok(hostport.parse()?)
    }
}

/// Where and how to connect.
pub struct Endpoint {
    addr: SocketAddr,
    proto: Proto,
    tls: TlsConnector,
    /// The `Authorization` header of every request, when the endpoint authenticates with a
    /// bearer token instead of a client certificate.
    authorization: Option<http::HeaderValue>,
}

impl Endpoint {
    /// An endpoint at `addr` trusting the kubeconfig's CA and presenting its client certificate.
    pub fn new(addr: SocketAddr, proto: Proto, creds: &Kubeconfig) -> anyhow::Result<Arc<Self>> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_pemfile::certs(&mut creds.ca_pem.as_slice()) {
            roots.add(cert?)?;
        }
        let chain: Vec<CertificateDer<'static>> =
            rustls_pemfile::certs(&mut creds.cert_pem.as_slice()).collect::<Result<_, _>>()?;
        let key: PrivateKeyDer<'static> =
            rustls_pemfile::private_key(&mut creds.key_pem.as_slice())?
                .ok_or_else(|| anyhow!("no client key in the kubeconfig"))?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key)?;
        config.alpn_protocols = vec![proto.alpn()];
        Ok(Arc::new(Self {
            addr,
            proto,
            tls: TlsConnector::from(Arc::new(config)),
            authorization: None,
        }))
    }

    /// An endpoint at `addr` trusting the kubeconfig's CA that presents no client certificate
    /// and sends `token` as a bearer token with every request.
    pub fn with_token(
        addr: SocketAddr,
        proto: Proto,
        creds: &Kubeconfig,
        token: &str,
    ) -> anyhow::Result<Arc<Self>> {
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_pemfile::certs(&mut creds.ca_pem.as_slice()) {
            roots.add(cert?)?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![proto.alpn()];
        Ok(Arc::new(Self {
            addr,
            proto,
            tls: TlsConnector::from(Arc::new(config)),
            authorization: Some(http::HeaderValue::from_str(&format!("Bearer {token}"))?),
        }))
    }

    /// Opens one keep-alive connection.
    pub async fn connect(&self) -> anyhow::Result<Conn> {
        let tcp = TcpStream::connect(self.addr).await?;
        tcp.set_nodelay(true)?;
        let name = ServerName::IpAddress(self.addr.ip().into());
        let tls = self.tls.connect(name, tcp).await?;
        let io = TokioIo::new(tls);
        Ok(match self.proto {
            Proto::H1 => {
                let (sender, conn) = http1::handshake(io).await?;
                tokio::spawn(conn);
                Conn::H1(sender)
            }
            Proto::H2 => {
                let (sender, conn) = http2::handshake(TokioExecutor::new(), io).await?;
                tokio::spawn(conn);
                Conn::H2(sender)
            }
        })
    }

    /// Builds a request for `path` in the form the protocol wants (origin form with `Host` for
    /// HTTP/1.1, absolute URI for HTTP/2).
    pub fn request(&self, method: Method, path: &str, body: Bytes) -> Request<Full<Bytes>> {
        let builder = Request::builder()
            .method(method)
            .header("accept", "application/json")
            .header("user-agent", "apiary-bench");
        let builder = match self.proto {
            Proto::H1 => builder.uri(path).header("host", self.addr.to_string()),
            Proto::H2 => builder.uri(format!("https://{}{path}", self.addr)),
        };
        let builder = match &self.authorization {
            Some(value) => builder.header("authorization", value.clone()),
            None => builder,
        };
        let builder = if body.is_empty() {
            builder
        } else {
            builder.header("content-type", "application/json")
        };
        builder
            .body(Full::new(body))
            .unwrap_or_else(|_| Request::new(Full::new(Bytes::new())))
    }
}

/// One open connection.
pub enum Conn {
    /// An HTTP/1.1 connection.
    H1(http1::SendRequest<Full<Bytes>>),
    /// An HTTP/2 connection.
    H2(http2::SendRequest<Full<Bytes>>),
}

impl Conn {
    /// Another handle on the same HTTP/2 connection (its requests are further streams of it);
    /// `None` for HTTP/1.1, which serves one request at a time.
    pub fn share(&self) -> Option<Conn> {
        match self {
            Conn::H1(_) => None,
            Conn::H2(s) => Some(Conn::H2(s.clone())),
        }
    }

    /// Sends one request and returns the response with its body still to be read.
    pub async fn open(
        &mut self,
        req: Request<Full<Bytes>>,
    ) -> anyhow::Result<http::Response<hyper::body::Incoming>> {
        Ok(match self {
            Conn::H1(s) => {
                s.ready().await?;
                s.send_request(req).await?
            }
            Conn::H2(s) => {
                s.ready().await?;
                s.send_request(req).await?
            }
        })
    }

    /// Sends one request and reads the whole response body.
    pub async fn send(&mut self, req: Request<Full<Bytes>>) -> anyhow::Result<(StatusCode, Bytes)> {
        let resp = match self {
            Conn::H1(s) => {
                s.ready().await?;
                s.send_request(req).await?
            }
            Conn::H2(s) => {
                s.ready().await?;
                s.send_request(req).await?
            }
        };
        let status = resp.status();
        let body = resp.into_body().collect().await?.to_bytes();
        Ok((status, body))
    }

    /// Sends one request and fails unless the answer has status `want`.
    pub async fn expect(
        &mut self,
        req: Request<Full<Bytes>>,
        want: StatusCode,
    ) -> anyhow::Result<Bytes> {
        let what = format!("{} {}", req.method(), req.uri());
        let (status, body) = self.send(req).await?;
        if status != want {
            let text = String::from_utf8_lossy(&body[..body.len().min(400)]).into_owned();
            bail!("{what}: wanted {want}, got {status}: {text}");
        }
        Ok(body)
    }
}
