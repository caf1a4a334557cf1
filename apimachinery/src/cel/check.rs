//! The type check behind admission policies' `status.typeChecking`: an expression checked
//! against the structure of the kinds it will see, reporting what cel-go's checker reports in
//! Kubernetes' environment for the same mistakes, with its messages:
//!
//! - `undefined field 'replica'`: a field the kind's structure does not have;
//! - `found no matching overload for '_>_' applied to '(int, string)'`: an operator or a
//!   standard function (`size`, `startsWith`, `endsWith`, `contains`, `matches`) applied to
//!   operands of types it has no overload for;
//! - `type 'int' does not support field selection`;
//! - `expression of type 'int' cannot be range of a comprehension (must be list, map, or
//!   dynamic)`;
//! - `undeclared reference to 'obj' (in container '')`: a variable that is not declared.
//!
//! Types come from the kinds' structures (a schema `integer` is `int`, `number` is
//! `double`, …); values whose CEL type is not known here (free-form JSON, `Time`,
//! `Quantity`, `IntOrString`, and every variable but `object` and `oldObject`) are `dyn` and
//! check with anything, as in cel-go. Numbers compare across types, as Kubernetes' CEL
//! environment allows. A mistake is reported only where its message can name every type as
//! cel-go does (so not for struct-typed operands); the check never reports what cel-go would
//! accept.

use super::CelExpression;
use crate::structure::{Scalar, Shape, StructShape};
use cel::common::ast::{CallExpr, EntryExpr, Expr, operators};

/// One mistake the check found: cel-go's message and the byte offset in the expression's
/// text of the token cel-go reports it at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TypeError {
    /// The message, as cel-go words it.
    pub message: String,
    /// The offset in the expression's text of the token the mistake is reported at.
    pub offset: usize,
}

/// The CEL type of a value, as far as the check knows it.
#[derive(Clone, Debug)]
enum Ty {
    Dyn,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Struct(&'static StructShape),
    List(Box<Ty>),
    /// A map with string keys (a schema's map).
    Map(Box<Ty>),
}

impl PartialEq for Ty {
    fn eq(&self, other: &Ty) -> bool {
        match (self, other) {
            // Structs are the same type when they are the same static.
            (Ty::Struct(a), Ty::Struct(b)) => std::ptr::eq(*a, *b),
            (Ty::List(a), Ty::List(b)) | (Ty::Map(a), Ty::Map(b)) => a == b,
            _ => std::mem::discriminant(self) == std::mem::discriminant(other),
        }
    }
}

impl Ty {
    fn of(shape: Shape) -> Ty {
        match shape {
            Shape::Unknown | Shape::Scalar(Scalar::Other) => Ty::Dyn,
            Shape::Scalar(Scalar::Bool) => Ty::Bool,
            Shape::Scalar(Scalar::Int) => Ty::Int,
            Shape::Scalar(Scalar::Double) => Ty::Double,
            Shape::Scalar(Scalar::String) => Ty::String,
            Shape::Struct(s) => Ty::Struct(s),
            Shape::List(l) => Ty::List(Box::new(Ty::of(l.items))),
            Shape::Map(m) => Ty::Map(Box::new(Ty::of(m.values))),
        }
    }

    fn numeric(&self) -> bool {
        matches!(self, Ty::Int | Ty::Uint | Ty::Double)
    }

    /// A type that is neither `dyn` nor an aggregate.
    fn primitive(&self) -> bool {
        matches!(
            self,
            Ty::Null | Ty::Bool | Ty::Int | Ty::Uint | Ty::Double | Ty::String | Ty::Bytes
        )
    }

    /// The name cel-go prints, or `None` for types whose name the check does not know
    /// (structs, whose names Kubernetes derives from the schema).
    fn name(&self) -> Option<String> {
        Some(match self {
            Ty::Dyn => "dyn".into(),
            Ty::Null => "null_type".into(),
            Ty::Bool => "bool".into(),
            Ty::Int => "int".into(),
            Ty::Uint => "uint".into(),
            Ty::Double => "double".into(),
            Ty::String => "string".into(),
            Ty::Bytes => "bytes".into(),
            Ty::Struct(_) => return None,
            Ty::List(t) => format!("list({})", t.name()?),
            Ty::Map(t) => format!("map(string, {})", t.name()?),
        })
    }
}

/// The result type of an operator or standard function applied to `args`, `Err(())` when it
/// has no overload for them; `None` for functions the check does not know.
fn overload(func: &str, receiver: bool, args: &[Ty]) -> Option<Result<Ty, ()>> {
    use Ty::*;
    if args.contains(&Dyn) {
        return Some(Ok(match func {
            operators::EQUALS
            | operators::NOT_EQUALS
            | operators::LESS
            | operators::LESS_EQUALS
            | operators::GREATER
            | operators::GREATER_EQUALS
            | operators::LOGICAL_AND
            | operators::LOGICAL_OR
            | operators::LOGICAL_NOT
            | operators::IN
            | "startsWith"
            | "endsWith"
            | "contains"
            | "matches" => Bool,
            "size" => Int,
            _ => Dyn,
        }));
    }
    let same = |allowed: &[Ty]| args.windows(2).all(|w| w[0] == w[1]) && allowed.contains(&args[0]);
    let found = |ok: bool, t: Ty| if ok { Ok(t) } else { Err(()) };
    Some(match (func, args) {
        (operators::EQUALS | operators::NOT_EQUALS, [a, b]) => found(
            a == b
                || (a.numeric() && b.numeric())
                || *a == Null
                || *b == Null
                || !a.primitive()
                || !b.primitive(),
            Bool,
        ),
        (
            operators::LESS
            | operators::LESS_EQUALS
            | operators::GREATER
            | operators::GREATER_EQUALS,
            [a, b],
        ) => found(
            (a.numeric() && b.numeric()) || (a == b && matches!(a, String | Bytes | Bool)),
            Bool,
        ),
        (operators::ADD, [a, b]) => match (a, b) {
            (List(x), List(y)) => Ok(List(Box::new(if x == y { *x.clone() } else { Dyn }))),
            _ => found(same(&[Int, Uint, Double, String, Bytes]), a.clone()),
        },
        (operators::SUBSTRACT | operators::MULTIPLY | operators::DIVIDE, [a, _]) => {
            found(same(&[Int, Uint, Double]), a.clone())
        }
        (operators::MODULO, [a, _]) => found(same(&[Int, Uint]), a.clone()),
        (operators::NEGATE, [a]) => found(matches!(a, Int | Double), a.clone()),
        (operators::LOGICAL_NOT, [a]) => found(*a == Bool, Bool),
        (operators::LOGICAL_AND | operators::LOGICAL_OR, [a, b]) => {
            found(*a == Bool && *b == Bool, Bool)
        }
        (operators::CONDITIONAL, [c, a, b]) => {
            found(*c == Bool, if a == b { a.clone() } else { Dyn })
        }
        (operators::INDEX, [a, i]) => match a {
            List(t) => found(matches!(i, Int | Uint), *t.clone()),
            Map(t) => found(*i == String, *t.clone()),
            Struct(_) => Ok(Dyn),
            _ => Err(()),
        },
        (operators::IN, [_, c]) => found(matches!(c, List(_) | Map(_)), Bool),
        ("size", [a]) => found(matches!(a, String | Bytes | List(_) | Map(_)), Int),
        ("startsWith" | "endsWith" | "contains" | "matches", [a, b]) if receiver => {
            found(*a == String && *b == String, Bool)
        }
        ("int", [_]) => Ok(Int),
        ("uint", [_]) => Ok(Uint),
        ("double", [_]) => Ok(Double),
        ("string", [_]) => Ok(String),
        ("bytes", [_]) => Ok(Bytes),
        ("bool", [_]) => Ok(Bool),
        ("dyn", [_]) => Ok(Dyn),
        _ => return None,
    })
}

/// The token an operator is written with.
fn operator_token(func: &str) -> Option<&'static str> {
    Some(match func {
        operators::EQUALS => "==",
        operators::NOT_EQUALS => "!=",
        operators::LESS => "<",
        operators::LESS_EQUALS => "<=",
        operators::GREATER => ">",
        operators::GREATER_EQUALS => ">=",
        operators::ADD => "+",
        operators::SUBSTRACT | operators::NEGATE => "-",
        operators::MULTIPLY => "*",
        operators::DIVIDE => "/",
        operators::MODULO => "%",
        operators::LOGICAL_AND => "&&",
        operators::LOGICAL_OR => "||",
        operators::LOGICAL_NOT => "!",
        operators::CONDITIONAL => "?",
        operators::INDEX => "[",
        operators::IN => "in",
        _ => return None,
    })
}

/// The tokens of an expression's text (strings, numbers and comments are skipped, since no
/// mistake is reported at them), each with its offset.
fn tokens(source: &str) -> Vec<(&str, usize)> {
    let bytes = source.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
        } else if source[i..].starts_with("//") {
            i = source[i..].find('\n').map_or(bytes.len(), |n| i + n);
        } else if c == b'\'' || c == b'"' {
            i = skip_string(bytes, i, false);
        } else if c.is_ascii_digit() {
            i += 1;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric()
                    || (bytes[i] == b'.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
                    || (matches!(bytes[i], b'+' | b'-') && matches!(bytes[i - 1], b'e' | b'E')))
            {
                i += 1;
            }
        } else if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let word = &source[start..i];
            let prefix = word.len() <= 2 && word.chars().all(|c| "rRbB".contains(c));
            if prefix && matches!(bytes.get(i), Some(b'\'' | b'"')) {
                i = skip_string(bytes, i, word.contains(['r', 'R']));
            } else {
                out.push((word, start));
            }
        } else {
            let two = source.get(i..i + 2).unwrap_or("");
            let len = if ["==", "!=", "<=", ">=", "&&", "||"].contains(&two) {
                2
            } else {
                source[i..].chars().next().map_or(1, char::len_utf8)
            };
            out.push((&source[i..i + len], start));
            i += len;
        }
    }
    out
}

/// The offset just past the string literal whose quote is at `i`.
fn skip_string(bytes: &[u8], i: usize, raw: bool) -> usize {
    let quote = bytes[i];
    let triple = bytes.get(i..i + 3) == Some(&[quote; 3][..]);
    let mut j = if triple { i + 3 } else { i + 1 };
    while j < bytes.len() {
        if bytes[j] == b'\\' && !raw {
            j += 2;
        } else if triple && bytes.get(j..j + 3) == Some(&[quote; 3][..]) {
            return j + 3;
        } else if !triple && bytes[j] == quote {
            return j + 1;
        } else {
            j += 1;
        }
    }
    bytes.len()
}

/// The check of one expression: a walk of its syntax tree in the order it is written, so
/// that each node's token is the next one of its kind in the text.
struct Check<'a> {
    tokens: Vec<(&'a str, usize)>,
    /// The index of the next token a search starts at.
    cursor: usize,
    roots: &'a [(&'a str, Option<&'static StructShape>)],
    /// Comprehension variables with their types.
    scopes: Vec<(String, Ty)>,
    found: Vec<TypeError>,
}

impl Check<'_> {
    /// The offset of the next token `text`, moving the cursor past it.
    fn next(&mut self, text: &str) -> Option<usize> {
        let i = (self.cursor..self.tokens.len()).find(|&i| self.tokens[i].0 == text)?;
        self.cursor = i + 1;
        Some(self.tokens[i].1)
    }

    /// The offset of the next `.` followed by `name`, moving the cursor past both.
    fn next_selection(&mut self, name: &str) -> Option<usize> {
        let i = (self.cursor..self.tokens.len().saturating_sub(1))
            .find(|&i| self.tokens[i].0 == "." && self.tokens[i + 1].0 == name)?;
        self.cursor = i + 2;
        Some(self.tokens[i].1)
    }

    fn report(&mut self, offset: Option<usize>, message: String) {
        self.found.push(TypeError {
            message,
            offset: offset.unwrap_or(0),
        });
    }

    /// The type of `e`, reporting the mistakes in it; with the offset of its own token.
    fn check(&mut self, e: &cel::IdedExpr) -> (Ty, Option<usize>) {
        match &e.expr {
            Expr::Literal(v) => {
                use cel::common::ast::LiteralValue as Val;
                let t = match v {
                    Val::String(_) => Ty::String,
                    Val::Boolean(_) => Ty::Bool,
                    Val::Int(_) => Ty::Int,
                    Val::UInt(_) => Ty::Uint,
                    Val::Double(_) => Ty::Double,
                    Val::Bytes(_) => Ty::Bytes,
                    Val::Null => Ty::Null,
                };
                (t, None)
            }
            Expr::Ident(name) => {
                if let Some((_, t)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
                    return (t.clone(), None);
                }
                let offset = self.next(name);
                match self.roots.iter().find(|(n, _)| n == name) {
                    Some((_, Some(s))) => (Ty::Struct(s), offset),
                    Some((_, None)) => (Ty::Dyn, offset),
                    None if is_type_name(name) => (Ty::Dyn, offset),
                    None => {
                        self.report(
                            offset,
                            format!("undeclared reference to '{name}' (in container '')"),
                        );
                        (Ty::Dyn, offset)
                    }
                }
            }
            Expr::Select(sel) => {
                let (operand, _) = self.check(&sel.operand);
                let offset = self.next_selection(&sel.field);
                let t = match operand {
                    Ty::Struct(s) => match s.field(&sel.field) {
                        Some(f) => Ty::of(f.shape),
                        // Every object has these, though the structs leave them implicit.
                        None if matches!(sel.field.as_str(), "apiVersion" | "kind") => Ty::String,
                        None => {
                            self.report(offset, format!("undefined field '{}'", sel.field));
                            Ty::Dyn
                        }
                    },
                    Ty::Map(t) => *t,
                    Ty::Dyn => Ty::Dyn,
                    other => {
                        if let Some(name) = other.name() {
                            self.report(
                                offset,
                                format!("type '{name}' does not support field selection"),
                            );
                        }
                        Ty::Dyn
                    }
                };
                (if sel.test { Ty::Bool } else { t }, offset)
            }
            Expr::Call(c) => self.call(c),
            Expr::List(l) => {
                let elements: Vec<Ty> = l.elements.iter().map(|x| self.check(x).0).collect();
                let item = match elements.split_first() {
                    Some((first, rest)) if rest.iter().all(|t| t == first) => first.clone(),
                    _ => Ty::Dyn,
                };
                (Ty::List(Box::new(item)), None)
            }
            Expr::Map(m) => {
                for entry in &m.entries {
                    match &entry.expr {
                        EntryExpr::MapEntry(me) => {
                            self.check(&me.key);
                            self.check(&me.value);
                        }
                        EntryExpr::StructField(f) => {
                            self.check(&f.value);
                        }
                    }
                }
                (Ty::Dyn, None)
            }
            Expr::Struct(st) => {
                for entry in &st.entries {
                    match &entry.expr {
                        EntryExpr::MapEntry(me) => {
                            self.check(&me.key);
                            self.check(&me.value);
                        }
                        EntryExpr::StructField(f) => {
                            self.check(&f.value);
                        }
                    }
                }
                (Ty::Dyn, None)
            }
            Expr::Comprehension(c) => {
                let (range, offset) = self.check(&c.iter_range);
                let (item, second) = match &range {
                    Ty::List(t) => (*t.clone(), *t.clone()),
                    Ty::Map(t) => (Ty::String, *t.clone()),
                    Ty::Dyn | Ty::Struct(_) => (Ty::Dyn, Ty::Dyn),
                    other => {
                        if let Some(name) = other.name() {
                            self.report(
                                offset,
                                format!(
                                    "expression of type '{name}' cannot be range of a \
                                     comprehension (must be list, map, or dynamic)"
                                ),
                            );
                        }
                        (Ty::Dyn, Ty::Dyn)
                    }
                };
                let (accu, _) = self.check(&c.accu_init);
                let scopes = self.scopes.len();
                match &c.iter_var2 {
                    // Two variables: a list's index and item, or a map's key and value.
                    Some(v2) => {
                        let first = if matches!(range, Ty::List(_)) {
                            Ty::Int
                        } else {
                            item
                        };
                        self.scopes.push((c.iter_var.clone(), first));
                        self.scopes.push((v2.clone(), second));
                    }
                    None => self.scopes.push((c.iter_var.clone(), item)),
                }
                self.scopes.push((c.accu_var.clone(), accu));
                self.check(&c.loop_cond);
                self.check(&c.loop_step);
                let (result, _) = self.check(&c.result);
                self.scopes.truncate(scopes);
                (result, offset)
            }
            Expr::Unspecified => (Ty::Dyn, None),
        }
    }

    fn call(&mut self, c: &CallExpr) -> (Ty, Option<usize>) {
        // A call the parser wrote while expanding a macro (it reads the macro's accumulator,
        // whose name starts with '@'): it has no token, and its mistakes are not the user's.
        let synthesized = c.func_name == operators::NOT_STRICTLY_FALSE
            || c.args
                .iter()
                .any(|a| matches!(&a.expr, Expr::Ident(n) if n.starts_with('@')));
        let mut args = Vec::with_capacity(c.args.len() + 1);
        let offset;
        if let Some(token) = operator_token(&c.func_name) {
            // Prefix operators come before their operand; the others after the first.
            let mut rest = c.args.iter();
            if matches!(
                c.func_name.as_str(),
                operators::LOGICAL_NOT | operators::NEGATE
            ) {
                offset = if synthesized { None } else { self.next(token) };
            } else {
                if let Some(first) = rest.next() {
                    args.push(self.check(first).0);
                }
                offset = if synthesized { None } else { self.next(token) };
            }
            args.extend(rest.map(|a| self.check(a).0).collect::<Vec<_>>());
        } else if let Some(target) = &c.target {
            args.push(self.check(target).0);
            offset = self
                .next_selection(&c.func_name)
                .and_then(|_| self.next("("));
            args.extend(c.args.iter().map(|a| self.check(a).0).collect::<Vec<_>>());
        } else {
            offset = self.next(&c.func_name).and_then(|_| self.next("("));
            args.extend(c.args.iter().map(|a| self.check(a).0).collect::<Vec<_>>());
        }
        let receiver = c.target.is_some();
        match overload(&c.func_name, receiver, &args) {
            Some(Ok(t)) => (t, offset),
            Some(Err(())) => {
                let names: Option<Vec<String>> = args.iter().map(Ty::name).collect();
                if let (false, Some(names)) = (synthesized, names) {
                    let signature = if receiver {
                        format!("{}.({})", names[0], names[1..].join(", "))
                    } else {
                        format!("({})", names.join(", "))
                    };
                    self.report(
                        offset,
                        format!(
                            "found no matching overload for '{}' applied to '{signature}'",
                            c.func_name
                        ),
                    );
                }
                (Ty::Dyn, offset)
            }
            None => (Ty::Dyn, offset),
        }
    }
}

/// Names CEL declares as types, which are values too (`type(x) == int`).
fn is_type_name(name: &str) -> bool {
    matches!(
        name,
        "int"
            | "uint"
            | "double"
            | "bool"
            | "string"
            | "bytes"
            | "list"
            | "map"
            | "null_type"
            | "type"
            | "dyn"
    )
}

impl CelExpression {
    /// The mistakes cel-go's checker would report in the expression (whose text is
    /// `source`), given the variables it may read: each with the structure of its value, or
    /// `None` when that is not known (`dyn`). Ordered by where they are written.
    pub fn type_errors(
        &self,
        source: &str,
        roots: &[(&str, Option<&'static StructShape>)],
    ) -> Vec<TypeError> {
        let mut check = Check {
            tokens: tokens(source),
            cursor: 0,
            roots,
            scopes: Vec::new(),
            found: Vec::new(),
        };
        check.check(self.program.expression());
        check.found.sort_by_key(|f| f.offset);
        check.found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::structure::{FieldShape, ListShape, MapShape};

    static SPEC: StructShape = StructShape {
        name: "Spec",
        fields: &[
            FieldShape::plain("replicas", Shape::Scalar(Scalar::Int)),
            FieldShape::plain("name", Shape::Scalar(Scalar::String)),
            FieldShape::plain("ratio", Shape::Scalar(Scalar::Double)),
            FieldShape::plain("paused", Shape::Scalar(Scalar::Bool)),
            FieldShape::plain("created", Shape::Scalar(Scalar::Other)),
            FieldShape::plain(
                "ports",
                Shape::List(&ListShape {
                    items: Shape::Scalar(Scalar::Int),
                }),
            ),
            FieldShape::plain(
                "labels",
                Shape::Map(&MapShape {
                    values: Shape::Scalar(Scalar::String),
                }),
            ),
            FieldShape::plain("extra", Shape::Unknown),
        ],
        atomic: false,
    };
    static OBJECT: StructShape = StructShape {
        name: "Object",
        fields: &[FieldShape::plain("spec", Shape::Struct(&SPEC))],
        atomic: false,
    };

    /// The mistakes in `source` as `column: message` lines (1-based columns).
    fn errors(source: &str) -> Vec<String> {
        let compiled = CelExpression::compile(source).unwrap_or_else(|e| panic!("{e}"));
        let roots = [
            ("object", Some(&OBJECT)),
            ("oldObject", Some(&OBJECT)),
            ("params", None),
        ];
        compiled
            .type_errors(source, &roots)
            .into_iter()
            .map(|e| format!("{}: {}", e.offset + 1, e.message))
            .collect()
    }

    #[test]
    fn well_typed_expressions_check() {
        for ok in [
            "object.spec.replicas > 1 && object.spec.name.startsWith('a')",
            "object.spec.replicas > 1.5 && object.spec.ratio < 2 && object.spec.replicas != 3u",
            "size(object.spec.name) + object.spec.ports.size() < 10",
            "object.spec.ports.all(p, p > 0 && p < 65536)",
            "object.spec.labels.exists(k, k.startsWith('x')) && object.spec.labels['a'] == 'b'",
            "object.spec.ports.map(p, p * 2).exists_one(p, p == 4)",
            "object.spec.created > params.since && object.spec.extra.anything.goes > 1",
            "'a' in object.spec.labels && 80 in object.spec.ports",
            "object.spec.paused ? object.spec.replicas == 0 : !has(object.spec.name)",
            "oldObject == null || oldObject.spec.replicas <= object.spec.replicas",
            "type(object.spec.replicas) == int && string(object.spec.replicas) == '1'",
            "object.kind == 'Widget' && object.spec.replicas % 2 == 0 && -object.spec.ratio < 0.0",
        ] {
            assert_eq!(errors(ok), Vec::<String>::new(), "{ok}");
        }
    }

    #[test]
    fn mistakes_are_reported_where_and_as_cel_go_reports_them() {
        let cases: &[(&str, &[&str])] = &[
            (
                "object.spec.replica > 1",
                &["12: undefined field 'replica'"],
            ),
            (
                "object.spec.replicas > '10'",
                &["22: found no matching overload for '_>_' applied to '(int, string)'"],
            ),
            (
                "object.spec.name + 1 == 'a1'",
                &["18: found no matching overload for '_+_' applied to '(string, int)'"],
            ),
            (
                "object.spec.replicas + 1.0 > 2.0",
                &["22: found no matching overload for '_+_' applied to '(int, double)'"],
            ),
            (
                "size(object.spec.replicas) > 0",
                &["5: found no matching overload for 'size' applied to '(int)'"],
            ),
            (
                "object.spec.replicas.size() > 0",
                &["26: found no matching overload for 'size' applied to 'int.()'"],
            ),
            (
                "object.spec.paused == 'true'",
                &["20: found no matching overload for '_==_' applied to '(bool, string)'"],
            ),
            (
                "object.spec.replicas && true",
                &["22: found no matching overload for '_&&_' applied to '(int, bool)'"],
            ),
            (
                "object.spec.name.startsWith(1)",
                &["28: found no matching overload for 'startsWith' applied to 'string.(int)'"],
            ),
            (
                "object.spec.replicas.value > 1",
                &["21: type 'int' does not support field selection"],
            ),
            (
                "object.spec.replicas.all(r, r > 0)",
                &[
                    "12: expression of type 'int' cannot be range of a comprehension (must be list, map, or dynamic)",
                ],
            ),
            (
                "obj.spec.replicas > 1",
                &["1: undeclared reference to 'obj' (in container '')"],
            ),
            (
                "object.spec.ports.all(p, p > 'x') && object.spec.replica > 0",
                &[
                    "28: found no matching overload for '_>_' applied to '(int, string)'",
                    "49: undefined field 'replica'",
                ],
            ),
            (
                "'>' + object.spec.name > 1",
                &["24: found no matching overload for '_>_' applied to '(string, int)'"],
            ),
        ];
        for (source, want) in cases {
            assert_eq!(errors(source), *want, "{source}");
        }
    }

    #[test]
    fn tokens_skip_strings_numbers_and_comments() {
        let t: Vec<&str> = tokens("a.b >= 1.5e-3 && r'x\\' == \"\"\"q\"\"\" // c > d\n|| !x[0]")
            .into_iter()
            .map(|(t, _)| t)
            .collect();
        assert_eq!(
            t,
            ["a", ".", "b", ">=", "&&", "==", "||", "!", "x", "[", "]"]
        );
    }
}
