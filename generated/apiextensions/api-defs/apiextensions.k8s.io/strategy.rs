//! Hand-written strategy of apiextensions.k8s.io: a CustomResourceDefinition prints
//! kube-apiserver's default table (`NAME`, `CREATED AT`).

use ::apimachinery::strategy::{Strategy, TableConvertor};
use ::apimachinery::table::DefaultTableConvertor;

/// A CustomResourceDefinition's registry behaviour (Kubernetes' `customresourcedefinition`
/// strategy).
pub struct CustomResourceDefinitionStrategy;

impl Strategy for CustomResourceDefinitionStrategy {
    fn table(&self) -> Option<&dyn TableConvertor> {
        Some(&DefaultTableConvertor)
    }
}
