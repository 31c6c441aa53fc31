//! User records, shared by `register-user`, `register-user-with-id`,
//! `user-login`, `get-user-id` and `compose-creator-with-username`
//! (DeathStarBench's UserService keeps them in one place too).
//!
//! - `user:<username>`: the user id, as a string (what `user-mention`,
//!   `get-user-id` and `compose-creator-with-username` read). Written with
//!   `SET … NX`, so a username is registered once.
//! - `user-profile:<username>`: a hash `user_id`, `first_name`, `last_name`,
//!   `salt` (16 random bytes, hex) and `password_hash`, hex SHA-256 of the
//!   password followed by the salt, as DeathStarBench stores it.
//!
//! Passwords are never stored, logged or put in an error message.

use crate::Conn;
use fmerge_runtime::Error;
use serde::Deserialize;
use sha2::{Digest, Sha256};

/// A new user, as `register-user` is asked for one (`register-user-with-id`
/// adds the id): what [`register`] stores, with the password it hashes.
#[derive(Deserialize)]
pub struct Registration {
    pub first_name: String,
    pub last_name: String,
    pub username: String,
    pub password: String,
}

/// A username that can be mentioned (`@name`, `[A-Za-z0-9_-]+`, as
/// text-service parses it), or a 400 saying what is allowed.
pub fn check_username(username: &str) -> Result<(), Error> {
    let ok = !username.is_empty()
        && username
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(Error::bad_request(format!(
            "username {username:?} is not valid: use 1 or more of A-Z a-z 0-9 _ -"
        )))
    }
}

/// Registers `user` as `user_id`: a 400 if the username is taken.
pub async fn register(conn: &mut Conn, user_id: u64, user: &Registration) -> Result<(), Error> {
    check_username(&user.username)?;
    if user.password.is_empty() {
        return Err(Error::bad_request("password must not be empty"));
    }
    let salt = new_salt()?;
    let hash = password_hash(&user.password, &salt);
    let created: Option<String> = conn
        .query(
            redis::cmd("SET")
                .arg(format!("user:{}", user.username))
                .arg(user_id)
                .arg("NX"),
        )
        .await?;
    if created.is_none() {
        return Err(Error::bad_request(format!(
            "user {} already exists",
            user.username
        )));
    }
    conn.query(
        redis::cmd("HSET")
            .arg(format!("user-profile:{}", user.username))
            .arg("user_id")
            .arg(user_id)
            .arg("first_name")
            .arg(&user.first_name)
            .arg("last_name")
            .arg(&user.last_name)
            .arg("salt")
            .arg(&salt)
            .arg("password_hash")
            .arg(&hash),
    )
    .await
}

/// The user id registered for `username` (`user:<username>`); a 400 if there
/// is none.
pub async fn user_id(conn: &mut Conn, username: &str) -> Result<u64, Error> {
    let id: Option<String> = conn
        .query(redis::cmd("GET").arg(format!("user:{username}")))
        .await?;
    let Some(id) = id else {
        return Err(Error::bad_request(format!(
            "user {username} is not registered"
        )));
    };
    id.parse()
        .map_err(|_| Error::new(format!("user:{username} holds {id:?}, not a user id")))
}

/// The user id of `username` if `password` is theirs; the same 400 for an
/// unknown user and a wrong password, so that the reply does not tell which.
pub async fn login(conn: &mut Conn, username: &str, password: &str) -> Result<u64, Error> {
    let (user_id, salt, hash): (Option<u64>, Option<String>, Option<String>) = conn
        .query(
            redis::cmd("HMGET")
                .arg(format!("user-profile:{username}"))
                .arg("user_id")
                .arg("salt")
                .arg("password_hash"),
        )
        .await?;
    match (user_id, salt, hash) {
        (Some(id), Some(salt), Some(hash))
            if same(password_hash(password, &salt).as_bytes(), hash.as_bytes()) =>
        {
            Ok(id)
        }
        _ => Err(Error::bad_request("incorrect username or password")),
    }
}

/// Hex SHA-256 of the password followed by the salt.
pub fn password_hash(password: &str, salt: &str) -> String {
    let mut sha = Sha256::new();
    sha.update(password.as_bytes());
    sha.update(salt.as_bytes());
    hex::encode(sha.finalize())
}

fn new_salt() -> Result<String, Error> {
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt)
        .map_err(|e| Error::new(format!("no randomness for a password salt: {e}")))?;
    Ok(hex::encode(salt))
}

/// Equal, in a time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_sha256_of_password_then_salt() {
        // `printf secret00ff | sha256sum`
        assert_eq!(
            password_hash("secret", "00ff"),
            "07eb759537554367e17e5f5c8f8c74a0dca7c83ab40e056042578679a5e065ac"
        );
        assert_ne!(
            password_hash("secret", "00ff"),
            password_hash("secret", "00fe")
        );
        assert_eq!(password_hash("", "").len(), 64);
    }

    #[test]
    fn usernames_are_what_a_mention_can_name() {
        assert!(check_username("bob_the-2nd").is_ok());
        for bad in ["", "a b", "a@b", "é"] {
            let e = check_username(bad).unwrap_err();
            assert_eq!(e.status(), 400);
            assert!(e.message().contains("A-Z a-z 0-9 _ -"), "{}", e.message());
        }
    }

    #[test]
    fn same_compares_whole_slices() {
        assert!(same(b"abc", b"abc"));
        assert!(!same(b"abc", b"abd"));
        assert!(!same(b"abc", b"ab"));
    }
}
