//! The authentication reviews are answered, never stored.

use ::apimachinery::runtime::Object;
use ::apimachinery::status::ApiError;
use ::apimachinery::strategy::{ReviewContext, Strategy};

/// The review form of a user.
fn user_info(user: &::apimachinery::user::UserInfo) -> v1::UserInfo {
    v1::UserInfo {
        username: Some(user.name.clone()),
        uid: Some(user.uid.clone()).filter(|u| !u.is_empty()),
        groups: user.groups.clone(),
        extra: user.extra.clone(),
    }
}

/// `SelfSubjectReview` (`kubectl auth whoami`): who am I?
pub struct SelfSubjectReviewStrategy;

impl Strategy for SelfSubjectReviewStrategy {
    fn review(&self, object: &mut dyn Object, context: &dyn ReviewContext) -> Result<(), ApiError> {
        if let Some(review) = object.downcast_mut::<v1::SelfSubjectReview>() {
            review.status.user_info = user_info(context.user());
        }
        Ok(())
    }
}

/// `TokenReview`: whose is this token? No token authenticator is configured, so every token
/// is reported unauthenticated.
pub struct TokenReviewStrategy;

impl Strategy for TokenReviewStrategy {
    fn review(&self, object: &mut dyn Object, _context: &dyn ReviewContext) -> Result<(), ApiError> {
        if let Some(review) = object.downcast_mut::<v1::TokenReview>() {
            review.status = v1::TokenReviewStatus {
                authenticated: Some(false),
                error: Some("no token authenticator is configured".to_string()),
                ..Default::default()
            };
        }
        Ok(())
    }
}
