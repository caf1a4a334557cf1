//! Go's `time.Duration` text: [`parse_go_duration`] is `time.ParseDuration` (the `?timeout=`
//! query parameter, duration flags, `metav1.Duration` in protobuf) and [`format_go_duration`] is
//! `Duration.String`.

use std::fmt;

/// Why a duration did not parse; `Display` is Go's message, such as
/// `time: invalid duration "x"` or `time: missing unit in duration "10"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DurationError(String);

impl DurationError {
    /// Go's message.
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DurationError {}

const NANOSECOND: u64 = 1;
const MICROSECOND: u64 = 1_000 * NANOSECOND;
const MILLISECOND: u64 = 1_000 * MICROSECOND;
const SECOND: u64 = 1_000 * MILLISECOND;
const MINUTE: u64 = 60 * SECOND;
const HOUR: u64 = 60 * MINUTE;

/// The nanoseconds of a unit of `time.ParseDuration`.
fn unit(u: &str) -> Option<u64> {
    Some(match u {
        "ns" => NANOSECOND,
        // `us`, `µs` (U+00B5 micro sign) and `μs` (U+03BC Greek mu).
        "us" | "\u{b5}s" | "\u{3bc}s" => MICROSECOND,
        "ms" => MILLISECOND,
        "s" => SECOND,
        "m" => MINUTE,
        "h" => HOUR,
        _ => return None,
    })
}

/// The time package's `quote`: double quotes, `"` and `\` escaped, and every byte of a
/// non-ASCII or control character written as `\xHH`.
fn time_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        if !c.is_ascii() || c < ' ' {
            let mut buf = [0u8; 4];
            for b in c.encode_utf8(&mut buf).bytes() {
                out.push_str(&format!("\\x{b:02x}"));
            }
        } else {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
    }
    out.push('"');
    out
}

/// Consumes leading decimal digits as Go's `leadingInt`: `None` when the value exceeds 2^63.
fn leading_int(s: &str) -> Option<(u64, &str)> {
    let mut x: u64 = 0;
    let mut i = 0;
    for &c in s.as_bytes() {
        if !c.is_ascii_digit() {
            break;
        }
        if x > (1 << 63) / 10 {
            return None;
        }
        x = x * 10 + u64::from(c - b'0');
        if x > 1 << 63 {
            return None;
        }
        i += 1;
    }
    Some((x, &s[i..]))
}

/// Consumes leading decimal digits of a fraction as Go's `leadingFraction`: the digits that
/// fit, and the power of ten they are scaled by; digits past the precision are skipped.
fn leading_fraction(s: &str) -> (u64, f64, &str) {
    let mut x: u64 = 0;
    let mut scale = 1f64;
    let mut overflow = false;
    let mut i = 0;
    for &c in s.as_bytes() {
        if !c.is_ascii_digit() {
            break;
        }
        i += 1;
        if overflow {
            continue;
        }
        if x > ((1u64 << 63) - 1) / 10 {
            overflow = true;
            continue;
        }
        let y = x * 10 + u64::from(c - b'0');
        if y > 1 << 63 {
            overflow = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, &s[i..])
}

/// Go's `time.ParseDuration`: a possibly signed sequence of decimal numbers, each with an
/// optional fraction and a unit (`ns`, `us`/`µs`, `ms`, `s`, `m`, `h`), such as `300ms`,
/// `-1.5h` or `2h45m`; a bare `0` is zero. Returns nanoseconds, or Go's error message.
pub fn parse_go_duration(input: &str) -> Result<i64, DurationError> {
    let invalid = || DurationError(format!("time: invalid duration {}", time_quote(input)));
    let mut s = input;
    let mut neg = false;
    if let Some(c) = s.bytes().next()
        && (c == b'-' || c == b'+')
    {
        neg = c == b'-';
        s = &s[1..];
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(invalid());
    }
    let mut d: u64 = 0;
    while !s.is_empty() {
        let first = s.as_bytes()[0];
        if !(first == b'.' || first.is_ascii_digit()) {
            return Err(invalid());
        }
        let before = s.len();
        let (mut v, rest) = leading_int(s).ok_or_else(invalid)?;
        s = rest;
        let pre = before != s.len();
        let (mut f, mut scale, mut post) = (0u64, 1f64, false);
        if let Some(rest) = s.strip_prefix('.') {
            let before = rest.len();
            let (x, sc, rest) = leading_fraction(rest);
            (f, scale, post) = (x, sc, before != rest.len());
            s = rest;
        }
        if !pre && !post {
            return Err(invalid());
        }
        let unit_len = s
            .bytes()
            .position(|c| c == b'.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        if unit_len == 0 {
            return Err(DurationError(format!(
                "time: missing unit in duration {}",
                time_quote(input)
            )));
        }
        let u = &s[..unit_len];
        s = &s[unit_len..];
        let Some(unit) = unit(u) else {
            return Err(DurationError(format!(
                "time: unknown unit {} in duration {}",
                time_quote(u),
                time_quote(input)
            )));
        };
        if v > (1 << 63) / unit {
            return Err(invalid());
        }
        v *= unit;
        if f > 0 {
            // As Go: a float64 is nanosecond-accurate for fractions of an hour.
            v += (f as f64 * (unit as f64 / scale)) as u64;
            if v > 1 << 63 {
                return Err(invalid());
            }
        }
        d += v;
        if d > 1 << 63 {
            return Err(invalid());
        }
    }
    if neg {
        // 2^63 is allowed here: it is i64::MIN.
        return Ok((d as i64).wrapping_neg());
    }
    if d > i64::MAX as u64 {
        return Err(invalid());
    }
    Ok(d as i64)
}

/// Formats nanoseconds as Go's `time.Duration.String` does (`1h0m0s`, `1.5s`, `300ms`, `0s`).
pub fn format_go_duration(nanos: i64) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    if n < SECOND {
        let (unit, scale) = if n < MICROSECOND {
            return format!("{sign}{n}ns");
        } else if n < MILLISECOND {
            ("\u{b5}s", MICROSECOND)
        } else {
            ("ms", MILLISECOND)
        };
        return format!("{sign}{}{unit}", fraction(n, scale));
    }
    let hours = n / HOUR;
    let minutes = (n / MINUTE) % 60;
    let seconds = fraction(n % MINUTE, SECOND);
    if hours > 0 {
        format!("{sign}{hours}h{minutes}m{seconds}s")
    } else if minutes > 0 {
        format!("{sign}{minutes}m{seconds}s")
    } else {
        format!("{sign}{seconds}s")
    }
}

/// `value / scale` with the fraction's trailing zeros removed (`1500, 1000` → `1.5`).
fn fraction(value: u64, scale: u64) -> String {
    let whole = value / scale;
    let frac = value % scale;
    if frac == 0 {
        return whole.to_string();
    }
    let digits = scale.to_string().len() - 1;
    let text = format!("{frac:0digits$}");
    format!("{whole}.{}", text.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(s: &str) -> String {
        parse_go_duration(s).unwrap_err().to_string()
    }

    #[test]
    fn parses_what_go_parses() {
        let cases: [(&str, i64); 24] = [
            ("0", 0),
            ("+0", 0),
            ("-0", 0),
            ("5s", 5 * SECOND as i64),
            ("30s", 30 * SECOND as i64),
            ("1478s", 1478 * SECOND as i64),
            ("-5s", -5 * SECOND as i64),
            ("+5s", 5 * SECOND as i64),
            ("-0s", 0),
            ("5.0s", 5 * SECOND as i64),
            ("5.6s", 5 * SECOND as i64 + 600 * MILLISECOND as i64),
            ("5.s", 5 * SECOND as i64),
            (".5s", 500 * MILLISECOND as i64),
            ("1.004s", SECOND as i64 + 4 * MILLISECOND as i64),
            ("100.00100s", 100 * SECOND as i64 + MILLISECOND as i64),
            ("10ns", 10),
            ("11us", 11_000),
            ("12\u{b5}s", 12_000),
            ("12\u{3bc}s", 12_000),
            ("13ms", 13_000_000),
            ("3h30m", (3 * HOUR + 30 * MINUTE) as i64),
            (
                "10.5s4m",
                (4 * MINUTE + 10 * SECOND + 500 * MILLISECOND) as i64,
            ),
            (
                "-2m3.4s",
                -((2 * MINUTE + 3 * SECOND + 400 * MILLISECOND) as i64),
            ),
            (
                "1h2m3s4ms5us6ns",
                (HOUR + 2 * MINUTE + 3 * SECOND + 4 * MILLISECOND + 5 * MICROSECOND + 6) as i64,
            ),
        ];
        for (s, want) in cases {
            assert_eq!(parse_go_duration(s), Ok(want), "{s}");
        }
        assert_eq!(
            parse_go_duration("0.3333333333333333333h"),
            Ok(20 * MINUTE as i64)
        );
        assert_eq!(parse_go_duration("9223372036854775807ns"), Ok(i64::MAX));
        assert_eq!(parse_go_duration("-9223372036854775808ns"), Ok(i64::MIN));
        assert_eq!(parse_go_duration("9223372036.854775807s"), Ok(i64::MAX));
        assert_eq!(
            parse_go_duration("0.100000000000000000000h"),
            Ok(6 * MINUTE as i64)
        );
    }

    #[test]
    fn rejects_with_go_messages() {
        assert_eq!(err(""), "time: invalid duration \"\"");
        assert_eq!(err("3"), "time: missing unit in duration \"3\"");
        assert_eq!(err("-"), "time: invalid duration \"-\"");
        assert_eq!(err("s"), "time: invalid duration \"s\"");
        assert_eq!(err("."), "time: invalid duration \".\"");
        assert_eq!(err("-."), "time: invalid duration \"-.\"");
        assert_eq!(err(".s"), "time: invalid duration \".s\"");
        assert_eq!(err("+.s"), "time: invalid duration \"+.s\"");
        assert_eq!(err("1d"), "time: unknown unit \"d\" in duration \"1d\"");
        assert_eq!(err("1s2"), "time: missing unit in duration \"1s2\"");
        assert_eq!(err(" 1s"), "time: invalid duration \" 1s\"");
        assert_eq!(err("3000000h"), "time: invalid duration \"3000000h\"");
        assert_eq!(
            err("9223372036854775808ns"),
            "time: invalid duration \"9223372036854775808ns\""
        );
        assert_eq!(
            err("9223372036854775.808us"),
            "time: invalid duration \"9223372036854775.808us\""
        );
        assert_eq!(
            err("1\u{e9}s"),
            "time: unknown unit \"\\xc3\\xa9s\" in duration \"1\\xc3\\xa9s\""
        );
        assert_eq!(err("\"1s"), "time: invalid duration \"\\\"1s\"");
    }

    #[test]
    fn formats_as_go() {
        let cases: [(i64, &str); 12] = [
            (0, "0s"),
            (1, "1ns"),
            (1100, "1.1\u{b5}s"),
            (2_200_000, "2.2ms"),
            (3_300_000_000, "3.3s"),
            (4 * MINUTE as i64 + 5 * SECOND as i64, "4m5s"),
            (4 * MINUTE as i64 + 5_001_000_000, "4m5.001s"),
            ((5 * HOUR + 6 * MINUTE) as i64 + 7_001_000_000, "5h6m7.001s"),
            (8 * MINUTE as i64 + 1, "8m0.000000001s"),
            (HOUR as i64, "1h0m0s"),
            (-1_500_000_000, "-1.5s"),
            (i64::MIN, "-2562047h47m16.854775808s"),
        ];
        for (n, want) in cases {
            assert_eq!(format_go_duration(n), want, "{n}");
            assert_eq!(parse_go_duration(want), Ok(n), "{want}");
        }
        assert_eq!(format_go_duration(i64::MAX), "2562047h47m16.854775807s");
    }
}
