//! What the tests that serve over HTTPS share: a client with the admin identity the server's
//! PKI wrote under the data directory.

/// A client trusting the server's CA and presenting the admin certificate (`system:masters`)
/// written under `dir/pki`.
pub fn admin_client(dir: &std::path::Path) -> reqwest::Client {
    let pki = dir.join("pki");
    let read = |n: &str| std::fs::read(pki.join(n)).unwrap_or_else(|e| panic!("{n}: {e}"));
    let mut id = read("admin.crt");
    id.extend(read("admin.key"));
    reqwest::Client::builder()
        .use_rustls_tls()
        .add_root_certificate(
            reqwest::Certificate::from_pem(&read("ca.crt")).unwrap_or_else(|e| panic!("{e}")),
        )
        .identity(reqwest::Identity::from_pem(&id).unwrap_or_else(|e| panic!("{e}")))
        .build()
        .unwrap_or_else(|e| panic!("{e}"))
}
