//! Pruning (Kubernetes' `pruning.PruneWithOptions`): fields the schema does not specify are
//! removed, except under `x-kubernetes-preserve-unknown-fields`, and `apiVersion`, `kind` and
//! `metadata` of the root and of embedded resources are kept. The removed fields' paths are
//! returned as the strict decoder reports them (`spec.foo`, `spec.items[0].bar`), sorted.

use serde_json::Value;

use super::props::Props;

const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// The path being walked, written as `UnknownFieldPathOptions` writes it.
struct Paths {
    current: String,
    pruned: Vec<String>,
}

impl Paths {
    fn enter_key(&mut self, k: &str) -> usize {
        let mark = self.current.len();
        if !self.current.is_empty() {
            self.current.push('.');
        }
        self.current.push_str(k);
        mark
    }

    fn enter_index(&mut self, i: usize) -> usize {
        let mark = self.current.len();
        self.current.push_str(&format!("[{i}]"));
        mark
    }

    fn leave(&mut self, mark: usize) {
        self.current.truncate(mark);
    }

    fn record(&mut self, k: &str) {
        let mark = self.enter_key(k);
        self.pruned.push(self.current.clone());
        self.leave(mark);
    }
}

/// Prunes `x` under `s`; `root` treats it as a resource root (an embedded resource).
pub(crate) fn prune(x: &mut Value, s: &Props, root: bool) -> Vec<String> {
    let mut paths = Paths {
        current: String::new(),
        pruned: Vec::new(),
    };
    node(x, Some(s), root, &mut paths);
    paths.pruned.sort();
    paths.pruned
}

/// Every key of every object in `x` is unknown (it has no schema): records and removes them,
/// walking arrays of arrays with a stack (their nesting is not bounded by a schema).
fn untyped(x: &mut Value, paths: &mut Paths) {
    let mut stack: Vec<(&mut Value, String)> = vec![(x, paths.current.clone())];
    while let Some((v, at)) = stack.pop() {
        match v {
            Value::Object(m) => {
                for k in m.keys() {
                    paths.pruned.push(if at.is_empty() {
                        k.clone()
                    } else {
                        format!("{at}.{k}")
                    });
                }
                m.clear();
            }
            Value::Array(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    stack.push((item, format!("{at}[{i}]")));
                }
            }
            _ => {}
        }
    }
}

fn node(x: &mut Value, s: Option<&Props>, embedded: bool, paths: &mut Paths) {
    let Some(s) = s else {
        untyped(x, paths);
        return;
    };
    if s.preserves_unknown() {
        skip(x, s, embedded, paths);
        return;
    }
    let embedded = embedded || s.embedded_resource;
    match x {
        Value::Object(m) => {
            m.retain(|k, v| {
                if embedded && META_FIELDS.contains(&k.as_str()) {
                    return true;
                }
                let sub = if let Some(p) = s.properties.get(k) {
                    Some(p)
                } else if let Some(a) = &s.additional_properties {
                    a.schema()
                } else {
                    if !META_FIELDS.contains(&k.as_str()) || !paths.current.is_empty() {
                        paths.record(k);
                    }
                    return false;
                };
                let mark = paths.enter_key(k);
                node(v, sub, false, paths);
                paths.leave(mark);
                true
            });
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let mark = paths.enter_index(i);
                node(item, s.item_schema(), false, paths);
                paths.leave(mark);
            }
        }
        _ => {}
    }
}

/// Under `x-kubernetes-preserve-unknown-fields`: unknown keys stay, specified ones are pruned
/// by their own schemas.
fn skip(x: &mut Value, s: &Props, embedded: bool, paths: &mut Paths) {
    let embedded = embedded || s.embedded_resource;
    match x {
        Value::Object(m) => {
            for (k, v) in m.iter_mut() {
                if embedded && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                let sub = match s.properties.get(k) {
                    Some(p) => Some(p),
                    None => match &s.additional_properties {
                        Some(a) => a.schema(),
                        None => continue,
                    },
                };
                let mark = paths.enter_key(k);
                node(v, sub, false, paths);
                paths.leave(mark);
            }
        }
        Value::Array(items) => {
            if let Some(is) = s.item_schema() {
                for (i, item) in items.iter_mut().enumerate() {
                    let mark = paths.enter_index(i);
                    skip(item, is, false, paths);
                    paths.leave(mark);
                }
            }
        }
        _ => {}
    }
}
