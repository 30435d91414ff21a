//! Analysis of the stencil IR: the checks that keep translation correct
//! ([`validate`]) and the facts the planner and back ends need ([`facts`]).

mod facts;
mod validate;

pub use facts::{ArrayFacts, Facts, SweepFacts, facts};
pub use validate::validate;
