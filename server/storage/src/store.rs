//! [`Store`]: Kubernetes' storage semantics over any [`Backend`].
//!
//! This mirrors the etcd3 store of `k8s.io/apiserver`: values pass through the resource's
//! [`Transformer`] on every read and write, resourceVersion is the mod revision, updates and
//! deletes are compare-and-swap on it with retries, and lists page with continue tokens at one
//! consistent revision.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use crate::backend::{Backend, Condition, KeyValue, ProgressRequester, RangeRequest, TxnOutcome};
use crate::continue_token;
use crate::errors::{Result, Revision, StorageError};
use crate::interface::{
    GetOptions, Interface, ListOptions, ListResult, ObjectAttrs, ObjectCodec, Preconditions,
    ResourceVersionMatch, StoredObject, UpdateFn, ValidateDeletionFn, WatchEventStream,
    parse_resource_version,
};
use crate::keys::{collection_prefix, validate_key};
use crate::transformer::{IdentityTransformer, Transformer};

mod watch;

/// The largest page the store requests from the backend when a filter drops items.
const MAX_RANGE_LIMIT: usize = 10_000;

/// The configuration of a [`Store`] for one resource.
#[derive(Clone)]
pub struct StoreConfig {
    /// The resource's key prefix (ending with `/`), from
    /// [`ResourceKeys::resource_prefix`](crate::keys::ResourceKeys::resource_prefix). Every key
    /// the store is asked about must lie under it.
    pub resource_prefix: String,
    /// The value transformer of the resource (encryption at rest).
    pub transformer: Arc<dyn Transformer>,
    /// Extracts uid, labels and fields from encoded objects.
    pub codec: Arc<dyn ObjectCodec>,
    /// How often idle watches that allow bookmarks receive one.
    pub bookmark_interval: Duration,
}

impl StoreConfig {
    /// A configuration with the identity transformer and a 5 second bookmark interval.
    pub fn new(resource_prefix: impl Into<String>, codec: Arc<dyn ObjectCodec>) -> Self {
        Self {
            resource_prefix: collection_prefix(&resource_prefix.into()),
            transformer: Arc::new(IdentityTransformer),
            codec,
            bookmark_interval: Duration::from_secs(5),
        }
    }

    /// Replaces the value transformer.
    pub fn with_transformer(mut self, transformer: Arc<dyn Transformer>) -> Self {
        self.transformer = transformer;
        self
    }

    /// Replaces the bookmark interval.
    pub fn with_bookmark_interval(mut self, interval: Duration) -> Self {
        self.bookmark_interval = interval;
        self
    }
}

/// Kubernetes storage semantics for one resource over a [`Backend`].
#[derive(Clone)]
pub struct Store {
    backend: Arc<dyn Backend>,
    config: StoreConfig,
    /// Reaches the watches of this store that allow bookmarks (the watch cache's upstream).
    progress: ProgressRequester,
}

/// The state of an object as the update and delete loops see it.
struct State {
    object: Option<StoredObject>,
    /// The mod revision to compare against (0 when absent).
    revision: Revision,
}

impl Store {
    /// Creates a store for one resource.
    pub fn new(backend: Arc<dyn Backend>, config: StoreConfig) -> Self {
        Self {
            backend,
            config,
            progress: ProgressRequester::new(),
        }
    }

    /// The backend underneath.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// The configuration.
    pub fn config(&self) -> &StoreConfig {
        &self.config
    }

    /// Validates the key of a single object: inside the resource, not a collection.
    fn check_object_key(&self, key: &str) -> Result<()> {
        self.check_key(key)?;
        if key.ends_with('/') || key.len() <= self.config.resource_prefix.len() {
            return Err(StorageError::InvalidKey {
                key: key.to_string(),
                message: "an object key must name an object, not a collection".to_string(),
            });
        }
        Ok(())
    }

    /// Validates a key or collection prefix: inside the resource prefix, no `.`/`..` segments.
    fn check_key(&self, key: &str) -> Result<()> {
        validate_key(key)?;
        let prefix = &self.config.resource_prefix;
        let inside = key.len() > prefix.len() && key.starts_with(prefix.as_str())
            || key == prefix.as_str()
            || collection_prefix(key) == *prefix;
        if inside {
            Ok(())
        } else {
            Err(StorageError::InvalidKey {
                key: key.to_string(),
                message: format!("key is outside the resource prefix {prefix:?}"),
            })
        }
    }

    /// Decodes a stored key-value into a [`StoredObject`].
    pub(crate) fn decode(&self, kv: &KeyValue, resource_version: Revision) -> Result<StoredObject> {
        let plain = self
            .config
            .transformer
            .transform_from_storage(&kv.key, &kv.value)?;
        Ok(StoredObject {
            key: kv.key.clone(),
            data: Bytes::from(plain.data),
            resource_version,
            stale: plain.stale,
        })
    }

    fn attrs(&self, data: &[u8]) -> Result<ObjectAttrs> {
        self.config.codec.attrs(data)
    }

    fn state_of(&self, key: &str, kv: Option<KeyValue>, ignore_not_found: bool) -> Result<State> {
        match kv {
            Some(kv) => Ok(State {
                object: Some(self.decode(&kv, kv.mod_revision)?),
                revision: kv.mod_revision,
            }),
            None if ignore_not_found => Ok(State {
                object: None,
                revision: 0,
            }),
            None => Err(StorageError::KeyNotFound {
                key: key.to_string(),
                revision: 0,
            }),
        }
    }

    async fn current_state(&self, key: &str, ignore_not_found: bool) -> Result<State> {
        let resp = self.backend.get(key, 0).await?;
        self.state_of(key, resp.kv, ignore_not_found)
    }

    fn check_preconditions(
        &self,
        key: &str,
        preconditions: Option<&Preconditions>,
        object: Option<&StoredObject>,
    ) -> Result<()> {
        let Some(p) = preconditions else {
            return Ok(());
        };
        if let Some(uid) = &p.uid {
            let actual = match object {
                Some(o) => self.attrs(&o.data)?.uid,
                None => String::new(),
            };
            if *uid != actual {
                return Err(StorageError::InvalidObj {
                    key: key.to_string(),
                    message: format!("UID in precondition: {uid}, UID in object meta: {actual}"),
                });
            }
        }
        if let Some(rv) = &p.resource_version {
            let actual = object
                .map(|o| o.resource_version.to_string())
                .unwrap_or_default();
            if *rv != actual {
                return Err(StorageError::InvalidObj {
                    key: key.to_string(),
                    message: format!(
                        "ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {actual}"
                    ),
                });
            }
        }
        Ok(())
    }

    fn encode(&self, key: &str, data: &[u8]) -> Result<Bytes> {
        Ok(Bytes::from(
            self.config.transformer.transform_to_storage(key, data)?,
        ))
    }

    /// Resolves the revision to read a list at and the start key, from the list options
    /// (Kubernetes' `ValidateListOptions`). Returns `(revision, start key, minimum rv)`.
    fn list_position(
        &self,
        prefix: &str,
        opts: &ListOptions,
    ) -> Result<(Revision, Option<String>, Revision)> {
        if opts.recursive && !opts.continue_token.is_empty() {
            let (start, rv) = continue_token::decode(&opts.continue_token, prefix)?;
            if !opts.resource_version.is_empty() && opts.resource_version != "0" {
                return Err(StorageError::InvalidContinue {
                    message: "specifying resource version is not allowed when using continue"
                        .to_string(),
                });
            }
            return Ok((rv.max(0), Some(start), 0));
        }
        if opts.resource_version.is_empty() {
            return Ok((0, None, 0));
        }
        let rv = parse_resource_version(&opts.resource_version)?;
        match opts.resource_version_match {
            Some(ResourceVersionMatch::NotOlderThan) => Ok((0, None, rv)),
            Some(ResourceVersionMatch::Exact) => Ok((rv, None, 0)),
            None if opts.recursive && opts.limit > 0 && rv > 0 => Ok((rv, None, 0)),
            None => Ok((0, None, rv)),
        }
    }
}

fn too_large(requested: Revision, current: Revision) -> StorageError {
    StorageError::TooLargeResourceVersion { requested, current }
}

#[async_trait]
impl Interface for Store {
    async fn create(&self, key: &str, data: Bytes, ttl: Option<u64>) -> Result<StoredObject> {
        self.check_object_key(key)?;
        let stored = self.encode(key, &data)?;
        match self
            .backend
            .put(key, stored, Condition::Absent, ttl)
            .await?
        {
            TxnOutcome::Committed { revision, .. } => Ok(StoredObject {
                key: key.to_string(),
                data,
                resource_version: revision,
                stale: false,
            }),
            TxnOutcome::Failed { current, .. } => Err(StorageError::KeyExists {
                key: key.to_string(),
                revision: current.map(|kv| kv.mod_revision).unwrap_or(0),
            }),
        }
    }

    async fn delete(
        &self,
        key: &str,
        preconditions: Option<Preconditions>,
        mut validate_deletion: Option<ValidateDeletionFn<'_>>,
        cached_existing: Option<StoredObject>,
    ) -> Result<StoredObject> {
        self.check_object_key(key)?;
        let (mut state, mut is_current) = match cached_existing {
            Some(o) => (
                State {
                    revision: o.resource_version,
                    object: Some(o),
                },
                false,
            ),
            None => (self.current_state(key, false).await?, true),
        };
        loop {
            let Some(object) = state.object.clone() else {
                return Err(StorageError::KeyNotFound {
                    key: key.to_string(),
                    revision: 0,
                });
            };
            let mut check = self.check_preconditions(key, preconditions.as_ref(), Some(&object));
            if check.is_ok()
                && let Some(validate) = validate_deletion.as_mut()
            {
                check = validate(object.clone()).await;
            }
            if let Err(err) = check {
                if is_current {
                    return Err(err);
                }
                let cached_rev = state.revision;
                state = self.current_state(key, false).await?;
                is_current = true;
                if state.revision == cached_rev {
                    return Err(err);
                }
                continue;
            }
            match self
                .backend
                .delete(key, Condition::ModRevision(state.revision))
                .await?
            {
                TxnOutcome::Committed { revision, prev } => {
                    let deleted = match prev {
                        Some(kv) => self.decode(&kv, revision)?,
                        None => StoredObject {
                            resource_version: revision,
                            ..object
                        },
                    };
                    return Ok(deleted);
                }
                TxnOutcome::Failed { current, .. } => {
                    tracing::debug!(key, "delete conflicted, retrying");
                    state = self.state_of(key, current, false)?;
                    is_current = true;
                }
            }
        }
    }

    async fn watch(&self, key: &str, opts: ListOptions) -> Result<WatchEventStream> {
        self.check_key(key)?;
        watch::open(self, key, opts).await
    }

    async fn get(&self, key: &str, opts: GetOptions) -> Result<Option<StoredObject>> {
        self.check_object_key(key)?;
        let resp = self.backend.get(key, 0).await?;
        let minimum = parse_resource_version(&opts.resource_version)?;
        if minimum > resp.revision {
            return Err(too_large(minimum, resp.revision));
        }
        match resp.kv {
            Some(kv) => Ok(Some(self.decode(&kv, kv.mod_revision)?)),
            None if opts.ignore_not_found => Ok(None),
            None => Err(StorageError::KeyNotFound {
                key: key.to_string(),
                revision: resp.revision,
            }),
        }
    }

    async fn get_list(&self, key: &str, opts: ListOptions) -> Result<ListResult> {
        self.check_key(key)?;
        let prefix = if opts.recursive {
            collection_prefix(key)
        } else {
            key.to_string()
        };
        let (mut revision, continue_start, minimum) = self.list_position(&prefix, &opts)?;
        let continuing = continue_start.is_some();
        let paging = opts.recursive && opts.limit > 0;
        let want = usize::try_from(opts.limit).unwrap_or(0);
        let mut limit = if paging { want } else { 0 };
        let mut start = continue_start.unwrap_or_else(|| prefix.clone());
        let mut items = Vec::new();
        let mut last_key: Option<String> = None;
        let mut has_more;
        let mut last_count: i64;
        let mut evaluated_in_last: i64;
        loop {
            let resp = if opts.recursive {
                self.backend
                    .range(RangeRequest {
                        prefix: prefix.clone(),
                        start: start.clone(),
                        limit,
                        revision,
                    })
                    .await
            } else {
                self.backend.get(&prefix, revision).await.map(|g| {
                    let count = i64::from(g.kv.is_some());
                    crate::backend::RangeResponse {
                        kvs: g.kv.into_iter().collect(),
                        revision: g.revision,
                        more: false,
                        count,
                    }
                })
            };
            let resp = resp.map_err(|err| match err {
                StorageError::Expired {
                    requested,
                    compacted,
                } if continuing => StorageError::ContinueExpired {
                    requested,
                    compacted,
                },
                other => other,
            })?;
            if revision == 0 {
                if minimum > resp.revision {
                    return Err(too_large(minimum, resp.revision));
                }
                revision = resp.revision;
            }
            has_more = resp.more;
            last_count = resp.count;
            evaluated_in_last = 0;
            if resp.kvs.is_empty() && resp.more {
                return Err(StorageError::internal(
                    "no results were found, but the backend indicated more remain",
                ));
            }
            for kv in &resp.kvs {
                if paging && items.len() >= want {
                    has_more = true;
                    break;
                }
                last_key = Some(kv.key.clone());
                evaluated_in_last += 1;
                let object = self.decode(kv, kv.mod_revision)?;
                let matched = opts.predicate.is_everything()
                    || opts.predicate.matches(&self.attrs(&object.data)?);
                if matched {
                    items.push(object);
                }
            }
            if !has_more || !paging || items.len() >= want {
                break;
            }
            if let Some(last) = &last_key {
                start = format!("{last}\0");
            }
            limit = (limit * 2).min(MAX_RANGE_LIMIT).max(limit);
        }
        let (continue_token, remaining_item_count) = match (has_more, &last_key) {
            (true, Some(last)) => {
                let token = continue_token::encode(&format!("{last}\0"), &prefix, revision)?;
                let remaining = opts
                    .predicate
                    .is_everything()
                    .then(|| (last_count - evaluated_in_last).max(0));
                (Some(token), remaining)
            }
            _ => (None, None),
        };
        Ok(ListResult {
            items,
            resource_version: revision,
            continue_token,
            remaining_item_count,
        })
    }

    async fn guaranteed_update(
        &self,
        key: &str,
        ignore_not_found: bool,
        preconditions: Option<Preconditions>,
        mut try_update: UpdateFn<'_>,
        cached_existing: Option<StoredObject>,
    ) -> Result<StoredObject> {
        self.check_object_key(key)?;
        let (mut state, mut is_current) = match cached_existing {
            Some(o) => (
                State {
                    revision: o.resource_version,
                    object: Some(o),
                },
                false,
            ),
            None => (self.current_state(key, ignore_not_found).await?, true),
        };
        loop {
            if let Err(err) =
                self.check_preconditions(key, preconditions.as_ref(), state.object.as_ref())
            {
                if is_current {
                    return Err(err);
                }
                state = self.current_state(key, ignore_not_found).await?;
                is_current = true;
                continue;
            }
            let update = match try_update(state.object.clone()).await {
                Ok(update) => update,
                Err(err) => {
                    if is_current {
                        return Err(err);
                    }
                    let cached_rev = state.revision;
                    state = self.current_state(key, ignore_not_found).await?;
                    is_current = true;
                    if state.revision == cached_rev {
                        return Err(err);
                    }
                    continue;
                }
            };
            if let Some(current) = &state.object
                && !current.stale
                && current.data == update.data
            {
                if is_current {
                    return Ok(current.clone());
                }
                state = self.current_state(key, ignore_not_found).await?;
                is_current = true;
                if let Some(fresh) = &state.object
                    && !fresh.stale
                    && fresh.data == update.data
                {
                    return Ok(fresh.clone());
                }
                continue;
            }
            let stored = self.encode(key, &update.data)?;
            let condition = if state.object.is_some() {
                Condition::ModRevision(state.revision)
            } else {
                Condition::Absent
            };
            match self.backend.put(key, stored, condition, update.ttl).await? {
                TxnOutcome::Committed { revision, .. } => {
                    return Ok(StoredObject {
                        key: key.to_string(),
                        data: update.data,
                        resource_version: revision,
                        stale: false,
                    });
                }
                TxnOutcome::Failed { current, .. } => {
                    tracing::debug!(key, "guaranteed update conflicted, retrying");
                    state = self.state_of(key, current, ignore_not_found)?;
                    is_current = true;
                }
            }
        }
    }

    async fn count(&self, key: &str) -> Result<i64> {
        self.check_key(key)?;
        self.backend.count(&collection_prefix(key)).await
    }

    async fn current_resource_version(&self) -> Result<Revision> {
        self.backend.current_revision().await
    }

    fn request_watch_progress(&self) -> bool {
        if !self.backend.supports_progress_requests() {
            return false;
        }
        self.progress.request();
        true
    }
}
