//! `--runtime-config`: which group versions are served.

/// Enablement of group versions: explicit `group/version` entries win over `api/ga|beta|alpha`,
/// which win over `api/all`; everything is enabled by default.
#[derive(Clone, Debug, Default)]
pub struct RuntimeConfig {
    entries: Vec<(String, bool)>,
}

impl RuntimeConfig {
    /// Builds from parsed entries (`api/v1`, `example.dev/v1`, `api/all`, `api/beta`, ...).
    pub fn new(entries: Vec<(String, bool)>) -> Self {
        Self { entries }
    }

    fn lookup(&self, key: &str) -> Option<bool> {
        self.entries
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| *v)
    }

    /// Whether `group/version` is served.
    pub fn enabled(&self, group: &str, version: &str) -> bool {
        if self.entries.is_empty() {
            return true;
        }
        // The entry `group/version` (`api/version` for the core group).
        let prefix = if group.is_empty() { "api" } else { group };
        let explicit = self
            .entries
            .iter()
            .rev()
            .find(|(k, _)| k.split_once('/') == Some((prefix, version)))
            .map(|(_, v)| *v);
        if let Some(v) = explicit {
            return v;
        }
        let level = if version.contains("alpha") {
            "api/alpha"
        } else if version.contains("beta") {
            "api/beta"
        } else {
            "api/ga"
        };
        self.lookup(level)
            .or_else(|| self.lookup("api/all"))
            .unwrap_or(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precedence() {
        let rc = RuntimeConfig::new(vec![
            ("api/all".into(), false),
            ("example.dev/v1".into(), true),
        ]);
        assert!(rc.enabled("example.dev", "v1"));
        assert!(!rc.enabled("example.dev", "v1alpha1"));
        assert!(!rc.enabled("", "v1"));
        assert!(RuntimeConfig::default().enabled("", "v1"));
        let rc = RuntimeConfig::new(vec![("api/v1".into(), false), ("api/beta".into(), false)]);
        assert!(!rc.enabled("", "v1"));
        assert!(rc.enabled("apps", "v1"));
        assert!(!rc.enabled("apps", "v1beta1"));
    }
}
