//! Go's `strconv` where Kubernetes' messages quote it: `ParseBool`, `ParseInt`, `ParseUint` and
//! `Quote`, with Go's error texts (`strconv.ParseInt: parsing "x": invalid syntax`).
//!
//! Kubernetes returns these texts verbatim in `Status` messages (a malformed `limit` query
//! parameter is a 400 whose message is the `ParseInt` error), so clients that match on them keep
//! working.

use std::fmt;
use std::num::IntErrorKind;

/// Why a Go `strconv` parse failed: `NumError.Err`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NumErrorKind {
    /// `strconv.ErrSyntax`: `invalid syntax`.
    Syntax,
    /// `strconv.ErrRange`: `value out of range`.
    Range,
}

/// Go's `strconv.NumError`; `Display` is its `Error()`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumError {
    /// The failing function, such as `ParseInt`.
    pub func: &'static str,
    /// The input.
    pub num: String,
    /// Why it failed.
    pub kind: NumErrorKind,
}

impl fmt::Display for NumError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let why = match self.kind {
            NumErrorKind::Syntax => "invalid syntax",
            NumErrorKind::Range => "value out of range",
        };
        write!(
            f,
            "strconv.{}: parsing {}: {why}",
            self.func,
            quote(&self.num)
        )
    }
}

impl std::error::Error for NumError {}

fn num_error(func: &'static str, s: &str, kind: NumErrorKind) -> NumError {
    NumError {
        func,
        num: s.to_string(),
        kind,
    }
}

/// Go's `strconv.ParseBool`: `1`, `t`, `T`, `TRUE`, `true`, `True` are true; `0`, `f`, `F`,
/// `FALSE`, `false`, `False` are false; anything else is a syntax error.
///
/// Query parameters of Kubernetes' options do not use this rule; see
/// [`crate::query::query_bool`].
pub fn parse_bool(s: &str) -> Result<bool, NumError> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(num_error("ParseBool", s, NumErrorKind::Syntax)),
    }
}

/// Go's `strconv.ParseInt(s, 10, bits)`: an optional sign and decimal digits, within the range
/// of a signed integer of `bits` bits (1 to 64).
pub fn parse_int(s: &str, bits: u32) -> Result<i64, NumError> {
    let bits = bits.clamp(1, 64);
    let value = s.parse::<i64>().map_err(|e| {
        let kind = match e.kind() {
            IntErrorKind::PosOverflow | IntErrorKind::NegOverflow => NumErrorKind::Range,
            _ => NumErrorKind::Syntax,
        };
        num_error("ParseInt", s, kind)
    })?;
    if bits < 64 {
        let max = (1i64 << (bits - 1)) - 1;
        let min = -(1i64 << (bits - 1));
        if value > max || value < min {
            return Err(num_error("ParseInt", s, NumErrorKind::Range));
        }
    }
    Ok(value)
}

/// Go's `strconv.ParseUint(s, 10, bits)`: decimal digits only (no sign), within the range of
/// an unsigned integer of `bits` bits (1 to 64).
pub fn parse_uint(s: &str, bits: u32) -> Result<u64, NumError> {
    let bits = bits.clamp(1, 64);
    if s.starts_with('+') {
        return Err(num_error("ParseUint", s, NumErrorKind::Syntax));
    }
    let value = s.parse::<u64>().map_err(|e| {
        let kind = match e.kind() {
            IntErrorKind::PosOverflow => NumErrorKind::Range,
            _ => NumErrorKind::Syntax,
        };
        num_error("ParseUint", s, kind)
    })?;
    if bits < 64 && value >> bits != 0 {
        return Err(num_error("ParseUint", s, NumErrorKind::Range));
    }
    Ok(value)
}

/// Whether Go's `unicode.IsPrint` (and `strconv.IsPrint`) holds for `c`: letters, marks,
/// numbers, punctuation, symbols and the ASCII space.
///
/// Without Unicode's category tables this treats as non-printable the control characters,
/// every space but U+0020, the format characters (category Cf), private-use characters and
/// noncharacters; unassigned code points, which Go also rejects, are accepted.
pub fn is_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    let u = c as u32;
    let format = matches!(
        u,
        0xAD | 0x600..=0x605
            | 0x61C
            | 0x6DD
            | 0x70F
            | 0x890..=0x891
            | 0x8E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
    );
    let private_use = matches!(u, 0xE000..=0xF8FF | 0xF0000..=0xFFFFD | 0x100000..=0x10FFFD);
    let noncharacter = matches!(u, 0xFDD0..=0xFDEF) || u & 0xFFFE == 0xFFFE;
    !(format || private_use || noncharacter)
}

/// Go's `strconv.Quote` (and `%q`): a double-quoted string with `"` and `\` escaped, `\a`, `\b`,
/// `\f`, `\n`, `\r`, `\t`, `\v` for those controls, `\xHH` for other ASCII controls and
/// `\uHHHH` / `\UHHHHHHHH` for other non-printable characters (see [`is_print`]).
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if is_print(c) => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

/// Go's `%#v` of a `[]string`: `[]string{"a", "b"}`, `[]string{}` when empty. Kubernetes shows
/// list-valued bad values (such as `dryRun`) this way in field errors.
pub fn go_string_slice(values: &[String]) -> String {
    let items: Vec<String> = values.iter().map(|v| quote(v)).collect();
    format!("[]string{{{}}}", items.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_bool_is_go_parse_bool() {
        for t in ["1", "t", "T", "TRUE", "true", "True"] {
            assert_eq!(parse_bool(t), Ok(true), "{t}");
        }
        for f in ["0", "f", "F", "FALSE", "false", "False"] {
            assert_eq!(parse_bool(f), Ok(false), "{f}");
        }
        for bad in ["", "yes", "tRUE", "FaLsE", " true", "2"] {
            assert!(parse_bool(bad).is_err(), "{bad:?}");
        }
        assert_eq!(
            parse_bool("yes").unwrap_err().to_string(),
            "strconv.ParseBool: parsing \"yes\": invalid syntax"
        );
    }

    #[test]
    fn parse_int_has_go_messages() {
        assert_eq!(parse_int("42", 64), Ok(42));
        assert_eq!(parse_int("+42", 64), Ok(42));
        assert_eq!(parse_int("-42", 64), Ok(-42));
        assert_eq!(parse_int("-9223372036854775808", 64), Ok(i64::MIN));
        assert_eq!(
            parse_int("abc", 64).unwrap_err().to_string(),
            "strconv.ParseInt: parsing \"abc\": invalid syntax"
        );
        assert_eq!(
            parse_int("", 64).unwrap_err().to_string(),
            "strconv.ParseInt: parsing \"\": invalid syntax"
        );
        for bad in ["-", "+", " 1", "1 ", "1_000", "0x10", "1.5"] {
            assert_eq!(
                parse_int(bad, 64).unwrap_err().kind,
                NumErrorKind::Syntax,
                "{bad:?}"
            );
        }
        assert_eq!(
            parse_int("9223372036854775808", 64)
                .unwrap_err()
                .to_string(),
            "strconv.ParseInt: parsing \"9223372036854775808\": value out of range"
        );
        assert_eq!(
            parse_int("-9223372036854775809", 64).unwrap_err().kind,
            NumErrorKind::Range
        );
        assert_eq!(parse_int("2147483647", 32), Ok(2_147_483_647));
        assert_eq!(
            parse_int("2147483648", 32).unwrap_err().kind,
            NumErrorKind::Range
        );
        assert_eq!(parse_int("-2147483648", 32), Ok(-2_147_483_648));
    }

    #[test]
    fn parse_uint_rejects_signs() {
        assert_eq!(parse_uint("7", 64), Ok(7));
        assert_eq!(
            parse_uint("+7", 64).unwrap_err().to_string(),
            "strconv.ParseUint: parsing \"+7\": invalid syntax"
        );
        assert_eq!(parse_uint("-7", 64).unwrap_err().kind, NumErrorKind::Syntax);
        assert_eq!(
            parse_uint("18446744073709551616", 64)
                .unwrap_err()
                .to_string(),
            "strconv.ParseUint: parsing \"18446744073709551616\": value out of range"
        );
        assert_eq!(parse_uint("256", 8).unwrap_err().kind, NumErrorKind::Range);
        assert_eq!(parse_uint("255", 8), Ok(255));
    }

    #[test]
    fn quote_matches_go() {
        assert_eq!(quote("abc"), "\"abc\"");
        assert_eq!(quote("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(
            quote("\u{7}\u{8}\u{c}\n\r\t\u{b}"),
            "\"\\a\\b\\f\\n\\r\\t\\v\""
        );
        assert_eq!(quote("\u{0}\u{1b}\u{7f}"), "\"\\x00\\x1b\\x7f\"");
        assert_eq!(quote("é日本"), "\"é日本\"");
        assert_eq!(quote("\u{85}\u{a0}\u{200b}"), "\"\\u0085\\u00a0\\u200b\"");
        assert_eq!(quote("\u{e0001}"), "\"\\U000e0001\"");
        assert_eq!(quote("\u{10ffff}"), "\"\\U0010ffff\"");
    }

    #[test]
    fn is_print_follows_go_for_common_classes() {
        for c in ['a', 'Z', '0', '-', '~', ' ', 'é', '日', '€', '😀'] {
            assert!(is_print(c), "{c:?}");
        }
        for c in [
            '\0', '\n', '\u{7f}', '\u{85}', '\u{a0}', '\u{2028}', '\u{feff}', '\u{e000}',
        ] {
            assert!(!is_print(c), "{c:?}");
        }
    }

    #[test]
    fn string_slices_render_as_go_syntax() {
        assert_eq!(go_string_slice(&[]), "[]string{}");
        assert_eq!(
            go_string_slice(&["All".to_string(), "x\ty".to_string()]),
            "[]string{\"All\", \"x\\ty\"}"
        );
    }
}
