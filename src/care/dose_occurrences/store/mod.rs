//! SQL for the dose-occurrence projection and for persisted outcomes. Every
//! projection read covers all the people of one request at once (no query
//! per person, source or dose): people are passed as a JSON array bound once
//! and unpacked with `json_each`.

mod outcomes;
mod sources;

pub use outcomes::{
    NewNotTaken, OccurrenceIdentity, Restored, RestoredOutcome, SavedOutcome, decide_not_taken,
    find_outcome, insert_not_taken, insert_restored, mark_taken, outcome_by_id,
    outcome_by_occurrence, reopen, saved_outcomes,
};
pub use sources::{
    AssignmentSource, Pause, PersonRef, ScheduleSource, SourceCommon, SourceIds, Take, assignments,
    pauses, pauses_of_source, schedule, schedules, takes, visible_people,
};
