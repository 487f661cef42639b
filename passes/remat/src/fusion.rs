//! Fusion before planning: rounds of "list the fusable pairs (remat-mlir), choose with the
//! memory model (remat-planners), fuse, import again" until a round chooses nothing. What the
//! report says about it is a [`FusionSummary`].

use crate::{RematError, RematOptions};
use remat_graph::{peak_lower_bound, simulate};
use remat_mlir::{apply_fusions, fusion_candidates, FusionPair, ImportedFunction};
use remat_planners::fusion::{choose_fusions, FusionMode};

/// Rounds after which fusion stops even if pairs remain (each round fuses one level of a chain;
/// elementwise chains in training steps are far shorter).
const MAX_ROUNDS: usize = 64;

/// What fusion did to one function.
#[derive(Clone, Debug, PartialEq)]
pub struct FusionSummary {
    /// The mode.
    pub mode: FusionMode,
    /// Producers fused into consumers (a clone counts once per consumer).
    pub fused: usize,
    /// Rounds run.
    pub rounds: usize,
    /// Executable nodes before fusion.
    pub nodes_before: usize,
    /// The unfused input order's peak and cost (after fusion: the report's baseline).
    pub peak_before: u64,
    /// Its cost.
    pub cost_before: f64,
    /// The proven lower bound of the unfused graph.
    pub lower_bound_before: u64,
    /// Pairs left unfused whose producer a plan may recompute inside the consumer.
    pub fusable_recomputations: usize,
}

/// Fuses `imported` as `options.fusion` says; `None` for `FusionMode::None`.
pub fn fuse(
    imported: ImportedFunction,
    options: &RematOptions,
) -> Result<(ImportedFunction, Option<FusionSummary>), RematError> {
    if options.fusion == FusionMode::None {
        return Ok((imported, None));
    }
    // The unfused step as `fusion=none` plans it (without buffer reuse).
    let unfused = remat_mlir::ImportOptions { buffer_reuse: false, ..options.import_options() };
    let imported = imported.reimport(&unfused)?;
    let before = simulate(&imported.graph, &imported.order)?;
    let mut summary = FusionSummary {
        mode: options.fusion,
        fused: 0,
        rounds: 0,
        nodes_before: imported.graph.op_count(),
        peak_before: before.peak_bytes,
        cost_before: before.cost,
        lower_bound_before: peak_lower_bound(&imported.graph),
        fusable_recomputations: 0,
    };
    // Imported again with the options' import settings (buffer reuse), whoever imported it.
    let mut imported = imported.reimport(&options.import_options())?;
    while summary.rounds < MAX_ROUNDS {
        let candidates: Vec<(_, _)> =
            fusion_candidates(&imported).into_iter().map(|pair| (pair.producer, pair.consumer)).collect();
        let chosen = choose_fusions(&imported.graph, &imported.order, &candidates, options.fusion);
        if chosen.is_empty() {
            break;
        }
        let pairs: Vec<FusionPair> =
            chosen.into_iter().map(|(producer, consumer)| FusionPair { producer, consumer }).collect();
        let fused = apply_fusions(&imported, &pairs);
        summary.rounds += 1;
        imported = imported.reimport(&options.import_options())?;
        if fused == 0 {
            break;
        }
        summary.fused += fused;
        tracing::debug!(round = summary.rounds, fused, nodes = imported.graph.op_count(), "fusion round");
    }
    summary.fusable_recomputations = mark_fusable_recomputations(&mut imported);
    Ok((imported, Some(summary)))
}

/// Records on the graph the pairs left unfused that can still be fused (`Node::fuses`): where a
/// plan recomputes such a producer right before the consumer, for it alone, the memory model
/// fuses the two and the rewriter fuses the clone into the consumer. Returns how many pairs.
fn mark_fusable_recomputations(imported: &mut ImportedFunction) -> usize {
    // Candidates come consumer by consumer.
    let mut by_consumer: Vec<(remat_graph::NodeId, Vec<remat_graph::NodeId>)> = Vec::new();
    for pair in fusion_candidates(imported) {
        if !imported.graph.can_fuse(pair.consumer, pair.producer) {
            continue;
        }
        match by_consumer.last_mut() {
            Some((consumer, producers)) if *consumer == pair.consumer => producers.push(pair.producer),
            _ => by_consumer.push((pair.consumer, vec![pair.producer])),
        }
    }
    let mut pairs = 0;
    for (consumer, producers) in by_consumer {
        pairs += producers.len();
        imported.graph.set_fuses(consumer, producers).expect("each pair was checked");
    }
    pairs
}
