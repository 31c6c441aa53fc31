//! The messages the socialNetwork functions exchange, defined once for the
//! caller and the callee (DeathStarBench's `social_network.thrift` plays the
//! same part), so that a renamed field cannot split them. A function's own
//! request shape, used by no one else, stays in its crate. Typed, not
//! `serde_json::Value`, so that the field order of what is stored (a post)
//! is fixed.

use serde::{Deserialize, Serialize};

/// `{"user_id": u64}`: who a request is about, or the id a user got.
#[derive(Debug, Deserialize, Serialize)]
pub struct UserId {
    pub user_id: u64,
}

/// `unique-id`'s reply.
#[derive(Debug, Deserialize, Serialize)]
pub struct UniqueId {
    pub unique_id: u64,
}

/// `{"username": str}`.
#[derive(Debug, Deserialize, Serialize)]
pub struct Username {
    pub username: String,
}

/// A post's author (`compose-creator-with-*`).
#[derive(Debug, Deserialize, Serialize)]
pub struct Creator {
    pub user_id: u64,
    pub username: String,
}

/// A user named in a post's text (`user-mention`).
#[derive(Debug, Deserialize, Serialize)]
pub struct UserMention {
    pub user_id: u64,
    pub username: String,
}

/// A URL of a post's text and its short form (`url-shorten`).
#[derive(Debug, Deserialize, Serialize)]
pub struct Url {
    pub shortened_url: String,
    pub expanded_url: String,
}

/// A media item of a post (`media`); the type only when the request gave one.
#[derive(Debug, Deserialize, Serialize)]
pub struct Media {
    pub media_id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
}

/// The replies that are one list under one key, `{"<key>": [...]}`.
macro_rules! list_replies {
    ($($(#[$doc:meta])* $Name:ident { $key:ident: Vec<$Item:ty> })*) => {$(
        $(#[$doc])*
        #[derive(Debug, Deserialize, Serialize)]
        pub struct $Name {
            pub $key: Vec<$Item>,
        }
    )*};
}

list_replies! {
    /// `social-graph-get-followers`' reply.
    Followers { followers: Vec<u64> }
    /// `social-graph-get-followees`' reply.
    Followees { followees: Vec<u64> }
    /// `media`'s reply.
    MediaList { media: Vec<Media> }
    /// `url-shorten`'s reply.
    Urls { urls: Vec<Url> }
    /// `user-mention`'s reply.
    UserMentions { user_mentions: Vec<UserMention> }
}

/// `text-service`'s reply: the text with its URLs shortened, who it
/// mentions and the URLs.
#[derive(Debug, Deserialize, Serialize)]
pub struct Text {
    pub text: String,
    pub user_mentions: Vec<UserMention>,
    pub urls: Vec<Url>,
}

/// What a timeline writer answers: how many timelines it wrote the post to.
#[derive(Debug, Deserialize, Serialize)]
pub struct Updated {
    pub updated: usize,
}
