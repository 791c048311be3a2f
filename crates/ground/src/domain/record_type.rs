//! The change feed's record types, named once. Each resource's
//! `RECORD_TYPE` is one of these; code that speaks of another resource's
//! records (a pause of a schedule, the stock of a dosage option) names it
//! here instead of borrowing that resource's module.

pub const PERSON: &str = "Person";
pub const LOCATION: &str = "Location";
pub const MEDICATION: &str = "Medication";
pub const DOSAGE_OPTION: &str = "MedicationDosageOption";
pub const SCHEDULE: &str = "Schedule";
pub const PERSON_MEDICATION: &str = "PersonMedication";
pub const MEDICATION_TAKE: &str = "MedicationTake";
pub const PAUSE_PERIOD: &str = "MedicationPausePeriod";
pub const DOSE_OCCURRENCE: &str = "MedicationDoseOccurrence";
pub const HEALTH_EVENT: &str = "HealthEvent";
pub const NOTIFICATION_PREFERENCE: &str = "NotificationPreference";

/// Every `record_type` the change feed can carry.
pub const ALL: &[&str] = &[
    PERSON,
    LOCATION,
    MEDICATION,
    DOSAGE_OPTION,
    SCHEDULE,
    PERSON_MEDICATION,
    MEDICATION_TAKE,
    PAUSE_PERIOD,
    DOSE_OCCURRENCE,
    HEALTH_EVENT,
    NOTIFICATION_PREFERENCE,
];
