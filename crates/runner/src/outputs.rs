//! What the runner makes of a fit's output, each rule once: the coordinates the protocols score and
//! the figures draw ([`scored_coordinates`]: an embedding as it is, a principal graph's projections,
//! feature scores as the data on the top-ranked features, [`selected_features`] at
//! [`n_selected`]), and a learned graph as an edge-list CSV ([`edge_list_csv`]). Grid cells,
//! figures and `structdr embed` / `select` all come here.

use ndarray::{Array2, ArrayView2};
use std::borrow::Cow;
use structdr_methods::api::{FeatureScores, Output};
use structdr_methods::{Fitted, Graph, ParamMap, ParamValue};

/// How many top-ranked features feature scores select under `params`: the evaluation-stage
/// parameter `n_selected` when it is positive, else (0 or absent) every feature with a positive
/// weight (the support).
pub fn n_selected(params: &ParamMap, scores: &FeatureScores) -> usize {
    match params.get("n_selected") {
        Some(ParamValue::Int(m)) if *m > 0 => *m as usize,
        _ => scores.weights.iter().filter(|&&w| w > 0.0).count(),
    }
}

/// `x` restricted to the [`n_selected`] top-ranked features, in rank order.
pub fn selected_features(scores: &FeatureScores, params: &ParamMap, x: ArrayView2<f64>) -> structdr_methods::Result<Array2<f64>> {
    scores.select(x, n_selected(params, scores))
}

/// The coordinates a cell's protocols score, by the output's kind: an embedding as it is, a
/// principal graph's projections, and for feature scores the data `x` (the fit's input)
/// restricted to the selected features ([`selected_features`] under the cell's `params`).
pub fn scored_coordinates<'a>(fitted: &'a Fitted, params: &ParamMap, x: ArrayView2<f64>) -> Result<Cow<'a, Array2<f64>>, String> {
    match &fitted.output {
        Output::FeatureScores(s) => selected_features(s, params, x).map(Cow::Owned).map_err(|e| e.to_string()),
        _ => fitted.embedding().map(Cow::Borrowed).ok_or_else(|| "the output has no coordinates".to_string()),
    }
}

/// A graph as an edge-list CSV: the header `i,j,weight`, then one edge per line (0-based vertices,
/// the weight in shortest round-trip form).
pub fn edge_list_csv(graph: &Graph) -> String {
    let mut s = String::from("i,j,weight\n");
    for (i, j, w) in &graph.edges {
        s.push_str(&format!("{i},{j},{w:?}\n"));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn n_selected_is_the_parameter_or_the_support() {
        let scores = FeatureScores { weights: ndarray::array![0.5, 0.0, 0.25], ranking: vec![0, 2, 1] };
        let mut params = ParamMap::new();
        assert_eq!(n_selected(&params, &scores), 2);
        params.insert("n_selected".into(), ParamValue::Int(0));
        assert_eq!(n_selected(&params, &scores), 2);
        params.insert("n_selected".into(), ParamValue::Int(1));
        assert_eq!(n_selected(&params, &scores), 1);
        let x = ndarray::array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
        assert_eq!(selected_features(&scores, &params, x.view()).unwrap(), ndarray::array![[1.0], [4.0]]);
    }

    #[test]
    fn edge_lists_have_a_header_and_round_trip_weights() {
        let g = Graph { n_vertices: 3, edges: vec![(0, 1, 0.1), (1, 2, 2.0)] };
        assert_eq!(edge_list_csv(&g), "i,j,weight\n0,1,0.1\n1,2,2.0\n");
    }
}
