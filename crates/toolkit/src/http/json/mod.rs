//! Response bodies written as JSON straight into their buffer: the same
//! bytes as `serde_json`'s compact output (debug builds check every body
//! against it), with strings checked for characters to escape eight bytes
//! at a time. `serde_json` looks at every byte of every string, field
//! names included, one at a time: the better part of a list's time went
//! there. Numbers are written by `itoa`, as `serde_json` does; floats are
//! handed to `serde_json` itself.

use serde::ser::{self, Serialize};
use serde_json::Error;

/// The ten integer methods of a `Serializer`, each handing its value to
/// the serializer's own `$write`.
macro_rules! integers {
    ($write:ident) => {
        integers!(@$write serialize_i8: i8, serialize_i16: i16, serialize_i32: i32,
            serialize_i64: i64, serialize_i128: i128, serialize_u8: u8, serialize_u16: u16,
            serialize_u32: u32, serialize_u64: u64, serialize_u128: u128);
    };
    (@$write:ident $($method:ident: $ty:ty),*) => {$(
        fn $method(self, v: $ty) -> Result<(), Error> {
            self.$write(v)
        }
    )*};
}

mod escape;
mod key;

use escape::{write_display, write_field_name, write_str};
use key::Key;

/// Appends `value` as JSON to `out`.
pub fn to_writer<T: Serialize + ?Sized>(out: &mut Vec<u8>, value: &T) -> Result<(), Error> {
    value.serialize(Json(out))
}

/// The serializer of one value, writing into the buffer it borrows.
struct Json<'w>(&'w mut Vec<u8>);

/// An array, object or variant being written: whether an element came
/// yet, and what closes it.
pub struct Compound<'w> {
    out: &'w mut Vec<u8>,
    first: bool,
    close: &'static [u8],
}

impl<'w> Compound<'w> {
    fn open(out: &'w mut Vec<u8>, open: &[u8], close: &'static [u8]) -> Compound<'w> {
        out.extend_from_slice(open);
        Compound {
            out,
            first: true,
            close,
        }
    }

    fn comma(&mut self) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
    }

    fn element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.comma();
        value.serialize(Json(self.out))
    }

    /// A struct's field: its name comes from our own types (a Rust field
    /// name or a `rename`), so it is written without the escape check a
    /// string value gets; debug builds check it.
    fn field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        self.comma();
        write_field_name(self.out, key);
        value.serialize(Json(self.out))
    }

    fn end(self) -> Result<(), Error> {
        self.out.extend_from_slice(self.close);
        Ok(())
    }
}

/// A variant's content, `open` to `close`, inside `{"variant":` and `}`.
fn open_variant<'w>(
    out: &'w mut Vec<u8>,
    variant: &str,
    open: &[u8],
    close: &'static [u8],
) -> Compound<'w> {
    out.push(b'{');
    write_str(out, variant);
    out.push(b':');
    Compound::open(out, open, close)
}

impl Json<'_> {
    fn integer(self, value: impl itoa::Integer) -> Result<(), Error> {
        self.0
            .extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
        Ok(())
    }
}

impl<'w> ser::Serializer for Json<'w> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Compound<'w>;
    type SerializeTuple = Compound<'w>;
    type SerializeTupleStruct = Compound<'w>;
    type SerializeTupleVariant = Compound<'w>;
    type SerializeMap = Compound<'w>;
    type SerializeStruct = Compound<'w>;
    type SerializeStructVariant = Compound<'w>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.0
            .extend_from_slice(if v { b"true" as &[u8] } else { b"false" });
        Ok(())
    }

    integers!(integer);

    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        serde_json::to_writer(self.0, &v)
    }

    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        serde_json::to_writer(self.0, &v)
    }

    fn serialize_char(self, v: char) -> Result<(), Error> {
        write_str(self.0, v.encode_utf8(&mut [0; 4]));
        Ok(())
    }

    fn serialize_str(self, v: &str) -> Result<(), Error> {
        write_str(self.0, v);
        Ok(())
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        let mut seq = Compound::open(self.0, b"[", b"]");
        for byte in v {
            seq.element(byte)?;
        }
        seq.end()
    }

    fn serialize_none(self) -> Result<(), Error> {
        self.0.extend_from_slice(b"null");
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Error> {
        self.serialize_none()
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        self.serialize_none()
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        write_str(self.0, variant);
        Ok(())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        let content = open_variant(self.0, variant, b"", b"}");
        value.serialize(Json(&mut *content.out))?;
        content.end()
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Compound<'w>, Error> {
        Ok(Compound::open(self.0, b"[", b"]"))
    }

    fn serialize_tuple(self, len: usize) -> Result<Compound<'w>, Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<Compound<'w>, Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'w>, Error> {
        Ok(open_variant(self.0, variant, b"[", b"]}"))
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Compound<'w>, Error> {
        Ok(Compound::open(self.0, b"{", b"}"))
    }

    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Compound<'w>, Error> {
        Ok(Compound::open(self.0, b"{", b"}"))
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Compound<'w>, Error> {
        Ok(open_variant(self.0, variant, b"{", b"}}"))
    }

    fn collect_str<T: std::fmt::Display + ?Sized>(self, value: &T) -> Result<(), Error> {
        write_display(self.0, value)
    }
}

/// The sequence-like parts of a value: each element after a comma.
macro_rules! elements {
    ($($part:ident::$method:ident),*) => {$(
        impl ser::$part for Compound<'_> {
            type Ok = ();
            type Error = Error;

            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
                self.element(value)
            }

            fn end(self) -> Result<(), Error> {
                Compound::end(self)
            }
        }
    )*};
}

elements!(
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field
);

/// The struct-like parts of a value: each field by its name.
macro_rules! fields {
    ($($part:ident),*) => {$(
        impl ser::$part for Compound<'_> {
            type Ok = ();
            type Error = Error;

            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), Error> {
                self.field(key, value)
            }

            fn end(self) -> Result<(), Error> {
                Compound::end(self)
            }
        }
    )*};
}

fields!(SerializeStruct, SerializeStructVariant);

impl ser::SerializeMap for Compound<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.comma();
        key.serialize(Key(self.out))?;
        self.out.push(b':');
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        value.serialize(Json(self.out))
    }

    fn end(self) -> Result<(), Error> {
        Compound::end(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn same_as_serde_json<T: Serialize + ?Sized>(value: &T) {
        let mut ours = Vec::new();
        to_writer(&mut ours, value).unwrap();
        let theirs = serde_json::to_vec(value).unwrap();
        assert_eq!(
            String::from_utf8(ours).unwrap(),
            String::from_utf8(theirs).unwrap()
        );
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let mut texts: Vec<String> = vec![
            String::new(),
            "plain".into(),
            "exactly8".into(),
            "a longer plain text of some length".into(),
            "quote \" and backslash \\ and slash /".into(),
            "\u{7f} del, é, 日本語, 🙂 and \u{2028}".into(),
            "\"\"\"\"\"\"\"\"\"\\\\".into(),
        ];
        for byte in 0u8..0x80 {
            let c = char::from(byte);
            texts.push(format!("{c}"));
            texts.push(format!("abcdefg{c}hijklmnop{c}"));
            texts.push(format!("{c}{c}{c}{c}{c}{c}{c}{c}{c}"));
        }
        for len in 1..=20 {
            for at in 0..len {
                for c in ['"', '\\', '\n', '\u{1}', '\u{1f}', ' ', '\u{7f}', 'é'] {
                    let mut text: Vec<char> = vec!['a'; len];
                    text[at] = c;
                    texts.push(text.into_iter().collect());
                }
            }
        }
        for text in &texts {
            same_as_serde_json(text);
            same_as_serde_json(&BTreeMap::from([(text.as_str(), text.as_str())]));
        }
    }

    #[derive(Serialize)]
    enum Shape {
        Unit,
        Newtype(i32),
        Tuple(i32, String),
        Struct { a: u8, b: Option<bool> },
    }

    #[derive(Serialize)]
    struct Inner {
        #[serde(rename = "kind")]
        k: &'static str,
        skipped_when_none: Option<i64>,
    }

    #[derive(Serialize)]
    struct Outer {
        id: i64,
        name: String,
        #[serde(flatten)]
        inner: Inner,
        #[serde(skip_serializing_if = "Option::is_none")]
        absent: Option<i64>,
        shapes: Vec<Shape>,
        pair: (u8, char),
        bytes: serde_bytes_like::Bytes,
        empty: Vec<u8>,
        unit: (),
        floats: [f64; 4],
        small: f32,
        big: (i128, u128, u64, i64),
        map: BTreeMap<i32, bool>,
        bool_keys: BTreeMap<bool, u8>,
        value: serde_json::Value,
        display: Displayed,
    }

    mod serde_bytes_like {
        pub struct Bytes(pub Vec<u8>);
        impl serde::Serialize for Bytes {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(&self.0)
            }
        }
    }

    struct Displayed;
    impl Serialize for Displayed {
        fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            s.collect_str(&format_args!("{}-\"{}\"\n", 12, "x"))
        }
    }

    #[test]
    fn every_kind_of_value_is_written_as_serde_json_writes_it() {
        let value = Outer {
            id: -42,
            name: "Paracetamol 500 mg".into(),
            inner: Inner {
                k: "tablet",
                skipped_when_none: None,
            },
            absent: None,
            shapes: vec![
                Shape::Unit,
                Shape::Newtype(7),
                Shape::Tuple(1, "two".into()),
                Shape::Struct { a: 3, b: None },
            ],
            pair: (255, '"'),
            bytes: serde_bytes_like::Bytes(vec![0, 1, 255]),
            empty: Vec::new(),
            unit: (),
            floats: [0.1, -2.5e300, f64::NAN, f64::INFINITY],
            small: 1.5,
            big: (i128::MIN, u128::MAX, u64::MAX, i64::MIN),
            map: BTreeMap::from([(-1, true), (2, false)]),
            bool_keys: BTreeMap::from([(false, 0), (true, 1)]),
            value: json!({"a": [1, 2.5, null, "x\u{1}"], "b": {"c": true}, "": {}}),
            display: Displayed,
        };
        same_as_serde_json(&value);
        same_as_serde_json(&Some(&value.shapes));
        same_as_serde_json(&json!([]));
    }

    #[test]
    fn keys_that_are_not_strings_are_refused() {
        let mut out = Vec::new();
        assert!(to_writer(&mut out, &BTreeMap::from([(vec![1], 1)])).is_err());
    }
}
