//! JSON parsed with errors that carry a bounded part of the input.
//!
//! serde renders the offending value into its error message (`invalid type:
//! string "…", expected u64`): a 32 MiB string in a request would become a
//! 32 MiB message, several copies of it in memory, a reply and a log line.
//! A body up to [`SMALL`] is parsed as serde_json parses it, and its message
//! clipped ([`crate::error::clip`]). A larger one is parsed through
//! [`Bounded`], which gives the visitors an error type that renders at most
//! [`MAX_ECHO`](crate::MAX_ECHO) bytes and stops, and has serde_json visit what it found
//! (`deserialize_any`) instead of building its own type error from the whole
//! value: the same values and the same messages, never more of the input than
//! [`MAX_ECHO`](crate::MAX_ECHO) in memory for an error.

use crate::error::{clip, clipped};
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess,
    VariantAccess, Visitor,
};
use std::fmt;

/// The largest body parsed without [`Bounded`]: its messages cost a few
/// times its size at most, and most bodies take serde_json's own path.
const SMALL: usize = 16 << 10;

/// `body` parsed, or serde's message with at most [`MAX_ECHO`](crate::MAX_ECHO) bytes of it
/// (and the place, `at line L column C`).
pub(crate) fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, String> {
    let parsed = if body.len() <= SMALL {
        serde_json::from_slice(body)
    } else {
        let mut de = serde_json::Deserializer::from_slice(body);
        let bounded = Bounded {
            de: &mut de,
            any: true,
        };
        T::deserialize(bounded).and_then(|value| de.end().map(|()| value))
    };
    parsed.map_err(|e| message(&e))
}

/// serde_json's message for `e`, its own part clipped, its place kept.
fn message(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let place = format!(" at line {} column {}", e.line(), e.column());
    match text.strip_suffix(&place) {
        Some(what) if e.line() != 0 => format!("{}{place}", clip(what)),
        _ => clip(&text).into_owned(),
    }
}

/// The error a visitor under [`Bounded`] makes: at most [`MAX_ECHO`](crate::MAX_ECHO) bytes
/// of its message are ever rendered.
#[derive(Debug)]
struct Clipped(String);

impl fmt::Display for Clipped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Clipped {}

impl de::Error for Clipped {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Clipped(clipped(&msg))
    }
}

/// A deserializer whose visitors make [`Clipped`] errors. `any`: ask for
/// what the input holds (serde_json's type errors render the whole value);
/// off for map keys, which serde_json reads by the type asked.
struct Bounded<D> {
    de: D,
    any: bool,
}

/// A visitor whose errors are [`Clipped`], handed back as the caller's.
struct Visit<V>(V);

/// A seed, or a sequence, map or enum access, that passes [`Bounded`] on.
struct Pass<X>(X, bool);

macro_rules! asked_as_any {
    ($($method:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            if self.any {
                self.de.deserialize_any(Visit(visitor))
            } else {
                self.de.$method($($arg,)* Visit(visitor))
            }
        }
    )*};
}

macro_rules! asked_as_such {
    ($($method:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            self.de.$method($($arg,)* Visit(visitor))
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Bounded<D> {
    type Error = D::Error;

    asked_as_any!(
        deserialize_bool(),
        deserialize_i8(),
        deserialize_i16(),
        deserialize_i32(),
        deserialize_i64(),
        deserialize_u8(),
        deserialize_u16(),
        deserialize_u32(),
        deserialize_u64(),
        deserialize_f32(),
        deserialize_f64(),
        deserialize_char(),
        deserialize_str(),
        deserialize_string(),
        deserialize_unit(),
        deserialize_unit_struct(name: &'static str),
        deserialize_seq(),
        deserialize_tuple(len: usize),
        deserialize_tuple_struct(name: &'static str, len: usize),
        deserialize_map(),
        deserialize_struct(name: &'static str, fields: &'static [&'static str]),
        deserialize_identifier(),
    );

    asked_as_such!(
        deserialize_any(),
        deserialize_i128(),
        deserialize_u128(),
        deserialize_bytes(),
        deserialize_byte_buf(),
        deserialize_option(),
        deserialize_newtype_struct(name: &'static str),
        deserialize_enum(name: &'static str, variants: &'static [&'static str]),
        deserialize_ignored_any(),
    );

    fn is_human_readable(&self) -> bool {
        self.de.is_human_readable()
    }
}

macro_rules! visit_values {
    ($($method:ident($ty:ty)),* $(,)?) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
            self.0.$method::<Clipped>(v).map_err(|e| E::custom(e.0))
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Visit<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }

    visit_values!(
        visit_bool(bool),
        visit_i8(i8),
        visit_i16(i16),
        visit_i32(i32),
        visit_i64(i64),
        visit_i128(i128),
        visit_u8(u8),
        visit_u16(u16),
        visit_u32(u32),
        visit_u64(u64),
        visit_u128(u128),
        visit_f32(f32),
        visit_f64(f64),
        visit_char(char),
        visit_str(&str),
        visit_borrowed_str(&'de str),
        visit_string(String),
        visit_bytes(&[u8]),
        visit_borrowed_bytes(&'de [u8]),
        visit_byte_buf(Vec<u8>),
    );

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_none::<Clipped>().map_err(|e| E::custom(e.0))
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.0.visit_unit::<Clipped>().map_err(|e| E::custom(e.0))
    }

    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<V::Value, D::Error> {
        self.0.visit_some(Bounded { de, any: true })
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, de: D) -> Result<V::Value, D::Error> {
        self.0.visit_newtype_struct(Bounded { de, any: true })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.0.visit_seq(Pass(seq, true))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.0.visit_map(Pass(map, true))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.0.visit_enum(Pass(data, true))
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Pass<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<S::Value, D::Error> {
        self.0.deserialize(Bounded { de, any: self.1 })
    }
}

/// A sequence's or a map's `next_*_seed` (`any`: the [`Bounded`] flag its
/// seed passes on) and `size_hint`, both the wrapped access's.
macro_rules! passed_on {
    ($method:ident($any:literal)) => {
        fn $method<T: DeserializeSeed<'de>>(
            &mut self,
            seed: T,
        ) -> Result<Option<T::Value>, A::Error> {
            self.0.$method(Pass(seed, $any))
        }

        fn size_hint(&self) -> Option<usize> {
            self.0.size_hint()
        }
    };
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Pass<A> {
    type Error = A::Error;

    passed_on!(next_element_seed(true));
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Pass<A> {
    type Error = A::Error;

    passed_on!(next_key_seed(false));

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(Pass(seed, true))
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Pass<A> {
    type Error = A::Error;
    type Variant = Pass<A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Pass<A::Variant>), A::Error> {
        let (value, variant) = self.0.variant_seed(Pass(seed, false))?;
        Ok((value, Pass(variant, true)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Pass<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(Pass(seed, true))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, Visit(visitor))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0.struct_variant(fields, Visit(visitor))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MAX_ECHO;
    use serde::Deserialize;
    use std::collections::BTreeMap;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Post {
        id: u64,
        tags: Vec<String>,
        by: Option<Who>,
        extra: BTreeMap<u32, f64>,
        kind: Kind,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Who(String);

    #[derive(Debug, Deserialize, PartialEq)]
    enum Kind {
        Text,
        Media { n: u8 },
        Pair(i32, bool),
    }

    /// A body past [`SMALL`] that means the same: `text` and spaces.
    fn padded(text: &str) -> Vec<u8> {
        let mut body = text.as_bytes().to_vec();
        body.resize(SMALL + 1, b' ');
        body
    }

    #[test]
    fn a_large_body_parses_to_the_same_value_and_the_same_message_as_a_small_one() {
        let cases = [
            r#"{"id": 1, "tags": ["a"], "by": "me", "extra": {"7": 1.5}, "kind": "Text"}"#,
            r#"{"id": 1, "tags": [], "by": null, "extra": {}, "kind": {"Media": {"n": 3}}}"#,
            r#"{"id": 1, "tags": [], "by": null, "extra": {}, "kind": {"Pair": [-1, true]}}"#,
            r#"{"id": "one", "tags": [], "by": null, "extra": {}, "kind": "Text"}"#,
            r#"{"id": 1.5, "tags": [], "by": null, "extra": {}, "kind": "Text"}"#,
            r#"{"id": 1, "tags": [2], "by": null, "extra": {}, "kind": "Text"}"#,
            r#"{"id": 1, "tags": [], "by": 3, "extra": {}, "kind": "Text"}"#,
            r#"{"id": 1, "tags": [], "by": null, "extra": {"x": 1}, "kind": "Text"}"#,
            r#"{"id": 1, "tags": [], "by": null, "extra": {}, "kind": "Other"}"#,
            r#"{"id": 1, "tags": [], "by": null, "extra": {}, "kind": {"Media": {"n": 300}}}"#,
            r#"{"id": 1, "tags": [], "by": null, "extra": {}, "kind": "Text", "more": 1}"#,
            r#"{"id": 1, "tags": [], "by": null, "extra": {}}"#,
            r#"{"id": 1, "tags": "a", "by": null, "extra": {}, "kind": "Text"}"#,
            r#""a post""#,
            r#"[1, ["a"], null, {}, "Text"]"#,
            r#"{"id": 1} x"#,
        ];
        for case in cases {
            let small = parse::<Post>(case.as_bytes());
            let large = parse::<Post>(&padded(case));
            match (&small, &large) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{case}"),
                (Err(a), Err(b)) => assert_eq!(a, b, "{case}"),
                _ => panic!("{case}: {small:?} against {large:?}"),
            }
        }
        assert_eq!(parse::<u64>(&padded("7")), Ok(7));
        assert_eq!(parse::<String>(&padded(r#""\u00e9""#)), Ok("é".into()));
    }

    #[test]
    fn a_huge_string_of_the_wrong_type_is_echoed_at_most_max_echo_bytes() {
        let huge = format!(r#"{{"id": "{}"}}"#, "a".repeat(4 << 20));
        let message = parse::<Post>(huge.as_bytes()).unwrap_err();
        assert!(message.len() < MAX_ECHO + 64, "{} bytes", message.len());
        assert!(
            message.starts_with(r#"invalid type: string "aaa"#),
            "{message}"
        );
        assert!(message.contains("… at line 1 column "), "{message}");
        // A small body's message is clipped the same way.
        let small = format!(r#""{}""#, "b".repeat(SMALL - 2));
        let message = parse::<u64>(small.as_bytes()).unwrap_err();
        assert!(message.len() < MAX_ECHO + 64, "{message}");
    }
}
