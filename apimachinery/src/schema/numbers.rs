//! kube-openapi's number checks (`numberValidator`): the range of the value and of the bounds
//! for the format, `multipleOf`, `minimum` and `maximum`, with Go's conversions (a bound is
//! truncated to an integer for an integer value) and Go's `%v` rendering of numbers.

use serde_json::{Number, Value};

use super::props::Props;
use super::value::Sink;
use crate::errors::FieldError;

/// Go's `int64(f)` on amd64: truncation, and the minimum `int64` for NaN and out-of-range
/// values.
pub(crate) fn go_f64_to_i64(f: f64) -> i64 {
    // 2^63: the first float no `int64` holds.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if f.is_nan() || !(-LIMIT..LIMIT).contains(&f) {
        i64::MIN
    } else {
        f as i64
    }
}

/// go-openapi's `IsFloat64AJSONInteger`: a finite float within 2^53 that is an integer up to
/// a relative error of 1e-9 (so `0.3 / 0.1` counts as 3).
pub(crate) fn is_json_integer(f: f64) -> bool {
    const MAX_JSON_FLOAT: f64 = 9_007_199_254_740_992.0;
    if !f.is_finite() || f.abs() > MAX_JSON_FLOAT {
        return false;
    }
    (f - f.round()).abs() <= 1e-9 * f.abs().max(1.0)
}

/// Go's `%v` of a `float64` (`strconv.FormatFloat(f, 'g', -1, 64)`): the shortest digits, in
/// exponent form when the decimal exponent is below -4 or at least 6 (`1e+06`, `123456`,
/// `1e-05`).
pub(crate) fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: `d.ddddde<exp>`.
    let e = format!("{f:e}");
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = mantissa
        .strip_prefix('-')
        .map_or(("", mantissa), |m| ("-", m));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if !(-4..6).contains(&exp) {
        return exponent_form(sign, &digits, exp);
    }
    if exp < 0 {
        let zeros = "0".repeat((-exp - 1) as usize);
        return format!("{sign}0.{zeros}{digits}");
    }
    let point = exp as usize + 1;
    if digits.len() <= point {
        format!("{sign}{digits}{}", "0".repeat(point - digits.len()))
    } else {
        format!("{sign}{}.{}", &digits[..point], &digits[point..])
    }
}

fn exponent_form(sign: &str, digits: &str, exp: i32) -> String {
    let (first, rest) = digits.split_at(1);
    let frac = if rest.is_empty() {
        String::new()
    } else {
        format!(".{rest}")
    };
    let esign = if exp < 0 { '-' } else { '+' };
    format!("{sign}{first}{frac}e{esign}{:02}", exp.abs())
}

/// Go's `strconv.FormatFloat(f, 'f', -1, 64)`: plain decimal digits, no exponent.
fn plain_float(f: f64) -> String {
    let s = format!("{f}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// Whether a number, written as kube-openapi writes it, fits the type and format
/// (`IsValueValidAgainstRange`): `true` when it does not.
fn out_of_range(text: &str, type_: &str, format: &str) -> bool {
    match (type_, format) {
        ("integer", "int32") => text.parse::<i32>().is_err(),
        ("integer", _) => text.parse::<i64>().is_err(),
        (_, "float") => text
            .parse::<f64>()
            .map_or(true, |f| f.is_finite() && f.abs() > f64::from(f32::MAX)),
        _ => false,
    }
}

fn range_message(prefix: &str, type_: &str, format: &str, name: &str) -> String {
    if format.is_empty() {
        format!("{prefix} value must be of type {type_} (default format) in {name}")
    } else {
        format!("{prefix} value must be of type {type_} with format {format} in {name}")
    }
}

/// The number checks of `s` on `n` at `name`.
pub(crate) fn check(s: &Props, name: &str, n: &Number, sink: &mut Sink<'_>) {
    // kube-openapi checks ranges for a single `integer` or `number` type.
    let (type_, format) = match (s.int_or_string, s.type_.as_str()) {
        (false, "integer") => (
            "integer",
            if s.format == "int32" || s.format == "int64" {
                s.format.as_str()
            } else {
                ""
            },
        ),
        (false, "number") => (
            "number",
            if s.format == "float" || s.format == "double" {
                s.format.as_str()
            } else {
                ""
            },
        ),
        _ => ("", ""),
    };
    let int = n.as_i64();
    let value = n.as_f64().unwrap_or(0.0);
    let text = int.map_or_else(|| plain_float(value), |i| i.to_string());
    if out_of_range(&text, type_, format) {
        sink.plain(range_message("Checked", type_, format, name));
    }
    let bound_ok = |b: f64, prefix: &str, sink: &mut Sink<'_>| {
        let bad = out_of_range(&plain_float(b), type_, format);
        if bad {
            sink.plain(range_message(prefix, type_, format, name));
        }
        !bad
    };
    let json = Value::Number(n.clone());
    if let Some(m) = s.multiple_of {
        let native = bound_ok(m, "MultipleOf", sink);
        let failed = match int {
            Some(i) if native => {
                let f = go_f64_to_i64(m);
                if f <= 0 {
                    Some(format!(
                        "factor MultipleOf declared for {name} must be positive: {f}"
                    ))
                } else {
                    (i.wrapping_div(f).wrapping_mul(f) != i)
                        .then(|| format!("{name} in body should be a multiple of {f}"))
                }
            }
            _ if m <= 0.0 => Some(format!(
                "factor MultipleOf declared for {name} must be positive: {}",
                go_float(m)
            )),
            _ => {
                let mult = if m < 1.0 { 1.0 / m * value } else { value / m };
                (!is_json_integer(mult))
                    .then(|| format!("{name} in body should be a multiple of {}", go_float(m)))
            }
        };
        if let Some(msg) = failed {
            sink.field(FieldError::invalid(name, &json, msg));
        }
    }
    for (bound, exclusive, is_min) in [
        (s.minimum, s.exclusive_minimum, true),
        (s.maximum, s.exclusive_maximum, false),
    ] {
        let Some(b) = bound else { continue };
        let prefix = if is_min {
            "Minimum boundary"
        } else {
            "Maximum boundary"
        };
        let native = bound_ok(b, prefix, sink);
        let (fails, shown) = match int {
            Some(i) if native => {
                let bi = go_f64_to_i64(b);
                let fails = match (is_min, exclusive) {
                    (true, false) => i < bi,
                    (true, true) => i <= bi,
                    (false, false) => i > bi,
                    (false, true) => i >= bi,
                };
                (fails, bi.to_string())
            }
            _ => {
                let fails = match (is_min, exclusive) {
                    (true, false) => value < b,
                    (true, true) => value <= b,
                    (false, false) => value > b,
                    (false, true) => value >= b,
                };
                (fails, go_float(b))
            }
        };
        if fails {
            sink.field(FieldError::invalid(
                name,
                &json,
                crate::markers::schema_bound_message(name, is_min, exclusive, &shown),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_print_as_go_prints_them() {
        for (f, s) in [
            (10.0, "10"),
            (2.5, "2.5"),
            (123456.0, "123456"),
            (1e6, "1e+06"),
            (1234567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-1.5, "-1.5"),
            (1e21, "1e+21"),
        ] {
            assert_eq!(go_float(f), s, "{f}");
        }
    }

    #[test]
    fn go_conversions_truncate() {
        assert_eq!(go_f64_to_i64(10.7), 10);
        assert_eq!(go_f64_to_i64(-10.7), -10);
        assert_eq!(go_f64_to_i64(1e19), i64::MIN);
    }
}
