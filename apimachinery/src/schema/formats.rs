//! The string formats a CRD schema may name (kube-apiserver's supported set at compatibility
//! version 1.34 and later), each checked as kube-openapi's `strfmt` registry checks it.
//! Format names are compared with `-` removed (`date-time` is `datetime`).

use std::net::{Ipv4Addr, Ipv6Addr};
use std::sync::OnceLock;

use regex::Regex;

/// The formats kube-apiserver validates, with `-` removed.
const SUPPORTED: [&str; 26] = [
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    "k8sshortname",
    "k8slongname",
];

/// The name kube-apiserver validates string format `format` under (`date-time` is
/// `datetime`), if it validates it at all (others are ignored).
pub(crate) fn string_format(format: &str) -> Option<&'static str> {
    if format.is_empty() {
        return None;
    }
    SUPPORTED
        .into_iter()
        .find(|name| format.chars().filter(|c| *c != '-').eq(name.chars()))
}

/// Whether kube-apiserver validates string format `format`.
pub(crate) fn supported(format: &str) -> bool {
    string_format(format).is_some()
}

fn regex(cell: &'static OnceLock<Regex>, pattern: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(pattern).unwrap_or_else(|_| unreachable_pattern()))
}

/// A fixed pattern of this module that does not compile: caught by the tests.
fn unreachable_pattern() -> Regex {
    Regex::new("$^").expect("an empty-match pattern compiles")
}

macro_rules! fixed {
    ($name:ident, $pattern:expr) => {
        fn $name() -> &'static Regex {
            static CELL: OnceLock<Regex> = OnceLock::new();
            regex(&CELL, $pattern)
        }
    };
}

fixed!(
    hostname_re,
    r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$"
);
fixed!(
    uuid_re,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"
);
fixed!(
    uuid3_re,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$"
);
fixed!(
    uuid4_re,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
);
fixed!(
    uuid5_re,
    r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$"
);
fixed!(
    credit_card_re,
    r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|(222[1-9]|22[3-9][0-9]|2[3-6][0-9]{2}|27[01][0-9]|2720)[0-9]{12}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11}|6[27][0-9]{14})$"
);
fixed!(ssn_re, r"^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$");
fixed!(hex_color_re, r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$");
fixed!(
    rgb_color_re,
    r"^rgb\(\s*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])\s*,\s*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])\s*,\s*(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])\s*\)$"
);
fixed!(
    base64_re,
    r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$"
);
fixed!(
    time_re,
    r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$"
);
fixed!(short_name_re, r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$");
fixed!(
    long_name_re,
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
);
fixed!(duration_part_re, r"(([0-9]+)\s*([A-Za-zµ]+))");

/// Whether `s` is a valid value of the supported format named `key` (see [`string_format`]).
pub(crate) fn valid(key: &str, s: &str) -> bool {
    match key {
        "bsonobjectid" => s.len() == 24 && s.bytes().all(|b| b.is_ascii_hexdigit()),
        "uri" => is_request_uri(s),
        "email" => is_email(s),
        "hostname" => {
            hostname_re().is_match(s) && s.len() <= 255 && s.split('.').all(|p| p.len() <= 63)
        }
        "ipv4" => parse_ip_sloppy(s).is_some() && s.contains('.'),
        "ipv6" => s.parse::<Ipv6Addr>().is_ok() && s.contains(':'),
        "cidr" => is_cidr(s),
        "mac" => is_mac(s),
        "uuid" => uuid_re().is_match(s),
        "uuid3" => uuid3_re().is_match(s),
        "uuid4" => uuid4_re().is_match(s),
        "uuid5" => uuid5_re().is_match(s),
        "isbn" => is_isbn10(s) || is_isbn13(s),
        "isbn10" => is_isbn10(s),
        "isbn13" => is_isbn13(s),
        "creditcard" => is_credit_card(s),
        "ssn" => s.len() == 11 && ssn_re().is_match(s),
        "hexcolor" => hex_color_re().is_match(s),
        "rgbcolor" => rgb_color_re().is_match(s),
        "byte" => base64_re().is_match(s),
        "date" => is_date(s),
        "duration" => is_duration(s),
        "datetime" => is_date_time(s),
        "k8sshortname" => s.len() <= 63 && short_name_re().is_match(s),
        "k8slongname" => s.len() <= 253 && long_name_re().is_match(s),
        _ => true,
    }
}

/// Go's `net/url.ParseRequestURI` acceptance: an absolute URI (`scheme:…`) or an absolute
/// path, without spaces or control characters.
fn is_request_uri(s: &str) -> bool {
    if s.is_empty() || s.chars().any(|c| c.is_control() || c == ' ') {
        return false;
    }
    if s.starts_with('/') {
        return true;
    }
    let Some((scheme, _)) = s.split_once(':') else {
        return false;
    };
    let mut b = scheme.bytes();
    b.next().is_some_and(|c| c.is_ascii_alphabetic())
        && b.all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
}

/// `net/mail.ParseAddress` in its common forms: `local@domain` or `Name <local@domain>`.
fn is_email(s: &str) -> bool {
    let addr = match (s.find('<'), s.strip_suffix('>')) {
        (Some(i), Some(inner)) => &inner[i + 1..],
        _ => s.trim(),
    };
    let Some((local, domain)) = addr.rsplit_once('@') else {
        return false;
    };
    let ok = |p: &str| {
        !p.is_empty()
            && !p
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || "<>()[],;:\"".contains(c))
    };
    ok(local) && ok(domain) && !domain.starts_with('.') && !domain.ends_with('.')
}

/// `netutils.ParseIPSloppy`: IPv4 with leading zeros allowed, or IPv6.
fn parse_ip_sloppy(s: &str) -> Option<()> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() == 4
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.len() <= 3
                && p.bytes().all(|b| b.is_ascii_digit())
                && p.parse::<u16>().is_ok_and(|n| n <= 255)
        })
    {
        return Some(());
    }
    if s.parse::<Ipv4Addr>().is_ok() || s.parse::<Ipv6Addr>().is_ok() {
        return Some(());
    }
    None
}

fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    if bits.is_empty() || !bits.bytes().all(|b| b.is_ascii_digit()) {
        return false;
    }
    let Ok(bits) = bits.parse::<u8>() else {
        return false;
    };
    if ip.contains(':') {
        ip.parse::<Ipv6Addr>().is_ok() && bits <= 128
    } else {
        parse_ip_sloppy(ip).is_some() && bits <= 32
    }
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets as `xx:xx:…`, `xx-xx-…` or `xxxx.xxxx.…`.
fn is_mac(s: &str) -> bool {
    let hex = |p: &str, n: usize| p.len() == n && p.bytes().all(|b| b.is_ascii_hexdigit());
    let groups = |sep: char, width: usize| {
        let parts: Vec<&str> = s.split(sep).collect();
        let octets = parts.len() * width / 2;
        parts.len() > 1 && [6, 8, 20].contains(&octets) && parts.iter().all(|p| hex(p, width))
    };
    groups(':', 2) || groups('-', 2) || groups('.', 4)
}

fn isbn_digits(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_whitespace() && *c != '-')
        .collect()
}

fn is_isbn10(s: &str) -> bool {
    let d = isbn_digits(s);
    let b = d.as_bytes();
    if b.len() != 10
        || !b[..9].iter().all(u8::is_ascii_digit)
        || !(b[9].is_ascii_digit() || b[9] == b'X')
    {
        return false;
    }
    let sum: u32 = b
        .iter()
        .enumerate()
        .map(|(i, c)| (i as u32 + 1) * if *c == b'X' { 10 } else { u32::from(c - b'0') })
        .sum();
    sum.is_multiple_of(11)
}

fn is_isbn13(s: &str) -> bool {
    let d = isbn_digits(s);
    let b = d.as_bytes();
    if b.len() != 13 || !b.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let sum: u32 = b[..12]
        .iter()
        .enumerate()
        .map(|(i, c)| u32::from(c - b'0') * if i % 2 == 0 { 1 } else { 3 })
        .sum();
    (10 - sum % 10) % 10 == u32::from(b[12] - b'0')
}

/// govalidator's `IsCreditCard`: the digits match a card pattern and pass the Luhn check.
fn is_credit_card(s: &str) -> bool {
    let digits: String = s.chars().filter(char::is_ascii_digit).collect();
    if !credit_card_re().is_match(&digits) {
        return false;
    }
    let sum: u32 = digits
        .bytes()
        .rev()
        .enumerate()
        .map(|(i, c)| {
            let d = u32::from(c - b'0');
            if i % 2 == 1 {
                let x = d * 2;
                if x > 9 { x - 9 } else { x }
            } else {
                d
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

/// `time.Parse("2006-01-02", s)`.
fn is_date(s: &str) -> bool {
    s.len() == 10
        && chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok()
        && s.as_bytes()[4] == b'-'
}

/// strfmt's `IsDateTime`: a date, `t`, and a time matched loosely (hours up to 23, minutes
/// and seconds up to 59 compared as text).
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    time_re().captures(parts[1]).is_some_and(|m| {
        m.get(1).is_some_and(|h| h.as_str() <= "23")
            && m.get(2).is_some_and(|x| x.as_str() <= "59")
            && m.get(3).is_some_and(|x| x.as_str() <= "59")
    })
}

/// strfmt's `ParseDuration`: Go's `time.ParseDuration`, or numbers with unit words
/// (`3 days`, `2h`).
fn is_duration(s: &str) -> bool {
    if crate::duration::parse_go_duration(s).is_ok() {
        return true;
    }
    const UNITS: [&[&str]; 8] = [
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    duration_part_re().captures_iter(s).any(|m| {
        let digits_ok = m.get(2).is_some_and(|d| d.as_str().parse::<i64>().is_ok());
        let unit = m
            .get(3)
            .map_or(String::new(), |u| u.as_str().trim().to_lowercase());
        digits_ok
            && UNITS.iter().any(|variants| {
                let last = variants.len() - 1;
                variants.iter().enumerate().any(|(i, v)| {
                    (i == last && unit.starts_with(v)) || v.eq_ignore_ascii_case(&unit)
                })
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fixed_pattern_compiles() {
        for p in [
            hostname_re(),
            uuid_re(),
            uuid3_re(),
            uuid4_re(),
            uuid5_re(),
            credit_card_re(),
            ssn_re(),
            hex_color_re(),
            rgb_color_re(),
            base64_re(),
            time_re(),
            short_name_re(),
            long_name_re(),
            duration_part_re(),
        ] {
            assert_ne!(p.as_str(), "$^");
        }
    }

    #[test]
    fn formats_accept_and_refuse_as_strfmt_does() {
        let cases = [
            ("date-time", "2024-05-01T10:00:00Z", true),
            ("date-time", "2024-05-01T10:00:00.5+02:00", true),
            ("date-time", "2024-05-01 10:00:00", false),
            ("date", "2024-05-01", true),
            ("date", "2024-5-1", false),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "010.0.0.1", true),
            ("ipv4", "::1", false),
            ("ipv6", "::1", true),
            ("cidr", "10.0.0.0/8", true),
            ("cidr", "10.0.0.0/33", false),
            ("mac", "00:1a:2b:3c:4d:5e", true),
            ("mac", "001a.2b3c.4d5e", true),
            ("mac", "00:1a", false),
            ("uuid", "123E4567-E89B-12D3-A456-426614174000", true),
            ("uuid4", "123e4567-e89b-42d3-a456-426614174000", true),
            ("uuid4", "123e4567-e89b-12d3-a456-426614174000", false),
            ("byte", "aGVsbG8=", true),
            ("byte", "not base64!", false),
            ("hostname", "example.com", true),
            ("hostname", "-bad.com", false),
            ("email", "a@example.com", true),
            ("email", "nope", false),
            ("uri", "https://example.com/x", true),
            ("uri", "example.com", false),
            ("isbn10", "0321751043", true),
            ("isbn13", "978-0321751041", true),
            ("creditcard", "4111 1111 1111 1111", true),
            ("creditcard", "4111 1111 1111 1112", false),
            ("ssn", "123-45-6789", true),
            ("hexcolor", "#ffF", true),
            ("rgbcolor", "rgb(255, 0, 10)", true),
            ("duration", "1h30m", true),
            ("duration", "3 days", true),
            ("duration", "soon", false),
            ("bsonobjectid", "507f1f77bcf86cd799439011", true),
            ("k8s-short-name", "my-name", true),
            ("k8s-short-name", "My-name", false),
            ("k8s-long-name", "a.b-c.d", true),
            ("password", "anything", true),
        ];
        for (format, value, ok) in cases {
            let key = string_format(format).unwrap_or_else(|| panic!("{format}"));
            assert_eq!(valid(key, value), ok, "{format} {value}");
        }
        assert!(!supported("int32"));
        assert!(!supported("dns1123-label"));
    }
}
