//! A JSON object written field by field to any writer, so a large document
//! (a snapshot, a portable payload) never has to be held as one value.

use std::io::{self, Write};

use serde::Serialize;

use crate::error::{ApiError, Result};

pub fn write_error(err: io::Error) -> ApiError {
    ApiError::internal(format!("writing response: {err}"))
}

fn json_error(err: serde_json::Error) -> ApiError {
    ApiError::internal(format!("serialising response: {err}"))
}

/// Writes one JSON object field by field; arrays can be filled one element
/// at a time from a row callback.
pub struct JsonObject<'w> {
    out: &'w mut dyn Write,
    empty: bool,
}

impl<'w> JsonObject<'w> {
    pub fn begin(out: &'w mut dyn Write) -> Result<JsonObject<'w>> {
        out.write_all(b"{").map_err(write_error)?;
        Ok(JsonObject { out, empty: true })
    }

    fn key(&mut self, name: &str) -> Result<()> {
        if !self.empty {
            self.out.write_all(b",").map_err(write_error)?;
        }
        self.empty = false;
        serde_json::to_writer(&mut *self.out, name).map_err(json_error)?;
        self.out.write_all(b":").map_err(write_error)
    }

    pub fn field<T: Serialize + ?Sized>(&mut self, name: &str, value: &T) -> Result<()> {
        self.key(name)?;
        serde_json::to_writer(&mut *self.out, value).map_err(json_error)
    }

    /// A nested object under `name`; this one continues after it ends.
    pub fn object(&mut self, name: &str) -> Result<JsonObject<'_>> {
        self.key(name)?;
        JsonObject::begin(&mut *self.out)
    }

    /// An array under `name` whose elements `fill` hands over one by one.
    pub fn array<T: Serialize>(
        &mut self,
        name: &str,
        fill: impl FnOnce(&mut dyn FnMut(T) -> Result<()>) -> Result<()>,
    ) -> Result<()> {
        self.key(name)?;
        self.out.write_all(b"[").map_err(write_error)?;
        let out = &mut *self.out;
        // Each element is serialised into a local buffer and handed over in
        // one write: serde_json's many small writes stay cheap.
        let mut element = Vec::with_capacity(1024);
        fill(&mut |item: T| {
            if !element.is_empty() {
                element.clear();
                element.push(b',');
            }
            serde_json::to_writer(&mut element, &item).map_err(json_error)?;
            out.write_all(&element).map_err(write_error)
        })?;
        self.out.write_all(b"]").map_err(write_error)
    }

    pub fn end(self) -> Result<()> {
        self.out.write_all(b"}").map_err(write_error)
    }
}
