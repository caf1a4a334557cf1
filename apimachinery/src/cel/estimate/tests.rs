//! The arithmetic of the estimate and the costs of Kubernetes' library functions, each
//! expected figure derived in its comment from the rules of cel-go's estimator and of
//! Kubernetes' `CostEstimator` (the figures of Kubernetes' own cost tests are checked with the
//! schema, which builds the declarations).

use std::collections::BTreeMap;

use super::{Decl, DeclKind, Est, by_factor};
use crate::cel::CelExpression;

#[test]
fn factors_round_up_and_saturate() {
    assert_eq!(by_factor(3_145_727, 0.1), 314_573);
    assert_eq!(by_factor(4, 0.25), 1);
    assert_eq!(by_factor(0, 0.1), 0);
    assert_eq!(by_factor(u64::MAX, 0.1), 1_844_674_407_370_955_264);
    assert_eq!(by_factor(u64::MAX, 2.0), u64::MAX);
    let big = Est::fixed(u64::MAX);
    assert_eq!(big.add(Est::fixed(1)), big);
    assert_eq!(big.mul(Est::fixed(2)), big);
}

fn string(max_bytes: u64) -> Decl {
    Decl {
        kind: DeclKind::String,
        max_elements: max_bytes,
        min_size: 2,
    }
}

/// An object of: `s`, a string of 400 bytes (`maxLength: 100`); `q`, of 80 bytes; `a` and
/// `b`, lists of 10 and 20 such strings; `l`, a list of 5; `m`, a map of 4.
fn root() -> Decl {
    let list = |n| Decl {
        kind: DeclKind::List(Box::new(string(400))),
        max_elements: n,
        min_size: 2,
    };
    let mut fields = BTreeMap::new();
    fields.insert("s".to_string(), string(400));
    fields.insert("q".to_string(), string(80));
    fields.insert("a".to_string(), list(10));
    fields.insert("b".to_string(), list(20));
    fields.insert("l".to_string(), list(5));
    fields.insert(
        "m".to_string(),
        Decl {
            kind: DeclKind::Map(Box::new(string(400))),
            max_elements: 4,
            min_size: 2,
        },
    );
    Decl {
        kind: DeclKind::Object(fields),
        max_elements: 0,
        min_size: 2,
    }
}

fn cost(rule: &str) -> u64 {
    CelExpression::compile(rule)
        .expect("the rule compiles")
        .estimated_cost(&root())
}

#[test]
fn kubernetes_library_functions_cost_what_kubernetes_estimates() {
    // `self.a` and `self.b` cost 2 each (an identifier and a select on an object); the
    // `sets` extension charges the product of the sizes and one: 10 * 20 + 1.
    assert_eq!(cost("sets.contains(self.a, self.b)"), 205);
    // `url`: a traversal of the 400 bytes (40) and the argument (2); `getHost`: one and its
    // target; `==` with a one-character literal: ceil(1 * 0.1) = 1 (the shorter operand).
    assert_eq!(cost("url(self.s).getHost() == 'x'"), 44);
    // `quantity(self.q)`: ceil(80 * 0.1) + 2 = 10; `quantity('1Gi')`: ceil(3 * 0.1) = 1;
    // `isGreaterThan`: one plus both.
    assert_eq!(cost("quantity(self.q).isGreaterThan(quantity('1Gi'))"), 12);
    // `split`: twice a traversal, 400 * 0.2 = 80, and its target (2); `size()` one more;
    // `<=` on integers one more.
    assert_eq!(cost("self.s.split(',', 3).size() <= 3"), 84);
    // `isIP`: 40 + 2; `ip(…)`: 40 + 2, `family()`: 1 more; `== 4`: 1 (integers are of size
    // one); `&&`: the sum, 42 + 44.
    assert_eq!(cost("isIP(self.s) && ip(self.s).family() == 4"), 86);
    // `matches`: ceil(401 * 0.1) = 41 times ceil(8 * 0.25) = 2, and the select: 84;
    // `lowerAscii`: 40 and the select, its result as long as its target, so `==` with
    // `self.s` traverses 400 bytes: 40, and the selects 2 + 2: 84. Together 168.
    assert_eq!(
        cost("self.s.matches('^[a-z]+$') && self.s.lowerAscii() == self.s"),
        168
    );
}

#[test]
fn comprehensions_multiply_their_step_by_their_range() {
    // `exists`: the range (2), per item the condition `@not_strictly_false(!@result)` (3)
    // and the step `@result || x in ['a', 'b']` (1 + the identifier 1, the list 10, the
    // membership test over 2 items 2 = 14), 17 for each of 5 items, and the result (1).
    assert_eq!(cost("self.l.exists(x, x in ['a', 'b'])"), 88);
    // `all` over the 4 entries of `m`: the condition (2) and the step `@result &&
    // self.m[k].startsWith('x')` (the accumulator 1, the index 1 + `self.m` 2 + `k` 1, the
    // prefix test ceil(1 * 0.1) = 1: 6), 8 per entry; the range 2 and the result 1.
    assert_eq!(cost("self.m.all(k, self.m[k].startsWith('x'))"), 35);
}

#[test]
fn a_join_of_a_literal_list_has_no_bound() {
    // Kubernetes sizes a list literal's items by the path of the list, which a literal has
    // not: their size is unknown, and so is the joined string's (saturated), a tenth of
    // which is 1844674407370955264; with the literal (10), the comparison with the 400
    // bytes of `self.s` (40) and its select (2).
    assert_eq!(
        cost("['a', 'b'].join('-') == self.s"),
        1_844_674_407_370_955_316
    );
}

#[test]
fn the_lists_extension_charges_its_allocations() {
    // `distinct`: twice the square of the list's 5 items, the list (10) and the call (1):
    // 61, and the select (2); the result has 25 items, so `size()` costs 1 and `<=` 1.
    assert_eq!(cost("self.l.distinct().size() <= 5"), 65);
    // `lists.range(3)`: 3 items, 10 and 1: 14; `reverse()` of those 3: 14 more.
    assert_eq!(cost("lists.range(3).reverse() == [2, 1, 0]"), 28 + 10 + 1);
    // `sort` of strings: (2 + 0.1) * 25 rounded up (53), 11, and the select.
    assert_eq!(cost("self.l.sort().size() > 0"), 53 + 11 + 2 + 1 + 1);
}
