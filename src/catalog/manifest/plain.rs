//! The quick reading of a manifest that needs no notes and no error: every key that zot
//! reads spelled as documented, every such value of the type zot wants. It decodes straight
//! into the fields (an unknown value is read as a `serde_json::Value` and dropped, as the
//! full reading reads it); the caller checks `name` and `exec` and leaves anything else to
//! the full reading, which says what is wrong and where.
//!
//! With those checks it accepts exactly the texts the full reading accepts without notes,
//! and gives the same manifest (a property test holds it to that): invalid escapes, numbers
//! out of range and nesting too deep fail alike, duplicate keys are applied in order (the
//! last one wins, `null` keeps a string and resets `args` and `enabled`), and a key matching
//! a field only in another case gives up.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, Visitor};

use super::keys::{FIELDS, key_matches};

/// The fields of the manifest object `text`, when its keys and values are all as
/// documented (see the module documentation).
pub(super) fn decode(text: &str) -> Option<Fields> {
    let Plain(fields) = serde_json::from_str(text).ok()?;
    Some(fields)
}

/// The fields as the keys left them.
#[derive(Default)]
pub(super) struct Fields {
    pub name: Option<String>,
    pub version: Option<String>,
    pub exec: Option<String>,
    pub args: Vec<String>,
    pub language: Option<String>,
    pub description: Option<String>,
    pub enabled: bool,
}

impl Fields {
    /// Applies the value of the documented key `field` (one of [`FIELDS`]).
    fn set<'de, A: MapAccess<'de>>(&mut self, field: &str, map: &mut A) -> Result<(), A::Error> {
        let string = match field {
            "name" => &mut self.name,
            "version" => &mut self.version,
            "exec" => &mut self.exec,
            "language" => &mut self.language,
            "description" => &mut self.description,
            "args" => {
                self.args = map.next_value::<Option<Vec<String>>>()?.unwrap_or_default();
                return Ok(());
            }
            _ => {
                self.enabled = map.next_value::<Option<bool>>()?.unwrap_or(true);
                return Ok(());
            }
        };
        if let Some(value) = map.next_value::<Option<String>>()? {
            *string = Some(value);
        }
        Ok(())
    }
}

/// A top-level object read into [`Fields`]; anything else fails.
struct Plain(Fields);

impl<'de> Deserialize<'de> for Plain {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(PlainVisitor)
    }
}

struct PlainVisitor;

impl<'de> Visitor<'de> for PlainVisitor {
    type Value = Plain;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a manifest object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Plain, A::Error> {
        let mut fields = Fields {
            enabled: true,
            ..Fields::default()
        };
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Field(field) => fields.set(field, &mut map)?,
                Key::Other => map.next_value::<serde_json::Value>().map(drop)?,
                Key::Misspelled => return Err(de::Error::custom("a key spelled otherwise")),
            }
        }
        Ok(Plain(fields))
    }
}

/// What a top-level key sets.
enum Key {
    /// The field spelled exactly so.
    Field(&'static str),
    /// A field, spelled in another case (the full reading notes it).
    Misspelled,
    /// Nothing zot reads.
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Key, E> {
        if let Some(field) = FIELDS.iter().find(|f| **f == key) {
            return Ok(Key::Field(field));
        }
        if FIELDS.iter().any(|f| key_matches(key, f)) {
            return Ok(Key::Misspelled);
        }
        Ok(Key::Other)
    }
}
