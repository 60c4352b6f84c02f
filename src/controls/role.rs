//! What a control does to its finding's claim, and which way it may turn it.

/// What a control does to its finding's claim, fixed from the mechanism
/// before any run: the verdict it should give, and so the only way it can
/// turn. A control that gives its verdict where the run as the lab makes it
/// gave the same shows nothing either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// It removes the mechanism the claim is about, so the claim is false
    /// there, on the side of the region it names: it turns a finding that
    /// matches to differs there.
    Negative(Side),
    /// It makes the mechanism hold, so the claim is true there: it turns a
    /// finding that differs to matches.
    Positive,
    /// It shows only that the instrument can read the other way, matches to
    /// differs or differs to matches (the same fact as another finding's
    /// turn, or an input whose outcome the encoding alone predicts): never
    /// counted as a turn.
    Instrument,
}
pub(super) use Role::{Instrument, Negative, Positive};

/// The side of a finding's region where a negative control predicts its
/// estimate: a "differs" on the other side is no turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Above the region's upper edge.
    Above,
    /// Below its lower edge.
    Below,
}
pub(super) use Side::{Above, Below};

impl Side {
    /// Whether `x` lies beyond `r` on this side (a region without that edge
    /// has no such side).
    pub(super) fn holds(self, x: Option<f64>, r: &record::stats::claim::Region) -> bool {
        match (self, x) {
            (Above, Some(x)) => r.hi.is_some_and(|hi| x > hi),
            (Below, Some(x)) => r.lo.is_some_and(|lo| x < lo),
            (_, None) => false,
        }
    }
}

impl Role {
    /// A negative control's side, as `controls.json`, the table and a
    /// control run's mark spell it ("above", "below").
    pub(super) fn side(self) -> Option<&'static str> {
        match self {
            Negative(Above) => Some("above"),
            Negative(Below) => Some("below"),
            Positive | Instrument => None,
        }
    }
}

impl Role {
    /// The verdict the control should give, and the check's result that
    /// says the same where every value of the control was alike.
    pub(super) fn expects(self) -> (report::verdict::Outcome, report::verdict::Outcome) {
        use report::verdict::Outcome::*;
        match self {
            Negative(_) => (Differs, CheckFailed),
            Positive | Instrument => (Matches, CheckPassed),
        }
    }
    pub(super) fn word(self) -> &'static str {
        match self {
            Negative(_) => "negative",
            Positive => "positive",
            Instrument => "instrument",
        }
    }
}

/// [`Role`] as `role` and, for a negative one, `side`: one shape for every
/// row of `controls.json`.
pub(super) fn flat<S: serde::Serializer>(r: &Role, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(2))?;
    m.serialize_entry("role", r.word())?;
    m.serialize_entry("side", &r.side())?;
    m.end()
}
