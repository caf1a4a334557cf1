//! Evaluation of a parsed template over a JSON value (client-go's `FindResults` and `walk`).
//!
//! The semantics are Kubernetes' over decoded JSON (`map[string]interface{}` and friends):
//! `null` is skipped by fields, slices, wildcards and recursive descent; a wildcard or
//! recursive descent over a string visits its bytes (as numbers); recursive descent yields
//! every value that has members, elements or bytes, in document order, and not the leaves;
//! a filter compares one value with one value, numbers as `int64` (integers) or `float64`
//! (the rest) that never equal each other; a failure inside an existence filter only drops
//! the element (unless it left partial results behind, as in Kubernetes).

use std::borrow::Cow;

use serde_json::Value;

use super::EvalError;
use super::parse::{Node, Operator, Param};

/// The most values one evaluation may produce, counting every step's results (apiary's
/// bound against work quadratic in the document's size, e.g. `{..*..*}`).
pub const MAX_VALUES: usize = 2_000_000;

/// The deepest nesting of `{range}` blocks one evaluation follows (apiary's bound).
pub const MAX_RANGE_DEPTH: usize = 64;

/// The deepest nesting printed in an error message's rendering of a value.
const MAX_PRINT_DEPTH: usize = 16;

type V<'a> = Cow<'a, Value>;

/// An evaluation failure, with what Kubernetes' `walk` returns beside its error: an
/// existence filter keeps an element whose left side failed with partial results.
struct Fail {
    error: EvalError,
    partial: bool,
}

impl Fail {
    fn new(error: EvalError, partial: bool) -> Fail {
        Fail { error, partial }
    }

    /// A failure that stops everything (apiary's bounds).
    fn hard(&self) -> bool {
        matches!(
            self.error,
            EvalError::TooManyValues | EvalError::RangeTooDeep
        )
    }
}

type Step<'a> = Result<Vec<V<'a>>, Fail>;

/// Kubernetes' `FindResults` over the root nodes of a template.
pub(super) fn find_results<'a>(
    root: &[Node],
    allow_missing_keys: bool,
    data: &'a Value,
) -> Result<Vec<Vec<V<'a>>>, EvalError> {
    let mut state = State {
        allow_missing_keys,
        begin_range: 0,
        in_range: 0,
        end_range: 0,
        last_end: None,
        produced: 0,
    };
    state
        .find(root, 0, Cow::Borrowed(data), 0)
        .map_err(|f| f.error)
}

struct State {
    allow_missing_keys: bool,
    begin_range: usize,
    in_range: usize,
    end_range: usize,
    /// The absolute index of the root node that ended the last `range` block.
    last_end: Option<usize>,
    produced: usize,
}

/// `pick` applied to the value a result holds, borrowing when the result borrows.
fn lift<'a>(
    parent: &V<'a>,
    pick: impl for<'b> Fn(&'b Value) -> Option<&'b Value>,
) -> Option<V<'a>> {
    match parent {
        Cow::Borrowed(p) => pick(p).map(Cow::Borrowed),
        Cow::Owned(p) => pick(p).map(|c| Cow::Owned(c.clone())),
    }
}

/// Whether recursive descent yields the value: it has members, elements or bytes.
fn has_children(v: &Value) -> bool {
    match v {
        Value::Object(m) => !m.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::String(s) => !s.is_empty(),
        _ => false,
    }
}

impl State {
    fn charge(&mut self, n: usize) -> Result<(), Fail> {
        self.produced = self.produced.saturating_add(n);
        if self.produced > MAX_VALUES {
            return Err(Fail::new(EvalError::TooManyValues, false));
        }
        Ok(())
    }

    fn find<'a>(
        &mut self,
        nodes: &[Node],
        base: usize,
        data: V<'a>,
        depth: usize,
    ) -> Result<Vec<Vec<V<'a>>>, Fail> {
        let mut full = Vec::new();
        let mut i = 0;
        while i < nodes.len() {
            let results = self.walk(vec![data.clone()], &nodes[i])?;
            if self.end_range > 0 && self.end_range <= self.in_range {
                self.end_range -= 1;
                self.last_end = Some(base + i);
                break;
            }
            if self.begin_range > 0 {
                self.begin_range -= 1;
                if depth >= MAX_RANGE_DEPTH {
                    return Err(Fail::new(EvalError::RangeTooDeep, false));
                }
                self.in_range += 1;
                let body = &nodes[i + 1..];
                if results.is_empty() {
                    // The block still runs once so that its `end` is found.
                    self.find(body, base + i + 1, Cow::Owned(Value::Null), depth + 1)?;
                } else {
                    for value in results {
                        full.extend(self.find(body, base + i + 1, value, depth + 1)?);
                    }
                }
                self.in_range -= 1;
                if let Some(end) = self.last_end
                    && end > base + i
                    && end < base + nodes.len()
                {
                    i = end - base;
                }
                i += 1;
                continue;
            }
            full.push(results);
            i += 1;
        }
        Ok(full)
    }

    fn walk<'a>(&mut self, input: Vec<V<'a>>, node: &Node) -> Step<'a> {
        self.charge(1)?;
        let out = match node {
            Node::List(nodes) => self.list(input, nodes),
            Node::Text(t) => Ok(vec![Cow::Owned(Value::String(t.clone()))]),
            Node::Field(name) => self.field(input, name),
            Node::Array(params) => self.array(input, params),
            Node::Filter { left, right, op } => self.filter(input, left, right, op),
            Node::Int(i) => Ok(vec![Cow::Owned(Value::from(*i)); input.len()]),
            Node::Float(f) => Ok(vec![Cow::Owned(Value::from(*f)); input.len()]),
            Node::Bool(b) => Ok(vec![Cow::Owned(Value::Bool(*b)); input.len()]),
            Node::Wildcard => self.wildcard(input),
            Node::Recursive => self.recursive(input),
            Node::Union(members) => self.union(input, members),
            Node::Identifier(name) => self.identifier(input, name),
        }?;
        self.charge(out.len())?;
        Ok(out)
    }

    fn list<'a>(&mut self, input: Vec<V<'a>>, nodes: &[Node]) -> Step<'a> {
        let mut cur = input;
        for node in nodes {
            cur = self.walk(cur, node)?;
        }
        Ok(cur)
    }

    fn identifier<'a>(&mut self, input: Vec<V<'a>>, name: &str) -> Step<'a> {
        match name {
            "range" => {
                self.begin_range += 1;
                Ok(input)
            }
            "end" if self.in_range > 0 => {
                self.end_range += 1;
                Ok(Vec::new())
            }
            "end" => Err(Fail::new(EvalError::NotInRange, false)),
            other => Err(Fail::new(
                EvalError::UnrecognizedIdentifier(other.to_string()),
                !input.is_empty(),
            )),
        }
    }

    fn field<'a>(&mut self, input: Vec<V<'a>>, name: &str) -> Step<'a> {
        if input.is_empty() {
            return Ok(input);
        }
        let results: Vec<V<'a>> = input
            .iter()
            .filter_map(|v| lift(v, |x| x.as_object()?.get(name)))
            .collect();
        if results.is_empty() && !self.allow_missing_keys {
            return Err(Fail::new(EvalError::NotFound(name.to_string()), false));
        }
        Ok(results)
    }

    fn array<'a>(&mut self, input: Vec<V<'a>>, params: &[Param; 3]) -> Step<'a> {
        let mut result = Vec::new();
        for value in &input {
            let array = match value.as_ref() {
                Value::Null => continue,
                Value::Array(a) => a,
                other => {
                    return Err(Fail::new(EvalError::NotArray(go_type(other)), true));
                }
            };
            let length = array.len();
            let len = i64::try_from(length).unwrap_or(i64::MAX);
            let [mut start, mut end, step] = *params;
            if !start.known {
                start.value = 0;
            }
            if start.value < 0 {
                start.value = start.value.wrapping_add(len);
            }
            if !end.known {
                end.value = len;
            }
            if end.value < 0 || (end.value == 0 && end.derived) {
                end.value = end.value.wrapping_add(len);
            }
            if end.value == start.value {
                // Zero elements requested: Kubernetes stops here, with what it has so far.
                return Ok(result);
            }
            let oob = |index| Fail::new(EvalError::IndexOutOfBounds { index, length }, true);
            if start.value >= len || start.value < 0 {
                return Err(oob(start.value));
            }
            if end.value > len || end.value < 0 {
                return Err(oob(end.value.wrapping_sub(1)));
            }
            if start.value > end.value {
                return Err(Fail::new(
                    EvalError::StartAfterEnd {
                        start: start.value,
                        end: end.value,
                    },
                    true,
                ));
            }
            let step = if step.known {
                if step.value <= 0 {
                    return Err(Fail::new(EvalError::Step, true));
                }
                usize::try_from(step.value).unwrap_or(usize::MAX)
            } else {
                1
            };
            // Both bounds are within 0..=length here.
            let (from, to) = (start.value as usize, end.value as usize);
            for i in (from..to).step_by(step) {
                self.charge(1)?;
                result.extend(lift(value, |x| x.as_array()?.get(i)));
            }
        }
        Ok(result)
    }

    fn union<'a>(&mut self, input: Vec<V<'a>>, members: &[Vec<Node>]) -> Step<'a> {
        let mut result = Vec::new();
        for member in members {
            let partial = !input.is_empty();
            let values = self
                .list(input.clone(), member)
                .map_err(|f| Fail::new(f.error, partial))?;
            result.extend(values);
        }
        Ok(result)
    }

    fn wildcard<'a>(&mut self, input: Vec<V<'a>>) -> Step<'a> {
        let mut results = Vec::new();
        for value in &input {
            let count = match value.as_ref() {
                Value::Object(m) => m.len(),
                Value::Array(a) => a.len(),
                Value::String(s) => s.len(),
                _ => 0,
            };
            self.charge(count)?;
            match value {
                Cow::Borrowed(Value::Object(m)) => results.extend(m.values().map(Cow::Borrowed)),
                Cow::Borrowed(Value::Array(a)) => results.extend(a.iter().map(Cow::Borrowed)),
                Cow::Owned(Value::Object(m)) => results.extend(m.values().cloned().map(Cow::Owned)),
                Cow::Owned(Value::Array(a)) => results.extend(a.iter().cloned().map(Cow::Owned)),
                _ => {
                    if let Value::String(s) = value.as_ref() {
                        results.extend(s.bytes().map(|b| Cow::Owned(Value::from(b))));
                    }
                }
            }
        }
        Ok(results)
    }

    fn recursive<'a>(&mut self, input: Vec<V<'a>>) -> Step<'a> {
        let mut result = Vec::new();
        for value in input {
            match value {
                Cow::Borrowed(v) => {
                    for found in self.descend(v)? {
                        result.push(Cow::Borrowed(found));
                    }
                }
                Cow::Owned(v) => {
                    for found in self.descend(&v)? {
                        result.push(Cow::Owned(found.clone()));
                    }
                }
            }
        }
        Ok(result)
    }

    /// The values below and including `root` that have children, in document order (a
    /// pre-order walk with a stack of its own).
    fn descend<'v>(&mut self, root: &'v Value) -> Result<Vec<&'v Value>, Fail> {
        let mut found = Vec::new();
        let mut stack = vec![root];
        while let Some(v) = stack.pop() {
            if !has_children(v) {
                continue;
            }
            self.charge(1)?;
            found.push(v);
            match v {
                Value::Object(m) => stack.extend(m.values().rev()),
                Value::Array(a) => stack.extend(a.iter().rev()),
                _ => {}
            }
        }
        Ok(found)
    }

    fn filter<'a>(
        &mut self,
        input: Vec<V<'a>>,
        left: &[Node],
        right: &[Node],
        op: &Operator,
    ) -> Step<'a> {
        let mut results = Vec::new();
        for value in &input {
            let elements: Vec<V<'a>> = match value {
                Cow::Borrowed(Value::Array(a)) => a.iter().map(Cow::Borrowed).collect(),
                Cow::Owned(Value::Array(a)) => a.iter().cloned().map(Cow::Owned).collect(),
                other => {
                    return Err(Fail::new(EvalError::NotFilterable(go_print(other)), true));
                }
            };
            self.charge(elements.len())?;
            for element in elements {
                let lefts = self.list(vec![element.clone()], left);
                if *op == Operator::Exists {
                    let keep = match lefts {
                        Ok(l) => !l.is_empty(),
                        Err(f) if f.hard() => return Err(f),
                        Err(f) => f.partial,
                    };
                    if keep {
                        results.push(element);
                    }
                    continue;
                }
                let lefts = lefts?;
                let left_value = match lefts.as_slice() {
                    [] => continue,
                    [one] => one,
                    _ => return Err(Fail::new(EvalError::CompareMany, true)),
                };
                let rights = self.list(vec![element.clone()], right)?;
                let right_value = match rights.as_slice() {
                    [] => continue,
                    [one] => one,
                    _ => return Err(Fail::new(EvalError::CompareMany, true)),
                };
                let pass = compare(op, left_value, right_value)
                    .map_err(|e| Fail::new(e, !results.is_empty()))?;
                if pass {
                    results.push(element);
                }
            }
        }
        Ok(results)
    }
}

/// A value as Go's comparison functions see it.
#[derive(Clone, Copy, PartialEq)]
enum Basic<'v> {
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(&'v str),
}

fn basic(v: &Value) -> Result<Basic<'_>, EvalError> {
    match v {
        Value::Bool(b) => Ok(Basic::Bool(*b)),
        Value::String(s) => Ok(Basic::Str(s)),
        Value::Number(n) => Ok(match n.as_i64() {
            Some(i) => Basic::Int(i),
            // Decoded JSON holds every other number as a float64.
            None => Basic::Float(n.as_f64().unwrap_or(f64::NAN)),
        }),
        _ => Err(EvalError::BadComparisonType),
    }
}

/// Go's template `eq`.
fn equal(a: &Value, b: &Value) -> Result<bool, EvalError> {
    let (a, b) = (basic(a)?, basic(b)?);
    match (a, b) {
        (Basic::Bool(x), Basic::Bool(y)) => Ok(x == y),
        (Basic::Int(x), Basic::Int(y)) => Ok(x == y),
        (Basic::Float(x), Basic::Float(y)) => Ok(x == y),
        (Basic::Str(x), Basic::Str(y)) => Ok(x == y),
        _ => Err(EvalError::BadComparison),
    }
}

/// Go's template `lt`.
fn less(a: &Value, b: &Value) -> Result<bool, EvalError> {
    let (a, b) = (basic(a)?, basic(b)?);
    match (a, b) {
        (Basic::Bool(_), Basic::Bool(_)) => Err(EvalError::BadComparisonType),
        (Basic::Int(x), Basic::Int(y)) => Ok(x < y),
        (Basic::Float(x), Basic::Float(y)) => Ok(x < y),
        (Basic::Str(x), Basic::Str(y)) => Ok(x < y),
        _ => Err(EvalError::BadComparison),
    }
}

fn compare(op: &Operator, a: &Value, b: &Value) -> Result<bool, EvalError> {
    match op {
        Operator::Eq => equal(a, b),
        Operator::Ne => equal(a, b).map(|e| !e),
        Operator::Lt => less(a, b),
        Operator::Le => Ok(less(a, b)? || equal(a, b)?),
        Operator::Gt => Ok(!(less(a, b)? || equal(a, b)?)),
        Operator::Ge => less(a, b).map(|l| !l),
        Operator::Exists => Ok(true),
        Operator::Other(o) => Err(EvalError::UnrecognizedOperator(o.clone())),
    }
}

/// The Go type of a decoded JSON value.
fn go_type(v: &Value) -> String {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
    .to_string()
}

/// A decoded JSON value as Go's `%v` prints it (`map[a:1 b:[x y]]`).
fn go_print(v: &Value) -> String {
    let mut out = String::new();
    go_print_into(v, &mut out, 0);
    out
}

fn go_print_into(v: &Value, out: &mut String, depth: usize) {
    if depth > MAX_PRINT_DEPTH {
        out.push_str("...");
        return;
    }
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_i64() {
            Some(i) => out.push_str(&i.to_string()),
            None => out.push_str(&go_float(n.as_f64().unwrap_or(f64::NAN))),
        },
        Value::String(s) => out.push_str(s),
        Value::Array(a) => {
            out.push('[');
            for (i, e) in a.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                go_print_into(e, out, depth + 1);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push_str("map[");
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                go_print_into(&m[k.as_str()], out, depth + 1);
            }
            out.push(']');
        }
    }
}

/// Go's `%v` of a float64: the shortest digits, with an exponent below 1e-4 and from 1e21.
pub(super) fn go_float(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return format!("{f}");
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-4..21).contains(&exp) {
        format!("{f}")
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
    }
}
