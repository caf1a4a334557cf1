//! [`Strategy`]: the behaviour of one kind in the registry (Kubernetes' `rest.RESTCreateStrategy`,
//! `RESTUpdateStrategy` and `RESTDeleteStrategy`, plus the table and field-selector hooks).
//!
//! The generic registry does what every kind shares, driven by the definition's markers
//! (system metadata, generation, status subresource, namespace scope, create-on-update,
//! unconditional update, finalizers); a kind's strategy adds what is its own. A kind without
//! a hand-written strategy gets [`DefaultStrategy`], which adds nothing. Strategies work on
//! objects of the kind's storage version (downcast with `object.downcast_mut::<T>()`).

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::authentication::{ObjectReader, TokenAuthenticator, TokenIssuer};
use crate::authorization::Authorizer;
use crate::errors::FieldError;
use crate::resource::PrinterColumn;
use crate::runtime::Object;
use crate::status::ApiError;
use crate::user::UserInfo;

/// The behaviour of one kind beyond what its markers say. Every method has a default that does
/// nothing, so a strategy states only what differs.
#[async_trait::async_trait]
pub trait Strategy: Send + Sync + 'static {
    /// Adjusts a new object before it is validated and stored (after the registry has set its
    /// system metadata): defaults that depend on the object, fields only the server sets.
    fn prepare_for_create(&self, _object: &mut dyn Object) {}

    /// Adjusts an updated object before it is validated and stored (after the registry has
    /// copied the system metadata, and the status or everything but it, from `old`).
    /// `subresource` is the one written through (`status`, `scale`, or a kind's own such as a
    /// namespace's `finalize`), empty for the main resource.
    fn prepare_for_update(&self, _object: &mut dyn Object, _old: &dyn Object, _subresource: &str) {}

    /// Whether a write is admitted and validated in the version it was sent in, and converted
    /// to the storage version only when it is stored: kube-apiserver's way with custom
    /// resources, whose versions each have a schema of their own. By default (`false`) a
    /// write is converted to the storage version first, as a compiled kind's is to its hub.
    fn writes_in_request_version(&self) -> bool {
        false
    }

    /// Kind-specific validation of a new object, after the definition's own checks.
    fn validate(&self, _object: &dyn Object) -> Vec<FieldError> {
        Vec::new()
    }

    /// Kind-specific validation of an update, after the definition's own checks.
    fn validate_update(&self, _object: &dyn Object, _old: &dyn Object) -> Vec<FieldError> {
        Vec::new()
    }

    /// Kind-specific validation of an update written through the status subresource, after
    /// the definition's own checks: Kubernetes' status strategies check less than the main
    /// resource's (a CustomResourceDefinition's only its accepted names). By default the same
    /// as [`Strategy::validate_update`].
    fn validate_status_update(&self, object: &dyn Object, old: &dyn Object) -> Vec<FieldError> {
        self.validate_update(object, old)
    }

    /// Warnings for the client about a valid new object.
    fn warnings_on_create(&self, _object: &dyn Object) -> Vec<String> {
        Vec::new()
    }

    /// Warnings for the client about a valid update.
    fn warnings_on_update(&self, _object: &dyn Object, _old: &dyn Object) -> Vec<String> {
        Vec::new()
    }

    /// Brings a validated object into its canonical form before it is stored.
    fn canonicalize(&self, _object: &mut dyn Object) {}

    /// The storage time-to-live of the object in seconds, if it expires (`existing` is true
    /// for updates).
    fn ttl(&self, _object: &dyn Object, _existing: bool) -> Option<u64> {
        None
    }

    /// Adjusts an object whose deletion starts but waits for finalizers (after the registry
    /// has set `deletionTimestamp`), such as a namespace turning `Terminating`.
    fn prepare_for_delete(&self, _object: &mut dyn Object) {}

    /// Whether the object waits for finalizers of its own beyond `metadata.finalizers` (a
    /// namespace's `spec.finalizers`) before it can be removed.
    fn has_pending_finalizers(&self, _object: &dyn Object) -> bool {
        false
    }

    /// Runs after an object is stored by a create.
    fn after_create(&self, _object: &dyn Object) {}

    /// Runs after an object is removed from storage.
    fn after_delete(&self, _object: &dyn Object) {}

    /// Appends selectable fields computed from the object (beyond the definition's
    /// `field_selectors`), as `(label, value)`.
    fn selectable_fields(&self, _object: &dyn Object, _out: &mut Vec<(&'static str, String)>) {}

    /// The labels of the fields [`Strategy::selectable_fields`] appends.
    fn field_labels(&self) -> &'static [&'static str] {
        &[]
    }

    /// Whether requests on this kind are never sent to admission webhooks. Kubernetes exempts
    /// the webhook and policy configurations themselves (so a broken webhook cannot keep
    /// anyone from removing it) and leases (which the control plane renews every few
    /// seconds).
    fn exempt_from_admission_webhooks(&self) -> bool {
        false
    }

    /// How the kind prints as a `Table`, when its printer columns are not simple JSONPaths.
    fn table(&self) -> Option<&dyn TableConvertor> {
        None
    }

    /// Checks a write against what the requesting user may do (Kubernetes' RBAC storage that
    /// refuses privilege escalation). Runs on the new object of every create, update and patch
    /// made by a request, inside the write and before the registry's rules and validation (as
    /// kube-apiserver's RBAC storage does); writes of the server's own controllers skip it.
    /// `Err` refuses the write.
    fn authorize_write(
        &self,
        _attributes: &crate::admission::Attributes<'_>,
    ) -> Result<(), ApiError> {
        Ok(())
    }

    /// Answers a create of a kind that is never stored (`create_only`: access reviews, token
    /// reviews): fills the object's status.
    fn review(
        &self,
        object: &mut dyn Object,
        _context: &dyn ReviewContext,
    ) -> Result<(), ApiError> {
        Err(ApiError::internal(format!(
            "{} is created only, and its strategy does not answer it",
            object.info().kind
        )))
    }

    /// Answers a create of a kind that is never stored when the answer must wait (a
    /// `TokenReview` reads the token's ServiceAccount); by default [`Strategy::review`].
    async fn review_async(
        &self,
        object: &mut dyn Object,
        context: &dyn ReviewContext,
    ) -> Result<(), ApiError> {
        self.review(object, context)
    }

    /// Answers a `create` of one of the kind's declared subresources (`#[subresource]`, such
    /// as a ServiceAccount's `token`): `parent` is the stored object the request names,
    /// `body` the request's body; the answer is the JSON object returned with 201.
    async fn create_subresource(
        &self,
        subresource: &str,
        _parent: &dyn Object,
        _body: SubresourceBody,
        _context: &dyn ReviewContext,
    ) -> Result<Value, ApiError> {
        Err(ApiError::internal(format!(
            "the strategy does not answer the {subresource} subresource"
        )))
    }
}

/// The body of a subresource request, for the strategy to decode into the subresource's type.
#[derive(Clone, Debug, PartialEq)]
pub enum SubresourceBody {
    /// A JSON (or YAML) body, parsed.
    Json(Value),
    /// A protobuf body, out of its `runtime.Unknown` envelope.
    Protobuf {
        /// The envelope's `apiVersion`.
        api_version: String,
        /// The envelope's `kind`.
        kind: String,
        /// The message.
        raw: Vec<u8>,
    },
}

/// The strategy of kinds whose behaviour their markers say entirely.
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultStrategy;

impl Strategy for DefaultStrategy {}

/// A kind's own `Table` rendering (Kubernetes' `TableConvertor`): every column, `Name`
/// included, in order. Like kube-apiserver's, it computes every cell of every column (the
/// printers' `Wide` output); clients hide the columns of priority above 0 unless asked for
/// them. [`crate::table`] holds the shared columns, cell helpers and [`crate::table::TypedTable`].
pub trait TableConvertor: Send + Sync {
    /// The columns (`json_path` unused).
    fn columns(&self) -> &'static [PrinterColumn];

    /// The columns of a Table of objects of the version `info` describes: by default
    /// [`TableConvertor::columns`], the same for every version (a custom resource's differ per
    /// version).
    fn columns_of(&self, info: &crate::ResourceInfo) -> std::borrow::Cow<'static, [PrinterColumn]> {
        let _ = info;
        std::borrow::Cow::Borrowed(self.columns())
    }

    /// The cells of one object, one per column, with ages measured at `now`.
    fn cells(&self, object: &dyn Object, now: DateTime<Utc>) -> Vec<Value>;
}

/// What a `create_only` kind's [`Strategy::review`] may consult.
pub trait ReviewContext: Send + Sync {
    /// The user making the request.
    fn user(&self) -> &UserInfo;

    /// The server's authorizer.
    fn authorizer(&self) -> &dyn Authorizer;

    /// The namespace of the request (empty at cluster scope).
    fn namespace(&self) -> &str;

    /// The server's bearer-token authenticators (`TokenReview`), when it has any.
    fn token_authenticator(&self) -> Option<&dyn TokenAuthenticator> {
        None
    }

    /// The server's service-account token issuer (`serviceaccounts/token`), when it has one.
    fn token_issuer(&self) -> Option<&dyn TokenIssuer> {
        None
    }

    /// Reads other objects the server serves (a token's bound object), when it can.
    fn objects(&self) -> Option<&dyn ObjectReader> {
        None
    }
}
