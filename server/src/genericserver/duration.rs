//! Go-style durations on the command line (`60s`, `1m0s`, `1h30m`, `500ms`), as kube-apiserver's
//! duration flags accept them: Go's `time.ParseDuration` ([`apimachinery::duration`]), and not
//! negative (kube-apiserver rejects negative `--request-timeout` and
//! `--shutdown-delay-duration` with `can not be negative value`).

use std::time::Duration;

/// Why a duration flag could not be parsed: Go's message, such as
/// `time: invalid duration "x"`, or `can not be negative value`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DurationError(pub String);

/// Parses a non-negative Go duration string. A bare `0` is zero.
pub fn parse_duration(input: &str) -> Result<Duration, DurationError> {
    let nanos = apimachinery::duration::parse_go_duration(input)
        .map_err(|e| DurationError(e.to_string()))?;
    u64::try_from(nanos)
        .map(Duration::from_nanos)
        .map_err(|_| DurationError("can not be negative value".to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        assert_eq!(parse_duration("60s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1m0s"), Ok(Duration::from_secs(60)));
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert_eq!(parse_duration("-0s"), Ok(Duration::ZERO));
        assert_eq!(
            parse_duration("10").unwrap_err().to_string(),
            "time: missing unit in duration \"10\""
        );
        assert_eq!(
            parse_duration("-1s").unwrap_err().to_string(),
            "can not be negative value"
        );
        assert_eq!(
            parse_duration("5x").unwrap_err().to_string(),
            "time: unknown unit \"x\" in duration \"5x\""
        );
        assert_eq!(
            parse_duration(" 60s").unwrap_err().to_string(),
            "time: invalid duration \" 60s\""
        );
    }
}
