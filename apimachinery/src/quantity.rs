//! Reading `resource.Quantity` values (`10`, `1k`, `500m`, `2Gi`, `1e3`) as Kubernetes does:
//! the grammar of `k8s.io/apimachinery/pkg/api/resource`, and [`Quantity::value`], the
//! integer value rounded up (Go's `Quantity.Value()`).

use crate::meta::Quantity;

/// Why a string is not a quantity.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    /// Not of the quantity grammar.
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    Format,
    /// Too large to hold.
    #[error("quantity is too large")]
    TooLarge,
}

/// A decimal multiplier: `10^exp10 * 2^exp2`.
struct Scale {
    exp10: i32,
    exp2: u32,
}

fn suffix_scale(suffix: &str) -> Result<Scale, QuantityError> {
    let (exp10, exp2) = match suffix {
        "" => (0, 0),
        "n" => (-9, 0),
        "u" => (-6, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        s if s.starts_with(['e', 'E']) => {
            let exp: i32 = s[1..].parse().map_err(|_| QuantityError::Format)?;
            (exp, 0)
        }
        _ => return Err(QuantityError::Format),
    };
    Ok(Scale { exp10, exp2 })
}

impl Quantity {
    /// The value rounded up to an integer (`500m` is 1, `1k` is 1000, `1Ki` is 1024).
    pub fn value(&self) -> Result<i64, QuantityError> {
        let s = self.0.trim();
        let (negative, rest) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(number_end);
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(QuantityError::Format);
        }
        let scale = suffix_scale(suffix)?;
        let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
        // The number as digits / 10^frac_len, all in i128.
        let mut digits: i128 = 0;
        for c in int_part.chars().chain(frac_part.chars()) {
            digits = digits
                .checked_mul(10)
                .and_then(|d| d.checked_add(i128::from(c as u8 - b'0')))
                .ok_or(QuantityError::TooLarge)?;
        }
        let exp10 =
            scale.exp10 - i32::try_from(frac_part.len()).map_err(|_| QuantityError::TooLarge)?;
        let mut numerator = digits
            .checked_mul(1i128 << scale.exp2)
            .ok_or(QuantityError::TooLarge)?;
        let mut denominator: i128 = 1;
        if exp10 >= 0 {
            for _ in 0..exp10 {
                numerator = numerator.checked_mul(10).ok_or(QuantityError::TooLarge)?;
            }
        } else {
            for _ in 0..(-exp10).min(38) {
                denominator *= 10;
            }
        }
        let magnitude = (numerator + denominator - 1) / denominator;
        let value = if negative {
            // Rounding up a negative value moves it towards zero.
            -(numerator / denominator)
        } else {
            magnitude
        };
        i64::try_from(value).map_err(|_| QuantityError::TooLarge)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Result<i64, QuantityError> {
        Quantity(s.to_string()).value()
    }

    #[test]
    fn values_round_up_as_go_does() {
        assert_eq!(v("10"), Ok(10));
        assert_eq!(v("1k"), Ok(1000));
        assert_eq!(v("1Ki"), Ok(1024));
        assert_eq!(v("500m"), Ok(1));
        assert_eq!(v("1.5"), Ok(2));
        assert_eq!(v("2Gi"), Ok(2 * 1024 * 1024 * 1024));
        assert_eq!(v("1e3"), Ok(1000));
        assert_eq!(v("0"), Ok(0));
        assert_eq!(v("-3"), Ok(-3));
        assert_eq!(v("+4"), Ok(4));
        assert_eq!(v("abc"), Err(QuantityError::Format));
        assert_eq!(v("1x"), Err(QuantityError::Format));
        assert_eq!(v(""), Err(QuantityError::Format));
        assert_eq!(v("1.2.3"), Err(QuantityError::Format));
    }
}
