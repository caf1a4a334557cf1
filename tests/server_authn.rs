//! Authentication against the real binary: bearer tokens of `--token-auth-file`, service-account
//! tokens from `kubectl create token` (and the `serviceaccounts/token` subresource), TokenReview,
//! the issuer's discovery documents, and 401 for credentials that fail.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::{Server, kubectls, post_json};
use serde_json::{Value, json};

/// A kubeconfig with the server and its CA but no client certificate, so that `--token` is the
/// only credential kubectl sends.
fn token_kubeconfig(server: &Server, dir: &Path) -> PathBuf {
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD.encode(server.kubeconfig_ca());
    let path = dir.join("token.kubeconfig");
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\nusers:\n- name: u\n  user: {{}}\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n",
        server.url("")
    );
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("{e}"));
    path
}

/// Runs `kubectl` with `kubeconfig` and a private cache directory.
fn kubectl(kubectl: &Path, kubeconfig: &Path, cache: &Path, args: &[&str]) -> Output {
    Command::new(kubectl)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(cache)
        .args(args)
        .env_remove("KUBECONFIG")
        .env("HOME", cache)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", kubectl.display()))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Who kubectl is with `token`: the SelfSubjectReview it creates with the token (`kubectl
/// create --raw`, which every kubectl can send), and `kubectl auth whoami -o json` must agree
/// (kubectl 1.27 asks for `v1beta1`, which Kubernetes 1.33 does not serve by default and apiary
/// does not serve, so only the raw review is asked of it). `None` when authorization refused the review:
/// then the 403 must name the token's user (which users may ask is the authorizer's decision).
fn whoami(
    k: &Path,
    kubeconfig: &Path,
    cache: &Path,
    token: &str,
    expect_user: &str,
) -> Option<Value> {
    let body = cache.join("ssr.json");
    std::fs::write(
        &body,
        r#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let body = body.display().to_string();
    let raw = kubectl(
        k,
        kubeconfig,
        cache,
        &[
            "create",
            "--raw",
            "/apis/authentication.k8s.io/v1/selfsubjectreviews",
            "-f",
            &body,
            "--token",
            token,
        ],
    );
    if !raw.status.success() {
        let err = text(&raw.stderr);
        assert!(
            err.contains(&format!("User \"{expect_user}\" cannot create resource")),
            "{}: the review's refusal does not name {expect_user}: {err}",
            k.display(),
        );
        return None;
    }
    let review: Value = serde_json::from_slice(&raw.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(review["status"]["userInfo"]["username"], expect_user);
    if !k.to_string_lossy().ends_with("kubectl.1.27") {
        let out = kubectl(
            k,
            kubeconfig,
            cache,
            &["auth", "whoami", "-o", "json", "--token", token],
        );
        assert!(
            out.status.success(),
            "{}: {}",
            k.display(),
            text(&out.stderr)
        );
        let whoami: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(whoami["status"], review["status"], "{}", k.display());
    }
    Some(review)
}

async fn token_review(server: &Server, token: &str, audiences: &[&str]) -> Value {
    let (code, body) = post_json(
        &server.admin(),
        server.url("/apis/authentication.k8s.io/v1/tokenreviews"),
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
               "spec": {"token": token, "audiences": audiences}}),
    )
    .await;
    assert_eq!(code, 201, "{body}");
    body["status"].clone()
}

/// GET `path` with a bearer token: the status code and body.
async fn get_with_token(server: &Server, path: &str, token: &str) -> (u16, Value) {
    let resp = server
        .anonymous()
        .get(server.url(path))
        .bearer_auth(token)
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let code = resp.status().as_u16();
    (code, resp.json().await.unwrap_or(Value::Null))
}

/// Polls until a request with `token` is refused with 401 (the ServiceAccount lookup reads the
/// watch cache, which sees a deletion an instant after it is written).
async fn becomes_unauthorized(server: &Server, token: &str) -> (u16, Value) {
    let mut last = (0, Value::Null);
    for _ in 0..100 {
        last = get_with_token(server, "/version", token).await;
        if last.0 == 401 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    last
}

fn assert_unauthorized(code: u16, body: &Value) {
    assert_eq!(code, 401, "{body}");
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["reason"], "Unauthorized");
    assert_eq!(body["message"], "Unauthorized");
    assert_eq!(body["code"], 401);
}

#[tokio::test]
async fn unknown_tokens_get_401_and_no_credentials_are_anonymous() {
    let server = Server::start(&[]);
    for token in ["not-a-token", "a.b.c", "eyJhbGciOiJSUzI1NiJ9.e30.c2ln"] {
        let (code, body) = get_with_token(&server, "/version", token).await;
        assert_unauthorized(code, &body);
    }
    // No credentials: anonymous, which may read the version.
    let resp = server
        .anonymous()
        .get(server.url("/version"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 200);
    // An empty bearer token is no credential either.
    let resp = server
        .anonymous()
        .get(server.url("/version"))
        .header("Authorization", "Bearer ")
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 200);
}

#[tokio::test]
async fn token_file_users_are_who_kubectl_says() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let file = tmp.path().join("tokens.csv");
    std::fs::write(
        &file,
        "tok-root,root-user,uid-42,\"ops,system:masters\"\n\ntok-dev,dev-user,uid-43,dev\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let file_arg = format!("--token-auth-file={}", file.display());
    let server = Server::start(&[&file_arg]);
    let kubeconfig = token_kubeconfig(&server, tmp.path());
    for k in kubectls() {
        let cache = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let review = whoami(&k, &kubeconfig, cache.path(), "tok-root", "root-user")
            .unwrap_or_else(|| panic!("{}: a system:masters user may ask who it is", k.display()));
        let info = &review["status"]["userInfo"];
        assert_eq!(info["username"], "root-user", "{}", k.display());
        assert_eq!(info["uid"], "uid-42");
        assert_eq!(
            info["groups"],
            json!(["ops", "system:masters", "system:authenticated"])
        );
        let out = kubectl(
            &k,
            &kubeconfig,
            cache.path(),
            &["auth", "whoami", "--token", "wrong"],
        );
        assert!(!out.status.success());
        assert!(
            text(&out.stderr).contains("Unauthorized"),
            "{}: {}",
            k.display(),
            text(&out.stderr)
        );
    }
    let status = token_review(&server, "tok-dev", &[]).await;
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(status["user"]["username"], "dev-user");
    assert_eq!(status["user"]["uid"], "uid-43");
    assert_eq!(
        status["user"]["groups"],
        json!(["dev", "system:authenticated"])
    );
    assert_eq!(
        status["audiences"],
        json!(["https://kubernetes.default.svc.cluster.local"])
    );
    let status = token_review(&server, "tok-unknown", &[]).await;
    assert!(status["authenticated"].is_null(), "{status}");
    assert_eq!(status["error"], "invalid bearer token");
}

#[test]
fn a_malformed_token_file_stops_the_start_naming_the_line() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let file = tmp.path().join("tokens.csv");
    std::fs::write(&file, "tok,user,uid\ntok2,user2\n").unwrap_or_else(|e| panic!("{e}"));
    let out = Command::new(env!("CARGO_BIN_EXE_apiary"))
        .arg("--data-dir")
        .arg(tmp.path().join("data"))
        .arg("--secure-port=0")
        .arg(format!("--token-auth-file={}", file.display()))
        .output()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(!out.status.success());
    let err = text(&out.stderr);
    assert!(
        err.contains("must have at least 3 columns (token, user name, user uid), found 2 (line 2)"),
        "{err}"
    );
}

#[tokio::test]
async fn service_account_tokens_work_until_their_account_goes() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let server = Server::start(&[]);
    let admin_cache = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let admin = |k: &Path, args: &[&str]| {
        let out = kubectl(k, &server.kubeconfig(), admin_cache.path(), args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        text(&out.stdout)
    };
    let kubeconfig = token_kubeconfig(&server, tmp.path());
    let all = kubectls();
    let first = &all[0];

    // Discovery lists the subresource as kubectl expects it.
    let v1: Value = serde_json::from_str(&admin(first, &["get", "--raw", "/api/v1"]))
        .unwrap_or_else(|e| panic!("{e}"));
    let token_resource = v1["resources"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["name"] == "serviceaccounts/token"))
        .cloned()
        .unwrap_or_else(|| panic!("no serviceaccounts/token in {v1}"));
    assert_eq!(token_resource["kind"], "TokenRequest");
    assert_eq!(token_resource["group"], "authentication.k8s.io");
    assert_eq!(token_resource["version"], "v1");
    assert_eq!(token_resource["verbs"], json!(["create"]));
    assert_eq!(token_resource["namespaced"], true);
    let aggregated: Value = server
        .admin()
        .get(server.url("/api"))
        .header(
            "Accept",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        )
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"))
        .json()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let subresources = aggregated["items"][0]["versions"][0]["resources"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["resource"] == "serviceaccounts"))
        .map(|r| r["subresources"].clone())
        .unwrap_or_else(|| panic!("no serviceaccounts in {aggregated}"));
    assert_eq!(
        subresources,
        json!([{"subresource": "token",
                "responseKind": {"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"},
                "verbs": ["create"]}])
    );

    for (i, k) in all.iter().enumerate() {
        let cache = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        // apiary, like kube-apiserver, does not create `default` ServiceAccounts itself
        // (kube-controller-manager does): the test creates it.
        let ns = format!("sa-{i}");
        admin(k, &["create", "namespace", &ns]);
        admin(k, &["create", "serviceaccount", "default", "-n", &ns]);
        let uid = admin(
            k,
            &[
                "get",
                "serviceaccount",
                "default",
                "-n",
                &ns,
                "-o",
                "jsonpath={.metadata.uid}",
            ],
        );
        let token = admin(k, &["create", "token", "default", "-n", &ns])
            .trim()
            .to_string();
        let user = format!("system:serviceaccount:{ns}:default");
        if let Some(review) = whoami(k, &kubeconfig, cache.path(), &token, &user) {
            let info = &review["status"]["userInfo"];
            assert_eq!(info["username"], user.as_str());
            assert_eq!(info["uid"], uid.as_str());
        }
        let (code, _) = get_with_token(&server, "/version", &token).await;
        assert_eq!(code, 200, "{}", k.display());

        let status = token_review(&server, &token, &[]).await;
        assert_eq!(status["authenticated"], true, "{status}");
        assert_eq!(status["user"]["username"], user.as_str());
        assert_eq!(status["user"]["uid"], uid.as_str());
        assert_eq!(
            status["user"]["groups"],
            json!([
                "system:serviceaccounts",
                format!("system:serviceaccounts:{ns}"),
                "system:authenticated"
            ])
        );
        assert!(
            status["user"]["extra"]["authentication.kubernetes.io/credential-id"][0]
                .as_str()
                .is_some_and(|c| c.starts_with("JTI=")),
            "{status}"
        );
        let status = token_review(&server, &token, &["vault"]).await;
        assert!(status["authenticated"].is_null(), "{status}");
        assert_eq!(
            status["error"],
            "token audiences [\"https://kubernetes.default.svc.cluster.local\"] is invalid for the target audiences [\"vault\"]"
        );

        // A token for another audience does not authenticate to the API server.
        let vault = admin(
            k,
            &[
                "create",
                "token",
                "default",
                "-n",
                &ns,
                "--audience",
                "vault",
            ],
        );
        let (code, body) = get_with_token(&server, "/version", vault.trim()).await;
        assert_unauthorized(code, &body);
        let status = token_review(&server, vault.trim(), &["vault"]).await;
        assert_eq!(status["authenticated"], true, "{status}");
        assert_eq!(status["audiences"], json!(["vault"]));

        // Bound to a Secret by kubectl: works while the Secret exists.
        admin(k, &["create", "secret", "generic", "holder", "-n", &ns]);
        let bound = admin(
            k,
            &[
                "create",
                "token",
                "default",
                "-n",
                &ns,
                "--bound-object-kind",
                "Secret",
                "--bound-object-name",
                "holder",
            ],
        );
        let (code, _) = get_with_token(&server, "/version", bound.trim()).await;
        assert_eq!(code, 200, "{}", k.display());
        admin(k, &["delete", "secret", "holder", "-n", &ns]);
        let (code, body) = becomes_unauthorized(&server, bound.trim()).await;
        assert_unauthorized(code, &body);

        // Deleted: the token stops working.
        admin(k, &["delete", "serviceaccount", "default", "-n", &ns]);
        let (code, body) = becomes_unauthorized(&server, &token).await;
        assert_unauthorized(code, &body);
        let status = token_review(&server, &token, &[]).await;
        assert!(status["authenticated"].is_null(), "{status}");
        assert_eq!(
            status["error"], "serviceaccounts \"default\" not found",
            "{status}"
        );

        // Recreated with the same name (another uid): the old token still fails, a new one works.
        admin(k, &["create", "serviceaccount", "default", "-n", &ns]);
        let new_uid = admin(
            k,
            &[
                "get",
                "serviceaccount",
                "default",
                "-n",
                &ns,
                "-o",
                "jsonpath={.metadata.uid}",
            ],
        );
        let mut refused = (0, Value::Null);
        for _ in 0..100 {
            let status = token_review(&server, &token, &[]).await;
            if status["error"]
                == format!("service account UID ({new_uid}) does not match claim ({uid})").as_str()
            {
                refused = get_with_token(&server, "/version", &token).await;
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert_unauthorized(refused.0, &refused.1);
        let fresh = admin(k, &["create", "token", "default", "-n", &ns]);
        let (code, _) = get_with_token(&server, "/version", fresh.trim()).await;
        assert_eq!(code, 200);
    }
}

#[tokio::test]
async fn token_requests_and_the_issuer_documents() {
    let tmp = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let data = tmp.path().join("data");
    let mut server = Server::start_in(&data, &[]);
    let admin = server.admin();
    let (code, _) = post_json(
        &admin,
        server.url("/api/v1/namespaces/default/serviceaccounts"),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}),
    )
    .await;
    assert_eq!(code, 201);
    let url = server.url("/api/v1/namespaces/default/serviceaccounts/robot/token");

    // Validation, in Kubernetes' words.
    let (code, body) = post_json(
        &admin,
        url.clone(),
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
               "spec": {"expirationSeconds": 599}}),
    )
    .await;
    assert_eq!(code, 422, "{body}");
    assert_eq!(
        body["message"],
        "TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"
    );
    let (code, body) = post_json(
        &admin,
        server.url("/api/v1/namespaces/default/serviceaccounts/nobody/token"),
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}),
    )
    .await;
    assert_eq!(code, 404, "{body}");
    assert_eq!(body["message"], "serviceaccounts \"nobody\" not found");

    let (code, answer) = post_json(
        &admin,
        url.clone(),
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
               "spec": {"audiences": ["vault"], "expirationSeconds": 600}}),
    )
    .await;
    assert_eq!(code, 201, "{answer}");
    assert_eq!(answer["kind"], "TokenRequest");
    assert_eq!(answer["metadata"]["name"], "robot");
    assert_eq!(answer["metadata"]["namespace"], "default");
    assert_eq!(answer["spec"]["audiences"], json!(["vault"]));
    assert!(
        answer["status"]["expirationTimestamp"].is_string(),
        "{answer}"
    );
    let token = answer["status"]["token"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    let get = |path: &str| {
        let admin = admin.clone();
        let url = server.url(path);
        async move {
            let resp = admin
                .get(url)
                .send()
                .await
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(resp.status().as_u16(), 200);
            let ct = resp
                .headers()
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string();
            (ct, resp.json::<Value>().await.unwrap_or(Value::Null))
        }
    };
    let (ct, discovery) = get("/.well-known/openid-configuration").await;
    assert_eq!(ct, "application/json");
    let issuer = "https://kubernetes.default.svc.cluster.local";
    assert_eq!(discovery["issuer"], issuer);
    assert_eq!(discovery["jwks_uri"], server.url("/openid/v1/jwks"));
    assert_eq!(discovery["response_types_supported"], json!(["id_token"]));
    assert_eq!(discovery["subject_types_supported"], json!(["public"]));
    assert_eq!(
        discovery["id_token_signing_alg_values_supported"],
        json!(["ES256"])
    );
    let (ct, jwks) = get("/openid/v1/jwks").await;
    assert_eq!(ct, "application/jwk-set+json");
    let (_, root) = get("/").await;
    for path in ["/.well-known/openid-configuration", "/openid/v1/jwks"] {
        assert!(
            root["paths"]
                .as_array()
                .is_some_and(|p| p.iter().any(|x| x == path)),
            "{path} not in {root}"
        );
    }

    // The key set verifies the issued token, signed ES256 with the generated P-256 key.
    let header = jsonwebtoken::decode_header(&token).unwrap_or_else(|e| panic!("{e}"));
    let kid = header.kid.clone().unwrap_or_default();
    let key = jwks["keys"]
        .as_array()
        .and_then(|keys| keys.iter().find(|k| k["kid"] == kid.as_str()))
        .cloned()
        .unwrap_or_else(|| panic!("kid {kid} not in {jwks}"));
    assert_eq!(header.alg, jsonwebtoken::Algorithm::ES256);
    assert_eq!(key["alg"], "ES256");
    assert_eq!(key["use"], "sig");
    assert_eq!(key["kty"], "EC");
    assert_eq!(key["crv"], "P-256");
    let decoding = jsonwebtoken::DecodingKey::from_ec_components(
        key["x"].as_str().unwrap_or_default(),
        key["y"].as_str().unwrap_or_default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
    validation.set_audience(&["vault"]);
    validation.set_issuer(&[issuer]);
    let claims = jsonwebtoken::decode::<Value>(&token, &decoding, &validation)
        .unwrap_or_else(|e| panic!("the JWKS does not verify the token: {e}"))
        .claims;
    assert_eq!(claims["sub"], "system:serviceaccount:default:robot");
    assert_eq!(claims["kubernetes.io"]["namespace"], "default");
    assert_eq!(claims["kubernetes.io"]["serviceaccount"]["name"], "robot");
    assert_eq!(
        claims["exp"]
            .as_i64()
            .zip(claims["iat"].as_i64())
            .map(|(e, i)| e - i),
        Some(600)
    );
    assert_eq!(claims["nbf"], claims["iat"]);
    assert!(claims["jti"].is_string());

    // The generated key is reused after a restart: the token still verifies.
    server.terminate(Duration::from_secs(30));
    let server = Server::start_in(&data, &[]);
    let status = token_review(&server, &token, &["vault"]).await;
    assert_eq!(status["authenticated"], true, "{status}");
    assert_eq!(
        status["user"]["username"],
        "system:serviceaccount:default:robot"
    );
}

#[tokio::test]
async fn tokens_bound_to_a_secret_end_with_it() {
    let server = Server::start(&["--service-account-max-token-expiration=1h"]);
    let admin = server.admin();
    let ns_url = |path: &str| server.url(&format!("/api/v1/namespaces/default/{path}"));
    let (code, _) = post_json(
        &admin,
        ns_url("serviceaccounts"),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}}),
    )
    .await;
    assert_eq!(code, 201);
    let (code, secret) = post_json(
        &admin,
        ns_url("secrets"),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "bound"}}),
    )
    .await;
    assert_eq!(code, 201);
    let secret_uid = secret["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let request = |bound: Value| {
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
               "spec": {"boundObjectRef": bound}})
    };
    let url = ns_url("serviceaccounts/robot/token");

    // Kinds apiary does not serve, a missing Secret and a stale uid are refused as in Kubernetes.
    let (code, body) = post_json(
        &admin,
        url.clone(),
        request(json!({"kind": "Pod", "apiVersion": "v1", "name": "p"})),
    )
    .await;
    assert_eq!(code, 400, "{body}");
    assert_eq!(
        body["message"],
        "cannot bind token for serviceaccount \"robot\" to object of type /v1, Kind=Pod"
    );
    let (code, body) = post_json(
        &admin,
        url.clone(),
        request(json!({"kind": "Secret", "apiVersion": "v1", "name": "missing"})),
    )
    .await;
    assert_eq!(code, 404, "{body}");
    assert_eq!(body["message"], "secrets \"missing\" not found");
    let (code, body) = post_json(
        &admin,
        url.clone(),
        request(json!({"kind": "Secret", "apiVersion": "v1", "name": "bound", "uid": "stale"})),
    )
    .await;
    assert_eq!(code, 409, "{body}");
    assert_eq!(
        body["message"],
        "Operation cannot be fulfilled on Secret \"bound\": the UID in the bound object reference (stale) does not match the UID in record. The object might have been deleted and then recreated"
    );

    // Two hours asked, the server's maximum (one hour) given.
    let mut body =
        request(json!({"kind": "Secret", "apiVersion": "v1", "name": "bound", "uid": secret_uid}));
    body["spec"]["expirationSeconds"] = json!(7200);
    let (code, answer) = post_json(&admin, url, body).await;
    assert_eq!(code, 201, "{answer}");
    assert_eq!(answer["spec"]["expirationSeconds"], 3600);
    let token = answer["status"]["token"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let claims: Value = {
        use base64::Engine;
        let payload = token.split('.').nth(1).unwrap_or_default();
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(payload)
            .unwrap_or_else(|e| panic!("{e}"));
        serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{e}"))
    };
    assert_eq!(
        claims["kubernetes.io"]["secret"],
        json!({"name": "bound", "uid": secret_uid})
    );
    assert_eq!(
        claims["exp"]
            .as_i64()
            .zip(claims["iat"].as_i64())
            .map(|(e, i)| e - i),
        Some(3600)
    );
    let (code, _) = get_with_token(&server, "/version", &token).await;
    assert_eq!(code, 200);

    let resp = admin
        .delete(ns_url("secrets/bound"))
        .send()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(resp.status().as_u16(), 200);
    let (code, body) = becomes_unauthorized(&server, &token).await;
    assert_unauthorized(code, &body);
    let status = token_review(&server, &token, &[]).await;
    assert_eq!(
        status["error"],
        "service account token has been invalidated"
    );
}
