//! Which write each observed value comes from, and the resourceVersions of writes whose
//! outcome the client never learnt, or of deletes acknowledged without one.
//!
//! Values are unique per write, so a get, a list item or a watch event showing a value names
//! the write that produced it, and its resourceVersion is that write's. A write without a
//! certain outcome that something showed therefore took effect, at that resourceVersion (as
//! etcd's robustness tests "patch" their history from watch events). A DELETED event at a
//! resourceVersion no known write of its key has names the delete of unknown resourceVersion
//! (unanswered, or acknowledged without it) of that key that can have made it, when only one can (else it is a commit without a known author). The first observation decides; observations that
//! disagree with it, or with a write's own answer, are left to the checks that compare
//! observations with the history.

use std::collections::{HashMap, HashSet};

use crate::history::{ChangeKind, History, Input, Output, Rv, WatchEvent};
use crate::model::{self, Class};

/// The resourceVersion of every write that took effect, as far as the history tells.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolution {
    /// Per operation (by index): the resourceVersion of its committed write, when it is a
    /// write that answered written, an uncertain write an observation showed, or a delete
    /// acknowledged without its resourceVersion that a DELETED event names.
    pub rv: Vec<Option<Rv>>,
    /// The write (by index) that wrote each value.
    pub writer: HashMap<String, usize>,
    /// DELETED events `(key, rv, candidate)` that more than one delete of unknown
    /// resourceVersion can have made (`candidate` is the first of them): commits whose author
    /// is not known.
    pub unattributed: Vec<(String, Rv, usize)>,
}

impl Resolution {
    /// Resolves the history's writes.
    pub fn new(history: &History) -> Resolution {
        let ops = &history.operations;
        let mut rv: Vec<Option<Rv>> = ops
            .iter()
            .map(|op| match (model::classify(op), &op.output) {
                (Class::Write, Output::Written { rv }) => Some(*rv),
                _ => None,
            })
            .collect();
        let mut writer = HashMap::new();
        for (i, op) in ops.iter().enumerate() {
            if let Some(v) = model::written_value(&op.input) {
                writer.entry(v.to_string()).or_insert(i);
            }
        }
        let observe = |key: &str, at: Rv, value: &str, rv: &mut Vec<Option<Rv>>| {
            if let Some(&w) = writer.get(value)
                && model::classify(&ops[w]) == Class::UncertainWrite
                && ops[w].input.key() == Some(key)
                && rv[w].is_none()
            {
                rv[w] = Some(at);
            }
        };
        // Observations in call order, then the watches.
        let mut order: Vec<usize> = (0..ops.len()).collect();
        order.sort_by_key(|&i| (ops[i].call, i));
        for &i in &order {
            if model::classify(&ops[i]) != Class::Read {
                continue;
            }
            match &ops[i].output {
                Output::Found { rv: at, value } => {
                    if let Some(key) = ops[i].input.key() {
                        observe(key, *at, value, &mut rv);
                    }
                }
                Output::Listed { items, .. } => {
                    for (key, at, value) in items {
                        observe(key, *at, value, &mut rv);
                    }
                }
                _ => {}
            }
        }
        for w in &history.watches {
            for e in &w.events {
                if let WatchEvent::Change {
                    kind: ChangeKind::Added | ChangeKind::Modified,
                    key,
                    rv: at,
                    value,
                } = e
                {
                    observe(key, *at, value, &mut rv);
                }
            }
        }
        // DELETED events name the deletes of unknown resourceVersion (unanswered, or
        // acknowledged without it): the one that can have made it (its precondition held, it
        // was called before every write above it returned, and, when acknowledged, it
        // returned after every write below it was called), when only one can; otherwise the
        // delete is recorded without its author. An acknowledged delete is a candidate as an
        // uncertain one is (that it certainly happened does not make it this event's author
        // rather than another's).
        let mut known: HashSet<(&str, Rv)> = HashSet::new();
        for (i, op) in ops.iter().enumerate() {
            if let (Some(key), Some(at)) = (op.input.key(), rv[i]) {
                known.insert((key, at));
            }
        }
        let mut unattributed = Vec::new();
        for w in &history.watches {
            for e in &w.events {
                let WatchEvent::Change {
                    kind: ChangeKind::Deleted,
                    key,
                    rv: at,
                    ..
                } = e
                else {
                    continue;
                };
                if known.contains(&(key.as_str(), *at)) {
                    continue;
                }
                let before = (0..ops.len())
                    .filter(|&i| ops[i].input.key() == Some(key))
                    .filter_map(|i| rv[i])
                    .filter(|r| r < at)
                    .max();
                let deadline = (0..ops.len())
                    .filter(|&i| rv[i].is_some_and(|r| r > *at))
                    .filter_map(|i| ops[i].ret)
                    .min()
                    .unwrap_or(u64::MAX);
                // An acknowledged delete committed before it returned: not after a write
                // called later.
                let committed_after = (0..ops.len())
                    .filter(|&i| rv[i].is_some_and(|r| r < *at))
                    .map(|i| ops[i].call)
                    .max()
                    .unwrap_or(0);
                let candidates: Vec<usize> = order
                    .iter()
                    .copied()
                    .filter(|&i| {
                        let op = &ops[i];
                        let Input::Delete { precondition, .. } = &op.input else {
                            return false;
                        };
                        rv[i].is_none()
                            && (model::classify(op) == Class::UncertainWrite
                                || op.output == Output::Deleted)
                            && op.ret.is_none_or(|r| r >= committed_after)
                            && op.input.key() == Some(key)
                            && op.call <= deadline
                            && op.call <= w.closed
                            && precondition.is_none_or(|p| Some(p) == before)
                    })
                    .collect();
                match candidates.as_slice() {
                    [] => {}
                    [i] => rv[*i] = Some(*at),
                    [i, ..] => unattributed.push((key.clone(), *at, *i)),
                }
                known.insert((key.as_str(), *at));
            }
        }
        Resolution {
            rv,
            writer,
            unattributed,
        }
    }
}
