//! Rows kept rendered as JSON between requests, used again only while the database says they
//! are unchanged.
//!
//! All rows of one kind share a generation ([`crate::db::Generations`]): the triggers of
//! `schema/V33__cache_generations.sql` give it a new random value in the very transaction that
//! writes any of those rows (from any process), and a snapshot restore does too. A cache holds the
//! rows of one generation, the one the request's read transaction sees: a request that sees
//! another empties it first. What depends on the request's clock (a device's `status`) is not in
//! the kept JSON; the row's writer fills it in per request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Rows kept at most per kind (one page of a few hundred bytes each): the map empties when full.
pub const MAX_ROWS: usize = 8192;

/// What a kept row was rendered from: the kind's generation and the process's restore count.
pub type Stamp = (i64, u64);

/// The rendered rows of one kind, by id.
pub struct Rendered<R> {
    inner: Mutex<Inner<R>>,
}

struct Inner<R> {
    stamp: Option<Stamp>,
    rows: HashMap<String, Arc<R>>,
}

impl<R> Default for Rendered<R> {
    fn default() -> Self {
        Rendered {
            inner: Mutex::new(Inner {
                stamp: None,
                rows: HashMap::new(),
            }),
        }
    }
}

impl<R> Rendered<R> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner<R>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The kept rows of `ids` (in order; `None` where none is kept) rendered at `stamp`.
    pub fn get_all<S: AsRef<str>>(&self, ids: &[S], stamp: Stamp) -> Vec<Option<Arc<R>>> {
        let inner = self.lock();
        if inner.stamp != Some(stamp) {
            return ids.iter().map(|_| None).collect();
        }
        ids.iter()
            .map(|id| inner.rows.get(id.as_ref()).cloned())
            .collect()
    }

    /// Keeps `row` for `id`, rendered at `stamp` (rows of any other stamp are dropped).
    pub fn put(&self, id: &str, stamp: Stamp, row: Arc<R>) {
        let mut inner = self.lock();
        if inner.stamp != Some(stamp) || inner.rows.len() >= MAX_ROWS {
            inner.rows.clear();
            inner.stamp = Some(stamp);
        }
        inner.rows.insert(id.to_string(), row);
    }

    pub fn len(&self) -> usize {
        self.lock().rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The rows of `ids` rendered at `stamp`: kept ones as they are, the others made by `render` (from
/// the database, in the request's read) and kept.
pub fn rows<S: AsRef<str>, R, E>(
    cache: &Rendered<R>,
    ids: &[S],
    stamp: Stamp,
    mut render: impl FnMut(&str) -> Result<R, E>,
) -> Result<Vec<Arc<R>>, E> {
    let kept = cache.get_all(ids, stamp);
    let mut out = Vec::with_capacity(ids.len());
    for (id, kept) in ids.iter().zip(kept) {
        let row = match kept {
            Some(row) => row,
            None => {
                let row = Arc::new(render(id.as_ref())?);
                cache.put(id.as_ref(), stamp, Arc::clone(&row));
                row
            }
        };
        out.push(row);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_of_another_generation_are_never_returned() {
        let cache: Rendered<String> = Rendered::default();
        let mut renders = 0;
        let mut render = |id: &str| -> Result<String, ()> {
            renders += 1;
            Ok(format!("{id}@{renders}"))
        };
        let a = rows(&cache, &["a", "b"], (1, 0), &mut render).unwrap();
        let again = rows(&cache, &["a", "b"], (1, 0), &mut render).unwrap();
        assert_eq!(a, again);
        // Another generation, or a restore, renders again.
        let moved = rows(&cache, &["a"], (2, 0), &mut render).unwrap();
        assert_ne!(moved[0], a[0]);
        let restored = rows(&cache, &["a"], (2, 1), &mut render).unwrap();
        assert_ne!(restored[0], moved[0]);
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn the_cache_stays_bounded() {
        let cache: Rendered<u8> = Rendered::default();
        for i in 0..MAX_ROWS * 2 {
            cache.put(&i.to_string(), (1, 0), Arc::new(0));
        }
        assert!(cache.len() <= MAX_ROWS);
    }
}
