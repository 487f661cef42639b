//! The generated graph families of the planner-time benchmark, sized by node count.

use remat_graph::training::{Architecture, ConvNet, FeedForward, RandomLayered, Transformer};
use remat_graph::Graph;

/// A family of generated training steps whose size grows with one parameter (its units).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// Plain MLP steps (`FeedForward::mlp`): a chain and its gradient chain.
    Ffn,
    /// ResNet-like CNN steps (`ConvNet`, four stages of basic blocks).
    ResNet,
    /// Transformer-like steps (`Transformer`: attention and MLP blocks with residuals).
    Transformer,
    /// Random layered DAG steps (`RandomLayered`, width 8, seed 0).
    RandomLayered,
}

impl Family {
    /// Every family, in table order.
    pub const ALL: [Family; 4] = [Family::Ffn, Family::ResNet, Family::Transformer, Family::RandomLayered];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Family::Ffn => "ffn",
            Family::ResNet => "resnet",
            Family::Transformer => "transformer",
            Family::RandomLayered => "random-layered",
        }
    }

    /// Looks a family up by its command-line name.
    pub fn from_name(name: &str) -> Result<Family, String> {
        Family::ALL.into_iter().find(|f| f.name() == name).ok_or_else(|| {
            let names: Vec<&str> = Family::ALL.iter().map(|f| f.name()).collect();
            format!("unknown family '{name}' (expected one of {})", names.join(", "))
        })
    }

    fn generate_units(self, units: usize) -> Graph {
        match self {
            Family::Ffn => FeedForward::mlp(units).generate(),
            Family::ResNet => ConvNet::new(Architecture::ResNet, &[units; 4]).generate(),
            Family::Transformer => Transformer::new(units).generate(),
            Family::RandomLayered => RandomLayered::new(units).generate(),
        }
    }

    /// The family's graph with about `nodes` ops: units from the first two sizes, then
    /// corrected in proportion (random layers differ in size).
    pub fn with_nodes(self, nodes: usize) -> Graph {
        let (one, two) = (self.generate_units(1).op_count(), self.generate_units(2).op_count());
        let per_unit = two.saturating_sub(one).max(1);
        let fixed = one.saturating_sub(per_unit);
        let mut units = ((nodes.saturating_sub(fixed) as f64 / per_unit as f64).round() as usize).max(1);
        let mut graph = self.generate_units(units);
        for _ in 0..3 {
            let got = graph.op_count();
            let next = ((units as f64 * nodes as f64 / got.max(1) as f64).round() as usize).max(1);
            if next == units {
                break;
            }
            units = next;
            graph = self.generate_units(units);
        }
        graph
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_land_near_the_target() {
        for family in Family::ALL {
            for nodes in [1000, 5000] {
                let got = family.with_nodes(nodes).op_count();
                // Within one unit of the target (a unit is at most a few hundred nodes).
                assert!(got.abs_diff(nodes) < 200, "{}: {got} for {nodes}", family.name());
            }
            assert_eq!(Family::from_name(family.name()), Ok(family));
        }
        assert!(Family::from_name("lstm").is_err());
    }
}
