//! Schema `pattern`s compiled with Go's `regexp` meaning: Rust's `regex` reads `\d`, `\w`,
//! `\s` and `\b` as Unicode classes where Go's RE2 syntax means ASCII ones, so those escapes
//! are rewritten to their ASCII forms before compiling.

use std::sync::Arc;

use regex::Regex;

/// Compiles `pattern` as Go would read it; the error is worded as Go's
/// (`error parsing regexp: missing closing ): `(``) for the common mistakes, and names the
/// Rust compiler's reason otherwise.
pub(crate) fn compile(pattern: &str) -> Result<Arc<Regex>, String> {
    Regex::new(&ascii_classes(pattern))
        .map(Arc::new)
        .map_err(|e| go_error(pattern, &e.to_string()))
}

/// Go's `regexp/syntax` error text for a Rust compiler message.
fn go_error(pattern: &str, rust: &str) -> String {
    let reason = rust
        .lines()
        .find_map(|l| l.strip_prefix("error: "))
        .unwrap_or(rust)
        .trim();
    let code = match reason {
        "unclosed group" => "missing closing )",
        "unopened group" => "unexpected )",
        "unclosed character class" => "missing closing ]",
        "repetition operator missing expression" => "missing argument to repetition operator",
        "unrecognized escape sequence"
        | "incomplete escape sequence, reached end of pattern prematurely" => {
            "invalid escape sequence"
        }
        "invalid character class range, the start must be <= the end" => {
            "invalid character class range"
        }
        "invalid repetition count(s)" | "repetition quantifier expects a valid decimal" => {
            "invalid repeat count"
        }
        other => other,
    };
    format!("error parsing regexp: {code}: `{pattern}`")
}

/// `pattern` with Go's ASCII-only Perl classes and word boundaries spelled out (and the
/// characters Go reads literally in a class escaped), for Rust's `regex`.
pub(crate) fn ascii_classes(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut in_class = false;
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(e) = chars.next() else {
                    out.push('\\');
                    break;
                };
                out.push_str(&match (e, in_class) {
                    ('d', false) => "[0-9]".to_string(),
                    ('D', false) => "[^0-9]".to_string(),
                    ('w', false) => "[0-9A-Za-z_]".to_string(),
                    ('W', false) => "[^0-9A-Za-z_]".to_string(),
                    ('s', false) => r"[\t\n\f\r ]".to_string(),
                    ('S', false) => r"[^\t\n\f\r ]".to_string(),
                    ('b', false) => r"(?-u:\b)".to_string(),
                    ('B', false) => r"(?-u:\B)".to_string(),
                    ('d', true) => "0-9".to_string(),
                    ('D', true) => "[^0-9]".to_string(),
                    ('w', true) => "0-9A-Za-z_".to_string(),
                    ('W', true) => "[^0-9A-Za-z_]".to_string(),
                    ('s', true) => r"\t\n\f\r ".to_string(),
                    ('S', true) => r"[^\t\n\f\r ]".to_string(),
                    (e, _) => format!("\\{e}"),
                });
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                // A `]` (after an optional `^`) first in a class is a literal.
                if chars.peek() == Some(&'^') {
                    out.push('^');
                    chars.next();
                }
                if chars.peek() == Some(&']') {
                    out.push_str(r"\]");
                    chars.next();
                }
            }
            '[' if chars.peek() == Some(&':') => {
                // A POSIX class such as `[:alpha:]` inside a bracket expression.
                out.push('[');
                for p in chars.by_ref() {
                    out.push(p);
                    if p == ']' {
                        break;
                    }
                }
            }
            // Go reads these literally in a class; Rust nests classes and has set operators.
            '[' | '&' | '~' if in_class => {
                out.push('\\');
                out.push(c);
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perl_classes_are_ascii_as_in_go() {
        let re = compile(r"^\d+$").unwrap();
        assert!(re.is_match("123"));
        assert!(!re.is_match("١٢٣"));
        let re = compile(r"^[\w.-]+$").unwrap();
        assert!(re.is_match("a_b.c-d"));
        assert!(!re.is_match("é"));
        let re = compile(r"^[^\s]+$").unwrap();
        assert!(re.is_match("ab"));
        assert!(!re.is_match("a b"));
        let re = compile(r"^[]a]+$").unwrap();
        assert!(re.is_match("]a"));
        let re = compile(r"^[[:alpha:]]+$").unwrap();
        assert!(re.is_match("abc"));
        assert!(compile("(").is_err());
        let re = compile(r"^[a&&b~]+$").unwrap();
        assert!(re.is_match("&~a"));
    }
}
