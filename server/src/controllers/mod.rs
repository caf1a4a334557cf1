//! Controllers the server runs in-process, through the same stores (and strategies) as every
//! request: the system namespaces every cluster has, and the namespace controller that empties
//! a terminating namespace and then lets it go, the quota controller that keeps every
//! ResourceQuota's status counted, the cluster role aggregation controller, and the
//! ValidatingAdmissionPolicy type-checking controller.

pub mod cluster_role_aggregation;
pub mod namespace;
pub mod policy_type_checking;
pub mod resource_quota;
pub mod system_namespaces;

use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use async_trait::async_trait;

/// An update that writes a whole object computed beforehand, on the condition that the stored
/// object is still at the object's resourceVersion (a conflict otherwise).
pub struct Replace(pub Box<dyn Object>);

#[async_trait]
impl crate::registry::UpdatedObjectInfo for Replace {
    async fn updated_object(&self, _old: Option<&dyn Object>) -> Result<Box<dyn Object>, ApiError> {
        Ok(self.0.clone_object())
    }
}
