//! tpace: a translator from sequential C stencil codes with directives to
//! out-of-core accelerator programs with temporal blocking.
//!
//! The passes, one module each, each importing only those before it:
//!
//! ```text
//! front (C + pragmas -> ir) -> analysis (checks, facts) -> plan (schedule)
//!     -> model (performance model) -> lower (one C host program) -> back (a writer per target)
//! ```
//!
//! [`runtime`] is the C the translator ships; [`driver`] ties the passes
//! together for the command line.

pub mod analysis;
pub mod back;
pub mod diag;
pub mod driver;
pub mod front;
pub mod ir;
pub mod lower;
pub mod model;
pub mod plan;
pub mod probe;
pub mod runtime;
pub mod text;
