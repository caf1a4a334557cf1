//! The service-account signing and verifying keys against the real binary: an RSA key that an
//! earlier version generated under `--data-dir` keeps signing after an upgrade, an ECDSA key
//! given by `--service-account-key-file` verifies tokens, one given by
//! `--service-account-signing-key-file` signs them, and the issuer's documents name each key's
//! algorithm. (The generated P-256 key is tested in `tests/server_authn.rs`.)

mod common;

use std::path::Path;

use common::{Server, get_json, post_json};
use rsa::pkcs1::EncodeRsaPrivateKey;
use rsa::pkcs8::LineEnding;
use serde_json::{Value, json};

const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// Creates ServiceAccount `robot` in `default`; its uid.
async fn robot(server: &Server) -> String {
    let (code, account) = post_json(
        &server.admin(),
        server.url("/api/v1/namespaces/default/serviceaccounts"),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}),
    )
    .await;
    assert_eq!(code, 201, "{account}");
    account["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// A token of `robot` from the `serviceaccounts/token` subresource.
async fn issued_token(server: &Server) -> String {
    let (code, answer) = post_json(
        &server.admin(),
        server.url("/api/v1/namespaces/default/serviceaccounts/robot/token"),
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}),
    )
    .await;
    assert_eq!(code, 201, "{answer}");
    answer["status"]["token"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The user a TokenReview finds for `token`, or the review's error.
async fn reviewed_user(server: &Server, token: &str) -> Result<String, String> {
    let (code, body) = post_json(
        &server.admin(),
        server.url("/apis/authentication.k8s.io/v1/tokenreviews"),
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
               "spec": {"token": token}}),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    let status = &body["status"];
    if status["authenticated"] == true {
        Ok(status["user"]["username"]
            .as_str()
            .unwrap_or_default()
            .to_string())
    } else {
        Err(status["error"].as_str().unwrap_or_default().to_string())
    }
}

/// The JWKS entry with the id `kid`.
fn jwk<'a>(jwks: &'a Value, kid: &str) -> &'a Value {
    jwks["keys"]
        .as_array()
        .and_then(|keys| keys.iter().find(|k| k["kid"] == kid))
        .unwrap_or_else(|| panic!("kid {kid} not in {jwks}"))
}

/// Writes `text` to `dir/name`; the path as an argument.
fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
    path.display().to_string()
}

#[tokio::test]
async fn an_rsa_key_from_an_earlier_version_keeps_signing_beside_an_ecdsa_key_file() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let data = tmp.path().join("data");
    // The RSA key an earlier version generated, and an ECDSA P-384 key whose holder signs its
    // own tokens, verified through --service-account-key-file.
    let rsa =
        rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, 2048).unwrap_or_else(|e| panic!("{e}"));
    let pem = rsa
        .to_pkcs1_pem(LineEnding::LF)
        .unwrap_or_else(|e| panic!("{e}"));
    write(&data.join("pki"), "sa.key", &pem);
    let ec = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384)
        .unwrap_or_else(|e| panic!("{e}"));
    let ec_public = write(tmp.path(), "ec.pub", &ec.public_key_pem());
    let flag = format!("--service-account-key-file={ec_public}");
    let server = Server::start_in(&data, &[&flag]);
    assert_eq!(
        std::fs::read_to_string(data.join("pki").join("sa.key")).ok(),
        Some(pem.to_string()),
        "the key on disk is kept"
    );

    let discovery = get_json(&server, "/.well-known/openid-configuration").await;
    assert_eq!(
        discovery["id_token_signing_alg_values_supported"],
        json!(["ES384", "RS256"])
    );
    let jwks = get_json(&server, "/openid/v1/jwks").await;
    assert_eq!(jwks["keys"].as_array().map(Vec::len), Some(2), "{jwks}");

    // Issued tokens are RS256, under the RSA key's id.
    let uid = robot(&server).await;
    let token = issued_token(&server).await;
    let header = jsonwebtoken::decode_header(&token).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(header.alg, jsonwebtoken::Algorithm::RS256);
    let rsa_jwk = jwk(&jwks, header.kid.as_deref().unwrap_or_default());
    assert_eq!(
        (&rsa_jwk["kty"], &rsa_jwk["alg"]),
        (&json!("RSA"), &json!("RS256"))
    );
    assert_eq!(
        reviewed_user(&server, &token).await.as_deref(),
        Ok("system:serviceaccount:default:robot")
    );

    // A token the ECDSA key signed (ES384) is verified with it.
    let ec_kid = jwks["keys"]
        .as_array()
        .and_then(|keys| keys.iter().find(|k| k["kty"] == "EC"))
        .map(|k| {
            assert_eq!((&k["crv"], &k["alg"]), (&json!("P-384"), &json!("ES384")));
            k["kid"].as_str().unwrap_or_default().to_string()
        })
        .unwrap_or_else(|| panic!("no EC key in {jwks}"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let claims = json!({
        "aud": [ISSUER], "exp": now + 600, "iat": now, "iss": ISSUER, "nbf": now,
        "kubernetes.io": {"namespace": "default", "serviceaccount": {"name": "robot", "uid": uid}},
        "sub": "system:serviceaccount:default:robot",
    });
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES384);
    header.kid = Some(ec_kid);
    let signing = jsonwebtoken::EncodingKey::from_ec_der(ec.serialized_der());
    let ec_token =
        jsonwebtoken::encode(&header, &claims, &signing).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        reviewed_user(&server, &ec_token).await.as_deref(),
        Ok("system:serviceaccount:default:robot")
    );
    // The same claims under the RSA key's id fail its signature check.
    header.kid = rsa_jwk["kid"].as_str().map(str::to_string);
    let forged = jsonwebtoken::encode(&header, &claims, &signing).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        reviewed_user(&server, &forged).await,
        Err("go-jose/go-jose: error in cryptographic primitive".to_string())
    );
}

#[tokio::test]
async fn an_ecdsa_signing_key_given_by_flag_signs_its_algorithm() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let ec = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384)
        .unwrap_or_else(|e| panic!("{e}"));
    let key = write(tmp.path(), "signing.pem", &ec.serialize_pem());
    let flag = format!("--service-account-signing-key-file={key}");
    let server = Server::start(&[&flag]);
    assert!(
        !server.data_dir.join("pki").join("sa.key").exists(),
        "no key is generated when one is given"
    );
    let discovery = get_json(&server, "/.well-known/openid-configuration").await;
    assert_eq!(
        discovery["id_token_signing_alg_values_supported"],
        json!(["ES384"])
    );
    robot(&server).await;
    let token = issued_token(&server).await;
    let header = jsonwebtoken::decode_header(&token).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(header.alg, jsonwebtoken::Algorithm::ES384);
    let jwks = get_json(&server, "/openid/v1/jwks").await;
    let key = jwk(&jwks, header.kid.as_deref().unwrap_or_default());
    let decoding = jsonwebtoken::DecodingKey::from_ec_components(
        key["x"].as_str().unwrap_or_default(),
        key["y"].as_str().unwrap_or_default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES384);
    validation.set_audience(&[ISSUER]);
    jsonwebtoken::decode::<Value>(&token, &decoding, &validation)
        .unwrap_or_else(|e| panic!("the JWKS does not verify the token: {e}"));
    assert_eq!(
        reviewed_user(&server, &token).await.as_deref(),
        Ok("system:serviceaccount:default:robot")
    );
}
