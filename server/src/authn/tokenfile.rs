//! Static tokens (`--token-auth-file`): a CSV file of `token,user,uid[,"group1,group2"]` lines,
//! read as kube-apiserver's `tokenfile` package reads it (Go's `encoding/csv`: quoted fields,
//! `""` inside quotes, blank lines skipped, no comments; at least three columns; an empty token
//! is skipped and a repeated one replaces the earlier line).

use std::collections::HashMap;
use std::path::Path;

use apimachinery::authentication::{TokenAuthenticator, TokenOutcome, Validity};

use super::UserInfo;
use super::bearer::intersect;

/// Why a token file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    /// The file could not be read.
    #[error("token file '{path}': {source}")]
    Io {
        /// The file.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A CSV syntax error.
    #[error("token file '{path}': parse error on line {line}, column {column}: {what}")]
    Syntax {
        /// The file.
        path: String,
        /// The line (1-based).
        line: usize,
        /// The column (1-based, in bytes).
        column: usize,
        /// What is wrong.
        what: &'static str,
    },
    /// A record has fewer than three columns.
    #[error(
        "token file '{path}' must have at least 3 columns (token, user name, user uid), found {found} (line {line})"
    )]
    Columns {
        /// The file.
        path: String,
        /// The line the record starts on.
        line: usize,
        /// The number of columns found.
        found: usize,
    },
}

/// One CSV record and the line it starts on.
#[derive(Debug, PartialEq, Eq)]
pub struct Record {
    /// The line (1-based).
    pub line: usize,
    /// The fields.
    pub fields: Vec<String>,
}

/// A CSV syntax error: line, column, what.
type SyntaxError = (usize, usize, &'static str);

/// Splits CSV text into records as Go's `encoding/csv` reader does with its defaults (comma
/// separator, no comment character, strict quotes, any number of fields per record).
pub fn parse_csv(text: &str) -> Result<Vec<Record>, SyntaxError> {
    const BARE_QUOTE: &str = "bare \" in non-quoted-field";
    const QUOTE: &str = "extraneous or missing \" in quoted-field";
    let text = text.replace("\r\n", "\n");
    let bytes = text.as_bytes();
    let mut records = Vec::new();
    let mut i = 0;
    let mut line = 1;
    while i < bytes.len() {
        if bytes[i] == b'\n' {
            // An empty line is no record.
            i += 1;
            line += 1;
            continue;
        }
        let start_line = line;
        let mut line_start = i;
        let mut fields = Vec::new();
        loop {
            let mut field = Vec::new();
            if bytes.get(i) == Some(&b'"') {
                i += 1;
                loop {
                    match bytes.get(i) {
                        None => return Err((line, i - line_start + 1, QUOTE)),
                        Some(b'"') if bytes.get(i + 1) == Some(&b'"') => {
                            field.push(b'"');
                            i += 2;
                        }
                        Some(b'"') => {
                            i += 1;
                            match bytes.get(i) {
                                None | Some(b',') | Some(b'\n') => break,
                                Some(_) => return Err((line, i - line_start + 1, QUOTE)),
                            }
                        }
                        Some(b'\n') => {
                            field.push(b'\n');
                            i += 1;
                            line += 1;
                            line_start = i;
                        }
                        Some(&b) => {
                            field.push(b);
                            i += 1;
                        }
                    }
                }
            } else {
                while let Some(&b) = bytes.get(i) {
                    match b {
                        b',' | b'\n' => break,
                        b'"' => return Err((line, i - line_start + 1, BARE_QUOTE)),
                        _ => {
                            field.push(b);
                            i += 1;
                        }
                    }
                }
            }
            fields.push(String::from_utf8_lossy(&field).into_owned());
            match bytes.get(i) {
                Some(b',') => i += 1,
                Some(b'\n') => {
                    i += 1;
                    line += 1;
                    break;
                }
                _ => break,
            }
        }
        records.push(Record {
            line: start_line,
            fields,
        });
    }
    Ok(records)
}

/// Authenticates the tokens of a token file. The tokens are valid for the API server's own
/// audiences only (Kubernetes wraps them as audience-agnostic).
#[derive(Debug, Default)]
pub struct TokenFileAuthenticator {
    tokens: HashMap<String, UserInfo>,
    api_audiences: Vec<String>,
}

impl TokenFileAuthenticator {
    /// Reads `path`; `api_audiences` are the audiences its tokens are valid for.
    pub fn from_file(path: &Path, api_audiences: Vec<String>) -> Result<Self, TokenFileError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| TokenFileError::Io {
            path: shown.clone(),
            source,
        })?;
        Self::from_csv(&shown, &text, api_audiences)
    }

    /// Reads the CSV text of the file named `path`.
    pub fn from_csv(
        path: &str,
        text: &str,
        api_audiences: Vec<String>,
    ) -> Result<Self, TokenFileError> {
        let records = parse_csv(text).map_err(|(line, column, what)| TokenFileError::Syntax {
            path: path.to_string(),
            line,
            column,
            what,
        })?;
        let mut tokens = HashMap::new();
        for (number, record) in records.into_iter().enumerate() {
            let mut fields = record.fields.into_iter();
            let (Some(token), Some(name), Some(uid)) =
                (fields.next(), fields.next(), fields.next())
            else {
                return Err(TokenFileError::Columns {
                    path: path.to_string(),
                    line: record.line,
                    found: number_of_fields(text, record.line),
                });
            };
            if token.is_empty() {
                tracing::warn!(path, record = number + 1, "empty token in the token file");
                continue;
            }
            let groups = fields
                .next()
                .map(|g| g.split(',').map(str::to_string).collect())
                .unwrap_or_default();
            let user = UserInfo {
                name,
                uid,
                groups,
                ..UserInfo::default()
            };
            if tokens.insert(token, user).is_some() {
                tracing::warn!(
                    path,
                    record = number + 1,
                    "duplicate token in the token file"
                );
            }
        }
        Ok(Self {
            tokens,
            api_audiences,
        })
    }

    /// How many tokens the file holds.
    pub fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Whether the file holds no token.
    pub fn is_empty(&self) -> bool {
        self.tokens.is_empty()
    }
}

/// The number of fields of the record starting on `line` (for the error message).
fn number_of_fields(text: &str, line: usize) -> usize {
    parse_csv(text)
        .ok()
        .and_then(|records| records.into_iter().find(|r| r.line == line))
        .map_or(0, |r| r.fields.len())
}

#[async_trait::async_trait]
impl TokenAuthenticator for TokenFileAuthenticator {
    async fn authenticate_token(&self, token: &str, audiences: &[String]) -> TokenOutcome {
        let audiences = if audiences.is_empty() {
            self.api_audiences.clone()
        } else {
            let shared = intersect(audiences, &self.api_audiences);
            if shared.is_empty() {
                return TokenOutcome::Unrecognized;
            }
            shared
        };
        match self.tokens.get(token) {
            // The file is read once: a verdict holds as long as the server runs.
            Some(user) => TokenOutcome::Authenticated {
                user: user.clone(),
                audiences,
                valid: Validity::default(),
            },
            None => TokenOutcome::Unrecognized,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(text: &str) -> Vec<Vec<String>> {
        parse_csv(text)
            .unwrap_or_else(|e| panic!("{e:?}"))
            .into_iter()
            .map(|r| r.fields)
            .collect()
    }

    #[test]
    fn csv_as_go_reads_it() {
        assert_eq!(
            fields("t1,alice,1,\"dev,ops\"\n\nt2,bob,2\r\n"),
            vec![vec!["t1", "alice", "1", "dev,ops"], vec!["t2", "bob", "2"],]
        );
        assert_eq!(
            fields("a,\"say \"\"hi\"\"\",c"),
            vec![vec!["a", "say \"hi\"", "c"]]
        );
        assert_eq!(
            fields("a,b,\"multi\nline\"\nd,e,f"),
            vec![vec!["a", "b", "multi\nline"], vec!["d", "e", "f"]]
        );
        assert_eq!(fields("a,,c,"), vec![vec!["a", "", "c", ""]]);
        assert_eq!(
            fields("# not a comment,x,y"),
            vec![vec!["# not a comment", "x", "y"]]
        );
        assert_eq!(
            parse_csv("ok,a,b\nbad\"quote,a,b"),
            Err((2, 4, "bare \" in non-quoted-field"))
        );
        assert_eq!(
            parse_csv("\"open,a,b"),
            Err((1, 10, "extraneous or missing \" in quoted-field"))
        );
        assert_eq!(
            parse_csv("\"a\"x,b,c"),
            Err((1, 4, "extraneous or missing \" in quoted-field"))
        );
    }

    #[test]
    fn records_become_users() {
        let authn = TokenFileAuthenticator::from_csv(
            "tokens.csv",
            "t1,alice,1001,\"dev,ops\"\n,empty,1\nt2,bob,1002\nt2,carol,1003,\n",
            vec!["api".to_string()],
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(authn.len(), 2);
        let alice = &authn.tokens["t1"];
        assert_eq!((alice.name.as_str(), alice.uid.as_str()), ("alice", "1001"));
        assert_eq!(alice.groups, vec!["dev", "ops"]);
        // The later line wins; an empty fourth column is one empty group, as in Kubernetes.
        assert_eq!(authn.tokens["t2"].name, "carol");
        assert_eq!(authn.tokens["t2"].groups, vec![""]);
    }

    #[test]
    fn errors_name_the_line() {
        let err = TokenFileAuthenticator::from_csv("f.csv", "t1,a,1\n\nt2,b\n", Vec::new())
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some(
                "token file 'f.csv' must have at least 3 columns (token, user name, user uid), found 2 (line 3)"
            )
        );
        let err = TokenFileAuthenticator::from_csv("f.csv", "t1,a,1\nx\"y,b,c\n", Vec::new())
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some(
                "token file 'f.csv': parse error on line 2, column 2: bare \" in non-quoted-field"
            )
        );
    }

    #[tokio::test]
    async fn tokens_are_valid_for_the_api_audiences_only() {
        let authn =
            TokenFileAuthenticator::from_csv("f.csv", "t1,alice,1\n", vec!["api".to_string()])
                .unwrap_or_else(|e| panic!("{e}"));
        match authn.authenticate_token("t1", &[]).await {
            TokenOutcome::Authenticated {
                user, audiences, ..
            } => {
                assert_eq!(user.name, "alice");
                assert_eq!(audiences, vec!["api"]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            authn.authenticate_token("t1", &["other".to_string()]).await,
            TokenOutcome::Unrecognized
        );
        assert_eq!(
            authn.authenticate_token("nope", &[]).await,
            TokenOutcome::Unrecognized
        );
    }
}
