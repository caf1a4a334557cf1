//! The parser of Kubernetes' JSONPath templates (k8s.io/client-go/util/jsonpath's `Parse`).
//!
//! A template is text with actions in braces: `hello {.metadata.name}`. An action is a list of
//! nodes applied in turn to the current values: fields (`.a`, `['a']`), array slices
//! (`[1]`, `[-1]`, `[1:4:2]`, `[*]`), the wildcard `.*`, recursive descent `..`, unions
//! `[a,b]`, filters `[?(@.x == "y")]`, quoted text, numbers, booleans and the identifiers of
//! `{range …}` / `{end}`. The grammar, the order of its checks and its error messages are
//! Kubernetes'; the parser loops where Kubernetes recurses once per token, and the only
//! recursion (the sub-templates of unions, quoted keys and filters) is bounded by
//! [`MAX_NESTING`].

use super::ParseError;

/// The deepest nesting of sub-templates (a union member, a quoted key or a filter operand
/// parses its text as a template of its own) the parser follows; Kubernetes' grammar itself
/// cannot nest them more than a few levels, so only hostile text reaches it.
pub const MAX_NESTING: usize = 16;

/// One bound of an array slice `[start:end:step]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Param {
    /// The number written (or derived), when known.
    pub value: i64,
    /// Whether the bound was written (or derived) rather than left open.
    pub known: bool,
    /// Whether the bound was derived from the start (`[i]` is `[i:i+1]`).
    pub derived: bool,
}

/// A filter's comparison.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Operator {
    /// `[?(@.x)]`: the left side yields something.
    Exists,
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// `<`.
    Lt,
    /// `<=`.
    Le,
    /// `>`.
    Gt,
    /// `>=`.
    Ge,
    /// Any other run of `!<>=` characters, refused when the filter runs (as Kubernetes does).
    Other(String),
}

impl Operator {
    fn from_text(op: &str) -> Operator {
        match op {
            "==" => Operator::Eq,
            "!=" => Operator::Ne,
            "<" => Operator::Lt,
            "<=" => Operator::Le,
            ">" => Operator::Gt,
            ">=" => Operator::Ge,
            other => Operator::Other(other.to_string()),
        }
    }
}

/// One node of a parsed template.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Node {
    /// Literal text (outside actions, or quoted inside one).
    Text(String),
    /// An action: its nodes, applied in turn.
    List(Vec<Node>),
    /// An object member.
    Field(String),
    /// A bare word: `range`, `end`, or anything else (refused when evaluated).
    Identifier(String),
    /// An array slice or index.
    Array([Param; 3]),
    /// A filter over an array's elements.
    Filter {
        /// The nodes of the left operand (applied to each element).
        left: Vec<Node>,
        /// The nodes of the right operand (empty for `Exists`).
        right: Vec<Node>,
        /// The comparison.
        op: Operator,
    },
    /// An integer literal.
    Int(i64),
    /// A floating-point literal.
    Float(f64),
    /// `true` or `false`.
    Bool(bool),
    /// `*`: every member or element.
    Wildcard,
    /// `..`: the value and every container below it.
    Recursive,
    /// `[a,b]`: the results of each member in turn.
    Union(Vec<Vec<Node>>),
}

/// Parses a whole template into its root nodes (only `Text` and `List`).
pub(crate) fn parse_template(text: &str) -> Result<Vec<Node>, ParseError> {
    parse_at_depth(text, 0)
}

fn parse_at_depth(text: &str, depth: usize) -> Result<Vec<Node>, ParseError> {
    if depth > MAX_NESTING {
        return Err(ParseError::TooDeep);
    }
    let mut p = Parser {
        input: text,
        pos: 0,
        start: 0,
        width: 0,
        depth,
        root: Vec::new(),
    };
    p.run()?;
    Ok(p.root)
}

/// Kubernetes' `parseAction`: the nodes of the first action of `{text}`.
fn parse_action(text: &str, depth: usize) -> Result<Vec<Node>, ParseError> {
    let root = parse_at_depth(&format!("{{{text}}}"), depth + 1)?;
    match root.into_iter().next() {
        Some(Node::List(nodes)) => Ok(nodes),
        // `{…` always starts with an action.
        _ => Ok(Vec::new()),
    }
}

/// End of input, as a rune.
const EOF: Option<char> = None;

struct Parser<'t> {
    input: &'t str,
    pos: usize,
    start: usize,
    width: usize,
    depth: usize,
    root: Vec<Node>,
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.input[self.pos..]
    }

    fn next(&mut self) -> Option<char> {
        match self.rest().chars().next() {
            None => {
                self.width = 0;
                EOF
            }
            Some(c) => {
                self.width = c.len_utf8();
                self.pos += self.width;
                Some(c)
            }
        }
    }

    fn backup(&mut self) {
        self.pos -= self.width;
    }

    fn peek(&mut self) -> Option<char> {
        let c = self.next();
        self.backup();
        c
    }

    fn consume(&mut self) -> &str {
        let text = &self.input[self.start..self.pos];
        self.start = self.pos;
        text
    }

    /// The byte just before the rune `next` returned last (Kubernetes' `input[pos-2]`).
    fn byte_before_last(&self) -> Option<u8> {
        (self.pos >= 2).then(|| self.input.as_bytes()[self.pos - 2])
    }

    /// Text and actions until the end of input.
    fn run(&mut self) -> Result<(), ParseError> {
        loop {
            // Text up to the next `{`.
            loop {
                if self.rest().starts_with('{') {
                    break;
                }
                if self.next().is_none() {
                    if self.pos > self.start {
                        let text = self.consume().to_string();
                        self.root.push(Node::Text(text));
                    }
                    return Ok(());
                }
            }
            if self.pos > self.start {
                let text = self.consume().to_string();
                self.root.push(Node::Text(text));
            }
            self.pos += 1;
            self.consume();
            let mut list = Vec::new();
            let result = self.inside_action(&mut list);
            self.root.push(Node::List(list));
            result?;
        }
    }

    /// The nodes of one action, through its closing `}`.
    fn inside_action(&mut self, cur: &mut Vec<Node>) -> Result<(), ParseError> {
        loop {
            if self.rest().starts_with('}') {
                self.pos += 1;
                self.consume();
                return Ok(());
            }
            if self.rest().starts_with("[?(") {
                self.filter(cur)?;
                continue;
            }
            if self.rest().starts_with("..") {
                self.recursive(cur)?;
                continue;
            }
            match self.next() {
                None | Some('\r' | '\n') => return Err(ParseError::UnclosedAction),
                Some(' ' | '@' | '$') => {
                    self.consume();
                }
                Some('[') => self.array(cur)?,
                Some(q @ ('"' | '\'')) => self.quote(cur, q)?,
                Some('.') => self.field(cur),
                Some(c) if c == '+' || c == '-' || is_digit(c) => {
                    self.backup();
                    self.number(cur)?;
                }
                Some(c) if is_alphanumeric(c) => {
                    self.backup();
                    self.identifier(cur);
                }
                Some(c) => return Err(ParseError::UnrecognizedCharacter(c)),
            }
        }
    }

    fn identifier(&mut self, cur: &mut Vec<Node>) {
        loop {
            let c = self.next();
            if is_terminator(c) {
                self.backup();
                break;
            }
        }
        let value = self.consume();
        cur.push(match value {
            "true" => Node::Bool(true),
            "false" => Node::Bool(false),
            other => Node::Identifier(other.to_string()),
        });
    }

    fn recursive(&mut self, cur: &mut Vec<Node>) -> Result<(), ParseError> {
        if cur.last() == Some(&Node::Recursive) {
            return Err(ParseError::MultipleRecursive);
        }
        self.pos += 2;
        self.consume();
        cur.push(Node::Recursive);
        if self.peek().is_some_and(is_alphanumeric) {
            self.field(cur);
        }
        Ok(())
    }

    fn number(&mut self, cur: &mut Vec<Node>) -> Result<(), ParseError> {
        if matches!(self.peek(), Some('+' | '-')) {
            self.next();
        }
        loop {
            match self.next() {
                Some(c) if c == '.' || is_digit(c) => {}
                _ => {
                    self.backup();
                    break;
                }
            }
        }
        let value = self.consume();
        if let Some(i) = go_atoi(value) {
            cur.push(Node::Int(i));
        } else if let Some(f) = go_parse_float(value) {
            cur.push(Node::Float(f));
        } else {
            return Err(ParseError::Number(value.to_string()));
        }
        Ok(())
    }

    fn array(&mut self, cur: &mut Vec<Node>) -> Result<(), ParseError> {
        loop {
            match self.next() {
                None | Some('\n') => return Err(ParseError::UnterminatedArray),
                Some(']') => break,
                Some(_) => {}
            }
        }
        let depth = self.depth;
        let consumed = self.consume();
        let mut text = &consumed[1..consumed.len() - 1];
        if text == "*" {
            text = ":";
        }
        if text.contains(',') {
            let mut union = Vec::new();
            for member in text.split(',') {
                union.push(parse_action(
                    &format!("[{}]", member.trim_matches(' ')),
                    depth,
                )?);
            }
            cur.push(Node::Union(union));
            return Ok(());
        }
        if let Some(key) = text
            .strip_prefix('\'')
            .and_then(|t| t.strip_suffix('\''))
            .filter(|k| !k.contains('\''))
        {
            cur.extend(parse_action(&format!(".{key}"), depth)?);
            return Ok(());
        }
        cur.push(Node::Array(slice_params(text)?));
        Ok(())
    }

    fn filter(&mut self, cur: &mut Vec<Node>) -> Result<(), ParseError> {
        self.pos += 3;
        self.consume();
        let mut begin = false;
        let mut end = false;
        let mut pair = '"';
        loop {
            match self.next() {
                None | Some('\n') => return Err(ParseError::UnterminatedFilter),
                Some(q @ ('"' | '\'')) => {
                    if !begin {
                        begin = true;
                        pair = q;
                        continue;
                    }
                    if self.byte_before_last() != Some(b'\\') && q == pair {
                        end = true;
                    }
                }
                Some(')') if begin == end => break,
                Some(_) => {}
            }
        }
        if self.next() != Some(']') {
            return Err(ParseError::UnclosedArray);
        }
        let depth = self.depth;
        let consumed = self.consume();
        let text = &consumed[..consumed.len() - 2];
        let node = match split_comparison(text) {
            None => Node::Filter {
                left: parse_action(text, depth)?,
                right: Vec::new(),
                op: Operator::Exists,
            },
            Some((left, op, right)) => Node::Filter {
                left: parse_action(left, depth)?,
                right: parse_action(right, depth)?,
                op: Operator::from_text(op),
            },
        };
        cur.push(node);
        Ok(())
    }

    fn quote(&mut self, cur: &mut Vec<Node>, end: char) -> Result<(), ParseError> {
        loop {
            match self.next() {
                None | Some('\n') => return Err(ParseError::UnterminatedQuote),
                Some(c) if c == end && self.byte_before_last() != Some(b'\\') => break,
                Some(_) => {}
            }
        }
        let value = self.consume();
        let text = unquote(value).ok_or_else(|| ParseError::Unquote(value.to_string()))?;
        cur.push(Node::Text(text));
        Ok(())
    }

    fn field(&mut self, cur: &mut Vec<Node>) {
        self.consume();
        loop {
            match self.next() {
                Some('\\') => {
                    self.next();
                }
                c if is_terminator(c) => {
                    self.backup();
                    break;
                }
                _ => {}
            }
        }
        let value = self.consume();
        cur.push(if value == "*" {
            Node::Wildcard
        } else {
            Node::Field(value.replace('\\', ""))
        });
    }
}

/// Kubernetes' `^([^!<>=]+)([!<>=]+)(.+?)$` on a filter's text: the left operand, the
/// operator and the right operand, or `None` for an existence filter.
fn split_comparison(text: &str) -> Option<(&str, &str, &str)> {
    let is_op = |c: char| matches!(c, '!' | '<' | '>' | '=');
    let op_start = text.find(is_op)?;
    if op_start == 0 {
        return None;
    }
    let after = &text[op_start..];
    let mut op_len = after.find(|c: char| !is_op(c)).unwrap_or(after.len());
    // The right operand needs a character: when the operator run ends the text, the
    // regexp gives the run's last character to it.
    if op_len == after.len() {
        if op_len < 2 {
            return None;
        }
        op_len -= 1;
    }
    let right = &after[op_len..];
    Some((&text[..op_start], &after[..op_len], right))
}

/// Kubernetes' slice grammar `^(-?\d*)(:-?\d*)?(:-?\d*)?$` and its bounds.
fn slice_params(text: &str) -> Result<[Param; 3], ParseError> {
    let invalid = || ParseError::InvalidArrayIndex(text.to_string());
    let mut parts = text.split(':');
    let first = parts.next().unwrap_or("");
    let rest: Vec<&str> = parts.collect();
    if rest.len() > 2 {
        return Err(invalid());
    }
    let well_formed = |s: &str| {
        let digits = s.strip_prefix('-').unwrap_or(s);
        digits.bytes().all(|b| b.is_ascii_digit())
    };
    if !well_formed(first) || !rest.iter().all(|s| well_formed(s)) {
        return Err(invalid());
    }
    let number = |s: &str| {
        go_atoi(s)
            .filter(|_| !s.starts_with('+'))
            .ok_or_else(|| ParseError::ArrayIndexNotNumber(s.to_string()))
    };
    let open = Param {
        value: 0,
        known: false,
        derived: false,
    };
    let mut params = [open; 3];
    if !first.is_empty() {
        params[0] = Param {
            value: number(first)?,
            known: true,
            derived: false,
        };
    }
    match rest.first() {
        // `[i]` is `[i:i+1]` (Go's int arithmetic wraps).
        None => {
            params[1] = Param {
                value: params[0].value.wrapping_add(1),
                known: true,
                derived: true,
            }
        }
        Some(&"") => {}
        Some(s) => {
            params[1] = Param {
                value: number(s)?,
                known: true,
                derived: false,
            }
        }
    }
    if let Some(s) = rest.get(1).filter(|s| !s.is_empty()) {
        params[2] = Param {
            value: number(s)?,
            known: true,
            derived: false,
        };
    }
    Ok(params)
}

/// Go's `strconv.Atoi`: an optional sign and ASCII digits, in range.
fn go_atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Go's `strconv.ParseFloat(s, 64)` on the sign, digits and dots a number token holds.
fn go_parse_float(s: &str) -> Option<f64> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    if !body.bytes().any(|b| b.is_ascii_digit())
        || !body.bytes().all(|b| b.is_ascii_digit() || b == b'.')
    {
        return None;
    }
    s.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// Go's `unicode.IsDigit`, for the digits Rust names (decimal digits of any script are
/// `is_numeric`; Kubernetes then fails to parse the non-ASCII ones as numbers).
fn is_digit(c: char) -> bool {
    c.is_ascii_digit() || (!c.is_ascii() && c.is_numeric())
}

/// Kubernetes' `isAlphaNumeric`: `_`, a letter or a digit.
fn is_alphanumeric(c: char) -> bool {
    c == '_' || c.is_alphabetic() || is_digit(c)
}

/// Kubernetes' `isTerminator`: the characters that end a field or identifier.
fn is_terminator(c: Option<char>) -> bool {
    match c {
        None => true,
        Some(c) => matches!(
            c,
            ' ' | '\t' | '\r' | '\n' | '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}'
        ),
    }
}

/// Kubernetes' `UnquoteExtend`: Go's string unquoting for double- and single-quoted text.
fn unquote(s: &str) -> Option<String> {
    let quote = s.chars().next()?;
    if s.len() < 2 || !s.ends_with(quote) || !matches!(quote, '"' | '\'') {
        return None;
    }
    let body = &s[1..s.len() - 1];
    if !body.contains('\\') && !body.contains(quote) {
        return Some(body.to_string());
    }
    let mut out: Vec<u8> = Vec::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c == quote {
            return None;
        }
        if c != '\\' {
            let mut buf = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let escaped = chars.next()?;
        let simple = match escaped {
            'a' => Some(7u8),
            'b' => Some(8),
            'f' => Some(12),
            'n' => Some(b'\n'),
            'r' => Some(b'\r'),
            't' => Some(b'\t'),
            'v' => Some(11),
            '\\' => Some(b'\\'),
            '\'' | '"' if escaped == quote => Some(escaped as u8),
            _ => None,
        };
        if let Some(b) = simple {
            out.push(b);
            continue;
        }
        match escaped {
            'x' => {
                let hex: String = chars.by_ref().take(2).collect();
                if hex.len() != 2 {
                    return None;
                }
                out.push(u8::from_str_radix(&hex, 16).ok()?);
            }
            'u' | 'U' => {
                let n = if escaped == 'u' { 4 } else { 8 };
                let hex: String = chars.by_ref().take(n).collect();
                if hex.chars().count() != n || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return None;
                }
                let c = char::from_u32(u32::from_str_radix(&hex, 16).ok()?)?;
                let mut buf = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
            '0'..='7' => {
                let rest: String = chars.by_ref().take(2).collect();
                let octal = format!("{escaped}{rest}");
                if octal.len() != 3 || !octal.bytes().all(|b| (b'0'..=b'7').contains(&b)) {
                    return None;
                }
                out.push(u8::try_from(u32::from_str_radix(&octal, 8).ok()?).ok()?);
            }
            _ => return None,
        }
    }
    // `\x`/octal escapes may spell bytes that are not UTF-8; Go keeps them, a Rust string
    // holds their replacement character.
    Some(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unquotes_like_go() {
        assert_eq!(unquote(r#""a\tb""#).as_deref(), Some("a\tb"));
        assert_eq!(unquote(r#"'\\\''"#).as_deref(), Some("\\'"));
        assert_eq!(unquote(r#""\x41\101\u00e9""#).as_deref(), Some("AAé"));
        assert_eq!(unquote(r#""\'""#), None);
        assert_eq!(unquote(r#""a"b""#), None);
        assert_eq!(unquote(r#""\q""#), None);
    }

    #[test]
    fn splits_comparisons_like_the_regexp() {
        assert_eq!(
            split_comparison("@.a == \"x\""),
            Some(("@.a ", "==", " \"x\""))
        );
        assert_eq!(split_comparison("@.a<>10"), Some(("@.a", "<>", "10")));
        assert_eq!(split_comparison("@.a"), None);
        assert_eq!(split_comparison("==x"), None);
        assert_eq!(split_comparison("@.a=="), Some(("@.a", "=", "=")));
        assert_eq!(split_comparison("@.a="), None);
    }

    #[test]
    fn slice_grammar() {
        let p = |v, k, d| Param {
            value: v,
            known: k,
            derived: d,
        };
        assert_eq!(
            slice_params("-1").unwrap(),
            [p(-1, true, false), p(0, true, true), p(0, false, false)]
        );
        assert_eq!(
            slice_params("1:-1").unwrap(),
            [p(1, true, false), p(-1, true, false), p(0, false, false)]
        );
        assert_eq!(
            slice_params(":").unwrap(),
            [p(0, false, false), p(0, false, false), p(0, false, false)]
        );
        assert_eq!(
            slice_params("-").unwrap_err().to_string(),
            "array index - is not a number"
        );
        assert_eq!(
            slice_params("a").unwrap_err().to_string(),
            "invalid array index a"
        );
        assert_eq!(
            slice_params("1:2:3:4").unwrap_err().to_string(),
            "invalid array index 1:2:3:4"
        );
        assert_eq!(
            slice_params("99999999999999999999")
                .unwrap_err()
                .to_string(),
            "array index 99999999999999999999 is not a number"
        );
    }
}
