//! Unit tests of service-account token validation (the parts before the ServiceAccount
//! lookup; the lookup is tested against the running server in `tests/server_authn.rs`).

use super::*;

fn key() -> rsa::RsaPrivateKey {
    rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).unwrap_or_else(|e| panic!("{e}"))
}

fn tokens_with(
    signing: &rsa::RsaPrivateKey,
    verifying: &[&rsa::RsaPrivateKey],
) -> ServiceAccountTokens {
    let config = ServiceAccountConfig {
        issuers: vec!["https://issuer.example".to_string()],
        api_audiences: vec!["https://issuer.example".to_string()],
        signing: SigningKey::new(signing).unwrap_or_else(|e| panic!("{e}")),
        public_keys: verifying
            .iter()
            .map(|k| PublicKey::new(k.to_public_key()).unwrap_or_else(|e| panic!("{e}")))
            .collect(),
        jwks_uri: None,
        max_expiration_seconds: None,
    };
    ServiceAccountTokens::new(config, Arc::default())
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
    let (signer, other) = (key(), key());
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

#[test]
fn issued_tokens_carry_kubernetes_claims() {
    let k = key();
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
