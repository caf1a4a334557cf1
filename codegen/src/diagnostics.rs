//! Errors in definition files, reported all at once with `file:line:column`.

use std::fmt;

use crate::model::Loc;

/// One error in a definition file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    /// Where the error is.
    pub loc: Loc,
    /// What is wrong and what to write instead.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    /// Formats as `error: <message>\n  --> file:line:column`, like rustc.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "error: {}\n  --> {}", self.message, self.loc)
    }
}

/// Every error found in the definitions, in file and line order.
#[derive(Clone, Debug, Default, PartialEq, Eq, thiserror::Error)]
pub struct Diagnostics {
    /// The errors.
    pub errors: Vec<Diagnostic>,
}

impl Diagnostics {
    /// Records an error.
    pub fn push(&mut self, loc: Loc, message: impl Into<String>) {
        self.errors.push(Diagnostic {
            loc,
            message: message.into(),
        });
    }

    /// Whether no error was recorded.
    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    /// Sorts the errors by file, line and column and drops exact duplicates.
    pub fn sort(&mut self) {
        self.errors.sort_by(|a, b| {
            (
                a.loc.file.as_path(),
                a.loc.line,
                a.loc.column,
                a.message.as_str(),
            )
                .cmp(&(
                    b.loc.file.as_path(),
                    b.loc.line,
                    b.loc.column,
                    b.message.as_str(),
                ))
        });
        self.errors.dedup();
    }

    /// Returns `Ok(())` when empty, else `Err(self)`.
    pub fn into_result(mut self) -> Result<(), Diagnostics> {
        if self.is_empty() {
            Ok(())
        } else {
            self.sort();
            Err(self)
        }
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for e in &self.errors {
            writeln!(f, "{e}")?;
        }
        write!(f, "{} error(s) in api-defs", self.errors.len())
    }
}

/// Returns the candidate closest to `word` by edit distance, if it is close enough to be a
/// plausible typo.
pub fn did_you_mean<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (edit_distance(word, c), c))
        .filter(|(d, c)| *d <= 2.max(c.len() / 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// A suggestion suffix: `; did you mean `x`?` or nothing.
pub fn suggestion<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    match did_you_mean(word, candidates) {
        Some(c) => format!("; did you mean `{c}`?"),
        None => String::new(),
    }
}

/// Levenshtein distance between two strings.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_close_words() {
        assert_eq!(
            did_you_mean("valdiate", ["validate", "default", "json"]),
            Some("validate")
        );
        assert_eq!(did_you_mean("zzzz", ["validate", "default"]), None);
    }
}
