//! A response body that holds a guard (an in-flight permit, a reservation of list memory)
//! until the body has been sent or dropped, so what the guard counts lasts as long as the
//! response does, and a client that stops reading cannot hold a response outside the count.

/// `resp` holding `guard` until its body has been sent (or dropped); `resp` as it is without
/// one.
pub fn held_until_sent<G: Send + Sync + Unpin + 'static>(
    resp: http::Response<axum::body::Body>,
    guard: Option<G>,
) -> http::Response<axum::body::Body> {
    match guard {
        Some(guard) => resp.map(|inner| {
            axum::body::Body::new(Held {
                inner,
                _guard: guard,
            })
        }),
        None => resp,
    }
}

/// A response body and the guard its request holds.
struct Held<G> {
    inner: axum::body::Body,
    _guard: G,
}

impl<G: Unpin> http_body::Body for Held<G> {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, axum::Error>>> {
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}
