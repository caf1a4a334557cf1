//! Kubernetes' JSONPath (k8s.io/client-go/util/jsonpath): the language of a
//! CustomResourceDefinition's `additionalPrinterColumns[].jsonPath`, of `kubectl -o jsonpath`
//! and of custom-columns.
//!
//! [`JsonPath::parse_printer_column`] parses a column's path the way the extension server
//! does (wrapped in braces: `.status.conditions[?(@.type=="Ready")].status` becomes
//! `{.status.conditions[?(@.type=="Ready")].status}`); [`JsonPath::parse_template`] parses a
//! whole template (`{range .items[*]}{.metadata.name}{"\n"}{end}`); [`JsonPath::parse`]
//! takes either, wrapping text that does not start with `{`. [`JsonPath::evaluate`] and
//! [`JsonPath::find_results`] run a path over a JSON value with Kubernetes' semantics;
//! [`JsonPath::first`] is the value a Table cell shows.
//!
//! Missing keys give no result, as with Kubernetes' `AllowMissingKeys(true)` (which printer
//! columns use); [`JsonPath::allow_missing_keys`] turns that off to get Kubernetes'
//! `<key> is not found` errors. Evaluation does bounded work: at most [`MAX_VALUES`] values
//! are produced over one evaluation (recursive descent and wildcards after recursive descent
//! could otherwise produce a number of values quadratic in the document's size) and `range`
//! blocks nest at most [`MAX_RANGE_DEPTH`] deep; recursive descent walks the document with a
//! stack of its own, so deep documents do not exhaust the thread's stack.

mod evaluate;
mod parse;
mod print;

use std::borrow::Cow;

use serde_json::Value;

pub use evaluate::{MAX_RANGE_DEPTH, MAX_VALUES};
pub use parse::MAX_NESTING;
pub use print::to_text;

/// Why a template does not parse; the messages are Kubernetes'.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// An action's `{` has no `}` (or a line ends inside it).
    #[error("unclosed action")]
    UnclosedAction,
    /// A character that cannot start anything inside an action.
    #[error("unrecognized character in action: {}", go_rune(*.0))]
    UnrecognizedCharacter(char),
    /// `..` right after `..`.
    #[error("invalid multiple recursive descent")]
    MultipleRecursive,
    /// A token of signs, digits and dots that is neither an integer nor a float.
    #[error("cannot parse number {0}")]
    Number(String),
    /// A `[` without its `]`.
    #[error("unterminated array")]
    UnterminatedArray,
    /// Bracketed text that is neither a quoted key, a union nor a slice.
    #[error("invalid array index {0}")]
    InvalidArrayIndex(String),
    /// A slice bound that is not a (64-bit) integer.
    #[error("array index {0} is not a number")]
    ArrayIndexNotNumber(String),
    /// A `[?(` without its `)`.
    #[error("unterminated filter")]
    UnterminatedFilter,
    /// A filter's `)` not followed by `]`.
    #[error("unclosed array expect ]")]
    UnclosedArray,
    /// A quote without its closing quote.
    #[error("unterminated quoted string")]
    UnterminatedQuote,
    /// Quoted text with an invalid escape (the quoted text, quotes included).
    #[error("unquote string {0} error invalid syntax")]
    Unquote(String),
    /// Sub-templates nested deeper than [`MAX_NESTING`] (apiary's bound; Kubernetes' grammar
    /// does not nest that deep).
    #[error("jsonpath nested too deeply")]
    TooDeep,
}

/// Why evaluating a path over a value failed; the messages are Kubernetes' (types are named
/// as Go names the types of decoded JSON: `map[string]interface {}`, `[]interface {}`,
/// `string`, `int64`, `float64`, `bool`).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// A bare word other than `range` and `end`.
    #[error("unrecognized identifier {0}")]
    UnrecognizedIdentifier(String),
    /// `{end}` outside `{range}`.
    #[error("not in range, nothing to end")]
    NotInRange,
    /// A slice applied to something that is not an array (its Go type).
    #[error("{0} is not array or slice")]
    NotArray(String),
    /// A slice bound outside the array.
    #[error("array index out of bounds: index {index}, length {length}")]
    IndexOutOfBounds {
        /// The offending index.
        index: i64,
        /// The array's length.
        length: usize,
    },
    /// A slice whose start is after its end.
    #[error("starting index {start} is greater than ending index {end}")]
    StartAfterEnd {
        /// The start index.
        start: i64,
        /// The end index.
        end: i64,
    },
    /// A slice step of zero or less.
    #[error("step must be > 0")]
    Step,
    /// A field that no value has (only when missing keys are not allowed).
    #[error("{0} is not found")]
    NotFound(String),
    /// A filter applied to something that is not an array (the value as Go prints it).
    #[error("{0} is not array or slice and cannot be filtered")]
    NotFilterable(String),
    /// A filter operand that yields more than one value.
    #[error("can only compare one element at a time")]
    CompareMany,
    /// A filter operator other than `==`, `!=`, `<`, `<=`, `>`, `>=`.
    #[error("unrecognized filter operator {0}")]
    UnrecognizedOperator(String),
    /// A comparison of something other than a string, number or boolean.
    #[error("invalid type for comparison")]
    BadComparisonType,
    /// A comparison of values of different types.
    #[error("incompatible types for comparison")]
    BadComparison,
    /// The evaluation produced more than [`MAX_VALUES`] values (apiary's bound).
    #[error("jsonpath evaluation produces more than {MAX_VALUES} values")]
    TooManyValues,
    /// `range` blocks nested deeper than [`MAX_RANGE_DEPTH`] (apiary's bound).
    #[error("jsonpath range blocks nested more than {MAX_RANGE_DEPTH} deep")]
    RangeTooDeep,
}

/// Go's `%#U` of a rune: `U+002A '*'`, or `U+0009` for a rune Go does not print.
fn go_rune(c: char) -> String {
    let printable = !c.is_control()
        && (c == ' ' || !c.is_whitespace())
        && !matches!(c as u32, 0xE000..=0xF8FF | 0xF0000..=0x10FFFF | 0xFFF0..=0xFFFF);
    if printable {
        format!("U+{:04X} '{c}'", c as u32)
    } else {
        format!("U+{:04X}", c as u32)
    }
}

/// A parsed Kubernetes JSONPath template.
#[derive(Clone, Debug, PartialEq)]
pub struct JsonPath {
    root: Vec<parse::Node>,
    allow_missing_keys: bool,
}

impl JsonPath {
    /// Parses a path as written in a CRD's printer column or a kubectl flag: text that starts
    /// with `{` is a template (see [`JsonPath::parse_template`]); other text is one action
    /// and is wrapped in braces (`.spec.replicas` is `{.spec.replicas}`).
    pub fn parse(text: &str) -> Result<JsonPath, ParseError> {
        if text.starts_with('{') {
            JsonPath::parse_template(text)
        } else {
            JsonPath::parse_printer_column(text)
        }
    }

    /// Parses an `additionalPrinterColumns[].jsonPath` exactly as the extension server does:
    /// `{` + `text` + `}` parsed as a template. This is the parse CRD validation must pass.
    pub fn parse_printer_column(text: &str) -> Result<JsonPath, ParseError> {
        JsonPath::parse_template(&format!("{{{text}}}"))
    }

    /// Parses a template: literal text with actions in braces, as Kubernetes' `Parse`.
    pub fn parse_template(text: &str) -> Result<JsonPath, ParseError> {
        Ok(JsonPath {
            root: parse::parse_template(text)?,
            allow_missing_keys: true,
        })
    }

    /// Sets whether a field no value has yields nothing (`true`, the default, as printer
    /// columns use) or fails with `<field> is not found` (`false`, Kubernetes' default).
    #[must_use]
    pub fn allow_missing_keys(mut self, allow: bool) -> JsonPath {
        self.allow_missing_keys = allow;
        self
    }

    /// The results of each top-level piece of the template in turn (Kubernetes'
    /// `FindResults`): one list per text or action, and one per action of each pass of a
    /// `range` block. Literal text, numbers and the bytes a wildcard finds in a string are
    /// owned; everything else borrows from `data`.
    pub fn find_results<'a>(&self, data: &'a Value) -> Result<Vec<Vec<Cow<'a, Value>>>, EvalError> {
        evaluate::find_results(&self.root, self.allow_missing_keys, data)
    }

    /// Every result of the template, in order (the lists of [`JsonPath::find_results`] one
    /// after another).
    pub fn evaluate<'a>(&self, data: &'a Value) -> Result<Vec<Cow<'a, Value>>, EvalError> {
        Ok(self.find_results(data)?.into_iter().flatten().collect())
    }

    /// The template's text, as Kubernetes' `Execute` writes it: each piece's results as
    /// [`to_text`] prints them, separated by spaces, one piece after another.
    pub fn execute(&self, data: &Value) -> Result<String, EvalError> {
        let mut out = String::new();
        for piece in self.find_results(data)? {
            let words: Vec<String> = piece.iter().map(|v| to_text(v)).collect();
            out.push_str(&words.join(" "));
        }
        Ok(out)
    }

    /// The value a Table cell shows: the first result of the first piece of the template, or
    /// `None` when evaluation fails or that piece yields nothing (as the extension server's
    /// table converter decides).
    pub fn first<'a>(&self, data: &'a Value) -> Option<Cow<'a, Value>> {
        self.find_results(data)
            .ok()?
            .into_iter()
            .next()?
            .into_iter()
            .next()
    }
}

#[cfg(test)]
mod tests;
