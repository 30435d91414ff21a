//! The performance model: machine profiles, a workload counted from the IR,
//! predictions for each out-of-core schedule, the choice of k, b, streams and
//! schedule, and the stencil-directives paper's evolution-vector algorithm.
//!
//! ```text
//! profile (profiles/*.toml) ─┐
//! Unit + extents ─ workload ─ predict (one plan) ─ search (best plan) ─ devices (several) ─ report (`tpace plan`)
//! ```

#![warn(missing_docs)]

pub mod chunks;
pub mod cmodel;
pub mod devices;
pub mod evolution;
pub mod expr;
pub mod opencl;
pub mod predict;
pub mod profile;
pub mod report;
pub mod search;
pub mod workload;

pub use predict::{Config, Machine, Prediction, Schedule, predict};
pub use profile::Profile;
pub use workload::{ArrayLoad, Movement, Workload};
