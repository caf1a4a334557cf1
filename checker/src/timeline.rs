//! The committed writes in resourceVersion order: what each key held at each resourceVersion,
//! which lists, reads from the cache and watches are checked against; and the global rules
//! on resourceVersions (unique, and in real-time order across all keys).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use crate::describe;
use crate::history::{ChangeKind, History, Input, Output, Rv};
use crate::model::{self, Class};
use crate::resolve::Resolution;

/// One committed write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Commit {
    /// Its resourceVersion.
    pub rv: Rv,
    /// Its key.
    pub key: String,
    /// The operation (index) that made it (for a delete whose author is not known, one that
    /// can have made it).
    pub op: usize,
    /// The event kind a watch shows for it.
    pub kind: ChangeKind,
    /// The key's value after it (`None` after a delete).
    pub after: Option<String>,
    /// The key's value before it (what a DELETED event shows).
    pub before: Option<String>,
}

/// Every committed write with a known resourceVersion, per key and overall.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// Per key, its commits in resourceVersion order.
    pub keys: BTreeMap<String, Vec<Commit>>,
    /// Per key, the open intervals `(from, to)` of resourceVersions in which an uncertain
    /// delete (the operation) that the key's linearization applied, but nothing showed, made
    /// the key absent.
    pub maybe_absent: HashMap<String, Vec<(Rv, Option<Rv>, usize)>>,
    /// Per key, its deletes acknowledged without their resourceVersion that no DELETED
    /// event named.
    pub acknowledged: HashMap<String, Vec<Acknowledged>>,
    /// Every key any operation names.
    pub all_keys: BTreeSet<String>,
}

/// A delete acknowledged without its resourceVersion ([`Output::Deleted`]) that no DELETED
/// event named: it took effect at a resourceVersion above `above` and below `below`, the
/// bounds real time gives ([`delete_bounds`]). These bounds, not the place the key's
/// linearization gave it (one of possibly several), are what lists and watches are checked
/// against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Acknowledged {
    /// The delete (by index).
    pub op: usize,
    /// Its resourceVersion is above this one.
    pub above: Rv,
    /// Its resourceVersion is below this one, when known.
    pub below: Option<Rv>,
}

/// What a key may hold at a resourceVersion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AtRv<'a> {
    /// The state after the last commit at or below the resourceVersion: `(rv, value)`.
    pub state: Option<(Rv, &'a str)>,
    /// Whether the key may also be absent (an uncertain delete).
    pub may_be_absent: bool,
    /// The resourceVersion of the next commit of the key, if any (the state holds until it).
    pub until: Option<Rv>,
    /// The operation of the last commit at or below the resourceVersion, if any.
    pub by: Option<usize>,
}

impl AtRv<'_> {
    /// Whether `seen` (an item `(rv, value)` or absence) is a state the key may hold.
    pub fn allows(&self, seen: Option<(Rv, &str)>) -> bool {
        seen == self.state || (seen.is_none() && self.may_be_absent)
    }
}

impl Timeline {
    /// Builds the timeline from the resolved writes; `orders` (the linearizations of the keys
    /// that have one) place uncertain deletes nothing showed.
    pub fn new(
        history: &History,
        resolution: &Resolution,
        orders: &BTreeMap<String, Vec<usize>>,
    ) -> Timeline {
        let ops = &history.operations;
        let mut keys: BTreeMap<String, Vec<Commit>> = BTreeMap::new();
        let mut all_keys = BTreeSet::new();
        for (i, op) in ops.iter().enumerate() {
            let Some(key) = op.input.key() else { continue };
            all_keys.insert(key.to_string());
            let Some(rv) = resolution.rv[i] else { continue };
            let kind = match op.input {
                Input::Create { .. } => ChangeKind::Added,
                Input::Delete { .. } => ChangeKind::Deleted,
                _ => ChangeKind::Modified,
            };
            keys.entry(key.to_string()).or_default().push(Commit {
                rv,
                key: key.to_string(),
                op: i,
                kind,
                after: model::written_value(&op.input).map(str::to_string),
                before: None,
            });
        }
        for (key, rv, op) in &resolution.unattributed {
            keys.entry(key.clone()).or_default().push(Commit {
                rv: *rv,
                key: key.clone(),
                op: *op,
                kind: ChangeKind::Deleted,
                after: None,
                before: None,
            });
        }
        for commits in keys.values_mut() {
            commits.sort_by_key(|c| c.rv);
            let mut before = None;
            for c in commits.iter_mut() {
                c.before = before.clone();
                before = c.after.clone();
            }
        }
        let mut maybe_absent: HashMap<String, Vec<(Rv, Option<Rv>, usize)>> = HashMap::new();
        for (key, order) in orders {
            for (pos, &i) in order.iter().enumerate() {
                let op = &ops[i];
                let unseen_delete = matches!(op.input, Input::Delete { .. })
                    && model::classify(op) == Class::UncertainWrite
                    && resolution.rv[i].is_none();
                if !unseen_delete {
                    continue;
                }
                let from = order[..pos]
                    .iter()
                    .rev()
                    .find_map(|&j| resolution.rv[j])
                    .unwrap_or(0);
                let to = order[pos + 1..].iter().find_map(|&j| resolution.rv[j]);
                maybe_absent
                    .entry(key.clone())
                    .or_default()
                    .push((from, to, i));
            }
        }
        let mut acknowledged: HashMap<String, Vec<Acknowledged>> = HashMap::new();
        for (i, op) in ops.iter().enumerate() {
            if let (Input::Delete { key, .. }, Output::Deleted, Class::Write, None) =
                (&op.input, &op.output, model::classify(op), resolution.rv[i])
            {
                let (above, below) = delete_bounds(history, resolution, i);
                acknowledged
                    .entry(key.clone())
                    .or_default()
                    .push(Acknowledged {
                        op: i,
                        above,
                        below,
                    });
            }
        }
        Timeline {
            keys,
            maybe_absent,
            acknowledged,
            all_keys,
        }
    }

    /// What `key` may hold at resourceVersion `rv`.
    pub fn at(&self, key: &str, rv: Rv) -> AtRv<'_> {
        let commits = self.keys.get(key).map(Vec::as_slice).unwrap_or(&[]);
        let n = commits.partition_point(|c| c.rv <= rv);
        let prev = n.checked_sub(1).map_or(0, |p| commits[p].rv);
        // An acknowledged delete certainly between the last commit and `rv` made the key
        // absent; one that can be there may have.
        let acknowledged = self.acknowledged(key);
        let deleted = acknowledged
            .iter()
            .find(|d| d.above >= prev && d.below.is_some_and(|b| b <= rv))
            .map(|d| d.op);
        let state = n
            .checked_sub(1)
            .and_then(|p| commits[p].after.as_deref().map(|v| (commits[p].rv, v)))
            .filter(|_| deleted.is_none());
        let may_be_absent = self.maybe_absent.get(key).is_some_and(|windows| {
            windows
                .iter()
                .any(|&(from, to, _)| from < rv && to.is_none_or(|to| rv < to))
        }) || acknowledged.iter().any(|d| {
            let least = d.above.max(prev) + 1;
            least <= rv && d.below.is_none_or(|b| least < b)
        });
        AtRv {
            state,
            may_be_absent,
            until: commits.get(n).map(|c| c.rv),
            by: deleted.or(n.checked_sub(1).map(|p| commits[p].op)),
        }
    }

    /// The deletes of `key` acknowledged without their resourceVersion that no event named.
    pub fn acknowledged(&self, key: &str) -> &[Acknowledged] {
        self.acknowledged.get(key).map(Vec::as_slice).unwrap_or(&[])
    }

    /// Every commit of keys starting with `prefix`, in resourceVersion order.
    pub fn commits_under(&self, prefix: &str) -> Vec<&Commit> {
        let mut all: Vec<&Commit> = self
            .keys
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .flat_map(|(_, c)| c)
            .collect();
        all.sort_by_key(|c| c.rv);
        all
    }

    /// Every key any operation names that starts with `prefix`.
    pub fn keys_under<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a String> + 'a {
        self.all_keys.iter().filter(move |k| k.starts_with(prefix))
    }

    /// The commit at resourceVersion `rv`, if any.
    pub fn commit_at(&self, rv: Rv) -> Option<&Commit> {
        self.keys.values().flatten().find(|c| c.rv == rv)
    }
}

/// The largest resourceVersion of a committed write that returned before `t`, with the write.
pub fn floor_before(history: &History, resolution: &Resolution, t: u64) -> Option<(Rv, usize)> {
    history
        .operations
        .iter()
        .enumerate()
        .filter(|(i, op)| resolution.rv[*i].is_some() && op.ret.is_some_and(|r| r < t))
        .filter(|(_, op)| model::classify(op) == Class::Write)
        .map(|(i, _)| (resolution.rv[i].unwrap_or(0), i))
        .max()
}

/// The smallest resourceVersion of a committed write called after `t`, with the write.
pub fn ceiling_after(history: &History, resolution: &Resolution, t: u64) -> Option<(Rv, usize)> {
    (0..history.operations.len())
        .filter(|&j| history.operations[j].call > t)
        .filter_map(|j| resolution.rv[j].map(|r| (r, j)))
        .min()
}

/// The bounds real time gives the unknown resourceVersion of write `i` (a delete
/// acknowledged without it): above every write that returned before it was called (0 when
/// none), below every write called after it returned (`None` when none).
pub fn delete_bounds(history: &History, resolution: &Resolution, i: usize) -> (Rv, Option<Rv>) {
    let op = &history.operations[i];
    let above = floor_before(history, resolution, op.call).map_or(0, |f| f.0);
    let below = op
        .ret
        .and_then(|ret| ceiling_after(history, resolution, ret))
        .map(|c| c.0);
    (above, below)
}

/// How many writes going back in real time are described (one bad resourceVersion can put
/// every later write below it).
const REPORTED: usize = 10;

/// Checks that committed writes have distinct resourceVersions across all keys, and that a
/// write called after another returned has a larger one.
pub fn check_rvs(history: &History, resolution: &Resolution, violations: &mut Vec<String>) {
    let ops = &history.operations;
    let mut by_rv: BTreeMap<Rv, Vec<usize>> = BTreeMap::new();
    for (i, rv) in resolution.rv.iter().enumerate() {
        if let Some(rv) = rv {
            by_rv.entry(*rv).or_default().push(i);
        }
    }
    for (rv, writes) in &by_rv {
        if writes.len() > 1 {
            let mut v = format!("resourceVersion {rv} was given to {} writes:", writes.len());
            for &i in writes {
                v.push_str("\n    ");
                v.push_str(&describe::operation(history, i));
            }
            violations.push(v);
        }
    }
    // Real-time order: sweep the writes by call time, keeping the returned write with the
    // largest resourceVersion.
    let mut returned: Vec<usize> = (0..ops.len())
        .filter(|&i| resolution.rv[i].is_some() && model::classify(&ops[i]) == Class::Write)
        .collect();
    returned.sort_by_key(|&i| ops[i].ret);
    let mut called: Vec<usize> = (0..ops.len())
        .filter(|&i| resolution.rv[i].is_some())
        .collect();
    called.sort_by_key(|&i| ops[i].call);
    let mut best: Option<usize> = None;
    let mut r = 0;
    let mut backwards = 0;
    for &b in &called {
        while r < returned.len() && ops[returned[r]].ret.is_some_and(|t| t < ops[b].call) {
            let a = returned[r];
            if best.is_none_or(|x| resolution.rv[a] > resolution.rv[x]) {
                best = Some(a);
            }
            r += 1;
        }
        if let Some(a) = best
            && resolution.rv[a] >= resolution.rv[b]
        {
            backwards += 1;
            if backwards > REPORTED {
                continue;
            }
            violations.push(format!(
                "resourceVersions go back in real time: a write called after another returned \
                 has a resourceVersion not above it:\n    {}\n    {}",
                describe::operation(history, a),
                describe::operation(history, b)
            ));
        }
    }
    if backwards > REPORTED {
        violations.push(format!(
            "... and {} more writes whose resourceVersion goes back in real time",
            backwards - REPORTED
        ));
    }
}
