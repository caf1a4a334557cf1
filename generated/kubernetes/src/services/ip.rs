//! IP addresses as Go's `net` package reads and classifies them.

use std::net::IpAddr;

use ::apimachinery::errors::FieldError;
use ::serde_json::Value;

/// An IP address as `netutils.ParseIPSloppy` reads it; an IPv4-mapped IPv6 address is its
/// IPv4 address, as Go's `net.IP` compares it.
pub fn parse_ip(text: &str) -> Option<IpAddr> {
    let ip: IpAddr = text.parse().ok()?;
    Some(ip.to_canonical())
}

/// Kubernetes' `ValidateEndpointIP` (and `ValidateNonSpecialIP`, its twin for external IPs):
/// an address endpoints may not have: unspecified, loopback, link-local or link-local
/// multicast.
pub fn validate_endpoint_ip(text: &str, path: &str) -> Vec<FieldError> {
    let value = Value::from(text);
    let Some(ip) = parse_ip(text) else {
        return vec![FieldError::invalid(
            path,
            &value,
            "must be a valid IP address",
        )];
    };
    let mut errors = Vec::new();
    if ip.is_unspecified() {
        errors.push(FieldError::invalid(
            path,
            &value,
            format!("may not be unspecified ({text})"),
        ));
    }
    if ip.is_loopback() {
        errors.push(FieldError::invalid(
            path,
            &value,
            "may not be in the loopback range (127.0.0.0/8, ::1/128)",
        ));
    }
    let (link_local, link_local_multicast) = match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            (
                o[0] == 169 && o[1] == 254,
                o[0] == 224 && o[1] == 0 && o[2] == 0,
            )
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            (s[0] & 0xffc0 == 0xfe80, s[0] & 0xff0f == 0xff02)
        }
    };
    if link_local {
        errors.push(FieldError::invalid(
            path,
            &value,
            "may not be in the link-local range (169.254.0.0/16, fe80::/10)",
        ));
    }
    if link_local_multicast {
        errors.push(FieldError::invalid(
            path,
            &value,
            "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
        ));
    }
    errors
}

/// Kubernetes' `IsValidIPForLegacyField` (without strict validation): the errors of a field
/// that must hold an IP address.
pub(crate) fn validate_ip(text: &str, path: &str) -> Vec<FieldError> {
    if parse_ip(text).is_some() {
        Vec::new()
    } else {
        vec![FieldError::invalid(
            path,
            &Value::from(text),
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        )]
    }
}
