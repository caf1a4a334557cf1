//! Label and field selectors as the `labelSelector` and `fieldSelector` query parameters carry
//! them, parsed and matched with Kubernetes' grammar and error messages.
//!
//! Label selectors: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`, `k>1`,
//! `k<1`; requirements separated by commas are ANDed. Field selectors: `f=v`, `f==v`, `f!=v`,
//! comma-separated and ANDed, with `\,`, `\=` and `\\` escapes in values.

use std::collections::BTreeMap;
use std::fmt;

use crate::validation;

mod field;

pub use field::{FieldOperator, FieldRequirement, FieldSelector, field_value};

/// A selector string that could not be parsed; `Display` is the message Kubernetes returns
/// in its 400 `BadRequest`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SelectorError(pub String);

/// The operator of one label requirement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    /// `k=v` or `k==v`.
    Equals,
    /// `k!=v`.
    NotEquals,
    /// `k in (a,b)`.
    In,
    /// `k notin (a,b)`.
    NotIn,
    /// `k`.
    Exists,
    /// `!k`.
    DoesNotExist,
    /// `k>1`.
    GreaterThan,
    /// `k<1`.
    LessThan,
}

/// One label requirement: a key, an operator and its values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    /// The label key.
    pub key: String,
    /// The operator.
    pub operator: Operator,
    /// The values (one for equality and comparisons, several for set operators, none for
    /// existence).
    pub values: Vec<String>,
}

impl Requirement {
    /// Returns whether the labels satisfy this requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches_with(|k| labels.get(k).map(String::as_str))
    }

    /// Returns whether the labels, read through `get` (the value of a label key, if set),
    /// satisfy this requirement.
    pub fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        let value = get(&self.key);
        let listed = |v: &str| self.values.iter().any(|w| w == v);
        match self.operator {
            Operator::Equals | Operator::In => value.is_some_and(listed),
            Operator::NotEquals | Operator::NotIn => value.is_none_or(|v| !listed(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(have), Some(want)) = (
                    value.and_then(|v| v.parse::<i64>().ok()),
                    self.values.first().and_then(|v| v.parse::<i64>().ok()),
                ) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    have > want
                } else {
                    have < want
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.operator {
            Operator::Equals => write!(f, "{}={}", self.key, self.values.join(",")),
            Operator::NotEquals => write!(f, "{}!={}", self.key, self.values.join(",")),
            Operator::In => write!(f, "{} in ({})", self.key, self.values.join(",")),
            Operator::NotIn => write!(f, "{} notin ({})", self.key, self.values.join(",")),
            Operator::Exists => write!(f, "{}", self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
            Operator::GreaterThan => write!(f, "{}>{}", self.key, self.values.join(",")),
            Operator::LessThan => write!(f, "{}<{}", self.key, self.values.join(",")),
        }
    }
}

/// A parsed label selector: the AND of its requirements. The empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LabelSelector {
    /// The requirements, all of which must hold.
    pub requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Parses a selector string such as `app=web,tier in (a,b),!legacy`.
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        Parser::new(input).parse()
    }

    /// Returns whether the selector has no requirements.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Returns whether the labels satisfy every requirement.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Returns whether the labels, read through `get` (the value of a label key, if set),
    /// satisfy every requirement.
    pub fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| r.matches_with(&get))
    }

    /// Matches against the `metadata.labels` of a JSON object.
    pub fn matches_object(&self, object: &serde_json::Value) -> bool {
        if self.is_empty() {
            return true;
        }
        self.matches(&labels_of(object))
    }
}

impl TryFrom<&crate::meta::LabelSelector> for LabelSelector {
    type Error = SelectorError;

    /// Kubernetes' `LabelSelectorAsSelector` for a present selector: `matchLabels` as
    /// equalities, `matchExpressions` by their operator; an empty selector matches everything.
    fn try_from(selector: &crate::meta::LabelSelector) -> Result<Self, SelectorError> {
        let mut requirements: Vec<Requirement> = selector
            .match_labels
            .iter()
            .map(|(k, v)| Requirement {
                key: k.clone(),
                operator: Operator::Equals,
                values: vec![v.clone()],
            })
            .collect();
        for expr in &selector.match_expressions {
            let operator = match expr.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => {
                    return Err(SelectorError(format!(
                        "{other:?} is not a valid label selector operator"
                    )));
                }
            };
            requirements.push(Requirement {
                key: expr.key.clone(),
                operator,
                values: expr.values.clone(),
            });
        }
        Ok(Self { requirements })
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self.requirements.iter().map(ToString::to_string).collect();
        f.write_str(&parts.join(","))
    }
}

/// Reads `metadata.labels` of a JSON object as a map (non-string values are skipped).
pub fn labels_of(object: &serde_json::Value) -> BTreeMap<String, String> {
    object
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(|l| l.as_object())
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Identifier(String),
    DoesNotExist,
    Equals,
    DoubleEquals,
    NotEquals,
    GreaterThan,
    LessThan,
    In,
    NotIn,
    OpenParen,
    ClosedParen,
    Comma,
    End,
}

impl Token {
    fn literal(&self) -> String {
        match self {
            Token::Identifier(s) => s.clone(),
            Token::DoesNotExist => "!".into(),
            Token::Equals => "=".into(),
            Token::DoubleEquals => "==".into(),
            Token::NotEquals => "!=".into(),
            Token::GreaterThan => ">".into(),
            Token::LessThan => "<".into(),
            Token::In => "in".into(),
            Token::NotIn => "notin".into(),
            Token::OpenParen => "(".into(),
            Token::ClosedParen => ")".into(),
            Token::Comma => ",".into(),
            Token::End => String::new(),
        }
    }
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

fn lex(input: &str) -> Vec<Token> {
    let chars: Vec<char> = input.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if is_special(c) {
            let mut j = i;
            while j < chars.len() && is_special(chars[j]) {
                j += 1;
            }
            // Take the longest run of special characters that is a known operator.
            let run: String = chars[i..j].iter().collect();
            let (token, len) = if run.starts_with("==") {
                (Token::DoubleEquals, 2)
            } else if run.starts_with("!=") {
                (Token::NotEquals, 2)
            } else {
                let t = match c {
                    '=' => Token::Equals,
                    '!' => Token::DoesNotExist,
                    '(' => Token::OpenParen,
                    ')' => Token::ClosedParen,
                    ',' => Token::Comma,
                    '>' => Token::GreaterThan,
                    _ => Token::LessThan,
                };
                (t, 1)
            };
            tokens.push(token);
            i += len;
        } else {
            let mut j = i;
            while j < chars.len() && !chars[j].is_whitespace() && !is_special(chars[j]) {
                j += 1;
            }
            let word: String = chars[i..j].iter().collect();
            tokens.push(match word.as_str() {
                "in" => Token::In,
                "notin" => Token::NotIn,
                _ => Token::Identifier(word),
            });
            i = j;
        }
    }
    tokens.push(Token::End);
    tokens
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
}

/// Whether the parser reads keys (where `in`/`notin` are keywords) or values (where they are
/// plain identifiers).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Keys,
    Values,
}

impl Parser {
    fn new(input: &str) -> Self {
        Self {
            tokens: lex(input),
            pos: 0,
        }
    }

    fn peek(&self, mode: Mode) -> Token {
        let t = self.tokens.get(self.pos).cloned().unwrap_or(Token::End);
        if mode == Mode::Values {
            match t {
                Token::In => return Token::Identifier("in".into()),
                Token::NotIn => return Token::Identifier("notin".into()),
                _ => {}
            }
        }
        t
    }

    fn next(&mut self, mode: Mode) -> Token {
        let t = self.peek(mode);
        if self.pos < self.tokens.len() {
            self.pos += 1;
        }
        t
    }

    fn parse(&mut self) -> Result<LabelSelector, SelectorError> {
        let mut requirements = Vec::new();
        loop {
            match self.peek(Mode::Values) {
                Token::Identifier(_) | Token::DoesNotExist => {
                    let r = self
                        .parse_requirement()
                        .map_err(|e| SelectorError(format!("unable to parse requirement: {e}")))?;
                    requirements.push(r);
                    match self.next(Mode::Values) {
                        Token::End => break,
                        Token::Comma => {
                            if !matches!(
                                self.peek(Mode::Values),
                                Token::Identifier(_) | Token::DoesNotExist
                            ) {
                                let lit = self.peek(Mode::Values).literal();
                                return Err(SelectorError(format!(
                                    "found '{lit}', expected: identifier after ','"
                                )));
                            }
                        }
                        other => {
                            return Err(SelectorError(format!(
                                "found '{}', expected: ',' or 'end of string'",
                                other.literal()
                            )));
                        }
                    }
                }
                Token::End => break,
                other => {
                    return Err(SelectorError(format!(
                        "found '{}', expected: !, identifier, or 'end of string'",
                        other.literal()
                    )));
                }
            }
        }
        Ok(LabelSelector { requirements })
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let mut operator = None;
        let mut tok = self.next(Mode::Values);
        if tok == Token::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            tok = self.next(Mode::Values);
        }
        let Token::Identifier(key) = tok else {
            return Err(format!("found '{}', expected: identifier", tok.literal()));
        };
        validate_label_key(&key)?;
        if matches!(self.peek(Mode::Values), Token::End | Token::Comma) {
            return Ok(Requirement {
                key,
                operator: operator.unwrap_or(Operator::Exists),
                values: Vec::new(),
            });
        }
        if operator.is_some() {
            return Err(format!(
                "found '{}', expected: ',' or 'end of string'",
                self.peek(Mode::Values).literal()
            ));
        }
        let op_tok = self.next(Mode::Keys);
        let operator = match op_tok {
            Token::Equals | Token::DoubleEquals => Operator::Equals,
            Token::NotEquals => Operator::NotEquals,
            Token::In => Operator::In,
            Token::NotIn => Operator::NotIn,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            other => {
                return Err(format!(
                    "found '{}', expected: in, notin, =, ==, !=, gt, lt",
                    other.literal()
                ));
            }
        };
        let values = match operator {
            Operator::In | Operator::NotIn => self.parse_value_set()?,
            _ => vec![self.parse_exact_value()?],
        };
        for v in &values {
            validate_label_value(&key, v)?;
        }
        if matches!(operator, Operator::GreaterThan | Operator::LessThan)
            && values.first().is_none_or(|v| v.parse::<i64>().is_err())
        {
            return Err(
                "values[0]: Invalid value: for 'Gt', 'Lt' operators, the value must be an integer"
                    .to_string(),
            );
        }
        if matches!(operator, Operator::In | Operator::NotIn) && values.is_empty() {
            return Err(
                "values: Invalid value: for 'in', 'notin' operators, values set can't be empty"
                    .to_string(),
            );
        }
        Ok(Requirement {
            key,
            operator,
            values,
        })
    }

    fn parse_exact_value(&mut self) -> Result<String, String> {
        match self.peek(Mode::Values) {
            Token::End | Token::Comma => Ok(String::new()),
            Token::Identifier(v) => {
                self.pos += 1;
                Ok(v)
            }
            other => Err(format!("found '{}', expected: identifier", other.literal())),
        }
    }

    fn parse_value_set(&mut self) -> Result<Vec<String>, String> {
        let t = self.next(Mode::Values);
        if t != Token::OpenParen {
            return Err(format!("found '{}', expected: '('", t.literal()));
        }
        let mut values = Vec::new();
        // `()` is an empty set; `(a,,b)` and `(a,)` carry empty values, as upstream.
        if self.peek(Mode::Values) == Token::ClosedParen {
            self.pos += 1;
            return Ok(values);
        }
        loop {
            match self.next(Mode::Values) {
                Token::Identifier(v) => {
                    values.push(v);
                    match self.next(Mode::Values) {
                        Token::Comma => {}
                        Token::ClosedParen => return Ok(values),
                        other => {
                            return Err(format!(
                                "found '{}', expected: ',' or ')'",
                                other.literal()
                            ));
                        }
                    }
                }
                Token::Comma => values.push(String::new()),
                Token::ClosedParen => {
                    values.push(String::new());
                    return Ok(values);
                }
                other => {
                    return Err(format!(
                        "found '{}', expected: ',', or identifier",
                        other.literal()
                    ));
                }
            }
        }
    }
}

/// `validateLabelKey` of Kubernetes' selector parser: every problem, joined by `; `.
fn validate_label_key(key: &str) -> Result<(), String> {
    let errs = validation::is_qualified_name(key);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(format!("key: Invalid value: {key:?}: {}", errs.join("; ")))
    }
}

/// `validateLabelValue` of Kubernetes' selector parser: every problem, joined by `; `.
fn validate_label_value(key: &str, value: &str) -> Result<(), String> {
    let errs = validation::is_valid_label_value(value);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "values[0][{key}]: Invalid value: {value:?}: {}",
            errs.join("; ")
        ))
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parses_every_operator() {
        let s =
            LabelSelector::parse("a=1, b==2,c!=3,d in (x, y),e notin (z),f,!g,h>5,i<7").unwrap();
        let ops: Vec<Operator> = s.requirements.iter().map(|r| r.operator).collect();
        use Operator::*;
        assert_eq!(
            ops,
            vec![
                Equals,
                Equals,
                NotEquals,
                In,
                NotIn,
                Exists,
                DoesNotExist,
                GreaterThan,
                LessThan
            ]
        );
        assert_eq!(s.requirements[3].values, vec!["x", "y"]);
        let l = labels(&[
            ("a", "1"),
            ("b", "2"),
            ("c", "4"),
            ("d", "y"),
            ("e", "q"),
            ("f", ""),
            ("h", "6"),
            ("i", "3"),
        ]);
        assert!(s.matches(&l));
        let mut l2 = l.clone();
        l2.insert("g".into(), "x".into());
        assert!(!s.matches(&l2));
    }

    #[test]
    fn empty_selector_matches_everything() {
        let s = LabelSelector::parse("").unwrap();
        assert!(s.is_empty());
        assert!(s.matches(&labels(&[])));
    }

    #[test]
    fn not_equals_matches_missing_key() {
        let s = LabelSelector::parse("app!=web").unwrap();
        assert!(s.matches(&labels(&[])));
        assert!(!s.matches(&labels(&[("app", "web")])));
    }

    #[test]
    fn values_named_in_are_values() {
        let s = LabelSelector::parse("k=in").unwrap();
        assert_eq!(s.requirements[0].values, vec!["in"]);
    }

    #[test]
    fn error_messages_match_kubernetes() {
        assert_eq!(
            LabelSelector::parse("a=b c").unwrap_err().0,
            "found 'c', expected: ',' or 'end of string'"
        );
        assert_eq!(
            LabelSelector::parse("a in b").unwrap_err().0,
            "unable to parse requirement: found 'b', expected: '('"
        );
        assert_eq!(
            LabelSelector::parse("=a").unwrap_err().0,
            "found '=', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(
            LabelSelector::parse("a (").unwrap_err().0,
            "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt"
        );
        assert!(
            LabelSelector::parse("a>b")
                .unwrap_err()
                .0
                .contains("must be an integer")
        );
        assert!(
            LabelSelector::parse("a=b$")
                .unwrap_err()
                .0
                .starts_with("unable to parse requirement: values[0][a]: Invalid value: \"b$\"")
        );
        assert!(
            LabelSelector::parse("-a")
                .unwrap_err()
                .0
                .starts_with("unable to parse requirement: key: Invalid value: \"-a\"")
        );
    }

    #[test]
    fn key_and_value_problems_are_the_validation_rules_joined() {
        assert_eq!(
            LabelSelector::parse("a/=x").unwrap_err().0,
            format!(
                "unable to parse requirement: key: Invalid value: \"a/\": {}",
                crate::validation::is_qualified_name("a/").join("; ")
            )
        );
        let long = "v".repeat(64);
        assert_eq!(
            LabelSelector::parse(&format!("a={long}")).unwrap_err().0,
            format!(
                "unable to parse requirement: values[0][a]: Invalid value: \"{long}\": must be no more than 63 characters"
            )
        );
        assert_eq!(
            LabelSelector::parse(&format!("{}/k=v", "p".repeat(254)))
                .unwrap_err()
                .0,
            format!(
                "unable to parse requirement: key: Invalid value: \"{}/k\": prefix part must be no more than 253 characters",
                "p".repeat(254)
            )
        );
    }

    #[test]
    fn round_trips_to_string() {
        let s = LabelSelector::parse("a=1,b in (x,y),!c").unwrap();
        assert_eq!(s.to_string(), "a=1,b in (x,y),!c");
    }
}
