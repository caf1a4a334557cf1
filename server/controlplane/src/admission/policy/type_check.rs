//! Type checking of ValidatingAdmissionPolicies (kube-apiserver's policy type-checking
//! controller): every validation's `expression` and `messageExpression` is checked against
//! the structure of each kind and version its `matchConstraints` name explicitly, and what
//! does not check becomes a warning in `status.typeChecking`, in Kubernetes' form:
//!
//! ```text
//! example.dev/v1, Kind=Widget: ERROR: <input>:1:12: undefined field 'replica'
//!  | object.spec.replica > 1
//!  | ...........^
//! ```
//!
//! The check (`CelExpression::type_errors`) knows the types of `object` and `oldObject`
//! from the kind's structure and checks the other variables as `dyn`; rules with wildcards
//! are not checked, as in Kubernetes.

use apimachinery::Scheme;
use apimachinery::cel::CelExpression;
use apimachinery::structure::StructShape;
use kubernetes_api::admissionregistration_k8s_io::v1::{
    ExpressionWarning, NamedRuleWithOperations, ValidatingAdmissionPolicySpec,
};

/// A kind and version an expression is checked against.
struct Target {
    /// `group/version, Kind=Kind`, as Go prints a GroupVersionKind.
    gvk: String,
    shape: &'static StructShape,
}

/// The kinds and versions the rules name without wildcards, in the order they are written.
fn targets(rules: &[NamedRuleWithOperations], scheme: &Scheme) -> Vec<Target> {
    let mut out: Vec<Target> = Vec::new();
    for r in rules {
        let rule = &r.rule_with_operations.rule;
        let explicit = |v: &[String]| !v.is_empty() && v.iter().all(|x| !x.contains('*'));
        if !explicit(&rule.api_groups)
            || !explicit(&rule.api_versions)
            || !explicit(&rule.resources)
        {
            continue;
        }
        for group in &rule.api_groups {
            for resource in &rule.resources {
                if resource.contains('/') {
                    continue;
                }
                let Some(kind) = scheme.by_resource(group, resource) else {
                    continue;
                };
                for version in &rule.api_versions {
                    let Some(codec) = kind.codec(version) else {
                        continue;
                    };
                    let info = codec.info();
                    let gvk = format!("{}/{}, Kind={}", info.group, info.version, info.kind);
                    if !out.iter().any(|t| t.gvk == gvk) {
                        out.push(Target {
                            gvk,
                            shape: codec.shape(),
                        });
                    }
                }
            }
        }
    }
    out
}

/// The line, column (1-based) and text of the line of a byte offset.
fn position(source: &str, offset: usize) -> (usize, usize, &str) {
    let before = &source[..offset.min(source.len())];
    let line = before.matches('\n').count() + 1;
    let start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let end = source[start..]
        .find('\n')
        .map(|i| start + i)
        .unwrap_or(source.len());
    (line, offset - start + 1, &source[start..end])
}

/// The variables a policy's expressions may read, with the structure of the object's where
/// it is known (`None`: checked as `dyn`).
fn roots(shape: &'static StructShape) -> [(&'static str, Option<&'static StructShape>); 7] {
    [
        ("object", Some(shape)),
        ("oldObject", Some(shape)),
        ("request", None),
        ("params", None),
        ("namespaceObject", None),
        ("authorizer", None),
        ("variables", None),
    ]
}

/// The warning of one expression against every target, or `None` when it checks: for each
/// target with mistakes, its GroupVersionKind and cel-go's issues (one `ERROR:` block per
/// mistake), as kube-apiserver writes them.
fn check(expression: &str, targets: &[Target]) -> Option<String> {
    let compiled = CelExpression::compile(expression).ok()?;
    let mut lines: Vec<String> = Vec::new();
    for t in targets {
        let issues: Vec<String> = compiled
            .type_errors(expression, &roots(t.shape))
            .into_iter()
            .map(|e| {
                let (line, column, text) = position(expression, e.offset);
                format!(
                    "ERROR: <input>:{line}:{column}: {}\n | {text}\n | {}^",
                    e.message,
                    ".".repeat(column - 1)
                )
            })
            .collect();
        if !issues.is_empty() {
            lines.push(format!("{}: {}", t.gvk, issues.join("\n")));
        }
    }
    (!lines.is_empty()).then(|| lines.join("\n"))
}

/// The type-checking warnings of a policy's expressions.
pub fn warnings(spec: &ValidatingAdmissionPolicySpec, scheme: &Scheme) -> Vec<ExpressionWarning> {
    let Some(constraints) = &spec.match_constraints else {
        return Vec::new();
    };
    let targets = targets(&constraints.resource_rules, scheme);
    if targets.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (i, v) in spec.validations.iter().enumerate() {
        if let Some(warning) = check(&v.expression, &targets) {
            out.push(ExpressionWarning {
                field_ref: format!("spec.validations[{i}].expression"),
                warning,
            });
        }
        if let Some(m) = v.message_expression.as_deref().filter(|m| !m.is_empty())
            && let Some(warning) = check(m, &targets)
        {
            out.push(ExpressionWarning {
                field_ref: format!("spec.validations[{i}].messageExpression"),
                warning,
            });
        }
    }
    out
}
