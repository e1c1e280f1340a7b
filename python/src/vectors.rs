//! Vectors of store items for semantic search (`spec/python.md` §2.5): derived data, never
//! signed. The Python layer embeds the texts at the index's fields (LangGraph's `index`
//! configuration) and hands the vectors over; this module keeps them beside the item index and
//! scores them against a query by cosine similarity, exactly and by brute force (one pass over
//! the candidates' vectors; `spec/benchmarks.md` gives the cost per size).

use crate::errors::BindError;

/// One embedded text of an item: the field path it came from (LangGraph's, e.g. `text` or
/// `tags.1`), its components and their Euclidean norm.
#[derive(Clone, Debug, PartialEq)]
pub struct Vector {
    /// The field path (`$` for the whole value).
    pub path: String,
    values: Vec<f32>,
    norm: f32,
}

impl Vector {
    /// A vector of `values` embedded from the text at `path`.
    ///
    /// # Errors
    /// [`BindError::Misuse`] (`ValueError`) for an empty vector or a component that is not
    /// finite.
    pub fn new(path: String, values: Vec<f32>) -> Result<Self, BindError> {
        if values.is_empty() || values.iter().any(|x| !x.is_finite()) {
            return Err(BindError::misuse(format!(
                "the embedding of {path:?} is empty or not finite"
            )));
        }
        let norm = dot(&values, &values).sqrt();
        Ok(Vector { path, values, norm })
    }

    /// Number of dimensions.
    pub fn dims(&self) -> usize {
        self.values.len()
    }
}

/// The `(field path, components)` pairs of one item's embedded fields, as Python passes them.
pub type RawVectors = Vec<(String, Vec<f32>)>;

/// The vectors of a list of `(path, components)` pairs.
///
/// # Errors
/// As [`Vector::new`].
pub fn vectors(raw: RawVectors) -> Result<Vec<Vector>, BindError> {
    raw.into_iter().map(|(p, v)| Vector::new(p, v)).collect()
}

/// The best (largest) cosine similarity between `query` and any of `vectors`, as
/// `InMemoryStore` scores an item with several embedded fields (max pooling); `None` for an
/// item with no vector. A zero vector scores 0.
///
/// # Errors
/// [`BindError::Misuse`] when a vector's dimensions differ from the query's (an index whose
/// embedding changed: the stored vectors were made by another model).
pub fn best(query: &Vector, vectors: &[Vector]) -> Result<Option<f64>, BindError> {
    let mut out: Option<f64> = None;
    for v in vectors {
        if v.dims() != query.dims() {
            return Err(BindError::misuse(format!(
                "an item's embedding of {:?} has {} dimensions, the query's {}",
                v.path,
                v.dims(),
                query.dims()
            )));
        }
        let denom = v.norm * query.norm;
        let s = if denom > 0.0 {
            f64::from(dot(&v.values, &query.values) / denom)
        } else {
            0.0
        };
        out = Some(out.map_or(s, |b| b.max(s)));
    }
    Ok(out)
}

/// `Σ a_i b_i` over equal-length slices, in eight lanes (so that the compiler can keep them
/// in vector registers).
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for (l, (p, q)) in lanes.iter_mut().zip(x.iter().zip(y)) {
            *l += p * q;
        }
    }
    lanes.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(values: &[f32]) -> Result<Vector, BindError> {
        Vector::new("text".into(), values.to_vec())
    }

    #[test]
    fn best_is_the_largest_cosine() -> Result<(), BindError> {
        let q = v(&[1.0, 0.0, 0.0])?;
        let same = v(&[2.0, 0.0, 0.0])?;
        let orthogonal = v(&[0.0, 3.0, 0.0])?;
        let opposite = v(&[-1.0, 0.0, 0.0])?;
        assert_eq!(best(&q, &[])?, None);
        assert_eq!(best(&q, std::slice::from_ref(&orthogonal))?, Some(0.0));
        assert_eq!(best(&q, std::slice::from_ref(&opposite))?, Some(-1.0));
        assert_eq!(best(&q, &[orthogonal, same, opposite])?, Some(1.0));
        let zero = v(&[0.0, 0.0, 0.0])?;
        assert_eq!(best(&q, &[zero])?, Some(0.0));
        Ok(())
    }

    #[test]
    fn dot_covers_the_lanes_and_the_tail() {
        let a: Vec<f32> = (1..=19).map(|i| i as f32).collect();
        let want: f32 = a.iter().map(|x| x * x).sum();
        assert_eq!(dot(&a, &a), want);
    }

    #[test]
    fn bad_vectors_are_refused() -> Result<(), BindError> {
        assert!(v(&[]).is_err());
        assert!(v(&[f32::NAN]).is_err());
        let q = v(&[1.0, 0.0])?;
        let e = best(&q, &[v(&[1.0, 0.0, 0.0])?])
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("an item's embedding of \"text\" has 3 dimensions, the query's 2")
        );
        Ok(())
    }
}
