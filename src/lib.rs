//! tpace: a translator from sequential C stencil codes with directives to
//! out-of-core accelerator programs with temporal blocking.
//!
//! The pipeline, one module each:
//!
//! ```text
//! front (C + pragmas -> ir) -> analysis (checks, facts) -> plan (schedule) -> back (target C)
//! ```
//!
//! [`driver`] ties them together for the command line.

pub mod analysis;
pub mod back;
pub mod diag;
pub mod driver;
pub mod front;
pub mod ir;
pub mod model;
pub mod plan;
pub mod probe;
