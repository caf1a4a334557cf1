//! The simple paths of scale subresources: `.spec.replicas`, `.status.replicas`,
//! `.status.selector` (Kubernetes reads and writes them as dotted field paths). Printer
//! columns use Kubernetes' JSONPath, `apimachinery::jsonpath`.

use serde_json::Value;

/// One step of a path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// An object member.
    Field(String),
    /// An array index.
    Index(usize),
}

/// Parses a simple JSONPath (optionally wrapped in `{}`) into steps.
pub fn parse(path: &str) -> Vec<Step> {
    let p = path
        .trim()
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim_start_matches('$');
    let mut steps = Vec::new();
    let mut chars = p.chars().peekable();
    let mut cur = String::new();
    while let Some(c) = chars.next() {
        match c {
            '.' => {
                if !cur.is_empty() {
                    steps.push(Step::Field(std::mem::take(&mut cur)));
                }
            }
            '[' => {
                if !cur.is_empty() {
                    steps.push(Step::Field(std::mem::take(&mut cur)));
                }
                let mut inner = String::new();
                for d in chars.by_ref() {
                    if d == ']' {
                        break;
                    }
                    inner.push(d);
                }
                let inner = inner.trim();
                if let Ok(i) = inner.parse::<usize>() {
                    steps.push(Step::Index(i));
                } else {
                    steps.push(Step::Field(
                        inner.trim_matches(|c| c == '\'' || c == '"').to_string(),
                    ));
                }
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        steps.push(Step::Field(cur));
    }
    steps
}

/// Selects the value at `path`, if present.
pub fn select(object: &Value, path: &str) -> Option<Value> {
    let mut cur = object;
    for step in parse(path) {
        cur = match step {
            Step::Field(f) => cur.get(f.as_str())?,
            Step::Index(i) => cur.get(i)?,
        };
    }
    if cur.is_null() {
        None
    } else {
        Some(cur.clone())
    }
}

/// Sets the value at `path`, creating intermediate objects; indexes must exist.
pub fn set(object: &mut Value, path: &str, value: Value) -> bool {
    let steps = parse(path);
    let mut cur = object;
    for (i, step) in steps.iter().enumerate() {
        let last = i + 1 == steps.len();
        match step {
            Step::Field(f) => {
                if !cur.is_object() {
                    *cur = Value::Object(Default::default());
                }
                let Some(map) = cur.as_object_mut() else {
                    return false;
                };
                if last {
                    map.insert(f.clone(), value);
                    return true;
                }
                cur = map
                    .entry(f.clone())
                    .or_insert_with(|| Value::Object(Default::default()));
            }
            Step::Index(idx) => {
                let Some(slot) = cur.get_mut(*idx) else {
                    return false;
                };
                if last {
                    *slot = value;
                    return true;
                }
                cur = slot;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selects_and_sets() {
        let mut v = json!({"spec": {"replicas": 2}, "status": {"c": [{"type": "Ready"}]}, "metadata": {"labels": {"a.b/c": "x"}}});
        assert_eq!(select(&v, ".spec.replicas"), Some(json!(2)));
        assert_eq!(select(&v, ".status.c[0].type"), Some(json!("Ready")));
        assert_eq!(select(&v, ".metadata.labels['a.b/c']"), Some(json!("x")));
        assert_eq!(select(&v, ".spec.missing"), None);
        assert!(set(&mut v, ".status.replicas", json!(3)));
        assert_eq!(v["status"]["replicas"], 3);
        assert!(set(&mut v, ".x.y", json!(1)));
        assert_eq!(v["x"]["y"], 1);
    }
}
