//! The CUDA target on a machine without a GPU (DESIGN.md §6): every example's
//! `.cu` compiles warning-free with nvcc, and runs on the runtime's CPU
//! emulation over the same parameter sweep as the OpenACC target, bit for bit.
//! The emulation keeps "device" memory separate and runs the streams' work in a
//! shuffled order that only the program's events and synchronisations
//! constrain, so a missing or short transfer or a missing wait gives a wrong answer.

mod common;

use common::*;
use std::process::Command;
use tpace::back::Target;
use tpace::driver;
use tpace::driver::dump::first_difference;
use tpace::driver::run::{Flavour, Params, Toolchain};

fn seed(s: u64) -> Vec<(String, String)> {
    vec![("TPACE_EMU_SEED".into(), s.to_string())]
}

#[test]
fn every_example_matches_on_the_cpu_emulation() {
    check_all(Target::Cuda, Flavour::CudaEmulation, &seed(7));
}

/// The runtime's and the emulation's templates name their parameters `tpace_*`: a program
/// built with macros of the short names C programs define (`N`, `T`, `OP`, `E`, `F`)
/// builds and matches on the emulation, fused 3-D tiles and block reductions included
/// (PolyBench's `-DN=40` once turned `template <int N, ...>` into `template <int 40, ...>`).
#[test]
fn short_user_macros_do_not_reach_the_runtimes_templates() {
    let tc = Toolchain::detect();
    let few = Subset {
        keep: &|_, i| i < 2,
        defines: &|_| {
            ["N=4", "T=3", "OP=5", "E=6", "F=7"]
                .map(String::from)
                .to_vec()
        },
    };
    for p in ["examples/heat3d.c", "tests/fixtures/reductions/reduce2d.c"] {
        let path = program_path(p);
        let runs = check_program_steps(
            &tc,
            &path,
            Target::Cuda,
            Flavour::CudaEmulation,
            &seed(7),
            few,
            &[5],
        );
        assert!(runs > 0, "{p}: no run");
    }
}

#[test]
fn the_emulation_catches_a_broken_reduction() {
    check_reduction_breaks(Target::Cuda, Flavour::CudaEmulation, &seed(7));
}

/// nvcc from `$NVCC` or the PATH; in CI (`CI` set) its absence is a failure,
/// since `.ci/run` installs it.
fn nvcc() -> Option<String> {
    let tc = Toolchain::detect();
    if tc.nvcc.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "nvcc not found in CI: .ci/run installs it (pip nvidia-cuda-nvcc) and sets NVCC"
        );
        eprintln!("nvcc not found: the nvcc compile check did not run here (set NVCC)");
    }
    tc.nvcc
}

/// `tpace translate --target cuda PATH -o NAME.cu`, run in `dir`: the build line it prints.
fn printed_build_line(path: &std::path::Path, dir: &std::path::Path, name: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_tpace"))
        .args(["translate", "--target", "cuda"])
        .args(fixture_flags(path).cli_args())
        .arg(path)
        .args(["-o", &format!("{name}.cu")])
        .current_dir(dir)
        .output()
        .expect("run tpace");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{name}: tpace translate failed:\n{stderr}"
    );
    let line = stderr
        .lines()
        .find_map(|l| l.split_once("; build: ").map(|(_, b)| b.to_string()))
        .unwrap_or_else(|| panic!("{name}: no build line in\n{stderr}"));
    assert!(
        stderr.contains(&format!("wrote {name}.cu and {name}.host.c")),
        "{name}: {stderr}"
    );
    line
}

/// Every program's CUDA translation builds with the line `tpace translate` prints,
/// run as it is printed (nvcc, sm_90 since there is no GPU here to ask; the host
/// program through the C compiler), with every warning of nvcc and of the host
/// compiler (`-Wall -Wextra`) made an error through NVCC_APPEND_FLAGS.
#[test]
fn every_example_builds_with_the_printed_nvcc_line_without_warnings() {
    let Some(nvcc) = nvcc() else { return };
    let nvcc_dir = std::path::Path::new(&nvcc)
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map(|d| d.to_path_buf());
    let path_var = match (&nvcc_dir, std::env::var_os("PATH")) {
        (Some(d), Some(p)) => {
            let mut all = vec![d.clone()];
            all.extend(std::env::split_paths(&p));
            std::env::join_paths(all).expect("PATH")
        }
        (Some(d), None) => d.clone().into_os_string(),
        (None, p) => p.unwrap_or_default(),
    };
    let dir = tempfile::tempdir().expect("scratch folder");
    let build = |path: &std::path::Path| {
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let line = printed_build_line(path, dir.path(), &name);
        assert_eq!(
            line,
            format!(
                "nvcc {}-O3 -arch=sm_90 --fmad=false {name}.cu {name}.host.c -o {name}",
                fixture_flags(path).printed()
            ),
            "{name}: the printed build line changed form"
        );
        let out = Command::new("sh")
            .args(["-c", &line])
            .current_dir(dir.path())
            .env("PATH", &path_var)
            .env(
                "NVCC_APPEND_FLAGS",
                "-Werror all-warnings -Xcompiler -Wall,-Wextra",
            )
            .output()
            .expect("run the build line");
        assert!(
            out.status.success() && out.stderr.is_empty() && out.stdout.is_empty(),
            "{name}: `{line}` reports:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(dir.path().join(&name).exists(), "{name}: no program built");
    };
    // One nvcc per core.
    let files = programs();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers.min(files.len()))
            .map(|_| {
                scope.spawn(|| {
                    while let Some(path) =
                        files.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                    {
                        build(path);
                    }
                })
            })
            .collect();
        for h in handles {
            if let Err(e) = h.join() {
                std::panic::resume_unwind(e);
            }
        }
    });
}

#[test]
fn the_shuffled_streams_catch_a_missing_wait() {
    let tc = Toolchain::detect();
    let dir = tempfile::tempdir().expect("scratch folder");
    let steps = 9;
    let seq = jacobi_reference(&tc, dir.path(), steps);
    // The intact program is right under every seed; each break is caught under some.
    let intact = build_ok(
        &tc,
        &broken_jacobi(
            Target::Cuda,
            "tpace_dev_sync(r);\n        if (r->next_t",
            "tpace_dev_sync(r);\n        if (r->next_t",
        ),
        dir.path(),
        "intact",
        Flavour::CudaEmulation,
    );
    let breaks = [
        (
            "mmtb_handover_before_previous_kernels",
            "    tpace_dev_wait(r, prev->slot, ch->slot);\n",
            "",
            "mmtb",
        ),
        (
            "mmtb_upload_into_a_slot_still_handing_over",
            "        tpace_dev_wait_mark(r, ch->slot, ch->slot);\n",
            "",
            "mmtb",
        ),
        (
            "mmtb_download_before_the_chunks_kernels",
            "    tpace_dev_wait(r, ch->slot, ch->out_q);\n",
            "",
            "mmtb",
        ),
        (
            "mmtb_upload_before_the_download_it_overwrites",
            "        tpace_dev_wait_mark(r, TPACE_MARK_OUT_HIGH(ch->slot), ch->slot);\n",
            "",
            "mmtb",
        ),
        (
            "mmtb_upload_waits_for_a_mark_before_the_part_it_names",
            "    size_t moved = tpace_download_range(r, ch, TPACE_MAX(from, split), to);\n    tpace_dev_mark(r, ch->out_q, TPACE_MARK_OUT_HIGH(ch->slot));\n",
            "    tpace_dev_mark(r, ch->out_q, TPACE_MARK_OUT_HIGH(ch->slot));\n    size_t moved = tpace_download_range(r, ch, TPACE_MAX(from, split), to);\n",
            "mmtb",
        ),
        (
            "mmtb_handover_before_the_whole_download",
            "        tpace_dev_wait_mark(r, TPACE_MARK_OUT_ALL(ch->slot), ch->slot);\n",
            "",
            "mmtb",
        ),
        (
            "next_block_before_downloads",
            "tpace_dev_sync(r);\n        if (r->next_t",
            "if (r->next_t",
            "mmtb",
        ),
        (
            "mm_kernels_before_carry",
            "    tpace_dev_wait(r, carry_q, q);\n",
            "",
            "mm",
        ),
    ];
    for (name, from, to, schedule) in breaks {
        let built = build_ok(
            &tc,
            &broken_jacobi(Target::Cuda, from, to),
            dir.path(),
            name,
            Flavour::CudaEmulation,
        );
        let p = params(schedule, 3, 50, 2);
        let mut caught = None;
        for s in 1..=8 {
            let ok = run_with(
                &intact.binary,
                steps,
                &p,
                &seed(s),
                &dir.path().join("i.dump"),
            );
            assert_eq!(
                first_difference(&seq.dump, &ok.dump),
                None,
                "the intact program differs under seed {s}"
            );
            let got = run_with(
                &built.binary,
                steps,
                &p,
                &seed(s),
                &dir.path().join("b.dump"),
            );
            if let Some(d) = first_difference(&seq.dump, &got.dump) {
                caught = Some((s, d));
                break;
            }
        }
        let (s, d) = caught.unwrap_or_else(|| panic!("{name}: no seed caught the missing wait"));
        eprintln!("{name}: caught under seed {s}: {d}");
    }
}

/// One fused-kernel break: its name, the text replaced, and the replacement.
type Break = (&'static str, &'static str, &'static str);

/// `example`'s CUDA translation with every `from` replaced by `to` (a 3-D fused
/// kernel has two copies of its row loop, the steady rows' unrolled).
fn broken_everywhere(example: &str, from: &str, to: &str) -> tpace::back::Output {
    let out = translated_example(example, Target::Cuda);
    let count =
        out.main.matches(from).count() + out.host.as_deref().map_or(0, |h| h.matches(from).count());
    assert!(
        count > 0,
        "the translation of {example} no longer contains `{from}`: update this test"
    );
    tpace::back::Output {
        main: out.main.replace(from, to),
        host: out.host.as_ref().map(|h| h.replace(from, to)),
    }
}

/// Builds `examples/{example}` (or the file `example`, see [`program_path`]) for
/// the CUDA emulation intact and with each of
/// `breaks` (every occurrence replaced); the intact program must match the
/// sequential one under every setting of `configs` and seeds 1 ..= `seeds`
/// (with `env` set too), advancing `fuse` steps per kernel, and every broken
/// one must differ under some setting and seed.
#[allow(clippy::too_many_arguments)]
fn check_fused_breaks(
    example: &str,
    steps: u64,
    fuse: &str,
    configs: &[Params],
    seeds: u64,
    env: &[(String, String)],
    intact_text: &str,
    breaks: &[Break],
) {
    check_fused_breaks_with(
        &[],
        example,
        steps,
        fuse,
        configs,
        seeds,
        env,
        intact_text,
        breaks,
    );
}

/// [`check_fused_breaks`], the programs built with the macro definitions `defines`
/// (`NAME=VALUE`): a runtime setting the breaks need.
#[allow(clippy::too_many_arguments)]
fn check_fused_breaks_with(
    defines: &[&str],
    example: &str,
    steps: u64,
    fuse: &str,
    configs: &[Params],
    seeds: u64,
    env: &[(String, String)],
    intact_text: &str,
    breaks: &[Break],
) {
    let mut tc = Toolchain::detect();
    tc.defines.extend(defines.iter().map(|d| d.to_string()));
    let dir = tempfile::tempdir().expect("scratch folder");
    let seq = example_reference(example, &tc, dir.path(), steps);
    let intact = build_ok(
        &tc,
        &broken_everywhere(example, intact_text, intact_text),
        dir.path(),
        "intact",
        Flavour::CudaEmulation,
    );
    for p in configs {
        for s in 1..=seeds {
            let ok = run_with(
                &intact.binary,
                steps,
                p,
                &[seed(s), env.to_vec()].concat(),
                &dir.path().join("i.dump"),
            );
            assert_eq!(
                first_difference(&seq.dump, &ok.dump),
                None,
                "the intact program differs under seed {s}, {p:?}"
            );
            assert_eq!(
                ok.report.get("fuse").map(String::as_str),
                Some(fuse),
                "{}",
                ok.stderr
            );
        }
    }
    for (name, from, to) in breaks {
        let built = build_ok(
            &tc,
            &broken_everywhere(example, from, to),
            dir.path(),
            name,
            Flavour::CudaEmulation,
        );
        let caught = configs.iter().find_map(|p| {
            (1..=seeds).find_map(|s| {
                let got = run_with(
                    &built.binary,
                    steps,
                    p,
                    &[seed(s), env.to_vec()].concat(),
                    &dir.path().join("b.dump"),
                );
                first_difference(&seq.dump, &got.dump).map(|d| (s, d))
            })
        });
        let (s, d) =
            caught.unwrap_or_else(|| panic!("{name}: the broken fused kernel went unnoticed"));
        eprintln!("{name}: caught under seed {s}: {d}");
    }
}

/// The 2-D fused kernel (Jacobi-2D, 4 steps per launch): a missing barrier, a
/// chunk reading its own slot's strip instead of its predecessor's, a strip not
/// read or shared by every step, a swap per step instead of per group, a needed
/// row skipped, and steady rows (run without the row tests) that reach into the
/// successor's strip or start a row early are each caught by the emulation.
#[test]
fn the_emulation_catches_broken_fused_kernels() {
    check_fused_breaks(
        "jacobi2d.c",
        9,
        "4",
        &[params("mmtb", 8, 7, 3), params("incore", 9, 1, 1)],
        4,
        &[],
        "__syncthreads();\n                float tp_val",
        &[
            (
                "barrier_missing",
                "__syncthreads();\n                float tp_val",
                "float tp_val",
            ),
            (
                "strip_read_from_its_own_slot",
                "arr->strip_out[(ch->c - 1) % p->slots]",
                "arr->strip_out[ch->slot]",
            ),
            (
                "strip_not_read",
                "tp_sin != NULL && tp_q < tp_f.tp_wlo",
                "tp_sin == NULL && tp_q < tp_f.tp_wlo",
            ),
            (
                "one_strip_for_every_intermediate_step",
                "tp_j = tp_f.tp_level0 / TP_T * (TP_T - 1) + tp_l - 1;",
                "tp_j = tp_f.tp_level0 / TP_T * (TP_T - 1);",
            ),
            (
                "swap_per_step_not_per_group",
                "        return (i + p->fuse - 1) / p->fuse;\n",
                "        return i;\n",
            ),
            (
                "a_needed_row_not_computed",
                "tp_q < tp_xs - (long)(TP_T - tp_l) * TP_RLO)",
                "tp_q <= tp_xs - (long)(TP_T - tp_l) * TP_RLO)",
            ),
            (
                "steady_rows_into_the_successors_strip",
                "tp_hi = TPACE_MIN(tp_hi, tp_f.tp_edge_out",
                "tp_hi = TPACE_MAX(tp_hi, tp_f.tp_edge_out",
            ),
            (
                "steady_run_starts_a_row_early",
                "tp_s_lo = TPACE_MAX(tp_s_lo, tp_lo + (long)tp_l * TP_RHI);",
                "tp_s_lo = TPACE_MAX(tp_s_lo, tp_lo + (long)tp_l * TP_RHI - 1);",
            ),
        ],
    );
}

/// The 3-D fused kernel (tiles of threads each holding four neighbouring columns
/// along axis 2, one barrier a row, heat3d, 2 steps per launch): a missing barrier,
/// a lane that reads its own column where the neighbouring lane's belongs, a step
/// that reads along axis 1 the shared row being written (not the one written a row
/// earlier), a step that leaves in shared memory a row other than the one the next
/// step reads, an input row loaded ahead from the wrong row, a row that skips the
/// strip, a strip left unwritten, a row outside the sweep's box computed anyway and
/// steady rows that reach into the successor's strip are each caught by the
/// emulation.
#[test]
fn the_emulation_catches_broken_tiled_fused_kernels() {
    let barrier = "__syncthreads();\n                /* Step 0's row";
    check_fused_breaks(
        "heat3d.c",
        7,
        "2",
        &[params("mmtb", 6, 9, 3), params("incore", 7, 1, 1)],
        3,
        &[],
        barrier,
        &[
            ("barrier_missing", barrier, "/* Step 0's row"),
            (
                "neighbour_lane_from_own_registers",
                "tp_w2[tp_h] = __shfl_up_sync(0xffffffffu, tp_v[tp_l - 1][TP_RLO][TP_C2 - TP_H2 + tp_h], 1, TP_B2);",
                "tp_w2[tp_h] = tp_v[tp_l - 1][TP_RLO][0];",
            ),
            (
                "shared_row_of_this_row_read",
                "tp_sh[tp_par ^ 1][tp_l - 1][tp_t1_m1]",
                "tp_sh[tp_par][tp_l - 1][tp_t1_m1]",
            ),
            (
                "shared_row_one_row_late",
                "tp_sh[tp_par][tp_l][tp_t1][tp_t2 * TP_C2 + tp_c] = tp_v[tp_l][TP_RLO + 1][tp_c];",
                "tp_sh[tp_par][tp_l][tp_t1][tp_t2 * TP_C2 + tp_c] = tp_v[tp_l][TP_RLO][tp_c];",
            ),
            (
                "input_row_loaded_ahead_from_the_wrong_row",
                "tp_in_col + tp_row + TP_AHEAD * tp_plane, tp_ahead_in",
                "tp_in_col + tp_row + (TP_AHEAD - 1) * tp_plane, tp_ahead_in",
            ),
            (
                "strip_not_read",
                "tp_sin != NULL && tp_q < tp_f.tp_wlo",
                "tp_sin == NULL && tp_q < tp_f.tp_wlo",
            ),
            (
                "strip_not_written",
                "tpace_cols_store(tp_sout_col + tp_srow, tp_val, tp_cols_mine, false);",
                ";",
            ),
            (
                "row_outside_the_box_computed",
                "} else if (tp_q_box) {",
                "} else if (1) {",
            ),
            (
                "steady_rows_into_the_successors_strip",
                "tp_hi = TPACE_MIN(tp_hi, tp_f.tp_edge_out",
                "tp_hi = TPACE_MAX(tp_hi, tp_f.tp_edge_out",
            ),
            (
                "a_needed_row_not_computed",
                "tp_q < tp_xs - (long)(TP_T - tp_l) * TP_RLO)",
                "tp_q <= tp_xs - (long)(TP_T - tp_l) * TP_RLO)",
            ),
        ],
    );
}

/// The 3-D fused kernel's tiles along axis 2 (the contiguous one) start on whole
/// threads' columns from an aligned column (`TPACE_TILE_START`), so that a thread's
/// columns start on 16 bytes where the rows do and move in one access each
/// (`tpace_cols_load`, `tpace_cols_store`); where they do not (rows of 45 floats, of
/// 180 bytes), they move column by column. Two to four steps a launch, in-core and as
/// mmtb chunks that do not divide the grid, float and double, halos of 1 and 3. Each intact program matches the sequential one; a one-access
/// load or store of the wrong columns is caught (so the one-access path runs: it would
/// not if the tiles were not aligned), and so are a launcher that drops the last tile,
/// a kernel whose tiles start a tile behind the launcher's, own columns one short, and,
/// with `TPACE_TILE_FAST=1`, a tile taken for one inside the sweep's box that is not.
#[test]
fn the_emulation_catches_broken_aligned_tiles() {
    let fuse = |t: &str| [("TPACE_FUSE".to_string(), t.to_string())];
    let configs = |rows: u64| {
        [
            params("incore", 7, rows, 1),
            params("mmtb", 8, non_divisor(rows, rows / 3 + 1), 3),
        ]
    };
    let own = "tp_k2 < TP_L2 + TP_S2;";
    let own_short = ("own_columns_one_short", own, "tp_k2 < TP_L2 + TP_S2 - 1;");
    let wide_load = (
        "one_access_load_of_the_wrong_columns",
        "memcpy(to, from, sizeof to);",
        "memcpy(to, from + 1, sizeof to);",
    );
    let wide_store = (
        "one_access_store_to_the_wrong_columns",
        "memcpy(to, from, sizeof from);",
        "memcpy(to + 1, from, sizeof from);",
    );
    // heat-3D as it is: rows of 80 floats, 320 bytes, every thread's columns on 16 bytes.
    check_fused_breaks(
        "heat3d.c",
        7,
        "4",
        &configs(96),
        2,
        &fuse("4"),
        own,
        &[
            wide_load,
            wide_store,
            own_short,
            (
                "last_tile_not_launched",
                "TPACE_MAX(tp_box_hi2 - tp_own2, 1L) + TPACE_TILE_STRIDE(32L, tp_len * 1L, 4L) - 1)",
                "TPACE_MAX(tp_box_hi2 - tp_own2, 1L))",
            ),
        ],
    );
    // Rows of 45 floats: column by column. The kernel's tiles one tile behind the
    // launcher's leave the box's last columns.
    let first2 = "TPACE_TILE_START(tp_box_lo2, tp_lo2, TP_T * TP_H2, TP_C2) + (long)blockIdx.x";
    check_fused_breaks_with(
        &["NZ=45"],
        "heat3d.c",
        7,
        "3",
        &configs(96),
        2,
        &fuse("3"),
        first2,
        &[
            own_short,
            (
                "kernel_tiles_a_tile_behind_the_launchers",
                first2,
                "TPACE_TILE_START(tp_box_lo2, tp_lo2, TP_T * TP_H2, TP_C2) - TP_S2 + (long)blockIdx.x",
            ),
        ],
    );
    // The steady rows of tiles inside the sweep's box without the per-column box selects
    // (TPACE_TILE_FAST=1): a tile that reaches past the box's first column taken for one
    // inside is caught (so the copy runs).
    let inside = "tp_tile2 >= tp_box_lo2 &&";
    check_fused_breaks_with(
        &["TPACE_TILE_FAST=1"],
        "heat3d.c",
        7,
        "2",
        &configs(96),
        2,
        &fuse("2"),
        inside,
        &[(
            "tile_past_the_box_taken_for_inside",
            inside,
            "tp_tile2 + TP_W2 / 2 >= tp_box_lo2 &&",
        )],
    );
    // Column by column everywhere (TPACE_TILE_WIDE=0), and the tiles laid out as before
    // they were aligned (TPACE_TILE_UNALIGNED, what bench/gpu.sh part tiles3d measures
    // against).
    for defines in [&["TPACE_TILE_WIDE=0"][..], &["TPACE_TILE_UNALIGNED=1"][..]] {
        check_fused_breaks_with(
            defines,
            "heat3d.c",
            7,
            "2",
            &configs(96),
            1,
            &fuse("2"),
            own,
            &[own_short],
        );
    }
    // double (two columns a thread) on rows of 40, and the radius-3 star in float on
    // rows of 44 (its own columns a block: 20 at two steps, 8 at four), its steady rows
    // of tiles inside the box without the per-column box selects (TPACE_TILE_FAST=1).
    check_fused_breaks_with(
        &["NZ=40"],
        "tests/fixtures/layouts/heat3d_double.c",
        7,
        "3",
        &configs(23),
        2,
        &fuse("3"),
        own,
        &[wide_load, wide_store, own_short],
    );
    check_fused_breaks_with(
        &["NZ=44", "TPACE_TILE_FAST=1"],
        "tests/fixtures/layouts/heat3d_star19.c",
        7,
        "4",
        &configs(21),
        1,
        &fuse("4"),
        own,
        &[wide_load, own_short],
    );
}

/// The 3-D one-step kernel (threads marching along the cut axis, each array's own
/// column in a queue of registers loaded ahead; heat-3D one step per kernel, and
/// Himeno, whose other columns read at three planes have queues too): a queue that
/// does not move, a plane loaded ahead one plane short, the last planes of a
/// segment not computed, a queue filled one plane late, and a column queue of
/// Himeno's that loads the wrong column are each caught by the emulation.
#[test]
fn the_emulation_catches_broken_marching_kernels() {
    let one_step = [("TPACE_FUSE".to_string(), "1".to_string())];
    let configs = [params("mmtb", 6, 9, 3), params("incore", 7, 1, 1)];
    let moves = "tp_q0[tp_r] = tp_q0[tp_r + 1];";
    // One float array loads no plane ahead by default (measured fastest on the H100):
    // two ahead, so that the breaks of the planes loaded ahead have something to break.
    check_fused_breaks_with(
        &["TPACE_MARCH_AHEAD_PLANES=2"],
        "heat3d.c",
        7,
        "1",
        &configs,
        2,
        &one_step,
        moves,
        &[
            ("queue_does_not_move", moves, ";"),
            (
                "plane_loaded_ahead_one_short",
                "tp_p_a[(1 + TP_AHEAD) * tp_s0]",
                "tp_p_a[TP_AHEAD * tp_s0]",
            ),
            (
                "last_planes_not_computed",
                "tp_run == 0 ? tp_end0 - TP_AHEAD : tp_end0",
                "tp_end0 - TP_AHEAD",
            ),
            (
                "queue_filled_one_plane_late",
                "tp_p_a[(tp_r - 1) * tp_s0]",
                "tp_p_a[tp_r * tp_s0]",
            ),
        ],
    );
    let column = "tp_q1[2] = tp_p_p[tp_s0 - tp_s1];";
    check_fused_breaks(
        "himeno.c",
        5,
        "1",
        &configs,
        1,
        &[],
        column,
        &[
            (
                "column_queue_of_the_wrong_column",
                column,
                "tp_q1[2] = tp_p_p[tp_s0 + tp_s1];",
            ),
            (
                "column_queue_does_not_move",
                "tp_q1[tp_r] = tp_q1[tp_r + 1];",
                ";",
            ),
        ],
    );
}

/// The swap's temporary lives only on the host and gets its final values from the
/// copy's destination (`TPACE_FOLDED`), one contiguous download per chunk from the
/// box's first cell to its last: a download skipped, a box one column too narrow, a
/// span one cell short, or a stale buffer are each caught, on a 3-D grid and a 2-D
/// one; on the 2-D one (whose temporary's faces differ from the destination's), so
/// are faces not put back after the downloads. The programs are heat-3D and
/// Jacobi-2D that read their temporary after the loop (in the examples nothing
/// does, so it never comes back).
#[test]
fn the_emulation_catches_a_broken_folded_temporary() {
    let download = "tpace_download_folded(r, ch, arr, from, to);";
    let runtime_breaks = [
        ("fold_not_downloaded", download, "0;"),
        (
            "span_one_cell_short",
            "*end = tpace_host_offset(p, last, stride) + 1;",
            "*end = tpace_host_offset(p, last, stride);",
        ),
        (
            "stale_buffer",
            "const char *buf = (const char *)tpace_final_buffer(r, ch, arr->fold_of);",
            "const char *buf = (const char *)tpace_swap_buffer(r, ch, arr->fold_of, ch->kb - 1);",
        ),
    ];
    // The copy's box, which the fold downloads: the copy sweep's bounds at the call site.
    let mut heat = runtime_breaks.to_vec();
    heat.push((
        "box_too_narrow",
        "tp_in.tp_box_hi[1][2] = (long)(NZ - 1);",
        "tp_in.tp_box_hi[1][2] = (long)(NZ - 2);",
    ));
    check_fused_breaks(
        "tests/fixtures/liveness/heat3d_reads_b.c",
        7,
        "2",
        &[
            params("mmtb", 6, 9, 3),
            params("mm", 4, 20, 2),
            params("incore", 7, 1, 1),
        ],
        1,
        &[],
        download,
        &heat,
    );
    let mut jacobi = runtime_breaks.to_vec();
    jacobi.push((
        "box_too_narrow",
        "tp_in.tp_box_hi[1][1] = (long)(Y - 1);",
        "tp_in.tp_box_hi[1][1] = (long)(Y - 2);",
    ));
    jacobi.push((
        "faces_not_put_back",
        "tpace_fold_gaps(r, arr, TPACE_GAPS_RESTORE);",
        "(void)0;",
    ));
    check_fused_breaks(
        "tests/fixtures/liveness/jacobi2d_reads_work.c",
        9,
        "4",
        &[params("mmtb", 8, 7, 3), params("incore", 9, 1, 1)],
        1,
        &[],
        download,
        &jacobi,
    );
}

/// One line of a `TPACE_TRACE` file.
#[derive(Debug)]
struct TraceOp {
    chunk: u64,
    first_step: u64,
    op: String,
    start: f64,
    end: f64,
    bytes: u64,
}

fn read_trace(path: &std::path::Path) -> Vec<TraceOp> {
    let text = std::fs::read_to_string(path).expect("the trace file was written");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("chunk\tfirst_step\tsteps\tqueue\top\tstart_ms\tend_ms\tbytes")
    );
    lines
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 8, "{l}");
            TraceOp {
                chunk: f[0].parse().expect("chunk"),
                first_step: f[1].parse().expect("first step"),
                op: f[4].to_string(),
                start: f[5].parse().expect("start"),
                end: f[6].parse().expect("end"),
                bytes: f[7].parse().expect("bytes"),
            }
        })
        .collect()
}

/// `TPACE_TRACE=FILE` writes the pipeline's timeline. Jacobi-2D (1000 x 600) under
/// mmtb, 8 steps in blocks of 3, chunks of 150 planes: every chunk of every block
/// has one upload, one run of kernels and one download, every chunk after the first
/// a hand-over; nothing ends before it starts; a chunk's kernels start after its
/// upload and hand-over and after its predecessor's kernels; a block downloads `a`
/// once, the last one too (the program never reads the folded `work` afterwards, so
/// it stays on the device); the arrays stay bit for bit; and
/// the summary line says what was written. A file that cannot be opened stops the
/// program before the loop, in words.
#[test]
fn a_trace_records_the_pipeline_timeline() {
    let tc = Toolchain::detect();
    let dir = tempfile::tempdir().expect("scratch folder");
    let steps = 8;
    let seq = jacobi_reference(&tc, dir.path(), steps);
    let text = translated_example("jacobi2d.c", Target::Cuda);
    let built = build_ok(&tc, &text, dir.path(), "traced", Flavour::CudaEmulation);
    let trace = dir.path().join("trace.tsv");
    let env = vec![(
        "TPACE_TRACE".to_string(),
        trace.to_string_lossy().into_owned(),
    )];
    let got = run_with(
        &built.binary,
        steps,
        &params("mmtb", 3, 150, 3),
        &env,
        &dir.path().join("t.dump"),
    );
    assert_eq!(first_difference(&seq.dump, &got.dump), None);
    let ops = read_trace(&trace);
    let (chunks, blocks, grid_bytes) = (7u64, [0u64, 3, 6], 1000 * 600 * 4u64);
    let count = |op: &str| ops.iter().filter(|o| o.op == op).count() as u64;
    assert_eq!(count("upload"), chunks * 3);
    assert_eq!(count("kernels"), chunks * 3);
    assert_eq!(count("download"), chunks * 3);
    assert_eq!(count("handover"), (chunks - 1) * 3);
    assert_eq!(ops.len() as u64, (4 * chunks - 1) * 3);
    let find = |t: u64, c: u64, op: &str| {
        ops.iter()
            .find(|o| o.first_step == t && o.chunk == c && o.op == op)
            .unwrap_or_else(|| panic!("no {op} of chunk {c} at step {t}: {ops:?}"))
    };
    for o in &ops {
        assert!(o.start >= 0.0 && o.end >= o.start, "{o:?}");
    }
    for t in blocks {
        for c in 0..chunks {
            let k = find(t, c, "kernels");
            assert!(k.start >= find(t, c, "upload").end, "{k:?}");
            if c > 0 {
                assert!(k.start >= find(t, c, "handover").end, "{k:?}");
                assert!(k.start >= find(t, c - 1, "kernels").end, "{k:?}");
            }
        }
        let down: u64 = ops
            .iter()
            .filter(|o| o.first_step == t && o.op == "download")
            .map(|o| o.bytes)
            .sum();
        assert_eq!(down, grid_bytes, "block at step {t} downloads `a` once");
    }
    let summary = got
        .stderr
        .lines()
        .find(|l| l.contains(": trace: "))
        .unwrap_or_else(|| panic!("no trace summary:\n{}", got.stderr));
    assert!(
        summary.contains(&format!("{} operations written to", ops.len())),
        "{summary}"
    );
    // "in W s, kernels ran K s and none ran N s (H s before the first, T s after the
    // last, B s between)": K + N = W and H + T + B = N; H and T agree with the file.
    let number_before = |word: &str| -> f64 {
        let at = summary
            .find(word)
            .unwrap_or_else(|| panic!("`{word}` not in {summary}"));
        let head = summary[..at].trim_end();
        let start = head.rfind([' ', '(']).map_or(0, |i| i + 1);
        head[start..]
            .parse()
            .unwrap_or_else(|_| panic!("no number before `{word}` in {summary}"))
    };
    let wall = number_before("s, kernels ran");
    let ran = number_before("s and none ran");
    let none = number_before("s (");
    let head = number_before("s before the first");
    let tail = number_before("s after the last");
    let between = number_before("s between");
    let close = |a: f64, b: f64| (a - b).abs() <= 2e-6 + 1e-3 * b.abs();
    assert!(close(ran + none, wall), "{summary}");
    assert!(close(head + tail + between, none), "{summary}");
    let kernels = ops.iter().filter(|o| o.op == "kernels");
    let first = kernels.clone().map(|o| o.start).fold(f64::MAX, f64::min);
    let last = kernels.map(|o| o.end).fold(0.0, f64::max);
    let end = ops.iter().map(|o| o.end).fold(0.0, f64::max);
    // The file has microseconds in ms, the summary microseconds in s: rounding apart.
    assert!((head * 1e3 - first).abs() < 1.5e-3, "{summary}");
    assert!((tail * 1e3 - (end - last)).abs() < 2e-3, "{summary}");
    // A trace file that cannot be opened: exit 2 before the loop, with the path.
    let bad = Command::new(&built.binary)
        .arg("3")
        .env("TPACE_TRACE", dir.path().join("no/such/folder/t.tsv"))
        .output()
        .expect("run the program");
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("cannot open TPACE_TRACE file") && stderr.contains("no/such/folder"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("schedule="),
        "the loop ran before the failure: {stderr}"
    );
}

/// On a 3-D grid, the cells a folded temporary's contiguous downloads pass over
/// are the rest of each row and whole rows between planes. heat-3D with `b`
/// starting unlike `a` (so its faces differ from `a`'s) keeps them bit for bit,
/// under mmtb with several chunks and in-core; without putting them back, or with
/// the faces taken for `a`'s and so never saved, it does not.
#[test]
fn a_folded_temporary_keeps_its_faces_on_a_3d_grid() {
    let tc = Toolchain::detect();
    let dir = tempfile::tempdir().expect("scratch folder");
    // heat-3D that reads `b` after the loop (in the example nothing does: it never comes back).
    let path = program_path("tests/fixtures/liveness/heat3d_reads_b.c");
    let source = std::fs::read_to_string(path).expect("heat3d_reads_b.c");
    let same = "b[i][j][k] = a[i][j][k];";
    assert_eq!(source.matches(same).count(), 1);
    let source = source.replace(same, "b[i][j][k] = 1.0f - a[i][j][k];");
    let compiled = driver::compile_source("heat3d_faces.c", &source).expect("compiles");
    let steps = 5;
    let reference = build_ok(
        &tc,
        &reference_of(&compiled),
        dir.path(),
        "reference",
        Flavour::Reference,
    );
    let seq = run_ok(
        &reference.binary,
        steps,
        &Params::default(),
        &dir.path().join("ref.dump"),
    );
    let text = driver::translate(&compiled, Target::Cuda).expect("translates");
    let intact = build_ok(&tc, &text, dir.path(), "intact", Flavour::CudaEmulation);
    // Faces not put back, and faces taken for the destination's (so never saved).
    let breaks = [
        ("tpace_fold_gaps(r, arr, TPACE_GAPS_RESTORE);", "(void)0;"),
        ("!tpace_fold_gaps(r, arr, TPACE_GAPS_SAME)", "0"),
    ];
    let broken: Vec<_> = breaks
        .iter()
        .enumerate()
        .map(|(i, (from, to))| {
            build_ok(
                &tc,
                &replace_once(&text, from, to, "heat3d_faces.c"),
                dir.path(),
                &format!("broken{i}"),
                Flavour::CudaEmulation,
            )
        })
        .collect();
    for p in [params("mmtb", 3, 9, 3), params("incore", 5, 1, 1)] {
        let ok = run_with(
            &intact.binary,
            steps,
            &p,
            &seed(3),
            &dir.path().join("i.dump"),
        );
        assert_eq!(first_difference(&seq.dump, &ok.dump), None, "{p:?}");
        for (built, (from, _)) in broken.iter().zip(&breaks) {
            let bad = run_with(
                &built.binary,
                steps,
                &p,
                &seed(3),
                &dir.path().join("b.dump"),
            );
            let diff = first_difference(&seq.dump, &bad.dump)
                .unwrap_or_else(|| panic!("`{from}` broken went unnoticed under {p:?}"));
            assert!(diff.starts_with("b["), "{diff}");
        }
    }
}

/// The fused kernels compile for sm_90 and their launch bounds leave ptxas enough
/// registers: for every program whose steps fuse (float and double, halos of 1, 2
/// and 3), every fused kernel instance the translation prints compiles, holds no
/// static shared memory (its rows are in dynamic shared memory, sized at the
/// launch), and nvcc reports no spill stores or loads for the instances of 2-D grids
/// (capped by their rings' registers) up to four steps and those of 3-D grids at every
/// step count they have, `double` and halos of 2 and 3 included (issue 28; the nvcc CI
/// installs, 13.5, showed none on 2026-11-27); beyond, 2-D rows of five to eight steps may spill a little
/// (the 2-D rows' bounds in `kernel` in src/back/cuda/fused.rs).
#[test]
fn fused_kernels_do_not_spill_registers() {
    let Some(nvcc) = nvcc() else { return };
    let dir = tempfile::tempdir().expect("scratch folder");
    let mut checked = Vec::new();
    for path in programs() {
        let compiled = compile(&path);
        let Some(fusion) = compiled.stages[0].plan.fusion.clone() else {
            continue;
        };
        let rank = fusion.block.len() + 1;
        let name = path.file_stem().unwrap().to_string_lossy().into_owned();
        let (cu, _) = write_cuda(
            dir.path(),
            &name,
            &driver::translate(&compiled, Target::Cuda).expect("translates"),
        );
        let out = Command::new(&nvcc)
            .args(["-O3", "-arch=sm_90", "--fmad=false", "-Xptxas", "-v", "-c"])
            .args(fixture_flags(&path).args())
            .arg(&cu)
            .arg("-o")
            .arg(dir.path().join(format!("{name}.o")))
            .output()
            .expect("run nvcc");
        let report = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}: {report}");
        // "Function properties for NAME" is followed by "N bytes stack frame, S bytes
        // spill stores, L bytes spill loads".
        let lines: Vec<&str> = report.lines().collect();
        let mut instances = 0;
        for (i, line) in lines.iter().enumerate() {
            if !(line.contains("Function properties for") && line.contains("_fused")) {
                continue;
            }
            instances += 1;
            let steps = (2..=tpace::plan::MAX_FUSED_STEPS)
                .find(|t| line.contains(&format!("fusedILi{t}E")))
                .unwrap_or_else(|| panic!("{name}: no step count in {line}"));
            let spills = lines.get(i + 1).copied().unwrap_or_default();
            let usage = lines.get(i + 2).copied().unwrap_or_default();
            assert!(
                usage.contains("Used ") && !usage.contains("smem"),
                "{name}: static shared memory in a fused kernel: {line}\n{usage}"
            );
            if rank == 2 && steps > 4 {
                continue;
            }
            assert!(
                spills.contains(" 0 bytes spill stores, 0 bytes spill loads"),
                "{name}: {line}\n{spills}\n{usage}"
            );
        }
        assert_eq!(
            instances,
            fusion.max_steps - 1,
            "{name}: not every fused kernel compiled:\n{report}"
        );
        checked.push(name);
    }
    for name in [
        "heat2d_asym",
        "heat3d",
        "heat3d_double",
        "heat3d_star13_double",
        "heat3d_star19",
        "jacobi2d",
        "star2d_halo3",
    ] {
        assert!(
            checked.iter().any(|c| c == name),
            "{name} did not fuse: {checked:?}"
        );
    }
}

/// Every step count a fused kernel has, forced with `TPACE_FUSE` from 1 to the
/// translation's most (8 for 2-D rows, 4 for 3-D tiles), runs bit for bit on the
/// emulation: float and double, halos of 1 to 3, 2-D and 3-D, 13 steps (not a
/// multiple of most counts, so the last steps of a block run one kernel each), in
/// device memory, as mmtb chunks narrower than a hand-over strip (at 8 steps a
/// Jacobi-2D strip holds 21 planes, a chunk 4), with k below and above the count,
/// and as mm. Where the plan fuses (in-core, wide mmtb chunks), the run reports
/// the count asked for; one more than the most is refused in words naming the
/// values to use.
#[test]
fn fused_kernels_match_at_every_depth() {
    let tc = Toolchain::detect();
    let steps = 13;
    let mut deepest = std::collections::BTreeMap::new();
    // Each program with its planes along the cut axis.
    for (name, rows) in [
        ("examples/jacobi2d.c", 1000),
        ("tests/fixtures/layouts/heat2d_asym.c", 59),
        ("tests/fixtures/layouts/star2d_halo3.c", 47),
        ("examples/heat3d.c", 96),
        ("tests/fixtures/layouts/heat3d_double.c", 23),
        ("tests/fixtures/layouts/heat3d_star13_double.c", 21),
        ("tests/fixtures/layouts/heat3d_star19.c", 21),
    ] {
        let dir = tempfile::tempdir().expect("scratch folder");
        let compiled = compile(&program_path(name));
        let seq = example_reference(name, &tc, dir.path(), steps);
        let translation = driver::translate(&compiled, Target::Cuda).expect("translates");
        let fusion = compiled.stages[0].plan.fusion.clone().expect("fuses");
        let built = build_ok(
            &tc,
            &translation,
            dir.path(),
            "fused",
            Flavour::CudaEmulation,
        );
        for t in 1..=fusion.max_steps {
            let configs = [
                (params("incore", steps, rows, 1), true),
                (params("mmtb", 8, non_divisor(rows, rows / 3 + 1), 3), true),
                (params("mmtb", steps, 4, 2), false),
                (params("mmtb", 5, non_divisor(rows, 7), 4), false),
                (params("mm", 6, non_divisor(rows, rows / 4 + 1), 2), false),
            ];
            for (p, fuses) in &configs {
                let fuse = t.to_string();
                let got = run_with(
                    &built.binary,
                    steps,
                    p,
                    &[
                        seed(u64::from(t)),
                        vec![("TPACE_FUSE".into(), fuse.clone())],
                    ]
                    .concat(),
                    &dir.path().join("d.dump"),
                );
                assert_eq!(
                    first_difference(&seq.dump, &got.dump),
                    None,
                    "{name}: TPACE_FUSE={t} {p:?}"
                );
                if *fuses {
                    assert_eq!(
                        got.report.get("fuse").map(String::as_str),
                        Some(fuse.as_str()),
                        "{name} {p:?}: {}",
                        got.stderr
                    );
                }
            }
        }
        // One step more than the kernels have: refused before anything runs.
        let over = fusion.max_steps + 1;
        let e = driver::run::execute(
            &built.binary,
            &[steps.to_string()],
            &[("TPACE_FUSE".into(), over.to_string())],
            &dir.path().join("f.dump"),
        )
        .map(|e| e.stderr)
        .expect_err("a TPACE_FUSE beyond the kernels must be refused")
        .0;
        let most = fusion.max_steps;
        assert!(
            e.contains(&format!("TPACE_FUSE={over}")) && e.contains(&format!("from 1 to {most}")),
            "{name}: {e}"
        );
        // The deepest of each rank's programs (wider halos and double fuse fewer steps).
        let d = deepest.entry(fusion.block.len() + 1).or_insert(0);
        *d = (*d).max(most);
    }
    assert_eq!(
        deepest.into_iter().collect::<Vec<_>>(),
        vec![
            (2, tpace::plan::MAX_FUSED_STEPS),
            (3, tpace::plan::TILE_MAX_STEPS)
        ]
    );
}

/// `TPACE_FUSE_BLOCKS` (how many blocks a fused launch aims at, so how long each
/// block's segment of rows is) changes where segments start and how many rows each
/// recomputes below it, never a value: one block per tile (segments as long as the
/// cap), the default, a few, and so many that every segment is the shortest allowed,
/// in-core and in mmtb chunks, 2-D and 3-D. A value out of range is refused in words.
#[test]
fn fused_segments_of_any_length_give_the_same_answer() {
    let tc = Toolchain::detect();
    let steps = 11;
    for (name, rows) in [("examples/jacobi2d.c", 1000), ("examples/heat3d.c", 96)] {
        let dir = tempfile::tempdir().expect("scratch folder");
        let compiled = compile(&program_path(name));
        let seq = example_reference(name, &tc, dir.path(), steps);
        let translation = driver::translate(&compiled, Target::Cuda).expect("translates");
        let built = build_ok(
            &tc,
            &translation,
            dir.path(),
            "segs",
            Flavour::CudaEmulation,
        );
        for blocks in ["1", "7", "2048", "16777216"] {
            for p in [
                params("incore", steps, rows, 1),
                params("mmtb", 8, non_divisor(rows, rows / 3 + 1), 3),
            ] {
                let got = run_with(
                    &built.binary,
                    steps,
                    &p,
                    &[("TPACE_FUSE_BLOCKS".into(), blocks.into())],
                    &dir.path().join("d.dump"),
                );
                assert_eq!(
                    first_difference(&seq.dump, &got.dump),
                    None,
                    "{name}: TPACE_FUSE_BLOCKS={blocks} {p:?}"
                );
                assert_ne!(
                    got.report.get("fuse").map(String::as_str),
                    Some("1"),
                    "{name}: {p:?} did not fuse"
                );
            }
        }
        let e = driver::run::execute(
            &built.binary,
            &[steps.to_string()],
            &[("TPACE_FUSE_BLOCKS".into(), "0".into())],
            &dir.path().join("f.dump"),
        )
        .map(|e| e.stderr)
        .expect_err("TPACE_FUSE_BLOCKS=0 must be refused")
        .0;
        assert!(
            e.contains("TPACE_FUSE_BLOCKS=0 is not a whole number from 1 to 16777216"),
            "{name}: {e}"
        );
    }
}

/// Eight steps of Jacobi-2D (the deepest 2-D kernel) need 16512 bytes of shared
/// memory a block: on a device that gives a block 12000, `TPACE_FUSE=8` is
/// refused in words naming the most that fits (five steps), and without
/// `TPACE_FUSE` the model chooses among the counts that fit.
#[test]
fn a_too_deep_tpace_fuse_is_refused_with_the_count_that_fits() {
    let tc = Toolchain::detect();
    let dir = tempfile::tempdir().expect("scratch folder");
    let compiled = compile(&program_path("jacobi2d.c"));
    let fusion = compiled.stages[0].plan.fusion.clone().expect("fuses");
    assert_eq!(fusion.shared_bytes(8), 16512);
    assert_eq!(fusion.shared_bytes(5), 10320);
    let translation = driver::translate(&compiled, Target::Cuda).expect("translates");
    let built = build_ok(&tc, &translation, dir.path(), "j", Flavour::CudaEmulation);
    let small = ("TPACE_EMU_SHARED".to_string(), "12000".to_string());
    let e = driver::run::execute(
        &built.binary,
        &["5".into()],
        &[("TPACE_FUSE".into(), "8".into()), small.clone()],
        &dir.path().join("f.dump"),
    )
    .map(|e| e.stderr)
    .expect_err("TPACE_FUSE=8 must be refused")
    .0;
    assert!(
        e.contains(
            "TPACE_FUSE=8: the fused kernel needs 16512 bytes of shared memory a block for 8 steps, \
             and this device gives a block at most 12000: set TPACE_FUSE to 5 or less"
        ),
        "{e}"
    );
    // The model's own choice on that device: a count that fits, bit for bit.
    let seq = example_reference("jacobi2d.c", &tc, dir.path(), 5);
    let got = run_with(
        &built.binary,
        5,
        &Params::default(),
        &[small],
        &dir.path().join("m.dump"),
    );
    assert_eq!(first_difference(&seq.dump, &got.dump), None);
    let fuse: u32 = got.report["fuse"].parse().unwrap();
    assert!(fuse <= 5, "{}", got.stderr);
}

/// `tests/fixtures/layouts/{name}`.
fn fixture(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/layouts")
        .join(name)
}

/// heat3d_double's fused kernel needs 8 KiB of shared memory a block per step
/// (a 32 x 16 tile of double rows, two copies), so four steps need 32 KiB. On the
/// emulation, whose device gives a block what `TPACE_EMU_SHARED` says (227 KiB, as
/// an H100, when unset), four steps run bit for bit where the device has room, a
/// `TPACE_FUSE` the device has no room for is refused in words before anything is
/// launched, and a default it has no room for comes down to what fits. Without
/// the runtime's check the launch itself fails (as CUDA refuses it), and a launch
/// that gives the kernel less than it uses stops the emulation. (No fused kernel
/// needs more than the 48 KiB a kernel gets without opting in since the 3-D tiles
/// hold 16 bytes a thread, issue 28: the launchers' opt-in has no program to run.)
#[test]
fn a_fused_kernel_gets_only_the_shared_memory_the_device_has() {
    let tc = Toolchain::detect();
    let dir = tempfile::tempdir().expect("scratch folder");
    let compiled = compile(&fixture("heat3d_double.c"));
    let steps = 9;
    let reference = build_ok(
        &tc,
        &reference_of(&compiled),
        dir.path(),
        "reference",
        Flavour::Reference,
    );
    let seq = run_ok(
        &reference.binary,
        steps,
        &Params::default(),
        &dir.path().join("r.dump"),
    );
    let translation = driver::translate(&compiled, Target::Cuda).expect("translates");
    let build = |name: &str, from: &str, to: &str| {
        build_ok(
            &tc,
            &replace_once(&translation, from, to, "heat3d_double.c"),
            dir.path(),
            name,
            Flavour::CudaEmulation,
        )
    };
    let check = "    if (wanted <= fits)\n        return wanted;\n";
    let intact = build("intact", check, check);
    let env = |vars: &[(&str, &str)]| {
        let mut e = seed(3);
        e.extend(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        e
    };
    let configs = [params("mmtb", 8, 7, 3), params("incore", 9, 1, 1)];
    // Room for every step count: four steps, 32 KiB a block.
    // 24 KiB: three steps (exactly 24 KiB); less than 16 KiB: none. Only seven steps
    // (56 KiB) need more than a kernel gets without asking (six: exactly 48 KiB).
    let opt_ins: Vec<&str> = translation
        .main
        .match_indices("cudaFuncSetAttribute(tpace_p1_sweep1_fused<")
        .map(|(at, m)| &translation.main[at + m.len()..at + m.len() + 2])
        .collect();
    assert_eq!(opt_ins, ["7>"], "{}", translation.main);
    for (vars, fuse) in [
        (vec![("TPACE_FUSE", "4")], "4"),
        (
            vec![("TPACE_FUSE", "3"), ("TPACE_EMU_SHARED", "24576")],
            "3",
        ),
        (vec![("TPACE_EMU_SHARED", "16383")], "1"),
    ] {
        for p in &configs {
            let got = run_with(
                &intact.binary,
                steps,
                p,
                &env(&vars),
                &dir.path().join("i.dump"),
            );
            assert_eq!(
                first_difference(&seq.dump, &got.dump),
                None,
                "{vars:?} {p:?}"
            );
            assert_eq!(
                got.report.get("fuse").map(String::as_str),
                Some(fuse),
                "{vars:?}: {}",
                got.stderr
            );
            if fuse == "1" {
                assert!(
                    got.stderr.contains(
                        "at most 16383 bytes of shared memory, too little for fused kernels"
                    ),
                    "{}",
                    got.stderr
                );
            }
        }
    }
    // Refused in words: which value, how much it needs, what the device gives, what to set.
    let no_room = env(&[("TPACE_FUSE", "4"), ("TPACE_EMU_SHARED", "24576")]);
    let failed = |binary: &std::path::Path, vars: &[(String, String)]| {
        driver::run::execute(
            binary,
            &[steps.to_string()],
            &[params("mmtb", 8, 7, 3).env(), vars.to_vec()].concat(),
            &dir.path().join("f.dump"),
        )
        .map(|e| e.stderr)
        .expect_err("the run must fail")
        .0
    };
    let refused = failed(&intact.binary, &no_room);
    assert!(
        refused.contains(
            "TPACE_FUSE=4: the fused kernel needs 32768 bytes of shared memory a block for 4 steps, \
             and this device gives a block at most 24576: set TPACE_FUSE to 3 or less"
        ) && !refused.contains("launching"),
        "{refused}"
    );
    // Without the runtime's check, the device refuses the launch of a kernel that
    // needs more than it gives.
    let unchecked = build("unchecked", check, "    return wanted;\n");
    for vars in [
        no_room.clone(),
        env(&[("TPACE_FUSE", "3"), ("TPACE_EMU_SHARED", "20000")]),
    ] {
        let e = failed(&unchecked.binary, &vars);
        assert!(
            e.contains("launching tpace_p1_sweep1_fused (sweep at line 47) failed: invalid value"),
            "{e}"
        );
    }
    // A launch that gives less than the kernel's layout uses stops the emulation.
    let short = build("short", ", 32768, tp_stream", ", 24576, tp_stream");
    let e = failed(&short.binary, &env(&[("TPACE_FUSE", "4")]));
    assert!(
        e.contains("a kernel uses 32768 bytes of dynamic shared memory, its launch gave 24576"),
        "{e}"
    );
}

/// The machine profile's `shared_bytes` bounds the fused kernels a translation
/// prints: planned for a device of 24 KiB a block, heat3d_double gets kernels of
/// two and three steps (16 and 24 KiB), none of four, and a `TPACE_FUSE=4` is
/// refused in words; for just under 16 KiB a block it gets no fused kernel.
#[test]
fn the_profiles_shared_memory_bounds_the_fused_kernels() {
    let h100 = include_str!("../profiles/h100.toml");
    let with_shared = |bytes: u64| {
        let field = "[shared_bytes]\nvalue = 232448\n";
        assert_eq!(
            h100.matches(field).count(),
            1,
            "h100.toml changed: update this test"
        );
        let text = h100
            .replace(field, &format!("[shared_bytes]\nvalue = {bytes}\n"))
            .replace("name = \"h100\"", "name = \"small\"");
        tpace::model::Profile::parse("small.toml", &text).expect("a profile")
    };
    let compiled = compile(&fixture("heat3d_double.c"));
    let small = driver::translate_for(&compiled, Target::Cuda, &with_shared(24 * 1024), false)
        .expect("translates");
    let host = small.host.as_deref().expect("a host program");
    assert!(
        small
            .main
            .contains("tpace_p1_sweep1_fused<3>, tp_grid, tp_block, 24576,")
    );
    assert!(!small.main.contains("tpace_p1_sweep1_fused<4>"));
    assert!(!small.main.contains("cudaFuncSetAttribute(tpace_p1"));
    assert!(host.contains("shape.fuse_max = 3;"), "{host}");
    assert!(
        host.contains("fuse_shared[TPACE_FUSE_MAX + 1] = {0, 0, 16384, 24576, 0, 0, 0, 0, 0};")
    );
    let none = driver::translate_for(&compiled, Target::Cuda, &with_shared(16 * 1024 - 1), false)
        .expect("translates");
    assert!(!none.main.contains("tpace_p1_sweep1_fused"));
    assert!(
        none.host
            .as_deref()
            .unwrap()
            .contains("shape.fuse_max = 1;")
    );
    // The 24 KiB translation runs its default, and refuses four steps in words.
    let tc = Toolchain::detect();
    let dir = tempfile::tempdir().expect("scratch folder");
    let built = build_ok(&tc, &small, dir.path(), "small", Flavour::CudaEmulation);
    let ok = run_with(
        &built.binary,
        5,
        &params("mmtb", 4, 6, 2),
        &seed(1),
        &dir.path().join("s.dump"),
    );
    assert_eq!(
        ok.report.get("fuse").map(String::as_str),
        Some("2"),
        "{}",
        ok.stderr
    );
    let e = driver::run::execute(
        &built.binary,
        &["5".into()],
        &[("TPACE_FUSE".into(), "4".into())],
        &dir.path().join("f.dump"),
    )
    .map(|e| e.stderr)
    .expect_err("TPACE_FUSE=4 must be refused")
    .0;
    assert!(
        e.contains("TPACE_FUSE=4: this program has fused kernels for at most 3 steps")
            && e.contains("set TPACE_FUSE from 1 to 3"),
        "{e}"
    );
}

/// jacobi2d at 40 x 30 with `edits` (each must apply once).
fn jacobi_small(edits: &[(&str, &str)]) -> String {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut source = std::fs::read_to_string(root.join("examples/jacobi2d.c")).expect("jacobi2d.c");
    for (from, to) in [
        ("#define X 1000", "#define X 40"),
        ("#define Y 600", "#define Y 30"),
    ]
    .iter()
    .chain(edits)
    {
        assert_eq!(
            source.matches(from).count(),
            1,
            "`{from}` not in jacobi2d.c"
        );
        source = source.replace(from, to);
    }
    source
}

/// Translate `source` for CUDA: whether its steps fuse, and the translation,
/// checked on the emulation against the sequential program under a few plans
/// (the default one included, which fuses where it can) and built with nvcc
/// (sm_90) without warnings.
fn check_cuda_source(name: &str, source: &str) -> (bool, tpace::back::Output) {
    let compiled = driver::compile_source(&format!("{name}.c"), source).expect("compiles");
    let out = driver::translate(&compiled, Target::Cuda).expect("translates");
    let fused = out.main.contains("tpace_p1_sweep1_fused");
    let tc = Toolchain::detect();
    let dir = tempfile::tempdir().expect("scratch folder");
    let reference = build_ok(
        &tc,
        &reference_of(&compiled),
        dir.path(),
        "reference",
        Flavour::Reference,
    );
    let built = build_ok(&tc, &out, dir.path(), "translated", Flavour::CudaEmulation);
    assert!(warnings(&built.warnings).is_empty(), "{}", built.warnings);
    let steps = 7;
    let seq = run_ok(
        &reference.binary,
        steps,
        &Params::default(),
        &dir.path().join("r.dump"),
    );
    for p in [
        params("mmtb", 3, 7, 2),
        params("mm", 2, 9, 3),
        Params::default(),
    ] {
        let got = run_with(
            &built.binary,
            steps,
            &p,
            &seed(5),
            &dir.path().join("t.dump"),
        );
        assert_eq!(
            first_difference(&seq.dump, &got.dump),
            None,
            "{name}: {p:?}"
        );
    }
    if let Some(nvcc) = nvcc() {
        let (cu, host) = write_cuda(dir.path(), name, &out);
        let nv = Command::new(&nvcc)
            .args(["-O3", "-arch=sm_90", "--fmad=false"])
            .args(["-Werror", "all-warnings", "-Xcompiler", "-Wall,-Wextra"])
            .arg(&cu)
            .arg(&host)
            .arg("-o")
            .arg(dir.path().join(name))
            .output()
            .expect("run nvcc");
        assert!(
            nv.status.success() && nv.stderr.is_empty(),
            "{name}: nvcc reports:\n{}",
            String::from_utf8_lossy(&nv.stderr)
        );
    }
    (fused, out)
}

/// C lets a variable be called `new`, C++ (a `.cu` file) does not: in a sweep
/// whose steps would fuse, such a name makes the sweep run as plain kernels,
/// which rename it (`tp_kw_new`); the program builds and matches.
#[test]
fn a_cxx_keyword_in_a_sweep_that_would_fuse() {
    let (plain_fuses, _) = check_cuda_source("jacobi2d_small", &jacobi_small(&[]));
    assert!(
        plain_fuses,
        "jacobi2d's steps no longer fuse: pick another program"
    );
    let variant = jacobi_small(&[
        (
            "    int n, x, y;\n",
            "    int n, x, y;\n    const float new = 0.25f;\n",
        ),
        ("a[x][y + 1]) / 4.0;", "a[x][y + 1]) * new;"),
    ]);
    let (fused, out) = check_cuda_source("jacobi2d_new", &variant);
    assert!(!fused, "a sweep naming `new` was fused");
    assert!(out.main.contains("tp_kw_new"), "`new` was not renamed");
}

/// A function of the file that a fused sweep calls is device code in the `.cu`
/// (`__device__`, before the kernels), and the fused kernel calls it.
#[test]
fn a_function_a_fused_sweep_calls_runs_on_the_device() {
    let variant = jacobi_small(&[
        (
            "static double checksum(void)",
            "static float quarter(float s)\n{\n    return s / 4.0f;\n}\n\nstatic double checksum(void)",
        ),
        (
            "(a[x - 1][y] + a[x + 1][y] + a[x][y - 1] + a[x][y + 1]) / 4.0;",
            "quarter(a[x - 1][y] + a[x + 1][y] + a[x][y - 1] + a[x][y + 1]);",
        ),
    ]);
    let (fused, out) = check_cuda_source("jacobi2d_quarter", &variant);
    assert!(fused, "the sweep calling `quarter` no longer fuses");
    assert!(
        out.main
            .contains("__device__ static float quarter(float s)"),
        "no device copy of `quarter`"
    );
    // The host program keeps its own definition and names it (no unused-function warning).
    let host = out.host.as_deref().expect("a host program");
    assert!(host.contains("static float quarter(float s)") && host.contains("(void)quarter;"));
}
