//! Linearizability of each key's operations (Wing & Gong's search with Lowe's memoisation,
//! key by key by P-compositionality).
//!
//! A history is linearizable when its operations can be put in a sequence that keeps real
//! time (an operation that returned before another was called comes first) and that the
//! sequential [`model`] accepts answer by answer. Linearizability is local (Herlihy
//! & Wing): a history is linearizable iff each object's sub-history is, so every key is searched
//! on its own (Horn & Kroening's P-compositionality), which keeps each search small.
//!
//! The search is Wing & Gong's (1993): walk the history's call and return events in time
//! order; at a call, try to linearize that operation now (the model accepts its answer in the
//! current state), lift it out of the history and start again from the first remaining event;
//! at a return whose operation is not yet linearized, undo the last choice. Lowe (2017) made it
//! practical: a cache of (set of linearized operations, model state) pairs already explored
//! prunes every configuration reached a second time, and the history is a doubly linked list
//! that lifting and undoing change in constant time (as in porcupine). The search is a loop
//! with an explicit stack, never recursion, and gives up after a budget of steps.
//!
//! Two refinements of ours keep it fast on real runs. An operation that leaves the state as
//! it was (a read, a failed write) is linearized at once and never undone on its own: placing
//! it as early as possible loses no linearization, so many overlapping reads of a changing
//! key do not make the search exponential. And writes without a certain outcome that nothing
//! showed (mostly writes that never took effect; they can be tried at every point of the
//! history) are first left out, except deletes, which may explain a NotFound: if the rest is
//! linearizable, so is the whole (they did not take effect); only if not is the whole
//! searched.
//!
//! An operation without a certain outcome has no return event (it may take effect at any
//! time after its call, or never): the search succeeds once every operation with a return is
//! linearized, leaving such operations out, which is their "never took effect". Consistent
//! gets take part; `resourceVersion=0` gets and all lists are checked elsewhere
//! ([`lists`](crate::lists)), against the resourceVersion order this check confirms.
//!
//! A key that is not linearizable is reported with a counterexample: a window of its writes
//! in resourceVersion order, searched from the state right after the write before the
//! window, with as few of the operations that change nothing as still fail. Each step keeps
//! the subset a true counterexample (were the key's history linearizable, the subset would
//! be), so no operation is blamed for a failure that removing another caused.

use std::cell::Cell;
use std::collections::{BTreeMap, HashMap, HashSet};

use crate::history::{History, Input, Output, Rv};
use crate::model::{self, Action, Answer, Class, ModelOp, NO_VALUE, State, ValueId};
use crate::resolve::Resolution;
use crate::{describe, shrink, timeline};

/// The steps one key's search may take before it gives up.
pub const BUDGET: u64 = 10_000_000;

/// The steps each search of the shrinking may take.
const SHRINK_BUDGET: u64 = 200_000;

/// The steps all searches of one shrinking may take together.
const SHRINK_TOTAL: u64 = 10_000_000;

/// One operation of a key's partition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionOp {
    /// Its index in [`History::operations`].
    pub index: usize,
    /// When it was called.
    pub call: u64,
    /// When it returned; `None` when its outcome is uncertain (it may take effect any time).
    pub ret: Option<u64>,
    /// What it asked and was answered.
    pub op: ModelOp,
}

/// The result of one search.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Linearizable: the positions (in the searched slice) of the operations that took
    /// effect, in their linearization order.
    Linearizable(Vec<usize>),
    /// Not linearizable: the longest sequence of positions the search could linearize.
    NotLinearizable {
        /// The longest linearizable prefix found.
        longest: Vec<usize>,
    },
    /// The search took more than its budget of steps.
    BudgetExceeded,
}

const NIL: usize = usize::MAX;

/// Searches for a linearization of `ops` (one key's operations) from the absent state.
pub fn search(ops: &[PartitionOp], budget: u64) -> Verdict {
    search_from(ops, budget, State::default())
}

/// Searches for a linearization of `ops` from `initial`.
pub fn search_from(ops: &[PartitionOp], budget: u64, initial: State) -> Verdict {
    search_counted(ops, budget, initial).0
}

/// [`search_from`], also returning the steps it took.
fn search_counted(ops: &[PartitionOp], budget: u64, initial: State) -> (Verdict, u64) {
    // The events: a call and, for operations with a certain outcome, a return.
    let mut events: Vec<(u64, bool, usize)> = Vec::with_capacity(ops.len() * 2);
    for (i, op) in ops.iter().enumerate() {
        events.push((op.call, false, i));
        events.push((op.ret.unwrap_or(u64::MAX), true, i));
    }
    // Calls before returns at equal times: such operations count as concurrent.
    events.sort_unstable_by_key(|&(t, is_ret, i)| (t, is_ret, ops[i].ret.is_none(), i));
    // A doubly linked list over the events, slot 0 the head.
    let n = events.len() + 1;
    let mut next = vec![NIL; n];
    let mut prev = vec![NIL; n];
    let mut call_slot = vec![0; ops.len()];
    let mut ret_slot = vec![0; ops.len()];
    for (k, &(_, is_ret, i)) in events.iter().enumerate() {
        let slot = k + 1;
        prev[slot] = slot - 1;
        next[slot - 1] = slot;
        if is_ret {
            ret_slot[i] = slot;
        } else {
            call_slot[i] = slot;
        }
    }
    let event_of = |slot: usize| events[slot - 1];

    let words = ops.len().div_ceil(64);
    let mut linearized = vec![0u64; words];
    let mut cache: HashSet<(Vec<u64>, State)> = HashSet::new();
    let mut stack: Vec<(usize, State)> = Vec::new();
    let mut longest: Vec<usize> = Vec::new();
    let mut state = initial;
    let mut slot = next[0];
    let mut steps = 0u64;
    loop {
        steps += 1;
        if steps > budget {
            return (Verdict::BudgetExceeded, steps);
        }
        if slot == NIL {
            break;
        }
        let (_, is_ret, i) = event_of(slot);
        if !is_ret {
            if let Some(after) = model::step(state, ops[i].op) {
                linearized[i / 64] |= 1 << (i % 64);
                if cache.insert((linearized.clone(), after)) {
                    stack.push((i, state));
                    if stack.len() > longest.len() {
                        longest = stack.iter().map(|&(i, _)| i).collect();
                    }
                    state = after;
                    // Lift the call and its return out of the list.
                    for s in [call_slot[i], ret_slot[i]] {
                        next[prev[s]] = next[s];
                        if next[s] != NIL {
                            prev[next[s]] = prev[s];
                        }
                    }
                    slot = next[0];
                    continue;
                }
                linearized[i / 64] &= !(1 << (i % 64));
            }
            slot = next[slot];
        } else if ops[i].ret.is_none() {
            // Only operations without a return remain: they need not take effect.
            break;
        } else {
            // An operation returned without being linearized: undo the last choice. An
            // operation that left the state as it was (a read, a failed write) is never a
            // choice worth undoing alone (every operation it must follow was linearized
            // before it, so any completion without it has one with it here): undo up to the
            // last operation that changed the state.
            loop {
                let Some((j, before)) = stack.pop() else {
                    return (Verdict::NotLinearizable { longest }, steps);
                };
                linearized[j / 64] &= !(1 << (j % 64));
                let after = state;
                state = before;
                for s in [ret_slot[j], call_slot[j]] {
                    next[prev[s]] = s;
                    if next[s] != NIL {
                        prev[next[s]] = s;
                    }
                }
                if after != before {
                    slot = next[call_slot[j]];
                    break;
                }
            }
        }
    }
    let order = stack.into_iter().map(|(i, _)| i).collect();
    (Verdict::Linearizable(order), steps)
}

/// The positions of `ops` but the writes nothing showed that are not deletes.
fn seen_or_deletes(ops: &[PartitionOp]) -> Vec<usize> {
    (0..ops.len())
        .filter(|&p| !unseen(&ops[p]) || matches!(ops[p].op.action, Action::Delete(_)))
        .collect()
}

/// The operations of one key as the search takes them: consistent gets and every write with
/// an effect or an answer (reads from the cache, lists and dropped operations are not here).
pub fn partitions(
    history: &History,
    resolution: &Resolution,
) -> BTreeMap<String, Vec<PartitionOp>> {
    let mut by_key: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, op) in history.operations.iter().enumerate() {
        let Some(key) = op.input.key() else { continue };
        let class = model::classify(op);
        let cached = matches!(
            op.input,
            Input::Get {
                from_cache: true,
                ..
            }
        );
        if class == Class::Dropped || cached {
            continue;
        }
        by_key.entry(key.to_string()).or_default().push(i);
    }
    by_key
        .into_iter()
        .map(|(key, indices)| {
            let mut values: HashMap<&str, ValueId> = HashMap::new();
            for &i in &indices {
                if let Some(v) = model::written_value(&history.operations[i].input) {
                    let id = values.len() as ValueId;
                    values.entry(v).or_insert(id);
                }
            }
            let value_id = |v: &str| values.get(v).copied().unwrap_or(NO_VALUE);
            let ops = indices
                .iter()
                .map(|&i| {
                    let op = &history.operations[i];
                    let uncertain = model::classify(op) == Class::UncertainWrite;
                    let action = match &op.input {
                        Input::Create { value, .. } => Action::Create(value_id(value)),
                        Input::Update {
                            value,
                            precondition,
                            ..
                        } => Action::Update(value_id(value), *precondition),
                        Input::Patch { value, .. } => Action::Update(value_id(value), None),
                        Input::Delete { precondition, .. } => Action::Delete(*precondition),
                        Input::Get { .. } | Input::List { .. } => Action::Get,
                    };
                    let answer = if uncertain {
                        Answer::Uncertain(resolution.rv[i])
                    } else {
                        match &op.output {
                            Output::Written { rv } => Answer::Written(*rv),
                            // A watch event may have told its resourceVersion.
                            Output::Deleted => match resolution.rv[i] {
                                Some(rv) => Answer::Written(rv),
                                None => {
                                    let (above, below) =
                                        timeline::delete_bounds(history, resolution, i);
                                    Answer::Deleted { above, below }
                                }
                            },
                            Output::Found { rv, value } => Answer::Found(*rv, value_id(value)),
                            Output::NotFound => Answer::NotFound,
                            Output::AlreadyExists => Answer::AlreadyExists,
                            Output::Conflict => Answer::Conflict,
                            _ => Answer::Impossible,
                        }
                    };
                    PartitionOp {
                        index: i,
                        call: op.call,
                        ret: if uncertain { None } else { op.ret },
                        op: ModelOp { action, answer },
                    }
                })
                .collect();
            (key, ops)
        })
        .collect()
}

/// Checks every key's operations; returns, for each key found linearizable, the history
/// indices of the operations that took effect in linearization order. A key that is not
/// linearizable adds a violation with a minimal counterexample.
pub fn check_keys(
    history: &History,
    resolution: &Resolution,
    violations: &mut Vec<String>,
) -> BTreeMap<String, Vec<usize>> {
    let mut orders = BTreeMap::new();
    for (key, ops) in partitions(history, resolution) {
        // First without the writes nothing showed (but deletes): if that is linearizable, so
        // is the whole, with them never applied.
        let kept = seen_or_deletes(&ops);
        let seen: Vec<PartitionOp> = kept.iter().map(|&p| ops[p]).collect();
        let first = (seen.len() < ops.len()).then(|| search(&seen, BUDGET / 4));
        if let Some(Verdict::Linearizable(order)) = first {
            let order = order.into_iter().map(|q| ops[kept[q]].index).collect();
            orders.insert(key, order);
            continue;
        }
        match search(&ops, BUDGET) {
            Verdict::Linearizable(order) => {
                orders.insert(key, order.into_iter().map(|p| ops[p].index).collect());
            }
            Verdict::NotLinearizable { .. } => {
                violations.push(counterexample(history, &key, &ops));
            }
            Verdict::BudgetExceeded => {
                let mut v = format!(
                    "key {key:?}: search budget exceeded ({BUDGET} steps over {} operations); \
                     linearizability not decided",
                    ops.len()
                );
                if let Some(Verdict::NotLinearizable { .. }) = first {
                    v.push_str(&format!(
                        "\n  taking its {} unanswered writes nothing showed (but deletes) as never \
                         applied, it is not:\n  {}",
                        ops.len() - seen.len(),
                        counterexample(history, &key, &seen)
                    ));
                }
                violations.push(v);
            }
        }
    }
    orders
}

/// Whether an operation is a write that may have taken effect and that nothing showed.
fn unseen(op: &PartitionOp) -> bool {
    op.op.answer == Answer::Uncertain(None)
}

/// Whether an operation is a delete that took effect at a resourceVersion nothing told.
fn acknowledged(op: &PartitionOp) -> bool {
    matches!(op.op.answer, Answer::Deleted { .. })
}

/// The resourceVersion of a write that took effect, known from its answer or an observation.
fn commit_rv(op: &PartitionOp) -> Option<Rv> {
    match (op.op.action, op.op.answer) {
        (Action::Get, _) => None,
        (_, Answer::Written(rv) | Answer::Uncertain(Some(rv))) => Some(rv),
        _ => None,
    }
}

/// The state right after a write with a known resourceVersion.
fn state_after(op: &PartitionOp, rv: Rv) -> State {
    let object = match op.op.action {
        Action::Create(v) | Action::Update(v, _) => Some((Some(rv), v)),
        Action::Delete(_) | Action::Get => None,
    };
    State { object, last: rv }
}

/// `ops` without the writes nothing showed that were called after every other operation
/// returned: those can only come last, where they change nothing anything sees, so `ops` is
/// linearizable exactly when what remains is.
fn without_trailing_unseen(ops: &[PartitionOp]) -> Vec<PartitionOp> {
    let last_return = ops
        .iter()
        .filter(|op| !unseen(op))
        .map(|op| op.ret.unwrap_or(u64::MAX))
        .max()
        .unwrap_or(0);
    ops.iter()
        .copied()
        .filter(|op| !unseen(op) || op.call < last_return)
        .collect()
}

/// Shrinks a key's failing operations to a small failing subset and describes it.
///
/// Every step keeps the subset a counterexample in its own right: if the key's history were
/// linearizable, so would the subset be. With the writes of known resourceVersion (the
/// commits) in resourceVersion order `c0, c1, …` (every linearization has them in that
/// order), the subset is a window of commits `ci..cj` searched from the state right after
/// `c(i-1)`, with the operations that change nothing (reads, failed writes) called after
/// `c(i-1)` returned and returned before `c(j+1)` was called, and the writes nothing showed
/// that were called before `c(j+1)` returned and before some other operation of the subset
/// returned (they may always be left out, and later ones come last). A delete acknowledged
/// without its resourceVersion is in the subset when it certainly lies inside the window
/// (called after `c(i-1)` returned, returned before `c(j+1)` was called), out of it when it
/// certainly lies outside; a window it may straddle is not tried. The window is
/// narrowed from below, then from above (by bisection), and then the operations that change
/// nothing are shrunk one by one (removing such an operation from a linearizable history
/// leaves it linearizable). Shrinking has a budget of steps overall; when it runs out, the
/// smallest failing subset found so far is printed.
fn counterexample(history: &History, key: &str, ops: &[PartitionOp]) -> String {
    let remaining = Cell::new(SHRINK_TOTAL);
    let fails = |subset: &[PartitionOp], initial: State| {
        let budget = remaining.get().min(SHRINK_BUDGET);
        if budget == 0 {
            return false;
        }
        let (verdict, steps) = search_counted(&without_trailing_unseen(subset), budget, initial);
        remaining.set(remaining.get().saturating_sub(steps));
        matches!(verdict, Verdict::NotLinearizable { .. })
    };
    let mut commits: Vec<usize> = (0..ops.len())
        .filter(|&p| commit_rv(&ops[p]).is_some())
        .collect();
    commits.sort_by_key(|&p| commit_rv(&ops[p]));
    let mut rank: Vec<Option<usize>> = vec![None; ops.len()];
    for (r, &p) in commits.iter().enumerate() {
        rank[p] = Some(r);
    }
    let n = commits.len();
    let never = u64::MAX;
    // The subset for the commits `i..j` and the state it starts from; `None` when an
    // acknowledged delete of unknown resourceVersion may fall on either side of the window's
    // bounds (it can be neither left out nor kept).
    let window = |i: usize, j: usize| -> Option<(Vec<PartitionOp>, State)> {
        let prev = i.checked_sub(1).map(|k| &ops[commits[k]]);
        let next = commits.get(j).map(|&p| &ops[p]);
        let after_prev = |op: &PartitionOp| prev.is_none_or(|c| op.call > c.ret.unwrap_or(never));
        let before_next = |op: &PartitionOp| next.is_none_or(|c| op.ret.unwrap_or(never) < c.call);
        let mut subset = Vec::new();
        for (p, op) in ops.iter().enumerate() {
            let keep = match rank[p] {
                Some(r) => (i..j).contains(&r),
                None if unseen(op) => next.is_none_or(|c| op.call < c.ret.unwrap_or(never)),
                None if acknowledged(op) => {
                    let before = prev.is_some_and(|c| op.ret.unwrap_or(never) < c.call);
                    let after = next.is_some_and(|c| op.call > c.ret.unwrap_or(never));
                    let inside = after_prev(op) && before_next(op);
                    if !(before || after || inside) {
                        return None;
                    }
                    inside
                }
                None => after_prev(op) && before_next(op),
            };
            if keep {
                subset.push(*op);
            }
        }
        let initial = prev.map_or(State::default(), |c| {
            state_after(c, commit_rv(c).unwrap_or(0))
        });
        Some((subset, initial))
    };
    let window_fails =
        |i: usize, j: usize| window(i, j).is_some_and(|(subset, initial)| fails(&subset, initial));
    // Where a window may start and end: at a commit no acknowledged delete of unknown
    // resourceVersion overlaps in real time (it is then certainly on one side).
    let bound_ok = |k: usize| {
        commits.get(k).is_none_or(|&p| {
            let c = &ops[p];
            ops.iter()
                .filter(|op| acknowledged(op))
                .all(|op| op.ret.unwrap_or(never) < c.call || op.call > c.ret.unwrap_or(never))
        })
    };
    // Starts `i` (after commit `i - 1`) and ends `j` (before commit `j`) in increasing order.
    let starts: Vec<usize> = (0..=n).filter(|&i| i == 0 || bound_ok(i - 1)).collect();
    let ends: Vec<usize> = (0..=n).filter(|&j| bound_ok(j)).collect();
    // The highest start that still fails (window(0, n) is the whole history, which fails).
    let (mut lo, mut hi) = (0, starts.len());
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if window_fails(starts[mid], n) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let i = starts[lo];
    // The lowest end that still fails (window(i, n) fails).
    let ends: Vec<usize> = ends.into_iter().filter(|&j| j >= i).collect();
    let (mut lo, mut hi) = (0, ends.len() - 1);
    let j = if window_fails(i, ends[0]) {
        ends[0]
    } else {
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if window_fails(i, ends[mid]) {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        ends[hi]
    };
    let (subset, initial) = window(i, j).unwrap_or_else(|| (ops.to_vec(), State::default()));
    let changes = |op: &PartitionOp| commit_rv(op).is_some() || unseen(op) || acknowledged(op);
    let fixed: Vec<PartitionOp> = subset.iter().copied().filter(|op| changes(op)).collect();
    let others: Vec<PartitionOp> = subset.iter().copied().filter(|op| !changes(op)).collect();
    let with_fixed = |kept: &[PartitionOp]| {
        let mut all = fixed.clone();
        all.extend_from_slice(kept);
        all
    };
    let kept = shrink::shrink(&others, |kept| fails(&with_fixed(kept), initial));
    let mut minimal = without_trailing_unseen(&with_fixed(&kept));
    minimal.sort_by_key(|op| (op.call, op.index));
    let longest = match search_from(&minimal, SHRINK_BUDGET, initial) {
        Verdict::NotLinearizable { longest } => longest,
        _ => Vec::new(),
    };
    let from = match i.checked_sub(1) {
        None => "the key absent".to_string(),
        Some(k) => format!(
            "the state right after {}",
            describe::operation(history, ops[commits[k]].index)
        ),
    };
    let mut out = format!(
        "key {key:?}: not linearizable ({} operations); a minimal counterexample, in call \
         order, from {from}:",
        ops.len()
    );
    for op in &minimal {
        out.push_str("\n    ");
        out.push_str(&describe::operation(history, op.index));
    }
    out.push_str("\n  longest linearizable prefix of it:");
    if longest.is_empty() {
        out.push_str(" (none)");
    }
    for p in longest {
        out.push_str(&format!(" #{}", minimal[p].index));
    }
    if remaining.get() == 0 {
        out.push_str("\n  (shrinking stopped at its budget: the set may not be minimal)");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn op(i: usize, call: u64, ret: Option<u64>, action: Action, answer: Answer) -> PartitionOp {
        PartitionOp {
            index: i,
            call: call * MS,
            ret: ret.map(|r| r * MS),
            op: ModelOp { action, answer },
        }
    }

    fn linearizable(ops: &[PartitionOp]) -> bool {
        match search(ops, BUDGET) {
            Verdict::Linearizable(_) => true,
            Verdict::NotLinearizable { .. } => false,
            Verdict::BudgetExceeded => panic!("budget exceeded"),
        }
    }

    #[test]
    fn a_read_overlapping_a_write_may_see_either_state() {
        let create = op(0, 0, Some(1), Action::Create(0), Answer::Written(1));
        let update = op(1, 2, Some(5), Action::Update(1, None), Answer::Written(2));
        let old = op(2, 3, Some(4), Action::Get, Answer::Found(1, 0));
        let new = op(2, 3, Some(4), Action::Get, Answer::Found(2, 1));
        assert!(linearizable(&[create, update, old]));
        assert!(linearizable(&[create, update, new]));
        // After the update returned, the old state is stale.
        let stale = op(2, 6, Some(7), Action::Get, Answer::Found(1, 0));
        assert!(!linearizable(&[create, update, stale]));
    }

    #[test]
    fn wing_and_gong_register_reads_cannot_flip_back() {
        // A register (one key updated unconditionally): two overlapping reads each see one
        // of two writes; a later read cannot go back to the older value after a newer one
        // was read by a read that returned earlier.
        let create = op(0, 0, Some(1), Action::Create(0), Answer::Written(1));
        let w1 = op(1, 2, Some(10), Action::Update(1, None), Answer::Written(2));
        let r_new = op(2, 3, Some(4), Action::Get, Answer::Found(2, 1));
        let r_old = op(3, 5, Some(6), Action::Get, Answer::Found(1, 0));
        assert!(linearizable(&[create, w1, r_new]));
        assert!(linearizable(&[create, w1, r_old]));
        assert!(!linearizable(&[create, w1, r_new, r_old]));
    }

    #[test]
    fn the_search_returns_the_order_that_took_effect() {
        let create = op(0, 0, Some(10), Action::Create(0), Answer::Written(1));
        let get = op(1, 0, Some(10), Action::Get, Answer::NotFound);
        let Verdict::Linearizable(order) = search(&[create, get], BUDGET) else {
            panic!("not linearizable");
        };
        assert_eq!(order, vec![1, 0]);
    }

    #[test]
    fn an_uncertain_write_may_never_take_effect_or_take_effect_late() {
        let create = op(0, 0, Some(1), Action::Create(0), Answer::Written(1));
        let lost = op(1, 2, None, Action::Update(1, None), Answer::Uncertain(None));
        let unchanged = op(2, 3, Some(4), Action::Get, Answer::Found(1, 0));
        let later = op(3, 50, Some(51), Action::Get, Answer::Found(7, 1));
        let late = op(
            1,
            2,
            None,
            Action::Update(1, None),
            Answer::Uncertain(Some(7)),
        );
        assert!(linearizable(&[create, lost, unchanged]));
        assert!(linearizable(&[create, late, unchanged, later]));
        assert!(!linearizable(&[create, lost, later]));
    }

    #[test]
    fn many_concurrent_reads_are_searched_quickly() {
        // 200 reads all overlapping one another and two writes: the cache keeps it linear.
        let mut ops = vec![
            op(0, 0, Some(1), Action::Create(0), Answer::Written(1)),
            op(
                1,
                2,
                Some(1000),
                Action::Update(1, None),
                Answer::Written(2),
            ),
        ];
        for i in 0..200 {
            let answer = if i % 2 == 0 {
                Answer::Found(1, 0)
            } else {
                Answer::Found(2, 1)
            };
            ops.push(op(i + 2, 3 + i as u64, Some(1500), Action::Get, answer));
        }
        // Reads of the new value must come after reads of the old one can no longer happen:
        // all overlap, so any order with old reads first works.
        assert!(linearizable(&ops));
    }
}
