//! The field check behind admission policies' type checking: which fields an expression
//! selects that a kind's structure does not have.

use super::CelExpression;

/// A field an expression selects that the schema does not have: its name and the byte offset
/// of the `.` selecting it in the expression.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UndefinedField {
    /// The field's name.
    pub field: String,
    /// The offset of the selecting `.` in the expression's text.
    pub offset: usize,
}

/// Finds the fields an expression selects through variables of known structure that their
/// structs do not have (a type check of field selections only: other type errors are left to
/// evaluation).
struct FieldCheck<'a> {
    source: &'a str,
    roots: &'a [(&'a str, &'static crate::structure::StructShape)],
    /// Comprehension variables with the shape they stand for (`None`: unknown, shadowing).
    scopes: Vec<(String, Option<crate::structure::Shape>)>,
    /// Where the search for the next `.field` in the text starts.
    cursor: usize,
    found: Vec<UndefinedField>,
}

impl FieldCheck<'_> {
    /// The shape `e` has, when it is a path the roots give a shape to.
    fn shape_of(&mut self, e: &cel_parser::Expression) -> Option<crate::structure::Shape> {
        use crate::structure::Shape;
        use cel_parser::ast::{Expr, operators};
        match &e.expr {
            Expr::Ident(name) => {
                if let Some((_, shape)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
                    return *shape;
                }
                self.roots
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, s)| Shape::Struct(s))
            }
            Expr::Select(sel) => {
                let operand = self.shape_of(&sel.operand);
                let offset = self.offset_of(&sel.field);
                match operand? {
                    Shape::Struct(s) => match s.field(&sel.field) {
                        Some(f) => Some(f.shape),
                        // Every object has these, though the structs leave them implicit.
                        None if matches!(sel.field.as_str(), "apiVersion" | "kind") => {
                            Some(Shape::Scalar)
                        }
                        None => {
                            self.found.push(UndefinedField {
                                field: sel.field.clone(),
                                offset,
                            });
                            None
                        }
                    },
                    Shape::Map(m) => Some(m.values),
                    _ => None,
                }
            }
            Expr::Call(c) if c.func_name == operators::INDEX && c.args.len() == 2 => {
                let operand = self.shape_of(&c.args[0]);
                self.walk(&c.args[1]);
                match operand? {
                    Shape::List(l) => Some(l.items),
                    Shape::Map(m) => Some(m.values),
                    _ => None,
                }
            }
            _ => {
                self.walk(e);
                None
            }
        }
    }

    /// The offset of the next `.field` in the text (the walk visits selections in order).
    fn offset_of(&mut self, field: &str) -> usize {
        let needle = format!(".{field}");
        let mut from = self.cursor;
        while let Some(i) = self.source.get(from..).and_then(|t| t.find(&needle)) {
            let at = from + i;
            let end = at + needle.len();
            let boundary = self
                .source
                .get(end..)
                .and_then(|t| t.chars().next())
                .is_none_or(|c| !(c.is_alphanumeric() || c == '_'));
            if boundary {
                self.cursor = end;
                return at;
            }
            from = end;
        }
        self.source.find(&needle).unwrap_or(0)
    }

    fn walk(&mut self, e: &cel_parser::Expression) {
        use crate::structure::Shape;
        use cel_parser::ast::{EntryExpr, Expr};
        match &e.expr {
            Expr::Select(_) | Expr::Ident(_) => {
                self.shape_of(e);
            }
            Expr::Call(c) => {
                if c.func_name == cel_parser::ast::operators::INDEX {
                    self.shape_of(e);
                    return;
                }
                if let Some(t) = &c.target {
                    self.walk(t);
                }
                c.args.iter().for_each(|a| self.walk(a));
            }
            Expr::List(l) => l.elements.iter().for_each(|x| self.walk(x)),
            Expr::Map(m) => m.entries.iter().for_each(|entry| match &entry.expr {
                EntryExpr::MapEntry(me) => {
                    self.walk(&me.key);
                    self.walk(&me.value);
                }
                EntryExpr::StructField(f) => self.walk(&f.value),
            }),
            Expr::Struct(st) => st.entries.iter().for_each(|entry| match &entry.expr {
                EntryExpr::MapEntry(me) => {
                    self.walk(&me.key);
                    self.walk(&me.value);
                }
                EntryExpr::StructField(f) => self.walk(&f.value),
            }),
            Expr::Comprehension(c) => {
                let range = self.shape_of(&c.iter_range);
                let item = match range {
                    Some(Shape::List(l)) => Some(l.items),
                    Some(Shape::Map(_)) => Some(Shape::Scalar),
                    _ => None,
                };
                self.walk(&c.accu_init);
                self.scopes.push((c.iter_var.clone(), item));
                if let Some(v2) = &c.iter_var2 {
                    self.scopes.push((v2.clone(), None));
                }
                self.scopes.push((c.accu_var.clone(), None));
                self.walk(&c.loop_cond);
                self.walk(&c.loop_step);
                self.walk(&c.result);
                self.scopes.pop();
                if c.iter_var2.is_some() {
                    self.scopes.pop();
                }
                self.scopes.pop();
            }
            Expr::Unspecified | Expr::Literal(_) => {}
        }
    }
}

impl CelExpression {
    /// The fields the expression selects through the variables of `roots` (such as `object`
    /// bound to a kind's structure) that those structures do not have, in the order they are
    /// written.
    pub fn undefined_fields(
        &self,
        source: &str,
        roots: &[(&str, &'static crate::structure::StructShape)],
    ) -> Vec<UndefinedField> {
        let mut check = FieldCheck {
            source,
            roots,
            scopes: Vec::new(),
            cursor: 0,
            found: Vec::new(),
        };
        check.walk(&self.ast);
        check.found.sort_by_key(|f| f.offset);
        check.found
    }
}
