//! The cost bound of a run-time expression over the values it is evaluated over: about one
//! unit per node visited, comprehensions multiplied by the actual size of what they range over.

use std::sync::Arc;

use super::CelActivation;

/// The number of values in a CEL value (a scalar is one; a string counts its bytes, as
/// operations on it cost by its length).
pub(super) fn cel_size(v: &cel::Value) -> u64 {
    use cel::Value as C;
    match v {
        C::List(items) => 1 + items.iter().map(cel_size).sum::<u64>(),
        C::Map(map) => 1 + map.map.values().map(cel_size).sum::<u64>(),
        C::String(s) => 1 + s.len() as u64 / 8,
        C::Bytes(b) => 1 + b.len() as u64 / 8,
        _ => 1,
    }
}

/// The length of a CEL list, map or string (what a comprehension over it iterates).
fn cel_len(v: &cel::Value) -> u64 {
    use cel::Value as C;
    match v {
        C::List(items) => items.len() as u64,
        C::Map(map) => map.map.len() as u64,
        C::String(s) => s.len() as u64,
        C::Bytes(b) => b.len() as u64,
        _ => 0,
    }
}

/// The cost bound of an expression over an activation.
pub(super) struct CostBounds<'a> {
    pub(super) activation: &'a CelActivation,
    /// The size of all the variables together: the bound of a value the walk cannot size.
    pub(super) total: u64,
    /// The comprehension variables in scope, with the bound of their sizes.
    pub(super) scopes: Vec<(String, u64)>,
}

impl CostBounds<'_> {
    /// The value of a path of field selections from a bound variable, when it is one.
    fn path_value(&self, e: &cel::IdedExpr) -> Option<cel::Value> {
        use cel::common::ast::Expr;
        match &e.expr {
            Expr::Ident(name) => {
                if self.scopes.iter().any(|(n, _)| n == name) {
                    return None;
                }
                self.activation
                    .variables
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.clone())
            }
            Expr::Select(s) if !s.test => {
                let operand = self.path_value(&s.operand)?;
                match operand {
                    cel::Value::Map(m) => Some(
                        m.map
                            .get(&cel::objects::Key::String(Arc::new(s.field.clone())))
                            .cloned()
                            .unwrap_or(cel::Value::Null),
                    ),
                    _ => Some(cel::Value::Null),
                }
            }
            _ => None,
        }
    }

    /// An upper bound of the length of the list, map or string `e` evaluates to.
    fn size(&self, e: &cel::IdedExpr) -> u64 {
        use cel::common::ast::{Expr, operators};
        if let Some(v) = self.path_value(e) {
            return cel_len(&v);
        }
        match &e.expr {
            Expr::Ident(name) => self
                .scopes
                .iter()
                .rev()
                .find(|(n, _)| n == name)
                .map(|(_, b)| *b)
                .unwrap_or(self.total),
            Expr::List(l) => l.elements.len() as u64,
            Expr::Map(m) => m.entries.len() as u64,
            Expr::Struct(s) => s.entries.len() as u64,
            Expr::Literal(cel::common::ast::LiteralValue::String(s)) => s.inner().len() as u64,
            Expr::Literal(_) => 0,
            Expr::Call(c) if c.func_name == operators::ADD && c.args.len() == 2 => {
                self.size(&c.args[0]).saturating_add(self.size(&c.args[1]))
            }
            // `map` and `filter` give at most one item per item of their range.
            Expr::Comprehension(c) => self.size(&c.iter_range),
            _ => self.total,
        }
    }

    /// An upper bound of what evaluating `e` costs.
    pub(super) fn cost(&mut self, e: &cel::IdedExpr) -> u64 {
        use cel::common::ast::{EntryExpr, Expr, operators};
        match &e.expr {
            Expr::Unspecified | Expr::Literal(_) | Expr::Ident(_) => 1,
            Expr::Select(s) => 1 + self.cost(&s.operand),
            Expr::List(l) => l
                .elements
                .iter()
                .fold(1u64, |acc, x| acc.saturating_add(self.cost(x))),
            Expr::Map(m) => m.entries.iter().fold(1u64, |acc, entry| {
                let c = match &entry.expr {
                    EntryExpr::MapEntry(me) => {
                        self.cost(&me.key).saturating_add(self.cost(&me.value))
                    }
                    EntryExpr::StructField(f) => self.cost(&f.value),
                };
                acc.saturating_add(c)
            }),
            Expr::Struct(s) => s.entries.iter().fold(1u64, |acc, entry| {
                let c = match &entry.expr {
                    EntryExpr::MapEntry(me) => {
                        self.cost(&me.key).saturating_add(self.cost(&me.value))
                    }
                    EntryExpr::StructField(f) => self.cost(&f.value),
                };
                acc.saturating_add(c)
            }),
            Expr::Call(c) => {
                let mut cost = 1u64;
                if let Some(t) = &c.target {
                    cost = cost.saturating_add(self.cost(t));
                }
                for a in &c.args {
                    cost = cost.saturating_add(self.cost(a));
                }
                // Operations that walk a whole value cost by its length: concatenation and
                // equality copy or compare it, `in` and the string functions scan it.
                let walks = matches!(
                    c.func_name.as_str(),
                    operators::ADD | operators::EQUALS | operators::NOT_EQUALS | operators::IN
                ) || matches!(
                    c.func_name.as_str(),
                    "contains" | "startsWith" | "endsWith" | "matches" | "string"
                );
                if walks {
                    let operands = c.target.iter().map(|t| &**t).chain(c.args.iter());
                    let length = operands.fold(0u64, |acc, x| acc.saturating_add(self.size(x)));
                    cost = cost.saturating_add(length / 10);
                }
                cost
            }
            Expr::Comprehension(c) => {
                let range = self.size(&c.iter_range);
                let mut cost = self
                    .cost(&c.iter_range)
                    .saturating_add(self.cost(&c.accu_init));
                self.scopes.push((c.iter_var.clone(), self.total));
                if let Some(v2) = &c.iter_var2 {
                    self.scopes.push((v2.clone(), self.total));
                }
                self.scopes.push((c.accu_var.clone(), range));
                let body = self
                    .cost(&c.loop_cond)
                    .saturating_add(self.cost(&c.loop_step));
                cost = cost
                    .saturating_add(range.saturating_mul(body))
                    .saturating_add(self.cost(&c.result));
                self.scopes.pop();
                if c.iter_var2.is_some() {
                    self.scopes.pop();
                }
                self.scopes.pop();
                cost
            }
        }
    }
}
