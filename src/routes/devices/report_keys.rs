//! Text ids numbered as the proof-of-play report meets them, so that its sums are kept in vectors
//! and sets of small integers rather than in maps keyed by strings, and each id's name is looked
//! up once, not joined per row.

use crate::http::ApiError;
use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// The ids met so far, numbered from 0 in the order first met, each with what the report keeps
/// of it; `None` for an id that no longer names a row (its rows do not count, as a join drops
/// them).
pub(super) struct Keys<T> {
    numbers: HashMap<Box<[u8]>, Option<u32>, Quick>,
    items: Vec<T>,
    /// The id met last and its number: rows come in runs of one screen (a roll-up's key order,
    /// a fleet's hour written screen by screen), and a run costs one comparison, not a lookup.
    last: Option<(Vec<u8>, Option<u32>)>,
}

impl<T> Keys<T> {
    pub fn new() -> Keys<T> {
        Keys {
            numbers: HashMap::default(),
            items: Vec::new(),
            last: None,
        }
    }

    /// Numbers `id` with `item` (an id known before the rows are read).
    pub fn insert(&mut self, id: &str, item: T) {
        self.numbers
            .insert(id.as_bytes().into(), Some(len_u32(self.items.len())));
        self.items.push(item);
    }

    /// The number of `id` (a text column's bytes); the first time it is met, `find` says what it
    /// is (`None`: nothing).
    pub fn number(
        &mut self,
        id: &[u8],
        find: impl FnOnce(&str) -> Result<Option<T>, ApiError>,
    ) -> Result<Option<u32>, ApiError> {
        if let Some((last, n)) = &self.last {
            if last.as_slice() == id {
                return Ok(*n);
            }
        }
        let n = match self.numbers.get(id) {
            Some(&n) => n,
            None => {
                let text = std::str::from_utf8(id).map_err(rusqlite::Error::from)?;
                let n = match find(text)? {
                    Some(item) => {
                        self.items.push(item);
                        Some(len_u32(self.items.len() - 1))
                    }
                    None => None,
                };
                self.numbers.insert(id.into(), n);
                n
            }
        };
        let last = self.last.get_or_insert_with(|| (Vec::new(), None));
        last.0.clear();
        last.0.extend_from_slice(id);
        last.1 = n;
        Ok(n)
    }

    pub fn get_mut(&mut self, n: u32) -> Option<&mut T> {
        self.items.get_mut(n as usize)
    }

    pub fn get(&self, n: u32) -> Option<&T> {
        self.items.get(n as usize)
    }

    pub fn into_items(self) -> Vec<T> {
        self.items
    }
}

/// Pairs of numbers (a screen's and an ad's), as one key.
pub(super) type Pairs = HashSet<u64, Quick>;

pub(super) fn pair(a: u32, b: u32) -> u64 {
    (u64::from(a) << 32) | u64::from(b)
}

/// A multiply-rotate hash (FxHash's): a few instructions per 8 bytes, where the standard SipHash
/// was an eighth of the report. Its keys are ids the server made and numbers, not text a client
/// chose, so a hash that does not resist chosen collisions is enough.
type Quick = BuildHasherDefault<QuickHasher>;

#[derive(Default)]
pub(super) struct QuickHasher(u64);

impl QuickHasher {
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for QuickHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A report holds far fewer than 4 G screens or ads (a key's ids are rows of one account).
fn len_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::Keys;

    #[test]
    fn ids_are_numbered_once_in_the_order_met_and_missing_ones_are_remembered() {
        let mut keys: Keys<&str> = Keys::new();
        keys.insert("ad_b", "B");
        let mut asked = 0;
        let mut find = |id: &str| {
            asked += 1;
            Ok(if id == "ad_gone" { None } else { Some("A") })
        };
        assert_eq!(keys.number(b"ad_a", &mut find).ok(), Some(Some(1)));
        assert_eq!(keys.number(b"ad_a", &mut find).ok(), Some(Some(1)));
        assert_eq!(keys.number(b"ad_b", &mut find).ok(), Some(Some(0)));
        assert_eq!(keys.number(b"ad_gone", &mut find).ok(), Some(None));
        assert_eq!(keys.number(b"ad_gone", &mut find).ok(), Some(None));
        assert_eq!(keys.number(b"ad_b", &mut find).ok(), Some(Some(0)));
        assert_eq!(keys.number(b"ad_a", &mut find).ok(), Some(Some(1)));
        assert_eq!(asked, 2);
        assert_eq!(keys.get(1), Some(&"A"));
        assert_eq!(keys.into_items(), vec!["B", "A"]);
    }

    #[test]
    fn pairs_of_numbers_are_distinct_keys() {
        let mut pairs = super::Pairs::default();
        assert!(pairs.insert(super::pair(1, 2)));
        assert!(pairs.insert(super::pair(2, 1)));
        assert!(!pairs.insert(super::pair(1, 2)));
        assert_eq!(pairs.len(), 2);
    }
}
