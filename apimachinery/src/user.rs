//! The identity a request is made as (Kubernetes' `user.Info`) and the well-known user and
//! group names.

use std::collections::BTreeMap;

/// The user name of requests that carry no credentials.
pub const ANONYMOUS_USER: &str = "system:anonymous";
/// The group of requests that carry no credentials.
pub const UNAUTHENTICATED_GROUP: &str = "system:unauthenticated";
/// The group every authenticated user is in.
pub const AUTHENTICATED_GROUP: &str = "system:authenticated";
/// The group whose members may do everything.
pub const MASTERS_GROUP: &str = "system:masters";

/// An authenticated (or anonymous) identity, as Kubernetes' `user.Info`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// The user name, such as `admin` or `system:anonymous`.
    pub name: String,
    /// A unique id, if the authenticator knows one.
    pub uid: String,
    /// The groups the user is in.
    pub groups: Vec<String>,
    /// Extra attributes (scopes, credential ids, ...).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The user as Go's `%v` prints a `*user.DefaultInfo` (`&{name uid [groups] map[key:[values]]}`),
    /// which some of Kubernetes' messages embed.
    pub fn go_value(&self) -> String {
        let extra: Vec<String> = self
            .extra
            .iter()
            .map(|(k, v)| format!("{k}:[{}]", v.join(" ")))
            .collect();
        format!(
            "&{{{} {} [{}] map[{}]}}",
            self.name,
            self.uid,
            self.groups.join(" "),
            extra.join(" ")
        )
    }

    /// The anonymous identity.
    pub fn anonymous() -> Self {
        Self {
            name: ANONYMOUS_USER.to_string(),
            groups: vec![UNAUTHENTICATED_GROUP.to_string()],
            ..Self::default()
        }
    }

    /// Whether this is the anonymous identity.
    pub fn is_anonymous(&self) -> bool {
        self.name == ANONYMOUS_USER
    }

    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}
