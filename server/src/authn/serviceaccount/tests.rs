//! Unit tests of service-account token validation: the parts before the ServiceAccount lookup,
//! and the verdict a connection remembers against ServiceAccounts in a registry on the
//! embedded store (the whole server is tested in `tests/server_authn.rs`).

use super::*;

use self::keys::PrivateKey;

fn key() -> PrivateKey {
    PrivateKey::Rsa(Box::new(
        rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).unwrap_or_else(|e| panic!("{e}")),
    ))
}

/// A key as the server generates it when none is given (ECDSA P-256).
fn ec_key() -> PrivateKey {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    keys::ensure_generated(dir.path()).unwrap_or_else(|e| panic!("{e}"))
}

fn tokens_with(signing: &PrivateKey, verifying: &[&PrivateKey]) -> ServiceAccountTokens {
    tokens_over(signing, verifying, Arc::default())
}

fn tokens_over(
    signing: &PrivateKey,
    verifying: &[&PrivateKey],
    stores: ServiceAccountStore,
) -> ServiceAccountTokens {
    let config = ServiceAccountConfig {
        issuers: vec!["https://issuer.example".to_string()],
        api_audiences: vec!["https://issuer.example".to_string()],
        signing: SigningKey::new(signing).unwrap_or_else(|e| panic!("{e}")),
        public_keys: verifying
            .iter()
            .map(|k| PublicKey::new(k.public_key()).unwrap_or_else(|e| panic!("{e}")))
            .collect(),
        jwks_uri: None,
        max_expiration_seconds: None,
    };
    ServiceAccountTokens::new(config, stores)
}

fn claims(now: i64) -> Claims {
    Claims {
        aud: vec!["https://issuer.example".to_string()],
        exp: Some(now + 3600),
        iat: Some(now),
        iss: "https://issuer.example".to_string(),
        jti: "j-1".to_string(),
        kubernetes: KubernetesClaims {
            namespace: "default".to_string(),
            serviceaccount: ObjectRef {
                name: "robot".to_string(),
                uid: "u-1".to_string(),
            },
            ..KubernetesClaims::default()
        },
        nbf: Some(now),
        sub: "system:serviceaccount:default:robot".to_string(),
    }
}

async fn outcome(
    tokens: &ServiceAccountTokens,
    claims: &Claims,
    audiences: &[&str],
) -> TokenOutcome {
    let token = tokens.sign(claims).unwrap_or_else(|e| panic!("{e}"));
    let audiences: Vec<String> = audiences.iter().map(|a| a.to_string()).collect();
    tokens.authenticate_token(&token, &audiences).await
}

#[tokio::test]
async fn validation_in_kubernetes_order_and_words() {
    let k = key();
    let tokens = tokens_with(&k, &[&k]);
    let now = chrono::Utc::now().timestamp();

    // Everything checks out up to the ServiceAccount lookup (no store in a unit test).
    assert_eq!(
        outcome(&tokens, &claims(now), &[]).await,
        TokenOutcome::Invalid("service account lookup is not ready".to_string())
    );

    let mut expired = claims(now);
    expired.exp = Some(now - LEEWAY_SECONDS - 1);
    assert_eq!(
        outcome(&tokens, &expired, &[]).await,
        TokenOutcome::Invalid("service account token has expired".to_string())
    );
    // Within the leeway it is still accepted.
    let mut just_expired = claims(now);
    just_expired.exp = Some(now - 5);
    assert_eq!(
        outcome(&tokens, &just_expired, &[]).await,
        TokenOutcome::Invalid("service account lookup is not ready".to_string())
    );

    let mut early = claims(now);
    early.nbf = Some(now + LEEWAY_SECONDS + 30);
    assert_eq!(
        outcome(&tokens, &early, &[]).await,
        TokenOutcome::Invalid("service account token is not valid yet".to_string())
    );

    // Issued in the future beyond the leeway (only a trusted key could sign it): refused.
    let mut future = claims(now);
    future.iat = Some(now + LEEWAY_SECONDS + 30);
    assert_eq!(
        outcome(&tokens, &future, &[]).await,
        TokenOutcome::Invalid("service account token is issued in the future".to_string())
    );
    let mut skewed = claims(now);
    skewed.iat = Some(now + 5);
    assert_eq!(
        outcome(&tokens, &skewed, &[]).await,
        TokenOutcome::Invalid("service account lookup is not ready".to_string())
    );

    // Another issuer's token is not ours: unrecognized, so other authenticators may try it.
    let mut foreign = claims(now);
    foreign.iss = "https://other.example".to_string();
    assert_eq!(
        outcome(&tokens, &foreign, &[]).await,
        TokenOutcome::Unrecognized
    );

    let mut other_audience = claims(now);
    other_audience.aud = vec!["vault".to_string()];
    assert_eq!(
        outcome(&tokens, &other_audience, &[]).await,
        TokenOutcome::Invalid(
            "token audiences [\"vault\"] is invalid for the target audiences [\"https://issuer.example\"]"
                .to_string()
        )
    );
    // Asked for with its own audience (a TokenReview naming it), it passes that check.
    assert_eq!(
        outcome(&tokens, &other_audience, &["vault"]).await,
        TokenOutcome::Invalid("service account lookup is not ready".to_string())
    );
}

#[tokio::test]
async fn signatures_are_checked_with_the_right_key() {
    for (signer, other) in [(key(), key()), (ec_key(), ec_key()), (ec_key(), key())] {
        signatures_are_checked_with(signer, other).await;
    }
}

async fn signatures_are_checked_with(signer: PrivateKey, other: PrivateKey) {
    let now = chrono::Utc::now().timestamp();
    // Signed with a key the verifier does not have: its kid matches none.
    let stranger = tokens_with(&other, &[&other]);
    let verifier = tokens_with(&signer, &[&signer]);
    let token = stranger
        .sign(&claims(now))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        verifier.authenticate_token(&token, &[]).await,
        TokenOutcome::Invalid("invalid signature, no keys found".to_string())
    );
    // A tampered payload under a known kid fails the signature.
    let good = verifier
        .sign(&claims(now))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut parts: Vec<String> = good.split('.').map(str::to_string).collect();
    let mut forged = claims(now);
    forged.kubernetes.serviceaccount.name = "admin".to_string();
    parts[1] = base64::Engine::encode(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD,
        serde_json::to_vec(&forged).unwrap_or_default(),
    );
    assert_eq!(
        verifier.authenticate_token(&parts.join("."), &[]).await,
        TokenOutcome::Invalid("go-jose/go-jose: error in cryptographic primitive".to_string())
    );
    // Not a JWT at all.
    assert_eq!(
        verifier.authenticate_token("abc", &[]).await,
        TokenOutcome::Unrecognized
    );
}

#[tokio::test]
async fn keys_of_both_kinds_verify_their_own_algorithm_only() {
    let (rsa, ec) = (key(), ec_key());
    let now = chrono::Utc::now().timestamp();
    let verifier = tokens_with(&rsa, &[&rsa, &ec]);
    let ready = TokenOutcome::Invalid("service account lookup is not ready".to_string());
    for signer in [&rsa, &ec] {
        let token = tokens_with(signer, &[signer])
            .sign(&claims(now))
            .unwrap_or_else(|e| panic!("{e}"));
        let header = jsonwebtoken::decode_header(&token).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(header.alg, signer.public_key().algorithm());
        assert_eq!(verifier.authenticate_token(&token, &[]).await, ready);
    }
    // An ES256 signature is 86 characters where RS256's is 342.
    let es256 = tokens_with(&ec, &[&ec])
        .sign(&claims(now))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(es256.rsplit('.').next().map(str::len), Some(86));
    // A token naming the RSA key's id but signed ES256 by another key fails the signature.
    let rsa_kid = PublicKey::new(rsa.public_key())
        .unwrap_or_else(|e| panic!("{e}"))
        .kid;
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    header.typ = None;
    header.kid = Some(rsa_kid);
    let keys::PrivateKey::Ec { pkcs8, .. } = &ec else {
        panic!("{ec:?}");
    };
    let forged = jsonwebtoken::encode(
        &header,
        &claims(now),
        &jsonwebtoken::EncodingKey::from_ec_der(pkcs8),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        verifier.authenticate_token(&forged, &[]).await,
        TokenOutcome::Invalid("go-jose/go-jose: error in cryptographic primitive".to_string())
    );
}

#[test]
fn issued_tokens_carry_kubernetes_claims() {
    let k = ec_key();
    let tokens = tokens_with(&k, &[&k]);
    let issued = tokens
        .issue(&ServiceAccountToken {
            namespace: "ns".to_string(),
            name: "robot".to_string(),
            uid: "u-9".to_string(),
            audiences: Vec::new(),
            expiration_seconds: 600,
            bound_object: None,
        })
        .unwrap_or_else(|e| panic!("{e}"));
    let header = jsonwebtoken::decode_header(&issued.token).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        header.kid.as_deref(),
        Some(tokens.config.signing.kid.as_str())
    );
    assert_eq!(header.typ, None);
    let claims = tokens
        .verify(&issued.token)
        .unwrap_or_else(|e| panic!("{e}"))
        .unwrap_or_else(|| panic!("not recognized"));
    assert_eq!(claims.sub, "system:serviceaccount:ns:robot");
    assert_eq!(claims.aud, vec!["https://issuer.example"]);
    assert_eq!(claims.exp.zip(claims.iat).map(|(e, i)| e - i), Some(600));
    assert_eq!(claims.kubernetes.serviceaccount.uid, "u-9");
    let user = user_of(&claims);
    assert_eq!(user.name, "system:serviceaccount:ns:robot");
    assert_eq!(user.uid, "u-9");
    assert_eq!(
        user.groups,
        vec!["system:serviceaccounts", "system:serviceaccounts:ns"]
    );
    assert_eq!(
        user.extra["authentication.kubernetes.io/credential-id"],
        vec![format!("JTI={}", claims.jti)]
    );
}

mod remembered {
    //! The verdict a connection remembers for a service-account token, against ServiceAccounts
    //! in a registry on the embedded store.

    use super::*;
    use crate::authn::{Authenticator, AuthnOutcome, BearerTokenAuthenticator, PeerConnection};
    use crate::registry::{DeleteOptions, NoAdmission, Registry};

    const NS: &str = "default";

    /// The ServiceAccount store of a registry in `dir`, as the tokens' lookup stores.
    fn lookup(dir: &std::path::Path) -> (ServiceAccountStore, Arc<Store>) {
        let backend =
            storage::embedded::EmbeddedBackend::open_dir(dir).unwrap_or_else(|e| panic!("{e}"));
        let registry = Registry::new(Arc::new(backend), "/registry".to_string());
        let accounts = registry
            .store(&kubernetes_api::core::SERVICE_ACCOUNT_KIND)
            .unwrap_or_else(|e| panic!("{e}"));
        let stores = ServiceAccountStore::default();
        let _ = stores.accounts.set(Arc::clone(&accounts));
        (stores, accounts)
    }

    /// Creates a ServiceAccount and waits until the watch cache has it; its uid.
    async fn create(accounts: &Store, name: &str) -> String {
        let account = kubernetes_api::core::v1::ServiceAccount {
            metadata: apimachinery::meta::ObjectMeta {
                name: Some(name.to_string()),
                namespace: Some(NS.to_string()),
                ..Default::default()
            },
            ..Default::default()
        };
        let (created, _) = accounts
            .create(Box::new(account), &NoAdmission, false)
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        let uid = created.metadata().uid.clone().unwrap_or_default();
        cached(accounts, name, Some(&uid)).await;
        uid
    }

    /// Waits until the watch cache holds `name` with `uid` (`None`: holds no `name`).
    async fn cached(accounts: &Store, name: &str, uid: Option<&str>) {
        for _ in 0..500 {
            let found = match accounts.get_stored(NS, name, "0").await {
                Ok(stored) => accounts
                    .decode(&stored)
                    .ok()
                    .and_then(|o| o.metadata().uid.clone()),
                Err(_) => None,
            };
            if found.as_deref() == uid {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("the watch cache did not reach {name} with uid {uid:?}");
    }

    /// The `Authorization` header value of `token`.
    fn bearer_header(token: &str) -> Vec<u8> {
        format!("Bearer {token}").into_bytes()
    }

    fn request(connection: &PeerConnection, token: &str) -> http::request::Parts {
        let mut req = http::Request::new(());
        req.extensions_mut().insert(connection.clone());
        req.headers_mut().insert(
            http::header::AUTHORIZATION,
            http::HeaderValue::from_str(&format!("Bearer {token}"))
                .unwrap_or_else(|e| panic!("{e}")),
        );
        req.into_parts().0
    }

    fn claims_for(uid: &str, now: i64) -> Claims {
        let mut c = claims(now);
        c.kubernetes.namespace = NS.to_string();
        c.kubernetes.serviceaccount.uid = uid.to_string();
        c.sub = format!("system:serviceaccount:{NS}:robot");
        c
    }

    async fn user_name(bearer: &BearerTokenAuthenticator, req: &http::request::Parts) -> String {
        match bearer.authenticate(req).await {
            AuthnOutcome::Authenticated(user) => user.name.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_account_deleted_or_recreated_ends_the_remembered_verdict() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (stores, accounts) = lookup(dir.path());
        let k = key();
        let tokens = Arc::new(tokens_over(&k, &[&k], stores));
        let union =
            crate::authn::TokenUnion::new(vec![Arc::clone(&tokens) as Arc<dyn TokenAuthenticator>]);
        let bearer = BearerTokenAuthenticator::new(Arc::new(union));
        let now = chrono::Utc::now().timestamp();
        let uid = create(&accounts, "robot").await;
        let token = tokens
            .sign(&claims_for(&uid, now))
            .unwrap_or_else(|e| panic!("{e}"));
        let connection = PeerConnection::default();
        let req = request(&connection, &token);
        for _ in 0..2 {
            assert_eq!(
                user_name(&bearer, &req).await,
                "system:serviceaccount:default:robot"
            );
        }
        let remembered = connection.remembered_bearer(&bearer_header(&token), now);
        assert!(remembered.is_some_and(|u| u.in_group(crate::authn::AUTHENTICATED_GROUP)));

        // Deleted: the next request on the connection after the cache has seen it fails.
        accounts
            .delete(NS, "robot", &NoAdmission, &DeleteOptions::default())
            .await
            .unwrap_or_else(|e| panic!("{e:?}"));
        cached(&accounts, "robot", None).await;
        assert_eq!(
            connection.remembered_bearer(&bearer_header(&token), now),
            None
        );
        assert_eq!(
            bearer.authenticate(&req).await,
            AuthnOutcome::Failed("serviceaccounts \"robot\" not found".to_string())
        );

        // Recreated under the same name: another uid, so the old token still fails.
        let new_uid = create(&accounts, "robot").await;
        assert_eq!(
            bearer.authenticate(&req).await,
            AuthnOutcome::Failed(format!(
                "service account UID ({new_uid}) does not match claim ({uid})"
            ))
        );
        // A token of the new account works on the same connection, and replaces the old.
        let fresh = tokens
            .sign(&claims_for(&new_uid, now))
            .unwrap_or_else(|e| panic!("{e}"));
        let fresh_req = request(&connection, &fresh);
        assert_eq!(
            user_name(&bearer, &fresh_req).await,
            "system:serviceaccount:default:robot"
        );
        assert!(
            connection
                .remembered_bearer(&bearer_header(&fresh), now)
                .is_some()
        );
        assert_eq!(
            connection.remembered_bearer(&bearer_header(&token), now),
            None
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_remembered_token_still_expires() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let (stores, accounts) = lookup(dir.path());
        let k = key();
        let tokens = Arc::new(tokens_over(&k, &[&k], stores));
        let union =
            crate::authn::TokenUnion::new(vec![Arc::clone(&tokens) as Arc<dyn TokenAuthenticator>]);
        let bearer = BearerTokenAuthenticator::new(Arc::new(union));
        let now = chrono::Utc::now().timestamp();
        let uid = create(&accounts, "robot").await;
        let mut c = claims_for(&uid, now);
        c.exp = Some(now + 600);
        let token = tokens.sign(&c).unwrap_or_else(|e| panic!("{e}"));
        let connection = PeerConnection::default();
        assert_eq!(
            user_name(&bearer, &request(&connection, &token)).await,
            "system:serviceaccount:default:robot"
        );
        // Remembered through the leeway after `exp`, and not a second longer.
        let last = now + 600 + LEEWAY_SECONDS;
        assert!(
            connection
                .remembered_bearer(&bearer_header(&token), last)
                .is_some()
        );
        assert_eq!(
            connection.remembered_bearer(&bearer_header(&token), last + 1),
            None
        );
        assert_eq!(
            c.check_time(last + 1),
            Err(claims::TimeError::Expired),
            "the memory ends when the token is refused"
        );
        assert_eq!(c.check_time(last), Ok(()));

        // A token that has expired (within the leeway when checked) is remembered only as
        // long as it is accepted.
        let mut late = claims_for(&uid, now);
        late.exp = Some(now - LEEWAY_SECONDS);
        let late_token = tokens.sign(&late).unwrap_or_else(|e| panic!("{e}"));
        let req = request(&connection, &late_token);
        match bearer.authenticate(&req).await {
            AuthnOutcome::Authenticated(_) => {
                assert!(
                    connection
                        .remembered_bearer(&bearer_header(&late_token), now)
                        .is_some()
                );
                assert_eq!(
                    connection.remembered_bearer(&bearer_header(&late_token), now + 1),
                    None
                );
            }
            // The second turned between signing and checking: refused as expired.
            AuthnOutcome::Failed(e) => assert_eq!(e, "service account token has expired"),
            AuthnOutcome::NoCredentials => panic!("no credentials"),
        }
    }
}
