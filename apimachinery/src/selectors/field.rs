//! Field selectors as the `fieldSelector` query parameter carries them: `f=v`, `f==v`, `f!=v`,
//! comma-separated and ANDed, with `\,`, `\=` and `\\` escapes in values.

use std::fmt;

use super::SelectorError;

/// The operator of one field requirement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldOperator {
    /// `f=v` or `f==v`.
    Equals,
    /// `f!=v`.
    NotEquals,
}

/// One field requirement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRequirement {
    /// The field label, such as `metadata.name`.
    pub field: String,
    /// The operator.
    pub operator: FieldOperator,
    /// The value, unescaped.
    pub value: String,
}

/// A parsed field selector: the AND of its requirements.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector {
    /// The requirements.
    pub requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    /// Parses a field selector such as `metadata.name=foo,metadata.namespace!=bar`.
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        let mut requirements = Vec::new();
        for part in split_unescaped(input, ',') {
            if part.is_empty() {
                continue;
            }
            let (field, operator, value) = split_field_term(&part).ok_or_else(|| {
                SelectorError(format!(
                    "invalid selector: '{input}'; can't understand '{part}'"
                ))
            })?;
            let value = unescape_field_value(value)
                .map_err(|e| SelectorError(format!("invalid field selector: {e}")))?;
            requirements.push(FieldRequirement {
                field: field.to_string(),
                operator,
                value,
            });
        }
        Ok(Self { requirements })
    }

    /// Returns whether the selector has no requirements.
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Checks that every field label is one of `supported`; otherwise returns
    /// `field label not supported: X`.
    pub fn check_supported(&self, supported: &[&str]) -> Result<(), SelectorError> {
        for r in &self.requirements {
            if !supported.contains(&r.field.as_str()) {
                return Err(SelectorError(format!(
                    "field label not supported: {}",
                    r.field
                )));
            }
        }
        Ok(())
    }

    /// Returns the value an `=` requirement demands of `field`, if any.
    pub fn exact(&self, field: &str) -> Option<&str> {
        self.requirements
            .iter()
            .find(|r| r.field == field && r.operator == FieldOperator::Equals)
            .map(|r| r.value.as_str())
    }

    /// Matches an object: each field label is read from the JSON by its dotted path (missing
    /// fields read as the empty string, numbers and booleans as their text).
    pub fn matches_object(&self, object: &serde_json::Value) -> bool {
        self.requirements.iter().all(|r| {
            let have = field_value(object, &r.field);
            match r.operator {
                FieldOperator::Equals => have == r.value,
                FieldOperator::NotEquals => have != r.value,
            }
        })
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .requirements
            .iter()
            .map(|r| {
                let op = if r.operator == FieldOperator::Equals {
                    "="
                } else {
                    "!="
                };
                format!("{}{op}{}", r.field, escape_field_value(&r.value))
            })
            .collect();
        f.write_str(&parts.join(","))
    }
}

/// Reads a field label's value from an object by its dotted path.
pub fn field_value(object: &serde_json::Value, field: &str) -> String {
    let mut cur = object;
    for seg in field.split('.') {
        match cur.get(seg) {
            Some(v) => cur = v,
            None => return String::new(),
        }
    }
    match cur {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    }
}

fn split_unescaped(input: &str, sep: char) -> Vec<String> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut escaped = false;
    for c in input.chars() {
        if escaped {
            cur.push('\\');
            cur.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            parts.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    if escaped {
        cur.push('\\');
    }
    parts.push(cur);
    parts
}

/// Splits a term at its first operator, as Kubernetes' `splitTerm`: at the leftmost position
/// where `!=`, `==` or `=` starts (so `a=b==` is `a` `=` `b==`, whose value is then refused).
fn split_field_term(term: &str) -> Option<(&str, FieldOperator, &str)> {
    term.char_indices().find_map(|(i, _)| {
        let rest = &term[i..];
        [
            ("!=", FieldOperator::NotEquals),
            ("==", FieldOperator::Equals),
            ("=", FieldOperator::Equals),
        ]
        .into_iter()
        .find(|(op, _)| rest.starts_with(op))
        .map(|(op, kind)| (&term[..i], kind, &rest[op.len()..]))
    })
}

fn unescape_field_value(value: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                Some(e) => return Err(format!("invalid escape sequence: \\{e}")),
                None => return Err("unterminated escape sequence".to_string()),
            }
        } else if c == ',' || c == '=' {
            return Err(format!(
                "invalid selector value: unescaped {c:?} in {value:?}"
            ));
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

fn escape_field_value(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace(',', "\\,")
        .replace('=', "\\=")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the `field_selector` fuzz target (fuzz/regressions/field_selector/): the term
    /// splits at its leftmost operator, so a later `==` or `!=` is part of the value.
    #[test]
    fn field_term_splits_at_the_leftmost_operator() {
        let err = FieldSelector::parse("f=x==").expect_err("an unescaped = in the value");
        assert_eq!(
            err.0,
            "invalid field selector: invalid selector value: unescaped '=' in \"x==\""
        );
        assert!(FieldSelector::parse("a=b!=c").is_err());
        let s = FieldSelector::parse("a!=b\\=").expect("parses");
        assert_eq!(s.requirements[0].field, "a");
        assert_eq!(s.requirements[0].operator, FieldOperator::NotEquals);
    }
    #[test]
    fn field_selectors_parse_and_match() {
        let s = FieldSelector::parse("metadata.name=foo,metadata.namespace!=kube-system").unwrap();
        let obj = serde_json::json!({"metadata": {"name": "foo", "namespace": "default"}});
        assert!(s.matches_object(&obj));
        assert_eq!(s.exact("metadata.name"), Some("foo"));
        let s2 = FieldSelector::parse("metadata.name==bar").unwrap();
        assert!(!s2.matches_object(&obj));
        assert_eq!(
            FieldSelector::parse("a\\,b=c\\=d").unwrap().requirements[0].value,
            "c=d"
        );
    }

    #[test]
    fn field_selector_errors() {
        assert_eq!(
            FieldSelector::parse("foo").unwrap_err().0,
            "invalid selector: 'foo'; can't understand 'foo'"
        );
        let s = FieldSelector::parse("spec.x=1").unwrap();
        assert_eq!(
            s.check_supported(&["metadata.name"]).unwrap_err().0,
            "field label not supported: spec.x"
        );
    }
}
