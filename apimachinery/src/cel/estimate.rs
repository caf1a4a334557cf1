//! The static cost estimate kube-apiserver makes of a CRD's CEL rule when the CRD is written:
//! the worst case of one evaluation, from the sizes the schema declares for `self` and
//! `oldSelf` (see [`Decl`]), in cel-go's units, as cel-go's checker estimates it with
//! Kubernetes' function costs and size estimator.
//!
//! The walk follows the estimator's rules node by node: an identifier or a field selection on
//! an object or map costs one, a constant nothing, a list literal ten, a map literal thirty, a
//! call one plus its arguments unless the function has a cost of its own (string traversals
//! cost a tenth of the string's length, a regular expression match the product of the
//! string's and the pattern's, Kubernetes' library functions their documented figures), and a
//! comprehension multiplies the cost of its step by the largest size of what it ranges over.
//! The size of a value reached from `self` by field selections, indexes and comprehension
//! variables is its schema node's declared bound ([`Decl::max_elements`]).
//!
//! Where the estimate cannot tell what kube-apiserver's type checker would know (a function it
//! does not model, an operand of unknown type), it charges the least kube-apiserver could: the
//! estimate is never above Kubernetes', so no CRD it accepts is refused.

use std::collections::{BTreeMap, HashMap};

use cel::IdedExpr;
use cel::common::ast::{EntryExpr, Expr, LiteralValue};

/// A range of estimated costs or sizes, `min..=max`, with saturating arithmetic.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Est {
    pub(crate) min: u64,
    pub(crate) max: u64,
}

const UNKNOWN: Est = Est {
    min: 0,
    max: u64::MAX,
};

/// The cost of one string's traversal per character.
const TRAVERSAL: f64 = 0.1;
/// The cost of a regular expression per character of its pattern.
const REGEX_FACTOR: f64 = 0.25;

impl Est {
    const fn fixed(n: u64) -> Est {
        Est { min: n, max: n }
    }

    fn add(self, o: Est) -> Est {
        Est {
            min: self.min.saturating_add(o.min),
            max: self.max.saturating_add(o.max),
        }
    }

    fn mul(self, o: Est) -> Est {
        Est {
            min: self.min.saturating_mul(o.min),
            max: self.max.saturating_mul(o.max),
        }
    }

    fn union(self, o: Est) -> Est {
        Est {
            min: self.min.min(o.min),
            max: self.max.max(o.max),
        }
    }

    /// Multiplied by a factor, each bound rounded up (cel-go's `MultiplyByCostFactor`).
    fn factor(self, f: f64) -> Est {
        Est {
            min: by_factor(self.min, f),
            max: by_factor(self.max, f),
        }
    }
}

fn by_factor(x: u64, f: f64) -> u64 {
    let xf = x as f64;
    if xf > 0.0 && f > 0.0 && xf > u64::MAX as f64 / f {
        return u64::MAX;
    }
    let ceil = (xf * f).ceil();
    if ceil >= 18_446_744_073_709_551_616.0 {
        u64::MAX
    } else {
        ceil as u64
    }
}

/// The CEL declaration of a schema node as the estimate sees it: its type and the bound of
/// its size (Kubernetes' `DeclType`).
#[derive(Clone, Debug)]
pub(crate) struct Decl {
    /// The type.
    pub(crate) kind: DeclKind,
    /// The most elements (list items, map entries, bytes of a string) a value may have; zero
    /// for scalars and objects.
    pub(crate) max_elements: u64,
    /// The fewest bytes the value takes serialized as JSON.
    pub(crate) min_size: i64,
}

/// The type of a [`Decl`].
#[derive(Clone, Debug)]
pub(crate) enum DeclKind {
    Bool,
    Int,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
    /// `x-kubernetes-int-or-string` (CEL's `dyn`).
    IntOrString,
    List(Box<Decl>),
    /// A map with string keys.
    Map(Box<Decl>),
    /// An object: its fields by their CEL (escaped) names.
    Object(BTreeMap<String, Decl>),
}

/// The declaration of a map's keys: Kubernetes' plain `string`, which declares no size.
static MAP_KEY: Decl = Decl {
    kind: DeclKind::String,
    max_elements: 0,
    min_size: 2,
};

/// The type of an expression, as far as the estimate needs it.
#[derive(Clone, Debug)]
enum Ty<'a> {
    Dyn,
    Null,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
    List(Box<Ty<'a>>),
    Map(Box<Ty<'a>>, Box<Ty<'a>>),
    Object(&'a BTreeMap<String, Decl>),
    /// A type of Kubernetes' library (`Quantity`, `URL`, `IP`, `CIDR`, `Semver`, `Format`).
    Opaque(&'static str),
}

impl<'a> Ty<'a> {
    fn of(d: &'a Decl) -> Ty<'a> {
        match &d.kind {
            DeclKind::Bool => Ty::Bool,
            DeclKind::Int => Ty::Int,
            DeclKind::Double => Ty::Double,
            DeclKind::String => Ty::String,
            DeclKind::Bytes => Ty::Bytes,
            DeclKind::Duration => Ty::Duration,
            DeclKind::Timestamp => Ty::Timestamp,
            DeclKind::IntOrString => Ty::Dyn,
            DeclKind::List(e) => Ty::List(Box::new(Ty::of(e))),
            DeclKind::Map(v) => Ty::Map(Box::new(Ty::String), Box::new(Ty::of(v))),
            DeclKind::Object(f) => Ty::Object(f),
        }
    }

    /// Types of a constant size (cel-go's `isScalar`).
    fn scalar(&self) -> bool {
        matches!(
            self,
            Ty::Bool | Ty::Double | Ty::Duration | Ty::Int | Ty::Timestamp | Ty::Uint
        )
    }

    fn is_dyn(&self) -> bool {
        matches!(self, Ty::Dyn)
    }

    /// The more precise of two types of the same value.
    fn or(self, other: Ty<'a>) -> Ty<'a> {
        if self.is_dyn() { other } else { self }
    }
}

/// The sizes of a literal or computed list's or map's entries.
#[derive(Clone, Copy, Debug)]
struct Entry {
    list: bool,
    key: Est,
    val: Est,
}

impl Entry {
    fn union(a: Option<Entry>, b: Option<Entry>) -> Option<Entry> {
        let (a, b) = (a?, b?);
        Some(Entry {
            list: a.list,
            key: a.key.union(b.key),
            val: a.val.union(b.val),
        })
    }
}

/// A variable bound by a comprehension.
struct Local<'a> {
    name: String,
    path: Vec<String>,
    size: Option<Est>,
    entry: Option<Entry>,
    ty: Ty<'a>,
}

/// The names of a comprehension's accumulator.
fn is_accumulator(name: &str) -> bool {
    name == "__result__" || name == "@result"
}

/// The worst-case estimated cost of one evaluation of `expr` with `self` and `oldSelf`
/// declared by `root`.
pub(crate) fn estimate(expr: &IdedExpr, root: &Decl) -> u64 {
    let mut c = Coster {
        root,
        paths: HashMap::new(),
        sizes: HashMap::new(),
        entries: HashMap::new(),
        types: HashMap::new(),
        locals: Vec::new(),
    };
    c.cost(expr).max
}

struct Coster<'a> {
    root: &'a Decl,
    /// The path from a variable to each expression's value (`["self", "spec", "@items"]`).
    paths: HashMap<u64, Vec<String>>,
    sizes: HashMap<u64, Est>,
    entries: HashMap<u64, Entry>,
    types: HashMap<u64, Ty<'a>>,
    locals: Vec<Local<'a>>,
}

impl<'a> Coster<'a> {
    fn local(&self, name: &str) -> Option<&Local<'a>> {
        self.locals.iter().rev().find(|l| l.name == name)
    }

    fn ty(&self, e: &IdedExpr) -> Ty<'a> {
        self.types.get(&e.id).cloned().unwrap_or(Ty::Dyn)
    }

    fn path(&self, e: &IdedExpr) -> Vec<String> {
        if let Expr::Ident(name) = &e.expr
            && let Some(l) = self.local(name)
        {
            return l.path.clone();
        }
        self.paths.get(&e.id).cloned().unwrap_or_default()
    }

    /// The path handed to the size estimator for a call's operand: none for values derived
    /// from an accumulator.
    fn node_path(&self, e: &IdedExpr) -> Vec<String> {
        let p = self.path(e);
        if p.first().is_some_and(|v| is_accumulator(v)) {
            Vec::new()
        } else {
            p
        }
    }

    /// Kubernetes' size estimator: the declared bound of the schema node at `path` (its first
    /// element, the variable, is skipped: every variable is declared by the rule's node).
    fn declared_size(&self, path: &[String]) -> Option<Est> {
        let (_, rest) = path.split_first()?;
        let mut node = self.root;
        for name in rest {
            node = match (name.as_str(), &node.kind) {
                ("@items" | "@values", DeclKind::List(e) | DeclKind::Map(e)) => e,
                ("@keys", DeclKind::Map(_)) => &MAP_KEY,
                (field, DeclKind::Object(fields)) => fields.get(field)?,
                _ => return None,
            };
        }
        Some(Est {
            min: 0,
            max: node.max_elements,
        })
    }

    fn compute_size(&mut self, e: &IdedExpr) -> Option<Est> {
        if let Some(s) = self.sizes.get(&e.id) {
            return Some(*s);
        }
        if let Some(s) = literal_size(e) {
            return Some(s);
        }
        if let Some(s) = self.declared_size(&self.path(e)) {
            self.sizes.insert(e.id, s);
            return Some(s);
        }
        if self.ty(e).scalar() {
            return Some(Est::fixed(1));
        }
        if let Expr::Ident(name) = &e.expr
            && let Some(l) = self.local(name)
        {
            return l.size;
        }
        None
    }

    fn size_or_unknown(&mut self, e: &IdedExpr) -> Est {
        self.compute_size(e).unwrap_or(UNKNOWN)
    }

    fn entry(&self, e: &IdedExpr) -> Option<Entry> {
        if let Some(s) = self.entries.get(&e.id) {
            return Some(*s);
        }
        if let Expr::Ident(name) = &e.expr
            && let Some(l) = self.local(name)
        {
            return l.entry;
        }
        None
    }

    fn cost(&mut self, e: &IdedExpr) -> Est {
        match &e.expr {
            Expr::Unspecified => Est::fixed(0),
            Expr::Literal(l) => {
                let ty = match l {
                    LiteralValue::Boolean(_) => Ty::Bool,
                    LiteralValue::Bytes(_) => Ty::Bytes,
                    LiteralValue::Double(_) => Ty::Double,
                    LiteralValue::Int(_) => Ty::Int,
                    LiteralValue::Null => Ty::Null,
                    LiteralValue::String(_) => Ty::String,
                    LiteralValue::UInt(_) => Ty::Uint,
                };
                self.types.insert(e.id, ty);
                Est::fixed(0)
            }
            Expr::Ident(name) => {
                let (path, ty) = match self.local(name) {
                    Some(l) => (l.path.clone(), l.ty.clone()),
                    None if name == "self" || name == "oldSelf" => {
                        (vec![name.clone()], Ty::of(self.root))
                    }
                    None => (vec![name.clone()], Ty::Dyn),
                };
                self.paths.insert(e.id, path);
                self.types.insert(e.id, ty);
                Est::fixed(1)
            }
            Expr::Select(s) => {
                let operand = self.cost(&s.operand);
                if s.test {
                    // Kubernetes charges nothing for the presence test itself.
                    self.types.insert(e.id, Ty::Bool);
                    return operand;
                }
                let (select, ty) = match self.ty(&s.operand) {
                    Ty::Object(fields) => (1, fields.get(&s.field).map(Ty::of).unwrap_or(Ty::Dyn)),
                    Ty::Map(_, v) => (1, *v),
                    _ => (0, Ty::Dyn),
                };
                let mut path = self.path(&s.operand);
                path.push(s.field.clone());
                self.paths.insert(e.id, path);
                self.types.insert(e.id, ty);
                operand.add(Est::fixed(select))
            }
            Expr::List(l) => {
                let mut sum = Est::fixed(0);
                let mut item = if l.elements.is_empty() {
                    Est::fixed(0)
                } else {
                    Est {
                        min: u64::MAX,
                        max: 0,
                    }
                };
                let mut elem = Ty::Dyn;
                for x in &l.elements {
                    sum = sum.add(self.cost(x));
                    item = item.union(self.size_or_unknown(x));
                    elem = elem.or(self.ty(x));
                }
                self.entries.insert(
                    e.id,
                    Entry {
                        list: true,
                        key: Est::fixed(1),
                        val: item,
                    },
                );
                self.types.insert(e.id, Ty::List(Box::new(elem)));
                sum.add(Est::fixed(10))
            }
            Expr::Map(m) => {
                let mut sum = Est::fixed(0);
                let empty = m.entries.is_empty();
                let start = Est {
                    min: if empty { 0 } else { u64::MAX },
                    max: 0,
                };
                let (mut key, mut val) = (start, start);
                let (mut kt, mut vt) = (Ty::Dyn, Ty::Dyn);
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        sum = sum.add(self.cost(&me.key)).add(self.cost(&me.value));
                        key = key.union(self.size_or_unknown(&me.key));
                        val = val.union(self.size_or_unknown(&me.value));
                        kt = kt.or(self.ty(&me.key));
                        vt = vt.or(self.ty(&me.value));
                    }
                }
                self.entries.insert(
                    e.id,
                    Entry {
                        list: false,
                        key,
                        val,
                    },
                );
                self.types.insert(e.id, Ty::Map(Box::new(kt), Box::new(vt)));
                sum.add(Est::fixed(30))
            }
            Expr::Struct(s) => {
                let mut sum = Est::fixed(0);
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        sum = sum.add(self.cost(&f.value));
                    }
                }
                sum.add(Est::fixed(40))
            }
            Expr::Call(call) => self.call(e, call),
            Expr::Comprehension(c) => self.comprehension(e, c),
        }
    }

    fn comprehension(&mut self, e: &IdedExpr, c: &cel::common::ast::ComprehensionExpr) -> Est {
        let bind = matches!(&c.iter_range.expr, Expr::List(l) if l.elements.is_empty())
            && matches!(&c.loop_cond.expr, Expr::Literal(LiteralValue::Boolean(b)) if !*b.inner())
            && c.accu_var != "__result__";
        let mut sum = self.cost(&c.iter_range).add(self.cost(&c.accu_init));
        let accu = Local {
            name: c.accu_var.clone(),
            path: self.path(&c.accu_init),
            size: self.compute_size(&c.accu_init),
            entry: self.entry(&c.accu_init),
            ty: self.ty(&c.accu_init),
        };
        self.locals.push(accu);
        if bind {
            sum = sum.add(self.cost(&c.result));
            self.locals.pop();
            if let Some(s) = self.compute_size(&c.result) {
                self.sizes.insert(e.id, s);
            }
            if let Some(en) = self.entry(&c.result) {
                self.entries.insert(e.id, en);
            }
            self.types.insert(e.id, self.ty(&c.result));
            return sum;
        }
        let range_entry = self.entry(&c.iter_range);
        let range_ty = self.ty(&c.iter_range);
        let list = match range_entry {
            Some(en) => en.list,
            None => matches!(range_ty, Ty::List(_)),
        };
        let range_path = self.path(&c.iter_range);
        let (elem_ty, key_ty) = match &range_ty {
            Ty::List(t) => ((**t).clone(), Ty::Int),
            Ty::Map(k, v) => ((**v).clone(), (**k).clone()),
            _ => (Ty::Dyn, Ty::Dyn),
        };
        let sub = |s: &str| {
            let mut p = range_path.clone();
            p.push(s.to_string());
            p
        };
        let mut pushed = 1;
        match &c.iter_var2 {
            None => {
                let (size, path, ty) = if list {
                    (range_entry.map(|en| en.val), sub("@items"), elem_ty)
                } else {
                    (range_entry.map(|en| en.key), sub("@keys"), key_ty)
                };
                self.locals.push(Local {
                    name: c.iter_var.clone(),
                    path,
                    size,
                    entry: None,
                    ty,
                });
            }
            Some(v2) => {
                let (kp, vp) = if list {
                    (sub("@indices"), sub("@items"))
                } else {
                    (sub("@keys"), sub("@values"))
                };
                self.locals.push(Local {
                    name: c.iter_var.clone(),
                    path: kp,
                    size: range_entry.map(|en| en.key),
                    entry: None,
                    ty: key_ty,
                });
                self.locals.push(Local {
                    name: v2.clone(),
                    path: vp,
                    size: range_entry.map(|en| en.val),
                    entry: None,
                    ty: elem_ty,
                });
                pushed = 2;
            }
        }
        let loop_cost = self.cost(&c.loop_cond);
        let step_cost = self.cost(&c.loop_step);
        for _ in 0..pushed {
            self.locals.pop();
        }
        // The accumulator's type, as the step builds it (a `map` builds a list of its
        // function's results).
        let step_ty = self.ty(&c.loop_step);
        if let Some(accu) = self.locals.last_mut()
            && matches!(step_ty, Ty::List(_) | Ty::Map(..))
        {
            accu.ty = step_ty;
        }
        sum = sum.add(self.cost(&c.result));
        self.locals.pop();
        let range = self.size_or_unknown(&c.iter_range);
        sum = sum.add(range.mul(step_cost.add(loop_cost)));
        match &c.accu_init.expr {
            Expr::Literal(_) => {
                if let Some(s) = self.compute_size(&c.accu_init) {
                    self.sizes.insert(e.id, s);
                }
            }
            Expr::List(_) | Expr::Map(_) => {
                self.sizes.insert(e.id, range);
                if let Some(en) = self.entry(&c.loop_step) {
                    self.entries.insert(e.id, en);
                }
            }
            _ => {}
        }
        self.types.insert(e.id, self.ty(&c.result));
        sum
    }
}

/// The size of a literal, or of a list or map literal (its number of entries).
fn literal_size(e: &IdedExpr) -> Option<Est> {
    let n = match &e.expr {
        Expr::Literal(LiteralValue::String(s)) => s.inner().chars().count() as u64,
        Expr::Literal(LiteralValue::Bytes(b)) => b.inner().len() as u64,
        Expr::Literal(_) => 1,
        Expr::List(l) => l.elements.len() as u64,
        Expr::Map(m) => m.entries.len() as u64,
        _ => return None,
    };
    Some(Est::fixed(n))
}

mod calls;

#[cfg(test)]
mod tests;
