//! Checks that depend on the target: what a separate kernel function (CUDA)
//! can not take from the surrounding C function (loop bounds are evaluated on
//! the host before the launch).

use crate::back::Target;
use crate::diag::{DiagResult, Diagnostic};
use crate::front::cst::mentions;
use crate::ir::Program;

/// Refuse what `target` can not express, with a diagnostic per problem.
pub fn validate_target(program: &Program, target: Target) -> DiagResult<()> {
    if target != Target::Cuda {
        return Ok(());
    }
    let p = &program.pipeline;
    let mut errors = Vec::new();
    for sweep in &p.body {
        // Loop bounds are evaluated on the host before the launch.
        for l in &sweep.loops {
            for other in sweep.loops.iter().filter(|o| o.var != l.var) {
                if mentions(&l.lo, &other.var) || mentions(&l.hi, &other.var) {
                    errors.push(Diagnostic::new(
                        l.header.clone(),
                        format!(
                            "the bounds of the `{}` loop depend on the index `{}` of another loop",
                            l.var, other.var
                        ),
                        "not a rectangular box",
                        "give every loop of a sweep bounds that do not depend on the other indices \
                         (the CUDA target launches one kernel over a box)",
                    ));
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}
