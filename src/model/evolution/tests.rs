use super::*;

fn machine(name: &str) -> EvolutionMachine {
    EvolutionMachine::from_profile(&Profile::bundled(name).unwrap()).unwrap()
}

/// The benchmarks of the stencil-directives paper, Table 5: float data,
/// grid shape (x first), operations per point, arrays. Every stencil reaches
/// one point each way in each dimension (3-, 5-, 7-point heat; Himeno's
/// 19-point pressure stencil).
fn table5(name: &str) -> StencilShape {
    let (extents, flops, arrays): (&[u64], u64, u64) = match name {
        "1D" => (&[4_194_304], 4, 2),
        "2D" => (&[2048, 2048], 6, 2),
        "3D" => (&[256, 256, 256], 8, 2),
        "himeno" => (&[256, 128, 128], 34, 14),
        _ => unreachable!(),
    };
    StencilShape {
        extents: extents.to_vec(),
        radius: vec![1; extents.len()],
        arrays,
        // The paper does not say how its tile counted Himeno's arrays. With the
        // 14 of Table 5 the tile of (32,4,2) fits the C2070's 48 KB and (32,2,2)
        // the Phi's 32 KB, so both devices would go one step further than Table 6
        // shows; any count from 16 to 20 reproduces both rows. We take 16, the
        // smallest, and flag it: it is fitted to the table, not derived.
        tile_arrays: if name == "himeno" { 16 } else { arrays },
        elem_bytes: 4,
        flops,
    }
}

#[test]
fn algorithm_bf_matches_table_5() {
    // Table 5, last row: 2.0, 1.33, 1.0, 1.65.
    for (name, bf) in [("1D", 2.0), ("2D", 1.33), ("3D", 1.0), ("himeno", 1.65)] {
        assert!((table5(name).bf1() - bf).abs() < 0.005, "{name}");
    }
}

/// Table 6 ("最良の性能パラメータと自動設定された性能パラメータ"), the rows
/// "提案手法によるパラメータ設定" (parameters set by the proposed method),
/// as (x, y, z, t), for heat 1D, 2D, 3D and Himeno.
#[test]
fn reproduces_the_papers_choices_in_table_6() {
    // Table 6, NVIDIA Tesla C2070, row "提案手法によるパラメータ設定".
    let c2070 = [
        ("1D", (256, 1, 1, 3)),
        ("2D", (32, 8, 1, 2)),
        ("3D", (32, 8, 4, 1)),
        ("himeno", (32, 2, 2, 1)),
    ];
    // Table 6, Intel Xeon Phi 5110P, row "提案手法によるパラメータ設定".
    let phi = [
        ("1D", (1024, 1, 1, 2)),
        ("2D", (1024, 1, 1, 1)),
        ("3D", (256, 1, 1, 1)),
        ("himeno", (32, 2, 1, 1)),
    ];
    for (profile, rows) in [("c2070", c2070), ("xeon-phi-5110p", phi)] {
        let m = machine(profile);
        for (bench, want) in rows {
            let got = evolve(&m, &table5(bench));
            assert_eq!(
                got.params.tuple(),
                want,
                "{profile} {bench}: rounds {:#?}",
                got.rounds
            );
        }
    }
}

#[test]
fn himeno_with_table_5s_array_count_goes_one_step_further() {
    // The flagged assumption above, made visible: with 14 arrays in the tile.
    let mut h = table5("himeno");
    h.tile_arrays = 14;
    assert_eq!(evolve(&machine("c2070"), &h).params.tuple(), (32, 4, 2, 1));
    assert_eq!(
        evolve(&machine("xeon-phi-5110p"), &h).params.tuple(),
        (32, 2, 2, 1)
    );
}

#[test]
fn the_search_stops_for_the_reasons_the_paper_gives() {
    // C2070, 3-D heat: T = 2 makes the kernel compute-bound; (32, 8, 8) has
    // 2048 work items, more than the C2070's 1024 (§4.2.1).
    let e = evolve(&machine("c2070"), &table5("3D"));
    let t2 = e.rounds.iter().find(|r| r.tried.t == 2).unwrap();
    assert!(matches!(t2.refused, Some(Refusal::ComputeBound(bf)) if bf < 0.14));
    let last = e.rounds.last().unwrap();
    assert_eq!(last.tried.tuple(), (32, 8, 8, 1));
    assert_eq!(last.refused, Some(Refusal::GroupTooLarge));
    // C2070, 1-D heat: x = 512 leaves 8191.99 groups of interior points, below 8192.
    let e = evolve(&machine("c2070"), &table5("1D"));
    let x512 = e.rounds.iter().find(|r| r.tried.group[0] == 512).unwrap();
    assert!(matches!(x512.refused, Some(Refusal::TooFewGroups(g)) if g < 8192.0));
    // Xeon Phi, 2-D heat: x = 2048 does not fit the 32 KB L1, so y is tried, and
    // (1024, 2) does not fit either.
    let e = evolve(&machine("xeon-phi-5110p"), &table5("2D"));
    let refusals: Vec<_> = e
        .rounds
        .iter()
        .filter(|r| r.refused.is_some())
        .map(|r| r.tried.tuple())
        .collect();
    assert_eq!(
        refusals,
        vec![(32, 1, 1, 2), (2048, 1, 1, 1), (1024, 2, 1, 1)]
    );
    // Xeon Phi, 3-D heat: x stops at the grid's 256 points, so y and z never grow.
    let e = evolve(&machine("xeon-phi-5110p"), &table5("3D"));
    let last = e.rounds.last().unwrap();
    assert_eq!(last.tried.tuple(), (512, 1, 1, 1));
    assert_eq!(last.refused, Some(Refusal::BeyondGrid));
}

#[test]
fn profiles_without_the_figures_are_refused() {
    let bare = Profile::parse(
        "bare",
        "name = \"bare\"\ndescription = \"d\"\narch = \"gpu\"\n\
         [memory_gbs]\nvalue = 4800\nkind = \"spec\"\nsource = \"s\"\n",
    )
    .unwrap();
    let e = EvolutionMachine::from_profile(&bare).unwrap_err();
    assert!(
        e.contains("bytes_per_flop") && e.contains("min_work_groups") && e.contains("tile_bytes"),
        "{e}"
    );
    // The lent GPU's profile has them (for OpenCL's work groups).
    let h100 = EvolutionMachine::from_profile(&Profile::bundled("h100").unwrap()).unwrap();
    assert_eq!((h100.tile_bytes, h100.min_groups), (49152, 4224));
    // What NVIDIA's OpenCL builds tpace's kernels for (the device says 1024).
    assert_eq!(h100.max_group_size, Some(256));
    // ... and what a tile costs there, which the OpenCL choice prices.
    assert_eq!(h100.tile_point_s, Some(7.76e-12));
}

#[test]
fn shape_from_a_compiled_program() {
    let src = include_str!("../../../examples/heat3d.c");
    let c = crate::plan::compile_source("heat3d.c", src).unwrap();
    let s = StencilShape::from_unit(c.unit(0), &[96, 64, 80]).unwrap();
    assert_eq!(s.extents, vec![80, 64, 96]);
    assert_eq!(s.radius, vec![1, 1, 1]);
    assert_eq!((s.arrays, s.elem_bytes, s.flops), (2, 4, 8));
    let e = evolve(&machine("c2070"), &s);
    assert!(e.params.size() <= 1024);
    assert!(StencilShape::from_unit(c.unit(0), &[1, 2, 3, 4]).is_err());
}
