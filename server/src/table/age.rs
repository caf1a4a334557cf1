//! Human-readable durations as kubectl prints ages (`duration.HumanDuration`).

use chrono::Duration;

/// Formats a duration like Kubernetes' `HumanDuration`: `45s`, `5m`, `5m30s`, `3h`, `3h20m`,
/// `2d`, `2d5h`, `45d`, `2y30d`, `5y`.
pub fn human_duration(d: Duration) -> String {
    let seconds = d.num_seconds();
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = minutes / 60;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{h}h", hours / 24)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{dy}d", hours / 24 / 365)
        };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_kubectl() {
        let cases = [
            (45, "45s"),
            (119, "119s"),
            (300, "5m"),
            (330, "5m30s"),
            (600, "10m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 1200, "3h20m"),
            (10 * 3600, "10h"),
            (2 * 86400, "2d"),
            (2 * 86400 + 5 * 3600, "2d5h"),
            (45 * 86400, "45d"),
            (3 * 365 * 86400, "3y"),
            (10 * 365 * 86400, "10y"),
        ];
        for (s, want) in cases {
            assert_eq!(human_duration(Duration::seconds(s)), want, "{s}");
        }
    }
}
