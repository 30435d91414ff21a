//! The OpenCL target without a GPU (DESIGN.md §6): PoCL runs the generated
//! programs on the CPU through the ICD loader. Every example and fixture
//! runs over the parameter sweep of the other targets, bit for bit with the
//! sequential program; the work-group shape and the temporal block T are
//! driven over their edges; deliberately broken kernels, hooks and waits must
//! be caught; bad settings are refused in words; the program's own choice of
//! work group and T is the model's (`tpace plan --target opencl`); `tpace
//! tune --target opencl` sweeps work groups by T.
//!
//! Run time (two cores): the sweep of [`every_example_matches_on_pocl`] keeps
//! every setting at 13 steps and a third of them at 1 and at 7 steps (each
//! edge of `common::sweep` runs at least at 13 steps), heat1d on 3000 points
//! instead of 200000 (its narrow chunks mean hundreds of thousands of
//! launches), PoCL on one thread per program (two programs run at once).

mod common;

use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use tpace::back::Target;
use tpace::driver::dump::first_difference;
use tpace::driver::run::{Built, Execution, Flavour, Params, Toolchain, execute};
use tpace::driver::{self, Compiled};
use tpace::model::Profile;
use tpace::model::workload;

/// PoCL: one worker thread per program (the tests run two programs at once on two
/// cores; more threads only contend). Both names: PoCL renamed the variable.
fn one_thread() -> Vec<(String, String)> {
    vec![
        ("POCL_MAX_PTHREAD_COUNT".into(), "1".into()),
        ("POCL_CPU_MAX_CU_COUNT".into(), "1".into()),
    ]
}

/// Whether an OpenCL device answers here; in CI (`CI` set) its absence is a
/// failure, since `.ci/run` installs PoCL.
fn opencl_here() -> bool {
    let ok = Command::new("clinfo")
        .arg("-l")
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains("Device"));
    let ok = ok
        || Path::new("/etc/OpenCL/vendors")
            .read_dir()
            .is_ok_and(|mut d| d.next().is_some());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "no OpenCL platform in CI: .ci/run installs ocl-icd-opencl-dev and pocl-opencl-icd"
        );
        eprintln!(
            "no OpenCL platform here: the OpenCL tests did not run (install pocl-opencl-icd)"
        );
    }
    ok
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(name)
}

#[test]
fn every_example_matches_on_pocl() {
    if !opencl_here() {
        return;
    }
    let subset = Subset {
        keep: &|steps, i| steps == 13 || i % 3 == (steps % 3) as usize,
        defines: &|name| {
            if name == "heat1d.c" {
                vec!["N=3000".into()]
            } else {
                Vec::new()
            }
        },
    };
    check_all_with(Target::Opencl, Flavour::Opencl, &one_thread(), subset);
}

#[test]
fn pocl_catches_a_broken_reduction() {
    if !opencl_here() {
        return;
    }
    check_reduction_breaks(Target::Opencl, Flavour::Opencl, &one_thread());
}

/// A program and its sequential reference built with `defines`.
struct Pair {
    dir: tempfile::TempDir,
    reference: Built,
    translated: Built,
    compiled: Compiled,
    tc: Toolchain,
}

fn pair(path: &str, defines: &[&str]) -> Pair {
    let mut tc = Toolchain::detect();
    tc.defines = defines.iter().map(|d| d.to_string()).collect();
    let compiled = compile(&example(path));
    let dir = tempfile::tempdir().expect("scratch folder");
    let reference = build_ok(
        &tc,
        &reference_of(&compiled),
        dir.path(),
        "reference",
        Flavour::Reference,
    );
    let out = driver::translate(&compiled, Target::Opencl).expect("translates");
    let translated = build_ok(&tc, &out, dir.path(), "translated", Flavour::Opencl);
    assert!(
        warnings(&translated.warnings).is_empty(),
        "{path}: warnings:\n{}",
        translated.warnings
    );
    Pair {
        dir,
        reference,
        translated,
        compiled,
        tc,
    }
}

impl Pair {
    fn sequential(&self, steps: u64) -> Execution {
        run_ok(
            &self.reference.binary,
            steps,
            &Params::default(),
            &self.dir.path().join("ref.dump"),
        )
    }

    fn run(&self, binary: &Path, steps: u64, p: &Params, env: &[(&str, &str)]) -> Execution {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        run_with(binary, steps, p, &env, &self.dir.path().join("got.dump"))
    }

    /// Run with environment `env` expecting a refusal (exit code 2); its stderr.
    fn refused(&self, steps: u64, env: &[(&str, &str)]) -> String {
        let out = Command::new(&self.translated.binary)
            .arg(steps.to_string())
            .envs(env.iter().copied())
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{env:?}: expected a refusal (exit code 2):\n{stderr}"
        );
        assert!(!stderr.contains("panick"), "{stderr}");
        stderr
    }
}

/// The work group and T a run's note says it used.
fn chosen(e: &Execution) -> ([u64; 3], u64) {
    let line = e
        .stderr
        .lines()
        .find(|l| l.contains(" work group "))
        .unwrap_or_else(|| panic!("no work-group note:\n{}", e.stderr));
    let at = line.find(" work group ").unwrap() + " work group ".len();
    let rest = &line[at..];
    let (wg, rest) = rest
        .split_once(", T=")
        .expect("`, T=` after the work group");
    let sizes: Vec<u64> = wg.split('x').map(|s| s.parse().expect("a size")).collect();
    let t: u64 = rest
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .expect("T");
    ([sizes[0], sizes[1], sizes[2]], t)
}

/// The work group and T settings over their edges, each under a schedule, bit
/// for bit: work groups wider than the grid, of one work item, of sizes that are
/// no power of two; T = 1, T not dividing k, T larger than the step count and
/// than k, T on a 1-D grid (no tiled kernel: one step per kernel), with mmtb's
/// strips, mm's ghost zones, naive (one step) and in-core runs.
#[test]
fn work_groups_and_t_over_their_edges() {
    if !opencl_here() {
        return;
    }
    // (program, defines, steps, TPACE_WG, TPACE_T, params, expected fuse= in the report)
    type Case = (
        &'static str,
        &'static [&'static str],
        u64,
        &'static str,
        &'static str,
        Params,
        u64,
    );
    let cases: Vec<Case> = vec![
        // Jacobi-2D, 150 x 100 (x = 100): its tiled kernel.
        (
            "examples/jacobi2d.c",
            &["X=150", "Y=100"],
            9,
            "128x2",
            "2",
            params("incore", 9, 150, 1),
            2,
        ),
        (
            "examples/jacobi2d.c",
            &["X=150", "Y=100"],
            9,
            "256x8",
            "2",
            params("mm", 4, 61, 2),
            2,
        ),
        (
            "examples/jacobi2d.c",
            &["X=150", "Y=100"],
            7,
            "1",
            "3",
            params("mmtb", 7, 41, 2),
            3,
        ),
        (
            "examples/jacobi2d.c",
            &["X=150", "Y=100"],
            13,
            "3x5",
            "4",
            params("mmtb", 5, 23, 3),
            4,
        ),
        (
            "examples/jacobi2d.c",
            &["X=150", "Y=100"],
            13,
            "16x16",
            "4",
            params("mm", 6, 37, 3),
            4,
        ),
        (
            "examples/jacobi2d.c",
            &["X=150", "Y=100"],
            3,
            "64x4",
            "4",
            params("mmtb", 3, 70, 2),
            4,
        ),
        (
            "examples/jacobi2d.c",
            &["X=150", "Y=100"],
            7,
            "32x8",
            "1",
            params("mmtb", 4, 30, 2),
            1,
        ),
        (
            "examples/jacobi2d.c",
            &["X=150", "Y=100"],
            7,
            "32x8",
            "3",
            params("naive", 1, 50, 2),
            1,
        ),
        (
            "examples/jacobi2d.c",
            &["X=150", "Y=100"],
            7,
            "8x2",
            "2",
            params("mmtb", 4, 1, 2),
            1,
        ),
        // More than 65535 work groups along the cut axis: launches cut in two (NVIDIA's limit).
        (
            "examples/jacobi2d.c",
            &["X=70000", "Y=6"],
            3,
            "4x1",
            "2",
            params("incore", 3, 1, 1),
            2,
        ),
        (
            "examples/jacobi2d.c",
            &["X=70000", "Y=6"],
            3,
            "4x1",
            "1",
            params("mm", 3, 69000, 2),
            1,
        ),
        // Heat-3D, 30 x 20 x 40 (x = 40): its 3-D tiled kernel.
        (
            "examples/heat3d.c",
            &["NX=30", "NY=20", "NZ=40"],
            7,
            "64x1x1",
            "2",
            params("incore", 7, 30, 1),
            2,
        ),
        (
            "examples/heat3d.c",
            &["NX=30", "NY=20", "NZ=40"],
            7,
            "2x32x32",
            "3",
            params("mmtb", 7, 11, 2),
            3,
        ),
        (
            "examples/heat3d.c",
            &["NX=30", "NY=20", "NZ=40"],
            9,
            "5x3x2",
            "4",
            params("mm", 5, 7, 3),
            4,
        ),
        (
            "examples/heat3d.c",
            &["NX=30", "NY=20", "NZ=40"],
            5,
            "16x4x4",
            "4",
            params("mmtb", 5, 30, 1),
            4,
        ),
        // Heat-1D, 3000 points: one step per kernel whatever T says.
        (
            "examples/heat1d.c",
            &["N=3000"],
            7,
            "4096",
            "2",
            params("mmtb", 4, 700, 2),
            1,
        ),
        (
            "examples/heat1d.c",
            &["N=3000"],
            7,
            "7",
            "1",
            params("mm", 3, 999, 3),
            1,
        ),
        // Reductions: a work group's tree over sizes that are no power of two.
        (
            "tests/fixtures/reductions/reduce2d.c",
            &[],
            7,
            "3x7",
            "1",
            params("mm", 3, 7, 2),
            1,
        ),
        (
            "tests/fixtures/reductions/reduce2d.c",
            &[],
            7,
            "128x16",
            "2",
            params("incore", 7, 1, 1),
            1,
        ),
        (
            "examples/himeno.c",
            &["MIMAX=17", "MJMAX=17", "MKMAX=33"],
            5,
            "5x3x2",
            "1",
            params("mmtb", 3, 5, 2),
            1,
        ),
    ];
    let mut built: Vec<(String, Pair)> = Vec::new();
    for (path, defines, steps, wg, t, p, fuse) in cases {
        let key = format!("{path} {defines:?}");
        if !built.iter().any(|(k, _)| *k == key) {
            built.push((key.clone(), pair(path, defines)));
        }
        let pr = &built.iter().find(|(k, _)| *k == key).unwrap().1;
        let seq = pr.sequential(steps);
        let got = pr.run(
            &pr.translated.binary,
            steps,
            &p,
            &[
                ("TPACE_WG", wg),
                ("TPACE_T", t),
                ("POCL_MAX_PTHREAD_COUNT", "1"),
            ],
        );
        let what = format!("{path} {defines:?}, {steps} steps, TPACE_WG={wg} TPACE_T={t} {p:?}");
        assert_eq!(
            first_difference(&seq.dump, &got.dump),
            None,
            "{what}: differs from the sequential program"
        );
        assert_eq!(
            got.report.get("fuse").map(String::as_str),
            Some(fuse.to_string().as_str()),
            "{what}: steps per kernel\n{}",
            got.stderr
        );
        let (g, _) = chosen(&got);
        let want: Vec<u64> = wg.split('x').map(|s| s.parse().unwrap()).collect();
        assert_eq!(&g[..want.len()], &want[..], "{what}: work group");
    }
}

/// Breaks of `out`: every occurrence of `from` replaced (at least one).
fn break_all(out: &tpace::back::Output, from: &str, to: &str, what: &str) -> tpace::back::Output {
    assert!(
        out.main.contains(from),
        "the OpenCL translation of {what} no longer contains `{from}`: update this test"
    );
    tpace::back::Output {
        main: out.main.replace(from, to),
        host: None,
    }
}

/// Each break of `example` (built with `defines`) must differ from the
/// sequential program under some setting of `settings` (PoCL's own threads,
/// so that commands of different queues do run at once), and the intact
/// program under none.
fn check_breaks(
    example_path: &str,
    defines: &[&str],
    steps: u64,
    settings: &[(Params, &[(&str, &str)])],
    breaks: &[(&str, &str, &str)],
) {
    let pr = pair(example_path, defines);
    let seq = pr.sequential(steps);
    // PoCL runs the queues' commands on its own threads in whatever order their waits
    // allow: a missing wait shows only in some runs.
    let tries = 12;
    for (p, env) in settings {
        for _ in 0..tries {
            let ok = pr.run(&pr.translated.binary, steps, p, env);
            assert_eq!(
                first_difference(&seq.dump, &ok.dump),
                None,
                "{example_path}: the intact program differs under {p:?} {env:?}"
            );
        }
    }
    let out = driver::translate(&pr.compiled, Target::Opencl).expect("translates");
    for (name, from, to) in breaks {
        let broken = build_ok(
            &pr.tc,
            &break_all(&out, from, to, example_path),
            pr.dir.path(),
            name,
            Flavour::Opencl,
        );
        let caught = settings.iter().enumerate().find_map(|(which, (p, env))| {
            (0..tries).find_map(|attempt| {
                let binary = &broken.binary;
                let got = execute(
                    binary,
                    &[steps.to_string()],
                    &p.env()
                        .into_iter()
                        .chain(env.iter().map(|(k, v)| (k.to_string(), v.to_string())))
                        .collect::<Vec<_>>(),
                    &pr.dir.path().join("b.dump"),
                );
                let said = match got {
                    // A broken program may also fail outright (an address outside a buffer).
                    Err(f) => Some(format!("it failed: {f}")),
                    Ok(got) => first_difference(&seq.dump, &got.dump),
                };
                said.map(|d| format!("setting {which}, run {}: {d}", attempt + 1))
            })
        });
        let d = caught.unwrap_or_else(|| panic!("{name}: the break went unnoticed"));
        eprintln!("{name}: caught: {}", d.lines().next().unwrap_or(""));
    }
}

/// The tiled kernels: a missing barrier (after the tile is loaded, between
/// steps), the predecessor's strip not read or not written (mmtb), a tile one
/// step's halo short, and a swapped order of the tile's levels are each caught.
#[test]
fn pocl_catches_broken_tiled_kernels() {
    if !opencl_here() {
        return;
    }
    let mmtb: &[(&str, &str)] = &[("TPACE_WG", "32x4"), ("TPACE_T", "3")];
    let incore: &[(&str, &str)] = &[("TPACE_WG", "16x8"), ("TPACE_T", "2")];
    check_breaks(
        "examples/jacobi2d.c",
        &["X=150", "Y=100"],
        9,
        &[
            (params("mmtb", 9, 40, 2), mmtb),
            (params("incore", 9, 1, 1), incore),
        ],
        &[
            (
                "barrier_between_steps_missing",
                "barrier(CLK_LOCAL_MEM_FENCE); /* step l done before step l + 1 reads it */",
                "/* no barrier */",
            ),
            (
                "barrier_after_the_load_missing",
                "barrier(CLK_LOCAL_MEM_FENCE); /* the tile loaded before step 1 reads it */",
                "/* no barrier */",
            ),
            (
                "strip_not_read",
                "const int tp_q_strip = tp_lv < tp_T && tp_f.has_sin",
                "const int tp_q_strip = 0 && tp_f.has_sin",
            ),
            (
                "strip_not_written",
                "if (tp_f.has_sout && tp_q_keep",
                "if (0 && tp_q_keep",
            ),
            (
                "tile_one_halo_short",
                "const long tp_g0 = tp_w0 + (long)tp_T * tp_span0;",
                "const long tp_g0 = tp_w0 + (long)(tp_T - 1) * tp_span0;",
            ),
        ],
    );
}

/// The device functions: a wait between queues that waits for nothing, the
/// mmtb hand-over before the previous chunk's kernels, the next block before the
/// downloads, a copy that ignores its offset, and a launch whose buffer offset
/// is an element off are each caught.
#[test]
fn pocl_catches_missing_waits_and_bad_addresses() {
    if !opencl_here() {
        return;
    }
    let threads: &[(&str, &str)] = &[("TPACE_WG", "32x4"), ("TPACE_T", "1")];
    check_breaks(
        "examples/jacobi2d.c",
        &["X=400", "Y=200"],
        9,
        &[
            (params("mmtb", 3, 25, 3), threads),
            (params("mm", 3, 25, 3), threads),
        ],
        &[
            (
                "wait_for_nothing",
                "clEnqueueBarrierWithWaitList(c->queue[to_q], 1, &e, NULL)",
                "clEnqueueBarrierWithWaitList(c->queue[to_q], 0, NULL, NULL)",
            ),
            (
                "mmtb_handover_before_previous_kernels",
                "    tpace_dev_wait(r, prev->slot, ch->slot);\n",
                "",
            ),
            (
                "next_block_before_downloads",
                "tpace_dev_sync(r);\n        if (r->next_t",
                "if (r->next_t",
            ),
            (
                "upload_ignores_its_offset",
                "clEnqueueWriteBuffer(tpace_cl_q(r)->queue[q], mem, CL_FALSE, off, bytes",
                "clEnqueueWriteBuffer(tpace_cl_q(r)->queue[q], mem, CL_FALSE, 0, bytes",
            ),
            (
                "buffer_offset_one_element_off",
                "const cl_long at = dev != NULL ? (cl_long)(off / elem) : 0;",
                "const cl_long at = dev != NULL ? (cl_long)(off / elem) + 1 : 0;",
            ),
        ],
    );
}

/// A work group's reduction tree without its barrier is caught.
#[test]
fn pocl_catches_a_reduction_tree_without_its_barrier() {
    if !opencl_here() {
        return;
    }
    let pr = pair("tests/fixtures/reductions/reduce2d.c", &[]);
    let seq = pr.sequential(7);
    let out = driver::translate(&pr.compiled, Target::Opencl).expect("translates");
    // In every tree (float and double): the barrier after each level of the tree.
    let from = "scratch[id + s], op);\\n\"\n    \"        barrier(CLK_LOCAL_MEM_FENCE);";
    let broken = build_ok(
        &pr.tc,
        &break_all(
            &out,
            from,
            "scratch[id + s], op);\\n\"\n    \"        ;",
            "reduce2d.c",
        ),
        pr.dir.path(),
        "broken",
        Flavour::Opencl,
    );
    let got = pr.run(
        &broken.binary,
        7,
        &params("incore", 7, 1, 1),
        &[("TPACE_WG", "16x16")],
    );
    let d =
        first_difference(&seq.dump, &got.dump).expect("the tree without a barrier was not caught");
    assert!(d.starts_with("reduction `"), "{d}");
}

/// Bad settings stop the program before the loop with exit code 2 and a
/// message that names the setting and what is allowed.
#[test]
fn bad_settings_are_refused_in_words() {
    if !opencl_here() {
        return;
    }
    let jac = pair("examples/jacobi2d.c", &["X=60", "Y=40"]);
    for (env, says) in [
        (
            vec![("TPACE_WG", "abc")],
            "TPACE_WG=abc is not a work-group shape",
        ),
        (
            vec![("TPACE_WG", "0")],
            "TPACE_WG=0 is not a work-group shape",
        ),
        (
            vec![("TPACE_WG", "64x")],
            "TPACE_WG=64x is not a work-group shape",
        ),
        (vec![("TPACE_WG", "2x2x2x2")], "give 1 to 3 sizes"),
        (vec![("TPACE_WG", "65537")], "from 1 to 65536"),
        (vec![("TPACE_WG", "8192x1")], "set a smaller TPACE_WG"),
        (
            vec![("TPACE_T", "0")],
            "TPACE_T=0 is not a whole number from 1 to 4",
        ),
        (
            vec![("TPACE_T", "5")],
            "TPACE_T=5 is not a whole number from 1 to 4",
        ),
        (vec![("TPACE_T", "two")], "TPACE_T=two"),
        (
            vec![("TPACE_CL_PLATFORM", "no such platform")],
            "names no OpenCL platform",
        ),
        (vec![("TPACE_CL_PLATFORM", "9")], "names no OpenCL platform"),
        (
            vec![("TPACE_CL_DEVICE", "no such device")],
            "names no OpenCL device",
        ),
        (vec![("TPACE_CL_DEVICE", "99")], "names no OpenCL device"),
    ] {
        let stderr = jac.refused(3, &env);
        assert!(stderr.contains(says), "{env:?}: `{says}` not in:\n{stderr}");
    }
    // Choosing the device by index or by a part of its name, any case.
    let seq = jac.sequential(3);
    for env in [
        [("TPACE_CL_PLATFORM", "0"), ("TPACE_CL_DEVICE", "0")],
        [("TPACE_CL_PLATFORM", "PORTABLE"), ("TPACE_CL_DEVICE", "")],
    ] {
        let got = jac.run(&jac.translated.binary, 3, &params("incore", 3, 1, 1), &env);
        assert_eq!(first_difference(&seq.dump, &got.dump), None, "{env:?}");
        assert!(got.stderr.contains("OpenCL device "), "{}", got.stderr);
    }
    // Sizes past a grid's rank are taken as 1, with a note (one setting may serve
    // pipelines of several ranks).
    let heat1d = pair("examples/heat1d.c", &["N=300"]);
    let seq = heat1d.sequential(3);
    let got = heat1d.run(
        &heat1d.translated.binary,
        3,
        &params("mm", 2, 70, 2),
        &[("TPACE_WG", "64x4x2")],
    );
    assert_eq!(first_difference(&seq.dump, &got.dump), None);
    assert!(
        got.stderr
            .contains("the grid has 1 dimension: the sizes past it are taken as 1"),
        "{}",
        got.stderr
    );
    assert_eq!(chosen(&got).0, [64, 1, 1]);
    // T's tiles must fit local memory (PoCL's: 2 MiB).
    let heat3d = pair("examples/heat3d.c", &["NX=20", "NY=12", "NZ=16"]);
    let stderr = heat3d.refused(3, &[("TPACE_WG", "4096"), ("TPACE_T", "4")]);
    assert!(
        stderr.contains("needs")
            && stderr.contains("local memory")
            && stderr.contains("lower TPACE_T to"),
        "{stderr}"
    );
}

fn tpace(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_tpace"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .output()
        .expect("tpace runs")
}

/// A profile without the evolution-vector model's figures is refused for
/// OpenCL with what it lacks, and nothing is written.
#[test]
fn a_profile_without_the_figures_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("prog.c");
    // A GPU's link and memory, none of the evolution-vector model's figures.
    let bare = dir.path().join("bare.toml");
    let figure = |name: &str, v: f64| {
        format!("[{name}]\nvalue = {v:?}\nkind = \"assumed\"\nsource = \"test\"\n")
    };
    std::fs::write(
        &bare,
        format!(
            "name = \"bare\"\ndescription = \"d\"\narch = \"gpu\"\n{}{}{}",
            figure("memory_gbs", 4800.0),
            figure("h2d_gbs", 50.0),
            figure("d2h_gbs", 50.0)
        ),
    )
    .unwrap();
    let bare = bare.to_str().unwrap();
    let out = tpace(&[
        "translate",
        "examples/jacobi2d.c",
        "--target",
        "opencl",
        "--machine",
        bare,
        "-o",
        out_path.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("bytes_per_flop") && stderr.contains("help:"),
        "{stderr}"
    );
    assert!(!out_path.exists());
    let out = tpace(&[
        "plan",
        "examples/jacobi2d.c",
        "--target",
        "opencl",
        "--machine",
        bare,
        "--steps",
        "10",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("min_work_groups"));
    // --wg and --t are OpenCL's.
    let out = tpace(&["tune", "examples/jacobi2d.c", "--wg", "32x4"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--target opencl"));
}

/// The build line the translation prints, `cc FILE -o PROG -lOpenCL -lm`, builds it.
#[test]
fn the_printed_build_line_builds_the_program() {
    if !opencl_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("heat3d_cl.c");
    let out = tpace(&[
        "translate",
        "examples/heat3d.c",
        "--target",
        "opencl",
        "-o",
        file.to_str().unwrap(),
    ]);
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    let line = said.split("build: ").nth(1).expect("a build line").trim();
    assert!(
        line.starts_with("cc -O2 ") && line.ends_with("-lOpenCL -lm"),
        "{line}"
    );
    let status = Command::new("sh").arg("-c").arg(line).status().unwrap();
    assert!(status.success(), "{line}");
    let run = Command::new(dir.path().join("heat3d_cl"))
        .arg("2")
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

/// The program chooses its work group and T at run time for its actual extents
/// with the C port of the evolution-vector model: the same choice `tpace plan
/// --target opencl` prints, over several shapes of each dimension count.
#[test]
fn the_program_chooses_what_the_model_chooses() {
    if !opencl_here() {
        return;
    }
    let h100 = Profile::bundled("h100").unwrap();
    let shapes: [(&str, &[&[&str]]); 4] = [
        (
            "examples/heat3d.c",
            &[
                &["NX=96", "NY=64", "NZ=80"],
                &["NX=256", "NY=256", "NZ=256"],
                &["NX=7", "NY=300", "NZ=33"],
            ],
        ),
        (
            "examples/jacobi2d.c",
            &[
                &["X=2048", "Y=2048"],
                &["X=1000", "Y=600"],
                &["X=5", "Y=9000"],
            ],
        ),
        ("examples/heat1d.c", &[&["N=262144"], &["N=3000"]]),
        (
            "examples/himeno.c",
            &[
                &["MIMAX=128", "MJMAX=128", "MKMAX=256"],
                &["MIMAX=17", "MJMAX=17", "MKMAX=33"],
            ],
        ),
    ];
    for (path, sets) in shapes {
        for set in sets {
            let pr = pair(path, set);
            let got = pr.run(&pr.translated.binary, 0, &Params::default(), &[]);
            let setv: Vec<String> = set.iter().map(|s| s.to_string()).collect();
            let macros =
                tpace::model::expr::Macros::new(&setv, &pr.compiled.program.source).unwrap();
            let extents = workload::extents(pr.compiled.unit(0), &macros).unwrap();
            let c = tpace::model::opencl::choose(pr.compiled.unit(0), &h100, &extents).unwrap();
            assert_eq!(
                chosen(&got),
                (c.params().group, c.params().t),
                "{path} {set:?}: the program's choice and the model's differ\n{}",
                got.stderr
            );
        }
    }
}

/// The work group and T come from the profile the run plans with: TPACE_MACHINE's
/// file (here the C2070's, whose choice for this grid differs from the H100's the
/// program was translated for) gives that profile's choice, and the report says so; a
/// file without the evolution-vector figures (the K40c's) leaves the translated one's.
#[test]
fn the_work_group_follows_the_profile_the_run_plans_with() {
    if !opencl_here() {
        return;
    }
    let set = ["NX=256", "NY=256", "NZ=256"];
    let pr = pair("examples/heat3d.c", &set);
    let setv: Vec<String> = set.iter().map(|s| s.to_string()).collect();
    let macros = tpace::model::expr::Macros::new(&setv, &pr.compiled.program.source).unwrap();
    let extents = workload::extents(pr.compiled.unit(0), &macros).unwrap();
    let model = |name: &str| {
        let c = tpace::model::opencl::choose(
            pr.compiled.unit(0),
            &Profile::bundled(name).unwrap(),
            &extents,
        )
        .unwrap();
        (c.params().group, c.params().t)
    };
    assert_ne!(model("c2070"), model("h100"), "the test needs two choices");
    let with_profile = |name: &str| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("profiles/{name}.toml"));
        let env = [("TPACE_MACHINE", path.to_str().unwrap())];
        pr.run(&pr.translated.binary, 0, &Params::default(), &env)
    };
    // (the file, the profile whose choice it gets, what the work-group note says)
    for (file, takes, note) in [
        (
            "c2070",
            "c2070",
            "the evolution-vector model for c2070 (named by TPACE_MACHINE; the program was translated for h100)",
        ),
        (
            "k40c",
            "h100",
            "the evolution-vector model for h100 (profile k40c, named by TPACE_MACHINE, has no OpenCL figures)",
        ),
    ] {
        let got = with_profile(file);
        assert_eq!(chosen(&got), model(takes), "{file}: {}", got.stderr);
        assert!(got.stderr.contains(note), "{file}: {}", got.stderr);
    }
}

/// `tpace plan --target opencl` on the paper's machines and sizes: Table 6's
/// choices where tpace's kernels allow them, with the rounds that led there.
#[test]
fn plan_prints_work_groups_t_and_the_rounds() {
    let out = tpace(&[
        "plan",
        "examples/heat3d.c",
        "--target",
        "opencl",
        "--machine",
        "c2070",
        "--set",
        "NX=256",
        "--set",
        "NY=256",
        "--set",
        "NZ=256",
        "--steps",
        "1000",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "chosen: work group 32x8x4 (x, y, z), T = 1  (x, y, z, t) = (32, 8, 4, 1)",
        "local memory: none",
        "predicted time:",
        "T stopped at 1: B/F",
        "8. (32, 8, 8, 1)  refused: 2048 work items, more than the 1024 a work group may hold",
        "run it with: TPACE_WG=32x8x4 TPACE_T=1",
        "out-of-core plan for kernels of T steps:",
        "cut along dim(3) into 256 planes",
    ] {
        assert!(text.contains(want), "`{want}` not in:\n{text}");
    }
    // A profile without bus figures still gets its work groups, and says why
    // there is no out-of-core plan.
    let out = tpace(&[
        "plan",
        "examples/heat3d.c",
        "--target",
        "opencl",
        "--machine",
        "xeon-phi-5110p",
        "--set",
        "NX=256",
        "--set",
        "NY=256",
        "--set",
        "NZ=256",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "chosen: work group 256x1x1",
        "out-of-core plan: none (machine profile `xeon-phi-5110p` lacks h2d_gbs, d2h_gbs",
    ] {
        assert!(text.contains(want), "`{want}` not in:\n{text}");
    }
    // Heat-2D on the C2070: Table 6's (32, 8, 1, 2), in local memory.
    let out = tpace(&[
        "plan",
        "examples/jacobi2d.c",
        "--target",
        "opencl",
        "--machine",
        "c2070",
        "--set",
        "X=2048",
        "--set",
        "Y=2048",
        "--steps",
        "1000",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("(x, y, z, t) = (32, 8, 1, 2)"), "{text}");
    assert!(
        text.contains("local memory: 3.09 kB a work group"),
        "{text}"
    );
    // On the lent H100 the out-of-core plan follows, for kernels of that T.
    let out = tpace(&[
        "plan",
        "examples/jacobi2d.c",
        "--target",
        "opencl",
        "--set",
        "X=2048",
        "--set",
        "Y=2048",
        "--steps",
        "1000",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("out-of-core plan for kernels of T steps:"),
        "{text}"
    );
    assert!(text.contains("best plan: "), "{text}");
}

/// `tpace tune --target opencl`: work groups by T, the CSV, the heat map, and the
/// model's pick against the best with the time each took to choose.
#[test]
fn tune_sweeps_work_groups_by_t() {
    if !opencl_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dir.path().join("tune");
    let out = tpace(&[
        "tune",
        "examples/jacobi2d.c",
        "--target",
        "opencl",
        "--set",
        "X=120",
        "--set",
        "Y=64",
        "--wg",
        "32x4,16x8,8192x1",
        "--t",
        "1,2",
        "--out",
        out_dir.to_str().unwrap(),
        "--",
        "6",
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = std::fs::read_to_string(out_dir.join("results.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().collect();
    assert_eq!(
        rows[0],
        "wg,t,schedule,k,b,streams,chunks,fuse,seconds,kernel_seconds,glups,status"
    );
    assert_eq!(rows.len(), 1 + 6, "{csv}");
    assert_eq!(
        rows.iter().filter(|r| r.ends_with(",ok")).count(),
        4,
        "{csv}"
    );
    assert!(
        rows.iter()
            .any(|r| r.starts_with("8192x1x1,") && r.contains("refused:")),
        "{csv}"
    );
    assert!(
        rows.iter()
            .any(|r| r.starts_with("16x8x1,2,incore,6,120,1,1,2,")),
        "{csv}"
    );
    let svg = std::fs::read_to_string(out_dir.join("heatmap.svg")).unwrap();
    assert!(
        svg.contains("T = 2") && svg.contains("16x8x1") && svg.contains("refused"),
        "{svg}"
    );
    for want in [
        "best measured: ",
        "model's pick (h100, evolution-vector model, chosen in ",
        "ratio model pick / best measured: ",
        "time to choose: the model ",
    ] {
        assert!(stdout.contains(want), "`{want}` not in:\n{stdout}");
    }
}

/// A program as users write it: the stencil in a function of its own with a
/// local of a typedef'd type, object-like and function-like macros in the sweep's
/// body (one given by `-D` at build time, so that the kernels must get the
/// host's value), an enum constant, a local of the body, and a second
/// pipeline of another rank in `main`; bit for bit under a work group that
/// serves both ranks.
const USERS_PROGRAM: &str = r#"#include <stdio.h>
#include <stdlib.h>

#ifndef N
#define N 40
#endif
#define M (N + 8)
#define HALF 0.5f
#define AVG(p, q) (((p) + (q)) * HALF)
#define R 0.125
typedef float real;
enum { SCALE = 3 };

static void smooth(float (*a)[M], float (*w)[M], int steps)
{
    int t, i, j;
#pragma tpace pipeline targetinout(w, a) size([0:N][0:M]) halo([1:1][1:1])
    for (t = 0; t < steps; t++) {
#pragma tpace loop dim(2)
        for (i = 1; i < N - 1; i++)
#pragma tpace loop dim(1)
            for (j = 1; j < M - 1; j++) {
                real s = AVG(a[i - 1][j], a[i + 1][j]);
                w[i][j] = AVG(s, AVG(a[i][j - 1], a[i][j + 1])) * (real)SCALE / (real)SCALE;
            }
#pragma tpace loop dim(2)
        for (i = 1; i < N - 1; i++)
#pragma tpace loop dim(1)
            for (j = 1; j < M - 1; j++)
                a[i][j] = w[i][j];
    }
}

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 5;
    float (*a)[M] = (float (*)[M])malloc(sizeof(float[N][M]));
    float (*w)[M] = (float (*)[M])malloc(sizeof(float[N][M]));
    double *v = (double *)malloc(sizeof(double) * 3 * N);
    double *u = (double *)malloc(sizeof(double) * 3 * N);
    int i, j, t;
    if (a == NULL || w == NULL || v == NULL || u == NULL)
        return 1;
    for (i = 0; i < N; i++)
        for (j = 0; j < M; j++)
            w[i][j] = a[i][j] = (float)((i * 13 + j * 7) % 17) / 3.0f;
    for (i = 0; i < 3 * N; i++)
        u[i] = v[i] = (double)(i % 11) - 4.5;
    smooth(a, w, steps);
#pragma tpace pipeline targetinout(u, v) size([0:3 * N]) halo([1:1])
    for (t = 0; t < steps; t++) {
#pragma tpace loop dim(1)
        for (i = 1; i < 3 * N - 1; i++)
            u[i] = v[i] + R * (v[i - 1] - 2.0 * v[i] + v[i + 1]);
#pragma tpace loop dim(1)
        for (i = 1; i < 3 * N - 1; i++)
            v[i] = u[i];
    }
    double s = 0.0;
    for (i = 0; i < N; i++)
        for (j = 0; j < M; j++)
            s += a[i][j] * (double)(j % 3 + 1);
    for (i = 0; i < 3 * N; i++)
        s += v[i];
    printf("checksum %.12e\n", s);
    free(a);
    free(w);
    free(v);
    free(u);
    return 0;
}
"#;

#[test]
fn users_macros_types_and_two_pipelines() {
    if !opencl_here() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("users.c");
    std::fs::write(&path, USERS_PROGRAM).unwrap();
    let compiled = compile(&path);
    assert_eq!(compiled.program.pipelines.len(), 2);
    let out = driver::translate(&compiled, Target::Opencl).expect("translates");
    // The user's pieces reach the kernels through the host's preprocessor.
    assert!(
        out.main.contains("TPACE_CL_XSTR(typedef float real;)"),
        "no typedef"
    );
    assert!(out.main.contains("TPACE_CL_XSTR(real s = AVG("), "no body");
    let mut tc = Toolchain::detect();
    // N given at build time: the kernels must see 23, not the file's 40.
    tc.defines = vec!["N=23".into()];
    let reference = build_ok(
        &tc,
        &reference_of(&compiled),
        dir.path(),
        "reference",
        Flavour::Reference,
    );
    let translated = build_ok(&tc, &out, dir.path(), "translated", Flavour::Opencl);
    assert!(
        warnings(&translated.warnings).is_empty(),
        "{}",
        translated.warnings
    );
    for steps in [0, 1, 6] {
        let seq = run_ok(
            &reference.binary,
            steps,
            &Params::default(),
            &dir.path().join("r.dump"),
        );
        for (p, wg, t) in [
            (params("mmtb", 4, 5, 2), "16x4", "3"),
            (params("mm", 2, 7, 3), "8x8", "2"),
            (params("incore", 6, 1, 1), "3", "1"),
            (Params::default(), "", ""),
        ] {
            let env = vec![
                ("TPACE_WG".to_string(), wg.to_string()),
                ("TPACE_T".into(), t.into()),
            ];
            let got = run_with(
                &translated.binary,
                steps,
                &p,
                &env,
                &dir.path().join("t.dump"),
            );
            assert_eq!(
                first_difference(&seq.dump, &got.dump),
                None,
                "{steps} steps, {p:?} TPACE_WG={wg} TPACE_T={t}"
            );
            assert_eq!(seq.stdout, got.stdout);
            if steps > 0 {
                assert_eq!(
                    got.stderr.matches(": OpenCL device ").count(),
                    2,
                    "a note per pipeline:\n{}",
                    got.stderr
                );
            }
        }
    }
}

/// Kernels that do not compile for the device stop the program with the build
/// log and the failed call in words.
#[test]
fn a_failed_kernel_build_prints_the_build_log() {
    if !opencl_here() {
        return;
    }
    let pr = pair("examples/jacobi2d.c", &["X=40", "Y=30"]);
    let out = driver::translate(&pr.compiled, Target::Opencl).expect("translates");
    let broken = build_ok(
        &pr.tc,
        &replace_once(
            &out,
            "#define TPACE_MAX(a, b) ((a) > (b) ? (a) : (b))\\n",
            "#define TPACE_MAX(a, b) ((a) > (b) ? (a) : (b))\\ntpace_no_such_type x;\\n",
            "jacobi2d.c",
        ),
        pr.dir.path(),
        "broken",
        Flavour::Opencl,
    );
    let run = Command::new(&broken.binary).arg("3").output().unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("the OpenCL kernels did not build for"),
        "{stderr}"
    );
    assert!(
        stderr.contains("tpace_no_such_type"),
        "the build log:\n{stderr}"
    );
    assert!(
        stderr.contains("clBuildProgram") && stderr.contains("CL_BUILD_PROGRAM_FAILURE"),
        "{stderr}"
    );
}

/// `tune --target opencl` refuses bad lists in words, before building anything.
#[test]
fn tune_refuses_bad_work_groups_and_t() {
    for (args, says) in [
        (vec!["--wg", "abc"], "--wg `abc` is not a work-group shape"),
        (
            vec!["--wg", "32x0"],
            "--wg `32x0` is not a work-group shape",
        ),
        (vec!["--t", "9"], "--t 9: T is from 1 to 4"),
        (vec!["--t", "0"], "--t 0: T is from 1 to 4"),
    ] {
        let mut all = vec!["tune", "examples/jacobi2d.c", "--target", "opencl"];
        all.extend(args.iter());
        let out = tpace(&all);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: `{says}` not in {stderr}");
        assert!(!stderr.contains("panick"), "{stderr}");
    }
}
