//! Analysis of the stencil IR: the checks that keep translation correct
//! ([`validate`]), the facts the planner and back ends need ([`facts`]), and
//! whether the program reads each array again after its pipeline
//! ([`liveness`]).

mod facts;
mod liveness;
mod validate;

pub use facts::{ArrayFacts, Facts, SweepFacts, facts};
pub use liveness::{After, Receivers, liveness, receivers};
pub use validate::validate;
