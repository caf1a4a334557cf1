use super::*;

fn headers(pairs: &[(&str, &str)]) -> http::HeaderMap {
    let mut map = http::HeaderMap::new();
    for (name, value) in pairs {
        map.append(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap_or_else(|e| panic!("{e}")),
            http::HeaderValue::from_str(value).unwrap_or_else(|e| panic!("{e}")),
        );
    }
    map
}

fn defaults() -> RequestHeaderConfig {
    RequestHeaderConfig::with_default_headers(Vec::new(), Vec::new())
}

#[test]
fn the_identity_comes_from_the_headers_as_kube_reads_them() {
    let h = headers(&[
        ("x-remote-user", "jane"),
        ("x-remote-group", "devs"),
        ("x-remote-group", ""),
        ("x-remote-group", "ops,qa"),
        ("X-Remote-Extra-Scopes", "a"),
        ("x-remote-extra-scopes", "b"),
        ("x-remote-extra-Example.com%2fTeam", "blue"),
        ("x-remote-extra-bad%zz", "kept"),
        ("other", "x"),
    ]);
    let user = user_from_headers(&defaults(), &h).unwrap_or_else(|| panic!("no user"));
    assert_eq!(user.name, "jane");
    assert_eq!(user.uid, "");
    // Every non-empty value, not split on commas.
    assert_eq!(user.groups, ["devs", "ops,qa"]);
    assert_eq!(user.extra["scopes"], ["a", "b"]);
    assert_eq!(user.extra["example.com/team"], ["blue"]);
    assert_eq!(user.extra["bad%zz"], ["kept"]);
    assert_eq!(user.extra.len(), 3);
}

#[test]
fn the_first_username_header_with_a_value_wins() {
    let config = RequestHeaderConfig {
        username_headers: vec!["X-First".into(), "X-Second".into()],
        uid_headers: vec!["X-Remote-Uid".into()],
        ..defaults()
    };
    let h = headers(&[
        ("x-first", ""),
        ("x-second", "bob"),
        ("x-remote-uid", "u-1"),
    ]);
    let user = user_from_headers(&config, &h).unwrap_or_else(|| panic!("no user"));
    assert_eq!((user.name.as_str(), user.uid.as_str()), ("bob", "u-1"));
    assert!(user_from_headers(&config, &headers(&[("x-remote-group", "g")])).is_none());
}

#[test]
fn unescaping_is_go_path_unescape() {
    assert_eq!(unescape_extra_key("a%2Fb"), "a/b");
    assert_eq!(unescape_extra_key("plain"), "plain");
    assert_eq!(unescape_extra_key("bad%2"), "bad%2");
    assert_eq!(unescape_extra_key("%e2%9c%93"), "✓");
}

#[test]
fn the_identity_headers_are_cleared() {
    let mut h = headers(&[
        ("x-remote-user", "jane"),
        ("x-remote-group", "devs"),
        ("x-remote-extra-a", "1"),
        ("X-Remote-Extra-B", "2"),
        ("accept", "application/json"),
    ]);
    clear_headers(&defaults(), &mut h);
    assert_eq!(h.len(), 1, "{h:?}");
    assert!(h.contains_key("accept"));
}

/// A CA and a client certificate it signs with `cn` (and clientAuth when `client_auth`).
struct Pki {
    ca_pem: String,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

impl Pki {
    fn new() -> Self {
        let key = rcgen::KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
        let mut params =
            rcgen::CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| panic!("{e}"));
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "front-proxy-ca");
        let cert = params.self_signed(&key).unwrap_or_else(|e| panic!("{e}"));
        Self {
            ca_pem: cert.pem(),
            issuer: rcgen::Issuer::new(params, key),
        }
    }

    fn leaf(&self, cn: &str, client_auth: bool) -> CertificateDer<'static> {
        let key = rcgen::KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
        let mut params =
            rcgen::CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| panic!("{e}"));
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, cn);
        params.extended_key_usages = if client_auth {
            vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth]
        } else {
            vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth]
        };
        params
            .signed_by(&key, &self.issuer)
            .unwrap_or_else(|e| panic!("{e}"))
            .der()
            .clone()
    }
}

fn request(chain: Vec<CertificateDer<'static>>, pairs: &[(&str, &str)]) -> http::request::Parts {
    let mut req = http::Request::new(());
    *req.headers_mut() = headers(pairs);
    if !chain.is_empty() {
        req.extensions_mut().insert(PeerConnection::new(chain));
    }
    req.into_parts().0
}

const JANE: &[(&str, &str)] = &[("x-remote-user", "jane"), ("x-remote-group", "devs")];

#[tokio::test]
async fn only_the_front_proxy_is_trusted() {
    let pki = Pki::new();
    let authn = RequestHeaderAuthenticator::new(RequestHeaderConfig::with_default_headers(
        pki.ca_pem.clone().into_bytes(),
        vec!["front-proxy-client".into()],
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let proxy = pki.leaf("front-proxy-client", true);
    match authn
        .authenticate(&request(vec![proxy.clone()], JANE))
        .await
    {
        AuthnOutcome::Authenticated(user) => {
            assert_eq!(user.name, "jane");
            assert_eq!(user.groups, ["devs"]);
        }
        other => panic!("{other:?}"),
    }
    // The proxy without a user header: no opinion.
    assert_eq!(
        authn.authenticate(&request(vec![proxy], &[])).await,
        AuthnOutcome::NoCredentials
    );
    // Headers without a certificate are ignored.
    assert_eq!(
        authn.authenticate(&request(Vec::new(), JANE)).await,
        AuthnOutcome::NoCredentials
    );
    // A name not allowed.
    assert_eq!(
        authn
            .authenticate(&request(vec![pki.leaf("mallory", true)], JANE))
            .await,
        AuthnOutcome::Failed("x509: subject with cn=mallory is not in the allowed list".into())
    );
    // A certificate of another CA.
    let other = Pki::new().leaf("front-proxy-client", true);
    assert!(matches!(
        authn.authenticate(&request(vec![other], JANE)).await,
        AuthnOutcome::Failed(reason) if reason.starts_with("x509: ")
    ));
    // A certificate without the clientAuth usage.
    assert!(matches!(
        authn
            .authenticate(&request(vec![pki.leaf("front-proxy-client", false)], JANE))
            .await,
        AuthnOutcome::Failed(_)
    ));
}

#[tokio::test]
async fn a_rotated_ca_takes_effect_and_no_ca_means_no_opinion() {
    let (old, new) = (Pki::new(), Pki::new());
    let authn = RequestHeaderAuthenticator::new(RequestHeaderConfig::with_default_headers(
        old.ca_pem.clone().into_bytes(),
        Vec::new(),
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let by_new = new.leaf("anyone", true);
    assert!(matches!(
        authn
            .authenticate(&request(vec![by_new.clone()], JANE))
            .await,
        AuthnOutcome::Failed(_)
    ));
    authn
        .set(RequestHeaderConfig::with_default_headers(
            new.ca_pem.clone().into_bytes(),
            Vec::new(),
        ))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(
        authn
            .authenticate(&request(vec![by_new.clone()], JANE))
            .await,
        AuthnOutcome::Authenticated(_)
    ));
    authn.set(defaults()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        authn.authenticate(&request(vec![by_new], JANE)).await,
        AuthnOutcome::NoCredentials
    );
    assert!(
        RequestHeaderAuthenticator::new(RequestHeaderConfig {
            client_ca: b"not pem".to_vec(),
            ..defaults()
        })
        .is_err()
    );
}

#[tokio::test]
async fn the_union_clears_the_headers_of_the_front_proxy_only() {
    let pki = Pki::new();
    let authn = RequestHeaderAuthenticator::new(RequestHeaderConfig::with_default_headers(
        pki.ca_pem.clone().into_bytes(),
        Vec::new(),
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    let union = crate::authn::UnionAuthenticator::new(vec![Box::new(authn)], true);
    let mut parts = request(vec![pki.leaf("front-proxy-client", true)], JANE);
    let user = union
        .authenticate_and_clear(&mut parts)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(user.name, "jane");
    assert_eq!(user.groups, ["devs", crate::authn::AUTHENTICATED_GROUP]);
    assert!(parts.headers.is_empty(), "{:?}", parts.headers);
    // A client without the certificate is anonymous, and its headers stay as it sent them.
    let mut parts = request(Vec::new(), JANE);
    let user = union
        .authenticate_and_clear(&mut parts)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(user.name, crate::authn::ANONYMOUS_USER);
    assert_eq!(parts.headers.len(), 2);
}
