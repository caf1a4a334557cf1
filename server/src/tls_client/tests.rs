//! The verification matrix, with certificates made by rcgen.

use std::time::{Duration, SystemTime};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
};

use super::*;

/// A certificate and what signs with its key.
struct Made {
    pem: String,
    der: Vec<u8>,
    issuer: Issuer<'static, KeyPair>,
}

fn params(cn: &str, sans: &[&str]) -> CertificateParams {
    let mut p = CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())
        .expect("params");
    p.distinguished_name.push(DnType::CommonName, cn);
    p
}

fn ca_params(cn: &str) -> CertificateParams {
    let mut p = params(cn, &[]);
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p
}

fn finish(p: CertificateParams, signed_by: Option<&Made>) -> Made {
    let key = KeyPair::generate().expect("key");
    let cert = match signed_by {
        None => p.self_signed(&key),
        Some(by) => p.signed_by(&key, &by.issuer),
    }
    .expect("certificate");
    Made {
        pem: cert.pem(),
        der: cert.der().to_vec(),
        issuer: Issuer::new(p, key),
    }
}

fn verifier(bundle: &str, server_name: Option<&str>) -> GoVerifier {
    ClientTls {
        trust: Trust::from_ca_bundle(bundle.as_bytes()),
        server_name: server_name.map(str::to_string),
        client_certificate: None,
    }
    .verifier()
    .expect("verifier")
}

fn verify(bundle: &str, leaf: &Made, intermediates: &[&Made], name: &str) -> Result<(), String> {
    let intermediates: Vec<&[u8]> = intermediates.iter().map(|m| m.der.as_slice()).collect();
    verifier(bundle, None)
        .verify(&leaf.der, &intermediates, name, SystemTime::now())
        .map_err(|e| e.to_string())
}

const UNKNOWN: &str =
    "tls: failed to verify certificate: x509: certificate signed by unknown authority";

#[test]
fn a_self_signed_ca_leaf_is_its_own_bundle() {
    let mut p = ca_params("hooks");
    p.subject_alt_names = params("x", &["hooks.ns.svc"]).subject_alt_names;
    let leaf = finish(p, None);
    assert_eq!(verify(&leaf.pem, &leaf, &[], "hooks.ns.svc"), Ok(()));
    // Its name is still checked.
    assert_eq!(
        verify(&leaf.pem, &leaf, &[], "other.ns.svc").unwrap_err(),
        "tls: failed to verify certificate: x509: certificate is valid for hooks.ns.svc, not other.ns.svc"
    );
    // And it is no root of another certificate's bundle.
    let other = finish(ca_params("other"), None);
    assert_eq!(
        verify(&other.pem, &leaf, &[], "hooks.ns.svc").unwrap_err(),
        UNKNOWN
    );
}

#[test]
fn a_leaf_of_a_ca_is_accepted_and_a_wrong_ca_is_unknown() {
    let ca = finish(ca_params("webhook-ca"), None);
    let leaf = finish(params("webhook", &["hooks.ns.svc"]), Some(&ca));
    assert_eq!(verify(&ca.pem, &leaf, &[], "hooks.ns.svc"), Ok(()));
    let wrong = finish(ca_params("another-ca"), None);
    assert_eq!(
        verify(&wrong.pem, &leaf, &[], "hooks.ns.svc").unwrap_err(),
        UNKNOWN
    );
    // A wrong CA of the same name is a candidate whose signature does not verify: Go's hint.
    let impostor = finish(ca_params("webhook-ca"), None);
    assert_eq!(
        verify(&impostor.pem, &leaf, &[], "hooks.ns.svc").unwrap_err(),
        format!(
            "{UNKNOWN} (possibly because of \"x509: ECDSA verification failure\" while trying to \
             verify candidate authority certificate \"webhook-ca\")"
        )
    );
}

#[test]
fn the_second_ca_of_a_bundle_verifies() {
    let first = finish(ca_params("first"), None);
    let second = finish(ca_params("second"), None);
    let leaf = finish(params("webhook", &["hooks.ns.svc"]), Some(&second));
    let bundle = format!("{}{}", first.pem, second.pem);
    assert_eq!(verify(&bundle, &leaf, &[], "hooks.ns.svc"), Ok(()));
}

#[test]
fn validity_periods_are_checked_with_gos_text() {
    let ca = finish(ca_params("ca"), None);
    let mut p = params("webhook", &["hooks.ns.svc"]);
    p.not_before = rcgen::date_time_ymd(2020, 1, 1);
    p.not_after = rcgen::date_time_ymd(2021, 1, 1);
    let expired = finish(p, Some(&ca));
    let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let e = verifier(&ca.pem, None)
        .verify(&expired.der, &[], "hooks.ns.svc", at)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "tls: failed to verify certificate: x509: certificate has expired or is not yet valid: \
         current time 2023-11-14T22:13:20Z is after 2021-01-01T00:00:00Z"
    );
    let early = SystemTime::UNIX_EPOCH + Duration::from_secs(1_500_000_000);
    let e = verifier(&ca.pem, None)
        .verify(&expired.der, &[], "hooks.ns.svc", early)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "tls: failed to verify certificate: x509: certificate has expired or is not yet valid: \
         current time 2017-07-14T02:40:00Z is before 2020-01-01T00:00:00Z"
    );
    // Even a leaf that is its own bundle.
    let mut p = ca_params("self");
    p.subject_alt_names = params("x", &["hooks.ns.svc"]).subject_alt_names;
    p.not_before = rcgen::date_time_ymd(2020, 1, 1);
    p.not_after = rcgen::date_time_ymd(2021, 1, 1);
    let own = finish(p, None);
    assert!(
        verifier(&own.pem, None)
            .verify(&own.der, &[], "hooks.ns.svc", at)
            .unwrap_err()
            .to_string()
            .contains("x509: certificate has expired or is not yet valid")
    );
}

#[test]
fn names_are_the_sans_with_gos_wildcards_and_ips() {
    let ca = finish(ca_params("ca"), None);
    let leaf = finish(params("webhook", &["hooks.ns.svc", "127.0.0.1"]), Some(&ca));
    assert_eq!(verify(&ca.pem, &leaf, &[], "127.0.0.1"), Ok(()));
    assert_eq!(verify(&ca.pem, &leaf, &[], "HOOKS.ns.svc"), Ok(()));
    assert_eq!(
        verify(&ca.pem, &leaf, &[], "10.0.0.1").unwrap_err(),
        "tls: failed to verify certificate: x509: certificate is valid for 127.0.0.1, not 10.0.0.1"
    );
    assert_eq!(
        verify(&ca.pem, &leaf, &[], "other.ns.svc").unwrap_err(),
        "tls: failed to verify certificate: x509: certificate is valid for hooks.ns.svc, not other.ns.svc"
    );
    let dns_only = finish(params("webhook", &["hooks.ns.svc"]), Some(&ca));
    assert_eq!(
        verify(&ca.pem, &dns_only, &[], "127.0.0.1").unwrap_err(),
        "tls: failed to verify certificate: x509: cannot validate certificate for 127.0.0.1 \
         because it doesn't contain any IP SANs"
    );
    let wildcard = finish(params("webhook", &["*.ns.svc"]), Some(&ca));
    assert_eq!(verify(&ca.pem, &wildcard, &[], "hooks.ns.svc"), Ok(()));
    assert!(verify(&ca.pem, &wildcard, &[], "a.hooks.ns.svc").is_err());
    assert!(verify(&ca.pem, &wildcard, &[], "ns.svc").is_err());
    // The common name alone is not a name (Go ≥ 1.15).
    let cn_only = finish(params("hooks.ns.svc", &[]), Some(&ca));
    assert_eq!(
        verify(&ca.pem, &cn_only, &[], "hooks.ns.svc").unwrap_err(),
        "tls: failed to verify certificate: x509: certificate relies on legacy Common Name field, \
         use SANs instead"
    );
}

#[test]
fn intermediates_sent_by_the_server_complete_the_chain() {
    let root = finish(ca_params("root"), None);
    let intermediate = finish(ca_params("intermediate"), Some(&root));
    let leaf = finish(params("webhook", &["hooks.ns.svc"]), Some(&intermediate));
    assert_eq!(
        verify(&root.pem, &leaf, &[&intermediate], "hooks.ns.svc"),
        Ok(())
    );
    assert_eq!(
        verify(&root.pem, &leaf, &[], "hooks.ns.svc").unwrap_err(),
        UNKNOWN
    );
    // An "intermediate" that is no CA cannot sign.
    let not_ca = finish(params("intermediate", &["x.example"]), Some(&root));
    let below = finish(params("webhook", &["hooks.ns.svc"]), Some(&not_ca));
    assert_eq!(
        verify(&root.pem, &below, &[&not_ca], "hooks.ns.svc").unwrap_err(),
        format!(
            "{UNKNOWN} (possibly because of \"x509: invalid signature: parent certificate cannot \
             sign this kind of certificate\" while trying to verify candidate authority \
             certificate \"intermediate\")"
        )
    );
    // A path length of 0 on the root allows no intermediate.
    let mut p = ca_params("short");
    p.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    let short = finish(p, None);
    let mid = finish(ca_params("mid"), Some(&short));
    let leaf = finish(params("webhook", &["hooks.ns.svc"]), Some(&mid));
    assert!(
        verify(&short.pem, &leaf, &[&mid], "hooks.ns.svc")
            .unwrap_err()
            .contains("x509: too many intermediates for path length constraint")
    );
}

#[test]
fn extended_key_usages_must_allow_serving() {
    let ca = finish(ca_params("ca"), None);
    let mut p = params("client", &["hooks.ns.svc"]);
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let client_only = finish(p, Some(&ca));
    assert_eq!(
        verify(&ca.pem, &client_only, &[], "hooks.ns.svc").unwrap_err(),
        "tls: failed to verify certificate: x509: certificate specifies an incompatible key usage"
    );
    let mut p = params("server", &["hooks.ns.svc"]);
    p.extended_key_usages = vec![
        ExtendedKeyUsagePurpose::ClientAuth,
        ExtendedKeyUsagePurpose::ServerAuth,
    ];
    assert_eq!(
        verify(&ca.pem, &finish(p, Some(&ca)), &[], "hooks.ns.svc"),
        Ok(())
    );
    // A self-signed leaf that is its own bundle, for clients only, is refused as well.
    let mut p = ca_params("own");
    p.subject_alt_names = params("x", &["hooks.ns.svc"]).subject_alt_names;
    p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let own = finish(p, None);
    assert!(
        verify(&own.pem, &own, &[], "hooks.ns.svc")
            .unwrap_err()
            .contains("incompatible key usage")
    );
}

#[test]
fn name_constraints_of_a_ca_are_enforced() {
    let mut p = ca_params("constrained");
    p.name_constraints = Some(rcgen::NameConstraints {
        permitted_subtrees: vec![rcgen::GeneralSubtree::DnsName("ns.svc".into())],
        excluded_subtrees: vec![rcgen::GeneralSubtree::DnsName("secret.ns.svc".into())],
    });
    let ca = finish(p, None);
    let ok = finish(params("webhook", &["hooks.ns.svc"]), Some(&ca));
    assert_eq!(verify(&ca.pem, &ok, &[], "hooks.ns.svc"), Ok(()));
    // The root fails as a candidate: Go reports why in the unknown authority's hint.
    let outside = finish(params("webhook", &["hooks.other.svc"]), Some(&ca));
    assert_eq!(
        verify(&ca.pem, &outside, &[], "hooks.other.svc").unwrap_err(),
        format!(
            "{UNKNOWN} (possibly because of \"x509: a root or intermediate certificate is not \
             authorized to sign for this name: DNS name \\\"hooks.other.svc\\\" is not permitted \
             by any constraint\" while trying to verify candidate authority certificate \
             \"constrained\")"
        )
    );
    let excluded = finish(params("webhook", &["secret.ns.svc"]), Some(&ca));
    assert!(
        verify(&ca.pem, &excluded, &[], "secret.ns.svc")
            .unwrap_err()
            .contains("is excluded by constraint \\\"secret.ns.svc\\\"")
    );
}

#[test]
fn insecure_skips_and_bundles_must_hold_certificates() {
    let ca = finish(ca_params("ca"), None);
    let leaf = finish(params("webhook", &["hooks.ns.svc"]), Some(&ca));
    let insecure = ClientTls {
        trust: Trust::InsecureSkipVerify,
        server_name: None,
        client_certificate: None,
    };
    insecure
        .verifier()
        .expect("verifier")
        .verify(&leaf.der, &[], "anything", SystemTime::now())
        .expect("insecure accepts");
    assert_eq!(Trust::from_ca_bundle(b""), Trust::SystemRoots);
    let bad = ClientTls {
        trust: Trust::from_ca_bundle(b"not a certificate"),
        server_name: None,
        client_certificate: None,
    };
    assert_eq!(bad.build().unwrap_err(), TlsClientError::EmptyBundle);
    // The system roots know no private CA.
    let system = ClientTls {
        trust: Trust::SystemRoots,
        server_name: None,
        client_certificate: None,
    };
    assert_eq!(
        system
            .verifier()
            .expect("verifier")
            .verify(&leaf.der, &[], "hooks.ns.svc", SystemTime::now())
            .unwrap_err()
            .to_string(),
        UNKNOWN
    );
    // A client certificate is taken with its key.
    let key = KeyPair::generate().expect("key");
    let cert = params("front-proxy", &[]).self_signed(&key).expect("cert");
    let with_cert = ClientTls {
        trust: Trust::CaBundle(ca.pem.clone().into_bytes()),
        server_name: Some("api.ns.svc".into()),
        client_certificate: Some(ClientCertificate {
            chain_pem: cert.pem().into_bytes(),
            key_pem: key.serialize_pem().into_bytes(),
        }),
    };
    assert!(
        with_cert
            .build()
            .expect("config")
            .client_auth_cert_resolver
            .has_certs()
    );
}

#[test]
fn the_configured_server_name_is_verified_instead_of_the_host() {
    let ca = finish(ca_params("ca"), None);
    let leaf = finish(params("webhook", &["hooks.ns.svc"]), Some(&ca));
    let v = verifier(&ca.pem, Some("hooks.ns.svc"));
    let ip = ServerName::try_from("127.0.0.1").expect("name");
    let now = UnixTime::now();
    let der = CertificateDer::from(leaf.der.clone());
    assert!(v.verify_server_cert(&der, &[], &ip, &[], now).is_ok());
    let plain = verifier(&ca.pem, None);
    let refused = plain
        .verify_server_cert(&der, &[], &ip, &[], now)
        .unwrap_err();
    // The error carries crypto/tls' text, which a client error's chain exposes, even inside
    // io errors inside io errors (as a connector wraps a handshake's failure).
    let wrapped = std::io::Error::other(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        refused.clone(),
    ));
    assert_eq!(
        verification_error(&wrapped).as_deref(),
        verification_error(&refused).as_deref()
    );
    assert_eq!(
        verification_error(&refused).as_deref(),
        Some(
            "tls: failed to verify certificate: x509: cannot validate certificate for 127.0.0.1 \
             because it doesn't contain any IP SANs"
        )
    );
}
