//! What a kind's storage does around its writes beyond its strategy: Kubernetes'
//! `BeginCreate`, `BeginUpdate` and `AfterDelete` of a `genericregistry.Store`, which
//! kube-apiserver's Service storage uses to allocate cluster IPs and node ports before the
//! object is validated and stored, and to release them when the write fails or the object goes.
//!
//! A bundle sets a kind's hooks on its store ([`crate::registry::Store::set_write_hooks`]); the
//! store calls [`WriteHooks::begin_create`] before a create's rules and validation (again for
//! each attempt of a create through an update), [`WriteHooks::begin_update`] before an update's
//! rules and validation (once per attempt: a compare-and-swap conflict ends the attempt's
//! [`Finish`] with `false` before the next begins; never for a subresource), and
//! [`WriteHooks::after_delete`] once the object is removed. Each [`Finish`] learns whether its
//! write was stored; a dry-run write is never stored.

use apimachinery::runtime::Object;
use apimachinery::status::ApiError;
use async_trait::async_trait;
use futures::future::BoxFuture;

/// The end of a write a hook began, told whether the write was stored (`true`) or not
/// (`false`: what the hook reserved for it is given back).
pub type Finish = Box<dyn FnOnce(bool) -> BoxFuture<'static, ()> + Send>;

/// A [`Finish`] with nothing to do.
pub fn finish_nothing() -> Finish {
    Box::new(|_| Box::pin(async {}))
}

/// The hooks of one kind's storage (see the module documentation).
#[async_trait]
pub trait WriteHooks: Send + Sync + 'static {
    /// Before a create's rules and validation: may change `object` (allocate what it needs) or
    /// refuse the create. A `dry_run` create must reserve nothing.
    async fn begin_create(
        &self,
        object: &mut dyn Object,
        dry_run: bool,
    ) -> Result<Finish, ApiError>;

    /// Before an update's rules and validation, with the stored object `old`: may change
    /// `object` or refuse the update. A `dry_run` update must reserve nothing.
    async fn begin_update(
        &self,
        object: &mut dyn Object,
        old: &dyn Object,
        dry_run: bool,
    ) -> Result<Finish, ApiError>;

    /// After the object was removed from storage (its last state).
    async fn after_delete(&self, object: &dyn Object);
}
