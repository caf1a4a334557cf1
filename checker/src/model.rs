//! The sequential model of one Kubernetes object (one key), and how a recorded operation is
//! classified for it.
//!
//! The state of a key is absent or `(resourceVersion, value)`, plus the resourceVersion of the
//! key's last write (a create after a delete must still get a larger resourceVersion than the
//! delete). Every key starts absent: a run uses fresh keys.
//!
//! | operation            | absent           | present at `rv`                                    |
//! |----------------------|------------------|----------------------------------------------------|
//! | create               | written          | AlreadyExists                                      |
//! | get (consistent)     | NotFound         | found `(rv, value)`                                |
//! | update, no precond.  | NotFound         | written                                            |
//! | update if `p`        | NotFound         | Conflict if `rv != p`, else written                |
//! | patch                | NotFound         | written                                            |
//! | delete (if `p`)      | NotFound         | (Conflict if `rv != p`, else) written, then absent |
//!
//! A written resourceVersion must be larger than the key's last one. A delete answered
//! [`Output::Deleted`] (success without its resourceVersion) is a delete that certainly took
//! effect between its call and return: it needs the object present (and its precondition to
//! hold), leaves the key absent, and raises the key's last resourceVersion to one above the
//! last (a lower bound of its unknown one). Its resourceVersion is also bounded by real time
//! across keys: above every write that returned before it was called, below every write
//! called after it returned (so the key's writes are ordered around it as their
//! resourceVersions say). A write without a certain
//! outcome (no answer, or an answer that does not say) may take effect or not; its
//! resourceVersion is the one a read, list or watch event showed for its (unique) value, or
//! unknown when nothing showed it.

use crate::history::{Input, Operation, Output, Rv};

/// How an operation takes part in the checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// A write whose answer says what happened (written, deleted, or a definite failure).
    Write,
    /// A write that may or may not have taken effect (no answer, or [`Output::Unknown`]).
    UncertainWrite,
    /// A read (get or list) with an answer.
    Read,
    /// Tells nothing and changed nothing: [`Output::Rejected`], or a read without an answer.
    Dropped,
}

/// Classifies an operation.
pub fn classify(op: &Operation) -> Class {
    let is_read = matches!(op.input, Input::Get { .. } | Input::List { .. });
    let uncertain = op.ret.is_none() || op.output == Output::Unknown;
    match (is_read, uncertain, &op.output) {
        (_, false, Output::Rejected) => Class::Dropped,
        (true, true, _) => Class::Dropped,
        (true, false, _) => Class::Read,
        (false, true, _) => Class::UncertainWrite,
        (false, false, _) => Class::Write,
    }
}

/// The value an operation writes, if it writes one (deletes do not).
pub fn written_value(input: &Input) -> Option<&str> {
    match input {
        Input::Create { value, .. } | Input::Update { value, .. } | Input::Patch { value, .. } => {
            Some(value)
        }
        _ => None,
    }
}

/// A value as a small integer of its key's partition ([`NO_VALUE`] for a value no write of the
/// key wrote, which then matches nothing).
pub type ValueId = u32;

/// The id of a value that no write of the key wrote.
pub const NO_VALUE: ValueId = u32::MAX;

/// The state of one key: the object (its resourceVersion, `None` when unknown, and value) if
/// present, and the key's last written resourceVersion (0 before any).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct State {
    /// The object, when present.
    pub object: Option<(Option<Rv>, ValueId)>,
    /// The largest resourceVersion written to the key so far (a lower bound when the last
    /// write's is unknown).
    pub last: Rv,
}

/// What an operation asks of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Create with a value.
    Create(ValueId),
    /// Update (or patch, with no precondition) to a value.
    Update(ValueId, Option<Rv>),
    /// Delete, optionally conditioned.
    Delete(Option<Rv>),
    /// Consistent get.
    Get,
}

/// What the operation was answered, as the model needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Answer {
    /// Written at this resourceVersion.
    Written(Rv),
    /// Deleted at a resourceVersion nothing told ([`Output::Deleted`]): it took effect, at a
    /// resourceVersion above `above` (every write that returned before it was called) and
    /// below `below` (every write called after it returned), when known.
    Deleted {
        /// A resourceVersion the delete's is above.
        above: Rv,
        /// A resourceVersion the delete's is below.
        below: Option<Rv>,
    },
    /// May or may not have taken effect; its resourceVersion if an observation resolved it.
    Uncertain(Option<Rv>),
    /// Found at a resourceVersion with a value.
    Found(Rv, ValueId),
    /// 404.
    NotFound,
    /// 409 AlreadyExists.
    AlreadyExists,
    /// 409 Conflict.
    Conflict,
    /// An answer the operation cannot have (a list result for a get, say): matches nothing.
    Impossible,
}

/// One operation of a key's partition, ready for the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ModelOp {
    /// What was asked.
    pub action: Action,
    /// What was answered.
    pub answer: Answer,
}

/// Applies `op` to `state`: the state after, or `None` when the model cannot give that answer
/// in that state. An uncertain write is applied only when it would succeed (not applying it at
/// all is the search's other choice).
pub fn step(state: State, op: ModelOp) -> Option<State> {
    let present = state.object.map(|(rv, _)| rv);
    let holds = |pre: Option<Rv>| match (pre, present) {
        (None, Some(_)) => true,
        (Some(p), Some(rv)) => rv == Some(p),
        (_, None) => false,
    };
    let newer = |rv: Rv| rv > state.last;
    match (op.action, op.answer) {
        (Action::Get, Answer::Found(rv, v)) => {
            (state.object == Some((Some(rv), v))).then_some(state)
        }
        (Action::Get | Action::Update(..) | Action::Delete(_), Answer::NotFound) => {
            present.is_none().then_some(state)
        }
        (Action::Create(v), Answer::Written(rv)) => {
            (present.is_none() && newer(rv)).then_some(State {
                object: Some((Some(rv), v)),
                last: rv,
            })
        }
        (Action::Create(_), Answer::AlreadyExists) => present.is_some().then_some(state),
        (Action::Update(v, pre), Answer::Written(rv)) => {
            (holds(pre) && newer(rv)).then_some(State {
                object: Some((Some(rv), v)),
                last: rv,
            })
        }
        (Action::Update(_, Some(_)) | Action::Delete(Some(_)), Answer::Conflict) => {
            let pre = match op.action {
                Action::Update(_, pre) | Action::Delete(pre) => pre,
                _ => None,
            };
            (present.is_some() && !holds(pre)).then_some(state)
        }
        (Action::Delete(pre), Answer::Written(rv)) => (holds(pre) && newer(rv)).then_some(State {
            object: None,
            last: rv,
        }),
        (Action::Delete(pre), Answer::Deleted { above, below }) => {
            // Its resourceVersion is at least `least` and below `below`: the key's later
            // writes need larger ones.
            let least = state.last.max(above) + 1;
            (holds(pre) && below.is_none_or(|b| least < b)).then_some(State {
                object: None,
                last: least,
            })
        }
        (action, Answer::Uncertain(rv)) => {
            if rv.is_some_and(|rv| !newer(rv)) {
                return None;
            }
            let last = rv.unwrap_or(state.last);
            match action {
                Action::Create(v) => present.is_none().then_some(State {
                    object: Some((rv, v)),
                    last,
                }),
                Action::Update(v, pre) => holds(pre).then_some(State {
                    object: Some((rv, v)),
                    last,
                }),
                Action::Delete(pre) => holds(pre).then_some(State { object: None, last }),
                Action::Get => None,
            }
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(action: Action, answer: Answer) -> ModelOp {
        ModelOp { action, answer }
    }

    #[test]
    fn create_then_conflicting_update_then_delete() {
        let s0 = State::default();
        let s1 = step(s0, op(Action::Create(1), Answer::Written(5))).unwrap();
        assert_eq!(s1.object, Some((Some(5), 1)));
        assert_eq!(step(s1, op(Action::Create(2), Answer::Written(6))), None);
        assert_eq!(
            step(s1, op(Action::Create(2), Answer::AlreadyExists)),
            Some(s1)
        );
        assert_eq!(
            step(s1, op(Action::Update(2, Some(4)), Answer::Conflict)),
            Some(s1)
        );
        assert_eq!(
            step(s1, op(Action::Update(2, Some(5)), Answer::Conflict)),
            None
        );
        assert_eq!(
            step(s1, op(Action::Update(2, None), Answer::Conflict)),
            None
        );
        // A resourceVersion must grow.
        assert_eq!(
            step(s1, op(Action::Update(2, None), Answer::Written(5))),
            None
        );
        let s2 = step(s1, op(Action::Delete(Some(5)), Answer::Written(7))).unwrap();
        assert_eq!(
            s2,
            State {
                object: None,
                last: 7
            }
        );
        assert_eq!(step(s2, op(Action::Get, Answer::NotFound)), Some(s2));
        // A create after the delete still needs a larger resourceVersion.
        assert_eq!(step(s2, op(Action::Create(3), Answer::Written(6))), None);
    }

    #[test]
    fn uncertain_write_applies_only_when_it_would_succeed() {
        let s0 = State::default();
        assert_eq!(
            step(s0, op(Action::Update(1, None), Answer::Uncertain(None))),
            None
        );
        let s1 = step(s0, op(Action::Create(1), Answer::Uncertain(None))).unwrap();
        assert_eq!(s1.object, Some((None, 1)));
        // An unknown resourceVersion never satisfies a precondition.
        assert_eq!(
            step(s1, op(Action::Update(2, Some(3)), Answer::Conflict)),
            Some(s1)
        );
    }

    #[test]
    fn an_acknowledged_delete_of_unknown_rv_needs_the_object_and_removes_it() {
        let deleted = |above, below| Answer::Deleted { above, below };
        let s0 = State::default();
        assert_eq!(step(s0, op(Action::Delete(None), deleted(0, None))), None);
        let s1 = step(s0, op(Action::Create(1), Answer::Written(5))).unwrap();
        assert_eq!(
            step(s1, op(Action::Delete(Some(4)), deleted(0, None))),
            None
        );
        let s2 = step(s1, op(Action::Delete(Some(5)), deleted(0, None))).unwrap();
        assert_eq!(
            s2,
            State {
                object: None,
                last: 6
            }
        );
        assert_eq!(step(s2, op(Action::Get, Answer::Found(5, 1))), None);
        assert_eq!(step(s2, op(Action::Get, Answer::NotFound)), Some(s2));
        // A create after it needs a resourceVersion above the delete's least one.
        assert_eq!(step(s2, op(Action::Create(2), Answer::Written(6))), None);
        // Its resourceVersion is above writes that returned before it was called...
        let s3 = step(s1, op(Action::Delete(None), deleted(8, None))).unwrap();
        assert_eq!(s3.last, 9);
        assert_eq!(step(s3, op(Action::Create(2), Answer::Written(9))), None);
        // ...and below writes called after it returned: none fits between 5 and 6.
        assert_eq!(
            step(s1, op(Action::Delete(None), deleted(0, Some(6)))),
            None
        );
        assert!(step(s1, op(Action::Delete(None), deleted(0, Some(7)))).is_some());
    }
}
