//! The performance model: machine profiles, a workload counted from the IR,
//! predictions for each out-of-core schedule, the choice of k, b, streams and
//! schedule, and the stencil-directives paper's evolution-vector algorithm.

pub mod profile;

pub use profile::Profile;
