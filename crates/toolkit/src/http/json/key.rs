//! Object keys: strings, or numbers and booleans written as strings, as
//! `serde_json` allows.

use serde::ser::{self, Impossible, Serialize};
use serde_json::Error;

use super::escape::{write_display, write_str};

/// An object's key: a string, or a number or boolean written as one, as
/// `serde_json` allows.
pub(super) struct Key<'w>(pub(super) &'w mut Vec<u8>);

fn not_a_string_key() -> Error {
    ser::Error::custom("key must be a string")
}

impl Key<'_> {
    fn quoted(self, text: &str) -> Result<(), Error> {
        self.0.push(b'"');
        self.0.extend_from_slice(text.as_bytes());
        self.0.push(b'"');
        Ok(())
    }

    fn integer(self, value: impl itoa::Integer) -> Result<(), Error> {
        self.quoted(itoa::Buffer::new().format(value))
    }
}

impl ser::Serializer for Key<'_> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Impossible<(), Error>;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Impossible<(), Error>;
    type SerializeStruct = Impossible<(), Error>;
    type SerializeStructVariant = Impossible<(), Error>;

    fn serialize_str(self, v: &str) -> Result<(), Error> {
        write_str(self.0, v);
        Ok(())
    }

    fn serialize_char(self, v: char) -> Result<(), Error> {
        write_str(self.0, v.encode_utf8(&mut [0; 4]));
        Ok(())
    }

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        self.quoted(if v { "true" } else { "false" })
    }

    integers!(integer);

    fn serialize_f32(self, _v: f32) -> Result<(), Error> {
        Err(not_a_string_key())
    }

    fn serialize_f64(self, _v: f64) -> Result<(), Error> {
        Err(not_a_string_key())
    }

    fn serialize_bytes(self, _v: &[u8]) -> Result<(), Error> {
        Err(not_a_string_key())
    }

    fn serialize_none(self) -> Result<(), Error> {
        Err(not_a_string_key())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, _value: &T) -> Result<(), Error> {
        Err(not_a_string_key())
    }

    fn serialize_unit(self) -> Result<(), Error> {
        Err(not_a_string_key())
    }

    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), Error> {
        Err(not_a_string_key())
    }

    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.serialize_str(variant)
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
        _variant: &'static str,
        _value: &T,
    ) -> Result<(), Error> {
        Err(not_a_string_key())
    }

    fn serialize_seq(self, _len: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(not_a_string_key())
    }

    fn serialize_tuple(self, _len: usize) -> Result<Self::SerializeTuple, Error> {
        Err(not_a_string_key())
    }

    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(not_a_string_key())
    }

    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(not_a_string_key())
    }

    fn serialize_map(self, _len: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(not_a_string_key())
    }

    fn serialize_struct(
        self,
        _name: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStruct, Error> {
        Err(not_a_string_key())
    }

    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(not_a_string_key())
    }

    fn collect_str<T: std::fmt::Display + ?Sized>(self, value: &T) -> Result<(), Error> {
        write_display(self.0, value)
    }
}
