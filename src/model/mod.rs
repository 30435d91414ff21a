//! The performance model: machine profiles, a workload counted from the IR,
//! predictions for each out-of-core schedule, the choice of k, b, streams and
//! schedule, and the stencil-directives paper's evolution-vector algorithm.

pub mod expr;
pub mod profile;
pub mod workload;

pub use profile::Profile;
pub use workload::{ArrayLoad, Movement, Workload};
