//! The OpenCL target on the CPU (DESIGN.md §6): PoCL through the ICD loader.
//! Every example and fixture runs over the parameter sweep of the other
//! targets, bit for bit with the sequential program.

mod common;

use common::*;
use tpace::back::Target;
use tpace::driver::run::Flavour;

#[test]
fn every_example_matches_on_pocl() {
    check_all(Target::Opencl, Flavour::Opencl, &[]);
}
