//! One operation on its way through its resource's rule: the checks of the
//! operation's shape for each kind of action (a create carries no id or
//! if_match; a change needs both; pause, resume, close and delete carry no
//! attributes) and the rule's record turned into the batch result.

use crate::db::WriteTx;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::batches_model::{Operation, OperationResult};
use crate::auth::Actor;
use crate::domain::Versioned;
use crate::domain::body::typed;
use crate::domain::{IfMatch, ResourceId};
use crate::error::{ApiError, Result};

/// An operation of the batch, with what its rule needs.
pub struct Step<'a> {
    pub conn: &'a WriteTx<'a>,
    pub actor: &'a Actor,
    pub index: usize,
    pub op: &'a Operation,
    /// The record type its result names (from the operation table).
    pub record_type: &'static str,
}

impl Step<'_> {
    /// A result naming `record`, with its ETag unless it was deleted.
    pub fn result<R: Serialize + Versioned>(
        &self,
        record: &R,
        deleted: bool,
    ) -> Result<OperationResult> {
        let value = serde_json::to_value(record).map_err(ApiError::internal)?;
        Ok(OperationResult {
            index: self.index,
            action: self.op.action.clone(),
            record_type: self.record_type,
            record_id: id_text(&value["id"]),
            record_portable_id: id_text(&value["portable_id"]),
            etag: (!deleted).then(|| record.etag()),
            replayed: None,
        })
    }

    /// A create: no id, no if_match, the resource's attributes.
    pub fn create<A: DeserializeOwned, R: Serialize + Versioned>(
        &self,
        rule: impl FnOnce(A) -> Result<R>,
    ) -> Result<OperationResult> {
        for_create(self.op)?;
        let record = rule(attributes(self.op)?)?;
        self.result(&record, false)
    }

    /// An update: id, if_match and the resource's attributes.
    pub fn update<A: DeserializeOwned, R: Serialize + Versioned>(
        &self,
        rule: impl FnOnce(&ResourceId, &IfMatch, A) -> Result<R>,
    ) -> Result<OperationResult> {
        let (id, if_match) = for_change(self.op)?;
        let record = rule(id, &if_match, attributes(self.op)?)?;
        self.result(&record, false)
    }

    /// A change without attributes (pause, resume, close): id and if_match.
    pub fn transition<R: Serialize + Versioned>(
        &self,
        rule: impl FnOnce(&ResourceId, &IfMatch) -> Result<R>,
    ) -> Result<OperationResult> {
        let (id, if_match) = for_change(self.op)?;
        no_attributes(self.op)?;
        let record = rule(id, &if_match)?;
        self.result(&record, false)
    }

    /// A delete: id and if_match; the result names the record as it was.
    pub fn delete<R: Serialize + Versioned>(
        &self,
        get: impl FnOnce(&ResourceId) -> Result<R>,
        rule: impl FnOnce(&ResourceId, &IfMatch) -> Result<()>,
    ) -> Result<OperationResult> {
        let (id, if_match) = for_change(self.op)?;
        no_attributes(self.op)?;
        let record = get(id)?;
        rule(id, &if_match)?;
        self.result(&record, true)
    }

    /// The target of an action that needs an id but no if_match.
    pub fn target(&self) -> Result<&ResourceId> {
        self.op
            .id
            .as_ref()
            .ok_or_else(|| ApiError::invalid("id", "is required for this action"))
    }
}

/// The operation's attributes as the resource's attribute struct, with the
/// same 422s as a REST body (absent attributes are `{}`).
pub fn attributes<T: DeserializeOwned>(op: &Operation) -> Result<T> {
    typed(op.attributes.as_ref()).map_err(|e| match e {
        ApiError::Validation { message, errors } => ApiError::Validation {
            message: format!("attributes: {message}"),
            errors: errors
                .into_iter()
                .map(|(field, messages)| (format!("attributes.{field}"), messages))
                .collect(),
        },
        other => other,
    })
}

/// Close, pause, resume and delete carry no attributes (or `{}`).
fn no_attributes(op: &Operation) -> Result<()> {
    match &op.attributes {
        None => Ok(()),
        Some(Value::Object(map)) if map.is_empty() => Ok(()),
        Some(_) => Err(ApiError::invalid(
            "attributes",
            "must be empty for this action",
        )),
    }
}

/// A create carries neither id nor if_match.
fn for_create(op: &Operation) -> Result<()> {
    if op.id.is_some() {
        return Err(ApiError::invalid("id", "must be left out of a create"));
    }
    if op.if_match.is_some() {
        return Err(ApiError::invalid(
            "if_match",
            "must be left out of a create",
        ));
    }
    Ok(())
}

/// The target of a change: its id, and its ETag (missing → 428).
fn for_change(op: &Operation) -> Result<(&ResourceId, IfMatch)> {
    let id = op
        .id
        .as_ref()
        .ok_or_else(|| ApiError::invalid("id", "is required for this action"))?;
    let if_match = op.if_match.clone().ok_or_else(|| {
        ApiError::PreconditionRequired(
            "this action needs the record's current ETag in if_match".into(),
        )
    })?;
    Ok((id, IfMatch(Some(if_match))))
}

fn id_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}
