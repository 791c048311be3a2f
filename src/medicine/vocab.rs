//! The closed vocabularies of medicines (units, forms, routes, stock
//! reasons): each is a string enum on the wire and in SQLite.

use crate::domain::vocabulary;

vocabulary!(
    /// Units a dose or a stock quantity is counted in.
    DoseUnit {
        Tablet => "tablet",
        Capsule => "capsule",
        Gummy => "gummy",
        Mg => "mg",
        Ml => "ml",
        G => "g",
        Mcg => "mcg",
        Iu => "IU",
        Spray => "spray",
        Drop => "drop",
        Sachet => "sachet",
        Pad => "pad",
    }
);

vocabulary!(
    /// How a schedule repeats.
    ScheduleType {
        Daily => "daily",
        MultipleDaily => "multiple_daily",
        Weekly => "weekly",
        SpecificDates => "specific_dates",
        Prn => "prn",
        Tapering => "tapering",
        EveryOtherDay => "every_other_day",
    }
);

vocabulary!(
    /// The window a dose limit counts over.
    DoseCycle {
        Daily => "daily",
        Weekly => "weekly",
        Monthly => "monthly",
    }
);

vocabulary!(
    /// dm+d concept classes: generic (virtual) or branded (actual) product.
    ConceptClass {
        Vmp => "VMP",
        Amp => "AMP",
    }
);

vocabulary!(
    /// Why stock left the cupboard other than as a dose.
    StockRemovalReason {
        Expired => "expired",
        Damaged => "damaged",
        Lost => "lost",
        Disposed => "disposed",
        ReturnedToPharmacy => "returned_to_pharmacy",
        Other => "other",
    }
);

vocabulary!(
    /// Why a stock count was corrected.
    AdjustmentReason {
        StockCount => "stock_count",
        Correction => "correction",
        Found => "found",
        Other => "other",
    }
);

vocabulary!(
    /// What a take's stock deduction warns of (a take's warning codes
    /// include these).
    StockWarningCode {
        NotDeducted => "stock_not_deducted",
        RanOut => "stock_ran_out",
    }
);

vocabulary!(
    /// Where a reorder stands.
    ReorderStatus {
        Ordered => "ordered",
        Received => "received",
    }
);
