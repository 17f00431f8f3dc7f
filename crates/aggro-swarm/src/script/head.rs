//! The head of a received Socket.IO event — `["name", first, …]`: its name and, when its first argument
//! is an object, that object's `from` (a number or a text), `seq` and `t` — read in one pass that builds nothing else. Most
//! events a swarm receives (the room's broadcasts) have no handler: they are delivery-checked from the
//! head and never turned into values.

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// An event's name and the delivery fields of its first argument.
#[derive(Debug, PartialEq)]
pub struct EventHead<'a> {
    pub name: Cow<'a, str>,
    /// The sender, as the delivery check keys it (`state::sender_of_json`).
    pub from: Option<u64>,
    pub seq: Option<f64>,
    pub t: Option<f64>,
}

/// Reads the head of an event's JSON data; None when it is not an array starting with a name.
pub fn read(data: &str) -> Option<EventHead<'_>> {
    let mut d = serde_json::Deserializer::from_str(data);
    let head = d.deserialize_seq(HeadVisitor).ok()?;
    d.end().ok()?;
    Some(head)
}

struct HeadVisitor;

impl<'de> Visitor<'de> for HeadVisitor {
    type Value = EventHead<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an event: [name, …]")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let Name(name) = seq.next_element()?.ok_or_else(|| de::Error::invalid_length(0, &self))?;
        let Fields(from, [seq_no, t]) = seq.next_element()?.unwrap_or(NONE);
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(EventHead { name, from, seq: seq_no, t })
    }
}

/// A string, borrowed from the text when it has no escapes.
struct Name<'a>(Cow<'a, str>);

impl<'de> de::Deserialize<'de> for Name<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Name<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an event's name")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Name(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Name(Cow::Owned(s.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}

/// `from` (a sender: a whole number or a text), `seq` and `t` (numbers) of an object, each None when
/// missing or of another kind; all None for a value that is not an object.
struct Fields(Option<u64>, [Option<f64>; 2]);

const NONE: Fields = Fields(None, [None; 2]);

impl<'de> de::Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FieldsVisitor)
    }
}

struct FieldsVisitor;

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = Fields;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Fields, A::Error> {
        let Fields(mut from, mut found) = NONE;
        while let Some(Key(slot)) = map.next_key()? {
            match slot {
                Some(0) => from = super::state::sender_of_json(&map.next_value::<serde_json::Value>()?),
                Some(k) => found[k - 1] = map.next_value::<serde_json::Value>()?.as_f64(),
                None => drop(map.next_value::<IgnoredAny>()?),
            }
        }
        Ok(Fields(from, found))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Fields, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(NONE)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Fields, E> {
        Ok(NONE)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Fields, E> {
        Ok(NONE)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Fields, E> {
        Ok(NONE)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Fields, E> {
        Ok(NONE)
    }
    fn visit_str<E>(self, _: &str) -> Result<Fields, E> {
        Ok(NONE)
    }
    fn visit_unit<E>(self) -> Result<Fields, E> {
        Ok(NONE)
    }
}

/// Which of `from`, `seq`, `t` a key is (None: another).
struct Key(Option<usize>);

impl<'de> de::Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Key, E> {
                Ok(Key(["from", "seq", "t"].iter().position(|k| *k == s)))
            }
        }
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_head_is_the_name_and_the_delivery_fields() {
        let h = read(r#"["moved",{"x":1.5,"from":7,"seq":3,"t":123456789012,"tags":["a",{"seq":9}]},"more",[1,2]]"#).unwrap();
        assert_eq!(h, EventHead { name: Cow::Borrowed("moved"), from: Some(7), seq: Some(3.0), t: Some(123456789012.0) });
        assert!(matches!(read(r#"["a\"b"]"#).unwrap().name, Cow::Owned(ref n) if n == "a\"b"), "an escaped name is unescaped");
        let bare = read(r#"["joined","room-1"]"#).unwrap();
        assert_eq!((bare.name.as_ref(), bare.from, bare.seq, bare.t), ("joined", None, None, None));
        let odd = read(r#"["m",{"from":true,"seq":null,"t":[1]}]"#).unwrap();
        assert_eq!((odd.from, odd.seq, odd.t), (None, None, None));
        // A sender named by text (a player's name) is a sender: the same name, the same one.
        let named = read(r#"["acted",{"from":"bot17","seq":4,"t":5}]"#).unwrap();
        assert_eq!(named.from, Some(crate::script::state::sender_of_text("bot17")));
        assert_ne!(named.from, read(r#"["acted",{"from":"bot18","seq":4,"t":5}]"#).unwrap().from);
        for bad in [r#"[]"#, r#"[1]"#, r#"{"a":1}"#, r#"["m",{"from":1}"#, r#"["m"] x"#] {
            assert!(read(bad).is_none(), "{bad}");
        }
    }
}
